"""Rail port names pinned by PCI address: where the catalog has no RDMA names for a server's compute ports
but knows their PCI addresses, udev rules name them, and NCCL_IB_HCA and the rail netplan use those names;
systemd's `udevadm verify` (udev 257, in the Debian 13 chroot) accepts the rules."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml
from factories import valid_from

from clusterforge.catalog.loader import DATA_DIR
from clusterforge.pipeline import load_valid, render_files
from clusterforge.render import paths

MODEL = "supermicro/sys-421ge-tnrt-l40s"
BUSES = ["0000:41:00.0", "0000:61:00.0", "0000:c1:00.0", "0000:e1:00.0"]
"""Made-up NIC addresses for the four compute ports (ens1-ens4), as a site would give them from lspci."""


def with_nic_addresses(tmp_path: Path) -> dict[str, str]:
    """l40s-inference with a site catalog that gives the L40S server's compute NICs their PCI addresses."""
    entry = yaml.safe_load((DATA_DIR / "servers.yaml").read_text())["servers"][MODEL]
    for switch, bus in zip(entry["pcie"]["switches"], BUSES, strict=True):
        switch["nic_bus_ids"] = [bus]
    catalog = tmp_path / "site-catalog.yaml"
    catalog.write_text(yaml.safe_dump({"servers": {MODEL: entry}}))
    data = yaml.safe_load(Path("blueprints/l40s-inference.yaml").read_text())
    data["catalogs"] = [str(catalog)]
    return render_files(valid_from(data))


def udevadm_verify(trixie: Path, rules: str, work: Path) -> subprocess.CompletedProcess[str]:
    """`udevadm verify` of the chroot on `rules`, copied into the chroot for the call and removed after."""
    scratch = trixie / "cf-test"
    scratch.mkdir(exist_ok=True)
    target = scratch / f"{work.name}.rules"
    target.write_text(rules, encoding="utf-8")
    try:
        return subprocess.run(
            ["chroot", str(trixie), "udevadm", "verify", "--no-style", f"/cf-test/{target.name}"],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        target.unlink()


def test_known_pci_addresses_pin_the_rail_names(tmp_path: Path, trixie: Path) -> None:
    files = with_nic_addresses(tmp_path)
    rules = files[paths.udev_rails(MODEL)]
    lines = [line for line in rules.splitlines() if not line.startswith("#")]
    assert lines == [
        rule
        for port, bus in zip(["ens1", "ens2", "ens3", "ens4"], BUSES, strict=True)
        for rule in (
            f'ACTION=="add", SUBSYSTEM=="net", KERNELS=="{bus}", NAME="{port}"',
            f'ACTION=="add", SUBSYSTEM=="infiniband", KERNELS=="{bus}", '
            f'PROGRAM="rdma_rename %k NAME_FIXED rdma_{port}"',
        )
    ]
    conf = dict(line.split("=", 1) for line in files["nccl/inf.conf"].splitlines() if line[:1].isalpha())
    assert conf["NCCL_IB_HCA"] == "=rdma_ens1:1,rdma_ens2:1,rdma_ens3:1,rdma_ens4:1"
    # the rail netplan configures the interfaces by the names the rules give them
    netplan = yaml.safe_load(files[paths.netplan_rails("inf001")])
    assert {"ens1", "ens2", "ens3", "ens4"} <= set(netplan["network"]["ethernets"])
    # the playbook installs the rules on the group's nodes (the NCCL role's files of the group)
    role_files = yaml.safe_load(files["ansible/roles/cf_nccl/vars/main.yml"])["cf_nccl_by_group"]["inf"]["files"]
    assert {"src": paths.udev_rails(MODEL), "dest": paths.UDEV_RAILS_INSTALLED.lstrip("/")} in role_files
    result = udevadm_verify(trixie, rules, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_udevadm_verify_can_fail(tmp_path: Path, trixie: Path) -> None:
    result = udevadm_verify(trixie, 'ACTION=="add", SUBSYSTEM=="net", KERNELS="0000:41:00.0", NAME=="ens1"\n', tmp_path)
    assert result.returncode != 0


def test_a_guess_is_never_pinned_nor_used() -> None:
    """Without PCI addresses or RDMA names in the catalog (the L40S example as shipped), nothing is pinned and
    NCCL_IB_HCA is not set: NCCL takes every RDMA device rather than a guessed subset."""
    files = render_files(load_valid(Path("blueprints/l40s-inference.yaml")))
    assert not [p for p in files if p.startswith("nccl/udev/")]
    assert "NCCL_IB_HCA=" not in files["nccl/inf.conf"]
