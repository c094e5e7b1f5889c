"""kvcalc plan: the fewest GPUs that carry a load within its latency targets."""

import math

import pytest

from conftest import one_line_error
from kvcalc.engine.engines import engine
from kvcalc.engine.memory import FitInputs, fit
from kvcalc.engine.plan import SLO, Traffic, _check, _Replica, plan
from kvcalc.engine.roofline import decode_bound, prefill_bound
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
    held = fit(m, h, FitInputs(seq=32768, tp=b.tp, pp=b.pp, kv_dtype=fp8)).max_concurrency
    assert held * b.replicas >= 64
    # TP 4 x PP 4 (16 GPUs) holds about 100 requests, the reckoning (~104).
    assert 90 <= fit(m, h, FitInputs(seq=32768, tp=4, pp=4, kv_dtype=fp8)).max_concurrency <= 110


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
    # Prompts keep the replica busy for rate / replicas x the 1,000-token prefill bound / 0.7 of its time.
    prefill = prefill_bound(m, h, 1000, 4).t_bound_s / 0.7
    busy = 4.0 / b.replicas * prefill
    assert b.use["prefill"] == pytest.approx(busy, rel=1e-5) and busy < 1
    # TPOT: the roofline bound of ceil(n) requests at the mid-output context (1,000 + 100), plus the
    # all-reduce, over the efficiency 0.7, over the time prefill leaves.
    p = decode_bound(m, h, math.ceil(n), 1100, bf16, 4, with_allreduce=True)
    assert b.tpot_s == pytest.approx((p.t_bound_s + p.t_allreduce_s) / 0.7 / (1 - busy), rel=1e-9)
    # TTFT: the 1,000-token prefill bound, plus one step.
    assert b.ttft_s == pytest.approx(prefill + b.tpot_s, rel=1e-9)
    # Little's law: requests in flight = rate per replica x (TTFT + 200 x TPOT).
    assert n == pytest.approx(4.0 / b.replicas * (b.ttft_s + 200 * b.tpot_s), rel=1e-4)
    assert b.tpot_s <= 0.030
    # One replica fewer misses a target.
    if b.replicas > 1:
        rep = _Replica(m, h, 4, 1, t, bf16, engine("vllm"), 0.7)
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
    assert r.code == 0 and "Fewest:" in r.out and "binding" in r.out


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
    ],
)
def test_bad_input_is_one_line(cli, args, needle):
    one_line_error(cli("plan", "--model", "llama3.1-8b", *args), needle)


def test_prefill_share_limits_a_replica():
    # 1,000-token prompts at 10 requests/s on 2 H200s at TP 2: the prefills alone need more than the
    # replica's time (10 x 2 x 70.6e9 x 1000 / 2 GPUs / (989.5e12 x 0.7) > 1), so one replica fails.
    m, h = resolve_model("llama3.1-70b"), resolve_gpu("h200")
    t = Traffic(prompt=1000, output=200, rate=10.0)
    rep = _Replica(m, h, 2, 1, t, kv_dtype("bf16"), engine("vllm"), 0.7)
    ok, _, fail, use = _check(rep, t, SLO(), 1)
    assert not ok and fail == "prefill" and use["prefill"] > 1


def test_the_closed_form_agrees_with_the_simulation(cli):
    d = cli(
        "plan",
        "--model",
        "llama3.1-70b",
        "--rate",
        "10",
        "--prompt",
        "1000",
        "--output",
        "200",
        "--tpot",
        "50ms",
        "--gpus",
        "h200",
        "--json",
    ).json()
    best, checked = d["best"], d["verified"][0]
    assert (checked["gpu"], checked["tp"], checked["replicas"]) == (best["gpu"], best["tp"], best["replicas"])
    assert checked["ok"]
    assert abs(checked["tpot_s"] - best["tpot_s"]) / best["tpot_s"] < 0.15
