"""The render stage: one renderer per output family, each returning {relative path: text}."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from jinja2.sandbox import SecurityError

from .. import codes
from ..errors import ClusterforgeError, Finding, Severity
from ..expand.topology import Topology
from ..output.pieces import FileText, whole
from ..plan import Plan
from ..validate import ValidBlueprint
from .ansible.ansible import render_ansible
from .context import RenderContext
from .handoff.acceptance import render_acceptance
from .handoff.bom import render_bom
from .handoff.cabling import render_cabling
from .handoff.elevation import render_elevation
from .handoff.handoff_common import shared_cable_table
from .handoff.report import render_report
from .imex.imex import render_imex
from .infiniband.infiniband import render_infiniband
from .jinja import TemplateRefused, site_template_location
from .nccl.nccl import render_nccl
from .network.network import render_network
from .slurm.slurm import render_slurm
from .software.software import render_software
from .switches.nvue import render_switches

Renderer = Callable[[RenderContext], Mapping[str, FileText]]

# One renderer per output family. Renderers do not depend on each other; the consistency check
# (clusterforge/render/consistency.py) runs over their combined output.
RENDERERS: dict[str, Renderer] = {
    "ansible": render_ansible,
    "slurm": render_slurm,
    "nccl": render_nccl,
    "network": render_network,
    "imex": render_imex,
    "infiniband": render_infiniband,
    "switches": render_switches,
    "software": render_software,
    # the handoff pack for the people who rack, cable and install; the cable tables first, while the rack
    # drawings (kept from the elevations for the report) do not take memory yet: at 100,000 GPUs they are the
    # largest family in memory
    "cabling": render_cabling,
    "bom": render_bom,
    "acceptance": render_acceptance,
    "elevation": render_elevation,
    "report": render_report,
}


HANDOFF_FAMILIES = frozenset({"cabling", "bom", "acceptance", "elevation", "report"})
"""The handoff pack: a render with two CPUs renders these in a second process beside the device configurations
(about 5 and 6 CPU s of 11 at 100,000 GPUs)."""


FAMILIES_SHOWING_CHECKS = frozenset({"elevation", "report"})
"""The families that show the checks' findings or the plan (`RenderContext.findings`, `shared_plan`); the others
need the expanded topology alone, so a render can start them while the checks run beside them."""


def shared_by_lanes(ctx: RenderContext) -> None:
    """Work out what families rendered in two processes use (the cable table: InfiniBand and the handoff pack),
    so that a process forked after this (the second lane, or the checking process) has it already instead of
    working it out again."""
    shared_cable_table(ctx)


def render_families(
    valid: ValidBlueprint,
    topo: Topology,
    findings: list[Finding],
    templates: Path | None = None,
    plan: Plan | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> Iterator[Mapping[str, FileText]]:
    """Each family's files in turn, so a caller can write them and let them go before the next family is
    rendered; `progress` is told ("render", families done, families) as they are rendered."""
    ctx = RenderContext(valid, topo, findings, templates, plan)
    for done, family in enumerate(RENDERERS):
        if progress is not None:
            progress("render", done, len(RENDERERS))
        yield render_family(ctx, family)
    if progress is not None:
        progress("render", len(RENDERERS), len(RENDERERS))


def render_family(ctx: RenderContext, family: str) -> Mapping[str, FileText]:
    """One family's files (a name of RENDERERS), a large text possibly in `Pieces`; an error in a site's
    template is a ClusterforgeError."""
    try:
        return RENDERERS[family](ctx)
    except Exception as exc:
        where = site_template_location(exc, ctx.templates)
        if where is None:
            raise  # a renderer's own bug: the CLI reports it as an internal error (exit 3)
        # an error in a site's override template (or a template refused) is the user's to fix
        hint = (
            "site templates render in a sandbox: they print the values they are given, and cannot reach Python's "
            "internals or read other files"
            if isinstance(exc, SecurityError | TemplateRefused)
            else None
        )
        failed = type(exc).__name__
        finding = Finding(
            codes.RENDER_FAILED,
            Severity.ERROR,
            f"rendering {family} failed: {failed}: {exc}",
            location=where,
            hint=hint,
        )
        raise ClusterforgeError([finding]) from exc


def render(
    valid: ValidBlueprint,
    topo: Topology,
    findings: list[Finding],
    templates: Path | None = None,
    plan: Plan | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, str]:
    """Every family's files, by path in order."""
    out: dict[str, str] = {}
    for files in render_families(valid, topo, findings, templates, plan, progress):
        for path, text in files.items():
            if path in out:
                raise ValueError(f"two renderers write {path}")
            out[path] = whole(text)
    return dict(sorted(out.items()))


__all__ = [
    "HANDOFF_FAMILIES",
    "RENDERERS",
    "RenderContext",
    "render",
    "render_families",
    "render_family",
    "shared_by_lanes",
]
