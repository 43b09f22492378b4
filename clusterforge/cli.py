"""Command line: the only module that prints or exits."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import click

from . import codes
from .catalog import load_catalog
from .checks.workloads import recheck_workloads
from .errors import (
    ClusterforgeError,
    Finding,
    Severity,
    SourceLocation,
    display_name,
    escape_github_data,
    sorted_findings,
)
from .lockfile import LockMoved, LockUpdate, is_lock_file, lock_path
from .output.writer import OutputError, StagedTree, TreeDiff, compare_tree
from .pipeline import (
    CONSISTENCY_READS,
    analyse,
    keep_of,
    load_valid,
    lock_of,
    render_analysis,
)
from .plan import plan_text
from .render.context import RenderContext
from .render.handoff.bom import bom_text
from .render.handoff.report import REPORT_HTML, REPORT_MD
from .schedule import render_blueprint
from .version import __version__
from .workload import fit_json, fit_text, fit_workloads
from .workload.plan import plan_layouts

# Modules only some commands need (verify, diff, export, schema, catalog) are imported inside those commands:
# start-up is most of a small render's time.
EXIT_OK, EXIT_FINDINGS, EXIT_INTERNAL = 0, 1, 3  # click exits 2 on a usage error
_LEFT_TO_THE_END: list[object] = []
"""What a command leaves for the end of the process to free: a rendered topology, freed object by object, took
1.6 s at a million GPUs after the files were written (`main` ends the process without freeing it)."""
FORMATS = click.Choice(["text", "json", "github"])
ALLOW_DIR = click.option(
    "--allow-dir",
    "allow",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="a folder outside the blueprint's repository that includes and catalogs may be read from (repeatable)",
)
ALLOW_RENUMBER = click.option(
    "--allow-renumber",
    is_flag=True,
    help="let the change renumber or rename devices the lock file holds (CF-IDENT-001 is then a warning)",
)


RENDER_DATE = click.option(
    "--date",
    "render_date",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="the date of this render (YYYY-MM-DD), against which the blueprint's hold_days ends the hold of removed "
    "devices [default: SOURCE_DATE_EPOCH when set, else none: no hold ends by time]",
)


def _today(given: datetime | None) -> date | None:
    """The render's date: --date, else SOURCE_DATE_EPOCH (seconds since 1970, UTC), else None. The wall clock
    is never read, so a render is the same on every day (docs/day-two.md)."""
    if given is not None:
        return given.date()
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not epoch:
        return None
    if not epoch.isdigit() or len(epoch) > 12:
        raise click.BadParameter(f"SOURCE_DATE_EPOCH={epoch[:20]!r} is not a number of seconds", param_hint="date")
    return datetime.fromtimestamp(int(epoch), tz=UTC).date()


def _finding_counts(findings: Sequence[Finding]) -> str:
    """'0 errors, 2 warnings, 1 note, 3 suppressed' of the unsuppressed findings."""
    counts = Counter(f.severity.value for f in findings if not f.suppressed_by)
    suppressed = sum(1 for f in findings if f.suppressed_by)
    return (
        f"{_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}, "
        f"{_plural(counts['info'], 'note')}" + (f", {suppressed} suppressed" if suppressed else "")
    )


def _print_findings(findings: Sequence[Finding], fmt: str, err: bool = False) -> None:
    for finding in sorted_findings(findings):
        click.echo(finding.as_github() if fmt == "github" else finding.as_text(), err=err)


@contextmanager
def _exit_on_findings(err: bool = False) -> Iterator[None]:
    """Findings that stop a command (a ClusterforgeError) printed, then exit 1."""
    try:
        yield
    except ClusterforgeError as exc:
        _print_findings(exc.findings, "text", err=err)
        sys.exit(EXIT_FINDINGS)


def _summary(line: str, fmt: str) -> None:
    """A blueprint's summary line: with `--format github` on stderr, one line whatever its file name holds (a
    newline there would start a line GitHub reads as a workflow command)."""
    if fmt == "github":
        click.echo(escape_github_data(line), err=True)
    else:
        click.echo(line)


class _Bars:
    """One progress bar per stage on stderr (load, expand, check, render, consistency, write), each line
    finished when its stage is; nothing when not enabled (not a terminal, or --quiet)."""

    WIDTH = 30

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.open = False

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        filled = self.WIDTH * done // max(total, 1)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        click.echo(f"\r{stage:<12} [{bar}] {done}/{total}", err=True, nl=False)
        self.open = done < total
        if not self.open:
            click.echo("", err=True)

    def stop(self) -> None:
        """End a bar left open (a stage that failed), so messages start on their own line."""
        if self.enabled and self.open:
            click.echo("", err=True)
            self.open = False


class _Commands(click.Group):
    """A group whose `--help` gives each command's first sentence whole, wrapped, instead of cutting it at
    the terminal's width."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="clusterforge")
def cli() -> None:
    """Plan, check and render GPU clusters from blueprint YAML."""


@cli.command("validate")
@click.argument("blueprints", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True)
@ALLOW_DIR
def validate_cmd(blueprints: tuple[Path, ...], fmt: str, allow: tuple[Path, ...]) -> None:
    """Check blueprints against the schema and the catalog; report every error at once."""
    results: list[dict[str, Any]] = []
    failed = False
    for path in _blueprints_only(_globbed(blueprints), fmt):
        try:
            valid = load_valid(path, allow)
        except ClusterforgeError as exc:
            failed = True
            results.append(
                {"blueprint": display_name(path), "valid": False, "findings": [f.as_dict() for f in exc.findings]}
            )
            if fmt != "json":
                _print_findings(exc.findings, fmt)
                _summary(f"{display_name(path)}: invalid ({_count(exc.findings)})", fmt)
            continue
        bp = valid.blueprint
        summary = {
            "node_groups": len(bp.node_groups),
            "nodes": sum(g.count for g in bp.node_groups),
            "racks": sum(r.racks for r in bp.floor.rows),
            "fabrics": len(bp.fabrics),
        }
        results.append({"blueprint": display_name(path), "valid": True, "findings": [], "summary": summary})
        if fmt != "json":
            _summary(
                f"{display_name(path)}: valid ({summary['nodes']} nodes in {summary['node_groups']} "
                f"groups, {summary['racks']} racks, {summary['fabrics']} networks)",
                fmt,
            )
    if fmt == "json":
        click.echo(json.dumps({"blueprints": results}, indent=2, sort_keys=True))
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


def _globbed(paths: Sequence[Path]) -> list[Path]:
    """Paths as given; a glob (`blueprints/**/*.yaml`, quoted so the shell leaves it) stands for the files it
    finds that look like blueprints (fragments.py), outside inventories/."""
    from .fragments import blueprint_candidates, has_glob

    out: list[Path] = []
    for path in paths:
        out += blueprint_candidates([str(path)], Path("inventories"))[0] if has_glob(str(path)) else [path]
    return out


def _blueprints_only(paths: Sequence[Path], fmt: str) -> list[Path]:
    """`paths` without lock files (`x.lock.yaml`, which a glob such as `blueprints/*.yaml` brings along),
    each skipped with a note on stderr (none for `--format json`)."""
    kept = []
    for path in paths:
        if is_lock_file(path):
            if fmt != "json":
                click.echo(f"{display_name(path)}: skipped (a lock file, not a blueprint)", err=True)
        else:
            kept.append(path)
    return kept


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _count(findings: Sequence[Finding]) -> str:
    return _plural(sum(1 for f in findings if f.severity is Severity.ERROR), "error")


@cli.command("plan")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@ALLOW_RENUMBER
@RENDER_DATE
@ALLOW_DIR
def plan_cmd(
    blueprint: Path, fmt: str, allow_renumber: bool, render_date: datetime | None, allow: tuple[Path, ...]
) -> None:
    """Expand a blueprint and summarise it: nodes, GPUs, racks, fabrics per tier, cables."""
    today = _today(render_date)
    with _exit_on_findings():
        valid = load_valid(blueprint, allow)
        analysis = analyse(valid, keep=keep_of(valid, allow_renumber, today=today))
    if fmt == "json":
        click.echo(json.dumps(analysis.plan.as_dict(), indent=2, sort_keys=True))
    else:
        click.echo(plan_text(analysis.plan))
        _print_findings([*analysis.topo.identity_findings, *analysis.findings], "text")


@cli.command("bom")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@ALLOW_DIR
def bom_cmd(blueprint: Path, allow: tuple[Path, ...]) -> None:
    """The bill of materials: every part with its part number, installed quantity, spares, what to order."""
    with _exit_on_findings(err=True):  # stdout is the BOM alone (`bom x.yaml > bom.txt`)
        analysis = analyse(load_valid(blueprint, allow))
    click.echo(bom_text(RenderContext(analysis.valid, analysis.topo, analysis.findings)))


@cli.command("check")
@click.argument("blueprints", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=FORMATS, default="text", show_default=True)
@click.option(
    "--fail-on",
    type=click.Choice(["error", "warning"]),
    default="error",
    show_default=True,
    help="lowest severity of an unsuppressed finding that makes the exit status 1",
)
@ALLOW_DIR
def check_cmd(blueprints: tuple[Path, ...], fmt: str, fail_on: str, allow: tuple[Path, ...]) -> None:
    """Expand blueprints and run every check: ports, oversubscription, space, weight, power, cooling."""
    failing = {Severity.ERROR} if fail_on == "error" else {Severity.ERROR, Severity.WARNING}
    failed = False
    report: list[dict[str, Any]] = []
    for path in _blueprints_only(blueprints, fmt):
        try:
            findings = analyse(load_valid(path, allow)).findings
        except ClusterforgeError as exc:
            findings = exc.findings
        active = [f for f in findings if not f.suppressed_by]
        failed |= any(f.severity in failing for f in active)
        report.append({"blueprint": display_name(path), "findings": [f.as_dict() for f in findings]})
        if fmt == "json":
            continue
        _print_findings(active, fmt)
        suppressed = [f for f in findings if f.suppressed_by]
        summary = f"{display_name(path)}: {_finding_counts(findings)}"
        if suppressed and fmt == "text":
            click.echo("suppressed (accepted in the blueprint):")
            _print_findings(suppressed, fmt)
        _summary(summary, fmt)
    if fmt == "json":
        click.echo(json.dumps({"blueprints": report}, indent=2, sort_keys=True))
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


@cli.command("fit")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--suggest",
    is_flag=True,
    help="one layout for all workloads at once that fits and meets every target, re-checked",
)
@ALLOW_DIR
def fit_cmd(blueprint: Path, fmt: str, suggest: bool, allow: tuple[Path, ...]) -> None:
    """Will the workloads fit and how fast: memory per GPU, step time, tokens/s, energy and cost per token."""
    with _exit_on_findings():
        analysis = analyse(load_valid(blueprint, allow))
    fits = fit_workloads(analysis.valid.blueprint, analysis.valid.catalog, analysis.topo)
    work = [f for f in analysis.findings if f.code.startswith("CF-WORK-")]
    plan = plan_layouts(analysis.valid, analysis.topo, recheck_workloads) if suggest and fits else None
    if fmt == "json":
        click.echo(json.dumps(fit_json(fits, work, suggest, plan), indent=2, sort_keys=True))
    else:
        click.echo(fit_text(fits, work, suggest, plan))
        _print_findings([f for f in work if not f.suppressed_by], "text")
    sys.exit(EXIT_FINDINGS if any(f.severity is Severity.ERROR and not f.suppressed_by for f in work) else EXIT_OK)


@cli.command("render")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, file_okay=False),
    help="output folder (default: inventories/<blueprint name>)",
)
@click.option(
    "--templates",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="site template folder; its templates replace the shipped ones of the same path",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="write nothing; exit 1 and list stale, missing and extra files if the folder is not fresh",
)
@click.option(
    "--force",
    is_flag=True,
    help="write into a folder that holds files clusterforge did not write (they are kept, except those "
    "of the same path as a rendered file)",
)
@click.option("--quiet", "-q", is_flag=True, help="no progress bars (they are drawn only on a terminal anyway)")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1, 2),
    help="processes that render: 1 starts no other process, 2 uses a second CPU where there is one "
    "[default: chosen by the cluster's size]",
)
@ALLOW_RENUMBER
@click.option(
    "--release-removed",
    is_flag=True,
    help="give up the identities the lock file holds for devices removed from the blueprint (its `held` lines)",
)
@RENDER_DATE
@ALLOW_DIR
def render_cmd(
    blueprint: Path,
    output: Path | None,
    templates: Path | None,
    check_only: bool,
    force: bool,
    quiet: bool,
    jobs: int | None,
    allow_renumber: bool,
    release_removed: bool,
    render_date: datetime | None,
    allow: tuple[Path, ...],
) -> None:
    """Render the deployment files: Ansible, Slurm, NCCL (and the handoff pack)."""
    today = _today(render_date)
    progress = _Bars(enabled=not quiet and sys.stderr.isatty())
    try:
        progress("load", 0, 1)
        valid = load_valid(blueprint, allow)
        progress("load", 1, 1)
        target = output or Path("inventories") / valid.blueprint.name
        if check_only:
            checked = analyse(valid, progress, keep_of(valid, allow_renumber, release_removed, today))
            rendered = render_analysis(checked, templates, progress)
            diff = compare_tree(rendered, target)
            lock_fresh = _print_lock_check(blueprint, lock_of(checked))
            _print_tree_diff(diff, target, len(rendered))
            sys.exit(EXIT_OK if diff.fresh and lock_fresh else EXIT_FINDINGS)
        for fresh in (True, False):  # trusting the lock file's `afresh` line; if it proves wrong, reading it
            try:
                with StagedTree(target, force=force, keep=CONSISTENCY_READS) as files, LockUpdate(blueprint) as lock:
                    # the lock file read is handed over, not held here: render_blueprint lets it go once expanded
                    analysis = render_blueprint(
                        valid,
                        files,
                        templates,
                        progress,
                        jobs=jobs,
                        keep=keep_of(valid, allow_renumber, release_removed, today, fresh=fresh),
                        lock=lock.reserve(),
                    )
                    progress("write", 0, 1)
                    files.commit()
                    progress("write", 1, 1)
                    lock_written = _write_lock(lock)
                break
            except LockMoved as moved:
                click.echo(f"{moved}: rendering again, reading it", err=True)
    except OutputError as exc:
        progress.stop()
        _print_findings(exc.findings, "text")
        sys.exit(EXIT_FINDINGS)
    except ClusterforgeError as exc:
        progress.stop()
        _print_findings(exc.findings, "text")
        click.echo(f"{display_name(blueprint)}: nothing written", err=True)
        sys.exit(EXIT_FINDINGS)
    click.echo(f"{display_name(target)}: wrote {len(files)} files")
    click.echo(f"{display_name(lock_path(blueprint))}: {'written' if lock_written else 'unchanged'}")
    warnings = [f for f in analysis.findings if f.severity is Severity.WARNING and not f.suppressed_by]
    warnings = [*analysis.topo.identity_findings, *warnings]  # what moved against the lock file, first
    _print_findings(warnings, "text")
    click.echo(f"findings: {_finding_counts(analysis.findings)} (all of them in the report)")
    if REPORT_MD in files:
        click.echo(f"report: {display_name(target / REPORT_MD)}, {display_name(target / REPORT_HTML)}")
    _LEFT_TO_THE_END.append(analysis)


def _write_lock(lock: LockUpdate) -> bool:
    """The lock file beside the blueprint brought up to date with the render; exit 1 when it cannot be written
    (the render itself is then written already)."""
    try:
        return lock.commit()
    except OSError as exc:
        click.echo(f"{display_name(lock.path)}: cannot write: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_FINDINGS)


def _print_lock_check(blueprint: Path, text: str) -> bool:
    """Whether the lock file beside the blueprint holds `text`; says so when it does not."""
    path = lock_path(blueprint)
    try:
        fresh = path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        click.echo(f"missing: {display_name(path)} (render writes it)")
        return False
    if not fresh:
        click.echo(f"stale: {display_name(path)} (render brings it up to date)")
    return fresh


@cli.group("catalog", invoke_without_command=True)
@click.pass_context
def catalog_cmd(ctx: click.Context) -> None:
    """List the catalog entries a blueprint can name (servers, switches, GPUs, NICs, racks, cables, ...),
    or show one with the sources of its figures. Without a subcommand: list."""
    from .catalog_view import catalog_list_text

    if ctx.invoked_subcommand is None:
        click.echo(catalog_list_text(load_catalog()), nl=False)


@catalog_cmd.command("list")
def catalog_list_cmd() -> None:
    """One line per built-in entry: kind, key, vendor and name, estimated figures."""
    from .catalog_view import catalog_list_text

    click.echo(catalog_list_text(load_catalog()), nl=False)


@catalog_cmd.command("show")
@click.argument("key")
def catalog_show_cmd(key: str) -> None:
    """Every field of the entry KEY and where each figure comes from. Exit 1 for an unknown key."""
    from .catalog_view import catalog_show_text, close_keys

    catalog = load_catalog()
    text = catalog_show_text(catalog, key)
    if text is None:
        close = close_keys(catalog, key)
        click.echo(
            f"clusterforge catalog: unknown key '{key}'" + (f" (did you mean {', '.join(close)}?)" if close else ""),
            err=True,
        )
        sys.exit(EXIT_FINDINGS)
    click.echo(text, nl=False)


@cli.group("lab")
def lab_cmd() -> None:
    """A simulated twin of the rendered cluster on this machine (root, Debian): systemd-nspawn nodes in private
    network namespaces, the playbook run for real over ssh, day one and day two proven (README, Lab)."""


LAB_WORK = click.option(
    "--work",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("lab"),
    show_default=True,
    help="the lab's folder: the render, the node roots, logs and lab.json",
)


@lab_cmd.command("up")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--nodes", type=click.IntRange(1), help="at most this many nodes, the shape-true subset first")
@click.option(
    "--scale",
    is_flag=True,
    help="the smallest shape-true subset: every node group and Slurm controller, a whole NVLink domain, "
    "nodes on two leaves of each rail",
)
@click.option(
    "--cache",
    type=click.Path(path_type=Path, file_okay=False),
    help="where the node image is kept [default: $CLUSTERFORGE_LAB_CACHE or ~/.cache/clusterforge/lab]",
)
@LAB_WORK
@ALLOW_DIR
def lab_up_cmd(
    blueprint: Path, nodes: int | None, scale: bool, cache: Path | None, work: Path, allow: tuple[Path, ...]
) -> None:
    """Render BLUEPRINT and bring its twin up: image, network, containers, the playbook over ssh."""
    from .lab.image import default_cache
    from .lab.twin import up

    try:
        with _exit_on_findings():
            state = up(load_valid(blueprint, allow), work, cache or default_cache(), nodes, scale, say=click.echo)
    except (RuntimeError, ValueError) as exc:
        click.echo(f"clusterforge lab up: {exc}", err=True)
        sys.exit(EXIT_FINDINGS)
    click.echo(f"up: {len(state.nodes)} nodes in {sum(state.timings.values()):.1f} s; next: clusterforge lab check")


@lab_cmd.command("check")
@LAB_WORK
def lab_check_cmd(work: Path) -> None:
    """Prove the twin: a second playbook run changes nothing, the ping matrix, Slurm idle, a job on every node,
    gres, topology, NCCL files, the pinned GPU packages held and their services up. Exit 1 on a failed check."""
    from .lab.checks import check_lab

    try:
        results = check_lab(work, say=click.echo)
    except (RuntimeError, ValueError) as exc:
        click.echo(f"clusterforge lab check: {exc}", err=True)
        sys.exit(EXIT_FINDINGS)
    failed = [r for r in results if not r.ok]
    click.echo(f"check: {len(results) - len(failed)} of {len(results)} passed")
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


@lab_cmd.command("down")
@LAB_WORK
def lab_down_cmd(work: Path) -> None:
    """Stop the twin: containers, mounts, namespaces; the inotify limit restored."""
    from .lab.twin import down

    try:
        down(work, say=click.echo)
    except (RuntimeError, ValueError) as exc:
        click.echo(f"clusterforge lab down: {exc}", err=True)
        sys.exit(EXIT_FINDINGS)


@cli.command("render-check")
@click.argument("patterns", nargs=-1)
@click.option(
    "--blueprints",
    "folder",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("blueprints"),
    show_default=True,
    help="folder of blueprints (*.yaml at its top level), when no BLUEPRINT or glob is given",
)
@click.option(
    "--output-root",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("inventories"),
    show_default=True,
    help="folder holding one rendered folder per blueprint name",
)
@ALLOW_DIR
def render_check_cmd(patterns: tuple[str, ...], folder: Path, output_root: Path, allow: tuple[Path, ...]) -> None:
    """`render --check` for every blueprint given (files, or globs such as 'blueprints/**/*.yaml', anywhere in
    the repository), else of a folder (for CI and pre-commit). Fragments are skipped: lock files, files a
    blueprint includes or reads as a catalog, and, from a glob, YAML files that are no blueprint."""
    from .fragments import blueprint_candidates

    if patterns:
        candidates, missing = blueprint_candidates(patterns, output_root)
        if missing:
            raise click.BadParameter(f"no such file: {', '.join(missing)}", param_hint="BLUEPRINT")
    else:
        if not folder.is_dir():
            raise click.BadParameter(f"{display_name(folder)} is not a folder", param_hint="--blueprints")
        candidates = sorted(p for p in folder.glob("*.yaml") if not is_lock_file(p))
    today = _today(None)  # SOURCE_DATE_EPOCH, as render reads it
    blueprints, loaded, problems = _without_fragments(candidates, allow)
    if not blueprints and not patterns:
        raise click.BadParameter(f"{display_name(folder)} holds no *.yaml blueprint", param_hint="--blueprints")
    if not blueprints:
        raise click.BadParameter(f"{', '.join(patterns)}: no blueprint found", param_hint="BLUEPRINT")
    stale = False
    for blueprint in blueprints:
        if blueprint in problems:
            _print_findings(problems[blueprint], "text")
            stale = True
            continue
        valid = loaded[blueprint]
        try:
            analysis = analyse(valid, keep=keep_of(valid, today=today))
            files = render_analysis(analysis)
        except ClusterforgeError as exc:
            _print_findings(exc.findings, "text")
            stale = True
            continue
        target = output_root / valid.blueprint.name
        diff = compare_tree(files, target)
        stale |= not _print_lock_check(blueprint, lock_of(analysis))  # missing: render writes it
        _print_tree_diff(diff, target, len(files))
        stale |= not diff.fresh
    sys.exit(EXIT_FINDINGS if stale else EXIT_OK)


def _without_fragments(
    candidates: Sequence[Path], allow: Sequence[Path]
) -> tuple[list[Path], dict[Path, Any], dict[Path, list[Finding]]]:
    """Each candidate loaded (its ValidBlueprint, or its errors), and the candidates no other one reads (as an
    include or a catalog); each one dropped is said on stderr."""
    loaded: dict[Path, Any] = {}
    problems: dict[Path, list[Finding]] = {}
    for path in candidates:
        try:
            loaded[path] = load_valid(path, allow)
        except ClusterforgeError as exc:
            problems[path] = exc.findings
    read_by_others = {
        f.resolve() for path, valid in loaded.items() for f in valid.files if f.resolve() != path.resolve()
    }
    blueprints = [p for p in candidates if p.resolve() not in read_by_others]
    for path in candidates:
        if path not in blueprints:
            click.echo(f"{display_name(path)}: skipped (a fragment another blueprint reads)", err=True)
    return blueprints, loaded, problems


def _print_tree_diff(diff: TreeDiff, target: Path, count: int) -> None:
    for label, paths in (("stale", diff.stale), ("missing", diff.missing), ("extra", diff.extra)):
        for rel in paths:
            click.echo(f"{label}: {display_name(target / rel)}")
    for rel in diff.unmanaged:
        click.echo(f"kept: {display_name(target / rel)} (not written by clusterforge)")
    click.echo(f"{display_name(target)}: {'fresh' if diff.fresh else 'out of date'} ({count} files)")


@cli.command("diff")
@click.argument("old")
@click.argument("new")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@ALLOW_DIR
def diff_cmd(old: str, new: str, fmt: str, allow: tuple[Path, ...]) -> None:
    """What a blueprint change does to the cluster. OLD and NEW are paths or Git revisions of one
    (`origin/main:blueprints/x.yaml`). Exit 0 whether or not they differ: it is a report."""
    from .diff import diff_markdown, diff_specs

    with _exit_on_findings():
        diff = diff_specs(old, new, allow)
    click.echo(json.dumps(diff, indent=2, sort_keys=True) if fmt == "json" else diff_markdown(diff), nl=fmt == "json")


@cli.command("failures")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--element",
    "elements",
    multiple=True,
    help="an element class (leaf, spine, core, oob-switch, bundle, subnet-manager, node, psu, pdu, feed, cdu, "
    "rack, row, power-shelf, switch-tray) for its worst failure, or an element's name (compute-spine001, A01, "
    "A01-PDU-A, 'feed A', 'row A', A01~N01, gpu001:psu1) for its own; repeatable (default: every class)",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option(
    "--networkx",
    "with_networkx",
    is_flag=True,
    help="work out each shown failure's bisection and nodes cut off again with networkx's minimum cut and "
    "connected components, and exit 3 where they disagree (seconds per failure at 10,000 GPUs)",
)
@ALLOW_DIR
def failures_cmd(
    blueprint: Path, elements: tuple[str, ...], fmt: str, with_networkx: bool, allow: tuple[Path, ...]
) -> None:
    """What breaks when one thing fails: the worst single failure of each element class (switch per tier, cable
    bundle, subnet manager, node, PSU, PDU, feed, CDU, rack, row, NVL72 power shelf and switch tray) and what it
    takes: GPUs cut off, bisection left, NVLink domains, Slurm partitions, power, cooling and workloads. Exit 1
    when a failure takes more than the blueprint's `resilience:` tolerance."""
    from .failures import KINDS, analyse_failures
    from .failures.text import report_markdown, report_text

    kinds = [e for e in elements if e in KINDS]
    names = [e for e in elements if e not in KINDS]
    try:
        with _exit_on_findings():
            analysis = analyse(load_valid(blueprint, allow))
            report = analyse_failures(analysis.valid, analysis.topo, kinds if elements else KINDS, names)
    except KeyError as exc:
        raise click.BadParameter(f"no element or element class named {exc.args[0]!r}", param_hint="--element") from None
    # the tolerance's findings as `check` gave them (every class judged, the blueprint's suppressions applied)
    report = replace(report, findings=[f for f in analysis.findings if codes.REGISTRY[f.code].family == "FAIL"])
    disagree: list[str] = []
    if with_networkx:
        from .failures.crosscheck import networkx_disagreements

        shown = [r.worst for r in report.classes if r.worst] + report.named
        disagree = networkx_disagreements(analysis.topo, shown)
    if fmt == "json":
        click.echo(json.dumps(report.as_dict(), indent=2, sort_keys=True))
    elif fmt == "markdown":
        click.echo(report_markdown(report), nl=False)
    else:
        click.echo(report_text(report))
        _print_findings(report.findings, "text")
    if with_networkx:
        for line in disagree:
            click.echo(f"networkx disagrees: {line}", err=True)
        click.echo(f"networkx: {'disagrees' if disagree else 'the same bisection and nodes cut off'}", err=True)
        if disagree:
            sys.exit(EXIT_INTERNAL)
    sys.exit(EXIT_FINDINGS if any(not f.suppressed_by for f in report.findings) else EXIT_OK)


@cli.command("export")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "graphml", "gexf", "dot", "svg"]),
    default="json",
    show_default=True,
    help="json: node-link topology; graphml/gexf: every device and link, through networkx's writers; dot/svg: "
    "fabric diagram (svg needs Graphviz)",
)
@click.option("--fabric", "fabrics", multiple=True, help="fabric(s) to draw (default: all but out-of-band)")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="file to write (default: stdout)")
@ALLOW_DIR
def export_cmd(
    blueprint: Path, fmt: str, fabrics: tuple[str, ...], output: Path | None, allow: tuple[Path, ...]
) -> None:
    """Export the expanded topology as JSON, GraphML or GEXF, or its fabrics as a Graphviz diagram."""
    from .export import dot_to_svg, fabric_dot, node_link_json

    with _exit_on_findings():
        topo = analyse(load_valid(blueprint, allow)).topo
        if fmt == "json":
            text = node_link_json(topo)
        elif fmt in ("graphml", "gexf"):
            from .graph import write_graph

            text = write_graph(topo, fmt)
        else:
            unknown = [f for f in fabrics if f not in topo.fabrics]
            if unknown:
                raise click.BadParameter(
                    f"unknown fabric {unknown[0]!r}; known: {', '.join(topo.fabrics)}", param_hint="--fabric"
                )
            text = fabric_dot(topo, list(fabrics) or None)
            if fmt == "svg":
                text = dot_to_svg(text)
    _write_or_echo(text, output)


def _made_parent(path: Path) -> Path:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        click.echo(f"{display_name(path.parent)}: cannot create: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_FINDINGS)
    return path


def _write_or_echo(text: str, output: Path | None) -> None:
    """`text` to stdout, or into `output` (exit 1 when it cannot be written)."""
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        click.echo(f"{display_name(output)}: cannot write: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_FINDINGS)


@cli.command("verify")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--ibnetdiscover",
    "ib_files",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="output of `ibnetdiscover` or `ibnetdiscover -p` on the built fabric (repeatable: one per subnet)",
)
@click.option(
    "--lldp",
    "lldp_files",
    multiple=True,
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="`lldpctl -f json` of one host (named <host>.json), or a merged file {host: output} (repeatable)",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="file to write (default: stdout)")
@click.option(
    "--opensm-out",
    type=click.Path(path_type=Path, file_okay=False),
    help="folder for root-guids.conf and partitions.conf with the built fabric's GUIDs, written for each "
    "InfiniBand subnet that matches the plan (infiniband/<fabric>/...)",
)
@ALLOW_DIR
def verify_cmd(
    blueprint: Path,
    ib_files: tuple[Path, ...],
    lldp_files: tuple[Path, ...],
    fmt: str,
    output: Path | None,
    opensm_out: Path | None,
    allow: tuple[Path, ...],
) -> None:
    """Compare the cabled fabric, as discovered, with the plan: missing, unexpected and swapped cables, wrong
    rails, by rack, U, device, port and cable label. Exit 1 when the fabric differs from the plan."""
    from .verify import DiscoveryError, verify
    from .verify.report import verify_html, verify_json, verify_text

    if not ib_files and not lldp_files:
        raise click.UsageError("give at least one --ibnetdiscover or --lldp file")
    try:
        with _exit_on_findings():
            analysis = analyse(load_valid(blueprint, allow))
            result = verify(analysis.valid, analysis.topo, ib_files, lldp_files)
    except DiscoveryError as exc:
        click.echo(Finding(codes.VERIFY_UNREADABLE, Severity.ERROR, f"{exc}").as_text(), err=True)
        sys.exit(EXIT_FINDINGS)
    text = {"text": verify_text, "json": verify_json, "html": verify_html}[fmt](result)
    _write_or_echo(text, output)
    if output is not None:
        click.echo(verify_text(result).splitlines()[-1])
    if opensm_out is not None:
        for rel, content in sorted(result.opensm_files.items()):
            _write_or_echo(content, _made_parent(opensm_out / rel))
            click.echo(f"wrote {display_name(opensm_out / rel)} (the built fabric's GUIDs)", err=fmt != "text")
        if not result.opensm_files:
            click.echo("no OpenSM GUID files written: no InfiniBand subnet matches the plan", err=True)
    sys.exit(EXIT_FINDINGS if result.problems else EXIT_OK)


@cli.command("accept")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "markdown", "html"]), default="text", show_default=True
)
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), help="file to write (default: stdout)")
@click.option(
    "--partial",
    is_flag=True,
    help="judge only the results given (a re-test): planned nodes without a result do not fail the verdict",
)
@ALLOW_DIR
def accept_cmd(
    blueprint: Path, results: tuple[Path, ...], fmt: str, output: Path | None, partial: bool, allow: tuple[Path, ...]
) -> None:
    """Read the burn-in results back (the files the handoff/burn-in jobs wrote, or their folders) and judge them
    against the plan per node, cable and tier: likely causes, drain and re-test lists, a report to sign.
    Exit 1 when a test fails, a planned node has no result (without --partial) or a result cannot be read."""
    from .accept import ResultError, accept
    from .accept.report import FORMATS, accept_text

    try:
        with _exit_on_findings():
            analysis = analyse(load_valid(blueprint, allow))
            result = accept(analysis.valid, analysis.topo, results, partial=partial)
    except ResultError as exc:
        where = SourceLocation(display_name(Path(exc.file)), exc.line, 0 if not exc.line else 1)
        click.echo(Finding(exc.code, Severity.ERROR, str(exc), location=where).as_text(), err=True)
        sys.exit(EXIT_FINDINGS)
    _write_or_echo(FORMATS[fmt](result), output)
    if output is not None:
        click.echo(accept_text(result).splitlines()[-1])
    sys.exit(EXIT_OK if result.passed else EXIT_FINDINGS)


@cli.command("bind")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("facts", nargs=-1, required=True, type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    help="bindings file to write (default: <blueprint>.bindings.yaml beside the blueprint)",
)
@ALLOW_DIR
def bind_cmd(blueprint: Path, facts: tuple[Path, ...], output: Path | None, allow: tuple[Path, ...]) -> None:
    """Pin each node's planned ports to the devices it reports (`ip -details -json link show`,
    `ibdev2netdev`, Ansible setup facts; one node per file, named <node>.<anything>): writes a bindings file
    to include from the blueprint, so netplan matches by MAC and names what exists. Exit 1 on a file that
    cannot be read or parsed."""
    from .bind import BindError, bind, bindings_yaml

    try:
        with _exit_on_findings():
            analysis = analyse(load_valid(blueprint, allow))
            result, files = bind(analysis.valid, analysis.topo, list(facts))
    except BindError as exc:
        click.echo(Finding(codes.FACTS_UNREADABLE, Severity.ERROR, f"{exc}").as_text(), err=True)
        sys.exit(EXIT_FINDINGS)
    target = output or blueprint.with_name(f"{blueprint.stem}.bindings.yaml")
    bindings = dict(analysis.valid.blueprint.bindings)
    bindings.update({node: found.ports for node, found in result.items()})
    _write_or_echo(bindings_yaml(bindings, files), target)
    for node, found in sorted(result.items()):
        state = f"{len(found.ports)} ports bound"
        if found.unbound:
            state += f"; not found in its facts: {', '.join(found.unbound)}"
        click.echo(f"{node}: {state}")
    click.echo(f"wrote {display_name(target)}; include it from {display_name(blueprint)} and render again")


@cli.command("migrate")
@click.argument("blueprint", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--write", is_flag=True, help="rewrite the blueprint in place (default: print a unified diff)")
@ALLOW_DIR
def migrate_cmd(blueprint: Path, write: bool, allow: tuple[Path, ...]) -> None:
    """Rewrite an older blueprint to the current version, comments and layout kept: a unified diff, or
    --write to change the file (README, Migrations)."""
    from .migrate import CURRENT_VERSION, migrate
    from .migrate import write as write_migration

    with _exit_on_findings(err=True):
        migration = migrate(blueprint, allow)
    name = display_name(blueprint)
    if migration.new == migration.old:
        click.echo(f"{name}: already version {migration.version} (current: {CURRENT_VERSION}); nothing to migrate")
    elif write:
        write_migration(migration)
        click.echo(f"{name}: migrated from version {migration.version} to {CURRENT_VERSION}")
    else:
        click.echo(migration.diff(), nl=False)
    for note in migration.done:
        click.echo(f"  {note}", err=True)
    for note in migration.by_hand:
        click.echo(f"  by hand: {note}", err=True)


@cli.command("schema")
@click.option("--format", "fmt", type=click.Choice(["json", "markdown"]), default="json", show_default=True)
def schema_cmd(fmt: str) -> None:
    """Print the JSON Schema of the blueprint format (for editors), or its Markdown reference."""
    from .schema_doc import blueprint_schema, reference_markdown

    if fmt == "markdown":
        click.echo(reference_markdown(), nl=False)
    else:
        click.echo(json.dumps(blueprint_schema(), indent=2, sort_keys=True))


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point; turns unexpected exceptions into a short message unless CLUSTERFORGE_DEBUG is set."""
    run: Callable[..., Any] = cli.main
    try:
        run(args=argv, prog_name="clusterforge", standalone_mode=True)
    except SystemExit as exc:
        if argv is None:  # run as the command, not called: nothing after this needs the process
            _end_process(exc.code)
        raise
    except Exception as exc:
        if os.environ.get("CLUSTERFORGE_DEBUG"):
            raise
        click.echo(
            f"clusterforge: internal error: {type(exc).__name__}: {exc}\n"
            "Please report it with the blueprint; set CLUSTERFORGE_DEBUG=1 for a traceback.",
            err=True,
        )
        sys.exit(EXIT_INTERNAL)


def _end_process(code: str | int | None) -> None:
    """Exit with `code` as `sys.exit` would, without freeing the process's objects first (the kernel takes the
    memory back at once): every file is written and closed by now, and the output streams are flushed here."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)
