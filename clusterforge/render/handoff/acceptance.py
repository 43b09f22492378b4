"""handoff/acceptance.md: what nccl-tests should show on the built cluster, per tier of the compute fabric.

nccl-tests report a bus bandwidth (busbw) per rank that "should reflect the speed of the hardware bottleneck"
(nccl-tests doc/PERFORMANCE.md): all-reduce busbw = algbw x 2(n-1)/n, all-to-all busbw = algbw x (n-1)/n.
From the catalog's link speeds, per GPU and direction (B_nv the NVLink bandwidth, B_nic the compute-fabric
bandwidth, g the GPUs of one NVLink domain, n the ranks, r the oversubscription above the leaves):

- inside an NVLink domain: both collectives are bound by NVLink, busbw = B_nv;
- across NVLink domains, all-reduce: each ring (one per NIC) leaves a domain once per pass, so a domain's g
  NICs carry 2(n-1)/n x S / g each and busbw = min(B_nv, g x B_nic / r);
- across NVLink domains, all-to-all: a rank sends (n-g)/n of its buffer over its own NIC (PXN keeps it on its
  rail), so busbw = B_nic / r x (n-1)/(n-g).

Across a rail (r = 1): the nodes of one scalable unit, whose same-rail NICs share a leaf. Across the spine or
core: every GPU of the group, at the fabric's oversubscription. Measured figures are lower than these bounds
(protocol overhead); the acceptance floor is a share of them that the site chooses.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...catalog import GPU
from ..context import RenderContext, host_range
from ..escape import md_cell
from ..nccl.nccl import NcclGroup, nccl_groups
from .handoff_common import shared_cable_table

ACCEPTANCE_MD = "handoff/acceptance.md"
FLOOR = 0.8
"""Acceptance floor as a share of the bound, just under what healthy links measure: NCCL moves 370 of NVLink 4's
450 GB/s line rate (82%, "protocol overhead (~20%)", NCCL maintainer, NVIDIA/nccl-tests issue #212), copy-engine
copies 380 (84%, NVIDIA/nccl issue #1264), one 400 Gb/s fabric port 392 Gb/s with perftest (98%, NVIDIA/nccl
issue #2409); docs/workloads.md, "Link rates, the acceptance floor and rails". A site may set its own."""


@dataclass(frozen=True)
class TierFigure:
    tier: str
    nodes: list[str]
    ranks: int
    all_reduce_gbs: float
    all_to_all_gbs: float
    bound: str
    """What binds the figures, in words."""


@dataclass(frozen=True)
class TierScope:
    name: str
    nodes: int


def _local_gpus(members: list[str], gpus_per_node: int, domain: int, domain_of: Mapping[str, int]) -> int:
    """The GPUs a GPU of `members` reaches without the fabric, the fewest over the members: the members' GPUs
    in its NVLink domain (a domain the node set cuts counts only what the set holds of it), else its node's."""
    if domain <= gpus_per_node or not domain_of:
        return max(domain, gpus_per_node)
    if any(m not in domain_of for m in members):
        return gpus_per_node
    return min(Counter(domain_of[m] for m in members).values()) * gpus_per_node


def tier_figures(
    nodes: list[str],
    gpus_per_node: int,
    domain: int,
    nvlink_gbs: float,
    nic_gbs: float,
    leaf: TierScope,
    ratio: float,
    domain_of: Mapping[str, int] | None = None,
) -> list[TierFigure]:
    """The tiers for a group of `nodes` (in placement order). `domain`: GPUs per NVLink domain (1 without
    NVLink); `nvlink_gbs`, `nic_gbs`: per GPU and direction; `leaf`: the name and node count of the first
    set of nodes under one set of leaves (a scalable unit's rail leaves, or one fat-tree leaf); `domain_of`:
    each node's NVLink domain, so a node set that holds part of a domain is bound by the GPUs it holds of it
    (all-to-all: the GPU with the fewest NVLink peers in the set sends the most over its NIC)."""
    found = []
    domain_nodes = max(1, domain // gpus_per_node)
    if nvlink_gbs > 0 and domain > 1:
        found.append(
            TierFigure("NVLink domain", nodes[:domain_nodes], domain, nvlink_gbs, nvlink_gbs, "NVLink per GPU")
        )
    for tier, members, r in ((leaf.name, nodes[: leaf.nodes], 1.0), ("spine", nodes, ratio)):
        n = len(members) * gpus_per_node
        # GPUs that reach each other without the fabric (NVLink, or PCIe), for the GPU that has the fewest
        local = _local_gpus(members, gpus_per_node, domain, domain_of or {})
        if n <= local or (tier == "spine" and len(nodes) <= leaf.nodes):
            continue
        down = domain * nic_gbs / r
        all_reduce = min(nvlink_gbs, down) if nvlink_gbs > 0 else down
        bound = "NVLink per GPU" if nvlink_gbs > 0 and nvlink_gbs <= down else "the NICs of an NVLink domain"
        if nvlink_gbs <= 0:
            bound = "each GPU's NIC share (PCIe inside the node may bind first)"
        if r > 1:
            bound += f", {r:g}:1 above the leaves"
        found.append(TierFigure(tier, members, n, all_reduce, nic_gbs / r * (n - 1) / (n - local), bound))
    return found


def leaves_of_nodes(ctx: RenderContext, fabric: str) -> dict[str, set[str]]:
    """node -> the leaf switches its ports on `fabric` go to (`Topology.leaf_of` for every node at once: one
    pass over the links' columns instead of one look-up per node)."""
    links = shared_cable_table(ctx).links
    leaves: dict[str, set[str]] = defaultdict(set)
    for a, b, link_fabric, tier in zip(links["a"], links["b"], links["fabric"], links["tier"], strict=True):
        if tier == "node-leaf" and link_fabric == fabric:
            leaves[a].add(b)
    return leaves


@dataclass(frozen=True)
class GroupBounds:
    """What a group's figures are worked out from (`tier_figures`' arguments but the nodes and the scope)."""

    gpus_per_node: int
    domain: int
    nvlink_gbs: float
    nic_gbs: float
    ratio: float
    leaf_name: str
    domain_of: Mapping[str, int] = field(default_factory=dict)
    """Each node's NVLink domain (multi-node domains only)."""

    def figures(self, nodes: list[str], leaf_nodes: int) -> list[TierFigure]:
        """The tiers of `nodes` whose first `leaf_nodes` share one set of leaves."""
        scope = TierScope(self.leaf_name, leaf_nodes)
        return tier_figures(
            nodes, self.gpus_per_node, self.domain, self.nvlink_gbs, self.nic_gbs, scope, self.ratio, self.domain_of
        )


def group_bounds(ctx: RenderContext, entry: NcclGroup) -> GroupBounds:
    server = entry.server
    assert server.gpus is not None
    gpu = ctx.valid.catalog.require(server.gpus.model, GPU)
    per_node = server.gpus.count
    nic_gbs = sum(p.count * p.speed_gbps for p in server.port_groups("compute")) / per_node / 8
    fabric = ctx.topo.fabrics[entry.fabric_name]  # as expanded (what the plan shows), not as the blueprint asks
    domain = server.gpus.nvlink_domain if gpu.gpu_link_gbs else 1
    nvlink = (gpu.gpu_link_gbs or 0.0) / 2  # the catalog gives both directions together
    leaf = "rail (one scalable unit)" if fabric.topology == "rail-optimized" else "one leaf"
    domain_of: dict[str, int] = {}
    if domain > per_node:
        for device in ctx.topo.nodes():
            if device.group == entry.group.name and device.nvlink_domain is not None:
                domain_of[device.name] = device.nvlink_domain
    return GroupBounds(per_node, domain, nvlink, nic_gbs, fabric.oversubscription_target, leaf, domain_of)


def group_figures(ctx: RenderContext, entry: NcclGroup) -> list[TierFigure]:
    nodes = [d.name for d in ctx.topo.nodes() if d.group == entry.group.name]
    leaves = leaves_of_nodes(ctx, entry.fabric_name)
    first = leaves.get(nodes[0], set()) if nodes else set()
    under = sum(1 for node in nodes if leaves.get(node, set()) == first)
    return group_bounds(ctx, entry).figures(nodes, under)


def _gbs(value: float) -> str:
    return f"{value:,.1f}"


def _by_link(text: str, link: str) -> str:
    """A tier or bound as printed: the scale-up domain named by its link (Infinity Fabric on AMD platforms)."""
    return text.replace("NVLink", link) if link else text


def acceptance_model(ctx: RenderContext) -> dict[str, Any]:
    groups = []
    for entry in nccl_groups(ctx.valid, ctx.topo):
        assert entry.server.gpus is not None
        link = ctx.valid.catalog.require(entry.server.gpus.model, GPU).link_family
        rows = [
            {
                "tier": md_cell(_by_link(f.tier, link)),
                "nodes": md_cell(host_range(f.nodes)),
                "node_count": len(f.nodes),
                "ranks": f.ranks,
                "ranks_per_node": f.ranks // max(1, len(f.nodes)),
                "all_reduce": _gbs(f.all_reduce_gbs),
                "all_reduce_floor": _gbs(f.all_reduce_gbs * FLOOR),
                "all_to_all": _gbs(f.all_to_all_gbs),
                "all_to_all_floor": _gbs(f.all_to_all_gbs * FLOOR),
                "bound": md_cell(_by_link(f.bound, link)),
            }
            for f in group_figures(ctx, entry)
        ]
        groups.append({"name": md_cell(entry.group.name), "fabric": md_cell(entry.fabric_name), "rows": rows})
    return {"blueprint": md_cell(ctx.topo.name), "groups": groups, "floor": f"{FLOOR:.0%}"}


def render_acceptance(ctx: RenderContext) -> dict[str, str]:
    from .burnin import BURN_IN_DIR, render_burn_in  # it reads this module's figures

    model = acceptance_model(ctx)
    if not model["groups"]:
        return {}
    jobs = render_burn_in(ctx)
    model["burn_in"] = BURN_IN_DIR
    model["jobs"] = [md_cell(path) for path in jobs]
    return {ACCEPTANCE_MD: ctx.render("handoff/acceptance.md.j2", model), **jobs}
