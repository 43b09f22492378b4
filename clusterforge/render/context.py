"""What every renderer gets, and small helpers they share."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast
from weakref import WeakKeyDictionary

import hostlist

from ..errors import Finding
from ..expand.topology import Topology
from ..plan import Plan, build_plan
from ..validate import ValidBlueprint
from .jinja import render_template

T = TypeVar("T")


class ChecksNotRun(RuntimeError):
    """A renderer read the checks' findings or the plan from a context made before the checks ran: its family
    must say so (`needs` in render/__init__.py FAMILIES), so that the render waits for the checks."""


class RenderContext:
    """What every renderer gets: the blueprint, its topology, the checks' findings and the plan, a site's
    template folder. Made before the checks ran (`before_checks`), it raises ChecksNotRun on a read of the
    findings or the plan instead of giving empty values."""

    def __init__(
        self,
        valid: ValidBlueprint,
        topo: Topology,
        findings: list[Finding] | None,
        templates: Path | None = None,
        plan: Plan | None = None,
    ) -> None:
        self.valid = valid
        self.topo = topo
        self.templates = templates
        """A site's template folder, searched before the shipped templates."""
        self._findings = findings
        self._plan = plan
        self._shared: dict[Callable[..., Any], Any] = {}

    @classmethod
    def before_checks(cls, valid: ValidBlueprint, topo: Topology, templates: Path | None = None) -> RenderContext:
        """A context for the families that need neither the findings nor the plan."""
        return cls(valid, topo, None, templates)

    @property
    def findings(self) -> list[Finding]:
        """The checks' findings, suppressions applied."""
        if self._findings is None:
            raise ChecksNotRun("a renderer read the findings before the checks ran: declare it in its family's needs")
        return self._findings

    @property
    def plan(self) -> Plan:
        """`clusterforge plan`'s figures: the caller's (the pipeline's), or worked out once from the findings."""
        if self._plan is None:
            if self._findings is None:
                raise ChecksNotRun("a renderer read the plan before the checks ran: declare it in its family's needs")
            self._plan = build_plan(self.valid, self.topo, self._findings)
        return self._plan

    def shared(self, compute: Callable[[RenderContext], T]) -> T:
        """`compute(self)`, worked out on first use and then kept: what several renderers need (the cable
        rows, the rack drawings) is built once per render."""
        if compute not in self._shared:
            self._shared[compute] = compute(self)
        return cast(T, self._shared[compute])

    def with_checks(self, findings: list[Finding], plan: Plan) -> RenderContext:
        """This context with the checks' findings and the plan, keeping what was worked out and shared so far."""
        checked = RenderContext(self.valid, self.topo, findings, self.templates, plan)
        checked._shared.update(self._shared)
        return checked

    def render(self, template: str, model: dict[str, Any]) -> str:
        return render_template(template, model, self.templates)


def per_topology(compute: Callable[[Topology], T]) -> Callable[[Topology], T]:
    """`compute(topo)` worked out once per topology, for what several renderers derive from it (a topology no
    longer changes once expanded). Callers must not change the result."""
    known: WeakKeyDictionary[Topology, T] = WeakKeyDictionary()

    @functools.wraps(compute)
    def once(topo: Topology) -> T:
        if topo not in known:
            known[topo] = compute(topo)
        return known[topo]

    return once


SLURM_RANGE_HOSTS = 65536
"""Most hosts Slurm reads in one range: its hostlist parser refuses `gpu[000001-065537]` (MAX_RANGE, 64K;
checked on 22.05's libslurmfull), and python-hostlist refuses ranges of over 100,000."""


def host_range(names: list[str]) -> str:
    """`gpu[001-032]` for Slurm and humans; the order of `names` does not matter. Above SLURM_RANGE_HOSTS names
    the list is written in parts of at most that many (`gpu[000001-065536],gpu[065537-125000]`)."""
    if len(names) <= SLURM_RANGE_HOSTS:
        return _sorted_range(tuple(sorted(names)))
    ordered = hostlist.numerically_sorted(names)
    parts = (ordered[i : i + SLURM_RANGE_HOSTS] for i in range(0, len(ordered), SLURM_RANGE_HOSTS))
    return ",".join(str(hostlist.collect_hostlist(part)) for part in parts)


@functools.lru_cache(maxsize=16)  # a large cluster's Slurm files name the same nodes in several lines
def _sorted_range(names: tuple[str, ...]) -> str:
    return str(hostlist.collect_hostlist(list(names)))


def network_of_kind(valid: ValidBlueprint, kind: str) -> str | None:
    """The blueprint's first network of `kind` (`inband`, `oob`, ...), or None."""
    return next((name for name, fabric in valid.blueprint.fabrics.items() if fabric.kind == kind), None)


def ansible_name(text: str) -> str:
    """A valid Ansible group or variable name: letters, digits and underscores, not starting with a digit."""
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in text.lower())
    return clean if clean and not clean[0].isdigit() else f"_{clean}"
