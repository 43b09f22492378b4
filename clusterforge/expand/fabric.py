"""Leaf/spine/core fabrics sized from first principles and wired port by port.

Sizing, for a leaf whose downlinks run at s and uplinks at S, with oversubscription r (down:up):
  a leaf serves d downlinks and u = ceil(d*s / (r*S)) uplinks, with d*cost(s) + u <= usable ports, where
  cost(s) is the share of a native port one downlink takes (1/4 for a 200G breakout of an 800G port).
Rail-optimized: NIC k of every node of a scalable unit (SU) goes to the SU's leaf for rail k.
Fat-tree: the nodes' ports fill the leaves in order.
Two tiers: every leaf of a spine group meets every spine of it with k links (k divides u, k*leaves <= spine
ports); one group when all leaves fit, else one group per rail. Three tiers: per plane (a rail, or all
leaves), pods of leaves share spines as in two tiers with half of each spine's ports down; spine j of
every pod meets core group j the same way; one plane when its pods fit the core ports, else one per
rail. Upper tiers are non-blocking; the target applies at the leaf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import codes
from ..catalog import PortGroup, Switch
from ..errors import DataPath
from ..model.fabric import LeafSpineFabric, OobFabric
from .context import ExpandContext
from .placement import RackLoad, free_slot, occupy, planned_kw
from .ports import NO_DATA_PORTS_HINT, PortAllocator, downlink_group, per_native, uplink_group
from .topology import TIERS, Device, FabricSummary, Link, LinkTier, Tier

_PORT_ROLE = {"compute": "compute", "storage": "storage", "inband": "inband"}

OUT_OF_PORTS_HINT = ("the switch model has fewer ports than its downlinks, uplinks and reserved_ports need: "
                     "reserve fewer ports, or pick a model with more")


@dataclass
class Endpoint:
    device: Device
    ports: list[tuple[str, float]]
    """(port name, speed) in rail order."""


def largest_divisor(n: int, limit: int) -> int:
    """Largest divisor of n that is <= limit (at least 1)."""
    best = 1
    for k in range(1, min(n, max(limit, 1)) + 1):
        if n % k == 0:
            best = k
    return best


def endpoints_for(ctx: ExpandContext, name: str, fabric: LeafSpineFabric, role: str) -> list[Endpoint]:
    listed = fabric.node_groups
    endpoints: list[Endpoint] = []
    for group in ctx.bp.node_groups:
        if listed is not None and group.name not in listed:
            continue
        groups = ctx.server(group.model).port_groups(role)  # type: ignore[arg-type]
        if not groups:
            if listed is not None:
                j = listed.index(group.name)
                ctx.error(codes.NO_PORTS_OF_ROLE, f"node group '{group.name}' ({group.model}) has no {role} ports "
                          f"for fabric '{name}'", ("fabrics", name, "node_groups", j))
            continue
        ports = [(f"{pg.name}{i}", pg.speed_gbps) for pg in groups for i in range(1, pg.count + 1)]
        endpoints += [Endpoint(node, ports) for node in ctx.topo.devices_of("node", group=group.name)]
    return endpoints


class LeafSpineBuilder:
    def __init__(self, ctx: ExpandContext, name: str, fabric: LeafSpineFabric):
        self.ctx, self.name, self.fabric = ctx, name, fabric
        self.path: DataPath = ("fabrics", name)
        self.topo = ctx.topo
        self.counts: dict[Tier, int] = {"leaf": 0, "spine": 0, "core": 0}
        self._up: dict[str, PortAllocator] = {}
        self._down: dict[str, PortAllocator] = {}

    # --- devices and links ----------------------------------------------------------------------
    def _switch(self, tier: Tier, model: str, group: PortGroup, reserved: int, **where: int | None) -> Device:
        """A new switch of `tier`; `reserved` native ports of `group` are kept for fabric managers."""
        self.counts[tier] += 1
        switch = self.ctx.switch(model)
        device = Device(f"{self.name}-{tier}{self.counts[tier]:03d}", "switch", model, tier,
                        switch.u_height, self.name, self.counts[tier], **where)  # type: ignore[arg-type]
        self.topo.add_device(device)
        for data in switch.ports:
            if data.role != "oob":
                self.ctx.allocators[(device.name, data.name)] = PortAllocator(
                    data, reserved if data.name == group.name else 0)
        up = uplink_group(switch)
        down = downlink_group(switch, self.down_speed) if tier == "leaf" else up
        assert up is not None and down is not None
        self._up[device.name] = self.ctx.allocators[(device.name, up.name)]
        self._down[device.name] = self.ctx.allocators[(device.name, down.name)]
        return device

    def _alloc(self, device: Device, up: bool) -> PortAllocator:
        """Allocator of the group that carries `device`'s uplinks (up) or its downlinks."""
        return self._up[device.name] if up else self._down[device.name]

    def _connect(self, tier: LinkTier, low: Device, high: Device, speed: float, rail: int | None = None) -> bool:
        """Uplink from `low` (top ports) to `high` (bottom ports)."""
        a_port = self._alloc(low, up=True).take_high()
        b_port = self._alloc(high, up=False).take_low(speed)
        if a_port is None or b_port is None:
            self.ctx.error(codes.OUT_OF_PORTS, f"fabric '{self.name}': out of ports wiring {low.name} to {high.name}",
                           self.path, OUT_OF_PORTS_HINT)
            return False
        self.topo.add_link(Link(self.name, tier, low.name, a_port, high.name, b_port, speed, rail))
        return True

    # --- sizing -----------------------------------------------------------------------------------
    def build(self) -> None:
        ctx, fabric = self.ctx, self.fabric
        role = _PORT_ROLE[fabric.kind]
        endpoints = endpoints_for(ctx, self.name, fabric, role)
        # fabric managers (UFM, subnet managers) sit on reserved ports of the compute fabric only
        is_manager = [role == "compute" and e.device.role == "fabric-manager" for e in endpoints]
        managers = [e for e, m in zip(endpoints, is_manager, strict=True) if m]
        endpoints = [e for e, m in zip(endpoints, is_manager, strict=True) if not m]
        summary = FabricSummary(self.name, fabric.kind, fabric.technology,
                                getattr(fabric, "topology", "fat-tree"), 0,
                                oversubscription_target=fabric.oversubscription)
        self.topo.fabrics[self.name] = summary
        if not endpoints:
            ctx.warning(codes.FABRIC_WITHOUT_NODES, f"fabric '{self.name}' has no nodes attached", self.path)
            return
        leaf = ctx.switch(fabric.leaf)
        node_speed = max(speed for e in endpoints for _, speed in e.ports)
        group = downlink_group(leaf, node_speed)
        if group is None:
            ctx.error(codes.NO_DATA_PORTS, f"fabric '{self.name}': leaf switch {fabric.leaf} has no data ports",
                      (*self.path, "leaf"), NO_DATA_PORTS_HINT)
            return
        self.down_speed = min(node_speed, group.speed_gbps)
        if self.down_speed < node_speed:
            ctx.warning(codes.NIC_FASTER_THAN_LEAF, f"fabric '{self.name}': {node_speed:g}G node ports run at "
                        f"{self.down_speed:g}G on {fabric.leaf}", (*self.path, "leaf"),
                        "pick a leaf switch with ports at the NICs' speed")
        self.rails = max(len(e.ports) for e in endpoints)
        summary.nodes = len(endpoints) + len(managers)
        summary.endpoints = sum(len(e.ports) for e in endpoints) + sum(len(e.ports) for e in managers)
        summary.rails = self.rails if summary.topology == "rail-optimized" else 0
        summary.models = {"leaf": fabric.leaf}
        tiers = self._decide_tiers(leaf, group, endpoints, managers)
        if tiers is None:
            return
        summary.tiers = tiers
        if tiers == 1:
            self._one_switch(leaf, group, endpoints, managers)
            return
        leaves = self._leaves(leaf, group, endpoints)
        assert fabric.spine is not None
        summary.models["spine"] = fabric.spine
        if tiers == 2:
            self._two_tier(leaves)
        else:
            assert fabric.core is not None
            summary.models["core"] = fabric.core
            self._three_tier(leaves)
        self._attach_managers(managers)

    def _leaf_budget(self, leaf: Switch, group: PortGroup) -> tuple[int, float]:
        """(max downlinks per leaf, uplink speed) for the leaf model at the oversubscription target."""
        fabric = self.fabric
        spine = self.ctx.switch(fabric.spine) if fabric.spine else None
        up_group = uplink_group(leaf)
        assert up_group is not None
        spine_group = uplink_group(spine) if spine else None
        spine_speed = spine_group.speed_gbps if spine_group else up_group.speed_gbps
        self.up_speed = min(up_group.speed_gbps, spine_speed)
        ratio = fabric.oversubscription
        if up_group.name == group.name:
            usable = group.count - fabric.reserved_ports.leaf
            split = per_native(group, self.down_speed)
            d_max = math.floor(usable / (1 / split + self.down_speed / (ratio * self.up_speed)) + 1e-9)
            while d_max > 1 and math.ceil(d_max / split) + self._uplinks_for(d_max) > usable:
                d_max -= 1  # whole native ports: a half-used breakout port still takes a cage
        else:
            d_max = min(group.ports_at(self.down_speed) or group.count,
                        math.floor(up_group.count * self.up_speed * ratio / self.down_speed))
        return max(d_max, 1), self.up_speed

    def _decide_tiers(self, leaf: Switch, group: PortGroup, endpoints: list[Endpoint],
                      managers: list[Endpoint]) -> int | None:
        fabric = self.fabric
        total = sum(len(e.ports) for e in endpoints)
        single = (group.count - fabric.reserved_ports.leaf) * per_native(group, self.down_speed)
        if fabric.tiers == 1 or (fabric.tiers == "auto" and total <= single):
            if total > single:
                self.ctx.error(codes.TOO_FEW_TIERS, f"fabric '{self.name}': one {fabric.leaf} holds {single} ports, "
                               f"{total} are needed", (*self.path, "tiers"), "use tiers: auto, 2 or 3")
                return None
            return 1
        if fabric.spine is None:
            self.ctx.error(codes.TOO_FEW_TIERS, f"fabric '{self.name}': {total} ports need more than one switch, and "
                           "no spine model is given", (*self.path, "spine"))
            return None
        self.d_max, _ = self._leaf_budget(leaf, group)
        if fabric.tiers in (2, 3):
            return int(fabric.tiers)
        leaves = self._leaf_count(endpoints)
        spine_ports = self._tier_ports("spine", fabric.spine)
        per_rail = math.ceil(leaves / self.rails) if self._rail_optimized() else leaves
        if leaves <= spine_ports or (self._rail_optimized() and per_rail <= spine_ports):
            return 2
        if fabric.core is None:
            self.ctx.error(codes.TOO_FEW_TIERS, f"fabric '{self.name}': {leaves} leaves exceed two tiers of "
                           f"{fabric.spine} ({spine_ports} ports); a core model is needed", (*self.path, "core"))
            return None
        return 3

    def _rail_optimized(self) -> bool:
        return getattr(self.fabric, "topology", "fat-tree") == "rail-optimized" and self.rails > 1

    def _su_size(self) -> int:
        return getattr(self.fabric, "scalable_unit", None) or self.d_max

    def _leaf_count(self, endpoints: list[Endpoint]) -> int:
        if self._rail_optimized():
            su = self._su_size()
            full, rest = divmod(len(endpoints), su)
            per_su = math.ceil(su / self.d_max) * self.rails
            return full * per_su + (math.ceil(rest / self.d_max) * self.rails if rest else 0)
        return math.ceil(sum(len(e.ports) for e in endpoints) / self.d_max)

    def _tier_ports(self, tier: Tier, model: str) -> int:
        switch = self.ctx.switch(model)
        group = uplink_group(switch)
        assert group is not None
        reserved = getattr(self.fabric.reserved_ports, tier)
        return (group.count - reserved) * per_native(group, self.up_speed)

    # --- wiring -----------------------------------------------------------------------------------
    def _one_switch(self, leaf: Switch, group: PortGroup, endpoints: list[Endpoint],
                    managers: list[Endpoint]) -> None:
        switch = self._switch("leaf", self.fabric.leaf, group, self.fabric.reserved_ports.leaf)
        alloc = self.ctx.allocators[(switch.name, group.name)]
        for endpoint in endpoints:
            for rail, (port, speed) in enumerate(endpoint.ports, 1):
                self._node_link(endpoint, port, speed, switch, alloc.take_low(self.down_speed), rail)
        self._attach_managers(managers, tier="leaf")

    def _node_link(self, endpoint: Endpoint, port: str, speed: float, switch: Device, switch_port: str | None,
                   rail: int | None) -> None:
        if switch_port is None:
            self.ctx.error(codes.OUT_OF_PORTS, f"fabric '{self.name}': {switch.name} is out of ports", self.path,
                           OUT_OF_PORTS_HINT)
            return
        self.topo.add_link(Link(self.name, "node-leaf", endpoint.device.name, port, switch.name, switch_port,
                                min(speed, self.down_speed), rail))

    def _leaves(self, leaf: Switch, group: PortGroup, endpoints: list[Endpoint]) -> list[Device]:
        reserved = self.fabric.reserved_ports.leaf
        leaves: list[Device] = []
        if self._rail_optimized():
            su_size = self._su_size()
            per_leaf = min(self.d_max, su_size)
            by_key: dict[tuple[int, int, int], Device] = {}
            for j, endpoint in enumerate(endpoints):
                su, pos = divmod(j, su_size)
                endpoint.device.su = su + 1
                for rail, (port, speed) in enumerate(endpoint.ports, 1):
                    key = (su, pos // per_leaf, rail)
                    if key not in by_key:
                        by_key[key] = self._switch("leaf", self.fabric.leaf, group, reserved, rail=rail, su=su + 1)
                        leaves.append(by_key[key])
                    device = by_key[key]
                    alloc = self.ctx.allocators[(device.name, group.name)]
                    self._node_link(endpoint, port, speed, device, alloc.take_low(self.down_speed), rail)
            self.topo.fabrics[self.name].scalable_unit = su_size
            return leaves
        current: Device | None = None
        used = 0
        for endpoint in endpoints:
            for port, speed in endpoint.ports:
                if current is None or used >= self.d_max:
                    current = self._switch("leaf", self.fabric.leaf, group, reserved)
                    leaves.append(current)
                    used = 0
                alloc = self.ctx.allocators[(current.name, group.name)]
                self._node_link(endpoint, port, speed, current, alloc.take_low(self.down_speed), None)
                used += 1
        return leaves

    def _uplinks_for(self, downlinks: int) -> int:
        return max(1, math.ceil(downlinks * self.down_speed / (self.fabric.oversubscription * self.up_speed) - 1e-9))

    def _uplinks_per_leaf(self, leaves: list[Device]) -> int:
        return self._uplinks_for(max(self.topo.ports_used(leaf.name) for leaf in leaves))

    def _spine_groups(self, leaves: list[Device], capacity: int) -> list[list[Device]]:
        if len(leaves) <= capacity or not self._rail_optimized():
            return [leaves]
        return [[leaf for leaf in leaves if leaf.rail == rail] for rail in range(1, self.rails + 1)]

    def _two_tier(self, leaves: list[Device]) -> None:
        fabric = self.fabric
        assert fabric.spine is not None
        spine_model = self.ctx.switch(fabric.spine)
        spine_group = uplink_group(spine_model)
        assert spine_group is not None
        capacity = self._tier_ports("spine", fabric.spine)
        uplinks = self._uplinks_per_leaf(leaves)
        for plane, group in enumerate(self._spine_groups(leaves, capacity), 1):
            if len(group) > capacity:
                self.ctx.error(codes.TOO_FEW_TIERS,
                               f"fabric '{self.name}': {len(group)} leaves in a spine group exceed "
                               f"the {capacity} ports of {fabric.spine}", (*self.path, "tiers"), "use tiers: 3")
                return
            k = largest_divisor(uplinks, capacity // len(group))
            spines = [self._switch("spine", fabric.spine, spine_group, fabric.reserved_ports.spine, plane=plane)
                      for _ in range(uplinks // k)]
            self._mesh("leaf-spine", group, spines, k)

    def _mesh(self, tier: LinkTier, lows: list[Device], highs: list[Device], k: int) -> None:
        for low in lows:
            for high in highs:
                for _ in range(k):
                    if not self._connect(tier, low, high, self.up_speed, low.rail):
                        return

    def _three_tier(self, leaves: list[Device]) -> None:
        fabric = self.fabric
        assert fabric.spine is not None and fabric.core is not None
        spine_group = uplink_group(self.ctx.switch(fabric.spine))
        core_group = uplink_group(self.ctx.switch(fabric.core))
        assert spine_group is not None and core_group is not None
        spine_down = self._tier_ports("spine", fabric.spine) // 2
        core_ports = self._tier_ports("core", fabric.core)
        uplinks = self._uplinks_per_leaf(leaves)
        one_plane = math.ceil(len(leaves) / min(len(leaves), spine_down)) <= core_ports
        planes = ([[leaf for leaf in leaves if leaf.rail == rail] for rail in range(1, self.rails + 1)]
                  if self._rail_optimized() and not one_plane else [leaves])
        pod_number = 0
        for plane_index, plane in enumerate(planes, 1):
            pod_size = min(len(plane), spine_down)
            k1 = largest_divisor(uplinks, spine_down // pod_size)
            pods = [plane[i:i + pod_size] for i in range(0, len(plane), pod_size)]
            spine_up = pod_size * k1
            if len(pods) > core_ports:
                self.ctx.error(codes.TOO_FEW_TIERS, f"fabric '{self.name}': {len(pods)} pods exceed the {core_ports} "
                               f"ports of {fabric.core}", (*self.path, "core"))
                return
            k2 = largest_divisor(spine_up, core_ports // len(pods))
            core_groups = [[self._switch("core", fabric.core, core_group, fabric.reserved_ports.core,
                                         plane=plane_index) for _ in range(spine_up // k2)]
                           for _ in range(uplinks // k1)]
            for pod in pods:
                pod_number += 1
                spines = [self._switch("spine", fabric.spine, spine_group, fabric.reserved_ports.spine,
                                       plane=plane_index, pod=pod_number) for _ in range(uplinks // k1)]
                for leaf in pod:
                    leaf.pod = pod_number
                self._mesh("leaf-spine", pod, spines, k1)
                for position, spine in enumerate(spines):
                    self._mesh("spine-core", [spine], core_groups[position], k2)

    def _attach_managers(self, managers: list[Endpoint], tier: Tier | None = None) -> None:
        if not managers:
            return
        reserved = self.fabric.reserved_ports
        tier = tier or ("spine" if reserved.spine else "leaf")
        switches = self.topo.switches(self.name, tier)
        ports = [(m, port, speed) for m in managers for port, speed in m.ports]
        for i, (manager, port, speed) in enumerate(ports):
            switch = switches[i % len(switches)]
            switch_port = self._alloc(switch, up=tier != "leaf").take_reserved()
            if switch_port is None:
                self.ctx.error(codes.MANAGER_WITHOUT_PORT,
                               f"fabric '{self.name}': fabric manager {manager.device.name} needs a "
                               f"reserved port on a {tier} switch, none is free", (*self.path, "reserved_ports"),
                               f"set reserved_ports.{tier} to at least {math.ceil(len(ports) / len(switches))}")
                return
            self.topo.add_link(Link(self.name, "node-leaf", manager.device.name, port, switch.name, switch_port,
                                    min(speed, self.up_speed if tier != "leaf" else self.down_speed)))


def build_fabrics(ctx: ExpandContext) -> None:
    for name, fabric in ctx.bp.fabrics.items():
        if isinstance(fabric, LeafSpineFabric):
            LeafSpineBuilder(ctx, name, fabric).build()
            place_switches(ctx, name, fabric.switch_racks)


def _oob_headroom(ctx: ExpandContext) -> int:
    """U to leave free in every rack for its own out-of-band switch."""
    return max((ctx.switch(f.switch).u_height for f in ctx.bp.fabrics.values()
                if isinstance(f, OobFabric) and f.per == "rack"), default=0)


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
            ctx.error(codes.SWITCHES_DO_NOT_FIT, f"fabric '{fabric}': {need} U of switches do not fit in racks "
                      f"{', '.join(rack_names) or '(none)'} (space, or 90% of power and cooling)",
                      ("fabrics", fabric, "switch_racks"), "add racks to switch_racks")
            return
