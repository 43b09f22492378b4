"""Workload fit: GPUs, parallel layout, NVLink domains, memory per GPU and the service targets (docs/workloads.md)."""

from __future__ import annotations

from collections.abc import Iterator

from .. import codes
from ..errors import Finding, Severity
from ..expand.topology import Topology
from ..validate import ValidBlueprint
from ..workload import InferenceFit, TrainingFit, WorkloadFit, fit_workloads
from ..workload.fit import GB
from ..workload.memory import tensor_parallel
from ..workload.report import figure as _n
from ..workload.suggest import Layout, inference_layout, training_layout
from .context import CheckContext


def check_workloads(ctx: CheckContext) -> Iterator[Finding]:
    fits = fit_workloads(ctx.valid.blueprint, ctx.valid.catalog, ctx.topo)
    for fit in fits:
        if fit.shape.dims is None:
            yield ctx.finding(
                codes.WORKLOAD_SHAPE_UNKNOWN,
                Severity.INFO,
                f"workload '{fit.name}' gives only model_params_b: KV cache and activations are not counted",
                ("workloads", fit.index, "model_params_b"),
                fit.name,
                "name a catalog model (model: meta/llama-3-70b) or write its shape",
            )
        if isinstance(fit, TrainingFit):
            yield from _training(ctx, fit)
        else:
            yield from _inference(ctx, fit)
    yield from _together(ctx, fits)


def _too_many(ctx: CheckContext, fit: WorkloadFit, what: str, gpus: int) -> Iterator[Finding]:
    if gpus > fit.hw.gpus:
        more_nodes = -(-(gpus - fit.hw.gpus) // fit.hw.gpus_per_node)
        yield ctx.finding(
            codes.WORKLOAD_TOO_MANY_GPUS,
            Severity.ERROR,
            f"{what} '{fit.name}' needs {gpus} GPUs, node groups {', '.join(fit.hw.groups)} have {fit.hw.gpus}",
            ("workloads", fit.index),
            fit.name,
            f"at most {fit.hw.gpus} GPUs, or add {more_nodes} nodes",
        )


def _tp_over_nvlink(ctx: CheckContext, fit: WorkloadFit, what: str, tp: int, field: str) -> Iterator[Finding]:
    hw = fit.hw
    if not hw.nvlink_gbs and 1 < tp <= hw.gpus_per_node:
        _, pcie = hw.tensor_parallel_link(tp)
        yield ctx.finding(
            codes.WORKLOAD_TP_OVER_NVLINK,
            Severity.WARNING,
            f"{what} '{fit.name}': tensor parallel {tp} on {hw.gpu_key}, which has no NVLink, so its per-layer "
            f"all-reduces cross PCIe at {_n(pcie)} GB/s",
            ("workloads", fit.index, field),
            fit.name,
            "pipeline parallel across the GPUs instead (one activation per stage boundary), or GPUs with NVLink",
        )
        return
    domain = hw.nvlink_domain if hw.nvlink_gbs else hw.gpus_per_node
    if tp <= domain:
        return
    inside = f"NVLink's {_n(hw.nvlink_gbs)} GB/s" if hw.nvlink_gbs else "PCIe inside the node"
    yield ctx.finding(
        codes.WORKLOAD_TP_OVER_NVLINK,
        Severity.WARNING,
        f"{what} '{fit.name}': tensor parallel {tp} "
        f"spans {-(-tp // domain)} NVLink domains of {domain} GPUs, so its per-layer collectives cross "
        f"the fabric at {_n(hw.nic_gbps_per_gpu / 8)} GB/s instead of {inside}",
        ("workloads", fit.index, field),
        fit.name,
        f"tensor parallel {domain} or less; add pipeline or data parallel instead",
    )


def _training(ctx: CheckContext, fit: TrainingFit) -> Iterator[Finding]:
    job, path = fit.job, ("workloads", fit.index)
    yield from _too_many(ctx, fit, "training job", job.gpus)
    t, p, c, d = job.tensor_parallel, job.pipeline_parallel, job.context_parallel, fit.data_parallel
    if t * p * c * d != job.gpus:
        yield ctx.finding(
            codes.WORKLOAD_LAYOUT,
            Severity.ERROR,
            f"training job '{job.name}': tensor {t} x pipeline "
            f"{p} x context {c} x data {d} = {t * p * c * d} GPUs, but the job has {job.gpus}",
            (*path, "gpus"),
            job.name,
            f"gpus: {t * p * c * d}, or parallel sizes whose product is {job.gpus}",
        )
    elif (d * c) % job.expert_parallel:
        yield ctx.finding(
            codes.WORKLOAD_LAYOUT,
            Severity.ERROR,
            f"training job '{job.name}': expert parallel "
            f"{job.expert_parallel} does not divide data x context parallel {d * c}",
            (*path, "expert_parallel"),
            job.name,
            "an expert parallel that divides data x context",
        )
    per_step = d * job.micro_batch * job.sequence_length
    if job.global_batch_tokens is not None and job.global_batch_tokens % per_step:
        yield ctx.finding(
            codes.WORKLOAD_LAYOUT,
            Severity.ERROR,
            f"training job '{job.name}': global batch of "
            f"{job.global_batch_tokens:,} tokens is not a multiple of data parallel {d} x micro batch "
            f"{job.micro_batch} x sequence {job.sequence_length:,} = {per_step:,}",
            (*path, "global_batch_tokens"),
            job.name,
            f"global_batch_tokens: {max(1, round(job.global_batch_tokens / per_step)) * per_step}",
        )
    yield from _tp_over_nvlink(ctx, fit, "training job", t, "tensor_parallel")
    m = fit.memory
    if not fit.fits:
        layout = training_layout(fit)
        acts = "" if m.activations is None else f", activations {_n(m.activations / GB)}"
        yield ctx.finding(
            codes.WORKLOAD_TRAINING_MEMORY,
            Severity.ERROR,
            f"training job '{job.name}' needs "
            f"{_n(m.total / GB)} GB per GPU, {_n(fit.usable_bytes / GB)} GB are usable (weights "
            f"{_n(m.weights / GB)}, gradients {_n(m.gradients / GB)}, optimizer {_n(m.optimizer / GB)}"
            f"{acts})",
            path,
            job.name,
            f"fits with {layout.text()}" if layout else "no layout of these GPUs fits: add GPUs",
        )


def _inference(ctx: CheckContext, fit: InferenceFit) -> Iterator[Finding]:
    svc, m, s, path = fit.service, fit.memory, fit.speed, ("workloads", fit.index)
    yield from _too_many(ctx, fit, "inference service", svc.replicas * fit.replica_gpus)
    tp = tensor_parallel(svc)
    product = tp * svc.expert_parallel * svc.pipeline_parallel
    if product != svc.gpus_per_replica:
        stages = f" x pipeline {svc.pipeline_parallel}" if svc.pipeline_parallel > 1 else ""
        yield ctx.finding(
            codes.WORKLOAD_LAYOUT,
            Severity.ERROR,
            f"inference service '{svc.name}': tensor {tp} x "
            f"expert {svc.expert_parallel}{stages} = {product} GPUs, but a replica has "
            f"{svc.gpus_per_replica}",
            (*path, "gpus_per_replica"),
            svc.name,
            f"gpus_per_replica: {product}, or leave tensor_parallel out",
        )
    yield from _tp_over_nvlink(ctx, fit, "inference service", tp, "gpus_per_replica")
    layout = None
    if not fit.fits:
        layout = inference_layout(fit)
        hint = [
            f"at most {m.max_concurrency} sessions of {svc.context_tokens:,} tokens fit"
            if m.max_concurrency
            else "the weights alone do not fit"
        ]
        if layout:
            hint.append(layout.text())
        yield ctx.finding(
            codes.WORKLOAD_INFERENCE_MEMORY,
            Severity.ERROR,
            f"inference service '{svc.name}' needs "
            f"{_n(m.total / GB)} GB per replica for weights and {m.concurrency} sessions of "
            f"{svc.context_tokens:,} tokens, {_n(m.usable / GB)} GB are usable",
            (*path, "concurrent_requests"),
            svc.name,
            "; or ".join(hint),
        )
    if svc.ttft_target_ms is not None and s.ttft_s * 1000 > svc.ttft_target_ms:
        layout = layout or inference_layout(fit)
        yield ctx.finding(
            codes.WORKLOAD_TTFT,
            Severity.WARNING,
            f"inference service '{svc.name}': time to first "
            f"token {_n(s.ttft_s * 1000)} ms for {s.ttft_prompt_tokens:,} tokens, target "
            f"{_n(svc.ttft_target_ms)} ms",
            (*path, "ttft_target_ms"),
            svc.name,
            _target_hint(layout),
        )
    if svc.tokens_per_s_target is not None and s.tokens_per_s_session < svc.tokens_per_s_target:
        layout = layout or inference_layout(fit)
        yield ctx.finding(
            codes.WORKLOAD_DECODE_RATE,
            Severity.WARNING,
            f"inference service '{svc.name}': "
            f"{_n(s.tokens_per_s_session)} tokens/s per session at {m.concurrency} sessions, target "
            f"{_n(svc.tokens_per_s_target)}",
            (*path, "tokens_per_s_target"),
            svc.name,
            _target_hint(layout),
        )


def recheck_workloads(valid: ValidBlueprint, topo: Topology) -> list[Finding]:
    """The CF-WORK warnings and errors of a blueprint: what `fit --suggest` checks its combined layout with."""
    return [f for f in check_workloads(CheckContext(valid, topo)) if f.severity is not Severity.INFO]


def _together(ctx: CheckContext, fits: list[WorkloadFit]) -> Iterator[Finding]:
    """Workloads that each fit their groups but not all at once (on the same first group)."""
    by_group: dict[tuple[str, ...], list[tuple[WorkloadFit, int]]] = {}
    for fit in fits:
        gpus = fit.job.gpus if isinstance(fit, TrainingFit) else fit.service.replicas * fit.replica_gpus
        if gpus <= fit.hw.gpus:
            by_group.setdefault(tuple(fit.hw.groups), []).append((fit, gpus))
    for groups, members in sorted(by_group.items()):
        total, have = sum(g for _, g in members), members[0][0].hw.gpus
        if len(members) > 1 and total > have:
            parts = ", ".join(f"{f.name} {g}" for f, g in members)
            yield ctx.finding(
                codes.WORKLOAD_GPUS_TOGETHER,
                Severity.WARNING,
                f"workloads on {', '.join(groups)} need {total} GPUs together, the node groups have {have} ({parts})",
                ("workloads",),
                None,
                "run them at different times on purpose (suppress this finding with the reason), or add nodes",
            )


def _target_hint(layout: Layout | None) -> str:
    """The replica layout that meets a missed inference target, or that none does."""
    return f"meets it with {layout.text()}" if layout else "no replica size of these GPUs meets it"
