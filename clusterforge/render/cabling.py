"""Cabling plan for the installers: handoff/cabling.csv (every cable, once) and handoff/cabling.md (readable view)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from .context import RenderContext
from .escape import csv_text, md_cell
from .handoff_common import CableRow, End, cable_rows

CABLING_CSV = "handoff/cabling.csv"
CABLING_MD = "handoff/cabling.md"
MD_CABLE_LIMIT = 2000
"""Above this many cables, cabling.md keeps only the summaries; cabling.csv always lists every cable."""

CSV_HEADER = [
    "label", "fabric", "tier", "rail",
    "a_row", "a_rack", "a_u", "a_device", "a_port", "a_transceiver",
    "b_row", "b_rack", "b_u", "b_device", "b_port", "b_transceiver",
    "speed_gbps", "media", "cable", "length_class_m", "run_length_m",
]
MD_HEADER = ["label", "tier", "rail", "A rack", "A U", "A device", "A port", "B rack", "B U", "B device", "B port",
             "speed", "media", "cable", "order", "run"]


def _end_csv(end: End) -> list[object]:
    return [end.row, end.rack, end.u if end.u is not None else "", end.device, end.port, end.transceiver]


def csv_rows(rows: list[CableRow]) -> list[list[object]]:
    return [[r.label, r.fabric, r.tier, r.rail if r.rail is not None else "", *_end_csv(r.a), *_end_csv(r.b),
             r.speed_gbps, r.media, _cable_text(r), r.length_class_m, r.length_m] for r in rows]


def _cable_text(row: CableRow) -> str:
    """The media column in words: for optics, the modules at both ends plus the fibre between them."""
    if not row.optical:
        return row.cable
    optics = row.a.transceiver if row.a.transceiver == row.b.transceiver else \
        f"{row.a.transceiver} / {row.b.transceiver}"
    return f"{optics} + {row.cable}"


def _media_class(row: CableRow) -> str:
    return f"{row.media} {row.length_class_m:g} m" if row.media else "not cabled"


def _summary(rows: list[CableRow]) -> list[list[str]]:
    """Count by media and ordered length, in media then length order."""
    counts = Counter((r.media, r.length_class_m) for r in rows)
    return [[md_cell(media or "not cabled"), md_cell(f"{length:g} m"), str(n)]
            for (media, length), n in sorted(counts.items())]


def _rack_pairs(rows: list[CableRow]) -> list[list[str]]:
    pairs: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for r in rows:
        pairs[tuple(sorted((r.a.rack, r.b.rack)))][_media_class(r)] += 1  # type: ignore[index]
    out = []
    for (first, second), mix in sorted(pairs.items()):
        detail = ", ".join(f"{n} x {what}" for what, n in sorted(mix.items()))
        out.append([md_cell(first or "(unplaced)"), md_cell(second or "(unplaced)"), str(sum(mix.values())),
                    md_cell(detail)])
    return out


def _md_row(r: CableRow) -> list[str]:
    values: list[object] = [r.label, r.tier, r.rail if r.rail is not None else "", r.a.rack, r.a.u, r.a.device,
                            r.a.port, r.b.rack, r.b.u, r.b.device, r.b.port, f"{r.speed_gbps:g}G", r.media,
                            _cable_text(r), f"{r.length_class_m:g} m", f"{r.length_m:g} m"]
    return [md_cell(v) for v in values]


def markdown_model(ctx: RenderContext, rows: list[CableRow], limit: int = MD_CABLE_LIMIT) -> dict[str, Any]:
    bp = ctx.valid.blueprint
    by_fabric: dict[str, list[CableRow]] = defaultdict(list)
    for r in rows:
        by_fabric[r.fabric].append(r)
    detailed = len(rows) <= limit
    fabrics = []
    for name, members in by_fabric.items():  # rows are already in fabric order
        racks: dict[str, list[list[str]]] = defaultdict(list)
        if detailed:
            for r in members:
                racks[r.a.rack or "(unplaced)"].append(_md_row(r))
        fabrics.append({"name": md_cell(name), "count": len(members), "summary": _summary(members),
                        "rack_pairs": _rack_pairs(members),
                        "racks": [{"name": md_cell(rack), "rows": table} for rack, table in racks.items()]})
    return {
        "title": md_cell(bp.name),
        "site": md_cell(bp.site.name),
        "location": md_cell(bp.site.location or ""),
        "description": md_cell(bp.description or ""),
        "total": len(rows),
        "summary": _summary(rows),
        "fabrics": fabrics,
        "detailed": detailed,
        "limit": limit,
        "csv": CABLING_CSV,
        "cable_header": [md_cell(h) for h in MD_HEADER],
    }


def render_cabling(ctx: RenderContext) -> dict[str, str]:
    rows = cable_rows(ctx.valid, ctx.topo)
    return {
        CABLING_CSV: csv_text(CSV_HEADER, csv_rows(rows)),
        CABLING_MD: ctx.render("handoff/cabling.md.j2", markdown_model(ctx, rows, MD_CABLE_LIMIT)),
    }
