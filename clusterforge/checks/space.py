"""Rack space: devices inside the rack, not overlapping, reserved U kept free."""

from __future__ import annotations

from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from .context import CheckContext


def check_space(ctx: CheckContext) -> Iterator[Finding]:
    for name, fig in ctx.figures.items():
        rack_type = fig.rack.rack_type
        reserved = {u for r in rack_type.reserved for u in range(r.u, r.u + r.height)}
        owner: dict[int, str] = {}
        for device in fig.devices:
            assert device.u is not None
            span = range(device.u, device.u + device.u_height)
            if span.start < 1 or span.stop - 1 > rack_type.u_height:
                yield ctx.finding(
                    codes.OUTSIDE_RACK,
                    Severity.ERROR,
                    f"{device.name} at U{device.u} "
                    f"({device.u_height}U) is outside the {rack_type.u_height}U rack {name}",
                    ctx.rack_path(name),
                    name,
                )
            for u in span:
                if u in owner:
                    yield ctx.finding(
                        codes.OVERLAPPING_DEVICES,
                        Severity.ERROR,
                        f"{device.name} and {owner[u]} both occupy U{u} of rack {name}",
                        ctx.rack_path(name),
                        name,
                    )
                    break
                owner[u] = device.name
            taken = sorted(reserved.intersection(span))
            if taken:
                yield ctx.finding(
                    codes.IN_RESERVED_U,
                    Severity.ERROR,
                    f"{device.name} occupies reserved U{taken[0]} of rack {name}",
                    ctx.rack_path(name),
                    name,
                )
