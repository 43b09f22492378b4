"""Power, heat, cooling split and weight of every rack, from the placed devices and the catalog."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..catalog import Catalog
from ..catalog.models import Device as CatalogDevice
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
    return figures
