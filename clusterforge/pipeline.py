"""The stages in order, with an error gate after each: load -> validate -> expand -> check -> render.

The only module that puts the stages together: every command loads with `load_valid`, analyses once with
`analyse` (expand + check) and renders from that analysis, so no command expands or checks twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import cast

from .checks import run_checks
from .errors import BlueprintError, Finding, Severity
from .expand import Topology, expand
from .expand.gc_paused import gc_paused
from .loader import load_blueprint
from .plan import Plan, build_plan
from .render import render_families
from .render.consistency import consistency_findings
from .validate import ValidBlueprint, validate
from .writer import MANIFEST, StagedTree, manifest_text, with_manifest

Progress = Callable[[str, int, int], None]
"""Told (stage, steps done, steps in all) as long work goes on; the CLI draws it on a terminal."""


def _quiet(_stage: str, _done: int, _total: int) -> None:
    return None


def load_valid(path: Path, allow: Sequence[Path] = ()) -> ValidBlueprint:
    # load: YAML with includes -> raw data + source map (raises BlueprintError); files only from the
    # blueprint's repository and the allowed folders
    loaded = load_blueprint(path, allow)
    # validate: schema, catalog, references (raises BlueprintError with every error found)
    return validate(loaded)


@dataclass(frozen=True)
class Analysis:
    """A valid blueprint expanded and checked once; what plan, check, render, export and diff work from."""

    valid: ValidBlueprint
    topo: Topology
    findings: list[Finding]
    """Expansion warnings and every check's findings, suppressions applied, sorted."""

    @cached_property
    def plan(self) -> Plan:
        return build_plan(self.valid, self.topo, self.findings)

    @property
    def blocking(self) -> list[Finding]:
        """Unsuppressed errors: they stop a render."""
        return [f for f in self.findings if f.severity is Severity.ERROR and not f.suppressed_by]


def analyse(valid: ValidBlueprint, progress: Progress = _quiet) -> Analysis:
    """Expand and check; raises BlueprintError when expansion fails (check errors are findings)."""
    # expand: placement, fabrics, cabling, addresses (raises on errors)
    progress("expand", 0, 1)
    topo, expand_findings = expand(valid)
    progress("expand", 1, 1)
    # check: physical and fabric checks, then the blueprint's suppressions
    progress("check", 0, 1)
    findings = run_checks(valid, topo, expand_findings)
    progress("check", 1, 1)
    return Analysis(valid, topo, findings)


CONSISTENCY_READS = ("ansible/", "slurm/", "nccl/")
"""The families whose texts the consistency check reads (render/consistency.py): a staged render keeps them
in memory; it reads any other file back from the disk if asked."""


def render_analysis(analysis: Analysis, templates: Path | None = None, progress: Progress = _quiet) -> dict[str, str]:
    """Every output file of an analysed blueprint, with its manifest, in memory; raises when a check found an
    error."""
    files: dict[str, str] = {}
    _render_checked(analysis, files.__setitem__, files, templates, progress)
    return with_manifest(dict(sorted(files.items())), analysis.valid.source_sha256())


def render_staged(
    analysis: Analysis, staged: StagedTree, templates: Path | None = None, progress: Progress = _quiet
) -> None:
    """`render_analysis` into `staged`: each family written as soon as it is rendered, then the manifest; the
    caller commits it. What a family leaves in memory is its digests (and the texts the consistency check
    reads), not its text."""
    _render_checked(analysis, staged.put, staged, templates, progress)
    staged.put(MANIFEST, manifest_text(staged.digests, analysis.valid.source_sha256()))


def _render_checked(
    analysis: Analysis,
    put: Callable[[str, str], None],
    rendered: Mapping[str, str],
    templates: Path | None,
    progress: Progress,
) -> None:
    """Render family by family into `put` (whose files `rendered` then holds), then cross-check them."""
    if analysis.blocking:
        raise BlueprintError(analysis.blocking)
    # render: one renderer per output family, then a cross-check of what they wrote
    families = render_families(analysis.valid, analysis.topo, analysis.findings, templates, analysis.plan, progress)
    with gc_paused():  # the collector would walk the expanded topology's millions of objects again and again
        for files in families:
            for path, text in files.items():
                if path in rendered:
                    raise ValueError(f"two renderers write {path}")
                put(path, text)
    progress("consistency", 0, 1)
    # the check only reads (`in`, `get`, items): any mapping of the files does
    problems = consistency_findings(analysis.valid, analysis.topo, cast(dict[str, str], rendered))
    progress("consistency", 1, 1)
    if problems:
        raise BlueprintError(problems)


def render_files(valid: ValidBlueprint, templates: Path | None = None) -> dict[str, str]:
    """`render_analysis(analyse(valid))`: for callers that need nothing but the files."""
    return render_analysis(analyse(valid), templates)
