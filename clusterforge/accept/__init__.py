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

The results are read in `results.py`, judged against `planned.py`'s plan in `judge.py` (the pair tests together
in `pairs.py`), found as `verdict.py`'s problems and measurements, and reported by `report.py`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..expand.topology import Topology
from ..validate import ValidBlueprint
from .judge import Judge
from .planned import Plan, required_tests
from .results import ResultError, read_results
from .verdict import Acceptance, Problem

__all__ = ["Acceptance", "Problem", "ResultError", "accept"]


def accept(valid: ValidBlueprint, topo: Topology, paths: Iterable[Path], partial: bool = False) -> Acceptance:
    """The results in `paths` judged; ResultError for a file that cannot be read as the result it says."""
    plan = Plan(valid, topo)
    nodes = [n for g in plan.groups.values() for n in g.nodes]
    out = Acceptance(valid.blueprint.name, nodes, partial=partial, required=required_tests(plan))
    results, out.skipped = read_results(list(paths))
    out.results = len(results)
    stamps = [r.mtime for r in results]
    out.dated = (min(stamps, default=0.0), max(stamps, default=0.0))
    judge = Judge(plan, out)
    for result in sorted(results, key=lambda r: r.file):
        judge.result(result)
    judge.judge_pairs()
    return out
