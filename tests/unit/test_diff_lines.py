"""`clusterforge diff` counts the lines a rendered file gains and loses as a multiset difference."""

from __future__ import annotations

from clusterforge.diff import _file_changes


def test_lines_gained_and_lost_by_hand() -> None:
    old = {"a.txt": "x\ny\nz\ny\n", "same.txt": "s\n", "gone.txt": "1\n2\n", "manifest.json": "{}"}
    new = {"a.txt": "y\nx\nz\nw\n", "same.txt": "s\n", "new.txt": "n\n", "manifest.json": "{ }"}
    # a.txt: x and z stay (x moved), one of the two y goes, w comes: +1 -1; the manifest is never listed
    assert _file_changes(old, new) == [
        {"file": "a.txt", "status": "changed", "added": 1, "removed": 1},
        {"file": "gone.txt", "status": "removed", "added": 0, "removed": 2},
        {"file": "new.txt", "status": "added", "added": 1, "removed": 0},
    ]


def test_a_side_without_files_lists_nothing() -> None:
    assert _file_changes(None, {"a": "1"}) == []
