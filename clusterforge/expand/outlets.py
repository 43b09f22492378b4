"""Power outlets: every PSU of every racked device on a rack PDU outlet, one PDU per feed.

PSU i of a device goes to feed i mod feeds, as the power check assumes (so a 2N rack's PSUs alternate
between feeds A and B); each PDU's outlets are handed out bottom-up in U order, so the plan reads like the
rack. A PDU with fewer outlets than the PSUs on its feed is a CF-POWER-007 warning.
"""

from __future__ import annotations

from collections import defaultdict

from .. import codes
from ..catalog.models import PDU
from ..catalog.models import Device as CatalogDevice
from .context import ExpandContext
from .topology import Outlet


def feed_name(index: int) -> str:
    """Feeds are lettered A, B, C, ... (then A2, B2, ... past Z)."""
    letter = chr(ord("A") + index % 26)
    return letter if index < 26 else f"{letter}{index // 26 + 1}"


def assign_outlets(ctx: ExpandContext) -> None:
    topo = ctx.topo
    default = ctx.bp.procurement.pdu_outlets
    by_rack = defaultdict(list)
    for device in topo.devices.values():
        if device.rack is not None:
            by_rack[device.rack].append(device)
    over: dict[str, tuple[int, int]] = {}
    for rack_name, devices in by_rack.items():
        rack_type = topo.racks[rack_name].rack_type
        feeds = rack_type.feeds
        pdu = ctx.catalog.entries.get(rack_type.pdu or "")
        capacity = pdu.outlets if isinstance(pdu, PDU) else default
        used = [0] * feeds
        for device in sorted(devices, key=lambda d: (d.u or 0, d.name)):
            entry = ctx.catalog.entries.get(device.model)
            if not isinstance(entry, CatalogDevice) or entry.psus is None:
                continue
            for psu in range(entry.psus.count):
                feed = psu % feeds
                used[feed] += 1
                name = feed_name(feed)
                topo.outlets.append(
                    Outlet(rack_name, device.name, psu + 1, name, f"{rack_name}-PDU-{name}", used[feed])
                )
        if max(used) > capacity:
            over[rack_name] = (max(used), capacity)
    if over:
        racks = sorted(over)
        shown = ", ".join(f"{r} ({over[r][0]})" for r in racks[:6]) + (", ..." if len(racks) > 6 else "")
        has = sorted({cap for _, cap in over.values()})
        ctx.warning(
            codes.PDU_OUTLETS_SHORT,
            f"{len(racks)} {'rack needs' if len(racks) == 1 else 'racks need'} more outlets on one PDU than its "
            f"{'/'.join(map(str, has))}: {shown}",
            ("procurement", "pdu_outlets"),
            "use PDUs with more outlets (procurement.pdu_outlets), or more feeds per rack",
        )
