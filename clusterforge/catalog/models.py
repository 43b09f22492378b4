"""Catalog entry models: GPUs, NICs, servers, switches and rack types.

Every number in the built-in catalog has an entry in its `sources` mapping (field name -> where the
figure was read); a source that starts with `estimate:` marks the value as an estimate.
"""

import re
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, field_validator, model_validator
from pydantic import Strict as PydanticStrict

from ..model.base import (
    CatalogKey,
    Count,
    Fraction,
    Label,
    NonNegativeCount,
    PortName,
    PositiveFloat,
    RackName,
    Strict,
    plain_text,
)
from ..model.nodes import OsName
from ..model.workload import ModelShapeFields

SourceText = Annotated[str, Field(max_length=2000), AfterValidator(plain_text)]
Technology = Literal["infiniband", "ethernet"]
_DEVICE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,31}")
_BUS_ID = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
PortRole = Literal["compute", "storage", "inband", "oob", "any"]
Cage = Literal["osfp", "qsfp-dd", "qsfp112", "qsfp56", "qsfp28", "qsfp+", "sfp56", "sfp28", "sfp+", "sfp", "rj45"]
CoolingMethod = Literal["air", "liquid"]
NamingPolicy = Literal["path"]
"""'path': systemd's predictable name from the PCI location (systemd.net-naming-scheme(7), ID_NET_NAME_PATH:
prefix 'ib' or 'en', [P<domain>]p<bus>s<slot>[f<function>][n<phys_port_name>], bus and slot in decimal)."""
_IF_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,14}")


class Sourced(Strict):
    vendor: Label
    """Manufacturer name as printed on the part."""
    name: Label
    """Human-readable product name."""
    sources: dict[Label, SourceText] = Field(default_factory=dict)
    """Where each figure comes from, by field name; a value starting with 'estimate:' marks an estimate."""

    def estimated_fields(self) -> list[str]:
        return sorted(k for k, v in self.sources.items() if v.lower().startswith("estimate"))


class GPU(Sourced):
    kind: Literal["gpu"] = "gpu"
    memory_gb: PositiveFloat
    """On-package memory (HBM or GDDR) in GB."""
    memory_type: Label
    memory_bandwidth_tbs: PositiveFloat
    """Memory bandwidth in TB/s."""
    tdp_w: PositiveFloat
    """Thermal design power (maximum board power) in W."""
    bf16_tflops: PositiveFloat
    """Dense BF16 tensor throughput in TFLOPS."""
    fp8_tflops: PositiveFloat | None = None
    """Dense FP8 tensor throughput in TFLOPS, where supported."""
    fp4_tflops: PositiveFloat | None = None
    """Dense FP4 tensor throughput in TFLOPS, where supported (Blackwell); elsewhere 4-bit runs at the FP8 rate."""
    gpu_link: Label | None = None
    """GPU-to-GPU link (NVLink generation, Infinity Fabric), or none for PCIe-only parts."""
    gpu_link_gbs: PositiveFloat | None = None
    """Total GPU-to-GPU bandwidth per GPU in GB/s."""

    @property
    def link_family(self) -> str:
        """The scale-up link without its generation (NVLink, Infinity Fabric); empty for PCIe-only parts."""
        return re.sub(r"\s+\d+$", "", self.gpu_link or "")


class NIC(Sourced):
    kind: Literal["nic"] = "nic"
    ports: Count
    speed_gbps: PositiveFloat
    """Maximum speed per port."""
    cage: Cage
    technologies: list[Technology]
    max_power_w: PositiveFloat | None = None


def _each_matching(values: list[str] | None, pattern: re.Pattern[str], what: str) -> list[str] | None:
    for value in values or []:
        if not pattern.fullmatch(value):
            raise ValueError(f"'{value}' is not {what}")
    return values


class BreakoutMode(Strict):
    """One row of the vendor's breakout table for a port group: a split, the sub-port speeds it runs, which
    cages may split so, and whether the next cage must then be disabled (Cumulus Linux, Switch Port
    Attributes, Breakout Ports)."""

    mode: Literal["2x", "4x", "8x"]
    speeds_gbps: list[Annotated[int, Field(ge=1, le=1600)]] = Field(min_length=1)
    """Sub-port speeds of this split, e.g. [25, 10, 1] for 4x on a 100G QSFP28 cage."""
    cages: Literal["all", "odd"] = "all"
    """'odd': only odd-numbered cages (swp1, swp3, ...) may split so."""
    disables_next: bool = False
    """The next (even-numbered) cage must be set to `breakout disabled`."""

    @property
    def sub_ports(self) -> int:
        return int(self.mode[:-1])


class PortGroup(Strict):
    """A set of identical ports on a device."""

    name: PortName
    """Port name prefix; ports are named <name><index>, index from 1."""
    count: Count
    """Logical ports at `speed_gbps`."""
    speed_gbps: PositiveFloat
    cage: Cage
    cages: Count | None = None
    """Physical cages, when several logical ports share one (twin-port OSFP)."""
    breakout: dict[Annotated[int, PydanticStrict(False)], Count] = Field(default_factory=dict)
    """Other speeds the group can run at, as speed (Gb/s) -> number of logical ports."""
    breakout_modes: list[BreakoutMode] = Field(default_factory=list)
    """The vendor's breakout table (switch ports): which split serves which sub-port speed, on which cages;
    rendered switch configurations split cages only as listed here, where it is given."""
    role: PortRole = "any"
    """What the ports are for on a server; switches use 'any'."""
    technology: Technology | Literal["vpi"] = "ethernet"
    """'vpi' ports run InfiniBand or Ethernet."""
    nic: CatalogKey | None = None
    """Catalog key of the NIC behind these ports, if any."""
    lane_gbps: Annotated[int, Field(ge=1, le=400)] | None = None
    """Fastest electrical lane rate of the ports (200 for XDR); left out, the cage type's (100 for OSFP and
    QSFP112, 50 for QSFP56, 25 for QSFP28/SFP28)."""
    devices: list[str] | None = None
    """OS RDMA device name of each port, in port order (e.g. mlx5_0), where the vendor documents them."""
    bus_ids: list[str] | None = None
    """PCI address (domain:bus:device.function) of each port, in port order, where the vendor documents them
    (compute ports may give theirs in the PCIe layout instead); with the server's `interface_naming` they
    give the interface names."""
    interface_names: dict[OsName, list[str]] = Field(default_factory=dict)
    """Interface name of each port, in port order, per operating system, where the vendor quotes them (e.g.
    on-board 'eno3'); these win over names derived from `bus_ids`."""

    @field_validator("devices")
    @classmethod
    def _check_device_names(cls, value: list[str] | None) -> list[str] | None:
        return _each_matching(value, _DEVICE_NAME, "a device name (letters, digits, '_', '-' and '.')")

    @field_validator("bus_ids")
    @classmethod
    def _check_bus_ids(cls, value: list[str] | None) -> list[str] | None:
        return _each_matching(value, _BUS_ID, "a PCI address such as '0000:aa:00.1'")

    @field_validator("interface_names")
    @classmethod
    def _check_interface_names(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        for names in value.values():
            _each_matching(names, _IF_NAME, "an interface name (a letter, then up to 14 letters, digits, '_.-')")
        return value

    @model_validator(mode="after")
    def _check_device_count(self) -> Self:
        if self.devices is not None and len(self.devices) != self.count:
            raise ValueError(f"devices lists {len(self.devices)} names for {self.count} ports")
        if self.bus_ids is not None and len(self.bus_ids) != self.count:
            raise ValueError(f"bus_ids lists {len(self.bus_ids)} addresses for {self.count} ports")
        for os_name, names in self.interface_names.items():
            if len(names) != self.count:
                raise ValueError(f"interface_names.{os_name} lists {len(names)} names for {self.count} ports")
        return self

    def breakout_mode(self, sub_speed_gbps: float) -> BreakoutMode | None:
        """The table's split for sub-ports at this speed, if the table lists one."""
        return next((m for m in self.breakout_modes if int(sub_speed_gbps) in m.speeds_gbps), None)

    def ports_at(self, speed_gbps: float) -> int:
        """How many logical ports this group offers at the given speed (0 if it cannot run at it)."""
        if speed_gbps == self.speed_gbps:
            return self.count
        return self.breakout.get(int(speed_gbps), 0)


_REDUNDANCY = re.compile(r"(\d{1,2})\+(\d{1,2})")


Airflow = Literal["p2c", "c2p", "front-to-rear", "rear-to-front"]
"""P2C: in at the power-supply side, out at the port (connector) side; C2P the reverse (switches).
Servers: front-to-rear (the usual) or rear-to-front."""


class PSUs(Strict):
    part_numbers: dict[Airflow, Label] = Field(default_factory=dict)
    """Spare PSU part number by airflow direction, where known."""
    count: Count
    rating_w: PositiveFloat
    """Output rating of one PSU."""
    redundancy: str
    """N+M: N PSUs carry the load, M are spare (e.g. '4+2')."""

    @field_validator("redundancy")
    @classmethod
    def _check_redundancy(cls, value: str) -> str:
        if not _REDUNDANCY.fullmatch(value):
            raise ValueError("must be of the form N+M, e.g. '4+2'")
        return value

    @model_validator(mode="after")
    def _check_count(self) -> Self:
        if self.required + self.spare != self.count:
            raise ValueError(f"redundancy {self.redundancy} does not add up to count {self.count}")
        return self

    @property
    def required(self) -> int:
        match = _REDUNDANCY.fullmatch(self.redundancy)
        assert match
        return int(match.group(1))

    @property
    def spare(self) -> int:
        match = _REDUNDANCY.fullmatch(self.redundancy)
        assert match
        return int(match.group(2))


class Cooling(Strict):
    method: CoolingMethod
    liquid_fraction: Fraction = 0.0
    """Share of the heat carried away by coolant (direct liquid cooling); the rest goes to air."""
    airflow_cfm: PositiveFloat | None = None

    @model_validator(mode="after")
    def _check_fraction(self) -> Self:
        if self.method == "air" and self.liquid_fraction:
            raise ValueError("an air-cooled device has liquid_fraction 0")
        return self


class GPUComplement(Strict):
    model: CatalogKey
    count: Count
    nvlink_domain: Count
    """GPUs in one NVLink/NVSwitch domain: 8 for an HGX board, 72 for a GB200 NVL72 rack."""
    nvswitch: bool | None = None
    """NVSwitch chips on the board join its GPUs in one NVLink domain (HGX and DGX 8-GPU baseboards): NVIDIA
    Fabric Manager configures them, so the nodes get it. False for GPUs joined directly or by NVLink
    bridges, and for NVL72 trays (their NVSwitches sit in the rack's switch trays; the trays run IMEX).
    Required when nvlink_domain equals count above 1, where both kinds of board exist."""
    sockets: list[Annotated[int, Field(ge=0)]] | None = None
    """CPU socket of each GPU by index, where CPU and GPUs are one package (Grace superchips) and no
    PCIe layout applies; Slurm's gres.conf binds each GPU to its socket's cores."""

    @model_validator(mode="after")
    def _one_socket_per_gpu(self) -> Self:
        if self.sockets is not None and len(self.sockets) != self.count:
            raise ValueError(f"sockets lists {len(self.sockets)} sockets for {self.count} GPUs")
        return self

    @model_validator(mode="after")
    def _nvswitch_said_where_it_matters(self) -> Self:
        if self.nvswitch and self.nvlink_domain != self.count:
            raise ValueError(
                f"nvswitch: true needs nvlink_domain equal to count: an NVSwitch board joins its {self.count} "
                f"GPUs in one domain (nvlink_domain {self.nvlink_domain})"
            )
        if self.nvswitch is None and self.nvlink_domain == self.count > 1:
            raise ValueError(
                f"say whether NVSwitch chips join the {self.count} GPUs of the NVLink domain: nvswitch: true "
                "(HGX/DGX baseboard, gets NVIDIA Fabric Manager) or nvswitch: false (direct NVLink or bridges)"
            )
        return self

    @property
    def fabric_manager(self) -> bool:
        """NVIDIA Fabric Manager runs on the node: its board's NVSwitches form the (single-node) domain."""
        return bool(self.nvswitch) and self.count > 1


class CPU(Strict):
    model: Label
    sockets: Count
    cores_per_socket: Count
    threads_per_core: Annotated[int, Field(ge=1, le=8)] = 2


class PCIeSwitch(Strict):
    socket: NonNegativeCount
    gpus: list[NonNegativeCount]
    """GPU indexes (0-based) behind this switch."""
    nics: list[PortName]
    """Port names behind this switch, e.g. 'ib1'."""
    nic_bus_ids: list[str] | None = None
    """PCI address (domain:bus:device.function, lower-case hex) of each port in `nics`, where the vendor
    documents it; left out, the NCCL topology file gets a placeholder to check on the real system."""
    gpu_bus_ids: list[str] | None = None
    """PCI address of each GPU in `gpus`, likewise (from `nvidia-smi --query-gpu=pci.bus_id`)."""

    @field_validator("nic_bus_ids", "gpu_bus_ids")
    @classmethod
    def _check_bus_ids(cls, value: list[str] | None) -> list[str] | None:
        return _each_matching(value, _BUS_ID, "a PCI address such as '0000:18:00.0'")

    @model_validator(mode="after")
    def _check_bus_id_count(self) -> Self:
        for field, ids, items in (
            ("nic_bus_ids", self.nic_bus_ids, self.nics),
            ("gpu_bus_ids", self.gpu_bus_ids, self.gpus),
        ):
            if ids is not None and len(ids) != len(items):
                raise ValueError(f"{field} lists {len(ids)} addresses for {len(items)} devices")
        return self


class PCIeLayout(Strict):
    """Which GPUs and NICs share a CPU socket and PCIe switch, for the NCCL topology file."""

    switches: list[PCIeSwitch]
    link_gts: Literal[8, 16, 32, 64] = 32
    """PCIe transfer rate of the GPU and NIC links in GT/s per lane (16 = Gen4, 32 = Gen5)."""
    link_width: Literal[4, 8, 16] = 16
    """PCIe lanes per GPU and NIC link."""


class Device(Sourced):
    u_height: Annotated[int, Field(ge=1, le=60)]
    weight_kg: PositiveFloat
    max_power_w: float = Field(ge=0)
    """Maximum draw, the figure used for power planning."""
    typical_power_w: PositiveFloat | None = None
    psus: PSUs | None = None
    cooling: Cooling = Cooling(method="air")
    depth_mm: PositiveFloat | None = None
    ports: list[PortGroup] = Field(default_factory=list)
    airflow: dict[Airflow, Label] = Field(default_factory=dict)
    """Orderable part number by airflow direction (a switch comes as P2C and C2P parts); empty when unknown."""

    def port_groups(self, role: PortRole) -> list[PortGroup]:
        return [group for group in self.ports if group.role == role]


class StorageThroughput(Strict):
    """Sustained throughput of a storage server or appliance, as its vendor publishes it (large sequential I/O
    from many clients): what a shared file system built of such nodes adds per node."""

    read_gbs: PositiveFloat
    """Read throughput in GB/s."""
    write_gbs: PositiveFloat
    """Write throughput in GB/s."""


class Server(Device):
    kind: Literal["server"] = "server"
    storage_throughput: StorageThroughput | None = None
    """For a storage node: its published read and write throughput (checkpoint times use the write rate)."""
    cpu: CPU
    memory_gb: PositiveFloat
    """System memory in GB."""
    gpus: GPUComplement | None = None
    pcie: PCIeLayout | None = None
    rack_type: CatalogKey | None = None
    """Set for rack-scale systems whose nodes must sit in one rack type (GB200 NVL72 trays)."""
    interface_naming: dict[OsName, NamingPolicy] = Field(default_factory=dict)
    """Operating systems on which the vendor documents how this model's NIC ports are named ('path': systemd's
    PCI-path names, derived from the ports' PCI addresses); an OS left out names them in ways not derivable
    here (firmware slot numbers), so its names come from `interface_names` or `clusterforge bind`."""


class Switch(Device):
    kind: Literal["switch"] = "switch"
    technology: Technology


class Equipment(Device):
    """Rack equipment that is neither a node nor a fabric switch: NVLink switch trays, power shelves."""

    kind: Literal["equipment"] = "equipment"
    role: Literal["nvswitch", "power-shelf", "patch-panel", "other"]
    efficiency: Annotated[float, Field(gt=0.5, le=1.0)] | None = None
    """Power shelves: share of the input power delivered to the rack's busbar; the devices of the rack that
    have no PSUs of their own draw through the shelves, and the rest is lost as heat."""


class FixedDevice(Strict):
    """A device that comes built into a rack-scale system (NVLink switch trays, power shelves)."""

    model: CatalogKey
    """Catalog key of an equipment or switch entry."""
    name: RackName
    """Device name inside the rack, prefixed with the rack name when placed."""
    u: Annotated[int, Field(ge=1, le=60)]
    """Lowest U the device occupies."""


class ReservedU(Strict):
    u: Annotated[int, Field(ge=1, le=60)]
    """Lowest U of the reserved span."""
    height: Annotated[int, Field(ge=1, le=60)] = 1
    purpose: Label


class Feed(Strict):
    voltage_v: PositiveFloat
    """Line-to-line voltage for three-phase feeds, line-to-neutral for single-phase."""
    phases: Literal[1, 3]
    current_a: PositiveFloat
    """Breaker rating of the feed."""

    @property
    def capacity_kw(self) -> float:
        factor = 3**0.5 if self.phases == 3 else 1.0
        return factor * self.voltage_v * self.current_a / 1000.0


class PDU(Sourced):
    """A rack power distribution unit: the input it is made for (one per rack feed) and its outlets."""

    kind: Literal["pdu"] = "pdu"
    part_number: Label
    feed: Feed
    """Input the PDU takes: a rack type naming it must have this feed."""
    outlets: Count


class RackCooling(Strict):
    method: Literal["air", "rear-door", "liquid"]
    air_kw: PositiveFloat
    """Heat the rack can reject to air (room air, or the rear-door heat exchanger)."""
    liquid_kw: float = 0.0
    """Heat the rack's coolant loop can take from direct-liquid-cooled devices."""


class RackType(Sourced):
    kind: Literal["rack"] = "rack"
    u_height: Annotated[int, Field(ge=4, le=60)]
    width_mm: PositiveFloat = 600
    depth_mm: PositiveFloat = 1200
    max_load_kg: PositiveFloat
    """Static load the rack may carry."""
    weight_kg: PositiveFloat
    """Empty rack (with PDUs)."""
    feeds: Annotated[int, Field(ge=1, le=8)]
    feed_redundancy: Literal["2N", "N+1", "none"]
    feed: Feed
    cooling: RackCooling
    reserved: list[ReservedU] = Field(default_factory=list)
    fixed_devices: list[FixedDevice] = Field(default_factory=list)
    part_number: Label | None = None
    """Orderable part number of the enclosure (or of the rack-scale system it is part of)."""
    includes_nodes: bool = False
    """The part number is a whole rack-scale system that ships with its compute nodes (Supermicro's
    SRS-GB200-NVL72): nodes of a model made for this rack type (its `rack_type`) are built in, not ordered."""
    pdu: CatalogKey | None = None
    """Catalog key of the rack PDU, one per feed; left out, the BOM names a PDU by the feed only."""


Top = Literal["finned", "flat", "any"]
"""OSFP plug top: finned (integrated heat sink) for air-cooled switch cages, flat (riding heat sink) for
adapters and liquid-cooled switches; other form factors have one shape ('any')."""
FibreConnector = Literal["mpo-12/apc", "mpo-12/upc", "lc"]
LaneCount = Annotated[int, Field(ge=1, le=8)]


class CableEnd(Strict):
    """One plug of a cable: what it plugs into and how many electrical lanes it carries."""

    connector: Cage | FibreConnector
    lanes: LaneCount
    """Electrical lanes of the plug (8 for a twin-port OSFP, 4 for QSFP, 1 for SFP); fibres: lanes per leg."""
    top: Top = "any"


class CableMedia(Sourced):
    """A cable product: copper (DAC, ACC), active optical (AOC), twisted pair, or the fibre between two
    transceivers, with the lane rates it carries, its plugs, its reach and the lengths it is sold in."""

    kind: Literal["media"] = "media"
    label: Label
    """Media class used in cabling plans: DAC, ACC, AOC, MMF, SMF, Cat6a."""
    preference: int = Field(ge=0, le=100)
    """Lower is preferred (cheaper, lower power) when several products reach."""
    lane_gbps: list[Annotated[int, Field(ge=1, le=400)]] = Field(min_length=1)
    """Electrical lane rates the product carries (100 = 100G-PAM4)."""
    a: CableEnd
    b: CableEnd
    legs: Annotated[int, Field(ge=1, le=8)] = 1
    """Plugs at the b end: 1 for a straight cable, 2 or 4 for a splitter (breakout) cable."""
    reach_m: PositiveFloat
    """Longest supported run in metres."""
    length_classes_m: list[PositiveFloat] = Field(min_length=1)
    """Lengths the product is ordered in, ascending."""
    part_numbers: dict[Label, Label] = Field(default_factory=dict)
    """Vendor part number by length in metres, written as text ("0.5": MCP4Y10-N00A)."""
    transceiver: bool = False
    """True for a fibre: each end needs a transceiver (see `optics`)."""
    fibre: Literal["mmf", "smf"] | None = None

    @model_validator(mode="after")
    def _check_lengths(self) -> Self:
        if self.length_classes_m != sorted(self.length_classes_m):
            raise ValueError("length_classes_m must be ascending")
        lengths = {f"{length:g}" for length in self.length_classes_m}
        unknown = sorted(set(self.part_numbers) - lengths)
        if unknown:
            raise ValueError(f"part_numbers lists lengths {unknown} that are not in length_classes_m")
        return self

    def part_number(self, length_m: float) -> str:
        return self.part_numbers.get(f"{length_m:g}", "")


class Transceiver(Sourced):
    """A pluggable optical module: its cage, top, lanes and lane rate, and the fibre it takes."""

    kind: Literal["optic"] = "optic"
    part_number: Label
    cage: Cage
    top: Top = "any"
    lanes: LaneCount
    """Electrical (= optical) lanes of the module."""
    lane_gbps: Annotated[int, Field(ge=1, le=400)]
    optical_ports: Annotated[int, Field(ge=1, le=2)] = 1
    """Fibre connectors on the module: 2 for a twin-port OSFP (two MPO-12)."""
    connector: FibreConnector
    fibre: Literal["mmf", "smf"]
    reach_m: PositiveFloat
    max_power_w: PositiveFloat | None = None

    @property
    def lanes_per_port(self) -> int:
        return self.lanes // self.optical_ports


class ModelShapeEntry(Sourced, ModelShapeFields):
    """A published model's shape (from its config.json or paper), for workloads that name it."""

    kind: Literal["model"] = "model"


class StorageSystem(Sourced):
    """A storage appliance or building block of a shared file system, with the throughput its vendor measured;
    a training job names it (and how many) as its checkpoint storage."""

    kind: Literal["storage"] = "storage"
    read_gbs: PositiveFloat
    """Sustained read throughput of one unit in GB/s."""
    write_gbs: PositiveFloat
    """Sustained write throughput of one unit in GB/s."""


ENTRY_TYPES: dict[str, type[Sourced]] = {
    "gpus": GPU,
    "nics": NIC,
    "servers": Server,
    "switches": Switch,
    "equipment": Equipment,
    "racks": RackType,
    "pdus": PDU,
    "cables": CableMedia,
    "optics": Transceiver,
    "models": ModelShapeEntry,
    "storage": StorageSystem,
}
