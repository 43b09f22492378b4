"""The lab binds its twin's ports from what the twin's namespaces report, as a site binds its nodes' facts:
veths named as the hardware would name the ports (systemd's path names of the lab's PCI addresses), captured
with `ip -j -d link show`, bound by `clusterforge bind`'s own code, rendered again. Needs root (network
namespaces, no containers: seconds). On the dayone branch the twin ran on the planned names (ens1, eno1),
which no l40s node has, and its netplan matched nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml
from helpers import REPO

from clusterforge.bind import NodeFacts, read_facts
from clusterforge.lab import facts, network
from clusterforge.lab.shape import shape_true_subset
from clusterforge.lab.twin import State, _render
from clusterforge.pipeline import analyse, load_valid, render_files


def test_the_twin_is_rendered_with_the_names_its_namespaces_report(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        raise AssertionError("needs root (network namespaces)")
    valid = load_valid(REPO / "blueprints/l40s-inference.yaml")
    topo = analyse(valid).topo
    state = State(work=tmp_path, prefix=network.lab_prefix(str(tmp_path)))
    # as a site's nodes before bind: nothing configured (no source names the L40S server's ports)
    unbound = yaml.safe_load(render_files(valid)["network/netplan/inf001.yaml"])["network"]
    assert "ethernets" not in unbound and "bonds" not in unbound
    # the lab plugs its network from the render with its own hardware bound by name
    shape = _render(state, facts.as_planned(valid, topo))
    names = shape_true_subset(shape)
    assert names == ["ctl001", "inf001", "inf002"]
    planned_netplan = yaml.safe_load((state.out / "network/netplan/inf001.yaml").read_text())["network"]
    assert planned_netplan["ethernets"]["ens1"]["match"] == {"name": "enp67s0"}
    devices = facts.plan_devices(valid, topo, names)
    plan = network.plan_network(shape, names, state.prefix)
    try:
        network.build(shape, names, plan, {(n, p): d.name for n, ports in devices.items() for p, d in ports.items()})
        files = facts.capture(devices, plan.node_ns, tmp_path / "facts")
        links = json.loads((tmp_path / "facts/inf001.ip-link.json").read_text())
        shown = json.loads(network.ip("-j", "link", "show", ns=plan.node_ns["inf001"]))
        in_namespace = {link["ifname"] for link in shown}
    finally:
        network.delete(plan.namespaces)
    # what the namespace holds: the lab's names (bus 0x41 = 65 -> enp65s0), veths as `ip -d` shows them
    assert in_namespace == {"lo", "enp65s0", "enp66s0", "enp67s0", "enp68s0", "enp69s0", "enp70s0"}
    veth = next(link for link in links if link["ifname"] == "enp67s0")
    assert veth["linkinfo"]["info_kind"] == "veth" and veth["link_type"] == "ether"
    assert (veth["parentbus"], veth["parentdev"]) == ("pci", "0000:43:00.0")
    # the files are what bind reads from a real node
    read: dict[str, NodeFacts] = {}
    for path in files:
        read_facts(path, read)
    assert read["inf001"].devices["enp67s0"].rdma == "mlx5_0"

    bound = facts.bind_twin(valid, topo, files, tmp_path / "lab.bindings.yaml")
    shape = _render(state, bound)
    netplan = yaml.safe_load((state.out / "network/netplan/inf001.yaml").read_text())
    ethernets = netplan["network"]["ethernets"]
    assert ethernets["ens1"]["match"] == {"macaddress": veth["address"]}
    assert ethernets["ens1"]["set-name"] == "enp67s0"
    assert {p.name for p in shape.node("inf001").ports} == in_namespace - {"lo"}
    assert "NOT CONFIGURED" not in (state.out / "network/netplan/inf001.yaml").read_text()
    # only the twin's nodes are bound from facts (the rest as the lab planned them), the bindings on record
    assert yaml.safe_load((state.out / "network/netplan/inf003.yaml").read_text())["network"]["ethernets"]["ens1"][
        "match"
    ] == {"name": "enp67s0"}
    # every node of the group bound: nccl.conf names the compute ports' RDMA devices (unset on main)
    assert "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1" in (state.out / "nccl/inf.conf").read_text()
    record = yaml.safe_load((tmp_path / "lab.bindings.yaml").read_text())["bindings"]
    assert sorted(record) == names
    assert record["inf001"]["ens1"]["rdma"] == "mlx5_0" and record["inf001"]["ens1"]["pci"] == "0000:43:00.0"
