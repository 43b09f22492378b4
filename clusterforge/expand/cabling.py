"""Cable runs: length from rack positions, U heights, row spacing and slack; media by reach and cages."""

from __future__ import annotations

import bisect
from functools import cache

from .. import codes
from ..catalog import CableMedia, Server, Switch
from ..catalog.models import Cage
from .context import ExpandContext
from .topology import Device, Link, Rack

U_METRES = 0.04445
END_ALLOWANCE_M = 0.5  # routing inside the rack at each end (cable manager to port)
TRAY_RISE_M = 0.3  # from the top of a rack up to the overhead tray


def _height_m(device: Device) -> float:
    """Height of the device's centre above the rack floor."""
    assert device.u is not None
    return (device.u - 1 + device.u_height / 2) * U_METRES


def run_length_m(
    a: Device, b: Device, rack_a: Rack, rack_b: Rack, rack_pitch_m: float, row_pitch_m: float, slack_m: float
) -> float:
    """Cable length between two devices: straight up/down inside one rack, else up to the overhead tray,
    along rows and across aisles (Manhattan), and down again."""
    if rack_a.name == rack_b.name:
        run = abs(_height_m(a) - _height_m(b))
    else:
        top_a = rack_a.rack_type.u_height * U_METRES
        top_b = rack_b.rack_type.u_height * U_METRES
        run = (
            (top_a - _height_m(a))
            + (top_b - _height_m(b))
            + 2 * TRAY_RISE_M
            + abs(rack_a.position - rack_b.position) * rack_pitch_m
            + abs(rack_a.row_index - rack_b.row_index) * row_pitch_m
        )
    return round(run + 2 * END_ALLOWANCE_M + slack_m, 2)


_PORT_NUMBER = "0123456789/s"


class MediaChooser:
    def __init__(self, ctx: ExpandContext):
        self.ctx = ctx
        media = [ctx.catalog.entries[k] for k in ctx.catalog.keys_of(CableMedia)]
        self.media: list[CableMedia] = sorted(
            (m for m in media if isinstance(m, CableMedia)), key=lambda m: (m.preference, m.label)
        )
        self._cages: dict[tuple[str, str], Cage] = {}

    def cage(self, device: Device, port: str) -> Cage:
        key = (device.model, port.rstrip(_PORT_NUMBER))
        found = self._cages.get(key)
        if found is None:
            entry = self.ctx.catalog.entries[device.model]
            assert isinstance(entry, Server | Switch)
            groups = [g for g in entry.ports if port.startswith(g.name)]
            found = max(groups, key=lambda g: len(g.name)).cage
            self._cages[key] = found
        return found

    @cache  # noqa: B019 - one chooser per expansion; the cache dies with it
    def candidates(self, cage_a: Cage, cage_b: Cage, speed: float) -> list[tuple[float, CableMedia]]:
        out = []
        for media in self.media:
            if cage_a not in media.cages or cage_b not in media.cages:
                continue
            speeds = sorted(media.reach_m)
            i = bisect.bisect_left(speeds, speed)
            if i < len(speeds):
                out.append((media.reach_m[speeds[i]], media))
        return out

    def choose(self, link: Link, a: Device, b: Device, length: float) -> tuple[CableMedia, float] | None:
        for reach, media in self.candidates(self.cage(a, link.a_port), self.cage(b, link.b_port), link.speed_gbps):
            if length <= reach:
                classes = media.length_classes_m
                i = bisect.bisect_left(classes, length - 1e-9)
                if i < len(classes):
                    return media, classes[i]
        return None


def cable_links(ctx: ExpandContext) -> None:
    topo, floor = ctx.topo, ctx.bp.floor
    chooser = MediaChooser(ctx)
    pitch, row_pitch = floor.rack_pitch_mm / 1000, floor.row_pitch_mm / 1000
    unreachable = 0
    chosen_for: dict[tuple[str, str, str, str, float, float], tuple[CableMedia, float] | None] = {}
    """The choice depends on the two cages (model and port name), the speed and the length only."""
    for link in topo.links:
        a, b = topo.devices[link.a], topo.devices[link.b]
        if a.rack is None or b.rack is None:
            continue
        length = run_length_m(a, b, topo.racks[a.rack], topo.racks[b.rack], pitch, row_pitch, floor.cable_slack_m)
        link.length_m = length
        key = (
            a.model,
            link.a_port.rstrip(_PORT_NUMBER),
            b.model,
            link.b_port.rstrip(_PORT_NUMBER),
            link.speed_gbps,
            length,
        )
        if key in chosen_for:
            chosen = chosen_for[key]
        else:
            chosen = chosen_for[key] = chooser.choose(link, a, b, length)
        if chosen is None:
            unreachable += 1
            if unreachable <= 5:
                ctx.error(
                    codes.NO_CABLE_REACHES,
                    f"no cable media reaches {length:g} m at {link.speed_gbps:g}G "
                    f"between {link.a}:{link.a_port} and {link.b}:{link.b_port}",
                    ("fabrics", link.fabric),
                    "move the switches closer (switch_racks) or add a media type to the catalog",
                )
            continue
        link.media, link.length_class_m = chosen[0].label, chosen[1]
