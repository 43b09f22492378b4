"""`clusterforge failures` as text and Markdown, and the one-line summary of a failure the report and `diff`
show."""

from __future__ import annotations

from typing import Any

from .analysis import ClassResult, FailureReport
from .effects import Effect, FabricEffect
from .elements import KIND_TITLES


def _rails(rails: dict[int, int]) -> str:
    """'rail 3 on 31 nodes', or 'rails 1-8 (248 ports)'."""
    if len(rails) == 1:
        rail, nodes = next(iter(rails.items()))
        return f"rail {rail} lost on {nodes} node{'s' if nodes != 1 else ''}"
    return f"rails {', '.join(map(str, sorted(rails)))} lost ({sum(rails.values())} ports)"


def fabric_text(found: FabricEffect) -> str:
    parts = []
    if found.gpus_cut_off:
        parts.append(
            f"{found.gpus_cut_off} GPUs cut off ({found.nodes_cut_off} node{'s' if found.nodes_cut_off != 1 else ''})"
        )
    elif found.nodes_cut_off:
        parts.append(f"{found.nodes_cut_off} node{'s' if found.nodes_cut_off != 1 else ''} cut off")
    if found.rails_lost and found.nodes_degraded:
        parts.append(_rails(found.rails_lost))
    elif found.nodes_degraded:
        parts.append(f"{found.nodes_degraded} node{'s' if found.nodes_degraded != 1 else ''} on fewer ports")
    if found.bisection_tbps and found.bisection_left < 1 - 1e-9:
        parts.append(
            f"bisection {found.bisection_left_tbps:g} of {found.bisection_tbps:g} Tb/s ({found.bisection_left:.1%})"
        )
    if found.subnets_without_sm:
        parts.append(f"{found.subnets_without_sm} subnet without a subnet manager")
    return f"{found.fabric}: {', '.join(parts)}" if parts else ""


def effect_lines(effect: Effect) -> list[str]:
    """What the failure takes, one line per aspect; empty when it takes nothing."""
    lines = []
    gpus = [
        f"{n} GPUs {what}"
        for n, what in (
            (effect.gpus_lost, "lost"),
            (effect.gpus_degraded, "degraded"),
            (effect.gpus_throttled, "throttled"),
        )
        if n
    ]
    if gpus:
        lines.append(", ".join(gpus))
    if effect.racks_down:
        shown = ", ".join(effect.racks_down[:8]) + (", ..." if len(effect.racks_down) > 8 else "")
        lines.append(f"racks down: {shown}")
    lines += [text for text in map(fabric_text, effect.fabrics.values()) if text]
    nvlink = []
    if effect.domains_broken:
        nvlink.append(f"{effect.domains_broken} domain{'s' if effect.domains_broken != 1 else ''} broken")
    if effect.domains_degraded:
        left, trays = effect.trays_left
        nvlink.append(
            f"{effect.domains_degraded} domain{'s' if effect.domains_degraded != 1 else ''} on {left} of {trays} "
            f"switch trays ({effect.nvlink_left:.1%} of the NVLink bandwidth)"
        )
    if nvlink:
        lines.append("NVLink: " + ", ".join(nvlink))
    slurm = [f"partition {name} -{n} node{'s' if n != 1 else ''}" for name, n in effect.partitions.items()]
    left, controllers = effect.slurm_controllers
    if left < controllers:
        slurm.insert(
            0, "no controller left: no job starts" if not left else f"{left} of {controllers} controllers left"
        )
    if effect.blocks:
        what = "topology block" if effect.blocks_are == "blocks" else "topology.conf switch"
        slurm.append(
            f"{effect.blocks} {what}{'es' if what.endswith('h') else 's'}" if effect.blocks != 1 else f"1 {what}"
        )
    if slurm:
        lines.append("Slurm: " + ", ".join(slurm))
    lines += [f"power: {text}" for text in effect.power]
    lines += [f"cooling: {text}" for text in effect.cooling]
    lines += [f"workload {name}: {text}" for name, text in effect.workloads.items()]
    if effect.management_lost:
        lines.append(f"out-of-band: {effect.management_lost} management ports unreachable")
    return lines


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
