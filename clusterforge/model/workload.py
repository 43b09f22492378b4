"""Workloads the cluster is built for. Only the schema lives here; the fit analysis is a separate step."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import Count, Identifier, PositiveFloat, Strict

Tokens = Annotated[int, Field(ge=1, le=1_000_000_000)]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"]


class WorkloadBase(Strict):
    name: Identifier
    """Workload name."""
    model_params_b: PositiveFloat = Field(le=100_000)
    """Model size in billions of parameters."""
    precision: Precision = "bf16"
    """Numeric precision of weights and compute."""
    node_groups: list[Identifier] | None = None
    """Node groups the workload runs on; default: all compute groups."""


class TrainingJob(WorkloadBase):
    kind: Literal["training"]
    """A training job."""
    gpus: Count
    """GPUs the job runs on."""
    tensor_parallel: Count = 1
    """Tensor-parallel degree (GPUs that split each layer)."""
    pipeline_parallel: Count = 1
    """Pipeline-parallel degree (stages)."""
    sequence_length: Tokens = 4096
    """Training sequence length in tokens."""
    global_batch_tokens: Tokens | None = None
    """Tokens per optimizer step across all data-parallel replicas."""


class InferenceService(WorkloadBase):
    kind: Literal["inference"]
    """An inference service."""
    replicas: Count
    """Independent copies of the model being served."""
    gpus_per_replica: Count
    """GPUs that serve one copy."""
    context_tokens: Tokens = 8192
    """Longest context (prompt plus output) a request may use."""
    concurrent_requests: Count = 1
    """Requests in flight per replica at peak."""


Workload = Annotated[TrainingJob | InferenceService, Field(discriminator="kind")]
