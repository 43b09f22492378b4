"""What the benchmark scripts share: each size measured in a fresh process, so that its peak memory
(max RSS) is its own, and the peak memory figure itself."""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from page_cache import forget

DEFAULT_GPUS = (10_000, 100_000)


def max_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run_sizes(
    script: str,
    measure: Callable[[int], dict[str, Any]],
    show: Callable[[dict[str, Any]], None],
    compare: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
) -> None:
    """`script --one GPUS` prints measure(GPUS) as JSON; `script [GPUS ...]` runs that per size and shows it,
    then, given `compare` and more than one size, compares the smallest and the largest.
    A measurement's `work` folder (what it wrote) is removed only after every size was measured: on ext4,
    files created right after many were deleted cost more system time, so deleting one size's output would
    slow the next size's writes. Its files are dropped from the page cache instead (page_cache.py), so that
    they do not make the next size's pages dearer."""
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(json.dumps(measure(int(sys.argv[2]))))
        return
    works = []
    results = []
    try:
        for gpus in sorted([int(a) for a in sys.argv[1:]] or DEFAULT_GPUS):
            out = subprocess.run(
                [sys.executable, script, "--one", str(gpus)], capture_output=True, text=True, check=True
            )
            result = json.loads(out.stdout)
            if "work" in result:
                works.append(result.pop("work"))
                forget(Path(works[-1]))
            show(result)
            results.append(result)
        if compare is not None and len(results) > 1:
            compare(results[0], results[-1])
    finally:
        for work in works:
            shutil.rmtree(work, ignore_errors=True)
