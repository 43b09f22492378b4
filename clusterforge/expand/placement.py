"""Racks on the floor, then node groups into racks by U (bottom up), respecting reserved U,
fixed equipment, and, when placement is automatic, the rack's power and cooling."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection

from .. import codes
from ..catalog import Equipment, RackType, Server, Switch
from ..catalog.models import Device as CatalogDevice
from ..model import NodeGroup
from ..physical import FILL, planned_w, usable_feed_kw
from .context import ExpandContext
from .topology import Device, Rack


def planned_kw(ctx: ExpandContext, entry: CatalogDevice, device_class: str) -> float:
    return planned_w(ctx.bp.power, entry, device_class) / 1000.0


def place_racks(ctx: ExpandContext) -> None:
    for row_index, row in enumerate(ctx.bp.floor.rows):
        rack_type = ctx.catalog.require(row.rack_type, RackType)
        for position in range(row.racks):
            rack = Rack(
                row.rack_name(position + 1),
                row.name,
                row_index,
                position,
                row.rack_type,
                rack_type,
                [None] * rack_type.u_height,
            )
            for reserved in rack_type.reserved:
                for u in range(reserved.u, min(reserved.u + reserved.height, rack_type.u_height + 1)):
                    rack.used[u - 1] = f"reserved: {reserved.purpose}"
            ctx.topo.add_rack(rack)
            for fixed in rack_type.fixed_devices:
                entry = ctx.catalog.entries[fixed.model]
                assert isinstance(entry, Equipment | Switch)
                role = entry.role if isinstance(entry, Equipment) else "oob"
                device = Device(f"{rack.name}-{fixed.name}", "equipment", fixed.model, role, entry.u_height)
                occupy(rack, device, fixed.u)
                ctx.topo.add_device(device)


PINNED = "pinned: "
"""What a U the lock file holds for a device not placed yet is marked with (free_slot passes over it)."""


def pin_slots(ctx: ExpandContext) -> None:
    """With a lock file: the rack slot of every device it holds kept for that device alone (marked, so no
    other device takes it), where the slot is still free in a rack that still exists."""
    lock = ctx.keep.lock
    if lock is None:
        return
    for name, where in lock.section("racks").items():
        rack_name, _, units = where.partition(" U")
        low, _, high = units.partition("-")
        rack = ctx.topo.racks.get(rack_name)
        first, last = int(low), int(high or low)
        if rack is None or last > len(rack.used) or any(rack.used[u - 1] is not None for u in range(first, last + 1)):
            continue
        for u in range(first, last + 1):
            rack.used[u - 1] = PINNED + name
        ctx.pins[name] = (rack_name, first)


def place_pinned(ctx: ExpandContext, device: Device, racks: Collection[str]) -> Rack | None:
    """Put `device` into the slot the lock file holds for it, when that slot is in one of `racks` (names)
    and fits the device; the rack, or None."""
    pin = ctx.pins.pop(device.name, None)
    if pin is None:
        return None
    rack = ctx.topo.racks[pin[0]] if pin[0] in racks else None
    units = range(pin[1] - 1, pin[1] - 1 + device.u_height)
    mark = PINNED + device.name
    if rack is None or units.stop > len(rack.used) or any(rack.used[i] not in (None, mark) for i in units):
        return None
    occupy(rack, device, pin[1])
    return rack


def unpin_slots(ctx: ExpandContext) -> None:
    """The slots held for devices the blueprint no longer has (or placed elsewhere) freed again."""
    if not ctx.pins:
        return
    for rack in ctx.topo.racks.values():
        rack.used = [None if u is not None and u.startswith(PINNED) else u for u in rack.used]
    ctx.pins.clear()


def free_slot(rack: Rack, height: int, top_down: bool = False) -> int | None:
    """Lowest (or highest) U where `height` free U stand together."""
    used = rack.used
    free = 0
    for i in range(len(used) - 1, -1, -1) if top_down else range(len(used)):
        free = free + 1 if used[i] is None else 0
        if free == height:
            return i + 1 if top_down else i - height + 2
    return None


def occupy(rack: Rack, device: Device, u: int) -> None:
    for i in range(u - 1, u - 1 + device.u_height):
        rack.used[i] = device.name
    device.rack, device.u = rack.name, u


def _target_racks(ctx: ExpandContext, group: NodeGroup) -> list[Rack]:
    racks = ctx.topo.racks
    if group.placement.racks is not None:
        return [racks[name] for name in group.placement.racks]
    if group.placement.rows is not None:
        wanted = set(group.placement.rows)
        return [rack for rack in racks.values() if rack.row in wanted]
    return list(racks.values())


class RackLoad:
    """Planned power and heat already placed in each rack, for automatic placement."""

    def __init__(self) -> None:
        self.kw: dict[str, float] = {}
        self.air_kw: dict[str, float] = {}
        self.liquid_kw: dict[str, float] = {}

    def fits(self, rack: Rack, kw: float, liquid_share: float) -> bool:
        cooling = rack.rack_type.cooling
        return (
            self.kw.get(rack.name, 0) + kw <= FILL * usable_feed_kw(rack.rack_type) + 1e-9
            and self.air_kw.get(rack.name, 0) + kw * (1 - liquid_share) <= FILL * cooling.air_kw + 1e-9
            and self.liquid_kw.get(rack.name, 0) + kw * liquid_share <= FILL * cooling.liquid_kw + 1e-9
        )

    @classmethod
    def of(cls, ctx: ExpandContext) -> RackLoad:
        """The load of everything placed so far."""
        load = cls()
        for device in ctx.topo.devices.values():
            if device.rack is not None:
                entry = ctx.catalog.entries[device.model]
                assert isinstance(entry, CatalogDevice)
                load.add(
                    ctx.topo.racks[device.rack],
                    planned_kw(ctx, entry, device.device_class),
                    entry.cooling.liquid_fraction,
                )
        return load

    def add(self, rack: Rack, kw: float, liquid_share: float) -> None:
        self.kw[rack.name] = self.kw.get(rack.name, 0) + kw
        self.air_kw[rack.name] = self.air_kw.get(rack.name, 0) + kw * (1 - liquid_share)
        self.liquid_kw[rack.name] = self.liquid_kw.get(rack.name, 0) + kw * liquid_share


def place_nodes(ctx: ExpandContext) -> None:
    load = RackLoad()
    for gi, group in enumerate(ctx.bp.node_groups):
        server = ctx.server(group.model)
        racks = _target_racks(ctx, group)
        if server.rack_type is not None:
            wrong = [r.name for r in racks if r.type_key != server.rack_type]
            if wrong and group.placement.rows is None and group.placement.racks is None:
                racks = [r for r in racks if r.type_key == server.rack_type]
            elif wrong:
                ctx.error(
                    codes.WRONG_RACK_TYPE,
                    f"node group '{group.name}': {group.model} must sit in "
                    f"{server.rack_type} racks, but {', '.join(wrong[:4])} are not",
                    ("node_groups", gi, "placement"),
                )
                continue
        stops: Counter[str] = Counter()
        placed = _fill(ctx, group, server, racks, load, stops)
        if placed < group.count:
            _report_unplaced(ctx, gi, group, server, racks, placed, stops)


def _per_rack_room(rack: Rack, height: int) -> int:
    """How many `height`-U devices the rack's free U hold, in runs."""
    room = run = 0
    for slot in [*rack.used, "end"]:
        if slot is None:
            run += 1
        else:
            room, run = room + run // height, 0
    return room


def _report_unplaced(
    ctx: ExpandContext,
    gi: int,
    group: NodeGroup,
    server: Server,
    racks: list[Rack],
    placed: int,
    stops: Counter[str],
) -> None:
    """CF-SPACE-002 naming the limit that stopped the group (per_rack, rack space, power and cooling) and what
    would fit."""
    where = ", ".join(sorted({r.row for r in racks})) or "no racks"
    missing = group.count - placed
    limits = []
    if stops["per_rack"]:
        limits.append(f"per_rack {group.placement.per_rack} filled {stops['per_rack']} racks")
    if stops["space"]:
        limits.append(f"rack space filled {stops['space']}")
    if stops["power"]:
        limits.append(f"90% of power or cooling filled {stops['power']}")
    room = sum(_per_rack_room(r, server.u_height) for r in racks)
    if stops["per_rack"] and room:
        hint = (
            f"raise per_rack: the racks' free space holds {room} more {server.u_height}U nodes "
            f"({missing} are missing), or add racks"
        )
    elif stops["power"]:
        hint = "add racks (power and cooling, not space, was the limit), or allow more rows or racks in placement"
    else:
        height = racks[0].rack_type.u_height if racks else 0
        fit = height // server.u_height if server.u_height else 0
        hint = f"add racks (an empty {height}U rack holds at most {fit} of these), or allow more rows or racks"
    ctx.error(
        codes.NODES_DO_NOT_FIT,
        f"node group '{group.name}': room for {placed} of {group.count} nodes in rows {where} "
        f"({'; '.join(limits) or 'no racks'})",
        ("node_groups", gi, "count"),
        hint,
    )


def _fill(
    ctx: ExpandContext, group: NodeGroup, server: Server, racks: list[Rack], load: RackLoad, stops: Counter[str]
) -> int:
    """The group's nodes in index order: each into its slot in the lock file where it has one, the others
    bottom up into the racks in order (per_rack, and when automatic power and cooling, permitting); how many
    were placed."""
    names, indexes = group.hostnames(), group.indexes()
    per_rack = group.placement.per_rack
    automatic = per_rack is None
    kw = planned_kw(ctx, server, group.role)
    liquid = server.cooling.liquid_fraction
    here: dict[str, int] = {}
    cursor = 0
    allowed = {rack.name for rack in racks} if ctx.pins else set()
    for index in range(group.count):
        device = Device(names[index], "node", group.model, group.role, server.u_height, group.name, indexes[index])
        rack = place_pinned(ctx, device, allowed) if ctx.pins else None
        while rack is None and cursor < len(racks):
            candidate = racks[cursor]
            full = per_rack is not None and here.get(candidate.name, 0) >= per_rack
            u = None if full else free_slot(candidate, server.u_height)
            if u is None or (automatic and not load.fits(candidate, kw, liquid)):
                stops["per_rack" if full else "space" if u is None else "power"] += 1  # why the rack is done
                cursor += 1
                continue
            occupy(candidate, device, u)
            rack = candidate
        if rack is None:
            return index
        ctx.topo.add_device(device)
        load.add(rack, kw, liquid)
        here[rack.name] = here.get(rack.name, 0) + 1
    return group.count
