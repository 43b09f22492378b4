"""Memory per GPU: training states and activations (ZeRO, Korthikanti et al.), inference weights and KV cache.

Bytes, not GB, throughout; GB are 1e9 bytes, as in the GPU data sheets. docs/workloads.md has the formulas.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.workload import InferenceService, Precision, TrainingJob
from .shape import BYTES, Shape

OPTIMIZER_BYTES = {"adam": 12.0, "sgd": 8.0}
"""Mixed precision: an fp32 master copy (4) plus Adam's momentum and variance (4 + 4), or SGD's momentum (4)."""


@dataclass(frozen=True)
class TrainingMemory:
    params_per_gpu: float
    weights: float
    gradients: float
    optimizer: float
    activations: float | None
    """None when the model's shape is unknown (only model_params_b given)."""

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + (self.activations or 0.0)


def data_parallel(job: TrainingJob) -> int:
    """The data-parallel degree: given, or gpus / (tensor x pipeline x context); at least 1."""
    if job.data_parallel is not None:
        return job.data_parallel
    return max(1, job.gpus // (job.tensor_parallel * job.pipeline_parallel * job.context_parallel))


def params_per_gpu(job: TrainingJob, shape: Shape) -> float:
    """Dense parameters split over tensor x pipeline parallel, experts also over expert parallel."""
    model_split = job.tensor_parallel * job.pipeline_parallel
    return shape.dense_params / model_split + shape.expert_params / (model_split * job.expert_parallel)


def training_memory(
    job: TrainingJob,
    shape: Shape,
    *,
    tensor_parallel: int | None = None,
    pipeline_parallel: int | None = None,
    zero_stage: int | None = None,
) -> TrainingMemory:
    """Memory of one GPU of the job; keyword arguments try another layout (for hints and --suggest)."""
    job = job.model_copy(
        update={
            k: v
            for k, v in (
                ("tensor_parallel", tensor_parallel),
                ("pipeline_parallel", pipeline_parallel),
                ("zero_stage", zero_stage),
            )
            if v is not None
        }
    )
    dp = data_parallel(job)
    n = params_per_gpu(job, shape)
    state_bytes = 4.0 if job.precision == "fp32" else 2.0  # fp8 training keeps bf16 weights and gradients
    optimizer_bytes = OPTIMIZER_BYTES[job.optimizer] - (4.0 if job.precision == "fp32" else 0.0)
    weights, grads, optim = n * state_bytes, n * state_bytes, n * optimizer_bytes
    if job.zero_stage >= 1:
        optim /= dp
    if job.zero_stage >= 2:
        grads /= dp
    if job.zero_stage >= 3:
        weights /= dp
    return TrainingMemory(n, weights, grads, optim, activations(job, shape))


def activations(job: TrainingJob, shape: Shape) -> float | None:
    """Activations of the first pipeline stage, which holds `pipeline_parallel` micro batches of its L/p
    layers under 1F1B, i.e. L layers' worth; per layer (Korthikanti et al. 2022, Table 2, with sequence
    parallelism): s*b*h*(34 + 5*a*s/h)/t bytes without recomputation, s*b*h*34/t selective, 2*s*b*h/t full."""
    d = shape.dims
    if d is None:
        return None
    s = job.sequence_length / job.context_parallel
    sbh = s * job.micro_batch * d.hidden
    t = job.tensor_parallel
    if job.recompute == "none":
        per_layer = sbh * (34 + 5 * d.heads * s / d.hidden) / t
        return d.layers * per_layer
    if job.recompute == "selective":
        return d.layers * sbh * 34 / t
    # full: each layer's input is kept; one layer's activations live again while it is recomputed
    return d.layers * 2 * sbh / t + sbh * 34 / t


@dataclass(frozen=True)
class InferenceMemory:
    gpus: int
    weights: float
    """All weights of one replica."""
    kv_per_token: float | None
    kv_per_session: float | None
    kv_copies: float
    """How many times each KV value is held in the replica: tensor parallel beyond the KV heads repeats heads
    (and latent attention repeats its cache on every tensor-parallel GPU)."""
    usable: float
    """Usable memory of the replica's GPUs together."""
    concurrency: int

    @property
    def kv_total(self) -> float:
        return (self.kv_per_session or 0.0) * self.kv_copies * self.concurrency

    @property
    def total(self) -> float:
        return self.weights + self.kv_total

    @property
    def per_gpu(self) -> float:
        return self.total / self.gpus

    @property
    def max_concurrency(self) -> int | None:
        """Sessions at full context that fit next to the weights."""
        if not self.kv_per_session:
            return None
        return max(0, int((self.usable - self.weights) // (self.kv_per_session * self.kv_copies)))


def kv_precision(service: InferenceService) -> Precision:
    if service.kv_precision is not None:
        return service.kv_precision
    return service.precision if BYTES[service.precision] >= 1 else "fp8"


def tensor_parallel(service: InferenceService, gpus: int | None = None) -> int:
    g = gpus if gpus is not None else service.gpus_per_replica
    if service.tensor_parallel is not None and gpus is None:
        return service.tensor_parallel
    return max(1, g // service.expert_parallel)


def inference_memory(
    service: InferenceService,
    shape: Shape,
    gpu_memory_gb: float,
    *,
    gpus: int | None = None,
    concurrency: int | None = None,
) -> InferenceMemory:
    """Memory of one replica; keyword arguments try another replica size or concurrency."""
    g = gpus if gpus is not None else service.gpus_per_replica
    tp = tensor_parallel(service, gpus)
    values = shape.kv_values_per_token()
    per_token = None if values is None else values * BYTES[kv_precision(service)]
    copies = 1.0
    if shape.dims is not None:
        copies = float(tp) if shape.dims.kv_latent_dim else max(1.0, tp / shape.dims.kv_heads)
    usable = g * gpu_memory_gb * 1e9 * (1 - service.memory_headroom)
    return InferenceMemory(
        g,
        shape.params * BYTES[service.precision],
        per_token,
        None if per_token is None else per_token * service.context_tokens,
        copies,
        usable,
        concurrency if concurrency is not None else service.concurrent_requests,
    )
