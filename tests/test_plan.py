"""kvcalc plan: the fewest GPUs that carry a load within its latency targets."""

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from conftest import one_line_error
from kvcalc.engine.engines import engine
from kvcalc.engine.memory import FitInputs, fit
from kvcalc.engine.plan import SLO, Traffic, _check, _Replica, _steady, plan
from kvcalc.engine.roofline import decode_bound
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import kv_dtype


def test_deepseek_v3_at_32k_for_64_users_needs_at_most_16_h100s():
    # Tensor parallelism does not split an MLA latent (every rank keeps it whole), so TP 16 holds few
    # requests; pipeline stages split the layers and with them the latent.
    m, h, fp8 = resolve_model("deepseek-v3"), resolve_gpu("h100"), kv_dtype("fp8")
    tp16 = fit(m, h, FitInputs(seq=32768, tp=16, kv_dtype=fp8)).max_concurrency
    assert tp16 < 64
    r = plan(m, [h], Traffic(prompt=32768, output=0, users=64), SLO(), fp8, engine("vllm"), latency=False)
    b = r.best
    assert b is not None and b.gpus <= 16
    held = fit(m, h, FitInputs(seq=32768, tp=b.tp, pp=b.pp, dp=b.dp, ep=b.ep, kv_dtype=fp8)).max_concurrency
    assert held * b.dp * b.replicas >= 64
    # On whole servers: 16 GPUs is two 8-GPU nodes (issue 18).
    assert b.gpus % 8 == 0
    # TP 4 x PP 4 (16 GPUs): the issue reckoned about 104 requests with the experts spread evenly over the 61
    # layers (kvcalc had 90). The busiest of the stages [15, 15, 16, 15] holds 16 of the 58 MoE layers (the
    # first three are dense), so 16/58 of the routed experts where an even share gave it 16/61, and 83 requests.
    from kvcalc.engine.weights import role_bytes, weights

    w = weights(m, None, 4, 4)
    assert w.roles["experts"] == math.ceil(Fraction(role_bytes(m)["experts"], 4) * Fraction(16, 58))
    assert fit(m, h, FitInputs(seq=32768, tp=4, pp=4, kv_dtype=fp8)).max_concurrency == 83


def test_llama_70b_on_h100_at_a_fixed_rate():
    # 4 requests/s of 1,000 + 200 tokens on TP 4 H100 replicas, TPOT <= 30 ms.
    m, h = resolve_model("llama3.1-70b"), resolve_gpu("h100")
    bf16 = kv_dtype("bf16")
    t = Traffic(prompt=1000, output=200, rate=4.0)
    slo = SLO(tpot_s=0.030)
    r = plan(m, [h], t, slo, bf16, engine("vllm"), tp_sizes=(4,), pp_sizes=(1,))
    b = r.best
    assert b is not None and (b.tp, b.pp) == (4, 1)
    n = b.in_flight_per_replica
    lam = 4.0 / b.replicas
    # Little's law: requests in flight = rate per replica x (TTFT + 199 x TPOT).
    assert n == pytest.approx(lam * (b.ttft_s + 199 * b.tpot_s), rel=1e-4)
    # TPOT is at least the bound of a decode-only step of the requests decoding, lam x 199 x TPOT of them,
    # at the mid-output context: (weights / 4 + batch x KV(1,100)) / 3.35 TB/s.
    dec = math.ceil(lam * 199 * b.tpot_s)
    p = decode_bound(m, h, dec, 1100, bf16, 4)
    assert b.tpot_s > p.t_bound_s
    assert b.tpot_s <= 0.030
    # One replica fewer misses a target.
    if b.replicas > 1:
        rep = _Replica(m, h, 4, 1, t, bf16, engine("vllm"))
        assert not _check(rep, t, slo, b.replicas - 1)[0]


def test_a_target_nothing_meets_names_the_nearest():
    m = resolve_model("llama3.1-70b")
    r = plan(
        m, [resolve_gpu("h100")], Traffic(prompt=1000, output=200, users=8), SLO(tpot_s=0.001), kv_dtype("bf16"), engine("vllm")
    )
    assert r.best is None and r.nearest is not None
    assert "TPOT" in r.nearest.shortfall and r.warnings


def test_prices_rank_by_cost(cli):
    d = cli(
        "plan", "--model", "llama3.1-8b", "--users", "32", "--gpus", "h100,l40s", "--price", "h100=10,l40s=1", "--json"
    ).json()
    costs = [x["cost_per_hour"] for x in d["ranked"]]
    assert costs == sorted(costs) and d["best"]["gpu"] == "l40s"


def test_text(cli):
    r = cli("plan", "--model", "llama3.1-70b", "--rate", "10", "--tpot", "50ms", "--ttft", "2s", "--gpus", "h100,h200")
    assert r.code == 0 and "Fewest GPUs:" in r.out and "binding" in r.out


def test_the_winner_says_what_it_won(cli):
    # With a price for every GPU the ranking is by cost, and the first row is called the lowest cost,
    # not the fewest GPUs (a smaller, dearer deployment may be listed below it).
    args = ("plan", "--model", "llama3.1-8b", "--users", "32", "--gpus", "h100,l40s", "--price", "h100=10,l40s=1")
    r = cli(*args)
    assert r.code == 0 and "Lowest cost:" in r.out and "Fewest GPUs:" not in r.out
    assert cli(*args, "--json").json()["ranked_by"] == "cost"


@pytest.mark.parametrize(
    "args,needle",
    [
        ([], "--users/--rate"),
        (["--users", "4", "--rate", "1"], "--users/--rate"),
        (["--rate", "-1"], "--rate"),
        (["--rate", "nan"], "--rate"),
        (["--users", "0"], "--users"),
        (["--users", "4", "--ttft", "0s"], "--ttft"),
        (["--users", "4", "--tpot", "fast"], "--tpot"),
        (["--users", "4", "--price", "h100"], "--price"),
        (["--users", "4", "--price", "h100=-3"], "--price"),
        (["--users", "4", "--gpus", "h1000"], "h100"),
        (["--users", "4", "--max-gpus", "0"], "--max-gpus"),
        (["--users", "4", "--percentile", "101"], "--percentile"),
        # 130,000 + 2,000 = 132,000 tokens, over Llama-3.1-8B's context of 131,072: a server refuses every
        # such request, where plan had sized deployments for it.
        (["--rate", "0.1", "--prompt", "130000", "--output", "2000"], "make 132,000 tokens, over llama3.1-8b's context"),
        (["--rate", "0.1", "--prompt", "fixed:131072", "--output", "1"], "make 131,073 tokens"),
    ],
)
def test_bad_input_is_one_line(cli, args, needle):
    one_line_error(cli("plan", "--model", "llama3.1-8b", *args), needle)


def test_prefill_share_limits_a_replica():
    # 1,000-token prompts at 10 requests/s on 2 H200s at TP 2: the prefills alone need more than the
    # replica's time (10 x 2 x 70.6e9 x 1000 / 2 GPUs / (989.5e12 x 0.7) > 1), so one replica fails.
    m, h = resolve_model("llama3.1-70b"), resolve_gpu("h200")
    t = Traffic(prompt=1000, output=200, rate=10.0)
    rep = _Replica(m, h, 2, 1, t, kv_dtype("bf16"), engine("vllm"))
    ok, _, fail, use = _check(rep, t, SLO(), 1)
    assert not ok and fail == "prefill" and use["prefill"] > 1


def _closed_and_simulated(
    model: str, gpu: str, tp: int, prompt: int, output: int, rate: float, release: str = "vllm"
) -> tuple[Any, Any]:
    """The closed form's steady state (``_steady``) and 3,000 simulated requests (paged, Poisson at
    ``rate``, seed 0) of one replica under ``release`` (vLLM by default), bf16 KV."""
    _, st, run_ = _replica_and_run(model, gpu, tp, prompt, output, rate, release)
    return st, run_


def _replica_and_run(
    model: str, gpu: str, tp: int, prompt: int, output: int, rate: float, release: str, every: int = 1, n: int = 3000
) -> tuple[Any, Any, Any]:
    """``_closed_and_simulated`` with the replica itself, SGLang's receive interval ``every`` in both, and ``n``
    simulated requests."""
    import numpy as np

    from kvcalc.engine.plan import _steady
    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    m, g, bf16, eng = resolve_model(model), resolve_gpu(gpu), kv_dtype("bf16"), engine(release)
    t = Traffic(prompt=prompt, output=output, rate=rate)
    rep = _Replica(m, g, tp, 1, t, bf16, eng, recv_interval=every)
    st = _steady(rep, t, 1)
    assert st is not None
    arr = np.cumsum(np.random.default_rng(0).exponential(1 / rate, size=n))
    wl = Workload(arr, np.full(n, prompt), np.full(n, output), "t", "p")
    mem = g.memory_runtime_bytes
    settings_ = SimSettings(
        prompt + output, eng.default_num_seqs(mem, g.name), eng.schedule(m, g, prompt + output)[0], recv_interval=every
    )
    return rep, st, simulate(m, g, wl, settings_, [("paged-16", 16)], eng, bf16, tp).runs[0]


@pytest.mark.parametrize(
    "model,gpu,tp,rate,prompt,output",
    [
        ("llama3.1-70b", "h100", 4, 8.0, 1000, 200),
        ("llama3.1-70b", "h100", 8, 13.2, 1000, 200),
        ("llama3.1-8b", "h100", 1, 10.0, 1000, 200),
        ("llama3.1-8b", "h100", 1, 22.0, 1000, 200),
        ("llama3.1-70b", "h100", 4, 2.0, 4000, 300),
        # Long prompts, where the prompts queued behind a request add to its TPOT (_steady).
        ("llama3.1-8b", "h100", 1, 1.5, 8000, 100),
    ],
)
def test_the_closed_form_agrees_with_the_simulation(model, gpu, tp, rate, prompt, output):
    # The issue's aim: closed form and simulation within 10% on TPOT and on whether a replica keeps up,
    # on the same step model. The simulation is the independent implementation: event by event, with
    # whole prompts in steps, where the closed form averages over a steady state.
    st, run_ = _closed_and_simulated(model, gpu, tp, prompt, output, rate)
    assert not run_.overloaded
    assert run_.tpot_s.mean == pytest.approx(st[2], rel=0.10)
    assert run_.ttft_s.mean == pytest.approx(st[3], rel=0.25)


def test_the_issues_example_agrees_with_itself(cli):
    # Llama-3.1-70B on H100s, 1,000 + 200 tokens at 26.4 requests/s, TTFT 1 s, TPOT 50 ms, at most 8
    # GPUs: whatever the closed form passes, the simulation must find keeping up; nothing past 8 GPUs.
    ask = ("plan", "--model", "llama3.1-70b", "--gpus", "h100", "--rate", "26.4", "--prompt", "1000", "--output", "200")
    ask += ("--ttft", "1s", "--tpot", "50ms", "--json")
    d = cli(*ask, "--max-gpus", "8").json()
    assert all(v["gpus"] <= 8 for v in d["verified"])
    # Nothing of 8 GPUs reaches a steady state at this rate: the nearest is the one with the most
    # GPUs, not the first tried (2).
    if d["best"] is None:
        assert d["nearest"]["gpus"] == 8
    for v in d["verified"]:
        if v["closed_form_tpot_s"]:
            assert v["tpot_mean_s"] == pytest.approx(v["closed_form_tpot_s"], rel=0.10)
    # With room for 16 GPUs: whatever the closed form passes, the simulation finds keeping up (it
    # serves at least 95% of what it is offered) at the closed form's TPOT within 10%.
    d = cli(*ask, "--max-gpus", "16").json()
    assert d["best"] is not None and d["verified"]
    for v in d["verified"]:
        assert v["gpus"] <= 16
        if v["closed_form_tpot_s"]:
            assert v["served_per_s"] >= 0.95 * v["offered_per_s"]
            assert v["tpot_mean_s"] == pytest.approx(v["closed_form_tpot_s"], rel=0.10)


def test_a_bare_number_is_not_a_duration(cli):
    one_line_error(cli("plan", "--model", "llama3.1-8b", "--users", "4", "--tpot", "50"), "--tpot")


@pytest.mark.parametrize(
    "model,tp,rate,name",
    [("llama3.1-8b", 1, 15.0, "sglang"), ("llama3.1-70b", 4, 4.0, "sglang"), ("llama3-70b", 4, 5.0, "vllm@0.6.3")],
)
def test_prompts_first_closed_form_agrees_with_its_simulation(model, tp, rate, name):
    # SGLang, and vLLM V0 without chunked prefill (Llama-3-70B's 8,192-token context), run prompts as
    # steps of their own and decode only between them: the closed form counts a token a decode step
    # (TPOT = decode step / (1 - the prefill steps' share of the time)), the simulation steps it event
    # by event; they agree within 10% on TPOT, 25% on TTFT.
    import numpy as np

    from kvcalc.engine.plan import _steady
    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    m, g, bf16, eng = resolve_model(model), resolve_gpu("h100"), kv_dtype("bf16"), engine(name)
    t = Traffic(prompt=1000, output=200, rate=rate)
    rep = _Replica(m, g, tp, 1, t, bf16, eng)
    assert not rep.mixed
    st = _steady(rep, t, 1)
    assert st is not None
    n = 3000
    arr = np.cumsum(np.random.default_rng(0).exponential(1 / rate, size=n))
    wl = Workload(arr, np.full(n, 1000), np.full(n, 200), "t", "p")
    mem = g.memory_runtime_bytes
    settings_ = SimSettings(1200, eng.default_num_seqs(mem, g.name), eng.schedule(m, g, 1200)[0])
    run_ = simulate(m, g, wl, settings_, [("paged-16", 16)], eng, bf16, tp).runs[0]
    assert not run_.overloaded
    assert run_.tpot_s.mean == pytest.approx(st[2], rel=0.10)
    assert run_.ttft_s.mean == pytest.approx(st[3], rel=0.25)


def _dp_closed_and_simulated(
    model: str, gpu: str, dp: int, prompt: int, output: int, rate: float, release: Any, busy: int | None = None
) -> tuple[Any, Any]:
    """As _closed_and_simulated, for DP attention over ``dp`` ranks at TP 1 with EP over all of them:
    the closed form's steady state and one rank's simulated share of 2,000 x dp requests."""
    import numpy as np

    from kvcalc.engine.plan import _steady
    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    eng = engine(release) if isinstance(release, str) else release
    m, g, bf16 = resolve_model(model), resolve_gpu(gpu), kv_dtype("bf16")
    t = Traffic(prompt=prompt, output=output, rate=rate)
    st = _steady(_Replica(m, g, 1, 1, t, bf16, eng, dp=dp, ep=dp), t, 1)
    n = 2000 * dp
    arr = np.cumsum(np.random.default_rng(0).exponential(1 / rate, size=n))
    wl = Workload(arr, np.full(n, prompt), np.full(n, output), "t", "p")
    mem = g.memory_runtime_bytes
    settings_ = SimSettings(
        prompt + output, eng.default_num_seqs(mem, g.name), eng.schedule(m, g, prompt + output)[0], busy_ranks=busy
    )
    return st, simulate(m, g, wl, settings_, [("paged-16", 16)], eng, bf16, 1, dp=dp, ep=dp).runs[0]


@pytest.mark.parametrize(
    "model,gpu,dp,prompt,output,rate",
    [("qwen3-30b-a3b", "h100", 4, 1000, 200, 26.7), ("deepseek-v3", "h200", 8, 4000, 500, 0.99)],
)
def test_sglang_dp_attention_ranks_step_with_each_others_prompts_in_both_forms(model, gpu, dp, prompt, output, rate):
    # SGLang to 0.5.9 under DP attention: every rank steps with any rank's prompt batch, its decodes
    # then without CUDA graphs (Engine.dp_prompt_lockstep). The closed form (a two-state chain of
    # decode steps beside another rank's prompt step) and the simulation (one rank, the others' prompt
    # steps drawn at its own rate) agree within 10% on TPOT, and both are slower than without the rule.
    st, run_ = _dp_closed_and_simulated(model, gpu, dp, prompt, output, rate, "sglang@0.5.9")
    assert st is not None and not run_.overloaded
    assert run_.tpot_s.mean == pytest.approx(st[2], rel=0.10)
    _, alone = _dp_closed_and_simulated(model, gpu, dp, prompt, output, rate, "sglang@0.5.9", busy=1)
    assert run_.tpot_s.mean > 1.15 * alone.tpot_s.mean


def test_the_lockstep_is_sglangs_to_0_5_9_and_needs_other_busy_ranks():
    from kvcalc.engine.steptime import StepModel

    m, g, bf16 = resolve_model("qwen3-30b-a3b"), resolve_gpu("h100"), kv_dtype("bf16")
    ranks = {
        name: StepModel(m, g, bf16, 1, 1, dp=4, ep=4, engine=engine(name)).lockstep_ranks
        for name in ("sglang@0.5.9", "sglang@0.4.6.post5", "sglang", "vllm")
    }
    assert ranks == {"sglang@0.5.9": 3, "sglang@0.4.6.post5": 3, "sglang": 0, "vllm": 0}
    assert StepModel(m, g, bf16, 1, 1, engine=engine("sglang@0.5.9")).lockstep_ranks == 0
    # One busy rank of four has no other rank's prompts to step with: the run is the one without the rule.
    import dataclasses

    off = dataclasses.replace(engine("sglang@0.5.9"), dp_prompt_lockstep=False)
    args = ("qwen3-30b-a3b", "h100", 4, 1000, 200, 10.0)
    _, one = _dp_closed_and_simulated(*args, "sglang@0.5.9", busy=1)
    _, without = _dp_closed_and_simulated(*args, off)
    _, four = _dp_closed_and_simulated(*args, "sglang@0.5.9", busy=4)
    assert one.tpot_s.mean == without.tpot_s.mean < four.tpot_s.mean
    from kvcalc.errors import KvcalcError

    for bad in (0, 5):
        with pytest.raises(KvcalcError, match="busy ranks"):
            _dp_closed_and_simulated(*args, "sglang@0.5.9", busy=bad)


@pytest.mark.parametrize("hit", [0.5, 0.9])
def test_a_prefix_cache_hit_agrees_with_its_simulation(cli, hit):
    # Prompts of 2,000 tokens with a share in the prefix cache: the closed form computes the prompt's
    # uncached blocks only, as the simulation (the independent, event-by-event implementation) does;
    # they agree within 10% on TPOT. 0.5 x 2,000 = 1,000 tokens, 62 whole blocks of 16 = 992.
    ask = ("plan", "--model", "llama3.1-8b", "--gpus", "h100", "--rate", "20", "--prompt", "2000", "--output", "200")
    ask += ("--ttft", "1s", "--tpot", "50ms", "--json", "--prompt-cache-hit", str(hit))
    d = cli(*ask).json()
    cached = {0.5: 992, 0.9: 1792}[hit]  # 1,800 // 16 = 112 blocks
    assert any(f"({cached:,} of 2,000)" in a for a in d["assumptions"])
    assert d["verified"]
    for v in d["verified"]:
        assert v["served_per_s"] >= 0.95 * v["offered_per_s"]
        assert v["tpot_mean_s"] == pytest.approx(v["closed_form_tpot_s"], rel=0.10)


def test_a_prefix_cache_hit_shortens_the_first_token_by_the_work_it_saves():
    # One replica at a light rate: TTFT is the request path, half a step and the prompt's own steps. With
    # 992 of 2,000 tokens cached, no step computes those 992: TTFT falls by at least their matmuls at the
    # full bf16 peak, 2 x 8,030,261,248 parameters x 992 tokens / 989.5e12 FLOP/s = 16.1 ms (H100 SXM
    # datasheet; efficiency 1, the least that work can take).
    from kvcalc.engine.plan import _steady

    m, g, bf16, eng = resolve_model("llama3.1-8b"), resolve_gpu("h100"), kv_dtype("bf16"), engine("vllm")
    full = Traffic(prompt=2000, output=200, rate=0.5)
    half = Traffic(prompt=2000, output=200, rate=0.5, prompt_cache_hit=0.5)
    rep = _Replica(m, g, 1, 1, half, bf16, eng)
    assert rep.C == 992
    a, b = _steady(_Replica(m, g, 1, 1, full, bf16, eng), full, 1), _steady(rep, half, 1)
    assert a is not None and b is not None
    assert a[3] - b[3] >= 2 * 8_030_261_248 * 992 / 989.5e12
    assert b[3] > 0


def test_plan_refuses_a_share_outside_0_to_1(cli):
    for bad in ("1.5", "nan", "-0.1", "x"):
        one_line_error(cli("plan", "--model", "llama3.1-8b", "--gpus", "h100", "--rate", "1", "--prompt-cache-hit", bad))


def test_plan_takes_a_weight_format_and_its_simulation_agrees(cli):
    # --weight-dtype fp8 (a bf16 checkpoint served with --quantization fp8): the closed form and the
    # verifying simulation size the pool and step on the same fp8 weights, so they agree within 10% on
    # TPOT as for any other plan, and the TP 4 replica's step is faster than at 16 bits.
    ask = ("plan", "--model", "llama3.1-70b", "--gpus", "h100", "--rate", "5", "--prompt", "1000", "--output", "200")
    ask += ("--ttft", "2s", "--tpot", "50ms", "--max-gpus", "8", "--json")
    bf16, fp8 = cli(*ask).json(), cli(*ask, "--weight-dtype", "fp8").json()
    assert any(a.startswith("weights as fp8") for a in fp8["assumptions"])
    assert not any(a.startswith("weights as") for a in bf16["assumptions"])

    def tp4(r):
        return next(d for d in r["ranked"] if d["tp"] == 4 and d["replicas"] == 1 and d["mode"] == "aggregated")

    assert tp4(fp8)["tpot_s"] < 0.8 * tp4(bf16)["tpot_s"]
    checked = [v for v in fp8["verified"] if v["closed_form_tpot_s"]]
    assert checked and all(abs(v["tpot_mean_s"] / v["closed_form_tpot_s"] - 1) <= 0.10 for v in checked)


def test_one_user_is_one_user(cli):
    # The traffic line counts its users with the noun in the singular for one.
    out = cli("plan", "--model", "llama3-8b", "--gpus", "h100", "--users", "1").out
    assert "1 concurrent user," in out and "1 concurrent users" not in out
    assert "2 concurrent users," in cli("plan", "--model", "llama3-8b", "--gpus", "h100", "--users", "2").out


def test_plan_says_each_moe_layer_waits_for_the_busiest_ep_rank(cli):
    # A DP-attention plan's step is the step model's, whose EP weight term is the busiest rank's experts
    # (tests/test_steptime.py checks the figure); the plan says so beside the FLOPs skew.
    ask = ("plan", "--model", "deepseek-v3", "--gpus", "h200", "--kv-dtype", "fp8", "--users", "64")
    d = cli(*ask, "--prompt", "4k", "--output", "1k", "--ttft", "2s", "--tpot", "50ms", "--json").json()
    said = [a for a in d["assumptions"] if a.startswith("DP attention")]
    assert said and "waits for the busiest EP rank, which reads the most distinct experts" in said[0]
    assert "carries moe_imbalance 1x the mean expert FLOPs" in said[0]


def test_long_prompts_near_the_prefill_capacity_count_the_prompts_queued_behind_a_request():
    """docs/simulation.md: Qwen2.5-32B at TP 4 on H100s, 32,000 + 100 tokens at half a request a second
    (the prompts' steps take 65% of the time). With 4 requests in the pool a step is 31.4 ms; the
    prompts that reached the engine while a request waited for and ran its own four chunk steps come
    in its first decode steps, making its TPOT 73.5 ms in that state, and over the states the pool
    passes through (``_pool``) the closed form's TPOT is 77.1 ms, against 73.9 simulated over 3,000
    requests (within 15%; taking the mean step as the TPOT, the closed form had said 25.4 ms, 66%
    low)."""
    import numpy as np

    from kvcalc.engine.plan import _prefill_wait, _steady, _tpot
    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    m, g, bf16, eng = resolve_model("qwen2.5-32b"), resolve_gpu("h100"), kv_dtype("bf16"), engine("vllm")
    t = Traffic(prompt=32000, output=100, rate=0.5)
    rep = _Replica(m, g, 4, 1, t, bf16, eng)
    st = _steady(rep, t, 1)
    assert st is not None
    n_fl, x, tpot, ttft, _, u = st
    path = float(rep.c.request_path_s(32000))
    # The state of 4 requests in the pool, by hand: the tagged request decodes beside 3 others, and the
    # prompts' steps (n_p a second, each adding ``late``) that queued while it waited for its first
    # token (``first``: its prompt's steps beside 3 decoding, and the M/D/1 wait) come in its 99 tokens.
    own, found = rep.step(4, x, 4.0), rep.step(3, x)
    assert own is not None and found is not None
    step, _, _, n_p, late = own
    first = rep.ttft(3, found[0]) - path + _prefill_wait(found[2], x)
    four = step + n_p * first * late / 99
    assert four == pytest.approx(_tpot(rep, 4.0, x, own, first, 100, None), rel=1e-12)
    # Over the chain's states the mean TPOT lies between a pool of one and one of ten (more than twice
    # the 4.5 in flight).
    ends = []
    for k in (1, 10):
        o, f = rep.step(k, x, float(k)), rep.step(k - 1, x)
        assert o is not None and f is not None
        ends.append(_tpot(rep, float(k), x, o, rep.ttft(k - 1, f[0]) - path + _prefill_wait(f[2], x), 100, None))
    assert ends[0] < tpot < ends[1]
    mean_step = rep.step(x * 99 * tpot, x)
    assert mean_step is not None
    got = (round(step * 1e3, 1), round(four * 1e3, 1), round(tpot * 1e3, 1), round(u, 2))
    assert got == (31.4, 73.5, 77.1, 0.65)
    n = 3000
    arr = np.cumsum(np.random.default_rng(0).exponential(2.0, size=n))
    wl = Workload(arr, np.full(n, 32000), np.full(n, 100), "t", "p")
    st_ = SimSettings(32100, eng.default_num_seqs(g.memory_runtime_bytes, g.name), eng.schedule(m, g, 32100)[0])
    run_ = simulate(m, g, wl, st_, [("paged-16", 16)], eng, bf16, 4).runs[0]
    assert not run_.overloaded and round(run_.tpot_s.mean * 1e3, 1) == 73.9
    assert run_.tpot_s.mean == pytest.approx(tpot, rel=0.15) and mean_step[0] < 0.5 * run_.tpot_s.mean
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "with 4 requests in the pool a step is 31.4 ms; with the prompts queued behind a request its TPOT is 73.5 ms in that state, and the closed form's TPOT over the pool's states is 77.1 ms"
        in text
    )
    assert "against 73.9 ms simulated over 3,000 requests" in text
    # The 8,000-token case of test_the_closed_form_agrees_with_the_simulation, as the page quotes it.
    t8 = Traffic(prompt=8000, output=100, rate=1.5)
    s8 = _steady(_Replica(resolve_model("llama3.1-8b"), g, 1, 1, t8, bf16, eng), t8, 1)
    assert s8 is not None and round(s8[5], 2) == 0.32
    assert "The 8,000-token case (Llama-3.1-8B at 1.5 a second, the prompts' steps 32% of the time) stays within 10%." in text


def test_a_replica_that_holds_one_request_runs_no_prompt_beside_a_decode():
    """Qwen2.5-32B on one H100 at 32,100 tokens a request: its pool holds one (kvcalc fit), so the next
    prompt cannot be computed beside the request decoding (under V1 its first chunk waits in the
    prefix cache), and the closed form's TPOT is the decode-only step, where taking the prompts'
    share of the time, as a larger pool would, put it 1.6x over the simulation (plan's TP 1 x 5 row
    at half a request a second: -38%)."""
    import numpy as np

    from kvcalc.engine.plan import _steady
    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    m, g, bf16, eng = resolve_model("qwen2.5-32b"), resolve_gpu("h100"), kv_dtype("bf16"), engine("vllm")
    t = Traffic(prompt=32000, output=100, rate=0.1)
    rep = _Replica(m, g, 1, 1, t, bf16, eng)
    assert rep.capacity == fit(m, g, FitInputs(seq=32100, engine=eng)).max_concurrency == 1
    st = _steady(rep, t, 1)
    assert st is not None
    alone = rep.step(0.1 * 99 * st[2], 0.0)
    assert alone is not None and st[2] == pytest.approx(alone[0], rel=1e-12)
    n = 300
    arr = np.cumsum(np.random.default_rng(0).exponential(10.0, size=n))
    wl = Workload(arr, np.full(n, 32000), np.full(n, 100), "t", "p")
    st_ = SimSettings(32100, eng.default_num_seqs(g.memory_runtime_bytes, g.name), eng.schedule(m, g, 32100)[0])
    run_ = simulate(m, g, wl, st_, [("paged-16", 16)], eng, bf16, 1).runs[0]
    # The prompt waiting in the prefix cache loses only the blocks the decoding request grows into
    # meanwhile (its last ones first): 32,000 to 32,100 tokens is at most 2,007 - 2,000 = 7 blocks of 16 a
    # request, so at most 300 x 7 x 16 tokens are computed again in all, whole blocks of them.
    assert run_.recomputed_tokens % 16 == 0 and 0 <= run_.recomputed_tokens <= 300 * 7 * 16
    assert run_.tpot_s.mean == pytest.approx(st[2], rel=0.10)


AGREEMENT_SHAPES = [
    (model, gpu, tp, prompt, output, share)
    for model, gpu, tp in [
        ("llama3.1-8b", "h100", 1),
        ("llama3.1-70b", "h100", 4),
        ("llama3.1-70b", "h200", 8),
        ("qwen3-32b", "h100", 2),
    ]
    for prompt, output in [(1000, 200), (4000, 500), (32000, 1000), (200, 2000)]
    for share in (0.05, 0.3, 0.6, 0.85)
]


def _agreement(tpot: list[float], ttft: list[float]) -> tuple[Any, ...]:
    """A grid's closed form against its simulation (each figure simulated / closed - 1): shapes, TPOT
    within 10%, mean TPOT gap %, the simulation's TPOT above at most %, TTFT within 25%, mean TTFT gap
    %, worst TTFT gap %."""
    return (
        len(tpot),
        sum(abs(e) <= 0.10 for e in tpot),
        round(100 * sum(abs(e) for e in tpot) / len(tpot), 1),
        round(100 * max(tpot)),
        sum(abs(e) <= 0.25 for e in ttft),
        round(100 * sum(abs(e) for e in ttft) / len(ttft), 1),
        round(100 * max(abs(e) for e in ttft)),
    )


def _pool_rate(m: Any, g: Any, tp: int, pp: int, prompt: int, output: int, eng: Any) -> float:
    """The rate at which the closed form's requests in flight reach what one replica's pool holds
    (bisected): the grids' 100%."""
    from kvcalc.engine.plan import _steady

    lo, hi = 0.0, 1000.0
    for _ in range(40):
        t = Traffic(prompt=prompt, output=output, rate=(lo + hi) / 2)
        rep = _Replica(m, g, tp, pp, t, kv_dtype("bf16"), eng)
        st = _steady(rep, t, 1)
        lo, hi = ((lo + hi) / 2, hi) if st is not None and st[0] <= rep.capacity else (lo, (lo + hi) / 2)
    return lo


@pytest.mark.slow
def test_the_closed_form_tracks_the_simulation_from_light_to_heavy_load():
    """docs/simulation.md: on 64 shapes (three models, TP 1 to 8, prompts of 200 to 32,000 tokens, at
    5% to 85% of the rate at which the closed form's requests in flight reach what the pool holds),
    the closed form over the pool's states (``_pool``) against 3,000 simulated requests: mean TPOT
    within 10% on all 64, mean gap 1.1%, the simulation at most 5% above; mean TTFT within 25% on 63,
    mean gap 2.9%, worst 37% (63, 1.1%, 11%, 61, 4.5% and 81% until a preempted request kept its cached blocks
    through a try that found no room; 0.9% and 3.0% until a prompt step's count followed the step before it). The p90
    TTFT (``_replica_ttft_at``) within 25% of the simulation's on 62 (within 15% on 47), mean gap 10%; the mean taken as the p90 is within 25% on 32."""

    from kvcalc.engine.plan import _replica_ttft_at, _steady

    tpot, ttft, p90, mean_as = [], [], [], []
    for model, gpu, tp, prompt, output, share in AGREEMENT_SHAPES:
        m, g, bf16, eng = resolve_model(model), resolve_gpu(gpu), kv_dtype("bf16"), engine("vllm")
        lo = _pool_rate(m, g, tp, 1, prompt, output, eng)
        st, run_ = _closed_and_simulated(model, gpu, tp, prompt, output, lo * share)
        tpot.append(run_.tpot_s.mean / st[2] - 1)
        ttft.append(run_.ttft_s.mean / st[3] - 1)
        t = Traffic(prompt=prompt, output=output, rate=lo * share)
        rep = _Replica(m, g, tp, 1, t, bf16, eng)
        p90.append(_replica_ttft_at(rep, t, 1, _steady(rep, t, 1), 90) / run_.ttft_s.p90 - 1)
        mean_as.append(st[3] / run_.ttft_s.p90 - 1)
    assert (
        sum(abs(e) <= 0.25 for e in p90),
        sum(abs(e) <= 0.15 for e in p90),
        round(100 * sum(abs(e) for e in p90) / len(p90)),
        sum(abs(e) <= 0.25 for e in mean_as),
    ) == (62, 47, 10, 32)  # (62, 46, 11, 32) until a prompt step's count followed the step before it
    assert (
        "on 62 (within 15% on 47, mean gap 10%; 46 and 11% until a prompt step's count of prompts followed the length of the step "
        "before it, 2026-12-07; 61, 45 and 12% until a preempted request's cached blocks were kept through a try to "
        "take it in that found no room, 2026-12-06; 46 until a prompt step took in each count of prompts at its own time, 2026-12-06; 44 until the matmuls' two terms combined as their root-sum-square, 45 until each attention call's work per request was charged, 44 until vLLM from 0.14 ran its host's time beside the GPU's"
        in " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    )
    got = _agreement(tpot, ttft)
    # (64, 63, 1.1, 11, 61, 4.5, 81) until a preempted request kept its cached blocks through a try that found no room;
    # (64, 63, 1.0, ...) until each count of prompts took its own time; (64, 64, 0.9, 5, 63, 3.0, 37) until a prompt step's
    # count of prompts followed the length of the step before it (2026-12-07)
    assert got == (64, 64, 1.1, 5, 63, 2.9, 37)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "| and a prompt's chunks at their own context (2026-12-04) | 63 | 1.0% | 10% | 61 | 4.5% | 81% |" in text
    assert "| and vLLM from 0.14's host time beside the GPU's (2026-12-04) | 63 | 1.0% | 11% | 61 | 4.5% | 81% |" in text
    assert "| and each attention call's work per request (2026-12-04) | 63 | 1.0% | 11% | 61 | 4.5% | 83% |" in text
    assert "| and the matmuls' two terms as their root-sum-square (2026-12-04) | 63 | 1.0% | 11% | 61 | 4.5% | 81% |" in text
    assert (
        "| and each count of prompts a step takes in at its own time (2026-12-06) | 63 | 1.1% | 11% | 61 | 4.5% | 81% |" in text
    )
    assert (
        "| and a preempted request's cached blocks kept through a try that finds no room (2026-12-06) | 64 | 0.9% | 5% | 63 | 3.0% | 37% |"
        in text
    )
    assert (
        "| and a prompt step's count of prompts by the length of the step before it (now) | 64 | 1.1% | 5% | 63 | 2.9% | 37% |"
        in text
    )


PP_SHAPES = [
    (model, gpu, tp, pp, prompt, output, share)
    for model, gpu, tp, pp in (
        ("llama3.1-405b", "a100-80gb", 8, 3),
        ("llama3.1-405b", "h100", 8, 2),
        ("llama3.1-70b", "a100-40gb", 4, 2),
        ("qwen3-32b", "l40s", 2, 2),
    )
    for prompt, output in ((1000, 200), (4000, 500), (200, 2000))
    for share in (0.05, 0.3, 0.6, 0.85)
]


@pytest.mark.slow
def test_the_closed_form_tracks_the_simulation_with_pp():
    """docs/simulation.md: on 48 PP shapes (four TP x PP replicas, prompts of 200 to 4,000 tokens, 5%
    to 85% of the rate at which the closed form's requests in flight reach what the pool holds), the
    closed form against one micro-batch's simulation of 3,000 requests (simulate's ``pp``): mean TPOT
    within 10% on all 48, mean gap 1.0%, the simulation never above; mean TTFT within 25% on
    48, mean gap 3.8%, worst 9%; none overloaded."""
    import numpy as np

    from kvcalc.engine.plan import _steady
    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    tpot, ttft, over = [], [], 0
    for model, gpu, tp, pp, prompt, output, share in PP_SHAPES:
        m, g, bf16, eng = resolve_model(model), resolve_gpu(gpu), kv_dtype("bf16"), engine("vllm")
        lo = _pool_rate(m, g, tp, pp, prompt, output, eng)
        t = Traffic(prompt=prompt, output=output, rate=lo * share)
        st = _steady(_Replica(m, g, tp, pp, t, bf16, eng), t, 1)
        n = 3000 * pp
        arr = np.cumsum(np.random.default_rng(0).exponential(1 / (lo * share), size=n))
        wl = Workload(arr, np.full(n, prompt), np.full(n, output), "t", "p")
        mns = eng.default_num_seqs(g.memory_runtime_bytes, g.name)
        s_ = SimSettings(prompt + output, mns, eng.schedule(m, g, prompt + output)[0])
        run_ = simulate(m, g, wl, s_, [("paged-16", 16)], eng, bf16, tp, pp=pp).runs[0]
        tpot.append(run_.tpot_s.mean / st[2] - 1)
        ttft.append(run_.ttft_s.mean / st[3] - 1)
        over += run_.overloaded
    got = (*_agreement(tpot, ttft), over)
    assert got == (48, 48, 0.9, 0, 48, 4.0, 12, 0)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "| PP (48 shapes; 1.0%, 3.8% and 9% until each count of prompts a step takes in took its own time, 2026-12-06) | 48 | 0.9% | 0% | 48 | 4.0% | 12% |"
        in text
    )


DISAGG_SHAPES = [
    (model, gpu, pre_tp, dec_tp, prompt, output, share)
    for model, gpu, pre_tp, dec_tp in (
        ("llama3.1-8b", "h100", 1, 1),
        ("llama3.1-70b", "h100", 2, 4),
        ("qwen3-32b", "h200", 1, 2),
        ("llama3.1-70b", "h200", 4, 8),
    )
    for prompt, output in ((1000, 200), (4000, 1000), (16000, 500))
    for share in (0.2, 0.5, 0.85)
]


@pytest.mark.slow
def test_the_disaggregated_closed_form_tracks_its_simulation():
    """docs/simulation.md: on 36 disaggregated shapes (four prefill/decode pairs, prompts of 1,000 to
    16,000 tokens, the decode instance at 20% to 85% of the most its pool carries in the closed form,
    prefill instances enough to keep each under 70% busy), the closed form (``_Prefill``,
    ``_decode_tpot``) against 3,000 simulated requests in each stage (``_verify_pools``' stages):
    decode TPOT within 10% on 36, mean gap 1.6%, the simulation at most 7% above; TTFT within 25% on 36, mean gap 2.1%, worst 23%; both stages keep up in 35 (the 36th, at 85%, keeps up over 12,000)."""
    import numpy as np

    from kvcalc.engine.plan import _decode_tpot, _kv_link, _Prefill, _Sim
    from kvcalc.engine.steptime import DEFAULTS, for_engine
    from kvcalc.engine.tiers import disaggregation

    tpot, ttft, kept = [], [], 0
    for model, gpu, pre_tp, dec_tp, prompt, output, share in DISAGG_SHAPES:
        m, g, bf16, eng = resolve_model(model), resolve_gpu(gpu), kv_dtype("bf16"), engine("vllm")
        c = for_engine(DEFAULTS, eng)
        t = Traffic(prompt=prompt, output=output, rate=1.0)
        dr, pr = _Replica(m, g, dec_tp, 1, t, bf16, eng, c), _Replica(m, g, pre_tp, 1, t, bf16, eng, c)
        lo, hi = 0.0, 1000.0
        for _ in range(40):  # the most one decode instance's pool carries
            lo, hi = (lo, (lo + hi) / 2) if _decode_tpot(dr, (lo + hi) / 2, output) is None else ((lo + hi) / 2, hi)
        rate, pf, x = share * lo, _Prefill(pr), 1
        while (pf.load(rate / x) or (1.0,))[0] > 0.7:
            x += 1
        dec = _decode_tpot(dr, rate, output)
        bw, alpha, _ = _kv_link(g, pr, x * pre_tp + dec_tp)
        transfer = disaggregation(m, g, prompt, 1.0, bf16).bytes_per_request / bw + alpha
        closed_ttft = pf.ttft_s(rate / x, prompt) + transfer + 1.5 * dec[0] + dec[2]
        sim = _Sim(m, np.full(3000, prompt), np.full(3000, output), bf16, eng, c, 0, None, t)
        a, b = {}, {}
        pre = sim.run(g, rate / x, pre_tp, 1, 1, "prefill", a)
        run_ = sim.run(g, rate, dec_tp, 1, 1, "decode", b)
        ta, tb = (a["first"] - a["sent"])[a["measured"]], (b["first"] - b["sent"])[b["measured"]]
        k = min(len(ta), len(tb))
        tpot.append(run_.tpot_s.mean / dec[0] - 1)
        ttft.append(float(np.mean(ta[:k] + transfer + tb[:k])) / closed_ttft - 1)
        kept += not (pre.overloaded or run_.overloaded)
    got = (*_agreement(tpot, ttft), kept)
    # (36, 36, 1.6, 7, 36, 5.5, 23, 35) until a prefill instance's mean TTFT took its chain's own wait, and
    # (36, 36, 1.6, 7, 36, 5.8, 23, 35) until a prefill instance's steps followed the prompts left waiting (2026-12-07);
    # (36, 35, 2.1, 15, 35, 6.5, 40, 35) until the kept blocks
    assert got == (36, 36, 1.6, 7, 36, 2.1, 23, 35)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "| disaggregated (36 shapes; 1.7%, 12%, 6.4% and 30% until the host's time ran beside the GPU's, 6.8% and 32% until each attention call's work per request was charged, 1.8% and 7.0% until the matmuls' root-sum-square, 2.0%, 14%, 6.9% and 44% until Qwen3's query and key norms were counted, 2026-12-05; mean TTFT gap 5.5% until a prefill instance's mean TTFT took its chain's own wait and 5.8% until its steps followed the prompts left waiting, 2026-12-07; 6.8% until each count of prompts a step takes in took its own time, 2026-12-06; 35, 2.1%, 15%, 35, 6.5% and 40% until a preempted request's cached blocks were kept through a try to take it in that found no room, the same day) | 36 | 1.6% | 7% | 36 | 2.1% | 23% |"
        in text
    )


@pytest.mark.slow
def test_the_closed_forms_p90_ttft_tracks_the_simulations():
    """docs/simulation.md and ``_ttft_at``: on 48 disaggregated shapes (four prefill/decode pairs,
    prompts of 1,000 to 16,000 tokens, the decode instance at 30% and 70% of the most its pool
    carries, prefill instances enough to keep each under 50% and under 80% busy), the closed form's
    p90 TTFT (``_pools_ttft``) against the p90 of 4,000 simulated requests in each stage: within 15%
    on 44, mean gap 8%, from 20% below to 5% above; the mean taken as the p90, as plan did until
    2026-12-04, lands 41% below on average."""
    import numpy as np

    from kvcalc.engine.plan import _decode_tpot, _kv_link, _pools_ttft, _Prefill, _Sim
    from kvcalc.engine.steptime import DEFAULTS, for_engine
    from kvcalc.engine.tiers import disaggregation

    gaps, mean_gaps = [], []
    for model, gpu, pre_tp, dec_tp in (
        ("llama3.1-8b", "h100", 1, 1),
        ("llama3.1-70b", "h100", 2, 4),
        ("qwen3-32b", "h200", 1, 2),
        ("llama3.1-70b", "h200", 4, 8),
    ):
        m, g, bf16, eng = resolve_model(model), resolve_gpu(gpu), kv_dtype("bf16"), engine("vllm")
        c = for_engine(DEFAULTS, eng)
        for prompt, output in ((1000, 200), (4000, 1000), (16000, 500)):
            t = Traffic(prompt=prompt, output=output, rate=1.0)
            dr, pr = _Replica(m, g, dec_tp, 1, t, bf16, eng, c), _Replica(m, g, pre_tp, 1, t, bf16, eng, c)
            lo, hi = 0.0, 1000.0
            for _ in range(40):  # the most one decode instance's pool carries
                lo, hi = (lo, (lo + hi) / 2) if _decode_tpot(dr, (lo + hi) / 2, output) is None else ((lo + hi) / 2, hi)
            for share in (0.3, 0.7):
                for busy in (0.5, 0.8):
                    rate, pf, x = share * lo, _Prefill(pr), 1
                    while (pf.load(rate / x) or (1.0,))[0] > busy:
                        x += 1
                    dec = _decode_tpot(dr, rate, output)
                    bw, alpha, _ = _kv_link(g, pr, x * pre_tp + dec_tp)
                    transfer = disaggregation(m, g, prompt, 1.0, bf16).bytes_per_request / bw + alpha
                    mean, p90 = _pools_ttft(pf, rate / x, prompt, transfer, dec[0], dec[2], dec[3], 90)
                    sim = _Sim(m, np.full(4000, prompt), np.full(4000, output), bf16, eng, c, 0, None, t)
                    a, b = {}, {}
                    sim.run(g, rate / x, pre_tp, 1, 1, "prefill", a)
                    sim.run(g, rate, dec_tp, 1, 1, "decode", b)
                    ta, tb = (a["first"] - a["sent"])[a["measured"]], (b["first"] - b["sent"])[b["measured"]]
                    k = min(len(ta), len(tb))
                    simulated = float(np.percentile(ta[:k] + transfer + tb[:k], 90))
                    gaps.append(p90 / simulated - 1)
                    mean_gaps.append(mean / simulated - 1)
    got = (
        len(gaps),
        sum(abs(e) <= 0.15 for e in gaps),
        round(100 * sum(abs(e) for e in gaps) / len(gaps)),
        round(-100 * min(gaps)),
        round(100 * max(gaps)),
        round(-100 * sum(mean_gaps) / len(mean_gaps)),
    )
    # (48, 46, 7, 17, 5, 40) until a prefill instance's mean TTFT took its chain's own wait, (48, 45, 7, 18, 5, 41)
    # until its steps followed the prompts left waiting (2026-12-07); (48, 44, 8, 20, 5, 41) until each count of
    # prompts took its own time
    assert got == (48, 48, 5, 14, 5, 38)


PLAN_QUESTIONS = [
    "--model llama3.1-8b --gpus h100 --rate 5 --prompt 1000 --output 200 --ttft 500ms --tpot 30ms",
    "--model llama3.1-8b --gpus h100 --rate 20 --prompt 2000 --output 500 --ttft 1s --tpot 20ms",
    "--model llama3.1-70b --gpus h100 --rate 4 --prompt 2000 --output 500 --ttft 1s --tpot 30ms",
    "--model llama3.1-70b --gpus h100 --rate 12 --prompt 2000 --output 500 --ttft 1s --tpot 30ms",
    "--model llama3.1-70b --gpus h200 --rate 8 --prompt 4000 --output 1000 --ttft 2s --tpot 40ms",
    "--model llama3.1-70b --gpus h100 --rate 26.4 --prompt 1000 --output 200 --ttft 1s --tpot 50ms --max-gpus 16",
    "--model qwen3-32b --gpus h100 --rate 10 --prompt 4000 --output 1000 --ttft 2s --tpot 30ms",
    "--model qwen3-32b --gpus a100-80gb --rate 3 --prompt 8000 --output 500 --ttft 3s --tpot 50ms",
    "--model deepseek-v3 --gpus h200 --kv-dtype fp8 --rate 5 --prompt 4k --output 1k --ttft 2s --tpot 50ms",
    "--model deepseek-v3 --gpus h200 --kv-dtype fp8 --rate 2 --prompt 8k --output 1k --ttft 3s --tpot 60ms",
    "--model qwen3-235b-a22b --gpus h200 --rate 4 --prompt 4000 --output 1000 --ttft 2s --tpot 50ms",
    "--model qwen3-30b-a3b --gpus h100 --rate 8 --prompt 4000 --output 1000 --ttft 1s --tpot 20ms",
    "--model llama3.1-405b --gpus h100 --rate 2 --prompt 2000 --output 300 --ttft 3s --tpot 80ms",
    "--model llama3.1-8b --gpus l40s --rate 3 --prompt 1500 --output 300 --ttft 1s --tpot 40ms",
    "--model mistral-7b --gpus a10g --rate 1 --prompt 1000 --output 200 --ttft 2s --tpot 60ms",
    "--model llama3.1-8b --gpus h100 --rate 0.3 --prompt 32000 --output 1000 --ttft 5s --tpot 30ms",
    "--model llama3.1-70b --gpus mi300x --rate 6 --prompt 3000 --output 400 --ttft 1.5s --tpot 35ms",
    "--model gpt-oss-120b --gpus h100 --rate 10 --prompt 2000 --output 1000 --ttft 1s --tpot 20ms",
]


@pytest.mark.slow
def test_plan_agrees_with_its_own_check_on_all_18_questions(cli):
    # docs/simulation.md: eighteen plan questions (dense and MoE models, one GPU to three servers,
    # aggregated, PP and disaggregated winners): the simulation's check agrees with the closed form's
    # winner on every one, judging the targets as the closed form does (TTFT at the p90, the mean
    # TPOT). Judging the p90 TPOT, it disagreed on Llama-3.1-405B at TP 8 x PP 2 (81.6 ms against
    # 80), until 2026-12-04.
    disagree = []
    for q in PLAN_QUESTIONS:
        d = cli("plan", *q.split(), "--json").json()
        best, checks = d["best"], d["verified"]
        own = next(v for v in checks if (v["gpus"], v["shape"]) == (best["gpus"], best["shape"]))
        if not own["ok"]:
            disagree.append((q.split()[1], own["note"]))
    assert disagree == []


@pytest.mark.slow
def test_prompts_of_many_lengths_queue_as_m_g_1():
    """docs/simulation.md, ``_prefill_wait``: a prefill instance (Llama-3.1-8B on one H100,
    Llama-3.1-70B at TP 4) takes prompts drawn lognormal about a median of 1,000 or 3,000 tokens at
    sigma 0.5 or 1.0 (squared coefficient of variation 0.28 to 1.67), at the rate that keeps it 50%
    or 80% busy; the closed form's mean TTFT against 4,000 simulated requests: with the
    Pollaczek-Khinchine wait, (1 + cv2) / 2 of the work a prompt holds, within 25% on 11 of 16,
    mean gap 24%, from 56% to 10% below; with one length (the chain's own wait since 2026-12-07), within 25% on 8, mean gap 36%."""
    import numpy as np

    from kvcalc.engine.plan import _Prefill, _Sim
    from kvcalc.engine.steptime import DEFAULTS, for_engine

    eng, bf16 = engine("vllm"), kv_dtype("bf16")
    c = for_engine(DEFAULTS, eng)
    gaps: dict[bool, list[float]] = {False: [], True: []}
    for model, gpu, tp in (("llama3.1-8b", "h100", 1), ("llama3.1-70b", "h100", 4)):
        m, g = resolve_model(model), resolve_gpu(gpu)
        for median in (1000, 3000):
            for sigma in (0.5, 1.0):
                lengths = np.round(median * np.exp(sigma * np.random.default_rng(1).standard_normal(20_000)))
                lengths = np.minimum(np.maximum(lengths, 1), 30_000).astype(int)
                mean, cv2 = int(round(lengths.mean())), float(lengths.var() / lengths.mean() ** 2)
                for busy in (0.5, 0.8):
                    rep = _Replica(m, g, tp, 1, Traffic(prompt=mean, output=300, rate=1.0), bf16, eng, c)
                    pf, lo, hi = _Prefill(rep), 0.0, 1000.0
                    for _ in range(50):  # the rate at which the instance is `busy` of the time
                        got = pf.load((lo + hi) / 2)
                        lo, hi = (lo, (lo + hi) / 2) if got is None or got[0] > busy else ((lo + hi) / 2, hi)
                    t = Traffic(prompt=mean, output=300, rate=lo)
                    sim = _Sim(m, lengths[:4000], np.full(4000, 300), bf16, eng, c, 0, None, t)
                    keep: dict[str, Any] = {}
                    sim.run(g, lo, tp, 1, 1, "prefill", keep)
                    simulated = float((keep["first"] - keep["sent"])[keep["measured"]].mean())
                    for spread in (False, True):
                        t2 = Traffic(prompt=mean, output=300, rate=1.0, prompt_cv2=cv2 if spread else 0.0)
                        closed = _Prefill(_Replica(m, g, tp, 1, t2, bf16, eng, c)).ttft_s(lo, mean)
                        gaps[spread].append(closed / simulated - 1)
    summary = {k: (sum(abs(e) <= 0.25 for e in v), round(100 * sum(abs(e) for e in v) / len(v))) for k, v in gaps.items()}
    # {True: (11, 20), False: (8, 39)} until a prefill instance's mean TTFT took its chain's own wait (one length: the
    # False column) and its steps each prompt over its own context; {True: (11, 21), False: (6, 40)} until its steps
    # followed the prompts left waiting (2026-12-07);
    # False: (5, 40) until each count of prompts took its own time
    assert summary == {True: (11, 24), False: (8, 36)}
    # (-45, -9) until a prefill instance's steps priced each prompt over its own context, (-46, -9) until they followed
    # the prompts left waiting (2026-12-07); (-39, -7) until each count of prompts took its own time
    assert (round(100 * min(gaps[True])), round(100 * max(gaps[True]))) == (-56, -10)


@given(
    lam=st.floats(0.01, 100.0),
    load=st.floats(0.01, 0.99),
    rest=st.floats(0.0, 10.0),
    percentile=st.sampled_from([50, 90, 99]),
)
@settings(max_examples=200, deadline=None)
def test_the_ttft_percentile_is_m_m_1s_exactly_for_its_wait(lam, load, rest, percentile):
    # M/M/1 at arrival rate lam and load rho: the wait is 0 with chance 1 - rho, else exponential,
    # P(W > t) = rho e^-(mu - lam) t (Kleinrock, Queueing Systems I, 3.2), so its q quantile solves
    # rho e^-(mu - lam) t = 1 - q; a TTFT of that wait plus a fixed rest is the rest plus it.
    from kvcalc.engine.plan import _ttft_at

    mu = lam / load
    mean_wait = load / (mu - lam)
    q = percentile / 100
    quantile = math.log(load / (1 - q)) / (mu - lam) if load > 1 - q else 0.0
    assert _ttft_at(rest + mean_wait, [(mean_wait, load)], percentile) == pytest.approx(rest + quantile, rel=1e-9, abs=1e-12)


class _FixedSeat:
    """A replica whose every step takes 10 ms with nothing beside it and whose prompt takes 1 s."""

    lanes = 1
    cv2 = 0.0  # prompts of one length
    graph_max = None  # no CUDA-graph edge

    def __init__(self, seats: int):
        self.capacity, self.max_seqs, self.seq_limit = seats, 10 * seats, 10 * seats

    def step(self, decodes: float, rate: float, batch: float | None = None) -> tuple[float, str, float, float, float]:
        return 0.01, "memory", 0.0, 0.0, 0.0

    def ttft(self, decodes: float, t_step: float, u: float = 0.0, rate: float = 0.0) -> float:
        return 0.004 + 1.0

    def recv_wait(self, decodes: float, t_step: float, u: float) -> float:
        return 0.0  # no receive interval

    def seen(self, decodes: float, users: int | None) -> float:
        return 1.0


@given(seats=st.integers(1, 40), load=st.floats(0.01, 0.97))
@settings(max_examples=60, deadline=None)
def test_the_pool_chain_waits_as_erlang_c_for_any_seats_and_load(seats, load):
    # M/M/c with c seats and A = load x c erlangs: P(wait) = C(c, A), mean wait C / (c / S - x).
    from kvcalc.engine.plan import _pool

    S = 2.0
    A = load * seats
    x = A / S
    terms = [1.0]
    for k in range(1, seats):
        terms.append(terms[-1] * A / k)
    top = terms[-1] * A / seats / (1 - load)
    erlang_c = top / (sum(terms) + top)
    got = _pool(_FixedSeat(seats), x, 101, 0.004, A)  # type: ignore[arg-type]
    assert got is not None
    assert got[0] == pytest.approx(0.01, rel=1e-9)
    assert got[1] == pytest.approx(0.004 + erlang_c / (seats / S - x) + 1.0, rel=1e-6)
    # A decode instance: requests arrive with their first token and hold a seat for their 100 tokens,
    # S = 1 s, so at twice the rate it is offered the same A erlangs and waits C / (c / 1 - 2x).
    got = _pool(_FixedSeat(seats), 2 * x, 101, 0.0, A, decode_only=True)  # type: ignore[arg-type]
    assert got is not None
    assert got[0] == pytest.approx(0.01, rel=1e-9)
    assert got[1] == pytest.approx(erlang_c / (seats - 2 * x), rel=1e-6, abs=1e-12)


def test_the_pool_chain_is_erlang_c_when_a_request_holds_its_seat_a_fixed_time():
    """docs/simulation.md: with S(k) constant the chain is the M/M/c queue, and its wait for a seat is
    Erlang C's. A stub replica: every step 10 ms (no prompt work beside it), 1 s to the first token,
    100 tokens after it: S = 1 + 100 x 0.01 = 2 s; 4 requests/s offer A = 8 erlangs to c = 10 seats."""
    from kvcalc.engine.plan import _pool

    A, c, S = 8.0, 10, 2.0
    term = A**c / math.factorial(c) * c / (c - A)
    erlang_c = term / (sum(A**k / math.factorial(k) for k in range(c)) + term)
    wait = erlang_c * S / (c - A)  # W_q = C(c, A) / (c mu - lambda), mu = 1 / S
    got = _pool(_FixedSeat(c), 4.0, 101, 0.004, A)  # type: ignore[arg-type]
    assert got is not None
    assert got[0] == pytest.approx(0.01, rel=1e-12)
    assert got[1] == pytest.approx(0.004 + wait + 1.0, rel=1e-9)
    # At 5 requests/s the 10 seats would need 10 erlangs: no steady state.
    assert _pool(_FixedSeat(c), 5.0, 101, 0.004, 10.0) is None  # type: ignore[arg-type]


def test_plan_near_a_memory_limit_agrees_with_its_simulation(cli):
    """Llama-3.1-8B, 128,000 + 2,000 tokens at 0.1 requests/s on MI355Xs, TTFT 10 s, TPOT 50 ms. One
    GPU's pool holds 15 such requests and its mean in flight (10) is under that, but its pool is full
    often enough that arrivals queue: the closed form over the pool's states puts its mean TTFT past
    10 s, as the simulation finds (p90 in minutes), so both pick 2 GPUs, where before the closed form
    passed 1."""
    ask = ("plan", "--model", "llama3.1-8b", "--gpus", "mi355x", "--prompt", "128000", "--output", "2000", "--rate", "0.1")
    d = cli(*ask, "--ttft", "10s", "--tpot", "50ms", "--json").json()
    assert d["best"]["gpus"] == 2
    # Nothing the closed form passes on one GPU for the simulation to refute, and the simulation
    # confirms its choice.
    assert not [v for v in d["verified"] if v["gpus"] == 1]
    first = d["verified"][0]
    assert (first["gpus"], first["shape"], first["ok"]) == (2, d["best"]["shape"], True)


def test_users_out_of_step_agree_with_the_simulation_and_identical_lengths_do_not():
    """docs/simulation.md: Llama-3.1-70B at TP 4 on H100s, 16 users, 1,000 + 200 tokens. The closed
    form takes the users' prompts as a steady stream (108 ms TTFT); the simulation replaying identical
    lengths keeps its clients in step (771 ms); with lengths lognormal about the same means at sigma
    0.1 it agrees with the closed form (103 ms TTFT against 108, 21.4 ms TPOT against 21.7)."""
    import numpy as np

    from kvcalc.engine.plan import _steady
    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    m, g, bf16, eng = resolve_model("llama3.1-70b"), resolve_gpu("h100"), kv_dtype("bf16"), engine("vllm")
    rng = np.random.default_rng(1)
    got = []
    for sigma in (0.0, 0.1):
        n = 2000
        P = np.maximum(1, np.round(1000 * np.exp(sigma * rng.standard_normal(n) - sigma**2 / 2))).astype(int)
        O = np.maximum(2, np.round(200 * np.exp(sigma * rng.standard_normal(n) - sigma**2 / 2))).astype(int)
        t = Traffic(prompt=int(P.mean()), output=int(O.mean()), users=16)
        st = _steady(_Replica(m, g, 4, 1, t, bf16, eng), t, 1)
        assert st is not None
        wl = Workload(np.zeros(n), P, O, "t", "p")
        s = SimSettings(
            int(P.max() + O.max()),
            eng.default_num_seqs(g.memory_runtime_bytes, g.name),
            eng.schedule(m, g, 1200)[0],
            concurrency=16,
        )
        run_ = simulate(m, g, wl, s, [("paged-16", 16)], eng, bf16, 4).runs[0]
        got.append((round(st[3] * 1e3), round(run_.ttft_s.mean * 1e3), round(st[2] * 1e3, 1), round(run_.tpot_s.mean * 1e3, 1)))
    assert got[0][:2] == (110, 772) and got[0][1] > 5 * got[0][0]
    assert got[1] == (110, 104, 21.9, 21.6)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "the closed form's mean TTFT is 110 ms; simulated with every length the same, 772 ms;" in text
    assert "at sigma 0.1 (about 10% apart), 104 ms (the closed form 110), and the mean TPOT 21.6 ms against 21.9" in text


def test_a_disaggregated_winner_is_checked_by_simulating_its_two_pools(cli):
    # DeepSeek-V3 in fp8 on H200s at 5 requests/s of 4k + 1k tokens: the closed form's best is
    # disaggregated (16 GPUs). The simulation runs one prefill instance and one decode instance of it
    # and agrees; before 2026-12-04 it ran aggregated deployments only, and the first line said so.
    ask = ("plan", "--model", "deepseek-v3", "--gpus", "h200", "--kv-dtype", "fp8", "--rate", "5", "--prompt", "4k")
    r = cli(*ask, "--output", "1k", "--ttft", "2s", "--tpot", "50ms")
    d = cli(*ask, "--output", "1k", "--ttft", "2s", "--tpot", "50ms", "--json").json()
    best, first_check = d["best"], d["verified"][0]
    assert best["mode"] == first_check["mode"] == "disaggregated"
    assert (first_check["shape"], first_check["gpus"]) == (best["shape"], best["gpus"])
    assert first_check["ok"] and first_check["offered_per_s"] == 5
    # The decode instance's mean TPOT against the closed form's at the same rate: within 10% (issue 17).
    assert abs(first_check["tpot_mean_s"] / first_check["closed_form_tpot_s"] - 1) < 0.01  # docs/simulation.md: within 1%
    first = " ".join(r.out.split("\n\n")[0].split())
    assert first.startswith(f"Fewest GPUs: {best['gpus']} x h200 (1 x DP2 TP4 EP8 prefill + 1 x DP4 TP2 EP8 decode)")
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "the closed form's winner (1 x DP 2 x TP 4 x EP 8 prefill + 1 x DP 4 x TP 2 x EP 8 decode) meets" in doc
    assert "meets the targets; the simulation agrees" in first


def test_a_pp_replica_simulates_as_one_micro_batch():
    # Llama-3.1-405B at TP 8 x PP 2 on H100s, 400 requests of 1,000 + 100 tokens at 0.05 a second:
    # the run is one of the two micro-batches in flight, every 2nd request; a GPU's pool holds its
    # stage's 63 of the 126 layers, 126 x 8 KV heads x 128 x 2 (K, V) x 2 B / 8 = 64,512 B a token
    # over the whole model against 32,256 a stage, so a micro-batch's share of the tokens it holds,
    # at the whole model's bytes, is the GPU's pool itself (x 64,512 / 32,256 / 2); vLLM V1's one
    # scheduler holds max_num_seqs (1,024 on an H100) over both micro-batches, 512 each; and at this
    # rate each token is one step of the whole model at batch 1.
    import numpy as np

    from kvcalc.engine.simulate import SimSettings, Workload, simulate
    from kvcalc.engine.steptime import StepModel

    m, h, bf16, eng = resolve_model("llama3.1-405b"), resolve_gpu("h100"), kv_dtype("bf16"), engine("vllm")
    n = 400
    arr = np.cumsum(np.random.default_rng(0).exponential(1 / 0.05, size=n))
    wl = Workload(arr, np.full(n, 1000), np.full(n, 100), "t", "p")
    st_ = SimSettings(1100, eng.default_num_seqs(h.memory_runtime_bytes, h.name), eng.schedule(m, h, 1100)[0])
    r = simulate(m, h, wl, st_, [("paged-16", 16)], eng, bf16, 8, pp=2)
    pool = fit(m, h, FitInputs(seq=1100, tp=8, pp=2, kv_dtype=bf16, max_num_seqs=1024)).kv_pool_bytes
    assert (r.requests, r.kv_bytes_per_token, r.pool_bytes, r.max_num_seqs) == (200, 64512, pool * 64512 // 32256 // 2, 512)
    step = StepModel(m, h, bf16, 8, 2, engine=eng).step(1, 1050).t_step_s
    assert r.runs[0].tpot_s.p50 == pytest.approx(step, rel=0.02)
    assert "TP 8 x PP 2: the runs are one PP micro-batch's, serving every 2nd request" in r.assumptions[0]


def test_a_pp_winner_is_checked_by_simulation(cli):
    # Llama-3.1-405B on A100 80GBs at 1 request/s of 1,000 + 200 tokens: the closed form's best is
    # TP 8 x PP 3 (24 GPUs); the simulation, one micro-batch of it, agrees, its mean TPOT within 10%
    # of the closed form's. Before 2026-12-04 the simulation ran no PP and checked nothing here.
    ask = ("plan", "--model", "llama3.1-405b", "--gpus", "a100-80gb", "--rate", "1", "--prompt", "1000", "--output", "200")
    d = cli(*ask, "--ttft", "5s", "--tpot", "100ms", "--json").json()
    best, check = d["best"], d["verified"][0]
    assert (best["tp"], best["pp"], best["gpus"]) == (check["tp"], check["pp"], check["gpus"]) == (8, 3, 24)
    assert check["ok"] and abs(check["tpot_mean_s"] / check["closed_form_tpot_s"] - 1) < 0.10
    first = cli(*ask, "--ttft", "5s", "--tpot", "100ms").out.split("\n")[0]
    assert first == "Fewest GPUs: 24 x a100-80gb (TP8 PP3) meets the targets; the simulation agrees"


def test_a_decode_instance_runs_no_prompt_step_of_its_own_under_any_engine(cli):
    # SGLang runs waiting prompts as steps of their own, but its decode instance takes a request with
    # the first token its prefill instance sent, without a step (disaggregation/decode.py, 0.5.3); the
    # simulated decode instance lets what is left of a prompt ride beside the decodes under every
    # engine. Ran as SGLang's prompt steps, the decode instance's mean TPOT was 22% over the closed
    # form's (Llama-3.1-70B on H100s at 12 requests/s of 2,000 + 500); it is now within 2%.
    ask = ("plan", "--model", "llama3.1-70b", "--gpus", "h100", "--rate", "12", "--prompt", "2000", "--output", "500")
    d = cli(*ask, "--ttft", "1s", "--tpot", "30ms", "--engine", "sglang", "--json").json()
    checks = [v for v in d["verified"] if v["mode"] == "disaggregated"]
    assert checks and all(abs(v["tpot_mean_s"] / v["closed_form_tpot_s"] - 1) < 0.02 for v in checks)


def test_a_disaggregated_deployment_simulates_as_its_two_pools_added_up():
    # One Llama-3.1-8B prefill instance and one decode instance on H100s, 1,000 + 100 tokens at 0.02
    # requests/s: nothing queues, so a request's TTFT is its request path (4 ms + 1.5 us a prompt
    # token, x 0.5 to 1.5: 5.5 ms at the median), its prompt's prefill steps, the KV's transfer
    # (given: 10 ms) and its decode instance's first step, which computes the prompt's last 8 tokens
    # (992 of the 1,000 are whole 16-token blocks in place); and its TPOT is a decode step at batch 1.
    # Each part from the step-time model on its own; the simulation joins the two stages.
    import numpy as np

    from kvcalc.engine.plan import Deployment, _Sim, _verify_pools
    from kvcalc.engine.steptime import DEFAULTS, StepModel, for_engine

    m, h, bf16, eng = resolve_model("llama3.1-8b"), resolve_gpu("h100"), kv_dtype("bf16"), engine("vllm")
    n = 400
    P, O = np.full(n, 1000), np.full(n, 100)
    c = for_engine(DEFAULTS, eng)
    d = Deployment(
        gpu=h.name, tp=1, pp=1, replicas=1, gpus=2, cost_per_hour=None, in_flight_per_replica=0.0,
        capacity_per_replica=1, tpot_s=0.0, ttft_s=0.0, step_bound_by="memory", memory_share=0.0, binding="TTFT",
        use={}, feasible=True, mode="disaggregated", prefill_pool="1 x TP 1", decode_pool="1 x TP 1",
        kv_transfer_s=0.010, prefill_instances=1, prefill_tp=1, prefill_dp=1, prefill_ep=1,
    )  # fmt: skip
    sim = _Sim(m, P, O, bf16, eng, c, 0, None, Traffic(prompt=1000, output=100, rate=0.02))
    (v,) = _verify_pools(sim, h, d, 0.02, SLO(ttft_s=10.0, tpot_s=1.0), "p50", 50, 0, 64)
    sm = StepModel(m, h, bf16, 1, constants=c, engine=eng)
    budget = eng.schedule(m, h, 1100)[0]
    expect = 0.004 + 1.5e-6 * 1000 + sm.prefill_s(1000, budget) + 0.010 + sm.step(0, 0.0, 8, 1000).t_step_s
    assert v.ok and v.mode == "disaggregated" and v.gpus == 2
    assert v.ttft_s == pytest.approx(expect, rel=0.03)
    assert v.tpot_s == pytest.approx(sm.step(1, 1050).t_step_s, rel=0.03)


def test_a_ttft_target_is_judged_at_its_percentile_as_the_simulation_judges_it(cli):
    # Llama-3.1-70B on H100s at 12 requests/s of 2,000 + 500 tokens, TTFT 1 s at p90. On its mean
    # TTFT (652 ms) the closed form passed 4 x TP 2 prefill + 1 x TP 8 decode on 16 GPUs, which the
    # simulation found at a p90 of 1,436 ms (until 2026-12-04). Judged at the p90, the prompts' wait
    # for prefill capacity taken as exponential when met, it picks a fifth prefill instance (24 GPUs:
    # three servers), and the simulation agrees.
    ask = ("plan", "--model", "llama3.1-70b", "--gpus", "h100", "--rate", "12", "--prompt", "2000", "--output", "500")
    d = cli(*ask, "--ttft", "1s", "--tpot", "30ms", "--json").json()
    best, check = d["best"], d["verified"][0]
    assert (best["shape"], best["gpus"]) == ("5 x (TP 2) prefill + 1 x (TP 8) decode", 24)
    assert d["slo"]["percentile"] == 90 and best["ttft_s"] < best["ttft_at_percentile_s"] <= 1.0
    assert check["ok"] and check["ttft_s"] <= 1.0 and check["prefill_pool"] == "5 x TP 2"
    first_line = " ".join(cli(*ask, "--ttft", "1s", "--tpot", "30ms").out.split("\nllama3.1-70b, ")[0].split())
    assert first_line == "Fewest GPUs: 24 x h100-sxm (5 x TP2 prefill + 1 x TP8 decode) meets the targets; the simulation agrees"
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        f"it picks 5 x TP 2 prefill + 1 x TP 8 decode on 24 GPUs, at a p90 TTFT of {round(best['ttft_at_percentile_s'] * 1e3):,} "
        f"ms (mean {round(best['ttft_s'] * 1e3):,}); simulated, {round(check['ttft_s'] * 1e3):,} ms" in text
    )


def test_a_pool_the_simulation_finds_short_gets_an_instance_more():
    # The same load on four TP 2 prefill instances (16 GPUs), as the mean-judged closed form had it:
    # the prompts' queue puts the simulated p90 TTFT past 1 s, so the check adds a prefill instance
    # (the pool that holds most of the TTFT), which rounds up to three 8-GPU servers, and leaves the
    # decode pool as it was.
    import dataclasses

    from kvcalc.engine.plan import _Sim, _verify_pools
    from kvcalc.engine.steptime import DEFAULTS, for_engine

    m, h, bf16, eng = resolve_model("llama3.1-70b"), resolve_gpu("h100"), kv_dtype("bf16"), engine("vllm")
    t = Traffic(prompt=2000, output=500, rate=12.0)
    slo = SLO(ttft_s=1.0, tpot_s=0.030)
    best = plan(m, [h], t, slo, bf16, eng).best
    assert best is not None and best.prefill_instances == 5
    four = dataclasses.replace(best, prefill_instances=4, gpus=16)
    P, O = np.full(2000, 2000), np.full(2000, 500)
    sim = _Sim(m, P, O, bf16, eng, for_engine(DEFAULTS, eng), 0, None, t)
    first, second = _verify_pools(sim, h, four, 12.0, slo, "p90", 90, 4, 64)[:2]
    assert first.prefill_pool == "4 x TP 2" and not first.ok and first.note.startswith("TTFT p90 ") and first.ttft_s > 1.0
    assert (second.prefill_pool, second.decode_pool, second.gpus, second.ok) == ("5 x TP 2", "1 x TP 8", 24, True)


def test_a_rate_the_pools_cannot_carry_is_short_of_memory_not_prefill(cli):
    # Llama-3.1-8B, 3 requests/s of 120,000 + 8,000 tokens on H100s, at most 64: a TP 1 replica's
    # prompts alone take 3 / 64 x about 8 s a prompt, under half its time, but its pool holds 3 such
    # requests and each stays about a minute decoding 8,000 tokens, so its full pool cannot carry
    # its share (3 / 64 x 70 s > 3): the shortfall is memory's, with no steady state, not prefill's.
    ask = ("plan", "--model", "llama3.1-8b", "--gpus", "h100", "--rate", "3", "--prompt", "120000", "--output", "8000")
    d = cli(*ask, "--closed-form", "--json").json()
    assert d["best"] is None
    near = d["nearest"]
    assert near["shortfall"] == "memory past its limit (no steady state at this rate)"
    assert near["use"]["prefill"] < 0.5 and near["capacity_per_replica"] == 3


@pytest.mark.parametrize(
    "model,gpu,tp,prompt,output",
    [("llama3.1-8b", "h100", 1, 32000, 1000), ("qwen3-32b", "h100", 2, 200, 2000), ("llama3.1-8b", "mi355x", 1, 128000, 2000)],
)
def test_more_load_never_shortens_the_closed_forms_ttft_or_tpot(model, gpu, tp, prompt, output):
    # From a thousandth of a request a second to the rate the replica cannot carry, 150 rates apart
    # by equal ratios: the mean TTFT and TPOT never fall as the rate rises (the pool's states are
    # evaluated on a grid that does not move with the load; one that did made TTFT dip by up to 1.9%).
    m, g, bf16, eng = resolve_model(model), resolve_gpu(gpu), kv_dtype("bf16"), engine("vllm")
    prev = None
    for i in range(150):
        rate = 1e-3 * 1e5 ** (i / 149)
        t = Traffic(prompt=prompt, output=output, rate=rate)
        st = _steady(_Replica(m, g, tp, 1, t, bf16, eng), t, 1)
        if st is None:
            break
        if prev is not None:
            assert st[2] >= prev[2] * (1 - 1e-12) and st[3] >= prev[3] * (1 - 1e-12), rate
        prev = st
    assert prev is not None and i > 20


def test_plan_says_how_much_of_a_ttft_is_the_wait_for_a_seat(cli):
    # Llama-3.1-8B on one H100 at 32,000 + 1,000 tokens: its pool holds 13 such requests. At 0.26
    # requests/s about 8 are in flight and the pool is often full, so part of the mean TTFT is the wait
    # for a seat (the pool's states); the line says so with the JSON's figures. At 0.05/s the pool is
    # never full and no line is printed.
    ask = ("plan", "--model", "llama3.1-8b", "--gpus", "h100", "--max-gpus", "1", "--prompt", "32000", "--output", "1000")
    d = cli(*ask, "--rate", "0.26", "--closed-form", "--json").json()
    b = d["best"]
    assert b["capacity_per_replica"] == 13 and 0 < b["seat_wait_s"] < b["ttft_s"] and 0 < b["pool_full_share"] < 1
    text = " ".join(cli(*ask, "--rate", "0.26", "--closed-form").out.split())
    ms = lambda t: f"{t * 1e3:,.1f}" if t < 1 else f"{t * 1e3:,.0f}"
    said = f"its mean TTFT of {ms(b['ttft_s'])} ms includes {ms(b['seat_wait_s'])} ms waiting for a seat: its KV pool is full {b['pool_full_share']:.0%} of the time"
    assert said in text
    # One replica's place is said once.
    assert b["placement"] == "1 of one 8-GPU node"
    light = cli(*ask, "--rate", "0.05", "--closed-form", "--json").json()["best"]
    assert light["seat_wait_s"] < 1e-6 * light["ttft_s"]
    assert "waiting for a seat" not in cli(*ask, "--rate", "0.05", "--closed-form").out
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    shown = f"waits {ms(b['seat_wait_s'])} ms of its {ms(b['ttft_s'])} ms, its 13-request pool full {b['pool_full_share']:.0%} of the time"
    assert shown in doc


def test_plans_decode_assumption_names_sglangs_largest_decode_graph_on_each_gpu():
    # SGLang 0.5.20 on (server_args / arg_groups/memory_hook.py, 0.5.23): 80-160 GiB GPUs capture decode
    # batches up to 256 at tp_size < 4 and 512 from 4; over 160 GiB 512 at any TP.
    from kvcalc.engine.engines import engine
    from kvcalc.engine.plan import _eager_decode_words
    from kvcalc.engine.steptime import DEFAULTS

    words = _eager_decode_words(engine("sglang"), [resolve_gpu("h100-sxm"), resolve_gpu("b200")], DEFAULTS)
    assert "(h100-sxm: 256 requests at TP < 4, 512 at TP >= 4; b200: 512 requests) without one" in words
    assert "42 us a kernel" in words
    assert _eager_decode_words(engine("vllm"), [resolve_gpu("h100-sxm")], DEFAULTS) == ""


def test_plans_decode_assumption_says_when_the_host_time_runs_beside_the_gpus(cli):
    # vLLM from 0.14 schedules ahead (vllm/config/vllm.py, 0.14.0); 0.12 and 0.13 do not.
    ask = ("plan", "--model", "llama3.1-8b", "--gpus", "h100", "--rate", "2", "--prompt", "1000", "--output", "200")
    now = cli(*ask, "--json").json()["assumptions"]
    old = cli(*ask, "--engine", "vllm@0.12", "--json").json()["assumptions"]
    said = "schedules the next step while the GPU runs this one, so the host's per-step and per-request time runs beside"
    assert any(said in a for a in now) and not any(said in a for a in old)


@pytest.mark.slow
def test_the_closed_form_tracks_the_simulation_under_sglang():
    """docs/simulation.md: the 64 shapes above under SGLang, whose prompts run as steps of their own
    while the decodes wait, whose decode batches past its largest CUDA graph run eagerly and whose
    overlap scheduler runs the host's time beside the GPU's: the closed form against 3,000 simulated
    requests each, at the rates where its requests in flight reach what the pool holds."""

    tpot, ttft, kept = [], [], 0
    for model, gpu, tp, prompt, output, share in AGREEMENT_SHAPES:
        m, g, eng = resolve_model(model), resolve_gpu(gpu), engine("sglang")
        lo = _pool_rate(m, g, tp, 1, prompt, output, eng)
        st, run_ = _closed_and_simulated(model, gpu, tp, prompt, output, lo * share, "sglang")
        tpot.append(run_.tpot_s.mean / st[2] - 1)
        ttft.append(run_.ttft_s.mean / st[3] - 1)
        kept += not run_.overloaded
    got = (*_agreement(tpot, ttft), kept)
    # (2.6% mean TTFT gap until a prompt step took in a mean step's prompts, 2026-12-06)
    # (2.7% mean TTFT gap and 32% worst until SGLang's admission tests were modelled, 2026-12-07)
    # (worst TTFT gap 29% until a retracted request rejoined SGLang's waiting queue at its tail, 2026-12-07)
    # 1.1 until each count of prompts took its own time; (64, 64, 1.2, 5, 62, 2.6, 26, 64) until SGLang's overlap loop
    # took requests in a step late (2026-12-07): Llama-3.1-70B at TP 8 on H200s, 1,000 + 200 tokens at 85%, from 8.9%
    # to 10.3% (the simulation's TPOT below the closed form's); (64, 63, 1.3, 5, 64, 2.5, 25, 64) and -10.3 until a prompt
    # step's count of prompts followed the length of the step before it (2026-12-07)
    assert got == (64, 64, 1.1, 5, 64, 2.6, 25, 64)
    assert round(100 * min(tpot), 1) == -7.1
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "| the same 64 shapes under SGLang (2026-12-04; 1.0% until the matmuls' root-sum-square; mean TTFT gap 2.6% until a prompt "
        "step took in a mean step's prompts, 2026-12-06; mean TPOT gap 1.1% until each count of prompts a step takes in took its "
        "own time, the same day; 2.7% and worst 32% until SGLang's admission tests were modelled, "
        "2026-12-07; worst 29% until a retracted request rejoined SGLang's waiting queue at its tail, the same day; 64 within "
        "10% on TPOT, 1.2%, 62 within 25% on TTFT, 2.6% and 26% until SGLang's overlap loop took requests in a step late, "
        "the same day, above; 63 within 10% on TPOT, 1.3% and 2.5% until a prompt step's count of prompts followed the length "
        "of the step before it, the same day) | 64 | 1.1% | 5% | 64 | 2.6% | 25% |" in text
    )
    assert (
        "Llama-3.1-70B at TP 8 on H200s, 1,000 + 200 tokens at 85% of that rate, where the simulation's TPOT was 10.3% below "
        "the closed form's (8.9% before; 7.1% below since)" in text
    )
    assert "the 64 shapes of `plan`'s check under SGLang (below) moved from a worst TTFT gap of 29% to 26%" in text


@pytest.mark.slow
def test_the_closed_form_tracks_sglangs_dp_attention_lockstep():
    """docs/simulation.md (prompt steps under DP attention): 36 SGLang 0.5.9 DP-attention deployments,
    three prompt/output shapes at 0.1, 0.5 and 0.85 of the rate at which the closed form's requests in
    flight reach what the pool holds, against one rank's share of 4,000 x DP simulated requests:
    TPOT within 10% on all 36, mean gap 1.4%, worst 8%; without the rule 36, 1.4% and 5%."""
    import dataclasses

    import numpy as np

    from kvcalc.engine.plan import _steady
    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    def grid(eng: Any) -> tuple[int, float, int]:
        gaps = []
        for model, gpu, tp, dp in (
            ("deepseek-v3", "h200", 1, 8),
            ("qwen3-235b-a22b", "h200", 1, 8),
            ("qwen3-30b-a3b", "h100", 1, 4),
            ("deepseek-v3", "b200", 2, 4),
        ):
            m, g, bf16 = resolve_model(model), resolve_gpu(gpu), kv_dtype("bf16")
            for prompt, output in ((1000, 200), (4000, 500), (200, 1000)):
                lo, hi = 0.0, 1000.0
                for _ in range(40):
                    mid = (lo + hi) / 2
                    t = Traffic(prompt=prompt, output=output, rate=mid)
                    rep = _Replica(m, g, tp, 1, t, bf16, eng, dp=dp, ep=dp * tp)
                    st = _steady(rep, t, 1)
                    lo, hi = (mid, hi) if st is not None and st[0] <= rep.capacity else (lo, mid)
                for share in (0.1, 0.5, 0.85):
                    rate = lo * share
                    t = Traffic(prompt=prompt, output=output, rate=rate)
                    st = _steady(_Replica(m, g, tp, 1, t, bf16, eng, dp=dp, ep=dp * tp), t, 1)
                    assert st is not None
                    n = 4000 * dp
                    arr = np.cumsum(np.random.default_rng(0).exponential(1 / rate, size=n))
                    wl = Workload(arr, np.full(n, prompt), np.full(n, output), "t", "p")
                    settings_ = SimSettings(
                        prompt + output,
                        eng.default_num_seqs(g.memory_runtime_bytes, g.name),
                        eng.schedule(m, g, prompt + output)[0],
                    )
                    run_ = simulate(m, g, wl, settings_, [("paged-16", 16)], eng, bf16, tp, dp=dp, ep=dp * tp).runs[0]
                    gaps.append(abs(st[2] / run_.tpot_s.mean - 1))
        return sum(x <= 0.10 for x in gaps), round(100 * float(np.mean(gaps)), 1), round(100 * max(gaps))

    on = engine("sglang@0.5.9")
    # (33, 3.3% and 17% until each count of prompts a step takes in took its own time; 3.4% and 24% until a prompt step
    # took in a mean step's prompts, 2026-12-06)
    # (36, 1.3, 8) until DP attention's gather and scatter took NCCL's measured times; (36, 1.4, 8) until SGLang's
    # overlap loop took requests in a step late, 2026-12-07
    assert grid(on) == (36, 1.4, 9)
    # (34, 3.3, 36), (34, 4.0, 50) before; (36, 1.4, 5) until the overlap loop's late admission
    assert grid(dataclasses.replace(on, dp_prompt_lockstep=False)) == (36, 1.5, 5)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "the two agree within 10% on TPOT on all 36, mean gap 1.4%, worst 9% (worst 8% until SGLang's overlap loop took "
        "requests in a step late, 2026-12-07, above; 1.3% until data-parallel attention's gather and "
        "scatter took NCCL's measured times, 2026-12-07; 33, 3.3% and 17% until each count of prompts a "
        "step takes in took its own time, a rank being dealt every DP-th request, 2026-12-06, below; 3.4% and 24% until a "
        "prompt step took in a mean step's prompts, 2026-12-06; 32 and 3.9% until SGLang's one matmul for an "
        "MLA layer's two down projections and the re-derived MLA call were counted, 2026-12-06, the rule off then 33, 4.6%, "
        "70%, then 34, 4.0%, 50%, then 34, 3.3%, 36%, then 36, 1.4%, 5% and now 36, 1.5%, 5%; 30, 4.8% and 26% until a DP-attention rank "
        "stepped its share of SGLang's prompt chunk, 2026-12-05, docs/engines.md; 31 and 4.6% until an MLA call took its GPU's "
        "measured floor, 2026-12-05; 30 until fp8 fused-MoE calls took their own floor, 2026-12-05; the rule off: 33, 4.6%, "
        "70%; 4.4% and 67% until the MLA floors; 4.5% until that fp8 floor," in text
    )


def test_a_plan_check_runs_long_enough_to_settle():
    """docs/simulation.md: Qwen3-32B's decode instance on 8 H100s at 10 requests/s of 4,000 + 1,000
    tokens, a 22 s lifetime: still filling over the plan's 2,000 samples, settled over 4,000 and 8,000;
    the check runs enough for 16 lifetimes over the middle 80% of its arrivals."""
    import numpy as np

    from kvcalc.engine.plan import CHECK_LIVES, CHECK_MAX_REQUESTS, _check_requests, _served, _Sim
    from kvcalc.engine.steptime import DEFAULTS, for_engine

    m, g, eng = resolve_model("qwen3-32b"), resolve_gpu("h100"), engine("vllm")
    t = Traffic(prompt=4000, output=1000, rate=10)
    got = []
    for n in (2000, 4000, 8000):
        sim = _Sim(m, np.full(n, 4000), np.full(n, 1000), kv_dtype("bf16"), eng, for_engine(DEFAULTS, eng), 0, None, t)
        dec = sim.run(g, 10.0, 8, 1, 1, "decode", {})
        got.append((dec.overloaded, round(_served(dec, 1), 2)))
    assert got == [(True, 9.31), (False, 10.04), (False, 9.99)]
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "reads as serving 9.31 of the 10 over 2,000 requests, and 10.04 and 9.99 over 4,000 and 8,000" in text
    # 16 lifetimes of 21.6 s at 10 requests/s over 80% of the arrivals: 4,320 requests.
    assert CHECK_LIVES == 16 and _check_requests(2000, 21.6, 10.0) == 4320
    assert _check_requests(2000, 1.0, 10.0) == 2000 and _check_requests(2000, 1e6, 10.0) == CHECK_MAX_REQUESTS == 20_000
    # The check of that question's winner now keeps up, as its closed form says.
    assert "spans 16 of the closed form's request lifetimes" in text


@pytest.mark.parametrize(
    "model,gpu,tp,release,rate,prompt,output,every",
    [
        ("qwen3-8b", "h100", 1, "sglang@0.5.9", 3.0, 2000, 300, 10),
        ("qwen3-8b", "h100", 1, "sglang@0.5.9", 6.0, 2000, 300, 10),
        ("qwen3-8b", "h100", 1, "sglang@0.5.9", 6.0, 2000, 300, 30),
        ("llama3.1-8b", "h100", 1, "sglang@0.5.12", 8.0, 1000, 200, 30),
    ],
)
def test_plan_takes_sglangs_receive_interval_as_its_simulation_does(model, gpu, tp, release, rate, prompt, output, every):
    """plan --scheduler-recv-interval: the closed form (``_Replica.ttft``: (1 - u) x (N - 1) / 2 decode steps
    more to be taken in, and the prompts of N decode steps in one prompt step) against 3,000 simulated
    requests with the same interval (the simulator's SimSettings.recv_interval, event by event): mean TPOT and
    mean TTFT within 10% of each other, the issue's aim for the closed form and its simulation."""
    _, st, run_ = _replica_and_run(model, gpu, tp, prompt, output, rate, release, every)
    _, base, _ = _replica_and_run(model, gpu, tp, prompt, output, rate, release, 1, n=1)
    assert not run_.overloaded
    assert run_.tpot_s.mean == pytest.approx(st[2], rel=0.10)
    assert run_.ttft_s.mean == pytest.approx(st[3], rel=0.10)
    # The interval is what moves the TTFT: the closed form's grows by at least a third of the (N - 1) / 2
    # decode steps it adds, with u below 2/3 here.
    assert st[3] - base[3] > (every - 1) / 2 * st[2] * (1 - 0.66) * 0.5


def test_plan_adds_half_the_receive_interval_of_decode_steps_to_a_prompts_wait():
    # Hand arithmetic of _Replica.ttft without prompts arriving (u = 0, rate 0): with b requests decoding, a
    # request waits (N - 1) / 2 decode steps more to be taken in, each the step model's decode step of b
    # requests at the replica's mid-output context (StepModel.step, the formula's one place).
    m, g, bf16 = resolve_model("qwen3-8b"), resolve_gpu("h100"), kv_dtype("bf16")
    eng = engine("sglang@0.5.9")
    t = Traffic(prompt=1000, output=200, rate=1.0)
    plain = _Replica(m, g, 1, 1, t, bf16, eng)
    gated = _Replica(m, g, 1, 1, t, bf16, eng, recv_interval=21)
    t0 = plain.sm.step(16, 1000 + 100).t_step_s
    assert gated.ttft(16, t0) - plain.ttft(16, t0) == pytest.approx(20 / 2 * t0, rel=1e-9)
    # With no request decoding, the scheduler's idle loop takes a request in at once.
    assert gated.ttft(0, t0) == plain.ttft(0, t0)
    # During prompt steps (the share u of the time) it is taken in after the step: (1 - u) of the wait. SGLang 0.5.9's
    # overlap loop took requests in as that prompt step began, so one that comes during it waits for the poll at the
    # start of the N-th decode step after it and for that step (_Replica.admit_wait; with no prompts arriving, rate 0,
    # the poll it missed found none): 21 decode steps at N = 21, 1 at N = 1, 20 x u more.
    assert gated.ttft(16, t0, 0.25) - plain.ttft(16, t0, 0.25) == pytest.approx((0.75 * 20 / 2 + 0.25 * 20) * t0, rel=1e-9)


def test_the_overlap_loops_wait_in_the_closed_form_is_its_hand_arithmetic():
    # _Replica.admit_wait at N = 10, u = 0.2, 6 requests a second, decode step t0 (16 decoding, as above) and a prompt
    # step of 40 ms: the missed poll after 10 decode steps found requests with chance f_d = 1 - e^(-6 x 10 t0), after
    # a prompt step f_p = 1 - e^(-6 t0); one that came during a prompt step (u) waits one prompt step or 10 decode
    # steps, one during the 10th decode step ((1 - u) / 10) likewise with f_d.
    m, g, bf16 = resolve_model("qwen3-8b"), resolve_gpu("h100"), kv_dtype("bf16")
    t = Traffic(prompt=1000, output=200, rate=6.0)
    rep = _Replica(m, g, 1, 1, t, bf16, engine("sglang@0.5.9"), recv_interval=10)
    t0 = rep.sm.step(16, 1000 + 100).t_step_s
    f_d, f_p = 1 - math.exp(-6 * 10 * t0), 1 - math.exp(-6 * t0)
    want = 0.2 * (f_p * 0.040 + (1 - f_p) * 10 * t0) + 0.8 / 10 * (f_d * 0.040 + (1 - f_d) * 10 * t0)
    assert rep.admit_wait(16, t0, 0.2, 6.0, 0.040) == pytest.approx(want, rel=1e-12)
    # N = 1, nothing arriving: one decode step, wherever the request came.
    one = _Replica(m, g, 1, 1, t, bf16, engine("sglang@0.5.9"))
    assert one.admit_wait(16, t0, 0.3, 0.0, 0.040) == pytest.approx(t0, rel=1e-12)
    # No request decoding (the idle loop takes it in at once), or a release without the overlap loop: nothing.
    assert rep.admit_wait(0, t0, 0.2, 6.0, 0.040) == 0.0
    assert _Replica(m, g, 1, 1, t, bf16, engine("sglang@0.3")).admit_wait(16, t0, 0.2, 6.0, 0.040) == 0.0


def test_plan_with_a_receive_interval_leaves_dp_attention_out():
    # SGLang asserts not enable_dp_attention with --scheduler-recv-interval (scheduler_recv_skipper.py, 0.5.2 to
    # 0.5.14): plan searches no DP-attention shape with one, and refuses one asked for.
    m, g, bf16 = resolve_model("qwen3-30b-a3b"), resolve_gpu("h100"), kv_dtype("bf16")
    eng = engine("sglang@0.5.9")
    t = Traffic(prompt=1000, output=200, rate=20.0)
    plain = plan(m, [g], t, SLO(2.0, 0.05), bf16, eng, max_gpus=8, disaggregate=False)
    assert any(d.dp > 1 for d in plain.ranked)
    gated = plan(m, [g], t, SLO(2.0, 0.05), bf16, eng, max_gpus=8, disaggregate=False, recv_interval=10)
    assert gated.ranked and all(d.dp == 1 for d in gated.ranked)
    assert gated.considered < plain.considered
    assert any("--scheduler-recv-interval 10" in a for a in gated.assumptions)


@pytest.mark.parametrize(
    "args,says",
    [
        (["--engine", "vllm", "--scheduler-recv-interval", "10"], "SGLang's --scheduler-recv-interval"),
        (["--engine", "sglang@0.4", "--scheduler-recv-interval", "10"], "read from 0.5.2 on"),
        (["--engine", "sglang@0.5.9", "--dp", "2", "--scheduler-recv-interval", "10"], "under DP attention"),
        (["--engine", "sglang@0.5.9", "--scheduler-recv-interval", "0"], "--scheduler-recv-interval"),
        (["--engine", "sglang@0.5.9", "--scheduler-recv-interval", "2.5"], "--scheduler-recv-interval"),
    ],
)
def test_plans_receive_interval_refuses_in_one_line(cli, args, says):
    one_line_error(
        cli("plan", "--model", "qwen3-30b-a3b", "--gpus", "h100", "--rate", "5", "--tpot", "50ms", "--closed-form", *args), says
    )


def test_the_receive_interval_paragraph_is_as_the_plan_and_its_simulation_say():
    """docs/simulation.md's plan --scheduler-recv-interval paragraph: Qwen3-8B on an H100 under SGLang 0.5.9, 2,000-token
    prompts and 300-token outputs at 6 requests/s, 3,000 simulated requests, N = 30 and N = 1."""
    got = []
    for every in (30, 1):
        _, st, run_ = _replica_and_run("qwen3-8b", "h100", 1, 2000, 300, 6.0, "sglang@0.5.9", every)
        got.append(
            (round(st[3] * 1e3, 1), round(st[2] * 1e3, 2), round(run_.ttft_s.mean * 1e3, 1), round(run_.tpot_s.mean * 1e3, 2))
        )
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    (a, b, c, d), (e, f, h, i) = got
    assert (
        f"N = 30, gives {a} ms and {b} ms against the simulation's {c} ms and {d} ms (N = 1: {e} and {f} against {h} and {i} ms)"
        in text
    ), got


def test_plans_ttft_percentiles_take_the_receive_intervals_wait_as_uniform():
    """The wait for the scheduler's poll is no queue's: 0 when a prompt step was running (chance u), else uniform over
    the N - 1 decode steps to the next poll, so at the q quantile it adds (N - 1) t0 (q - u) / (1 - u) (plan's
    _replica_ttft_at) where an exponential wait of the same mean would add (N - 1) t0 / 2 x ln(...) more or less.
    Against 3,000 simulated requests (Qwen3-30B-A3B at TP 2 on H100s under SGLang 0.5.9, N = 10, 20 requests/s):
    the p50, p90 and p99 within 10%."""
    from kvcalc.engine.plan import _replica_ttft_at

    rep, st, run_ = _replica_and_run("qwen3-30b-a3b", "h100", 2, 1000, 300, 20.0, "sglang@0.5.9", 10)
    t = Traffic(prompt=1000, output=300, rate=20.0)
    assert not run_.overloaded
    for pct, sim in ((50, run_.ttft_s.p50), (90, run_.ttft_s.p90), (99, run_.ttft_s.p99)):
        assert _replica_ttft_at(rep, t, 1, st, pct) == pytest.approx(sim, rel=0.10), pct
    cf = [round(_replica_ttft_at(rep, t, 1, st, p) * 1e3, 1) for p in (50, 90, 99)]
    sim = [round(x * 1e3, 1) for x in (run_.ttft_s.p50, run_.ttft_s.p90, run_.ttft_s.p99)]
    # The same wait taken at its mean, inside the queues' waits alone:
    from kvcalc.engine.plan import _prefill_wait, _ttft_at

    n_, x, _, ttft, _, u = st
    old = round(_ttft_at(ttft, [(_prefill_wait(u, x, rep.cv2), u)], 90) * 1e3, 1)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        f"p50, p90 and p99 TTFT of {cf[0]}, {cf[1]} and {cf[2]} ms against the simulation's {sim[0]}, {sim[1]} and "
        f"{sim[2]} ms, where the poll's wait taken at its mean put the p90 at {old} ms" in text
    )
    # The uniform wait's own quantile, by hand: u and the decode step as the closed form has them.
    _, _, tpot, _, _, u = st
    t0 = rep.sm.step(math.ceil(st[0]), rep.ctx).t_step_s
    gate = (1 - u) * 9 * t0 / 2
    assert rep.recv_wait(st[0], tpot, u) == pytest.approx(gate, rel=0.02)


def test_a_prompt_step_takes_in_a_mean_steps_prompts(monkeypatch):
    """docs/simulation.md: SGLang takes in the requests that came during the step before, so a prompt step's prompts are
    Poisson with the rate times the mean step, 1 / (n_p + 1 / t) with prompts first (until 2026-12-07: since then the
    window is the step before, a decode step's or a prompt step's, ``_window_law``); Qwen3-30B-A3B at TP 2 on H100s
    under SGLang 0.5.9, 1,000 and 300 tokens, against 4,000 simulated requests at four rates."""
    from kvcalc.engine.engines import Engine

    gaps, at20 = [], []
    for rate in (15.0, 20.0, 22.5, 25.1):
        rep, st, run_ = _replica_and_run("qwen3-30b-a3b", "h100", 2, 1000, 300, rate, "sglang@0.5.9", n=4000)
        assert not run_.overloaded
        gaps.append(round(100 * (1 - st[2] / run_.tpot_s.mean)))
        if rate == 20.0:
            at20.append((round(run_.mean_running), round(run_.tpot_s.mean * 1e3, 1), round(st[0]), round(st[2] * 1e3, 1)))
        # With prompts first, the mean step 1 / (n_p + 1 / t) is shorter than a decoding request's gap t.
        t_gap, _, _, n_p, _ = rep.step(st[0], rate)
        assert 1 / (n_p + 1 / t_gap) < t_gap
    # [1, 14, 5, 9] until each count of prompts took its own time; [-2, -13, -3, -8] until SGLang's overlap loop took
    # requests in a step late (at 20/s the simulation's batch straddles the largest CUDA graph, 256: see the docs);
    # [-2, -27, -3, -9] until a prompt step's count of prompts followed the length of the step before it
    assert gaps == [-1, -27, -3, -9]
    monkeypatch.setattr(Engine, "overlap_admission", property(lambda self: False))
    _, st, run_ = _replica_and_run("qwen3-30b-a3b", "h100", 2, 1000, 300, 20.0, "sglang@0.5.9", n=4000)
    at20.append((round(run_.mean_running), round(run_.tpot_s.mean * 1e3, 1), round(st[0]), round(st[2] * 1e3, 1)))
    assert at20 == [(231, 38.8, 297, 49.3), (257, 43.3, 294, 48.9)]  # (49.4 and 49.0 until the windows, 2026-12-07)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "its TPOT was 4%, 26%, 14% and 18% below the simulation's and was 1%, 14%, 5% and 9% below from then until each count "
        "of prompts a step takes in took its own time (below), and was 2%, 13%, 3% and 8% above from then" in text
    )
    assert "and was 2%, 27%, 3% and 9% above since SGLang's overlap loop takes requests in a step late" in text
    assert "(49.0 and 49.4 ms; 48.9 and 49.3 ms, the gaps 1%, 27%, 3% and 9%, since a prompt step's count" in text


@pytest.mark.parametrize("every", [1, 10, 30])
def test_plans_closed_loop_takes_the_receive_interval_as_its_simulation_does(cli, every):
    """plan --users with --scheduler-recv-interval against simulate --concurrency with it (32 users of Qwen3-30B-A3B on
    one H100 under SGLang 0.5.9, prompts uniform over 800 to 1,200 tokens and outputs over 200 to 400, so that the users
    fall out of step): mean TTFT and TPOT within 10%. At N = 10 the closed form gives 193.8 and 25.96 ms, the simulation
    181.8 and 25.85; at N = 30, 460.8 and 25.10 against 425.1 and 24.95 (193.4 and 25.88, 459.6 and 24.99 until a prompt
    step's count of prompts followed the length of the step before it, 2026-12-07; 160.8 and 25.90 against 158.6 and 25.84, 406.3
    and 25.03 against 402.1 and 24.96 until SGLang's overlap loop took requests in a step late, 2026-12-07: the
    closed form's chances for that loop take arrivals as Poisson, where a closed loop's user sends its next request as
    its last one ends; 161.0 and 25.85,
    406.8 and 24.99 until each count of prompts a step takes in took its own time, 2026-12-06)."""
    import json

    common = ["--model", "qwen3-30b-a3b", "--engine", "sglang@0.5.9", "--prompt", "uniform:800..1200"]
    common += ["--output", "uniform:200..400", "--scheduler-recv-interval", str(every), "--json"]
    p = cli("plan", *common, "--gpus", "h100", "--users", "32", "--tpot", "50ms", "--ttft", "2s", "--max-gpus", "1")
    s = cli("simulate", *common, "--gpu", "h100", "--concurrency", "32", "--requests", "3000")
    assert p.code == 0 and s.code == 0, (p.err, s.err)
    best = json.loads(p.out)["ranked"][0]
    run_ = next(r for r in json.loads(s.out)["runs"] if r["policy"].startswith("paged"))
    assert best["tp"] == 1 and best["mode"] == "aggregated"
    assert run_["ttft_s"]["mean"] == pytest.approx(best["ttft_s"], rel=0.10)
    assert run_["tpot_s"]["mean"] == pytest.approx(best["tpot_s"], rel=0.10)
    got = [round(best["ttft_s"] * 1e3, 1), round(best["tpot_s"] * 1e3, 2)]
    got += [round(run_["ttft_s"]["mean"] * 1e3, 1), round(run_["tpot_s"]["mean"] * 1e3, 2)]
    assert got == {1: [79.7, 26.69, 81.5, 26.58], 10: [193.8, 25.96, 181.8, 25.85], 30: [460.8, 25.1, 425.1, 24.95]}[every]


def test_the_steady_state_stops_circling_a_whole_requests_jump(monkeypatch):
    # Llama-3.1-8B on one H100 under SGLang, one of four replicas at 500 requests/s of 100 + 100 tokens: its steady state
    # sits where a decode step's time jumps at a whole request, and the iteration circles there. Stopping once it circles
    # within CIRCLE_REQUESTS gives the figures the 400 rounds give, in a fifth of the step-model calls or fewer.
    import kvcalc.engine.plan as plan_module

    def solve(circle: float) -> tuple[Any, int]:
        monkeypatch.setattr(plan_module, "CIRCLE_REQUESTS", circle)
        t = Traffic(prompt=100, output=100, rate=500.0)
        rep = _Replica(resolve_model("llama3.1-8b"), resolve_gpu("h100"), 1, 1, t, kv_dtype("bf16"), engine("sglang"))
        calls, step = [0], rep.step

        def counted(*a: Any, **k: Any) -> Any:
            calls[0] += 1
            return step(*a, **k)

        rep.step = counted  # type: ignore[method-assign]
        return plan_module._solve(rep, t, 4), calls[0]

    (stopped, quick), (rounds, slow) = solve(0.5), solve(-1.0)
    assert stopped is not None and rounds is not None
    assert stopped[:4] == pytest.approx(rounds[:4], rel=1e-6) and stopped[4:] == rounds[4:]
    assert slow >= 800 and quick * 5 <= slow, (quick, slow)


def test_a_prompt_steps_count_is_poisson_given_one_for_one_lane():
    # mu = 0.5 arrivals a step, every request to this lane: P(N = 1 | N >= 1) = 0.5 e^-0.5 / (1 - e^-0.5)
    # = 0.5 x 0.606531 / 0.393469 = 0.770747, the mean 0.5 / 0.393469 = 1.270747 (the tail past LAW_TAIL on the last).
    from kvcalc.engine.plan import LAW_TAIL, _prompts_a_step

    law = _prompts_a_step(0.5, 1, 100)
    assert law[0] == (1, pytest.approx(0.770747, abs=1e-6))
    assert sum(w for _, w in law) == pytest.approx(1.0, abs=1e-12)
    assert sum(j * w for j, w in law) == pytest.approx(1.270747, abs=len(law) * LAW_TAIL)
    # At most three fit the budget: the chance of three or more sits on 3.
    # P(N >= 3 | N >= 1) = (1 - e^-0.5 (1 + 0.5 + 0.125)) / 0.393469 = 0.014388 / 0.393469 = 0.036567.
    capped = _prompts_a_step(0.5, 1, 3)
    assert [j for j, _ in capped] == [1, 2, 3] and capped[2][1] == pytest.approx(0.036567, abs=1e-6)


def test_a_lane_dealt_every_other_request_takes_fewer_prompts_a_step():
    # Every 2nd arrival of a Poisson stream, 0.5 a step on average: the base stream has m = 1 a step, and the window
    # holds j or more with chance (1/2)(P(Po(1) >= 2j - 1) + P(Po(1) >= 2j)):
    # P(N >= 1) = (1/2)((1 - e^-1) + (1 - 2 e^-1)) = (1/2)(0.632121 + 0.264241) = 0.448181;
    # P(N >= 2) = (1/2)((1 - 2.5 e^-1) + (1 - (8/3) e^-1)) = (1/2)(0.080301 + 0.018988) = 0.049645;
    # P(N = 1 | N >= 1) = (0.448181 - 0.049645) / 0.448181 = 0.889231, the mean 0.5 / 0.448181 = 1.115620.
    from kvcalc.engine.plan import LAW_TAIL, _prompts_a_step

    law = _prompts_a_step(0.5, 2, 100)
    assert law[0] == (1, pytest.approx(0.889231, abs=1e-6))
    assert sum(j * w for j, w in law) == pytest.approx(1.115620, abs=len(law) * LAW_TAIL)


@given(mu=st.floats(1e-6, 40.0), k=st.integers(1, 16), cap=st.integers(1, 400))
@settings(max_examples=200)
def test_a_prompt_steps_count_law_is_a_law_within_the_budget(mu, k, cap):
    from kvcalc.engine.plan import LAW_TAIL, _prompts_a_step

    law = _prompts_a_step(mu, k, cap)
    js = [j for j, _ in law]
    assert js == list(range(js[0], js[0] + len(js))) and 1 <= js[0] and js[-1] <= cap
    if js[0] > 1:
        # Counts below the first kept only where, together, Poisson puts under LAW_TAIL of its one-or-more on them.
        below = sum(math.exp(-mu + j * math.log(mu) - math.lgamma(j + 1)) for j in range(1, js[0]))
        assert k == 1 and js[0] <= mu and below / -math.expm1(-mu) < LAW_TAIL
    assert all(w >= 0.0 for _, w in law) and sum(w for _, w in law) == pytest.approx(1.0, abs=1e-9)
    mean = sum(j * w for j, w in law)
    assert 1.0 <= mean <= cap + 1e-9
    if cap >= mu + 10 * math.sqrt(mu) + 20:
        # Uncapped, a window's mean count is mu, so given one or more it is mu / P(N >= 1) >= mu (1e-4 of the tail left).
        assert mean >= mu * (1 - 1e-3)


@given(mu=st.floats(1e-3, 1.0))
@settings(max_examples=100)
def test_a_lane_dealt_in_turn_lumps_no_more_than_poisson(mu):
    # Even arrivals leave a window with one or more more often for the same mean, so fewer come together.
    from kvcalc.engine.plan import _prompts_a_step

    mean = {k: sum(j * w for j, w in _prompts_a_step(mu, k, 1000)) for k in (1, 4)}
    assert mean[4] <= mean[1] + 1e-4
    assert mean[1] == pytest.approx(mu / -math.expm1(-mu), abs=2e-3)


def test_a_prompt_steps_count_follows_the_step_before_it():
    # 10 arrivals a second; decode steps of 10 ms (0.1 arrivals a window), prompt steps of 100 ms (1 a window).
    # A prompt step follows a prompt step with chance a_p = 1 - e^-1 = 0.632121, else it ends a run of decode windows
    # (1 - a_p = 0.367879). Given one or more: Poisson(0.1) has P(1) = 0.1 e^-0.1 / (1 - e^-0.1) = 0.0904837 / 0.0951626
    # = 0.950833 and mean 0.1 / 0.0951626 = 1.050833; Poisson(1) has P(1) = e^-1 / (1 - e^-1) = 0.581977 and mean
    # 1 / 0.632121 = 1.581977. So P(1) = 0.367879 x 0.950833 + 0.632121 x 0.581977 = 0.349792 + 0.367880 = 0.717672,
    # and the mean 0.367879 x 1.050833 + 0.632121 x 1.581977 = 0.386580 + 1.000000 = 1.386580.
    from kvcalc.engine.plan import LAW_TAIL, _window_law

    law = _window_law(10.0, 0.01, 0.1, 100.0, 100_000)
    assert law[0][:2] == (1, pytest.approx(0.717672, abs=1e-6))
    assert law[0][2] == 100.0 and law[1][2] == 200.0
    assert sum(w for _, w, _ in law) == pytest.approx(1.0, abs=1e-12)
    assert sum(j * w for j, w, _ in law) == pytest.approx(1.386580, abs=2 * len(law) * LAW_TAIL)
    # A budget of 250 tokens takes two whole prompts and a chunk of a third: three or more sit on 3, at 250 tokens.
    # P(Po(0.1) >= 3) = 1 - e^-0.1 (1 + 0.1 + 0.005) = 0.00015465, given one or more 0.0016251; P(Po(1) >= 3) =
    # 1 - 2.5 e^-1 = 0.080301, given one or more 0.127035; mixed: 0.367879 x 0.0016251 + 0.632121 x 0.127035 = 0.080899.
    capped = _window_law(10.0, 0.01, 0.1, 100.0, 250)
    assert [(j, x) for j, _, x in capped] == [(1, 100.0), (2, 200.0), (3, 250.0)]
    assert capped[0][1] == pytest.approx(0.717672, abs=1e-6) and capped[2][1] == pytest.approx(0.080899, abs=1e-6)
    # A decode window of no length (an idle engine, which takes a request in as it comes): the prompt step after it
    # takes that one alone, so P(1) = 0.367879 x 1 + 0.632121 x 0.581977 = 0.367879 + 0.367880 = 0.735759.
    idle = _window_law(10.0, 0.0, 0.1, 100.0, 100_000)
    assert idle[0][:2] == (1, pytest.approx(0.735759, abs=1e-6))


@given(
    rate=st.floats(1e-3, 200.0),
    decode_s=st.floats(1e-4, 0.2),
    prompt_s=st.floats(1e-4, 2.0),
    prompt=st.integers(1, 40_000),
    room=st.integers(1, 65_536),
)
@example(rate=10.0, decode_s=0.03125, prompt_s=2.0, prompt=1, room=6)  # two laws far apart (below)
@example(rate=151.0, decode_s=0.125, prompt_s=0.14151561347604014, prompt=1, room=41)  # a lower tail lumped up
@settings(max_examples=200)
def test_a_prompt_steps_count_by_windows_is_a_law_between_its_two_windows(rate, decode_s, prompt_s, prompt, room):
    # Whatever the windows: a law over 1..cap (cap the prompts the budget takes, a chunk of the last), its tokens each
    # count's within the budget, and its mean between the two windows' own means given one or more (the tail past
    # LAW_TAIL kept on each law's last count), a mixture of the two.
    from kvcalc.engine.plan import LAW_TAIL, _window_law

    cap = -(-room // prompt)
    law = _window_law(rate, decode_s, prompt_s, float(prompt), room)
    # Counts in order, each once; not all of them: each window's law may put a lower tail under LAW_TAIL on its first
    # count kept, so a mixture of two far apart skips the counts between (rate 10, windows of 31 ms and 2 s, cap 6:
    # 1 to 4, then 6).
    js = [j for j, _, _ in law]
    assert js == sorted(set(js)) and 1 <= js[0] and js[-1] <= cap
    assert all(w >= 0.0 for _, w, _ in law) and sum(w for _, w, _ in law) == pytest.approx(1.0, abs=1e-9)
    assert all(x == min(j * prompt, room) for j, _, x in law)
    mean = sum(j * w for j, w, _ in law)
    lo, hi = sorted(m / -math.expm1(-m) if m > 1e-12 else 1.0 for m in (rate * decode_s, rate * prompt_s))
    # The lower tail a law puts on its first count kept (under LAW_TAIL of chance, moved up by fewer counts than the
    # law's mean, itself at most hi) raises the mean by less than LAW_TAIL x hi.
    assert 1.0 - 1e-9 <= mean <= min(hi, cap) * (1 + 1e-6) + LAW_TAIL * hi + 1e-9
    if cap >= rate * max(decode_s, prompt_s) + 10 * math.sqrt(rate * max(decode_s, prompt_s)) + 20:
        assert mean >= lo * (1 - 1e-3) - len(law) * LAW_TAIL


def test_a_prompt_steps_count_matches_a_run_of_the_engines_decisions():
    """``_window_law`` against an independent run of the decisions it describes: each takes in the Poisson arrivals of
    the window before it, which is a decode step's length after a decision that found none and a prompt step's after
    one that found some (200,000 decisions)."""
    import numpy as np

    from kvcalc.engine.plan import _window_law

    rng = np.random.default_rng(1)
    for rate, decode_s, prompt_s in ((10.0, 0.01, 0.1), (15.0, 0.013, 0.064), (3.0, 0.02, 0.5), (50.0, 0.005, 0.03)):
        window, counts = decode_s, []
        for _ in range(200_000):
            k = int(rng.poisson(rate * window))
            if k:
                counts.append(k)
            window = prompt_s if k else decode_s
        c = np.array(counts)
        law = _window_law(rate, decode_s, prompt_s, 1.0, 10_000)
        mean = sum(j * w for j, w, _ in law)
        one = law[0][1]
        se = c.std() / math.sqrt(len(c))
        assert abs(c.mean() - mean) < 5 * se + 1e-3, (rate, c.mean(), mean)
        assert abs((c == 1).mean() - one) < 5 * math.sqrt(one * (1 - one) / len(c)) + 1e-3, (rate, (c == 1).mean(), one)


@pytest.mark.slow
def test_the_windows_bring_sglangs_prompt_heavy_tpot_within_ten_percent(monkeypatch):
    """docs/simulation.md: Llama-3.1-70B at TP 8 on H200s under SGLang, 1,000 + 200 tokens at 85% of the rate its pool
    reaches, the closed form with the mean window (``_Replica.windows`` off) and with the windows, each at its own
    rate, against 3,000 simulated requests."""
    m, g, eng = resolve_model("llama3.1-70b"), resolve_gpu("h200"), engine("sglang")
    got = []
    for on in (False, True):
        with monkeypatch.context() as mp:
            if not on:
                mp.setattr(_Replica, "windows", lambda self, *a: False)
            rate = 0.85 * _pool_rate(m, g, 8, 1, 1000, 200, eng)
            rep, st, run_ = _replica_and_run("llama3.1-70b", "h200", 8, 1000, 200, rate, "sglang")
            step = rep.step(st[0], st[1])
            assert step is not None
            got.append(
                (round(rate, 1), round(step[3], 1), round(100 * st[5]), round(st[2] * 1e3, 1), round(run_.tpot_s.mean * 1e3, 1))
            )
    assert got == [(15.1, 12.2, 69, 48.1, 43.1), (15.1, 11.0, 68, 46.5, 43.2)]
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "the mean window gave 12.2 prompt steps a second, 69% of the time in them and a TPOT of 48.1 ms against 43.1 ms over "
        "3,000 simulated requests (10.3% below); the windows give 11.0 prompt steps a second and 46.5 ms, the simulation 43.2 "
        "(7.1% below" in text
    )


def test_a_prefill_instances_chain_by_hand():
    # One prompt a step (cap 1), 10 ms each, at 50 a second: every step is 10 ms and clears one, so (0.010, 1.0)
    # exactly, 50% busy. At 100 a second (rate x step = 1 = what a full step clears) the steps cannot keep up: None.
    from kvcalc.engine.plan import _backlog_means

    t, q, _, _ = _backlog_means(50.0, lambda j: 0.010, 1, 0.010, 1.0)
    assert (t, q) == (pytest.approx(0.010, rel=1e-12), pytest.approx(1.0, rel=1e-12))
    assert _backlog_means(100.0, lambda j: 0.010, 1, 0.010, 1.0) is None
    # Two at most (cap 2, a full step clears 2), 10 ms for one and 15 ms for two, at 1 a second. A step of one (after
    # an idle wait, or one waiting) leaves n ~ Poisson(0.01) waiting; a step of two needs two: to first order P(n = 2)
    # = e^-0.01 x 0.01^2 / 2 = 4.950249e-5, so the mean step is 10 ms + 5 ms x 4.950249e-5 = 10.000247512 ms and the
    # mean count 1.0000495025 (the next terms, three or more waiting and the 15 ms step's own arrivals, are ~1.7e-7).
    t, q, _, _ = _backlog_means(1.0, lambda j: 0.010 if j == 1 else 0.015, 2, 0.015, 2.0)
    assert t == pytest.approx(0.010000247512, rel=1e-7) and q == pytest.approx(1.0000495025, rel=1e-6)


@given(
    rate=st.floats(0.0, 200.0),
    cap=st.integers(1, 8),
    base=st.floats(1e-3, 0.3),
    slope=st.floats(0.0, 0.2),
    frac=st.floats(0.0, 0.99),
)
@settings(max_examples=100, deadline=None)
def test_a_prefill_instances_chain_is_a_law_over_its_steps(rate, cap, base, slope, frac):
    # Whatever the rate and steps: None exactly where full steps cannot keep up; else a mean step between the one-prompt
    # step and the full one, prompts a step between 1 and what a full step clears, a busy share under 1, a wait of no
    # time or more and a served step within the steps' range.
    from kvcalc.engine.plan import _backlog_means

    steps = [base + slope * j for j in range(1, cap + 1)]
    full_s, clears = base + slope * (cap + frac), cap + frac
    got = _backlog_means(rate, lambda j: steps[j - 1], cap, full_s, clears)
    if rate * full_s >= clears:
        assert got is None
        return
    assert got is not None
    t, q, wait, served = got
    assert steps[0] * (1 - 1e-9) <= t <= full_s * (1 + 1e-9)
    assert 1 - 1e-9 <= q <= clears + 1e-9
    assert rate * t / q < 1 + 1e-9
    # A prompt waits no time or more, and runs in a step between the one-prompt step and the full one.
    assert wait >= 0.0 and steps[0] * (1 - 1e-9) <= served <= full_s * (1 + 1e-9)


def test_a_prefill_instances_steps_follow_the_prompts_left_waiting():
    # A loop of 200,000 Poisson arrivals on a prefill instance alone (Llama-3.1-8B on one H100, prompts of 1,024 tokens,
    # 8 to the 8,192-token budget), independent of plan's chain: an idle instance starts a step for the next arrival
    # alone; else a step takes all that arrived by its start, at most 8, in the step model's time for so many tokens.
    # Its mean step and busy share against _Prefill.load's. The loop steps 31.1, 38.2 and 49.6 ms at 20, 28 and 33 a
    # second, where the two windows' law (_window_law with a decode window of 0) gives 30.8, 36.2 and 43.4 and a mean
    # window (_prompt_law) 37.2, 46.1 and 56.7: both fail this within 10% at 28 or 33. Several prompts in a step each
    # run over their own context (StepModel.step's span), as the simulator prices them.
    from kvcalc.engine.plan import _chunk_end, _Prefill
    from kvcalc.engine.steptime import DEFAULTS, for_engine

    m, g, eng = resolve_model("llama3.1-8b"), resolve_gpu("h100"), engine("vllm")
    c = for_engine(DEFAULTS, eng)
    rep = _Replica(m, g, 1, 1, Traffic(prompt=1024, output=200, rate=1.0), kv_dtype("bf16"), eng, c)
    assert rep.budget == 8192
    # Each prompt over its own context (StepModel.step's span), as the simulator prices a step of several.
    secs = [
        rep.sm.step(0, 0.0, j * 1024, _chunk_end(0, 1024, j * 1024), False, 1024 if j > 1 else 0).t_step_s for j in range(1, 9)
    ]
    for rate in (5.0, 20.0, 28.0, 33.0):
        arrivals = np.cumsum(np.random.default_rng(3).exponential(1 / rate, 200_000))
        i = n_steps = 0
        now = busy = in_system = 0.0
        while i < len(arrivals):
            if arrivals[i] > now:
                now, j = float(arrivals[i]), 1
            else:
                j = min(int(np.searchsorted(arrivals, now, side="right")) - i, 8)
            busy += secs[j - 1]
            now += secs[j - 1]
            in_system += float(np.sum(now - arrivals[i : i + j]))  # each prompt's arrival to its step's end
            i += j
            n_steps += 1
        pf = _Prefill(rep)
        got = pf.load(rate)
        assert got is not None
        assert got[1] == pytest.approx(busy / n_steps, rel=0.015), rate
        assert got[0] == pytest.approx(busy / now, rel=0.01), rate
        # A prompt's mean time from arrival to its first token, beyond the request path: the chain's wait and step.
        path = float(c.request_path_s(1024))
        assert pf.ttft_s(rate, 1024) - path == pytest.approx(in_system / len(arrivals), rel=0.015), rate
    # Past what full steps carry (8 prompts in secs[7] = 221.8 ms: 36.1 a second), none.
    assert _Prefill(rep).load(8 / secs[7] * 1.001) is None


@pytest.mark.slow
def test_a_prefill_instances_chain_counts_a_chunked_prompt_by_its_share():
    # Prompts of 3,000 and 5,000 tokens do not divide the 8,192-token budget: a full step runs 8,192 tokens, a chunk of
    # the last prompt among them, and the chain clears cap + 1 prompts with chance budget / prompt - cap (0.73 and
    # 0.64). A loop of 100,000 Poisson arrivals that runs the tokens themselves, first come first served, a prompt done
    # with its last chunk, each prompt's chunk over its own context, independent of the chain: 110.5 and 146.6 ms a
    # step at 3,000 tokens (75.9% and 90.7% busy; the chain 110.6 and 146.9 ms, 75.6% and 90.3%), 159.7 and 184.5 ms
    # at 5,000 (75.5% and 90.5%; the chain 163.1 and 186.8 ms, 75.2% and 90.1%).
    from kvcalc.engine.plan import _chunk_end, _Prefill
    from kvcalc.engine.steptime import DEFAULTS, for_engine

    def seconds_of(rep: _Replica, prompt: int) -> Any:
        memo: dict[int, float] = {}

        def secs(x: int) -> float:  # a step of x prompt tokens
            if x not in memo:
                memo[x] = rep.sm.step(0, 0.0, x, _chunk_end(0, prompt, x), False, prompt if x > prompt else 0).t_step_s
            return memo[x]

        return secs

    m, g, eng = resolve_model("llama3.1-8b"), resolve_gpu("h100"), engine("vllm")
    for prompt in (3000, 5000):
        rep = _Replica(m, g, 1, 1, Traffic(prompt=prompt, output=200, rate=1.0), kv_dtype("bf16"), eng, for_engine(DEFAULTS, eng))
        secs = seconds_of(rep, prompt)
        for share in (0.75, 0.9):
            rate = share * (8192 / prompt) / secs(8192)
            arrivals = np.cumsum(np.random.default_rng(5).exponential(1 / rate, 100_000))
            done = head = n_steps = 0  # prompts finished, tokens left of the one in progress
            now = busy = 0.0
            while done < len(arrivals) - 10:
                came = int(np.searchsorted(arrivals, now, side="right"))
                if came <= done and head == 0:  # idle: the next arrival starts a step
                    now, came = float(arrivals[done]), done + 1
                room, x = 8192, 0
                while room > 0 and done < came:
                    need = head or prompt
                    take = min(need, room)
                    x, room = x + take, room - take
                    done, head = (done + 1, 0) if take == need else (done, need - take)
                busy += secs(x)
                now += secs(x)
                n_steps += 1
            got = _Prefill(rep).load(rate)
            assert got is not None
            assert got[1] == pytest.approx(busy / n_steps, rel=0.025), (prompt, share)
            assert got[0] == pytest.approx(busy / now, rel=0.01), (prompt, share)


def test_plan_says_how_busy_a_prefill_instance_is(cli, monkeypatch):
    # Llama-3.1-70B on H100s at 5 requests/s of 2,000 + 500 tokens: the fewest GPUs split 2 x TP 2 prefill + 1 x TP 4
    # decode, so each prefill instance takes 2.5 prompts a second. A step of two prompts, each over its own context,
    # takes between 1.95 and 2 times one's (the step model's own figures, read below), so however the prompts group the
    # busy share lies between 2.5 x half a two-prompt step and 2.5 x one prompt's step (2.5 x 248.6 ms = 62%), and the
    # mean step between one prompt's and two's.
    from kvcalc.engine.steptime import DEFAULTS, for_engine

    args = "plan --model llama3.1-70b --gpus h100 --rate 5 --prompt 2000 --output 500 --ttft 1s --tpot 30ms --max-gpus 16"
    best = cli(*args.split(), "--json").json()["best"]
    assert (best["mode"], best["prefill_instances"], best["prefill_tp"]) == ("disaggregated", 2, 2)
    eng = engine("vllm")
    rep = _Replica(
        resolve_model("llama3.1-70b"),
        resolve_gpu("h100"),
        2,
        1,
        Traffic(prompt=2000, output=500, rate=1.0),
        kv_dtype("bf16"),
        eng,
        for_engine(DEFAULTS, eng),
    )
    one, two = rep.sm.step(0, 0.0, 2000, 2000).t_step_s, rep.sm.step(0, 0.0, 4000, 2000, False, 2000).t_step_s
    assert 1.95 * one <= two <= 2 * one
    assert 2.5 * two / 2 <= best["prefill_busy_share"] <= 2.5 * one
    assert one < best["prefill_step_s"] < two
    monkeypatch.setenv("COLUMNS", "80")
    text = " ".join(cli(*args.split()).out.split())
    busy, step = best["prefill_busy_share"], best["prefill_step_s"] * 1e3
    assert f"each prefill instance is busy {busy:.0%} of the time, its prompt steps {step:,.1f} ms on average" in text
    # The most 8 GPUs carry: at its highest rate the split's one TP 4 prefill instance is busy as its JSON says.
    throughput = (
        "plan --model llama3.1-70b --gpus h100 --max-gpus 8 --throughput --prompt 2000 --output 500 --ttft 1s --tpot 30ms"
    )
    split = cli(*throughput.split(), "--json").json()["disaggregated"]["deployment"]
    assert 0.5 < split["prefill_busy_share"] < 1
    said_80 = " ".join(cli(*throughput.split()).out.split())
    assert f"KV 0.5 ms a prompt; each prefill instance busy {split['prefill_busy_share']:.0%}; prefill:" in said_80
    docs = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert f"its prefill instance is busy {split['prefill_busy_share']:.0%} of the time" in docs
    said = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        f"each prefill instance busy {busy:.0%} of the time, its prompt steps {step:,.1f} ms on average where one prompt's is {one * 1e3:.1f}"
        in said
    )


def test_the_windows_count_the_prompts_of_sglangs_loop_closer_than_a_mean_window():
    """docs/simulation.md: a loop that takes in at each decision every request that came during the step before it (no
    overlap, every pass a poll), runs their prompts as one step of a + c j seconds, else a decode step of t0: t0 = 13.7
    ms, a = 5.4 ms, c = 41.5 ms (Llama-3.1-70B at TP 8 on H200s, 1,000-token prompts, about 130 decoding), 200,000
    Poisson requests. Its prompts a prompt step against ``_window_law`` at its own fixed point (t_p = a + c x its mean)
    and against the mean window's Poisson, rate x the loop's mean step, given one or more."""
    import numpy as np

    from kvcalc.engine.plan import _window_law

    t0, a, c = 0.0137, 0.0054, 0.0415
    got = []
    for rate in (5.0, 10.0, 15.07, 20.0):
        arr = np.cumsum(np.random.default_rng(0).exponential(1 / rate, 200_000))
        now, i, counts, steps = 0.0, 0, [], 0
        while i < len(arr):
            j = int(np.searchsorted(arr, now, side="right")) - i
            i += j
            if j:
                counts.append(j)
            now += a + c * j if j else t0
            steps += 1
        loop = float(np.mean(counts))
        tp = a + c
        for _ in range(200):
            windows = sum(j * w for j, w, _ in _window_law(rate, t0, tp, 1.0, 10**6))
            if abs(a + c * windows - tp) < 1e-12:
                break
            tp = a + c * windows
        mu = rate * now / steps
        mean_window = mu / -math.expm1(-mu)
        assert abs(windows - loop) < abs(mean_window - loop)
        got.append((round(loop, 2), round(windows, 2), round(mean_window, 2)))
    assert got == [(1.06, 1.05, 1.04), (1.18, 1.16, 1.11), (1.44, 1.37, 1.24), (2.28, 1.89, 1.67)]
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "1.06, 1.18, 1.44 and 2.28 prompts a prompt step at 5, 10, 15.07 and 20 requests a second" in text
    assert "the windows give 1.05, 1.16, 1.37 and 1.89, the mean window 1.04, 1.11, 1.24 and 1.67" in text


@pytest.mark.slow
def test_a_preempted_request_keeps_its_cached_blocks_through_a_try_that_finds_no_room():
    """docs/simulation.md: Llama-3.1-8B on an H100, 32,000 + 1,000 tokens at 85% of the rate its pool reaches: a
    preempted request taken back in computes what its cached blocks do not hold, not its whole prompt again, so its
    3,000 simulated requests' mean TPOT is the closed form's within 2% (27.1 ms against 24.5 until 2026-12-06)."""
    m, g, eng = resolve_model("llama3.1-8b"), resolve_gpu("h100"), engine("vllm")
    rate = 0.85 * _pool_rate(m, g, 1, 1, 32000, 1000, eng)
    _, st, run_ = _replica_and_run("llama3.1-8b", "h100", 1, 32000, 1000, rate, "vllm")
    assert run_.preemptions > 0 and run_.recomputed_tokens > 0
    assert (round(st[2] * 1e3, 1), round(run_.tpot_s.mean * 1e3, 1)) == (24.5, 24.8)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "its mean TPOT 27.1 ms against the closed form's 24.5, and is 24.8 ms since" in text


def test_util_sizes_plans_pools_and_its_checks(cli):
    """plan --util: the engine's memory fraction sizes every replica's pool, in the closed form and in the
    simulation that checks it. vLLM's pool is the fraction of the GPU's memory less what the rest takes, so
    half of an L40S's 47,674,556,416 B (torch's figure, gpu_specs/l40s.yaml) against the default leaves
    fewer requests a replica, and the same run at the same rate preempts more."""
    import json

    from kvcalc.engine.plan import _Sim
    from kvcalc.engine.steptime import DEFAULTS, for_engine

    m, g, eng, bf16 = resolve_model("llama3.1-8b"), resolve_gpu("l40s"), engine("vllm"), kv_dtype("bf16")
    t = Traffic(prompt=2000, output=500, rate=2.0)
    caps = {}
    for u in (None, 0.5):
        rep = _Replica(m, g, 1, 1, t, bf16, eng, base=FitInputs(seq=t.length, util=u))
        caps[u] = rep.capacity
        # The replica holds what fit says such a pool holds: fit's own arithmetic is tested in test_fit.
        assert rep.capacity == fit(m, g, FitInputs(seq=t.length, engine=eng, kv_dtype=bf16, util=u)).max_concurrency
    assert caps[0.5] < caps[None]
    runs = {}
    for u in (None, 0.5):
        sim = _Sim(m, np.full(400, 2000), np.full(400, 500), bf16, eng, for_engine(DEFAULTS, eng), 0, None, t, util=u)
        assert sim.replica(g, 1, 1, 1).capacity == caps[u]
        runs[u] = sim.run(g, 2.0, 1, 1, 1)
    assert runs[0.5].preemptions > runs[None].preemptions
    args = ("--gpus", "l40s", "--rate", "2", "--prompt", "2000", "--output", "500", "--tpot", "100ms")
    r = cli("plan", "--model", "llama3.1-8b", *args, "--util", "0.5", "--closed-form", "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert any("a memory fraction of 0.5" in a for a in d["assumptions"])
    tp1 = [x for x in d["ranked"] if x["shape"] == "TP 1"]
    assert tp1 and all(x["capacity_per_replica"] == caps[0.5] for x in tp1)
    one_line_error(cli("plan", "--model", "llama3.1-8b", "--gpus", "l40s", "--rate", "2", "--util", "2"), "(--util)")


def test_plan_names_the_fixed_split_triton_mla_decode_it_prices(cli):
    # SGLang 0.4.2.post2 to 0.4.4 decode MLA with their Triton kernel at a fixed --triton-attention-num-kv-splits: 8 on
    # CUDA, 16 on ROCm (server_args.py); the step model prices it on Hopper and the MI300X (engines.triton_mla_fixed_splits),
    # and the decode step's assumption says so, by GPU. A release that runs FlashAttention 3 on Hopper says nothing.
    ask = ("plan", "--model", "deepseek-v3", "--gpus", "mi300x,h200", "--rate", "1", "--prompt", "1000", "--output", "200")
    ask += ("--ttft", "2s", "--tpot", "100ms", "--json")
    old = cli(*ask, "--engine", "sglang@0.4.2.post4").json()
    said = [a for a in old["assumptions"] if "default Triton MLA kernel" in a]
    assert len(said) == 1 and "(mi300x: 16 parts, h200: 8 parts)" in said[0] and "5.27 GB/s a block" in said[0]
    new = cli(*ask, "--engine", "sglang@0.4.5.post3").json()
    assert not any("default Triton MLA kernel" in a for a in new["assumptions"])


def test_a_v0_deployment_past_max_seq_len_to_capture_agrees_with_its_simulation(cli):
    # vLLM V0 decodes without its CUDA graph while a request in the step is past 8,192 tokens (Engine.decode_graph_max_len).
    # 6,000 + 4,000 tokens: a running request is past it once 2,192 of its 4,000 output tokens are out, a share
    # (10,000 - 8,192) / 4,000 = 0.452 of them, so a step of n holds one with chance 1 - 0.548^n: nearly every step
    # of the 20 to 40 in flight here. The closed form's mean context (6,000 + 2,000) is under 8,192; it takes that
    # chance, as the simulation's longest running request has it, and the two agree within 10%.
    assert round((6000 + 4000 - 8192) / 4000, 3) == 0.452
    args = ("--model", "llama3.1-8b", "--gpus", "h100", "--engine", "vllm@0.6", "--prompt", "6000", "--output", "4000")
    d = cli("plan", *args, "--rate", "0.5", "--tpot", "100ms", "--ttft", "5s", "--max-gpus", "2", "--json").json()
    assert d["verified"]
    for v in d["verified"]:
        assert abs(v["closed_form_tpot_s"] / v["tpot_mean_s"] - 1) < 0.10, v
    # Without the rule's chance (the mean context alone) the closed form was 17% under its simulation at TP 2.
    graphed = [v for v in d["verified"] if v["tp"] == 2][0]
    assert graphed["closed_form_tpot_s"] > 1.1 * 0.0155


def _sglang_loop(overlap: bool, every: int, rate: float, t0: float, a: float, c: float, n: int = 50_000) -> tuple[float, float]:
    """An independent model of SGLang's scheduler loop alone (managers/scheduler.py event_loop_normal and
    event_loop_overlap, scheduler_recv_skipper.py), not the simulator's: requests always decoding in steps of ``t0``;
    a prompt step of j prompts a + c j; ``n`` Poisson arrivals at ``rate`` (seed 0). Each pass adds the weight of the
    last batch to the counter (1 a decode step, 1,000 a prompt step; none on the first pass) and polls when it reaches
    ``every``, then runs a prompt step of all it holds, else a decode step. Without overlap a pass follows its step's
    end; with it, a pass begins as the step it launched before begins on the GPU. (Mean wait from arrival to the end of
    its prompt step, the share of the time in prompt steps.)"""
    arr = np.cumsum(np.random.default_rng(0).exponential(1 / rate, n))
    i, held, waits, in_prompts = 0, [], 0.0, 0.0
    counter, last, t, gpu = every, "", 0.0, 0.0
    while i < n or held:
        counter += {"": 0, "prompt": 1000, "decode": 1}[last]
        if counter >= every:
            counter = 0
            while i < n and arr[i] <= t:
                held.append(arr[i])
                i += 1
        start = gpu if overlap else t
        if held:
            end = start + a + c * len(held)
            in_prompts += end - start
            waits += sum(end - x for x in held)
            held, last = [], "prompt"
        else:
            end, last = start + t0, "decode"
        gpu, t = end, (start if overlap else end)
    return waits / n, in_prompts / gpu


def test_the_overlap_loops_wait_in_the_closed_form_meets_an_independent_loop():
    # docs/simulation.md: the closed form's wait (_Replica.admit_wait) for a decode step of 25.5 ms and a prompt step of
    # 18.5 ms + 13.8 ms a prompt (Qwen3-30B-A3B on an H100, 1,000-token prompts, about 45 decoding), against what the
    # loop model above adds to the mean wait with overlap, at the share of the time in prompt steps it measures.
    t0, a, c = 0.0255, 0.0185, 0.0138
    m, g, bf16 = resolve_model("qwen3-30b-a3b"), resolve_gpu("h100"), kv_dtype("bf16")
    gaps = []
    for every, rates in ((1, (1.0, 5.0, 8.0)), (10, (1.0, 3.0, 5.0, 8.0))):
        for rate in rates:
            plain, u = _sglang_loop(False, every, rate, t0, a, c)
            overlap, _ = _sglang_loop(True, every, rate, t0, a, c)
            t = Traffic(prompt=1000, output=300, rate=rate)
            rep = _Replica(m, g, 1, 1, t, bf16, engine("sglang@0.5.9"), recv_interval=every)
            rep._decode_step = lambda decodes, t_step: t0  # type: ignore[method-assign]
            gaps.append(round(100 * (1 - rep.admit_wait(45, t0, u, rate, a + c) / (overlap - plain)), 1))
    assert gaps == [-0.1, 1.1, 1.5, 1.4, 1.4, 2.7, 8.6]  # (the loop's wait above the formula's, %)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "within 0.1% above and 1.1% and 1.5% below at N = 1 and 1, 5 and 8 requests a second, 1.4%, 1.4%, 2.7% and 8.6% below at N = 10"
        in text
    )


TAIL_ADDS = [0.0, 0.0, 0.0]
"""What the overlap loop's step past a request's end adds to the simulated mean TTFT, ms, at 1, 3 and 5 requests a second
(test_the_overlap_loops_wait_in_the_closed_form_tracks_the_simulation; docs/simulation.md quotes it)."""


def test_the_overlap_loops_wait_in_the_closed_form_tracks_the_simulation(monkeypatch):
    # docs/simulation.md: what SGLang 0.5.9's overlap loop adds to the mean TTFT (the same replica and requests with
    # Engine.overlap_admission off, in both), closed form against 3,000 simulated requests, Qwen3-30B-A3B on an H100,
    # 1,000 and 300 tokens, at N = 1 and 10 and 1, 3 and 5 requests a second.
    from kvcalc.engine.engines import Engine

    def ttfts(every: int, rate: float) -> tuple[float, float]:
        _, st, run_ = _replica_and_run("qwen3-30b-a3b", "h100", 1, 1000, 300, rate, "sglang@0.5.9", every)
        return st[3], run_.ttft_s.mean

    # What the step the loop runs past a request's end adds in the simulation (Engine.overlap_tail; plan's closed form
    # leaves it out): at N = 1, the late admission in both.
    tail = []
    for rate in (1.0, 3.0, 5.0):
        with monkeypatch.context() as mp:
            mp.setattr(Engine, "overlap_tail", property(lambda self: False))
            sim0 = ttfts(1, rate)[1]
        tail.append(round((ttfts(1, rate)[1] - sim0) * 1e3, 1))
    assert TAIL_ADDS == tail
    said = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "it adds 0.0 ms to the simulated mean TTFT at 1, 3 and 5 requests a second" in said and set(tail) == {0.0}
    # The late admission alone: the tail step off in both arms.
    monkeypatch.setattr(Engine, "overlap_tail", property(lambda self: False))
    got = []
    for every in (1, 10):
        for rate in (1.0, 3.0, 5.0):
            with monkeypatch.context() as mp:
                mp.setattr(Engine, "overlap_admission", property(lambda self: False))
                closed0, sim0 = ttfts(every, rate)
            closed, sim = ttfts(every, rate)
            got.append((round((closed - closed0) * 1e3, 1), round((sim - sim0) * 1e3, 1)))
    assert all(abs(x - y) <= 0.1 * y + 0.5 for x, y in got), got
    # (26.7, 26.8) and (36.0, 35.1) until a prompt step's count of prompts followed the length of the step before it
    assert got == [(7.2, 7.1), (20.0, 19.8), (26.2, 26.2), (8.8, 9.1), (27.0, 26.8), (37.2, 35.1)]
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "7.2 and 7.1 ms, 20.0 and 19.8 ms, 26.2 and 26.2 ms at N = 1 and 1, 3 and 5 requests a second; 8.8 and 9.1 ms, "
        "27.0 and 26.8 ms, 37.2 and 35.1 ms at N = 10" in text
    )
