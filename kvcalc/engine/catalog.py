"""What the catalog commands show: a model's derived figures, the model and GPU lists."""

from __future__ import annotations

from dataclasses import field

from kvcalc._record import record
from kvcalc.engine.alloc import LOGICAL
from kvcalc.engine.kv import KVFootprint
from kvcalc.engine.weights import WeightFormats, resident_bytes
from kvcalc.specs.dtypes import BF16
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec


@record(frozen=True)
class ModelDerived:
    params_total: int
    params_active: int
    weight_dtype: str
    weight_bytes: int
    num_layers: int
    per_kind_bytes_per_token: dict[str, int]
    kv_bytes_per_token: int
    kv_bytes_at_max_context: int


@record(frozen=True)
class KindRow:
    name: str
    layers: int
    description: str


@record(frozen=True)
class ModelReport:
    """``kvcalc show MODEL``."""

    kind: str
    spec: ModelSpec
    derived: ModelDerived
    kinds: list[KindRow] = field(default_factory=list)


@record(frozen=True)
class GPUReport:
    """``kvcalc show GPU``."""

    kind: str
    spec: GPUSpec
    ridge_bf16: float


@record(frozen=True)
class ModelEntry:
    name: str
    aliases: list[str]
    params_total: int
    params_active: int
    num_layers: int
    layer_counts: dict[str, int]
    kv_bytes_per_token_bf16: int
    max_position_embeddings: int
    source: str
    is_moe: bool
    kinds_text: str


@record(frozen=True)
class ModelsReport:
    models: list[ModelEntry]


@record(frozen=True)
class GPUsReport:
    gpus: list[GPUSpec]


def derive(m: ModelSpec) -> ModelDerived:
    fp = KVFootprint(m, BF16)
    return ModelDerived(
        params_total=m.params_total,
        params_active=m.params_active,
        # As the checkpoint stores them: quantized roles by their method, the rest in the dense dtype.
        weight_dtype=WeightFormats.of(m).describe(),
        weight_bytes=resident_bytes(m),
        num_layers=m.num_layers,
        per_kind_bytes_per_token={k: v.kv_bytes_per_token(BF16, 1, LOGICAL) for k, v in m.layer_kinds.items()},
        kv_bytes_per_token=fp.per_token,
        kv_bytes_at_max_context=int(fp.request_bytes(m.max_position_embeddings)),
    )


def show_model(m: ModelSpec) -> ModelReport:
    rows = [KindRow(name, n, m.layer_kinds[name].describe()) for name, n in m.layer_counts().items()]
    return ModelReport("model", m, derive(m), rows)


def show_gpu(g: GPUSpec) -> GPUReport:
    return GPUReport("gpu", g, float(g.flops_bf16) / float(g.memory_bandwidth_bytes_per_s))


def models(specs: list[ModelSpec]) -> ModelsReport:
    out = []
    for m in specs:
        counts = m.layer_counts()
        out.append(
            ModelEntry(
                name=m.name,
                aliases=m.aliases,
                params_total=m.params_total,
                params_active=m.params_active,
                num_layers=m.num_layers,
                layer_counts={m.layer_kinds[k].kind_name + ":" + k: n for k, n in counts.items()},
                kv_bytes_per_token_bf16=KVFootprint(m, BF16).per_token,
                max_position_embeddings=m.max_position_embeddings,
                source=m.source.url,
                is_moe=m.is_moe,
                kinds_text=", ".join(f"{n} {m.layer_kinds[k].kind_name}" for k, n in counts.items()),
            )
        )
    return ModelsReport(out)


def gpus(specs: list[GPUSpec]) -> GPUsReport:
    return GPUsReport(list(specs))
