"""Cabling plan for the installers: handoff/cabling.csv (every cable, once) and handoff/cabling.md (readable view)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from itertools import chain, repeat
from operator import add
from typing import Any

from .context import RenderContext
from .escape import Escaped, csv_field, csv_line, md_cell
from .handoff_common import CableRow, CableTable, column, shared_cable_table
from .link_parts import LinkParts

CABLING_CSV = "handoff/cabling.csv"
CABLING_MD = "handoff/cabling.md"
MD_CABLE_LIMIT = 2000
"""Above this many cables, cabling.md keeps only the summaries; cabling.csv always lists every cable."""

CSV_HEADER = [
    "label",
    "fabric",
    "tier",
    "rail",
    "a_row",
    "a_rack",
    "a_u",
    "a_device",
    "a_port",
    "a_transceiver",
    "b_row",
    "b_rack",
    "b_u",
    "b_device",
    "b_port",
    "b_transceiver",
    "speed_gbps",
    "media",
    "cable",
    "length_class_m",
    "run_length_m",
]
MD_HEADER = [
    "label",
    "tier",
    "rail",
    "A rack",
    "A U",
    "A device",
    "A port",
    "B rack",
    "B U",
    "B device",
    "B port",
    "speed",
    "media",
    "cable",
    "order",
    "run",
]


def cable_text(parts: LinkParts) -> str:
    """The media column in words: for optics, the modules at both ends plus the fibre between them."""
    if not parts.optical:
        return parts.cable
    a, b = parts.a.transceiver, parts.b.transceiver
    optics = a if a == b else f"{a} / {b}"
    return f"{optics} + {parts.cable}"


def csv_text(table: CableTable) -> str:
    """cabling.csv: the header, then one line per cable (the columns of CSV_HEADER).

    Every cell that repeats (devices, ports, optics, cable types, lengths) is escaped once, with the comma
    or newline that follows it, and neighbouring cells that go together (a device's row, rack, U and name)
    as one text; the file is then one join of ready texts, without a string per line in between."""
    cell = Escaped(lambda value: f"{csv_field(value)},")
    # fabric, tier and rail
    link = Escaped(lambda key: f"{cell[key[0]]}{cell[key[1]]}{cell['' if key[2] is None else key[2]]}")
    place = Escaped(lambda p: "".join((cell[p.row], cell[p.rack], cell["" if p.u is None else p.u], cell[p.device])))
    a_module = Escaped(lambda parts: cell[parts.a.transceiver])
    b_module = Escaped(
        lambda parts: cell[parts.b.transceiver] + cell[parts.speed_gbps] + cell[parts.media] + cell[cable_text(parts)]
    )  # and the link's speed, media and cable
    lengths = Escaped(lambda key: f"{cell[key[0]]}{csv_field(key[1])}\n")  # ordered, run

    def cells(escape: Escaped, values: Iterable[Any]) -> Iterator[str]:
        return map(escape.__getitem__, values)

    links = table.links  # cells made of several columns are made in the topology's order, then put in plan order
    link_cells = list(cells(link, zip(links["fabric"], links["tier"], links["rail"], strict=True)))
    length_cells = list(cells(lengths, zip(links["length_class_m"], links["length_m"], strict=True)))
    rows = zip(
        _label_cells(table),
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
    return "".join([f"{csv_line(CSV_HEADER)}\n", *chain.from_iterable(rows)])


def _label_cells(table: CableTable) -> Iterator[str]:
    """The label column, with its commas. A label is its fabric's prefix then digits, and digits need
    neither quoting nor the formula guard: the cell is the prefix's cell with the digits inside the quotes."""
    return chain.from_iterable(
        map(csv_field(f"{fabric}-")[:-1].__add__, map(add, table.numbers[cables], repeat('",')))
        for fabric, cables in table.segments()
    )


def _media_class(media: str, length: float) -> str:
    return f"{media} {length:g} m" if media else "not cabled"


def _summary(counts: Counter[tuple[str, float]]) -> list[list[str]]:
    """Count by media and ordered length, in media then length order."""
    return [
        [md_cell(media or "not cabled"), md_cell(f"{length:g} m"), str(n)]
        for (media, length), n in sorted(counts.items())
    ]


def _rack_pairs(counts: Counter[tuple[str, str, str, float]]) -> list[list[str]]:
    """Cables between each pair of racks (either way round), with their media and ordered length."""
    pairs: dict[tuple[str, str], dict[str, int]] = {}
    for (a_rack, b_rack, media, length), n in counts.items():
        mix = pairs.setdefault((a_rack, b_rack) if a_rack <= b_rack else (b_rack, a_rack), {})
        what = _media_class(media, length)
        mix[what] = mix.get(what, 0) + n
    rack = Escaped(lambda name: md_cell(name or "(unplaced)"))
    out = []
    for (first, second), mix in sorted(pairs.items()):
        detail = ", ".join(f"{n} x {what}" for what, n in sorted(mix.items()))
        out.append([rack[first], rack[second], str(sum(mix.values())), md_cell(detail)])
    return out


def _md_row(r: CableRow) -> list[str]:
    link = r.link
    values: list[object] = [
        r.label,
        link.tier,
        link.rail if link.rail is not None else "",
        r.a.rack,
        r.a.u,
        r.a.device,
        link.a_port,
        r.b.rack,
        r.b.u,
        r.b.device,
        link.b_port,
        f"{link.speed_gbps:g}G",
        link.media,
        cable_text(r.parts),
        f"{link.length_class_m:g} m",
        f"{link.length_m:g} m",
    ]
    return [md_cell(v) for v in values]


def _fabric_counts(table: CableTable) -> dict[str, Counter[tuple[str, str, str, float]]]:
    """Per fabric (in plan order), cables by A rack, B rack, media and ordered length: every summary of
    cabling.md adds these up."""
    a_racks, b_racks = column(table.a, "rack"), column(table.b, "rack")
    media, lengths = table.column("media"), table.column("length_class_m")
    return {
        fabric: Counter(zip(a_racks[cables], b_racks[cables], media[cables], lengths[cables], strict=True))
        for fabric, cables in table.segments()
    }


def _by_media(counts: Counter[tuple[str, str, str, float]]) -> Counter[tuple[str, float]]:
    out: Counter[tuple[str, float]] = Counter()
    for (_, _, media, length), n in counts.items():
        out[(media, length)] += n
    return out


def _detail(table: CableTable) -> dict[str, dict[str, list[list[str]]]]:
    """Per fabric, per A rack (in plan order), the table rows of its cables."""
    tables: dict[str, dict[str, list[list[str]]]] = defaultdict(lambda: defaultdict(list))
    for r in table.rows():
        tables[r.link.fabric][r.a.rack or "(unplaced)"].append(_md_row(r))
    return tables


def markdown_model(ctx: RenderContext, table: CableTable, limit: int = MD_CABLE_LIMIT) -> dict[str, Any]:
    bp = ctx.valid.blueprint
    by_fabric = _fabric_counts(table)
    detailed = len(table) <= limit
    tables = _detail(table) if detailed else {}
    total: Counter[tuple[str, float]] = Counter()
    fabrics = []
    for name, counts in by_fabric.items():  # in plan order, so fabric order
        by_media = _by_media(counts)
        total.update(by_media)
        racks = tables.get(name, {})
        fabrics.append(
            {
                "name": md_cell(name),
                "count": sum(counts.values()),
                "summary": _summary(by_media),
                "rack_pairs": _rack_pairs(counts),
                "racks": [{"name": md_cell(rack), "rows": cables} for rack, cables in racks.items()],
            }
        )
    return {
        "title": md_cell(bp.name),
        "site": md_cell(bp.site.name),
        "location": md_cell(bp.site.location or ""),
        "description": md_cell(bp.description or ""),
        "total": len(table),
        "summary": _summary(total),
        "fabrics": fabrics,
        "detailed": detailed,
        "limit": limit,
        "csv": CABLING_CSV,
        "cable_header": [md_cell(h) for h in MD_HEADER],
    }


def render_cabling(ctx: RenderContext) -> dict[str, str]:
    table = shared_cable_table(ctx)
    return {
        CABLING_CSV: csv_text(table),
        CABLING_MD: ctx.render("handoff/cabling.md.j2", markdown_model(ctx, table, MD_CABLE_LIMIT)),
    }
