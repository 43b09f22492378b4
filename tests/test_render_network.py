"""Rail addressing and the network family: every rail port of a host in a subnet of its own, checked by
hand-computed addresses, by pairwise subnet comparison, and by the real `netplan generate`."""

from __future__ import annotations

import configparser
import shutil
import subprocess
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, ip_interface
from itertools import combinations
from pathlib import Path

import pytest
import yaml
from factories import dgx_blueprint
from helpers import BLUEPRINTS

from clusterforge.expand import expand
from clusterforge.expand.topology import Topology
from clusterforge.pipeline import load_valid
from clusterforge.render import RenderContext, paths
from clusterforge.render.network import render_network

NETPLAN = shutil.which("netplan") or "/usr/sbin/netplan"


def _topo(path: Path) -> Topology:
    return expand(load_valid(path))[0]


def _rails_of(files: dict[str, str], node: str) -> dict[str, dict[str, object]]:
    doc = yaml.safe_load(files[paths.netplan_rails(node)])
    ethernets: dict[str, dict[str, object]] = doc["network"]["ethernets"]
    return ethernets


@dataclass
class Example:
    topo: Topology
    files: dict[str, str]
    pools: dict[str, IPv4Network]


@pytest.fixture(scope="module", params=BLUEPRINTS, ids=[p.stem for p in BLUEPRINTS])
def example(request: pytest.FixtureRequest) -> Example:
    valid = load_valid(request.param)
    topo, findings = expand(valid)
    pools = {name: f.ipv4_pool for name, f in valid.blueprint.fabrics.items()}
    return Example(topo, render_network(RenderContext(valid, topo, findings)), pools)


def test_no_two_rails_of_a_host_share_a_subnet(example: Example) -> None:
    """The defect of the old addressing: ens1-ens4 of an L40S node in one /24 (ARP flux, RDMA-CM on the
    wrong NIC). Read back from the rendered netplan files, not from the model that wrote them."""
    topo, files = example.topo, example.files
    compute_nodes = {
        link.a
        for name, f in topo.fabrics.items()
        if f.kind == "compute"
        for link in topo.fabric_links(name, "node-leaf")
    }
    assert compute_nodes and all(paths.netplan_rails(n) in files for n in compute_nodes)
    for node in sorted(compute_nodes):
        interfaces = [ip_interface(str(a)) for port in _rails_of(files, node).values() for a in port["addresses"]]  # type: ignore[attr-defined]
        assert len(interfaces) >= 1
        for one, other in combinations(interfaces, 2):
            assert not one.network.overlaps(other.network), (node, one, other)


def test_addresses_gateways_and_subnets_agree(example: Example) -> None:
    topo = example.topo
    for network, segments in topo.segments.items():
        seen: set[IPv4Address] = set()
        pool = example.pools[network]
        for key, segment in segments.items():
            address = topo.addresses[network][key]
            assert address in segment.subnet and segment.subnet.subnet_of(segment.rail_block)
            assert segment.rail_block.subnet_of(pool)
            assert address not in (segment.subnet.network_address, segment.subnet.broadcast_address)
            if segment.gateway is not None:
                assert segment.gateway in segment.subnet and segment.gateway != address
            assert address not in seen
            seen.add(address)


def test_l40s_rails_by_hand() -> None:
    """10.40.0.0/24 over 4 rails: /26 each (.0, .64, .128, .192); .1 of each is kept, the first host is .2."""
    topo = _topo(Path("blueprints/l40s-inference.yaml"))
    keys = [f"inf001:{port}" for port in ("ens1", "ens2", "ens3", "ens4")]
    got = {
        key[7:]: f"{topo.addresses['compute'][key]}/{topo.segments['compute'][key].subnet.prefixlen}" for key in keys
    }
    assert got == {"ens1": "10.40.0.2/26", "ens2": "10.40.0.66/26", "ens3": "10.40.0.130/26", "ens4": "10.40.0.194/26"}
    assert str(topo.addresses["compute"]["inf002:ens1"]) == "10.40.0.3"


def test_h200_ipoib_rails_by_hand() -> None:
    """10.100.0.0/22 over 8 InfiniBand rails: a /25 per rail, no gateway (IPoIB is one subnet per rail)."""
    topo = _topo(Path("blueprints/h200-training-pod.yaml"))
    rail8 = topo.segments["compute"]["gpu001:ib8"]
    assert (str(rail8.subnet), rail8.gateway) == ("10.100.3.128/25", None)
    assert str(topo.addresses["compute"]["gpu001:ib8"]) == "10.100.3.130"


def test_routed_ethernet_rail_over_two_leaves() -> None:
    """64 DGX on RoCE, 2 scalable units: rail k has two leaves, each its own routed segment. 10.0.0.0/8 in 8
    rail blocks of /11, each in 2 leaf segments of /12; the host routes its rail block via its leaf."""
    valid = dgx_blueprint(
        64, technology="ethernet", leaf="nvidia/sn5600", spine="nvidia/sn5600", core=None, tiers=2, scalable_unit=32
    )
    topo, findings = expand(valid)
    first, last = (
        topo.segments["compute"]["gpu001:" + _port(topo, "gpu001", 3)],
        topo.segments["compute"]["gpu064:" + _port(topo, "gpu064", 3)],
    )
    assert (str(first.rail_block), str(first.subnet), str(first.gateway)) == (
        "10.64.0.0/11",
        "10.64.0.0/12",
        "10.64.0.1",
    )
    assert (str(last.subnet), str(last.gateway)) == ("10.80.0.0/12", "10.80.0.1")
    files = render_network(RenderContext(valid, topo, findings))
    port = _rails_of(files, "gpu064")[_port(topo, "gpu064", 3)]
    assert port["routes"] == [{"to": "10.64.0.0/11", "via": "10.80.0.1"}]
    assert port["mtu"] == 9000


def _port(topo: Topology, node: str, rail: int) -> str:
    return next(link.a_port for link in topo.links_of(node) if link.tier == "node-leaf" and link.rail == rail)


def test_netplan_generate_accepts_every_example(example: Example, tmp_path: Path) -> None:
    """The real netplan (Debian netplan.io) turns each sampled node's file into systemd-networkd units
    with one Address= per rail port."""
    topo, files = example.topo, example.files
    nodes = sorted(
        {path.rsplit("/", 1)[1].removesuffix(".yaml") for path in files if path.startswith("network/netplan/")}
    )
    sample = sorted({nodes[0], nodes[-1], *(n for n in nodes if topo.devices[n].role != "compute")})
    for node in sample:
        root = tmp_path / node
        target = root / paths.NETPLAN_RAILS_INSTALLED.lstrip("/")
        target.parent.mkdir(parents=True)
        target.write_text(files[paths.netplan_rails(node)], encoding="utf-8")
        target.chmod(0o600)
        run = subprocess.run(
            [NETPLAN, "generate", "--root-dir", str(root)], capture_output=True, text=True, check=False
        )
        assert run.returncode == 0 and "Error" not in run.stderr, run.stderr
        units = {p.name: p.read_text(encoding="utf-8") for p in (root / "run/systemd/network").glob("*.network")}
        for port, spec in _rails_of(files, node).items():
            unit = configparser.ConfigParser(strict=False)
            unit.read_string(units[f"10-netplan-{port}.network"])
            assert unit["Match"]["Name"] == port
            assert unit["Network"]["Address"] == spec["addresses"][0]  # type: ignore[index]


def test_bad_rail_file_is_refused_by_netplan(tmp_path: Path) -> None:
    """The tool is a real judge: a file netplan cannot read fails."""
    target = tmp_path / "etc/netplan/60.yaml"
    target.parent.mkdir(parents=True)
    target.write_text("network:\n  version: 2\n  ethernets:\n    ens1: {addresses: [10.0.0.300/24]}\n")
    target.chmod(0o600)
    run = subprocess.run(
        [NETPLAN, "generate", "--root-dir", str(tmp_path)], capture_output=True, text=True, check=False
    )
    assert run.returncode != 0
