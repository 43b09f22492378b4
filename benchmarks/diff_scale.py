"""Benchmark: `clusterforge diff` between two DGX H100 clusters of 10k and 100k GPUs (the new one 256 GPUs larger).

    python benchmarks/diff_scale.py [GPUS ...]     # default: 10000 100000

Both sides are the render benchmark's blueprint (in-band network, Slurm, NCCL), written as YAML files, so
the diff loads, validates, expands, checks and renders each side. Each size runs in a fresh process. Prints
seconds, how many topologies were built (2 when no side is expanded twice) and peak memory.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from sizes import max_rss_mib, run_sizes  # noqa: E402


def measure(gpus: int) -> dict[str, Any]:
    import yaml
    from render_scale import blueprint_data

    from clusterforge.diff import diff_specs
    from clusterforge.expand.topology import Topology

    built = 0
    original_init = Topology.__init__

    def counting_init(self: Topology, *args: Any, **kwargs: Any) -> None:
        nonlocal built
        built += 1
        original_init(self, *args, **kwargs)

    Topology.__init__ = counting_init  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as tmp:
        old, new = Path(tmp) / "old.yaml", Path(tmp) / "new.yaml"
        old.write_text(yaml.safe_dump(blueprint_data(gpus)), encoding="utf-8")
        new.write_text(yaml.safe_dump(blueprint_data(gpus + 256)), encoding="utf-8")
        start = time.perf_counter()
        diff = diff_specs(str(old), str(new))
        seconds = time.perf_counter() - start
    return {
        "gpus": gpus,
        "seconds": round(seconds, 2),
        "topologies": built,
        "changed_files": len(diff["files"]),
        "max_rss_mib": max_rss_mib(),
    }


def show(r: dict[str, Any]) -> None:
    print(
        f"{r['gpus']:>7} GPUs | diff {r['seconds']} s | {r['topologies']} topologies built | "
        f"{r['changed_files']} files changed | max RSS {r['max_rss_mib']} MiB"
    )


if __name__ == "__main__":
    run_sizes(__file__, measure, show)
