"""What this machine's kernel charges to touch fresh memory: system seconds per page, by amount touched.

    python benchmarks/page_cost.py MIB ...     # default: 600 7000 (about a 100k and a 1M render's peak)

Each amount is mapped (private, anonymous) in a fresh process and written one byte per 4 KiB page, so each
page costs one page fault and nothing else runs: the figure is the kernel's (and, on a virtual machine, its
host's) price of a page, which a render pays for every page it touches (`tree_cost.py` counts its faults).
On the 2-core virtual machine this price rises with the amount touched and varies from one minute to the
next (1.5 to 28 us per page measured the same afternoon): it is what makes a render's system time grow
faster than its work between 100,000 and 1,000,000 GPUs (all.py prints the system time per fault of each
render beside the growth).
"""

from __future__ import annotations

import mmap
import resource
import subprocess
import sys

PAGE = 4096


def touched_here(mib: int) -> tuple[float, int]:
    """System seconds and page faults to touch `mib` MiB of fresh memory in this process."""
    size = mib << 20
    before = resource.getrusage(resource.RUSAGE_SELF)
    memory = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for offset in range(0, size, PAGE):
        memory[offset] = 1
    after = resource.getrusage(resource.RUSAGE_SELF)
    memory.close()
    return after.ru_stime - before.ru_stime, after.ru_minflt - before.ru_minflt


def us_per_page(mib: int) -> float:
    """System microseconds per page to touch `mib` MiB of fresh memory, in a fresh process."""
    said = subprocess.run(
        [sys.executable, __file__, "--here", str(mib)], check=True, capture_output=True, text=True
    ).stdout.split()
    return float(said[0]) / int(said[1]) * 1e6


def main() -> None:
    if sys.argv[1:2] == ["--here"]:
        seconds, faults = touched_here(int(sys.argv[2]))
        print(seconds, faults)
        return
    for mib in map(int, sys.argv[1:] or ["600", "7000"]):
        print(f"{mib:6d} MiB: {us_per_page(mib):.1f} us of system time per page")


if __name__ == "__main__":
    main()
