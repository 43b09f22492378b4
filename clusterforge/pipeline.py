"""The stages in order, with an error gate after each: load -> validate -> expand -> check -> render.

The only module that puts the stages together: every command loads with `load_valid`, analyses once with
`analyse` (expand + check) and renders from that analysis, so no command expands or checks twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import Any, cast

from .checks import run_checks
from .errors import BlueprintError, Finding, Severity
from .expand import Topology, expand
from .expand.gc_paused import gc_paused
from .expand.identity import locked
from .forked import Forked, Note, can_fork, cpus_usable
from .heap import keep_freed_memory
from .loader import load_blueprint
from .lockfile import Keep, lock_text, read_lock
from .plan import Plan, build_plan
from .render import FAMILIES_SHOWING_CHECKS, HANDOFF_FAMILIES, RENDERERS, RenderContext, render_family, shared_by_lanes
from .render.consistency import consistency_findings
from .render.handoff_common import cable_table, link_ends
from .render.made import Carried, adopt_made, carried_made
from .render.pieces import FileText, whole
from .validate import ValidBlueprint, validate
from .writer import MANIFEST, StagedTree, manifest_text, with_manifest

Progress = Callable[[str, int, int], None]
"""Told (stage, steps done, steps in all) as long work goes on; the CLI draws it on a terminal."""


def _quiet(_stage: str, _done: int, _total: int) -> None:
    return None


def load_valid(path: Path, allow: Sequence[Path] = ()) -> ValidBlueprint:
    # load: YAML with includes -> raw data + source map (raises BlueprintError); files only from the
    # blueprint's repository and the allowed folders
    loaded = load_blueprint(path, allow)
    # validate: schema, catalog, references (raises BlueprintError with every error found)
    return validate(loaded)


@dataclass(frozen=True)
class Analysis:
    """A valid blueprint expanded and checked once; what plan, check, render, export and diff work from."""

    valid: ValidBlueprint
    topo: Topology
    findings: list[Finding]
    """Expansion warnings and every check's findings, suppressions applied, sorted."""

    @cached_property
    def plan(self) -> Plan:
        return build_plan(self.valid, self.topo, self.findings)

    @property
    def blocking(self) -> list[Finding]:
        """Unsuppressed errors: they stop a render."""
        return [f for f in self.findings if f.severity is Severity.ERROR and not f.suppressed_by]


def keep_of(
    valid: ValidBlueprint, allow_renumber: bool = False, release_removed: bool = False, today: date | None = None
) -> Keep:
    """The lock file beside the blueprint (raises BlueprintError when it cannot be read), with what the
    user allows to change, the blueprint's hold period and the render's date (expand/hold.py)."""
    lock = read_lock(valid.path)
    return Keep(lock, allow_renumber, release_removed, valid.blueprint.hold_days, today)


def lock_of(analysis: Analysis, keep: Keep) -> str:
    """The lock file's text after this analysis: its identities, and the held ones of `keep`'s lock."""
    sections = locked(analysis.topo, keep)
    sections["cables"] = cable_labels(analysis)
    return lock_text(analysis.valid.blueprint.name, sections)


def cable_labels(analysis: Analysis) -> dict[str, str]:
    """'network/device:port' of each link's A end -> its cable's label."""
    table = cable_table(analysis.valid, analysis.topo)
    return {end: label for label, end in link_ends(analysis.topo, table.order, table.link_labels)}


def analyse(valid: ValidBlueprint, progress: Progress = _quiet, keep: Keep | None = None) -> Analysis:
    """Expand (keeping the identities of `keep`, by default of the lock file beside the blueprint) and check;
    raises BlueprintError when expansion fails (check errors are findings)."""
    topo, expand_findings = _expanded(valid, progress, keep)
    return Analysis(valid, topo, _checked(valid, topo, expand_findings, progress))


def _expanded(valid: ValidBlueprint, progress: Progress, keep: Keep | None) -> tuple[Topology, list[Finding]]:
    keep_freed_memory()  # from here on, large blocks are freed and asked for again stage after stage
    # expand: placement, fabrics, cabling, addresses, then what the lock file keeps (raises on errors)
    progress("expand", 0, 1)
    expanded = expand(valid, keep if keep is not None else keep_of(valid))
    progress("expand", 1, 1)
    return expanded


def _checked(
    valid: ValidBlueprint, topo: Topology, expand_findings: list[Finding], progress: Progress
) -> list[Finding]:
    # check: physical and fabric checks, then the blueprint's suppressions
    progress("check", 0, 1)
    findings = run_checks(valid, topo, expand_findings)
    progress("check", 1, 1)
    return findings


CONSISTENCY_READS = ("ansible/", "slurm/", "nccl/")
"""The families whose texts the consistency check reads (render/consistency.py): a staged render keeps them
in memory; it reads any other file back from the disk if asked."""


def render_analysis(analysis: Analysis, templates: Path | None = None, progress: Progress = _quiet) -> dict[str, str]:
    """Every output file of an analysed blueprint, with its manifest, in memory; raises when a check found an
    error."""
    files: dict[str, str] = {}
    _render_checked(
        analysis,
        templates,
        progress,
        lambda ctx, count: _one_lane(ctx, _joined_into(files), files, count),
    )
    return with_manifest(dict(sorted(files.items())), analysis.valid.source_sha256())


TWO_LANES_MIN_LINKS = 10_000
"""Below this many links a render stays in one process unless told otherwise: the second process costs more
CPU than it saves wall time (2,048 links: 0.52 s wall either way, 0.05 CPU s more with two; 13,120 links: 0.04 s
less wall for 0.08 CPU s more; 32,532 links: 0.43 s less wall)."""
TWO_LANES_MAX_LINKS = 1_000_000
"""Above this many links a render stays in one process unless told otherwise (render_blueprint then runs the
checks beside it): two lanes take about 1.35 times the memory of one (pages of the topology both touch are
copied; both lanes' peaks meet), which at 1,000,000 GPUs (3.2 million links) was 9.6 GiB peak PSS against 7.4
(2026-12-04); at 100,000 GPUs (320,942 links) 1.0 GiB."""


WRITE_BEHIND_MIN_LINKS = TWO_LANES_MIN_LINKS
"""From this many links a render in one process, where a second CPU is usable, hands its files to a second
process that writes them (writer.StagedTree.write_behind): at 1,000,000 GPUs, 24 s of file writing taken off
the render's path; below, a few files and a process started for nothing."""


CHECKS_BESIDE_MIN_LINKS = TWO_LANES_MIN_LINKS
"""From this many links a render in one process, where a second CPU is usable, forks a process that runs the
checks, works out the plan and renders FAMILIES_BESIDE_CHECKS while the render goes on with the families that do
not show the checks (render_blueprint). At 1,000,000 GPUs that takes the checks, the plan and the InfiniBand
files off the render's path. That process leaves its result in a file and ends when it is done (forked.py),
so the pages copied while both run are freed before the render's memory peak (the cable tables): 7.6-7.8 GiB at
the peak (all processes' PSS) against 6.8 GiB (max RSS) all in one process (render_scale.py)."""


def render_blueprint(
    valid: ValidBlueprint,
    staged: StagedTree,
    templates: Path | None = None,
    progress: Progress = _quiet,
    *,
    jobs: int | None = None,
    keep: Keep | None = None,
) -> Analysis:
    """`render_staged(analyse(valid, keep=keep))`, returning the analysis; a render that stays in one process (see
    `render_staged`) from CHECKS_BESIDE_MIN_LINKS links, where it can fork onto a second CPU, checks (and
    renders FAMILIES_BESIDE_CHECKS) in a forked process beside the families that do not show the checks,
    and refuses after them (nothing is committed) when a check reports an error."""
    topo, expand_findings = _expanded(valid, progress, keep)
    jobs = jobs or _default_jobs(len(topo.links))
    if jobs > 1 or len(topo.links) < CHECKS_BESIDE_MIN_LINKS or not can_fork():
        analysis = Analysis(valid, topo, _checked(valid, topo, expand_findings, progress))
        render_staged(analysis, staged, templates, progress, jobs=jobs)
        return analysis
    staged.begin()  # before the fork: the checking process writes its families into the same folder

    def check_beside(note: Note) -> tuple[list[Finding], Plan, tuple[dict[str, str], dict[str, str]], Carried]:
        findings = run_checks(valid, topo, expand_findings)
        plan = build_plan(valid, topo, findings)
        start = len(staged)
        with gc_paused():
            _render_families(early, FAMILIES_BESIDE_CHECKS, staged.put, staged, note)
        return findings, plan, staged.tail(start), carried_made(topo, staged)

    early = RenderContext(valid, topo, [], templates)
    count = _Count(progress)
    shared_by_lanes(early)  # before the fork: worked out once, for both
    with Forked(check_beside) as checks:
        staged.write_behind()  # after the fork: the checking process must not hold the writer's pipe open
        first = [f for f in RENDERERS if f not in FAMILIES_SHOWING_CHECKS and f not in FAMILIES_BESIDE_CHECKS]
        last = [family for family in RENDERERS if family in FAMILIES_SHOWING_CHECKS]
        with gc_paused():
            _render_families(early, first, staged.put, staged, count.with_lane(checks))
        progress("check", 0, 1)
        count.rest_of(checks)
        findings, plan, beside, made = checks.join()
        progress("check", 1, 1)
    staged.adopt(*beside)
    adopt_made(topo, made, staged)  # the consistency check reads the Ansible family as it was made, not parsed
    analysis = Analysis(valid, topo, findings)
    analysis.__dict__["plan"] = plan  # the cached property, worked out by the checking process
    if analysis.blocking:
        raise BlueprintError(analysis.blocking)
    with gc_paused():
        _render_families(early.with_checks(findings, plan), last, staged.put, staged, count.one_more)
    _cross_checked(analysis, staged, progress)
    staged.put(MANIFEST, manifest_text(staged.digests, valid.source_sha256()))
    return analysis


FAMILIES_BESIDE_CHECKS = ("infiniband",)
"""Rendered by the checking process after the checks (render_blueprint): the device family that takes longest
beside the cable tables, which are worked out before the fork (`shared_by_lanes`: the InfiniBand plan reads
them), so both processes read one copy. With the Ansible inventory there instead, the render's own process
rendered for about 50 s at 1,000,000 GPUs while the checking process was done after about 28; with the
InfiniBand files, two pairs of runs (2026-12-05): 81.3 and 93.4 s wall against 90.4 and 103.1, 110.4 and 134.1
CPU s against 130.6 and 152.1, 7.60 and 7.79 GiB peak PSS against 7.54 and 7.56, byte-identical files. Without
the table worked out before the fork, the checking process built its own: 8.8 GiB."""


def _default_jobs(links: int) -> int:
    return 2 if TWO_LANES_MIN_LINKS <= links <= TWO_LANES_MAX_LINKS else 1


def render_staged(
    analysis: Analysis,
    staged: StagedTree,
    templates: Path | None = None,
    progress: Progress = _quiet,
    *,
    jobs: int | None = None,
) -> None:
    """`render_analysis` into `staged`: each family written as soon as it is rendered, then the manifest; the
    caller commits it. What a family leaves in memory is its digests (and the texts the consistency check
    reads), not its text. With two `jobs` (by default: from TWO_LANES_MIN_LINKS to TWO_LANES_MAX_LINKS links),
    where the system can fork and a second CPU is usable, the handoff pack is rendered and written by a second
    process beside the device configurations; with one, from WRITE_BEHIND_MIN_LINKS links and a second CPU, a
    second process writes the files while the render goes on."""
    if jobs is None:
        jobs = _default_jobs(len(analysis.topo.links))
    if jobs > 1 and can_fork():
        _render_checked(analysis, templates, progress, lambda ctx, count: _two_lanes(ctx, staged, count))
    else:
        if len(analysis.topo.links) >= WRITE_BEHIND_MIN_LINKS and cpus_usable() > 1:
            staged.write_behind()
        _render_checked(analysis, templates, progress, lambda ctx, count: _one_lane(ctx, staged.put, staged, count))
    staged.put(MANIFEST, manifest_text(staged.digests, analysis.valid.source_sha256()))


class _Count:
    """Tells `progress` ("render", families done, families) as families are done, in whichever process."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.done = 0
        progress("render", 0, len(RENDERERS))

    def one_more(self, _family: object = None) -> None:
        self.done += 1
        self.progress("render", self.done, len(RENDERERS))

    def with_lane(self, lane: Forked[Any]) -> Callable[[str], None]:
        """Counts a family done here, then those the forked `lane` has done meanwhile."""

        def done(family: str) -> None:
            self.one_more(family)
            for _ in lane.notes():
                self.one_more()

        return done

    def rest_of(self, lane: Forked[Any]) -> None:
        """Counts the families the forked `lane` does, until it is done."""
        for _ in lane.notes(wait=True):
            self.one_more()


def _render_checked(
    analysis: Analysis,
    templates: Path | None,
    progress: Progress,
    render_all: Callable[[RenderContext, _Count], Mapping[str, str]],
) -> None:
    """Render every family with `render_all` (into files it writes somewhere), then cross-check them."""
    if analysis.blocking:
        raise BlueprintError(analysis.blocking)
    # render: one renderer per output family, then a cross-check of what they wrote
    ctx = RenderContext(analysis.valid, analysis.topo, analysis.findings, templates, analysis.plan)
    with gc_paused():  # the collector would walk the expanded topology's millions of objects again and again
        rendered = render_all(ctx, _Count(progress))
    _cross_checked(analysis, rendered, progress)


def _cross_checked(analysis: Analysis, rendered: Mapping[str, str], progress: Progress) -> None:
    """The consistency check over every family's files; raises BlueprintError with its problems."""
    progress("consistency", 0, 1)
    # the check only reads (`in`, `get`, items): any mapping of the files does
    problems = consistency_findings(analysis.valid, analysis.topo, cast(dict[str, str], rendered))
    progress("consistency", 1, 1)
    if problems:
        raise BlueprintError(problems)


def _joined_into(files: dict[str, str]) -> Callable[[str, FileText], None]:
    """Puts a file's text into `files`, whole."""

    def put(rel: str, text: FileText) -> None:
        files[rel] = whole(text)

    return put


def _put_family(
    files: Mapping[str, FileText], put: Callable[[str, FileText], None], rendered: Mapping[str, str]
) -> None:
    for path, text in files.items():
        if path in rendered:
            raise ValueError(f"two renderers write {path}")
        put(path, text)


def _one_lane(
    ctx: RenderContext, put: Callable[[str, FileText], None], rendered: Mapping[str, str], count: _Count
) -> Mapping[str, str]:
    """Every family in this process, in order, into `put` (whose files `rendered` then holds)."""
    _render_families(ctx, RENDERERS, put, rendered, count.one_more)
    return rendered


def _render_families(
    ctx: RenderContext,
    families: Iterable[str],
    put: Callable[[str, FileText], None],
    rendered: Mapping[str, str],
    done: Callable[[str], None],
) -> None:
    """`families` in order into `put` (whose files `rendered` then holds), telling `done` after each."""
    for family in families:
        _put_family(render_family(ctx, family), put, rendered)
        done(family)


def _two_lanes(ctx: RenderContext, staged: StagedTree, count: _Count) -> Mapping[str, str]:
    """The device configurations rendered and written here, the handoff pack beside them in a forked process
    (both into the same new folder); that process sends back its files' digests."""
    here = [family for family in RENDERERS if family not in HANDOFF_FAMILIES]
    there = [family for family in RENDERERS if family in HANDOFF_FAMILIES]
    shared_by_lanes(ctx)  # before the fork: worked out once, for both
    staged.begin()
    start = len(staged)

    def handoff(note: Note) -> tuple[dict[str, str], dict[str, str]]:
        _render_families(ctx, there, staged.put, staged, note)
        return staged.tail(start)

    with Forked(handoff) as lane:
        _render_families(ctx, here, staged.put, staged, count.with_lane(lane))
        count.rest_of(lane)
        staged.adopt(*lane.join())
    return staged


def render_files(valid: ValidBlueprint, templates: Path | None = None) -> dict[str, str]:
    """`render_analysis(analyse(valid))`: for callers that need nothing but the files."""
    return render_analysis(analyse(valid), templates)
