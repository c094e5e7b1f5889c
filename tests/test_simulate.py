"""kvcalc simulate: continuous batching over time under each allocation policy."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from conftest import one_line_error
from kvcalc.engine.engines import Engine, engine
from kvcalc.engine.simulate import Blocks, SimSettings, Workload, parse_policies, simulate
from kvcalc.engine.steptime import StepModel
from kvcalc.errors import KvcalcError
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import kv_dtype

BF16 = kv_dtype("bf16")


def run(model, gpu, prompts, outputs, arrivals=None, policies="prealloc,oracle,paged-16", pool=None, **kw):
    prompts, outputs = np.asarray(prompts), np.asarray(outputs)
    arr = np.zeros(len(prompts)) if arrivals is None else np.asarray(arrivals, dtype=float)
    wl = Workload(arr, prompts, outputs, "test", "test", kw.pop("prefix", 0), kw.pop("hit", 0.0))
    workers = kw.pop("workers", 1)
    eng = engine(kw.pop("engine", "vllm"))
    st_ = SimSettings(kw.pop("max_len", 2048), kw.pop("max_num_seqs", 256), kw.pop("mnbt", 2048), **kw)
    return simulate(
        resolve_model(model),
        resolve_gpu(gpu),
        wl,
        st_,
        parse_policies(policies),
        eng,
        BF16,
        pool_bytes=pool,
        workers=workers,
    )


@settings(max_examples=200, deadline=None)
@given(
    st.floats(0, 1),
    st.floats(-1e-3, 1e-3),
    st.floats(0, 1),
    st.floats(-1e-3, 1e-3),
    st.integers(1, 400),
)
def test_span_time_is_the_sum_of_its_steps(m0, m1, c0, c1, K):
    brute = sum(max(max(m0 + m1 * k, 0), max(c0 + c1 * k, 0)) for k in range(K))
    # Lines that stay positive over the span (step times are positive).
    if min(m0 + m1 * (K - 1), c0 + c1 * (K - 1)) < 0:
        return
    assert StepModel.span_s((m0, m1, c0, c1, 0.0), K) == pytest.approx(brute, rel=1e-9, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-5000, 5000), min_size=0, max_size=30), st.integers(0, 10_000), st.sampled_from([1, 3, 16, 128]))
def test_block_count_is_the_sum_of_ceilings(bases, S, B):
    b = Blocks(B)
    for x in bases:
        b.add(x)
    lengths = [x + S for x in bases]
    if any(v < 1 for v in lengths):
        return
    assert b.total(S) == sum(-(-v // B) for v in lengths)
    if bases:
        b.remove(bases[0])
        assert b.total(S) == sum(-(-v // B) for v in lengths[1:])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(1, 400), min_size=0, max_size=12), st.integers(0, 300), st.sampled_from([1, 3, 16]), st.integers(-5, 200)
)
def test_the_step_blocks_run_out_is_the_first_whose_ceilings_pass_the_limit(lengths, S, B, extra):
    # Requests of these lengths at step S; each grows by one a step. Brute force: step by step.
    b = Blocks(B)
    for x in lengths:
        b.add(x - S)
    limit = sum(-(-v // B) for v in lengths) + extra
    want = 0  # without requests the blocks never grow: they pass the limit only if they already do
    if lengths or limit < 0:
        k = 1
        while sum(-(-(v + k) // B) for v in lengths) <= limit:
            k += 1
        want = k
    assert b.first_over(S, limit) == want


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from([16, 32, 48]), st.integers(1, 400)), min_size=0, max_size=12),
    st.integers(0, 300),
    st.sampled_from([1, 3, 16]),
    st.integers(0, 700),
    st.one_of(st.integers(0, 3), st.integers(0, 200)),
    st.integers(1, 300),
    st.sampled_from([0, 20, 48]),
)
@example([16], 0, 16, 0, 0, 5, 0)  # a full block at once: its next token takes a block, with none free
def test_a_paged_pool_runs_out_at_the_first_step_past_it(lengths, S, B, prompt, room, K, prefix):
    # Paged.steps_to_full, given what is in use now: decoding requests of these lengths at step S (each a token longer a
    # step, a shared prefix's full blocks held once), a prompt's blocks, and ``room`` blocks free. Brute force, step by step
    # from the ceilings: the first of K steps whose blocks pass the pool, else K + 1.
    from kvcalc.engine.simulate.allocator import Paged

    lengths = [max(v, prefix + 1) for v in lengths]
    sp = prefix // B  # the prefix's full blocks
    n = len(lengths)
    own = -(-prompt // B) - sp if prompt > prefix else 0
    shared = sp if sp and (n or own) else 0

    def held(k: int) -> int:
        return sum(-(-(v + k) // B) - sp for v in lengths) + shared + own

    p = Paged(B, (held(0) + room) * B, 1, prefix)
    for v in lengths:
        p.start_decode(v - S)
    if own:
        assert p.reserve(0, prompt, prompt + 1, S, n)
    elif n:
        p.take_prefix()
    assert p.in_use(S, n) == held(0) and p.cap == held(0) + room
    want = next((k for k in range(1, K + 1) if held(k) > p.cap), K + 1)
    assert p.steps_to_full(S, K, n, held(0)) == want


def test_one_request_decodes_at_the_step_model():
    # One request, no contention: each decode step of Llama-2-7B on an H100 reads its streamed weights
    # (6,738,415,616 parameters less the 131,072,000 of the input embedding, at 2 bytes, plus one
    # 8,192-byte embedding row) over 3.35 TB/s x 0.86 (the H100 spec's measured matmul share) and its
    # KV (2 x 32 layers x 4,096 x 2 B = 524,288 B per token) over 3.35 TB/s x 0.80; the compute term
    # (2 x 6.6e9 FLOPs over 989.5 TFLOPS x 0.7) is 400x smaller, and combines with the weights' time as
    # their root-sum-square (adding under 0.01%). Each step adds its 32 layers' kernel
    # latencies: 4 matmuls at 3.4 us (the spec's measured latency), an attention call at 11 us, 5 small
    # kernels at 2.7 us, and the attention call's work for its one request's 32 KV heads at the spec's
    # measured 24.5 ns each. The host's 0.5 ms and 4 us for its one request run beside the GPU's work: the
    # default release schedules the next step ahead (vLLM from 0.14, async scheduling).
    # TPOT is the mean of the 99 steps after the first token (contexts 100 to 198).
    r = run("llama2-7b", "h100", [100], [100], policies="paged-16")
    p = r.runs[0]
    # The small kernels between the matmuls move 32 x (2 x 4 x 4,096 x 2 + 2 x (2 x 64 x 128 + 32 x 256)
    # + 6 x 11,008) B for the token, at the same bandwidth.
    weights = (6_738_415_616 - 131_072_000) * 2 + 8_192
    small = 32 * (2 * 4 * 4096 * 2 + 2 * (2 * 64 * 128 + 32 * 256) + 6 * 11008)
    import math

    flops = 2 * (6_738_415_616 - 131_072_000)
    steps = [
        math.hypot(weights / (3.35e12 * 0.86), flops / (989.5e12 * 0.7))
        + (524_288 * (100 + k) + small) / (3.35e12 * 0.80)
        + 32 * (4 * 3.4e-6 + 11e-6 + 5 * 2.7e-6 + 32 * 24.5e-9)
        for k in range(99)
    ]
    assert p.tpot_s.p50 == pytest.approx(sum(steps) / 99, rel=1e-6)
    assert p.completed == 1 and p.preemptions == 0
    # TTFT: the request path (4 ms + 1.5 us x 100 prompt tokens, jittered by 0.5 to 1.5) and the prefill step.
    assert 0.5 * 4.15e-3 < p.ttft_s.p50 - steps[0] < 1.5 * 4.15e-3 + 1e-3


def test_a_concurrency_limit_keeps_that_many_in_flight():
    # A closed loop of 8 users over 200 equal requests: never more than 8 run at once, and the
    # next request goes out only when one ends, so the run lasts about 200 / 8 request lifetimes.
    r = run("llama3.1-8b", "h100", [500] * 200, [100] * 200, policies="paged-16", concurrency=8)
    p = r.runs[0]
    assert p.max_running <= 8 and p.completed == 200 and not p.overloaded
    life = p.bench.e2el_s.mean
    assert p.bench.duration_s == pytest.approx(200 / 8 * life, rel=0.1)
    # Requests per second by Little's law: 8 in flight over the mean lifetime.
    assert p.requests_per_s == pytest.approx(8 / life, rel=0.1)
    assert r.verdict.startswith("8 requests in flight")


def test_equal_requests_do_not_lock_step():
    # The request path is drawn per request (x 0.5 to 1.5), so a closed loop of equal requests
    # spreads out: their first tokens do not all land on the same step.
    r = run("llama3.1-8b", "h100", [200] * 64, [50] * 64, policies="paged-16", concurrency=16)
    assert r.runs[0].bench.ttft_s.p99 > r.runs[0].bench.ttft_s.p50


def test_a_queue_that_grows_is_an_overload_even_when_the_first_completions_come_fast(cli):
    # Llama-3.1-70B on 8 H100s at 26.4 requests/s of 1,000 + 200 tokens (issue 17's plan example),
    # 1,500 requests: the steady window's completions (the early requests, at a batch that has not
    # grown yet) run faster than the offered rate, yet the whole run serves under 20 a second and
    # the queue grows while requests arrive. The run said "keeps up"; it is overloaded, and what it
    # sustains is under what is offered.
    base = ("simulate", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8")
    base += ("--prompt", "1000", "--output", "200", "-n", "1500", "--policies", "paged-16", "--json")
    d = cli(*base, "--rate", "26.4").json()
    r = d["runs"][0]
    assert r["requests_per_s"] > r["offered_per_s"]  # the steady window alone would say it keeps up
    assert r["bench"]["request_throughput_per_s"] < 0.8 * r["offered_per_s"]
    assert r["overloaded"] and r["sustained_per_s"] < 0.9 * r["offered_per_s"]
    assert d["verdict"].startswith(f"OVERLOADED: offered {r['offered_per_s']:,.3g} requests/s, paged-16 sustains")
    # Well below capacity nothing waits, and the verdict stays.
    assert not cli(*base, "--rate", "5").json()["runs"][0]["overloaded"]


def test_an_offered_load_above_capacity_is_called_overloaded():
    # 40 requests/s of 2,000 + 500 tokens on one A100 80GB: far more than an 8B model serves there.
    rng = np.random.default_rng(0)
    arr = np.cumsum(rng.exponential(1 / 40, size=2000))
    r = run("llama3.1-8b", "a100-80gb", [2000] * 2000, [500] * 2000, arrivals=arr, policies="paged-16", max_len=4096)
    p = r.runs[0]
    assert p.overloaded and p.requests_per_s < 0.95 * p.offered_per_s
    # The offered rate is the sampled arrivals': 1,999 gaps over their span, about 40 a second.
    assert p.offered_per_s == pytest.approx(1999 / (arr[-1] - arr[0])) == pytest.approx(40, rel=0.05)
    assert r.verdict.startswith(f"OVERLOADED: offered {p.offered_per_s:,.3g} requests/s")


def test_a_closed_loop_with_more_users_than_requests_is_refused(cli):
    one_line_error(
        cli("simulate", "--model", "llama3.1-8b", "--requests", "10", "--concurrency", "11", "--policies", "paged-16"),
        "--concurrency",
    )


def test_the_papers_shape_on_a_sharegpt_like_mix():
    # vLLM paper (Kwon et al., SOSP 2023), Figure 2 and section 6: preallocating systems use 20-40%
    # of their KV memory for tokens, vLLM above 96%; paging serves 2-4x the throughput. A 13B model
    # on an A100 40GB, prompts and outputs with ShareGPT's means (161, 338 tokens), 2,048 max.
    rng = np.random.default_rng(0)
    n = 1500
    P = np.clip(np.rint(rng.lognormal(np.log(98), 1.0, n)), 1, 2047).astype(int)
    O = np.clip(np.rint(rng.lognormal(np.log(205), 1.0, n)), 1, 2047).astype(int)
    O = np.maximum(np.minimum(O, 2048 - P), 1)
    r = run("llama2-13b", "a100-40gb", P, O)
    by = {p.policy: p for p in r.runs}
    assert 0.20 <= by["prealloc"].kv_utilization <= 0.40
    assert by["paged-16"].kv_utilization > 0.90
    assert by["prealloc"].kv_utilization < by["oracle"].kv_utilization < by["paged-16"].kv_utilization
    assert by["prealloc"].requests_per_s < by["oracle"].requests_per_s < by["paged-16"].requests_per_s
    assert r.paged_over_prealloc >= 2
    assert all(p.completed == n for p in r.runs)


def test_without_memory_pressure_the_policies_agree():
    # A pool that holds every request at max length: memory never binds, so the same requests run
    # at the same times under every policy.
    r = run("llama2-7b", "h100", [50] * 20, [30] * 20, max_len=128, pool=10**12)
    tputs = {round(p.requests_per_s, 9) for p in r.runs}
    assert len(tputs) == 1
    assert all(p.preemptions == 0 for p in r.runs)


def test_swapping_recomputes_nothing_and_recompute_does():
    P, O = [200] * 60, [600] * 60
    pool = 30 * 16 * 524288 * 40  # 40 requests' worth of 30 blocks each
    rec = run("llama2-7b", "h100", P, O, policies="paged-16", pool=pool, preempt="recompute").runs[0]
    swp = run("llama2-7b", "h100", P, O, policies="paged-16", pool=pool, preempt="swap", swap_bytes=2**40).runs[0]
    assert rec.preemptions > 0 and rec.recomputed_tokens > 0
    assert swp.preemptions > 0 and swp.recomputed_tokens == 0 and swp.swapped_bytes > 0
    assert rec.completed == swp.completed == 60


def test_a_shared_prefix_is_held_once_under_paging():
    P, O = [1000] * 40, [50] * 40
    without = run("llama2-7b", "h100", P, O, policies="paged-16", pool=40 * 2**30).runs[0]
    shared = run("llama2-7b", "h100", P, O, policies="paged-16", pool=40 * 2**30, prefix=960).runs[0]
    # Stored once and not recomputed, the prefix lets more requests run together and finish sooner.
    assert shared.max_running >= without.max_running and shared.duration_s < without.duration_s
    assert shared.mean_running > without.mean_running


def test_poisson_arrivals_below_capacity_do_not_queue(cli):
    d = cli("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "--requests", "300", "--rate", "0.5", "--json").json()
    for p in d["runs"]:
        # A request waits only for the step in progress to end (an 8B decode step on an H100 is ~6 ms).
        assert p["queue_s"]["p99"] < 0.02 and p["completed"] == 300
        assert abs(p["requests_per_s"] - 0.5) < 0.15


def test_trace_with_arrival_times(cli, tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("\n".join(json.dumps({"prompt_tokens": 100, "output_tokens": 20, "arrival_time": 5 + i}) for i in range(10)))
    d = cli("simulate", "--model", "llama2-7b", "--trace", f, "--json").json()
    assert d["requests"] == 10 and d["arrival"] == "the trace's arrival times"
    assert all(p["completed"] == 10 for p in d["runs"])


def test_a_bench_serve_result_is_a_trace_of_its_requests(cli, tmp_path):
    # vllm bench serve --save-result writes one JSON object, pretty-printed or not, with each request's
    # prompt and output tokens in input_lens and output_lens; an empty output (a request that ended at
    # once) is replayed as one token.
    f = tmp_path / "result.json"
    f.write_text(json.dumps({"num_prompts": 4, "input_lens": [100, 200, 300, 400], "output_lens": [10, 0, 30, 40]}, indent=1))
    d = cli("simulate", "--model", "llama2-7b", "--trace", f, "--rate", "1", "--json").json()
    assert d["requests"] == 4 and d["mean_prompt"] == (100 + 200 + 300 + 400) / 4 and d["mean_output"] == (10 + 1 + 30 + 40) / 4
    assert all(p["completed"] == 4 for p in d["runs"])
    # The corpus's own recorded runs are such files: dstack's 1,000 requests of 215.196 and 120.689 tokens.
    lengths = Path(__file__).parent / "serving" / "lengths" / "dstack-405bfp8-h100x8-qps16.json"
    d = cli("simulate", "--model", "llama3.1-8b", "--trace", lengths, "--rate", "4", "--policies", "paged-16", "--json").json()
    assert d["requests"] == 1000 and round(d["mean_prompt"], 3) == 215.196


def test_text_and_plot(cli, tmp_path):
    r = cli("simulate", "--model", "llama2-13b", "--gpu", "a100-40gb", "--requests", "300", "--plot")
    assert r.code == 0 and "KV util" in r.out and "serves" in r.out and "reserved over time" in r.out
    png = tmp_path / "m.png"
    assert cli("simulate", "--model", "llama2-7b", "--requests", "50", "--plot-file", png).code == 0 and png.stat().st_size > 0


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--rate", "0"], "--rate"),
        (["--rate", "-1"], "--rate"),
        (["--rate", "nan"], "--rate"),
        (["--efficiency", "0"], "--efficiency"),
        (["--efficiency", "2"], "--efficiency"),
        (["--policies", "magic"], "--policies"),
        (["--policies", "paged-0"], "--policies"),
        (["--preempt", "maybe"], "--preempt"),
        (["--requests", "0"], "--requests"),
        (["--requests", "3000000"], "--requests"),
        (["--workload", "sharegtp"], "sharegpt"),
        (["--prompt", "lognormal:median=5"], "--prompt"),
        (["--shared-prefix", "5000"], "--shared-prefix"),
        (["--concurrency", "0"], "--concurrency"),
        (["--workload", "foo"], "one of alpaca, sharegpt"),
        (["--concurrency", "nan"], "--concurrency"),
        (["--request-overhead", "25"], "--request-overhead"),
        (["--calibration", "/nonexistent/cal.json"], "cal.json"),
    ],
)
def test_bad_input_is_one_line(cli, args, needle):
    one_line_error(cli("simulate", "--model", "llama2-7b", *args), needle)


def test_a_plain_token_count_is_a_fixed_length(cli):
    # --prompt 1000 as plan takes it (and as the help shows), the same as fixed:1000.
    a = cli("simulate", "--model", "llama2-7b", "--prompt", "1000", "--output", "50", "-n", "50", "--json").json()
    b = cli("simulate", "--model", "llama2-7b", "--prompt", "fixed:1000", "--output", "fixed:50", "-n", "50", "--json").json()
    assert a["mean_prompt"] == b["mean_prompt"] == 1000 and a["runs"] == b["runs"]


def test_rate_inf_sends_everything_at_once(cli):
    a = cli("simulate", "--model", "llama2-7b", "--rate", "inf", "-n", "100", "--policies", "paged-16", "--json").json()
    b = cli("simulate", "--model", "llama2-7b", "-n", "100", "--policies", "paged-16", "--json").json()
    assert a["runs"] == b["runs"] and a["verdict"].startswith("every request at once")


def test_event_bound_is_checked_up_front():
    n = 20_000
    wl = Workload(np.zeros(n), np.full(n, 1000), np.full(n, 10), "x", "burst")
    st_ = SimSettings(2048, 256, 1)  # one prompt token per step: 20 million prompt steps per policy
    from kvcalc.errors import KvcalcError

    with pytest.raises(KvcalcError, match="events"):
        simulate(
            resolve_model("llama2-7b"),
            resolve_gpu("h100"),
            wl,
            st_,
            parse_policies("paged-16,prealloc,oracle"),
            engine("vllm"),
            BF16,
        )


SIM_BEGIN, SIM_END = "<!-- sim-table:begin -->", "<!-- sim-table:end -->"
PAPER = {"prealloc": "Orca (Max): 20.4%", "oracle": "Orca (Oracle): 38.2%", "paged-16": "vLLM: 96.3%"}


def test_simulation_doc_is_what_the_command_prints(cli):
    import os
    from pathlib import Path

    d = cli(
        "simulate", "--model", "llama2-13b", "--gpu", "a100-40gb", "--workload", "sharegpt", "--requests", "2000", "--json"
    ).json()
    pre = next(r for r in d["runs"] if r["policy"] == "prealloc")["requests_per_s"]
    lines = [
        SIM_BEGIN,
        "| policy | KV memory holding tokens, kvcalc | the paper (Figure 2) | requests/s | over prealloc | preemptions |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for r in d["runs"]:
        lines.append(
            f"| {r['policy']} | {r['kv_utilization']:.1%} | {PAPER[r['policy']]} | {r['requests_per_s']:.2f} | "
            f"{r['requests_per_s'] / pre:.2f}x | {r['preemptions']:,} |"
        )
    lines.append(SIM_END)
    new = "\n".join(lines)
    doc = Path(__file__).resolve().parent.parent / "docs" / "simulation.md"
    text = doc.read_text()
    start, end = text.index(SIM_BEGIN), text.index(SIM_END) + len(SIM_END)
    if os.environ.get("KVCALC_ACCURACY") == "write":
        doc.write_text(text[:start] + new + text[end:])
        return
    assert text[start:end] == new, "docs/simulation.md is stale: KVCALC_ACCURACY=write pytest tests/test_simulate.py"


def test_policies_in_forked_processes_give_the_same_runs():
    # workers=2 forks a process a policy; each run must be exactly the in-process one.
    rng = np.random.default_rng(3)
    n = 400
    P, O = rng.integers(50, 1500, n), rng.integers(2, 400, n)
    arr = np.cumsum(rng.exponential(0.2, n))
    a = run("llama2-7b", "a100-40gb", P, O, arrivals=arr)
    b = run("llama2-7b", "a100-40gb", P, O, arrivals=arr, workers=2)
    assert a.runs == b.runs


def test_the_arrival_and_verdict_name_each_policy(cli):
    # --rate says Poisson (not a trace), and an overload names every policy that cannot keep up and
    # those that can: the vLLM paper's case, prealloc and oracle drowning where paging keeps up.
    d = cli("simulate", "--model", "llama2-13b", "--gpu", "a100-40gb", "--workload", "sharegpt", "--rate", "2", "--json").json()
    assert d["arrival"] == "Poisson, 2 requests/s"
    over = [r["policy"] for r in d["runs"] if r["overloaded"]]
    assert over == ["prealloc", "oracle"]
    assert d["verdict"].startswith("OVERLOADED: offered") and "(paged-16 keeps up)" in d["verdict"]
    c = cli("simulate", "--model", "llama2-7b", "-n", "50", "--concurrency", "4", "--policies", "paged-16", "--json").json()
    assert c["arrival"] == "rate inf: every request is ready at time 0, at most 4 in flight"


def test_the_client_sends_as_vllm_bench_serves_semaphore_does():
    # Arrivals at 0, 0.1 and 0.2 s, one slot (--max-concurrency 1), no request path: request 0 goes
    # at 0; request 1 arrives at 0.1 but waits for the slot, which frees when request 0 ends at 0.5;
    # request 2 arrived at 0.2 and goes when request 1 ends at 0.9. The clock of TTFT starts at the send.
    from kvcalc.engine.simulate import Client

    c = Client([0.0, 0.1, 0.2], 0.0, concurrency=1)
    assert c.peek() == (0.0, 0) and c.sent[1] != c.sent[1]  # not sent yet (NaN)
    c.take()
    c.finished(0.5)
    assert c.peek() == (0.5, 1) and c.sent[1] == 0.5
    c.take()
    c.finished(0.9)
    assert c.peek() == (0.9, 2) and c.sent == [0.0, 0.5, 0.9]
    # Open loop: sent at arrival, seen by the engine a request path later (x 0.5 to 1.5, seeded).
    o = Client([0.0, 1.0], [0.01, 0.01], concurrency=None, seed=1)
    t, i = o.peek()
    assert i == 0 and 0.005 <= t <= 0.015 and o.sent == [0.0, 1.0]


def test_max_len_defaults_to_the_models_context_for_lengths_the_user_gives(cli):
    # --prompt 30000 ran into the old default --max-len of 2,048 and was refused. Lengths the user
    # gives are drawn up to the model's context (Llama-3.1-8B: 131,072, its config.json) and --max-len
    # is their longest request; a preset workload keeps to 2,048, as vllm bench serve's ShareGPT
    # sampling drops longer pairs.
    d = cli("simulate", "--model", "llama3.1-8b", "-n", "20", "--prompt", "30000", "--output", "10", "--json").json()
    assert d["max_len"] == 30_010  # the longest request, as a user sets --max-model-len for them
    assert d["runs"][0]["completed"] + d["runs"][0]["rejected"] == 20
    p = cli("simulate", "--model", "llama3.1-8b", "-n", "20", "--workload", "sharegpt", "--json").json()
    assert p["max_len"] == 2048
    # Short given lengths keep the presets' 2,048 (not Llama-4-Scout's 10M context, which no
    # prealloc reservation fits); lengths past the model's context are refused in one line.
    s = cli("simulate", "--model", "llama4-scout", "--gpu", "h100", "--tp", "8", "-n", "20", "--prompt", "1000", "--json")
    assert s.json()["max_len"] == 2048 and s.json()["runs"][0]["completed"] == 20
    # The limit named is the one that applies: llama2-7b's 4,096-token context (its config.json), less
    # the one token a request outputs; with --max-len, that; plan, which has no --max-len, its context.
    one_line_error(
        cli("simulate", "--model", "llama2-7b", "-n", "5", "--prompt", "5000"),
        "fixed length 5,000 exceeds llama2-7b's context of 4,096 tokens less one output token",
        "--prompt",
    )
    e = one_line_error(cli("simulate", "--model", "llama2-7b", "-n", "5", "--prompt", "5000", "--max-len", "3000"), "--prompt")
    assert "exceeds --max-len 3,000 less one output token" in e
    e = one_line_error(cli("plan", "--model", "llama2-7b", "--rate", "5", "--prompt", "uniform:100..9000"), "--prompt")
    assert "over llama2-7b's context of 4,096 tokens" in e and "--max-len" not in e
    # Given, it is what it says.
    g = cli("simulate", "--model", "llama3.1-8b", "-n", "20", "--prompt", "1000", "--max-len", "4k", "--json").json()
    assert g["max_len"] == 4096


def test_sglangs_and_v0s_decodes_wait_through_a_prompts_own_step():
    # A decodes alone; B's 8,000-token prompt arrives at 50 ms. Under SGLang it runs as a step of its
    # own and A's next token waits through it; under vLLM it rides beside A's decode in chunks. A's
    # decoding time is at least its 99 decode steps plus B's prefill step under SGLang, and less
    # under vLLM.
    from kvcalc.engine.steptime import StepModel

    m, g = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    # B has one output token (it ends with its prompt), so A's is the run's only TPOT.
    wl = Workload(np.array([0.0, 0.05]), np.array([8, 8000]), np.array([100, 1]), "t", "t")
    st_ = SimSettings(8192, 256, 8192)

    def decoding_s(eng: str) -> float:
        r = simulate(m, g, wl, st_, parse_policies("paged-16"), engine(eng), BF16).runs[0]
        assert r.completed == 2 and r.tpot_s.p50 == r.tpot_s.p99
        return r.tpot_s.p50 * 99

    # The floor as SGLang's own steps are priced (its overlap scheduler runs the host's time beside the GPU's).
    sm = StepModel(m, g, BF16, engine=engine("sglang"))
    floor = sm.step(0, 0.0, 8000, 8000).t_step_s + 99 * sm.step(1, 8).t_step_s
    assert decoding_s("sglang") >= floor
    assert decoding_s("vllm") < floor
    # vLLM V0 without chunked prefill (its default at 8,192 tokens) schedules prompts the same way:
    # core/scheduler.py _schedule_default, "Don't schedule decodes if prefills are scheduled".
    # Its floor counts V0's own host time a step.
    v0 = StepModel(m, g, BF16, engine=engine("vllm@0.6.3"))
    floor_v0 = v0.step(0, 0.0, 8000, 8000).t_step_s + 99 * v0.step(1, 8).t_step_s
    assert decoding_s("vllm@0.6.3") >= floor_v0
    said = simulate(m, g, wl, st_, parse_policies("paged-16"), engine("vllm@0.6.3"), BF16).assumptions
    assert any("waiting prompts first" in a and "chunked prefill off" in a for a in said)
    # With a budget under max_model_len (chunked prefill on), B's prompt rides beside A's decodes.
    st_ = SimSettings(8192, 256, 2048)
    assert decoding_s("vllm@0.6.3") < floor_v0


def test_a_prompt_step_the_decodes_sit_out_is_one_long_gap():
    # vllm bench serve pools every gap between two streamed tokens (ITL). Under SGLang B's prompt runs as a
    # step of its own, so A's stream stands still through it once: one gap of B's whole prompt step plus A's
    # decode step, and 98 gaps of a decode step each. A span of decode steps after it must not spread that
    # wait over its steps, which would lift the median and hide the long gap from the p99.
    m, g = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    wl = Workload(np.array([0.0, 0.05]), np.array([8, 8000]), np.array([100, 1]), "t", "t")
    r = simulate(m, g, wl, SimSettings(8192, 256, 8192), parse_policies("paged-16"), engine("sglang"), BF16).runs[0]
    sm = StepModel(m, g, BF16, engine=engine("sglang"))
    prompt = sm.step(0, 0.0, 8000, 8000).t_step_s
    longest_decode = sm.step(1, 108).t_step_s  # (A's context ends at 8 + 100 tokens)
    itl = r.bench.itl_s
    # 99 gaps: the 99th percentile is the largest (the first whose cumulative count reaches 98.01 of 99).
    assert itl.p99 >= prompt + sm.step(1, 8).t_step_s
    assert itl.p50 <= longest_decode
    # The mean keeps every second A waited: its 99 gaps add up to its decoding time.
    assert itl.mean * 99 == pytest.approx(r.tpot_s.p50 * 99, rel=1e-9)
    # docs/simulation.md quotes this run.
    doc = (Path(__file__).parent.parent / "docs" / "simulation.md").read_text()
    assert f"where the gap is {itl.p99 * 1e3:.0f} ms" in " ".join(doc.split())


def test_a_prompt_found_in_the_prefix_cache_is_not_recomputed():
    """--prompt-cache-hit 0.5 on a 1,000-token prompt: its whole blocks of the 500 tokens, 496, are
    found cached, the work a 496-token shared prefix saves a lone request; the contiguous policies
    recompute every prompt."""
    half = run("llama3.1-8b", "h100", [1000], [50], policies="paged-16,oracle", hit=0.5)
    shared = run("llama3.1-8b", "h100", [1000], [50], policies="paged-16,oracle", prefix=496)
    none = run("llama3.1-8b", "h100", [1000], [50], policies="paged-16,oracle")
    paged = [r.runs[0] for r in (half, shared, none)]
    assert paged[0].ttft_s.p50 == pytest.approx(paged[1].ttft_s.p50, rel=1e-9)
    assert paged[0].ttft_s.p50 < paged[2].ttft_s.p50
    assert paged[0].tpot_s.p50 == pytest.approx(paged[2].tpot_s.p50, rel=1e-9)
    assert half.runs[1].ttft_s.p50 == pytest.approx(none.runs[1].ttft_s.p50, rel=1e-9)
    # Every prompt wholly cached: still at least its last token is computed, and nothing breaks.
    full = run("llama3.1-8b", "h100", [1000, 16, 1], [5, 5, 5], policies="paged-16", hit=1.0)
    assert full.runs[0].completed == 3


def test_each_request_can_find_its_own_share_of_its_prompt_cached():
    """A benchmark run again on a server that served its first prompts before: request 0's 1,000-token prompt is
    wholly cached (its whole blocks up to token 999: 992 tokens; 8 computed), request 1's not. The two arrive 100 s
    apart and do not meet, so the mean TTFT falls by half of what a prompt step of 8 tokens at context 1,000 saves
    against one of 1,000, each request's request-path jitter being its own in both runs."""
    m, g = resolve_model("llama3.1-8b"), resolve_gpu("h100")

    def go(hits):
        wl = Workload(np.array([0.0, 100.0]), np.array([1000, 1000]), np.array([20, 20]), "t", "t", 0, 0.0, None, hits)
        return simulate(m, g, wl, SimSettings(4096, 256, 2048), parse_policies("paged-16"), engine("vllm"), BF16)

    first, none = go([1.0, 0.0]), go(None)
    sm = StepModel(m, g, BF16, engine=engine("vllm"))
    saved = sm.step(0, 0.0, 1000, 1000).t_step_s - sm.step(0, 0.0, 1000 - 992, 1000).t_step_s
    assert none.runs[0].bench.ttft_s.mean - first.runs[0].bench.ttft_s.mean == pytest.approx(saved / 2, rel=1e-9)
    assert any("1 of 2 prompts wholly in the prefix cache" in a for a in first.assumptions)
    for bad, needle in (
        ([1.0], "1 prompt-cache share for 2 requests"),
        ([1.0, float("nan")], "of request 2"),
        ([1.5, 0.0], "1.5"),
        (["x", 0.0], "'x' of request 1"),
        ([1.0, "0.5"], "'0.5' of request 2"),  # (text that reads as a number is still text)
        (0.5, "not a list for 2 requests"),
    ):
        with pytest.raises(KvcalcError, match="prompt_cache_hits") as e:
            go(bad)
        assert needle in str(e.value)


@settings(max_examples=25, deadline=None)
@given(st.floats(0, 1), st.integers(2, 3000))
def test_more_of_the_prompt_cached_never_makes_the_first_token_later(h, p):
    a = run("llama3.1-8b", "h100", [p], [4], policies="paged-16", hit=h).runs[0].ttft_s.p50
    b = run("llama3.1-8b", "h100", [p], [4], policies="paged-16", hit=min(1.0, h + 0.25)).runs[0].ttft_s.p50
    assert b <= a * (1 + 1e-12)


def test_prompt_cache_hit_takes_a_share(cli):
    for bad in ("1.5", "nan", "-0.1", "x"):
        one_line_error(cli("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "-n", "10", "--prompt-cache-hit", bad))
    r = cli("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "-n", "50", "--prompt-cache-hit", "0.5", "--json")
    assert r.code == 0 and any("prefix cache" in a for a in r.json()["assumptions"])


def test_a_weight_format_given_by_flag_sizes_the_pool_and_the_steps(cli):
    # --weight-dtype fp8 on a bf16 checkpoint (vLLM's --quantization fp8): the pool grows by exactly the
    # bytes the weights shrink by, as kvcalc fit counts them, and a decode step reads the smaller weights.
    base = ("--model", "qwen2.5-7b", "--gpu", "rtx4090", "--max-len", "2048")
    ask = ("simulate", *base, "--concurrency", "1", "--requests", "20", "--prompt", "200", "--output", "200", "--json")
    bf16, fp8 = cli(*ask).json(), cli(*ask, "--weight-dtype", "fp8").json()
    fit = {
        wd: next(
            e["best"]
            for e in cli("fit", *base[:4], "--seq", "2048", "--weight-dtype", wd, "--json").json()["estimates"]
            if e["key"] == "weights"
        )
        for wd in ("bf16", "fp8")
    }
    assert fp8["pool_bytes"] - bf16["pool_bytes"] == fit["bf16"] - fit["fp8"]
    # Qwen2.5-7B's attention and MLP matrices (822,212,608 + 5,703,204,864 parameters, its spec) go from
    # 2 bytes to 1, less their fp8 scales: within 0.2% of one byte a parameter.
    assert abs((fit["bf16"] - fit["fp8"]) / (822_212_608 + 5_703_204_864) - 1) < 0.002
    assert any(a.startswith("weights as fp8") for a in fp8["assumptions"])
    # The line names the weights a GPU holds, in GiB: fit's 8,721,486,992 B / 2^30 = 8.12.
    assert fit["fp8"] == 8_721_486_992 and round(8_721_486_992 / 2**30, 2) == 8.12
    assert any(a.startswith("weights as fp8 (8.12 GiB a GPU:") for a in fp8["assumptions"])
    assert any("guesses the checkpoint's layout" in w for w in fp8["warnings"])
    # One request at a time is bound by the weights: 8.72 GB read a step against 15.24.
    ratio = fp8["runs"][0]["bench"]["tpot_s"]["mean"] / bf16["runs"][0]["bench"]["tpot_s"]["mean"]
    assert 8.72 / 15.24 < ratio < 0.75


def test_one_user_in_flight_is_said_in_the_singular(cli):
    # A closed loop of one user: its verdict and client lines count one request, not "1 requests".
    out = cli("simulate", "--model", "llama3-8b", "--gpu", "h100", "--concurrency", "1", "--requests", "20").out
    assert out.startswith("1 request in flight:") and "at most 1 request in flight" in " ".join(out.split())
    assert "1 requests" not in out


def test_one_request_is_judged_by_its_own_latency(cli):
    # One request drawn at 1 a second offers no rate (its arrivals span nothing): the verdict gives
    # its own first-token time and TPOT, as the JSON holds them, where it had called the run a burst
    # "(rate inf)" against the user's --rate 1.
    args = ("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "--requests", "1", "--rate", "1")
    d = cli(*args, "--json").json()
    run_ = d["runs"][-1]
    assert run_["completed"] == 1 and run_["offered_per_s"] is None
    want = (
        f"one request: no rate to judge; {run_['policy']} serves it in {run_['ttft_s']['mean'] * 1e3:,.4g} ms to its "
        f"first token and {run_['tpot_s']['mean'] * 1e3:,.3g} ms a token after"
    )
    assert d["verdict"] == want
    out = " ".join(cli(*args).out.split())
    assert out.startswith(want) and "rate inf" not in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        # 130,000 + 2,000 = 132,000 tokens, over Llama-3.1-8B's 131,072 (max_position_embeddings).
        (("--prompt", "130000", "--output", "2000"), "make 132,000 tokens, over llama3.1-8b's context of 131,072"),
        # fixed:1500 and 1000 make 2,500, over the 2,048 --max-len allows.
        (("--prompt", "fixed:1500", "--output", "1000", "--max-len", "2048"), "make 2,500 tokens, over --max-len 2,048"),
    ],
)
def test_a_fixed_prompt_and_output_past_the_limit_are_refused(cli, args, needle):
    one_line_error(
        cli("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "--requests", "5", *args), needle, "--prompt/--output"
    )


def test_a_distributions_longest_draws_are_cut_not_refused(cli):
    # A fixed 130,000-token prompt beside ShareGPT-like outputs: an output is cut at the 1,072 tokens
    # the context leaves (131,072 - 130,000), and the run goes ahead.
    r = cli("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "--requests", "20", "--prompt", "130000", "--json")
    assert r.code == 0
    d = r.json()
    assert d["mean_prompt"] == 130_000 and 130_000 < d["max_len"] <= 131_072 and d["mean_output"] <= 1_072


def test_a_short_run_far_below_capacity_is_not_called_overloaded():
    # 50 requests of 1,000 + 100 tokens at 2 a second on one H100: a twentieth of what an 8B model
    # serves there. The steady window holds about 40 completions, which fall short of the offered
    # rate by up to 2 / sqrt(40) = 32% by chance alone (a Poisson count of k is k +/- sqrt(k)); seed 2
    # of kvcalc simulate --seed 2 fell 9% short and was called OVERLOADED. No sampled arrival of
    # these 40 is.
    for seed in range(40):
        arr = np.cumsum(np.random.default_rng(seed).exponential(1 / 2, size=50))
        r = run("llama3.1-8b", "h100", [1000] * 50, [100] * 50, arrivals=arr, policies="paged-16")
        assert not r.runs[0].overloaded, seed
    # 50 requests at 40 a second of 2,000 + 500 on an A100 80GB arrive in about 1.4 s and each takes
    # about 17 s: the run ends before a steady state forms, and the verdict says so, with the whole
    # run's rate, where it had said "keeps up" and served 59 a second (the steady window's completions,
    # all at the end). So under vLLM V0, which admits each prompt as it comes (its blocks fit) and
    # holds it until the budget reaches it: nothing queues.
    arr = np.cumsum(np.random.default_rng(0).exponential(1 / 40, size=50))
    kw = dict(arrivals=arr, policies="paged-16", max_len=4096)
    r = run("llama3.1-8b", "a100-80gb", [2000] * 50, [500] * 50, engine="vllm@0.6", **kw)
    b = r.runs[0].bench
    assert (b.completed - 1) / r.runs[0].offered_per_s < b.e2el_s.p50
    assert r.verdict.startswith("too short to judge: requests arrive over 1.")
    assert f"served {b.request_throughput_per_s:,.3g} requests/s over the whole run" in r.verdict
    # vLLM V1 admits a prompt only when the step's token budget reaches its first chunk
    # (Engine.prompt_blocks), so the same burst queues as it comes, and it is overloaded: its
    # prompts alone need 2 x 8.03e9 parameters x 2,000 tokens = 3.2e13 FLOPs each, at most
    # 312e12 / 3.2e13 = 9.7 a second at the A100's bf16 peak, where 35.6 a second are offered.
    r = run("llama3.1-8b", "a100-80gb", [2000] * 50, [500] * 50, **kw)
    assert r.runs[0].overloaded and r.verdict.startswith("OVERLOADED: offered 35.6 requests/s")
    assert r.runs[0].sustained_per_s is not None and r.runs[0].sustained_per_s < 312e12 / (2 * 8.03e9 * 2000)


def test_a_system_that_fills_without_a_queue_is_overloaded_once_it_has_had_time_to_fill():
    from kvcalc.engine.simulate.scheduler import _absorbed

    reach = np.linspace(0.0, 100.0, 1001)  # 10 a second for 100 s, each admitted as it comes
    # Each takes 2 s: the system holds about 20 throughout.
    assert _absorbed(reach, reach, reach + 2.0)[1:] == (False, False)
    # A completion every 0.12 s against an arrival every 0.1 s (each lives 0.02 s longer than the one
    # before): the system grows by a sixth of what arrives, and no queue shows it.
    finish = 2.0 + np.arange(1001) * 0.12
    assert _absorbed(reach, reach, finish)[1:] == (False, True)
    # The same growth in a run whose requests live longer than it lasts is its filling, not a verdict.
    assert _absorbed(reach, reach, reach + 200.0 + np.arange(1001) * 0.02)[1:] == (False, False)


def test_v1_takes_a_prompts_blocks_chunk_by_chunk_and_v0_all_at_admission():
    """vLLM V1 allocates only the blocks of the tokens a step schedules (v1/core/kv_cache_manager.py
    allocate_slots, 0.8.2 to 0.16.0), so a prompt whose whole length does not fit beside a running
    request is admitted on its first chunk, and preempted (its computed chunks dropped) when a later
    chunk finds no block; V0 and SGLang wait until the whole prompt fits."""
    # A pool of 100 blocks of 16 tokens (Llama-3.1-8B: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B
    # a token). A (1,000 + 200 tokens) runs first and holds 63 blocks, growing to 75; B's prompt needs
    # 63 more, so B cannot finish its prompt until A ends. The budget is 256 tokens a step.
    pool = 100 * 16 * 131072
    ab = dict(arrivals=[0.0, 0.05], policies="paged-16", pool=pool, mnbt=256)
    for name in ("vllm@0.6", "sglang"):
        r = run("llama3.1-8b", "h100", [1000, 1000], [200, 10], engine=name, **ab).runs[0]
        assert (r.preemptions, r.recomputed_tokens, r.max_running, r.completed) == (0, 0, 1, 2), name
    for name in ("vllm@0.8", "vllm"):
        # Prefix caching off (--no-enable-prefix-caching).
        r = run("llama3.1-8b", "h100", [1000, 1000], [200, 10], engine=name, prefix_caching=False, **ab).runs[0]
        # B's chunks of 255 tokens (the budget less A's decode): 16 blocks, then 32 beside A's 63-75;
        # the third (48) never fits, so each admission ends in a preemption that drops one or two
        # chunks, and the step after one admits nothing: a cycle of at most three steps while A
        # decodes its 199 tokens after its prompt (B arrives about 8 steps in): at least 60 cycles.
        assert r.max_running == 2 and r.completed == 2, name
        assert r.recomputed_tokens % 255 == 0, name
        assert 255 * r.preemptions <= r.recomputed_tokens <= 510 * r.preemptions, name
        assert r.preemptions >= 60, name
        # Prefix caching on (V1's default): B's two computed chunks, 510 tokens, stay cached in their
        # 510 // 16 = 31 full blocks (496 tokens) when it is preempted; while B waits for room A grows
        # from 63 to 75 blocks, the 12 it allocates taking 12 of B's (its last first), so B comes back on
        # 19 blocks, 304 tokens: one preemption, 510 - 304 = 206 tokens computed again. (14 until
        # 2026-12-06, when B's first try to come back, finding no room, forgot its blocks: it then
        # computed all 510 again, uncounted.)
        c = run("llama3.1-8b", "h100", [1000, 1000], [200, 10], engine=name, **ab).runs[0]
        assert (c.preemptions, c.recomputed_tokens, c.max_running, c.completed) == (1, 206, 2, 2), name
        assert c.duration_s < r.duration_s, name


def test_a_preempted_decoding_request_comes_back_on_what_is_left_of_its_blocks():
    """vLLM V1 with prefix caching: a preempted request's full blocks, its output's too, stay cached
    (v1/request.py append_output_token_ids hashes each full block; get_computed_blocks looks the whole
    sequence up on readmission, 0.11.0), freed last block first, so the blocks allocated while it waits
    take its tail first."""
    # A pool of 100 blocks of 16 tokens. A and B (500 + 600 tokens each) decode side by side; at 800
    # tokens each they hold 50 + 50 blocks, and the next token needs a block: B, admitted last, is
    # preempted with 800 tokens, and A takes one of its 50 freed blocks at once. B cannot come back
    # beside A (49 free against the 50 it needs), so A grows from 51 to 69 blocks (1,100 tokens) taking
    # 18 more of them; B returns when A ends, on its first 50 - 1 - 18 = 31 blocks: 31 x 16 = 496 tokens
    # found, 800 - 496 = 304 computed again.
    pool = 100 * 16 * 131072
    kw = dict(arrivals=[0.0, 0.01], policies="paged-16", pool=pool, mnbt=2048, engine="vllm")
    on = run("llama3.1-8b", "h100", [500, 500], [600, 600], **kw).runs[0]
    assert (on.preemptions, on.recomputed_tokens, on.completed) == (1, 304, 2)
    # Prefix caching off: all 800 again.
    off = run("llama3.1-8b", "h100", [500, 500], [600, 600], prefix_caching=False, **kw).runs[0]
    assert (off.preemptions, off.recomputed_tokens, off.completed) == (1, 800, 2)
    assert on.duration_s < off.duration_s


def test_simulate_runs_a_pp_replica_as_one_micro_batch(cli, monkeypatch):
    # kvcalc simulate --pp 2 (Llama-3.1-405B at TP 8 x PP 2 on H100s): one of the two micro-batches
    # in flight, every 2nd of the 400 requests, its share of the stages' pools at the whole model's
    # 126 x 8 KV heads x 128 x 2 x 2 B / 8 = 64,512 B a token; the first line says the rates are one
    # micro-batch's and the header says so too; bad sizes get one line.
    monkeypatch.setenv("COLUMNS", "100")
    args = ("simulate", "--model", "llama3.1-405b", "--gpu", "h100", "--tp", "8", "--pp", "2", "--rate", "1", "--requests", "400")
    d = cli(*args, "--json").json()
    assert (d["pp"], d["tp"], d["requests"], d["kv_bytes_per_token"]) == (2, 8, 200, 64512)
    assert d["verdict"].endswith("(one of 2 PP micro-batches: the deployment's rates are 2 x these)")
    text = " ".join(cli(*args).out.split())
    assert "(TP 8, PP 2, one micro-batch shown: its share of vllm@0.33's KV pools" in text
    assert "64,512 B per token over every layer" in text
    # A pool given per GPU is a stage's too: 20 GiB x 64,512 / 32,256 (the whole model's bytes a token over
    # a stage's) / 2 micro-batches is 20 GiB again.
    given = cli(*args, "--pool", "20GiB", "--json").json()
    assert given["pool_bytes"] == 20 * 2**30 * 64512 // 32256 // 2 == 20 * 2**30
    assert "(20.00 GiB a GPU, as given)" in " ".join(given["assumptions"])
    one_line_error(cli("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "--pp", "40", "--rate", "1"), "--pp")
    one_line_error(cli("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "--pp", "4", "--rate", "1", "--requests", "3"))


def test_an_sglang_dp_attention_rank_steps_its_share_of_the_prompt_chunk(cli):
    # SGLang 0.5.6 on an H200 (141 GB: under 160 GiB) defaults --chunked-prefill-size to 8,192
    # (server_args.py), and under DP attention gives each of the 8 ranks 8,192 // 8 of it.
    args = ("simulate", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "1", "--dp", "8", "--concurrency", "16")
    args += ("--requests", "64", "--prompt", "3000", "--output", "20", "--json")
    dp = cli(*args, "--engine", "sglang@0.5.6").json()
    assert dp["max_num_batched_tokens"] == 8192 // 8 == 1024
    assert any("--chunked-prefill-size 8,192 over 8 ranks under DP attention" in a for a in dp["assumptions"])
    # 0.4.1 halves it (server_args.py __post_init__ under enable_dp_attention).
    old = cli(*args, "--engine", "sglang@0.4.1").json()
    assert old["max_num_batched_tokens"] == 8192 // 2
    assert any("--chunked-prefill-size 8,192 halved under DP attention" in a for a in old["assumptions"])
    docs = Path(__file__).resolve().parent.parent / "docs"
    engines_doc = " ".join((docs / "engines.md").read_text().split())
    assert "under 0.5.6 steps 8,192 // 8 = 1,024 prompt tokens a rank, under 0.4.1 8,192 // 2 = 4,096" in engines_doc
    sim_doc = " ".join((docs / "simulation.md").read_text().split())
    assert "half from 0.3.6 to 0.4.4, `chunked_prefill_size // dp_size` from 0.4.4.post1" in sim_doc


def _two_requests(every: int, sent_at: float):
    """Llama-3.1-8B on an H100 under SGLang 0.5.9 without a request path: A (100 prompt tokens, 400 outputs) at time 0,
    B (100, 10) sent at ``sent_at`` while A decodes, the scheduler taking requests in every ``every`` decode steps."""
    import dataclasses

    from kvcalc.engine.steptime import DEFAULTS

    c = dataclasses.replace(DEFAULTS, request_overhead_s=0.0, tokenize_s_per_token=0.0)
    return run(
        "llama3.1-8b",
        "h100",
        [100, 100],
        [400, 10],
        arrivals=[0.0, sent_at],
        policies="paged-16",
        engine="sglang@0.5.9",
        constants=c,
        recv_interval=every,
    ).runs[0]


def test_sglangs_scheduler_takes_requests_in_every_n_decode_steps(monkeypatch):
    # SGLang's --scheduler-recv-interval N (managers/scheduler_recv_skipper.py, 0.5.2 to 0.5.14): a decode step adds 1
    # to the skipper's counter, a prompt step 1,000, and the scheduler polls for new requests only when the counter
    # reaches N. A's prompt step ends at t1, then it decodes steps of about d seconds. B, sent 3.5 steps after t1,
    # reaches the scheduler during A's 4th decode step.
    # SGLang 0.5.9's overlap loop (Engine.overlap_admission) counts and polls as the step it launched begins, and
    # what it takes in joins the step after that one: the poll after A's prompt step came as it began, so the counter
    # reaches N as A's N-th decode step begins. At N = 1 B is taken in as the 5th begins and runs after it (t1 + 5d),
    # at N = 10 as the 10th begins, running after it (t1 + 10d): 5 of A's steps later. A's own TPOT barely moves
    # (one more prompt step of B's while it decodes, either way).
    one = _two_requests(1, 0.0)
    t1 = one.ttft_s.p50  # A alone: its prompt step (no request path)
    d = one.tpot_s.p50
    base = _two_requests(1, t1 + 3.5 * d)
    gated = _two_requests(10, t1 + 3.5 * d)
    assert base.completed == gated.completed == 2
    # B's TTFT is the mean less A's (the same in both: A starts alone).
    # (vllm bench serve's figures: the whole run, both requests; the steady window holds A's alone.)
    b_base, b_gated = 2 * base.bench.ttft_s.mean - t1, 2 * gated.bench.ttft_s.mean - t1
    assert b_gated - b_base == pytest.approx(5 * d, rel=0.03)
    # Sent 10.5 steps after t1, B reaches the scheduler during A's 11th decode step: taken in as the 12th begins at
    # N = 1, as the 20th begins at N = 10, 8 steps later.
    late_base, late = _two_requests(1, t1 + 10.5 * d), _two_requests(10, t1 + 10.5 * d)
    assert 2 * (late.bench.ttft_s.mean - late_base.bench.ttft_s.mean) == pytest.approx(8 * d, rel=0.03)
    # Against the loop without overlap (each poll after a step ends, for the next): B after A's 4th step at N = 1 and
    # its 10th at N = 10, 6 steps, and after its 11th and 20th, 9. At N = 1 the overlap loop costs B one step.
    eager = _two_requests(1, t1 + 3.5 * d)
    monkeypatch.setattr(Engine, "overlap_admission", property(lambda self: False))
    plain_base, plain = _two_requests(1, t1 + 3.5 * d), _two_requests(10, t1 + 3.5 * d)
    b_plain_base, b_plain = 2 * plain_base.bench.ttft_s.mean - t1, 2 * plain.bench.ttft_s.mean - t1
    assert b_plain - b_plain_base == pytest.approx(6 * d, rel=0.03)
    assert 2 * (eager.bench.ttft_s.mean - plain_base.bench.ttft_s.mean) == pytest.approx(d, rel=0.05)
    late_plain = _two_requests(1, t1 + 10.5 * d), _two_requests(10, t1 + 10.5 * d)
    assert 2 * (late_plain[1].bench.ttft_s.mean - late_plain[0].bench.ttft_s.mean) == pytest.approx(9 * d, rel=0.03)
    doc = " ".join((Path(__file__).parent.parent / "docs" / "simulation.md").read_text().split())
    assert f"request A decoding alone at about {d * 1e3:.1f} ms a step" in doc
    assert f"so B's TTFT is 6 of A's steps longer ({(b_plain - b_plain_base) * 1e3:.0f} ms)" in doc
    assert f"5 of A's steps longer ({(b_gated - b_base) * 1e3:.0f} ms)" in doc
    # Sent while the scheduler is idle (after A ends), B is taken in at once: no delay at any N.
    monkeypatch.undo()
    after = t1 + 450 * d
    assert _two_requests(10, after).bench.ttft_s.mean == pytest.approx(_two_requests(1, after).bench.ttft_s.mean, rel=1e-9)


def test_the_recv_interval_is_sglangs_and_refused_elsewhere_in_one_line(cli):
    base = ("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "-n", "20", "--policies", "paged-16")
    one_line_error(
        cli(*base, "--engine", "vllm", "--scheduler-recv-interval", "10"),
        "it is SGLang's --scheduler-recv-interval, read from 0.5.2 on",
    )
    one_line_error(cli(*base, "--engine", "sglang@0.4", "--scheduler-recv-interval", "10"), "it is SGLang's")
    one_line_error(cli(*base, "--engine", "sglang", "--dp", "2", "--scheduler-recv-interval", "10"), "DP attention")
    one_line_error(cli(*base, "--engine", "sglang", "--scheduler-recv-interval", "0"), "--scheduler-recv-interval")
    one_line_error(cli(*base, "--engine", "sglang", "--scheduler-recv-interval", "1.5"), "--scheduler-recv-interval")
    d = cli(*base, "--engine", "sglang", "--scheduler-recv-interval", "10", "--json").json()
    assert any(a.startswith("--scheduler-recv-interval 10: while requests decode") for a in d["assumptions"])
    # 1, the default, is every step: the same run as without the option.
    same = [
        cli(*base, "--engine", "sglang", *extra, "--json").json()["runs"][0]["bench"]
        for extra in ((), ("--scheduler-recv-interval", "1"))
    ]
    assert same[0] == same[1]


def test_a_request_that_streams_no_text_is_timed_as_the_2024_client_timed_it():
    """A request whose one token is the end of sequence streams no text: vLLM's benchmark_serving.py of 2024
    kept its TTFT at 0.0 (it timed the first chunk with text) and counted it completed with 0 output tokens
    (tests/serving/lengths: 378 of the 1,000 dstack runs of Llama-3.1-405B-FP8, and 2 of Lambda's 10)."""
    from kvcalc.engine.simulate.metrics import bench_metrics

    # Three requests sent at 0, 1 and 2 s, first tokens at 0.5, 1.25 and 2.1 s, done at 3, 2 and 4 s;
    # outputs 6, 1 and 11 tokens; the second streamed no text.
    sent, first, finish = [0.0, 1.0, 2.0], [0.5, 1.25, 2.1], [3.0, 2.0, 4.0]
    P, O = [10, 20, 30], [6, 1, 11]
    quiet = bench_metrics(sent, first, finish, P, O, [0.5], [1], [False, True, False])
    loud = bench_metrics(sent, first, finish, P, O, [0.5], [1])
    # TTFT: (0.5 + 0 + 0.1) / 3 = 0.2 s against (0.5 + 0.25 + 0.1) / 3; all three completed.
    assert quiet.completed == loud.completed == 3
    assert quiet.ttft_s.mean == pytest.approx(0.6 / 3) and loud.ttft_s.mean == pytest.approx(0.85 / 3)
    # Output tokens 6 + 0 + 11 = 17 over the 4 s from the first send to the last finish (18 as the engine ran them).
    assert quiet.output_throughput_tok_per_s == pytest.approx(17 / 4) and loud.output_throughput_tok_per_s == pytest.approx(
        18 / 4
    )
    # TPOT counts only outputs of more than one token either way: (2.5 / 5 + 1.9 / 10) / 2.
    assert quiet.tpot_s.mean == loud.tpot_s.mean == pytest.approx((2.5 / 5 + 1.9 / 10) / 2)
    # End-to-end latency is each request's whole life either way: (3 + 1 + 2) / 3.
    assert quiet.e2el_s.mean == loud.e2el_s.mean == pytest.approx(2.0)

    # Through simulate: the engine serves the same steps, so only the client's figures move.
    n = 40
    P, O = np.full(n, 500), np.full(n, 50)
    O[::4] = 1
    silent = np.zeros(n, dtype=bool)
    silent[::4] = True
    arr = np.arange(n) * 0.05
    st_ = SimSettings(4096, 256, 8192)
    m, g = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    times: dict = {}
    vllm, bf16, paged = engine("vllm@0.11"), kv_dtype("bf16"), [("paged-16", 16)]
    a = simulate(m, g, Workload(arr, P, O, "t", "t"), st_, paged, vllm, bf16, 1, keep=times).runs[0]
    b = simulate(m, g, Workload(arr, P, O, "t", "t", silent=silent), st_, paged, vllm, bf16, 1).runs[0]
    assert a.ttft_s == b.ttft_s and a.bench is not None and b.bench is not None
    # The client's mean loses the ten silent requests' TTFTs, as the engine ran them.
    lost = float(np.sum((times["first"] - times["sent"])[silent]))
    assert lost > 0 and b.bench.ttft_s.mean * n == pytest.approx(a.bench.ttft_s.mean * n - lost, rel=1e-9)
    # Ten one-token outputs fewer over the same duration.
    assert b.bench.duration_s == a.bench.duration_s
    assert (a.bench.output_throughput_tok_per_s - b.bench.output_throughput_tok_per_s) * a.bench.duration_s == pytest.approx(10)
    from kvcalc.errors import KvcalcError

    with pytest.raises(KvcalcError, match="3 silent flags for 40 requests"):
        simulate(m, g, Workload(arr, P, O, "t", "t", silent=silent[:3]), st_, paged, vllm, bf16, 1)


def test_util_sizes_the_pool_as_the_engine_sizes_it(cli, tmp_path, monkeypatch):
    """--util: the engine's gpu_memory_utilization (mem_fraction_static under SGLang), as fit takes it. vLLM's
    budget is the fraction of the GPU's memory less what the weights, activations and the rest take, none of
    which the fraction moves: two fractions' pools differ by their difference times the memory (the L40S's
    47,674,556,416 B as torch reports it: gpu_specs/l40s.yaml)."""
    base = ("simulate", "--model", "llama3.1-8b", "--gpu", "l40s", "--requests", "50", "--policies", "paged-16")
    pools = {}
    for u in ("0.9", "0.5"):
        r = cli(*base, "--util", u, "--json")
        assert r.code == 0, r.err
        pools[u] = json.loads(r.out)["pool_bytes"]
    assert abs(pools["0.9"] - pools["0.5"] - 0.4 * 47_674_556_416) <= 1
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "difference times the GPU's memory, 0.4 x 47,674,556,416 B between 0.9 and 0.5 on an L40S" in doc
    text = cli(*base, "--util", "0.5").out
    assert "at a memory fraction of 0.5 (gpu_memory_utilization / mem_fraction_static), from kvcalc fit" in " ".join(text.split())
    one_line_error(cli(*base, "--util", "0.5", "--pool", "10GiB"), "(--util)", "one of the two: a pool, or a fraction")
    one_line_error(cli(*base, "--util", "0.1"), "at a memory fraction of 0.1", "(--util)")
    one_line_error(cli(*base, "--util", "1.5"), "out of range (--util)")
    # kvcalc.toml's util yields to a pool given on the command line, as fit's does to --kv-cache-memory.
    (tmp_path / "kvcalc.toml").write_text("util = 0.5\n")
    monkeypatch.chdir(tmp_path)
    r = cli(*base, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["pool_bytes"] == pools["0.5"]
    r = cli(*base, "--pool", "10GiB", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["pool_bytes"] == 10 * 2**30
    one_line_error(cli(*base, "--pool", "10GiB", "--util", "0.6"), "(--util)", "one of the two")


def test_a_saved_bench_result_replays_its_silent_requests_as_its_client_timed_them(cli, tmp_path):
    """simulate --trace of a vllm bench serve --save-result JSON: a request its client recorded with a TTFT of 0.0
    and 0 output tokens (benchmark_serving.py of 2024: the model's end of sequence first, no text streamed) runs as
    one token and is reported as that client reported it (Workload.silent); without the ttfts, as any request."""
    from kvcalc.inputs.workload import read_request_trace

    outs = [40, 0, 40, 40, 0, 40, 40, 40, 0, 40]
    rec = {"input_lens": [300] * 10, "output_lens": outs, "ttfts": [0.0 if o == 0 else 0.05 for o in outs]}
    quiet, loud = tmp_path / "quiet.json", tmp_path / "loud.json"
    quiet.write_text(json.dumps(rec))
    loud.write_text(json.dumps({k: v for k, v in rec.items() if k != "ttfts"}))
    P, O, arrivals, desc, silent = read_request_trace(str(quiet), 4096)
    assert silent is not None and silent.tolist() == [o == 0 for o in outs] and O.tolist() == [max(o, 1) for o in outs]
    assert "3 requests streamed no text (a TTFT of 0 s and 0 output tokens as the client recorded them)" in desc
    assert read_request_trace(str(loud), 4096)[4] is None
    # A later client's zero-output request has a TTFT: it streamed its first chunk, and is timed as any.
    later = tmp_path / "later.json"
    later.write_text(json.dumps({**rec, "ttfts": [0.05] * 10}))
    assert read_request_trace(str(later), 4096)[4] is None
    base = ("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "--policies", "paged-16", "--json", "--trace")
    got = {}
    for f in (quiet, loud):
        r = cli(*base, str(f))
        assert r.code == 0, r.err
        got[f.stem] = json.loads(r.out)["runs"][0]["bench"]
    q, lo = got["quiet"], got["loud"]
    # The same engine steps: the same duration; three one-token outputs fewer, and three TTFTs of 0 in the mean.
    assert q["duration_s"] == lo["duration_s"]
    assert (lo["output_throughput_tok_per_s"] - q["output_throughput_tok_per_s"]) * q["duration_s"] == pytest.approx(3)
    assert q["ttft_s"]["mean"] < lo["ttft_s"]["mean"] and q["tpot_s"] == lo["tpot_s"]
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "paging.md").read_text().split())
    assert "simulate reports it as that client did: a TTFT of 0 and no output tokens, counted completed" in doc


def test_vllm_v0_decodes_past_max_seq_len_to_capture_without_cuda_graphs():
    # vLLM V0 replays a decode step's CUDA graph only while the longest sequence in it is at most
    # max_seq_len_to_capture, 8,192 by default (worker/model_runner.py _use_captured_graph, 0.5.3.post1 to 0.7.3):
    # one request of 8,000 + 400 tokens decodes at contexts 8,000 to 8,398, so 8,398 - 8,192 = 206 of its 399 steps run
    # eagerly. The simulation's decode time is step()'s over those contexts, where step() takes a batch's context as
    # its longest; the same release without the rule (decode_graph_max_len None) is exactly step()'s sum without it.
    import dataclasses

    m, g = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    v0 = engine("vllm@0.6")
    plain = dataclasses.replace(v0, decode_graph_max_len=None)
    assert v0.decode_graph_max_len == 8192 and engine("vllm@0.11").decode_graph_max_len is None
    assert engine("vllm@0.7.2").decode_graph_max_len == engine("vllm@0.4").decode_graph_max_len == 8192
    st_ = SimSettings(16384, 256, 16384)

    def decode_s(e):
        t: dict = {}
        wl = Workload(np.zeros(1), np.array([8000]), np.array([400]), "t", "t")
        simulate(m, g, wl, st_, [("paged-16", 16)], e, BF16, 1, keep=t)
        return float(t["finish"][0] - t["first"][0])

    sm, sp = StepModel(m, g, BF16, engine=v0), StepModel(m, g, BF16, engine=plain)
    contexts = range(8000, 8399)
    assert len(contexts) == 399 and sum(1 for x in contexts if x > 8192) == 8398 - 8192 == 206
    assert sm.step(1, 8192).t_step_s == sp.step(1, 8192).t_step_s < sm.step(1, 8193).t_step_s
    assert decode_s(plain) == pytest.approx(sum(sp.step(1, x).t_step_s for x in contexts), rel=1e-12)
    # (a span run eagerly takes its first step's eager share for every step: within 0.1%)
    assert decode_s(v0) == pytest.approx(sum(sm.step(1, x).t_step_s for x in contexts), rel=1e-3)
    assert decode_s(v0) - decode_s(plain) > 206 * 5e-3  # each eager step at least 5 ms slower here


def test_sglangs_new_token_ratio_is_its_arithmetic():
    # SGLang 0.4.0 to 0.5.23 (global_config.py, environ.py): the ratio starts at 0.7, its floor is 0.7 x 0.14 = 0.098,
    # and it falls by (0.7 - 0.098) / 600 a decode step; after a retraction it is (outputs made + 20 a request left)
    # over the requests' max_new_tokens, at most 1 (schedule_batch.py retract_decode).
    from kvcalc.engine.engines import SGLANG_TOKEN_RATIO as tr

    assert tr.floor == pytest.approx(0.098, rel=1e-12, abs=0)
    assert tr.decay == pytest.approx(0.602 / 600, rel=1e-12, abs=0)
    assert tr.at(0.7, 0) == 0.7
    assert tr.at(0.7, 300) == pytest.approx(0.7 - 300 * 0.602 / 600, rel=1e-12, abs=0)  # 0.399
    assert tr.at(0.7, 600) == pytest.approx(0.098, rel=1e-12, abs=0) and tr.at(0.7, 10_000) == tr.floor
    # A ratio under the floor (a retraction's) rises to it at the first step: max(ratio - decay, floor).
    assert tr.at(0.05, 0) == 0.05 and tr.at(0.05, 1) == tr.floor
    assert tr.after_retract(300, 10, 2000) == (300 + 20 * 10) / 2000 == 0.25
    assert tr.after_retract(1900, 10, 2000) == 1.0
    # From 0.4.0; SGLang 0.3.0 starts its ratio at 0.1 (tp_worker.py) and is not modelled; vLLM has none.
    assert engine("sglang@0.5.3").token_ratio is tr and engine("sglang").token_ratio is tr
    old = engine("sglang@0.4").token_ratio  # (the same ratio; its ignore-EOS test is the earlier one)
    assert old is not None and (old.init, old.floor_factor, old.decay_steps, old.clip) == (0.7, 0.14, 600, 4096)
    assert engine("sglang@0.3").token_ratio is None and engine("vllm").token_ratio is None


def _sglang_times(eng, prompts, outputs, arrivals, pool_tokens, **kw):
    """Each request's times under ``eng`` on one H100 with a pool of ``pool_tokens`` tokens of Llama-3.1-8B
    (32 layers x 8 KV heads x 128 x 2 x 2 B = 131,072 B a token), paged by the token, requests reaching the
    engine as they are sent."""
    import dataclasses

    from kvcalc.engine.steptime import DEFAULTS

    c = dataclasses.replace(DEFAULTS, request_overhead_s=0.0, tokenize_s_per_token=0.0)
    t: dict = {}
    wl = Workload(np.asarray(arrivals, float), np.asarray(prompts), np.asarray(outputs), "t", "t")
    st_ = SimSettings(2000, 256, 2048, constants=c, **kw)
    r = simulate(
        resolve_model("llama3.1-8b"),
        resolve_gpu("h100"),
        wl,
        st_,
        [("paged-1", 1)],
        engine(eng),
        BF16,
        1,
        pool_bytes=pool_tokens * 131_072,
        keep=t,
    )
    return t, r.runs[0]


def test_sglang_takes_requests_in_while_their_outputs_fit_beside_the_running_ones():
    # 20 requests of 100 + 100 tokens at once, a pool of 1,000 tokens. SGLang's prefill adder (schedule_policy.py)
    # takes request j of the first batch only while its prompt and output fall short of the free tokens less those of
    # the j before it: (j + 1) x 200 < 1,000, so 4. After their prompt step each has 99 outputs to come and the pool
    # 1,000 - 4 x 100 = 600 tokens free; at the ratio of 0.7 they claim 0.7 x 4 x 99 = 277.2, so a fifth (200 <
    # 322.8) comes in and a sixth (200 + 200 + 277.2 = 677.2 > 600) does not.
    t, run_ = _sglang_times("sglang@0.5.3", [100] * 20, [100] * 20, [0.0] * 20, 1000)
    first = t["first"]
    batches = [int((first == x).sum()) for x in np.unique(first)]
    assert batches[:2] == [4, 1]
    # SGLang 0.3 (not modelled) and vLLM take a prompt in when its tokens fit: 1,000 / 100 = 10 at once, and then run
    # out of blocks as the ten grow, preempting; SGLang's reserve keeps its batch inside the pool for longer.
    t3, run3 = _sglang_times("sglang@0.3", [100] * 20, [100] * 20, [0.0] * 20, 1000)
    assert int((t3["first"] == t3["first"].min()).sum()) == 10
    assert (run3.preemptions, run_.preemptions) == (16, 1)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "The first prompt step takes the requests j for which (j + 1) x 200 < 1,000: 4." in text
    assert "so a fifth comes in (200 < 322.8) and a sixth does not (200 + 200 + 277.2 > 600)." in text
    assert "ten prompts fit at once and the ten then run out of blocks: 16 preemptions where SGLang's reserve leaves one" in text


def test_sglangs_reserve_spares_a_short_pool_its_preemptions(cli, monkeypatch):
    # docs/simulation.md's example: Llama-3.1-8B on one L4 under SGLang 0.5.3, 1,000 ShareGPT-like requests at once,
    # with the reserve and without it (Engine.token_ratio None: a prompt taken in when its tokens fit).
    from kvcalc.engine.engines import Engine

    ask = ("simulate", "-m", "llama3.1-8b", "-g", "l4", "-e", "sglang@0.5.3", "--workload", "sharegpt", "-n", "1000")
    ask += ("--rate", "inf", "--policies", "paged-1", "--json")

    def figures():
        r = cli(*ask).json()["runs"][0]
        return r["preemptions"], round(1e3 * r["bench"]["tpot_s"]["mean"]), round(r["bench"]["request_throughput_per_s"], 2)

    now = figures()
    monkeypatch.setattr(Engine, "token_ratio", property(lambda self: None))
    # ((5, 87, 1.58) until a retracted request rejoined the waiting queue at its tail, TokenRatio.requeue, 2026-12-07;
    # ((1453, 124, 1.57), (4, 93, 1.58)) until SGLang's overlap loop took requests in a step late, the same day)
    assert (figures(), now) == ((1442, 124, 1.57), (1, 91, 1.61))
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "goes from 1,442 preemptions to 1 and a mean TPOT of 124 ms to 91 ms at about the same throughput (1.57 and 1.61" in text
    )


def test_sglang_retracts_the_request_with_the_fewest_outputs_and_of_those_the_longest_prompt():
    # A (100 + 1,800 tokens) runs alone for 3.5 s (about 500 decode steps: the ratio near 0.2, A's 1,300 outputs to come
    # claiming about 260 of the 1,400 tokens free of a 2,000-token pool). B (300 + 400) and C (50 + 380) then come in
    # together in one prompt step (700 + 430 = 1,130 < about 1,140), though the three need 1,900 + 700 + 430 = 3,030
    # tokens: the pool runs out about 350 steps on, when B and C have made the same outputs. SGLang retracts the
    # one with the longer prompt, B (sorted by output, then prompt, retracting from the end), where the most recently
    # admitted would be C: B finishes last, after A, and C first.
    t, run_ = _sglang_times("sglang@0.5.3", [100, 300, 50], [1800, 400, 380], [0.0, 3.5, 3.5], 2000)
    first, finish = t["first"], t["finish"]
    assert first[1] == first[2] and run_.preemptions == 1
    assert finish[1] > finish[0] > finish[2]


def test_sglang_takes_a_request_in_at_the_decode_step_its_falling_claim_lets_it():
    # A (100 + 1,800 tokens) decodes alone in a pool of 2,000 tokens; B (100 + 1,000) arrives at 0.1 s. After S decode
    # steps A holds 100 + S tokens and has 1,799 - S outputs to come, which it claims at the ratio max(0.7 - S x 0.602 /
    # 600, 0.098); B comes in at the first S where 1,100 < 2,000 - (100 + S) - ratio x (1,799 - S): no request ends and
    # none arrives then, so only the ratio's fall lets it in. Worked out here step by step: 427.
    S = 0
    while True:
        S += 1
        if 1100 < 2000 - (100 + S) - max(0.7 - S * 0.602 / 600, 0.098) * (1799 - S):
            break
    assert S == 427
    t, _ = _sglang_times("sglang@0.5.3", [100, 100], [1800, 1000], [0.0, 0.1], 2000)
    alone, _ = _sglang_times("sglang@0.5.3", [100], [1800], [0.0], 2000)
    step = (alone["finish"][0] - alone["first"][0]) / 1799  # A's decode step alone (its mean: contexts grow)
    prompt = alone["first"][0]  # a 100-token prompt step from idle, as B's is
    assert t["first"][1] == pytest.approx(prompt + 427 * step + prompt, rel=0.01)
    # SGLang 0.3 (no reserve) takes B in as it arrives.
    t3, _ = _sglang_times("sglang@0.3", [100, 100], [1800, 1000], [0.0, 0.1], 2000)
    assert t3["first"][1] < 0.2


def test_sglangs_ratio_is_back_at_its_start_after_the_scheduler_idles():
    # A (100 + 700) runs its ratio down to the floor (0.098 after 600 decode steps) and ends at about 4.5 s; the
    # scheduler idles until B (100 + 100) arrives at 10 s, so B's outputs are claimed at 0.7 again
    # (self_check_during_idle). C (100 + 750) arrives about 7 decode steps into B: 850 tokens against 1,000 - 107
    # free less 0.7 x 92 = 64.4 claimed (828.6), and B's claim falls by under a token a step (0.7 + 0.001 x 92)
    # while its tokens take one, so C waits for B to end. At the floor it would have come in at once (850 < 893 - 0.098 x 92 = 884.0).
    assert 850 >= 1000 - 107 - 0.7 * 92 and 850 < 1000 - 107 - 0.098 * 92
    t, _ = _sglang_times("sglang@0.5.3", [100, 100, 100], [700, 100, 750], [0.0, 10.0, 10.05], 1000)
    assert t["finish"][0] < 5 and t["first"][2] > t["finish"][1]


def test_sglang_with_its_radix_cache_off_takes_ignore_eos_requests_in_only_where_all_can_finish():
    # SGLang's add_one_req_ignore_eos (radix cache off, requests asking to ignore EOS): the running requests, those taken
    # in before in the batch and the one asked about, sorted by outputs to come, must leave room as each ends. 20
    # requests of 100 + 100 tokens at once, a pool of 1,000 tokens. The first batch, k taken in, asking about one more
    # (all with 100 to come): the free tokens less the k + 1 prompts, 1,000 - 100 (k + 1), less the first one's 100 to
    # come for each of the k + 1, must exceed k + 1 (from 0.4.8): 1,000 > 201 (k + 1), so 4 (5 x 201 = 1,005). Then the
    # four have 99 to come and hold 101 each, 600 tokens free: a fifth leaves 600 - 100 - 5 x 99 = 5, not over 5, so
    # none comes in until the four end, and none is ever retracted: batches of four.
    assert 1000 > 201 * 4 and not 1000 > 201 * 5 and not 600 - 100 - 5 * 99 > 5
    eos = dict(prefix_caching=False, ignore_eos=True)
    t, run_ = _sglang_times("sglang@0.5.3", [100] * 20, [100] * 20, [0.0] * 20, 1000, **eos)
    first = t["first"]
    assert [int((first == x).sum()) for x in np.unique(first)] == [4] * 5 and run_.preemptions == 0
    # To 0.4.7.post1 the test takes the next request's outputs to come (its own for the last) and asks only that the
    # room not be gone: the fifth, sorted last with 100 to come, finds 500 - 5 x 99 = 5 > 0 at the first, 500 + 101 - 4
    # x 99 = 205 at the second, ... 500 + 4 x 101 - 100 = 804 at itself; a sixth 400 - 6 x 99 < 0.
    assert (
        engine("sglang@0.4.5.post3").token_ratio.ignore_eos == "next" and engine("sglang@0.4.8").token_ratio.ignore_eos == "next"
    )
    assert engine("sglang@0.4.9").token_ratio.ignore_eos == "own"
    t4, _ = _sglang_times("sglang@0.4.5.post3", [100] * 20, [100] * 20, [0.0] * 20, 1000, **eos)
    assert [int((t4["first"] == x).sum()) for x in np.unique(t4["first"])][:4] == [4, 1, 4, 1]
    # With the radix cache on the claim's test stands (the first batches 4 and 1, as above), EOS asked or not.
    on, _ = _sglang_times("sglang@0.5.3", [100] * 20, [100] * 20, [0.0] * 20, 1000, ignore_eos=True)
    assert [int((on["first"] == x).sum()) for x in np.unique(on["first"])][:2] == [4, 1]


def test_ignore_eos_is_said_where_it_changes_nothing(cli):
    ask = ("simulate", "-m", "llama3.1-8b", "-g", "l4", "--prompt", "1000", "--output", "1000", "-n", "300", "--rate", "inf")
    ask += ("--policies", "paged-1", "--ignore-eos", "--json")

    def said(*more):
        return " ".join(a for a in cli(*ask, *more).json()["assumptions"] if "ignore" in a.lower())

    assert "it changes nothing else under vLLM" in said("-e", "vllm")
    assert "it changes nothing else with the radix cache on" in said("-e", "sglang@0.5.3")
    off = said("-e", "sglang@0.5.3", "--no-prefix-caching")
    assert "changes nothing" not in off and "add_one_req_ignore_eos" in off


def test_sglangs_ignore_eos_test_counts_what_ending_requests_free_and_its_insertion_order():
    eos = dict(prefix_caching=False, ignore_eos=True)
    # A (600 + 50) decodes in a pool of 1,000 tokens; B (100 + 300) arrives at 0.05 s, a few steps in: A has about 44
    # to come and holds about 606, about 395 tokens are free, 295 once B's prompt is in. Sorted, A then B: at A's end
    # 295 - 44 x 2 > 2, at B's 295 + 606 (what A frees) - 300 > 1: B comes in at once. The claim's test (radix cache
    # on) asks 100 + 300 = 400 of 395 less 0.7 x 44 and waits for A to end.
    assert 295 - 44 * 2 > 2 and 295 + 606 - 300 > 1 and not 295 - 300 > 1 and 400 >= 395 - 0.7 * 44
    t, _ = _sglang_times("sglang@0.5.3", [600, 100], [50, 300], [0.0, 0.05], 1000, **eos)
    assert t["first"][1] < 0.1 < t["finish"][0]
    on, _ = _sglang_times("sglang@0.5.3", [600, 100], [50, 300], [0.0, 0.05], 1000)
    assert on["first"][1] > on["finish"][0]
    # A (100 + 50) and B (100 + 400) at once. SGLang inserts B's (400, 100) before the first entry with as many to come
    # or, past them all, before the last: ahead of A's (50, 100). From 0.4.8: 1,000 - 200 - 400 x 2 = 0, not over 2,
    # so B waits for the next batch. To 0.4.7.post1 the first entry is held to the next one's 50 to come: 800 - 50 x 2
    # > 0, then 800 + 100 - 50 > 0: B comes in with A.
    assert not 1000 - 200 - 400 * 2 > 2 and 800 - 50 * 2 > 0 and 800 + 100 - 50 > 0
    new, _ = _sglang_times("sglang@0.5.3", [100, 100], [50, 400], [0.0, 0.0], 1000, **eos)
    old, _ = _sglang_times("sglang@0.4.5.post3", [100, 100], [50, 400], [0.0, 0.0], 1000, **eos)
    assert new["first"][1] > new["first"][0] and old["first"][1] == old["first"][0]


def test_a_request_sglangs_tests_never_take_in_is_turned_away_not_waited_for():
    # 500 + 500 tokens in a pool of 1,000: SGLang takes a request in only while its prompt and output fall short of the
    # free tokens (1,000 >= 1,000 with nothing running), and with its radix cache off and EOS ignored only while room is
    # left as it ends (1,000 - 500 - 500 = 0, not over 1): never. The run serves the other request and turns this one
    # away (it ran forever until 2026-12-07's fix); SGLang 0.3 (not modelled) takes it in when its tokens fit.
    for kw in ({}, {"prefix_caching": False, "ignore_eos": True}):
        t, run_ = _sglang_times("sglang@0.5.3", [500, 100], [500, 100], [0.0, 0.0], 1000, **kw)
        assert (run_.rejected, run_.completed) == (1, 1) and np.isnan(t["finish"][0]) and t["finish"][1] > 0
    _, old = _sglang_times("sglang@0.3", [500, 100], [500, 100], [0.0, 0.0], 1000)
    assert (old.rejected, old.completed) == (0, 2)
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "(its prompt and output fill the pool: 500 + 500 tokens in a pool of 1,000) SGLang would hold forever" in text


def test_sglang_retracts_until_the_requests_left_have_room_for_a_step_or_twenty(monkeypatch):
    # From 0.5.2 a retraction stops once the requests left have room for one more decode step (a token each at pages of
    # one); to 0.5.1.post3 once they have room for 20 (retract_decode_steps); one at least, never the last.
    import dataclasses

    from kvcalc.engine import engines as E

    assert (E.SGLANG_TOKEN_RATIO.room(11), E.SGLANG_TOKEN_RATIO_051.room(11), E.SGLANG_TOKEN_RATIO_047.room(11)) == (11, 220, 220)
    assert engine("sglang@0.5.2").token_ratio is E.SGLANG_TOKEN_RATIO  # (the record of 0.5.0rc0 to 0.5.2 takes 0.5.2's)
    assert (
        engine("sglang@0.5.1").token_ratio is E.SGLANG_TOKEN_RATIO
        and engine("sglang@0.4.10").token_ratio is E.SGLANG_TOKEN_RATIO_051
    )
    # 12 requests of 20 + 80 at once in a pool of 1,000: the first batch takes 9 ((j + 1) x 100 < 1,000), then 820 free
    # less 0.7 x 9 x 79 = 497.7 claimed leaves room for three more (100 < 222.3, 122.3; not 22.3). The twelve hold
    # 12 x (20 + k) after k steps together and pass the pool near k = 64; the retraction takes the last admitted (all
    # have made as many outputs, and as long prompts), which frees about 84 tokens: room for one step of the eleven
    # left (11), not for twenty (220), for which it takes two more (about 168 and 252 free, against 200 and 180).
    counts, last = {}, {}
    for room in ("step", "steps"):
        tr = dataclasses.replace(E.SGLANG_TOKEN_RATIO, retract_room=room)
        monkeypatch.setattr(E.Engine, "token_ratio", property(lambda self, tr=tr: tr))
        t, run_ = _sglang_times("sglang@0.5.3", [20] * 12, [80] * 12, [0.0] * 12, 1000)
        assert [int((t["first"] == x).sum()) for x in np.unique(t["first"])] == [9, 3]
        counts[room], last[room] = run_.preemptions, int(np.argmax(t["finish"]))
    # Of requests alike, SGLang's stable sort leaves the last in its batch last, and retracts it first; the retracted
    # rejoin the waiting queue at its tail in that order (TokenRatio.requeue). One step's room: 11, then 10 some steps
    # on, which has made more outputs by then: 11 ends last. Twenty steps' room: 11, 10 and 9 at once; 11 comes back at
    # once (252 free less 1.0 x 9 x 16 claimed leaves 108, room for its 84 + 16) and 9, the last queued, ends last.
    assert last == {"step": 11, "steps": 9}
    # One step's room: one at first, one more some steps on as the eleven grow into it; twenty steps' room: three at once.
    assert counts == {"step": 2, "steps": 3}
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "frees about 84 tokens, room for a step of the eleven left but not for twenty (220), for which it takes two more" in text
    )


def test_a_retracted_request_rejoins_sglangs_waiting_queue_at_its_tail(cli, monkeypatch):
    # SGLang appends a retracted request to its waiting queue, which its default first-come-first-served policy serves
    # in order (scheduler.py, schedule_policy.py; TokenRatio.requeue): the requests that reached it before go first.
    # vLLM's preempted requests, and SGLang's under its longest-prefix-match default to 0.4.3.post2, go first instead.
    import dataclasses

    from kvcalc.engine import engines as E

    assert (engine("sglang@0.5.3").token_ratio.requeue, engine("sglang@0.4.4.post1").token_ratio.requeue) == ("tail", "tail")
    assert engine("sglang@0.4.2.post2").token_ratio.requeue == "front"  # (its record covers 0.4.2.post2 to 0.4.4)
    # Twenty requests of 20 + 80 at once in a pool of 1,000: as above, nine and then three run, and at step 64 the twelve
    # pass the pool and 11, then 10, are retracted; 12 to 19 wait, held by the claim. When the nine end, 900 tokens are
    # free: at the tail the queue is 12 to 19, then 11 and 10, and all eight of 12 to 19 come in at once; at the front,
    # 10 and 11 come first, and 19 waits a step.
    first = {}
    for requeue in ("tail", "front"):
        tr = dataclasses.replace(E.SGLANG_TOKEN_RATIO, requeue=requeue)
        monkeypatch.setattr(E.Engine, "token_ratio", property(lambda self, tr=tr: tr))
        t, run_ = _sglang_times("sglang@0.5.3", [20] * 20, [80] * 20, [0.0] * 20, 1000)
        assert run_.preemptions == 2
        first[requeue] = t["first"]
    assert len(set(first["tail"][12:].tolist())) == 1
    assert (first["front"][12:19] == first["tail"][12]).all() and first["front"][19] > first["tail"][19]
    monkeypatch.undo()
    said = {
        e: " ".join(cli("simulate", "-m", "llama3.1-8b", "-g", "l4", "-e", e, "-n", "50", "--json").json()["assumptions"])
        for e in ("sglang@0.5.3", "sglang@0.4.2.post2")
    }
    assert (
        "it rejoins the waiting queue at its tail, behind the requests that reached the engine before it" in said["sglang@0.5.3"]
    )
    assert "it waits at the front of the queue" in said["sglang@0.4.2.post2"]


def test_simulate_says_where_its_paged_policy_is_not_the_engines_own_block(cli):
    # SGLang pages by the token (page_size 1, its server_args), TensorRT-LLM in blocks of 32 (tokens_per_block), vLLM
    # in 16 for a dense model: the default paged-16 is said to differ from the first two, and the engine's own is named.
    def said(*extra: str) -> list[str]:
        d = cli("simulate", "-m", "llama3.1-8b", "-g", "h100", "-n", "30", "--json", *extra).json()
        return [a for a in d["assumptions"] if "pages this model's KV" in a]

    assert said("-e", "sglang@0.5.3") == [
        "paged-16: SGLang 0.5.3 pages this model's KV by the token here; --policies paged-1 for its own"
    ]
    assert said("-e", "trtllm") == [
        "paged-16: TensorRT-LLM 1.x pages this model's KV in blocks of 32 tokens here; --policies paged-32 for its own"
    ]
    assert said("-e", "vllm") == [] and said("-e", "sglang@0.5.3", "--policies", "paged-1") == []
    assert said("-e", "vllm", "--policies", "paged-16,paged-64") == [
        "paged-64: vLLM 0.33 pages this model's KV in blocks of 16 tokens here; --policies paged-16 for its own"
    ]


def test_sglangs_schedule_conservativeness_scales_its_reserve(cli):
    from kvcalc.engine.engines import SGLANG_TOKEN_RATIO as tr

    # scheduler.py: init = min(0.7 x c, 1), floor = init x 0.14, a fall of (init - floor) / 600 a decode step.
    half = tr.conservative(0.5)
    assert (half.init, half.floor) == (0.35, 0.35 * 0.14) and half.decay == pytest.approx(0.35 * 0.86 / 600, rel=1e-12, abs=0)
    assert tr.conservative(2).init == 1.0 and tr.conservative(1) is tr and tr.conservative(0).at(0.0, 5) == 0.0
    # The first batch takes no ratio (each new request holds its whole output): 4, as at 1. Then the four claim
    # 0.35 x 4 x 99 = 138.6 of 600 free: a fifth (200 < 461.4) and a sixth (200 < 261.4) come in, not a seventh
    # (200 > 61.4), where at 1 only a fifth did.
    assert 200 < 600 - 138.6 and 200 < 600 - 138.6 - 200 and not 200 < 600 - 138.6 - 400
    t, _ = _sglang_times("sglang@0.5.3", [100] * 20, [100] * 20, [0.0] * 20, 1000, schedule_conservativeness=0.5)
    assert [int((t["first"] == x).sum()) for x in np.unique(t["first"])][:2] == [4, 2]
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "at 0.5 the four claim 0.35 x 4 x 99 = 138.6 and a fifth and a sixth come in" in text
    ask = ("simulate", "-m", "llama3.1-8b", "-g", "l4", "--prompt", "1000", "--output", "1000", "-n", "50", "--rate", "inf")
    said = " ".join(cli(*ask, "-e", "sglang@0.5.3", "--schedule-conservativeness", "0.5", "--json").json()["assumptions"])
    assert (
        "a ratio of 0.35, falling to 0.049 over 600 decode steps (SGLang 0.5.3's new_token_ratio at --schedule-conservativeness 0.5"
        in said
    )
    # SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION's default and retract_decode_steps, each with its unit.
    assert "its prompt and output (at most 4,096 tokens) fit" in said and "have made and 20 tokens each" in said
    one_line_error(cli(*ask, "--schedule-conservativeness", "0.5"), "--schedule-conservativeness", "SGLang engine from 0.4.0")
    one_line_error(cli(*ask, "-e", "sglang@0.3", "--schedule-conservativeness", "2"), "modelled from 0.4.0")
    for bad in ("-1", "nan", "abc", "1e9"):
        one_line_error(cli(*ask, "-e", "sglang", "--schedule-conservativeness", bad), "--schedule-conservativeness", "0 to 100")


def test_sglangs_ignore_eos_test_caps_the_batch_as_a_posted_log_saw(cli):
    # sgl-project/sglang#7133 (June 2025, SGLang of that week on 8 MI300Xs, bench_offline_throughput: Qwen3-32B, TP 8,
    # --disable-radix-cache, --max-running-requests 8192, --schedule-conservativeness 0.1, 1,024 random prompts of
    # 2,048 + 8,192 tokens): "the number of running requests stops at around 399" with hundreds queued and the pool at
    # "token usage: 0.19". With the radix cache off and EOS ignored (the benchmark's default) SGLang takes n requests
    # alike only while the pool less their prompts holds the first one's 8,192 outputs for each: T - 2,048 n > 8,192 n
    # (to 0.4.7.post1), n < T / 10,240. kvcalc's pool for this deployment, T = 4,532,428 tokens, gives 442; the log's
    # 399 is T = 4.09 million, about 10% less, which its own 0.19 at 370 running also implies (370 x 2,048 / 0.19 =
    # 3.99 million before their outputs). Of 443 requests at once the 443rd waits for the first wave to end; without the
    # test all 443 would run. (Not 1,024: where a wave ends, its requests a token from their ends, the test lets more in
    # beside them, 477 at most with SGLang 0.4.7's overlap loop, which runs their prompt steps before that last decode
    # step; the log saw a wave, not its end.)
    ask = ("simulate", "-m", "qwen3-32b", "-g", "mi300x", "--tp", "8", "-e", "sglang@0.4.7", "--prompt", "2048")
    ask += ("--output", "8192", "-n", "443", "--rate", "inf", "--max-num-seqs", "8192", "--max-len", "16384")
    ask += ("--no-prefix-caching", "--schedule-conservativeness", "0.1", "--policies", "paged-1", "--json")
    d = cli(*ask, "--ignore-eos").json()
    pool = d["pool_bytes"] // d["kv_bytes_per_token"]
    assert pool == 4_532_428 and (pool - 1) // 10_240 == 442
    assert (d["runs"][0]["max_running"], d["runs"][0]["preemptions"]) == (442, 0)
    assert 0.185 <= 370 * 2048 / (399 * 10_240) <= 0.195  # the log's usage at 370, from the 399 it stopped at
    assert cli(*ask).json()["runs"][0]["max_running"] == 443
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "kvcalc's pool (4,532,428 tokens) caps the batch at 442, the log's 399" in text


def test_simulate_and_plan_say_sglangs_overlap_loop_takes_requests_in_a_step_late(cli):
    # Engine.overlap_admission: said where it holds (SGLang at PP 1), not under vLLM or at PP 2, where SGLang runs
    # no overlap loop (Engine.async_scheduling "pp1").
    ask = ("simulate", "-m", "llama3.1-8b", "-g", "h100", "-n", "50", "--rate", "5", "--json")

    def said(*extra: str) -> bool:
        return any("overlap loop polls for requests as a step begins" in a for a in cli(*ask, *extra).json()["assumptions"])

    assert said("-e", "sglang@0.5.9") and not said("-e", "vllm") and not said("-e", "sglang@0.5.9", "--pp", "2")

    def rides(*extra: str) -> bool:
        return any("rides one decode step past its last token" in a for a in cli(*ask, *extra).json()["assumptions"])

    assert rides("-e", "sglang@0.5.9") and not rides("-e", "vllm") and not rides("-e", "sglang@0.5.9", "--pp", "2")
    p = cli("plan", "-m", "llama3.1-8b", "--gpus", "h100", "-e", "sglang@0.5.9", "--rate", "5", "--tpot", "50ms", "--json")
    assert any("overlap loop (at PP 1) polls for requests as a step begins" in a for a in p.json()["assumptions"])


def test_sglangs_overlap_loop_runs_a_step_past_a_requests_end(monkeypatch):
    # Engine.overlap_tail: SGLang's overlap loop launches the next batch before it reads the running one's tokens, and
    # a request is finished only as they are read, so it rides one more decode step. A alone (100 + 10 tokens) ends at
    # f; B (100 + 10) comes a microsecond later, during that step, and starts its prompt step only as it ends: its first
    # token comes one decode step of A (one request at A's final 110 tokens) later than without the tail step. B coming
    # after that step ends is not delayed.
    alone, _ = _sglang_times("sglang@0.5.9", [100], [10], [0.0], 1000)
    f = float(alone["finish"][0])
    sm = StepModel(resolve_model("llama3.1-8b"), resolve_gpu("h100"), kv_dtype("bf16"), 1, engine=engine("sglang@0.5.9"))
    assert sm.tail_step
    ride = sm.step(1, 110).t_step_s
    assert 4e-3 < ride < 20e-3  # (a decode step of Llama-3.1-8B on an H100)
    soon, _ = _sglang_times("sglang@0.5.9", [100, 100], [10, 10], [0.0, f + 1e-6], 1000)
    late, _ = _sglang_times("sglang@0.5.9", [100, 100], [10, 10], [0.0, f + 2 * ride], 1000)
    monkeypatch.setattr(Engine, "overlap_tail", property(lambda self: False))
    soon0, _ = _sglang_times("sglang@0.5.9", [100, 100], [10, 10], [0.0, f + 1e-6], 1000)
    late0, _ = _sglang_times("sglang@0.5.9", [100, 100], [10, 10], [0.0, f + 2 * ride], 1000)
    assert float(soon0["finish"][0]) == float(soon["finish"][0]) == f  # (A's own times do not move)
    assert float(soon["first"][1]) - float(soon0["first"][1]) == pytest.approx(ride - 1e-6, rel=2e-3)
    assert float(late["first"][1]) == float(late0["first"][1])


def test_tensorrt_llms_batch_waiting_holds_new_prompts_back_while_requests_decode():
    # TensorRT-LLM's batch_wait_timeout_iters / batch_wait_max_tokens_ratio (py_executor.py _schedule and
    # _waiting_requests): while generation requests run, the context requests the scheduler picked are held back an
    # iteration at a time, counting, until the count reaches the iterations or their prompt tokens and one a generation
    # request reach the ratio of max_num_tokens. A (100 + 400 tokens) decodes alone at about d a step; B (100 + 10) is
    # sent 3.5 steps after A's prompt step and reaches the engine during A's 4th decode step. The next iteration's
    # scheduler sees it; without waiting B runs in that iteration (after A's 4th step), with 20 iterations it waits 20
    # of them first: its first token comes 20 of A's steps later.
    def times(sent: float, iters: int, ratio: float) -> tuple[float, float]:
        t, _ = _sglang_times("trtllm", [100, 100], [400, 10], [0.0, sent], 2000, batch_wait_iters=iters, batch_wait_ratio=ratio)
        return float(t["first"][0]), float(t["first"][1])

    t1, _ = times(0.0, 0, 0.0)  # A alone: its prompt step (no request path)
    A, _ = _sglang_times("trtllm", [100], [400], [0.0], 2000)
    d = (float(A["finish"][0]) - t1) / 399  # A's decode step, on average
    sent = t1 + 3.5 * d
    _, b0 = times(sent, 0, 0.0)
    _, b20 = times(sent, 20, 0.9)  # B's 100 + A's 1 under 0.9 x 2,048 = 1,843 tokens: it waits
    assert b20 - b0 == pytest.approx(20 * d, rel=0.03)
    _, b5 = times(sent, 5, 0.9)
    assert b5 - b0 == pytest.approx(5 * d, rel=0.03)
    # Its tokens reach the share: 101 >= 0.04 x 2,048 = 81.92, so it runs at once, as it does where either is 0
    # (the token test passes at a ratio of 0; the count's at 0 iterations).
    assert times(sent, 20, 0.04)[1] == b0 == times(sent, 20, 0.0)[1] == times(sent, 0, 0.9)[1]
    # Nothing decodes when B comes (A has ended): it runs at once.
    after = float(A["finish"][0]) + 10 * d
    assert times(after, 20, 0.9)[1] == times(after, 0, 0.0)[1]
    # A's own first token never waits (nothing decodes beside it).
    assert times(sent, 20, 0.9)[0] == t1
    doc = " ".join((Path(__file__).parent.parent / "docs" / "simulation.md").read_text().split())
    assert f"request A decoding alone at about {d * 1e3:.1f} ms a step, request B (100 prompt tokens)" in doc
    assert f"B runs 20 of A's steps later than without waiting ({(b20 - b0) * 1e3:.0f} ms), at N = 5 five" in doc
    assert round(0.9 * 2048) == 1843 and 0.04 * 2048 == pytest.approx(81.92)


def test_batch_waiting_is_tensorrt_llms_and_refused_elsewhere_in_one_line(cli):
    base = ("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "-n", "20", "--policies", "paged-16")
    wait = ("--batch-wait-iters", "20", "--batch-wait-ratio", "0.9")
    one_line_error(cli(*base, "--engine", "vllm", *wait), "it is TensorRT-LLM's batch_wait_timeout_iters")
    one_line_error(cli(*base, "--engine", "sglang", *wait), "--batch-wait-iters")
    one_line_error(cli(*base, "--engine", "trtllm@0.19", *wait), "from 1.1 (its PyTorch backend)")
    one_line_error(cli(*base, "--engine", "trtllm", "--batch-wait-iters", "-1"), "--batch-wait-iters")
    one_line_error(cli(*base, "--engine", "trtllm", "--batch-wait-iters", "2.5"), "--batch-wait-iters")
    one_line_error(cli(*base, "--engine", "trtllm", "--batch-wait-ratio", "1.5"), "--batch-wait-ratio")
    one_line_error(cli(*base, "--engine", "trtllm", "--batch-wait-ratio", "nan"), "--batch-wait-ratio")
    d = cli(*base, "--engine", "trtllm", *wait, "--json").json()
    assert any(
        a.startswith("--batch-wait-iters 20 and --batch-wait-ratio 0.9: while requests decode, new prompts wait up to 20")
        and "reach 7,373 tokens" in a  # 0.9 x the 8,192-token budget (TensorRT-LLM's max_num_tokens default)
        for a in d["assumptions"]
    )
    one = cli(*base, "--engine", "trtllm", "--batch-wait-iters", "20", "--json").json()
    assert any("no prompt waits (TensorRT-LLM waits only where both are above 0" in a for a in one["assumptions"])


def test_the_cudagraph_mode_is_vllms_and_refused_elsewhere_in_one_line(cli):
    base = ("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "-n", "20", "--policies", "paged-16")
    one_line_error(cli(*base, "--engine", "sglang", "--cudagraph-mode", "full_decode_only"), "it is vLLM's")
    one_line_error(cli(*base, "--engine", "vllm@0.8", "--cudagraph-mode", "full_decode_only"), "--cudagraph-mode")
    one_line_error(cli(*base, "--engine", "vllm", "--cudagraph-mode", "none"), "NONE and FULL are not modelled")
    one_line_error(cli(*base, "--engine", "vllm", "--cudagraph-mode", "full-decode"), "did you mean full_decode_only")
    d = cli(*base, "--engine", "vllm@0.10", "--cudagraph-mode", "full_decode_only", "--json").json()
    assert any("a step carrying prompt tokens runs without CUDA graphs" in a for a in d["assumptions"])
    plan = ("plan", "-m", "llama3.1-8b", "--gpus", "h100", "-e", "vllm@0.10", "--rate", "5", "--tpot", "50ms", "--prompt", "200")
    eager, graphed = (
        cli(*plan, *mode, "--json").json()["best"]["ttft_s"] for mode in (("--cudagraph-mode", "full_decode_only"), ())
    )
    assert eager > graphed  # plan's closed form prices the prompt steps eagerly too (StepModel.prefill_eager)
