"""The bounded reader (clusterforge/inputs.py): a run's reads counted and bounded, each file read once by
identity; JSON with its depth and numbers bounded; field text made visible."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterforge.inputs import (
    MAX_JSON_DEPTH,
    InputBudgetExceeded,
    InputRefused,
    JsonRefused,
    Limits,
    Reads,
    parse_json,
)
from clusterforge.verify.discovered import visible


def test_a_runs_uses_and_bytes_are_bounded_repeats_counted(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"x" * 100)
    reads = Reads(None, Limits(file_bytes=100, total_bytes=250, uses=10))
    assert reads.read(path)[1] == reads.read(path)[1] == b"x" * 100
    with pytest.raises(InputBudgetExceeded, match="more than 0 MiB"):  # 300 bytes of 250
        reads.read(path)
    few = Reads(None, Limits(file_bytes=100, total_bytes=10_000, uses=2))
    few.read(path), few.read(path)
    with pytest.raises(InputBudgetExceeded, match="more than 2 file reads in one run"):
        few.read(path)


def test_a_file_is_read_once_but_a_file_put_in_its_place_is_read_anew(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("first\n")
    reads = Reads(None)
    assert reads.read_text(path) == "first\n"
    path.write_text("rewritten in place\n")  # same inode: the run keeps what it read
    assert reads.read_text(path) == "first\n"
    replacement = tmp_path / "b.yaml"
    replacement.write_text("another file\n")
    os.replace(replacement, path)  # another inode: another file
    assert reads.read_text(path) == "another file\n"
    calls: list[bytes] = []

    def parse(data: bytes) -> int:
        calls.append(data)
        return len(data)

    assert reads.parsed(path, "kind", parse) == reads.parsed(path, "kind", parse) == 13 and len(calls) == 1


def test_what_is_not_a_regular_file_or_too_large_is_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    for path, reason in ((Path("/dev/zero"), "not a regular file"), (tmp_path / "pipe", "not a regular file")):
        with pytest.raises(InputRefused, match=reason):
            Reads(None).read(path)
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(InputRefused, match="larger than"):
        Reads(None, Limits(100, 1000, 10)).read(big)


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("[" * (MAX_JSON_DEPTH + 1), "1:65", "nest deeper than 64"),
        ('{"a":\n [' + "1" * 101 + "]}", "2:3", "a number of more than 100"),
        ('{"a": "' + "[" * 1000 + '"}', None, None),  # brackets in a string are text
        ('{"a": "\\"' + "[" * 1000 + '"}', None, None),
        ('{"a": 1e400, "b": -0.5, "c": 12345}', None, None),
        ('{"a": }', "1:7", "not JSON: Expecting value"),
    ],
)
def test_json_depth_and_numbers_are_bounded(text: str, where: str | None, reason: str | None) -> None:
    if where is None or reason is None:
        assert isinstance(parse_json(text), dict)
        return
    with pytest.raises(JsonRefused) as raised:
        parse_json(text)
    assert f"{raised.value.line}:{raised.value.column}" == where and reason in raised.value.reason


def test_field_text_is_made_visible() -> None:
    assert visible("compute-leaf001 ib1/1") == "compute-leaf001 ib1/1"
    assert visible("a\x1b[2K\rb\x00\x7f\x9b") == r"a\x1b[2K\x0db\x00\x7f\x9b"
    assert visible("x\u202egnp.exe\u2066\u200b\u2028") == "x<U+202E>gnp.exe<U+2066><U+200B><U+2028>"
    assert visible("a\\x1b") == r"a\\x1b"  # a backslash typed in the name cannot pass for an escape
    assert visible("日本 é") == "日本 é"
