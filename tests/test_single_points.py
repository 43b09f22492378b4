"""Single points of failure are reported (warnings), and a blueprint can accept one with a reason. On main the
GB200 example's storage and in-band fabrics (one spine each) and its InfiniBand subnet (one UFM host) passed
`check` silently; so did an in-band network whose nodes all hang off one leaf."""

from __future__ import annotations

from pathlib import Path

import yaml

from clusterforge import codes
from clusterforge.checks import run_checks
from clusterforge.errors import Finding
from clusterforge.expand import expand
from clusterforge.pipeline import load_valid


def _findings(path: Path) -> list[Finding]:
    valid = load_valid(path)
    topo, findings = expand(valid)
    return run_checks(valid, topo, findings)


def test_gb200_one_spine_per_management_fabric_and_one_subnet_manager() -> None:
    found = [f for f in _findings(Path("blueprints/gb200-nvl72.yaml")) if f.code.startswith("CF-SPOF-")]
    messages = sorted((f.code, f.message) for f in found)
    assert [code for code, _ in messages] == [codes.SINGLE_SPINE, codes.SINGLE_SPINE, codes.SINGLE_SUBNET_MANAGER]
    assert "fabric 'inband': one spine (inband-spine001) carries all traffic between its 4 leaves" in messages[0][1]
    assert "fabric 'storage': one spine (storage-spine001) carries all traffic between its 2 leaves" in messages[1][1]
    assert "fabric 'compute': one subnet manager (ufm001)" in messages[2][1]
    assert all(f.severity.value == "warning" and f.suppressed_by is None for f in found)


def test_the_other_examples_have_none() -> None:
    # h200: two spines per plane where there are spines, two UFM hosts; l40s: in-band on an MLAG pair
    for name in ("h200-training-pod", "l40s-inference"):
        assert not [f for f in _findings(Path(f"blueprints/{name}.yaml")) if f.code.startswith("CF-SPOF-")]


def test_in_band_on_one_leaf_is_reported_and_can_be_accepted_with_a_reason(tmp_path: Path) -> None:
    data = yaml.safe_load(Path("blueprints/l40s-inference.yaml").read_text(encoding="utf-8"))
    data["fabrics"]["inband"]["dual_homing"] = "none"
    data["node_groups"] = [dict(g, count=min(g["count"], 4)) for g in data["node_groups"]]
    data.pop("workloads", None)
    blueprint = tmp_path / "l40s.yaml"
    blueprint.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    found = [f for f in _findings(blueprint) if f.code == codes.SINGLE_MANAGEMENT_SWITCH]
    assert len(found) == 1 and "every node's in-band link lands on one switch (inband-leaf001)" in found[0].message
    data["suppress"] = [{"code": "CF-SPOF-003", "reason": "lab cluster: a console cart reaches every node"}]
    blueprint.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    found = [f for f in _findings(blueprint) if f.code == codes.SINGLE_MANAGEMENT_SWITCH]
    assert len(found) == 1 and found[0].suppressed_by == "lab cluster: a console cart reaches every node"
