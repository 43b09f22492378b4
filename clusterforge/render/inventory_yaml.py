"""The inventory's YAML text: groups nested as Ansible reads them, every value as one line of JSON.

Written in Python rather than in a recursive template macro: at 100,000 GPUs the inventory has half a
million lines, and a Jinja2 macro call per value costs ten times what this does. Values are JSON with
`<`, `>`, `&` and `'` escaped (as Jinja2's `tojson`), which YAML reads as the same strings, so no name or
address is ever read as another type. A value that holds what starts a Jinja2 template (`{{`, `{%`, `{#`, or
a `#jinja2:` header) is tagged `!unsafe`, so Ansible never templates it; JSON's own braces never form these
pairs. Names are restricted so that no value holds them; this is the second guard.
"""

from __future__ import annotations

import json
from typing import Any

_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "'": "\\u0027"})
_ENCODER = json.JSONEncoder(sort_keys=True)


UNSAFE_TAG = "!unsafe "
_TEMPLATE_MARKS = ("{{", "{%", "{#", "#jinja2:")


def _json(value: Any) -> str:
    text = _ENCODER.encode(value).translate(_ESCAPES)
    return UNSAFE_TAG + text if any(mark in text for mark in _TEMPLATE_MARKS) else text


def _value(key: str, item: Any, pad: str, out: list[str]) -> None:
    if isinstance(item, dict):
        out.append(f"{pad}{key}:{'' if item else ' {}'}")
        out.extend(f"{pad}  {k}: {_json(v)}" for k, v in item.items())
    else:
        out.append(f"{pad}{key}: {_json(item)}")


def _group(name: str, body: dict[str, Any], pad: str, out: list[str]) -> None:
    out.append(f"{pad}{name}:{'' if body else ' {}'}")
    if body.get("vars"):
        out.append(f"{pad}  vars:")
        for key, item in body["vars"].items():
            _value(key, item, pad + "    ", out)
    if body.get("hosts"):
        out.append(f"{pad}  hosts:")
        for host, host_vars in body["hosts"].items():
            out.append(f"{pad}    {host}:{'' if host_vars else ' {}'}")
            for key, item in host_vars.items():
                _value(key, item, pad + "      ", out)
    if body.get("children"):
        out.append(f"{pad}  children:")
        for child, child_body in body["children"].items():
            _group(child, child_body, pad + "    ", out)


def inventory_yaml(inventory: dict[str, Any]) -> str:
    """The groups of `inventory` ({"all": {"children": ...}}) as YAML lines."""
    out: list[str] = []
    for name, body in inventory.items():
        _group(name, body, "", out)
    return "\n".join(out)
