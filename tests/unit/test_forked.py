"""clusterforge.runtime.forked: work in a forked child comes back as its result, its notes in order, or its exception
as the parent's own; a child left behind is stopped."""

from __future__ import annotations

import os
import time

import pytest

from clusterforge.errors import BlueprintError, Finding, Severity
from clusterforge.runtime import forked
from clusterforge.runtime.forked import ChildDied, Forked, Note


def test_the_result_and_the_notes_come_back_in_order() -> None:
    def work(note: Note) -> dict[str, int]:
        for step in range(3):
            note(f"step {step}")
        return {"pid": os.getpid()}

    with Forked(work) as child:
        notes = list(child.notes(wait=True))
        result = child.join()
    assert notes == ["step 0", "step 1", "step 2"]
    assert result["pid"] != os.getpid(), "the work ran in another process"


def _ended(pid: int) -> bool:
    """The process has exited (a zombie until its parent reaps it)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] == "Z"


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads a process's state from /proc")
def test_a_child_with_a_large_result_ends_before_the_parent_reads_it() -> None:
    """A result far larger than a pipe holds: the child does not wait, with its memory, for the parent to read
    it (the parent may be busy for a long while)."""
    with Forked(lambda _note: b"x" * (64 << 20)) as child:
        deadline = time.monotonic() + 30
        while not _ended(child.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _ended(child.pid), "the child waits for the parent to read its result"
        assert child.join() == b"x" * (64 << 20)


def test_a_plain_exception_is_raised_in_the_parent_as_it_was() -> None:
    def work(_note: Note) -> None:
        raise ZeroDivisionError("integer division or modulo by zero")

    with (
        pytest.raises(ZeroDivisionError) as failed,
        Forked(work) as child,
    ):
        child.join()
    assert str(failed.value) == "integer division or modulo by zero"
    assert any("forked render process" in note for note in failed.value.__notes__)


def test_a_clusterforge_error_keeps_its_class_and_findings() -> None:
    finding = Finding("CF-RENDER-001", Severity.ERROR, "rendering slurm failed: boom")

    def work(_note: Note) -> None:
        raise BlueprintError([finding])

    with pytest.raises(BlueprintError) as failed, Forked(work) as child:
        child.join()
    assert failed.value.findings == [finding]


class _Unpicklable(Exception):
    def __init__(self, code: int, why: str) -> None:
        super().__init__(f"{code}: {why}")  # pickle would call _Unpicklable("7: ...") and fail


def test_an_exception_that_cannot_cross_the_pipe_comes_as_its_name_and_message() -> None:
    def work(_note: Note) -> None:
        raise _Unpicklable(7, "lost")

    with pytest.raises(ChildDied) as failed, Forked(work) as child:
        child.join()
    assert str(failed.value) == "_Unpicklable: 7: lost"


def test_leaving_the_block_early_stops_the_child() -> None:
    def work(_note: Note) -> None:
        time.sleep(60)

    with Forked(work) as child:
        pid = child.pid
    with pytest.raises(ChildProcessError):  # killed and reaped: no longer this process's child
        os.waitpid(pid, os.WNOHANG)


def test_one_usable_cpu_means_no_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(forked, "cpus_usable", lambda: 1)
    assert not forked.can_fork()
    monkeypatch.setattr(forked, "cpus_usable", lambda: 2)
    assert forked.can_fork() == hasattr(os, "fork")
