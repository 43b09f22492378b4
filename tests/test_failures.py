"""`clusterforge failures`: what one failure takes, on the example blueprints, each figure worked out by hand from
the blueprint and the catalog in the test, and the tool's own numbers against networkx's minimum cut and
connected components (clusterforge.graph)."""

from __future__ import annotations

import io
import json
import math
from functools import cache
from pathlib import Path

import networkx as nx
import pytest
from helpers import REPO, run_cli

from clusterforge.catalog import Server
from clusterforge.catalog.models import Equipment
from clusterforge.expand.topology import Topology
from clusterforge.failures import KINDS, analyse_failures
from clusterforge.failures.baseline import Baseline, baseline, components
from clusterforge.failures.effects import Effect, effect_of
from clusterforge.failures.elements import candidates
from clusterforge.graph import bisection_gbps, cut_off_nodes, switch_graph, switch_islands, write_graph
from clusterforge.pipeline import Analysis, analyse, load_valid
from clusterforge.validate import ValidBlueprint

H200 = REPO / "blueprints" / "h200-training-pod.yaml"
GB200 = REPO / "blueprints" / "gb200-nvl72.yaml"
THREE_TIER = REPO / "tests" / "failures" / "h200-three-tier.yaml"


@cache
def analysed(path: Path) -> Analysis:
    return analyse(load_valid(path))


@cache
def base_of(path: Path) -> Baseline:
    a = analysed(path)
    return baseline(a.valid, a.topo)


def failure_of(path: Path, name: str) -> Effect:
    report = analyse_failures(analysed(path).valid, analysed(path).topo, kinds=(), names=[name])
    return report.named[0]


def test_one_of_four_spines_leaves_three_quarters_of_the_leaf_spine_bisection() -> None:
    # By hand from the blueprint: 8 rails x 1 SU; a QM9700 leaf has 64 ports, 32 down and (1:1) 32 up at 400G;
    # 8 leaves x 32 uplinks = 256 leaf-spine links over 256 / 64 = 4 spines, 64 links each.
    topo = analysed(H200).topo
    leaves, spines = topo.switches("compute", "leaf"), topo.switches("compute", "spine")
    assert (len(leaves), len(spines)) == (8, 4)
    links = 8 * 32
    assert len(topo.fabric_links("compute", "leaf-spine")) == links
    whole = links * 400 / 2 / 1000  # Tb/s: half the leaf-spine capacity
    left = (links - links // 4) * 400 / 2 / 1000
    effect = failure_of(H200, "compute-spine001")
    compute = effect.fabrics["compute"]
    assert (compute.bisection_tbps, compute.bisection_left_tbps) == (whole, left) == (51.2, 38.4)
    assert compute.bisection_left == 0.75
    assert effect.gpus_lost == effect.gpus_degraded == compute.nodes_degraded == 0  # every leaf keeps 3 spines


def test_a_rail_leaf_takes_its_rail_from_every_node_of_its_scalable_unit() -> None:
    # By hand: the gpu group has 31 nodes, one SU of 32 slots (scalable_unit: 32), so the rail-3 leaf takes the
    # third HCA of all 31; the UFM pair uses rails 1 and 2 of the free slot, so the rail-1 leaf also carries ufm001.
    bp = analysed(H200).valid.blueprint
    gpu = next(g for g in bp.node_groups if g.name == "gpu")
    nodes, gpus_per_node = gpu.count, 8
    topo = analysed(H200).topo
    rail3 = next(d.name for d in topo.switches("compute", "leaf") if d.rail == 3)
    effect = failure_of(H200, rail3)
    compute = effect.fabrics["compute"]
    assert compute.rails_lost == {3: nodes} == {3: 31}
    assert (compute.nodes_degraded, compute.nodes_cut_off, effect.gpus_lost) == (nodes, 0, 0)
    assert effect.gpus_degraded == nodes * gpus_per_node == 248
    # one leaf of 8: 7/8 of the leaf-spine links stay
    assert compute.bisection_left == 7 / 8
    rail1 = next(d.name for d in topo.switches("compute", "leaf") if d.rail == 1)
    assert failure_of(H200, rail1).fabrics["compute"].rails_lost == {1: nodes + 1}  # and ufm001's first port


def two_feed_variant(tmp_path: Path) -> Path:
    """The h200 example on a rack type with one PDU per side (two feeds, 2N) instead of the AR3300's four."""
    path = tmp_path / "h200-two-feeds.yaml"
    text = H200.read_text(encoding="utf-8").replace("apc/ar3300-4x-ap8888", "generic/air-42u-40kw")
    path.write_text(text, encoding="utf-8")
    return path


def test_losing_feed_a_of_a_2n_rack_leaves_each_node_on_half_its_psus(tmp_path: Path) -> None:
    h200 = two_feed_variant(tmp_path)
    a = analysed(h200)
    server = a.valid.catalog.require("supermicro/sys-821ge-tnhr-h200", Server)
    assert server.psus is not None
    left = server.psus.count // 2  # PSU i on feed i mod 2: three of six on each of a 2N rack's two feeds
    draw = server.max_power_w  # load factor 1.0
    assert (server.psus.count, left, left * server.psus.rating_w, draw) == (6, 3, 9000, 10200)
    effect = failure_of(h200, "A01-PDU-A")
    in_rack = [d.name for d in a.topo.nodes_in_rack("A01") if d.group == "gpu"]
    assert sorted(effect.throttled) == sorted(in_rack) and len(in_rack) == 3
    assert effect.gpus_throttled == 3 * 8 and effect.gpus_lost == 0
    assert "3 of 6 PSUs (9.0 kW) for 10.2 kW planned (short: throttles or stops)" in effect.power[0]
    # the rack itself stays up: its 30.76 kW on the one feed left, a 3-phase feed of the rack type
    rack_type = a.topo.racks["A01"].rack_type
    assert (rack_type.feeds, rack_type.feed_redundancy) == (2, "2N")
    assert base_of(h200).figures["A01"].power_kw <= rack_type.feed.capacity_kw
    assert effect.racks_down == []
    hall = failure_of(h200, "feed A")
    assert hall.gpus_throttled == 31 * 8


def test_one_of_four_pdus_of_the_example_racks_throttles_nothing() -> None:
    """The example's AR3300 racks have four AP8888 feeds: PSU i on feed i mod 4, so a node keeps 4 of its 6
    PSUs (12 kW of 3 kW PSUs) for its 10.2 kW when A01-PDU-A fails, and nothing throttles."""
    effect = failure_of(H200, "A01-PDU-A")
    assert (effect.throttled, effect.gpus_throttled, effect.gpus_lost, effect.racks_down) == ([], 0, 0, [])


def test_one_nvl72_power_shelf_leaves_the_rack_on_seven() -> None:
    a = analysed(GB200)
    catalog = a.valid.catalog
    shelf = catalog.entries["nvidia/gb200-power-shelf"]
    assert isinstance(shelf, Equipment) and shelf.psus is not None
    rack = [a.topo.devices[n] for n in base_of(GB200).rack_devices["A01"]]
    shelves = [d for d in rack if d.model == "nvidia/gb200-power-shelf"]
    assert len(shelves) == 8
    # the trays and switch trays have no PSUs of their own: the shelves carry their planned draw
    load_kw = sum(
        catalog.entries[d.model].max_power_w / 1000  # type: ignore[attr-defined]
        for d in rack
        if catalog.entries[d.model].psus is None and d.model != "nvidia/gb200-power-shelf"  # type: ignore[attr-defined]
    )
    seven_kw = 7 * shelf.psus.count * shelf.psus.rating_w / 1000
    spare_kw = 7 * shelf.psus.required * shelf.psus.rating_w / 1000
    assert (seven_kw, spare_kw) == (231.0, 192.5)
    effect = failure_of(GB200, shelves[0].name)
    assert effect.power == [
        f"A01: {load_kw:.1f} kW of trays on 7 of 8 power shelves ({seven_kw:.1f} kW; {spare_kw:.1f} kW with one PSU "
        "per shelf spare): enough, with a spare PSU per shelf"
    ]
    assert effect.gpus_lost == effect.gpus_degraded == 0 and effect.devices_down == {shelves[0].name}


def test_an_nvlink_switch_tray_slows_its_rack_domain_to_eight_ninths() -> None:
    effect = failure_of(GB200, "A01-nvsw1")
    assert (effect.domains_broken, effect.domains_degraded, effect.trays_left) == (0, 1, (8, 9))
    assert effect.nvlink_left == 8 / 9 and effect.gpus_degraded == 72


def test_a_cdu_takes_its_liquid_cooled_row_and_a_tray_breaks_its_domain() -> None:
    cdu = failure_of(GB200, "A-CDU")
    assert cdu.gpus_lost == 4 * 72 and cdu.domains_broken == 4
    assert cdu.workloads["deepseek-v3-pretrain"] == "no longer fits: needs 216 GPUs, 0 left"
    tray = failure_of(GB200, "gb001")
    assert (tray.gpus_lost, tray.domains_broken) == (4, 1)
    assert tray.workloads == {"deepseek-v3-serve": "8 of 9 replicas left: misses its targets at 64 concurrent requests"}


def test_a_single_subnet_manager_is_a_single_failure_and_a_pair_is_not() -> None:
    assert failure_of(GB200, "ufm001").subnets_without_sm == 1
    assert failure_of(H200, "ufm001").subnets_without_sm == 0


@pytest.mark.parametrize("path", [H200, GB200, THREE_TIER], ids=lambda p: p.stem)
def test_the_tools_numbers_are_networkx_min_cut_and_components(path: Path) -> None:
    """Every switch, rack and row failure (one per signature, as the analysis looks at them, and a few more): the
    bisection left is networkx's minimum cut between the leaves and the top tier, halved; the nodes cut off are
    those networkx's connected components leave without a port on the surviving island; the intact islands are
    networkx's and `Topology.switch_islands`'."""
    a, base = analysed(path), base_of(path)
    for name, fabric in base.fabrics.items():
        graph = switch_graph(a.topo, name)
        assert fabric.bisection_gbps == pytest.approx(bisection_gbps(graph))
        ours = components(list(fabric.switches), fabric.neighbours, set(), set())
        assert len(set(ours.values())) == len(switch_islands(graph)) == a.topo.switch_islands(name)
    looked = 0
    for kind in ("leaf", "spine", "core", "rack", "row", "bundle"):
        for candidate in list(candidates(base, kind))[:6]:
            effect = effect_of(base, candidate.failure)
            down, cut = effect.devices_down, candidate.failure.links
            for name, found in effect.fabrics.items():
                graph = switch_graph(a.topo, name, without=down, cut=cut)
                assert found.bisection_left_gbps == pytest.approx(bisection_gbps(graph)), candidate.failure.name
                assert found.cut_nodes == cut_off_nodes(a.topo, name, down, cut), candidate.failure.name
                looked += 1
    assert looked > 10


def test_failures_networkx_option_works_every_worst_out_again() -> None:
    result = run_cli("failures", str(THREE_TIER.relative_to(REPO)), "--networkx", "--format", "json")
    assert result.returncode == 0, result.stderr
    assert "networkx: the same bisection and nodes cut off" in result.stderr


def test_three_tiers_by_hand() -> None:
    # 3 SU x 8 rails = 24 leaves with 32 uplinks each (768 leaf-spine links), 32 spines, each 24 down and 24
    # up; 768 spine-core links need 768 / 64 = 12 cores, 2 links from every spine to each. Bisection:
    # 768 x 400 / 2 = 153.6 Tb/s. One core: 64 links of 768 gone; each spine carries min(24, 22) = 22:
    # 153.6 x 704 / 768 = 140.8 Tb/s.
    topo = analysed(THREE_TIER).topo
    assert [len(topo.switches("compute", t)) for t in ("leaf", "spine", "core")] == [24, 32, 12]
    assert len(topo.fabric_links("compute", "spine-core")) == 768
    core = failure_of(THREE_TIER, "compute-core001").fabrics["compute"]
    assert (core.bisection_tbps, core.bisection_left_tbps) == (153.6, 140.8)


@pytest.mark.parametrize("path", [H200, GB200, THREE_TIER], ids=lambda p: p.stem)
def test_one_per_signature_finds_the_same_worst_as_every_element(path: Path) -> None:
    base = base_of(path)
    for kind in KINDS:
        every = [effect_of(base, c.failure) for c in candidates(base, kind)]
        if not every:
            continue
        worst = max(e.severity_key() for e in every)
        report = analyse_failures(base.valid, base.topo, kinds=[kind])
        assert report.classes[0].worst is not None
        assert report.classes[0].worst.severity_key() == worst, kind


def test_the_blueprints_tolerance_gives_findings_in_failures_and_check(tmp_path: Path) -> None:
    text = two_feed_variant(tmp_path).read_text(encoding="utf-8")
    policy = (
        "resilience:\n"
        "  default: {max_racks_down: 0}\n"
        "  elements:\n"
        "    spine: {max_bisection_loss: 0.125}\n"
        "    pdu: {max_gpus_degraded: 0}\n"
    )
    path = tmp_path / "h200-resilience.yaml"
    path.write_text(text.replace("\nslurm:", f"\n{policy}\nslurm:", 1), encoding="utf-8")
    result = run_cli("failures", str(path), "--allow-dir", str(tmp_path), "--format", "json")
    assert result.returncode == 1, result.stderr
    listed = json.loads(result.stdout)["findings"]
    findings = {f["code"]: f for f in listed}
    assert findings["CF-FAIL-001"]["message"] == (
        "4 of 4 spine switch failures exceed max_bisection_loss 0.125: losing compute-spine001 takes 25.0% of the "
        "bisection of fabric 'compute' (38.4 of 51.2 Tb/s left)"
    )
    # the 11 racks of rows A and B hold GPU nodes, each on two PDUs (2N): 22 of the 14 x 2 PDUs throttle nodes
    assert findings["CF-FAIL-003"]["message"] == (
        "22 of 28 PDU (one rack feed) failures exceed max_gpus_degraded 0: losing A01-PDU-A leaves 24 GPUs degraded "
        "or throttled"
    )
    # any rack or row failure takes its racks down (the default limit, 0, holds for every class)
    down = {f["subject"]: f["message"] for f in listed if f["code"] == "CF-FAIL-004"}
    assert down["A01"] == "14 of 14 rack failures exceed max_racks_down 0: losing A01 takes 1 rack down (A01)"
    assert down["row A"].endswith("losing row A takes 6 racks down (A01, A02, A03, A04, A05, A06)")
    check = run_cli("check", str(path), "--allow-dir", str(tmp_path))
    assert "warning CF-FAIL-001" in check.stdout and check.returncode == 0


def test_failures_command_formats_and_element_names() -> None:
    text = run_cli("failures", str(H200.relative_to(REPO)), "--element", "spine", "--element", "feed A")
    assert text.returncode == 0, text.stderr
    assert "spine switch (4, 1 distinct): worst compute-spine001 (rack N01)" in text.stdout
    assert "compute: bisection 38.4 of 51.2 Tb/s (75.0%)" in text.stdout
    assert "feed A (feed (hall-wide)):" in text.stdout
    md = run_cli("failures", str(GB200.relative_to(REPO)), "--format", "markdown")
    assert "| NVL72 power shelf | 32 | `A01-ps1` |" in md.stdout
    data = json.loads(run_cli("failures", str(GB200.relative_to(REPO)), "--format", "json").stdout)
    assert {c["kind"] for c in data["classes"]} == set(KINDS) - {"core"}
    bad = run_cli("failures", str(H200.relative_to(REPO)), "--element", "no-such-switch")
    assert bad.returncode == 2 and "no-such-switch" in bad.stderr


@pytest.mark.parametrize("fmt", ["graphml", "gexf"])
def test_export_graphml_and_gexf_through_networkx(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"h200.{fmt}"
    result = run_cli("export", str(H200.relative_to(REPO)), "--format", fmt, "-o", str(out))
    assert result.returncode == 0, result.stderr
    read = nx.read_graphml if fmt == "graphml" else nx.read_gexf
    graph = read(out)
    topo = analysed(H200).topo
    assert graph.number_of_nodes() == len(topo.devices)
    assert graph.number_of_edges() == len(topo.links)
    assert graph.nodes["compute-spine001"]["role"] == "spine"
    assert write_graph(topo, fmt) == out.read_text(encoding="utf-8")


def test_the_switch_graph_collapses_hosts_per_group() -> None:
    graph = switch_graph(analysed(H200).topo, "compute")
    assert graph.nodes["hosts:gpu"]["nodes"] == 31
    assert sum(d["links"] for _, _, d in graph.edges("hosts:gpu", data=True)) == 31 * 8
    assert math.isclose(sum(d["capacity"] for _, _, d in graph.edges("hosts:gpu", data=True)), 31 * 8 * 400)
    buffer = io.BytesIO()
    nx.write_graphml(graph, buffer)  # the switch graph is GraphML-safe too


def test_diff_shows_how_a_change_moves_the_worst_case() -> None:
    """Growing the h200 pod to two SU doubles its spines (4 -> 8): one spine then takes 1/8, not 1/4."""
    from clusterforge.diff import diff_markdown, diff_specs

    diff = diff_specs(str(H200.relative_to(REPO)), "docs/examples/h200-training-pod-grown.yaml")
    spine = next(c for c in diff["failures"] if c["class"] == "spine")
    assert (spine["old"]["bisection_left"], spine["new"]["bisection_left"]) == (0.75, 0.875)
    text = diff_markdown(diff)
    assert "### Worst single failures (changed classes)" in text
    assert (
        "| spine switch | `compute-spine001`: 0 GPUs lost, 0 degraded, bisection 75.0% | `compute-spine001`: 0 GPUs "
        "lost, 0 degraded, bisection 87.5% |"
    ) in text


def test_the_report_shows_the_table_and_a_floor_map_per_class(monkeypatch: pytest.MonkeyPatch) -> None:
    from clusterforge.render.context import RenderContext
    from clusterforge.render.handoff import report_failures

    a = analysed(GB200)
    ctx = RenderContext(a.valid, a.topo, a.findings)
    section = report_failures.failures_section(ctx)
    rows = {row[0]: row for row in section["rows"]}
    assert rows["NVL72 power shelf"][:5] == ["NVL72 power shelf", "32", "A01-ps1", "0", "0"]
    assert rows["CDU (one row's coolant)"][3] == "288"
    assert section["chart"].count("<svg") == len(section["rows"])
    assert section["chart"].count('fill="#c0392b"') >= 4  # the CDU's four racks, at least, drawn down
    monkeypatch.setattr(report_failures, "FAILURES_MAX_LINKS", 100)  # a larger cluster: left to the command
    large = report_failures.failures_section(RenderContext(a.valid, a.topo, a.findings))
    assert large["rows"] == [] and "clusterforge failures BLUEPRINT" in large["intro"]


def test_a_suppressed_tolerance_finding_does_not_fail_the_command(tmp_path: Path) -> None:
    text = (REPO / "tests" / "failures" / "h200-resilience.yaml").read_text(encoding="utf-8")
    suppress = (
        "suppress:\n"
        "  - {code: CF-FAIL-001, reason: four spines are what one SU of the SuperPOD reference has}\n"
        "  - {code: CF-FAIL-006, target: gpu001, reason: the eval service waits for a repaired node}\n"
    )
    path = tmp_path / "accepted.yaml"
    path.write_text(text.replace("$schema=../../docs", "$schema=../docs") + suppress, encoding="utf-8")
    result = run_cli("failures", str(path), "--allow-dir", str(tmp_path), "--element", "core")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "core switch: none in this cluster" in result.stdout
    assert "suppressed: four spines are what one SU of the SuperPOD reference has" in result.stdout


def test_the_tolerance_check_the_report_and_the_command_share_one_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """`failures` on a blueprint with a tolerance worked the analysis out twice (the check, then the command),
    `diff` up to three times a side (the check, the report, its own): now once per topology."""
    from clusterforge.failures import analysis as module

    made: list[int] = []
    real = module.baseline

    def counted(valid: ValidBlueprint, topo: Topology) -> Baseline:
        made.append(1)
        return real(valid, topo)

    monkeypatch.setattr(module, "baseline", counted)
    a = analyse(load_valid(REPO / "tests" / "failures" / "h200-resilience.yaml"))
    assert any(f.code.startswith("CF-FAIL-") for f in a.findings) and len(made) == 1  # the check's
    report = analyse_failures(a.valid, a.topo)
    assert len(made) == 1 and report.findings == [f for f in report.findings if f.code.startswith("CF-FAIL-")]
    assert analyse_failures(a.valid, a.topo, kinds=("spine",)).classes[0].kind == "spine" and len(made) == 2
    again = analyse(load_valid(REPO / "tests" / "failures" / "h200-resilience.yaml"))  # another topology
    assert analyse_failures(again.valid, again.topo) is not report and len(made) == 3
