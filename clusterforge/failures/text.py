"""`clusterforge failures` as text and Markdown, and the one-line summary of a failure the report and `diff`
show."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .analysis import ClassResult, FailureReport
from .effects import Effect, FabricEffect
from .elements import KIND_TITLES


def _counted(n: int, noun: str) -> str:
    """'1 domain', '3 domains'."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _rails(rails: dict[int, int]) -> str:
    """'rail 3 lost on 31 nodes', or 'rails 1, 2, 3 lost (93 ports)'."""
    if len(rails) == 1:
        rail, nodes = next(iter(rails.items()))
        return f"rail {rail} lost on {_counted(nodes, 'node')}"
    return f"rails {', '.join(map(str, sorted(rails)))} lost ({sum(rails.values())} ports)"


def fabric_text(found: FabricEffect) -> str:
    parts = []
    if found.gpus_cut_off:
        parts.append(f"{found.gpus_cut_off} GPUs cut off ({_counted(found.nodes_cut_off, 'node')})")
    elif found.nodes_cut_off:
        parts.append(f"{_counted(found.nodes_cut_off, 'node')} cut off")
    if found.rails_lost and found.nodes_degraded:
        parts.append(_rails(found.rails_lost))
    elif found.nodes_degraded:
        parts.append(f"{_counted(found.nodes_degraded, 'node')} on fewer ports")
    if found.bisection_tbps and found.bisection_left < 1 - 1e-9:
        parts.append(
            f"bisection {found.bisection_left_tbps:g} of {found.bisection_tbps:g} Tb/s ({found.bisection_left:.1%})"
        )
    if found.subnets_without_sm:
        parts.append(f"{found.subnets_without_sm} subnet without a subnet manager")
    return f"{found.fabric}: {', '.join(parts)}" if parts else ""


def _gpu_lines(effect: Effect) -> list[str]:
    counts = ((effect.gpus_lost, "lost"), (effect.gpus_degraded, "degraded"), (effect.gpus_throttled, "throttled"))
    gpus = [f"{n} GPUs {what}" for n, what in counts if n]
    return [", ".join(gpus)] if gpus else []


def _rack_lines(effect: Effect) -> list[str]:
    if not effect.racks_down:
        return []
    shown = ", ".join(effect.racks_down[:8]) + (", ..." if len(effect.racks_down) > 8 else "")
    return [f"racks down: {shown}"]


def _fabric_lines(effect: Effect) -> list[str]:
    return [text for text in map(fabric_text, effect.fabrics.values()) if text]


def _nvlink_lines(effect: Effect) -> list[str]:
    nvlink = []
    if effect.domains_broken:
        nvlink.append(f"{_counted(effect.domains_broken, 'domain')} broken")
    if effect.domains_degraded:
        left, trays = effect.trays_left
        nvlink.append(
            f"{_counted(effect.domains_degraded, 'domain')} on {left} of {trays} switch trays "
            f"({effect.nvlink_left:.1%} of the NVLink bandwidth)"
        )
    return ["NVLink: " + ", ".join(nvlink)] if nvlink else []


BLOCK_WORDS = {
    "blocks": ("topology block", "topology blocks"),
    "switches": ("topology.conf switch", "topology.conf switches"),
}
"""What `Effect.blocks_are` counts, one and several."""


def _slurm_lines(effect: Effect) -> list[str]:
    slurm = [f"partition {name} -{_counted(n, 'node')}" for name, n in effect.partitions.items()]
    left, controllers = effect.slurm_controllers
    if left < controllers:
        slurm.insert(0, f"{left} of {controllers} controllers left" if left else "no controller left: no job starts")
    if effect.blocks:
        one, several = BLOCK_WORDS[effect.blocks_are]
        slurm.append(f"{effect.blocks} {several}" if effect.blocks != 1 else f"1 {one}")
    return ["Slurm: " + ", ".join(slurm)] if slurm else []


def _listed_lines(effect: Effect) -> list[str]:
    """Power, cooling and workloads, as the effect words them."""
    return [
        *(f"power: {text}" for text in effect.power),
        *(f"cooling: {text}" for text in effect.cooling),
        *(f"workload {name}: {text}" for name, text in effect.workloads.items()),
    ]


def _management_lines(effect: Effect) -> list[str]:
    return [f"out-of-band: {effect.management_lost} management ports unreachable"] if effect.management_lost else []


ASPECTS: tuple[Callable[[Effect], list[str]], ...] = (
    _gpu_lines,
    _rack_lines,
    _fabric_lines,
    _nvlink_lines,
    _slurm_lines,
    _listed_lines,
    _management_lines,
)
"""The aspects of a failure's effect, in the order they are told."""


def effect_lines(effect: Effect) -> list[str]:
    """What the failure takes, one line per aspect; empty when it takes nothing."""
    return [line for aspect in ASPECTS for line in aspect(effect)]


def effect_summary(effect: Effect) -> str:
    """The failure in one line: GPUs, racks and bisection, the first fabric and workload line."""
    lines = effect_lines(effect)
    return "; ".join(lines[:4]) if lines else "nothing lost: redundant"


def _class_lines(result: ClassResult) -> list[str]:
    worst = result.worst
    assert worst is not None
    kinds = f", {result.evaluated} distinct" if result.evaluated != result.elements else ""
    where = f" (rack{'s' if len(worst.failure.racks) > 1 else ''} {', '.join(worst.failure.racks[:4])}" + (
        ", ...)" if len(worst.failure.racks) > 4 else ")"
    )
    lines = [
        f"  {KIND_TITLES[result.kind]} ({result.elements}{kinds}): worst {worst.failure.name}"
        + (where if worst.failure.racks else "")
    ]
    lines += [f"    {line}" for line in effect_lines(worst)] or ["    nothing lost: redundant"]
    lines += [
        f"    worst on fabric {fabric}: {effect.failure.name}: {effect_summary(effect)}"
        for fabric, effect in result.by_fabric.items()
        if effect is not worst
    ]
    lines += [
        f"    over tolerance {limit}: {element} takes {taken} ({n} alike)" for limit, element, taken, n in result.over
    ]
    return lines


def report_text(report: FailureReport) -> str:
    lines = [f"{report.name}: the worst single failure of each element class"]
    for result in report.classes:
        lines += _class_lines(result)
    lines += [f"  {KIND_TITLES[kind]}: none in this cluster" for kind in report.absent if kind in KIND_TITLES]
    for effect in report.named:
        lines.append(f"  {effect.failure.name} ({KIND_TITLES[effect.failure.kind]}):")
        lines += [f"    {line}" for line in effect_lines(effect)] or ["    nothing lost: redundant"]
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def report_markdown(report: FailureReport) -> str:
    lines = [
        f"## {report.name}: single failures",
        "",
        "| element class | elements | worst | what it takes |",
        "|---|---:|---|---|",
    ]
    for result in report.classes:
        worst = result.worst
        assert worst is not None
        taken = "<br>".join(_cell(line) for line in effect_lines(worst)) or "nothing lost: redundant"
        lines.append(f"| {KIND_TITLES[result.kind]} | {result.elements} | `{worst.failure.name}` | {taken} |")
    for effect in report.named:
        taken = "<br>".join(_cell(line) for line in effect_lines(effect)) or "nothing lost: redundant"
        lines.append(f"| {KIND_TITLES[effect.failure.kind]} | 1 | `{effect.failure.name}` | {taken} |")
    if report.findings:
        lines += ["", "### Over the blueprint's tolerance", ""]
        lines += [f"- **{f.severity.value}** `{f.code}`: {_cell(f.message)}" for f in report.findings]
    return "\n".join(lines) + "\n"


def worst_by_class(report: FailureReport) -> dict[str, dict[str, object]]:
    """Element class -> its worst failure in figures, for `clusterforge diff`."""
    out: dict[str, dict[str, object]] = {}
    for result in report.classes:
        worst = result.worst
        assert worst is not None
        out[result.kind] = {
            "element": worst.failure.name,
            "gpus_lost": worst.gpus_lost,
            "gpus_degraded": worst.gpus_degraded + worst.gpus_throttled,
            "bisection_left": round(1 - worst.bisection_loss, 4),
            "workloads_hit": len(worst.workloads),
            "takes": effect_summary(worst),
        }
    return out


def worst_changes(old: dict[str, dict[str, object]], new: dict[str, dict[str, object]]) -> list[dict[str, Any]]:
    """The classes whose worst failure moves with a change: another element, or other GPUs, bisection or
    workloads taken."""
    figures = ("element", "gpus_lost", "gpus_degraded", "bisection_left", "workloads_hit")
    changes: list[dict[str, Any]] = []
    for kind in dict.fromkeys([*old, *new]):
        a, b = old.get(kind), new.get(kind)
        if a is None or b is None or any(a.get(f) != b.get(f) for f in figures):
            changes.append({"class": kind, "old": a, "new": b})
    return changes


def _worst_cell(side: dict[str, object] | None) -> str:
    if not side:
        return "—"
    bisection = float(side["bisection_left"])  # type: ignore[arg-type]
    hit = int(side["workloads_hit"])  # type: ignore[call-overload]
    figures = (
        f"{side['gpus_lost']} GPUs lost, {side['gpus_degraded']} degraded"
        + (f", bisection {bisection:.1%}" if bisection < 1 else "")
        + (f", {hit} workload{'s' if hit != 1 else ''} hit" if hit else "")
    )
    return f"`{_cell(str(side['element']))}`: {figures}"


def worst_markdown(changes: list[dict[str, Any]]) -> list[str]:
    """`clusterforge diff`'s section: how the change moves each class's worst single failure."""
    if not changes:
        return []
    lines = ["### Worst single failures (changed classes)", "", "| element class | before | after |", "|---|---|---|"]
    for change in changes:
        old, new = change["old"], change["new"]
        title = KIND_TITLES[str(change["class"])]
        lines.append(f"| {title} | {_worst_cell(old)} | {_worst_cell(new)} |")
    return [*lines, ""]
