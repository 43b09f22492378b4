"""The leaf tier: nodes onto leaves, subnet managers into the slots nodes leave free, and what each
leaf is planned to carry (the figure its uplinks are sized for).

Rail-optimized: node j of the fabric sits in slot j mod SU of scalable unit j div SU; its port for rail k
goes to the SU's leaf for rail k, or, with leaves per rack (GB200 NVL72), to the leaf for rail k of its rack
in the SU. A subnet manager takes a free slot of the last SU, as the DGX SuperPOD reference places its UFM
where a node is left out: its ports go to that slot's rail leaves in turn.
Fat-tree: the ports fill leaves in order; subnet managers take what the last leaf has left.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from ..topology import Device
from .endpoints import Endpoint
from .wiring import FabricWiring


@dataclass
class LeafTier:
    leaves: list[Device] = field(default_factory=list)
    planned: dict[str, int] = field(default_factory=dict)
    """Leaf name -> downlinks it is planned for: a full scalable unit, or a full leaf."""
    free: list[tuple[Device, int | None]] = field(default_factory=list)
    """(leaf, rail) positions left free by absent nodes, in the order subnet managers take them."""
    unplaced: list[tuple[Endpoint, str, float]] = field(default_factory=list)
    """Subnet manager ports that found no free position."""
    spare: list[tuple[Device, int | None]] = field(default_factory=list)
    """(leaf, rail) ports a leaf has beyond the downlinks it is planned for, last unit first, rails in turn:
    where a subnet manager goes when no node slot is free and no port is reserved (a GB200 NVL72 rack's
    leaf is planned for its 18 trays and has ports to spare)."""


def rail_slots(endpoints: list[Endpoint], su_size: int, per_rack: bool) -> list[tuple[int, int, int]]:
    """(scalable unit, rack ordinal in the unit, slot) of each endpoint: the slot runs over the unit, or
    over the endpoint's rack in the unit when leaves are per rack."""
    slots = []
    ordinals: dict[tuple[int, str | None], int] = {}
    used: dict[tuple[int, int], int] = {}
    racks = _racks_with_stand_ins(endpoints) if per_rack else []
    for j in range(len(endpoints)):
        su, pos = divmod(j, su_size)
        if not per_rack:
            slots.append((su, 0, pos))
            continue
        rack = ordinals.setdefault((su, racks[j]), sum(1 for s, _ in ordinals if s == su))
        slot = used.get((su, rack), 0)
        used[(su, rack)] = slot + 1
        slots.append((su, rack, slot))
    return slots


def _racks_with_stand_ins(endpoints: list[Endpoint]) -> list[str | None]:
    """Each endpoint's rack; a removed device's stand-in (no rack) counts in the rack of the device before it
    in the lock's order (after it when it comes first), so the leaves of the racks around it stay as they were."""
    racks = [e.device.rack for e in endpoints]
    known = [r for r in racks if r is not None]
    last = known[0] if known else None
    for j, rack in enumerate(racks):
        if rack is None:
            racks[j] = last
        else:
            last = rack
    return racks


def rail_leaves(
    wiring: FabricWiring,
    endpoints: list[Endpoint],
    su_size: int,
    per_leaf: int,
    rails: int,
    rack_size: int = 0,
) -> LeafTier:
    """`rack_size` > 0: a leaf per rack and rail (split every `per_leaf` nodes), each planned for
    `rack_size` nodes (an NVLink domain's) or the nodes its rack holds, whichever is more."""
    tier = LeafTier()
    by_key: dict[tuple[int, int, int, int], Device] = {}
    slots = rail_slots(endpoints, su_size, rack_size > 0)
    unit = dict.fromkeys(((su, rack) for su, rack, _ in slots), 0)
    for su, rack, slot in slots:
        unit[(su, rack)] = max(unit[(su, rack)], slot + 1, rack_size or su_size)

    def leaf(su: int, rack: int, part: int, rail: int) -> Device:
        key = (su, rack, part, rail)
        if key not in by_key:
            device = by_key[key] = wiring.switch("leaf", wiring.fabric.leaf, rail=rail, su=su + 1)
            tier.leaves.append(device)
            tier.planned[device.name] = min(per_leaf, unit[(su, rack)] - part * per_leaf)
        return by_key[key]

    for endpoint, (su, rack, slot) in zip(endpoints, slots, strict=True):
        endpoint.device.su = su + 1
        for rail, (port, speed) in enumerate(endpoint.ports, 1):
            if not wiring.node_link(endpoint.device, port, speed, leaf(su, rack, slot // per_leaf, rail), rail):
                return tier
    present = Counter((su, rack) for su, rack, _ in slots)
    for (su, rack), size in unit.items():
        for slot in range(present[(su, rack)], size):
            tier.free += [
                (by_key[key], rail)
                for rail in range(1, rails + 1)
                if (key := (su, rack, slot // per_leaf, rail)) in by_key
            ]
    parts: dict[tuple[int, int, int], list[Device]] = {}
    for (su, rack, part, _), device in by_key.items():
        parts.setdefault((su, rack, part), []).append(device)
    for part_leaves in reversed(list(parts.values())):
        room = per_leaf - tier.planned[part_leaves[0].name]
        tier.spare += [(leaf, leaf.rail) for _ in range(room) for leaf in part_leaves]
    return tier


def tree_leaves(wiring: FabricWiring, endpoints: list[Endpoint], per_leaf: int, numbered: bool = False) -> LeafTier:
    """`numbered`: links carry the node port's position as their rail (one switch serves every rail)."""
    tier = LeafTier()
    current: Device | None = None
    used = 0
    for endpoint in endpoints:
        for position, (port, speed) in enumerate(endpoint.ports, 1):
            if current is None or used >= per_leaf:
                current = wiring.switch("leaf", wiring.fabric.leaf)
                tier.leaves.append(current)
                tier.planned[current.name] = per_leaf
                used = 0
            if not wiring.node_link(endpoint.device, port, speed, current, position if numbered else None):
                return tier
            used += 1
    if current is not None:
        tier.free = [(current, None)] * (per_leaf - used)
    return tier


def paired_leaves(
    wiring: FabricWiring, endpoints: list[Endpoint], per_leaf: int, numbered: bool, peer_links: int
) -> LeafTier:
    """Leaves in pairs (MLAG or EVPN multihoming): a node's ports alternate between the pair's two leaves
    (its first port to the first leaf), so each bond has a member on each; a pair takes nodes until one of
    its leaves is full. An MLAG pair is joined by `peer_links` links from the top of its uplink ports."""
    tier = LeafTier()
    pair: tuple[Device, Device] | None = None
    used = [0, 0]
    for endpoint in endpoints:
        sides = [list(enumerate(endpoint.ports, 1))[side::2] for side in (0, 1)]
        if endpoint.leaf is not None and len(endpoint.ports) == 1 and _second_of_pair(endpoint.leaf):
            sides.reverse()  # a stand-in for one port the lock holds on the pair's second leaf
        if pair is None or any(used[side] + len(sides[side]) > per_leaf for side in (0, 1)):
            number = len(tier.leaves) // 2 + 1
            pair = (
                wiring.switch("leaf", wiring.fabric.leaf, pair=number),
                wiring.switch("leaf", wiring.fabric.leaf, pair=number),
            )
            tier.leaves += pair
            tier.planned.update({leaf.name: per_leaf for leaf in pair})
            used = [0, 0]
            if not wiring.peer_links(*pair, peer_links):
                return tier
        for side in (0, 1):
            for position, (port, speed) in sides[side]:
                if not wiring.node_link(endpoint.device, port, speed, pair[side], position if numbered else None):
                    return tier
            used[side] += len(sides[side])
    if pair is not None:
        free: list[tuple[Device, int | None]] = [(pair[0], None)] * (per_leaf - used[0])
        tier.free = free + [(pair[1], None)] * (per_leaf - used[1])
    return tier


def _second_of_pair(leaf: str) -> bool:
    """Whether a paired leaf ('inband-leaf004') is its pair's second: pairs are numbered 1-2, 3-4, ..."""
    digits = leaf[len(leaf.rstrip("0123456789")) :]
    return bool(digits) and int(digits) % 2 == 0


def place_managers(wiring: FabricWiring, tier: LeafTier, managers: list[Endpoint]) -> None:
    """Subnet manager ports into the free leaf positions; the rest are left in `tier.unplaced`."""
    ports = [(m, port, speed) for m in managers for port, speed in m.ports]
    free = iter(tier.free)
    for manager, port, speed in ports:
        position = next(free, None)
        if position is None:
            tier.unplaced.append((manager, port, speed))
            continue
        leaf, rail = position
        wiring.node_link(manager.device, port, speed, leaf, rail)
