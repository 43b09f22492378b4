"""Load a blueprint file and the files it includes into raw data plus a source map."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import codes
from .errors import BlueprintError, DataPath, Finding, Severity, SourceLocation, display_name
from .inputs import InputPolicy, InputRefused
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


def _error(
    code: str, message: str, location: SourceLocation | None, path: DataPath = (), hint: str | None = None
) -> BlueprintError:
    return BlueprintError([Finding(code, Severity.ERROR, message, path, location, hint)])


def _read_file(
    path: Path,
    included_from: SourceLocation | None,
    policy: InputPolicy,
) -> tuple[dict[str, Any], SourceMap]:
    display = display_name(path)
    included_from = included_from or SourceLocation(display, 0, 0)
    try:
        text = policy.read_text(path)
    except InputRefused as exc:
        raise _error(codes.YAML_INCLUDE, f"will not read {display}: {exc}", included_from) from None
    except FileNotFoundError:
        raise _error(codes.YAML_INCLUDE, f"file not found: {display}", included_from) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise _error(codes.YAML_INCLUDE, f"cannot read {display}: {reason}", included_from) from None
    try:
        data, sources = read_yaml(text, display)
    except YamlError as exc:
        raise BlueprintError([exc.finding]) from None
    if not isinstance(data, dict):
        what = "empty" if data is None else f"a {type(data).__name__}"
        raise _error(
            codes.YAML_NOT_A_MAPPING,
            f"a blueprint file must be a mapping of keys to values, this one is {what}",
            SourceLocation(display, 1, 1),
        )
    return data, sources


def load_blueprint(path: Path, allow: Sequence[Path] = ()) -> LoadedBlueprint:
    """Read `path` and merge its includes (depth first, in the order listed); files are read only inside the
    blueprint's repository and the `allow`ed folders."""
    loaded = LoadedBlueprint(path, {}, SourceMap({}, {}), [], InputPolicy.for_blueprint(path, allow))
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
    data, sources = _read_file(path, included_from, loaded.policy or InputPolicy.for_blueprint(loaded.path))
    loaded.files.append(path)
    includes = data.get("include", [])
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        raise _error(
            codes.SCHEMA_TYPE, "include: expected a list of file paths", sources.locate(("include",)), ("include",)
        )
    if chain:
        data.pop("include", None)
    _merge(loaded, data, sources)
    for index, name in enumerate(includes):
        _load_into(loaded, path.parent / name, sources.locate(("include", index)), (*chain, resolved))


def _merge(loaded: LoadedBlueprint, data: dict[str, Any], sources: SourceMap) -> None:
    """Top-level lists are appended, top-level mappings joined key by key; anything else must not repeat."""
    target = loaded.data
    rebase: dict[DataPath, DataPath] = {}
    for key, value in data.items():
        if key not in target:
            target[key] = value
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
