"""`accept`'s report: text for the terminal, JSON for tools, Markdown and a printable HTML page with the
sign-off block for the customer."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .. import codes
from ..errors import Finding, Severity
from ..render.context import host_range
from ..render.escape import md_cell
from ..render.handoff.handoff_common import natural_key
from ..render.jinja import render_template
from .verdict import Acceptance, Problem, gbs


def natural_sorted(keys: list[str]) -> list[str]:
    return sorted(keys, key=natural_key)


def _date(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def drain_lines(result: Acceptance) -> list[str]:
    """One `scontrol update` line per node to drain, its reasons in Slurm's reason string."""
    lines = []
    for node, reasons in result.drain.items():
        reason = "clusterforge accept: " + "; ".join(dict.fromkeys(reasons))
        reason = reason.replace('"', "'")[:200]
        lines.append(f'scontrol update nodename={node} state=drain reason="{reason}"')
    return lines


def retest_lines(result: Acceptance) -> list[str]:
    return [
        f"sbatch {job}  # {host_range(nodes)}" if nodes else f"sbatch {job}" for job, nodes in result.retest.items()
    ]


def untested_finding(result: Acceptance) -> Finding | None:
    missing = result.missing
    if not missing:
        return None
    first, keys = next(iter(missing.items()))
    keys = natural_sorted(keys)
    shown = keys[:4] + ([f"{len(keys) - 4} more"] if len(keys) > 4 else [])
    return Finding(
        codes.ACCEPT_UNTESTED,
        Severity.WARNING,
        f"{len(missing)} planned nodes lack results: {host_range(list(missing))} ({first}: {', '.join(shown)})",
    )


def verdict_line(result: Acceptance) -> str:
    if result.passed:
        return f"{result.blueprint}: accepted, every test passed" + (
            " (partial: only the results given)" if result.partial and result.untested else ""
        )
    parts = []
    if result.problems:
        parts.append(f"{len(result.problems)} failure{'s' if len(result.problems) != 1 else ''}")
    if result.untested and not result.partial:
        parts.append(f"{len(result.untested)} nodes not tested")
    return f"{result.blueprint}: not accepted ({', '.join(parts)})"


def summary_line(result: Acceptance) -> str:
    passed = sum(1 for m in result.measurements if m.passed)
    tested = len(result.tested)
    return (
        f"{result.results} results ({result.skipped} other files skipped), {tested} of {len(result.nodes)} nodes "
        f"tested, {passed} of {len(result.measurements)} bandwidth tests at or above floor"
    )


def node_verdicts(result: Acceptance) -> dict[str, str]:
    failed: dict[str, list[str]] = {}
    for p in result.problems:
        if p.kind not in ("node", "cable"):
            continue  # a tier or a leaf fails as such; its nodes are tested again with it
        for node in p.drain or p.retest:
            failed.setdefault(node, []).append(p.code)
    verdicts = {}
    for node in result.nodes:
        if node in failed:
            verdicts[node] = "fail" if any(node in p.drain for p in result.problems) else "re-test"
        else:
            complete = node not in result.missing or (result.partial and node in result.tested)
            verdicts[node] = "pass" if complete else "not tested"
    return verdicts


def accept_text(result: Acceptance) -> str:
    lines = [Finding(p.code, Severity.ERROR, p.message).as_text() for p in result.problems]
    untested = untested_finding(result)
    if untested and not result.partial:
        lines.append(untested.as_text())
    drain = drain_lines(result)
    if drain:
        lines += ["", "drain:", *drain]
    retest = retest_lines(result)
    if retest:
        lines += ["", "re-test once mended:", *retest]
    lines += ["", summary_line(result), verdict_line(result)]
    return "\n".join(lines).lstrip("\n") + "\n"


def _problem(p: Problem) -> dict[str, Any]:
    return {
        "code": p.code,
        "kind": p.kind,
        "subject": p.subject,
        "message": p.message,
        "drain": list(p.drain),
        "retest": list(p.retest),
        "jobs": list(p.jobs),
        "cables": list(p.cables),
        "files": list(p.files),
    }


def accept_json(result: Acceptance) -> str:
    data = {
        "blueprint": result.blueprint,
        "accepted": result.passed,
        "summary": summary_line(result),
        "nodes": node_verdicts(result),
        "problems": [_problem(p) for p in result.problems],
        "measurements": [
            {
                "file": m.file,
                "test": m.test,
                "group": m.group,
                "nodes": m.nodes,
                "detail": m.detail,
                "measured_gbs": m.measured,
                "expected_gbs": m.expected,
                "floor_gbs": round(m.floor, 3),
                "passed": m.passed,
            }
            for m in result.measurements
        ],
        "drain": drain_lines(result),
        "retest": result.retest,
        "untested": result.untested,
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _tiers(result: Acceptance, escape: Callable[[str], str]) -> list[dict[str, str]]:
    rows = []
    for m in sorted(result.measurements, key=lambda m: (m.group, m.test, m.nodes, m.detail)):
        if m.test in ("rail-pair", "spine-pair", "nvbandwidth") and m.passed:
            continue  # the many passing pairs and copies are counted in the summary, not listed
        rows.append(
            {
                "test": escape(m.test),
                "group": escape(m.group),
                "nodes": escape(m.nodes),
                "detail": escape(m.detail),
                "measured": gbs(m.measured),
                "floor": gbs(m.floor),
                "expected": gbs(m.expected),
                "verdict": "pass" if m.passed else "FAIL",
            }
        )
    return rows


def report_model(
    result: Acceptance, escape: Callable[[str], str], code: Callable[[str], str] | None = None
) -> dict[str, Any]:
    """`escape` for table cells and text, `code` for the lines shown as commands (default `escape`)."""
    code = code or escape
    verdicts = node_verdicts(result)
    numbers: dict[str, list[int]] = {}
    for number, problem in enumerate(result.problems, start=1):
        for label in problem.cables:
            numbers.setdefault(label, []).append(number)
    counts = {v: sum(1 for x in verdicts.values() if x == v) for v in ("pass", "fail", "re-test", "not tested")}
    return {
        "blueprint": escape(result.blueprint),
        "verdict": escape(verdict_line(result)),
        "summary": escape(summary_line(result)),
        "accepted": result.passed,
        "counts": counts,
        "problems": [
            {
                "number": i,
                "code": p.code,
                "kind": p.kind,
                "subject": escape(p.subject),
                "message": escape(p.message),
                "drain": escape(", ".join(p.drain)) or "-",
            }
            for i, p in enumerate(result.problems, start=1)
        ],
        "cables": [
            {"label": escape(label), "ends": escape(ends), "problems": ", ".join(str(i) for i in numbers[label])}
            for label, ends in sorted(result.cables.items())
        ],
        "dated": " to ".join(_date(t) for t in result.dated) if result.results else "",
        "verdicts": {escape(n): v for n, v in verdicts.items() if v != "pass"},
        "tiers": _tiers(result, escape),
        "drain": [code(line) for line in drain_lines(result)],
        "retest": [code(line) for line in retest_lines(result)],
        "untested": escape(host_range(result.untested)) if result.untested else "",
    }


def _in_fence(text: str) -> str:
    """A line inside a fenced code block: no backtick can close the fence."""
    return text.replace("`", "'")


def accept_markdown(result: Acceptance) -> str:
    return render_template("accept/acceptance.md.j2", report_model(result, md_cell, _in_fence), None)


def accept_html(result: Acceptance) -> str:
    return render_template(
        "accept/acceptance.html.j2", report_model(result, lambda t: html.escape(t, quote=True)), None
    )


FORMATS: dict[str, Callable[[Acceptance], str]] = {
    "text": accept_text,
    "json": accept_json,
    "markdown": accept_markdown,
    "html": accept_html,
}
