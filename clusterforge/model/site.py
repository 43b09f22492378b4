"""Site and floor: rows of racks, their types and spacing."""

from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator

from .base import RACK_NAME, CatalogKey, Label, PositiveFloat, RackName, Strict
from .naming import check_pattern

MAX_RACKS_PER_ROW = 200


class Site(Strict):
    name: Label
    """Site or data hall name, as the operations team calls it."""
    location: Label | None = None
    """City, campus or building."""
    pue: float | None = Field(default=None, ge=1.0, le=3.0)
    """Power usage effectiveness, for facility power figures."""
    hall_cooling_kw: PositiveFloat | None = None
    """Total heat the hall can reject, if known."""


class Row(Strict):
    name: RackName
    """Row label, e.g. 'A'."""
    racks: Annotated[int, Field(ge=1, le=MAX_RACKS_PER_ROW)]
    """Number of racks in the row."""
    rack_type: CatalogKey
    """Catalog key of the rack type used in this row."""
    rack_names: str = "{row}{index:02d}"
    """Pattern for rack names; fields {row} and {index} (from 1)."""
    cdu_kw: PositiveFloat | None = None
    """Liquid-cooling capacity of the row's coolant distribution unit, if any."""

    @field_validator("rack_names")
    @classmethod
    def _check_names(cls, value: str) -> str:
        return check_pattern(value, {"row", "index"})

    @model_validator(mode="after")
    def _check_expanded_names(self) -> Self:
        for index in (1, self.racks):
            name = self.rack_name(index)
            if not RACK_NAME.fullmatch(name):
                raise ValueError(
                    f"rack_names makes '{name}' for rack {index}: a rack name is letters, digits, "
                    "'-' or '_', at most 32 characters"
                )
        return self

    def rack_name(self, index: int) -> str:
        return self.rack_names.format(row=self.name, index=index)


class Floor(Strict):
    rack_pitch_mm: PositiveFloat = 600
    """Centre-to-centre distance between neighbouring racks in a row."""
    row_pitch_mm: PositiveFloat = 2400
    """Centre-to-centre distance between rows (rack depth plus aisle)."""
    cable_slack_m: float = Field(default=1.0, ge=0, le=20)
    """Slack added to every cable run for service loops."""
    cable_tray_m: float = Field(default=0.3, ge=0, le=5)
    """Height of the overhead cable tray above the rack tops: a run between racks climbs it at each end."""
    rack_entry_m: float = Field(default=0.5, ge=0, le=5)
    """Routing inside the rack at each end, from the cable manager to the port."""
    switch_ports_face: Literal["hot-aisle", "cold-aisle"] = "hot-aisle"
    """Which aisle the switches' ports face (racks face the cold aisle with their fronts): ports to the hot
    aisle take power-to-connector (P2C) airflow, ports to the cold aisle connector-to-power (C2P)."""
    rows: list[Row] = Field(min_length=1, max_length=200)
    """Rows of racks, in floor order."""
