"""Node software: the packages each node group gets follow the catalog (NVSwitch board, multi-node NVLink,
NVIDIA NICs) at the blueprint's versions; real apt honours the pins; glibc resolves the /etc/hosts block."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from factories import valid_from

from clusterforge.pipeline import load_valid, render_files
from clusterforge.render.software.software import group_software

DRIVER = "570.172.08"


def packages(blueprint: str) -> dict[str, list[str]]:
    valid = load_valid(Path("blueprints") / blueprint)
    return {g.name: [p.spec for p in group_software(valid, g).packages] for g in valid.blueprint.node_groups}


def test_hgx_nodes_get_fabric_manager_at_the_drivers_version() -> None:
    """HGX H200: 8 GPUs on one NVSwitch board (nvlink_domain 8 = count 8) need nvidia-fabricmanager of the
    driver's branch at its exact version; the CPU nodes with ConnectX NICs only DOCA-OFED."""
    got = packages("h200-training-pod.yaml")
    assert got["gpu"] == [
        f"nvidia-driver-570-server-open={DRIVER}-*",
        f"nvidia-fabricmanager-570={DRIVER}-*",
        "cuda-toolkit-12-8=12.8.*",
        "datacenter-gpu-manager-4-cuda12=1:4.2.3-*",
        "doca-ofed=2.10.0-*",
    ]
    assert got["ufm"] == ["doca-ofed=2.10.0-*"]


def test_nvl72_trays_get_imex_not_fabric_manager() -> None:
    """GB200 NVL72: the NVLink domain spans 18 trays (72 > 4 GPUs a tray): IMEX at the driver's version; the
    NVSwitches sit in the switch trays, so no Fabric Manager on the compute trays."""
    gb = packages("gb200-nvl72.yaml")["gb"]
    assert f"nvidia-imex-570={DRIVER}-*" in gb
    assert not [p for p in gb if "fabricmanager" in p]


def test_pcie_gpus_get_neither() -> None:
    """L40S: PCIe GPUs without NVLink (nvlink_domain 1): neither Fabric Manager nor IMEX."""
    inf = packages("l40s-inference.yaml")["inf"]
    assert inf[0] == f"nvidia-driver-570-server-open={DRIVER}-*"
    assert not [p for p in inf if "fabricmanager" in p or "imex" in p]


BRIDGE_SERVER = """servers:
  site/nvlink-bridge-4gpu:
    vendor: Site
    name: 4-GPU server, GPUs joined by NVLink bridges (no NVSwitch)
    u_height: 4
    weight_kg: 40
    max_power_w: 4000
    cpu: {model: X, sockets: 2, cores_per_socket: 32}
    memory_gb: 1024
    gpus: {model: nvidia/h100-sxm, count: 4, nvlink_domain: 4, NVSWITCH}
    ports:
      - {name: eno, count: 2, speed_gbps: 25, cage: sfp28, role: inband}
      - {name: bmc, count: 1, speed_gbps: 1, cage: rj45, role: oob}
"""


def bridge_packages(tmp_path: Path, nvswitch: str) -> list[str]:
    """The packages of two site-catalog servers whose 4 GPUs form one NVLink domain of 4."""
    catalog = tmp_path / "site-catalog.yaml"
    catalog.write_text(BRIDGE_SERVER.replace("NVSWITCH", f"nvswitch: {nvswitch}"), encoding="utf-8")
    data = {
        "version": 1,
        "name": "bridges",
        "site": {"name": "lab"},
        "catalogs": [str(catalog)],
        "floor": {"rows": [{"name": "A", "racks": 1, "rack_type": "generic/air-42u-40kw"}]},
        "node_groups": [{"name": "gpu", "model": "site/nvlink-bridge-4gpu", "count": 2, "role": "compute"}],
        "software": {"nvidia_driver": DRIVER},
        "fabrics": {
            "oob": {"kind": "oob", "switch": "nvidia/sn2201", "ipv4_pool": "10.1.0.0/24", "gateway": "10.1.0.1"}
        },
    }
    valid = valid_from(data)
    return [p.spec for p in group_software(valid, valid.blueprint.node_groups[0]).packages]


def test_nvlink_bridges_get_no_fabric_manager(tmp_path: Path) -> None:
    """4 GPUs in one NVLink domain of 4 (nvlink_domain = count, as on an HGX board) but joined by bridges:
    no NVSwitch to configure, so the driver alone (NVIDIA Fabric Manager user guide: Fabric Manager is for
    NVSwitch-based HGX and DGX systems); the same board said to carry NVSwitches gets Fabric Manager."""
    assert bridge_packages(tmp_path, "false") == [f"nvidia-driver-570-server-open={DRIVER}-*"]
    assert bridge_packages(tmp_path, "true") == [
        f"nvidia-driver-570-server-open={DRIVER}-*",
        f"nvidia-fabricmanager-570={DRIVER}-*",
    ]


def test_an_nvswitch_board_joins_all_its_gpus() -> None:
    """nvswitch: true with a smaller domain (pairs of bridged GPUs) contradicts itself: a catalog error."""
    from pydantic import ValidationError

    from clusterforge.catalog.models import GPUComplement

    with pytest.raises(ValidationError, match="nvswitch: true needs nvlink_domain equal to count"):
        GPUComplement.model_validate({"model": "nvidia/h100-sxm", "count": 4, "nvlink_domain": 2, "nvswitch": True})
    with pytest.raises(ValidationError, match="say whether NVSwitch chips join the 8 GPUs"):
        GPUComplement.model_validate({"model": "nvidia/h100-sxm", "count": 8, "nvlink_domain": 8})
    # pairs of bridged GPUs, PCIe GPUs and NVL72 trays need not say
    for count, domain in ((8, 2), (8, 1), (4, 72)):
        assert not GPUComplement.model_validate(
            {"model": "nvidia/h100-sxm", "count": count, "nvlink_domain": domain}
        ).fabric_manager


def test_no_version_no_package() -> None:
    valid = load_valid(Path("blueprints/h200-training-pod.yaml"))
    bare = valid.blueprint.model_copy(update={"software": valid.blueprint.software.model_copy(update={"cuda": None})})
    import dataclasses

    gpu = next(g for g in bare.node_groups if g.name == "gpu")
    specs = [p.spec for p in group_software(dataclasses.replace(valid, blueprint=bare), gpu).packages]
    assert not [s for s in specs if s.startswith(("cuda-toolkit", "datacenter-gpu-manager"))]


def _apt_root(root: Path, pins: str, available: dict[str, list[str]]) -> dict[str, str]:
    """An apt of its own under `root`: a file: repository holding `available` versions of each package (only
    the index: apt-get -s simulates and fetches nothing), the rendered pins in preferences.d."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    stanzas = [
        f"Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: test <t@localhost>\n"
        f"Filename: ./{name}_{version.replace(':', '%3a')}_all.deb\nSize: 1000\nDescription: test package\n"
        for name, versions in available.items()
        for version in versions
    ]
    (repo / "Packages").write_text("\n".join(stanzas), encoding="utf-8")
    for sub in ("etc/apt/preferences.d", "etc/apt/sources.list.d", "state/lists/partial", "cache/archives/partial"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "etc/apt/preferences.d/60-clusterforge.pref").write_text(pins, encoding="utf-8")
    (root / "etc/apt/sources.list").write_text(f"deb [trusted=yes] file:{repo} ./\n", encoding="utf-8")
    (root / "status").write_text("", encoding="utf-8")
    (root / "apt.conf").write_text(
        f'Dir::Etc "{root}/etc/apt";\nDir::State "{root}/state";\nDir::State::status "{root}/status";\n'
        f'Dir::Cache "{root}/cache";\nDebug::NoLocking "true";\nAPT::Get::List-Cleanup "false";\n',
        encoding="utf-8",
    )
    return {**os.environ, "APT_CONFIG": str(root / "apt.conf"), "LC_ALL": "C"}


def test_apt_installs_the_pinned_versions(tmp_path: Path) -> None:
    """Real apt reads the rendered preferences: with a newer driver, Fabric Manager, CUDA, DCGM and DOCA in the
    repository, `apt-get install` of the bare names takes exactly the blueprint's versions."""
    files = render_files(load_valid(Path("blueprints/h200-training-pod.yaml")))
    available = {
        "nvidia-driver-570-server-open": [f"{DRIVER}-0ubuntu0.24.04.1", "570.195.03-0ubuntu0.24.04.1"],
        "nvidia-fabricmanager-570": [f"{DRIVER}-0ubuntu1", "570.195.03-0ubuntu1"],
        "cuda-toolkit-12-8": ["12.8.1-1", "12.9.0-1"],
        "datacenter-gpu-manager-4-cuda12": ["1:4.2.3-1", "1:4.4.1-1"],
        "doca-ofed": ["2.10.0-093000", "3.0.0-058000"],
    }
    env = _apt_root(tmp_path / "apt", files["software/gpu.pref"], available)
    update = subprocess.run(["apt-get", "update"], env=env, capture_output=True, text=True, check=False)
    assert update.returncode == 0 and "E:" not in update.stdout + update.stderr, update.stdout + update.stderr
    result = subprocess.run(
        ["apt-get", "install", "-s", "-y", *available], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    chosen = {
        line.split()[1]: line.split()[2].strip("(") for line in result.stdout.splitlines() if line.startswith("Inst ")
    }
    assert chosen == {name: versions[0] for name, versions in available.items()}
    # the same repository without the pins takes the newest: the pins, not the index, chose
    (tmp_path / "apt/etc/apt/preferences.d/60-clusterforge.pref").unlink()
    result = subprocess.run(
        ["apt-get", "install", "-s", "-y", *available], env=env, capture_output=True, text=True, check=False
    )
    newest = {
        line.split()[1]: line.split()[2].strip("(") for line in result.stdout.splitlines() if line.startswith("Inst ")
    }
    assert newest == {name: versions[1] for name, versions in available.items()}


def test_glibc_resolves_the_hosts_block(tmp_path: Path, trixie: Path) -> None:
    """The rendered hosts block, as the playbook writes it into /etc/hosts, read by glibc's getent in the
    Debian 13 chroot (in a private mount namespace, so the chroot's own /etc/hosts is untouched)."""
    files = render_files(load_valid(Path("blueprints/gb200-nvl72.yaml")))
    hosts = tmp_path / "hosts"
    hosts.write_text(
        "127.0.0.1 localhost\n# BEGIN clusterforge gb200-nvl72\n" + files["network/hosts"] + "# END clusterforge\n",
        encoding="utf-8",
    )
    names = ["gb001", "gb001-bmc", "mgmt002", "A01-nvsw1", "A01-nvsw1-bmc", "A04-ps8", "A01-mgmt2"]
    script = 'mount --bind "$1" "$0/etc/hosts" && shift && exec chroot "$0" getent hosts "$@"'
    result = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(trixie), str(hosts), *names],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    resolved = {line.split()[1]: line.split()[0] for line in result.stdout.splitlines()}
    expected = {line.split()[1]: line.split()[0] for line in files["network/hosts"].splitlines() if line[:1].isdigit()}
    assert set(resolved) == set(names)
    assert resolved == {n: expected[n] for n in names}
