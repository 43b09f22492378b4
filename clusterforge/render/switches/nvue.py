"""switches output family: per Ethernet fabric switch (RoCE compute, storage, in-band leaves, spines and
cores) its NVUE configuration, the YAML `nv config apply` reads (render/switches/nvue_model.py builds it).

The YAML is written by hand rather than by a YAML library, to print it as NVUE itself does (`enable: on`
plain, VLAN and priority keys quoted) and to quote every MAC address (a YAML 1.1 reader takes
44:38:39:00:00:01 for a base-60 number).
"""

from __future__ import annotations

import json
import re
from typing import Any

from .. import paths
from ..context import RenderContext
from .nvue_model import CUMULUS_RELEASE, SwitchConfigs

_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*|[0-9][0-9./]*/[0-9]+|[0-9]+(\.[0-9]+){3}|[0-9]+[A-Za-z]+")
"""Scalars printed without quotes: names, addresses, prefixes, speeds and breakouts (25G, 2x)."""


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        raise TypeError("NVUE takes on/off, not booleans")
    if isinstance(value, int):
        return str(value)
    text = str(value)
    return text if _PLAIN.fullmatch(text) else json.dumps(text)


def _key(key: str) -> str:
    return key if _PLAIN.fullmatch(key) and not key.isdigit() else json.dumps(key)


def to_yaml(value: dict[str, Any], indent: int) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    for key, item in value.items():
        if isinstance(item, dict) and item:
            lines.append(f"{pad}{_key(key)}:")
            lines += to_yaml(item, indent + 2)
        elif isinstance(item, dict):
            lines.append(f"{pad}{_key(key)}: {{}}")
        else:
            lines.append(f"{pad}{_key(key)}: {_scalar(item)}")
    return lines


def render_switches(ctx: RenderContext) -> dict[str, str]:
    configs = SwitchConfigs(ctx.valid, ctx.topo)
    files: dict[str, str] = {}
    for switch in configs.switches():
        header = [
            f"# clusterforge: NVUE configuration of {switch.name} ({switch.group} {switch.role}, {switch.model})",
            f"# for Cumulus Linux {CUMULUS_RELEASE} (NVUE object model of 5.14 and earlier: `enable: on`,",
            "# `lacp-bypass: on`; 5.15 renamed such settings to `state: enabled`, `lacp-bypass: enabled`: this",
            "# file is not for 5.15 and later)",
            "# apply on the switch: nv config replace FILE && nv config apply",
            "- set:",
        ]
        files[paths.nvue_config(switch.name)] = "\n".join([*header, *to_yaml(configs.config(switch), 4)]) + "\n"
    return dict(sorted(files.items()))
