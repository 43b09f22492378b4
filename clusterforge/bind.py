"""`clusterforge bind`: pin each planned port of a node to the device the node reports, from what its tools
print, so netplan matches the interface that exists (by MAC, with set-name) and NCCL names its RDMA device.

Facts files, one node each (the node is the file name up to its first '.', or Ansible's ansible_hostname):
- `ip -details -json link show` (iproute2): a JSON list of links, each with ifname, address, link_type and,
  with -details, parentbus/parentdev (the PCI address: iproute2 'ip link: show parent device' patch, whose
  example prints "parentbus": "usb", "parentdev": "1-10:1.1");
- `ibdev2netdev` or `ibdev2netdev -v` (MLNX_OFED/DOCA-OFED): lines 'mlx5_0 port 1 ==> ibp24s0 (Up)', the -v
  form with the PCI address first ('0000:18:00.0 mlx5_0 (MT4129 - ...) fw ... port 1 (ACTIVE) ==> ibp24s0 (Up)');
- Ansible `setup` facts as JSON (the module's result, `ansible -m setup` output 'host | SUCCESS => {...}', or
  a fact cache file): ansible_interfaces and ansible_<name> with macaddress, pciid and type.

A planned port is bound to a device by, in order: the PCI address the catalog gives it, its RDMA device in the
catalog, its own name (on-board eno1), the name the catalog quotes or derives; the ports left take the
remaining devices of their kind (InfiniBand or Ethernet link, NVIDIA NIC with an RDMA device or not) in PCI
address order, and say so in their source (`clusterforge verify` then checks the rails against the cabling).
A file that cannot be read or parsed is an error located in it; nothing is bound from a malformed file.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .catalog.models import Server
from .expand.topology import Topology
from .ifnames import _bus_ids, _group_of, catalog_name
from .inputs import InputRefused, JsonRefused, parse_json, read_regular
from .model.nodes import _IF_NAME, _MAC, _PCI, BoundPort, NodeGroup
from .validate import ValidBlueprint

_IBDEV = re.compile(
    r"^(?:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+)?(?P<rdma>[A-Za-z][\w.-]{0,31})"
    r"(?:\s.*?)?\s+port\s+\d+(?:\s+\([^)]*\))?\s+==>\s+(?P<net>\S+)\s+\((?P<state>[^)]*)\)\s*$"
)
_ANSIBLE_PREFIX = re.compile(r"^\s*[^\s|]+\s*\|\s*[A-Z]+\s*=>\s*")


def _natural(name: str) -> tuple[str, int]:
    match = re.fullmatch(r"(.*?)(\d*)", name)
    assert match
    return match[1], int(match[2] or 0)


class BindError(ValueError):
    """A facts file that cannot be used; the message starts with the file (and line) it is about."""


@dataclass
class NetDevice:
    name: str
    mac: str | None = None
    pci: str | None = None
    rdma: str | None = None
    link_type: str | None = None
    """'ether' or 'infiniband' where the facts say."""
    sources: set[str] = field(default_factory=set)


@dataclass
class NodeFacts:
    node: str
    devices: dict[str, NetDevice] = field(default_factory=dict)

    def device(self, name: str, source: str) -> NetDevice:
        found = self.devices.setdefault(name, NetDevice(name))
        found.sources.add(source)
        return found


def _lower(value: object, pattern: re.Pattern[str]) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.lower()
    return value if pattern.fullmatch(value) else None


def _ip_link(facts: NodeFacts, data: list[Any], where: str) -> None:
    for index, link in enumerate(data):
        if not isinstance(link, dict) or not isinstance(link.get("ifname"), str):
            raise BindError(f"{where}: [{index}]: not an `ip -json link` entry (an object with an 'ifname')")
        name = link["ifname"]
        if not _IF_NAME.fullmatch(name):
            raise BindError(f"{where}: [{index}]: '{name[:40]}' is not an interface name")
        if link.get("link_type") not in ("ether", "infiniband"):
            continue
        device = facts.device(name, where)
        device.link_type = link["link_type"]
        device.mac = _lower(link.get("permaddr"), _MAC) or _lower(link.get("address"), _MAC) or device.mac
        if link.get("parentbus") == "pci":
            device.pci = _lower(link.get("parentdev"), _PCI) or device.pci


def _ansible(facts: NodeFacts, data: dict[str, Any], where: str) -> None:
    interfaces = data.get("ansible_interfaces")
    if not isinstance(interfaces, list) or not all(isinstance(i, str) for i in interfaces):
        raise BindError(f"{where}: ansible_interfaces: expected the list of interface names of `setup` facts")
    for name in interfaces:
        info = data.get(f"ansible_{name.replace('-', '_').replace('.', '_')}")
        if not isinstance(info, dict) or not _IF_NAME.fullmatch(name):
            continue
        kind = info.get("type")
        link_type = "infiniband" if kind == "infiniband" else "ether" if kind == "ether" else None
        if link_type is None:
            continue
        device = facts.device(name, where)
        device.link_type = link_type
        device.mac = _lower(info.get("perm_macaddress"), _MAC) or _lower(info.get("macaddress"), _MAC) or device.mac
        device.pci = _lower(info.get("pciid"), _PCI) or device.pci


def _ibdev2netdev(facts: NodeFacts, text: str, where: str) -> None:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _IBDEV.match(line.strip())
        if match is None or not _IF_NAME.fullmatch(match["net"]):
            raise BindError(
                f"{where}:{number}: not an ibdev2netdev line ('mlx5_0 port 1 ==> ibp24s0 (Up)'): {line[:80]!r}"
            )
        device = facts.device(match["net"], where)
        device.rdma = match["rdma"]
        device.pci = _lower(match["pci"], _PCI) or device.pci


def read_facts(path: Path, facts_by_node: dict[str, NodeFacts]) -> None:
    """Read one facts file into the facts of its node (BindError when it cannot be used)."""
    where = str(path)
    try:
        text = read_regular(path)[1].decode("utf-8")
    except (InputRefused, OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BindError(f"{where}: cannot read: {reason}") from None
    node = path.name.split(".", 1)[0]
    body = _ANSIBLE_PREFIX.sub("", text, count=1) if _ANSIBLE_PREFIX.match(text) else text
    if body.lstrip()[:1] in ("[", "{"):
        try:
            data = parse_json(body)
        except JsonRefused as exc:
            raise BindError(f"{where}:{exc.line}:{exc.column}: {exc.reason}") from None
        if isinstance(data, dict):
            data = data.get("ansible_facts", data)
            if not isinstance(data, dict):
                raise BindError(f"{where}: ansible_facts: expected an object")
            hostname = data.get("ansible_hostname")
            node = hostname if isinstance(hostname, str) and hostname else node
            _ansible(facts_by_node.setdefault(node, NodeFacts(node)), data, where)
        else:
            _ip_link(facts_by_node.setdefault(node, NodeFacts(node)), data, where)
    else:
        _ibdev2netdev(facts_by_node.setdefault(node, NodeFacts(node)), text, where)


@dataclass
class NodeBinding:
    ports: dict[str, BoundPort]
    unbound: list[str]


def server_of(valid: ValidBlueprint, topo: Topology, node: str) -> tuple[Server, NodeGroup]:
    device = topo.devices[node]
    return valid.catalog.require(device.model, Server), next(
        g for g in valid.blueprint.node_groups if g.name == device.group
    )


def planned_ports(valid: ValidBlueprint, topo: Topology, node: str) -> list[tuple[str, bool]]:
    """The node's cabled ports on an addressed network, (port, on InfiniBand), in natural order (ib2 < ib10)."""
    infiniband = {n: getattr(f, "technology", "ethernet") == "infiniband" for n, f in valid.blueprint.fabrics.items()}
    addressed = set(topo.segments) | set(topo.lans)
    return sorted(
        {
            (link.a_port, infiniband.get(link.fabric, False))
            for link in topo.links_of(node)
            if link.tier == "node-leaf" and link.a == node and link.fabric in addressed
        },
        key=lambda item: _natural(item[0]),
    )


def nvidia_port(server: Server, port: str) -> bool:
    """Whether the port is on an NVIDIA NIC (which has an RDMA device)."""
    place = _group_of(server, port)
    return bool(place and place[0].nic and place[0].nic.startswith("nvidia/"))


def bind_node(valid: ValidBlueprint, topo: Topology, facts: NodeFacts) -> NodeBinding:
    """The node's planned ports pinned to its reported devices."""
    server, group = server_of(valid, topo, facts.node)
    planned = planned_ports(valid, topo, facts.node)
    bus_ids = _bus_ids(server)
    free = dict(facts.devices)
    out: dict[str, BoundPort] = {}

    def take(port: str, found: NetDevice, how: str) -> None:
        del free[found.name]
        source = ", ".join(sorted(found.sources)) + f" ({how})"
        out[port] = BoundPort(name=found.name, mac=found.mac, pci=found.pci, rdma=found.rdma, source=source[:300])

    for port, ib in planned:
        place = _group_of(server, port)
        rdma = place[0].devices[place[1]] if place and place[0].devices else None
        named = catalog_name(valid.catalog, server, group.os, port, ib)
        for how, test in (
            ("catalog PCI address", lambda d, p=port: d.pci is not None and d.pci == bus_ids.get(p)),
            ("catalog RDMA device", lambda d, r=rdma: r is not None and d.rdma == r),
            ("planned name", lambda d, p=port: d.name == p),
            ("catalog name", lambda d, n=named: n is not None and d.name == n.name),
        ):
            found = next((d for d in free.values() if test(d)), None)
            if found is not None:
                take(port, found, how)
                break
    for port, ib in planned:
        if port in out:
            continue
        nvidia = nvidia_port(server, port)
        kind = "infiniband" if ib else "ether"
        candidates = sorted(
            (d for d in free.values() if d.link_type == kind and (d.rdma is not None) == nvidia and d.pci is not None),
            key=lambda d: (d.pci or "", d.name),
        )
        if candidates:
            take(port, candidates[0], "PCI order among the node's free devices of its kind")
    return NodeBinding(out, [port for port, _ in planned if port not in out])


def bindings_yaml(bindings: dict[str, dict[str, BoundPort]], files: list[str]) -> str:
    lines = [
        "# clusterforge bind: each node's planned ports pinned to the devices it reported, from "
        + ", ".join(files)[:300],
        "# Include this file from the blueprint (include: [<this file>]) and render again.",
        "bindings:",
    ]
    for node in sorted(bindings):
        lines.append(f"  {node}:")
        for port, bound in sorted(bindings[node].items()):
            fields = bound.model_dump(exclude_none=True, exclude_defaults=False)
            text = ", ".join(f"{key}: {json.dumps(value)}" for key, value in fields.items())
            lines.append(f"    {port}: {{{text}}}")
    return "\n".join(lines) + "\n"


def bind(valid: ValidBlueprint, topo: Topology, paths: list[Path]) -> tuple[dict[str, NodeBinding], list[str]]:
    """Bindings of every node a facts file is about; unknown nodes are BindError."""
    facts: dict[str, NodeFacts] = {}
    origin: dict[str, str] = defaultdict(str)
    for path in paths:
        before = set(facts)
        read_facts(path, facts)
        for node in set(facts) - before:
            origin[node] = str(path)
    out: dict[str, NodeBinding] = {}
    for node in sorted(facts):
        if node not in topo.devices or topo.devices[node].kind != "node":
            raise BindError(
                f"{origin[node]}: '{node}' is not a node of the blueprint (name the file <node>.<tool>.json)"
            )
        out[node] = bind_node(valid, topo, facts[node])
    return out, [str(p) for p in paths]
