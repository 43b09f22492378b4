"""`clusterforge plan` and `export` on the example blueprints, through the real CLI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import networkx as nx
import pytest
from helpers import BLUEPRINTS, REPO, run_cli

EXAMPLES = [p.name for p in BLUEPRINTS]
SVG = "{http://www.w3.org/2000/svg}"


def plan_of(name: str) -> dict[str, Any]:
    result = run_cli("plan", f"blueprints/{name}", "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    plan: dict[str, Any] = json.loads(result.stdout)
    return plan


@pytest.mark.parametrize("name", EXAMPLES)
def test_plan_json_has_the_documented_keys(name: str) -> None:
    plan = plan_of(name)
    assert {"nodes", "gpus", "racks", "fabrics", "cables"} <= set(plan)
    for fabric in plan["fabrics"].values():
        assert set(fabric["switches"]) <= {"leaf", "spine", "core", "oob"}
        assert set(fabric["links"]) <= {"node-leaf", "leaf-peer", "leaf-spine", "spine-core", "oob", "oob-uplink"}
    cabled = sum(n for by_length in plan["cables"].values() for n in by_length.values())
    links = sum(n for fabric in plan["fabrics"].values() for n in fabric["links"].values())
    # physical cables: a twin-port cable or a splitter carries several links
    assert cabled == plan["cables_total"] < links


def test_plan_of_the_h200_pod() -> None:
    plan = plan_of("h200-training-pod.yaml")
    assert (plan["nodes"], plan["gpus"], plan["racks"], plan["racks_used"]) == (42, 248, 14, 14)
    compute = plan["fabrics"]["compute"]
    # one SU of 32 slots: 31 nodes x 8 rails, the 2 UFM ports in the free slot on rails 1-2 -> 8 leaves,
    # each sized for 32 downlinks -> 32 uplinks; 8 x 32 = 256 uplinks / 64 spine ports = 4 spines, 8 links
    # per leaf-spine pair: the DGX SuperPOD reference's 1 SU (8 leaves, 4 spines)
    assert compute["switches"] == {"leaf": 8, "spine": 4}
    assert compute["links"] == {"node-leaf": 250, "leaf-spine": 256}
    assert compute["oversubscription"] == {"leaf": 1.0}
    assert plan["nvlink_domains"] == {"8": 31}
    assert plan["scale_up_links"] == ["NVLink"]


def test_plan_names_amds_domains_by_their_link() -> None:
    """The MI300X's eight GPUs are joined by Infinity Fabric (catalog gpu_link), not NVLink: the plan and the
    report's summary say so."""
    plan = plan_of("mi300x-roce.yaml")
    assert (plan["nvlink_domains"], plan["scale_up_links"]) == ({"8": 4}, ["Infinity Fabric"])
    report = (REPO / "inventories/mi300x-roce/handoff/report.md").read_text(encoding="utf-8")
    assert "| Infinity Fabric domains | 4 × 8 GPUs |" in report and "NVLink domains" not in report


def test_plan_of_the_nvl72_system() -> None:
    plan = plan_of("gb200-nvl72.yaml")
    assert (plan["nodes"], plan["gpus"]) == (78, 288)
    assert plan["nvlink_domains"] == {"72": 4}
    # storage: an EVPN-MH leaf pair, each leaf one port of each of 72 trays (400G) and 3 login nodes (400G);
    # at 2:1 an SN5600 leaf is planned for 84 downlinks of 400G (42 cages + 21 uplinks of 800G <= 64), so
    # 21 uplinks: (72 x 400 + 3 x 400) / (21 x 800) = 30,000 / 16,800 Gb/s = 1.786
    storage = plan["fabrics"]["storage"]
    assert (storage["leaf_pairs"], storage["dual_homing"], storage["links"]["leaf-spine"]) == (1, "evpn-mh", 42)
    assert storage["oversubscription"]["leaf"] == 1.786
    # in-band on SN4600C (64 x 100G) at 4:1: a leaf keeps 2 ports for MLAG peer links and takes d downlinks
    # and ceil(d / 4) uplinks within 62 ports: d = 49, u = 13, so 49 / 13 = 3.769. 78 nodes x 2 ports (72
    # trays at 100G, 6 hosts at 25G) need two leaf pairs (49 trays on the first); 4 x 13 = 52 uplinks fit
    # one spine. Ports used: 2 x 64 on the first pair; on the second 23 trays + 3 cages of 25G hosts + 13
    # uplinks + 2 peer ports + the OOB uplinks (4 and 3 of the 7): 45 and 44.
    inband = plan["fabrics"]["inband"]
    assert (inband["switches"], inband["leaf_pairs"]) == ({"leaf": 4, "spine": 1}, 2)
    assert inband["links"] == {"node-leaf": 156, "leaf-peer": 4, "leaf-spine": 52}
    assert inband["oversubscription"]["leaf"] == round(49 / 13, 3)
    assert inband["ports_used"] == {"leaf": [2 * 64 + 45 + 44, 256], "spine": [52, 64]}


def test_plan_text_reads_well() -> None:
    result = run_cli("plan", "blueprints/l40s-inference.yaml")
    assert result.returncode == 0
    assert result.stdout.startswith("l40s-inference: 10 nodes, 64 GPUs, 3 racks used of 3 declared\n")
    assert "compute (compute, ethernet, fat-tree, 1 tier): 8 nodes, 32 ports" in result.stdout


def test_plan_of_a_broken_blueprint_fails_cleanly(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = (BLUEPRINTS[0].parent / "l40s-inference.yaml").read_text().replace("count: 8\n", "count: 9\n")
    (tmp_path / "b.yaml").write_text(text)
    result = run_cli("plan", str(tmp_path / "b.yaml"))
    assert result.returncode == 1
    assert "error CF-SPACE-002" in result.stdout and "Traceback" not in result.stderr


@pytest.mark.parametrize("name", EXAMPLES)
def test_node_link_json_round_trips_through_networkx(name: str) -> None:
    result = run_cli("export", f"blueprints/{name}", "--format", "json")
    assert result.returncode == 0
    graph = nx.node_link_graph(json.loads(result.stdout), edges="links")
    plan = plan_of(name)
    assert graph.number_of_edges() == sum(n for fabric in plan["fabrics"].values() for n in fabric["links"].values())
    roles = {data["role"] for _, data in graph.nodes(data=True) if data["kind"] == "node"}
    assert roles <= {"compute", "login", "storage", "management", "subnet-manager"}


@pytest.mark.parametrize(("name", "grouped"), [("l40s-inference.yaml", False), ("gb200-nvl72.yaml", True)])
def test_fabric_svg_from_graphviz(name: str, grouped: bool, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "fabric.svg"
    result = run_cli("export", f"blueprints/{name}", "--format", "svg", "--fabric", "compute", "-o", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    svg = ET.parse(out).getroot()
    titles = [g.findtext(f"{SVG}title") or "" for g in svg.iter(f"{SVG}g") if g.get("class") == "node"]
    if grouped:
        # 72 trays in one SU of 8 racks (144 trays, the GB200 RA's) -> 1 SU box, the UFM, 4 rail leaf groups
        # and one spine plane
        assert sorted(titles) == sorted(
            [
                "gb SU1",
                "ufm",
                "compute spine plane 1",
                *(f"compute leaf rail {r}" for r in range(1, 5)),
            ]
        )
    else:
        assert sorted(titles) == sorted(["compute-leaf001", *(f"inf00{i}" for i in range(1, 9))])


def test_unknown_fabric_is_a_usage_error() -> None:
    result = run_cli("export", "blueprints/l40s-inference.yaml", "--format", "dot", "--fabric", "storage")
    assert result.returncode == 2
    assert "unknown fabric 'storage'" in result.stderr
