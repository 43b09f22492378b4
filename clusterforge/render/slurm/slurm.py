"""Slurm output family: the cluster part of slurm.conf, gres.conf and topology.conf."""

from __future__ import annotations

from dataclasses import asdict

from ...catalog import Server
from ...validate import ValidBlueprint
from .. import paths
from ..context import RenderContext
from .slurm_model import MEMORY_SHARE, slurm_model

TEMPLATES = {
    paths.SLURM_CONF: "slurm/slurm.conf.j2",
    paths.SLURM_GRES: "slurm/gres.conf.j2",
    paths.SLURM_TOPOLOGY: "slurm/topology.conf.j2",
    paths.SLURM_CGROUP: "slurm/cgroup.conf.j2",
}


def slurm_paths(valid: ValidBlueprint) -> list[str]:
    """The files this family renders for `valid`: what the Ansible roles install, decided from the blueprint alone."""
    slurm = valid.blueprint.slurm
    if slurm is None:
        return []
    groups = {g.name: g for g in valid.blueprint.node_groups}
    in_partitions = {name for p in slurm.partitions for name in p.node_groups}
    has_gpus = any(valid.catalog.require(groups[name].model, Server).gpus is not None for name in in_partitions)
    return (
        [paths.SLURM_CONF, paths.SLURM_CGROUP]
        + ([paths.SLURM_GRES] if has_gpus else [])
        + ([paths.SLURM_TOPOLOGY] if slurm.topology != "none" else [])
    )


def render_slurm(ctx: RenderContext) -> dict[str, str]:
    wanted = slurm_paths(ctx.valid)
    if not wanted:
        return {}
    model = {
        **asdict(slurm_model(ctx.valid.blueprint, ctx.valid.catalog, ctx.topo)),
        "blueprint": ctx.valid.blueprint.name,
        "installed_as": paths.SLURM_CONF_INSTALLED,
        "memory_share": f"{MEMORY_SHARE:.0%}",
        "version": ctx.valid.blueprint.slurm.version if ctx.valid.blueprint.slurm else "",
    }
    return {path: ctx.render(TEMPLATES[path], model) for path in wanted}
