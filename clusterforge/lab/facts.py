"""The twin's hardware identity: what its nodes report about their ports, and `clusterforge bind` run on it.

A real node names its NIC ports itself (systemd's predictable names) and `clusterforge bind` reads them from
`ip -details -json link show` and `ibdev2netdev`. The twin's ports are veths, so the lab plays the hardware:
each planned port gets the PCI address the catalog gives it, else a lab one (a bus the catalog does not use,
in the planned ports' order), and its veth the name the catalog quotes or derives for the model and OS, else
systemd's path name of that address (bus 0x41 -> enp65s0); a port of an NVIDIA NIC gets an RDMA device (the
catalog's, else mlx5_<n>). Once the veths exist the lab captures each node's `ip -j -d link show` from its
namespace, adds what a veth lacks and a NIC has (the PCI parent, `parentbus`/`parentdev` as iproute2 prints
it; `link_type: infiniband` where the veth stands for an IPoIB port), writes `ibdev2netdev` lines for the RDMA
ports, and binds those files as a site binds its nodes' facts: the twin is rendered again with the bindings.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..bind import BindError, bind, bindings_yaml, nvidia_port, planned_ports, server_of
from ..expand.topology import Topology
from ..ifnames import _bus_ids, _group_of, catalog_name, path_name
from ..model.nodes import BoundPort
from ..validate import ValidBlueprint
from . import network

FIRST_LAB_BUS = 0x41
"""Where the lab's PCI buses start (the catalog's own bus ids are skipped)."""


@dataclass(frozen=True)
class LabDevice:
    name: str
    """The interface name the twin's node gives the port (its veth's name)."""
    pci: str | None
    rdma: str | None
    infiniband: bool


def plan_devices(valid: ValidBlueprint, topo: Topology, nodes: Sequence[str]) -> dict[str, dict[str, LabDevice]]:
    """node -> planned port -> the device the twin gives it."""
    out: dict[str, dict[str, LabDevice]] = {}
    for node in nodes:
        server, group = server_of(valid, topo, node)
        bus_ids = _bus_ids(server)
        used_buses = {int(b.split(":")[1], 16) for b in bus_ids.values()}
        free_buses = (b for b in range(FIRST_LAB_BUS, 0x100) if b not in used_buses)
        catalog_rdma = {d for g in server.ports for d in g.devices or []}
        free_rdma = (f"mlx5_{n}" for n in range(256) if f"mlx5_{n}" not in catalog_rdma)
        devices: dict[str, LabDevice] = {}
        for port, infiniband in planned_ports(valid, topo, node):
            known = catalog_name(valid.catalog, server, group.os, port, infiniband)
            pci = (known.pci if known else None) or bus_ids.get(port) or f"0000:{next(free_buses):02x}:00.0"
            name = known.name if known else path_name(pci, infiniband, False, None)
            place = _group_of(server, port)
            rdma = None
            if nvidia_port(server, port):
                rdma = (place[0].devices[place[1]] if place and place[0].devices else None) or next(free_rdma)
            devices[port] = LabDevice(name, pci, rdma, infiniband)
        out[node] = devices
    return out


LAB_HARDWARE = "lab: the twin's planned hardware (its veths are named so)"
"""The source of the bindings the lab renders with before its veths exist."""


def as_planned(valid: ValidBlueprint, topo: Topology) -> ValidBlueprint:
    """The blueprint with every node group's node bound by name to the devices the twin will give it: the
    render the lab plugs its network from (a real node's netplan leaves unbound ports out, CF-NET-001), and
    which `bind_twin` replaces, for the twin's nodes, by what their namespaces report."""
    nodes = [
        name for name, device in topo.devices.items() if device.kind == "node" and planned_ports(valid, topo, name)
    ]
    bindings = {
        node: {port: BoundPort(name=d.name, pci=d.pci, rdma=d.rdma, source=LAB_HARDWARE) for port, d in ports.items()}
        for node, ports in plan_devices(valid, topo, nodes).items()
    }
    return dataclasses.replace(valid, blueprint=valid.blueprint.model_copy(update={"bindings": bindings}))


def capture(devices: dict[str, dict[str, LabDevice]], node_ns: dict[str, str], folder: Path) -> list[Path]:
    """Each node's facts files, from its namespace: `<node>.ip-link.json` and, where it has RDMA ports,
    `<node>.ibdev2netdev.txt`."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for node, ports in devices.items():
        by_name = {d.name: d for d in ports.values()}
        links = json.loads(network.ip("-j", "-d", "link", "show", ns=node_ns[node]) or "[]")
        for link in links:
            device = by_name.get(link.get("ifname"))
            if device is None:
                continue
            if device.pci:
                link["parentbus"], link["parentdev"] = "pci", device.pci
            if device.infiniband:
                link["link_type"] = "infiniband"
        path = folder / f"{node}.ip-link.json"
        path.write_text(json.dumps(links, indent=1) + "\n", encoding="utf-8")
        written.append(path)
        rdma = [f"{d.rdma} port 1 ==> {d.name} (Up)" for d in ports.values() if d.rdma]
        if rdma:
            path = folder / f"{node}.ibdev2netdev.txt"
            path.write_text("\n".join(rdma) + "\n", encoding="utf-8")
            written.append(path)
    return written


def bind_twin(valid: ValidBlueprint, topo: Topology, files: list[Path], record: Path) -> ValidBlueprint:
    """The blueprint with the twin's nodes bound from their facts files (written to `record` as `bind` would
    write them), the others as the lab planned them (`as_planned`); a planned port of the twin left unbound is
    an error: the twin would run on names that do not exist."""
    result, names = bind(valid, topo, files)
    unbound = [f"{node}: {', '.join(b.unbound)}" for node, b in sorted(result.items()) if b.unbound]
    if unbound:
        raise BindError(f"ports of the twin not bound from its own facts: {'; '.join(unbound)}")
    bindings = {**valid.blueprint.bindings, **{node: b.ports for node, b in result.items()}}
    record.write_text(bindings_yaml(bindings, names), encoding="utf-8")
    # the nodes outside the twin as the lab planned them: every node of a group bound, its nccl.conf gets
    # NCCL_IB_HCA as a site's does once it has bound all its nodes
    planned = as_planned(valid, topo).blueprint.bindings
    return dataclasses.replace(
        valid, blueprint=valid.blueprint.model_copy(update={"bindings": {**planned, **bindings}})
    )
