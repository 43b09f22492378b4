"""`clusterforge verify`: the built fabric, as discovered by `ibnetdiscover` or LLDP, against the plan.

InfiniBand: every subnet of the plan that the discovered file reaches (any of its switches seen) is compared
cable by cable; switch names may carry the vendor's decoration (`MF0;compute-leaf001:MQM9700/U1`), host
adapters are named `<host> <RDMA device>` or `<host> <port>` (see render/infiniband/infiniband_plan.py). LLDP: the
Ethernet cables with an end on a host that reported (one file per host, or a merged file) are compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import codes
from ..catalog.models import Switch
from ..checks.fat_tree import fat_tree_faults
from ..expand.topology import Link, Topology
from ..inputs import CAPTURE_LIMITS, Reads
from ..model.fabric import LeafSpineFabric
from ..render.handoff.handoff_common import cable_table
from ..render.infiniband.infiniband import guid_files
from ..render.infiniband.infiniband_plan import IbEnd, IbSubnet, numbering_of, plan_subnets, port_name
from ..render.jinja import render_template
from ..validate import ValidBlueprint
from .compare import Cable, Comparison, Key, Place, Planned, Problem, compare
from .discovered import (
    DiscoveryError,
    Seen,
    discovered_guids,
    parse_ibnetdiscover,
    read_lldp_file,
    read_text,
    visible,
)

SWITCH_TIERS = ("node-leaf", "leaf-spine", "spine-core")


@dataclass
class Verification:
    blueprint: str
    comparisons: list[Comparison] = field(default_factory=list)
    opensm_files: dict[str, str] = field(default_factory=dict)
    """root-guids.conf and partitions.conf with the built fabric's GUIDs, by path under an output folder, for
    each InfiniBand subnet that matches the plan."""

    @property
    def problems(self) -> list[Problem]:
        return [p for c in self.comparisons for p in c.problems]


def _places(topo: Topology) -> dict[str, tuple[str, int | None]]:
    return {d.name: (d.rack or "", d.u) for d in topo.devices.values()}


def _rails(topo: Topology) -> dict[str, int]:
    return {d.name: d.rail for d in topo.devices.values() if d.kind == "switch" and d.role == "leaf" and d.rail}


def switch_name(description: str) -> str:
    """`MF0;compute-leaf001:MQM9700/U1` -> `compute-leaf001`; a plain name stays as it is."""
    if ";" in description:
        description = description.split(";", 1)[1]
    return description.split(":", 1)[0]


class IbResolver:
    """Discovered (node description, port number) -> planned (device, port name)."""

    def __init__(self, valid: ValidBlueprint, topo: Topology, subnet: IbSubnet) -> None:
        self.valid, self.topo, self.subnet = valid, topo, subnet
        self.no_such: dict[Key, str] = {}
        """Ends on a port number the switch's model does not have -> what the model has."""
        self.numbers: dict[Key, str] = {}
        self.names: dict[tuple[str, int], str] = {}
        for cable in subnet.cables:
            for end in (cable.lower, cable.upper):
                if subnet.nodes[end.node].kind == "Switch":
                    self.numbers[(end.device, end.port_name)] = str(end.port)
                    self.names[(end.device, end.port)] = end.port_name

    def key(self, node: str, port: str) -> Key:
        planned = self.subnet.nodes.get(node)
        if planned is not None and planned.kind == "Hca":
            return planned.device, planned.port_name
        name = switch_name(node)
        device = self.topo.devices.get(name)
        if device is None or device.kind != "switch":
            host, _, rest = node.partition(" ")
            return (host, rest or port) if host in self.topo.devices else (node, port)
        number = int(port)
        known = self.names.get((name, number))
        if known is not None:
            return name, known
        per_cage, split = numbering_of(self.valid, device.model)
        ports = _data_ports(self.valid, device.model) * split
        if not 1 <= number <= ports:
            self.no_such[(name, f"IB port {number}")] = f"a {device.model} has ports 1-{ports}"
            return name, f"IB port {number}"
        key = (name, port_name(number, "ib", per_cage))
        self.numbers[key] = port
        return key

    def planned(self) -> Planned:
        cables = [
            Cable(c.label, self.subnet.fabric, c.tier, c.rail, self._place(c.lower), self._place(c.upper))
            for c in self.subnet.cables
        ]
        return Planned(cables, _rails(self.topo), _places(self.topo), self.numbers)

    def _place(self, end: IbEnd) -> Place:
        number = self.numbers.get((end.device, end.port_name), "")
        return Place(*_where(self.topo, end.device), end.device, end.port_name, number)


def _data_ports(valid: ValidBlueprint, model: str) -> int:
    """The native data ports of a switch model (a port split in two gives two InfiniBand port numbers)."""
    group = next((g for g in valid.catalog.require(model, Switch).ports if g.role != "oob"), None)
    return group.count if group else 0


def _no_such_port(resolver: IbResolver, planned: Planned, pairs: list[tuple[Key, Key]]) -> list[Problem]:
    """A link found on a port number the switch's model does not have: named by the number, never by a port
    name made up from it."""
    problems = []
    for pair in pairs:
        for end, other in (pair, pair[::-1]):
            if end in resolver.no_such:
                place, there = planned.place(end), planned.place(other)
                problems.append(
                    Problem(
                        codes.VERIFY_NO_SUCH_PORT,
                        f"no such port: {place.text()} ({resolver.no_such[end]}) holds a link to {there.text()}",
                        found=((place, there),),
                    )
                )
                break
    return problems


def _where(topo: Topology, device: str) -> tuple[str, int | None]:
    found = topo.devices.get(device)
    return (found.rack or "", found.u) if found else ("", None)


def verify_ibnetdiscover(
    valid: ValidBlueprint,
    topo: Topology,
    path: Path,
    opensm_files: dict[str, str] | None = None,
    reads: Reads | None = None,
) -> list[Comparison]:
    """The subnets `path` reaches, compared; for each that matches, its OpenSM GUID files with the built
    fabric's GUIDs go into `opensm_files`. `reads`: the run's reading of captures."""
    text = read_text(path, reads)
    seen = parse_ibnetdiscover(text, str(path))
    switches = {switch_name(s) for one in seen for s in one.switches}
    found = []
    for subnet in plan_subnets(valid, topo):
        if not switches & set(subnet.nodes):
            continue
        resolver = IbResolver(valid, topo, subnet)
        pairs = [(resolver.key(s.a.node, s.a.port), resolver.key(s.b.node, s.b.port)) for s in seen]
        planned = resolver.planned()
        odd = _no_such_port(resolver, planned, pairs)
        pairs = [pair for pair in pairs if pair[0] not in resolver.no_such and pair[1] not in resolver.no_such]
        source = visible(f"{path} (InfiniBand subnet '{subnet.folder.removeprefix('infiniband/')}')")
        result = compare(planned, pairs, source)
        result.discovered += len(odd)
        result.problems.extend(odd)
        result.problems.extend(_tree_problems(subnet, pairs))
        found.append(result)
        if opensm_files is not None and not result.problems:
            opensm_files.update(_built_guid_files(valid, topo, subnet, discovered_guids(text)))
    if not found:
        raise DiscoveryError(f"{path}: none of its switches is a switch of the blueprint's InfiniBand fabrics")
    return found


def _built_guid_files(valid: ValidBlueprint, topo: Topology, subnet: IbSubnet, guids: dict[str, int]) -> dict[str, str]:
    """The subnet's root-guids.conf and partitions.conf with the discovered GUIDs (a switch's node GUID; an
    adapter's port GUID, which partitions.conf lists, is the model's node GUID + 1)."""
    by_device = {switch_name(desc): guid for desc, guid in guids.items()}
    for name, node in list(subnet.nodes.items()):
        if node.kind == "Switch" and name in by_device:
            subnet.nodes[name] = node._replace(guid=by_device[name])
        elif node.kind == "Hca" and name in guids:
            subnet.nodes[name] = node._replace(guid=guids[name] - 1)
    fabric = valid.blueprint.fabrics[subnet.fabric]
    assert isinstance(fabric, LeafSpineFabric)
    groups = {d.name: d.group or "" for d in topo.nodes()}
    files = guid_files(subnet, fabric, groups, valid.blueprint.name, _shipped_template)
    return {f"{subnet.folder}/{name}": text for name, text in files.items()}


def _shipped_template(name: str, model: dict[str, Any]) -> str:
    return render_template(name, model, None)


def _tree_problems(subnet: IbSubnet, pairs: list[tuple[Key, Key]]) -> list[Problem]:
    """The discovered switches judged as OpenSM's fat-tree engine will judge them."""
    tiers = {n.name: n.tier for n in subnet.switches()}
    order = {"leaf": 0, "spine": 1, "core": 2}
    links = []
    for a, b in pairs:
        if a[0] in tiers and b[0] in tiers and tiers[a[0]] != tiers[b[0]]:
            low, high = sorted((a[0], b[0]), key=lambda n: order.get(tiers[n], 9))
            links.append((f"{tiers[low]}-{tiers[high]}", low, high))
    faults = fat_tree_faults(subnet.tiers, tiers, links)
    if not faults or subnet.tiers < 2:
        return []
    shown = "; ".join(faults[:5]) + (f"; and {len(faults) - 5} more" if len(faults) > 5 else "")
    return [
        Problem(
            codes.VERIFY_NOT_FAT_TREE, f"not a fat tree as cabled: {shown}; OpenSM's fat-tree routing will refuse it"
        )
    ]


def verify_lldp(valid: ValidBlueprint, topo: Topology, paths: Iterable[Path], reads: Reads | None = None) -> Comparison:
    hosts: set[str] = set()
    seen: list[Seen] = []
    for path in paths:
        reported, links = read_lldp_file(path, reads)
        hosts.update(reported)
        seen.extend(links)
    ethernet = {n for n, f in valid.blueprint.fabrics.items() if not _is_infiniband(f)}
    places = _places(topo)
    cables = [
        Cable(
            row.label,
            row.link.fabric,
            row.link.tier,
            row.link.rail,
            Place(row.a.rack, row.a.u, row.link.a, row.link.a_port),
            Place(row.b.rack, row.b.u, row.link.b, row.link.b_port),
        )
        for row in cable_table(valid, topo).rows()
        if row.link.fabric in ethernet and _reported(row.link, hosts)
    ]

    def key(end_node: str, port: str) -> Key:
        short = end_node.split(".", 1)[0]
        return (short if short in topo.devices else end_node), port

    pairs = [(key(s.a.node, s.a.port), key(s.b.node, s.b.port)) for s in seen]
    planned = Planned(cables, _rails(topo), places)
    return compare(planned, pairs, f"LLDP of {len(hosts)} host{'s' if len(hosts) != 1 else ''}")


def _reported(link: Link, hosts: set[str]) -> bool:
    """Whether an end of `link` is a device that reported LLDP; a server's BMC port (the A end of an `oob`
    cable) is not seen by the server's own LLDP agent."""
    return (link.a in hosts and link.tier != "oob") or link.b in hosts


def _is_infiniband(fabric: object) -> bool:
    return isinstance(fabric, LeafSpineFabric) and fabric.technology == "infiniband"


def verify(
    valid: ValidBlueprint, topo: Topology, ibnetdiscover: Iterable[Path] = (), lldp: Iterable[Path] = ()
) -> Verification:
    """The captures compared with the plan; they are read through one `Reads` (each once, all bounded
    together by CAPTURE_LIMITS)."""
    result = Verification(valid.blueprint.name)
    reads = Reads(None, CAPTURE_LIMITS)
    for path in ibnetdiscover:
        result.comparisons.extend(verify_ibnetdiscover(valid, topo, path, result.opensm_files, reads))
    lldp = list(lldp)
    if lldp:
        result.comparisons.append(verify_lldp(valid, topo, lldp, reads))
    return result


__all__ = ["DiscoveryError", "Verification", "verify"]
