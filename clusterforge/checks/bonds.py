"""Bonds of storage and in-band networks: a node's ports of such a network form one LACP bond, and the
bond is only redundant when its members land on different leaves (a leaf pair joined by MLAG or EVPN
multihoming), never on one cage of a switch (a twin-port optic or a breakout cable fails as one).
An MLAG pair needs its peer links."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from ..expand.topology import Link
from .context import CheckContext, shown

BONDED_KINDS = ("storage", "inband")
MIN_PEER_LINKS = 2
"""The peer link bond of an MLAG pair: two links or more (NVIDIA Cumulus Linux MLAG guide)."""
_CAGE = re.compile(r"[^0-9]*[0-9]+")
"""A switch port's cage: 'swp1s2' (breakout) and 'ib3/2' (twin-port OSFP) are in cages swp1 and ib3."""


def bonds(ctx: CheckContext, fabric: str) -> dict[str, list[Link]]:
    """node -> its links to the fabric's leaves, for nodes with two or more (a bond)."""
    members: dict[str, list[Link]] = defaultdict(list)
    for link in ctx.topo.fabric_links(fabric, "node-leaf"):
        members[link.a].append(link)
    return {node: links for node, links in members.items() if len(links) > 1}


def check_bond_homing(ctx: CheckContext) -> Iterator[Finding]:
    """Bonds with every member on one leaf (an error where the fabric is dual-homed, a warning where it is
    single-homed by the blueprint's choice), and bonds with two members in one switch cage."""
    for name, summary in ctx.topo.fabrics.items():
        if summary.kind not in BONDED_KINDS:
            continue
        single: list[str] = []
        one_cage: list[str] = []
        for node, links in bonds(ctx, name).items():
            if len({link.b for link in links}) == 1:
                single.append(node)
            cages = [(link.b, _CAGE.match(link.b_port).group(0)) for link in links]  # type: ignore[union-attr]
            if len(set(cages)) < len(cages):
                one_cage.append(node)
        path = ("fabrics", name)
        if single and summary.dual_homing != "none":
            yield ctx.finding(
                codes.BOND_ON_ONE_LEAF,
                Severity.ERROR,
                f"fabric '{name}' is dual-homed ({summary.dual_homing}), but {len(single)} node"
                f"{'s have' if len(single) != 1 else ' has'} every bond member on one leaf: {shown(single)}",
                path,
                name,
            )
        elif single:
            yield ctx.finding(
                codes.BOND_SINGLE_HOMED,
                Severity.WARNING,
                f"fabric '{name}': {len(single)} node{'s' if len(single) != 1 else ''} bond every member "
                f"to one leaf, which is lost with that leaf: {shown(single)}",
                path,
                name,
                "set dual_homing: mlag (or evpn-mh with a spine tier): each bond then has a member on both leaves",
            )
        if one_cage:
            yield ctx.finding(
                codes.BOND_ON_ONE_CAGE,
                Severity.WARNING,
                f"fabric '{name}': {len(one_cage)} node{'s' if len(one_cage) != 1 else ''} have two bond "
                f"members in one switch cage (a twin-port optic or breakout cable fails as one): {shown(one_cage)}",
                path,
                name,
                "set dual_homing: mlag so the members go to different leaves",
            )


def check_leaf_pairs(ctx: CheckContext) -> Iterator[Finding]:
    """Every leaf of a dual-homed fabric has a partner in its pair; MLAG pairs have their peer links."""
    for name, summary in ctx.topo.fabrics.items():
        if summary.dual_homing == "none":
            continue
        pairs: dict[int | None, list[str]] = defaultdict(list)
        for leaf in ctx.topo.switches(name, "leaf"):
            pairs[leaf.pair].append(leaf.name)
        for number, leaves in sorted(pairs.items(), key=lambda item: item[0] or 0):
            peer = (
                sum(1 for link in ctx.topo.links_between(*leaves) if link.tier == "leaf-peer")
                if len(leaves) == 2
                else 0
            )
            if len(leaves) != 2 or (summary.dual_homing == "mlag" and peer < MIN_PEER_LINKS):
                what = (
                    f"{peer} peer link{'s' if peer != 1 else ''} (MLAG needs {MIN_PEER_LINKS})"
                    if len(leaves) == 2
                    else f"{len(leaves)} leaves ({', '.join(leaves)}) instead of two"
                )
                yield ctx.finding(
                    codes.LEAF_PAIR_INCOMPLETE,
                    Severity.ERROR,
                    f"fabric '{name}': leaf pair {number} has {what}",
                    ("fabrics", name, "dual_homing"),
                    name,
                )
