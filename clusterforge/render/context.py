"""What every renderer gets, and small helpers they share."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hostlist

from ..errors import Finding
from ..expand.topology import Topology
from ..validate import ValidBlueprint
from .jinja import render_template


@dataclass(frozen=True)
class RenderContext:
    valid: ValidBlueprint
    topo: Topology
    findings: list[Finding]
    templates: Path | None = None
    """A site's template folder, searched before the shipped templates."""

    def render(self, template: str, model: dict[str, Any]) -> str:
        return render_template(template, model, self.templates)


def host_range(names: list[str]) -> str:
    """`gpu[001-032]` for Slurm and humans; the order of `names` does not matter."""
    return str(hostlist.collect_hostlist(sorted(names)))


def ansible_name(text: str) -> str:
    """A valid Ansible group or variable name: letters, digits and underscores, not starting with a digit."""
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in text.lower())
    return clean if clean and not clean[0].isdigit() else f"_{clean}"
