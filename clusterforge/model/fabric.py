"""Networks: the compute fabric, storage fabric, in-band management and out-of-band (BMC) networks."""

import re
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from .base import CatalogKey, Count, Identifier, NonNegativeCount, RackName, Strict, Text

Technology = Literal["infiniband", "ethernet"]
_RATIO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*:\s*(\d+(?:\.\d+)?)\s*$")


def _parse_ratio(value: object) -> object:
    """'1:1' -> 1.0, '3:1' -> 3.0 (downlink capacity : uplink capacity); numbers pass through."""
    if isinstance(value, str):
        match = _RATIO.fullmatch(value)
        if not match:
            raise ValueError("must be a ratio such as '1:1' or '2:1', or a number >= 1")
        down, up = float(match.group(1)), float(match.group(2))
        if up == 0:
            raise ValueError("the uplink side of a ratio cannot be 0")
        return down / up
    return value


def _network_text(value: object) -> object:
    """A pool is written as text ('10.0.0.0/16'); the ipaddress module would also take a number or a bool."""
    if not isinstance(value, str):
        raise ValueError("must be an IPv4 network written as text, e.g. '10.0.0.0/16'")
    return value


RATIO_TEXT = r"^\s*\d+(\.\d+)?\s*:\s*\d+(\.\d+)?\s*$"
Ratio = Annotated[
    float,
    BeforeValidator(
        _parse_ratio,
        json_schema_input_type=Annotated[float, Field(ge=1.0, le=16.0)] | Annotated[str, Field(pattern=RATIO_TEXT)],
    ),
    Field(ge=1.0, le=16.0),
]


SwitchName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]*-(leaf|spine|core)\d{3,}$")]


class ReservedPorts(Strict):
    """Switch ports kept free, per tier or on named switches, e.g. for UFM subnet managers or monitoring."""

    leaf: NonNegativeCount = 0
    """Ports kept free on every leaf."""
    spine: NonNegativeCount = 0
    """Ports kept free on every spine."""
    core: NonNegativeCount = 0
    """Ports kept free on every core switch."""
    switches: dict[SwitchName, NonNegativeCount] = Field(default_factory=dict)
    """Ports kept free on named switches (e.g. compute-spine001: 2), added to their tier's count."""


class LosslessQoS(Strict):
    """The lossless class RoCE traffic runs in, configured alike on the switches and the NICs: the switches
    trust DSCP and run PFC on `pfc_priority` (with ECN marking), the NICs trust DSCP and enable PFC on the
    same priority. NCCL marks its traffic with it through NCCL_IB_TC."""

    dscp: int = Field(default=26, ge=0, le=63)
    """DSCP of RoCE data traffic (26 in NVIDIA's RoCE configuration guides)."""
    pfc_priority: int = Field(default=3, ge=0, le=7)
    """Priority (0-7) that DSCP maps to and that PFC makes lossless."""


class RoCE(Strict):
    gid_index: int | None = Field(default=None, ge=0, le=255)
    """GID index NCCL uses; leave it unset: NCCL finds the RoCE v2 IPv4 GID itself. Set it only where a
    site has measured that detection picks the wrong one."""
    qos: LosslessQoS | None = None
    """The lossless class the fabric is configured for; without it NCCL_IB_TC is not set (marking traffic
    for a class the switches do not treat as lossless only moves it to another queue)."""
    traffic_class: int | None = Field(default=None, ge=0, le=255)
    """IB traffic class NCCL sets (NCCL_IB_TC, DSCP << 2 plus the ECN bits); default: `qos.dscp` << 2 | 2
    (ECN capable). Needs `qos`, and its DSCP (traffic_class >> 2) must be `qos.dscp`."""

    @model_validator(mode="after")
    def _traffic_class_matches_qos(self) -> Self:
        if self.traffic_class is None:
            return self
        if self.qos is None:
            raise ValueError(
                "roce.traffic_class needs roce.qos (the lossless class the switches and NICs are "
                "configured for); add qos: {dscp: 26, pfc_priority: 3} or drop traffic_class"
            )
        if self.traffic_class >> 2 != self.qos.dscp:
            raise ValueError(
                f"roce.traffic_class {self.traffic_class} carries DSCP {self.traffic_class >> 2}, "
                f"but roce.qos.dscp is {self.qos.dscp}; use {self.qos.dscp << 2 | 2}"
            )
        return self

    @property
    def nccl_traffic_class(self) -> int | None:
        """NCCL_IB_TC: the blueprint's traffic class, else the QoS class's DSCP, ECN capable; None without QoS."""
        if self.qos is None:
            return None
        return self.traffic_class if self.traffic_class is not None else self.qos.dscp << 2 | 2


def _pkey(value: int) -> int:
    if not 0x0001 <= value <= 0x7FFE:
        raise ValueError(
            f"a P_Key is 0x0001-0x7ffe, got {value:#06x}: 0x7fff is the default partition, and the high bit "
            "(0x8000, full membership) is OpenSM's to set"
        )
    return value


class IbPartition(Strict):
    """An InfiniBand partition: the subnet manager gives its P_Key to the ports of the listed node groups
    (full members), so only they talk to each other in it (OpenSM partitions.conf)."""

    name: Identifier
    """Partition name in partitions.conf."""
    pkey: Annotated[int, AfterValidator(_pkey), Field(json_schema_extra={"minimum": 1, "maximum": 0x7FFE})]
    """P_Key without the membership bit, 0x0001-0x7ffe (0x7fff is the default partition), e.g. 0x0a01."""
    node_groups: list[Identifier] = Field(min_length=1)
    """Node groups whose ports on this fabric are full members."""
    ipoib: bool = True
    """Create the IPoIB broadcast group of the partition (IP over InfiniBand in it)."""


class FabricBase(Strict):
    description: Text = ""
    """What the network is for."""
    node_groups: list[Identifier] | None = None
    """Node groups attached to this network; default: every group with ports of the network's role."""
    ipv4_pool: Annotated[IPv4Network, BeforeValidator(_network_text), Field(strict=False)]
    """Address pool for the network's interfaces."""
    switch_racks: list[RackName] | None = None
    """Racks that hold this network's switches, filled in order; default: the racks of the nodes."""


DualHoming = Literal["none", "mlag", "evpn-mh"]
RailAddressing = Literal["per-rail", "per-port"]


class LeafSpineFabric(FabricBase):
    kind: Literal["compute", "storage", "inband"]
    """What the network carries."""
    technology: Technology
    """InfiniBand, or Ethernet (RoCE v2 where RDMA is used)."""
    leaf: CatalogKey
    """Catalog key of the leaf switch."""
    spine: CatalogKey | None = None
    """Catalog key of the spine switch; required for two or more tiers."""
    core: CatalogKey | None = None
    """Catalog key of the core (super-spine) switch; required for three tiers."""
    tiers: Literal[1, 2, 3, "auto"] = "auto"
    """Switch tiers; 'auto' picks the fewest that hold the cluster."""
    oversubscription: Ratio = 1.0
    """Downlink to uplink capacity at each tier, '1:1' for non-blocking."""
    reserved_ports: ReservedPorts = ReservedPorts()
    """Ports kept free per tier or on named switches (subnet managers, monitoring, growth)."""
    uplinks_for: Literal["planned", "present"] = "planned"
    """Size each leaf's uplinks for its planned downlinks (a full scalable unit or a full leaf, so the
    fabric grows without recabling, as the DGX SuperPOD reference does) or for the nodes present."""
    planes: Literal["one", "per-rail"] = "one"
    """'one': a single connected fabric (one InfiniBand subnet); 'per-rail': each rail its own plane when
    two tiers cannot hold every leaf under one spine group."""
    subnet_manager: Literal["hosts", "switches"] = "hosts"
    """InfiniBand: where the subnet manager runs. 'hosts': OpenSM or UFM on the fabric's hosts of role
    subnet-manager (an `opensm-<host>.conf` each). 'switches': the subnet manager built into the fabric's
    managed switches (MLNX-OS `ib smnode`), master on the first switch of the top tier, standby on the
    second: the MLNX-OS user manual gives it fabrics of up to 2,048 nodes, without adaptive routing, SHARP
    or congestion control (small fabrics; UFM beyond)."""
    partitions: list[IbPartition] = Field(default_factory=list)
    """InfiniBand partitions (P_Keys) beyond the default one (0x7fff, every port); InfiniBand only."""
    loopback_pool: Annotated[IPv4Network, BeforeValidator(_network_text), Field(strict=False)] | None = None
    """Ethernet: loopback addresses of the network's switches (BGP router ID, VXLAN tunnel source), one per
    switch in order; without it the switch configuration takes each switch's out-of-band address as its
    router ID. EVPN multihoming needs it."""
    mtu: Annotated[int, Field(ge=1280, le=9216)] | None = None
    """Host MTU on Ethernet: default 9000 on compute (RoCE) and storage networks, 1500 on in-band; the
    switch ports run at 9216, so they carry any host MTU."""
    dual_homing: DualHoming = "none"
    """Ethernet storage and in-band networks: 'mlag' or 'evpn-mh' puts leaves in pairs and each node's bond
    members on both leaves of a pair (LACP bond; MLAG joins the pair with a peer link, EVPN multihoming
    with an Ethernet segment over the BGP EVPN underlay, so it needs a spine tier); 'none': a node's ports
    fill one leaf."""

    @model_validator(mode="after")
    def _tier_models(self) -> Self:
        if self.tiers in (2, 3) and self.spine is None:
            raise ValueError(f"a {self.tiers}-tier fabric needs a spine model")
        if self.tiers == 3 and self.core is None:
            raise ValueError("a 3-tier fabric needs a core model")
        if self.subnet_manager == "switches" and self.technology != "infiniband":
            raise ValueError("subnet_manager: switches needs an InfiniBand fabric (its switches run the SM)")
        if self.partitions and self.technology != "infiniband":
            raise ValueError("partitions (P_Keys) apply only to InfiniBand fabrics")
        names = [p.name for p in self.partitions]
        keys = [p.pkey for p in self.partitions]
        if len(set(names)) < len(names) or len(set(keys)) < len(keys):
            raise ValueError("partition names and P_Keys must each be unique in a fabric")
        if self.dual_homing != "none":
            if self.kind == "compute" or self.technology != "ethernet":
                raise ValueError(
                    "dual_homing applies to Ethernet storage and in-band networks (compute rails are single-homed)"
                )
            if self.dual_homing == "evpn-mh" and (self.tiers == 1 or self.spine is None):
                raise ValueError(
                    "dual_homing: evpn-mh needs a spine model and two or more tiers (the leaves' EVPN "
                    "sessions run over the spines); use mlag for a single leaf pair"
                )
            if self.dual_homing == "evpn-mh" and self.loopback_pool is None:
                raise ValueError(
                    "dual_homing: evpn-mh needs a loopback_pool (the leaves' VXLAN tunnel addresses), "
                    "e.g. 10.255.0.0/24"
                )
        return self

    @property
    def host_mtu(self) -> int | None:
        """The host MTU of an Ethernet network (None on InfiniBand: IPoIB keeps its own)."""
        if self.technology != "ethernet":
            return None
        return self.mtu if self.mtu is not None else (1500 if self.kind == "inband" else 9000)

    @property
    def paired(self) -> bool:
        """Leaves come in pairs and every node is dual-homed to one."""
        return self.dual_homing != "none"


class ComputeFabric(LeafSpineFabric):
    kind: Literal["compute"]
    """The GPU-to-GPU fabric between nodes."""
    topology: Literal["rail-optimized", "fat-tree"] = "rail-optimized"
    """Rail-optimized: NIC k of every node in a scalable unit goes to leaf k of that unit."""
    scalable_unit: Annotated[int, Field(ge=1, le=4096)] | None = None
    """Nodes per scalable unit; default: as many as one leaf's downlinks allow, or eight NVLink domains
    (racks) of a rack-scale system such as GB200 NVL72, the scalable unit of the DGX SuperPOD GB200 RA."""
    rail_leaves: Literal["per-scalable-unit", "per-rack"] | None = None
    """Rail-optimized: 'per-scalable-unit' gives each rail of a scalable unit its leaf (split when the unit
    holds more nodes than a leaf takes); 'per-rack' gives each rack of a unit a leaf per rail, as the DGX
    SuperPOD GB200 RA cables its NVL72 racks. Default: 'per-rack' for rack-scale NVLink systems (an NVLink
    domain of several nodes), 'per-scalable-unit' otherwise."""
    spine_groups: Literal["pods", "rail-groups"] | None = None
    """Three tiers: which leaves share a set of spines. 'pods': runs of leaves of up to half a spine's ports,
    every rail together (DGX SuperPOD H100 and B200 RAs); 'rail-groups': the leaves of one rail in one
    scalable unit, the 'rail group' of the DGX SuperPOD GB200 RA (section 4.2: per scalable unit 4 rail
    groups of 8 leaves and 6 spines). Spine j of every group joins core group j either way. Default:
    'rail-groups' for rack-scale NVLink systems, 'pods' otherwise."""
    roce: RoCE | None = None
    """RoCE settings for Ethernet fabrics."""
    rail_addressing: RailAddressing = "per-rail"
    """Ethernet rails: 'per-rail' gives each rail a block of the pool, split into one routed segment per
    leaf (the leaf holds the first address as gateway); 'per-port' gives each host port a /31 with its leaf
    port (the leaf the even address, the host the odd) and a routing-policy table per port, so traffic
    from a port's address leaves by that port. InfiniBand rails are one IPoIB subnet each."""

    @model_validator(mode="after")
    def _roce_only_on_ethernet(self) -> Self:
        if self.roce is not None and self.technology != "ethernet":
            raise ValueError("roce settings apply only to Ethernet fabrics")
        if self.rail_addressing == "per-port" and self.technology != "ethernet":
            raise ValueError("rail_addressing: per-port needs an Ethernet fabric (IPoIB rails are one subnet each)")
        return self


class StorageFabric(LeafSpineFabric):
    kind: Literal["storage"]
    """The network to shared storage."""


class InbandFabric(LeafSpineFabric):
    kind: Literal["inband"]
    """In-band host management (provisioning, SSH, monitoring)."""
    technology: Technology = "ethernet"
    """Nearly always Ethernet."""


class OobFabric(FabricBase):
    kind: Literal["oob"]
    """Out-of-band management: BMCs and switch management ports."""
    switch: CatalogKey
    """Catalog key of the 1G management switch."""
    per: Literal["rack", "row"] = "rack"
    """One switch (or more when ports run out) per rack or per row."""
    uplink_to: Identifier | None = None
    """Fabric whose leaves take the OOB switches' uplinks, usually the in-band network."""
    gateway: Literal["uplink"] | Annotated[IPv4Address, Field(strict=False)] | None = None
    """Who holds the network's gateway (its pool's first address, which every BMC and switch management port
    points at): 'uplink' (the default with uplink_to) an SVI on the leaves that take the OOB uplinks, VRR on a
    leaf pair; or that address itself, held outside the cluster (the site's management router). Left out
    without uplink_to, nothing holds it: CF-ADDR-005."""

    @model_validator(mode="after")
    def _gateway_is_the_first_address(self) -> Self:
        if isinstance(self.gateway, IPv4Address) and self.gateway != self.ipv4_pool.network_address + 1:
            raise ValueError(
                f"gateway {self.gateway}: the gateway of {self.ipv4_pool} is its first address "
                f"{self.ipv4_pool.network_address + 1} (addresses are handed out after it)"
            )
        if self.gateway == "uplink" and self.uplink_to is None:
            raise ValueError("gateway: uplink needs uplink_to (the fabric whose leaves hold it)")
        return self


Fabric = Annotated[ComputeFabric | StorageFabric | InbandFabric | OobFabric, Field(discriminator="kind")]
FabricName = Identifier
__all__ = [
    "ComputeFabric",
    "Count",
    "Fabric",
    "FabricName",
    "IbPartition",
    "InbandFabric",
    "OobFabric",
    "StorageFabric",
]
