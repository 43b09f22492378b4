"""Rack elevations: one SVG per rack (front and rear, U1 at the bottom) and an index page by row.

Each rack is drawn by `rack_drawing.RackDrawer`: an <svg> element written in Python, as thousands of racks
of a few kinds share most of their drawing. The index page is a plain model that `index.html.j2` prints.
Every text from the blueprint or the catalog is escaped for the format it lands in (XML/HTML) before it
reaches a template, see `escaped`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from ...errors import Finding, SourceLocation
from ...expand.topology import Device, Rack
from ...output.pieces import FileText, Pieces
from ..context import RenderContext
from .rack_drawing import (
    OTHER_COLOUR,
    RESERVED_FILL,
    ROLE_COLOURS,
    TOP,
    U_PX,
    XML_DECLARATION,
    RackDrawer,
    legend_label,
    xml_escape,
)

ELEVATIONS_DIR = "handoff/elevations"
__all__ = [
    "ELEVATIONS_DIR",
    "TOP",
    "U_PX",
    "escaped",
    "finding_where",
    "legend_model",
    "rack_files",
    "rack_svgs",
    "render_elevation",
    "rows_model",
    "xml_text",
]


def xml_text(text: str) -> Markup:
    """`text` escaped for XML and HTML (also inside attribute values); characters XML 1.0 forbids become U+FFFD."""
    return Markup(xml_escape(text))


def escaped(value: Any, escape: Callable[[str], str]) -> Any:
    """A copy of a plain model with every string passed through `escape`; Markup (already safe) is kept."""
    if isinstance(value, Markup):
        return value
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, dict):
        return {k: escaped(v, escape) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [escaped(v, escape) for v in value]
    return value


def ordered_racks(ctx: RenderContext) -> list[Rack]:
    return sorted(ctx.topo.racks.values(), key=lambda r: (r.row_index, r.position, r.name))


def rack_svgs(ctx: RenderContext) -> dict[str, str]:
    """The <svg> element of every rack (no XML declaration, so it can be inlined in HTML), floor order."""
    return {name: text[len(XML_DECLARATION) : -1] for name, text in ctx.shared(_drawn_racks).items()}


INLINE_RACKS_MAX = 200
"""Above this many racks, the HTML pages link each rack's SVG file instead of inlining it: at 100,000 GPUs
inlining makes each page about 100 MB, linking about 2 MB."""


def page_drawings(ctx: RenderContext, folder: str) -> dict[str, str]:
    """What an HTML page shows for each rack: the inline SVG, or above INLINE_RACKS_MAX racks an <img> of
    the rack's file in `folder` (relative to the page, '' or ending in '/')."""
    if len(ctx.topo.racks) <= INLINE_RACKS_MAX:
        return rack_svgs(ctx)
    return {
        rack.name: f'<img src="{xml_escape(folder + quote(rack.name))}.svg" '
        f'alt="{xml_escape("Elevation of rack " + rack.name)}" loading="lazy">'
        for rack in ordered_racks(ctx)
    }


def rack_files(ctx: RenderContext) -> dict[str, FileText]:
    """The SVG file of every rack by name, floor order. Where the pages inline them, drawn once for the files
    and the pages alike; above INLINE_RACKS_MAX racks each is drawn as it is written, so that the drawings of
    a large cluster (0.9 GB at 1,000,000 GPUs) never stand in memory together."""
    if len(ctx.topo.racks) <= INLINE_RACKS_MAX:
        return dict(ctx.shared(_drawn_racks))
    return {name: _drawn_when_written(draw) for name, draw in _rack_drawings(ctx).items()}


def _drawn_when_written(draw: Callable[[], str]) -> Pieces:
    return Pieces(lambda: (draw(),))


def _drawn_racks(ctx: RenderContext) -> dict[str, str]:
    return {name: draw() for name, draw in _rack_drawings(ctx).items()}


def _rack_drawings(ctx: RenderContext) -> dict[str, Callable[[], str]]:
    """What draws each rack's SVG file, by rack name, floor order."""
    racks = ctx.plan.power.racks
    placed: dict[str, list[Device]] = defaultdict(list)
    for device in ctx.topo.devices.values():
        if device.rack is not None:
            placed[device.rack].append(device)
    drawer = RackDrawer(ctx.valid.catalog)
    return {rack.name: partial(drawer.file, rack, racks[rack.name], placed[rack.name]) for rack in ordered_racks(ctx)}


def finding_where(ctx: RenderContext, finding: Finding) -> str:
    """`file:line:col` with the file relative to the blueprint's folder (the output must not depend on the
    working directory), else the data path."""
    loc = finding.location
    if loc is None:
        return finding.path_text
    base = ctx.valid.path.resolve().parent
    try:
        name = Path(loc.file).resolve().relative_to(base).as_posix()
    except ValueError:
        name = Path(loc.file).name
    return str(SourceLocation(name, loc.line, loc.column))


def finding_item(ctx: RenderContext, finding: Finding) -> dict[str, Any]:
    return {
        "severity": finding.severity.value,
        "code": finding.code,
        "message": finding.message,
        "hint": finding.hint or "",
        "suppressed": finding.suppressed_by or "",
        "where": finding_where(ctx, finding),
    }


def rack_findings(ctx: RenderContext) -> tuple[dict[str, list[Finding]], list[Finding]]:
    """Findings by rack (about the rack itself, or a device placed in it), and the others."""
    by_rack: dict[str, list[Finding]] = {name: [] for name in ctx.topo.racks}
    other = []
    for finding in ctx.findings:
        racks = []
        for subject in finding.subjects or (finding.subject,):
            device = ctx.topo.devices.get(subject) if subject else None
            rack = subject if subject in by_rack else (device.rack if device is not None else None)
            if rack is not None and rack in by_rack and rack not in racks:
                racks.append(rack)
        for rack in racks:
            by_rack[rack].append(finding)
        if not racks:
            other.append(finding)
    return by_rack, other


def legend_model() -> list[dict[str, Any]]:
    return [{"text": legend_label(role), "fill": fill, "hatched": False} for role, fill in ROLE_COLOURS.items()] + [
        {"text": "other equipment", "fill": OTHER_COLOUR, "hatched": False},
        {"text": "reserved", "fill": RESERVED_FILL, "hatched": True},
    ]


def rows_model(ctx: RenderContext, svgs: dict[str, str]) -> list[dict[str, Any]]:
    """Racks by row in floor order, each with its SVG and its findings (for index.html and report.html),
    escaped for HTML. The SVGs are already escaped and large: they go in as they are, not copied."""
    by_rack, _ = rack_findings(ctx)
    rows: list[dict[str, Any]] = []
    for rack in ordered_racks(ctx):
        if not rows or rows[-1]["name"] != rack.row:
            rows.append({"name": xml_text(rack.row), "racks": []})
        rows[-1]["racks"].append(
            {
                "name": xml_text(rack.name),
                "svg": svgs[rack.name],
                "findings": escaped([finding_item(ctx, f) for f in by_rack[rack.name]], xml_text),
            }
        )
    return rows


def render_elevation(ctx: RenderContext) -> dict[str, FileText]:
    _, other = rack_findings(ctx)
    files = {f"{ELEVATIONS_DIR}/{name}.svg": text for name, text in rack_files(ctx).items()}
    bp = ctx.valid.blueprint
    page = {
        "title": f"{bp.name}: rack elevations",
        "site": bp.site.name,
        "description": bp.description,
        "other_findings": [finding_item(ctx, f) for f in other],
        "legend": legend_model(),
    }
    files[f"{ELEVATIONS_DIR}/index.html"] = ctx.render(
        "handoff/index.html.j2", {**escaped(page, xml_text), "rows": rows_model(ctx, page_drawings(ctx, ""))}
    )
    return files
