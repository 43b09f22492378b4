"""The NICs of a server model as NCCL names them: its compute ports in rail order and their RDMA devices
(from the catalog, pinned by PCI address with udev rules, or read from every node by `clusterforge bind`),
and the RDMA-capable storage and in-band NICs beside them that NCCL_IB_HCA must leave out."""

from __future__ import annotations

from ..catalog import NIC, Catalog, PortGroup, Server
from ..model.nodes import Bindings
from .topology import Topology

RDMA_PREFIX = "rdma_"
"""RDMA device names the rendered udev rules give compute ports pinned by PCI address: rdma_<port>."""


def group_nodes(topo: Topology, group: str) -> list[str]:
    return [d.name for d in topo.devices.values() if d.kind == "node" and d.group == group]


def compute_ports(server: Server) -> list[str]:
    """The compute ports in rail (port) order, named as the PCIe layout names them (`ib1`, `ens3`)."""
    return [f"{g.name}{i}" for g in server.port_groups("compute") for i in range(1, g.count + 1)]


def pinned_ports(server: Server) -> dict[str, str]:
    """Compute port -> PCI address, when the catalog has no RDMA names for the ports but its PCIe layout gives
    every compute port's address: udev rules then pin the names (`udev_model`). Empty otherwise."""
    if server.pcie is None or all(g.devices is not None for g in server.port_groups("compute")):
        return {}
    found = {
        nic: bus
        for s in server.pcie.switches
        if s.nic_bus_ids is not None
        for nic, bus in zip(s.nics, s.nic_bus_ids, strict=True)
    }
    ports = compute_ports(server)
    return {p: found[p] for p in ports} if ports and all(p in found for p in ports) else {}


def hca_devices(server: Server) -> tuple[list[str], bool]:
    """RDMA device names of the compute ports in rail order, and whether they are certain: from the catalog,
    or pinned by PCI address with the rendered udev rules (`rdma_<port>`); otherwise a guess, never used."""
    groups: list[PortGroup] = server.port_groups("compute")
    known = all(g.devices is not None for g in groups)
    if known:
        return [name for g in groups for name in g.devices or []], True
    pinned = pinned_ports(server)
    if pinned:
        return [f"{RDMA_PREFIX}{port}" for port in pinned], True
    return [f"mlx5_{i}" for i in range(sum(g.count for g in groups))], False


def bound_hca(bindings: Bindings, nodes: list[str], server: Server) -> list[str] | None:
    """The compute ports' RDMA devices in rail order as `clusterforge bind` read them, when every node of
    the group was bound and all report the same names (nccl.conf is one file per group); else None."""
    ports = compute_ports(server)
    if not nodes or not ports:
        return None
    seen: set[tuple[str, ...]] = set()
    for node in nodes:
        bound = bindings.get(node, {})
        names = tuple(bound[p].rdma or "" if p in bound else "" for p in ports)
        if "" in names:
            return None
        seen.add(names)
    return list(next(iter(seen))) if len(seen) == 1 else None


def bound_pci(bindings: Bindings, nodes: list[str], server: Server) -> dict[str, str]:
    """compute port -> the PCI address `clusterforge bind` read for it, where every node of `nodes` was read
    and all report the same one (a file per model, as the NCCL topology file is, can hold only that)."""
    out: dict[str, str] = {}
    for port in compute_ports(server) if nodes else []:
        seen = {bound.pci if (bound := bindings.get(node, {}).get(port)) else None for node in nodes}
        if len(seen) == 1 and (pci := seen.pop()) is not None:
            out[port] = pci
    return out


def rdma_storage_ports(catalog: Catalog, server: Server) -> list[str]:
    """Port groups other than compute whose NIC is RDMA-capable (a ConnectX or BlueField: NCCL lists their
    RDMA devices too, and uses them unless NCCL_IB_HCA leaves them out)."""
    out = []
    for group in server.ports:
        nic = catalog.get(group.nic, NIC) if group.nic else None
        if group.role in ("storage", "inband") and nic is not None and group.nic and group.nic.startswith("nvidia/"):
            out.append(f"{group.name}1-{group.count} ({group.nic})")
    return out
