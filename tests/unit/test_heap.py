"""heap.keep_freed_memory: a block freed and asked for again comes back without page faults."""

from __future__ import annotations

import subprocess
import sys

import pytest

# In a fresh process (the setting is per process, and this one's heap has a history): faults while a 256 MiB
# block is allocated and written a second time. glibc's default maps such a block on its own and unmaps it
# when freed, so each of its 65,536 pages faults again; kept, it is reused as it is.
_SECOND_ALLOCATION_FAULTS = """
import resource, sys
from clusterforge.runtime.heap import keep_freed_memory
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


def _faults(mode: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", _SECOND_ALLOCATION_FAULTS, mode], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_freed_memory_is_reused_without_faults() -> None:
    kept = _faults("keep")
    if kept == "unsupported":
        pytest.skip("this C library has no mallopt")
    default = int(_faults("default"))
    assert default >= _PAGES  # the measure sees the faults when memory goes back to the system
    assert int(kept) < _PAGES // 100
