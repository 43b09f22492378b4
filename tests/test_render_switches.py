"""NVUE switch configuration (`switches/nvue/<switch>.yaml`) of every Ethernet fabric switch, judged
against the other rendered families: every cabled switch port in the link list (handoff/links.csv) is
configured with its far end and speed and no uncabled port is; the two leaves of an MLAG pair agree on
the pair's MAC, its bonds and their IDs, and back each other up; an EVPN-MH pair gives each node's
bonds one Ethernet segment; the RoCE leaves' lossless priority is the one NCCL's traffic class selects;
and BGP unnumbered runs on exactly the switch-to-switch links, with each leaf its own ASN."""

from __future__ import annotations

import csv
import io
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import BLUEPRINTS

from clusterforge.lab.facts import as_planned
from clusterforge.pipeline import analyse, load_valid, render_analysis
from clusterforge.render import paths
from clusterforge.render.switches.nvue import to_yaml

ETHERNET_SWITCH_TIERS = ("leaf", "spine", "core")


@dataclass
class Example:
    name: str
    files: dict[str, str]
    configs: dict[str, dict[str, Any]]
    links: list[dict[str, str]]


@pytest.fixture(scope="module", params=BLUEPRINTS, ids=[p.stem for p in BLUEPRINTS])
def example(request: pytest.FixtureRequest) -> Example:
    valid = load_valid(request.param)
    # its nodes bound as the lab binds them: the hosts' netplan (routes, gateways) is written for bound ports only
    files = render_analysis(analyse(as_planned(valid, analyse(valid).topo)))
    configs = {}
    for path, text in files.items():
        if path.startswith("switches/nvue/"):
            doc = yaml.safe_load(text)
            assert isinstance(doc, list) and len(doc) == 1 and set(doc[0]) == {"set"}, path
            configs[path.rsplit("/", 1)[1].removesuffix(".yaml")] = doc[0]["set"]
    links = list(csv.DictReader(io.StringIO(files["handoff/links.csv"])))
    return Example(request.param.stem, files, configs, links)


def _ethernet_switch_ports(example: Example) -> dict[str, dict[str, dict[str, str]]]:
    """switch -> port -> its links.csv row, for ports of switches that have an NVUE configuration."""
    out: dict[str, dict[str, dict[str, str]]] = defaultdict(dict)
    for row in example.links:
        for side, other in (("a", "b"), ("b", "a")):
            if row[f"{side}_device"] in example.configs and row["tier"] not in ("oob", "mgmt"):
                out[row[f"{side}_device"]][row[f"{side}_port"]] = {**row, "far": row[f"{other}_device"]}
    return out


def test_every_ethernet_switch_has_a_configuration(example: Example) -> None:
    ethernet = {
        row[f"{side}_device"]
        for row in example.links
        for side in ("a", "b")
        if re.fullmatch(r"[a-z][a-z0-9_-]*-(leaf|spine|core)\d{3,}", row[f"{side}_device"])
        and row["fabric"] in _ethernet_fabrics(example)
    }
    assert ethernet and ethernet == set(example.configs)


def _ethernet_fabrics(example: Example) -> set[str]:
    blueprint = yaml.safe_load(Path(f"blueprints/{example.name}.yaml").read_text())
    fabrics = blueprint.get("fabrics") or {}
    if not fabrics:  # split over included files
        fabrics = yaml.safe_load(Path(f"blueprints/{example.name}/fabrics.yaml").read_text())["fabrics"]
    return {name for name, f in fabrics.items() if f.get("technology", "ethernet") == "ethernet" and f["kind"] != "oob"}


def test_every_cabled_port_configured_and_no_other(example: Example) -> None:
    cabled = _ethernet_switch_ports(example)
    for switch, config in example.configs.items():
        interfaces = config["interface"]
        swps = {name for name, spec in interfaces.items() if spec.get("type") == "swp"}
        parents = {
            name
            for name in swps
            if set(interfaces[name]) == {"type", "link"} and "breakout" in interfaces[name]["link"]
        }
        assert swps - parents == set(cabled[switch]), switch
        for port, row in cabled[switch].items():
            spec = interfaces[port]
            assert spec["description"].startswith(f"{row['far']}:"), (switch, port)
            assert spec["link"]["speed"] == f"{float(row['speed_gbps']):g}G" and spec["link"]["mtu"] == 9216
        for parent in parents:  # a breakout cage has cabled sub-ports, and as many as the breakout allows
            subs = [p for p in cabled[switch] if re.fullmatch(rf"{parent}s\d+", p)]
            if interfaces[parent]["link"]["breakout"] == "disabled":  # the neighbour of a 4x/8x cage
                assert not subs and parent not in cabled[switch], (switch, parent)
                continue
            assert subs and len(subs) <= int(interfaces[parent]["link"]["breakout"].rstrip("x")), (switch, parent)


def _pairs(example: Example) -> list[tuple[str, str]]:
    by_pair: dict[tuple[str, str], list[str]] = defaultdict(list)
    for switch, config in example.configs.items():
        if "mlag" in config or "evpn" in config:
            bonds = {spec["description"] for spec in config["interface"].values() if spec.get("type") == "bond"}
            fabric = switch.rsplit("-", 1)[0]
            key = (fabric, min(bonds))  # the leaves of a pair serve the same nodes
            by_pair[key].append(switch)
    pairs = [tuple(sorted(leaves)) for leaves in by_pair.values()]
    assert all(len(p) == 2 for p in pairs), pairs
    return pairs  # type: ignore[return-value]


def _bonds(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {spec["description"]: spec for spec in config["interface"].values() if spec.get("type") == "bond"}


def test_leaf_pairs_agree(example: Example) -> None:
    """MLAG: same system MAC, each bond on both leaves with the same MLAG ID, one member per leaf, peer
    link members cabled to each other, each backing up to the other's management address, distinct
    priorities. EVPN-MH: each bond the same Ethernet segment (local ID and MAC) on both leaves."""
    pairs = _pairs(example)
    assert pairs
    for one, two in pairs:
        first, second = example.configs[one], example.configs[two]
        bonds_one, bonds_two = _bonds(first), _bonds(second)
        assert set(bonds_one) == set(bonds_two) and bonds_one
        if "mlag" in first:
            assert first["mlag"]["mac-address"] == second["mlag"]["mac-address"]
            assert first["mlag"]["priority"] != second["mlag"]["priority"]
            eth0 = {s: example.configs[s]["interface"]["eth0"]["ip"]["address"] for s in (one, two)}
            assert set(first["mlag"]["backup"]) == {next(iter(eth0[two])).split("/")[0]}
            assert set(second["mlag"]["backup"]) == {next(iter(eth0[one])).split("/")[0]}
            for name, bond in bonds_one.items():
                assert bond["bond"]["mlag"]["id"] == bonds_two[name]["bond"]["mlag"]["id"]
            cabled = _ethernet_switch_ports(example)
            members = first["interface"]["peerlink"]["bond"]["member"]
            assert len(members) >= 2 and all(cabled[one][m]["far"] == two for m in members)
        else:
            for name, bond in bonds_one.items():
                assert bond["evpn"]["multihoming"]["segment"] == bonds_two[name]["evpn"]["multihoming"]["segment"]
            segments = [b["evpn"]["multihoming"]["segment"]["local-id"] for b in bonds_one.values()]
            assert len(segments) == len(set(segments))
        for bond in [*bonds_one.values(), *bonds_two.values()]:
            assert len(bond["bond"]["member"]) == 1  # the node's other member is on the other leaf


def test_roce_lossless_priority_is_nccls_traffic_class(example: Example) -> None:
    """NCCL_IB_TC carries DSCP << 2 (plus ECN bits); the leaf maps that DSCP to the PFC priority it makes
    lossless, and marks ECN on it."""
    tcs = {
        int(m.group(1))
        for path, text in example.files.items()
        if path.startswith("nccl/") and path.endswith(".conf")
        for m in re.finditer(r"^NCCL_IB_TC=(\d+)$", text, re.M)
    }
    roce_leaves = [c for c in example.configs.values() if "qos" in c]
    if not tcs:
        assert not roce_leaves
        return
    assert roce_leaves
    (tc,) = tcs
    for config in roce_leaves:
        qos = config["qos"]
        assert qos["roce"] == {"enable": True, "mode": "lossless"}  # YAML 1.1 reads `on` as true
        assert qos["mapping"]["default-global"]["trust"] == "l3"
        priority = qos["mapping"]["default-global"]["dscp"][str(tc >> 2)]["switch-priority"]
        assert set(qos["pfc"]["default-global"]["switch-priority"]) == {str(priority)}
        assert qos["congestion-control"]["default-global"]["traffic-class"][str(priority)]["ecn"] == "enable"


def test_bgp_unnumbered_on_switch_links_only(example: Example) -> None:
    cabled = _ethernet_switch_ports(example)
    asns: dict[str, int] = {}
    for switch, config in example.configs.items():
        uplinks = {p for p, row in cabled[switch].items() if row["tier"] in ("leaf-spine", "spine-core")}
        bgp = config.get("vrf", {}).get("default", {}).get("router", {}).get("bgp")
        if not uplinks:
            assert bgp is None, switch
            continue
        neighbors = set(bgp["neighbor"]) - {"peerlink.4094"}
        assert neighbors == uplinks, switch
        assert all(n["type"] == "unnumbered" and n["remote-as"] == "external" for n in bgp["neighbor"].values())
        asns[switch] = config["router"]["bgp"]["autonomous-system"]
    leaves = [asn for s, asn in asns.items() if "-leaf" in s]
    assert len(leaves) == len(set(leaves))


def test_rail_gateways_match_the_hosts(example: Example) -> None:
    """A RoCE leaf holds the gateway every host route on its rails points at (netplan `via`)."""
    gateways = set()
    for path, text in example.files.items():
        if path.startswith("network/netplan/"):
            gateways |= set(re.findall(r'via: "([0-9.]+)"', text))
    assert gateways  # every example has an in-band default route, and RoCE ones rail routes
    held = set()
    for config in example.configs.values():
        for spec in config["interface"].values():
            for address in spec.get("ip", {}).get("address", {}):
                held.add(address.split("/")[0])
            for address in spec.get("ip", {}).get("vrr", {}).get("address", {}):
                held.add(address.split("/")[0])
    assert gateways <= held


def test_mac_addresses_are_quoted_for_yaml_1_1() -> None:
    """A bare 44:38:39:00:00:01 reads as a base-60 integer in YAML 1.1; NVUE's files keep it a string."""
    text = "\n".join(to_yaml({"mlag": {"mac-address": "44:38:39:00:00:01", "enable": "on", "priority": 1000}}, 0))
    assert yaml.safe_load(text)["mlag"]["mac-address"] == "44:38:39:00:00:01"
    assert "enable: on" in text


def test_written_as_rendered(example: Example) -> None:
    assert all(paths.nvue_config(s) in example.files for s in example.configs)
