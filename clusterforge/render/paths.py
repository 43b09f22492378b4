"""Where rendered files live in the output folder and where the playbook installs them on hosts.

Renderers and the Ansible roles both use these, so that the playbook installs exactly what was rendered.
"""

from __future__ import annotations

SLURM_CONF = "slurm/slurm.conf"
"""The cluster part of slurm.conf; the site's own slurm.conf includes it."""
SLURM_GRES = "slurm/gres.conf"
SLURM_TOPOLOGY = "slurm/topology.conf"
SLURM_CGROUP = "slurm/cgroup.conf"
"""Confines jobs to their cores, memory and GPUs (slurmd reads it next to slurm.conf)."""
SLURM_INSTALL_DIR = "/etc/slurm"
SLURM_CONF_INSTALLED = "/etc/slurm/clusterforge.conf"
"""Installed name of SLURM_CONF; the site's slurm.conf has `Include /etc/slurm/clusterforge.conf`."""

NCCL_CONF_INSTALLED = "/etc/nccl.conf"
NCCL_TOPOLOGY_INSTALLED = "/etc/nccl/topology.xml"


RCCL_CONF_INSTALLED = "/etc/rccl.conf"
"""Where RCCL (AMD's NCCL) reads its settings: ~/.rccl.conf or /etc/rccl.conf (RCCL environment variables,
NCCL_CONF_FILE, in AMD's ROCm documentation); it takes the same NCCL_* names."""


def nccl_conf(group: str) -> str:
    """Rendered nccl.conf of a GPU node group."""
    return f"nccl/{group}.conf"


def rccl_conf(group: str) -> str:
    """Rendered rccl.conf of a node group of AMD GPUs."""
    return f"nccl/{group}.rccl.conf"


def _model_file(model: str) -> str:
    """A catalog key as a file name: 'nvidia/dgx-h100' -> 'nvidia_dgx-h100'."""
    return model.replace("/", "_")


def nccl_topology(model: str) -> str:
    """Rendered NCCL topology XML of a server model (catalog key 'nvidia/dgx-h100' -> nvidia_dgx-h100.xml)."""
    return f"nccl/topology/{_model_file(model)}.xml"


UDEV_RAILS_INSTALLED = "/etc/udev/rules.d/60-rdma-persistent-naming.rules"
"""udev rules pinning compute port names by PCI address; the name hides rdma-core's rules of that name."""


def udev_rails(model: str) -> str:
    """Rendered udev rules of a server model whose compute ports are named by PCI address."""
    return f"nccl/udev/{_model_file(model)}.rules"


NETPLAN_RAILS_INSTALLED = "/etc/netplan/60-clusterforge-rails.yaml"
"""A node's rail interfaces and its in-band and storage bonds (the file's name predates the bonds)."""
SYSCTL_RAILS = "network/sysctl-rails.conf"
SYSCTL_RAILS_INSTALLED = "/etc/sysctl.d/60-clusterforge-rails.conf"
ROCE_QOS_UNIT = "network/clusterforge-roce-qos.service"
ROCE_QOS_UNIT_INSTALLED = "/etc/systemd/system/clusterforge-roce-qos.service"
ROCE_QOS_SCRIPT_INSTALLED = "/usr/local/sbin/clusterforge-roce-qos.sh"


def roce_qos_script(node: str) -> str:
    """The node's host side of lossless RoCE (trust DSCP, PFC on the fabric's priority) as mlnx_qos commands."""
    return f"network/roce-qos/{node}.sh"


def netplan_rails(node: str) -> str:
    """Rendered netplan file of one node's rail interfaces."""
    return f"network/netplan/{node}.yaml"


IMEX_NODES_INSTALLED = "/etc/nvidia-imex/nodes_config.cfg"
"""Where the nvidia-imex service reads its domain's node list (its IMEX_NODE_CONFIG_FILE default)."""


def imex_nodes(domain: int) -> str:
    """Rendered IMEX node list of one multi-node NVLink domain."""
    return f"imex/domain{domain:03d}.cfg"


def nvue_config(switch: str) -> str:
    """Rendered NVUE configuration (`nv config apply` input) of one Ethernet fabric switch."""
    return f"switches/nvue/{switch}.yaml"


APT_PINS_INSTALLED = "/etc/apt/preferences.d/60-clusterforge.pref"
"""The node group's pinned node software (driver, Fabric Manager or IMEX, CUDA, DCGM, DOCA-OFED)."""
HOSTS = "network/hosts"
"""Every managed device's name and address, installed as a marked block of /etc/hosts."""
HOSTS_INSTALLED = "/etc/hosts"


def apt_pins(group: str) -> str:
    """Rendered apt preferences (version pins) of a node group."""
    return f"software/{group}.pref"
