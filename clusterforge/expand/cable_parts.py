"""Which catalog parts can join two link ends: copper and AOC products by shape, or a pair of transceivers
and the fibre between them. Both ends must run the same lane rate and lane count (a 100G QSFP28 port is
4 x 25G, a 100G port of a 4-way split OSFP cage 1 x 100G or 2 x 50G: they cannot meet), plugs must fit the
cages (connector and OSFP top), and both transceivers must take the same fibre and connector.

A cluster has a few hundred kinds of end, so each question is answered once per kind and cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ..catalog import CableMedia, Catalog, Transceiver
from ..catalog.models import CableEnd
from .cages import CAGE_LANES, EndSpec, plug_fits_cage

Lane = tuple[int, int]
"""(lane rate in Gb/s, lanes)."""


@dataclass(frozen=True, slots=True)
class CopperPart:
    key: str
    product: CableMedia


@dataclass(frozen=True, slots=True)
class OpticPart:
    """Two transceivers and the fibre between them, for links of one kind."""

    hub_is_a: bool
    """The end whose cage shares a module's optical port among several links (the switch end)."""
    hub_module: str
    far_module: str
    fibre_key: str
    fibre: CableMedia
    legs: int
    """Links on one fibre (2 on a 1:2 splitter fibre)."""
    pieces: int
    """Fibres one link takes (2 for an 800G link over a twin-port module)."""
    lanes_per_port: int
    """Lanes of the hub module's optical port."""
    reach_m: float


def lane_text(options: list[Lane]) -> str:
    return " or ".join(f"{n} x {rate}G" for rate, n in options) or "no lane layout"


def _fits(plug: CableEnd, end: EndSpec) -> bool:
    return plug_fits_cage(plug.connector, end.cage) and plug.top in ("any", end.top)


def _module_fits(module: Transceiver, end: EndSpec, rate: int, lanes: int) -> bool:
    """A module for the cage: right cage and top, the lane rate, and lanes for every port the cage runs; a
    twin-port module only in a cage of two or more ports (a switch cage, a DGX's twin cage) or for a link
    that needs all its lanes (800G)."""
    needed = min(end.ports_per_cage * lanes, CAGE_LANES.get(end.cage, lanes))
    twin_ok = module.optical_ports == 1 or end.ports_per_cage > 1 or lanes == module.lanes
    return (
        plug_fits_cage(module.cage, end.cage)
        and module.top in ("any", end.top)
        and module.lane_gbps == rate
        and module.lanes >= needed
        and twin_ok
    )


class PartFinder:
    """Answers 'which parts join these ends' from the catalog, once per kind of end."""

    def __init__(self, catalog: Catalog) -> None:
        by_preference = sorted(
            ((k, catalog.entries[k]) for k in catalog.keys_of(CableMedia)),
            key=lambda item: (getattr(item[1], "preference", 0), item[0]),
        )
        self.copper_products = [(k, m) for k, m in by_preference if isinstance(m, CableMedia) and not m.transceiver]
        self.fibres = [(k, m) for k, m in by_preference if isinstance(m, CableMedia) and m.transceiver]
        self.modules = sorted(
            ((k, m) for k in catalog.keys_of(Transceiver) if isinstance(m := catalog.entries[k], Transceiver)),
            key=lambda item: (item[1].lanes, item[0]),  # the smallest module that serves the cage first
        )
        self.size = {key: (module.reach_m, module.lanes) for key, module in self.modules}

    @cache  # noqa: B019 - one finder per expansion
    def common_lanes(self, a: EndSpec, b: EndSpec, speed: float) -> list[Lane]:
        theirs = set(b.lane_options(speed))
        return [option for option in a.lane_options(speed) if option in theirs]

    @cache  # noqa: B019
    def straight(self, a: EndSpec, b: EndSpec, speed: float, links: int) -> list[CopperPart]:
        """Products for `links` links between one cage at each end (a twin-port cable carries two)."""
        out = []
        for rate, lanes in self.common_lanes(a, b, speed):
            for key, product in self.copper_products:
                if product.legs != 1 or rate not in product.lane_gbps:
                    continue
                if links * lanes > min(product.a.lanes, product.b.lanes):
                    continue
                if (_fits(product.a, a) and _fits(product.b, b)) or (_fits(product.a, b) and _fits(product.b, a)):
                    out.append(CopperPart(key, product))
        return _unique(out)

    @cache  # noqa: B019
    def splitter(self, hub: EndSpec, leg: EndSpec, speed: float, links: int) -> list[CopperPart]:
        """Splitter products for `links` links from one hub cage, each to a cage of its own."""
        out = []
        for rate, lanes in self.common_lanes(hub, leg, speed):
            for key, product in self.copper_products:
                if product.legs < links or product.legs < 2 or rate not in product.lane_gbps:
                    continue
                if product.b.lanes != lanes or links * lanes > product.a.lanes:
                    continue
                if _fits(product.a, hub) and _fits(product.b, leg):
                    out.append(CopperPart(key, product))
        return _unique(out)

    @cache  # noqa: B019
    def optics(self, a: EndSpec, b: EndSpec, speed: float) -> list[OpticPart]:
        """Transceiver pairs and fibres for a link, the preferred (multimode, then single-mode) first."""
        hub_is_a = a.ports_per_cage > b.ports_per_cage or (a.ports_per_cage == b.ports_per_cage and a.switch > b.switch)
        hub, far = (a, b) if hub_is_a else (b, a)
        out = []
        for rate, lanes in self.common_lanes(a, b, speed):
            for hub_key, hub_module in self.modules:
                if not _module_fits(hub_module, hub, rate, lanes):
                    continue
                for far_key, far_module in self.modules:
                    if not _module_fits(far_module, far, rate, lanes):
                        continue
                    if (far_module.connector, far_module.fibre) != (hub_module.connector, hub_module.fibre):
                        continue
                    part = self._fibre(hub_is_a, hub_key, hub_module, far_key, far_module, rate, lanes)
                    if part is not None:
                        out.append(part)
        # multimode first, then the shortest reach that will do (the cheaper module), then the smallest modules
        return sorted(
            out, key=lambda p: (p.fibre.preference, p.reach_m, *self.size[p.hub_module], *self.size[p.far_module])
        )

    def _fibre(
        self,
        hub_is_a: bool,
        hub_key: str,
        hub: Transceiver,
        far_key: str,
        far: Transceiver,
        rate: int,
        lanes: int,
    ) -> OpticPart | None:
        per_port = hub.lanes_per_port
        if lanes >= per_port:
            if lanes % per_port or far.lanes_per_port != per_port:
                return None
            legs, pieces, leg_lanes = 1, lanes // per_port, per_port
        else:
            if per_port % lanes or far.lanes_per_port < lanes:
                return None
            legs, pieces, leg_lanes = per_port // lanes, 1, lanes
        for key, fibre in self.fibres:
            if (
                fibre.legs == legs
                and fibre.fibre == hub.fibre
                and fibre.a.connector == hub.connector
                and fibre.b.lanes == leg_lanes
                and rate in fibre.lane_gbps
            ):
                reach = min(fibre.reach_m, hub.reach_m, far.reach_m)
                return OpticPart(hub_is_a, hub_key, far_key, key, fibre, legs, pieces, per_port, reach)
        return None

    def why_not(self, a: EndSpec, b: EndSpec, speed: float) -> str:
        common = self.common_lanes(a, b, speed)
        if not common:
            return (
                f"no common lane rate: {a.text()} runs {speed:g}G as {lane_text(a.lane_options(speed))}, "
                f"{b.text()} as {lane_text(b.lane_options(speed))}"
            )
        return f"no catalog part joins {a.text()} and {b.text()} at {lane_text(common)}"


def _unique(parts: list[CopperPart]) -> list[CopperPart]:
    seen: dict[str, CopperPart] = {}
    for part in parts:
        seen.setdefault(part.key, part)
    return sorted(seen.values(), key=lambda p: (p.product.preference, p.key))
