"""What a workload runs on: its node groups' GPU, NVLink domain, fabric bandwidth and power, from the catalog."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..catalog import GPU, Catalog, Server
from ..expand.topology import FabricSummary, Topology
from ..model import Blueprint, ComputeFabric
from ..model.workload import Precision, WorkloadBase
from ..physical import planned_w

PCIE_GEN4_X16_GBS = 16 * 16 * 128 / 130 / 8
"""PCIe 4.0 x16 per direction: 16 GT/s x 16 lanes x 128b/130b encoding / 8 = 31.5 GB/s (PCI-SIG PCIe 4.0
specification; the L40S data sheet gives 64 GB/s both directions)."""


NCCL_NVLINK_SHARE = 370 / 450
"""Share of NVLink's line rate that NCCL's collectives move data at: "450GB/s is the line rate. With the protocol
overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s" (H100, NVLink 4; NCCL maintainer, NVIDIA/
nccl-tests issue #212, https://github.com/NVIDIA/nccl-tests/issues/212). Taken as the same share on other NVLink
generations."""


@dataclass(frozen=True)
class Hardware:
    groups: list[str]
    gpu_key: str
    gpu: GPU
    gpus: int
    """GPUs in the workload's node groups."""
    gpus_per_node: int
    nvlink_domain: int
    """GPUs in one NVLink domain (8 on an HGX board, 72 in a GB200 NVL72 rack); 1 without NVLink."""
    nic_gbps_per_gpu: float
    """Compute-fabric bandwidth per GPU (one direction)."""
    oversubscription: float
    """The compute fabric's target ratio; collectives across its upper tiers see bandwidth / ratio."""
    leaf_nodes: int
    """Nodes whose same-rail GPUs share one leaf (the rail-optimized fabric's scalable unit); 1 when unknown or
    fat-tree, so that any traffic between nodes is taken to cross the upper tiers."""
    storage_gbps_per_node: float
    """Line rate of one node's storage ports in Gb/s."""
    gpu_w: float
    """Power of the node divided by its GPUs (the GPU's share of CPUs, NICs, fans): the catalog's typical draw
    where it has one, else the planned draw (maximum x the site's load factor), an upper bound."""
    power_basis: str = "planned"
    """Which of the two gpu_w is: typical or planned."""
    storage_write_gbs: float | None = None
    """Write throughput of the blueprint's storage nodes together in GB/s (their catalog entries'
    `storage_throughput`); None when no storage node group has it."""
    nvlink_sharp: bool = False
    """The NVLink domain is switched by NVSwitch chips of the third generation or later (NVLink 4 and 5: HGX and
    DGX H100/H200/B200 boards, GH200 NVL32, GB200 NVL72), which reduce in the switch (NVLink SHARP, "NVLS"): an
    all-reduce among its GPUs sends each GPU's buffer into the switch once and receives the result once, at the
    rate NCCL measured (speed.NVLS_BUFFER_SHARE), instead of a ring's 2(n-1)/n."""

    @property
    def nvlink_gbs(self) -> float:
        """NVLink bandwidth per GPU and direction in GB/s (the catalog gives both directions together)."""
        return (self.gpu.gpu_link_gbs or 0.0) / 2

    @property
    def scale_up_link(self) -> str:
        """The scale-up link's name as the catalog gives it, without its generation (NVLink, Infinity Fabric); empty
        for GPUs without one."""
        return self.gpu.link_family

    def tier_name(self, tier: str) -> str:
        """A tier as the reports print it: the scale-up domain by its link's name, the other tiers as they are."""
        return (self.scale_up_link or tier) if tier == "nvlink" else tier

    @property
    def nvlink_collective_gbs(self) -> float:
        """What NCCL's collectives move per GPU and direction over NVLink: the line rate less the protocol overhead
        (NCCL_NVLINK_SHARE; 370 GB/s on H100)."""
        return self.nvlink_gbs * NCCL_NVLINK_SHARE

    def tensor_parallel_link(self, group: int) -> tuple[str, float]:
        """The tier a tensor-parallel group of `group` GPUs crosses and its bandwidth per GPU and direction in GB/s:
        NVLink inside an NVLink domain (at NCCL's effective rate); PCIe inside a node without NVLink (Gen4 x16,
        31.5 GB/s); the compute fabric beyond, under one leaf while its nodes fit a scalable unit, else at
        bandwidth / oversubscription."""
        if group <= self.nvlink_domain and self.nvlink_gbs > 0:
            return "nvlink", self.nvlink_collective_gbs
        if group <= self.gpus_per_node:
            return "pcie", PCIE_GEN4_X16_GBS
        fabric = self.nic_gbps_per_gpu / 8
        if -(-group // self.gpus_per_node) <= self.leaf_nodes:
            return "leaf", fabric
        return "spine", fabric / self.oversubscription

    def peak_tflops(self, precision: Precision) -> float:
        """Dense tensor throughput at a precision: 4-bit formats at the FP4 rate where the GPU has one (Blackwell),
        else at the FP8 rate; 8-bit at the FP8 rate where there is one; fp32 at TF32, half the BF16 rate."""
        if precision in ("fp4", "int4") and self.gpu.fp4_tflops:
            return self.gpu.fp4_tflops
        if precision in ("fp8", "int8", "fp4", "int4") and self.gpu.fp8_tflops:
            return self.gpu.fp8_tflops
        if precision == "fp32":
            return self.gpu.bf16_tflops / 2  # TF32 tensor cores run at half the BF16 rate
        return self.gpu.bf16_tflops


def compute_groups(bp: Blueprint, catalog: Catalog, workload: WorkloadBase) -> list[str]:
    if workload.node_groups:
        return list(workload.node_groups)
    return [g.name for g in bp.node_groups if g.role == "compute" and catalog.require(g.model, Server).gpus]


def hardware_for(
    bp: Blueprint, catalog: Catalog, workload: WorkloadBase, topo: Topology | None = None
) -> Hardware | None:
    """None when the workload's groups hold no GPUs."""
    groups = [g for g in bp.node_groups if g.name in compute_groups(bp, catalog, workload)]
    servers = [(g, catalog.require(g.model, Server)) for g in groups]
    with_gpus = [(g, s) for g, s in servers if s.gpus is not None]
    if not with_gpus:
        return None
    group, server = with_gpus[0]
    assert server.gpus is not None
    per_node = server.gpus.count
    nic = sum(p.count * p.speed_gbps for p in server.port_groups("compute"))
    storage = sum(p.count * p.speed_gbps for p in server.port_groups("storage"))
    return Hardware(
        groups=[g.name for g, _ in with_gpus],
        gpu_key=server.gpus.model,
        gpu=catalog.require(server.gpus.model, GPU),
        gpus=sum(g.count * s.gpus.count for g, s in with_gpus if s.gpus is not None),
        gpus_per_node=per_node,
        nvlink_domain=server.gpus.nvlink_domain,
        nic_gbps_per_gpu=nic / per_node,
        oversubscription=_oversubscription(bp, group.name, topo),
        leaf_nodes=_leaf_nodes(bp, group.name, topo),
        storage_gbps_per_node=storage,
        storage_write_gbs=_storage_write_gbs(bp, catalog),
        gpu_w=(server.typical_power_w or planned_w(bp.power, server, "compute")) / per_node,
        power_basis="typical" if server.typical_power_w else "planned",
        nvlink_sharp=switch_reduces(
            catalog.require(server.gpus.model, GPU), server.gpus.nvswitch, per_node, server.gpus.nvlink_domain
        ),
    )


NVLINK_SHARP_FROM = 4
"""NVLink generation from which NVSwitch reduces in the switch: the third-generation NVSwitch, with fourth-generation
NVLink (Hopper), "incorporates hardware acceleration for collective operations with multicast and NVIDIA SHARP
in-network reductions" (NVIDIA Technical Blog, "Upgrading Multi-GPU Interconnectivity with the Third-Generation
NVIDIA NVSwitch", 2022); the A100's second-generation NVSwitch does not."""


def switch_reduces(gpu: GPU, nvswitch: bool | None, per_node: int, domain: int) -> bool:
    """A switched NVLink domain (an NVSwitch board, or a domain beyond the node, which only NVLink switches join) of
    NVLink 4 or later."""
    found = re.fullmatch(r"NVLink (\d+)", gpu.gpu_link or "")
    return found is not None and int(found[1]) >= NVLINK_SHARP_FROM and (bool(nvswitch) or domain > per_node)


def _storage_write_gbs(bp: Blueprint, catalog: Catalog) -> float | None:
    rates = [
        g.count * server.storage_throughput.write_gbs
        for g in bp.node_groups
        if g.role == "storage" and (server := catalog.require(g.model, Server)).storage_throughput is not None
    ]
    return sum(rates) if rates else None


def _compute_fabric(bp: Blueprint, group: str) -> tuple[str, ComputeFabric] | None:
    for name, fabric in bp.fabrics.items():
        if isinstance(fabric, ComputeFabric) and (fabric.node_groups is None or group in fabric.node_groups):
            return name, fabric
    return None


def _expanded_fabric(bp: Blueprint, group: str, topo: Topology | None) -> FabricSummary | None:
    """The group's compute fabric as expanded (what the plan shows); None without one, or before expansion."""
    found = _compute_fabric(bp, group)
    return None if found is None or topo is None else topo.fabrics.get(found[0])


def _oversubscription(bp: Blueprint, group: str, topo: Topology | None) -> float:
    expanded = _expanded_fabric(bp, group, topo)
    if expanded is not None:
        return expanded.oversubscription_target
    found = _compute_fabric(bp, group)  # before expansion: as the blueprint asks
    return 1.0 if found is None else float(found[1].oversubscription)


def _leaf_nodes(bp: Blueprint, group: str, topo: Topology | None) -> int:
    summary = _expanded_fabric(bp, group, topo)
    if summary is None:
        return 1
    if summary.topology == "rail-optimized" and summary.rail_leaves == "per-rack":  # a leaf: a rack of the group
        assert topo is not None
        links = topo.fabric_links(summary.name, "node-leaf")
        per_leaf = Counter(link.b for link in links if link.rail == 1 and topo.devices[link.a].group == group)
        return max(per_leaf.values(), default=1)
    return summary.scalable_unit or 1 if summary.topology == "rail-optimized" else 1
