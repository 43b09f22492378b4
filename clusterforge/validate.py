"""The validate stage: raw data -> a frozen `Blueprint` with its catalog, or every error at once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from pydantic import ValidationError

from . import codes
from .bounds import port_findings, size_findings
from .catalog import Catalog, load_catalog
from .errors import BlueprintError, CatalogError, Finding, Severity
from .inputs import InputPolicy, Reads
from .loader import LoadedBlueprint
from .model import Blueprint
from .references import reference_findings
from .schema_errors import findings_from_validation
from .yamlsafe import SourceMap


@dataclass(frozen=True)
class ValidBlueprint:
    """A blueprint that passed schema and reference checks, with the catalog it was checked against."""

    blueprint: Blueprint
    catalog: Catalog
    sources: SourceMap
    path: Path
    files: tuple[Path, ...] = ()
    """Every file the blueprint was read from: itself, its includes, its catalog files."""
    reads: Reads | None = field(default=None, compare=False, repr=False)
    """The run's reading, which holds the bytes that were validated (None: read the files again)."""

    def source_sha256(self) -> str:
        """One hash over every input file's name (relative to the blueprint) and content, as validated."""
        reads = self.reads or Reads(None)
        digest = hashlib.sha256()
        for path in self.files:
            try:
                name = str(path.resolve().relative_to(self.path.resolve().parent))
            except ValueError:
                name = path.name
            digest.update(name.encode() + b"\0" + reads.again(path) + b"\0")
        return digest.hexdigest()


def _raise_located(loaded: LoadedBlueprint, findings: Iterable[Finding]) -> None:
    located = [replace(f, location=loaded.sources.locate(f.path, key=True)) for f in findings]
    if located:
        raise BlueprintError(located)


def validate(loaded: LoadedBlueprint) -> ValidBlueprint:
    try:
        blueprint = Blueprint.model_validate(loaded.data)
    except ValidationError as exc:
        raise BlueprintError(findings_from_validation(exc, loaded.data, loaded.sources, Blueprint)) from None
    _raise_located(loaded, size_findings(blueprint))
    try:
        reads = loaded.reads or Reads(loaded.policy or InputPolicy.for_blueprint(loaded.path))
        catalog = load_catalog(blueprint.catalog_files(), loaded.path.parent, reads=reads)
    except CatalogError as exc:
        raise BlueprintError(
            [
                replace(f, location=loaded.sources.locate(f.path)) if f.location is None and f.path else f
                for f in exc.findings
            ]
        ) from None
    _raise_located(loaded, port_findings(blueprint, catalog))
    findings = [
        replace(f, location=loaded.sources.locate(f.path, key=f.code == codes.UNKNOWN_NCCL_VARIABLE))
        for f in reference_findings(blueprint, catalog)
    ]
    if any(f.severity is Severity.ERROR for f in findings):
        raise BlueprintError(findings)
    files = (*loaded.files, *(loaded.path.parent / c.path for c in blueprint.catalog_files()))
    return ValidBlueprint(blueprint, catalog, loaded.sources, loaded.path, files, reads)
