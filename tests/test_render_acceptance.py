"""The acceptance runbook's expected nccl-tests bus bandwidth per tier, against hand computations.

nccl-tests doc/PERFORMANCE.md defines busbw (all-reduce: algbw x 2(n-1)/n; all-to-all: algbw x (n-1)/n) so
that it "should reflect the speed of the hardware bottleneck". Catalog figures used by hand below: H200 and
H100 NVLink 900 GB/s both directions (450 per direction), GB200 1,800 (900); HGX nodes 8 x 400 Gb/s NDR
ports for 8 GPUs (50 GB/s per GPU), a GB200 tray 4 x 400 Gb/s for 4 GPUs, an L40S server 4 x 200 Gb/s for
8 GPUs (12.5 GB/s per GPU)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from factories import dgx_blueprint
from helpers import REPO

from clusterforge.pipeline import analyse, load_valid
from clusterforge.render.context import RenderContext
from clusterforge.render.handoff.acceptance import ACCEPTANCE_MD, render_acceptance
from clusterforge.validate import ValidBlueprint


def rows_of(text: str) -> dict[str, list[str]]:
    """tier -> the row's cells (tier, nodes, ranks, all-reduce, floor, all-to-all, floor, bound, ...)."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| ") and len(cells) >= 8 and re.fullmatch(r"[\d,.]+", cells[3]):
            rows[cells[0]] = cells
    return rows


def runbook(valid: ValidBlueprint) -> str:
    analysis = analyse(valid)
    return render_acceptance(RenderContext(valid, analysis.topo, []))[ACCEPTANCE_MD]


def example(name: str) -> dict[str, list[str]]:
    return rows_of(runbook(load_valid(REPO / "blueprints" / f"{name}.yaml")))


def test_gb200_rail_tier_over_part_of_a_domain(tmp_path: Path) -> None:
    # Leaves per scalable unit of 32 trays (not the default leaf per rack): the 32 trays are the whole first
    # rack (18 trays, 72 GPUs) and 14 of the second (56 GPUs); a GPU of the second rack reaches 56 of the 128
    # over NVLink and sends to the other 72 over its NIC: all-to-all 50 x 127 / (128 - 56) = 88.19, floor
    # 0.8 x 88.19 = 70.6 (as if both domains were whole: 50 x 127 / (128 - 72) = 113.4, floor 90.7)
    shutil.copytree(REPO / "blueprints", tmp_path / "blueprints", ignore=shutil.ignore_patterns("*.lock.yaml"))
    fabrics = tmp_path / "blueprints" / "gb200-nvl72" / "fabrics.yaml"
    text = fabrics.read_text()
    unit = "    scalable_unit: 32\n    rail_leaves: per-scalable-unit\n"
    text = text.replace("    switch_racks: [N01, N02]\n", "    switch_racks: [N01, N02]\n" + unit, 1)
    fabrics.write_text(text)
    rows = rows_of(runbook(load_valid(tmp_path / "blueprints" / "gb200-nvl72.yaml", allow=[tmp_path])))
    assert rows["rail (one scalable unit)"][2:8] == ["128", "900.0", "720.0", "88.2", "70.6", "NVLink per GPU"]


def test_h200_pod() -> None:
    rows = example("h200-training-pod")
    # inside the HGX board: NVLink, 900 / 2 = 450 GB/s for both collectives
    assert rows["NVLink domain"][2:7] == ["8", "450.0", "360.0", "450.0", "360.0"]
    # the 31 nodes of the scalable unit: all-reduce min(450, 8 GPUs x 50 GB/s) = 400;
    # all-to-all 50 x (248 - 1) / (248 - 8) = 51.46
    assert rows["rail (one scalable unit)"][1:7] == ["gpu[001-031] (31)", "248", "400.0", "320.0", "51.5", "41.2"]
    assert "spine" not in rows  # one scalable unit: rail-aligned traffic never crosses the spines


def test_gb200_nvl72() -> None:
    rows = example("gb200-nvl72")
    # one NVL72 rack: 72 GPUs, 1,800 / 2 = 900 GB/s
    assert rows["NVLink domain"][1:4] == ["gb[001-018] (18)", "72", "900.0"]
    # a leaf per rack and rail: a leaf's trays are one NVLink domain, so no rail tier of its own
    assert "rail (one scalable unit)" not in rows
    # all 288 GPUs over the spines at 1:1: all-to-all 50 x 287 / (288 - 72) = 66.44
    assert rows["spine"][2:6] == ["288", "900.0", "720.0", "66.4"]


def test_l40s_without_nvlink() -> None:
    rows = example("l40s-inference")
    assert "NVLink domain" not in rows
    # 8 servers on one leaf: 4 x 200 Gb/s / 8 GPUs = 12.5 GB/s each; all-to-all 12.5 x 63 / (64 - 8) = 14.06
    assert rows["one leaf"][2:7] == ["64", "12.5", "10.0", "14.1", "11.2"]


@pytest.mark.parametrize(("ratio", "all_reduce", "all_to_all"), [("1:1", "400.0", "50.3"), ("2:1", "200.0", "25.2")])
def test_spine_tier_at_the_oversubscription(ratio: str, all_reduce: str, all_to_all: str) -> None:
    """128 DGX H100 in 4 scalable units: over the spines the leaves' uplinks carry 1/r of their downlinks.
    all-reduce min(450, 8 x 50 / r); all-to-all 50 / r x 1023 / (1024 - 8): 50.34 at 1:1, 25.17 at 2:1."""
    rows = rows_of(runbook(dgx_blueprint(128, ratio=ratio, scalable_unit=32)))
    assert rows["spine"][1:6] == ["gpu[001-128] (128)", "1024", all_reduce, rows["spine"][4], all_to_all]
    assert rows["rail (one scalable unit)"][3] == "400.0"


def test_amd_domain_is_named_by_its_link() -> None:
    """The MI300X's 8 GPUs are joined by Infinity Fabric (catalog gpu_link): 896 GB/s both directions, 448 per
    direction; the tier and its bound say so instead of NVLink."""
    rows = example("mi300x-roce")
    assert "NVLink domain" not in rows
    domain = rows["Infinity Fabric domain"]
    assert domain[2:8] == ["8", "448.0", "358.4", "448.0", "358.4", "Infinity Fabric per GPU"]
    assert rows["one leaf"][7] == "the NICs of an Infinity Fabric domain"
