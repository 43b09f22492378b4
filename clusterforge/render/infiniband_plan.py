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
from dataclasses import dataclass, field
from functools import lru_cache
from typing import NamedTuple

from ..catalog import Server, Switch
from ..expand.topology import Topology
from ..model.fabric import LeafSpineFabric
from ..validate import ValidBlueprint
from .handoff_common import CableTable, cable_table

SWITCH_GUID_BASE = 0x0002_C900_0000_0000
"""Node GUIDs of the simulated switches (ibsim `switchguid=`): base + (fabric, tier, number in the tier), so a
switch keeps its GUID when the fabric grows."""
HCA_GUID_BASE = 0x0002_CA00_0000_0000
"""Node GUIDs of the simulated host adapters: base + (fabric, node group, node number, port), 4 apart (ibsim
numbers an adapter's ports after its node GUID)."""
_TIER_NUMBER = {"leaf": 0, "spine": 1, "core": 2}


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


@dataclass
class IbSubnet:
    """One InfiniBand subnet (a fabric, or one plane of a per-rail fabric): what one subnet manager sees."""

    fabric: str
    plane: int | None
    """None for a fabric of one subnet; else the plane's number (from 1)."""
    nodes: dict[str, IbNode] = field(default_factory=dict)
    cables: list[IbCable] = field(default_factory=list)
    managers: list[str] = field(default_factory=list)
    """Hosts that run the subnet manager: master first, then standby."""
    tiers: int = 1

    @property
    def folder(self) -> str:
        base = f"infiniband/{self.fabric}"
        return base if self.plane is None else f"{base}/plane{self.plane}"

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


def _islands(topo: Topology, fabric: str) -> dict[str, int]:
    """Each switch of `fabric` -> the number (from 1) of its connected group over switch-to-switch links."""
    parent: dict[str, str] = {d.name: d.name for d in topo.switches(fabric) if d.role != "oob"}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for link in topo.fabric_links(fabric):
        if link.tier in ("leaf-spine", "spine-core"):
            parent[root(link.a)] = root(link.b)
    numbers: dict[str, int] = {}
    found: dict[str, int] = {}
    for name in parent:  # switches in topology order: leaves first, so plane numbers follow the rails
        numbers[name] = found.setdefault(root(name), len(found) + 1)
    return numbers


def plan_subnets(valid: ValidBlueprint, topo: Topology, table: CableTable | None = None) -> list[IbSubnet]:
    """Every InfiniBand subnet of the blueprint, in fabric order, its nodes and cables in plan order. `table`:
    the render's cable table, when it has one."""
    labels = {id(row.link): row.label for row in (table or cable_table(valid, topo)).rows()}
    subnets: list[IbSubnet] = []
    for number, (name, _) in enumerate(infiniband_fabrics(valid)):
        if name not in topo.fabrics:
            continue
        subnets.extend(_fabric_subnets(valid, topo, name, number, labels))
    return subnets


def _fabric_subnets(
    valid: ValidBlueprint, topo: Topology, name: str, number: int, labels: dict[int, str]
) -> list[IbSubnet]:
    islands = _islands(topo, name)
    count = max(islands.values(), default=1)
    subnets = {
        i: IbSubnet(name, None if count == 1 else i, tiers=topo.fabrics[name].tiers) for i in range(1, count + 1)
    }
    for device in (d for d in topo.switches(name) if d.role != "oob"):
        subnet = subnets[islands[device.name]]
        guid = switch_guid(number, device.role, device.index)
        subnet.nodes[device.name] = IbNode(device.name, "Switch", 0, guid, device.role, device.name)
    cables = [link for link in topo.fabric_links(name) if link.tier in ("node-leaf", "leaf-spine", "spine-core")]
    cables.sort(key=lambda link: labels.get(id(link), ""))
    numbers: dict[tuple[str, str], int] = {}
    models: dict[str, tuple[dict[str, str], dict[str, int]]] = {}
    """server model -> (port -> adapter name suffix, port -> its position among the compute ports)"""
    group_number = {g.name: i for i, g in enumerate(valid.blueprint.node_groups)}
    for link in cables:
        subnet = subnets[islands[link.b]]
        upper = _switch_end(valid, topo, link.b, link.b_port, numbers)
        if link.tier == "node-leaf":
            host = topo.devices[link.a]
            if host.model not in models:
                names = port_devices(valid, host.model)
                models[host.model] = names, {port: i for i, port in enumerate(names)}
            names, positions = models[host.model]
            hca = f"{host.name} {names.get(link.a_port, link.a_port)}"
            if hca not in subnet.nodes:
                port = positions.get(link.a_port, len(names))
                guid = hca_guid(number, group_number.get(host.group or "", 255), host.index, port % 16)
                subnet.nodes[hca] = IbNode(hca, "Hca", 1, guid, host.role, host.name, link.a_port)
            lower = IbEnd(hca, 1, host.name, link.a_port)
        else:
            lower = _switch_end(valid, topo, link.a, link.a_port, numbers)
        subnet.cables.append(IbCable(labels.get(id(link), ""), link.tier, link.rail, lower, upper))
    for subnet in subnets.values():
        _size_switches(subnet)
        subnet.managers = _managers(subnet)
    return list(subnets.values())


def _switch_end(
    valid: ValidBlueprint, topo: Topology, name: str, port: str, numbers: dict[tuple[str, str], int]
) -> IbEnd:
    """`numbers`: (model, port name) -> port number, worked out once per kind of port."""
    model = topo.devices[name].model
    number = numbers.get((model, port))
    if number is None:
        number = numbers[model, port] = port_number(port, *numbering_of(valid, model))
    return IbEnd(name, number, name, port)


def _size_switches(subnet: IbSubnet) -> None:
    """A switch's port count: its highest port number in use, at least 64 (what the tools show for an NDR
    switch is the native count; a smaller number only hides free ports)."""
    highest: dict[str, int] = {}
    for cable in subnet.cables:
        for end in (cable.lower, cable.upper):
            highest[end.node] = max(highest.get(end.node, 0), end.port)
    for name, node in list(subnet.nodes.items()):
        if node.kind == "Switch":
            subnet.nodes[name] = IbNode(
                name, "Switch", max(64, highest.get(name, 0)), node.guid, node.tier, node.device
            )


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


__all__ = ["IbCable", "IbEnd", "IbNode", "IbSubnet", "plan_subnets"]
