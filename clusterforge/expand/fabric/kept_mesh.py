"""A switch-to-switch mesh (leaf to spine, spine to core) laid out keeping the cables the lock file holds.

Each lower switch takes its uplink ports and each upper switch its downlink ports as a mesh without a lock
does (from the top and the bottom of their groups, as many as the mesh's counts ask). Within those ports, a
cable the lock file holds (`trunks`) keeps both its ports while its pair of switches still has a link to
spare in the new counts; then every lower switch's remaining ports take its remaining links, pair by pair in
order, each on the upper switch's next free port. When the counts are those of the lock (a render after a
render) every cable is kept, so the layout is the one a mesh without a lock makes.

When the upper tier grows (a second scalable unit doubles the spines: each leaf's 8 links per spine become
4), a leaf keeps 4 of its 8 cables to each old spine and moves the other 4, from the same leaf ports, to the
new spines; the old spine's freed ports take the new leaves. identity.py reports every cable that moved.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..topology import Device, Link, LinkTier
from .spread import Row

if TYPE_CHECKING:
    from .wiring import FabricWiring


def kept_mesh(
    wiring: FabricWiring,
    tier: LinkTier,
    lows: list[Device],
    highs: list[Device],
    rows: list[Row],
    held: dict[str, str],
) -> bool:
    """rows[i]: (j, k) for k links from lows[i] to highs[j], the lock's `held` trunks ('fabric/low:port' ->
    'high:port') kept where they fit; False (out of ports reported) when a switch has too few ports."""
    speed = wiring.up_speed
    ups = [wiring.up_ports(low) for low in lows]
    downs = [wiring.down_ports(high) for high in highs]
    totals = [sum(k for _, k in row) for row in rows]
    columns = [0] * len(highs)
    for row in rows:
        for j, k in row:
            columns[j] += k
    if any(up.free_native < total for up, total in zip(ups, totals, strict=True)) or any(
        down.capacity(speed) < k for down, k in zip(downs, columns, strict=True)
    ):
        return wiring.plain_mesh(tier, lows, highs, rows)
    low_ports = [up.take_high_many(total) for up, total in zip(ups, totals, strict=True)]
    high_ports = [down.take_low_many(speed, k) if k else [] for down, k in zip(downs, columns, strict=True)]
    as_held = _all_held(wiring.name, lows, highs, rows, low_ports, high_ports, held)
    if as_held is not None:
        start = len(wiring.topo.links)
        for low, ports, pairs in zip(lows, low_ports, as_held, strict=True):
            name, rail = low.name, low.rail
            wiring.topo.add_links(
                Link(wiring.name, tier, name, a, highs[j].name, b, speed, rail)
                for a, (j, b) in zip(ports, pairs, strict=True)
            )
        wiring.ctx.trunks_as_held.append(range(start, len(wiring.topo.links)))
        return True
    column = {high.name: j for j, high in enumerate(highs)}
    free_high = [dict.fromkeys(ports) for ports in high_ports]  # insertion-ordered sets
    budgets = [dict(row) for row in rows]  # upper switch index -> links left, in index order
    kept = [
        _kept(wiring.name, low, ports, held, column, free_high, budget)
        for low, ports, budget in zip(lows, low_ports, budgets, strict=True)
    ]
    for low, ports, budget, own in zip(lows, low_ports, budgets, kept, strict=True):
        rest = iter([port for port in ports if port not in own])
        for j, k in budget.items():
            for _ in range(k):
                high_port = next(iter(free_high[j]))
                del free_high[j][high_port]
                own[next(rest)] = (j, high_port)
        wiring.topo.add_links(_links(wiring.name, tier, low, highs, ports, own, speed))
    return True


def _all_held(
    fabric: str,
    lows: list[Device],
    highs: list[Device],
    rows: list[Row],
    low_ports: list[list[str]],
    high_ports: list[list[str]],
    held: dict[str, str],
) -> list[list[tuple[int, str]]] | None:
    """When the lock holds every cable of the mesh where a mesh without a lock lays it (a render after a
    render): per lower switch, (upper switch index, its port) for each of its ports in order, the links the loop
    of `kept_mesh` would keep, in its order (rows are in upper switch order); else None. Compared before any
    link is made, so that the links are made one switch after the other as a plain mesh makes them, not amid
    the loop's bookkeeping (at a million GPUs the cabling, which reads every link, took 1.7 CPU s longer)."""
    ends: list[list[tuple[int, str]]] = []
    taken = [0] * len(highs)
    for low, ports, row in zip(lows, low_ports, rows, strict=True):
        own: list[tuple[int, str]] = []
        for j, k in row:
            own += [(j, port) for port in high_ports[j][taken[j] : taken[j] + k]]
            taken[j] += k
        prefix, names = f"{fabric}/{low.name}:", [highs[j].name for j, _ in own]
        if any(held.get(prefix + a) != f"{name}:{b}" for a, name, (_, b) in zip(ports, names, own, strict=True)):
            return None
        ends.append(own)
    return ends


def _kept(
    fabric: str,
    low: Device,
    ports: list[str],
    held: dict[str, str],
    column: dict[str, int],
    free_high: list[dict[str, None]],
    budget: dict[int, int],
) -> dict[str, tuple[int, str]]:
    """The ports of `low` whose held cable stays: its upper switch is in the mesh with a link to spare for
    `low` (`budget`, decremented) and its upper port is among those the switch took and still free."""
    own: dict[str, tuple[int, str]] = {}
    prefix = f"{fabric}/{low.name}:"
    for port in ports:
        value = held.get(prefix + port)
        if value is None:
            continue
        high, _, high_port = value.partition(":")
        j = column.get(high)
        if j is not None and budget.get(j, 0) > 0 and high_port in free_high[j]:
            budget[j] -= 1
            del free_high[j][high_port]
            own[port] = (j, high_port)
    return own


def _links(
    fabric: str,
    tier: LinkTier,
    low: Device,
    highs: list[Device],
    ports: list[str],
    own: dict[str, tuple[int, str]],
    speed: float,
) -> Iterator[Link]:
    """The links of `low`, upper switch by upper switch, each's in the order its ports were taken: the order a
    mesh without a lock adds them in."""
    place = {port: n for n, port in enumerate(ports)}
    ordered = sorted(own.items(), key=lambda item: (item[1][0], place[item[0]]))
    for port, (j, high_port) in ordered:
        yield Link(fabric, tier, low.name, port, highs[j].name, high_port, speed, low.rail)
