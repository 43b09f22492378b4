"""imex output family: the IMEX node list of every multi-node NVLink domain (GB200 NVL72 and the like).

NVIDIA's IMEX service maps GPU memory between the nodes of an NVLink domain and talks between them over
TCP on the management network; each node's `/etc/nvidia-imex/nodes_config.cfg` lists the IP addresses of
every node of its domain, one a line, the same list on every member (NVIDIA IMEX guide, deployment
models: "NVLink domain wide"). The addresses are the in-band ones; a domain whose nodes are not all on
the in-band network gets no file (IMEX would not reach quorum).
"""

from __future__ import annotations

from ...expand.topology import Topology
from .. import paths
from ..context import RenderContext, network_of_kind


def imex_domains(topo: Topology, inband: str | None) -> dict[int, list[str]]:
    """domain index -> its nodes, for domains of more than one node whose nodes all have an in-band address."""
    if inband is None:
        return {}
    addresses = topo.addresses.get(inband, {})
    return {d.index: list(d.nodes) for d in topo.domains if len(d.nodes) > 1 and all(n in addresses for n in d.nodes)}


def imex_paths(topo: Topology, inband: str | None) -> dict[str, tuple[str, str]]:
    """node -> (rendered path, installed path) of its domain's node list."""
    return {
        node: (paths.imex_nodes(index), paths.IMEX_NODES_INSTALLED)
        for index, nodes in imex_domains(topo, inband).items()
        for node in nodes
    }


def render_imex(ctx: RenderContext) -> dict[str, str]:
    inband = network_of_kind(ctx.valid, "inband")
    addresses = ctx.topo.addresses.get(inband or "", {})
    return {
        paths.imex_nodes(index): "".join(f"{addresses[n]}\n" for n in nodes)
        for index, nodes in sorted(imex_domains(ctx.topo, inband).items())
    }
