"""How long the identities of a removed device stay reserved: the hold period.

A device the lock file names and the blueprint no longer has is held: its host name, addresses, loopback, ASN
and switch ports stay reserved, so nothing new takes them while the device may still be in the field. The
lock's `held` section says since when: `removed 2026-12-05`, the date of the first render that found it gone
and was given a date (`render --date`, or SOURCE_DATE_EPOCH), or `removed` when no render was.

The blueprint's `hold_days` sets the period. A render given a date releases each device held at least that many
days; `hold_days: 0` releases at once; without `hold_days`, or a render without a date, nothing is released by
time. `--release-removed` releases every one. The wall clock is never read: the same blueprint, lock file and
date render the same files.
"""

from __future__ import annotations

from datetime import date, timedelta

from ..lockfile import Keep, Lock

REMOVED = "removed"


def removal_date(value: str) -> date | None:
    """The date of a `held` line's value ('removed 2026-12-05'), None for a bare 'removed'."""
    _, _, when = value.partition(" ")
    return date.fromisoformat(when) if when else None


def lock_devices(lock: Lock) -> set[str]:
    """Every device the lock file names (computed once per lock file)."""
    found = lock.cache.get("devices")
    if found is None:
        found = set(lock.section("hosts")) | set(lock.section("racks")) | set(lock.section("loopbacks"))
        found.update(lock.section("asns"), lock.section("held"))
        found.update(k.partition("/")[2].partition(":")[0] for k in lock.section("addresses"))
        lock.cache["devices"] = found
    return found


def released(keep: Keep, device: str) -> bool:
    """Whether a removed device's identities are given up by this render."""
    if keep.release_removed or keep.hold_days == 0:
        return True
    if keep.hold_days is None or keep.today is None or keep.lock is None:
        return False
    value = keep.lock.section("held").get(device)
    since = removal_date(value) if value else None
    return since is not None and keep.today >= since + timedelta(days=keep.hold_days)


def held_devices(keep: Keep) -> set[str]:
    """The devices the lock file names whose identities this render keeps reserved when they are gone from
    the blueprint (the caller knows which are gone)."""
    if keep.lock is None:
        return set()
    cached = keep.lock.cache.get(("held", keep.release_removed, keep.hold_days, keep.today))
    if cached is None:
        if keep.release_removed or keep.hold_days == 0:
            cached = set()
        else:
            cached = {d for d in lock_devices(keep.lock) if not released(keep, d)}
        keep.lock.cache[("held", keep.release_removed, keep.hold_days, keep.today)] = cached
    return cached


def held_value(keep: Keep, device: str) -> str:
    """The `held` line of a device held by this render: its date kept, or today's when it has none."""
    previous = keep.lock.section("held").get(device) if keep.lock is not None else None
    if previous and removal_date(previous) is not None:
        return previous
    return f"{REMOVED} {keep.today.isoformat()}" if keep.today is not None else REMOVED
