"""explain-log: reading vLLM and SGLang start-up logs and recomputing their figures."""

import io
from pathlib import Path

import pytest

from kvcalc.errors import KvcalcError
from kvcalc.inputs.logs import parse_log

LOGS = Path(__file__).parent / "logs"
GiB = 2**30


def test_parse_vllm_v0():
    f = parse_log((LOGS / "vllm-0.6.3-llama2-7b.log").read_text())
    assert (f.engine, f.version, f.model) == ("vllm", "0.6.3", "meta-llama/Llama-2-7b-hf")
    assert (f.max_model_len, f.tp, f.dtype, f.kv_cache_dtype) == (4096, 1, "float16", "auto")
    assert (f.weights_gib, f.gpu_blocks, f.concurrency, f.concurrency_len) == (12.5523, 7449, 29.10, 4096)


def test_parse_vllm_v1_with_memory_profile():
    f = parse_log((LOGS / "vllm-0.8-llama3.1-8b.log").read_text())
    assert (f.total_gib, f.util, f.weights_gib, f.non_torch_gib, f.activation_gib, f.available_kv_gib) == (
        79.19,
        0.90,
        14.9889,
        0.13,
        1.23,
        54.92,
    )
    assert (f.kv_tokens, f.concurrency, f.concurrency_len, f.cudagraph_gib) == (449_904, 13.73, 32_768, 0.53)


def test_parse_current_vllm():
    f = parse_log((LOGS / "vllm-0.11-qwen3-32b-tp2.log").read_text())
    assert (f.model, f.max_model_len, f.tp, f.util, f.available_kv_gib, f.kv_tokens) == (
        "Qwen/Qwen3-32B",
        16384,
        2,
        0.92,
        40.29,
        330_048,
    )


def test_parse_sglang():
    f = parse_log((LOGS / "sglang-llama3.1-8b.log").read_text())
    assert f.engine == "sglang"
    assert (f.max_total_num_tokens, f.weights_gib, f.avail_after_load_gib, f.util, f.max_model_len) == (
        438_913,
        15.09,
        63.49,
        0.88,
        131072,
    )
    assert (f.k_size_gib, f.v_size_gib) == (26.79, 26.79)


def test_nothing_recognisable():
    with pytest.raises(KvcalcError, match="nothing recognisable"):
        parse_log("hello\nworld\n")


def test_recomputed_from_the_logs_inputs_agrees(cli):
    d = cli("explain-log", LOGS / "vllm-0.8-llama3.1-8b.log", "--json").json()
    # KV pool = 0.9 x 79.19 GiB - 14.9889 - 1.23 - 0.13 GiB, which the log rounds to 54.92 GiB.
    pool = d["kvcalc_from_log_inputs"]["kv_pool_bytes"]
    assert abs(pool - (0.9 * 79.19 - 14.9889 - 1.23 - 0.13) * GiB) < 2
    assert abs(pool / GiB - 54.92) < 0.005
    # Tokens from the log's own 54.92 GiB: whole 16-token blocks of 32 x 2 x 8 x 128 x 2 B per token.
    assert d["tokens_from_log_memory"] == int(54.92 * GiB) // (16 * 131072) * 16 == 449_904
    assert d["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2


def test_sglang_per_token_bytes_match(cli):
    d = cli("explain-log", LOGS / "sglang-llama3.1-8b.log", "--json").json()
    row = [r for r in d["rows"] if r["key"] == "kv_bytes_per_token"][0]
    # (26.79 + 26.79) GiB / 438,913 tokens ~ 131,076 B against 2 x 32 x 8 x 128 x 2 = 131,072 B.
    assert row["log"] == pytest.approx((26.79 + 26.79) * GiB / 438_913)
    assert row["from_log_inputs"] == row["estimate"] == 2 * 32 * 8 * 128 * 2
    assert any(n["key"] == "sglang_gb_is_gib" for n in d["notes"])
    assert "divides by 2^30" in cli("explain-log", LOGS / "sglang-llama3.1-8b.log").out


def test_table_and_concurrency_in_words(cli):
    r = cli("explain-log", LOGS / "vllm-0.6.3-llama2-7b.log")
    assert r.code == 0
    text = " ".join(r.out.split())
    assert "29 could be in flight" in text and "GiB" in text


def test_stdin(cli, monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO((LOGS / "vllm-0.11-qwen3-32b-tp2.log").read_bytes()))
    monkeypatch.setattr("sys.stdin", stdin)
    r = cli("explain-log", "-", "--json")
    assert r.code == 0 and r.json()["model"] == "qwen3-32b"


def test_model_override_and_errors(cli, tmp_path):
    p = tmp_path / "x.log"
    p.write_text("INFO GPU KV cache size: 1,000 tokens\nmodel='/data/ckpt/my-private-model'\n")
    r = cli("explain-log", p)
    assert r.code == 2 and "--model" in r.err and len(r.err.strip().splitlines()) == 1
    assert cli("explain-log", p, "--model", "llama3.1-8b").code == 0
    empty = tmp_path / "empty.log"
    empty.write_text("nothing here\n")
    r = cli("explain-log", empty)
    assert r.code == 2 and "nothing recognisable" in r.err
    assert cli("explain-log", tmp_path / "missing.log").code == 2
