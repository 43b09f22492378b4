"""The inventory's text: JSON that Ansible's yaml inventory plugin reads with a JSON parser.

Layout, chosen by measurement at 100,000 GPUs (docs/ansible-at-scale.md): one JSON file, not YAML (Ansible
reads a JSON inventory with `json.loads`, its YAML reader is many times slower), and host vars that every
host of its defining group (node group or switch tier) shares written once, as that group's vars. Only
what differs per host stays with the host. A value is moved only when no other group's vars name it, so
what each host resolves to is unchanged.

A string that holds what starts a Jinja2 template (`{{`, `{%`, `{#`, or a `#jinja2:` header) is written as
`{"__ansible_unsafe": "..."}`, which Ansible's JSON reader loads as an unsafe value it never templates.
Names are restricted so that no key holds them; a key that does is refused (the second guard).
`<`, `>`, `&` and `'` are escaped as Jinja2's `tojson` does.

Each group's members and each host's vars are one line, so a diff of two renders shows hosts, not
fragments of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import repeat
from json.encoder import encode_basestring_ascii  # what json.dumps does with a str
from typing import Any

_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "'": "\\u0027"})
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(", ", ": "))
_TEMPLATE_MARKS = ("{{", "{%", "{#", "#jinja2:")
UNSAFE_KEY = "__ansible_unsafe"


def _templated(text: str) -> bool:
    return any(mark in text for mark in _TEMPLATE_MARKS)


def _safe(value: Any) -> Any:
    """`value` with every string that holds template syntax wrapped as Ansible's unsafe value."""
    if isinstance(value, str):
        return {UNSAFE_KEY: value} if _templated(value) else value
    if isinstance(value, dict):
        for key in value:
            if _templated(str(key)):
                raise ValueError(f"inventory key {key!r} holds template syntax")
        return {str(k): _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    return value


def json_value(value: Any) -> str:
    """`value` as compact JSON, keys sorted, template syntax wrapped as unsafe, HTML-unsafe characters escaped.
    JSON's own syntax never holds a template mark, so only a value whose text has one is walked."""
    text = _ENCODER.encode(value)
    if _templated(text):
        text = _ENCODER.encode(_safe(value))
    return text.translate(_ESCAPES) if _escaped(text) else text


def plain(text: str) -> bool:
    """Whether a JSON text is what `json_value` writes as it is: no template syntax, nothing to escape."""
    return not _templated(text) and not _escaped(text)


def _escaped(text: str) -> bool:
    """Whether `text` has a character `_ESCAPES` replaces (translate looks up every character; this does not)."""
    return "<" in text or ">" in text or "&" in text or "'" in text


def json_lines(items: list[tuple[str, Any]], pad: str) -> list[str]:
    """`<pad>"<name>": <value>` for each (name, value), the value as `json_value` writes it. Encoded one by
    one, the values are looked over for template syntax and characters to escape all at once, and one by one
    only when some value has them."""
    names, values = [name for name, _ in items], [value for _, value in items]
    texts = ["{}" if value == {} else _ENCODER.encode(value) for value in values]
    every = "".join(texts)
    if _templated(every) or _escaped(every):
        texts = list(map(json_value, values))
    return [f"{pad}{name}: {text}" for name, text in zip(map(encode_basestring_ascii, names), texts, strict=True)]


def _vars_names(group: dict[str, Any]) -> Iterator[str]:
    yield from group.get("vars") or {}
    for child in (group.get("children") or {}).values():
        yield from _vars_names(child)


_ABSENT = object()
_EXACT = (str, int, bool, type(None))


def _all_equal(value: Any, others: list[Any]) -> bool:
    """Every one of `others` is `value` (as JSON: 1 and True differ, key order does not)."""
    if others.count(value) != len(others):  # (count compares with ==, in C)
        return False
    if type(value) in _EXACT and list(map(type, others)).count(type(value)) == len(others):
        return True  # equal values of one of these types are the same JSON
    text = _ENCODER.encode(value)
    return all(_ENCODER.encode(other) == text for other in others)


def _factor(group: dict[str, Any], taken: frozenset[str]) -> dict[str, Any]:
    """`group` with the host vars all its hosts share (and no group's vars name) moved to its vars."""
    hosts = group.get("hosts") or {}
    out = dict(group)
    if len(hosts) > 1 and all(hosts.values()):
        first = next(iter(hosts.values()))
        values = list(hosts.values())
        shared = [
            k
            for k in first
            if k not in taken and _all_equal(first[k], list(map(dict.get, values, repeat(k), repeat(_ABSENT))))
        ]
        if shared:
            out["vars"] = {**(group.get("vars") or {}), **{k: first[k] for k in shared}}
            out["hosts"] = {name: {k: v for k, v in host.items() if k not in shared} for name, host in hosts.items()}
    if group.get("children"):
        out["children"] = {name: _factor(child, taken) for name, child in group["children"].items()}
    return out


def factored(inventory: dict[str, Any]) -> dict[str, Any]:
    """The inventory with shared host vars written once per defining group."""
    taken = frozenset(name for group in inventory.values() for name in _vars_names(group))
    return {name: _factor(group, taken) for name, group in inventory.items()}


def _group(name: str, body: dict[str, Any], pad: str, out: list[str]) -> None:
    parts: list[tuple[str, list[str]]] = []
    if body.get("vars"):
        parts.append(("vars", json_lines(list(body["vars"].items()), f"{pad}    ")))
    if body.get("hosts"):
        parts.append(("hosts", json_lines(list(body["hosts"].items()), f"{pad}    ")))
    if not parts and not body.get("children"):
        out.append(f"{pad}{json.dumps(name)}: {{}}")
        return
    out.append(f"{pad}{json.dumps(name)}: {{")
    for index, (key, lines) in enumerate(parts):
        out.append(f"{pad}  {json.dumps(key)}: {{")
        out.append(",\n".join(lines))
        out.append(f"{pad}  }}{',' if index < len(parts) - 1 or body.get('children') else ''}")
    if body.get("children"):
        out.append(f'{pad}  "children": {{')
        children = list(body["children"].items())
        for index, (child, child_body) in enumerate(children):
            _group(child, child_body, pad + "    ", out)
            if index < len(children) - 1:
                out[-1] += ","
        out.append(f"{pad}  }}")
    out.append(f"{pad}}}")


def inventory_json(inventory: dict[str, Any]) -> str:
    """The groups of `inventory` ({"all": {"children": ...}}), shared host vars factored, as JSON text."""
    return factored_json(factored(inventory))


def factored_json(inventory: dict[str, Any]) -> str:
    """A `factored` inventory as JSON text."""
    out: list[str] = ["{"]
    groups = list(inventory.items())
    for index, (name, body) in enumerate(groups):
        _group(name, body, "  ", out)
        if index < len(groups) - 1:
            out[-1] += ","
    out.append("}")
    return "\n".join(out)
