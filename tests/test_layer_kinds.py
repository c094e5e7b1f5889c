"""Layer kinds own their formulas and register themselves: the schema, the catalog loader and the
engine know every registered kind without a list of kinds anywhere else."""

from dataclasses import dataclass
from typing import ClassVar, Literal

import pytest

from conftest import make_model
from kvcalc.engine.alloc import LOGICAL, Allocation
from kvcalc.engine.kv import KVFootprint
from kvcalc.specs.dtypes import BF16
from kvcalc.specs.layers import KIND_CLASSES, LayerKindBase, register


def test_every_registered_kind_is_in_the_schema():
    from kvcalc.specs.loader import json_schema

    text = str(json_schema("model"))
    for name in KIND_CLASSES:
        assert f"'const': '{name}'" in text or f"'{name}'" in text, name


def test_kinds_answer_for_themselves():
    geo = {"num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 64}
    m = make_model(
        {
            "full": {"kind": "full", **geo},
            "local": {"kind": "sliding", **geo, "sliding_window": 100},
            "chunk": {"kind": "chunked", **geo, "attention_chunk_size": 300},
            "mamba": {"kind": "state", "state_bytes": 1000},
            "skip": {"kind": "none"},
        },
        [{"repeat": 1, "pattern": ["full", "local", "chunk", "mamba", "skip"]}],
    )
    fp = KVFootprint(m, BF16)
    per_layer = 2 * 2 * 64 * 2  # K and V, 2 KV heads, 64 dims, 2 B
    # At 1,000 tokens: full 1,000, sliding 100, chunked 300 tokens, plus the fixed state.
    assert fp.request_bytes(1000) == (1000 + 100 + 300) * per_layer + 1000
    assert fp.per_token == 3 * per_layer and fp.state_bytes == 1000
    assert [k.holds_tokens for k in m.layer_kinds.values()] == [True, True, True, False, False]
    assert [k.prefix_shareable for k in m.layer_kinds.values()] == [True, False, False, False, False]


def test_adding_a_kind_is_one_class():
    """A kind that caches a fixed number of encoder tokens (cross-attention style) added here, in the
    test, by one class: the engine sizes it with no other edit."""

    @register
    @dataclass(frozen=True, kw_only=True)
    class FixedTokens(LayerKindBase):
        KIND: ClassVar[str] = "fixed-test"
        holds_tokens: ClassVar[bool] = True
        kind: Literal["fixed-test"] = "fixed-test"
        tokens: int
        bytes_per_token: int

        def kv_bytes_per_token(self, dtype, tp, alloc):
            return self.bytes_per_token

        def tokens_held(self, seq, alloc):
            return 0 * seq + alloc.full_tokens(self.tokens)

    try:
        from kvcalc.specs.model import ModelSpec

        m = ModelSpec.from_dict(
            {
                "name": "x",
                "source": {"url": "t"},
                "hidden_size": 64,
                "vocab_size": 10,
                "max_position_embeddings": 4096,
                "params_total": 10**6,
                "layer_kinds": {"enc": {"kind": "fixed-test", "tokens": 1601, "bytes_per_token": 10}},
                "layers": [{"repeat": 4, "pattern": ["enc"]}],
            }
        )
        assert KVFootprint(m, BF16).request_bytes(50) == 4 * 1601 * 10
        assert KVFootprint(m, BF16, alloc=Allocation(block_size=16)).request_bytes(50) == 4 * 1616 * 10
        assert m.layer_kinds["enc"].bytes_for(7, BF16, 1, LOGICAL) == 16010
    finally:
        KIND_CLASSES.pop("fixed-test")


@pytest.mark.parametrize(
    "kind, field",
    [("sliding", "sliding_window"), ("chunked", "attention_chunk_size"), ("cross", "encoder_tokens"), ("cross", "v_head_dim")],
)
def test_every_size_field_of_a_kind_must_be_positive(kind, field):
    """A window, chunk or encoder length of 0 (and a cross-attention V of 0) is refused by name."""
    from kvcalc.specs.layers import ChunkedLocal, CrossAttention, SlidingWindow

    cls = {"sliding": SlidingWindow, "chunked": ChunkedLocal, "cross": CrossAttention}[kind]
    good = {"sliding_window": 128, "attention_chunk_size": 8192, "encoder_tokens": 6404}
    args = {"num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 64}
    args |= {k: v for k, v in good.items() if k in cls.__dataclass_fields__}
    cls(**args)  # the control: accepted as given
    with pytest.raises(ValueError, match=f"{field} must be a positive integer"):
        cls(**{**args, field: 0})
