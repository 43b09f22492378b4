"""Benchmark: validate + expand + plan for DGX H100 clusters of 10k and 100k GPUs.

    python benchmarks/expand_scale.py [GPUS ...]     # default: 10000 100000

Each size runs in a fresh process so that its peak memory (max RSS) is its own. Prints one line per
size: GPUs, nodes, tiers, switches, links, seconds per stage and peak RSS, then the ports used per tier
and how many switches are booked past their ports (0: plan, check and expansion agree).
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
    from clusterforge.expand.ports import booked_ports
    from clusterforge.plan import FabricPlan, build_plan

    nodes = gpus // 8
    data = dgx_data(
        nodes, tiers=3 if gpus > 16384 else "auto", planes="per-rail" if gpus > 65536 else "one"
    )  # one subnet of 64-port switches: 65,536 ports
    t0 = time.perf_counter()
    valid = valid_from(data)
    t1 = time.perf_counter()
    topo, findings = expand(valid)
    t2 = time.perf_counter()
    plan = build_plan(valid, topo, findings)
    t3 = time.perf_counter()
    compute = plan.fabrics["compute"]
    assert isinstance(compute, FabricPlan)
    # the booking rule the port check and the plan share: no switch may be booked past its ports
    booked = booked_ports(topo, valid.catalog)
    over_radix = sum(1 for groups in booked.values() for used, total in groups.values() if used > total + 1e-9)
    return {
        "gpus": plan.gpus,
        "nodes": plan.nodes,
        "tiers": compute.tiers,
        "switches": compute.switches,
        "links": len(topo.links),
        "devices": len(topo.devices),
        "over_radix": over_radix,
        "ports_used": compute.ports_used,
        "validate_s": round(t1 - t0, 2),
        "expand_s": round(t2 - t1, 2),
        "plan_s": round(t3 - t2, 2),
        "total_s": round(t3 - t0, 2),
        "max_rss_mib": max_rss_mib(),
    }


def show(r: dict[str, Any]) -> None:
    print(
        f"{r['gpus']:>7} GPUs {r['nodes']:>6} nodes {r['tiers']} tiers switches {r['switches']} "
        f"links {r['links']} | validate {r['validate_s']} s, expand {r['expand_s']} s, "
        f"plan {r['plan_s']} s, total {r['total_s']} s | max RSS {r['max_rss_mib']} MiB"
    )
    used = ", ".join(f"{tier} {u:g}/{t}" for tier, (u, t) in r["ports_used"].items())
    print(f"        ports used {used}; switches booked past their ports: {r['over_radix']}")


if __name__ == "__main__":
    run_sizes(__file__, measure, show)
