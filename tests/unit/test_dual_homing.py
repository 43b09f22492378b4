"""Dual-homed storage and in-band networks (MLAG or EVPN multihoming): leaf pairs with every bond member
on a different leaf of its pair, switch counts computed by hand, peer links, and the bond checks."""

from __future__ import annotations

import math
from collections import defaultdict
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pytest
from factories import valid_from
from helpers import BLUEPRINTS

from clusterforge import codes
from clusterforge.checks import run_checks
from clusterforge.errors import BlueprintError
from clusterforge.expand import expand
from clusterforge.expand.topology import Topology
from clusterforge.pipeline import load_valid
from clusterforge.plan import build_plan

PER_RACK = 20


def cpu_data(nodes: int, **inband: Any) -> dict[str, Any]:
    """`nodes` generic 1U servers (two 25G in-band ports each) on an SN4600C in-band network."""
    racks = math.ceil(nodes / PER_RACK)
    fabric: dict[str, Any] = {
        "kind": "inband",
        "leaf": "nvidia/sn4600c",
        "ipv4_pool": "10.8.0.0/22",
        "switch_racks": ["N01", "N02"],
        **inband,
    }
    return {
        "name": f"cpu-{nodes}",
        "site": {"name": "test"},
        "floor": {
            "rows": [
                {"name": "A", "racks": racks, "rack_type": "generic/air-42u-40kw"},
                {"name": "N", "racks": 2, "rack_type": "generic/air-42u-40kw"},
            ]
        },
        "node_groups": [
            {
                "name": "cpu",
                "model": "generic/cpu-1u",
                "count": nodes,
                "role": "compute",
                "placement": {"rows": ["A"], "per_rack": PER_RACK},
            }
        ],
        "fabrics": {"inband": fabric},
    }


def _bond_leaves(topo: Topology, fabric: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for link in topo.fabric_links(fabric, "node-leaf"):
        out[link.a].append(link.b)
    return out


@pytest.mark.parametrize("path", BLUEPRINTS, ids=[p.stem for p in BLUEPRINTS])
def test_examples_dual_home_every_bond(path: Path) -> None:
    """The defect of the old examples: both in-band (and storage) ports of a node on one leaf, even on one
    breakout cable. Now every bond of every storage and in-band network has one member on each leaf of one
    pair, and no bond finding is raised."""
    valid = load_valid(path)
    topo, findings = expand(valid)
    dual = [name for name, f in topo.fabrics.items() if f.kind in ("storage", "inband")]
    assert dual
    for name in dual:
        assert topo.fabrics[name].dual_homing in ("mlag", "evpn-mh")
        pair_of = {leaf.name: leaf.pair for leaf in topo.switches(name, "leaf")}
        for node, leaves in _bond_leaves(topo, name).items():
            assert len(leaves) == 2 and len(set(leaves)) == 2, (name, node, leaves)
            assert pair_of[leaves[0]] == pair_of[leaves[1]] is not None
    found = {f.code for f in run_checks(valid, topo, findings)}
    assert not found & {codes.BOND_ON_ONE_LEAF, codes.BOND_SINGLE_HOMED, codes.BOND_ON_ONE_CAGE}


def test_mlag_switch_count_by_hand() -> None:
    """200 nodes x 2 ports of 25G over SN4600C (64 x 100G; 25G only as 4x on an odd cage with the next cage
    disabled, Cumulus Linux breakout table) at 1:1 with an SN4600C spine. Per leaf: 62 cages after the
    2-port peer link; d downlinks need 2 x ceil(d/4) cages and ceil(d x 25 / 100) uplinks, so d = 80
    (40 + 20 = 60; 81 needs 42 + 21 = 63). Each node puts one port on each leaf of its pair: pairs of 80, 80
    and 40 nodes = 3 pairs, 6 leaves. Uplinks are sized for the planned 80: 20 per leaf, 120 in all;
    64-port spines: ceil(120 / 64) = 2 spines."""
    valid = valid_from(cpu_data(200, dual_homing="mlag", spine="nvidia/sn4600c"))
    topo, _ = expand(valid)
    leaves = topo.switches("inband", "leaf")
    assert (len(leaves), len(topo.switches("inband", "spine"))) == (6, 2)
    assert {leaf.pair for leaf in leaves} == {1, 2, 3}
    per_pair = defaultdict(set)
    for node, bond in _bond_leaves(topo, "inband").items():
        per_pair[tuple(sorted(bond))].add(node)
    assert sorted(len(nodes) for nodes in per_pair.values()) == [40, 80, 80]
    peer = [link for link in topo.fabric_links("inband", "leaf-peer")]
    assert len(peer) == 6 and all(topo.devices[link.a].pair == topo.devices[link.b].pair for link in peer)
    plan = build_plan(valid, topo, [])
    fabric = plan.fabrics["inband"]
    assert (fabric.leaf_pairs, fabric.links["leaf-peer"], fabric.links["leaf-spine"]) == (3, 6, 120)  # type: ignore[union-attr]


def test_single_pair_holds_what_one_leaf_did_twice() -> None:
    """40 nodes x 2 ports: single-homed, 80 ports on one leaf (up to 128 at 25G); dual-homed, 40 on each
    leaf of one MLAG pair, one tier, 2 peer links."""
    topo, _ = expand(valid_from(cpu_data(40)))
    assert len(topo.switches("inband")) == 1
    topo, _ = expand(valid_from(cpu_data(40, dual_homing="mlag")))
    assert [s.pair for s in topo.switches("inband")] == [1, 1]
    assert topo.fabrics["inband"].tiers == 1 and len(list(topo.fabric_links("inband", "leaf-peer"))) == 2


def test_per_pair_subnets_by_hand() -> None:
    """10.8.0.0/22 over 3 leaf pairs: 4 blocks of /24; pair 2 is 10.8.1.0/24 with gateway 10.8.1.1, its
    first node .2; node 81 is the first of pair 2 (80 nodes per pair: test_mlag_switch_count_by_hand)."""
    topo, _ = expand(valid_from(cpu_data(200, dual_homing="mlag", spine="nvidia/sn4600c")))
    lan = topo.lans["inband"]["cpu081"]
    assert (lan.subnet, str(lan.gateway), lan.pair) == (IPv4Network("10.8.1.0/24"), "10.8.1.1", 2)
    assert str(topo.addresses["inband"]["cpu081"]) == "10.8.1.2"
    assert str(topo.addresses["inband"]["cpu001"]) == "10.8.0.2"
    for node, address in topo.addresses["inband"].items():
        assert address in topo.lans["inband"][node].subnet


def test_single_homed_bonds_are_reported() -> None:
    """Both ports of a node on one leaf, on one breakout cage (swp1s0, swp1s1): CF-FABRIC-014 and -015."""
    valid = valid_from(cpu_data(4))
    topo, findings = expand(valid)
    link = next(iter(topo.fabric_links("inband", "node-leaf")))
    assert link.b_port == "swp1s0"
    found = {f.code: f for f in run_checks(valid, topo, findings)}
    assert "4 nodes bond every member to one leaf" in found[codes.BOND_SINGLE_HOMED].message
    assert codes.BOND_ON_ONE_CAGE in found


def test_bond_on_one_leaf_of_a_pair_and_missing_peer_links() -> None:
    """A dual-homed fabric whose cabling lost its redundancy (a member moved to the other leaf, the peer
    links dropped) is an error each."""
    valid = valid_from(cpu_data(4, dual_homing="mlag"))
    topo, findings = expand(valid)
    assert not {f.code for f in run_checks(valid, topo, findings)} & {
        codes.BOND_ON_ONE_LEAF,
        codes.LEAF_PAIR_INCOMPLETE,
    }
    second = next(
        link for link in topo.fabric_links("inband", "node-leaf") if link.a == "cpu001" and link.b.endswith("2")
    )
    second.b = "inband-leaf001"
    for link in topo.fabric_links("inband", "leaf-peer"):
        link.tier = "mgmt"  # the peer links lost
    found = {f.code: f.message for f in run_checks(valid, topo, findings)}
    assert found[codes.BOND_ON_ONE_LEAF].endswith("1 node has every bond member on one leaf: cpu001")
    assert found[codes.LEAF_PAIR_INCOMPLETE] == "fabric 'inband': leaf pair 1 has 0 peer links (MLAG needs 2)"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dual_homing": "evpn-mh"}, "dual_homing: evpn-mh needs a spine model"),
        ({"dual_homing": "mlag", "technology": "infiniband"}, "dual_homing applies to Ethernet"),
    ],
)
def test_dual_homing_refused_where_it_cannot_work(options: dict[str, Any], message: str) -> None:
    with pytest.raises(BlueprintError) as error:
        valid_from(cpu_data(4, **options))
    assert message in str(error.value.findings[0].message)


def test_evpn_mh_needs_a_loopback_pool_apart_from_the_other_pools() -> None:
    """EVPN-MH leaves source VXLAN from their loopbacks: the pool is required, and may not overlap a host pool.
    With one, every switch gets the next /32: leaves first (10.9.0.1, .2), then the spine (.3)."""
    options = {"dual_homing": "evpn-mh", "spine": "nvidia/sn4600c", "tiers": 2}
    with pytest.raises(BlueprintError) as error:
        valid_from(cpu_data(4, **options))
    assert "needs a loopback_pool" in error.value.findings[0].message
    with pytest.raises(BlueprintError) as error:
        valid_from(cpu_data(4, loopback_pool="10.8.1.0/24", **options))
    assert error.value.findings[0].message == "loopback_pool 10.8.1.0/24 of 'inband' overlaps 10.8.0.0/22 of 'inband'"
    topo, _ = expand(valid_from(cpu_data(4, loopback_pool="10.9.0.0/24", **options)))
    assert {name: str(a) for name, a in topo.loopbacks.items()} == {
        "inband-leaf001": "10.9.0.1",
        "inband-leaf002": "10.9.0.2",
        "inband-spine001": "10.9.0.3",
    }
