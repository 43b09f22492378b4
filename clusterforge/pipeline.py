"""The stages in order, with an error gate after each: load -> validate -> expand -> check -> render.

The only module that puts the stages together: every command loads with `load_valid`, analyses once with
`analyse` (expand + check) and renders from that analysis, so no command expands or checks twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .checks import run_checks
from .errors import BlueprintError, Finding, Severity
from .expand import Topology, expand
from .loader import load_blueprint
from .plan import Plan, build_plan
from .render import render
from .render.consistency import consistency_findings
from .validate import ValidBlueprint, validate
from .writer import with_manifest

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


def render_analysis(analysis: Analysis, templates: Path | None = None, progress: Progress = _quiet) -> dict[str, str]:
    """Every output file of an analysed blueprint, with its manifest; raises when a check found an error."""
    if analysis.blocking:
        raise BlueprintError(analysis.blocking)
    # render: one renderer per output family, then a cross-check of what they wrote
    files = render(analysis.valid, analysis.topo, analysis.findings, templates, analysis.plan, progress)
    progress("consistency", 0, 1)
    problems = consistency_findings(analysis.valid, analysis.topo, files)
    progress("consistency", 1, 1)
    if problems:
        raise BlueprintError(problems)
    return with_manifest(files, analysis.valid.source_sha256())


def render_files(valid: ValidBlueprint, templates: Path | None = None) -> dict[str, str]:
    """`render_analysis(analyse(valid))`: for callers that need nothing but the files."""
    return render_analysis(analyse(valid), templates)
