"""How many upper-tier switches a group of lower switches needs, and how their links spread over them.

For lower switches with u_1..u_n uplinks and upper switches of P usable ports, the fewest that can take
every link is ceil(sum(u) / P). That count is rounded up only where an even spread needs it: to the
smallest count that divides every u_i, so each lower/upper pair carries the same number of links, as
long as every upper switch still uses at least three quarters of its ports (the DGX SuperPOD reference
builds 3 SU with 16 spines at 48 of 64 ports rather than 12). Otherwise (31 uplinks per leaf, a prime;
or 5 cores that would become 8 at 40 of 64 ports) the bound itself is used and pairs carry k or k+1 links.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def uplinks_for(downlinks: int, down_gbps: float, up_gbps: float, ratio: float) -> int:
    """Uplinks a switch with `downlinks` ports at `down_gbps` needs at oversubscription `ratio` (down:up)."""
    if downlinks <= 0:
        return 1
    return max(1, math.ceil(downlinks * down_gbps / (ratio * up_gbps) - 1e-9))


def fewest_switches(uplinks: Sequence[int], ports: int) -> int:
    """ceil(total uplinks / usable ports): the bound no upper tier may exceed without a reason."""
    return max(1, math.ceil(sum(uplinks) / max(ports, 1)))


def switch_count(uplinks: Sequence[int], ports: int) -> int:
    """Upper switches for lower switches with `uplinks` each, `ports` usable ports per upper switch."""
    bound = fewest_switches(uplinks, ports)
    total = sum(uplinks)
    count = bound
    while 4 * total >= 3 * count * ports:  # each switch keeps at least 3/4 of its ports in use
        if all(u % count == 0 for u in uplinks):
            return count
        count += 1
    return bound


Row = list[tuple[int, int]]
"""One lower switch's links: (upper switch index, links) for each upper switch it has a link to, in index order."""


def spread(uplinks: Sequence[int], switches: int) -> list[Row]:
    """Links from each lower switch to each of `switches` upper ones, as even as possible both ways:
    lower switch i's links go to consecutive upper switches, continuing where switch i-1 stopped, so a
    pair carries floor or ceil of u_i / switches links and an upper switch ceil(total / switches) at most.
    Pairs that carry no link are left out: at a million GPUs a spine's 32 uplinks meet 32 of its plane's 977
    cores, and `FabricWiring.mesh` walked the full rows (30 million counts, 4 CPU s of expansion)."""
    out: list[Row] = []
    start = 0
    for u in uplinks:
        base, extra = divmod(u, switches)
        if base:
            counts = [base] * switches
            for j in range(extra):
                counts[(start + j) % switches] += 1
            out.append(list(enumerate(counts)))
        else:
            out.append([(j, 1) for j in sorted((start + j) % switches for j in range(extra))])
        start = (start + extra) % switches
    return out
