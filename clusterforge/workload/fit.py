"""Every workload of a blueprint against its node groups: memory, time, energy and cost, as figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..catalog import Catalog, StorageSystem
from ..expand.topology import Topology
from ..model import Blueprint, InferenceService, TrainingJob
from .cost import gpu_hour_cost, per_million_tokens
from .hardware import Hardware, hardware_for
from .memory import InferenceMemory, TrainingMemory, data_parallel, inference_memory, training_memory
from .shape import Shape, resolve_shape
from .speed import InferenceSpeed, TrainingSpeed, inference_speed, training_speed

GB = 1e9


@dataclass(frozen=True)
class TrainingFit:
    index: int
    job: TrainingJob
    shape: Shape
    hw: Hardware
    data_parallel: int
    memory: TrainingMemory
    speed: TrainingSpeed
    usable_bytes: float
    """Usable memory of one GPU."""
    gpu_hour_cost: float | None
    pue: float
    currency: str
    checkpoint_storage_gbs: float | None = None
    """Write throughput of the job's `checkpoint_storage` (catalog storage system x count), when it names one."""

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def fits(self) -> bool:
        return self.memory.total <= self.usable_bytes

    @property
    def checkpoint_bytes(self) -> float:
        """Weights and optimizer state of the whole model (what a restart needs)."""
        state = 4.0 if self.job.precision == "fp32" else 2.0
        return self.shape.params * (state + 12.0 if self.job.optimizer == "adam" else state + 8.0)

    @property
    def checkpoint_rate_gbs(self) -> tuple[float, str] | None:
        """The rate a checkpoint is written at in GB/s and what limits it: the storage system's write throughput
        (its nodes' `storage_throughput`), or the job's nodes' storage ports when those are slower or the
        storage system's throughput is not known."""
        nodes = self.job.gpus / self.hw.gpus_per_node
        ports = self.hw.storage_gbps_per_node * nodes / 8
        system = self.checkpoint_storage_gbs if self.checkpoint_storage_gbs is not None else self.hw.storage_write_gbs
        if system is not None and (system <= ports or ports <= 0):
            return system, "storage system"
        if ports <= 0:
            return None
        return ports, "storage ports" if system is not None else "storage ports' line rate"

    @property
    def checkpoint_write_s(self) -> float | None:
        rate = self.checkpoint_rate_gbs
        return None if rate is None else self.checkpoint_bytes / (rate[0] * 1e9)

    def run_hours(self) -> float | None:
        return None if self.job.tokens is None else self.job.tokens / self.speed.tokens_per_s / 3600

    def as_dict(self) -> dict[str, Any]:
        m, s, hours = self.memory, self.speed, self.run_hours()
        cost = None if hours is None or self.gpu_hour_cost is None else hours * self.job.gpus * self.gpu_hour_cost
        return {
            "kind": "training",
            "gpu": self.hw.gpu_key,
            "scale_up_link": self.hw.scale_up_link or None,
            "gpus": self.job.gpus,
            "layout": {
                "tensor": self.job.tensor_parallel,
                "pipeline": self.job.pipeline_parallel,
                "context": self.job.context_parallel,
                "expert": self.job.expert_parallel,
                "data": self.data_parallel,
                "zero_stage": self.job.zero_stage,
                "recompute": self.job.recompute,
            },
            "params_b": _r(self.shape.params / 1e9),
            "active_params_b": _r(self.shape.active_params / 1e9),
            "memory_gb": {
                "weights": _gb(m.weights),
                "gradients": _gb(m.gradients),
                "optimizer": _gb(m.optimizer),
                "activations": None if m.activations is None else _gb(m.activations),
                "total": _gb(m.total),
                "usable": _gb(self.usable_bytes),
            },
            "step": {
                "tokens": int(s.tokens_per_step),
                "micro_batches": _r(s.micro_batches),
                "compute_s": _r(s.compute_s),
                "recompute_and_bubble_s": _r(s.compute_s - s.work_s),
                "mfu_of": self.job.mfu_precision or ("fp32" if self.job.precision == "fp32" else "bf16"),
                "collectives_s": {k: _r(v) for k, v in s.collectives_s.items()},
                "collective_tiers": s.collective_tier,
                "scaling_efficiency": _r(s.scaling_efficiency),
            },
            "tokens_per_s": _r(s.tokens_per_s),
            "tokens_per_s_per_gpu": _r(s.tokens_per_s / self.job.gpus),
            "checkpoint_gb": _gb(self.checkpoint_bytes),
            "checkpoint_write_s": None if self.checkpoint_write_s is None else _r(self.checkpoint_write_s),
            "checkpoint_limited_by": None if self.checkpoint_rate_gbs is None else self.checkpoint_rate_gbs[1],
            "run_days": None if hours is None else _r(hours / 24),
            "run_cost": None if cost is None else _r(cost),
            "currency": self.currency or None,
        }


@dataclass(frozen=True)
class InferenceFit:
    index: int
    service: InferenceService
    shape: Shape
    hw: Hardware
    memory: InferenceMemory
    speed: InferenceSpeed
    gpu_hour_cost: float | None
    pue: float
    currency: str

    @property
    def name(self) -> str:
        return self.service.name

    @property
    def fits(self) -> bool:
        return self.memory.total <= self.memory.usable

    @property
    def replica_gpus(self) -> int:
        """GPUs of one replica, its disaggregated prefill pool included."""
        return self.memory.gpus + self.speed.prefill_pool_gpus

    @property
    def joules_per_token(self) -> float:
        """Facility energy per output token at full concurrency: IT power of the replica x PUE / output tokens/s
        (prefill included)."""
        return self.replica_gpus * self.hw.gpu_w * self.pue / self.speed.tokens_per_s_replica

    def as_dict(self) -> dict[str, Any]:
        m, s, svc = self.memory, self.speed, self.service
        cost = per_million_tokens(self.replica_gpus, self.gpu_hour_cost, s.tokens_per_s_replica)
        average = svc.average_context
        at_average = None
        if m.kv_per_token:
            at_average = max(0, int((m.usable - m.weights) // (m.kv_per_token * m.kv_copies * average)))
        fields: dict[str, Any] = {
            "kind": "inference",
            "gpu": self.hw.gpu_key,
            "scale_up_link": self.hw.scale_up_link or None,
            "gpus": self.replica_gpus * svc.replicas,
            "layout": {
                "replicas": svc.replicas,
                "gpus_per_replica": m.gpus,
                "tensor": s.tensor_parallel,
                "expert": svc.expert_parallel,
                "pipeline": svc.pipeline_parallel,
                "prefill_gpus": s.prefill_pool_gpus or None,
            },
            "params_b": _r(self.shape.params / 1e9),
            "active_params_b": _r(self.shape.active_params / 1e9),
            "memory_gb": {
                "weights": _gb(m.weights),
                "kv_cache": _gb(m.kv_total),
                "per_gpu": _gb(m.per_gpu),
                "usable": _gb(m.usable),
            },
            "kv_bytes_per_token": None if m.kv_per_token is None else int(m.kv_per_token),
            "kv_gb_per_session": None if m.kv_per_session is None else _gb(m.kv_per_session),
            "concurrency": m.concurrency,
            "max_concurrency": m.max_concurrency,
            "max_concurrency_at_average_context": at_average,
            "prefix_cache_hit_rate": svc.prefix_cache_hit_rate,
            "tokens_per_verification_step": _r(s.tokens_per_step),
            "attention_kernel": svc.attention_kernel,
            "kv_reads_per_step": _r(s.kv_reads),
            "ttft_ms": _r(s.ttft_s * 1000),
            "prompt_tokens": _tokens(s.prompt_tokens),
            "output_tokens": _tokens(s.output_tokens),
            "tensor_parallel": {"degree": s.tensor_parallel, "tier": s.tp_tier or None},
            "decode": {
                "tokens_per_s_session": _r(s.tokens_per_s_session),
                "tokens_per_s_replica": _r(s.tokens_per_s_replica),
                "tokens_per_s_service": _r(s.tokens_per_s_replica * svc.replicas),
                "bound": "memory" if s.decode_memory_bound else "compute",
            },
            "joules_per_token": _r(self.joules_per_token),
            "cost_per_million_tokens": None if cost is None else _r(cost),
            "currency": self.currency or None,
        }
        if s.mix:
            fields["ttft_prompt_tokens"] = s.ttft_prompt_tokens
            fields["request_mix"] = [
                {"share": share, "prompt_tokens": p, "output_tokens": o, "ttft_ms": _r(ttft * 1000)}
                for share, p, o, ttft in s.mix
            ]
        return fields


WorkloadFit = TrainingFit | InferenceFit


def _r(x: float) -> float:
    """Three significant figures: the inputs (MFU, efficiency) are not known better."""
    return float(f"{x:.3g}")


def _tokens(x: float) -> float:
    """Tokens of a request: whole for one kind of request, a mix's average to one decimal."""
    return int(x) if x == int(x) else round(x, 1)


def _gb(x: float) -> float:
    return _r(x / GB)


def fit_workloads(bp: Blueprint, catalog: Catalog, topo: Topology | None = None) -> list[WorkloadFit]:
    """Figures of every workload; `topo` tells which collectives stay under one leaf (without it, all traffic
    between nodes is taken to cross the fabric's upper tiers)."""
    fits: list[WorkloadFit] = []
    pue = bp.site.pue or 1.0
    currency = bp.prices.currency if bp.prices else ""
    for i, workload in enumerate(bp.workloads):
        hw = hardware_for(bp, catalog, workload, topo)
        if hw is None:
            continue
        shape = resolve_shape(workload, catalog)
        hour = gpu_hour_cost(bp.prices, hw.gpu_w, pue)
        if isinstance(workload, TrainingJob):
            usable = hw.gpu.memory_gb * GB * (1 - workload.memory_headroom)
            fits.append(
                TrainingFit(
                    i,
                    workload,
                    shape,
                    hw,
                    data_parallel(workload),
                    training_memory(workload, shape),
                    training_speed(workload, shape, hw),
                    usable,
                    hour,
                    pue,
                    currency,
                    _checkpoint_storage_gbs(workload, catalog),
                )
            )
        else:
            memory = inference_memory(workload, shape, hw.gpu.memory_gb)
            fits.append(
                InferenceFit(
                    i, workload, shape, hw, memory, inference_speed(workload, shape, hw, memory), hour, pue, currency
                )
            )
    return fits


def _checkpoint_storage_gbs(job: TrainingJob, catalog: Catalog) -> float | None:
    storage = job.checkpoint_storage
    if storage is None:
        return None
    entry = catalog.get(storage.model, StorageSystem)  # references.py reports an unknown key (CF-REF-002)
    return None if entry is None else storage.count * entry.write_gbs


def fits_as_dict(fits: list[WorkloadFit]) -> dict[str, Any]:
    """`fit --format json` and the `workloads` section of the plan: figures by workload name."""
    return {f.name: f.as_dict() for f in fits}
