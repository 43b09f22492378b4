"""Benchmark: validate + expand + plan for DGX H100 clusters of 10k and 100k GPUs.

    python benchmarks/expand_scale.py [GPUS ...]     # default: 10000 100000

Each size runs in a fresh process so that its peak memory (max RSS) is its own. Prints one line per
size: GPUs, nodes, tiers, switches, links, seconds per stage and peak RSS.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE))

from sizes import max_rss_mib, run_sizes  # noqa: E402


def measure(gpus: int) -> dict[str, object]:
    from factories import dgx_data, valid_from

    from clusterforge.expand import expand
    from clusterforge.plan import FabricPlan, build_plan

    nodes = gpus // 8
    data = dgx_data(nodes, tiers=3 if gpus > 16384 else "auto",
                    planes="per-rail" if gpus > 65536 else "one")  # one subnet of 64-port switches: 65,536 ports
    t0 = time.perf_counter()
    valid = valid_from(data)
    t1 = time.perf_counter()
    topo, findings = expand(valid)
    t2 = time.perf_counter()
    plan = build_plan(valid, topo, findings)
    t3 = time.perf_counter()
    compute = plan.fabrics["compute"]
    assert isinstance(compute, FabricPlan)
    return {
        "gpus": plan.gpus, "nodes": plan.nodes, "tiers": compute.tiers,
        "switches": compute.switches, "links": len(topo.links), "devices": len(topo.devices),
        "validate_s": round(t1 - t0, 2), "expand_s": round(t2 - t1, 2), "plan_s": round(t3 - t2, 2),
        "total_s": round(t3 - t0, 2),
        "max_rss_mib": max_rss_mib(),
    }


def show(r: dict[str, Any]) -> None:
    print(f"{r['gpus']:>7} GPUs {r['nodes']:>6} nodes {r['tiers']} tiers switches {r['switches']} "
          f"links {r['links']} | validate {r['validate_s']} s, expand {r['expand_s']} s, "
          f"plan {r['plan_s']} s, total {r['total_s']} s | max RSS {r['max_rss_mib']} MiB")


if __name__ == "__main__":
    run_sizes(__file__, measure, show)
