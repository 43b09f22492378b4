"""One leaf/spine fabric from its blueprint entry: size it, then wire leaves, upper tiers and subnet managers."""

from __future__ import annotations

import math

from ... import codes
from ...catalog import PortGroup, Switch
from ...errors import DataPath
from ...model.fabric import LeafSpineFabric
from ..context import ExpandContext
from ..ports import NO_DATA_PORTS_HINT, downlink_group, links_on, uplink_group
from ..topology import TIERS, Device, FabricSummary
from .endpoints import Endpoint, endpoints_for, split_managers
from .leaves import LeafTier, paired_leaves, place_managers, rail_leaves, tree_leaves
from .sizing import Sizing, decide_tiers, leaf_budget, peer_ports, planes_needed, tier_ports
from .spread import uplinks_for
from .upper import rail_planes, three_tier, two_tier
from .wiring import FabricWiring

MANAGER_HINT = (
    "leave one node out of a scalable unit so the manager takes its leaf ports, as the DGX SuperPOD "
    "reference does, or set reserved_ports"
)


class LeafSpineBuilder:
    def __init__(self, ctx: ExpandContext, name: str, fabric: LeafSpineFabric) -> None:
        self.ctx, self.name, self.fabric = ctx, name, fabric
        self.path: DataPath = ("fabrics", name)

    def build(self) -> None:
        ctx, fabric = self.ctx, self.fabric
        nodes, managers = split_managers(fabric, endpoints_for(ctx, self.name, fabric))
        summary = FabricSummary(
            self.name,
            fabric.kind,
            fabric.technology,
            getattr(fabric, "topology", "fat-tree"),
            0,
            oversubscription_target=fabric.oversubscription,
            uplinks_for=fabric.uplinks_for,
            dual_homing=fabric.dual_homing,
            rail_addressing=getattr(fabric, "rail_addressing", "per-rail"),
            lossless_roce=fabric.kind == "compute"
            and fabric.technology == "ethernet"
            and getattr(getattr(fabric, "roce", None), "qos", None) is not None,
        )
        ctx.topo.fabrics[self.name] = summary
        if not nodes:
            ctx.warning(codes.FABRIC_WITHOUT_NODES, f"fabric '{self.name}' has no nodes attached", self.path)
            return
        leaf = ctx.switch(fabric.leaf)
        node_speed = max(speed for e in nodes for _, speed in e.ports)
        group = downlink_group(leaf, node_speed)
        if group is None:
            ctx.error(
                codes.NO_DATA_PORTS,
                f"fabric '{self.name}': leaf switch {fabric.leaf} has no data ports",
                (*self.path, "leaf"),
                NO_DATA_PORTS_HINT,
            )
            return
        sizing = self._sizing(leaf, group, node_speed, nodes)
        summary.nodes = len(nodes) + len(managers)
        summary.endpoints = sum(len(e.ports) for e in nodes + managers)
        summary.rails = sizing.rails if summary.topology == "rail-optimized" else 0
        summary.models = {"leaf": fabric.leaf}
        peer = peer_ports(fabric) if uplink_group(leaf) == group else 0
        single = links_on(group, sizing.down_speed, group.count - fabric.reserved_ports.leaf - peer)
        tiers = decide_tiers(ctx, self.name, fabric, sizing, nodes, single)
        if tiers is None:
            return
        summary.tiers = tiers
        wiring = FabricWiring(ctx, self.name, fabric, sizing.down_speed, sizing.up_speed)
        if tiers == 1:
            leaves = self._leaves(wiring, nodes, single, numbered=True)
            place_managers(wiring, leaves, managers)
            self._reserved_managers(wiring, leaves)
            return
        self._multi_tier(wiring, sizing, tiers, nodes, managers)

    def _sizing(self, leaf: Switch, group: PortGroup, node_speed: float, nodes: list[Endpoint]) -> Sizing:
        fabric = self.fabric
        down_speed = min(node_speed, group.speed_gbps)
        if down_speed < node_speed:
            self.ctx.warning(
                codes.NIC_FASTER_THAN_LEAF,
                f"fabric '{self.name}': {node_speed:g}G node ports run at {down_speed:g}G on {fabric.leaf}",
                (*self.path, "leaf"),
                "pick a leaf switch with ports at the NICs' speed",
            )
        d_max, up_speed = leaf_budget(self.ctx, fabric, leaf, group, down_speed)
        rails = max(len(e.ports) for e in nodes)
        rail_optimized = getattr(fabric, "topology", "fat-tree") == "rail-optimized" and rails > 1
        su_size = (getattr(fabric, "scalable_unit", None) or d_max) if rail_optimized else 0
        return Sizing(down_speed, up_speed, d_max, rails, rail_optimized, su_size)

    def _multi_tier(
        self, wiring: FabricWiring, sizing: Sizing, tiers: int, nodes: list[Endpoint], managers: list[Endpoint]
    ) -> None:
        ctx, fabric, summary = self.ctx, self.fabric, self.ctx.topo.fabrics[self.name]
        if sizing.rail_optimized:
            if sizing.su_size > sizing.d_max:
                self._su_split_warning(sizing)
            leaves = rail_leaves(wiring, nodes, sizing.su_size, sizing.per_leaf, sizing.rails)
            summary.scalable_unit = sizing.su_size
        else:
            leaves = self._leaves(wiring, nodes, sizing.per_leaf)
        place_managers(wiring, leaves, managers)
        if ctx.failed:
            return
        uplinks = {
            leaf.name: uplinks_for(
                self._sized_for(leaf, leaves), sizing.down_speed, sizing.up_speed, fabric.oversubscription
            )
            for leaf in leaves.leaves
        }
        assert fabric.spine is not None
        summary.models["spine"] = fabric.spine
        spine_ports = tier_ports(ctx, fabric, "spine", fabric.spine, sizing.up_speed)
        if tiers == 2:
            planes = self._planes(sizing, leaves.leaves, spine_ports, "one spine group", "tiers: 3")
            if planes is None:
                return
            two_tier(wiring, planes, uplinks, spine_ports)
        else:
            assert fabric.core is not None
            summary.models["core"] = fabric.core
            core_ports = tier_ports(ctx, fabric, "core", fabric.core, sizing.up_speed)
            pod_size = min(len(leaves.leaves), spine_ports // 2)
            planes = self._planes(
                sizing,
                leaves.leaves,
                core_ports * pod_size,
                "the pods one core group reaches",
                "a core model with more ports",
            )
            if planes is None:
                return
            three_tier(wiring, planes, uplinks, spine_ports, core_ports)
        summary.planes = len(planes)
        self._reserved_managers(wiring, leaves)

    def _leaves(self, wiring: FabricWiring, nodes: list[Endpoint], per_leaf: int, numbered: bool = False) -> LeafTier:
        """Fat-tree leaves: one after another, or in pairs with every node dual-homed to one pair."""
        if self.fabric.paired:
            return paired_leaves(wiring, nodes, per_leaf, numbered, peer_ports(self.fabric))
        return tree_leaves(wiring, nodes, per_leaf, numbered)

    def _sized_for(self, leaf: Device, leaves: LeafTier) -> int:
        """Downlinks a leaf's uplinks are sized for: as planned, or the ports in use."""
        if self.fabric.uplinks_for == "planned":
            return leaves.planned[leaf.name]
        return self.ctx.topo.ports_used(leaf.name)

    def _planes(
        self, sizing: Sizing, leaves: list[Device], capacity: int, what: str, fix: str
    ) -> list[list[Device]] | None:
        count = planes_needed(sizing, self.fabric, len(leaves), capacity)
        if count == 1:
            return [leaves]
        if count is not None:
            return rail_planes(leaves, sizing.rails)
        self.ctx.error(
            codes.TOO_FEW_TIERS,
            f"fabric '{self.name}': {len(leaves)} leaves exceed {what} ({capacity} leaves)",
            (*self.path, "tiers"),
            f"use {fix}, or planes: per-rail for separate rail planes",
        )
        return None

    def _su_split_warning(self, sizing: Sizing) -> None:
        per_rail = math.ceil(sizing.su_size / sizing.d_max)
        self.ctx.warning(
            codes.SCALABLE_UNIT_SPLIT,
            f"fabric '{self.name}': a scalable unit of {sizing.su_size} "
            f"nodes is split over {per_rail} leaves per rail, since a {self.fabric.leaf} leaf takes "
            f"{sizing.d_max} nodes at {self.fabric.oversubscription:g}:1 with its reserved ports",
            (*self.path, "scalable_unit"),
            f"set scalable_unit to {sizing.d_max} or fewer, or reserve no leaf ports: a subnet manager "
            "takes the leaf ports of a node left out",
        )

    def _reserved_managers(self, wiring: FabricWiring, leaves: LeafTier) -> None:
        """Subnet manager ports that found no free node slot go to reserved ports, switch by switch in turn."""
        if not leaves.unplaced:
            return
        topo = self.ctx.topo
        order = ("spine", "leaf", "core") if self.fabric.reserved_ports.spine else TIERS
        switches = [s for tier in order for s in topo.switches(self.name, tier) if wiring.reserved(tier, s.name)]
        turn = 0
        for manager, port, speed in leaves.unplaced:
            placed = False
            for step in range(len(switches)):
                switch = switches[(turn + step) % len(switches)]
                if wiring.reserved_link(manager.device, port, speed, switch):
                    turn += step + 1
                    placed = True
                    break
            if not placed:
                self.ctx.error(
                    codes.MANAGER_WITHOUT_PORT,
                    f"fabric '{self.name}': subnet manager "
                    f"{manager.device.name} finds no free node slot on a leaf and no free reserved port",
                    (*self.path, "reserved_ports"),
                    MANAGER_HINT,
                )
                return
