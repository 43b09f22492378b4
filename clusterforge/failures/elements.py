"""Every element that can fail, by class, each with a signature: elements of one signature (the spines of a
Clos, the racks of one layout) fail alike, so the analysis looks at one of each (docs/failures.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import get_args

from ..model.resilience import ElementKind
from .baseline import Baseline
from .effects import Failure

KINDS: tuple[str, ...] = get_args(ElementKind)
"""Element classes in report order: the fabric, then power and cooling, then space."""

KIND_TITLES = {
    "leaf": "leaf switch",
    "spine": "spine switch",
    "core": "core switch",
    "oob-switch": "out-of-band switch",
    "bundle": "cable bundle (rack to rack)",
    "subnet-manager": "subnet manager",
    "node": "node",
    "psu": "PSU",
    "pdu": "PDU (one rack feed)",
    "feed": "feed (hall-wide)",
    "cdu": "CDU (one row's coolant)",
    "rack": "rack",
    "row": "row",
    "power-shelf": "NVL72 power shelf",
    "switch-tray": "NVL72 NVLink switch tray",
}


@dataclass(frozen=True)
class Candidate:
    failure: Failure
    signature: tuple[object, ...]


def candidates(base: Baseline, kind: str) -> Iterator[Candidate]:
    yield from _MAKERS[kind](base, kind)


def _rack_signatures(base: Baseline) -> dict[str, tuple[object, ...]]:
    """Rack -> its rack type and the devices in it by model, role and group (worked out once per analysis)."""
    if base.rack_signatures:
        return base.rack_signatures
    devices = base.topo.devices
    out: dict[str, tuple[object, ...]] = {}
    for rack, names in base.rack_devices.items():
        kinds = Counter((devices[n].model, devices[n].role, devices[n].group) for n in names)
        out[rack] = (base.topo.racks[rack].type_key, tuple(sorted(kinds.items(), key=repr)))
    base.rack_signatures = out
    return out


def _switches(base: Baseline, kind: str) -> Iterator[Candidate]:
    for fabric in base.fabrics.values():
        for switch, tier in fabric.switches.items():
            if tier != kind:
                continue
            around = fabric.neighbours.get(switch, [])
            shape = (fabric.name, tier, fabric.leaf_ports.get(switch, 0), len(around), len({n for n, _ in around}))
            rack = base.topo.devices[switch].rack
            yield Candidate(Failure(kind, switch, frozenset({switch}), racks=(rack,) if rack else ()), shape)


def _oob(base: Baseline, kind: str) -> Iterator[Candidate]:
    for device in base.topo.devices.values():
        if device.kind == "switch" and device.role == "oob":
            rack = (device.rack,) if device.rack else ()
            yield Candidate(
                Failure(kind, device.name, frozenset({device.name}), racks=rack),
                (device.model, len(base.oob_ports.get(device.name, ()))),
            )


def _bundles(base: Baseline, kind: str) -> Iterator[Candidate]:
    links = base.topo.links
    for (a, b), indexes in base.bundles.items():
        tiers: Counter[tuple[str, str]] = Counter()
        for i in indexes:
            tiers[(links[i].fabric, links[i].tier)] += 1
        yield Candidate(Failure(kind, f"{a}~{b}", links=frozenset(indexes), racks=(a, b)), tuple(sorted(tiers.items())))


def _managers(base: Baseline, kind: str) -> Iterator[Candidate]:
    for device in base.topo.devices.values():
        if device.kind == "node" and device.role == "subnet-manager":
            rack = (device.rack,) if device.rack else ()
            yield Candidate(Failure(kind, device.name, frozenset({device.name}), racks=rack), (device.name,))


def _nodes(base: Baseline, kind: str) -> Iterator[Candidate]:
    """Every node but the subnet managers (a class of their own); a Slurm controller is a signature of its own."""
    slurm = base.valid.blueprint.slurm
    controllers = set(slurm.controllers) if slurm else set()
    for device in base.topo.devices.values():
        if device.kind == "node" and device.role != "subnet-manager":
            rack = (device.rack,) if device.rack else ()
            shape = (device.group, device.model, device.name in base.domain_of, device.name in controllers)
            yield Candidate(Failure(kind, device.name, frozenset({device.name}), racks=rack), shape)


def _psus(base: Baseline, kind: str) -> Iterator[Candidate]:
    devices = base.topo.devices
    for name, (count, rating) in base.psus.items():
        device = devices[name]
        shape = (device.model, device.device_class, count, rating, base.draw_w.get(name, 0.0))
        rack = (device.rack,) if device.rack else ()
        yield Candidate(Failure(kind, f"{name}:psu1", psus=frozenset({(name, 1)}), racks=rack), shape)


def _pdus(base: Baseline, kind: str) -> Iterator[Candidate]:
    racks = _rack_signatures(base)
    for pdu, psus in base.outlets.items():
        rack = base.topo.devices[psus[0][0]].rack or ""
        yield Candidate(
            Failure(kind, pdu, psus=frozenset(psus), feeds=((rack, 1),), racks=(rack,)),
            (racks.get(rack), pdu.rsplit("-", 1)[-1]),
        )


def _feeds(base: Baseline, kind: str) -> Iterator[Candidate]:
    for feed, pdus in base.feeds.items():
        psus = frozenset(p for pdu in pdus for p in base.outlets[pdu])
        racks = tuple(sorted({base.topo.devices[base.outlets[pdu][0][0]].rack or "" for pdu in pdus}))
        yield Candidate(
            Failure(kind, f"feed {feed}", psus=psus, feeds=tuple((r, 1) for r in racks), racks=racks), (feed,)
        )


def _cdus(base: Baseline, kind: str) -> Iterator[Candidate]:
    for row in base.valid.blueprint.floor.rows:
        if row.cdu_kw is None:
            continue
        racks = tuple(base.row_racks.get(row.name, ()))
        yield Candidate(Failure(kind, f"{row.name}-CDU", uncooled=frozenset(racks), racks=racks), (row.name,))


def _racks(base: Baseline, kind: str) -> Iterator[Candidate]:
    signatures = _rack_signatures(base)
    for rack in base.topo.racks:
        devices = frozenset(base.rack_devices.get(rack, ()))
        if devices:
            yield Candidate(
                Failure(kind, rack, devices, racks=(rack,)), (signatures[rack], _switch_shape(base, devices))
            )


def _switch_shape(base: Baseline, devices: frozenset[str]) -> tuple[object, ...]:
    """The fabric switches among `devices`, as the node ports they carry (racks of switches differ by them)."""
    shape = []
    for fabric in base.fabrics.values():
        for switch in sorted(devices & fabric.switches.keys()):
            shape.append((fabric.name, fabric.switches[switch], fabric.leaf_ports.get(switch, 0)))
    return tuple(sorted(shape))


def _rows(base: Baseline, kind: str) -> Iterator[Candidate]:
    signatures = _rack_signatures(base)
    for row, racks in base.row_racks.items():
        devices = frozenset(d for r in racks for d in base.rack_devices.get(r, ()))
        if devices:
            shape = (tuple(sorted((signatures.get(r, ()) for r in racks), key=repr)), _switch_shape(base, devices))
            yield Candidate(Failure(kind, f"row {row}", devices, racks=tuple(racks)), shape)


def _shelves(base: Baseline, kind: str) -> Iterator[Candidate]:
    signatures = _rack_signatures(base)
    for rack, shelves in base.shelves.items():
        for shelf in shelves:
            yield Candidate(Failure(kind, shelf, frozenset({shelf}), racks=(rack,)), (signatures[rack],))


def _trays(base: Baseline, kind: str) -> Iterator[Candidate]:
    signatures = _rack_signatures(base)
    for rack, trays in base.switch_trays.items():
        for tray in trays:
            yield Candidate(Failure(kind, tray, frozenset({tray}), racks=(rack,)), (signatures[rack],))


_MAKERS = {
    "leaf": _switches,
    "spine": _switches,
    "core": _switches,
    "oob-switch": _oob,
    "bundle": _bundles,
    "subnet-manager": _managers,
    "node": _nodes,
    "psu": _psus,
    "pdu": _pdus,
    "feed": _feeds,
    "cdu": _cdus,
    "rack": _racks,
    "row": _rows,
    "power-shelf": _shelves,
    "switch-tray": _trays,
}
