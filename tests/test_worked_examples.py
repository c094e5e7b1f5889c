"""The worked examples of docs/worked-examples.md, with the arithmetic written out."""

from conftest import dense
from kvcalc.engine.kv import kv_size
from kvcalc.engine.memory import FitInputs, fit
from kvcalc.specs.catalog import resolve_gpu, resolve_model


def test_llama2_7b_half_a_mebibyte_per_token():
    m = resolve_model("llama2-7b")
    r = kv_size(m, seq=1024, kv_dtype="fp16")
    assert r.kv_bytes_per_token == 2 * 32 * 32 * 128 * 2 == 524_288  # 0.5 MiB, not "0.5 MB"
    # The widely copied "268 MB" for this case leaves out the factor 2 for K and V.
    assert r.kv_bytes_per_request == 1 * 32 * 32 * 1024 * 128 * 2 * 2 == 536_870_912
    assert kv_size(m, seq=1024, batch=8, kv_dtype="fp16").kv_bytes_total == 8 * 536_870_912  # 4.3 GB, not 2 GB


def test_same_model_with_8_kv_heads_is_a_quarter():
    r = kv_size(dense(32, 32, 8, 128), seq=1)
    assert r.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2 == 131_072  # 128 KiB


def test_llama2_70b_batch_32_at_4k():
    r = kv_size(resolve_model("llama2-70b"), seq=4096, batch=32, kv_dtype="fp16")
    # The "~17 GB" published for this case is what L=32 gives; L is 80.
    assert r.kv_bytes_total == 2 * 80 * 8 * 128 * 4096 * 32 * 2 == 42_949_672_960
    assert 2 * 32 * 8 * 128 * 4096 * 32 * 2 == 17_179_869_184


def test_32b_model_at_16k_and_what_16_gb_holds():
    m = resolve_model("qwen2.5-32b")  # L=64, 8 KV heads, head_dim 128
    r = kv_size(m, seq=16384)
    assert r.kv_bytes_per_request == 2 * 64 * 8 * 128 * 16384 * 2 == 4_294_967_296
    # 16 GB left after weights on an 80 GB card, before any reserve: 16e9 / 4.295e9 = 3.7 requests.
    f = fit(m, resolve_gpu("h100"), FitInputs(seq=16384, engine="plain", gpu_memory=80 * 10**9, weights=64 * 10**9))
    assert f.kv_pool_bytes == 16 * 10**9
    assert f.max_concurrency == 3
    assert abs(f.concurrency - 16e9 / 4_294_967_296) < 1e-12


def test_opt_13b_from_the_vllm_paper():
    r = kv_size(dense(40, 40, 40, 128, hidden=5120), seq=2048)
    assert r.kv_bytes_per_token == 2 * 40 * 5120 * 2 == 819_200
    assert r.kv_bytes_per_request == 819_200 * 2048 == 1_677_721_600  # 1.68 GB


def test_deepseek_v3_mla_latent():
    r = kv_size(resolve_model("deepseek-v3"), seq=1)
    assert r.kv_bytes_per_token == 61 * (512 + 64) * 2 == 70_272
