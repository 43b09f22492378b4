"""`clusterforge fit --suggest`: one layout for all workloads at once, re-checked.

Each workload gets the candidate layouts its own GPUs allow; training keeps its GPUs and takes the fastest layout
that fits, an inference service the fewest GPUs that fit and meet its targets (fewer sessions per replica made
up by more replicas). The choices are then put into a copy of the blueprint and the CF-WORK checks run on it
again: the plan stands only when nothing fails to fit, misses a target, or needs more GPUs than there are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import codes
from ..catalog import Catalog
from ..errors import Finding
from ..expand.topology import Topology
from ..model import Blueprint, InferenceService, TrainingJob
from ..validate import ValidBlueprint
from .fit import InferenceFit, TrainingFit, WorkloadFit, fit_workloads
from .hardware import Hardware, hardware_for
from .memory import inference_memory, training_memory
from .shape import Shape, resolve_shape
from .speed import inference_speed, training_speed
from .suggest import powers_of_two as _powers_of_two

BLOCKING = {
    codes.WORKLOAD_TOO_MANY_GPUS,
    codes.WORKLOAD_LAYOUT,
    codes.WORKLOAD_TRAINING_MEMORY,
    codes.WORKLOAD_INFERENCE_MEMORY,
    codes.WORKLOAD_TTFT,
    codes.WORKLOAD_DECODE_RATE,
    codes.WORKLOAD_GPUS_TOGETHER,
}
"""Findings a plan must not leave: too many GPUs, a layout that does not divide, memory, targets, GPUs together."""


@dataclass(frozen=True)
class Choice:
    name: str
    changes: dict[str, Any]
    """Fields changed from the blueprint (empty: the workload stays as written)."""
    gpus: int
    note: str
    """What the layout gives: memory per GPU and the time or rate it reaches."""

    def text(self) -> str:
        fields = ", ".join(f"{k}: {v}" for k, v in self.changes.items()) or "as written"
        return f"{fields} ({self.note})"


@dataclass(frozen=True)
class Plan:
    choices: list[Choice]
    findings: list[Finding]
    """The CF-WORK findings of the blueprint with every choice applied."""
    gpus: dict[str, tuple[int, int]]
    """Node groups -> (GPUs the plan uses, GPUs there are)."""

    @property
    def ok(self) -> bool:
        return not any(f.code in BLOCKING and not f.suppressed_by for f in self.findings)

    def lines(self) -> list[str]:
        out = [f"suggest {c.name}: {c.text()}" for c in self.choices]
        used = "; ".join(f"{groups}: {u} of {h} GPUs" for groups, (u, h) in self.gpus.items())
        if self.ok:
            out.append(f"suggested layout re-checked: every workload fits and meets its targets together ({used})")
        else:
            left = sorted({f"{f.code} {f.subject}" for f in self.findings if f.code in BLOCKING})
            out.append(f"no combined layout found that passes the re-check ({used}); left: {', '.join(left)}")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "workloads": {c.name: {"changes": c.changes, "gpus": c.gpus, "note": c.note} for c in self.choices},
            "gpus": {groups: {"used": u, "available": h} for groups, (u, h) in self.gpus.items()},
            "findings": [f.as_dict() for f in self.findings if f.code in BLOCKING],
        }


def _training_choice(job: TrainingJob, shape: Shape, hw: Hardware) -> Choice | None:
    """The fastest layout of the job's GPUs that fits: tensor parallel within the NVLink domain, pipeline stages,
    ZeRO stage and recomputation; step time = compute (bubble included) + collectives not overlapped."""
    usable = hw.gpu.memory_gb * 1e9 * (1 - job.memory_headroom)
    best: tuple[float, Choice] | None = None
    domain = hw.nvlink_domain if hw.nvlink_gbs else 1
    recomputes = [job.recompute] + (["full"] if job.recompute != "full" else [])
    for tp in _powers_of_two(min(domain, job.gpus)):
        for pp in [p for p in _powers_of_two(64) if p * tp * job.context_parallel <= job.gpus]:
            if job.gpus % (tp * pp * job.context_parallel):
                continue
            dp = job.gpus // (tp * pp * job.context_parallel)
            if dp % job.expert_parallel and job.expert_parallel > 1:
                continue
            if job.global_batch_tokens and job.global_batch_tokens % (dp * job.micro_batch * job.sequence_length):
                continue
            for zero in sorted({job.zero_stage, 1, 2, 3} - set(range(job.zero_stage))):
                for recompute in recomputes:
                    update: dict[str, Any] = {"tensor_parallel": tp, "pipeline_parallel": pp, "zero_stage": zero}
                    update |= {"recompute": recompute, "data_parallel": None, "first_stage_layers": None}
                    if pp == job.pipeline_parallel:
                        update.pop("first_stage_layers")
                    trial = job.model_copy(update=update)
                    memory = training_memory(trial, shape)
                    if memory.total > usable:
                        continue
                    speed = training_speed(trial, shape, hw)
                    step = speed.compute_s + sum(speed.collectives_s.values())
                    changes = {k: v for k, v in update.items() if v is not None and getattr(job, k) != v}
                    note = f"{memory.total / 1e9:.3g} GB per GPU, {speed.tokens_per_step / step:,.0f} tokens/s"
                    choice = Choice(job.name, changes, job.gpus, note)
                    if best is None or step < best[0] * 0.999:
                        best = (step, choice)
    return None if best is None else best[1]


def _inference_choice(svc: InferenceService, shape: Shape, hw: Hardware, budget: int) -> Choice | None:
    """The fewest GPUs that hold the weights and the sessions and meet the targets: GPUs per replica (a power of
    two), pipeline stages, sessions per replica (halved down to a quarter, the replicas raised to serve as many
    sessions in all)."""
    sessions = svc.replicas * svc.concurrent_requests
    candidates: list[tuple[tuple[int, int, float], Choice]] = []
    for g in _powers_of_two(budget):
        for pp in _powers_of_two(g):
            stage = g // pp
            if stage % svc.expert_parallel:
                continue
            tp = stage // svc.expert_parallel
            for concurrency in sorted({svc.concurrent_requests, max(1, svc.concurrent_requests // 2)}, reverse=True):
                replicas = -(-sessions // concurrency)
                if replicas * g > budget:
                    continue
                update: dict[str, Any] = {
                    "gpus_per_replica": g,
                    "pipeline_parallel": pp,
                    "tensor_parallel": None,
                    "concurrent_requests": concurrency,
                    "replicas": replicas,
                }
                trial = svc.model_copy(update=update)
                memory = inference_memory(trial, shape, hw.gpu.memory_gb)
                if memory.total > memory.usable:
                    continue
                speed = inference_speed(trial, shape, hw, memory)
                if svc.ttft_target_ms is not None and speed.ttft_s * 1000 > svc.ttft_target_ms:
                    continue
                if svc.tokens_per_s_target is not None and speed.tokens_per_s_session < svc.tokens_per_s_target:
                    continue
                pcie = 1 if tp > 1 and not hw.nvlink_gbs else 0
                changes = {k: v for k, v in update.items() if v is not None and getattr(svc, k) != v}
                note = (
                    f"{memory.per_gpu / 1e9:.3g} GB per GPU, TTFT {speed.ttft_s * 1000:,.0f} ms, "
                    f"{speed.tokens_per_s_session:.3g} tokens/s per session, {replicas * g} GPUs"
                )
                candidates.append(((replicas * g, pcie, speed.ttft_s), Choice(svc.name, changes, replicas * g, note)))
    if not candidates:
        return None
    return min(candidates, key=lambda c: c[0])[1]


Recheck = Callable[[ValidBlueprint, Topology], list[Finding]]
"""The CF-WORK checks of a blueprint (`checks/workloads.py`'s recheck_workloads; the checks sit a layer above)."""


def plan_layouts(valid: ValidBlueprint, topo: Topology, recheck: Recheck) -> Plan:
    """One layout for every workload, applied to a copy of the blueprint and checked again by `recheck`."""
    bp, catalog = valid.blueprint, valid.catalog
    choices: list[Choice] = []
    workloads = list(bp.workloads)
    used: dict[str, int] = {}
    for i, workload in enumerate(bp.workloads):
        hw = hardware_for(bp, catalog, workload, topo)
        if hw is None:
            continue
        shape = resolve_shape(workload, catalog)
        groups = ", ".join(hw.groups)
        if isinstance(workload, TrainingJob):
            choice = _training_choice(workload, shape, hw)
        else:
            choice = _inference_choice(workload, shape, hw, hw.gpus - used.get(groups, 0))
        if choice is None:
            gpus = workload.gpus if isinstance(workload, TrainingJob) else workload.replicas * workload.gpus_per_replica
            choice = Choice(workload.name, {}, gpus, "no layout of its node groups fits and meets its targets")
        choices.append(choice)
        used[groups] = used.get(groups, 0) + choice.gpus
        workloads[i] = workload.model_copy(update=choice.changes)
    planned = dataclasses.replace(valid, blueprint=bp.model_copy(update={"workloads": workloads}))
    findings = recheck(planned, topo)
    return Plan(choices, findings, _gpus(planned.blueprint, catalog, topo))


def _gpus(bp: Blueprint, catalog: Catalog, topo: Topology) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for fit in fit_workloads(bp, catalog, topo):
        groups = ", ".join(fit.hw.groups)
        used, have = out.get(groups, (0, fit.hw.gpus))
        out[groups] = (used + _workload_gpus(fit), have)
    return out


def _workload_gpus(fit: WorkloadFit) -> int:
    if isinstance(fit, TrainingFit):
        return fit.job.gpus
    assert isinstance(fit, InferenceFit)
    return fit.replica_gpus * fit.service.replicas
