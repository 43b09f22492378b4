"""Power, heat, cooling split and weight of every rack, from the placed devices and the catalog.

In a rack with power shelves (GB200 NVL72), the devices without PSUs of their own draw through the shelves:
the rack takes their load divided by the shelves' efficiency from its feeds, and the difference is heat in
the air.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import Catalog
from ..catalog.models import Device as CatalogDevice
from ..catalog.models import Equipment
from ..expand.topology import Device, Rack, Topology
from ..model import Blueprint
from ..physical import W_TO_BTU_H, usable_feed_kw
from ..physical import planned_w as planned_device_w


@dataclass
class RackFigures:
    rack: Rack
    power_kw: float = 0.0
    air_kw: float = 0.0
    liquid_kw: float = 0.0
    weight_kg: float = 0.0
    """Devices only; the rack's own weight is not part of its load."""
    u_used: int = 0
    devices: list[Device] = field(default_factory=list)
    shelf_load_kw: float = 0.0
    """Load carried by the rack's power shelves (devices without PSUs of their own), before conversion."""
    conversion_loss_kw: float = 0.0
    """What the power shelves lose converting it (part of power_kw and air_kw)."""
    shelves: list[Device] = field(default_factory=list)

    @property
    def heat_kw(self) -> float:
        return self.power_kw

    @property
    def heat_btu_h(self) -> float:
        return self.power_kw * 1000 * W_TO_BTU_H

    @property
    def usable_power_kw(self) -> float:
        return usable_feed_kw(self.rack.rack_type)


def catalog_device(catalog: Catalog, device: Device) -> CatalogDevice:
    entry = catalog.entries[device.model]
    assert isinstance(entry, CatalogDevice)
    return entry


def planned_w(bp: Blueprint, catalog: Catalog, device: Device) -> float:
    return planned_device_w(bp.power, catalog_device(catalog, device), device.device_class)


def shelf_efficiency(catalog: Catalog, device: Device) -> float | None:
    entry = catalog_device(catalog, device)
    return entry.efficiency if isinstance(entry, Equipment) and entry.role == "power-shelf" else None


def rack_figures(bp: Blueprint, catalog: Catalog, topo: Topology) -> dict[str, RackFigures]:
    figures = {name: RackFigures(rack) for name, rack in topo.racks.items()}
    for device in topo.devices.values():
        if device.rack is None:
            continue
        entry = catalog_device(catalog, device)
        kw = planned_w(bp, catalog, device) / 1000
        fig = figures[device.rack]
        fig.devices.append(device)
        fig.power_kw += kw
        fig.liquid_kw += kw * entry.cooling.liquid_fraction
        fig.air_kw += kw * (1 - entry.cooling.liquid_fraction)
        fig.weight_kg += entry.weight_kg
        fig.u_used += device.u_height
        if shelf_efficiency(catalog, device) is not None:
            fig.shelves.append(device)
        elif entry.psus is None:
            fig.shelf_load_kw += kw
    for fig in figures.values():
        if fig.shelves:
            efficiency = min(shelf_efficiency(catalog, s) or 1.0 for s in fig.shelves)
            fig.conversion_loss_kw = fig.shelf_load_kw * (1 / efficiency - 1)
            fig.power_kw += fig.conversion_loss_kw
            fig.air_kw += fig.conversion_loss_kw
    return figures
