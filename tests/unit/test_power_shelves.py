"""GB200 NVL72 racks: power drawn through the power shelves with their conversion loss, and judged
against the shelves left when one A/B side fails. Figures computed by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.checks import run_checks
from clusterforge.checks.power import surviving_shelves
from clusterforge.expand import expand
from clusterforge.loader import load_blueprint
from clusterforge.plan import build_plan
from clusterforge.validate import validate

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("shelves", "feeds", "redundancy", "left"), [(8, 8, "2N", 4), (8, 8, "N+1", 7), (8, 4, "N+1", 6), (8, 8, "none", 8)]
)
def test_shelves_left_when_a_side_or_feed_fails(shelves: int, feeds: int, redundancy: str, left: int) -> None:
    # 2N: side A (half of the shelves) is lost; N+1: the feed with the most shelves (8 over 4 feeds: 2)
    assert surviving_shelves(shelves, feeds, redundancy) == left


def test_nvl72_rack_power_with_shelf_loss_and_one_side() -> None:
    valid = validate(load_blueprint(REPO / "blueprints/gb200-nvl72.yaml"))
    topo, early = expand(valid)
    findings = run_checks(valid, topo, early)
    rack = build_plan(valid, topo, findings).power.racks["A01"]
    # through the shelves: 18 trays x 5.8 kW + 9 NVLink switch trays x 1.4 kW = 117.0 kW of DC load;
    # at 97.5% the shelves draw 117.0 / 0.975 = 120.0 kW (3.0 kW lost as heat), plus two SN2201 on their
    # own PSUs at 0.16 kW each = 120.32 kW from the feeds
    assert rack.power_kw == 120.32
    # A/B sides (2N): one side of 4 x 415 V 3-phase 60 A feeds = 4 x 43.13 kW x 0.8 derating = 138.01 kW
    assert rack.usable_power_kw == 138.01
    # side A lost: 4 shelves x 6 x 5.5 kW = 132 kW carry the 117 kW, but with 5+1 kept per shelf only 110 kW
    side = [f for f in findings if f.code == "CF-POWER-006"]
    assert len(side) == 1 and "4 power shelves left carry 117.0 kW on 24 PSUs (132.0 kW)" in side[0].message
    assert "110.0 kW" in side[0].message
    assert not [f for f in findings if f.code in ("CF-POWER-001", "CF-POWER-005")]


THIN_RACK = """\
racks:
  site/nvl72-four-shelves:
    vendor: Site
    name: NVL72-style rack with four power shelves, two per side
    u_height: 48
    max_load_kg: 1600
    weight_kg: 650
    feeds: 4
    feed_redundancy: 2N
    feed: {voltage_v: 415, phases: 3, current_a: 60}
    cooling: {method: liquid, air_kw: 25, liquid_kw: 140}
    fixed_devices:
      - {model: nvidia/gb200-power-shelf, name: ps1, u: 1}
      - {model: nvidia/gb200-power-shelf, name: ps2, u: 2}
      - {model: nvidia/gb200-power-shelf, name: ps3, u: 32}
      - {model: nvidia/gb200-power-shelf, name: ps4, u: 33}
servers:
  site/tray:
    vendor: Site
    name: compute tray for the four-shelf rack
    u_height: 1
    weight_kg: 22
    max_power_w: 5800
    cooling: {method: liquid, liquid_fraction: 0.85}
    cpu: {model: NVIDIA Grace, sockets: 2, cores_per_socket: 72, threads_per_core: 1}
    memory_gb: 960
    gpus: {model: nvidia/gb200, count: 4, nvlink_domain: 72}
    rack_type: site/nvl72-four-shelves
    ports:
      - {name: bmc, count: 1, speed_gbps: 1, cage: rj45, role: oob}
"""


def test_shelves_one_side_leaves_must_carry_the_rack(tmp_path: Path) -> None:
    # 18 trays x 5.8 kW = 104.4 kW through 4 shelves, 2 per side: one side lost leaves 2 x 6 x 5.5 = 66 kW
    (tmp_path / "site.yaml").write_text(THIN_RACK, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(
        "version: 1\nname: thin\nsite: {name: t}\ncatalogs: [site.yaml]\n"
        "floor: {rows: [{name: A, racks: 1, rack_type: site/nvl72-four-shelves}]}\n"
        "node_groups: [{name: gb, model: site/tray, count: 18, role: compute, placement: {rows: [A], per_rack: 18}}]\n",
        encoding="utf-8",
    )
    valid = validate(load_blueprint(tmp_path / "b.yaml"))
    topo, early = expand(valid)
    errors = [f for f in run_checks(valid, topo, early) if f.code == "CF-POWER-005"]
    assert len(errors) == 1
    assert "2 of 4 power shelves (66.0 kW) remain for 104.4 kW" in errors[0].message
