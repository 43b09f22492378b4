"""Workload fit against hand computations from published model shapes and data sheets; one test per CF-WORK
finding. The published measurements are tests/workload_cases.py, asserted in test_workload_published.py."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from factories import dgx_data, valid_from
from helpers import BLUEPRINTS, REPO, run_cli
from pydantic import ValidationError
from workload_cases import CATALOG, DEEPSEEK, LLAMA2_70B, cluster, fits_of, meta_405b_layout, nvl32_ttft, serving

from clusterforge.catalog import GPU
from clusterforge.checks import run_checks
from clusterforge.checks.workloads import recheck_workloads
from clusterforge.errors import BlueprintError, Finding
from clusterforge.expand import expand
from clusterforge.model import InferenceService, TrainingJob
from clusterforge.workload import InferenceFit, TrainingFit
from clusterforge.workload.hardware import switch_reduces
from clusterforge.workload.memory import inference_memory, mlp_width, training_memory
from clusterforge.workload.plan import Plan, plan_layouts
from clusterforge.workload.report import inference_text
from clusterforge.workload.shape import resolve_shape

LAYER_S = 153.8e-6
"""Fixed time of each layer in a prefill pass (PREFILL_LAYER_S, derived in docs/workloads.md)."""


def training(**fields: Any) -> dict[str, Any]:
    return {"name": "job", "kind": "training", "model": "meta/llama-3-70b", **fields}


def inference(**fields: Any) -> dict[str, Any]:
    return {"name": "svc", "kind": "inference", "model": "meta/llama-3-70b", **fields}


def findings_of(data: dict[str, Any]) -> list[Finding]:
    valid = valid_from(data)
    topo, early = expand(valid)
    return [f for f in run_checks(valid, topo, early) if f.code.startswith("CF-WORK-")]


# --- shapes and memory by hand


def test_llama3_70b_kv_cache_per_token_in_bf16() -> None:
    # 2 (K and V) x 80 layers x 8 KV heads x 128 head dim x 2 bytes = 327,680 bytes
    svc = InferenceService.model_validate(
        inference(replicas=1, gpus_per_replica=8, precision="bf16", context_tokens=8192)
    )
    memory = inference_memory(svc, resolve_shape(svc, CATALOG), 141)
    assert memory.kv_per_token == 2 * 80 * 8 * 128 * 2 == 327_680
    assert memory.kv_per_session == 327_680 * 8192  # 2.68 GB per 8k-token session


def test_llama31_405b_weights_in_fp8() -> None:
    # The published shape (Llama 3 Herd of Models, Table 3) summed: per layer Q and O 16384^2 each, K and V
    # 16384 x 1024 each (8 heads x 128), the SwiGLU MLP 3 x 16384 x 53248; embeddings and output head 2 x
    # 128256 x 16384; two RMSNorm vectors per layer and a final one. The sum is the 405,853,388,800 parameters
    # Hugging Face lists for meta-llama/Llama-3.1-405B. One byte per parameter in fp8.
    per_layer = 2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384
    params = 126 * per_layer + 2 * 128256 * 16384 + 16384
    assert params == 405_853_388_800
    svc = InferenceService.model_validate(
        inference(model="meta/llama-3.1-405b", replicas=1, gpus_per_replica=8, precision="fp8")
    )
    weights = inference_memory(svc, resolve_shape(svc, CATALOG), 141).weights
    assert weights == pytest.approx(params, rel=1e-4)  # 405.85 GB: fits 8 x H200 (1,128 GB), not 4 x H100


# Per token and layer, what a FlashAttention-style layer of Llama 3 70B keeps (docs/workloads.md): the two RMSNorm
# inputs 4h, QKV input 2h, Q 2h, K and V 2 x 2h/8 (8 of 64 heads), attention output 2h, the MLP input 2h, gate,
# up and their product 3 x 2f with f = 28,672 (intermediate_size), the log-sum-exp 4 x 64 heads: 274,688 bytes.
LLAMA3_70B_LAYER_BYTES_PER_TOKEN = 12.5 * 8192 + 6 * 28672 + 4 * 64


def test_llama3_70b_tp8_pp4_zero1_memory_per_gpu() -> None:
    # 256 GPUs = TP8 x PP4 x DP8. Parameters per GPU n = 70.55e9 / 32 = 2.2047e9; bf16 weights 2n = 4.41 GB,
    # gradients 2n = 4.41 GB, Adam state 12n / DP8 = 3.31 GB (ZeRO-1). Activations with sequence parallel:
    # 274,688 bytes per token and layer / TP8 x 8192 tokens = 281.3 MB, times 80 layers (1F1B: the first stage
    # holds PP micro batches of L/PP layers) = 22.50 GB.
    job = TrainingJob.model_validate(
        training(gpus=256, tensor_parallel=8, pipeline_parallel=4, zero_stage=1, sequence_length=8192)
    )
    shape = resolve_shape(job, CATALOG)
    assert mlp_width(shape) == pytest.approx(28672, rel=1e-4)  # from the parameter count
    memory = training_memory(job, shape)
    n = 70.55e9 / 32
    assert memory.weights == pytest.approx(2 * n)
    assert memory.gradients == pytest.approx(2 * n)
    assert memory.optimizer == pytest.approx(12 * n / 8)
    assert memory.activations == pytest.approx(80 * LLAMA3_70B_LAYER_BYTES_PER_TOKEN * 8192 / 8, rel=1e-4)
    assert memory.total / 1e9 == pytest.approx(34.63, abs=0.01)
    zero3 = training_memory(job, resolve_shape(job, CATALOG), zero_stage=3)
    assert zero3.weights == pytest.approx(2 * n / 8) and zero3.gradients == pytest.approx(2 * n / 8)


def test_activations_keep_no_attention_scores() -> None:
    # With FlashAttention no recomputation keeps what selective keeps: Llama 3 70B at 4k, TP8, 274,688 x 4096 / 8
    # bytes per layer x 80 = 11.25 GB, where Korthikanti's 34 s b h + 5 a s^2 b (scores and dropout masks)
    # gave (34 + 5 x 64 x 4096 / 8192) x 4096 x 8192 / 8 x 80 = 65.1 GB. Full recomputation keeps each layer's
    # input, 2 s b h / t, and one layer's activations.
    job = TrainingJob.model_validate(training(gpus=64, tensor_parallel=8, sequence_length=4096, recompute="none"))
    shape = resolve_shape(job, CATALOG)
    none = training_memory(job, shape).activations
    assert none == pytest.approx(80 * LLAMA3_70B_LAYER_BYTES_PER_TOKEN * 4096 / 8, rel=1e-4)
    assert training_memory(job, shape, recompute="selective").activations == none
    full = training_memory(job, shape, recompute="full").activations
    assert full == pytest.approx(80 * 2 * 4096 * 8192 / 8 + LLAMA3_70B_LAYER_BYTES_PER_TOKEN * 4096 / 8, rel=1e-4)


def test_meta_llama3_405b_layout_fits_80gb_h100() -> None:
    # Llama 3 paper (Dubey et al. 2024, "The Llama 3 Herd of Models", https://arxiv.org/abs/2407.21783), Table 4:
    # 405B pre-training on 16,384 H100
    # 80 GB at TP8, CP1, PP16, DP128, 8,192-token sequences; section 3.3.2: FSDP shards optimizer state and
    # gradients (weights not resharded after the forward pass: ZeRO-2), and the first and last stages hold one
    # layer fewer (7 of 126). Per GPU: n = 405.85e9 / 128 = 3.171e9 parameters, weights 2n = 6.34 GB, gradients
    # 2n / 128 = 0.050 GB, Adam 12n / 128 = 0.297 GB; activations per token and layer (12 + 4 x 8/128) x 16384
    # + 6 x 53248 + 4 x 128 = 520,704 bytes, x 8192 / 8 x 16 micro batches x 7 layers = 59.72 GB: 66.4 GB of
    # 72 GB usable.
    memory = training_memory(*meta_405b_layout())
    n = 405.853e9 / 128
    assert memory.weights == pytest.approx(2 * n, rel=1e-4)
    assert memory.optimizer == pytest.approx(12 * n / 128, rel=1e-4)
    per_token = 12.25 * 16384 + 6 * 53248 + 4 * 128
    assert memory.activations == pytest.approx(per_token * 8192 / 8 * 16 * 7, rel=1e-4)
    assert memory.total / 1e9 == pytest.approx(66.4, abs=0.05)
    assert memory.total <= 80e9 * 0.9


def test_expert_states_shard_over_the_expert_data_parallel_group() -> None:
    # DeepSeek-V3 technical report (2024), section 3.2: 2,048 H800, PP16, EP64 over 8 nodes, ZeRO-1 data
    # parallel; TP1 so DP = 2048 / 16 = 128. Experts e = (671 - 37) / (256 - 8) = 2.5565B each, 256 of them
    # 654.5B, dense part D = 16.55B. Per GPU: dense 16.55e9 / 16 = 1.034e9, experts 654.5e9 / (16 x 64) =
    # 0.6391e9. The dense Adam state shards over DP128, an expert's only over the 128 / 64 = 2 ranks that hold it:
    # 12 x (1.034e9 / 128 + 0.6391e9 / 2) = 3.932 GB (sharding the experts over all 128 gave 0.157 GB, 25x less).
    job = TrainingJob.model_validate(
        training(
            model="deepseek/deepseek-v3",
            precision="fp8",
            gpus=2048,
            pipeline_parallel=16,
            expert_parallel=64,
            zero_stage=1,
        )
    )
    shape = resolve_shape(job, CATALOG)
    experts = (671e9 - 37e9) / 248 * 256
    dense = 671e9 - experts
    memory = training_memory(job, shape)
    assert memory.optimizer == pytest.approx(12 * (dense / 16 / 128 + experts / 1024 / 2))
    assert memory.optimizer / 1e9 == pytest.approx(3.932, abs=0.001)
    assert memory.gradients == pytest.approx(2 * (dense / 16 + experts / 1024))  # ZeRO-1 keeps all gradients


def test_context_parallel_shards_state_over_data_x_context() -> None:
    # Llama 3 70B on 128 GPUs at TP8 CP16 (DP1): ZeRO-1 shards Adam over data x context = 16 ranks (Megatron's
    # distributed optimizer), 12 x 70.55e9 / 8 / 16 = 6.61 GB, not 105.8 GB. Ring attention passes each GPU's
    # K and V of its TP slice, 1 of 8 KV heads: s = 131072 / 16 = 8192 tokens x 2 x 1 x 128 x 2 bytes = 4.19 MB
    # per layer, 3 x 15 x 80 layers x 4.19 MB = 15.1 GB per step, over the fabric (CP16 x TP8 spans 16 nodes).
    job = TrainingJob.model_validate(training(gpus=128, tensor_parallel=8, context_parallel=16, sequence_length=131072))
    shape = resolve_shape(job, CATALOG)
    assert training_memory(job, shape).optimizer == pytest.approx(12 * 70.55e9 / 8 / 16)
    (fit,) = fits_of(cluster(16, [training(gpus=128, tensor_parallel=8, context_parallel=16, sequence_length=131072)]))
    assert isinstance(fit, TrainingFit)
    volume = 3 * 15 * 80 * 8192 * 2 * 1 * 128 * 2
    assert fit.speed.collectives_s["context"] == pytest.approx(volume / 50e9)


def test_mixture_of_experts_splits_dense_and_expert_parameters() -> None:
    # Mixtral 8x7B: P = D + 8e = 46.7B, A = D + 2e = 12.9B, so e = 33.8 / 6 = 5.633B and D = 1.633B
    job = TrainingJob.model_validate(
        training(model="mistralai/mixtral-8x7b", gpus=64, tensor_parallel=2, expert_parallel=8)
    )
    shape = resolve_shape(job, CATALOG)
    assert shape.expert_params == pytest.approx(8 * 33.8e9 / 6)
    assert shape.dense_params == pytest.approx(46.7e9 - 8 * 33.8e9 / 6)
    # dense split over TP2, experts over TP2 x EP8
    n = training_memory(job, shape).params_per_gpu
    assert n == pytest.approx(shape.dense_params / 2 + shape.expert_params / 16)


# --- speed by hand


def test_h200_decode_bound_from_its_hbm_bandwidth() -> None:
    # One Llama 3 70B replica in fp8 on one H200, one session of one token: each decode step reads the
    # 70.55 GB of weights and 163,840 bytes of fp8 KV cache at 4.8 TB/s (data sheet) -> 14.70 ms, 68.0 tokens/s.
    data = cluster(
        1,
        [inference(replicas=1, gpus_per_replica=1, precision="fp8", context_tokens=1, decode_bandwidth_efficiency=1.0)],
    )
    (fit,) = fits_of(data)
    assert isinstance(fit, InferenceFit)
    step = (70.55e9 + 163_840) / 4.8e12
    assert fit.speed.decode_step_s == pytest.approx(step)
    assert fit.speed.decode_tokens_per_s_session == pytest.approx(68.04, abs=0.01)
    assert fit.speed.decode_memory_bound
    # The request's one-token prompt is bound, like a decode step, by reading the weights (14.70 ms; its
    # 2 x 70.55e9 FLOPs take 0.143 ms) plus the fixed time of the 80 layers of a prefill pass (12.30 ms), then
    # comes its one output step at the average context of 1 + 1/2 tokens: 1 / (27.00 + 14.70 ms) = 24.0 tokens/s
    average = (70.55e9 + 163_840 * 1.5) / 4.8e12
    assert fit.speed.tokens_per_s_session == pytest.approx(1 / (average + 70.55e9 / 4.8e12 + 80 * LAYER_S))


def test_host_time_adds_to_every_decode_step() -> None:
    # The same replica with the engine's host taking 2.5 ms between steps: each step is 14.70 + 2.5 ms (68.04 ->
    # 58.14 tokens/s); the prompt's pass is no decode step and keeps its time.
    fields = {"replicas": 1, "gpus_per_replica": 1, "precision": "fp8", "context_tokens": 1}
    fields["decode_bandwidth_efficiency"] = 1.0
    (plain,) = fits_of(cluster(1, [inference(**fields)]))
    (hosted,) = fits_of(cluster(1, [inference(**fields, host_step_ms=2.5)]))
    assert isinstance(plain, InferenceFit) and isinstance(hosted, InferenceFit)
    step = (70.55e9 + 163_840) / 4.8e12
    assert hosted.speed.decode_step_s == pytest.approx(step + 0.0025)
    assert hosted.speed.decode_tokens_per_s_session == pytest.approx(58.14, abs=0.01)
    assert hosted.speed.ttft_s == plain.speed.ttft_s


def _speed_of(**fields: Any) -> Any:
    base = {"replicas": 1, "gpus_per_replica": 1, "precision": "fp8", "context_tokens": 4096}
    base |= {"concurrent_requests": 4, "decode_bandwidth_efficiency": 1.0}
    (fit,) = fits_of(cluster(1, [inference(**base, **fields)]))
    assert isinstance(fit, InferenceFit)
    return fit.speed


def test_a_request_mix_counts_each_kind_by_its_share() -> None:
    # Llama 3 70B fp8 on one H200, 4 sessions: 75% of requests are 1,024 + 256 tokens, 25% are 3,072 + 1,024. A
    # request of a kind holds its session for its output steps, so the sessions' average context counts each kind
    # by share x output: (0.75 x 256 x 1,152 + 0.25 x 1,024 x 3,584) / (0.75 x 256 + 0.25 x 1,024) = 2,541.7
    # tokens; a decode step then reads 70.55 GB of weights and 4 x 2,541.7 x 163,840 bytes of KV at 4.8 TB/s. The
    # replica spends on an average request 0.75 and 0.25 of each kind's prefill and (0.75 x 256 + 0.25 x 1,024) /
    # 4 = 112 steps: output tokens/s = 448 / (that time). The time to first token is the longest prompt's.
    mix = [
        {"share": 0.75, "prompt_tokens": 1024, "output_tokens": 256},
        {"share": 0.25, "prompt_tokens": 3072, "output_tokens": 1024},
    ]
    mixed = _speed_of(request_mix=mix)
    short = _speed_of(prompt_tokens=1024, output_tokens=256)
    long = _speed_of(prompt_tokens=3072, output_tokens=1024)
    context = (0.75 * 256 * 1152 + 0.25 * 1024 * 3584) / (0.75 * 256 + 0.25 * 1024)
    assert context == pytest.approx(2541.71, abs=0.01)
    step = (70.55e9 + 4 * context * 163_840) / 4.8e12
    assert mixed.decode_step_avg_s == pytest.approx(step, rel=1e-6)
    prefill = 0.75 * short.prefill_busy_s + 0.25 * long.prefill_busy_s
    assert mixed.tokens_per_s_replica == pytest.approx(448 / (prefill + 112 * step), rel=1e-6)
    assert (mixed.prompt_tokens, mixed.output_tokens) == (1536, 448)
    assert mixed.ttft_s == long.ttft_s and mixed.ttft_prompt_tokens == 3072
    assert [kind[3] for kind in mixed.mix] == [short.ttft_s, long.ttft_s]
    # one kind is the typical request written out
    one = _speed_of(request_mix=[{"share": 1.0, "prompt_tokens": 1024, "output_tokens": 256}])
    assert dataclasses.replace(one, mix=()) == short


def test_fit_reports_each_kind_of_a_request_mix() -> None:
    mix = [
        {"share": 0.75, "prompt_tokens": 1024, "output_tokens": 256},
        {"share": 0.25, "prompt_tokens": 3072, "output_tokens": 1024},
    ]
    base = {"replicas": 1, "gpus_per_replica": 1, "precision": "fp8", "context_tokens": 4096}
    (fit,) = fits_of(cluster(1, [inference(**base, concurrent_requests=4, request_mix=mix)]))
    assert isinstance(fit, InferenceFit)
    data = fit.as_dict()
    assert (data["prompt_tokens"], data["output_tokens"], data["ttft_prompt_tokens"]) == (1536, 448, 3072)
    kinds = data["request_mix"]
    lengths = [(k["share"], k["prompt_tokens"], k["output_tokens"]) for k in kinds]
    assert lengths == [(0.75, 1024, 256), (0.25, 3072, 1024)]
    assert kinds[1]["ttft_ms"] == data["ttft_ms"] > kinds[0]["ttft_ms"]
    text = "\n".join(inference_text(fit))
    assert "request mix (share, prompt + output tokens, time to first token): 75% 1,024 + 256 (" in text
    assert "requests of 1,536 prompt + 448 output tokens on average: time to first token of the longest prompt" in text


def test_a_request_mix_replaces_the_typical_request() -> None:
    mix = [{"share": 1.0, "prompt_tokens": 1024, "output_tokens": 256}]
    with pytest.raises(ValidationError, match="give request_mix or prompt_tokens and output_tokens, not both"):
        InferenceService.model_validate(inference(replicas=1, gpus_per_replica=1, prompt_tokens=512, request_mix=mix))


def test_training_step_time_from_flops_at_mfu() -> None:
    # PaLM's model FLOPs per token with causal attention: 6N + 6 L H Q T = 6 x 70.55e9 + 6 x 80 x 64 x 128 x 8192
    # = 4.555e11. 240 H200 at 989.4 TFLOPS bf16 and MFU 0.4 run 15,728,640 tokens in 4.555e11 x 15,728,640 /
    # (240 x 989.4e12 x 0.4) = 75.43 s: 208,500 tokens/s.
    data = cluster(
        30, [training(gpus=240, tensor_parallel=8, sequence_length=8192, global_batch_tokens=15_728_640, mfu=0.4)]
    )
    (fit,) = fits_of(data)
    assert isinstance(fit, TrainingFit)
    flops = 6 * 70.55e9 + 6 * 80 * 64 * 128 * 8192
    assert fit.speed.flops_per_token == pytest.approx(flops)
    assert fit.speed.compute_s == pytest.approx(flops * 15_728_640 / (240 * 989.4e12 * 0.4))
    # Data parallel: ring reduce-scatter + all-gather of the bf16 gradients of one GPU (70.55e9 / 8 x 2 bytes),
    # 2 x 29/30 of it, at one 400G NIC per GPU (50 GB/s); the 30 nodes fit one 32-node scalable unit, so each
    # data-parallel ring stays on its rail's leaf.
    assert fit.speed.collectives_s["data"] == pytest.approx(2 * 29 / 30 * 70.55e9 / 8 * 2 / 50e9)
    assert fit.speed.collective_tier == {"tensor": "nvlink", "data": "leaf"}
    # Tensor (sequence parallel): 8 x 7/8 x s b h x 2 bytes per layer, 80 layers, 64 micro batches at NCCL's
    # effective 370 GB/s of NVLink 4's 450 GB/s line rate
    assert fit.speed.collectives_s["tensor"] == pytest.approx(8 * 7 / 8 * 8192 * 8192 * 2 * 80 * 64 / 370e9)


def test_expert_parallel_serving_pays_its_all_to_all() -> None:
    # DeepSeek-V3 on 8 GB200 at EP8 (TP1): an 8,192-token prompt sends, per layer, the 8192 / 8 tokens of each
    # GPU 8 times (top-8), 7/8 of them to other GPUs, 7168 values each, FP8 out and BF16 back (3 bytes):
    # 61 x 1024 x 8 x 7168 x 3 x 7/8 = 9.40 GB at NCCL's effective 370/450 of NVLink 5's 900 GB/s per direction,
    # 740 GB/s = 12.7 ms.
    lengths = {"prompt_tokens": 8192, "context_tokens": 16384}
    svc = inference(**DEEPSEEK, replicas=1, gpus_per_replica=8, expert_parallel=8) | lengths
    (fit,) = fits_of(cluster(1, [svc], model="nvidia/dgx-b200"))
    assert isinstance(fit, InferenceFit)
    volume = 61 * 1024 * 8 * 7168 * 3 * 7 / 8
    assert fit.speed.prefill_comm_s == pytest.approx(volume / 740e9)


def test_checkpoint_written_at_the_storage_systems_write_rate(tmp_path: Path) -> None:
    # A storage node's catalog entry gives its published throughput; two such nodes writing 20 GB/s each take
    # 988 GB (Llama 3 70B: 70.55e9 x 14 bytes of weights and Adam state) in 988e9 / 40e9 = 24.7 s, where the
    # 4 DGX H200's storage ports (2 x 400 Gb/s each, 400 GB/s together) alone would take 2.5 s.
    servers = yaml.safe_load((REPO / "clusterforge/catalog/data/servers.yaml").read_text(encoding="utf-8"))["servers"]
    nas = servers["generic/cpu-1u"] | {"name": "test NAS", "storage_throughput": {"read_gbs": 40, "write_gbs": 20}}
    (tmp_path / "site.yaml").write_text(yaml.safe_dump({"servers": {"site/nas": nas}}), encoding="utf-8")
    data = cluster(4, [training(gpus=32, tensor_parallel=8)])
    racks = [r for r in data["fabrics"]["compute"]["switch_racks"]]
    data["node_groups"].append(
        {"name": "nas", "model": "site/nas", "count": 2, "role": "storage", "placement": {"racks": racks[-1:]}}
    )
    data["catalogs"] = [str(tmp_path / "site.yaml")]
    (fit,) = fits_of(data)
    assert isinstance(fit, TrainingFit)
    assert fit.checkpoint_bytes == pytest.approx(70.55e9 * 14)
    assert fit.checkpoint_rate_gbs == (40, "storage system")
    assert fit.checkpoint_write_s == pytest.approx(70.55e9 * 14 / 40e9)
    (no_storage,) = fits_of(cluster(4, [training(gpus=32, tensor_parallel=8)]))
    assert isinstance(no_storage, TrainingFit)
    assert (
        no_storage.checkpoint_rate_gbs is not None and no_storage.checkpoint_rate_gbs[1] == "storage ports' line rate"
    )


def test_checkpoint_storage_named_by_the_job() -> None:
    # Two DDN AI400X2-Turbo (catalog: 80 GB/s of writes each, measured by DDN from one DGX B200) take Llama 3 70B's
    # 988 GB in 988e9 / 160e9 = 6.17 s, slower than the 4 DGX H200's 400 GB/s of storage ports
    job = training(gpus=32, tensor_parallel=8, checkpoint_storage={"model": "ddn/ai400x2-turbo", "count": 2})
    (fit,) = fits_of(cluster(4, [job]))
    assert isinstance(fit, TrainingFit)
    assert fit.checkpoint_rate_gbs == (160, "storage system")
    assert fit.checkpoint_write_s == pytest.approx(70.55e9 * 14 / 160e9)
    with pytest.raises(BlueprintError) as caught:
        valid_from(cluster(4, [training(gpus=32, checkpoint_storage={"model": "ddn/ai400x2"})]))
    assert [f.code for f in caught.value.findings] == ["CF-REF-002"]


def test_energy_at_the_typical_draw_where_the_catalog_has_it(tmp_path: Path) -> None:
    # A server entry with a typical draw of 8,000 W: each of its 8 GPUs counts 1,000 W, not its share of the
    # planned (maximum) draw
    servers = yaml.safe_load((REPO / "clusterforge/catalog/data/servers.yaml").read_text(encoding="utf-8"))["servers"]
    typical = servers["nvidia/dgx-h200"] | {"name": "DGX H200, measured", "typical_power_w": 8000}
    (tmp_path / "site.yaml").write_text(yaml.safe_dump({"servers": {"site/dgx-h200": typical}}), encoding="utf-8")
    data = cluster(1, [inference(replicas=1, gpus_per_replica=8, precision="fp8")], model="site/dgx-h200")
    data["catalogs"] = [str(tmp_path / "site.yaml")]
    (fit,) = fits_of(data)
    assert isinstance(fit, InferenceFit)
    assert fit.hw.gpu_w == 1000 and fit.hw.power_basis == "typical"
    assert fit.joules_per_token == pytest.approx(8 * 1000 / fit.speed.tokens_per_s_replica)


def test_pipeline_bubble_lengthens_the_step() -> None:
    # Llama 3 70B on 256 H200 at TP8 PP4 DP8, 16 micro batches of 8,192 tokens per pipeline: 1F1B idles
    # (p - 1) / m = 3/16 of the compute (Narayanan et al. 2021, section 2.2.1); PP1 (TP8 DP32, 4 micro batches)
    # has no bubble. Same tokens, same FLOPs: PP4's step is 19/16 of PP1's.
    tokens = 8 * 16 * 8192
    pp4, pp1 = fits_of(
        cluster(
            32,
            [
                training(
                    gpus=256, tensor_parallel=8, pipeline_parallel=4, global_batch_tokens=tokens, sequence_length=8192
                ),
                training(name="flat", gpus=256, tensor_parallel=8, global_batch_tokens=tokens, sequence_length=8192),
            ],
        )
    )
    assert isinstance(pp4, TrainingFit) and isinstance(pp1, TrainingFit)
    assert pp4.speed.micro_batches == 16
    assert pp4.speed.compute_s == pytest.approx(pp4.speed.work_s * (1 + 3 / 16))
    assert pp1.speed.compute_s == pytest.approx(pp1.speed.work_s)
    assert pp4.speed.compute_s / pp1.speed.compute_s == pytest.approx(19 / 16)


def test_full_recomputation_costs_a_third_more_compute() -> None:
    # Korthikanti et al. 2022, section 5: recomputing every layer's forward pass adds about 33% (8N of 6N FLOPs
    # per token); selective recomputation of the scores costs nothing with FlashAttention
    full, selective = fits_of(
        cluster(
            1, [training(gpus=8, tensor_parallel=8, recompute="full"), training(name="b", gpus=8, tensor_parallel=8)]
        )
    )
    assert isinstance(full, TrainingFit) and isinstance(selective, TrainingFit)
    assert full.speed.compute_s == pytest.approx(selective.speed.compute_s * 4 / 3)
    assert selective.speed.compute_s == pytest.approx(selective.speed.work_s)


def test_fp8_training_is_timed_at_the_peak_its_mfu_was_measured_against() -> None:
    # Published MFUs (Llama 3 405B, 38-43%) are of BF16 runs, against the BF16 peak: an FP8 job at MFU 0.4 is
    # timed at 0.4 x 989.4 TFLOPS unless its MFU is said to be of the FP8 peak (1978.9 TFLOPS on H200).
    bf16_basis, fp8_basis = fits_of(
        cluster(
            1,
            [
                training(gpus=8, tensor_parallel=8, precision="fp8"),
                training(name="b", gpus=8, tensor_parallel=8, precision="fp8", mfu_precision="fp8"),
            ],
        )
    )
    assert isinstance(bf16_basis, TrainingFit) and isinstance(fp8_basis, TrainingFit)
    flops = bf16_basis.speed.flops_per_token * bf16_basis.speed.tokens_per_step
    assert bf16_basis.speed.compute_s == pytest.approx(flops / (8 * 989.4e12 * 0.4))
    assert fp8_basis.speed.compute_s == pytest.approx(flops / (8 * 1978.9e12 * 0.4))


def test_fp4_runs_at_the_fp4_rate_where_there_is_one() -> None:
    # B200: FP4 9,000 TFLOPS dense (HGX B200 specifications, 18 PFLOPS sparse / 2); H200 has no FP4 tensor
    # cores: 4-bit weights run at its FP8 rate, 1,978.9 TFLOPS.
    svc = inference(replicas=1, gpus_per_replica=1, precision="fp4", prompt_tokens=4096, context_tokens=8192)
    (b200,) = fits_of(cluster(1, [svc], model="nvidia/dgx-b200"))
    (h200,) = fits_of(cluster(1, [svc]))
    assert b200.hw.peak_tflops("fp4") == 9000 and h200.hw.peak_tflops("fp4") == 1978.9
    flops = 2 * 70.55e9 * 4096 + 2 * 80 * 4096**2 * 8192
    assert isinstance(b200, InferenceFit)
    assert b200.speed.ttft_s == pytest.approx(flops / (9000e12 * 0.5) + 80 * LAYER_S)


def test_data_parallel_beyond_a_scalable_unit_crosses_the_spine_at_its_oversubscription() -> None:
    # 8 DGX H200 in scalable units of 4 at 2:1: a TP8 job's 8-way data-parallel ring spans 8 nodes, more than
    # one unit, so it crosses the spines at 50 GB/s / 2 = 25 GB/s: 2 x 7/8 x 70.55e9 / 8 x 2 bytes / 25e9 = 1.23 s.
    data = dgx_data(8, model="nvidia/dgx-h200", ratio="2:1", scalable_unit=4)
    data["workloads"] = [training(gpus=64, tensor_parallel=8)]
    (fit,) = fits_of(data)
    assert isinstance(fit, TrainingFit)
    assert fit.speed.collective_tier["data"] == "spine"
    assert fit.speed.collectives_s["data"] == pytest.approx(2 * 7 / 8 * 70.55e9 / 8 * 2 / 25e9)


def test_training_run_cost_from_capex_and_electricity() -> None:
    # EUR 45,000 per GPU over 5 years: 45000 / (5 x 8760) = 1.0274 per hour; the GPU's share of a 10.2 kW DGX,
    # 1.275 kW, at PUE 1.35 and EUR 0.20 per kWh: 0.3443 per hour. 1e12 tokens at 208,500 tokens/s (above)
    # take 1,332.2 h on 240 GPUs: 240 x 1332.2 x 1.3716 = EUR 438,500.
    data = cluster(
        30,
        [
            training(
                gpus=240, tensor_parallel=8, sequence_length=8192, global_batch_tokens=15_728_640, mfu=0.4, tokens=1e12
            )
        ],
    )
    data["site"]["pue"] = 1.35
    data["prices"] = {"currency": "EUR", "capex_per_gpu": 45000, "depreciation_years": 5, "electricity_kwh": 0.2}
    (fit,) = fits_of(data)
    assert isinstance(fit, TrainingFit)
    hour = 45000 / (5 * 8760) + 1.275 * 1.35 * 0.2
    assert fit.gpu_hour_cost == pytest.approx(hour)
    flops = 6 * 70.55e9 + 6 * 80 * 64 * 128 * 8192
    hours = 1e12 / (15_728_640 / (flops * 15_728_640 / (240 * 989.4e12 * 0.4))) / 3600
    assert fit.as_dict()["run_cost"] == pytest.approx(240 * hours * hour, rel=2e-3)
    assert fit.as_dict()["run_cost"] == pytest.approx(438_500, rel=2e-3)


def test_prefill_time_to_first_token() -> None:
    # 8,192-token prompt on 4 H200 in fp8 at 50% of 4 x 1978.9 TFLOPS: 2 x 70.55e9 x 8192 + causal attention
    # 2 x 80 x 8192^2 x 8192 = 1.1559e15 + 8.796e13 FLOPs -> 314.3 ms; plus the tensor-parallel all-reduces
    # (Megatron-LM: 2 per layer of 8192 tokens x 8192 hidden x 2 bytes), reduced in the HGX board's NVSwitches
    # (NVLink SHARP): each GPU sends its 80 x 2 x 134.2 MB = 21.5 GB once, at the 275 GB/s NCCL reaches with
    # NVLS on H100 -> 78.1 ms (a ring would move 2 x 3/4 of it at 370 GB/s: 87.1 ms), and 160 x 35.6 us of
    # all-reduce latency (5.7 ms); and the fixed time of 80 layers of a prefill pass, 80 x 153.8 us = 12.3 ms:
    # 410.4 ms
    data = cluster(
        1, [inference(replicas=1, gpus_per_replica=4, precision="fp8", prompt_tokens=8192, context_tokens=32768)]
    )
    (fit,) = fits_of(data)
    assert isinstance(fit, InferenceFit)
    flops = 2 * 70.55e9 * 8192 + 2 * 80 * 8192**2 * 8192
    comm = 80 * 2 * 8192 * 8192 * 2 / 275e9 + 160 * 35.6e-6
    assert fit.hw.nvlink_sharp
    assert fit.speed.prefill_comm_s == pytest.approx(comm)
    assert fit.speed.tp_tier == "nvlink"
    assert fit.speed.ttft_s == pytest.approx(flops / (4 * 1978.9e12 * 0.5) + 80 * LAYER_S + comm)
    assert fit.speed.ttft_s * 1000 == pytest.approx(410.4, abs=0.1)


def test_all_reduce_in_the_switch_only_where_nvswitch_reduces() -> None:
    # NVLink SHARP needs the third-generation NVSwitch (NVLink 4, Hopper) or later: an A100 board's second-generation
    # NVSwitch runs the ring, 2(t-1)/t of the buffer per GPU; L40S has no NVLink; GB200 NVL72 trays have no
    # NVSwitch on board, but their 72-GPU domain is joined by the rack's NVLink switches.
    a100, h200, gb200, l40s = (
        CATALOG.require(key, GPU) for key in ("nvidia/a100-sxm-80gb", "nvidia/h200-sxm", "nvidia/gb200", "nvidia/l40s")
    )
    assert not switch_reduces(a100, True, 8, 8)
    assert switch_reduces(h200, True, 8, 8)
    assert not switch_reduces(h200, False, 8, 2)  # GPUs joined by NVLink bridges
    assert switch_reduces(gb200, False, 4, 72)
    assert not switch_reduces(l40s, None, 8, 1)


def test_tensor_parallel_across_nodes_slows_the_first_token() -> None:
    # The same prompt at TP16 over two DGX H200: the all-reduces leave NVLink for the 400G NICs (50 GB/s per GPU,
    # both nodes under one leaf): 2 x 15/16 x 80 x 2 x 134.2 MB / 50e9 = 0.805 s, against 0.157 s of compute
    data = cluster(
        2, [inference(replicas=1, gpus_per_replica=16, precision="fp8", prompt_tokens=8192, context_tokens=32768)]
    )
    (fit,) = fits_of(data)
    assert isinstance(fit, InferenceFit)
    assert fit.speed.tp_tier in {"leaf", "spine"} and fit.hw.oversubscription == 1
    comm = 2 * 15 / 16 * 80 * 2 * 8192 * 8192 * 2 / 50e9 + 160 * 35.6e-6
    assert fit.speed.prefill_comm_s == pytest.approx(comm)
    assert fit.speed.ttft_s * 1000 == pytest.approx(314.3 / 4 + 80 * LAYER_S * 1000 + comm * 1000, abs=0.1)


def test_gh200_nvl32_ttft_of_405b_at_32k_by_hand() -> None:
    # The case of docs/workloads.md's table: 3.103e16 FLOPs on 32 GPUs at 50% of 1978.9 TFLOPS = 0.980 s, 126 x
    # 153.8 us of per-layer fixed time = 0.019 s, all-reduces (reduced in the NVLink switches) 2 x 126 x 32768 x
    # 16384 x 2 bytes at NCCL's 275 GB/s with NVLS = 0.983 s and 252 x 35.6 us = 0.009 s: 1.992 s, 0.80 of the 1.6 s
    # measured. With a ring (2 x 31/32 of the buffer at 370 GB/s) it comes out at 2.43 s (0.66, outside).
    speed = nvl32_ttft("meta/llama-3.1-405b", 32768)
    flops = 2 * 405.853e9 * 32768 + 2 * 126 * 32768**2 * 16384
    comm = 2 * 126 * 32768 * 16384 * 2 / 275e9 + 252 * 35.6e-6
    assert speed.prefill_comm_s == pytest.approx(comm, rel=1e-3)
    assert speed.ttft_s == pytest.approx(flops / (32 * 1978.9e12 * 0.5) + 126 * 153.8e-6 + comm, rel=1e-3)


def test_short_prompt_is_bound_by_reading_the_weights() -> None:
    # Llama 2 70B fp8 at TP4 on H100, 128 tokens: its FLOPs at 50% of 4 x 1978.9 TFLOPS take 4.5 ms, reading the
    # 68.98 GB of weights at 80% of 3.35 TB/s on each of 4 GPUs 6.43 ms, as a decode step does; then the 80
    # layers' fixed time and the all-reduces. TensorRT-LLM v0.5 measured 26 ms (the table's case).
    short = serving({"shape": LLAMA2_70B, "gpus_per_replica": 4, "concurrent_requests": 1}, 128, 1, "nvidia/dgx-h100")
    weights = 68.98e9 / (4 * 3.35e12 * 0.8)
    assert short.ttft_s == pytest.approx(weights + 80 * 153.8e-6 + short.prefill_comm_s)


def test_cost_per_token_counts_the_prefill() -> None:
    # 2048/128 on one H200: the cost per million output tokens is that of the whole request (prefill and
    # decode), 1 GPU x USD 1 / (tokens/s x 3600) x 1e6; decode alone would make it about 10x cheaper.
    speed = serving({"model": "meta/llama-3-70b", "gpus_per_replica": 1}, 2048, 128)
    decode_only = speed.concurrency / speed.decode_step_avg_s
    assert decode_only / speed.tokens_per_s_replica > 8
    lengths = {"context_tokens": 2176, "prompt_tokens": 2048, "output_tokens": 128}
    svc = inference(replicas=1, gpus_per_replica=1, precision="fp8", concurrent_requests=speed.concurrency)
    data = cluster(1, [svc | lengths])
    data["prices"] = {"currency": "USD", "gpu_hour": 1.0}
    (fit,) = fits_of(data)
    assert isinstance(fit, InferenceFit)
    assert fit.as_dict()["cost_per_million_tokens"] == pytest.approx(
        1.0 / (fit.speed.tokens_per_s_replica * 3600) * 1e6, rel=0.01
    )
    assert fit.speed.tokens_per_s_replica == pytest.approx(speed.tokens_per_s_replica)


# --- serving features, by hand


def _one(svc: dict[str, Any], nodes: int = 1) -> InferenceFit:
    (fit,) = fits_of(cluster(nodes, [svc]))
    assert isinstance(fit, InferenceFit)
    return fit


BASE = {"replicas": 1, "precision": "fp8", "prompt_tokens": 8192, "output_tokens": 1024, "context_tokens": 9216}


def test_pipeline_parallel_replica_does_not_shorten_the_first_token() -> None:
    # Llama 3 70B fp8 on 4 H200 as PP4 (TP1): a prompt passes the four stages in turn, each computing a quarter
    # of 1.2438e15 FLOPs on one GPU at 50% of 1978.9 TFLOPS: 1.2571 s, plus 3 hand-offs of 8192 x 8192 x 2
    # bytes at 370 GB/s (1.09 ms); the replica overlaps four prompts, so each occupies it for a quarter.
    fit = _one(inference(gpus_per_replica=4, pipeline_parallel=4, concurrent_requests=8) | BASE)
    flops = 2 * 70.55e9 * 8192 + 2 * 80 * 8192**2 * 8192
    handoffs = 3 * 8192 * 8192 * 2 / 370e9
    assert fit.speed.tensor_parallel == 1
    assert fit.speed.ttft_s == pytest.approx(flops / (1978.9e12 * 0.5) + 80 * LAYER_S + handoffs)
    assert fit.speed.prefill_busy_s == pytest.approx(fit.speed.ttft_s / 4)
    # decode: 8 sessions as 4 micro batches of 2; each stage reads 70.55 GB / 4 and its quarter of 2 sessions'
    # KV cache at 8,704 tokens (the average context) from one H200 at 80% of 4.8 TB/s, four stages in turn,
    # plus 3 hand-offs of 2 tokens
    kv = 163_840 * 2 * (8192 + 512)
    stage = (70.55e9 + kv) / 4 / (4.8e12 * 0.8)
    assert fit.speed.decode_step_avg_s == pytest.approx(4 * stage + 3 * 2 * 8192 * 2 / 370e9)


def test_prefix_cache_hits_are_not_prefilled_again() -> None:
    # Half of the 8,192-token prompt cached: 4,096 new tokens, 2 x 70.55e9 x 4096 FLOPs of projections and MLP
    # and causal attention 2 x 80 x (8192^2 - 4096^2) x 8192 (the new tokens attend to the cached ones), on one
    # H200 at 50% of 1978.9 TFLOPS.
    fit = _one(inference(gpus_per_replica=1, prefix_cache_hit_rate=0.5) | BASE)
    flops = 2 * 70.55e9 * 4096 + 2 * 80 * (8192**2 - 4096**2) * 8192
    assert fit.speed.ttft_s == pytest.approx(flops / (1978.9e12 * 0.5) + 80 * LAYER_S)


def test_speculative_decoding_yields_its_expected_tokens_per_step() -> None:
    # Leviathan et al. 2023, equation 1: gamma = 4 drafted tokens accepted at alpha = 0.8 give (1 - 0.8^5) / 0.2
    # = 3.3616 tokens per verification step. One session on one H200: the step reads 70.55 GB (plus the KV cache
    # of 8,704 tokens) and the draft (Llama 3.2 1B, 1.24 GB in fp8) 4 times, at 80% of 4.8 TB/s.
    spec = {"draft_params_b": 1.24, "draft_tokens": 4, "acceptance_rate": 0.8}
    fit = _one(inference(gpus_per_replica=1, speculative=spec) | BASE)
    tau = (1 - 0.8**5) / (1 - 0.8)
    assert fit.speed.tokens_per_step == pytest.approx(3.3616)
    step = (70.55e9 + 163_840 * (8192 + 512)) / (4.8e12 * 0.8) + 4 * 1.24e9 / (4.8e12 * 0.8)
    assert fit.speed.decode_step_avg_s == pytest.approx(step / tau)


def test_a_per_query_head_kernel_is_reported_and_read_eight_times() -> None:
    # Llama 3 70B (64 query heads on 8 KV heads), one session on one H200: masked MHA reads the 8,704-token
    # average context's cache 8 times a step, 8 x 163,840 x 8,704 = 11.4 GB beside the 70.55 GB of weights.
    fit = _one(inference(gpus_per_replica=1, attention_kernel="per-query-head") | BASE)
    step = (70.55e9 + 8 * 163_840 * (8192 + 512)) / (4.8e12 * 0.8)
    assert fit.speed.kv_reads == 8 and fit.speed.decode_step_avg_s == pytest.approx(step)
    assert fit.as_dict()["kv_reads_per_step"] == 8 and fit.as_dict()["attention_kernel"] == "per-query-head"
    assert "read 8 times a decode step (per-query-head attention)" in inference_text(fit)[2]
    assert "read" not in inference_text(_one(inference(gpus_per_replica=1) | BASE))[2]


def test_disaggregated_prefill_pool() -> None:
    # A prefill pool of 4 H200 (TP4) per replica of 4 decode GPUs. TTFT: 1.2438e15 FLOPs on 4 GPUs at 50%
    # = 314.3 ms, the TP4 all-reduces 78.1 + 5.7 ms (reduced in the NVSwitches), and the prompt's fp8 KV cache,
    # 163,840 x 8192 = 1.34 GB, sent by 4 GPUs at 370 GB/s (both pools in one 8-GPU NVLink domain): 0.907 ms. The
    # decode GPUs run no prefill: a session's rate is the decode step's, and the replica's rate is the slower pool's.
    fit = _one(inference(gpus_per_replica=4, prefill_gpus=4, concurrent_requests=16) | BASE)
    flops = 2 * 70.55e9 * 8192 + 2 * 80 * 8192**2 * 8192
    allreduce = 80 * 2 * 8192 * 8192 * 2 / 275e9 + 160 * 35.6e-6
    kv = 163_840 * 8192 / (4 * 370e9)
    assert fit.speed.ttft_s == pytest.approx(flops / (4 * 1978.9e12 * 0.5) + 80 * LAYER_S + allreduce + kv)
    decode = 1024 * fit.speed.decode_step_avg_s / 16
    assert fit.speed.tokens_per_s_replica == pytest.approx(1024 / max(decode, fit.speed.ttft_s - kv))
    assert fit.replica_gpus == 8 and fit.as_dict()["gpus"] == 8
    # the prefill pools count among the GPUs the service needs: 3 replicas of 4 + 4 on 16 GPUs are too many
    svc = inference(gpus_per_replica=4, prefill_gpus=4) | BASE | {"replicas": 3}
    (many,) = [f for f in findings_of(cluster(2, [svc])) if f.code == "CF-WORK-001"]
    assert many.message == "inference service 'svc' needs 24 GPUs, node groups gpu have 16"


def test_average_context_holds_more_sessions_than_the_longest() -> None:
    # 4 H200, fp8: (4 x 141 x 0.9 - 70.55) GB / (163,840 x 32,768) = 81 sessions at the full 32k context; a
    # request of 8,192 in and 1,024 out averages 8,704 tokens: 305 sessions with a paged KV cache
    fit = _one(inference(gpus_per_replica=4) | BASE | {"context_tokens": 32768})
    assert fit.as_dict()["max_concurrency"] == 81
    assert fit.as_dict()["max_concurrency_at_average_context"] == int((4 * 141e9 * 0.9 - 70.55e9) // (163_840 * 8704))


# --- findings


def test_job_that_does_not_fit_gets_the_smallest_tensor_parallel_that_does() -> None:
    # TP1, DP32 on H200: weights and gradients 2 x 70.55e9 x 2 bytes = 282.2 GB, Adam 12 x 70.55e9 / 32 =
    # 26.5 GB, activations 80 x 274,688 x 8192 = 180.0 GB: 489 GB against 141 x 0.9 = 126.9 GB usable
    (finding,) = findings_of(cluster(4, [training(gpus=32, tensor_parallel=1, sequence_length=8192)]))
    assert finding.code == "CF-WORK-004"
    assert finding.message == (
        "training job 'job' needs 489 GB per GPU, 127 GB are usable (weights 141, "
        "gradients 141, optimizer 26.5, activations 180)"
    )
    # TP8 (the NVLink domain): 17.6 + 17.6 + 12 x 8.82 / 4 = 26.5, plus 22.5 of activations = 84.2 GB
    assert finding.hint == "fits with tensor_parallel: 8 (84.2 GB per GPU, 4 nodes)"


LONG_PROMPT = {"context_tokens": 33792, "prompt_tokens": 32768}


def test_service_that_misses_its_latency_target() -> None:
    # 32k-token prompt on 4 H200: 2 x 70.55e9 x 32768 + 2 x 80 x 32768^2 x 8192 = 6.031e15 FLOPs at 50% of
    # 4 x 1978.9 TFLOPS = 3.958e15 FLOP/s -> 1,524 ms, plus the all-reduces, reduced in the NVSwitches, 80 x 2 x
    # 32768 x 8192 x 2 bytes at NCCL's 275 GB/s with NVLS = 312 ms, 160 x 35.6 us of latency, and 80 x 153.8 us of
    # per-layer fixed time (12 ms): 1,854 ms, shown to three figures; target 1,200 ms. Eight GPUs take 762 + 12 +
    # 312 + 6 = 1,092 ms; sixteen would compute in 381 ms but all-reduce across two nodes at 50 GB/s for 3.2 s.
    found = findings_of(
        cluster(2, [inference(replicas=1, gpus_per_replica=4, precision="fp8", ttft_target_ms=1200) | LONG_PROMPT])
    )
    (ttft,) = [f for f in found if f.code == "CF-WORK-006"]
    assert ttft.message == ("inference service 'svc': time to first token 1,850 ms for 32,768 tokens, target 1,200 ms")
    # at 8 GPUs: (70.55 GB weights + 5.54 GB of KV cache) / 8 = 9.51 GB per GPU
    assert ttft.hint == "meets it with gpus_per_replica: 8 (9.51 GB per GPU, 1 node)"
    assert {f.code for f in found} == {"CF-WORK-006"}


def test_sessions_that_do_not_fit_a_replica_get_the_concurrency_that_does() -> None:
    # The case: 64 sessions of 16k tokens of a 70B model on 4 x L40S (4 x 48 GB x 0.9 = 172.8 GB usable).
    # fp8 weights 70.55 GB; fp8 KV 163,840 B/token x 16,384 = 2.684 GB per session; (172.8 - 70.55) / 2.684 = 38.
    data = cluster(
        1,
        [inference(replicas=2, gpus_per_replica=4, precision="fp8", context_tokens=16384, concurrent_requests=64)],
        model="generic/l40s-4u-8gpu",
    )
    pcie, finding = findings_of(data)
    assert pcie.code == "CF-WORK-003"
    assert pcie.message == (
        "inference service 'svc': tensor parallel 4 on nvidia/l40s, which has no NVLink, so its per-layer "
        "all-reduces cross PCIe at 31.5 GB/s"
    )
    assert finding.code == "CF-WORK-005"
    assert "needs 242 GB per replica for weights and 64 sessions of 16,384 tokens, 173 GB are usable" in finding.message
    assert finding.hint is not None and finding.hint.startswith("at most 38 sessions of 16,384 tokens fit")


def test_tensor_parallel_across_nvlink_domains_and_too_many_gpus() -> None:
    found = findings_of(cluster(2, [training(gpus=5000, tensor_parallel=16)]))
    assert {f.code for f in found} >= {"CF-WORK-001", "CF-WORK-003"}
    (many,) = [f for f in found if f.code == "CF-WORK-001"]
    assert many.message == "training job 'job' needs 5000 GPUs, node groups gpu have 16"
    (tp,) = [f for f in found if f.code == "CF-WORK-003"]
    assert "tensor parallel 16 spans 2 NVLink domains of 8 GPUs" in tp.message
    assert "at 50 GB/s instead of NVLink's 450 GB/s" in tp.message


def test_layout_and_batch_that_do_not_divide() -> None:
    found = findings_of(
        cluster(
            4,
            [
                training(gpus=32, tensor_parallel=8, pipeline_parallel=3),
                training(name="b", gpus=32, tensor_parallel=8, global_batch_tokens=100_000),
            ],
        )
    )
    messages = sorted(f.message for f in found if f.code == "CF-WORK-002")
    assert messages == [
        "training job 'b': global batch of 100,000 tokens is not a multiple of data parallel 4 x micro batch 1 x "
        "sequence 4,096 = 16,384",
        "training job 'job': tensor 8 x pipeline 3 x context 1 x data 1 = 24 GPUs, but the job has 32",
    ]


def test_inference_layout_that_does_not_divide() -> None:
    found = findings_of(cluster(1, [inference(replicas=1, gpus_per_replica=8, tensor_parallel=4)]))
    assert [f.message for f in found] == ["inference service 'svc': tensor 4 x expert 1 = 4 GPUs, but a replica has 8"]


def test_workloads_together_and_a_shape_given_by_size_only() -> None:
    found = findings_of(
        cluster(
            2,
            [
                training(gpus=16, tensor_parallel=8),
                {"name": "old", "kind": "inference", "model_params_b": 8, "replicas": 1, "gpus_per_replica": 1},
            ],
        )
    )
    assert {f.code for f in found} == {"CF-WORK-008", "CF-WORK-009"}
    (together,) = [f for f in found if f.code == "CF-WORK-008"]
    assert together.message == "workloads on gpu need 17 GPUs together, the node groups have 16 (job 16, old 1)"


def _plan(data: dict[str, Any]) -> Plan:
    valid = valid_from(data)
    topo, _ = expand(valid)
    return plan_layouts(valid, topo, recheck_workloads)


def test_suggest_plans_every_workload_at_once_and_rechecks_it() -> None:
    # Four DGX H200 (32 GPUs): a 70B job at TP1 that does not fit, and a service whose 32k prompt misses
    # 1.2 s on 4 GPUs. The plan gives the job the fastest layout of its 16 GPUs that fits and the service the
    # fewest GPUs that meet its target within the 16 left, then checks the changed blueprint again.
    job = training(gpus=16, tensor_parallel=1, sequence_length=8192)
    svc = inference(replicas=1, gpus_per_replica=4, precision="fp8", ttft_target_ms=1200) | LONG_PROMPT
    data = cluster(4, [job, svc])
    assert {f.code for f in findings_of(data)} >= {"CF-WORK-004", "CF-WORK-006"}
    plan = _plan(data)
    assert plan.ok, plan.lines()
    training_choice, serving = plan.choices
    assert training_choice.changes["tensor_parallel"] > 1
    assert serving.changes == {"gpus_per_replica": 8}  # 8 GPUs: 1,092 ms (see the latency test)
    assert plan.gpus == {"gpu": (24, 32)}
    # applied by hand, the blueprint passes the workload checks
    data["workloads"] = [job | training_choice.changes, svc | serving.changes]
    assert not [f for f in findings_of(data) if f.severity.value != "info"]


def test_suggest_says_when_no_combined_layout_passes() -> None:
    # 70B at a 10 ms first-token target on 16 GPUs: no replica meets it; the re-check keeps CF-WORK-006
    svc = inference(replicas=1, gpus_per_replica=4, precision="fp8", ttft_target_ms=10) | LONG_PROMPT
    plan = _plan(cluster(2, [svc]))
    assert not plan.ok
    assert plan.choices[0].note == "no layout of its node groups fits and meets its targets"
    assert plan.lines()[-1].startswith("no combined layout found that passes the re-check (gpu: 4 of 16 GPUs)")


PLAN_FINDINGS = {
    "CF-WORK-001",
    "CF-WORK-002",
    "CF-WORK-004",
    "CF-WORK-005",
    "CF-WORK-006",
    "CF-WORK-007",
    "CF-WORK-008",
}
"""What a suggested layout must leave none of: too many GPUs, layouts that do not divide, memory, targets."""


@pytest.mark.parametrize("example", BLUEPRINTS, ids=[p.stem for p in BLUEPRINTS])
def test_fit_suggest_on_every_example_passes_when_run_again(example: Path, tmp_path: Path) -> None:
    # One combined layout for all the example's workloads, then, independently of the plan's own re-check, the
    # blueprint with the suggested changes written into it and `clusterforge fit` run on it again: no finding of
    # PLAN_FINDINGS, every workload within its usable memory, and the GPUs used within the node groups'.
    result = run_cli("fit", str(example.relative_to(REPO)), "--suggest", "--format", "json")
    suggestions = json.loads(result.stdout)["suggestions"]
    assert suggestions["ok"], suggestions
    assert all(g["used"] <= g["available"] for g in suggestions["gpus"].values())
    copy = tmp_path / "blueprints"
    shutil.copytree(REPO / "blueprints", copy)
    data = yaml.safe_load(example.read_text(encoding="utf-8"))
    changes = {name: w["changes"] for name, w in suggestions["workloads"].items()}
    data["workloads"] = [w | changes.get(w["name"], {}) for w in data["workloads"]]
    (copy / example.name).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    again = json.loads(run_cli("fit", str(copy / example.name), "--format", "json").stdout)
    assert not [f for f in again["findings"] if f["code"] in PLAN_FINDINGS], again["findings"]
    for name, fit in again["workloads"].items():
        memory = fit["memory_gb"]  # per GPU for training, per replica for a service
        held = memory["total"] if fit["kind"] == "training" else memory["weights"] + memory["kv_cache"]
        assert held <= memory["usable"], name
        if name in changes:
            assert all(fit["layout"][_layout_key(k)] == v for k, v in changes[name].items()), (name, fit)


def _layout_key(change: str) -> str:
    """The fit output's layout names the parallel dimensions without `_parallel`."""
    return change.removesuffix("_parallel")


def test_unknown_model_is_a_reference_error() -> None:
    from clusterforge.errors import BlueprintError

    with pytest.raises(BlueprintError) as caught:
        valid_from(cluster(1, [inference(model="meta/lama-3-8b", replicas=1, gpus_per_replica=1)]))
    (finding,) = caught.value.findings
    assert finding.code == "CF-REF-002"
    assert (
        "unknown model shape 'meta/lama-3-8b' in workloads[0].model (did you mean 'meta/llama-3-8b'?)"
        in finding.message
    )


def test_fit_command_on_the_examples() -> None:
    result = run_cli("fit", "blueprints/h200-training-pod.yaml", "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    data = json.loads(result.stdout)
    pretrain = data["workloads"]["llama3-70b-pretrain"]
    assert pretrain["memory_gb"]["total"] <= pretrain["memory_gb"]["usable"]
    assert data["workloads"]["llama3-70b-eval"]["kv_bytes_per_token"] == 163_840  # fp8 KV
    text = run_cli("fit", "blueprints/l40s-inference.yaml", "--suggest")
    assert text.returncode == 0 and "llama3-70b-chat (inference, meta/llama-3-70b, fp8" in text.stdout


def test_fit_names_the_scale_up_link_from_the_catalog() -> None:
    """AMD's 8-GPU domain is joined by Infinity Fabric (catalog gpu_link), NVIDIA's by NVLink; the L40S has none."""
    text = run_cli("fit", "blueprints/mi300x-roce.yaml")
    assert text.returncode == 0, text.stdout + text.stderr
    assert "TP2 (Infinity Fabric)" in text.stdout and "nvlink" not in text.stdout.lower()
    assert "TP4 (NVLink)" in run_cli("fit", "blueprints/h200-training-pod.yaml").stdout
    links = {
        example: {
            w["scale_up_link"]
            for w in json.loads(run_cli("fit", f"blueprints/{example}.yaml", "--format", "json").stdout)[
                "workloads"
            ].values()
        }
        for example in ("mi300x-roce", "gb200-nvl72", "l40s-inference")
    }
    assert links == {"mi300x-roce": {"Infinity Fabric"}, "gb200-nvl72": {"NVLink"}, "l40s-inference": {None}}


def test_plan_json_and_report_show_the_workloads() -> None:
    result = run_cli("plan", "blueprints/l40s-inference.yaml", "--format", "json")
    workloads = json.loads(result.stdout)["workloads"]
    fit = json.loads(run_cli("fit", "blueprints/l40s-inference.yaml", "--format", "json").stdout)["workloads"]
    assert workloads == fit
    chat = workloads["llama3-70b-chat"]
    # 4 x L40S: 4 x 48 GB x 0.9 = 172.8 GB usable; fp8 weights 70.55 GB; 32 sessions x 2.684 GB of KV cache
    assert chat["memory_gb"] == {"weights": 70.5, "kv_cache": 85.9, "per_gpu": 39.1, "usable": 173.0}
    assert chat["max_concurrency"] == 38
    # All-in USD 1.00 per GPU-hour: 4 GPUs / (566 tokens/s x 3600) x 1e6 = USD 1.96 per million tokens
    assert chat["cost_per_million_tokens"] == pytest.approx(
        4 * 1.0 / (chat["decode"]["tokens_per_s_replica"] * 3600) * 1e6, rel=0.01
    )
    report = (REPO / "inventories" / "l40s-inference" / "handoff" / "report.md").read_text(encoding="utf-8")
    assert "| llama3-70b-chat | inference | nvidia/l40s | 32 | 8 × 4 GPUs, 32 sessions | 39.1 / 43.2 |" in report
    html = (REPO / "inventories" / "l40s-inference" / "handoff" / "report.html").read_text(encoding="utf-8")
    assert '<svg class="chart"' in html and "39.1 of 43.2 GB" in html
