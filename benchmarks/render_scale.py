"""Benchmark: the whole `clusterforge render` of DGX H100 clusters of 10k and 100k GPUs.

    python benchmarks/render_scale.py [GPUS ...]     # default: 10000 100000

The synthetic blueprint (tests/factories.py) gets management nodes, Slurm with a tree topology and NCCL
settings, so every output family has work to do. Each size runs in a fresh process so that its
peak memory (max RSS) is its own. Prints one line per size with seconds per stage, then seconds and
output size per render family.
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


def blueprint_data(gpus: int) -> dict[str, Any]:
    from factories import dgx_data

    data = dgx_data(
        gpus // 8, tiers=3 if gpus > 16384 else "auto", planes="per-rail" if gpus > 65536 else "one"
    )  # one subnet of 64-port switches: 65,536 ports
    data["node_groups"][0]["nccl"] = {"NCCL_IB_QPS_PER_CONNECTION": 2}
    data["node_groups"].append(
        {
            "name": "mgmt",
            "model": "generic/cpu-1u",
            "count": 2,
            "role": "management",
            "placement": {"racks": [data["fabrics"]["compute"]["switch_racks"][0]]},
        }
    )
    # No in-band network: when the LinkX cable catalog came, no part joined the DGX's 400G QSFP112 in-band
    # ports to leaves up to 90 m away in the network rows (single-mode QSFP112 DR4 parts came later), and
    # README's benchmark table was measured so. Ansible reaches the nodes on their BMC address.
    data["slurm"] = {
        "cluster_name": "bench",
        "controllers": ["mgmt001", "mgmt002"],
        "topology": "tree",
        "partitions": [{"name": "gpu", "node_groups": ["gpu"], "default": True}],
    }
    return data


def measure(gpus: int) -> dict[str, Any]:
    from factories import valid_from

    from clusterforge.checks import run_checks
    from clusterforge.expand import expand
    from clusterforge.render import RENDERERS, RenderContext
    from clusterforge.render.consistency import consistency_findings
    from clusterforge.writer import with_manifest, write_tree

    stages: dict[str, float] = {}
    families: dict[str, tuple[float, int]] = {}
    start = last = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        stages[name] = round(now - last, 2)
        last = now

    valid = valid_from(blueprint_data(gpus))
    lap("validate")
    topo, findings = expand(valid)
    lap("expand")
    findings = run_checks(valid, topo, findings)
    lap("check")
    ctx = RenderContext(valid, topo, findings)
    files: dict[str, str] = {}
    for family, renderer in RENDERERS.items():
        t = time.perf_counter()
        out = renderer(ctx)
        families[family] = (round(time.perf_counter() - t, 2), sum(len(v) for v in out.values()))
        files.update(out)
    lap("render")
    problems = consistency_findings(valid, topo, files)
    assert not problems, problems
    lap("consistency")
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(with_manifest(dict(sorted(files.items())), valid.source_sha256()), Path(tmp) / "out")
    lap("write")
    return {
        "gpus": gpus,
        "nodes": len(list(topo.nodes())),
        "links": len(topo.links),
        "files": len(files),
        "stages": stages,
        "total_s": round(last - start, 2),
        "families": families,
        "max_rss_mib": max_rss_mib(),
    }


def show(r: dict[str, Any]) -> None:
    stages = ", ".join(f"{k} {v} s" for k, v in r["stages"].items())
    print(
        f"{r['gpus']:>7} GPUs {r['nodes']:>6} nodes {r['links']:>7} links {r['files']:>5} files | {stages} | "
        f"total {r['total_s']} s | max RSS {r['max_rss_mib']} MiB"
    )
    print("        " + ", ".join(f"{k} {s} s/{size / 2**20:.1f} MiB" for k, (s, size) in r["families"].items()))


if __name__ == "__main__":
    run_sizes(__file__, measure, show)
