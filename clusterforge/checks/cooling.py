"""Cooling: heat to air and to liquid per rack, liquid per row (CDU), and heat per hall."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from .context import CheckContext


def check_rack_cooling(ctx: CheckContext) -> Iterator[Finding]:
    for name, fig in ctx.figures.items():
        cooling = fig.rack.rack_type.cooling
        path = ctx.rack_path(name)
        if fig.air_kw > cooling.air_kw + 1e-9:
            what = "its rear-door heat exchanger" if cooling.method == "rear-door" else "air"
            yield ctx.finding(
                codes.RACK_AIR_OVER,
                Severity.ERROR,
                f"rack {name} rejects {fig.air_kw:.1f} kW to air, more than the {cooling.air_kw:g} kW {what} can take",
                path,
                name,
                "fewer nodes per rack, a rear-door or liquid-cooled rack type",
            )
        if fig.liquid_kw > 0 and cooling.liquid_kw <= 0:
            yield ctx.finding(
                codes.LIQUID_WITHOUT_LOOP,
                Severity.ERROR,
                f"rack {name} holds liquid-cooled devices ({fig.liquid_kw:.1f} kW to coolant) but has no coolant loop",
                path,
                name,
                "place liquid-cooled models in a liquid-cooled rack type",
            )
        elif fig.liquid_kw > cooling.liquid_kw + 1e-9:
            yield ctx.finding(
                codes.RACK_LIQUID_OVER,
                Severity.ERROR,
                f"rack {name} sends {fig.liquid_kw:.1f} kW to coolant, more than its {cooling.liquid_kw:g} kW loop",
                path,
                name,
            )


def check_row_and_hall_cooling(ctx: CheckContext) -> Iterator[Finding]:
    bp = ctx.valid.blueprint
    liquid: dict[str, float] = defaultdict(float)
    for fig in ctx.figures.values():
        liquid[fig.rack.row] += fig.liquid_kw
    for i, row in enumerate(bp.floor.rows):
        if row.cdu_kw is not None and liquid[row.name] > row.cdu_kw + 1e-9:
            yield ctx.finding(
                codes.ROW_CDU_OVER,
                Severity.ERROR,
                f"row {row.name} sends {liquid[row.name]:.1f} kW to coolant, more than its {row.cdu_kw:g} kW CDU",
                ("floor", "rows", i, "cdu_kw"),
                row.name,
            )
    total = sum(fig.heat_kw for fig in ctx.figures.values())
    if bp.site.hall_cooling_kw is not None and total > bp.site.hall_cooling_kw + 1e-9:
        yield ctx.finding(
            codes.HALL_COOLING_OVER,
            Severity.ERROR,
            f"the hall takes {total:.1f} kW of heat, more than its {bp.site.hall_cooling_kw:g} kW of cooling",
            ("site", "hall_cooling_kw"),
            "site",
        )
