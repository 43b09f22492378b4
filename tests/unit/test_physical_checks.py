"""Physical checks with hand-computed figures, and one test per finding code."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from factories import dgx_data, valid_from

from clusterforge.checks import run_checks
from clusterforge.errors import BlueprintError, Finding
from clusterforge.expand import expand
from clusterforge.expand.topology import Link
from clusterforge.loader import LoadedBlueprint
from clusterforge.plan import build_plan
from clusterforge.validate import ValidBlueprint, validate
from clusterforge.yamlsafe import SourceMap


def findings_of(data: dict[str, Any]) -> list[Finding]:
    valid = valid_from(data)
    topo, early = expand(valid)
    return run_checks(valid, topo, early)


def codes(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings if not f.suppressed_by}


def one_rack(nodes: int, rack_type: str, model: str = "nvidia/dgx-h100", **power: Any) -> dict[str, Any]:
    data = dgx_data(nodes, model=model)
    data["floor"]["rows"][0].update(racks=1, rack_type=rack_type)
    data["node_groups"][0]["placement"]["per_rack"] = nodes
    if power:
        data["power"] = power
    return data


def test_dgx_h100_rack_of_four_on_two_three_phase_feeds() -> None:
    # Rear-door rack, 2N feeds of 415 V 3-phase 100 A: sqrt(3) x 415 x 100 = 71.88 kW per feed; in 2N one
    # feed carries everything, derated to 80% -> 57.50 kW usable. 4 x DGX H100 at 10.2 kW = 40.8 kW plus
    # the rack's SN2201 out-of-band switch at 0.16 kW = 40.96 kW (71% of usable: no warning);
    # heat 40,960 W x 3.412142 = 139,761 BTU/h; weight 4 x 130.45 + 7.41 = 529.21 kg.
    data = one_rack(4, "generic/rear-door-48u-60kw")
    valid = valid_from(data)
    topo, early = expand(valid)
    findings = run_checks(valid, topo, early)
    rack = build_plan(valid, topo, findings).power.racks["A1-001"]
    assert rack.power_kw == 40.96
    assert rack.usable_power_kw == 57.5
    assert rack.heat_btu_h == 139761
    assert rack.weight_kg == 529.2
    assert rack.air_kw == 40.96 and rack.liquid_kw == 0
    # Each DGX has 6 x 3.3 kW PSUs in 4+2 (13.2 kW with two failed: fine). With the PSUs spread over the two
    # feeds, losing one feed leaves 3 PSUs = 9.9 kW for a 10.2 kW draw: a warning, one per node group.
    loss = [f for f in findings if f.code == "CF-POWER-004"]
    assert len(loss) == 1 and "3 of 6 PSUs (9.9 kW) remain for a planned 10.2 kW" in loss[0].message
    assert codes(findings) - {"CF-POWER-004"} <= {"CF-PORT-002"}


def test_load_factor_below_the_surviving_psus_clears_the_feed_loss_warning() -> None:
    # planned 10.2 kW x 0.9 = 9.18 kW <= 9.9 kW left after a feed loss
    assert "CF-POWER-004" not in codes(
        findings_of(one_rack(4, "generic/rear-door-48u-60kw", load_factor={"compute": 0.9}))
    )


def test_overloaded_air_rack() -> None:
    # Air rack, 2N 415 V 3-phase 63 A: 45.28 kW per feed, 36.23 kW usable; 4 DGX H100 + the OOB switch =
    # 40.96 kW > 36.23 (CF-POWER-001) and 40.96 kW of heat into air > the rack's 40 kW (CF-COOL-001).
    findings = findings_of(one_rack(4, "generic/air-42u-40kw"))
    power = next(f for f in findings if f.code == "CF-POWER-001")
    assert "plans 41.0 kW, more than the 36.2 kW" in power.message
    cool = next(f for f in findings if f.code == "CF-COOL-001")
    assert "rejects 41.0 kW to air, more than the 40 kW" in cool.message
    assert power.subject == "A1-001"


def nvl72(racks: int = 1, rack_type: str = "nvidia/gb200-nvl72-rack", trays: int | None = None) -> dict[str, Any]:
    trays = trays if trays is not None else 18 * racks
    return {
        "name": "nvl",
        "site": {"name": "t"},
        "floor": {"rows": [{"name": "A", "racks": racks, "rack_type": rack_type}]},
        "node_groups": [
            {
                "name": "gb",
                "model": "nvidia/gb200-nvl72-tray",
                "count": trays,
                "role": "compute",
                "placement": {"rows": ["A"], "per_rack": 18},
            }
        ],
    }


def test_nvl72_rack_on_liquid() -> None:
    # 18 trays x 5.8 kW = 104.4, 9 NVLink switch trays x 1.4 kW = 12.6 -> 117.0 kW through the power
    # shelves at 97.5%: 120.0 kW (3.0 kW lost to air); 2 SN2201 x 0.16 = 0.32 -> 120.32 kW.
    # To liquid: 104.4 x 0.85 + 12.6 x 0.8 = 98.82 kW (loop: 140 kW); to air 18.5 + 3.0 = 21.5 kW (25 kW).
    # Feeds: 8 x 415 V 3-phase 60 A = 43.13 kW each, A/B sides (2N) -> 4 x 43.13 x 0.8 = 138.01 kW usable.
    # Weight: 18 x 22 + 9 x 20 + 8 x 15 + 2 x 7.41 = 710.82 kg. One side lost leaves 4 shelves: 132 kW,
    # 110 kW with a spare PSU each (CF-POWER-006).
    valid = valid_from(nvl72())
    topo, early = expand(valid)
    findings = run_checks(valid, topo, early)
    rack = build_plan(valid, topo, findings).power.racks["A01"]
    assert (rack.power_kw, rack.liquid_kw, rack.air_kw) == (120.32, 98.82, 21.5)
    assert rack.usable_power_kw == 138.01
    assert rack.weight_kg == 710.8
    assert [f.code for f in findings if f.severity.value != "info"] == ["CF-POWER-006"]
    assert [d.gpus for d in topo.domains] == [72]


def test_nvl72_trays_outside_their_rack_type() -> None:
    with pytest.raises(BlueprintError) as info:
        findings_of(nvl72(rack_type="generic/liquid-48u-140kw"))
    assert {f.code for f in info.value.findings} == {"CF-SPACE-003"}


def test_partial_nvlink_domain_is_a_warning() -> None:
    findings = findings_of(nvl72(trays=12))
    assert "CF-NVLINK-002" in codes(findings)


def test_liquid_cooled_server_in_an_air_rack() -> None:
    findings = findings_of(one_rack(2, "generic/air-42u-40kw", model="supermicro/sys-421ge-tnhr2-lcc"))
    assert "CF-COOL-003" in codes(findings)


def test_cdu_and_hall_over_capacity() -> None:
    data = one_rack(11, "generic/liquid-48u-140kw", model="supermicro/sys-421ge-tnhr2-lcc")
    data["floor"]["rows"][0]["cdu_kw"] = 50
    data["site"]["hall_cooling_kw"] = 100
    # 11 x 10.2 = 112.2 kW (+0.16 OOB); 80% to liquid = 89.76 kW: inside the 140 kW loop, over a 50 kW CDU;
    # 112.36 kW of heat is over a 100 kW hall
    found = codes(findings_of(data))
    assert {"CF-COOL-004", "CF-COOL-005"} <= found
    assert "CF-COOL-002" not in found


def catalog_valid(tmp_path: Path, data: dict[str, Any], catalog: str) -> ValidBlueprint:
    (tmp_path / "site.yaml").write_text(textwrap.dedent(catalog), encoding="utf-8")
    data["catalogs"] = ["site.yaml"]
    return validate(LoadedBlueprint(tmp_path / "b.yaml", data, SourceMap({}, {}), []))


WEAK_RACK = """\
racks:
  site/weak:
    vendor: Site
    name: weak rack
    u_height: 42
    max_load_kg: {load}
    weight_kg: 100
    feeds: 2
    feed_redundancy: 2N
    feed: {{voltage_v: 415, phases: 3, current_a: 100}}
    cooling: {{method: rear-door, air_kw: 60}}
"""


def test_liquid_loop_over_capacity(tmp_path: Path) -> None:
    rack = WEAK_RACK.format(load=1500).replace(
        "{method: rear-door, air_kw: 60}", "{method: liquid, air_kw: 30, liquid_kw: 50}"
    )
    valid = catalog_valid(tmp_path, one_rack(8, "site/weak", model="supermicro/sys-421ge-tnhr2-lcc"), rack)
    topo, early = expand(valid)
    # 8 x 10.2 x 0.8 = 65.28 kW to a 50 kW loop
    assert "CF-COOL-002" in codes(run_checks(valid, topo, early))


@pytest.mark.parametrize(("load", "code"), [(500, "CF-WEIGHT-001"), (560, "CF-WEIGHT-002")])
def test_rack_weight(tmp_path: Path, load: int, code: str) -> None:
    # 4 x 130.45 + 7.41 (OOB switch) = 529.21 kg: over a 500 kg rack; 94.5% of a 560 kg rack
    valid = catalog_valid(tmp_path, one_rack(4, "site/weak"), WEAK_RACK.format(load=load))
    topo, early = expand(valid)
    assert code in codes(run_checks(valid, topo, early))


def test_psu_redundancy_that_does_not_hold(tmp_path: Path) -> None:
    catalog = """\
    servers:
      site/hot-box:
        vendor: Site
        name: box whose two PSUs cannot carry it alone
        u_height: 2
        weight_kg: 30
        max_power_w: 2400
        psus: {count: 2, rating_w: 2000, redundancy: "1+1"}
        cpu: {model: X, sockets: 2, cores_per_socket: 32}
        memory_gb: 512
    """
    data = one_rack(4, "generic/air-42u-40kw", model="site/hot-box")
    valid = catalog_valid(tmp_path, data, catalog)
    topo, early = expand(valid)
    found = codes(run_checks(valid, topo, early))
    assert {"CF-POWER-003", "CF-POWER-004"} <= found


def test_power_headroom_warning() -> None:
    # 4 DGX B200 at 14.3 kW = 57.2 kW in the rear-door rack: 99.5% of its 57.5 kW usable -> warning only
    found = codes(findings_of(one_rack(4, "generic/rear-door-48u-60kw", model="nvidia/dgx-b200")))
    assert "CF-POWER-002" in found
    assert "CF-POWER-001" not in found


def test_space_checks_catch_overlaps_outside_and_reserved() -> None:
    valid = valid_from(one_rack(2, "generic/rear-door-48u-60kw"))
    topo, early = expand(valid)
    first, second = topo.devices["gpu001"], topo.devices["gpu002"]
    second.u = first.u  # overlap
    found = codes(run_checks(valid, topo, early))
    assert "CF-SPACE-011" in found
    second.u = 46  # 8U from U46 runs past U48 and into the reserved patch panels
    found = codes(run_checks(valid, topo, early))
    assert {"CF-SPACE-010", "CF-SPACE-012"} <= found


def test_port_budget_and_oversubscription_checks() -> None:
    valid = valid_from(dgx_data(64))
    topo, early = expand(valid)
    assert not codes(run_checks(valid, topo, early)) & {"CF-PORT-001", "CF-OVERSUB-001"}
    # two extra 400G downlinks on a full leaf: over its 64 ports, and 34:32 down:up
    for port in ("ib65", "ib66"):
        topo.add_link(Link("compute", "node-leaf", "gpu001", f"x{port}", "compute-leaf001", port, 400.0, 1))
    found = codes(run_checks(valid, topo, early))
    assert {"CF-PORT-001", "CF-OVERSUB-001"} <= found


def test_suppression_with_reason_is_listed_and_an_unused_one_is_flagged() -> None:
    data = one_rack(4, "generic/rear-door-48u-60kw")
    data["suppress"] = [
        {"code": "CF-POWER-004", "target": "gpu", "reason": "A/B feeds are backed by a static transfer switch"},
        {"code": "CF-COOL-001", "reason": "no such finding, left over from an old design"},
    ]
    findings = findings_of(data)
    power = next(f for f in findings if f.code == "CF-POWER-004")
    assert power.suppressed_by == "A/B feeds are backed by a static transfer switch"
    assert "CF-SUPPRESS-001" in codes(findings)


def test_unconnected_compute_ports_warn() -> None:
    data = dgx_data(4)
    data["node_groups"].append(
        {"name": "spare", "model": "nvidia/dgx-h100", "count": 1, "role": "compute", "placement": {"racks": ["A1-001"]}}
    )
    data["node_groups"][0]["count"] = 3
    data["fabrics"]["compute"]["node_groups"] = ["gpu"]
    unconnected = [f for f in findings_of(data) if f.code == "CF-PORT-002" and f.subject == "spare"]
    assert {f.severity.value for f in unconnected} == {"warning", "info"}
