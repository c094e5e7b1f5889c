"""KV tiers: capacity, reload against recompute, and the prefill-to-decode transfer."""

from pathlib import Path

import pytest

from kvcalc.engine.alloc import LOGICAL
from kvcalc.engine.engines import engine
from kvcalc.engine.kv import KVFootprint, request_bytes
from kvcalc.engine.memory import FitInputs, fit
from kvcalc.engine.roofline import prefill_bound
from kvcalc.engine.tiers import Tier, break_even, default_tiers, disaggregation, shipped_bytes, tier_rows, tiers
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import BF16

H100 = resolve_gpu("h100")


def test_tier_rows():
    m = resolve_model("llama3.1-8b")
    tl = [Tier("HBM", 50 * 10**9, None, ""), Tier("DRAM", 240 * 10**9, 64e9, "")]
    rows = tier_rows(m, H100, 8192, tl, BF16)
    req = 2 * 32 * 8 * 128 * 8192 * 2
    assert rows[0].requests == 50 * 10**9 // req and rows[0].reload_s is None
    assert rows[1].tokens == 240 * 10**9 // (2 * 32 * 8 * 128 * 2)
    assert rows[1].reload_s == req / 64e9
    # Recompute: the prefill's FLOPs over the dense bf16 peak, 989.5 TFLOP/s. Matmuls: 2 x (8,030,261,248
    # parameters less the 128,256 x 4,096 input embedding) per token; attention: 32 layers x 2 x 32 heads x
    # (128 + 128) per causal (query, key) pair, 8192 x 8193 / 2 pairs.
    flops = 2 * (8_030_261_248 - 128_256 * 4096) * 8192 + 32 * 2 * 32 * 256 * (8192 * 8193 // 2)
    assert rows[1].recompute_s == pytest.approx(flops / 989.5e12, rel=1e-12)


def test_defaults_follow_the_gpu_spec():
    t = {x.name: x for x in default_tiers(H100, 10**10)}
    assert t["DRAM"].bandwidth_bytes_per_s == 128e9 / 2  # PCIe 5 x16: 128 GB/s both ways
    assert t["DRAM"].capacity_bytes == 3 * 80 * 10**9
    gb = {x.name: x for x in default_tiers(resolve_gpu("gb200"), 10**10)}
    assert gb["DRAM"].bandwidth_bytes_per_s == 900e9 / 2  # NVLink-C2C


def test_break_even_is_the_boundary():
    m = resolve_model("deepseek-v3")
    g = resolve_gpu("h200")
    s = break_even(m, g, 7e9, KVFootprint(m, BF16, 8, 1, LOGICAL), 8, m.max_position_embeddings)
    assert s is not None and s > 1

    def reload(n):
        return request_bytes(m, n, "bf16", 8) / 7e9

    def recompute(n):
        return prefill_bound(m, g, n, 8).t_compute_s

    assert reload(s) < recompute(s) and reload(s - 1) >= recompute(s - 1)


def test_slow_tier_never_wins():
    m = resolve_model("llama3.1-8b")
    assert break_even(m, H100, 2e9, KVFootprint(m, BF16), 1, m.max_position_embeddings) is None


def test_disaggregation():
    m = resolve_model("llama3.1-70b")
    d = disaggregation(m, H100, 32768, 50e9, BF16, tp=4, rate=2.0)
    shipped = 2 * 80 * 8 * 128 * 32768 * 2
    assert d.bytes_per_request == shipped == 10_737_418_240
    # Each of the 4 GPUs sends its share (2 of the 8 KV heads) over its own 50 GB/s link at once: 2,684,354,560 B in
    # 53.687 ms, as the remote tier's per-GPU reload of the same shard at the same rate.
    assert d.senders == 4 and shipped // 4 == 2_684_354_560
    assert d.transfer_s == pytest.approx(2_684_354_560 / 50e9) and round(d.transfer_s * 1e3, 3) == 53.687
    assert d.max_requests_per_s == pytest.approx(4 * 50e9 / shipped) and round(d.max_requests_per_s, 2) == 18.63
    assert d.link_utilization == pytest.approx(2 * shipped / (4 * 50e9)) and d.keeps_up
    rows = {r.tier: r for r in tier_rows(m, H100, 32768, default_tiers(H100, 10**10), BF16, 4)}
    assert rows["remote (RDMA)"].reload_s == pytest.approx(d.transfer_s)
    # One GPU: the whole KV over its one link (10.74 GB / 50 GB/s = 214.748 ms), at most 4.66 requests/s.
    one = disaggregation(m, H100, 32768, 50e9, BF16, tp=1, rate=5.0)
    assert one.senders == 1 and round(one.transfer_s * 1e3, 3) == 214.748 and not one.keeps_up
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "paging.md").read_text().split())
    assert (
        "Llama-3.1-70B at TP 4, a 32,768-token prompt: 10,737,418,240 B, a quarter of it (2 of the 8 KV heads) over each "
        "GPU's 50 GB/s, 53.687 ms, as the remote tier's reload of the same shard; at most 4 x 50 GB/s / 10.74 GB = 18.63 "
        "requests a second. Until 2026-12-07 the whole KV crossed one link at any TP (214.748 ms, 4.66 a second)" in doc
    )
    assert round(50e9 / shipped, 2) == 4.66  # (the one-link figure the doc quotes as the one before)


# DeepSeek-V3 (config.json: 61 layers, 128 heads, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128,
# kv_lora_rank 512) at TP 8, bf16 KV. vLLM 0.8 caches the latent, 512 + 64 elements, whole on every GPU; vLLM 0.7.0 caches
# each GPU's 16 heads as K and V of 128 + 64 = 192 elements each, V padded to the query-key size (engines vllm@0.7.0).
DSV3_LATENT_TOKEN = 61 * (512 + 64) * 2  # 70,272 B a token, every GPU
DSV3_070_TOKEN = 61 * (128 // 8) * (192 + 192) * 2  # 749,568 B a token, each GPU


def test_tiers_hold_and_ship_the_kv_in_the_form_the_release_caches():
    m, g = resolve_model("deepseek-v3"), resolve_gpu("h200")
    assert (DSV3_LATENT_TOKEN, DSV3_070_TOKEN) == (70_272, 749_568)
    for key, per_gpu in (("vllm@0.7.0", DSV3_070_TOKEN), ("vllm@0.8", DSV3_LATENT_TOKEN)):
        e = engine(key)
        pool = fit(m, g, FitInputs(seq=8192, engine=e, tp=8)).kv_pool_bytes
        r = tiers(m, g, 8192, default_tiers(g, pool), BF16, 8, 50e9, engine=e)
        hbm, dram = r.tiers[0], r.tiers[1]
        assert hbm.requests == pool // (per_gpu * 8192) and hbm.tokens == pool // per_gpu
        assert dram.reload_s == pytest.approx(per_gpu * 8192 / 64e9, rel=1e-12)  # PCIe 5 x16, one direction
        # What the pool holds is what fit says fits (its own count of the same pool, the same form).
        assert hbm.requests == fit(m, g, FitInputs(seq=8192, engine=e, tp=8)).max_concurrency
        # The transfer: each head once over the 8 GPUs (TP 1 bytes): the per-head form 8 x a GPU's share, the latent once.
        shipped = per_gpu * 8 * 8192 if per_gpu == DSV3_070_TOKEN else per_gpu * 8192
        assert r.disaggregation.bytes_per_request == shipped == shipped_bytes(m, BF16, 8192, e)
    assert engine("vllm@0.7.0").kv_form_alloc(m) != LOGICAL and engine("vllm@0.8").kv_form_alloc(m) == LOGICAL
    assert (DSV3_070_TOKEN * 8192, DSV3_070_TOKEN * 8 * 8192, DSV3_LATENT_TOKEN * 8192) == (
        6_140_461_056,
        49_123_688_448,
        575_668_224,
    )
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "paging.md").read_text().split())
    assert (
        "749,568 B a token a GPU, 6,140,461,056 B a request, which the 45.32 GB HBM pool holds 7 times, as `kvcalc fit` "
        "says, and DRAM returns in 95.945 ms at 64 GB/s; a prompt ships 8 x 6,140,461,056 = 49,123,688,448 B" in doc
    )
    pool = fit(m, g, FitInputs(seq=8192, engine=engine("vllm@0.7.0"), tp=8)).kv_pool_bytes
    assert round(pool / 1e9, 2) == 45.32 and pool // 6_140_461_056 == 7 and pool // (70_272 * 8192) == 78
    assert round(6_140_461_056 / 64e9 * 1e3, 3) == 95.945


def test_plan_ships_the_kv_in_the_form_the_release_caches(cli):
    # plan's P/D pair of TP 8 instances of DeepSeek-V3 under vLLM 0.7.0 on 16 H200s: two HGX boards, so the prompt's KV
    # crosses the network, 8 senders at 0.7 of each GPU's 50 GB/s NIC, after NCCL's 17 us (steptime.NET_P2P_*). A
    # 1,000-token prompt ships 749,568 x 8 x 1,000 B per head (it was the latent's 70,272 x 1,000).
    d = cli(
        "plan",
        "-m",
        "deepseek-v3",
        "--gpus",
        "h200",
        "--engine",
        "vllm@0.7.0",
        "--rate",
        "1",
        "--prompt",
        "1000",
        "--output",
        "200",
        "--ttft",
        "2s",
        "--tpot",
        "100ms",
        "--max-gpus",
        "16",
        "--json",
    ).json()
    pd = [r for r in d["ranked"] if r["prefill_instances"]]
    assert pd and pd[0]["gpus"] == 16
    assert pd[0]["kv_transfer_s"] == pytest.approx(DSV3_070_TOKEN * 8 * 1000 / (8 * 50e9 * 0.7) + 17e-6, rel=1e-9)


def test_cli_tiers(cli):
    # 4 links of 50 GB/s carry at most 4 x 50e9 / 10,737,418,240 B = 18.63 requests of 32k tokens a second.
    d = cli("tiers", "-m", "llama3.1-70b", "-g", "h100", "--tp", "4", "--seq", "32k", "--rate", "19", "--json").json()
    assert [t["tier"] for t in d["tiers"]] == ["HBM", "DRAM", "SSD", "remote (RDMA)"]
    assert d["disaggregation"]["keeps_up"] is False and d["disaggregation"]["senders"] == 4
    r = cli("tiers", "-m", "llama3.1-70b", "-g", "h100", "--tp", "4", "--seq", "32k", "--rate", "18")
    assert r.code == 0 and "keeps up" in r.out and "over 4 x 50.0 GB/s" in r.out and "at most 18.63 requests/s" in r.out


@pytest.mark.parametrize(
    "model,gpu,tp,eng",
    [("llama3.1-70b", "h100", "4", "vllm"), ("llama3.1-70b", "h100", "4", "sglang"), ("deepseek-v3", "h200", "8", "vllm@0.7.0")],
)
def test_tiers_counts_the_transfer_in_the_same_steps_roofline_prints(cli, model, gpu, tp, eng):
    # The decode step the transfer is set against: roofline's bound and its step model's step for the same model, GPU,
    # TP, batch and length under the same engine (one step model: kvcalc.engine.steptime), a release that caches MLA
    # per head included (both read those bytes).
    ask = ("-m", model, "-g", gpu, "--tp", tp, "--engine", eng)
    d = cli("tiers", *ask, "--seq", "32k", "--json").json()["disaggregation"]
    row = cli("roofline", *ask, "--batch", "1", "--seq", "32k", "--json").json()["rows"][0]
    assert d["decode_step_s"] == row["t_bound_s"] and d["decode_step_model_s"] == row["t_step_s"]
    assert d["decode_step_model_s"] > d["decode_step_s"]
    assert d["transfer_over_model_step"] == pytest.approx(d["transfer_s"] / row["t_step_s"])
    out = " ".join(cli("tiers", *ask, "--seq", "32k").out.split())
    assert f"{d['transfer_over_model_step']:,.1f} of kvcalc's step model's {row['t_step_s'] * 1e3:,.3f} ms" in out


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--rate", "-1"], "--rate"),
        (["--rate", "fast"], "--rate"),
        (["--link", "0GB/s"], "--link"),
        (["--ssd-bw", "warp"], "--ssd-bw"),
        (["--dram", "lots"], "--dram"),
    ],
)
def test_cli_tiers_bad_input(cli, args, needle):
    r = cli("tiers", "-m", "llama3.1-8b", "-g", "h100", *args)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and needle in r.err, r.err
