"""Weights: the bytes a GPU holds (resident) and the bytes a decode step reads (streamed).

The dtype rules live here once: the spec's weight format for dense parameters, the experts' own
format where the spec gives one (gpt-oss: mxfp4), and a ``--weight-dtype`` override for both.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import ceil
from typing import Any

from kvcalc.specs.dtypes import weight_bits, weight_bytes
from kvcalc.specs.model import ModelSpec


@dataclass(frozen=True)
class WeightFormats:
    """The formats a model's weights are counted in: dense parameters and routed experts."""

    dense: str
    experts: str
    overridden: bool

    @classmethod
    def of(cls, model: ModelSpec, override: str | None = None) -> WeightFormats:
        if override:
            return cls(override, override, True)
        experts = (model.moe.expert_weight_dtype if model.moe else None) or model.weight_dtype
        return cls(model.weight_dtype, experts, False)


def resident_bytes(model: ModelSpec, dtype: str | None = None) -> int:
    """Bytes of all parameters as loaded: experts in their own format where the spec says so."""
    f = WeightFormats.of(model, dtype)
    experts = model.expert_params
    return weight_bytes(model.params_total - experts, f.dense) + (weight_bytes(experts, f.experts) if experts else 0)


@dataclass(frozen=True)
class Weights:
    total_bytes: int
    per_gpu_bytes: int
    dtype: str
    expert_dtype: str | None
    note: str


def weights(model: ModelSpec, dtype: str | None = None, tp: int = 1, pp: int = 1) -> Weights:
    """Resident weight bytes in total and per GPU (an even split over tp x pp)."""
    total = resident_bytes(model, dtype)
    expert_dtype = None if dtype else (model.moe.expert_weight_dtype if model.moe else None)
    return Weights(
        total, ceil(Fraction(total, tp * pp)), dtype or model.weight_dtype, expert_dtype, "total / (tp x pp): an even split"
    )


def expected_experts(E: int, k: int, b: Any) -> Any:
    """Expected distinct experts a batch of b tokens routes to in one MoE layer (uniform routing):
    E x (1 - (1 - k/E)^b). 1 token: k experts; many: tends to all E."""
    if isinstance(b, (int, float)):
        return E * (1.0 - (1.0 - k / E) ** b)
    import numpy as np

    return E * (1.0 - np.power(1.0 - k / E, b))


@dataclass(frozen=True)
class StreamedWeights:
    """Parameters a decode step reads: every layer's matrices and the LM head, not the input
    embedding table (a step touches only b of its rows)."""

    dense_params: int
    """Non-expert parameters streamed every step (LM head included, input embedding excluded)."""
    dense_bits: Fraction
    expert_params_each: int
    expert_bits: Fraction
    moe_layers: int
    num_experts: int
    experts_per_tok: int
    embed_row_bytes: int
    resident_bytes: int

    @property
    def dense_bytes(self) -> Fraction:
        return Fraction(self.dense_params) * self.dense_bits / 8

    def bytes_read(self, batch: Any, tp: int = 1) -> Any:
        """Bytes of weights one decode step reads on one rank, for an int batch or a numpy array of
        them. Dense models: exact, ceil((dense bytes + b embedding rows) / tp). MoE: the expected
        distinct experts, rounded to whole bytes (half to even)."""
        if not self.moe_layers:
            d = self.dense_bytes
            num, den = d.numerator, d.denominator
            # ceil((num / den + e b) / tp) in integers; numpy int64 holds it for any batch up to 2^24.
            return -(-(num + self.embed_row_bytes * batch * den) // (den * tp))
        experts = (
            self.moe_layers
            * expected_experts(self.num_experts, self.experts_per_tok, batch)
            * (self.expert_params_each * float(self.expert_bits) / 8)
        )
        total = float(self.dense_bytes) + self.embed_row_bytes * batch + experts
        if isinstance(total, float):
            return int(round(total / tp))
        import numpy as np

        return np.rint(total / tp)


def streamed_weights(model: ModelSpec, dtype: str | None = None) -> StreamedWeights:
    f = WeightFormats.of(model, dtype)
    # Tied embeddings are read as the LM head every step; untied, the input table is not streamed.
    input_table = 0 if model.tie_word_embeddings else model.embedding_params
    m = model.moe
    return StreamedWeights(
        dense_params=model.params_total - model.expert_params - input_table,
        dense_bits=weight_bits(f.dense),
        expert_params_each=m.params_per_expert if m else 0,
        expert_bits=weight_bits(f.experts),
        moe_layers=m.num_moe_layers if m else 0,
        num_experts=m.num_experts if m else 0,
        experts_per_tok=m.num_experts_per_tok if m else 0,
        embed_row_bytes=ceil(model.hidden_size * weight_bits(f.dense) / 8),
        resident_bytes=resident_bytes(model, dtype),
    )


def active_matmul_params(model: ModelSpec) -> int:
    """Parameters one token multiplies through: active parameters less the input embedding lookup."""
    return model.params_active - (0 if model.tie_word_embeddings else model.embedding_params)
