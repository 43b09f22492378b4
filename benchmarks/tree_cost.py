"""What one measured command costs, its whole process tree counted: a render forks a second process.

    python benchmarks/tree_cost.py COMMAND ...     # one line of figures

- CPU seconds: user + system of the command and every descendant it waited for (os.wait4 of the command);
- wall seconds: from start to exit (the issue's targets are wall time, the user's; the machine is shared, so
  CPU seconds are the figure to compare runs by);
- memory: the peak of the summed PSS of the command and its descendants (proportional set size: a page two
  processes share after a fork counts half in each, so the sum counts it once), sampled from
  /proc/<pid>/smaps_rollup every SAMPLE_S; and, as an upper bound, the peak of their summed RSS sampled at
  the same moments, and the largest max RSS of one process (what `time -v` reports). Sampling can miss a
  peak shorter than SAMPLE_S; the largest max RSS of one process is exact but counts only one of them.
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


@dataclass
class TreeCost:
    cpu_s: float
    wall_s: float
    pss_mib: float
    """Peak of the summed PSS of the process tree (sampled)."""
    rss_sum_mib: float
    """Peak of the summed RSS of the process tree (sampled): counts shared pages in every process."""
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


def _rollup_kib(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of one process in KiB; (0, 0) once it is gone."""
    pss = rss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                elif line.startswith("Rss:"):
                    rss = int(line.split()[1])
    except OSError:
        pass
    return pss, rss


class _Sampler(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.stop = threading.Event()
        self.pss_kib = 0
        self.rss_kib = 0

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_S):
            pss = rss = 0
            for pid in _descendants(self.pid):
                one = _rollup_kib(pid)
                pss, rss = pss + one[0], rss + one[1]
            self.pss_kib = max(self.pss_kib, pss)
            self.rss_kib = max(self.rss_kib, rss)


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
        pss_mib=sampler.pss_kib / 1024,
        rss_sum_mib=sampler.rss_kib / 1024,
        max_rss_mib=usage.ru_maxrss / 1024,
        returncode=child.returncode,
        stderr=err.decode(errors="replace"),
    )


def main() -> None:
    """`python benchmarks/tree_cost.py COMMAND ...`: one line of figures for COMMAND."""
    cost = tree_cost(sys.argv[1:], Path.cwd(), dict(os.environ))
    sys.stderr.write(cost.stderr)
    print(
        f"{cost.cpu_s:.2f} CPU s, {cost.wall_s:.2f} s wall, peak PSS {cost.pss_mib:.0f} MiB (tree), "
        f"peak RSS {cost.rss_sum_mib:.0f} MiB (tree, upper bound), max RSS {cost.max_rss_mib:.0f} MiB (one process), "
        f"exit {cost.returncode}"
    )


if __name__ == "__main__":
    main()
