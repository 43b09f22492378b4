"""Breakouts the switch OS accepts: every split cage follows the model's breakout table (catalog
`breakout_modes`, from the Cumulus Linux user guide), and no cable lands on a cage the table disables."""

from __future__ import annotations

from collections.abc import Iterator

from .. import codes
from ..catalog.models import Switch
from ..errors import Finding, Severity
from ..expand.breakouts import SUB_PORT, breakouts
from .context import CheckContext


def check_breakouts(ctx: CheckContext) -> Iterator[Finding]:
    for device in ctx.topo.devices.values():
        if device.kind != "switch":
            continue
        switch = ctx.valid.catalog.get(device.model, Switch)
        if switch is None or not any(g.breakout_modes for g in switch.ports):
            continue
        ports = [
            (link.b_port if link.b == device.name else link.a_port, link.speed_gbps)
            for link in ctx.topo.links_of(device.name)
            if link.tier not in ("oob", "mgmt")
        ]
        split = breakouts(ctx.valid.catalog, device.model, ports)
        cabled = {name for name, _ in ports} | {m.group(1) for name, _ in ports if (m := SUB_PORT.fullmatch(name))}
        for cage, (mode, allowed) in sorted(split.items()):
            problem = None
            if not allowed:
                problem = f"{cage} splits {mode}, which its breakout table does not allow there"
            elif mode == "disabled" and cage in cabled:
                problem = f"{cage} is cabled, but its breakout table disables it (its neighbour is split)"
            if problem:
                yield ctx.finding(
                    codes.BREAKOUT_NOT_ALLOWED,
                    Severity.ERROR,
                    f"{device.name} ({device.model}): {problem}",
                    ("fabrics", device.group or ""),
                    device.name,
                )
