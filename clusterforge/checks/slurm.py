"""Slurm on NVLink systems: the release must hand each job an IMEX channel, and topology/block must have blocks
(one per NVLink domain, or of slurm.block_size nodes where no node is in a domain) and leave no partition node
outside them, where Slurm never places a job."""

from __future__ import annotations

from collections.abc import Iterator

import hostlist

from .. import codes
from ..errors import Finding, Severity
from ..expand.nvlink import multi_node_domains
from ..model.slurm import IMEX_SINCE, at_least
from .context import CheckContext


def check_slurm_imex(ctx: CheckContext) -> Iterator[Finding]:
    slurm = ctx.valid.blueprint.slurm
    if slurm is None or at_least(slurm.version, IMEX_SINCE):
        return
    groups = {g for p in slurm.partitions for g in p.node_groups}
    names = {n.name for n in ctx.topo.nodes() if n.group in groups}
    domains = multi_node_domains(ctx.topo, names)
    if domains:
        nodes = hostlist.collect_hostlist(sorted(n for d in domains for n in d))
        yield ctx.finding(
            codes.SLURM_WITHOUT_IMEX,
            Severity.WARNING,
            f"Slurm {slurm.version} has no switch/nvidia_imex: jobs on the {len(domains)} multi-node NVLink "
            f"domains ({nodes}) get no IMEX channel, so their GPUs cannot share memory across nodes",
            ("slurm", "version"),
            slurm.cluster_name,
            f"set slurm.version to the release the cluster runs ({IMEX_SINCE} or later has switch/nvidia_imex), "
            "or create IMEX channels in a job prolog",
        )


def check_slurm_blocks(ctx: CheckContext) -> Iterator[Finding]:
    """topology/block selects a job's nodes inside one block only (Slurm's eval_nodes_block). clusterforge
    writes a block per NVLink domain, or, where no node is in one, blocks of slurm.block_size nodes: with
    neither, no block at all (slurmctld logs "No blocks configured"); with domains, a node in none (a CPU node,
    a login node) never gets a job, and a partition of such nodes alone runs none."""
    slurm = ctx.valid.blueprint.slurm
    if slurm is None or slurm.topology != "block":
        return
    in_blocks = {n for domain in ctx.topo.domains for n in domain.nodes}
    groups = {g for p in slurm.partitions for g in p.node_groups}
    names = sorted(n.name for n in ctx.topo.nodes() if n.group in groups)
    if not in_blocks.intersection(names):
        if not slurm.block_size:
            yield _no_blocks(ctx, names)
        return  # blocks of block_size hold every node
    for index, partition in enumerate(slurm.partitions):
        nodes = [n.name for n in ctx.topo.nodes() if n.group in partition.node_groups]
        outside = [n for n in nodes if n not in in_blocks]
        if not outside:
            continue
        shown = hostlist.collect_hostlist(outside)
        path = ("slurm", "partitions", index, "node_groups")
        if len(outside) == len(nodes):
            yield ctx.finding(
                codes.SLURM_PARTITION_WITHOUT_BLOCK,
                Severity.ERROR,
                f"topology 'block': partition '{partition.name}' ({shown}) has no node in an NVLink domain, so it "
                "is in no block and Slurm's topology/block gives it no job",
                path,
                partition.name,
                "use slurm.topology 'tree', which places jobs on every node, or leave the partition out",
            )
        else:
            yield ctx.finding(
                codes.SLURM_NODES_WITHOUT_BLOCK,
                Severity.WARNING,
                f"topology 'block': {shown} of partition '{partition.name}' are in no NVLink domain, so in no "
                "block: Slurm's topology/block gives them no job",
                path,
                partition.name,
                "use slurm.topology 'tree', or leave the node groups without NVLink domains out of the partition",
            )


def _no_blocks(ctx: CheckContext, names: list[str]) -> Finding:
    slurm = ctx.valid.blueprint.slurm
    assert slurm is not None
    return ctx.finding(
        codes.SLURM_BLOCKS_NONE,
        Severity.WARNING,
        f"topology 'block' makes no block: the partitions' nodes ({hostlist.collect_hostlist(names)}) are in no "
        "multi-node NVLink domain and slurm.block_size is not set, so slurmctld reports 'No blocks configured' "
        "and schedules as if flat",
        ("slurm", "topology"),
        slurm.cluster_name,
        "set slurm.block_size (nodes per block, e.g. the nodes of one leaf switch), or use topology 'tree'",
    )
