"""The physical rules expansion and the checks share: usable feed power, planned draw, headroom, heat.

All electrical power a device draws ends up as heat; `liquid_fraction` of it goes to the coolant, the rest
to air. Planned power is the catalog maximum times the blueprint's load factor for the device's class.
"""

from __future__ import annotations

from .catalog import RackType
from .catalog.models import Airflow
from .catalog.models import Device as CatalogDevice
from .model import PowerPlanning

DERATE = 0.8  # continuous load on a feed: at most 80% of its rating (NEC 210.19/210.20)
FILL = 0.9  # automatic placement keeps 10% of a rack's usable power and cooling as headroom
W_TO_BTU_H = 3.412142


def usable_feed_kw(rack_type: RackType) -> float:
    """Power the rack may draw with its redundancy honoured: 2N -> one side, N+1 -> all but one feed."""
    feeds = {"2N": rack_type.feeds // 2 or 1, "N+1": max(rack_type.feeds - 1, 1), "none": rack_type.feeds}
    return feeds[rack_type.feed_redundancy] * rack_type.feed.capacity_kw * DERATE


def load_factor(power: PowerPlanning, device_class: str) -> float:
    """The blueprint's planning factor for a class: node role, 'switch' or 'equipment' (default 1.0)."""
    return float(power.load_factor.get(device_class, 1.0))  # type: ignore[call-overload]


def planned_w(power: PowerPlanning, entry: CatalogDevice, device_class: str) -> float:
    """Planned draw of one device in watts: its catalog maximum times its class's load factor."""
    return entry.max_power_w * load_factor(power, device_class)


def required_airflow(kind: str, switch_ports_face: str) -> Airflow:
    """The airflow a device must have so that it takes air from the cold aisle: racks face the cold aisle
    with their fronts; switches whose ports face the hot aisle breathe in at the power side (P2C)."""
    if kind == "switch":
        return "p2c" if switch_ports_face == "hot-aisle" else "c2p"
    return "front-to-rear"
