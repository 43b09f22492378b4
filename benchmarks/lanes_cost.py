"""Where two lanes start to pay: the render of render_scale.py's DGX H100 blueprint in one process and in two
lanes (schedule.Strategy), in CPU seconds, since the machine is shared and others' work stretches wall time.

    python benchmarks/lanes_cost.py [GPUS ...]     # default: 256 1024 2048 4096 8192

Each size and strategy runs in a fresh process, `--repeat` times (the least of each figure is kept). For two
lanes the wall time it would take on two idle CPUs is worked out from CPU times: this process's before the
fork and after the join, plus the longer of its own lane and the forked lane's. Printed per size: the links,
one process's CPU seconds (its wall time on an idle CPU), two lanes' estimated wall time, the wall time saved
and the CPU time it costs on top.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

DEFAULT_GPUS = (256, 1024, 2048, 4096, 8192)


def cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(gpus: int, strategy: str) -> dict[str, Any]:
    """One render from expansion on: CPU seconds of this process in its phases and of the forked lane."""
    from factories import valid_from
    from render_scale import blueprint_data

    from clusterforge.output.writer import StagedTree
    from clusterforge.pipeline import CONSISTENCY_READS
    from clusterforge.schedule import Strategy, render_blueprint

    valid = valid_from(blueprint_data(gpus))
    marks: dict[str, float] = {}

    def progress(stage: str, done: int, _total: int) -> None:
        if done == 0 and stage not in marks:
            marks[stage] = cpu_self()

    start, children, wall = cpu_self(), cpu_children(), time.monotonic()
    with tempfile.TemporaryDirectory() as work, StagedTree(Path(work) / "out", keep=CONSISTENCY_READS) as staged:
        analysis = render_blueprint(valid, staged, progress=progress, chosen=Strategy(strategy))
        end = cpu_self()
        wall = time.monotonic() - wall
    return {
        "links": len(analysis.topo.links),
        "before": marks["render"] - start,
        "here": marks["consistency"] - marks["render"],
        "after": end - marks["consistency"],
        "forked": cpu_children() - children,
        "wall": wall,
    }


def least(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return {key: min(run[key] for run in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("gpus", nargs="*", type=int, default=list(DEFAULT_GPUS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", nargs=2, metavar=("GPUS", "STRATEGY"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(int(args.one[0]), args.one[1])))
        return
    print("   GPUS   links | one process CPU s | two lanes: est. wall s, forked CPU s | saved wall s | extra CPU s")
    for gpus in args.gpus:
        figures = {}
        for strategy in ("one process", "two lanes"):
            runs = []
            for _ in range(args.repeat):
                out = subprocess.run(
                    [sys.executable, __file__, "--one", str(gpus), strategy], capture_output=True, text=True, check=True
                )
                runs.append(json.loads(out.stdout))
            figures[strategy] = least(runs)
        one, two = figures["one process"], figures["two lanes"]
        one_cpu = one["before"] + one["here"] + one["after"]
        two_wall = two["before"] + max(two["here"], two["forked"]) + two["after"]
        two_cpu = two["before"] + two["here"] + two["after"] + two["forked"]
        print(
            f"{gpus:>7} {one['links']:>7} | {one_cpu:17.2f} | {two_wall:22.2f}, {two['forked']:12.2f} | "
            f"{one_cpu - two_wall:12.2f} | {two_cpu - one_cpu:11.2f}"
        )


if __name__ == "__main__":
    main()
