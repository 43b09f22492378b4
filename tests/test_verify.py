"""`clusterforge verify`: planted miscablings are all found, in technician terms, and a clean fabric passes.

InfiniBand: ibsim simulates the h200 example's topology file miscabled on purpose (a cable pulled, a
leaf-to-leaf cable added, two cables exchanged at a leaf, a host's two rail cables exchanged), and the real
`ibnetdiscover` output of it is what verify reads. LLDP: lldpctl JSON in lldpd's format (an `interface`
mapping for one interface, a list of one-entry mappings for several), written per host from the plan with
faults planted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from captures import lldp_of
from helpers import REPO, run_cli
from ib_harness import bring_up, require_tools
from ib_topology_edit import NetFile
from test_infiniband import h200_with_partition, rendered

from clusterforge.pipeline import analyse, load_valid
from clusterforge.render.handoff.handoff_common import cable_table

H200 = REPO / "blueprints" / "h200-training-pod.yaml"
L40S = REPO / "blueprints" / "l40s-inference.yaml"


@pytest.fixture(scope="module")
def h200_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_tools()
    analysis = analyse(load_valid(H200))
    return rendered(analysis.valid, analysis.topo, tmp_path_factory.mktemp("h200"))


def discover(folder: Path, net: NetFile, work: Path) -> Path:
    """ibnetdiscover -p of the fabric `net` describes, as simulated."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "topology.net").write_text(net.text(), encoding="utf-8")
    run = bring_up(folder, work / "run", net_file=work / "topology.net")
    out = work / "ibnetdiscover.txt"
    out.write_text(run.discovered, encoding="utf-8")
    return out


def test_a_clean_fabric_matches(h200_folder: Path, tmp_path: Path) -> None:
    found = discover(h200_folder, NetFile((h200_folder / "topology.net").read_text()), tmp_path)
    result = run_cli("verify", str(H200), "--ibnetdiscover", str(found))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "506 planned cables, 506 links discovered, 506 as planned, 0 problems" in result.stdout
    assert result.stdout.endswith("h200-training-pod: the fabric matches the plan\n")


def test_every_planted_miscabling_is_found(h200_folder: Path, tmp_path: Path) -> None:
    net = NetFile((h200_folder / "topology.net").read_text())
    net.unplug("gpu005 ib3", 1)  # missing: compute-00035 (rail 3)
    net.plug("compute-leaf003", 32, "compute-leaf004", 32)  # unexpected: a leaf-to-leaf cable on free ports
    net.exchange("compute-leaf003", 1, 2)  # swapped at the leaf: gpu001's and gpu002's rail-3 cables
    ib1, ib2 = net.unplug("gpu012 ib1", 1), net.unplug("gpu012 ib2", 1)  # gpu012's rails 1 and 2 exchanged
    net.plug("gpu012 ib1", 1, *ib2)
    net.plug("gpu012 ib2", 1, *ib1)
    net.unplug("gpu020 ib4", 1)  # gpu020's rail-4 cable moved to the free port of a rail-5 leaf
    net.plug("gpu020 ib4", 1, "compute-leaf005", 32)
    found = discover(h200_folder, net, tmp_path)
    result = run_cli("verify", str(H200), "--ibnetdiscover", str(found))
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith("error ")]
    assert lines == [
        "error CF-VERIFY-001: missing cable compute-00035 (node-leaf, rail 3): A02 U9 gpu005 ib3 to "
        "N01 U39 compute-leaf003 ib3/1 (IB port 5)",
        "error CF-VERIFY-003: swapped: cables compute-00003 and compute-00011 are exchanged at "
        "N01 U39 compute-leaf003 ib1/1 (IB port 1) and ib1/2; each port holds the other's cable",
        "error CF-VERIFY-002: unexpected cable: N01 U39 compute-leaf003 ib16/2 (IB port 32) to "
        "N01 U38 compute-leaf004 ib16/2 (IB port 32) (neither port is cabled in the plan)",
        "error CF-VERIFY-004: wrong rail: B01 U9 gpu020 ib4 (rail 4, cable compute-00156) is cabled to "
        "N01 U37 compute-leaf005 ib16/2 (IB port 32) (a rail 5 leaf)",
        "error CF-VERIFY-004: wrong rails: cables compute-00089 (rail 1) and compute-00090 (rail 2) are "
        "exchanged; found N01 U41 compute-leaf001 ib6/2 (IB port 12) to A04 U17 gpu012 ib2 and "
        "A04 U17 gpu012 ib1 to N01 U40 compute-leaf002 ib6/2 (IB port 12)",
    ]
    assert "506 planned cables, 506 links discovered, 500 as planned, 5 problems" in result.stdout
    # the cabling plan (its per-link view) agrees with the labels and places verify names
    csv = (REPO / "inventories" / "h200-training-pod" / "handoff" / "links.csv").read_text()
    assert '"compute-00035","compute","node-leaf",3,"A","A02",9,"gpu005","ib3"' in csv
    assert '"compute-00003","compute","node-leaf",3,"A","A01",1,"gpu001","ib3"' in csv
    assert '"compute-00011","compute","node-leaf",3,"A","A01",9,"gpu002","ib3"' in csv
    assert '"compute-00156","compute","node-leaf",4,"B","B01",9,"gpu020","ib4"' in csv


def test_json_and_html_reports(h200_folder: Path, tmp_path: Path) -> None:
    net = NetFile((h200_folder / "topology.net").read_text())
    net.unplug("gpu005 ib3", 1)
    found = discover(h200_folder, net, tmp_path)
    as_json = run_cli("verify", str(H200), "--ibnetdiscover", str(found), "--format", "json")
    assert as_json.returncode == 1
    data = json.loads(as_json.stdout)
    assert data["matches"] is False
    (problem,) = data["sources"][0]["problems"]
    assert problem["kind"] == "missing" and problem["code"] == "CF-VERIFY-001"
    assert problem["planned"][0]["a"] == {"rack": "A02", "u": 9, "device": "gpu005", "port": "ib3"}
    page = tmp_path / "verify.html"
    as_html = run_cli("verify", str(H200), "--ibnetdiscover", str(found), "--format", "html", "-o", str(page))
    assert as_html.returncode == 1
    text = page.read_text(encoding="utf-8")
    assert "compute-00035" in text and "A02 U9 gpu005 ib3" in text and "plug in (both ends)" in text


def test_an_unreadable_discovered_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "fabric.txt"
    bad.write_text("hello\n", encoding="utf-8")
    result = run_cli("verify", str(H200), "--ibnetdiscover", str(bad))
    assert result.returncode == 1
    assert f"error CF-VERIFY-006: {bad}: no Switch or Ca lines: not ibnetdiscover output" in result.stderr
    assert "Traceback" not in result.stderr


# --- LLDP ----------------------------------------------------------------------------------------------------
def planned_neighbours(hosts: list[str]) -> dict[str, dict[str, tuple[str, str]]]:
    analysis = analyse(load_valid(L40S))
    found: dict[str, dict[str, tuple[str, str]]] = {host: {} for host in hosts}
    for row in cable_table(analysis.valid, analysis.topo).rows():
        if row.link.a in found and row.link.fabric in ("compute", "inband"):
            found[row.link.a][row.link.a_port] = (row.link.b, row.link.b_port)
    return found


def test_lldp_clean_and_miscabled(tmp_path: Path) -> None:
    hosts = ["inf001", "inf002", "inf003"]
    neighbours = planned_neighbours(hosts)
    for host in hosts:
        (tmp_path / f"{host}.json").write_text(json.dumps(lldp_of(neighbours[host])), encoding="utf-8")
    files = [str(tmp_path / f"{host}.json") for host in hosts]
    clean = run_cli("verify", str(L40S), *[arg for f in files for arg in ("--lldp", f)])
    assert clean.returncode == 0, clean.stdout
    assert "LLDP of 3 hosts: 18 planned cables, 18 links discovered, 18 as planned, 0 problems" in clean.stdout
    # labels: each 1:2 splitter fibre from an MPO of an SN5600 cage carries two ports (inf001 ens3 and ens4
    # are legs 1 and 2 of compute-00002); planted: inf002's ens1 and ens2 exchanged at the host (one leaf
    # serves all four ports: swapped, not a wrong rail); inf003's ens4 unplugged; inf001's ens4 moved to a
    # free leaf port (so its planned cable is missing too); one merged file holds all three hosts
    bad = {host: dict(neighbours[host]) for host in hosts}
    bad["inf002"]["ens1"], bad["inf002"]["ens2"] = neighbours["inf002"]["ens2"], neighbours["inf002"]["ens1"]
    del bad["inf003"]["ens4"]
    bad["inf001"]["ens4"] = ("compute-leaf001", "swp60s0")
    merged = tmp_path / "all.json"
    merged.write_text(json.dumps({host: lldp_of(bad[host]) for host in hosts}), encoding="utf-8")
    result = run_cli("verify", str(L40S), "--lldp", str(merged))
    assert result.returncode == 1
    kinds = [line.split(":")[0] for line in result.stdout.splitlines() if line.startswith("error ")]
    assert kinds == ["error CF-VERIFY-001", "error CF-VERIFY-001", "error CF-VERIFY-003", "error CF-VERIFY-002"]
    assert "missing cable compute-00002/2 (node-leaf, rail 4): R01 U1 inf001 ens4 to R03 U40 compute-leaf001" in (
        result.stdout
    )
    assert (
        "missing cable compute-00006/2 (node-leaf, rail 4): R01 U9 inf003 ens4 to R03 U40 compute-leaf001 swp3s3"
        in (result.stdout)
    )
    assert (
        "swapped: cables compute-00003/1 and compute-00003/2 are exchanged at R03 U40 compute-leaf001 swp2s0 and swp2s1"
        in (result.stdout)
    )
    assert (
        "unexpected cable: R03 U40 compute-leaf001 swp60s0 to R01 U1 inf001 ens4 (inf001 ens4 should hold "
        "compute-00002/2)" in result.stdout
    )


def test_discovered_names_are_escaped_on_the_page(tmp_path: Path) -> None:
    """Names come from the built fabric (anyone can set a system name): the page shows them as text."""
    host = tmp_path / "inf001.json"
    host.write_text(json.dumps(lldp_of({"ens1": ("<script>alert(1)</script>", "swp1")})), encoding="utf-8")
    page = tmp_path / "page.html"
    result = run_cli("verify", str(L40S), "--lldp", str(host), "--format", "html", "-o", str(page))
    assert result.returncode == 1
    text = page.read_text(encoding="utf-8")
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_lldp_port_from_the_description_when_the_id_is_a_mac() -> None:
    """A Linux neighbour's lldpd sends its MAC as port id and the interface name as port description (lldpd's
    default); a name-keyed chassis or one with a `name` field gives the system name."""
    from clusterforge.verify.discovered import End, parse_lldp

    data = {
        "lldp": {
            "interface": [
                {
                    "swp1": {
                        "chassis": {"inf001": {"id": {"type": "mac", "value": "aa:bb:cc:00:00:01"}}},
                        "port": {"id": {"type": "mac", "value": "aa:bb:cc:00:00:02"}, "descr": "ens1"},
                    }
                },
                {
                    "swp2": {
                        "chassis": {"name": [{"value": "inf002"}], "id": [{"type": "mac", "value": "x"}]},
                        "port": {"id": [{"type": "ifname", "value": "ens2"}]},
                    }
                },
                {"swp3": {"port": {"id": {"type": "ifname", "value": "ens3"}}}},
                {"swp4": {"chassis": {"id": {"type": "mac", "value": "y"}}, "port": {"descr": "ens4"}}},
            ]
        }
    }
    seen = parse_lldp(data, "compute-leaf001", "leaf.json")
    assert [(s.a, s.b) for s in seen] == [
        (End("compute-leaf001", "swp1"), End("inf001", "ens1")),
        (End("compute-leaf001", "swp2"), End("inf002", "ens2")),
    ]


def test_opensm_files_take_the_built_fabrics_guids(h200_folder: Path, tmp_path: Path) -> None:
    """The built fabric has GUIDs of its own: on a fabric that matches the plan, --opensm-out writes
    root-guids.conf and partitions.conf with them, and OpenSM ranks the spines from that root file."""
    blueprint = h200_with_partition(tmp_path)
    # the same cables, other GUIDs (a vendor's OUI instead of the plan's)
    built = (h200_folder / "topology.net").read_text().replace("guid=0x0002c", "guid=0x0008f")
    found = discover(h200_folder, NetFile(built), tmp_path / "built")
    out = tmp_path / "opensm"
    result = run_cli("verify", str(blueprint), "--ibnetdiscover", str(found), "--opensm-out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    roots = (out / "infiniband" / "compute" / "root-guids.conf").read_text(encoding="utf-8").split()
    assert roots == [f"0x0008f9000010000{i}" for i in range(1, 5)]  # compute-spine001..004
    partitions = (out / "infiniband" / "compute" / "partitions.conf").read_text(encoding="utf-8")
    training = next(line for line in partitions.splitlines() if line.startswith("training="))
    assert training.count("0x0008fa") == 31 * 8 and "0x0002c" not in training
    # OpenSM on the built fabric, its root file enabled and pointing at the written one
    conf = (h200_folder / "opensm-ufm001.conf").read_text(encoding="utf-8")
    conf = conf.replace(
        "# root_guid_file /etc/opensm/root-guids.conf", f"root_guid_file {out}/infiniband/compute/root-guids.conf"
    )
    conf = conf.replace("/etc/opensm/partitions.conf", f"{out}/infiniband/compute/partitions.conf")
    (tmp_path / "opensm.conf").write_text(conf, encoding="utf-8")
    run = bring_up(
        h200_folder, tmp_path / "run", net_file=tmp_path / "built" / "topology.net", conf_file=tmp_path / "opensm.conf"
    )
    assert run.errors() == [] and "SUBNET UP" in run.opensm_log
    assert "Fabric has 4 switches at rank 0 (roots)" in run.opensm_log
