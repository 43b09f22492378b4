"""software output family: the node software of each node group as pinned packages, and /etc/hosts.

From the blueprint's `software` versions and the catalog's view of each server (NVIDIA GPUs or not, NVSwitch
board (`gpus.nvswitch`) or multi-node NVLink domain, NVIDIA NICs or not), every node group gets the packages it needs
with an apt preferences file that pins them (Pin-Priority 1001, so apt neither upgrades nor replaces them):

- NVIDIA driver `nvidia-driver-<branch>-server-open` (Ubuntu's data-centre branch packages);
- Fabric Manager `nvidia-fabricmanager-<branch>` on NVSwitch boards (HGX/DGX: the catalog's `gpus.nvswitch`;
  GPUs joined directly or by NVLink bridges have no NVSwitch to configure and get none), at the driver's exact
  version, since Fabric Manager refuses to start with any other (NVIDIA Fabric Manager
  user guide; its packages depend on the driver version, e.g. cuda-drivers-fabricmanager-570 on
  nvidia-fabricmanager-570 (= 570.172.08-0ubuntu1));
- IMEX `nvidia-imex-<branch>` on multi-node NVLink systems (GB200 NVL72), at the driver's version;
- CUDA `cuda-toolkit-<major>-<minor>`, DCGM `datacenter-gpu-manager-4-cuda<major>` (DCGM 4) and their services;
- DOCA-OFED `doca-ofed` on nodes with NVIDIA ConnectX or BlueField NICs.

A component without a version in the blueprint is not installed (nothing is guessed). AMD GPU nodes get no
NVIDIA packages. `network/hosts` lists every managed device's name and address for /etc/hosts.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...catalog import GPU, NIC, Server
from ...expand.topology import Topology
from ...model import NodeGroup
from ...validate import ValidBlueprint
from .. import paths
from ..context import RenderContext, network_of_kind

OFED_PACKAGE = "doca-ofed"
"""The NIC stack's package (the playbook's cf_install_ofed); every other pinned package is the GPU stack's."""


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    """apt version pattern: the blueprint's version with any Debian revision (and epoch for DCGM)."""

    @property
    def spec(self) -> str:
        """For apt and Ansible's apt module: name=version-pattern."""
        return f"{self.name}={self.version}"


@dataclass(frozen=True)
class GroupSoftware:
    packages: list[Package]
    services: list[str]
    """systemd services to enable once the packages are installed."""


def _nvidia_gpus(valid: ValidBlueprint, server: Server) -> bool:
    return server.gpus is not None and valid.catalog.require(server.gpus.model, GPU).vendor == "NVIDIA"


def _nvidia_nics(valid: ValidBlueprint, server: Server) -> bool:
    return any(g.nic and valid.catalog.require(g.nic, NIC).vendor == "NVIDIA" for g in server.ports)


def _driver_packages(server: Server, driver: str) -> tuple[list[Package], list[str]]:
    """The driver, and Fabric Manager (NVSwitch board) or IMEX (multi-node NVLink) at the same version; NVLink
    bridges need neither."""
    assert server.gpus is not None
    branch = driver.split(".")[0]
    packages = [Package(f"nvidia-driver-{branch}-server-open", f"{driver}-*")]
    if server.gpus.nvlink_domain > server.gpus.count:
        return [*packages, Package(f"nvidia-imex-{branch}", f"{driver}-*")], []
    if server.gpus.fabric_manager:
        return [*packages, Package(f"nvidia-fabricmanager-{branch}", f"{driver}-*")], ["nvidia-fabricmanager"]
    return packages, []


def group_software(valid: ValidBlueprint, group: NodeGroup) -> GroupSoftware:
    software = valid.blueprint.software
    server = valid.catalog.require(group.model, Server)
    packages: list[Package] = []
    services: list[str] = []
    if _nvidia_gpus(valid, server):
        if software.nvidia_driver:
            driver, driver_services = _driver_packages(server, software.nvidia_driver)
            packages += driver
            services += driver_services
        if software.cuda:
            major, minor = software.cuda.split(".")
            packages.append(Package(f"cuda-toolkit-{major}-{minor}", f"{software.cuda}.*"))
            if software.dcgm:
                packages.append(Package(f"datacenter-gpu-manager-4-cuda{major}", f"1:{software.dcgm}-*"))
                services.append("nvidia-dcgm")
    if software.doca_ofed and _nvidia_nics(valid, server):
        packages.append(Package(OFED_PACKAGE, f"{software.doca_ofed}-*"))
    return GroupSoftware(packages, services)


def software_paths(valid: ValidBlueprint) -> dict[str, str]:
    """node group -> its rendered apt preferences file, for groups with anything to pin."""
    return {g.name: paths.apt_pins(g.name) for g in valid.blueprint.node_groups if group_software(valid, g).packages}


def hosts_lines(topo: Topology, inband: str | None, oob: str | None) -> list[str]:
    """`address name` for /etc/hosts: nodes at their in-band address, their BMCs as <node>-bmc, switches and
    rack equipment at their management address (an NVLink switch tray at NVOS, its BMC as <tray>-bmc)."""
    names: dict[str, str] = {}
    for key, address in topo.addresses.get(inband or "", {}).items():
        if ":" not in key:
            names[key] = str(address)
    for key, address in topo.addresses.get(oob or "", {}).items():
        device, _, port = key.partition(":")
        is_bmc = port == "bmc" or (not port and topo.devices[device].kind == "node")
        names.setdefault(f"{device}-bmc" if is_bmc else device, str(address))
    return [f"{address} {name}" for name, address in sorted(names.items())]


def hosts_text(ctx: RenderContext) -> str:
    """network/hosts; the cf_hosts role writes the same text as its /etc/hosts block (made once per render)."""
    return ctx.shared(_hosts_text)


def _hosts_text(ctx: RenderContext) -> str:
    inband, oob = network_of_kind(ctx.valid, "inband"), network_of_kind(ctx.valid, "oob")
    model = {"blueprint": ctx.valid.blueprint.name, "lines": hosts_lines(ctx.topo, inband, oob)}
    return ctx.render("software/hosts.j2", model)


def render_software(ctx: RenderContext) -> dict[str, str]:
    valid = ctx.valid
    files = {paths.HOSTS: hosts_text(ctx)}
    groups = {g.name: g for g in valid.blueprint.node_groups}
    for group, path in software_paths(valid).items():
        model = {
            "blueprint": valid.blueprint.name,
            "group": group,
            "packages": group_software(valid, groups[group]).packages,
        }
        files[path] = ctx.render("software/apt-pins.pref.j2", model)
    return files
