"""Data-parallel attention, expert parallelism, nodes and disaggregation (issue 18), against
arithmetic written out here."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from kvcalc.engine.deployment import Shape, candidate_shapes, check_shape, engine_flags, place
from kvcalc.engine.engines import engine
from kvcalc.engine.memory import FitInputs, fit
from kvcalc.engine.plan import SLO, Traffic, max_throughput, plan
from kvcalc.engine.steptime import StepModel, tp_link
from kvcalc.errors import KvcalcError
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import BF16, kv_dtype

GiB = 2**30


def fp8_block(n: int) -> int:
    """An fp8-block role: a byte a parameter and an fp32 scale per 128 x 128 block."""
    return n + -(-n // (128 * 128)) * 4


# DeepSeek-V3's parameter roles (model_specs/deepseek-v3.yaml, from its config.json).
DSV3 = dict(
    embed=926_679_040,
    lm_head=926_679_040,
    attn=10_489_954_304,
    mlp=1_189_085_184,
    shared_experts=2_554_331_136,
    router=106_445_312,
    norms=1_006_592,
    replicated=923_467_776,
)
DSV3_EXPERTS = 58 * 256 * 44_040_192  # 58 MoE layers x 256 routed experts x params each


def test_deepseek_v3_dp16_ep16_on_16_h100s_pool_and_concurrency():
    m, h = resolve_model("deepseek-v3"), resolve_gpu("h100")
    measured = dict(activation=2 * GiB, non_torch=GiB, cudagraph=GiB // 2)
    r = fit(m, h, FitInputs(seq=8192, dp=16, ep=16, kv_dtype=kv_dtype("fp8"), **measured))
    # Weights on one GPU: attention, dense and shared parts whole (TP 1 within each DP rank), in the
    # checkpoint's fp8 blocks; embeddings, LM head, routers and norms in 16 bits; the routed experts by
    # expert over the 16 GPUs (16 of 256 each); vLLM's rotary cache (163,840 positions x 64 x 2 B); and
    # vLLM's 16-bit copy of each layer's fp8 kv_b_proj for the absorbed decode (61 layers x kv_lora_rank
    # 512 x all 128 heads at TP 1 x (128 nope + 128 v) x 2 B).
    dense = sum(fp8_block(DSV3[k]) for k in ("attn", "mlp", "shared_experts", "replicated"))
    wide16 = 2 * (DSV3["embed"] + DSV3["lm_head"] + DSV3["router"] + DSV3["norms"])
    experts = Fraction(fp8_block(DSV3_EXPERTS) * 16, 256)
    weights = math.ceil(dense + wide16 + experts) + 163_840 * 64 * 2 + 61 * 512 * 128 * (128 + 128) * 2
    assert r.weight_bytes == weights
    # The pool: 0.92 of the runtime total (85,030,076,416 B) less weights and the measured reserves.
    pool = -(-85_030_076_416 * 92 // 100) - weights - 2 * GiB - GiB - GiB // 2
    assert r.kv_pool_bytes == pool
    # KV: the 576-value latent (512 + 64) a token a layer, 1 byte in fp8, 61 layers, only this rank's
    # requests: 35,136 B a token; blocks of 16; a request of 8,192 tokens takes 512 blocks, and one
    # block is vLLM's null block.
    per_token = 61 * 576
    assert r.kv_bytes_per_token == per_token == 35_136
    blocks = pool // (16 * per_token)
    assert r.max_concurrency == (blocks - 1) // 512
    assert r.max_concurrency_total == 16 * ((blocks - 1) // 512)
    assert r.gpus == 16 and r.dp == 16 and r.ep == 16


def test_sglang_shards_dense_mlp_lm_head_and_shared_experts_over_the_whole_group():
    # SGLang 0.5.23 with DP attention 8 x TP 1: the dense MLP, the LM head and the shared experts split
    # 8 ways (moe_dense_tp_size unset, no --enable-dp-lm-head, a2a backend 'none'); vLLM keeps them whole
    # on each DP rank at TP 1. The difference is 7/8 of them.
    m, g = resolve_model("deepseek-v3"), resolve_gpu("h200")
    common = dict(seq=8192, dp=8, ep=8, kv_dtype=kv_dtype("fp8"))
    v = fit(m, g, FitInputs(engine=engine("vllm"), **common)).weight_bytes
    s = fit(m, g, FitInputs(engine=engine("sglang"), **common)).weight_bytes
    parts = fp8_block(DSV3["mlp"]) + 2 * DSV3["lm_head"] + fp8_block(DSV3["shared_experts"])
    # And vLLM's 16-bit copy of the fp8 kv_b_proj for its absorbed MLA decode, all 128 heads at TP 1.
    absorbed = 61 * 512 * 128 * (128 + 128) * 2
    assert v - s == pytest.approx(parts * 7 / 8 + absorbed, abs=2)


@pytest.mark.parametrize(
    "model, shape, eng, words",
    [
        ("llama3.1-8b", Shape(tp=2, ep=2), "vllm", "dense model"),
        ("qwen3-30b-a3b", Shape(tp=2, dp=2, ep=2), "vllm", "must equal DP x TP = 4"),
        ("qwen3-30b-a3b", Shape(tp=1, dp=2, ep=2), "trtllm", "no data-parallel attention"),
        ("qwen3-30b-a3b", Shape(tp=1, dp=2, ep=2), "vllm@0.6", "predates"),
        # --enable-expert-parallel is in 0.8.0's engine/arg_utils.py, not 0.7.3's; --data-parallel-size
        # in 0.8.4's, not 0.8.0's.
        ("qwen3-30b-a3b", Shape(tp=2, ep=2), "vllm@0.7.3", "predates --enable-expert-parallel"),
        ("qwen3-30b-a3b", Shape(tp=1, dp=2, ep=2), "vllm@0.8", "predates --data-parallel-size"),
        ("mixtral-8x7b", Shape(tp=1, dp=16, ep=16), "vllm", "more ranks than"),
        ("qwen3-30b-a3b", Shape(tp=1, dp=3, ep=3), "sglang", "does not divide"),
    ],
)
def test_bad_combinations_are_refused(model, shape, eng, words):
    with pytest.raises(KvcalcError) as e:
        check_shape(resolve_model(model), shape, engine(eng))
    assert words in e.value.line()


def test_vllm_takes_expert_parallelism_over_tp_from_0_8_and_data_parallel_from_0_8_4():
    # simon-mo/R1-Benchmark served DeepSeek-R1 with vLLM 0.8.4 at TP 8 with --enable-expert-parallel.
    m = resolve_model("qwen3-30b-a3b")
    check_shape(m, Shape(tp=2, ep=2), engine("vllm@0.8"))
    check_shape(m, Shape(tp=1, dp=2, ep=2), engine("vllm@0.8.4"))


def test_tensorrt_llm_takes_expert_parallelism_equal_to_tp_without_attention_dp(cli):
    # TensorRT-LLM 1.x's PyTorch backend: moe_tp_size = world // moe_ep_size, attention TP over every rank, the
    # experts' outputs all-reduced as under TP unless attention DP is on (mapping.py, fused_moe/interface.py,
    # read at 1.0.0rc4 and 1.2.0rc2). kvcalc takes EP = TP with DP 1 and refuses the rest in one line.
    m = resolve_model("deepseek-v3")
    check_shape(m, Shape(tp=8, ep=8), engine("trtllm"))
    assert engine_flags(Shape(tp=8, ep=8), engine("trtllm")) == "--tp_size 8 --ep_size 8"
    assert engine_flags(Shape(tp=4), engine("trtllm")) == "--tp_size 4"
    for shape, eng, words in (
        (Shape(tp=8, ep=4), "trtllm", "only equal to the TP size"),
        (Shape(tp=4, dp=2, ep=8), "trtllm", "no data-parallel attention (enable_attention_dp)"),
        (Shape(tp=8, ep=8), "trtllm@0.19", "no data-parallel attention or expert parallelism"),
    ):
        with pytest.raises(KvcalcError) as e:
            check_shape(m, shape, engine(eng))
        assert words in e.value.line(), (shape, eng)
    # The memory report: one KV pool, the experts whole on each GPU, in trtllm-serve's flags. DeepSeek-V3's 256
    # routed experts of 3 x 7,168 x 2,048 weights (fp8, a 128 x 128 block's fp32 scale) split 32 whole a GPU hold
    # what an eighth of each expert's width holds (2,048 / 8 = 256 rows, two blocks): the same bytes a GPU.
    out = cli("fit", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--ep", "8", "-e", "trtllm", "--seq", "2k")
    assert out.code == 0 and "(--tp_size 8 --ep_size 8): attention and the KV cache split over the TP ranks" in out.out
    assert "each of the 1 DP rank" not in out.out
    assert (256 // 8) * (2048 // 128) == 256 * (2048 // 8 // 128)
    # simulate's header names the EP size with DP 1 too (it named it only beside DP), as its JSON gives it.
    sim = ("simulate", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--ep", "8", "-e", "trtllm")
    sim += ("--concurrency", "4", "--requests", "8", "--prompt", "100", "--output", "10")
    text, js = cli(*sim), cli(*sim, "--json").json()
    assert js["ep"] == 8 and js["dp"] == 1 and "(TP 8, EP 8, trtllm@1.2's KV pool" in " ".join(text.out.split())
    args = ("fit", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "-e", "trtllm", "--seq", "2k", "--json")
    ep8, tp8 = cli(*args, "--ep", "8").json(), cli(*args).json()
    assert ep8["weight_bytes"] == tp8["weight_bytes"] and ep8["kv_bytes_per_token"] == tp8["kv_bytes_per_token"]


def test_bad_combinations_give_one_line_and_exit_2(cli):
    for args in (
        ["fit", "--model", "llama3.1-8b", "--gpu", "h100", "--tp", "2", "--ep", "2", "--seq", "4k"],
        ["fit", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--dp", "2", "--ep", "4", "--seq", "4k"],
        ["size", "--model", "qwen3-30b-a3b", "--seq", "4k", "--dp", "2", "--ep", "2", "-e", "trtllm"],
        ["roofline", "--model", "llama3.1-8b", "--gpu", "h100", "--ep", "2"],
        ["fit", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--dp", "0", "--seq", "4k"],
    ):
        res = cli(*args)
        assert res.code == 2 and "Traceback" not in res.err and len(res.err.strip().splitlines()) == 1, (args, res.err)


def test_placement_on_nodes():
    h, gb = resolve_gpu("h100"), resolve_gpu("gb200")
    # 16 H100s are two 8-GPU HGX nodes: a stage of 16 crosses the network; TP 8 stays on NVLink.
    p = place(h, Shape(tp=1, dp=16, ep=16))
    assert (p.nodes, p.partial_node, p.stage_link) == (2, False, "network")
    assert place(h, Shape(tp=8)).tp_link == "nvlink"
    # TP 8 x PP 2: one stage a node, one hand-off over the network.
    assert place(h, Shape(tp=8, pp=2)).pp_network_handoffs == 1
    # GB200 NVL72: 4 GPUs a tray, one NVLink domain of 72, so EP 16 stays on NVLink across trays.
    assert place(gb, Shape(tp=1, dp=16, ep=16)).stage_link == "nvlink"
    # PCIe cards (L40S): TP 4 over PCIe inside the server.
    assert place(resolve_gpu("l40s"), Shape(tp=4)).tp_link == "pcie"


def test_collectives_that_cross_nodes_take_the_network_figures():
    m, h = resolve_model("deepseek-v3"), resolve_gpu("h100")
    fp8 = kv_dtype("fp8")
    # DP 16 x EP 16 on two H100 nodes, 32 tokens a rank: each of the 58 MoE layers gathers the other 15
    # ranks' 32 tokens x 7,168 x 2 B and scatters them back, over the network: 47 us (2 x 8 Hopper GPUs
    # over 400 Gb/s InfiniBand, nccl#1244); the 7 ranks in the GPU's own node over NVLink (0.7 x 450 GB/s),
    # the 8 in the other node through the GPU's own NIC at 0.9 of 50 GB/s (NCCL cannot pool NICs for it).
    sm = StepModel(m, h, fp8, dp=16, ep=16)
    a = 32 * 7168 * 2
    want = 2 * 58 * (47e-6 + 7 * a / (0.7 * 450e9) + 8 * a / (0.9 * 50e9))
    assert sm.moe_exchange_s(32) == pytest.approx(want)
    # TP 16 crosses the two nodes: 47 us and the NICs (376 GB/s) capped by the NVLink figure inside a
    # node (0.7 x 450 GB/s = 315 GB/s).
    link = tp_link(h, 16)
    assert (link.kind, link.alpha_s, link.bytes_per_s) == ("network", 47e-6, pytest.approx(0.7 * 450e9))
    # TP 8 x PP 2: one PP hand-off over the network, 17 us + 64 tokens x 7,168 x 2 B / (0.7 x 50 GB/s),
    # beside 2 all-reduces a layer on NVLink: 917,504 B, between the H100 spec's measured 524,288 B
    # (11.99 us) and 1,048,576 B (14.97 us) at TP 8.
    sm2 = StepModel(m, h, fp8, tp=8, pp=2)
    a = 64 * 7168 * 2
    ar = 2 * 61 * (11.99 + (14.97 - 11.99) * (a - 524288) / (1048576 - 524288)) * 1e-6
    assert sm2.collective_s(64) == pytest.approx(ar + 17e-6 + a / (0.7 * 50e9))


def test_expert_flops_run_at_the_fused_moe_kernels_efficiency():
    import dataclasses

    from kvcalc.engine.steptime import DEFAULTS

    m, h = resolve_model("qwen3-30b-a3b"), resolve_gpu("h100")
    # Qwen3-30B-A3B: 48 MoE layers, 8 experts a token of 3 x 2,048 x 768 parameters each; of a token's
    # matmul FLOPs the rest (attention projections, the LM head) runs at eta_c 0.70, the experts at
    # moe_eta_c 0.15 of the 989.5 TFLOP/s bf16 peak, the busiest EP rank's at moe_imbalance times that.
    expert = 2 * 48 * 8 * 3 * 2048 * 768
    sm = StepModel(m, h, BF16, dp=4, ep=4)
    total = sm.d.matmul_flops_per_token
    want = ((total - expert) / 0.70 + expert / 0.15) / 989.5e12
    assert sm.inv_mm * total == pytest.approx(want)
    skew = StepModel(m, h, BF16, dp=4, ep=4, constants=dataclasses.replace(DEFAULTS, moe_imbalance=2.0))
    assert skew.inv_mm * total == pytest.approx(((total - expert) / 0.70 + 2 * expert / 0.15) / 989.5e12)


def test_roofline_counts_every_dp_rank(cli):
    d = cli("roofline", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--dp", "4", "--ep", "4", "--batch", "16", "--json").json()
    row = d["rows"][0]
    assert row["tokens_per_s"] == pytest.approx(4 * 16 / row["t_bound_s"])
    assert row["tokens_per_s_step"] == pytest.approx(4 * 16 / row["t_step_s"])
    # Resident on a GPU: the 48 x 128 experts of 4,718,592 parameters in bf16 over the 4 GPUs, the other
    # 30,532,122,624 - 28,991,029,248 parameters whole (TP 1).
    experts = 48 * 128 * 4_718_592
    assert row["weight_bytes_resident"] == (30_532_122_624 - experts) * 2 + experts * 2 // 4 == 17_577_701_376
    assert d["inputs"]["dp"] == 4


def test_size_puts_a_dp_ranks_share_on_each_gpu(cli):
    d = cli("size", "--model", "deepseek-v3", "--seq", "8k", "--batch", "100", "--dp", "16", "--kv-dtype", "fp8", "--json").json()
    # 100 requests over 16 ranks: the busiest holds ceil(100 / 16) = 7, at 8,192 x 35,136 B each.
    assert d["per_gpu"]["kv_bytes_total"] == 7 * 8192 * 35_136
    assert d["kv_bytes_total"] == 100 * 8192 * 35_136


def test_plans_for_70b_and_deepseek_keep_tp_inside_a_node_and_pp_across_nodes():
    h = resolve_gpu("h100")
    for name, kv, users in (("llama3.1-70b", BF16, 64), ("deepseek-v3", kv_dtype("fp8"), 64)):
        m = resolve_model(name)
        r = plan(m, [h], Traffic(prompt=8192, output=512, users=users), SLO(), kv, engine("vllm"))
        assert r.ranked
        for d in r.ranked:
            assert d.tp <= 8, d  # TP inside the 8-GPU NVLink domain
            if d.mode == "aggregated":
                stage = d.tp * d.dp
                assert d.pp == 1 or stage >= 8, d  # PP only across servers
                assert d.pp == 1 or "PP" in d.why, d  # and said why
            # A replica (or a disaggregated pair of pools) takes whole servers or a share of one that
            # divides it; replicas of a share pack into servers, their count stated.
            n = d.gpus // d.replicas if d.mode == "aggregated" else d.gpus
            assert (8 % n == 0) if n < 8 else (n % 8 == 0), d
            if d.mode == "aggregated" and d.gpus > 8:
                assert f"{math.ceil(d.gpus / 8)} nodes in all" in d.placement or d.replicas == 1, d


def test_candidate_shapes_leave_out_pp_inside_a_node():
    shapes = candidate_shapes(resolve_model("llama3.1-70b"), resolve_gpu("h100"), engine("vllm"), 64)
    assert Shape(tp=2, pp=3) not in shapes and Shape(tp=4, pp=2) not in shapes
    assert Shape(tp=8, pp=2) in shapes and Shape(tp=8) in shapes


def test_a_disaggregated_ttft_includes_the_kv_transfer():
    # Llama-3.1-70B on 8 H100s, 2,000-token prompts: the prompt's KV is 2,000 x 80 layers x 8 KV heads
    # x 128 x 2 (K, V) x 2 B = 655,360,000 B, shipped from a prefill instance's GPUs to the decode
    # instance on the same HGX board: over NVLink, each prefill GPU its share at 0.7 x 450 GB/s, 6 us.
    m, h = resolve_model("llama3.1-70b"), resolve_gpu("h100")
    r = max_throughput(m, h, 8, 2000, 500, SLO(1.0, 0.030), BF16, engine("vllm"))
    d = r.disaggregated.deployment
    assert d is not None and d.mode == "disaggregated"
    senders = int(d.prefill_pool.split(" x ")[1].split("TP ")[1].split()[0])
    shipped = 2000 * 80 * 8 * 128 * 2 * 2
    assert shipped == 655_360_000
    assert d.kv_transfer_s == pytest.approx(shipped / (senders * 0.7 * 450e9) + 6e-6)
    assert d.ttft_s > d.kv_transfer_s
    # Both modes meet the targets they were asked for.
    for c in (r.aggregated, r.disaggregated):
        assert c.deployment is not None and c.deployment.ttft_s <= 1.0 and c.deployment.tpot_s <= 0.030 + 1e-9


def test_simulate_serves_one_dp_ranks_share(cli):
    d = cli(
        "simulate",
        "--model",
        "qwen3-30b-a3b",
        "--gpu",
        "h100",
        "--dp",
        "4",
        "--ep",
        "4",
        "--requests",
        "400",
        "--rate",
        "8",
        "--prompt",
        "1000",
        "--output",
        "100",
        "--policies",
        "paged-16",
        "--json",
    ).json()
    # Every 4th of 400 requests: 100 on the simulated rank.
    assert d["requests"] == 100 and d["dp"] == 4


@pytest.mark.parametrize("users, near", [(6, "4 or 8"), (1, "4 (one user a rank)"), (10, "8 or 12")])
def test_a_closed_loop_that_does_not_split_over_the_dp_ranks_is_refused(cli, users, near):
    # The replay is one rank's share of the users; 6 users over 4 ranks used to become 1 a rank (4 in
    # all) without a word.
    args = ["simulate", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--dp", "4", "--ep", "4", "--requests", "40"]
    res = cli(*args, "--concurrency", str(users), "--prompt", "100", "--output", "10", "--policies", "paged-16")
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1 and "Traceback" not in res.err
    assert f"{users} users over 4 DP ranks does not split evenly" in res.err and f"a multiple of 4, such as {near}" in res.err
    ok = cli(*args, "--concurrency", "8", "--prompt", "100", "--output", "10", "--policies", "paged-16", "--json").json()
    assert ok["requests"] == 10 and ok["dp"] == 4


def test_the_docs_worked_example_is_what_fit_and_plan_say():
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text()
    m, h, fp8 = resolve_model("deepseek-v3"), resolve_gpu("h100"), kv_dtype("fp8")
    measured = dict(activation=2 * GiB, non_torch=GiB, cudagraph=GiB // 2)
    r = fit(m, h, FitInputs(seq=8192, dp=16, ep=16, kv_dtype=fp8, **measured))
    tp16 = fit(m, h, FitInputs(seq=8192, tp=16, kv_dtype=fp8, **measured))
    for figure in (r.weight_bytes, r.kv_pool_bytes, r.kv_pool_blocks):
        assert f"{figure:,}" in text
    assert f"{r.max_concurrency} requests per rank, {r.max_concurrency_total} over the 16 ranks" in text
    assert f"TP 16 on the same GPUs holds {tp16.max_concurrency}" in text
    assert f"{58 * 256 * 44_040_192:,} parameters" in text
    p = plan(m, [h], Traffic(prompt=31 * 1024, output=1024, users=64), SLO(), fp8, engine("vllm"))
    assert p.best is not None and (p.best.dp, p.best.ep, p.best.tp, p.best.gpus) == (8, 16, 2, 16)
    nxt = p.ranked[1]
    assert (nxt.dp, nxt.ep, nxt.tp, nxt.gpus) == (16, 16, 1, 16) and abs(nxt.tpot_s / p.best.tpot_s - 1) < 0.01
    assert "answers data-parallel attention on 16 GPUs: `DP8 TP2 EP16`, with `DP16 EP16` next within 1% of its TPOT" in " ".join(
        text.split()
    )


def test_a_pinned_dp_that_fits_no_server_or_a_dense_model_is_refused(cli):
    # DP 3 of Qwen3-30B-A3B within 8 H100s: DP x TP is 3, 6 or 12, none dividing an 8-GPU server or a
    # multiple of it within 8 GPUs.
    r = cli("plan", "--model", "qwen3-30b-a3b", "--gpus", "h100", "--users", "8", "--dp", "3", "--max-gpus", "8")
    assert r.code == 2 and "DP 3" in r.err and "(--dp)" in r.err and len(r.err.strip().splitlines()) == 1
    r = cli("plan", "--model", "llama3.1-8b", "--gpus", "h100", "--users", "8", "--dp", "2")
    assert r.code == 2 and "mixture-of-experts" in r.err
    r = cli("plan", "--model", "qwen3-30b-a3b", "--gpus", "h100", "--users", "8", "--ep", "sideways")
    assert r.code == 2 and "on, off or both" in r.err


def test_sglangs_flags_for_dp_attention_follow_the_release():
    # --attn-dp-size from 0.5.22 (server_args.py, 0.5.23); --dp-size with --enable-dp-attention before
    # (server_args.py, 0.4.0 to 0.5.9).

    shape = Shape(tp=2, dp=4, ep=8)
    assert engine_flags(shape, engine("sglang")) == "--tp-size 8 --attn-dp-size 4 --ep-size 8"
    for old in ("sglang@0.5.9", "sglang@0.4.6.post5", "sglang@0.5.19"):
        assert engine_flags(shape, engine(old)) == "--tp-size 8 --dp-size 4 --enable-dp-attention --ep-size 8", old
    assert engine_flags(Shape(tp=8), engine("sglang@0.5.9")) == "--tp-size 8"


@pytest.mark.parametrize(
    ("gpu", "fabric"),
    # Each vendor's name for its scale-up links: NVIDIA's NVLink, AMD's Infinity Fabric (the MI300X
    # datasheet), Google's ICI (the Cloud TPU docs), and the on-chip RoCE ports Gaudi 3 scales up over.
    [("h200", "NVLink"), ("mi300x", "Infinity Fabric"), ("tpu-v5e", "ICI"), ("gaudi3", "RoCE")],
)
def test_a_tp_group_is_said_to_cross_its_vendors_fabric(gpu: str, fabric: str) -> None:
    g = resolve_gpu(gpu)
    placed = place(g, Shape(tp=8))
    assert f"TP over {fabric}" in placed.describe()
    sm = StepModel(resolve_model("llama3.1-70b"), g, BF16, tp=8)
    said = sm.describe()
    assert f"all-reduces per layer over {fabric}" in said
    assert "nvlink" not in said
