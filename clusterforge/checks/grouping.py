"""Findings that repeat per rack or per node, grouped into one that names every subject.

A check reports each rack or node on its own (so a suppression can name one), and 186 racks at 90% of their
feeds would be 186 lines. After suppressions, findings that say the same thing about different subjects (the
same code, severity, blueprint line, suppression, and message and hint once the subject is taken out) become
one: the first one's text, then `; likewise <the others, as a compact host list> (<n> in all)`. The grouped
finding keeps every subject in `subjects` (JSON output lists them).
"""

from __future__ import annotations

from dataclasses import replace

import hostlist

from ..errors import Finding

_HOLE = "\x00"


def _shape(finding: Finding) -> tuple[object, ...] | None:
    subject = finding.subject
    if not subject or subject not in finding.message:
        return None
    return (
        finding.code,
        finding.severity,
        finding.location,
        finding.path,
        finding.suppressed_by,
        finding.message.replace(subject, _HOLE),
        (finding.hint or "").replace(subject, _HOLE),
    )


def compact(names: list[str]) -> str:
    """`A1-001, A1-002, A1-003, B1-001` -> `A1-[001-003],B1-001` (the order of `names` does not matter)."""
    return str(hostlist.collect_hostlist(sorted(names)))


def group_repeats(findings: list[Finding]) -> list[Finding]:
    """`findings` with each set of same-shape findings about different subjects made one, where the first
    of them stood; the others keep their place."""
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for finding in findings:
        shape = _shape(finding)
        if shape is not None:
            groups.setdefault(shape, []).append(finding)
    out: list[Finding] = []
    for finding in findings:
        shape = _shape(finding)
        members = groups.get(shape) if shape is not None else None
        if members is None or len(members) == 1:
            out.append(finding)
        elif members[0] is finding:
            out.append(_grouped(members))
    return out


def _grouped(members: list[Finding]) -> Finding:
    first = members[0]
    subjects = tuple(str(m.subject) for m in members)
    others = compact(list(subjects[1:]))
    return replace(
        first,
        message=f"{first.message}; likewise {others} ({len(subjects)} in all)",
        subject=compact(list(subjects)),
        subjects=subjects,
    )
