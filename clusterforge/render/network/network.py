"""network output family: per node, a netplan file for its compute-fabric (rail) interfaces and its
storage and in-band bonds, and the ARP sysctls every node with several addressed interfaces gets.

Each rail port is addressed in its rail's own subnet (expand/addressing.py). On a routed Ethernet rail
that spans several leaves, the port's segment is one leaf's, and a route sends the rest of the rail block
through that leaf, so traffic to rail k always leaves by the rail-k NIC; with a /31 per port, a policy
table per port also sends whatever leaves from the port's address out of that port. A node's ports of a
storage or in-band network form one LACP bond (802.3ad): on a dual-homed network its members go to the
two leaves of a pair, which run MLAG or EVPN multihoming. `arp_ignore=1` (answer ARP only on the
interface that owns the address) and `arp_announce=2` (announce with the outgoing interface's own
address) keep a host's interfaces from answering for each other.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from ...expand.topology import LanSegment, RailSegment, Topology
from ...model.fabric import LeafSpineFabric
from ...validate import ValidBlueprint
from .. import paths
from ..addresses import topology_address_texts
from ..context import RenderContext, per_topology

ARP_SYSCTLS = {"net.ipv4.conf.all.arp_ignore": 1, "net.ipv4.conf.all.arp_announce": 2}
BOND_PARAMETERS = {
    "mode": "802.3ad",
    "lacp-rate": "fast",
    "mii-monitor-interval": 100,
    "transmit-hash-policy": "layer3+4",
}
"""LACP with fast LACPDUs, link monitoring every 100 ms and flows hashed on addresses and ports, as the
MLAG and EVPN multihoming bonds of NVIDIA Cumulus Linux expect from hosts."""
POLICY_TABLE_BASE = 100
"""Routing tables of /31 rail ports: 101 for a host's first rail port, 102 for the second, ..."""


@dataclass(frozen=True)
class Bond:
    name: str
    network: str
    kind: str
    members: list[str]
    address: str
    lan: LanSegment
    mtu: int | None


@dataclass
class NodeNetwork:
    rails: dict[str, tuple[str, str, RailSegment]] = field(default_factory=dict)
    """port -> (network, address, segment)"""
    bonds: list[Bond] = field(default_factory=list)

    @property
    def interfaces(self) -> int:
        return len(self.rails) + len(self.bonds)


@per_topology
def rail_ports(topo: Topology) -> dict[str, dict[str, tuple[str, str, RailSegment]]]:
    """node -> port -> (network, address, segment), for every node with an addressed compute port."""
    out: dict[str, dict[str, tuple[str, str, RailSegment]]] = defaultdict(dict)
    for network in sorted(topo.segments):
        texts = topology_address_texts(topo)[network]
        for key, segment in topo.segments[network].items():
            node, _, port = key.partition(":")
            out[node][port] = (network, texts[key], segment)
    return out


def _bond_networks(valid: ValidBlueprint) -> list[tuple[str, LeafSpineFabric]]:
    """Storage and in-band networks in bond order: in-band first (bond0 carries ansible_host), then storage."""
    fabrics = [
        (name, f)
        for name, f in valid.blueprint.fabrics.items()
        if isinstance(f, LeafSpineFabric) and f.kind in ("inband", "storage")
    ]
    return sorted(fabrics, key=lambda item: item[1].kind != "inband")


def node_networks(valid: ValidBlueprint, topo: Topology) -> dict[str, NodeNetwork]:
    out: dict[str, NodeNetwork] = defaultdict(NodeNetwork)
    for node, rails in rail_ports(topo).items():
        out[node].rails = rails
    members: dict[tuple[str, str], list[str]] = defaultdict(list)
    for link in topo.links:
        if link.tier == "node-leaf" and link.fabric in topo.lans:
            members[(link.fabric, link.a)].append(link.a_port)
    for index, (name, fabric) in enumerate(_bond_networks(valid)):
        for node, lan in topo.lans[name].items():
            ports = members[(name, node)]
            address = str(topo.addresses[name][node])
            out[node].bonds.append(Bond(f"bond{index}", name, fabric.kind, ports, address, lan, fabric.host_mtu))
    return {node: out[node] for node in topo.devices if node in out}


class _RailTexts:
    """What rail ports share, written once: a port name's JSON, a network's MTU, a rail segment's comment
    and prefix length (many ports share one segment)."""

    def __init__(self, valid: ValidBlueprint) -> None:
        self.valid = valid
        self.names: dict[str, str] = {}
        self.mtus: dict[str, int | None] = {}
        self.segments: dict[tuple[str, int], tuple[str, int]] = {}
        self.ports: dict[tuple[str, str, int], tuple[str, str | None]] = {}

    def name(self, port: str) -> str:
        if port not in self.names:
            self.names[port] = json.dumps(port)
        return self.names[port]

    def mtu(self, network: str) -> int | None:
        if network not in self.mtus:
            fabric = self.valid.blueprint.fabrics[network]
            self.mtus[network] = fabric.host_mtu if isinstance(fabric, LeafSpineFabric) else None
        return self.mtus[network]

    def port(self, port: str, network: str, segment: RailSegment) -> tuple[str, str | None]:
        """A rail port's lines before its address and, when the port has no routes, after it (else None)."""
        key = port, network, id(segment)
        if key not in self.ports:
            comment, prefix = self.segment(network, segment)
            head = f'    {self.name(port)}:\n{comment}\n      addresses: ["'
            mtu = self.mtu(network)
            tail = f'/{prefix}"]' + ("" if mtu is None else f"\n      mtu: {mtu}") + "\n      optional: true"
            routed = segment.gateway is not None and segment.rail_block != segment.subnet
            self.ports[key] = head, None if routed else tail
        return self.ports[key]

    def segment(self, network: str, segment: RailSegment) -> tuple[str, int]:
        """The comment line and prefix length of a port in `segment` (kept alive by the topology, so its id
        stays its own during the render)."""
        key = network, id(segment)
        if key not in self.segments:
            self.segments[key] = f"      # rail {segment.rail} of fabric {network}", segment.subnet.prefixlen
        return self.segments[key]


def _rail_lines(texts: _RailTexts, ports: dict[str, tuple[str, str, RailSegment]]) -> list[str]:
    lines: list[str] = []
    for table, port in enumerate(sorted(ports, key=lambda p: (ports[p][2].rail, p)), POLICY_TABLE_BASE + 1):
        network, address, segment = ports[port]
        head, tail = texts.port(port, network, segment)
        # an address and prefix are digits, dots and a slash: their JSON is the text quoted
        if tail is not None:  # no routes: the port's lines are the same as its rail's but for the address
            lines.append(f"{head}{address}{tail}")
            continue
        comment, prefix = texts.segment(network, segment)
        mtu = texts.mtu(network)
        lines += [f"    {texts.name(port)}:", comment, f'      addresses: ["{address}/{prefix}"]']
        if mtu is not None:
            lines.append(f"      mtu: {mtu}")
        gateway = json.dumps(str(segment.gateway))
        routes = [f"{{to: {json.dumps(str(segment.rail_block))}, via: {gateway}}}"]
        if segment.subnet.prefixlen == 31:
            routes.append(f"{{to: default, via: {gateway}, table: {table}}}")
            lines.append(f"      routing-policy: [{{from: {json.dumps(f'{address}/32')}, table: {table}}}]")
        lines.append(f"      routes: [{', '.join(routes)}]")
        lines.append("      optional: true")
    return lines


def _bond_lines(bonds: list[Bond]) -> list[str]:
    lines = ["  bonds:"]
    for bond in bonds:
        lines += [
            f"    {bond.name}:",
            f"      # {bond.kind} network {bond.network}"
            + (f", leaf pair {bond.lan.pair}" if bond.lan.pair is not None else ""),
            f"      interfaces: [{', '.join(json.dumps(m) for m in bond.members)}]",
            f"      addresses: [{json.dumps(f'{bond.address}/{bond.lan.subnet.prefixlen}')}]",
        ]
        if bond.mtu is not None:
            lines.append(f"      mtu: {bond.mtu}")
        if bond.name == "bond0" and bond.kind == "inband":
            lines.append(f"      routes: [{{to: default, via: {json.dumps(str(bond.lan.gateway))}}}]")
        parameters = ", ".join(f"{key}: {json.dumps(value)}" for key, value in BOND_PARAMETERS.items())
        lines.append(f"      parameters: {{{parameters}}}")
    return lines


def _netplan(texts: _RailTexts, node: str, network: NodeNetwork) -> str:
    lines = [
        f"# clusterforge: network of {node}: rail interfaces (one subnet per rail) and storage and in-band "
        f"bonds; installed as {paths.NETPLAN_RAILS_INSTALLED}",
        "network:",
        "  version: 2",
        "  renderer: networkd",
    ]
    members = [m for bond in network.bonds if len(bond.members) > 1 for m in bond.members]
    single = [bond for bond in network.bonds if len(bond.members) == 1]
    if network.rails or members or single:
        lines += ["  ethernets:", *_rail_lines(texts, network.rails)]
    for member in members:
        lines.append(f"    {json.dumps(member)}: {{}}")
    for bond in single:  # one port: no bond, the address on the port itself
        lines += [
            f"    {json.dumps(bond.members[0])}:",
            f"      addresses: [{json.dumps(f'{bond.address}/{bond.lan.subnet.prefixlen}')}]",
        ]
    bonded = [bond for bond in network.bonds if len(bond.members) > 1]
    if bonded:
        lines += _bond_lines(bonded)
    return "\n".join(lines) + "\n"


def _sysctl() -> str:
    lines = [
        "# clusterforge: ARP on hosts with several addressed interfaces: answer and announce only on the",
        f"# interface that owns the address; installed as {paths.SYSCTL_RAILS_INSTALLED}",
    ]
    return "\n".join([*lines, *(f"{k} = {v}" for k, v in ARP_SYSCTLS.items())]) + "\n"


def network_paths(topo: Topology) -> dict[str, list[tuple[str, str]]]:
    """node -> [(rendered path, installed path)] of its network files."""
    out: dict[str, list[tuple[str, str]]] = {}
    for node, count in _interface_counts(topo).items():
        out[node] = [(paths.netplan_rails(node), paths.NETPLAN_RAILS_INSTALLED)]
        if count > 1:
            out[node].append((paths.SYSCTL_RAILS, paths.SYSCTL_RAILS_INSTALLED))
    return out


def _interface_counts(topo: Topology) -> dict[str, int]:
    """node -> its addressed interfaces (rail ports and bonds), without formatting any address."""
    counts: dict[str, int] = defaultdict(int)
    for network in sorted(topo.segments):
        for key in topo.segments[network]:
            counts[key.partition(":")[0]] += 1
    for network in sorted(topo.lans):
        for node in topo.lans[network]:
            counts[node] += 1
    return counts


def render_network(ctx: RenderContext) -> dict[str, str]:
    networks = node_networks(ctx.valid, ctx.topo)
    texts = _RailTexts(ctx.valid)
    files = {paths.netplan_rails(node): _netplan(texts, node, network) for node, network in networks.items()}
    if any(network.interfaces > 1 for network in networks.values()):
        files[paths.SYSCTL_RAILS] = _sysctl()
    return dict(sorted(files.items()))
