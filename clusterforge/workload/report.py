"""`clusterforge fit` as text: per workload, its layout, memory per GPU, time, throughput, energy and cost."""

from __future__ import annotations

from typing import Any

from .. import codes
from ..errors import Finding
from .fit import GB, InferenceFit, TrainingFit, WorkloadFit, fits_as_dict
from .plan import Plan
from .suggest import suggestion


def figure(x: float) -> str:
    """Three significant figures, thousands separated: 406,000 and 0.123."""
    value = float(f"{x:.3g}")
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:g}"


_n = figure


def _gb(x: float) -> str:
    return _n(x / GB)


def _model(fit: WorkloadFit) -> str:
    workload = fit.job if isinstance(fit, TrainingFit) else fit.service
    return workload.model or ("a given shape" if workload.shape else f"{_n(fit.shape.params / 1e9)}B parameters")


def _count(x: float) -> str:
    """Large counts in words: 15.7 million, 1 trillion."""
    for scale, word in ((1e12, "trillion"), (1e9, "billion"), (1e6, "million")):
        if x >= scale:
            return f"{_n(x / scale)} {word}"
    return _n(x)


def _money(fit: WorkloadFit, amount: float) -> str:
    return f"{fit.currency} {amount:,.2f}" if amount < 100 else f"{fit.currency} {figure(amount)}"


def training_text(fit: TrainingFit) -> list[str]:
    job, m, s = fit.job, fit.memory, fit.speed
    acts = "unknown without the model's shape" if m.activations is None else _gb(m.activations)
    lines = [
        f"{job.name} (training, {_model(fit)}, {job.precision}, on {job.gpus} x {fit.hw.gpu_key}): "
        f"TP{job.tensor_parallel} PP{job.pipeline_parallel} CP{job.context_parallel} EP{job.expert_parallel} "
        f"DP{fit.data_parallel}, ZeRO-{job.zero_stage}, {job.recompute} recompute",
        f"  memory per GPU: {_gb(m.total)} of {_gb(fit.usable_bytes)} GB usable (weights {_gb(m.weights)}, gradients "
        f"{_gb(m.gradients)}, optimizer {_gb(m.optimizer)}, activations {acts})",
    ]
    collectives = (
        ", ".join(f"{k} {_n(v)} s ({fit.hw.tier_name(s.collective_tier[k])})" for k, v in s.collectives_s.items())
        or "none"
    )
    lines.append(
        f"  step: {_count(s.tokens_per_step)} tokens in {_n(s.micro_batches)} micro batches, "
        f"{_n(s.compute_s)} s of compute at MFU {job.mfu:g} of the {fit.as_dict()['step']['mfu_of']} peak"
        f"{f' ({_n(s.compute_s - s.work_s)} s of it recomputation and bubble)' if s.compute_s > s.work_s else ''}; "
        f"collectives {collectives}; scaling "
        f"efficiency at least {s.scaling_efficiency:.2f} without overlap"
    )
    tail = f"  throughput: {_n(s.tokens_per_s)} tokens/s ({_n(s.tokens_per_s / job.gpus)} per GPU)"
    tail += f"; checkpoint {_gb(fit.checkpoint_bytes)} GB"
    rate = fit.checkpoint_rate_gbs
    if fit.checkpoint_write_s is not None and rate is not None:
        what = {
            "storage system": "the storage system's write throughput",
            "storage ports": "the nodes' storage ports (the storage system writes faster)",
        }.get(rate[1], "the storage ports' line rate (the storage system's throughput is not in the catalog)")
        tail += f", written in {_n(fit.checkpoint_write_s)} s at {_n(rate[0])} GB/s, {what}"
    hours = fit.run_hours()
    if hours is not None:
        tail += f"; {_count(job.tokens or 0)} tokens take {_n(hours / 24)} days"
        if fit.gpu_hour_cost is not None:
            tail += f", costing {_money(fit, hours * job.gpus * fit.gpu_hour_cost)}"
    return [*lines, tail]


def _serving_layout(fit: InferenceFit) -> str:
    svc, s = fit.service, fit.speed
    parts = [f"TP{s.tensor_parallel}" + (f" ({fit.hw.tier_name(s.tp_tier)})" if s.tp_tier else "")]
    if svc.expert_parallel > 1:
        parts.append(f"EP{svc.expert_parallel}")
    if svc.pipeline_parallel > 1:
        parts.append(f"PP{svc.pipeline_parallel}")
    if s.prefill_pool_gpus:
        parts.append(f"prefill on {s.prefill_pool_gpus} more GPUs")
    if svc.prefix_cache_hit_rate:
        parts.append(f"{svc.prefix_cache_hit_rate:.0%} of prompts cached")
    if svc.speculative is not None:
        parts.append(f"speculative decoding, {s.tokens_per_step:.2f} tokens per step")
    return ", ".join(parts)


def inference_text(fit: InferenceFit) -> list[str]:
    svc, m, s = fit.service, fit.memory, fit.speed
    lines = [
        f"{svc.name} (inference, {_model(fit)}, {svc.precision}, on {svc.replicas} x {m.gpus} {fit.hw.gpu_key}):"
        f" {m.concurrency} sessions of {svc.context_tokens:,} tokens per replica, {_serving_layout(fit)}"
    ]
    if m.kv_per_token is None:
        lines.append(
            f"  memory per replica: {_gb(m.weights)} GB weights of {_gb(m.usable)} GB usable; KV cache "
            "unknown without the model's shape"
        )
    else:
        lines.append(
            f"  memory per replica: {_gb(m.weights)} GB weights + {_gb(m.kv_total)} GB KV cache = "
            f"{_gb(m.total)} of {_gb(m.usable)} GB usable; up to {m.max_concurrency} sessions at full context"
        )
        reads = f", read {s.kv_reads:g} times a decode step ({svc.attention_kernel} attention)"
        lines.append(
            f"  KV cache: {m.kv_per_token:,.0f} bytes per token, {_gb(m.kv_per_session or 0)} GB per session"
            + (f", held {m.kv_copies:g} times across tensor parallel" if m.kv_copies > 1 else "")
            + (reads if s.kv_reads > 1 else "")
        )
    bound = "HBM bound" if s.decode_memory_bound else "compute bound"
    comm = f", {_n(s.prefill_comm_s * 1000)} ms of it communication" if s.prefill_comm_s else ""
    if s.mix:
        kinds = ", ".join(f"{share:.0%} {p:,} + {o:,} ({_n(ttft * 1000)} ms)" for share, p, o, ttft in s.mix)
        lines.append(f"  request mix (share, prompt + output tokens, time to first token): {kinds}")
    requests = f"requests of {s.prompt_tokens:,.0f} prompt + {s.output_tokens:,.0f} output tokens"
    requests += " on average" if s.mix else ""
    first = "time to first token of the longest prompt" if s.mix else "time to first token"
    line = (
        f"  {requests}: {first} "
        f"{_n(s.ttft_s * 1000)} ms{comm}; {_n(s.tokens_per_s_session)} output tokens/s per session, "
        f"{_n(s.tokens_per_s_replica)} per replica, {_n(s.tokens_per_s_replica * svc.replicas)} in all, prefill "
        f"included (decode steps {bound}); {_n(fit.joules_per_token)} J per token at {fit.hw.power_basis} power"
    )
    cost = fit.as_dict()["cost_per_million_tokens"]
    if cost is not None:
        line += f", {_money(fit, cost)} per million tokens"
    return [*lines, line]


def fits_text(fits: list[WorkloadFit]) -> str:
    lines: list[str] = []
    for fit in fits:
        lines += training_text(fit) if isinstance(fit, TrainingFit) else inference_text(fit)
    return "\n".join(lines)


SUGGEST_FOR = {
    codes.WORKLOAD_TRAINING_MEMORY,
    codes.WORKLOAD_INFERENCE_MEMORY,
    codes.WORKLOAD_TTFT,
    codes.WORKLOAD_DECODE_RATE,
}


def suggestions(fits: list[WorkloadFit], findings: list[Finding]) -> dict[str, str | None]:
    """For each workload that does not fit or misses a target: the smallest layout that fits and meets its
    targets (None when none of the node groups' GPUs does)."""
    flagged = {f.subject for f in findings if f.code in SUGGEST_FOR and not f.suppressed_by}
    out: dict[str, str | None] = {}
    for fit in fits:
        if fit.name in flagged:
            layout = suggestion(fit)
            out[fit.name] = None if layout is None else layout.text()
    return out


def fit_text(fits: list[WorkloadFit], findings: list[Finding], suggest: bool, plan: Plan | None = None) -> str:
    """`plan`: the combined layout of `fit --suggest` (plan.py); without it, each flagged workload's own."""
    lines = [fits_text(fits)] if fits else ["no workloads declared"]
    if plan is not None:
        lines += plan.lines()
    elif suggest:
        for name, layout in suggestions(fits, findings).items():
            lines.append(f"suggest {name}: {layout or 'no layout of its node groups fits or meets the targets'}")
    return "\n".join(lines)


def fit_json(
    fits: list[WorkloadFit], findings: list[Finding], suggest: bool, plan: Plan | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "workloads": fits_as_dict(fits),
        "findings": [f.as_dict() for f in findings if f.code.startswith("CF-WORK-")],
    }
    if plan is not None:
        out["suggestions"] = plan.as_dict()
    elif suggest:
        out["suggestions"] = suggestions(fits, findings)
    return out
