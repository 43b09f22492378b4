"""What a link is built from: the module in the cage at each end and the cable between them, worked out
from the catalog's port groups and cable media. A cluster has a few hundred kinds of link (models, port
groups, speed, media), so each kind is worked out once and its LinkParts shared by all its links.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalog import CableMedia
from ..catalog.models import Device as CatalogDevice
from ..catalog.models import PortGroup
from ..validate import ValidBlueprint

# Electrical lane rate of each cage generation (Gb/s): an optic's lane count, and so its name and fibre,
# follows from the port speed over this. The catalog's MMF/SMF media say only "multimode/single-mode
# transceivers", so the optic family is inferred here (an estimate, reported as such in the BOM).
LANE_GBPS = {
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
}
OPTIC_SOURCE = "estimate: optic family inferred from port speed and media (IEEE 802.3 / MSA names)"


def speed_text(gbps: float) -> str:
    return f"{gbps:g}G"


@dataclass(frozen=True, slots=True, eq=False)
class PortModule:
    """A link end's port and what plugs into it, shared by every end alike in model, port group, speed and optic."""

    model: str
    """Catalog key of the device the port is on."""
    cage: str
    """Cage type of the port (osfp, qsfp112, rj45, ...)."""
    ports_per_cage: int
    """Logical ports sharing the cage at this link's speed (2 for a twin-port OSFP, 4 for a 4-way split)."""
    transceiver: str
    """Module in the cage, for optical media ('' otherwise)."""
    transceiver_key: str


@dataclass(frozen=True, slots=True, eq=False)
class LinkParts:
    """What a kind of link is built from: the modules at both ends and the cable between them."""

    speed_gbps: float
    media: str
    """Catalog label: DAC, ACC, AOC, MMF, SMF, Cat6a ('' for a link that was not cabled)."""
    a: PortModule
    b: PortModule
    media_key: str
    """Catalog key of the cable media ('' for a link that was not cabled)."""
    optical: bool
    cable: str
    """What to order for the run itself: the copper/AOC assembly or the fibre (without length)."""


def port_group(entry: CatalogDevice, port: str) -> PortGroup | None:
    groups = [g for g in entry.ports if port.startswith(g.name)]
    return max(groups, key=lambda g: len(g.name)) if groups else None


def _ports_per_cage(group: PortGroup | None, speed: float) -> int:
    if group is None:
        return 1
    cages = group.cages or group.count
    return max(1, group.ports_at(speed) // cages) if group.ports_at(speed) else 1


def lanes(cage: str, speed: float) -> int:
    """Optical lanes of one port: 400G on OSFP is 4 x 100G, 100G on QSFP28 is 4 x 25G."""
    return max(1, math.ceil(speed / LANE_GBPS.get(cage, speed)))


def optic_code(media: str, n: int, speed: float) -> str:
    """IEEE-style reach code for n lanes: SR/SR4/SR8 on multimode; LR (slow serial), DR/DR4/DR8 on single-mode."""
    if media == "MMF":
        return "SR" if n == 1 else f"SR{n}"
    if n == 1:
        return "DR" if speed >= 100 else "LR"
    return f"DR{n}"


def transceiver_name(cage: str, speed: float, ports: int, code: str) -> str:
    """'400G OSFP SR4', or '800G OSFP 2x400G SR4 (twin-port)' when several ports share the cage's module."""
    cage_text = cage.upper()
    if ports == 1:
        return f"{speed_text(speed)} {cage_text} {code}"
    kind = "twin-port" if ports == 2 else f"{ports}-way breakout"
    return f"{speed_text(speed * ports)} {cage_text} {ports}x{speed_text(speed)} {code} ({kind})"


def fibre_name(media: str, lane_count: int) -> str:
    """The patch cord between two optics: one lane takes an LC duplex cord, up to four an MPO-12, eight an MPO-16."""
    connector = "LC duplex" if lane_count == 1 else "MPO-12" if lane_count <= 4 else "MPO-16"
    if media == "MMF":
        return f"OM4 {connector} multimode fibre"
    return f"OS2 {connector}{' APC' if lane_count > 1 else ''} single-mode fibre"


def _end_text(module: PortModule) -> str:
    shared = f" ({module.ports_per_cage} ports per cage)" if module.ports_per_cage > 1 else ""
    return f"{module.cage.upper()}{shared}"


def cable_name(media: CableMedia | None, label: str, speed: float, a: PortModule, b: PortModule) -> str:
    if media is not None and media.transceiver:
        return fibre_name(label, max(lanes(a.cage, speed), lanes(b.cage, speed)))
    if label == "Cat6a":
        return "Cat6a RJ45 patch cord"
    ends = sorted((_end_text(a), _end_text(b)))
    return f"{speed_text(speed)} {ends[0]} to {ends[1]} {label}"


class PartsCatalog:
    """Works out LinkParts from the catalog: cages, optics and cable for a kind of link. Alike modules are
    one PortModule object."""

    def __init__(self, valid: ValidBlueprint):
        self.catalog = valid.catalog
        self.media: dict[str, tuple[str, CableMedia]] = {}
        for key in self.catalog.keys_of(CableMedia):
            entry = self.catalog.entries[key]
            if isinstance(entry, CableMedia):
                self.media.setdefault(entry.label, (key, entry))
        self.modules: dict[tuple[str, str, int, str, str], PortModule] = {}
        self.groups: dict[tuple[str, str], tuple[int, PortGroup | None]] = {}
        self.by_group: dict[tuple[str, int, str, int, float, str], LinkParts] = {}

    def _group(self, model: str, port: str) -> tuple[int, PortGroup | None]:
        """The port group of `port` on `model`, and its place in the model's groups (-1 for none)."""
        if (model, port) not in self.groups:
            entry = self.catalog.entries.get(model)
            index, group = -1, None
            if isinstance(entry, CatalogDevice) and (group := port_group(entry, port)) is not None:
                index = next(i for i, g in enumerate(entry.ports) if g is group)
            self.groups[(model, port)] = (index, group)
        return self.groups[(model, port)]

    def _module(
        self,
        model: str,
        group: PortGroup | None,
        speed: float,
        optical_media: str,
        code: str,
    ) -> PortModule:
        cage = group.cage if group else ""
        per_cage = _ports_per_cage(group, speed)
        transceiver = key = ""
        if optical_media:
            transceiver = transceiver_name(cage, speed, per_cage, code)
            key = (
                f"{self.media[optical_media][0]}:{cage}:{speed_text(speed * per_cage)}:"
                f"{per_cage}x{speed_text(speed)}:{code.lower()}"
            )
        fields = (model, cage, per_cage, transceiver, key)
        if fields not in self.modules:  # one object per module, so that ends compare by identity
            self.modules[fields] = PortModule(*fields)
        return self.modules[fields]

    def parts(self, a_model: str, a_port: str, b_model: str, b_port: str, speed: float, label: str) -> LinkParts:
        (a_index, group_a), (b_index, group_b) = self._group(a_model, a_port), self._group(b_model, b_port)
        kind = (a_model, a_index, b_model, b_index, speed, label)
        if kind not in self.by_group:  # the ports of a group make the same parts
            self.by_group[kind] = self._parts(a_model, group_a, b_model, group_b, speed, label)
        return self.by_group[kind]

    def _parts(
        self, a_model: str, group_a: PortGroup | None, b_model: str, group_b: PortGroup | None, speed: float, label: str
    ) -> LinkParts:
        key, media = self.media.get(label, ("", None))
        optical = bool(media and media.transceiver)
        optic = label if optical else ""
        # both ends of an optical link run the same optic: the lane count of the end with slower lanes
        lane_count = max(lanes(g.cage if g else "", speed) for g in (group_a, group_b))
        code = optic_code(optic, lane_count, speed) if optic else ""
        a = self._module(a_model, group_a, speed, optic, code)
        b = self._module(b_model, group_b, speed, optic, code)
        cable = cable_name(media, label, speed, a, b) if label else ""
        return LinkParts(speed_gbps=speed, media=label, a=a, b=b, media_key=key, optical=optical, cable=cable)


class LinkKinds(dict[tuple[str, str, str, str, float, str], LinkParts]):
    """The LinkParts of each kind of link (A model and port, B model and port, speed, media), worked out
    on first use."""

    def __init__(self, valid: ValidBlueprint) -> None:
        super().__init__()
        self.catalog = PartsCatalog(valid)

    def __missing__(self, kind: tuple[str, str, str, str, float, str]) -> LinkParts:
        parts = self[kind] = self.catalog.parts(*kind)
        return parts
