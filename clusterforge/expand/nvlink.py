"""NVLink / NVSwitch domains: one per HGX node, or one across the trays of a rack-scale system."""

from __future__ import annotations

from itertools import groupby

from .. import codes
from .context import ExpandContext
from .topology import NvlinkDomain, Topology


def multi_node_domains(topo: Topology, names: set[str]) -> list[list[str]]:
    """The NVLink domains of more than one node (GB200 NVL72 racks) among `names`, their members in order:
    their GPUs share memory across nodes through IMEX, so each needs an IMEX node list and Slurm must give
    each job an IMEX channel."""
    members = ([n for n in domain.nodes if n in names] for domain in topo.domains)
    return [m for m in members if len(m) > 1]


def build_domains(ctx: ExpandContext) -> None:
    for gi, group in enumerate(ctx.bp.node_groups):
        server = ctx.server(group.model)
        if server.gpus is None or server.gpus.nvlink_domain < 2:
            continue
        per_node = server.gpus.count
        domain_size = server.gpus.nvlink_domain
        nodes_per_domain = max(1, domain_size // per_node)
        nodes = list(ctx.topo.devices_of("node", group=group.name))
        # by index, not by position: a node taken out (`absent`) leaves its domain one short, and moves no other
        for _, chunk in groupby(nodes, key=lambda n: (n.index - 1) // nodes_per_domain):
            members = list(chunk)
            racks = {n.rack for n in members}
            index = len(ctx.topo.domains) + 1
            domain = NvlinkDomain(
                index,
                group.name,
                [n.name for n in members],
                per_node * len(members),
                members[0].rack if len(racks) == 1 else None,
            )
            for node in members:
                node.nvlink_domain = index
            ctx.topo.add_domain(domain)
            if len(racks) > 1:
                ctx.error(
                    codes.NVLINK_DOMAIN_SPLIT,
                    f"NVLink domain {index} of group '{group.name}' spans racks "
                    f"{', '.join(sorted(r or '?' for r in racks))}",
                    ("node_groups", gi, "placement"),
                    f"place {nodes_per_domain} nodes per rack so each domain stays in one rack",
                )
            elif len(members) < nodes_per_domain:
                ctx.warning(
                    codes.NVLINK_DOMAIN_PARTIAL,
                    f"NVLink domain {index} of group '{group.name}' holds "
                    f"{len(members)} of {nodes_per_domain} nodes ({domain.gpus} of {domain_size} GPUs)",
                    ("node_groups", gi, "count"),
                    f"use a multiple of {nodes_per_domain} nodes to fill every domain",
                )
