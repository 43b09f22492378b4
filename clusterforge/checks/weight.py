"""Rack weight: the devices' weight against the load the rack may carry."""

from __future__ import annotations

from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from .context import CheckContext

WARN_SHARE = 0.9


def check_weight(ctx: CheckContext) -> Iterator[Finding]:
    for name, fig in ctx.figures.items():
        limit = fig.rack.rack_type.max_load_kg
        if fig.weight_kg > limit:
            yield ctx.finding(
                codes.RACK_TOO_HEAVY,
                Severity.ERROR,
                f"rack {name} carries {fig.weight_kg:.0f} kg, more than its {limit:.0f} kg limit",
                ctx.rack_path(name),
                name,
                "spread the heaviest devices over more racks",
            )
        elif fig.weight_kg > WARN_SHARE * limit:
            yield ctx.finding(
                codes.RACK_NEAR_WEIGHT_LIMIT,
                Severity.WARNING,
                f"rack {name} carries {fig.weight_kg:.0f} kg, {fig.weight_kg / limit:.0%} of its {limit:.0f} kg limit",
                ctx.rack_path(name),
                name,
            )
