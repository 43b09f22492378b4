"""The expanded cluster: racks, devices, links, NVLink domains and addresses, over one adjacency map.

Devices are the vertices; two devices with at least one link are neighbours, the pair carrying the indexes
of those links in `Topology.links`. Plain dicts and lists: at 100,000 GPUs a networkx graph of the links costs
more to build than the rest of expansion (the node-link JSON export is still networkx's form).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network
from itertools import starmap
from operator import attrgetter
from typing import Literal

from ..catalog import RackType
from ..errors import Finding

DeviceKind = Literal["node", "switch", "equipment"]
Tier = Literal["leaf", "spine", "core", "oob"]
LinkTier = Literal["node-leaf", "leaf-peer", "leaf-spine", "spine-core", "oob", "oob-uplink", "mgmt"]
TIERS: tuple[Tier, ...] = ("leaf", "spine", "core")
LINK_TIERS: tuple[LinkTier, ...] = ("node-leaf", "leaf-spine", "spine-core")


@dataclass(slots=True)
class Rack:
    name: str
    row: str
    row_index: int
    """0-based position of the row on the floor."""
    position: int
    """0-based position of the rack in its row."""
    type_key: str
    rack_type: RackType
    used: list[str | None] = field(default_factory=list)
    """What occupies each U (index 0 is U1): a device name, 'reserved: <purpose>', or None."""

    def free_units(self) -> int:
        return sum(1 for slot in self.used if slot is None)


@dataclass(slots=True)
class Device:
    name: str
    kind: DeviceKind
    model: str
    role: str
    """Node role (compute, login, ...), switch tier (leaf, spine, core, oob) or equipment role."""
    u_height: int
    group: str | None = None
    """Node group for nodes, fabric name for fabric switches."""
    index: int = 0
    """1-based position within its group or fabric tier."""
    rack: str | None = None
    u: int | None = None
    """Lowest U occupied."""
    rail: int | None = None
    su: int | None = None
    """Scalable unit (1-based) of a node or leaf."""
    pod: int | None = None
    plane: int | None = None
    """Spine/core plane: the rail (1-based) in rail-grouped tiers, else 1."""
    nvlink_domain: int | None = None
    pair: int | None = None
    """Leaf pair (1-based) of a dual-homed fabric (MLAG or EVPN multihoming)."""

    @property
    def device_class(self) -> str:
        """What power planning factors are keyed by: the node role, or 'switch' / 'equipment'."""
        return self.role if self.kind == "node" else self.kind


@dataclass(slots=True)
class Link:
    fabric: str
    tier: LinkTier
    a: str
    a_port: str
    b: str
    b_port: str
    speed_gbps: float
    rail: int | None = None
    length_m: float = 0.0
    media: str = ""
    """Cable media class, e.g. 'DAC', 'AOC', 'MMF', 'SMF', 'Cat6a'."""
    length_class_m: float = 0.0
    """Length the cable is ordered in (the next length class up)."""
    cable: int = -1
    """Index in `Topology.cables` of the physical cable that carries the link (-1: not cabled)."""
    a_module: str = ""
    """Catalog key of the transceiver in the A end's cage, for a link over fibre ('' otherwise)."""
    b_module: str = ""


_A_END = attrgetter("fabric", "a", "a_port")


def a_end(link: Link) -> str:
    """'network/device:port': the link's A end as the lock file names it (its `ports`, `trunks` and `cables`
    lines)."""
    return f"{link.fabric}/{link.a}:{link.a_port}"


def a_ends(links: Iterable[Link]) -> Iterator[str]:
    """`a_end` of each link, made without a Python call per link (millions at a million GPUs)."""
    return starmap("{}/{}:{}".format, map(_A_END, links))


@dataclass(slots=True)
class Cable:
    """One physical cable: a straight cable carries one link, a twin-port cable or a splitter several
    (each link its own leg or sub-port), a fibre between two transceivers one link or, split, two."""

    links: tuple[int, ...]
    """Indexes in `Topology.links`, in leg order (a tuple: a list of one takes 16 bytes more, 50 MB over the 3.2
    million cables of a million GPUs)."""
    product: str
    """Catalog key of the cable product (cables section)."""
    media: str
    """The product's media class: DAC, ACC, AOC, MMF, SMF, Cat6a."""
    length_class_m: float
    run_m: float
    """The longest run of its links (legs of a splitter are ordered as long as the longest)."""
    part_number: str = ""
    pieces: int = 1
    """Fibres of this kind one link needs (an 800G link over a twin-port module's two MPOs takes 2)."""
    hub_is_b: bool = False
    """A splitter whose single plug is at its links' B end (a switch cage split to several nodes)."""


@dataclass(frozen=True, slots=True)
class Outlet:
    """One PSU's place on a rack PDU."""

    rack: str
    device: str
    psu: int
    """PSU number in the device, from 1."""
    feed: str
    """Feed letter: A, B, ..."""
    pdu: str
    outlet: int
    """Outlet number on the PDU, from 1, bottom-up by U."""


@dataclass(slots=True)
class NvlinkDomain:
    index: int
    group: str
    nodes: list[str]
    gpus: int
    rack: str | None


@dataclass(frozen=True, slots=True)
class RailSegment:
    """The subnet of one compute port: its rail's block of the pool, and within it the segment of the port's
    leaf (Ethernet: one routed segment per rail and leaf, `gateway` on the leaf) or the whole rail block
    (InfiniBand: IPoIB is one broadcast domain per rail, no gateway)."""

    rail: int
    subnet: IPv4Network
    rail_block: IPv4Network
    gateway: IPv4Address | None


@dataclass(frozen=True, slots=True)
class LanSegment:
    """The subnet of a node's bond on a storage or in-band network: the whole pool, or on a dual-homed
    fabric with several leaf pairs the pool's block of the node's pair; `gateway` is its first address."""

    subnet: IPv4Network
    gateway: IPv4Address
    pair: int | None


@dataclass
class FabricSummary:
    """What the expander decided for a network: tiers, models and the resulting ratios."""

    name: str
    kind: str
    technology: str
    topology: str
    tiers: int
    models: dict[str, str] = field(default_factory=dict)
    oversubscription_target: float = 1.0
    nodes: int = 0
    endpoints: int = 0
    scalable_unit: int | None = None
    rails: int = 0
    uplinks_for: str = "planned"
    """Leaf uplinks sized for the planned downlinks (full scalable unit or leaf) or the ports present."""
    planes: int = 1
    """Disjoint upper-tier planes: 1, or the rail count when the blueprint asks for per-rail planes."""
    dual_homing: str = "none"
    """'mlag' or 'evpn-mh' when leaves come in pairs and nodes are dual-homed to one."""
    rail_addressing: str = "per-rail"
    """Ethernet rails: a subnet per rail (and leaf), or a /31 per port ('per-port')."""
    rail_leaves: str = "per-scalable-unit"
    """Rail-optimized: the rail leaves serve a scalable unit, or one rack of it ('per-rack')."""
    lossless_roce: bool = False
    """An Ethernet compute fabric with a lossless RoCE class (roce.qos): its nodes get the host side of it."""


class Topology:
    """The expanded cluster. Build it with the `add_*` verbs; query it with the others."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.racks: dict[str, Rack] = {}
        self.devices: dict[str, Device] = {}
        self.links: list[Link] = []
        self.cables: list[Cable] = []
        """Physical cables, made by the cabling expander; each link names its cable."""
        self.outlets: list[Outlet] = []
        """Every racked PSU on its PDU outlet."""
        self.modules: dict[tuple[str, str], str] = {}
        """(device, cage) -> catalog key of the transceiver in that cage, for links over fibre."""
        self.domains: list[NvlinkDomain] = []
        self.fabrics: dict[str, FabricSummary] = {}
        self.addresses: dict[str, dict[str, IPv4Address]] = defaultdict(dict)
        """network -> interface key ('host' or 'host:port') -> address."""
        self.segments: dict[str, dict[str, RailSegment]] = defaultdict(dict)
        """compute network -> port key ('host:port') -> the port's rail subnet."""
        self._adjacent: dict[str, dict[str, list[int]]] = {}
        """device -> neighbour -> indexes of the links between them, in the order they were added (a plain
        adjacency map, brought up to date when read: networkx's add_edge, or even this map kept up per link,
        costs more than the rest of add_link at 100,000 GPUs)."""
        self._indexed = 0
        """Links already in `_adjacent`."""
        self._islands: dict[str, tuple[int, int, int]] = {}
        """fabric -> (device count, link count, switch islands) last worked out."""
        self.loopbacks: dict[str, IPv4Address] = {}
        """switch -> its loopback address, on Ethernet fabrics with a loopback pool."""
        self.asns: dict[str, int] = {}
        """switch -> its BGP autonomous system number, on Ethernet fabrics with routed links (expand/asns.py)."""
        self.numbers: dict[str, int] = {}
        """'network/<name>', 'infiniband/<name>', 'group/<name>' -> the number the switch MACs and simulated
        GUIDs are made from (expand/numbers.py)."""
        self.held_numbers: dict[str, str] = {}
        """The lock file's numbers of networks and groups no longer in the blueprint (kept, never reused)."""
        self.bonds: dict[str, dict[str, int]] = {}
        """storage or in-band leaf (a pair's first) -> node -> its bond number there, the bond's MLAG ID or
        Ethernet segment's local ID (expand/bonds.py)."""
        self.lans: dict[str, dict[str, LanSegment]] = defaultdict(dict)
        """storage or in-band network -> node -> the subnet of its bond."""
        self.held_labels: dict[str, str] = {}
        """'network/device:port' (the A end of each link of a cable) -> the cable label the lock
        file holds for that cable (its `cables` section): render/handoff_common keeps it."""
        self.held_identities: dict[str, dict[str, str]] = {}
        """Lock file section -> what the lock file it was expanded with adds to the next one beyond the
        topology's identities: free ports it keeps, and the lines of removed devices still held (their `held`
        lines, host names, addresses, loopbacks and ASNs): expand/identity.py."""
        self.afresh = ""
        """The hash of the inputs of which this topology is what an expansion without a lock file makes, for
        the lock file's `afresh` line (`Keep.names_afresh`); '' when not known to be."""
        self.identity_findings: list[Finding] = []
        """What moved against the lock file (CF-IDENT warnings): told by the command, kept out of the rendered
        files, which depend on the blueprint and the lock file alone (expand/identity.py)."""

    # --- building -------------------------------------------------------------------------------
    def add_rack(self, rack: Rack) -> None:
        self.racks[rack.name] = rack

    def add_device(self, device: Device) -> None:
        if device.name in self.devices:
            raise ValueError(f"duplicate device name {device.name}")
        self.devices[device.name] = device
        self._adjacent[device.name] = {}

    def add_link(self, link: Link) -> None:
        self.links.append(link)

    def add_links(self, links: Iterable[Link]) -> None:
        self.links.extend(links)

    def add_domain(self, domain: NvlinkDomain) -> None:
        self.domains.append(domain)

    def assign_address(self, network: str, interface: str, address: IPv4Address) -> None:
        self.addresses[network][interface] = address

    # --- queries ----------------------------------------------------------------------------------
    def _adjacency(self) -> dict[str, dict[str, list[int]]]:
        """The adjacency map, with the links added since it was last read."""
        links, adjacent = self.links, self._adjacent
        for index in range(self._indexed, len(links)):
            link = links[index]
            around_a = adjacent.setdefault(link.a, {})
            indexes = around_a.get(link.b)
            if indexes is None:
                around_a[link.b] = indexes = []
                adjacent.setdefault(link.b, {})[link.a] = indexes
            indexes.append(index)
        self._indexed = len(links)
        return adjacent

    def devices_of(
        self, kind: DeviceKind | None = None, role: str | None = None, group: str | None = None
    ) -> Iterator[Device]:
        for device in self.devices.values():
            if (
                (kind is None or device.kind == kind)
                and (role is None or device.role == role)
                and (group is None or device.group == group)
            ):
                yield device

    def nodes(self) -> Iterator[Device]:
        return self.devices_of("node")

    def switches(self, fabric: str, tier: Tier | None = None) -> list[Device]:
        return [
            d
            for d in self.devices.values()
            if d.kind == "switch" and d.group == fabric and (tier is None or d.role == tier)
        ]

    def nodes_in_rack(self, rack: str) -> list[Device]:
        return sorted((d for d in self.devices.values() if d.rack == rack), key=lambda d: d.u or 0)

    def links_of(self, device: str) -> list[Link]:
        return [self.links[i] for indexes in self._adjacency().get(device, {}).values() for i in indexes]

    def links_between(self, a: str, b: str) -> list[Link]:
        return [self.links[i] for i in self._adjacency().get(a, {}).get(b, [])]

    def ports_used(self, device: str) -> int:
        """Data ports in use on `device` (management/BMC links not counted; a link from the device to itself
        takes two)."""
        return sum(
            2 if link.a == link.b else 1
            for link in self.links_of(device)
            if link.tier != "oob"  # management ports are not counted against the data ports
        )

    def leaf_of(self, node: str, fabric: str, rail: int | None = None) -> list[str]:
        """Leaf switches a node's ports on `fabric` go to (only `rail`'s, when given)."""
        return sorted(
            {
                link.b
                for link in self.links_of(node)
                if link.fabric == fabric
                and link.tier == "node-leaf"
                and link.a == node
                and (rail is None or link.rail == rail)
            }
        )

    def group_fabrics(self) -> dict[str, set[str]]:
        """Node group -> the networks (leaf/spine fabrics) its nodes are wired to."""
        found: dict[str, set[str]] = defaultdict(set)
        seen: set[tuple[str, str]] = set()
        for link in self.links:
            if link.tier == "node-leaf" and (link.a, link.fabric) not in seen:
                seen.add((link.a, link.fabric))
                group = self.devices[link.a].group
                if group is not None:
                    found[group].add(link.fabric)
        return dict(found)

    def fabric_links(self, fabric: str, tier: LinkTier | None = None) -> list[Link]:
        if tier is None:
            return [link for link in self.links if link.fabric == fabric]
        return [link for link in self.links if link.fabric == fabric and link.tier == tier]

    def switch_islands(self, fabric: str) -> int:
        """Connected groups of `fabric`'s switches over switch-to-switch links (an InfiniBand subnet each);
        hosts do not join them, since a host with ports on two islands forwards nothing between them."""
        known = self._islands.get(fabric)
        if known is not None and known[:2] == (len(self.devices), len(self.links)):
            return known[2]
        neighbours: dict[str, list[str]] = defaultdict(list)
        for name in (d.name for d in self.switches(fabric) if d.role != "oob"):
            neighbours[name] = []
        for link in self.links:
            if link.fabric == fabric and link.tier in ("leaf-peer", "leaf-spine", "spine-core"):
                neighbours[link.a].append(link.b)
                neighbours[link.b].append(link.a)
        islands = _components(neighbours)
        self._islands[fabric] = (len(self.devices), len(self.links), islands)
        return islands

    def is_connected(self, fabric: str) -> bool:
        """True when `fabric`'s switches form one connected group (hosts are not counted as vertices)."""
        return self.switch_islands(fabric) <= 1


def _components(neighbours: dict[str, list[str]]) -> int:
    """How many connected groups the vertices form (a walk from each vertex not yet reached: linear in the
    edges, where a union-find join per edge costs several Python calls)."""
    reached: set[str] = set()
    groups = 0
    for start in neighbours:
        if start in reached:
            continue
        groups += 1
        reached.add(start)
        todo = [start]
        while todo:
            for other in neighbours[todo.pop()]:
                if other not in reached:
                    reached.add(other)
                    todo.append(other)
    return groups
