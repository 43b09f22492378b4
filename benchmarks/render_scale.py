"""Benchmark: the whole `clusterforge render` of DGX H100 clusters of 10k and 100k GPUs.

    python benchmarks/render_scale.py [--locked] [GPUS ...]     # default: 10000 100000

The synthetic blueprint (tests/factories.py) gets management nodes, Slurm with a tree topology and NCCL
settings, so every output family has work to do. Each size runs in a fresh process so that its
peak memory (max RSS) is its own. Prints one line per size with CPU seconds per stage (this process's user
and system time: the machine is shared, and others' work stretches wall time), then CPU seconds and
output size per render family; given two sizes or more, the growth of each stage's and family's user CPU
seconds per GPU from the smallest to the largest (1: linear). The families are rendered one after another in
this process, as `render --jobs 1` does, so each one's CPU seconds are its own; `benchmarks/all.py` measures
the render as a user runs it (the handoff pack in a second process), in wall and CPU seconds.

The last stage, `lock`, makes the lock file's text and writes it (as `render` does beside the blueprint); the
last line per size is the lock file's size, in all and per section.
With `--locked`, each size is rendered as a second render is, with the lock file of a first: a process of its
own expands the blueprint and writes that lock file first (not measured), the measured one reads it
(`read lock`) and keeps what it holds (in `expand`, and the cable labels in the cabling families).
"""

from __future__ import annotations

import os
import re
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

from sizes import max_rss_mib, run_sizes  # noqa: E402

STAGES = ("validate", "read lock", "expand", "check", "render", "consistency", "write", "lock")
PLANE_HCAS = 64**3 // 4
"""Ports a 3-tier fat tree of 64-port QM9700 switches holds: 65,536 HCAs per rail plane, so 65,536 DGX nodes
(524,288 GPUs) per compute fabric."""


def blueprint_data(gpus: int) -> dict[str, Any]:
    """DGX H100 nodes (8 GPUs each) on rail-optimized NDR fabrics of QM9700 switches: one fabric up to 524,288
    GPUs; above that, independent pods of equal size (a pod: its node rows, its network rows and its own compute
    fabric, as a data hall of the size one 3-tier fat tree holds), since one per-rail plane of 64-port switches
    reaches 65,536 HCAs at most."""
    nodes = gpus // 8
    pods = -(-nodes // PLANE_HCAS)
    data = _pod_data(nodes, gpus) if pods == 1 else _pods_data(nodes, pods, gpus)
    first_compute = next(f for f in data["fabrics"].values() if f["kind"] == "compute")
    data["node_groups"].append(
        {
            "name": "mgmt",
            "model": "generic/cpu-1u",
            "count": 2,
            "role": "management",
            "placement": {"racks": [first_compute["switch_racks"][0]]},
            "management_network": "oob",
        }
    )
    # No in-band network: when the LinkX cable catalog came, no part joined the DGX's 400G QSFP112 in-band
    # ports to leaves up to 90 m away in the network rows (single-mode QSFP112 DR4 parts came later), and
    # docs/speed.md's benchmark table was measured so. Ansible reaches the nodes on their BMC address, named in each
    # group's management_network (tests/factories.py).
    gpu_groups = [g["name"] for g in data["node_groups"] if g["role"] == "compute"]
    data["slurm"] = {
        "cluster_name": "bench",
        "controllers": ["mgmt001", "mgmt002"],
        "topology": "tree",
        "partitions": [{"name": "gpu", "node_groups": gpu_groups, "default": True}],
    }
    return data


def _pod_data(nodes: int, gpus: int) -> dict[str, Any]:
    from factories import dgx_data

    data = dgx_data(nodes, tiers=3 if gpus > 16384 else "auto", planes="per-rail" if gpus > 65536 else "one")
    data["node_groups"][0]["nccl"] = {"NCCL_IB_QPS_PER_CONNECTION": 2}
    return data


def _pods_data(nodes: int, pods: int, gpus: int) -> dict[str, Any]:
    """`pods` pods of (nearly) equal size: pod k's rows are named P<k>A1.. and P<k>N1.., its node group
    gpu<letter> (gpua, gpub, ...: with digits, gpu1 and gpu2 nodes would read as one range of 125,000
    numbers), its fabric compute<letter> with its own /10 of 10.0.0.0/8
    (a pod of 65,536 nodes needs 524,288 addresses, a /10 holds 4,194,304)."""
    merged: dict[str, Any] = {}
    for k, letter in zip(range(1, pods + 1), "abcdefgh", strict=False):
        size = nodes // pods + (1 if k <= nodes % pods else 0)
        pod = _pod_data(size, gpus)
        rows = {row["name"]: f"P{k}{row['name']}" for row in pod["floor"]["rows"]}
        for row in pod["floor"]["rows"]:
            row["name"] = rows[row["name"]]
        group = pod["node_groups"][0]
        group["name"] = f"gpu{letter}"
        group["placement"]["rows"] = [rows[r] for r in group["placement"]["rows"]]
        compute = pod["fabrics"].pop("compute")
        compute["switch_racks"] = [f"{rows[r.split('-')[0]]}-{r.split('-')[1]}" for r in compute["switch_racks"]]
        compute["node_groups"] = [group["name"]]
        compute["ipv4_pool"] = f"10.{(k - 1) * 64}.0.0/10"
        if not merged:
            merged = pod
            merged["fabrics"] = {"oob": pod["fabrics"]["oob"]}
        else:
            merged["floor"]["rows"] += pod["floor"]["rows"]
            merged["node_groups"].append(group)
        merged["fabrics"][f"compute{letter}"] = compute
    return merged


LOCKED = "CF_RENDER_SCALE_LOCKED"
"""Set (to 1) by `--locked` for the processes that measure each size."""


def first_lock(gpus: int, blueprint: Path) -> None:
    """The lock file a first render of `gpus` GPUs writes beside `blueprint`, made in a process of its own."""
    subprocess.run([sys.executable, __file__, "--first-lock", str(gpus), str(blueprint)], check=True)


def write_first_lock(gpus: int, blueprint: Path) -> None:
    from factories import valid_from

    from clusterforge.expand import expand
    from clusterforge.lockfile import write_lock
    from clusterforge.pipeline import Analysis, lock_of

    valid = valid_from(blueprint_data(gpus))
    topo, findings = expand(valid)
    write_lock(blueprint, lock_of(Analysis(valid, topo, findings)))


def measure(gpus: int) -> dict[str, Any]:
    """The CLI's render, stage by stage: each family written into the staging folder as soon as it is
    rendered (that writing counts as `write`, with the swap at the end), then the lock file."""
    from factories import valid_from

    from clusterforge.checks import run_checks
    from clusterforge.expand import expand
    from clusterforge.inputs import InputPolicy
    from clusterforge.lockfile import Keep, read_lock, write_lock
    from clusterforge.output.pieces import FileText, Pieces, length
    from clusterforge.output.writer import MANIFEST, StagedTree, manifest_text
    from clusterforge.pipeline import CONSISTENCY_READS, Analysis, lock_of
    from clusterforge.render import FAMILIES, RenderContext, render_family
    from clusterforge.render.ansible.made import Made
    from clusterforge.render.consistency import consistency_findings
    from clusterforge.runtime.gc_paused import gc_paused

    def made(text: FileText) -> FileText:
        """A text made in pieces as it is written, made now: its time is the family's, not the writer's."""
        if isinstance(text, str):
            return text
        pieces = list(text)
        return Pieces(lambda: pieces)

    stages: dict[str, float] = {"write": 0.0}
    user: dict[str, float] = {"write": 0.0}  # of each stage and family: the program's own work, no kernel time
    families: dict[str, tuple[float, int]] = {}
    start = last = time.process_time()
    last_user = user_s()

    def lap(name: str) -> None:
        nonlocal last, last_user
        now, now_user = time.process_time(), user_s()
        stages[name] = round(now - last + stages.get(name, 0.0), 2)
        user[name] = round(now_user - last_user + user.get(name, 0.0), 2)
        last, last_user = now, now_user

    work = tempfile.mkdtemp(prefix="cf-render-scale-")  # removed by run_sizes once every size is measured
    blueprint = Path(work) / "bench.yaml"  # where the lock file lies; the blueprint itself is data
    if os.environ.get(LOCKED):
        first_lock(gpus, blueprint)
        start = last = time.process_time()
        last_user = user_s()
    valid = valid_from(blueprint_data(gpus))
    lap("validate")
    keep = Keep(read_lock(blueprint, InputPolicy((Path(work).resolve(),))))
    lap("read lock")
    topo, findings = expand(valid, keep)
    del keep  # as render_blueprint lets the lock file read go
    lap("expand")
    findings = run_checks(valid, topo, findings)
    lap("check")
    ctx = RenderContext(valid, topo, findings)
    with (
        StagedTree(Path(work) / "out", keep=CONSISTENCY_READS) as staged,
        gc_paused(),  # as the pipeline renders
    ):
        facts = Made()
        for family in FAMILIES:
            rendered = render_family(ctx, family)
            facts = facts.merged(rendered.made)
            out = {rel: made(text) for rel, text in rendered.files.items()}
            del rendered
            families[family] = (round(time.process_time() - last, 2), sum(map(length, out.values())))
            user[family] = round(user_s() - last_user, 2)
            lap("render")
            for rel, text in out.items():
                staged.put(rel, text)
            del out
            lap("write")
        problems = consistency_findings(valid, topo, staged, facts)  # type: ignore[arg-type]  # it only reads
        assert not problems, problems
        lap("consistency")
        written = len(staged)
        staged.put(MANIFEST, manifest_text(staged.digests, valid.source_sha256()))
        staged.commit()
        lap("write")
    lock = lock_of(Analysis(valid, topo, findings))
    write_lock(blueprint, lock)
    lap("lock")
    return {
        "lock": lock_sizes(lock),
        "gpus": gpus,
        "nodes": len(list(topo.nodes())),
        "links": len(topo.links),
        "files": written,
        "stages": {name: stages[name] for name in STAGES},
        "total_s": round(last - start, 2),
        "families": families,
        "user": user,
        "max_rss_mib": max_rss_mib(),
        "work": work,
    }


def lock_sizes(text: str) -> dict[str, tuple[int, int]]:
    """The lock file's size and each section's: name -> (bytes, lines); '' for the whole file."""
    heads = [(m.start(), m[1]) for m in re.finditer(r"^([a-z]+):\n", text, re.MULTILINE)]
    ends = [start for start, _ in heads[1:]] + [len(text)]
    sizes = {name: (end - start, text.count("\n", start, end)) for (start, name), end in zip(heads, ends, strict=True)}
    return {"": (len(text.encode()), text.count("\n")), **sizes}


def show(r: dict[str, Any]) -> None:
    stages = ", ".join(f"{k} {v} s" for k, v in r["stages"].items())
    print(
        f"{r['gpus']:>7} GPUs {r['nodes']:>6} nodes {r['links']:>7} links {r['files']:>5} files | {stages} | "
        f"total {r['total_s']} s | max RSS {r['max_rss_mib']} MiB"
    )
    print("        " + ", ".join(f"{k} {s} s/{size / 2**20:.1f} MiB" for k, (s, size) in r["families"].items()))
    print(
        "        lock file "
        + ", ".join(f"{k or 'total'} {b / 2**20:.1f} MiB/{n:,} lines" for k, (b, n) in r["lock"].items())
    )


def user_s() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def compare(small: dict[str, Any], large: dict[str, Any]) -> None:
    """Each stage's and family's user CPU seconds per GPU at the larger size over the smaller's: where the
    program's own work grows faster than the cluster (the kernel's share depends on the machine: page_cost.py)."""
    scale = large["gpus"] / small["gpus"]

    def growth(name: str) -> str:
        before, after = small["user"][name], large["user"][name]
        return f"{name} {after / before / scale:.2f}" if before >= 0.05 else f"{name} -"

    total = sum(large["user"][n] for n in STAGES) / sum(small["user"][n] for n in STAGES) / scale
    print(f"user CPU per GPU, {large['gpus']:,} over {small['gpus']:,} GPUs: {total:.2f} (1: linear)")
    print("        stages: " + ", ".join(map(growth, STAGES)))
    print("        families: " + ", ".join(map(growth, small["families"])))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--first-lock"]:
        write_first_lock(int(sys.argv[2]), Path(sys.argv[3]))
        sys.exit(0)
    if sys.argv[1:2] == ["--locked"]:
        os.environ[LOCKED] = "1"
        del sys.argv[1]
    run_sizes(__file__, measure, show, compare)
