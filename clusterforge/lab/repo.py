"""The twin's apt repository: the real Slurm and munge packages the image build downloaded, and a stub for every
pinned GPU package of the render (driver, Fabric Manager or IMEX, CUDA, DCGM, DOCA-OFED) at the version its pin
matches and at a newer one the pin must refuse, each service of the node group as a unit that sleeps, and with
the driver an nvidia-smi that answers where the node has GPU device files (the driver is live). So the
playbook's install, hold and service tasks run for real, and the pins are proven: apt would take the newer
stub without them.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import yaml

NEWER = "999."
"""Prefix of the upstream version of each package's newer stub (the one the pin must refuse)."""


DRIVER = "nvidia-driver-"
NVIDIA_SMI = """#!/bin/sh
# clusterforge lab: the stub driver is live where the node has its GPU device files (bound in by the lab), so
# the playbook's probe (nvidia-smi -L) finds it loaded and starts the services that need it
[ -e /dev/nvidia0 ]
"""
"""What the driver stub installs as nvidia-smi."""


def pinned_version(pattern: str) -> str:
    """A version the pin's pattern matches: `570.172.08-*` -> `570.172.08-1`, `12.8.*` -> `12.8.0-1`."""
    return pattern.replace("-*", "-1").replace(".*", ".0-1")


def newer_version(version: str) -> str:
    epoch, _, upstream = version.rpartition(":")
    return (epoch + ":" if epoch else "") + NEWER + upstream


def software_groups(out: Path) -> dict[str, Any]:
    path = out / "ansible/roles/cf_software/vars/main.yml"
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")).get("cf_software_by_group") or {})


def stub_units(groups: dict[str, Any]) -> dict[str, list[str]]:
    """package name -> the services its stub installs: a group's services come with its last package before
    DOCA (DCGM, or the driver's), nvidia-imex with the IMEX package."""
    units: dict[str, list[str]] = {}
    for group in groups.values():
        names = [spec.split("=", 1)[0] for spec in group.get("packages") or []]
        gpu = [n for n in names if not n.startswith("doca-")]
        for name in names:
            units.setdefault(name, [])
            if name.startswith("nvidia-imex") and "nvidia-imex" not in units[name]:
                units[name].append("nvidia-imex")
        for service in group.get("services") or []:
            owner = next((n for n in gpu if service.split("-")[-1] in n), gpu[-1] if gpu else None)
            if owner and service not in units[owner]:
                units[owner].append(service)
    return units


def build_repo(out: Path, debs: Path, dest: Path) -> int:
    """Write the repository (the .debs and a Packages index) to `dest`; the number of stub packages."""
    dest.mkdir(parents=True, exist_ok=True)
    for deb in debs.glob("*.deb"):
        shutil.copy2(deb, dest / deb.name)
    groups = software_groups(out)
    units = stub_units(groups)
    versions: dict[str, str] = {}
    for group in groups.values():
        for spec in group.get("packages") or []:
            name, pattern = spec.split("=", 1)
            versions.setdefault(name, pinned_version(pattern))
    for name, version in sorted(versions.items()):
        _stub(dest, name, version, units.get(name, []))
        _stub(dest, name, newer_version(version), [])
    index = subprocess.run(
        ["dpkg-scanpackages", "-m", ".", "/dev/null"], cwd=dest, capture_output=True, text=True, check=True
    )
    (dest / "Packages").write_text(index.stdout, encoding="utf-8")
    return len(versions)


def _stub(dest: Path, name: str, version: str, services: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "DEBIAN").mkdir()
        (root / "DEBIAN/control").write_text(
            f"Package: {name}\nVersion: {version}\nArchitecture: all\nMaintainer: clusterforge lab <lab@localhost>\n"
            f"Description: stub of {name} for the clusterforge lab\n",
            encoding="utf-8",
        )
        if name.startswith(DRIVER) and not version.startswith(NEWER):
            smi = root / "usr/bin/nvidia-smi"
            smi.parent.mkdir(parents=True)
            smi.write_text(NVIDIA_SMI, encoding="utf-8")
            smi.chmod(0o755)
        for service in services:
            unit = root / "usr/lib/systemd/system" / f"{service}.service"
            unit.parent.mkdir(parents=True, exist_ok=True)
            unit.write_text(
                f"[Unit]\nDescription=stub of {service} (clusterforge lab)\n[Service]\nExecStart=/bin/sleep infinity\n"
                "[Install]\nWantedBy=multi-user.target\n",
                encoding="utf-8",
            )
        target = dest / f"{name}_{version.split(':')[-1]}_all.deb"
        subprocess.run(["dpkg-deb", "-b", "--root-owner-group", tmp, str(target)], capture_output=True, check=True)
