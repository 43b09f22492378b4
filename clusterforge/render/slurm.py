"""Slurm output family: the cluster part of slurm.conf, gres.conf and topology.conf."""

from __future__ import annotations

from dataclasses import asdict

from . import paths
from .context import RenderContext
from .slurm_model import MEMORY_SHARE, slurm_model


def render_slurm(ctx: RenderContext) -> dict[str, str]:
    bp = ctx.valid.blueprint
    if bp.slurm is None:
        return {}
    model = {**asdict(slurm_model(bp, ctx.valid.catalog, ctx.topo)), "blueprint": ctx.valid.path.name,
             "installed_as": paths.SLURM_CONF_INSTALLED, "memory_share": f"{MEMORY_SHARE:.0%}"}
    files = {paths.SLURM_CONF: ctx.render("slurm/slurm.conf.j2", model)}
    if model["gres"]:
        files[paths.SLURM_GRES] = ctx.render("slurm/gres.conf.j2", model)
    if model["topology_plugin"]:
        files[paths.SLURM_TOPOLOGY] = ctx.render("slurm/topology.conf.j2", model)
    return files
