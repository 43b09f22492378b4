"""Cabling plan for the installers: handoff/cabling.csv (every physical cable once, with both ends and a label
for each), handoff/links.csv (every link, with the cable that carries it) and handoff/cabling.md (summaries
and, per rack, the cables a technician pulls there)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Any

from .cable_rows import CableEnd, CableList, CableRow, shared_cable_list
from .context import RenderContext
from .escape import Escaped, csv_field, csv_line, md_cell
from .escape import csv_text as write_csv
from .handoff_common import CableTable, shared_cable_table
from .link_parts import LinkParts

CABLING_CSV = "handoff/cabling.csv"
LINKS_CSV = "handoff/links.csv"
CABLING_MD = "handoff/cabling.md"
MD_CABLE_LIMIT = 2000
"""Above this many cables, cabling.md keeps only the summaries; cabling.csv always lists every cable."""


def _end_columns(side: str) -> list[str]:
    return [f"{side}_{name}" for name in ("row", "rack", "u", "device", "port", "transceiver")]


CSV_HEADER = [
    *("label", "fabric", "tier", "rail", "links"),
    *_end_columns("a"),
    *_end_columns("b"),
    *("speed_gbps", "media", "product", "part_number", "length_class_m", "run_length_m", "pieces"),
    *("a_label", "b_label"),
]
"""cabling.csv: one row per physical cable."""
LINKS_HEADER = [
    *("label", "fabric", "tier", "rail"),
    *_end_columns("a"),
    *_end_columns("b"),
    *("speed_gbps", "media", "cable", "length_class_m", "run_length_m"),
]
"""links.csv: one row per link; `label` is its cable's label, with /<leg> when the cable carries several."""
MD_HEADER = ["label", "U", "device", "port", "to", "media", "part", "order"]


def cable_text(parts: LinkParts) -> str:
    """The cable column of a link in words: for optics, the modules at both ends plus the fibre between them."""
    if not parts.optical:
        return parts.cable
    a, b = parts.a_transceiver, parts.b_transceiver
    optics = a if a == b else f"{a} / {b}"
    return f"{optics} + {parts.cable}"


def _port_text(end: CableEnd) -> str:
    return "+".join(end.ports) if len(end.places) == 1 else " / ".join(end.ports)


def cabling_csv(cables: CableList) -> str:
    """cabling.csv: the header, then one line per physical cable (the columns of CSV_HEADER)."""
    lines: list[list[object]] = []
    for r in cables.rows:
        cable = r.cable
        lines.append(
            [
                r.label,
                r.fabric,
                r.tier,
                "" if r.rail is None else r.rail,
                len(r.links),
                *_end_cells(r.a),
                *_end_cells(r.b),
                f"{r.links[0].speed_gbps:g}",
                cable.media,
                cable.product,
                cable.part_number,
                f"{cable.length_class_m:g}",
                f"{cable.run_m:g}",
                cable.pieces,
                r.a_label,
                r.b_label,
            ]
        )
    return write_csv(CSV_HEADER, lines)


def _end_cells(end: CableEnd) -> list[object]:
    return [end.column("row"), end.column("rack"), end.column("u"), end.column("device"), _port_text(end), end.module]


def csv_text(table: CableTable, labels: list[str]) -> str:
    """links.csv: the header, then one line per link (the columns of LINKS_HEADER).

    Every cell that repeats (devices, ports, optics, cable types, lengths) is escaped once, with the comma
    or newline that follows it, and neighbouring cells that go together (a device's row, rack, U and name)
    as one text; the file is then one join of ready texts, without a string per line in between."""
    cell = Escaped(lambda value: f"{csv_field(value)},")
    # fabric, tier and rail
    link = Escaped(lambda key: f"{cell[key[0]]}{cell[key[1]]}{cell['' if key[2] is None else key[2]]}")
    place = Escaped(lambda p: "".join((cell[p.row], cell[p.rack], cell["" if p.u is None else p.u], cell[p.device])))
    a_module = Escaped(lambda parts: cell[parts.a_transceiver])
    b_module = Escaped(
        lambda parts: cell[parts.b_transceiver] + cell[parts.speed_gbps] + cell[parts.media] + cell[cable_text(parts)]
    )  # and the link's speed, media and cable
    lengths = Escaped(lambda key: f"{cell[key[0]]}{csv_field(key[1])}\n")  # ordered, run

    def cells(escape: Escaped, values: Iterable[Any]) -> Iterator[str]:
        return map(escape.__getitem__, values)

    links = table.links  # cells made of several columns are made in the topology's order, then put in plan order
    link_cells = list(cells(link, zip(links["fabric"], links["tier"], links["rail"], strict=True)))
    length_cells = list(cells(lengths, zip(links["length_class_m"], links["length_m"], strict=True)))
    rows = zip(
        (f"{csv_field(label)}," for label in labels),
        table.in_order(link_cells),
        cells(place, table.a),
        cells(cell, table.column("a_port")),
        cells(a_module, table.parts),
        cells(place, table.b),
        cells(cell, table.column("b_port")),
        cells(b_module, table.parts),
        table.in_order(length_cells),
        strict=True,
    )
    return "".join([f"{csv_line(LINKS_HEADER)}\n", *chain.from_iterable(rows)])


CableKind = tuple[str, str, float]
"""Media, part number (or product key), ordered length."""


def _kind(r: CableRow) -> CableKind:
    return (r.cable.media, r.cable.part_number or r.cable.product, r.cable.length_class_m)


def _summary(counts: Counter[CableKind]) -> list[list[str]]:
    """Cables by media, part and ordered length, in that order."""
    return [
        [md_cell(media), md_cell(part), md_cell(f"{length:g} m"), str(n)]
        for (media, part, length), n in sorted(counts.items())
    ]


def _count(rows: list[CableRow]) -> Counter[CableKind]:
    out: Counter[CableKind] = Counter()
    for r in rows:
        out[_kind(r)] += r.cable.pieces
    return out


def _rack_pairs(rows: list[CableRow]) -> list[list[str]]:
    """Cables between each pair of racks (either way round), with their media and ordered length."""
    pairs: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in rows:
        first, second = sorted((r.a.column("rack"), r.b.column("rack")))
        pairs[(first, second)][f"{r.cable.media} {r.cable.length_class_m:g} m"] += r.cable.pieces
    out = []
    for (first, second), mix in sorted(pairs.items()):
        detail = ", ".join(f"{n} x {what}" for what, n in sorted(mix.items()))
        out.append([md_cell(first), md_cell(second), str(sum(mix.values())), md_cell(detail)])
    return out


def rack_rows(cables: CableList, rack_order: list[str]) -> list[tuple[str, list[tuple[CableRow, CableEnd, CableEnd]]]]:
    """Per rack (floor order), the cables with an end there: (cable, this end, other end), this end's U
    and label first. A cable within one rack is listed once, from its A end."""
    by_rack: dict[str, list[tuple[CableRow, CableEnd, CableEnd]]] = defaultdict(list)
    for r in cables.rows:
        a_racks = {p.rack for p in r.a.places}
        for rack in sorted(a_racks):
            by_rack[rack].append((r, r.a, r.b))
        for rack in sorted({p.rack for p in r.b.places} - a_racks):
            by_rack[rack].append((r, r.b, r.a))
    order = {name: i for i, name in enumerate(rack_order)}
    out = []
    for rack in sorted(by_rack, key=lambda name: (order.get(name, len(order)), name)):
        rows = sorted(by_rack[rack], key=lambda item: (-(item[1].places[0].u or 0), item[0].label))
        out.append((rack, rows))
    return out


def rack_row(r: CableRow, here: CableEnd, there: CableEnd) -> list[str]:
    """One cable in a rack's table (the columns of MD_HEADER), as plain text."""
    return [
        r.label,
        here.column("u"),
        here.column("device"),
        _port_text(here),
        there.where(),
        r.cable.media,
        r.cable.part_number or r.cable.product,
        f"{r.cable.length_class_m:g} m",
    ]


def rack_mix(items: list[tuple[CableRow, CableEnd, CableEnd]]) -> str:
    """A rack's cables by media and ordered length: '12 x MMF 10 m, 2 x ACC 4 m'."""
    counts: Counter[str] = Counter()
    for r, _, _ in items:
        counts[f"{r.cable.media} {r.cable.length_class_m:g} m"] += r.cable.pieces
    return ", ".join(f"{n} x {what}" for what, n in sorted(counts.items()))


def markdown_model(ctx: RenderContext, cables: CableList, limit: int = MD_CABLE_LIMIT) -> dict[str, Any]:
    bp = ctx.valid.blueprint
    rows = cables.rows
    detailed = len(rows) <= limit
    fabrics: dict[str, list[CableRow]] = defaultdict(list)
    for r in rows:
        fabrics[r.fabric].append(r)
    racks = []
    for rack, items in rack_rows(cables, list(ctx.topo.racks)) if detailed else []:
        racks.append(
            {
                "name": md_cell(rack or "(unplaced)"),
                "count": len(items),
                "mix": md_cell(rack_mix(items)),
                "rows": [[md_cell(v) for v in rack_row(*item)] for item in items],
            }
        )
    uncabled = [link for link in ctx.topo.links if link.cable < 0 and link.media == ""]
    return {
        "title": md_cell(bp.name),
        "site": md_cell(bp.site.name),
        "location": md_cell(bp.site.location or ""),
        "description": md_cell(bp.description or ""),
        "total": sum(r.cable.pieces for r in rows),
        "rows": len(rows),
        "links": len(ctx.topo.links),
        "uncabled": len(uncabled),
        "summary": _summary(_count(rows)),
        "fabrics": [
            {
                "name": md_cell(name),
                "count": sum(r.cable.pieces for r in items),
                "summary": _summary(_count(items)),
                "rack_pairs": _rack_pairs(items),
            }
            for name, items in fabrics.items()
        ],
        "racks": racks,
        "detailed": detailed,
        "limit": limit,
        "csv": CABLING_CSV,
        "links_csv": LINKS_CSV,
        "cable_header": [md_cell(h) for h in MD_HEADER],
    }


def render_cabling(ctx: RenderContext) -> dict[str, str]:
    table = shared_cable_table(ctx)
    cables = shared_cable_list(ctx)
    return {
        CABLING_CSV: cabling_csv(cables),
        LINKS_CSV: csv_text(table, cables.link_labels),
        CABLING_MD: ctx.render("handoff/cabling.md.j2", markdown_model(ctx, cables, MD_CABLE_LIMIT)),
    }
