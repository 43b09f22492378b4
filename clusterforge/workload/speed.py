"""Time: training step from FLOPs at the stated MFU and collectives per parallel dimension from the bandwidth
of the tier each crosses; inference time to first token from compute and decode from HBM bandwidth."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.workload import InferenceService, TrainingJob
from .hardware import Hardware
from .memory import InferenceMemory, data_parallel, sharding_groups, split_params_per_gpu
from .shape import BYTES, Shape


@dataclass(frozen=True)
class TrainingSpeed:
    tokens_per_step: float
    micro_batches: float
    """Micro batches each pipeline runs per step."""
    flops_per_token: float
    compute_s: float
    """Step time at the stated MFU, the pipeline bubble included."""
    collectives_s: dict[str, float]
    """Time of each parallel dimension's collectives per step, were none of it overlapped with compute."""
    collective_tier: dict[str, str]
    """The link each dimension's collectives cross: nvlink, leaf (same-rail GPUs of one scalable unit) or spine
    (the fabric's upper tiers, at its oversubscription)."""
    work_s: float = 0.0
    """Of compute_s, the FLOPs at the stated MFU; the rest is the pipeline bubble."""

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / self.compute_s

    @property
    def scaling_efficiency(self) -> float:
        """compute / (compute + collectives): the share left when nothing overlaps (a lower bound)."""
        return self.compute_s / (self.compute_s + sum(self.collectives_s.values()))


def training_flops_per_token(job: TrainingJob, shape: Shape) -> float:
    """6N + 6*L*H*Q*T: PaLM's 6N + 12*L*H*Q*T (Chowdhery et al. 2022, Appendix B; N active parameters, L layers,
    H heads of dimension Q, T the sequence length) with causal attention, which computes half of QK^T and AV
    (FlashAttention skips the masked blocks), as prefill counts it."""
    width = shape.attention_width()
    attention = 0.0 if width is None or shape.dims is None else 6 * shape.dims.layers * width * job.sequence_length
    return 6 * shape.active_params + attention


def pipeline_bubble(job: TrainingJob, micro_batches: float) -> float:
    """Idle share of a 1F1B pipeline step relative to its compute: (p - 1) / m for p stages and m micro batches
    per pipeline (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
    Megatron-LM", section 2.2.1)."""
    p = job.pipeline_parallel
    return 0.0 if p <= 1 else (p - 1) / max(micro_batches, 1.0)


def training_speed(job: TrainingJob, shape: Shape, hw: Hardware) -> TrainingSpeed:
    dp = data_parallel(job)
    tokens = float(job.global_batch_tokens or dp * job.micro_batch * job.sequence_length)
    micro_batches = tokens / (dp * job.micro_batch * job.sequence_length)
    flops = training_flops_per_token(job, shape)
    work = (
        flops
        * tokens
        / (
            job.gpus
            * hw.peak_tflops(job.mfu_precision or ("fp32" if job.precision == "fp32" else "bf16"))
            * 1e12
            * job.mfu
        )
    )
    compute = work * (1 + pipeline_bubble(job, micro_batches))
    times, tiers = _collectives(job, shape, hw, dp, micro_batches)
    return TrainingSpeed(tokens, micro_batches, flops, compute, times, tiers, work)


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
        # context (ring attention): K and V of the other c-1 chunks, forward once and backward twice; each GPU
        # holds the KV heads of its tensor-parallel slice, k_v / t (at least one)
        kv_heads = max(1.0, d.kv_heads / t) if d.kv_latent_dim is None else d.kv_latent_dim / (2 * d.head_dim)
        kv = s * job.micro_batch * 2 * kv_heads * d.head_dim * state
        add("context", c, t, 3 * (c - 1) * kv * layers * micro_batches)
        # expert: dispatch and combine all-to-all of each token's k copies, forward and backward
        k = d.experts_per_token or 0
        add("expert", e, t * c, 4 * (e - 1) / e * sbh * k / t * layers * micro_batches)
        # pipeline: activations forward and their gradients backward at each stage boundary
        add("pipeline", p, t * c, 2 * sbh / t * micro_batches)
    # data: each state reduced over the group that holds it, dense over data x context, experts over their
    # expert-data-parallel group
    dense, experts = split_params_per_gpu(job, shape)
    dense_group, expert_group = sharding_groups(job)
    rounds = 3 if job.zero_stage == 3 else 2  # reduce-scatter + all-gather (+ the weights' all-gather of ZeRO-3)
    volume = rounds * state * ((dense_group - 1) / dense_group * dense + (expert_group - 1) / expert_group * experts)
    add("data", dp, t * c * p, volume)
    return times, tiers


@dataclass(frozen=True)
class InferenceSpeed:
    prompt_tokens: int
    output_tokens: int
    ttft_s: float
    """Prefill of one prompt alone on the replica."""
    decode_step_s: float
    """One decode step of all sessions at full context (the worst case): the larger of HBM and compute time."""
    decode_step_avg_s: float
    """One decode step of all sessions at the average context of a request, prompt + output / 2."""
    decode_memory_bound: bool
    concurrency: int
    tensor_parallel: int = 1
    tp_tier: str = ""
    """The link the tensor-parallel all-reduces cross (nvlink, pcie, leaf, spine; empty without tensor parallel)."""
    prefill_comm_s: float = 0.0
    """Of the time to first token, the tensor-parallel all-reduces and expert-parallel all-to-alls of the prompt."""
    decode_comm_s: float = 0.0
    """Of each decode step, the tensor-parallel all-reduces and expert-parallel all-to-alls of the batch."""

    @property
    def request_s(self) -> float:
        """GPU time of the replica that one request takes: its prefill and its share of the batched decode steps."""
        return self.ttft_s + self.output_tokens * self.decode_step_avg_s / self.concurrency

    @property
    def tokens_per_s_replica(self) -> float:
        """Output tokens per second with every session busy: each request's prefill plus its output steps, which
        it shares with the other sessions (B x OSL tokens in B x prefill + OSL x decode step)."""
        return self.output_tokens / self.request_s

    @property
    def tokens_per_s_session(self) -> float:
        """Output tokens per second one session sees at full load: the replica's rate shared by its sessions
        (prefills of the other requests interrupt its decode steps)."""
        return self.tokens_per_s_replica / self.concurrency

    @property
    def decode_tokens_per_s_session(self) -> float:
        """Output rate of a session between prefills, at full context: 1 / decode step."""
        return 1 / self.decode_step_s


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


ACTIVATION_BYTES = 2.0
"""Tensor-parallel all-reduces carry 16-bit activations, whatever the weights' precision (TensorRT-LLM and vLLM
reduce in the model's fp16/bf16 dtype; FP8 and FP4 quantize only the GEMM inputs)."""


def tensor_parallel_allreduce_s(shape: Shape, tokens: float, tp: int, gbs: float) -> float:
    """Megatron-style tensor parallel reduces each layer's attention and MLP outputs: 2 all-reduces of
    tokens x hidden x 2 bytes per layer (Shoeybi et al. 2019, Megatron-LM, section 3), each a ring moving
    2(t-1)/t of the buffer per GPU (reduce-scatter + all-gather) at the link's bandwidth per direction."""
    if tp <= 1 or shape.dims is None or gbs <= 0:
        return 0.0
    volume = 2 * shape.dims.layers * tokens * shape.dims.hidden * ACTIVATION_BYTES
    return 2 * (tp - 1) / tp * volume / (gbs * 1e9)


DISPATCH_COMBINE_BYTES = 1.0 + 2.0
"""Expert-parallel all-to-all per token copy and hidden value: dispatch in FP8, combine in BF16 (DeepSeek-V3
technical report, section 3.3.2, and its DeepEP kernels)."""


def expert_alltoall_s(shape: Shape, tokens: float, ep: int, gbs: float) -> float:
    """Each MoE layer sends every token's k copies to the GPUs holding their experts and brings the results back:
    with the tokens spread over the ep GPUs, each GPU sends (ep - 1)/ep of its tokens/ep x k copies of h values
    (every layer counted as an MoE layer: an upper bound)."""
    d = shape.dims
    if ep <= 1 or d is None or not d.experts_per_token or gbs <= 0:
        return 0.0
    volume = d.layers * tokens / ep * d.experts_per_token * d.hidden * DISPATCH_COMBINE_BYTES * (ep - 1) / ep
    return volume / (gbs * 1e9)


def replica_tensor_parallel(service: InferenceService, gpus: int) -> int:
    if service.tensor_parallel is not None and gpus == service.gpus_per_replica:
        return service.tensor_parallel
    return max(1, gpus // service.expert_parallel)


def inference_speed(service: InferenceService, shape: Shape, hw: Hardware, memory: InferenceMemory) -> InferenceSpeed:
    g, c = memory.gpus, max(memory.concurrency, 1)
    peak = g * hw.peak_tflops(service.precision) * 1e12
    prompt, output = service.lengths
    tp = replica_tensor_parallel(service, g)
    tier, link_gbs = hw.tensor_parallel_link(tp) if tp > 1 else ("", 0.0)
    prefill_comm = tensor_parallel_allreduce_s(shape, prompt, tp, link_gbs)
    decode_comm = tensor_parallel_allreduce_s(shape, c, tp, link_gbs)
    ep = service.expert_parallel
    if ep > 1:
        ep_tier, ep_gbs = hw.tensor_parallel_link(g)
        tier = tier or ep_tier
        prefill_comm += expert_alltoall_s(shape, prompt, ep, ep_gbs)
        decode_comm += expert_alltoall_s(shape, c, ep, ep_gbs)
    ttft = prefill_flops(shape, prompt) / (peak * service.prefill_mfu) + prefill_comm
    bandwidth = g * hw.gpu.memory_bandwidth_tbs * 1e12 * service.decode_bandwidth_efficiency
    weights = weights_read_per_step(service, shape, c)
    kv_token = (memory.kv_per_token or 0.0) * memory.kv_copies * c
    compute_s = 2 * shape.active_params * c / (peak * service.prefill_mfu)
    worst = (weights + kv_token * service.context_tokens) / bandwidth
    average = (weights + kv_token * (prompt + output / 2)) / bandwidth
    return InferenceSpeed(
        prompt,
        output,
        ttft,
        max(worst, compute_s) + decode_comm,
        max(average, compute_s) + decode_comm,
        worst >= compute_s,
        c,
        tp,
        tier,
        prefill_comm,
        decode_comm,
    )
