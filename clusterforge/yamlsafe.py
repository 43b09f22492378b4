"""A strict YAML reader: YAML 1.2-style scalars, no duplicate keys, bounded size, line numbers kept.

PyYAML's SafeLoader follows YAML 1.1, where `1:1` is the integer 61 and `no` is False. In a blueprint
those readings are always mistakes, so scalars are resolved as in YAML 1.2's core schema and
everything else stays a string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from . import codes
from .errors import DataPath, Finding, Severity, SourceLocation
from .inputs import MAX_FILE_BYTES

MAX_NODES = 500_000  # counted with aliases expanded, so a "billion laughs" document stops early
MAX_DEPTH = 32  # a blueprint nests about 6 deep; a recursive alias nests forever


class StrictResolverLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema implicit typing."""


StrictResolverLoader.yaml_implicit_resolvers = {}
_RESOLVERS = [
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:merge", r"^(?:<<)$", "<"),
]
for _tag, _pattern, _first in _RESOLVERS:
    StrictResolverLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    """YAML 1.2 core integers: decimal (`010` is ten), `0o` octal, `0x` hex; PyYAML would read `010` as 8."""
    text = str(loader.construct_scalar(node))
    body = text.lstrip("+-")
    sign = -1 if text.startswith("-") else 1
    if body[:2] in ("0o", "0x"):
        return sign * int(body[2:], 8 if body[1] == "o" else 16)
    return sign * int(body, 10)


StrictResolverLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


@dataclass
class SourceMap:
    """Where each value of a loaded document came from, keyed by data path."""

    values: dict[DataPath, SourceLocation]
    keys: dict[DataPath, SourceLocation]

    def locate(self, path: DataPath, *, key: bool = False) -> SourceLocation | None:
        """The location of `path`, or of its nearest ancestor that has one."""
        table = self.keys if key else self.values
        for end in range(len(path), -1, -1):
            found = table.get(path[:end]) or self.values.get(path[:end])
            if found:
                return found
        return None

    def update(self, other: SourceMap, rebase: dict[DataPath, DataPath] | None = None) -> None:
        """Add `other`'s locations (paths moved by `rebase`); locations already known are kept."""
        for mine, theirs in ((self.values, other.values), (self.keys, other.keys)):
            for path, loc in theirs.items():
                mine.setdefault(_rebase(path, rebase or {}), loc)


def _rebase(path: DataPath, rebase: dict[DataPath, DataPath]) -> DataPath:
    for old, new in rebase.items():
        if path[: len(old)] == old:
            return new + path[len(old) :]
    return path


class YamlError(Exception):
    def __init__(self, finding: Finding):
        self.finding = finding
        super().__init__(finding.as_text())


def _loc(display: str, mark: yaml.Mark) -> SourceLocation:
    return SourceLocation(display, mark.line + 1, mark.column + 1)


def _fail(
    code: str, message: str, location: SourceLocation | None, path: DataPath = (), hint: str | None = None
) -> YamlError:
    return YamlError(Finding(code, Severity.ERROR, message, path, location, hint))


class _Builder:
    """Turns a composed YAML node tree into plain Python data plus a source map."""

    def __init__(self, display: str, loader: yaml.constructor.SafeConstructor):
        self.display = display
        self.loader = loader
        self.nodes = 0
        self.sources = SourceMap({}, {})

    def build(self, node: yaml.Node, path: DataPath) -> Any:
        self.nodes += 1
        if len(path) > MAX_DEPTH:
            raise _fail(
                codes.YAML_TOO_LARGE,
                f"values nest deeper than {MAX_DEPTH} levels (or an alias refers to itself)",
                _loc(self.display, node.start_mark),
                path[:MAX_DEPTH],
            )
        if self.nodes > MAX_NODES:
            raise _fail(
                codes.YAML_TOO_LARGE,
                f"document expands to more than {MAX_NODES} values "
                "(too many aliases, or a file far larger than a blueprint)",
                _loc(self.display, node.start_mark),
                path,
            )
        self.sources.values[path] = _loc(self.display, node.start_mark)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise _fail(
                codes.YAML_SYNTAX, f"cannot read value: {exc.problem}", _loc(self.display, node.start_mark), path
            ) from None
        except (ValueError, TypeError, OverflowError):
            raise _fail(
                codes.YAML_SYNTAX,
                f"cannot read {node.tag.rsplit(':', 1)[-1]} value {_short(node.value)}",
                _loc(self.display, node.start_mark),
                path,
            ) from None

    def _mapping(self, node: yaml.MappingNode, path: DataPath) -> dict[str, Any]:
        """Integer keys (port speeds) become strings; models convert them back where they want ints."""
        result: dict[str, Any] = {}
        explicit: set[str] = set()
        merged: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged.update(self._merge_source(value_node, path))
                continue
            key = self._key(key_node, path)
            if isinstance(key, int) and not isinstance(key, bool):
                key = str(key)
            if not isinstance(key, str):
                raise _fail(
                    codes.YAML_SYNTAX,
                    f"mapping keys must be strings, got {key!r}",
                    _loc(self.display, key_node.start_mark),
                    path,
                )
            if key in explicit:
                raise _fail(
                    codes.YAML_DUPLICATE_KEY,
                    f"duplicate key '{key}'",
                    _loc(self.display, key_node.start_mark),
                    (*path, key),
                    "each key may appear once in a mapping; remove or rename one of them",
                )
            explicit.add(key)
            self.sources.keys[(*path, key)] = _loc(self.display, key_node.start_mark)
            result[key] = self.build(value_node, (*path, key))
        for key, value in merged.items():
            if key not in result:
                result[key] = value
        return result

    def _key(self, node: yaml.Node, path: DataPath) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise _fail(
                codes.YAML_SYNTAX,
                "mapping keys must be strings, not lists or mappings",
                _loc(self.display, node.start_mark),
                path,
            )
        try:
            return self.loader.construct_object(node)
        except (yaml.constructor.ConstructorError, ValueError, TypeError, OverflowError):
            raise _fail(
                codes.YAML_SYNTAX, f"cannot read key {_short(node.value)}", _loc(self.display, node.start_mark), path
            ) from None

    def _merge_source(self, node: yaml.Node, path: DataPath) -> dict[str, Any]:
        sources = node.value if isinstance(node, yaml.SequenceNode) else [node]
        merged: dict[str, Any] = {}
        for source in reversed(sources):
            if not isinstance(source, yaml.MappingNode):
                raise _fail(
                    codes.YAML_SYNTAX,
                    "a merge key '<<' must refer to a mapping",
                    _loc(self.display, source.start_mark),
                    path,
                )
            merged.update(self._mapping(source, path))
        return merged


def read_yaml(text: str, display: str) -> tuple[Any, SourceMap]:
    """Parse one YAML document into data and a source map; raise YamlError on any problem."""
    if len(text.encode()) > MAX_FILE_BYTES:
        raise _fail(
            codes.YAML_TOO_LARGE,
            f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB",
            SourceLocation(display, 1, 1),
        )
    try:
        loader = StrictResolverLoader(text)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (controls, NUL, surrogates)
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - text.rfind("\n", 0, exc.position)
        character = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise _fail(
            codes.YAML_SYNTAX,
            f"the character U+{character:04X} is not allowed in YAML",
            SourceLocation(display, line, column),
            hint="remove it; a blueprint is plain UTF-8 text",
        ) from None
    try:
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        location = _loc(display, mark) if mark else SourceLocation(display, 1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        raise _fail(codes.YAML_SYNTAX, f"YAML syntax error: {problem}", location) from None
    except yaml.YAMLError as exc:
        raise _fail(codes.YAML_SYNTAX, f"YAML syntax error: {exc}", SourceLocation(display, 1, 1)) from None
    except RecursionError:
        raise _fail(
            codes.YAML_TOO_LARGE, "values nest too deeply to be a blueprint", SourceLocation(display, 1, 1)
        ) from None
    finally:
        loader.dispose()
    if root is None:
        return None, SourceMap({}, {})
    builder = _Builder(display, loader)
    try:
        return builder.build(root, ()), builder.sources
    except RecursionError:
        raise _fail(
            codes.YAML_TOO_LARGE, "values nest too deeply to be a blueprint", SourceLocation(display, 1, 1)
        ) from None


class _LibyamlStrictLoader(yaml.CSafeLoader):
    """StrictResolverLoader's scalar resolution and constructors over libyaml's parser (marks included)."""

    yaml_implicit_resolvers = StrictResolverLoader.yaml_implicit_resolvers
    yaml_constructors = StrictResolverLoader.yaml_constructors


def read_shipped_yaml(text: str, display: str) -> tuple[Any, SourceMap]:
    """`read_yaml` for the files that ship with clusterforge (the built-in catalog): the same data and source
    map, parsed by libyaml where PyYAML has it (some ten times faster); any problem is left to `read_yaml` to
    report, so its messages are the same."""
    if not yaml.__with_libyaml__:
        return read_yaml(text, display)
    loader = _LibyamlStrictLoader(text)
    try:
        root = loader.get_single_node()
        builder = _Builder(display, loader)
        return (builder.build(root, ()), builder.sources) if root is not None else (None, SourceMap({}, {}))
    except (yaml.YAMLError, YamlError, RecursionError):
        return read_yaml(text, display)
    finally:
        loader.dispose()


def _short(value: object) -> str:
    """A value for a message: repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
