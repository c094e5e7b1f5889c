"""KV-cache bytes per token, per request and per batch, with tensor and pipeline parallelism.

:class:`KVFootprint` is a model's cache under one KV dtype, parallel layout and allocation: it
answers per-token bytes, per-request state, ``request_bytes(seq)`` and the longest request a pool
holds. ``kv_size`` turns it into the :class:`SizeReport` that ``kvcalc size`` prints. Exact Python
ints for single answers; ``seq`` may also be a numpy integer array for sweeps.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from kvcalc._record import record
from kvcalc.engine.alloc import LOGICAL, Allocation, PPSplit
from kvcalc.engine.engines import AMD_INSTINCT, SM10_UP, SM100
from kvcalc.engine.search import first_true
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import BF16, KVDtype, kv_dtype as as_kv_dtype
from kvcalc.specs.layers import MLA, Tokens
from kvcalc.specs.model import ModelSpec

if TYPE_CHECKING:
    from kvcalc.engine.engines import Engine

MAX_PARALLEL = 4096
"""The largest --tp or --pp kvcalc accepts (no deployment splits one model wider)."""


def check_parallel(model: ModelSpec, tp: int = 1, pp: int = 1) -> None:
    """Raise unless every layer kind can be split ``tp`` ways and there are >= ``pp`` layers."""
    if tp < 1 or pp < 1:
        raise KvcalcError(
            f"tensor and pipeline parallel sizes must be >= 1 (tp {tp}, pp {pp})", "tp" if tp < 1 else "pp", "positive integers"
        )
    if tp > MAX_PARALLEL:
        raise KvcalcError(f"a TP size of {tp} is more GPUs than kvcalc sizes", "tp", f"at most {MAX_PARALLEL}")
    if pp > model.num_layers:
        raise KvcalcError(f"a PP size of {pp} exceeds the model's {model.num_layers} layers", "pp", f"1..{model.num_layers}")
    for name, k in model.layer_kinds.items():
        k.check_tp(tp, name)


def pp_partition(num_layers: int, pp: int, split: PPSplit = "before-last") -> list[int]:
    """Layers per pipeline stage: even, and the remainder one each to the stages just before the last
    ('before-last': vLLM 0.8.0 on, vllm/distributed/utils.py get_pp_indices), all of it to the last
    stage ('last': vLLM to 0.7.3, SGLang to 0.5.5), one each to the last stages ('last-n': SGLang from
    0.5.6, sglang/srt/distributed/utils.py get_pp_indices) or to the first ('first-n': TensorRT-LLM,
    tensorrt_llm/mapping.py pp_layers)."""
    per, rem = divmod(num_layers, pp)
    parts = [per] * pp
    if split == "last":
        parts[-1] += rem
    else:
        for i in range(rem):
            parts[{"before-last": -2 - i, "last-n": -1 - i, "first-n": i}[split]] += 1
    return parts


def stages(model: ModelSpec, pp: int, split: PPSplit = "before-last") -> list[list[str]]:
    out, i = [], 0
    order = model.layer_list
    for n in pp_partition(model.num_layers, pp, split):
        out.append(order[i : i + n])
        i += n
    return out


@record(frozen=True)
class StageLayout:
    """One pipeline stage's layers as an allocation lays them out."""

    counts: dict[str, int]
    """Layers of each kind, padding included."""
    group_size: int
    """Layers per KV cache group (vLLM's hybrid manager); all cache layers when there is one group."""
    groups: int
    """KV cache groups sharing the block pool."""


def _type_key(model: ModelSpec, name: str, alloc: Allocation) -> str:
    """Which layers the engine treats as one type: chunked layers stored as full join the full ones."""
    k = model.layer_kinds[name]
    if alloc.chunked_as_full and k.kind_name == "chunked":
        return "full"
    if alloc.window_style == "full" and k.kind_name in ("sliding", "chunked"):
        return "full"
    return k.kind_name + ":" + (name if k.kind_name in ("sliding", "chunked", "state") else "")


def stage_layout(model: ModelSpec, names: list[str], alloc: Allocation = LOGICAL) -> StageLayout:
    """Layers of each kind on one pipeline stage, as the allocation counts them.

    With ``alloc.pad_groups`` (vLLM's hybrid KV-cache manager), each attention type's layers are
    split into groups of one size, the last group of a type padded with empty layers: the group
    size is the smallest type's layer count, or the largest's when it is under 1.5 times the
    smallest (vllm/v1/core/kv_cache_planning.py, _get_kv_cache_groups_uniform_page_size, 0.33;
    kv_cache_utils.py in 0.11). It needs one page size for every layer: attention layers of one
    per-token size, and recurrent state padded to it (``alloc.state_page_bytes``); otherwise every
    layer is one group.
    """
    counts = {k: names.count(k) for k in dict.fromkeys(names)}
    kinds = model.layer_kinds
    cache = {
        k: n
        for k, n in counts.items()
        if kinds[k].holds_tokens or (alloc.state_page_bytes is not None and kinds[k].state_bytes_per_request(1))
    }
    if not cache:
        return StageLayout(counts, 0, 0)
    types: dict[str, int] = {}
    for k, n in cache.items():
        key = _type_key(model, k, alloc)
        types[key] = types.get(key, 0) + n
    pages = {kinds[k].kv_bytes_per_token(BF16, 1, LOGICAL) for k in cache if kinds[k].holds_tokens}
    if not alloc.pad_groups or len(types) < 2 or len(pages) != 1:
        return StageLayout(counts, sum(cache.values()), 1)
    lo, hi = min(types.values()), max(types.values())
    size = hi if hi < 1.5 * lo else lo
    padded = dict(counts)
    groups = 0
    for key, n in types.items():
        members = [k for k in cache if _type_key(model, k, alloc) == key]
        target = -(-n // size) * size
        groups += target // size
        # The padding goes to the type's last kind (one kind per type in every catalog model).
        padded[members[-1]] = counts[members[-1]] + target - n
    return StageLayout(padded, size, groups)


def stage_counts(model: ModelSpec, names: list[str], alloc: Allocation = LOGICAL) -> dict[str, int]:
    return stage_layout(model, names, alloc).counts


def tmax(a: Tokens, b: Tokens) -> Tokens:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    import numpy as np

    return np.maximum(a, b)


@record(eq=False)
class KVFootprint:
    """A model's KV cache under one dtype, tensor/pipeline layout and allocation, on the most
    loaded GPU (one tensor-parallel rank of the pipeline stage whose requests take the most)."""

    model: ModelSpec
    kv_dtype: KVDtype = BF16
    tp: int = 1
    pp: int = 1
    alloc: Allocation = LOGICAL

    def __post_init__(self) -> None:
        # vLLM pads a recurrent state's page to the attention page, raising the block size until one
        # attention page holds a state (vllm/platforms/interface.py _align_hybrid_block_size, 0.33;
        # model_executor/models/config.py HybridAttentionMambaModelConfig, 0.11).
        a = self.alloc
        if a.state_pages != "sum" and a.state_page_bytes is None and a.block_size:
            kinds = self.model.kinds()
            state = max((k.state_bytes_per_request(self.tp, a.recurrent_itemsize) for k in kinds), default=0)
            attn = max((k.kv_bytes_per_token(self.kv_dtype, self.tp, a) for k in kinds if k.holds_tokens), default=0)
            if state and attn:
                # The attention backend's kernel block: multiples of 16 (FlashAttention), of 128
                # for MLA (its decode kernels need 128-token alignment).
                align = 128 if any(k.kind_name == "mla" for k in kinds) else 16
                bs = max(a.block_size, align * -(-state // (align * attn)))
                self.alloc = dataclasses.replace(a, block_size=bs, state_page_bytes=bs * attn)

    @cached_property
    def layouts(self) -> list[StageLayout]:
        return [stage_layout(self.model, names, self.alloc) for names in stages(self.model, self.pp, self.alloc.pp_split)]

    @property
    def stage_counts(self) -> list[dict[str, int]]:
        return [lay.counts for lay in self.layouts]

    def _stage(self, counts: dict[str, int], seq: Tokens) -> tuple[int, Tokens]:
        kinds = self.model.layer_kinds
        per_token = 0
        per_request: Tokens = 0
        for name, n in counts.items():
            k = kinds[name]
            if k.holds_tokens:
                per_token += n * k.kv_bytes_per_token(self.kv_dtype, self.tp, self.alloc)
            per_request = per_request + n * k.bytes_for(seq, self.kv_dtype, self.tp, self.alloc)
        return per_token, per_request

    def bytes_per_block(self, stage: int) -> int:
        """vLLM: the bytes one block id stands for across a group's layers (its page times the
        group's layers), the unit the pool is divided into (get_kv_cache_config_from_groups)."""
        lay = self.layouts[stage]
        bs = self.alloc.block_size or 1
        kinds = self.model.layer_kinds
        if lay.groups > 1:
            page = self.alloc.state_page_bytes or bs * next(
                kinds[k].kv_bytes_per_token(self.kv_dtype, self.tp, self.alloc) for k in lay.counts if kinds[k].holds_tokens
            )
            return lay.group_size * page
        # One group: every cache layer's page side by side.
        per_token = sum(
            n * kinds[k].kv_bytes_per_token(self.kv_dtype, self.tp, self.alloc)
            for k, n in lay.counts.items()
            if kinds[k].holds_tokens
        )
        state = sum(
            n * self.alloc.state_bytes(kinds[k].state_bytes_per_request(self.tp, self.alloc.recurrent_itemsize))
            for k, n in lay.counts.items()
            if not kinds[k].holds_tokens
        )
        return bs * per_token + (state if self.alloc.state_page_bytes is None else 0)

    def stage_bytes(self, seq: Tokens) -> list[tuple[int, Tokens]]:
        """(bytes per token, bytes per request of ``seq`` tokens) on one rank of each stage."""
        return [self._stage(c, seq) for c in self.stage_counts]

    @cached_property
    def _per_token_and_state(self) -> tuple[int, int]:
        kinds = self.model.layer_kinds
        best = (0, 0)
        for counts in self.stage_counts:
            tok = sum(
                n * kinds[k].kv_bytes_per_token(self.kv_dtype, self.tp, self.alloc)
                for k, n in counts.items()
                if kinds[k].holds_tokens
            )
            st = sum(n * kinds[k].state_bytes_per_request(self.tp, self.alloc.recurrent_itemsize) for k, n in counts.items())
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

    def read_bytes(self, seq: Tokens) -> Tokens:
        """Cache bytes one decode token of a request at context ``seq`` reads on the most loaded GPU: what
        the request holds, but under sparse attention its indexer keys and top-k latents (numpy-friendly)."""
        kinds = self.model.layer_kinds
        best: Tokens = None
        for counts in self.stage_counts:
            r: Tokens = 0
            for name, n in counts.items():
                r = r + n * kinds[name].read_bytes_for(seq, self.kv_dtype, self.tp, self.alloc)
            best = r if best is None else tmax(best, r)
        return best

    def longest_request(self, pool: int, cap: int = 2**40) -> int | None:
        """Largest S with request_bytes(S) <= pool (0 if none); None if it never runs out below ``cap``."""
        first_over = first_true(lambda s: bool(self.request_bytes(s) > pool), 1, cap)
        return None if first_over is None else first_over - 1


DEFAULT_BATCHED_TOKENS = 8192
"""max_num_batched_tokens where no GPU says otherwise (vLLM's default for its server on H100-class GPUs)."""


def stored_kv_dtype(model: ModelSpec, gpu: str, kv: KVDtype, engine: Engine, tp: int) -> KVDtype:
    """The cache format ``engine`` stores on ``gpu`` (a catalog name) for ``kv``: fp8 on a sparse-MLA
    model is FlashMLA's fp8_ds_mla (MLA.kv_bytes_per_token) except where the engine's backend keeps
    standard fp8 (Engine.sparse_mla_fp8_by_backend, Engine.sparse_mla_raw_fp8); any other format as given. Memory, step time and
    the bound all read the cache in this format. Under kv_cache_dtype auto (``kv.auto``) an engine may store
    a sparse-MLA cache in fp8 on some GPUs (Engine.sparse_mla_auto_kv: SGLang on compute capability 10 and up)."""
    if kv.auto and engine.sparse_mla_auto_kv and model.has_sparse_mla and gpu in SM10_UP:
        kv = as_kv_dtype("fp8")
    if kv.name not in ("fp8", "fp8_e4m3") or not model.has_sparse_mla:
        return kv
    if engine.sparse_mla_fp8_by_backend and gpu in SM100:
        heads = min(k.num_attention_heads for k in model.kinds() if isinstance(k, MLA))
        if heads // tp <= 16:
            return as_kv_dtype("fp8_e4m3")
    if engine.sparse_mla_raw_fp8 and (gpu in SM10_UP or gpu in AMD_INSTINCT):
        # SGLang from 0.5.10: its default DSA backend there (trtllm; tilelang on HIP) reads the raw layout.
        return as_kv_dtype("fp8_e4m3")
    # Every other engine and backend turns any fp8 cache of such a model into fp8_ds_mla.
    return as_kv_dtype("fp8")


def dtype_note(model: ModelSpec, dt: KVDtype) -> str:
    """The KV dtype's assumption line for ``model``: an fp8 cache of sparse MLA layers (an
    indexer) is stored in FlashMLA's layout (MLAKind.kv_bytes_per_token), not one byte an element."""
    note = f"KV dtype {dt.name}: {dt.note}"
    if dt.name == "fp8" and model.has_sparse_mla:
        note += (
            "; the sparse MLA layers (with an indexer) as fp8_ds_mla, FlashMLA's layout (an fp32 scale per 128 "
            "latent elements, the rope dims in bf16): the only fp8 cache its sparse decode kernel reads"
        )
    return note


def start_check_footprint(engine: Engine, fp: KVFootprint) -> KVFootprint:
    """What vLLM's start-up check and its estimated maximum length weigh against the available
    memory: one GPU's layers, or at PP > 1 under 0.14 to 0.16 every stage's layers together, the
    whole model (Engine.pp_start_check)."""
    if engine.pp_start_check == "whole" and fp.pp > 1:
        return KVFootprint(fp.model, fp.kv_dtype, fp.tp, 1, fp.alloc)
    return fp


def engine_allocation(
    engine: Engine, model: ModelSpec, block_size: int | None = None, batched_tokens: int | None = None, pp: int = 1
) -> Allocation:
    """What ``engine`` allocates for ``model``: its blocks, its window reservation for the tokens in
    flight (vLLM), and its sliding-pool rule (SGLang keeps one only for allowlisted architectures)."""
    mnbt = batched_tokens or DEFAULT_BATCHED_TOKENS
    return engine.allocation(block_size, engine.in_flight_tokens(mnbt, pp), model)


def request_bytes(
    model: ModelSpec, seq: Tokens, kv_dtype: str | KVDtype = "bf16", tp: int = 1, pp: int = 1, alloc: Allocation = LOGICAL
) -> Tokens:
    """Bytes one request of length ``seq`` holds on the most loaded GPU (numpy-friendly)."""
    return KVFootprint(model, as_kv_dtype(kv_dtype), tp, pp, alloc).request_bytes(seq)


@record(frozen=True)
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


@record(frozen=True)
class GPUShare:
    """The most loaded GPU: one tensor-parallel rank of the largest pipeline stage."""

    kv_bytes_per_token: int
    kv_bytes_per_request: int
    kv_bytes_total: int


@record(frozen=True)
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
    dp: int = 1
    """Data-parallel attention ranks: the per-GPU batch figure is the busiest rank's share."""


LOGICAL_NOTE = (
    "logical bytes: full layers hold every token, sliding layers min(seq, window), chunked layers at "
    "most one chunk; --engine E for what an engine allocates"
)


def kv_size(
    model: ModelSpec,
    seq: int,
    batch: int = 1,
    kv_dtype: str | KVDtype = "bf16",
    tp: int = 1,
    pp: int = 1,
    alloc: Allocation = LOGICAL,
    engine: Engine | None = None,
    dp: int = 1,
) -> SizeReport:
    """Exact KV bytes for ``batch`` requests of ``seq`` tokens each. ``engine`` (when the allocation
    is an engine's) adds its rules to the assumptions. With ``dp`` data-parallel attention ranks
    each request lives on one rank: the deployment's totals are unchanged, and the busiest GPU holds
    ceil(batch / dp) requests (kvcalc.engine.deployment checks the shape)."""
    if seq < 1 or batch < 1:
        raise KvcalcError("seq and batch must be >= 1", f"seq={seq} batch={batch}", "positive integers")
    if dp < 1:
        raise KvcalcError(f"{dp} DP ranks", "dp", "a positive number of DP ranks")
    check_parallel(model, tp, pp)
    dt = as_kv_dtype(kv_dtype)
    fp = KVFootprint(model, dt, tp, pp, alloc)
    alloc = fp.alloc  # the footprint may raise the block size so that a page holds a recurrent state
    per_stage = fp.stage_bytes(seq)
    top = max(range(len(per_stage)), key=lambda i: (per_stage[i][1], per_stage[i][0]))
    top_counts = fp.stage_counts[top]
    names = stages(model, pp, alloc.pp_split)[top]
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
                description=k.describe_stored(alloc),
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
        assumptions.append(f"{engine.title}: {engine.note}")
        if alloc.window_slack and model.has_windows:
            assumptions.append(
                f"sliding and chunked layers reserve for {alloc.window_slack:,} tokens in flight "
                f"({engine.in_flight_words(pp)}); pass --max-num-batched-tokens to change it"
            )
        if engine.swa_pool_ratio is not None and model.has_windows:
            assumptions.append(
                "a separate sliding pool (architecture on SGLang's hybrid-SWA allowlist)"
                if alloc.window_style != "full"
                else f"every layer holds every token: {model.architecture or 'this architecture'} is not on SGLang's hybrid-SWA allowlist"
            )
        assumptions += list(dict.fromkeys(note for k in kinds if (note := k.engine_note(engine))))
    else:
        assumptions.append(LOGICAL_NOTE)
    assumptions.append(dtype_note(model, dt))
    if tp > 1:
        assumptions.append("tensor parallel: " + "; ".join(dict.fromkeys(a for k in kinds if (a := k.tp_assumption(alloc)))))
    if pp > 1:
        assumptions.append("pipeline parallel: layers split as vLLM splits them; per-GPU figures are for the most loaded stage")
    on_rank = -(-batch // dp)
    if dp > 1:
        assumptions.append(
            f"data-parallel attention: each of the {dp} DP ranks keeps only its own requests' KV; the {batch:,} requests "
            f"spread evenly, so the busiest rank's GPUs hold {on_rank:,} of them (the per-GPU batch figure); a token's KV "
            "lives on one rank, so the deployment's totals are as without DP"
        )
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
        per_gpu=GPUShare(per_stage[top][0], per_stage[top][1], per_stage[top][1] * on_rank),
        dp=dp,
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
            "dp": dp,
            "block_size": alloc.block_size,
            "engine": engine.key if engine else None,
        },
    )
