"""Cable labels kept: the lock file's `cables` section holds each cable's label by the A end of each of its
links, so growing a cluster relabels no cable that exists (new cables take the next numbers of their fabric)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from test_identity import CASES, _copy, _edit

from clusterforge.catalog.models import CableMedia
from clusterforge.lockfile import Keep, read_lock, write_lock
from clusterforge.pipeline import analyse, keep_of, load_valid, lock_of
from clusterforge.render.handoff.handoff_common import cable_table, first_ends

GROWN = [(name, change) for name, cases in CASES.items() for label, change in cases if label.startswith("grow")]
NAMES = [f"{name}: {label}" for name, cases in CASES.items() for label, _ in cases if label.startswith("grow")]


def _labels(path: Path, keep: Keep | None = None, write: bool = False) -> dict[str, str]:
    """'network/device:port' of each cable's first end -> its label (what cabling.csv prints)."""
    return _labels_and_harnesses(path, keep, write)[0]


def _labels_and_harnesses(path: Path, keep: Keep | None = None, write: bool = False) -> tuple[dict[str, str], set[str]]:
    """`_labels`, and the labels of the breakout harnesses (a product with several legs at its b end)."""
    valid = load_valid(path)
    keep = keep_of(valid) if keep is None else keep
    analysis = analyse(valid, keep=keep)
    if write:
        write_lock(path, lock_of(analysis))
    table = cable_table(valid, analysis.topo)
    labels = {end: label for label, end in first_ends(analysis.topo, table.order, table.link_labels)}
    assert len(set(labels.values())) == len(labels)  # a link with no cable (CF-CABLE-002) has a label of its own
    assert set(table.cable_labels.values()) <= set(labels.values())
    cables = analysis.topo.cables
    harnesses = {
        label
        for cable, label in table.cable_labels.items()
        if valid.catalog.require(cables[cable].product, CableMedia).legs > 1
    }
    return labels, harnesses


@pytest.mark.parametrize(("name", "change"), GROWN, ids=NAMES)
def test_growing_a_cluster_relabels_no_cable(name: str, change: object, tmp_path: Path) -> None:
    path = _copy(name, tmp_path)
    before = _labels(path, write=True)
    lock = read_lock(path)
    assert lock is not None and before.items() <= lock.section("cables").items()
    assert set(lock.section("cables").values()) == set(before.values())  # every link's end names its cable
    _edit(path, change)  # type: ignore[arg-type]
    unlocked = _labels(path, Keep())
    after, harnesses = _labels_and_harnesses(path)
    kept = before.keys() & after.keys()
    assert kept and all(after[end] == before[end] for end in kept)
    assert set(after.values()) >= set(before[end] for end in kept)
    new = sorted(after.keys() - before.keys())
    for end in new:  # a new cable takes a number after every label its fabric had, or a free leg of a harness
        fabric = end.partition("/")[0]
        highest = max((v for v in before.values() if v.rpartition("-")[0] == fabric), default="")
        assert after[end] > highest or (after[end] in harnesses and after[end] in before.values()), end
    moved = [end for end in kept if unlocked.get(end, before[end]) != before[end]]
    assert moved  # without the lock file's labels, cables that exist are renumbered


def test_a_broken_cables_line_is_an_error_with_its_line() -> None:
    from clusterforge.errors import BlueprintError
    from clusterforge.lockfile import parse_lock

    with pytest.raises(BlueprintError) as raised:
        parse_lock("version: 1\nblueprint: x\ncables:\n  compute/gpu001:ib1: compute 1\n", "x.lock.yaml")
    assert "x.lock.yaml:4" in str(raised.value) and "is not a cable label" in str(raised.value)


@pytest.mark.parametrize("label", ["grow gpu by 5", "take gpu010 out"])
def test_a_render_in_two_processes_writes_the_lock_file_an_analysis_gives(label: str, tmp_path: Path) -> None:
    """A render that lets the lock file read go once expanded (schedule._labels_taken: its labels in the cable
    table, what it holds of removed devices on the topology) still writes every label and held line it keeps."""
    from helpers import run_cli

    from clusterforge.lockfile import lock_path

    path = _copy("h200-training-pod", tmp_path)
    day = ("--date", "2026-12-05")
    assert run_cli("render", str(path), "-o", str(tmp_path / "first"), "--jobs", "2", *day).returncode == 0
    first = lock_path(path).read_text(encoding="utf-8")
    _edit(path, dict(CASES["h200-training-pod"])[label])
    valid = load_valid(path)
    expected = lock_of(analyse(valid, keep=keep_of(valid, today=date(2026, 12, 5))))
    result = run_cli("render", str(path), "-o", str(tmp_path / "second"), "--jobs", "2", *day)
    assert result.returncode == 0, result.stdout + result.stderr
    assert lock_path(path).read_text(encoding="utf-8") == expected != first
    if label.startswith("take"):
        assert "held:\n  gpu010: removed 2026-12-05\n" in expected
