"""The rendered InfiniBand files proven by the real tools: ibsim simulates each example's planned fabric from
topology.net, OpenSM (with the rendered opensm.conf, root GUIDs and partitions) must accept it as a fat tree,
configure every switch and bring the subnet up without an ERR line, and ibnetdiscover must find every planned
cable. A fabric of 4,096 host adapters over three tiers is brought up the same way; a fabric with a leaf cut
off from a spine must be refused by OpenSM's fat-tree engine and by our own checks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from factories import dgx_blueprint
from helpers import REPO
from ib_harness import SubnetRun, bring_up, require_tools
from ib_topology_edit import NetFile

from clusterforge import codes
from clusterforge.checks.context import CheckContext
from clusterforge.checks.fat_tree import check_fat_trees, level_faults
from clusterforge.expand.topology import Topology
from clusterforge.output.pieces import whole
from clusterforge.pipeline import Analysis, analyse, load_valid
from clusterforge.render.context import RenderContext
from clusterforge.render.infiniband.infiniband import render_infiniband
from clusterforge.validate import ValidBlueprint
from clusterforge.verify import verify

EXAMPLES = ["h200-training-pod", "gb200-nvl72"]
"""The examples with an InfiniBand fabric (l40s-inference is RoCE only)."""


def rendered(valid: ValidBlueprint, topo: Topology, folder: Path) -> Path:
    """Write the infiniband family of `valid` under `folder`; return its compute subnet's folder."""
    for path, text in render_infiniband(RenderContext(valid, topo, [])).items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(whole(text), encoding="utf-8")
    return folder / "infiniband" / "compute"


@pytest.fixture(scope="session")
def examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Analysis, Path, SubnetRun]]:
    """Each example's analysis, its rendered compute subnet and one bring-up of it (shared by the tests)."""
    require_tools()
    found = {}
    for name in EXAMPLES:
        analysis = analyse(load_valid(REPO / "blueprints" / f"{name}.yaml"))
        folder = rendered(analysis.valid, analysis.topo, tmp_path_factory.mktemp(name))
        found[name] = (analysis, folder, bring_up(folder, folder / "run"))
    return found


def cables_in(net_text: str) -> int:
    """Cables of a topology file: every cable is written at both of its ends."""
    return sum(1 for line in net_text.splitlines() if line.startswith("[")) // 2


def discovered_links(ports_output: str) -> int:
    """Links of `ibnetdiscover -p`: each is listed from both of its ends; unconnected ports have no ' - '."""
    return sum(1 for line in ports_output.splitlines() if " - " in line) // 2


def assert_fat_tree_up(run: SubnetRun) -> None:
    assert run.opensm_rc == 0
    assert run.errors() == []
    assert re.search(r"FatTree rank \(roots to leaf switches\): \d", run.opensm_log)
    assert "ftree tables configured on all switches" in run.opensm_log
    assert "SUBNET UP" in run.opensm_log


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_fabric_comes_up_as_a_fat_tree(
    examples: dict[str, tuple[Analysis, Path, SubnetRun]], name: str
) -> None:
    analysis, folder, run = examples[name]
    conf = (folder / sorted(p.name for p in folder.glob("opensm*.conf"))[0]).read_text(encoding="utf-8")
    assert "routing_engine ftree" in conf
    assert_fat_tree_up(run)
    # every planned cable, counted in the topology file, is a link ibnetdiscover found
    planned = sum(1 for link in analysis.topo.fabric_links("compute") if link.tier in ("node-leaf", "leaf-spine"))
    assert cables_in((folder / "topology.net").read_text(encoding="utf-8")) == planned
    assert discovered_links(run.discovered) == planned
    # and each is the planned one, end for end
    discovered = folder / "discovered.txt"
    discovered.write_text(run.discovered, encoding="utf-8")
    result = verify(analysis.valid, analysis.topo, [discovered])
    assert [c.matched for c in result.comparisons] == [planned]
    assert result.problems == []


def test_opensm_ranks_the_spines_as_roots_and_the_master_has_the_higher_priority(
    examples: dict[str, tuple[Analysis, Path, SubnetRun]], tmp_path: Path
) -> None:
    _, folder, run = examples["h200-training-pod"]
    # h200: 8 rail leaves under 4 spines; ranked from the adapters, the spines are the roots
    assert "Fabric has 4 switches at rank 0 (roots)" in run.opensm_log
    assert len(re.findall(r"^0x[0-9a-f]{16}$", (folder / "root-guids.conf").read_text(), re.M)) == 4
    # the root GUID file, once enabled, names the same four switches
    conf = (folder / "opensm-ufm001.conf").read_text(encoding="utf-8")
    enabled = tmp_path / "opensm-ufm001.conf"
    enabled.write_text(conf.replace("# root_guid_file", "root_guid_file"), encoding="utf-8")
    with_roots = bring_up(folder, tmp_path / "run", conf_file=enabled)
    assert_fat_tree_up(with_roots)
    assert "Fabric has 4 switches at rank 0 (roots)" in with_roots.opensm_log
    master = (folder / "opensm-ufm001.conf").read_text(encoding="utf-8")
    standby = (folder / "opensm-ufm002.conf").read_text(encoding="utf-8")
    assert "sm_priority 15" in master and "sm_priority 14" in standby
    # the master subnet manager's adapter heads the topology file: ibsim attaches OpenSM to the first node
    assert re.search(r'^Hca 1 "ufm001 ib1"$', (folder / "topology.net").read_text(), re.M)


def h200_with_partition(folder: Path) -> Path:
    """The h200 example with a P_Key for its GPU nodes, written into `folder`."""
    text = (REPO / "blueprints" / "h200-training-pod.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "    scalable_unit: 32\n",
        "    scalable_unit: 32\n    partitions:\n      - {name: training, pkey: 0x0a01, node_groups: [gpu]}\n",
    )
    blueprint = folder / "h200.yaml"
    blueprint.write_text(text, encoding="utf-8")
    return blueprint


def test_partitions_reach_opensm(tmp_path: Path) -> None:
    """A P_Key of the blueprint lands in partitions.conf with the GPU nodes' port GUIDs; OpenSM parses it. Both
    IPoIB partitions ask for a 4096-byte broadcast group (mtu=5, IBTA code; opensm(8) mgroup_flag: 'mtu ...
    default is 4 (2048)'): on main they had none, so IPoIB stayed at 2K."""
    blueprint = h200_with_partition(tmp_path)
    analysis = analyse(load_valid(blueprint))
    folder = rendered(analysis.valid, analysis.topo, tmp_path)
    partitions = (folder / "partitions.conf").read_text(encoding="utf-8")
    line = next(line for line in partitions.splitlines() if line.startswith("training="))
    assert line.startswith("training=0x0a01, ipoib, mtu=5 : ")
    assert "Default=0x7fff, ipoib, mtu=5 : ALL=full;" in partitions.splitlines()
    assert line.count("=full") == 31 * 8  # 31 GPU nodes x 8 rails; the UFM ports are not members
    run = bring_up(folder, tmp_path / "run")
    assert_fat_tree_up(run)
    assert "partition" not in " ".join(run.errors()).lower()


def test_4096_host_adapters_over_three_tiers(tmp_path: Path) -> None:
    """512 DGX H100 (16 scalable units): 128 leaves, 128 spines and 64 cores, as the SuperPOD tables give."""
    valid = dgx_blueprint(512, scalable_unit=32)
    analysis = analyse(valid)
    folder = rendered(valid, analysis.topo, tmp_path)
    net = (folder / "topology.net").read_text(encoding="utf-8")
    assert net.count("\nHca 1 ") == 4096
    assert net.count("\nSwitch ") == 128 + 128 + 64
    assert "routing_engine ftree" in (folder / "opensm.conf").read_text(encoding="utf-8")
    run = bring_up(folder, tmp_path / "run")
    assert_fat_tree_up(run)
    assert "FatTree rank (roots to leaf switches): 3" in run.opensm_log
    assert discovered_links(run.discovered) == cables_in(net) == 4096 + 4096 + 4096


def test_a_partial_last_pod_is_routed_with_updn_and_comes_up(tmp_path: Path) -> None:
    """352 DGX H100 = 88 leaves: pods of 32 leaves, two full and one of 24, whose 32 spines meet 24 leaves
    each. A core group per spine position (32 + 32 + 24 uplinks) would take 2 cores each, 64 for 2,816 links;
    the core tier takes the fewest, 44 (2,816 / 64 ports), in one group, each spine's 32 or 24 uplinks one
    a core round the group, so our check says no fat tree and the configuration routes with updn. OpenSM
    agrees: given such a fabric its ftree engine refuses it even when the spine-core pairs are made even
    (ERR AB0A, different numbers of downward port groups: the partial pod's spines meet fewer leaves;
    tried 2026-12-03)."""
    valid = dgx_blueprint(352, scalable_unit=32)
    analysis = analyse(valid)
    assert codes.NOT_A_FAT_TREE in {f.code for f in analysis.findings}
    folder = rendered(valid, analysis.topo, tmp_path)
    net = (folder / "topology.net").read_text(encoding="utf-8")
    assert net.count("\nSwitch ") == 88 + 96 + 44
    assert "routing_engine updn" in (folder / "opensm.conf").read_text(encoding="utf-8")
    run = bring_up(folder, tmp_path / "run")
    assert run.opensm_rc == 0
    assert run.errors() == []
    assert "SUBNET UP" in run.opensm_log
    assert discovered_links(run.discovered) == cables_in(net) == 2816 * 3


def without_links(topo: Topology, dropped: set[tuple[str, str]]) -> Topology:
    """`topo` less the links between the given device pairs."""
    copy = Topology(topo.name)
    for rack in topo.racks.values():
        copy.add_rack(rack)
    for device in topo.devices.values():
        copy.add_device(device)
    for link in topo.links:
        if (link.a, link.b) not in dropped:
            copy.add_link(link)
    copy.fabrics = topo.fabrics
    return copy


def test_a_leaf_cut_off_from_a_spine_is_refused_by_opensm_and_by_our_checks(
    examples: dict[str, tuple[Analysis, Path, SubnetRun]], tmp_path: Path
) -> None:
    analysis, folder, _ = examples["h200-training-pod"]
    net = NetFile((folder / "topology.net").read_text(encoding="utf-8"))
    cut = [p for p, (remote, _) in net.ports["compute-leaf003"].items() if remote == "compute-spine002"]
    assert len(cut) == 8  # 32 uplinks over 4 spines
    for port in cut:
        net.unplug("compute-leaf003", port)
    broken = tmp_path / "topology.net"
    broken.write_text(net.text(), encoding="utf-8")
    run = bring_up(folder, tmp_path / "run", net_file=broken)
    # OpenSM's engine: the fabric is no fat tree, so it falls back to min-hop (and still exits 0)
    assert run.opensm_rc == 0
    assert any(re.search(r"ERR AB0D: Fabric topology hasn't been identified as FatTree", e) for e in run.errors())
    assert "ftree tables configured on all switches" not in run.opensm_log
    assert "minhop tables configured on all switches" in run.opensm_log
    # our check on the planned topology without those links
    topo = without_links(analysis.topo, {("compute-leaf003", "compute-spine002")})
    findings = list(check_fat_trees(CheckContext(analysis.valid, topo)))
    assert [f.code for f in findings] == [codes.NOT_A_FAT_TREE]
    assert "compute-leaf003 has no link to compute-spine002" in findings[0].message
    # and verify on what was discovered: the 8 cables missing, and the tree broken
    discovered = tmp_path / "discovered.txt"
    discovered.write_text(run.discovered, encoding="utf-8")
    problems = verify(analysis.valid, analysis.topo, [discovered]).problems
    assert sorted(p.kind for p in problems) == ["missing"] * 8 + ["not-fat-tree"]
    assert all("compute-leaf003" in p.message for p in problems)


def test_the_fat_tree_rule_by_hand() -> None:
    # two leaves under two spines; leaf b misses spine y
    assert level_faults(["a", "b"], [("a", "x"), ("a", "y"), ("b", "x")]) == ["b has no link to y"]
    assert level_faults(["a", "b", "c"], [("a", "x"), ("b", "x")]) == ["c has no uplink"]
    # two pods, each complete: no fault
    assert level_faults(["a", "b", "c", "d"], [("a", "x"), ("b", "x"), ("c", "z"), ("d", "z")]) == []
    # every pair must have the same number of links (2 here), as OpenSM's fat-tree engine requires
    pairs = [("a", "x"), ("a", "x"), ("a", "y"), ("a", "y"), ("b", "x"), ("b", "x"), ("b", "y")]
    assert level_faults(["a", "b"], pairs) == ["b has 1 link to y, where its group has 2"]


def test_examples_route_with_ftree_and_a_single_switch_with_updn(tmp_path: Path) -> None:
    valid = dgx_blueprint(4, tiers=1)
    analysis = analyse(valid)
    folder = rendered(valid, analysis.topo, tmp_path)
    assert "routing_engine updn" in (folder / "opensm.conf").read_text(encoding="utf-8")


def test_per_rail_planes_are_subnets_of_their_own(tmp_path: Path) -> None:
    """1,100 DGX H100 with `planes: per-rail` over two tiers: 8 disjoint planes, each a subnet with its own
    files; a plane holds only its rail's adapters (rail 3 is mlx5_4 on a DGX H100). Its 35 leaves spread their
    uplinks over the spines 1 or 2 links a pair, which OpenSM's fat-tree engine refuses (ERR AB0B, measured):
    so the configuration routes it with updn, which OpenSM brings up without an error."""
    valid = dgx_blueprint(1100, planes="per-rail", tiers=2, core=None, scalable_unit=32)
    analysis = analyse(valid)
    rendered(valid, analysis.topo, tmp_path)
    planes = sorted(p.name for p in (tmp_path / "infiniband" / "compute").iterdir())
    assert planes == [f"plane{k}" for k in range(1, 9)]
    net = (tmp_path / "infiniband" / "compute" / "plane3" / "topology.net").read_text(encoding="utf-8")
    adapters = re.findall(r'^Hca 1 "(\S+) (\S+)"$', net, re.M)
    assert len(adapters) == 1100 and {device for _, device in adapters} == {"mlx5_4"}
    folder = tmp_path / "infiniband" / "compute" / "plane3"
    conf = (folder / "opensm.conf").read_text(encoding="utf-8")
    assert "routing_engine updn" in conf and "has 1 link to compute-spine" in conf
    run = bring_up(folder, tmp_path / "run")
    assert run.opensm_rc == 0 and run.errors() == [] and "SUBNET UP" in run.opensm_log
    assert "updn tables configured on all switches" in run.opensm_log
    # the same plane under fat-tree routing, ranked from the adapters: OpenSM's engine refuses it, as our rule said
    ftree = tmp_path / "ftree.conf"
    strict = conf.replace("routing_engine updn", "routing_engine ftree").replace(
        "\nroot_guid_file", "\n# root_guid_file"
    )
    ftree.write_text(strict, encoding="utf-8")
    refused = bring_up(folder, tmp_path / "run-ftree", conf_file=ftree)
    assert any("ERR AB0B" in line for line in refused.errors())
    assert [f.code for f in analysis.findings if f.code == codes.NOT_A_FAT_TREE] == [codes.NOT_A_FAT_TREE]


def test_the_subnet_manager_on_the_switches() -> None:
    """`subnet_manager: switches`: the MLNX-OS commands of the user manual (`ib smnode <name> enable`,
    `sm-priority`) for the first two spines, master 15 and standby 14; the OpenSM files stay for a host."""
    valid = dgx_blueprint(64, scalable_unit=32, subnet_manager="switches")
    analysis = analyse(valid)
    files = {
        path: whole(text)
        for path, text in render_infiniband(RenderContext(valid, analysis.topo, analysis.findings)).items()
    }
    sm = sorted(name for name in files if name.endswith(".mlnxos"))
    assert sm == ["infiniband/compute/sm-compute-spine001.mlnxos", "infiniband/compute/sm-compute-spine002.mlnxos"]
    master = files[sm[0]].splitlines()
    assert master[-2:] == ["ib smnode compute-spine001 enable", "ib smnode compute-spine001 sm-priority 15"]
    assert files[sm[1]].splitlines()[-1] == "ib smnode compute-spine002 sm-priority 14"
    assert "(this subnet: 536)" in files[sm[0]]  # 512 host ports, 16 leaves, 8 spines
    assert codes.SWITCH_SM_TOO_MANY_NODES not in {f.code for f in analysis.findings}


def test_the_switches_subnet_manager_refuses_a_fabric_past_2048_nodes() -> None:
    # 288 DGX H100 x 8 ports = 2,304 host adapters, past the 2,048 nodes of MLNX-OS's embedded SM; switches:
    # 72 leaves in pods of 32, 32 and 8 with 32 + 32 + 8 spines, and 2,304 spine-core links on 36 cores
    analysis = analyse(dgx_blueprint(288, scalable_unit=32, subnet_manager="switches"))
    (finding,) = [f for f in analysis.findings if f.code == codes.SWITCH_SM_TOO_MANY_NODES]
    assert "this subnet has 2484 (2304 host ports and 180 switches)" in finding.message


def test_a_ufm_on_the_spines_free_ports_is_an_io_node_and_ftree_comes_up(tmp_path: Path) -> None:
    """96 DGX H100 fill 3 SU: no node slot is free and a leaf has no port to spare, but the 16 spines use 48
    of their 64 ports, so the two UFM take spine ports. OpenSM's fat-tree engine refuses a compute node on a
    spine (ERR AB26); listed in io_guid_file, with the root GUID file, it routes the fabric as a fat tree."""
    valid = dgx_blueprint(96, scalable_unit=32, managers=2)
    analysis = analyse(valid)
    ufm = [(link.a, link.b) for link in analysis.topo.fabric_links("compute", "node-leaf") if link.a.startswith("ufm")]
    assert ufm == [("ufm001", "compute-spine001"), ("ufm002", "compute-spine002")]
    folder = rendered(valid, analysis.topo, tmp_path)
    conf = (folder / "opensm-ufm001.conf").read_text(encoding="utf-8")
    assert "\nroot_guid_file /etc/opensm/root-guids.conf\nio_guid_file /etc/opensm/io-guids.conf\n" in conf
    assert len((folder / "io-guids.conf").read_text(encoding="utf-8").split()) == 2
    assert_fat_tree_up(bring_up(folder, tmp_path / "run"))
