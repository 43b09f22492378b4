"""Benchmark: how fast real Ansible loads the rendered inventory, side by side with a lean one.

    python benchmarks/ansible_load.py [GPUS] [--repeat N] [--play-hosts N]     # default: 100000, 1, 1000

Renders the render benchmark's DGX H100 blueprint (tests/factories.py via render_scale.py) with
`clusterforge render`, then times `ansible-inventory --list` on:

- rendered: ansible/inventory.json as written (with the group_vars/ folder next to it);
- lean JSON / lean YAML: the same hosts with nothing but `ansible_host`, all under `all` (what a
  hand-written inventory of these hosts would hold at the least);

alternating the three, keeping each one's run with the least CPU time (user + system: on a shared
machine others' work stretches wall time, not CPU time). Then starts
ansible-playbook on site.yml with `-c local` over the first `--play-hosts` GPU nodes (addresses overridden
to 127.0.0.1, files installed under a scratch folder) and reports the seconds until its first task starts
(the play is stopped there). Prints a table; the target is rendered / lean JSON <= 3.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE))

TARGET_RATIO = 3.0
ANSIBLE_ENV = {
    **os.environ,
    "ANSIBLE_HOST_KEY_CHECKING": "False",
    "ANSIBLE_NOCOLOR": "1",
    "ANSIBLE_DEPRECATION_WARNINGS": "False",
}


def render(gpus: int, work: Path) -> Path:
    from render_scale import blueprint_data

    blueprint = work / f"bench{gpus}.yaml"
    data = blueprint_data(gpus)
    data["name"] = f"bench{gpus}"
    blueprint.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    out = work / "out"
    subprocess.run(
        [sys.executable, "-m", "clusterforge", "render", str(blueprint), "-o", str(out)],
        check=True,
        cwd=REPO,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return out / "ansible" / "inventory.json"


def _ansible_hosts(group: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for name, values in (group.get("hosts") or {}).items():
        if "ansible_host" in values:
            yield name, values["ansible_host"]
    for child in (group.get("children") or {}).values():
        yield from _ansible_hosts(child)


def lean_inventories(inventory: Path, work: Path) -> dict[str, Path]:
    """Every host of the rendered inventory with only its ansible_host, as JSON and as YAML."""
    rendered = json.loads(inventory.read_text(encoding="utf-8"))
    lean = {"all": {"hosts": {name: {"ansible_host": host} for name, host in sorted(_ansible_hosts(rendered["all"]))}}}
    (work / "lean").mkdir()
    as_json, as_yaml = work / "lean" / "lean.json", work / "lean" / "lean.yml"
    as_json.write_text(json.dumps(lean, indent=1), encoding="utf-8")
    as_yaml.write_text(yaml.safe_dump(lean, default_flow_style=False), encoding="utf-8")
    return {"lean JSON": as_json, "lean YAML": as_yaml}


def list_cost(inventory: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak memory (MiB) of `ansible-inventory --list`.
    CPU seconds are the figure to compare on a shared machine: others' work stretches wall time only."""
    start = time.perf_counter()
    with subprocess.Popen(
        ["ansible-inventory", "-i", str(inventory), "--list"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=ANSIBLE_ENV,
    ) as child:
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"ansible-inventory --list failed on {inventory} (exit {child.returncode})")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def first_task_seconds(inventory: Path, hosts: int, work: Path) -> float:
    """Seconds from starting site.yml with -c local over `hosts` GPU nodes until its first task starts."""
    names = sorted(
        line.strip(" |-")
        for line in subprocess.run(
            ["ansible-inventory", "-i", str(inventory), "--graph", "gpu_nodes"],
            check=True,
            capture_output=True,
            text=True,
            env=ANSIBLE_ENV,
        ).stdout.splitlines()
        if not line.strip(" |-").startswith("@")
    )[:hosts]
    limit = work / "limit.txt"
    limit.write_text("\n".join(names) + "\n", encoding="utf-8")
    extra = {
        "ansible_connection": "local",
        "ansible_host": "127.0.0.1",
        "ansible_python_interpreter": sys.executable,
        "cf_become": False,
        "cf_root": f"{work}/root/{{{{ inventory_hostname }}}}",
    }
    command = [
        "ansible-playbook",
        "-i",
        str(inventory),
        "-c",
        "local",
        "--limit",
        f"@{limit}",
        "-e",
        json.dumps(extra),
        str(inventory.parent / "site.yml"),
    ]
    start = time.perf_counter()
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=ANSIBLE_ENV
    ) as play:
        assert play.stdout is not None
        for line in play.stdout:
            if line.startswith("TASK ["):
                seconds = time.perf_counter() - start
                play.kill()
                return seconds
        raise SystemExit(f"ansible-playbook started no task (exit {play.wait()})")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("gpus", nargs="?", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--play-hosts", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inventory = render(args.gpus, work)
        candidates = {"rendered": inventory, **lean_inventories(inventory, work)}
        best: dict[str, tuple[float, float, float]] = {}
        for _ in range(args.repeat):
            for name, path in candidates.items():
                cost = list_cost(path)
                if name not in best or cost[1] < best[name][1]:
                    best[name] = cost
        hosts = json.loads(candidates["lean JSON"].read_text(encoding="utf-8"))["all"]["hosts"]
        print(f"ansible-inventory --list, {args.gpus} GPUs, {len(hosts)} hosts, best of {args.repeat}")
        print(
            f"{'inventory':<10} {'MiB on disk':>11} {'wall s':>7} {'CPU s':>6} {'peak MiB':>8} {'CPU vs lean JSON':>16}"
        )
        lean = best["lean JSON"][1]
        for name, (wall, cpu, mib) in best.items():
            size = sum(
                p.stat().st_size
                for p in candidates[name].parent.rglob("*")
                if p.is_file() and (p == candidates[name] or "group_vars" in p.parts)
            )
            print(f"{name:<10} {size / 2**20:>11.1f} {wall:>7.1f} {cpu:>6.1f} {mib:>8.0f} {cpu / lean:>15.2f}x")
        ratio = best["rendered"][1] / lean
        print(
            f"target rendered <= {TARGET_RATIO}x lean JSON (CPU): {'met' if ratio <= TARGET_RATIO else 'NOT met'} "
            f"({ratio:.2f}x)"
        )
        first = first_task_seconds(inventory, args.play_hosts, work)
        print(f"ansible-playbook -c local over {args.play_hosts} GPU nodes: first task after {first:.1f} s")


if __name__ == "__main__":
    main()
