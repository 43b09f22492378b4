"""The blueprint: the root model a cluster is described with."""

from ipaddress import IPv4Address
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator

from .base import CatalogKey, Fraction, Identifier, Label, Strict, Text
from .fabric import Fabric
from .nodes import Bindings, NodeGroup, renamed_role
from .procurement import Procurement
from .resilience import Resilience
from .site import Floor, Site
from .slurm import Slurm
from .software import Software
from .workload import Prices, Workload

ADDRESS_KEY = r"^[a-z][a-z0-9_-]{0,62}/[A-Za-z0-9][A-Za-z0-9._-]{0,252}(:[A-Za-z0-9._/-]{1,64})?$"
AddressKey = Annotated[str, Field(pattern=ADDRESS_KEY)]
"""`network/host` or `network/host:port`, as the lock file's `addresses` lines."""


def _address_text(value: object) -> object:
    """A pin is written as text ('10.120.0.50'); the ipaddress module would also take a number."""
    if not isinstance(value, str):
        raise ValueError("must be an IPv4 address written as text, e.g. '10.120.0.50'")
    return value


PinnedAddress = Annotated[IPv4Address, BeforeValidator(_address_text), Field(strict=False)]
DeviceClass = Literal["compute", "login", "storage", "management", "subnet-manager", "switch", "equipment"]


class CatalogFile(Strict):
    """A user catalog file; plain strings in `catalogs` are native-format files."""

    path: Text
    """Path relative to the blueprint file."""
    format: Literal["native", "netbox"] = "native"
    """'netbox' reads a NetBox device-type-library YAML file."""
    key: CatalogKey | None = None
    """Catalog key for a NetBox device type; default: '<manufacturer slug>/<model slug>'."""
    kind: Literal["server", "switch", "equipment"] = "switch"
    """What a NetBox device type becomes in the catalog."""
    base: CatalogKey | None = None
    """For a NetBox server: the catalog entry its CPU, memory and GPUs are taken from."""


class PowerPlanning(Strict):
    load_factor: dict[DeviceClass, Fraction] = Field(default_factory=dict)
    """Planned share of each device class's maximum draw (default 1.0: plan for the nameplate maximum)."""

    @field_validator("load_factor", mode="before")
    @classmethod
    def _check_classes(cls, value: object) -> object:
        if isinstance(value, dict):
            for key in value:
                renamed_role(key)
        return value


class Suppression(Strict):
    code: str = Field(pattern=r"^CF-[A-Z]+-\d{3}$")
    """Finding code to silence, e.g. CF-POWER-002."""
    target: Label | None = None
    """Limit to findings about this rack, switch or data path; default: every finding with the code."""
    reason: Annotated[Text, Field(min_length=10)]
    """Why this is acceptable; shown in every report."""


class Blueprint(Strict):
    version: Literal[1, 2] = 1
    """Blueprint format version: 2 is current; left out, 1 (read as it meant, with a CF-MIGRATE-001 warning
    per meaning that changed; `clusterforge migrate` rewrites it). See README, Migrations."""
    name: Identifier
    """Cluster name; names the output folder."""
    description: Text = ""
    """What the cluster is for, in a sentence."""
    site: Site
    """Where the cluster stands."""
    include: list[Text] = Field(default_factory=list)
    """Files merged into this blueprint (paths relative to this file): lists are appended, mappings joined."""
    catalogs: list[Text | CatalogFile] = Field(default_factory=list)
    """User catalog files that add or override catalog entries."""
    floor: Floor
    """Rows of racks and their spacing."""
    node_groups: list[NodeGroup] = Field(min_length=1, max_length=500)
    """Servers by group: model, count, role and placement."""
    fabrics: dict[Identifier, Fabric] = Field(default_factory=dict)
    """Networks by name."""
    slurm: Slurm | None = None
    """Slurm cluster settings; leave out for clusters without Slurm."""
    software: Software = Software()
    """Node software versions the playbook installs and pins; a component without a version is left alone."""
    workloads: list[Workload] = Field(default_factory=list)
    """Training jobs and inference services the cluster must fit."""
    prices: Prices | None = None
    """GPU-hour or capex and electricity prices, for cost per million tokens and per training run."""
    power: PowerPlanning = PowerPlanning()
    """Power planning factors."""
    procurement: Procurement = Procurement()
    """Spares policy, the site's price list and PDU outlets, for the bill of materials."""
    resilience: Resilience | None = None
    """What one failure may take (a spine, a PDU, a rack...): `clusterforge failures` and `check` report each
    single failure that takes more (CF-FAIL findings); leave out to judge none."""
    addresses: Annotated[dict[AddressKey, PinnedAddress], Field(max_length=1_000_000)] = Field(default_factory=dict)
    """Addresses pinned for interfaces that already have them in the field, keyed as in the lock file:
    `network/host` (an in-band, storage or BMC address) or `network/host:port` (a compute port). A pin wins
    over the lock file and the fixed order, and no other interface takes a pinned address."""
    hold_days: Annotated[int, Field(ge=0, le=36_500)] | None = None
    """Days the identities of a device removed from the blueprint (host name, addresses, loopback, ASN, switch
    ports) stay reserved in the lock file before a render releases them for new devices; counted from the
    first render given a date (`render --date`, or SOURCE_DATE_EPOCH) that found the device gone, to the date
    of the render. 0 releases them at once; left out, they are held until `render --release-removed`."""
    suppress: list[Suppression] = Field(default_factory=list)
    """Findings accepted with a written reason."""
    bindings: Bindings = Field(default_factory=dict)
    """Each node's planned ports pinned to the devices the node reports (interface name, MAC, PCI address,
    RDMA device): written by `clusterforge bind` into a file the blueprint includes."""

    def catalog_files(self) -> list[CatalogFile]:
        return [CatalogFile(path=c) if isinstance(c, str) else c for c in self.catalogs]
