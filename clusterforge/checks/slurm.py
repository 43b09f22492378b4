"""Slurm on multi-node NVLink systems: the release must hand each job an IMEX channel; topology 'block' needs
blocks to make (NVLink domains, or a block size)."""

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
    slurm = ctx.valid.blueprint.slurm
    if slurm is None or slurm.topology != "block" or slurm.block_size:
        return
    groups = {g for p in slurm.partitions for g in p.node_groups}
    names = sorted(n.name for n in ctx.topo.nodes() if n.group in groups)
    if any(any(n in names for n in domain.nodes) for domain in ctx.topo.domains):
        return
    yield ctx.finding(
        codes.SLURM_BLOCKS_NONE,
        Severity.WARNING,
        f"topology 'block' makes no block: the partitions' nodes ({hostlist.collect_hostlist(names)}) are in no "
        "multi-node NVLink domain and slurm.block_size is not set, so slurmctld reports 'No blocks configured' "
        "and schedules as if flat",
        ("slurm", "topology"),
        slurm.cluster_name,
        "set slurm.block_size (nodes per block, e.g. the nodes of one leaf switch), or use topology 'tree'",
    )
