"""handoff/burn-in/: Slurm batch jobs that run the acceptance tests on every node, rail and tier, and the plan
`clusterforge accept` reads their results against (clusterforge/accept/).

Per GPU node group on a compute fabric:

- `<group>/<set>.sbatch` for each set of nodes under one set of leaves (a scalable unit's rail leaves, or one
  leaf): GPU health on every node (`dcgmi diag -r 3 -j`, nvbandwidth's NVLink copies, the `nvidia-smi -q`
  Fabric section on multi-node NVLink systems), the NVLink tests of one-node domains, the set's collectives
  and, for each rail, nccl-tests between neighbouring nodes on that rail's GPU and NIC alone (each node with
  the next and the last with the first, disjoint pairs at a time), so a slow rail names its node and cable;
- `<group>/nvlink<NNN>.sbatch` for each NVLink domain of several nodes: its collectives;
- `<group>/spine.sbatch` when the group spans several sets of leaves: the group's collectives and, for each
  rail, pairs across the sets (node i of each set with node i of the next), so a slow leaf names its uplinks;
- `ibdiagnet-<fabric>.sbatch` for each InfiniBand compute fabric: ibdiagnet with port counters, BER and cable
  information, from one node.

Every rank sees all of its node's GPUs (`--gpus-per-node`, `--ntasks-per-node`, `--mpi=pmix`): with
`--gpus-per-task=1` and ConstrainDevices=yes a rank sees one GPU and NCCL cannot use NVLink or the other
rails (NVIDIA/nccl issue 1066). Each result file starts with a `# clusterforge-burn-in:` line that names the
test and its nodes; the floors are worked out from those nodes when the results are read back.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import hostlist

from ...model.fabric import LeafSpineFabric
from ..context import RenderContext, host_range
from ..nccl.nccl import NcclGroup, hca_devices, nccl_groups
from ..slurm.slurm_model import slurm_model
from .acceptance import FLOOR, GroupBounds, TierFigure, group_bounds
from .handoff_common import natural_key, shared_cable_table

BURN_IN_DIR = "handoff/burn-in"
HEADER = "# clusterforge-burn-in:"
"""The first line of every result file: `HEADER test=<kind> key=value ...`."""
GROUP_SIZES = ("1G", "16G")
"""nccl-tests `-b`/`-e` of the collectives: 16 GiB reaches the bus bandwidth plateau at thousands of ranks."""
PAIR_SIZES = ("256M", "8G")
"""nccl-tests `-b`/`-e` of the pair tests (one rank per node): the plateau is reached from about 1 GiB."""
NVBANDWIDTH_TEST = "device_to_device_memcpy_read_ce"


@dataclass(frozen=True)
class RailPort:
    """A node's port of one rail and the leaf port it is cabled to."""

    node: str
    rail: int
    port: str
    leaf: str
    leaf_port: str
    link: int
    """Index of the link in `Topology.links`."""


@dataclass
class BurnInGroup:
    group: str
    fabric: str
    infiniband: bool
    nodes: list[str]
    bounds: GroupBounds
    devices: list[str]
    """RDMA device of each rail, in rail order."""
    devices_known: bool
    rail_gbs: float
    """One compute port's bandwidth per direction, GB/s: what a pair test on one rail is bound by."""
    leaf_sets: list[list[str]]
    """Nodes under one set of leaves, in placement order."""
    domains: list[list[str]]
    """NVLink domains, each its nodes (one node each on an HGX system); empty without NVLink."""
    ports: dict[tuple[str, int], RailPort] = field(default_factory=dict)
    partition: str | None = None
    rail_optimized: bool = False
    blocks: list[list[str]] = field(default_factory=list)
    """Slurm's topology/block blocks of the group's nodes, and their sizes (BlockSizes); empty otherwise."""
    block_sizes: list[int] = field(default_factory=list)
    _set_of: dict[str, int] = field(default_factory=dict, repr=False)

    @property
    def rails(self) -> int:
        return len(self.devices)

    @cached_property
    def multi_node_nvlink(self) -> bool:
        # asked once per job: worked out once (the domains are one per node on HGX, so every job asking
        # again made the family's time grow with the square of the nodes)
        return any(len(d) > 1 for d in self.domains)

    def set_name(self, index: int) -> str:
        return f"{'su' if self.rail_optimized else 'leaf'}{index + 1:03d}"

    def leaf_set_of(self, node: str) -> int | None:
        if not self._set_of:
            self._set_of.update((n, i) for i, nodes in enumerate(self.leaf_sets) for n in nodes)
        return self._set_of.get(node)

    def figure(self, test: str, nodes: list[str]) -> TierFigure | None:
        """The expected figures of a collective test over `nodes`: 'nvlink' (one NVLink domain), 'leaf' (nodes
        under one set of leaves) or 'spine' (across sets of leaves)."""
        leaf_nodes = len(self.leaf_sets[0]) if test == "spine" and self.leaf_sets else len(nodes)
        for figure in self.bounds.figures(nodes, leaf_nodes):
            kind = "nvlink" if figure.tier == "NVLink domain" else "spine" if figure.tier == "spine" else "leaf"
            if kind == test:
                return figure
        return None

    def pair_floor(self) -> float:
        return self.rail_gbs * FLOOR

    def allocation(self, nodes: list[str]) -> list[str]:
        """The nodes a job over `nodes` asks for. Under topology/block Slurm places a job of n nodes inside one
        block of the smallest size (BlockSizes, aggregating consecutive blocks) that holds n, and refuses a node
        list that crosses such blocks (measured with slurmctld 24.11: gb[033-064] of the NVL72 example crosses
        the 36-node aggregates); such a job asks for the smallest aggregate that holds its nodes instead and
        runs its steps on its own nodes."""
        if not self.blocks or not self.block_sizes:
            return nodes
        wanted = set(nodes)
        base = self.block_sizes[0]
        fitting = [size for size in self.block_sizes if size >= len(nodes)]
        for size in fitting:
            per = max(1, size // base)
            for start in range(0, len(self.blocks), per):
                members = [n for block in self.blocks[start : start + per] for n in block]
                if wanted <= set(members):
                    return nodes if size == fitting[0] else members  # as they are where their size fits
        return nodes


def ring_pairs(nodes: list[str]) -> list[tuple[str, str]]:
    """The pairs the jobs' `ring` runs: each node with the next, and the last with the first (from 3 nodes)."""
    pairs = list(itertools.pairwise(nodes))
    return [*pairs, (nodes[-1], nodes[0])] if len(nodes) > 2 else pairs


def spine_columns(g: BurnInGroup) -> list[list[str]]:
    """The spine job's rings: node i of each set of leaves, for each i that two sets or more have."""
    longest = max((len(s) for s in g.leaf_sets), default=0)
    columns = ([s[i] for s in g.leaf_sets if i < len(s)] for i in range(longest))
    return [c for c in columns if len(c) > 1]


def _partition(ctx: RenderContext, group: str) -> str | None:
    slurm = ctx.valid.blueprint.slurm
    if slurm is None:
        return None
    found = [p for p in slurm.partitions if group in p.node_groups]
    found.sort(key=lambda p: not p.default)
    return found[0].name if found else None


def _rail_ports(ctx: RenderContext, fabric: str, nodes: set[str]) -> dict[tuple[str, int], RailPort]:
    """(node, rail) -> its port on `fabric`: the link's rail, else the port's place among the node's ports."""
    links = shared_cable_table(ctx).links  # columns: one pass without a Link object per cable
    by_node: dict[str, list[tuple[str, str, str, int, int | None]]] = defaultdict(list)
    columns = zip(
        links["a"],
        links["a_port"],
        links["b"],
        links["b_port"],
        links["fabric"],
        links["tier"],
        links["rail"],
        strict=True,
    )
    for index, (a, a_port, b, b_port, link_fabric, tier, rail) in enumerate(columns):
        if tier == "node-leaf" and link_fabric == fabric and a in nodes:
            by_node[a].append((a_port, b, b_port, index, rail))
    ports: dict[tuple[str, int], RailPort] = {}
    for node, found in by_node.items():
        found.sort(key=lambda p: natural_key(p[0]))
        for place, (port, leaf, leaf_port, index, rail) in enumerate(found, start=1):
            number = rail or place
            ports[(node, number)] = RailPort(node, number, port, leaf, leaf_port, index)
    return ports


def _blocks(ctx: RenderContext, nodes: list[str]) -> tuple[list[list[str]], list[int]]:
    """Slurm's blocks (as slurm_model renders them) restricted to `nodes`, with BlockSizes."""
    slurm = ctx.valid.blueprint.slurm
    if slurm is None or slurm.topology != "block":
        return [], []
    model = slurm_model(ctx.valid.blueprint, ctx.valid.catalog, ctx.topo)
    ours = set(nodes)
    blocks = [[n for n in hostlist.expand_hostlist(b["nodes"]) if n in ours] for b in model.blocks]
    return blocks, model.block_sizes


def burn_in_group(ctx: RenderContext, entry: NcclGroup) -> BurnInGroup:
    devices = [d for d in ctx.topo.nodes() if d.group == entry.group.name]
    nodes = [d.name for d in devices]
    ports = _rail_ports(ctx, entry.fabric_name, set(nodes))
    leaves: dict[str, set[str]] = defaultdict(set)
    for (node, _), port in ports.items():
        leaves[node].add(port.leaf)
    sets: dict[frozenset[str], list[str]] = {}
    for node in nodes:
        sets.setdefault(frozenset(leaves[node]), []).append(node)
    bounds = group_bounds(ctx, entry)
    domains: dict[int, list[str]] = {}
    if bounds.domain > 1 and bounds.nvlink_gbs > 0:
        for device in devices:
            key = device.nvlink_domain if device.nvlink_domain is not None else -device.index
            domains.setdefault(key, []).append(device.name)
    rdma, known = hca_devices(entry.server)
    speeds = [g.speed_gbps for g in entry.server.port_groups("compute")]
    fabric = ctx.valid.blueprint.fabrics[entry.fabric_name]
    blocks, block_sizes = _blocks(ctx, nodes)
    return BurnInGroup(
        group=entry.group.name,
        fabric=entry.fabric_name,
        infiniband=isinstance(fabric, LeafSpineFabric) and fabric.technology == "infiniband",
        nodes=nodes,
        bounds=bounds,
        devices=rdma,
        devices_known=known,
        rail_gbs=(min(speeds) if speeds else 0.0) / 8,
        leaf_sets=list(sets.values()),
        domains=list(domains.values()),
        ports=ports,
        partition=_partition(ctx, entry.group.name),
        rail_optimized=ctx.topo.fabrics[entry.fabric_name].topology == "rail-optimized",
        blocks=blocks,
        block_sizes=block_sizes,
    )


def burn_in_groups(ctx: RenderContext) -> list[BurnInGroup]:
    return [burn_in_group(ctx, entry) for entry in nccl_groups(ctx.valid, ctx.topo)]


# --- the batch jobs --------------------------------------------------------------------------------------
def _job(ctx: RenderContext, g: BurnInGroup, name: str, nodes: list[str], hours: int) -> dict[str, Any]:
    per_node = g.bounds.gpus_per_node
    alloc = g.allocation(nodes)
    return {
        "blueprint": ctx.valid.blueprint.name,
        "name": f"cf-burn-in-{name}",
        "group": g.group,
        "partition": g.partition,
        "nodes": len(alloc),
        "nodelist": host_range(alloc),
        "set_nodes": len(nodes),
        "set": host_range(nodes),
        "wider": len(alloc) > len(nodes),
        "gpus": per_node,
        "rails": g.rails,
        "devices": g.devices,
        "devices_known": g.devices_known,
        "hours": hours,
        "floor": f"{FLOOR:.0%}",
        "group_sizes": GROUP_SIZES,
        "pair_sizes": PAIR_SIZES,
        "nvbandwidth_test": NVBANDWIDTH_TEST,
        "health": False,
        "fabric_state": g.multi_node_nvlink,
        "node_nvlink": False,
        "collectives": [],
        "pair_sets": [],
        "pair_kind": "",
    }


def _collective(test: str, g: BurnInGroup, nodes: list[str], label: str) -> dict[str, Any] | None:
    figure = g.figure(test, nodes)
    if figure is None:
        return None
    return {
        "test": test,
        "label": label,
        "nodelist": host_range(nodes),
        "nodes": len(nodes),
        "expected": f"all-reduce {figure.all_reduce_gbs:,.1f}, all-to-all {figure.all_to_all_gbs:,.1f} GB/s per GPU",
    }


def _set_job(ctx: RenderContext, g: BurnInGroup, index: int) -> dict[str, Any]:
    nodes = g.leaf_sets[index]
    job = _job(ctx, g, f"{g.group}-{g.set_name(index)}", nodes, 8)
    job["health"] = True
    job["node_nvlink"] = bool(g.domains) and not g.multi_node_nvlink
    collective = _collective("leaf", g, nodes, f"{g.group}-{g.set_name(index)}")
    job["collectives"] = [collective] if collective else []
    job["pair_kind"] = "rail-pair"
    job["pair_sets"] = [" ".join(nodes)] if len(nodes) > 1 else []
    return job


def _domain_job(ctx: RenderContext, g: BurnInGroup, index: int) -> dict[str, Any]:
    nodes = g.domains[index]
    job = _job(ctx, g, f"{g.group}-nvlink{index + 1:03d}", nodes, 2)
    collective = _collective("nvlink", g, nodes, f"{g.group}-nvlink{index + 1:03d}")
    job["collectives"] = [collective] if collective else []
    return job


def _spine_job(ctx: RenderContext, g: BurnInGroup) -> dict[str, Any]:
    job = _job(ctx, g, f"{g.group}-spine", g.nodes, 8)
    collective = _collective("spine", g, g.nodes, f"{g.group}-spine")
    job["collectives"] = [collective] if collective else []
    job["pair_kind"] = "spine-pair"
    job["pair_sets"] = [" ".join(c) for c in spine_columns(g)]
    return job


def ibdiagnet_job(ctx: RenderContext, fabric: str, node: str, partition: str | None) -> dict[str, Any]:
    return {
        "blueprint": ctx.valid.blueprint.name,
        "name": f"cf-burn-in-ibdiagnet-{fabric}",
        "fabric": fabric,
        "partition": partition,
        "nodelist": node,
    }


def render_burn_in(ctx: RenderContext) -> dict[str, str]:
    files: dict[str, str] = {}
    ibdiagnet: dict[str, tuple[str, str | None]] = {}
    for g in burn_in_groups(ctx):
        if not g.nodes:
            continue
        jobs = [(g.set_name(i), _set_job(ctx, g, i)) for i in range(len(g.leaf_sets))]
        if g.multi_node_nvlink:
            jobs += [(f"nvlink{i + 1:03d}", _domain_job(ctx, g, i)) for i in range(len(g.domains))]
        if len(g.leaf_sets) > 1:
            jobs.append(("spine", _spine_job(ctx, g)))
        for name, job in jobs:
            files[f"{BURN_IN_DIR}/{g.group}/{name}.sbatch"] = ctx.render("handoff/burn-in.sbatch.j2", job)
        if g.infiniband:
            ibdiagnet.setdefault(g.fabric, (g.nodes[0], g.partition))
    for fabric, (node, partition) in ibdiagnet.items():
        model = ibdiagnet_job(ctx, fabric, node, partition)
        files[f"{BURN_IN_DIR}/ibdiagnet-{fabric}.sbatch"] = ctx.render("handoff/ibdiagnet.sbatch.j2", model)
    return files
