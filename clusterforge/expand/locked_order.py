"""The order a fabric wires its ports in when a lock file holds where they were patched: what the lock holds
in the order of the switch ports it had, with a hole where a removed device was, so removing a device frees
its ports and never shifts the devices after it onto them.

A hole is filled by a new device of the same width (ports on the network) unless the removed device is still
held (the lock's `held` section, see identity.py); a hole after the last device the lock holds is left out when
nothing holds it, so a network that shrinks at its end gives its ports up.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Generic, TypeVar

T = TypeVar("T")
SortKey = tuple[Any, ...]
LATE: SortKey = ((chr(0x10FFFF),),)
"""A sort key after every port_order key: what the lock file does not hold comes last."""


@dataclass(frozen=True)
class Hole:
    """The ports a removed device had: wired to nothing, kept out of every other device's way."""

    owner: str
    width: int
    held: bool


@dataclass(frozen=True)
class Slots(Generic[T]):
    """How to read the items of one network: their lock keys ('device:port') and who owns a key."""

    keys: Callable[[T], list[str]]
    owner: Callable[[str], str]
    """A removed item's name from one of its keys: the device (one item per device) or the key itself."""


def locked_order(items: list[T], slots: Slots[T], patched: dict[str, SortKey], held: Collection[str]) -> list[T | Hole]:
    """`items` as the lock file holds them (see the module's text); `patched`: 'device:port' -> the sort key
    of the switch port the lock file holds for it, on this network (identity.port_order)."""
    if not patched:
        return list(items)
    keys = list(map(slots.keys, items))
    present = {key for item_keys in keys for key in item_keys}
    ranked: list[tuple[SortKey, int, int]] = []
    new: list[T] = []
    for i, item_keys in enumerate(keys):
        first = min(map(patched.get, item_keys, repeat(LATE)), default=LATE)
        if first is LATE:
            new.append(items[i])
        else:
            ranked.append((first, 0, i))
    removed: dict[str, list[SortKey]] = {}
    for key in patched.keys() - present:  # in no particular order: only each owner's count and least key tell
        removed.setdefault(slots.owner(key), []).append(patched[key])
    last = max((first for first, _, _ in ranked), default=None)
    holes: list[Hole] = []
    for owner, wheres in sorted(removed.items()):
        hole = Hole(owner, len(wheres), owner.partition(":")[0] in held)
        if hole.held or (last is not None and min(wheres) < last):
            ranked.append((min(wheres), 1, len(holes)))
            holes.append(hole)
    ranked.sort()
    filled = _filled(ranked, items, holes, new, slots)
    return list(filled)


def _filled(
    ranked: list[tuple[SortKey, int, int]], items: list[T], holes: list[Hole], new: list[T], slots: Slots[T]
) -> Iterator[T | Hole]:
    """Each locked item and hole in order, a free hole taken by the next new item of its width; then the new
    items no hole took."""
    waiting = list(new)
    for _, is_hole, i in ranked:
        if not is_hole:
            yield items[i]
            continue
        hole = holes[i]
        fits = None if hole.held else next((n for n in waiting if len(slots.keys(n)) == hole.width), None)
        if fits is None:
            yield hole
        else:
            waiting.remove(fits)
            yield fits
    yield from waiting
