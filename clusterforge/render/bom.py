"""Bill of materials: what to order, counted from the expanded topology, per rack and in total.

handoff/bom.csv: one line per part (racks, one PDU per rack feed, servers and switches with the part
number of the airflow the hall needs, spare PSUs, transceivers one per occupied cage, cables one per
physical cable by product and ordered length), with the installed quantity, the spares the blueprint's
policy adds (a share per part class, rounded up), the quantity to order and, when the site's price list
names the part, its price; a last line totals the priced parts. handoff/bom-racks.csv: the installed
quantities per rack. handoff/power.csv: every PSU's PDU, feed and outlet.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass

from ..catalog import CableMedia, Switch, Transceiver
from ..catalog.models import Airflow, Sourced
from ..catalog.models import Device as CatalogDevice
from ..physical import required_airflow
from .cable_rows import shared_cable_list
from .context import RenderContext
from .escape import csv_text

BOM_CSV = "handoff/bom.csv"
BOM_RACKS_CSV = "handoff/bom-racks.csv"
POWER_CSV = "handoff/power.csv"
BOM_HEADER = [
    "category",
    "item",
    "part_number",
    "description",
    "airflow",
    "quantity",
    "spares",
    "order",
    "unit_price",
    "price",
    "note",
]
RACK_HEADER = ["rack", "category", "item", "part_number", "description", "quantity"]
POWER_HEADER = ["rack", "pdu", "feed", "outlet", "device", "u", "psu"]
CATEGORY_ORDER = ("rack", "pdu", "server", "switch", "built-in equipment", "equipment", "psu", "transceiver", "cable")
SPARE_CLASS = {
    "rack": "rack",
    "pdu": "pdu",
    "server": "server",
    "switch": "switch",
    "psu": "psu",
    "transceiver": "transceiver",
    "cable": "cable",
}
"""The blueprint's spares class of each BOM category (built-in equipment ships with its rack)."""
AIRFLOW_TEXT = {"p2c": "P2C", "c2p": "C2P", "front-to-rear": "front-to-rear", "rear-to-front": "rear-to-front"}


@dataclass(frozen=True, slots=True, order=True)
class Part:
    """What one BOM line orders."""

    rank: int
    item: str
    length_m: float
    """Ordered length of a cable (0 for other parts): cables sort by it."""
    description: str
    part_number: str = ""
    airflow: str = ""

    @property
    def category(self) -> str:
        return CATEGORY_ORDER[self.rank]


def _part(
    category: str, item: str, description: str, part_number: str = "", airflow: str = "", length_m: float = 0.0
) -> Part:
    return Part(CATEGORY_ORDER.index(category), item, length_m, description, part_number, airflow)


@dataclass
class Bom:
    per_rack: dict[str, Counter[Part]]
    notes: dict[Part, str]
    psu_only: set[Part]
    """PSU lines: installed with their devices, only spares are ordered."""

    def total(self) -> Counter[Part]:
        out: Counter[Part] = Counter()
        for counts in self.per_rack.values():
            out.update(counts)
        return out


def _product(entry: Sourced | None, key: str) -> str:
    return f"{entry.vendor} {entry.name}" if entry is not None else key


def collect(ctx: RenderContext) -> Bom:
    """Every installed part, counted per rack (a cable in the rack of its A end, a module in its device's)."""
    topo, catalog = ctx.topo, ctx.valid.catalog
    per_rack: dict[str, Counter[Part]] = defaultdict(Counter)
    notes: dict[Part, str] = {}
    psu_only: set[Part] = set()
    facing = ctx.valid.blueprint.floor.switch_ports_face
    for rack in topo.racks.values():
        rack_type = rack.rack_type
        per_rack[rack.name][_part("rack", rack.type_key, _product(rack_type, rack.type_key))] += 1
        feed = rack_type.feed
        kw = feed.capacity_kw
        phases = "3-phase" if feed.phases == 3 else "single-phase"
        pdu = _part(
            "pdu",
            f"pdu:{feed.voltage_v:g}V-{feed.phases}ph-{feed.current_a:g}A",
            f"Rack PDU, {feed.voltage_v:g} V {phases} {feed.current_a:g} A ({kw:.1f} kW), "
            f"{ctx.valid.blueprint.procurement.pdu_outlets} outlets",
        )
        per_rack[rack.name][pdu] += rack_type.feeds
        notes[pdu] = f"one per feed per rack; outlets per device in {POWER_CSV}"
    built_in = {f"{rack.name}-{fixed.name}" for rack in topo.racks.values() for fixed in rack.rack_type.fixed_devices}
    for device in topo.devices.values():
        entry = catalog.entries.get(device.model)
        if device.name in built_in:
            category = "built-in equipment"
        else:
            category = {"node": "server", "switch": "switch"}.get(device.kind, "equipment")
        airflow: Airflow | None = None
        part_number = ""
        if isinstance(entry, CatalogDevice) and entry.airflow:
            airflow = required_airflow("switch" if isinstance(entry, Switch) else device.kind, facing)
            part_number = entry.airflow.get(airflow, "")
        part = _part(
            category, device.model, _product(entry, device.model), part_number, AIRFLOW_TEXT.get(airflow or "", "")
        )
        per_rack[device.rack or ""][part] += 1
        if category == "built-in equipment":
            notes[part] = "built into its rack type, ships with the rack"
        if isinstance(entry, CatalogDevice) and entry.psus is not None and category != "built-in equipment":
            psu = _part(
                "psu",
                f"psu:{device.model}",
                f"PSU of the {_product(entry, device.model)}, {entry.psus.rating_w:g} W",
                entry.psus.part_numbers.get(airflow, "") if airflow else "",
                AIRFLOW_TEXT.get(airflow or "", ""),
            )
            per_rack[device.rack or ""][psu] += entry.psus.count
            psu_only.add(psu)
            notes[psu] = "installed PSUs ship with their devices: only spares are ordered"
    for (device_name, _cage), key in topo.modules.items():
        entry = catalog.entries.get(key)
        part_number = entry.part_number if isinstance(entry, Transceiver) else ""
        part = _part("transceiver", key, _product(entry, key), part_number)
        per_rack[topo.devices[device_name].rack or ""][part] += 1
    for (_, a_racks, _, (_, product_key, part_number, length, pieces)), n in shared_cable_list(ctx).tally.items():
        product = catalog.entries.get(product_key)
        name = product.name if isinstance(product, CableMedia) else product_key
        part = _part("cable", product_key, f"{name}, {length:g} m", part_number, "", length)
        per_rack[a_racks[0]][part] += pieces * n
    return Bom(dict(per_rack), notes, psu_only)


def bom_rows(ctx: RenderContext, bom: Bom | None = None) -> list[list[object]]:
    """The lines of bom.csv (without the header), the total last."""
    bom = bom or collect(ctx)
    procurement = ctx.valid.blueprint.procurement
    prices, shares = procurement.price_list, procurement.spares
    rows: list[list[object]] = []
    total, unpriced = 0.0, 0
    for part, installed in sorted(bom.total().items()):
        share = shares.get(SPARE_CLASS[part.category], 0.0) if part.category in SPARE_CLASS else 0.0  # type: ignore[call-overload]
        spares = math.ceil(installed * share - 1e-9)
        order = spares if part in bom.psu_only else installed + spares
        if part.category == "built-in equipment":
            order = 0
        unit = prices.get(part.part_number) if part.part_number else None
        unit = unit if unit is not None else prices.get(part.item)
        price = unit * order if unit is not None else None
        if price is not None:
            total += price
        elif order:
            unpriced += 1
        rows.append(
            [
                part.category,
                part.item,
                part.part_number,
                part.description,
                part.airflow,
                installed,
                spares,
                order,
                "" if unit is None else f"{unit:.2f}",
                "" if price is None else f"{price:.2f}",
                bom.notes.get(part, ""),
            ]
        )
    if prices:
        note = (
            f"{procurement.currency}; {unpriced} ordered lines have no price in the price list"
            if unpriced
            else procurement.currency
        )
        rows.append(["total", "", "", "priced lines", "", "", "", "", "", f"{total:.2f}", note])
    return rows


def rack_rows(bom: Bom, rack_order: list[str]) -> list[list[object]]:
    order = {name: i for i, name in enumerate(rack_order)}
    out: list[list[object]] = []
    for rack in sorted(bom.per_rack, key=lambda name: (order.get(name, len(order)), name)):
        for part, n in sorted(bom.per_rack[rack].items()):
            out.append([rack, part.category, part.item, part.part_number, part.description, n])
    return out


def power_rows(ctx: RenderContext) -> list[list[object]]:
    devices = ctx.topo.devices
    return [[o.rack, o.pdu, o.feed, o.outlet, o.device, devices[o.device].u, o.psu] for o in ctx.topo.outlets]


def render_bom(ctx: RenderContext) -> dict[str, str]:
    bom = ctx.shared(collect)
    return {
        BOM_CSV: csv_text(BOM_HEADER, bom_rows(ctx, bom)),
        BOM_RACKS_CSV: csv_text(RACK_HEADER, rack_rows(bom, list(ctx.topo.racks))),
        POWER_CSV: csv_text(POWER_HEADER, power_rows(ctx)),
    }


def bom_text(ctx: RenderContext) -> str:
    """The BOM as `clusterforge bom` prints it: one line per part, what to order first, then the total."""
    rows = bom_rows(ctx)
    procurement = ctx.valid.blueprint.procurement
    lines = [
        f"{ctx.valid.blueprint.name}: bill of materials (order = installed + spares; installed PSUs ship with "
        "their devices, so only spare PSUs are ordered)",
        f"  {'order':>6} {'installed':>9} {'spares':>6}  {'category':<18} {'part':<34} description",
    ]
    for r in rows:
        if r[0] == "total":
            lines.append(
                f"  total of the priced lines: {r[9]} {procurement.currency}"
                + (f" ({r[10]})" if r[10] != procurement.currency else "")
            )
            continue
        part = str(r[2] or r[1]) + (f" ({r[4]})" if r[4] else "")
        price = f"; {r[9]} {procurement.currency}" if r[9] != "" else ""
        lines.append(f"  {r[7]:>6} {r[5]:>9} {r[6]:>6}  {r[0]:<18} {part:<34} {r[3]}{price}")
    return "\n".join(lines)
