"""Out-of-band management: a 1G switch per rack (or per row) for every BMC and switch management port,
each with one uplink to the leaves of the network named in `uplink_to`."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .. import codes
from ..catalog import Equipment, PortGroup, Server, Switch
from ..model import OobFabric
from .context import ExpandContext
from .hold import held_devices
from .identity import by_network, port_order
from .identity import natural as _natural
from .locked_order import Hole, Slots, locked_order
from .placement import free_slot, occupy, place_pinned
from .ports import NO_DATA_PORTS_HINT, PortAllocator, downlink_group, uplink_group
from .topology import Device, Link


def _oob_ports(ctx: ExpandContext, device: Device) -> list[PortGroup]:
    """Management ports: BMCs of nodes, switch management ports, and those of rack equipment (NVL72 NVLink
    switch trays: BMC and NVOS; power shelves: their controller)."""
    entry = ctx.catalog.entries.get(device.model)
    if isinstance(entry, Server | Switch | Equipment):
        return entry.port_groups("oob")
    return []


def build_oob(ctx: ExpandContext) -> None:
    for name, fabric in ctx.bp.fabrics.items():
        if isinstance(fabric, OobFabric):
            OobBuilder(ctx, name, fabric).build()


Member = tuple[Device, str, float]
"""A management port: (device, port, speed)."""
MEMBER_SLOTS: Slots[Member] = Slots(lambda m: [f"{m[0].name}:{m[1]}"], lambda key: key)
"""Each management port is an item of its own (a removed device leaves a hole per port)."""


def _patched_first(members: list[Member], patched: dict[str, tuple[Any, ...]], held: set[str]) -> list[Member | Hole]:
    """With a lock file: the management ports it holds first, in the order of the switch ports they had (so
    each gets its port back), a hole per port of a removed device (locked_order.py), then the new ones in
    order; as they are without one."""
    return locked_order(members, MEMBER_SLOTS, patched, held)


class OobBuilder:
    def __init__(self, ctx: ExpandContext, name: str, fabric: OobFabric):
        self.ctx, self.name, self.fabric = ctx, name, fabric
        self.switch_model = ctx.switch(fabric.switch)
        self.count = 0
        self.uplink_cursor = 0
        self.no_uplink: list[str] = []
        """OOB switches left without an uplink port, reported once when the fabric is built."""
        self.held: dict[str, list[int]] | None = None
        """With a lock file: rack -> numbers of the out-of-band switches it holds there (made on first use)."""
        self.taken: set[str] = set()
        """With a lock file: every device name it holds, which a new switch does not take."""
        self.uplinks: list[Device] = []
        """The out-of-band switches in the order they were made, wired to the leaves once all are made."""
        self.locked_uplinks = self._locked_uplinks()
        """With a lock file: 'switch:port' of each uplink it holds -> the leaf and the leaf's port."""
        self.fixed: dict[str, list[Device]] = defaultdict(list)
        """Management switches built into racks (NVL72), by rack: adopted before any is added."""
        for device in ctx.topo.devices.values():
            if device.kind == "equipment" and device.model == fabric.switch and device.rack:
                self.fixed[device.rack].append(device)

    def _members(self) -> dict[str, list[tuple[Device, str, float]]]:
        """Devices with management ports, by rack or row: (device, port, speed)."""
        groups = set(self.fabric.node_groups) if self.fabric.node_groups is not None else None
        by_area: dict[str, list[tuple[Device, str, float]]] = defaultdict(list)
        for device in self.ctx.topo.devices.values():
            if device.rack is None or (device.kind == "node" and groups is not None and device.group not in groups):
                continue
            rack = self.ctx.topo.racks[device.rack]
            area = rack.name if self.fabric.per == "rack" else rack.row
            for group in _oob_ports(self.ctx, device):
                by_area[area] += [
                    (device, f"{group.name}{i}" if group.count > 1 else group.name, group.speed_gbps)
                    for i in range(1, group.count + 1)
                ]
        return by_area

    def build(self) -> None:
        self._build_switches()
        self._wire_uplinks()
        if self.no_uplink:
            target = self.fabric.uplink_to
            self.ctx.error(
                codes.NO_OOB_UPLINK_PORT,
                f"the leaves of '{target}' have no free port for the uplinks of "
                f"{len(self.no_uplink)} out-of-band switches ({', '.join(self.no_uplink[:3])}"
                f"{', ...' if len(self.no_uplink) > 3 else ''})",
                ("fabrics", self.name, "uplink_to"),
                f"give '{target}' a leaf model with more ports, a second tier (spine) so it gets more "
                f"leaves, or fewer reserved ports; out-of-band uplinks cannot use reserved ports",
            )

    def _build_switches(self) -> None:
        topo = self.ctx.topo
        down = downlink_group(self.switch_model, 1)
        if down is None:
            self.ctx.error(
                codes.NO_DATA_PORTS,
                f"fabric '{self.name}': switch {self.fabric.switch} has no data ports",
                ("fabrics", self.name, "switch"),
                NO_DATA_PORTS_HINT,
            )
            return
        per_switch = down.count
        area_racks: dict[str, list[str]] = defaultdict(list)
        for rack in topo.racks.values():
            area_racks[rack.name if self.fabric.per == "rack" else rack.row].append(rack.name)
        by_area = self._by_area(port_order(self.ctx.keep.lock, self.name))
        held = held_devices(self.ctx.keep)
        for area, listed in self._members().items():
            members = _patched_first(listed, by_area.get(area, {}), held)
            switch: Device | None = None
            alloc: PortAllocator | None = None
            for i, member in enumerate(members):
                if i % per_switch == 0:
                    switch = self._new_switch(area_racks[area])
                    if switch is None:
                        return
                    alloc = self.ctx.allocators[(switch.name, down.name)]
                assert switch is not None and alloc is not None
                if isinstance(member, Hole):  # a removed device's port: kept free
                    alloc.take_low(down.speed_gbps)
                    continue
                device, port, speed = member
                switch_port = alloc.take_low(min(speed, down.speed_gbps))
                assert switch_port is not None
                topo.add_link(
                    Link(self.name, "oob", device.name, port, switch.name, switch_port, min(speed, down.speed_gbps))
                )

    def _by_area(self, patched: dict[str, tuple[Any, ...]]) -> dict[str, dict[str, tuple[Any, ...]]]:
        """The lock's patched management ports by the area (rack, or row) of the switch it holds them on (its
        uplinks left out)."""
        lock = self.ctx.keep.lock
        if lock is None or not patched:
            return {}
        areas: dict[str, str] = {}
        for name, slot in lock.section("racks").items():
            rack = self.ctx.topo.racks.get(slot.partition(" ")[0])
            if rack is not None:
                areas[name] = rack.name if self.fabric.per == "rack" else rack.row
        switches = by_network(lock, "ports")[self.name]
        out: dict[str, dict[str, tuple[Any, ...]]] = defaultdict(dict)
        for key, where in patched.items():
            area = areas.get(switches[key].partition(":")[0])
            if area is not None and key not in self.locked_uplinks:
                out[area][key] = where
        return out

    def _next_number(self, racks: list[str]) -> int:
        """The next switch's number: one more than the last; with a lock file, the number of a switch it
        holds in one of `racks` (so a switch keeps its name where the racks before it changed), else the
        next number it does not hold."""
        if not self.ctx.pins:
            return self.count + 1
        if self.held is None:
            self.held = defaultdict(list)
            prefix = f"{self.name}-sw"
            for name, (rack, _) in sorted(self.ctx.pins.items()):
                if name.startswith(prefix) and name[len(prefix) :].isdigit():
                    self.held[rack].append(int(name[len(prefix) :]))
            lock = self.ctx.keep.lock
            self.taken = set(lock.section("racks")) if lock else set()
        for rack in racks:
            if self.held.get(rack):
                return self.held[rack].pop(0)
        number = self.count + 1
        while f"{self.name}-sw{number:03d}" in self.taken or f"{self.name}-sw{number:03d}" in self.ctx.topo.devices:
            number += 1
        return number

    def _adopt_fixed(self, racks: list[str]) -> Device | None:
        """A management switch built into a rack-scale system (NVL72) serves its rack's BMCs."""
        for rack in racks:
            if self.fixed[rack]:
                device = self.fixed[rack].pop(0)
                device.kind, device.role, device.group = "switch", "oob", self.name
                return device
        return None

    def _register(self, device: Device) -> Device:
        for group in self.switch_model.ports:
            if group.role != "oob":
                self.ctx.allocators[(device.name, group.name)] = PortAllocator(group)
        self.uplinks.append(device)
        return device

    def _new_switch(self, racks: list[str]) -> Device | None:
        topo = self.ctx.topo
        fixed = self._adopt_fixed(racks)
        if fixed is not None:
            return self._register(fixed)
        self.count = self._next_number(racks)
        device = Device(
            f"{self.name}-sw{self.count:03d}",
            "switch",
            self.fabric.switch,
            "oob",
            self.switch_model.u_height,
            self.name,
            self.count,
        )
        if self.ctx.pins and place_pinned(self.ctx, device, racks) is not None:
            topo.add_device(device)
            return self._register(device)
        for rack_name in racks:
            u = free_slot(topo.racks[rack_name], device.u_height, top_down=True)
            if u is not None:
                occupy(topo.racks[rack_name], device, u)
                break
        else:
            self.ctx.error(
                codes.SWITCHES_DO_NOT_FIT,
                f"no free {device.u_height}U for out-of-band switch in {', '.join(racks)}",
                ("fabrics", self.name, "per"),
            )
            return None
        topo.add_device(device)
        return self._register(device)

    def _locked_uplinks(self) -> dict[str, tuple[str, str]]:
        lock, target = self.ctx.keep.lock, self.fabric.uplink_to
        if lock is None or target is None:
            return {}
        leaves = {leaf.name for leaf in self.ctx.topo.switches(target, "leaf")}
        found = {}
        for key, value in by_network(lock, "ports").get(self.name, {}).items():
            leaf, _, port = value.partition(":")
            if leaf in leaves:
                found[key] = (leaf, port)
        return found

    def _wire_uplinks(self) -> None:
        """Each switch's uplink: to the leaf port the lock file holds for it where that port is still free (in
        the order of those ports, so each passes over only ports no uplink holds), then the others in turn
        over the leaves."""
        up = uplink_group(self.switch_model)
        if self.fabric.uplink_to is None or up is None:
            return
        own_port = self.ctx.allocators
        locked = {
            device.name: where
            for device in self.uplinks
            if (where := self.locked_uplinks.get(f"{device.name}:{own_port[(device.name, up.name)].peek_high()}"))
        }
        order = sorted(locked, key=lambda name: (_natural(locked[name][0]), _natural(locked[name][1])))
        wired = {name for name in order if self._uplink_at(name, up, *locked[name])}
        for device in self.uplinks:
            if device.name not in wired:
                self._uplink(device)

    def _uplink_at(self, name: str, up: PortGroup, leaf_name: str, port: str) -> bool:
        """The uplink of `name` to the leaf port the lock holds for it: the port the leaf's fabric kept for
        it, else that port when still free."""
        leaf = self.ctx.topo.devices.get(leaf_name)
        leaf_group = downlink_group(self.ctx.switch(leaf.model), up.speed_gbps) if leaf is not None else None
        if leaf is None or leaf_group is None:
            return False
        speed = min(up.speed_gbps, leaf_group.speed_gbps)
        kept = [p for switch, p in self.ctx.held_ports.get(name, []) if switch == leaf_name]
        leaf_port = kept[0] if kept else self.ctx.allocators[(leaf.name, leaf_group.name)].take_at(port, speed)
        if leaf_port is None:
            return False
        own = self.ctx.allocators[(name, up.name)].take_high()
        assert own is not None
        self.ctx.topo.add_link(Link(self.name, "oob-uplink", name, own, leaf.name, leaf_port, speed))
        return True

    def _uplink(self, device: Device) -> None:
        target = self.fabric.uplink_to
        up = uplink_group(self.switch_model)
        if target is None or up is None:
            return
        leaves = self.ctx.topo.switches(target, "leaf")
        for attempt in range(len(leaves)):
            leaf = leaves[(self.uplink_cursor + attempt) % len(leaves)]
            leaf_group = downlink_group(self.ctx.switch(leaf.model), up.speed_gbps)
            if leaf_group is None:
                continue
            speed = min(up.speed_gbps, leaf_group.speed_gbps)
            leaf_port = self.ctx.allocators[(leaf.name, leaf_group.name)].take_low(speed)
            if leaf_port is None:
                continue
            own = self.ctx.allocators[(device.name, up.name)].take_high()
            assert own is not None
            self.ctx.topo.add_link(Link(self.name, "oob-uplink", device.name, own, leaf.name, leaf_port, speed))
            self.uplink_cursor += attempt + 1
            return
        self.no_uplink.append(device.name)
