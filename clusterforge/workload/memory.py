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
    dense, experts = split_params_per_gpu(job, shape)
    return dense + experts


def split_params_per_gpu(job: TrainingJob, shape: Shape) -> tuple[float, float]:
    """(dense, expert) parameters of one GPU: D / (t x p) and E*e / (t x p x x)."""
    model_split = job.tensor_parallel * job.pipeline_parallel
    return shape.dense_params / model_split, shape.expert_params / (model_split * job.expert_parallel)


def sharding_groups(job: TrainingJob) -> tuple[int, int]:
    """(dense, expert) data-parallel groups ZeRO shards over. Every GPU of the data x context parallel group holds
    the same dense slice (Megatron-LM's distributed optimizer shards over data x context parallel); an expert's
    slice is held only by the ranks of its expert-data-parallel group, data x context / expert parallel
    (Megatron-Core MoE: expert_data_parallel_size)."""
    group = data_parallel(job) * job.context_parallel
    return group, max(1, group // job.expert_parallel)


def training_memory(
    job: TrainingJob,
    shape: Shape,
    *,
    tensor_parallel: int | None = None,
    pipeline_parallel: int | None = None,
    zero_stage: int | None = None,
    recompute: str | None = None,
) -> TrainingMemory:
    """Memory of one GPU of the job; keyword arguments try another layout (for hints and --suggest)."""
    job = job.model_copy(
        update={
            k: v
            for k, v in (
                ("tensor_parallel", tensor_parallel),
                ("pipeline_parallel", pipeline_parallel),
                ("zero_stage", zero_stage),
                ("recompute", recompute),
            )
            if v is not None
        }
    )
    dense, experts = split_params_per_gpu(job, shape)
    dense_group, expert_group = sharding_groups(job)
    state_bytes = 4.0 if job.precision == "fp32" else 2.0  # fp8 training keeps bf16 weights and gradients
    optimizer_bytes = OPTIMIZER_BYTES[job.optimizer] - (4.0 if job.precision == "fp32" else 0.0)

    def sharded(bytes_per_param: float, stage: int) -> float:
        if job.zero_stage >= stage:
            return bytes_per_param * (dense / dense_group + experts / expert_group)
        return bytes_per_param * (dense + experts)

    weights, grads, optim = sharded(state_bytes, 3), sharded(state_bytes, 2), sharded(optimizer_bytes, 1)
    return TrainingMemory(dense + experts, weights, grads, optim, activations(job, shape))


def mlp_width(shape: Shape) -> float | None:
    """The MLP width f one token passes through (intermediate_size; k experts' together with a mixture of
    experts), from the parameter count: per layer, A/L less the embeddings' share is 2h^2 + 2*h*k_v*d of
    attention projections plus 3*h*f of a gated (SwiGLU) MLP. Llama 3 70B: (70.55e9 - 2 x 128256 x 8192) / 80
    = 855.6M, less 151.0M of attention, / (3 x 8192) = 28,672, its intermediate_size."""
    d = shape.dims
    if d is None:
        return None
    per_layer = (shape.active_params - 2 * d.vocab * d.hidden) / d.layers
    attention = 2 * d.hidden * d.hidden + 2 * d.hidden * d.kv_heads * d.head_dim
    return max(0.0, (per_layer - attention) / (3 * d.hidden))


def layer_activation_bytes(shape: Shape, tokens: float) -> float | None:
    """Bytes one layer keeps for its backward pass per `tokens` tokens with FlashAttention-style kernels, 16-bit,
    no dropout (Llama, DeepSeek). Derived as Korthikanti et al. 2022 do (section 4.1), term by term: the two
    RMSNorm inputs 2h + 2h; attention: QKV projection input 2h, Q 2h, K and V 2 x 2h*k_v/a, the attention
    output (out-projection input) 2h; FlashAttention keeps no s x s scores, only each row's log-sum-exp
    (4 bytes per head, 4a); the gated MLP: its input 2h, gate and up outputs 2f + 2f, their product (down
    projection input) 2f. Sum: (12 + 4*k_v/a)*h + 6f + 4a bytes per token. Llama 3 70B: 33.5h + 256 per token
    (Korthikanti's Table 2 gives 34h + 5*a*s for GPT with softmax scores and dropout masks stored)."""
    d = shape.dims
    f = mlp_width(shape)
    if d is None or f is None:
        return None
    return tokens * ((12 + 4 * d.kv_heads / d.heads) * d.hidden + 6 * f + 4 * d.heads)


def activations(job: TrainingJob, shape: Shape) -> float | None:
    """Activations of the first pipeline stage, which holds `pipeline_parallel` micro batches of its layers
    (`first_stage_layers`, default L/p rounded up) under 1F1B, about L layers' worth. With FlashAttention there
    are no attention scores to drop, so `none` and `selective` keep the same (Korthikanti's selective
    recomputation recomputes exactly the scores): each layer's activations / t (sequence parallel splits the
    rest); `full` keeps each layer's 16-bit input, 2*s*b*h/t, plus one layer's activations while it is
    recomputed."""
    d = shape.dims
    s = job.sequence_length / job.context_parallel
    per_layer = layer_activation_bytes(shape, s * job.micro_batch)
    if d is None or per_layer is None:
        return None
    t, p = job.tensor_parallel, job.pipeline_parallel
    stage = job.first_stage_layers or -(-d.layers // p)
    held = p * stage  # p micro batches in flight, each through the first stage's layers
    if job.recompute in ("none", "selective"):
        return held * per_layer / t
    return held * 2 * s * job.micro_batch * d.hidden / t + per_layer / t


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
    return max(1, g // (service.expert_parallel * service.pipeline_parallel))


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
