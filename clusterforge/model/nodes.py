"""Node groups: what servers, how many, what they are for and where they go."""

import re
from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator

from .base import CatalogKey, Count, HostName, Identifier, NcclName, NcclValue, PortName, RackName, Strict, _matching
from .naming import check_pattern

OsName = Literal["dgx-os", "ubuntu", "rhel"]
_IF_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,14}")
_MAC = re.compile(r"[0-9a-f]{2}(:[0-9a-f]{2}){5}|[0-9a-f]{2}(:[0-9a-f]{2}){19}")
_PCI = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_RDMA = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,31}")
InterfaceName = Annotated[
    str, _matching(_IF_NAME, "must be an interface name: a letter, then up to 14 letters, digits, '_', '.' or '-'")
]

NodeRole = Literal["compute", "login", "storage", "management", "subnet-manager"]
RENAMED_ROLES = {"fabric-manager": "subnet-manager"}
"""Role names that changed: the InfiniBand subnet manager (UFM) was 'fabric-manager', which reads as NVIDIA
Fabric Manager (the NVSwitch service on HGX nodes)."""


def renamed_role(value: object) -> object:
    """Refuse an old role name with the new one, instead of a bare 'not one of' list."""
    if isinstance(value, str) and value in RENAMED_ROLES:
        raise ValueError(
            f"role '{value}' is now '{RENAMED_ROLES[value]}' (the InfiniBand subnet manager or UFM host; "
            "NVIDIA Fabric Manager is node software, installed on HGX nodes by the playbook)"
        )
    return value


class Placement(Strict):
    """Where a group's nodes go. With neither rows nor racks, placement is automatic over all racks."""

    rows: list[RackName] | None = None
    """Rows to fill, in order."""
    racks: list[RackName] | None = None
    """Racks to fill, in order."""
    per_rack: Annotated[int, Field(ge=1, le=100)] | None = None
    """Nodes per rack; default: as many as space, power and cooling allow."""

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        if self.rows is not None and self.racks is not None:
            raise ValueError("give either rows or racks, not both")
        return self


class NodeGroup(Strict):
    name: Identifier
    """Group name; becomes an Ansible group and the default host name prefix."""
    model: CatalogKey
    """Catalog key of the server model."""
    count: Count
    """Number of nodes in the group."""
    role: NodeRole
    """What the nodes do; decides Ansible groups, Slurm membership and power factors."""
    hostname: str = "{group}{index:03d}"
    """Host name pattern; fields {group} and {index} (from 1)."""
    placement: Placement = Placement()
    """Where the nodes go; automatic when left out."""
    absent: Annotated[list[Annotated[int, Field(ge=1, le=1_000_000)]], Field(max_length=100_000)] = Field(
        default_factory=list
    )
    """Indexes (from 1) of nodes taken out of the group: the others keep their names and, with a lock file,
    every identity (a node removed from the middle renames none after it). `count` is the nodes present."""
    management_network: Identifier | None = None
    """The network Ansible reaches the nodes on (their `ansible_host`): an in-band, out-of-band or storage
    network the group is attached to. Default: the in-band network the group is on; a group on none must name
    one (CF-MGMT-001): the out-of-band network to reach the nodes on their BMCs, or a storage network, which is
    used only when named here."""
    nccl: dict[NcclName, NcclValue] = Field(default_factory=dict)
    """NCCL settings for this group, added to or replacing the derived ones (NCCL_* names only)."""
    os: OsName = "ubuntu"
    """Operating system of the nodes; with the server model it decides the names of their network interfaces
    (catalog `interface_naming`): DGX OS and Ubuntu name a NIC port by its PCI path where the vendor documents
    that (ibp24s0), RHEL by firmware slot (ens8f1np1), which only `clusterforge bind` can read."""

    @field_validator("role", mode="before")
    @classmethod
    def _check_role(cls, value: object) -> object:
        return renamed_role(value)

    @field_validator("hostname")
    @classmethod
    def _check_hostname(cls, value: str) -> str:
        return check_pattern(value, {"group", "index"})

    def indexes(self) -> list[int]:
        """The index of each node present: 1 to `count`, passing over those `absent`."""
        if not self.absent:
            return list(range(1, self.count + 1))
        gone = set(self.absent)
        return [i for i in range(1, self.count + len(gone) + 1) if i not in gone][: self.count]

    def hostnames(self) -> list[str]:
        return [self.hostname.format(group=self.name, index=i) for i in self.indexes()]


class BoundPort(Strict):
    """What a node reported for one of its planned ports (written by `clusterforge bind`)."""

    name: InterfaceName
    """Interface name the node gives the port."""
    mac: Annotated[str, _matching(_MAC, "must be a MAC address in lower-case hex (6 or 20 octets)")] | None = None
    """Its permanent hardware address (20 octets on IPoIB); netplan matches Ethernet ports by it."""
    pci: Annotated[str, _matching(_PCI, "must be a PCI address such as '0000:18:00.0'")] | None = None
    """Its PCI address (domain:bus:device.function)."""
    rdma: Annotated[str, _matching(_RDMA, "must be an RDMA device name such as mlx5_0")] | None = None
    """Its RDMA device (ibdev2netdev), the name NCCL_IB_HCA uses."""
    source: Annotated[str, Field(max_length=300)] = ""
    """The facts file (and tool) the port was read from."""


Bindings = dict[HostName, dict[PortName, BoundPort]]
"""node -> planned port -> what the node reported for it."""
