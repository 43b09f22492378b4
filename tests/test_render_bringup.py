"""The playbook completes a node, as the lab's twin showed it must (defects the twin found on the rendered
folder): Slurm and munge installed, the munge key shared, the site slurm.conf including the cluster part, the
daemons started and restarted by handlers; netplan and sysctl applied by handlers, sysctl first, after the merged
netplan is checked for a second default route; nvidia-imex started; a switch per component; and `topology:
block` without NVLink domains either makes blocks of block_size or says it makes none."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import REPO, ansible

from clusterforge.pipeline import analyse, load_valid, render_analysis
from clusterforge.render import RenderContext

L40S = REPO / "inventories" / "l40s-inference"
NVL72 = REPO / "inventories" / "gb200-nvl72"


def tasks(out: Path, role: str, kind: str = "tasks") -> list[dict[str, Any]]:
    return list(yaml.safe_load((out / f"ansible/roles/{role}/{kind}/main.yml").read_text(encoding="utf-8")))


def flat(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tasks with the tasks of blocks (and their `always`) in order."""
    found = []
    for item in items:
        found.append(item)
        found += flat(item.get("block", []) + item.get("always", []))
    return found


def named(items: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(t for t in flat(items) if t.get("name") == name)


def test_slurm_role_installs_keys_configures_and_starts() -> None:
    slurm = tasks(L40S, "cf_slurm")
    install = named(slurm, "Install munge and Slurm")["block"][0]
    assert install["ansible.builtin.apt"]["name"] == "{{ cf_slurm_packages }}"
    role_vars = yaml.safe_load((L40S / "ansible/roles/cf_slurm/vars/main.yml").read_text(encoding="utf-8"))
    assert "slurmctld" in role_vars["cf_slurm_packages"] and "slurmd" in role_vars["cf_slurm_packages"]
    assert role_vars["cf_slurm_cluster_conf_path"] == "/etc/slurm/clusterforge.conf"
    # a backup controller runs slurmctld only when the site says its state is shared
    assert "cf_slurm_backup_controllers" in role_vars["cf_slurmctld"]
    key = named(slurm, "Give the host the first controller's munge key")
    assert key["no_log"] is True and "Restart munge" in key["notify"]
    include = named(slurm, "The site's slurm.conf includes the cluster part")
    assert include["ansible.builtin.lineinfile"]["line"] == "Include {{ cf_slurm_cluster_conf_path }}"
    for daemon in ("munge", "slurmctld", "slurmd"):
        started = named(slurm, f"Start {daemon}")["ansible.builtin.systemd_service"]
        assert started == {"name": daemon, "enabled": True, "state": "started"}
    handlers = [h["name"] for h in tasks(L40S, "cf_slurm", "handlers")]
    assert handlers == ["Restart munge", "Restart slurmctld", "Restart slurmd"]
    defaults = yaml.safe_load((L40S / "ansible/roles/cf_slurm/defaults/main.yml").read_text(encoding="utf-8"))
    assert "Include {{ cf_slurm_cluster_conf_path }}" in defaults["cf_slurm_site_conf"]
    assert "AuthType=auth/munge" in defaults["cf_slurm_site_conf"]
    assert defaults["cf_slurm_backup_controllers"] is False


def test_network_files_applied_by_handlers_sysctl_first() -> None:
    network = tasks(L40S, "cf_network")
    copied = named(network, "Install the network files")
    assert copied["notify"] == ["Apply the sysctls", "Apply netplan", "Apply the RoCE QoS"]
    handlers = tasks(L40S, "cf_network", "handlers")
    assert [h["name"] for h in handlers] == ["Apply the sysctls", "Apply netplan", "Apply the RoCE QoS"]
    assert handlers[1]["ansible.builtin.command"] == "{{ cf_netplan_apply }}"
    check = named(network, "One default route and no addressed bond member in the merged netplan")
    assert check["ansible.builtin.script"]["cmd"] == "netplan_check.py"


def _state(tmp_path: Path, expression: str, live: dict[str, int] | None) -> str:
    """What Ansible makes of a task's `state` with the driver probe's result `live` (None: never probed)."""
    inventory = tmp_path / "local.yml"
    inventory.write_text("all:\n  hosts:\n    here: {ansible_connection: local}\n", encoding="utf-8")
    extra = json.dumps({"cf_driver_live": live} if live is not None else {})
    shown = ansible(
        tmp_path, "ansible", "here", "-i", str(inventory), "-m", "debug", "-a", f"msg={expression}", "-e", extra
    )
    return shown.split('"msg": ', 1)[1].split("\n", 1)[0].strip().strip('"')


def test_gpu_services_start_only_where_the_driver_is_live(tmp_path: Path) -> None:
    """On main Fabric Manager (HGX), DCGM and IMEX (NVL72) were started in the run that installs the driver,
    before the reboot that loads it: they failed or ran without it. Now a probe (nvidia-smi -L) decides: the
    services are enabled always, started only where it answers, and start at boot otherwise."""
    imex = tasks(NVL72, "cf_imex")
    probe = named(
        imex, "Whether the NVIDIA driver is live (nvidia-smi answers; not yet after a first install, until the reboot)"
    )
    assert probe["ansible.builtin.command"] == "nvidia-smi -L" and probe["check_mode"] is False
    started = named(imex, "Enable the IMEX service, and start it where the driver is live")[
        "ansible.builtin.systemd_service"
    ]
    assert started["enabled"] is True
    software = tasks(REPO / "inventories/h200-training-pod", "cf_software")
    services = named(software, "Enable the node software services, and start them where the driver is live")
    assert services["ansible.builtin.systemd_service"]["state"] == started["state"]
    assert _state(tmp_path, started["state"], {"rc": 0}) == "started"
    # omitted (debug's msg then takes its default): the service is enabled, not started
    assert _state(tmp_path, started["state"], {"rc": 9}) == "Hello world!"
    assert _state(tmp_path, started["state"], None) == "Hello world!"
    assert named(imex, "Install the IMEX node list")["notify"] == "Restart nvidia-imex"


def test_switches_per_component(tmp_path: Path) -> None:
    """cf_packages as Ansible computes it for a GB200 tray, with each component's switch on and off."""
    all_vars = yaml.safe_load((NVL72 / "ansible/group_vars/all.yml").read_text(encoding="utf-8"))
    assert {k: all_vars[k] for k in ("cf_install_gpu_stack", "cf_install_ofed", "cf_install_slurm")} == dict.fromkeys(
        ("cf_install_gpu_stack", "cf_install_ofed", "cf_install_slurm"), True
    )
    play = tmp_path / "show.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "gb001",
                    "gather_facts": False,
                    "vars_files": [str(NVL72 / "ansible/roles/cf_software/vars/main.yml")],
                    "tasks": [
                        {"ansible.builtin.debug": {"msg": "{{ {'p': cf_packages, 's': cf_services} | to_json }}"}}
                    ],
                }
            ]
        ),
        encoding="utf-8",
    )

    def computed(**switches: bool) -> dict[str, list[str]]:
        extra = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **switches}
        out = ansible(
            tmp_path,
            "ansible-playbook",
            "-i",
            str(NVL72 / "ansible/inventory.json"),
            str(play),
            "-e",
            json.dumps(extra),
        )
        line = next(x for x in out.splitlines() if '"msg"' in x)
        return dict(json.loads(json.loads(line.split(":", 1)[1])))

    everything = computed()
    assert [p.split("=")[0] for p in everything["p"]] == [
        "nvidia-driver-570-server-open",
        "nvidia-imex-570",
        "cuda-toolkit-12-8",
        "datacenter-gpu-manager-4-cuda12",
        "doca-ofed",
    ]
    assert everything["s"] == ["nvidia-dcgm"]
    no_gpu = computed(cf_install_gpu_stack=False)
    assert no_gpu == {"p": ["doca-ofed=2.10.0-*"], "s": []}
    no_ofed = computed(cf_install_ofed=False)
    assert "doca-ofed=2.10.0-*" not in no_ofed["p"] and len(no_ofed["p"]) == 4


INSTALLER = """\
network:
  version: 2
  ethernets:
    eno1:
      addresses: [10.41.0.2/24]
      routes: [{to: default, via: 10.41.0.1}]
"""


def merged_netplan(root: Path, *files: tuple[str, str]) -> str:
    folder = root / "etc/netplan"
    folder.mkdir(parents=True)
    for name, text in files:
        (folder / name).write_text(text, encoding="utf-8")
        (folder / name).chmod(0o600)
    netplan = shutil.which("netplan") or "/usr/sbin/netplan"
    result = subprocess.run([netplan, "get", "--root-dir", str(root), "all"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_netplan_check_refuses_a_second_default_route(tmp_path: Path) -> None:
    """An OS installer that addressed eno1 and the rendered bond0 (eno1 a member) merge into two default
    routes and an addressed bond member: the role's check stops the play before netplan is applied."""
    from clusterforge.lab.facts import as_planned
    from clusterforge.render.network.network import render_network

    script = L40S / "ansible/roles/cf_network/files/netplan_check.py"
    valid = load_valid(REPO / "blueprints/l40s-inference.yaml")
    analysis = analyse(valid)
    bound = RenderContext(as_planned(valid, analysis.topo), analysis.topo, analysis.findings)  # bond0 needs names
    rendered = render_network(bound)["network/netplan/inf001.yaml"]
    both = merged_netplan(tmp_path / "both", ("50-installer.yaml", INSTALLER), ("60-clusterforge-rails.yaml", rendered))
    refused = subprocess.run([sys.executable, str(script), "-"], input=both, capture_output=True, text=True)
    assert refused.returncode == 1
    assert "default routes on bond0, eno1" in refused.stdout
    assert "eno1 is a member of bond0 and has an address of its own" in refused.stdout
    alone = merged_netplan(tmp_path / "alone", ("60-clusterforge-rails.yaml", rendered))
    accepted = subprocess.run([sys.executable, str(script), "-"], input=alone, capture_output=True, text=True)
    assert accepted.returncode == 0 and accepted.stdout == ""


def block_blueprint(tmp_path: Path, block_size: int | None) -> Path:
    data = yaml.safe_load((REPO / "blueprints/l40s-inference.yaml").read_text(encoding="utf-8"))
    data["slurm"].update({"version": "24.11", "topology": "block"})
    if block_size:
        data["slurm"]["block_size"] = block_size
    path = tmp_path / "blueprints" / "l40s-block.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.parametrize("block_size", [None, 4])
def test_block_topology_without_nvlink(tmp_path: Path, block_size: int | None) -> None:
    analysis = analyse(load_valid(block_blueprint(tmp_path, block_size), allow=(tmp_path,)))
    codes = [f.code for f in analysis.findings]
    topology = render_analysis(analysis)["slurm/topology.conf"]
    if block_size is None:
        assert "CF-SLURM-004" in codes
        assert "BlockName=" not in topology
    else:
        assert "CF-SLURM-004" not in codes
        assert "BlockName=block001 Nodes=inf[001-004]" in topology
        assert "BlockName=block002 Nodes=inf[005-008]" in topology
        assert "BlockSizes=4,8" in topology


def test_every_role_has_its_tag(tmp_path: Path) -> None:
    """ansible-playbook lists one tag per role (on main no play had a tag: a site could not apply only the
    network files or skip the packages)."""
    listed = ansible(
        tmp_path,
        "ansible-playbook",
        "-i",
        str(L40S / "ansible/inventory.json"),
        str(L40S / "ansible/site.yml"),
        "--list-tags",
    )
    plays = {
        line.split("#")[0].strip(): line.split("TAGS: [", 1)[1].split("]", 1)[0]
        for line in listed.splitlines()
        if "TASK TAGS:" in line
    }
    assert sorted(plays.values()) == ["hosts", "imex", "nccl", "network", "slurm", "software"], listed
