"""State shared by the expanders while one topology is built."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import Catalog, Server, Switch
from ..errors import DataPath, Finding, Severity
from ..lockfile import Keep
from ..model import Blueprint
from ..validate import ValidBlueprint
from .ports import PortAllocator
from .topology import Topology


@dataclass
class ExpandContext:
    valid: ValidBlueprint
    topo: Topology
    findings: list[Finding] = field(default_factory=list)
    allocators: dict[tuple[str, str], PortAllocator] = field(default_factory=dict)
    """(device, port group name) -> allocator, for switches whose ports are being handed out."""
    keep: Keep = field(default_factory=Keep)
    """The lock file's identities and what the render allows to change (expand/identity.py)."""
    held_ports: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    """With a lock file: device -> the (switch, port) a fabric booked for it and left uncabled, where the lock
    holds a port of a device that is gone or an out-of-band uplink wired later (oob.py takes those)."""
    pins: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Device -> (rack, lowest U) the lock file holds for it, with its slot kept free for it alone
    (placement.pin_slots); empty without a lock file."""
    trunks_as_held: list[range] = field(default_factory=list)
    """Indexes into `topo.links` of switch-to-switch links the lock file's `trunks` hold as they are (a mesh
    kept_mesh.py checked whole): trunk_moves.py counts them as staying without reading them again."""

    @property
    def bp(self) -> Blueprint:
        return self.valid.blueprint

    @property
    def catalog(self) -> Catalog:
        return self.valid.catalog

    def server(self, model: str) -> Server:
        return self.catalog.require(model, Server)

    def switch(self, model: str) -> Switch:
        return self.catalog.require(model, Switch)

    def report(self, code: str, severity: Severity, message: str, path: DataPath, hint: str | None = None) -> None:
        self.findings.append(Finding(code, severity, message, path, self.valid.sources.locate(path), hint))

    def error(self, code: str, message: str, path: DataPath, hint: str | None = None) -> None:
        self.report(code, Severity.ERROR, message, path, hint)

    def warning(self, code: str, message: str, path: DataPath, hint: str | None = None) -> None:
        self.report(code, Severity.WARNING, message, path, hint)

    @property
    def failed(self) -> bool:
        return any(f.severity is Severity.ERROR for f in self.findings)
