"""Each burn-in result judged against the plan: a node's own tests (DCGM, NVLink copies, GPU fabric state),
the collectives of each tier, the pair tests (recorded here, judged together in `pairs.py`) and ibdiagnet's
port errors."""

from __future__ import annotations

from .. import codes
from ..render.context import host_range
from ..render.handoff.acceptance import FLOOR
from ..render.handoff.burnin import BURN_IN_DIR, BurnInGroup
from .pairs import PairResult, pair_problems
from .planned import Cable, Plan, pair_key, port_resolver
from .results import Result, ResultError
from .verdict import Acceptance, Measurement, Problem, gbs


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
                    f"{r.test} {collective} on {m.nodes}: {gbs(m.measured)} GB/s busbw, floor {gbs(m.floor)} "
                    f"(expected {gbs(expected)}, bound by {figure.bound})",
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
        for problem in pair_problems(self.plan, self.pairs):
            self.add(problem)

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
            shown = ", ".join(f"GPU {a}-{b} {gbs(v)}" for v, (a, b) in low[:4])
            gpus = sorted({x for _, pair in low for x in pair})
            common = [x for x in gpus if all(x in pair for _, pair in low)]
            cause = f"GPU {common[0]}'s NVLink" if len(common) == 1 and len(low) > 1 else "the GPUs' NVLinks"
            self.node_problem(
                codes.ACCEPT_NVLINK_COPY_LOW,
                f"{len(low)} GPU pairs of {node} copy below floor {gbs(floor)} GB/s ({shown}): {cause}",
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
        resolve = port_resolver(self.plan, fabric)
        hosts = {n: g for g in groups for n in g.nodes}
        for line, where, message in r.ib_errors:
            cable = self.plan.cables.get(resolve(where))
            self.add(self.port_error(f"{r.file}:{line}", where, message, cable, hosts, job))
        errors = sum(e for _, e in r.ib_stages.values())
        if errors and not r.ib_errors:
            self.add(_unlocated_errors(r, fabric, errors, job))

    def port_error(
        self,
        file: str,
        where: str,
        message: str,
        cable: Cable | None,
        hosts: dict[str, BurnInGroup],
        job: str,
    ) -> Problem:
        """An error ibdiagnet names a port for: the port's cable, and the node when it is a host's."""
        node = next((d for d in cable.devices if d in hosts), None) if cable else None
        return Problem(
            codes.ACCEPT_PORT_ERROR,
            f"ibdiagnet: {where} - {message}"
            + (f": cable {cable.label} ({cable.ends})" if cable else " (a port the cabling plan does not name)"),
            kind="cable",
            subject=cable.label if cable else where,
            drain=(node,) if node else (),
            retest=(node,) if node else (),
            jobs=(job,) + ((self.plan.set_job(hosts[node], node),) if node else ()),
            cables=(cable.label,) if cable else (),
            files=(file,),
        )


def _unlocated_errors(r: Result, fabric: str, errors: int, job: str) -> Problem:
    """Errors in ibdiagnet's Summary that no line locates: the fabric fails."""
    stages = ", ".join(f"{s} {e}" for s, (_, e) in r.ib_stages.items() if e)
    return Problem(
        codes.ACCEPT_PORT_ERROR,
        kind="tier",
        subject=fabric,
        message=(
            f"ibdiagnet: {errors} errors on fabric {fabric} ({stages}) and no line names a port: read ibdiagnet2.log"
        ),
        jobs=(job,),
        files=(r.file,),
    )
