"""Every gateway the rendered files point at is held by something. On main every BMC, switch eth0, NVLink
switch tray and power shelf pointed at the out-of-band pool's first address (10.130.0.1 in
h200-training-pod), which no rendered device held. Now the leaves that take the OOB uplinks hold it (an SVI
in VLAN 20, VRR on the pair as the in-band gateway is), or the blueprint declares it external; otherwise
CF-ADDR-005."""

from __future__ import annotations

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


def test_head_nodes_reach_the_bmcs_through_the_inband_leaves() -> None:
    """The BMCs are reachable from the head nodes (role management): a head node's default route goes to the
    in-band gateway, and the leaf pair holding it also holds the OOB gateway in the same (default) VRF, so the
    pair routes between the two SVIs, and a BMC's gateway routes back. On main no device held 10.130.0.1."""
    files = render_analysis(analyse(load_valid(Path("blueprints/h200-training-pod.yaml"))))
    netplan = yaml.safe_load(files["network/netplan/mgmt001.yaml"])["network"]
    default = next(
        r["via"] for bond in netplan["bonds"].values() for r in bond.get("routes", []) if r["to"] == "default"
    )
    both = []
    for path, text in files.items():
        if not path.startswith("switches/nvue/"):
            continue
        interfaces = yaml.safe_load(text)[0]["set"].get("interface", {})
        held = {
            address.split("/")[0]: spec.get("ip", {}).get("vrf", "default")
            for spec in interfaces.values()
            for address in spec.get("ip", {}).get("vrr", {}).get("address", {})
        }
        if default in held and "10.130.0.1" in held:
            assert held[default] == held["10.130.0.1"] == "default"
            both.append(path)
    assert default == "10.120.0.1"
    assert both == ["switches/nvue/inband-leaf001.yaml", "switches/nvue/inband-leaf002.yaml"]
