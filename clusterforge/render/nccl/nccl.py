"""nccl output family: an /etc/nccl.conf per GPU node group, and an NCCL topology file per server model.

nccl/<group>.conf, for every group whose server has GPUs and compute ports on a compute fabric, in NCCL's
/etc/nccl.conf format (one NAME=value per line, names sorted). Derived values, then the group's `nccl:`
settings on top:

- NCCL_IB_HCA: the compute ports' RDMA devices in rail order (port order, as the fabric wires them), in
  NCCL's exact-match form `=mlx5_0:1,mlx5_3:1,...`; without '=' NCCL matches prefixes, and mlx5_1 would also
  select mlx5_10..mlx5_19. Only from the catalog (`devices` of the port group) where the vendor documents
  them: a guess in port order can name a storage NIC that enumerates between the rails, so without known
  names it is not set and the file says why.
- NCCL_SOCKET_IFNAME: the in-band interface for NCCL's bootstrap traffic, `=bond0` when the in-band
  network has two or more ports per node (bonded, one address per node), else the single port's name.
- NCCL_IB_TC on Ethernet (RoCE) compute fabrics that declare a lossless class (`roce.qos`), from its DSCP;
  NCCL_IB_GID_INDEX only when `roce.gid_index` is set (NCCL detects the RoCE v2 GID by itself).
- NCCL_TOPO_FILE only when the model's topology file has real PCI addresses for every GPU and NIC and
  real NIC device names; with placeholders or guessed names it stays a comment, because NCCL places a NIC
  by its name in the file and would take the placeholder location for the real one.

nccl/topology/<model>.xml, for every such model with a `pcie` layout in the catalog: CPUs (one NUMA node per
socket), a PCIe switch per layout entry, and under it the GPUs (class 0x030200) and compute NICs (class
0x020700, or 0x020000 for Ethernet-only ports, with their <nic><net/></nic>). Attributes NCCL reads from the
running system when they are missing (CPU affinity, GDR support, latency) are left out. Addresses the
catalog lacks are placeholders in domain ffff, and the file says so.

NCCL reads nccl.conf line by line and skips lines without '='; older releases do not skip '#' lines, so
comments here never contain '='.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, cast

from ...catalog import GPU, Server
from ...expand.nics import (
    RDMA_PREFIX,
    bound_hca,
    bound_pci,
    group_nodes,
    hca_devices,
    pinned_ports,
)
from ...expand.topology import Topology
from ...model import ComputeFabric
from ...model.fabric import RoCE
from ...model.nccl import nccl_variables
from ...model.nodes import NcclValue, NodeGroup
from ...validate import ValidBlueprint
from .. import paths
from ..context import RenderContext, per_topology

INBAND_BOND = "bond0"
"""Interface name of the bonded in-band ports, which the host network configuration must use."""
PLACEHOLDER_DOMAIN = "ffff"
"""PCI domain of every placeholder address in a topology file (no real system uses it)."""
_PCI_GEN = {8: "8.0 GT/s PCIe", 16: "16.0 GT/s PCIe", 32: "32.0 GT/s PCIe", 64: "64.0 GT/s PCIe"}


@dataclass(frozen=True)
class NcclGroup:
    """A GPU node group on a compute fabric, which gets an nccl.conf (and its model's topology file, if any)."""

    group: NodeGroup
    server: Server
    fabric_name: str
    fabric: ComputeFabric
    inband: str | None
    """The in-band network the group is on, if any."""
    rccl: bool = False
    """AMD GPUs: RCCL, AMD's fork of NCCL, reads the same NCCL_* settings from /etc/rccl.conf."""

    @property
    def conf(self) -> str:
        return paths.rccl_conf(self.group.name) if self.rccl else paths.nccl_conf(self.group.name)

    @property
    def installed_as(self) -> str:
        return paths.RCCL_CONF_INSTALLED if self.rccl else paths.NCCL_CONF_INSTALLED

    @property
    def topology(self) -> str | None:
        """NVIDIA systems only: the file is NCCL's topology format, checked against nvidia-smi."""
        return paths.nccl_topology(self.group.model) if self.server.pcie is not None and not self.rccl else None

    @property
    def installs_topology(self) -> bool:
        """Whether nccl.conf points NCCL_TOPO_FILE at the rendered topology file, so hosts need it: when
        every address in it is real, or when the blueprint's nccl settings point there themselves."""
        if self.server.pcie is None:
            return False
        if "NCCL_TOPO_FILE" in self.group.nccl:
            return self.group.nccl["NCCL_TOPO_FILE"] == paths.NCCL_TOPOLOGY_INSTALLED
        return verified_topology(self.server)


@dataclass(frozen=True)
class NicBindings:
    """A model's compute NICs as `clusterforge bind` read them on all its nodes (nothing when not bound)."""

    names: list[str] | None = None
    """RDMA devices in rail order, when every node was read and all report the same."""
    pci: dict[str, str] = field(default_factory=dict)
    """port -> PCI address, where every node reports the same."""


_group_fabrics = per_topology(Topology.group_fabrics)
"""Node group -> its networks, once per topology: nccl_groups is asked three times a render, and each time
the answer walks every link."""


def nccl_groups(valid: ValidBlueprint, topo: Topology) -> list[NcclGroup]:
    """The GPU node groups the topology wires to a compute fabric: this family renders for them, and the
    Ansible roles install what it renders."""
    on = _group_fabrics(topo)
    found = []
    for group in valid.blueprint.node_groups:
        server = valid.catalog.require(group.model, Server)
        attached = on.get(group.name, set())
        # the expanded networks, in the blueprint's order, which decides when a group is on several of a kind
        compute = [name for name, f in topo.fabrics.items() if name in attached and f.kind == "compute"]
        inband = [name for name, f in topo.fabrics.items() if name in attached and f.kind == "inband"]
        if server.gpus is not None and compute:
            gpu = valid.catalog.get(server.gpus.model, GPU)
            rccl = gpu is not None and gpu.vendor == "AMD"
            settings = cast(ComputeFabric, valid.blueprint.fabrics[compute[0]])  # what nccl.conf sets (RoCE, ...)
            found.append(NcclGroup(group, server, compute[0], settings, inband[0] if inband else None, rccl))
    return found


def render_nccl(ctx: RenderContext) -> dict[str, str]:
    files: dict[str, str] = {}
    topologies: dict[str, dict[str, Any]] = {}
    for entry in nccl_groups(ctx.valid, ctx.topo):
        model = entry.group.model
        if entry.topology is not None and model not in topologies:
            bound = _model_bindings(ctx, model, entry.server)
            topologies[model] = topology_model(ctx.valid.blueprint.name, model, entry.server, bound)
        files[entry.conf] = ctx.render("nccl/nccl.conf.j2", conf_model(ctx, entry, topologies.get(model)))
    for model, topo in sorted(topologies.items()):
        files[paths.nccl_topology(model)] = ctx.render("nccl/topology.xml.j2", topo)
    for entry in nccl_groups(ctx.valid, ctx.topo):
        if pinned_ports(entry.server):
            rules = udev_model(ctx.valid.blueprint.name, entry.group.model, entry.server)
            files[paths.udev_rails(entry.group.model)] = ctx.render("nccl/udev.rules.j2", rules)
    return files


def _model_bindings(ctx: RenderContext, model: str, server: Server) -> NicBindings:
    """What `clusterforge bind` read for the model's compute ports on every node of the model: the RDMA
    device names (when every node was read and all agree) and each port's PCI address (where all agree)."""
    nodes = [n for g in ctx.valid.blueprint.node_groups if g.model == model for n in group_nodes(ctx.topo, g.name)]
    bindings = ctx.valid.blueprint.bindings
    return NicBindings(bound_hca(bindings, nodes, server), bound_pci(bindings, nodes, server))


# --- nccl.conf ----------------------------------------------------------------------------------------
def udev_model(blueprint: str, model: str, server: Server) -> dict[str, Any]:
    """The udev rules of a model whose compute ports are pinned by PCI address (templates/nccl/udev.rules.j2):
    each port's network interface takes the port's name (the name the rail netplan uses), its RDMA device
    `rdma_<port>` (the name NCCL_IB_HCA uses). Installed as /etc/udev/rules.d/60-rdma-persistent-naming.rules,
    they replace rdma-core's naming rules of that name (a file in /etc hides the same name in /usr/lib), so
    RDMA devices they do not name keep the kernel's name."""
    return {
        "blueprint": blueprint,
        "model": model,
        "installed_as": paths.UDEV_RAILS_INSTALLED,
        "ports": [{"port": p, "bus": bus, "rdma": f"{RDMA_PREFIX}{p}"} for p, bus in pinned_ports(server).items()],
    }


def _value(value: NcclValue) -> str:
    if isinstance(value, float):
        return format(value, "g")
    return str(value)


def _hca_settings(ctx: RenderContext, entry: NcclGroup, settings: dict[str, str], notes: list[str]) -> None:
    """NCCL_IB_HCA from the catalog's device names, else from every node's bindings, else a note why not."""
    group, server, fabric_name = entry.group, entry.server, entry.fabric_name
    devices, known = hca_devices(server)
    bound = None if known else bound_hca(ctx.valid.blueprint.bindings, group_nodes(ctx.topo, group.name), server)
    if known:
        settings["NCCL_IB_HCA"] = "=" + ",".join(f"{d}:1" for d in devices)
        notes.append(
            f"NCCL_IB_HCA: the {len(devices)} compute ports on fabric {fabric_name} in rail order, exact "
            + (
                f"names pinned by PCI address in {paths.udev_rails(group.model)} (installed as "
                f"{paths.UDEV_RAILS_INSTALLED})"
                if pinned_ports(server)
                else f"names from the catalog entry {group.model} (see its sources)"
            )
        )
    elif bound is not None:
        settings["NCCL_IB_HCA"] = "=" + ",".join(f"{d}:1" for d in bound)
        notes.append(
            f"NCCL_IB_HCA: the {len(bound)} compute ports on fabric {fabric_name} in rail order, exact names "
            "as clusterforge bind read them on every node of the group (blueprint bindings)"
        )
    elif "NCCL_IB_HCA" not in group.nccl:
        notes += [
            f"NCCL_IB_HCA NOT SET: the RDMA device names of the compute ports of {group.model} are not in",
            "  the catalog, and a guess in port order may name a storage port; until they are known NCCL",
            "  uses every RDMA device, storage NICs included. Bind every node of the group (clusterforge",
            "  bind with its ibdev2netdev output), set the port group's devices in a catalog file, or",
            "  NCCL_IB_HCA in the node group's nccl settings",
        ]


def conf_model(ctx: RenderContext, entry: NcclGroup, topology: dict[str, Any] | None) -> dict[str, Any]:
    """Settings and header comments of one group's nccl.conf."""
    bp = ctx.valid.blueprint
    group, server, fabric, fabric_name = entry.group, entry.server, entry.fabric, entry.fabric_name
    settings: dict[str, str] = {}
    library = "RCCL" if entry.rccl else "NCCL"
    notes = [
        f"clusterforge: {library} settings of node group {group.name} ({group.model}) in blueprint {bp.name}",
        f"installed as {entry.installed_as}; one NAME and value per line, names sorted",
    ]
    if entry.rccl:
        notes.append("RCCL, AMD's fork of NCCL, takes the NCCL_* names; it reads /etc/rccl.conf, not /etc/nccl.conf")
    _hca_settings(ctx, entry, settings, notes)
    ports = sum(g.count for g in server.port_groups("inband"))
    if entry.inband is not None and ports:
        first = server.port_groups("inband")[0]
        name = INBAND_BOND if ports > 1 else f"{first.name}1"
        settings["NCCL_SOCKET_IFNAME"] = f"={name}"
        notes.append(
            f"NCCL_SOCKET_IFNAME: the in-band network ({ports} bonded ports as {INBAND_BOND})"
            if ports > 1
            else f"NCCL_SOCKET_IFNAME: the in-band port {name}"
        )
    else:
        notes.append("NCCL_SOCKET_IFNAME not set: the group is not on an in-band network")
    if fabric.technology == "ethernet":
        notes += _roce_settings(fabric.roce or RoCE(), fabric_name, settings)
    if topology is not None and topology["verified"]:
        settings["NCCL_TOPO_FILE"] = paths.NCCL_TOPOLOGY_INSTALLED
    elif topology is not None:
        if real_bus_ids(server):
            notes.append(f"NCCL_TOPO_FILE not set: {paths.nccl_topology(group.model)} has guessed NIC device names")
            notes.append("  and is not installed; set the compute port group's devices in a catalog file")
        else:
            notes.append(f"NCCL_TOPO_FILE not set: {paths.nccl_topology(group.model)} has placeholder PCI addresses")
            notes.append("  and is not installed; give the real ones (nvidia-smi topo -m, lspci) as gpu_bus_ids and")
            notes.append(f"  nic_bus_ids of the pcie layout of {group.model} in a catalog file")
    overrides = {name: _value(value) for name, value in group.nccl.items()}
    if overrides:
        notes.append("from the blueprint's nccl settings: " + ", ".join(sorted(overrides)))
    settings.update(overrides)
    unknown = sorted(set(settings) - nccl_variables())
    if unknown:
        raise ValueError(f"NCCL variables not in NCCL's list: {', '.join(unknown)}")
    lines = [f"{name}={value}" for name, value in sorted(settings.items())]
    unsafe = [line for line in lines if not _CONF_LINE.fullmatch(line)]
    unsafe += [note for note in notes if "=" in note or not note.isprintable()]
    if unsafe:  # values are restricted at validation: reaching this is a bug, not a user error
        raise ValueError(f"nccl.conf line or comment that NCCL would misread: {unsafe[0]!r}")
    return {"comments": notes, "lines": lines}


def _roce_settings(roce: RoCE, fabric_name: str, settings: dict[str, str]) -> list[str]:
    """NCCL_IB_TC only for a lossless class the fabric declares; NCCL_IB_GID_INDEX only when the blueprint
    sets it (NCCL finds the RoCE v2 GID by itself). Returns the header notes."""
    notes = []
    traffic_class = roce.nccl_traffic_class
    if traffic_class is not None and roce.qos is not None:
        settings["NCCL_IB_TC"] = str(traffic_class)
        notes.append(
            f"NCCL_IB_TC: DSCP {roce.qos.dscp} of the lossless class of fabric {fabric_name} "
            f"(PFC priority {roce.qos.pfc_priority})"
        )
    else:
        notes.append(f"NCCL_IB_TC not set: fabric {fabric_name} declares no lossless class (roce.qos)")
    if roce.gid_index is not None:
        settings["NCCL_IB_GID_INDEX"] = str(roce.gid_index)
        notes.append(f"NCCL_IB_GID_INDEX: set in the roce settings of fabric {fabric_name}")
    return notes


_CONF_LINE = re.compile(r"[A-Z][A-Z0-9_]*=[^\s#'\"]+")


# --- topology XML -------------------------------------------------------------------------------------
def _cpu_attributes(cpu_model: str) -> dict[str, str]:
    """arch and vendor where the model name makes them certain; NCCL fills what is missing."""
    if re.search(r"\b(Intel|Xeon)\b", cpu_model):
        return {"arch": "x86_64", "vendor": "GenuineIntel"}
    if re.search(r"\b(AMD|EPYC)\b", cpu_model):
        return {"arch": "x86_64", "vendor": "AuthenticAMD"}
    if re.search(r"\b(Grace|Arm|Neoverse)\b", cpu_model):
        return {"arch": "arm64"}
    return {}


_ATTRIBUTE_ENTITIES = (("&", "&amp;"), (">", "&gt;"), ("<", "&lt;"), ("\n", "&#10;"), ("\r", "&#13;"), ("\t", "&#9;"))


def quoteattr(value: str) -> str:
    """`value` escaped and quoted as an XML attribute, as xml.sax.saxutils.quoteattr does it (importing that
    module imports urllib.request and http.client: a fiftieth of a small render's start-up)."""
    for char, entity in _ATTRIBUTE_ENTITIES:
        value = value.replace(char, entity)
    if '"' not in value:
        return f'"{value}"'
    return f"'{value}'" if "'" not in value else '"' + value.replace('"', "&quot;") + '"'


def _attrs(values: dict[str, str]) -> str:
    return " ".join(f"{key}={quoteattr(value)}" for key, value in values.items())


def real_bus_ids(server: Server) -> bool:
    """Whether the catalog gives the PCI address of every GPU and compute NIC in the model's PCIe layout,
    so that its topology file has no placeholders."""
    if server.pcie is None:
        return False
    compute = {f"{g.name}{i}" for g in server.port_groups("compute") for i in range(1, g.count + 1)}
    return all(
        (s.gpu_bus_ids is not None or not s.gpus) and (s.nic_bus_ids is not None or not compute.intersection(s.nics))
        for s in server.pcie.switches
    )


def verified_topology(server: Server) -> bool:
    """Whether the topology file would hold only catalog facts: real PCI addresses and the NICs' real device
    names (NCCL matches its net devices by name)."""
    return real_bus_ids(server) and hca_devices(server)[1]


def topology_model(blueprint: str, model: str, server: Server, bound: NicBindings | None = None) -> dict[str, Any]:
    """CPUs, PCIe switches, GPUs and NICs of one server model, as attribute strings in NCCL's order; NIC
    names and PCI addresses as the nodes reported them where they were bound (`bound`)."""
    assert server.pcie is not None
    bound = bound or NicBindings()
    compute = [(f"{g.name}{i}", g) for g in server.port_groups("compute") for i in range(1, g.count + 1)]
    devices, known = hca_devices(server)  # catalog names, or the udev-pinned ones
    if not known and bound.names is not None:
        devices = bound.names
    device_of = {port: devices[k] for k, (port, _) in enumerate(compute)}
    group_of = dict(compute)
    # NCCL numbers net devices in the order the verbs library lists them, which is by device name
    dev_index = {name: i for i, name in enumerate(sorted(devices, key=_natural))}
    link = {"link_speed": _PCI_GEN[server.pcie.link_gts], "link_width": str(server.pcie.link_width)}
    placeholders = 0
    sockets: dict[int, list[dict[str, Any]]] = {}
    for k, switch in enumerate(server.pcie.switches, 1):
        bridge = {
            "busid": f"{PLACEHOLDER_DOMAIN}:ff:{k:02x}.0",
            "class": "0x060400",
            **link,
            "vendor": "0x0000",
            "device": "0x0000",
            "subsystem_vendor": "0x0000",
            "subsystem_device": "0x0000",
        }
        gpu_bus_ids = switch.gpu_bus_ids or [f"{PLACEHOLDER_DOMAIN}:{0x10 + g:02x}:00.0" for g in switch.gpus]
        gpus = [_attrs({"busid": bus_id, "class": "0x030200", **link}) for bus_id in gpu_bus_ids]
        placeholders += 0 if switch.gpu_bus_ids else len(switch.gpus)
        nics = []
        for j, port in enumerate(switch.nics):
            if port not in device_of:
                continue  # a storage or in-band port behind the switch: not an NCCL device
            bus_id = bound.pci.get(port) or (switch.nic_bus_ids[j] if switch.nic_bus_ids else None)
            if bus_id is None:
                placeholders += 1
                bus_id = f"{PLACEHOLDER_DOMAIN}:{0x80 + list(device_of).index(port):02x}:00.0"
            speed = int(group_of[port].speed_gbps * 1000)  # NCCL counts in Mb/s
            # InfiniBand controller; Ethernet-only ports (RoCE) enumerate as Ethernet controllers
            nic_class = "0x020000" if group_of[port].technology == "ethernet" else "0x020700"
            nics.append(
                {
                    "pci": _attrs({"busid": bus_id, "class": nic_class, **link}),
                    "port": port,
                    "net": _attrs(
                        {
                            "name": device_of[port],
                            "dev": str(dev_index[device_of[port]]),
                            "speed": str(speed),
                            "port": "1",
                        }
                    ),
                }
            )
        sockets.setdefault(switch.socket, []).append({"pci": _attrs(bridge), "gpus": gpus, "nics": nics})
    cpu = _cpu_attributes(server.cpu.model)
    return {
        "blueprint": blueprint,
        "model": model,
        "verified": verified_topology(server),
        "placeholders": placeholders,
        "bound": (len(bound.names) if bound.names is not None and not known else 0, len(bound.pci)),
        "cpus": [
            {"attrs": _attrs({"numaid": str(socket), **cpu}), "switches": switches}
            for socket, switches in sorted(sockets.items())
        ],
    }


def _natural(name: str) -> tuple[str, int]:
    match = re.match(r"^(.*?)(\d+)$", name)
    return (match.group(1), int(match.group(2))) if match else (name, -1)
