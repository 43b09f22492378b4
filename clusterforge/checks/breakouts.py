"""Breakouts the switch OS accepts: every split cage follows the model's breakout table (catalog
`breakout_modes`, from the Cumulus Linux user guide), and no cable lands on a cage the table disables."""

from __future__ import annotations

from collections.abc import Iterator

from .. import codes
from ..catalog.models import Switch
from ..errors import Finding, Severity
from ..expand.breakouts import SUB_PORT, breakouts
from ..expand.topology import Device, Topology
from .context import CheckContext


def check_breakouts(ctx: CheckContext) -> Iterator[Finding]:
    tabled = {name for name, device in ctx.topo.devices.items() if device.kind == "switch" and _has_table(ctx, device)}
    candidates = _with_sub_ports(ctx.topo, tabled)
    for device in ctx.topo.devices.values():
        if device.name not in candidates:
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


def _has_table(ctx: CheckContext, device: Device) -> bool:
    switch = ctx.valid.catalog.get(device.model, Switch)
    return switch is not None and any(g.breakout_modes for g in switch.ports)


def _with_sub_ports(topo: Topology, switches: set[str]) -> set[str]:
    """The switches among `switches` with a sub-port ('swp1s0') on a data link: only their cages can be split.
    One pass over the links finds them, where `links_of` per switch would build the adjacency map of every
    link, 0.5 GiB at a million GPUs that the checking process built for this check alone (on InfiniBand
    fabrics, which split no cage)."""
    data = [link for link in topo.links if link.tier not in ("oob", "mgmt")]
    names = {link.a_port for link in data} | {link.b_port for link in data}
    sub_ports = {name for name in names if SUB_PORT.fullmatch(name)}
    if not sub_ports:
        return set()
    return {link.a for link in data if link.a_port in sub_ports and link.a in switches} | {
        link.b for link in data if link.b_port in sub_ports and link.b in switches
    }
