"""Fabric switches into racks: top-down into the fabric's switch racks, leaves first, then spines and
cores, leaving room in each rack for its out-of-band switch."""

from __future__ import annotations

from ... import codes
from ...model.fabric import OobFabric
from ..context import ExpandContext
from ..placement import RackLoad, free_slot, occupy, place_pinned, planned_kw
from ..topology import TIERS, Device


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
        floor_order = {name: i for i, name in enumerate(topo.racks)}
        rack_names = sorted({r for r in node_racks.values() if r}, key=floor_order.__getitem__)
    racks = [topo.racks[r] for r in rack_names]
    switches = [d for tier in TIERS for d in topo.switches(fabric, tier)]
    headroom = _oob_headroom(ctx)
    load = RackLoad.of(ctx)
    rack_index = 0
    full: dict[str, str] = {}
    """Rack -> what filled it: 'space' or 'power'."""
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
            roomy = u is not None and rack.free_units() - device.u_height >= headroom
            full[rack.name] = "power" if roomy else "space"
            rack_index += 1
        else:
            _report_unplaced(ctx, fabric, rack_names, switches, full, headroom)
            return


def _report_unplaced(
    ctx: ExpandContext, fabric: str, rack_names: list[str], switches: list[Device], full: dict[str, str], headroom: int
) -> None:
    """CF-SPACE-001 naming the limit (rack space, or 90% of power and cooling) and how many switches an empty
    rack of the kind would hold."""
    left = [d for d in switches if d.rack is None]
    need = sum(d.u_height for d in left)
    by_space = [r for r, why in full.items() if why == "space"]
    by_power = [r for r, why in full.items() if why == "power"]
    limits = []
    if by_space:
        limits.append(
            f"rack space filled {', '.join(by_space)}"
            + (f" ({headroom} U kept per rack for its out-of-band switch)" if headroom else "")
        )
    if by_power:
        limits.append(f"90% of power or cooling filled {', '.join(by_power)}")
    height = max((d.u_height for d in left), default=1)
    rack = ctx.topo.racks[rack_names[0]] if rack_names else None
    usable = (
        (len(rack.used) - sum(1 for slot in rack.used if slot and slot.startswith("reserved")) - headroom)
        if rack
        else 0
    )
    ctx.error(
        codes.SWITCHES_DO_NOT_FIT,
        f"fabric '{fabric}': {len(left)} switches ({need} U) do not fit in racks "
        f"{', '.join(rack_names) or '(none)'} ({'; '.join(limits) or 'no racks'})",
        ("fabrics", fabric, "switch_racks"),
        f"add racks to switch_racks: an empty rack like {rack_names[0]} holds {max(usable, 0) // height} "
        f"{height}U switches"
        if rack_names
        else "name racks in switch_racks",
    )
