"""Benchmark: the lab's twin of a blueprint, step by step, and the time per node.

    python benchmarks/lab_twin.py [BLUEPRINT] [--nodes N | --all] [--work DIR]
    # default: blueprints/gb200-nvl72.yaml, the shape-true subset (one NVL72 rack and the other groups)

Needs root. Renders the blueprint, brings the twin up (`clusterforge.lab.twin.up`: image from the cache,
repository, network, containers, playbook), runs `lab check`, takes it down, and prints each step's seconds
and seconds per node. The node image is built first if the cache has none (its time is printed apart).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from clusterforge.lab.checks import check_lab  # noqa: E402
from clusterforge.lab.image import base_image, default_cache  # noqa: E402
from clusterforge.lab.twin import down, up  # noqa: E402
from clusterforge.pipeline import load_valid  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("blueprint", nargs="?", default=str(REPO / "blueprints/gb200-nvl72.yaml"))
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--all", action="store_true", help="every node of the blueprint")
    parser.add_argument("--work", type=Path)
    args = parser.parse_args()
    start = time.monotonic()
    base_image(default_cache())
    print(f"{'node image (cache)':<28} {time.monotonic() - start:7.1f} s")
    valid = load_valid(Path(args.blueprint))
    work = args.work or Path(tempfile.mkdtemp(prefix="cf-lab-bench-")) / "lab"
    state = up(valid, work, default_cache(), args.nodes, scale=not args.all, say=lambda _l: None)
    try:
        begin = time.monotonic()
        results = check_lab(work, say=lambda _l: None)
        state.timings["check"] = round(time.monotonic() - begin, 1)
    finally:
        begin = time.monotonic()
        down(work, say=lambda _l: None)
        state.timings["down"] = round(time.monotonic() - begin, 1)
    count = len(state.nodes)
    print(f"{Path(args.blueprint).name}: {count} nodes")
    print(f"{'step':<28} {'s':>7} {'s/node':>7}")
    for step, seconds in state.timings.items():
        print(f"{step:<28} {seconds:7.1f} {seconds / count:7.2f}")
    total = sum(state.timings.values())
    print(f"{'total':<28} {total:7.1f} {total / count:7.2f}")
    failed = [r for r in results if not r.ok]
    for result in results:
        print(f"{'ok  ' if result.ok else 'FAIL'} {result.name:<22} {result.seconds:5.1f} s  {result.detail[:150]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
