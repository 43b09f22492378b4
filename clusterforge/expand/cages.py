"""Where a port sits physically: its cage, its place in the cage, and what the cage can carry.

A twin-port OSFP cage holds two ports ('ib3/1', 'ib3/2'), a split cage four ('swp1s0'..'swp1s3'), a
twin-port cage split again eight ('ib5s0' is the first half of native port 5, in cage 3). A port's
electrical lanes are the cage's lanes shared by the ports the cage runs at the link's speed; its lane rate
is at most the port group's (or the cage type's) fastest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..catalog.models import Device as CatalogDevice
from ..catalog.models import PortGroup
from .ports import cage_split

CAGE_LANES = {
    "osfp": 8,
    "qsfp-dd": 8,
    "qsfp112": 4,
    "qsfp56": 4,
    "qsfp28": 4,
    "qsfp+": 4,
    "sfp56": 1,
    "sfp28": 1,
    "sfp+": 1,
    "sfp": 1,
    "rj45": 1,
}
"""Electrical lanes of a cage type (QSFP: quad, OSFP and QSFP-DD: octal)."""
MAX_LANE_GBPS = {
    "osfp": 100,
    "qsfp112": 100,
    "qsfp-dd": 50,
    "qsfp56": 50,
    "sfp56": 50,
    "qsfp28": 25,
    "sfp28": 25,
    "qsfp+": 10,
    "sfp+": 10,
    "sfp": 1,
    "rj45": 10,
}
"""Fastest lane rate of a cage type's generation (SFF/OSFP MSA: QSFP112 4 x 100G, QSFP56 4 x 50G, QSFP28
4 x 25G); a port group sets `lane_gbps` for faster ports (XDR's 200G lanes)."""
LANE_RATES = (200, 100, 50, 25, 10, 1)
PLUGS_TAKEN = {"qsfp112": ("qsfp112", "qsfp28"), "qsfp56": ("qsfp56", "qsfp28")}
"""Plugs a cage takes besides its own: QSFP112 and QSFP56 cages take QSFP28 plugs and run them at 4 x 25G NRZ
(NVIDIA DGX BasePOD RA, Table 1: the DGX B200's QSFP112 BlueField-3 ports on the SN4600C QSFP28 management
fabric)."""


def plug_fits_cage(connector: str, cage: str) -> bool:
    return connector in PLUGS_TAKEN.get(cage, (cage,))


_PORT = re.compile(r"^(?P<prefix>.*?)(?P<native>\d+)?(?:/(?P<slot>\d+)|s(?P<sub>\d+))?$")


@dataclass(frozen=True, slots=True)
class EndSpec:
    """What one link end plugs into, shared by every end alike in model, port group and speed."""

    cage: str
    """Cage type: osfp, qsfp112, sfp28, rj45, ..."""
    top: str
    """The plug top the cage takes: 'finned' (air-cooled switch), 'flat' (adapter, liquid-cooled switch)."""
    lanes: int
    """Electrical lanes the port may use: the cage's lanes over the ports it runs at this speed."""
    max_lane_gbps: int
    ports_per_cage: int
    switch: bool

    def lane_options(self, speed: float) -> list[tuple[int, int]]:
        """(lane rate, lanes) the port can run `speed` as, fastest lanes first."""
        out = []
        for rate in LANE_RATES:
            lanes = speed / rate
            if rate <= self.max_lane_gbps and lanes == int(lanes) and 1 <= lanes <= self.lanes:
                out.append((rate, int(lanes)))
        return out

    def text(self) -> str:
        shared = f", {self.ports_per_cage} ports per cage" if self.ports_per_cage > 1 else ""
        return f"{self.cage.upper()}{shared}"


def port_group(entry: CatalogDevice, port: str) -> PortGroup | None:
    """The port group a port name belongs to (the longest group-name prefix)."""
    groups = [g for g in entry.ports if port.startswith(g.name)]
    return max(groups, key=lambda g: len(g.name)) if groups else None


def natives_per_cage(group: PortGroup) -> int:
    return group.count // group.cages if group.cages and group.cages < group.count else 1


@lru_cache(maxsize=65536)
def cage_and_slot(port: str, group_name: str, per_cage: int, split: int) -> tuple[int, int]:
    """The port's cage (1-based) in its group and its place in the cage (0-based), from its name:
    'ib3/2' is cage 3, place 1; 'swp2s3' (4-way split) cage 2, place 3; 'ib5s1' on a twin-port group split
    in two is cage 3, place 1; 'ib4' on a group of 2 ports per cage is cage 2, place 1."""
    match = _PORT.match(port[len(group_name) :])
    if match is None or match.group("native") is None:
        return 1, 0
    native = int(match.group("native"))
    if match.group("slot") is not None:
        return native, int(match.group("slot")) - 1
    sub = int(match.group("sub")) if match.group("sub") is not None else 0
    cage, within = divmod(native - 1, per_cage)
    return cage + 1, within * split + sub


def end_spec(entry: CatalogDevice, group: PortGroup | None, speed: float, switch: bool) -> EndSpec:
    if group is None:
        return EndSpec("", "any", 1, 0, 1, switch)
    split = cage_split(group, speed)[0] if speed < group.speed_gbps else 1
    ports = natives_per_cage(group) * split
    cage_lanes = CAGE_LANES.get(group.cage, 1)
    lanes = max(1, cage_lanes // ports)
    liquid = entry.cooling.method == "liquid"
    top = "finned" if switch and not liquid else "flat"
    return EndSpec(group.cage, top, lanes, group.lane_gbps or MAX_LANE_GBPS.get(group.cage, 1), ports, switch)
