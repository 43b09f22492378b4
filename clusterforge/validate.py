"""The validate stage: raw data -> a frozen `Blueprint` with its catalog, or every error at once."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from . import codes
from .bounds import port_findings, size_findings
from .catalog import Catalog, load_catalog
from .errors import BlueprintError, CatalogError, Finding, Severity
from .inputs import InputPolicy
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

    def source_sha256(self) -> str:
        """One hash over every input file's name (relative to the blueprint) and content."""
        digest = hashlib.sha256()
        for path in self.files:
            try:
                name = str(path.resolve().relative_to(self.path.resolve().parent))
            except ValueError:
                name = path.name
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
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
        policy = loaded.policy or InputPolicy.for_blueprint(loaded.path)
        catalog = load_catalog(blueprint.catalog_files(), loaded.path.parent, policy)
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
    catalog_files = tuple(loaded.path.parent / c.path for c in blueprint.catalog_files())
    return ValidBlueprint(blueprint, catalog, loaded.sources, loaded.path, (*loaded.files, *catalog_files))
