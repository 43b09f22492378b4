"""CF-IDENT-006: the switch-to-switch cables the lock file holds that a render moves to other ports.

A mesh keeps every cable it can (fabric/kept_mesh.py); when a fabric changes shape (more or fewer spines or
cores), the share of a lower switch's uplinks each upper switch takes changes, and the surplus must be
re-patched by hand. The finding says how many move and between which switches; `clusterforge diff` lists
each one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator

from .. import codes
from ..errors import Finding, Severity, SourceLocation
from ..lockfile import Lock
from .topology import Link, Topology, a_end

NAMED = 4
"""Switches named per list in the message; the rest are counted."""


def trunks_moved(
    topo: Topology, lock: Lock, patched_tiers: Collection[str], as_held: list[range] | None = None
) -> Finding | None:
    """The finding for the lock's `trunks` that this render wires from the same lower port to another upper
    one; None when every one stays. Read link by link: at a million GPUs
    the 2 million switch-to-switch links' keys are made and let go one at a time, never held in a dict.
    `as_held`: ranges of `topo.links` known to be wired as the lock holds them (they stay, unread)."""
    held = lock.section("trunks")
    if not held:
        return None
    moved: dict[str, list[tuple[str, str, str]]] = {}
    skip = sorted(as_held or [], key=lambda r: r.start)
    stay = sum(map(len, skip))
    for link in _unread(topo.links, skip):
        if link.tier in patched_tiers:
            continue
        old = held.get(a_end(link))
        if old is None:
            continue
        if old == f"{link.b}:{link.b_port}":
            stay += 1
        else:  # its upper switch may be gone (fewer spines): the cable on the lower port is re-patched all the same
            moved.setdefault(link.fabric, []).append((link.a, old.partition(":")[0], link.b))
    count = sum(map(len, moved.values()))
    if not count:
        return None
    return Finding(
        codes.TRUNKS_REPATCHED,
        Severity.WARNING,
        f"{count} switch-to-switch cables the lock file holds move to other ports ({stay} stay): "
        + "; ".join(_fabric_moves(f, moved[f]) for f in sorted(moved)),
        location=SourceLocation(lock.where, 0, 0) if lock.where else None,
        hint="re-patch them as `clusterforge diff` lists them (Switch-to-switch cables re-patched) before the "
        "new switch configurations are applied, or keep the fabric's shape (as many spines and cores)",
    )


def _unread(links: list[Link], skip: list[range]) -> Iterator[Link]:
    """The links outside the `skip` ranges (sorted, not overlapping), in order."""
    at = 0
    for gap in skip:
        yield from links[at : gap.start]
        at = gap.stop
    yield from links[at:]


def _fabric_moves(fabric: str, moves: list[tuple[str, str, str]]) -> str:
    lows, olds, news = (Counter(move[k] for move in moves) for k in range(3))
    return f"fabric '{fabric}': on {_counted(lows)}, from {_counted(olds)} to {_counted(news)}"


def _counted(switches: Counter[str]) -> str:
    """'compute-leaf001 (16), compute-leaf002 (16), ... and 4 more', in name order."""
    names = sorted(switches)
    listed = ", ".join(f"{name} ({switches[name]})" for name in names[:NAMED])
    return listed + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")
