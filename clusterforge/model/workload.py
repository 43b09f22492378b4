"""Workloads the cluster is built for. Only the schema lives here; the fit analysis is a separate step."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import Count, Identifier, PositiveFloat, Strict

Precision = Literal["fp32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"]


class WorkloadBase(Strict):
    name: Identifier
    model_params_b: PositiveFloat = Field(le=100_000)
    """Model size in billions of parameters."""
    precision: Precision = "bf16"
    node_groups: list[Identifier] | None = None
    """Node groups the workload runs on; default: all compute groups."""


class TrainingJob(WorkloadBase):
    kind: Literal["training"]
    gpus: Count
    tensor_parallel: Count = 1
    pipeline_parallel: Count = 1
    sequence_length: Count = 4096
    global_batch_tokens: Count | None = None


class InferenceService(WorkloadBase):
    kind: Literal["inference"]
    replicas: Count
    gpus_per_replica: Count
    context_tokens: Count = 8192
    concurrent_requests: Count = 1


Workload = Annotated[TrainingJob | InferenceService, Field(discriminator="kind")]
