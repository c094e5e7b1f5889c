"""Allocations: how much of a request's history a cache keeps, and in what granularity.

A layer kind says which rule applies to it (every token, a window, a chunk); the allocation
says how an engine rounds each rule. So a new engine needs no edit in the layer kinds, and a
new kind needs no edit here.
"""

from __future__ import annotations

from typing import Literal

from kvcalc._record import record
from kvcalc.specs.layers import Tokens, tmin


def cdiv(a: Tokens, b: int) -> Tokens:
    return -(-a // b)


PPSplit = Literal["before-last", "last", "last-n", "first-n"]
"""How an engine gives the layers that do not divide evenly over its pipeline stages (kv.pp_partition)."""


@record(frozen=True)
class Allocation:
    """``name='logical'`` is the model's own need: a full layer holds every token, a sliding
    layer ``min(seq, window)``, a chunked layer at most one chunk, no rounding."""

    name: str = "logical"
    block_size: int | None = None
    """Tokens per block; None rounds nothing."""
    window_slack: int = 0
    """vLLM: tokens in flight added to window and chunk reservations."""
    window_style: Literal["window", "vllm", "window-1", "full"] = "window"
    """``window``: min(seq, w). ``vllm``: cdiv(min(w - 1 + slack, seq), block) + 1 blocks.
    ``window-1``: min(seq, w - 1) (transformers' DynamicCache sliding layers). ``full``: every token
    (engines that keep a sliding layer's whole history)."""
    mla_expanded: bool = False
    """transformers 4.x cached MLA as decompressed per-head K and V instead of the latent."""
    mla_padded_heads: bool = False
    """vLLM before 0.7 cached DeepSeek-V2's MLA as per-head K and V, head size padded to 256."""
    mla_qk_heads: bool = False
    """vLLM 0.7.0 cached DeepSeek's MLA as per-head K and V, V padded to the query-key head size (MLA.stored_head_dims)."""
    pp_split: PPSplit = "before-last"
    """Which pipeline stages take the layers that do not divide evenly (kv.pp_partition)."""
    mla_align: int = 0
    """Elements each token's MLA latent is padded to a multiple of (vLLM 0.7.2 and 0.7.3 on CUDA: 128,
    engines.MLA_ALIGN_ELEMENTS); 0: none."""
    pad_groups: bool = False
    """vLLM's hybrid KV-cache manager: layers of each attention type are grouped in equal-sized groups
    (padding the last group of a type with empty layers) so that all groups share one block pool."""
    chunked_as_full: bool = False
    """Chunked local attention stored as full attention (vLLM 0.8-0.14: hybrid manager off for it)."""
    state_pages: Literal["sum", "padded", "align"] = "sum"
    """Recurrent state as it is, or in pages padded to the attention page (vLLM), one per request
    ('padded') or two under prefix caching ('align')."""
    state_page_bytes: int | None = None
    """Set by the footprint for 'padded' and 'align': the attention page one state page is padded to."""
    recurrent_itemsize: int = 0
    """Bytes the engine keeps each recurrent (SSM) state element in, where the layer tells them apart
    (RecurrentState.recurrent_elements); 0: as the model's spec stores them."""
    state_pool: Literal["none", "fixed", "ratio"] = "none"
    """SGLang's own pool of recurrent states beside its token pool (Engine.state_pool): 'fixed', max_running_requests
    or 512 slots; 'ratio', the memory left after the weights split 0.9 : 1 between states and tokens
    (mamba_full_memory_ratio); 'none', the states in the token pool (vLLM's pages, or one request's room)."""
    state_pool_pad: int = 0
    """Slots the state pool holds beyond its count (SGLang from 0.5.17: one padding slot; Engine.state_pool_pad)."""
    radix: bool = True
    """SGLang's radix (prefix) cache on: its state pool holds three slots a running request (Engine.state_pool)."""
    state_slots: int | None = None
    """--max-running-requests where given: the state slots under 'fixed', and under 'ratio' without the radix cache."""
    state_dp: int = 1
    """DP-attention ranks: SGLang gives each rank the fixed slots (--max-running-requests or 512) over them."""
    state_ratio_dp: bool = False
    """Whether the ratio's slots are divided by state_dp too (SGLang 0.5.4 to 0.5.6: Engine.state_ratio_dp)."""

    def round(self, tokens: Tokens) -> Tokens:
        """Tokens rounded up to whole blocks."""
        if not self.block_size:
            return tokens
        return cdiv(tokens, self.block_size) * self.block_size

    def full_tokens(self, seq: Tokens) -> Tokens:
        return self.round(seq)

    def window_tokens(self, seq: Tokens, window: int) -> Tokens:
        if self.window_style == "full":
            return self.round(seq)
        if self.window_style == "vllm":
            b = self.block_size or 1
            return (cdiv(tmin(seq, window - 1 + self.window_slack), b) + 1) * b
        if self.window_style == "window-1":
            return self.round(tmin(seq, max(window - 1, 1)))
        return self.round(tmin(seq, window))

    def chunk_tokens(self, seq: Tokens, chunk: int) -> Tokens:
        if self.window_style == "full" or self.chunked_as_full:
            return self.round(seq)
        if self.window_style == "vllm":
            return self.round(tmin(seq, chunk + self.window_slack))
        return self.round(tmin(seq, chunk))

    def cross_tokens(self, seq: Tokens, encoder: int) -> Tokens:
        """A cross-attention layer holds the encoder's tokens; vLLM V0 sized its blocks across every
        layer, so there it is counted like a full layer per decoder token."""
        if self.window_style == "full" and self.name.startswith("vllm"):
            return self.round(seq)
        return 0 * seq + self.round(encoder)

    @property
    def state_blocks(self) -> int:
        return 2 if self.state_pages == "align" else 1

    def state_bytes(self, raw: int) -> int:
        """Bytes a request's recurrent state takes in one layer: as it is, or in padded pages."""
        if self.state_page_bytes is None:
            return raw
        return self.state_blocks * self.state_page_bytes

    def describe(self) -> str:
        if self.name == "logical":
            return "logical bytes" + (f", blocks of {self.block_size} tokens" if self.block_size else "")
        return f"what {self.name} allocates" + (f", blocks of {self.block_size} tokens" if self.block_size else "")


LOGICAL = Allocation()


def blocks_of(block_size: int | None) -> Allocation:
    """Logical bytes rounded up to blocks (``size --block-size`` without an engine, paged policies)."""
    return Allocation(name="logical" if block_size is None else f"paged-{block_size}", block_size=block_size)
