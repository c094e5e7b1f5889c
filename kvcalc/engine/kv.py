"""KV-cache bytes per token, per request and per batch, with tensor and pipeline parallelism.

:class:`KVFootprint` is a model's cache under one KV dtype, parallel layout and allocation: it
answers per-token bytes, per-request state, ``request_bytes(seq)`` and the longest request a pool
holds. ``kv_size`` turns it into the :class:`SizeReport` that ``kvcalc size`` prints. Exact Python
ints for single answers; ``seq`` may also be a numpy integer array for sweeps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from kvcalc.engine.alloc import LOGICAL, Allocation
from kvcalc.engine.engines import Engine
from kvcalc.engine.search import first_true
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import BF16, KVDtype, kv_dtype
from kvcalc.specs.layers import Tokens
from kvcalc.specs.model import ModelSpec

MAX_PARALLEL = 4096
"""The largest --tp or --pp kvcalc accepts (no deployment splits one model wider)."""


def check_parallel(model: ModelSpec, tp: int = 1, pp: int = 1) -> None:
    """Raise unless every layer kind can be split ``tp`` ways and there are >= ``pp`` layers."""
    if tp < 1 or pp < 1:
        raise KvcalcError("tensor and pipeline parallel sizes must be >= 1", f"--tp {tp} --pp {pp}", "positive integers")
    if tp > MAX_PARALLEL:
        raise KvcalcError(f"--tp {tp} is more GPUs than kvcalc sizes", "--tp", f"at most {MAX_PARALLEL}")
    if pp > model.num_layers:
        raise KvcalcError(f"--pp {pp} exceeds the model's {model.num_layers} layers", "--pp", f"1..{model.num_layers}")
    for name, k in model.layer_kinds.items():
        k.check_tp(tp, name)


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
    attn = {k: n for k, n in counts.items() if model.layer_kinds[k].holds_tokens}
    pages = {model.layer_kinds[k].kv_bytes_per_token(BF16, 1, LOGICAL) for k in attn}
    if len(attn) < 2 or len(pages) != 1:
        return counts
    lo, hi = min(attn.values()), max(attn.values())
    size = hi if hi < 1.5 * lo else lo
    return {**counts, **{k: -(-n // size) * size for k, n in attn.items()}}


def tmax(a: Tokens, b: Tokens) -> Tokens:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    import numpy as np

    return np.maximum(a, b)


@dataclass(eq=False)
class KVFootprint:
    """A model's KV cache under one dtype, tensor/pipeline layout and allocation, on the most
    loaded GPU (one tensor-parallel rank of the pipeline stage whose requests take the most)."""

    model: ModelSpec
    dtype: KVDtype = BF16
    tp: int = 1
    pp: int = 1
    alloc: Allocation = LOGICAL

    @cached_property
    def stage_counts(self) -> list[dict[str, int]]:
        return [stage_counts(self.model, names, self.alloc) for names in stages(self.model, self.pp)]

    def _stage(self, counts: dict[str, int], seq: Tokens) -> tuple[int, Tokens]:
        kinds = self.model.layer_kinds
        per_token = 0
        per_request: Tokens = 0
        for name, n in counts.items():
            k = kinds[name]
            if k.holds_tokens:
                per_token += n * k.kv_bytes_per_token(self.dtype, self.tp, self.alloc)
            per_request = per_request + n * k.bytes_for(seq, self.dtype, self.tp, self.alloc)
        return per_token, per_request

    def stage_bytes(self, seq: Tokens) -> list[tuple[int, Tokens]]:
        """(bytes per token, bytes per request of ``seq`` tokens) on one rank of each stage."""
        return [self._stage(c, seq) for c in self.stage_counts]

    @cached_property
    def _per_token_and_state(self) -> tuple[int, int]:
        kinds = self.model.layer_kinds
        best = (0, 0)
        for counts in self.stage_counts:
            tok = sum(
                n * kinds[k].kv_bytes_per_token(self.dtype, self.tp, self.alloc)
                for k, n in counts.items()
                if kinds[k].holds_tokens
            )
            st = sum(n * kinds[k].state_bytes_per_request(self.tp) for k, n in counts.items())
            best = max(best, (tok, st))
        return best

    @property
    def per_token(self) -> int:
        """Bytes one token takes in every layer that holds tokens, on the most loaded GPU."""
        return self._per_token_and_state[0]

    @property
    def state_bytes(self) -> int:
        """Fixed bytes per request (recurrent state) on that GPU."""
        return self._per_token_and_state[1]

    def request_bytes(self, seq: Tokens) -> Tokens:
        """Bytes one request of length ``seq`` holds on the most loaded GPU (numpy-friendly)."""
        best: Tokens = None
        for counts in self.stage_counts:
            _, r = self._stage(counts, seq)
            best = r if best is None else tmax(best, r)
        return best

    def longest_request(self, pool: int, cap: int = 2**40) -> int | None:
        """Largest S with request_bytes(S) <= pool (0 if none); None if it never runs out below ``cap``."""
        first_over = first_true(lambda s: bool(self.request_bytes(s) > pool), 1, cap)
        return None if first_over is None else first_over - 1


def request_bytes(
    model: ModelSpec, seq: Tokens, kv: str | KVDtype = "bf16", tp: int = 1, pp: int = 1, alloc: Allocation = LOGICAL
) -> Tokens:
    """Bytes one request of length ``seq`` holds on the most loaded GPU (numpy-friendly)."""
    return KVFootprint(model, kv_dtype(kv), tp, pp, alloc).request_bytes(seq)


@dataclass(frozen=True)
class LayerRow:
    """One layer kind's share of the cache, on the most loaded GPU."""

    name: str
    kind: str
    description: str
    layers: int
    bytes_per_token_per_layer: int
    tokens_held: int
    bytes_per_request: int
    holds_tokens: bool


@dataclass(frozen=True)
class GPUShare:
    """The most loaded GPU: one tensor-parallel rank of the largest pipeline stage."""

    kv_bytes_per_token: int
    kv_bytes_per_request: int
    kv_bytes_total: int


@dataclass(frozen=True)
class SizeReport:
    model: str
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
    per_gpu: GPUShare
    exceeds_max_context: bool
    layers: list[LayerRow] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)


LOGICAL_NOTE = (
    "logical bytes: full layers hold every token, sliding layers min(seq, window), chunked layers at "
    "most one chunk; --engine E for what an engine allocates"
)


def kv_size(
    model: ModelSpec,
    seq: int,
    batch: int = 1,
    kv: str | KVDtype = "bf16",
    tp: int = 1,
    pp: int = 1,
    alloc: Allocation = LOGICAL,
    engine: Engine | None = None,
) -> SizeReport:
    """Exact KV bytes for ``batch`` requests of ``seq`` tokens each. ``engine`` (when the allocation
    is an engine's) adds its rules to the assumptions."""
    if seq < 1 or batch < 1:
        raise KvcalcError("seq and batch must be >= 1", f"seq={seq} batch={batch}", "positive integers")
    check_parallel(model, tp, pp)
    dt = kv_dtype(kv)
    fp = KVFootprint(model, dt, tp, pp, alloc)
    per_stage = fp.stage_bytes(seq)
    top = max(range(len(per_stage)), key=lambda i: (per_stage[i][1], per_stage[i][0]))
    top_counts = fp.stage_counts[top]
    names = stages(model, pp)[top]
    padding = {k: n - names.count(k) for k, n in top_counts.items() if n > names.count(k)}
    rows = []
    for name, k in model.layer_kinds.items():
        n = top_counts.get(name, 0)
        if not n:
            continue
        tokens = k.holds_tokens
        rows.append(
            LayerRow(
                name=name,
                kind=k.kind_name,
                description=k.describe(),
                layers=n,
                bytes_per_token_per_layer=k.kv_bytes_per_token(dt, tp, alloc) if tokens else 0,
                tokens_held=int(k.tokens_held(seq, alloc)) if tokens else 0,
                bytes_per_request=n * k.bytes_for(seq, dt, tp, alloc),
                holds_tokens=tokens,
            )
        )
    tok_all = tp * sum(p[0] for p in per_stage)
    req_all = tp * sum(p[1] for p in per_stage)
    kinds = model.kinds()
    warnings = []
    if padding:
        warnings.append(
            "vLLM groups the layers of each attention type into equal groups sharing one block pool: "
            + ", ".join(f"{n} padding layer{'s' if n > 1 else ''} of kind {k!r}" for k, n in padding.items())
            + " (counted in the layers column)"
        )
    if seq > model.max_position_embeddings:
        warnings.append(
            f"seq {seq:,} exceeds the model's max context of {model.max_position_embeddings:,} tokens (max_position_embeddings)"
        )
    for w in dict.fromkeys(w for k in kinds if (w := k.tp_warning(tp, alloc))):
        warnings.append(w)
    assumptions = []
    if engine is not None:
        assumptions.append(f"{engine.label}: {engine.note}")
        assumptions += list(dict.fromkeys(note for k in kinds if (note := k.engine_note(engine))))
    else:
        assumptions.append(LOGICAL_NOTE)
    assumptions.append(f"KV dtype {dt.name}: {dt.note}")
    if tp > 1:
        assumptions.append("tensor parallel: " + "; ".join(dict.fromkeys(a for k in kinds if (a := k.tp_assumption()))))
    if pp > 1:
        assumptions.append("pipeline parallel: layers split as vLLM splits them; per-GPU figures are for the most loaded stage")
    return SizeReport(
        model=model.name,
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
        per_gpu=GPUShare(per_stage[top][0], per_stage[top][1], per_stage[top][1] * batch),
        exceeds_max_context=seq > model.max_position_embeddings,
        layers=rows,
        warnings=warnings,
        assumptions=assumptions,
        inputs={
            "model": model.name,
            "seq": seq,
            "batch": batch,
            "kv_dtype": dt.name,
            "tp": tp,
            "pp": pp,
            "block_size": alloc.block_size,
            "engine": engine.name if engine else None,
        },
    )
