"""The names a node's operating system gives its NIC ports, so netplan, NCCL and Slurm name what exists.

A planned port ('ib1', 'stor2': the cabling's names) gets its interface name from, in order:
1. the blueprint's `bindings` (what `clusterforge bind` read from the node: name, MAC, PCI address, RDMA device);
2. the udev rules clusterforge renders for a model whose compute ports' PCI addresses the catalog knows but
   not their RDMA names (nccl/udev/<model>.rules: NAME="<port>" by PCI address), which give the interface
   the planned port's own name;
3. the catalog's `interface_names` for the node group's OS (names the vendor quotes);
4. the catalog's `interface_naming` for the OS ('path') and the port's PCI address: systemd's predictable
   PCI-path name, ID_NET_NAME_PATH in systemd.net-naming-scheme(7): prefix 'ib' (InfiniBand) or 'en'
   (Ethernet), then [P<domain>]p<bus>s<slot>[f<function>][n<phys_port_name>], numbers in decimal, the
   domain only when not 0, the function only on multi-function devices; mlx5 Ethernet ports have
   phys_port_name p<port> (DGX H100/H200 user guide, Table 5: 29:00.1 = enp41s0f1np1, 18:00.0 = ibp24s0).
Nothing else: a port none of these names is left unnamed (a CF-NET-001 finding), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

from .catalog import Catalog
from .catalog.models import NIC, PortGroup, Server
from .expand.nics import pinned_ports
from .model.nodes import BoundPort, OsName


@dataclass(frozen=True)
class PortDevice:
    port: str
    """The planned port ('ib1')."""
    name: str
    """The interface name the node gives it."""
    source: str
    """Where the name comes from: 'bind', 'catalog' or 'path'."""
    mac: str | None = None
    pci: str | None = None
    rdma: str | None = None


def path_name(bus_id: str, infiniband: bool, multifunction: bool, phys_port: int | None) -> str:
    """systemd's ID_NET_NAME_PATH for a PCI NIC port at `bus_id` ('0000:aa:00.1')."""
    domain, bus, devfn = bus_id.split(":")
    slot, function = devfn.split(".")
    name = "ib" if infiniband else "en"
    if int(domain, 16):
        name += f"P{int(domain, 16)}"
    name += f"p{int(bus, 16)}s{int(slot, 16)}"
    if multifunction:
        name += f"f{int(function)}"
    if not infiniband and phys_port is not None:
        name += f"np{phys_port}"
    return name


def _bus_ids(server: Server) -> dict[str, str]:
    """port -> PCI address, from the port groups and the PCIe layout."""
    out: dict[str, str] = {}
    for group in server.ports:
        for index, bus_id in enumerate(group.bus_ids or [], 1):
            out[f"{group.name}{index}"] = bus_id
    for switch in server.pcie.switches if server.pcie else []:
        for port, bus_id in zip(switch.nics, switch.nic_bus_ids or [], strict=False):
            out.setdefault(port, bus_id)
    return out


def _group_of(server: Server, port: str) -> tuple[PortGroup, int] | None:
    for group in server.ports:
        suffix = port[len(group.name) :]
        if port.startswith(group.name) and suffix.isdigit() and 1 <= int(suffix) <= group.count:
            return group, int(suffix) - 1
    return None


def catalog_name(catalog: Catalog, server: Server, os: OsName, port: str, infiniband: bool) -> PortDevice | None:
    """The port's interface name from the catalog alone, or None when the catalog cannot say."""
    found = _group_of(server, port)
    if found is None:
        return None
    group, index = found
    rdma = group.devices[index] if group.devices else None
    pinned = pinned_ports(server)
    if port in pinned:
        return PortDevice(port, port, "udev", pci=pinned[port], rdma=f"rdma_{port}")
    quoted = group.interface_names.get(os)
    bus_id = _bus_ids(server).get(port)
    if quoted is not None:
        return PortDevice(port, quoted[index], "catalog", pci=bus_id, rdma=rdma)
    if server.interface_naming.get(os) != "path" or bus_id is None:
        return None
    nic = catalog.get(group.nic, NIC) if group.nic else None
    multifunction = nic is not None and nic.ports > 1
    nvidia = group.nic is not None and group.nic.startswith("nvidia/")
    phys_port = int(bus_id.rsplit(".", 1)[1]) if nvidia else None
    return PortDevice(port, path_name(bus_id, infiniband, multifunction, phys_port), "path", pci=bus_id, rdma=rdma)


def port_device(
    catalog: Catalog, server: Server, os: OsName, port: str, infiniband: bool, bound: BoundPort | None
) -> PortDevice | None:
    """The port's device: as bound, else as the catalog names it, else None."""
    if bound is not None:
        return PortDevice(port, bound.name, "bind", bound.mac, bound.pci, bound.rdma)
    return catalog_name(catalog, server, os, port, infiniband)
