"""Spine counts, link spread, uplink sizing, port booking and the fabric findings, each against a hand
computation written next to it."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from factories import dgx_data, valid_from
from hypothesis import given
from hypothesis import strategies as st

from clusterforge.catalog import Switch, load_catalog
from clusterforge.checks import run_checks
from clusterforge.expand import expand
from clusterforge.expand.fabric.spread import spread, switch_count
from clusterforge.expand.ports import booked_ports, native_share
from clusterforge.plan import build_plan


@given(uplinks=st.lists(st.integers(1, 64), min_size=1, max_size=80), ports=st.sampled_from([32, 36, 48, 62, 64, 128]))
def test_switch_count_never_exceeds_the_bound(uplinks: list[int], ports: int) -> None:
    bound = math.ceil(sum(uplinks) / ports)
    count = switch_count(uplinks, ports)
    assert count >= bound
    if count > bound:  # rounded up only for an even spread, to the first count giving one, 3/4 of ports used
        assert all(u % count == 0 for u in uplinks)
        assert sum(uplinks) >= 0.75 * count * ports
        assert not any(all(u % c == 0 for u in uplinks) for c in range(bound, count))
    pairs = spread(uplinks, count)
    assert all(k > 0 for row in pairs for _, k in row)
    assert all([j for j, _ in row] == sorted({j for j, _ in row}) for row in pairs)  # each upper switch once, in order
    rows = [_dense(row, count) for row in pairs]
    assert [sum(row) for row in rows] == uplinks
    assert all(max(row) - min(row) <= 1 for row in rows)
    per_switch = [sum(col) for col in zip(*rows, strict=True)]
    assert max(per_switch) <= ports and max(per_switch) - min(per_switch) <= 1


def test_prime_uplinks_take_the_bound_not_one_spine_per_uplink() -> None:
    # 8 leaves with 31 uplinks (sized for the nodes present, 31 of 32): 248 / 64 -> 4 spines, not 31;
    # each leaf meets each spine 7 or 8 times
    assert switch_count([31] * 8, 64) == 4
    assert sorted(_dense(spread([31] * 8, 4)[0], 4)) == [7, 8, 8, 8]


def test_a_spread_leaves_out_the_pairs_that_carry_no_link() -> None:
    # 3 links each over 4 switches: the first lower switch to 0, 1, 2; the second goes on from 3 and wraps
    # to 0 and 1, listed in switch order
    assert spread([3, 3], 4) == [[(0, 1), (1, 1), (2, 1)], [(0, 1), (1, 1), (3, 1)]]
    # 6 over 4: one link to each, the 2 left over to 0 and 1, then to 2 and 3
    assert spread([6, 6], 4) == [[(0, 2), (1, 2), (2, 1), (3, 1)], [(0, 1), (1, 1), (2, 2), (3, 2)]]


def _dense(row: list[tuple[int, int]], switches: int) -> list[int]:
    counts = [0] * switches
    for j, k in row:
        counts[j] = k
    return counts


def test_three_scalable_units_round_12_up_to_16_for_an_even_spread() -> None:
    # 24 leaves x 32 uplinks = 768 / 64 = 12; 12 does not divide 32, 16 does (2 links per pair), as in
    # the DGX SuperPOD H100 table for 3 SU
    assert switch_count([32] * 24, 64) == 16


def _plan(data: dict[str, Any]) -> dict[str, Any]:
    valid = valid_from(data)
    topo, findings = expand(valid)
    return build_plan(valid, topo, run_checks(valid, topo, findings)).as_dict()


def test_uplinks_for_the_nodes_present() -> None:
    # 40 DGX, SU 32: SU 2 holds 8 nodes. Planned: 16 leaves x 32 uplinks = 512 / 64 = 8 spines.
    # Present: 8 x 32 + 8 x 8 = 320 uplinks / 64 = 5; an even spread needs 8 (divides 32 and 8), but 8
    # spines would use 40 of 64 ports (under 3/4), so 5 spines with 6 or 7 links per leaf-spine pair.
    planned = _plan(dgx_data(40, scalable_unit=32))["fabrics"]["compute"]
    present = _plan(dgx_data(40, scalable_unit=32, uplinks_for="present"))["fabrics"]["compute"]
    assert planned["switches"] == {"leaf": 16, "spine": 8} and planned["links"]["leaf-spine"] == 512
    assert present["links"]["leaf-spine"] == 320 and present["switches"]["spine"] == 5
    assert present["uplinks_for"] == "present"


def test_a_25g_port_books_the_breakout_sub_port_in_expand_check_and_plan() -> None:
    # SN5600: 64 x 800G, breakout 100G: 256 -> 4 per cage. A 25G link runs on a 100G sub-port: 1/4 cage.
    sn5600 = load_catalog().require("nvidia/sn5600", Switch)
    assert native_share(sn5600.ports[0], 25) == 0.25
    assert native_share(sn5600.ports[0], 400) == 0.5
    # an in-band fabric on SN5600 leaves mixing 400G (100 DGX H100 x 2) and 25G ports (60 CPU servers x 2):
    # the 25G ports used to be booked at the 400G rate by expansion and at a whole cage by the check
    data = dgx_data(100)
    data["floor"]["rows"].append({"name": "M", "racks": 3, "rack_type": "generic/air-42u-40kw"})
    data["node_groups"].append(
        {
            "name": "cpu",
            "model": "generic/cpu-1u",
            "count": 60,
            "role": "management",
            "placement": {"rows": ["M"], "per_rack": 20},
        }
    )
    data["fabrics"]["inband"] = {
        "kind": "inband",
        "technology": "ethernet",
        "leaf": "nvidia/sn5600",
        "spine": "nvidia/sn5600",
        "oversubscription": "4:1",
        "ipv4_pool": "192.168.0.0/16",
        "switch_racks": data["fabrics"]["compute"]["switch_racks"],
    }
    valid = valid_from(data)
    topo, findings = expand(valid)
    checked = run_checks(valid, topo, findings)
    assert not [f for f in checked if f.code == "CF-PORT-001"]
    booked = booked_ports(topo, valid.catalog)
    for leaf in topo.switches("inband", "leaf"):
        links = [link for link in topo.links if link.b == leaf.name and link.tier == "node-leaf"]
        expected = sum(native_share(sn5600.ports[0], link.speed_gbps) for link in links)
        ups = sum(1 for link in topo.links if link.a == leaf.name and link.tier == "leaf-spine")
        assert booked[leaf.name]["swp"][0] == expected + ups
        assert booked[leaf.name]["swp"][0] <= 64
    plan = build_plan(valid, topo, checked).as_dict()
    used, _total = plan["fabrics"]["inband"]["ports_used"]["leaf"]
    assert used == round(sum(booked[s.name]["swp"][0] for s in topo.switches("inband", "leaf")), 2)


def test_findings_an_architect_would_question() -> None:
    # per-rail planes asked for: 8 islands (CF-FABRIC-012); SU of 48 nodes on 32-node leaves: split
    # (CF-FABRIC-009); 40 nodes in SUs of 32: SU 2's leaves carry 8 nodes and 32 uplinks (CF-FABRIC-011)
    codes = Counter(f["code"] for f in _plan(dgx_data(40, scalable_unit=32))["findings"])
    assert codes["CF-FABRIC-011"] == 1
    split = _plan(dgx_data(48, scalable_unit=48))
    assert any(
        f["code"] == "CF-FABRIC-009" and "split over 2 leaves per rail" in f["message"] for f in split["findings"]
    )
    planes = _plan(dgx_data(2048, planes="per-rail", tiers=2))
    assert planes["fabrics"]["compute"]["subnets"] == 8
    assert any(f["code"] == "CF-FABRIC-012" and "8 separate planes" in f["message"] for f in planes["findings"])


def test_idle_spines_are_a_finding() -> None:
    # 40 nodes, SU 32, planned: 8 spines x 64 ports take 512 uplinks, full; with 2:1 a leaf of 42 nodes
    # has 21 uplinks; 3 nodes -> 8 leaves, 1 SU... a small fabric on big spines is the idle case: 33 nodes
    # in SUs of 32 with uplinks for the nodes present: SU 2's 8 leaves have 1 uplink each -> 8 x 32 + 8 = 264
    # uplinks -> ceil(264 / 64) = 5 spines, 52.8 links each: not idle. Idle needs spines under 32 ports:
    # 2 nodes on two tiers: 8 leaves x 32 planned uplinks = 256 -> 4 spines at 64 -> full; present: 8 x 2
    # = 16 uplinks -> 1 spine with 16 of 64 ports -> CF-FABRIC-010.
    plan = _plan(dgx_data(2, tiers=2, uplinks_for="present"))
    assert plan["fabrics"]["compute"]["switches"] == {"leaf": 8, "spine": 1}
    assert any(f["code"] == "CF-FABRIC-010" and "compute-spine001 16 of 64" in f["message"] for f in plan["findings"])


def test_reserved_ports_can_name_a_switch() -> None:
    # 2 UFMs, 32 nodes (no free slot): the UFMs go to the two reserved ports named on spine 1; spines are
    # sized with 62 usable ports: 256 / 62 -> 5 (8, the even spread, would use 32 of 62 ports: under 3/4)
    data = dgx_data(32, managers=2, reserved_ports={"switches": {"compute-spine001": 2}})
    valid = valid_from(data)
    topo, _ = expand(valid)
    ufm_switches = [link.b for link in topo.links if link.a.startswith("ufm") and link.fabric == "compute"]
    assert ufm_switches == ["compute-spine001", "compute-spine001"]
    assert len(topo.switches("compute", "spine")) == 5
