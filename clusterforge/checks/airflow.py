"""Airflow: every switch (and server) model must be sold with the airflow its place in the hall needs."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from .. import codes
from ..catalog import Switch
from ..catalog.models import Device as CatalogDevice
from ..errors import DataPath, Finding, Severity
from ..physical import required_airflow
from .context import CheckContext

AIRFLOW_TEXT = {"p2c": "P2C", "c2p": "C2P", "front-to-rear": "front-to-rear", "rear-to-front": "rear-to-front"}


def check_airflow(ctx: CheckContext) -> Iterator[Finding]:
    facing = ctx.valid.blueprint.floor.switch_ports_face
    counts: Counter[tuple[str, str, str]] = Counter()
    for device in ctx.topo.devices.values():
        entry = ctx.valid.catalog.entries.get(device.model)
        if isinstance(entry, CatalogDevice) and entry.airflow:
            kind = "switch" if isinstance(entry, Switch) else "node"
            counts[(kind, device.model, device.group or device.role)] += 1
    for (kind, model, owner), n in sorted(counts.items()):
        entry = ctx.valid.catalog.entries.get(model)
        assert isinstance(entry, CatalogDevice)
        needed = required_airflow(kind, facing)
        if needed in entry.airflow:
            continue
        listed = ", ".join(AIRFLOW_TEXT[a] for a in entry.airflow)
        where = f"ports face the {facing.replace('-', ' ')}" if kind == "switch" else "fronts face the cold aisle"
        path: DataPath = ("fabrics", owner) if kind == "switch" and owner in ctx.valid.blueprint.fabrics else ("floor",)
        yield ctx.finding(
            codes.AIRFLOW_MISMATCH,
            Severity.WARNING,
            f"{model} in '{owner}' ({n} {'switches' if kind == 'switch' else 'nodes'}) needs "
            f"{AIRFLOW_TEXT[needed]} airflow ({where}); the catalog lists {listed} only",
            path,
            model,
            "order the model with the other airflow, turn the switches round (floor.switch_ports_face), "
            "or pick another model",
        )
