"""Physical cables for the plan: one row per cable, labelled, with both ends and a printable label for each.

Labels come from the cable table (`handoff_common`): a cable's is `<fabric>-<number>`, a link's its cable's
with `/<leg>` when the cable carries several links (a twin-port cable, a splitter).
The A end of a cable is its single plug: the hub of a splitter, else the links' A end.

A cluster of 100,000 GPUs has some 320,000 cables, nearly all of them one link each, whose ends are that
link's ends: those are read as columns of the cable table (`CableList`), and only the other cables (twin-port
cables, splitters) get `CableRow` objects. What the summaries count is counted once, in `CableList.tally`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TypeVar

from ...expand.topology import Cable, Link
from ..context import RenderContext
from .handoff_common import CableTable, Place, in_order, shared_cable_table

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CableEnd:
    """One end of a cable: where its plug or plugs (a splitter's legs) go."""

    places: list[Place]
    """The device of each plug (one for a single plug; a splitter's legs each their own)."""
    ports: list[str]
    """The port of each link at this end, in leg order."""
    module: str
    """Transceiver part number in the cage(s), for fibre ('' otherwise)."""

    def column(self, name: str) -> str:
        """A Place field over the end's plugs: once when every plug has it ('A01'), else one per plug in leg
        order ('A01 / A01 / A02'), so each leg can be read off, whatever the others hold."""
        values = ["" if (value := getattr(place, name)) is None else str(value) for place in self.places]
        return values[0] if len(set(values)) == 1 else " / ".join(values)

    def where(self) -> str:
        """'A01 U1 gpu001 ib1', a twin-port plug 'N01 U34 compute-leaf008 ib17/1+ib17/2', a splitter's legs
        joined with ' / '."""
        if len(self.places) == 1:
            return f"{place_where(self.places[0])}{'+'.join(self.ports)}"
        legs = zip(self.places, self.ports, strict=True)
        return " / ".join(f"{place_where(p)}{port}" for p, port in legs)

    def racks(self) -> tuple[str, ...]:
        """The racks of the end's plugs, each once, in leg order."""
        return tuple(dict.fromkeys(p.rack for p in self.places))


def place_where(place: Place) -> str:
    """Where a plug goes, up to its port: 'A01 U1 gpu001 '."""
    return f"{place.rack} U{place.u} {place.device} "


@dataclass(frozen=True, slots=True)
class CableRow:
    label: str
    fabric: str
    tier: str
    rail: int | None
    cable: Cable
    links: list[Link]
    a: CableEnd
    b: CableEnd

    @property
    def a_label(self) -> str:
        """What to print on the label at the A end: the label, where this end goes and where the other."""
        return f"{self.label} | {self.a.where()} | to {self.b.where()}"

    @property
    def b_label(self) -> str:
        return f"{self.label} | {self.b.where()} | to {self.a.where()}"


CableKind = tuple[str, str, str, float, int]
"""Media, product (catalog key), part number, ordered length, pieces: what the summaries and the BOM count."""
cable_kind = attrgetter("media", "product", "part_number", "length_class_m", "pieces")
TallyKey = tuple[str, tuple[str, ...], tuple[str, ...], CableKind]
"""Fabric, the racks of the A end and of the B end (each once, in leg order), the cable's kind."""


@dataclass(frozen=True)
class CableList:
    """Every cable once, in plan order, as columns: entry i of each list is the i-th cable."""

    table: CableTable
    labels: list[str]
    cables: list[Cable]
    kinds: list[CableKind]
    positions: list[int] | None
    """Where each cable's first link stands in the cable table (plan order); None when every link is a
    cable of its own, so that the i-th cable is the table's i-th link."""
    irregular: dict[int, CableRow]
    """The cables whose ends are not simply their one link's A and B ends (several links, a hub at the B
    end), by position in the list."""
    fabrics: list[str]
    tally: Counter[TallyKey]
    """How many cables share a fabric, the racks of both ends and a kind: what the summaries count."""
    _rows: list[CableRow] = field(default_factory=list, init=False, repr=False, compare=False)
    """Made on first use; a copy (dataclasses.replace) starts without them, so its rows carry its labels."""

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def link_labels(self) -> list[str]:
        """Each link's label, in the cable table's (plan) order."""
        return self.table.link_labels

    def at_cables(self, values: list[T]) -> list[T]:
        """Values given per link in plan order, taken at each cable's first link (do not change the result:
        it may be `values` itself)."""
        return taken_at(values, self.positions)

    def rows(self) -> list[CableRow]:
        """Every cable as a CableRow: for the per-rack lists of a small cluster (an object per cable)."""
        if not self._rows:
            links = self.table.links.source
            rows = (_row(self.table, c, label, links) for c, label in zip(self.cables, self.labels, strict=True))
            self._rows.extend(rows)
        return self._rows


def shared_cable_list(ctx: RenderContext) -> CableList:
    return ctx.shared(_cable_list)


def _cable_list(ctx: RenderContext) -> CableList:
    return cable_list(ctx, shared_cable_table(ctx))


def cable_list(ctx: RenderContext, table: CableTable) -> CableList:
    """The cables of `table`, in its (plan) order: columns for all, rows for the irregular ones."""
    labels = list(table.cable_labels.values())
    cables = in_order(ctx.topo.cables, list(table.cable_labels))
    positions = _first_links(table)
    simple = positions is None and not any(map(attrgetter("hub_is_b"), cables))  # one link each, plug at A
    irregular = {} if simple else _irregular(table, cables, labels, ctx.topo.links)
    fabrics = taken_at(table.column("fabric"), positions)
    if irregular:
        fabrics = list(fabrics)
        for i, row in irregular.items():
            fabrics[i] = row.fabric
    numbers = _Numbering()
    kind_numbers = list(map(numbers.__getitem__, map(cable_kind, cables)))
    kinds = in_order(list(numbers), kind_numbers)  # equal kinds one tuple: no tuple per cable to keep
    columns = (fabrics, taken_at(table.a, positions), taken_at(table.b, positions), kind_numbers)
    tally = _tally(*columns, list(numbers), irregular)
    return CableList(table, labels, cables, kinds, positions, irregular, fabrics, tally)


class _Numbering(dict[CableKind, int]):
    """A number for each distinct value, from 0 in the order they come."""

    def __missing__(self, value: CableKind) -> int:
        number = self[value] = len(self)
        return number


def taken_at(values: list[T], positions: list[int] | None) -> list[T]:
    """`values` at `positions`; `values` itself for None."""
    return values if positions is None else in_order(values, positions)


def _first_links(table: CableTable) -> list[int] | None:
    """Where each cable's first link stands in the table; None when each link is a cable of its own."""
    carriers = table.column("cable")
    if carriers == list(table.cable_labels):  # cables numbered as their links come: each link its own cable
        return None
    first_at = dict(zip(reversed(carriers), range(len(carriers) - 1, -1, -1), strict=True))  # the first wins
    return list(map(first_at.__getitem__, table.cable_labels))


def _irregular(table: CableTable, cables: list[Cable], labels: list[str], links: list[Link]) -> dict[int, CableRow]:
    return {
        i: _row(table, cable, labels[i], links)
        for i, cable in enumerate(cables)
        if len(cable.links) > 1 or cable.hub_is_b
    }


def _tally(
    fabrics: list[str],
    a: list[Place],
    b: list[Place],
    kind_numbers: list[int],
    kinds: list[CableKind],
    irregular: dict[int, CableRow],
) -> Counter[TallyKey]:
    """Cables counted by fabric, end racks and kind (by its number in `kinds`): a few thousand keys for
    320,000 cables. The columns are counted as if every cable were its first link; the irregular cables are
    then counted again right."""
    rack = attrgetter("rack")
    columns = (fabrics, list(map(rack, a)), list(map(rack, b)), kind_numbers)
    simple: Counter[tuple[str, str, str, int]] = Counter(zip(*columns, strict=True))
    for i in irregular:
        simple[columns[0][i], columns[1][i], columns[2][i], columns[3][i]] -= 1
    tally: Counter[TallyKey] = Counter(
        {(fabric, (a_rack,), (b_rack,), kinds[kind]): n for (fabric, a_rack, b_rack, kind), n in simple.items() if n}
    )
    for row in irregular.values():
        tally[row.fabric, row.a.racks(), row.b.racks(), cable_kind(row.cable)] += 1
    return tally


def _row(table: CableTable, cable: Cable, label: str, all_links: list[Link]) -> CableRow:
    """The cable's row, its A end the single plug (a splitter's hub); places are the cable table's."""
    links = [all_links[i] for i in cable.links]
    first, places = links[0], table.places
    ends = [
        ([places[link.a] for link in links], [link.a_port for link in links], first.a_module),
        ([places[link.b] for link in links], [link.b_port for link in links], first.b_module),
    ]
    if cable.hub_is_b:
        ends.reverse()
    splitter = len(links) > 1 and (cable.hub_is_b or len({p.device for p in ends[1][0]}) > 1)
    a, b = (
        CableEnd(plugs if splitter and side == 1 else plugs[:1], ports, table.kinds.part_number(module))
        for side, (plugs, ports, module) in enumerate(ends)
    )
    return CableRow(label, first.fabric, first.tier, first.rail, cable, links, a, b)
