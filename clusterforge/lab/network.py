"""The twin's wires: one network namespace per node and one per network (the "switch"), nothing else.

Each node's rendered interfaces are veths named as the netplan names them, their other ends plugged into a
bridge per subnet in the switch namespace of the subnet's network; each bridge holds the gateways the plan
gives that subnet (the leaf or router the real network has), and a switch namespace forwards between its own
subnets only. No namespace has a link to the host's or to any other namespace: `isolation_problems` proves
it from `ip -j` output, and the lab refuses to start (and `check` fails) when it finds one.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .shape import Shape


class NetworkError(RuntimeError):
    """A namespace, link or address could not be made, or the lab's wires would reach outside it."""


ALLOWED_KINDS = {"veth", "bridge"}
"""Link kinds a lab namespace may hold besides loopback."""


@dataclass(frozen=True)
class Plan:
    prefix: str
    node_ns: dict[str, str]
    """node -> its namespace."""
    switch_ns: dict[str, str]
    """network -> its switch namespace."""
    bridges: dict[str, tuple[str, str]]
    """subnet -> (switch namespace, bridge name)."""
    deploy_ns: str
    """Where Ansible and the checks that play the deploy host run: the in-band network's switch namespace."""

    @property
    def namespaces(self) -> list[str]:
        return [*self.switch_ns.values(), *self.node_ns.values()]


def lab_prefix(key: str) -> str:
    """A short prefix for the lab's namespaces, from its work folder (so two labs never share a name)."""
    return "cfl" + hashlib.sha256(key.encode()).hexdigest()[:5]


def plan_network(shape: Shape, names: Sequence[str], prefix: str) -> Plan:
    networks = sorted({shape.segments[p.segment].network for n in names for p in shape.node(n).ports if p.segment})
    switch_ns = {net: f"{prefix}-s{i}" for i, net in enumerate(networks)}
    bridges: dict[str, tuple[str, str]] = {}
    for i, subnet in enumerate(sorted(shape.segments)):
        segment = shape.segments[subnet]
        if segment.network in switch_ns:
            bridges[subnet] = (switch_ns[segment.network], f"br{i}")
    node_ns = {name: f"{prefix}-n{i}" for i, name in enumerate(names)}
    return Plan(prefix, node_ns, switch_ns, bridges, switch_ns[shape.inband])


def ip(*args: str, ns: str | None = None, check: bool = True) -> str:
    argv = ["ip", *(("-n", ns) if ns else ()), *args]
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise NetworkError(f"{' '.join(argv)}: {result.stderr.strip()}")
    return result.stdout


def build(
    shape: Shape, names: Sequence[str], plan: Plan, veth_names: Mapping[tuple[str, str], str] | None = None
) -> None:
    """Namespaces, bridges with their gateways, and a veth per rendered interface of every node, named as
    `veth_names` gives (node, planned port), else as the rendered netplan names it."""
    for ns in plan.namespaces:
        ip("netns", "add", ns)
        ip("link", "set", "lo", "up", ns=ns)
    for ns in plan.switch_ns.values():
        _sysctl(ns, "net.ipv4.ip_forward", "1")
    for subnet, (ns, bridge) in plan.bridges.items():
        ip("link", "add", bridge, "type", "bridge", ns=ns)
        ip("link", "set", bridge, "mtu", "9216", "up", ns=ns)
        for address in _bridge_addresses(shape, subnet, ns == plan.deploy_ns):
            ip("addr", "add", address, "dev", bridge, ns=ns)
    for index, name in enumerate(names):
        for port_index, port in enumerate(shape.node(name).ports):
            if port.segment is None or port.segment not in plan.bridges:
                continue
            ns, bridge = plan.bridges[port.segment]
            peer = f"p{index}x{port_index}"
            veth = (veth_names or {}).get((name, port.key), port.name)
            ip("link", "add", veth, "netns", plan.node_ns[name], "type", "veth", "peer", "name", peer, "netns", ns)
            ip("link", "set", peer, "mtu", "9216", "master", bridge, "up", ns=ns)
            ip("link", "set", veth, "mtu", "9216", ns=plan.node_ns[name])


def _bridge_addresses(shape: Shape, subnet: str, deploy: bool) -> list[str]:
    """The segment's gateways; on the in-band network a segment without one gets the deploy host's address (the
    subnet's last), so Ansible reaches every node."""
    network = ipaddress.ip_network(subnet)
    found = [f"{g}/{network.prefixlen}" for g in shape.segments[subnet].gateways]
    if not found and deploy:
        found.append(f"{network.broadcast_address - 1}/{network.prefixlen}")
    return found


def _sysctl(ns: str, key: str, value: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"{key}={value}"], capture_output=True, check=True)


def delete(namespaces: Iterable[str]) -> None:
    """Delete the namespaces (their veths and bridges go with them); a missing one is not an error."""
    present = set(_netns_ids())
    for ns in namespaces:
        if ns in present:
            ip("netns", "del", ns, check=False)


def _netns_ids() -> dict[str, int | None]:
    out = ip("-j", "netns", "list", check=False).strip()
    return {e["name"]: e.get("id") for e in json.loads(out or "[]")}


def isolation_problems(
    links: Mapping[str, list[dict[str, Any]]],
    routes: Mapping[str, list[dict[str, Any]]],
    host_links: list[dict[str, Any]],
    ns_ids: Mapping[str, int | None],
    subnets: Iterable[str],
) -> list[str]:
    """Why the lab's namespaces could reach outside them (empty when they cannot), from `ip -j -d link`,
    `ip -j -4 route show table all` of each lab namespace and `ip -j -d link` of the host's: every link is
    loopback, a veth or a bridge; no veth of the host's namespace has its peer in a lab namespace; every route
    goes to a lab subnet, and a gateway (a default route's) lies in one."""
    lab_nets = [ipaddress.ip_network(s) for s in subnets]
    problems = []
    for ns, ns_links in links.items():
        for link in ns_links:
            kind = (link.get("linkinfo") or {}).get("info_kind")
            if link.get("ifname") != "lo" and kind not in ALLOWED_KINDS:
                problems.append(f"{ns}: link {link.get('ifname')} is a {kind or 'device'}, not a veth or bridge")
    lab_ids = {i for ns, i in ns_ids.items() if ns in links and i is not None}
    for link in host_links:
        if (link.get("linkinfo") or {}).get("info_kind") == "veth" and link.get("link_netnsid") in lab_ids:
            problems.append(f"host namespace: veth {link.get('ifname')} has its peer in a lab namespace")
    for ns, ns_routes in routes.items():
        for route in ns_routes:
            problems += _route_problems(ns, route, lab_nets)
    return problems


def _route_problems(ns: str, route: dict[str, Any], lab_nets: list[Any]) -> list[str]:
    if route.get("type") in {"broadcast", "local", "multicast"} and route.get("dev") == "lo":
        return []
    dst = route.get("dst", "")
    gateway = route.get("gateway")
    problems = []
    if gateway and not any(ipaddress.ip_address(gateway) in net for net in lab_nets):
        problems.append(f"{ns}: route to {dst} via {gateway}, outside the lab's subnets")
    if dst == "default":
        if not gateway:
            problems.append(f"{ns}: default route without a gateway (dev {route.get('dev')})")
    elif dst and not _inside(dst, lab_nets) and route.get("table") != "local":
        problems.append(f"{ns}: route to {dst}, outside the lab's subnets")
    return problems


def _inside(dst: str, lab_nets: list[Any]) -> bool:
    try:
        net = ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False)
    except ValueError:
        return False
    return any(net.subnet_of(lab) for lab in lab_nets if lab.version == net.version)


def assert_isolated(namespaces: Sequence[str], subnets: Iterable[str], switch_namespaces: Iterable[str]) -> None:
    """Raise NetworkError unless the namespaces are closed (see `isolation_problems`); a switch namespace must
    also have no default route at all (the twin's networks end there)."""
    links = {ns: json.loads(ip("-j", "-d", "link", "show", ns=ns) or "[]") for ns in namespaces}
    routes = {ns: json.loads(ip("-j", "-4", "route", "show", "table", "all", ns=ns) or "[]") for ns in namespaces}
    host_links = json.loads(ip("-j", "-d", "link", "show") or "[]")
    problems = isolation_problems(links, routes, host_links, _netns_ids(), subnets)
    for ns in switch_namespaces:
        problems += [f"{ns}: the switch has a default route" for r in routes[ns] if r.get("dst") == "default"]
    if problems:
        raise NetworkError("the lab would reach outside its namespaces:\n  " + "\n  ".join(problems))
