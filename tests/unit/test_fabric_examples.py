"""Hand-worked fabrics: each count below is derived in the comments, then checked against `expand`."""

from __future__ import annotations

from collections import Counter

from factories import dgx_blueprint

from clusterforge.expand import expand
from clusterforge.plan import build_plan


def _tally(topo, tier):  # type: ignore[no-untyped-def]
    return Counter(link.tier for link in topo.fabric_links("compute"))[tier]


def test_rail_optimized_two_tier_512_gpus() -> None:
    # 64 DGX H100, 8 x 400G NDR ports each (one per rail), QM9700 leaves and spines (64 ports of 400G).
    # 1:1 -> a leaf has 32 ports down and 32 up; the scalable unit is 32 nodes (one leaf port each).
    # 64 nodes = 2 SUs; each SU has one leaf per rail -> 2 x 8 = 16 leaves.
    # 16 leaves x 32 uplinks = 512 uplinks. All 16 leaves fit one spine group (16 <= 64 spine ports);
    # k = largest divisor of 32 with k x 16 <= 64 -> 4 links from each leaf to each spine; 32 / 4 = 8 spines,
    # each with 16 x 4 = 64 ports used (full).
    valid = dgx_blueprint(64)
    topo, _ = expand(valid)
    assert len(topo.switches("compute", "leaf")) == 16
    assert len(topo.switches("compute", "spine")) == 8
    assert not topo.switches("compute", "core")
    assert _tally(topo, "node-leaf") == 512
    assert _tally(topo, "leaf-spine") == 512
    for spine in topo.switches("compute", "spine"):
        assert topo.ports_used(spine.name) == 64
    for leaf in topo.switches("compute", "leaf"):
        assert len(topo.links_between(leaf.name, "compute-spine001")) == 4
    # rail 3 of node 40 (SU 2, since nodes 1-32 are SU 1) lands on SU 2's rail-3 leaf
    leaf = topo.devices[topo.leaf_of("gpu040", "compute", rail=3)[0]]
    assert (leaf.su, leaf.rail) == (2, 3)
    plan = build_plan(valid, topo, []).as_dict()
    fabric = plan["fabrics"]["compute"]
    assert fabric["switches"] == {"leaf": 16, "spine": 8}
    assert fabric["oversubscription"] == {"leaf": 1.0}
    # bisection: half of 512 x 400 Gb/s
    assert fabric["bisection_tbps"] == 102.4


def test_rail_optimized_three_tier_16384_gpus() -> None:
    # 2048 DGX H100 = 16,384 GPUs, three tiers asked for. 2048 / 32 = 64 SUs -> 64 x 8 = 512 leaves,
    # 32 down / 32 up each. All 512 leaves in one plane would need 512 / 32 = 16 pods, which fits the
    # 64 core ports, so there is one plane. A spine gives half its 64 ports to leaves: pods of 32 leaves,
    # each leaf meets each of its pod's 32 spines once (k1 = 1) -> 16 pods x 32 spines = 512 spines with
    # 32 up each. Spine j of every pod joins core group j: 16 pods, k2 = largest divisor of 32 with
    # k2 x 16 <= 64 -> 4 links; 32 / 4 = 8 cores per group, 32 groups -> 256 cores. The classic radix-64
    # fat tree for 16,384 endpoints: 512 edge, 512 aggregation, 256 core.
    valid = dgx_blueprint(2048, tiers=3)
    topo, _ = expand(valid)
    assert len(topo.switches("compute", "leaf")) == 512
    assert len(topo.switches("compute", "spine")) == 512
    assert len(topo.switches("compute", "core")) == 256
    assert _tally(topo, "node-leaf") == 16384
    assert _tally(topo, "leaf-spine") == 512 * 32
    assert _tally(topo, "spine-core") == 512 * 32
    for core in topo.switches("compute", "core"):
        assert topo.ports_used(core.name) == 64
    assert topo.is_connected("compute")


def test_auto_tiers_keep_one_subnet_and_per_rail_planes_only_when_asked() -> None:
    # 2048 nodes -> 512 leaves exceed one spine group (64 ports). Two tiers would need 8 disjoint rail
    # planes (8 InfiniBand subnets), so `tiers: auto` takes three tiers and one subnet.
    topo, _ = expand(dgx_blueprint(2048))
    assert topo.fabrics["compute"].tiers == 3
    assert topo.switch_islands("compute") == 1
    # Asked for per-rail planes: 64 leaves per rail, 64 x 32 uplinks / 64 ports = 32 spines per rail -> 256.
    topo, _ = expand(dgx_blueprint(2048, planes="per-rail"))
    assert topo.fabrics["compute"].tiers == 2
    assert len(topo.switches("compute", "spine")) == 256
    assert {s.plane for s in topo.switches("compute", "spine")} == set(range(1, 9))
    assert topo.switch_islands("compute") == 8
    assert not topo.is_connected("compute")


def test_one_switch_when_everything_fits() -> None:
    # 8 DGX x 8 ports = 64 ports = one QM9700: no spine tier.
    topo, _ = expand(dgx_blueprint(8))
    assert topo.fabrics["compute"].tiers == 1
    assert len(topo.switches("compute")) == 1


def test_oversubscribed_leaf_two_to_one() -> None:
    # 2:1 -> d + d/2 <= 64 -> 42 downlinks and 21 uplinks per leaf; the SU defaults to 42 nodes.
    # 84 nodes = 2 SUs x 8 rails = 16 leaves, each 42 x 400G down, 21 x 400G up (ratio 2:1).
    valid = dgx_blueprint(84, ratio="2:1")
    topo, _ = expand(valid)
    assert len(topo.switches("compute", "leaf")) == 16
    plan = build_plan(valid, topo, []).as_dict()
    assert plan["fabrics"]["compute"]["oversubscription"]["leaf"] == 2.0
    assert plan["fabrics"]["compute"]["scalable_unit"] == 42
