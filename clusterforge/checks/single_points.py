"""Single points of failure that pass every other check (warnings, suppressible with a reason): a fabric plane
whose leaves reach each other through one spine, an InfiniBand fabric with one subnet manager, and one
management switch on the path every node or every management port needs (all in-band node links on one
switch, all out-of-band uplinks on one switch)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from ..expand.topology import LinkTier
from ..model.fabric import LeafSpineFabric, OobFabric
from .context import CheckContext


def check_single_points(ctx: CheckContext) -> Iterator[Finding]:
    yield from _one_spine(ctx)
    yield from _one_subnet_manager(ctx)
    yield from _one_management_switch(ctx)


def _one_spine(ctx: CheckContext) -> Iterator[Finding]:
    for name, fabric in ctx.valid.blueprint.fabrics.items():
        if not isinstance(fabric, LeafSpineFabric):
            continue
        leaves: dict[int | None, int] = defaultdict(int)
        spines: dict[int | None, list[str]] = defaultdict(list)
        for switch in ctx.topo.switches(name):
            if switch.role == "leaf":
                leaves[switch.plane] += 1
            elif switch.role == "spine":
                spines[switch.plane].append(switch.name)
        alone = sorted((plane, names[0]) for plane, names in spines.items() if len(names) == 1)
        count = sum(leaves.values())
        if not alone or count < 2:
            continue
        which = ", ".join(spine for _, spine in alone)
        yield ctx.finding(
            codes.SINGLE_SPINE,
            Severity.WARNING,
            f"fabric '{name}': one spine ({which}) carries all traffic between its {count} leaves: when it fails "
            "or is upgraded, the leaves are cut off from each other",
            ("fabrics", name),
            name,
            "a second spine (the leaves' uplinks split over both), or suppress with the reason",
        )


def _one_subnet_manager(ctx: CheckContext) -> Iterator[Finding]:
    for name, fabric in ctx.valid.blueprint.fabrics.items():
        if not isinstance(fabric, LeafSpineFabric) or fabric.technology != "infiniband":
            continue
        managers = sorted(
            {
                link.a
                for link in ctx.topo.fabric_links(name, "node-leaf")
                if ctx.topo.devices[link.a].role == "subnet-manager"
            }
        )
        if len(managers) != 1:
            continue
        yield ctx.finding(
            codes.SINGLE_SUBNET_MANAGER,
            Severity.WARNING,
            f"fabric '{name}': one subnet manager ({managers[0]}): when it fails no standby takes over, and the "
            "subnet cannot bring up a port or route around a failed link until it is back",
            ("fabrics", name),
            name,
            "a second subnet-manager node on the fabric (OpenSM or UFM in standby), or suppress with the reason",
        )


def _one_management_switch(ctx: CheckContext) -> Iterator[Finding]:
    tier: LinkTier
    for name, fabric in ctx.valid.blueprint.fabrics.items():
        if isinstance(fabric, LeafSpineFabric) and fabric.kind == "inband":
            tier, what = "node-leaf", "every node's in-band link"
        elif isinstance(fabric, OobFabric) and fabric.uplink_to:
            tier, what = "oob-uplink", "every out-of-band switch's uplink"
        else:
            continue
        links = ctx.topo.fabric_links(name, tier)
        ends = {link.b for link in links}
        if len(ends) != 1 or len({link.a for link in links}) < 2:
            continue
        yield ctx.finding(
            codes.SINGLE_MANAGEMENT_SWITCH,
            Severity.WARNING,
            f"network '{name}': {what} lands on one switch ({next(iter(ends))}): when it fails, no node can be "
            "reached to manage",
            ("fabrics", name),
            name,
            "a leaf pair (dual_homing) for the in-band network, OOB uplinks on both leaves of a pair, or suppress "
            "with the reason",
        )
