"""Compare discovered links with the planned cables, in the terms a technician works in: each end's rack, U,
device and port, and the cable's label.

A discovered link that is a planned cable matches. Two discovered links that are two planned cables with one
end exchanged are a swap (at the device both wrong ends share), or a wrong rail when the two cables belong to
different rails. A link from a host port to a leaf of another rail is a wrong rail. Any other discovered link
is unexpected; a planned cable not found, and not part of a swap or wrong rail, is missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import codes

Key = tuple[str, str]
"""(device, port name)"""


@dataclass(frozen=True, slots=True)
class Place:
    rack: str
    u: int | None
    device: str
    port: str
    number: str = ""
    """InfiniBand port number, when it is not evident from the port name."""

    def text(self) -> str:
        where = f"{self.rack} U{self.u} " if self.rack and self.u is not None else f"{self.rack} " if self.rack else ""
        number = f" (IB port {self.number})" if self.number else ""
        return f"{where}{self.device} {self.port}{number}"

    def as_dict(self) -> dict[str, Any]:
        return {"rack": self.rack, "u": self.u, "device": self.device, "port": self.port}


@dataclass(frozen=True, slots=True)
class Cable:
    label: str
    fabric: str
    tier: str
    rail: int | None
    a: Place
    b: Place

    def ends(self) -> tuple[Key, Key]:
        return (self.a.device, self.a.port), (self.b.device, self.b.port)

    def text(self) -> str:
        rail = f", rail {self.rail}" if self.rail is not None else ""
        return f"{self.label} ({self.tier}{rail}): {self.a.text()} to {self.b.text()}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "fabric": self.fabric,
            "tier": self.tier,
            "rail": self.rail,
            "a": self.a.as_dict(),
            "b": self.b.as_dict(),
        }


KINDS = {
    codes.VERIFY_MISSING: "missing",
    codes.VERIFY_UNEXPECTED: "unexpected",
    codes.VERIFY_SWAPPED: "swapped",
    codes.VERIFY_WRONG_RAIL: "wrong-rail",
    codes.VERIFY_NOT_FAT_TREE: "not-fat-tree",
    codes.VERIFY_NO_SUCH_PORT: "no-such-port",
}


@dataclass(frozen=True, slots=True)
class Problem:
    code: str
    message: str
    planned: tuple[Cable, ...] = ()
    found: tuple[tuple[Place, Place], ...] = ()

    @property
    def kind(self) -> str:
        """missing, unexpected, swapped, wrong-rail, not-fat-tree or no-such-port"""
        return KINDS[self.code]

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "kind": self.kind,
            "message": self.message,
            "planned": [c.as_dict() for c in self.planned],
            "found": [[a.as_dict(), b.as_dict()] for a, b in self.found],
        }


@dataclass
class Comparison:
    source: str
    planned: int = 0
    discovered: int = 0
    matched: int = 0
    problems: list[Problem] = field(default_factory=list)


@dataclass
class Planned:
    """The plan's cables in a scope, indexed by end, and what the comparison needs to describe an end."""

    cables: list[Cable]
    rails: dict[str, int] = field(default_factory=dict)
    """Leaf -> its rail (rail-optimized fabrics)."""
    places: dict[str, tuple[str, int | None]] = field(default_factory=dict)
    """Device -> (rack, U)."""
    numbers: dict[Key, str] = field(default_factory=dict)
    """(switch, port name) -> InfiniBand port number, to show beside the name."""

    def place(self, key: Key) -> Place:
        rack, u = self.places.get(key[0], ("", None))
        return Place(rack, u, key[0], key[1], self.numbers.get(key, ""))


def compare(planned: Planned, discovered: Iterable[tuple[Key, Key]], source: str) -> Comparison:
    by_end: dict[Key, Cable] = {}
    for cable in planned.cables:
        for key in cable.ends():
            by_end[key] = cable
    planned_pairs = {frozenset(c.ends()): c for c in planned.cables}
    seen = {frozenset(pair) for pair in discovered if pair[0] != pair[1]}
    result = Comparison(source, len(planned.cables), len(seen))
    matched = {planned_pairs[pair].label for pair in seen if pair in planned_pairs}
    result.matched = len(matched)
    extra = sorted((tuple(sorted(pair)) for pair in seen if pair not in planned_pairs), key=str)
    explained: set[str] = set(matched)
    used: set[tuple[Key, ...]] = set()
    for pair in extra:
        if pair in used:
            continue
        problem, partner = _swap(planned, by_end, pair, set(map(lambda p: tuple(sorted(p)), seen)))
        if problem is not None and partner is not None and partner not in used:
            used.update({pair, partner})
            explained.update(c.label for c in problem.planned)
            result.problems.append(problem)
    for pair in extra:
        if pair in used:
            continue
        problem = _wrong_rail(planned, by_end, pair) or _unexpected(planned, by_end, pair)
        explained.update(c.label for c in problem.planned if problem.kind == "wrong-rail")
        result.problems.append(problem)
    for cable in planned.cables:
        if cable.label not in explained:
            result.problems.append(Problem(codes.VERIFY_MISSING, f"missing cable {cable.text()}", planned=(cable,)))
    result.problems.sort(key=lambda p: (p.kind, p.message))
    return result


def _other(cable: Cable, key: Key) -> Key:
    a, b = cable.ends()
    return b if a == key else a


def _swap(
    planned: Planned, by_end: dict[Key, Cable], pair: tuple[Key, ...], seen: set[tuple[Key, ...]]
) -> tuple[Problem | None, tuple[Key, ...] | None]:
    """Found e1-e2 and f1-f2 where the plan has e1-f1 and e2-f2: the two cables' ends are exchanged."""
    e1, e2 = pair
    c1, c2 = by_end.get(e1), by_end.get(e2)
    if c1 is None or c2 is None or c1 is c2:
        return None, None
    f1, f2 = _other(c1, e1), _other(c2, e2)
    partner = tuple(sorted((f1, f2)))
    if partner not in seen:
        return None, None
    found = ((planned.place(e1), planned.place(e2)), (planned.place(f1), planned.place(f2)))
    rails = {planned.rails.get(key[0]) for cable in (c1, c2) for key in cable.ends()} - {None}
    seen_as = f"found {found[0][0].text()} to {found[0][1].text()} and {found[1][0].text()} to {found[1][1].text()}"
    if len(rails) > 1 and "node-leaf" in (c1.tier, c2.tier):
        return Problem(
            codes.VERIFY_WRONG_RAIL,
            f"wrong rails: cables {c1.label} (rail {c1.rail}) and {c2.label} (rail {c2.rail}) are exchanged; {seen_as}",
            (c1, c2),
            found,
        ), partner
    at = e1 if e1[0] == f2[0] else e2 if e2[0] == f1[0] else None
    if at is None:
        return Problem(
            codes.VERIFY_SWAPPED, f"swapped: cables {c1.label} and {c2.label} are crossed; {seen_as}", (c1, c2), found
        ), partner
    mine, theirs = (e1, f2) if at == e1 else (e2, f1)
    return Problem(
        codes.VERIFY_SWAPPED,
        f"swapped: cables {c1.label} and {c2.label} are exchanged at {planned.place(mine).text()} and "
        f"{planned.place(theirs).port}; each port holds the other's cable",
        (c1, c2),
        found,
    ), partner


def _wrong_rail(planned: Planned, by_end: dict[Key, Cable], pair: tuple[Key, ...]) -> Problem | None:
    """A host port cabled to a leaf of another rail than its own."""
    for host_end, leaf_end in (pair, pair[::-1]):
        cable = by_end.get(host_end)
        leaf_rail = planned.rails.get(leaf_end[0])
        if cable is None or cable.tier != "node-leaf" or leaf_rail is None or cable.rail in (None, leaf_rail):
            continue
        if host_end[0] != cable.a.device:
            continue
        host, leaf = planned.place(host_end), planned.place(leaf_end)
        return Problem(
            codes.VERIFY_WRONG_RAIL,
            f"wrong rail: {host.text()} (rail {cable.rail}, cable {cable.label}) is cabled to {leaf.text()} "
            f"(a rail {leaf_rail} leaf)",
            (cable,),
            ((host, leaf),),
        )
    return None


def _unexpected(planned: Planned, by_end: dict[Key, Cable], pair: tuple[Key, ...]) -> Problem:
    a, b = planned.place(pair[0]), planned.place(pair[1])
    notes = [f"{key[0]} {key[1]} should hold {by_end[key].label}" for key in pair if key in by_end]
    tail = f" ({'; '.join(notes)})" if notes else " (neither port is cabled in the plan)"
    return Problem(codes.VERIFY_UNEXPECTED, f"unexpected cable: {a.text()} to {b.text()}{tail}", found=((a, b),))
