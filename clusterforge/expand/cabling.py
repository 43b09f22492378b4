"""Cable runs and physical cables: each link's run from rack positions, U heights, row spacing and slack;
links grouped into the cables that carry them (a twin-port cable or a splitter carries several); each
cable the preferred catalog product whose plugs fit and whose reach covers its longest run, ordered at
the next length it is sold in; otherwise a transceiver in each cage and a fibre between them.

At 100,000 GPUs there are 300,000 links but only a few hundred kinds of port and a few thousand distinct
runs: where a port sits is worked out once per (model, port, speed), and the part a fibre link takes once
per (kinds of end, speed, run).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, cast

from .. import codes
from ..catalog import CableMedia, Switch
from ..catalog.models import Device as CatalogDevice
from .cable_parts import CopperPart, OpticPart, PartFinder
from .cages import EndSpec, cage_and_slot, end_spec, natives_per_cage, port_group
from .context import ExpandContext
from .topology import Cable, Device, Link, Rack, Topology

U_METRES = 0.04445  # one rack unit, 1.75 in (EIA-310 and IEC 60297)
END_ALLOWANCE_M = 0.5  # default floor.rack_entry_m: routing inside the rack at each end (cable manager to port)
TRAY_RISE_M = 0.3  # default floor.cable_tray_m: from the top of a rack up to the overhead tray
UNKNOWN: Any = object()
"""What the optics cache gives for a key it does not hold yet (None is a choice: no optics reach)."""

Spot = tuple[str, float, float, int, int]
"""Where a device sits: (rack, height of its centre, drop from the rack top to it, rack position, row index)."""


def _height_m(device: Device) -> float:
    """Height of the device's centre above the rack floor."""
    assert device.u is not None
    return (device.u - 1 + device.u_height / 2) * U_METRES


def _spot(device: Device, rack: Rack) -> Spot:
    height = _height_m(device)
    return rack.name, height, rack.rack_type.u_height * U_METRES - height, rack.position, rack.row_index


@dataclass(frozen=True, slots=True)
class RunRule:
    """How a run is measured on this floor: rack and row pitch, slack, tray rise and rack entry, in metres."""

    rack_pitch_m: float
    row_pitch_m: float
    slack_m: float
    tray_m: float = TRAY_RISE_M
    entry_m: float = END_ALLOWANCE_M

    def runs(self, starts: list[Spot], ends: list[Spot]) -> list[float]:
        """The run between each start and its end: within a rack, the height between them; else down
        from each rack top to the device, up to the tray and along racks and rows; plus rack entry at both
        ends and slack, to the centimetre."""
        tray, entry, slack = 2 * self.tray_m, 2 * self.entry_m, self.slack_m
        rack_pitch, row_pitch = self.rack_pitch_m, self.row_pitch_m
        return [
            round(
                (
                    abs(height_a - height_b)
                    if rack_a == rack_b
                    else drop_a + drop_b + tray + abs(at_a - at_b) * rack_pitch + abs(row_a - row_b) * row_pitch
                )
                + entry
                + slack,
                2,
            )
            for (rack_a, height_a, drop_a, at_a, row_a), (rack_b, height_b, drop_b, at_b, row_b) in zip(
                starts, ends, strict=True
            )
        ]


@dataclass(frozen=True, slots=True, eq=False)
class Place:
    """Where the ports of one model, port name and speed sit: shared by every link end alike in them (compared
    by identity: one object per kind)."""

    slot: int
    """Place of the port in its cage (0-based)."""
    spec: EndSpec
    spec_id: int
    """The same number for equal specs: what the per-kind caches are keyed by."""
    cage_name: str
    """The cage as `Topology.modules` names it: group and cage number."""
    cage_id: int
    """The same number for the same (model, group, cage): a device's cage is (device, cage_id)."""


class Places:
    """Each link end's cage, place and kind, worked out once per (model, port, speed)."""

    def __init__(self, ctx: ExpandContext) -> None:
        self.catalog = ctx.catalog
        self._known: dict[tuple[str, str, float], Place] = {}
        self._spec_ids: dict[EndSpec, int] = {}
        self._cage_ids: dict[tuple[str, str, int], int] = {}

    def of_all(self, models: list[str], ports: list[str], speeds: list[float]) -> list[Place]:
        """The place of each (model, port, speed)."""
        keys = list(zip(models, ports, speeds, strict=True))
        known = self._known
        for key in dict.fromkeys(keys):
            if key not in known:
                known[key] = self._work_out(*key)
        return list(map(known.__getitem__, keys))

    def _work_out(self, model: str, port: str, speed: float) -> Place:
        group, cage, slot, spec = self._where(model, port, speed)
        spec_id = self._spec_ids.setdefault(spec, len(self._spec_ids))
        cage_id = self._cage_ids.setdefault((model, group, cage), len(self._cage_ids))
        return Place(slot, spec, spec_id, f"{group}{cage}", cage_id)

    def _where(self, model: str, port: str, speed: float) -> tuple[str, int, int, EndSpec]:
        entry = self.catalog.entries.get(model)
        if not isinstance(entry, CatalogDevice):
            return port, 1, 0, EndSpec("", "any", 1, 0, 1, False)
        group = port_group(entry, port)
        spec = end_spec(entry, group, speed, isinstance(entry, Switch))
        if group is None:
            return port, 1, 0, spec
        split = spec.ports_per_cage // natives_per_cage(group)
        cage, slot = cage_and_slot(port, group.name, natives_per_cage(group), split)
        return group.name, cage, slot, spec


OpticChoice = tuple[OpticPart, float, str, str, bool, bool]
"""The optics a fibre link takes: the part, the fibre's length class, part number and media, whether the hub
is the A end, and whether the fibre carries this link alone."""


class Cabler:
    """Groups the links into cables and picks their parts; findings go to the context.

    Works on the racked links by position (`order[p]` is the link index): each end's place and cage number
    are worked out column by column, and a cage's links are kept as positions."""

    def __init__(self, ctx: ExpandContext, order: list[int], run_m: list[float]) -> None:
        self.ctx, self.topo = ctx, ctx.topo
        self.cables, self.modules = ctx.topo.cables, ctx.topo.modules
        self.finder = PartFinder(ctx.catalog)
        self.order, self.run_m = order, run_m
        links = [self.topo.links[i] for i in self.order]
        self.links = links
        self.speed = [link.speed_gbps for link in links]
        places = Places(ctx)
        model = {name: device.model for name, device in self.topo.devices.items()}
        names_a, names_b = [link.a for link in links], [link.b for link in links]
        self.place_a = places.of_all(list(map(model.__getitem__, names_a)), [x.a_port for x in links], self.speed)
        self.place_b = places.of_all(list(map(model.__getitem__, names_b)), [x.b_port for x in links], self.speed)
        cage_ids: dict[tuple[str, int], int] = {}
        self.cage_a = _number(cage_ids, names_a, self.place_a)
        self.cage_b = _number(cage_ids, names_b, self.place_b)
        self.on_cage: list[list[int]] = [[] for _ in cage_ids]
        """Cage number -> positions of its links, each link's A end before its B end."""
        for p, (cage_a, cage_b) in enumerate(zip(self.cage_a, self.cage_b, strict=True)):
            self.on_cage[cage_a].append(p)
            self.on_cage[cage_b].append(p)
        self.hub_legs = self._hub_legs()
        """Cage number -> the kind of end a splitter from it would reach, or None."""
        self.split_fibres: dict[tuple[str, int, int], list[int]] = {}
        self.fibre_parts: dict[tuple[str, int, int], OpticPart] = {}
        self.unlinkable: dict[tuple[str, str, str, str, str, float], list[int]] = defaultdict(list)
        """Positions of links no part joins, by kind."""
        self.unreachable: list[tuple[Link, float]] = []
        self._optics: dict[tuple[int, int, float, float], OpticChoice | None] = {}
        self._part_numbers: dict[tuple[str, float], str] = {}

    def run(self) -> None:
        done = bytearray(len(self.order))
        on_cage, hub_legs, take_optics = self.on_cage, self.hub_legs, self._take_optics
        for p, ca, cb in zip(range(len(self.order)), self.cage_a, self.cage_b, strict=True):
            if done[p]:
                continue
            if hub_legs[ca] is None and hub_legs[cb] is None and on_cage[ca] != on_cage[cb]:
                take_optics(p, False)  # most links: one fibre or one copper cable each
                continue
            group, copper, hub_is_b = self._copper_group(p)
            for q in group:
                done[q] = 1
            if copper is None or not self._take_copper(group, copper, hub_is_b):
                for q in group:
                    self._take_optics(q, bool(copper))
        self._close_split_fibres()

    def _copper_group(self, p: int) -> tuple[list[int], list[CopperPart] | None, bool]:
        """The links one copper or AOC cable could carry with link p, the products that fit them and whether
        the cable's hub is the links' B end: all links between two cages (straight, twin-port), or all links
        of a hub cage that each go to a cage of their own (splitter); otherwise link p alone, with no copper
        product (optics only)."""
        on_a, on_b = self.on_cage[self.cage_a[p]], self.on_cage[self.cage_b[p]]
        a, b, speed = self.place_a[p], self.place_b[p], self.speed[p]
        if on_a == on_b:
            return list(on_a), self.finder.straight(a.spec, b.spec, speed, len(on_a)), False
        for hub, cage, on_hub, hub_is_b in ((b, self.cage_b[p], on_b, True), (a, self.cage_a[p], on_a, False)):
            leg = self.hub_legs[cage]
            if leg is not None:
                return list(on_hub), self.finder.splitter(hub.spec, leg, speed, len(on_hub)), hub_is_b
        return [p], None, False

    def _hub_legs(self) -> list[EndSpec | None]:
        """A splitter from a cage can carry its links when it has several, each to a cage of its own: the
        cages one of whose links goes to a shared cage are ruled out first, for all links at once."""
        alone = [len(on) == 1 for on in self.on_cage]
        shared_far = bytearray(len(self.on_cage))
        for cage_a, cage_b in zip(self.cage_a, self.cage_b, strict=True):
            if not alone[cage_b]:
                shared_far[cage_a] = 1
            if not alone[cage_a]:
                shared_far[cage_b] = 1
        return [None if alone[cage] or shared_far[cage] else self._hub_leg(cage) for cage in range(len(self.on_cage))]

    def _hub_leg(self, cage: int) -> EndSpec | None:
        """The kind of end a splitter from `cage` would reach, when one could: the cage has several links, at
        one speed, each to a cage of its own and all to ends of one kind (the caller passes cages of several
        links only)."""
        on_hub = self.on_cage[cage]
        leg: EndSpec | None = None
        speed = self.speed[on_hub[0]]
        for q in on_hub:
            far_cage, far = (
                (self.cage_b[q], self.place_b[q]) if self.cage_a[q] == cage else (self.cage_a[q], self.place_a[q])
            )
            if len(self.on_cage[far_cage]) != 1 or (leg is not None and far.spec != leg) or self.speed[q] != speed:
                return None
            leg = far.spec
        return leg

    def _take_copper(self, group: list[int], parts: list[CopperPart], hub_is_b: bool) -> bool:
        run = max(self.run_m[q] for q in group)
        for part in parts:
            length = _length_class(part.product, run)
            if length is not None:
                hub_is_b = hub_is_b and len(group) > 1 and part.product.legs > 1
                self._add_cable(group, part.key, part.product, length, run, hub_is_b=hub_is_b)
                return True
        return False

    def _optic_choice(self, a: Place, b: Place, speed: float, run: float) -> OpticChoice | None:
        """The first (preferred) optics that reach `run`, once per (kinds of end, speed, run)."""
        key = (a.spec_id, b.spec_id, speed, run)
        if key in self._optics:
            return self._optics[key]
        choice = None
        for part in self.finder.optics(a.spec, b.spec, speed):
            length = _length_class(part.fibre, run)
            if length is not None and run <= part.reach_m:
                number = self._part_number(part.fibre_key, part.fibre, length)
                choice = part, length, number, part.fibre.label, part.hub_is_a, part.legs == 1
                break
        self._optics[key] = choice
        return choice

    def _take_optics(self, p: int, copper_fitted: bool) -> None:
        link, run, a, b = self.links[p], self.run_m[p], self.place_a[p], self.place_b[p]
        choice = self._optics.get((a.spec_id, b.spec_id, link.speed_gbps, run), UNKNOWN)
        if choice is UNKNOWN:  # looked up here first: one call less per link (3 million at a million GPUs)
            choice = self._optic_choice(a, b, link.speed_gbps, run)
        if choice is None:
            self._no_optics(p, copper_fitted)
            return
        part, length, number, label, hub_is_a, single = choice
        put_module = self.modules.setdefault
        if hub_is_a:
            link.a_module = put_module((link.a, a.cage_name), part.hub_module)
            link.b_module = put_module((link.b, b.cage_name), part.far_module)
        else:
            link.b_module = put_module((link.b, b.cage_name), part.hub_module)
            link.a_module = put_module((link.a, a.cage_name), part.far_module)
        if single:
            cables = self.cables
            link.media, link.length_class_m, link.cable = label, length, len(cables)
            cables.append(Cable((self.order[p],), part.fibre_key, label, length, run, number, part.pieces))
            return
        hub, hub_cage = (a, self.cage_a[p]) if hub_is_a else (b, self.cage_b[p])
        lanes = link.speed_gbps // part.fibre.lane_gbps[0] if part.fibre.lane_gbps else 1
        key = (part.fibre_key, hub_cage, int(hub.slot * lanes // part.lanes_per_port))
        self.split_fibres.setdefault(key, []).append(p)
        self.fibre_parts[key] = part

    def _no_optics(self, p: int, copper_fitted: bool) -> None:
        link, a, b = self.links[p], self.place_a[p], self.place_b[p]
        if not copper_fitted and self._one_leg_splitter(p):
            return
        if copper_fitted or self.finder.optics(a.spec, b.spec, link.speed_gbps):
            self.unreachable.append((link, self.run_m[p]))
            return
        a_model, b_model = self.topo.devices[link.a].model, self.topo.devices[link.b].model
        self.unlinkable[(link.fabric, a_model, a.spec.text(), b_model, b.spec.text(), link.speed_gbps)].append(p)

    def _one_leg_splitter(self, p: int) -> bool:
        """A splitter with one leg in use, for a link alone on a split cage (its neighbour on the cage was
        removed): the cable it had stays, where no other part joins the two ends."""
        a, b, speed = self.place_a[p], self.place_b[p], self.speed[p]
        for hub, leg, hub_is_b in ((b, a, True), (a, b, False)):
            parts = self.finder.splitter(hub.spec, leg.spec, speed, 1)
            if parts and self._take_copper([p], parts, hub_is_b):
                return True
        return False

    def _close_split_fibres(self) -> None:
        for key, group in self.split_fibres.items():
            part = self.fibre_parts[key]
            run = max(self.run_m[q] for q in group)
            length = _length_class(part.fibre, run)
            assert length is not None  # each link was checked against the fibre's lengths
            self._add_cable(group, part.fibre_key, part.fibre, length, run, hub_is_b=not part.hub_is_a)

    def _part_number(self, key: str, product: CableMedia, length: float) -> str:
        known = self._part_numbers.get((key, length))
        if known is None:
            known = self._part_numbers[(key, length)] = product.part_number(length)
        return known

    def _leg_order(self, p: int) -> tuple[int, int, int]:
        return self.place_a[p].slot, self.place_b[p].slot, p

    def _add_cable(
        self,
        group: list[int],
        key: str,
        product: CableMedia,
        length: float,
        run: float,
        pieces: int = 1,
        hub_is_b: bool = False,
    ) -> None:
        """A cable for the links at positions `group`."""
        index = len(self.topo.cables)
        legs = tuple(self.order[p] for p in sorted(group, key=self._leg_order))
        number = self._part_number(key, product, length)
        self.topo.cables.append(Cable(legs, key, product.label, length, run, number, pieces, hub_is_b))
        for p in group:
            link = self.links[p]
            link.media, link.length_class_m, link.cable = product.label, length, index


def _number(ids: dict[tuple[str, int], int], devices: list[str], places: list[Place]) -> list[int]:
    """The cage number of each (device, place), numbering cages in the order they are first seen."""
    return [ids.setdefault(key, len(ids)) for key in zip(devices, [p.cage_id for p in places], strict=True)]


def _length_class(product: CableMedia, run: float) -> float | None:
    """The shortest length the product is sold in that covers the run, within its reach."""
    if run > product.reach_m:
        return None
    classes = product.length_classes_m
    i = bisect.bisect_left(classes, run - 1e-9)
    return classes[i] if i < len(classes) else None


def link_runs(ctx: ExpandContext) -> tuple[list[int], list[float]]:
    """The indexes of the links whose two ends are racked, and their runs in metres (also set on the links)."""
    topo, floor = ctx.topo, ctx.bp.floor
    pitches = floor.rack_pitch_mm / 1000, floor.row_pitch_mm / 1000
    rule = RunRule(*pitches, floor.cable_slack_m, floor.cable_tray_m, floor.rack_entry_m)
    spots = _spots(topo)
    links = topo.links
    starts = list(map(spots.get, [link.a for link in links]))
    ends = list(map(spots.get, [link.b for link in links]))
    racked = [i for i, (a, b) in enumerate(zip(starts, ends, strict=True)) if a is not None and b is not None]
    if len(racked) < len(links):
        starts, ends = [starts[i] for i in racked], [ends[i] for i in racked]
    runs = rule.runs(cast(list[Spot], starts), cast(list[Spot], ends))
    for i, run in zip(racked, runs, strict=True):
        links[i].length_m = run
    return racked, runs


def _spots(topo: Topology) -> dict[str, Spot]:
    return {
        name: _spot(device, topo.racks[device.rack]) for name, device in topo.devices.items() if device.rack is not None
    }


def cable_links(ctx: ExpandContext) -> None:
    cabler = Cabler(ctx, *link_runs(ctx))
    cabler.run()
    for link, length in cabler.unreachable[:5]:
        ctx.error(
            codes.NO_CABLE_REACHES,
            f"no cable media reaches {length:g} m at {link.speed_gbps:g}G "
            f"between {link.a}:{link.a_port} and {link.b}:{link.b_port}",
            ("fabrics", link.fabric),
            "move the switches closer (switch_racks) or add a media type to the catalog",
        )
    for (fabric, a_model, a_text, b_model, b_text, speed), indexes in cabler.unlinkable.items():
        end_a, end_b = cabler.place_a[indexes[0]], cabler.place_b[indexes[0]]
        links = [cabler.links[p] for p in indexes]
        examples = ", ".join(f"{x.a}:{x.a_port}-{x.b}:{x.b_port}" for x in links[:3])
        more = ", ..." if len(links) > 3 else ""
        ctx.warning(
            codes.ENDS_CANNOT_MEET,
            f"fabric '{fabric}': {len(links)} {speed:g}G links between {a_model} ({a_text}) and {b_model} "
            f"({b_text}) cannot be cabled, "
            f"{cabler.finder.why_not(end_a.spec, end_b.spec, speed)} ({examples}{more})",
            ("fabrics", fabric),
            "connect these ports to a switch whose ports run their lane rate, or add the part to a site catalog",
        )
