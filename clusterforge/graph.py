"""The expanded topology as a networkx graph, for the commands that ask a graph question (export to GraphML or
GEXF, the cross-checks of the failure analysis) and for anyone scripting against clusterforge.

Built only when asked: expansion, checks and render keep their plain adjacency maps (`Topology`), since at
100,000 GPUs a networkx graph of every link costs more to build than the rest of expansion (docs/failures.md has
the measurements). networkx is imported inside the functions, so importing this module costs nothing.

- `switch_graph(topo, fabric)`: one fabric's switches, with the nodes collapsed into one vertex per node group
  (`hosts:<group>`); parallel links are one edge with `links` (count) and `capacity` (Gb/s).
- `full_graph(topo)`: every device and every link (a MultiGraph, one edge per link, keyed by link index).
- `bisection_gbps(graph)`: the least capacity of a cut between the leaves and the top tier, halved.
- `switch_islands(graph)`: the connected groups of switches.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .expand.topology import Device, Topology

if TYPE_CHECKING:
    import networkx as nx

SWITCH_LINK_TIERS = ("leaf-peer", "leaf-spine", "spine-core")
SOURCE, SINK = "__leaves__", "__top__"


def _device_attrs(device: Device) -> dict[str, Any]:
    """A device's fields as GraphML-safe attributes (no None)."""
    attrs = {
        "kind": device.kind,
        "model": device.model,
        "role": device.role,
        "group": device.group,
        "rack": device.rack,
        "u": device.u,
        "rail": device.rail,
        "su": device.su,
        "pod": device.pod,
        "plane": device.plane,
        "nvlink_domain": device.nvlink_domain,
    }
    return {k: v for k, v in attrs.items() if v is not None}


def switch_graph(
    topo: Topology, fabric: str, hosts: bool = True, without: Iterable[str] = (), cut: Iterable[int] = ()
) -> nx.Graph:
    """`fabric`'s switch-level graph: a vertex per switch (attributes as `full_graph`'s), with `hosts` one per
    node group holding its node-leaf links; an edge per pair with `links` and `capacity` (Gb/s) and `tier`.
    `without`: devices left out (a failure), their links with them; `cut`: indexes of links left out."""
    import networkx as nx

    gone, severed = set(without), set(cut)
    graph = nx.Graph(name=f"{topo.name}:{fabric}")
    for device in topo.switches(fabric):
        if device.role != "oob" and device.name not in gone:
            graph.add_node(device.name, **_device_attrs(device))
    for index, link in enumerate(topo.links):
        if link.fabric != fabric or link.a in gone or link.b in gone or index in severed:
            continue
        if link.tier in SWITCH_LINK_TIERS:
            a, b = link.a, link.b
        elif link.tier == "node-leaf" and hosts:
            a, b = f"hosts:{topo.devices[link.a].group}", link.b
            if a not in graph:
                graph.add_node(a, kind="hosts", role="hosts", group=topo.devices[link.a].group or "", nodes=0)
        else:
            continue
        if graph.has_edge(a, b):
            edge = graph[a][b]
            edge["links"] += 1
            edge["capacity"] += link.speed_gbps
        else:
            graph.add_edge(a, b, links=1, capacity=link.speed_gbps, tier=link.tier)
    if hosts:
        for device in topo.nodes():
            name = f"hosts:{device.group}"
            if name in graph:
                graph.nodes[name]["nodes"] += 1
    return graph


def full_graph(topo: Topology) -> nx.MultiGraph:
    """Every device (with its rack, U, rail, ...) and every link (fabric, tier, ports, speed, cable media and
    length), one edge per link keyed by its index in `topo.links`; attributes without a value are left out, so
    GraphML and GEXF writers take the graph as it is."""
    import networkx as nx

    graph = nx.MultiGraph(name=topo.name)
    for device in topo.devices.values():
        graph.add_node(device.name, **_device_attrs(device))
    for index, link in enumerate(topo.links):
        attrs = {
            "fabric": link.fabric,
            "tier": link.tier,
            "a_port": link.a_port,
            "b_port": link.b_port,
            "speed_gbps": link.speed_gbps,
            "rail": link.rail,
            "media": link.media or None,
            "length_m": link.length_m or None,
        }
        graph.add_edge(link.a, link.b, key=index, **{k: v for k, v in attrs.items() if v is not None})
    return graph


def bisection_gbps(graph: nx.Graph) -> float:
    """The least total capacity of switch-to-switch edges whose removal separates every leaf from every switch
    of the top tier (networkx's minimum cut from a source joined to the leaves to a sink joined to the top
    tier), halved: in a full fat tree, what any balanced cut of the nodes carries. Host vertices are left out.
    Fabrics of one tier: 0."""
    import networkx as nx

    switches = [n for n, d in graph.nodes(data=True) if d.get("kind") == "switch"]
    roles = {graph.nodes[n]["role"] for n in switches}
    top = "core" if "core" in roles else "spine" if "spine" in roles else None
    if top is None:
        return 0.0
    flow = nx.DiGraph()
    for a, b, data in graph.edges(data=True):
        if data.get("tier") in ("leaf-spine", "spine-core"):
            flow.add_edge(a, b, capacity=data["capacity"])
            flow.add_edge(b, a, capacity=data["capacity"])
    for name in switches:
        role = graph.nodes[name]["role"]
        if role == "leaf" and name in flow:
            flow.add_edge(SOURCE, name)  # no capacity: unbounded
        elif role == top and name in flow:
            flow.add_edge(name, SINK)
    if SOURCE not in flow or SINK not in flow:
        return 0.0
    return float(nx.minimum_cut_value(flow, SOURCE, SINK)) / 2


def switch_islands(graph: nx.Graph) -> list[set[str]]:
    """The connected groups of switches over switch-to-switch edges (an InfiniBand subnet each), largest first."""
    import networkx as nx

    switches = graph.subgraph(n for n, d in graph.nodes(data=True) if d.get("kind") == "switch")
    return sorted(nx.connected_components(switches), key=lambda group: (-len(group), min(group)))


def write_graph(topo: Topology, fmt: str) -> str:
    """`topo` as GraphML or GEXF text, through networkx's own writers."""
    import io

    import networkx as nx

    graph = full_graph(topo)
    out = io.BytesIO()
    if fmt == "graphml":
        nx.write_graphml(graph, out)
    elif fmt == "gexf":
        nx.write_gexf(graph, out)
    else:
        raise ValueError(f"unknown graph format {fmt!r}")
    return out.getvalue().decode("utf-8")


def cut_off_nodes(topo: Topology, fabric: str, down: Iterable[str] = (), cut: Iterable[int] = ()) -> set[str]:
    """The running nodes of `fabric` left without a port on a switch of the part of their intact switch island
    that keeps the most node ports, once the devices `down` fail and the links `cut` (indexes) are cut:
    networkx's connected components before and after, the same rule as the failure analysis (docs/failures.md)."""
    gone = set(down)
    intact, alive, ports = _switch_graphs(topo, fabric, gone, set(cut))
    island, piece = _numbered_components(intact), _numbered_components(alive)
    best = _largest_pieces(island, piece, ports)
    return {
        node
        for node, leaves in ports.items()
        if node not in gone and not any(leaf in piece and best[island[leaf]] == piece[leaf] for leaf in leaves)
    }


def _switch_graphs(
    topo: Topology, fabric: str, gone: set[str], severed: set[int]
) -> tuple[nx.Graph, nx.Graph, dict[str, list[str]]]:
    """`fabric`'s switches over switch-to-switch links, intact and with `gone` and `severed` left out, and each
    node's leaves over the node-leaf links left (empty for a node whose every port is cut)."""
    import networkx as nx

    switches = {d.name for d in topo.switches(fabric) if d.role != "oob"}
    intact, alive = nx.Graph(), nx.Graph()
    intact.add_nodes_from(switches)
    alive.add_nodes_from(switches - gone)
    ports: dict[str, list[str]] = {}
    for index, link in enumerate(topo.links):
        if link.fabric != fabric:
            continue
        if link.tier in SWITCH_LINK_TIERS:
            intact.add_edge(link.a, link.b)
            if index not in severed and link.a not in gone and link.b not in gone:
                alive.add_edge(link.a, link.b)
        elif link.tier == "node-leaf":
            leaves = ports.setdefault(link.a, [])
            if index not in severed:
                leaves.append(link.b)
    return intact, alive, ports


def _numbered_components(graph: nx.Graph) -> dict[str, int]:
    """Switch -> the number of its connected component."""
    import networkx as nx

    return {s: i for i, group in enumerate(nx.connected_components(graph)) for s in group}


def _largest_pieces(island: dict[str, int], piece: dict[str, int], ports: dict[str, list[str]]) -> dict[int, int]:
    """Intact island -> the piece left of it that keeps the most node ports (ties: the piece of the first switch
    by name)."""
    weight: Counter[int] = Counter(piece[leaf] for leaves in ports.values() for leaf in leaves if leaf in piece)
    best: dict[int, int] = {}
    for switch, number in sorted(piece.items()):
        known = best.get(island[switch])
        if known is None or weight[number] > weight[known]:
            best[island[switch]] = number
    return best
