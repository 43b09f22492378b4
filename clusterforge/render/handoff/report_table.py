"""A titled table of text, the unit the report is made of (report.md and report.html print it)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def table(
    title: str,
    columns: list[str],
    rows: Iterable[list[str]],
    numeric: Iterable[int] = (),
    intro: str = "",
    classes: list[str] | None = None,
) -> dict[str, Any]:
    """A titled table of strings; `numeric` are the indexes of right-aligned columns."""
    body = [list(r) for r in rows]
    right = set(numeric)
    return {
        "title": title,
        "intro": intro,
        "columns": columns,
        "rows": body,
        "cell_class": ["num" if i in right else "" for i in range(len(columns))],
        "md_align": ["---:" if i in right else "---" for i in range(len(columns))],
        "classes": classes or ["" for _ in body],
    }
