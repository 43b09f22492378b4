"""`verify`'s report: text for the terminal, JSON for tools, a printable HTML page for the technicians."""

from __future__ import annotations

import html
import json
from typing import Any

from ..errors import Finding, Severity
from ..render.jinja import render_template
from . import Verification
from .compare import Problem

HTML_TEMPLATE = "verify/verify.html.j2"
ACTIONS = {
    "missing": "plug in (both ends)",
    "unexpected": "remove or move",
    "swapped": "exchange the two",
    "wrong-rail": "move to the port's rail",
    "not-fat-tree": "add the leaf-spine cables",
    "no-such-port": "check the switch model and the capture",
}


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _finding(problem: Problem) -> Finding:
    return Finding(problem.code, Severity.ERROR, problem.message)


def summary_lines(result: Verification) -> list[str]:
    return [
        f"{c.source}: {c.planned} planned cables, {c.discovered} links discovered, {c.matched} as planned, "
        f"{len(c.problems)} problem{'s' if len(c.problems) != 1 else ''}"
        for c in result.comparisons
    ]


def verify_text(result: Verification) -> str:
    lines = [_finding(p).as_text() for c in result.comparisons for p in c.problems]
    lines += summary_lines(result)
    verdict = "matches the plan" if not result.problems else "differs from the plan"
    lines.append(f"{result.blueprint}: the fabric {verdict}")
    return "\n".join(lines) + "\n"


def verify_json(result: Verification) -> str:
    data: dict[str, Any] = {
        "blueprint": result.blueprint,
        "matches": not result.problems,
        "sources": [
            {
                "source": c.source,
                "planned": c.planned,
                "discovered": c.discovered,
                "matched": c.matched,
                "problems": [p.as_dict() for p in c.problems],
            }
            for c in result.comparisons
        ],
    }
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def verify_html(result: Verification) -> str:
    rows: list[dict[str, Any]] = []
    for comparison in result.comparisons:
        for problem in comparison.problems:
            ends = [(a.text(), b.text()) for a, b in problem.found] or [
                (c.a.text(), c.b.text()) for c in problem.planned
            ]
            rows.append(
                {
                    "number": len(rows) + 1,
                    "kind": problem.kind,
                    "code": problem.code,
                    "labels": _e(", ".join(c.label for c in problem.planned)),
                    "ends": [(_e(a), _e(b)) for a, b in ends],
                    "action": ACTIONS[problem.kind],
                    "message": _e(problem.message),
                }
            )
    model = {
        "blueprint": _e(result.blueprint),
        "summary": [_e(line) for line in summary_lines(result)],
        "rows": rows,
        "ok": not rows,
    }
    return render_template(HTML_TEMPLATE, model, None)
