"""Reading every input file with bounds: blueprints, includes, catalogs and `verify`'s captures.

Every file clusterforge reads goes through `read_regular`: regular files only (devices, FIFOs and sockets
are refused before a byte is read; the file is opened O_NONBLOCK so a FIFO swapped in cannot make it wait),
its size checked before reading. A run reads through one `Reads`, which reads each file once (by device,
inode and path) and bounds what the run reads in all: the number of file uses, repeats counted, and their
bytes. A blueprint may read regular files inside its repository (the nearest folder above it that holds
`.git`, or its own folder outside Git) and inside folders the user allows explicitly (`InputPolicy`).
JSON is parsed with its nesting depth and the digits of its numbers bounded (`parse_json`).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

MIB = 1024 * 1024
MAX_FILE_BYTES = 8 * MIB
"""A blueprint file, an include or a catalog file."""

T = TypeVar("T")


class InputRefused(Exception):
    """A file clusterforge will not read; the message says why."""


class InputBudgetExceeded(InputRefused):
    """A run would read more files, or more bytes, than its bound."""


@dataclass(frozen=True)
class Limits:
    file_bytes: int
    """One file."""
    total_bytes: int
    """All the files a run uses, each use counted (a file included twice counts twice)."""
    uses: int
    """Files a run uses, repeats counted."""


BLUEPRINT_LIMITS = Limits(MAX_FILE_BYTES, 64 * MIB, 256)
"""A blueprint with its includes and catalogs."""
CAPTURE_LIMITS = Limits(256 * MIB, 1024 * MIB, 100_000)
"""`verify`'s captures: ibnetdiscover of a 100,000-GPU fabric is some 50 MB; LLDP comes one file per host."""

Identity = tuple[int, int, str]
"""(st_dev, st_ino, resolved path) of a file read."""


def _mib(size: int) -> str:
    return f"{size // MIB} MiB"


def read_regular(path: Path, limit: int = MAX_FILE_BYTES) -> tuple[Identity, bytes]:
    """The bytes of a regular file of at most `limit` bytes, with its identity; InputRefused for anything else
    (checked before a byte is read), OSError as opening or reading fails."""
    return _read_regular(path, limit, whole=True)


def read_head(path: Path, size: int) -> bytes:
    """The first `size` bytes of a regular file (of any length); InputRefused for anything else, OSError as
    opening or reading fails."""
    return _read_regular(path, size, whole=False)[1]


def _read_regular(path: Path, limit: int, whole: bool) -> tuple[Identity, bytes]:
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputRefused("it is not a regular file")
        if whole and info.st_size > limit:
            raise InputRefused(f"it is larger than {_mib(limit)}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1 if whole else limit)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while read
        raise InputRefused(f"it is larger than {_mib(limit)}")
    return (info.st_dev, info.st_ino, str(path)), data


def repository_root(blueprint: Path) -> Path:
    """The nearest folder at or above the blueprint's folder that holds `.git`, else the blueprint's folder."""
    folder = blueprint.resolve().parent
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


@dataclass(frozen=True)
class InputPolicy:
    roots: tuple[Path, ...]
    """Folders files may be read from (resolved)."""

    @classmethod
    def for_blueprint(cls, blueprint: Path, allow: Sequence[Path] = ()) -> InputPolicy:
        return cls((repository_root(blueprint), *(p.resolve() for p in allow)))

    def check(self, path: Path) -> Path:
        """The resolved path, or InputRefused when it lies outside every allowed folder."""
        resolved = path.resolve()
        if not any(resolved.is_relative_to(root) for root in self.roots):
            raise InputRefused(
                "it is outside the blueprint's repository; allow its folder explicitly (--allow-dir) to read it"
            )
        return resolved


@dataclass
class Reads:
    """One run's reading: each file read once, by identity (device, inode and path), and the run bounded in
    the file uses (repeats counted) and bytes it takes. `policy` None: any path (a file the user named on
    the command line)."""

    policy: InputPolicy | None = None
    limits: Limits = BLUEPRINT_LIMITS
    uses: int = 0
    used_bytes: int = 0
    _files: dict[Identity, bytes] = field(default_factory=dict, repr=False)
    _parsed: dict[tuple[Identity, str], Any] = field(default_factory=dict, repr=False)

    def read(self, path: Path) -> tuple[Identity, bytes]:
        """The file's identity and bytes; InputRefused for what may not be read or would exceed the run's
        bounds, OSError as reading fails."""
        resolved = self.policy.check(path) if self.policy else path.resolve()
        self.uses += 1
        if self.uses > self.limits.uses:
            raise InputBudgetExceeded(
                f"it would make more than {self.limits.uses:,} file reads in one run (repeats counted)"
            )
        identity, data = self._cached(resolved)
        if data is None:
            identity, data = read_regular(resolved, self.limits.file_bytes)
            identity = (identity[0], identity[1], str(resolved))
            self._files[identity] = data
        self.used_bytes += len(data)
        if self.used_bytes > self.limits.total_bytes:
            raise InputBudgetExceeded(
                f"it would make the files read in one run more than {_mib(self.limits.total_bytes)} (repeats counted)"
            )
        return identity, data

    def _cached(self, resolved: Path) -> tuple[Identity, bytes | None]:
        try:
            info = os.stat(resolved)
        except OSError:
            return (-1, -1, str(resolved)), None  # read_regular raises the error
        identity = (info.st_dev, info.st_ino, str(resolved))
        return identity, self._files.get(identity)

    def again(self, path: Path) -> bytes:
        """A file the run has read, as it read it (not counted again); another as `read` reads it."""
        return self._cached(path.resolve())[1] or self.read(path)[1]

    def read_text(self, path: Path, errors: str = "strict") -> str:
        """The file's text (UTF-8; UnicodeDecodeError with errors="strict")."""
        return self.read(path)[1].decode("utf-8", errors)

    def parsed(self, path: Path, kind: str, parse: Callable[[bytes], T]) -> T:
        """`parse` of the file's bytes, worked out once per file and `kind` in the run; the caller must not
        change what it gets (it is shared)."""
        identity, data = self.read(path)
        key = (identity, kind)
        if key not in self._parsed:
            self._parsed[key] = parse(data)
        result: T = self._parsed[key]
        return result


# --- JSON ------------------------------------------------------------------------------------------------------
MAX_JSON_DEPTH = 64
MAX_NUMBER_DIGITS = 100
MAX_JSON_VALUES = 4_000_000
"""Values in one JSON text (each some 60 bytes once parsed); lldpctl of 12,500 hosts, merged, has some 2,000,000."""
_JSON_SCAN = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{]|[\]}]|[-+0-9.eE]{' + str(MAX_NUMBER_DIGITS + 1) + ",}", re.DOTALL
)
"""What the depth and number check looks at: strings (skipped whole), brackets, and over-long numbers."""


class JsonRefused(ValueError):
    """JSON that is not read: `line` and `column` say where (1-based), `reason` what."""

    def __init__(self, line: int, column: int, reason: str) -> None:
        super().__init__(f"{line}:{column}: {reason}")
        self.line, self.column, self.reason = line, column, reason


def _at(text: str, position: int, reason: str) -> JsonRefused:
    line = text.count("\n", 0, position) + 1
    return JsonRefused(line, position - text.rfind("\n", 0, position), reason)


def _number(text: str) -> str:
    if len(text) > MAX_NUMBER_DIGITS:
        raise ValueError(text)
    return text


def parse_json(text: str) -> Any:
    """JSON nesting at most MAX_JSON_DEPTH deep, with numbers of at most MAX_NUMBER_DIGITS characters;
    JsonRefused (located) for anything else, before the parser recurses or converts a number; and at most
    MAX_JSON_VALUES values, counted (from above) before any is made."""
    values = text.count(",") + text.count("[") + text.count("{") + 1
    if values > MAX_JSON_VALUES:
        raise JsonRefused(1, 1, f"more than {MAX_JSON_VALUES:,} values ({values:,} at most)")
    depth = 0
    for match in _JSON_SCAN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise _at(text, match.start(), f"values nest deeper than {MAX_JSON_DEPTH} levels")
        elif token in "]}":
            depth -= 1
        elif token[0] != '"':
            raise _at(text, match.start(), f"a number of more than {MAX_NUMBER_DIGITS} characters")
    try:
        return json.loads(
            text,
            parse_int=lambda s: int(_number(s)),
            parse_float=lambda s: float(_number(s)),
        )
    except json.JSONDecodeError as exc:
        raise JsonRefused(exc.lineno, exc.colno, f"not JSON: {exc.msg}") from None
    except (ValueError, RecursionError) as exc:  # the scan above makes these unreachable; kept as a guard
        raise JsonRefused(1, 1, f"not JSON: {type(exc).__name__}") from None
