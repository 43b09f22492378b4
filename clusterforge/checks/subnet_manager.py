"""A subnet manager on the switches only for the fabrics it can manage: the MLNX-OS user manual gives the
switches' embedded subnet manager fabrics of up to 2,048 nodes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from ..model.fabric import LeafSpineFabric
from .context import CheckContext

SWITCH_SM_NODES = 2048
"""Nodes the subnet manager of an MLNX-OS switch manages (NVIDIA MLNX-OS user manual, Subnet Manager)."""


def check_switch_subnet_manager(ctx: CheckContext) -> Iterator[Finding]:
    """Each subnet of a fabric whose switches run the subnet manager: its host ports (one channel adapter
    each) and switches within the limit. A per-rail plane is a subnet of its own."""
    for name, fabric in ctx.valid.blueprint.fabrics.items():
        if not isinstance(fabric, LeafSpineFabric) or fabric.subnet_manager != "switches":
            continue
        per_rail = ctx.topo.fabrics[name].planes > 1
        adapters = Counter(link.rail if per_rail else 0 for link in ctx.topo.fabric_links(name, "node-leaf"))
        switches = Counter(
            (device.rail if device.role == "leaf" else device.plane) if per_rail else 0
            for device in ctx.topo.devices.values()
            if device.kind == "switch" and device.group == name
        )
        for subnet in sorted(adapters, key=lambda k: k or 0):
            nodes = adapters[subnet] + switches[subnet]
            if nodes > SWITCH_SM_NODES:
                yield ctx.finding(
                    codes.SWITCH_SM_TOO_MANY_NODES,
                    Severity.ERROR,
                    f"fabric '{name}': the switches' subnet manager manages up to {SWITCH_SM_NODES} nodes "
                    f"(MLNX-OS user manual), this subnet has {nodes} ({adapters[subnet]} host ports and "
                    f"{switches[subnet]} switches)",
                    ("fabrics", name, "subnet_manager"),
                    name,
                )
                break
