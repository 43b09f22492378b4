"""The cross-family consistency check: silent on every example, loud on each kind of disagreement."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from helpers import BLUEPRINTS, REPO, run_cli

from clusterforge.expand import expand
from clusterforge.expand.topology import Topology
from clusterforge.pipeline import load_valid
from clusterforge.render import render
from clusterforge.render.ansible.ansible import INVENTORY
from clusterforge.render.consistency import consistency_findings
from clusterforge.validate import ValidBlueprint

H200 = REPO / "blueprints/h200-training-pod.yaml"
GB200 = REPO / "blueprints/gb200-nvl72.yaml"


@cache
def _rendered(path: Path) -> tuple[ValidBlueprint, Topology, dict[str, str]]:
    valid = load_valid(path)
    topo, findings = expand(valid)
    return valid, topo, render(valid, topo, findings)


def _problems(path: Path, change: Callable[[dict[str, str]], object]) -> list[str]:
    valid, topo, files = _rendered(path)
    changed = dict(files)
    change(changed)
    findings = consistency_findings(valid, topo, changed)
    assert all(f.code == "CF-RENDER-002" for f in findings)
    return [f.message for f in findings]


def _edit(path: str, old: str, new: str, count: int = 1) -> Callable[[dict[str, str]], None]:
    def change(files: dict[str, str]) -> None:
        assert old in files[path], f"{old!r} not in {path}"
        files[path] = files[path].replace(old, new, count)

    return change


@pytest.mark.parametrize("blueprint", BLUEPRINTS, ids=lambda p: p.stem)
def test_examples_are_consistent(blueprint: Path) -> None:
    valid, topo, files = _rendered(blueprint)
    assert consistency_findings(valid, topo, files) == []


def test_a_node_missing_from_slurm_conf() -> None:
    problems = _problems(H200, _edit("slurm/slurm.conf", "NodeName=gpu[001-031]", "NodeName=gpu[001-030]"))
    assert "rendered files disagree: slurm/slurm.conf NodeName lacks 1 expected: gpu031" in problems
    assert any("partition gpu names unknown nodes: gpu031" in p for p in problems)
    assert any("group slurm_nodes has 1 unexpected: gpu031" in p for p in problems)


def test_an_inventory_address_that_differs_from_the_topology() -> None:
    problems = _problems(H200, _edit(INVENTORY, '"inband": "10.120.0.2"', '"inband": "10.120.9.9"'))
    assert problems == [
        "rendered files disagree: ansible/inventory.json: gpu001 has inband address 10.120.9.9, the topology 10.120.0.2"
    ]


def test_a_host_missing_from_the_inventory() -> None:
    def drop_gpu001(files: dict[str, str]) -> None:
        lines = files[INVENTORY].splitlines(keepends=True)
        files[INVENTORY] = "".join(line for line in lines if not line.lstrip().startswith('"gpu001": {'))

    problems = _problems(H200, drop_gpu001)
    assert "rendered files disagree: ansible/inventory.json group nodes lacks 1 expected: gpu001" in problems


def test_a_controller_address_that_differs() -> None:
    problems = _problems(H200, _edit("slurm/slurm.conf", "mgmt001(10.120.0.33)", "mgmt001(10.120.0.99)"))
    assert problems == [
        "rendered files disagree: slurm/slurm.conf: controller mgmt001 has address 10.120.0.99, "
        "the topology 10.120.0.33"
    ]


def test_a_node_left_out_of_the_tree() -> None:
    problems = _problems(H200, _edit("slurm/topology.conf", "Nodes=gpu[001-031]", "Nodes=gpu[001-016]"))
    assert problems == [
        "rendered files disagree: slurm/topology.conf leaf switches lacks 15 expected: "
        "gpu017, gpu018, gpu019, gpu020, gpu021 and 10 more"
    ]


def test_a_node_in_two_blocks() -> None:
    problems = _problems(GB200, _edit("slurm/topology.conf", "Nodes=gb[019-036]", "Nodes=gb[018-036]"))
    assert problems == ["rendered files disagree: slurm/topology.conf places 1 nodes twice: gb018"]


def test_a_gres_count_that_differs_from_the_model() -> None:
    line = "NodeName=gb[001-072] Name=gpu Type=gb200 File=/dev/nvidia3 Cores=72-143\n"
    problems = _problems(GB200, _edit("slurm/gres.conf", line, ""))
    assert len(problems) == 1 and "gres.conf gives nodes other GPU counts than their model: gb001" in problems[0]


def test_an_hca_list_shorter_than_the_compute_ports() -> None:
    problems = _problems(GB200, _edit("nccl/gb.conf", "mlx5_4:1,mlx5_5:1", "mlx5_4:1"))
    assert (
        "rendered files disagree: nccl/gb.conf: NCCL_IB_HCA lists 3 devices, "
        "supermicro/srs-gb200-nvl72-tray has 4 compute ports" in problems
    )
    assert any("do not match the 3 HCAs of nccl/gb.conf" in p for p in problems)


def test_a_guessed_hca_list_is_caught() -> None:
    """The H200 server's RDMA names are not in the catalog: a guess in port order must not be installed."""
    guess = "\nNCCL_IB_HCA==" + ",".join(f"mlx5_{i}:1" for i in range(8)) + "\nNCCL_IB_QPS_PER_CONNECTION="
    problems = _problems(H200, _edit("nccl/gpu.conf", "\nNCCL_IB_QPS_PER_CONNECTION=", guess))
    assert (
        "rendered files disagree: nccl/gpu.conf: NCCL_IB_HCA is set from guessed device names of "
        "supermicro/sys-821ge-tnhr-h200" in problems
    )


def test_a_role_copying_a_file_that_was_not_rendered() -> None:
    problems = _problems(H200, lambda files: files.pop("slurm/gres.conf"))
    assert (
        "rendered files disagree: ansible/roles/cf_slurm/vars/main.yml copies slurm/gres.conf, "
        "which was not rendered" in problems
    )
    assert any("slurm/gres.conf is missing, though 31 Slurm nodes have GPUs" in p for p in problems)


def test_a_template_override_that_drops_hosts_fails_the_render(tmp_path: Path) -> None:
    """The check runs on every render: an override that loses nodes stops it, and nothing is written."""
    override = tmp_path / "templates" / "slurm"
    override.mkdir(parents=True)
    shipped = (REPO / "templates/slurm/slurm.conf.j2").read_text()
    (override / "slurm.conf.j2").write_text(shipped.replace("NodeName=", "#NodeName="))
    out = tmp_path / "out"
    result = run_cli("render", str(H200), "-o", str(out), "--templates", str(tmp_path / "templates"))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "CF-RENDER-002" in output and "slurm/slurm.conf NodeName lacks 31 expected" in output
    assert "Traceback" not in output
    assert not out.exists()


def test_an_inventory_template_override_that_changes_addresses_fails_the_render(tmp_path: Path) -> None:
    """The renderer's groups stand for the file only where it is their JSON text: a site's inventory template
    that changes the text is read and checked."""
    override = tmp_path / "templates" / "ansible"
    override.mkdir(parents=True)
    (override / "inventory.json.j2").write_text(
        """{{ inventory | replace('"ansible_host": "', '"ansible_host": "9') }}\n"""
    )
    out = tmp_path / "out"
    result = run_cli("render", str(H200), "-o", str(out), "--templates", str(tmp_path / "templates"))
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "CF-RENDER-002" in output and "not one of its addresses" in output
    assert not out.exists()


def test_an_inventory_that_is_not_json_is_reported() -> None:
    problems = _problems(H200, _edit(INVENTORY, '"all": {', '"all": ['))
    assert len(problems) == 1 and problems[0].startswith(
        "rendered files disagree: ansible/inventory.json is not an inventory this check can read:"
    )


@pytest.mark.parametrize("blueprint", BLUEPRINTS, ids=lambda p: p.stem)
def test_every_host_resolves_to_the_vars_it_was_given(blueprint: Path) -> None:
    """Moving shared host vars into their group's vars changes no host's vars: each host under `nodes` and
    `switches` resolves (group vars above it, then its own) to exactly what the model gave it, and the
    file holds fewer values with its hosts than the model (so something was moved). Real Ansible's view of the same
    hosts is compared with the topology in test_render_ansible.py."""
    from clusterforge.render.ansible.ansible_model import build_inventory
    from clusterforge.render.consistency import _hosts, read_inventory

    valid, topo, files = _rendered(blueprint)
    model = json.loads(json.dumps(build_inventory(valid, topo)))["all"]["children"]
    written = read_inventory(files[INVENTORY])
    for top in ("nodes", "switches"):
        assert _hosts(written[top]) == _hosts(model[top])
    assert _own_values(written) < _own_values(model)


@pytest.mark.parametrize("blueprint", BLUEPRINTS, ids=lambda p: p.stem)
def test_what_the_check_takes_from_the_renderer_is_what_the_files_say(blueprint: Path) -> None:
    """The check reads the inventory's groups and the host data's facts from the renderer where the files are
    exactly its texts (at 100,000 GPUs it would parse 20 MB of JSON): reading the files gives the same."""
    from clusterforge.render.ansible.ansible import render_ansible
    from clusterforge.render.ansible.host_data import HOST_DATA_DIR
    from clusterforge.render.consistency import read_host_data, read_inventory
    from clusterforge.render.context import RenderContext

    valid, topo, files = _rendered(blueprint)
    _, made = render_ansible(RenderContext.before_checks(valid, topo))
    assert made is not None and made.inventory is not None and made.host_data is not None
    assert files[INVENTORY] == made.inventory.text + "\n"
    assert json.loads(json.dumps(made.inventory.groups)) == read_inventory(files[INVENTORY])
    host_data = made.host_data.texts, made.host_data.facts
    written = {path: text for path, text in files.items() if path.startswith(f"{HOST_DATA_DIR}/")}
    assert host_data[0] == written
    assert host_data[1] == read_host_data(written)
    assert sum(facts.rails for facts in host_data[1].values()) > 0


def _own_values(group: dict[str, Any]) -> int:
    """How many values are written with hosts (not with their groups) under `group`'s children."""
    return sum(
        sum(len(v) for v in (child.get("hosts") or {}).values()) + _own_values(child.get("children") or {})
        for child in group.values()
    )


def test_an_inventory_in_another_json_style_is_still_checked() -> None:
    """A site's template may write the model unfactored and indented: the check still reads it and finds
    a changed address."""
    from clusterforge.render.ansible.ansible_model import build_inventory

    def restyle(files: dict[str, str]) -> None:
        valid, topo, _ = _rendered(H200)
        data = build_inventory(valid, topo)
        data["all"]["children"]["nodes"]["children"]["nodegroup_gpu"]["hosts"]["gpu002"]["cf_addresses"]["oob"] = (
            "10.130.9.9"
        )
        files[INVENTORY] = json.dumps(data, indent=4)

    problems = _problems(H200, restyle)
    assert problems == [
        "rendered files disagree: ansible/inventory.json: gpu002 has oob address 10.130.9.9, the topology 10.130.0.3"
    ]
