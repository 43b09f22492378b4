"""What this machine's kernel charges to touch fresh memory: system seconds per page, by amount touched.

    python benchmarks/page_cost.py [--together N] MIB ...     # default: 600 7000 (a 100k and a 1M render's peak)

Each amount is mapped (private, anonymous) in a fresh process and written one byte per 4 KiB page, so each
page costs one page fault and nothing else runs: the figure is the kernel's (and, on a virtual machine, its
host's) price of a page, which a render pays for every page it touches (`tree_cost.py` counts its faults).
On the 2-core virtual machine this price depends most on what the page cache holds, since the guest's cached
files take the host's memory too: 1.7-1.9 us per page to touch 7,000 MiB with little cached, 27.2, 4.9 and
5.2 us with 12 GiB of files just written, 1.7-1.9 us again once those were dropped from the cache
(page_cache.py; 2026-12-05 05:20 UTC). Earlier figures measured with a benchmark's own files left in the
cache (1.5 to 28 us per page the same afternoon) were that, not the render: all.py and sizes.py now drop
each measured render's files (all.py prints the system time per fault of each render beside the growth).

With `--together N`, N processes touch that much memory each at the same time, as a render's processes do
(the render, its forked checking process and the writing process, on two CPUs): with little cached, two at
once pay what one alone does (3,500 MiB each 1.7-1.9 us per page, 2026-12-05 05:00 UTC); with earlier
renders' files cached they had paid 2.5 to 4 times as much (4.5-6.1 us against 1.8-2.2 alone).
"""

from __future__ import annotations

import argparse
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


def us_per_page(mib: int, together: int = 1) -> list[float]:
    """System microseconds per page to touch `mib` MiB of fresh memory, in each of `together` fresh processes
    started at once."""
    command = [sys.executable, __file__, "--here", str(mib)]
    started = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(together)]
    prices = []
    for process in started:
        said, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"a process touching {mib} MiB failed (exit {process.returncode})")
        seconds, faults = said.split()
        prices.append(float(seconds) / int(faults) * 1e6)
    return prices


def main() -> None:
    if sys.argv[1:2] == ["--here"]:
        seconds, faults = touched_here(int(sys.argv[2]))
        print(seconds, faults)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--together", type=int, default=1, help="processes touching memory at once (default 1)")
    parser.add_argument("mib", type=int, nargs="*", default=[600, 7000])
    args = parser.parse_args()
    for mib in args.mib:
        prices = ", ".join(f"{price:.1f}" for price in us_per_page(mib, args.together))
        print(f"{mib:6d} MiB: {prices} us of system time per page")


if __name__ == "__main__":
    main()
