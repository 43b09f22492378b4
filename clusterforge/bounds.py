"""Limits on the size of what a blueprint asks for, checked before any name, port or link is made.

Each field has its own limit in the schema; these bound the totals, so that no blueprint, however its counts
add up, can make clusterforge run out of memory or time. They sit well above the 100,000-GPU design point
(1,000,000 GPUs on 4-GPU trays fit).
"""

from __future__ import annotations

from collections.abc import Iterator

from . import codes
from .catalog import Catalog
from .catalog.models import Server
from .errors import Finding, Severity
from .model import Blueprint

MAX_NODES = 250_000
MAX_RACKS = 40_000
MAX_NODE_PORTS = 4_000_000
"""Server ports in all: each becomes an interface, a cable and a switch port."""


def _over(code: str, what: str, total: int, limit: int, path: str, hint: str) -> Finding:
    return Finding(
        code,
        Severity.ERROR,
        f"the blueprint asks for {total:,} {what}; clusterforge plans at most {limit:,}",
        (path,),
        hint=hint,
    )


def size_findings(bp: Blueprint) -> Iterator[Finding]:
    """Totals that need no catalog: nodes and racks."""
    nodes = sum(group.count for group in bp.node_groups)
    if nodes > MAX_NODES:
        yield _over(
            codes.TOO_LARGE,
            f"nodes in {len(bp.node_groups)} groups",
            nodes,
            MAX_NODES,
            "node_groups",
            "split the cluster into several blueprints (one per building block or hall)",
        )
    racks = sum(row.racks for row in bp.floor.rows)
    if racks > MAX_RACKS:
        yield _over(
            codes.TOO_LARGE,
            f"racks in {len(bp.floor.rows)} rows",
            racks,
            MAX_RACKS,
            "floor",
            "split the floor into several blueprints (one per hall)",
        )


def port_findings(bp: Blueprint, catalog: Catalog) -> Iterator[Finding]:
    """Server ports in all, from the catalog's port groups (run once the catalog is loaded)."""
    ports = 0
    for group in bp.node_groups:
        server = catalog.get(group.model, Server)
        if server is not None:
            ports += group.count * sum(port_group.count for port_group in server.ports)
    if ports > MAX_NODE_PORTS:
        yield _over(
            codes.TOO_MANY_PORTS,
            "server ports",
            ports,
            MAX_NODE_PORTS,
            "node_groups",
            "split the cluster into several blueprints, or use servers with fewer ports",
        )
