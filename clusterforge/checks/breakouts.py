"""Breakouts the switch OS accepts: every split cage follows the model's breakout table (catalog
`breakout_modes`, from the Cumulus Linux user guide), and no cable lands on a cage the table disables."""

from __future__ import annotations

from collections.abc import Iterator

from .. import codes
from ..catalog.models import Switch
from ..errors import Finding, Severity
from ..render.nvue_model import _SUB_PORT, _ports, breakouts
from .context import CheckContext


def check_breakouts(ctx: CheckContext) -> Iterator[Finding]:
    for device in ctx.topo.devices.values():
        if device.kind != "switch":
            continue
        switch = ctx.valid.catalog.get(device.model, Switch)
        if switch is None or not any(g.breakout_modes for g in switch.ports):
            continue
        ports = _ports(ctx.topo, device.name)
        split = breakouts(ctx.valid.catalog, device.model, ports)
        cabled = {p.name for p in ports} | {m.group(1) for p in ports if (m := _SUB_PORT.fullmatch(p.name))}
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
