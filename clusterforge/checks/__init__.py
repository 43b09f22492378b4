"""The check stage: an ordered registry of checks over the topology, then the blueprint's suppressions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from .. import codes
from ..errors import Finding, Severity, sorted_findings
from ..expand.topology import Topology
from ..runtime.gc_paused import gc_paused
from ..validate import ValidBlueprint
from .addresses import check_address_agreement
from .airflow import check_airflow
from .bonds import check_bond_homing, check_leaf_pairs
from .breakouts import check_breakouts
from .context import CheckContext
from .cooling import check_rack_cooling, check_row_and_hall_cooling
from .fabric_use import check_idle_switches, check_leaf_up_over_down, check_planes
from .fat_tree import check_fat_trees
from .gateways import check_gateways
from .grouping import group_repeats
from .interfaces import check_interface_names, check_nccl_hca
from .management import check_management
from .ports import check_oversubscription, check_switch_radix, check_unconnected_ports
from .power import check_power_shelves, check_psu_redundancy, check_rack_power
from .resilience import check_resilience
from .single_points import check_single_points
from .slurm import check_slurm_blocks, check_slurm_imex
from .space import check_space
from .subnet_manager import check_switch_subnet_manager
from .weight import check_weight
from .workloads import check_workloads

Check = Callable[[CheckContext], Iterable[Finding]]

# Physical checks first (space, weight, power, cooling), then the fabric, then the workloads it must run;
# order only sets report order.
CHECKS: tuple[Check, ...] = (
    check_space,
    check_weight,
    check_rack_power,
    check_psu_redundancy,
    check_power_shelves,
    check_rack_cooling,
    check_row_and_hall_cooling,
    check_airflow,
    check_switch_radix,
    check_oversubscription,
    check_idle_switches,
    check_leaf_up_over_down,
    check_planes,
    check_fat_trees,
    check_switch_subnet_manager,
    check_bond_homing,
    check_leaf_pairs,
    check_address_agreement,
    check_management,
    check_gateways,
    check_unconnected_ports,
    check_breakouts,
    check_interface_names,
    check_nccl_hca,
    check_single_points,
    check_workloads,
    check_slurm_imex,
    check_slurm_blocks,
    check_resilience,
)


def run_checks(valid: ValidBlueprint, topo: Topology, earlier: Iterable[Finding] = ()) -> list[Finding]:
    """Every check's findings plus `earlier` ones (from expansion), with suppressions applied, then those that
    repeat per rack or node grouped into one (checks/grouping.py)."""
    findings = list(earlier)
    with gc_paused():
        ctx = CheckContext(valid, topo)
        for check in CHECKS:
            findings.extend(check(ctx))
    return group_repeats(apply_suppressions(valid, findings))


def apply_suppressions(valid: ValidBlueprint, findings: list[Finding]) -> list[Finding]:
    out: list[Finding] = []
    used: set[int] = set()
    rules = valid.blueprint.suppress
    for finding in findings:
        for i, rule in enumerate(rules):
            if rule.code == finding.code and rule.target in (None, finding.subject, finding.path_text):
                finding = replace(finding, suppressed_by=rule.reason)
                used.add(i)
                break
        out.append(finding)
    for i, rule in enumerate(rules):
        if i not in used:
            path = ("suppress", i)
            out.append(
                Finding(
                    codes.UNUSED_SUPPRESSION,
                    Severity.WARNING,
                    f"suppression of {rule.code}"
                    + (f" for '{rule.target}'" if rule.target else "")
                    + " matches no finding",
                    path,
                    valid.sources.locate(path),
                    "remove it, or fix its code or target",
                )
            )
    return sorted_findings(out)


__all__ = ["CHECKS", "CheckContext", "apply_suppressions", "run_checks"]
