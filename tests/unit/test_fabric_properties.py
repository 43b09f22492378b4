"""Invariants of expanded fabrics over sizes from one node to 16,384 GPUs."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from factories import dgx_blueprint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge.catalog import Server, Switch
from clusterforge.expand import expand
from clusterforge.expand.ports import downlink_group, per_native
from clusterforge.expand.topology import Topology
from clusterforge.validate import ValidBlueprint


def check_invariants(valid: ValidBlueprint, topo: Topology, ratio: float) -> None:
    catalog = valid.catalog
    # every compute NIC port of every node is connected exactly once
    uses = Counter((link.a, link.a_port) for link in topo.fabric_links("compute", "node-leaf"))
    for node in topo.nodes():
        server = catalog.require(node.model, Server)
        for group in server.port_groups("compute"):
            for i in range(1, group.count + 1):
                assert uses[(node.name, f"{group.name}{i}")] == 1, (node.name, group.name, i)
    # no switch port is used twice, and no switch is over its radix
    per_switch: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for link in topo.links:
        if link.tier == "oob":  # management ports are not data ports
            continue
        per_switch[link.b].append((link.b_port, link.speed_gbps))
        if topo.devices[link.a].kind == "switch":
            per_switch[link.a].append((link.a_port, link.speed_gbps))
    for name, ports in per_switch.items():
        names = [p for p, _ in ports]
        assert len(names) == len(set(names)), f"{name} uses a port twice"
        switch = catalog.require(topo.devices[name].model, Switch)
        group = downlink_group(switch, max(s for _, s in ports))
        assert group is not None
        natives = {p.split("s")[0] if "s" in p[len(group.name):] else p for p, _ in ports}
        assert len(natives) <= sum(g.count for g in switch.ports if g.role != "oob"), f"{name} over radix"
        assert sum(1 / per_native(group, s) for _, s in ports) <= group.count + 1e-9
    # rail property: rail k of a node goes to a rail-k leaf of the node's scalable unit
    summary = topo.fabrics["compute"]
    if summary.topology == "rail-optimized" and summary.tiers > 1:
        for link in topo.fabric_links("compute", "node-leaf"):
            leaf, node = topo.devices[link.b], topo.devices[link.a]
            assert leaf.rail == link.rail == int(link.a_port.removeprefix("ib"))
            assert leaf.su == node.su
    # capacity: up >= down / ratio at every switch that has uplinks; equal for full 1:1 leaves
    down: Counter[str] = Counter()
    up: Counter[str] = Counter()
    for link in topo.fabric_links("compute"):
        down[link.b] += link.speed_gbps
        up[link.a] += link.speed_gbps
    for switch in topo.switches("compute"):
        if up[switch.name]:
            assert up[switch.name] * ratio >= down[switch.name] - 1e-6, switch.name
    if ratio == 1.0 and summary.tiers > 1:
        full = max(down[s.name] for s in topo.switches("compute", "leaf"))
        for leaf in topo.switches("compute", "leaf"):
            if down[leaf.name] == full:
                assert up[leaf.name] == down[leaf.name], leaf.name
    # addresses are unique and from the pool
    for network, table in topo.addresses.items():
        addresses = list(table.values())
        assert len(addresses) == len(set(addresses)), network
    assert topo.is_connected("compute")


SIZES = [1, 2, 7, 8, 9, 31, 32, 33, 64, 100, 255, 256, 257, 513, 1000, 2048]


@pytest.mark.parametrize("nodes", SIZES)
@pytest.mark.parametrize("topology", ["rail-optimized", "fat-tree"])
def test_invariants_non_blocking(nodes: int, topology: str) -> None:
    valid = dgx_blueprint(nodes, topology=topology)
    topo, _ = expand(valid)
    check_invariants(valid, topo, 1.0)
    assert sum(1 for _ in topo.nodes()) == nodes


@pytest.mark.parametrize("nodes", [16, 100, 600])
@pytest.mark.parametrize("ratio", ["2:1", "3:1"])
def test_invariants_oversubscribed(nodes: int, ratio: str) -> None:
    valid = dgx_blueprint(nodes, ratio=ratio)
    topo, _ = expand(valid)
    down, up = (float(x) for x in ratio.split(":"))
    check_invariants(valid, topo, down / up)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=st.integers(1, 200), tiers=st.sampled_from(["auto", 2, 3]),
       topology=st.sampled_from(["rail-optimized", "fat-tree"]), su=st.sampled_from([None, 16, 24, 32, 48]),
       ratio=st.sampled_from(["1:1", "1.5:1", "2:1"]))
def test_invariants_random(nodes: int, tiers: int | str, topology: str, su: int | None, ratio: str) -> None:
    valid = dgx_blueprint(nodes, tiers=tiers, topology=topology, scalable_unit=su, ratio=ratio)
    topo, _ = expand(valid)
    down, up = (float(x) for x in ratio.split(":"))
    check_invariants(valid, topo, down / up)
