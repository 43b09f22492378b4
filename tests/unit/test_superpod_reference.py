"""The DGX SuperPOD compute fabric, as NVIDIA publishes it, from blueprints a user would write.

Sources (figures copied into the tables below):
- H100: NVIDIA DGX SuperPOD Reference Architecture, DGX H100 (RA-11333-001), "Network Fabrics",
  Table 4 "Compute fabric component count": 1-4 SU of 32 nodes where one DGX is removed to make room
  for the UFM connections; cable counts "Compute and UFM" and "Spine-Leaf".
  https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/network-fabrics.html
- B200: NVIDIA DGX SuperPOD Reference Architecture, DGX B200, "Network Fabrics", Table 4 "Compute fabric
  component count" (the H100 table's rows again: 1-4 SU of 31 nodes and the UFM cables), and
  "DGX SuperPOD Architecture", the table of
  switch and cable counts for 2-64 SU (leaf, spine, core; node-leaf, leaf-spine, spine-core).
  https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-b200/latest/dgx-superpod-architecture.html
Both: SU = 32 DGX nodes, 8 rails of 400G NDR, QM9700 switches (64 ports), non-blocking.
- GB200: "NVIDIA DGX SuperPOD: Next Generation Scalable Infrastructure for AI Factories Reference
  Architecture Featuring NVIDIA DGX GB200", section 4.2 "Compute Fabric", Table 4.1 (figures as issue 35
  quotes them; the stored copy of the page shows the section's opening, not the table): per SU 8 DGX
  GB200 racks (18 trays of 4 NDR ports), 4 rail groups of 8 leaves (one per rack) and 6 spines; 2/4/8/16
  SU give leaves 64/128/256/512, spines 48/96/192/384, cores 18/36/72/144 (switch counts only; the cables
  below are the hand computation: 72 ports a rack, every tier non-blocking).
  https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-gb200/latest/network-fabrics.html
- B300 XDR: NVIDIA SuperPOD with DGX B300 Systems, NVIDIA Quantum-X800 InfiniBand switching and AC Power
  Reference Architecture (RA-11339-001 V01), "DGX SuperPOD Architecture", Table 3 "Example Compute Fabric
  Components": SU = 72 DGX B300, 8 rails of 800G XDR (ConnectX-8), Q3400 switches (144 ports); leaf,
  spine, node-leaf and leaf-spine cables.
  https://docs.nvidia.com/dgx-superpod/reference-architecture/scalable-infrastructure-b300-xdr/latest/dgx-superpod-architecture.html
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from clusterforge.expand import expand
from clusterforge.loader import load_blueprint
from clusterforge.plan import build_plan
from clusterforge.validate import validate

# (SU, nodes, GPUs, leaf, spine, compute-and-UFM cables, spine-leaf cables); 4 UFM cables in every row
H100_WITH_UFM = [
    (1, 31, 248, 8, 4, 252, 256),
    (2, 63, 504, 16, 8, 508, 512),
    (3, 95, 760, 24, 16, 764, 768),
    (4, 127, 1016, 32, 16, 1020, 1024),
]

# (SU, nodes, GPUs, leaf, spine, core, node-leaf, leaf-spine, spine-core); 0 = "-" in the table
B200_FULL_SU = [
    (2, 64, 512, 16, 8, 0, 512, 512, 0),
    (4, 128, 1024, 32, 16, 0, 1024, 1024, 0),
    (8, 256, 2048, 64, 32, 0, 2048, 2048, 0),
    (16, 512, 4096, 128, 128, 64, 4096, 4096, 4096),
    (32, 1024, 8192, 256, 256, 128, 8192, 8192, 8192),
    (64, 2048, 16384, 512, 512, 256, 16384, 16384, 16384),
]

# (SU, leaf, spine, core) of the GB200 RA's Table 4.1
GB200_TABLE_4_1 = [(2, 64, 48, 18), (4, 128, 96, 36), (8, 256, 192, 72), (16, 512, 384, 144)]

# (SU, nodes, GPUs, leaf, spine, node-leaf, leaf-spine) of the B300 XDR RA's Table 3. Its 18-SU row prints
# 9,216 GPUs, which is 1,296 nodes x 8 = 10,368 (as its cable counts are): the table's slip, tested as 10,368.
B300_XDR_TABLE_3 = [
    (1, 72, 576, 8, 4, 576, 576),
    (2, 144, 1152, 16, 8, 1152, 1152),
    (4, 288, 2304, 32, 18, 2304, 2304),
    (8, 576, 4608, 64, 36, 4608, 4608),
    (18, 1296, 10368, 144, 72, 10368, 10368),
]


def rows_of(prefix: str, racks: int, rack_type: str = "generic/rear-door-48u-60kw") -> tuple[list[str], list[str]]:
    """Row lines of `racks` racks (at most 200 a row, the schema's limit) and the rack names they make."""
    lines, names = [], []
    for i in range(math.ceil(racks / 200)):
        count = min(200, racks - 200 * i)
        lines.append(
            f"    - {{name: {prefix}{i + 1}, racks: {count}, rack_type: {rack_type}, "
            f'rack_names: "{{row}}-{{index:03d}}"}}'
        )
        names += [f"{prefix}{i + 1}-{n:03d}" for n in range(1, count + 1)]
    return lines, names


def superpod_yaml(
    nodes: int,
    model: str,
    per_rack: int,
    ufm: int,
    *,
    node_rack: str = "generic/rear-door-48u-60kw",
    switch: str = "nvidia/qm9700",
    fabric: str = "scalable_unit: 32",
    switch_racks: int = 0,
) -> str:
    """The blueprint an architect writes for a SuperPOD: DGX nodes (or rack-scale trays), UFM appliances,
    a rail-optimized non-blocking InfiniBand fabric (QM9700 with 32-node scalable units unless told), and
    racks for it all."""
    node_rows, _ = rows_of("A", math.ceil(nodes / per_rack), node_rack)
    network_rows, network_racks = rows_of("N", switch_racks or 2 * math.ceil(nodes * 8 * 3 / 32 / 40) + 1)
    node_row_names = ", ".join(f"A{i + 1}" for i in range(len(node_rows)))
    ufm_group = (
        f"  - {{name: ufm, model: generic/cpu-1u-ndr, count: {ufm}, role: subnet-manager, "
        f"placement: {{racks: [{network_racks[-1]}]}}}}\n"
        if ufm
        else ""
    )
    rows = "\n".join(node_rows + network_rows)
    return f"""version: 1
name: superpod-{nodes}
site: {{name: test hall}}
floor:
  rows:
{rows}
node_groups:
  - {{name: dgx, model: {model}, count: {nodes}, role: compute,
     placement: {{rows: [{node_row_names}], per_rack: {per_rack}}}}}
{ufm_group}fabrics:
  compute:
    kind: compute
    technology: infiniband
    topology: rail-optimized
    leaf: {switch}
    spine: {switch}
    core: {switch}
    oversubscription: "1:1"
    {fabric}
    ipv4_pool: 10.0.0.0/16
    switch_racks: [{", ".join(network_racks)}]
  oob: {{kind: oob, switch: nvidia/sn2201, ipv4_pool: 172.16.0.0/16, gateway: 172.16.0.1}}
"""


def gb200_yaml(trays: int, fabric: str) -> str:
    """GB200 NVL72 trays, 18 a rack in NVL72 racks, with `fabric` lines in the compute fabric."""
    return superpod_yaml(trays, "nvidia/gb200-nvl72-tray", 18, 0, node_rack="nvidia/gb200-nvl72-rack", fabric=fabric)


def plan_of(tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "superpod.yaml"
    path.write_text(text)
    valid = validate(load_blueprint(path))
    topo, findings = expand(valid)
    return build_plan(valid, topo, findings).as_dict()


@pytest.mark.parametrize("model", ["nvidia/dgx-h100", "nvidia/dgx-b200"])
@pytest.mark.parametrize("row", H100_WITH_UFM, ids=[f"{r[0]}su" for r in H100_WITH_UFM])
def test_h100_and_b200_table_4_with_ufm(tmp_path: Path, row: tuple[int, ...], model: str) -> None:
    """The H100 RA's Table 4 and the B200 RA's Table 4 ("Network Fabrics", Compute fabric component count)
    print the same rows: 31 nodes an SU, a DGX left out for the UFM connections."""
    _su, nodes, gpus, leaves, spines, compute_cables, spine_leaf = row
    # 4 UFM appliances of one NDR port each: the table's compute-and-UFM cables exceed 8 x nodes by 4
    plan = plan_of(tmp_path, superpod_yaml(nodes, model, 4 if model.endswith("h100") else 3, ufm=4))
    fabric = plan["fabrics"]["compute"]
    assert plan["gpus"] == gpus
    assert fabric["switches"] == {"leaf": leaves, "spine": spines}
    assert fabric["links"] == {"node-leaf": compute_cables, "leaf-spine": spine_leaf}
    assert fabric["subnets"] == 1
    assert [f["code"] for f in plan["findings"] if f["severity"] != "info"] == []


@pytest.mark.parametrize("row", B200_FULL_SU, ids=[f"{r[0]}su" for r in B200_FULL_SU])
def test_b200_table_full_scalable_units(tmp_path: Path, row: tuple[int, ...]) -> None:
    _su, nodes, gpus, leaves, spines, cores, node_leaf, leaf_spine, spine_core = row
    plan = plan_of(tmp_path, superpod_yaml(nodes, "nvidia/dgx-b200", 3, ufm=0))
    fabric = plan["fabrics"]["compute"]
    assert plan["gpus"] == gpus
    expected = {"leaf": leaves, "spine": spines} | ({"core": cores} if cores else {})
    assert fabric["switches"] == expected
    links = {"node-leaf": node_leaf, "leaf-spine": leaf_spine} | ({"spine-core": spine_core} if cores else {})
    assert fabric["links"] == links
    assert fabric["tiers"] == (3 if cores else 2)
    assert fabric["subnets"] == 1


def test_ufm_takes_the_leaf_ports_of_the_node_left_out(tmp_path: Path) -> None:
    # 127 nodes fill SU 1-3 and 31 slots of SU 4; the 4 UFM ports take slot 32 of SU 4 on rails 1-4.
    path = tmp_path / "superpod.yaml"
    path.write_text(superpod_yaml(127, "nvidia/dgx-h100", 4, ufm=4))
    topo, _ = expand(validate(load_blueprint(path)))
    ufm_leaves = [
        (topo.devices[link.b].su, topo.devices[link.b].rail)
        for link in topo.fabric_links("compute", "node-leaf")
        if link.a.startswith("ufm")
    ]
    assert ufm_leaves == [(4, 1), (4, 2), (4, 3), (4, 4)]
    # every leaf carries 32 uplinks (sized for the full SU), the UFM leaves 32 downlinks, the others 31 in SU 4
    per_leaf = Counter(link.a for link in topo.fabric_links("compute", "leaf-spine"))
    assert set(per_leaf.values()) == {32}


def test_plan_command_shows_the_reference_design(tmp_path: Path) -> None:
    path = tmp_path / "superpod.yaml"
    path.write_text(superpod_yaml(31, "nvidia/dgx-h100", 4, ufm=4))
    out = subprocess.run(
        [sys.executable, "-m", "clusterforge", "plan", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    fabric = json.loads(out.stdout)["fabrics"]["compute"]
    assert fabric["switches"] == {"leaf": 8, "spine": 4}
    assert fabric["uplinks_for"] == "planned"


@pytest.mark.parametrize("row", GB200_TABLE_4_1, ids=[f"{r[0]}su" for r in GB200_TABLE_4_1])
def test_gb200_table_4_1_rail_groups(tmp_path: Path, row: tuple[int, ...]) -> None:
    su, leaves, spines, cores = row
    racks = 8 * su
    # the RA's three tiers; a leaf per rack and rail, rail-group spines and an SU of 8 racks are the defaults
    # for rack-scale NVLink systems
    plan = plan_of(tmp_path, gb200_yaml(18 * racks, "tiers: 3"))
    fabric = plan["fabrics"]["compute"]
    assert plan["gpus"] == 72 * racks
    assert fabric["scalable_unit"] == 144
    assert fabric["switches"] == {"leaf": leaves, "spine": spines, "core": cores}
    # by hand: 18 trays x 4 rails a rack; a leaf's 18 downlinks and 18 uplinks (3 to each of its group's 6
    # spines); a spine's 24 down and 24 up; each core's 64 ports all in use
    ports = 72 * racks
    assert fabric["links"] == {"node-leaf": ports, "leaf-spine": ports, "spine-core": ports}
    assert ports == 64 * cores
    assert [f["code"] for f in plan["findings"] if f["severity"] != "info"] == []


def test_gb200_rail_group_spines_serve_one_rail_of_one_scalable_unit(tmp_path: Path) -> None:
    path = tmp_path / "gb200.yaml"
    path.write_text(gb200_yaml(288, "tiers: 3"))
    topo, _ = expand(validate(load_blueprint(path)))
    leaf_racks = {
        link.b: {topo.devices[other.a].rack for other in topo.fabric_links("compute", "node-leaf") if other.b == link.b}
        for link in topo.fabric_links("compute", "node-leaf")
    }
    assert all(len(racks) == 1 for racks in leaf_racks.values())  # a leaf per rack
    groups: dict[str, set[tuple[int | None, int | None]]] = {}
    for link in topo.fabric_links("compute", "leaf-spine"):
        leaf = topo.devices[link.a]
        groups.setdefault(link.b, set()).add((leaf.su, leaf.rail))
    assert all(len(g) == 1 for g in groups.values())  # each spine: one rail of one SU
    per_pair = Counter((link.a, link.b) for link in topo.fabric_links("compute", "leaf-spine"))
    assert set(per_pair.values()) == {3}


def test_pods_when_asked_give_the_spine_count_the_issue_reported(tmp_path: Path) -> None:
    # spine_groups: pods is the H100/B200 way: pods of 32 leaves across rails, 18 spines each
    text = gb200_yaml(288, "tiers: 3\n    spine_groups: pods")
    assert plan_of(tmp_path, text)["fabrics"]["compute"]["switches"] == {"leaf": 64, "spine": 36, "core": 18}


@pytest.mark.parametrize("row", B300_XDR_TABLE_3, ids=[f"{r[0]}su" for r in B300_XDR_TABLE_3])
def test_b300_xdr_table_3(tmp_path: Path, row: tuple[int, ...]) -> None:
    _su, nodes, gpus, leaves, spines, node_leaf, leaf_spine = row
    text = superpod_yaml(nodes, "nvidia/dgx-b300", 3, 0, switch="nvidia/q3400", fabric="scalable_unit: 72")
    plan = plan_of(tmp_path, text)
    fabric = plan["fabrics"]["compute"]
    assert plan["gpus"] == gpus
    assert fabric["switches"] == {"leaf": leaves, "spine": spines}
    assert fabric["links"] == {"node-leaf": node_leaf, "leaf-spine": leaf_spine}
    assert fabric["tiers"] == 2 and fabric["subnets"] == 1
    assert [f["code"] for f in plan["findings"] if f["severity"] != "info"] == []


def test_b300_xdr_links_are_cabled_with_xdr_optics(tmp_path: Path) -> None:
    path = tmp_path / "b300.yaml"
    path.write_text(superpod_yaml(72, "nvidia/dgx-b300", 3, 0, switch="nvidia/q3400", fabric="scalable_unit: 72"))
    topo, _ = expand(validate(load_blueprint(path)))
    modules = Counter((link.tier, link.a_module, link.b_module) for link in topo.fabric_links("compute"))
    assert modules == {
        ("node-leaf", "nvidia/mms4a20-xm800", "nvidia/mms4a00-xm"): 576,
        ("leaf-spine", "nvidia/mms4a00-xm", "nvidia/mms4a00-xm"): 576,
    }


@pytest.mark.parametrize(("su", "cores"), [(20, 80), (24, 96)])
def test_the_core_tier_is_the_fewest_for_its_links(tmp_path: Path, su: int, cores: int) -> None:
    # B200 grown past the table: 32 spine uplinks x 32 spines a pod; a core group per spine position would
    # take 3 (20 SU) or 4 (24 SU) cores each, 96 or 128; the links need 5,120 / 64 = 80 and 6,144 / 64 = 96
    plan = plan_of(tmp_path, superpod_yaml(32 * su, "nvidia/dgx-b200", 3, 0))
    fabric = plan["fabrics"]["compute"]
    assert fabric["switches"]["core"] == cores
    assert fabric["links"]["spine-core"] == 64 * cores


def test_rail_leaves_can_be_asked_either_way(tmp_path: Path) -> None:
    # per scalable unit on GB200 trays (SU of 32): 72 trays cut across racks, 3 leaves a rail, the old layout
    gb200 = gb200_yaml(72, "scalable_unit: 32\n    rail_leaves: per-scalable-unit")
    assert plan_of(tmp_path, gb200)["fabrics"]["compute"]["switches"]["leaf"] == 12
    # per rack on DGX B200 (3 a rack): 9 nodes (72 ports, past one switch) in 3 racks, a leaf per rack and rail
    b200 = superpod_yaml(9, "nvidia/dgx-b200", 3, 0, fabric="scalable_unit: 32\n    rail_leaves: per-rack")
    (tmp_path / "b").mkdir()
    assert plan_of(tmp_path / "b", b200)["fabrics"]["compute"]["switches"]["leaf"] == 24
