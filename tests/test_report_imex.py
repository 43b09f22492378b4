"""The handoff states which Slurm job steps get an IMEX channel on GB200 NVL72 racks and how jobs keep to
whole racks (on main it said nothing): Slurm 24.11's switch/nvidia_imex serves srun steps only (the batch
step from 25.11, as the issue reports it), and topology/block's `--segment` (sbatch(1)) keeps each group of
nodes in one block, here one NVLink domain of 18 trays."""

from __future__ import annotations

from pathlib import Path

from clusterforge.pipeline import analyse, load_valid, render_analysis


def test_gb200_handoff_says_srun_only_and_segment() -> None:
    report = render_analysis(analyse(load_valid(Path("blueprints/gb200-nvl72.yaml"))))["handoff/report.md"]
    section = report.split("## Slurm jobs in multi-node NVLink domains", 1)[1].split("\n## ", 1)[0]
    assert "| Slurm 24.11 |" in section
    assert "no: up to 24.11 srun steps only, the batch step from 25.11" in section
    assert "sbatch --segment=18" in section


def test_no_section_without_multi_node_domains() -> None:
    report = render_analysis(analyse(load_valid(Path("blueprints/h200-training-pod.yaml"))))["handoff/report.md"]
    assert "Slurm jobs in multi-node NVLink domains" not in report
