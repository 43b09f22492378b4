"""Time: training step from FLOPs at the stated MFU and collectives per parallel dimension from the bandwidth
of the tier each crosses; inference time to first token from compute and decode from HBM bandwidth."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.workload import InferenceService, TrainingJob
from .hardware import Hardware
from .memory import InferenceMemory, data_parallel, sharding_groups, split_params_per_gpu, tensor_parallel
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
    """Of compute_s, the model FLOPs at the stated MFU; the rest is recomputation and the pipeline bubble."""

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


def recompute_factor(job: TrainingJob) -> float:
    """Full recomputation runs every layer's forward pass twice: 8N instead of 6N FLOPs per token for the same
    model FLOPs, 4/3 the time (Korthikanti et al. 2022, section 5: "about 33%" overhead). Selective recomputation
    of the attention scores costs nothing with FlashAttention, which recomputes them in its backward pass anyway."""
    return 4 / 3 if job.recompute == "full" else 1.0


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
    compute = work * recompute_factor(job) * (1 + pipeline_bubble(job, micro_batches))
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
            gbs, tier = hw.nvlink_collective_gbs, "nvlink"
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
    prompt_tokens: float
    """Prompt tokens of a request: the typical one's, or the mix's average."""
    output_tokens: float
    """Output tokens of a request: the typical one's, or the mix's average."""
    ttft_s: float
    """Time to first token of one prompt alone (the longest of a mix): its prefill (the uncached part) through every
    pipeline stage, the all-reduces, all-to-alls and stage hand-offs, and with disaggregation the KV cache's
    transfer."""
    decode_step_s: float
    """Time per output token of a session with all sessions at full context (the worst case)."""
    decode_step_avg_s: float
    """Time per output token of a session at the average context of a request, prompt + output / 2."""
    decode_memory_bound: bool
    concurrency: int
    tensor_parallel: int = 1
    tp_tier: str = ""
    """The link the tensor-parallel all-reduces cross (nvlink, pcie, leaf, spine; empty without tensor parallel)."""
    prefill_comm_s: float = 0.0
    """Of the time to first token, the all-reduces, all-to-alls, stage hand-offs and KV transfer."""
    decode_comm_s: float = 0.0
    """Of each decode step, the all-reduces, all-to-alls and stage hand-offs."""
    prefill_busy_s: float = 0.0
    """GPU time of the replica (or of its prefill pool) one request's prefill occupies: its time to first token
    over the pipeline stages it overlaps with other prompts."""
    prefill_pool_gpus: int = 0
    """GPUs of the disaggregated prefill pool per replica; 0 when prefill and decode share the replica."""
    tokens_per_step: float = 1.0
    """Output tokens a verification step yields per session (speculative decoding), else 1."""
    kv_reads: float = 1.0
    """Times a decode step reads each KV value the replica holds: heads / kv_heads with a per-query-head kernel."""
    ttft_prompt_tokens: int = 0
    """The prompt `ttft_s` is the time of: the typical one, or the mix's longest."""
    mix: tuple[tuple[float, int, int, float], ...] = ()
    """With a request mix, each kind's (share, prompt, output, time to first token); empty without one."""

    @property
    def request_s(self) -> float:
        """Replica time per request: shared GPUs run its prefill and its share of the batched decode steps; a
        disaggregated replica's rate is the slower of its two pools."""
        decode = self.output_tokens * self.decode_step_avg_s / self.concurrency
        if self.prefill_pool_gpus:
            return max(decode, self.prefill_busy_s)
        return self.prefill_busy_s + decode

    @property
    def tokens_per_s_replica(self) -> float:
        """Output tokens per second with every session busy: each request's prefill plus its output steps, which
        it shares with the other sessions (B x OSL tokens in B x prefill + OSL x decode step)."""
        return self.output_tokens / self.request_s

    @property
    def tokens_per_s_session(self) -> float:
        """Output tokens per second one session sees at full load: the replica's rate shared by its sessions
        (prefills of the other requests interrupt its decode steps unless they run on a prefill pool)."""
        return self.tokens_per_s_replica / self.concurrency

    @property
    def decode_tokens_per_s_session(self) -> float:
        """Output rate of a session between prefills, at full context: 1 / decode step."""
        return 1 / self.decode_step_s


def prefill_flops(shape: Shape, prompt: int, cached: float = 0.0) -> float:
    """2*N_active per new token plus causal attention, 2*L*H*Q*(s^2 - c^2) for the prompt's s tokens of which the
    first c are in the prefix cache (half of QK^T and AV; the new tokens still attend to the cached ones)."""
    width = shape.attention_width()
    attention = 0.0 if width is None or shape.dims is None else 2 * shape.dims.layers * (prompt**2 - cached**2) * width
    return 2 * shape.active_params * (prompt - cached) + attention


def weights_read_per_step(service: InferenceService, shape: Shape, concurrency: float) -> float:
    """Dense weights every step; of the experts, those the step's tokens touch: E*(1-(1-k/E)^c) expected."""
    d = shape.dims
    touched = 1.0
    if d is not None and d.experts and d.experts_per_token:
        touched = 1 - (1 - d.experts_per_token / d.experts) ** concurrency
    return (shape.dense_params + shape.expert_params * touched) * BYTES[service.precision]


ACTIVATION_BYTES = 2.0
"""Tensor-parallel all-reduces carry 16-bit activations, whatever the weights' precision (TensorRT-LLM and vLLM
reduce in the model's fp16/bf16 dtype; FP8 and FP4 quantize only the GEMM inputs)."""


ALLREDUCE_LATENCY_S = 35.6e-6
"""Fixed time of one tensor-parallel all-reduce step in serving (synchronisation and the kernels around it),
whatever its size. Derived from a published measurement: NVIDIA NIM LLM benchmarking, "Performance",
Llama-3.3-70b-instruct NIM 1.8.0 on 2 x H100 80G, fp8 TP2, 500 input / 2,000 output tokens, concurrency 1:
inter-token latency 18.91 ms, where reading the weights and KV cache at 80% of HBM bandwidth takes 13.21 ms;
the 5.70 ms left over the 160 all-reduces of a step is 35.6 us each."""


PREFILL_LAYER_S = 153.8e-6
"""Fixed time of each layer in a prefill pass, whatever the prompt's size: the kernel launches and the small
kernels around the GEMMs (norms, rotary embedding, activation quantization), which a decode step replays as a
CUDA graph (TensorRT-LLM captures graphs for decode batches only: DecodeCudaGraphConfig) but a prefill of a
new prompt length launches one by one. Derived from a published measurement: TensorRT-LLM "Performance of
TensorRT-LLM" (v0.5 data), "Low Latency", H100 FP8, batch 1, first-token latency at 128 input tokens: GPT-J 6B
7 ms and LLaMA 7B 7 ms on one GPU (no communication), where reading their 6.05 GB and 6.74 GB of weights at
80% of 3.35 TB/s takes 2.26 ms and 2.51 ms: the 9.23 ms left over their 28 + 32 layers is 153.8 us each."""


DECODE_LAYER_S = 64.7e-6
"""Fixed time of each layer in a decode step whose kernels are launched one by one, not replayed as a CUDA graph
(TensorRT-LLM's GptSession, which ran gptSessionBenchmark's static-batch tables up to v0.8, leaves cuda_graph_mode
off by default). Derived from a published measurement: TensorRT-LLM "Performance of TensorRT-LLM" (v0.5.0), "High
Throughput", H100 FP8, batch 64, 128 in / 2,048 out on one GPU: GPT-J 6B 6,179 and LLaMA 7B 5,367 tokens/s, 21.21 s
and 24.42 s a batch, where the prompts' pass and 2,048 steps reading weights and KV cache at 80% of 3.35 TB/s take
17.65 s and 20.04 s: the 7.95 s left over 2,048 x (28 + 32) layer steps is 64.7 us each."""


NVLS_BUFFER_SHARE = 370 / 275
"""An all-reduce reduced in the NVLink switches (NVLS) takes as long as moving 1.35 times its buffer at NCCL's
effective NVLink rate. Each GPU sends its buffer into the switch once and receives the reduced result once
("eliminating the need to send data multiple times between endpoints", NVIDIA SHARP documentation, Introduction),
but not at the 370 GB/s a ring reaches on H100: "On 8 GPUs, you should reach a peak busBw of ~480GB/s (algbw
~275GB/s)" (NCCL maintainer, NVIDIA/nccl-tests issue #212): the buffer once at 275 GB/s, 370/275 of it at 370 GB/s.
NCCL takes the faster of this and the ring's 2(t-1)/t (at TP2 the ring's 1.0)."""


def tensor_parallel_allreduce_s(
    shape: Shape, tokens: float, tp: int, gbs: float, layers: float | None = None, in_network: bool = False
) -> float:
    """Megatron-style tensor parallel reduces each layer's attention and MLP outputs: 2 all-reduces of
    tokens x hidden x 2 bytes per layer (Shoeybi et al. 2019, Megatron-LM, section 3), each a ring moving
    2(t-1)/t of the buffer per GPU (reduce-scatter + all-gather) at the link's bandwidth per direction, or, where
    the NVLink switches reduce (`in_network`, NVLink SHARP), NVLS_BUFFER_SHARE of it where that is less, plus
    each all-reduce's fixed latency (ALLREDUCE_LATENCY_S), which dominates small decode batches."""
    if tp <= 1 or shape.dims is None or gbs <= 0:
        return 0.0
    n = shape.dims.layers if layers is None else layers
    volume = 2 * n * tokens * shape.dims.hidden * ACTIVATION_BYTES
    share = 2 * (tp - 1) / tp
    if in_network:
        share = min(share, NVLS_BUFFER_SHARE)
    return share * volume / (gbs * 1e9) + 2 * n * ALLREDUCE_LATENCY_S


DISPATCH_COMBINE_BYTES = 1.0 + 2.0
"""Expert-parallel all-to-all per token copy and hidden value: dispatch in FP8, combine in BF16 (DeepSeek-V3
technical report, section 3.3.2, and its DeepEP kernels)."""


def expert_alltoall_s(shape: Shape, tokens: float, ep: int, gbs: float, layers: float | None = None) -> float:
    """Each MoE layer sends every token's k copies to the GPUs holding their experts and brings the results back:
    with the tokens spread over the ep GPUs, each GPU sends (ep - 1)/ep of its tokens/ep x k copies of h values
    (every layer counted as an MoE layer: an upper bound)."""
    d = shape.dims
    if ep <= 1 or d is None or not d.experts_per_token or gbs <= 0:
        return 0.0
    n = d.layers if layers is None else layers
    volume = n * tokens / ep * d.experts_per_token * d.hidden * DISPATCH_COMBINE_BYTES * (ep - 1) / ep
    return volume / (gbs * 1e9)


def speculative_tokens(service: InferenceService) -> float:
    """Expected tokens per verification step with gamma drafted tokens accepted with probability alpha each:
    (1 - alpha^(gamma+1)) / (1 - alpha) (Leviathan et al. 2023, "Fast Inference from Transformers via
    Speculative Decoding", equation 1)."""
    spec = service.speculative
    if spec is None:
        return 1.0
    a, g = spec.acceptance_rate, spec.draft_tokens
    return float(g + 1) if a >= 1 else (1 - a ** (g + 1)) / (1 - a)


@dataclass(frozen=True)
class _Replica:
    """The GPUs of one replica and the links between them."""

    gpus: int
    tp: int
    ep: int
    pp: int
    peak: float
    """FLOP/s of one GPU at the service's precision and prefill_mfu."""
    bandwidth: float
    """Bytes/s of one GPU's HBM at decode_bandwidth_efficiency."""
    tp_tier: str
    tp_gbs: float
    ep_gbs: float
    pp_gbs: float
    tp_in_network: bool = False
    """The tensor-parallel group's all-reduces are reduced in the NVLink switches (NVLink SHARP)."""


def _replica(service: InferenceService, hw: Hardware, gpus: int) -> _Replica:
    tp = tensor_parallel(service, None if gpus == service.gpus_per_replica else gpus)
    ep, pp = service.expert_parallel, service.pipeline_parallel
    tier, tp_gbs = hw.tensor_parallel_link(tp) if tp > 1 else ("", 0.0)
    stage = tp * ep
    ep_gbs = hw.tensor_parallel_link(stage)[1] if ep > 1 else 0.0
    pp_gbs = hw.tensor_parallel_link(stage * pp)[1] if pp > 1 else 0.0
    peak = hw.peak_tflops(service.precision) * 1e12 * service.prefill_mfu
    bandwidth = hw.gpu.memory_bandwidth_tbs * 1e12 * service.decode_bandwidth_efficiency
    in_network = tp > 1 and tier == "nvlink" and hw.nvlink_sharp
    return _Replica(gpus, tp, ep, pp, peak, bandwidth, tier if tp > 1 else "", tp_gbs, ep_gbs, pp_gbs, in_network)


def _handoffs_s(r: _Replica, shape: Shape, tokens: float) -> float:
    """Pipeline stage boundaries: the activations of `tokens` tokens, h x 2 bytes each, at each of the p - 1
    boundaries (point to point at the link the stages span)."""
    if r.pp <= 1 or shape.dims is None or r.pp_gbs <= 0:
        return 0.0
    return (r.pp - 1) * tokens * shape.dims.hidden * ACTIVATION_BYTES / (r.pp_gbs * 1e9)


def _prefill(
    service: InferenceService, shape: Shape, r: _Replica, prompt: int, prompts: int = 1
) -> tuple[float, float]:
    """(compute, communication) seconds of one forward pass over `prompts` prompts together: their FLOPs on one
    stage's GPUs (a prompt passes the stages in turn), or reading the weights once where that takes longer (short
    prompts), plus the fixed time of each layer the pass goes through (PREFILL_LAYER_S); the all-reduces and
    all-to-alls of their uncached tokens through all layers, the hand-offs. The weights, the fixed time and each
    all-reduce's latency are paid once per pass, whatever the prompts it carries."""
    cached = prompt * service.prefix_cache_hit_rate
    new = (prompt - cached) * prompts
    stage_gpus = r.gpus / r.pp
    # a short prompt is bound by reading the weights once, as a decode step is (the roofline's other side)
    weights = weights_read_per_step(service, shape, new) / (stage_gpus * r.bandwidth)
    fixed = 0.0 if shape.dims is None else shape.dims.layers * PREFILL_LAYER_S
    flops = prefill_flops(shape, prompt, cached) * prompts
    compute = max(flops / (stage_gpus * r.peak), weights) + fixed
    comm = tensor_parallel_allreduce_s(shape, new, r.tp, r.tp_gbs, in_network=r.tp_in_network)
    comm += expert_alltoall_s(shape, new, r.ep, r.ep_gbs)
    return compute, comm + _handoffs_s(r, shape, new)


def prompts_per_pass(service: InferenceService, prompt: int, concurrency: int) -> int:
    """Prompts one prefill pass carries: as many whole prompts as `max_num_tokens` holds (at least one, at most the
    sessions of the replica)."""
    new = max(1, round(prompt * (1 - service.prefix_cache_hit_rate)))
    return max(1, min(concurrency, service.max_num_tokens // new))


def kv_reads_per_value(service: InferenceService, shape: Shape, memory: InferenceMemory) -> float:
    """How many times a decode step reads each cached KV value, over the replica's GPUs. Grouped kernels read every
    copy the replica holds once. A per-query-head kernel (TensorRT-LLM's masked MHA: one thread block per query
    head, `hi_kv = hi / qhead_per_kv`) reads its KV head's cache for each of the heads / kv_heads query heads of the
    group; with latent attention every query head reads the one latent cache."""
    d = shape.dims
    if service.attention_kernel == "grouped" or d is None:
        return memory.kv_copies
    group = d.heads if d.kv_latent_dim else d.heads / d.kv_heads
    return max(memory.kv_copies, group)


def _decode_step(
    service: InferenceService, shape: Shape, r: _Replica, memory: InferenceMemory, context: float
) -> tuple[float, float, bool]:
    """(step, communication, memory bound) of one verification step of all sessions. The B sessions run as p
    micro batches of B/p, one per stage at a time: each stage runs its GEMMs, which read its 1/p of the weights or
    compute 2*A/p FLOPs per token, whichever is longer, then its attention kernels, which read the micro batch's KV
    cache, then all-reduces; a token passes all p stages. The roofline bounds each kernel, not the step: the
    attention kernel runs between the QKV and output projections and cannot hide behind their FLOPs. The engine's
    host time between steps (`host_step_ms`) adds to each step. Speculative decoding verifies gamma + 1 tokens per
    session and runs gamma draft steps."""
    c = max(memory.concurrency, 1)
    micro = c / r.pp
    stage_gpus = r.gpus / r.pp
    verify = service.speculative.draft_tokens + 1 if service.speculative else 1
    kv = (memory.kv_per_token or 0.0) * kv_reads_per_value(service, shape, memory) * micro * context
    weights_s = weights_read_per_step(service, shape, micro * verify) / r.pp / (stage_gpus * r.bandwidth)
    attention_s = kv / r.pp / (stage_gpus * r.bandwidth)
    gemm_flops_s = 2 * shape.active_params * micro * verify / r.pp / (stage_gpus * r.peak)
    layers = None if shape.dims is None else shape.dims.layers / r.pp
    comm = tensor_parallel_allreduce_s(shape, micro * verify, r.tp, r.tp_gbs, layers, r.tp_in_network)
    comm += expert_alltoall_s(shape, micro * verify, r.ep, r.ep_gbs, layers)
    launches = 0.0 if service.decode_cuda_graphs or layers is None else layers * DECODE_LAYER_S
    stage = max(weights_s, gemm_flops_s) + attention_s + launches + comm
    step = r.pp * stage + _handoffs_s(r, shape, micro * verify) + service.host_step_ms / 1000
    if service.speculative is not None:
        draft = service.speculative.draft_params_b * 1e9
        draft_s = max(draft * BYTES[service.precision] / (r.gpus * r.bandwidth), 2 * draft * c / (r.gpus * r.peak))
        step += service.speculative.draft_tokens * draft_s
    return step, r.pp * comm, weights_s + attention_s >= gemm_flops_s


@dataclass(frozen=True)
class _PromptTimes:
    """One kind of request's prefill: time to first token, its communication, and the GPU time it occupies."""

    ttft_s: float
    comm_s: float
    busy_s: float


def _prompt_times(
    service: InferenceService, shape: Shape, hw: Hardware, memory: InferenceMemory, r: _Replica, prompt: int
) -> _PromptTimes:
    pool = service.prefill_gpus or 0
    k = prompts_per_pass(service, prompt, max(memory.concurrency, 1))
    if pool:
        # the prefill pool: its GPUs in tensor parallel, one stage; then the prompt's KV cache crosses to the
        # decode GPUs at the link both pools span, each prefill GPU sending its share
        pool_replica = _replica(service.model_copy(update={"pipeline_parallel": 1, "expert_parallel": 1}), hw, pool)
        compute, comm = _prefill(service, shape, pool_replica, prompt)
        busy = sum(_prefill(service, shape, pool_replica, prompt, k)) / k
        comm += (memory.kv_per_token or 0.0) * prompt / (pool * hw.tensor_parallel_link(pool + r.gpus)[1] * 1e9)
    else:
        compute, comm = _prefill(service, shape, r, prompt)
        busy = sum(_prefill(service, shape, r, prompt, k)) / k / r.pp
    return _PromptTimes(compute + comm, comm, busy)


def inference_speed(service: InferenceService, shape: Shape, hw: Hardware, memory: InferenceMemory) -> InferenceSpeed:
    r = _replica(service, hw, memory.gpus)
    per_step = speculative_tokens(service)
    kinds = service.requests
    times = [_prompt_times(service, shape, hw, memory, r, prompt) for _, prompt, _ in kinds]
    longest = max(range(len(kinds)), key=lambda n: (kinds[n][1], n))
    prompt = sum(share * p for share, p, _ in kinds)
    output = sum(share * o for share, _, o in kinds)
    busy = sum(share * t.busy_s for (share, _, _), t in zip(kinds, times, strict=True))
    worst, decode_comm, bound = _decode_step(service, shape, r, memory, service.context_tokens)
    average, _, _ = _decode_step(service, shape, r, memory, service.average_context)
    return InferenceSpeed(
        prompt,
        output,
        times[longest].ttft_s,
        worst / per_step,
        average / per_step,
        bound,
        max(memory.concurrency, 1),
        r.tp,
        r.tp_tier,
        times[longest].comm_s,
        decode_comm,
        busy,
        service.prefill_gpus or 0,
        per_step,
        kv_reads_per_value(service, shape, memory) / memory.kv_copies,
        kinds[longest][1],
        tuple((share, p, o, t.ttft_s) for (share, p, o), t in zip(kinds, times, strict=True))
        if service.request_mix is not None
        else (),
    )
