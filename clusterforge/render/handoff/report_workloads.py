"""The report's workload section: one row per workload from the plan's figures, and a chart of memory per GPU
against the usable memory (an inline SVG for report.html)."""

from __future__ import annotations

from typing import Any

from ...plan import Plan
from .rack_drawing import xml_escape
from .report_table import table

BAR_W, ROW_H, LABEL_W = 360, 26, 200


def _n(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:g}"


def per_gpu(figures: dict[str, Any]) -> tuple[float, float]:
    """(memory per GPU, usable per GPU) in GB."""
    memory = figures["memory_gb"]
    if figures["kind"] == "training":
        return memory["total"], memory["usable"]
    return memory["per_gpu"], float(f"{memory['usable'] / figures['layout']['gpus_per_replica']:.3g}")


def _row(name: str, w: dict[str, Any]) -> list[str]:
    used, usable = per_gpu(w)
    money = w.get("currency") or ""
    if w["kind"] == "training":
        lay = w["layout"]
        layout = f"TP{lay['tensor']} PP{lay['pipeline']} CP{lay['context']} EP{lay['expert']} DP{lay['data']}"
        speed = f"{_n(w['tokens_per_s'])} tokens/s; step {_n(w['step']['compute_s'])} s"
        cost = "" if w["run_cost"] is None else f"{money} {_n(w['run_cost'])} for {_n(w['run_days'])} days"
    else:
        lay = w["layout"]
        layout = f"{lay['replicas']} × {lay['gpus_per_replica']} GPUs, {w['concurrency']} sessions"
        decode = w["decode"]
        speed = (
            f"TTFT {_n(w['ttft_ms'])} ms; {_n(decode['tokens_per_s_session'])} tokens/s per session, "
            f"{_n(decode['tokens_per_s_service'])} in all"
        )
        per_million = w["cost_per_million_tokens"]
        cost = "" if per_million is None else f"{money} {_n(per_million)} per M tokens"
    return [name, w["kind"], w["gpu"], str(w["gpus"]), layout, f"{_n(used)} / {_n(usable)}", speed, cost]


def workloads_section(plan: Plan) -> dict[str, Any] | None:

    if not plan.workloads:
        return None
    section = table(
        "Workloads",
        ["workload", "kind", "GPU", "GPUs", "layout", "memory per GPU GB (used / usable)", "speed", "cost"],
        [_row(name, w) for name, w in plan.workloads.items()],
        numeric=(3,),
        intro="Memory, time and cost of the blueprint's workloads (clusterforge fit; formulas in the "
        "repository's docs/workloads.md).",
    )
    section["chart"] = memory_chart(plan)
    return section


def memory_chart(plan: Plan) -> str:
    """Horizontal bars: each workload's memory per GPU, with the usable memory as a line."""
    rows = [(name, *per_gpu(w)) for name, w in plan.workloads.items()]
    scale = BAR_W / max(max(used, usable) for _, used, usable in rows)
    height = ROW_H * len(rows) + 30
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{LABEL_W + BAR_W + 120}" '
        f'height="{height}" role="img" aria-label="memory per GPU of each workload">'
    ]
    for i, (name, used, usable) in enumerate(rows):
        y = 10 + i * ROW_H
        fill = "#c0392b" if used > usable else "#2e86c1"
        parts.append(f'<text x="{LABEL_W - 6}" y="{y + 15}" text-anchor="end" font-size="12">{xml_escape(name)}</text>')
        parts.append(f'<rect x="{LABEL_W}" y="{y + 3}" width="{used * scale:.1f}" height="16" fill="{fill}"/>')
        parts.append(
            f'<line x1="{LABEL_W + usable * scale:.1f}" x2="{LABEL_W + usable * scale:.1f}" y1="{y}" '
            f'y2="{y + 22}" stroke="#000" stroke-width="2"/>'
        )
        parts.append(
            f'<text x="{LABEL_W + max(used, usable) * scale + 6:.1f}" y="{y + 15}" font-size="12">'
            f"{_n(used)} of {_n(usable)} GB</text>"
        )
    parts.append(
        f'<text x="{LABEL_W}" y="{height - 4}" font-size="11">bar: memory per GPU; line: usable memory</text></svg>'
    )
    return "".join(parts)
