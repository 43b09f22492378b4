"""The network Ansible reaches each node group on: in-band by default, a storage network never unless named,
the BMCs only when named, and a group on no in-band network that names none an error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from helpers import REPO

from clusterforge import codes
from clusterforge.errors import BlueprintError, Severity
from clusterforge.lockfile import Keep
from clusterforge.pipeline import analyse, load_valid, render_analysis

BLUEPRINT = REPO / "blueprints" / "l40s-inference.yaml"
POD = REPO / "blueprints" / "h200-training-pod.yaml"


def _blueprint(tmp: Path, change: Any, source: Path = POD) -> Path:
    data = yaml.safe_load(source.read_text(encoding="utf-8"))
    change(data)
    path = tmp / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _ansible_host(files: dict[str, str], host: str) -> str:
    match = re.search(rf'"{host}": \{{"ansible_host": "([0-9.]+)"', files["ansible/inventory.json"])
    assert match, f"no ansible_host for {host}"
    return match[1]


def _as_storage(data: dict[str, Any]) -> None:
    """No in-band network: the storage network carries in-band traffic too (the issue's trap)."""
    del data["fabrics"]["inband"]
    data["fabrics"]["oob"]["uplink_to"] = "storage"


def test_in_band_by_default() -> None:
    files = render_analysis(analyse(load_valid(BLUEPRINT), keep=Keep()))
    assert _ansible_host(files, "inf001").startswith("10.41.")


def test_a_group_on_no_in_band_network_is_an_error_and_a_storage_network_is_not_chosen(tmp_path: Path) -> None:
    analysis = analyse(load_valid(_blueprint(tmp_path, _as_storage)), keep=Keep())
    refused = [f for f in analysis.findings if f.code == codes.MANAGED_ON_BMC]
    assert {f.subject for f in refused} == {"gpu", "login", "stor", "mgmt", "ufm"}
    assert all(f.severity is Severity.ERROR for f in refused) and analysis.blocking
    on_storage = [f for f in refused if f.subject in ("gpu", "login", "stor")]
    assert all("not on storage network 'storage'" in f.message for f in on_storage)
    assert all(f.location is not None and f.location.line > 0 for f in refused)


def test_the_bmcs_are_reached_when_named(tmp_path: Path) -> None:
    def on_bmcs(data: dict[str, Any]) -> None:
        _as_storage(data)
        for group in data["node_groups"]:
            group["management_network"] = "oob"

    analysis = analyse(load_valid(_blueprint(tmp_path, on_bmcs)), keep=Keep())
    assert not [f for f in analysis.findings if f.code.startswith("CF-MGMT-")]
    assert _ansible_host(render_analysis(analysis), "gpu001").startswith("10.130.")  # the BMC, as named


def test_a_named_storage_network_is_used(tmp_path: Path) -> None:
    def named(data: dict[str, Any]) -> None:
        _as_storage(data)
        for group in data["node_groups"]:
            group["management_network"] = "storage" if group["name"] in ("gpu", "stor", "login") else "oob"

    analysis = analyse(load_valid(_blueprint(tmp_path, named)), keep=Keep())
    assert not [f for f in analysis.findings if f.code.startswith("CF-MGMT-")]
    assert _ansible_host(render_analysis(analysis), "gpu001").startswith("10.110.")


def test_a_compute_fabric_or_a_network_the_group_is_not_on_is_refused(tmp_path: Path) -> None:
    def wrong(data: dict[str, Any]) -> None:
        data["node_groups"][0]["management_network"] = "compute"
        data["node_groups"][1]["management_network"] = "oob"  # ctl is on oob: allowed

    analysis = analyse(load_valid(_blueprint(tmp_path, wrong, BLUEPRINT)), keep=Keep())
    refused = [f for f in analysis.findings if f.code == codes.WRONG_MANAGEMENT_NETWORK]
    assert [f.subject for f in refused] == ["inf"] and "compute fabric" in refused[0].message
    assert refused[0].location is not None and refused[0].location.line > 0


def test_an_unknown_management_network_is_a_reference_error(tmp_path: Path) -> None:
    def unknown(data: dict[str, Any]) -> None:
        data["node_groups"][0]["management_network"] = "inbnd"

    try:
        load_valid(_blueprint(tmp_path, unknown, BLUEPRINT))
    except BlueprintError as exc:
        assert any(f.code == codes.UNKNOWN_NAME and "did you mean 'inband'" in f.message for f in exc.findings)
    else:
        raise AssertionError("an unknown network was accepted")


def test_a_group_on_no_management_network_is_an_error(tmp_path: Path) -> None:
    def cut_off(data: dict[str, Any]) -> None:
        _as_storage(data)
        data["fabrics"]["oob"]["node_groups"] = ["mgmt", "login", "ufm", "stor"]

    analysis = analyse(load_valid(_blueprint(tmp_path, cut_off)), keep=Keep())
    assert [f.subject for f in analysis.findings if f.code == codes.UNREACHABLE_GROUP] == ["gpu"]
    assert analysis.blocking
