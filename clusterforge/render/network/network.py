"""network output family: per node, a netplan file for its compute-fabric (rail) interfaces and its
storage and in-band bonds, and the ARP sysctls every node with several addressed interfaces gets.

Each rail port is addressed in its rail's own subnet (expand/addressing.py). On a routed Ethernet rail
that spans several leaves, the port's segment is one leaf's, and a route sends the rest of the rail block
through that leaf, so traffic to rail k always leaves by the rail-k NIC. Every Ethernet rail port also has
a policy table for its own address: the whole compute pool (with a /31 per port: everything) through its
leaf, so traffic from rail i's NIC to rail j's address (NCCL all-to-all on a PCIe server without PXN)
leaves by rail i and the leaves route it. On Ethernet fabrics with a lossless RoCE class, each node gets
network/roce-qos/<node>.sh (mlnx_qos: trust DSCP, PFC on the class's priority, for the interfaces it can
name) and network/clusterforge-roce-qos.service, which runs it at boot. A node's ports of a
storage or in-band network form one LACP bond (802.3ad): on a dual-homed network its members go to the
two leaves of a pair, which run MLAG or EVPN multihoming. `arp_ignore=1` (answer ARP only on the
interface that owns the address) and `arp_announce=2` (announce with the outgoing interface's own
address) keep a host's interfaces from answering for each other.

Every port is matched to the interface the node has (clusterforge/ifnames.py): by name where the catalog
gives or derives it (`match: {name: ibp24s0}`), by MAC with `set-name` where `clusterforge bind` read the
node. A port with no known name is not configured: it is listed in a comment at the top (finding CF-NET-001)
and left out of the file, and so is a bond none of whose members has a known name, until `clusterforge bind`
reads the node. netplan takes an unmatched key as the interface's name, so writing the planned name ('ib1')
would configure an interface no Supermicro or GB200 node has, as if it were real.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field, replace

from ...catalog.models import Server
from ...expand.topology import LanSegment, RailSegment, Topology
from ...ifnames import PortDevice, port_device
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

    def pool(self, network: str) -> object:
        return self.valid.blueprint.fabrics[network].ipv4_pool

    def mtu(self, network: str) -> int | None:
        if network not in self.mtus:
            fabric = self.valid.blueprint.fabrics[network]
            self.mtus[network] = fabric.host_mtu if isinstance(fabric, LeafSpineFabric) else None
        return self.mtus[network]

    def port(self, port: str, network: str, segment: RailSegment) -> tuple[str, str | None]:
        """A rail port's lines after its key and match and before its address and, when the port has no
        routes, after it (else None)."""
        key = port, network, id(segment)
        if key not in self.ports:
            comment, prefix = self.segment(network, segment)
            head = f'{comment}\n      addresses: ["'
            mtu = self.mtu(network)
            tail = f'/{prefix}"]' + ("" if mtu is None else f"\n      mtu: {mtu}") + "\n      optional: true"
            routed = segment.gateway is not None  # Ethernet: routes to the rest of the fabric, rails included
            self.ports[key] = head, None if routed else tail
        return self.ports[key]

    def segment(self, network: str, segment: RailSegment) -> tuple[str, int]:
        """The comment line and prefix length of a port in `segment` (kept alive by the topology, so its id
        stays its own during the render)."""
        key = network, id(segment)
        if key not in self.segments:
            self.segments[key] = f"      # rail {segment.rail} of fabric {network}", segment.subnet.prefixlen
        return self.segments[key]


def match_lines(device: PortDevice, indent: str = "      ") -> list[str]:
    """netplan's match (and set-name) for a port: by MAC with set-name where the node was read (an IPoIB
    port's 20-octet hardware address is no stable match: by name), else by the name the catalog gives."""
    if device.mac is not None and len(device.mac) == 17:
        mac, name = json.dumps(device.mac), json.dumps(device.name)
        return [f"{indent}match: {{macaddress: {mac}}}", f"{indent}set-name: {name}"]
    return [f"{indent}match: {{name: {json.dumps(device.name)}}}"]


def _rail_lines(
    texts: _RailTexts, ports: dict[str, tuple[str, str, RailSegment]], devices: dict[str, PortDevice]
) -> list[str]:
    lines: list[str] = []
    for table, port in enumerate(sorted(ports, key=lambda p: (ports[p][2].rail, p)), POLICY_TABLE_BASE + 1):
        network, address, segment = ports[port]
        if port not in devices:
            continue
        head, tail = texts.port(port, network, segment)
        lines += [f"    {texts.name(port)}:", *match_lines(devices[port])]
        # an address and prefix are digits, dots and a slash: their JSON is the text quoted
        if tail is not None:  # no routes: the port's lines are the same as its rail's but for the address
            lines.append(f"{head}{address}{tail}")
            continue
        comment, prefix = texts.segment(network, segment)
        mtu = texts.mtu(network)
        lines += [comment, f'      addresses: ["{address}/{prefix}"]']
        if mtu is not None:
            lines.append(f"      mtu: {mtu}")
        gateway = json.dumps(str(segment.gateway))
        routes = []
        if segment.rail_block != segment.subnet:
            routes.append(f"{{to: {json.dumps(str(segment.rail_block))}, via: {gateway}}}")
        # traffic from this port's address leaves by this port, also to the other rails: a PCIe server (no
        # PXN) runs all-to-all from rail i's NIC to rail j's, routed by the leaves
        target = "default" if segment.subnet.prefixlen == 31 else json.dumps(str(texts.pool(network)))
        routes.append(f"{{to: {target}, via: {gateway}, table: {table}}}")
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


class PortNames:
    """Each node's port devices (ifnames.port_device), the catalog's answers shared by a group's nodes."""

    def __init__(self, valid: ValidBlueprint, topo: Topology) -> None:
        self.valid, self.topo = valid, topo
        self.os = {group.name: group.os for group in valid.blueprint.node_groups}
        self.infiniband = {
            name: getattr(fabric, "technology", "ethernet") == "infiniband"
            for name, fabric in valid.blueprint.fabrics.items()
        }
        self.cache: dict[tuple[str, str, str, bool], PortDevice | None] = {}

    def device(self, node: str, port: str, network: str) -> PortDevice | None:
        bound = self.valid.blueprint.bindings.get(node, {}).get(port)
        device = self.topo.devices[node]
        os = self.os.get(device.group or "", "ubuntu")
        infiniband = self.infiniband.get(network, False)
        if bound is not None:
            return port_device(self.valid.catalog, self._server(device.model), os, port, infiniband, bound)
        key = device.model, os, port, infiniband
        if key not in self.cache:
            self.cache[key] = port_device(self.valid.catalog, self._server(device.model), os, port, infiniband, None)
        return self.cache[key]

    def _server(self, model: str) -> Server:
        return self.valid.catalog.require(model, Server)

    def of(self, node: str, network: NodeNetwork) -> dict[str, PortDevice]:
        out: dict[str, PortDevice] = {}
        for port, (name, _, _) in network.rails.items():
            if (found := self.device(node, port, name)) is not None:
                out[port] = found
        for bond in network.bonds:
            for member in bond.members:
                if (found := self.device(node, member, bond.network)) is not None:
                    out[member] = found
        return out


def _unnamed(network: NodeNetwork, devices: dict[str, PortDevice]) -> list[str]:
    missing = [p for p in network.rails if p not in devices]
    return missing + [m for bond in network.bonds for m in bond.members if m not in devices]


UNBOUND_HEADER = "# NOT CONFIGURED, INTERFACE NAME NOT KNOWN: "
"""The first words of the comment that lists a node's ports left out of its netplan (CF-NET-001)."""


def _unnamed_lines(missing: list[str], node: str) -> list[str]:
    if not missing:
        return []
    return [
        f"{UNBOUND_HEADER}{', '.join(missing)}: no interface name is known for these ports of",
        f"# {node} (the catalog neither quotes nor derives one for its model and OS), so this file does not",
        "# configure them (nor a bond of only such ports): run `clusterforge bind` on the node's facts, include",
        "# the file it writes and render again (CF-NET-001)",
    ]


def _netplan(texts: _RailTexts, node: str, network: NodeNetwork, devices: dict[str, PortDevice]) -> str:
    missing = _unnamed(network, devices)
    lines = [
        f"# clusterforge: network of {node}: rail interfaces (one subnet per rail) and storage and in-band "
        f"bonds; installed as {paths.NETPLAN_RAILS_INSTALLED}",
        *_unnamed_lines(missing, node),
        "network:",
        "  version: 2",
        "  renderer: networkd",
    ]
    bonds = [replace(bond, members=[m for m in bond.members if m in devices]) for bond in network.bonds]
    planned = {bond.name: len(bond.members) for bond in network.bonds}
    bonded = [bond for bond in bonds if bond.members and planned[bond.name] > 1]
    single = [bond for bond in bonds if bond.members and planned[bond.name] == 1]
    rails = _rail_lines(texts, network.rails, devices)
    members = [m for bond in bonded for m in bond.members]
    if rails or members or single:
        lines += ["  ethernets:", *rails]
    for member in members:
        lines += [f"    {json.dumps(member)}:", *match_lines(devices[member])]
    for bond in single:  # one port: no bond, the address on the port itself
        lines += [
            f"    {json.dumps(bond.members[0])}:",
            *match_lines(devices[bond.members[0]]),
            f"      addresses: [{json.dumps(f'{bond.address}/{bond.lan.subnet.prefixlen}')}]",
        ]
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
    """node -> [(rendered path, installed path)] of its network files (the RoCE QoS script and its unit on a
    node with a rail on a lossless RoCE fabric, as render_network writes them)."""
    out: dict[str, list[tuple[str, str]]] = {}
    lossless = _lossless_nodes(topo)
    for node, count in _interface_counts(topo).items():
        out[node] = [(paths.netplan_rails(node), paths.NETPLAN_RAILS_INSTALLED)]
        if count > 1:
            out[node].append((paths.SYSCTL_RAILS, paths.SYSCTL_RAILS_INSTALLED))
        if node in lossless:
            out[node] += [
                (paths.roce_qos_script(node), paths.ROCE_QOS_SCRIPT_INSTALLED),
                (paths.ROCE_QOS_UNIT, paths.ROCE_QOS_UNIT_INSTALLED),
            ]
    return out


def _lossless_nodes(topo: Topology) -> set[str]:
    return {
        key.partition(":")[0]
        for network in topo.segments
        if network in topo.fabrics and topo.fabrics[network].lossless_roce
        for key in topo.segments[network]
    }


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


def _lossless(valid: ValidBlueprint) -> dict[str, tuple[int, int]]:
    """Ethernet compute fabrics with a lossless RoCE class: network -> (DSCP, PFC priority)."""
    out = {}
    for name, fabric in valid.blueprint.fabrics.items():
        roce = getattr(fabric, "roce", None)
        ethernet = getattr(fabric, "kind", "") == "compute" and getattr(fabric, "technology", "") == "ethernet"
        if ethernet and roce is not None and roce.qos is not None:
            out[name] = roce.qos.dscp, roce.qos.pfc_priority
    return out


def _roce_qos_script(
    node: str, network: NodeNetwork, devices: dict[str, PortDevice], lossless: dict[str, tuple[int, int]]
) -> str | None:
    """The host side of lossless RoCE on the node's compute ports: trust DSCP and PFC on the fabric's
    priority (mlnx_qos, MLNX_OFED/DOCA 'Flow Control': `mlnx_qos -i <if> --pfc 0,0,0,1,0,0,0,0`, and
    'Quality of Service': `--trust dscp`), with DSCP mapped to that priority where the default mapping (the
    DSCP's top three bits) gives another. The switches' side is in their NVUE files (qos roce)."""
    ports = sorted(
        (p for p, (net, _, _) in network.rails.items() if net in lossless), key=lambda p: network.rails[p][2].rail
    )
    if not ports:
        return None
    lines = [
        "#!/bin/sh",
        f"# clusterforge: lossless RoCE on the compute ports of {node}: trust DSCP, PFC on the fabric's priority;",
        f"# installed as {paths.ROCE_QOS_SCRIPT_INSTALLED}, run at boot by {paths.ROCE_QOS_UNIT_INSTALLED}",
        "set -e",
    ]
    for port in ports:
        net, _, segment = network.rails[port]
        dscp, priority = lossless[net]
        if port not in devices:
            lines.append(f"# {port} (rail {segment.rail}): interface name unknown (CF-NET-001): not configured")
            continue
        name = devices[port].name
        pfc = ",".join("1" if i == priority else "0" for i in range(8))
        lines.append(f"# {port}, rail {segment.rail} of fabric {net}: DSCP {dscp} lossless on priority {priority}")
        lines.append(f"mlnx_qos -i {name} --trust dscp")
        if dscp >> 3 != priority:
            lines.append(f"mlnx_qos -i {name} --dscp2prio set,{dscp},{priority}")
        lines.append(f"mlnx_qos -i {name} --pfc {pfc}")
    return "\n".join(lines) + "\n"


ROCE_QOS_UNIT_TEXT = f"""# clusterforge: applies the node's lossless RoCE settings (mlnx_qos) at boot; installed as
# {paths.ROCE_QOS_UNIT_INSTALLED}, the script as {paths.ROCE_QOS_SCRIPT_INSTALLED}
[Unit]
Description=clusterforge: lossless RoCE on the compute ports (trust DSCP, PFC)
After=network-online.target openibd.service
Wants=network-online.target

[Service]
Type=oneshot
ExecStart=/bin/sh {paths.ROCE_QOS_SCRIPT_INSTALLED}
RemainAfterExit=yes

[Install]
WantedBy=multi-user.target
"""


def render_network(ctx: RenderContext) -> dict[str, str]:
    networks = node_networks(ctx.valid, ctx.topo)
    texts = _RailTexts(ctx.valid)
    names = PortNames(ctx.valid, ctx.topo)
    lossless = _lossless(ctx.valid)
    files: dict[str, str] = {}
    for node, network in networks.items():
        devices = names.of(node, network)
        files[paths.netplan_rails(node)] = _netplan(texts, node, network, devices)
        qos = _roce_qos_script(node, network, devices, lossless) if lossless else None
        if qos is not None:
            files[paths.roce_qos_script(node)] = qos
            files[paths.ROCE_QOS_UNIT] = ROCE_QOS_UNIT_TEXT
    if any(network.interfaces > 1 for network in networks.values()):
        files[paths.SYSCTL_RAILS] = _sysctl()
    return dict(sorted(files.items()))
