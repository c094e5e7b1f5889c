"""Layer kinds: each kind is one class that owns everything about its kind.

A kind answers, for a KV dtype, a tensor-parallel degree and an allocation (what an engine
reserves, see :class:`kvcalc.engine.alloc.Allocation`):

* ``kv_bytes_per_token``: bytes one token adds to this layer's cache on one rank;
* ``tokens_held(seq, alloc)``: tokens' worth of cache a request of length ``seq`` holds here;
* ``state_bytes_per_request``: a fixed state per request (recurrent layers), whatever its length;
* ``bytes_for(seq, ...)``: what one request holds in this layer;
* the FLOPs of a decode token and of a prefill, the tensor-parallel rules and what they imply,
  whether a shared prefix can be stored once, and the geometry a decode kernel reads.

Kinds register themselves with :func:`register`; the model spec's schema is the union of the
registered kinds, so adding a kind is one class here (and one test), with no ``kind ==`` tests
anywhere else. Sequence lengths may be ints (exact answers) or numpy integer arrays (sweeps).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, Union

from kvcalc._record import record
from kvcalc.errors import KvcalcError
from kvcalc.specs.constraints import MAX_FIELD
from kvcalc.specs.dtypes import KVDtype

if TYPE_CHECKING:
    # For pydantic these names are Annotated constraints, bound by kvcalc.specs.constraints.install().
    Pos = int
    """A positive integer up to 2^50."""
    NonNeg = int

Tokens = Any
"""A token count: an int for an exact answer, or a numpy integer array for a sweep."""

# Spec dataclasses (frozen, keyword-only) are validated by pydantic (TypeAdapter) when they come from a user's file,
# built directly when they come from the tested catalog; this keeps pydantic off start-up.
FORBID: dict[str, str] = {"extra": "forbid"}


def check_positive(obj: object, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{n} must be a positive integer, got {str(v)[:40]!r}")
        if v > MAX_FIELD:
            raise ValueError(f"{n} is {str(v)[:20]}..., more than kvcalc accepts (2^50)")


def tmin(a: Tokens, b: Tokens) -> Tokens:
    """min() that works for ints and numpy arrays alike."""
    if isinstance(a, int) and isinstance(b, int):
        return a if a < b else b
    import numpy as np

    return np.minimum(a, b)


class TokenRule(Protocol):
    """What a kind asks of an allocation: how many tokens each kind of layer reserves."""

    @property
    def mla_expanded(self) -> bool: ...

    @property
    def mla_padded_heads(self) -> bool: ...

    @property
    def mla_qk_heads(self) -> bool: ...

    @property
    def mla_align(self) -> int: ...

    def state_bytes(self, raw: int) -> int: ...

    @property
    def recurrent_itemsize(self) -> int: ...

    def full_tokens(self, seq: Tokens) -> Tokens: ...

    def window_tokens(self, seq: Tokens, window: int) -> Tokens: ...

    def chunk_tokens(self, seq: Tokens, chunk: int) -> Tokens: ...

    def cross_tokens(self, seq: Tokens, encoder: int) -> Tokens: ...


@record(frozen=True)
class DecodeGeometry:
    """What a decode-attention kernel reads for one layer: ``n_kv`` heads of keys of ``d_a + d_b``
    elements, values of ``dv`` (taken from the key's first ``dv`` elements when ``v_from_k``)."""

    kind: Literal["gqa", "mla"]
    n_q: int
    n_kv: int
    d_a: int
    d_b: int
    dv: int
    v_from_k: bool


class HasEngineNote(Protocol):
    @property
    def mla_note(self) -> str: ...


KIND_CLASSES: dict[str, type[LayerKindBase]] = {}


def register(cls: type[LayerKindBase]) -> type[LayerKindBase]:
    """Add a kind to the registry (and so to the model spec's schema)."""
    KIND_CLASSES[cls.KIND] = cls
    return cls


@record(frozen=True, kw_only=True)
class LayerKindBase:
    """What every kind answers; the defaults describe a layer that keeps nothing."""

    __pydantic_config__: ClassVar[dict[str, str]] = FORBID
    KIND: ClassVar[str] = ""
    holds_tokens: ClassVar[bool] = False
    """Whether the cache grows with the context (attention) rather than being fixed (state)."""
    prefix_shareable: ClassVar[bool] = False
    """Whether a prefix common to many requests can be stored once (every token kept, none dropped)."""
    _positive: ClassVar[tuple[str, ...]] = ()
    mla_attention: ClassVar[bool] = False
    decode_kernels: ClassVar[tuple[int, int, int]] = (0, 0, 0)
    """Kernels one decode step runs in this kind's mixer (attention or state), besides the norms and
    the MLP: (matrix multiplies, attention kernels, other small kernels), as vLLM's model code
    launches them (the step-time model charges each kind of kernel its latency)."""
    decode_linears: ClassVar[int] = 0
    """Of decode_kernels' matrix multiplies, those by a weight matrix of the checkpoint (linear
    layers, which its quantization covers); MLA's absorbed batched multiplies are not."""

    def mixer_kernels(self, prompt: bool = False) -> tuple[int, int, int]:
        """The kernels this layer's mixer launches, counted as decode_kernels counts them: in a decode step,
        or (``prompt``) in a step of prompt tokens that the engine runs eagerly, where a mixer's prompt path
        differs from its decode path (RecurrentState.mixer); decode_kernels unless the layer says otherwise."""
        return self.decode_kernels

    def mixer_linears(self) -> int:
        """Of mixer_kernels' matrix multiplies, those by a weight matrix (decode_linears unless the layer
        says otherwise)."""
        return self.decode_linears

    def decode_attention_heads(self, tp: int = 1) -> int:
        """KV heads one request brings to this kind's decode attention call on a rank (the step-time
        model charges the call a cost per request and KV head); 0 where the kind runs no such call,
        and for MLA, whose call is measured whole (kvcalc.engine.steptime)."""
        return 0

    @property
    def indexer_kernels(self) -> tuple[int, int, int]:
        """Kernels a sparse-attention indexer adds to decode_kernels on a layer that holds one, counted
        the same way (matrix multiplies, attention-like calls, small kernels)."""
        return (0, 0, 0)

    @property
    def sparse_topk(self) -> int:
        """The keys a query attends to under sparse attention (0: every key the layer holds)."""
        return 0

    def __post_init__(self) -> None:
        check_positive(self, *self._positive)

    @property
    def kind_name(self) -> str:
        return self.KIND

    # ---- bytes ---------------------------------------------------------------------------
    def kv_bytes_per_token(self, dtype: KVDtype, tp: int, alloc: TokenRule) -> int:
        return 0

    def tokens_held(self, seq: Tokens, alloc: TokenRule) -> Tokens:
        return 0 * seq

    @property
    def window(self) -> int | None:
        """The most tokens this kind attends to (sliding window, chunk), None when unbounded."""
        return None

    @property
    def sparse_mla(self) -> bool:
        """Sparse MLA (DeepSeek-V3.2's indexer): an fp8 cache of it is FlashMLA's layout (MLA.kv_bytes_per_token)."""
        return False

    @property
    def rope_dims(self) -> int:
        """Dimensions a rotary embedding turns (what an engine's cos/sin cache is sized by); 0 for none."""
        return 0

    def state_bytes_per_request(self, tp: int = 1, recurrent_itemsize: int = 0) -> int:
        return 0

    def bytes_for(self, seq: Tokens, dtype: KVDtype, tp: int, alloc: TokenRule) -> Tokens:
        """Bytes a request of length ``seq`` holds in this layer on one rank."""
        return self.tokens_held(seq, alloc) * self.kv_bytes_per_token(dtype, tp, alloc) + self.state_bytes_per_request(tp)

    def read_bytes_for(self, seq: Tokens, dtype: KVDtype, tp: int, alloc: TokenRule) -> Tokens:
        """Bytes one decode token of a request at context ``seq`` reads from this layer's cache on one
        rank: all it holds, but for sparse attention (MLAKind)."""
        return self.bytes_for(seq, dtype, tp, alloc)

    # ---- FLOPs ---------------------------------------------------------------------------
    def attn_flops_per_token(self, seq: Tokens, tp: int = 1) -> Tokens:
        """FLOPs of one decode token's attention at context ``seq`` (scores and weighted sum)."""
        return 0 * seq

    def prefill_attn_flops(self, p: Tokens, tp: int = 1) -> Tokens:
        """FLOPs of attention over a whole prompt of ``p`` tokens (causal)."""
        return 0 * p

    def prefill_attn_flops_per_token(self, seq: Tokens, tp: int = 1) -> Tokens:
        """FLOPs of one prompt token's attention at context ``seq`` in a prefill chunk: as a decode
        token's, unless the kind computes prefill another way."""
        return self.attn_flops_per_token(seq, tp)

    def elementwise_bytes_per_token(self, tp: int = 1) -> int:
        """Bytes one token moves through this kind's own small kernels on one rank (16-bit
        activations read and written: rotary, the cache write's read of K and V), beside the
        layer's norms and MLP; 0 for kinds whose small kernels are not counted."""
        return 0

    # ---- tensor parallelism --------------------------------------------------------------
    def check_tp(self, tp: int, name: str) -> None:
        """Raise unless this layer can be split ``tp`` ways."""

    def tp_assumption(self, alloc: TokenRule | None = None) -> str | None:
        """How this kind is split over tensor-parallel ranks, for the assumptions list (as ``alloc`` stores it)."""
        return None

    def tp_warning(self, tp: int, alloc: TokenRule) -> str | None:
        """What the split costs at this ``tp`` (replicated bytes), if anything."""
        return None

    # ---- what else a kind knows ----------------------------------------------------------
    def engine_note(self, engine: HasEngineNote) -> str | None:
        """What an engine does differently with this kind."""
        return None

    def roofline_note(self) -> str | None:
        return None

    def decode_geometry(self) -> DecodeGeometry | None:
        return None

    def projection_shapes(self, hidden: int) -> list[tuple[int, int]]:
        """(in, out) of the layer's own projection matrices (for measuring weight streaming)."""
        return []

    def describe(self) -> str:
        return self.KIND

    def describe_stored(self, alloc: TokenRule) -> str:
        """describe(), with how ``alloc`` stores the kind where that differs from the kind's own form."""
        return self.describe()


@record(frozen=True, kw_only=True)
class _Attention(LayerKindBase):
    num_attention_heads: Pos
    num_key_value_heads: Pos
    head_dim: Pos
    v_head_dim: Pos | None = None
    """Only when V vectors differ in size from K vectors."""

    holds_tokens: ClassVar[bool] = True
    decode_kernels: ClassVar[tuple[int, int, int]] = (2, 1, 2)
    """The fused QKV and output projections; attention; rotary and the KV-cache write
    (vllm/model_executor/models/llama.py, LlamaAttention)."""
    decode_linears: ClassVar[int] = 2
    _positive: ClassVar[tuple[str, ...]] = ("num_attention_heads", "num_key_value_heads", "head_dim", "v_head_dim")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError(
                f"num_attention_heads ({self.num_attention_heads}) must be a multiple of "
                f"num_key_value_heads ({self.num_key_value_heads})"
            )

    @property
    def dv(self) -> int:
        return self.v_head_dim or self.head_dim

    def kv_heads_per_rank(self, tp: int) -> int:
        # Heads are replicated when tp exceeds the number of KV heads.
        return max(1, self.num_key_value_heads // tp)

    def decode_attention_heads(self, tp: int = 1) -> int:
        return self.kv_heads_per_rank(tp)

    def kv_bytes_per_token(self, dtype: KVDtype, tp: int, alloc: TokenRule) -> int:
        return self.kv_heads_per_rank(tp) * (dtype.vector_bytes(self.head_dim) + dtype.vector_bytes(self.dv))

    def _pair_flops(self, tp: int) -> int:
        """FLOPs per (query, key) pair on one rank: q.k over d and p.v over d_v, 2 FLOPs a MAC."""
        heads = max(1, self.num_attention_heads // tp)
        return 2 * heads * (self.head_dim + self.dv)

    def _logical_tokens(self, seq: Tokens) -> Tokens:
        """Keys one query sees at position ``seq``: every one, or at most the window."""
        w = self.window
        return seq if w is None else tmin(seq, w)

    def attn_flops_per_token(self, seq: Tokens, tp: int = 1) -> Tokens:
        return self._pair_flops(tp) * self._logical_tokens(seq)

    def elementwise_bytes_per_token(self, tp: int = 1) -> int:
        # Rotary reads and writes q and k in place; the cache write reads k and v (2 bytes each).
        heads, kv = max(1, self.num_attention_heads // tp), self.kv_heads_per_rank(tp)
        return 2 * (2 * (heads + kv) * self.head_dim + kv * (self.head_dim + self.dv))

    def _pairs(self, p: Tokens) -> Tokens:
        """Causal (query, key) pairs of a p-token prompt: sum over i = 1..p of the keys token i sees."""
        return p * (p + 1) // 2

    def prefill_attn_flops(self, p: Tokens, tp: int = 1) -> Tokens:
        return self._pair_flops(tp) * self._pairs(p)

    def check_tp(self, tp: int, name: str) -> None:
        heads = self.num_attention_heads
        if heads % tp:
            raise KvcalcError(
                f"TP {tp} does not divide the {heads} query heads of layer kind {name!r}",
                "tp",
                f"a tensor-parallel size that divides {heads}: " + ", ".join(str(d) for d in divisors(heads)),
            )
        n = self.num_key_value_heads
        if (tp <= n and n % tp) or (tp > n and tp % n):
            raise KvcalcError(
                f"TP {tp} cannot split {n} KV heads of layer kind {name!r} evenly",
                "tp",
                f"a divisor of {n} or a multiple of it (KV heads are then replicated)",
            )

    def tp_assumption(self, alloc: TokenRule | None = None) -> str:
        return "each rank holds max(1, kv_heads // tp) KV heads"

    def tp_warning(self, tp: int, alloc: TokenRule) -> str | None:
        n = self.num_key_value_heads
        if tp > n:
            return f"tp {tp} > {n} KV heads: each KV head is replicated on {tp // n} ranks"
        return None

    @property
    def rope_dims(self) -> int:
        return self.head_dim

    def decode_geometry(self) -> DecodeGeometry:
        return DecodeGeometry("gqa", self.num_attention_heads, self.num_key_value_heads, self.head_dim, 0, self.dv, False)

    def projection_shapes(self, hidden: int) -> list[tuple[int, int]]:
        q = self.num_attention_heads * self.head_dim
        kv = self.num_key_value_heads * (self.head_dim + self.dv)
        return [(hidden, q), (hidden, kv), (self.num_attention_heads * self.dv, hidden)]

    def _geometry(self) -> str:
        g = f"{self.num_attention_heads}q/{self.num_key_value_heads}kv x {self.head_dim}"
        if self.v_head_dim:
            g += f" (v {self.v_head_dim})"
        return g


def divisors(n: int) -> list[int]:
    return [d for d in range(1, min(n, 128) + 1) if n % d == 0][:12]


@register
@record(frozen=True, kw_only=True)
class FullAttention(_Attention):
    """Causal attention over the whole history: holds every token."""

    KIND: ClassVar[str] = "full"
    prefix_shareable: ClassVar[bool] = True
    kind: Literal["full"] = "full"

    def tokens_held(self, seq: Tokens, alloc: TokenRule) -> Tokens:
        return alloc.full_tokens(seq)

    def describe(self) -> str:
        return f"full {self._geometry()}"


@register
@record(frozen=True, kw_only=True)
class SlidingWindow(_Attention):
    """Attention over the last ``sliding_window`` tokens: holds min(seq, window)."""

    KIND: ClassVar[str] = "sliding"
    kind: Literal["sliding"] = "sliding"
    sliding_window: Pos

    _positive: ClassVar[tuple[str, ...]] = (*_Attention._positive, "sliding_window")

    @property
    def window(self) -> int:
        return self.sliding_window

    def tokens_held(self, seq: Tokens, alloc: TokenRule) -> Tokens:
        return alloc.window_tokens(seq, self.sliding_window)

    def _pairs(self, p: Tokens) -> Tokens:
        w = self.sliding_window
        inside = tmin(p, w)
        return inside * (inside + 1) // 2 + (p - inside) * w

    def describe(self) -> str:
        return f"sliding {self.sliding_window:,}, {self._geometry()}"


@register
@record(frozen=True, kw_only=True)
class ChunkedLocal(_Attention):
    """Chunked local attention (Llama 4): a token sees only its own chunk; holds at most one chunk."""

    KIND: ClassVar[str] = "chunked"
    kind: Literal["chunked"] = "chunked"
    attention_chunk_size: Pos

    _positive: ClassVar[tuple[str, ...]] = (*_Attention._positive, "attention_chunk_size")

    @property
    def window(self) -> int:
        return self.attention_chunk_size

    def tokens_held(self, seq: Tokens, alloc: TokenRule) -> Tokens:
        return alloc.chunk_tokens(seq, self.attention_chunk_size)

    def _pairs(self, p: Tokens) -> Tokens:
        c = self.attention_chunk_size
        full, rest = p // c, p % c
        return full * (c * (c + 1) // 2) + rest * (rest + 1) // 2

    def describe(self) -> str:
        return f"chunked {self.attention_chunk_size:,}, {self._geometry()}"


@register
@record(frozen=True, kw_only=True)
class CrossAttention(_Attention):
    """Cross-attention over an encoder's tokens (Llama-3.2-Vision's image tiles): keys and values of
    ``encoder_tokens`` tokens per request, whatever its length."""

    KIND: ClassVar[str] = "cross"
    kind: Literal["cross"] = "cross"
    encoder_tokens: Pos
    """Encoder tokens a request attends to (mllama: 4 tiles x (40 x 40 patches + 1) = 6,404 per image)."""

    _positive: ClassVar[tuple[str, ...]] = (*_Attention._positive, "encoder_tokens")

    def tokens_held(self, seq: Tokens, alloc: TokenRule) -> Tokens:
        return alloc.cross_tokens(seq, self.encoder_tokens)

    def _logical_tokens(self, seq: Tokens) -> Tokens:
        return 0 * seq + self.encoder_tokens

    def _pairs(self, p: Tokens) -> Tokens:
        return p * self.encoder_tokens

    @property
    def rope_dims(self) -> int:
        return 0

    def describe(self) -> str:
        return f"cross-attention to {self.encoder_tokens:,} encoder tokens, {self._geometry()}"


@register
@record(frozen=True, kw_only=True)
class MLA(LayerKindBase):
    """Multi-head latent attention (DeepSeek V2/V3, Kimi K2): one latent vector per token.

    The cache holds ``kv_lora_rank + qk_rope_head_dim`` elements per token per layer, shared by
    all heads (so replicated, not split, under tensor parallelism). There is no separate V.
    """

    KIND: ClassVar[str] = "mla"
    holds_tokens: ClassVar[bool] = True
    decode_kernels: ClassVar[tuple[int, int, int]] = (6, 1, 4)
    """The q down and up projections, the kv down projection, the absorbed k and v batched
    multiplies, the output projection; attention; the q and kv norms, rotary, the latent write
    (vllm/model_executor/models/deepseek_v2.py, DeepseekV2MLAAttention and the MLA backend)."""
    decode_linears: ClassVar[int] = 4
    """The q down and up, kv down and output projections (the batched multiplies use kv_b_proj's
    weight dequantized to 16 bits: vllm/v1/attention/backends/mla/common.py,
    get_and_maybe_dequant_weights, 0.11.0)."""
    mla_attention: ClassVar[bool] = True
    """Its attention call is an MLA decode kernel (FlashMLA, FlashAttention-MLA), with a latency of
    its own."""
    prefix_shareable: ClassVar[bool] = True
    kind: Literal["mla"] = "mla"
    num_attention_heads: Pos
    kv_lora_rank: Pos
    qk_rope_head_dim: Pos
    qk_nope_head_dim: Pos
    v_head_dim: Pos
    indexer_head_dim: NonNeg = 0
    """DeepSeek-V3.2's sparse-attention indexer: one key of this size per token per layer, stored in
    fp8 with an fp32 scale per 128 elements whatever the KV dtype (vLLM's DeepseekV32IndexerCache)."""
    indexer_heads: NonNeg = 0
    """The indexer's query heads (config.json index_n_heads): each scores every cached key."""
    indexer_topk: NonNeg = 0
    """The keys each query attends to (config.json index_topk): the indexer's best, at most this many.
    0: attention over every cached token (also where the indexer's layout is known but not its top-k)."""
    q_lora_rank: NonNeg = 0
    """The query's latent (config.json q_lora_rank): the width its up-projection reads. 0: no query
    latent, the query projected from the hidden state by one q_proj (DeepSeek-V2-Lite: deepseek_v2.py), one
    matmul fewer (mixer_kernels); vLLM 0.7's materialized decode weights depend on it too
    (kvcalc.engine.weights.mla_materialized)."""

    _positive: ClassVar[tuple[str, ...]] = (
        "num_attention_heads",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("indexer_head_dim", "indexer_heads", "indexer_topk", "q_lora_rank"):
            d = getattr(self, name)
            if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= MAX_FIELD:
                raise ValueError(f"{name} must be a whole number from 0 to 2^50, got {str(d)[:40]!r}")
        if self.indexer_heads and not self.indexer_head_dim:
            raise ValueError("indexer_heads needs an indexer (indexer_head_dim above 0)")

    @property
    def sparse_topk(self) -> int:
        return self.indexer_topk

    def mixer_kernels(self, prompt: bool = False) -> tuple[int, int, int]:
        """decode_kernels, one matmul fewer without a query latent (q_lora_rank 0: one q_proj in place of the
        down and up projections)."""
        g, a, k = self.decode_kernels
        return (g if self.q_lora_rank else g - 1), a, k

    def mixer_linears(self) -> int:
        """decode_linears, one fewer without a query latent (mixer_kernels)."""
        return self.decode_linears if self.q_lora_rank else self.decode_linears - 1

    @property
    def indexer_kernels(self) -> tuple[int, int, int]:
        # vLLM 0.24 deepseek_v2.py Indexer.forward: its q up-projection and the fused wk and weights
        # projection; the fp8 paged logits over every cached key, charged as an attention call; the key
        # norm, rotary, the q quantization, the key's quantize-and-cache write and the top-k.
        return (2, 1, 5) if self.indexer_head_dim else (0, 0, 0)

    @property
    def sparse_mla(self) -> bool:
        """Attention over an indexer's top-k: a layer with an indexer, or one reusing another's picks
        (both run the sparse backends, whose fp8 cache layout is FlashMLA's)."""
        return bool(self.indexer_head_dim or self.indexer_topk)

    @property
    def indexer_bytes(self) -> int:
        d = self.indexer_head_dim
        return d + -(-d // 128) * 4 if d else 0

    @property
    def latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim

    def stored_head_dims(self, alloc: TokenRule) -> tuple[int, int] | None:
        """(K, V) elements a head of a token where ``alloc`` caches this layer as per-head keys and values instead of
        its latent: decompressed as the model computes them (transformers 4.x: nope + rope, v_head_dim); padded to a
        head size of 256 for FlashAttention (vLLM 0.5 and 0.6: config.py get_head_size returns 256 for deepseek_v2,
        models/deepseek_v2.py pads q, k and v to it, read in 0.6.3); or V padded to the query-key head size (vLLM
        0.7.0: get_head_size returns qk_nope + qk_rope for deepseek_v2 and deepseek_v3, and DeepseekV2Attention pads v
        to qk_head_dim, read in 0.7.0; MLA's latent cache came in 0.7.1, config.py use_mla). None: the latent."""
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        if alloc.mla_expanded:
            return qk, self.v_head_dim
        if alloc.mla_padded_heads:
            return 256, 256
        if alloc.mla_qk_heads:
            return qk, qk
        return None

    def kv_bytes_per_token(self, dtype: KVDtype, tp: int, alloc: TokenRule) -> int:
        heads = max(1, self.num_attention_heads // tp)
        dims = self.stored_head_dims(alloc)
        if dims is not None:
            return heads * (dtype.vector_bytes(dims[0]) + dtype.vector_bytes(dims[1]))
        if dtype.name == "fp8_ds_mla" or (dtype.name == "fp8" and self.sparse_mla):
            # FlashMLA's fp8 layout for sparse MLA: the latent in fp8 with an fp32 scale per 128, the
            # rope dims in bf16 (512 + 16 + 128 = 656 B for DeepSeek-V3.2). Its sparse decode kernel
            # reads no other fp8 format, so an fp8 cache of a model with an indexer is stored so:
            # vLLM 0.11.0-0.14 turn fp8 into fp8_ds_mla for DeepSeek-V3.2
            # (model_executor/models/config.py DeepseekV32ForCausalLM), 0.21 for the FLASHMLA_SPARSE
            # backend (layers/attention/mla_attention.py); SGLang 0.5.4's NSA runs fp8 on flashmla_kv.
            lat = self.kv_lora_rank + -(-self.kv_lora_rank // 128) * 4 + 2 * self.qk_rope_head_dim
            return lat + self.indexer_bytes
        latent = self.latent_dim
        if alloc.mla_align:
            latent = -(-latent // alloc.mla_align) * alloc.mla_align
        return dtype.vector_bytes(latent) + self.indexer_bytes

    def tokens_held(self, seq: Tokens, alloc: TokenRule) -> Tokens:
        return alloc.full_tokens(seq)

    def read_bytes_for(self, seq: Tokens, dtype: KVDtype, tp: int, alloc: TokenRule) -> Tokens:
        # DeepSeek Sparse Attention: the indexer scores every cached key (its fp8 keys, all of them),
        # and the attention reads the latents of the top-k it picks, at most indexer_topk of them
        # (DeepSeek-V3.2's inference code; vLLM's FLASHMLA_SPARSE and SGLang's NSA backends gather
        # those rows by index). Dense MLA reads every latent it holds.
        k = self.sparse_topk
        if not k:
            return self.bytes_for(seq, dtype, tp, alloc)
        latent = self.kv_bytes_per_token(dtype, tp, alloc) - self.indexer_bytes
        return seq * self.indexer_bytes + tmin(seq, k) * latent

    def roofline_note(self) -> str | None:
        if not self.sparse_topk:
            return None
        return (
            f"sparse attention (an indexer's top-{self.sparse_topk:,}): a decode token reads every cached token's "
            f"indexer key and the latents of at most {self.sparse_topk:,} tokens, and its attention FLOPs are the "
            "indexer's scores over every key plus the attention over those"
        )

    def _indexer_flops(self, seq: Tokens) -> Tokens:
        """The indexer's scores for one query over ``seq`` keys, in FLOPs at the 16-bit peak: each head's
        dot product with every key and the heads' weighted sum, 2 x n_i x (d_i + 1) FLOPs a key, which
        every rank runs whole and in fp8 (DeepGEMM's fp8 MQA logits in vLLM, SGLang's NSA indexer), at
        twice the 16-bit rate on every GPU that runs these models: half of them at the 16-bit peak."""
        return self.indexer_heads * (self.indexer_head_dim + 1) * seq

    def elementwise_bytes_per_token(self, tp: int = 1) -> int:
        # Rotary reads and writes the heads' and the shared key's rope dims; the latent write reads
        # the latent (2 bytes each).
        heads, r = max(1, self.num_attention_heads // tp), self.qk_rope_head_dim
        return 2 * (2 * (heads + 1) * r + self.latent_dim)

    def attn_flops_per_token(self, seq: Tokens, tp: int = 1) -> Tokens:
        return self.kernel_attn_flops_per_token(seq, max(1, self.num_attention_heads // tp))

    def prefill_attn_flops(self, p: Tokens, tp: int = 1) -> Tokens:
        # Prefill runs MLA decompressed (K of nope + rope dims, V of v_head_dim per head). Under sparse
        # attention query i attends to min(i, top-k) keys, and the indexer scores all i.
        k = self.sparse_topk
        if not k:
            return self._prefill_pair_flops(tp) * (p * (p + 1) // 2)
        inside = tmin(p, k)
        pairs = inside * (inside + 1) // 2 + (p - inside) * k
        return self._prefill_pair_flops(tp) * pairs + self._indexer_flops(p * (p + 1) // 2)

    def prefill_attn_flops_per_token(self, seq: Tokens, tp: int = 1) -> Tokens:
        # A prompt chunk attends decompressed too, not in the absorbed form a decode token uses.
        k = self.sparse_topk
        if not k:
            return self._prefill_pair_flops(tp) * seq
        return self._prefill_pair_flops(tp) * tmin(seq, k) + self._indexer_flops(seq)

    def kernel_attn_flops_per_token(self, seq: Tokens, heads: int) -> Tokens:
        """One token's attention at context ``seq`` in the absorbed form over ``heads`` query heads: scores over
        the latent and rope dims and the weighted sum over the latent, over every key or the indexer's top-k, plus
        the indexer's scores over every key. A decode token's with the model's heads a rank (attn_flops_per_token);
        a sparse-MLA kernel's with its padded heads, prompt tokens alike (Engine.sparse_mla_heads)."""
        pair = 2 * heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)
        k = self.sparse_topk
        return pair * tmin(seq, k) + self._indexer_flops(seq) if k else pair * seq

    def _prefill_pair_flops(self, tp: int) -> int:
        heads = max(1, self.num_attention_heads // tp)
        return 2 * heads * (self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim)

    def stored_attn_flops_per_token(self, seq: Tokens, tp: int, dims: tuple[int, int]) -> Tokens:
        """One token's attention at context ``seq`` over per-head keys and values of ``dims`` (stored_head_dims), as
        an engine that caches them runs it, prompt and decode tokens alike: each head's scores over the keys' elements
        and its weighted sum over the values', padding included."""
        return 2 * max(1, self.num_attention_heads // tp) * (dims[0] + dims[1]) * seq

    def check_tp(self, tp: int, name: str) -> None:
        heads = self.num_attention_heads
        if heads % tp:
            raise KvcalcError(
                f"TP {tp} does not divide the {heads} query heads of layer kind {name!r}",
                "tp",
                f"a tensor-parallel size that divides {heads}: " + ", ".join(str(d) for d in divisors(heads)),
            )

    def tp_assumption(self, alloc: TokenRule | None = None) -> str:
        if alloc is not None and self.stored_head_dims(alloc) is not None:
            return "each rank holds the K and V of its num_attention_heads // tp heads"
        return "the MLA latent is replicated on every rank"

    def tp_warning(self, tp: int, alloc: TokenRule) -> str | None:
        if tp > 1 and self.stored_head_dims(alloc) is None:
            return "the MLA latent is shared by all heads, so every tensor-parallel rank holds a full copy"
        return None

    def engine_note(self, engine: HasEngineNote) -> str | None:
        return engine.mla_note or None

    @property
    def rope_dims(self) -> int:
        return self.qk_rope_head_dim

    def decode_geometry(self) -> DecodeGeometry:
        return DecodeGeometry(
            "mla", self.num_attention_heads, 1, self.kv_lora_rank, self.qk_rope_head_dim, self.kv_lora_rank, True
        )

    def projection_shapes(self, hidden: int) -> list[tuple[int, int]]:
        h = self.num_attention_heads
        return [
            (hidden, self.latent_dim),
            (self.kv_lora_rank, h * (self.qk_nope_head_dim + self.v_head_dim)),
            (h * self.v_head_dim, hidden),
        ]

    def describe(self) -> str:
        idx = f", indexer {self.indexer_head_dim}" if self.indexer_head_dim else ""
        if self.sparse_topk:
            idx += f", top-{self.sparse_topk}"
        return f"MLA latent {self.kv_lora_rank}+{self.qk_rope_head_dim}, {self.num_attention_heads}q{idx}"

    def describe_stored(self, alloc: TokenRule) -> str:
        dims = self.stored_head_dims(alloc)
        if dims is None:
            return self.describe()
        return f"MLA cached as per-head K {dims[0]} and V {dims[1]}, {self.num_attention_heads} heads"


GDN_DECODE_KERNELS = (3, 0, 13)
"""A Gated DeltaNet layer's decode kernels as vLLM 0.11 launches them (model_executor/models/qwen3_next.py,
Qwen3NextGatedDeltaNet._forward, the decode branch): in_proj_qkvz, in_proj_ba and out_proj; the copies
that reshape the split value, z, b and a and flatten the split query and key (6), their concatenation,
causal_conv1d_update, b's sigmoid, fused_gdn_gating, fused_recurrent_gated_delta_rule (the q and k
l2-norms inside it), the gated RMSNorm and out_proj's copy into the layer's output (SGLang 0.5.6's CUDA-graph
path fuses the copies and the gating: fused_qkvzba_split_reshape_cat, fused_sigmoid_gating_delta_rule_update)."""
GDN_PROMPT_KERNELS = (3, 0, 25)
"""A Gated DeltaNet layer's kernels in a prompt step as SGLang 0.5.6 runs it eagerly (models/qwen3_next.py
Qwen3GatedDeltaNet._forward outside a CUDA graph; layers/attention/hybrid_linear_attn_backend.py
GDNAttnBackend.forward_extend; layers/attention/fla/chunk.py): the three projections; the copies that
reshape the split value, z, b and a and flatten the split query and key (6) and their concatenation; the
prefix-length test; causal_conv1d_fn (channel-last, no copy); fused_gdn_gating; the state's gather; the
chunked delta rule (chunk_gated_delta_rule: input_guard's copies of the non-contiguous q, k and v (3), the
two l2-norms, chunk_local_cumsum, chunk_scaled_dot_kkt_fwd, solve_tril's two kernels, recompute_w_u_fwd,
chunk_gated_delta_rule_fwd_h and chunk_fwd_o: 12; the chunk indices are computed once a forward,
fla/index.py's tensor_cache); the state's scatter back and the gated RMSNorm (the custom op gdn_with_output,
which would copy the result once more, runs only under a forward context, not counted). Its decode path
launches GDN_DECODE_KERNELS."""


@register
@record(frozen=True, kw_only=True)
class RecurrentState(LayerKindBase):
    """Linear-attention or state-space (Mamba, Gated DeltaNet) layer: a fixed state per request."""

    KIND: ClassVar[str] = "state"
    kind: Literal["state"] = "state"
    decode_kernels: ClassVar[tuple[int, int, int]] = (2, 0, 4)
    """The input and output projections; the convolution, the state update, gating and the norm
    (vllm/model_executor/layers/mamba/mamba_mixer2.py)."""
    decode_linears: ClassVar[int] = 2
    state_bytes: Pos
    """Bytes of state one request holds in this layer on one GPU (tp=1), independent of length."""
    note: str = ""
    """How the byte count was derived, e.g. the state shapes and dtype."""
    mixer: Literal["mamba2", "gdn"] = "mamba2"
    """Which recurrence, for the kernels it launches (mixer_kernels): 'mamba2' (decode_kernels) or 'gdn',
    Gated DeltaNet (Qwen3-Next's linear-attention layers: GDN_DECODE_KERNELS, GDN_PROMPT_KERNELS)."""

    recurrent_elements: NonNeg = 0
    """Of the state, the recurrent (SSM) state's elements (tp=1): a Gated DeltaNet layer's value heads x key dim
    x value dim. 0: not told apart (the state is kept as state_bytes says wherever it is served)."""
    recurrent_itemsize: NonNeg = 0
    """Bytes each recurrent element takes in state_bytes (4 for fp32, 2 for 16 bits); set with recurrent_elements.
    An engine that keeps the recurrent state in another dtype (SGLang: fp32 by default) swaps those bytes."""

    _positive: ClassVar[tuple[str, ...]] = ("state_bytes",)

    def __post_init__(self) -> None:
        super().__post_init__()
        e, b = self.recurrent_elements, self.recurrent_itemsize
        for name, d in (("recurrent_elements", e), ("recurrent_itemsize", b)):
            if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d <= MAX_FIELD:
                raise ValueError(f"{name} must be a whole number from 0 to 2^50, got {str(d)[:40]!r}")
        if bool(e) != bool(b) or b not in (0, 2, 4):
            raise ValueError("recurrent_elements and recurrent_itemsize go together, the itemsize 2 or 4 bytes")
        if e * b > self.state_bytes:
            raise ValueError(f"the recurrent state ({e:,} x {b} B) is more than state_bytes ({self.state_bytes:,} B)")

    def mixer_kernels(self, prompt: bool = False) -> tuple[int, int, int]:
        if self.mixer == "gdn":
            return GDN_PROMPT_KERNELS if prompt else GDN_DECODE_KERNELS
        return self.decode_kernels

    def mixer_linears(self) -> int:
        return GDN_DECODE_KERNELS[0] if self.mixer == "gdn" else self.decode_linears

    def state_bytes_per_request(self, tp: int = 1, recurrent_itemsize: int = 0) -> int:
        """The state split across ranks with its heads / channels; ``recurrent_itemsize``: the bytes an engine keeps
        each recurrent element in, where it knows them apart (0: as state_bytes stores it)."""
        total = self.state_bytes
        if recurrent_itemsize and self.recurrent_elements:
            total += self.recurrent_elements * (recurrent_itemsize - self.recurrent_itemsize)
        return -(-total // tp)

    def bytes_for(self, seq: Tokens, dtype: KVDtype, tp: int, alloc: TokenRule) -> Tokens:
        return 0 * seq + alloc.state_bytes(self.state_bytes_per_request(tp, alloc.recurrent_itemsize))

    def tp_assumption(self, alloc: TokenRule | None = None) -> str:
        return "recurrent state is split across ranks"

    def roofline_note(self) -> str:
        return "recurrent-state layers: the state is read each step; their FLOPs are not counted"

    def describe(self) -> str:
        return f"state {self.state_bytes:,} B/request"


@register
@record(frozen=True, kw_only=True)
class NoCache(LayerKindBase):
    """A layer that keeps nothing per request (e.g. one that reuses another layer's KV)."""

    KIND: ClassVar[str] = "none"
    kind: Literal["none"] = "none"
    note: str = ""

    def describe(self) -> str:
        return "no cache"


if TYPE_CHECKING:
    LayerKind = LayerKindBase
else:
    # The schema of a layer kind: one of the registered classes, told apart by their `kind` tag.
    LayerKind = Union[tuple(KIND_CLASSES.values())]
LAYER_KINDS = tuple(KIND_CLASSES)


def layer_from_dict(d: dict[str, Any]) -> LayerKindBase:
    """Build a layer kind from a trusted dict (the catalog); user files go through pydantic."""
    cls = KIND_CLASSES.get(d.get("kind", ""))
    if cls is None:
        raise ValueError(f"kind must be one of {', '.join(LAYER_KINDS)}, got {d.get('kind')!r}")
    return cls(**d)
