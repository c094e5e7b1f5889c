"""Invariants over random valid specs (hypothesis)."""

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import dense
from kvcalc.engine.alloc import LOGICAL
from kvcalc.engine.engines import ENGINES
from kvcalc.engine.kv import KVFootprint, kv_size, request_bytes
from kvcalc.engine.memory import FitInputs, fit
from kvcalc.specs.catalog import resolve_gpu
from kvcalc.specs.dtypes import BF16


def validate_model(doc):
    from kvcalc.specs.loader import validate

    return validate("model", doc, "test", None)


DTYPES = ["bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp32"]


@st.composite
def specs(draw):
    kv = draw(st.sampled_from([1, 2, 4, 8, 16]))
    group = draw(st.sampled_from([1, 2, 4, 8]))
    heads = kv * group
    d = draw(st.sampled_from([32, 64, 80, 96, 128, 256]))
    geo = {"num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": d}
    pool = {
        "full": {"kind": "full", **geo},
        "sliding": {"kind": "sliding", **geo, "sliding_window": draw(st.integers(1, 10_000))},
        "chunked": {"kind": "chunked", **geo, "attention_chunk_size": draw(st.integers(1, 10_000))},
        "mla": {
            "kind": "mla",
            "num_attention_heads": heads,
            "kv_lora_rank": draw(st.sampled_from([256, 512])),
            "qk_rope_head_dim": 64,
            "qk_nope_head_dim": 128,
            "v_head_dim": 128,
        },
        "state": {"kind": "state", "state_bytes": draw(st.integers(1, 10**7))},
        "none": {"kind": "none"},
    }
    names = draw(st.lists(st.sampled_from(sorted(pool)), min_size=1, max_size=4, unique=True))
    pattern = draw(st.lists(st.sampled_from(names), min_size=1, max_size=8))
    used = sorted(set(pattern))
    return validate_model(
        {
            "name": "random",
            "source": {"url": "hypothesis"},
            "hidden_size": heads * d,
            "vocab_size": 1000,
            "max_position_embeddings": draw(st.integers(1, 1 << 20)),
            "params_total": 10**12,
            "layer_kinds": {n: pool[n] for n in used},
            "layers": [{"repeat": draw(st.integers(1, 20)), "pattern": pattern}],
        }
    )


seqs = st.integers(1, 1 << 21)
allocs = st.sampled_from([None, "vllm", "sglang", "trtllm", "hf", "hf4", "plain"])


def alloc_of(name):
    return LOGICAL if name is None else ENGINES[name].allocation(None, 8192)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(specs(), seqs, st.integers(1, 4096), st.sampled_from(DTYPES), allocs)
def test_kv_is_linear_in_batch(m, s, b, dt, a):
    one = kv_size(m, s, 1, dt, alloc=alloc_of(a))
    many = kv_size(m, s, b, dt, alloc=alloc_of(a))
    assert many.kv_bytes_total == b * one.kv_bytes_per_request
    assert isinstance(many.kv_bytes_total, int)


@settings(max_examples=300)
@given(specs(), seqs, st.integers(0, 1 << 20), st.sampled_from(DTYPES), allocs)
def test_kv_is_monotone_in_seq(m, s, ds, dt, a):
    al = alloc_of(a)
    assert request_bytes(m, s + ds, dt, alloc=al) >= request_bytes(m, s, dt, alloc=al)


@given(
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([1, 2, 4, 8, 16]),
    st.sampled_from([64, 128]),
    st.integers(1, 100),
    seqs,
    st.sampled_from(DTYPES),
)
def test_gqa_is_mha_over_group_size(group, kv, d, layers, s, dt):
    mha = kv_size(dense(layers, kv * group, kv * group, d), s, kv_dtype=dt).kv_bytes_per_request
    gqa = kv_size(dense(layers, kv * group, kv, d), s, kv_dtype=dt).kv_bytes_per_request
    assert mha == gqa * group


@settings(max_examples=100)
@given(specs(), st.lists(seqs, min_size=1, max_size=20), allocs)
def test_numpy_sweep_equals_exact_loop(m, ss, a):
    al = alloc_of(a)
    arr = request_bytes(m, np.array(ss, dtype=np.int64), "bf16", alloc=al)
    assert [int(x) for x in np.broadcast_to(arr, (len(ss),))] == [request_bytes(m, s, "bf16", alloc=al) for s in ss]


@settings(max_examples=200)
@given(specs(), st.integers(0, 10**12), allocs)
def test_longest_request_is_the_boundary(m, pool, a):
    al = alloc_of(a)
    n = KVFootprint(m, BF16, 1, 1, al).longest_request(pool)
    if n is None:
        assert request_bytes(m, 2**40, "bf16", alloc=al) <= pool
    elif n == 0:
        assert request_bytes(m, 1, "bf16", alloc=al) > pool
    else:
        assert request_bytes(m, n, "bf16", alloc=al) <= pool < request_bytes(m, n + 1, "bf16", alloc=al)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs(),
    seqs,
    st.sampled_from(["vllm", "sglang", "trtllm", "hf", "hf4", "plain"]),
    st.sampled_from(["h100-sxm", "l4", "mi300x", "tpu-v5e"]),
)
def test_fit_never_crashes_and_is_consistent(m, s, eng, gpu):
    f = fit(m, resolve_gpu(gpu), FitInputs(seq=s, engine=eng))
    assert f.max_concurrency >= 0
    if f.max_concurrency:
        assert f.max_concurrency * f.request_bytes <= f.kv_pool_bytes
