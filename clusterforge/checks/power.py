"""Power: each rack's planned draw against its derated feeds, and PSU redundancy of every device,
also when one feed is lost (PSUs are spread over the rack's feeds in turn: PSU i on feed i mod feeds)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator

from .. import codes
from ..catalog.models import Device as CatalogDevice
from ..errors import Finding, Severity
from ..physical import DERATE, FILL
from .context import CheckContext
from .figures import catalog_device, planned_w

HEADROOM_WARN = FILL  # the share automatic placement fills to


def _feed_text(ctx: CheckContext, rack: str) -> str:
    rack_type = ctx.topo.racks[rack].rack_type
    feed = rack_type.feed
    return (
        f"{rack_type.feeds} x {feed.voltage_v:g} V {feed.phases}-phase {feed.current_a:g} A "
        f"({feed.capacity_kw:.1f} kW each), {rack_type.feed_redundancy}, derated to {DERATE:.0%}"
    )


def check_rack_power(ctx: CheckContext) -> Iterator[Finding]:
    for name, fig in ctx.figures.items():
        usable = fig.usable_power_kw
        if fig.power_kw > usable + 1e-9:
            yield ctx.finding(
                codes.RACK_POWER_OVER_FEEDS,
                Severity.ERROR,
                f"rack {name} plans {fig.power_kw:.1f} kW, more than "
                f"the {usable:.1f} kW its feeds can carry ({_feed_text(ctx, name)})",
                ctx.rack_path(name),
                name,
                "move nodes to other racks, or lower per_rack",
            )
        elif fig.power_kw > HEADROOM_WARN * usable:
            yield ctx.finding(
                codes.RACK_POWER_NEAR_LIMIT,
                Severity.WARNING,
                f"rack {name} plans {fig.power_kw:.1f} kW, "
                f"{fig.power_kw / usable:.0%} of the {usable:.1f} kW its feeds can carry",
                ctx.rack_path(name),
                name,
                "less than 10% headroom for growth and inrush",
            )


def surviving_shelves(shelves: int, rack_type_feeds: int, redundancy: str) -> int:
    """Power shelves still fed when one side (2N) or one feed (N+1) fails; shelves spread over feeds in turn."""
    if redundancy == "2N":
        return shelves - shelves // 2
    if redundancy == "N+1":
        return shelves - math.ceil(shelves / rack_type_feeds)
    return shelves


def check_power_shelves(ctx: CheckContext) -> Iterator[Finding]:
    """A rack powered through shelves (GB200 NVL72) is judged against the shelves left when a side fails."""
    catalog = ctx.valid.catalog
    no_spare: list[tuple[str, int, float, int, float, float]] = []
    for name, fig in sorted(ctx.figures.items()):
        if not fig.shelves or not fig.shelf_load_kw:
            continue
        rack_type = fig.rack.rack_type
        psus = catalog_device(catalog, fig.shelves[0]).psus
        assert psus is not None
        left = surviving_shelves(len(fig.shelves), rack_type.feeds, rack_type.feed_redundancy)
        full_kw = left * psus.count * psus.rating_w / 1000
        spare_kw = left * psus.required * psus.rating_w / 1000
        if fig.shelf_load_kw > full_kw + 1e-9:
            yield ctx.finding(
                codes.SHELVES_SIDE_LOSS,
                Severity.ERROR,
                f"rack {name}: when one side fails, {left} of "
                f"{len(fig.shelves)} power shelves ({full_kw:.1f} kW) remain for {fig.shelf_load_kw:.1f} "
                "kW of trays and switch trays",
                ctx.rack_path(name),
                name,
            )
        elif fig.shelf_load_kw > spare_kw + 1e-9:
            no_spare.append((name, left, fig.shelf_load_kw, left * psus.count, full_kw, spare_kw))
    if no_spare:
        name, left, load, count, full_kw, spare_kw = no_spare[0]
        racks = [r[0] for r in no_spare]
        shown = ", ".join(racks[:6]) + (", ..." if len(racks) > 6 else "")
        yield ctx.finding(
            codes.SHELVES_SIDE_LOSS_NO_SPARE,
            Severity.WARNING,
            f"{len(racks)} rack{'s' if len(racks) != 1 else ''} ({shown}): when one side fails, the "
            f"{left} power shelves left carry {load:.1f} kW on {count} PSUs ({full_kw:.1f} kW); with "
            f"one PSU per shelf kept spare ({psus_text(ctx, name)}) they carry {spare_kw:.1f} kW",
            ctx.rack_path(name),
            name,
        )


def psus_text(ctx: CheckContext, rack: str) -> str:
    psus = catalog_device(ctx.valid.catalog, ctx.figures[rack].shelves[0]).psus
    return psus.redundancy if psus else ""


def surviving_psus(count: int, feeds: int) -> int:
    """PSUs still fed when the feed with the most PSUs is lost."""
    return count - math.ceil(count / feeds)


def check_psu_redundancy(ctx: CheckContext) -> Iterator[Finding]:
    bp, catalog = ctx.valid.blueprint, ctx.valid.catalog
    short: dict[tuple[str, str], list[str]] = defaultdict(list)
    feed_loss: dict[tuple[str, str], list[tuple[str, int, float]]] = defaultdict(list)
    for device in ctx.topo.devices.values():
        entry: CatalogDevice = catalog_device(catalog, device)
        if entry.psus is None or device.rack is None:
            continue
        draw = planned_w(bp, catalog, device)
        key = (device.group or device.kind, device.model)
        if entry.psus.required * entry.psus.rating_w < draw:
            short[key].append(device.name)
        rack_type = ctx.topo.racks[device.rack].rack_type
        if rack_type.feeds >= 2 and rack_type.feed_redundancy != "none":
            left = surviving_psus(entry.psus.count, rack_type.feeds)
            if left * entry.psus.rating_w < draw:
                feed_loss[key].append((device.name, left, draw))
    for (owner, model), names in sorted(short.items()):
        psus = catalog_device(catalog, ctx.topo.devices[names[0]]).psus
        assert psus is not None
        yield ctx.finding(
            codes.PSU_REDUNDANCY,
            Severity.ERROR,
            f"{len(names)} {model} in '{owner}': {psus.required} of "
            f"{psus.count} PSUs ({psus.required * psus.rating_w / 1000:.1f} kW) cannot carry the planned "
            f"{planned_w(bp, catalog, ctx.topo.devices[names[0]]) / 1000:.1f} kW, so {psus.redundancy} "
            "redundancy does not hold",
            ctx.group_path(owner),
            owner,
        )
    for (owner, model), items in sorted(feed_loss.items()):
        name, left, draw = items[0]
        psus = catalog_device(catalog, ctx.topo.devices[name]).psus
        assert psus is not None
        racks = sorted({ctx.topo.devices[n].rack or "" for n, _, _ in items})
        yield ctx.finding(
            codes.FEED_LOSS,
            Severity.WARNING,
            f"{len(items)} {model} in '{owner}': when one feed is "
            f"lost, {left} of {psus.count} PSUs ({left * psus.rating_w / 1000:.1f} kW) remain for a "
            f"planned {draw / 1000:.1f} kW; the nodes throttle or stop (racks {', '.join(racks[:6])}"
            f"{', ...' if len(racks) > 6 else ''})",
            ctx.group_path(owner),
            owner,
            "set power.load_factor for the class to the measured peak, or use racks with more feeds",
        )
