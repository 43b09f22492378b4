"""One rack's elevation as SVG elements: front and rear faces, U1 at the bottom, its devices, reserved
spans, figures against the rack's limits, and a legend.

The element is written here, in Python, every text in it escaped for XML (and so for HTML, where
report.html inlines it). A cluster of 100,000 GPUs has thousands of racks of a few kinds, so what repeats
is drawn once: the U scale of each rack height, each kind of device but for its name, the footer of each
set of figures, and every escaped text.
"""

from __future__ import annotations

import html
import re
import textwrap
from dataclasses import dataclass
from itertools import repeat
from string import Formatter
from typing import cast

from ...catalog import Catalog
from ...catalog.models import Device as CatalogDevice
from ...expand.topology import Device, Rack
from ...plan import RackPlan
from ..escape import Escaped

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
WIDTH = MARGIN + 2 * (GUTTER + FACE_W) + MARGIN
FACES = (("front", MARGIN + GUTTER), ("rear", MARGIN + 2 * GUTTER + FACE_W))
"""Each face and the x of its left edge."""
BOLD = ' font-weight="bold"'
"""The device name, first line of a block, stands out."""
SLOT = HATCH = "\x00"
"""Stands for a rack's own text (its hatch pattern id, its name, a device's name) in drawings that racks
share: no escaped text holds a NUL."""
NAME_ROOM = max(int((FACE_W - 12) / CHAR_PX), 2)
"""Characters of a device name that fit its line uncut (see `fit`)."""

# --- colours: fill by role (light, so black text stays readable in print) ------------------------
ROLE_COLOURS: dict[str, str] = {
    "compute": "#9ecae1",
    "login": "#b3de69",
    "storage": "#d9b38c",
    "management": "#bebada",
    "subnet-manager": "#9e9ac8",
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
    "compute": "compute node",
    "login": "login node",
    "storage": "storage node",
    "management": "management node",
    "subnet-manager": "subnet manager",
    "leaf": "leaf switch",
    "spine": "spine switch",
    "core": "core switch",
    "oob": "out-of-band switch",
    "nvswitch": "NVLink switch tray",
    "power-shelf": "power shelf",
    "patch-panel": "patch panel",
}
BAR_OK, BAR_HIGH, BAR_OVER = "#4caf50", "#f0ad4e", "#d9534f"

_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def xml_escape(text: str) -> str:
    """`text` escaped for XML and HTML (also inside attribute values); characters XML 1.0 forbids become U+FFFD."""
    return html.escape(_XML_INVALID.sub("\ufffd", text), quote=True)


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


# --- texts ------------------------------------------------------------------------------------------
def rear_texts(entry: CatalogDevice | None) -> list[str]:
    """What the rear face shows: the port groups (the cabled side), then the PSUs."""
    if entry is None:
        return []
    texts = [f"{g.name}: {g.count}×{num(g.speed_gbps)}G {g.cage}" for g in entry.ports]
    if entry.psus:
        psus = entry.psus
        texts.append(f"PSU {psus.count}×{num(psus.rating_w / 1000)} kW ({psus.redundancy})")
    return texts


def block_lines(x: int, y: int, h: int, texts: list[str]) -> list[tuple[int, float, str]]:
    """(x, y, text) of the text lines centred in a block, as many as fit its height; the first is the
    device name."""
    room = max(1, (h - 2) // LINE)
    if len(texts) > room:  # what does not fit on its own line shares the last one
        texts = [*texts[: room - 1], " · ".join(texts[room - 1 :])]
    first = y + h / 2 - (len(texts) - 1) * LINE / 2 + 3.5
    return [(x + 6, round(first + i * LINE, 1), fit(t, FACE_W - 12)) for i, t in enumerate(texts)]


def reserved_spans(rack: Rack) -> list[tuple[int, int, str]]:
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


def reserved_texts(purpose: str, height: int) -> list[str]:
    """'reserved: <purpose>' on one U; over more, 'reserved' above the purpose wrapped to the face width."""
    if height == 1:
        return [f"reserved: {purpose}"]
    return ["reserved", *textwrap.wrap(purpose, int((FACE_W - 12) / CHAR_PX))[: height * U_PX // LINE - 2]]


def _span(u: int, height: int) -> str:
    return f"U{u}" if height == 1 else f"U{u}-U{u + height - 1}"


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


def rack_metrics(rack: Rack, figures: RackPlan) -> list[Metric]:
    cooling = rack.rack_type.cooling
    air = "rear-door air" if cooling.method == "rear-door" else "air"
    metrics = [
        Metric("Power", figures.power_kw, figures.usable_power_kw, "kW usable feed power"),
        Metric(
            f"Heat to {air}",
            figures.air_kw,
            cooling.air_kw,
            "kW",
            f"; total heat {num(figures.heat_kw)} kW = {figures.heat_btu_h:,} BTU/h",
        ),
    ]
    if cooling.liquid_kw or figures.liquid_kw:
        metrics.append(Metric("Heat to liquid", figures.liquid_kw, cooling.liquid_kw, "kW"))
    metrics.append(
        Metric(
            "Weight",
            figures.weight_kg,
            rack.rack_type.max_load_kg,
            "kg max load",
            f"; empty rack {num(rack.rack_type.weight_kg)} kg",
        )
    )
    return metrics


# --- the drawing ----------------------------------------------------------------------------------
SVG_OPEN = (
    '<svg xmlns="http://www.w3.org/2000/svg" class="elevation" data-rack="{rack}" width="{width}" '
    'height="{height}" viewBox="0 0 {width} {height}" font-family="DejaVu Sans, Liberation Sans, Arial, '
    'Helvetica, sans-serif" role="img">\n'
    "  <title>{title}</title>\n"
    "  <defs>\n"
    '    <pattern id="{hatch_id}" width="8" height="8" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)">\n'
    '      <rect width="8" height="8" fill="#eeeeee"/>\n'
    '      <line x1="0" y1="0" x2="0" y2="8" stroke="#9e9e9e" stroke-width="2"/>\n'
    "    </pattern>\n"
    "  </defs>\n"
    '  <rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>\n'
    '  <text x="12" y="22" font-size="16" font-weight="bold" fill="#111111">{title}</text>\n'
    '  <text x="12" y="40" font-size="10" fill="#444444">{subtitle}</text>\n'
)
"""The start of a rack's <svg> element, up to its drawing; every field escaped."""
RACK_FIELDS = tuple(name for _, name, _, _ in Formatter().parse(SVG_OPEN) if name not in (None, "width", "height"))
"""The rack's own texts in SVG_OPEN, in the order they stand."""
XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
FOOTER_OPEN = '  <g class="footer" font-size="10" fill="#111111">\n'
LEGEND_OPEN = '  </g>\n  <g class="legend" font-size="9" fill="#111111">\n'
SVG_CLOSE = "  </g>\n</svg>"


@dataclass(frozen=True)
class DeviceShape:
    """A device's drawing on one face, but for its name: the same for every device alike in model, role,
    group, position and rack height. Drawn, it is open + name + title + name + body + first line + close."""

    open: str
    title: str
    body: str
    """From the end of the title to the start of the first text line, the device name's line."""
    name_suffix: str
    """What follows the name on its line, when the block has room for one line only."""
    close: str

    def first_line(self, name: str, escaped_name: str, escape: Escaped) -> str:
        """The text of the device name's line: the name, with what follows it when the block has one line."""
        if not self.name_suffix and len(name) <= NAME_ROOM:
            return escaped_name
        return escape[fit(name + self.name_suffix, FACE_W - 12)]


@dataclass(frozen=True)
class RackKind:
    """The drawing of every rack alike (height, devices by model, role, group and U, reserved spans, figures)
    but for the rack's own texts: `pieces` holds None where the rack's name, title, hatch id or subtitle, or
    a device's name, goes (RACK_FIELDS, then the hatch id in each reserved span, then each device's front and
    rear, then the hatch id in the legend)."""

    pieces: list[str | None]
    reserved_hatches: int
    shapes: tuple[tuple[DeviceShape, DeviceShape], ...]
    """Each device's front and rear, in the rack's device order."""
    legend_hatches: int


class RackDrawer:
    """Draws racks: `svg(rack, ...)` is the <svg> element of one rack, every text in it escaped. Keeps what
    racks share (U scales, device shapes, footers, escaped texts) for the next rack."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.text = Escaped(xml_escape)
        self._scales: dict[int, str] = {}
        self._shapes: dict[tuple[object, ...], tuple[DeviceShape, DeviceShape]] = {}
        self._footers: dict[tuple[object, ...], tuple[str, int]] = {}
        self._reserved_spans: dict[tuple[int, tuple[tuple[int, int, str], ...]], str] = {}
        self._legends: dict[tuple[tuple[str, ...], bool, int], tuple[str, int]] = {}
        self._kinds: dict[tuple[object, ...], RackKind] = {}

    def svg(self, rack: Rack, figures: RackPlan, placed: list[Device]) -> str:
        """The <svg> element of `rack` holding the devices `placed` (no XML declaration)."""
        return self.file(rack, figures, placed)[len(XML_DECLARATION) : -1]

    def file(self, rack: Rack, figures: RackPlan, placed: list[Device]) -> str:
        """The SVG file of `rack` holding the devices `placed`: the XML declaration, the <svg> element and a
        newline. Drawn from the rack's kind (see RackKind) and the rack's own texts."""
        text = self.text
        devices = sorted((d for d in placed if d.u is not None), key=lambda d: (d.u or 0, d.name))
        kind = self._kind(rack, figures, devices)
        hatch_id = text[f"hatch-{rack.name}"]
        subtitle = f"row {rack.row}, position {rack.position + 1} · {rack.type_key} · {rack.rack_type.name}"
        own = {
            "rack": text[rack.name],
            "title": text[f"Rack {rack.name}"],
            "hatch_id": hatch_id,
            "subtitle": text[fit(subtitle, WIDTH - 2 * MARGIN, 5.4)],
        }
        values = [own[name] for name in RACK_FIELDS]
        values += repeat(hatch_id, kind.reserved_hatches)
        for device, (front, rear) in zip(devices, kind.shapes, strict=True):
            name = text[device.name]
            values += (name, name, front.first_line(device.name, name, text))
            values += (name, name, rear.first_line(device.name, name, text))
        values += repeat(hatch_id, kind.legend_hatches)
        pieces = kind.pieces.copy()
        pieces[1::2] = values
        return "".join(cast(list[str], pieces))

    def _kind(self, rack: Rack, figures: RackPlan, devices: list[Device]) -> RackKind:
        rack_u = rack.rack_type.u_height
        spans = tuple(reserved_spans(rack))
        shapes = tuple(self._shape(rack_u, device) for device in devices)
        key = (rack_u, spans, rack.type_key, rack.free_units(), figures, tuple(map(id, shapes)))
        if key not in self._kinds:
            self._kinds[key] = self._draw_kind(rack, figures, spans, devices, shapes)
        return self._kinds[key]

    def _draw_kind(
        self,
        rack: Rack,
        figures: RackPlan,
        spans: tuple[tuple[int, int, str], ...],
        devices: list[Device],
        shapes: tuple[tuple[DeviceShape, DeviceShape], ...],
    ) -> RackKind:
        """The drawing of racks like `rack`, SLOT where a rack's own texts go, cut at the slots."""
        rack_u = rack.rack_type.u_height
        reserved = self._reserved(rack_u, spans)
        footer, y = self._footer(rack, figures, TOP + rack_u * U_PX + 28)
        roles = sorted(
            {d.role for d in devices},
            key=lambda r: (list(ROLE_COLOURS).index(r) if r in ROLE_COLOURS else len(ROLE_COLOURS), r),
        )
        legend, y = self._legend(tuple(roles), bool(reserved), y + 4)
        slots = dict.fromkeys(RACK_FIELDS, SLOT)
        head = SVG_OPEN.format(width=WIDTH, height=y + MARGIN, **slots)
        blocks = [f"{s.open}{SLOT}{s.title}{SLOT}{s.body}{SLOT}{s.close}" for pair in shapes for s in pair]
        drawing = [XML_DECLARATION, head, self._scale(rack_u), reserved, *blocks]
        drawing += [FOOTER_OPEN, footer, LEGEND_OPEN, legend, SVG_CLOSE, "\n"]
        constants = "".join(drawing).split(SLOT)
        pieces: list[str | None] = [None] * (2 * len(constants) - 1)
        pieces[::2] = constants
        return RackKind(pieces, reserved.count(HATCH), shapes, legend.count(HATCH))

    def _scale(self, rack_u: int) -> str:
        """Both faces with their U rules and numbers: the same for every rack of a height."""
        if rack_u not in self._scales:
            lines = []
            for face, x in FACES:
                lines += [
                    f'  <g class="face" data-face="{face}">',
                    f'    <text x="{x + FACE_W // 2}" y="{TOP - 8}" font-size="10" font-weight="bold" '
                    f'text-anchor="middle" fill="#444444">{face.upper()}</text>',
                    f'    <rect x="{x}" y="{TOP}" width="{FACE_W}" height="{rack_u * U_PX}" fill="#ffffff" '
                    'stroke="#444444" stroke-width="1.5"/>',
                ]
                lines += [
                    f'    <line x1="{x}" y1="{u_top(rack_u, u, 1)}" x2="{x + FACE_W}" y2="{u_top(rack_u, u, 1)}" '
                    'stroke="#e3e3e3" stroke-width="0.5"/>'
                    for u in range(1, rack_u)
                ]
                lines += [
                    f'    <text x="{x - 4}" y="{u_top(rack_u, u, 1) + U_PX / 2 + 3.5}" font-size="8" '
                    f'text-anchor="end" fill="#666666">{u}</text>'
                    for u in range(1, rack_u + 1)
                ]
                lines.append("  </g>")
            self._scales[rack_u] = "".join(f"{line}\n" for line in lines)
        return self._scales[rack_u]

    def _reserved(self, rack_u: int, spans: tuple[tuple[int, int, str], ...]) -> str:
        """The reserved spans on both faces, hatched with the rack's own pattern (HATCH stands for its id)."""
        if (rack_u, spans) not in self._reserved_spans:
            lines = []
            for u, height, purpose in spans:
                y, h = u_top(rack_u, u, height), height * U_PX
                title = self.text[f"reserved {_span(u, height)}: {purpose}"]
                for face, x in FACES:
                    lines += [
                        f'  <g class="reserved" data-face="{face}" data-u="{u}" data-height="{height}">',
                        f"    <title>{title}</title>",
                        f'    <rect x="{x}" y="{y}" width="{FACE_W}" height="{h}" fill="url(#{HATCH})" '
                        'stroke="#9e9e9e" stroke-width="1"/>',
                    ]
                    lines += [
                        f'    <text x="{tx}" y="{ty}" font-size="10" font-style="italic" fill="#333333">'
                        f"{self.text[t]}</text>"
                        for tx, ty, t in block_lines(x, y, h, reserved_texts(purpose, height))
                    ]
                    lines.append("  </g>")
            self._reserved_spans[(rack_u, spans)] = "".join(f"{line}\n" for line in lines)
        return self._reserved_spans[(rack_u, spans)]

    def _shape(self, rack_u: int, device: Device) -> tuple[DeviceShape, DeviceShape]:
        key = (device.model, device.role, device.group, device.kind, device.u, device.u_height, rack_u)
        if key not in self._shapes:
            self._shapes[key] = self._draw_shape(rack_u, device)
        return self._shapes[key]

    def _draw_shape(self, rack_u: int, device: Device) -> tuple[DeviceShape, DeviceShape]:
        """The front and rear of `device`, drawn for any device alike (see DeviceShape)."""
        assert device.u is not None
        text = self.text
        entry = self.catalog.entries.get(device.model)
        catalog_entry = entry if isinstance(entry, CatalogDevice) else None
        y, h = u_top(rack_u, device.u, device.u_height), device.u_height * U_PX
        front = [device.model] + ([catalog_entry.name] if catalog_entry is not None else [])
        if device.group:
            front.append(f"{device.role} · {'fabric' if device.kind == 'switch' else 'group'} {device.group}")
        rear = rear_texts(catalog_entry) or [legend_label(device.role)]
        room = max(1, (h - 2) // LINE)
        shapes = []
        for (face, x), rest in zip(FACES, (front, rear), strict=True):
            # the lines as block_lines lays them out; the first, the name's, is drawn per device
            lines = block_lines(x, y, h, ["", *rest])
            name_x, name_y, _ = lines[0]
            others = "".join(
                f'\n    <text x="{tx}" y="{ty}" font-size="10" fill="#111111">{text[t]}</text>'
                for tx, ty, t in lines[1:]
            )
            shapes.append(
                DeviceShape(
                    open=f'  <g class="device role-{text[device.role]}" data-device="',
                    title=f'" data-face="{face}" data-u="{device.u}" data-height="{device.u_height}">\n    <title>',
                    body=(
                        f"{text[f': {device.model}, {device.role}, {_span(device.u, device.u_height)}']}</title>\n"
                        f'    <rect x="{x}" y="{y}" width="{FACE_W}" height="{h}" fill="{text[colour(device.role)]}" '
                        f'stroke="#333333" stroke-width="1"/>\n'
                        f'    <text x="{name_x}" y="{name_y}" font-size="10"{BOLD} fill="#111111">'
                    ),
                    name_suffix="".join(f" · {t}" for t in rest) if room == 1 and rest else "",
                    close=f"</text>{others}\n  </g>\n",
                )
            )
        return shapes[0], shapes[1]

    def _footer(self, rack: Rack, figures: RackPlan, y: int) -> tuple[str, int]:
        """The rack's figures with bars against its limits, then its space: the same for racks alike."""
        reserved = sum(1 for slot in rack.used if slot is not None and slot.startswith("reserved:"))
        key = (rack.type_key, reserved, rack.free_units(), y, figures)
        if key not in self._footers:
            lines = []
            for metric in rack_metrics(rack, figures):
                share = metric.share
                filled = BAR_W if share is None else round(min(share, 1.0) * BAR_W, 1)
                bar_x = WIDTH - MARGIN - BAR_W
                lines += [
                    f'    <text x="{MARGIN}" y="{y}">'
                    f"{self.text[fit(metric.text(), WIDTH - 3 * MARGIN - BAR_W, 5.6)]}</text>",
                    f'    <rect x="{bar_x}" y="{y - 8}" width="{BAR_W}" height="9" fill="#f2f2f2" '
                    'stroke="#999999" stroke-width="0.5"/>',
                    f'    <rect x="{bar_x}" y="{y - 8}" width="{filled}" height="9" fill="{metric.bar_colour()}"/>',
                ]
                y += FOOTER_LINE
            space = (
                f"Space: {figures.u_used} of {figures.u_total} U used by devices, {reserved} U reserved, "
                f"{rack.free_units()} U free"
            )
            lines.append(f'    <text x="{MARGIN}" y="{y}">{self.text[space]}</text>')
            self._footers[key] = ("".join(f"{line}\n" for line in lines), y + FOOTER_LINE)
        return self._footers[key]

    def _legend(self, roles: tuple[str, ...], has_reserved: bool, y: int) -> tuple[str, int]:
        """The roles in the rack, then reserved (hatched: HATCH stands for the pattern's id) and empty."""
        key = (roles, has_reserved, y)
        if key not in self._legends:
            items = [(legend_label(r), self.text[colour(r)]) for r in roles]  # (label, escaped fill)
            if has_reserved:
                items.append(("reserved", f"url(#{HATCH})"))
            items.append(("empty", "#ffffff"))
            columns = 3
            col_w = (WIDTH - 2 * MARGIN) // columns
            lines = []
            for i, (label, fill) in enumerate(items):
                row, col = divmod(i, columns)
                x, line_y = MARGIN + col * col_w, y + row * LEGEND_ROW
                lines += [
                    f'    <rect x="{x}" y="{line_y - 9}" width="14" height="10" fill="{fill}" '
                    'stroke="#555555" stroke-width="0.5"/>',
                    f'    <text x="{x + 19}" y="{line_y}">{self.text[label]}</text>',
                ]
            rows = (len(items) + columns - 1) // columns
            self._legends[key] = ("".join(f"{line}\n" for line in lines), y + rows * LEGEND_ROW)
        return self._legends[key]
