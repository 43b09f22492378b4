"""A long multi-line text as a YAML mapping value, written as the templates' `to_yaml` filter (PyYAML's
`safe_dump`) writes it, without PyYAML's emitter, which looks at the text one character at a time twice
(about 1.5 s for the 700 kB hosts block of 100,000 GPUs).

PyYAML writes a multi-line string of printable ASCII single-quoted when no line break has a space beside
it: each `'` doubled, each line break written twice, every line after the first indented by two spaces.
It folds a line at a single space past its width (120); where a line would be folded, where lines are
blank, or where the text is anything else, the filter itself writes it.
"""

from __future__ import annotations

import re

from ..jinja import FILTERS

WIDTH = 120
"""The `to_yaml` filter's line width."""
INDENT = 2
"""Indentation of a mapping value's continuation lines."""
_PLAIN_KEY = re.compile(r"cf_[a-z0-9_]+")
"""Keys PyYAML writes as they are (no quoting: none reads as a boolean, number or null)."""


def text_mapping_yaml(key: str, text: str) -> str:
    """`{key: text}` through the `to_yaml` filter, made directly where that is PyYAML's single-quoted form."""
    quoted = single_quoted(text, len(key) + 3) if _PLAIN_KEY.fullmatch(key) else None
    if quoted is None:
        return str(FILTERS["to_yaml"]({key: text}))
    return f"{key}: {quoted}"


def single_quoted(text: str, column: int) -> str | None:
    """`text` single-quoted as PyYAML writes it starting at `column` (after the opening quote), or None where
    PyYAML would write it otherwise: on one line, with a space beside a line break, with blank lines, with
    characters other than printable ASCII, or folding a line at a space past the width."""
    if "\n" not in text or "\n\n" in text or " \n" in text or "\n " in text:
        return None
    if not text.isascii() or not text.replace("\n", "").isprintable():
        return None
    lines = text.replace("'", "''").split("\n")
    for line in lines:
        if column + line.rfind(" ") > WIDTH:
            return None
        column = INDENT
    return "'" + f"\n\n{' ' * INDENT}".join(lines) + "'"
