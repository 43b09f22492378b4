"""Name patterns such as `gpu{index:03d}`: checked once, then expanded without `eval` or attribute access."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping

_HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def check_pattern(pattern: str, allowed: set[str], literal: str = r"[A-Za-z0-9_-]*") -> str:
    """Raise ValueError unless `pattern` uses only `allowed` fields, plainly ({name} or {name:spec}), and its
    literal text fullmatches `literal` (so the names it makes stay plain names: no '/', '.', spaces)."""
    if len(pattern) > 64:
        raise ValueError("a name pattern is at most 64 characters")
    try:
        parts = list(string.Formatter().parse(pattern))
    except ValueError as exc:
        raise ValueError(f"malformed name pattern: {exc}") from None
    for text, field, spec, conversion in parts:
        if not re.fullmatch(literal, text):
            raise ValueError(f"the text {text!r} in the name pattern may hold only letters, digits, '-' and '_'")
        if field is None:
            continue
        if field not in allowed or conversion:
            names = ", ".join("{" + name + "}" for name in sorted(allowed))
            raise ValueError(f"unknown field '{{{field}}}' in name pattern; use {names}")
        if spec and not re.fullmatch(r"0?\d{0,2}d?", spec):
            raise ValueError(f"unsupported format '{spec}' for {{{field}}}; use e.g. {{{field}:03d}}")
    return pattern


def expand_pattern(pattern: str, fields: Mapping[str, str | int]) -> str:
    return pattern.format_map(fields)


def is_hostname(name: str) -> bool:
    """RFC 1123 label, lowercase: valid for DNS, Slurm and Ansible alike."""
    return bool(_HOSTNAME.fullmatch(name))
