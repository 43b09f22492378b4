"""What the twin is made of, read from a rendered output folder: the nodes (name, in-band address, groups,
interfaces as the rendered netplan names and addresses them, GPU device files gres.conf names), the networks
(one segment per subnet, with the gateways the plan gives it), and the scaled-down subset that keeps the shape.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hostlist
import yaml


class ShapeError(ValueError):
    """The rendered folder lacks what the twin needs, or the subset asked for cannot keep the shape."""


@dataclass(frozen=True)
class Port:
    name: str
    """The interface name the rendered netplan gives the port: its set-name, else the name it matches, else
    its key (a port with no known name keeps its planned one)."""
    address: str | None
    """address/prefix on this port (a bond's address is on each of its members' segment), else None."""
    segment: str | None
    """The subnet the port is plugged into (a bond member: its bond's subnet), else None (not plugged)."""
    key: str = ""
    """The planned port (the netplan key: ens1, eno2, ib1)."""
    matched: bool = False
    """Whether netplan matches the interface (by MAC or name) rather than taking the key as its name."""


@dataclass(frozen=True)
class Node:
    name: str
    address: str
    """The in-band address Ansible connects to (ansible_host)."""
    groups: frozenset[str]
    vars: dict[str, Any] = field(hash=False, compare=False)
    ports: tuple[Port, ...] = ()
    gpu_files: tuple[str, ...] = ()
    """Device files gres.conf names for this node (/dev/nvidia0, ...)."""

    @property
    def controller(self) -> bool:
        return "slurm_controllers" in self.groups

    @property
    def slurmd(self) -> bool:
        return any(g.startswith("slurm_partition_") for g in self.groups)


@dataclass(frozen=True)
class Segment:
    subnet: str
    network: str
    """The blueprint network (fabric) the subnet belongs to."""
    gateways: tuple[str, ...]
    """Addresses the plan gives the segment's router (netplan routes, rail gateways)."""


@dataclass(frozen=True)
class Shape:
    out: Path
    nodes: tuple[Node, ...]
    segments: dict[str, Segment]
    inband: str
    """The in-band network (the one ansible_host addresses are on)."""
    pools: dict[str, str] = field(default_factory=dict)
    """network -> its address pool (cluster.yml's cf_networks)."""

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)


def _walk(inventory: dict[str, Any], name: str, node: dict[str, Any], inherited: dict[str, Any]) -> Iterator[tuple]:
    """(host, group, vars) for every host under `node`, vars merged from its groups down."""
    merged = {**inherited, **(node.get("vars") or {})}
    for host, host_vars in (node.get("hosts") or {}).items():
        yield host, name, {**merged, **(host_vars or {})}
    for child, child_node in (node.get("children") or {}).items():
        yield from _walk(inventory, child, child_node or inventory.get(child) or {}, merged)


def _gpu_files(out: Path) -> dict[str, list[str]]:
    files: dict[str, list[str]] = {}
    path = out / "slurm/gres.conf"
    if not path.exists():
        return files
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"NodeName=(\S+) .*File=(\S+)", line)
        if match:
            for host in hostlist.expand_hostlist(match.group(1)):
                files.setdefault(host, []).append(match.group(2))
    return files


def _ports(netplan: dict[str, Any]) -> list[Port]:
    """Every ethernet of the node's netplan, addressed as rendered; bond members carry the bond's subnet."""
    net = netplan.get("network") or {}
    ethernets: dict[str, Any] = net.get("ethernets") or {}
    bonded: dict[str, str] = {}
    for bond in (net.get("bonds") or {}).values():
        for member in bond.get("interfaces") or []:
            addresses = bond.get("addresses") or []
            bonded[member] = addresses[0] if addresses else ""
    ports = []
    for name, port in sorted(ethernets.items()):
        addresses = (port or {}).get("addresses") or []
        address = addresses[0] if addresses else None
        via_bond = bonded.get(name)
        plug = address or via_bond or None
        segment = str(ipaddress.ip_interface(plug).network) if plug else None
        matched = bool((port or {}).get("match"))
        ports.append(Port(interface_name(name, port or {}), address, segment, name, matched))
    return ports


def interface_name(key: str, port: dict[str, Any]) -> str:
    """The name netplan gives the interface of the ethernet `key`: set-name, else the matched name, else the key."""
    match = port.get("match") or {}
    return str(port.get("set-name") or match.get("name") or key)


def _gateways(netplan: dict[str, Any]) -> Iterator[str]:
    net = netplan.get("network") or {}
    for kind in ("ethernets", "bonds"):
        for port in (net.get(kind) or {}).values():
            for route in (port or {}).get("routes") or []:
                if route.get("via"):
                    yield str(route["via"])


def read_shape(out: Path) -> Shape:
    """The twin's nodes and segments from the rendered folder `out`."""
    inventory = json.loads((out / "ansible/inventory.json").read_text(encoding="utf-8"))
    cluster = yaml.safe_load((out / "ansible/cluster.yml").read_text(encoding="utf-8"))
    groups: dict[str, set[str]] = {}
    host_vars: dict[str, dict[str, Any]] = {}
    for host, group, values in _walk(inventory, "all", inventory["all"], {}):
        groups.setdefault(host, set()).add(group)
        host_vars.setdefault(host, {}).update(values)
    nodes_group = {h for h, _, _ in _walk(inventory, "nodes", inventory["all"]["children"].get("nodes") or {}, {})}
    pools = {name: ipaddress.ip_network(n["ipv4_pool"]) for name, n in (cluster.get("cf_networks") or {}).items()}
    gpu_files = _gpu_files(out)
    gateways: set[str] = set()
    nodes = []
    for host in sorted(nodes_group):
        path = out / "network/netplan" / f"{host}.yaml"
        netplan = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}
        gateways.update(_gateways(netplan))
        rack_data = _host_data(out, host_vars[host].get("cf_rack"))
        gateways.update(
            r["gateway"] for r in (rack_data.get(host, {}).get("cf_rails") or {}).values() if r.get("gateway")
        )
        nodes.append(
            Node(
                name=host,
                address=str(host_vars[host]["ansible_host"]),
                groups=frozenset(groups[host]),
                vars={**host_vars[host], **rack_data.get(host, {})},
                ports=tuple(_ports(netplan)),
                gpu_files=tuple(gpu_files.get(host, [])),
            )
        )
    segments: dict[str, Segment] = {}
    for node in nodes:
        for port in node.ports:
            if port.segment and port.segment not in segments:
                subnet = ipaddress.ip_network(port.segment)
                network = next((n for n, pool in pools.items() if subnet.subnet_of(pool)), "unknown")  # type: ignore[arg-type]
                inside = tuple(sorted(g for g in gateways if ipaddress.ip_address(g) in subnet))
                segments[port.segment] = Segment(port.segment, network, inside)
    inband = _inband(nodes, segments)
    return Shape(
        out=out, nodes=tuple(nodes), segments=segments, inband=inband, pools={n: str(p) for n, p in pools.items()}
    )


_RACK_DATA: dict[tuple[Path, str], dict[str, Any]] = {}


def _host_data(out: Path, rack: str | None) -> dict[str, Any]:
    if rack is None:
        return {}
    key = (out, rack)
    if key not in _RACK_DATA:
        path = out / "ansible/host_data" / f"{rack}.json"
        _RACK_DATA[key] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    return _RACK_DATA[key]


def _inband(nodes: Iterable[Node], segments: dict[str, Segment]) -> str:
    for node in nodes:
        for port in node.ports:
            if port.segment and ipaddress.ip_address(node.address) in ipaddress.ip_network(port.segment):
                return segments[port.segment].network
    raise ShapeError("no node's netplan addresses its ansible_host: the twin cannot reach the nodes")


def shape_true_subset(shape: Shape) -> list[str]:
    """The fewest nodes that keep the design's shape: every Slurm controller, every node group (two nodes of a
    group with Slurm nodes, so a job spans nodes), a whole NVLink domain where a group has multi-node ones, and
    nodes on two leaves of each rail where the rail has two leaves."""
    chosen: list[str] = []

    def take(names: Iterable[str]) -> None:
        for name in names:
            if name not in chosen:
                chosen.append(name)

    take(n.name for n in shape.nodes if n.controller)
    by_group: dict[str, list[Node]] = {}
    for node in shape.nodes:
        by_group.setdefault(str(node.vars.get("cf_node_group")), []).append(node)
    for members in by_group.values():
        first = members[0]
        domain = first.vars.get("cf_nvlink_domain")
        if domain is not None and first.vars.get("cf_imex_files"):
            take(n.name for n in members if n.vars.get("cf_nvlink_domain") == domain)
        take(n.name for n in members[: 2 if first.slurmd else 1])
    _two_leaves_per_rail(shape, chosen, take)
    return [n.name for n in shape.nodes if n.name in chosen]


def _two_leaves_per_rail(shape: Shape, chosen: list[str], take: Any) -> None:
    leaves: dict[tuple[str, str], dict[str, list[str]]] = {}  # (fabric, rail) -> leaf -> nodes
    for node in shape.nodes:
        for rail, data in (node.vars.get("cf_rails") or {}).items():
            leaves.setdefault((data.get("fabric", ""), rail), {}).setdefault(data["leaf"], []).append(node.name)
    for by_leaf in leaves.values():
        have = [leaf for leaf, names in by_leaf.items() if set(names) & set(chosen)]
        for leaf, names in by_leaf.items():
            if len(have) >= 2:
                break
            if leaf not in have:
                take(names[:1])
                have.append(leaf)


def subset(shape: Shape, nodes: int | None, scale: bool) -> list[str]:
    """All nodes, or the shape-true subset (`scale`), grown in inventory order to `nodes` when given."""
    if nodes is None and not scale:
        return [n.name for n in shape.nodes]
    names = shape_true_subset(shape)
    if nodes is not None:
        if nodes < len(names):
            raise ShapeError(
                f"--nodes {nodes} cannot keep the shape: it needs at least {len(names)} nodes ({', '.join(names)})"
            )
        names += [n.name for n in shape.nodes if n.name not in names][: nodes - len(names)]
    return [n.name for n in shape.nodes if n.name in names]
