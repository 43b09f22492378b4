"""Leaf/spine/core fabrics, sized from first principles and wired port by port.

Modules, in the order a fabric is built: `endpoints` (what attaches), `sizing` (leaf budget, tiers),
`leaves` (nodes and subnet managers onto leaves), `spread` (how many upper switches, links per pair),
`upper` (spine and core tiers), `wiring` (switches and links, ports booked), `switch_racks` (placement).
"""

from __future__ import annotations

from ...model.fabric import LeafSpineFabric
from ..context import ExpandContext
from .builder import LeafSpineBuilder
from .switch_racks import place_switches


def build_fabrics(ctx: ExpandContext) -> None:
    for name, fabric in ctx.bp.fabrics.items():
        if isinstance(fabric, LeafSpineFabric):
            LeafSpineBuilder(ctx, name, fabric).build()
            place_switches(ctx, name, fabric.switch_racks)


__all__ = ["LeafSpineBuilder", "build_fabrics", "place_switches"]
