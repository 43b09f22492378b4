"""Error hierarchy and the one diagnostic type every stage reports with."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

DataPath = tuple[str | int, ...]


def format_path(path: DataPath) -> str:
    """`('node_groups', 0, 'model')` -> `node_groups[0].model`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def display_name(path: Path) -> str:
    """Paths in messages are relative to the working directory when they can be, and shown `visible`: a file
    name may hold any character but NUL and `/`, and none of them reaches the terminal as itself."""
    try:
        return visible(str(path.resolve().relative_to(Path.cwd().resolve())))
    except ValueError:
        return visible(str(path))


def visible(text: str) -> str:
    """Text from the field as it may be shown: control characters (ESC and the rest of C0 and C1, DEL) as
    `\\x1b`, invisible and direction-changing characters (bidi overrides and isolates, zero-width, line and
    paragraph separators) as `<U+202E>`, and the backslash doubled, so no text can pass for another."""
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text
    return "".join(_visible(c) for c in text)


def _visible(char: str) -> str:
    if char == "\\":
        return "\\\\"
    if char.isprintable() or char == " ":
        return char
    if ord(char) < 0x100 and unicodedata.category(char) == "Cc":
        return f"\\x{ord(char):02x}"
    return f"<U+{ord(char):04X}>"


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, order=True)
class SourceLocation:
    file: str
    line: int
    column: int

    def __str__(self) -> str:
        """`file:line:column`; line 0 stands for the file as a whole."""
        return f"{self.file}:{self.line}:{self.column}" if self.line else self.file


@dataclass(frozen=True)
class Finding:
    """One message about a blueprint: a load/validation error or a check result."""

    code: str
    severity: Severity
    message: str
    path: DataPath = ()
    location: SourceLocation | None = None
    hint: str | None = None
    subject: str | None = None
    """The rack, device or fabric the finding is about (what a suppression's `target` names)."""
    suppressed_by: str | None = field(default=None, compare=False)
    """The written reason of the suppression that silenced this finding."""
    subjects: tuple[str, ...] = ()
    """When this finding stands for the same finding about several subjects (racks, nodes), all of them, in
    order; `subject` is then their compact list (`A1-[002-033]`)."""

    @property
    def path_text(self) -> str:
        return format_path(self.path)

    def sort_key(self) -> tuple[str, int, int, str, str]:
        loc = self.location
        return (loc.file if loc else "", loc.line if loc else 0, loc.column if loc else 0, self.code, self.message)

    def as_text(self) -> str:
        where = f"{self.location}: " if self.location else ""
        text = f"{where}{self.severity.value} {self.code}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        if self.suppressed_by:
            text += f"\n    suppressed: {self.suppressed_by}"
        return text

    def as_github(self) -> str:
        """One GitHub workflow command (`::error file=...,line=...::message`), its values escaped by GitHub's
        rules, so no file name or message can end it or start another."""
        level = {"error": "error", "warning": "warning", "info": "notice"}[self.severity.value]
        props: list[tuple[str, object]] = [("title", self.code)]
        if self.location:
            loc = self.location
            lines: list[tuple[str, object]] = [("line", loc.line), ("col", loc.column)] if loc.line else []
            props = [("file", self.location.file), *lines, *props]
        message = self.message + (f" (hint: {self.hint})" if self.hint else "")
        values = ",".join(f"{key}={_escape_github_property(str(value))}" for key, value in props)
        return f"::{level} {values}::{escape_github_data(message)}"

    def as_dict(self) -> dict[str, object]:
        loc = self.location
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.path_text,
            "file": loc.file if loc else None,
            "line": loc.line if loc else None,
            "column": loc.column if loc else None,
            "hint": self.hint,
            "subject": self.subject,
            "subjects": list(self.subjects) if self.subjects else ([self.subject] if self.subject else []),
            "suppressed": self.suppressed_by,
        }


def escape_github_data(text: str) -> str:
    """A workflow command's message (data): `%`, CR and LF escaped (GitHub's toolkit, `escapeData`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_github_property(text: str) -> str:
    """A workflow command's property value (`file=`, `title=`): as data, and `:` and `,`, which end it
    (GitHub's toolkit, `escapeProperty`)."""
    return escape_github_data(text).replace(":", "%3A").replace(",", "%2C")


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=Finding.sort_key)


class ClusterforgeError(Exception):
    """Base of every error the library raises; the CLI turns it into a report and an exit code."""

    def __init__(self, findings: Sequence[Finding]):
        self.findings = sorted_findings(findings)
        super().__init__("\n".join(f.as_text() for f in self.findings))


class BlueprintError(ClusterforgeError):
    """The blueprint (or a file it includes) cannot be loaded or is invalid."""


class CatalogError(ClusterforgeError):
    """A catalog file cannot be loaded or is invalid."""
