"""Burn-in result folders for tests/test_accept.py, built from the published samples in tests/accept/ (its
README names them): a clean run of every rendered job, and the faults a test plants in it."""

from __future__ import annotations

import json
from pathlib import Path

from clusterforge.pipeline import Analysis
from clusterforge.render.context import RenderContext, host_range
from clusterforge.render.handoff.burnin import HEADER, BurnInGroup, burn_in_groups

SAMPLES = Path(__file__).parent / "accept"
SAMPLE_PEAK = 338.82
"""The sample's busbw at its largest message."""
SHARE = 0.9
"""A clean run measures this share of the expected figure (the floor is 0.8)."""


def nccl(hosts: list[str], per_node: int, peak: float, collective: str = "all_reduce") -> str:
    """The sample's output with `hosts` as the ranks' nodes and its bandwidths scaled to reach `peak`."""
    lines = (SAMPLES / "nccl-tests-all_reduce.txt").read_text().splitlines()
    ranks = [
        f"#  Rank {r:2d} Group  0 Pid {4000 + r:6d} on {host:>13} device {d:2d} [0000:04:00] NVIDIA GB200"
        for r, (host, d) in enumerate((h, d) for h in hosts for d in range(per_node))
    ]
    start = next(i for i, line in enumerate(lines) if "out-of-place" in line) - 1
    table = lines[start : start + 4]
    rows = []
    factor = peak / SAMPLE_PEAK
    for line in lines[start + 4 :]:
        if line.startswith("#"):
            break
        p = line.split()
        redop = "none" if collective == "alltoall" else p[3]
        rows.append(
            f"{p[0]:>12}  {p[1]:>12}  {p[2]:>8}  {redop:>6}  {p[4]:>6}  {p[5]:>7}  {float(p[6]) * factor:6.2f}"
            f"  {float(p[7]) * factor:6.2f}  {p[8]:>5}  {p[9]:>7}  {float(p[10]) * factor:6.2f}"
            f"  {float(p[11]) * factor:6.2f}  {p[12]:>5}"
        )
    footer = ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {peak * 0.21:.3f} "]
    return "\n".join([lines[0], "#", "# Using devices", *ranks, *table, *rows, *footer]) + "\n"


def nvbandwidth(gpus: int, peak: float, low: dict[tuple[int, int], float] | None = None) -> str:
    """The sample's matrix cut to `gpus` GPUs and scaled so its cells are about `peak`, `low` cells changed."""
    lines = (SAMPLES / "nvbandwidth-device_to_device.txt").read_text().splitlines()
    title = next(i for i, line in enumerate(lines) if "bandwidth (GB/s)" in line)
    out = [*lines[: title + 1], "".join(f"{c:>10}" for c in range(gpus))]
    for row in range(gpus):
        cells = [
            c if c == "N/A" else f"{float(c) * peak / 389.2:.2f}" for c in lines[title + 2 + row].split()[1 : gpus + 1]
        ]
        for column in range(gpus):
            if (row, column) in (low or {}):
                cells[column] = f"{(low or {})[(row, column)]:.2f}"
        out.append(f"{row:>2}" + "".join(f"{c:>10}" for c in cells))
    return "\n".join(out) + "\n"


def dcgm(fail: tuple[int, str] | None = None) -> str:
    data = json.loads((SAMPLES / "dcgm-diag-r3.json").read_text())
    if fail:
        gpu, warning = fail
        for category in data["DCGM GPU Diagnostic"]["test_categories"]:
            for test in category["tests"]:
                if test and test["name"] == "GPU Memory":
                    test["results"][gpu] = {
                        "gpu_ids": gpu,
                        "status": "Fail",
                        "warnings": [{"warning": warning, "error_id": 83}],
                    }
    return json.dumps(data, indent="\t") + "\n"


def ibdiagnet(errors: list[str] = ()) -> str:  # type: ignore[assignment]
    text = (SAMPLES / "ibdiagnet2.log").read_text()
    if errors:
        lines = ["---------------------------------------------", "Phy Diagnostic (Plugin)"]
        lines += [f"-E- {e}" for e in errors]
        text = text.replace(
            "---------------------------------------------\nFabric Summary",
            "\n".join(lines) + "\n\n---------------------------------------------\nFabric Summary",
        )
        text = text.replace(
            "-I- Phy Diagnostic (Plugin)   0          0", f"-I- Phy Diagnostic (Plugin)   0          {len(errors)}"
        )
    return text


class Run:
    """A clean burn-in run of every rendered job of `analysis`'s blueprint, as files under `folder`."""

    def __init__(self, analysis: Analysis, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.groups = burn_in_groups(RenderContext(analysis.valid, analysis.topo, []))
        self.files: dict[str, str] = {}
        for g in self.groups:
            self.clean(g)
        self.files["ibdiagnet.compute.log"] = f"{HEADER} test=ibdiagnet fabric=compute\n" + ibdiagnet()

    def put(self, name: str, header: str, body: str) -> None:
        self.files[name] = f"{HEADER} {header}\n{body}"

    def clean(self, g: BurnInGroup) -> None:
        per = g.bounds.gpus_per_node
        for node in g.nodes:
            self.put(f"dcgm.{node}.json", f"test=dcgm group={g.group} nodes={node}", dcgm())
            self.put(
                f"nvbandwidth.{node}.txt",
                f"test=nvbandwidth group={g.group} nodes={node}",
                nvbandwidth(per, g.bounds.nvlink_gbs * SHARE),
            )
            if g.multi_node_nvlink:
                fabric = (SAMPLES / "nvidia-smi-q-fabric.txt").read_text()
                self.put(f"fabric-state.{node}.txt", f"test=fabric-state group={g.group} nodes={node}", fabric)
        sets = [("nvlink", d) for d in g.domains] + [("leaf", s) for s in g.leaf_sets]
        sets += [("spine", g.nodes)] if len(g.leaf_sets) > 1 else []
        for test, nodes in sets:
            figure = g.figure(test, nodes)
            if figure is None:
                continue
            for c, expected in (("all_reduce", figure.all_reduce_gbs), ("alltoall", figure.all_to_all_gbs)):
                self.put(
                    f"{test}.{c}.{nodes[0]}.txt",
                    f"test={test} group={g.group} collective={c} nodes={host_range(nodes)}",
                    nccl(nodes, per, expected * SHARE, c),
                )
        for rail in range(1, g.rails + 1):
            for s in g.leaf_sets:
                self.ring(g, "rail-pair", rail, s)
            if len(g.leaf_sets) > 1:
                longest = max(len(s) for s in g.leaf_sets)
                for i in range(longest):
                    self.ring(g, "spine-pair", rail, [s[i] for s in g.leaf_sets if i < len(s)])

    def ring(self, g: BurnInGroup, kind: str, rail: int, nodes: list[str]) -> None:
        pairs = [(nodes[i], nodes[i + 1]) for i in range(len(nodes) - 1)]
        if len(nodes) > 2:
            pairs.append((nodes[-1], nodes[0]))
        for a, b in pairs:
            self.pair(g, kind, rail, a, b, g.rail_gbs * SHARE)

    def pair(self, g: BurnInGroup, kind: str, rail: int, a: str, b: str, busbw: float) -> None:
        self.put(
            f"{kind}.r{rail}.{a}+{b}.txt",
            f"test={kind} group={g.group} rail={rail} collective=all_reduce nodes={a},{b}",
            nccl([a, b], 1, busbw),
        )

    def slow_pairs(self, node: str, rail: int, busbw: float, kind: str | None = None) -> None:
        """Every pair test of `node` on `rail` measures `busbw`."""
        for name in list(self.files):
            parts = name.split(".")
            pair = parts[0] in ("rail-pair", "spine-pair") and kind in (None, parts[0])
            if pair and parts[1] == f"r{rail}" and node in parts[2].split("+"):
                a, b = parts[2].split("+")
                self.pair(self.groups[0], parts[0], rail, a, b, busbw)

    def write(self) -> Path:
        for name, text in self.files.items():
            (self.folder / name).write_text(text)
        return self.folder
