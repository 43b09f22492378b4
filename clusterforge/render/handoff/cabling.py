"""Cabling plan for the installers: handoff/cabling.csv (every physical cable once, with both ends and a label
for each), handoff/links.csv (every link, with the cable that carries it) and handoff/cabling.md (summaries
and, per rack, the cables a technician pulls there)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from functools import partial
from itertools import chain, repeat
from operator import attrgetter
from typing import Any, TypeVar

from ...output.pieces import FileText, Pieces, batches, whole
from ..context import RenderContext
from ..escape import Escaped, Once, csv_cells, csv_field, csv_line, md_cell, plain_texts
from .cable_rows import CableEnd, CableKind, CableList, CableRow, TallyKey, place_where, shared_cable_list
from .handoff_common import CableTable, shared_cable_table
from .link_parts import LinkParts

CABLING_CSV = "handoff/cabling.csv"
LINKS_CSV = "handoff/links.csv"
CABLING_MD = "handoff/cabling.md"
T = TypeVar("T")
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


def cabling_csv(cables: CableList, heads: list[str] | None = None) -> str:
    """cabling.csv: the header, then one line per physical cable (the columns of CSV_HEADER). `heads` are
    the fabric, tier and rail cells of each link (`link_heads`), when the caller has them."""
    return whole(cabling_csv_pieces(cables, heads))


def cabling_csv_pieces(cables: CableList, heads: list[str] | None = None) -> Pieces:
    """`cabling_csv` in pieces of LINES_PER_PIECE lines, made as they are read."""
    return Pieces(partial(_cabling_csv_made, cables, heads))


def _cabling_csv_made(cables: CableList, heads: list[str] | None) -> Iterator[str]:
    header = f"{csv_line(CSV_HEADER)}\n"
    lines = _simple_lines(cables, link_heads(cables.table) if heads is None else heads)
    if lines is None:
        lines = (f"{csv_line(cable_cells(r))}\n" for r in cables.rows())
    elif cables.irregular:
        lines = _with_irregular(lines, cables)
    return chain((header,), map("".join, batches(lines)))


def _with_irregular(lines: Iterable[str], cables: CableList) -> Iterator[str]:
    """The lines, those of irregular cables made from their rows."""
    irregular = cables.irregular
    for i, line in enumerate(lines):
        row = irregular.get(i)
        yield line if row is None else f"{csv_line(cable_cells(row))}\n"


def _simple_lines(cables: CableList, heads: list[str]) -> Iterator[str] | None:
    """Every cable's line as if it were its first link alone (right for all but the irregular cables), from
    texts escaped once per distinct value (a device's row, rack, U and name; a port; optics; a kind of cable),
    each with the comma that follows it, and the labels and label texts, new for every cable, quoted as they
    stand. None when some label or device text would need more than quotes."""
    table, at, labels = cables.table, cables.at_cables, cables.labels
    a, b, a_ports, b_ports = at(table.a), at(table.b), at(table.column("a_port")), at(table.column("b_port"))
    plain_places = '"' not in "".join(map(place_where, table.places.values()))
    if not (plain_places and plain_texts(labels)) or '"' in "".join(a_ports) or '"' in "".join(b_ports):
        return None
    cell = csv_cells()
    end = Once(
        lambda p: (
            f"{cell[p.row]}{cell[p.rack]}{cell['' if p.u is None else str(p.u)]}{cell[p.device]}",
            place_where(p),
        )
    )
    modules = Once(lambda parts: (cell[parts.a_transceiver], cell[parts.b_transceiver] + cell[f"{parts.speed_gbps:g}"]))
    kind = Once(lambda k: ("".join(cell[v] for v in (*k[:3], f"{k[3]:g}")), f"{k[4]},"))  # media .. length; pieces
    run = Escaped(lambda metres: cell[f"{metres:g}"])
    runs = map(attrgetter("run_m"), cables.cables)
    texts = zip(labels, at(heads), a_ports, each(cell, a_ports), b_ports, each(cell, b_ports), strict=True)
    worked = zip(
        each(end, a),
        each(end, b),
        each(modules, at(table.parts)),
        each(kind, cables.kinds),
        each(run, runs),
        strict=True,
    )
    return (
        f'"{label}",{head}1,{a_cells}{a_cell}{a_module}{b_cells}{b_cell}{b_module}{kind_cells}{run_cell}{pieces}'
        f'"{label} | {a_where}{a_port} | to {b_where}{b_port}","{label} | {b_where}{b_port} | to {a_where}{a_port}"\n'
        for (label, head, a_port, a_cell, b_port, b_cell), (
            (a_cells, a_where),
            (b_cells, b_where),
            (a_module, b_module),
            (kind_cells, pieces),
            run_cell,
        ) in zip(texts, worked, strict=True)
    )


def each(escape: Once[T], values: Iterable[Any]) -> Iterator[T]:
    """The escaped text (or texts) of each value."""
    return map(escape.__getitem__, values)


def link_heads(table: CableTable) -> list[str]:
    """The fabric, tier and rail cells of every link, in plan order, each with the comma that follows."""
    cell = csv_cells()
    head = Escaped(lambda key: f"{cell[key[0]]}{cell[key[1]]}{cell['' if key[2] is None else key[2]]}")
    links = table.links  # made in the topology's order, then put in plan order
    return table.in_order(list(map(head.__getitem__, zip(links["fabric"], links["tier"], links["rail"], strict=True))))


def cable_cells(r: CableRow) -> list[object]:
    """One cable's cells in cabling.csv (the columns of CSV_HEADER), worked out from its row."""
    cable = r.cable
    return [
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


def _end_cells(end: CableEnd) -> list[object]:
    return [end.column("row"), end.column("rack"), end.column("u"), end.column("device"), _port_text(end), end.module]


def csv_text(table: CableTable, labels: list[str], heads: list[str] | None = None) -> str:
    """links.csv: the header, then one line per link (the columns of LINKS_HEADER). `heads` are the fabric,
    tier and rail cells of each link (`link_heads`), when the caller has them."""
    return whole(links_csv_pieces(table, labels, heads))


def links_csv_pieces(table: CableTable, labels: list[str], heads: list[str] | None = None) -> Pieces:
    """`csv_text` in pieces of LINES_PER_PIECE lines, made as they are read."""
    return Pieces(partial(_links_csv_made, table, labels, heads))


def _links_csv_made(table: CableTable, labels: list[str], heads: list[str] | None) -> Iterator[str]:
    """Every cell that repeats (devices, ports, optics, cable types, lengths) is escaped once, with the comma
    or newline that follows it, and neighbouring cells that go together (a device's row, rack, U and name)
    as one text; each piece is then one join of ready texts, without a string per line in between."""
    cell = csv_cells()
    place = Escaped(lambda p: "".join((cell[p.row], cell[p.rack], cell["" if p.u is None else p.u], cell[p.device])))
    a_module = Escaped(lambda parts: cell[parts.a_transceiver])
    b_module = Escaped(
        lambda parts: cell[parts.b_transceiver] + cell[parts.speed_gbps] + cell[parts.media] + cell[cable_text(parts)]
    )  # and the link's speed, media and cable
    lengths = Escaped(lambda key: f"{cell[key[0]]}{csv_field(key[1])}\n")  # ordered, run

    links = table.links  # cells made of several columns are made in the topology's order, then put in plan order
    length_cells = list(each(lengths, zip(links["length_class_m"], links["length_m"], strict=True)))
    plain = plain_texts(labels)  # then each is quoted as it stands, the quotes joined in with the other texts
    rows = zip(
        repeat('"' if plain else "", len(labels)),
        labels if plain else map(csv_field, labels),
        repeat('",' if plain else ",", len(labels)),
        link_heads(table) if heads is None else heads,
        each(place, table.a),
        each(cell, table.column("a_port")),
        each(a_module, table.parts),
        each(place, table.b),
        each(cell, table.column("b_port")),
        each(b_module, table.parts),
        table.in_order(length_cells),
        strict=True,
    )
    header = f"{csv_line(LINKS_HEADER)}\n"
    return chain((header,), ("".join(chain.from_iterable(batch)) for batch in batches(rows)))


SummaryKey = tuple[str, str, float]
"""Media, part number (or product key), ordered length."""


def _summary(counts: Counter[SummaryKey]) -> list[list[str]]:
    """Cables by media, part and ordered length, in that order."""
    return [
        [md_cell(media), md_cell(part), md_cell(f"{length:g} m"), str(n)]
        for (media, part, length), n in sorted(counts.items())
    ]


def _count(tally: Iterable[tuple[TallyKey, int]]) -> Counter[SummaryKey]:
    out: Counter[SummaryKey] = Counter()
    for (_, _, _, (media, product, part_number, length, pieces)), n in tally:
        out[media, part_number or product, length] += pieces * n
    return out


def _pieces(tally: Iterable[tuple[TallyKey, int]]) -> int:
    return sum(key[3][4] * n for key, n in tally)


def _mix_text(mix: dict[str, int]) -> str:
    """Cables by media and ordered length: '12 x MMF 10 m, 2 x ACC 4 m'."""
    return ", ".join(f"{n} x {what}" for what, n in sorted(mix.items()))


def _mix_key(kind: CableKind) -> str:
    return f"{kind[0]} {kind[3]:g} m"


def _rack_pairs(tally: Iterable[tuple[TallyKey, int]]) -> list[list[str]]:
    """Cables between each pair of racks (either way round), with their media and ordered length."""
    pairs: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    for (_, a_racks, b_racks, kind), n in tally:
        first, second = sorted((" / ".join(a_racks), " / ".join(b_racks)))
        mix = pairs[first, second]
        what = _mix_key(kind)
        mix[what] = mix.get(what, 0) + kind[4] * n
    out = []
    for (first, second), mix in sorted(pairs.items()):
        out.append([md_cell(first), md_cell(second), str(sum(mix.values())), md_cell(_mix_text(mix))])
    return out


def rack_summaries(cables: CableList, rack_order: list[str]) -> list[tuple[str, int, str]]:
    """Per rack (floor order) with a cable end in it: its cables (a cable within one rack counted once) and
    their mix of media and ordered length ('12 x MMF 10 m, 2 x ACC 4 m')."""
    counts: dict[str, int] = {}
    mixes: dict[str, dict[str, int]] = defaultdict(dict)
    for (_, a_racks, b_racks, kind), n in cables.tally.items():
        what = _mix_key(kind)
        for rack in {*a_racks, *b_racks}:
            counts[rack] = counts.get(rack, 0) + n
            mix = mixes[rack]
            mix[what] = mix.get(what, 0) + kind[4] * n
    order = {name: i for i, name in enumerate(rack_order)}
    racks = sorted(counts, key=lambda name: (order.get(name, len(order)), name))
    return [(rack, counts[rack], _mix_text(mixes[rack])) for rack in racks]


def rack_rows(cables: CableList) -> dict[str, list[tuple[CableRow, CableEnd, CableEnd]]]:
    """Per rack, the cables with an end there: (cable, this end, other end), this end's U and label first.
    A cable within one rack is listed once, from its A end. Builds a CableRow per cable: for small clusters."""
    by_rack: dict[str, list[tuple[CableRow, CableEnd, CableEnd]]] = defaultdict(list)
    for r in cables.rows():
        a_racks = {p.rack for p in r.a.places}
        for rack in sorted(a_racks):
            by_rack[rack].append((r, r.a, r.b))
        for rack in sorted({p.rack for p in r.b.places} - a_racks):
            by_rack[rack].append((r, r.b, r.a))
    return {
        rack: sorted(items, key=lambda item: (-(item[1].places[0].u or 0), item[0].label))
        for rack, items in by_rack.items()
    }


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


def shared_rack_tables(ctx: RenderContext) -> dict[str, list[list[str]]]:
    """Per rack, its cables as rack_row texts: cabling.md and report.html both list them (small clusters)."""
    return ctx.shared(_rack_tables)


def _rack_tables(ctx: RenderContext) -> dict[str, list[list[str]]]:
    return {rack: [rack_row(*item) for item in items] for rack, items in rack_rows(shared_cable_list(ctx)).items()}


def markdown_model(ctx: RenderContext, cables: CableList, limit: int = MD_CABLE_LIMIT) -> dict[str, Any]:
    bp = ctx.valid.blueprint
    tally = list(cables.tally.items())
    detailed = len(cables) <= limit
    fabrics: dict[str, list[tuple[TallyKey, int]]] = {name: [] for name in dict.fromkeys(cables.fabrics)}
    for key, n in tally:
        fabrics[key[0]].append((key, n))
    per_rack = shared_rack_tables(ctx) if detailed else {}
    cell = Escaped(md_cell)  # rack_row gives texts only (no bools), and they repeat from cable to cable
    racks = [
        {
            "name": md_cell(rack or "(unplaced)"),
            "count": count,
            "mix": md_cell(mix),
            "rows": [[cell[v] for v in row] for row in per_rack[rack]],
        }
        for rack, count, mix in (rack_summaries(cables, list(ctx.topo.racks)) if detailed else [])
    ]
    every_link_cabled = min(cables.table.links["cable"], default=0) >= 0
    uncabled = [] if every_link_cabled else [link for link in ctx.topo.links if link.cable < 0 and link.media == ""]
    return {
        "title": md_cell(bp.name),
        "site": md_cell(bp.site.name),
        "location": md_cell(bp.site.location or ""),
        "description": md_cell(bp.description or ""),
        "total": _pieces(tally),
        "rows": len(cables),
        "links": len(ctx.topo.links),
        "uncabled": len(uncabled),
        "summary": _summary(_count(tally)),
        "fabrics": [
            {
                "name": md_cell(name),
                "count": _pieces(items),
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


def render_cabling(ctx: RenderContext) -> dict[str, FileText]:
    table = shared_cable_table(ctx)
    cables = shared_cable_list(ctx)
    heads = link_heads(table)
    return {
        CABLING_CSV: cabling_csv_pieces(cables, heads),
        LINKS_CSV: links_csv_pieces(table, cables.link_labels, heads),
        CABLING_MD: ctx.render("handoff/cabling.md.j2", markdown_model(ctx, cables, MD_CABLE_LIMIT)),
    }
