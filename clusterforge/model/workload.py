"""Workloads the cluster is built for: a model's shape, training jobs, inference services and prices.

Only the schema lives here; the fit analysis (memory, time, cost) is `clusterforge/workload/`.
"""

from typing import Annotated, Literal, Self

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails

from .base import CatalogKey, Count, Headroom, Identifier, PositiveFloat, Share, Strict

Tokens = Annotated[int, Field(ge=1, le=1_000_000_000)]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"]
Dim = Annotated[int, Field(ge=1, le=10_000_000)]
Rate = Annotated[float, Field(ge=0.0, lt=1.0)]


class ModelShapeFields(Strict):
    """The figures of a transformer that memory and time depend on (a Hugging Face config.json has them)."""

    params_b: PositiveFloat = Field(le=100_000)
    """Total parameters in billions (all experts of a mixture-of-experts model)."""
    layers: Dim
    """Transformer layers (num_hidden_layers)."""
    hidden: Dim
    """Hidden size (hidden_size)."""
    heads: Dim
    """Attention (query) heads (num_attention_heads)."""
    kv_heads: Dim
    """Key/value heads (num_key_value_heads; fewer than heads with grouped-query attention)."""
    head_dim: Dim
    """Dimension of one attention head (head_dim, usually hidden / heads)."""
    vocab: Dim
    """Vocabulary size (vocab_size)."""
    experts: Count | None = None
    """Routed experts per mixture-of-experts layer; leave out for a dense model."""
    experts_per_token: Count | None = None
    """Routed experts each token uses (num_experts_per_tok)."""
    active_params_b: PositiveFloat | None = None
    """Parameters one token uses, in billions (mixture of experts); default: all of them."""
    kv_latent_dim: Dim | None = None
    """Multi-head latent attention (DeepSeek): values cached per token and layer (kv_lora_rank + qk_rope_head_dim),
    replacing 2 x kv_heads x head_dim."""

    @model_validator(mode="after")
    def _check_moe(self) -> Self:
        if (self.experts is None) != (self.experts_per_token is None):
            raise ValueError("give both experts and experts_per_token, or neither")
        if self.experts is not None and self.experts_per_token is not None and self.experts_per_token > self.experts:
            raise ValueError("experts_per_token cannot exceed experts")
        if self.active_params_b is not None and self.active_params_b > self.params_b:
            raise ValueError("active_params_b cannot exceed params_b")
        return self


class ModelShape(ModelShapeFields):
    """A model shape written in the blueprint."""


class WorkloadBase(Strict):
    name: Identifier
    """Workload name."""
    model: CatalogKey | None = None
    """A published model shape from the catalog's `models` section, e.g. 'meta/llama-3-70b'."""
    shape: ModelShape | None = None
    """The model's shape, when it is not in the catalog."""
    model_params_b: PositiveFloat | None = Field(default=None, le=100_000)
    """Model size in billions of parameters, when neither model nor shape is given (memory of weights and
    optimizer state, and FLOPs, only: KV cache and activations need the shape)."""
    precision: Precision = "bf16"
    """Numeric precision of weights and compute."""
    node_groups: list[Identifier] | None = None
    """Node groups the workload runs on; default: all compute groups."""
    memory_headroom: Headroom = 0.1
    """Share of each GPU's memory kept free for the CUDA context, communication buffers and fragmentation (vLLM
    keeps the same 10% by default: --gpu-memory-utilization 0.9)."""

    @model_validator(mode="after")
    def _one_model(self) -> Self:
        given = [n for n in ("model", "shape", "model_params_b") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of model (a catalog shape), shape, or model_params_b"
                + (f"; got {', '.join(given)}" if given else "")
            )
        return self


class CheckpointStorage(Strict):
    """The storage a training job checkpoints to: a catalog storage system and how many units of it."""

    model: CatalogKey
    """A storage system from the catalog's `storage` section, e.g. 'ddn/ai400x2-turbo'."""
    count: Count = 1
    """Units of it the file system stripes over."""


class TrainingJob(WorkloadBase):
    kind: Literal["training"]
    """A training job."""
    gpus: Count
    """GPUs the job runs on."""
    tensor_parallel: Count = 1
    """Tensor-parallel degree (GPUs that split each layer); belongs inside one NVLink domain."""
    pipeline_parallel: Count = 1
    """Pipeline-parallel degree (stages)."""
    first_stage_layers: Count | None = None
    """Transformer layers on the first pipeline stage, which holds the most activations under 1F1B; default:
    layers / pipeline_parallel rounded up (Llama 3 405B ran one layer fewer on its first and last stages)."""
    context_parallel: Count = 1
    """Context-parallel degree (GPUs that split each sequence)."""
    expert_parallel: Count = 1
    """Expert-parallel degree (GPUs that split the experts of a mixture-of-experts layer), within data parallel."""
    data_parallel: Count | None = None
    """Data-parallel degree; default: gpus / (tensor x pipeline x context parallel)."""
    sequence_length: Tokens = 4096
    """Training sequence length in tokens."""
    global_batch_tokens: Tokens | None = None
    """Tokens per optimizer step across all data-parallel replicas; default: one micro batch per replica."""
    micro_batch: Count = 1
    """Sequences per micro batch on each GPU."""
    optimizer: Literal["adam", "sgd"] = "adam"
    """Adam keeps an fp32 master copy, momentum and variance (12 bytes per parameter); SGD with momentum 8."""
    zero_stage: Literal[0, 1, 2, 3] = 1
    """ZeRO sharding over the data-parallel group: 1 optimizer state, 2 also gradients, 3 also weights (FSDP)."""
    recompute: Literal["none", "selective", "full"] = "selective"
    """Activation recomputation: none keeps every activation, selective recomputes the attention scores (which
    FlashAttention-style kernels never store, so it keeps what none keeps), full keeps only each layer's input."""
    mfu: Share = 0.4
    """Model FLOPs utilisation the step time is computed at, of the peak of `mfu_precision` (Llama 3 405B: 0.38-0.43
    of the BF16 peak on 16k H100, Llama 3 paper Table 4)."""
    mfu_precision: Precision | None = None
    """The precision whose peak `mfu` was measured against; default bf16 (the published MFUs are of BF16 runs),
    fp32 for fp32 jobs. An FP8 job at the BF16 default is not credited with the FP8 peak: say fp8 when the MFU
    was measured against it."""
    tokens: PositiveFloat | None = None
    """Tokens the whole run trains on, for its duration and cost."""
    checkpoint_storage: CheckpointStorage | None = None
    """Where checkpoints go; default: the blueprint's storage nodes whose catalog entry gives their throughput,
    else only the line rate of the job's nodes' storage ports is known."""


class SpeculativeDecoding(Strict):
    """A draft model proposes tokens that the served model verifies in one step (Leviathan et al. 2023)."""

    draft_params_b: PositiveFloat = Field(le=100_000)
    """Parameters of the draft model in billions (Llama 3.2 1B: 1.24), served on the replica's GPUs."""
    draft_tokens: Count = Field(le=64)
    """Tokens the draft proposes per verification step (gamma)."""
    acceptance_rate: Share
    """Probability that the served model accepts a drafted token (alpha; measured per task, 0.6-0.9 typical of
    code and chat)."""


class RequestKind(Strict):
    """One kind of request in a service's mix: its share of the requests and its lengths."""

    share: Share
    """Share of the service's requests that are of this kind (the kinds' shares add up to 1)."""
    prompt_tokens: Tokens
    """Prompt (input) tokens of a request of this kind."""
    output_tokens: Tokens
    """Output tokens of a request of this kind."""


class InferenceService(WorkloadBase):
    kind: Literal["inference"]
    """An inference service."""
    replicas: Count
    """Independent copies of the model being served."""
    gpus_per_replica: Count
    """GPUs that serve one copy."""
    tensor_parallel: Count | None = None
    """Tensor-parallel degree inside a replica; default: gpus_per_replica / (expert_parallel x pipeline_parallel)."""
    expert_parallel: Count = 1
    """Expert-parallel degree inside a replica."""
    pipeline_parallel: Count = 1
    """Pipeline stages of a replica (each holds layers / stages on tensor x expert parallel GPUs); a replica may
    span nodes this way, its stages passing one activation per token at each boundary."""
    prefill_gpus: Count | None = None
    """Disaggregated serving: GPUs of a separate prefill pool per replica, which hands each prompt's KV cache to
    the replica's decode GPUs (`gpus_per_replica`); default: prefill and decode share the replica's GPUs."""
    prefix_cache_hit_rate: Rate = 0.0
    """Share of each prompt found in the prefix cache (a shared system prompt, earlier turns): those tokens are
    not prefilled again."""
    speculative: SpeculativeDecoding | None = None
    """Speculative decoding with a draft model."""
    kv_precision: Precision | None = None
    """Precision of the KV cache; default: the weight precision, but at least 8 bits."""
    context_tokens: Tokens = 8192
    """Longest context (prompt plus output) a request may use: what the KV cache is sized for."""
    prompt_tokens: Tokens | None = None
    """Prompt (input) tokens of a typical request: its prefill, the time to first token and the prefill share of
    throughput; default: context_tokens - output_tokens, or half the context when neither is given."""
    output_tokens: Tokens | None = None
    """Output tokens of a typical request (its decode steps); default: context_tokens - prompt_tokens, or half the
    context when neither is given."""
    request_mix: Annotated[list[RequestKind], Field(min_length=1, max_length=64)] | None = None
    """Requests of several lengths, instead of one prompt_tokens and output_tokens: each kind with its share of the
    requests. Throughput, energy and cost per token count every kind by its share; decode steps read the sessions'
    KV cache at the mix's average context; the time to first token (and its target) is the longest prompt's."""
    concurrent_requests: Count = 1
    """Requests in flight per replica at peak."""
    max_num_tokens: Tokens = 8192
    """Tokens one forward pass of the serving engine carries (TensorRT-LLM's `max_num_tokens`, 8192 by default;
    vLLM's `max_num_batched_tokens`): prompts are prefilled as many at a time as it holds, sharing the pass's weight
    read, fixed time per layer and all-reduce latencies. A static batch (TensorRT-LLM's gptSessionBenchmark)
    prefills all its prompts in one pass: sessions x prompt tokens."""
    decode_cuda_graphs: bool = True
    """The engine replays each decode step as a CUDA graph (TensorRT-LLM's decode CUDA graphs, vLLM's default); false
    for one that launches a step's kernels one by one, paying a fixed time per layer (TensorRT-LLM's GptSession,
    whose cuda_graph_mode is off by default: its static-batch benchmarks up to v0.8)."""
    prefill_mfu: Share = 0.5
    """Utilisation of peak FLOPS while a prompt is processed (prefill is compute bound); the default lies between
    what TensorRT-LLM reached at 2,048 tokens on one H100 (GPT-J 6B 53%, LLaMA 7B 47%; docs/workloads.md)."""
    decode_bandwidth_efficiency: Share = 0.8
    """Share of the HBM bandwidth decode reaches; the default is checked against the decode-bound published rows,
    not derived from a measurement of its own (docs/workloads.md)."""
    attention_kernel: Literal["grouped", "per-query-head"] = "grouped"
    """How the serving engine's decode attention reads the KV cache of grouped-query attention: grouped reads each
    KV head once for its group of query heads (TensorRT-LLM's XQA kernels); per-query-head runs one thread block per
    query head, each reading its KV head's cache: heads / kv_heads times the KV cache (TensorRT-LLM's masked MHA
    kernel: v0.5, v0.6 unless TRTLLM_ENABLE_XQA=1, engines built with --disable_xqa). Sources in docs/workloads.md."""
    host_step_ms: Annotated[float, Field(ge=0.0, le=1000.0, allow_inf_nan=False)] = 0.0
    """Time the engine's host (CPU) takes between two decode steps while the GPUs wait, in milliseconds: gathering
    the last step's tokens, scheduling the next step, preparing its inputs. 0 for an engine that overlaps it with the
    GPUs' work (TensorRT-LLM's C++ runtime: its published rows need none); vLLM's offline engine at batch 8 took
    2.20 ms on H200 and 2.19 ms on A100 (docs/workloads.md)."""
    ttft_target_ms: PositiveFloat | None = None
    """Target time to first token at `prompt_tokens` (with a request_mix, its longest prompt), in milliseconds."""
    tokens_per_s_target: PositiveFloat | None = None
    """Target output tokens per second of each session at full concurrency."""

    @field_validator("request_mix")
    @classmethod
    def _check_mix(cls, mix: list[RequestKind] | None, info: ValidationInfo) -> list[RequestKind] | None:
        if mix is None:
            return mix
        if info.data.get("prompt_tokens") is not None or info.data.get("output_tokens") is not None:
            raise ValueError("give request_mix or prompt_tokens and output_tokens, not both")
        total = sum(kind.share for kind in mix)
        if abs(total - 1) > 1e-6:
            raise ValueError(f"the shares add up to {total:g}; they must add up to 1")
        context = info.data.get("context_tokens")
        too_long = [
            InitErrorDetails(
                type="value_error",
                loc=(n,),
                input=kind.prompt_tokens + kind.output_tokens,
                ctx={
                    "error": ValueError(
                        f"{kind.prompt_tokens} prompt + {kind.output_tokens} output tokens exceed "
                        f"context_tokens ({context})"
                    )
                },
            )
            for n, kind in enumerate(mix)
            if context is not None and kind.prompt_tokens + kind.output_tokens > context
        ]
        if too_long:  # each kind named at its own line, not the list's
            raise ValidationError.from_exception_data("request_mix", too_long)
        return mix

    @model_validator(mode="after")
    def _lengths(self) -> Self:
        if self.request_mix is not None:
            return self
        if self.prompt_tokens is not None and self.output_tokens is not None:
            if self.prompt_tokens + self.output_tokens > self.context_tokens:
                raise ValueError("prompt_tokens + output_tokens cannot exceed context_tokens")
        elif (self.prompt_tokens or self.output_tokens or 0) >= self.context_tokens:
            raise ValueError("prompt_tokens or output_tokens alone must leave room in context_tokens for the other")
        return self

    @property
    def requests(self) -> tuple[tuple[float, int, int], ...]:
        """(share, prompt, output) of each kind of request: the mix, or the one typical request."""
        if self.request_mix is not None:
            return tuple((k.share, k.prompt_tokens, k.output_tokens) for k in self.request_mix)
        return ((1.0, *self.lengths),)

    @property
    def average_context(self) -> float:
        """Context of a session at an average decode step: a request of the kind holds its slot for its output
        steps, at prompt + output / 2 tokens on average, so each kind counts by share x output."""
        held = sum(share * output for share, _, output in self.requests)
        return sum(share * output * (prompt + output / 2) for share, prompt, output in self.requests) / held

    @property
    def lengths(self) -> tuple[int, int]:
        """(prompt, output) tokens of a typical request, the defaults filled in."""
        c = self.context_tokens
        if self.prompt_tokens is not None:
            return self.prompt_tokens, self.output_tokens or c - self.prompt_tokens
        if self.output_tokens is not None:
            return c - self.output_tokens, self.output_tokens
        return max(1, c // 2), max(1, c - c // 2)


Workload = Annotated[TrainingJob | InferenceService, Field(discriminator="kind")]


class Prices(Strict):
    """What GPU time and power cost, for cost per million tokens and per training run."""

    currency: str = Field(default="USD", pattern=r"^[A-Z]{3}$")
    """ISO 4217 code the prices are in."""
    gpu_hour: PositiveFloat | None = None
    """All-in price of one GPU-hour (cloud or internal rate); replaces capex and electricity."""
    capex_per_gpu: PositiveFloat | None = None
    """Purchase cost per GPU, including its share of server, network and installation."""
    depreciation_years: PositiveFloat = Field(default=4, le=20)
    """Years over which the capex is written off."""
    electricity_kwh: float | None = Field(default=None, ge=0)
    """Price of one kWh at the meter; the site's PUE scales IT power to facility power."""

    @model_validator(mode="after")
    def _some_price(self) -> Self:
        if self.gpu_hour is None and self.capex_per_gpu is None and self.electricity_kwh is None:
            raise ValueError("give gpu_hour, or capex_per_gpu and/or electricity_kwh")
        return self
