"""RoCE per-rail addressing routes between rails, and the host side of lossless RoCE is rendered.

A PCIe server (l40s-inference: no NVLink, so no PXN) runs NCCL all-to-all from rail i's NIC to rail j's
address. On main each rail port had only its own /26 (the rail block is the leaf segment), no route: traffic
to another rail left by the default route of bond0 or nowhere. Now each port's address has a policy table
(as rail_addressing: per-port already had) that sends the whole compute pool through its own leaf gateway,
which routes between the rails' SVIs. The real netplan turns it into networkd's RoutingPolicyRule and Route.

The host QoS (trust DSCP, PFC on the fabric's priority) follows NVIDIA's MLNX_OFED/MLNX_EN documentation,
Flow Control: `mlnx_qos -i <ethX> --pfc <0/1>,...` (8 priorities), and Quality of Service `--trust dscp`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import yaml
from helpers import REPO
from netplan_harness import generate_units
from test_render_network import bound

from clusterforge.expand import expand
from clusterforge.pipeline import load_valid
from clusterforge.render import RenderContext, paths
from clusterforge.render.network.network import render_network

L40S = Path("blueprints/l40s-inference.yaml")


def _files(valid):  # type: ignore[no-untyped-def]
    topo, findings = expand(valid)
    return render_network(RenderContext(valid, topo, findings))


def test_each_rail_port_routes_the_other_rails_through_its_leaf(tmp_path: Path) -> None:
    files = _files(bound(load_valid(L40S)))
    ethernets = yaml.safe_load(files[paths.netplan_rails("inf001")])["network"]["ethernets"]
    # rails 1-4: 10.40.0.0/24 in four /26, gateway .1 of each (test_render_network.test_l40s_rails_by_hand)
    for table, (port, address, gateway) in enumerate(
        (("ens1", "10.40.0.2", "10.40.0.1"), ("ens2", "10.40.0.66", "10.40.0.65"),
         ("ens3", "10.40.0.130", "10.40.0.129"), ("ens4", "10.40.0.194", "10.40.0.193")),
        101,
    ):  # fmt: skip
        assert ethernets[port]["routing-policy"] == [{"from": f"{address}/32", "table": table}]
        assert ethernets[port]["routes"] == [{"to": "10.40.0.0/24", "via": gateway, "table": table}]
    units = generate_units(tmp_path, files[paths.netplan_rails("inf001")])
    network = units["10-netplan-ens2.network"]
    assert network["RoutingPolicyRule"]["From"] == "10.40.0.66/32" and network["RoutingPolicyRule"]["Table"] == "102"
    assert network["Route"]["Destination"] == "10.40.0.0/24" and network["Route"]["Gateway"] == "10.40.0.65"


def test_the_host_qos_script_trusts_dscp_and_pauses_the_lossless_priority() -> None:
    files = _files(bound(load_valid(L40S)))
    script = files[paths.roce_qos_script("inf003")]
    assert script.startswith("#!/bin/sh\n")
    for port in ("ens1", "ens2", "ens3", "ens4"):  # the blueprint's roce.qos: DSCP 26, PFC priority 3
        assert f"mlnx_qos -i {port} --trust dscp\n" in script
        assert f"mlnx_qos -i {port} --pfc 0,0,0,1,0,0,0,0\n" in script
    assert "--dscp2prio" not in script  # DSCP 26 is priority 3 by the default mapping (26 >> 3)
    assert f"ExecStart=/bin/sh {paths.ROCE_QOS_SCRIPT_INSTALLED}" in files[paths.ROCE_QOS_UNIT]


def test_a_dscp_off_the_default_mapping_is_mapped() -> None:
    valid = bound(load_valid(L40S))
    fabric = valid.blueprint.fabrics["compute"]
    qos = fabric.roce.qos.model_copy(update={"dscp": 46})  # type: ignore[union-attr]
    roce = fabric.roce.model_copy(update={"qos": qos})  # type: ignore[union-attr]
    fabrics = {**valid.blueprint.fabrics, "compute": fabric.model_copy(update={"roce": roce})}
    valid = dataclasses.replace(valid, blueprint=valid.blueprint.model_copy(update={"fabrics": fabrics}))
    script = _files(valid)[paths.roce_qos_script("inf001")]
    assert "mlnx_qos -i ens1 --dscp2prio set,46,3\n" in script


def test_unnamed_ports_are_not_configured_by_guess() -> None:
    script = _files(load_valid(L40S))[paths.roce_qos_script("inf001")]
    assert "mlnx_qos" not in script and "ens1 (rail 1): interface name unknown (CF-NET-001)" in script


def test_the_playbook_installs_the_qos_script_and_its_unit_where_the_fabric_is_lossless_roce() -> None:
    """On main (and the dayone branch) the QoS files were rendered but no role installed them: the NICs kept
    their default (PCP) trust. Each node with a rail on a lossless RoCE fabric gets both files in its host
    data (the cf_network role copies them), and a change runs the unit by a handler, after netplan. The lab
    twin proves the unit runs (`lab check`, interface names)."""
    out = REPO / "inventories/l40s-inference"
    host_data = {}
    for rack in (out / "ansible/host_data").glob("*.json"):
        host_data.update(json.loads(rack.read_text()))
    installed = {item["dest"]: item["src"] for item in host_data["inf001"]["cf_network_files"]}
    assert installed["usr/local/sbin/clusterforge-roce-qos.sh"] == "network/roce-qos/inf001.sh"
    assert installed["etc/systemd/system/clusterforge-roce-qos.service"] == "network/clusterforge-roce-qos.service"
    controller = {item["dest"] for item in host_data["ctl001"]["cf_network_files"]}
    assert not any("roce-qos" in dest for dest in controller)  # no rail: no QoS
    handlers = yaml.safe_load((out / "ansible/roles/cf_network/handlers/main.yml").read_text())
    assert [h["name"] for h in handlers][-2:] == ["Apply netplan", "Apply the RoCE QoS"]
    unit = handlers[-1]["ansible.builtin.systemd_service"]
    # a transient spawn failure (systemd's 'resources' result, once in the lab twin) is tried again
    assert (handlers[-1]["until"], handlers[-1]["retries"]) == ("cf_roce_qos is succeeded", 2)
    assert unit == {
        "name": "clusterforge-roce-qos.service",
        "daemon_reload": True,
        "enabled": True,
        "state": "restarted",
    }
    # the InfiniBand example has no lossless Ethernet compute fabric: nothing installed, handler skipped
    h200 = REPO / "inventories/h200-training-pod/ansible/host_data"
    assert not any("roce-qos" in text.read_text() for text in h200.glob("*.json"))
