"""The stages in order, with an error gate after each: load -> validate -> expand -> check -> render.

Every command loads with `load_valid`, analyses once with `analyse` (expand + check) and renders from that
analysis, so no command expands or checks twice. Here the stages run one after another in this process;
schedule.py spreads a large render over processes with the same stages.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cached_property, partial
from pathlib import Path
from typing import cast

from .checks import run_checks
from .errors import BlueprintError, Finding, Severity
from .expand import Topology, expand
from .expand.identity import locked_sections
from .loader import load_blueprint
from .lockfile import Keep, lock_chunks, read_afresh, read_lock
from .output.pieces import FileText, whole
from .output.writer import MANIFEST, StagedTree, manifest_text, with_manifest
from .plan import Plan, build_plan
from .render import FAMILIES, RenderContext, render_in_order
from .render.ansible.made import Made
from .render.consistency import consistency_findings
from .render.handoff.handoff_common import cable_table, cables_section
from .runtime.gc_paused import gc_paused
from .runtime.heap import keep_freed_memory
from .validate import ValidBlueprint, validate

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
    valid: ValidBlueprint,
    allow_renumber: bool = False,
    release_removed: bool = False,
    today: date | None = None,
    *,
    fresh: bool | None = None,
) -> Keep:
    """The lock file beside the blueprint (raises BlueprintError when it cannot be read), with what the
    user allows to change, the blueprint's hold period and the render's date (expand/hold.py).

    `fresh` True: a lock file whose `afresh` line names these inputs is not read (`Keep.fresh`; the render
    checks it); False: it was found not to be what a render without it makes (LockMoved), and the new lock
    file names no inputs; None: it is read, and its `afresh` line kept as long as it names these inputs."""
    afresh = "" if fresh is False else valid.source_sha256()
    if fresh and read_afresh(valid.path) == afresh:
        return Keep(None, allow_renumber, release_removed, valid.blueprint.hold_days, today, afresh, fresh=True)
    lock = read_lock(valid.path)
    return Keep(lock, allow_renumber, release_removed, valid.blueprint.hold_days, today, afresh)


def lock_of(analysis: Analysis) -> str:
    """The lock file's text after this analysis: its identities, and what the lock file it was expanded with
    keeps for removed devices and free ports (worked out by the expand stage: the lock need not be kept)."""
    return "".join(lock_chunks_of(analysis))


def lock_chunks_of(analysis: Analysis) -> Iterator[str]:
    """`lock_of` a section at a time, each made as it is asked for."""
    sections = locked_sections(analysis.topo, partial(cable_labels, analysis))
    return lock_chunks(analysis.valid.blueprint.name, sections, analysis.topo.afresh)


def cable_labels(analysis: Analysis, ends: list[str] | None = None) -> dict[str, str]:
    """'network/device:port' of each link's A end (`ends[i]` for link i, when given) -> its cable's label."""
    table = cable_table(analysis.valid, analysis.topo)
    return cables_section(analysis.topo, table.order, table.link_labels, ends)


def analyse(valid: ValidBlueprint, progress: Progress = _quiet, keep: Keep | None = None) -> Analysis:
    """Expand (keeping the identities of `keep`, by default of the lock file beside the blueprint) and check;
    raises BlueprintError when expansion fails (check errors are findings)."""
    topo, expand_findings = expanded(valid, progress, keep)
    return Analysis(valid, topo, checked(valid, topo, expand_findings, progress))


def expanded(valid: ValidBlueprint, progress: Progress, keep: Keep | None) -> tuple[Topology, list[Finding]]:
    keep_freed_memory()  # from here on, large blocks are freed and asked for again stage after stage
    # expand: placement, fabrics, cabling, addresses, then what the lock file keeps (raises on errors)
    progress("expand", 0, 1)
    expanded = expand(valid, keep if keep is not None else keep_of(valid))
    progress("expand", 1, 1)
    return expanded


def checked(
    valid: ValidBlueprint, topo: Topology, expand_findings: list[Finding], progress: Progress = _quiet
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
    made = render_checked(analysis, templates, progress, lambda path, text: files.__setitem__(path, whole(text)), files)
    cross_checked(analysis, files, made, progress)
    return with_manifest(dict(sorted(files.items())), analysis.valid.source_sha256())


def render_staged(
    analysis: Analysis, staged: StagedTree, templates: Path | None = None, progress: Progress = _quiet
) -> None:
    """`render_analysis` into `staged`: each family written as soon as it is rendered, then the manifest; the
    caller commits it. What a family leaves in memory is its digests (and the texts the consistency check
    reads), not its text."""
    made = render_checked(analysis, templates, progress, staged.put, staged)
    cross_checked(analysis, staged, made, progress)
    staged.put(MANIFEST, manifest_text(staged.digests, analysis.valid.source_sha256()))


def render_checked(
    analysis: Analysis,
    templates: Path | None,
    progress: Progress,
    put: Callable[[str, FileText], None],
    rendered: Container[str],
) -> Made:
    """Every family in order into `put` (whose files `rendered` then holds); raises when a check found an
    error."""
    if analysis.blocking:
        raise BlueprintError(analysis.blocking)
    ctx = RenderContext(analysis.valid, analysis.topo, analysis.findings, templates, analysis.plan)
    count = family_count(progress)
    with gc_paused():  # the collector would walk the expanded topology's millions of objects again and again
        return render_in_order(ctx, FAMILIES, put, rendered, count)


def family_count(progress: Progress) -> Callable[[object], None]:
    """Tells `progress` ("render", families done, families) now and at each call."""
    done = [0]
    progress("render", 0, len(FAMILIES))

    def one_more(_family: object) -> None:
        done[0] += 1
        progress("render", done[0], len(FAMILIES))

    return one_more


def cross_checked(analysis: Analysis, rendered: Mapping[str, str], made: Made, progress: Progress) -> None:
    """The consistency check over every family's files; raises BlueprintError with its problems."""
    progress("consistency", 0, 1)
    # the check only reads (`in`, `get`, items): any mapping of the files does
    problems = consistency_findings(analysis.valid, analysis.topo, cast(dict[str, str], rendered), made)
    progress("consistency", 1, 1)
    if problems:
        raise BlueprintError(problems)


def render_files(valid: ValidBlueprint, templates: Path | None = None) -> dict[str, str]:
    """`render_analysis(analyse(valid))`: for callers that need nothing but the files."""
    return render_analysis(analyse(valid), templates)
