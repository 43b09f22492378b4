"""The lock file reader's fast path (a file laid out as `lock_text` writes it, read a section at a time) reads
what the line reader reads, and leaves every other file to it: on the committed lock files and on each of them
changed one line at a time (a character put in, a line repeated, dropped or cut short)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers import REPO

from clusterforge import lockfile
from clusterforge.errors import BlueprintError
from clusterforge.lockfile import Lock, lock_text, parse_lock

LOCKS = sorted([*(REPO / "blueprints").glob("*.lock.yaml"), *(REPO / "docs" / "examples").glob("*.lock.yaml")])
INSERTS = [" ", ":", ": ", "#", "-", "/", "\t", "\r", "x", "1", "U", " U", "0", ".", "\xa0", "  ", "300"]


def _line_reader(text: str) -> Lock | None:
    """What the line reader alone makes of `text` (None: it reports problems)."""
    reader = lockfile._Reader("x.lock.yaml")
    for number, line in enumerate(text.split("\n"), 1):
        reader.line(number, line)
    try:
        return reader.result()
    except BlueprintError:
        return None


def _changed(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    at = rng.randrange(len(lines))
    how = rng.randrange(4)
    if how == 0:
        cut = rng.randrange(len(lines[at]) + 1)
        lines[at] = lines[at][:cut] + rng.choice(INSERTS) + lines[at][cut + rng.randint(0, 2) :]
    elif how == 1:
        lines.insert(at, rng.choice(lines))
    elif how == 2:
        del lines[at]
    else:
        return text[: rng.randrange(len(text))]
    return "\n".join(lines)


@pytest.mark.parametrize("path", LOCKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_fast_path_reads_what_the_line_reader_reads(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    fast = lockfile._as_written(text)
    assert fast is not None  # a file as written takes the fast path
    slow = _line_reader(text)
    assert slow is not None and (fast.blueprint, fast.sections) == (slow.blueprint, slow.sections)
    assert lock_text(fast.blueprint, fast.sections) == text
    rng = random.Random(path.name)
    taken = left = 0
    for _ in range(1500):
        changed = _changed(text, rng)
        fast = lockfile._as_written(changed)
        if fast is None:
            left += 1
            continue
        taken += 1
        slow = _line_reader(changed)
        assert slow is not None, changed
        assert (fast.blueprint, fast.sections) == (slow.blueprint, slow.sections)
        assert all(list(fast.sections[s]) == list(slow.sections[s]) for s in fast.sections)  # in file order
    assert taken > 100 and left > 100  # both ways were taken


def test_a_file_without_its_last_line_end_is_left_to_the_line_reader() -> None:
    text = "version: 1\nblueprint: x\ncables:\n  compute/gpu001:ib1: compute-00001\n  oob/gpu001:bmc: oob-00001"
    assert lockfile._as_written(text) is None
    assert parse_lock(text).section("cables") == {
        "compute/gpu001:ib1": "compute-00001",
        "oob/gpu001:bmc": "oob-00001",
    }


def test_a_key_given_twice_is_reported_by_the_line_reader() -> None:
    text = "version: 1\nblueprint: x\nhosts:\n  a: g 1\n  a: g 2\n"
    assert lockfile._as_written(text) is None
    with pytest.raises(BlueprintError, match="given twice"):
        parse_lock(text, "x.lock.yaml")


@pytest.mark.parametrize(
    ("section", "line", "reason"),
    [
        ("held", "gpu031: removed 2026-13-05", "is not 'removed' or 'removed YYYY-MM-DD'"),
        ("held", "gpu031: removed 2026-02-30", "is not 'removed' or 'removed YYYY-MM-DD'"),
        ("asns", "leaf01: 4294967295", "is not an ASN"),
        ("asns", "leaf01: 0", "is not an ASN"),
        ("racks", "gpu001: A01 U10-3", "is not 'RACK U<n>'"),
    ],
)
def test_a_value_the_pattern_takes_but_the_section_does_not_is_left_to_the_line_reader(
    section: str, line: str, reason: str
) -> None:
    text = f"version: 1\nblueprint: x\n{section}:\n  {line}\n"
    assert lockfile._as_written(text) is None
    with pytest.raises(BlueprintError, match=reason):
        parse_lock(text, "x.lock.yaml")


def test_held_lines_with_and_without_a_date_and_asns_take_the_fast_path() -> None:
    text = "version: 1\nblueprint: x\nasns:\n  leaf01: 4200000001\nheld:\n  a: removed\n  b: removed 2026-12-05\n"
    lock = lockfile._as_written(text)
    assert lock is not None and lock.sections["held"] == {"a": "removed", "b": "removed 2026-12-05"}
    assert lock.sections["asns"] == {"leaf01": "4200000001"} and lock.sections == parse_lock(text).sections
