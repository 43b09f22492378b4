"""Cable runs and physical cables: each link's run from rack positions, U heights, row spacing and slack;
links grouped into the cables that carry them (a twin-port cable or a splitter carries several); each
cable the preferred catalog product whose plugs fit and whose reach covers its longest run, ordered at
the next length it is sold in; otherwise a transceiver in each cage and a fibre between them.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass

from .. import codes
from ..catalog import CableMedia, Switch
from ..catalog.models import Device as CatalogDevice
from .cable_parts import CopperPart, OpticPart, PartFinder
from .cages import EndSpec, cage_and_slot, end_spec, natives_per_cage, port_group
from .context import ExpandContext
from .topology import Cable, Device, Link, Rack

U_METRES = 0.04445
END_ALLOWANCE_M = 0.5  # default floor.rack_entry_m: routing inside the rack at each end (cable manager to port)
TRAY_RISE_M = 0.3  # default floor.cable_tray_m: from the top of a rack up to the overhead tray


def _height_m(device: Device) -> float:
    """Height of the device's centre above the rack floor."""
    assert device.u is not None
    return (device.u - 1 + device.u_height / 2) * U_METRES


def run_length_m(
    a: Device,
    b: Device,
    rack_a: Rack,
    rack_b: Rack,
    rack_pitch_m: float,
    row_pitch_m: float,
    slack_m: float,
    tray_m: float = TRAY_RISE_M,
    entry_m: float = END_ALLOWANCE_M,
) -> float:
    """Cable length between two devices: straight up/down inside one rack, else up to the overhead tray,
    along rows and across aisles (Manhattan), and down again; `entry_m` inside the rack at each end."""
    if rack_a.name == rack_b.name:
        run = abs(_height_m(a) - _height_m(b))
    else:
        top_a = rack_a.rack_type.u_height * U_METRES
        top_b = rack_b.rack_type.u_height * U_METRES
        run = (
            (top_a - _height_m(a))
            + (top_b - _height_m(b))
            + 2 * tray_m
            + abs(rack_a.position - rack_b.position) * rack_pitch_m
            + abs(rack_a.row_index - rack_b.row_index) * row_pitch_m
        )
    return round(run + 2 * entry_m + slack_m, 2)


CageKey = tuple[str, str, int]
"""(device, port group, cage number)."""


@dataclass(frozen=True, slots=True)
class End:
    cage: CageKey
    slot: int
    """Place of the port in its cage (0-based)."""
    spec: EndSpec


class Ends:
    """Each link end's cage, place and kind, worked out once per (model, port, speed)."""

    def __init__(self, ctx: ExpandContext) -> None:
        self.catalog = ctx.catalog
        self._known: dict[tuple[str, str, float], tuple[str, int, int, EndSpec]] = {}

    def of(self, device: Device, port: str, speed: float) -> End:
        key = (device.model, port, speed)
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = self._work_out(device.model, port, speed)
        group, cage, slot, spec = known
        return End((device.name, group, cage), slot, spec)

    def _work_out(self, model: str, port: str, speed: float) -> tuple[str, int, int, EndSpec]:
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


class Cabler:
    """Groups the links into cables and picks their parts; findings go to the context."""

    def __init__(self, ctx: ExpandContext, runs: dict[int, float]) -> None:
        self.ctx, self.topo, self.runs = ctx, ctx.topo, runs
        self.finder = PartFinder(ctx.catalog)
        self.ends = Ends(ctx)
        self.link_ends: dict[int, tuple[End, End]] = {}
        self.cage_links: dict[CageKey, list[int]] = defaultdict(list)
        self.split_fibres: dict[tuple[str, CageKey, int], list[int]] = {}
        self.fibre_parts: dict[tuple[str, CageKey, int], OpticPart] = {}
        self.unlinkable: dict[tuple[str, str, str, str, str, float], list[int]] = defaultdict(list)
        self.unreachable: list[tuple[Link, float]] = []
        self.hub_is_b = False
        """Of the last group `_copper_group` made: its hub is its links' B end."""

    def run(self) -> None:
        topo = self.topo
        for i in self.runs:
            link = topo.links[i]
            a = self.ends.of(topo.devices[link.a], link.a_port, link.speed_gbps)
            b = self.ends.of(topo.devices[link.b], link.b_port, link.speed_gbps)
            self.link_ends[i] = (a, b)
            self.cage_links[a.cage].append(i)
            self.cage_links[b.cage].append(i)
        done: set[int] = set()
        for i in self.runs:
            if i in done:
                continue
            group, copper = self._copper_group(i)
            done.update(group)
            if copper is None or not self._take_copper(group, copper):
                for j in group:
                    self._take_optics(j, bool(copper))
        self._close_split_fibres()

    def _other(self, i: int, cage: CageKey) -> End:
        a, b = self.link_ends[i]
        return b if a.cage == cage else a

    def _copper_group(self, i: int) -> tuple[list[int], list[CopperPart] | None]:
        """The links one copper or AOC cable could carry with link i, and the products that fit them:
        all links between two cages (straight, twin-port), or all links of a hub cage that each go to a
        cage of their own (splitter); otherwise link i alone, with no copper product (optics only)."""
        link = self.topo.links[i]
        a, b = self.link_ends[i]
        on_a, on_b = self.cage_links[a.cage], self.cage_links[b.cage]
        speed = link.speed_gbps
        if on_a == on_b:
            return list(on_a), self.finder.straight(a.spec, b.spec, speed, len(on_a))
        for hub, on_hub in ((b, on_b), (a, on_a)):
            self.hub_is_b = hub is b
            legs = [self._other(j, hub.cage) for j in on_hub]
            if (
                len(on_hub) > 1
                and all(len(self.cage_links[leg.cage]) == 1 and leg.spec == legs[0].spec for leg in legs)
                and all(self.topo.links[j].speed_gbps == speed for j in on_hub)
            ):
                return list(on_hub), self.finder.splitter(hub.spec, legs[0].spec, speed, len(on_hub))
        self.hub_is_b = False
        return [i], None

    def _take_copper(self, group: list[int], parts: list[CopperPart]) -> bool:
        run = max(self.runs[j] for j in group)
        for part in parts:
            length = _length_class(part.product, run)
            if length is not None:
                hub_is_b = self.hub_is_b and len(group) > 1 and part.product.legs > 1
                self._add_cable(group, part.key, part.product, length, run, hub_is_b=hub_is_b)
                return True
        return False

    def _take_optics(self, i: int, copper_fitted: bool) -> None:
        link, run = self.topo.links[i], self.runs[i]
        a, b = self.link_ends[i]
        parts = self.finder.optics(a.spec, b.spec, link.speed_gbps)
        for part in parts:
            length = _length_class(part.fibre, run)
            if length is None or run > part.reach_m:
                continue
            hub, far = (a, b) if part.hub_is_a else (b, a)
            modules = self.topo.modules
            hub_module = modules.setdefault((hub.cage[0], _cage_name(hub.cage)), part.hub_module)
            far_module = modules.setdefault((far.cage[0], _cage_name(far.cage)), part.far_module)
            link.a_module, link.b_module = (hub_module, far_module) if part.hub_is_a else (far_module, hub_module)
            if part.legs == 1:
                self._add_cable([i], part.fibre_key, part.fibre, length, run, part.pieces)
            else:
                lanes = link.speed_gbps // part.fibre.lane_gbps[0] if part.fibre.lane_gbps else 1
                port = int(hub.slot * lanes // part.lanes_per_port)
                key = (part.fibre_key, hub.cage, port)
                self.split_fibres.setdefault(key, []).append(i)
                self.fibre_parts[key] = part
            return
        if parts or copper_fitted:
            self.unreachable.append((link, run))
            return
        a_model, b_model = self.topo.devices[link.a].model, self.topo.devices[link.b].model
        self.unlinkable[(link.fabric, a_model, a.spec.text(), b_model, b.spec.text(), link.speed_gbps)].append(i)

    def _close_split_fibres(self) -> None:
        for key, group in self.split_fibres.items():
            part = self.fibre_parts[key]
            run = max(self.runs[j] for j in group)
            length = _length_class(part.fibre, run)
            assert length is not None  # each link was checked against the fibre's lengths
            self._add_cable(group, part.fibre_key, part.fibre, length, run, hub_is_b=not part.hub_is_a)

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
        index = len(self.topo.cables)
        legs = sorted(group, key=lambda j: (self.link_ends[j][0].slot, self.link_ends[j][1].slot, j))
        number = product.part_number(length)
        self.topo.cables.append(Cable(legs, key, product.label, length, run, number, pieces, hub_is_b))
        for j in group:
            link = self.topo.links[j]
            link.media, link.length_class_m, link.cable = product.label, length, index


def _cage_name(cage: CageKey) -> str:
    return f"{cage[1]}{cage[2]}"


def _length_class(product: CableMedia, run: float) -> float | None:
    """The shortest length the product is sold in that covers the run, within its reach."""
    if run > product.reach_m:
        return None
    classes = product.length_classes_m
    i = bisect.bisect_left(classes, run - 1e-9)
    return classes[i] if i < len(classes) else None


def cable_links(ctx: ExpandContext) -> None:
    topo, floor = ctx.topo, ctx.bp.floor
    pitch, row_pitch = floor.rack_pitch_mm / 1000, floor.row_pitch_mm / 1000
    runs: dict[int, float] = {}
    for i, link in enumerate(topo.links):
        a, b = topo.devices[link.a], topo.devices[link.b]
        if a.rack is None or b.rack is None:
            continue
        rack_a, rack_b = topo.racks[a.rack], topo.racks[b.rack]
        slack, tray, entry = floor.cable_slack_m, floor.cable_tray_m, floor.rack_entry_m
        link.length_m = runs[i] = run_length_m(a, b, rack_a, rack_b, pitch, row_pitch, slack, tray, entry)
    cabler = Cabler(ctx, runs)
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
        end_a, end_b = cabler.link_ends[indexes[0]]
        links = [topo.links[i] for i in indexes]
        examples = ", ".join(f"{x.a}:{x.a_port}-{x.b}:{x.b_port}" for x in links[:3])
        more = ", ..." if len(links) > 3 else ""
        ctx.warning(
            codes.ENDS_CANNOT_MEET,
            f"fabric '{fabric}': {len(links)} {speed:g}G links between {a_model} ({a_text}) and {b_model} "
            f"({b_text}) cannot be cabled, {cabler.finder.why_not(end_a.spec, end_b.spec, speed)} ({examples}{more})",
            ("fabrics", fabric),
            "connect these ports to a switch whose ports run their lane rate, or add the part to a site catalog",
        )
