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
from .endpoints import HOLE_ROLE, Endpoint, endpoints_for, split_managers
from .kept_managers import Kept, keep_manager_slots, wire_kept_managers
from .leaves import LeafTier, paired_leaves, place_managers, rail_leaves, tree_leaves
from .sizing import Sizing, decide_tiers, leaf_budget, peer_ports, planes_needed, tier_ports
from .spread import uplinks_for
from .upper import pods_of, rail_planes, three_tier, two_tier
from .wiring import FabricWiring

RA_SU_RACKS = 8
"""NVLink domains (racks) in a scalable unit of the DGX SuperPOD GB200 RA (8 DGX GB200 racks per SU)."""

MANAGER_HINT = (
    "leave one node out of a scalable unit so the manager takes its leaf ports, as the DGX SuperPOD "
    "reference does, or set reserved_ports"
)


def _in_turn(
    wiring: FabricWiring, switches: list[Device], turns: list[int], which: int, end: tuple[Device, str, float]
) -> bool:
    """A subnet manager port on the first of `switches` from `turns[which]` on with a port for it: a reserved
    one (which 0) or one left free (which 1); the turn moves past that switch."""
    for step in range(len(switches)):
        if wiring.reserved_link(*end, switches[(turns[which] + step) % len(switches)], reserved=which == 0):
            turns[which] += step + 1
            return True
    return False


def rack_scale_domain(ctx: ExpandContext, nodes: list[Endpoint]) -> int:
    """Nodes in one NVLink domain when the fabric's nodes are rack-scale systems (a domain of several
    nodes, as GB200 NVL72's 18 trays), else 0."""
    sizes = set()
    for model in {e.device.model for e in nodes if e.device.role != HOLE_ROLE}:
        gpus = ctx.server(model).gpus
        sizes.add(gpus.nvlink_domain // gpus.count if gpus and gpus.nvlink_domain > gpus.count else 0)
    return max(sizes) if sizes and min(sizes) > 0 else 0


class LeafSpineBuilder:
    def __init__(self, ctx: ExpandContext, name: str, fabric: LeafSpineFabric) -> None:
        self.ctx, self.name, self.fabric = ctx, name, fabric
        self.path: DataPath = ("fabrics", name)

    def build(self) -> None:
        ctx, fabric = self.ctx, self.fabric
        ordered = endpoints_for(ctx, self.name, fabric)
        nodes, managers = split_managers(fabric, ordered)
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
        present = [e for e in nodes + managers if e.device.role != HOLE_ROLE]
        summary.nodes = len(present)
        summary.endpoints = sum(len(e.ports) for e in present)
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
        self._multi_tier(wiring, sizing, tiers, nodes, managers, ordered)

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
        domain = rack_scale_domain(self.ctx, nodes)
        default_su = RA_SU_RACKS * domain if domain else d_max
        su_size = (getattr(fabric, "scalable_unit", None) or default_su) if rail_optimized else 0
        per_rack = (getattr(fabric, "rail_leaves", None) or ("per-rack" if domain else "")) == "per-rack"
        rail_groups = (getattr(fabric, "spine_groups", None) or ("rail-groups" if domain else "")) == "rail-groups"
        sizing = Sizing(down_speed, up_speed, d_max, rails, rail_optimized, su_size)
        sizing.per_rack, sizing.rail_groups = per_rack and rail_optimized, rail_groups and rail_optimized
        sizing.rack_size = (domain or 1) if sizing.per_rack else 0
        return sizing

    def _multi_tier(
        self,
        wiring: FabricWiring,
        sizing: Sizing,
        tiers: int,
        nodes: list[Endpoint],
        managers: list[Endpoint],
        ordered: list[Endpoint],
    ) -> None:
        """`ordered`: the nodes and managers in the lock's order (kept_managers.py)."""
        ctx, fabric, summary = self.ctx, self.fabric, self.ctx.topo.fabrics[self.name]
        if sizing.rail_optimized:
            if sizing.su_size > sizing.d_max and not sizing.per_rack:
                self._su_split_warning(sizing)
            kept: Kept = []
            if not sizing.per_rack:
                nodes, kept = keep_manager_slots(
                    ctx, self.name, nodes, ordered, managers, (sizing.su_size, sizing.rails)
                )
            leaves = rail_leaves(wiring, nodes, sizing.su_size, sizing.per_leaf, sizing.rails, sizing.rack_size)
            managers = wire_kept_managers(wiring, kept, managers) if kept else managers
            summary.scalable_unit = sizing.su_size
            summary.rail_leaves = "per-rack" if sizing.per_rack else "per-scalable-unit"
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
            pod_size = max(len(pod) for pod in pods_of(leaves.leaves, spine_ports // 2, sizing.rail_groups))
            planes = self._planes(
                sizing,
                leaves.leaves,
                core_ports * pod_size,
                "the pods one core group reaches",
                "a core model with more ports",
            )
            if planes is None:
                return
            three_tier(wiring, planes, uplinks, spine_ports, core_ports, sizing.rail_groups)
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
        """Subnet manager ports that found no free node slot go to reserved ports, switch by switch in turn;
        then to ports the top tier left free (the spines of 3 SU use 48 of 64; a top-tier switch has no uplinks
        to oversubscribe); then to a leaf's spare ports (beyond what its uplinks are sized for)."""
        if not leaves.unplaced:
            return
        topo = self.ctx.topo
        order = ("spine", "leaf", "core") if self.fabric.reserved_ports.spine else TIERS
        switches = [s for tier in order for s in topo.switches(self.name, tier) if wiring.reserved(tier, s.name)]
        top = next(tier for tier in reversed(TIERS) if topo.switches(self.name, tier))
        tops = topo.switches(self.name, top) if top != "leaf" else []
        turns = [0, 0]
        spare = iter(leaves.spare)
        for manager, port, speed in leaves.unplaced:
            end = (manager.device, port, speed)
            placed = _in_turn(wiring, switches, turns, 0, end) or _in_turn(wiring, tops, turns, 1, end)
            if not placed and (position := next(spare, None)) is not None:
                placed = wiring.node_link(*end, *position)
            if not placed:
                self.ctx.error(
                    codes.MANAGER_WITHOUT_PORT,
                    f"fabric '{self.name}': subnet manager "
                    f"{manager.device.name} finds no free node slot on a leaf and no free reserved port",
                    (*self.path, "reserved_ports"),
                    MANAGER_HINT,
                )
                return
