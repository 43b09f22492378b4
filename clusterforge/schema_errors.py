"""Turn pydantic validation errors into compiler-style findings with file:line and "did you mean"."""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from . import codes
from .errors import DataPath, Finding, Severity, format_path
from .yamlsafe import SourceMap

_CODES = {
    "extra_forbidden": codes.SCHEMA_UNKNOWN_KEY,
    "missing": codes.SCHEMA_MISSING,
    "literal_error": codes.SCHEMA_CHOICE,
    "union_tag_invalid": codes.SCHEMA_CHOICE,
    "union_tag_not_found": codes.SCHEMA_MISSING,
    "greater_than": codes.SCHEMA_RANGE,
    "greater_than_equal": codes.SCHEMA_RANGE,
    "less_than": codes.SCHEMA_RANGE,
    "less_than_equal": codes.SCHEMA_RANGE,
    "too_short": codes.SCHEMA_RANGE,
    "too_long": codes.SCHEMA_RANGE,
    "string_pattern_mismatch": codes.SCHEMA_VALUE,
    "value_error": codes.SCHEMA_VALUE,
    "assertion_error": codes.SCHEMA_VALUE,
}
TYPE_ERROR = codes.SCHEMA_TYPE


def did_you_mean(word: str, choices: Sequence[str]) -> str | None:
    import difflib  # here: only a mistake needs it, and every command's start-up would pay for it

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None


def data_path(loc: tuple[str | int, ...], data: Any, absent_leaf: bool = False) -> DataPath:
    """Drop the parts of a pydantic location that are not in the data (union tags, model names).

    With `absent_leaf`, the last part is kept even when the data lacks it (a missing field).
    """
    path: list[str | int] = []
    node = data
    for i, part in enumerate(loc):
        last = absent_leaf and i == len(loc) - 1
        if isinstance(node, dict) and isinstance(part, str) and (part in node or last):
            path.append(part)
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            path.append(part)
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, int):
            # integer-like mapping keys (e.g. breakout speeds) arrive as strings in the data
            path.append(str(part))
            node = node.get(str(part))
    return tuple(path)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _models_in(args[0])
    if origin in (typing.Union, types.UnionType, list, dict, tuple):
        found: list[type[BaseModel]] = []
        for arg in args[-1:] if origin is dict else args:
            found.extend(_models_in(arg))
        return found
    return []


def _candidates_at(root: type[BaseModel], loc: tuple[str | int, ...]) -> list[type[BaseModel]]:
    """The model classes that may apply at `loc` (loc as pydantic gives it, union tags included)."""
    candidates: list[type[BaseModel]] = [root]
    for part in loc:
        if isinstance(part, int):
            continue
        next_candidates: list[type[BaseModel]] = []
        for model in candidates:
            field = model.model_fields.get(part)
            if field is not None:
                next_candidates.extend(_models_in(field.annotation))
        tagged = [m for m in candidates if _tag_of(m) == part]
        if tagged:
            candidates = tagged
        elif next_candidates:
            candidates = next_candidates
        else:
            # a mapping key (fabric name, catalog key): the value type stays the candidates' own
            continue
    return candidates


def _model_at(root: type[BaseModel], loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    candidates = _candidates_at(root, loc)
    return candidates[0] if len(candidates) == 1 else None


def _tag_of(model: type[BaseModel]) -> str | None:
    field = model.model_fields.get("kind")
    if field is None:
        return None
    args = typing.get_args(field.annotation)
    return args[0] if len(args) == 1 and isinstance(args[0], str) else None


def _message(error: ErrorDetails, path: DataPath, root: type[BaseModel], prefix: DataPath) -> tuple[str, str | None]:
    kind = error["type"]
    if kind == "union_tag_not_found":
        return f"missing required field 'kind' in {format_path((*prefix, *path))}", _kinds_hint(root, error)
    path = (*prefix, *path)
    where = format_path(path) or "the document"
    if kind == "extra_forbidden":
        key = str(path[-1]) if path else "?"
        parent = format_path(path[:-1]) or "the top level"
        model = _model_at(root, error["loc"][:-1])
        fields = sorted(model.model_fields) if model else []
        guess = did_you_mean(key, fields)
        message = f"unknown key '{key}' in {parent}"
        if guess:
            return f"{message} (did you mean '{guess}'?)", None
        return message, (f"expected one of: {', '.join(fields)}" if fields else None)
    if kind in ("literal_error", "union_tag_invalid", "enum"):
        return _choice_message(error, path, where)
    if kind == "missing":
        parent = format_path(path[:-1]) or "the top level"
        return f"missing required field '{path[-1] if path else '?'}' in {parent}", None
    text = error["msg"]
    if kind in ("value_error", "assertion_error"):
        text = text.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    value = error.get("input")
    shown = f" (got {value!r})" if isinstance(value, str | int | float | bool) and kind != "value_error" else ""
    return f"{where}: {text[0].lower() + text[1:]}{shown}", None


def _kinds_hint(root: type[BaseModel], error: ErrorDetails) -> str | None:
    tags = sorted(filter(None, (_tag_of(m) for m in _candidates_at(root, error["loc"]))))
    return f"kind is one of: {', '.join(tags)}" if tags else None


def _choice_message(error: ErrorDetails, path: DataPath, where: str) -> tuple[str, str | None]:
    """'expected one of' messages with a "did you mean" for near misses."""
    ctx = error.get("ctx") or {}
    expected_text = str(ctx.get("expected") or ctx.get("expected_tags") or "")
    choices = re.findall(r"'([^']*)'", expected_text) or re.findall(r"(\d+)", expected_text)
    got = ctx.get("tag", error.get("input"))
    guess = did_you_mean(str(got), choices) if isinstance(got, str) else None
    field = "kind" if error["type"] == "union_tag_invalid" else str(path[-1]) if path else "value"
    message = f"{where}: invalid {field} {got!r}"
    if guess:
        return f"{message} (did you mean '{guess}'?)", None
    return message, f"expected one of: {', '.join(choices)}" if choices else None


def findings_from_validation(
    exc: ValidationError, data: Any, sources: SourceMap, root: type[BaseModel], prefix: DataPath = ()
) -> list[Finding]:
    findings: list[Finding] = []
    seen: set[tuple[DataPath, str]] = set()
    for error in exc.errors(include_url=False):
        path = data_path(error["loc"], data, absent_leaf=error["type"] == "missing")
        message, hint = _message(error, path, root, prefix)
        if error["type"] == "union_tag_invalid":
            path = (*path, "kind")
        if (path, message) in seen:
            continue
        seen.add((path, message))
        full = (*prefix, *path)
        is_key = error["type"] == "extra_forbidden"
        location = sources.locate(full, key=is_key)
        findings.append(Finding(_CODES.get(error["type"], TYPE_ERROR), Severity.ERROR, message, full, location, hint))
    return findings
