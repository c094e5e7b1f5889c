"""KV-cache bytes per token, per request and per batch, with tensor and pipeline parallelism.

Pure functions over a :class:`ModelSpec`. Exact Python ints for single answers; ``seq`` and
``batch`` may also be numpy integer arrays for sweeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kvcalc.engine.dtypes import KVDtype, kv_dtype
from kvcalc.engine.layers import LOGICAL, MLA, Allocation, RecurrentState, _Attention
from kvcalc.errors import KvcalcError
from kvcalc.specs.model import ModelSpec


_BF16 = kv_dtype("bf16")


def check_parallel(model: ModelSpec, tp: int = 1, pp: int = 1) -> None:
    """Raise unless every attention layer can be split ``tp`` ways and there are >= ``pp`` layers.

    Query heads must divide evenly across ranks; KV heads must either divide evenly
    (tp <= n_kv) or be replicated evenly (tp a multiple of n_kv), as vLLM requires.
    """
    if tp < 1 or pp < 1:
        raise KvcalcError("tensor and pipeline parallel sizes must be >= 1", f"--tp {tp} --pp {pp}", "positive integers")
    if pp > model.num_layers:
        raise KvcalcError(f"--pp {pp} exceeds the model's {model.num_layers} layers", "--pp", f"1..{model.num_layers}")
    for name, k in model.layer_kinds.items():
        heads = getattr(k, "num_attention_heads", None)
        if heads is not None and heads % tp:
            raise KvcalcError(
                f"--tp {tp} does not divide the {heads} query heads of layer kind {name!r}",
                "--tp",
                "a tensor-parallel size that divides " + ", ".join(str(d) for d in _divisors(heads)),
            )
        if isinstance(k, _Attention):
            n = k.num_key_value_heads
            if (tp <= n and n % tp) or (tp > n and tp % n):
                raise KvcalcError(
                    f"--tp {tp} cannot split {n} KV heads of layer kind {name!r} evenly",
                    "--tp",
                    f"a divisor of {n} or a multiple of it (KV heads are then replicated)",
                )


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0 and d <= 128][:12]


def pp_partition(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, as vLLM splits them: even, with the remainder given to the
    stages just before the last one (which also holds the LM head)."""
    per, rem = divmod(num_layers, pp)
    parts = [per] * pp
    for i in range(2, rem + 2):
        parts[-i] += 1
    return parts


def stages(model: ModelSpec, pp: int) -> list[list[str]]:
    out, i = [], 0
    order = model.layer_list
    for n in pp_partition(model.num_layers, pp):
        out.append(order[i : i + n])
        i += n
    return out


@dataclass
class LayerRow:
    """One layer kind's share of the cache, on the most loaded GPU."""

    name: str
    kind: str
    description: str
    layers: int
    bytes_per_token_per_layer: int
    tokens_held: int
    bytes_per_request: int


@dataclass
class KVSize:
    seq: int
    batch: int
    kv_dtype: str
    tp: int
    pp: int
    allocation: str
    block_size: int | None
    # The whole deployment: every GPU, replicated heads counted on each GPU that holds them.
    kv_bytes_per_token: int
    kv_bytes_per_request: int
    kv_bytes_total: int
    # The most loaded GPU (one tensor-parallel rank of the largest pipeline stage).
    per_gpu_kv_bytes_per_token: int
    per_gpu_kv_bytes_per_request: int
    per_gpu_kv_bytes_total: int
    layers: list[LayerRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def stage_counts(model: ModelSpec, names: list[str], alloc: Allocation = LOGICAL) -> dict[str, int]:
    """Layers of each kind on one pipeline stage, as the allocation counts them.

    With ``alloc.pad_groups`` (vLLM's hybrid KV-cache manager), each attention type's layers are
    split into groups of one size, the last group of a type padded with empty layers: the group
    size is the smallest type's layer count, or the largest's when it is under 1.5 times the
    smallest (vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size). It needs
    every attention layer to have the same page size; otherwise nothing is padded.
    """
    counts = {k: names.count(k) for k in dict.fromkeys(names)}
    if not alloc.pad_groups:
        return counts
    attn = {k: n for k, n in counts.items() if model.layer_kinds[k].has_attention}
    pages = {model.layer_kinds[k].kv_bytes_per_token(_BF16) for k in attn}
    if len(attn) < 2 or len(pages) != 1:
        return counts
    lo, hi = min(attn.values()), max(attn.values())
    size = hi if hi < 1.5 * lo else lo
    return {**counts, **{k: -(-n // size) * size for k, n in attn.items()}}


def _stage_bytes(model: ModelSpec, names: list[str], seq, dt: KVDtype, tp: int, alloc: Allocation):
    per_token = 0
    per_request = 0
    for name, n in stage_counts(model, names, alloc).items():
        k = model.layer_kinds[name]
        if not isinstance(k, RecurrentState):
            per_token += n * k.kv_bytes_per_token(dt, tp, alloc)
        per_request += n * k.bytes_for(seq, dt, tp, alloc)
    return per_token, per_request


def request_bytes(model: ModelSpec, seq, kv: str | KVDtype = "bf16", tp: int = 1, pp: int = 1,
                  alloc: Allocation = LOGICAL):
    """Bytes one request of length ``seq`` holds on the most loaded GPU (numpy-friendly)."""
    dt = kv if isinstance(kv, KVDtype) else kv_dtype(kv)
    best = None
    for names in stages(model, pp):
        _, r = _stage_bytes(model, names, seq, dt, tp, alloc)
        best = r if best is None else _max(best, r)
    return best


def _max(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    import numpy as np

    return np.maximum(a, b)


def kv_size(model: ModelSpec, seq: int, batch: int = 1, kv: str = "bf16", tp: int = 1, pp: int = 1,
            alloc: Allocation = LOGICAL) -> KVSize:
    """Exact KV bytes for ``batch`` requests of ``seq`` tokens each."""
    if seq < 1 or batch < 1:
        raise KvcalcError("seq and batch must be >= 1", f"seq={seq} batch={batch}", "positive integers")
    check_parallel(model, tp, pp)
    dt = kv_dtype(kv)
    st = stages(model, pp)
    per_stage = [_stage_bytes(model, names, seq, dt, tp, alloc) for names in st]
    # The most loaded stage is the one whose requests take the most bytes.
    top = max(range(len(st)), key=lambda i: (per_stage[i][1], per_stage[i][0]))
    rows = []
    top_counts = stage_counts(model, st[top], alloc)
    padding = {k: n - st[top].count(k) for k, n in top_counts.items() if n > st[top].count(k)}
    for name, k in model.layer_kinds.items():
        n = top_counts.get(name, 0)
        if not n:
            continue
        rows.append(
            LayerRow(
                name=name,
                kind=k.kind,
                description=k.describe(),
                layers=n,
                bytes_per_token_per_layer=0 if isinstance(k, RecurrentState) else k.kv_bytes_per_token(dt, tp, alloc),
                tokens_held=0 if isinstance(k, RecurrentState) else int(k.tokens_held(seq, alloc)),
                bytes_per_request=n * k.bytes_for(seq, dt, tp, alloc),
            )
        )
    tok_all = tp * sum(p[0] for p in per_stage)
    req_all = tp * sum(p[1] for p in per_stage)
    warnings = []
    if padding:
        warnings.append("vLLM groups the layers of each attention type into equal groups sharing one block pool: "
                        + ", ".join(f"{n} padding layer{'s' if n > 1 else ''} of kind {k!r}" for k, n in padding.items())
                        + " (counted in the layers column)")
    if seq > model.max_position_embeddings:
        warnings.append(
            f"seq {seq:,} exceeds the model's max context of {model.max_position_embeddings:,} tokens (max_position_embeddings)"
        )
    if any(isinstance(k, MLA) for k in model.layer_kinds.values()) and tp > 1 and not alloc.mla_expanded:
        warnings.append("the MLA latent is shared by all heads, so every tensor-parallel rank holds a full copy")
    for k in model.layer_kinds.values():
        if isinstance(k, _Attention) and tp > k.num_key_value_heads:
            warnings.append(
                f"tp {tp} > {k.num_key_value_heads} KV heads: each KV head is replicated on {tp // k.num_key_value_heads} ranks"
            )
            break
    return KVSize(
        seq=seq,
        batch=batch,
        kv_dtype=dt.name,
        tp=tp,
        pp=pp,
        allocation=alloc.name,
        block_size=alloc.block_size,
        kv_bytes_per_token=tok_all,
        kv_bytes_per_request=req_all,
        kv_bytes_total=req_all * batch,
        per_gpu_kv_bytes_per_token=per_stage[top][0],
        per_gpu_kv_bytes_per_request=per_stage[top][1],
        per_gpu_kv_bytes_total=per_stage[top][1] * batch,
        layers=rows,
        warnings=warnings,
    )
