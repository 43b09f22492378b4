"""The report's single-failure section: the worst failure of each element class (`clusterforge failures`) as a
table, and in the HTML report a floor map per class showing the racks and rack-to-rack links it takes out."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...failures import KIND_TITLES, FailureReport, analyse_failures
from ...failures.effects import Effect
from ...failures.text import effect_lines
from ..context import RenderContext
from .elevation import INLINE_RACKS_MAX
from .rack_drawing import num, xml_escape
from .report_table import table

CELL_W, CELL_H, GAP = 9, 13, 2
"""A rack on the floor map, in px."""
DOWN, HIT, FAILED, IDLE = "#c0392b", "#f39c12", "#7b241c", "#d5d8dc"
FAILURES_MAX_LINKS = 10_000
"""Above this many links the report leaves the analysis to `clusterforge failures`: it costs 0.11 CPU s at
10,000 GPUs (32,530 links) and 1.5 CPU s at 100,000 (320,940), 15% of that render (docs/failures.md); below,
where the render runs in one process (schedule.TWO_LANES_MIN_LINKS), 10-20 ms on the examples."""


def failure_report(ctx: RenderContext) -> FailureReport:
    """The analysis, worked out once per render."""
    return ctx.shared(_analysed)


def _analysed(ctx: RenderContext) -> FailureReport:
    return analyse_failures(ctx.valid, ctx.topo)


def _bisection(effect: Effect) -> str:
    worst = min(effect.fabrics.values(), key=lambda f: f.bisection_left, default=None)
    if worst is None or not worst.bisection_gbps or worst.bisection_left >= 1 - 1e-9:
        return ""
    return f"{worst.fabric} {worst.bisection_left:.1%}"


def failures_section(ctx: RenderContext) -> dict[str, Any]:
    links = len(ctx.topo.links)
    if links > FAILURES_MAX_LINKS:
        return table(
            "Single failures",
            [],
            [],
            intro=f"Not worked out in the render of a cluster of {links:,} links (above {FAILURES_MAX_LINKS:,} it "
            "would add measurably to the render's time): `clusterforge failures BLUEPRINT` gives the worst single "
            "failure of each element class and what it takes.",
        )
    report = failure_report(ctx)
    rows = []
    for result in report.classes:
        worst = result.worst
        assert worst is not None
        rows.append(
            [
                KIND_TITLES[result.kind],
                str(result.elements),
                worst.failure.name,
                str(worst.gpus_lost),
                str(worst.gpus_degraded + worst.gpus_throttled),
                _bisection(worst),
                "; ".join(effect_lines(worst)) or "nothing lost: redundant",
            ]
        )
    classes = [
        "over" if r.worst and (r.worst.gpus_lost or r.worst.racks_down) else "high" if r.over else ""
        for r in report.classes
    ]
    section = table(
        "Single failures",
        ["element class", "elements", "worst failure", "GPUs lost", "GPUs degraded", "bisection left", "what it takes"],
        rows,
        numeric=(1, 3, 4),
        classes=classes,
        intro="The worst single failure of each element class and what it takes (clusterforge failures; the rules "
        "in the repository's docs/failures.md). GPUs lost: nodes down or cut off from a fabric; degraded: a rail, "
        "an NVLink switch tray or PSUs short of the planned draw; bisection: the switch bisection left.",
    )
    if len(ctx.topo.racks) <= INLINE_RACKS_MAX:
        section["chart"] = floor_maps(ctx, report)
    return section


def _rack_states(ctx: RenderContext, effect: Effect) -> dict[str, str]:
    devices = ctx.topo.devices
    states: dict[str, str] = {}
    hit = set(effect.throttled)
    for found in effect.fabrics.values():
        hit |= found.cut_nodes | found.degraded_nodes
    for name in hit:
        rack = devices[name].rack
        if rack:
            states[rack] = HIT
    for name in effect.devices_down:
        rack = devices[name].rack
        if rack:
            states[rack] = DOWN
    return states


def _lost_pairs(ctx: RenderContext, effect: Effect) -> Counter[tuple[str, str]]:
    """Rack pairs and the links between them the failure takes out (cut, or ending on a switch that stops)."""
    topo = ctx.topo
    pairs: Counter[tuple[str, str]] = Counter()
    for name in effect.devices_down:
        if topo.devices[name].kind != "switch":
            continue
        for link in topo.links_of(name):
            a, b = topo.devices[link.a].rack, topo.devices[link.b].rack
            if link.tier != "oob" and a and b and a != b:
                pairs[(min(a, b), max(a, b))] += 1
    for index in effect.failure.links:
        link = topo.links[index]
        a, b = topo.devices[link.a].rack, topo.devices[link.b].rack
        if a and b and a != b:
            pairs[(min(a, b), max(a, b))] += 1
    return pairs


def floor_maps(ctx: RenderContext, report: FailureReport) -> str:
    """One small floor map per element class: racks down red, racks with nodes degraded or cut off orange, the
    failed element's racks outlined, and the rack-to-rack links it takes out as lines."""
    racks = ctx.topo.racks.values()
    columns = max((r.position for r in racks), default=0) + 1
    rows = max((r.row_index for r in racks), default=0) + 1
    scale = 2 if columns <= 12 else 1  # a small floor drawn larger
    cell_w, cell_h, top = CELL_W * scale, CELL_H * scale, 32
    width, height = columns * (cell_w + GAP) + GAP, rows * (cell_h + GAP) + GAP
    maps = []
    for result in report.classes:
        effect = result.worst
        assert effect is not None
        states = _rack_states(ctx, effect)
        outlined = set(effect.failure.racks)
        parts = [
            f'<svg class="failure-map" xmlns="http://www.w3.org/2000/svg" width="{max(width, 190)}" '
            f'height="{height + top + 16}" role="img" aria-label="racks and links {xml_escape(effect.failure.name)} '
            'takes out">',
            f'<text x="0" y="12" font-size="11" font-weight="bold">{xml_escape(KIND_TITLES[result.kind])}</text>',
            f'<text x="0" y="26" font-size="11">{xml_escape(effect.failure.name)}</text>',
        ]
        centre: dict[str, tuple[float, float]] = {}
        for rack in racks:
            x, y = GAP + rack.position * (cell_w + GAP), top + GAP + rack.row_index * (cell_h + GAP)
            centre[rack.name] = (x + cell_w / 2, y + cell_h / 2)
            stroke = f' stroke="{FAILED}" stroke-width="2"' if rack.name in outlined else ""
            parts.append(
                f'<rect x="{x}" y="{y}" width="{cell_w}" height="{cell_h}" fill="{states.get(rack.name, IDLE)}"'
                f"{stroke}><title>{xml_escape(rack.name)}</title></rect>"
            )
        for (a, b), count in sorted(_lost_pairs(ctx, effect).items()):
            (x1, y1), (x2, y2) = centre[a], centre[b]
            parts.append(
                f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{DOWN}" stroke-opacity="0.6" '
                f'stroke-width="{min(1 + count / 16, 4):g}"><title>{xml_escape(a)} to {xml_escape(b)}: {count} '
                "links</title></line>"
            )
        parts.append(
            f'<text x="0" y="{height + top + 12}" font-size="10">{num(effect.gpus_lost)} GPUs lost, '
            f"{num(effect.gpus_degraded + effect.gpus_throttled)} degraded</text></svg>"
        )
        maps.append("".join(parts))
    legend = (
        '<p class="meta">Floor maps, rows top to bottom: red racks lose devices, orange racks have nodes cut off, '
        "degraded or throttled, the failed element's racks are outlined, red lines are the rack-to-rack links "
        "it takes out.</p>"
    )
    return legend + '<div style="display: flex; flex-wrap: wrap; gap: 12px">' + "".join(maps) + "</div>"
