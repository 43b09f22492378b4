"""How a render is spread over processes: `strategy` chooses, from the cluster's links, the `--jobs` asked for
and the machine; the strategies run the pipeline's stages (pipeline.py) in this process, or part of them in a
forked process (runtime/forked.py) and the file writing in a write-behind process (output/write_behind.py).
The thresholds and the figures they rest on: docs/architecture.md, Scheduling.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import BlueprintError, Finding
from .expand import Topology
from .lockfile import Keep, LockUpdate
from .output.writer import MANIFEST, StagedTree, manifest_text
from .pipeline import (
    Analysis,
    Progress,
    checked,
    cross_checked,
    expanded,
    family_count,
    lock_chunks_of,
    render_staged,
)
from .plan import Plan, build_plan
from .render import FAMILIES, RenderContext, render_in_order, shared_by_lanes
from .render.ansible.made import Carried, adopted, carried
from .runtime.forked import Forked, Note, can_fork
from .runtime.gc_paused import gc_paused
from .validate import ValidBlueprint


class Strategy(enum.Enum):
    ONE_PROCESS = "one process"
    """Every stage in this process, one after another."""
    TWO_LANES = "two lanes"
    """Right after expansion, the lock file's text and the device configurations here; the checks, the plan and
    the handoff pack in a forked process."""
    CHECKS_BESIDE = "checks beside"
    """Right after expansion, the checks, the plan and FAMILIES_BESIDE_CHECKS in a forked process while this
    one renders the families that need neither findings nor plan; the files written by a write-behind
    process."""
    WRITE_BEHIND = "write behind"
    """Every stage in this process but the file writing; what CHECKS_BESIDE comes to once checked already."""


TWO_LANES_MIN_LINKS = 20_000
"""Below this many links a render stays in one process unless `--jobs 2` asks otherwise: the second process
saves less than a tenth of the command's time (benchmarks/lanes_cost.py)."""
TWO_LANES_MAX_LINKS = 4_000_000
"""Above this many links a render checks beside instead (unless `--jobs 2`), where memory is what limits it:
both lanes' peaks meet. At a million GPUs (3.2 million links) two lanes, with the checks beside the device
configurations and the lock file's text made first, took 81 and 101 s wall (a first render, and a second
that read the lock file) at
7.6 and 7.9 GiB peak PSS; checking beside took 110 s and 7.3 GiB (docs/architecture.md, Scheduling)."""
FAMILIES_BESIDE_CHECKS = ("infiniband",)
"""Rendered by the checking process after the checks: the device family that takes longest beside the cable
tables, which are worked out before the fork (`shared_by_lanes`: the InfiniBand plan reads them), so both
processes read one copy."""


def strategy(links: int, jobs: int | None = None) -> Strategy:
    """How to render a cluster of `links` links: `jobs` 1 never starts another process, 2 renders in two lanes
    where the system can fork onto a second CPU; by default, by the size."""
    if jobs == 1 or not can_fork():
        return Strategy.ONE_PROCESS
    if jobs == 2 or TWO_LANES_MIN_LINKS <= links <= TWO_LANES_MAX_LINKS:
        return Strategy.TWO_LANES
    return Strategy.ONE_PROCESS if links < TWO_LANES_MIN_LINKS else Strategy.CHECKS_BESIDE


def render_blueprint(
    valid: ValidBlueprint,
    staged: StagedTree,
    templates: Path | None = None,
    progress: Progress | None = None,
    *,
    jobs: int | None = None,
    keep: Keep | None = None,
    chosen: Strategy | None = None,
    lock: LockUpdate | None = None,
) -> Analysis:
    """Expand, check and render into `staged` (the caller commits it) as `strategy` chooses (or as `chosen`),
    returning the analysis, and fill `lock` with the lock file's new text (the caller commits it too; LockMoved
    when `keep` trusted the lock file and the text differs); refuses, with nothing committed, when a check
    reports an error."""
    progress = progress or _quiet
    if lock is not None and keep is not None:
        lock.fresh_expected = keep.fresh
    topo, expand_findings = expanded(valid, progress, keep)
    del keep  # the lock file read (0.9 GiB at a million GPUs) is not needed any more: see _labels_taken
    chosen = chosen or strategy(len(topo.links), jobs)
    if chosen is Strategy.CHECKS_BESIDE:
        return _checks_beside(valid, topo, expand_findings, staged, templates, progress, lock)
    if chosen is Strategy.TWO_LANES:

        def checks() -> tuple[list[Finding], Plan]:
            findings = checked(valid, topo, expand_findings)
            return findings, build_plan(valid, topo, findings)

        return _two_lanes(valid, topo, checks, staged, templates, progress, lock)
    analysis = Analysis(valid, topo, checked(valid, topo, expand_findings, progress))
    render_analysed(analysis, staged, templates, progress, chosen=chosen, lock=lock)
    return analysis


def render_analysed(
    analysis: Analysis,
    staged: StagedTree,
    templates: Path | None = None,
    progress: Progress | None = None,
    *,
    jobs: int | None = None,
    chosen: Strategy | None = None,
    lock: LockUpdate | None = None,
) -> None:
    """`pipeline.render_staged`, spread as `strategy` chooses (or as `chosen`) for a blueprint checked already;
    `lock` filled as in `render_blueprint`."""
    progress = progress or _quiet
    chosen = chosen or strategy(len(analysis.topo.links), jobs)
    if chosen is Strategy.TWO_LANES:
        if analysis.blocking:
            raise BlueprintError(analysis.blocking)
        _two_lanes(
            analysis.valid, analysis.topo, lambda: (analysis.findings, analysis.plan), staged, templates, progress, lock
        )
        return
    if chosen is not Strategy.ONE_PROCESS:
        staged.write_behind()
    render_staged(analysis, staged, templates, progress)
    _filled_here(lock, analysis)


def _lock_text(lock: LockUpdate | None, analysis: Analysis) -> str:
    """The lock file's new text written into `lock`'s temporary file, in the process that calls this; its
    outcome, for `LockUpdate.filled` in the process that commits."""
    if lock is None:
        return ""
    with gc_paused():  # its millions of sorted pairs would make the collector walk again and again
        return lock.fill(lock_chunks_of(analysis))


def _filled_here(lock: LockUpdate | None, analysis: Analysis) -> None:
    if lock is not None:
        lock.filled(_lock_text(lock, analysis))


Lane = tuple[dict[str, str], dict[str, str], Carried]
"""What a forked lane sends back: its files' digests, the texts among them the consistency check reads, and
what its families made their files from, without the texts."""


def _lane(ctx: RenderContext, families: list[str], staged: StagedTree, note: Note) -> Lane:
    """`families` rendered into `staged` in a forked process."""
    start = len(staged)
    with gc_paused():
        made = render_in_order(ctx, families, staged.put, staged, note)
    digests, kept = staged.tail(start)
    return digests, kept, carried(made, staged)


def _two_lanes(
    valid: ValidBlueprint,
    topo: Topology,
    checks: Callable[[], tuple[list[Finding], Plan]],
    staged: StagedTree,
    templates: Path | None,
    progress: Progress,
    lock: LockUpdate | None,
) -> Analysis:
    """The lock file's text (first: its memory is given back before the device configurations take theirs, and
    does not meet the forked lane's peak) and the device configurations (which need neither findings nor plan)
    here; beside them, in a forked process, the `checks` (and the plan) and then, unless a check found an
    error, the handoff pack (into the same new folder)."""
    early = RenderContext.before_checks(valid, topo, templates)
    here = [name for name, family in FAMILIES.items() if not family.handoff and not family.needs]
    there = [name for name in FAMILIES if name not in here]  # and a device family that shows the findings
    shared_by_lanes(early)  # before the fork: worked out once, for both
    _labels_taken(topo)
    staged.begin()

    def beside(note: Note) -> tuple[list[Finding], Plan, Lane | None]:
        findings, plan = checks()
        if Analysis(valid, topo, findings).blocking:
            return findings, plan, None
        return findings, plan, _lane(early.with_checks(findings, plan), there, staged, note)

    count = _Count(progress)
    with Forked(beside) as lane:
        _filled_here(lock, Analysis(valid, topo, []))  # the lock file holds identities, not findings
        with gc_paused():
            made = render_in_order(early, here, staged.put, staged, count.with_lane(lane))
        progress("check", 0, 1)
        count.rest_of(lane)
        findings, plan, rendered = lane.join()
        progress("check", 1, 1)
    analysis = _analysed_beside(valid, topo, findings, plan)
    if rendered is None:
        raise BlueprintError(analysis.blocking)
    digests, kept, made_there = rendered
    staged.adopt(digests, kept)
    cross_checked(analysis, staged, made.merged(adopted(made_there, staged)), progress)
    staged.put(MANIFEST, manifest_text(staged.digests, valid.source_sha256()))
    return analysis


def _checks_beside(
    valid: ValidBlueprint,
    topo: Topology,
    expand_findings: list[Finding],
    staged: StagedTree,
    templates: Path | None,
    progress: Progress,
    lock: LockUpdate | None,
) -> Analysis:
    """The lock file's text, the checks, the plan and FAMILIES_BESIDE_CHECKS in a forked process beside the
    families that need neither; then, unless a check found an error, the families that show them."""
    staged.begin()  # before the fork: the checking process writes its families into the same folder
    early = RenderContext.before_checks(valid, topo, templates)
    shared_by_lanes(early)  # before the fork: worked out once, for both
    _labels_taken(topo)

    def check_beside(note: Note) -> tuple[str, list[Finding], Plan, Lane]:
        outcome = _lock_text(lock, Analysis(valid, topo, []))  # the lock file holds identities, not findings
        findings = checked(valid, topo, expand_findings)
        plan = build_plan(valid, topo, findings)
        return outcome, findings, plan, _lane(early, list(FAMILIES_BESIDE_CHECKS), staged, note)

    count = _Count(progress)
    with Forked(check_beside) as checks:
        staged.write_behind()  # after the fork: the checking process must not hold the writer's pipe open
        first = [name for name, family in FAMILIES.items() if not family.needs and name not in FAMILIES_BESIDE_CHECKS]
        with gc_paused():
            made = render_in_order(early, first, staged.put, staged, count.with_lane(checks))
        progress("check", 0, 1)
        count.rest_of(checks)
        lock_outcome, findings, plan, (digests, kept, made_beside) = checks.join()
        progress("check", 1, 1)
    if lock is not None:
        lock.filled(lock_outcome)
    staged.adopt(digests, kept)
    made = made.merged(adopted(made_beside, staged))
    analysis = _analysed_beside(valid, topo, findings, plan)
    if analysis.blocking:
        raise BlueprintError(analysis.blocking)
    last = [name for name, family in FAMILIES.items() if family.needs]
    with gc_paused():
        made = made.merged(render_in_order(early.with_checks(findings, plan), last, staged.put, staged, count.one_more))
    cross_checked(analysis, staged, made, progress)
    staged.put(MANIFEST, manifest_text(staged.digests, valid.source_sha256()))
    return analysis


def _analysed_beside(valid: ValidBlueprint, topo: Topology, findings: list[Finding], plan: Plan) -> Analysis:
    """The analysis of checks a forked process ran, with the plan it worked out (the cached property, set)."""
    analysis = Analysis(valid, topo, findings)
    analysis.__dict__["plan"] = plan
    return analysis


def _labels_taken(topo: Topology) -> None:
    """The cable labels the lock file holds let go once the cable table holds them (`shared_by_lanes`; cached
    for the topology, `lock_of` reads it): at a million GPUs 3.2 million lines (0.5 GiB), with the rest of the
    lock file read (0.4 GiB; the caller holds no Keep: cli.render_cmd) no longer in memory at the render's peak."""
    topo.held_labels = {}


class _Count:
    """Tells `progress` ("render", families done, families) as families are done, in whichever process."""

    def __init__(self, progress: Progress) -> None:
        self.one_more = family_count(progress)

    def with_lane(self, lane: Forked[Any]) -> Callable[[str], None]:
        """Counts a family done here, then those the forked `lane` has done meanwhile."""

        def done(family: str) -> None:
            self.one_more(family)
            for _ in lane.notes():
                self.one_more(None)

        return done

    def rest_of(self, lane: Forked[Any]) -> None:
        """Counts the families the forked `lane` does, until it is done."""
        for _ in lane.notes(wait=True):
            self.one_more(None)


def _quiet(_stage: str, _done: int, _total: int) -> None:
    return None
