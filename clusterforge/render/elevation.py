"""Rack elevations: one SVG per rack (front and rear, U1 at the bottom) and an index page by row.

Geometry, colours and texts are computed here into a plain model; the templates under
`templates/handoff/` only print it. Every text from the blueprint or the catalog is escaped for the
format it lands in (XML/HTML) before it reaches a template, see `escaped`.
"""

from __future__ import annotations

import html
import re
import textwrap
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup

from ..catalog.models import Device as CatalogDevice
from ..errors import Finding, SourceLocation
from ..expand.topology import Device, Rack
from ..plan import power_plan
from .context import RenderContext

ELEVATIONS_DIR = "handoff/elevations"

# --- geometry (px) --------------------------------------------------------------------------------
U_PX = 16
"""Height of one rack unit."""
FACE_W = 260
GUTTER = 28
"""Column of U numbers left of each face."""
MARGIN = 12
TOP = 64
"""y of the top edge of the highest U."""
LINE = 11
"""Line pitch of the texts inside a device."""
CHAR_PX = 5.9
"""Average advance of a 10px sans-serif character, for truncating texts to the face width."""
FOOTER_LINE = 18
BAR_W = 150
LEGEND_ROW = 16

# --- colours: fill by role (light, so black text stays readable in print) ------------------------
ROLE_COLOURS: dict[str, str] = {
    "compute": "#9ecae1",
    "login": "#b3de69",
    "storage": "#d9b38c",
    "management": "#bebada",
    "fabric-manager": "#9e9ac8",
    "leaf": "#fdb462",
    "spine": "#fb8072",
    "core": "#e78ac3",
    "oob": "#ffed6f",
    "nvswitch": "#8dd3c7",
    "power-shelf": "#fccde5",
    "patch-panel": "#d9d9d9",
}
OTHER_COLOUR = "#e0e0e0"
RESERVED_FILL = "#eeeeee"
LEGEND_LABELS: dict[str, str] = {
    "compute": "compute node", "login": "login node", "storage": "storage node", "management": "management node",
    "fabric-manager": "fabric manager", "leaf": "leaf switch", "spine": "spine switch", "core": "core switch",
    "oob": "out-of-band switch", "nvswitch": "NVLink switch tray", "power-shelf": "power shelf",
    "patch-panel": "patch panel",
}
BAR_OK, BAR_HIGH, BAR_OVER = "#4caf50", "#f0ad4e", "#d9534f"

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_text(text: str) -> Markup:
    """`text` escaped for XML and HTML (also inside attribute values); characters XML 1.0 forbids become U+FFFD."""
    return Markup(html.escape(_XML_INVALID.sub("\ufffd", text), quote=True))


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


def num(value: float) -> str:
    """1234.5 -> '1,234.5'; at most two decimals, no trailing zeros."""
    text = f"{value:,.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fit(text: str, width_px: float, char_px: float = CHAR_PX) -> str:
    """`text` cut to what fits `width_px`, with an ellipsis when cut."""
    room = max(int(width_px / char_px), 2)
    return text if len(text) <= room else text[: room - 1] + "…"


def colour(role: str) -> str:
    return ROLE_COLOURS.get(role, OTHER_COLOUR)


def legend_label(role: str) -> str:
    return LEGEND_LABELS.get(role, role)


def u_top(rack_u: int, u: int, height: int) -> int:
    """y of the top edge of a span of `height` U whose lowest U is `u` (U1 at the bottom)."""
    return TOP + (rack_u - (u + height - 1)) * U_PX


# --- texts of one device --------------------------------------------------------------------------
def _rear_texts(entry: CatalogDevice | None) -> list[str]:
    """What the rear face shows: the port groups (the cabled side), then the PSUs."""
    if entry is None:
        return []
    texts = [f"{g.name}: {g.count}×{num(g.speed_gbps)}G {g.cage}" for g in entry.ports]
    if entry.psus:
        psus = entry.psus
        texts.append(f"PSU {psus.count}×{num(psus.rating_w / 1000)} kW ({psus.redundancy})")
    return texts


def _block_lines(x: int, y: int, h: int, texts: list[str]) -> list[dict[str, Any]]:
    """Text lines centred in a block, as many as fit its height; the first is the device name."""
    room = max(1, (h - 2) // LINE)
    if len(texts) > room:  # what does not fit on its own line shares the last one
        texts = [*texts[: room - 1], " · ".join(texts[room - 1:])]
    first = y + h / 2 - (len(texts) - 1) * LINE / 2 + 3.5
    return [{"x": x + 6, "y": round(first + i * LINE, 1), "text": fit(t, FACE_W - 12), "bold": i == 0}
            for i, t in enumerate(texts)]


def _device_blocks(rack: Rack, device: Device, entry: CatalogDevice | None, faces: list[int]) -> list[dict[str, Any]]:
    assert device.u is not None
    y = u_top(rack.rack_type.u_height, device.u, device.u_height)
    h = device.u_height * U_PX
    span = f"U{device.u}" if device.u_height == 1 else f"U{device.u}-U{device.u + device.u_height - 1}"
    front = [device.name, device.model] + ([entry.name] if entry is not None else [])
    if device.group:
        front.append(f"{device.role} · {'fabric' if device.kind == 'switch' else 'group'} {device.group}")
    rear = [device.name, *(_rear_texts(entry) or [legend_label(device.role)])]
    blocks = []
    for face, (x, texts) in zip(("front", "rear"), ((faces[0], front), (faces[1], rear)), strict=True):
        blocks.append({"face": face, "x": x, "y": y, "w": FACE_W, "h": h, "fill": colour(device.role),
                       "device": device.name, "role": device.role, "u": device.u, "height": device.u_height,
                       "title": f"{device.name}: {device.model}, {device.role}, {span}",
                       "lines": _block_lines(x, y, h, texts)})
    return blocks


def _reserved_spans(rack: Rack) -> list[tuple[int, int, str]]:
    """(lowest U, height, purpose) of each run of U reserved for the same purpose."""
    spans: list[tuple[int, int, str]] = []
    for index, slot in enumerate(rack.used):
        if slot is None or not slot.startswith("reserved:"):
            continue
        purpose = slot.removeprefix("reserved:").strip()
        u = index + 1
        if spans and spans[-1][2] == purpose and spans[-1][0] + spans[-1][1] == u:
            low, height, _ = spans[-1]
            spans[-1] = (low, height + 1, purpose)
        else:
            spans.append((u, 1, purpose))
    return spans


def _reserved_texts(purpose: str, height: int) -> list[str]:
    """'reserved: <purpose>' on one U; over more, 'reserved' above the purpose wrapped to the face width."""
    if height == 1:
        return [f"reserved: {purpose}"]
    return ["reserved", *textwrap.wrap(purpose, int((FACE_W - 12) / CHAR_PX))[: height * U_PX // LINE - 2]]


# --- footer: the rack's figures against its limits ------------------------------------------------
@dataclass(frozen=True)
class Metric:
    label: str
    load: float
    limit: float
    unit: str
    extra: str = ""

    @property
    def share(self) -> float | None:
        return self.load / self.limit if self.limit else None

    def text(self) -> str:
        share = f" ({self.share:.0%})" if self.share is not None else ""
        return f"{self.label}: {num(self.load)} of {num(self.limit)} {self.unit}{share}{self.extra}"

    def bar_colour(self) -> str:
        share = self.share
        if share is None or share > 1.0:
            return BAR_OVER
        return BAR_HIGH if share >= 0.9 else BAR_OK


def rack_metrics(rack: Rack, figures: dict[str, Any]) -> list[Metric]:
    cooling = rack.rack_type.cooling
    air = "rear-door air" if cooling.method == "rear-door" else "air"
    metrics = [Metric("Power", figures["power_kw"], figures["usable_power_kw"], "kW usable feed power"),
               Metric(f"Heat to {air}", figures["air_kw"], cooling.air_kw, "kW",
                      f"; total heat {num(figures['heat_kw'])} kW = {figures['heat_btu_h']:,} BTU/h")]
    if cooling.liquid_kw or figures["liquid_kw"]:
        metrics.append(Metric("Heat to liquid", figures["liquid_kw"], cooling.liquid_kw, "kW"))
    metrics.append(Metric("Weight", figures["weight_kg"], rack.rack_type.max_load_kg, "kg max load",
                          f"; empty rack {num(rack.rack_type.weight_kg)} kg"))
    return metrics


def _footer(rack: Rack, figures: dict[str, Any], y: int, width: int) -> tuple[list[dict[str, Any]], int]:
    lines = []
    for metric in rack_metrics(rack, figures):
        share = metric.share
        filled = BAR_W if share is None else round(min(share, 1.0) * BAR_W, 1)
        lines.append({"x": MARGIN, "y": y, "text": fit(metric.text(), width - 3 * MARGIN - BAR_W, 5.6),
                      "bar": {"x": width - MARGIN - BAR_W, "y": y - 8, "w": BAR_W, "fill_w": filled,
                              "colour": metric.bar_colour()}})
        y += FOOTER_LINE
    reserved = sum(1 for slot in rack.used if slot is not None and slot.startswith("reserved:"))
    lines.append({"x": MARGIN, "y": y, "text": f"Space: {figures['u_used']} of {figures['u_total']} U used by "
                  f"devices, {reserved} U reserved, {rack.free_units()} U free", "bar": None})
    return lines, y + FOOTER_LINE


def _legend(roles: list[str], has_reserved: bool, y: int, width: int) -> tuple[list[dict[str, Any]], int]:
    items = [(legend_label(r), colour(r), False) for r in roles]
    if has_reserved:
        items.append(("reserved", RESERVED_FILL, True))
    items.append(("empty", "#ffffff", False))
    columns = 3
    col_w = (width - 2 * MARGIN) // columns
    out = []
    for i, (label, fill, hatched) in enumerate(items):
        row, col = divmod(i, columns)
        x, line_y = MARGIN + col * col_w, y + row * LEGEND_ROW
        out.append({"x": x, "y": line_y, "swatch_y": line_y - 9, "text_x": x + 19, "fill": fill, "hatched": hatched,
                    "text": label})
    rows = (len(items) + columns - 1) // columns
    return out, y + rows * LEGEND_ROW


# --- one rack ---------------------------------------------------------------------------------------
def rack_model(ctx: RenderContext, rack: Rack, figures: dict[str, Any], placed: list[Device]) -> dict[str, Any]:
    """Everything the SVG template prints for `rack` holding the devices `placed`, unescaped."""
    rack_u = rack.rack_type.u_height
    width = MARGIN + 2 * (GUTTER + FACE_W) + MARGIN
    fronts = [MARGIN + GUTTER, MARGIN + 2 * GUTTER + FACE_W]
    bottom = TOP + rack_u * U_PX
    faces = []
    for label, x in zip(("FRONT", "REAR"), fronts, strict=True):
        faces.append({"label": label, "x": x, "y": TOP, "w": FACE_W, "h": rack_u * U_PX, "right": x + FACE_W,
                      "label_x": x + FACE_W // 2, "label_y": TOP - 8,
                      "numbers": [{"x": x - 4, "y": u_top(rack_u, u, 1) + U_PX / 2 + 3.5, "text": str(u)}
                                  for u in range(1, rack_u + 1)],
                      "rules": [u_top(rack_u, u, 1) for u in range(1, rack_u)]})
    blocks: list[dict[str, Any]] = []
    devices = sorted((d for d in placed if d.u is not None), key=lambda d: (d.u or 0, d.name))
    for device in devices:
        entry = ctx.valid.catalog.entries.get(device.model)
        blocks += _device_blocks(rack, device, entry if isinstance(entry, CatalogDevice) else None, fronts)
    reserved = []
    for u, height, purpose in _reserved_spans(rack):
        y = u_top(rack_u, u, height)
        for face, x in zip(("front", "rear"), fronts, strict=True):
            reserved.append({"face": face, "x": x, "y": y, "w": FACE_W, "h": height * U_PX, "u": u, "height": height,
                             "title": f"reserved U{u}" + (f"-U{u + height - 1}" if height > 1 else "") + f": {purpose}",
                             "lines": _block_lines(x, y, height * U_PX, _reserved_texts(purpose, height))})
    roles = sorted({d.role for d in devices}, key=lambda r: (list(ROLE_COLOURS).index(r) if r in ROLE_COLOURS
                                                              else len(ROLE_COLOURS), r))
    footer, y = _footer(rack, figures, bottom + 28, width)
    legend, y = _legend(roles, bool(reserved), y + 4, width)
    rack_type = rack.rack_type
    return {
        "rack": rack.name, "hatch_id": f"hatch-{rack.name}", "width": width, "height": y + MARGIN,
        "title": f"Rack {rack.name}",
        "subtitle": fit(f"row {rack.row}, position {rack.position + 1} · {rack.type_key} · {rack_type.name}",
                        width - 2 * MARGIN, 5.4),
        "faces": faces, "blocks": blocks, "reserved": reserved, "footer": footer, "legend": legend,
    }


def ordered_racks(ctx: RenderContext) -> list[Rack]:
    return sorted(ctx.topo.racks.values(), key=lambda r: (r.row_index, r.position, r.name))


def rack_svgs(ctx: RenderContext) -> dict[str, Markup]:
    """The <svg> element of every rack (no XML declaration, so it can be inlined in HTML), floor order."""
    racks = power_plan(ctx.valid, ctx.topo)["racks"]
    placed: dict[str, list[Device]] = defaultdict(list)
    for device in ctx.topo.devices.values():
        if device.rack is not None:
            placed[device.rack].append(device)
    return {rack.name: Markup(ctx.render("handoff/elevation.svg.j2", escaped(
                rack_model(ctx, rack, racks[rack.name], placed[rack.name]), xml_text)).strip())
            for rack in ordered_racks(ctx)}


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
    return {"severity": finding.severity.value, "code": finding.code, "message": finding.message,
            "hint": finding.hint or "", "suppressed": finding.suppressed_by or "",
            "where": finding_where(ctx, finding)}


def rack_findings(ctx: RenderContext) -> tuple[dict[str, list[Finding]], list[Finding]]:
    """Findings by rack (about the rack itself, or a device placed in it), and the others."""
    by_rack: dict[str, list[Finding]] = {name: [] for name in ctx.topo.racks}
    other = []
    for finding in ctx.findings:
        subject = finding.subject
        device = ctx.topo.devices.get(subject) if subject else None
        rack = subject if subject in by_rack else (device.rack if device is not None else None)
        if rack is not None and rack in by_rack:
            by_rack[rack].append(finding)
        else:
            other.append(finding)
    return by_rack, other


def legend_model() -> list[dict[str, Any]]:
    return ([{"text": legend_label(role), "fill": fill, "hatched": False} for role, fill in ROLE_COLOURS.items()]
            + [{"text": "other equipment", "fill": OTHER_COLOUR, "hatched": False},
               {"text": "reserved", "fill": RESERVED_FILL, "hatched": True}])


def rows_model(ctx: RenderContext, svgs: dict[str, Markup]) -> list[dict[str, Any]]:
    """Racks by row in floor order, each with its SVG and its findings (for index.html and report.html)."""
    by_rack, _ = rack_findings(ctx)
    rows: list[dict[str, Any]] = []
    for rack in ordered_racks(ctx):
        if not rows or rows[-1]["name"] != rack.row:
            rows.append({"name": rack.row, "racks": []})
        rows[-1]["racks"].append({"name": rack.name, "svg": svgs[rack.name],
                                  "findings": [finding_item(ctx, f) for f in by_rack[rack.name]]})
    return rows


def render_elevation(ctx: RenderContext) -> dict[str, str]:
    svgs = rack_svgs(ctx)
    _, other = rack_findings(ctx)
    files = {f"{ELEVATIONS_DIR}/{name}.svg": f'<?xml version="1.0" encoding="UTF-8"?>\n{svg}\n'
             for name, svg in svgs.items()}
    bp = ctx.valid.blueprint
    page = {"title": f"{bp.name}: rack elevations", "site": bp.site.name, "description": bp.description,
            "rows": rows_model(ctx, svgs), "other_findings": [finding_item(ctx, f) for f in other],
            "legend": legend_model()}
    files[f"{ELEVATIONS_DIR}/index.html"] = ctx.render("handoff/index.html.j2", escaped(page, xml_text))
    return files
