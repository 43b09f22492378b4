"""The Ansible family, fed to the real tools: ansible-inventory reads the inventory into the groups the
topology implies, ansible-playbook accepts site.yml, and a local run installs exactly the rendered files."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import BLUEPRINTS, ansible

from clusterforge.catalog import Server
from clusterforge.expand import expand
from clusterforge.expand.topology import Device, RailSegment, Topology
from clusterforge.output.writer import write_tree
from clusterforge.pipeline import load_valid, render_files
from clusterforge.render import paths
from clusterforge.render.context import ansible_name
from clusterforge.validate import ValidBlueprint


@dataclass
class Case:
    valid: ValidBlueprint
    topo: Topology
    files: dict[str, str]
    out: Path
    work: Path

    @property
    def inventory(self) -> Path:
        return self.out / "ansible" / "inventory.json"

    @cached_property
    def listing(self) -> dict[str, Any]:
        """`ansible-inventory --list` of the rendered inventory."""
        listing: dict[str, Any] = json.loads(
            ansible(self.work, "ansible-inventory", "-i", str(self.inventory), "--list")
        )
        return listing

    def host_data(self, host: str) -> dict[str, Any]:
        """The host's entry in its rack's host data file (what the cf_network role reads), or {}."""
        device = self.topo.devices[host]
        path = self.out / "ansible" / "host_data" / f"{device.rack}.json"
        if device.kind != "node" or not path.exists():
            return {}
        entry: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")).get(host, {})
        return entry

    def role_vars(self, role: str) -> dict[str, Any]:
        path = self.out / "ansible" / "roles" / role / "vars" / "main.yml"
        values: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8")) if path.exists() else {}
        return values

    def install_lists(self, host: str, host_vars: dict[str, Any]) -> tuple[list[dict[str, str]], list[str]]:
        """What the roles copy to `host` and the folders they make, as the roles find them: Slurm's and NCCL's
        in their role vars (NCCL's by the host's node group), the network files in the host data, IMEX's in the
        host vars."""
        controllers, partition_nodes = slurm_members(self)
        slurm = self.role_vars("cf_slurm") if host in controllers | partition_nodes | slurm_logins(self) else {}
        nccl = self.role_vars("cf_nccl").get("cf_nccl_by_group", {}).get(host_vars.get("cf_node_group"), {})
        nccl = nccl if host in gpu_nodes(self) else {}
        software = self.role_vars("cf_software").get("cf_software_by_group", {}).get(host_vars.get("cf_node_group"))
        software = software or {}
        network = self.host_data(host)
        files = [
            *slurm.get("cf_slurm_files", []),
            *nccl.get("files", []),
            *software.get("files", []),
            *network.get("cf_network_files", []),
            *host_vars.get("cf_imex_files", []),
        ]
        dirs = [
            *slurm.get("cf_slurm_dirs", []),
            *nccl.get("dirs", []),
            *software.get("dirs", []),
            *network.get("cf_network_dirs", []),
            *host_vars.get("cf_imex_dirs", []),
        ]
        return files, dirs

    def nodes(self) -> list[Device]:
        return list(self.topo.nodes())

    def switches(self) -> list[Device]:
        return [d for d in self.topo.devices.values() if d.kind == "switch"]

    def managed(self) -> list[Device]:
        """Every device with a management address: nodes, switches and built-in rack equipment (NVL72
        NVLink switch trays, power shelves, the second in-rack management switch)."""
        addressed = {key.partition(":")[0] for by_key in self.topo.addresses.values() for key in by_key}
        return [d for d in self.topo.devices.values() if d.kind in ("node", "switch") or d.name in addressed]

    def equipment(self) -> list[Device]:
        return [d for d in self.managed() if d.kind == "equipment"]


@pytest.fixture(scope="module", params=BLUEPRINTS, ids=[p.stem for p in BLUEPRINTS])
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Case:
    valid = load_valid(request.param)
    topo, _ = expand(valid)
    files = render_files(valid)
    work = tmp_path_factory.mktemp(request.param.stem)
    write_tree(files, work / "out")
    return Case(valid, topo, files, work / "out", work)


# --- what the topology says each group holds ------------------------------------------------------
def gpu_nodes(case: Case) -> set[str]:
    return {n.name for n in case.nodes() if case.valid.catalog.require(n.model, Server).gpus}


def slurm_members(case: Case) -> tuple[set[str], set[str]]:
    slurm = case.valid.blueprint.slurm
    if slurm is None:
        return set(), set()
    in_groups = {g for p in slurm.partitions for g in p.node_groups}
    return set(slurm.controllers), {n.name for n in case.nodes() if n.group in in_groups}


def slurm_logins(case: Case) -> set[str]:
    """Login nodes: users run sbatch and srun there, which read the same Slurm files."""
    return {n.name for n in case.nodes() if n.role == "login"} if case.valid.blueprint.slurm else set()


def expected_groups(case: Case) -> dict[str, set[str]]:
    nodes, switches = case.nodes(), case.switches()
    hosts = case.managed()
    groups: dict[str, set[str]] = {
        "nodes": {n.name for n in nodes},
        "switches": {s.name for s in switches},
        "gpu_nodes": gpu_nodes(case),
    }
    for n in nodes:
        groups.setdefault(ansible_name(f"role_{n.role}"), set()).add(n.name)
        groups.setdefault(ansible_name(f"nodegroup_{n.group}"), set()).add(n.name)
        if n.su is not None:
            groups.setdefault(f"su_{n.su}", set()).add(n.name)
    for d in hosts:
        assert d.rack is not None
        groups.setdefault(ansible_name(f"rack_{d.rack}"), set()).add(d.name)
        groups.setdefault(ansible_name(f"row_{case.topo.racks[d.rack].row}"), set()).add(d.name)
    compute = {name for name, f in case.valid.blueprint.fabrics.items() if f.kind == "compute"}
    for e in case.equipment():
        groups.setdefault("equipment", set()).add(e.name)
        groups.setdefault(ansible_name(f"equipment_{e.role}"), set()).add(e.name)
    for s in switches:
        groups.setdefault(ansible_name(f"fabric_{s.group}"), set()).add(s.name)
        groups.setdefault(ansible_name(f"switch_{s.group}_{s.role}"), set()).add(s.name)
        if s.group in compute and s.role == "leaf" and s.rail is not None:
            groups.setdefault(f"rail_{s.rail}", set()).add(s.name)
    controllers, partition_nodes = slurm_members(case)
    if case.valid.blueprint.slurm is not None:
        groups.update(
            {
                "slurm_controllers": controllers,
                "slurm_nodes": partition_nodes,
                "slurm": controllers | partition_nodes | slurm_logins(case),
            }
        )
        if slurm_logins(case):
            groups["slurm_login"] = slurm_logins(case)
        for p in case.valid.blueprint.slurm.partitions:
            groups[ansible_name(f"slurm_partition_{p.name}")] = {n.name for n in nodes if n.group in p.node_groups}
    return groups


def members(listing: dict[str, Any], group: str) -> set[str]:
    """Every host of `group` in `ansible-inventory --list` output, through its children."""
    entry = listing.get(group, {})
    found = set(entry.get("hosts", []))
    for child in entry.get("children", []):
        found |= members(listing, child)
    return found


def expected_installs(case: Case, host: str) -> dict[str, str]:
    """Installed path -> rendered path for `host`, decided from paths.py and what was rendered."""
    controllers, partition_nodes = slurm_members(case)
    wanted: dict[str, str] = {}
    if host in controllers | partition_nodes | slurm_logins(case):
        wanted.update(
            {
                paths.SLURM_CONF_INSTALLED: paths.SLURM_CONF,
                f"{paths.SLURM_INSTALL_DIR}/gres.conf": paths.SLURM_GRES,
                f"{paths.SLURM_INSTALL_DIR}/topology.conf": paths.SLURM_TOPOLOGY,
                f"{paths.SLURM_INSTALL_DIR}/cgroup.conf": paths.SLURM_CGROUP,
            }
        )
    if host in gpu_nodes(case):
        device = case.topo.devices[host]
        assert device.group is not None
        conf = paths.nccl_conf(device.group)
        if paths.rccl_conf(device.group) in case.files:  # AMD GPUs: RCCL reads /etc/rccl.conf, not nccl.conf
            wanted[paths.RCCL_CONF_INSTALLED] = paths.rccl_conf(device.group)
        else:
            wanted[paths.NCCL_CONF_INSTALLED] = conf
        if f"NCCL_TOPO_FILE={paths.NCCL_TOPOLOGY_INSTALLED}" in case.files.get(conf, ""):
            wanted[paths.NCCL_TOPOLOGY_INSTALLED] = paths.nccl_topology(device.model)
        wanted[paths.UDEV_RAILS_INSTALLED] = paths.udev_rails(device.model)
    if case.topo.devices[host].kind == "node" and paths.netplan_rails(host) in case.files:
        wanted[paths.NETPLAN_RAILS_INSTALLED] = paths.netplan_rails(host)
        # the plan's addressed interfaces (the netplan file leaves out ports whose interface name is not known
        # yet, CF-NET-001, until `clusterforge bind`): rail ports and bonds
        rails = [key for segments in case.topo.segments.values() for key in segments if key.startswith(f"{host}:")]
        bonds = [net for net, lans in case.topo.lans.items() if host in lans]
        if len(rails) + len(bonds) > 1:  # ARP sysctls where several interfaces share a host
            wanted[paths.SYSCTL_RAILS_INSTALLED] = paths.SYSCTL_RAILS
        if paths.roce_qos_script(host) in case.files:  # the host side of lossless RoCE, run by its unit
            wanted[paths.ROCE_QOS_SCRIPT_INSTALLED] = paths.roce_qos_script(host)
            wanted[paths.ROCE_QOS_UNIT_INSTALLED] = paths.ROCE_QOS_UNIT
    domain = case.topo.devices[host].nvlink_domain
    if domain is not None and paths.imex_nodes(domain) in case.files:
        wanted[paths.IMEX_NODES_INSTALLED] = paths.imex_nodes(domain)
    device = case.topo.devices[host]
    if device.kind == "node":
        assert device.group is not None
        wanted[paths.APT_PINS_INSTALLED] = paths.apt_pins(device.group)
        wanted[paths.HOSTS_INSTALLED] = paths.HOSTS
    return {dest: src for dest, src in wanted.items() if src in case.files}


def installed_text(case: Case, dest: str, src: str) -> str:
    """What the playbook leaves at `dest`: the rendered file, or for /etc/hosts a marked block of it."""
    if dest != paths.HOSTS_INSTALLED:
        return case.files[src]
    marker = f"clusterforge {case.valid.blueprint.name}"
    return f"# BEGIN {marker}\n{case.files[src].rstrip()}\n# END {marker}\n"


# --- tests ----------------------------------------------------------------------------------------
def test_inventory_list_matches_topology(case: Case) -> None:
    listing = case.listing
    hostvars = listing["_meta"]["hostvars"]
    assert set(hostvars) == {d.name for d in case.managed()}
    assert members(listing, "all") == set(hostvars)
    expected = expected_groups(case)
    actual = {g: members(listing, g) for g in listing if g not in ("_meta", "all", "ungrouped")}
    assert actual == expected
    assert not members(listing, "ungrouped")
    # per rack, the inventory holds exactly the topology's nodes, switches and managed equipment
    managed = {d.name for d in case.managed()}
    racks = {r: len([d for d in case.topo.nodes_in_rack(r) if d.name in managed]) for r in case.topo.racks}
    assert {r: len(actual.get(ansible_name(f"rack_{r}"), ())) for r in racks} == racks
    assert all(name.isidentifier() for name in actual), sorted(actual)


def _segment_vars(segment: RailSegment) -> dict[str, str]:
    gateway = {"gateway": str(segment.gateway)} if segment.gateway is not None else {}
    return {"subnet": str(segment.subnet), **gateway}


def test_inventory_host_vars(case: Case) -> None:
    hostvars = case.listing["_meta"]["hostvars"]
    fabrics = case.valid.blueprint.fabrics
    inband = next(n for n, f in fabrics.items() if f.kind == "inband")
    oob = next(n for n, f in fabrics.items() if f.kind == "oob")
    compute = next(n for n, f in fabrics.items() if f.kind == "compute")
    for name, host in hostvars.items():
        device = case.topo.devices[name]
        assert device.rack is not None
        assert (host["cf_rack"], host["cf_u"]) == (device.rack, device.u)
        assert host["cf_root"] == "/" and host["cf_cluster"] == case.valid.blueprint.name
        addresses = {
            net: {k: str(a) for k, a in by_key.items() if k.partition(":")[0] == name}
            for net, by_key in case.topo.addresses.items()
        }
        # an NVLink switch tray has two management ports: NVOS (reached by Ansible) and its BMC
        managed_at = addresses[inband].get(name) or addresses[oob].get(name) or addresses[oob][f"{name}:nvos"]
        assert host["ansible_host"] == managed_at
        if device.kind == "equipment":
            # the few per-port addresses of rack equipment are in the inventory, and nothing else is
            for key, address in addresses[oob].items():
                port = key.partition(":")[2]
                assert (host["cf_port_addresses"][oob][port] if port else host["cf_addresses"][oob]) == address
            assert (host["cf_kind"], host["cf_equipment_role"]) == ("equipment", device.role)
            continue
        data = case.host_data(name)
        assert not {"cf_rails", "cf_port_addresses", "cf_network_files"} & set(host), name
        for net, by_key in addresses.items():
            for key, address in by_key.items():
                port = key.partition(":")[2]
                assert (data["cf_port_addresses"][net][port] if port else host["cf_addresses"][net]) == address
        if device.kind == "switch":
            assert (host["cf_fabric"], host["cf_tier"]) == (device.group, device.role)
            continue
        server = case.valid.catalog.require(device.model, Server)
        assert host["cf_gpu_count"] == (server.gpus.count if server.gpus else 0)
        assert host["cf_gpu_model"] == (server.gpus.model if server.gpus else None)
        rails = {
            str(link.rail): {
                "fabric": compute,
                "port": link.a_port,
                "leaf": link.b,
                "leaf_port": link.b_port,
                "address": addresses[compute][f"{name}:{link.a_port}"],
                **_segment_vars(case.topo.segments[compute][f"{name}:{link.a_port}"]),
            }
            for link in case.topo.links_of(name)
            if link.a == name and link.fabric == compute and link.tier == "node-leaf" and link.rail is not None
        }
        assert data.get("cf_rails", {}) == rails
        for rail, entry in rails.items():
            assert case.topo.leaf_of(name, compute, int(rail)) == [entry["leaf"]]


def test_every_managed_device_is_in_the_inventory(case: Case) -> None:
    """Whatever has an address is managed and must be in the inventory; in the NVL72 racks that is, per rack,
    the 9 NVLink switch trays (BMC and NVOS ports), the 8 power shelves and the second management switch,
    each cabled to the rack's management switch."""
    hostvars = case.listing["_meta"]["hostvars"]
    addressed = {key.partition(":")[0] for by_key in case.topo.addresses.values() for key in by_key}
    assert addressed <= set(hostvars)
    if case.valid.blueprint.name != "gb200-nvl72":
        return
    cabled = {(link.a, link.a_port): link.b for link in case.topo.fabric_links("oob", "oob")}
    for rack in ("A01", "A02", "A03", "A04"):
        hosts = members(case.listing, f"rack_{rack.lower()}")
        assert {h for h in hosts if "-nvsw" in h} == {f"{rack}-nvsw{i}" for i in range(1, 10)}
        assert {h for h in hosts if "-ps" in h} == {f"{rack}-ps{i}" for i in range(1, 9)}
        assert f"{rack}-mgmt2" in hosts
        for i in range(1, 10):
            for port in ("bmc", "nvos"):
                assert cabled[(f"{rack}-nvsw{i}", port)] == f"{rack}-mgmt1"
        for i in range(1, 9):
            assert cabled[(f"{rack}-ps{i}", "pmc")] == f"{rack}-mgmt1"
    cabling = (case.out / "handoff/cabling.csv").read_text()
    assert '"A04-nvsw9","nvos"' in cabling and '"A04-ps8","pmc"' in cabling


def test_inventory_graph(case: Case) -> None:
    graph = ansible(case.work, "ansible-inventory", "-i", str(case.inventory), "--graph")
    lines = [line.strip(" |-") for line in graph.splitlines()]
    assert {line for line in lines if not line.startswith("@")} == {d.name for d in case.managed()}
    assert {line[1:].rstrip(":") for line in lines if line.startswith("@")} >= {"all", *expected_groups(case)}


def test_playbook_syntax(case: Case) -> None:
    ansible(
        case.work,
        "ansible-playbook",
        "-i",
        str(case.inventory),
        "--syntax-check",
        str(case.out / "ansible" / "site.yml"),
    )


def sample_hosts(case: Case) -> list[str]:
    """A controller, the first node of every group (GPU, login, storage, ...) and a switch."""
    controllers, _ = slurm_members(case)
    firsts = {n.group: n.name for n in sorted(case.nodes(), key=lambda d: d.name, reverse=True)}
    return sorted({*sorted(controllers)[:1], *firsts.values(), min(s.name for s in case.switches())})


IDEMPOTENCE_CASE = "h200-training-pod"
"""The blueprint whose playbook runs twice, the second run changing nothing (once is enough: each local
module run costs about a second on a 2-core machine)."""


def test_playbook_installs_rendered_files(case: Case) -> None:
    root = case.work / "root"
    hosts = sample_hosts(case)
    extra = {
        "ansible_connection": "local",
        "ansible_host": "127.0.0.1",
        "ansible_python_interpreter": sys.executable,
        "cf_become": False,
        "cf_root": f"{root}/{{{{ inventory_hostname }}}}",
    }
    command = [
        "ansible-playbook",
        "-i",
        str(case.inventory),
        "-c",
        "local",
        "--limit",
        ",".join(hosts),
        "-e",
        json.dumps(extra),
        str(case.out / "ansible" / "site.yml"),
    ]
    first = ansible(case.work, *command)
    assert "UNREACHABLE" not in first
    # under a scratch cf_root the packages are pinned, never installed: no package manager runs
    for task in ("Install the pinned packages", "Hold the pinned packages", "Enable the node software services"):
        ran = re.search(rf"TASK \[cf_software : {task}[^\n]*\n(.*?)(?=\nTASK|\nPLAY)", first, re.S)
        assert ran is not None and "changed:" not in ran[1] and "ok:" not in ran[1], (task, first)
    listing = case.listing
    slurm_rendered = any(p.startswith("slurm/") for p in case.files)
    controllers, partition_nodes = slurm_members(case)
    for host in hosts:
        expected = expected_installs(case, host)
        installed = {
            f"/{p.relative_to(root / host)}": p.read_text(encoding="utf-8")
            for p in sorted((root / host).rglob("*"))
            if p.is_file()
        }
        assert installed == {dest: installed_text(case, dest, src) for dest, src in expected.items()}, host
        listed, dirs = case.install_lists(host, listing["_meta"]["hostvars"][host])
        copied = {dest: src for dest, src in expected.items() if dest != paths.HOSTS_INSTALLED}
        assert {f"/{f['dest']}": f["src"] for f in listed} == copied, host
        assert {str(Path(dest).parent).lstrip("/") for dest in copied} == set(dirs), host
        if slurm_rendered and host in controllers | partition_nodes | slurm_logins(case):
            assert paths.SLURM_CONF_INSTALLED in installed, host
            assert f"{paths.SLURM_INSTALL_DIR}/cgroup.conf" in installed, host
    if case.valid.blueprint.name != IDEMPOTENCE_CASE:
        return
    second = ansible(case.work, *command)
    changed = re.findall(r"changed=(\d+)", second)
    assert changed and set(changed) == {"0"}, second


def test_tool_traps_are_closed(tmp_path: Path) -> None:
    """The helper fails on an inventory ansible-inventory would otherwise accept with exit 0."""
    broken = tmp_path / "inventory.yml"
    broken.write_text("all:\n  hosts:\n    a: {}\n  hosts:\n    b: {}\n", encoding="utf-8")
    with pytest.raises(AssertionError):
        ansible(tmp_path, "ansible-inventory", "-i", str(broken), "--list")
    broken.write_text("all:\n  hosts: [a, b\n", encoding="utf-8")
    with pytest.raises(AssertionError):
        ansible(tmp_path, "ansible-inventory", "-i", str(broken), "--list")
