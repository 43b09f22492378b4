"""What the cabling plan and the bill of materials share: the cable table, every link once in plan order,
labelled, with where its ends stand and what it is built from.

Everything here is computed from the Topology and the catalog; the renderers only lay it out. A cluster of
100,000 GPUs has some 360,000 links but a few tens of thousands of devices and a few hundred kinds of link:
a cable refers to the shared `Place` of each end's device and the shared `LinkParts` of its kind, each
computed once, and the table is held as columns, so the work per cable is done by map, zip and sorted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import add, attrgetter, contains, mul
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from ...expand.topology import Link, Topology, a_end, a_ends
from ...validate import ValidBlueprint
from ..context import RenderContext
from .link_parts import LinkKinds, LinkParts, link_products

TIER_ORDER = {"node-leaf": 0, "leaf-spine": 1, "spine-core": 2, "oob-uplink": 3, "oob": 4, "mgmt": 5}
OTHER_TIER = 9

_DIGITS = re.compile(r"(\d+)")
_UNPLACED = (1 << 30, 0, "")
"""Floor position of a device outside any rack: after every rack."""

K = TypeVar("K", bound=Hashable)


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """'ib10/2' sorts after 'ib2/1': digits compare as numbers."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in _DIGITS.split(text) if part)


@dataclass(frozen=True, slots=True, eq=False)
class Place:
    """Where a device stands; every cable end on the device shares it (one object per device, so it
    compares and hashes by identity)."""

    row: str
    rack: str
    u: int | None
    device: str
    model: str
    number: int
    """The device's position in the topology: a number of its own."""


@dataclass(frozen=True, slots=True)
class CableRow:
    """One cable: its label, the link it makes, where both ends stand and what it is built from."""

    label: str
    link: Link
    a: Place
    b: Place
    parts: LinkParts


def dense_ranks(sort_keys: dict[K, Any]) -> dict[K, int]:
    """Each item's position when sorted by its key, items with equal keys sharing one: comparing ranks
    compares the keys, at the cost of one integer comparison."""
    ranks: dict[K, int] = {}
    rank, previous = -1, None
    for item, key in sorted(sort_keys.items(), key=lambda pair: pair[1]):
        if rank < 0 or key != previous:
            rank, previous = rank + 1, key
        ranks[item] = rank
    return ranks


def _places(topo: Topology) -> tuple[dict[str, Place], dict[str, int]]:
    """Every device's Place, and its rank on the floor: rack (row, position, name), U, then name."""
    places: dict[str, Place] = {}
    floor_keys: dict[str, tuple[object, ...]] = {}
    for number, device in enumerate(topo.devices.values()):
        rack = topo.racks.get(device.rack) if device.rack else None
        places[device.name] = Place(
            row=rack.row if rack else "",
            rack=device.rack or "",
            u=device.u,
            device=device.name,
            model=device.model,
            number=number,
        )
        where = (rack.row_index, rack.position, rack.name) if rack else _UNPLACED
        floor_keys[device.name] = (*where, device.u or 0, natural_key(device.name))
    return places, dense_ranks(floor_keys)


def column(items: Iterable[Any], name: str) -> list[Any]:
    """One attribute of every item, in order."""
    return list(map(attrgetter(name), items))


class Columns(dict[str, list[Any]]):
    """A list of items read attribute by attribute, each attribute once, on first use. Read in the items'
    own order, the order they were made in and lie in memory: faster than any other order."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__()
        self.source = items

    def __missing__(self, name: str) -> list[Any]:
        values = self[name] = column(self.source, name)
        return values


def combined(high: Iterable[int], low: Iterable[int], base: int) -> Iterator[int]:
    """high * base + low, item by item: with every low below base, the results order as (high, low) pairs."""
    return map(add, map(mul, high, repeat(base)), low)


def _digits(ranks: dict[K, int], place_value: int, values: list[K]) -> Iterator[int]:
    """Each value's rank times `place_value`."""
    return map({item: rank * place_value for item, rank in ranks.items()}.__getitem__, values)


def plan_order(valid: ValidBlueprint, links: Columns, floor: dict[str, int]) -> list[int]:
    """The indexes of the links in plan order: fabric in blueprint order, tier, then A end and B end by
    floor position (rack, U, device) and port.

    Each part of the order is a rank, and a link's ranks make one integer, a number with a digit per part
    (in a base per part wide enough for its ranks): the sort compares integers, and links alike in every
    part keep their order. A digit is the part's rank times its place value, looked up; the key, their sum."""
    fabric_order = {name: i for i, name in enumerate(valid.blueprint.fabrics)}
    fabrics, tiers, a_ports, b_ports = links["fabric"], links["tier"], links["a_port"], links["b_port"]
    fabric_rank = dense_ranks({f: (fabric_order.get(f, len(fabric_order)), f) for f in set(fabrics)})
    tier_rank = {tier: TIER_ORDER.get(tier, OTHER_TIER) for tier in set(tiers)}
    port_rank = dense_ranks({port: natural_key(port) for port in {*a_ports, *b_ports}})
    devices = max(floor.values(), default=0) + 1
    # place values, from the last part (B port) to the first (fabric)
    b_port = 1
    b_device = b_port * len(port_rank)
    a_port = b_device * devices
    a_device = a_port * len(port_rank)
    tier = a_device * devices
    fabric = tier * (OTHER_TIER + 1)
    keys = list(
        map(
            sum,
            zip(
                _digits(fabric_rank, fabric, fabrics),
                _digits(tier_rank, tier, tiers),
                _digits(floor, a_device, links["a"]),
                _digits(port_rank, a_port, a_ports),
                _digits(floor, b_device, links["b"]),
                _digits(port_rank, b_port, b_ports),
                strict=True,
            ),
        )
    )
    return sorted(range(len(keys)), key=keys.__getitem__)


@dataclass(frozen=True)
class CableTable:
    """Every link once, in plan order, as columns: entry i of each list is the i-th cable. Columns let the
    renderers go over 360,000 cables with map, zip and Counter instead of a Python loop per cable."""

    links: Columns
    """The topology's links, in the topology's order."""
    order: list[int]
    """Plan order: the index in `links` of each cable."""
    link_labels: list[str]
    """Each link's label, in plan order: its cable's `<fabric>-<number>` (numbered from 1 per fabric in plan
    order, zero-padded to five digits at least), with `/<leg>` when the cable carries several links."""
    cable_labels: dict[int, str]
    """Each cable's label, by its index in `Topology.cables`, in plan order."""
    a: list[Place]
    b: list[Place]
    parts: list[LinkParts]
    fabrics: dict[str, int]
    """Cables per fabric, in plan order: a fabric's cables are consecutive."""
    devices: int
    """Devices in the topology: every Place's number is below it."""
    places: dict[str, Place]
    """Every device's Place, by name."""
    kinds: LinkKinds
    _columns: dict[str, list[Any]] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.order)

    def column(self, name: str) -> list[Any]:
        """An attribute of every cable's link, in plan order: 'fabric', 'a_port', 'length_m', ..."""
        if name not in self._columns:
            self._columns[name] = self.in_order(self.links[name])
        return self._columns[name]

    def in_order(self, values: list[K]) -> list[K]:
        """Values given per link in the topology's order, put in plan order."""
        return in_order(values, self.order)

    def segments(self) -> Iterator[tuple[str, slice]]:
        """Each fabric and the slice of the table that holds its cables."""
        start = 0
        for fabric, count in self.fabrics.items():
            yield fabric, slice(start, start + count)
            start += count

    def labels(self) -> list[str]:
        return self.link_labels

    def rows(self) -> Iterator[CableRow]:
        links: list[Link] = in_order(self.links.source, self.order)
        return map(CableRow, self.labels(), links, self.a, self.b, self.parts)


def in_order(values: list[K], order: list[int]) -> list[K]:
    return list(map(values.__getitem__, order))


def _labels(
    topo: Topology, order: list[int], carriers: list[int], fabrics: list[str], counts: dict[str, int]
) -> tuple[list[str], dict[int, str]]:
    """Link labels in plan order and cable labels: a cable is numbered in its fabric when its first link
    comes; a link with no cable (CF-CABLE-002) takes a number of its own. `carriers` and `fabrics` are each
    link's cable and fabric in plan order (`order`: each one's index in the topology), `counts` the links
    per fabric in plan order (a fabric's links are consecutive).

    Worked out with maps over the columns: each cable's first position in plan order, the labels given
    there, and every link's label looked up by its cable's first position."""
    width = max([5, *(len(str(n)) for n in counts.values())])
    uncabled = min(carriers, default=0) < 0
    if uncabled:  # each link without a cable counts as a cable of its own
        carriers = [c if c >= 0 else -1 - i for i, c in enumerate(carriers)]
    last = len(carriers) - 1
    first_at = dict(zip(reversed(carriers), range(last, -1, -1), strict=True))  # a cable's first position
    every_link_a_cable = len(first_at) == len(carriers)
    firsts: Sequence[int] = range(len(carriers)) if every_link_a_cable else sorted(first_at.values())
    numbers = counts if every_link_a_cable else Counter(map(fabrics.__getitem__, firsts))  # cables per fabric
    labels: list[str] = []
    for fabric, count in numbers.items():  # in plan order, as a fabric's links are consecutive
        label = f"{fabric.replace('%', '%%')}-%0{width}d"  # printf-style: the fastest way to format 300,000
        labels += map(label.__mod__, range(1, count + 1))
    if every_link_a_cable:
        link_labels = labels
    else:
        label_at = dict(zip(firsts, labels, strict=True))
        link_labels = list(map(label_at.__getitem__, map(first_at.__getitem__, carriers)))
    cable_labels = dict(zip(map(carriers.__getitem__, firsts), labels, strict=True))
    if uncabled:
        cable_labels = {c: label for c, label in cable_labels.items() if c >= 0}
    _add_legs(topo, order, link_labels)
    return link_labels, cable_labels


def first_ends(topo: Topology, order: list[int], link_labels: list[str]) -> Iterator[tuple[str, str]]:
    """Each cable's label (without its leg) and 'network/device:port' of its first link in plan order."""
    seen: set[str] = set()
    links = topo.links
    for position, label in zip(order, link_labels, strict=True):
        base = label.partition("/")[0]
        if base not in seen:
            seen.add(base)
            link = links[position]
            yield base, a_end(link)


def cables_section(
    topo: Topology, order: list[int], link_labels: list[str], ends: list[str] | None = None
) -> dict[str, str]:
    """The lock file's `cables` section: 'network/device:port' of each link's A end (of `ends` by link index,
    when given) -> its cable's label (`link_ends`)."""
    if _legless(link_labels):
        keys = map(ends.__getitem__, order) if ends is not None else _ends(topo, order)
        return dict(zip(keys, link_labels, strict=True))
    return {end: label for label, end in link_ends(topo, order, link_labels)}


def _legless(link_labels: list[str]) -> bool:
    """Whether no link is a leg of a cable that carries several: then every link is a cable of its own, with
    a label of its own (`_labels`, `_relabelled`), and the work per cable is done by map and zip."""
    return not any(map(contains, link_labels, repeat("/")))


def _ends(topo: Topology, order: list[int]) -> Iterator[str]:
    """'network/device:port' of each link's A end, in plan order."""
    return a_ends(map(topo.links.__getitem__, order))


def link_ends(topo: Topology, order: list[int], link_labels: list[str]) -> Iterator[tuple[str, str]]:
    """Each link's cable label (without its leg) and 'network/device:port' of the link's A end, in plan order:
    the lock file's `cables` lines (a cable of several links is named by each, so it keeps its label when
    the device of its first link is removed)."""
    links = topo.links
    for position, label in zip(order, link_labels, strict=True):
        link = links[position]
        yield label.partition("/")[0], a_end(link)


def _cable_ends(topo: Topology, order: list[int], link_labels: list[str]) -> dict[str, list[str]]:
    """Each cable's label (without its leg) -> the A end of each of its links in plan order."""
    ends: dict[str, list[str]] = {}
    for label, end in link_ends(topo, order, link_labels):
        ends.setdefault(label, []).append(end)
    return ends


def _relabelled(
    topo: Topology, order: list[int], link_labels: list[str], cable_labels: dict[int, str]
) -> tuple[list[str], dict[int, str]]:
    """The labels with those the lock file holds kept: a cable whose first end it holds keeps its label, a new
    cable takes the next number of its fabric after the highest the lock file holds, in plan order."""
    held = topo.held_labels
    if _legless(link_labels) and list(map(held.get, _ends(topo, order))) == link_labels:
        return link_labels, cable_labels  # every cable keeps its label (a render after a render): 5 s at 1M GPUs
    top: dict[str, int] = {}
    for label in held.values():
        fabric, _, number = label.rpartition("-")
        if number.isdigit():
            top[fabric] = max(top.get(fabric, 0), int(number))
    rename: dict[str, str] = {}
    used: set[str] = set()
    new: list[tuple[str, str]] = []
    for base, ends in _cable_ends(topo, order, link_labels).items():
        kept = next((held[end] for end in ends if end in held and held[end] not in used), None)
        if kept is None:  # by its first end, or another leg's (a harness whose first leg's device was removed)
            new.append((base, ends[0].partition("/")[0]))
        else:
            rename[base] = kept
            used.add(kept)
    for base, fabric in new:
        top[fabric] = next_number = top.get(fabric, 0) + 1
        rename[base] = f"{fabric}-{next_number:0{len(base.rpartition('-')[2])}d}"
    relabelled = [rename[base] + sep + leg for base, sep, leg in (label.partition("/") for label in link_labels)]
    return relabelled, {cable: rename[label] for cable, label in cable_labels.items()}


def _add_legs(topo: Topology, order: list[int], link_labels: list[str]) -> None:
    """`/<leg>` on the label of each link of a cable that carries several, legs counted in the cable's order."""
    legs = [(link, leg) for cable in topo.cables if len(cable.links) > 1 for leg, link in enumerate(cable.links, 1)]
    if legs:
        position = dict(zip(order, range(len(order)), strict=True))
        for link, leg in legs:
            link_labels[position[link]] += f"/{leg}"


_TABLES: WeakKeyDictionary[Topology, tuple[ValidBlueprint, tuple[int, ...], CableTable]] = WeakKeyDictionary()
"""The last cable table per topology (with its blueprint and links, by count and ends): the cabling plan, the
BOM and the InfiniBand files all list the same cables."""


def _links_key(topo: Topology) -> tuple[int, ...]:
    links = topo.links
    return (len(links), id(links[0]), id(links[-1])) if links else (0,)


def cable_table(valid: ValidBlueprint, topo: Topology) -> CableTable:
    """Every link once, in plan order (see `plan_order`), labelled, with its ends' places and its parts.
    The work per link is done in the topology's order; the results are then put in plan order. Worked out
    once per topology: do not change the result."""
    known = _TABLES.get(topo)
    if known is not None and known[0] is valid and known[1] == _links_key(topo):
        return known[2]
    table = _cable_table(valid, topo)
    _TABLES[topo] = (valid, _links_key(topo), table)
    return table


def _cable_table(valid: ValidBlueprint, topo: Topology) -> CableTable:
    places, floor = _places(topo)
    links = Columns(topo.links)
    order = plan_order(valid, links, floor)
    a = list(map(places.__getitem__, links["a"]))
    b = list(map(places.__getitem__, links["b"]))
    kinds = zip(
        links["speed_gbps"], links["media"], link_products(topo), links["a_module"], links["b_module"], strict=True
    )
    link_kinds = LinkKinds(valid)
    parts = list(map(link_kinds.__getitem__, kinds))
    in_plan = {name: in_order(links[name], order) for name in ("fabric", "cable")}  # the table's first columns
    fabrics = Counter(in_plan["fabric"])
    link_labels, cable_labels = _labels(topo, order, in_plan["cable"], in_plan["fabric"], fabrics)
    if topo.held_labels:
        link_labels, cable_labels = _relabelled(topo, order, link_labels, cable_labels)
    return CableTable(
        links=links,
        order=order,
        link_labels=link_labels,
        cable_labels=cable_labels,
        a=in_order(a, order),
        b=in_order(b, order),
        parts=in_order(parts, order),
        fabrics=dict(fabrics),
        devices=len(places),
        places=places,
        kinds=link_kinds,
        _columns=in_plan,
    )


def shared_cable_table(ctx: RenderContext) -> CableTable:
    """The cable table of `ctx`, built once for all the renderers that list or count cables."""
    return ctx.shared(_table_of)


def _table_of(ctx: RenderContext) -> CableTable:
    return cable_table(ctx.valid, ctx.topo)
