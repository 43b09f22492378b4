"""Every gateway the rendered files point at is held by something. On main every BMC, switch eth0, NVLink
switch tray and power shelf pointed at the out-of-band pool's first address (10.130.0.1 in
h200-training-pod), which no rendered device held. Now the leaves that take the OOB uplinks hold it (an SVI
in VLAN 20, VRR on the pair as the in-band gateway is), or the blueprint declares it external; otherwise
CF-ADDR-005."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest
import yaml
from helpers import BLUEPRINTS

from clusterforge import codes
from clusterforge.checks import run_checks
from clusterforge.errors import BlueprintError
from clusterforge.expand import expand
from clusterforge.pipeline import analyse, load_valid, render_analysis


def _held_addresses(files: dict[str, str]) -> set[str]:
    """Every address an NVUE file gives a switch (own and VRR), without prefix."""
    held: set[str] = set()
    for path, text in files.items():
        if not path.startswith("switches/nvue/"):
            continue
        for spec in yaml.safe_load(text)[0]["set"].get("interface", {}).values():
            ip = spec.get("ip", {})
            held |= {a.split("/")[0] for a in ip.get("address", {})}
            held |= {a.split("/")[0] for a in ip.get("vrr", {}).get("address", {})}
    return held


@pytest.mark.parametrize("path", BLUEPRINTS, ids=[p.stem for p in BLUEPRINTS])
def test_every_management_gateway_is_held(path: Path) -> None:
    valid = load_valid(path)
    files = render_analysis(analyse(valid))
    held = _held_addresses(files)
    oob = next(f for f in valid.blueprint.fabrics.values() if f.kind == "oob")
    external = getattr(oob, "gateway", None)
    gateways = set()
    for text in (t for p, t in files.items() if p.startswith("switches/nvue/")):
        eth0 = yaml.safe_load(text)[0]["set"]["interface"].get("eth0", {})
        gateways |= set(eth0.get("ip", {}).get("gateway", {}))
    assert gateways == {str(oob.ipv4_pool.network_address + 1)}
    for gateway in gateways:
        assert gateway in held or str(external) == gateway, (path.stem, gateway)


def test_h200_inband_pair_holds_the_oob_gateway() -> None:
    files = render_analysis(analyse(load_valid(Path("blueprints/h200-training-pod.yaml"))))
    for leaf, own in (("inband-leaf001", "10.130.1.254/23"), ("inband-leaf002", "10.130.1.253/23")):
        svi = yaml.safe_load(files[f"switches/nvue/{leaf}.yaml"])[0]["set"]["interface"]["vlan20"]
        assert svi["vlan"] == 20 and list(svi["ip"]["address"]) == [own]
        assert list(svi["ip"]["vrr"]["address"]) == ["10.130.0.1/23"]


def test_a_gateway_held_by_nothing_is_an_error(tmp_path: Path) -> None:
    text = Path("blueprints/l40s-inference.yaml").read_text(encoding="utf-8")
    text = text.replace("    gateway: 10.42.0.1\n", "")
    blueprint = tmp_path / "l40s.yaml"
    blueprint.write_text(text, encoding="utf-8")
    valid = load_valid(blueprint)
    topo, findings = expand(valid)
    found = [f for f in run_checks(valid, topo, findings) if f.code == codes.GATEWAY_HELD_BY_NOTHING]
    assert len(found) == 1 and "point at gateway 10.42.0.1, which no rendered device holds" in found[0].message


def test_an_external_gateway_must_be_the_pools_first_address(tmp_path: Path) -> None:
    text = Path("blueprints/l40s-inference.yaml").read_text(encoding="utf-8")
    blueprint = tmp_path / "l40s.yaml"
    blueprint.write_text(text.replace("gateway: 10.42.0.1", "gateway: 10.42.0.77"), encoding="utf-8")
    with pytest.raises(BlueprintError, match=re.escape("is its first address 10.42.0.1")):
        load_valid(blueprint)


@pytest.mark.parametrize("name", ["h200-training-pod", "gb200-nvl72"])
def test_head_nodes_reach_the_bmcs_through_the_inband_leaves(name: str) -> None:
    """The BMCs are reachable from every head node (role management), read from the rendered files: its
    default route (its nodes bound, as the lab binds them) goes to the in-band gateway, and the leaves holding
    it also hold the OOB gateway in the same (default) VRF, in an SVI whose subnet holds every BMC address of
    network/hosts, so they route between the two, and a BMC's gateway routes back. On main no device held the
    OOB gateway."""
    from clusterforge.lab.facts import as_planned

    valid = load_valid(Path(f"blueprints/{name}.yaml"))
    analysis = analyse(valid)
    files = render_analysis(analyse(as_planned(valid, analysis.topo)))
    oob = next(f for f in valid.blueprint.fabrics.values() if f.kind == "oob")
    bmcs = [line.split()[0] for line in files["network/hosts"].splitlines() if line.endswith("-bmc")]
    assert bmcs and all(ipaddress.ip_address(a) in oob.ipv4_pool for a in bmcs)
    heads = [g.name for g in valid.blueprint.node_groups if g.role == "management"]
    nodes = [d.name for d in analysis.topo.devices.values() if d.kind == "node" and d.group in heads]
    assert nodes
    for node in nodes:
        netplan = yaml.safe_load(files[f"network/netplan/{node}.yaml"])["network"]
        default = next(r["via"] for b in netplan["bonds"].values() for r in b.get("routes", []) if r["to"] == "default")
        routers = []
        for path, text in files.items():
            if not path.startswith("switches/nvue/"):
                continue
            svis = yaml.safe_load(text)[0]["set"].get("interface", {}).values()
            held = {
                address.split("/")[0]: (
                    ipaddress.ip_interface(address).network,
                    spec.get("ip", {}).get("vrf", "default"),
                )
                for spec in svis
                for address in spec.get("ip", {}).get("vrr", {}).get("address", {})
            }
            gateway = str(oob.ipv4_pool.network_address + 1)
            if default in held and gateway in held:
                assert held[default][1] == held[gateway][1] == "default", path
                assert all(ipaddress.ip_address(a) in held[gateway][0] for a in bmcs), path
                routers.append(path)
        assert len(routers) == 2, (node, default, routers)  # the leaf pair


def test_head_nodes_the_oob_network_does_not_reach_are_a_warning() -> None:
    """Where the OOB gateway is the site's router (l40s-inference), nothing rendered joins the head nodes to the
    BMCs: CF-ADDR-006 says so (on main nothing did)."""
    valid = load_valid(Path("blueprints/l40s-inference.yaml"))
    topo, findings = expand(valid)
    found = [f for f in run_checks(valid, topo, findings) if f.code == codes.HEAD_NODES_OFF_THE_OOB]
    assert len(found) == 1 and "head nodes ctl001, ctl002 have no leg on it" in found[0].message
    assert "the site's router 10.42.0.1" in found[0].message
    text = Path("blueprints/l40s-inference.yaml").read_text(encoding="utf-8")
    assert "uplink_to" not in text.split("kind: oob", 1)[1].split("\n\n", 1)[0]
