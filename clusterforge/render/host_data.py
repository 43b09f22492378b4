"""Per-port host data, out of the inventory: one JSON file per rack, keyed by host, under `ansible/host_data/`.

What a node has per port (its rails: port, leaf, leaf port, address, subnet and gateway; every port's address;
its network files and folders) makes most of a GPU node's values. `ansible-inventory --list` and the start of every play
pay for each value of every host, so these values live here, and the cf_network role reads its host's entry
with `include_vars` only for the hosts a play runs on. One file per rack, not per host: a rack's few hosts
parse a small file each, and at 100,000 GPUs the render writes 3,600 files instead of 12,500
(docs/ansible-at-scale.md has the figures).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, NamedTuple
from weakref import WeakKeyDictionary

from ..expand.topology import Topology
from .addresses import topology_address_texts
from .ansible_model import InstallFile, install_vars, interfaces
from .inventory_json import json_lines
from .network import network_paths

HOST_DATA_DIR = "ansible/host_data"


def host_data_path(rack: str) -> str:
    """The host data file of the nodes in `rack`."""
    return f"{HOST_DATA_DIR}/{rack}.json"


def _rails(topo: Topology) -> dict[str, dict[int, dict[str, str]]]:
    """node -> rail -> its NIC on that rail, the leaf and leaf port, the NIC's address, subnet and gateway."""
    compute = {name for name, fabric in topo.fabrics.items() if fabric.kind == "compute"}
    addresses = topology_address_texts(topo)
    texts: dict[int, tuple[str, str | None]] = {}
    """id of a rail segment -> its subnet and gateway as text: many ports share one segment"""
    rails: dict[str, dict[int, dict[str, str]]] = defaultdict(dict)
    for link in topo.links:
        if link.tier != "node-leaf" or link.fabric not in compute or link.rail is None:
            continue
        key = f"{link.a}:{link.a_port}"
        entry = {"fabric": link.fabric, "port": link.a_port, "leaf": link.b, "leaf_port": link.b_port}
        address = addresses.get(link.fabric, {}).get(key)
        if address is not None:
            entry["address"] = address
        segment = topo.segments.get(link.fabric, {}).get(key)
        if segment is not None:
            if id(segment) not in texts:
                gateway = segment.gateway
                texts[id(segment)] = str(segment.subnet), None if gateway is None else str(gateway)
            entry["subnet"], gateway_text = texts[id(segment)]
            if gateway_text is not None:
                entry["gateway"] = gateway_text
        rails[link.a][link.rail] = entry
    return rails


def build_host_data(topo: Topology) -> dict[str, dict[str, dict[str, Any]]]:
    """rack -> node -> its `cf_rails`, `cf_port_addresses`, `cf_network_files` and `cf_network_dirs`, for the
    nodes that have any."""
    rails = _rails(topo)
    ports = interfaces(topo)[1]
    network = network_paths(topo)
    racks: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for node in sorted(topo.nodes(), key=lambda d: d.name):
        entry: dict[str, Any] = {}
        if node.name in rails:
            entry["cf_rails"] = {str(rail): value for rail, value in sorted(rails[node.name].items())}
        if node.name in ports:
            entry["cf_port_addresses"] = {net: dict(sorted(p.items())) for net, p in sorted(ports[node.name].items())}
        if node.name in network:
            entry.update(install_vars("cf_network", [InstallFile(*f) for f in network[node.name]]))
        if entry:
            if node.rack is None:
                raise ValueError(f"node {node.name} has per-port data but no rack")
            racks[node.rack][node.name] = entry
    return dict(sorted(racks.items()))


def host_data_json(hosts: dict[str, dict[str, Any]]) -> str:
    """One rack's host data as JSON, one line per host (template syntax in a value is written unsafe)."""
    return "{\n" + ",\n".join(json_lines(sorted(hosts.items()), "  ")) + "\n}\n"


class HostFacts(NamedTuple):
    """What the consistency check reads of a host's entry: its rack, the files it copies, its rails."""

    rack: str
    copies: tuple[str, ...]
    """`src` of each of its `cf_network_files`."""
    rails: int


def host_facts(rack: str, entry: dict[str, Any]) -> HostFacts:
    return HostFacts(
        rack, tuple(f["src"] for f in entry.get("cf_network_files") or []), len(entry.get("cf_rails") or {})
    )


_MADE: WeakKeyDictionary[Topology, tuple[dict[str, str], dict[str, HostFacts]]] = WeakKeyDictionary()


def made_host_data(topo: Topology) -> tuple[dict[str, str], dict[str, HostFacts]] | None:
    """The host data last rendered for `topo`: its files' texts by path, and each host's facts as the texts
    were written from them (so the consistency check need not parse 15 MB of JSON at 100,000 GPUs)."""
    return _MADE.get(topo)


def render_host_data(topo: Topology) -> dict[str, str]:
    files: dict[str, str] = {}
    facts: dict[str, HostFacts] = {}
    for rack, hosts in build_host_data(topo).items():
        files[host_data_path(rack)] = host_data_json(hosts)
        facts.update((host, host_facts(rack, entry)) for host, entry in hosts.items())
    _MADE[topo] = files, facts
    return files
