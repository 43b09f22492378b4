"""What the blueprint accepts losing when one thing fails: the tolerance `clusterforge failures` judges each
single failure against (docs/failures.md)."""

from typing import Annotated, Literal

from pydantic import Field

from .base import Fraction, NonNegativeCount, Strict

ElementKind = Literal[
    "leaf",
    "spine",
    "core",
    "oob-switch",
    "bundle",
    "subnet-manager",
    "node",
    "psu",
    "pdu",
    "feed",
    "cdu",
    "rack",
    "row",
    "power-shelf",
    "switch-tray",
]
"""The element classes a single failure is looked at for (docs/failures.md)."""


class Tolerance(Strict):
    """What one failure of an element class may take; a limit left out is not judged."""

    max_bisection_loss: Fraction | None = None
    """Share of any fabric's switch bisection one failure may take (0.125: a spine of 8 may fail)."""
    max_gpus_lost: NonNegativeCount | None = None
    """GPUs one failure may take out: unpowered, uncooled, or cut off from every port of a compute fabric."""
    max_gpus_degraded: NonNegativeCount | None = None
    """GPUs one failure may leave running at less: a rail or NVLink switch tray lost, or throttled on the
    PSUs left."""
    max_racks_down: NonNegativeCount | None = None
    """Racks one failure may leave with devices unpowered or uncooled, or with more load than the feeds
    left carry (0: no single PDU takes a rack down)."""
    max_nvlink_domains_broken: NonNegativeCount | None = None
    """NVLink domains one failure may leave with fewer GPUs."""
    workloads_must_fit: bool = False
    """Every workload of the blueprint still has its GPUs after one failure of the class."""
    subnet_manager_left: bool = False
    """Every InfiniBand subnet keeps a running subnet manager after one failure of the class."""


class Resilience(Strict):
    """The blueprint's tolerance for single failures: `default` for every element class, `elements` per class
    (a class given there takes its own limits, and `default`'s for the limits it leaves out)."""

    default: Tolerance = Tolerance()
    """Limits for every element class."""
    elements: Annotated[dict[ElementKind, Tolerance], Field(max_length=20)] = Field(default_factory=dict)
    """Limits per element class, e.g. `spine: {max_bisection_loss: 0.125}`, `pdu: {max_racks_down: 0}`."""

    def tolerance(self, kind: str) -> Tolerance:
        """The limits for `kind`: its own, with `default`'s for what it leaves out."""
        own = self.elements.get(kind)  # type: ignore[call-overload]
        if own is None:
            return self.default
        merged = self.default.model_dump()
        merged.update(own.model_dump(exclude_unset=True))
        return Tolerance.model_validate(merged)
