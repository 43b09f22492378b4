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
from operator import itemgetter

from ...catalog import PDU, CableMedia, RackType, Server, Switch, Transceiver
from ...catalog.models import Airflow, Sourced
from ...catalog.models import Device as CatalogDevice
from ...physical import required_airflow
from ..context import RenderContext
from ..escape import Escaped, csv_cells, csv_field, csv_line, csv_text
from .cable_rows import shared_cable_list

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
    """Every installed part, counted per rack (a cable in the rack of its A end, a module in its device's).
    Things alike (devices of a model, modules of a kind, cables of a kind in a rack) are counted first and
    made a Part once: a cluster of 100,000 GPUs has some 300,000 modules and cables but a few dozen parts."""
    bom = Bom(defaultdict(Counter), {}, set())
    _count_racks(ctx, bom)
    _count_devices(ctx, bom)
    per_rack, catalog = bom.per_rack, ctx.valid.catalog
    modules = ctx.topo.modules
    rack_of = {name: device.rack or "" for name, device in ctx.topo.devices.items()}
    in_racks = Counter(zip(map(rack_of.__getitem__, map(itemgetter(0), modules)), modules.values(), strict=True))
    for (rack, key), n in in_racks.items():
        entry = catalog.entries.get(key)
        part_number = entry.part_number if isinstance(entry, Transceiver) else ""
        per_rack[rack][_part("transceiver", key, _product(entry, key), part_number)] += n
    for (_, a_racks, _, (_, product_key, part_number, length, pieces)), n in shared_cable_list(ctx).tally.items():
        product = catalog.entries.get(product_key)
        name = product.name if isinstance(product, CableMedia) else product_key
        part = _part("cable", product_key, f"{name}, {length:g} m", part_number, "", length)
        per_rack[a_racks[0]][part] += pieces * n
    return Bom(dict(per_rack), bom.notes, bom.psu_only)


def _count_racks(ctx: RenderContext, bom: Bom) -> None:
    """Each rack, and its PDUs: one per feed."""
    for rack in ctx.topo.racks.values():
        rack_type = rack.rack_type
        rack_part = _part("rack", rack.type_key, _product(rack_type, rack.type_key), rack_type.part_number or "")
        bom.per_rack[rack.name][rack_part] += 1
        pdu = _pdu_part(ctx, rack_type)
        bom.per_rack[rack.name][pdu] += rack_type.feeds
        bom.notes[pdu] = f"one per feed per rack; outlets per device in {POWER_CSV}"


def _pdu_part(ctx: RenderContext, rack_type: RackType) -> Part:
    """The rack type's PDU from the catalog, or one described by the rack's feed alone."""
    entry = ctx.valid.catalog.get(rack_type.pdu or "", PDU)
    if entry is not None and rack_type.pdu:
        return _part("pdu", rack_type.pdu, _product(entry, rack_type.pdu), entry.part_number)
    feed = rack_type.feed
    phases = "3-phase" if feed.phases == 3 else "single-phase"
    return _part(
        "pdu",
        f"pdu:{feed.voltage_v:g}V-{feed.phases}ph-{feed.current_a:g}A",
        f"Rack PDU, {feed.voltage_v:g} V {phases} {feed.current_a:g} A ({feed.capacity_kw:.1f} kW), "
        f"{ctx.valid.blueprint.procurement.pdu_outlets} outlets",
    )


def _count_devices(ctx: RenderContext, bom: Bom) -> None:
    """Servers, switches and other equipment, with the airflow the hall needs, and their PSUs."""
    topo = ctx.topo
    built_in = {f"{rack.name}-{fixed.name}" for rack in topo.racks.values() for fixed in rack.rack_type.fixed_devices}
    built_in |= _nodes_shipped_with_their_rack(ctx)
    alike = Counter((d.rack or "", d.model, d.kind, d.name in built_in) for d in topo.devices.values())
    parts: dict[tuple[str, str, bool], list[tuple[Part, int]]] = {}
    for (rack, model, kind, fixed), n in alike.items():
        if (model, kind, fixed) not in parts:
            parts[model, kind, fixed] = _device_parts(ctx, bom, model, kind, fixed)
        for part, per_device in parts[model, kind, fixed]:
            bom.per_rack[rack][part] += per_device * n


def _nodes_shipped_with_their_rack(ctx: RenderContext) -> set[str]:
    """Nodes in a rack whose type is a rack-scale system sold with its nodes (`includes_nodes`), of a model
    made for that rack type."""
    racks = {name: rack for name, rack in ctx.topo.racks.items() if rack.rack_type.includes_nodes}
    catalog = ctx.valid.catalog
    return {
        device.name
        for device in ctx.topo.devices.values()
        if device.rack in racks
        and isinstance(entry := catalog.entries.get(device.model), Server)
        and entry.rack_type == racks[device.rack].type_key
    }


def _device_parts(ctx: RenderContext, bom: Bom, model: str, kind: str, fixed: bool) -> list[tuple[Part, int]]:
    """What one device of a model installs: itself and its PSUs (with how many), each a Part."""
    entry = ctx.valid.catalog.entries.get(model)
    category = "built-in equipment" if fixed else {"node": "server", "switch": "switch"}.get(kind, "equipment")
    airflow: Airflow | None = None
    part_number = ""
    if isinstance(entry, CatalogDevice) and entry.airflow:
        kind = "switch" if isinstance(entry, Switch) else kind
        airflow = required_airflow(kind, ctx.valid.blueprint.floor.switch_ports_face)
        part_number = entry.airflow.get(airflow, "")
    part = _part(category, model, _product(entry, model), part_number, AIRFLOW_TEXT.get(airflow or "", ""))
    if fixed:
        bom.notes[part] = "built into its rack type, ships with the rack"
    if not isinstance(entry, CatalogDevice) or entry.psus is None or fixed:
        return [(part, 1)]
    psu = _part(
        "psu",
        f"psu:{model}",
        f"PSU of the {_product(entry, model)}, {entry.psus.rating_w:g} W",
        entry.psus.part_numbers.get(airflow, "") if airflow else "",
        AIRFLOW_TEXT.get(airflow or "", ""),
    )
    bom.psu_only.add(psu)
    bom.notes[psu] = "installed PSUs ship with their devices: only spares are ordered"
    return [(part, 1), (psu, entry.psus.count)]


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


def racks_csv(bom: Bom, rack_order: list[str]) -> str:
    """bom-racks.csv: per rack (floor order), the installed quantity of each part (in bom.csv's order)."""
    cell = csv_cells()
    parts = sorted(bom.total())
    part_cells = {p: "".join(map(cell.__getitem__, (p.category, p.item, p.part_number, p.description))) for p in parts}
    rank = {part: i for i, part in enumerate(parts)}
    order = {name: i for i, name in enumerate(rack_order)}
    lines = [f"{csv_line(RACK_HEADER)}\n"]
    for rack in sorted(bom.per_rack, key=lambda name: (order.get(name, len(order)), name)):
        here = cell[rack]
        counts = sorted(bom.per_rack[rack].items(), key=lambda item: rank[item[0]])
        lines.extend(f"{here}{part_cells[part]}{csv_field(n)}\n" for part, n in counts)
    return "".join(lines)


def power_csv(ctx: RenderContext) -> str:
    """power.csv: every PSU's rack, PDU, feed and outlet, and its device, the device's U and the PSU's number."""
    devices = ctx.topo.devices
    cell = csv_cells()
    device = Escaped(lambda name: f"{cell[name]}{cell[devices[name].u]}")  # and its U
    lines = [
        f"{cell[o.rack]}{cell[o.pdu]}{cell[o.feed]}{cell[o.outlet]}{device[o.device]}{csv_field(o.psu)}\n"
        for o in ctx.topo.outlets
    ]
    return "".join([f"{csv_line(POWER_HEADER)}\n", *lines])


def render_bom(ctx: RenderContext) -> dict[str, str]:
    bom = ctx.shared(collect)
    return {
        BOM_CSV: csv_text(BOM_HEADER, bom_rows(ctx, bom)),
        BOM_RACKS_CSV: racks_csv(bom, list(ctx.topo.racks)),
        POWER_CSV: power_csv(ctx),
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
