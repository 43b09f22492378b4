"""The handoff report's note on Slurm jobs in multi-node NVLink domains (GB200 NVL72 racks): which job steps
get an IMEX channel from switch/nvidia_imex in the blueprint's Slurm release, and how to keep a job's nodes
in whole domains.

What the releases do (as the issue this was written for states it; check the release notes of the Slurm the
cluster runs): switch/nvidia_imex came with 24.05 (model/slurm.py IMEX_SINCE); up to 24.11 it gives the
channel to job steps launched with srun only, from 25.11 to the batch step too. With topology/block, sbatch
and srun `--segment=<n>` ask that a job's nodes come in groups of n inside one block (slurm.conf(5)
topology/block, sbatch(1) --segment); a block here is one NVLink domain.
"""

from __future__ import annotations

from typing import Any

from ...expand.nvlink import multi_node_domains
from ...expand.topology import Topology
from ...model.slurm import IMEX_SINCE, at_least
from ...validate import ValidBlueprint
from .report_table import table

BATCH_STEP_SINCE = "25.11"


def imex_section(valid: ValidBlueprint, topo: Topology) -> list[dict[str, Any]]:
    slurm = valid.blueprint.slurm
    if slurm is None:
        return []
    domains = multi_node_domains(topo, {d.name for d in topo.nodes()})
    if not domains:
        return []
    size = max(len(d) for d in domains)
    version = slurm.version
    imex = at_least(version, IMEX_SINCE)
    batch = at_least(version, BATCH_STEP_SINCE)
    rows = [
        [
            "srun job steps",
            "yes" if imex else f"no (switch/nvidia_imex came with {IMEX_SINCE})",
            "launch work that shares GPU memory across trays with srun",
        ],
        [
            "the batch step (the sbatch script itself)",
            "yes" if batch else f"no: up to 24.11 srun steps only, the batch step from {BATCH_STEP_SINCE}",
            "nothing" if batch else "do not run multi-node NVLink work in the script itself: wrap it in srun",
        ],
        [
            f"jobs larger than one domain ({size} nodes)",
            f"topology {slurm.topology}",
            f"ask for whole domains: sbatch --segment={size} (topology/block) keeps each group of {size} nodes in "
            "one NVLink domain; between domains the GPUs talk over the compute fabric only",
        ],
    ]
    return [
        table(
            "Slurm jobs in multi-node NVLink domains",
            ["what", f"Slurm {version}", "what to do"],
            rows,
            intro=f"{len(domains)} multi-node NVLink domains (IMEX). Which job steps get an IMEX channel from "
            "switch/nvidia_imex, and how jobs keep their nodes inside a domain.",
        )
    ]
