"""Bill of materials: handoff/bom.csv, what to order, counted from the expanded topology.

Racks by rack type, one PDU per feed per rack, devices by catalog model, transceiver modules by type
(one per optical link end, ports sharing a twin-port or breakout cage share one module), and cables by
media, cable type and ordered length. Quantities reconcile with `clusterforge plan` and handoff/cabling.csv.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from ..catalog import CableMedia
from ..catalog.models import Sourced
from .context import RenderContext
from .escape import csv_text
from .handoff_common import OPTIC_SOURCE, CableRow, cable_rows

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
        return [self.category, self.item, self.description, self.quantity,
                self.link_ends if self.link_ends is not None else "", self.note]


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
    built_in = {f"{rack.name}-{fixed.name}" for rack in ctx.topo.racks.values()
                for fixed in rack.rack_type.fixed_devices}
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


def transceiver_lines(rows: list[CableRow]) -> list[BomLine]:
    """Modules by type: one per occupied cage; link_ends counts the ports they serve (two per optical link).

    A cage whose ports go to ends needing different optics (a breakout split between, say, a 2-lane and a
    4-lane peer) is counted once, as the module of its first cable in label order, and flagged."""
    cage_type: dict[tuple[str, str], tuple[str, str]] = {}
    modules: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
    ends: Counter[tuple[str, str]] = Counter()
    models: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    mixed: Counter[tuple[str, str]] = Counter()
    for row in rows:
        if not row.optical:
            continue
        for end in (row.a, row.b):
            cage = (end.device, end.cage_id)
            kind = cage_type.setdefault(cage, (end.transceiver_key, end.transceiver))
            if kind != (end.transceiver_key, end.transceiver):
                mixed[kind] += 1
            modules[kind].add(cage)
            ends[kind] += 1
            models[kind][end.model] += 1
    lines = []
    for kind, n in ends.items():
        note = f"in {_mix(models[kind])} ports"
        if mixed[kind]:
            note += (f"; {mixed[kind]} of these ports need another optic than their cage's module"
                     " (breakout to unlike peers): check the optics")
        lines.append(BomLine("transceiver", kind[0], kind[1], len(modules[kind]), n, f"{note}; {OPTIC_SOURCE}"))
    return lines


def cable_lines(ctx: RenderContext, rows: list[CableRow]) -> list[BomLine]:
    counts: Counter[tuple[str, str, float]] = Counter()
    longest: dict[tuple[str, str, float], float] = {}
    for row in rows:
        if not row.media:
            continue
        kind = (row.media_key, row.cable, row.length_class_m)
        counts[kind] += 1
        longest[kind] = max(longest.get(kind, 0.0), row.length_m)
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
    rows = cable_rows(ctx.valid, ctx.topo)
    lines = [*rack_lines(ctx), *pdu_lines(ctx), *device_lines(ctx), *transceiver_lines(rows),
             *cable_lines(ctx, rows)]
    return sorted(lines, key=BomLine.sort_key)


def render_bom(ctx: RenderContext) -> dict[str, str]:
    return {BOM_CSV: csv_text(BOM_HEADER, [line.csv() for line in bom_lines(ctx)])}
