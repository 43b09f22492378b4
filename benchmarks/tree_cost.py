"""What one measured command costs, its whole process tree counted: a render forks a second process.

    python benchmarks/tree_cost.py COMMAND ...     # one line of figures

- CPU seconds: user + system of the command and every descendant it waited for (os.wait4 of the command),
  and of them the user seconds (the programs' own work) and the page faults (the pages of memory touched:
  the system time they cost depends on the machine, see page_cost.py);
- wall seconds: from start to exit (the issue's targets are wall time, the user's; the machine is shared, so
  CPU seconds are the figure to compare runs by);
- memory: the peak of the summed PSS of the command and its descendants (proportional set size: a page two
  processes share after a fork counts half in each, so the sum counts it once), sampled from
  /proc/<pid>/smaps_rollup; and, as an upper bound, the sum of each process's own peak RSS (VmHWM: shared
  pages counted in every process, peaks counted together even when they came at different times), and the
  largest max RSS of one process (what `time -v` reports).

Reading smaps_rollup walks the page tables of the process: about 0.1-0.2 CPU s for a process of 5-8 GiB,
during which the process cannot fault in pages. So PSS is sampled at most every SAMPLE_S and never more
often than one sample's own cost allows (its cost times PSS_SPACING): a peak shorter than that gap can be
missed (the sum of peaks bounds it from above). VmHWM, cheap to read, is read every SAMPLE_S.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SAMPLE_S = 0.05
PSS_SPACING = 20
"""PSS is read at most once per this many times the CPU time one reading took (5% of a CPU at most)."""


@dataclass
class TreeCost:
    cpu_s: float
    wall_s: float
    user_s: float
    """The CPU seconds spent in the programs themselves; the rest of cpu_s is the kernel's, on their behalf."""
    faults: int
    """Page faults (minor and major): about the pages of memory the tree touched, one fault each."""
    pss_mib: float
    """Peak of the summed PSS of the process tree (sampled)."""
    hwm_sum_mib: float
    """Sum of each process's peak RSS: an upper bound (shared pages and peaks at different times counted)."""
    max_rss_mib: float
    """Largest max RSS of one process of the tree (exact, from the kernel)."""
    returncode: int
    stderr: str


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        here = todo.pop()
        found.append(here)
        try:
            children = Path(f"/proc/{here}/task/{here}/children").read_text().split()
        except OSError:
            continue
        todo.extend(int(c) for c in children)
    return found


def _field_kib(path: str, key: str) -> int:
    """A `Key:   123 kB` figure of a /proc file in KiB; 0 once the process is gone."""
    try:
        with open(path, encoding="ascii") as lines:
            return next((int(line.split()[1]) for line in lines if line.startswith(key)), 0)
    except OSError:
        return 0


def _pss_kib(pid: int) -> int:
    return _field_kib(f"/proc/{pid}/smaps_rollup", "Pss:")


def _hwm_kib(pid: int) -> int:
    """Peak RSS so far of one process."""
    return _field_kib(f"/proc/{pid}/status", "VmHWM:")


class _Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.stop = threading.Event()
        self.pss_kib = 0
        self.hwm_kib: dict[int, int] = {}
        self.next_pss = 0.0

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            pids = _descendants(self.pid)
            for pid in pids:
                self.hwm_kib[pid] = max(self.hwm_kib.get(pid, 0), _hwm_kib(pid))
            if time.monotonic() >= self.next_pss:
                began = time.thread_time()
                self.pss_kib = max(self.pss_kib, sum(_pss_kib(pid) for pid in pids))
                self.next_pss = time.monotonic() + (time.thread_time() - began) * PSS_SPACING


def tree_cost(command: list[str], cwd: Path, env: dict[str, str]) -> TreeCost:
    """Run `command` (its output dropped, its stderr kept) and measure it with its descendants."""
    start = time.perf_counter()
    with subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env) as child:
        sampler = _Sampler(child.pid)
        sampler.start()
        assert child.stderr is not None
        err = child.stderr.read()
        # wait4 before the sampler stops: a zombie's /proc files are empty, so no sample is lost
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        sampler.stop.set()
        sampler.join()
        child.returncode = os.waitstatus_to_exitcode(status)
    return TreeCost(
        cpu_s=usage.ru_utime + usage.ru_stime,
        wall_s=wall,
        user_s=usage.ru_utime,
        faults=usage.ru_minflt + usage.ru_majflt,
        pss_mib=sampler.pss_kib / 1024,
        hwm_sum_mib=sum(sampler.hwm_kib.values()) / 1024,
        max_rss_mib=usage.ru_maxrss / 1024,
        returncode=child.returncode,
        stderr=err.decode(errors="replace"),
    )


def main() -> None:
    """`python benchmarks/tree_cost.py COMMAND ...`: one line of figures for COMMAND."""
    cost = tree_cost(sys.argv[1:], Path.cwd(), dict(os.environ))
    sys.stderr.write(cost.stderr)
    print(
        f"{cost.cpu_s:.2f} CPU s ({cost.user_s:.2f} user), {cost.faults} page faults, {cost.wall_s:.2f} s wall, "
        f"peak PSS {cost.pss_mib:.0f} MiB (tree), "
        f"sum of peak RSS {cost.hwm_sum_mib:.0f} MiB (upper bound), max RSS {cost.max_rss_mib:.0f} MiB (one process), "
        f"exit {cost.returncode}"
    )


if __name__ == "__main__":
    main()
