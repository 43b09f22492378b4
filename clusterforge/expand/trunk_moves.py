"""CF-IDENT-006: the switch-to-switch cables the lock file holds that a render moves to other ports.

A mesh keeps every cable it can (fabric/kept_mesh.py); when a fabric changes shape (more or fewer spines or
cores), the share of a lower switch's uplinks each upper switch takes changes, and the surplus must be
re-patched by hand. The finding says how many move and between which switches; `clusterforge diff` lists
each one.
"""

from __future__ import annotations

from collections import Counter

from .. import codes
from ..errors import Finding, Severity, SourceLocation
from ..lockfile import Lock
from .topology import Topology

NAMED = 4
"""Switches named per list in the message; the rest are counted."""


def trunks_moved(topo: Topology, lock: Lock, now: dict[str, str]) -> Finding | None:
    """The finding for the lock's `trunks` whose lower end `now` (this render's trunks) wires to another
    upper port, between switches that both remain; None when every one stays."""
    held = lock.section("trunks")
    if not held or held == now:  # a render after a render: compared in C (2 million cables at a million GPUs)
        return None
    moved: dict[str, list[tuple[str, str, str]]] = {}
    stay = 0
    for key, old in held.items():
        fabric, _, end = key.partition("/")
        low = end.partition(":")[0]
        if low not in topo.devices or old.partition(":")[0] not in topo.devices:
            continue
        new = now.get(key)
        if new == old:
            stay += 1
        elif new is not None:
            moved.setdefault(fabric, []).append((low, old.partition(":")[0], new.partition(":")[0]))
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


def _fabric_moves(fabric: str, moves: list[tuple[str, str, str]]) -> str:
    lows, olds, news = (Counter(move[k] for move in moves) for k in range(3))
    return f"fabric '{fabric}': on {_counted(lows)}, from {_counted(olds)} to {_counted(news)}"


def _counted(switches: Counter[str]) -> str:
    """'compute-leaf001 (16), compute-leaf002 (16), ... and 4 more', in name order."""
    names = sorted(switches)
    listed = ", ".join(f"{name} ({switches[name]})" for name in names[:NAMED])
    return listed + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")
