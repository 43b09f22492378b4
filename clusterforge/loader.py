"""Load a blueprint file and the files it includes into raw data plus a source map."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import codes
from .errors import BlueprintError, DataPath, Finding, Severity, SourceLocation, display_name
from .inputs import InputBudgetExceeded, InputPolicy, InputRefused, Reads
from .yamlsafe import SourceMap, YamlError, read_yaml

MAX_INCLUDE_DEPTH = 8


@dataclass
class LoadedBlueprint:
    path: Path
    """The main blueprint file."""
    data: dict[str, Any]
    sources: SourceMap
    files: list[Path]
    """Every file read, the main one first, then includes in the order they were merged."""
    policy: InputPolicy | None = None
    """Which files the blueprint may read (includes here, catalogs in the validate stage); None: the files
    inside the blueprint's repository."""
    reads: Reads | None = None
    """The run's reading (each file read once, the run's reads bounded), which the validate stage goes on
    with for the catalogs; None: a new one under `policy`."""


def _error(
    code: str, message: str, location: SourceLocation | None, path: DataPath = (), hint: str | None = None
) -> BlueprintError:
    return BlueprintError([Finding(code, Severity.ERROR, message, path, location, hint)])


def _read_file(path: Path, included_from: SourceLocation | None, reads: Reads) -> tuple[dict[str, Any], SourceMap]:
    """The file's data and source map, parsed once per run however often it is included (shared: not to be
    changed)."""
    display = display_name(path)
    included_from = included_from or SourceLocation(display, 0, 0)
    try:
        return reads.parsed(path, f"blueprint {display}", lambda data: _parse(data, display))
    except InputBudgetExceeded as exc:
        raise _error(codes.TOO_MUCH_INPUT, f"will not read {display}: {exc}", included_from) from None
    except InputRefused as exc:
        raise _error(codes.YAML_INCLUDE, f"will not read {display}: {exc}", included_from) from None
    except FileNotFoundError:
        raise _error(codes.YAML_INCLUDE, f"file not found: {display}", included_from) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise _error(codes.YAML_INCLUDE, f"cannot read {display}: {reason}", included_from) from None


def _parse(data: bytes, display: str) -> tuple[dict[str, Any], SourceMap]:
    try:
        parsed, sources = read_yaml(data.decode("utf-8"), display)
    except YamlError as exc:
        raise BlueprintError([exc.finding]) from None
    if not isinstance(parsed, dict):
        what = "empty" if parsed is None else f"a {type(parsed).__name__}"
        raise _error(
            codes.YAML_NOT_A_MAPPING,
            f"a blueprint file must be a mapping of keys to values, this one is {what}",
            SourceLocation(display, 1, 1),
        )
    return parsed, sources


def load_blueprint(path: Path, allow: Sequence[Path] = ()) -> LoadedBlueprint:
    """Read `path` and merge its includes (depth first, in the order listed); files are read only inside the
    blueprint's repository and the `allow`ed folders."""
    policy = InputPolicy.for_blueprint(path, allow)
    loaded = LoadedBlueprint(path, {}, SourceMap({}, {}), [], policy, Reads(policy))
    _load_into(loaded, path, None, ())
    return loaded


def _load_into(
    loaded: LoadedBlueprint, path: Path, included_from: SourceLocation | None, chain: tuple[Path, ...]
) -> None:
    resolved = path.resolve()
    if resolved in chain:
        raise _error(
            codes.YAML_INCLUDE,
            f"include cycle: {' -> '.join(display_name(p) for p in (*chain, resolved))}",
            included_from,
        )
    if len(chain) > MAX_INCLUDE_DEPTH:
        raise _error(codes.YAML_INCLUDE, f"includes nest deeper than {MAX_INCLUDE_DEPTH} levels", included_from)
    if loaded.reads is None:
        loaded.reads = Reads(loaded.policy or InputPolicy.for_blueprint(loaded.path))
    data, sources = _read_file(path, included_from, loaded.reads)
    loaded.files.append(path)
    includes = data.get("include", [])
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        raise _error(
            codes.SCHEMA_TYPE, "include: expected a list of file paths", sources.locate(("include",)), ("include",)
        )
    _merge(loaded, {k: v for k, v in data.items() if k != "include"} if chain else data, sources)
    for index, name in enumerate(includes):
        _load_into(loaded, path.parent / name, sources.locate(("include", index)), (*chain, resolved))


def _merge(loaded: LoadedBlueprint, data: dict[str, Any], sources: SourceMap) -> None:
    """Top-level lists are appended, top-level mappings joined key by key; anything else must not repeat.
    `data` is not changed (a file included twice is parsed once)."""
    target = loaded.data
    rebase: dict[DataPath, DataPath] = {}
    for key, value in data.items():
        if key not in target:
            target[key] = list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value
            continue
        here = sources.locate((key,), key=True)
        first = loaded.sources.locate((key,), key=True)
        if isinstance(target[key], list) and isinstance(value, list):
            offset = len(target[key])
            rebase.update({(key, i): (key, i + offset) for i in range(len(value))})
            target[key].extend(value)
        elif isinstance(target[key], dict) and isinstance(value, dict):
            for sub in value:
                if sub in target[key]:
                    first = loaded.sources.locate((key, sub), key=True)
                    raise _error(
                        codes.YAML_INCLUDE_CONFLICT,
                        f"'{key}.{sub}' is defined twice (first at {first})",
                        sources.locate((key, sub), key=True),
                        (key, sub),
                        "an included file may add entries to a mapping but not redefine one",
                    )
            target[key].update(value)
        else:
            raise _error(
                codes.YAML_INCLUDE_CONFLICT,
                f"'{key}' is defined in more than one file (first at {first})",
                here,
                (key,),
                "only lists and mappings may be spread over several files",
            )
    loaded.sources.update(sources, rebase)
