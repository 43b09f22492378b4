"""Cross-checks of the rendered files: host names, counts and addresses agree across families."""

from __future__ import annotations

from ..errors import Finding
from ..expand.topology import Topology
from ..validate import ValidBlueprint


def consistency_findings(valid: ValidBlueprint, topo: Topology, files: dict[str, str]) -> list[Finding]:
    return []
