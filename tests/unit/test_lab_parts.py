"""The lab's parts that need no root: the twin's shape read from a render, the shape-true subset, the ping
matrix's expectations, the isolation rules on `ip -j` output, the stub versions and the recap reader."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import REPO

from clusterforge.lab.checks import OUTSIDE, ping_pairs
from clusterforge.lab.facts import as_planned
from clusterforge.lab.network import isolation_problems, plan_network
from clusterforge.lab.play import read_recap
from clusterforge.lab.repo import newer_version, pinned_version, stub_units
from clusterforge.lab.shape import ShapeError, read_shape, subset
from clusterforge.lab.twin import State
from clusterforge.pipeline import analyse, load_valid, render_files


@pytest.fixture(scope="module")
def lab_render(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """An example rendered as the lab renders it first: every node bound to the lab's planned hardware (the
    golden render leaves unbound ports out of netplan, so its shape has no ports)."""
    done: dict[str, Path] = {}

    def render(name: str) -> Path:
        if name not in done:
            valid = load_valid(REPO / "blueprints" / f"{name}.yaml")
            out = tmp_path_factory.mktemp(name)
            for path, text in render_files(as_planned(valid, analyse(valid).topo)).items():
                (out / path).parent.mkdir(parents=True, exist_ok=True)
                (out / path).write_text(text, encoding="utf-8")
            done[name] = out
        return done[name]

    return render


def test_l40s_twin_shape(lab_render: Callable[[str], Path]) -> None:
    shape = read_shape(lab_render("l40s-inference"))
    assert shape.inband == "inband"
    node = shape.node("inf001")
    assert node.address == "10.41.0.2" and node.slurmd and not node.controller
    # bond members carry the bond's subnet; rails their own
    ports = {p.key: (p.address, p.segment) for p in node.ports}
    assert ports["eno1"] == (None, "10.41.0.0/24") and ports["eno2"] == (None, "10.41.0.0/24")
    assert ports["ens1"] == ("10.40.0.2/26", "10.40.0.0/26")
    assert node.gpu_files == tuple(f"/dev/nvidia{i}" for i in range(8))
    assert shape.segments["10.41.0.0/24"].gateways == ("10.41.0.1",)
    assert (
        shape.segments["10.40.0.64/26"].gateways == ("10.40.0.65",)
        and shape.segments["10.40.0.64/26"].network == "compute"
    )


def test_shape_true_subsets(lab_render: Callable[[str], Path]) -> None:
    l40s = read_shape(lab_render("l40s-inference"))
    assert subset(l40s, None, True) == ["ctl001", "inf001", "inf002"]
    assert subset(l40s, 5, False) == ["ctl001", "ctl002", "inf001", "inf002", "inf003"]
    assert len(subset(l40s, None, False)) == 10
    with pytest.raises(ShapeError, match="at least 3"):
        subset(l40s, 2, False)
    nvl72 = read_shape(lab_render("gb200-nvl72"))
    names = subset(nvl72, None, True)
    # a whole NVLink domain (one rack of 18 trays), a tray on the other leaves of each rail (rack 2's, a leaf
    # per rack and rail), every group
    assert [n for n in names if n.startswith("gb")] == [f"gb{i:03d}" for i in range(1, 19)] + ["gb019"]
    assert {"mgmt001", "mgmt002", "login001", "ufm001"} <= set(names)
    leaves = {(rail, data["leaf"]) for n in names for rail, data in (nvl72.node(n).vars.get("cf_rails") or {}).items()}
    for rail in {r for r, _ in leaves}:
        assert len({leaf for r, leaf in leaves if r == rail}) >= 2, rail


def test_network_plan_keeps_networks_apart(lab_render: Callable[[str], Path]) -> None:
    shape = read_shape(lab_render("l40s-inference"))
    plan = plan_network(shape, ["ctl001", "inf001", "inf002"], "cflabc")
    assert set(plan.switch_ns) == {"inband", "compute"}
    assert plan.deploy_ns == plan.switch_ns["inband"]
    assert plan.bridges["10.41.0.0/24"][0] == plan.switch_ns["inband"]
    assert {plan.bridges[s][0] for s in plan.bridges if s.startswith("10.40.")} == {plan.switch_ns["compute"]}
    assert all(len(ns) <= 15 for ns in plan.namespaces)


def test_ping_matrix_expectations(lab_render: Callable[[str], Path]) -> None:
    shape = read_shape(lab_render("l40s-inference"))
    state = State(work=Path("/nonexistent"), nodes=["ctl001", "inf001", "inf002"])
    pairs = set(ping_pairs(state, shape))
    assert ("inf001", "10.40.0.3", True) in pairs  # same rail subnet
    assert ("ctl001", "10.41.0.2", True) in pairs  # in-band
    assert ("ctl001", "10.40.0.3", False) in pairs  # the controller has no rail port
    assert all((n, OUTSIDE, False) in pairs for n in state.nodes)
    assert not any(src == "inf001" and dst.startswith("10.40.0.") and not must for src, dst, must in pairs)


VETH = {"ifname": "eno1", "linkinfo": {"info_kind": "veth"}, "link_netnsid": 0}
LO = {"ifname": "lo"}


def test_isolation_accepts_a_closed_lab() -> None:
    routes = [
        {"dst": "default", "gateway": "10.41.0.1", "dev": "eno1"},
        {"dst": "10.41.0.0/24", "dev": "eno1"},
        {"type": "local", "dst": "10.41.0.2", "dev": "eno1", "table": "local"},
    ]
    problems = isolation_problems({"lab-n0": [LO, VETH]}, {"lab-n0": routes}, [], {"lab-n0": 3}, ["10.41.0.0/24"])
    assert problems == []


def test_isolation_refuses_an_uplink() -> None:
    physical = {"ifname": "eth0", "linkinfo": None}
    out = isolation_problems(
        {"lab-n0": [LO, physical], "lab-s0": [LO]},
        {
            "lab-n0": [{"dst": "default", "gateway": "192.168.1.1", "dev": "eth0"}],
            "lab-s0": [{"dst": "default", "dev": "eth0"}, {"dst": "0.0.0.0/1", "dev": "br0"}],
        },
        [{"ifname": "veth-up", "linkinfo": {"info_kind": "veth"}, "link_netnsid": 7}],
        {"lab-n0": 7, "lab-s0": None},
        ["10.41.0.0/24"],
    )
    assert any("eth0 is a device" in p for p in out)
    assert any("via 192.168.1.1, outside" in p for p in out)
    assert any("default route without a gateway" in p for p in out)
    assert any("route to 0.0.0.0/1, outside" in p for p in out)
    assert any("host namespace: veth veth-up" in p for p in out)


def test_stub_versions() -> None:
    assert pinned_version("570.172.08-*") == "570.172.08-1"
    assert pinned_version("12.8.*") == "12.8.0-1"
    assert pinned_version("1:4.2.3-*") == "1:4.2.3-1"
    assert newer_version("1:4.2.3-1") == "1:999.4.2.3-1"
    groups = {
        "gb": {
            "packages": ["nvidia-driver-570-server-open=570.1-*", "nvidia-imex-570=570.1-*", "doca-ofed=2.1-*"],
            "services": ["nvidia-dcgm"],
        }
    }
    units = stub_units(groups)
    assert units["nvidia-imex-570"] == ["nvidia-imex", "nvidia-dcgm"] or "nvidia-imex" in units["nvidia-imex-570"]
    assert units["doca-ofed"] == []


def test_recap_reader() -> None:
    text = (
        "TASK [x]\nok: [a]\n\nPLAY RECAP *****\n"
        "a                     : ok=23   changed=12   unreachable=0    failed=1    skipped=4    rescued=0   ignored=0\n"
        "b : ok=2 changed=0 unreachable=1 failed=0 skipped=0 rescued=0 ignored=0\n"
    )
    recap = read_recap(text)
    assert recap["a"].changed == 12 and recap["a"].failed == 1 and recap["b"].unreachable == 1
    assert read_recap("no recap") == {}
