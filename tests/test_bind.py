"""`clusterforge bind`: a node's facts pin its planned ports to the devices it has, and netplan then matches
them (by MAC with set-name for Ethernet, by name for IPoIB).

The facts files in tests/bind are in the formats the tools print; the values are a Supermicro HGX H200
node's as it could report them (no vendor table gives them: that is why bind exists):
- gpu001.ip-link.json: `ip -details -json link show` (iproute2); "parentbus"/"parentdev" as in iproute2's
  patch 'ip link: show parent device and bus', whose example prints "parentbus": "usb", "parentdev": "1-10:1.1";
- gpu001.ibdev2netdev.txt: `ibdev2netdev -v` (PCI address first); gpu002.ibdev2netdev.txt: plain
  `ibdev2netdev`, 'mlx5_0 port 1 ==> ib0 (Up)' as MLNX_OFED prints it (e.g. the Azure HPC and NFS-over-RDMA
  guides quote it);
- gpu002.setup.json: `ansible gpu002 -m setup` output ('host | SUCCESS => {"ansible_facts": ...}'), with
  ansible_interfaces and ansible_<name>.macaddress/pciid/type as the setup module's Linux network facts give;
- gpu003.ip-link.json and gpu004.ibdev2netdev.txt: malformed (a missing comma; an arrow that is not '==>').
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import yaml
from helpers import REPO, run_cli

from clusterforge.expand import expand
from clusterforge.pipeline import load_valid
from clusterforge.render import RenderContext, paths
from clusterforge.render.network.network import render_network

FACTS = REPO / "tests" / "bind"
NETPLAN = shutil.which("netplan") or "/usr/sbin/netplan"
GOOD = ["gpu001.ip-link.json", "gpu001.ibdev2netdev.txt", "gpu002.setup.json", "gpu002.ibdev2netdev.txt"]


def _bound_blueprint(tmp_path: Path) -> Path:
    for name in GOOD:
        shutil.copy(FACTS / name, tmp_path / name)
    blueprint = tmp_path / "h200.yaml"
    blueprint.write_text((REPO / "blueprints/h200-training-pod.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    run = run_cli("bind", str(blueprint), *(str(tmp_path / n) for n in GOOD))
    assert run.returncode == 0, run.stderr
    assert "gpu001: 12 ports bound" in run.stdout and "gpu002: 12 ports bound" in run.stdout
    with blueprint.open("a", encoding="utf-8") as handle:
        handle.write("include: [h200.bindings.yaml]\n")
    return blueprint


def test_bind_pins_every_planned_port(tmp_path: Path) -> None:
    blueprint = _bound_blueprint(tmp_path)
    bindings = yaml.safe_load((tmp_path / "h200.bindings.yaml").read_text(encoding="utf-8"))["bindings"]
    one = bindings["gpu001"]
    assert one["ib1"]["name"] == "ibp26s0" and one["ib1"]["rdma"] == "mlx5_0" and one["ib1"]["pci"] == "0000:1a:00.0"
    assert one["ib8"]["name"] == "ibp220s0" and one["ib8"]["rdma"] == "mlx5_9"
    assert one["stor2"] == {
        "name": "enp42s0f1np1",
        "mac": "a0:88:c2:20:00:02",
        "pci": "0000:2a:00.1",
        "rdma": "mlx5_5",
        "source": one["stor2"]["source"],
    }
    assert one["eno1"]["mac"] == "3c:ec:ef:10:00:01" and "rdma" not in one["eno1"]
    assert bindings["gpu002"]["eno2"]["mac"] == "3c:ec:ef:10:01:02"  # from the Ansible facts
    assert bindings["gpu002"]["ib5"]["name"] == "ibp155s0"
    # the blueprint with the bindings included: gpu001's netplan matches what it has
    valid = load_valid(blueprint)
    topo, findings = expand(valid)
    text = render_network(RenderContext(valid, topo, findings))[paths.netplan_rails("gpu001")]
    network = yaml.safe_load(text)["network"]
    assert network["ethernets"]["ib1"]["match"] == {"name": "ibp26s0"}
    assert network["ethernets"]["stor1"]["match"] == {"macaddress": "a0:88:c2:20:00:01"}
    assert network["ethernets"]["stor1"]["set-name"] == "enp42s0f0np0"
    assert network["bonds"]["bond0"]["interfaces"] == ["eno1", "eno2"]
    root = tmp_path / "root"
    target = root / paths.NETPLAN_RAILS_INSTALLED.lstrip("/")
    target.parent.mkdir(parents=True)
    target.write_text(text, encoding="utf-8")
    target.chmod(0o600)
    run = subprocess.run([NETPLAN, "generate", "--root-dir", str(root)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    link = configparser.ConfigParser(strict=False, interpolation=None)
    link.optionxform = str  # type: ignore[assignment,method-assign]
    link.read_string((root / "run/systemd/network/10-netplan-stor1.link").read_text(encoding="utf-8"))
    assert link["Match"]["PermanentMACAddress"] == "a0:88:c2:20:00:01" and link["Link"]["Name"] == "enp42s0f0np0"
    # gpu003 was not bound: still CF-NET-001, its ports left out of its netplan
    unbound = yaml.safe_load(render_network(RenderContext(valid, topo, findings))[paths.netplan_rails("gpu003")])
    assert "ethernets" not in unbound["network"] and "bonds" not in unbound["network"]


def test_deeply_nested_facts_are_a_located_error_not_a_crash(tmp_path: Path) -> None:
    """Facts nested 200,000 deep once ended `bind` with an internal RecursionError (exit 3)."""
    facts = tmp_path / "gpu001.ip-link.json"
    facts.write_text("[" * 200_000 + "]" * 200_000)
    run = run_cli("bind", str(REPO / "blueprints/h200-training-pod.yaml"), str(facts), "-o", str(tmp_path / "o"))
    assert run.returncode == 1 and "gpu001.ip-link.json:1:65: values nest deeper than 64 levels" in run.stderr


def test_malformed_facts_are_a_located_error(tmp_path: Path) -> None:
    blueprint = str(REPO / "blueprints/h200-training-pod.yaml")
    out = str(tmp_path / "out.yaml")
    run = run_cli("bind", blueprint, str(FACTS / "gpu003.ip-link.json"), "-o", out)
    assert run.returncode == 1
    assert "CF-NET-002" in run.stderr and "gpu003.ip-link.json:2:16: not JSON" in run.stderr
    run = run_cli("bind", blueprint, str(FACTS / "gpu004.ibdev2netdev.txt"), "-o", out)
    assert run.returncode == 1 and "gpu004.ibdev2netdev.txt:2: not an ibdev2netdev line" in run.stderr
    assert not Path(out).exists()


def test_facts_of_a_node_not_planned_are_refused(tmp_path: Path) -> None:
    facts = tmp_path / "gpu999.ip-link.json"
    facts.write_text("[]\n", encoding="utf-8")
    run = run_cli("bind", str(REPO / "blueprints/h200-training-pod.yaml"), str(facts), "-o", str(tmp_path / "o.yaml"))
    assert run.returncode == 1 and "'gpu999' is not a node of the blueprint" in run.stderr


def test_bindings_feed_the_nccl_topology_file(tmp_path: Path) -> None:
    """The model's NCCL topology file names each compute NIC by the RDMA device bind read and places it at
    the PCI address bind read, once every node of the model is bound and all agree (one file per model). On
    main it kept the catalog's guesses (mlx5_0..mlx5_7 in port order, which would have named gpu001's
    storage NICs mlx5_4/5) and placeholder addresses in domain ffff, and the render refused the bound
    NCCL_IB_HCA against it."""
    from clusterforge.pipeline import render_files

    data = yaml.safe_load((REPO / "blueprints/h200-training-pod.yaml").read_text(encoding="utf-8"))
    data["node_groups"][0]["count"] = 2  # the two nodes tests/bind holds facts of
    data.pop("workloads", None)
    blueprint = tmp_path / "h200.yaml"
    blueprint.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    for name in GOOD:
        shutil.copy(FACTS / name, tmp_path / name)
    run = run_cli("bind", str(blueprint), *(str(tmp_path / n) for n in GOOD))
    assert run.returncode == 0, run.stderr
    with blueprint.open("a", encoding="utf-8") as handle:
        handle.write("include: [h200.bindings.yaml]\n")
    bound = yaml.safe_load((tmp_path / "h200.bindings.yaml").read_text(encoding="utf-8"))["bindings"]["gpu001"]
    files = render_files(load_valid(blueprint))
    root = ElementTree.fromstring(files["nccl/topology/supermicro_sys-821ge-tnhr-h200.xml"])
    nets = [(pci.get("busid"), pci.find("nic/net")) for pci in root.iter("pci")]
    nics = [(busid, net.get("name")) for busid, net in nets if net is not None]
    assert nics == [(bound[f"ib{k}"]["pci"], bound[f"ib{k}"]["rdma"]) for k in range(1, 9)]
    assert nics[4] == ("0000:9b:00.0", "mlx5_6")  # rail 5: mlx5_4/5 are the storage NICs
    assert (
        "BOUND: 8 NIC device names and 8 NIC PCI addresses" in files["nccl/topology/supermicro_sys-821ge-tnhr-h200.xml"]
    )
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_6:1" in files["nccl/gpu.conf"]
