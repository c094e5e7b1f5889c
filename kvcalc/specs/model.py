"""The model spec: what a YAML file in model_specs/ (or an imported config.json) says."""

from __future__ import annotations

from functools import cached_property
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kvcalc.engine.dtypes import normalize_weight_dtype
from kvcalc.engine.layers import LayerKind

Pos = Annotated[int, Field(gt=0)]
NonNeg = Annotated[int, Field(ge=0)]


class Source(BaseModel):
    """Where the figures came from."""

    model_config = ConfigDict(extra="forbid")
    url: str
    """The official config.json (or datasheet) the spec was read from."""
    config: dict[str, Any] = {}
    """The field values of that file that the spec uses, copied so they can be checked by eye."""
    notes: str = ""


class LayerGroup(BaseModel):
    """``pattern`` (names of ``layer_kinds``) repeated ``repeat`` times, in layer order."""

    model_config = ConfigDict(extra="forbid")
    repeat: Pos = 1
    pattern: list[str] = Field(min_length=1)


class MoE(BaseModel):
    """Routed experts: enough to count resident, active and expected-read parameters."""

    model_config = ConfigDict(extra="forbid")
    num_experts: Pos
    num_experts_per_tok: Pos
    num_moe_layers: Pos
    params_per_expert: Pos
    """Parameters of one routed expert in one layer."""
    expert_weight_dtype: str | None = None
    """When experts are stored differently from the rest (gpt-oss: mxfp4)."""

    @field_validator("expert_weight_dtype")
    @classmethod
    def _dtype(cls, v):
        return None if v is None else normalize_weight_dtype(v, "moe.expert_weight_dtype")

    @model_validator(mode="after")
    def _k_le_e(self):
        if self.num_experts_per_tok > self.num_experts:
            raise ValueError(
                f"num_experts_per_tok ({self.num_experts_per_tok}) exceeds num_experts ({self.num_experts})"
            )
        return self


class ModelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    aliases: list[str] = []
    description: str = ""
    architecture: str = ""
    """Hugging Face model_type."""
    source: Source
    hidden_size: Pos
    vocab_size: Pos
    intermediate_size: NonNeg = 0
    """Dense MLP width (or the expert width for all-MoE models); used for activation estimates."""
    tie_word_embeddings: bool = False
    max_position_embeddings: Pos
    weight_dtype: str = "bf16"
    params_total: Pos
    """All parameters of the language model, embeddings included (computed from the config)."""
    moe: MoE | None = None
    layer_kinds: dict[str, LayerKind] = Field(min_length=1)
    layers: list[LayerGroup] = Field(min_length=1)

    @field_validator("weight_dtype")
    @classmethod
    def _wdtype(cls, v):
        return normalize_weight_dtype(v, "weight_dtype")

    @model_validator(mode="after")
    def _check(self):
        for gi, g in enumerate(self.layers):
            for name in g.pattern:
                if name not in self.layer_kinds:
                    raise ValueError(
                        f"layers[{gi}].pattern names {name!r}, which is not in layer_kinds "
                        f"({', '.join(self.layer_kinds)})"
                    )
        if self.moe:
            if self.moe.num_moe_layers > self.num_layers:
                raise ValueError(f"moe.num_moe_layers ({self.moe.num_moe_layers}) exceeds the {self.num_layers} layers")
            if self.expert_params > self.params_total:
                raise ValueError("the routed experts hold more parameters than params_total")
        if self.embedding_params > self.params_total:
            raise ValueError("vocab_size * hidden_size exceeds params_total")
        return self

    # ---- derived figures -------------------------------------------------------------
    @cached_property
    def layer_list(self) -> list[str]:
        """Layer kind names in layer order, one per layer."""
        out: list[str] = []
        for g in self.layers:
            out.extend(g.pattern * g.repeat)
        return out

    @property
    def num_layers(self) -> int:
        return sum(g.repeat * len(g.pattern) for g in self.layers)

    def layer_counts(self) -> dict[str, int]:
        counts = {k: 0 for k in self.layer_kinds}
        for g in self.layers:
            for name in g.pattern:
                counts[name] += g.repeat
        return counts

    @property
    def expert_params(self) -> int:
        m = self.moe
        return m.num_moe_layers * m.num_experts * m.params_per_expert if m else 0

    @property
    def params_active(self) -> int:
        """Parameters one token uses: everything but the routed experts it is not sent to."""
        m = self.moe
        if not m:
            return self.params_total
        return self.params_total - m.num_moe_layers * (m.num_experts - m.num_experts_per_tok) * m.params_per_expert

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    @property
    def is_moe(self) -> bool:
        return self.moe is not None
