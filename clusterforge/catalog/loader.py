"""Load and merge catalog files into one `Catalog`, reporting every problem with its file and line."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import ValidationError

from .. import codes
from ..errors import CatalogError, Finding, Severity, SourceLocation, display_name
from ..inputs import InputBudgetExceeded, InputPolicy, InputRefused, Reads, read_regular
from ..model.base import _CATALOG_KEY
from ..model.blueprint import CatalogFile
from ..schema_errors import did_you_mean, findings_from_validation
from ..yamlsafe import SourceMap, YamlError, read_shipped_yaml, read_yaml
from . import cache
from .models import ENTRY_TYPES, GPU, NIC, PDU, Equipment, RackType, Server, Sourced, Switch
from .netbox import netbox_entry

DATA_DIR = Path(__file__).parent / "data"
# Order is irrelevant for lookups; it is fixed so that error output is stable.
BUILTIN_FILES = (
    "gpus.yaml",
    "nics.yaml",
    "servers.yaml",
    "switches.yaml",
    "equipment.yaml",
    "racks.yaml",
    "pdus.yaml",
    "cables.yaml",
    "optics.yaml",
    "models.yaml",
    "storage.yaml",
)

E = TypeVar("E", bound=Sourced)
T = TypeVar("T")


@dataclass
class Catalog:
    entries: dict[str, Sourced] = field(default_factory=dict)
    origins: dict[str, SourceLocation] = field(default_factory=dict)
    overridden: dict[str, SourceLocation] = field(default_factory=dict)
    """Built-in keys that a user catalog replaced, with where the replacement is."""

    def get(self, key: str, kind: type[E]) -> E | None:
        entry = self.entries.get(key)
        return entry if isinstance(entry, kind) else None

    def require(self, key: str, kind: type[E]) -> E:
        entry = self.get(key, kind)
        if entry is None:
            raise KeyError(key)
        return entry

    def keys_of(self, kind: type[Sourced]) -> list[str]:
        return sorted(k for k, v in self.entries.items() if isinstance(v, kind))

    def add(self, key: str, entry: Sourced, origin: SourceLocation) -> None:
        if key in self.entries:
            self.overridden[key] = origin
        self.entries[key] = entry
        self.origins[key] = origin


def load_catalog(
    user_files: Iterable[CatalogFile] = (),
    base_dir: Path | None = None,
    policy: InputPolicy | None = None,
    reads: Reads | None = None,
) -> Catalog:
    """Built-in catalog, then each user file in order (later entries replace earlier ones). Files are read
    through `reads` (the run's: each file read once, the run bounded), else through a new one under
    `policy`."""
    builtin, builtin_findings = _builtin()
    catalog = Catalog(dict(builtin.entries), dict(builtin.origins))
    findings = list(builtin_findings)
    reads = reads or Reads(policy)
    for i, spec in enumerate(user_files):
        path = (base_dir or Path.cwd()) / spec.path
        display = display_name(path)
        loaded = (
            _load_netbox(catalog, path, display, spec, reads)
            if spec.format == "netbox"
            else _load_native(catalog, path, display, reads)
        )
        # an unreadable file has no line of its own: the blueprint's entry naming it is the place to fix
        findings += [
            replace(f, path=("catalogs", i), location=None, message=f"{f.message} (catalogs[{i}])")
            if f.code in (codes.CATALOG_UNREADABLE, codes.TOO_MUCH_INPUT)
            else f
            for f in loaded
        ]
        if any(f.code == codes.TOO_MUCH_INPUT for f in loaded):
            break  # every later file would be refused the same way
    if not findings:
        findings += _cross_references(catalog)
    if findings:
        raise CatalogError(findings)
    return catalog


@lru_cache(maxsize=1)
def _builtin() -> tuple[Catalog, list[Finding]]:
    """The shipped catalog, read once per process (its entries are frozen; callers copy the mappings), or
    as read before from the same files by the same code (catalog/cache.py)."""
    texts = [read_regular(DATA_DIR / name)[1] for name in BUILTIN_FILES]
    key = cache.digest(texts)
    cached = cache.load(key)
    if cached is not None:
        return cast(tuple[Catalog, list[Finding]], cached)
    catalog = Catalog()
    findings: list[Finding] = []
    for name, text in zip(BUILTIN_FILES, texts, strict=True):
        display = f"<catalog>/{name}"
        try:
            data, sources = read_shipped_yaml(text.decode("utf-8"), display)
        except YamlError as exc:
            findings.append(exc.finding)
            continue
        findings += _add_sections(catalog, data, sources, display)
    cache.store(key, (catalog, findings))
    return catalog, findings


def _read(path: Path, display: str, reads: Reads, kind: str, parse: Callable[[bytes], T]) -> T:
    """`parse` of the file's bytes, once per run and `kind` (see `Reads.parsed`)."""
    try:
        return reads.parsed(path, f"{kind} catalog {display}", parse)
    except InputBudgetExceeded as exc:
        raise YamlError(_file_error(codes.TOO_MUCH_INPUT, f"will not read {display}: {exc}", display)) from None
    except (OSError, UnicodeDecodeError, InputRefused) as exc:
        reason = (
            exc.strerror
            if isinstance(exc, OSError)
            else "not UTF-8 text"
            if isinstance(exc, UnicodeDecodeError)
            else str(exc)
        )
        raise YamlError(
            _file_error(codes.CATALOG_UNREADABLE, f"cannot read catalog file {display}: {reason}", display)
        ) from None


def _yaml(display: str) -> Callable[[bytes], tuple[Any, SourceMap]]:
    return lambda data: read_yaml(data.decode("utf-8"), display)


def _file_error(code: str, message: str, display: str) -> Finding:
    """An error about a catalog file as a whole (located at its first line)."""
    return Finding(code, Severity.ERROR, message, (), SourceLocation(display, 1, 1))


def _load_native(catalog: Catalog, path: Path, display: str, reads: Reads) -> list[Finding]:
    """The file's entries added to `catalog`; they are read and validated once per run, however often the
    blueprint names the file (a later naming adds them again, so they replace what came between)."""

    def entries(data: bytes) -> tuple[Catalog, list[Finding]]:
        own = Catalog()
        return own, _add_sections(own, *_yaml(display)(data), display)

    try:
        own, findings = _read(path, display, reads, "native", entries)
    except YamlError as exc:
        return [exc.finding]
    for key, entry in own.entries.items():
        catalog.add(key, entry, own.origins[key])
    return findings


def _add_sections(catalog: Catalog, data: Any, sources: SourceMap, display: str) -> list[Finding]:
    if not isinstance(data, dict):
        return [
            _file_error(
                codes.CATALOG_SECTION,
                f"a catalog file must be a mapping of sections ({', '.join(ENTRY_TYPES)})",
                display,
            )
        ]
    findings: list[Finding] = []
    for section, entries in data.items():
        model = ENTRY_TYPES.get(section)
        if model is None:
            guess = did_you_mean(section, list(ENTRY_TYPES))
            findings.append(
                Finding(
                    codes.CATALOG_SECTION,
                    Severity.ERROR,
                    f"unknown catalog section '{section}'" + (f" (did you mean '{guess}'?)" if guess else ""),
                    (section,),
                    sources.locate((section,), key=True),
                    f"sections are: {', '.join(ENTRY_TYPES)}",
                )
            )
            continue
        if not isinstance(entries, dict):
            findings.append(
                Finding(
                    codes.CATALOG_SECTION,
                    Severity.ERROR,
                    f"section '{section}' must map catalog keys to entries",
                    (section,),
                    sources.locate((section,)),
                )
            )
            continue
        for key, raw in entries.items():
            findings += _add_entry(catalog, model, key, raw, sources, (section, key))
    return findings


def _add_entry(
    catalog: Catalog, model: type[Sourced], key: str, raw: Any, sources: SourceMap, path: tuple[str, ...]
) -> list[Finding]:
    origin = sources.locate(path, key=True) or SourceLocation("?", 1, 1)
    if not _CATALOG_KEY.fullmatch(key):
        return [
            Finding(
                codes.CATALOG_KEY,
                Severity.ERROR,
                f"catalog key '{key}' must be 'vendor/model' in lowercase",
                path,
                origin,
            )
        ]
    try:
        entry = model.model_validate(raw)
    except ValidationError as exc:
        return findings_from_validation(exc, raw, sources, model, prefix=path)
    catalog.add(key, entry, origin)
    return []


def _load_netbox(catalog: Catalog, path: Path, display: str, spec: CatalogFile, reads: Reads) -> list[Finding]:
    try:
        data, _ = _read(path, display, reads, "netbox", _yaml(display))
    except YamlError as exc:
        return [exc.finding]
    try:
        key, raw = netbox_entry(data, spec, catalog)
    except ValueError as exc:
        return [_file_error(codes.CATALOG_NETBOX, f"cannot use NetBox device type: {exc}", display)]
    model = ENTRY_TYPES[{"server": "servers", "switch": "switches", "equipment": "equipment"}[spec.kind]]
    return _add_entry(catalog, model, key, raw, SourceMap({(): SourceLocation(display, 1, 1)}, {}), ())


def _pdu_fits(catalog: Catalog, key: str, rack: RackType) -> list[Finding]:
    """A rack type's PDU is made for the rack's feed (voltage, phases, current)."""
    pdu = catalog.entries.get(rack.pdu or "")
    if not isinstance(pdu, PDU) or pdu.feed == rack.feed:
        return []
    return [
        Finding(
            codes.CATALOG_REFERENCE,
            Severity.ERROR,
            f"{key}: PDU '{rack.pdu}' takes {pdu.feed.voltage_v:g} V {pdu.feed.phases}-phase {pdu.feed.current_a:g} A, "
            f"the rack's feed is {rack.feed.voltage_v:g} V {rack.feed.phases}-phase {rack.feed.current_a:g} A",
            (),
            catalog.origins[key],
        )
    ]


def _cross_references(catalog: Catalog) -> list[Finding]:
    findings: list[Finding] = []

    def need(key: str, kind: type[Sourced] | tuple[type[Sourced], ...], owner: str, what: str) -> None:
        if not isinstance(catalog.entries.get(key), kind):
            kinds = kind if isinstance(kind, tuple) else (kind,)
            guess = did_you_mean(key, [k for c in kinds for k in catalog.keys_of(c)])
            findings.append(
                Finding(
                    codes.CATALOG_REFERENCE,
                    Severity.ERROR,
                    f"{owner}: unknown {what} '{key}'" + (f" (did you mean '{guess}'?)" if guess else ""),
                    (),
                    catalog.origins[owner],
                )
            )

    for key, entry in sorted(catalog.entries.items()):
        if isinstance(entry, Server):
            if entry.gpus:
                need(entry.gpus.model, GPU, key, "GPU model")
            if entry.rack_type:
                need(entry.rack_type, RackType, key, "rack type")
        if isinstance(entry, Server | Switch):
            for group in entry.ports:
                if group.nic:
                    need(group.nic, NIC, key, "NIC model")
        if isinstance(entry, RackType):
            _rack_type_references(key, entry, need)
            findings += _pdu_fits(catalog, key, entry)
    return findings


def _rack_type_references(key: str, rack: RackType, need: Callable[..., None]) -> None:
    """A rack type's built-in devices and PDU are catalog entries of their kinds."""
    for fixed in rack.fixed_devices:
        need(fixed.model, (Equipment, Switch), key, "equipment or switch model")
    if rack.pdu:
        need(rack.pdu, PDU, key, "PDU model")
