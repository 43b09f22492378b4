"""A workload's model shape, from the catalog, the blueprint, or only its parameter count."""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import Catalog, ModelShapeEntry
from ..model.workload import ModelShapeFields, Precision, WorkloadBase

BYTES: dict[Precision, float] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp4": 0.5, "int4": 0.5}
"""Bytes per value of each precision."""


@dataclass(frozen=True)
class Shape:
    """Parameters (as counts, not billions) and, when known, the transformer's dimensions."""

    params: float
    active_params: float
    dims: ModelShapeFields | None
    """None when the workload gives only model_params_b: KV cache and activations are then unknown."""

    @property
    def expert_params(self) -> float:
        """Parameters of all routed experts: with E experts, k per token, P = D + E*e and A = D + k*e."""
        d = self.dims
        if d is None or d.experts is None or d.experts_per_token is None or d.experts == d.experts_per_token:
            return 0.0
        per_expert = (self.params - self.active_params) / (d.experts - d.experts_per_token)
        return per_expert * d.experts

    @property
    def dense_params(self) -> float:
        return self.params - self.expert_params

    def kv_values_per_token(self) -> int | None:
        """Values cached per token over all layers: 2 x layers x kv_heads x head_dim, or layers x latent (MLA)."""
        d = self.dims
        if d is None:
            return None
        per_layer = d.kv_latent_dim if d.kv_latent_dim is not None else 2 * d.kv_heads * d.head_dim
        return d.layers * per_layer

    def attention_width(self) -> int | None:
        """heads x head_dim: the width of the attention score products."""
        return None if self.dims is None else self.dims.heads * self.dims.head_dim


def resolve_shape(workload: WorkloadBase, catalog: Catalog) -> Shape:
    dims: ModelShapeFields | None = workload.shape
    if workload.model is not None:
        dims = catalog.require(workload.model, ModelShapeEntry)
    if dims is None:
        assert workload.model_params_b is not None  # the schema asks for exactly one of the three
        params = workload.model_params_b * 1e9
        return Shape(params, params, None)
    active = dims.active_params_b if dims.active_params_b is not None else dims.params_b
    return Shape(dims.params_b * 1e9, active * 1e9, dims)
