"""The pair tests judged together: each rail's ring of pairs in a leaf set, then the pairs across the spine.

- every pair of a ring of three or more nodes under one leaf below floor: the leaf switch;
- a node low with both its neighbours in the ring: its rail's cable (by the cabling plan's label);
- a low pair that no node explains: one of the two cables (a ring of two nodes cannot tell which);
- across the spine, every pair through a leaf below floor while its nodes' own rails passed: the leaf's
  uplinks; a low pair no leaf explains: the uplinks of either leaf.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from .. import codes
from ..render.handoff.burnin import BURN_IN_DIR, BurnInGroup
from .planned import Plan
from .verdict import Problem, gbs

Suspects = set[tuple[str, int]]
"""(node, rail) whose own rail cable explains its low pairs."""


@dataclass
class PairResult:
    kind: str
    group: BurnInGroup
    rail: int
    a: str
    b: str
    measured: float
    """GB/s; 0 for a test that failed."""
    file: str

    @property
    def low(self) -> bool:
        return self.measured < self.group.pair_floor()


def pair_problems(plan: Plan, pairs: list[PairResult]) -> list[Problem]:
    """The problems the pair tests show, the rings of the leaf sets first: what they explain is not blamed on
    the spine."""
    by_ring: dict[tuple[str, str, int, int], list[PairResult]] = defaultdict(list)
    for p in pairs:
        ring = (p.group.leaf_set_of(p.a) or 0) if p.kind == "rail-pair" else -1  # a set's ring; spine: all
        by_ring[(p.kind, p.group.group, p.rail, ring)].append(p)
    problems: list[Problem] = []
    suspects: Suspects = set()
    for (kind, _, rail, _), ring_pairs in sorted(by_ring.items(), key=lambda item: item[0][0] != "rail-pair"):
        if kind == "rail-pair":
            found, explained = rail_ring(plan, ring_pairs, rail)
            problems += found
            suspects |= explained
        else:
            problems += spine_pairs(plan, ring_pairs, rail, suspects)
    return problems


# --- one rail's ring in a leaf set -------------------------------------------------------------------------
def rail_ring(plan: Plan, pairs: list[PairResult], rail: int) -> tuple[list[Problem], Suspects]:
    """The problems of one rail's ring, and the (node, rail) they explain: their spine pairs on this rail are
    explained too."""
    by_node = _pairs_by_node(pairs)
    suspects = {n for n, ps in by_node.items() if len(ps) >= 2 and all(p.low for p in ps)}
    explained = {(n, rail) for n in suspects}
    g = pairs[0].group
    leaf = _leaf_under_whole_ring(g, by_node, suspects, rail)
    if leaf is not None:
        return [_rail_leaf_problem(plan, pairs, rail, leaf, sorted(by_node, key=g.nodes.index))], explained
    problems = [_rail_cable_problem(plan, g, rail, node, by_node[node]) for node in sorted(suspects, key=g.nodes.index)]
    problems += [
        _rail_pair_problem(plan, p, rail) for p in pairs if p.low and p.a not in suspects and p.b not in suspects
    ]
    return problems, explained


def _pairs_by_node(pairs: list[PairResult]) -> dict[str, list[PairResult]]:
    by_node: dict[str, list[PairResult]] = defaultdict(list)
    for p in pairs:
        by_node[p.a].append(p)
        by_node[p.b].append(p)
    return by_node


def _leaf_under_whole_ring(
    g: BurnInGroup, by_node: dict[str, list[PairResult]], suspects: set[str], rail: int
) -> str | None:
    """The leaf when every node of a ring of three or more is a suspect and all are on that one leaf."""
    leaves = {g.ports[(n, rail)].leaf for n in by_node if (n, rail) in g.ports}
    if len(by_node) >= 3 and suspects == set(by_node) and len(leaves) == 1:
        return next(iter(leaves))
    return None


def _rail_leaf_problem(plan: Plan, pairs: list[PairResult], rail: int, leaf: str, nodes: list[str]) -> Problem:
    g = pairs[0].group
    return Problem(
        codes.ACCEPT_RAIL_LEAF,
        f"every one of the {len(pairs)} rail-{rail} pairs under {leaf} is below floor (lowest "
        f"{gbs(min(p.measured for p in pairs))} GB/s, floor {gbs(g.pair_floor())}): the leaf switch, "
        f"not the {len(nodes)} node cables",
        kind="leaf",
        subject=leaf,
        retest=tuple(nodes),
        jobs=(plan.set_job(g, nodes[0]),),
        files=tuple(p.file for p in pairs),
    )


def _rail_cable_problem(plan: Plan, g: BurnInGroup, rail: int, node: str, pairs: list[PairResult]) -> Problem:
    """`node` is low with every neighbour in its ring: its rail's cable, NIC or transceiver."""
    cable = plan.cable(g.ports.get((node, rail)))
    low = [p for p in pairs if p.low]
    seen = ", ".join(f"{gbs(p.measured)} GB/s with {p.b if p.a == node else p.a}" for p in low)
    label = cable.label if cable else f"{node} rail {rail}"
    where = f"cable {cable.label} ({cable.ends})" if cable else f"its rail-{rail} port"
    return Problem(
        codes.ACCEPT_RAIL_LOW,
        f"rail {rail} of {node} below floor: {seen}; floor {gbs(g.pair_floor())} "
        f"(one port, {gbs(g.rail_gbs)} GB/s): {where}, or its NIC or transceiver",
        kind="cable",
        subject=label,
        drain=(node,),
        retest=(node,),
        jobs=(plan.set_job(g, node),),
        cables=(cable.label,) if cable else (),
        files=tuple(p.file for p in low),
    )


def _rail_pair_problem(plan: Plan, p: PairResult, rail: int) -> Problem:
    """A low pair that no node of its ring explains: one of its two cables."""
    g = p.group
    cables = [c for c in (plan.cable(g.ports.get((n, rail))) for n in (p.a, p.b)) if c]
    return Problem(
        codes.ACCEPT_RAIL_LOW,
        f"rail {rail} between {p.a} and {p.b} below floor: {gbs(p.measured)} GB/s, floor "
        f"{gbs(g.pair_floor())}; the pair alone cannot tell which node's cable "
        f"({' or '.join(c.label for c in cables)})",
        kind="cable",
        subject=" or ".join(c.label for c in cables) or f"{p.a}/{p.b} rail {rail}",
        retest=(p.a, p.b),
        jobs=(plan.set_job(g, p.a),),
        cables=tuple(c.label for c in cables),
        files=(p.file,),
    )


# --- one rail's pairs across the spine ---------------------------------------------------------------------
def spine_pairs(plan: Plan, pairs: list[PairResult], rail: int, suspects: Suspects) -> list[Problem]:
    """The problems of one rail's pairs across the spine that the nodes' own rails (`suspects`) do not explain."""
    g = pairs[0].group
    unexplained = [p for p in pairs if (p.a, rail) not in suspects and (p.b, rail) not in suspects]
    through = _pairs_through_leaf(g, unexplained, rail)
    bad = {leaf for leaf, ps in through.items() if len(ps) >= 2 and all(p.low for p in ps)}
    problems = [_uplinks_problem(plan, g, rail, leaf, through[leaf]) for leaf in sorted(bad)]
    for p in unexplained:
        leaves = {g.ports[(n, rail)].leaf for n in (p.a, p.b) if (n, rail) in g.ports}
        if p.low and not leaves & bad:
            problems.append(_spine_pair_problem(g, p, rail, leaves))
    return problems


def _pairs_through_leaf(g: BurnInGroup, pairs: list[PairResult], rail: int) -> dict[str, list[PairResult]]:
    """Leaf -> the pairs with a node on it, on `rail`."""
    through: dict[str, list[PairResult]] = defaultdict(list)
    for p in pairs:
        for node in (p.a, p.b):
            port = g.ports.get((node, rail))
            if port:
                through[port.leaf].append(p)
    return through


def _uplinks_problem(plan: Plan, g: BurnInGroup, rail: int, leaf: str, ps: list[PairResult]) -> Problem:
    """Every pair across the spine through `leaf` is low: its uplinks."""
    uplinks = plan.uplinks.get(leaf, [])
    shown = ", ".join(uplinks[:4]) + (f" and {len(uplinks) - 4} more" if len(uplinks) > 4 else "")
    worst = min(p.measured for p in ps)
    return Problem(
        codes.ACCEPT_LEAF_UPLINKS,
        f"every one of the {len(ps)} rail-{rail} pairs across the spine through {leaf} is below floor "
        f"(lowest {gbs(worst)} GB/s, floor {gbs(g.pair_floor())}) while pairs under it pass: its "
        f"uplinks ({shown})",
        kind="leaf",
        subject=leaf,
        retest=tuple(sorted({n for p in ps for n in (p.a, p.b)}, key=g.nodes.index)),
        jobs=(f"{BURN_IN_DIR}/{g.group}/spine.sbatch",),
        cables=tuple(uplinks),
        files=tuple(p.file for p in ps),
    )


def _spine_pair_problem(g: BurnInGroup, p: PairResult, rail: int, leaves: set[str]) -> Problem:
    """A low pair across the spine that no leaf explains: the uplinks of either leaf."""
    return Problem(
        codes.ACCEPT_LEAF_UPLINKS,
        f"rail {rail} between {p.a} and {p.b} across the spine below floor: {gbs(p.measured)} "
        f"GB/s, floor {gbs(g.pair_floor())}: the uplinks of {' or '.join(sorted(leaves))}",
        kind="leaf",
        subject=" or ".join(sorted(leaves)),
        retest=(p.a, p.b),
        jobs=(f"{BURN_IN_DIR}/{g.group}/spine.sbatch",),
        files=(p.file,),
    )
