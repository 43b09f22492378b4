"""Leaf budget and tier count of a leaf/spine fabric, before any switch exists.

A leaf whose downlinks run at s and uplinks at S, at oversubscription r (down:up), serves d downlinks and
u = ceil(d*s / (r*S)) uplinks, with d*cost(s) + u <= usable ports, where cost(s) is the share of a native
port one downlink books (1/4 for a 200G breakout of an 800G port; see `ports.native_share`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ... import codes
from ...catalog import PortGroup, Switch
from ...errors import DataPath
from ...model.fabric import LeafSpineFabric
from ..context import ExpandContext
from ..ports import natives_for, per_native, uplink_group
from ..topology import Tier
from .endpoints import Endpoint
from .leaves import rail_slots
from .spread import uplinks_for

PEER_LINKS = 2
"""Links of an MLAG pair's peer link bond: NVIDIA Cumulus Linux's MLAG guide bonds at least two ports
into the peerlink, so one failed link or optic does not split the pair."""


def peer_ports(fabric: LeafSpineFabric) -> int:
    """Uplink-group ports each leaf gives to its MLAG peer link."""
    return PEER_LINKS if fabric.dual_homing == "mlag" else 0


def leaf_sides(endpoints: list[Endpoint], paired: bool) -> int:
    """Ports the busiest leaf needs when every endpoint fits one leaf (or one pair: members alternate
    between the two leaves, the first leaf takes the odd ones)."""
    if not paired:
        return sum(len(e.ports) for e in endpoints)
    return sum((len(e.ports) + 1) // 2 for e in endpoints)


@dataclass
class Sizing:
    down_speed: float
    up_speed: float
    d_max: int
    """Most downlinks one leaf takes at the oversubscription target."""
    rails: int
    rail_optimized: bool
    su_size: int
    """Nodes per scalable unit (rail-optimized) or 0."""
    per_rack: bool = False
    """Rail-optimized: a leaf per rack and rail in each scalable unit (`rail_leaves: per-rack`)."""
    rack_size: int = 0
    """With a leaf per rack: the nodes a rack's leaf is planned for (an NVLink domain's, else 1: the rack's)."""
    rail_groups: bool = False
    """Three tiers: spines shared by the leaves of one rail in one scalable unit (`spine_groups: rail-groups`)."""

    @property
    def per_leaf(self) -> int:
        """Nodes (rail-optimized) or ports (fat-tree) one leaf serves."""
        return min(self.d_max, self.su_size) if self.rail_optimized and not self.per_rack else self.d_max


def leaf_budget(
    ctx: ExpandContext, fabric: LeafSpineFabric, leaf: Switch, group: PortGroup, down_speed: float
) -> tuple[int, float]:
    """(max downlinks per leaf, uplink speed) for the leaf model at the oversubscription target."""
    spine = ctx.switch(fabric.spine) if fabric.spine else None
    up_group = uplink_group(leaf)
    assert up_group is not None
    spine_group = uplink_group(spine) if spine else None
    up_speed = min(up_group.speed_gbps, spine_group.speed_gbps if spine_group else up_group.speed_gbps)
    ratio = fabric.oversubscription
    if up_group.name == group.name:
        usable = group.count - reserved_per_switch(fabric, "leaf") - peer_ports(fabric)
        split = per_native(group, down_speed)
        d_max = math.floor(usable / (1 / split + down_speed / (ratio * up_speed)) + 1e-9)
        # whole native ports: a half-used breakout port still takes a cage (and its disabled neighbour)
        while (
            d_max > 1
            and natives_for(group, down_speed, d_max) + uplinks_for(d_max, down_speed, up_speed, ratio) > usable
        ):
            d_max -= 1
    else:
        d_max = min(
            group.ports_at(down_speed) or group.count,
            math.floor((up_group.count - peer_ports(fabric)) * up_speed * ratio / down_speed),
        )
    return max(d_max, 1), up_speed


def reserved_per_switch(fabric: LeafSpineFabric, tier: Tier) -> int:
    """Ports a switch of `tier` keeps free: the tier's count plus the most any switch of it is named with
    (every switch of the tier is sized alike, so the named one still fits)."""
    named = [n for name, n in fabric.reserved_ports.switches.items() if name.rstrip("0123456789").endswith(f"-{tier}")]
    return int(getattr(fabric.reserved_ports, tier)) + max(named, default=0)


def tier_ports(ctx: ExpandContext, fabric: LeafSpineFabric, tier: Tier, model: str, up_speed: float) -> int:
    """Usable ports of an upper-tier switch model (reserved ports left out)."""
    group = uplink_group(ctx.switch(model))
    assert group is not None
    return (group.count - reserved_per_switch(fabric, tier)) * per_native(group, up_speed)


def leaf_count(sizing: Sizing, fabric: LeafSpineFabric, endpoints: list[Endpoint]) -> int:
    if sizing.per_rack:
        racks = Counter((su, rack) for su, rack, _ in rail_slots(endpoints, sizing.su_size, True))
        return sum(math.ceil(n / sizing.d_max) for n in racks.values()) * sizing.rails
    if sizing.rail_optimized:
        full, rest = divmod(len(endpoints), sizing.su_size)
        per_su = math.ceil(sizing.su_size / sizing.d_max) * sizing.rails
        return full * per_su + (math.ceil(rest / sizing.d_max) * sizing.rails if rest else 0)
    if fabric.paired:
        return 2 * math.ceil(leaf_sides(endpoints, True) / sizing.d_max)
    return math.ceil(sum(len(e.ports) for e in endpoints) / sizing.d_max)


def planes_needed(sizing: Sizing, fabric: LeafSpineFabric, leaves: int, capacity: int) -> int | None:
    """1 when `leaves` fit one group of `capacity`; the rail count when the blueprint allows per-rail
    planes and a rail's leaves fit; None when neither holds."""
    if leaves <= capacity:
        return 1
    if fabric.planes == "per-rail" and sizing.rail_optimized and math.ceil(leaves / sizing.rails) <= capacity:
        return sizing.rails
    return None


def decide_tiers(
    ctx: ExpandContext, name: str, fabric: LeafSpineFabric, sizing: Sizing, endpoints: list[Endpoint], single: int
) -> int | None:
    """1, 2 or 3 tiers; `auto` takes the fewest that keep the fabric one connected plane (or per-rail
    planes, when asked for). None after reporting an error."""
    path: DataPath = ("fabrics", name)
    total = leaf_sides(endpoints, fabric.paired)
    one_tier_allowed = fabric.dual_homing != "evpn-mh"  # EVPN-MH runs its EVPN sessions over a spine tier
    if fabric.tiers == 1 or (fabric.tiers == "auto" and total <= single and one_tier_allowed):
        if total > single:
            ctx.error(
                codes.TOO_FEW_TIERS,
                f"fabric '{name}': one {fabric.leaf} holds {single} ports, {total} are needed",
                (*path, "tiers"),
                "use tiers: auto, 2 or 3",
            )
            return None
        return 1
    if fabric.spine is None:
        ctx.error(
            codes.TOO_FEW_TIERS,
            f"fabric '{name}': {total} ports need more than one switch, and no spine model is given",
            (*path, "spine"),
        )
        return None
    if fabric.tiers in (2, 3):
        return int(fabric.tiers)
    leaves = leaf_count(sizing, fabric, endpoints)
    spine_ports = tier_ports(ctx, fabric, "spine", fabric.spine, sizing.up_speed)
    if planes_needed(sizing, fabric, leaves, spine_ports) is not None:
        return 2
    if fabric.core is None:
        ctx.error(
            codes.TOO_FEW_TIERS,
            f"fabric '{name}': {leaves} leaves exceed one spine group of {fabric.spine} "
            f"({spine_ports} ports); a core model is needed",
            (*path, "core"),
            "set core, or planes: per-rail for separate rail planes",
        )
        return None
    return 3
