"""Every published figure the workload model is checked against, with its source, in one list: the test
(tests/unit/test_workload_published.py) asserts each within its tolerance, and the table in docs/workloads.md is
rendered from the same list (`python tests/regen.py workloads`; the test compares), so the two cannot drift.

Tolerances (issue 34): a measured speed or time within 25% (published / model between 0.75 and 1.25), a hand
figure within 1% (model / published between 0.99 and 1.01)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from factories import dgx_data, valid_from

from clusterforge.catalog import load_catalog
from clusterforge.expand import expand
from clusterforge.model import InferenceService, TrainingJob
from clusterforge.workload import InferenceFit, TrainingFit, fit_workloads
from clusterforge.workload.hardware import hardware_for
from clusterforge.workload.memory import inference_memory, mlp_width, training_memory
from clusterforge.workload.shape import Shape, resolve_shape
from clusterforge.workload.speed import InferenceSpeed, inference_speed

CATALOG = load_catalog()
TOLERANCE = {"measured": 0.25, "hand": 0.01}

TRTLLM_PERF_OVERVIEW = (
    'TensorRT-LLM "Performance Overview" (v1.0, docs/source/performance/perf-overview.md), tables "Llama 3.3 70B" '
    'and "Llama 3.1 405B": output tokens/s at maximum load, FP8 weights and KV cache, '
    "https://nvidia.github.io/TensorRT-LLM/performance/perf-overview.html"
)
H200_LAUNCH = (
    'TensorRT-LLM "H200 achieves nearly 12,000 tokens/sec on Llama2-13B" (v0.5.0), table "H200 FP8 Max '
    'throughput" in its revised form (out tok/s/GPU), https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/'
    "blogs/H200launch.md; the text released with v0.5.0 (release/0.5.0) gave the batch-64 2048/128 row at TP2 (682 "
    "tok/s) and the batch-512 128/2048 row at TP4 (6,616), the same per-GPU figures at twice the TP; the revision's "
    "TP1 and TP2 are the ones its footnote (largest batch by power of 2 on the TP) and v0.8.0's H200 table agree with"
)
TRTLLM_V08 = (
    'TensorRT-LLM "Performance of TensorRT-LLM" (v0.8.0), "Peak Throughput", "H200 GPUs (FP8)" and "H100 GPUs (FP8)" '
    "(out tok/s/GPU): static batches (gptSessionBenchmark), XQA on for Llama 2 70B (TRTLLM_ENABLE_XQA=1), FP8 weights "
    "and KV cache (kv_cache_quant_algo FP8), https://github.com/NVIDIA/TensorRT-LLM/blob/v0.8.0/docs/source/"
    "performance.md"
)
TRTLLM_V05 = (
    'TensorRT-LLM "Performance of TensorRT-LLM" (v0.5.0), "High Throughput", "H100 GPUs (FP8)" (out tok/s): static '
    "batches (gptSessionBenchmark), https://github.com/NVIDIA/TensorRT-LLM/blob/release/0.5.0/docs/source/performance.md"
)
XQA_BLOG = (
    'TensorRT-LLM "New XQA-kernel provides 2.4x more Llama-70B throughput within the same latency budget", table '
    '"H200 2.4x with XQA" (Llama-70B, 1 GPU, 128 / 2,048, out tok/s/GPU), https://github.com/NVIDIA/TensorRT-LLM/blob/'
    'main/docs/source/blogs/XQA-kernel.md; batch 192 and FP8 from "Falcon-180B on a single H200 GPU with INT4 AWQ, and '
    '6.7x faster Llama-70B over A100" (the same 2,941, "TensorRT-LLM v0.7a vs TensorRT-LLM v0.6a | Llama2-70B | 1xH200 '
    'TP1 | FP8 | BS 192"), https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/blogs/Falcon180B-H200.md'
)
FALCON_H200_BLOG = (
    'TensorRT-LLM "Falcon-180B on a single H200 GPU with INT4 AWQ, and 6.7x faster Llama-70B over A100", table "H200 '
    '6.7x A100" (Llama-70B, 1 GPU rows, out tok/s/GPU; "TensorRT-LLM v0.7a | Llama2-70B | 1xH200 = TP1 | FP8 | BS: (in '
    'order) 960, 960, 192, 560, 96, 640"), https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/blogs/'
    "Falcon180B-H200.md"
)
VLLM_LATENCY = (
    'vLLM performance benchmark, build 9515, "Latency tests" on H200 (32 input tokens, 128 output tokens, fixed '
    "batch 8, mean end-to-end latency), https://buildkite.com/vllm/performance-benchmark/builds/9515; models and TP "
    "from .buildkite/nightly-benchmarks/tests/latency-tests.json (Meta-Llama-3-70B-Instruct TP4, Mixtral-8x7B-"
    "Instruct-v0.1 TP2, Meta-Llama-3-8B TP1, the build naming Llama 3.1 8B: one shape; dtype left at auto: the "
    "checkpoints' bfloat16), https://github.com/vllm-"
    "project/vllm/blob/main/.buildkite/nightly-benchmarks/tests/latency-tests.json"
)
VLLM_LATENCY_A100 = (
    'vLLM performance benchmark, build 9523, "Latency tests" on A100-SXM4-80GB (the same tests as build 9515: 32 '
    "input tokens, 128 output tokens, fixed batch 8, mean end-to-end latency), "
    "https://buildkite.com/vllm/performance-benchmark/builds/9523"
)
VLLM_HOST_STEP_MS = 2.20
"""vLLM's host time between decode steps in its latency benchmark (offline engine, batch 8): derived from row 81
(Llama 3.1 8B, one H200, 833.421 ms): the model without host time gives 551.9 ms, 9.1 ms of prefill and 128 steps
of 4.21 ms; the 281.5 ms left over the 128 steps is 2.20 ms each. Checked by the same test on one A100 (build 9523,
1,579.27 ms), whose steps are 2.4 times as long: there the model without host time leaves 2.19 ms a step."""
GH200_NVL32 = (
    'NVIDIA Technical Blog, "Low Latency Inference Chapter 2: Blackwell is Coming. NVIDIA GH200 NVL32 with NVLink '
    'Switch Gives Signs of Big Leap in Time to First Token Performance" (2024), TTFT at TP32, FP8, '
    "https://developer.nvidia.com/blog/low-latency-inference-chapter-2-blackwell-is-coming-nvidia-gh200-nvl32-"
    "with-nvlink-switch-gives-signs-of-big-leap-in-time-to-first-token-performance/"
)
TRTLLM_LOW_LATENCY = (
    'TensorRT-LLM "Performance of TensorRT-LLM" (v0.5 data), "Low Latency", H100 GPUs (FP8), batch 1, '
    "1st token latency, https://github.com/NVIDIA/TensorRT-LLM/blob/138f96d45f90b9667426f7c47297d8c06bafac73/"
    "docs/source/performance.md"
)
H100_VS_MI300X = (
    'NVIDIA Technical Blog, "Achieving Top Inference Performance with the NVIDIA H100 Tensor Core GPU and NVIDIA '
    'TensorRT-LLM" (December 2023): "DGX H100 can process a single inference in 1.7 seconds using a batch size of '
    'one" (Llama 2 70B, 2,048 input and 128 output tokens, 8 x H100 80 GB, TensorRT-LLM v0.5.0 for batch 1, FP8), '
    "https://developer.nvidia.com/blog/achieving-top-inference-performance-with-the-nvidia-h100-tensor-core-gpu-"
    "and-nvidia-tensorrt-llm/"
)
NIM = (
    'NVIDIA NIM LLM benchmarking, "Performance", Llama-3.3-70b-instruct, NIM 1.8.0, 2 x H100 80G, fp8 TP2, '
    "concurrency 1, https://docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance"
)
DEEPSEEK_REPORT = 'DeepSeek-AI, "DeepSeek-V3 Technical Report" (2024), https://arxiv.org/abs/2412.19437'
LLAMA3_PAPER = 'Llama Team, "The Llama 3 Herd of Models" (2024), https://arxiv.org/abs/2407.21783'
DDN_BLOG = (
    'DDN blog, "DDN\'s AI Storage Optimized for NVIDIA DGX B200 Platform", https://ddn.com/blog/ddns-ai-storage-'
    "optimized-for-nvidia-dgx-b200-platform-handling-ai-at-any-scale-with-nvidia-blackwell"
)

LLAMA2_70B = {
    "params_b": 68.98,
    "layers": 80,
    "hidden": 8192,
    "heads": 64,
    "kv_heads": 8,
    "head_dim": 128,
    "vocab": 32000,
}
"""Llama 2 70B config.json; 80 x 855.6M + 2 x 32000 x 8192 = 68.98B."""
LLAMA2_7B = {
    "params_b": 6.738,
    "layers": 32,
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 32,
    "head_dim": 128,
    "vocab": 32000,
}
"""Llama 2 7B config.json; 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096 = 6.738B."""
GPTJ_6B = {
    "params_b": 6.05,
    "layers": 28,
    "hidden": 4096,
    "heads": 16,
    "kv_heads": 16,
    "head_dim": 256,
    "vocab": 50400,
}
"""EleutherAI GPT-J 6B model card and config.json (n_layer 28, n_embd 4096, n_head 16, rotary head 256): 6.05B."""
DEEPSEEK = {"model": "deepseek/deepseek-v3", "precision": "fp8"}


def cluster(nodes: int, workloads: list[dict[str, Any]], model: str = "nvidia/dgx-h200") -> dict[str, Any]:
    data = dgx_data(nodes, model=model)
    data["workloads"] = workloads
    return data


def fits_of(data: dict[str, Any]) -> list[TrainingFit | InferenceFit]:
    valid = valid_from(data)
    topo, _ = expand(valid)
    return fit_workloads(valid.blueprint, valid.catalog, topo)


def serving(fields: dict[str, Any], isl: int, osl: int, server: str = "nvidia/dgx-h200") -> InferenceSpeed:
    """A service of one replica, `isl`/`osl` tokens per request; without concurrent_requests, as many sessions
    as the KV cache holds at isl + osl (what a maximum-throughput benchmark fills the replica with)."""
    svc_fields = {"name": "svc", "kind": "inference", "precision": "fp8", "replicas": 1, **fields}
    svc_fields |= {"context_tokens": isl + osl, "prompt_tokens": isl, "output_tokens": osl}
    valid = valid_from(cluster(1, [svc_fields], model=server))
    svc = valid.blueprint.workloads[0]
    assert isinstance(svc, InferenceService)
    shape = resolve_shape(svc, valid.catalog)
    hw = hardware_for(valid.blueprint, valid.catalog, svc)
    assert hw is not None
    memory = inference_memory(svc, shape, hw.gpu.memory_gb)
    if "concurrent_requests" not in fields:
        memory = inference_memory(svc, shape, hw.gpu.memory_gb, concurrency=memory.max_concurrency)
    assert memory.total <= memory.usable
    return inference_speed(svc, shape, hw, memory)


def nvl32_ttft(model: str, isl: int) -> InferenceSpeed:
    """One prompt on 32 GH200 joined by the NVL32's NVLink Switch (a 32-GPU NVLink domain whose third-generation
    NVSwitch reduces in the switch). The GH200's GPU computes, reads and links as the H100."""
    data = dgx_data(4, model="nvidia/dgx-h100")
    fields = {"model": model, "replicas": 1, "gpus_per_replica": 32, "prompt_tokens": isl, "context_tokens": isl + 1024}
    data["workloads"] = [{"name": "svc", "kind": "inference", "precision": "fp8", **fields}]
    valid = valid_from(data)
    svc = valid.blueprint.workloads[0]
    assert isinstance(svc, InferenceService)
    base = hardware_for(valid.blueprint, valid.catalog, svc)
    assert base is not None
    hw = dataclasses.replace(base, nvlink_domain=32)
    shape = resolve_shape(svc, valid.catalog)
    return inference_speed(svc, shape, hw, inference_memory(svc, shape, hw.gpu.memory_gb))


def _batch_one(shape: dict[str, Any], tp: int, isl: int, server: str = "nvidia/dgx-h100") -> InferenceSpeed:
    fields = {"shape": shape, "gpus_per_replica": tp, "concurrent_requests": 1}
    return serving(fields, isl, 1, server)


def _one_request_s(shape: dict[str, Any], tp: int, isl: int, osl: int) -> Callable[[], float]:
    """One request alone in TensorRT-LLM v0.5's gptSessionBenchmark (a static batch of one, its masked MHA
    kernel): prefill, then `osl` output steps; seconds."""
    tokens_per_s = _static(shape, 1, tp, isl, osl, "nvidia/dgx-h100", attention_kernel="per-query-head")
    return lambda: osl / tokens_per_s()


def _nim(isl: int, osl: int) -> InferenceSpeed:
    return serving(
        {"model": "meta/llama-3-70b", "gpus_per_replica": 2, "concurrent_requests": 1}, isl, osl, "nvidia/dgx-h100"
    )


def deepseek_v3_gpu_hours() -> float:
    """Pre-training on 14.8T tokens in FP8 on 2,048 H800 (H100 compute) at PP16, EP64, ZeRO-1 DP (report section
    3.2), 4K sequences, batches growing to 15,360 sequences (section 4.2), at MFU 0.4 of the BF16 peak."""
    batch = {"sequence_length": 4096, "global_batch_tokens": 15360 * 4096, "tokens": 14.8e12}
    job = {"name": "job", "kind": "training", **DEEPSEEK, "gpus": 2048, "pipeline_parallel": 16} | batch
    (fit,) = fits_of(cluster(256, [job | {"expert_parallel": 64}]))
    assert isinstance(fit, TrainingFit) and fit.fits
    hours = fit.run_hours()
    assert hours is not None
    return hours * 2048


def _training(**fields: Any) -> tuple[TrainingJob, Shape]:
    job = TrainingJob.model_validate({"name": "job", "kind": "training", **fields})
    return job, resolve_shape(job, CATALOG)


def llama31_405b_params() -> float:
    _, shape = _training(model="meta/llama-3.1-405b", gpus=8, tensor_parallel=8)
    return shape.params


def llama3_70b_mlp_width() -> float:
    _, shape = _training(model="meta/llama-3-70b", gpus=8, tensor_parallel=8)
    width = mlp_width(shape)
    assert width is not None
    return width


def deepseek_v3_adam_gb() -> float:
    job, shape = _training(**DEEPSEEK, gpus=2048, pipeline_parallel=16, expert_parallel=64, zero_stage=1)
    return training_memory(job, shape).optimizer / 1e9


def meta_405b_layout() -> tuple[TrainingJob, Shape]:
    """Llama 3 paper, Table 4: 405B pre-training on 16,384 80 GB H100, TP8, CP1, PP16, 8,192-token sequences,
    ZeRO-2 (section 3.3.2), the first and last stages one layer short (7 of 126)."""
    return _training(
        model="meta/llama-3.1-405b",
        gpus=16384,
        tensor_parallel=8,
        pipeline_parallel=16,
        first_stage_layers=7,
        sequence_length=8192,
        zero_stage=2,
    )


def meta_405b_layout_gb() -> float:
    return training_memory(*meta_405b_layout()).total / 1e9


def ddn_checkpoint_s() -> float:
    job = {"name": "job", "kind": "training", "model": "meta/llama-3-70b", "gpus": 32, "tensor_parallel": 8}
    (fit,) = fits_of(cluster(4, [job | {"checkpoint_storage": {"model": "ddn/ai400x2-turbo", "count": 2}}]))
    assert isinstance(fit, TrainingFit) and fit.checkpoint_write_s is not None
    return fit.checkpoint_write_s


@dataclass(frozen=True)
class Case:
    source: str
    """Document, table or figure, and address of the published figure."""
    label: str
    """The source as the docs table names it (its Sources list gives the address)."""
    what: str
    published: float
    unit: str
    kind: Literal["measured", "hand"]
    figure: Callable[[], float]
    """The tool's figure, in the published figure's unit."""
    note: str = ""
    outside: str = ""
    """Why the model cannot match this figure, for a case outside its tolerance (its test asserts it is)."""

    def ratio(self, tool: float) -> float:
        """published / model for measurements, model / published for hand figures."""
        return self.published / tool if self.kind == "measured" else tool / self.published

    def within(self, tool: float) -> bool:
        return abs(self.ratio(tool) - 1) <= TOLERANCE[self.kind] + 1e-9


def _perf(model: str, server: str, tp: int, isl: int, osl: int) -> Callable[[], float]:
    return lambda: serving({"model": model, "gpus_per_replica": tp}, isl, osl, server).tokens_per_s_replica


def _static(
    shape: dict[str, Any], batch: int, tp: int, isl: int, osl: int, server: str = "nvidia/dgx-h200", **fields: Any
) -> Callable[[], float]:
    """A static batch of TensorRT-LLM's gptSessionBenchmark (the throughput tables up to v0.8): `batch` prompts
    prefilled in one pass, then their output steps together, each step's kernels launched one by one (GptSession's
    cuda_graph_mode is off by default); TensorRT-LLM sizes its KV cache from the memory left after the weights."""
    fields |= {"shape": shape, "gpus_per_replica": tp, "concurrent_requests": batch, "max_num_tokens": batch * isl}
    fields |= {"decode_cuda_graphs": False, "memory_headroom": 0.02}
    return lambda: serving(fields, isl, osl, server).tokens_per_s_replica


def _launch(batch: int, tp: int, isl: int, osl: int) -> Callable[[], float]:
    """TensorRT-LLM v0.5 had no grouped-query decode kernel (XQA came with v0.7/v0.8): its masked MHA kernel ran
    one thread block per query head."""
    return _static(LLAMA2_70B, batch, tp, isl, osl, attention_kernel="per-query-head")


def _xqa(kernel: str) -> Callable[[], float]:
    """192 sessions of 2,176 tokens and the weights take 137.4 GB of the H200's 141."""
    return _static(LLAMA2_70B, 192, 1, 128, 2048, attention_kernel=kernel)


def _nvl32(model: str, isl: int) -> Callable[[], float]:
    return lambda: nvl32_ttft(model, isl).ttft_s


def _nim_ms(isl: int, osl: int, figure: str) -> Callable[[], float]:
    """`figure` of the NIM case in milliseconds: ttft_s or decode_step_avg_s."""
    return lambda: float(getattr(_nim(isl, osl), figure)) * 1000


def vllm_latency(
    model: str, tp: int, server: str = "nvidia/dgx-h200", host_step_ms: float = VLLM_HOST_STEP_MS
) -> Callable[[], float]:
    """vLLM's benchmark_latency: 8 prompts of 32 tokens prefilled in one pass, then their 128 output steps, each
    replayed as a CUDA graph (vLLM's default) after the engine's host time; the batch's end-to-end time in
    milliseconds."""
    fields = {"model": model, "gpus_per_replica": tp, "concurrent_requests": 8, "precision": "bf16"}
    fields["host_step_ms"] = host_step_ms
    return lambda: 8 * 128 / serving(fields, 32, 128, server).tokens_per_s_replica * 1000


def _vllm_cases(source: str, label: str, gpu: str, server: str) -> list[Case]:
    return [
        Case(
            source,
            label,
            f"{name}, TP{tp}: end-to-end latency",
            value,
            "ms",
            "measured",
            vllm_latency(model, tp, server),
            "VLLM_HOST_STEP_MS is derived from this row" if (gpu, tp) == ("H200", 1) else "",
        )
        for name, model, tp, value in VLLM_TESTS[gpu]
    ]


def _first_token(shape: dict[str, Any], tp: int, isl: int, server: str) -> Callable[[], float]:
    return lambda: _batch_one(shape, tp, isl, server).ttft_s * 1000


LOW_LATENCY = {
    "H100": [
        ("GPT-J 6B", GPTJ_6B, 1, 128, 7),
        ("GPT-J 6B", GPTJ_6B, 1, 2048, 29),
        ("LLaMA 7B", LLAMA2_7B, 1, 128, 7),
        ("LLaMA 7B", LLAMA2_7B, 1, 2048, 36),
        ("LLaMA 70B", LLAMA2_70B, 4, 128, 26),
        ("LLaMA 70B", LLAMA2_70B, 4, 2048, 109),
    ],
    "L40S": [
        ("GPT-J 6B", GPTJ_6B, 1, 128, 12),
        ("GPT-J 6B", GPTJ_6B, 1, 2048, 71),
        ("LLaMA 7B", LLAMA2_7B, 1, 128, 14),
        ("LLaMA 7B", LLAMA2_7B, 1, 2048, 73),
    ],
}
"""TensorRT-LLM v0.5 "Low Latency" tables, "H100 GPUs (FP8)" and "L40S GPUs (FP8)": (model, shape, TP, input tokens,
first-token latency in ms). The "A100 GPUs (FP16)" table is not used (docs/workloads.md says why)."""
XQA_DECODE = (
    "the model's decode step of {batch} sessions on one H200 takes {model} where the measurement implies {measured}; "
    "the same release's 128/128 row on the same GPU (batch 960, prefill and GEMM bound) is within (row 77) and "
    "v0.8.0's tables two months later (same model and GPU, XQA, FP8 KV cache, static batches) are within 25%: what "
    "v0.7a's single-GPU long decode lost is not a term of the model"
)
PERF = "TensorRT-LLM perf overview v1.0"
LAUNCH = "TensorRT-LLM H200 launch note (v0.5), H200 FP8 max throughput"
LOW = "TensorRT-LLM v0.5 low latency, FP8, batch 1"


VLLM_TESTS = {
    "H200": [
        ("Llama 3 70B", "meta/llama-3-70b", 4, 2077.53),
        ("Mixtral 8x7B", "mistralai/mixtral-8x7b", 2, 1917.44),
        ("Llama 3.1 8B", "meta/llama-3-8b", 1, 833.421),
    ],
    "A100": [
        ("Llama 3 70B", "meta/llama-3-70b", 4, 3990.59),
        ("Llama 3.1 8B", "meta/llama-3-8b", 1, 1579.27),
        ("Mixtral 8x7B", "mistralai/mixtral-8x7b", 2, 3643.84),
    ],
}
"""Mean end-to-end latencies in milliseconds, (name, catalog model, TP, published), in the builds' table order."""


STATIC_TABLES = {
    ("TensorRT-LLM v0.5.0 high throughput, H100 FP8 (per replica)", "nvidia/dgx-h100", "per-query-head"): [
        ("GPT-J 6B", GPTJ_6B, 64, 1, 128, 128, 10907),
        ("GPT-J 6B", GPTJ_6B, 64, 1, 128, 2048, 6179),
        ("GPT-J 6B", GPTJ_6B, 64, 1, 2048, 128, 2229),
        ("GPT-J 6B", GPTJ_6B, 64, 1, 2048, 2048, 2980),
        ("LLaMA 7B", LLAMA2_7B, 64, 1, 128, 128, 9193),
        ("LLaMA 7B", LLAMA2_7B, 64, 1, 128, 2048, 5367),
        ("LLaMA 7B", LLAMA2_7B, 64, 1, 2048, 128, 2058),
        ("LLaMA 7B", LLAMA2_7B, 32, 1, 2048, 2048, 2230),
        ("LLaMA 70B", LLAMA2_70B, 64, 4, 128, 128, 3317),
        ("LLaMA 70B", LLAMA2_70B, 64, 4, 128, 2048, 2616),
        ("LLaMA 70B", LLAMA2_70B, 64, 4, 2048, 128, 843),
        ("LLaMA 70B", LLAMA2_70B, 64, 4, 2048, 2048, 1583),
    ],
    ("TensorRT-LLM v0.8.0 peak throughput, H200 FP8 (per GPU)", "nvidia/dgx-h200", "grouped"): [
        ("GPT-J 6B", GPTJ_6B, 1024, 1, 128, 128, 29168),
        ("GPT-J 6B", GPTJ_6B, 120, 1, 128, 2048, 9472),
        ("GPT-J 6B", GPTJ_6B, 64, 1, 2048, 128, 2961),
        ("GPT-J 6B", GPTJ_6B, 64, 1, 2048, 2048, 4149),
        ("LLaMA 7B", LLAMA2_7B, 896, 1, 128, 128, 20548),
        ("LLaMA 7B", LLAMA2_7B, 120, 1, 128, 2048, 8343),
        ("LLaMA 7B", LLAMA2_7B, 84, 1, 2048, 128, 2429),
        ("LLaMA 7B", LLAMA2_7B, 56, 1, 2048, 2048, 3530),
        ("LLaMA 70B", LLAMA2_70B, 512, 1, 128, 128, 3844),
        ("LLaMA 70B", LLAMA2_70B, 512, 2, 128, 2048, 4008),
        ("LLaMA 70B", LLAMA2_70B, 64, 1, 2048, 128, 421),
        ("LLaMA 70B", LLAMA2_70B, 64, 1, 2048, 2048, 1461),
    ],
    ("TensorRT-LLM v0.8.0 peak throughput, H100 FP8 (per GPU)", "nvidia/dgx-h100", "grouped"): [
        ("GPT-J 6B", GPTJ_6B, 1024, 1, 128, 128, 27357),
        ("GPT-J 6B", GPTJ_6B, 120, 1, 128, 2048, 7831),
        ("GPT-J 6B", GPTJ_6B, 64, 1, 2048, 128, 2661),
        ("GPT-J 6B", GPTJ_6B, 64, 1, 2048, 2048, 3409),
        ("LLaMA 7B", LLAMA2_7B, 896, 1, 128, 128, 20241),
        ("LLaMA 7B", LLAMA2_7B, 120, 1, 128, 2048, 6922),
        ("LLaMA 7B", LLAMA2_7B, 64, 1, 2048, 128, 2170),
        ("LLaMA 7B", LLAMA2_7B, 56, 1, 2048, 2048, 2816),
        ("LLaMA 70B", LLAMA2_70B, 1024, 2, 128, 128, 3269),
        ("LLaMA 70B", LLAMA2_70B, 512, 4, 128, 2048, 2718),
        ("LLaMA 70B", LLAMA2_70B, 96, 2, 2048, 128, 347),
        ("LLaMA 70B", LLAMA2_70B, 64, 2, 2048, 2048, 1020),
    ],
}
"""TensorRT-LLM's static-batch throughput tables (gptSessionBenchmark): (model, shape, batch, TP, input, output,
published tokens/s). v0.5.0 gives out tok/s of the replica and ran no XQA kernel; v0.8.0 gives out tok/s per GPU
(the cases compare the replica's, published x TP) with XQA on. Mistral 7B (sliding-window attention) and Falcon 180B
(attention and MLP in parallel, one all-reduce a layer) are left out: no shape here describes them."""
DECODE_LAYER_NOTE = "DECODE_LAYER_S is derived from the two single-GPU 128/2048 rows together"


def _static_tables() -> list[Case]:
    cases = []
    for (label, server, kernel), rows in STATIC_TABLES.items():
        per_gpu = "per GPU" in label
        for name, shape, batch, tp, isl, osl, value in rows:
            derived = label.startswith("TensorRT-LLM v0.5.0") and (tp, isl, osl) == (1, 128, 2048)
            cases.append(
                Case(
                    TRTLLM_V08 if per_gpu else TRTLLM_V05,
                    label,
                    f"{name}, batch {batch}, TP{tp}, {isl}/{osl}",
                    value * tp if per_gpu else value,
                    "tokens/s",
                    "measured",
                    _static(shape, batch, tp, isl, osl, server, attention_kernel=kernel),
                    DECODE_LAYER_NOTE if derived else "",
                )
            )
    return cases


def _cases() -> list[Case]:
    cases = [
        Case(
            TRTLLM_PERF_OVERVIEW,
            PERF,
            f"Llama 3.3 70B, {where}, {isl}/{osl}",
            value,
            "tokens/s",
            "measured",
            _perf("meta/llama-3-70b", server, tp, isl, osl),
        )
        for where, server, tp, isl, osl, value in [
            ("H200 TP1", "nvidia/dgx-h200", 1, 2048, 128, 442),
            ("H200 TP1", "nvidia/dgx-h200", 1, 128, 2048, 4336),
            ("H200 TP1", "nvidia/dgx-h200", 1, 1000, 1000, 2909),
            ("H200 TP1", "nvidia/dgx-h200", 1, 5000, 500, 566),
            ("H200 TP1", "nvidia/dgx-h200", 1, 20000, 2000, 283),
            ("H100 TP2", "nvidia/dgx-h100", 2, 2048, 128, 762),
            ("H100 TP2", "nvidia/dgx-h100", 2, 128, 2048, 6651),
        ]
    ]
    cases += [
        Case(
            TRTLLM_PERF_OVERVIEW,
            PERF,
            f"Llama 3.1 405B, H200 TP8, {isl}/{osl}",
            value,
            "tokens/s",
            "measured",
            _perf("meta/llama-3.1-405b", "nvidia/dgx-h200", 8, isl, osl),
        )
        for isl, osl, value in [(2048, 128, 456), (128, 2048, 5348), (1000, 1000, 3330), (20000, 2000, 505)]
    ]
    cases += [
        Case(
            H200_LAUNCH,
            LAUNCH,
            f"Llama 2 70B, batch {batch}, TP{tp}, {isl}/{osl}",
            value,
            "tokens/s",
            "measured",
            _launch(batch, tp, isl, osl),
        )
        for batch, tp, isl, osl, value in [
            (512, 1, 128, 128, 3014),
            (64, 1, 2048, 128, 341),
            (32, 1, 2048, 128, 303),
            (512, 2, 128, 2048, 2 * 1654),
        ]
    ]
    cases += [
        Case(
            GH200_NVL32,
            "NVIDIA blog, GH200 NVL32 TTFT, TP32 FP8",
            f"{name}, {isl:,} tokens, TTFT",
            value,
            "s",
            "measured",
            _nvl32(model, isl),
        )
        for name, model, isl, value in [
            ("Llama 3.1 70B", "meta/llama-3-70b", 32768, 0.472),
            ("Llama 3.1 405B", "meta/llama-3.1-405b", 32768, 1.6),
            ("Llama 3.1 405B", "meta/llama-3.1-405b", 122880, 7.5),
        ]
    ]
    derivation = "PREFILL_LAYER_S is derived from the two single-GPU 128-token rows together"
    cases += [
        Case(
            TRTLLM_LOW_LATENCY,
            LOW,
            f"{name}, {gpu} TP{tp}, 1st token, {isl:,} tokens",
            value,
            "ms",
            "measured",
            _first_token(shape, tp, isl, server),
            derivation if gpu == "H100" and tp == 1 and isl == 128 else "",
        )
        for gpu, server in (("H100", "nvidia/dgx-h100"), ("L40S", "generic/l40s-4u-8gpu"))
        for name, shape, tp, isl, value in LOW_LATENCY[gpu]
    ]
    itl_note = "ALLREDUCE_LATENCY_S is derived from this row"
    nim = "NVIDIA NIM benchmarking, 2 x H100 fp8 TP2, concurrency 1"
    for isl, osl, ttft, itl in [(5000, 500, 406.77, 18.58), (500, 2000, 47.77, 18.91)]:
        note = itl_note if osl == 2000 else ""
        cases.append(Case(NIM, nim, f"{isl}/{osl}: TTFT", ttft, "ms", "measured", _nim_ms(isl, osl, "ttft_s")))
        cases.append(
            Case(
                NIM,
                nim,
                f"{isl}/{osl}: inter-token latency",
                itl,
                "ms",
                "measured",
                _nim_ms(isl, osl, "decode_step_avg_s"),
                note,
            )
        )
    cases += [
        Case(
            f"{DEEPSEEK_REPORT}, Table 1",
            "DeepSeek-V3 technical report, Table 1",
            "pre-training GPU hours, 14.8T tokens, FP8, 2,048 H800 (MFU 0.4 of the BF16 peak)",
            2_664_000,
            "GPU hours",
            "measured",
            deepseek_v3_gpu_hours,
        ),
        Case(
            "Hugging Face meta-llama/Llama-3.1-405B, https://huggingface.co/meta-llama/Llama-3.1-405B",
            "Hugging Face meta-llama/Llama-3.1-405B",
            "parameters from the published shape",
            405_853_388_800,
            "parameters",
            "hand",
            llama31_405b_params,
        ),
        Case(
            "Hugging Face meta-llama/Meta-Llama-3-70B config.json, intermediate_size, "
            "https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json",
            "Llama 3 70B config.json",
            "MLP width derived from the parameter count",
            28_672,
            "values",
            "hand",
            llama3_70b_mlp_width,
        ),
        Case(
            f"{DEEPSEEK_REPORT}, section 3.2 (PP16, EP64, ZeRO-1 DP128); hand derivation "
            "12 x (16.55e9 / 16 / 128 + 654.5e9 / (16 x 64) / 2)",
            "DeepSeek-V3 report section 3.2, by hand",
            "Adam state per GPU",
            12 * ((671e9 - 634e9 / 248 * 256) / 16 / 128 + 634e9 / 248 * 256 / 1024 / 2) / 1e9,
            "GB",
            "hand",
            deepseek_v3_adam_gb,
        ),
        Case(
            f"{LLAMA3_PAPER}, Table 4 (TP8, CP1, PP16, DP128, 80 GB H100), section 3.3.2; hand sum in docs",
            "Llama 3 paper Table 4, by hand",
            "memory per GPU of Meta's 405B layout (72 GB usable)",
            (
                2 * 405.853e9 / 128
                + 14 * 405.853e9 / 128 / 128
                + (12.25 * 16384 + 6 * 53248 + 4 * 128) * 8192 / 8 * 16 * 7
            )
            / 1e9,
            "GB",
            "hand",
            meta_405b_layout_gb,
        ),
        Case(
            f"{DDN_BLOG}: 80 GB/s read and write per AI400X2-Turbo; 70.55e9 x 14 bytes / 160 GB/s",
            "DDN blog (AI400X2-Turbo with DGX B200), by hand",
            "Llama 3 70B checkpoint to 2 appliances",
            70.55e9 * 14 / 160e9,
            "s",
            "hand",
            ddn_checkpoint_s,
        ),
    ]
    cases += _static_tables()
    cases += [
        Case(
            XQA_BLOG,
            "TensorRT-LLM XQA blog, Llama 2 70B, H200 TP1, batch 192, 128/2048",
            what,
            value,
            "tokens/s",
            "measured",
            _xqa(kernel),
            outside=XQA_DECODE.format(batch=192, model=model, measured=measured),
        )
        for what, value, kernel, model, measured in [
            ("v0.6a, masked MHA (per-query-head)", 1227, "per-query-head", "107 ms", "156 ms"),
            ("v0.7a, XQA (grouped)", 2941, "grouped", "41.4 ms", "65 ms"),
        ]
    ]
    cases += [
        Case(
            FALCON_H200_BLOG,
            "TensorRT-LLM Falcon-180B/Llama-70B H200 blog (v0.7a), H200 TP1 FP8",
            f"Llama 2 70B, batch {batch}, {isl}/{osl}",
            value,
            "tokens/s",
            "measured",
            _static(LLAMA2_70B, batch, 1, isl, osl, attention_kernel="grouped"),
            outside=XQA_DECODE.format(batch=batch, model=model, measured=measured) if model else "",
        )
        for batch, isl, osl, value, model, measured in [
            (960, 128, 128, 3803, "", ""),
            (96, 128, 4096, 1946, "32.1 ms", "49 ms"),
        ]
    ]
    cases += _vllm_cases(
        VLLM_LATENCY, "vLLM performance benchmark (build 9515), H200 BF16, batch 8, 32/128", "H200", "nvidia/dgx-h200"
    )
    cases.append(
        Case(
            H100_VS_MI300X,
            "NVIDIA H100 vs MI300X blog, DGX H100, TensorRT-LLM v0.5.0, batch 1, FP8",
            "Llama 2 70B, TP8, 2,048/128: one request's latency",
            1.7,
            "s",
            "measured",
            _one_request_s(LLAMA2_70B, 8, 2048, 128),
            "one request on the server's eight GPUs: TP8, the layout the blog does not name",
        )
    )
    cases += _vllm_cases(
        VLLM_LATENCY_A100,
        "vLLM performance benchmark (build 9523), A100 BF16, batch 8, 32/128",
        "A100",
        "generic/hgx-a100-8gpu",
    )
    return cases


CASES = _cases()


FORMATS = {
    "tokens/s": "{:,.0f}",
    "s": "{:.3f} s",
    "ms": "{:.1f} ms",
    "GPU hours": "{:,.0f}",
    "parameters": "{:,.0f}",
    "values": "{:,.0f}",
    "GB": "{:.3f} GB",
}


def _published(case: Case) -> str:
    value = f"{case.published:,}" if case.kind == "measured" else FORMATS[case.unit].format(case.published)
    return value if case.unit in ("tokens/s", "GPU hours") or case.kind == "hand" else f"{value} {case.unit}"


def table_markdown() -> str:
    """The docs table: each case, the tool's figure, the ratio and the tolerance."""
    lines = [
        "| # | published (source, table) | what | published | clusterforge | ratio | tolerance |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for number, case in enumerate(CASES, start=1):
        tool = case.figure()
        ratio = f"{case.ratio(tool):.{2 if case.kind == 'measured' else 3}f}"
        if not case.within(tool):
            ratio += f" (outside: {case.outside or 'unexplained'})"
        tolerance = f"{TOLERANCE[case.kind]:.0%}" + (f"; {case.note}" if case.note else "")
        lines.append(
            f"| {number} | {case.label} | {case.what} | {_published(case)} | {FORMATS[case.unit].format(tool)} | "
            f"{ratio} | {tolerance} |"
        )
    return "\n".join(lines) + "\n"


TABLE_START = "<!-- the table is made by `python tests/regen.py workloads` from tests/workload_cases.py -->\n"
TABLE_END = "<!-- end of the table -->\n"


def with_table(doc: str, table: str) -> str:
    """docs/workloads.md with `table` between its markers."""
    start = doc.index(TABLE_START) + len(TABLE_START)
    return doc[:start] + table + doc[doc.index(TABLE_END, start) :]
