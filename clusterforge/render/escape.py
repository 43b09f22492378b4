"""Escaping for the handoff pack's tables: CSV cells that spreadsheets will not run, Markdown table cells.

Both take any value and return text; both are pure and stable (other renderers rely on them).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Hashable, Iterable, Sequence
from operator import itemgetter
from typing import Any, TypeVar

T = TypeVar("T")

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\n")
"""What spreadsheets treat as the start of a formula (OWASP CSV injection), after any leading spaces."""


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def csv_cell(value: object) -> str:
    """A value as one CSV cell, safe to open in a spreadsheet: text that starts (after spaces) with
    = + - @ or a tab/return is prefixed with a single quote so it is shown, never evaluated.
    Numbers (int/float) pass unchanged, so negative figures stay numbers. Quoting is the csv module's job."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return _text(value)
    text = _text(value)
    if text.lstrip(" ").startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


def _number(value: float) -> float | int:
    """400.0 -> 400, so whole numbers print without a trailing '.0'."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


_NOT_PLAIN_START = frozenset((" ", *FORMULA_PREFIXES))
"""First characters after which a text needs csv_cell's look (leading spaces, a formula prefix)."""


def csv_field(value: object) -> str:
    """A value as it stands in a CSV line: numbers bare (whole floats without '.0'), anything else through
    csv_cell and in double quotes, inner quotes doubled (what the csv module writes with QUOTE_NONNUMERIC)."""
    if type(value) is str:  # most cells: plain text, quoted as it is (what the general case gives, sooner)
        if value[:1] not in _NOT_PLAIN_START and '"' not in value:
            return f'"{value}"'
    elif type(value) is int:
        return str(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(_number(value))
    return '"' + csv_cell(value).replace('"', '""') + '"'


_first_character = itemgetter(slice(0, 1))


def plain_texts(texts: list[str]) -> bool:
    """Whether csv_field quotes each of `texts` as it stands (no double quote in any, none starting with a
    space or a formula prefix), so that a column can be quoted without a call per cell."""
    return '"' not in "".join(texts) and _NOT_PLAIN_START.isdisjoint(map(_first_character, texts))


def csv_line(row: Iterable[object]) -> str:
    return ",".join(map(csv_field, row))


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A whole CSV file: header plus rows, every cell through csv_cell, non-numeric cells quoted,
    '\\n' line endings (deterministic across platforms)."""
    return "".join(f"{line}\n" for line in (csv_line(header), *map(csv_line, rows)))


class Once(dict[Hashable, T]):
    """`work(value)`, worked out once per distinct value: a table of 360,000 cables repeats a few thousand
    texts. Not for bools, which a dict does not tell from 0 and 1."""

    def __init__(self, work: Callable[[Any], T]) -> None:
        super().__init__()
        self._work = work

    def __missing__(self, value: Hashable) -> T:
        done = self[value] = self._work(value)
        return done


class Escaped(Once[str]):
    """`escape(value)`, worked out once per distinct value (see Once)."""


def csv_cells() -> Escaped:
    """Each value as a CSV cell with the comma that follows it, worked out once per value (ints and strs
    alike; not for bools: see Escaped)."""
    return Escaped(_cell_and_comma)


def _cell_and_comma(value: object) -> str:
    return f"{csv_field(value)},"


def md_cell(value: object) -> str:
    """A value as one Markdown table cell: HTML-significant characters escaped (& < > "), pipes and
    backslashes escaped, newlines turned into spaces, so the cell can neither break the table nor
    inject markup."""
    text = html.escape(_text(value), quote=True).replace("&#x27;", "'")
    text = text.replace("\\", "\\\\").replace("|", "\\|")
    text = " ".join(text.splitlines()) if ("\n" in text or "\r" in text) else text
    return text.replace("`", "\\`").strip()
