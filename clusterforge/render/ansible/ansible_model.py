"""The Ansible render model: inventory groups and host vars, computed from the topology.

Layout of the inventory (every name passes through `ansible_name`):

    nodes            children: nodegroup_<group>, whose hosts carry every node's host vars
    switches         children: fabric_<network>, children switch_<network>_<tier> (host vars of switches)
    equipment        children: equipment_<role> (nvswitch, power_shelf, oob): built-in rack equipment with
                     an out-of-band address (NVL72 NVLink switch trays, power shelves, the management switch
                     a rack has beside the one serving as its OOB switch)
    role_<role>      nodes by role (compute, login, management, storage, subnet_manager)
    row_<row>        children: rack_<rack> (nodes and switches in that rack)
    su_<n>           nodes of scalable unit n
    rail_<n>         leaf switches of rail n of the compute fabric (rail-optimized fabrics only)
    gpu_nodes        children: the node groups whose model has GPUs (the NCCL role's target)
    slurm            children: slurm_controllers, slurm_login, slurm_nodes (children slurm_partition_<name>)

Each host's vars are written once, under its node group, switch tier or equipment role; the other groups
list the host with `{}`. What a node has per port (its rails: port, leaf, leaf port, address, subnet, gateway; its port
addresses; its network files) is not in the inventory but in the host data of its rack (`host_data`), which
the cf_network role reads for the hosts a play runs on: `ansible-inventory` and every play's start pay for
each value of every host, so the inventory holds few (docs/ansible-at-scale.md).

Equipment without a management address (none in the built-in catalog) is left out. A switch tray's two
management ports (BMC and NVOS) are its `cf_port_addresses`, in the inventory: few hosts have them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ...catalog import Server
from ...expand.management import management_networks
from ...expand.topology import Device, Topology
from ...model.fabric import Fabric
from ...validate import ValidBlueprint
from .. import paths
from ..addresses import topology_address_texts
from ..context import ansible_name, network_of_kind, per_topology
from ..imex.imex import imex_paths
from ..software.software import OFED_PACKAGE, group_software

HostVars = dict[str, Any]
Group = dict[str, Any]


@dataclass
class GroupNames:
    """Ansible group names in use, so two blueprint names that clean to the same name are caught."""

    owners: dict[str, str] = field(default_factory=dict)

    def name(self, prefix: str, *parts: str | int) -> str:
        source = "/".join(str(p) for p in (prefix, *parts))
        name = ansible_name("_".join(str(p) for p in (prefix, *parts)))
        if self.owners.setdefault(name, source) != source:
            raise ValueError(f"Ansible group name {name} stands for both {self.owners[name]} and {source}")
        return name


@dataclass(frozen=True)
class InstallFile:
    """A rendered file (`src`, relative to the output folder) and where it goes on a host (`dest`,
    relative to `cf_root`)."""

    src: str
    dest: str

    def as_var(self) -> dict[str, str]:
        return {"src": self.src, "dest": self.dest.lstrip("/")}

    @property
    def dir(self) -> str:
        return self.dest.lstrip("/").rsplit("/", 1)[0]


def install_vars(prefix: str, files: list[InstallFile]) -> dict[str, list[str] | list[dict[str, str]]]:
    """`<prefix>_files` (what to copy where) and `<prefix>_dirs` (the folders to create first, once each)."""
    return {f"{prefix}_dirs": sorted({f.dir for f in files}), f"{prefix}_files": [f.as_var() for f in files]}


def slurm_files(rendered: set[str]) -> list[InstallFile]:
    """The Slurm files every controller and partition node gets, where the Slurm family rendered them."""
    wanted = [
        InstallFile(paths.SLURM_CONF, paths.SLURM_CONF_INSTALLED),
        InstallFile(paths.SLURM_GRES, f"{paths.SLURM_INSTALL_DIR}/gres.conf"),
        InstallFile(paths.SLURM_TOPOLOGY, f"{paths.SLURM_INSTALL_DIR}/topology.conf"),
        InstallFile(paths.SLURM_CGROUP, f"{paths.SLURM_INSTALL_DIR}/cgroup.conf"),
    ]
    return [f for f in wanted if f.src in rendered]


def nccl_files(group: str, model: str, rendered: set[str]) -> list[InstallFile]:
    """A GPU node group's NCCL (or, for AMD GPUs, RCCL) files, where the NCCL family rendered them."""
    wanted = [
        InstallFile(paths.nccl_conf(group), paths.NCCL_CONF_INSTALLED),
        InstallFile(paths.rccl_conf(group), paths.RCCL_CONF_INSTALLED),
        InstallFile(paths.nccl_topology(model), paths.NCCL_TOPOLOGY_INSTALLED),
        InstallFile(paths.udev_rails(model), paths.UDEV_RAILS_INSTALLED),
    ]
    return [f for f in wanted if f.src in rendered]


@per_topology
def interfaces(topo: Topology) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, dict[str, str]]]]:
    """Per device: {network: address} for one-per-device addresses, {network: {port: address}} per port."""
    single: dict[str, dict[str, str]] = defaultdict(dict)
    ports: dict[str, dict[str, dict[str, str]]] = defaultdict(dict)
    texts = topology_address_texts(topo)
    for network in sorted(texts):
        for key, text in texts[network].items():
            device, _, port = key.partition(":")
            if port:
                by_network = ports[device]
                if network not in by_network:
                    by_network[network] = {}
                by_network[network][port] = text
            else:
                single[device][network] = text
    return single, ports


def _placement(device: Device) -> HostVars:
    out: HostVars = {}
    if device.rack is not None:
        out["cf_rack"] = device.rack  # its row is the group row_<row> (rack_<rack> is its child)
    if device.u is not None:
        out["cf_u"] = device.u
        out["cf_u_height"] = device.u_height
    return out


def _addresses(
    device: Device,
    single: dict[str, dict[str, str]],
    ports: dict[str, dict[str, dict[str, str]]],
    inband: str | None,
    oob: str | None,
) -> HostVars:
    """ansible_host (a node: on its group's management network, passed as `inband`; else in-band, else
    out-of-band) and every one-per-device address by network (`cf_addresses`;
    the BMC's or management port's is `cf_addresses.<oob network>`). Rack equipment with several management
    ports (NVLink switch tray: bmc, nvos) has them as `cf_port_addresses` and is reached on the one that is not
    its BMC (NVOS)."""
    own = single.get(device.name, {})
    oob_ports = ports.get(device.name, {}).get(oob, {}) if oob and device.kind == "equipment" else {}
    managed = next((a for p, a in sorted(oob_ports.items()) if p != "bmc"), None)
    out: HostVars = {}
    if device.kind == "node":  # the group's management network (expand/management.py), never storage unnamed
        host = own.get(inband) if inband else None
    else:
        host = (own.get(inband) if inband else None) or (own.get(oob) if oob else None) or managed
    if host:
        out["ansible_host"] = host
    if own:
        out["cf_addresses"] = dict(sorted(own.items()))
    if oob_ports:
        out["cf_port_addresses"] = {oob: dict(sorted(oob_ports.items()))}
    return out


def _node_vars(valid: ValidBlueprint, node: Device) -> HostVars:
    server = valid.catalog.require(node.model, Server)
    out: HostVars = {
        "cf_kind": "node",
        "cf_role": node.role,
        "cf_node_group": node.group,
        "cf_model": node.model,
        **_placement(node),
    }
    if node.su is not None:
        out["cf_su"] = node.su
    if node.nvlink_domain is not None:
        out["cf_nvlink_domain"] = node.nvlink_domain
    out["cf_gpu_model"] = server.gpus.model if server.gpus else None
    out["cf_gpu_count"] = server.gpus.count if server.gpus else 0
    return out


def _switch_vars(switch: Device) -> HostVars:
    out: HostVars = {
        "cf_kind": "switch",
        "cf_model": switch.model,
        "cf_fabric": switch.group,
        "cf_tier": switch.role,
        **_placement(switch),
    }
    for key in ("rail", "su", "pod", "plane"):
        value = getattr(switch, key)
        if value is not None:
            out[f"cf_{key}"] = value
    return out


def _equipment_vars(device: Device) -> HostVars:
    return {"cf_kind": "equipment", "cf_model": device.model, "cf_equipment_role": device.role, **_placement(device)}


def _members(names: list[str]) -> Group:
    return {"hosts": {name: {} for name in sorted(names)}}


def _children(groups: dict[str, Group]) -> Group:
    return {"children": dict(sorted(groups.items()))}


class _HostVars:
    """Every host's vars: placement, kind-specific facts, then addresses (ansible_host first)."""

    def __init__(self, valid: ValidBlueprint, topo: Topology) -> None:
        self.valid, self.topo = valid, topo
        self.single, self.ports = interfaces(topo)
        self.inband, self.oob = network_of_kind(valid, "inband"), network_of_kind(valid, "oob")
        self.managed_on = {g: m.network for g, m in management_networks(valid.blueprint, topo).items()}
        self.imex = {node: InstallFile(*files) for node, files in imex_paths(topo, self.inband).items()}

    def __call__(self, device: Device) -> HostVars:
        if device.kind == "node":
            own = _node_vars(self.valid, device)
        elif device.kind == "switch":
            own = _switch_vars(device)
        else:
            own = _equipment_vars(device)
        if device.name in self.imex:
            own.update(install_vars("cf_imex", [self.imex[device.name]]))
        reach = self.managed_on.get(device.group or "") if device.kind == "node" else self.inband
        addresses = _addresses(device, self.single, self.ports, reach, self.oob)
        return {
            **{k: v for k, v in addresses.items() if k == "ansible_host"},
            **own,
            **{k: v for k, v in addresses.items() if k != "ansible_host"},
        }


def build_inventory(valid: ValidBlueprint, topo: Topology) -> dict[str, Any]:
    """The inventory as one nested dict ({'all': {'children': ...}}), in the order it is written."""
    names = GroupNames()
    host_vars = _HostVars(valid, topo)
    nodes = sorted(topo.nodes(), key=lambda d: d.name)
    switches = sorted((d for d in topo.devices.values() if d.kind == "switch"), key=lambda d: d.name)
    equipment = managed_equipment(topo)
    node_groups, gpu_groups = _node_groups(valid, nodes, names, host_vars)
    top: dict[str, Group] = {
        "nodes": _children(node_groups),
        "switches": _children(_fabric_groups(switches, names, host_vars)),
    }
    names.name("nodes")
    names.name("switches")
    if equipment:
        top[names.name("equipment")] = _children(_equipment_groups(equipment, names, host_vars))
    top.update(_placement_groups(topo, nodes, [*switches, *equipment], names))
    top[names.name("gpu_nodes")] = _children(gpu_groups)
    if valid.blueprint.slurm is not None:
        top.update(_slurm_groups(valid, names))
    return {"all": {"children": top}}


def _node_groups(
    valid: ValidBlueprint, nodes: list[Device], names: GroupNames, host_vars: _HostVars
) -> tuple[dict[str, Group], dict[str, Group]]:
    """nodegroup_<group> with its hosts' vars, and the GPU groups' names."""
    node_groups: dict[str, Group] = {}
    gpu_groups: dict[str, Group] = {}
    for group in sorted(valid.blueprint.node_groups, key=lambda g: g.name):
        name = names.name("nodegroup", group.name)
        if valid.catalog.require(group.model, Server).gpus:
            gpu_groups[name] = {}
        node_groups[name] = {"hosts": {n.name: host_vars(n) for n in nodes if n.group == group.name}}
    return node_groups, gpu_groups


def managed_equipment(topo: Topology) -> list[Device]:
    """Built-in rack equipment with an address (its management ports are cabled to the OOB network)."""
    addressed = {key.partition(":")[0] for by_key in topo.addresses.values() for key in by_key}
    return sorted(
        (d for d in topo.devices.values() if d.kind == "equipment" and d.name in addressed), key=lambda d: d.name
    )


def _equipment_groups(equipment: list[Device], names: GroupNames, host_vars: _HostVars) -> dict[str, Group]:
    """equipment_<role>, whose hosts carry the equipment's vars."""
    return {
        names.name("equipment", role): {"hosts": {d.name: host_vars(d) for d in equipment if d.role == role}}
        for role in sorted({d.role for d in equipment if d.role})
    }


def _fabric_groups(switches: list[Device], names: GroupNames, host_vars: _HostVars) -> dict[str, Group]:
    """fabric_<network> with children switch_<network>_<tier>, whose hosts carry the switches' vars."""
    fabrics: dict[str, Group] = {}
    by_tier: dict[str, dict[str, list[Device]]] = defaultdict(lambda: defaultdict(list))
    for switch in switches:
        if switch.group:
            by_tier[switch.group][switch.role].append(switch)
    for fabric in sorted(by_tier):
        tiers: dict[str, Group] = {}
        for tier in sorted(by_tier[fabric]):
            members = by_tier[fabric][tier]
            tiers[names.name("switch", fabric, tier)] = {"hosts": {s.name: host_vars(s) for s in members}}
        fabrics[names.name("fabric", fabric)] = _children(tiers)
    return fabrics


def _placement_groups(
    topo: Topology,
    nodes: list[Device],
    switches: list[Device],
    names: GroupNames,
) -> dict[str, Group]:
    """role_<role>, row_<row> with rack_<rack> children (nodes, switches and managed equipment), su_<n> and
    rail_<n> (compute leaves)."""
    top: dict[str, Group] = {}
    for role in sorted({n.role for n in nodes}):
        top[names.name("role", role)] = _members([n.name for n in nodes if n.role == role])
    racks: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for device in (*nodes, *switches):
        if device.rack is not None:
            racks[topo.racks[device.rack].row][device.rack].append(device.name)
    for row in sorted(racks):
        top[names.name("row", row)] = _children(
            {names.name("rack", rack): _members(members) for rack, members in racks[row].items()}
        )
    by_su: dict[int, list[str]] = defaultdict(list)
    for node in nodes:
        if node.su is not None:
            by_su[node.su].append(node.name)
    for su in sorted(by_su):
        top[names.name("su", su)] = _members(by_su[su])
    compute = {name for name, fabric in topo.fabrics.items() if fabric.kind == "compute"}
    rail_leaves = [s for s in switches if s.group in compute and s.role == "leaf" and s.rail is not None]
    for rail in sorted({s.rail for s in rail_leaves if s.rail is not None}):
        top[names.name("rail", rail)] = _members([s.name for s in rail_leaves if s.rail == rail])
    return top


def _slurm_groups(valid: ValidBlueprint, names: GroupNames) -> dict[str, Group]:
    """slurm: its controllers, its login nodes (they run sbatch and srun, which read the same slurm.conf), and
    its nodes by partition."""
    slurm = valid.blueprint.slurm
    assert slurm is not None
    hostnames = {g.name: g.hostnames() for g in valid.blueprint.node_groups}
    logins = sorted(h for g in valid.blueprint.node_groups if g.role == "login" for h in hostnames[g.name])
    partitions = {
        names.name("slurm_partition", p.name): _members(sorted({h for g in p.node_groups for h in hostnames[g]}))
        for p in slurm.partitions
    }
    children = {
        names.name("slurm_controllers"): _members(slurm.controllers),
        **({names.name("slurm_login"): _members(logins)} if logins else {}),
        names.name("slurm_nodes"): _children(partitions),
    }
    return {names.name("slurm"): {"children": children}}


def all_vars(valid: ValidBlueprint) -> dict[str, Any]:
    """group_vars/all.yml: what every host needs to run the roles (the cluster, cf_root, cf_become, whether
    packages are installed) and the switches per component, for what a site provides itself."""
    return {
        "cf_cluster": valid.blueprint.name,
        "cf_root": "/",
        "cf_become": True,
        # packages are installed only on a real host; under a scratch cf_root only their pins are written
        "cf_install_packages": "{{ cf_root == '/' }}",
        # per component, on a real host: false where the site installs (and runs) it itself
        "cf_install_gpu_stack": True,
        "cf_install_ofed": True,
        "cf_install_slurm": True,
        # changed netplan and sysctl files applied by the cf_network handlers, netplan with this command
        "cf_apply_network": True,
        "cf_netplan_apply": "netplan apply",
    }


def cluster_vars(valid: ValidBlueprint) -> dict[str, Any]:
    """cluster.yml: the networks and their pools, the Slurm controllers and the install paths."""
    blueprint = valid.blueprint
    return {
        "cf_cluster": blueprint.name,
        "cf_slurm_cluster_name": blueprint.slurm.cluster_name if blueprint.slurm else None,
        "cf_slurm_controllers": list(blueprint.slurm.controllers) if blueprint.slurm else [],
        "cf_install_paths": {
            "slurm_dir": paths.SLURM_INSTALL_DIR,
            "slurm_conf": paths.SLURM_CONF_INSTALLED,
            "nccl_conf": paths.NCCL_CONF_INSTALLED,
            "nccl_topology": paths.NCCL_TOPOLOGY_INSTALLED,
            "apt_pins": paths.APT_PINS_INSTALLED,
            "hosts": paths.HOSTS_INSTALLED,
        },
        "cf_networks": {name: _network_vars(fabric) for name, fabric in sorted(blueprint.fabrics.items())},
    }


def slurm_role_vars(rendered: set[str]) -> dict[str, Any]:
    """roles/cf_slurm/vars: the Slurm files to install and their folders, and where the cluster part goes (the
    site's slurm.conf includes it)."""
    return {**install_vars("cf_slurm", slurm_files(rendered)), "cf_slurm_cluster_conf_path": paths.SLURM_CONF_INSTALLED}


def nccl_role_vars(valid: ValidBlueprint, rendered: set[str]) -> dict[str, Any]:
    """roles/cf_nccl/vars: each GPU node group's NCCL files and folders (`cf_nccl_by_group.<group>`)."""
    by_group: dict[str, Any] = {}
    for group in sorted(valid.blueprint.node_groups, key=lambda g: g.name):
        if valid.catalog.require(group.model, Server).gpus:
            files = install_vars("cf_nccl", nccl_files(group.name, group.model, rendered))
            by_group[group.name] = {"dirs": files["cf_nccl_dirs"], "files": files["cf_nccl_files"]}
    return {"cf_nccl_by_group": by_group}


def software_role_vars(valid: ValidBlueprint) -> dict[str, Any]:
    """roles/cf_software/vars: each node group's pinned packages (`packages`: name=version for apt), the apt
    preferences file that pins them (`files`, `dirs`) and the services to enable (`services`), by node group
    (`cf_software_by_group.<group>`); groups without any are left out."""
    by_group: dict[str, Any] = {}
    for group in sorted(valid.blueprint.node_groups, key=lambda g: g.name):
        software = group_software(valid, group)
        if software.packages:
            files = install_vars("cf_software", [InstallFile(paths.apt_pins(group.name), paths.APT_PINS_INSTALLED)])
            by_group[group.name] = {
                "dirs": files["cf_software_dirs"],
                "files": files["cf_software_files"],
                "packages": [p.spec for p in software.packages],
                "ofed_packages": [p.spec for p in software.packages if p.name == OFED_PACKAGE],
                "services": software.services,
            }
    return {"cf_software_by_group": by_group}


def _network_vars(fabric: Fabric) -> dict[str, Any]:
    """A network's kind and pool, and on RoCE fabrics the lossless class switches and NICs are set up for."""
    out: dict[str, Any] = {"kind": fabric.kind, "ipv4_pool": str(fabric.ipv4_pool)}
    roce = getattr(fabric, "roce", None)
    if roce is not None and roce.qos is not None:
        out["roce_qos"] = {
            "dscp": roce.qos.dscp,
            "pfc_priority": roce.qos.pfc_priority,
            "nccl_traffic_class": roce.nccl_traffic_class,
        }
    return out
