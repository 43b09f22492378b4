"""Interface names that exist: netplan matches every port to the interface the node has, by the name the
catalog quotes or derives for the model and OS, or by what `clusterforge bind` read; a port with no known
name is a finding (CF-NET-001), never a guess.

Expected names are quoted from the NVIDIA DGX H100/H200 System User Guide, Introduction, Network
Connections, Cables, and Adaptors, Table 5 "Network Port Mapping" (port, PCI bus, default and optional
name, RDMA device) and Table 6 "Network Modules" (GPU of each OSFP port); the naming rule is systemd's
ID_NET_NAME_PATH, systemd.net-naming-scheme(7): [P<domain>]p<bus>s<slot>[f<function>][n<phys_port_name>].
"""

from __future__ import annotations

import configparser
from pathlib import Path
from typing import Any

import pytest
import yaml
from factories import dgx_data, valid_from
from helpers import BLUEPRINTS
from netplan_harness import generate_units

from clusterforge import codes
from clusterforge.checks import run_checks
from clusterforge.expand import expand
from clusterforge.pipeline import load_valid
from clusterforge.render import RenderContext, paths
from clusterforge.render.network.network import UNBOUND_HEADER, render_network
from clusterforge.validate import ValidBlueprint

# Table 5 and 6 of the DGX H100/H200 user guide: GPU i's compute port (rail i+1) and its default name.
DGX_H100_RAILS = {
    "ib1": "ibp24s0",  # OSFP4P2, 18:00.0, GPU 0, mlx5_0
    "ib2": "ibp64s0",  # OSFP3P2, 40:00.0, GPU 1, mlx5_3
    "ib3": "ibp79s0",  # OSFP3P1, 4f:00.0, GPU 2, mlx5_4
    "ib4": "ibp94s0",  # OSFP4P1, 5e:00.0, GPU 3, mlx5_5
    "ib5": "ibp154s0",  # OSFP1P2, 9a:00.0, GPU 4, mlx5_6
    "ib6": "ibp192s0",  # OSFP2P2, c0:00.0, GPU 5, mlx5_9
    "ib7": "ibp206s0",  # OSFP2P1, ce:00.0, GPU 6, mlx5_10
    "ib8": "ibp220s0",  # OSFP1P1, dc:00.0, GPU 7, mlx5_11
}


def _dgx(os: str | None = None, nodes: int = 2) -> ValidBlueprint:
    data = dgx_data(nodes)
    if os is not None:
        data["node_groups"][0]["os"] = os
    return valid_from(data)


def _netplan(valid: ValidBlueprint, node: str) -> dict[str, Any]:
    topo, findings = expand(valid)
    files = render_network(RenderContext(valid, topo, findings))
    return yaml.safe_load(files[paths.netplan_rails(node)])["network"]


@pytest.mark.parametrize("os", [None, "dgx-os", "ubuntu"])
def test_dgx_h100_rails_are_the_user_guides_names(os: str | None) -> None:
    """On main the rails were keys ib1..ib8 with no match: names the DGX never has (it has ibp24s0...)."""
    ethernets = _netplan(_dgx(os), "gpu001")["ethernets"]
    assert {port: spec["match"] for port, spec in ethernets.items()} == {
        port: {"name": name} for port, name in DGX_H100_RAILS.items()
    }


def test_netplan_configures_the_interfaces_that_exist(tmp_path: Path) -> None:
    """The real netplan writes networkd units that match ibp24s0..ibp220s0 (on main: Name=ib1..ib8)."""
    valid = _dgx("dgx-os")
    topo, findings = expand(valid)
    text = render_network(RenderContext(valid, topo, findings))[paths.netplan_rails("gpu002")]
    units = generate_units(tmp_path, text)
    matched = {unit["Match"]["Name"] for unit in units.values() if unit.has_section("Match")}
    assert matched == set(DGX_H100_RAILS.values())


def test_path_names_follow_systemd_and_the_user_guide() -> None:
    from clusterforge.ifnames import path_name

    # (bus id, InfiniBand, multi-function, mlx5 phys_port_name index) -> Table 5's name
    assert path_name("0000:18:00.0", True, False, 0) == "ibp24s0"
    assert path_name("0000:dc:00.0", True, False, 0) == "ibp220s0"
    assert path_name("0000:18:00.0", False, False, 0) == "enp24s0np0"
    assert path_name("0000:aa:00.0", True, True, 0) == "ibp170s0f0"
    assert path_name("0000:aa:00.1", False, True, 1) == "enp170s0f1np1"
    assert path_name("0000:29:00.1", False, True, 1) == "enp41s0f1np1"
    # the domain only when not 0 (systemd.net-naming-scheme(7): "[P<domain>]")
    assert path_name("0002:03:00.0", True, False, 0) == "ibP2p3s0"


def _left_out(text: str) -> set[str]:
    """The ports a netplan file says it does not configure (its NOT CONFIGURED comment)."""
    for line in text.splitlines():
        if line.startswith(UNBOUND_HEADER):
            return set(line.removeprefix(UNBOUND_HEADER).split(": ", 1)[0].split(", "))
    return set()


def test_rhel_names_are_not_guessed() -> None:
    """RHEL names NICs by firmware slot (ens8f1np1), which the catalog cannot derive: the ports are left out
    of netplan, the file says so, and the group gets CF-NET-001 (on main: ib1..ib8 were rendered as if they
    existed, with nothing saying otherwise)."""
    valid = _dgx("rhel")
    topo, findings = expand(valid)
    text = render_network(RenderContext(valid, topo, findings))[paths.netplan_rails("gpu001")]
    assert _left_out(text) == set(DGX_H100_RAILS)
    assert "ethernets" not in yaml.safe_load(text)["network"]
    found = [f for f in run_checks(valid, topo, findings) if f.code == codes.INTERFACE_NAME_UNKNOWN]
    assert len(found) == 1 and "ib1, ib2, ib3, ..." in found[0].message and "(8 ports)" in found[0].message
    assert "netplan leaves them out until they are bound" in found[0].message


def _matches(units: dict[str, configparser.ConfigParser]) -> set[str]:
    """What the networkd units netplan wrote match: a name, or a permanent MAC address."""
    out = set()
    for unit in units.values():
        if unit.has_section("Match"):
            match = unit["Match"]
            out.add(match.get("PermanentMACAddress") or match.get("OriginalName") or match["Name"])
    return out


def _known(valid: ValidBlueprint, node: str, ports: set[str]) -> set[str]:
    """The names and MACs of `node`'s ports that come from a known source: its bindings, or the catalog."""
    out = set()
    for port in ports:
        bound = valid.blueprint.bindings.get(node, {}).get(port)
        if bound is not None:
            out |= {bound.name} | ({bound.mac} if bound.mac else set())
    return out


@pytest.mark.parametrize("path", BLUEPRINTS, ids=[p.stem for p in BLUEPRINTS])
def test_every_example_configures_only_known_interfaces(path: Path, tmp_path: Path) -> None:
    """netplan generates every example's files, and every interface they configure is matched by a name or
    MAC from a known source. As the examples ship (no quoted names for their Supermicro and GB200 models):
    no interface at all, each planned port listed as left out; with every node bound (the lab twin's
    hardware, as `clusterforge lab` binds it): every planned port, matched by its bound name. On main every
    port was a bare key (ib1, ens1, eno1) that netplan took as a name no such machine gives."""
    from clusterforge.bind import planned_ports
    from clusterforge.lab.facts import as_planned

    valid = load_valid(path)
    topo, findings = expand(valid)
    files = render_network(RenderContext(valid, topo, findings))
    bound = as_planned(valid, topo)
    bound_files = render_network(RenderContext(bound, topo, findings))
    netplans = sorted(p for p in files if p.startswith("network/netplan/"))
    assert netplans
    for index, name in enumerate(netplans[:: max(1, len(netplans) // 4)]):  # netplan takes 0.1 s a file
        node = Path(name).stem
        planned = {port for port, _ in planned_ports(valid, topo, node)}
        units = generate_units(tmp_path / f"as-shipped-{index}", files[name])
        assert _matches(units) == set(), name  # nothing known for these models: nothing configured
        assert _left_out(files[name]) == planned, name
        units = generate_units(tmp_path / f"bound-{index}", bound_files[name])
        links = {u for u in units if u.endswith(".network") and units[u].has_section("Match")}
        bonds = set(yaml.safe_load(bound_files[name])["network"].get("bonds") or {})  # netplan makes these
        assert _matches(units) <= _known(bound, node, planned) | bonds and not _left_out(bound_files[name]), name
        assert len(links) >= len(planned), (name, sorted(units))


def test_a_bound_port_is_matched_by_mac_and_named(tmp_path: Path) -> None:
    """A port `clusterforge bind` pinned: netplan matches its MAC and sets the name the node reported."""
    data = dgx_data(2, technology="ethernet", leaf="nvidia/sn5600", spine="nvidia/sn5600", core=None, tiers=2)
    data["node_groups"][0]["os"] = "rhel"
    data["bindings"] = {
        "gpu001": {"ib1": {"name": "ens8f0np0", "mac": "b8:3f:d2:00:00:01", "pci": "0000:18:00.0", "rdma": "mlx5_0"}}
    }
    valid = valid_from(data)
    ethernets = _netplan(valid, "gpu001")["ethernets"]
    assert sorted(ethernets) == ["ib1"]  # ib2..ib8 unbound: left out
    assert ethernets["ib1"]["match"] == {"macaddress": "b8:3f:d2:00:00:01"}
    assert ethernets["ib1"]["set-name"] == "ens8f0np0"
    topo, findings = expand(valid)
    units = generate_units(
        tmp_path, render_network(RenderContext(valid, topo, findings))[paths.netplan_rails("gpu001")]
    )
    assert units["10-netplan-ib1.link"]["Match"]["PermanentMACAddress"] == "b8:3f:d2:00:00:01"
    assert units["10-netplan-ib1.link"]["Link"]["Name"] == "ens8f0np0"
    assert units["10-netplan-ib1.network"]["Match"]["Name"] == "ens8f0np0"
