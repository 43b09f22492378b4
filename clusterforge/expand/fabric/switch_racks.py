"""Fabric switches into racks: top-down into the fabric's switch racks, leaves first, then spines and
cores, leaving room in each rack for its out-of-band switch."""

from __future__ import annotations

from ... import codes
from ...model.fabric import OobFabric
from ..context import ExpandContext
from ..placement import RackLoad, free_slot, occupy, place_pinned, planned_kw
from ..topology import TIERS


def _oob_headroom(ctx: ExpandContext) -> int:
    """U to leave free in every rack for its own out-of-band switch."""
    return max(
        (
            ctx.switch(f.switch).u_height
            for f in ctx.bp.fabrics.values()
            if isinstance(f, OobFabric) and f.per == "rack"
        ),
        default=0,
    )


def place_switches(ctx: ExpandContext, fabric: str, rack_names: list[str] | None) -> None:
    """Fabric switches go top-down into the fabric's switch racks, leaves first, then spines and cores,
    leaving room in each rack for its out-of-band switch."""
    topo = ctx.topo
    if rack_names is None:
        node_racks = {link.a: topo.devices[link.a].rack for link in topo.fabric_links(fabric, "node-leaf")}
        rack_names = sorted({r for r in node_racks.values() if r}, key=lambda r: list(topo.racks).index(r))
    racks = [topo.racks[r] for r in rack_names]
    switches = [d for tier in TIERS for d in topo.switches(fabric, tier)]
    headroom = _oob_headroom(ctx)
    load = RackLoad.of(ctx)
    rack_index = 0
    for device in switches:
        entry = ctx.switch(device.model)
        kw, liquid = planned_kw(ctx, entry, "switch"), entry.cooling.liquid_fraction
        pinned = place_pinned(ctx, device, rack_names) if ctx.pins else None
        if pinned is not None:  # the slot the lock file holds for it
            load.add(pinned, kw, liquid)
            continue
        while rack_index < len(racks):
            rack = racks[rack_index]
            u = free_slot(rack, device.u_height, top_down=True)
            if u is not None and rack.free_units() - device.u_height >= headroom and load.fits(rack, kw, liquid):
                occupy(rack, device, u)
                load.add(rack, kw, liquid)
                break
            rack_index += 1
        else:
            need = sum(d.u_height for d in switches if d.rack is None)
            ctx.error(
                codes.SWITCHES_DO_NOT_FIT,
                f"fabric '{fabric}': {need} U of switches do not fit in racks "
                f"{', '.join(rack_names) or '(none)'} (space, or 90% of power and cooling)",
                ("fabrics", fabric, "switch_racks"),
                "add racks to switch_racks",
            )
            return
