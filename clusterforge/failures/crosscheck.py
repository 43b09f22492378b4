"""`clusterforge failures --networkx`: each worst failure's bisection left and nodes cut off worked out again with
networkx's minimum cut and connected components (clusterforge.graph), and where the two disagree."""

from __future__ import annotations

from collections.abc import Iterable

from ..expand.topology import Topology
from .effects import Effect


def networkx_disagreements(topo: Topology, effects: Iterable[Effect]) -> list[str]:
    """What networkx finds otherwise, in words (empty: the same figures)."""
    from ..graph import bisection_gbps, cut_off_nodes, switch_graph

    out = []
    for effect in effects:
        down, cut = effect.devices_down, effect.failure.links
        for name, found in effect.fabrics.items():
            theirs = bisection_gbps(switch_graph(topo, name, hosts=False, without=down, cut=cut))
            if abs(theirs - found.bisection_left_gbps) > 1e-6:
                out.append(
                    f"{effect.failure.name}: fabric '{name}' bisection {found.bisection_left_gbps:g} Gb/s, "
                    f"networkx's minimum cut {theirs:g}"
                )
            cut_off = cut_off_nodes(topo, name, down, cut)
            if cut_off != found.cut_nodes:
                odd = sorted(cut_off ^ found.cut_nodes)
                out.append(f"{effect.failure.name}: fabric '{name}' nodes cut off differ from networkx's: {odd[:6]}")
    return out
