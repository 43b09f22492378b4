"""heap.keep_freed_memory: a block freed and asked for again comes back without page faults."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterforge.heap import keeping_freed_memory

# In a fresh process (the setting is per process, and this one's heap has a history): faults while a 256 MiB
# block is allocated and written a second time. glibc's default maps such a block on its own and unmaps it
# when freed, so each of its 65,536 pages faults again; kept, it is reused as it is.
_SECOND_ALLOCATION_FAULTS = """
import resource, sys
from clusterforge.heap import keep_freed_memory
keep = sys.argv[1] == "keep"
if keep and not keep_freed_memory():
    print("unsupported"); raise SystemExit
size = 256 << 20
block = bytearray(size); del block
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
block = bytearray(size)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
_PAGES = (256 << 20) // 4096


def _faults(mode: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        [sys.executable, "-c", _SECOND_ALLOCATION_FAULTS, mode], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def test_freed_memory_is_reused_without_faults() -> None:
    kept = _faults("keep")
    if kept == "unsupported":
        pytest.skip("this C library has no mallopt")
    default = int(_faults("default"))
    assert default >= _PAGES  # the measure sees the faults when memory goes back to the system
    assert int(kept) < _PAGES // 100


def test_a_new_process_keeps_freed_memory_through_its_environment() -> None:
    """keeping_freed_memory gives a new process the same settings through GLIBC_TUNABLES (glibc ignores a
    name it does not know, so a wrong one would show here as faults), after the tunables already set."""
    if _faults("keep") == "unsupported":
        pytest.skip("this C library has no mallopt")
    env = keeping_freed_memory({**os.environ, "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"})
    assert env["GLIBC_TUNABLES"].startswith("glibc.malloc.tcache_count=0:glibc.malloc.mmap_max=0:")
    assert int(_faults("default", env)) < _PAGES // 100


def test_the_write_behind_process_keeps_freed_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its reads of the pipe come and go a megabyte at a time: it is started with the settings."""
    import clusterforge.write_behind as write_behind

    started: list[dict[str, str]] = []
    popen = subprocess.Popen

    def recorded(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(kwargs["env"])
        return popen(*args, **kwargs)

    monkeypatch.setattr(write_behind.subprocess, "Popen", recorded)
    assert write_behind.WriteBehind(tmp_path).finish() == []
    assert [env["GLIBC_TUNABLES"] for env in started] == [keeping_freed_memory(os.environ)["GLIBC_TUNABLES"]]
