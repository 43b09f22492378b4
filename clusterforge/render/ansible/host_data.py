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
from json.encoder import encode_basestring_ascii  # what json.dumps does with a str
from typing import Any, NamedTuple

from ...expand.topology import Topology
from ..addresses import topology_address_texts
from ..network.network import network_paths
from .ansible_model import InstallFile, install_vars, interfaces
from .inventory_json import json_lines, plain

HOST_DATA_DIR = "ansible/host_data"


def host_data_path(rack: str) -> str:
    """The host data file of the nodes in `rack`."""
    return f"{HOST_DATA_DIR}/{rack}.json"


class Rail(NamedTuple):
    """A node's NIC on a rail: its fabric and port, the leaf and leaf port, its address, subnet and gateway."""

    fabric: str
    port: str
    leaf: str
    leaf_port: str
    address: str | None
    subnet: str | None
    gateway: str | None

    def as_var(self) -> dict[str, str]:
        entry = {"fabric": self.fabric, "port": self.port, "leaf": self.leaf, "leaf_port": self.leaf_port}
        if self.address is not None:
            entry["address"] = self.address
        if self.subnet is not None:
            entry["subnet"] = self.subnet
        if self.gateway is not None:
            entry["gateway"] = self.gateway
        return entry


def _rails(topo: Topology) -> dict[str, dict[int, Rail]]:
    """node -> rail -> its NIC on that rail."""
    compute = [name for name, fabric in topo.fabrics.items() if fabric.kind == "compute"]
    # each compute network's port addresses and rail segments, by port key
    addresses = {name: topology_address_texts(topo).get(name, {}) for name in compute}
    segments = {name: topo.segments.get(name, {}) for name in compute}
    texts: dict[int, tuple[str, str | None]] = {}
    """id of a rail segment -> its subnet and gateway as text: many ports share one segment"""
    rails: dict[str, dict[int, Rail]] = defaultdict(dict)
    for link in topo.links:
        if link.tier != "node-leaf" or link.fabric not in segments or link.rail is None:
            continue
        key = f"{link.a}:{link.a_port}"
        subnet = gateway = None
        segment = segments[link.fabric].get(key)
        if segment is not None:
            if id(segment) not in texts:
                texts[id(segment)] = str(segment.subnet), None if segment.gateway is None else str(segment.gateway)
            subnet, gateway = texts[id(segment)]
        address = addresses[link.fabric].get(key)
        rails[link.a][link.rail] = Rail(link.fabric, link.a_port, link.b, link.b_port, address, subnet, gateway)
    return rails


class _Sources:
    """What the host data is made of, per node: its rails, its port addresses, its network files."""

    def __init__(self, topo: Topology) -> None:
        self.rails = _rails(topo)
        self.ports = interfaces(topo)[1]
        self.network = network_paths(topo)

    def entry(self, node: str) -> dict[str, Any]:
        """The node's `cf_rails`, `cf_port_addresses`, `cf_network_files` and `cf_network_dirs` (those it has)."""
        entry: dict[str, Any] = {}
        if node in self.rails:
            entry["cf_rails"] = {str(rail): value.as_var() for rail, value in sorted(self.rails[node].items())}
        if node in self.ports:
            entry["cf_port_addresses"] = {net: dict(sorted(p.items())) for net, p in sorted(self.ports[node].items())}
        if node in self.network:
            entry.update(install_vars("cf_network", [InstallFile(*f) for f in self.network[node]]))
        return entry

    def facts(self, rack: str, node: str) -> HostFacts:
        return HostFacts(rack, tuple(src for src, _ in self.network.get(node, [])), len(self.rails.get(node, {})))


def build_host_data(topo: Topology) -> dict[str, dict[str, dict[str, Any]]]:
    """rack -> node -> its `cf_rails`, `cf_port_addresses`, `cf_network_files` and `cf_network_dirs`, for the
    nodes that have any."""
    sources = _Sources(topo)
    return {rack: {node: sources.entry(node) for node in nodes} for rack, nodes in _racks(topo, sources).items()}


def _racks(topo: Topology, sources: _Sources) -> dict[str, list[str]]:
    """rack -> its nodes with host data, by name; racks by name."""
    racks: dict[str, list[str]] = defaultdict(list)
    for node in sorted(topo.nodes(), key=lambda d: d.name):
        if node.name in sources.rails or node.name in sources.ports or node.name in sources.network:
            if node.rack is None:
                raise ValueError(f"node {node.name} has per-port data but no rack")
            racks[node.rack].append(node.name)
    return dict(sorted(racks.items()))


def host_data_json(hosts: dict[str, dict[str, Any]]) -> str:
    """One rack's host data as JSON, one line per host (template syntax in a value is written unsafe)."""
    return "{\n" + ",\n".join(json_lines(sorted(hosts.items()), "  ")) + "\n}\n"


class _JsonTexts(dict[str, str]):
    """A string -> its JSON text (what json.dumps writes), made once per string."""

    def __missing__(self, text: str) -> str:
        found = self[text] = encode_basestring_ascii(text)
        return found


class _HostTexts:
    """A host's entry as JSON, written from its parts: what `host_data_json` writes of it when nothing needs
    escaping, in a fraction of the time (12,500 hosts of 60 values at 100,000 GPUs). Keys in sorted order, as
    the encoder sorts them."""

    def __init__(self, sources: _Sources) -> None:
        self.sources = sources
        self.json = _JsonTexts()
        self.dirs: dict[tuple[str, ...], str] = {}

    def line(self, node: str) -> str:
        sources, fields = self.sources, []
        if node in sources.network:
            fields += self._files(sources.network[node])
        if node in sources.ports:
            fields.append(f'"cf_port_addresses": {self._ports(sources.ports[node])}')
        if node in sources.rails:
            rails = sorted((str(rail), value) for rail, value in sources.rails[node].items())
            fields.append(f'"cf_rails": {{{", ".join([f"{self.json[r]}: {self._rail(v)}" for r, v in rails])}}}')
        return f"  {self.json[node]}: {{{', '.join(fields)}}}"

    def _files(self, files: list[tuple[str, str]]) -> list[str]:
        dests = tuple(dest for _, dest in files)
        if dests not in self.dirs:
            self.dirs[dests] = self._list(sorted({InstallFile("", dest).dir for dest in dests}))
        text = ", ".join(f'{{"dest": {self.json[dest.lstrip("/")]}, "src": {self.json[src]}}}' for src, dest in files)
        return [f'"cf_network_dirs": {self.dirs[dests]}', f'"cf_network_files": [{text}]']

    def _list(self, texts: list[str]) -> str:
        return f"[{', '.join(map(self.json.__getitem__, texts))}]"

    def _ports(self, by_network: dict[str, dict[str, str]]) -> str:
        json = self.json
        networks = (f"{json[net]}: {self._addresses(ports)}" for net, ports in sorted(by_network.items()))
        return f"{{{', '.join(networks)}}}"

    def _addresses(self, ports: dict[str, str]) -> str:
        json = self.json
        return f"{{{', '.join(f'{json[p]}: {encode_basestring_ascii(a)}' for p, a in sorted(ports.items()))}}}"

    def _rail(self, rail: Rail) -> str:
        json = self.json
        address = "" if rail.address is None else f'"address": {encode_basestring_ascii(rail.address)}, '
        gateway = "" if rail.gateway is None else f'"gateway": {json[rail.gateway]}, '
        subnet = "" if rail.subnet is None else f', "subnet": {json[rail.subnet]}'
        return (
            f'{{{address}"fabric": {json[rail.fabric]}, {gateway}"leaf": {json[rail.leaf]}, '
            f'"leaf_port": {json[rail.leaf_port]}, "port": {json[rail.port]}{subnet}}}'
        )


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


def host_data_files(topo: Topology) -> tuple[dict[str, str], dict[str, HostFacts]]:
    """The host data files by path, and each host's facts as they were written from them."""
    sources = _Sources(topo)
    writer = _HostTexts(sources)
    files: dict[str, str] = {}
    facts: dict[str, HostFacts] = {}
    for rack, nodes in _racks(topo, sources).items():
        text = "{\n" + ",\n".join(map(writer.line, nodes)) + "\n}\n"
        if not plain(text):  # template syntax or characters to escape: written by the careful encoder
            text = host_data_json({node: sources.entry(node) for node in nodes})
        files[host_data_path(rack)] = text
        facts.update((node, sources.facts(rack, node)) for node in nodes)
    return files, facts
