"""What the cabling plan and the bill of materials share: one cable row per link, with its ends, optics and cable.

Everything here is computed from the Topology and the catalog; the renderers only lay it out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..catalog import CableMedia
from ..catalog.models import Device as CatalogDevice
from ..catalog.models import PortGroup
from ..expand.topology import Device, Link, Topology
from ..validate import ValidBlueprint

TIER_ORDER = {"node-leaf": 0, "leaf-spine": 1, "spine-core": 2, "oob-uplink": 3, "oob": 4, "mgmt": 5}

# Electrical lane rate of each cage generation (Gb/s): an optic's lane count, and so its name and fibre,
# follows from the port speed over this. The catalog's MMF/SMF media say only "multimode/single-mode
# transceivers", so the optic family is inferred here (an estimate, reported as such in the BOM).
LANE_GBPS = {"osfp": 100, "qsfp112": 100, "qsfp-dd": 50, "qsfp56": 50, "sfp56": 50, "qsfp28": 25, "sfp28": 25,
             "qsfp+": 10, "sfp+": 10, "sfp": 1}
OPTIC_SOURCE = "estimate: optic family inferred from port speed and media (IEEE 802.3 / MSA names)"

_PORT = re.compile(r"^(?P<prefix>.*?)(?P<native>\d+)(?:/(?P<slot>\d+)|s(?P<sub>\d+))?$")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """'ib10/2' sorts after 'ib2/1': digits compare as numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part)


def speed_text(gbps: float) -> str:
    return f"{gbps:g}G"


@dataclass(frozen=True, slots=True)
class End:
    """One end of a cable: where it plugs in, and what plugs into the port."""

    row: str
    rack: str
    u: int | None
    device: str
    model: str
    port: str
    cage: str
    """Cage type of the port (osfp, qsfp112, rj45, ...)."""
    cage_id: str
    """The physical cage on the device ('ib3' for ib3/1 and ib3/2, 'swp1' for swp1s0..swp1s3)."""
    ports_per_cage: int
    """Logical ports sharing the cage at this link's speed (2 for a twin-port OSFP, 4 for a 4-way split)."""
    transceiver: str
    """Module in the cage, for optical media ('' otherwise)."""
    transceiver_key: str


@dataclass(frozen=True, slots=True)
class CableRow:
    label: str
    fabric: str
    tier: str
    rail: int | None
    a: End
    b: End
    speed_gbps: float
    media: str
    """Catalog label: DAC, ACC, AOC, MMF, SMF, Cat6a ('' for a link that was not cabled)."""
    media_key: str
    optical: bool
    cable: str
    """What to order for the run itself: the copper/AOC assembly or the fibre (without length)."""
    length_class_m: float
    length_m: float


def port_group(entry: CatalogDevice, port: str) -> PortGroup | None:
    groups = [g for g in entry.ports if port.startswith(g.name)]
    return max(groups, key=lambda g: len(g.name)) if groups else None


def _cage_id(port: str) -> str:
    match = _PORT.match(port)
    return f"{match.group('prefix')}{match.group('native')}" if match else port


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


def transceiver_name(media: str, cage: str, speed: float, ports: int, code: str) -> str:
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


def _end_text(end: End) -> str:
    shared = f" ({end.ports_per_cage} ports per cage)" if end.ports_per_cage > 1 else ""
    return f"{end.cage.upper()}{shared}"


def cable_name(media: CableMedia | None, label: str, speed: float, a: End, b: End) -> str:
    if media is not None and media.transceiver:
        return fibre_name(label, max(lanes(a.cage, speed), lanes(b.cage, speed)))
    if label == "Cat6a":
        return "Cat6a RJ45 patch cord"
    ends = sorted((_end_text(a), _end_text(b)))
    return f"{speed_text(speed)} {ends[0]} to {ends[1]} {label}"


class CableBuilder:
    """Turns links into CableRows, looking up cages and media in the catalog once per model and port group."""

    def __init__(self, valid: ValidBlueprint, topo: Topology):
        self.topo = topo
        self.catalog = valid.catalog
        self.media: dict[str, tuple[str, CableMedia]] = {}
        for key in self.catalog.keys_of(CableMedia):
            entry = self.catalog.entries[key]
            if isinstance(entry, CableMedia):
                self.media.setdefault(entry.label, (key, entry))

    def _group(self, device: Device, port: str) -> PortGroup | None:
        entry = self.catalog.entries.get(device.model)
        return port_group(entry, port) if isinstance(entry, CatalogDevice) else None

    def _end(self, device: Device, port: str, speed: float, optical_media: str, code: str) -> End:
        group = self._group(device, port)
        cage = group.cage if group else ""
        per_cage = _ports_per_cage(group, speed)
        rack = self.topo.racks.get(device.rack) if device.rack else None
        transceiver = key = ""
        if optical_media:
            transceiver = transceiver_name(optical_media, cage, speed, per_cage, code)
            key = (f"{self.media[optical_media][0]}:{cage}:{speed_text(speed * per_cage)}:"
                   f"{per_cage}x{speed_text(speed)}:{code.lower()}")
        return End(row=rack.row if rack else "", rack=device.rack or "", u=device.u, device=device.name,
                   model=device.model, port=port, cage=cage, cage_id=_cage_id(port), ports_per_cage=per_cage,
                   transceiver=transceiver, transceiver_key=key)

    def row(self, link: Link, label: str) -> CableRow:
        key, media = self.media.get(link.media, ("", None))
        optical = bool(media and media.transceiver)
        optic = link.media if optical else ""
        a_dev, b_dev = self.topo.devices[link.a], self.topo.devices[link.b]
        # both ends of an optical link run the same optic: the lane count of the end with slower lanes
        group_a, group_b = self._group(a_dev, link.a_port), self._group(b_dev, link.b_port)
        lane_count = max(lanes(g.cage if g else "", link.speed_gbps) for g in (group_a, group_b))
        code = optic_code(optic, lane_count, link.speed_gbps) if optic else ""
        a = self._end(a_dev, link.a_port, link.speed_gbps, optic, code)
        b = self._end(b_dev, link.b_port, link.speed_gbps, optic, code)
        cable = cable_name(media, link.media, link.speed_gbps, a, b) if link.media else ""
        return CableRow(label=label, fabric=link.fabric, tier=link.tier, rail=link.rail, a=a, b=b,
                        speed_gbps=link.speed_gbps, media=link.media, media_key=key, optical=optical, cable=cable,
                        length_class_m=link.length_class_m, length_m=link.length_m)


def _place_key(topo: Topology, device: Device, port: str) -> tuple[object, ...]:
    rack = topo.racks.get(device.rack) if device.rack else None
    where = (rack.row_index, rack.position, rack.name) if rack else (1 << 30, 0, "")
    return (*where, device.u or 0, natural_key(device.name), natural_key(port))


def cable_rows(valid: ValidBlueprint, topo: Topology) -> list[CableRow]:
    """Every link once, in a fixed order (fabric in blueprint order, tier, then A end and B end by floor
    position, U and port), labelled `<fabric>-<n>` counting from 1 within each fabric."""
    fabric_order = {name: i for i, name in enumerate(valid.blueprint.fabrics)}

    def key(link: Link) -> tuple[object, ...]:
        return (fabric_order.get(link.fabric, len(fabric_order)), link.fabric, TIER_ORDER.get(link.tier, 9),
                _place_key(topo, topo.devices[link.a], link.a_port),
                _place_key(topo, topo.devices[link.b], link.b_port))

    ordered = sorted(topo.links, key=key)
    per_fabric: dict[str, int] = {}
    for link in ordered:
        per_fabric[link.fabric] = per_fabric.get(link.fabric, 0) + 1
    width = max([5, *(len(str(n)) for n in per_fabric.values())])
    builder = CableBuilder(valid, topo)
    rows, seen = [], dict.fromkeys(per_fabric, 0)
    for link in ordered:
        seen[link.fabric] += 1
        rows.append(builder.row(link, f"{link.fabric}-{seen[link.fabric]:0{width}d}"))
    return rows
