"""Cable labels kept: the lock file's `cables` section holds each cable's label by the A end of each of its
links, so growing a cluster relabels no cable that exists (new cables take the next numbers of their fabric)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_identity import CASES, _copy, _edit

from clusterforge.lockfile import Keep, read_lock, write_lock
from clusterforge.pipeline import analyse, keep_of, load_valid, lock_of
from clusterforge.render.handoff.handoff_common import cable_table, first_ends

GROWN = [(name, change) for name, cases in CASES.items() for label, change in cases if label.startswith("grow")]
NAMES = [f"{name}: {label}" for name, cases in CASES.items() for label, _ in cases if label.startswith("grow")]


def _labels(path: Path, keep: Keep | None = None, write: bool = False) -> dict[str, str]:
    """'network/device:port' of each cable's first end -> its label (what cabling.csv prints)."""
    valid = load_valid(path)
    keep = keep_of(valid) if keep is None else keep
    analysis = analyse(valid, keep=keep)
    if write:
        write_lock(path, lock_of(analysis, keep))
    table = cable_table(valid, analysis.topo)
    labels = {end: label for label, end in first_ends(analysis.topo, table.order, table.link_labels)}
    assert len(set(labels.values())) == len(labels)  # a link with no cable (CF-CABLE-002) has a label of its own
    assert set(table.cable_labels.values()) <= set(labels.values())
    return labels


@pytest.mark.parametrize(("name", "change"), GROWN, ids=NAMES)
def test_growing_a_cluster_relabels_no_cable(name: str, change: object, tmp_path: Path) -> None:
    path = _copy(name, tmp_path)
    before = _labels(path, write=True)
    lock = read_lock(path)
    assert lock is not None and before.items() <= lock.section("cables").items()
    assert set(lock.section("cables").values()) == set(before.values())  # every link's end names its cable
    _edit(path, change)  # type: ignore[arg-type]
    unlocked = _labels(path, Keep())
    after = _labels(path)
    kept = before.keys() & after.keys()
    assert kept and all(after[end] == before[end] for end in kept)
    assert set(after.values()) >= set(before[end] for end in kept)
    new = sorted(after.keys() - before.keys())
    for end in new:  # a new cable takes a number after every label its fabric had
        fabric = end.partition("/")[0]
        highest = max((v for v in before.values() if v.rpartition("-")[0] == fabric), default="")
        assert after[end] > highest
    moved = [end for end in kept if unlocked.get(end, before[end]) != before[end]]
    assert moved  # without the lock file's labels, cables that exist are renumbered


def test_a_broken_cables_line_is_an_error_with_its_line() -> None:
    from clusterforge.errors import BlueprintError
    from clusterforge.lockfile import parse_lock

    with pytest.raises(BlueprintError) as raised:
        parse_lock("version: 1\nblueprint: x\ncables:\n  compute/gpu001:ib1: compute 1\n", "x.lock.yaml")
    assert "x.lock.yaml:4" in str(raised.value) and "is not a cable label" in str(raised.value)
