"""The N-1 analysis: for each element class the worst single failure, judged against the blueprint's
`resilience:` tolerance."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from .. import codes
from ..errors import DataPath, Finding, Severity
from ..expand.topology import Topology
from ..model import Tolerance
from ..validate import ValidBlueprint
from .baseline import Baseline, baseline
from .effects import Effect, effect_of
from .elements import KIND_TITLES, KINDS, candidates

SWITCH_KINDS = ("leaf", "spine", "core")
MAX_SHAPES = 256
"""Distinct signatures looked at per class (the largest first); past it the rest are left out and counted."""


@dataclass
class ClassResult:
    kind: str
    elements: int
    """Elements of the class in the cluster."""
    evaluated: int
    """Elements whose failure was worked out (one per signature)."""
    worst: Effect | None
    effects: list[tuple[Effect, int]] = field(default_factory=list)
    """Each evaluated failure and how many elements fail alike (its signature's)."""
    by_fabric: dict[str, Effect] = field(default_factory=dict)
    """Switch classes: the worst failure of the class on each fabric (its own)."""
    over: list[tuple[str, str, str, int]] = field(default_factory=list)
    """(limit, the element that takes most, what it takes, elements over the limit) for each limit exceeded."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "title": KIND_TITLES[self.kind],
            "elements": self.elements,
            "evaluated": self.evaluated,
            "worst": self.worst.as_dict() if self.worst else None,
            "worst_by_fabric": {name: e.failure.name for name, e in self.by_fabric.items()},
            "over_tolerance": [{"limit": k, "element": e, "taken": t, "elements": n} for k, e, t, n in self.over],
        }


@dataclass
class FailureReport:
    name: str
    classes: list[ClassResult]
    findings: list[Finding]
    named: list[Effect] = field(default_factory=list)
    """Failures of elements asked for by name."""
    absent: list[str] = field(default_factory=list)
    """Classes asked for that the cluster has no element of."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "classes": [c.as_dict() for c in self.classes],
            "elements": [e.as_dict() for e in self.named],
            "absent": self.absent,
            "findings": [f.as_dict() for f in self.findings],
        }


_WHOLE: WeakKeyDictionary[Topology, tuple[ValidBlueprint, tuple[int, int], FailureReport]] = WeakKeyDictionary()
"""The last analysis of every class per topology (with its blueprint, and its device and link counts): the
tolerance check, the report and `diff` ask for the same one (1.5 CPU s at 100,000 GPUs)."""


def analyse_failures(
    valid: ValidBlueprint, topo: Topology, kinds: Iterable[str] = KINDS, names: Iterable[str] = ()
) -> FailureReport:
    """The worst failure of each class in `kinds`, and the failure of each element in `names`. That of every
    class and no names is worked out once per topology: do not change the result."""
    kinds, names = tuple(kinds), tuple(names)
    if kinds != tuple(KINDS) or names:
        return _analysed(valid, topo, kinds, names)
    size = (len(topo.devices), len(topo.links))
    known = _WHOLE.get(topo)
    if known is not None and known[0] is valid and known[1] == size:
        return known[2]
    report = _analysed(valid, topo, kinds, names)
    _WHOLE[topo] = (valid, size, report)
    return report


def _analysed(valid: ValidBlueprint, topo: Topology, kinds: Iterable[str], names: Iterable[str]) -> FailureReport:
    base = baseline(valid, topo)
    results = [_class_result(base, kind) for kind in kinds]
    named = [effect_of(base, c.failure) for c in find_elements(base, list(names))]
    findings = [f for r in results for f in _findings(base, r)]
    return FailureReport(
        valid.blueprint.name,
        [r for r in results if r.elements],
        findings,
        named,
        [r.kind for r in results if not r.elements],
    )


def find_elements(base: Baseline, names: list[str]) -> list[Any]:
    """The candidates named (in the order asked); an unknown name raises KeyError with it."""
    wanted = dict.fromkeys(names)
    found: dict[str, Any] = {}
    for kind in KINDS:
        if len(found) == len(wanted):
            break
        for candidate in candidates(base, kind):
            if candidate.failure.name in wanted and candidate.failure.name not in found:
                found[candidate.failure.name] = candidate
    missing = [n for n in wanted if n not in found]
    if missing:
        raise KeyError(missing[0])
    return [found[n] for n in wanted]


def _class_result(base: Baseline, kind: str) -> ClassResult:
    shapes: dict[tuple[object, ...], list[Any]] = {}
    for candidate in candidates(base, kind):
        shapes.setdefault(candidate.signature, []).append(candidate)
    elements = sum(len(group) for group in shapes.values())
    groups = sorted(shapes.values(), key=len, reverse=True)[:MAX_SHAPES]
    effects = [(effect_of(base, group[0].failure), len(group)) for group in groups]
    worst = max(effects, key=lambda e: e[0].severity_key())[0] if effects else None
    result = ClassResult(kind, elements, len(effects), worst, effects)
    if kind in SWITCH_KINDS:
        for effect, _ in effects:
            (name,) = [f for f in base.fabrics if next(iter(effect.failure.devices)) in base.fabrics[f].switches]
            known = result.by_fabric.get(name)
            if known is None or effect.severity_key() > known.severity_key():
                result.by_fabric[name] = effect
    resilience = base.valid.blueprint.resilience
    if resilience is not None and worst is not None:
        result.over = _over(resilience.tolerance(kind), effects)
    return result


LIMITS = (
    ("max_bisection_loss", "of a fabric's bisection"),
    ("max_gpus_lost", "GPUs lost"),
    ("max_gpus_degraded", "GPUs degraded or throttled"),
    ("max_racks_down", "racks down"),
    ("max_nvlink_domains_broken", "NVLink domains broken"),
)


def _measure(effect: Effect, limit: str) -> float:
    return {
        "max_bisection_loss": effect.bisection_loss,
        "max_gpus_lost": effect.gpus_lost,
        "max_gpus_degraded": effect.gpus_degraded + effect.gpus_throttled,
        "max_racks_down": len(effect.racks_down),
        "max_nvlink_domains_broken": effect.domains_broken,
    }[limit]


def _over(tolerance: Tolerance, effects: list[tuple[Effect, int]]) -> list[tuple[str, str, str, int]]:
    out: list[tuple[str, str, str, int]] = []
    for limit, _ in LIMITS:
        allowed = getattr(tolerance, limit)
        if allowed is None:
            continue
        over = [(e, n) for e, n in effects if _measure(e, limit) > allowed + 1e-9]
        if over:
            worst = max(over, key=lambda en: _measure(en[0], limit))[0]
            out.append((limit, worst.failure.name, _taken_text(worst, limit), sum(n for _, n in over)))
    if tolerance.workloads_must_fit:
        over = [(e, n) for e, n in effects if e.workloads]
        if over:
            first = over[0][0]
            name, what = next(iter(first.workloads.items()))
            out.append(("workloads_must_fit", first.failure.name, f"{name}: {what}", sum(n for _, n in over)))
    if tolerance.subnet_manager_left:
        over = [(e, n) for e, n in effects if e.subnets_without_sm]
        if over:
            first = over[0][0]
            taken = f"{first.subnets_without_sm} InfiniBand subnet(s) without a running subnet manager"
            out.append(("subnet_manager_left", first.failure.name, taken, sum(n for _, n in over)))
    return out


def _taken_text(effect: Effect, limit: str) -> str:
    if limit == "max_bisection_loss":
        fabric = max(effect.fabrics.values(), key=lambda f: 1 - f.bisection_left)
        return (
            f"{1 - fabric.bisection_left:.1%} of the bisection of fabric '{fabric.fabric}' "
            f"({fabric.bisection_left_tbps:g} of {fabric.bisection_tbps:g} Tb/s left)"
        )
    if limit == "max_racks_down":
        count = len(effect.racks_down)
        return f"{count} rack{'s' if count != 1 else ''} down ({', '.join(effect.racks_down[:6])})"
    return f"{_measure(effect, limit):g} {dict(LIMITS)[limit]}"


def _findings(base: Baseline, result: ClassResult) -> list[Finding]:
    resilience = base.valid.blueprint.resilience
    if resilience is None or result.worst is None:
        return []
    path: DataPath = ("resilience", "elements", result.kind) if result.kind in resilience.elements else ("resilience",)
    tolerance = resilience.tolerance(result.kind)

    def warning(code: str, message: str, element: str) -> Finding:
        hint = f"`clusterforge failures --element {result.kind}` lists what it takes; add redundancy or relax the limit"
        return Finding(code, Severity.WARNING, message, path, base.valid.sources.locate(path), hint, element)

    out = []
    for limit, element, taken, count in result.over:
        allowed = getattr(tolerance, limit)
        head = f"{count} of {result.elements} {KIND_TITLES[result.kind]} failures exceed {limit}" + (
            "" if isinstance(allowed, bool) else f" {allowed:g}"
        )
        out.append(_warning(limit, head, taken, warning, element))
    return out


def _warning(limit: str, head: str, taken: str, warning: Any, element: str) -> Finding:
    """The finding of one limit exceeded (one call per code, so each code's message is written where it is
    reported)."""
    if limit == "max_bisection_loss":
        return warning(codes.FAILURE_BISECTION, f"{head}: losing {element} takes {taken}", element)
    if limit == "max_gpus_lost":
        return warning(codes.FAILURE_GPUS_LOST, f"{head}: losing {element} takes {taken}", element)
    if limit == "max_gpus_degraded":
        return warning(codes.FAILURE_GPUS_DEGRADED, f"{head}: losing {element} leaves {taken}", element)
    if limit == "max_racks_down":
        return warning(codes.FAILURE_RACKS_DOWN, f"{head}: losing {element} takes {taken}", element)
    if limit == "max_nvlink_domains_broken":
        return warning(codes.FAILURE_NVLINK_BROKEN, f"{head}: losing {element} leaves {taken}", element)
    if limit == "workloads_must_fit":
        return warning(codes.FAILURE_WORKLOADS, f"{head}: after losing {element}, {taken}", element)
    return warning(codes.FAILURE_NO_SUBNET_MANAGER, f"{head}: losing {element} leaves {taken}", element)
