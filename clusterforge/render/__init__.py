"""The render stage: one renderer per output family, each returning {relative path: text}."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from jinja2.sandbox import SecurityError

from .. import codes
from ..errors import ClusterforgeError, Finding, Severity
from ..expand.topology import Topology
from ..output.pieces import FileText, whole
from ..plan import Plan
from ..validate import ValidBlueprint
from .ansible.ansible import render_ansible
from .ansible.made import Made
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
from .rendered import Rendered
from .slurm.slurm import render_slurm
from .software.software import render_software
from .switches.nvue import render_switches

Renderer = Callable[[RenderContext], Mapping[str, FileText] | Rendered]
Need = Literal["findings", "plan"]


@dataclass(frozen=True)
class Family:
    """An output family: its name, its renderer, what it reads beyond the blueprint and its topology (`needs`:
    a render starts the families that need neither the findings nor the plan before the checks are done), and
    whether it belongs to the handoff pack (the second lane of a render in two processes, schedule.py)."""

    name: str
    render: Renderer
    needs: frozenset[Need] = frozenset()
    handoff: bool = False


CHECKS: frozenset[Need] = frozenset({"findings", "plan"})


def _families(*families: Family) -> dict[str, Family]:
    return {family.name: family for family in families}


FAMILIES: dict[str, Family] = _families(
    Family("ansible", render_ansible),
    Family("slurm", render_slurm),
    Family("nccl", render_nccl),
    Family("network", render_network),
    Family("imex", render_imex),
    Family("infiniband", render_infiniband),
    Family("switches", render_switches),
    Family("software", render_software),
    # the handoff pack for the people who rack, cable and install; the cable tables first, while the rack
    # drawings (kept from the elevations for the report) do not take memory yet: at 100,000 GPUs they are the
    # largest family in memory
    Family("cabling", render_cabling, handoff=True),
    Family("bom", render_bom, handoff=True),
    Family("acceptance", render_acceptance, handoff=True),
    Family("elevation", render_elevation, needs=CHECKS, handoff=True),
    Family("report", render_report, needs=CHECKS, handoff=True),
)
"""Every output family in the order rendered. Renderers do not depend on each other; the consistency check
(render/consistency.py) runs over their combined output."""


def shared_by_lanes(ctx: RenderContext) -> None:
    """Work out what families rendered in two processes use (the cable table: InfiniBand and the handoff pack),
    so that a process forked after this (the second lane, or the checking process) has it already instead of
    working it out again."""
    shared_cable_table(ctx)


def render_in_order(
    ctx: RenderContext,
    families: Iterable[str],
    put: Callable[[str, FileText], None],
    rendered: Container[str],
    done: Callable[[str], None] = lambda _family: None,
) -> Made:
    """The one render loop: `families` in order, each file into `put` (whose files `rendered` then holds),
    telling `done` after each family; returns what the families made their files from."""
    made = Made()
    for family in families:
        files, facts = render_family(ctx, family)
        for path, text in files.items():
            if path in rendered:
                raise ValueError(f"two renderers write {path}")
            put(path, text)
        made = made.merged(facts)
        done(family)
    return made


def render_family(ctx: RenderContext, family: str) -> Rendered:
    """One family's files (a name of FAMILIES), a large text possibly in `Pieces`, and what it made them from;
    an error in a site's template is a ClusterforgeError."""
    try:
        out = FAMILIES[family].render(ctx)
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
    return out if isinstance(out, Rendered) else Rendered(out)


def render(
    valid: ValidBlueprint,
    topo: Topology,
    findings: list[Finding],
    templates: Path | None = None,
    plan: Plan | None = None,
) -> dict[str, str]:
    """Every family's files, by path in order."""
    out: dict[str, str] = {}
    ctx = RenderContext(valid, topo, findings, templates, plan)
    render_in_order(ctx, FAMILIES, lambda path, text: out.__setitem__(path, whole(text)), out)
    return dict(sorted(out.items()))


__all__ = [
    "FAMILIES",
    "Family",
    "RenderContext",
    "Rendered",
    "render",
    "render_family",
    "render_in_order",
    "shared_by_lanes",
]
