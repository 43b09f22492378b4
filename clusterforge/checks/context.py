"""What every check gets: the valid blueprint, its topology, per-rack figures, and finding helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from ..errors import DataPath, Finding, Severity
from ..expand.ports import booked_ports
from ..expand.topology import Topology
from ..validate import ValidBlueprint
from .figures import RackFigures, rack_figures


@dataclass
class CheckContext:
    valid: ValidBlueprint
    topo: Topology
    figures: dict[str, RackFigures] = field(init=False)

    def __post_init__(self) -> None:
        self.figures = rack_figures(self.valid.blueprint, self.valid.catalog, self.topo)

    @cached_property
    def booked(self) -> dict[str, dict[str, tuple[float, int]]]:
        """Switch -> port group -> (native ports booked, native ports), by expansion's booking rule."""
        return booked_ports(self.topo, self.valid.catalog)

    @cached_property
    def _row_index(self) -> dict[str, int]:
        return {row.name: i for i, row in enumerate(self.valid.blueprint.floor.rows)}

    def rack_path(self, rack: str) -> DataPath:
        """The blueprint row that creates `rack` (a rack has no line of its own)."""
        return ("floor", "rows", self._row_index[self.topo.racks[rack].row])

    def group_path(self, group: str) -> DataPath:
        for i, g in enumerate(self.valid.blueprint.node_groups):
            if g.name == group:
                return ("node_groups", i)
        return ()

    def finding(
        self, code: str, severity: Severity, message: str, path: DataPath, subject: str | None, hint: str | None = None
    ) -> Finding:
        return Finding(code, severity, message, path, self.valid.sources.locate(path), hint, subject)


def shown(names: list[str], counted: bool = False) -> str:
    """The first three names of a finding's list, then ", ..." (with `counted`, ", ... (N)") when there are more."""
    if len(names) <= 3:
        return ", ".join(names)
    return ", ".join(names[:3]) + (f", ... ({len(names)})" if counted else ", ...")
