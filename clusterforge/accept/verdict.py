"""What judging the burn-in results finds: the problems (each with its likely cause, the nodes to drain and
the jobs to run again), the bandwidth measurements against their floors, and the verdict."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


def gbs(value: float) -> str:
    return f"{value:,.1f}"


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    kind: str
    """'node', 'cable', 'leaf' or 'tier'."""
    subject: str
    drain: tuple[str, ...] = ()
    """Nodes to drain for it."""
    retest: tuple[str, ...] = ()
    """Nodes to test again once mended."""
    jobs: tuple[str, ...] = ()
    cables: tuple[str, ...] = ()
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Measurement:
    """A bandwidth test: what was measured against what was expected."""

    file: str
    test: str
    group: str
    nodes: str
    detail: str
    measured: float
    expected: float
    floor: float

    @property
    def passed(self) -> bool:
        return self.measured >= self.floor


@dataclass
class Acceptance:
    blueprint: str
    nodes: list[str]
    results: int = 0
    skipped: int = 0
    measurements: list[Measurement] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    required: dict[str, set[str]] = field(default_factory=dict)
    """Node -> the tests it must have a result of: 'dcgm', 'nvbandwidth', 'fabric-state', 'nvlink', 'rail <r>'."""
    covered: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    partial: bool = False
    cables: dict[str, str] = field(default_factory=dict)
    """Label -> both ends (rack, U, device, port) of each cable a problem names."""
    dated: tuple[float, float] = (0.0, 0.0)
    """The oldest and newest result's modification time (seconds since the epoch)."""

    @property
    def tested(self) -> set[str]:
        """Nodes with a result of any test."""
        return {n for n, keys in self.covered.items() if keys}

    @property
    def missing(self) -> dict[str, list[str]]:
        """Node -> the tests it has no result of, in node order."""
        found = {n: sorted(self.required.get(n, set()) - self.covered.get(n, set())) for n in self.nodes}
        return {n: keys for n, keys in found.items() if keys}

    @property
    def untested(self) -> list[str]:
        return list(self.missing)

    @property
    def drain(self) -> dict[str, list[str]]:
        """Node -> the reasons to drain it, in node order."""
        found: dict[str, list[str]] = defaultdict(list)
        for problem in self.problems:
            for node in problem.drain:
                what = f"cable {problem.subject}" if problem.kind == "cable" else problem.message
                found[node].append(f"{problem.code} {what}")
        order = {n: i for i, n in enumerate(self.nodes)}
        return dict(sorted(found.items(), key=lambda item: order.get(item[0], len(order))))

    @property
    def retest(self) -> dict[str, list[str]]:
        """Job -> the nodes to run it again for, in job order."""
        found: dict[str, set[str]] = defaultdict(set)
        for problem in self.problems:
            for job in problem.jobs:
                found[job].update(problem.retest or problem.drain)
        return {job: sorted(found[job]) for job in sorted(found)}

    @property
    def passed(self) -> bool:
        return self.results > 0 and not self.problems and (self.partial or not self.untested)
