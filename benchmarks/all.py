"""Every speed target of issue 17 measured in one run, printed as one table with whether each is met.

    python benchmarks/all.py [--quick] [--skip-million] [--skip-netlab] [--skip-ansible] [--skip-slurm] [--work DIR]
                             [--repeats N]

Each measurement runs `clusterforge` as a user would, in a fresh process, its bytecode compiled once before
(as an installed package has it), and counts the whole process tree (a render forks a second process where
two CPUs are usable; benchmarks/tree_cost.py):

- render: `clusterforge render` of the render benchmark's DGX H100 blueprint (render_scale.py) at 100,000 and
  1,000,000 GPUs, from the blueprint to the written files, `--repeats` times each (default 3), one size after
  the other (100k, 1M, 100k, 1M, ...): on the shared virtual machine one run's time moves by a tenth or more
  from one minute to the next, and the price of a page of memory by several times with what the page cache
  holds (page_cost.py, and below). The
  issue's time target is the user's: wall seconds, judged on the median run, the lowest and highest beside it;
  the CPU seconds (user + system of every process) of that run are printed too, since others' work stretches
  wall time and not CPU time. Memory is the largest peak of the process tree's summed PSS over the runs (a
  page the forked process shares with its parent counted once; sampled), judged on that, with an upper bound
  beside it (the sum of each process's own peak RSS). Growth is the CPU time per GPU at 1,000,000 over that
  at 100,000 in each pair of runs made one after the other (linear: 1), judged on the median pair, every
  pair's printed beside it; beneath it, what explains the median pair's: the growth of the user CPU time
  (the program's own work) and of the page faults (the memory it touches), and the system time per fault in
  each render (what the kernel, and on a virtual machine its host, charged for each page: page_cost.py
  measures that price alone), and the growth of the wall time per GPU (the second CPU works more of the time
  at a million). Each million-GPU render writes 4.4 GB: `--work` needs about 15 GB free;
- netlab: `netlab create` (provider clab, FRR switches, Linux hosts) on a 1,024-GPU DGX blueprint without an
  out-of-band network (its nodes, leaves, spines and cables: the same devices on both sides), against
  `clusterforge render` of that blueprint, CPU seconds, paired in one run (`pip install networklab`);
- Ansible: `ansible-inventory --list` of the 100,000-GPU render against a lean inventory of the same hosts
  (ansible_load.py), and the seconds until the first task of site.yml with `-c local` over 1,000 GPU nodes
  (8,000-GPU render);
- slurmctld: seconds until Debian's slurmctld, started on loopback with the 100,000-GPU Slurm files,
  answers `scontrol ping` (tests/slurm_harness.py).

Every render writes into a new folder, and nothing is deleted until all is measured: on ext4, creating files
right after many were deleted costs seconds more of system time (the inode allocator skips recently deleted
inodes), which would measure the harness, not the render. For the same reason give `--work` a folder on a
file system where nothing large was deleted in the last minutes (the default is a new folder in the system's
temporary folder; a run removes its own folder when it ends, so do not start another right after it there):
`benchmarks/scratch_fs.sh up` makes a new one on a loop device with direct I/O (a loop device without it
caches each written page twice, once as the image's: with it, the million-GPU renders of 2026-12-06 paid 2.8 us
of system time per page fault, as the 100,000-GPU ones did, against 3.7-5.2 us, and growth fell from 1.17-1.23
to 1.11).
Once measured, a render's files are dropped from the page cache instead (page_cache.py): left there, the
earlier renders' gigabytes made every page the next render touched dearer on the virtual machine (13.7, 28.4
and 53.3 system CPU s in three million-GPU renders in a row, 13.8 s again once the earlier files were gone).

`--quick` measures at 10,000 GPUs instead of 100,000 and skips the million.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE))

from page_cache import forget  # noqa: E402
from tree_cost import TreeCost, tree_cost  # noqa: E402

GIB = 1024
T = TypeVar("T")


@dataclass
class Row:
    target: str
    measured: str
    met: bool | None
    """None: not measured (a tool is missing, or skipped)."""
    explains: bool = False
    """A figure that explains the target above it: shown indented, with no verdict."""


def explaining(what: str, measured: str) -> Row:
    return Row(f"  {what}", measured, None, explains=True)


class Failed(Exception):
    """A measured command failed; the message is its first error line."""


def child_env() -> dict[str, str]:
    """The environment of a measured command: clusterforge from this checkout, its bytecode compiled once into
    a folder of its own (as `pip install` does at install time) rather than on every run."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "cf-bench-pyc"),
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_once() -> None:
    subprocess.run([sys.executable, "-c", "import clusterforge.cli"], cwd=REPO, env=child_env(), check=True)


def child_cost(command: list[str], cwd: Path = REPO) -> TreeCost:
    """What one command costs with the processes it starts; raises Failed when it fails."""
    cost = tree_cost(command, cwd, child_env())
    if cost.returncode != 0:
        lines = cost.stderr.splitlines()
        first = next((line for line in lines if " error " in line), lines[-1] if lines else "")
        raise Failed(f"exit {cost.returncode}: {first}")
    return cost


def blueprint_file(gpus: int, work: Path) -> Path:
    from render_scale import blueprint_data

    data = blueprint_data(gpus)
    data["name"] = f"bench{gpus}"
    path = work / f"bench{gpus}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def render(gpus: int, work: Path) -> tuple[TreeCost, Path]:
    """`clusterforge render` into a folder no render wrote before; its files then dropped from the page cache,
    so that they do not make the next measurement's pages dearer."""
    out = next(work / f"out{gpus}-{n}" for n in itertools.count(1) if not (work / f"out{gpus}-{n}").exists())
    cost = child_cost([sys.executable, "-m", "clusterforge", "render", str(blueprint_file(gpus, work)), "-o", str(out)])
    forget(out)
    return cost, out


def typical(runs: list[T], figure: Callable[[T], float]) -> T:
    """The median of `runs` by `figure` (of an even number, the higher of the middle two)."""
    return sorted(runs, key=figure)[len(runs) // 2]


def spread(runs: list[TreeCost], figure: Callable[[TreeCost], float], unit: str) -> str:
    """` (lowest-highest unit)` of several runs; nothing for one."""
    if len(runs) == 1:
        return ""
    return f" ({min(map(figure, runs)):.1f}-{max(map(figure, runs)):.1f}{unit})"


def render_rows(gpus: int, wall_limit: float, mib_limit: float, runs: list[TreeCost]) -> list[Row]:
    """Wall time judged on the median run (others' work on the shared machine stretches single runs), memory
    on the largest peak of all runs."""
    median = typical(runs, lambda c: c.wall_s)
    worst = max(runs, key=lambda c: c.pss_mib)
    of = f", median of {len(runs)}" if len(runs) > 1 else ""
    return [
        Row(
            f"render {gpus:,} GPUs <= {wall_limit:g} s (wall{of})",
            f"{median.wall_s:.1f} s wall{spread(runs, lambda c: c.wall_s, ' s')}, {median.cpu_s:.1f} CPU s",
            median.wall_s <= wall_limit,
        ),
        Row(
            f"render {gpus:,} GPUs <= {mib_limit / GIB:g} GiB (peak PSS, all processes)",
            f"{worst.pss_mib / GIB:.2f} GiB (at most {max(c.hwm_sum_mib for c in runs) / GIB:.2f} GiB)",
            worst.pss_mib <= mib_limit,
        ),
    ]


@dataclass
class Pair:
    """A render at the small size and one at a million GPUs, measured one right after the other (in about the
    same state of the machine)."""

    small: TreeCost
    big: TreeCost
    scale: float

    def growth(self, figure: Callable[[TreeCost], float]) -> float:
        """`figure` per GPU at a million over that at the small size."""
        return figure(self.big) / figure(self.small) / self.scale


def _cpu(c: TreeCost) -> float:
    return c.cpu_s


def _us_per_fault(c: TreeCost) -> float:
    return (c.cpu_s - c.user_s) / c.faults * 1e6


def growth_rows(pairs: list[Pair]) -> list[Row]:
    """The growth of the median pair, each pair's beside it; under it, what the median pair's growth is made of."""
    median = typical(pairs, lambda p: p.growth(_cpu))
    total = median.growth(_cpu)
    each = f" (pairs: {', '.join(f'{p.growth(_cpu):.2f}' for p in pairs)})" if len(pairs) > 1 else ""
    of = f", median of {len(pairs)} pairs" if len(pairs) > 1 else ""
    small, big = median.small, median.big
    return [
        Row(f"growth no worse than linear (CPU per GPU, 1M over 100k{of}) <= 1.2", f"{total:.2f}{each}", total <= 1.2),
        explaining(
            "of it, user CPU per GPU, 1M over 100k (the program's work)", f"{median.growth(lambda c: c.user_s):.2f}"
        ),
        explaining(
            "of it, page faults per GPU, 1M over 100k (memory touched)", f"{median.growth(lambda c: c.faults):.2f}"
        ),
        explaining(
            "system time per page fault, 100k / 1M", f"{_us_per_fault(small):.1f} / {_us_per_fault(big):.1f} us"
        ),
        explaining("wall time per GPU, 1M over 100k (the user's wait)", f"{median.growth(lambda c: c.wall_s):.2f}"),
        *(explaining(f"pair {n}: 100k | 1M", f"{_run(p.small)} | {_run(p.big)}") for n, p in enumerate(pairs, 1)),
    ]


def _run(c: TreeCost) -> str:
    """One render's user and system CPU seconds and page faults (thousands)."""
    return f"{c.user_s:.1f}u {c.cpu_s - c.user_s:.1f}s {c.faults / 1000:,.0f}kf"


def render_and_growth_rows(work: Path, small_gpus: int, repeats: int, million: bool) -> tuple[list[Row], Path]:
    """The renders at `small_gpus` and, with `million`, at 1,000,000 GPUs, `repeats` times each, one size after
    the other; their rows and the folder of one render at `small_gpus`."""
    small: list[TreeCost] = []
    big: list[TreeCost] = []
    failed: list[Row] = []
    rendered = work
    for _ in range(repeats):
        cost, rendered = render(small_gpus, work)
        small.append(cost)
        if million and not failed:
            try:
                big.append(render(1_000_000, work)[0])
            except Failed as exc:
                failed.append(
                    Row("render 1,000,000 GPUs <= 100 s and 8 GiB, linear growth", f"failed, {exc}"[:160], False)
                )
    rows = render_rows(small_gpus, 10.0 * small_gpus / 100_000, 1.5 * GIB, small)
    if failed:
        rows += failed
    elif big:
        rows += render_rows(1_000_000, 100.0, 8 * GIB, big)
        rows += growth_rows([Pair(s, b, 1_000_000 / small_gpus) for s, b in zip(small, big, strict=True)])
    return rows, rendered


NETLAB_NODES = 128
"""1,024 GPUs: 128 DGX nodes, 32 leaves and 16 spines, 2,048 links. netlab takes about 100 CPU s on it (a few
minutes), enough that neither tool's start-up decides the ratio (clusterforge's is about 1 CPU s)."""


def netlab_rows(work: Path) -> list[Row]:
    """netlab create and clusterforge render on the same devices and cables (the compute fabric of a DGX
    blueprint without an out-of-band network: its nodes, leaves, spines and cables), CPU seconds."""
    if shutil.which("netlab") is None:
        return [Row("per device >= 100x faster than netlab create", "netlab not installed", None)]
    from factories import dgx_data, valid_from

    from clusterforge.expand import expand

    data = dgx_data(NETLAB_NODES)
    del data["fabrics"]["oob"]  # netlab gets the compute fabric; both sides then have the same devices
    for group in data["node_groups"]:
        del group["management_network"]  # named the out-of-band network, gone with it
    data["name"] = f"netlab{NETLAB_NODES}"
    blueprint = work / f"netlab{NETLAB_NODES}.yaml"
    blueprint.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    topo, _ = expand(valid_from(data))
    links = [link for link in topo.links if link.fabric == "compute"]
    names = sorted({name for link in links for name in (link.a, link.b)})
    assert set(names) == set(topo.devices), "the netlab topology has other devices than the blueprint"
    short = {name: f"n{i}" for i, name in enumerate(names, 1)}  # netlab node names: no dashes
    nodes = {short[n]: {"device": "frr" if topo.devices[n].kind == "switch" else "linux"} for n in names}
    lab = work / "netlab"
    lab.mkdir()
    topology = {
        "provider": "clab",
        # netlab's defaults stop at 150 nodes, a /24 of management addresses and 256 host LANs
        "defaults": {"const": {"MAX_NODE_ID": 4 * len(names)}},
        "addressing": {"mgmt": {"ipv4": "192.168.0.0/16"}, "lan": {"ipv4": "172.16.0.0/12"}},
        "nodes": nodes,
        "links": [f"{short[k.a]}-{short[k.b]}" for k in links],
    }
    (lab / "topology.yml").write_text(yaml.safe_dump(topology), encoding="utf-8")
    netlab_cpu = child_cost(["netlab", "create", "topology.yml"], cwd=lab).cpu_s
    ours_cpu = child_cost(
        [sys.executable, "-m", "clusterforge", "render", str(blueprint), "-o", str(work / "netlab-out")]
    ).cpu_s
    ratio = netlab_cpu / ours_cpu  # the same devices on both sides: the ratio per device
    return [
        Row(
            f"per device >= 100x faster than netlab create ({len(names)} devices, {len(links)} links)",
            f"{ratio:.0f}x (netlab {netlab_cpu:.1f} s, clusterforge {ours_cpu:.2f} s)",
            ratio >= 100,
        )
    ]


def ansible_rows(rendered: Path, gpus: int, work: Path) -> list[Row]:
    if shutil.which("ansible-inventory") is None:
        return [Row("Ansible inventory <= 3x a lean one", "ansible-core not installed", None)]
    from ansible_load import first_task_seconds, lean_inventories, list_cost

    inventory = rendered / "ansible" / "inventory.json"
    lean = lean_inventories(inventory, work)["lean JSON"]
    ours, bare = list_cost(inventory), list_cost(lean)
    ratio = ours[1] / bare[1]
    small = render(8000, work)[1]
    first = first_task_seconds(small / "ansible" / "inventory.json", 1000, work)
    return [
        Row(
            f"ansible-inventory --list at {gpus:,} GPUs <= 3x a lean inventory (CPU)",
            f"{ratio:.2f}x ({ours[1]:.1f} s against {bare[1]:.1f} s)",
            ratio <= 3,
        ),
        Row("site.yml -c local over 1,000 GPU nodes: first task <= 30 s (wall)", f"{first:.1f} s", first <= 30),
    ]


def slurm_rows(rendered: Path, gpus: int, work: Path) -> list[Row]:
    if shutil.which("slurmctld") is None:
        return [Row("slurmctld loads the Slurm files", "slurmctld not installed", None)]
    from slurm_harness import Slurmctld

    start = time.perf_counter()
    with Slurmctld(rendered, work / "slurmctld") as ctld:
        seconds = time.perf_counter() - start
        nodes = ctld.run("sinfo", "-h", "-o", "%D").split()
    return [
        Row(
            f"slurmctld up with the {gpus:,}-GPU files <= 30 s (wall, to scontrol ping)",
            f"{seconds:.1f} s ({sum(int(n) for n in nodes if n.isdigit()):,} nodes)",
            seconds <= 30,
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    for part in ("million", "netlab", "ansible", "slurm"):
        parser.add_argument(f"--skip-{part}", action="store_true")
    parser.add_argument("--work", type=Path, help="a folder to make the run's own new folder in")
    parser.add_argument("--repeats", type=int, default=3, help="renders at each size (default 3)")
    args = parser.parse_args()
    size = 10_000 if args.quick else 100_000
    rows: list[Row] = []
    compile_once()
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="cf-bench-", dir=args.work))
    try:
        measured, rendered = render_and_growth_rows(work, size, args.repeats, not (args.quick or args.skip_million))
        rows += measured
        steps: list[tuple[bool, Callable[[], list[Row]]]] = [
            (args.skip_netlab, lambda: netlab_rows(work)),
            (args.skip_ansible, lambda: ansible_rows(rendered, size, work)),
            (args.skip_slurm, lambda: slurm_rows(rendered, size, work)),
        ]
        for skipped, step in steps:
            if not skipped:
                rows += step()
    finally:
        shutil.rmtree(work, ignore_errors=True)  # only now: deleting files slows the next file creations
    show(rows)


def show(rows: list[Row]) -> None:
    width = max(len(r.target) for r in rows)
    measured = max(len(r.measured) for r in rows)
    print(f"{'target':<{width}}  {'measured':<{measured}}  met")
    for r in rows:
        met = "" if r.explains else "n/a" if r.met is None else ("yes" if r.met else "NO")
        print(f"{r.target:<{width}}  {r.measured:<{measured}}  {met}")


if __name__ == "__main__":
    main()
