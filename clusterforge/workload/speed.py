"""Time: training step from FLOPs at the stated MFU and collectives per parallel dimension from the bandwidth
of the tier each crosses; inference time to first token from compute and decode from HBM bandwidth."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.workload import InferenceService, TrainingJob
from .hardware import Hardware
from .memory import InferenceMemory, data_parallel, params_per_gpu
from .shape import BYTES, Shape


@dataclass(frozen=True)
class TrainingSpeed:
    tokens_per_step: float
    micro_batches: float
    """Micro batches each pipeline runs per step."""
    flops_per_token: float
    compute_s: float
    """Step time at the stated MFU."""
    collectives_s: dict[str, float]
    """Time of each parallel dimension's collectives per step, were none of it overlapped with compute."""
    collective_tier: dict[str, str]
    """The link each dimension's collectives cross: nvlink, leaf (same-rail GPUs of one scalable unit) or spine
    (the fabric's upper tiers, at its oversubscription)."""

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / self.compute_s

    @property
    def scaling_efficiency(self) -> float:
        """compute / (compute + collectives): the share left when nothing overlaps (a lower bound)."""
        return self.compute_s / (self.compute_s + sum(self.collectives_s.values()))


def training_flops_per_token(job: TrainingJob, shape: Shape) -> float:
    """6N + 12*L*H*Q*T (PaLM, Chowdhery et al. 2022, Appendix B): N active parameters, L layers, H heads of
    dimension Q, T the sequence length."""
    width = shape.attention_width()
    attention = 0.0 if width is None or shape.dims is None else 12 * shape.dims.layers * width * job.sequence_length
    return 6 * shape.active_params + attention


def training_speed(job: TrainingJob, shape: Shape, hw: Hardware) -> TrainingSpeed:
    dp = data_parallel(job)
    tokens = float(job.global_batch_tokens or dp * job.micro_batch * job.sequence_length)
    micro_batches = tokens / (dp * job.micro_batch * job.sequence_length)
    flops = training_flops_per_token(job, shape)
    compute = flops * tokens / (job.gpus * hw.peak_tflops(job.precision) * 1e12 * job.mfu)
    times, tiers = _collectives(job, shape, hw, dp, micro_batches)
    return TrainingSpeed(tokens, micro_batches, flops, compute, times, tiers)


def _collectives(
    job: TrainingJob, shape: Shape, hw: Hardware, dp: int, micro_batches: float
) -> tuple[dict[str, float], dict[str, str]]:
    """Bytes each GPU sends per step for each dimension (ring collectives: (n-1)/n of the buffer per
    all-gather or reduce-scatter, twice that per all-reduce) over the bandwidth of the link it crosses."""
    t, p, c, e = job.tensor_parallel, job.pipeline_parallel, job.context_parallel, job.expert_parallel
    fabric_gbs = hw.nic_gbps_per_gpu / 8
    times: dict[str, float] = {}
    tiers: dict[str, str] = {}

    def add(name: str, group: int, inner: int, volume: float) -> None:
        """`inner`: GPUs of lower dimensions laid out before this one. The group stays on NVLink while inner x
        group fits one NVLink domain, under one rail leaf while its nodes fit one scalable unit, and otherwise
        crosses the upper tiers at bandwidth / oversubscription."""
        if group <= 1 or volume <= 0:
            return
        nodes = -(-inner * group // hw.gpus_per_node)
        if inner * group <= hw.nvlink_domain and hw.nvlink_gbs > 0:
            gbs, tier = hw.nvlink_gbs, "nvlink"
        elif nodes <= hw.leaf_nodes:
            gbs, tier = fabric_gbs, "leaf"
        else:
            gbs, tier = fabric_gbs / hw.oversubscription, "spine"
        times[name] = volume / (gbs * 1e9)
        tiers[name] = tier

    state = 4.0 if job.precision == "fp32" else 2.0
    d = shape.dims
    if d is not None:
        s = job.sequence_length / c
        sbh = s * job.micro_batch * d.hidden * state
        layers = d.layers / p
        # tensor (with sequence parallel): 4 all-gathers and 4 reduce-scatters of s*b*h per layer, fwd + bwd
        add("tensor", t, 1, 8 * (t - 1) / t * sbh * layers * micro_batches)
        # context (ring attention): K and V of the other c-1 chunks, forward once and backward twice
        kv = s * job.micro_batch * 2 * d.kv_heads * d.head_dim * state
        add("context", c, t, 3 * (c - 1) * kv * layers * micro_batches)
        # expert: dispatch and combine all-to-all of each token's k copies, forward and backward
        k = d.experts_per_token or 0
        add("expert", e, t * c, 4 * (e - 1) / e * sbh * k / t * layers * micro_batches)
        # pipeline: activations forward and their gradients backward at each stage boundary
        add("pipeline", p, t * c, 2 * sbh / t * micro_batches)
    grads = params_per_gpu(job, shape) * state
    rounds = 3 if job.zero_stage == 3 else 2  # reduce-scatter + all-gather (+ the weights' all-gather of ZeRO-3)
    add("data", dp, t * c * p, rounds * (dp - 1) / dp * grads)
    return times, tiers


@dataclass(frozen=True)
class InferenceSpeed:
    prompt_tokens: int
    ttft_s: float
    """Prefill of one prompt alone on the replica."""
    decode_step_s: float
    """One decode step of all sessions at full context: the larger of HBM and compute time."""
    decode_memory_bound: bool
    concurrency: int

    @property
    def tokens_per_s_session(self) -> float:
        return 1 / self.decode_step_s

    @property
    def tokens_per_s_replica(self) -> float:
        return self.concurrency / self.decode_step_s


def prefill_flops(shape: Shape, prompt: int) -> float:
    """2*N_active per token plus causal attention, 2*L*s^2*H*Q over the prompt (half of QK^T and AV)."""
    width = shape.attention_width()
    attention = 0.0 if width is None or shape.dims is None else 2 * shape.dims.layers * prompt**2 * width
    return 2 * shape.active_params * prompt + attention


def weights_read_per_step(service: InferenceService, shape: Shape, concurrency: int) -> float:
    """Dense weights every step; of the experts, those the step's tokens touch: E*(1-(1-k/E)^c) expected."""
    d = shape.dims
    touched = 1.0
    if d is not None and d.experts and d.experts_per_token:
        touched = 1 - (1 - d.experts_per_token / d.experts) ** concurrency
    return (shape.dense_params + shape.expert_params * touched) * BYTES[service.precision]


def inference_speed(service: InferenceService, shape: Shape, hw: Hardware, memory: InferenceMemory) -> InferenceSpeed:
    g, c = memory.gpus, memory.concurrency
    peak = g * hw.peak_tflops(service.precision) * 1e12
    prompt = service.prompt_tokens or service.context_tokens
    ttft = prefill_flops(shape, prompt) / (peak * service.prefill_mfu)
    step_bytes = weights_read_per_step(service, shape, c) + memory.kv_total
    memory_s = step_bytes / (g * hw.gpu.memory_bandwidth_tbs * 1e12 * service.decode_bandwidth_efficiency)
    compute_s = 2 * shape.active_params * c / (peak * service.prefill_mfu)
    return InferenceSpeed(prompt, ttft, max(memory_s, compute_s), memory_s >= compute_s, c)
