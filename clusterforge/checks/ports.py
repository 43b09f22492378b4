"""Ports: no switch over its radix, and node ports left unconnected."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator

from .. import codes
from ..catalog import Server
from ..errors import Finding, Severity
from ..model import OobFabric
from .context import CheckContext

_FABRIC_OF_ROLE = {"compute": "compute", "storage": "storage", "inband": "inband", "oob": "oob"}


def check_switch_radix(ctx: CheckContext) -> Iterator[Finding]:
    """Native ports booked per port group, from the links themselves (independent of the allocator), by
    the booking rule expansion uses."""
    for device_name, groups in sorted(ctx.booked.items()):
        for group_name, (natives, count) in sorted(groups.items()):
            if natives > count + 1e-9:
                fabric = ctx.topo.devices[device_name].group or ""
                yield ctx.finding(
                    codes.SWITCH_OVER_RADIX,
                    Severity.ERROR,
                    f"{device_name} uses {natives:g} of its {count} '{group_name}' ports",
                    ("fabrics", fabric),
                    device_name,
                )


def check_unconnected_ports(ctx: CheckContext) -> Iterator[Finding]:
    bp, catalog = ctx.valid.blueprint, ctx.valid.catalog
    kinds = {"oob" if isinstance(f, OobFabric) else f.kind for f in bp.fabrics.values()}
    a_ports = [link.a_port for link in ctx.topo.links]
    group_of = {port: port.rstrip("0123456789") for port in set(a_ports)}
    connected = Counter(zip([link.a for link in ctx.topo.links], map(group_of.__getitem__, a_ports), strict=True))
    idle: dict[tuple[str, str], int] = defaultdict(int)
    servers: dict[str, Server] = {}
    for node in ctx.topo.nodes():
        if node.model not in servers:
            servers[node.model] = catalog.require(node.model, Server)
        for group in servers[node.model].ports:
            if group.role in _FABRIC_OF_ROLE:
                left = group.count - connected[(node.name, group.name)]
                if left > 0:
                    idle[(node.group or "", group.role)] += left
    for (group_name, role), ports in sorted(idle.items()):
        has_fabric = _FABRIC_OF_ROLE[role] in kinds
        severity = Severity.WARNING if has_fabric and role in ("compute", "oob") else Severity.INFO
        why = (
            f"the group is not attached to the {role} network" if has_fabric else f"the blueprint has no {role} network"
        )
        yield ctx.finding(
            codes.UNCONNECTED_PORTS,
            severity,
            f"node group '{group_name}' leaves {ports} {role} port{'s' if ports != 1 else ''} unconnected: {why}",
            ctx.group_path(group_name),
            group_name,
        )


def check_oversubscription(ctx: CheckContext) -> Iterator[Finding]:
    """Down:up capacity of every switch against the target (leaves) or 1:1 (upper tiers)."""
    down: dict[str, float] = defaultdict(float)
    up: dict[str, float] = defaultdict(float)
    for link in ctx.topo.links:
        if link.tier in ("node-leaf", "leaf-spine", "spine-core"):
            down[link.b] += link.speed_gbps
            up[link.a] += link.speed_gbps
    for name, summary in ctx.topo.fabrics.items():
        for tier in ("leaf", "spine"):
            target = summary.oversubscription_target if tier == "leaf" else 1.0
            over = [
                (down[s.name] / up[s.name], s.name)
                for s in ctx.topo.switches(name, tier)
                if up[s.name] and down[s.name] / up[s.name] > target + 1e-6
            ]
            if over:
                worst, switch = max(over)
                yield ctx.finding(
                    codes.OVERSUBSCRIBED,
                    Severity.WARNING,
                    f"fabric '{name}': {len(over)} {tier} switches "
                    f"above the {target:g}:1 target, worst {switch} at {worst:.2f}:1",
                    ("fabrics", name, "oversubscription"),
                    name,
                )
