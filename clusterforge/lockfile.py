"""The lock file: every identity a render assigned (host names, addresses, loopbacks, BGP ASNs, the numbers
switch MACs and simulated GUIDs are made from, bond numbers, rack slots, patched ports, cable labels), kept
beside the blueprint as `<blueprint>.lock.yaml` so the next render keeps them.

The file is YAML a person can read and a pull request can diff: one line per identity, sorted, in sections.
It is read here with a line reader of its own (the file is input like any other: bounded in size, every
problem reported with its line, never a traceback), and written whole, atomically, by `render`.

    version: 1
    blueprint: h200-training-pod
    afresh: 3b0f...e1 (64 hex digits)
    addresses:
      inband/gpu001: 10.120.0.2
    held:
      gpu032: removed 2026-12-05

`afresh`, when present, is the hash of the blueprint's input files (`ValidBlueprint.source_sha256`) of which the
file is exactly what a render without a lock file makes: a render of those very inputs then expands without
reading the file and checks that the lock file it makes is the same (docs/day-two.md, A render after a render).
"""

from __future__ import annotations

import filecmp
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from functools import partial
from itertools import repeat, starmap
from operator import itemgetter
from pathlib import Path
from typing import Any

from . import codes
from .errors import BlueprintError, Finding, Severity, SourceLocation, display_name
from .inputs import InputPolicy, InputRefused, read_head, read_regular
from .output.fsops import hold_file, remove_stale
from .runtime.gc_paused import gc_paused

LOCK_VERSION = 1
LOCK_SUFFIX = ".lock.yaml"
MAX_LOCK_BYTES = 2 * 1024 * 1024 * 1024
"""A bound against a runaway file, above what any blueprint bounds.py admits can lock: a million GPUs
(benchmarks/render_scale.py, 125,000 nodes) lock 8.0 million lines, 384 MiB (docs/day-two.md); in proportion,
bounds.py's 4 million node ports lock about 1.3 GiB. A render must be able to read the lock file it wrote."""
MAX_LINE = 400
MAX_ERRORS = 20
"""Errors reported from one lock file before the rest are counted."""

SECTIONS: dict[str, str] = {
    "hosts": "host name: node group and index",
    "addresses": "network/interface: IPv4 address",
    "loopbacks": "switch: loopback address",
    "asns": "switch: BGP autonomous system number",
    "numbers": "network/, infiniband/ or group/name: the number its switch MACs or simulated GUIDs are made from",
    "bonds": "storage or in-band leaf (a pair's first)/node: the node's bond number (MLAG ID, Ethernet segment)",
    "racks": "device: rack and the U it takes (U3, or U3-10)",
    "ports": "network/device:port: the switch and port it is patched to",
    "trunks": "network/switch:port (a switch-to-switch link's lower end): the switch and port of its upper end",
    "cables": "network/device:port (a link's A end): the label of the link's cable",
    "held": "device removed from the blueprint whose identities stay reserved until released: since when",
}
"""The sections, in file order, and what one line of each says."""

CHUNK_LINES = 65_536
"""Lines made into one piece of text as a lock file is written."""

HEADER = (
    "# clusterforge lock file: every identity once assigned (names, addresses, rack slots, patched ports),\n"
    "# kept by the next render. Commit it beside the blueprint; `clusterforge render` writes it.\n"
)


@dataclass
class Lock:
    """A lock file as read: each section's lines, key -> value (both plain text)."""

    blueprint: str = ""
    afresh: str = ""
    """The `afresh` line: the inputs' hash, or ''."""
    where: str = ""
    """The file, as messages name it."""
    sections: dict[str, dict[str, str]] = field(default_factory=lambda: {name: {} for name in SECTIONS})
    cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)
    """What is worked out from the sections once per lock file (expand/hold.py)."""

    def section(self, name: str) -> dict[str, str]:
        return self.sections[name]


@dataclass(frozen=True)
class Keep:
    """What the expand stage keeps: the lock file read (None: there is none), and what the user allows."""

    lock: Lock | None = None
    allow_renumber: bool = False
    """A change that renumbers or renames a locked device is a warning, not an error."""
    release_removed: bool = False
    """The identities of removed devices (the lock's `held`) are given up, not kept reserved."""
    hold_days: int | None = None
    """The blueprint's `hold_days`: how long a removed device stays held (expand/hold.py)."""
    today: date | None = None
    """The render's date (`--date`, SOURCE_DATE_EPOCH), against which holds end; None: none ends by time."""
    afresh: str = ""
    """The hash of this render's inputs, which its lock file names in an `afresh` line when the render makes
    what a render without a lock file makes: when there is no lock file, or when the lock file names the same
    hash (and the render keeps it as it is); '' when not named."""
    fresh: bool = False
    """The lock file names this render's inputs: it is not read (`lock` is None), and the render checks that
    the lock file it makes is the same (`LockUpdate.fresh_expected`)."""

    @property
    def names_afresh(self) -> str:
        """The `afresh` line's hash for a lock file made with this keep, or ''."""
        return self.afresh if self.lock is None or self.lock.afresh == self.afresh else ""


def lock_path(blueprint: Path) -> Path:
    """`blueprints/x.yaml` -> `blueprints/x.lock.yaml`."""
    return blueprint.with_name(blueprint.name.removesuffix(blueprint.suffix) + LOCK_SUFFIX)


def is_lock_file(path: Path) -> bool:
    return path.name.endswith(LOCK_SUFFIX)


def read_lock(blueprint: Path, policy: InputPolicy | None = None) -> Lock | None:
    """The lock file beside `blueprint`, or None when there is none; BlueprintError (CF-IDENT-003, with the
    file and line of each problem) when it cannot be read or does not parse."""
    path = lock_path(blueprint)
    if not path.exists():
        return None
    where = display_name(path)
    try:
        checked = (policy or InputPolicy.for_blueprint(blueprint)).check(path)
        text = read_regular(checked, MAX_LOCK_BYTES)[1].decode("utf-8")
    except (InputRefused, OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BlueprintError(
            [_problem(where, 0, f"cannot read the lock file: {reason}", codes.LOCK_UNREADABLE)]
        ) from None
    return parse_lock(text, where)


HEAD_BYTES = 4096
"""Enough of a lock file to hold its header (comments, version, blueprint and afresh lines)."""


def read_afresh(blueprint: Path, policy: InputPolicy | None = None) -> str:
    """The `afresh` hash the lock file beside `blueprint` names in its header, read without the rest of it;
    '' when it names none, or when the file is missing or cannot be read (`read_lock` then says why)."""
    path = lock_path(blueprint)
    try:
        checked = (policy or InputPolicy.for_blueprint(blueprint)).check(path)
        head = read_head(checked, HEAD_BYTES).decode("utf-8", errors="replace")
    except (InputRefused, OSError):
        return ""
    match = _HEAD.match(head)
    return (match[2] or "") if match else ""


def _problem(where: str, line: int, message: str, code: str = codes.LOCK_UNREADABLE) -> Finding:
    return Finding(
        code,
        Severity.ERROR,
        message,
        location=SourceLocation(where, line, 1 if line else 0),
        hint="fix the line, or restore the lock file from Git (`git checkout -- <file>`); deleting it assigns "
        "every identity afresh",
    )


class _Reader:
    """One pass over a lock file's lines, collecting what it says and every problem with its line."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.lock = Lock()
        self.problems: list[Finding] = []
        self.top: dict[str, str] = {}
        self.name = ""
        """The section being read ('' before the first, or after a top-level key)."""

    def bad(self, number: int, message: str) -> None:
        self.problems.append(_problem(self.where, number, message))

    def line(self, number: int, line: str) -> None:
        if not line.strip() or line.lstrip().startswith("#"):
            return
        if len(line) > MAX_LINE:
            self.bad(number, f"line is longer than {MAX_LINE} characters")
        elif line.startswith(" "):
            self.entry(number, line)
        else:
            self.top_level(number, line)

    def top_level(self, number: int, line: str) -> None:
        key, sep, value = line.partition(":")
        if not sep or not key:
            self.bad(number, f"expected 'key: value' or a section name, got {line[:60]!r}")
        elif key in SECTIONS and not value.strip():
            self.name = key
        elif key == "afresh" and not _AFRESH.fullmatch(value.strip()):
            self.bad(number, "afresh: expected the 64 hex digits of a SHA-256 hash")
        elif key in ("version", "blueprint", "afresh") and value.strip():
            if key in self.top:
                self.bad(number, f"'{key}' is given twice")
            self.top[key], self.name = value.strip(), ""
        else:
            known = ", ".join(["version", "blueprint", "afresh", *SECTIONS])
            self.bad(number, f"unknown top-level key '{key[:40]}' (known: {known})")

    def entry(self, number: int, line: str) -> None:
        if not self.name:
            self.bad(number, "an indented line outside a section")
            return
        if not line.startswith("  ") or line[2] == " ":
            self.bad(number, "an entry is indented by two spaces")
            return
        key, sep, value = line[2:].partition(": ")
        if not sep or not key or not value or " " in key or ": " in value:
            self.bad(number, f"expected '  key: value' in section '{self.name}'")
            return
        section = self.lock.sections[self.name]
        reason = f"'{key}' is given twice in section '{self.name}'" if key in section else _bad_value(self.name, value)
        if reason:
            self.bad(number, reason if key in section else f"{self.name} {key}: {reason}")
            return
        section[key] = value

    def result(self) -> Lock:
        problems = self.problems
        if len(problems) > MAX_ERRORS:
            problems = [*problems[:MAX_ERRORS], _problem(self.where, 0, "more problems not listed")]
        elif not problems and self.top.get("version") != str(LOCK_VERSION):
            problems = [_problem(self.where, 0, f"'version: {LOCK_VERSION}' is missing or another version")]
        if problems:
            raise BlueprintError(problems)
        self.lock.blueprint, self.lock.where = self.top.get("blueprint", ""), self.where
        self.lock.afresh = self.top.get("afresh", "")
        return self.lock


def parse_lock(text: str, where: str = "<lock>") -> Lock:
    """A lock file's text read; BlueprintError (CF-IDENT-003) with every problem and its line."""
    with gc_paused():  # millions of (key, value) pairs, no cycle among them (0.4 CPU s at a million GPUs)
        lock = _as_written(text)
    if lock is not None:
        lock.where = where
        return lock
    reader = _Reader(where)
    for number, line in enumerate(text.split("\n"), 1):
        if len(reader.problems) > MAX_ERRORS:
            break
        reader.line(number, line)
    return reader.result()


_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
_IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
"""Dotted decimal, four octets, no leading zeros: what IPv4Address takes (matched without making one, several
times faster over the hundreds of thousands of lines of a large cluster's lock)."""


_HELD = re.compile(r"removed(?: ([0-9]{4}-[0-9]{2}-[0-9]{2}))?")


def _held_value(value: str) -> bool:
    """'removed', or 'removed' and a real date."""
    match = _HELD.fullmatch(value)
    if match is None:
        return False
    try:
        return match[1] is None or bool(date.fromisoformat(match[1]))
    except ValueError:
        return False


def _is_slot(value: str) -> bool:
    rack, _, units = value.partition(" U")
    low, dash, high = units.partition("-")
    return bool(rack) and low.isdigit() and (not dash or high.isdigit()) and int(high or low) >= int(low or 0)


def _is_asn(value: str) -> bool:
    return value.isdigit() and len(value) <= 10 and 1 <= int(value) <= 4_294_967_294


_VALUES: dict[str, tuple[Callable[[str], bool], str]] = {
    "addresses": (lambda v: bool(_IPV4.fullmatch(v)), "an IPv4 address"),
    "loopbacks": (lambda v: bool(_IPV4.fullmatch(v)), "an IPv4 address"),
    "asns": (_is_asn, "an ASN (1 to 4294967294)"),
    "numbers": (lambda v: v.isascii() and v.isdigit() and len(v) <= 4, "a number (0 to 9999)"),
    "bonds": (lambda v: v.isascii() and v.isdigit() and len(v) <= 6, "a bond number (0 to 999999)"),
    "hosts": (lambda v: bool(v.partition(" ")[0]) and v.partition(" ")[2].isdigit(), "'group index'"),
    "racks": (_is_slot, "'RACK U<n>' or 'RACK U<low>-<high>'"),
    "ports": (lambda v: ":" in v and " " not in v, "'device:port'"),
    "trunks": (lambda v: ":" in v and " " not in v, "'switch:port'"),
    "cables": (lambda v: "-" in v and " " not in v and "/" not in v, "a cable label ('network-00001')"),
    "held": (_held_value, "'removed' or 'removed YYYY-MM-DD'"),
}
"""Per section: what a value must be, and what the message calls it."""


_AFRESH = re.compile(r"[0-9a-f]{64}")
_HEAD = re.compile(rf"(?:#[^\n]*\n)*version: 1\nblueprint: ([^\n]*)\n(?:afresh: ({_AFRESH.pattern})\n)?")
_SECTION = re.compile(r"([a-z]+):\n")
_SECTION_END = re.compile(r"\n(?!  )")
"""The end of the line before the first line that is not indented: searched from the newline before a section's
first line (a pattern starting with a character the engine scans for; `^` in multi-line mode is tried at
every character, six times slower)."""
_FORMS = {
    "hosts": r"[^\s:]+ [0-9]+",
    "addresses": _IPV4.pattern,
    "loopbacks": _IPV4.pattern,
    "asns": r"[0-9]+",
    "numbers": r"[0-9]{1,4}",
    "bonds": r"[0-9]{1,6}",
    "racks": r"[^\s:]+ U[0-9]+(?:-[0-9]+)?",
    "ports": r"[^\s:]*:\S*",
    "trunks": r"[^\s:]*:\S*",
    "cables": r"[^\s/-]*-[^\s/]*",
    "held": r"removed(?: [0-9]{4}-[0-9]{2}-[0-9]{2})?",
}
_ENTRIES = {name: re.compile(rf"^  ([^\s#]\S*): ({form})\n", re.MULTILINE) for name, form in _FORMS.items()}
"""A line of each section as `lock_text` writes it: a subset of what `_Reader` takes, read the same."""
_CHECKED_AGAIN = {"asns", "held"}
"""Sections whose every value is checked again (`_bad_value`): the pattern takes a number out of range or a
date that is none; few lines, one per switch or removed device."""


def _as_written(text: str) -> Lock | None:
    """The lock of a text laid out as `lock_text` writes it, read section by section with one regular
    expression each (at a million GPUs, 6 million lines: the line reader took seconds); None when any part of
    it is laid out otherwise (then the line reader reads it, and names each problem)."""
    head = _HEAD.match(text)
    if head is None or not text.endswith("\n") or max(map(len, text[: head.end()].split("\n"))) > MAX_LINE:
        return None
    lock = Lock(blueprint=head[1].strip(), afresh=head[2] or "")
    if not lock.blueprint:
        return None
    at = head.end()
    while at < len(text):
        section = _SECTION.match(text, at)
        if section is None or section[1] not in SECTIONS or lock.sections[section[1]]:
            return None
        name, start = section[1], section.end()
        end = _SECTION_END.search(text, start - 1).end()  # type: ignore[union-attr]  # the text ends in "\n"
        pairs = _ENTRIES[name].findall(text, start, end)
        entries = dict(pairs)
        if len(entries) != len(pairs) or len(pairs) != text.count("\n", start, end):
            return None  # a key given twice, or a line that is not an entry
        if entries and max(map(len, entries)) + max(map(len, entries.values())) + 4 > MAX_LINE:
            return None
        if any(map(_bad_value, repeat(name), _checked_again(name, entries))):
            return None
        lock.sections[name] = entries
        at = end
    return lock


def _checked_again(section: str, entries: dict[str, str]) -> Iterable[str]:
    """The values of a section the pattern may take wrongly: every ASN and `held` line, rack slots that span
    units (high below low)."""
    if section in _CHECKED_AGAIN:
        return entries.values()
    return filter(_spans_units, entries.values()) if section == "racks" else ()


def _spans_units(rack_value: str) -> bool:
    """'A01 U3-10', not 'A01 U3' (nor 'A-01 U3')."""
    return "-" in rack_value.rpartition(" U")[2]


def _bad_value(section: str, value: str) -> str | None:
    """Why `value` is not a value of `section`, or None."""
    good, what = _VALUES[section]
    return None if good(value) else f"'{value[:40]}' is not {what}"


def lock_text(blueprint: str, sections: dict[str, dict[str, str]], afresh: str = "") -> str:
    """The lock file's text: a header (naming `afresh` when given), then each non-empty section with its lines
    sorted by key."""
    makers = ((name, partial(_entries, sections, name)) for name in SECTIONS)
    return "".join(lock_chunks(blueprint, makers, afresh))


def _entries(sections: dict[str, dict[str, str]], name: str) -> dict[str, str]:
    return sections.get(name, {})


_KEY = itemgetter(0)
"""Pairs sorted by their keys alone (which differ): CPython then compares the strings with its one-type fast
path, where comparing the pairs tests each pair of keys for equality first: at a million GPUs 1.96 CPU s for the
lock file's sorts against 2.20, on shuffled keys 2.5 times faster."""


def lock_chunks(
    blueprint: str, sections: Iterable[tuple[str, Callable[[], dict[str, str]]]], afresh: str = ""
) -> Iterator[str]:
    """`lock_text` in pieces, from (section, what makes its entries) in file order: each section's entries made
    when it is written and let go once sorted, so that one section is in memory, not the whole file."""
    yield HEADER + f"version: {LOCK_VERSION}\nblueprint: {blueprint}\n" + (f"afresh: {afresh}\n" if afresh else "")
    for name, make in sections:
        entries = make()
        if not entries:
            continue
        yield f"{name}:\n"
        # sorted as pairs (keys differ): no lookup per key in key order, which at a million GPUs reads the
        # dict in an order far from the one it lies in memory (3.4 s for the cables against 1.4)
        pairs = sorted(entries.items(), key=_KEY)
        del entries
        for start in range(0, len(pairs), CHUNK_LINES):  # not the whole section's lines at once: 0.4 GiB at 1M
            yield "".join(starmap("  {}: {}\n".format, pairs[start : start + CHUNK_LINES]))


def write_lock(blueprint: Path, text: str) -> bool:
    """Write the lock file beside `blueprint` atomically (a temporary file in the same folder, renamed over
    it); False when it already holds `text`."""
    with LockUpdate(blueprint).reserve() as update:
        update.filled(update.fill([text]))
        return update.commit()


WRITTEN = "written"
UNCHANGED = "unchanged"
LEFTOVER_AFTER_S = 60.0
"""A temporary lock file no live render holds is removed by the next render once nothing wrote it for this
long (one made a moment ago may not be held yet)."""


class LockMoved(Exception):
    """A render that trusted the lock file's `afresh` line made another lock file: the lock file was not what
    a render without it makes of these inputs (another version of clusterforge made it). Render again, reading
    it (`pipeline.keep_of(..., fresh=False)`)."""


@dataclass
class LockUpdate:
    """The lock file beside a blueprint brought up to date with a render, in three steps: `reserve` makes a
    temporary file beside it (in the process that commits), `fill` writes the new text into it (in whichever
    process works the text out: schedule.py has it made beside the render, off its critical path), and
    `commit` renames it over the lock file once the render is written. Leaving the `with` block without a
    commit removes the temporary file."""

    blueprint: Path
    fresh_expected: bool = False
    """The render did not read the lock file, trusting its `afresh` line (`Keep.fresh`, told by
    `schedule.render_blueprint`): `filled` raises LockMoved when the new text is not the same."""
    temporary: Path | None = None
    outcome: str = ""
    """WRITTEN, UNCHANGED (the lock file holds the text already), or why it cannot be written."""
    held: int | None = None
    """A descriptor of the temporary file that holds a lock on it while this render lives: a later render
    removes the temporary files no live render holds (what a killed render left, `remove_stale`)."""

    @property
    def path(self) -> Path:
        return lock_path(self.blueprint)

    def __enter__(self) -> LockUpdate:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.discard()

    def reserve(self) -> LockUpdate:
        remove_stale(self.path.parent, f".{self.path.name}.", LEFTOVER_AFTER_S)
        try:
            self.temporary = temporary_beside(self.path)
            self.held = hold_file(self.temporary)
        except OSError as exc:
            self.outcome = _reason(exc)
        return self

    def fill(self, chunks: Iterable[str]) -> str:
        """The text, made of `chunks` one at a time, written into the reserved file; the outcome, which the
        process that reserved it is told (`filled`)."""
        if self.temporary is None:
            return self.outcome
        try:
            with self.temporary.open("w", encoding="utf-8", newline="\n") as handle:
                handle.writelines(chunks)
            same = self.path.is_file() and filecmp.cmp(self.temporary, self.path, shallow=False)
        except OSError as exc:
            return _reason(exc)
        return UNCHANGED if same else WRITTEN

    def filled(self, outcome: str) -> None:
        if self.fresh_expected and outcome == WRITTEN:
            raise LockMoved(f"{display_name(self.path)} is not what a render without it makes")
        self.outcome = outcome

    def commit(self) -> bool:
        """Put the new text in place; False when the lock file held it already; OSError when it cannot be
        written."""
        if self.outcome not in (WRITTEN, UNCHANGED):
            raise OSError(self.outcome or "the lock file's text was not made")
        if self.outcome == UNCHANGED:
            self.discard()
            return False
        assert self.temporary is not None
        os.replace(self.temporary, self.path)
        self.temporary = None
        self._let_go()
        return True

    def discard(self) -> None:
        if self.temporary is not None:
            self.temporary.unlink(missing_ok=True)
            self.temporary = None
        self._let_go()

    def _let_go(self) -> None:
        if self.held is not None:
            os.close(self.held)
            self.held = None


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def temporary_beside(path: Path) -> Path:
    """A new empty file in `path`'s folder, to be renamed over it, with the mode a file written in the ordinary
    way gets (mkstemp makes it 0600)."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
    except BaseException:
        os.close(fd)
        Path(name).unlink(missing_ok=True)
        raise
    os.close(fd)
    return Path(name)


def write_atomically(path: Path, text: str) -> None:
    """`text` written to `path` through a temporary file in the same folder, renamed over it."""
    temporary = temporary_beside(path)
    try:
        temporary.write_text(text, encoding="utf-8", newline="\n")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
