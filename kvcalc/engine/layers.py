"""Layer kinds: each owns its KV formulas.

A layer kind answers three questions, for a given KV dtype and tensor-parallel degree:

* ``kv_bytes_per_token``: bytes one token adds to this layer's cache on one rank;
* ``tokens_held(seq, alloc)``: how many tokens' worth of cache a request of length ``seq``
  holds here, under an allocation policy (logical bytes, or what an engine reserves);
* ``bytes_for(seq, ...)``: the two multiplied, or a constant for recurrent state.

Sequence lengths may be Python ints (exact) or numpy integer arrays (sweeps).
Engine-specific rounding (blocks, vLLM's window slack) lives in :class:`Allocation`,
so a new engine needs no edit here and a new layer kind needs no edit there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal, Union

from kvcalc._compat import Gt

from kvcalc.engine.dtypes import KVDtype

Pos = Annotated[int, Gt(0)]
"""A positive integer. (annotated_types carries the constraint into the JSON Schema.)"""

# Spec dataclasses are validated by pydantic (TypeAdapter) when they come from a user's file,
# built directly when they come from the tested catalog; this keeps pydantic off start-up.
SPEC = dict(frozen=True, kw_only=True)
FORBID: dict = {"extra": "forbid"}


def check_positive(obj, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{n} must be a positive integer, got {v!r}")


def _min(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a if a < b else b
    import numpy as np

    return np.minimum(a, b)


def _cdiv(a, b):
    return -(-a // b)


@dataclass(frozen=True)
class Allocation:
    """How much of a request's history a cache keeps, and in what granularity.

    ``name='logical'`` is the model's own need: a full layer holds every token, a sliding
    layer ``min(seq, window)``, a chunked layer at most one chunk, no rounding.
    """

    name: str = "logical"
    block_size: int | None = None
    """Tokens per block; None rounds nothing."""
    window_slack: int = 0
    """vLLM: tokens in flight (max_num_batched_tokens) added to window and chunk reservations."""
    window_style: Literal["window", "vllm", "window-1"] = "window"
    """``window``: min(seq, w). ``vllm``: cdiv(min(w - 1 + slack, seq), block) + 1 blocks.
    ``window-1``: min(seq, w - 1) (transformers' DynamicCache sliding layers)."""
    mla_expanded: bool = False
    """transformers 4.x cached MLA as decompressed per-head K and V instead of the latent."""
    pad_groups: bool = False
    """vLLM's hybrid KV-cache manager: layers of each attention type are grouped in equal-sized groups
    (padding the last group of a type with empty layers) so that all groups share one block pool."""

    def blocks(self, tokens):
        assert self.block_size
        return _cdiv(tokens, self.block_size)

    def round(self, tokens):
        """Tokens rounded up to whole blocks."""
        if not self.block_size:
            return tokens
        return self.blocks(tokens) * self.block_size

    def full_tokens(self, seq):
        return self.round(seq)

    def window_tokens(self, seq, window: int):
        if self.window_style == "vllm":
            b = self.block_size or 1
            return (_cdiv(_min(seq, window - 1 + self.window_slack), b) + 1) * b
        if self.window_style == "window-1":
            return self.round(_min(seq, max(window - 1, 1)))
        return self.round(_min(seq, window))

    def chunk_tokens(self, seq, chunk: int):
        if self.window_style == "vllm":
            return self.round(_min(seq, chunk + self.window_slack))
        return self.round(_min(seq, chunk))


LOGICAL = Allocation()


@dataclass(**SPEC)
class _Kind:
    __pydantic_config__: ClassVar[dict] = FORBID
    _positive: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self):
        check_positive(self, *self._positive)

    # Overridden per kind.
    def kv_bytes_per_token(self, dtype: KVDtype, tp: int = 1, alloc: Allocation = LOGICAL) -> int:
        return 0

    def tokens_held(self, seq, alloc: Allocation = LOGICAL):
        return 0 * seq

    def state_bytes_per_request(self, tp: int = 1) -> int:
        return 0

    def attn_flops_per_token(self, seq, tp: int = 1):
        """FLOPs of one decode token's attention at context ``seq`` (scores and weighted sum)."""
        return 0 * seq

    def prefill_attn_flops(self, p, tp: int = 1):
        """FLOPs of attention over a whole prompt of ``p`` tokens (causal)."""
        return 0 * p

    def bytes_for(self, seq, dtype: KVDtype, tp: int = 1, alloc: Allocation = LOGICAL):
        """Bytes a request of length ``seq`` holds in this layer on one rank."""
        return self.tokens_held(seq, alloc) * self.kv_bytes_per_token(dtype, tp, alloc) + self.state_bytes_per_request(tp)

    @property
    def has_attention(self) -> bool:
        return False

    @property
    def kv_heads(self) -> int:
        return 0

    def describe(self) -> str:
        return self.kind  # type: ignore[attr-defined]


@dataclass(**SPEC)
class _Attention(_Kind):
    num_attention_heads: Pos
    num_key_value_heads: Pos
    head_dim: Pos
    v_head_dim: Pos | None = None
    """Only when V vectors differ in size from K vectors."""

    _positive: ClassVar[tuple[str, ...]] = ("num_attention_heads", "num_key_value_heads", "head_dim", "v_head_dim")

    def __post_init__(self):
        super().__post_init__()
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )

    @property
    def has_attention(self) -> bool:
        return True

    @property
    def kv_heads(self) -> int:
        return self.num_key_value_heads

    def kv_heads_per_rank(self, tp: int) -> int:
        # Heads are replicated when tp exceeds the number of KV heads.
        return max(1, self.num_key_value_heads // tp)

    def kv_bytes_per_token(self, dtype: KVDtype, tp: int = 1, alloc: Allocation = LOGICAL) -> int:
        v = self.v_head_dim or self.head_dim
        return self.kv_heads_per_rank(tp) * (dtype.vector_bytes(self.head_dim) + dtype.vector_bytes(v))

    def _pair_flops(self, tp: int) -> int:
        """FLOPs per (query, key) pair on one rank: q.k over d and p.v over d_v, 2 FLOPs a MAC."""
        heads = max(1, self.num_attention_heads // tp)
        return 2 * heads * (self.head_dim + (self.v_head_dim or self.head_dim))

    def attn_flops_per_token(self, seq, tp: int = 1):
        return self._pair_flops(tp) * self.tokens_held(seq)

    def _pairs(self, p):
        """Causal (query, key) pairs of a p-token prompt: sum over i = 1..p of the keys token i sees."""
        return p * (p + 1) // 2

    def prefill_attn_flops(self, p, tp: int = 1):
        return self._pair_flops(tp) * self._pairs(p)

    def _geometry(self) -> str:
        g = f"{self.num_attention_heads}q/{self.num_key_value_heads}kv x {self.head_dim}"
        if self.v_head_dim:
            g += f" (v {self.v_head_dim})"
        return g


@dataclass(**SPEC)
class FullAttention(_Attention):
    """Causal attention over the whole history: holds every token."""

    kind: Literal["full"] = "full"

    def tokens_held(self, seq, alloc: Allocation = LOGICAL):
        return alloc.full_tokens(seq)

    def describe(self) -> str:
        return f"full {self._geometry()}"


@dataclass(**SPEC)
class SlidingWindow(_Attention):
    """Attention over the last ``sliding_window`` tokens: holds min(seq, window)."""

    kind: Literal["sliding"] = "sliding"
    sliding_window: Pos

    def __post_init__(self):
        super().__post_init__()
        check_positive(self, "sliding_window")

    def tokens_held(self, seq, alloc: Allocation = LOGICAL):
        return alloc.window_tokens(seq, self.sliding_window)

    def _pairs(self, p):
        w = self.sliding_window
        inside = _min(p, w)
        return inside * (inside + 1) // 2 + (p - inside) * w

    def describe(self) -> str:
        return f"sliding {self.sliding_window:,}, {self._geometry()}"


@dataclass(**SPEC)
class ChunkedLocal(_Attention):
    """Chunked local attention (Llama 4): a token sees only its own chunk; holds at most one chunk."""

    kind: Literal["chunked"] = "chunked"
    attention_chunk_size: Pos

    def __post_init__(self):
        super().__post_init__()
        check_positive(self, "attention_chunk_size")

    def tokens_held(self, seq, alloc: Allocation = LOGICAL):
        return alloc.chunk_tokens(seq, self.attention_chunk_size)

    def _pairs(self, p):
        c = self.attention_chunk_size
        full, rest = p // c, p % c
        return full * (c * (c + 1) // 2) + rest * (rest + 1) // 2

    def describe(self) -> str:
        return f"chunked {self.attention_chunk_size:,}, {self._geometry()}"


@dataclass(**SPEC)
class MLA(_Kind):
    """Multi-head latent attention (DeepSeek V2/V3, Kimi K2): one latent vector per token.

    The cache holds ``kv_lora_rank + qk_rope_head_dim`` elements per token per layer, shared by
    all heads (so replicated, not split, under tensor parallelism). There is no separate V.
    """

    kind: Literal["mla"] = "mla"
    num_attention_heads: Pos
    kv_lora_rank: Pos
    qk_rope_head_dim: Pos
    qk_nope_head_dim: Pos
    v_head_dim: Pos

    _positive: ClassVar[tuple[str, ...]] = (
        "num_attention_heads", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")

    @property
    def has_attention(self) -> bool:
        return True

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    def kv_bytes_per_token(self, dtype: KVDtype, tp: int = 1, alloc: Allocation = LOGICAL) -> int:
        if alloc.mla_expanded:
            heads = max(1, self.num_attention_heads // tp)
            k = dtype.vector_bytes(self.qk_nope_head_dim + self.qk_rope_head_dim)
            return heads * (k + dtype.vector_bytes(self.v_head_dim))
        return dtype.vector_bytes(self.latent_dim)

    def tokens_held(self, seq, alloc: Allocation = LOGICAL):
        return alloc.full_tokens(seq)

    def _pair_flops(self, tp: int) -> int:
        """Absorbed MLA: scores over the latent and rope dims, the weighted sum over the latent."""
        heads = max(1, self.num_attention_heads // tp)
        return 2 * heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)

    def attn_flops_per_token(self, seq, tp: int = 1):
        return self._pair_flops(tp) * seq

    def prefill_attn_flops(self, p, tp: int = 1):
        # Prefill runs MLA decompressed (K of nope + rope dims, V of v_head_dim per head).
        heads = max(1, self.num_attention_heads // tp)
        return 2 * heads * (self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim) * (p * (p + 1) // 2)

    def describe(self) -> str:
        return f"MLA latent {self.kv_lora_rank}+{self.qk_rope_head_dim}, {self.num_attention_heads}q"


@dataclass(**SPEC)
class RecurrentState(_Kind):
    """Linear-attention or state-space (Mamba, Gated DeltaNet) layer: a fixed state per request."""

    kind: Literal["state"] = "state"
    state_bytes: Pos
    """Bytes of state one request holds in this layer on one GPU (tp=1), independent of length."""
    note: str = ""
    """How the byte count was derived, e.g. the state shapes and dtype."""

    _positive: ClassVar[tuple[str, ...]] = ("state_bytes",)

    def state_bytes_per_request(self, tp: int = 1) -> int:
        # The state is split across ranks with its heads / channels.
        return _cdiv(self.state_bytes, tp)

    def bytes_for(self, seq, dtype: KVDtype, tp: int = 1, alloc: Allocation = LOGICAL):
        return 0 * seq + self.state_bytes_per_request(tp)

    def describe(self) -> str:
        return f"state {self.state_bytes:,} B/request"


@dataclass(**SPEC)
class NoCache(_Kind):
    """A layer that keeps nothing per request (e.g. one that reuses another layer's KV)."""

    kind: Literal["none"] = "none"
    note: str = ""

    def describe(self) -> str:
        return "no cache"


LayerKind = Union[FullAttention, SlidingWindow, ChunkedLocal, MLA, RecurrentState, NoCache]
KIND_CLASSES: dict[str, type] = {
    "full": FullAttention,
    "sliding": SlidingWindow,
    "chunked": ChunkedLocal,
    "mla": MLA,
    "state": RecurrentState,
    "none": NoCache,
}
LAYER_KINDS = tuple(KIND_CLASSES)


def layer_from_dict(d: dict) -> _Kind:
    """Build a layer kind from a trusted dict (the catalog); user files go through pydantic."""
    cls = KIND_CLASSES.get(d.get("kind"))
    if cls is None:
        raise ValueError(f"kind must be one of {', '.join(LAYER_KINDS)}, got {d.get('kind')!r}")
    return cls(**d)
