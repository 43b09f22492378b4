"""The stages in order, with an error gate after each: load -> validate -> expand -> check -> render."""

from __future__ import annotations

from pathlib import Path

from .checks import run_checks
from .errors import BlueprintError, Severity
from .expand import expand
from .loader import load_blueprint
from .render import render
from .render.consistency import consistency_findings
from .validate import ValidBlueprint, validate
from .writer import with_manifest


def load_valid(path: Path) -> ValidBlueprint:
    # load: YAML with includes -> raw data + source map (raises BlueprintError)
    loaded = load_blueprint(path)
    # validate: schema, catalog, references (raises BlueprintError with every error found)
    return validate(loaded)


def render_files(valid: ValidBlueprint, templates: Path | None = None) -> dict[str, str]:
    """Every output file of a valid blueprint, with its manifest; raises when a check finds an error."""
    # expand: placement, fabrics, cabling, addresses (raises on errors)
    topo, expand_findings = expand(valid)
    # check: physical and fabric checks; unsuppressed errors stop the render
    findings = run_checks(valid, topo, expand_findings)
    errors = [f for f in findings if f.severity is Severity.ERROR and not f.suppressed_by]
    if errors:
        raise BlueprintError(errors)
    # render: one renderer per output family, then a cross-check of what they wrote
    files = render(valid, topo, findings, templates)
    problems = consistency_findings(valid, topo, files)
    if problems:
        raise BlueprintError(problems)
    return with_manifest(files, valid.source_sha256())
