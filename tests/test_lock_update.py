"""The lock file a render writes: its text made a section at a time into a temporary file beside the lock
file (two lanes: while the forked lane renders the handoff pack), renamed over it only once the render is
committed; the same text whichever strategy rendered, and nothing left behind when the render fails or the
lock file already holds the text."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers import REPO

from clusterforge import pipeline
from clusterforge.errors import ClusterforgeError, Finding, Severity
from clusterforge.lockfile import LEFTOVER_AFTER_S, WRITTEN, LockMoved, LockUpdate, lock_path, write_lock
from clusterforge.output.fsops import hold_file
from clusterforge.output.writer import StagedTree
from clusterforge.pipeline import CONSISTENCY_READS, analyse, load_valid, lock_of
from clusterforge.runtime import forked
from clusterforge.schedule import Strategy, render_blueprint

BP = REPO / "blueprints/l40s-inference.yaml"


@pytest.fixture
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "cpus_usable", lambda: 2)


def leftovers(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.lock.yaml.*"))


def render_with_lock(blueprint: Path, out: Path, chosen: Strategy) -> bool:
    """A render of BP whose lock file is written beside `blueprint`; whether it was written."""
    with StagedTree(out, keep=CONSISTENCY_READS) as staged, LockUpdate(blueprint) as lock:
        render_blueprint(load_valid(BP), staged, chosen=chosen, lock=lock.reserve())
        staged.commit()
        return lock.commit()


@pytest.mark.usefixtures("two_cpus")
@pytest.mark.parametrize("chosen", list(Strategy))
def test_the_lock_text_is_lock_of_whichever_process_renders(tmp_path: Path, chosen: Strategy) -> None:
    expected = lock_of(analyse(load_valid(BP)))
    blueprint = tmp_path / "x.yaml"
    assert render_with_lock(blueprint, tmp_path / "out", chosen)
    assert lock_path(blueprint).read_text(encoding="utf-8") == expected
    assert not render_with_lock(blueprint, tmp_path / "again", chosen), "the same text: unchanged"
    assert leftovers(tmp_path) == []
    assert oct(lock_path(blueprint).stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


@pytest.mark.usefixtures("two_cpus")
@pytest.mark.parametrize("chosen", list(Strategy))
def test_a_refused_render_leaves_the_lock_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chosen: Strategy
) -> None:
    blueprint = tmp_path / "x.yaml"
    lock_path(blueprint).write_text("before\n", encoding="utf-8")
    error = Finding("CF-POWER-001", Severity.ERROR, "rack R1 draws more than its feeds carry")
    checks = pipeline.run_checks
    monkeypatch.setattr(pipeline, "run_checks", lambda *args: [*checks(*args), error])
    with pytest.raises(ClusterforgeError):
        render_with_lock(blueprint, tmp_path / "out", chosen)
    assert lock_path(blueprint).read_text(encoding="utf-8") == "before\n"
    assert leftovers(tmp_path) == []


@pytest.mark.usefixtures("two_cpus")
@pytest.mark.parametrize("chosen", list(Strategy))
def test_a_render_that_expected_the_lock_file_unchanged_stops_when_it_differs(tmp_path: Path, chosen: Strategy) -> None:
    """Whichever process makes the text: LockMoved, the lock file as it was, nothing left behind (the CLI then
    renders again reading it: test_lock_afresh.py)."""
    blueprint = tmp_path / "x.yaml"
    lock_path(blueprint).write_text("before\n", encoding="utf-8")
    with (
        pytest.raises(LockMoved),
        StagedTree(tmp_path / "out", keep=CONSISTENCY_READS) as staged,
        LockUpdate(blueprint, fresh_expected=True) as lock,
    ):
        render_blueprint(load_valid(BP), staged, chosen=chosen, lock=lock.reserve())
    assert lock_path(blueprint).read_text(encoding="utf-8") == "before\n"
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "out").exists()


def test_a_lock_file_that_cannot_be_replaced_is_an_os_error_and_leaves_nothing(tmp_path: Path) -> None:
    blueprint = tmp_path / "x.yaml"
    lock_path(blueprint).mkdir()
    with LockUpdate(blueprint).reserve() as lock:
        lock.filled(lock.fill(["version: 1\n"]))
        assert lock.outcome == WRITTEN
        with pytest.raises(IsADirectoryError):
            lock.commit()
    assert leftovers(tmp_path) == []


def test_a_folder_that_takes_no_file_is_told_at_commit(tmp_path: Path) -> None:
    lock = LockUpdate(tmp_path / "no-such-folder" / "x.yaml").reserve()
    assert lock.temporary is None and lock.fill(["text"]) == lock.outcome == "No such file or directory"
    with pytest.raises(OSError, match="No such file or directory"):
        lock.commit()


def test_write_lock_says_whether_it_wrote(tmp_path: Path) -> None:
    blueprint = tmp_path / "x.yaml"
    assert write_lock(blueprint, "a\n") and lock_path(blueprint).read_text(encoding="utf-8") == "a\n"
    assert not write_lock(blueprint, "a\n")
    assert write_lock(blueprint, "b\n") and lock_path(blueprint).read_text(encoding="utf-8") == "b\n"
    assert leftovers(tmp_path) == []


def test_a_render_removes_the_temporary_files_a_killed_render_left_and_no_others(tmp_path: Path) -> None:
    blueprint = tmp_path / "x.yaml"
    old = time.time() - LEFTOVER_AFTER_S - 1
    names = {"killed": ".x.lock.yaml.k1ll3d_a", "live": ".x.lock.yaml.l1ve_abc", "new": ".x.lock.yaml.n3w_abcd"}
    for name in names.values():
        (tmp_path / name).write_text("partial\n", encoding="utf-8")
    for name in (names["killed"], names["live"]):
        os.utime(tmp_path / name, (old, old))
    (tmp_path / ".x.lock.yaml.notes").write_text("a person's file\n", encoding="utf-8")
    os.utime(tmp_path / ".x.lock.yaml.notes", (old, old))
    (tmp_path / ".x.lock.yaml.l1nk_abc").symlink_to(tmp_path / names["killed"])
    live = hold_file(tmp_path / names["live"])  # a render that still runs holds its temporary file
    try:
        with LockUpdate(blueprint).reserve() as update:
            assert update.temporary is not None and update.held is not None
            with pytest.raises(BlockingIOError):  # this render's own is held while it runs
                os.close(hold_file(update.temporary))
    finally:
        os.close(live)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert names["killed"] not in left
    assert left == sorted([names["live"], names["new"], ".x.lock.yaml.notes", ".x.lock.yaml.l1nk_abc"])
