"""Host lists Slurm can read at any size: Slurm's own parser (libslurmfull of Debian's slurmctld, 22.05) takes
at most 65,536 hosts in one range and ends the process on a larger one, so `host_range` writes longer lists in
parts. The parser runs in a child process for that reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import hostlist

from clusterforge.render.context import SLURM_RANGE_HOSTS, host_range

LIBSLURM = Path("/usr/lib/x86_64-linux-gnu/slurm-wlm/libslurmfull.so")
COUNT = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.hostlist_create.restype = ctypes.c_void_p
lib.hostlist_create.argtypes = [ctypes.c_char_p]
lib.hostlist_count.argtypes = [ctypes.c_void_p]
handle = lib.hostlist_create(sys.argv[2].encode())
print("hosts", lib.hostlist_count(handle) if handle else "none", flush=True)
"""


def slurm_count(text: str) -> str:
    """What Slurm's hostlist parser makes of `text`: 'hosts N', or its error when it gives up."""
    assert LIBSLURM.exists(), "Debian's slurmctld (slurm-wlm-basic-plugins) is needed: tests/apt-packages.txt"
    run = subprocess.run([sys.executable, "-c", COUNT, str(LIBSLURM), text], capture_output=True, text=True)
    return (run.stdout + run.stderr).strip()


def test_a_list_longer_than_one_slurm_range_is_written_in_parts_slurm_reads() -> None:
    names = [f"gpu{i:06d}" for i in range(1, 70_001)] + ["login01"]
    text = host_range(names)
    assert text == "gpu[000001-065536],gpu[065537-070000],login01"
    assert slurm_count(text) == "hosts 70001"
    assert sorted(hostlist.expand_hostlist(text)) == sorted(names)


def test_slurm_refuses_one_range_of_more_hosts_than_the_limit() -> None:
    """Why the parts: the single range, as python-hostlist alone would write it, is refused."""
    whole = str(hostlist.collect_hostlist([f"gpu{i:06d}" for i in range(1, SLURM_RANGE_HOSTS + 2)]))
    assert whole == "gpu[000001-065537]"
    assert not slurm_count(whole).startswith("hosts")
    assert slurm_count("gpu[000001-065536]") == "hosts 65536"


def test_short_lists_are_one_range_as_before() -> None:
    assert host_range(["gpu003", "gpu001", "gpu002", "cpu1"]) == "cpu1,gpu[001-003]"
