"""Physical cables and their parts: hand-checked counts for every example, a twin-port cable, a splitter,
a breakout over splitter fibres, ends that cannot meet and a run no part reaches.

The parts and their limits are NVIDIA LinkX figures from the catalog (clusterforge/catalog/data/cables.yaml
and optics.yaml, each with its source): passive twin-port DAC to 2 m, splitter DAC to 3 m, active copper
at 4 and 5 m, NDR multimode optics to 50 m, single-mode DR to 100 m.
"""

from __future__ import annotations

from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from factories import valid_from

from clusterforge import codes
from clusterforge.catalog import load_catalog
from clusterforge.errors import BlueprintError, Finding
from clusterforge.expand import expand
from clusterforge.expand.cable_parts import PartFinder
from clusterforge.expand.cages import EndSpec, cage_and_slot, plug_fits_cage
from clusterforge.expand.topology import Topology
from clusterforge.pipeline import load_valid


@cache
def example(name: str) -> tuple[Topology, list[Finding]]:
    return expand(load_valid(Path("blueprints") / f"{name}.yaml"))


def cables_by(topo: Topology) -> Counter[tuple[str, str, str, int]]:
    """Cables by fabric, tier, product and links carried."""
    out: Counter[tuple[str, str, str, int]] = Counter()
    for cable in topo.cables:
        link = topo.links[cable.links[0]]
        out[(link.fabric, link.tier, cable.product, len(cable.links))] += cable.pieces
    return out


def test_h200_pod_cables_by_hand() -> None:
    """31 HGX H200 nodes and 2 UFM hosts on 8 rail leaves and 4 spines (QM9700), storage on an MLAG pair of
    SN5600, in-band on an MLAG pair of SN4600C, a 1G OOB switch per rack (14)."""
    topo, _ = example("h200-training-pod")
    assert cables_by(topo) == {
        # 256 leaf-spine links: each leaf cage's two ports go to one spine cage (2 x 400G), so 128
        # twin-port cables; the leaf (N01) and spine racks are 2.5 m apart, over the 2 m passive DAC: ACC.
        ("compute", "leaf-spine", "nvidia/mca4j80", 2): 128,
        # 31 x 8 + 2 = 250 node ports, 7-15 m to the leaves: one MPO fibre each.
        ("compute", "node-leaf", "nvidia/mfp7e10", 1): 250,
        # storage: 31 x 2 400G QSFP112 ports and 4 storage + 2 login hosts (AS-1125HS-TNR) x 2 400G QSFP112
        # ports, one fibre each: 62 + 12.
        ("storage", "node-leaf", "nvidia/mfp7e10", 1): 62 + 12,
        # the pairs' two peer links each, 2.09 m between neighbouring U: 800G past the 2 m DAC (ACC),
        # 100G QSFP28 within the 5 m of passive copper
        ("storage", "leaf-peer", "nvidia/mca4j80", 1): 2,
        ("inband", "leaf-peer", "nvidia/mcp1600", 1): 2,
        # in-band: 84 25G SFP28 ports, 42 per leaf, four per split QSFP28 cage of the SN4600C (4x on odd cages,
        # the next one disabled: Cumulus Linux breakout table): per leaf 10 4-way AOC splitters with every leg
        # used and one with 2 (on main: 42 with 2 legs each, 2x at 25G, which the switch refuses).
        ("inband", "node-leaf", "nvidia/mfa7a50", 4): 20,
        ("inband", "node-leaf", "nvidia/mfa7a50", 2): 2,
        # 14 OOB switch uplinks (100G QSFP28): 3 within DAC reach, 11 AOC.
        ("oob", "oob-uplink", "nvidia/mcp1600", 1): 3,
        ("oob", "oob-uplink", "nvidia/mfa1a00", 1): 11,
        # 42 nodes' BMCs and 16 managed switches' management ports (8 + 4 QM9700, 2 SN5600, 2 SN4600C), all
        # within 5 m of their rack's OOB switch: the CommScope cord (sold in 2, 3 and 5 m)
        ("oob", "oob", "commscope/npc6aszdb", 1): 42 + 16,
    }
    assert sum(c.pieces for c in topo.cables) == 128 + 250 + 74 + 2 + 2 + 20 + 2 + 3 + 11 + 58
    modules = Counter(topo.modules.values())
    # switch cages: 8 leaves x 16 cages of node ports (6 leaves have 31 ports, 2 have 32) + 2 x 19 SN5600
    # cages (31 + 6 = 37 400G storage ports per leaf of the pair, two per twin-port cage)
    assert modules["nvidia/mma4z00-ns"] == 8 * 16 + 2 * 19
    assert modules["nvidia/mma4z00-ns400"] == 250  # one flat-top module per node port
    assert modules["nvidia/mma1z00-ns400"] == 62 + 12
    assert (modules["nvidia/mma1t00-vs"], modules["generic/osfp-400g-2xsr4"]) == (0, 0)


def test_gb200_cables_by_hand() -> None:
    """72 GB200 trays x 4 compute ports + 1 UFM on 22 QM9700 (a leaf per rack and rail, 6 spines); SN5600
    storage leaf/spine; in-band management on SN4600C leaf pairs and a spine, which also take the SN2201 OOB
    switches' uplinks: every link has a part."""
    topo, findings = example("gb200-nvl72")
    assert cables_by(topo) == {
        # 16 leaves x 18 uplinks, 3 to each of 6 spines: a pair's third link shares its twin-port cage with
        # another spine's, at one end or the other, so 48 pairs of links ride a twin-port ACC and 192 links a
        # twin-port transceiver's fibre each
        ("compute", "leaf-spine", "nvidia/mca4j80", 2): 48,
        ("compute", "leaf-spine", "nvidia/mfp7e10", 1): 192,
        ("compute", "node-leaf", "nvidia/mfp7e10", 1): 72 * 4 + 1,
        # 72 trays x 2 and 3 login hosts (AS-1125HS-TNR) x 2 400G QSFP112 ports, one fibre each
        ("storage", "node-leaf", "nvidia/mfp7e10", 1): 72 * 2 + 3 * 2,
        ("storage", "leaf-spine", "nvidia/mca4j80", 1): 42,  # 800G, one link per cable
        # In-band, SN4600C (64 x 100G QSFP28), 4:1: a leaf keeps 2 ports for its MLAG peer links and takes d
        # downlinks and u = ceil(d / 4) uplinks with d + u <= 62: d = 49, u = 13. Trays first: 49 on the first
        # pair, 23 on the second with the 6 x86 hosts (2 mgmt, 3 login, 1 UFM; one 25G port per leaf each,
        # four per split cage, 4x on an odd cage with the next one disabled) and the 7 OOB uplinks (100G QSFP28).
        # 144 tray ports (QSFP112 at 4 x 25G NRZ) 6.6-9.2 m from the leaves, past the 5 m QSFP28 DAC: AOC.
        ("inband", "node-leaf", "nvidia/mfa1a00", 1): 72 * 2,
        # 12 25G SFP28 ports, 6 per leaf, 4 per split cage: per leaf one 4-way splitter with every leg used
        # and one with 2 (on main 2x at 25G: 6 splitters with 2 legs); 3.2-3.5 m, past the 3 m splitter DAC: AOC
        ("inband", "node-leaf", "nvidia/mfa7a50", 4): 2,
        ("inband", "node-leaf", "nvidia/mfa7a50", 2): 2,
        ("inband", "leaf-peer", "nvidia/mcp1600", 1): 2 * 2,  # two pairs, two peer links each, 2.09 m
        ("inband", "leaf-spine", "nvidia/mcp1600", 1): 4 * 13,  # one spine in N02, 2.1-2.4 m: passive copper
        # 7 OOB uplinks: the 4 NVL72 racks' switches 6.6-7.8 m away (AOC), the N racks' 2.2-4.5 m (DAC)
        ("oob", "oob-uplink", "nvidia/mfa1a00", 1): 4,
        ("oob", "oob-uplink", "nvidia/mcp1600", 1): 3,
        # 72 trays' and 6 hosts' BMCs; management ports of 22 QM9700, 3 SN5600, 5 SN4600C and the 8 SN2201
        # built into the four NVL72 racks; per rack 9 NVLink switch trays (bmc and nvos ports) and 8 power
        # shelves (pmc); none past 5 m, so all the CommScope cord
        ("oob", "oob", "commscope/npc6aszdb", 1): 72 + 6 + 22 + 3 + 5 + 8 + 4 * (9 * 2 + 8),
    }
    assert [link for link in topo.links if link.cable < 0] == []
    assert not any(f.code == codes.ENDS_CANNOT_MEET for f in findings)
    # the in-band links are all copper or AOC: no transceiver in an SN4600C
    sn4600c = {d.name for d in topo.devices.values() if d.model == "nvidia/sn4600c"}
    assert len(sn4600c) == 5 and not [key for key in topo.modules if key[0] in sn4600c]


def test_l40s_cables_by_hand() -> None:
    """8 L40S servers x 4 200G ports on one SN5600 split 4 x 200G: 32 links, 16 splitter fibres."""
    topo, _ = example("l40s-inference")
    assert cables_by(topo) == {
        ("compute", "node-leaf", "nvidia/mfp7e20", 2): 16,
        # 20 25G ports on an MLAG pair of SN4600C, 10 per leaf, 4 per split cage: 2 full splitters and one
        # with 2 legs per leaf
        ("inband", "node-leaf", "nvidia/mfa7a50", 4): 4,
        ("inband", "node-leaf", "nvidia/mfa7a50", 2): 2,
        ("inband", "leaf-peer", "nvidia/mcp1600", 1): 2,
        # 10 servers' BMCs and 3 switches' management ports: 10 within 5 m take the CommScope cord, 3 runs
        # over 5 m the generic one at 7 m (no CommScope 7 m part number found)
        ("oob", "oob", "commscope/npc6aszdb", 1): 10,
        ("oob", "oob", "generic/cat6a", 1): 3,
    }
    assert Counter(topo.modules.values()) == {"nvidia/mma1z00-ns400": 32, "nvidia/mma4z00-ns": 8}


# --- shapes -----------------------------------------------------------------------------------------


def one_rack(nodes: int, model: str = "generic/cpu-1u-ndr", **floor: Any) -> dict[str, Any]:
    """`nodes` hosts with one NDR port and one QM9700 leaf in the same rack."""
    return {
        "version": 1,
        "name": "shapes",
        "site": {"name": "lab"},
        "floor": {"rows": [{"name": "A", "racks": 1, "rack_type": "generic/air-42u-40kw"}], **floor},
        "node_groups": [{"name": "n", "model": model, "count": nodes, "role": "compute"}],
        "fabrics": {
            "compute": {
                "kind": "compute",
                "technology": "infiniband",
                "topology": "fat-tree",
                "leaf": "nvidia/qm9700",
                "node_groups": ["n"],
                "ipv4_pool": "10.0.0.0/24",
                "switch_racks": ["A01"],
            }
        },
    }


def test_splitter_dac_in_one_rack() -> None:
    """Two 400G hosts on the two ports of one twin-port leaf cage, within 3 m: one MCP7Y00 splitter DAC
    (finned twin-port plug in the switch, two flat-top 400G plugs in the hosts), no transceivers.
    U1 and U2 to the leaf at U41: 40 U (1.78 m) + 2 x 0.5 m in the rack, no slack: 2.78 m, ordered at 3 m."""
    topo, _ = expand(valid_from(one_rack(2, cable_slack_m=0)))
    cables = [c for c in topo.cables if c.media != "Cat6a"]
    assert len(cables) == 1
    (cable,) = cables
    assert (cable.product, len(cable.links), cable.hub_is_b) == ("nvidia/mcp7y00", 2, True)
    assert (cable.run_m, cable.length_class_m, cable.part_number) == (2.78, 3, "MCP7Y00-N003")
    assert not topo.modules


def test_twin_port_host_cage_takes_a_flat_twin_module() -> None:
    """A DGX H100's OSFP cage holds two ConnectX-7 ports going to two rail leaves: no cable can carry
    both, so the cage takes a flat-top twin-port module, one MPO fibre per port."""
    from factories import dgx_blueprint

    topo, _ = expand(dgx_blueprint(8))
    node = next(d for d in topo.devices.values() if d.kind == "node")
    modules = {cage: key for (device, cage), key in topo.modules.items() if device == node.name}
    assert set(modules.values()) == {"nvidia/mma4z00-ns-flt"} and len(modules) == 4  # 8 ports, 4 cages


def test_cage_and_slot_from_port_names() -> None:
    assert cage_and_slot("ib3/2", "ib", 2, 1) == (3, 1)  # twin-port switch port
    assert cage_and_slot("swp2s3", "swp", 1, 4) == (2, 3)  # 4-way split
    assert cage_and_slot("ib5s1", "ib", 2, 2) == (3, 1)  # twin-port cage split again: native 5 is cage 3
    assert cage_and_slot("ib4", "ib", 2, 1) == (2, 1)  # DGX: 8 ports in 4 cages
    assert cage_and_slot("bmc", "bmc", 1, 1) == (1, 0)


# --- ends that cannot meet, runs no part reaches -----------------------------------------------------

QSFP28_100G = EndSpec("qsfp28", "flat", 4, 25, 1, True)
"""An SN2201 uplink: 4 x 25G NRZ."""
OSFP_4WAY = EndSpec("osfp", "finned", 2, 100, 4, True)
"""A port of an 800G OSFP cage split four ways: two lanes of up to 100G."""


def test_100g_qsfp28_against_a_4way_osfp_breakout_cannot_meet() -> None:
    """The issue's pairing: a 100G QSFP28 SR4 (4 x 25G) against a 400G OSFP 4 x 100G breakout port
    (1 x 100G or 2 x 50G): no lane rate in common, so neither copper nor optics link them."""
    finder = PartFinder(load_catalog())
    assert finder.common_lanes(QSFP28_100G, OSFP_4WAY, 100) == []
    assert finder.optics(QSFP28_100G, OSFP_4WAY, 100) == []
    assert finder.straight(QSFP28_100G, OSFP_4WAY, 100, 1) == []
    assert finder.why_not(QSFP28_100G, OSFP_4WAY, 100) == (
        "no common lane rate: QSFP28 runs 100G as 4 x 25G, OSFP, 4 ports per cage as 1 x 100G or 2 x 50G"
    )
    # two QSFP28 ends meet: copper to 5 m, the SR4 optic (MPO-12/UPC, 25G lanes) beyond
    assert finder.straight(QSFP28_100G, QSFP28_100G, 100, 1)[0].key == "nvidia/mcp1600"
    optic = finder.optics(QSFP28_100G, QSFP28_100G, 100)[0]
    assert (optic.hub_module, optic.far_module, optic.fibre_key) == (
        "nvidia/mma1b00-c100d",
        "nvidia/mma1b00-c100d",
        "generic/om4-mpo12-upc",
    )


def test_oob_uplinks_and_sfp28_hosts_on_sn5600_cannot_be_cabled() -> None:
    """The design the GB200 example had: 25G SFP28 hosts and an SN2201's 100G QSFP28 uplink on an SN5600
    in-band leaf, whose split cages run 1 x 100G or 2 x 50G PAM4 lanes: no part, two CF-CABLE-002 warnings."""
    data = one_rack(2, model="generic/cpu-1u")
    data["node_groups"][0]["role"] = "management"
    data["fabrics"] = {
        "inband": {
            "kind": "inband",
            "leaf": "nvidia/sn5600",
            "node_groups": ["n"],
            "ipv4_pool": "10.0.0.0/24",
            "switch_racks": ["A01"],
        },
        "oob": {"kind": "oob", "switch": "nvidia/sn2201", "uplink_to": "inband", "ipv4_pool": "10.1.0.0/24"},
    }
    topo, findings = expand(valid_from(data))
    messages = sorted(f.message for f in findings if f.code == codes.ENDS_CANNOT_MEET)
    assert len(messages) == 2
    assert messages[1].startswith(
        "fabric 'oob': 1 100G links between nvidia/sn2201 (QSFP28) and nvidia/sn5600 (OSFP, 4 ports per cage) "
        "cannot be cabled, no common lane rate: QSFP28 runs 100G as 4 x 25G"
    )
    assert messages[0].startswith("fabric 'inband': 4 25G links between generic/cpu-1u (SFP28) and nvidia/sn5600")
    assert sorted((link.fabric, link.speed_gbps) for link in topo.links if link.cable < 0) == [("inband", 25)] * 4 + [
        ("oob", 100)
    ]


def test_qsfp112_ports_take_qsfp28_cables() -> None:
    """A QSFP112 host port at 100G (BlueField-3, ConnectX-7) takes a QSFP28 cable at 4 x 25G NRZ, as the DGX
    BasePOD RA runs BlueField-3 ports on its SN4600C management fabric; a QSFP28 cage takes no QSFP112 plug."""
    finder = PartFinder(load_catalog())
    qsfp112_100g = EndSpec("qsfp112", "flat", 4, 100, 1, False)
    assert finder.common_lanes(qsfp112_100g, QSFP28_100G, 100) == [(25, 4)]
    assert finder.straight(qsfp112_100g, QSFP28_100G, 100, 1)[0].key == "nvidia/mcp1600"
    assert plug_fits_cage("qsfp28", "qsfp112") and plug_fits_cage("qsfp28", "qsfp56")
    assert not plug_fits_cage("qsfp112", "qsfp28") and not plug_fits_cage("qsfp28", "osfp")


def test_a_run_beyond_every_part_is_an_error() -> None:
    """A switch row 600 m from the nodes: over the 50 m of multimode NDR optics and the 500 m of
    single-mode DR4 (IEEE 400GBASE-DR4; MMS4X00-NM in the switch): CF-CABLE-001."""
    data = one_rack(2)
    data["floor"]["rows"].append({"name": "N", "racks": 1, "rack_type": "generic/air-42u-40kw"})
    data["floor"]["row_pitch_mm"] = 600_000
    data["fabrics"]["compute"]["switch_racks"] = ["N01"]
    with pytest.raises(BlueprintError) as raised:
        expand(valid_from(data))
    assert {f.code for f in raised.value.findings} == {codes.NO_CABLE_REACHES}


def test_a_long_run_takes_single_mode_optics() -> None:
    """80 m: past multimode's 50 m, within the DR4's 100 m: MMS4X00-NS400 in the host, the twin-port
    MMS4X00-NS in the switch, a single-mode MFP7E30 fibre."""
    data = one_rack(2)
    data["floor"]["rows"].append({"name": "N", "racks": 1, "rack_type": "generic/air-42u-40kw"})
    data["floor"]["row_pitch_mm"] = 70_000
    data["fabrics"]["compute"]["switch_racks"] = ["N01"]
    topo, _ = expand(valid_from(data))
    fibres = [c for c in topo.cables if c.media == "SMF"]
    assert len(fibres) == 2 and {c.product for c in fibres} == {"nvidia/mfp7e30"}
    assert 50 < fibres[0].run_m <= 100
    assert set(topo.modules.values()) == {"nvidia/mms4x00-ns400", "nvidia/mms4x00-ns"}


def test_path_parameters_set_the_length() -> None:
    """The tray height and in-rack allowance come from the floor: a higher tray lengthens every run
    between racks by twice the difference."""
    base = one_rack(2)
    base["floor"]["rows"].append({"name": "N", "racks": 1, "rack_type": "generic/air-42u-40kw"})
    base["fabrics"]["compute"]["switch_racks"] = ["N01"]
    low, _ = expand(valid_from(base))
    base["floor"]["cable_tray_m"] = 1.3
    high, _ = expand(valid_from(base))
    pairs = zip(low.links, high.links, strict=True)
    assert all(h.length_m == pytest.approx(lo.length_m + 2.0) for lo, h in pairs if lo.tier == "node-leaf")
