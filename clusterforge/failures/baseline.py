"""What a single-failure analysis reads over and over, worked out once from the expanded topology: each
fabric's switch graph (plain adjacency, as `Topology` keeps it), the node ports per leaf, the capacity of each
switch level, the GPUs and planned draw of every device, and who feeds and cools what.

Plain dicts and lists, no networkx: `clusterforge.graph` builds the same switch graph in networkx for export
and for the tests that check these numbers against networkx's min-cut and component functions.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field

from ..catalog import Server
from ..catalog.models import Device as CatalogDevice
from ..catalog.models import Equipment
from ..checks.figures import RackFigures, catalog_device, planned_w, rack_figures
from ..expand.topology import Device, Link, Topology
from ..validate import ValidBlueprint

SWITCH_LINK_TIERS = ("leaf-peer", "leaf-spine", "spine-core")
LEVELS = ("leaf-spine", "spine-core")
"""The switch levels whose capacity the bisection is the least of (leaf-peer links carry no traffic up)."""


@dataclass
class FabricBase:
    """One leaf/spine network, intact."""

    name: str
    technology: str
    kind: str
    tiers: int
    switches: dict[str, str]
    """Switch -> tier (leaf, spine, core)."""
    neighbours: dict[str, list[tuple[str, int]]]
    """Switch -> (neighbour switch, link index) over switch-to-switch links."""
    node_ports: dict[str, list[int]]
    """Node -> indexes of its node-leaf links on this fabric."""
    level_gbps: dict[str, float]
    """Capacity of each switch level (leaf-spine, spine-core), Gb/s."""
    leaf_ports: dict[str, int] = field(default_factory=dict)
    """Leaf -> node ports on it."""
    leaf_nodes: dict[str, list[str]] = field(default_factory=dict)
    """Leaf -> the nodes with a port on it (once each)."""
    component: dict[str, int] = field(default_factory=dict)
    """Switch -> number of its connected group (an InfiniBand subnet each), intact."""
    subnet_managers: list[str] = field(default_factory=list)

    spine_down: dict[str, float] = field(default_factory=dict)
    """Three tiers: spine -> Gb/s of its links to leaves."""
    spine_up: dict[str, float] = field(default_factory=dict)
    """Three tiers: spine -> Gb/s of its links to cores."""

    bisection_gbps: float = 0.0
    """The switch bisection, intact (`bisection_after` with nothing lost)."""

    def bisection_after(self, down_lost: dict[str, float], up_lost: dict[str, float], dead: set[str]) -> float:
        """The switch bisection with the spines' lost capacity (`down_lost` to leaves, `up_lost` to cores) and
        `dead` spines: the least capacity that separates the leaves from the top tier, halved. Two tiers: every
        leaf-spine link. Three tiers: each spine carries the less of what comes up to it and what it sends up,
        so the cut is the sum over spines of min(down, up) (`clusterforge.graph.bisection_gbps` finds the same
        with networkx's minimum cut); worked out from the intact sum, spine by spine changed."""
        if not self.spine_up:
            return max(self.level_gbps.get("leaf-spine", 0.0) - sum(down_lost.values()), 0.0) / 2
        total = self.bisection_gbps * 2
        for spine in {*down_lost, *up_lost, *(d for d in dead if d in self.spine_down)}:
            down, up = self.spine_down.get(spine, 0.0), self.spine_up.get(spine, 0.0)
            left = min(down - down_lost.get(spine, 0.0), up - up_lost.get(spine, 0.0))
            total += (0.0 if spine in dead else max(left, 0.0)) - min(down, up)
        return max(total, 0.0) / 2


@dataclass
class Baseline:
    valid: ValidBlueprint
    topo: Topology
    figures: dict[str, RackFigures]
    fabrics: dict[str, FabricBase]
    gpus: dict[str, int] = field(default_factory=dict)
    """Node -> GPUs."""
    draw_w: dict[str, float] = field(default_factory=dict)
    """Racked device with PSUs of its own -> planned draw."""
    psus: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Device -> (PSU count, rating W)."""
    outlets: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    """PDU -> (device, PSU number) on it."""
    feeds: dict[str, list[str]] = field(default_factory=dict)
    """Feed letter -> the PDUs on it, hall-wide."""
    rack_devices: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    row_racks: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    liquid: set[str] = field(default_factory=set)
    """Devices cooled (in part) by liquid."""
    shelves: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """Rack -> its power shelves."""
    on_shelves: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """Rack -> devices fed by its power shelves (no PSUs of their own)."""
    switch_trays: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """Rack -> its NVLink switch trays."""
    domain_of: dict[str, int] = field(default_factory=dict)
    """Node -> index in `topo.domains`."""
    oob_ports: dict[str, list[tuple[str, str]]] = field(default_factory=lambda: defaultdict(list))
    """Out-of-band switch -> (device, its port) of its oob links."""
    rack_signatures: dict[str, tuple[object, ...]] = field(default_factory=dict)
    """Rack -> what is in it (elements.py, on first use)."""
    bundles: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    """(rack, rack) -> indexes of the fabric links between the two racks (a cable bundle), the racks in order."""
    group_gpus: Counter[str] = field(default_factory=Counter)
    """Node group -> its GPUs."""


def components(
    names: list[str], neighbours: dict[str, list[tuple[str, int]]], dead: set[str], cut: set[int]
) -> dict[str, int]:
    """Each of `names` not in `dead` -> the number of its connected group over links not in `cut`."""
    found: dict[str, int] = {}
    number = 0
    for start in names:
        if start in found or start in dead:
            continue
        number += 1
        found[start] = number
        todo = [start]
        while todo:
            for other, link in neighbours.get(todo.pop(), ()):
                if other not in found and other not in dead and link not in cut:
                    found[other] = number
                    todo.append(other)
    return found


def still_joined(
    affected: set[str],
    component: dict[str, int],
    neighbours: dict[str, list[tuple[str, int]]],
    dead: set[str],
    cut: set[int],
) -> bool:
    """Whether the switches of each intact group are still joined once `dead` and `cut` are gone: a walk from one
    affected switch (a neighbour of what failed) per group that stops as soon as it has reached all the group's
    affected switches. Sound: a switch cut off from them would have been joined to the group only through what
    failed, so the last switch before the failure on that path, an affected one, would be cut off too."""
    by_group: dict[int, set[str]] = {}
    for switch in affected:
        by_group.setdefault(component[switch], set()).add(switch)
    for todo_set in by_group.values():
        start = next(iter(todo_set))
        left = len(todo_set) - 1
        seen = {start}
        todo = deque([start])
        while todo and left:
            for other, link in neighbours.get(todo.popleft(), ()):
                if other in seen or other in dead or link in cut:
                    continue
                seen.add(other)
                todo.append(other)
                if other in todo_set:
                    left -= 1
        if left:
            return False
    return True


def baseline(valid: ValidBlueprint, topo: Topology) -> Baseline:
    base = Baseline(valid, topo, rack_figures(valid.blueprint, valid.catalog, topo), {})
    base.fabrics = _fabrics(base)
    for device in topo.devices.values():
        _place(base, device)
    for node, gpus in base.gpus.items():
        base.group_gpus[topo.devices[node].group or ""] += gpus
    base.on_shelves = {r: d for r, d in base.on_shelves.items() if base.shelves.get(r)}
    outlets: dict[str, list[tuple[str, int]]] = defaultdict(list)
    feeds: dict[str, list[str]] = defaultdict(list)
    for outlet in topo.outlets:
        if outlet.pdu not in outlets:
            feeds[outlet.feed].append(outlet.pdu)
        outlets[outlet.pdu].append((outlet.device, outlet.psu))
    base.outlets, base.feeds = dict(outlets), dict(feeds)
    for rack in topo.racks.values():
        base.row_racks[rack.row].append(rack.name)
    base.domain_of = {node: i for i, domain in enumerate(topo.domains) for node in domain.nodes}
    return base


def _place(base: Baseline, device: Device) -> None:
    """`device`'s GPUs, power, cooling and rack."""
    catalog = base.valid.catalog
    entry: CatalogDevice = catalog_device(catalog, device)
    if isinstance(entry, Server) and entry.gpus is not None:
        base.gpus[device.name] = entry.gpus.count
    if device.rack is None:
        return
    base.rack_devices[device.rack].append(device.name)
    if entry.cooling.liquid_fraction > 0:
        base.liquid.add(device.name)
    role = entry.role if isinstance(entry, Equipment) else None
    if role == "power-shelf":
        base.shelves[device.rack].append(device.name)
    elif role == "nvswitch":
        base.switch_trays[device.rack].append(device.name)
    if entry.psus is not None:
        base.psus[device.name] = (entry.psus.count, entry.psus.rating_w)
        base.draw_w[device.name] = planned_w(base.valid.blueprint, catalog, device)
    elif entry.max_power_w:
        base.on_shelves[device.rack].append(device.name)


def _fabrics(base: Baseline) -> dict[str, FabricBase]:
    """The leaf/spine fabrics, and on the same pass over the links the out-of-band ports and the bundles."""
    topo = base.topo
    rack_of = {name: device.rack for name, device in topo.devices.items()}
    bundles: dict[tuple[str, str], list[int]] = defaultdict(list)
    out: dict[str, FabricBase] = {}
    for name, summary in topo.fabrics.items():
        switches = {d.name: d.role for d in topo.switches(name) if d.role != "oob"}
        if switches:
            out[name] = FabricBase(name, summary.technology, summary.kind, summary.tiers, switches, {}, {}, {})
    levels: dict[str, dict[str, float]] = {name: dict.fromkeys(LEVELS, 0.0) for name in out}
    for index, link in enumerate(topo.links):
        fabric = out.get(link.fabric)
        if fabric is None:
            if link.tier == "oob":
                base.oob_ports[link.b].append((link.a, link.a_port))
            continue
        a, b = rack_of[link.a], rack_of[link.b]
        if a != b and a and b:
            bundles[(a, b) if a < b else (b, a)].append(index)
        _add_link(fabric, link, index, levels[link.fabric])
    managers = [d.name for d in topo.devices.values() if d.kind == "node" and d.role == "subnet-manager"]
    for name, fabric in out.items():
        fabric.level_gbps = {tier: gbps for tier, gbps in levels[name].items() if gbps}
        if fabric.level_gbps.get("spine-core"):
            _spine_sides(fabric, topo)
            fabric.bisection_gbps = sum(min(d, fabric.spine_up.get(s, 0.0)) for s, d in fabric.spine_down.items()) / 2
        else:
            fabric.bisection_gbps = fabric.level_gbps.get("leaf-spine", 0.0) / 2
        fabric.component = components(list(fabric.switches), fabric.neighbours, set(), set())
        if fabric.technology == "infiniband":
            fabric.subnet_managers = [m for m in managers if m in fabric.node_ports]
    base.bundles = dict(bundles)
    return out


def _add_link(fabric: FabricBase, link: Link, index: int, levels: dict[str, float]) -> None:
    if link.tier == "node-leaf":
        fabric.node_ports.setdefault(link.a, []).append(index)
        fabric.leaf_ports[link.b] = fabric.leaf_ports.get(link.b, 0) + 1
        on_leaf = fabric.leaf_nodes.setdefault(link.b, [])
        if not on_leaf or on_leaf[-1] != link.a:
            on_leaf.append(link.a)
    elif link.tier in SWITCH_LINK_TIERS:
        fabric.neighbours.setdefault(link.a, []).append((link.b, index))
        fabric.neighbours.setdefault(link.b, []).append((link.a, index))
        if link.tier in LEVELS:
            levels[link.tier] += link.speed_gbps


def _spine_sides(fabric: FabricBase, topo: Topology) -> None:
    """Each spine's capacity down to leaves and up to cores."""
    for spine in (s for s, tier in fabric.switches.items() if tier == "spine"):
        fabric.spine_down.setdefault(spine, 0.0)
        for other, index in fabric.neighbours.get(spine, ()):
            link = topo.links[index]
            if link.tier in LEVELS:
                side = fabric.spine_up if fabric.switches.get(other) == "core" else fabric.spine_down
                side[spine] = side.get(spine, 0.0) + link.speed_gbps
