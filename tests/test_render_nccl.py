"""The nccl output family: nccl.conf per GPU group and the NCCL topology XML per server model."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path

import pytest
import yaml
from factories import dgx_data, valid_from
from helpers import BLUEPRINTS
from pydantic import ValidationError

from clusterforge.catalog import GPU, PortGroup, Server
from clusterforge.catalog.models import PCIeSwitch
from clusterforge.model import ComputeFabric
from clusterforge.model.fabric import RoCE
from clusterforge.model.nccl import nccl_variables
from clusterforge.pipeline import load_valid, render_files
from clusterforge.render import paths
from clusterforge.render.nccl.nccl import hca_devices
from clusterforge.validate import ValidBlueprint


@cache
def _rendered(path: Path) -> tuple[ValidBlueprint, dict[str, str]]:
    valid = load_valid(path)
    return valid, render_files(valid)


def parse_conf(text: str) -> dict[str, str]:
    """NAME=value lines as NCCL reads them (lines without '=' are skipped), refusing duplicates."""
    settings: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert "=" not in line, f"comment with '=' would be read as a setting by older NCCL: {line}"
            continue
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        assert sep and name == name.strip() and value == value.strip(), line
        assert name not in settings, f"{name} set twice"
        settings[name] = value
    return settings


def gpu_groups(valid: ValidBlueprint) -> list[tuple[str, Server, ComputeFabric]]:
    """(group, server, compute fabric) of every group that should get an nccl.conf."""
    bp, out = valid.blueprint, []
    for group in bp.node_groups:
        server = valid.catalog.require(group.model, Server)
        if server.gpus is None or not server.port_groups("compute"):
            continue
        for fabric in bp.fabrics.values():
            if isinstance(fabric, ComputeFabric) and (
                group.name in fabric.node_groups if fabric.node_groups is not None else True
            ):
                out.append((group.name, server, fabric))
                break
    return out


def amd(valid: ValidBlueprint, server: Server) -> bool:
    assert server.gpus is not None
    return valid.catalog.require(server.gpus.model, GPU).vendor == "AMD"


def conf_of(valid: ValidBlueprint, group: str, server: Server) -> str:
    """The group's settings file: rccl.conf for AMD GPUs, nccl.conf otherwise."""
    return paths.rccl_conf(group) if amd(valid, server) else paths.nccl_conf(group)


def test_every_example_blueprint_gets_nccl_files() -> None:
    assert BLUEPRINTS, "no example blueprints found"
    for path in BLUEPRINTS:
        valid, files = _rendered(path)
        confs = sorted(p for p in files if p.startswith("nccl/") and p.endswith(".conf"))
        assert confs == sorted(conf_of(valid, g, s) for g, s, _ in gpu_groups(valid)), path.name
        assert confs, path.name


def test_amd_gpus_get_rccl_conf_installed_where_rccl_reads_it() -> None:
    """AMD's RCCL docs: NCCL_CONF_FILE defaults to ~/.rccl.conf or /etc/rccl.conf; RCCL takes NCCL_* names.
    The MI300X example gets an rccl.conf (the RoCE class as NCCL_IB_TC, DSCP 26 -> 26 << 2 | ECN 2 = 106),
    no nccl.conf, no NCCL topology file, and the playbook installs it as /etc/rccl.conf."""
    path = next(p for p in BLUEPRINTS if p.stem == "mi300x-roce")
    _, files = _rendered(path)
    settings = parse_conf(files["nccl/gpu.rccl.conf"])
    assert settings["NCCL_IB_TC"] == "106" and settings["NCCL_SOCKET_IFNAME"] == "=bond0"
    assert "installed as /etc/rccl.conf" in files["nccl/gpu.rccl.conf"]
    assert "nccl/gpu.conf" not in files and not [p for p in files if p.startswith("nccl/topology/")]
    nccl_vars = yaml.safe_load(files["ansible/roles/cf_nccl/vars/main.yml"])
    assert nccl_vars["cf_nccl_by_group"]["gpu"]["files"] == [{"src": "nccl/gpu.rccl.conf", "dest": "etc/rccl.conf"}]


@pytest.mark.parametrize("path", BLUEPRINTS, ids=lambda p: p.stem)
def test_conf_names_are_nccl_variables_and_hcas_follow_rails(path: Path) -> None:
    valid, files = _rendered(path)
    known = nccl_variables()
    for group, server, fabric in gpu_groups(valid):
        settings = parse_conf(files[conf_of(valid, group, server)])
        assert set(settings) <= known, set(settings) - known
        assert list(settings) == sorted(settings)
        compute = server.port_groups("compute")
        assert settings["NCCL_SOCKET_IFNAME"] == "=bond0"
        if fabric.technology == "infiniband":
            assert "NCCL_IB_GID_INDEX" not in settings and "NCCL_IB_TC" not in settings
        if not all(g.devices for g in compute):
            assert "NCCL_IB_HCA" not in settings, "never a guess in port order: it may name a storage port"
            continue
        hca = settings["NCCL_IB_HCA"]
        assert hca.startswith("="), "exact-match form, so mlx5_1 does not also pick mlx5_10"
        entries = hca[1:].split(",")
        assert len(entries) == sum(g.count for g in compute)
        assert all(entry.endswith(":1") for entry in entries)
        assert [entry.removesuffix(":1") for entry in entries] == [d for g in compute for d in g.devices or []]


def test_roce_traffic_class_follows_the_lossless_class_and_gid_index_is_not_forced() -> None:
    """l40s-inference declares the lossless class DSCP 26 / PFC priority 3: NCCL_IB_TC = 26 << 2 | 2 (ECN
    capable) = 106, NVIDIA's usual RoCE value; NCCL_IB_GID_INDEX is left to NCCL's own detection."""
    _, files = _rendered(next(p for p in BLUEPRINTS if p.stem == "l40s-inference"))
    settings = parse_conf(files[paths.nccl_conf("inf")])
    assert settings["NCCL_IB_TC"] == "106"
    assert "NCCL_IB_GID_INDEX" not in settings
    cluster = yaml.safe_load(files["ansible/cluster.yml"])
    assert cluster["cf_networks"]["compute"]["roce_qos"] == {
        "dscp": 26,
        "pfc_priority": 3,
        "nccl_traffic_class": 106,
    }


def _roce_data(roce: dict[str, object]) -> dict[str, object]:
    data = dgx_data(8, technology="ethernet", leaf="nvidia/sn5600", spine="nvidia/sn5600", core=None)
    data["fabrics"]["compute"]["roce"] = roce
    return data


def test_roce_without_qos_sets_no_traffic_class() -> None:
    settings = parse_conf(render_files(valid_from(_roce_data({})))["nccl/gpu.conf"])
    assert "NCCL_IB_TC" not in settings and "NCCL_IB_GID_INDEX" not in settings
    settings = parse_conf(render_files(valid_from(_roce_data({"gid_index": 5})))["nccl/gpu.conf"])
    assert settings["NCCL_IB_GID_INDEX"] == "5"


@pytest.mark.parametrize(
    ("roce", "message"),
    [
        ({"traffic_class": 106}, "roce.traffic_class needs roce.qos"),
        ({"traffic_class": 106, "qos": {"dscp": 24}}, "carries DSCP 26, but roce.qos.dscp is 24; use 98"),
    ],
)
def test_traffic_class_without_matching_qos_is_refused(roce: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RoCE.model_validate(roce)


@pytest.mark.parametrize("path", BLUEPRINTS, ids=lambda p: p.stem)
def test_blueprint_overrides_appear(path: Path) -> None:
    valid, files = _rendered(path)
    for group in valid.blueprint.node_groups:
        if not group.nccl:
            continue
        settings = parse_conf(files[paths.nccl_conf(group.name)])
        for name, value in group.nccl.items():
            assert settings[name] == str(value)


def test_h200_pod_conf_exactly() -> None:
    _, files = _rendered(next(p for p in BLUEPRINTS if p.stem == "h200-training-pod"))
    assert parse_conf(files["nccl/gpu.conf"]) == {
        "NCCL_IB_QPS_PER_CONNECTION": "2",
        "NCCL_SOCKET_IFNAME": "=bond0",
    }
    assert "NCCL_IB_HCA NOT SET" in files["nccl/gpu.conf"]


def _nics(root: ET.Element) -> list[ET.Element]:
    return [pci for pci in root.iter("pci") if pci.find("nic") is not None]


@pytest.mark.parametrize("path", BLUEPRINTS, ids=lambda p: p.stem)
def test_topology_xml_parses_with_the_models_gpus_and_nics(path: Path) -> None:
    valid, files = _rendered(path)
    models = {
        valid.blueprint.node_groups[[g.name for g in valid.blueprint.node_groups].index(group)].model
        for group, _, _ in gpu_groups(valid)
    }
    for model in models:
        server = valid.catalog.require(model, Server)
        name = paths.nccl_topology(model)
        if server.pcie is None or amd(valid, server):
            assert name not in files
            continue
        root = ET.fromstring(files[name])
        assert root.tag == "system" and root.get("version") == "1"
        assert server.gpus is not None
        assert len([p for p in root.iter("pci") if p.get("class") == "0x030200"]) == server.gpus.count
        compute = server.port_groups("compute")
        nics = _nics(root)
        assert len(nics) == sum(g.count for g in compute)
        nic_class = "0x020000" if compute[0].technology == "ethernet" else "0x020700"
        assert [p.get("class") for p in nics] == [nic_class] * len(nics)
        assert len([p for p in root.iter("pci") if p.get("class") == "0x020700"]) == (
            len(nics) if nic_class == "0x020700" else 0
        )
        devices, _ = hca_devices(server)
        assert sorted(net.get("name", "") for n in nics for net in n.iterfind("nic/net")) == sorted(devices)
        assert [c.get("numaid") for c in root.findall("cpu")] == [
            str(s) for s in sorted({sw.socket for sw in server.pcie.switches})
        ]
        assert "PLACEHOLDERS" in files[name]  # no example model has every real PCI address yet
        assert "NCCL_TOPO_FILE" not in parse_conf(files[paths.nccl_conf(gpu_groups(valid)[0][0])])


def test_dgx_h100_uses_the_documented_devices_and_nic_addresses() -> None:
    valid = valid_from(dgx_data(8))
    files = render_files(valid)
    settings = parse_conf(files["nccl/gpu.conf"])
    assert settings["NCCL_IB_HCA"] == ("=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_9:1,mlx5_10:1,mlx5_11:1")
    assert "NCCL_SOCKET_IFNAME" not in settings  # the generated blueprint has no in-band network
    root = ET.fromstring(files[paths.nccl_topology("nvidia/dgx-h100")])
    pairs = [(n.get("busid"), n.find("nic/net").get("name")) for n in _nics(root)]  # type: ignore[union-attr]
    assert pairs[0] == ("0000:18:00.0", "mlx5_0") and pairs[-1] == ("0000:dc:00.0", "mlx5_11")
    # GPU addresses are still placeholders, so NCCL_TOPO_FILE stays off
    assert "NCCL_TOPO_FILE" not in settings and "PLACEHOLDERS: 8 GPU" in files[paths.nccl_topology("nvidia/dgx-h100")]


def test_override_enables_topo_file_and_replaces_derived_values() -> None:
    data = dgx_data(8)
    data["node_groups"][0]["nccl"] = {"NCCL_TOPO_FILE": paths.NCCL_TOPOLOGY_INSTALLED, "NCCL_IB_HCA": "=mlx5_0:1"}
    settings = parse_conf(render_files(valid_from(data))["nccl/gpu.conf"])
    assert settings["NCCL_TOPO_FILE"] == "/etc/nccl/topology.xml"
    assert settings["NCCL_IB_HCA"] == "=mlx5_0:1"


def test_rendering_is_deterministic() -> None:
    path = next(p for p in BLUEPRINTS if p.stem == "l40s-inference")
    first = {k: v for k, v in render_files(load_valid(path)).items() if k.startswith("nccl/")}
    second = {k: v for k, v in render_files(load_valid(path)).items() if k.startswith("nccl/")}
    assert first == second and first


def test_port_group_devices_must_match_count() -> None:
    base = {"name": "ib", "count": 2, "speed_gbps": 400, "cage": "osfp", "role": "compute"}
    assert PortGroup.model_validate({**base, "devices": ["mlx5_0", "mlx5_1"]}).devices == ["mlx5_0", "mlx5_1"]
    with pytest.raises(ValidationError, match="2 ports"):
        PortGroup.model_validate({**base, "devices": ["mlx5_0"]})
    with pytest.raises(ValidationError, match="not a device name"):
        PortGroup.model_validate({**base, "devices": ["mlx5_0", "mlx5 1"]})


def test_pcie_nic_bus_ids_are_checked() -> None:
    base = {"socket": 0, "gpus": [0], "nics": ["ib1"]}
    assert PCIeSwitch.model_validate({**base, "nic_bus_ids": ["0000:18:00.0"]}).nic_bus_ids == ["0000:18:00.0"]
    with pytest.raises(ValidationError, match="PCI address"):
        PCIeSwitch.model_validate({**base, "nic_bus_ids": ["18:00.0"]})
    with pytest.raises(ValidationError, match="nic_bus_ids lists 2 addresses for 1 devices"):
        PCIeSwitch.model_validate({**base, "nic_bus_ids": ["0000:18:00.0", "0000:40:00.0"]})


def test_real_gpu_addresses_from_a_catalog_file_turn_the_topology_file_on(tmp_path: Path) -> None:
    """With every bus ID known (here: made-up GPU addresses in a site catalog), NCCL_TOPO_FILE points at
    the topology file, the file has no placeholders, and the inventory installs it on the GPU nodes."""
    import yaml

    from clusterforge.catalog.loader import DATA_DIR

    entry = yaml.safe_load((DATA_DIR / "servers.yaml").read_text())["servers"]["nvidia/dgx-h100"]
    for k, switch in enumerate(entry["pcie"]["switches"]):
        switch["gpu_bus_ids"] = [f"0000:{0x20 + 8 * k + i:02x}:00.0" for i in range(len(switch["gpus"]))]
    catalog = tmp_path / "site-catalog.yaml"
    catalog.write_text(yaml.safe_dump({"servers": {"nvidia/dgx-h100": entry}}))
    data = dgx_data(8)
    data["catalogs"] = [str(catalog)]
    files = render_files(valid_from(data))
    topology = files[paths.nccl_topology("nvidia/dgx-h100")]
    assert "PLACEHOLDERS" not in topology and 'busid="0000:20:00.0"' in topology
    assert parse_conf(files["nccl/gpu.conf"])["NCCL_TOPO_FILE"] == paths.NCCL_TOPOLOGY_INSTALLED
    assert "src: nccl/topology/nvidia_dgx-h100.xml" in files["ansible/roles/cf_nccl/vars/main.yml"]


def test_placeholder_topology_files_are_not_installed() -> None:
    files = render_files(valid_from(dgx_data(8)))
    assert paths.nccl_topology("nvidia/dgx-h100") in files
    assert "nccl/topology/" not in files["ansible/roles/cf_nccl/vars/main.yml"]
