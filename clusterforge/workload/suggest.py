"""The smallest layout that fits or meets its targets: hints for findings and `clusterforge fit --suggest`."""

from __future__ import annotations

from dataclasses import dataclass

from .fit import GB, InferenceFit, TrainingFit
from .memory import inference_memory, training_memory
from .speed import inference_speed


def powers_of_two(limit: int) -> list[int]:
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return out


@dataclass(frozen=True)
class Layout:
    """A proposed change: field -> value, what it gives, and the nodes it takes."""

    changes: dict[str, int]
    per_gpu_gb: float
    nodes: int

    def text(self) -> str:
        fields = ", ".join(f"{k}: {v}" for k, v in self.changes.items())
        return f"{fields} ({self.per_gpu_gb:.3g} GB per GPU, {self.nodes} node{'' if self.nodes == 1 else 's'})"


def training_layout(fit: TrainingFit) -> Layout | None:
    """Smallest tensor parallel within an NVLink domain that fits; else more pipeline stages at the largest
    such tensor parallel; else ZeRO-3 on top. Each must divide the job's GPUs."""
    job, hw = fit.job, fit.hw
    nodes = -(-job.gpus // hw.gpus_per_node)
    tps = [t for t in powers_of_two(max(hw.nvlink_domain, 1)) if job.gpus % t == 0]
    for tp in tps:
        m = training_memory(job, fit.shape, tensor_parallel=tp)
        if m.total <= fit.usable_bytes and job.gpus % (tp * job.pipeline_parallel * job.context_parallel) == 0:
            return Layout({"tensor_parallel": tp}, m.total / GB, nodes)
    tp = tps[-1] if tps else 1
    for zero in sorted({job.zero_stage, 3}):
        for pp in range(job.pipeline_parallel, job.gpus // tp + 1):
            if job.gpus % (tp * pp * job.context_parallel):
                continue
            m = training_memory(job, fit.shape, tensor_parallel=tp, pipeline_parallel=pp, zero_stage=zero)
            if m.total <= fit.usable_bytes:
                changes = {"tensor_parallel": tp, "pipeline_parallel": pp}
                return Layout(changes | ({"zero_stage": zero} if zero != job.zero_stage else {}), m.total / GB, nodes)
    return None


def inference_layout(fit: InferenceFit) -> Layout | None:
    """Smallest GPUs per replica (a power of two, up to the GPUs there are) that holds the weights and KV cache
    of the service's concurrency and meets its targets; the replicas keep their number."""
    svc, hw = fit.service, fit.hw
    for g in powers_of_two(hw.gpus):
        if g % svc.expert_parallel:
            continue
        memory = inference_memory(svc, fit.shape, hw.gpu.memory_gb, gpus=g)
        if memory.total > memory.usable:
            continue
        speed = inference_speed(svc, fit.shape, hw, memory)
        if svc.ttft_target_ms is not None and speed.ttft_s * 1000 > svc.ttft_target_ms:
            continue
        if svc.tokens_per_s_target is not None and speed.tokens_per_s_session < svc.tokens_per_s_target:
            continue
        nodes = -(-g * svc.replicas // hw.gpus_per_node)
        return Layout({"gpus_per_replica": g}, memory.per_gpu / GB, nodes)
    return None


def suggestion(fit: TrainingFit | InferenceFit) -> Layout | None:
    return training_layout(fit) if isinstance(fit, TrainingFit) else inference_layout(fit)
