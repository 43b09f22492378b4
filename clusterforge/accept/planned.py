"""The plan the burn-in results are judged against: the burn-in groups, the cables by port and by label with
the leaves' uplinks, the tests each node must have a result of, and ibdiagnet's port names read as planned
ports."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import hostlist

from .. import codes
from ..expand.topology import Topology
from ..render.context import RenderContext
from ..render.handoff.burnin import BURN_IN_DIR, BurnInGroup, RailPort, burn_in_groups, ring_pairs, spine_columns
from ..render.handoff.handoff_common import cable_table
from ..render.infiniband.infiniband_plan import plan_subnets
from ..validate import ValidBlueprint
from ..verify import IbResolver, switch_name
from .results import Result, ResultError


@dataclass
class Cable:
    label: str
    ends: str
    """`A01 U1 gpu001 ib3 to N01 U38 compute-leaf003 ib1/1`."""
    devices: tuple[str, str]


class Plan:
    def __init__(self, valid: ValidBlueprint, topo: Topology) -> None:
        self.valid, self.topo = valid, topo
        self.groups = {g.group: g for g in burn_in_groups(RenderContext(valid, topo, []))}
        fabrics = {g.fabric for g in self.groups.values()}
        self.cables: dict[tuple[str, str], Cable] = {}
        self.uplinks: dict[str, list[str]] = defaultdict(list)
        self.by_label: dict[str, Cable] = {}
        for row in cable_table(valid, topo).rows():
            link = row.link
            if link.fabric not in fabrics:
                continue
            ends = f"{row.a.rack} U{row.a.u} {link.a} {link.a_port} to {row.b.rack} U{row.b.u} {link.b} {link.b_port}"
            cable = Cable(row.label, ends, (link.a, link.b))
            self.cables[(link.a, link.a_port)] = self.cables[(link.b, link.b_port)] = cable
            self.by_label[row.label] = cable
            if link.tier == "leaf-spine":
                self.uplinks[link.a].append(row.label)

    def group(self, result: Result) -> BurnInGroup:
        name = result.fields.get("group", "")
        if name not in self.groups:
            raise ResultError(
                codes.ACCEPT_NOT_PLANNED, f"node group '{name}' is no GPU node group of the blueprint", result.file, 1
            )
        return self.groups[name]

    def nodes(self, result: Result, g: BurnInGroup, count: int | None = None) -> list[str]:
        try:
            nodes = hostlist.expand_hostlist(result.fields.get("nodes", ""))
        except hostlist.BadHostlist:
            nodes = []
        unknown = [n for n in nodes if n not in set(g.nodes)]
        if not nodes or unknown or (count is not None and len(nodes) != count):
            shown = ", ".join(unknown[:3]) or result.fields.get("nodes", "") or "none"
            raise ResultError(
                codes.ACCEPT_NOT_PLANNED,
                f"nodes {shown} are not {count or 'some'} nodes of group {g.group}",
                result.file,
                1,
            )
        return nodes

    def cable(self, port: RailPort | None) -> Cable | None:
        return self.cables.get((port.node, port.port)) if port else None

    def set_job(self, g: BurnInGroup, node: str) -> str:
        index = g.leaf_set_of(node)
        return f"{BURN_IN_DIR}/{g.group}/{g.set_name(index or 0)}.sbatch"

    def domain_job(self, g: BurnInGroup, nodes: list[str]) -> str:
        if not g.multi_node_nvlink:
            return self.set_job(g, nodes[0])
        index = next((i for i, d in enumerate(g.domains) if nodes[0] in d), 0)
        return f"{BURN_IN_DIR}/{g.group}/nvlink{index + 1:03d}.sbatch"


def port_resolver(plan: Plan, fabric: str) -> Callable[[str], tuple[str, str]]:
    """`<node description>/P<port>[/<split>]` -> (device, planned port name)."""
    resolvers = [
        IbResolver(plan.valid, plan.topo, s) for s in plan_subnets(plan.valid, plan.topo) if s.fabric == fabric
    ]

    def resolve(where: str) -> tuple[str, str]:
        description, _, number = where.rpartition("/P")
        port = number.split("/", 1)[0]
        description = re.sub(r"/U\d+$", "", description)  # ibdiagnet's port name `<switch>/U1/P<port>`
        for resolver in resolvers:
            device, name = resolver.key(description, port)
            if (device, name) in plan.cables:
                return device, name
        return switch_name(description), port

    return resolve


def required_tests(plan: Plan) -> dict[str, set[str]]:
    """The tests each node's burn-in jobs run on it."""
    required: dict[str, set[str]] = {}
    for g in plan.groups.values():
        for node in g.nodes:
            keys = required.setdefault(node, {"dcgm"})
            if g.domains:
                keys |= {"nvbandwidth", "nvlink"} | ({"fabric-state"} if g.multi_node_nvlink else set())
        rings = [("rail-pair", s) for s in g.leaf_sets] + [("spine-pair", c) for c in spine_columns(g)]
        for kind, ring in rings:
            for a, b in ring_pairs(ring):
                for rail in range(1, g.rails + 1):
                    required[a].add(pair_key(kind, rail, b))
                    required[b].add(pair_key(kind, rail, a))
    return required


def pair_key(kind: str, rail: int, other: str) -> str:
    """What a pair test covers of one of its nodes: `rail 3 with gb011`, `spine rail 3 with gb043`."""
    return f"{'spine ' if kind == 'spine-pair' else ''}rail {rail} with {other}"
