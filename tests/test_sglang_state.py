"""SGLang's pool of recurrent states for Gated DeltaNet models (Engine.state_pool, memory.state_pool), by hand
and against two SGLang starts of Qwen3.5 models (tests/logs/sglang_state, tests/logs/README.md)."""

import re
from fractions import Fraction
from pathlib import Path

from conftest import make_model
from kvcalc.engine.engines import engine as find
from kvcalc.engine.kv import KVFootprint
from kvcalc.engine.memory import FitInputs, fit, state_pool
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import BF16

LOGS = Path(__file__).parent / "logs" / "sglang_state"
GiB = 2**30


def gdn_model(layers: int, every: int, key_heads: int, value_heads: int, kv_heads: int, head_dim: int):
    """A Qwen3.5-shaped stack: a full-attention layer every ``every``, Gated DeltaNet layers between, key and value
    dims 128, conv kernel 4, the recurrent state in fp32 and the conv state in bf16 (as the configs say)."""
    conv = 3 * (2 * key_heads * 128 + value_heads * 128)
    rec = value_heads * 128 * 128
    kinds = {
        "attn": {"kind": "full", "num_attention_heads": 16, "num_key_value_heads": kv_heads, "head_dim": head_dim},
        "linear": {
            "kind": "state",
            "state_bytes": conv * 2 + rec * 4,
            "mixer": "gdn",
            "recurrent_elements": rec,
            "recurrent_itemsize": 4,
        },
    }
    return make_model(kinds, [{"repeat": layers // every, "pattern": ["linear"] * (every - 1) + ["attn"]}])


def figures(text: str) -> dict[str, float]:
    """The lines the test reads, from rank 0's first printing of each."""
    out: dict[str, float] = {}
    pats = {
        "before": r"Load weight begin\. avail mem=([0-9.]+) GB",
        "after": r"Load weight end\..*?avail mem=([0-9.]+) GB",
        "slots": r"max_mamba_cache_size: (\d+)",
        "conv": r"conv_state size: ([0-9.]+)GB",
        "ssm": r"ssm_state size: ([0-9.]+)GB",
        "tokens": r"KV Cache is allocated\. #tokens: (\d+)",
        "k": r"K size: ([0-9.]+) GB",
        "running": r"max_running_requests=(\d+)",
        "util": r"--mem-fraction-static ([0-9.]+)",
    }
    for key, p in pats.items():
        m = re.search(p, text)
        if m:
            out[key] = float(m.group(1))
    return out


def test_sglang_keeps_the_recurrent_state_in_fp32():
    # Qwen3-Next's spec keeps its state in bf16 (vLLM keeps the model's dtype); SGLang keeps the recurrent part in
    # fp32 (mamba_ssm_dtype float32), the conv part in bf16. A Gated DeltaNet layer: conv (4 - 1) x (2 x 16 x 128 +
    # 32 x 128) elements, recurrent 32 x 128 x 128.
    q = resolve_model("qwen3-next-80b-a3b")
    k = q.layer_kinds["linear"]
    conv, rec = 3 * (2 * 16 * 128 + 32 * 128), 32 * 128 * 128
    assert (k.state_bytes, k.recurrent_elements, k.recurrent_itemsize) == (conv * 2 + rec * 2, rec, 2)
    assert k.state_bytes_per_request(4, 4) == (conv * 2 + rec * 4) // 4 == 536_576
    sgl = KVFootprint(q, BF16, 4, 1, find("sglang").allocation(model=q))
    vllm = KVFootprint(q, BF16, 4, 1, find("vllm").allocation(model=q))
    assert sgl.state_bytes == 36 * 536_576 == 19_316_736
    assert vllm.state_bytes == 36 * (conv * 2 + rec * 2) // 4
    # Qwen3.5's config keeps it in fp32 already: the same either way.
    q35 = resolve_model("qwen3.5-27b")
    assert q35.layer_kinds["linear"].recurrent_itemsize == 4
    a = KVFootprint(q35, BF16, 2, 1, find("sglang").allocation(model=q35)).state_bytes
    assert a == KVFootprint(q35, BF16, 2, 1, find("vllm").allocation(model=q35)).state_bytes


def test_the_state_pool_takes_nine_nineteenths_of_what_the_weights_leave():
    q, h100 = resolve_model("qwen3-next-80b-a3b"), resolve_gpu("h100")
    per, tok = 19_316_736, 12 * 1 * 256 * 2 * 2  # 12 attention layers, 2 KV heads replicated at TP 4: one a rank
    f = fit(q, h100, FitInputs(seq=8192, tp=4, engine=find("sglang")))
    rest = f.kv_pool_bytes
    # 0.5.20 on (read in 0.5.23): a padding slot, counted: (budget - a slot) // a slot slots, their bytes one more.
    slots = int((Fraction(rest) * 9 / 19 - per) // per)
    tokens = (rest - (slots + 1) * per) // tok
    assert (f.state_slots, f.state_pool_bytes, f.kv_pool_tokens) == (slots, (slots + 1) * per, tokens)
    # Under the radix cache a running request holds three slots (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO).
    assert f.state_requests == slots // 3
    assert f.max_concurrency == min(tokens // 8192, slots // 3)
    assert f.request_bytes == per + 8192 * tok
    text = " ".join(f.assumptions)
    assert f"0.9 : 1 of the pool to them (mamba_full_memory_ratio), {slots:,} slots of 19,316,736 B" in text
    assert f"at most {slots // 3:,} running requests (a third of the slots under the radix cache)" in text
    # 0.5.16 and before count no padding slot.
    g = fit(q, h100, FitInputs(seq=8192, tp=4, engine=find("sglang==0.5.9")))
    s9 = int(Fraction(g.kv_pool_bytes) * 9 / 19 // per)
    assert (g.state_slots, g.state_pool_bytes, g.kv_pool_tokens) == (s9, s9 * per, (g.kv_pool_bytes - s9 * per) // tok)
    # The radix cache off with --max-running-requests: that many slots, each a running request (0.5.9 on).
    h = fit(q, h100, FitInputs(seq=8192, tp=4, engine=find("sglang==0.5.14"), prefix_caching=False, max_num_seqs=100))
    assert (h.state_slots, h.state_requests, h.state_pool_bytes) == (100, 100, 100 * per)
    # 0.5.2: 512 fixed slots (the radix cache off for hybrid GDN models), or --max-running-requests.
    e = fit(q, h100, FitInputs(seq=8192, tp=4, engine=find("sglang==0.5.2")))
    assert (e.state_slots, e.state_requests, e.state_pool_bytes) == (512, 512, 512 * per)
    assert fit(q, h100, FitInputs(seq=8192, tp=4, engine=find("sglang==0.5.2"), max_num_seqs=64)).state_slots == 64
    # vLLM keeps the states among the tokens, as before.
    assert fit(q, h100, FitInputs(seq=8192, tp=4, engine=find("vllm"))).state_slots is None


def test_each_release_sizes_the_pool_as_its_wheel_does_with_the_radix_cache_off():
    """0.5.3 turns the radix cache off for a Gated DeltaNet model and keeps max_running_requests or 512 slots
    (model_executor/model_runner.py, "Hybrid GDN model detected, disable radix cache"); 0.5.4 to 0.5.8 keep the ratio
    under the radix cache and, with it off, max_running_requests or 512 (handle_max_mamba_cache); 0.5.9 on keep the
    ratio with it off unless --max-running-requests is given."""
    q, h100 = resolve_model("qwen3-next-80b-a3b"), resolve_gpu("h100")
    per = 19_316_736  # a slot on a rank at TP 4, as in the test above

    def pool(release: str, radix: bool = True, running: int | None = None) -> tuple[int | None, int | None]:
        f = fit(q, h100, FitInputs(seq=8192, tp=4, engine=find(f"sglang=={release}"), prefix_caching=radix, max_num_seqs=running))
        return f.state_slots, f.state_requests

    # 0.5.3 (and its .post releases): 512 slots whatever the radix flag, each a running request; or the cap given.
    assert pool("0.5.3") == pool("0.5.3.post3") == pool("0.5.3", radix=False) == (512, 512)
    assert pool("0.5.3", running=64) == (64, 64)
    # 0.5.4 to 0.5.8 under the radix cache: the ratio, nine nineteenths of what the weights leave, a third of it running.
    f = fit(q, h100, FitInputs(seq=8192, tp=4, engine=find("sglang==0.5.4")))
    ratio = int(Fraction(f.kv_pool_bytes) * 9 / 19 // per)
    for release in ("0.5.4", "0.5.5", "0.5.6", "0.5.7", "0.5.8"):
        assert pool(release) == (ratio, ratio // 3), release
        # With the radix cache off: 512 slots, or --max-running-requests, every slot a running request.
        assert pool(release, radix=False) == (512, 512), release
        assert pool(release, radix=False, running=100) == (100, 100), release
    # 0.5.9: the ratio with the radix cache off too, every slot a running request, unless the cap is given.
    assert pool("0.5.9", radix=False) == (ratio, ratio)
    assert pool("0.5.9", radix=False, running=100) == (100, 100)
    # The fit's words say which rule it took.
    g = fit(q, h100, FitInputs(seq=8192, tp=4, engine=find("sglang==0.5.7"), prefix_caching=False))
    assert f"512 fixed slots (the radix cache off) of {per:,} B" in " ".join(g.assumptions)


def test_dp_attention_ranks_share_the_fixed_slots_and_in_0_5_4_to_0_5_6_the_ratios():
    """Under DP attention each rank keeps (--max-running-requests or 512) // dp_size slots in every release (0.5.2 and
    0.5.3 model_runner.py; handle_max_mamba_cache in 0.5.4 to 0.5.14); 0.5.4 to 0.5.6 divide the ratio's slots too for
    a Gated DeltaNet model ("if self.hybrid_gdn_config is not None", after either branch), 0.5.7 on do not."""
    q, h100 = resolve_model("qwen3-next-80b-a3b"), resolve_gpu("h100")

    def pool(release: str, dp: int, radix: bool = True, running: int | None = None):
        inp = FitInputs(seq=8192, tp=2, dp=dp, engine=find(f"sglang=={release}"), prefix_caching=radix, max_num_seqs=running)
        return fit(q, h100, inp)

    assert pool("0.5.3", 2).state_slots == 512 // 2 == 256 and pool("0.5.3", 2).state_requests == 256
    assert pool("0.5.3", 4, running=100).state_slots == 100 // 4 == 25
    assert pool("0.5.7", 2, radix=False).state_slots == 256 and pool("0.5.9", 2, radix=False, running=100).state_slots == 50
    # The ratio: a rank's own memory, nine nineteenths of what its weights leave, whole in 0.5.7 on, halved in 0.5.6.
    per = pool("0.5.7", 2).state_pool_bytes // pool("0.5.7", 2).state_slots
    ratio = int(Fraction(pool("0.5.7", 2).kv_pool_bytes) * 9 / 19 // per)
    assert pool("0.5.7", 2).state_slots == pool("0.5.9", 2).state_slots == ratio
    assert pool("0.5.6", 2).state_slots == pool("0.5.4", 2).state_slots == ratio // 2
    assert pool("0.5.6", 2).state_requests == ratio // 2 // 3
    text = " ".join(pool("0.5.3", 2).assumptions)
    assert "256 fixed slots (the radix cache off; 512 over 2 DP-attention ranks)" in text
    assert "(the ratio's over 2 DP-attention ranks)" in " ".join(pool("0.5.6", 2).assumptions)
    doc = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    assert "Qwen3-Next at TP 2 x DP 2 on H100s under 0.5.3 keeps 256 slots a rank" in doc


def test_the_rule_against_sglang_0_5_9_serving_qwen3_5_397b():
    """kvcache-ai/ktransformers#1870: SGLang 0.5.9, 2 RTX 4090s at TP 2, no padding slot counted."""
    text = (LOGS / "ktransformers-1870-2x4090-qwen3.5-397b-fp8-sglang059.log").read_text()
    got = figures(text)
    # Qwen3.5-397B-A17B: 60 layers, every fourth of full attention (2 KV heads of 256), Gated DeltaNet of 16 key and
    # 64 value heads between; at TP 2 a rank holds 32 value heads and one KV head. The log's sizes confirm it: the
    # pool allocates its slots and one more (memory_pool.py), 83 x 45 x 32 x 128 x 128 x 4 B = 7.29 GiB.
    m = gdn_model(60, 4, 16, 64, 2, 256)
    fp = KVFootprint(m, BF16, 2, 1, find("sglang==0.5.9").allocation(model=m))
    per, tok = fp.state_bytes, fp.per_token
    assert per == 45 * (3 * (2 * 16 * 128 + 64 * 128) // 2 * 2 + 32 * 128 * 128 * 4) == 96_030_720
    assert tok == 15 * 1 * 256 * 2 * 2
    assert f"{83 * 45 * 32 * 128 * 128 * 4 / GiB:.2f}" == f"{got['ssm']:.2f}" == "7.29"
    assert f"{83 * 45 * 3 * (2 * 16 * 128 + 64 * 128) // 2 * 2 / GiB:.2f}" == f"{got['conv']:.2f}"
    assert f"{got['tokens'] * tok / 2 / GiB:.2f}" == f"{got['k']:.2f}" == "4.15"
    # What the weights left (the log prints no 'Load weight begin'): the states' and the tokens' shares as it
    # split them. 0.9 : 1 of that gives its 82 slots.
    rest = int(got["slots"]) * per + int(got["tokens"]) * tok
    sp = state_pool(fp, rest)
    assert sp is not None and sp.slots == int(got["slots"]) == 82
    assert (rest - sp.bytes) // tok == int(got["tokens"])


def test_the_rule_against_a_sglang_start_of_qwen3_5_9b():
    """A SGLang main build of April 2026 (0.0.0.dev11582), 2 RTX 4090s at TP 2: a padding slot counted, as 0.5.17
    on do. Its own lines give what the weights leave: the memory after loading less (1 - mem_fraction_static) of
    the memory before."""
    got = figures((LOGS / "qwen3.5-9b-2x4090-sglang-dev11582.log").read_text())
    # Qwen3.5-9B: 32 layers, every fourth of full attention (4 KV heads of 256), Gated DeltaNet of 16 key and 32
    # value heads (the note's config.json values; the log's sizes below confirm them).
    m = gdn_model(32, 4, 16, 32, 4, 256)
    fp = KVFootprint(m, BF16, 2, 1, find("sglang==0.5.23").allocation(model=m))
    per, tok = fp.state_bytes, fp.per_token
    assert per == 24 * (3 * (2 * 16 * 128 + 32 * 128) // 2 * 2 + 16 * 128 * 128 * 4) == 25_755_648
    assert tok == 8 * 2 * 256 * 2 * 2 == 16_384
    assert f"{187 * 24 * 16 * 128 * 128 * 4 / GiB:.2f}" == f"{got['ssm']:.2f}" == "4.38"
    rest = int((got["after"] - got["before"] * (1 - got["util"])) * GiB)
    sp = state_pool(fp, rest)
    assert sp is not None and (sp.slots, sp.requests) == (int(got["slots"]), int(got["running"])) == (186, 62)
    tokens = (rest - sp.bytes) // tok
    # The log's figures are rounded to 0.01 GB: within 0.5% of its token count.
    assert abs(tokens / got["tokens"] - 1) < 0.005


def test_the_engines_doc_gives_the_rule_as_fit_applies_it():
    text = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    q, h100 = resolve_model("qwen3-next-80b-a3b"), resolve_gpu("h100")
    f = fit(q, h100, FitInputs(seq=8192, tp=4, engine=find("sglang")))
    whole = f.kv_pool_bytes // (12 * 256 * 2 * 2)  # the pool over a token's bytes: 12 attention layers, a KV head a rank
    assert (f.state_slots, f.state_requests, f.kv_pool_tokens, whole) == (673, 224, 1_177_974, 2_237_502)
    assert (
        "4 H100s at 8,192 tokens: 673 slots, 224 running requests and 1,177,974 tokens, where the whole pool would hold 2,237,502 tokens"
        in text
    )
    assert 3 * 8192 * 2 + 32 * 128 * 128 * 4 == 2_146_304 and 3 * 8192 * 2 + 32 * 128 * 128 * 2 == 1_097_728
    assert "2,146,304 B, not 1,097,728" in text


def test_simulate_runs_no_more_requests_than_the_state_slots_allow(cli):
    base = ("simulate", "--model", "qwen3-next-80b-a3b", "--gpu", "h100", "--tp", "4", "--requests", "300")
    r = cli(*base, "--engine", "sglang", "--prompt", "1000", "--output", "200", "--rate", "inf", "--json")
    assert r.code == 0, r.err
    text = " ".join(r.json()["assumptions"])
    # fit's 224 running requests (the test above) cap the replay's batch, and its pool is the tokens' share plus
    # those requests' states in logical bytes.
    assert "continuous batching: up to 224 requests" in text and "beside its 673 recurrent-state slots" in text
    f = fit(resolve_model("qwen3-next-80b-a3b"), resolve_gpu("h100"), FitInputs(seq=1200, tp=4, engine=find("sglang")))
    logical = KVFootprint(resolve_model("qwen3-next-80b-a3b"), BF16, 4).state_bytes
    pool = f.kv_pool_bytes - f.state_pool_bytes + f.state_requests * logical
    assert logical == 36 * 1_097_728 // 4 and f"KV pool {pool / GiB:,.2f} GiB per GPU" in text


def test_roofline_counts_the_requests_that_fit_as_fit_does(cli):
    args = ("roofline", "--model", "qwen3-next-80b-a3b", "--gpu", "h100", "--tp", "4", "--engine", "sglang")
    r = cli(*args, "--batch", "256", "--seq", "8192")
    assert r.code == 0, r.err
    f = fit(resolve_model("qwen3-next-80b-a3b"), resolve_gpu("h100"), FitInputs(seq=8192, tp=4, engine=find("sglang")))
    # 1,177,974 tokens // 8,192 = 143, under the slots' 224 running requests (the tests above).
    assert f.max_concurrency == 1_177_974 // 8192 == 143
    j = cli(*args, "--batch", "256", "--seq", "8192", "--json").json()
    assert "(at most 143 requests of this length)" in " ".join(r.out.split())
    assert (j["rows"][0]["max_batch_in_memory"], j["rows"][0]["fits_in_memory"]) == (143, False)


def test_fit_text_holds_the_state_pools_json_figures_at_80_columns(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    args = ("fit", "--model", "qwen3-next-80b-a3b", "--gpu", "h100", "--tp", "4", "--engine", "sglang", "--seq", "8192")
    text, j = cli(*args).out, cli(*args, "--json").json()
    assert all(len(ln) <= 80 for ln in text.splitlines())
    flat = " ".join(text.split())
    # 673 slots of 19,316,736 B and the padding slot: 674 x 19,316,736 B.
    assert (j["state_slots"], j["state_requests"], j["state_pool_bytes"]) == (673, 224, 674 * 19_316_736)
    assert f"{j['state_slots']:,} slots of 19,316,736 B" in flat and f"{j['state_pool_bytes']:,} B (12.13 GiB)" in flat
    assert f"at most {j['state_requests']:,} running requests" in flat and f"{j['kv_pool_tokens']:,} tokens" in flat
