"""Invariants of expanded fabrics over sizes from one node to 16,384 GPUs."""

from __future__ import annotations

from collections import Counter, defaultdict

import networkx as nx
import pytest
from factories import dgx_blueprint
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterforge.catalog import Server, Switch
from clusterforge.errors import BlueprintError, Severity
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
        natives = {p.split("s")[0] if "s" in p[len(group.name) :] else p for p, _ in ports}
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
        # uplinks sized as planned: a 64-port leaf at 1:1 takes 32 ports down and 32 up (hand computed);
        # a rail leaf is planned for its scalable unit's nodes, a fat-tree leaf for a full leaf
        planned = min(32, summary.scalable_unit or 32)
        if (summary.scalable_unit or 32) <= 32:
            for leaf in topo.switches("compute", "leaf"):
                assert up[leaf.name] == planned * 400, leaf.name
    check_upper_tier_bound(valid, topo)
    # addresses are unique and from the pool
    for network, table in topo.addresses.items():
        addresses = list(table.values())
        assert len(addresses) == len(set(addresses)), network
    assert topo.is_connected("compute")


def _spine_bound(uplinks: list[int], ports: int) -> set[int]:
    """Counts the issue allows: ceil(total / ports), or the smallest count from there that spreads every
    leaf's uplinks evenly while each switch uses at least 3/4 of its ports (written out here, not imported)."""
    bound = -(-sum(uplinks) // ports)
    even = [
        s for s in range(bound, 2 * bound + 1) if all(u % s == 0 for u in uplinks) and sum(uplinks) >= 0.75 * s * ports
    ]
    return {even[0]} if even else {bound}


def check_upper_tier_bound(valid: ValidBlueprint, topo: Topology) -> None:
    """Every spine group (a plane, or a pod in three tiers) and core group holds no more switches than
    the bound, and no switch takes more links than it has usable ports."""
    reserved = valid.blueprint.fabrics["compute"].reserved_ports  # type: ignore[union-attr]
    groups: dict[tuple[str, int | None, int | None], list[str]] = defaultdict(list)
    for switch in topo.switches("compute", "spine"):
        groups[("spine", switch.plane, switch.pod)].append(switch.name)
    # a core group is what one spine position of every pod reaches: a component of the spine-core links
    core_links = nx.Graph((link.a, link.b) for link in topo.fabric_links("compute", "spine-core"))
    for i, component in enumerate(nx.connected_components(core_links)):
        groups[("core", i, None)] = sorted(n for n in component if topo.devices[n].role == "core")
    links_to: Counter[str] = Counter()
    links_from: Counter[str] = Counter()
    for link in topo.fabric_links("compute"):
        if link.tier in ("leaf-spine", "spine-core"):
            links_to[link.b] += 1
            links_from[link.a] += 1
    for (tier, _plane, _pod), members in groups.items():
        model = catalog_switch(valid, topo.devices[members[0]].model)
        ports = model.ports[0].count - getattr(reserved, tier)
        if tier == "spine" and topo.fabrics["compute"].tiers == 3:
            ports //= 2
        lower = {link.a for link in topo.fabric_links("compute") if link.b in set(members)}
        uplinks = [links_from[name] for name in sorted(lower)]
        assert len(members) in _spine_bound(uplinks, ports), (tier, len(members), uplinks[:4], ports)
        assert all(links_to[name] <= ports for name in members)


def catalog_switch(valid: ValidBlueprint, model: str) -> Switch:
    return valid.catalog.require(model, Switch)


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
@given(
    nodes=st.integers(1, 200),
    tiers=st.sampled_from(["auto", 2, 3]),
    topology=st.sampled_from(["rail-optimized", "fat-tree"]),
    su=st.sampled_from([None, 16, 24, 32, 48]),
    ratio=st.sampled_from(["1:1", "1.5:1", "2:1"]),
)
def test_invariants_random(nodes: int, tiers: int | str, topology: str, su: int | None, ratio: str) -> None:
    valid = dgx_blueprint(nodes, tiers=tiers, topology=topology, scalable_unit=su, ratio=ratio)
    try:
        topo, _ = expand(valid)
    except BlueprintError as error:
        # two tiers asked for, and the leaves exceed one spine group: refused, not split into planes
        errors = [f for f in error.findings if f.severity is Severity.ERROR]
        assert tiers == 2 and [f.code for f in errors] == ["CF-FABRIC-005"]
        assert "planes: per-rail" in (errors[0].hint or "")
        return
    down, up = (float(x) for x in ratio.split(":"))
    check_invariants(valid, topo, down / up)
