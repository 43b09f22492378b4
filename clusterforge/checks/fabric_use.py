"""What an architect questions in a leaf/spine fabric: switches bought but mostly idle, leaves with more
uplink than downlink bandwidth, and fabrics that are several disjoint planes."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from ..expand.topology import TIERS
from .context import CheckContext


def check_idle_switches(ctx: CheckContext) -> Iterator[Finding]:
    """Switches that use under half of their data ports (by the one booking rule of `booked_ports`)."""
    booked = ctx.booked
    for name, summary in ctx.topo.fabrics.items():
        if summary.tiers < 2:
            continue  # one switch: nothing bought beyond the minimum but the model itself
        for tier in TIERS:
            idle = []
            for switch in ctx.topo.switches(name, tier):
                used = sum(u for u, _ in booked.get(switch.name, {}).values())
                total = sum(t for _, t in booked.get(switch.name, {}).values())
                if total and used < total / 2:
                    idle.append((used, total, switch.name))
            if idle:
                used, total, worst = min(idle)
                yield ctx.finding(
                    codes.SWITCHES_MOSTLY_IDLE,
                    Severity.WARNING,
                    f"fabric '{name}': {len(idle)} {tier} switch"
                    f"{'es use' if len(idle) != 1 else ' uses'} under half of their ports, "
                    f"{worst} {used:g} of {total}",
                    ("fabrics", name),
                    name,
                )


def check_leaf_up_over_down(ctx: CheckContext) -> Iterator[Finding]:
    """Leaves with more uplink than downlink capacity: expected where a scalable unit is partly filled
    and uplinks are sized as planned, so it is a note, not a warning."""
    down: dict[str, float] = defaultdict(float)
    up: dict[str, float] = defaultdict(float)
    for link in ctx.topo.links:
        if link.tier == "node-leaf":
            down[link.b] += link.speed_gbps
        elif link.tier == "leaf-spine":
            up[link.a] += link.speed_gbps
    for name, summary in ctx.topo.fabrics.items():
        over = [
            (down[s.name] / up[s.name], s.name)
            for s in ctx.topo.switches(name, "leaf")
            if up[s.name] > down[s.name] + 1e-6
        ]
        if over:
            _, worst = min(over)
            why = (
                "uplinks are sized for the planned downlinks, so the fabric grows without recabling"
                if summary.uplinks_for == "planned"
                else "every leaf keeps at least one uplink"
            )
            yield ctx.finding(
                codes.LEAF_UP_OVER_DOWN,
                Severity.INFO,
                f"fabric '{name}': {len(over)} lea{'ves have' if len(over) != 1 else 'f has'} more "
                f"uplink than downlink bandwidth, {worst} {down[worst] / 1000:g} Tb/s down, "
                f"{up[worst] / 1000:g} Tb/s up ({why})",
                ("fabrics", name, "uplinks_for"),
                name,
            )


def check_planes(ctx: CheckContext) -> Iterator[Finding]:
    """A fabric whose switches form several islands: separate subnets, each needing its own manager."""
    for name, summary in ctx.topo.fabrics.items():
        islands = ctx.topo.switch_islands(name) if summary.tiers > 1 else 1
        if islands > 1:
            subnet = (
                "InfiniBand subnets, each with its own subnet manager"
                if summary.technology == "infiniband"
                else "disjoint networks"
            )
            yield ctx.finding(
                codes.SEPARATE_PLANES,
                Severity.INFO,
                f"fabric '{name}' is {islands} separate planes "
                f"({subnet}); traffic between rails crosses inside the nodes",
                ("fabrics", name, "planes"),
                name,
            )
