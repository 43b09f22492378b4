"""`clusterforge accept`: burn-in results read back and judged against the plan, per node, cable and tier.

The results come from the jobs under handoff/burn-in/ (clusterforge/render/handoff/burnin.py); each names its test and
nodes, and its floor is worked out from those nodes with the acceptance figures (render/handoff/acceptance.py). What
fails gets its likely cause:

- a pair test on one rail below floor: the node in every low pair of its ring is the suspect, its rail's cable
  by the cabling plan's label (a ring of two nodes cannot tell which of the two);
- pairs across the leaves below floor while the nodes' own rail passed: the leaf in every low pair, by its
  uplink cables;
- a DCGM diagnostic, an NVLink copy below floor or a GPU fabric state not completed and healthy: the node;
- an ibdiagnet error on a port (BER, counters, cable): that port's cable, and the node when it is a host's;
- a collective below floor: the tier, with the suspects above if any.

Nodes that fail are listed for draining (`scontrol update nodename=... state=drain reason="..."`); nodes and
jobs to run again once mended form the re-test list.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import hostlist

from .. import codes
from ..expand.topology import Topology
from ..render.context import RenderContext, host_range
from ..render.handoff.acceptance import FLOOR
from ..render.handoff.burnin import BURN_IN_DIR, BurnInGroup, RailPort, burn_in_groups, ring_pairs, spine_columns
from ..render.handoff.handoff_common import cable_table
from ..render.infiniband.infiniband_plan import plan_subnets
from ..validate import ValidBlueprint
from ..verify import IbResolver, switch_name
from .results import Result, ResultError, read_results

__all__ = ["Acceptance", "Problem", "ResultError", "accept"]


@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    kind: str
    """'node', 'cable', 'leaf' or 'tier'."""
    subject: str
    drain: tuple[str, ...] = ()
    """Nodes to drain for it."""
    retest: tuple[str, ...] = ()
    """Nodes to test again once mended."""
    jobs: tuple[str, ...] = ()
    cables: tuple[str, ...] = ()
    files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Measurement:
    """A bandwidth test: what was measured against what was expected."""

    file: str
    test: str
    group: str
    nodes: str
    detail: str
    measured: float
    expected: float
    floor: float

    @property
    def passed(self) -> bool:
        return self.measured >= self.floor


@dataclass
class Acceptance:
    blueprint: str
    nodes: list[str]
    results: int = 0
    skipped: int = 0
    measurements: list[Measurement] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    required: dict[str, set[str]] = field(default_factory=dict)
    """Node -> the tests it must have a result of: 'dcgm', 'nvbandwidth', 'fabric-state', 'nvlink', 'rail <r>'."""
    covered: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    partial: bool = False
    cables: dict[str, str] = field(default_factory=dict)
    """Label -> both ends (rack, U, device, port) of each cable a problem names."""
    dated: tuple[float, float] = (0.0, 0.0)
    """The oldest and newest result's modification time (seconds since the epoch)."""

    @property
    def tested(self) -> set[str]:
        """Nodes with a result of any test."""
        return {n for n, keys in self.covered.items() if keys}

    @property
    def missing(self) -> dict[str, list[str]]:
        """Node -> the tests it has no result of, in node order."""
        found = {n: sorted(self.required.get(n, set()) - self.covered.get(n, set())) for n in self.nodes}
        return {n: keys for n, keys in found.items() if keys}

    @property
    def untested(self) -> list[str]:
        return list(self.missing)

    @property
    def drain(self) -> dict[str, list[str]]:
        """Node -> the reasons to drain it, in node order."""
        found: dict[str, list[str]] = defaultdict(list)
        for problem in self.problems:
            for node in problem.drain:
                what = f"cable {problem.subject}" if problem.kind == "cable" else problem.message
                found[node].append(f"{problem.code} {what}")
        order = {n: i for i, n in enumerate(self.nodes)}
        return dict(sorted(found.items(), key=lambda item: order.get(item[0], len(order))))

    @property
    def retest(self) -> dict[str, list[str]]:
        """Job -> the nodes to run it again for, in job order."""
        found: dict[str, set[str]] = defaultdict(set)
        for problem in self.problems:
            for job in problem.jobs:
                found[job].update(problem.retest or problem.drain)
        return {job: sorted(found[job]) for job in sorted(found)}

    @property
    def passed(self) -> bool:
        return self.results > 0 and not self.problems and (self.partial or not self.untested)


# --- the plan the results are judged against ---------------------------------------------------------------
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


def _gbs(value: float) -> str:
    return f"{value:,.1f}"


# --- judging ----------------------------------------------------------------------------------------------
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


class Judge:
    def __init__(self, plan: Plan, result: Acceptance) -> None:
        self.plan, self.out = plan, result
        self.pairs: list[PairResult] = []

    def add(self, problem: Problem) -> None:
        self.out.problems.append(problem)
        for label in problem.cables:
            cable = self.plan.by_label.get(label)
            if cable is not None:
                self.out.cables[label] = cable.ends

    def result(self, r: Result) -> None:
        if r.test == "ibdiagnet":
            self.ibdiagnet(r)
            return
        g = self.plan.group(r)
        if r.test in ("rail-pair", "spine-pair"):
            self.pair(r, g)
        elif r.test in ("nvlink", "leaf", "spine"):
            self.collective(r, g)
        else:
            node = self.plan.nodes(r, g, 1)[0]
            self.out.covered[node].add(r.test)
            if r.exit_status:
                self.failed_run(r, [node], self.plan.set_job(g, node), drain=True)
            elif r.test == "dcgm":
                self.dcgm(r, g, node)
            elif r.test == "nvbandwidth":
                self.nvbandwidth(r, g, node)
            elif r.test == "fabric-state":
                self.fabric_state(r, g, node)

    def node_problem(self, code: str, message: str, g: BurnInGroup, node: str, r: Result, *jobs: str) -> None:
        """A problem of one node, which is drained and run again with its set's job (and `jobs`)."""
        job = self.plan.set_job(g, node)
        self.add(Problem(code, message, "node", node, (node,), (node,), (job, *jobs), files=(r.file,)))

    def failed_run(self, r: Result, nodes: list[str], job: str, drain: bool) -> None:
        shown = host_range(nodes)
        tail = f": {r.tail.splitlines()[-1].strip()[:160]}" if r.tail else ""
        self.add(
            Problem(
                codes.ACCEPT_TEST_FAILED,
                f"{r.test} on {shown} exited with status {r.exit_status}{tail}",
                kind="node" if drain else "tier",
                subject=shown,
                drain=tuple(nodes) if drain else (),
                retest=tuple(nodes),
                jobs=(job,),
                files=(r.file,),
            )
        )

    def collective(self, r: Result, g: BurnInGroup) -> None:
        nodes = self.plan.nodes(r, g)
        for node in nodes:
            self.out.covered[node].add(r.test)
        job = self.plan.domain_job(g, nodes) if r.test == "nvlink" else self.plan.set_job(g, nodes[0])
        if r.test == "spine":
            job = f"{BURN_IN_DIR}/{g.group}/spine.sbatch"
        one = r.test == "nvlink" and len(nodes) == 1
        if r.exit_status:
            self.failed_run(r, nodes, job, drain=one)
            return
        figure = g.figure(r.test, nodes)
        collective = r.fields.get("collective", "all_reduce")
        if figure is None:
            raise ResultError(
                codes.ACCEPT_NOT_PLANNED, f"the plan has no {r.test} tier over {host_range(nodes)}", r.file, 1
            )
        self.check_hosts(r, nodes)
        expected = figure.all_to_all_gbs if collective == "alltoall" else figure.all_reduce_gbs
        m = Measurement(
            r.file, r.test, g.group, host_range(nodes), collective, r.busbw or 0.0, expected, expected * FLOOR
        )
        self.out.measurements.append(m)
        if r.wrong:
            self.add(
                Problem(
                    codes.ACCEPT_TEST_FAILED,
                    kind="tier",
                    subject=m.nodes,
                    message=(
                        f"{r.test} {collective} on {m.nodes} found {r.wrong} wrong values: a GPU or link corrupts data"
                    ),
                    retest=tuple(nodes),
                    jobs=(job,),
                    files=(r.file,),
                )
            )
        if not m.passed:
            self.add(
                Problem(
                    codes.ACCEPT_COLLECTIVE_LOW,
                    f"{r.test} {collective} on {m.nodes}: {_gbs(m.measured)} GB/s busbw, floor {_gbs(m.floor)} "
                    f"(expected {_gbs(expected)}, bound by {figure.bound})",
                    kind="node" if one else "tier",
                    subject=m.nodes,
                    drain=tuple(nodes) if one else (),
                    retest=tuple(nodes),
                    jobs=(job,),
                    files=(r.file,),
                )
            )

    def check_hosts(self, r: Result, nodes: list[str]) -> None:
        if r.hosts and not set(r.hosts) <= set(nodes):
            stray = sorted(set(r.hosts) - set(nodes))
            raise ResultError(
                codes.ACCEPT_NOT_PLANNED,
                f"ranks ran on {', '.join(stray[:3])}, which the header does not name",
                r.file,
                1,
            )

    def pair(self, r: Result, g: BurnInGroup) -> None:
        nodes = self.plan.nodes(r, g, 2)
        rail = int(r.fields.get("rail", "0")) if r.fields.get("rail", "").isdigit() else 0
        self.out.covered[nodes[0]].add(pair_key(r.test, rail, nodes[1]))
        self.out.covered[nodes[1]].add(pair_key(r.test, rail, nodes[0]))
        if not 1 <= rail <= g.rails:
            raise ResultError(
                codes.ACCEPT_NOT_PLANNED,
                f"rail '{r.fields.get('rail', '')}' is not a rail of group {g.group} (1-{g.rails})",
                r.file,
                1,
            )
        if not r.exit_status:
            self.check_hosts(r, nodes)
        measured = 0.0 if r.exit_status else (r.busbw or 0.0)
        pair = PairResult(r.test, g, rail, nodes[0], nodes[1], measured, r.file)
        self.pairs.append(pair)
        detail = f"rail {rail}" + (f", exit status {r.exit_status}" if r.exit_status else "")
        self.out.measurements.append(
            Measurement(
                r.file, r.test, g.group, f"{nodes[0]}, {nodes[1]}", detail, measured, g.rail_gbs, g.pair_floor()
            )
        )

    def judge_pairs(self) -> None:
        by_ring: dict[tuple[str, str, int, int], list[PairResult]] = defaultdict(list)
        for p in self.pairs:
            ring = (p.group.leaf_set_of(p.a) or 0) if p.kind == "rail-pair" else -1  # a set's ring; spine: all
            by_ring[(p.kind, p.group.group, p.rail, ring)].append(p)
        suspects: set[tuple[str, int]] = set()
        for (kind, _, rail, _), pairs in sorted(by_ring.items(), key=lambda item: item[0][0] != "rail-pair"):
            if kind == "rail-pair":
                suspects |= self.rail_ring(pairs, rail)
            else:
                self.spine_pairs(pairs, rail, suspects)

    def rail_ring(self, pairs: list[PairResult], rail: int) -> set[tuple[str, int]]:
        counts: dict[str, list[PairResult]] = defaultdict(list)
        for p in pairs:
            counts[p.a].append(p)
            counts[p.b].append(p)
        suspects = {n for n, ps in counts.items() if len(ps) >= 2 and all(p.low for p in ps)}
        g = pairs[0].group
        leaves = {g.ports[(n, rail)].leaf for n in counts if (n, rail) in g.ports}
        if len(counts) >= 3 and suspects == set(counts) and len(leaves) == 1:
            (leaf,) = leaves
            nodes = sorted(counts, key=g.nodes.index)
            self.add(
                Problem(
                    codes.ACCEPT_RAIL_LEAF,
                    f"every one of the {len(pairs)} rail-{rail} pairs under {leaf} is below floor (lowest "
                    f"{_gbs(min(p.measured for p in pairs))} GB/s, floor {_gbs(g.pair_floor())}): the leaf switch, "
                    f"not the {len(nodes)} node cables",
                    kind="leaf",
                    subject=leaf,
                    retest=tuple(nodes),
                    jobs=(self.plan.set_job(g, nodes[0]),),
                    files=tuple(p.file for p in pairs),
                )
            )
            return {(n, rail) for n in suspects}  # their spine pairs on this rail are explained too
        for node in sorted(suspects, key=g.nodes.index):
            port = g.ports.get((node, rail))
            cable = self.plan.cable(port)
            low = [p for p in counts[node] if p.low]
            seen = ", ".join(f"{_gbs(p.measured)} GB/s with {p.b if p.a == node else p.a}" for p in low)
            label = cable.label if cable else f"{node} rail {rail}"
            where = f"cable {cable.label} ({cable.ends})" if cable else f"its rail-{rail} port"
            self.add(
                Problem(
                    codes.ACCEPT_RAIL_LOW,
                    f"rail {rail} of {node} below floor: {seen}; floor {_gbs(g.pair_floor())} "
                    f"(one port, {_gbs(g.rail_gbs)} GB/s): {where}, or its NIC or transceiver",
                    kind="cable",
                    subject=label,
                    drain=(node,),
                    retest=(node,),
                    jobs=(self.plan.set_job(g, node),),
                    cables=(cable.label,) if cable else (),
                    files=tuple(p.file for p in low),
                )
            )
        for p in pairs:
            if p.low and p.a not in suspects and p.b not in suspects:
                cables = [c for c in (self.plan.cable(g.ports.get((n, rail))) for n in (p.a, p.b)) if c]
                self.add(
                    Problem(
                        codes.ACCEPT_RAIL_LOW,
                        f"rail {rail} between {p.a} and {p.b} below floor: {_gbs(p.measured)} GB/s, floor "
                        f"{_gbs(g.pair_floor())}; the pair alone cannot tell which node's cable "
                        f"({' or '.join(c.label for c in cables)})",
                        kind="cable",
                        subject=" or ".join(c.label for c in cables) or f"{p.a}/{p.b} rail {rail}",
                        retest=(p.a, p.b),
                        jobs=(self.plan.set_job(g, p.a),),
                        cables=tuple(c.label for c in cables),
                        files=(p.file,),
                    )
                )
        return {(n, rail) for n in suspects}

    def spine_pairs(self, pairs: list[PairResult], rail: int, suspects: set[tuple[str, int]]) -> None:
        g = pairs[0].group
        through: dict[str, list[PairResult]] = defaultdict(list)
        for p in pairs:
            if (p.a, rail) in suspects or (p.b, rail) in suspects:
                continue  # the node's own rail cable explains it
            for node in (p.a, p.b):
                port = g.ports.get((node, rail))
                if port:
                    through[port.leaf].append(p)
        bad = {leaf for leaf, ps in through.items() if len(ps) >= 2 and all(p.low for p in ps)}
        for leaf in sorted(bad):
            ps = through[leaf]
            uplinks = self.plan.uplinks.get(leaf, [])
            shown = ", ".join(uplinks[:4]) + (f" and {len(uplinks) - 4} more" if len(uplinks) > 4 else "")
            worst = min(p.measured for p in ps)
            self.add(
                Problem(
                    codes.ACCEPT_LEAF_UPLINKS,
                    f"every one of the {len(ps)} rail-{rail} pairs across the spine through {leaf} is below floor "
                    f"(lowest {_gbs(worst)} GB/s, floor {_gbs(g.pair_floor())}) while pairs under it pass: its "
                    f"uplinks ({shown})",
                    kind="leaf",
                    subject=leaf,
                    retest=tuple(sorted({n for p in ps for n in (p.a, p.b)}, key=g.nodes.index)),
                    jobs=(f"{BURN_IN_DIR}/{g.group}/spine.sbatch",),
                    cables=tuple(uplinks),
                    files=tuple(p.file for p in ps),
                )
            )
        for p in pairs:
            leaves = {g.ports[(n, rail)].leaf for n in (p.a, p.b) if (n, rail) in g.ports}
            if p.low and not leaves & bad and (p.a, rail) not in suspects and (p.b, rail) not in suspects:
                self.add(
                    Problem(
                        codes.ACCEPT_LEAF_UPLINKS,
                        f"rail {rail} between {p.a} and {p.b} across the spine below floor: {_gbs(p.measured)} "
                        f"GB/s, floor {_gbs(g.pair_floor())}: the uplinks of {' or '.join(sorted(leaves))}",
                        kind="leaf",
                        subject=" or ".join(sorted(leaves)),
                        retest=(p.a, p.b),
                        jobs=(f"{BURN_IN_DIR}/{g.group}/spine.sbatch",),
                        files=(p.file,),
                    )
                )

    def dcgm(self, r: Result, g: BurnInGroup, node: str) -> None:
        for category, test, gpus, warnings in r.dcgm:
            self.node_problem(
                codes.ACCEPT_GPU_DIAGNOSTIC,
                f"DCGM {category} test '{test}' failed on {node} GPU {gpus}" + (f": {warnings}" if warnings else ""),
                g,
                node,
                r,
            )

    def nvbandwidth(self, r: Result, g: BurnInGroup, node: str) -> None:
        if g.bounds.nvlink_gbs <= 0 or not g.domains:
            return  # no NVLink: nothing to hold the copies to
        floor = g.bounds.nvlink_gbs * FLOOR
        low = sorted((value, pair) for pair, value in r.matrix.items() if value < floor)
        worst = min(r.matrix.values(), default=0.0)
        self.out.measurements.append(
            Measurement(r.file, "nvbandwidth", g.group, node, "lowest GPU pair", worst, g.bounds.nvlink_gbs, floor)
        )
        if low:
            shown = ", ".join(f"GPU {a}-{b} {_gbs(v)}" for v, (a, b) in low[:4])
            gpus = sorted({x for _, pair in low for x in pair})
            common = [x for x in gpus if all(x in pair for _, pair in low)]
            cause = f"GPU {common[0]}'s NVLink" if len(common) == 1 and len(low) > 1 else "the GPUs' NVLinks"
            self.node_problem(
                codes.ACCEPT_NVLINK_COPY_LOW,
                f"{len(low)} GPU pairs of {node} copy below floor {_gbs(floor)} GB/s ({shown}): {cause}",
                g,
                node,
                r,
            )

    def fabric_state(self, r: Result, g: BurnInGroup, node: str) -> None:
        for index, section in r.fabric:
            state, status = section.get("State", ""), section.get("Status", "")
            health = section.get("Summary", "")
            uuid = section.get("ClusterUUID", "")
            wrong = []
            if state != "Completed":
                wrong.append(f"State {state or 'missing'}")
            if status != "Success":
                wrong.append(f"Status {status or 'missing'}")
            if health.lower() == "unhealthy":
                wrong.append("Health Unhealthy")
            if state == "Completed" and (section.get("CliqueId") == "0" or set(uuid) <= {"0", "-"}):
                wrong.append("no clique (CliqueId 0 or a zero ClusterUUID)")
            if wrong:
                self.node_problem(
                    codes.ACCEPT_FABRIC_STATE,
                    f"GPU {index} of {node} is not on the NVLink fabric: {', '.join(wrong)} (fabric manager, "
                    f"NVLink switch trays, IMEX)",
                    g,
                    node,
                    r,
                    self.plan.domain_job(g, [node]),
                )

    def ibdiagnet(self, r: Result) -> None:
        fabric = r.fields.get("fabric", "")
        groups = [g for g in self.plan.groups.values() if g.fabric == fabric and g.infiniband]
        if not groups:
            raise ResultError(
                codes.ACCEPT_NOT_PLANNED, f"'{fabric}' is no InfiniBand compute fabric of the blueprint", r.file, 1
            )
        job = f"{BURN_IN_DIR}/ibdiagnet-{fabric}.sbatch"
        if r.exit_status:
            self.failed_run(r, [], job, drain=False)
            return
        resolve = _port_resolver(self.plan, fabric)
        hosts = {n: g for g in groups for n in g.nodes}
        located = 0
        for line, where, message in r.ib_errors:
            device, port = resolve(where)
            cable = self.plan.cables.get((device, port))
            node = next((d for d in cable.devices if d in hosts), None) if cable else None
            located += 1
            self.add(
                Problem(
                    codes.ACCEPT_PORT_ERROR,
                    f"ibdiagnet: {where} - {message}"
                    + (
                        f": cable {cable.label} ({cable.ends})" if cable else " (a port the cabling plan does not name)"
                    ),
                    kind="cable",
                    subject=cable.label if cable else where,
                    drain=(node,) if node else (),
                    retest=(node,) if node else (),
                    jobs=(job,) + ((self.plan.set_job(hosts[node], node),) if node else ()),
                    cables=(cable.label,) if cable else (),
                    files=(f"{r.file}:{line}",),
                )
            )
        errors = sum(e for _, e in r.ib_stages.values())
        if errors and not located:
            stages = ", ".join(f"{s} {e}" for s, (_, e) in r.ib_stages.items() if e)
            self.add(
                Problem(
                    codes.ACCEPT_PORT_ERROR,
                    kind="tier",
                    subject=fabric,
                    message=(
                        f"ibdiagnet: {errors} errors on fabric {fabric} ({stages}) and no line names a port: "
                        "read ibdiagnet2.log"
                    ),
                    jobs=(job,),
                    files=(r.file,),
                )
            )


def _port_resolver(plan: Plan, fabric: str) -> Callable[[str], tuple[str, str]]:
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


def _required(plan: Plan) -> dict[str, set[str]]:
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


def accept(valid: ValidBlueprint, topo: Topology, paths: Iterable[Path], partial: bool = False) -> Acceptance:
    """The results in `paths` judged; ResultError for a file that cannot be read as the result it says."""
    plan = Plan(valid, topo)
    nodes = [n for g in plan.groups.values() for n in g.nodes]
    out = Acceptance(valid.blueprint.name, nodes, partial=partial, required=_required(plan))
    results, out.skipped = read_results(list(paths))
    out.results = len(results)
    stamps = [r.mtime for r in results]
    out.dated = (min(stamps, default=0.0), max(stamps, default=0.0))
    judge = Judge(plan, out)
    for result in sorted(results, key=lambda r: r.file):
        judge.result(result)
    judge.judge_pairs()
    return out
