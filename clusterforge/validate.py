"""The validate stage: raw data -> a frozen `Blueprint` with its catalog, or every error at once."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import codes
from .bounds import port_findings, size_findings
from .catalog import Catalog, RackType, Server, Sourced, load_catalog
from .errors import BlueprintError, CatalogError, DataPath, Finding, Severity
from .inputs import InputPolicy, Reads
from .loader import LoadedBlueprint
from .model import Blueprint
from .references import catalog_ref, reference_findings
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


def _without_unknown_keys(data: Any, schema: list[Finding]) -> Any:
    """A copy of the raw data without the keys the schema did not know (CF-SCHEMA-001)."""
    pruned = copy.deepcopy(data)
    for finding in schema:
        if finding.code != codes.SCHEMA_UNKNOWN_KEY or not finding.path:
            continue
        parent = pruned
        for step in finding.path[:-1]:
            if isinstance(parent, dict):
                parent = parent.get(step)
            elif isinstance(parent, list) and isinstance(step, int) and 0 <= step < len(parent):
                parent = parent[step]
            else:
                parent = None
        if isinstance(parent, dict):
            parent.pop(finding.path[-1], None)
    return pruned


CATALOG_KEYS: tuple[tuple[str, str, type[Sourced], str], ...] = (
    ("node_groups", "model", Server, "server model"),
    ("floor.rows", "rack_type", RackType, "rack type"),
)
"""Raw-data places that name catalog entries, checked when the schema fails: (list, field, kind, what)."""


def _later_findings(loaded: LoadedBlueprint, schema: list[Finding]) -> list[Finding]:
    """What the later rounds (sizes, catalog, references) find although the schema failed, so one run shows
    every error: in full when only unknown keys failed it (the blueprint without them is checked), else the
    catalog keys of the raw data against the built-in catalog."""
    pruned = _without_unknown_keys(loaded.data, schema)
    try:
        Blueprint.model_validate(pruned)
    except ValidationError:
        return _raw_catalog_findings(loaded)
    try:
        validate(replace(loaded, data=pruned))
    except BlueprintError as exc:
        return exc.findings
    return []


def _raw_catalog_findings(loaded: LoadedBlueprint) -> list[Finding]:
    catalog = load_catalog()
    found: list[Finding] = []
    data = loaded.data if isinstance(loaded.data, dict) else {}
    for where, key_field, kind, what in CATALOG_KEYS:
        items: Any = data
        for step in where.split("."):
            items = items.get(step) if isinstance(items, dict) else None
        for i, item in enumerate(items if isinstance(items, list) else []):
            key = item.get(key_field) if isinstance(item, dict) else None
            if isinstance(key, str):
                path: DataPath = (*where.split("."), i, key_field)
                found += [
                    replace(f, location=loaded.sources.locate(path))
                    for f in catalog_ref(catalog, key, kind, what, path)
                ]
    return found


def validate(loaded: LoadedBlueprint) -> ValidBlueprint:
    try:
        blueprint = Blueprint.model_validate(loaded.data)
    except ValidationError as exc:
        schema = findings_from_validation(exc, loaded.data, loaded.sources, Blueprint)
        raise BlueprintError([*schema, *_later_findings(loaded, schema)]) from None
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
