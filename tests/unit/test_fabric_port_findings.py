"""Fabric expansion findings about ports: switches without data ports (CF-FABRIC-002), OOB uplinks with no
free leaf port (CF-FABRIC-006), running out of ports while wiring (CF-FABRIC-007) and fabrics without
nodes (CF-FABRIC-008); each from a blueprint that provokes it, checking code, severity, message and path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from factories import dgx_data, valid_from

from clusterforge.errors import BlueprintError, Finding, Severity
from clusterforge.expand import expand

# Switches that only have a management (oob) port: nothing to wire nodes or switches to.
MGMT_ONLY_CATALOG = "switches:\n" + "".join(
    f"""\
  acme/mgmt-only-{short}:
    vendor: ACME
    name: {technology} box with a management port only
    technology: {technology}
    u_height: 1
    weight_kg: 10
    max_power_w: 300
    ports:
      - {{name: mgmt, count: 1, speed_gbps: 1, cage: rj45, role: oob}}
"""
    for short, technology in (("ib", "infiniband"), ("eth", "ethernet"))
)


def expansion_errors(data: dict[str, Any]) -> list[Finding]:
    with pytest.raises(BlueprintError) as info:
        expand(valid_from(data))
    return info.value.findings


def only(findings: list[Finding], code: str) -> list[Finding]:
    found = [f for f in findings if f.code == code]
    assert found, f"no {code} in {[(f.code, f.message) for f in findings]}"
    return found


@pytest.fixture
def user_catalog(tmp_path: Path) -> str:
    path = tmp_path / "site-catalog.yaml"
    path.write_text(MGMT_ONLY_CATALOG, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("fabric", "field", "model", "others_fine"),
    [
        ("compute", "leaf", "acme/mgmt-only-ib", False),
        # the compute fabric, built before the OOB network, is fine: CF-FABRIC-002 is the only error
        ("oob", "switch", "acme/mgmt-only-eth", True),
    ],
    ids=["leaf", "oob-switch"],
)
def test_switch_model_without_data_ports(
    user_catalog: str, fabric: str, field: str, model: str, others_fine: bool
) -> None:
    data = dgx_data(8)
    data["catalogs"] = [user_catalog]
    data["fabrics"][fabric][field] = model
    findings = expansion_errors(data)
    (finding,) = only(findings, "CF-FABRIC-002")
    assert finding.severity is Severity.ERROR
    assert finding.path == ("fabrics", fabric, field)
    assert f"{model} has no data ports" in finding.message
    if others_fine:
        assert {f.code for f in findings if f.severity is Severity.ERROR} == {"CF-FABRIC-002"}


def inband_on_one_sn4600c(nodes: int) -> dict[str, Any]:
    """`nodes` DGX whose 2 in-band ports each run at 100G on one 64-port SN4600C; OOB uplinks go to it."""
    data = dgx_data(nodes)
    data["fabrics"]["inband"] = {
        "kind": "inband",
        "technology": "ethernet",
        "leaf": "nvidia/sn4600c",
        "tiers": 1,
        "ipv4_pool": "192.168.0.0/16",
    }
    data["fabrics"]["oob"]["uplink_to"] = "inband"
    return data


def test_oob_uplink_finds_no_free_leaf_port() -> None:
    # 32 nodes x 2 ports fill the leaf exactly: the OOB switches' uplinks have nowhere to go
    findings = expansion_errors(inband_on_one_sn4600c(32))
    uplinks = only(findings, "CF-FABRIC-006")
    assert all(f.severity is Severity.ERROR for f in uplinks)
    assert all(f.path == ("fabrics", "oob", "uplink_to") for f in uplinks)
    # one finding for all the switches, with a hint that does not point at reserved ports
    (finding,) = uplinks
    assert finding.message == (
        "the leaves of 'inband' have no free port for the uplinks of 9 out-of-band "
        "switches (oob-sw001, oob-sw002, oob-sw003, ...)"
    )
    assert finding.hint is not None and "cannot use reserved ports" in finding.hint


def test_oob_uplink_fits_when_the_leaf_has_room() -> None:
    """28 nodes leave 8 leaf ports free for the 8 OOB switches: no CF-FABRIC-006, every switch has its
    uplink (guards the test above against passing for another reason)."""
    topo, findings = expand(valid_from(inband_on_one_sn4600c(28)))
    assert "CF-FABRIC-006" not in {f.code for f in findings}
    switches = topo.switches("oob", "oob")
    assert len(list(topo.fabric_links("oob", "oob-uplink"))) == len(switches) == 8


def test_leaf_out_of_ports_for_its_uplinks() -> None:
    # 63 of the QM9700's 64 ports reserved: the one left takes a node port, none is left for the spine
    data = dgx_data(4)
    data["fabrics"]["compute"].update(tiers=2, reserved_ports={"leaf": 63})
    findings = expansion_errors(data)
    (finding,) = only(findings, "CF-FABRIC-007")
    assert finding.severity is Severity.ERROR
    assert finding.path == ("fabrics", "compute")
    assert finding.message == "fabric 'compute': out of ports wiring compute-leaf001 to compute-spine001"
    assert finding.hint is not None and "reserved_ports" in finding.hint


def test_fabric_without_nodes_is_a_warning() -> None:
    data = dgx_data(8)
    data["fabrics"]["storage"] = {
        "kind": "storage",
        "technology": "ethernet",
        "leaf": "nvidia/sn5600",
        "node_groups": [],
        "ipv4_pool": "192.168.0.0/24",
    }
    _, findings = expand(valid_from(data))  # a warning: expansion goes on
    (finding,) = only(findings, "CF-FABRIC-008")
    assert finding.severity is Severity.WARNING
    assert finding.path == ("fabrics", "storage")
    assert finding.message == "fabric 'storage' has no nodes attached"
