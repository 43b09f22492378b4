"""Bill of materials: handoff/bom.csv, what to order, counted from the expanded topology.

Racks by rack type, one PDU per feed per rack, devices by catalog model, transceiver modules by type
(one per optical link end, ports sharing a twin-port or breakout cage share one module), and cables by
media, cable type and ordered length. Quantities reconcile with `clusterforge plan` and handoff/cabling.csv.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import chain, compress
from operator import attrgetter, is_not

from ..catalog import CableMedia
from ..catalog.models import Sourced
from .context import RenderContext
from .escape import csv_text
from .handoff_common import CableTable, cage_of, column, combined, shared_cable_table
from .link_parts import OPTIC_SOURCE, PortModule

BOM_CSV = "handoff/bom.csv"
BOM_HEADER = ["category", "item", "description", "quantity", "link_ends", "note"]
CATEGORY_ORDER = ("rack", "pdu", "server", "switch", "built-in equipment", "equipment", "transceiver", "cable")


@dataclass(frozen=True, slots=True)
class BomLine:
    category: str
    item: str
    description: str
    quantity: int
    link_ends: int | None = None
    """For transceivers: the link ends the modules serve (a twin-port module serves two)."""
    note: str = ""

    def sort_key(self) -> tuple[int, str, str]:
        return (CATEGORY_ORDER.index(self.category), self.item, self.description)

    def csv(self) -> list[object]:
        return [
            self.category,
            self.item,
            self.description,
            self.quantity,
            self.link_ends if self.link_ends is not None else "",
            self.note,
        ]


def _product(entry: Sourced | None, key: str) -> str:
    return f"{entry.vendor} {entry.name}" if entry is not None else key


def _mix(counter: Counter[str]) -> str:
    return ", ".join(f"{n} {what}" for what, n in sorted(counter.items()))


def rack_lines(ctx: RenderContext) -> list[BomLine]:
    racks: dict[str, list[str]] = defaultdict(list)
    used = {d.rack for d in ctx.topo.devices.values() if d.rack}
    for rack in ctx.topo.racks.values():
        racks[rack.type_key].append(rack.name)
    lines = []
    for key, names in sorted(racks.items()):
        rack_type = ctx.topo.racks[names[0]].rack_type
        empty = [n for n in names if n not in used]
        note = f"{len(empty)} empty on this plan" if empty else ""
        lines.append(BomLine("rack", key, _product(rack_type, key), len(names), note=note))
    return lines


def pdu_lines(ctx: RenderContext) -> list[BomLine]:
    """One PDU per rack feed, grouped by what the feed is (voltage, phases, breaker)."""
    feeds: Counter[tuple[float, int, float]] = Counter()
    racks: dict[tuple[float, int, float], Counter[str]] = defaultdict(Counter)
    for rack in ctx.topo.racks.values():
        feed = rack.rack_type.feed
        spec = (feed.voltage_v, feed.phases, feed.current_a)
        feeds[spec] += rack.rack_type.feeds
        racks[spec][f"{rack.rack_type.feeds} feeds {rack.rack_type.feed_redundancy}"] += 1
    lines = []
    for (volts, phases, amps), count in sorted(feeds.items()):
        kw = ((3**0.5 if phases == 3 else 1.0) * volts * amps) / 1000
        item = f"pdu:{volts:g}V-{phases}ph-{amps:g}A"
        description = f"Rack PDU, {volts:g} V {'3-phase' if phases == 3 else 'single-phase'} {amps:g} A ({kw:.1f} kW)"
        per_rack = _mix(Counter({f"racks with {k}": n for k, n in racks[(volts, phases, amps)].items()}))
        note = f"one per feed per rack ({per_rack}); check whether the rack type ships with PDUs"
        lines.append(BomLine("pdu", item, description, count, note=note))
    return lines


def device_lines(ctx: RenderContext) -> list[BomLine]:
    built_in = {
        f"{rack.name}-{fixed.name}" for rack in ctx.topo.racks.values() for fixed in rack.rack_type.fixed_devices
    }
    groups: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for device in ctx.topo.devices.values():
        if device.name in built_in:
            category = "built-in equipment"
        else:
            category = {"node": "server", "switch": "switch"}.get(device.kind, "equipment")
        groups[(category, device.model)][device.role] += 1
    lines = []
    for (category, model), roles in groups.items():
        entry = ctx.valid.catalog.entries.get(model)
        note = f"roles: {_mix(roles)}"
        if category == "built-in equipment":
            note += "; built into its rack type, ships with the rack"
        lines.append(BomLine(category, model, _product(entry, model), sum(roles.values()), note=note))
    return lines


def _kind(module: PortModule) -> tuple[str, str]:
    return (module.transceiver_key, module.transceiver)


class _CageNames(dict[str, int]):
    """Each port's cage name as a number (in order of first use), worked out once per port name."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: dict[str, int] = {}

    def __missing__(self, port: str) -> int:
        number = self[port] = self.numbers.setdefault(cage_of(port), len(self.numbers))
        return number


def _optical_ends(table: CableTable) -> tuple[list[int], list[PortModule]]:
    """Every optical link end in label order (A end before B end): its cage and its module. A cage is a
    number, from its cage name's and its device's (there are hundreds of thousands of cages)."""
    optical = column(table.parts, "optical")
    parts = list(compress(table.parts, optical))
    modules = [*chain.from_iterable(zip(column(parts, "a"), column(parts, "b"), strict=True))]
    places = chain.from_iterable(zip(compress(table.a, optical), compress(table.b, optical), strict=True))
    ports = chain.from_iterable(
        zip(compress(table.column("a_port"), optical), compress(table.column("b_port"), optical), strict=True)
    )
    cages = combined(map(_CageNames().__getitem__, ports), map(attrgetter("number"), places), table.devices)
    return list(cages), modules


def _ends_by_cage_module(
    table: CableTable,
) -> tuple[Counter[PortModule], Counter[tuple[str, str]], dict[int, PortModule]]:
    """Optical link ends counted by their cage's module; of those, the ends needing another optic, by
    module kind; and the module of every occupied cage: the module of its first end in label order."""
    cages, modules = _optical_ends(table)
    # a dict keeps the last value written for a key: written back to front, that is the first end's
    cage_module = dict(zip(reversed(cages), reversed(modules), strict=True))
    in_cage = list(map(cage_module.__getitem__, cages))
    ends = Counter(modules)
    mixed: Counter[tuple[str, str]] = Counter()
    for index in compress(range(len(modules)), map(is_not, in_cage, modules)):  # its cage holds another module
        ends[modules[index]] -= 1
        ends[in_cage[index]] += 1
        if _kind(in_cage[index]) != _kind(modules[index]):
            mixed[_kind(in_cage[index])] += 1
    return ends, mixed, cage_module


def transceiver_lines(table: CableTable) -> list[BomLine]:
    """Modules by type: one per occupied cage; link_ends counts the ports they serve (two per optical link).

    A cage whose ports go to ends needing different optics (a breakout split between, say, a 2-lane and a
    4-lane peer) is counted once, as the module of its first cable in label order, and flagged."""
    by_module, mixed, cage_module = _ends_by_cage_module(table)
    modules: Counter[tuple[str, str]] = Counter()
    for module, n in Counter(cage_module.values()).items():
        modules[_kind(module)] += n
    ends: Counter[tuple[str, str]] = Counter()
    models: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for module, n in by_module.items():
        if n:
            ends[_kind(module)] += n
            models[_kind(module)][module.model] += n
    lines = []
    for kind, n in ends.items():
        note = f"in {_mix(models[kind])} ports"
        if mixed[kind]:
            note += (
                f"; {mixed[kind]} of these ports need another optic than their cage's module"
                " (breakout to unlike peers): check the optics"
            )
        lines.append(BomLine("transceiver", kind[0], kind[1], modules[kind], n, f"{note}; {OPTIC_SOURCE}"))
    return lines


CableKind = tuple[str, str, float]
"""Media key, cable, ordered length: one line of the BOM."""


def _cables_by_kind(table: CableTable) -> tuple[Counter[CableKind], dict[CableKind, float]]:
    """Cabled links counted by (media key, cable, ordered length), in order of first appearance, and the
    longest run of each. Counted first by kind of link, ordered length and run: runs repeat (a few
    thousand in a cluster of 100,000 GPUs), so that count is small."""
    cabled = list(map(bool, table.column("media")))
    runs = Counter(
        zip(
            compress(table.parts, cabled),
            compress(table.column("length_class_m"), cabled),
            compress(table.column("length_m"), cabled),
            strict=True,
        )
    )
    counts: Counter[CableKind] = Counter()
    longest: dict[CableKind, float] = {}
    for (parts, length, run), n in runs.items():
        cable = (parts.media_key, parts.cable, length)
        counts[cable] += n
        longest[cable] = max(longest.get(cable, 0.0), run)
    return counts, longest


def cable_lines(ctx: RenderContext, table: CableTable) -> list[BomLine]:
    counts, longest = _cables_by_kind(table)
    lines = []
    for (key, cable, length), n in counts.items():
        entry = ctx.valid.catalog.entries.get(key)
        source = entry.sources.get("length_classes_m", "") if isinstance(entry, CableMedia) else ""
        note = f"longest run {longest[(key, cable, length)]:g} m"
        if source.lower().startswith("estimate"):
            note += f"; length classes {source}"
        lines.append(BomLine("cable", key, f"{cable}, {length:g} m", n, note=note))
    return lines


def bom_lines(ctx: RenderContext) -> list[BomLine]:
    table = shared_cable_table(ctx)
    lines = [*rack_lines(ctx), *pdu_lines(ctx), *device_lines(ctx), *transceiver_lines(table), *cable_lines(ctx, table)]
    return sorted(lines, key=BomLine.sort_key)


def render_bom(ctx: RenderContext) -> dict[str, str]:
    return {BOM_CSV: csv_text(BOM_HEADER, [line.csv() for line in bom_lines(ctx)])}
