"""network output family: per node, a netplan file for its compute-fabric (rail) interfaces, and the ARP
sysctls every node with rails gets.

Each rail port is addressed in its rail's own subnet (expand/addressing.py). On a routed Ethernet rail
that spans several leaves, the port's segment is one leaf's, and a route sends the rest of the rail block
through that leaf, so traffic to rail k always leaves by the rail-k NIC. `arp_ignore=1` (answer ARP only
on the interface that owns the address) and `arp_announce=2` (announce with the outgoing interface's own
address) keep a host's NICs from answering for each other.
"""

from __future__ import annotations

import json
from collections import defaultdict

from ..expand.topology import RailSegment, Topology
from . import paths
from .context import RenderContext, per_topology

ETHERNET_MTU = 9000
"""Host MTU of RoCE rail interfaces (switch ports at 9216 carry it); RDMA then uses a 4096-byte path MTU."""

ARP_SYSCTLS = {"net.ipv4.conf.all.arp_ignore": 1, "net.ipv4.conf.all.arp_announce": 2}


@per_topology
def rail_ports(topo: Topology) -> dict[str, dict[str, tuple[str, str, RailSegment]]]:
    """node -> port -> (network, address, segment), for every node with an addressed compute port."""
    out: dict[str, dict[str, tuple[str, str, RailSegment]]] = defaultdict(dict)
    for network in sorted(topo.segments):
        for key, segment in topo.segments[network].items():
            node, _, port = key.partition(":")
            out[node][port] = (network, str(topo.addresses[network][key]), segment)
    return out


def _netplan(topo: Topology, node: str, ports: dict[str, tuple[str, str, RailSegment]]) -> str:
    lines = [
        f"# clusterforge: rail interfaces of {node}, one subnet per rail; installed as {paths.NETPLAN_RAILS_INSTALLED}",
        "# in-band and storage interfaces are not in this file",
        "network:",
        "  version: 2",
        "  renderer: networkd",
        "  ethernets:",
    ]
    for port in sorted(ports, key=lambda p: (ports[p][2].rail, p)):
        network, address, segment = ports[port]
        ethernet = topo.fabrics[network].technology == "ethernet"
        lines += [
            f"    {json.dumps(port)}:",
            f"      # rail {segment.rail} of fabric {network}",
            f"      addresses: [{json.dumps(f'{address}/{segment.subnet.prefixlen}')}]",
        ]
        if ethernet:
            lines.append(f"      mtu: {ETHERNET_MTU}")
        if segment.gateway is not None and segment.rail_block != segment.subnet:
            lines.append(
                f"      routes: [{{to: {json.dumps(str(segment.rail_block))}, "
                f"via: {json.dumps(str(segment.gateway))}}}]"
            )
        lines.append("      optional: true")
    return "\n".join(lines) + "\n"


def _sysctl() -> str:
    lines = [
        "# clusterforge: ARP on hosts with several rail NICs: answer and announce only on the interface",
        f"# that owns the address; installed as {paths.SYSCTL_RAILS_INSTALLED}",
    ]
    return "\n".join([*lines, *(f"{k} = {v}" for k, v in ARP_SYSCTLS.items())]) + "\n"


def network_paths(topo: Topology) -> dict[str, list[tuple[str, str]]]:
    """node -> [(rendered path, installed path)] of its network files."""
    return {
        node: [
            (paths.netplan_rails(node), paths.NETPLAN_RAILS_INSTALLED),
            (paths.SYSCTL_RAILS, paths.SYSCTL_RAILS_INSTALLED),
        ]
        for node in _rail_nodes(topo)
    }


def _rail_nodes(topo: Topology) -> dict[str, None]:
    """The nodes with an addressed compute port, in rail_ports' order, without formatting any address."""
    return dict.fromkeys(key.partition(":")[0] for network in sorted(topo.segments) for key in topo.segments[network])


def render_network(ctx: RenderContext) -> dict[str, str]:
    ports = rail_ports(ctx.topo)
    files = {paths.netplan_rails(node): _netplan(ctx.topo, node, own) for node, own in ports.items()}
    if files:
        files[paths.SYSCTL_RAILS] = _sysctl()
    return dict(sorted(files.items()))
