"""The planned InfiniBand fabric as the InfiniBand tools see it: each subnet's switches and channel adapters
(one per host port: a ConnectX-7 is a single-port HCA) by node description, the port numbers of every cable,
and the node GUIDs the simulation gives them.

Names follow what the tools show on a real fabric: a switch's node description is its host name, a host
port's is `<host> <RDMA device>` (rdma-ndd's default `%h %d`) where the catalog documents the device names,
else `<host> <port>`. Switch port numbers are taken to run cage by cage: `ib5/2` (second port of cage 5, two
ports per cage) is port 10; a port without a cage part (`ib7`) is port 7 (docs/infiniband.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain, compress, repeat, starmap
from operator import add, ne
from typing import NamedTuple, TypeVar

from ...catalog import Server, Switch
from ...expand.topology import Topology
from ...expand.union_find import UnionFind
from ...model.fabric import LeafSpineFabric
from ...validate import ValidBlueprint
from ..handoff.handoff_common import CableTable, cable_table

SWITCH_GUID_BASE = 0x0002_C900_0000_0000
"""Node GUIDs of the simulated switches (ibsim `switchguid=`): base + (fabric, tier, number in the tier), so a
switch keeps its GUID when the fabric grows."""
HCA_GUID_BASE = 0x0002_CA00_0000_0000
"""Node GUIDs of the simulated host adapters: base + (fabric, node group, node number, port), 4 apart (ibsim
numbers an adapter's ports after its node GUID)."""
_TIER_NUMBER = {"leaf": 0, "spine": 1, "core": 2}
IB_TIERS = frozenset({"node-leaf", "leaf-spine", "spine-core"})
"""Link tiers that are InfiniBand cables (a leaf-peer link is no InfiniBand cable)."""
SHOWN_PORTS = 64
"""The fewest ports a switch has in the topology: what the tools show for an NDR switch is its native count, and
a smaller number would only hide free ports."""
T = TypeVar("T")


def switch_guid(fabric: int, tier: str, index: int) -> int:
    return SWITCH_GUID_BASE + (((fabric * 4 + _TIER_NUMBER.get(tier, 3)) << 20) + index)


def hca_guid(fabric: int, group: int, index: int, port: int) -> int:
    """Fabrics below 16, groups below 256, nodes below 2**22, ports below 16: 40 bits above the base."""
    return HCA_GUID_BASE + ((((fabric * 256 + group) << 22) + index) * 16 + port) * 4


_PORT = re.compile(r"^(?P<prefix>\D*)(?P<native>\d+)(?:/(?P<slot>\d+)|s(?P<sub>\d+))?$")
SUBNET_MANAGER_ROLE = "subnet-manager"
"""Node role whose hosts run the subnet manager (OpenSM or UFM), master first, then standby."""


class IbEnd(NamedTuple):
    node: str
    """Node description: the switch's name, or `<host> <device>` of a host port."""
    port: int
    """InfiniBand port number (1 for a host adapter)."""
    device: str
    """The topology's device (switch or host)."""
    port_name: str
    """The port's name in the plan (ib5/2, ib1)."""


class IbCable(NamedTuple):
    label: str
    tier: str
    rail: int | None
    lower: IbEnd
    """The host end of a node-leaf cable, the lower switch of a switch cable."""
    upper: IbEnd


class IbNode(NamedTuple):
    name: str
    """Node description."""
    kind: str
    """'Switch' or 'Hca', as the topology file spells it."""
    ports: int
    guid: int
    tier: str
    """Switch tier (leaf, spine, core) or the host's role."""
    device: str
    port_name: str = ""
    """For a host adapter: the host port it is."""


@dataclass(frozen=True)
class IbLinks:
    """A subnet's cables as columns, in label order: entry i of each list is the i-th cable. A fabric of
    100,000 GPUs has 300,000 InfiniBand cables: columns are made with map and zip, not an object per cable."""

    labels: list[str] = field(default_factory=list)
    tiers: list[str] = field(default_factory=list)
    rails: list[int | None] = field(default_factory=list)
    lower: list[str] = field(default_factory=list)
    """Node description of the lower end: the host port of a node-leaf cable, the lower switch of a switch cable."""
    lower_ports: list[int] = field(default_factory=list)
    lower_devices: list[str] = field(default_factory=list)
    lower_port_names: list[str] = field(default_factory=list)
    upper: list[str] = field(default_factory=list)
    """The upper end's switch (its node description and its device)."""
    upper_ports: list[int] = field(default_factory=list)
    upper_port_names: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.labels)

    def ends(self) -> tuple[list[str], list[int], list[str], list[int], list[str]]:
        """Node, port, remote node, remote port and label of every cable end: the lower ends, then the upper."""
        return (
            self.lower + self.upper,
            self.lower_ports + self.upper_ports,
            self.upper + self.lower,
            self.upper_ports + self.lower_ports,
            self.labels + self.labels,
        )

    def switch_links(self) -> Iterator[tuple[str, str, str]]:
        """(tier, lower switch, upper switch) of every switch-to-switch cable."""
        return (
            (t, low, high) for t, low, high in zip(self.tiers, self.lower, self.upper, strict=True) if t != "node-leaf"
        )


@dataclass
class IbSubnet:
    """One InfiniBand subnet (a fabric, or one plane of a per-rail fabric): what one subnet manager sees."""

    fabric: str
    plane: int | None
    """None for a fabric of one subnet; else the plane's number (from 1)."""
    nodes: dict[str, IbNode] = field(default_factory=dict)
    links: IbLinks = field(default_factory=IbLinks)
    managers: list[str] = field(default_factory=list)
    """Hosts that run the subnet manager: master first, then standby."""
    tiers: int = 1

    @property
    def folder(self) -> str:
        base = f"infiniband/{self.fabric}"
        return base if self.plane is None else f"{base}/plane{self.plane}"

    @property
    def cables(self) -> list[IbCable]:
        """The cables one by one (for `verify`, which compares a few subnets with what was discovered)."""
        links = self.links
        lower = map(IbEnd, links.lower, links.lower_ports, links.lower_devices, links.lower_port_names)
        upper = map(IbEnd, links.upper, links.upper_ports, links.upper, links.upper_port_names)
        return list(map(IbCable, links.labels, links.tiers, links.rails, lower, upper))

    def switches(self, tier: str | None = None) -> list[IbNode]:
        return [n for n in self.nodes.values() if n.kind == "Switch" and (tier is None or n.tier == tier)]


def infiniband_fabrics(valid: ValidBlueprint) -> list[tuple[str, LeafSpineFabric]]:
    return [
        (name, f)
        for name, f in valid.blueprint.fabrics.items()
        if isinstance(f, LeafSpineFabric) and f.technology == "infiniband"
    ]


@lru_cache(maxsize=65536)  # the same few hundred port names on every switch of a model
def port_number(port: str, per_cage: int, split: int) -> int:
    """`ib5/2` with 2 ports per cage -> 10; `ib7` -> 7; sub-port 1 of native port 3 split 2 ways (`ib3s1`) -> 6."""
    match = _PORT.match(port)
    if match is None:
        raise ValueError(f"port name {port!r} has no number")
    native = int(match.group("native"))
    if match.group("slot") is not None:
        return (native - 1) * per_cage + int(match.group("slot"))
    if match.group("sub") is not None:
        return (native - 1) * split + int(match.group("sub")) + 1
    return native


def numbering_of(valid: ValidBlueprint, model: str) -> tuple[int, int]:
    """A switch model's data ports per cage (2 on a QM9700: 32 OSFP cages, 64 NDR ports) and the ways a
    native port splits at most."""
    switch = valid.catalog.require(model, Switch)
    group = next((g for g in switch.ports if g.role != "oob"), None)
    if group is None:
        return 1, 1
    split = max([group.count, *group.breakout.values()]) // group.count if group.breakout else 1
    return max(1, group.count // (group.cages or group.count)), max(1, split)


def port_name(number: int, group: str, per_cage: int) -> str:
    """The port name of an InfiniBand port number (the inverse of `port_number` for unsplit ports)."""
    if per_cage <= 1:
        return f"{group}{number}"
    return f"{group}{(number - 1) // per_cage + 1}/{(number - 1) % per_cage + 1}"


def port_devices(valid: ValidBlueprint, model: str) -> dict[str, str]:
    """A server model's compute port -> the name its adapter's node description ends in: the RDMA device where
    the catalog names the compute ports' devices, else the port."""
    server = valid.catalog.require(model, Server)
    names: dict[str, str] = {}
    for group in server.port_groups("compute"):
        ports = [f"{group.name}{i}" for i in range(1, group.count + 1)]
        names.update(zip(ports, group.devices or ports, strict=False))
    return names


class _PortNumbers(dict[tuple[str, str], int]):
    """(switch model, port name) -> InfiniBand port number, worked out once per kind of port."""

    def __init__(self, valid: ValidBlueprint) -> None:
        super().__init__()
        self.valid = valid

    def __missing__(self, key: tuple[str, str]) -> int:
        model, port = key
        number = self[key] = port_number(port, *numbering_of(self.valid, model))
        return number


class _HostPorts(dict[str, tuple[dict[str, str], dict[str, int]]]):
    """server model -> (compute port -> adapter name suffix, compute port -> its position among them)."""

    def __init__(self, valid: ValidBlueprint) -> None:
        super().__init__()
        self.valid = valid

    def __missing__(self, model: str) -> tuple[dict[str, str], dict[str, int]]:
        names = port_devices(self.valid, model)
        found = self[model] = names, {port: i for i, port in enumerate(names)}
        return found


class _HostGuids(dict[str, int]):
    """host -> the node GUID of the adapter of its first port (see `hca_guid`), worked out once per host."""

    def __init__(self, topo: Topology, fabric: int, group_number: dict[str, int]) -> None:
        super().__init__()
        self.topo, self.fabric, self.group_number = topo, fabric, group_number

    def __missing__(self, name: str) -> int:
        host = self.topo.devices[name]
        guid = self[name] = hca_guid(self.fabric, self.group_number.get(host.group or "", 255), host.index, 0)
        return guid


class _PortGuids(dict[tuple[str, str], int]):
    """(server model, compute port) -> what its adapter's node GUID adds to the host's (see `hca_guid`)."""

    def __init__(self, valid: ValidBlueprint) -> None:
        super().__init__()
        self.host_ports = _HostPorts(valid)

    def __missing__(self, key: tuple[str, str]) -> int:
        model, port = key
        names, positions = self.host_ports[model]
        offset = self[key] = hca_guid(0, 0, 0, positions.get(port, len(names)) % 16) - HCA_GUID_BASE
        return offset


def _islands(switches: list[str], lows: list[str], highs: list[str]) -> dict[str, int]:
    """Each switch -> the number (from 1) of its connected group over the switch-to-switch cables `lows[i]` to
    `highs[i]`. `switches` in topology order: leaves first, so plane numbers follow the rails."""
    # A few cables join a fat tree's switches already: one up from each lower switch, one down from each upper
    # one. Groups joined over those are the groups when no cable runs between two of them (checked at C speed);
    # else all cables are joined.
    few = [*dict(zip(lows, highs, strict=True)).items(), *dict(zip(highs, lows, strict=True)).items()]
    roots = _roots(switches, few)
    if any(map(ne, map(roots.get, lows, lows), map(roots.get, highs, highs))):  # (a name not in `switches`: its own)
        roots = _roots(switches, zip(lows, highs, strict=True))
    numbers: dict[str, int] = {}
    found: dict[str, int] = {}
    for name in switches:
        numbers[name] = found.setdefault(roots[name], len(found) + 1)
    return numbers


def _roots(switches: list[str], pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each switch -> the switch that stands for its group, once `pairs` are joined."""
    joins = UnionFind(switches)
    for low, high in pairs:
        joins.join(low, high)
    return {name: joins.root(name) for name in switches}


def plan_subnets(valid: ValidBlueprint, topo: Topology, table: CableTable | None = None) -> list[IbSubnet]:
    """Every InfiniBand subnet of the blueprint, in fabric order, its nodes and cables in plan order. `table`:
    the render's cable table, when it has one."""
    table = table or cable_table(valid, topo)
    segments = dict(table.segments())
    subnets: list[IbSubnet] = []
    for number, (name, _) in enumerate(infiniband_fabrics(valid)):
        if name not in topo.fabrics:
            continue
        planner = _FabricPlanner(valid, topo, table, topo.numbers.get(f"infiniband/{name}", number))
        subnets.extend(planner.subnets(name, segments.get(name, slice(0, 0))))
    return subnets


def take(values: list[T], indexes: Iterable[int]) -> list[T]:
    return list(map(values.__getitem__, indexes))


class _FabricPlanner:
    """The subnets of one fabric, worked out column by column from the cable table."""

    def __init__(self, valid: ValidBlueprint, topo: Topology, table: CableTable, number: int) -> None:
        self.valid, self.topo, self.table, self.number = valid, topo, table, number
        self.numbers = _PortNumbers(valid)
        self.host_ports = _HostPorts(valid)
        self.group_number = {
            g.name: topo.numbers.get(f"group/{g.name}", i) for i, g in enumerate(valid.blueprint.node_groups)
        }
        self.model = {name: device.model for name, device in topo.devices.items()}
        self.role = {name: device.role for name, device in topo.devices.items()}
        self.host_guids = _HostGuids(topo, number, self.group_number)
        self.port_guids = _PortGuids(valid)

    def subnets(self, name: str, segment: slice) -> list[IbSubnet]:
        table = self.table
        tiers = table.column("tier")
        # the fabric's InfiniBand cables (table indexes) in label order
        cables = list(compress(range(segment.start, segment.stop), map(IB_TIERS.__contains__, tiers[segment])))
        cables.sort(key=table.link_labels.__getitem__)
        a, b = take(table.column("a"), cables), take(table.column("b"), cables)
        uplinks = list(compress(range(len(cables)), map("node-leaf".__ne__, take(tiers, cables))))
        switches = [d for d in self.topo.switches(name) if d.role != "oob"]
        islands = _islands([d.name for d in switches], take(a, uplinks), take(b, uplinks))
        count = max(islands.values(), default=1)
        members: dict[int, list[int]] = {1: cables}
        if count > 1:
            members = {i: [] for i in range(1, count + 1)}
            for cable, island in zip(cables, map(islands.__getitem__, b), strict=True):
                members[island].append(cable)
        found = []
        for island, indexes in members.items():
            subnet = IbSubnet(name, None if count == 1 else island, links=self._links(indexes))
            subnet.tiers = self.topo.fabrics[name].tiers
            counts = _port_counts(subnet.links)
            for device in switches:
                if islands[device.name] == island:
                    guid = switch_guid(self.number, device.role, device.index)
                    size = counts.get(device.name, SHOWN_PORTS)
                    subnet.nodes[device.name] = IbNode(device.name, "Switch", size, guid, device.role, device.name)
            subnet.nodes.update(self._adapters(subnet.links))
            subnet.managers = _managers(subnet)
            found.append(subnet)
        return found

    def _links(self, cables: list[int]) -> IbLinks:
        table, numbers, model = self.table, self.numbers, self.model
        tiers, a, a_ports = (take(table.column(name), cables) for name in ("tier", "a", "a_port"))
        b, b_ports = take(table.column("b"), cables), take(table.column("b_port"), cables)
        return IbLinks(
            labels=take(table.link_labels, cables),
            tiers=tiers,
            rails=take(table.column("rail"), cables),
            lower=self._lower_names(tiers, a, a_ports),
            lower_ports=[
                1 if tier == "node-leaf" else numbers[model[name], port]
                for tier, name, port in zip(tiers, a, a_ports, strict=True)
            ],
            lower_devices=a,
            lower_port_names=a_ports,
            upper=b,
            upper_ports=list(map(numbers.__getitem__, zip(map(model.__getitem__, b), b_ports, strict=True))),
            upper_port_names=b_ports,
        )

    def _lower_names(self, tiers: list[str], a: list[str], a_ports: list[str]) -> list[str]:
        """The lower end's node description: `<host> <device>` of a host port, the switch's name."""
        model, host_ports = self.model, self.host_ports
        return [
            f"{name} {host_ports[model[name]][0].get(port, port)}" if tier == "node-leaf" else name
            for tier, name, port in zip(tiers, a, a_ports, strict=True)
        ]

    def _adapters(self, links: IbLinks) -> dict[str, IbNode]:
        """A host adapter per host port, in the order of their cables."""
        hosts = list(map("node-leaf".__eq__, links.tiers))
        names = list(compress(links.lower, hosts))
        devices = list(compress(links.lower_devices, hosts))
        ports = list(compress(links.lower_port_names, hosts))
        if len(set(names)) < len(names):  # a host port on two cables: its adapter is its first cable's
            first = sorted(dict(zip(reversed(names), reversed(range(len(names))), strict=True)).values())
            names, devices, ports = take(names, first), take(devices, first), take(ports, first)
        guids = map(
            add,
            map(self.host_guids.__getitem__, devices),
            map(self.port_guids.__getitem__, zip(map(self.model.__getitem__, devices), ports, strict=True)),
        )
        roles = map(self.role.__getitem__, devices)
        rows = zip(names, repeat("Hca"), repeat(1), guids, roles, devices, ports)
        return dict(zip(names, starmap(IbNode, rows), strict=True))


def _port_counts(links: IbLinks) -> dict[str, int]:
    """The switches with a port number in use above SHOWN_PORTS, and their highest: a switch's port count is
    that, at least SHOWN_PORTS."""
    if max(links.upper_ports, default=0) <= SHOWN_PORTS and max(links.lower_ports, default=0) <= SHOWN_PORTS:
        return {}  # the usual case, seen without a loop
    highest: dict[str, int] = {}
    uplinks = list(map("node-leaf".__ne__, links.tiers))
    ends = chain(
        zip(links.upper, links.upper_ports, strict=True),
        zip(compress(links.lower, uplinks), compress(links.lower_ports, uplinks), strict=True),
    )
    for node, port in ends:
        if port > highest.get(node, 0):
            highest[node] = port
    return {node: port for node, port in highest.items() if port > SHOWN_PORTS}


def _managers(subnet: IbSubnet) -> list[str]:
    hosts: list[str] = []
    for node in subnet.nodes.values():
        if node.kind == "Hca" and node.tier == SUBNET_MANAGER_ROLE and node.device not in hosts:
            hosts.append(node.device)
    return hosts[:2]


def sm_adapter(subnet: IbSubnet) -> IbNode | None:
    """The adapter the master subnet manager runs on: the master host's first port, else the first host port."""
    adapters = [n for n in subnet.nodes.values() if n.kind == "Hca"]
    master = [n for n in adapters if subnet.managers and n.device == subnet.managers[0]]
    found = master or adapters
    return found[0] if found else None


def top_tier(subnet: IbSubnet) -> str:
    return "core" if subnet.switches("core") else "spine" if subnet.switches("spine") else "leaf"


__all__ = ["IbCable", "IbEnd", "IbLinks", "IbNode", "IbSubnet", "plan_subnets"]
