"""Read a NetBox device-type-library YAML file as a catalog entry.

NetBox gives a device's height, weight, power ports (with `maximum_draw`) and interfaces; it says
nothing of PSU redundancy, so the entry gets no `psus`, and `max_power_w` is the largest single power
port's `maximum_draw` (in the library, each PSU of a redundant device is rated for the whole device).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model.blueprint import CatalogFile
    from .loader import Catalog

_IB_SPEEDS = {"edr": 100, "hdr": 200, "ndr": 400, "xdr": 800}
_CAGES = {
    "osfp": "osfp",
    "qsfpdd": "qsfp-dd",
    "qsfp112": "qsfp112",
    "qsfp56": "qsfp56",
    "qsfp28": "qsfp28",
    "qsfpp": "qsfp+",
    "sfp56": "sfp56",
    "sfp28": "sfp28",
    "sfpp": "sfp+",
    "sfp": "sfp",
}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.+-]+", "-", text.lower()).strip("-")


def _speed_and_cage(kind: str) -> tuple[float, str]:
    """NetBox interface type ('400gbase-x-osfp', '1000base-t', 'infiniband-ndr') -> (Gb/s, cage)."""
    if kind.startswith("infiniband-"):
        ib_speed = _IB_SPEEDS.get(kind.removeprefix("infiniband-"))
        if ib_speed is None:
            raise ValueError(f"unsupported InfiniBand interface type '{kind}'")
        return float(ib_speed), "osfp"
    match = re.match(r"^(\d+(?:\.\d+)?)(g?)base-([a-z0-9]+)(?:-([a-z0-9]+))?", kind)
    if not match:
        raise ValueError(f"unsupported interface type '{kind}'")
    speed = float(match.group(1)) / (1 if match.group(2) else 1000)
    cage = "rj45" if match.group(3) == "t" else _CAGES.get(match.group(4) or "", "")
    if not cage:
        raise ValueError(f"cannot tell the cage of interface type '{kind}'")
    return speed, cage


def _port_groups(interfaces: list[dict[str, Any]]) -> list[dict[str, Any]]:
    counts: Counter[tuple[str, bool]] = Counter()
    for interface in interfaces:
        counts[(str(interface.get("type", "")), bool(interface.get("mgmt_only")))] += 1
    groups = []
    for (kind, mgmt), count in sorted(counts.items()):
        speed, cage = _speed_and_cage(kind)
        groups.append(
            {
                "name": "mgmt" if mgmt else ("ib" if kind.startswith("infiniband") else "eth"),
                "count": count,
                "speed_gbps": speed,
                "cage": cage,
                "role": "oob" if mgmt else "any",
                "technology": "infiniband" if kind.startswith("infiniband") else "ethernet",
            }
        )
    return groups


def _weight_kg(data: dict[str, Any]) -> float:
    weight = float(data["weight"])
    unit = data.get("weight_unit", "kg")
    factors = {"kg": 1.0, "g": 0.001, "lb": 0.45359237, "oz": 0.028349523125}
    if unit not in factors:
        raise ValueError(f"unknown weight_unit '{unit}'")
    return round(weight * factors[unit], 2)


def netbox_entry(data: Any, spec: CatalogFile, catalog: Catalog) -> tuple[str, dict[str, Any]]:
    """(catalog key, native entry data) for one NetBox device type."""
    if not isinstance(data, dict):
        raise ValueError("the file must be a mapping")
    for required in ("manufacturer", "model", "u_height", "weight"):
        if required not in data:
            raise ValueError(f"missing '{required}'")
    draws = [p["maximum_draw"] for p in data.get("power-ports", []) if p.get("maximum_draw")]
    if not draws:
        raise ValueError("no power port gives maximum_draw")
    manufacturer, model = str(data["manufacturer"]), str(data["model"])
    key = spec.key or f"{_slug(manufacturer)}/{_slug(data.get('slug') or model)}"
    source = f"NetBox device-type library: {manufacturer} {model}"
    entry: dict[str, Any] = {
        "vendor": manufacturer,
        "name": model,
        "u_height": int(data["u_height"]),
        "weight_kg": _weight_kg(data),
        "max_power_w": float(max(draws)),
        "ports": _port_groups(data.get("interfaces", [])),
        "sources": {"u_height": source, "weight_kg": source, "max_power_w": source, "ports": source},
    }
    if spec.kind == "switch":
        techs = {g["technology"] for g in entry["ports"] if g["role"] != "oob"}
        entry["technology"] = "infiniband" if techs == {"infiniband"} else "ethernet"
    elif spec.kind == "equipment":
        entry["role"] = "other"
    else:
        from .models import Server

        base = catalog.get(spec.base, Server) if spec.base else None
        if base is None:
            raise ValueError("a NetBox server needs 'base:' naming a catalog server for CPU, memory and GPUs")
        entry.update(base.model_dump(include={"cpu", "memory_gb", "gpus", "cooling", "pcie"}, exclude_none=True))
    return key, entry
