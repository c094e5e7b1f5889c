"""Public measured serving runs (tests/serving/cases.yaml): kvcalc simulate's prediction with the
default step-time constants against what each benchmark measured, per metric.

Each case is run as the benchmark ran it: the same number of requests, the same client (every
request at once for rate inf, a Poisson stream at a finite rate, at most max_concurrency in
flight), the run's own mean prompt and output lengths (fixed for a random dataset, lognormal with
sigma 1.0 around those means for ShareGPT, as kvcalc's sharegpt workload, but a ShareGPT run whose
client recorded every request's prompt and output tokens is replayed with those, tests/serving/lengths;
SGLang's random dataset
at its default range ratio as bench_serving draws it, uniform from its seed), the engine release's
default max_num_seqs and max_num_batched_tokens on that GPU. docs/accuracy.md's serving section is
this file's output (KVCALC_ACCURACY=write pytest tests/test_serving_accuracy.py rewrites it).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given, settings, strategies as st

from conftest import generated_block, generated_file
from kvcalc.engine import engines as engine_module
from kvcalc.engine.engines import (
    engine,
    with_all_reduce_backend,
    with_attention_backend,
    with_cudagraph_mode,
    with_moe_backend,
)
from kvcalc.engine.simulate import SimSettings, Workload, simulate
from kvcalc.engine.steptime import DEFAULTS, MLA_ATTN_LATENCY_S
from kvcalc.engine.track import MIN_RUNS, group_of
from kvcalc.errors import KvcalcError
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import kv_dtype

ROOT = Path(__file__).resolve().parent.parent
SERVING = ROOT / "tests" / "serving"
DOC = ROOT / "docs" / "accuracy.md"
TRACK = ROOT / "kvcalc" / "engine" / "track_data.py"
CASES: list[dict[str, Any]] = yaml.safe_load((SERVING / "cases.yaml").read_text())["cases"]
BEGIN, END = "<!-- serving:begin -->", "<!-- serving:end -->"
TRT_AR = "since TensorRT-LLM deployments take its own measured all-reduce, 2026-12-08"
"""The clause the docs give each figure a TensorRT-LLM run moved when its all-reduces took TensorRT-LLM's own table."""
TRT_FP8 = "since TensorRT-LLM's fp8 matmuls take its own measured figures, 2026-12-08"
"""The same when its fp8 matmuls took TensorRT-LLM's own measured GEMMs (GPUSpec.gemm_fp8_trtllm)."""
METRICS = (
    ("request_throughput_per_s", "request throughput"),
    ("output_throughput_tok_per_s", "output throughput"),
    ("mean_ttft_ms", "mean TTFT"),
    ("mean_tpot_ms", "mean TPOT"),
)
SHAREGPT_SIGMA = 1.0


# What the benchmark clients keep of ShareGPT: a conversation whose prompt has 4 to 1,024 tokens and
# whose prompt and output together have at most 2,048 (vLLM's benchmarks/datasets.py is_valid_sequence,
# 0.11.0, "copied from the original sample_sharegpt_requests" of benchmark_serving.py; SGLang's
# bench_serving.py sample_sharegpt_requests prunes the same way).
SHAREGPT_MAX_PROMPT, SHAREGPT_MAX_TOTAL, SHAREGPT_MIN = 1024, 2048, 4


def _sharegpt(mean_in: float, mean_out: float, n: int) -> tuple[Any, Any]:
    """Prompt and output lengths of ``n`` ShareGPT requests as a client sends them: lognormal (sigma
    SHAREGPT_SIGMA) pairs, those the client prunes dropped, scaled until the kept ones have the run's
    own means."""
    x = np.random.default_rng(1).lognormal(0.0, SHAREGPT_SIGMA, size=8 * n)
    y = np.random.default_rng(2).lognormal(0.0, SHAREGPT_SIGMA, size=8 * n)
    sp, so = mean_in / x.mean(), mean_out / y.mean()
    for _ in range(60):
        P = np.maximum(np.rint(x * sp), 1).astype(np.int64)
        O = np.maximum(np.rint(y * so), 1).astype(np.int64)
        keep = (P >= SHAREGPT_MIN) & (P <= SHAREGPT_MAX_PROMPT) & (P + O <= SHAREGPT_MAX_TOTAL)
        P, O = P[keep][:n], O[keep][:n]
        sp, so = sp * mean_in / P.mean(), so * mean_out / O.mean()
    # A short run's scaling can settle on integer lengths a few tokens from its means (ten prompts of
    # about 39 tokens: 38.2); there one token at a time moves to or from the longest that the pruning
    # still keeps, until each mean is the run's within 0.5 / n. Every run of the corpus settles within
    # 0.05% and is left as scaled.
    for L, other, mean, cap in ((P, O, mean_in, SHAREGPT_MAX_PROMPT), (O, P, mean_out, SHAREGPT_MAX_TOTAL)):
        if abs(L.mean() / mean - 1) < 0.005:
            continue
        for _ in range(abs(int(round(mean * len(L))) - int(L.sum()))):
            up = L.sum() < mean * len(L)
            room = (L + 1 <= cap) & (L + other + 1 <= SHAREGPT_MAX_TOTAL) if up else L - 1 >= (SHAREGPT_MIN if L is P else 1)
            if not room.any():
                break
            L[np.flatnonzero(room)[np.argmax(L[room])]] += 1 if up else -1
    return P, O


LENGTHS = SERVING / "lengths"
TRACES = SERVING / "traces"


def run_trace(name: str) -> tuple[Any, Any, Any]:
    """A replayed trace's arrival times (s) and prompt and output tokens, request by request (tests/serving/traces:
    each file says how it was drawn)."""
    d = json.loads((TRACES / f"{name}.json").read_text())
    arr = np.asarray(d["arrivals"], dtype=float)
    return arr - arr[0], np.asarray(d["input_lens"], dtype=np.int64), np.asarray(d["output_lens"], dtype=np.int64)


def run_lengths(case_id: str) -> tuple[Any, Any]:
    """A run's per-request prompt and output tokens as its client recorded them (tests/serving/lengths)."""
    d = json.loads((LENGTHS / f"{case_id}.json").read_text())
    return np.asarray(d["input_lens"], dtype=np.int64), np.maximum(np.asarray(d["output_lens"], dtype=np.int64), 1)


def run_silent(case_id: str) -> Any:
    """Which of a run's recorded requests streamed no text (the file's ``silent``: a recorded TTFT of 0.0 and 0
    output tokens), as Workload.silent takes them; None where the file lists none."""
    d = json.loads((LENGTHS / f"{case_id}.json").read_text())
    if not d.get("silent"):
        return None
    quiet = np.zeros(len(d["output_lens"]), dtype=bool)
    quiet[d["silent"]] = True
    return quiet


def _lengths(mean: float, n: int, seed: int, lognormal: bool, cap: int) -> Any:
    if not lognormal:
        return np.full(n, max(int(round(mean)), 1), dtype=np.int64)
    rng = np.random.default_rng(seed)
    x = rng.lognormal(0.0, SHAREGPT_SIGMA, size=n)
    x = x * (mean / x.mean())  # the run's own mean
    return np.clip(np.rint(x), 1, cap).astype(np.int64)


# The model before the step-time one, for comparison: every byte and FLOP over 0.7 of the datasheet
# figures (matmuls and attention each at the larger of their two terms), nothing added.
BOUND_OVER_07 = dataclasses.replace(
    DEFAULTS,
    eta_bw=0.7,
    eta_gemm=0.7,
    eta_c=0.7,
    fixed_s=0.0,
    per_request_s=0.0,
    gemm_latency_s=0.0,
    attn_latency_s=0.0,
    mla_attn_latency_s=0.0,
    moe_latency_s=0.0,
    moe_quant_s=0.0,
    kernel_gap_s=0.0,
    eager_launch_s=0.0,
    eager_host_s=0.0,
    alpha_s=0.0,
    link_bytes_per_s=1e14,
    request_overhead_s=0.0,
    tokenize_s_per_token=0.0,
    origin="the bound over 0.7",
)


@cache
def predict(case_id: str, previous: bool = False, prompt_blocks: str | None = None) -> dict[str, float]:
    """kvcalc's figures for a case, as its benchmark client reports them ({}: no request fits kvcalc's pool)."""
    case = next(c for c in CASES if c["id"] == case_id)
    run = replay(case_id, previous, prompt_blocks)
    b = run.bench if run is not None else None
    if b is None or not b.completed:
        return {}  # kvcalc's KV pool for this engine holds none of the run's requests
    conc, ranks, per_rank = users(case)
    scale = conc / per_rank if conc and per_rank else ranks  # (the deployment's throughput is its users')
    return {
        "request_throughput_per_s": b.request_throughput_per_s * scale,
        "output_throughput_tok_per_s": b.output_throughput_tok_per_s * scale,
        "mean_ttft_ms": b.ttft_s.mean * 1e3,
        "mean_tpot_ms": b.tpot_s.mean * 1e3,
    }


def users(case: dict[str, Any]) -> tuple[int | None, int, int | None]:
    """The run's concurrency cap (None: open loop), its DP ranks and the users one rank replays. A client's cap above its
    request count caps nothing (vllm bench serve's semaphore of 256 over 200 prompts): every request is in flight at
    once, as kvcalc's closed loop of n users runs them. With DP attention the replay is one DP rank's share (every
    dp-th request, an equal share of a closed loop's users; SimulationReport.dp). Fewer users than ranks (c=1 over 4
    ranks) are replayed as one user a rank, each rank's latencies the one user's, and the deployment's throughput is
    its users'."""
    c = case.get("max_concurrency")
    conc = min(int(c), int(case["measured"]["completed"])) if c else None
    ranks = int(case.get("dp") or 1)
    return conc, ranks, -(-conc // ranks) if conc else None


def replay(
    case_id: str, previous: bool = False, prompt_blocks: str | None = None, constants: Any = None, keep: Any = None
) -> Any:
    """The case replayed through kvcalc simulate: its paged run (a PolicyRun), or None where kvcalc's pool holds not one
    token of it. ``constants``: step-time constants in place of the defaults; ``keep``: a dict that receives each
    request's times (simulate's ``keep``)."""
    case = next(c for c in CASES if c["id"] == case_id)
    m, g = resolve_model(case["model"]), resolve_gpu(case["gpu"])
    # The server's --attention-backend where the run states one (SGLang's Triton backend: its decode kernel's floor).
    eng = with_moe_backend(with_attention_backend(engine(case["engine"]), case.get("attention_backend")), case.get("moe_backend"))
    # A fork's build whose custom all-reduce runs where the release's has none (cases.yaml says why under inferred).
    eng = with_all_reduce_backend(eng, case.get("all_reduce_backend"))
    # vLLM's compilation_config cudagraph_mode where the run's server sets it.
    eng = with_cudagraph_mode(eng, case.get("cudagraph_mode"))
    if prompt_blocks is not None:
        eng = dataclasses.replace(eng, prompt_blocks=prompt_blocks)
    n = int(case["measured"]["completed"])
    share = case["dataset"] == "sharegpt"
    ctx = m.max_position_embeddings
    silent = None
    arrivals = None
    if case["dataset"] == "trace":
        # A client that replays a trace: each request at its own time (from the first), with its own lengths.
        arrivals, P, O = run_trace(case["trace"])
    elif case["dataset"] == "random-uniform":
        # SGLang's bench_serving random dataset at its default --random-range-ratio 0: numpy's legacy
        # generator seeded with --seed draws every prompt length from 1 to the stated length, then every
        # output length from 0 to it (sglang/bench_serving.py sample_random_requests, 0.5.4), which
        # reproduces each run's printed token totals.
        rs = np.random.RandomState(int(case["seed"]))
        P = rs.randint(1, int(case["random_input_len"]) + 1, size=n).astype(np.int64)
        O = np.maximum(rs.randint(0, int(case["random_output_len"]) + 1, size=n).astype(np.int64), 2)
    elif case["dataset"] == "random-sglang":
        # SGLang's bench_serving random dataset from 0.5.14 (benchmark/datasets/common.py compute_random_lens): numpy's
        # generator seeded with --seed draws every prompt length, then every output length, from max(int(ratio x the
        # stated length), 1) to it; the client takes the tokenizer's special tokens off each prompt (datasets/random.py
        # sample_random_requests, num_special_tokens_to_add) and the server's encode adds them back.
        rs = np.random.RandomState(int(case["seed"]))
        r, s = float(case["random_range_ratio"]), int(case.get("prompt_special_tokens") or 0)
        i_len, o_len = int(case["random_input_len"]), int(case["random_output_len"])
        P = rs.randint(max(int(i_len * r), 1), i_len + 1, size=n).astype(np.int64)
        O = rs.randint(max(int(o_len * r), 1), o_len + 1, size=n).astype(np.int64)
        P = np.maximum(P - s, 1) + s
    elif case["dataset"] == "random-range":
        # The random dataset of vLLM's benchmark_serving.py as InferenceMAX's client (kimbochen/bench_serving) runs it:
        # numpy's legacy generator seeded with --seed (0) draws every prompt length from int(ratio x the stated length)
        # to it, then every output length the same way, which reproduces each run's printed token totals.
        rs = np.random.RandomState(int(case["seed"]))
        r = float(case["random_range_ratio"])
        i_len, o_len = int(case["random_input_len"]), int(case["random_output_len"])
        P = rs.randint(int(i_len * r), i_len + 1, size=n).astype(np.int64)
        O = np.maximum(rs.randint(int(o_len * r), o_len + 1, size=n).astype(np.int64), 2)
    elif share and (LENGTHS / f"{case.get('lengths_from') or case_id}.json").is_file():
        # The run's own requests, where its client recorded each one's prompt and output tokens
        # (tests/serving/lengths): a one-token output stays one, which the client leaves out of TPOT.
        # lengths_from: a run whose client kept no record, replayed with a sibling's (the same prompts,
        # checkpoint and build under greedy decoding; cases.yaml says so under inferred).
        P, O = run_lengths(case.get("lengths_from") or case_id)
        # Those whose streams carried no text: the client timed their first token at 0 s (Workload.silent).
        silent = run_silent(case.get("lengths_from") or case_id)
    elif share:
        P, O = _sharegpt(float(case["mean_input"]), float(case["mean_output"]), n)
        O = np.maximum(O, 2)
    else:
        P = _lengths(case["mean_input"], n, 1, share, ctx // 2)
        O = np.maximum(_lengths(case["mean_output"], n, 2, share, ctx // 2), 2)
    rate = case.get("request_rate")
    if arrivals is not None:
        pass
    elif rate in (None, "inf"):
        arrivals = np.zeros(n)
    else:
        arrivals = np.cumsum(np.random.default_rng(0).exponential(1.0 / float(rate), size=n))
    conc, ranks, per_rank = users(case)
    # A run's stated max_model_len, max_num_seqs and max_num_batched_tokens where it states them, else
    # the longest request (what one sets max_model_len to) and the release's defaults.
    # vLLM V0 sizes its prompt steps, and turns chunked prefill on, by max_model_len (Engine.schedule),
    # whose default is the model's context: there, a run that does not state it ran with that.
    guess = m.max_position_embeddings if eng.v0_chunking != "none" else max(int((P + O).max()), 4096)
    max_len = int(case.get("max_model_len") or guess)
    mem = g.memory_runtime_bytes
    stated = case.get("max_num_batched_tokens")
    st = SimSettings(
        max_len,
        int(case.get("max_num_seqs") or eng.default_num_seqs(mem, g.name)),
        eng.schedule(m, g, max_len, int(stated) if stated else None, chunked_prefill=case.get("chunked_prefill"))[0],
        constants=constants if constants is not None else BOUND_OVER_07 if previous else DEFAULTS,
        concurrency=per_rank * ranks if per_rank else None,
        # vLLM V0's --enable-chunked-prefill where the run states it.
        chunked_prefill=case.get("chunked_prefill"),
        # --no-enable-prefix-caching where the run states it (vLLM V1's default is on); SGLang's --disable-radix-cache.
        prefix_caching=case.get("prefix_caching", True),
        # The client's requests ask to ignore EOS (--ignore-eos; SGLang's bench_serving without --disable-ignore-eos).
        ignore_eos=bool(case.get("ignore_eos", False)),
        # Fewer users than ranks: only that many ranks serve (and run prompt steps).
        busy_ranks=conc if conc and conc < ranks else None,
        # SGLang's --scheduler-recv-interval where the run's script sets it.
        recv_interval=int(case.get("scheduler_recv_interval") or 1),
        # TensorRT-LLM's batch_wait_timeout_iters and batch_wait_max_tokens_ratio where the run's options set them.
        batch_wait_iters=int(case.get("batch_wait_timeout_iters") or 0),
        batch_wait_ratio=float(case.get("batch_wait_max_tokens_ratio") or 0.0),
    )
    # A run whose prompts the same server had already served in the session (the same benchmark
    # prompts sent again with prefix caching on) finds them in the prefix cache: the case says so.
    # prompts_cached_first: the server had served the run's first N prompts (an earlier run of the same seeded
    # prompts), which it finds whole in its cache, the rest not.
    first = case.get("prompts_cached_first")
    hits = None if first is None else [1.0] * int(first) + [0.0] * (len(P) - int(first))
    wl = Workload(
        arrivals, P, O, case["id"], "as the benchmark sent them", 0, float(case.get("prompt_cache_hit") or 0.0), silent, hits
    )
    try:
        run = simulate(
            m,
            g,
            wl,
            st,
            [("paged-16", 16)],
            eng,
            # Where the run states no KV dtype, the engine's kv_cache_dtype auto (the model's dtype, but
            # SGLang's fp8 for a DSA model on Blackwell: Engine.sparse_mla_auto_kv).
            kv_dtype(case["kv_dtype"]) if case.get("kv_dtype") else dataclasses.replace(kv_dtype("bf16"), auto=True),
            int(case["tp"]),
            dp=int(case.get("dp") or 1),
            ep=int(case.get("ep") or 1),
            # A checkpoint served in another format (vLLM's --quantization fp8 on a bf16 model).
            weight_dtype=case.get("weight_dtype"),
            # The engine's KV pool where the run states it (its log's "Available KV cache memory" a GPU):
            # the step model is judged here, not the memory estimate (docs/accuracy.md's start-up logs).
            pool_bytes=int(float(case["kv_cache_gib"]) * 2**30) if case.get("kv_cache_gib") else None,
            # Else the memory fraction the server was given (--gpu-memory-utilization, --mem-fraction-static,
            # TensorRT-LLM's free_gpu_memory_fraction) where the run states it.
            util=float(case["util"]) if case.get("util") and not case.get("kv_cache_gib") else None,
            keep=keep,
        ).runs[0]
    except KvcalcError as e:
        if "does not hold one token" in e.what:
            return None
        raise
    return run


def whole_prompt_blocks(case_id: str) -> dict[str, float]:
    """``predict`` with the case's engine taking a prompt's blocks all at admission (as kvcalc replayed
    every engine until vLLM V1's chunk-by-chunk allocation was read: Engine.prompt_blocks)."""
    return predict(case_id, prompt_blocks="whole")


def errors(case: dict[str, Any], previous: bool = False) -> dict[str, float]:
    got = predict(case["id"], previous)
    out: dict[str, float] = {}
    if not got:
        return out
    for k, _ in METRICS:
        want = case["measured"].get(k)
        if want:
            out[k] = got[k] / float(want) - 1
    return out


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_each_case_is_predicted(case):
    # Every case runs to completion and yields every metric, except where kvcalc's KV pool holds none
    # of its requests (said in docs/accuracy.md; the memory issue's over-reserve at long prompts).
    got = predict(case["id"])
    if case.get("expect") == "no-fit":
        assert not got
        return
    assert got and all(math.isfinite(v) and v > 0 for v in got.values())


def test_the_corpus_is_as_the_issue_asks():
    # At least 15 public measured results, each with its source and the settings kvcalc reads.
    assert len(CASES) >= 15
    for c in CASES:
        assert c["url"].startswith("https://") and c["model"] and c["gpu"] and c["tp"] and c["measured"]


def section() -> str:
    rows = []
    per: dict[str, list[float]] = {k: [] for k, _ in METRICS}
    tp8: list[float] = []
    for c in CASES:
        e = errors(c)
        got = predict(c["id"])
        for k, v in e.items():
            per[k].append(abs(v))
        if int(c["tp"]) == 8 and "mean_tpot_ms" in e:
            tp8.append(e["mean_tpot_ms"])
        load = f"c={c['max_concurrency']}" if c.get("max_concurrency") else f"rate {c.get('request_rate')}"
        cells = []
        for k, _ in METRICS:
            want = c["measured"].get(k)
            if not got:
                cells.append(f"{float(want):,.4g} / no request fits kvcalc's pool" if want else "-")
                continue
            cells.append(f"{float(want):,.4g} / {got[k]:,.4g} ({e[k]:+.0%})" if want else "-")
        rows.append(
            f"| [{c['id']}]({c['url']}) | {c['model']} | {c['gpu']} x{c['tp']} | {c['engine_as_run']} | "
            f"{c['dataset']} {c['mean_input']:,.0f}/{c['mean_output']:,.0f}, {load} | " + " | ".join(cells) + " |"
        )
    mae = {k: sum(v) / len(v) for k, v in per.items() if v}
    # The runs marked held_out were scored with the default constants before they joined the corpus,
    # each set apart by the day it was held out.
    held = [c for c in CASES if c.get("held_out")]
    held_sets: dict[str, tuple[int, dict[str, list[float]], list[float]]] = {}
    for c in held:
        n, errs, t8 = held_sets.setdefault(str(c["held_out"]), (0, {k: [] for k, _ in METRICS}, []))
        e = errors(c)
        for k, v in e.items():
            errs[k].append(abs(v))
        if int(c["tp"]) == 8 and "mean_tpot_ms" in e:
            t8.append(e["mean_tpot_ms"])
        held_sets[str(c["held_out"])] = (n + 1, errs, t8)
    old: dict[str, list[float]] = {k: [] for k, _ in METRICS}
    old_tp8: list[float] = []
    for c in CASES:
        e = errors(c, previous=True)
        for k, v in e.items():
            old[k].append(abs(v))
        if int(c["tp"]) == 8 and "mean_tpot_ms" in e:
            old_tp8.append(e["mean_tpot_ms"])
    lines = [
        BEGIN,
        f"{len(CASES)} public measured runs; each cell is measured / kvcalc (error). Mean absolute error with the "
        "default constants: "
        + ", ".join(f"{name} {mae[k]:.0%} ({len(per[k])} runs)" for k, name in METRICS if k in mae)
        + (f"; TP 8 TPOT bias {sum(tp8) / len(tp8):+.0%} ({len(tp8)} runs)" if tp8 else "")
        + ". The model before it (bytes and FLOPs over 0.7 of the datasheet figures, nothing added) on the same runs: "
        + ", ".join(f"{name} {sum(old[k]) / len(old[k]):.0%}" for k, name in METRICS if old[k])
        + (f"; TP 8 TPOT bias {sum(old_tp8) / len(old_tp8):+.0%}" if old_tp8 else "")
        + "."
        + (
            f" Of these, {len(held)} were held out (scored before they were added, marked held_out in cases.yaml, "
            "with the day): "
            + "; ".join(
                f"{n} on {day}: "
                + ", ".join(
                    f"{name} {sum(errs[k]) / len(errs[k]):.0%} ({len(errs[k])} run{'s' if len(errs[k]) != 1 else ''})"
                    for k, name in METRICS
                    if errs[k]
                )
                + (f", TP 8 TPOT bias {sum(t8) / len(t8):+.0%} ({len(t8)} run{'s' if len(t8) != 1 else ''})" if t8 else "")
                for day, (n, errs, t8) in sorted(held_sets.items())
            )
            + "."
            if held
            else ""
        ),
        "",
        "| run | model | GPU x TP | engine | workload (in/out tokens), load | req/s | output tok/s | mean TTFT ms | "
        "mean TPOT ms |",
        "|---|---|---|---|---|---:|---:|---:|---:|",
        *rows,
        END,
    ]
    return "\n".join(lines)


def test_accuracy_doc_serving_section_is_current():
    new = section()
    text = DOC.read_text()
    if BEGIN not in text:
        text = text.rstrip("\n") + "\n\n## Serving time\n\n" + BEGIN + "\n" + END + "\n"
    start, end = text.index(BEGIN), text.index(END) + len(END)
    if os.environ.get("KVCALC_ACCURACY") == "write":
        DOC.write_text(text[:start] + new + text[end:])
        return
    assert text[start:end] == new, "docs/accuracy.md is stale: KVCALC_ACCURACY=write pytest tests/test_serving_accuracy.py"


# kvcalc's track record (kvcalc.engine.track): the corpus's errors per group, as track_data.py holds them.
TRACK_METRICS = (
    ("mean_tpot", "mean_tpot_ms"),
    ("output_throughput", "output_throughput_tok_per_s"),
    ("mean_ttft", "mean_ttft_ms"),
)


def track_groups() -> dict[str, dict[str, list[float]]]:
    """Each run's errors by group: the model's kind and the GPUs of one replica (TP x PP x DP ranks)."""
    groups: dict[str, dict[str, list[float]]] = {}
    for c in CASES:
        e = errors(c)
        gpus = int(c["tp"]) * int(c.get("pp") or 1) * int(c.get("dp") or 1)
        key, _ = group_of(resolve_model(c["model"]).is_moe, gpus)
        for name, k in TRACK_METRICS:
            if k in e:
                groups.setdefault(key, {}).setdefault(name, []).append(e[k])
    return groups


def track_quartiles(xs: list[float]) -> tuple[float, float, float]:
    """The first quartile, median and third quartile of a group's errors (numpy's linear
    percentiles), to four places: what track_data.py holds and docs/accuracy.md's table prints."""
    q1, med, q3 = (round(float(v), 4) for v in np.percentile(np.asarray(xs), [25, 50, 75]))
    return q1, med, q3


def track_module() -> str:
    lines = [
        '"""kvcalc\'s track record: per group of public serving runs, each metric as (runs, median, lower',
        "quartile, upper quartile) of kvcalc / measured - 1 with the default constants.",
        "",
        "Generated by tests/test_serving_accuracy.py from tests/serving/cases.yaml",
        '(KVCALC_ACCURACY=write pytest tests/test_serving_accuracy.py); do not edit."""',
        "",
        f"CORPUS_RUNS = {len(CASES)}",
        "GROUPS: dict[str, dict[str, tuple[int, float, float, float]]] = {",
    ]
    for key, metrics in sorted(track_groups().items()):
        lines.append(f'    "{key}": {{')
        for name, _ in TRACK_METRICS:
            if name in metrics:
                q1, med, q3 = track_quartiles(metrics[name])
                lines.append(f'        "{name}": ({len(metrics[name])}, {med}, {q1}, {q3}),')
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def test_track_record_is_current():
    generated_file(TRACK, track_module(), "KVCALC_ACCURACY", "KVCALC_ACCURACY=write pytest tests/test_serving_accuracy.py")


TRACK_BEGIN, TRACK_END = "<!-- track:begin -->", "<!-- track:end -->"


def track_table() -> str:
    """docs/accuracy.md's table of the track record: per group, each metric's median error and middle
    half (the first and third quartiles) over its runs, from the same errors as track_data.py."""

    def cell(xs: list[float]) -> str:
        if len(xs) < MIN_RUNS:
            return f"{len(xs)} run{'s' if len(xs) != 1 else ''}, too few"
        q1, med, q3 = track_quartiles(xs)

        def pct(x: float) -> str:  # a share that rounds to nothing has no sign
            return "0%" if f"{abs(x):.0%}" == "0%" else f"{x:+.0%}"

        return f"{pct(med)} ({pct(q1)} to {pct(q3)}; {len(xs)})"

    rows = [
        TRACK_BEGIN,
        "| group | " + " | ".join(name for name, _ in TRACK_METRICS) + " |",
        "|---|" + "---:|" * len(TRACK_METRICS),
    ]
    for key, metrics in sorted(track_groups().items()):
        rows.append(f"| {key} | " + " | ".join(cell(metrics.get(name, [])) for name, _ in TRACK_METRICS) + " |")
    rows.append(TRACK_END)
    return "\n".join(rows)


def test_the_track_records_band_holds_about_half_of_the_runs_left_out():
    """docs/accuracy.md: each run left out of its group, is its error inside the others' quartiles?"""
    text = " ".join(DOC.read_text().split())
    counts = []
    for name, _ in TRACK_METRICS:
        inside = n = 0
        for metrics in track_groups().values():
            xs = metrics.get(name, [])
            if len(xs) < 6:
                continue
            for i, x in enumerate(xs):
                q1, q3 = np.percentile(np.asarray(xs[:i] + xs[i + 1 :]), [25, 75])
                n += 1
                inside += bool(q1 <= x <= q3)
        counts.append((inside, n))
    # 198 for output throughput until the B200's Triton MoE share; 182 for TTFT until a preempted request's cached blocks
    # were kept through a try that found no room
    # 175 for TPOT until SGLang 0.4.1.post7 to 0.4.4.post3 kept the overlap scheduler under DP attention
    # (174 for TPOT and 184 for TTFT until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs)
    # 183 for TTFT until SGLang's admission tests were modelled (2026-12-07)
    # (199 of 406 and 184 of 377 until the twenty-fourth held-out set joined, 2026-12-07; 207 of 424 until its sweep
    # runs joined, the same day)
    # (209 for output throughput until a retracted request rejoined SGLang's waiting queue at its tail, the same day)
    # (175 for TPOT until SGLang 0.5.3 to 0.5.9's compiled router was charged for GLM-4.x, 2026-12-07)
    # (193 for TTFT until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07)
    # (192 for TTFT until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07)
    # (174 for TPOT until data-parallel attention's gather and scatter took NCCL's measured times, 2026-12-07)
    # (193 for TTFT until SGLang 0.5.10 to 0.5.12 ran prompts eagerly with experts on FlashInfer's MoE runner, the same day)
    # ([(175, 363), (208, 427), (192, 395)] until the twenty-fifth held-out set joined, 2026-12-07)
    # ([(178, 368), (211, 432), (193, 400)] and shares 48 to 49 until the twenty-sixth joined, the same day)
    # (205 for TPOT until SGLang's overlap loop ran a step past a request's end, the same day)
    # ([(204, 419), (236, 483), (220, 451)] until the twenty-seventh held-out set joined, the same day)
    # ([(208, 425), (238, 489), (223, 457)] until the twenty-eighth held-out set joined, the same day; 324 for output
    # throughput until TensorRT-LLM's batch waiting was modelled, the same day; 291 for TPOT and 325 for output throughput
    # until the MI325X took the MI300X's measured tables, the same day; 292 for TPOT until the MI355X took its own
    # measured GEMM and all-reduce figures, 2026-12-08, and 324 for output throughput)
    # (291 for TPOT until TensorRT-LLM deployments took its own measured all-reduce, the same day)
    assert counts == [(290, 594), (326, 658), (308, 626)]
    shares = [round(100 * i / n) for i, n in counts]
    assert (min(shares), max(shares)) == (49, 50)  # (49, 49) until the MI355X's all-reduce table at TP 8, 2026-12-08
    assert (
        "in 290 of 594 runs for TPOT (291 until TensorRT-LLM deployments took its own measured all-reduce, 2026-12-08; 292 until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08; 291 until the MI325X took the MI300X's measured tables, 2026-12-07; 208 of 425 until the twenty-eighth held-out set joined, 2026-12-07; 204 of 419 until the twenty-seventh held-out set joined, 2026-12-07; 205 until SGLang's overlap loop ran a step past a request's end, 2026-12-07; 178 of 368 until the twenty-sixth held-out set joined, 2026-12-07; 175 of 363 until the twenty-fifth held-out set joined, 2026-12-07; 174 until data-parallel attention's gather and scatter took NCCL's measured times, 2026-12-07; 175 until SGLang 0.5.3 to 0.5.9's compiled router was charged for GLM-4.x, 2026-12-07; 174 until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs, 2026-12-06; 175 until SGLang 0.4.1.post7 to 0.4.4.post3 kept their overlap scheduler under DP attention, 2026-12-06; 174 until SGLang 0.4.1 to 0.4.4's Triton MLA decode was priced, 2026-12-06; 169 of 352 until the twenty-third held-out set joined, 2026-12-06; 170 until SGLang's steps of over 2,048 tokens were charged the norms their all-reduces no longer fuse, 2026-12-06; 171 until the MLA down projections were counted as each release runs them, 2026-12-06; 164 of 341 until the twenty-second held-out set joined, 2026-12-06; 160 of 331 until the twenty-first held-out set joined, 2026-12-06; 155 of 322 until the twentieth's ERNIE-4.5 runs joined, the same day; 149 of 313 until the twentieth held-out set joined, the same day; 121 of 259 until the nineteenth held-out set joined, the same day; 118 of 252 until the eighteenth held-out set joined, 2026-12-05; 100 of 217 until the seventeenth held-out set joined, the same day; 99 of 214 until the sixteenth held-out set joined, the same day; 91 of 200 until the fifteenth held-out set joined, the same day; 90 until TensorRT-LLM's overlap scheduler was counted, 2026-12-05; 89 of 197 until "
        "the TensorRT-LLM runs at EP = TP joined, the same day; 80 of 180 until "
        "the fourteenth held-out set joined, the same day; 74 of 168 until the "
        "thirteenth held-out set joined, the same day; 68 of 152 until the "
        "twelfth held-out set joined, the same day; 68 of 149 until the eleventh "
        "held-out set joined, the same day; 67 until fp8 fused-MoE calls took their own floor, 2026-12-05; 68 until MiniMax-M2's norms were charged their kernels, 2026-12-05; 66 until Gated "
        "DeltaNet layers were charged the kernels they launch, 2026-12-05; 67 while SGLang's Triton decode kernel was priced "
        "without its blocks' turns, the same day), 326 of 658 for output throughput (324 until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08; 325 until the MI325X took the MI300X's measured tables, 2026-12-07; 324 until TensorRT-LLM's batch waiting was modelled, 2026-12-07; 238 of 489 until the twenty-eighth held-out set joined, 2026-12-07; 236 of 483 until the twenty-seventh held-out set joined, 2026-12-07; 211 of 432 until the twenty-sixth held-out set joined, 2026-12-07; 208 of 427 until the twenty-fifth held-out set joined, 2026-12-07; 209 until a retracted request rejoined SGLang's waiting queue at its tail, 2026-12-07; 207 of 424 until the twenty-fourth set's sweep runs joined, the same day; 199 of 406 until the twenty-fourth set joined, the same day; 198 until the B200's Triton fused-MoE calls took their own measured share, 2026-12-06; 192 of 395 until the twenty-third set joined; 193 until the MLA down projections were counted as each release runs them, 2026-12-06; 188 of 384 until the twenty-second set joined; 187 until vLLM 0.7's materialized MLA path was charged five matmuls a layer, 2026-12-06; 182 of 374 until the twenty-first set joined; 178 of 365 until the twentieth's ERNIE-4.5 runs joined; 175 of 356 until the twentieth set joined; 148 of 302 until the nineteenth set joined; 143 of 295 until the eighteenth set joined; 126 of 260 until the seventeenth set joined; 123 of 257 until the sixteenth set joined; 116 of 243 until the fifteenth set joined; 115 until TensorRT-LLM's overlap scheduler was counted; "
        "112 of 240 until the TensorRT-LLM runs at EP = TP "
        "joined; 104 of 223 until the fourteenth set "
        "joined; 99 of 211 until the thirteenth set joined; "
        "91 of 195 until the twelfth set joined; "
        "80 of 172 until the eleventh set joined; "
        "79 until SGLang's FlashInfer fp8 MoE "
        "calls on B200 took their own floor and share, 2026-12-05; 78 until MXFP4 calls on Hopper took the same floor, the "
        "same day; 77 until the fp8 calls' floor; 79 until MiniMax-M2's norm kernels; 78 "
        "until Qwen3's query and key norms were counted, the same day; 77 until the Gated DeltaNet kernels; 78 until the "
        "Triton kernel) and 308 of 626 for TTFT (223 of 457 until the twenty-eighth held-out set joined, 2026-12-07; 220 of 451 until the twenty-seventh held-out set joined, 2026-12-07; 193 of 400 until the twenty-sixth held-out set joined, 2026-12-07; 192 of 395 until the twenty-fifth held-out set joined, 2026-12-07; 193 until SGLang 0.5.10 to 0.5.12 ran prompt steps without CUDA graphs with the routed experts on FlashInfer's TensorRT-LLM MoE runner, 2026-12-07; 192 until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07; 193 until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07; 184 of 377 until the twenty-fourth set joined, 2026-12-07; 183 until SGLang's admission tests were modelled, 2026-12-07; 184 until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs, 2026-12-06; 183 until the replay took each run's stated memory fraction, 2026-12-06; 182 until a preempted request's cached blocks were kept through a try to take it in that found no room, 2026-12-06; 177 of 366 until the twenty-third set joined, 2026-12-06; 171 of 355 until the twenty-second set joined, 2026-12-06; 166 of 345 until the twenty-first set joined, 2026-12-06; 161 of 336 until the twentieth's ERNIE-4.5 runs joined, the same day; 157 of 327 until the twentieth set joined, the same day; 158 until vLLM 0.7's materialized MLA decode weights were counted, the same day; 130 of 273 until the nineteenth set joined; 128 of 266 until the eighteenth set joined; 110 of 231 until the seventeenth set joined; 109 of 228 until the sixteenth set joined; 101 of 214 until the fifteenth set joined; 102 until TensorRT-LLM's overlap scheduler was counted; 101 of 211 until the TensorRT-LLM runs at EP = TP joined; 91 of 194 until the fourteenth set joined; 84 of 182 until the thirteenth set joined; 78 of 166 until the twelfth set joined; 77 of 163 until the eleventh set joined; 76 until MiniMax-M2's norm kernels; 77 until the Gated DeltaNet kernels; 76 "
        "until SGLang's DP-attention ranks stepped with each other's prompt steps, 2026-12-05): 49% to 50% of them (49% until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08; 48% to 49% until the twenty-sixth set joined; 47% to 49% until the nineteenth set joined; 47% to 48% until the eighteenth set joined; 46% to 48% until the seventeenth set joined; 45% to 48% until TensorRT-LLM's overlap scheduler was counted; 44% to 47% "
        "until the fourteenth set joined; 45% to 47% until the twelfth set joined; 46% to 47% until the eleventh set joined; 45% to 47% "
        "until MXFP4 calls on Hopper took the same floor; 46% to "
        "47% until MiniMax-M2's norm kernels; 45% to 47% until Qwen3's query and key norms were counted; 44% to 47% until the "
        "Gated DeltaNet kernels; 45% to 47% while the Triton kernel was priced without its turns)" in text
    )


def test_accuracy_doc_track_table_is_current():
    generated_block(
        DOC,
        TRACK_BEGIN,
        TRACK_END,
        track_table(),
        "KVCALC_ACCURACY",
        "KVCALC_ACCURACY=write pytest tests/test_serving_accuracy.py",
    )


def test_the_held_out_paragraph_quotes_kvcalc_and_the_runs():
    # docs/accuracy.md's held-out paragraph: kvcalc's figures as the step model and the replay give
    # them, and the runs' figures as cases.yaml records them.
    from kvcalc.engine.roofline import roofline

    text = " ".join(DOC.read_text().split())
    row = roofline(resolve_model("deepseek-v3"), resolve_gpu("h200"), [50], [2000], tp=8, engine="vllm@0.8.4").rows[0]
    # The weights at H200's measured matmul share of 4.8 TB/s (its spec's gemm block), the KV at 0.80.
    assert resolve_gpu("h200").gemm.bandwidth_share == 0.83  # type: ignore[union-attr]
    memory = row.weight_bytes_read / (4.8e12 * 0.83) + row.kv_bytes_read / (4.8e12 * DEFAULTS.eta_bw)
    quoted = (row.t_step_s, memory, row.t_fixed_s, row.t_collective_s)
    assert [round(x * 1e3, 1) for x in quoted] == [32.3, 18.9, 11.6, 1.5]
    # The small kernels' activations, 50 tokens x 15,658,368 B a token on a rank at 0.80 of 4.8 TB/s, and the
    # matmuls' FLOPs beside their weights (the two as their root-sum-square, where the weights' term alone was
    # charged until 2026-12-04).
    small = row.t_step_s - memory - row.t_fixed_s - row.t_collective_s
    act = 50 * 15_658_368 / (4.8e12 * 0.80)
    assert (round(small * 1e3, 1), round(act * 1e3, 1)) == (0.3, 0.2)
    assert (
        "kvcalc's step under vLLM 0.8.4 (which waits for its host between steps) is 32.3 ms (18.9 ms of weights and KV, the weights at H200's measured matmul share, 0.83 of the "
        "bandwidth, the KV at 0.80; 0.3 ms of the small kernels' activations (0.2 ms) and the matmuls' FLOPs beside their "
        "weights, 11.6 ms of kernel latencies and fixed cost, the fp8 matmuls' activation quantization among them, 1.5 ms "
        "of all-reduces; 32.1 ms with 11.4 of latencies until the MLA call was re-derived over five projections, "
        "2026-12-06; 31.5 ms with 10.8 of latencies until fp8 fused-MoE calls took their own floor, 2026-12-05)" in text
    )
    by_id = {c["id"]: c for c in CASES}
    long = "mvll-vllmbench-vllm084-dsr1-h200x8-in30000-out100-n50"
    assert round(by_id[long]["measured"]["duration_s"]) == 135
    assert round(50 / predict(long)["request_throughput_per_s"]) == 103
    assert (
        "took 135 s where kvcalc's replay ends at 103 s (105 s until the fp8 experts' share of the peak was refitted beside "
        "their own floor, 2026-12-05; 107 s until the matmuls' two terms combined as their root-sum-square, 2026-12-04; 106 s until the small kernels took a decode trace's times"
        in text
    )
    assert round(50 / whole_prompt_blocks(long)["request_throughput_per_s"]) == 89
    assert "92 s without vLLM V1's chunk-by-chunk block allocation, replayed since the ninth set below" in text
    assert (
        "(89 s without it now, 90 s until the fp8 experts' refit; 90 s since the matmuls' two terms combined as their "
        "root-sum-square);" in text
    )
    big = "sgl1362-sglang030-llama31-405b-fp8-h100sxmx8-sharegpt-rps16-n1000"
    # 6.87 and 178 ms until SGLang's start-up memory followed the interconnect (a smaller pool on 8 NVLink GPUs);
    # 6.67 and 151 ms until SGLang 0.3's own default memory fraction (0.83 at TP 8, not 0.81) was read.
    assert (by_id[big]["measured"]["request_throughput_per_s"], round(predict(big)["request_throughput_per_s"], 2)) == (
        6.74,
        6.44,
    )
    assert (
        "(6.74 and 6.44 of the 16 requests/s offered; 6.62 until fp8 matmuls took their own measured figures, 6.83 until the matmuls' two terms combined as their root-sum-square, "
        "6.78 until each attention call's work per request was charged, 2026-12-04; 6.91 until SGLang's decode batches past its largest CUDA graph were "
        "charged the host's time, 2026-12-04; 6.87 until the routers' top-k was counted as vLLM runs it, "
        "2026-12-03; 6.98 until the small kernels took a decode trace's times; 6.67 until" in text
    )
    assert (
        round(predict(big)["mean_tpot_ms"]) == 204
        and "(204 ms; 202 ms before fp8 matmuls took their own measured figures, 190 ms before the matmuls' two terms combined as their root-sum-square, 193 ms before each attention "
        "call's work per request was charged, 2026-12-04; 185 ms before its decode batches past 160 requests, SGLang 0.3's largest CUDA graph, were charged "
        "the host's time, 2026-12-04; 191 ms before the routers' top-k was counted as vLLM runs it, 193 ms before the small kernels "
        "took a decode trace's times, 151 ms before"
        in text
    )
    assert by_id["mvll-vllmbench-vllm084-dsr1-h200x8-in1000-out2000-n50"]["measured"]["mean_tpot_ms"] == 42.4
    assert by_id["mvll-sgl045p3-dsr1-h200x8-in1000-out2000-n50"]["measured"]["mean_itl_ms"] == 36.34


def test_the_second_held_out_set_of_2026_12_02_is_as_the_doc_says():
    # docs/accuracy.md's paragraph on the nine dstackai/benchmarks runs: the ranges it quotes for
    # kvcalc as it is now (the figures at scoring, c46ee83, are a record of that commit).
    text = " ".join(DOC.read_text().split())
    second = [c for c in CASES if c.get("held_out") == "2026-12-02 (second set)"]
    assert len(second) == 9
    r1 = [errors(c) for c in second if c["model"] == "deepseek-v3"]
    big = [errors(c) for c in second if c["model"] == "llama3.1-405b-fp8"]
    ratios = [1 + e["request_throughput_per_s"] for e in r1]
    assert (round(min(ratios), 1), round(max(ratios), 1)) == (1.3, 1.6)  # (1.3, 1.7) until SGLang 0.4.x's Triton MLA decode
    tpot = sorted(-e["mean_tpot_ms"] for e in r1)
    ttft = sorted(-e["mean_ttft_ms"] for e in r1)
    assert (round(tpot[0] * 100), round(tpot[-1] * 100)) == (23, 37) and (round(ttft[0] * 100), round(ttft[-1] * 100)) == (24, 66)
    assert "Now DeepSeek-R1 serves 1.3 to 1.6 times less than kvcalc predicts, with TPOT 23-37% low and TTFT 24-66% low" in text
    assert (
        "TTFT 24-66% low (TTFT 24-67% low until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07; 1.3 to 1.7"
        in text
    )
    assert "; 1.3 to 1.7 and TPOT 23-39% low until SGLang 0.4.1 to 0.4.4's Triton MLA decode was priced, 2026-12-06;" in text
    assert "; 1.3 to 1.8 and TPOT 23-43% low until vLLM V0's Triton MLA decode on the MI300X was priced, 2026-12-06;" in text
    assert "TPOT 23-44% low until the MLA call was re-derived over five projections, 2026-12-06;" in text
    assert "; TPOT 22-43% low until vLLM 0.7's materialized MLA path was charged five matmuls a layer, 2026-12-06;" in text
    assert "1.4 to 1.9, TPOT 26-45% and TTFT 46-67% low until vLLM 0.7's materialized MLA decode weights were counted" in text
    assert "2026-12-06; TPOT 26-46% low until the MI300X's all-reduces at TP 8 took its TP 4 table's latency, 2026-12-05;" in text
    assert "TPOT 28-46% and TTFT 45-67% low until fp8 fused-MoE calls took their own floor, the same day;" in text
    assert (
        "; TPOT 28-47% and TTFT 45-70% low until the MI300X's fp8 matmuls took aiter's measured figures over every size, "
        "2026-12-05;" in text
    )
    assert "2026-12-05; TTFT 43-70% low until the matmuls' two terms combined as their root-sum-square, 2026-12-04;" in text
    assert "1.5 to 2.0 and 31-49% until the routers' top-k was counted as vLLM runs it, 2026-12-03;" in text
    c4 = next(c for c in second if c["id"] == "dstack-r1-h200-vllm-c4")
    assert (round(c4["measured"]["mean_ttft_ms"]), round(predict(c4["id"])["mean_ttft_ms"])) == (976, 478)
    assert (
        "took 976 ms where kvcalc's takes 478 (485 until the fp8 experts' share of the peak was refitted beside their own "
        "floor, 2026-12-05; 497 until the matmuls' root-sum-square)" in text
    )
    assert sorted(round(-e["request_throughput_per_s"] * 100) for e in big) == [1, 1, 2]
    assert sorted(round(-e["mean_tpot_ms"] * 100) for e in big) == [-1, 0, 4]
    assert "The 405B runs are 1-2% low on throughput and their TPOT from 4% low to 1% high since each is replayed" in text
    assert "437 or 438 of whose outputs are 10 tokens or fewer" in text
    outs = [sum(x <= 10 for x in run_lengths(c["id"])[1]) for c in second if c["model"] == "llama3.1-405b-fp8"]
    assert sorted(outs) == [437, 438, 438]
    assert (
        "19-20% low and from 2% low to 3% high until then (17-18% and 3% low to 3% high "
        "until fp8 matmuls took their own measured figures; 16% and 0-6% low until the matmuls' two "
        "terms combined as their root-sum-square, 2026-12-04; 0-7% until each attention call's work per request was charged, "
        "2026-12-04; 0-6% until the routers' top-k was counted" in text
    )


def test_dennislee22s_runs_are_as_the_doc_says():
    # docs/accuracy.md: the replays take each section's stated KV pool; the TP 2 runs (two pods) are
    # further below on TPOT than the same models at TP 1.
    text = " ".join(DOC.read_text().split())
    runs = [c for c in CASES if c["id"].startswith("dennislee22")]
    assert runs and all(c.get("kv_cache_gib") for c in runs)
    by_tp = {1: [], 2: []}
    for c in runs:
        by_tp[int(c["tp"])].append(round(-errors(c)["mean_tpot_ms"] * 100))
    assert (min(by_tp[2]), max(by_tp[2])) == (9, 32) and (min(by_tp[1]), max(by_tp[1])) == (4, 16)
    assert (
        "are 9-32% low on TPOT where the same models at TP 1 are 4-16% low (4-10% at TP 1 until two of them found the prompts "
        "an earlier run had computed, 2026-12-07; 9-33% and 4-18% until the matmuls' two terms combined as "
        "their root-sum-square; 4-19% at TP 1 until each attention call's work per "
        "request was charged, 2026-12-04; 9-32% until a preempted decoding" in text
    )


def test_the_sglang_paragraph_is_as_the_runs_score():
    text = " ".join(DOC.read_text().split())
    e = errors(next(c for c in CASES if c["id"] == "gpustack-h200x8-deepseek-r1-0528-sglang053-tp8-sharegpt-inf"))
    # (68, 36) until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07; (71, 37) until SGLang's
    # overlap loop took requests in a step late, the same day
    assert (round(-e["mean_tpot_ms"] * 100), round(-e["mean_ttft_ms"] * 100)) == (71, 36)
    assert "; 71% and 37% low since SGLang's shared expert runs inside DeepSeek-V3's fused MoE call, 2026-12-07" in text
    assert "; 71% and 36% low since SGLang's overlap loop takes requests in a step late, the same day" in text
    assert "; 68% and 36% low since 0.5.3's one matmul for an MLA layer's two down projections is counted, 2026-12-06;" in text
    assert (
        "; 67% and 34% low since the matmuls' two terms combine as their root-sum-square, 2026-12-04; 67% and 36% low since "
        "fp8 fused-MoE calls take their own floor, 2026-12-05;" in text
    )
    assert "which moved its TPOT from 90% low to 70% low (73% low since" in text and "76% low since the replay prunes" in text
    assert (
        "72% low since the routed experts' share of the peak follows their width, and still since the small kernels take a "
        "decode trace's times; 71% low since the routers' top-k is counted as vLLM runs it; 66% low since its decode batches "
        "past 512 requests, SGLang 0.5.3's largest CUDA graph on an H200 at TP 8, are charged the host's time of an eager "
        "forward, below;"
        in text
        and "the TTFT is now 36% low (33% until fp8 fused-MoE calls took their own floor, 2026-12-05;" in text
    )


def test_the_dennislee22_runs_on_a_warm_server_find_their_prompts_cached():
    """Two of dennislee22's Qwen2-7B runs on one A100 (vLLM 0.10.1.1, section 'Test 5' of its README at
    b474d1e) came after runs of the same seeded prompts on the same server, as the server's cumulative
    "Prefix cache hit rate" lines under each block show. The rates are recomputed here: each run sends a
    readiness request with its first prompt, then its prompts; a prompt sent before on that server is found
    as 63 whole blocks of 16 tokens (vLLM recomputes at least the last token), the tokens asked for counted
    at each run's mean prompt (its Total input tokens over its prompts)."""

    def rates(runs: list[tuple[int, int]]) -> list[float]:
        seen: set[int] = set()
        hits = asked = 0.0
        out = []
        for n, total in runs:
            tokens = total / n
            for k in [1, *range(1, n + 1)]:  # (the readiness request sends prompt 1 first)
                asked += tokens
                hits += (round(tokens) - 1) // 16 * 16 if k in seen else 0
                seen.add(k)
            out.append(100 * hits / asked)
        return out

    # APIServer pid 136: 50 prompts (09-09 01:31:28, 1.9%), 30 (01:36:48, 38.5%), 20 (01:38:28, 50.7%).
    assert rates([(50, 50977), (30, 30699), (20, 20460)]) == pytest.approx([1.9, 38.5, 50.7], abs=0.1)
    # APIServer pid 2739: 100 prompts (09-04 01:33:00, 1.0%), 200 (01:34:50, 33.3%), then the 500-prompt run.
    assert rates([(100, 102140), (200, 204007)]) == pytest.approx([1.0, 33.3], abs=0.1)
    cases = {c["id"]: c for c in CASES}
    run = "dennislee22-a100-80g-qwen2-7b-vllm01011-tp1-random1024x1024-n"
    assert cases[run + "20"]["prompt_cache_hit"] == 1.0 and cases[run + "500"]["prompts_cached_first"] == 200
    assert "prompt_cache_hit" not in cases[run + "100"] and "prompts_cached_first" not in cases[run + "100"]
    # 20 prompts at once take at least 0.85 s of 16-bit matmuls on one A100 (Qwen2-7B's 6.5e9 parameters
    # outside its embeddings, 2 FLOPs each a token, at 312 TFLOP/s), against the measured mean TTFT.
    assert 2 * 6.5e9 * 20460 / 312e12 > 0.85 > 4 * cases[run + "20"]["measured"]["mean_ttft_ms"] / 1e3
    # docs/accuracy.md's figures for the two runs now (their figures before: the replay without the hits).
    doc = " ".join(DOC.read_text().split())
    said = []
    for n in ("20", "500"):
        e = errors(cases[run + n])
        said.append(tuple(round(100 * e[k]) for k in ("mean_ttft_ms", "request_throughput_per_s", "mean_tpot_ms")))
    assert said == [(-81, 15, -11), (-13, 18, -16)]
    assert "its TTFT went from 330% high to 81% low, its throughput from 3% to 15% high and its TPOT from 7% to 11% low" in doc
    assert "its TTFT went from 7% high to 13% low, its throughput from 5% to 18% high and its TPOT from 6% to 16% low" in doc
    assert "(1.9%), then the 30-prompt run (38.5%), then this one (50.7%)" in doc and "(1.0%) and 200-prompt (33.3%)" in doc


def test_sglangs_tpot_misses_at_100_users_sit_in_the_decode_step():
    """docs/accuracy.md: on four cookbook runs at 100 users (SGLang 0.5.6), the wait an arriving prompt's own step costs
    the decoding requests, from the measured mean and median ITL, against kvcalc's prompt step; and the median ITL
    against kvcalc's decode step of 100 requests at the run's mean context."""
    from kvcalc.engine.steptime import StepModel

    doc = " ".join(DOC.read_text().split())
    cases = {c["id"]: c for c in CASES}
    waits, prompts, medians, steps = [], [], [], []
    for k in ("qwen3-235b-b200x8", "glm46-b200x8", "dsr1-b200x8", "llama31-70b-a100x8"):
        c = cases[f"sglcb-{k}-c100-1k1k"]
        m, users, n = c["measured"], int(c["max_concurrency"]), int(c["measured"]["completed"])
        assert c["engine"] == "sglang@0.5.6" and users == 100 and int(c["tp"]) == 8 and not c.get("kv_dtype")
        waits.append(round((m["mean_itl_ms"] - m["median_itl_ms"]) * m["total_output_tokens"] / (n * (users - 1)), 1))
        sm = StepModel(resolve_model(c["model"]), resolve_gpu(c["gpu"]), kv_dtype("bf16"), 8, engine=engine(c["engine"]))
        p = round(c["mean_input"])
        prompts.append(round(sm.step(0, 0.0, p, p).t_step_s * 1e3, 1))
        medians.append(m["median_itl_ms"])
        steps.append(round(sm.step(users, c["mean_input"] + c["mean_output"] / 2).t_step_s * 1e3, 1))
    assert waits == [46.1, 72.9, 66.3, 65.7] and prompts == [59.7, 80.5, 73.5, 69.6]
    share = [w / p for w, p in zip(waits, prompts, strict=True)]
    assert (round(min(share), 2), round(max(share), 2)) == (0.77, 0.94)
    assert medians == [23.54, 35.05, 26.36, 33.46] and steps == [20.5, 28.7, 22.8, 24.7]
    short = [round(100 * (1 - s / m)) for s, m in zip(steps, medians, strict=True)]
    assert (min(short), max(short)) == (13, 26)
    assert (
        "that is 46.1, 72.9, 66.3 and 65.7 ms, 0.77 to 0.94 of kvcalc's prompt step at the run's mean prompt (59.7, 80.5, 73.5 and 69.6 ms)"
        in doc
    )
    assert (
        "is 23.5, 35.0, 26.4 and 33.5 ms where kvcalc's step of 100 requests at the mean context takes 20.5, 28.7, 22.8 and 24.7 ms, 13% to 26% short"
        in doc
    )


def test_two_cookbook_pages_runs_find_the_prompts_earlier_runs_sent():
    """sgl-cookbook pages deploy once and run their benchmarks in order. bench_serving seeds numpy with --seed 1 and
    draws every prompt length one after another, so the first k of a run's lengths are those of any earlier run with
    the same --random-input-len (the printed totals are the draws'), and its prompts come from ShareGPT in one seeded
    order. Three runs' TTFT figures are impossible without those prompts cached: a first wave of every user's prompt
    is computed before the last of their first tokens, so the k-th largest TTFT, and numpy's p99 that lies above it,
    takes at least the matmuls of all but the k - 1 longest first prompts at the 16-bit peak."""
    doc = " ".join(DOC.read_text().split())
    cases = {c["id"]: c for c in CASES}

    def draws(top: int, n: int) -> Any:
        return np.random.RandomState(1).randint(1, top + 1, size=n)

    # The printed "Total input tokens" of the runs, and the first draws shared between runs.
    assert [int(draws(1000, n).sum()) for n in (10, 80, 320, 500)] == [6101, 39668, 158939, 249831]
    assert [int(draws(8000, n).sum()) for n in (10, 80, 320)] == [41941, 300020, 1273893]
    assert int(draws(1000, 500)[:80].sum()) == 39668 and int(draws(8000, 80)[:10].sum()) == 41941

    def bound(case_id: str, top: int, per_token: float, peak: float) -> tuple[int, float, float]:
        c = cases[case_id]
        n, users = int(c["num_prompts"]), int(c["max_concurrency"])
        above = n - int(np.floor(0.99 * (n - 1)))  # numpy's p99 is at least the above-th largest value
        tokens = int(np.sort(draws(top, n)[:users])[: users - above + 1].sum())
        return tokens, round(tokens * per_token / peak, 2), round(c["measured"]["p99_ttft_ms"] / 1e3, 2)

    llama, ernie = resolve_model("llama3.1-70b"), resolve_model("ernie-4.5-21b-a3b")
    # FLOPs a prompt token takes at least: every matmul parameter outside the embeddings (and the LM head).
    assert (llama.vocab_size, llama.hidden_size, ernie.vocab_size, ernie.hidden_size) == (128_256, 8_192, 103_424, 2_560)
    per_llama, per_ernie = 2 * (70_553_706_496 - 2 * 128_256 * 8_192), 2 * (ernie.params_active - 103_424 * 2_560)
    assert ernie.tie_word_embeddings and round(per_ernie / 2 / 1e9, 2) == 3.09
    a100, mi300x = 8 * 312e12, 1307.4e12
    page = "sglcb-llama31-70b-a100x8-"
    assert bound(page + "c100-1k1k", 1000, per_llama, a100) == (44_515, 2.44, 1.25)
    assert bound(page + "c16-8k1k", 8000, per_llama, a100) == (59_042, 3.24, 2.61)
    e = "sglcb-ernie45-21b-a3b-1xmi300x-"
    tokens, at_peak, p99 = bound(e + "in8000-out1000-c64-n320", 8000, per_ernie, mi300x)
    assert (tokens, at_peak, p99) == (216_991, 1.02, 0.38)
    for k in ("c100-1k1k", "c16-8k1k"):
        t, at, measured = bound(page + k, 8000 if "8k" in k else 1000, per_llama, a100)
        assert at > measured
    assert "the 95 shortest first prompts hold 44,515 tokens, 2.44 s, against a p99 of 1.25 s" in doc
    assert "the 15 shortest 59,042 tokens, 3.24 s, against 2.61 s" in doc
    assert "the 60 shortest 216,991 tokens, 1.02 s, against 0.38 s" in doc
    # Each later run finds the prompts of the page's earlier runs with its prompt length, in the page's order.
    assert [cases[page + k].get("prompts_cached_first") for k in ("c1-1k1k", "c16-1k1k", "c100-1k1k", "c16-8k1k")] == [
        None,
        10,
        80,
        10,
    ]
    order = [
        "in1000-out1000-c1-n10",
        "in1000-out1000-c16-n80",
        "in1000-out1000-c100-n500",
        "in1000-out8000-c1-n10",
        "in1000-out8000-c16-n80",
        "in1000-out8000-c64-n320",
        "in8000-out1000-c1-n10",
        "in8000-out1000-c16-n80",
        "in8000-out1000-c64-n320",
    ]
    sent: dict[int, int] = {}
    for k in order:
        c = cases[e + k]
        top, n = int(c["random_input_len"]), int(c["num_prompts"])
        assert c.get("prompts_cached_first") == (min(sent[top], n) if top in sent else None)
        sent[top] = max(sent.get(top, 0), n)
    said = [round(100 * errors(cases[page + k])["mean_ttft_ms"]) for k in ("c16-1k1k", "c100-1k1k", "c16-8k1k")]
    assert said == [-38, 27, 21]  # [-45, 15, 12] until SGLang's overlap loop took requests in a step late, 2026-12-07
    assert "TTFT from 5% low to 45% low at 16 users, from 175% to 15% high at 100 and from 74% to 12% high" in doc
    assert "docs/simulation.md, 38% low, 27% high and 21% high); throughput" in doc
    low = sorted(round(-100 * errors(cases[e + k])["mean_ttft_ms"]) for k in order if cases[e + k].get("prompts_cached_first"))
    # (27, 61, 7) until the overlap loop's late admission
    assert (low[0], low[-1], len(low)) == (19, 50, 7) and "are now 19% to 50% low on TTFT (27% to 61% until" in doc


def test_the_surajssd_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: Llama-3.3-70B TP 8 on A100-40GB (vLLM 0.8.3), four runs of one session; the
    last three find their prompts in the prefix cache (prompt_cache_hit 1.0)."""
    doc = " ".join(DOC.read_text().split())
    ids = [f"surajssd-a100-40gx8-llama33-70b-vllm083-tp8-sharegpt-{q}" for q in ("qps1", "qps4", "qps16", "qpsinf")]
    cases = {c["id"]: c for c in CASES}
    assert [cases[i].get("prompt_cache_hit") for i in ids] == [None, 1.0, 1.0, 1.0]
    tpot = [round(-errors(cases[i])["mean_tpot_ms"] * 100) for i in ids]
    assert f"TPOT {min(tpot)}-{max(tpot)}% low" in doc
    e = errors(cases[ids[-1]])
    assert e["mean_ttft_ms"] < 0 < e["request_throughput_per_s"]
    assert "to 36% low, its throughput from 35% to 25% low" in doc  # when the hit was added
    assert "(35% and 26% once the replay pruned ShareGPT as the client does;" in doc
    assert "; 34% and 34% since the small kernels take a decode trace's times" in doc
    assert (round(-100 * e["mean_ttft_ms"]), round(-100 * e["request_throughput_per_s"])) == (36, -21)
    thr = [round(100 * errors(cases[i])["request_throughput_per_s"]) for i in ids]
    assert thr == [-11, -7, 9, 21] and "the four runs' throughput from 11% low to 21% high where it was 13-36% low" in doc
    assert "; 34% and 36% since the matmuls' two terms combine as their root-sum-square, 2026-12-04;" in doc
    # The A100-40GB's matmuls: the 80 GB part's measured figures (gpu_specs/a100-40gb.yaml).
    g40, g80 = resolve_gpu("a100-40gb").gemm, resolve_gpu("a100-80gb").gemm
    assert g40 is not None and g80 is not None and (g40.latency_us, g40.bandwidth_share) == (g80.latency_us, g80.bandwidth_share)
    assert (round(predict(ids[0])["mean_tpot_ms"], 1), round(cases[ids[0]]["measured"]["mean_tpot_ms"], 1)) == (21.2, 24.6)
    assert "even at 1 request/s (24.6 ms measured, 21.2 ms kvcalc; 14-22% and 21.1 ms until each run was replayed" in doc


def test_the_fourth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md's paragraph on the twenty runs of 2026-12-02 (fourth set): the ranges it
    quotes, as cases.yaml records the runs and the replay scores them."""
    text = " ".join(DOC.read_text().split())
    four = [c for c in CASES if c.get("held_out") == "2026-12-02 (fourth set)"]
    assert len(four) == 20 and sum(c["id"].startswith("sglcb-") for c in four) == 17
    # The replay draws SGLang's random prompts as bench_serving does: every printed total is reproduced.
    for c in four:
        if c["dataset"] == "random-uniform":
            rs = np.random.RandomState(c["seed"])
            n = c["measured"]["completed"]
            assert rs.randint(1, c["random_input_len"] + 1, size=n).sum() == c["measured"]["total_input_tokens"]
    thr = sorted(round(e["output_throughput_tok_per_s"] * 100) for e in map(errors, four) if "output_throughput_tok_per_s" in e)
    # As the paragraph had them at 68 us a kernel (quoted), and as they are now.
    assert "output throughput is from 30% low to 98% high, low on 3 of 19" in text and "TPOT low on 13 of 17" in text
    # ([-20, -20, -8, 2] until the matmuls' two terms combined as their root-sum-square)
    # ([-20, -20, -9, -1] until fp8 fused-MoE calls took their own floor, 2026-12-05; [-23, -20, -9, -1] and 41 until
    # SGLang's FlashInfer fp8 MoE calls on B200 took that kernel's own floor and share, the same day; [-20, -17, -9,
    # -1] and 42 until an MLA call took its GPU's measured floor, the same day)
    # (thr[-1] 51 until a DP-attention rank stepped its share of SGLang's prompt chunk, 2026-12-05)
    # ([-20, -9, -1, 6] until SGLang's all-reduce and norm fusion was counted, 2026-12-06)
    # (thr[-1] 50 until SGLang's one matmul for an MLA layer's two down projections was counted, 2026-12-06)
    # ([-14, -6, -1, 6] until SGLang's steps of over 2,048 tokens were charged the norms their all-reduces no longer
    # fuse, 2026-12-06)
    # ([-14, -1, 2, 6] until the B200's Triton fused-MoE calls took their own measured share, 2026-12-06)
    # (thr[-1] 56 until data-parallel attention's gather and scatter took NCCL's measured times, 2026-12-07)
    # ([-14, -6, 2, 6] and 50 until SGLang's overlap loop took requests in a step late, 2026-12-07)
    assert len(thr) == 19 and thr[:4] == [-14, -6, 1, 6] and thr[-1] == 49
    assert (
        "Since SGLang's overlap loop takes requests in a step late (the same day, docs/simulation.md), from 14% low to 49% high."
        in text
    )
    assert (
        "Since data-parallel attention's gather and scatter take NCCL's measured times (2026-12-07, docs/simulation.md), to "
        "50% high, Kimi-K2 with DP attention at 100 users." in text
    )
    assert "since an MLA layer's two down projections count as the one matmul SGLang runs (2026-12-06), to 56% high;" in text
    assert (
        "since the B200's Triton fused-MoE calls take their own measured share (2026-12-06, docs/engines.md), the same range, "
        "Qwen3-235B's 8,000-token prompts at 16 users from 1% to 6% low, their TTFT from 21% low to 13% high." in text
    )
    assert (
        "since SGLang fuses the all-reduces with the norms after them where its release does (2026-12-06, above), from 14% "
        "low to 50% high, low on 3 of 19, TPOT low on 15 of 17, the TTFTs as they were;" in text
    )
    assert "its share of SGLang's prompt chunk (the same day, docs/engines.md), to 50% high, Kimi-K2 with DP" in text
    assert (
        "since an MLA call takes its GPU's measured floor (the same day), from 20% low to 51% high, low on 3 of 19, TPOT "
        "low on 15 of 17, the TTFTs as they were;" in text
    )
    assert (
        "since SGLang's FlashInfer fp8 MoE calls on B200 take that kernel's own floor and share (the same day), from 20% low "
        "to 42% high, low on 4 of 19, the TTFTs as they were;" in text
    )
    assert (
        "since fp8 fused-MoE calls take their own floor (the same day), from 23% low to 41% high, low on 4 of 19, the TTFTs "
        "as they were" in text
    )
    assert (
        "since SGLang's overlap scheduler runs the host's time beside the GPU's (2026-12-04), from 20% low to 126% high, low on 3 of 19"
        in text
    )
    assert (
        "since Gated DeltaNet layers are charged the kernels they launch (2026-12-05, below), from 20% low to 48% high, low on 3 "
        "of 19, and the one-user TTFTs 9-78 ms from the measured ones; since Qwen3's query and key norms and Qwen3-Next's "
        "output gate are counted (the same day), from 20% low to 41% high, low on 4 of 19, and the one-user TTFTs 9-70 ms" in text
    )
    assert "output throughput is from 26% low to 120% high, low on the same 3, and TPOT low on 14 of 17" in text  # at 1.3 us
    assert "output throughput is from 29% low to 115% high, low on 3 of 19;" in text  # before the routers' kernels
    assert "from 31% low to 115% high, low on 4 of 19, and the one-user TTFTs are 24-89 ms, 9-89 ms from" in text
    tpot = [e["mean_tpot_ms"] for e in map(errors, four) if "mean_tpot_ms" in e]
    assert (len(tpot), sum(x < 0 for x in tpot)) == (17, 15)  # 14 until an MLA call took its GPU's floor
    one = [c for c in four if c.get("max_concurrency") == 1]
    measured = [c["measured"]["mean_ttft_ms"] for c in one]
    ours = [predict(c["id"])["mean_ttft_ms"] for c in one]
    gaps = [a - b for a, b in zip(measured, ours, strict=True)]
    # (24 ms the least of kvcalc's until SGLang's prompt steps of at most 2,048 tokens issued the fused norms, 2026-12-06)
    # (21-90 ms and 12-75 ms apart until SGLang's overlap loop ran a step past a request's end, 2026-12-07)
    assert (round(min(measured)), round(max(measured)), round(min(ours)), round(max(ours))) == (34, 156, 22, 101)
    # 9-89 until the Gated DeltaNet kernels, 9-78 the norms, 9-70 until SGLang's prompt steps issued the fused norms
    assert (round(min(gaps)), round(max(gaps))) == (12, 72)
    assert (
        "Since it runs a step past a request's end (the same day, docs/simulation.md), the one-user TTFTs are 22-101 ms, 12-72"
        in text
    )
    assert "measured TTFTs are 34-156 ms where kvcalc had 10-86 ms, 24-122 ms apart" in text
    assert "the one-user TTFTs are 34-95 ms, 0-75 ms from the measured ones" in text  # at 68 us a kernel
    assert "the one-user TTFTs are 26-91 ms, 8-88 ms from the measured ones" in text  # at 49 us a kernel
    llama = [predict(f"sglcb-llama31-70b-a100x8-c{u}-1k1k")["mean_tpot_ms"] for u in (1, 16)]
    assert [round(x, 1) for x in llama] == [16.3, 20.1]
    assert (
        "and kvcalc now has 16.3 and 20.1 ms (20.2 until the 16-user run found the one-user run's ten prompts cached, "
        "2026-12-07, below; 20.1 until the matmuls' two terms combined as their root-sum-square, 16.2 and 20.0 "
        "until each attention call's work per request was charged, 2026-12-04; 16.8 and 20.6 until" in text
    )
    nxt = errors(next(c for c in four if c["id"] == "sglcb-qwen3next-b200x8-c100-sharegpt"))
    assert round(1 + nxt["output_throughput_tok_per_s"], 2) == 1.35 and "serves 1/1.35 of kvcalc's figure (1/1.41 until" in text


def test_the_light_load_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: Qwen3-8B on one H100 at 1 to 8 in flight, under vLLM, SGLang and TensorRT-LLM."""
    text = " ".join(DOC.read_text().split())
    runs = [errors(c) for c in CASES if c["id"].startswith("gpustack-h100-qwen3-8b-")]
    assert len(runs) == 6
    tpot = sorted(round(-e["mean_tpot_ms"] * 100) for e in runs)
    thr = sorted(round(e[k] * 100) for e in runs for k in ("request_throughput_per_s", "output_throughput_tok_per_s"))
    assert (tpot[0], tpot[-1], thr[0], thr[-1]) == (-2, 7, 2, 12)
    assert "TensorRT-LLM): TPOT from 7% low (TensorRT-LLM's) to 2% high, throughput from 2% to 12% high (TPOT from on" in text
    assert (
        "to 5% high until TensorRT-LLM's overlap scheduler ran the host's time beside the GPU's, 2026-12-05; TPOT from 3% low"
        in text
    )
    assert (
        "2026-12-05; TPOT from 4% low and throughput to 9% high until each attention call's work per request was charged, 2026-12-04;"
        in text
    )
    ttft = {c["id"]: round(errors(c)["mean_ttft_ms"] * 100) for c in CASES if c["id"].startswith("gpustack-h100-qwen3-8b-")}
    vllm = sorted(v for k, v in ttft.items() if "-vllm0110-" in k)
    other = [ttft[f"gpustack-h100-qwen3-8b-{e}-sharegpt-c4"] for e in ("sglang053post3", "trtllm120rc1")]
    # (4, -75, -71, -5, -49) until SGLang's overlap loop took requests in a step late, 2026-12-07
    assert (len(vllm), vllm[0], vllm[-1], *other) == (4, -75, -71, 20, -49)
    assert "5% and 49% low since TensorRT-LLM's overlap scheduler is counted, the same day;" in text
    assert "20% high and 49% low since SGLang's overlap loop takes requests in a step late (2026-12-07" in text
    assert (
        "16% and 54% low since SGLang's overlap scheduler runs the host's time beside the GPU's; and 5% and 48% low since" in text
    )
    assert "TTFT at light load is 71-75% low under vLLM 0.11" in text and "to 18% high and 37% low" in text
    assert "; 73-78% until the matmuls' two terms combined as their root-sum-square, 2026-12-04)" in text
    assert "and to 7% and 50% low at 49 us a kernel" in text
    assert "6% and 49% low since the small kernels take a decode trace's times; 15% and 54% low at 42 us a kernel" in text
    vq = next(c for c in CASES if c["id"] == "violetquartz-rtx4090-qwen2.5-7b-vllm0251-sharegpt-c1")
    # (44 ms until the RTX 4090's weight reads took its own measured share, 2026-12-07)
    assert (round(vq["measured"]["mean_ttft_ms"]), round(predict(vq["id"])["mean_ttft_ms"])) == (30, 43)
    assert (
        "at one user, the sixth set below, measured 30 ms where kvcalc has 43 ms (44 until the RTX 4090's weight reads took its own measured share, 2026-12-07; 40 until the matmuls'"
        in text
    )


def test_the_lambda_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: Llama-3-70B at TP 4 and 8 on H100 and A100-80GB, ten requests, vLLM 0.5.4 (V0)."""
    text = " ".join(DOC.read_text().split())
    runs = [errors(c) for c in CASES if c["id"].startswith("lambda_llama3_70b_")]
    assert len(runs) == 4
    tpot = sorted(round(e["mean_tpot_ms"] * 100) for e in runs)
    thr = sorted(round(-e["request_throughput_per_s"] * 100) for e in runs)
    assert (tpot[0], tpot[-1], thr[0], thr[-1]) == (-6, 6, 11, 20)
    assert "0.5.4): TPOT from 6% low to 6% high, throughput 11-20% low, replayed with the requests its client recorded" in text
    assert "TPOT 3-12% high and throughput 16-21% low until then; 2-12% until each attention call's work per request" in text


def test_the_fifth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md's paragraph on the three vLLM runs of 2026-12-02 (fifth set): the figures it
    quotes, as cases.yaml records the runs and the replay scores them."""
    text = " ".join(DOC.read_text().split())
    five = {c["id"]: c for c in CASES if c.get("held_out") == "2026-12-02 (fifth set)"}
    assert len(five) == 3
    b200 = errors(five["vllm43232-b200x4-qwen3-235b-fp8-main202606-random30000x1000-c64"])
    # At scoring within 2% on throughput and TTFT 8% low; since the fp8 experts' share follows their width
    # (0.280 x 384 / (384 + 448) at TP 4), 6% and 3% low.
    # (-6% and -2% until the matmuls' two terms combined as their root-sum-square; -6% and -5% until vLLM from 0.15 ran
    # block-fp8 experts on FlashInfer's TensorRT-LLM kernel on B200, 2026-12-06)
    assert (round(100 * b200["request_throughput_per_s"]), round(100 * b200["mean_ttft_ms"])) == (-10, 3)
    assert "10% low and 3% high since vLLM from 0.15 runs block-fp8 experts on FlashInfer's TensorRT-LLM kernel on B200" in text
    assert "6% and 4% since Qwen3's query and key norms are counted, 2026-12-05;" in text
    assert "6% and 5% since fp8 fused-MoE calls take their own floor, the same day;" in text
    assert "5% and 4% since the matmuls' two terms combine as their root-sum-square, 2026-12-04;" in text
    assert "6% and 2% since vLLM from 0.14 runs its host's time beside the GPU's, async scheduling, 2026-12-04;" in text
    assert "landed within 2% on throughput, its TTFT 8% low" in text and "it is 6% low on throughput and 3% low on TTFT" in text
    assert "7% and 2% since the small kernels take a decode trace's times" in text
    assert "(2% since the fp8 matmuls' activation quantization is counted;" in text
    assert f"({0.280 * 384 / (384 + 448):.2f} at TP 4 for these 1,536-wide experts" in text
    nvl = five["vllm17788-h100nvl-qwen3-32b-vllm085-sharegpt-inf-seqs32"]
    got = predict(nvl["id"])
    assert round(got["request_throughput_per_s"], 2) == 4.92 and nvl["measured"]["request_throughput_per_s"] == 3.26
    assert round(100 * errors(nvl)["request_throughput_per_s"]) == 51 and "5.19 again since the small kernels take" in text
    assert "4.92 (+51%) since Qwen3's query and key norms are counted, 2026-12-05):" in text
    assert (
        "5.13 (+57%) since each attention call's work per request is charged, 2026-12-04; 4.98 (+53%) since the matmuls'" in text
    )
    ds = five["vllm12568-h200x8-dsr1-vllm070v1-random1024x128-rate4"]
    # Replayed with 0.7.0's own V1 record since 2026-12-07 (per-head K and V: 16 heads x (192 + 192) x 2 B = 12,288 B a
    # layer; 24 ms with the V1 record of 0.8 to 0.10 until then).
    assert ds["engine"] == "vllm@0.7.0-v1" and 16 * (192 + 192) * 2 == 12_288
    assert ds["measured"]["mean_tpot_ms"] == 177.82 and round(predict(ds["id"])["mean_tpot_ms"]) == 23
    assert "with a TPOT of 178 ms where kvcalc" in text and "keeps up at 23 ms (until 2026-12-07 replayed with the V1" in text
    assert (
        "19 ms, 20 ms since the experts'" in text
        and "12,288 B a layer on each of the 8 GPUs where the latent takes 1,152" in text
    )
    assert "21 since the fp8 matmuls' activation quantization is counted, and still since the small kernels" in text
    assert "23 since the routers' top-k is counted as vLLM runs it; 24 since fp8 fused-MoE calls take their own floor" in text
    errs = [errors(c) for c in five.values()]
    thr = [e["request_throughput_per_s"] for e in errs]
    ttft = [e["mean_ttft_ms"] for e in errs]
    assert round(100 * sum(map(abs, thr)) / 3) == 48 and round(100 * sum(map(abs, ttft)) / 3) == 49
    assert (
        "request throughput MAE 48%, TTFT 53% (49% and 52% after the pruning, 51% and 50% before the small kernels took a decode trace's times, 50% and 50%, and still since the routers' top-k is "
        "counted as vLLM runs it; 49% and 50% since each attention call's work per request is charged, 2026-12-04; 47% and 50% "
        "since the matmuls' two terms combine as their root-sum-square; 48% and 49% since vLLM from 0.15 runs block-fp8 "
        "experts on FlashInfer's TensorRT-LLM kernel on B200, 2026-12-06)" in text
    )


@given(
    mean_in=st.floats(min_value=20, max_value=600),
    mean_out=st.floats(min_value=20, max_value=600),
    n=st.integers(min_value=10, max_value=1000),
)
@settings(max_examples=30, deadline=None)
def test_sharegpt_replays_are_pruned_as_the_clients_prune_and_keep_the_runs_means(mean_in, mean_out, n):
    # What vllm bench serve, benchmark_serving.py and SGLang's bench_serving keep of ShareGPT: prompts of
    # 4 to 1,024 tokens, prompt and output together at most 2,048; the replay keeps the run's own means.
    P, O = _sharegpt(mean_in, mean_out, n)
    assert len(P) == len(O) == n
    assert P.min() >= 4 and P.max() <= 1024 and (P + O).max() <= 2048
    assert abs(P.mean() / mean_in - 1) < 0.01 and abs(O.mean() / mean_out - 1) < 0.01


def test_the_sixth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md's paragraph on the twelve RTX 4090 runs of 2026-12-02 (sixth set)."""
    text = " ".join(DOC.read_text().split())
    six = [c for c in CASES if c.get("held_out") == "2026-12-02 (sixth set)"]
    assert len(six) == 12 and sum(c.get("weight_dtype") == "fp8" for c in six) == 5
    errs = [errors(c) for c in six]

    def mae(k: str) -> int:
        return round(100 * sum(abs(e[k]) for e in errs) / len(errs))

    # ((18, 14, 15) until the RTX 4090's weight reads took its own measured share, 2026-12-07)
    assert (mae("request_throughput_per_s"), mae("mean_ttft_ms"), mae("mean_tpot_ms")) == (12, 15, 8)
    assert "All twelve now: request throughput 12%, TTFT 15%, TPOT 8% (18%, 14% and 15% until the RTX 4090's weight" in text
    assert "15%, 14% and 11% until the matmuls' two terms" in text
    assert "18%, 14% and 14% until vLLM from 0.14" in text
    bf16 = [e["mean_tpot_ms"] for c, e in zip(six, errs, strict=True) if not c.get("weight_dtype") and c["max_concurrency"] <= 16]
    # ([17, 18, 17, 17] until the RTX 4090's weight reads took its own measured share, 2026-12-07)
    assert [round(100 * x) for x in bf16] == [5, 6, 5, 6] and "its light-load TPOTs are 5-6% high (17-18% until then" in text
    # One user: the weights a step reads (every parameter but the embeddings, 2 B each) over the TPOT.
    m = resolve_model("qwen2.5-7b")
    c1 = next(c for c in six if c["max_concurrency"] == 1)
    read = (m.params_total - m.params.embed) * 2
    assert round(read / 1e9, 1) == 14.1 and round(c1["measured"]["mean_tpot_ms"], 1) == 15.9
    assert round(read / (c1["measured"]["mean_tpot_ms"] / 1e3) / resolve_gpu("rtx4090").memory_bandwidth_bytes_per_s, 2) == 0.88
    assert "the 14.1 GB a step reads beside the embeddings at 0.88 of the card's 1,008 GB/s" in text


def test_the_tenth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: nine GLM-4.7-Flash runs on one B200 scored at c05ee0b before they joined."""
    text = " ".join(DOC.read_text().split())
    ten = [c for c in CASES if c.get("held_out") == "2026-12-03 (tenth set)"]
    assert len(ten) == 9 and all(c["model"] == "glm-4.7-flash" and c["gpu"] == "b200" and c["tp"] == 1 for c in ten)
    errs = [errors(c) for c in ten]

    def mae(k: str) -> int:
        return round(100 * sum(abs(e[k]) for e in errs) / len(errs))

    # [16, 15, 60, 13] until the B200's Triton MoE share; [15, 14, 51, 12] until SGLang's overlap loop took requests in
    # a step late, 2026-12-07
    # ([15, 14, 46, 12] until it ran a step past a request's end, the same day)
    assert [mae(k) for k, _ in METRICS] == [15, 14, 45, 12]
    assert "15%, 14%, 46% and 12% since SGLang's overlap loop takes requests in a step late, 2026-12-07" in text
    assert "15%, 14%, 45% and 12% since it runs a step past a request's end, the same day)" in text
    assert "59%, 60%, 60% and 32%, still optimistic on all nine, since SGLang's overlap scheduler runs the host's" in text
    assert "28%, 28%, 60% and 19% since SGLang's Triton decode kernel is priced (2026-12-05" in text  # before the turns
    assert "16%, 15%, 59% and 13% since the kernel's blocks past those the GPU runs at once wait their turn" in text
    assert "16%, 15%, 60% and 13% since GLM-4.7-Flash's two MLA down projections count as the one matmul" in text
    assert "15%, 14%, 51% and 12% since the B200's Triton fused-MoE calls take their own measured share, the same day" in text
    tpot = {(c["max_concurrency"], c["id"].rsplit("-", 1)[1]): round(100 * e["mean_tpot_ms"]) for c, e in zip(ten, errs)}
    assert sorted(v for (u, _), v in tpot.items() if u == 16) == [-27, -15, -14]  # -29 until the B200's Triton MoE share
    # ([-22, 1, 13] until the one matmul; [-22, 0, 13] until the B200's Triton MoE share; [-18, 0, 13] until SGLang's
    # overlap loop took requests in a step late, 2026-12-07)
    assert sorted(v for (u, _), v in tpot.items() if u > 16) == [-18, 0, 12]
    assert (
        "and kvcalc is still 14-27% low on TPOT; with 64 and 100 users, whose blocks take 3 or 4 turns, from 18% low to 12%"
        in text
    )
    # 16 users: 16 x 2 blocks x 8 parts = 256 <= 148 x 2; 64 users at 8,000-token prompts: 1,024 blocks, 4 turns.
    assert 16 * 2 * 8 <= 148 * 2 and -(-64 * 2 * 8 // (148 * 2)) == 4
    assert "optimistic on the six runs of 16 to 100 users and 5-9% pessimistic on TPOT at one user" in text
    assert "request throughput MAE 60%, output 60%, TTFT 61%, TPOT 32%, kvcalc optimistic on all nine" in text  # at c05ee0b
    assert "61%, 61%, 61% and 33%, still optimistic on all nine" in text  # before the routers' kernels
    assert "52%, 53%, 60% and 29%, still optimistic on all nine, since the routers' top-k is counted" in text
    one = {c["id"].rsplit("-", 1)[1]: c for c in ten if c["max_concurrency"] == 1}
    steps = {k: round(predict(c["id"])["mean_tpot_ms"], 2) for k, c in one.items()}
    assert steps == {
        "1k1k": 9.17,
        "1k8k": 11.75,
        "8k1k": 13.77,
    }  # 9.16 and 13.76 until its one matmul for the MLA down projections
    assert sorted(round(100 * errors(c)["mean_tpot_ms"]) for c in one.values()) == [5, 7, 9]
    assert "kvcalc's mean TPOT is now 9.17, 11.75 and 13.77 ms at the three lengths (8.75, 10.94 and 12.63" in text
    assert "At one user kvcalc's mean TPOT was 8.0 ms (8.5 before the overlap scheduler, 7.9 before the routers' kernels" in text
    # One request: splits cdiv(int(148 x log2(length / 64)), 1 x 2 blocks) capped at 8 (the kernel's 16 blocks).
    assert "splits one request's context into 8 parts, 16 thread blocks" in text and DEFAULTS.triton_cta_bytes_per_s == 5.27e9

    assert (one["1k1k"]["measured"]["mean_tpot_ms"], one["8k1k"]["measured"]["mean_tpot_ms"]) == (8.75, 12.63)
    # 47 MLA layers x (512 + 64) x 2 B; 7,000 tokens more of it over the B200's 8 TB/s.
    per_token = 47 * (512 + 64) * 2
    assert resolve_model("glm-4.7-flash").num_layers == 47 and per_token == 54_144
    assert 7000 * per_token / resolve_gpu("b200").memory_bandwidth_bytes_per_s < 0.05e-3
    assert "8.75 ms with prompts of up to 1,000 tokens to 12.63 ms with prompts of up to 8,000" in text
    # (26 until the twenty-sixth held-out set joined, 2026-12-07; 38 until the twenty-eighth, the same day)
    assert len(track_groups()["moe/1"]["mean_tpot"]) == 52 and "has 13, enough for a band (16 since the thirteenth" in text
    assert "26 since the twentieth set's ERNIE-4.5 runs on one MI300X joined, 2026-12-06; 38 since the twenty-sixth set's" in text
    assert "52 since the twenty-eighth set's gpt-oss-120b runs on one GPU joined, the same day)" in text
    assert "17 since the sixteenth set's Qwen3-Coder run on one L40S joined, the same day;" in text


def test_the_eleventh_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: twenty-three runs from four new sources, scored at b243f6d before they joined."""
    text = " ".join(DOC.read_text().split())
    eleven = [c for c in CASES if c.get("held_out") == "2026-12-05 (eleventh set)"]
    assert len(eleven) == 23
    errs = {c["id"]: errors(c) for c in eleven}

    def mae(key: str, ids: list[str]) -> tuple[int, int]:
        v = [abs(errs[i][key]) for i in ids if key in errs[i]]
        return round(100 * sum(v) / len(v)), len(v)

    every = list(errs)
    rocm = [i for i in every if i.startswith("dstackamd-")]
    rest = [i for i in every if i not in rocm]
    # (64 and 19 for output throughput until SGLang 0.4.1 to 0.4.4's Triton MLA decode was priced, 2026-12-06)
    # ([(67, 19), (63, 23), ...] and [(13, 16), (18, 20)] until SGLang's FlashAttention 3 MLA call was taken on Hopper)
    # ((65, 23) for output throughput until SGLang 0.4.1 to 0.4.5's prompt steps took their own posted host time a
    # kernel, 2026-12-06: Engine.host_kernel_s)
    # ([(69, 19), (64, 23), ...] and [(15, 16), (20, 20)] until SGLang's admission tests were modelled,
    # 2026-12-07)
    # ([(70, 19), (65, 23), (76, 3), (77, 3)] until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07: the three dstack ROCm runs)
    # ((60, 23) for output throughput until SGLang 0.4.0 to 0.4.4's DP gather and all-reduce took their measured times, 2026-12-07)
    assert [mae(k, every) for k, _ in METRICS] == [(64, 19), (59, 23), (74, 3), (75, 3)]
    assert [mae(k, rest) for k, _ in METRICS[:2]] == [(16, 16), (21, 20)]
    assert (
        "request throughput MAE 64% (19 runs), output 59% (23; 60% until SGLang 0.4.0 to 0.4.4's DP gather and all-reduce took their measured times, 2026-12-07; 70% and 65% until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07; 69% and 64% until SGLang's admission tests were"
        in text
    )
    assert "TTFT 74% and TPOT 75% (76% and 77% until then; the three dstack runs" in text
    assert "without those three, 16% and 21% (16 and 20 runs; 15% and 20% until SGLang's admission" in text
    assert "67% and 63%, and 13% and 18% without the three, until" in text
    assert "output 64% and 19% until SGLang 0.4.1 to 0.4.4's" in text
    assert "12% and 19% until an MLA layer's two down" in text

    def pct(cid: str, key: str = "output_throughput_tok_per_s") -> float:
        return round(100 * errs[cid][key], 1)

    offline = [c["id"] for c in eleven if c["id"].startswith("sgl060-")]
    # SGLang 8B, vLLM 8B, SGLang 70B, vLLM 70B ([4, -13, 25, -10] until the replay took the 70B server's --mem-frac 0.88)
    assert [round(pct(i)) for i in offline] == [4, -13, 27, -10]
    assert (
        "from 13% low to 27% high on throughput (SGLang 4% and 27% high, 25% until the replay took the 70B server's "
        "stated --mem-frac 0.88, 2026-12-06; vLLM 13% and 10% low" in text
    )
    ds = [c["id"] for c in eleven if c["id"].startswith("sglattn-h200x8-")]
    # (-0.2, 15.0) until the FA3 MLA call; (6.7, 20.6) until SGLang's admission tests were modelled; (6.7, 22.2) until
    # SGLang's overlap loop took requests in a step late, 2026-12-07
    assert (min(pct(i) for i in ds), max(pct(i) for i in ds)) == (6.8, 22.2)
    assert "DeepSeek-V3 rows within 23% (6.8% to 22.2% high; 6.7% to 22.2% until SGLang's overlap loop" in text
    assert "2026-12-07; 6.7% to 20.6% until SGLang's admission" in text
    assert "0.2% low to 15.0% high until SGLang's FlashAttention 3" in text
    assert "0.7% low to 14.5% high until SGLang 0.4.6's one matmul" in text
    ll = {c["id"].split("-sglang046-")[1]: pct(c["id"]) for c in eleven if c["id"].startswith("sglattn-h200x1-")}
    # 7.4 and [7, 37, 57] until SGLang's admission tests were modelled (2026-12-07)
    assert max(abs(v) for k, v in ll.items() if k.startswith("fa3")) == 9.3
    # ([7, 37, 61] until SGLang's overlap loop took requests in a step late, 2026-12-07)
    assert [round(v) for k, v in ll.items() if k.startswith("flashinfer")] == [7, 36, 61]
    assert "its Llama-3.1-8B rows under fa3 within 9.3% and under FlashInfer 7%, 36% and 61% high (37% until" in text
    assert "2026-12-07; 7.4% and 57% until SGLang's admission tests were modelled, the same day;" in text
    # The measured FlashInfer rows over fa3's, 1k/1k, 8k/1k, 8k/8k: 8%, 21% and 32% slower.
    by = {c["id"].split("-sglang046-")[1]: c["measured"]["output_throughput_tok_per_s"] for c in eleven if "h200x1" in c["id"]}
    slower = [round(100 * (1 - by[f"flashinfer-{t}-rr16"] / by[f"fa3-{t}-rr16"])) for t in ("1k1k", "8k1k", "8k8k")]
    assert slower == [8, 21, 32] and "FlashInfer runs are 8% to 32% slower than fa3's" in text
    dp = [c["id"] for c in eleven if c["id"].startswith("sgldsv3-")]
    # [8, 22, 50, 105] until 0.4.1's Triton MLA decode was priced; [8, 20, 45, 93] until its prompt steps took their own
    # posted host time a kernel (Engine.host_kernel_s), 2026-12-06
    # [8, 20, 45, 89] until SGLang 0.4.0 to 0.4.4's DP gather and all-reduce took their measured times, 2026-12-07
    assert [round(pct(i)) for i in dp] == [7, 19, 42, 84]
    assert "DeepSeek-V3 7%, 19%, 42% and 84% high on output throughput as the rate rises (8%, 20%, 45% and 89% until" in text
    assert [c["measured"]["median_tpot_ms"] for c in eleven if c["id"] in (dp[0], dp[-1])] == [143.71, 675.95]
    # (182.6 at 8 requests/s until 0.4.1's prompt steps took their own posted host time a kernel, 2026-12-06)
    # [37.5, 196.5] until SGLang 0.4.0 to 0.4.4's DP gather and all-reduce took their measured times, 2026-12-07
    assert [round(predict(i)["mean_tpot_ms"], 1) for i in (dp[0], dp[-1])] == [39.2, 210.9]
    assert "its mean TPOT 39.2 ms in kvcalc at 1 request/s against a median of 143.7 ms measured (211 against 676 at 8;" in text
    # ([334, 372, 373] and [76, 76, 78] until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07)
    assert sorted(round(100 * errs[i]["output_throughput_tok_per_s"]) for i in rocm) == [291, 328, 336]
    assert sorted(round(-100 * errs[i]["mean_tpot_ms"]) for i in rocm) == [74, 74, 76]
    assert (
        "3.9 to 4.4 times faster in kvcalc, TPOT 74-76% low (4.3 to 4.7 and 76-78% until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07"
        in text
    )
    # TGI on the same GPUs, checkpoint, prompts and client (dstackai/benchmarks@9ece943
    # amd/inference/tgi/data/serving_benchmarks_tgi_80.txt: Mean TPOT at 1, 64, 128 and 256 requests) beside the vLLM
    # build's runs at those counts and kvcalc's replays of them.
    tgi = {1: 43.48, 64: 101.40, 128: 133.02, 256: 194.79}
    runs = {
        1: "dstacktgi-mi300xx8-llama31-405b-instruct-bf16-vllm-sonnet-in80-n1",
        64: "dstackamd-mi300x8-llama31-405b-vllm063dev-tp8-sonnet80-n64",
        128: "dstacktgi-mi300xx8-llama31-405b-instruct-bf16-vllm-sonnet-in80-n128",
        256: "dstackamd-mi300x8-llama31-405b-vllm063dev-tp8-sonnet80-n256",
    }
    cases = {c["id"]: c for c in CASES}
    measured = [cases[runs[n]]["measured"]["mean_tpot_ms"] for n in runs]
    ours = [round(predict(runs[n])["mean_tpot_ms"], 1) for n in runs]
    assert measured == [50.19, 230.16, 298.29, 389.49] and ours == [47.8, 59.3, 72.3, 94.9]
    assert (
        "a mean TPOT of 43.48 ms at one request, 101.40 at 64, 133.02 at 128 and 194.79 at 256, where the vLLM build "
        "measured 50.19, 230.16, 298.29 and 389.49 and kvcalc has 47.8, 59.3, 72.3 and 94.9 for vLLM's" in text
    )
    # Growth a request from one to 64: (101.40 - 43.48) / 63, (230.16 - 50.19) / 63, (59.3 - 47.8) / 63.
    grow = [round((b - a) / 63, 2) for a, b in ((tgi[1], tgi[64]), (measured[0], measured[1]), (ours[0], ours[1]))]
    assert grow == [0.92, 2.86, 0.18]
    assert "the step grew about 0.9 ms a request under TGI and 2.9 under vLLM, against kvcalc's 0.18" in text


def test_the_twelfth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: sixteen InferenceMAX/InferenceX runs, scored at c457588 before they joined, replayed since
    with their client's lengths."""
    text = " ".join(DOC.read_text().split())
    twelve = [c for c in CASES if c.get("held_out") == "2026-12-05 (twelfth set)"]
    assert len(twelve) == 16 and all(c["dataset"] == "random-range" for c in twelve)
    # The client's draw reproduces every printed total.
    for c in twelve:
        rs, n = np.random.RandomState(c["seed"]), c["measured"]["completed"]
        ins = rs.randint(int(c["random_input_len"] * 0.8), c["random_input_len"] + 1, size=n)
        outs = rs.randint(int(c["random_output_len"] * 0.8), c["random_output_len"] + 1, size=n)
        assert (ins.sum(), outs.sum()) == (c["measured"]["total_input_tokens"], c["measured"]["total_output_tokens"])
    errs = {c["id"]: errors(c) for c in twelve}
    # The gpt-oss sweep's host: two cores (its server logs' engine-core warning, recorded with the TP 8 run).
    tp8 = next(c for c in twelve if c["id"] == "infx-heyram-h200x8-gptoss120b-vllm0221-tp8-1k1k-c4")
    assert "Reducing Torch parallelism from 2 threads to 1" in tp8["inferred"]["host"]
    assert (
        round(tp8["measured"]["mean_tpot_ms"], 1),
        round(next(c for c in twelve if c["id"].endswith("tp4-1k1k-c4"))["measured"]["mean_tpot_ms"], 1),
    ) == (11.6, 7.1)
    assert 'every one of these server logs has the engine core warn "Reducing Torch parallelism from 2 threads to 1"' in text

    def mae(key: str, ids: list[str]) -> int:
        return round(100 * sum(abs(errs[i][key]) for i in ids) / len(ids))

    every = list(errs)
    rest = [i for i in every if "gptoss" not in i]
    # [55, 55, 65, 25] and [21, 21, 60, 14] until NVFP4 checkpoints' matmuls ran at the fp4 peak; [20, 20, 60, 14]
    # without gpt-oss until the all-reduce and norm fusion
    # [55, 55, 63, 25] and [22, 22, 57, 14] until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07
    # [56, 56, 63, 25] and [23, 23, 57, 15] until SGLang's overlap loop took requests in a step late, 2026-12-07
    # [56, 56, 62, 25] and [23, 23, 55, 15] until TensorRT-LLM deployments took its own measured all-reduce, 2026-12-08
    assert [mae(k, every) for k, _ in METRICS] == [55, 55, 62, 24] and len(rest) == 11
    assert [mae(k, rest) for k, _ in METRICS] == [22, 22, 55, 14]
    assert f"55%, 55%, 62% and 24% (22%, 22%, 55% and 14%) {TRT_AR}" in text
    assert "56%, 56%, 62% and 25% (23%, 23%, 55% and 15%) since SGLang's overlap loop takes requests in a step late" in text
    assert "56%, 56%, 63% and 25% (23%, 23%, 57% and 15%) since SGLang's shared expert runs inside DeepSeek-V3's" in text
    # At scoring (every request at the run's mean lengths), as quoted.
    assert (
        "request throughput MAE 58%, output 58%, TTFT 70%, TPOT 26% (16 runs each); without the five gpt-oss runs, 23%, 23%, 74% and 16%"
        in text
    )
    assert "the set stood at 54%, 54%, 67% and 25% (20%, 20%, 63% and 15% without the gpt-oss runs)" in text
    assert "stood at 53%, 53%, 67% and 24% (19%, 19%, 64% and 13%) since TensorRT-LLM's overlap scheduler" in text
    assert "and stands at 54%, 54%, 65% and 24% (20%, 20%, 60% and 14%) since SGLang's --scheduler-recv-interval is" in text
    assert "(21%, 21%, 60% and 14% without the gpt-oss runs since SGLang's all-reduce and norm fusion is counted" in text
    assert "55%, 55%, 65% and 25% (21%, 21%, 60% and 14%) since an MLA layer's down projections are counted" in text
    assert "55%, 55%, 63% and 25% (22%, 22%, 57% and 14%) since NVFP4 checkpoints' matmuls run at the fp4 peak" in text

    def pct(part: str, key: str) -> list[int]:
        return [round(100 * e[key]) for i, e in errs.items() if part in i]

    thr, tpot = "request_throughput_per_s", "mean_tpot_ms"
    # (25 until SGLang's overlap loop took requests in a step late, 2026-12-07)
    assert max(abs(v) for v in pct("sglang0512", thr)) == 24 and max(abs(v) for v in pct("sglang0512", tpot)) == 18
    assert (
        "SGLang 0.5.12's DeepSeek-R1 within 24% on throughput and 18% on TPOT at every load (25% until SGLang's overlap loop "
        "took requests in a step late, 2026-12-07; 13% and 10% until its shared "
        "expert ran inside the fused MoE call, 2026-12-07; 10% and 7% until its one "
        "matmul for an MLA layer's two down projections was counted, 2026-12-06; 7% and 9% until SGLang's "
        "all-reduce and norm fusion was counted, 2026-12-06; 10% and 6% at scoring)" in text
    )
    assert (min(pct("gptoss", thr)), max(pct("gptoss", thr))) == (17, 237)
    assert (min(pct("gptoss", tpot)), max(pct("gptoss", tpot))) == (-70, -14)
    assert (
        "from 17% (TP 2) to 237% (TP 8) high on throughput, TPOT 14% to 70% low (17% to 246% and 15% to 70% at scoring)" in text
    )
    by = {c["id"]: c["measured"]["mean_tpot_ms"] for c in twelve}
    tp8, tp4 = "infx-heyram-h200x8-gptoss120b-vllm0221-tp8-1k1k-c4", "infx-heyram-h200x4-gptoss120b-vllm0221-tp4-1k1k-c4"
    assert (round(by[tp8], 1), round(by[tp4], 1)) == (11.6, 7.1) and "(11.6 against 7.1 ms at 4 users)" in text
    # (-21 to -17 and 21 to 27 until NVFP4 checkpoints' matmuls ran at the fp4 peak and these runs' experts on the
    # TensorRT-LLM-gen kernel, 2026-12-06)
    # ((-20, -17) and (22, 25) until TensorRT-LLM deployments took its own measured all-reduce, 2026-12-08)
    assert (min(pct("trtllm", thr)), max(pct("trtllm", thr))) == (-18, -13)
    assert (min(pct("trtllm", tpot)), max(pct("trtllm", tpot))) == (16, 22)
    assert f"kvcalc pessimistic (13% to 18% low and TPOT 16% to 22% high {TRT_AR}; 17% to 21% and 21% to 27% until" in text
    assert "17% to 20% low on throughput, TPOT 22% to 25% high, kvcalc pessimistic (13% to 18% low" in text
    assert "2026-12-06; 16% to 20% and 20% to 25% until" in text
    assert "17% to 22% low at scoring; 19% to 24%" in text
    light = [i for i in every if "sglang053" in i and (i.endswith("-c4") or i.endswith("-c8"))]
    # (12, TPOT within 4, and [29, 106] until NVFP4 checkpoints' matmuls ran at the fp4 peak and these runs' experts
    # took the TensorRT-LLM-gen kernel's floor)
    assert max(abs(round(100 * errs[i][thr])) for i in light) == 14
    assert sorted(round(100 * errs[i][tpot]) for i in light) == [-5, -1, 2]
    # ([31, 108] and (-95, -72) until SGLang's overlap loop took requests in a step late, 2026-12-07)
    assert sorted(round(100 * errs[i][thr]) for i in every if "sglang053" in i and i not in light) == [30, 107]
    ttft = [round(100 * e["mean_ttft_ms"]) for i, e in errs.items() if "sglang053" in i]
    assert (min(ttft), max(ttft)) == (-94, -70)
    assert (
        "within 14% on throughput at 4 and 8 users (TPOT 1% to 5% off) and 30% and 107% high at 16 and 64 (31% and 108%" in text
    )
    assert (
        "2026-12-07; within 12%, TPOT 1% to 4% off, and 29% and 106% until NVFP4 checkpoints' matmuls ran at the fp4 peak" in text
    )
    assert "2026-12-06; within 11% and 105% until its one matmul for an MLA layer's two down projections was counted" in text
    assert (
        "its TTFT 70% to 94% low at every load (72% to 95% until that overlap loop's late admission; 51% to 88% at scoring), "
        "where its launch sets `--scheduler-recv-interval 10`" in text
    )
    assert "(within 12% and 29% and 90% high, TTFT 90% to 98% low, until then; the bullet above)" in text


def _infmax_set_scores(cases: list[dict]) -> tuple[dict[str, dict[str, float]], list[int], list[float]]:
    """An InferenceMAX record set: each record's throughput ratio checked against the client's own length draw (numpy's
    legacy generator seeded as the client seeds it, prompts then outputs, from 0.8 to 1 of the stated lengths), then
    each run's errors, the set's MAE per metric (whole %) and its TP 8 TPOT errors."""
    import json

    for c in cases:
        rec = json.loads((SERVING / c["raw"]).read_text())["record"]
        rs, n = np.random.RandomState(c["seed"]), c["measured"]["completed"]
        ins = rs.randint(int(c["random_input_len"] * 0.8), c["random_input_len"] + 1, size=n)
        outs = rs.randint(int(c["random_output_len"] * 0.8), c["random_output_len"] + 1, size=n)
        assert ins.sum() / outs.sum() == pytest.approx(rec["tput_per_gpu"] / rec["output_tput_per_gpu"] - 1, abs=1e-4)
    errs = {c["id"]: errors(c) for c in cases}
    mae = [round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs)) for k, _ in METRICS]
    return errs, mae, [e["mean_tpot_ms"] for c, e in zip(cases, errs.values()) if c["tp"] == 8]


def test_the_thirteenth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: twelve official InferenceMAX runs of 2025-10, scored at 98816df before they joined."""

    text = " ".join(DOC.read_text().split())
    thirteen = [c for c in CASES if c.get("held_out") == "2026-12-05 (thirteenth set)"]
    assert len(thirteen) == 12
    errs, mae, tp8 = _infmax_set_scores(thirteen)
    # TPOT 15% until TensorRT-LLM's overlap scheduler was counted, 2026-12-05; [14, 14, 26, 14] and +3% until SGLang's
    # FlashAttention 3 MLA call was taken on Hopper from 0.4.5.post1, 2026-12-06.
    # ([12, 12, 26, 12] until SGLang's overlap loop took requests in a step late, 2026-12-07; [12, 12, 23, 12] until
    # TensorRT-LLM's batch waiting was modelled, the same day; [12, 12, 24, 12] until the MI325X took the MI300X's
    # measured tables, the same day; [13, 13, 21, 13] and -4% until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08;
    # [11, 11, 22, 12] until TensorRT-LLM's fp8 matmuls took its own measured figures, the same day)
    assert mae == [10, 10, 19, 11] and (round(100 * sum(tp8) / len(tp8)), len(tp8)) == (0, 4)
    assert f"10%, 10%, 19% and 11%, TP 8 TPOT bias 0%, {TRT_FP8}, below)" in text
    assert "11%, 11%, 22% and 12%, TP 8 TPOT bias 0%, since the MI355X takes its own measured GEMM and all-reduce figures" in text
    assert "13%, 13%, 21% and 13%, TP 8 TPOT bias -4%, since the MI325X takes the MI300X's measured tables" in text
    assert "12%, 12%, 24% and 12%, TP 8 TPOT bias -4%, since TensorRT-LLM's batch waiting is modelled" in text
    assert "12%, 12%, 23% and 12%, TP 8 TPOT bias -4%, since SGLang's overlap loop takes requests in a step late" in text
    assert "12%, 12%, 26% and 12%, TP 8 TPOT bias -4%, since SGLang's FlashAttention 3 MLA call is taken on Hopper" in text
    assert "request throughput MAE 15%, output 15%, TTFT 286%, TPOT 13%, TP 8 TPOT bias -3% (12 runs," in text  # at scoring
    assert "drawn as the client draws its lengths, 14%, 14%, 25% and 15%, TP 8 TPOT bias +4%" in text
    assert "14%, 14%, 26% and 14%, TP 8 TPOT bias +3%, since an MLA layer's down projections are counted" in text

    def pct(part: str, key: str = "request_throughput_per_s") -> list[int]:
        return sorted(round(100 * e[key]) for i, e in errs.items() if part in i)

    assert pct("deepseek") == [-8, -4, 7, 8] and (pct("deepseek", "mean_tpot_ms")[0], pct("deepseek", "mean_tpot_ms")[-1]) == (
        -7,
        9,
    )  # [-17, -16, 8, 29] and TPOT to 21% until SGLang's FlashAttention 3 MLA call was taken on Hopper; [-8, -4, 8, 29]
    # and TPOT from -23% until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08
    assert (
        "DeepSeek-R1 from 8% low to 8% high on throughput (H200 8% and 4% low, MI300X 8% high, MI355X 7% high; 29% and "
        "TPOT 23% low until the MI355X took its own GEMM and all-reduce figures), TPOT 7% low to 9% high" in text
    )
    assert (pct("gpt-oss")[0], pct("gpt-oss")[-1]) == (7, 16) and (
        pct("gpt-oss", "mean_tpot_ms")[0],
        pct("gpt-oss", "mean_tpot_ms")[-1],
    ) == (-13, -6)
    assert "gpt-oss-120b 7% to 16% high, TPOT 6% to 13% low" in text
    # (-22 and 31 until TensorRT-LLM's batch waiting was modelled, 2026-12-07; to 16 until the MI325X took the MI300X's
    # measured tables, the same day)
    # ([30] until TensorRT-LLM deployments took its own measured all-reduce, 2026-12-08; its throughput then -23; [28] and
    # -22 until its fp8 matmuls took its own measured figures, the same day)
    assert (pct("llama")[0], pct("llama")[-1]) == (-23, -8) and pct("trtllm", "mean_tpot_ms") == [14]
    assert pct("trtllm") == [-12] and f"22% low and TPOT 28% high {TRT_AR}; 12% low and TPOT 14% high {TRT_FP8}, where" in text
    assert pct("mi325xx2-llama33", "request_throughput_per_s") == [-23] and pct("mi325xx2-llama33", "mean_tpot_ms") == [31]
    assert "to 8% low, and the MI325X's vLLM run 23% low with TPOT 31% high (16% high until the MI325X took" in text
    assert "(TensorRT-LLM on H200, TPOT 30% high; 22% and 31% until TensorRT-LLM's batch waiting was modelled" in text
    assert "2026-12-07; 24% and 35% until TensorRT-LLM's overlap scheduler was counted" in text
    assert "TP 8 TPOT bias +4% (TPOT 14% since TensorRT-LLM's overlap scheduler is counted, the same day;" in text
    assert "Llama-3.3-70B from 23% low (TensorRT-LLM on H200, TPOT 30% high;" in text


def test_the_fourteenth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: seventeen more official InferenceMAX records of 2025-10, scored at 8fb6d2b before they joined."""

    text = " ".join(DOC.read_text().split())
    fourteen = [c for c in CASES if c.get("held_out") == "2026-12-05 (fourteenth set)"]
    assert len(fourteen) == 17 and all(c["raw_format"] == "infmax-agg" for c in fourteen)
    thirteen = {c["id"] for c in CASES if c.get("held_out") == "2026-12-05 (thirteenth set)"}
    assert not thirteen & {c["id"] for c in fourteen}
    errs, mae, tp8 = _infmax_set_scores(fourteen)
    # TPOT 16% until TensorRT-LLM's overlap scheduler was counted, the same day: the figure quoted at scoring; TTFT 36%
    # until SGLang's --scheduler-recv-interval was modelled (2026-12-06), which its two SGLang runs on B200 set.
    # TP 8 bias -3% until an MLA layer's down projections were counted as each release runs them (2026-12-06).
    # [17, 17, 34, 15] and -4% until SGLang's FlashAttention 3 MLA call was taken on Hopper from 0.4.5.post1 (the same day).
    # -5% until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07
    # ([16, 16, 34, 14] until SGLang's overlap loop took requests in a step late, 2026-12-07; TTFT 32 until
    # TensorRT-LLM's batch waiting was modelled, the same day)
    # ([16, 16, 31, 14] and -6 until the MI325X took the MI300X's measured tables, the same day)
    # ([14, 14, 30, 13] and -4 until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08)
    # ([13, 13, 28, 12] until TensorRT-LLM deployments took its own measured all-reduce, 2026-12-08)
    # ([12, 12, 28, 11] and -1 until TensorRT-LLM's fp8 matmuls took its own measured figures, the same day)
    assert mae == [11, 11, 27, 10] and (round(100 * sum(tp8) / len(tp8)), len(tp8)) == (-2, 11)
    assert f"12%, 12%, 28% and 11%, TP 8 TPOT bias -1%, {TRT_AR}; 11%, 11%, 27% and 10%, TP 8 TPOT bias -2%, {TRT_FP8})" in text
    assert "request throughput and output 13%, TTFT 28%, TPOT 12%, TP 8 TPOT bias -1% since the MI355X takes" in text
    assert "request throughput and output 14%, TTFT 30%, TPOT 13%, TP 8 TPOT bias -4% since the MI325X takes" in text
    assert "TTFT 31% since TensorRT-LLM's batch waiting is modelled, the same day, below, which its TP 4 run" in text
    assert "TTFT 32% since SGLang's overlap loop takes requests in a step late, the same day" in text
    assert "the TP 8 TPOT bias -6% since SGLang's shared expert runs inside DeepSeek-V3's fused MoE call" in text
    assert "request throughput and output MAE 16%, TPOT 14%, TP 8 TPOT bias -5% since SGLang's FlashAttention 3" in text
    assert "TPOT MAE 15%, TP 8 TPOT bias -3%, the two Llama-3.3-70B runs" in text
    assert "(TTFT 34%, TP 8 TPOT bias -4% and the first EP run -13% on throughput since an MLA layer's down" in text
    assert "request throughput MAE 17%, output 17%, TTFT 36%, TPOT 16%, TP 8 TPOT bias -2% (17 runs, 11 at TP 8)" in text

    def pct(part: str, key: str = "request_throughput_per_s") -> list[int]:
        return sorted(round(100 * e[key]) for i, e in errs.items() if part in i)

    # (-8, 32) and TPOT (-24, 10) until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07
    # (-5, 33) and TPOT (-24, 5) until the MI325X took the MI300X's measured tables, the same day
    assert (pct("deepseek")[0], pct("deepseek")[-1]) == (-8, 33)  # -14 until SGLang's FA3 MLA call on Hopper
    assert (pct("deepseek", "mean_tpot_ms")[0], pct("deepseek", "mean_tpot_ms")[-1]) == (-24, 10)  # 16 until then
    assert "8% low to 33% high, TPOT 24% low to 10% high, since the MI325X takes the MI300X's measured tables" in text
    assert "5% low to 33% high, TPOT 24% low to 5% high, since SGLang's shared expert runs inside DeepSeek-V3's" in text
    assert "2026-12-06; 8% low to 32% high, TPOT 24% low to 10% high, since SGLang's FlashAttention 3 MLA call is taken" in text
    assert "DeepSeek-R1 from 15% low (H200, 1k/8k) to 29% high (MI300X, 4 users) on throughput, TPOT 22% low to 17% high" in text
    assert "(14% low to 32% high, TPOT 24% low to 16% high, since an MLA layer's down projections are counted" in text
    # At scoring: -30% and TPOT +47% for TensorRT-LLM on B200, as the doc quotes; now with its overlap scheduler:
    # (-27 and TPOT 40 for the first until TensorRT-LLM's batch waiting was modelled, 2026-12-07)
    # (-25, 23) until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08
    # ((-25, 2), [35], [-25, -16] and [19, 35] until TensorRT-LLM deployments took its own measured all-reduce, 2026-12-08)
    # ((-17, 2), [21], [-17, -16] and [19, 21] until TensorRT-LLM's fp8 matmuls took its own measured figures, the same day)
    assert (pct("llama")[0], pct("llama")[-1]) == (-10, 2) and pct("b200x4-llama33-70b-trtllm", "mean_tpot_ms") == [11]
    assert sorted(pct("llama33-70b-trtllm")) == [-10, -8] and sorted(pct("llama33-70b-trtllm", "mean_tpot_ms")) == [10, 11]
    assert f"(17% and 16% low with TPOT 21% and 19% high {TRT_AR}) (10% and 8% low with TPOT 11% and 10% high {TRT_FP8})" in text
    assert (
        "the two Llama-3.3-70B runs under TensorRT-LLM 25% and 16% low on throughput with TPOT 35% and 19% high (27% and "
        "40% for the first until TensorRT-LLM's batch waiting was modelled, 2026-12-07)" in text
    )
    vllm_llama = [e for i, e in errs.items() if "llama33-70b-vllm" in i and "mi355x" not in i]
    assert len(vllm_llama) == 4 and all(abs(e["request_throughput_per_s"]) < 0.085 for e in vllm_llama)
    assert "Llama-3.3-70B from 30% low (TensorRT-LLM on B200, TPOT 47% high) to 23% high (MI355X" in text
    assert "(MI355X; 2% high since the MI355X takes its own measured GEMM and all-reduce figures, 2026-12-08)" in text
    # ((-16, 49) and TPOT (-32, 19) until the MI325X took the MI300X's measured tables, the same day)
    assert (pct("gpt-oss")[0], pct("gpt-oss")[-1]) == (-16, 25)
    assert (pct("gpt-oss", "mean_tpot_ms")[0], pct("gpt-oss", "mean_tpot_ms")[-1]) == (-20, 19)
    assert "(16% low to 25% high, TPOT 20% low to 19% high, since the MI325X takes the MI300X's measured tables" in text
    assert "gpt-oss-120b from 16% low (B200) to 49% high (MI325X at 8k/1k), TPOT 32% low to 19% high" in text
    # (13 until SGLang's overlap loop took requests in a step late, 2026-12-07; 12 until TensorRT-LLM's batch waiting was
    # modelled, the same day; 11 until TensorRT-LLM's fp8 matmuls took its own measured figures, 2026-12-08)
    assert sum(e["mean_ttft_ms"] < 0 for e in errs.values()) == 13
    assert f"kvcalc's TTFT is low on 13 of the 17 ({TRT_FP8}; 11 until then, 12 until" in text
    # The three TensorRT-LLM runs at EP = TP, refused at scoring, joined once TensorRT-LLM's EP was read.
    ep = {c["id"]: errors(c) for c in CASES if c.get("held_out") == "2026-12-05 (fourteenth set, TensorRT-LLM EP)"}
    assert all(c.get("ep") == c["tp"] for c in CASES if c["id"] in ep)
    got = [(round(100 * e["request_throughput_per_s"]), round(100 * e["mean_tpot_ms"])) for e in ep.values()]
    # (-14, 18), (1, 0), (-13, 15) at scoring, as the doc quotes; (-12, 16) first until the MLA down projections
    # [(-13, 16), (4, -3), (-2, 3)] until TensorRT-LLM deployments took its own measured all-reduce, 2026-12-08
    assert got == [(-14, 18), (9, -7), (1, -1)]
    assert "the three EP runs -12%, +4% and -2% on throughput, TPOT +16%, -3% and +3%" in text
    assert f"(-14%, +9% and +1%, TPOT +18%, -7% and -1%, {TRT_AR})" in text

    assert "scored with it before joining: throughput 14% low and 1% high (DeepSeek-R1 at TP 8 on H200 and B200)" in text
    assert "and 13% low (gpt-oss-120b at TP 4 on B200), TPOT 18%, 0% and 15% high" in text


def test_the_seventh_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: ten SGLang cookbook runs scored at 4d1308a before they joined."""
    text = " ".join(DOC.read_text().split())
    seven = [c for c in CASES if c.get("held_out") == "2026-12-02 (seventh set)"]
    assert len(seven) == 10 and all(c["engine"] in ("sglang@0.5.8", "sglang@0.5.9") for c in seven)
    mae = {}
    for k, _ in METRICS:
        v = [abs(e[k]) for e in map(errors, seven) if k in e]
        mae[k] = round(sum(v) / len(v) * 100)
    # As scored at 4d1308a, before the busiest EP rank and MiniMax-M2's norm all-reduce (quoted), and now.
    assert "Scored at commit 4d1308a before they joined: request throughput MAE 72%, output 71%, TTFT 51%, TPOT 41%" in text
    # [31, 30, 48, 23] until the NCCL all-reduce, 2026-12-07; [27, 27, 48, 20] until SGLang's overlap loop took requests in
    # a step late, the same day
    # ([27, 27, 46, 20] until it ran a step past a request's end, the same day)
    assert [mae[k] for k, _ in METRICS] == [27, 27, 45, 20]
    assert "since it runs a step past a request's end (the same day), 27%, 27%, 45%, 20%: not fitted" in text
    assert (
        "since SGLang's overlap loop takes requests in a step late (the same day, docs/simulation.md), 27%, 27%, 46%, 20%" in text
    )
    assert "7.3 and 7.2 ms and 37%, 37%, 48%, 26%; since fp8 fused-MoE calls take their own floor" in text
    assert "7.9 and 7.8 ms and 31%, 30%, 48%, 23%; since a norm all-reduce the custom all-reduce declines" in text
    assert (
        "the B200s' 8.9 ms and, with the changes between, 27%, 27%, 48%, 20% (30.5%, 30.1%, 47.6%, 22.6% before it); since"
        in text
    )
    assert "6.6 and 6.5 ms and 49%, 48%, 52%, 32%, the MI300X run 20.2 ms;" in text
    assert "52%, 52%, 52%, 34% and 20.2 ms" in text  # before the small kernels took a trace's times
    assert "6.6 and 6.5 ms and 48%, 48%, 52%, 32%, the MI300X run 20.5 ms" in text  # before the routers' kernels
    assert "7.1 and 7.0 ms and 41%, 41%, 52%, 29%, the MI300X run 21.0 ms" in text
    assert "the set scores request throughput MAE 58%, output 57%, TTFT 51%, TPOT 36%, still optimistic on every run" in text
    assert "6.4 and 6.2 ms and 55%, 55%, 52%, 35%, the MI300X run 16.9 ms" in text
    assert all(e["output_throughput_tok_per_s"] > 0 and e["mean_tpot_ms"] < 0 for e in map(errors, seven))
    one = {c["gpu"]: c for c in seven if c["max_concurrency"] == 1 and c["random_input_len"] == 1000}
    # (b200 7.8 until a norm all-reduce the custom all-reduce declines went through NCCL, 2026-12-07)
    assert {g: round(predict(c["id"])["mean_tpot_ms"], 1) for g, c in one.items()} == {"h100-sxm": 7.9, "b200": 8.9}
    assert (one["h100-sxm"]["measured"]["mean_tpot_ms"], one["b200"]["measured"]["mean_tpot_ms"]) == (8.05, 9.89)
    assert "kvcalc's MiniMax step was 5.3 ms on the H100s and 5.2 on the B200s, mostly the 3.6 and 3.5 ms of kernel" in text
    assert "the one-user step was 6.0 ms on the H100s and 5.9 on the B200s" in text
    from kvcalc.engine.engines import engine as engine_of
    from kvcalc.engine.steptime import StepModel, layer_latency_s

    steps = {}
    for g in ("h100-sxm", "b200"):
        sm = StepModel(resolve_model("minimax-m2"), resolve_gpu(g), kv_dtype("bf16"), 8, ep=8, engine=engine_of("sglang@0.5.9"))
        st = sm.step(1, 800)
        # The kernel latencies as scored, without the 248 kernels quantizing its fp8 activations counted since.
        # And at the 1.3 us a small kernel it was charged then (2.7 us since 2026-12-03).
        # and with the fused call's alignment and combine charged outside it, as they were then (62 MoE layers),
        # and top-k as one kernel, not grouped top-k's 4 (counted since).
        # and without the 4 kernels a layer of MiniMax's norms over all heads (counted since 2026-12-05).
        scored = layer_latency_s(sm.model, dataclasses.replace(sm.c, kernel_gap_s=1.3e-6)) + 62 * (2 - 3 - 4) * 1.3e-6
        # Of the 248, the 124 quantizing the routed experts' inputs run inside the fused call (no latency of their own).
        assert (sm.kernels.moe_inner, sm.quant_kernels) == (62 * 2 + 124, 248)
        # and its 62 fused calls, at fp8, 10 us more each (moe_quant_s, since 2026-12-05).
        assert sm.layer_gaps_s - layer_latency_s(sm.model, sm.c) == pytest.approx((248 - 124) * 2.7e-6 + 62 * 10e-6)
        steps[g] = (round(scored * 1e3, 1), round(st.t_collective_s * 1e3, 1))
        # A GPU's mean share of the weights one token reads, and the busiest EP rank's.
        assert (round(sm.d.weight_read(1) / 1e9, 1), round(sm.weights(1) / 1e9, 1)) == (1.5, 2.8)
        # Less the q/k norm's all-reduce (62 of them), the collectives the doc quotes as scored.
        norm = 62 * sm.link.allreduce_s(8, 8)
        assert round((st.t_collective_s - norm) * 1e3, 1) == {"h100-sxm": 0.6, "b200": 1.0}[g]
    assert steps == {"h100-sxm": (3.6, 0.9), "b200": (3.5, 1.4)}
    assert "2.8 GB a step on that GPU, not 1.5" in text
    scout = next(c for c in seven if c["gpu"] == "mi300x")
    # (20.3 until the MI300X's matmul latency and bandwidth share were fitted over every size, 2026-12-05; 20.4 until
    # its all-reduces at TP 8 took its TP 4 table's latency, the same day; 20.6 until SGLang's overlap loop took requests
    # in a step late, 2026-12-07)
    assert (scout["measured"]["mean_tpot_ms"], round(predict(scout["id"])["mean_tpot_ms"], 1)) == (41.56, 20.5)
    assert "the MI300X run's TPOT is 41.6 ms against kvcalc's 18.8" in text


def test_the_eighth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: twenty-three runs of three sources, scored at 464774e before they joined."""
    text = " ".join(DOC.read_text().split())
    eight = [c for c in CASES if c.get("held_out") == "2026-12-02 (eighth set)"]
    assert len(eight) == 23 and len({c["url"].split("/blob/")[0] for c in eight}) == 3
    errs = {c["id"]: errors(c) for c in eight}
    mae = {}
    for k, _ in METRICS:
        v = [abs(e[k]) for e in errs.values() if k in e]
        mae[k] = round(sum(v) / len(v) * 100)
    t8 = [e["mean_tpot_ms"] for c in eight for e in [errs[c["id"]]] if int(c["tp"]) == 8]
    # As scored (quoted), and since the MI300X took its own matmul figures.
    assert "request throughput MAE 72%, output 71%, TTFT 44%, TPOT 38%, TP 8 TPOT bias -40%" in text
    # [41, 40, 43, 30] and -32 until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07
    # ([44, 43, 43, 31] until SGLang's overlap loop took requests in a step late, the same day)
    assert [mae[k] for k, _ in METRICS] == [44, 43, 41, 31] and round(100 * sum(t8) / len(t8)) == -33
    assert (
        "Since SGLang's overlap loop takes requests in a step late (the same day, docs/simulation.md): TTFT MAE 41%, the other "
        "MAEs and the bias as they were, that DeepSeek-V3 run serving 2.54 times less, its TPOT 72.0 ms in kvcalc, the MiniMax-M2 "
        "runs on 4 MI300Xs 1.63 and 1.46 times less, GLM-4.6-FP8 on 8 H100s 1.74 and 2.39 times less." in text
    )
    assert (
        "Since SGLang's shared expert runs inside DeepSeek-V3's fused MoE call (the same day, docs/simulation.md; on MI300Xs "
        "with EP too): request throughput MAE 44%, output 43%, TTFT 43%, TPOT 31%, TP 8 TPOT bias -33%, DeepSeek-V3 with DP "
        "attention on 8 MI300Xs serving 2.53 times less than kvcalc predicts, its TPOT 73.2 ms in kvcalc, the MI300X runs 1.3 "
        "to 2.5 times less." in text
    )
    assert (
        "Since the MI300X's all-reduces at TP 8 take its TP 4 table's latency (the same day): request throughput MAE 40%, "
        "output 39%, the same TTFT, TPOT and bias, DeepSeek-V3 with DP attention on 8 MI300Xs serving 2.41 times less than "
        "kvcalc predicts, its TPOT 76.4 ms in kvcalc." in text
    )
    assert (
        "Since Gated DeltaNet layers are charged the kernels they launch and Qwen3's query and key norms are counted "
        "(2026-12-05; the set's Qwen3-Next and Qwen3 runs): request throughput MAE 42%, output 41%, TTFT 42%, TPOT 30%, TP 8 "
        "TPOT bias -32%, throughput high on 21 of 23 and TPOT low on 21, Qwen3-32B's TPOT from 8% low to 1% high and its "
        "throughput 3-33% high, GLM-4.6-FP8 on 8 H100s serving 1.9 and 2.4 times less (kvcalc's TPOTs 160 and 119 ms), and on "
        "the other GLM-4.6 runs throughput from 14% low to 39% high; since MiniMax-M2's norms over all heads are charged their "
        "kernels (the same day), request throughput MAE 41%, output 40%, the MiniMax-M2 runs on 4 MI300Xs serving 1.64 and "
        "1.46 times less." in text
    )
    dsv3 = "sglcb-dsv3-mi300xx8-dp8-ep8-dpattn-sglang057-c100-sharegpt"
    # (2.43 and 75.9 ms until its all-reduces at TP 8 took its TP 4 table's latency, as quoted; 2.41 and 76.4 until a
    # DP-attention rank stepped its share of SGLang's prompt chunk, 2026-12-05)
    # (2.40 and 77.0 until an MLA layer's down projections were counted as each release runs them, 2026-12-06)
    assert (round(1 + errs[dsv3]["request_throughput_per_s"], 2), round(predict(dsv3)["mean_tpot_ms"], 1)) == (
        2.54,
        72.0,
    )  # (2.44, 75.6) until the shared expert ran inside the fused call; (2.53, 73.2) until the overlap loop's admission
    assert "the same MAEs and bias, that run serving 2.40 times less, its TPOT 77.0 ms in kvcalc." in text
    assert (
        "Since an MLA layer's down projections are counted as each release runs them (2026-12-06): request throughput MAE "
        "41%, output 40%, TTFT 43%, that run serving 2.44 times less, its TPOT 75.6 ms in kvcalc." in text
    )
    assert (
        "Since the MI300X's fp8 matmuls take aiter's measured figures over every size (the same day): request throughput "
        "MAE 43%, output 42%, TTFT 43%, TPOT 31%, TP 8 TPOT bias -33%, DeepSeek-V3 with DP attention on 8 MI300Xs serving "
        "2.43 times less than kvcalc predicts, its TPOT 75.9 ms in kvcalc, the MiniMax-M2 runs 1.73 and 1.55 times less, "
        "the MI300X runs 1.3 to 2.4 times less." in text
    )
    assert (
        "request throughput MAE 45%, output 45%, TTFT 43%, TPOT 32%, TP 8 TPOT bias -34%, DeepSeek-V3 with DP attention on 8 "
        "MI300Xs serving 2.62 times less than kvcalc predicts (3.45 before), its TPOT 69.7 ms in kvcalc (51.2 before; 214.7 "
        "measured)" in text
    )
    mm2 = [round(1 + errs[c["id"]]["request_throughput_per_s"], 2) for c in eight if c["gpu"] == "mi300x" and int(c["tp"]) == 4]
    # 1.73 and 1.55 until MiniMax-M2's norm kernels, as quoted; [1.64, 1.46] until the overlap loop's late admission
    assert mm2 == [1.63, 1.46]
    assert (
        "request throughput MAE 49%, output 48%, TTFT 43%, TPOT 32%, TP 8 TPOT bias -34%, the MiniMax-M2 runs on 4 MI300Xs "
        "serving 1.76 and 1.59 times less than kvcalc predicts (1.84 and 1.65 before)" in text
    )
    assert (
        "request throughput MAE 51%, output 50%, TTFT 43%, TPOT 33%, TP 8 TPOT bias -34%, the MI300X runs 1.3 to 3.5 times "
        "less, and on the other GLM-4.6 runs throughput from 7% low to 47% high" in text
    )
    assert (
        "request throughput MAE 50%, output 49%, TTFT 43%, TPOT 32%, TP 8 TPOT bias -34%, throughput high on 22 of 23 and "
        "TPOT low on 23, Qwen3-32B's TPOT 3-13% low and its throughput 6-37% high" in text
    )
    assert "scores request throughput MAE 56%, output 55%, TTFT 44%, TPOT 35%, TP 8 TPOT bias -36%" in text
    assert "request throughput MAE 54%, output 53%, TTFT 43%, TPOT 34%, TP 8 TPOT bias -35%" in text
    assert "request throughput MAE 50%, output 49%, TTFT 43%, TPOT 33%, TP 8 TPOT bias -34%, throughput high on 22 of 23" in text
    high = sum(e["request_throughput_per_s"] > 0 for e in errs.values())
    low = sum(e["mean_tpot_ms"] < 0 for e in errs.values())
    # (21 high until SGLang's compiled router was charged for GLM-4.x, 2026-12-07)
    assert (high, low) == (20, 21) and "throughput high on 23 of 23 and TPOT low on 21" in text  # before the routers'
    assert "throughput high on 22 of 23 and TPOT low on 21, GLM-4.6-FP8 on 8 H100s serving 2.2 and 2.6 times less" in text
    assert "(throughput high on 23 of 23, TPOT low on 23 of 23)" in text
    dense = [errs[c["id"]] for c in eight if c["model"] == "qwen3-32b"]
    tpot = sorted(round(-e["mean_tpot_ms"] * 100) for e in dense)
    thr = sorted(round(e["request_throughput_per_s"] * 100) for e in dense)
    assert (len(dense), tpot[0], tpot[-1], thr[0], thr[-1]) == (6, -1, 8, 3, 33)
    assert (
        "Since each attention call's work per request is charged (the same day): the same MAEs and bias, Qwen3-32B's TPOT "
        "2-12% low and its throughput 5-37% high, kvcalc's TPOTs for GLM-4.6-FP8 on 8 H100s 155 and 116 ms" in text
    )
    assert "Qwen3-32B under vLLM 0.14, TPOT 1-9% low and throughput 4-35% high" in text  # at scoring
    assert "(Qwen3-32B's TPOT from 5% low to 2% high, its throughput 2-30% high)" in text
    h100 = sorted((c for c in eight if c["gpu"] == "h100-sxm" and c["model"] == "glm-4.6"), key=lambda c: c["engine"])
    assert [round(1 + errs[c["id"]]["request_throughput_per_s"], 2) for c in h100] == [
        1.74,
        2.39,
    ]  # 1.84 and 2.39 until the compiled router; 1.75 until the overlap loop's late admission
    other = sorted(
        round(100 * errs[c["id"]]["request_throughput_per_s"])
        for c in eight
        if c["model"] == "glm-4.6" and c["gpu"] != "h100-sxm"
    )
    assert (other[0], other[-1]) == (-20, 39)
    assert (
        "Since SGLang 0.5.3 to 0.5.9's compiled router is charged for GLM-4.x (2026-12-07, docs/simulation.md): the same "
        "MAEs and bias, throughput high on 20 of 23, GLM-4.6-FP8 on 8 H100s serving 1.75 and 2.39 times less (kvcalc's "
        "TPOTs 160 and 118 ms), and on the other GLM-4.6 runs throughput from 20% low to 39% high." in text
    )

    assert [(round(c["measured"]["mean_tpot_ms"]), round(predict(c["id"])["mean_tpot_ms"])) for c in h100] == [
        (684, 160),
        (509, 118),
    ]
    assert (
        "Since fp8 fused-MoE calls take their own floor (the same day): the same MAEs and bias, GLM-4.6-FP8 on 8 H100s "
        "serving 1.8 and 2.4 times less (kvcalc's TPOTs 160 and 118 ms), and on the other GLM-4.6 runs throughput from 16% "
        "low to 39% high." in text
    )
    assert (
        "request throughput MAE 48%, output 47%, TTFT 43%, TPOT 31%, TP 8 TPOT bias -33%, throughput high on 22 of 23 and "
        "TPOT low on 21, GLM-4.6-FP8 on 8 H100s serving 2.0 and 2.6 times less (kvcalc's TPOTs 155 and 115 ms)" in text
    )
    assert "(kvcalc's TPOTs 126 and 115 ms)" in text
    assert "GLM-4.6-FP8 on 8 H100s serving 2.3 and 2.7 times less (kvcalc's TPOTs 124 and 113 ms)" in text
    assert "serves 2.3 and 2.8 times less than kvcalc predicts (TPOTs of 684 and 509 ms where kvcalc has 123 and 113)" in text
    amd = [1 + errs[c["id"]]["request_throughput_per_s"] for c in eight if c["gpu"] == "mi300x"]
    assert "the MI300X runs 1.7 to 4.5 times less" in text  # at scoring
    assert "MI300X runs serve 1.3 to 3.5 times less" in text
    assert "the MI300X runs 1.3 to 3.5 times less" in text  # before the routers' kernels
    assert "the MI300X runs 1.3 to 3.4 times less" in text  # before SGLang's DP-attention lockstep
    assert "measured), the MI300X runs 1.3 to 2.6 times less." in text  # before the MI300X's matmuls over every size
    assert (round(min(amd), 1), round(max(amd), 1)) == (1.3, 2.5)  # 2.4 until the shared expert ran inside the fused call
    glm = [errs[c["id"]]["request_throughput_per_s"] for c in eight if c["model"] == "glm-4.6" and c["gpu"] != "h100-sxm"]
    assert "on the other GLM-4.6 runs kvcalc's throughput is 2-53% high" in text  # at scoring
    assert (round(100 * min(glm)), round(100 * max(glm))) == (-20, 39)  # (-16, 39) until the compiled router, 2026-12-07
    assert (
        "kvcalc's TPOTs for GLM-4.6-FP8 on 8 H100s 155 and 116 ms, and on the other GLM-4.6 runs throughput from 8% low to 46% high."
        in text
    )
    assert (
        "Since the matmuls' two terms combine as their root-sum-square (the same day): request throughput MAE 50%, output 49%, "
        "TTFT 43%, TPOT 32%, TP 8 TPOT bias -34%, the MI300X runs 1.3 to 3.4 times less, Qwen3-32B's TPOT 1-11% low and its "
        "throughput 4-36% high, kvcalc's TPOTs for GLM-4.6-FP8 on 8 H100s 154 and 117 ms, and on the other GLM-4.6 runs "
        "throughput from 9% low to 41% high." in text
    )
    assert (
        "Since fp8 matmuls with per-tensor or per-channel scales take their own measured figures (the same day): "
        "GLM-4.6-FP8 on 8 H100s serving 1.9 and 2.5 times less (kvcalc's TPOTs 154 and 118 ms), and on the other GLM-4.6 "
        "runs throughput from 12% low to 41% high." in text
    )
    assert "on the other GLM-4.6 runs throughput 0-51% high" in text  # before the routers' kernels
    assert "on the other GLM-4.6 runs throughput from 3% low to 47% high" in text  # before SGLang's eager decodes
    assert "on the other GLM-4.6 runs throughput from 9% low to 47% high" in text


def test_the_ninth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: twenty runs of four sources, scored at d4be2a6 before they joined."""
    text = " ".join(DOC.read_text().split())
    nine = [c for c in CASES if c.get("held_out") == "2026-12-03 (ninth set)"]
    assert len(nine) == 20 and len({c["url"].split("/blob/")[0] for c in nine}) == 4
    errs = {c["id"]: errors(c) for c in nine}
    mae, n = {}, {}
    for k, _ in METRICS:
        v = [abs(e[k]) for e in errs.values() if k in e]
        mae[k], n[k] = round(sum(v) / len(v) * 100), len(v)
    t8 = [errs[c["id"]]["mean_tpot_ms"] for c in nine if int(c["tp"]) == 8 and "mean_tpot_ms" in errs[c["id"]]]
    # As scored (quoted), and since the replay honours the MI300X runs' stated --enable-chunked-prefill False.
    assert "request throughput MAE 57%, output 56%, TTFT 43%, TPOT 41% (12 runs), TP 8 TPOT bias -90% (3 runs)" in text
    assert n["mean_tpot_ms"] == 12
    assert (len(t8), round(100 * sum(t8) / len(t8))) == (
        3,
        -31,
    )  # -33 until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07
    assert "scores request throughput MAE 56%, output 56%, TTFT 46%, TPOT 33% (12 runs), TP 8 TPOT bias -57%" in text
    assert all(e["request_throughput_per_s"] > 0 for e in errs.values()) and "throughput is high on 20 of 20" in text
    assert "throughput still high on 20 of 20" in text

    def span(prefix: str) -> tuple[int, int]:
        v = [round(100 * e["request_throughput_per_s"]) for i, e in errs.items() if i.startswith(prefix)]
        assert len(v) == 4, prefix
        return min(v), max(v)

    # As scored: 7-43% on the QwQ-32B runs; 7-38% since SGLang's start-up memory followed the interconnect.
    # DeepSeek-R1: 10-15% until SGLang 0.4.5.post3's own default memory fraction was read.
    # 5-37% and 6-20% since the small kernels take a decode trace's times; 6-19% since the routers' top-k.
    # 8-39% since SGLang's overlap scheduler; 7-38% since each attention call's work per request.
    # 8-22% until fp8 fused-MoE calls took their own floor (2026-12-05); 9-22% until SGLang's FlashAttention 3 MLA call
    # was taken on Hopper from 0.4.5.post1 (2026-12-06); 10-26% until SGLang's admission tests were modelled
    # (2026-12-07).
    assert span("simonmo-h100x2-qwq32b-sglang") == (6, 37) and span("mvll-sgl045p3-dsr1-h200x8-") == (14, 24)
    assert (
        "Since fp8 fused-MoE calls take their own floor (the same day): the same MAEs and bias, 9-22% high on SGLang's "
        "DeepSeek-R1 runs (11-21% on the 50-prompt ones) and 27-59% on vLLM 0.8.4's (46-77% with a V1 prompt's blocks taken "
        "at admission), the DeepSeek-V3.2-Exp run serving "
        "1.64 times less than kvcalc predicts, its TPOT 60.4 ms in kvcalc." in text
    )
    assert "8-39% high on SGLang's QwQ-32B runs and 6-20% on its DeepSeek-R1 runs (7-19% on the 50-prompt ones);" in text
    # [38, 38, 39, 17] until an MLA call took its GPU's measured floor (2026-12-05); [39, 39, 39, 17] until the MI300X's
    # all-reduces at TP 8 took its TP 4 table's latency (the same day).
    # [39, 38, 39, 17] until an MLA layer's down projections were counted as each release runs them (2026-12-06).
    # [39, 39, 39, 17] until a request whose stream carried no text counted as the 2024 client counted it (2026-12-06).
    # [39, 38, 42, 17] until SGLang's FlashAttention 3 MLA call was taken on Hopper from 0.4.5.post1 (the same day).
    # [40, 39, 43, 17] until SGLang's admission tests were modelled (2026-12-07).
    # [40, 40, 42, 18] and -33 until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07;
    # [39, 38, 42, 17] until data-parallel attention's gather and scatter took NCCL's measured times, the same day.
    # [38, 38, 42, 17] until SGLang's overlap loop took requests in a step late, the same day.
    assert [mae[k] for k, _ in METRICS] == [38, 38, 41, 17] and round(100 * sum(t8) / len(t8)) == -31
    assert (
        "Since SGLang's overlap loop takes requests in a step late (the same day, docs/simulation.md): TTFT MAE 41%, that "
        "run's TPOT 57.5 ms in kvcalc, SGLang's DeepSeek-R1 runs 14-26% high on throughput (16-26% on the 50-prompt ones)."
        in text
    )
    assert (
        "Since data-parallel attention's gather and scatter take NCCL's measured times (the same day): request throughput "
        "MAE 38%, the DeepSeek-V3.2-Exp run serving 1.71 times less, its TPOT 58.5 ms in kvcalc." in text
    )
    assert (
        "Since releases without a custom all-reduce on ROCm are charged RCCL's (2026-12-07, docs/simulation.md): request "
        "throughput MAE 39%, output 38%, TTFT 42%, TPOT 17%, TP 8 TPOT bias -31%, the MI300X runs 1.7 to 2.0 times less, "
        "kvcalc's TPOTs 376 to 924 ms, their TTFTs 42% to 87% low" in text
    )
    assert (
        "Since SGLang's admission tests are modelled (2026-12-07, docs/simulation.md): "
        "request throughput MAE 40%, output 40%, TTFT 42%, TPOT 18%, SGLang's DeepSeek-R1 runs 14-24% high on throughput "
        "(16-25% on the 50-prompt ones)." in text
    )
    assert (
        "Since SGLang's FlashAttention 3 MLA call is taken on Hopper from 0.4.5.post1 (the same day, docs/engines.md): "
        "request throughput MAE 40%, output 39%, TTFT 43%, TPOT 17%, SGLang's DeepSeek-R1 runs 10-26% high on throughput "
        "(12-25% on the 50-prompt ones)." in text
    )
    amd = sorted(round(-100 * e["mean_ttft_ms"]) for i, e in errs.items() if i.startswith("dstack-405bfp8-mi300x8"))
    # [42, 78, 89] until releases without a custom all-reduce on ROCm were charged RCCL's (2026-12-07), as first quoted
    assert amd == [42, 78, 87] and "the MI300X runs' TTFTs 42% to 89% low in kvcalc (6% to 81% before)" in text
    assert (
        "Since the MI300X's all-reduces at TP 8 take its TP 4 table's latency (the same day): output throughput MAE 38%, "
        "the MI300X runs' TPOTs 331 to 917 ms in kvcalc, the rest as they were." in text
    )
    v32 = next(i for i in errs if "dsv32exp" in i)
    # (1.72 and 58.3 ms until a DP-attention rank stepped its share of SGLang's prompt chunk, 2026-12-05, as quoted)
    # (1.71 and 59.0 until an MLA layer's down projections were counted as each release runs them, 2026-12-06)
    # (1.77 and 57.0 until SGLang's own MLA call on compute capability 10 was taken only for DeepseekV3ForCausalLM, the
    # same day: DeepSeek-V3.2's class takes vLLM's FlashInfer MLA figure there)
    # (1.76, 57.2) until data-parallel attention's gather and scatter took NCCL's measured times (2026-12-07)
    # (1.71, 58.5) until SGLang's overlap loop took requests in a step late (the same day)
    assert (round(1 + errs[v32]["request_throughput_per_s"], 2), round(predict(v32)["mean_tpot_ms"], 1)) == (1.71, 57.5)
    assert (
        "for the DeepseekV3ForCausalLM models it gives trtllm_mla (the same day, docs/engines.md): the same MAEs, the "
        "DeepSeek-V3.2-Exp run serving 1.76 times less, its TPOT 57.2 ms in kvcalc." in text
    )
    assert "the same MAEs and bias, the DeepSeek-V3.2-Exp run serving 1.71 times less, its TPOT 59.0 ms in kvcalc." in text
    assert (
        "Since an MLA layer's down projections are counted as each release runs them (2026-12-06): output throughput MAE "
        "39%, the DeepSeek-V3.2-Exp run serving 1.77 times less, its TPOT 57.0 ms in kvcalc." in text
    )
    assert (
        "Since an MLA call takes its GPU's measured floor (the same day): request throughput MAE 39%, output 39%, TTFT "
        "39%, TPOT 17%, the same bias, the DeepSeek-V3.2-Exp run serving 1.72 times less than kvcalc predicts, its TPOT "
        "58.3 ms in kvcalc." in text
    )
    amd = sorted(round(1 + e["request_throughput_per_s"], 1) for i, e in errs.items() if "mi300x" in i)
    # (1.8, 2.1) and TPOTs (331, 917) until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07
    assert (amd[0], amd[-1]) == (1.7, 2.0)
    tpots = sorted(round(predict(i)["mean_tpot_ms"]) for i in errs if "mi300x" in i)
    assert (tpots[0], tpots[-1]) == (376, 924)  # 333 and 909 until the all-reduces at TP 8 took the TP 4 latency, as quoted
    assert (
        "since the MI300X's fp8 matmuls take aiter's measured figures over every size (the same day), request throughput "
        "MAE 38%, output 38%, TTFT 39%, TPOT 17% (12 runs), TP 8 TPOT bias -33%, the MI300X runs 1.8 to 2.1 times less, "
        "kvcalc's TPOTs 333 to 909 ms:" in text
    )
    assert (
        "request throughput MAE 44%, output 44%, TTFT 41%, TPOT 21% (12 runs), TP 8 TPOT bias -48%; the MI300X runs serve 2.0 "
        "to 2.6 times less than kvcalc predicts (1.6 to 1.9 before), kvcalc's TPOTs 219 to 668 ms" in text
    )
    v32 = "sglcb-dsv32exp-b200x8-dpattn8-ep8-sglang056-c100-sharegpt"
    # (1.64, 60.4) until an MLA call took its GPU's measured floor (2026-12-05; the sentence below has it since), (1.72,
    # 58.3) until a DP-attention rank stepped its share of SGLang's prompt chunk (the same day).
    # (1.71, 59.0) until an MLA layer's down projections were counted as each release runs them (2026-12-06); (1.77, 57.0)
    # until SGLang's own MLA call on compute capability 10 was taken only for DeepseekV3ForCausalLM (the same day)
    # (1.76, 57.2) until data-parallel attention's gather and scatter took NCCL's measured times (2026-12-07)
    # (1.71, 58.5) until SGLang's overlap loop took requests in a step late (the same day)
    assert (round(1 + errs[v32]["request_throughput_per_s"], 2), round(predict(v32)["mean_tpot_ms"], 1)) == (1.71, 57.5)
    assert (
        "request throughput MAE 35%, output 35%, TTFT 41%, TPOT 23% (12 runs), TP 8 TPOT bias -57%; the DeepSeek-V3.2-Exp "
        "run serves 1.66 times less than kvcalc predicts (2.68 before), its TPOT 60.1 ms in kvcalc (35.1 before; 106.2 "
        "measured)" in text
    )
    assert (
        "Since the matmuls' two terms combine as their root-sum-square (the same day): request throughput MAE 41%, output "
        "40%, TTFT 42%, TPOT 25% (12 runs), TP 8 TPOT bias -57%; 6-37% high on SGLang's QwQ-32B runs and 8-22% on its "
        "DeepSeek-R1 runs (10-21% on the 50-prompt ones), 2-47% and 25-59% on vLLM 0.8.2's and 0.8.4's (2-157% and 48-77% "
        "with a V1 prompt's blocks taken at admission); the MI300X runs serve 1.6 to 1.9 times less, kvcalc's TPOTs 275 to "
        "563 ms; vLLM 0.8.2 at 0.44 of SGLang's rate on the 32,000-token prompts (16.73 against 38.26 output tokens/s" in text
    )
    assert (
        "Since each attention call's work per request is charged (the same day): request throughput MAE 41%, output 40%, "
        "TTFT 41%, TPOT 26% (12 runs), TP 8 TPOT bias -58%; 7-38% high on SGLang's QwQ-32B runs and 6-20% on its "
        "DeepSeek-R1 runs, 3-47% and 23-58% on vLLM 0.8.2's and 0.8.4's; the MI300X runs' TPOTs 242 to 555 ms in kvcalc" in text
    )
    assert "5-37% high on SGLang's QwQ-32B runs and 6-20% on its DeepSeek-R1 runs (8-20% on the 50-prompt ones)" in text
    assert "10-15% (6-20% since SGLang 0.4.5.post3's own default memory fraction is read)" in text
    assert "kvcalc's throughput is 7-43% (7-38% since SGLang's start-up memory followed the interconnect) high" in text
    # As scored, and since V1's blocks are taken chunk by chunk (Engine.prompt_blocks).
    # (5-47% until each attention call's work per request was charged)
    # (25-59% on vLLM 0.8.4's until fp8 fused-MoE calls took their own floor, 2026-12-05)
    assert span("simonmo-h100x2-qwq32b-vllm") == (2, 47) and span("mvll-vllm084-dsr1-h200x8-") == (27, 59)
    assert "6-19% high on SGLang's DeepSeek-R1 runs (7-18% on the 50-prompt ones) and 23-58% on vLLM 0.8.4's" in text
    assert "5-47% and 23-60% on vLLM 0.8.2's and 0.8.4's (5-158% and 46-76% with a V1 prompt's blocks taken at admission)" in text
    assert "vLLM 0.8.2's and 0.8.4's runs are now 7-48% and 23-61% high (7-158% and 47-76% before)" in text
    before = {
        c["id"]: whole_prompt_blocks(c["id"])["request_throughput_per_s"] / c["measured"]["request_throughput_per_s"] - 1
        for c in nine
        if c["engine"].startswith("vllm@0.8")
    }
    qwq = [round(100 * v) for k, v in before.items() if k.startswith("simonmo-h100x2-qwq32b-vllm")]
    dsr1 = [round(100 * v) for k, v in before.items() if k.startswith("mvll-vllm084-dsr1-h200x8-")]
    assert (min(qwq), max(qwq), min(dsr1), max(dsr1)) == (2, 157, 46, 77)  # 48-77% until the fp8 calls' floor
    assert "and 23-58% on vLLM 0.8.4's (46-74% with a V1 prompt's blocks taken at admission)" in text
    sgl = [c for c in CASES if c["id"].startswith("mvll-sgl045p3-dsr1") and c["num_prompts"] == 50]
    fifty = [round(100 * errors(c)["request_throughput_per_s"]) for c in sgl]
    # 12-20% as scored; 8-20% since SGLang 0.4.5.post3's own default memory fraction is read; 7-19% since the
    # routers' top-k is counted.
    # 10-21% until the fp8 calls' floor; 11-21% until SGLang's FlashAttention 3 MLA call was taken on Hopper (2026-12-06)
    # 12-25% until SGLang's admission tests were modelled (2026-12-07); 16-25% until SGLang's overlap loop took requests
    # in a step late (the same day)
    assert (min(fifty), max(fifty)) == (16, 26)
    assert "interconnect) high on SGLang's QwQ-32B runs and 10-15% (6-20% since SGLang 0.4.5.post3's own" in text
    assert "on its DeepSeek-R1 runs (12-20% on the 50-prompt ones, 8-20% since)" in text
    assert "but 7-158% and 47-76% high on vLLM 0.8.2's and 0.8.4's" in text
    long = {c["engine"]: c["measured"]["output_throughput_tok_per_s"] for c in nine if "random32000x100" in c["id"]}
    assert long == {"vllm@0.8": 15.15, "sglang@0.4.4.post3": 30.08} and "(15.15 against 30.08 output tokens/s)" in text
    amd = [c for c in nine if c["gpu"] == "mi300x"]
    assert all(c["chunked_prefill"] is False for c in amd)
    x = sorted(round(1 + errs[c["id"]]["request_throughput_per_s"], 1) for c in amd)
    tp = sorted(round(c["measured"]["mean_tpot_ms"]) for c in amd)
    mine = sorted(round(predict(c["id"])["mean_tpot_ms"]) for c in amd)
    # (2.0 to 2.6 and 219 to 668 ms until the MI300X's fp8 matmuls took aiter's measured figures over every size)
    # (333 to 909 ms until the all-reduces at TP 8 took the TP 4 latency, 2026-12-05)
    # (1.8 to 2.1 and 331 to 917 ms until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07)
    assert (x[0], x[-1], tp[0], tp[-1], mine[0], mine[-1]) == (1.7, 2.0, 646, 1569, 376, 924)
    assert "the MI300X runs serve 1.6 to 1.9 times less, kvcalc's TPOTs 275 to 563 ms" in text  # before the recorded lengths
    assert "the MI300X runs serve 1.7 to 1.9 times less, kvcalc's TPOTs 282 to 549 ms" in text  # before the routers'
    assert "the MI300X runs' TPOTs 245 to 546 ms in kvcalc" in text
    assert "serve 1.8 to 1.9 times less" in text and "(646 to 1,569 ms, where kvcalc has 83 to 92)" in text  # as scored
    assert "TPOTs in kvcalc rise to 266 to 552 ms" in text and "still serve 1.7 to 2.0 times" in text
    q32 = "simonmo-h100x2-qwq32b-vllm082-tp2-random32000x100-rr10"
    now, was, c32 = predict(q32), whole_prompt_blocks(q32), next(c for c in nine if c["id"] == q32)
    assert (round(100 * errs[q32]["request_throughput_per_s"]), round(now["mean_tpot_ms"])) == (10, 444)
    assert (round(c32["measured"]["mean_tpot_ms"]), round(was["mean_tpot_ms"])) == (438, 169)
    assert "the 32,000-token QwQ-32B run is 10% high at 444 ms (169 ms with blocks at admission)" in text
    assert "the 32,000-token QwQ-32B run 11% high at a mean TPOT of 443 ms against 438 measured (158% high at 168" in text
    s32 = predict("simonmo-h100x2-qwq32b-sglang044p3-tp2-random32000x100-rr10")["output_throughput_tok_per_s"]
    v32 = now["output_throughput_tok_per_s"]
    # (38.26 until SGLang's overlap loop ran a step past a request's end, 2026-12-07)
    assert (round(v32, 2), round(s32, 2), round(v32 / s32, 2), round(15.15 / 30.08, 2)) == (16.73, 38.22, 0.44, 0.50)
    assert "(16.73 against 38.26 output tokens/s; 38.22 since SGLang's overlap loop runs a step past a request's end" in text
    assert (
        "in kvcalc; vLLM 0.8.2 at 0.44 of SGLang's rate on the 32,000-token prompts (16.74 against 38.27 output tokens/s)."
        in text
    )
    assert "vLLM 0.8.2 at 0.44 of SGLang's rate (16.74 against 38.28 output tokens/s; 38.19 until" in text
    assert "vLLM 0.8.2 at 0.44 of SGLang 0.4.4's rate (16.76 against 38.29 output tokens/s), where the runs measured 0.50" in text
    # TTFT 41% until SGLang 0.4.4.post3's own default memory fraction was read.
    # 44, 43 and 42 until a DSA model's indexer kernels were counted (the DeepSeek-V3.2-Exp run).
    # [41, 41, 41, 26] until each attention call's work per request was charged (now as asserted above).
    assert (
        "SGLang's overlap scheduler runs the host's time beside the GPU's (2026-12-04): request throughput MAE 41%, output 41%, TTFT 41%, TPOT 26% (12 runs), TP 8 TPOT bias -58%"
        in text
    )
    assert "request throughput MAE 40%, output 40%, TTFT 41%, TPOT 26% (12 runs), TP 8 TPOT bias -58%, throughput still" in text
    assert "request throughput MAE 41%, output 41%, TTFT 41%, TPOT 25% (12 runs), TP 8 TPOT bias -57%" in text
    assert "43%, 42% and 41% since a DSA model's indexer kernels are counted" in text
    assert "throughput MAE 44%, output 43%, TTFT 41%, TPOT 26% (12 runs), TP 8 TPOT bias -57% (TTFT 42% since" in text
    ds = next(c for c in nine if c["model"] == "deepseek-v3.2")
    assert "run serves 3.0 times less (2.8 since" in text
    assert "the DeepSeek-V3.2-Exp run serves 2.7 times less." in text  # before the routers' kernels
    assert "the DeepSeek-V3.2-Exp run serves 2.6 times less." in text  # before SGLang's overlap scheduler
    # Before SGLang's DP-attention lockstep (the run serves 1.66 times less since, 1.64 since fp8 fused-MoE calls took
    # their own floor, 1.72 since an MLA call took its GPU's measured floor, 1.71 since a DP-attention rank steps its
    # share of SGLang's prompt chunk, 1.77 since an MLA layer's down projections are counted as each release runs them,
    # 1.76 since SGLang's own MLA call on compute capability 10 is taken only for DeepseekV3ForCausalLM, 1.71 since
    # data-parallel attention's gather and scatter take NCCL's measured times: above).
    assert "(7-19% on the 50-prompt ones); the DeepSeek-V3.2-Exp run serves 2.7 times less." in text
    assert round(1 + errs[ds["id"]]["request_throughput_per_s"], 2) == 1.71


def test_the_tp8_bias_splits_as_the_doc_says():
    """docs/accuracy.md's MoE bullet: the TP 8 TPOT bias by model kind and engine."""
    text = " ".join(DOC.read_text().split())
    groups: dict[tuple[bool, str], list[float]] = {}
    for c in CASES:
        e = errors(c)
        if int(c["tp"]) == 8 and "mean_tpot_ms" in e:
            key = (resolve_model(c["model"]).moe is not None, c["engine"].split("@")[0])
            groups.setdefault(key, []).append(e["mean_tpot_ms"])

    def bias(v: list[float]) -> tuple[int, int]:
        return round(100 * sum(v) / len(v)), len(v)

    # (-36 of 25 and -24 of 31 until the twelfth held-out set joined, 2026-12-05)
    # (-23 of 36 under SGLang until the thirteenth set joined, the same day)
    # (-38 of 27 and -19 of 40 until the fourteenth set joined, the same day)
    # (-36 of 29 and -17 of 46 until the nineteenth set joined, 2026-12-06)
    # (-22 of 54 under SGLang until the twenty-first set joined, 2026-12-06; -15 of 64 until the twenty-second joined)
    # (-11 of 75 under SGLang until its all-reduce and norm fusion was counted, 2026-12-06)
    # (-12 until an MLA layer's down projections were counted as each release runs them, the same day)
    # (-38 of 42 and -13 of 75 until the twenty-third set joined, 2026-12-06)
    # (-37 of 43 under vLLM until vLLM V0's Triton MLA decode on the MI300X was priced, 2026-12-06)
    # (-13 of 84 under SGLang until the B200's Triton fused-MoE calls took their own measured share, 2026-12-06)
    # (-12 of 84 under SGLang until SGLang 0.4.1 to 0.4.4's Triton MLA decode was priced, 2026-12-06)
    # (-11 of 84 under SGLang until SGLang's FlashAttention 3 MLA call was taken on Hopper from 0.4.5.post1, 2026-12-06)
    # (-35 of 43 under vLLM until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs, 2026-12-06)
    # (-12 of 84 under SGLang until a norm all-reduce the custom all-reduce declines went through NCCL, 2026-12-07)
    # (-11 of 84 under SGLang until its shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07)
    # (-33 of 43 and -13 of 84 until the twenty-eighth held-out set joined, 2026-12-07)
    # (-29 and -12 until the MI325X took the MI300X's measured tables, the same day)
    # (-11 under SGLang until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08)
    # (-28 under vLLM until the MI355X's all-reduce table at TP 8, the same day)
    assert bias(groups[(True, "vllm")]) == (-27, 54) and bias(groups[(True, "sglang")]) == (-10, 98)
    # -22% under SGLang until its start-up memory followed the interconnect (the real-log section's fifteenth set).
    # (-21 of 21 under vLLM until the nineteenth set joined, 2026-12-06)
    # (-14 until the fifteen flag-sweep runs replayed their default-flag sibling's recorded requests, 2026-12-06)
    # (-16 of 45 under vLLM until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07)
    # (-18 of 5 under SGLang until two of Llama-3.1-70B's cookbook runs found the prompts earlier runs had sent, 2026-12-07)
    # (-20 of 5 under SGLang until its overlap loop took requests in a step late, 2026-12-07)
    # (-15 of 45 under vLLM until the twenty-seventh held-out set joined, 2026-12-07)
    # (-13 of 51 under vLLM until the twenty-eighth held-out set joined, 2026-12-07)
    # (-12 under vLLM until the MI325X took the MI300X's measured tables, the same day)
    # (-11 under vLLM until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08)
    assert bias(groups[(False, "vllm")]) == (-10, 67) and bias(groups[(False, "sglang")]) == (-21, 5)
    dense = [
        errors(c)["mean_tpot_ms"]
        for c in CASES
        if int(c["tp"]) == 8
        and "mean_tpot_ms" in errors(c)
        and resolve_model(c["model"]).moe is None
        and c["engine"].startswith("vllm")
        and not c["id"].startswith(("dstack-405bfp8-mi300x8", "dstackamd-", "dstacktgi-"))
    ]
    # (-8, 15) until the nineteenth set joined; (2, 30) until the sweep's replay; (-1, 30) until the twenty-seventh joined;
    # (-1, 36) until the twenty-eighth joined; (-4, 52) until vLLM's cudagraph mode was modelled, the same day
    # (-3, 52) until the MI325X took the MI300X's measured tables, the same day; (-2, 52) until the MI355X took its own
    # measured GEMM and all-reduce figures, 2026-12-08 (-1, 52) until its all-reduce table at TP 8, the same day
    assert bias(dense) == (0, 52)
    r1 = next(c for c in CASES if c["id"] == "gpustack-h200x8-deepseek-r1-0528-vllm0110-tp8-sharegpt-c4")
    assert (round(r1["measured"]["mean_tpot_ms"], 1), round(predict(r1["id"])["mean_tpot_ms"], 1)) == (19.4, 15.4)

    assert (
        "(DeepSeek-R1 on 8 H200s at 4 in flight: 19.4 ms measured, 15.4 ms kvcalc; 15.6 ms until vLLM 0.11's one matmul "
        "for an MLA layer's two down projections was counted, 2026-12-06; 15.0 ms until fp8 fused-MoE calls took "
        "their own floor, 2026-12-05; 14.2 ms until the routers'" in text
    )
    assert (
        "mixture-of-experts models -27% under vLLM (54 runs; -28% until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08; -29% until the MI325X took the MI300X's measured tables, 2026-12-07; -33% of 43 until the twenty-eighth held-out set joined, 2026-12-07; -35% until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs, 2026-12-06; "
        "-37% until vLLM V0's Triton MLA decode on the MI300X was priced, "
        "2026-12-06; -38% of 42 until the twenty-third held-out set joined, 2026-12-06; "
        "-36% of 29 until the nineteenth held-out set joined, 2026-12-06; "
        "-38% of 27 until the fourteenth held-out set joined, 2026-12-05; "
        "-36% of 25 until the twelfth held-out set joined, the same day; "
        "-37% until the MI300X's fp8 matmuls took aiter's measured "
        "figures over every size, 2026-12-05) and -10% under SGLang (98; -11% until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08; -12% until the MI325X took the MI300X's measured tables, 2026-12-07; -13% of 84 until the twenty-eighth held-out set joined, 2026-12-07; -11% until SGLang's shared expert ran inside "
        "DeepSeek-V3's fused MoE call, 2026-12-07, docs/simulation.md; -12% until a norm all-reduce the custom all-reduce "
        "declines went through NCCL, 2026-12-07, docs/simulation.md; -11% until SGLang's FlashAttention 3 MLA call was taken on "
        "Hopper from 0.4.5.post1, 2026-12-06, docs/engines.md; -12% until SGLang 0.4.1 to 0.4.4's Triton MLA decode was "
        "priced, 2026-12-06, docs/engines.md; -13% until the B200's Triton fused-MoE calls took their "
        "own measured share, 2026-12-06; -13% of 75 until the twenty-third set joined, 2026-12-06; "
        "-12% until an MLA layer's down projections were counted as each "
        "release runs them, 2026-12-06; -11% until SGLang's all-reduce and norm fusion was counted, 2026-12-06; -15% of 64 until the twenty-second set joined, 2026-12-06; -22% of 54 until the twenty-first set joined, "
        "2026-12-06; -17% of 46 until the nineteenth set joined, the same day; -19% of 40 until the fourteenth set joined, 2026-12-05; -23% of 36 until the thirteenth set joined, the same day; "
        "-24% of 31 until the twelfth set joined, the same day; -25% until the MI300X's all-reduces at TP 8 took "
        "its TP 4 table's latency, 2026-12-05; -23% until an MLA call took its GPU's measured "
        "floor, the same day; -24% until fp8 fused-MoE calls took their own floor, "
        "2026-12-05; -26% until MiniMax-M2's norms over all heads were "
        "charged their kernels, 2026-12-05; -27% until Qwen3's query and key norms were counted, the same day; -29% until Gated DeltaNet layers were charged the kernels they launch, 2026-12-05; -26% until SGLang's "
        "overlap" in text
    )
    assert "charged the host's time, the same day; -39% and -29% until the routers' top-k" in text
    assert (
        "counted as vLLM runs it), dense models -10% under vLLM (67; -11% until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08; -12% until the MI325X took the MI300X's measured tables, 2026-12-07; -13% of 51 until the twenty-eighth held-out set joined, 2026-12-07; -15% of 45 until the twenty-seventh held-out set joined, "
        "2026-12-07; -16% until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07, "
        "docs/simulation.md; -14% until the fifteen flag-sweep runs of "
        "Llama-3.1-405B-FP8 on 8 H100s were replayed with their default-flag sibling's recorded requests, 2026-12-06; -21% "
        "of 21 until the nineteenth held-out set joined, "
        "2026-12-06; -23% of 19 until the fourteenth held-out set joined, "
        "2026-12-05; -13% of 16 until the eleventh held-out set's" in text
    )
    assert (
        "joined, 2026-12-05, 76-78% low each; -14% until Qwen3's query and key norms were counted, 2026-12-05; -17% until the MI300X's fp8 matmuls took aiter's measured figures over every size, 2026-12-05; 0% of 52 without those three (-2% until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08; -3% until the MI325X took the MI300X's measured tables, 2026-12-07; -4% until vLLM's cudagraph mode was modelled, 2026-12-07; -1% of 36 until the twenty-eighth held-out set joined, 2026-12-07; of 30 until the twenty-seventh held-out set joined, 2026-12-07), the nineteenth set's nine runs of the same build and the three MI300X runs of multi-step scheduling, below (+2% until the sweep's replay, 2026-12-06; -8% of 15 until the nineteenth set joined, 2026-12-06, its fifteen runs of Llama-3.1-405B-FP8 on H100s 11% high on average; -9% of 13 until the fourteenth set joined); -17% and -7% until the ShareGPT runs "
        "whose clients recorded each request were replayed with those, 2026-12-05; -19% and -10% until the matmuls' two "
        "terms combined as their root-sum-square, 2026-12-04; -18% and -9% until vLLM" in text
    )
    assert (
        "and -21% under SGLang (5; -20% until SGLang's overlap loop took requests in a step late, 2026-12-07, "
        "docs/simulation.md; -18% until two of Llama-3.1-70B's cookbook runs found the prompts earlier runs had sent, "
        "2026-12-07, above; -19% until fp8 matmuls took their own measured figures, -21% until the matmuls' two terms combined as their root-sum-square; -19% until SGLang's "
        "overlap scheduler ran the host's time beside the GPU's" in text
    )


def test_the_untuned_moe_tiles_paragraph_is_as_the_runs_score():
    """docs/accuracy.md's MoE bullet: the SGLang cookbook's one-user B200 runs, with and without a tuned
    fused-MoE config in SGLang 0.5.6 (its configs/ directory, read from the wheel)."""
    text = " ".join(DOC.read_text().split())

    def tpot(case_id: str) -> int:
        return round(100 * errors(next(c for c in CASES if c["id"] == case_id))["mean_tpot_ms"])

    # 27 until fp8 fused-MoE calls took their own floor, 2026-12-05; 34 until SGLang's FlashInfer fp8 MoE calls on B200
    # took that kernel's own floor and share, the same day; 23 until an MLA call took its GPU's measured floor, the
    # same day; -6 until SGLang's all-reduce and norm fusion was counted, 2026-12-06.
    assert tpot("sglcb-dsr1-b200x8-c1-1k1k") == -13  # -9 until its one matmul for the MLA down projections, 2026-12-06
    assert "9% low and 12-28% low since SGLang's all-reduce and norm fusion is counted, 2026-12-06;" in text
    assert "13% low and 12-28% low since its one matmul for an MLA layer's two down projections is counted" in text
    untuned = [
        tpot(f"sglcb-{m}-b200x8-c1-{w}") for m, w in (("qwen3-235b", "1k1k"), ("glm46", "1k1k"), ("qwen3next", "sharegpt"))
    ]
    # (-12, -28 until SGLang 0.5.3 to 0.5.9's compiled router was charged for GLM-4.x, 2026-12-07)
    assert (max(untuned), min(untuned)) == (-12, -13)
    assert "13% low and 12-13% low since SGLang 0.5.3 to 0.5.9's compiled router is charged for GLM-4.x" in text
    glm = next(c for c in CASES if c["id"] == "sglcb-glm46-b200x8-c1-1k1k")
    measured, got = glm["measured"]["mean_tpot_ms"], predict(glm["id"])["mean_tpot_ms"]
    assert (round(measured, 1), round(got, 1)) == (14.8, 12.8)  # 10.6 until the compiled router, 2026-12-07
    # The gap over GLM-4.6's 92 layers (config.json num_hidden_layers), in microseconds a layer.
    layers = resolve_model("glm-4.6").num_layers
    assert layers == 92 and round((measured - got) / layers * 1e3) == 21  # 46 until the compiled router
    assert "12.8 ms and 21 us since SGLang's compiled router is charged, 2026-12-07): more than a slower" in text
    assert (
        "cookbook's one-user runs split that way: DeepSeek-R1's TPOT is 21% high, the three without a config 19-39% low" in text
    )
    assert "GLM-4.6's one-user gap, 14.8 ms measured against 9.0, is 63 us a layer" in text  # as it was
    assert "(24% high and 15-36% low since the small kernels take" in text
    assert "(against 9.4 ms since the small kernels take a decode trace's times, 59 us; 10.6 ms and 46 us since" in text
    assert "33% high and 12-28% low since the routers' top-k is counted as vLLM runs it" in text
    assert "27% high and 17-32% low since SGLang's overlap scheduler runs the host's time beside the GPU's" in text
    assert "10.1 ms and 51 us since SGLang's overlap scheduler runs the host's time beside the GPU's" in text
    assert "10.6 ms and 46 us since its query and key norms are counted, 2026-12-05;" in text
    assert "27% high and 12-28% low since Qwen3's and GLM-4.6's query and key norms are counted" in text
    assert "34% high and 12-28% low since fp8 fused-MoE calls take their own floor, the same day;" in text
    assert "23% high and 12-28% low since SGLang's FlashInfer fp8 MoE calls on B200 take that kernel's own floor" in text
    assert "6% low and 12-28% low since an MLA call takes its GPU's measured floor, SGLang's own 15 us on B200 where" in text
    assert "That split's premise does not hold for DeepSeek-R1: SGLang from 0.5.6 runs its fp8 experts on B200" in text
    assert "about the 28 us kvcalc charged a fused-MoE call until fp8 calls took their own floor (2026-12-05: 38 us" in text


def test_the_harmony_parsing_figures_are_as_the_benchmark_page_says():
    """docs/benchmarks.md: gpt-oss's harmony parsing a streamed token (bench/harmony_parse.py), beside the output
    path's cost at as many streams; docs/accuracy.md quotes the range."""
    bench = (ROOT / "docs" / "benchmarks.md").read_text()
    rows = {
        int(m.group(1).replace(",", "")): [float(m.group(2)), float(m.group(3))]
        for m in re.finditer(r"^\| ([0-9,]+) \| ([0-9.]+) / ([0-9.]+) us \|$", bench, re.M)
    }
    assert sorted(rows) == [1, 64, 256, 1024]
    path = dict(zip((16, 64, 256, 1024), (19.0, 18.3, 25.3, 37.4), strict=True))
    assert "| 16 / 64 / 256 / 1,024 running | 19.0 / 18.3 / 25.3 / 37.4 us |" in bench
    shares = [max(rows[n]) / path[n] for n in (64, 256, 1024)]
    assert (round(100 * min(shares), 1), round(100 * max(shares), 1)) == (5.6, 8.3)
    text = " ".join(bench.split())
    assert "At 64, 256 and 1,024 streams that is 5.6-8.3% of what the output path above costs at as many" in text
    lo = min(min(v) for v in rows.values())
    hi = max(max(v) for v in rows.values())
    doc = " ".join(DOC.read_text().split())
    assert f"gpt-oss's harmony parsing of each token adds {lo:.1f}-{hi:.1f} us to that (`bench/harmony_parse.py`" in doc
    # The script does per token what vLLM 0.11's serving_chat.py does with use_harmony.
    script = (ROOT / "bench" / "harmony_parse.py").read_text()
    assert "p.process(token)" in script and "p.last_content_delta" in script and "p.current_channel" in script


def test_the_saturated_runs_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: the runs that send every request at once with no cap, 500 requests or more."""
    import statistics

    text = " ".join(DOC.read_text().split())
    sat = [c for c in CASES if c.get("request_rate") in (None, "inf") and not c.get("max_concurrency")]
    sat = [c for c in sat if int(c["measured"]["completed"]) >= 500]
    tp = [e["mean_tpot_ms"] for c in sat for e in [errors(c)] if "mean_tpot_ms" in e]
    th = [e["request_throughput_per_s"] for c in sat for e in [errors(c)] if "request_throughput_per_s" in e]
    pct = lambda v: round(100 * v)
    got = (len(sat), sum(x < 0 for x in tp), len(tp), pct(statistics.median(tp)), pct(min(tp)), pct(max(tp)))
    # (33, 25, 27, -40, -83, 88) until the nineteenth set joined; -83 until the replay took the stated memory fractions
    # (35, 27, 29, ...) until the twenty-fifth held-out set joined, 2026-12-07
    assert got == (39, 31, 33, -42, -86, 88)
    got = (sum(x > 0 for x in th), len(th), pct(statistics.median(th)), pct(min(th)), pct(max(th)))
    # (21, 32, 11, -48, 514) until the nineteenth set joined; 514 until the replay took the stated memory fractions
    # a median 13% until SGLang's FlashAttention 3 MLA call was taken on Hopper from 0.4.5.post1, 2026-12-06
    # 23 high until SGLang 0.5.3 to 0.5.9's compiled router was charged for GLM-4.x, 2026-12-07
    # a median 18% until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07
    # a median 19% until two runs of dennislee22's session found the prompts an earlier run had computed, 2026-12-07
    # (22, 34, ...) until the twenty-fifth held-out set joined, 2026-12-07
    assert got == (26, 38, 20, -48, 375)
    assert "500 requests or more: 39 runs) have TPOT low on 31 of 33, a median 42% low (86% low to 88% high)" in text
    assert "and throughput high on 26 of 38, a median 20% high (48% low to 375% high)** (35 runs, TPOT low on 27 of 29" in text
    assert (
        "and throughput high on 22 of 34 until the twenty-fifth held-out set joined, 2026-12-07; a median 19% until two runs"
        in text
    )
    assert "had computed, 2026-12-07; a median 18% until SGLang's" in text
    assert "2026-12-07; high on 23 until SGLang 0.5.3 to 0.5.9's compiled router was charged for GLM-4.x" in text
    assert "a median 13% until SGLang's" in text
    assert "FlashAttention 3 MLA call was taken on Hopper from 0.4.5.post1, 2026-12-06; 83% low and 514% high until" in text
    assert (
        "; 33 runs, TPOT low on 25 of 27, a median 40% low, and throughput high on 21 of 32, a median 11% high, until the "
        "nineteenth held-out set joined, 2026-12-06, with two more runs of the October 2024 ROCm build on MI300Xs;" in text
    )
    assert (
        "; 32 runs, TPOT low on 24 of 26, a median 39% low, 82% low to 88% high, and throughput high on 20 of 31, a median "
        "10% high, to 331% high, until the sixteenth held-out set joined, 2026-12-05, the 514% its Qwen3-Coder run" in text
    )
    assert (
        "; 27 runs, TPOT low on 23 of 25, a median 37% low, and throughput high on 17 of 26, a median 11% high, to 146% high, "
        "until the eleventh held-out set joined, 2026-12-05, the 331% its MI300X run of an October 2024 ROCm development build;"
        in text
    )
    assert (
        "ROCm development build; high on 18 of 26, to 148% high, until Qwen3's query and key norms were counted, 2026-12-05;"
        in text
    )
    assert (
        "to 148% high, until Qwen3's query and key norms were counted, 2026-12-05; to 155% high until fp8 matmuls took their own measured figures, 2026-12-04;"
        in text
    )
    assert "; TPOT a median 41% low and throughput high on 19 of 26, to 159% high, until the matmuls' two terms combined" in text
    assert "; high on 20 of 26, a median 12% high, 47% low to 161% high, until each attention call's work per request was" in text
    assert "; a median 11% high until SGLang's overlap scheduler ran the host's time beside the GPU's" in text
    assert (
        "2026-12-04; TPOT a median 42% low and throughput high on 21 of 26, a median 20% high, to 172%, until the routers'"
        in text
    )


def test_v1s_chunk_by_chunk_blocks_are_as_the_simulation_doc_says():
    """docs/simulation.md's example of V1's allocation: QwQ-32B on two H100s, 32,000-token prompts."""
    text = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    q32 = "simonmo-h100x2-qwq32b-vllm082-tp2-random32000x100-rr10"
    case = next(c for c in CASES if c["id"] == q32)
    now, was, got = predict(q32), whole_prompt_blocks(q32), case["measured"]
    tpot = [round(x) for x in (was["mean_tpot_ms"], now["mean_tpot_ms"], got["mean_tpot_ms"])]
    rps = [
        round(x, 2) for x in (was["request_throughput_per_s"], now["request_throughput_per_s"], got["request_throughput_per_s"])
    ]
    assert (tpot, rps) == ([169, 444, 438], [0.39, 0.17, 0.15])
    assert (
        "replay TPOT of 169 ms (whole prompts admitted when they fit) to 444 ms, against 438 ms measured, and from 0.39 to "
        "0.17 requests a second, against 0.15" in text
    )


# Mean TPOTs (ms) the replay gave at 6c13160 (that commit's table), for the paragraphs that quote a change since.
TPOT_AT_6C13160 = {
    "sglcb-glm46-b200x8-c1-1k1k": 9.407,
    "sglcb-qwen3-235b-b200x8-c1-1k1k": 8.637,
    "gpustack-h200x8-deepseek-r1-0528-vllm0110-tp8-sharegpt-c4": 14.198,
    "gpustack-h100-qwen3-8b-vllm0110-sharegpt-c1": 7.151,
    "sglcb-minimaxm25-h100x8-tp8ep8-sglang059-c1-1k1k": 6.640,
    "sglcb-dsr1-b200x8-c1-1k1k": 11.378,
    "sglcb-gptoss120b-b200x8-c1-sharegpt": 3.377,
}


def tpot_error_pct(case_id: str, ms: float) -> int:
    """A TPOT of ``ms`` against the run's measured mean TPOT, in whole percent."""
    measured = next(c for c in CASES if c["id"] == case_id)["measured"]["mean_tpot_ms"]
    return round(100 * (ms / measured - 1))


def test_the_small_kernels_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: each small kernel at a decode trace's 2.7 us (vllm-project/vllm#28084) where an empty
    kernel's 1.3 us stood, and the fused routed-expert call's own kernels no longer charged twice."""
    text = " ".join(DOC.read_text().split())
    # The trace's eleven kernels besides the router's matmul (us), and its 6.4 us of spacing over twelve.
    trace = [3.6, 2.3, 1.9, 1.8, 7.3, 1.0, 2.2, 3.5, 1.1, 1.6, 2.5]
    assert (min(trace), max(trace), float(np.median(trace))) == (1.0, 7.3, 2.2)
    assert round(39.8 - 4.6 - sum(trace), 1) == 6.4 and round(float(np.median(trace)) + 6.4 / 12, 1) == 2.7
    # (MLA_ATTN_LATENCY_S 59 us until re-derived over the module's five projections, 2026-12-06)
    assert DEFAULTS.kernel_gap_s == 2.7e-6 and MLA_ATTN_LATENCY_S == 62e-6
    assert "1.0 to 7.3 us, median 2.2, with 0.5 us between them" in text and "as 2.7 us a small kernel" in text
    # Each run's TPOT at 29d9237 (that commit's table, ms) and now.
    then = {
        "sglcb-glm46-b200x8-c1-1k1k": 8.994,
        "sglcb-qwen3-235b-b200x8-c1-1k1k": 8.223,
        "gpustack-h200x8-deepseek-r1-0528-vllm0110-tp8-sharegpt-c4": 13.94,
        "gpustack-h100-qwen3-8b-vllm0110-sharegpt-c1": 6.899,
        "sglcb-dsr1-b200x8-c1-1k1k": 11.12,
        "sglcb-gptoss120b-b200x8-c1-sharegpt": 3.218,
    }
    # And after both changes (6c13160's table), before the routers' top-k was counted as vLLM runs it.
    moved = {i: (tpot_error_pct(i, then[i]), tpot_error_pct(i, TPOT_AT_6C13160[i])) for i in then}
    assert list(moved.values()) == [(-39, -36), (-19, -15), (-28, -27), (-5, -2), (21, 24), (39, 46)]
    assert "GLM-4.6's TPOT went from 39% low to 36% low (14.81 ms measured; 8.99 ms then, 9.41 after)" in text
    assert "Qwen3-235B's from 19% to 15% low" in text and "one user from 5% to 2% low" in text
    assert "at 4 in flight from 28% to 27% low" in text
    assert "from 21% to 24% high (9.16 ms measured; 11.38 after) and from 39% to 46% high (2.31 ms; 3.38 after)" in text
    # The corpus: 29d9237's table and 6c13160's.
    assert (
        "request throughput MAE went from 37% to 36%, output throughput from 36% to 35% and the TP 8 TPOT bias from -31% to -29%"
        in text
    )
    # The kernels inside the fused routed-expert call carry no latency of their own: DeepSeek-V3 at fp8 has
    # 58 MoE layers, each with alignment, the combine and two quantizations inside the call.
    from kvcalc.engine.steptime import layer_kernels

    k = layer_kernels(resolve_model("deepseek-v3"), None, "fp8")
    assert k.moe_inner == 58 * 4
    assert "the 28 us floor taken from them already holds them" in text


def test_the_routers_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: an MoE layer's top-k charged as vLLM 0.11 runs it (2 kernels, 4 for grouped top-k),
    and the shared experts' activation (2 kernels inside vLLM's fused-MoE op, else 1)."""
    from kvcalc.engine.steptime import layer_kernels

    text = " ".join(DOC.read_text().split())
    # The trace's grouped top-k: sigmoid and bias, topk_with_k2, group_idx_and_topk_idx, the indices' cast (us).
    assert round(1.9 + 1.8 + 7.3 + 1.0, 1) == 12.0
    assert "the four the trace above shows (1.9, 1.8, 7.3 and 1.0 us: 12.0 us where kvcalc charged 2.7)" in text
    assert "a silu and a multiply (2.18 and 2.02 us in the trace's single-stream version)" in text
    # DeepSeek-V3 at fp8: 1,690 kernels before; in each of its 58 MoE layers 3 more for top-k, 2 for the
    # shared experts' activation.
    k = layer_kernels(resolve_model("deepseek-v3"), None, "fp8")
    assert k.total == 1690 + 58 * (3 + 2) == 1980 and round(82.6e-3 / 1980 * 1e6) == 42 and DEFAULTS.eager_host_s == 42e-6
    assert "82.6 ms / 1,980 = 42 us a kernel (49 before)" in text
    # Each run's TPOT at 6c13160 and now, against the measured TPOT. The paragraph quotes what the routers'
    # kernels did (-28, -12, -23, -11, 33 and 50%); SGLang's overlap scheduler, counted since, moved the
    # SGLang runs again, and the paragraph's last sentence says where they stand.
    runs = [i for i in TPOT_AT_6C13160 if i != "gpustack-h100-qwen3-8b-vllm0110-sharegpt-c1"]
    now = {i: predict(i)["mean_tpot_ms"] for i in runs}
    moved = [(tpot_error_pct(i, TPOT_AT_6C13160[i]), tpot_error_pct(i, now[i])) for i in runs]
    # (24, 23) until the MLA floors; (24, -6) and (46, 29) until SGLang's all-reduce and norm fusion, 2026-12-06
    # (-27, -19) and (24, -9) until an MLA layer's down projections were counted as each release runs them, 2026-12-06
    # (-36, -28) until SGLang 0.5.3 to 0.5.9's compiled router was charged for GLM-4.x, 2026-12-07
    assert moved == [(-36, -13), (-15, -12), (-27, -21), (-18, -2), (24, -13), (46, 20)]
    assert "MiniMax-M2.5 9% low since its norms over all heads are charged their kernels, the same day;" in text
    assert (
        "since fp8 fused-MoE calls take their own floor, the same day, MiniMax-M2.5 2% low, DeepSeek-R1 34% high (12.24 ms) "
        "and at 4 in flight on 8 H200s 15.59 ms, 19% low; DeepSeek-R1 23% high (11.31 ms) since SGLang's FlashInfer fp8 MoE "
        "calls on B200 take that kernel's own floor and share, the same day; DeepSeek-R1 6% low (8.63 ms) since an MLA "
        "call takes its GPU's measured floor, the same day; DeepSeek-R1 9% low (8.30 ms) and gpt-oss-120b 20% high (29% "
        "until then) since SGLang's all-reduce and norm fusion is counted, 2026-12-06; DeepSeek-R1 13% low (7.96 ms) and at 4 "
        "in flight on 8 H200s 15.38 ms, 21% low, since an MLA layer's down projections are counted as each release runs "
        "them, the same day; GLM-4.6 13% low (12.84 ms) since SGLang 0.5.3 to 0.5.9's compiled router is charged for "
        "GLM-4.x, 36 us a layer, 2026-12-07, docs/simulation.md; that Qwen3-8B TTFT 33.2 ms, 20% high, since SGLang's "
        "overlap loop takes requests in a step late, the same day, docs/simulation.md)." in text
    )
    quoted = (
        "sglcb-glm46-b200x8-c1-1k1k",
        "gpustack-h200x8-deepseek-r1-0528-vllm0110-tp8-sharegpt-c4",
        "sglcb-dsr1-b200x8-c1-1k1k",
    )
    assert [round(now[i], 2) for i in quoted] == [12.84, 15.38, 7.96]  # GLM-4.6 10.6 until the compiled router
    assert (
        "(since the matmuls' two terms combine as their root-sum-square, GLM-4.6's 10.11 ms and DeepSeek-R1's at 4 in flight on 8 H200s 15.01 ms, 22% low;"
        in text
    )
    assert (
        "those one-user TPOTs stand at: GLM-4.6 32% low (10.10 ms), Qwen3-235B 17% low, MiniMax-M2.5 18% low, "
        "DeepSeek-R1 27% high (11.66 ms), gpt-oss-120b 29% high, and that TTFT at 23.2 ms" in text
    )
    assert "GLM-4.6's TPOT went from 36% to 28% low (10.61 ms; 14.81 measured) and Qwen3-235B's from 15% to 12% low" in text
    assert "at 4 in flight from 27% to 23% low (14.98 ms; 19.36 measured); MiniMax-M2.5" in text
    assert "SGLang 0.5.9 from 18% to 11% low" in text
    assert "DeepSeek-R1 from 24% to 33% high (12.16 ms; 9.16 measured) and gpt-oss-120b from 46% to 50% high" in text
    q8 = "gpustack-h100-qwen3-8b-sglang053post3-sharegpt-c4"
    measured = next(c for c in CASES if c["id"] == q8)["measured"]["mean_ttft_ms"]
    # (26.4 until SGLang's overlap loop took requests in a step late, 2026-12-07)
    assert (round(predict(q8)["mean_ttft_ms"], 1), measured) == (33.2, 27.7)
    assert (
        "since Qwen3's and GLM-4.6's query and key norms are counted, 2026-12-05, GLM-4.6 28% low (10.60 ms), Qwen3-235B 12% "
        "low, and that TTFT 26.4 ms;" in text
    )
    assert "has a TTFT of 23.6 ms where it had 26.1 (27.7 measured)" in text
    # The corpus: 6c13160's table and the one below.
    assert (
        "request throughput MAE went from 36% to 34%, output throughput from 35% to 33%, TTFT from 47% to 46%, TPOT from "
        "27% to 26% and the TP 8 TPOT bias from -29% to -28%" in text
    )
    # (28%, 27%, 45%, 22% and -26% until fp8 fused-MoE calls took their own floor, 2026-12-05)
    # (27%, 26%, 45%, 22% and -25% over 177 runs until the eleventh held-out set joined, 2026-12-05; 31%, 31%, 46%, 23%
    # and -27% over 200 until the twelfth joined, the same day)
    # (33%, 33%, 48%, 23% and -27% over 216 runs until the thirteenth joined and the two sets' runs took their
    # client's lengths, the same day)
    # (31%, 30%, 46%, 22% and -22% over 231 runs until the fifteenth held-out set joined, 2026-12-05; 29%, 29%, 45%, 21%
    # and -22% over 245 until the sixteenth joined, the same day; 31%, 31%, 45%, 21% and -22% over 248 until the
    # seventeenth joined, the same day; 28%, 28%, 41%, 19% and -22% over 283 until the eighteenth joined, the same day;
    # 27%, 27%, 40%, 19% and -22% over 290 until the nineteenth joined, 2026-12-06; 35%, 35%, 46%, 21% and -23% until vLLM
    # 0.7's materialized MLA decode weights were counted, the same day)
    # (35%, 34%, 45%, 21% and -23% over 361 runs until the twentieth held-out set joined, 2026-12-06; 34%, 34%, 45%, 21%
    # and -23% over 370 until its ERNIE-4.5 runs joined, the same day)
    # (34%, 34%, 45%, 20% and -23% over 379 runs until the twenty-first held-out set joined, 2026-12-06; 34%, 33%, 44%,
    # 20% and -20% over 389 until the twenty-second joined, the same day)
    # (34% (362 runs), 33%, 45% (366), 20% (352) and -19% (171) until the twenty-third held-out set joined, 2026-12-06)
    # (34%, 32% and TPOT 20% until vLLM V0's Triton MLA decode on the MI300X was priced, 2026-12-06)
    # (request throughput 32% since the replay took each run's stated memory fraction, 2026-12-06)
    # (request throughput 33% and mean TTFT 44% until a request whose stream carried no text counted as the 2024 client
    # counted it and the fifteen flag-sweep runs replayed their default-flag sibling's recorded requests, 2026-12-06)
    # (request throughput 32% and output throughput 31% until SGLang 0.4.1 to 0.4.4's Triton MLA decode was priced, 2026-12-06)
    # (output throughput 29% until SGLang 0.4.1.post7 to 0.4.4.post3 kept their overlap scheduler under DP attention, the
    # same day: 29.50% to 29.52%, docs/engines.md)
    # (output throughput 30% until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs, 2026-12-06:
    # 29.66% to 29.36%)
    # (request throughput 31% (373 runs), output throughput 29% (406), mean TTFT 40% (377) until the twenty-fourth held-out
    # set joined, 2026-12-07)
    # (output throughput 29% until the RTX 4090's weight reads took its own measured share, 2026-12-07: 28.69% to 28.31%)
    # (request throughput 30% (391 runs) until the twenty-fourth set's sweep runs joined, 2026-12-07: 29.56% to 29.38%)
    # (request throughput 29% until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07: 29.26% to
    # 29.50%)
    # (request throughput 30% and output throughput 28% until releases without a custom all-reduce on ROCm were charged
    # RCCL's, 2026-12-07: 29.50% to 28.50% and 28.15% to 27.23%)
    # (request throughput 29% until SGLang 0.4.0 to 0.4.4's DP gather and all-reduce took their measured times, 2026-12-07: 28.50% to 28.47%)
    # (request throughput 28% until two runs of dennislee22's session found the prompts an earlier run had computed,
    # 2026-12-07: 28.47% to 28.53%)
    # (request throughput 29% (394 runs), output throughput 27% until the twenty-fifth held-out set joined, 2026-12-07:
    # 28.56% to 29.36% and 27.21% to 27.96%)
    # (request throughput 29% (399 runs), output throughput 28% until the twenty-sixth held-out set joined, 2026-12-07:
    # 29.36% to 26.96% and 27.96% to 25.87%)
    # (request throughput 27% (450 runs), output throughput 26% (483 runs) until the twenty-seventh held-out set joined,
    # 2026-12-07: 26.99% to 26.73% and 25.90% to 25.67%)
    # (request throughput 27% (456 runs), output throughput 26% (489 runs) until the twenty-eighth held-out set joined,
    # 2026-12-07: 26.73% to 24.63% and 25.67% to 23.95%)
    # (request throughput 25%, output throughput 24% until the MI325X took the MI300X's measured tables, the same day:
    # 24.65% to 24.09% and 23.97% to 23.44%)
    # (request throughput 24% until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08: 24.09% to 23.28%
    # and 23.44% to 22.67%)
    # (output throughput 23% until TensorRT-LLM's fp8 matmuls took its own measured figures, 2026-12-08: 22.54% to 22.36%;
    # request throughput 23.15% to 22.95%)
    assert "Mean absolute error with the default constants: request throughput 23% (625 runs), output throughput 22%" in text
    # (mean TTFT 44% until SGLang's steps of over 2,048 tokens were charged the norms their all-reduces no longer fuse,
    # 2026-12-06)
    # (mean TTFT 45% until vLLM's sparse-MLA kernel was charged its padded heads, 2026-12-06)
    # (mean TTFT 41% until SGLang 0.4.1 to 0.4.5's prompt steps took their own posted host time a kernel, 2026-12-06:
    # 40.50% to 40.49%)
    # (TP 8 TPOT bias -18% until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs, 2026-12-06:
    # -17.74% to -17.46%)
    # (mean TTFT 41% until the RTX 4090's weight reads took its own measured share, 2026-12-07: 40.67% to 39.71%; 40%
    # until a retracted request rejoined SGLang's waiting queue at its tail, the same day: 39.71% to 39.12%)
    # (mean TPOT 19% and TP 8 TPOT bias -17% until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, the same
    # day: 18.56% to 18.46% and -17.24% to -18.05%)
    # (mean TTFT 39% until two runs of dennislee22's session found the prompts an earlier run had computed, 2026-12-07:
    # 38.91% to 38.29%)
    # (mean TTFT 38% until SGLang's overlap loop took requests in a step late, the same day: 38.23% to 37.13%)
    # (mean TTFT 37% (395 runs), mean TPOT 18% (363 runs) until the twenty-fifth held-out set joined, 2026-12-07: 37.13% to
    # 37.21% and 18.38% to 18.84%; none of its runs is at TP 8)
    # (mean TTFT 37% (400 runs), mean TPOT 19% (368 runs) until the twenty-sixth held-out set joined, 2026-12-07: 37.21% to
    # 35.55% and 18.84% to 17.82%; none of its runs is at TP 8)
    # (mean TTFT 36% until SGLang's overlap loop ran a step past a request's end, the same day: 35.55% to 34.50%)
    # (mean TTFT 34% (451 runs), mean TPOT 18% (419 runs), TP 8 TPOT bias -18% (181 runs) until the twenty-seventh held-out
    # set joined, 2026-12-07: 34.50% to 34.19%, 17.63% to 17.45% and -17.70% to -17.21%)
    # (mean TTFT 34% (457 runs), mean TPOT 17% (425 runs), TP 8 TPOT bias -17% (187 runs) until the twenty-eighth held-out
    # set joined, 2026-12-07: 34.19% to 35.09%, 17.45% to 17.32% and -17.21% to -14.39%)
    # (mean TTFT 35% until TensorRT-LLM's batch waiting was modelled, the same day: 35.09% to 34.32%)
    # (TP 8 TPOT bias -14% until the MI355X took its own measured GEMM and all-reduce figures, 2026-12-08: -13.67% to
    # -12.64%; mean TTFT 33.90% to 33.80%, mean TPOT 17.05% to 16.57%)
    # (mean TPOT 17% until TensorRT-LLM deployments took its own measured all-reduce, 2026-12-08: 16.57% to 16.36%)
    # (mean TTFT 34% until TensorRT-LLM's fp8 matmuls took its own measured figures, the same day: 33.75% to 33.31%; mean
    # TPOT 16.36% to 16.09%, TP 8 TPOT bias -12.81% to -12.84%)
    assert "mean TTFT 33% (626 runs), mean TPOT 16% (594 runs); TP 8 TPOT bias -13% (243 runs)" in text


def test_the_sglang_eager_decode_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: the runs of 1,000 requests at once under SGLang, with decode batches past its
    largest CUDA graph charged the host's time."""
    text = " ".join(DOC.read_text().split())
    ids = [
        "gpustack-h200x8-glm46-sglang053-tp8-bf16-sharegpt-inf",
        "gpustack-h200x8-glm46-fp8-sglang053-tp8-sharegpt-inf",
        "gpustack-h200x4-glm46-fp8-sglang053-tp4-sharegpt-inf",
        "gpustack-h100x8-glm46-fp8-sglang053-tp8-sharegpt-inf",
        "gpustack-h200x8-deepseek-r1-0528-sglang053-tp8-sharegpt-inf",
        "sgl1362-sglang030-llama31-405b-fp8-h100sxmx8-sharegpt-rps16-n1000",
    ]
    by_id = {c["id"]: c for c in CASES}
    tpot = [round(-errors(by_id[i])["mean_tpot_ms"] * 100) for i in ids]
    # (the last 30% until each attention call's work per request was charged; the third 30% until fp8 fused-MoE calls
    # took their own floor, 2026-12-05)
    # (the fifth 67% until 0.5.3's one matmul for an MLA layer's two down projections was counted, 2026-12-06)
    # (the third 31% until SGLang 0.5.3 to 0.5.9's compiled router was charged for GLM-4.x, 2026-12-07)
    # (the fifth 68% until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07)
    assert tpot == [50, 43, 30, 77, 71, 26]
    assert "since SGLang's shared expert runs inside DeepSeek-V3's fused MoE call (the same day), DeepSeek-R1's 71% low." in text
    assert "since fp8 fused-MoE calls take their own floor (the same day), the fp8 one on 4 H200s 31% low;" in text
    assert (
        "compiled router is charged for GLM-4.x (2026-12-07, docs/simulation.md), 30% low, and GLM-4.6's on 8 H200s 141.3 ms;"
        in text
    )
    assert (
        "since fp8 matmuls with per-tensor or per-channel scales take their own measured figures, GLM-4.6-FP8's on 8 H100s 77% low and the 405B's 26% low, its TTFT 108% high;"
        in text
    )
    assert (
        "Since the matmuls' two terms combine as their root-sum-square (2026-12-04) these six stand at 53%, 45%, 33%, 78%, "
        "67% and 27% low (GLM-4.6's 134.2 ms), the 405B's TTFT 103% high;" in text
    )
    assert "from 33% to 30% low (31% since each attention call's work per request is charged, 2026-12-04)" in text
    assert round(errors(by_id[ids[-1]])["mean_ttft_ms"] * 100) == 108
    assert "goes from 71% to 89% high (77% since each attention call's work per request is charged;" in text
    # (140.3 until the compiled router, 2026-12-07)
    assert (round(predict(ids[0])["mean_tpot_ms"], 1), round(by_id[ids[0]]["measured"]["mean_tpot_ms"], 1)) == (141.3, 282.9)
    assert "since GLM-4.6's query and key norms are counted (2026-12-05), GLM-4.6's three 50%, 43% and 30% low (140.3 ms" in text
    assert "GLM-4.6's TPOT on 8 H200s from 57% to 52% low (135.9 ms, 135.5 since SGLang's overlap scheduler" in text
    assert (
        "runs the host's time beside the GPU's, 135.7 since each attention call's work per request is charged; 282.9 measured)"
        in text
    )
    assert "282.9 measured), at fp8 from 56% to 45% low" in text
    assert "at fp8 on 4 H200s from 40% to 32% low, at fp8 on 8 H100s from 82% to 77% low; DeepSeek-R1's on 8 H200s from" in text
    assert "71% to 66% low; Llama-3.1-405B-FP8's under SGLang 0.3.0 on 8 H100s from 33% to 30% low" in text
    assert "goes from 71% to 89% high" in text


def test_the_attention_request_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: each decode attention call's work per request and KV head, from the measured
    kernel tables; what it moved when it came (the figures of that day, before the matmuls' root-sum-square,
    below), and the spec figures it took."""
    text = " ".join(DOC.read_text().split())
    assert resolve_gpu("h100-sxm").attention.request_head_ns == 24.5  # type: ignore[union-attr]
    assert (
        "TPOT 110.5 ms against 226.0 measured (105.4 before), throughput 59% high (65%); gpt-oss-20b on one H100, TPOT 3% low (7%)"
        in text
    )
    assert (
        "Over the corpus request throughput MAE went from 35.1% to 34.9%, output throughput from 33.9% to 33.6%, TTFT from "
        "46.6% to 46.5%, TPOT from 26.2% to 25.9% and the TP 8 TPOT bias from -29.2% to -29.1%" in text
    )


def test_the_matmul_root_sum_square_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: a step's matmuls as the root-sum-square of their weights' and their FLOPs' times,
    with the fused-MoE share refitted the same way; the runs it moves and the corpus as it stands since."""
    text = " ".join(DOC.read_text().split())
    by_id = {c["id"]: c for c in CASES}
    q14 = "gpustack-h100-qwen3-14b-vllm0110-sharegpt-inf"
    assert (
        round(predict(q14)["mean_tpot_ms"], 1) == 112.2 and round(100 * errors(by_id[q14])["output_throughput_tok_per_s"]) == 53
    )
    assert "Qwen3-14B on one H100 at 1,000 requests at once, TPOT 111.9 ms (110.5 before), throughput 54% high (59%;" in text
    assert "112.2 ms and 53% since its query and key norms are counted, 2026-12-05);" in text
    per: dict[str, list[float]] = {k: [] for k, _ in METRICS}
    tp8 = []
    for c in CASES:
        e = errors(c)
        for k, v in e.items():
            per[k].append(abs(v))
        if int(c["tp"]) == 8 and "mean_tpot_ms" in e:
            tp8.append(e["mean_tpot_ms"])
    now = [round(100 * sum(per[k]) / len(per[k]), 1) for k, _ in METRICS] + [round(100 * sum(tp8) / len(tp8), 1)]
    assert now == NOW_MAE
    assert (
        "Over the corpus request throughput MAE went from 34.9% to 34.7%, output throughput from 33.6% to 33.4%, TTFT from "
        "46.5% to 47.2%, TPOT from 25.9% to 25.7% and the TP 8 TPOT bias from -29.1% to -28.4%" in text
    )
    assert "(TTFT 47.3% since fp8 matmuls with per-tensor or per-channel scales take their own measured figures;" in text
    assert "request throughput 34.6% since the MI300X's all-reduces at TP 2 and 4 take measured figures, 2026-12-05;" in text
    assert "33.2%, output throughput 32.0%, TTFT 47.2% and TPOT 25.4% since SGLang's DP-attention ranks step with" in text
    assert "33.5%, 32.4%, 46.8% and 25.2% since the ShareGPT runs whose clients recorded" in text
    assert "32.4%, 31.3%, 46.4%, 24.7% and -27.5% since the MI300X's fp8 matmuls take aiter's measured figures" in text
    assert "30.6%, 29.6%, 46.3%, 23.9% and -27.5% since SGLang's Triton decode kernel is priced where a run states it" in text
    assert "30.0%, 28.9%, 46.3%, 23.5% and -27.5% since its blocks past those the GPU runs at once wait their turn" in text
    assert "29.2%, 28.0%, 46.0%, 23.2% and -26.9% since Gated DeltaNet layers are charged the kernels they launch" in text
    assert "28.6%, 27.4%, 45.6%, 22.8% and -26.4% since Qwen3's and GLM-4.6's query and key norms and Qwen3-Next's" in text
    assert "27.8%, 26.6%, 45.4%, 22.4% and -25.6% since MiniMax-M2's norms over all heads are charged their kernels" in text
    assert "27.3%, 26.1%, 45.5%, 22.1% and -24.8% since fp8 fused-MoE calls take their own floor" in text
    assert "27.3%, 26.1%, 45.4%, 22.0% and -25.0% since SGLang's FlashInfer fp8 MoE calls on B200 take that kernel's" in text
    assert "27.3%, 26.4%, 45.4%, 22.1% and -25.5% since an MLA call takes its GPU's measured floor" in text
    assert "27.2%, 26.3%, 45.4%, 22.1% and -25.4% since the MI300X's all-reduces at TP 8 take its TP 4 table's latency" in text
    assert "31.3%, 30.7%, 46.0%, 23.1% and -27.3% since the eleventh held-out set joined, the same day, below;" in text
    assert "33.4%, 32.7%, 48.1%, 23.4% and -26.7% since the twelfth joined, the same day, below;" in text
    assert "32.0%, 31.4%, 46.5%, 22.7% and -25.1% since the thirteenth joined and the two sets' runs are replayed" in text
    assert "30.9%, 30.4%, 45.6%, 22.1% and -22.6% since the fourteenth joined, the same day, below;" in text
    assert "30.6%, 30.2%, 45.6%, 22.0% and -22.0% since its three TensorRT-LLM runs at EP = TP joined, the same day;" in text
    assert "30.6%, 30.1%, 45.6%, 21.8% and -22.2% since TensorRT-LLM's overlap scheduler runs the host's time" in text
    assert "29.3%, 28.9%, 44.7%, 20.8% and -22.2% since the fifteenth held-out set joined, the same day, below;" in text
    assert "31.2%, 30.7%, 44.6%, 21.0% and -22.2% since the sixteenth joined, the same day, below," in text
    assert "31.1%, 30.7%, 44.5%, 21.0% and -22.2% since Qwen3-VL's query and key norms are counted, the same day;" in text
    assert "28.0%, 27.7%, 40.5%, 19.0% and -22.2% since the seventeenth held-out set joined, the same day, below;" in text
    assert "27.4%, 27.2%, 40.4%, 18.5% and -22.2% since the eighteenth joined, the same day, below;" in text
    assert "35.4%, 34.9%, 45.7%, 20.7% and -23.1% since the nineteenth joined, 2026-12-06, below;" in text
    assert "34.6%, 34.1%, 45.4%, 20.6% and -22.9% since vLLM 0.7's materialized MLA decode weights are counted" in text
    assert "34.3%, 33.8%, 45.3%, 20.5% and -22.9% since the twentieth held-out set joined, the same day, below;" in text
    assert "34.2%, 33.8%, 45.0%, 20.3% and -22.9% since its ERNIE-4.5 runs joined, the same day, below;" in text
    assert (
        "34.2%, 33.4%, 44.4%, 20.4% and -20.0% since the twenty-first joined, the same day, below; 34.2%, 33.4%, 44.4%, 20.5% and -20.1% since vLLM 0.7's materialized MLA path is charged five matmuls a layer, the same day, docs/engines.md; 34.3%, 33.4%, 44.2%, 20.5% and -20.1% since SGLang's --scheduler-recv-interval is modelled, the same day, above; 34.3%, 32.8%, 44.3%, 20.2% and -18.1% since the twenty-second held-out set joined, the same day, below; 34.3%, 32.7%, 44.3%, 20.1% and -18.5% since SGLang's all-reduce and norm fusion is counted, the same day, above; 34.3%, 32.7%, 44.5%, 20.0% and -18.9% since the MLA down projections are counted as each release runs them, the same day, docs/simulation.md; "
        "34.3%, 32.6%, 44.5%, 20.0% and -19.0% since SGLang's steps of over 2,048 tokens are charged the norms their all-reduces no longer "
        "fuse, the same day, docs/engines.md; 33.8%, 32.2%, 44.6%, 19.7% and -18.4% since the twenty-third held-out set joined, the "
        "same day, below; 33.8%, 32.1%, 44.5%, 19.7% and -18.4% since vLLM's sparse-MLA kernel is charged its padded heads, the "
        "same day, docs/engines.md; 33.0%, 31.5%, 44.5%, 19.4% and -17.7% since vLLM V0's Triton MLA decode on the MI300X is "
        "priced, the same day, docs/engines.md; 32.9%, 31.4%, 43.6%, 19.3% and -17.6% since the B200's Triton fused-MoE calls take "
        "their own measured share, the same day, docs/engines.md; 32.4%, 30.9%, 40.6%, 19.2% and -18.0% since a request whose "
        "stream carried no text counts as the 2024 client counted it and dstack's flag sweep replays its default-flag "
        "sibling's requests, the same day, above; 32.0%, 30.5%, 40.5%, 19.2% and -18.0% since the replay takes each run's "
        "stated memory fraction, the same day, above; 30.9%, 29.5%, 40.5%, 19.2% and -17.5% since SGLang 0.4.1 to 0.4.4's "
        "Triton MLA decode is priced, the same day, docs/engines.md; 31.1%, 29.7%, 40.6%, 19.1% and -17.7% since SGLang's "
        "FlashAttention 3 MLA call is taken on Hopper from 0.4.5.post1, the same day, docs/engines.md; 31.1%, 29.7%, 40.5%, 19.1% "
        "and -17.7% since NVFP4 checkpoints' matmuls run at the fp4 peak and their experts on their engines' measured kernels, "
        "the same day, docs/engines.md; 30.8%, 29.4%, 40.4%, 19.0% and -17.5% since vLLM V0's decodes past "
        "max_seq_len_to_capture run without CUDA graphs, the same day, docs/engines.md; 30.0%, 28.7%, 40.7%, 19.0% and -17.5% "
        "since the twenty-fourth held-out set joined, 2026-12-07, below; 29.6%, 28.3%, 39.7%, 18.7% and -17.5% since the RTX "
        "4090's weight reads take its own measured share, the same day, below; 29.4%, 28.2%, 39.7%, 18.7% and -17.5% since "
        "the twenty-fourth set's three sweep runs joined, the same day, below; 29.4%, 28.2%, 39.1%, 18.7% and -17.5% since a "
        "retracted request rejoins SGLang's waiting queue at its tail, the same day, docs/simulation.md; 29.3%, 28.1%, "
        "39.1%, 18.6% and -17.4% since a norm all-reduce the custom all-reduce declines goes through NCCL, the same day, "
        "docs/simulation.md; 29.3%, 28.0%, 39.1%, 18.6% and -17.2% since SGLang 0.5.3 to 0.5.9's compiled router is charged "
        "for GLM-4.x, the same day, docs/simulation.md; 29.5%, 28.1%, 39.2%, 18.5% and -18.0% since SGLang's shared expert "
        "runs inside DeepSeek-V3's fused MoE call, the same day, docs/simulation.md; 28.5%, 27.2%, 39.1%, 18.3% and -17.7% "
        "since releases without a custom all-reduce on ROCm are charged RCCL's, the same day, docs/simulation.md; 28.5%, "
        "27.2%, 39.1%, 18.2% and -17.7% since data-parallel attention's gather and scatter take NCCL's measured times, the "
        "same day, docs/simulation.md; 28.5%, 27.1%, 39.1%, 18.3% and -17.7% since SGLang 0.4.0 to 0.4.4's DP gather and "
        "all-reduce take their measured times, the same day, docs/simulation.md; 28.5%, 27.1%, 38.9%, 18.3% and -17.6% "
        "since SGLang 0.5.10 to 0.5.12 run prompt steps without CUDA graphs where the routed experts run on FlashInfer's "
        "TensorRT-LLM MoE runner, the same day, docs/engines.md; 28.5%, 27.2%, 38.3%, 18.3% and -17.6% since two runs of "
        "dennislee22's session find the prompts an earlier run on the same server had computed, the same day, above; 28.6%, "
        "27.2%, 38.2%, 18.4% and -17.7% since two sgl-cookbook pages' later runs find the prompts their earlier runs sent, "
        "the same day, above; 28.6%, 27.2%, 37.1%, 18.4% and -17.7% since SGLang's overlap loop takes requests in a step "
        "late, the same day, docs/simulation.md; 29.4%, 28.0%, 37.2%, 18.8% and -17.7% since the twenty-fifth held-out set "
        "joined, the same day, below; 27.0%, 25.9%, 35.6%, 17.8% and -17.7% since the twenty-sixth held-out set joined, the "
        "same day, below; 27.0%, 25.9%, 34.5%, 17.6% and -17.7% since SGLang's overlap loop runs a step past a request's "
        "end, the same day, docs/simulation.md; 26.7%, 25.7%, 34.2%, 17.4% and -17.2% since the twenty-seventh held-out set "
        "joined, the same day, below; 24.6%, 24.0%, 35.1%, 17.3% and -14.4% since the twenty-eighth held-out set joined, the "
        "same day, below; 24.6%, 24.0%, 34.3%, 17.3% and -14.4% since TensorRT-LLM's batch waiting is modelled, the same "
        "day, below; 24.6%, 24.0%, 34.1%, 17.3% and -14.3% since vLLM's cudagraph mode is modelled, the same day, below; "
        "24.1%, 23.4%, 33.9%, 17.1% and -13.7% since the MI325X takes the MI300X's measured tables, the same day, below)" in text
    )


NOW_MAE = [23.0, 22.4, 33.3, 16.1, -12.8]
# [28.5, 27.1, 38.9, 18.3, -17.6] until dennislee22's warm-server runs, [28.5, 27.2, 38.3, 18.3, -17.6] until two
# sgl-cookbook pages' later runs found their earlier runs' prompts (2026-12-07), [28.6, 27.2, 38.2, 18.4, -17.7] until
# SGLang's overlap loop took requests in a step late (the same day), [28.6, 27.2, 37.1, 18.4, -17.7] until the
# twenty-fifth held-out set joined (the same day), [29.4, 28.0, 37.2, 18.8, -17.7] until the twenty-sixth joined (the
# same day), [27.0, 25.9, 35.6, 17.8, -17.7] until SGLang's overlap loop ran a step past a request's end (the same day),
# [27.0, 25.9, 34.5, 17.6, -17.7] until the twenty-seventh held-out set joined (the same day), [26.7, 25.7, 34.2, 17.4,
# -17.2] until the twenty-eighth joined (the same day), [24.6, 24.0, 35.1, 17.3, -14.4] until TensorRT-LLM's batch
# waiting was modelled (the same day), [24.6, 24.0, 34.3, 17.3, -14.4] until vLLM's cudagraph mode was modelled (the
# same day), [24.6, 24.0, 34.1, 17.3, -14.3] until the MI325X took the MI300X's measured tables (the same day),
# [24.1, 23.4, 33.9, 17.1, -13.7] until the MI355X took its own measured GEMM and all-reduce figures (2026-12-08),
# [23.3, 22.7, 33.8, 16.6, -12.6] until TensorRT-LLM deployments took its own measured all-reduce (the same day),
# [23.1, 22.5, 33.7, 16.4, -12.8] until TensorRT-LLM's fp8 matmuls took its own measured figures (the same day)
"""The serving corpus's request throughput, output throughput, TTFT and TPOT MAE and TP 8 TPOT bias, %."""


def test_the_fp8_matmul_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: fp8 matmuls of per-tensor and per-channel checkpoints at the GPU's measured fp8
    figures; block-scaled ones keep the bf16 figures."""
    text = " ".join(DOC.read_text().split())
    for name, lat, share in (("h100-sxm", 3.3, 0.78), ("h200", 3.6, 0.74), ("b200", 3.7, 0.66), ("gb200", 3.8, 0.67)):
        g = resolve_gpu(name).gemm_fp8
        assert g is not None and (g.latency_us, g.bandwidth_share) == (lat, share)
    assert (
        "3.3 us + bytes / (0.78 x bandwidth) on H100, 3.6 and 0.74 on H200, 3.7 and 0.66 on B200, 3.8 and 0.67 on GB200" in text
    )
    assert {resolve_model(m).quantization.method for m in ("deepseek-v3", "minimax-m2", "qwen3-235b-a22b-fp8")} == {"fp8-block"}  # type: ignore[union-attr]
    glm = sorted((c for c in CASES if c["gpu"] == "h100-sxm" and c["model"] == "glm-4.6"), key=lambda c: c["engine"])
    # 1.9 and 2.5 as the change left them; 2.4 since GLM-4.6's query and key norms are counted, 1.8 and 2.4 since fp8
    # fused-MoE calls take their own floor (the eighth set's paragraph); 1.7 and 2.4 since SGLang 0.5.3 to 0.5.9's
    # compiled router is charged for GLM-4.x, 2026-12-07 (the same paragraph).
    assert [round(1 + errors(c)["request_throughput_per_s"], 1) for c in glm] == [1.7, 2.4]
    assert "GLM-4.6-FP8 on 8 H100s from serving 2.0 and 2.6 times less than kvcalc to 1.9 and 2.5" in text
    big = [errors(c) for c in CASES if c.get("held_out") == "2026-12-02 (second set)" and c["model"] == "llama3.1-405b-fp8"]
    # The change's own move, as the paragraph quotes it; 1-2% low since the runs' recorded lengths are replayed.
    assert sorted(round(-e["request_throughput_per_s"] * 100) for e in big) == [1, 1, 2]
    assert "19-20% low on throughput on 8 H100s under vLLM 0.6.3 (17-18%)" in text


def test_the_vllm_fp8_compute_share_trial_is_as_docs_simulation_says(monkeypatch):
    """docs/simulation.md (eta_c_gemm): vLLM's own fp8 tables' share of the peak, tried in place of eta_c_fp8 where
    TensorRT-LLM's took its own (2026-12-08), moved the runs away and was not taken."""
    from kvcalc.engine.steptime import fp8_block_scaled, matmul_dtype

    text = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    share = {"h100-sxm": 0.46, "h200": 0.51, "b200": 0.42}
    runs = [
        c
        for c in CASES
        if c["gpu"] in share
        and not c["engine"].startswith("trtllm")
        and matmul_dtype(resolve_model(c["model"]), resolve_gpu(c["gpu"]), c.get("weight_dtype")) == "fp8"
        and not fp8_block_scaled(resolve_model(c["model"]), c.get("weight_dtype"))
    ]
    now = {c["id"]: errors(c) for c in runs}
    module = sys.modules[__name__]
    real = module.resolve_gpu

    def tried_gpu(name: str) -> Any:
        g = real(name)
        if g.name not in share or g.gemm_fp8 is None:
            return g
        return dataclasses.replace(g, gemm_fp8=dataclasses.replace(g.gemm_fp8, compute_share=share[g.name], compute_dtype="fp8"))

    monkeypatch.setattr(module, "resolve_gpu", tried_gpu)
    tried = {}
    for c in runs:
        got = predict.__wrapped__(c["id"])
        tried[c["id"]] = {k: got[k] / float(c["measured"][k]) - 1 for k, _ in METRICS if c["measured"].get(k)}

    def mae(err: dict[str, dict[str, float]], k: str) -> float:
        return round(100 * sum(abs(e[k]) for e in err.values()) / len(err), 1)

    def bias(err: dict[str, dict[str, float]], k: str) -> float:
        return round(100 * sum(e[k] for e in err.values()) / len(err), 1)

    assert len(runs) == 52 and all(len(e) == 4 for e in (*now.values(), *tried.values()))
    keys = ("request_throughput_per_s", "mean_ttft_ms", "mean_tpot_ms")
    assert [mae(now, k) for k in keys] == [11.0, 24.6, 13.3] and [mae(tried, k) for k in keys] == [13.1, 25.2, 15.3]
    assert (bias(now, "mean_ttft_ms"), bias(tried, "mean_ttft_ms")) == (2.6, -20.7)
    assert (
        "on the 52 corpus runs whose fp8 matmuls take `gemm_fp8` on those GPUs (vLLM and SGLang), request throughput MAE "
        "11.0% -> 13.1%, TTFT 24.6% -> 25.2% (bias +2.6% -> -20.7%), TPOT 13.3% -> 15.3%" in text
    )
    assert "a median 0.46 (H100 SXM), 0.51 (H200) and 0.42 (B200) of the fp8 peak; tried in place of `eta_c_fp8`" in text


def test_the_async_scheduling_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: vLLM from 0.14 runs its host's time beside the GPU's; the runs it moves."""
    text = " ".join(DOC.read_text().split())
    six = [c for c in CASES if c.get("held_out") == "2026-12-02 (sixth set)"]
    light = [errors(c)["mean_tpot_ms"] for c in six if not c.get("weight_dtype") and c["max_concurrency"] <= 16]
    # (15-17% until the matmuls' two terms combined as their root-sum-square; the paragraph quotes the change's own move;
    # 17-18% until the RTX 4090's weight reads took its own measured share, 2026-12-07: the sixth set's paragraph has it)
    assert (round(100 * min(light)), round(100 * max(light))) == (5, 6)
    # (the eighth set's six; the twenty-seventh set's later points came after)
    q32 = [c for c in CASES if c["model"] == "qwen3-32b" and c["engine"] == "vllm@0.14" and c.get("held_out") != TWENTYSEVENTH]
    tpot = [errors(c)["mean_tpot_ms"] for c in q32]
    # (3-13% low until each attention call's work per request was charged; 1-11% low until Qwen3's query and key norms
    # were counted, 2026-12-05: the eighth set's paragraph has them since)
    assert len(q32) == 6 and (round(-100 * max(tpot)), round(-100 * min(tpot))) == (-1, 8)
    assert "their light-load TPOTs 15-17% high where they were 18-20%" in text
    assert "Qwen3-32B's six runs under vLLM 0.14 at 100 users (the eighth set) move away, their TPOTs 3-13% low" in text
    from kvcalc.engine.engines import engine

    # SGLang's overlap scheduler: default from 0.3.6 (server_args.py disable_overlap_schedule False), opt-in
    # before (enable_overlap_schedule False in 0.3.4.post1 and 0.3.5); DP attention turned it off to 0.4.1.
    modes = [engine(e).async_scheduling for e in ("sglang@0.3", "sglang@0.3.6", "sglang@0.4.0", "sglang@0.4.5.post3", "sglang")]
    assert modes == ["none", "pp1-no-dp", "pp1-no-dp", "pp1", "pp1"]
    assert "over the corpus request throughput MAE went from 33.5% to 35.1%, output throughput from 32.2% to 33.9%" in text


def test_the_sampling_runs_are_as_the_simulation_doc_says():
    """docs/simulation.md ("Not charged: the sampler"): the benchmark clients send temperature 0
    until vllm-project/vllm#32723 (first in 0.15); of the corpus only the runs of a later
    `vllm bench serve` without --temperature, or whose client set its own sampling, sample."""

    def client_text(c: dict[str, Any]) -> str:
        raw = SERVING / str(c.get("raw", ""))
        extra = raw.read_text() if raw.suffix == ".txt" and raw.is_file() else ""
        # The client's own warning names the flag it was run without ("For the old behavior, include --temperature=0").
        return str(c["source"]) + "\n" + extra.replace("include --temperature=0", "")

    def release(c: dict[str, Any]) -> tuple[int, ...]:
        v = str(c.get("engine_as_run", "")).split("@")[-1].split()[0]
        return tuple(int(x) for x in v.split(".")[:2] if x.isdigit())

    later_client = [
        c["id"]
        for c in CASES
        if "vllm bench serve" in client_text(c)
        and "--temperature" not in client_text(c)
        and (release(c) >= (0, 15) or "main202606" in c["id"])
    ]
    own_flags = [c["id"] for c in CASES if "temperature 0.7" in str(c.get("inferred", {}).get("sampling", ""))]
    assert len([i for i in later_client if i.startswith("violetquartz-")]) == 12
    assert len([i for i in later_client if i.startswith("vob-")]) == 34
    assert len([i for i in later_client if i.startswith("adithya-")]) == 7
    assert [i for i in later_client if not i.startswith(("violetquartz-", "vob-", "adithya-"))] == [
        "vllm43232-b200x4-qwen3-235b-fp8-main202606-random30000x1000-c64",
        "stella-4090-qwen25coder7b-vllm0230-sharegpt-rinf",
        "stella-4090-qwen25coder7b-vllm0230-sharegpt-r1",
        "lifenyan-4090-qwen25-7b-vllm0251-rand512-256-c16",
    ]
    assert own_flags == ["vllm17788-h100nvl-qwen3-32b-vllm085-sharegpt-inf-seqs32"]
    text = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    assert f"Of the serving corpus (docs/accuracy.md) {len(later_client) + len(own_flags)} runs sample" in text


def test_a_runs_recorded_lengths_are_its_own():
    """tests/serving/lengths: each file holds as many requests as its run completed, and their prompt and
    output tokens add up to the run's stated totals."""
    files = sorted(LENGTHS.glob("*.json"))
    assert len(files) == 15
    by_id = {c["id"]: c for c in CASES}
    for f in files:
        case = by_id[f.stem]
        d = json.loads(f.read_text())
        assert d["source"].startswith("https://github.com/") and case["url"].split("#")[0].endswith(
            d["source"].split("/blob/")[1]
        )
        m = case["measured"]
        assert len(d["input_lens"]) == len(d["output_lens"]) == m["completed"], f.stem
        assert sum(d["input_lens"]) == m["total_input_tokens"] and sum(d["output_lens"]) == m["total_output_tokens"], f.stem
        # The requests its client recorded no TTFT for are those of no output (the 2024 client: Workload.silent).
        assert d.get("silent", []) == [i for i, x in enumerate(d["output_lens"]) if x == 0], f.stem
    # Runs replayed with a sibling's record: the same checkpoint, build, count and prompt tokens, and within
    # 2% of its output tokens (greedy decoding of the same prompts).
    borrowed = [c for c in CASES if c.get("lengths_from")]
    assert len(borrowed) == 15
    for c in borrowed:
        sib, m = by_id[c["lengths_from"]], c["measured"]
        d = json.loads((LENGTHS / f"{sib['id']}.json").read_text())
        assert (c["engine_as_run"].split(" ")[1], c["model"], c["gpu"], c["tp"]) == (
            sib["engine_as_run"].split("@")[1].split(" ")[0],
            sib["model"],
            sib["gpu"],
            sib["tp"],
        ), c["id"]
        assert len(d["input_lens"]) == m["completed"] and sum(d["input_lens"]) == m["total_input_tokens"], c["id"]
        assert abs(sum(d["output_lens"]) / m["total_output_tokens"] - 1) < 0.02, c["id"]


def test_the_empty_outputs_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: requests that streamed no text scored as the 2024 client scored them, and dstack's flag sweep
    replayed with its default-flag sibling's requests (2026-12-06)."""
    text = " ".join(DOC.read_text().split())
    by_id = {c["id"]: c for c in CASES}
    quiet = {f.stem: json.loads(f.read_text()).get("silent", []) for f in LENGTHS.glob("*.json")}
    dstack = sorted(len(v) for k, v in quiet.items() if k.startswith("dstack-405bfp8"))
    assert (len(dstack), dstack[0], dstack[-1]) == (6, 378, 379)
    assert sorted(len(v) for k, v in quiet.items() if k.startswith("lambda_")) == [2, 2, 2, 2]
    assert "378 or 379 of each dstack run's 1,000 were such" in text

    def pct(prefix: str, metric: str) -> list[int]:
        return sorted(round(100 * errors(c)[metric]) for i, c in by_id.items() if i.startswith(prefix))

    # Before: the H100 runs' TTFT 70-117% high, the MI300X runs' 6-81% low, LambdaLabs' 4-20% high.
    assert pct("dstack-405bfp8-h100x8", "mean_ttft_ms") == [4, 4, 29]
    # As quoted below, -89% and 1.8 to 2.1 times, until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07 (docs/simulation.md).
    assert pct("dstack-405bfp8-mi300x8", "mean_ttft_ms") == [-87, -78, -42]
    thr = [1 + errors(c)["request_throughput_per_s"] for i, c in by_id.items() if i.startswith("dstack-405bfp8-mi300x8")]
    assert (round(min(thr), 1), round(max(thr), 1)) == (1.7, 2.0)
    assert pct("lambda_llama3_70b", "mean_ttft_ms") == [-18, -14, -11, -6]
    assert (
        "the three H100 runs' TTFT goes from 70-117% high to 4-29% high, the MI300X runs' from 6-81% low to 42-89% low "
        "(kvcalc serves 1.8 to 2.1 times what they measured), LambdaLabs' from 4-20% high to 6-18% low." in text
    )
    # The sweep, before: throughput 9-20% low, TTFT 67% low to 152% high, TPOT at 1,024 sequences 48-55% high.
    sweep = pct("dstack405b-h100x8", "request_throughput_per_s")
    assert (len(sweep), sweep[0], sweep[-1]) == (15, -4, 15)
    ttft = pct("dstack405b-h100x8", "mean_ttft_ms")
    assert (ttft[0], ttft[-1]) == (-87, 23)
    assert sorted(round(100 * errors(c)["mean_tpot_ms"]) for i, c in by_id.items() if "seqs1024" in i) == [30, 40, 42]
    assert (
        "Their throughput goes from 9-20% low to between 4% low and 15% high, their TTFT from 67% low to 152% high to "
        "between 87% low and 23% high; the three at 1,024 sequences and 1,024 batched tokens keep TPOTs 30-42% high "
        "(48-55% before)." in text
    )
    assert (
        "Over the corpus: request throughput MAE 32.9% to 32.4%, output throughput 31.4% to 30.9%, TTFT 43.6% to 40.6%, "
        "TPOT 19.3% to 19.2%, the TP 8 TPOT bias -17.6% to -18.0%." in text
    )


FRACTION_FLAGS = (
    r"--gpu[-_]memory[-_]utilization[= ]([01]?\.[0-9]+)",
    r"--mem[-_]fraction[-_]static[= ]([01]?\.[0-9]+)",
    r"--mem-frac[= ]([01]?\.[0-9]+)",
    r"'gpu_memory_utilization': ([01]?\.[0-9]+)",
    r"(?:gpu_memory_utilization|mem_fraction_static)=([01]?\.[0-9]+)",
    r"free_gpu_memory_fraction[=: ]+([01]?\.[0-9]+)",
)
"""How a run's notes state its server's memory fraction: a flag on its command line, or its log's arguments."""


def test_a_runs_stated_memory_fraction_is_the_one_it_replays():
    """cases.yaml: every run whose server command or log states a memory fraction carries it as ``util``, which the
    replay takes (but where the run gives its pool, kv_cache_gib), and no run carries one it does not state."""
    import re

    def unknown(cid: str) -> bool:
        # datacrunch-research's 405B runs: docker_dev_commands.txt's copy of the command adds --mem-frac 0.87, the .sh
        # copy does not, and which ran is not said. The H20 run: the PR states no fraction, and the 0.9 its inferred
        # flags list is what the model needs on 8 x 96 GB.
        return (
            cid.startswith("datacrunch-h200x8-llama31-405b-") or cid == "sgl7631-h20x8-dsv3-0324-sglang048-tp8-random1024x512-c8"
        )

    # Said in words, not as a flag: "gpu_memory_utilization: 0.85 (stated on the serve line)".
    words = {"gpustack-h100x8-glm46-fp8-vllm0110-tp8-sharegpt-inf": 0.85}
    for c in CASES:
        said = json.dumps({k: c.get(k) for k in ("notes", "inferred", "raw_notes")})
        stated = {float(v) for p in FRACTION_FLAGS for v in re.findall(p, said)} | (
            {words[c["id"]]} if c["id"] in words else set()
        )
        if c.get("kv_cache_gib") or unknown(c["id"]):
            assert "util" not in c, c["id"]
            continue
        assert len(stated) <= 1, c["id"]
        assert c.get("util") == (min(stated) if stated else None), c["id"]
    # 87 until the twenty-sixth held-out set joined (2026-12-07); 138 until the twenty-eighth joined (the same day)
    assert sum("util" in c for c in CASES) == 284
    assert sum(unknown(c["id"]) for c in CASES) == 3
    text = " ".join(DOC.read_text().split())
    assert "284 runs state the share of memory their server was given (138 until the twenty-eighth held-out set joined" in text
    by_id = {c["id"]: c for c in CASES}
    luka = errors(by_id["luka-l40s-qwen3coder30ba3b-fp8-vllm0102-sharegpt1000-rinf"])
    assert [round(100 * luka[k]) for k, _ in METRICS] == [375, 375, -73, -86]
    assert (
        round(100 * errors(by_id["sgl060-h100x4-llama31-70b-sglang030-tp4-sharegpt-inf-n5000"])["request_throughput_per_s"]) == 27
    )
    r1 = errors(by_id["infx-dsr1-fp8-h200-sglang0512-tp8-8k1k-c64"])
    # (-21, 20) until SGLang's admission tests were modelled (2026-12-07)
    # (6, 17) until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, the same day
    # (5, 15) until SGLang's overlap loop took requests in a step late, the same day
    assert (round(100 * r1["mean_ttft_ms"]), round(100 * r1["mean_tpot_ms"])) == (8, 15)
    assert "5% and 15% high since its shared expert runs inside DeepSeek-V3's fused MoE call, the same day;" in text
    assert "8% and 15% high since SGLang's overlap loop takes requests in a step late, the same day)" in text
    assert "(throughput 514% to 375% high, TPOT 83% to 86% low, TTFT 86% to 73% low)" in text
    assert "(TTFT 32% to 21% low, TPOT 18% to 20% high; 6% and 17% high since SGLang's admission tests are modelled" in text


def test_the_recorded_lengths_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: the ShareGPT runs replayed with the requests their clients recorded."""
    text = " ".join(DOC.read_text().split())
    short = {f.stem: sum(x <= 10 for x in run_lengths(f.stem)[1]) for f in LENGTHS.glob("*.json")}
    ones = {f.stem: sum(x == 1 for x in json.loads(f.read_text())["output_lens"]) for f in LENGTHS.glob("*.json")}
    dstack = [k for k in short if k.startswith("dstack-405bfp8")]
    assert (len(dstack), min(short[k] for k in dstack), max(short[k] for k in dstack)) == (6, 437, 443)
    assert (min(ones[k] for k in dstack), max(ones[k] for k in dstack)) == (16, 19)
    sj = "surajssd-a100-40gx8-llama33-70b-vllm083-tp8-sharegpt-qps1"
    r1 = "simonmo-h200x8-dsr1-vllm084-tp8ep-sharegpt-n500-rr10"
    assert (short[sj], ones[sj], short[r1]) == (28, 14, 44)
    # The lognormal stand-in with each one's means and count.
    stand = [
        int((_sharegpt(m_in, m_out, n)[1] <= 10).sum())
        for m_in, m_out, n in ((215.2, 120.69, 1000), (213.295, 211.99, 200), (205.95, 215.332, 500))
    ]
    assert stand == [26, 0, 1]
    assert "437 to 443 ended within 10 tokens (16 to 19 at one), where the lognormal stand-in with their means has 26;" in text
    assert "28 of surajssd's 200 (14 at one) against none; 44 of simon-mo's 500 DeepSeek-R1 requests against 1." in text
    by_id = {c["id"]: c for c in CASES}
    thr = lambda k: round(100 * errors(by_id[k])["request_throughput_per_s"])
    assert sorted(thr(k) for k in dstack if "h100" in k) == [-2, -1, -1]
    assert thr(r1) == 9 and "simon-mo's from 6% to 10% high (9% since fp8 fused-MoE calls take their own floor" in text
    assert "the three H100 runs of the 405B went from 19-20% low on throughput to 1-2% low" in text
    assert "Over the corpus: request throughput MAE 33.2% to 33.5%, output throughput 32.0% to 32.4%, TTFT 47.2% to 46.8%" in text
    lam = sorted(thr(k) for k in short if k.startswith("lambda_"))
    assert (len(lam), lam[0], lam[-1]) == (4, -20, -11)
    assert "LambdaLabs' four Llama-3-70B runs of ten requests, two of whose outputs are empty, went from 16-21% to 11-20%" in text


def test_the_mi300x_matmul_paragraph_is_as_the_runs_score():
    """docs/accuracy.md, "The MI300X's matmuls over every size": what the aiter fit moved in the corpus
    (the figures before it as that day's table had them)."""
    text = " ".join(DOC.read_text().split())
    by_id = {c["id"]: c for c in CASES}
    thr = lambda i: 1 + errors(by_id[i])["request_throughput_per_s"]
    meta = [c["id"] for c in CASES if c["id"].startswith("dstack-405bfp8-mi300x8")]
    # (1.8, 2.1), as quoted below, until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07
    assert len(meta) == 3 and (round(min(map(thr, meta)), 1), round(max(map(thr, meta)), 1)) == (1.7, 2.0)
    q32 = "dstack-405bfp8-mi300x8-meta-vllm063-tp8-sharegpt-qps32"
    assert round(100 * errors(by_id[q32])["mean_tpot_ms"]) == -9
    assert (
        "from serving 2.0-2.6 times its measured rate in kvcalc to 1.8-2.1 times, its TPOT at 32 requests/s from 34% to 10% low "
        "(9% since its all-reduces at TP 8 take its TP 4 table's latency, 2026-12-05)" in text
    )
    dsv31 = [c["id"] for c in CASES if c["id"].startswith("sglcb-dsv31-mi300xx8")]
    assert len(dsv31) == 5
    # (26, 79) until an MLA layer's down projections were counted as each release runs them, 2026-12-06
    # (27, 82) until SGLang's shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07
    assert (round(100 * (min(map(thr, dsv31)) - 1)), round(100 * (max(map(thr, dsv31)) - 1))) == (33, 100)
    assert "33-100% since its shared expert runs inside the fused MoE call, as SGLang runs it on gfx942 from 0.5.6" in text
    assert "DeepSeek-V3.1 under SGLang 0.5.7 from 31-88% to 26-80% high on throughput (27-81% since the fp8" in text
    assert "26-79% since the all-reduces at TP 8 take the TP 4 latency, the same day; 27-82% since an MLA layer's" in text
    rec = "recipes-amd-mi300x8-dsr1-vllm-rocm-tp8-random3200x800-c256"
    assert round(100 * errors(by_id[rec])["request_throughput_per_s"]) == 39
    assert (
        "DeepSeek-R1 under vLLM's ROCm recipe at 256 users from 51% to 38% high (39% since that refit; 38% since the TP 8 "
        "all-reduces' latency; 39% since vLLM 0.11's one matmul for an MLA layer's two down projections" in text
    )
    assert (
        "request throughput MAE went from 33.5% to 32.4%, output throughput from 32.4% to 31.3%, TTFT from 46.8% to 46.4%, "
        "TPOT from 25.2% to 24.7% and the TP 8 TPOT bias from -28.4% to -27.5%" in text
    )


def test_the_minimax_norm_kernels_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: MiniMax-M2's norms over all heads charged their kernels; the eleven runs it moves, each
    TPOT error as it is now (the paragraph quotes before -> after)."""
    text = " ".join(DOC.read_text().split())
    runs = {c["id"]: round(-100 * errors(c)["mean_tpot_ms"]) for c in CASES if c["model"] == "minimax-m2"}
    assert len(runs) == 11 and all(v > 0 for v in runs.values())
    b200, h100 = "sglcb-minimaxm25-b200x8-tp8ep8-sglang058-c{}-1k1k", "sglcb-minimaxm25-h100x8-tp8ep8-sglang059-c1-1k1k"
    amd = [runs[f"sglcb-minimaxm2-mi300xx4-tp4-sglang057-c{u}-1k1k"] for u in (16, 100)]
    # (27, 33, 9, 38, 31 until fp8 fused-MoE calls took their own floor, 2026-12-05)
    # (21, 31, 2, 38, 31 until a norm all-reduce the custom all-reduce declines went through NCCL, 2026-12-07)
    assert (runs[b200.format(1)], runs[b200.format(100)], runs[h100], *amd) == (10, 31, 2, 38, 31)
    assert "through NCCL (2026-12-07, docs/simulation.md): 10% low on the B200s at one user" in text
    assert (
        "Since fp8 fused-MoE calls take their own floor (the same day): 21% and 31% low on the B200s, 2% on the H100s, the "
        "MI300Xs' as they were" in text
    )
    assert (
        "on 8 B200s at one user TPOT 34% -> 27% low, at 100 users 40% -> 33% low; on 8 H100s at one user 18% -> 9% low; on 4 "
        "MI300Xs 41% and 35% -> 38% and 31% low." in text
    )


def test_the_query_and_key_norms_paragraph_counts_the_runs_it_moves():
    """docs/accuracy.md: the runs of the models whose attention layers have query and key norms or an output gate
    (every scored run of them moves with the kernels counted; one run of them scores nothing)."""
    from kvcalc.engine.steptime import attention_norm_kernels

    text = " ".join(DOC.read_text().split())
    # As the corpus stood then: before the fifteenth and sixteenth held-out sets joined (their Qwen3-VL and Qwen3-Coder
    # runs, and Qwen3-VL's norms, came later the same day).
    later = (
        "2026-12-05 (fifteenth set)",
        "2026-12-05 (sixteenth set)",
        "2026-12-05 (seventeenth set)",
        "2026-12-05 (eighteenth set)",
        "2026-12-06 (twentieth set)",
        "2026-12-06 (twenty-third set)",
        TWENTYFOURTH,
        TWENTYFIFTH,
        TWENTYSIXTH,
        TWENTYSEVENTH,
    )
    runs = [
        c
        for c in CASES
        if resolve_model(c["model"]).architecture != "minimax_m2"
        and attention_norm_kernels(resolve_model(c["model"])) > 0
        and c.get("held_out") not in later
    ]
    scored = [c for c in runs if errors(c)]
    assert (len(runs), len(scored)) == (42, 41)
    assert "Nothing was fitted; 41 runs of these models move, most towards what they measured" in text


def test_the_short_outputs_paragraph_is_as_the_runs_score(monkeypatch):
    """docs/accuracy.md: saturated ShareGPT runs' mean TPOT against the share of short outputs, replayed once
    with the lognormal stand-in and once with surajssd's 200 recorded requests resampled to each run's means."""
    text = " ".join(DOC.read_text().split())
    ref = json.loads((LENGTHS / "surajssd-a100-40gx8-llama33-70b-vllm083-tp8-sharegpt-qpsinf.json").read_text())
    ro, ri = np.asarray(ref["output_lens"]), np.asarray(ref["input_lens"])
    assert (int((ro <= 10).sum()), len(ro), int(ro.max())) == (28, 200, 780)
    _, lo = _sharegpt(217.39, 201.65, 1000)
    assert round(100 * float((lo <= 10).mean()), 1) == 0.4

    def resampled(mean_in: float, mean_out: float, n: int) -> tuple[Any, Any]:
        idx = np.random.default_rng(7).integers(0, len(ro), n)
        P = np.maximum((ri[idx] * mean_in / ri.mean()).astype(np.int64), 4)
        return P, np.maximum((ro[idx] * mean_out / ro.mean()).astype(np.int64), 1)

    itl: list[float] = []
    real = simulate

    def keep(*a: Any, **k: Any) -> Any:
        r = real(*a, **k)
        itl.append(r.runs[0].bench.itl_s.mean * 1e3)
        return r

    glm = ["gpustack-h200x8-glm46-sglang053-tp8-bf16-sharegpt-inf", "gpustack-h200x8-glm46-fp8-sglang053-tp8-sharegpt-inf"]
    qwen = "gpustack-h100-qwen3-14b-vllm0110-sharegpt-inf"
    cases = {c["id"]: c for c in CASES}
    pct = lambda e: (round(100 * e["request_throughput_per_s"]), round(100 * e["mean_tpot_ms"]))
    monkeypatch.setitem(globals(), "simulate", keep)
    predict.cache_clear()
    before = {i: pct(errors(cases[i])) for i in [*glm, qwen]}
    assert [round(x, 1) for x in itl[:2]] == [109.5, 116.0]  # 108.0 and 114.5 until the compiled router, 2026-12-07
    assert [round(cases[i]["measured"]["mean_itl_ms"], 1) for i in glm] == [113.3, 105.3]
    monkeypatch.setitem(globals(), "_sharegpt", resampled)
    predict.cache_clear()
    after = {i: pct(errors(cases[i])) for i in [*glm, qwen]}
    monkeypatch.undo()
    predict.cache_clear()
    # ((3, -50), (-3, -43) and after (38, 100), (25, 110) until SGLang's compiled router was charged for GLM-4.x, 2026-12-07)
    assert [before[i] for i in [*glm, qwen]] == [(-3, -50), (-8, -43), (53, -50)]
    assert [after[i] for i in [*glm, qwen]] == [(34, 102), (21, 111), (103, -29)]
    assert "kvcalc's mean inter-token latency is the measured one (109.5 and 116.0 ms against 113.3 and 105.3; 108.0 and" in text
    assert (
        "the two GLM-4.6 runs' TPOT goes to 102% and 111% high, and their throughput from 3% and 8% low to 34% and 21% high"
        in text
    )
    assert "the Qwen3-14B run's TPOT from 50% to 29% low, its throughput from 53% to 103% high" in text


def test_the_fifteenth_held_out_set_is_as_the_doc_says(monkeypatch):
    """docs/accuracy.md: fourteen saved result JSONs from two repositories, scored at ae913a5 before they joined."""
    from kvcalc.engine import steptime

    text = " ".join(DOC.read_text().split())
    fifteen = [c for c in CASES if c.get("held_out") == "2026-12-05 (fifteenth set)"]
    assert len(fifteen) == 14 and all(c["dataset"] == "random" for c in fifteen)

    def scores() -> tuple[dict[str, dict[str, float]], list[int]]:
        errs = {c["id"]: errors(c) for c in fifteen}
        return errs, [round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs)) for k, _ in METRICS]

    # As scored: Qwen3-VL's attention charged no query and key norms (read after scoring, below), and SGLang's overlap
    # loop no step past a request's end (2026-12-07).
    monkeypatch.setattr(steptime, "QK_NORM_ARCHITECTURES", frozenset({"qwen3", "qwen3_moe", "qwen3_next"}))
    monkeypatch.setattr(engine_module.Engine, "overlap_tail", property(lambda self: False))
    predict.cache_clear()
    errs, mae = scores()
    light = ["bowenwan6-h200-qwen3vl8b-vllm-a-128-128-c1", "bowenwan6-h200-qwen3vl8b-sglang-a-128-128-c1"]
    ttft_then = [round(predict(i)["mean_ttft_ms"]) for i in light]
    monkeypatch.undo()
    predict.cache_clear()
    assert mae == [8, 8, 30, 7]
    assert "request throughput MAE 8%, output 8%, TTFT 30%, TPOT 7% (14 runs)" in text
    within = [i for i, e in errs.items() if abs(e["request_throughput_per_s"]) <= 0.10 and abs(e["mean_tpot_ms"]) <= 0.10]
    missed = sorted(set(errs) - set(within))
    assert missed == [
        "bowenwan6-h200-qwen3vl8b-sglang-c-512-128-c16",
        "massed-h100x2-llama33-70b-vllm085-tp2-rand128-128-c32",
        "massed-h100x2-llama33-70b-vllm085-tp2-rand128-128-c8",
    ]
    assert [(round(100 * errs[i]["request_throughput_per_s"]), round(100 * errs[i]["mean_tpot_ms"])) for i in missed] == [
        (10, -14),
        (44, -35),
        (22, -11),
    ]
    assert "Within 10% on throughput and TPOT on eleven of the fourteen" in text
    assert "512/128 run at 16 users has TPOT 14% low" in text
    assert "22% and 44% high on throughput with TPOT 11% and 35% low" in text
    assert [round(100 * errs[i]["mean_ttft_ms"]) for i in light] == [-37, -65] and ttft_then == [11, 20]
    # Now, with Qwen3-VL's norms counted.
    now, mae = scores()
    # ([8, 8, 30, 7] and the c16 run's TPOT -11 until SGLang's overlap loop ran a step past a request's end, 2026-12-07)
    assert mae == [8, 8, 30, 6] and "the set stands at 8%, 8%, 30% and 7%" in text
    assert "the set at 8%, 8%, 30% and 6%, that run's TPOT 10% low, since the loop runs a step past a request's end" in text
    c16 = now["bowenwan6-h200-qwen3vl8b-sglang-c-512-128-c16"]
    # (7, -11) until SGLang's overlap loop took requests in a step late, 2026-12-07
    assert (round(100 * c16["request_throughput_per_s"]), round(100 * c16["mean_tpot_ms"])) == (6, -10)
    assert "that SGLang run 6% high on throughput since SGLang's overlap loop takes requests in a step late" in text
    vl = sorted(round(100 * e["mean_tpot_ms"]) for i, e in now.items() if "qwen3vl" in i and "sglang-c-" not in i)
    assert (vl[0], vl[-1]) == (-5, 3) and "the other seven Qwen3-VL runs' TPOT from 5% low to 3% high" in text
    assert "(the SGLang build's 512/128 run at 16 users 7% high on throughput with TPOT 11% low" in text
    assert "TTFT is 37% and 65% low at one user for 128-token prompts (17 and 56 ms measured, 11 and 20 ms kvcalc" in text
    long = [i for i in errs if "-b-2048-" in i]
    assert len(long) == 2 and all(abs(errs[i]["mean_ttft_ms"]) < 0.08 for i in long)

    # The seeded draw: a run of n prompts begins with a smaller run's (numpy's legacy generator, seed 0: lengths
    # fixed at range ratio 1.0, then one offset a prompt).
    def offsets(n: int) -> Any:
        np.random.seed(0)
        np.random.randint(128, 129, size=n)
        np.random.randint(128, 129, size=n)
        return np.random.randint(0, 128_000, size=n)

    assert (offsets(40)[:5] == offsets(5)).all() and (offsets(160)[:40] == offsets(40)).all()
    hits = {c["id"].rsplit("-", 1)[1]: c["prompt_cache_hit"] for c in fifteen if "l40s" in c["id"]}
    assert hits == {"c1": 0.2, "c8": 0.125, "c32": 0.25}


def test_the_sixteenth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: three saved results from two repositories, scored at 281d0bb before they joined."""
    text = " ".join(DOC.read_text().split())
    sixteen = {c["id"]: c for c in CASES if c.get("held_out") == "2026-12-05 (sixteenth set)"}
    assert len(sixteen) == 3 and all(c["dataset"] == "sharegpt" for c in sixteen.values())
    errs = {i: errors(c) for i, c in sixteen.items()}
    got = {i: tuple(round(100 * e[k]) for k, _ in METRICS) for i, e in errs.items()}
    assert got == {
        # ((-32, -32, -6, 9) and (-12, -12, -18, 17) until the RTX 4090's weight reads took its own measured share,
        # 2026-12-07)
        "stella-4090-qwen25coder7b-vllm0230-sharegpt-rinf": (-25, -25, -12, 1),
        "stella-4090-qwen25coder7b-vllm0230-sharegpt-r1": (-12, -12, -22, 4),
        # (514, 514, -86, -83) until the replay took the server's stated memory fraction (0.8), 2026-12-06
        "luka-l40s-qwen3coder30ba3b-fp8-vllm0102-sharegpt1000-rinf": (375, 375, -73, -86),
    }
    assert "the two RTX 4090 runs 32% and 12% low on throughput, TTFT 6% and 18% low, TPOT 9% and 17% high" in text
    luka = sixteen["luka-l40s-qwen3coder30ba3b-fp8-vllm0102-sharegpt1000-rinf"]
    assert round(luka["measured"]["mean_tpot_ms"], 1) == 471.7
    assert round(predict(luka["id"])["mean_tpot_ms"], 1) == 66.4  # 78.1 until the replay took its --gpu_memory_utilization
    assert "the L40S run 514% high on throughput, TTFT 86% and TPOT 83% low (471.7 ms measured, 78.1 kvcalc)" in text
    assert "the L40S run is 375% high on throughput, TTFT 73% and TPOT 86% low (66.4 ms)." in text
    assert "the two RTX 4090 runs are 25% and 12% low on throughput, TTFT 12% and 22% low, TPOT 1% and 4% high." in text
    assert luka["util"] == 0.8
    assert resolve_gpu("l40s").memory_bandwidth_bytes_per_s == 864e9


def test_the_seventeenth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: thirty-five saved results from two repositories, scored at 55111e7 before they joined."""
    import statistics

    text = " ".join(DOC.read_text().split())
    seventeen = {c["id"]: c for c in CASES if c.get("held_out") == "2026-12-05 (seventeenth set)"}
    assert len(seventeen) == 35 and all(c["dataset"] == "random" for c in seventeen.values())
    assert not any(c.get("chunked_prefill") is False for c in seventeen.values())
    errs = {i: errors(c) for i, c in seventeen.items()}
    mae = [round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs)) for k, _ in METRICS]
    assert mae == [6, 6, 14, 6] and "request throughput MAE 6%, output 6%, TTFT 14%, TPOT 6% (35 runs)" in text
    both = [i for i, e in errs.items() if abs(e["request_throughput_per_s"]) <= 0.10 and abs(e["mean_tpot_ms"]) <= 0.10]
    assert len(both) == 33 and "33 of 35 within 10% on both throughput and TPOT" in text
    bf16 = statistics.mean(e["mean_tpot_ms"] for i, e in errs.items() if "-bf16-" in i)
    fp8 = statistics.mean(e["mean_tpot_ms"] for i, e in errs.items() if "-fp8" in i)
    assert (round(100 * bf16), round(100 * fp8)) == (3, -4)
    missed = {
        i: (round(100 * e["request_throughput_per_s"]), round(100 * e["mean_tpot_ms"])) for i, e in errs.items() if i not in both
    }
    assert missed == {
        "lifenyan-4090-qwen25-7b-vllm0251-rand512-256-c16": (-10, 11),  # (-18, 21) until the 4090's own weight-read share
        "vob-l40s-llama31-8b-bf16-vllm0240-longprompt-rand4096-128-c256-mns256": (17, -19),  # (16, -18) until the kept blocks
    }
    # A cap above the request count caps nothing: the replay takes every request at once.
    capped = [c for c in seventeen.values() if c.get("max_concurrency") and c["max_concurrency"] > c["measured"]["completed"]]
    assert capped and all(c["max_concurrency"] == 256 for c in capped)
    assert "TPOT 21% high (10% and 11% since the RTX 4090's weight reads take its own measured share, 2026-12-07)" in text


def test_the_eighteenth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: seven runs of one H100's vLLM 0.18.0 sweep found in a repository's history, scored at 5b8bbe4."""
    text = " ".join(DOC.read_text().split())
    eighteen = {c["id"]: c for c in CASES if c.get("held_out") == "2026-12-05 (eighteenth set)"}
    assert len(eighteen) == 7 and all(c["model"] == "qwen3-8b" and c["gpu"] == "h100-sxm" for c in eighteen.values())
    errs = {i: errors(c) for i, c in eighteen.items()}
    mae = [round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs)) for k, _ in METRICS]
    assert mae == [3, 3, 36, 3] and "request throughput MAE 3%, output 3%, TTFT 36%, TPOT 3% (7 runs)" in text
    assert all(abs(e["mean_tpot_ms"]) <= 0.06 for e in errs.values()) and "TPOT within 6% on all seven" in text
    light = {i: c for i, c in eighteen.items() if c["measured"]["mean_ttft_ms"] < 100}
    assert len(light) == 5
    kv = sorted(round(predict(i)["mean_ttft_ms"]) for i in light)
    measured = sorted(round(c["measured"]["mean_ttft_ms"]) for c in light.values())
    assert (kv[0], kv[-1], measured[0], measured[-1]) == (25, 42, 51, 87)
    assert "(25 to 42 ms against 51 to 87)" in text


def test_the_nineteenth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: fifty-four TP 8 runs of dstackai/benchmarks' sweeps (siblings of runs in the corpus), scored at
    4ec0e44 before they joined (no change since moves them: the Qwen3.5 rules touch none of their models)."""
    text = " ".join(DOC.read_text().split())
    nineteen = {c["id"]: c for c in CASES if str(c.get("held_out", "")).startswith("2026-12-06 (nineteenth set")}
    assert len(nineteen) == 54 and all(int(c["tp"]) * int(c.get("dp") or 1) == 8 for c in nineteen.values())
    errs = {i: errors(c) for i, c in nineteen.items()}
    mae = [round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs)) for k, _ in METRICS]
    # [75, 75, 71, 31] until the MLA call was re-derived over five projections; [74, 74, 71, 31] until vLLM V0's Triton MLA
    # decode on the MI300X was priced (2026-12-06); [70, 70, 71, 29] until the H100 sweep replayed its sibling's requests
    # and the silent ones counted as the 2024 client counted them (the same day)
    # [67, 66, 53, 28] until SGLang 0.4.1 to 0.4.4's Triton MLA decode was priced (the same day); [59, 59, 53, 29] until
    # 0.4.1.post7 to 0.4.4.post3 kept the overlap scheduler under DP attention (the same day)
    # [60, 59, 53, 29] until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs (the same day)
    # [57, 57, 53, 28] until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07
    # ([53, 53, 52, 27] and -15 over all 54 until SGLang's overlap loop ran a step past a request's end, the same day)
    assert mae == [53, 53, 52, 26]
    tp8 = [e["mean_tpot_ms"] for i, e in errs.items() if int(nineteen[i]["tp"]) == 8]
    every = [e["mean_tpot_ms"] for e in errs.values()]
    # (45, -25, -23) until vLLM V0's Triton MLA decode on the MI300X was priced; (45, -23, -22) until the sweep's replay
    # (45, -25, -23) until SGLang 0.4.1 to 0.4.4's Triton MLA decode was priced
    # (45, -23, -17) until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs
    # (45, -22, -16) until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07
    assert (len(tp8), round(100 * sum(tp8) / len(tp8)), round(100 * sum(every) / len(every))) == (45, -20, -17)
    assert (
        "Since it runs a step past a request's end (the same day, docs/simulation.md), the set stands at 53%, 53%, 52% and "
        "26%, TP 8 TPOT 20% low (17% over all 54), those nine 1% low on TPOT (the four at 128 users 25-33% high" in text
    )
    assert "the R1 groups from 25% to 67% high on throughput. - **Held out: nine runs" in text
    assert (
        "Since releases without a custom all-reduce on ROCm are charged RCCL's (2026-12-07, docs/simulation.md) it stands at "
        "53%, 53%, 52% and 27%, TP 8 TPOT 20% low (15% over all 54), the MI300X 405B runs 35% low on TPOT (39% until then) "
        "and DeepSeek-R1 under SGLang on MI300Xs 37% low (39%), the R1 groups from 15% to 67% high on throughput (to 73%)."
        in text
    )
    assert (
        "Since SGLang 0.4.0 to 0.4.4's DP gather and all-reduce take their measured times (the same day), DeepSeek-R1 under "
        "SGLang on H200s, all nine under DP attention, 15% high on TPOT (its four runs at 128 users 53-58% high), the R1 "
        "groups from 12% to 67% high on throughput." in text
    )
    assert (
        "the set stands at 67%, 66%, 53% and 28%, TP 8 TPOT 25% low (23% over all 54); the H100 405B-FP8 runs' TPOT 6% high "
        "on average (within 6% at 512 batched tokens, 30-42% high at 1,024) and their throughput 3% off." in text
    )
    assert "25% low on average over the 45 at TP 8 (24% over all 54 of eight GPUs a replica)" in text
    # At scoring (4ec0e44): 78%, 78%, 73%, 31%; TP 8 -25% (-24% over all 54); DeepSeek-R1 under vLLM -39% on H200s and -44%
    # on MI300Xs, throughput 83% and 87% high, until vLLM 0.7's materialized MLA decode weights were counted (2026-12-06).
    assert "request throughput MAE 78%, output 78%, TTFT 73%, TPOT 31% (54 runs)" in text
    assert (
        "the set stands at request throughput MAE 75%, output 75%, TTFT 71%, TPOT 31% (74% and 74% until vLLM 0.7's "
        "materialized MLA path was charged five matmuls a layer, the same day;" in text
    )
    assert "74%, 74%, 71% and 31% since the MLA call was re-derived over five projections (the same day)" in text
    assert (
        "under vLLM 40% low on H200s" in text
        and "and 42% on MI300Xs, their throughput from 83% and 87% high to 60% and 81% (59% and 79% until the five matmuls)"
        in text
    )
    assert "(59% and 80% since the MLA call's re-derivation)" in text
    assert (
        "Since vLLM V0's Triton MLA decode on the MI300X is priced (the same day, docs/engines.md) the set stands at 70%, "
        "70%, 71% and 29%, TP 8 TPOT 23% low (22% over all 54), and DeepSeek-R1 under vLLM on MI300Xs 30% low on TPOT, its "
        "throughput 50% high." in text
    )

    def group(prefix: str, engine: str = "") -> list[dict[str, float]]:
        return [e for i, e in errs.items() if i.startswith(prefix) and engine in nineteen[i]["engine"]]

    def tpot(es: list[dict[str, float]]) -> int:
        return round(100 * sum(e["mean_tpot_ms"] for e in es) / len(es))

    # -39 for dstacktgi until releases without a custom all-reduce on ROCm were charged RCCL's (2026-12-07)
    assert tpot(group("dstack405b")) == 6 and tpot(group("dstacktgi")) == -35  # 11 until the sweep's replay
    # [-16, ...] and [..., -49] until SGLang 0.4.1 to 0.4.4's Triton MLA decode was priced; [13, ...] until 0.4.1.post7 to
    # 0.4.4.post3 kept the overlap scheduler under DP attention
    # [.., -40] until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs
    # ([12, -32] until SGLang 0.4.0 to 0.4.4's DP gather and all-reduce took their measured times, 2026-12-07)
    # ([15, -32] until SGLang's overlap loop took requests in a step late, the same day)
    # ([14, -32] until it ran a step past a request's end, the same day)
    assert [tpot(group("dstackr1-h200", "sglang")), tpot(group("dstackr1-h200", "vllm"))] == [-1, -32]
    assert (
        "Since SGLang's overlap loop takes requests in a step late (the same day, docs/simulation.md), those nine 14% high "
        "on TPOT (the four at 128 users 52-57% high)." in text
    )
    assert (
        "Since vLLM V0's decodes past max_seq_len_to_capture run without CUDA graphs (the same day, docs/engines.md) it "
        "stands at 57%, 57%, 53% and 28%, TP 8 TPOT 22% low (16% over all 54), and DeepSeek-R1 under vLLM on H200s 32% low "
        "on TPOT, its throughput 38% high (40% and 59% until then)" in text
    )
    # (-42 before; -39 under SGLang until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07)
    assert [tpot(group("dstackr1-mi300x", "vllm")), tpot(group("dstackr1-mi300x", "sglang"))] == [-30, -37]
    c128 = [e for i, e in errs.items() if i.startswith("dstackr1-h200x8-deepseek-r1-sglang-") and i.endswith("-c128")]
    h200_128 = sorted(round(100 * e["mean_tpot_ms"]) for e in c128)
    # [49, 49, 54, 54] until the overlap scheduler under DP attention; [49, 49, 53, 53] until SGLang 0.4.0 to 0.4.4's DP gather and all-reduce took their measured times, 2026-12-07
    # ([53, 53, 57, 58] until SGLang's overlap loop took requests in a step late, the same day)
    # ([52, 53, 57, 57] until it ran a step past a request's end, the same day)
    assert h200_128 == [25, 27, 27, 33]
    assert all(nineteen[i].get("dp") == 8 for i in nineteen if i.startswith("dstackr1-h200x8-deepseek-r1-sglang-"))
    assert (
        "Since SGLang 0.4.1.post7 to 0.4.4.post3 keep their overlap scheduler under DP attention (the same day, "
        "docs/engines.md) the set stands at 60%, 59%, 53% and 29%, and DeepSeek-R1 under SGLang on H200s, all nine under "
        "DP attention, 12% high on TPOT (its four runs at 128 users 49-53% high), its throughput 15% high." in text
    )
    assert (
        "the set stands at 59%, 59%, 53% and 29%, TP 8 TPOT 23% low (17% over all 54), and DeepSeek-R1 under SGLang 13% high "
        "on TPOT on H200s (its four runs at 128 users 49-54% high) and 39% low on MI300Xs, its throughput 14% and 73% high "
        "(the R1 groups from 14% to 73% high)." in text
    )
    assert [
        round(
            100 * sum(e["request_throughput_per_s"] for e in group(f"dstackr1-{g}", "vllm")) / len(group(f"dstackr1-{g}", "vllm"))
        )
        for g in ("h200", "mi300x")
    ] == [38, 49]  # [59, 80] until vLLM V0's Triton MLA decode on the MI300X was priced; [59, 50] until V0's decodes
    # past max_seq_len_to_capture ran without CUDA graphs
    assert "DeepSeek-R1 TPOT 16% low under SGLang on H200s, 39% under vLLM on H200s, 44% under vLLM and 49% under SGLang" in text
    h100 = {i: e["mean_tpot_ms"] for i, e in errs.items() if i.startswith("dstack405b")}
    # Within 5% at 512 batched tokens, [48, 54, 55] at 1,024 and throughput 17% off until the sweep's replay.
    assert all(abs(v) <= 0.06 for i, v in h100.items() if "mbt512" in i) and "within 5% at 512 batched tokens" in text
    assert sorted(round(100 * v) for i, v in h100.items() if "mbt1024" in i) == [30, 40, 42]
    assert round(100 * sum(abs(e["request_throughput_per_s"]) for e in group("dstack405b")) / 15) == 3
    r1 = [group(f"dstackr1-{g}", eng) for g in ("h200", "mi300x") for eng in ("sglang", "vllm")]
    thr = sorted(round(100 * sum(e["request_throughput_per_s"] for e in es) / len(es)) for es in r1)
    # (46, 107), every run high, until SGLang 0.4.1 to 0.4.4's Triton MLA decode was priced; (14, 73) until 0.4.1.post7 to
    # 0.4.4.post3 kept the overlap scheduler under DP attention; (15, 73) until releases without a custom all-reduce on
    # ROCm were charged RCCL's (2026-12-07)
    # ((15, 67) until SGLang 0.4.0 to 0.4.4's DP gather and all-reduce took their measured times, 2026-12-07)
    # ((12, 67) until SGLang's overlap loop ran a step past a request's end, the same day)
    assert (thr[0], thr[-1]) == (25, 67)
    assert "with throughput 46% to 108% high" in text and "(46% to 107% since the MLA call's re-derivation)" in text


def test_the_twentieth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: nine Qwen3-Coder-Next runs of the SGLang cookbook (2 x B200, SGLang 0.5.8+), scored at 48ef445
    before they joined."""
    text = " ".join(DOC.read_text().split())
    twenty = {c["id"]: c for c in CASES if c.get("held_out") == "2026-12-06 (twentieth set)"}
    assert len(twenty) == 9 and all(
        (c["model"], c["gpu"], int(c["tp"]), c["engine"]) == ("qwen3-next-80b-a3b", "b200", 2, "sglang@0.5.8")
        for c in twenty.values()
    )
    errs = {i: errors(c) for i, c in twenty.items()}
    mae = [round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs)) for k, _ in METRICS]
    # At scoring (48ef445) and until the B200's Triton fused-MoE calls took their own measured share: 20, 21, 44, 16.
    assert "request throughput MAE 20%, output 21%, TTFT 44%, TPOT 16% (9 runs)" in text
    assert "the set stands at 20%, 20%, 38% and 15%, kvcalc's TTFTs 76 to 307 ms, still 21%" in text
    # ([20, 20, 38, 15] and 307 ms until SGLang's overlap loop took requests in a step late, 2026-12-07)
    assert mae == [20, 20, 34, 15] and "at 20%, 20%, 34% and 15%, kvcalc's TTFTs 76 to 326 ms, 21% to 53% low" in text
    one = sorted(round(-100 * e["mean_tpot_ms"]) for i, e in errs.items() if twenty[i]["max_concurrency"] == 1)
    many = sorted(round(-100 * e["mean_tpot_ms"]) for i, e in errs.items() if twenty[i]["max_concurrency"] > 1)
    assert (one[0], one[-1], many[0], many[-1]) == (7, 12, 5, 28)
    assert "7% to 12% at one user and 5% to 28% at 16 to 100" in text
    thr = sorted(round(100 * e["request_throughput_per_s"]) for e in errs.values())
    assert (thr[0], thr[-1]) == (-3, 38) and "request throughput 3% low to 38% high" in text
    got = sorted(round(predict(i)["mean_ttft_ms"]) for i in twenty)
    seen = sorted(round(c["measured"]["mean_ttft_ms"]) for c in twenty.values())
    # (76 ms and 21% to 53% low until SGLang's overlap loop ran a step past a request's end, 2026-12-07)
    assert (got[0], got[-1], seen[0], seen[-1]) == (77, 326, 96, 477) and "(76 to 226 ms against 96 to 477)" in text
    ttft = sorted(round(-100 * e["mean_ttft_ms"]) for e in errs.values())
    assert (ttft[0], ttft[-1]) == (19, 52) and "TTFT is 21% to 53% low" in text
    assert "since it runs a step past a request's end (the same day), kvcalc's TTFTs 77 to 326 ms, 19% to 52% low." in text
    rejected = (SERVING / "rejected" / "2026-12-06-twentieth-set.md").read_text()
    rows = [ln for ln in rejected.splitlines() if ln.startswith("| http") or ln.startswith("| find") or ln.startswith("| —")]
    assert len(rows) == 40 and "the other 25 are of architectures kvcalc does not import" in " ".join(rejected.split()).lower()
    assert "Ernie4.5.md" not in rejected and "the 16 left are below" in " ".join(rejected.split())


def test_the_twentieth_sets_ernie_runs_are_as_the_doc_says():
    """docs/accuracy.md: nine ERNIE-4.5-21B-A3B runs of the SGLang cookbook (one MI300X, SGLang 0.5.7), set aside for want of
    an importer and scored at 75775f6 once ERNIE-4.5 was imported, before they joined."""
    text = " ".join(DOC.read_text().split())
    ernie = {c["id"]: c for c in CASES if c.get("held_out") == "2026-12-06 (twentieth set, scored once ERNIE-4.5 was imported)"}
    assert len(ernie) == 9 and all(
        (c["model"], c["gpu"], int(c["tp"])) == ("ernie-4.5-21b-a3b", "mi300x", 1) for c in ernie.values()
    )
    errs = {i: errors(c) for i, c in ernie.items()}
    mae = [round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs)) for k, _ in METRICS]
    # Scored before they joined: 30, 31, 32, 14 (TPOT 15% to 22% high at one and 16 users); since seven find the prompts
    # the page's earlier runs sent, 2026-12-07:
    # ([30, 31, 49, 14] until SGLang's overlap loop took requests in a step late, the same day)
    assert mae == [30, 31, 39, 14] and "request throughput MAE 30%, output 31%, TTFT 32%, TPOT 14% (9 runs)" in text
    assert (
        "since SGLang's overlap loop takes requests in a step late (the same day, docs/simulation.md), at 30%, 31%, 39% and 14%."
        in text
    )
    assert "they stand at 30%, 31%, 49% and 14%, TPOT 13% to 22% high at one and 16 users;" in text
    low = sorted(round(100 * e["mean_tpot_ms"]) for i, e in errs.items() if ernie[i]["max_concurrency"] <= 16)
    high = sorted(round(100 * e["mean_tpot_ms"]) for i, e in errs.items() if ernie[i]["max_concurrency"] > 16)
    assert (low[0], low[-1], high[0], high[-1]) == (13, 22, -11, 5) and "TPOT is high, 15% to 22% at one and 16 users" in text
    assert "11% low to 5% high at 64 and 100" in text
    first = "sglcb-ernie45-21b-a3b-1xmi300x-in1000-out1000-c1-n10"
    # (25 until SGLang's overlap loop ran a step past a request's end, 2026-12-07)
    assert round(ernie[first]["measured"]["mean_ttft_ms"]) == 4153 and round(predict(first)["mean_ttft_ms"]) == 26
    assert "against kvcalc's 25 (26 since SGLang's overlap loop runs a step past a request's end, 2026-12-07;" in text
    assert round(100 * errs[first]["request_throughput_per_s"]) == 187 and "request throughput 187% high" in text
    others = sorted(round(c["measured"]["mean_ttft_ms"]) for i, c in ernie.items() if c["max_concurrency"] == 1 and i != first)
    assert (others[0], others[-1]) == (33, 87) and "the next runs at one user measure 33 to 87 ms)" in text


def test_the_twenty_first_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: ten TP 8 runs of InferenceX's published DeepSeek-R1-0528 curve on 8 H200s under SGLang 0.5.12,
    scored at 7d7784a before they joined."""
    text = " ".join(DOC.read_text().split())
    tw1 = {c["id"]: c for c in CASES if c.get("held_out") == "2026-12-06 (twenty-first set)"}
    assert len(tw1) == 10 and all(
        (c["model"], c["gpu"], int(c["tp"]), c["engine"]) == ("deepseek-v3", "h200", 8, "sglang@0.5.12") for c in tw1.values()
    )
    errs = {i: errors(c) for i, c in tw1.items()}
    assert all("request_throughput_per_s" not in e for e in errs.values())  # the table gives none
    mae = [
        round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs))
        for k in ("output_throughput_tok_per_s", "mean_ttft_ms", "mean_tpot_ms")
    ]
    # At scoring (7d7784a): 18%, 24%, 24%, TPOT 13% to 29% high, as the doc quotes; since SGLang's all-reduce and norm
    # fusion is counted (2026-12-06):
    assert "output throughput MAE 18%, TTFT 24%, TPOT 24% (10 runs)" in text
    assert "TP 8 TPOT bias +24%**: kvcalc's TPOT is 13% to 29% high on every one" in text
    # (15%, 25%, 20% until SGLang's steps of over 2,048 tokens were charged the norms their all-reduces no longer fuse,
    # the same day; [16, 25, 20] until the replay took each run's stated memory fraction, the same day)
    # ([16, 24, 20] until SGLang's admission tests were modelled, 2026-12-07)
    # ([16, 22, 19] and TPOT 11% to 24% high until its shared expert ran inside DeepSeek-V3's fused MoE call, 2026-12-07)
    # ([11, 23, 13] until SGLang's overlap loop took requests in a step late, the same day)
    assert mae == [11, 20, 13]
    assert "11%, 20% and 13% since SGLang's overlap loop takes requests in a step late" in text
    assert "16%, 24% and 20% since the replay takes each run's stated memory fraction" in text
    assert "16%, 22% and 19% since SGLang's admission tests are modelled" in text
    assert "11%, 23% and 13%, its TPOT 7% to 19% high, since its shared expert runs inside DeepSeek-V3's fused MoE" in text
    tp = sorted(round(100 * e["mean_tpot_ms"]) for e in errs.values())
    assert (tp[0], tp[-1]) == (7, 19)
    assert "the set stands at output throughput MAE 17%, TTFT 25%, TPOT 22%, kvcalc's TPOT 12% to 26% high" in text
    assert "15%, 25% and 20%, its TPOT 11% to 24% high, since an MLA layer's down projections are counted" in text
    assert "16%, 25% and 20% since SGLang's steps of over 2,048 tokens launch the norms" in text
    # The other operator's run of the same scripts, model, GPU and release (the twelfth set): 13.0 ms at 4 users.
    assert "(the infx-heyram runs, the twelfth set)" in text
    other = next(c for c in CASES if c["id"] == "infx-heyram-h200x8-dsr1-sglang0512-tp8-1k1k-c4")
    assert other["held_out"] == "2026-12-05 (twelfth set)"
    mine = tw1["infx-dsr1-fp8-h200-sglang0512-tp8-1k1k-c4"]
    assert (round(other["measured"]["mean_tpot_ms"], 1), mine["measured"]["mean_tpot_ms"]) == (13.0, 9.7)
    # (11.7 until its shared expert ran inside the fused MoE call, 2026-12-07)
    assert round(predict(mine["id"])["mean_tpot_ms"], 1) == 10.6 and (mine["mean_input"], mine["mean_output"]) == (
        other["mean_input"],
        other["mean_output"],
    )
    assert "measured 13.0 ms at 4 users where this curve has 9.7, and kvcalc's 12.4 ms lies between them" in text
    assert "(12.1 ms since SGLang's all-reduce and norm fusion is counted, 2026-12-06; 11.7 ms since its one matmul" in text
    assert "; 10.6 ms since its shared expert runs inside the fused MoE call, 2026-12-07)" in text
    rejected = (SERVING / "rejected" / "2026-12-06-twenty-first-set.md").read_text()
    assert len([ln for ln in rejected.splitlines() if ln.startswith("- ")]) == 22 and "Eleven other candidates" in text


def test_the_scheduler_recv_interval_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: the seven runs whose SGLang scripts set --scheduler-recv-interval, replayed with it."""
    text = " ".join(DOC.read_text().split())
    # (The twenty-second and twenty-eighth held-out sets' gated runs came after; each set's own test scores them.)
    gated = {
        c["id"]: c
        for c in CASES
        if c.get("scheduler_recv_interval") and not any(s in c.get("held_out", "") for s in ("twenty-second", "twenty-eighth"))
    }
    assert len(gated) == 7 and {c["scheduler_recv_interval"] for c in gated.values()} == {10, 30}
    ttft = {i: round(100 * errors(c)["mean_ttft_ms"]) for i, c in gated.items()}
    # (-30% and 372 ms until an MLA layer's down projections were counted as SGLang runs them, the same day)
    # (-31% and 364 ms, and -84% at 8k/1k, until its shared expert ran inside the fused MoE call, 2026-12-07)
    # (-36% and 339 ms, -85% at 8k/1k and the twelfth set's -95 to -72, until SGLang's overlap loop took requests in a
    # step late, the same day)
    assert ttft["infmax-b200x8-deepseek-v3-sglang-tp8-1k1k-c32"] == -31
    assert round(predict("infmax-b200x8-deepseek-v3-sglang-tp8-1k1k-c32")["mean_ttft_ms"]) == 363
    assert (
        "363 ms, 31% low, since SGLang's overlap loop takes requests in a step late, the same day, docs/simulation.md, the twelfth set's five then 70-94% low)"
        in text
    )
    assert "(364 ms since an MLA layer's down projections are counted as SGLang runs them, the same day;" in text
    assert "339 ms since its shared expert runs inside the fused MoE call, SGLang 0.5.3 on B200 keeping the Triton" in text
    assert ttft["infmax-b200x8-deepseek-v3-sglang-tp8-8k1k-c8"] == -84
    twelfth = sorted(v for i, v in ttft.items() if i.startswith("infx-faradawn"))
    assert (twelfth[0], twelfth[-1]) == (-94, -70)
    assert "the B200 TP 8 run at 32 users from 78% to 30% low (116 to 372 ms; 529 measured)" in text
    assert "the five of the twelfth set from 90-98% to 72-95% low" in text
    assert "Over the corpus TTFT MAE went from 44.4% to 44.2% and request throughput from 34.2% to 34.3%" in text


def test_the_twenty_second_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: eleven TP 8 runs of two InferenceX tables (DeepSeek-R1-0528 on 8 B200s under SGLang 0.5.12, and on
    8 H200s under SGLang 0.5.7), scored at 15fdd9a before they joined."""
    text = " ".join(DOC.read_text().split())
    tw2 = {c["id"]: c for c in CASES if c.get("held_out") == "2026-12-06 (twenty-second set)"}
    assert len(tw2) == 11 and all(int(c["tp"]) == 8 and c["model"] == "deepseek-v3" for c in tw2.values())
    assert sorted({(c["gpu"], c["engine"]) for c in tw2.values()}) == [("b200", "sglang@0.5.12"), ("h200", "sglang@0.5.7")]
    # The B200 script's --scheduler-recv-interval: 10 below 16 users, 30 from 16; the H200 script sets none.
    assert all(
        c.get("scheduler_recv_interval") == (None if c["gpu"] == "h200" else 10 if c["max_concurrency"] < 16 else 30)
        for c in tw2.values()
    )
    errs = {i: errors(c) for i, c in tw2.items()}
    assert all("request_throughput_per_s" not in e for e in errs.values())  # the tables give none
    keys = ("output_throughput_tok_per_s", "mean_ttft_ms", "mean_tpot_ms")
    mae = [round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs), 1) for k in keys]
    tp = [e["mean_tpot_ms"] for e in errs.values()]
    # 9.0%, 48.9%, 11.7% and +11.7% once the receive interval was modelled, until SGLang's all-reduce and norm fusion
    # was counted, the same day.
    # (50.6% TTFT until SGLang's steps of over 2,048 tokens were charged the norms their all-reduces no longer fuse,
    # the same day)
    # [5.1, 51.1, 6.5] and +6.0 until the H200 runs' shared expert ran inside the fused MoE call, 2026-12-07
    # ([4.9, 52.6, 5.9] and +3.6 until 0.5.12 ran the B200 curve's prompt steps without CUDA graphs, the same day)
    # ([5.3, 44.6, 6.7] and +4.3 until SGLang's overlap loop took requests in a step late, the same day)
    # ([5.5, 39.4, 6.8] until it ran a step past a request's end, the same day)
    assert mae == [5.5, 39.2, 6.8] and round(100 * sum(tp) / len(tp), 1) == 4.4
    assert "5.5%, 39.2%, 6.8% and +4.4% since it runs a step past a request's end (the same day)." in text
    assert "5.5%, 39.4%, 6.8% and +4.4%, kvcalc's TPOT still from 8% low to 14% high, since SGLang's overlap loop" in text
    assert "4.9%, 52.6%, 5.9% and +3.6%, kvcalc's TPOT from 8% low to 12% high, since the H200 runs' shared expert" in text
    assert "5.3%, 44.6%, 6.7% and +4.3%, kvcalc's TPOT from 8% low to 14% high, since SGLang 0.5.10 to 0.5.12 run" in text
    assert "the set then stood at output throughput 9.0%, TTFT 48.9%, TPOT 11.7%, TP 8 TPOT bias +11.7%" in text
    assert "since SGLang's all-reduce and norm fusion is counted (the same day, above) at 6.9%, 49.5%, 9.1% and +9.1%" in text
    # At scoring, before the receive interval was modelled: as quoted (a record of 15fdd9a).
    assert "output throughput MAE 9.1%, TTFT 66.7%, TPOT 12.5% (11 runs), **TP 8 TPOT bias +12.5%**" in text
    assert "kvcalc's TPOT 1% to 20% high on every run" in text  # at scoring
    assert "kvcalc's TPOT 0% to 16% high" in text
    # (-2, 13) until the shared expert, 2026-12-07; (-8, 12) until the B200 curve's eager prompt steps, the same day
    assert (round(100 * min(tp)), round(100 * max(tp))) == (-8, 14)
    assert "5.1%, 50.6%, 6.5% and +6.2%, kvcalc's TPOT from 2% low to 13% high" in text
    assert "TTFT 51.1% and bias +6.0% since SGLang's steps of over 2,048 tokens launch the norms" in text
    c1 = tw2["infx-dsr1-fp8-b200-sglang0512-tp8-1k1k-c1"]
    # 41 until SGLang 0.5.12 ran these prompt steps without CUDA graphs (the experts on FlashInfer's runner), 2026-12-07
    # (79 until SGLang's overlap loop ran a step past a request's end, 2026-12-07)
    assert (round(c1["measured"]["mean_ttft_ms"]), round(predict(c1["id"])["mean_ttft_ms"])) == (160, 81)
    assert "160 ms measured at one user on the B200s, where kvcalc has 81 (79 until SGLang's overlap loop ran a step" in text
    # docs/engines.md quotes the same run to a tenth of a millisecond.
    eng_doc = " ".join((ROOT / "docs" / "engines.md").read_text().split())
    assert round(predict(c1["id"])["mean_ttft_ms"], 1) == 81.2 and c1["measured"]["mean_ttft_ms"] == 160.36
    assert "went from a TTFT of 41.2 ms to 78.6 (81.2 since the overlap loop runs a step past a request's end" in eng_doc
    c2 = tw2["infx-dsr1-fp8-b200-sglang0512-tp8-1k1k-c2"]
    assert (c1["measured"]["mean_ttft_ms"], c2["measured"]["mean_ttft_ms"]) == (160.36, 177.91)
    assert "measured 70.93 ms at one user and 117.27 at two where the B200s measured 160.36 and 177.91" in text
    rejected = (SERVING / "rejected" / "2026-12-06-twenty-second-set.md").read_text()
    assert len([ln for ln in rejected.splitlines() if ln.startswith("- ")]) == 52 and "Fifty-two other candidates" in text


def test_the_allreduce_norm_fusion_paragraph_is_as_the_runs_score():
    """docs/accuracy.md: SGLang's FlashInfer all-reduce fusion, where each release turns it on by itself."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import StepModel
    from kvcalc.specs.dtypes import kv_dtype

    text = " ".join(DOC.read_text().split())
    ds = resolve_model("deepseek-v3")
    fused = StepModel(ds, resolve_gpu("b200"), kv_dtype("fp8"), tp=8, engine=engine("sglang==0.5.12"))
    plain = StepModel(ds, resolve_gpu("b200"), kv_dtype("fp8"), tp=8, engine=engine("sglang==0.5.12"), dp=1, ep=1)
    assert fused.ar_fusion and plain.ar_fusion  # the same deployment twice: the rule is the release's, not asked for
    assert 2 * ds.num_layers - 1 == 121 and round(121 * 2.7e-6 * 1e3, 2) == 0.33
    assert "2 L - 1 small kernels fewer a step, 121 for DeepSeek-V3 (0.33 ms at 2.7 us)" in text
    sets = {}
    for name in ("twenty-first", "twenty-second"):
        errs = [errors(c) for c in CASES if c.get("held_out") == f"2026-12-06 ({name} set)"]
        sets[name] = round(100 * sum(abs(e["mean_tpot_ms"]) for e in errs) / len(errs), 1)
    # 21.9% and 9.1% then, as quoted; 19.6% and 6.5% since an MLA layer's down projections are counted as SGLang runs
    # them (the same day); the twenty-first's 19.6% until the replay took each run's stated memory fraction (the same day),
    # 19.8% until SGLang's admission tests were modelled (2026-12-07).
    # 19.4% and 6.5% until the H200 runs' shared expert ran inside SGLang's fused MoE call, 2026-12-07 (docs/accuracy.md's
    # sets' own paragraphs give the figures since); the twenty-second's 5.9% until 0.5.12 ran the B200 curve's prompt
    # steps without CUDA graphs (2026-12-07); 13.1% and 6.7% until SGLang's overlap loop took requests in a step late
    # (the same day)
    assert sets == {"twenty-first": 13.0, "twenty-second": 6.8}
    assert "the twenty-second set's TPOT MAE from 11.7% to 9.1% and the twenty-first's from 24% to 22%" in text

    def tpot(i: str) -> int:
        return round(100 * errors(next(c for c in CASES if c["id"] == i))["mean_tpot_ms"])

    # (-9, 20) then, as quoted; DeepSeek-R1's -13 since an MLA layer's down projections are counted as SGLang runs them.
    assert (tpot("sglcb-dsr1-b200x8-c1-1k1k"), tpot("sglcb-gptoss120b-b200x8-c1-sharegpt")) == (-13, 20)
    assert "DeepSeek-R1 at one user on B200s from 6% to 9% low and its gpt-oss-120b from 29% to 20% high" in text
    assert "output throughput MAE went from 32.8% to 32.7% and TPOT from 20.2% to 20.1%, and the TP 8 TPOT bias" in text


def test_the_twenty_third_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: eleven runs (GLM-5-FP8 on 8 H200s under a vLLM nightly past 0.16.0rc0; the SGLang cookbook's
    first Qwen3 revision on 8 B200s; its first DeepSeek-V3.1 revision on 8 MI300Xs), scored at 1861b40 before they joined;
    one rule read since (vLLM's sparse-MLA kernel's padded heads)."""
    text = " ".join(DOC.read_text().split())
    tw3 = {c["id"]: c for c in CASES if c.get("held_out") == "2026-12-06 (twenty-third set)"}
    assert len(tw3) == 11
    assert sorted({(c["model"], c["gpu"], c["engine"]) for c in tw3.values()}) == [
        ("deepseek-v3", "mi300x", "sglang@0.5.7"),
        ("glm-5", "h200", "vllm@0.16"),
        ("qwen3-235b-a22b", "b200", "sglang@0.5.6"),
    ]
    errs = {i: errors(c) for i, c in tw3.items()}
    assert all(len(e) == 4 for e in errs.values())
    mae = [round(100 * sum(abs(e[k]) for e in errs.values()) / len(errs), 1) for k, _ in METRICS]
    tp8 = [e["mean_tpot_ms"] for i, e in errs.items() if int(tw3[i]["tp"]) == 8]
    # 17.1%, 15.8%, 44.8%, 10.8% and -8.1% at scoring (quoted below), until vLLM's sparse-MLA kernel was charged its
    # padded heads, the same day.
    # ([15.5, 14.2, 42.3, 10.2] and -7.5 until the B200's Triton fused-MoE calls took their own measured share, the same day)
    # ([14.1, 12.8, 30.2, 10.2] until the MI300X run's shared expert ran inside SGLang's fused MoE call, 2026-12-07)
    # ([14.6, 13.3, 30.3, 10.4] and the Qwen3-235B runs' TTFT 8% to 44% low until SGLang's overlap loop took requests in
    # a step late, the same day)
    # ([14.7, 13.4, 25.8, 10.5] until it ran a step past a request's end, the same day)
    assert mae == [14.7, 13.4, 25.0, 10.5] and (round(100 * sum(tp8) / len(tp8), 1), len(tp8)) == (-5.4, 10)
    assert "14.7%, 13.4%, 25.0%, 10.5% and -5.4%, their TTFT 7% to 37% low, since it runs a step past a request's end" in text
    assert "14.7%, 13.4%, 25.8%, 10.5% and -5.4%, the Qwen3-235B runs' TTFT 8% to 37% low, since SGLang's overlap loop" in text
    assert "14.6%, 13.3%, 30.3%, 10.4% and -5.4% since the MI300X DeepSeek-V3.1 run's shared expert runs inside" in text
    assert (
        "and at 14.1%, 12.8%, 30.2%, 10.2% and -5.4% since the B200's Triton fused-MoE calls take their own measured share "
        "(docs/engines.md, also read after scoring), the Qwen3-235B runs' TTFT from 29-53% to 8-44% low and their request "
        "throughput from 2% low to 26% high;" in text
    )
    assert "15.5%, 14.2%, 42.3%, 10.2% and -7.5% since vLLM's sparse-MLA kernel is charged its padded heads" in text
    assert (
        "request throughput MAE 17.1%, output throughput 15.8%, TTFT 44.8%, TPOT 10.8% (11 runs), **TP 8 TPOT bias -8.1%** "
        "(10 runs)" in text
    )
    qwen = [e for i, e in errs.items() if tw3[i]["model"] == "qwen3-235b-a22b"]
    rt = [round(100 * e["request_throughput_per_s"]) for e in qwen]
    tt = [round(100 * e["mean_ttft_ms"]) for e in qwen]
    # (2, 26) and (-53, -29) at scoring, as quoted, until the B200's Triton fused-MoE calls took their own measured share
    assert len(qwen) == 9 and (min(rt), max(rt)) == (-2, 26) and max(abs(round(100 * e["mean_tpot_ms"])) for e in qwen) == 14
    assert (min(tt), max(tt)) == (-37, -7)  # -8 until SGLang's overlap loop ran a step past a request's end, 2026-12-07
    assert "the Qwen3-235B runs 2% to 26% high on request throughput and within 14% on TPOT; TTFT 29% to 53% low" in text
    old, new = tw3["sglcb-old-qwen3-235b-b200x8-c1-1k1k"], next(c for c in CASES if c["id"] == "sglcb-qwen3-235b-b200x8-c1-1k1k")
    assert (round(new["measured"]["mean_ttft_ms"]), round(old["measured"]["mean_ttft_ms"])) == (99, 96)
    assert round(predict(old["id"])["mean_ttft_ms"]) == 68  # 64 until SGLang's overlap loop ran a step past a request's end
    assert "(99 ms measured at one user in the re-run, 96 here, 64 kvcalc; 68 since SGLang's overlap loop runs a step" in text
    g = errs["recipes-glm5-fp8-h200-tp8-8k1k-rr10"]
    assert [round(100 * g[k]) for k in ("output_throughput_tok_per_s", "mean_tpot_ms", "mean_ttft_ms")] == [22, -15, -35]
    assert "GLM-5 39% high on output throughput, TPOT 21% low, TTFT 63% low at scoring (22%, 15% and 35% since" in text
    glm = tw3["recipes-glm5-fp8-h200-tp8-8k1k-rr10"]["measured"]
    assert glm["mean_itl_ms"] == glm["mean_tpot_ms"] == 54.52  # no chunk carried a second token: MTP off (inferred)
    m = errs["sglcb-old-dsv31t-mi300xx8-dp8-ep8-dpattn-c100-sharegpt"]
    first = errors(next(c for c in CASES if c["id"] == "sglcb-dsv3-mi300xx8-dp8-ep8-dpattn-sglang057-c100-sharegpt"))
    # ([53, -34, 137, -65] until its shared expert ran inside SGLang's fused MoE call, 2026-12-07)
    # ([58, -36, 145, -66] until SGLang's overlap loop took requests in a step late, the same day)
    assert [round(100 * x[k]) for x in (m, first) for k in ("output_throughput_tok_per_s", "mean_tpot_ms")] == [60, -37, 147, -66]
    assert "(58% and 36%, 145% and 66%, since its shared expert runs inside SGLang's fused MoE call, 2026-12-07;" in text
    assert "60% and 37%, 147% and 66%, since SGLang's overlap loop takes requests in a step late, the same day)" in text
    assert "53% high on output throughput, TPOT 34% low, where kvcalc is 137% high and 65% low on the earlier" in text
    rejected = (SERVING / "rejected" / "2026-12-06-twenty-third-set.md").read_text()
    assert len([ln for ln in rejected.splitlines() if ln.startswith("- ")]) == 46 and "Forty-six other candidates" in text


def test_the_v0_triton_mla_paragraph_is_as_the_runs_score():
    """docs/engines.md: vLLM V0's Triton MLA decode on the MI300X, its worked floor and the runs it moves."""
    from kvcalc.engine.steptime import StepModel
    from kvcalc.specs.dtypes import kv_dtype as _kv

    text = " ".join((ROOT / "docs" / "engines.md").read_text().split())
    v0 = StepModel(resolve_model("deepseek-v3"), resolve_gpu("mi300x"), _kv("bf16"), 8, engine=engine("vllm@0.7.3"))
    # 61 layers x (512 + 64) x 2 B = 70,272 B a token; a part of cdiv(3,600, 4) = 900 tokens; one wave.
    assert 61 * 576 * 2 == 70272 and round(v0.attn_floor_s(4, 3600) * 1e3, 1) == round(900 * 70272 / 5.27e9 * 1e3, 1) == 12.0
    # The KV reads at the bandwidth: 4 x 3,600 x 70,272 B over the MI300X's 5.3 TB/s (its spec) x eta_bw.
    assert round(4 * 3600 * 70272 * v0.inv_bw * 1e3, 1) == 0.2
    assert "900 x 70,272 B / 5.27 GB/s = 12.0 ms a step, where the KV reads at the bandwidth take 0.2 ms" in text
    runs = [c for c in CASES if c["gpu"] == "mi300x" and c["model"] == "deepseek-v3" and c["engine"].startswith("vllm@0.7")]
    tpot = sorted(round(-100 * errors(c)["mean_tpot_ms"]) for c in runs)
    thr = sorted(round(100 * errors(c)["output_throughput_tok_per_s"]) for c in runs)
    # (17, 42, 30, 74) until vLLM V0's decodes past max_seq_len_to_capture ran without CUDA graphs, 2026-12-06
    assert len(runs) == 9 and (tpot[0], tpot[-1], thr[0], thr[-1]) == (17, 41, 30, 71)
    assert "from 34-51% to 17-42% low on TPOT (their throughput from 59-106% to 30-74% high; 17-41% and 30-71% since" in text
    assert "TP 8 TPOT bias -18.4% to -17.7%" in text  # -17.6% since the B200's Triton MoE share (NOW_MAE)


def test_the_sglang_fa3_mla_paragraph_is_as_the_runs_score():
    """docs/engines.md: SGLang's own FlashAttention 3 MLA call on Hopper for every release from 0.4.5.post1, its worked
    step and the runs it moves."""
    from kvcalc.engine.engines import mla_kernel
    from kvcalc.engine.steptime import StepModel

    text = " ".join((ROOT / "docs" / "engines.md").read_text().split())
    h200, b200 = resolve_gpu("h200"), resolve_gpu("b200")
    m = resolve_model("deepseek-v3")
    kinds = {r: mla_kernel(engine(r), h200, m) for r in ("sglang@0.4.5", "sglang@0.4.5.post1", "sglang@0.5.2", "sglang")}
    assert kinds == {"sglang@0.4.5": "default", "sglang@0.4.5.post1": "sglang", "sglang@0.5.2": "sglang", "sglang": "sglang"}
    # Compute capability 10: trtllm_mla for a DeepseekV3ForCausalLM model from 0.5.4 (server_args.py), FlashInfer's MLA
    # (vLLM's measured module) for another class.
    ds, kimi, glm = (resolve_model(n) for n in ("deepseek-v3", "kimi-k2", "glm-4.7-flash"))
    got = {
        (r, mm.name): mla_kernel(engine(r), b200, mm)
        for r in ("sglang@0.5.3", "sglang@0.5.4", "sglang")
        for mm in (ds, kimi, glm)
    }
    assert got == {
        ("sglang@0.5.3", "deepseek-v3"): "default",
        ("sglang@0.5.3", "kimi-k2"): "default",
        ("sglang@0.5.3", "glm-4.7-flash"): "default",
        ("sglang@0.5.4", "deepseek-v3"): "sglang",
        ("sglang@0.5.4", "kimi-k2"): "sglang",
        ("sglang@0.5.4", "glm-4.7-flash"): "default",
        ("sglang", "deepseek-v3"): "sglang",
        ("sglang", "kimi-k2"): "sglang",
        ("sglang", "glm-4.7-flash"): "default",
    }
    assert (b200.mla.latency_us, b200.mla.sglang_latency_us) == (18.5, 15)
    assert (
        "GLM-4.7-Flash on one B200 under 0.5.7, `plan`'s closed-form TPOT at 1 request/s of 8,000 + 1,000 tokens: 13.2 -> 13.5 ms."
        in text
    )
    # 16 requests at 1,500 tokens, DeepSeek-V3 at TP 8: 61 MLA layers, 62 -> 17 us a call (the H200 spec's latency_us and
    # sglang_latency_us), 61 x 45 us = 2.745 ms less a step.
    assert (h200.mla.latency_us, h200.mla.sglang_latency_us) == (62, 17)
    import dataclasses

    bf16, e052 = kv_dtype("bf16"), engine("sglang@0.5.2")
    fa3 = StepModel(m, h200, bf16, 8, engine=e052).step(16, 1500).t_step_s
    # As before: the spec's SGLang figure unread, the H200's 62 us taken.
    vllm_call = dataclasses.replace(h200, mla=dataclasses.replace(h200.mla, sglang_latency_us=None))
    old = StepModel(m, vllm_call, bf16, 8, engine=e052).step(16, 1500).t_step_s
    assert fa3 == pytest.approx(old - 61 * 45e-6, rel=1e-9)
    assert (f"{old * 1e3:.3f}", f"{fa3 * 1e3:.3f}") == ("21.135", "18.390")  # as roofline prints them
    assert "61 MLA calls at 17 us where they were 62, 21.135 -> 18.390 ms a step (61 x 45 us = 2.745 ms less)" in text
    by_id = {c["id"]: c for c in CASES}

    def span(prefix: str, metric: str) -> tuple[int, int]:
        # (the runs as the paragraph names them: the twenty-eighth held-out set's InferenceMAX runs came after)
        xs = sorted(
            round(100 * errors(c)[metric])
            for i, c in by_id.items()
            if i.startswith(prefix) and "twenty-eighth" not in c.get("held_out", "")
        )
        return xs[0], xs[-1]

    assert span("infmax-h200x8-deepseek-v3-sglang-tp8-", "mean_tpot_ms") == (5, 9)
    assert "InferenceMAX's three H200 runs of 0.5.2 (DeepSeek-V3, 16 and 32 users): TPOT from 16-21% to 5-9% high." in text
    # (11, 26) and (7, 21) until SGLang's admission tests were modelled (2026-12-07)
    assert span("mvll-sgl045p3-dsr1-h200x8-", "output_throughput_tok_per_s") == (15, 26)
    assert span("sglattn-h200x8-dsv3-sglang046-", "output_throughput_tok_per_s") == (7, 22)
    assert "Since SGLang's admission tests are modelled (2026-12-07, docs/simulation.md): " in text
    assert "Michaelvll's 15-26% and the table's 7-22%." in text
    assert (
        round(100 * errors(by_id["gpustack-h200x8-deepseek-r1-0528-sglang053-tp8-sharegpt-inf"])["output_throughput_tok_per_s"])
        == 29  # 21 until its shared expert ran inside the fused MoE call, 2026-12-07
    )
    assert "(29% since its shared expert runs inside the fused MoE call, 2026-12-07, docs/simulation.md)" in text
    assert (
        "Michaelvll's eight H200 runs of 0.4.5.post3 from 10-21% to 11-26% high, the SGLang attention-backend table's six "
        "(0.4.6, FlashAttention 3 and FlashInfer alike) from 0-15% to 7-21% high, and GPUStack's 0.5.3 run of 1,000 "
        "requests at once from 12% to 21% high" in text
    )
    # NOW_MAE was [31.1, 29.7, 40.6, 19.1, -17.7] from this change until NVFP4 checkpoints' matmuls ran at the fp4 peak
    assert (
        "request throughput MAE 30.93% -> 31.08%, output 29.52% -> 29.66%, TTFT 40.55% -> 40.59%, TPOT 19.24% -> 19.13%, "
        "TP 8 TPOT bias -17.51% -> -17.72%" in text
    )


def test_the_sglang_0_4_triton_mla_paragraph_is_as_the_runs_score():
    """docs/engines.md: SGLang 0.4.1 to 0.4.4's fixed-split Triton MLA decode, its worked floors and the runs it moves."""
    from kvcalc.engine.steptime import StepModel
    from kvcalc.specs.dtypes import kv_dtype as _kv

    text = " ".join((ROOT / "docs" / "engines.md").read_text().split())
    m = resolve_model("deepseek-v3")
    hip = StepModel(m, resolve_gpu("mi300x"), _kv("bf16"), 8, engine=engine("sglang@0.4.2.post4"))
    # 16 splits on ROCm: a part of cdiv(3,600, 16) = 225 tokens; 4 requests x 1 block x 16 = 64 blocks, one wave of 304.
    assert round(hip.attn_floor_s(4, 3600) * 1e3, 1) == round(225 * 70272 / 5.27e9 * 1e3, 1) == 3.0
    assert "parts of 225 tokens, 64 blocks, one wave, 225 x 70,272 B / 5.27 GB/s = 3.0 ms a step" in text
    # DP attention on H200s: 128 heads a GPU, 8 blocks a request; 16 requests x 8 x 8 splits = 1,024 blocks, 4 waves of
    # 132 x 2 = 264, parts of cdiv(3,600, 8) = 450 tokens.
    dp = StepModel(m, resolve_gpu("h200"), _kv("bf16"), 1, engine=engine("sglang@0.4.3.post2"), dp=8)
    assert -(-16 * 8 * 8 // 264) == 4 and round(dp.attn_floor_s(16, 3600) * 1e3) == round(4 * 450 * 70272 / 5.27e9 * 1e3) == 24
    assert "16 requests a rank bring 1,024 blocks, four waves of the 264 the H200 runs at once, 24 ms a step" in text
    runs = {c["id"]: c for c in CASES if c["engine"] in ("sglang@0.4.2.post4", "sglang@0.4.3.post2")}
    mi = [errors(c) for c in runs.values() if c["gpu"] == "mi300x"]
    h2 = [errors(c) for c in runs.values() if c["gpu"] == "h200"]
    assert len(mi) == len(h2) == 9
    tpot = sorted(round(-100 * e["mean_tpot_ms"]) for e in mi)
    thr = sorted(round(100 * e["output_throughput_tok_per_s"]) for e in mi)
    # (32, 44, 58, 94) until SGLang 0.4.1 to 0.4.5's prompt steps took their own posted host time a kernel, 2026-12-06
    # (32, 44, 57, 94) until releases without a custom all-reduce on ROCm were charged RCCL's, 2026-12-07
    # (29, 42, 51, 89) until SGLang's overlap loop ran a step past a request's end, 2026-12-07
    assert (tpot[0], tpot[-1], thr[0], thr[-1]) == (29, 42, 52, 89)
    assert "52-89% high since SGLang's overlap loop runs a step past a request's end, the same day)." in text
    assert "29-42% low on TPOT and 51-89% high on output throughput since releases without a custom all-reduce on ROCm" in text
    assert "from 39-57% to 32-44% low on TPOT (their output throughput from 74-137% to 58-94% high; 57-94% since" in text
    tpot = sorted(round(100 * e["mean_tpot_ms"]) for e in h2)
    thr = sorted(round(100 * e["output_throughput_tok_per_s"]) for e in h2)
    # (-31, 54, -31, 57) until 0.4.1.post7 to 0.4.4.post3 kept the overlap scheduler under DP attention (below)
    # (-32, 53, -31, 60) until SGLang 0.4.0 to 0.4.4's DP gather and all-reduce took their measured times, 2026-12-07
    # (-31, 58, -32, 56) until SGLang's overlap loop took requests in a step late, the same day
    # (-31, 57, -32, 56) until it ran a step past a request's end, the same day
    assert (tpot[0], tpot[-1], thr[0], thr[-1]) == (-31, 33, -20, 67)
    assert (
        "since it runs a step past a request's end (the same day, docs/simulation.md), between 31% low and 33% high on TPOT "
        "(the four at 128 users 25-33% high" in text
    )
    assert "their output throughput between 20% low and 67% high." in text
    assert "between 31% low and 57% high on TPOT (the four at 128 users 52-57% high), their throughput as it was;" in text
    assert (
        "those nine runs stand between 31% low and 58% high on TPOT (the four at 128 users 53-58% high), their output "
        "throughput between 32% low and 56% high;" in text
    )
    assert all(runs[i].get("dp") == 8 for i in runs if runs[i]["gpu"] == "h200")
    assert (
        "The corpus's nine H200 runs of 0.4.3.post2 under DP attention move from between 31% low and 54% high on TPOT to "
        "between 32% low and 53% high (the four at 128 users 49-53% high), their output throughput to between 31% low and "
        "60% high" in text
    )
    assert "to between 31% low and 54% high on TPOT, their output throughput from 11-97% to between 31% low and 57% high" in text
    # docs/simulation.md's sentence on the two fixed-split launches priced unasked.
    from kvcalc.engine.engines import triton_mla_fixed_splits as fixed

    sim = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    assert (
        "vLLM V0's on the MI300X and MI325X, and SGLang 0.4.1 to 0.4.4's, 8 parts a request on Hopper and, from "
        "0.4.2.post2, 16 on those AMD GPUs." in sim
    )
    got = {
        (r, g): fixed(engine(r), m, resolve_gpu(g))
        for r in ("vllm@0.7.3", "sglang@0.4.1", "sglang@0.4.2.post2")
        for g in ("mi300x", "mi325x", "h100-sxm", "h200")
    }
    assert got == {
        ("vllm@0.7.3", "mi300x"): (4, "vllm-v0"),
        ("vllm@0.7.3", "mi325x"): (4, "vllm-v0"),
        ("vllm@0.7.3", "h100-sxm"): None,
        ("vllm@0.7.3", "h200"): None,
        ("sglang@0.4.1", "mi300x"): None,
        ("sglang@0.4.1", "mi325x"): None,
        ("sglang@0.4.1", "h100-sxm"): (8, "sglang-cuda"),
        ("sglang@0.4.1", "h200"): (8, "sglang-cuda"),
        ("sglang@0.4.2.post2", "mi300x"): (16, "sglang-hip"),
        ("sglang@0.4.2.post2", "mi325x"): (16, "sglang-hip"),
        ("sglang@0.4.2.post2", "h100-sxm"): (8, "sglang-cuda"),
        ("sglang@0.4.2.post2", "h200"): (8, "sglang-cuda"),
    }
    # NOW_MAE was [30.9, 29.5, 40.5, 19.2, -17.5] until SGLang's FlashAttention 3 MLA call was taken on Hopper from
    # 0.4.5.post1 (the paragraph above)
    assert "request throughput MAE 32.0% -> 30.9%, output 30.5% -> 29.5%, TPOT 19.21% -> 19.24%" in text
    assert "-18.0% -> -17.5%; TTFT unchanged (40.5%)" in text


def test_the_b200_moe_share_paragraph_is_as_the_spec_and_the_runs_say():
    """docs/engines.md: the B200's Triton fused-MoE share, its worked figure and the runs it moves."""
    from kvcalc.engine.steptime import StepModel

    text = " ".join((ROOT / "docs" / "engines.md").read_text().split())
    spec = resolve_gpu("b200").moe
    assert spec is not None and (spec.bf16_a, spec.bf16_b) == (0.213, 314) and "a 0.213, b 314" in text
    # Qwen3-235B at TP 8: 1,536 / 8 = 192 of an expert's width a GPU.
    m = resolve_model("qwen3-235b-a22b")
    s = StepModel(m, resolve_gpu("b200"), kv_dtype("bf16"), 8)
    assert (
        round(0.213 * 192 / (192 + 314), 3) == round(s.moe_eta(s.c), 3) == 0.081 and round(0.666 * 192 / (192 + 545), 3) == 0.174
    )
    assert "0.213 x 192 / 506 = 0.081 of the 2.25 PFLOP/s peak where Hopper's gave 0.174" in text
    tw3 = [c for c in CASES if c.get("held_out") == "2026-12-06 (twenty-third set)" and c["model"] == "qwen3-235b-a22b"]
    tt = sorted(round(-100 * errors(c)["mean_ttft_ms"]) for c in tw3)
    # (8, 44) until SGLang's overlap loop took requests in a step late, 2026-12-07
    # (8, 37) until it ran a step past a request's end, the same day
    assert (tt[0], tt[-1]) == (7, 37) and "B200s from 29-53% to 8-44% low on TTFT (8-37% since SGLang's overlap loop" in text
    assert "7-37% since it runs a step past a request's end, the same day)." in text
    # The corpus's TTFT MAE at that change (NOW_MAE since has it 40.6: the silent requests and the flag sweep's replay).
    assert "TTFT MAE 44.5% -> 43.6%" in text


def test_vllm_b200_qwen3_fp8_run_takes_flashinfers_moe_kernel_as_docs_engines_md_says():
    # vLLM from 0.15 runs block-fp8 experts on FlashInfer's TensorRT-LLM kernel on B200 (engines.VLLM_FLASHINFER_MOE,
    # since 2026-12-06): the one corpus run it moves, a June 2026 main build (the vllm@0.21 record), was 6% low on
    # throughput and 5% low on TTFT before; its prompt steps take the kernel's measured share, below Triton's.
    c = next(c for c in CASES if c["id"] == "vllm43232-b200x4-qwen3-235b-fp8-main202606-random30000x1000-c64")
    e = errors(c)
    assert (round(100 * e["request_throughput_per_s"]), round(100 * e["mean_ttft_ms"])) == (-10, 3)
    text = " ".join((ROOT / "docs" / "engines.md").read_text().split())
    assert "from 6% to 10% low on throughput, its TTFT from 5% low to 3% high" in text


def test_the_nvfp4_paragraph_is_as_the_runs_score():
    """docs/engines.md, NVFP4 checkpoints on Blackwell: the eight NVFP4 DeepSeek-R1 runs on B200s (twelfth set), the
    three TensorRT-LLM ones with their moe_config.backend TRTLLM, the five SGLang 0.5.3rc1 ones at EP 4 and 8 with
    --enable-flashinfer-trtllm-moe."""
    text = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    runs = {c["id"]: c for c in CASES if "dsr1fp4" in c["id"]}
    assert len(runs) == 8 and all(c["moe_backend"] == "trtllm" and c["weight_dtype"] == "fp4" for c in runs.values())
    errs = {i: errors(c) for i, c in runs.items()}

    def pct(part: str, key: str) -> list[int]:
        return [round(100 * e[key]) for i, e in errs.items() if part in i]

    # ([25, 22, 25] and [-8, -16, -9] until TensorRT-LLM deployments took its own measured all-reduce, 2026-12-08)
    assert pct("trtllm", "mean_tpot_ms") == [22, 16, 20] and pct("trtllm", "mean_ttft_ms") == [-8, -17, -9]
    assert f"(22%, 16% and 20% high and 8-17% low {TRT_AR}, docs/simulation.md)" in text
    assert "their TPOT goes from 27%, 21% and 27% high to 25%, 22% and 25%, their TTFT from 18-24% low to 8-16% low" in text
    # The SGLang runs in the cases' order: 4 GPUs at 4 and 16 users, 8 GPUs at 4 and 64, 4 GPUs at 8 with 8k outputs.
    # ([-0.9, -20.5, -5.3, -40.4, 2.4] and [8, 31, 14, 108, -1] until SGLang's overlap loop took requests in a step late,
    # 2026-12-07)
    assert [round(100 * e["mean_tpot_ms"], 1) for i, e in errs.items() if "sglang053" in i] == [-1.0, -20.3, -5.3, -40.3, 2.4]
    assert pct("sglang053", "request_throughput_per_s") == [8, 30, 14, 107, -1]
    assert (
        "their TPOT is 1.0%, 20.3%, 5.3% and 40.3% low and 2.4% high, their throughput 8%, 30%, 14% and 107% high and 1% low."
        in text
    )
    assert "(kvcalc's TTFTs are 70% and 94% below theirs; 72% and 95% until that overlap loop's late admission)" in text
    assert "Their TPOT goes from 0.9% high to 0.9% low at 4 users on 4 GPUs, 19.5% low to 20.5% at 16, 3.2% low to 5.3%" in text
    assert "29%, 12% and 106% high and 3% low to 8%, 31%, 14% and 108% high and 1% low" in text


def test_sglangs_output_reserve_paragraph_is_as_the_runs_score(monkeypatch):
    """docs/simulation.md: what SGLang's admission tests (its reserve for the running requests' outputs to come, and with
    its radix cache off its ignore-EOS test) move over the corpus, against the same runs replayed without them
    (Engine.token_ratio None)."""
    from kvcalc.engine.engines import Engine

    text = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    # (The corpus as it stood; the twenty-fourth set came after, and is checked against its server logs:
    # test_sglangs_admission_against_the_studys_server_logs; the twenty-fifth, twenty-sixth and twenty-eighth after it.)
    sgl = [
        c
        for c in CASES
        if c["engine"].startswith("sglang")
        and not engine(c["engine"]).older_than(0, 4)
        and c.get("held_out") not in (TWENTYFOURTH, TWENTYFIFTH, TWENTYSIXTH, TWENTYEIGHTH)
    ]
    now = {c["id"]: predict(c["id"]) for c in sgl}
    monkeypatch.setattr(Engine, "token_ratio", property(lambda self: None))
    before = {c["id"]: predict.__wrapped__(c["id"]) for c in sgl}  # (uncached: the rule off)
    changed = [c for c in sgl if now[c["id"]] != before[c["id"]]]
    points = {
        c["id"]: max(
            abs(now[c["id"]][k] - before[c["id"]][k]) / float(c["measured"][k]) for k, _ in METRICS if c["measured"].get(k)
        )
        for c in changed
    }
    moved = [i for i, p in points.items() if p >= 5e-5]  # (the others by rounding alone: under 0.005 points)
    top = max(points, key=points.__getitem__)
    c = next(x for x in sgl if x["id"] == top)
    ttft = [round(100 * (p["mean_ttft_ms"] / c["measured"]["mean_ttft_ms"] - 1)) for p in (before[top], now[top])]
    # (27 points and [-21, 6] until DeepSeek-V3's shared expert ran inside SGLang's fused MoE call, 2026-12-07)
    # (26 points and [-21, 5] until SGLang's overlap loop took requests in a step late, the same day)
    assert (len(moved), len(points) - len(moved), round(100 * max(points.values()))) == (13, 2, 28)
    assert top == "infx-dsr1-fp8-h200-sglang0512-tp8-8k1k-c64"
    assert ttft == [-20, 8]
    assert "SGLang's admission move 13 SGLang runs (two more by rounding alone), none by more than 28 points (26 until" in text
    assert (
        "8,192 + 1,024 tokens and 64 users, from 20% low to 8% high; from 21% low to 5% high until that overlap loop's late "
        "admission, to 6% high until the shared expert)" in text
    )
    # (The twenty-sixth set's SGLang runs ignore EOS with the radix cache on, which takes the other test: not these; the
    # twenty-eighth set's, vLLM's and TensorRT-LLM's among them, came after.)
    eos = [x for x in CASES if x.get("ignore_eos") and x.get("held_out") not in (TWENTYFOURTH, TWENTYSIXTH, TWENTYEIGHTH)]
    assert len(eos) == 48 and all(x["engine"].startswith("sglang") and x.get("prefix_caching") is False for x in eos)
    assert "48 runs of the corpus, `ignore_eos` in cases.yaml" in text


TWENTYFOURTH = "2026-12-07 (twenty-fourth set)"
TWENTYFIFTH = "2026-12-07 (twenty-fifth set)"
TWENTYSIXTH = "2026-12-07 (twenty-sixth set)"
TWENTYSEVENTH = "2026-12-07 (twenty-seventh set)"
TWENTYEIGHTH = "2026-12-07 (twenty-eighth set)"


def test_the_studys_traces_are_as_its_runs_served_them():
    """tests/serving/traces: the twenty-fourth set's traces, regenerated from the generator the study names, hold what
    its report and its runs say: 120 requests each; the default outputs' median 2,338, mean 2,812 and largest 10,541
    tokens (docs/REPORT.md), all sent within 56 s at 2 requests/s; and each run's total output, out_tok_s x wall_s, to
    0.1% (wall_s is rounded to 0.1 s)."""
    runs = [c for c in CASES if c.get("held_out") == TWENTYFOURTH]
    assert len(runs) == 21 and {c["dataset"] for c in runs} == {"trace"}
    assert sum("sweep0907" in c["id"] for c in runs) == 3
    _, P, O = run_trace("reasoning_q2")
    assert (len(O), int(np.median(O)), round(float(O.mean())), int(O.max())) == (120, 2338, 2812, 10541)
    arr, _, _ = run_trace("reasoning_q2")
    assert 55 < arr[-1] < 56 and (P == 387).all()
    for c in runs:
        _, _, out = run_trace(c["trace"])
        m = c["measured"]
        assert abs(m["output_throughput_tok_per_s"] * m["duration_s"] / out.sum() - 1) < 0.001, c["id"]


def test_sglangs_admission_against_the_studys_server_logs(monkeypatch):
    """The twenty-fourth held-out set's server logs (SGLang 0.5.18, HwaminJung00/sglang-peak-kv-admission: w3_runs.csv's
    retracted, the requests its 'Retract requests' lines name, and max_running, its largest '#running-req', a line each
    40 decode steps and each prompt step) against kvcalc's replay with SGLang's admission tests (TokenRatio: the reserve
    for the outputs to come with the radix cache on, the ignore-EOS test with it off) and without them, as kvcalc
    replayed SGLang until 2026-12-07 (a request taken in whenever it fit, the newest retracted first)."""
    every = [c for c in CASES if c.get("held_out") == TWENTYFOURTH]
    runs = [c for c in every if "sweep0907" not in c["id"]]  # the eighteen of w3_runs.csv; the sweep's three below
    logged = [c["measured"]["retracted_requests"] for c in runs]
    batch = [c["measured"]["max_running_requests_logged"] for c in runs]
    got = [replay(c["id"]) for c in runs]
    assert logged == [0, 0, 7, 1, 19, 0, 22, 0, 0, 0, 5, 27, 0, 9, 3, 0, 29, 4]
    kv = [r.preemptions for r in got]
    # (At scoring, before the RTX 4090's weight reads took its own measured share, 2026-12-07: [0, 0, 13, 1, 24, 0, 21,
    # 0, 0, 6, 6, 31, 0, 11, 2, 0, 31, 2], 148, each within 6, none in 7 of the 8; the batch within 6; 1,563 without.)
    # (Before a retracted request rejoined SGLang's queue at its tail, TokenRatio.requeue, 2026-12-07: [0, 0, 9, 2, 23,
    # 0, 31, 0, 0, 0, 11, 30, 0, 15, 1, 0, 28, 1], 151, each within 9.)
    # (Before SGLang's overlap loop took requests in a step late, 2026-12-07: the twelfth 39, 180.)
    assert kv == [0, 0, 6, 2, 33, 0, 42, 0, 0, 0, 8, 37, 0, 15, 2, 0, 32, 1]
    # 178 against the logs' 126, each run within 20; retracting none where the log shows none in all 8.
    assert (sum(kv), sum(logged)) == (178, 126) and max(abs(a - b) for a, b in zip(kv, logged)) == 20
    assert sum(1 for a, b in zip(kv, logged) if b == 0 and a == 0) == 8 and logged.count(0) == 8
    # The log samples the batch, so its largest is at most the run's: kvcalc's is as large or larger, by 6 at most;
    # where --max-running-requests binds, the same.
    most = [r.max_running for r in got]
    assert all(0 <= a - b <= 5 for a, b in zip(most, batch)) and max(a - b for a, b in zip(most, batch)) == 5
    assert all(a == b for a, b, c in zip(most, batch, runs) if c.get("max_num_seqs") == b)
    # Without the tests: 1,557 retractions; at 2 requests/s 152 where the log has 19, and 152 where, the radix cache
    # off, it has none.
    monkeypatch.setattr(engine_module.Engine, "token_ratio", property(lambda self: None))
    old = [replay(c["id"]).preemptions for c in runs]
    assert sum(old) == 1557 and (old[4], logged[4], old[5], logged[5]) == (152, 19, 152, 0)
    text = " ".join(DOC.read_text().split())
    assert "kvcalc retracts 151 requests where the logs count 126 (148 at scoring), each run within 9 (6), none in the 8" in text
    assert "its largest batch is at most 5 over the logged one (6;" in text
    assert "the runs retract 1,557 (1,563 at scoring): at 2 requests a second 152 where the log counts 19" in text
    sim = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    assert "kvcalc retracts 178 where the logs count 126, each run within 20 (180 until the overlap loop took requests" in sim
    assert "the same runs retract 1,557, 152 where a log counts 19 and, the radix cache off, 152 where it counts none" in sim
    # The sweep's loads of 0.6, 0.8 and 8 a second, where the pool first fills: kvcalc retracts more at the onset.
    sweep = [c for c in every if "sweep0907" in c["id"]]
    assert [c["request_rate"] for c in sweep] == [0.6, 0.8, 8]
    assert [c["measured"]["retracted_requests"] for c in sweep] == [1, 4, 28]
    assert [c["measured"]["max_running_requests_logged"] for c in sweep] == [42, 51, 83]
    # (the tests still off; [61, 143, 192], as the doc quotes, until SGLang's overlap loop took requests in a step late)
    assert [replay(c["id"]).preemptions for c in sweep] == [62, 142, 192]
    monkeypatch.undo()
    them = [replay(c["id"]) for c in sweep]
    assert [r.preemptions for r in them] == [6, 11, 35] and [r.max_running - 42 for r in them[:1]] == [4]  # ([6, 12, 33] before)
    assert [r.max_running for r in them] == [46, 54, 90]
    assert "kvcalc retracts 6, 12 and 33 requests where the logs count 1, 4 and 28 (61, 143 and 192 without" in text
    assert "its largest batch 4, 3 and 7 over the logged one" in text
    assert "178 over the eighteen (180 until SGLang's overlap loop took requests in a step late, 2026-12-07" in text
    assert "each within 20: 42 where the run with the smaller pool logs 22) and 6, 11 and 35" in text
    # At the logs' own step speed the run at 2 a second still retracts more than its log counts.
    fast = replay(runs[4]["id"], constants=DEFAULTS.with_efficiency(0.92))
    b = fast.bench
    assert (fast.preemptions, round(b.output_throughput_tok_per_s), round(b.ttft_s.mean, 1), round(b.tpot_s.p50 * 1e3, 1)) == (
        29,
        1165,
        18.1,
        24.7,
    )
    assert (
        runs[4]["measured"]["median_tpot_ms"] == pytest.approx(24.0, abs=0.01)
        and round(runs[4]["measured"]["output_throughput_tok_per_s"]) == 1181
    )
    assert "the run at 2 a second retracts 29 where its log counts 19 and serves 1,165 output tokens a second" in text


def test_the_twenty_fourth_set_is_as_the_doc_says():
    """docs/accuracy.md's bullet on the twenty-fourth held-out set: its scores and the TPOT medians it quotes, as the
    replay gives them (the study publishes no mean TPOT: kvcalc's median against the study's)."""
    text = " ".join(DOC.read_text().split())
    every = [c for c in CASES if c.get("held_out") == TWENTYFOURTH]
    runs = [c for c in every if "sweep0907" not in c["id"]]  # the eighteen scored first; the sweep's three below
    errs = [errors(c) for c in runs]
    thr = [e["request_throughput_per_s"] for e in errs]
    ttft = [e["mean_ttft_ms"] for e in errs]
    assert all("mean_tpot_ms" not in e for e in errs)
    mae = [
        round(100 * sum(abs(x) for x in xs) / len(xs), 1) for xs in (thr, [e["output_throughput_tok_per_s"] for e in errs], ttft)
    ]
    # (At scoring, before the RTX 4090's weight reads took its own measured share, 2026-12-07: [11.7, 11.7, 46.9], -14%
    # to -6% and -7% to 263%, the TPOT medians 13% to 30% above, 15% at 24; quoted.)
    # ([7.7, 7.7, 25.2] and TTFT to 73% high until a retracted request rejoined SGLang's queue at its tail, 2026-12-07;
    # quoted)
    # ([8.5, 8.5, 12.0] and TTFT from 10% low to 35% high, quoted, until SGLang's overlap loop took requests in a step
    # late, 2026-12-07)
    assert mae == [8.5, 8.5, 16.7]
    assert (round(100 * min(thr)), round(100 * max(thr)), round(100 * min(ttft)), round(100 * max(ttft))) == (-10, -4, -2, 37)
    assert "request and output throughput MAE 8.5%, TTFT 12.0%: throughput 4% to 10% low, TTFT from 10% low to 35% high" in text
    assert "late (2026-12-07, docs/simulation.md) TTFT 16.7%, from 2% low to 37% high: the three runs at light load" in text
    light = [i for i, c in enumerate(runs) if c["measured"]["mean_ttft_ms"] < 100]
    assert [round(runs[i]["measured"]["mean_ttft_ms"]) for i in light] == [51, 54, 49]
    assert [round(100 * ttft[i]) for i in light] == [23, 37, 35]
    assert [round(100 * ttft[i]) for i in (4, 16)] == [
        5,
        5,
    ] and "(at 2 and 4 requests a second 5% high where they were 52% and 73%" in text
    assert "The eighteen then stand at request and output throughput MAE 7.7%, TTFT 25.2%: throughput 4% to 10% low" in text
    # The sweep's three: throughput only (TTFT percentiles published, no mean).
    sweep = [errors(c) for c in every if "sweep0907" in c["id"]]
    assert all(set(e) == {"request_throughput_per_s", "output_throughput_tok_per_s"} for e in sweep)
    assert [round(-100 * e["output_throughput_tok_per_s"]) for e in sweep] == [8, 8, 8]  # ([7, 9, 2] before the tail)
    all_thr = thr + [e["request_throughput_per_s"] for e in sweep]
    assert round(100 * sum(abs(x) for x in all_thr) / len(all_thr), 1) == 8.4
    assert "the sweep's three 8% low each, the set's throughput MAE 8.4% over its 21 runs" in text
    assert "so their throughput alone is scored: 7%, 9% and 2% low, the set's request and output throughput MAE 7.5%" in text
    assert "TTFT from 10% low to 73% high (the run at 0.5 a second 2% high" in text
    # (2 until SGLang's overlap loop took requests in a step late, 2026-12-07)
    assert round(100 * ttft[1]) == 37 and runs[1]["id"].endswith("q0.5-default")
    assert "request and output throughput MAE 11.7%, TTFT 46.9% (18 runs); throughput 6% to 14% low on every run" in text
    assert "TTFT from 7% low at light load" in text and "and 263% high at 0.5 a second" in text
    med = {c["id"]: replay(c["id"]).bench.tpot_s.p50 * 1e3 / c["measured"]["median_tpot_ms"] - 1 for c in runs}
    assert (round(100 * min(med.values())), round(100 * max(med.values()))) == (8, 25)
    assert "TPOT medians 8% to 25% above the study's" in text
    assert "its TPOT medians are 13% to 30% above the study's on every run, 15% at `--max-running-requests 24`" in text
    assert round(904 / 1008, 2) == 0.90 and round(922 / 1008, 2) == 0.91


def test_kvcalcs_decode_step_against_the_studys_server_log():
    """The twenty-fourth set's one published server log (tests/logs/sglang_admission): each 'Decode batch' line gives
    the batch, its tokens and the tokens a second made since the line before, 40 decode steps back. Where the batch was
    the same at the line before (no request joined or left, so no prompt step fell between), batch / tokens a second is
    a decode step's time, against kvcalc's step for that batch at its mean length (roofline's t_step_s). Its pool is the
    one kvcalc's fit gives to 0.3%."""
    from kvcalc.engine.memory import FitInputs, fit
    from kvcalc.engine.roofline import roofline

    log = (
        ROOT / "tests" / "logs" / "sglang_admission" / "hwamin-4090-qwen3-4b-sglang0518-reasoning_q2-default_r1.log"
    ).read_text()
    m, g = resolve_model("qwen3-4b"), resolve_gpu("rtx4090")
    logged_pool = int(re.search(r"KV Cache is allocated\. dtype: torch\.bfloat16, #tokens: (\d+)", log)[1])
    r = fit(m, g, FitInputs(seq=32768, engine="sglang@0.5.18", util=0.85))
    assert logged_pool == 87552 and r.kv_pool_tokens == 87814 and round(100 * (r.kv_pool_tokens / logged_pool - 1), 1) == 0.3
    pat = re.compile(
        r"#running-req: (\d+), #token: (\d+), token usage: [\d.]+, cuda graph: (True|False), gen throughput \(token/s\): ([\d.]+)"
    )
    lines = [(int(a), int(b), c == "True", float(d)) for a, b, c, d in pat.findall(log)]
    assert len(lines) == 370 and all((n <= 24) == graph for n, _, graph, _ in lines)  # decode graphs up to 24 (the log)
    ratio: dict[str, list[float]] = {"graph": [], "eager": []}
    for (n0, *_), (n, tokens, graph, per_s) in zip(lines, lines[1:]):
        if n != n0 or n < 2:
            continue
        step = roofline(m, g, [n], [tokens // n], engine="sglang@0.5.18").rows[0].t_step_s
        ratio["graph" if graph else "eager"].append(step / (n / per_s))
    assert (len(ratio["graph"]), len(ratio["eager"])) == (140, 77)
    # kvcalc's step is 14% to 16% longer than the log's, in CUDA graphs and out of them alike.
    # ([16, 14] until the RTX 4090's weight reads took its own measured share, 2026-12-07; quoted)
    assert [round(100 * (float(np.median(v)) - 1)) for v in ratio.values()] == [9, 10]
    text = " ".join(DOC.read_text().split())
    assert "over 217 of its decode lines, kvcalc's step was 16% longer than the logged one" in text
    assert "kvcalc's decode step 9% longer than the log's in CUDA graphs and 10% out of them" in text


def test_sglangs_ratio_after_each_retraction_against_the_studys_log(monkeypatch):
    """The published log's 'Retract requests' lines print new_token_ratio before and after each retraction: two waves,
    each from the 0.098 floor (the ratio had decayed to it), climbing as (outputs made + 20 a request) / max_new_tokens
    over the requests left grows. kvcalc's replay of the same run (TokenRatio.after_retract) climbs alike."""
    from kvcalc.engine.simulate import admission

    log = (
        ROOT / "tests" / "logs" / "sglang_admission" / "hwamin-4090-qwen3-4b-sglang0518-reasoning_q2-default_r1.log"
    ).read_text()
    logged = [(float(a), float(b)) for a, b in re.findall(r"#new_token_ratio: ([\d.]+) -> ([\d.]+)", log)]
    assert len(logged) == 20 and [i for i, (a, _) in enumerate(logged) if a == 0.098] == [0, 16]
    assert (logged[0][1], logged[15][1], logged[16][1], logged[-1][1]) == (0.3487, 0.5907, 0.6151, 0.6992)
    seen: list[tuple[float, float]] = []
    retracted = admission.Reserve.retracted

    def record(self: Any, made: int, left: int, max_new: int, step: int) -> None:
        before = self.ratio_at(step)
        retracted(self, made, left, max_new, step)
        seen.append((round(before, 4), round(self.start, 4)))

    monkeypatch.setattr(admission.Reserve, "retracted", record)
    replay("hwamin-rtx4090-qwen3-4b-sglang0518-reasoning-q2-upstream")
    # (The replay is the unpatched run's of the same trace; the log is the patched build's with its flag off.)
    # (24 in two waves, from 0.314 to 0.5768 and from 0.5284 to 0.7348, until the RTX 4090's weight reads took its own
    # measured share, 2026-12-07; quoted)
    # (23 in three waves, the second from 0.5782 to 0.7347 and one more from 0.4418, until a retracted request rejoined
    # SGLang's queue at its tail, 2026-12-07; quoted)
    assert len(seen) == 33 and [i for i, (a, _) in enumerate(seen) if a == 0.098] == [0, 17, 27]
    assert (seen[0][1], seen[16][1], seen[17][1], seen[26][1], seen[27][1], seen[32][1]) == (
        0.3291,
        0.5771,
        0.4947,
        0.7443,
        0.4122,
        0.4524,
    )  # (0.3289, 0.5773, 0.4948, 0.7443, 0.412, 0.4522 until SGLang's overlap loop took requests in a step late, 2026-12-07)
    text = " ".join(DOC.read_text().split())
    assert (
        "climbs, after each retraction, from 0.329 to 0.577, from 0.495 to 0.744 and from 0.412 to 0.452, in 17, 10 and 6" in text
    )
    assert "kvcalc's replay climbs from 0.329 to 0.577 and from 0.578 to 0.735, then retracts once more from the floor" in text
    assert "(at scoring from 0.314 to 0.577 and from 0.528 to 0.735, in 17 and 7)" in text


def test_the_rtx4090s_weight_read_share_is_its_own_measurement():
    """gpu_specs/rtx4090.yaml's gemm block: llama.cpp's bf16 matrix-vector kernel ran Llama 8B in BF16 at one token a
    step at 65.21 tokens/s on an RTX 4090 (llama.cpp#15131); each token reads every weight but the two embedding
    tables (the input's a look-up, the logits the last token's only), so its weight reads ran at 910 GB/s, 0.90 of
    the datasheet figure. The per-matmul latency is the pooled one, not measured here."""
    from kvcalc.engine.steptime import GEMM_LATENCY_S

    g = resolve_gpu("rtx4090")
    m = resolve_model("llama3.1-8b")
    assert (m.params_total, m.params.embed) == (8_030_261_248, 525_336_576)  # untied: an output head as large
    read = (m.params_total - 2 * m.params.embed) * 2
    assert read == 13_959_176_192 and round(read * 65.21 / 1e9) == 910
    assert g.gemm is not None and g.gemm.bandwidth_share == round(read * 65.21 / g.memory_bandwidth_bytes_per_s, 2) == 0.90
    assert g.gemm.latency_us * 1e-6 == GEMM_LATENCY_S and g.memory_bandwidth_bytes_per_s == 1008e9
    # The twelve vLLM runs of the sixth set at one user in bf16 read at 0.88 (its paragraph); a copy at 0.90 to 0.91.
    assert (round(904 / 1008, 2), round(922 / 1008, 2)) == (0.90, 0.91)


def test_the_sglang_0_4_4_stall_paragraph_is_as_the_runs_recorded_it():
    """docs/accuracy.md: simon-mo/R1-Benchmark's SGLang 0.4.4.post3 QwQ-32B runs at 1,000/2,000 tokens and 10 requests/s,
    whose per-request timings (tests/serving/timings, from the runs' --save-result JSON) hold a stall that vLLM 0.8.2's
    runs of the same prompts do not."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import StepModel
    from kvcalc.specs.dtypes import kv_dtype

    text = " ".join(DOC.read_text().split())
    rec = {}
    for g in ("h200", "h100"):
        for e in ("sglang044p3", "vllm082"):
            cid = f"simonmo-{g}x2-qwq32b-{e}-tp2-random1000x2000-rr10"
            t = json.loads((SERVING / "timings" / f"{cid}.json").read_text())
            case = next(c for c in CASES if c["id"] == cid)
            # The file is the run's: its TTFTs' mean is the case's measured mean TTFT.
            assert len(t["ttfts"]) == 50 and 1e3 * sum(t["ttfts"]) / 50 == pytest.approx(case["measured"]["mean_ttft_ms"])
            rec[g, e] = t
    s200, s100 = rec["h200", "sglang044p3"], rec["h100", "sglang044p3"]
    assert [round(x, 2) for x in s200["first_itls"][5:7]] == [4.05, 2.83] and round(s200["ttfts"][0] * 1e3) == 83
    assert (round(min(s200["ttfts"][1:]), 2), round(max(s200["ttfts"][1:]), 2)) == (3.10, 4.55)
    assert max(s200["max_itl"]) == s200["first_itls"][5]  # no gap of any request passes the first's
    assert [round(x, 2) for x in s100["first_itls"][4:6]] == [2.98, 2.39] and round(s100["ttfts"][0] * 1e3) == 88
    assert (round(min(s100["ttfts"][1:]), 2), round(max(s100["ttfts"][1:]), 2)) == (0.48, 3.16)
    v = [rec[g, "vllm082"] for g in ("h200", "h100")]
    assert round(min(min(x["ttfts"]) for x in v), 2) == 0.07 and round(max(max(x["ttfts"]) for x in v), 2) == 0.59
    assert max(max(x["max_itl"]) for x in v) < 0.34
    # The first request's stream stood still for the sum of its gaps over 0.3 s: 6.9 s and 5.7 s.
    assert [round(sum(x for x in r["first_itls"] if x > 0.3), 1) for r in (s200, s100)] == [6.9, 5.7]
    # All 49,000 prompt tokens in 8,192-token prompt steps (five full, one of 8,040) take 2.9 s in the step model.
    m = resolve_model("qwen2.5-32b")
    sm = StepModel(m, resolve_gpu("h200"), kv_dtype("bf16"), tp=2, engine=engine("sglang@0.4.4.post3"))
    assert 5 * 8192 + 8040 == 49_000
    assert round(5 * sm.step(0, 0, 8192, 8192).t_step_s + sm.step(0, 0, 8040, 8040).t_step_s, 1) == 2.9
    got = [round(predict(f"simonmo-{g}x2-qwq32b-sglang044p3-tp2-random1000x2000-rr10")["mean_ttft_ms"]) for g in ("h200", "h100")]
    assert got == [126, 140]  # [101, 107] until SGLang's overlap loop took requests in a step late, 2026-12-07
    for said in (
        "kvcalc 126 and 140 ms (101 and 107 until SGLang's overlap loop took requests in a step late, 2026-12-07, "
        "docs/simulation.md) where the runs measured 3,780 and 2,136 ms",
        "its stream then stopped for 4.05 s and 2.83 s after its fifth and sixth chunks",
        "waited 3.10 to 4.55 s for their first tokens; on the H100s 88 ms, then gaps of 2.98 s and 2.39 s, the others 0.48 to 3.16 s",
        "measured TTFTs of 0.07 to 0.59 s and no gap above 0.34 s",
        "All 49,000 prompt tokens take 2.9 s of prompt steps in kvcalc's step model, less than the 6.9 s (H200) and 5.7 s",
    ):
        assert said in text
    meas = [
        round(
            next(c for c in CASES if c["id"] == f"simonmo-{g}x2-qwq32b-sglang044p3-tp2-random1000x2000-rr10")["measured"][
                "mean_ttft_ms"
            ]
        )
        for g in ("h200", "h100")
    ]
    assert meas == [3780, 2136]
    assert [round(100 * (1 - k / m_)) for k, m_ in zip(got, meas, strict=True)] == [97, 93]
    assert "simon-mo/R1-Benchmark): TTFT 97% and 93% low (97% and 95% until SGLang's overlap loop" in text


def _sglang_rule_tried_for_vllm(monkeypatch: Any, rule: str) -> tuple[list[dict[str, Any]], dict[str, float], dict[str, float]]:
    """An SGLang overlap-loop rule (the Engine property ``rule``) taken for vLLM too: the vLLM runs whose mean TTFT it
    moves (every one of 0.14 or later, where vLLM schedules ahead), and each run's mean TTFT without and with it, ms."""
    # (The corpus as it stood for both trials: the twenty-seventh set came after.)
    vllm = [
        c
        for c in CASES
        if c["engine"].startswith("vllm") and c["measured"].get("mean_ttft_ms") and c.get("held_out") != TWENTYSEVENTH
    ]
    now = {c["id"]: predict(c["id"])["mean_ttft_ms"] for c in vllm if predict(c["id"])}
    monkeypatch.setattr(
        engine_module.Engine, rule, property(lambda self: self.name in ("sglang", "vllm") and self.async_scheduling != "none")
    )
    trial = {i: predict.__wrapped__(i)["mean_ttft_ms"] for i in now}
    moved = [c for c in vllm if c["id"] in now and trial[c["id"]] != now[c["id"]]]
    assert moved and all(not engine_module.engine(c["engine"]).older_than(0, 14) for c in moved)
    return moved, now, trial


def test_the_overlap_loops_late_admission_tried_for_vllm_is_as_the_doc_says(monkeypatch):
    """docs/simulation.md: SGLang's overlap-loop admission rule taken for vLLM from 0.14 too, as a trial (not landed):
    the vLLM runs whose TTFT it moves, their TTFT MAE before and with it, and the RTX 4090 run at 4 users."""
    moved, now, trial = _sglang_rule_tried_for_vllm(monkeypatch, "overlap_admission")

    def mae(got: dict[str, float]) -> float:
        return round(100 * sum(abs(got[c["id"]] / c["measured"]["mean_ttft_ms"] - 1) for c in moved) / len(moved), 1)

    assert (len(moved), mae(now), mae(trial)) == (61, 24.0, 24.4)
    c4 = next(c for c in moved if c["id"] == "violetquartz-rtx4090-qwen2.5-7b-vllm0251-sharegpt-c4")
    assert round(100 * (trial[c4["id"]] / c4["measured"]["mean_ttft_ms"] - 1)) == 52
    text = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    assert "moved 61 corpus runs of vLLM 0.14 and later, their TTFT MAE from 24.0% to 24.4%" in text
    assert "the RTX 4090 runs at a few users further, to 52% high" in text


def test_the_one_user_runs_of_ten_are_as_the_doc_says():
    # docs/accuracy.md: the SGLang cookbook's c=1 runs of ten requests, paired by output length. The measured figures
    # are the cases' own (cases.yaml); kvcalc's mean TTFT is the serving table's, which its own test keeps current.
    said = " ".join(DOC.read_text().split())
    by_id = {c["id"]: c["measured"] for c in CASES}

    def ms(v: float) -> str:
        return f"{v:,.1f}"

    pairs = {
        "GLM-4.7-Flash": ("sglcb-glm47flash-b200x1-tp1-c1-1k1k", "sglcb-glm47flash-b200x1-tp1-c1-1k8k"),
        "ERNIE": ("sglcb-ernie45-21b-a3b-1xmi300x-in1000-out1000-c1-n10", "sglcb-ernie45-21b-a3b-1xmi300x-in1000-out8000-c1-n10"),
        "Qwen3-235B": ("sglcb-old-qwen3-235b-b200x8-c1-1k1k", "sglcb-old-qwen3-235b-b200x8-c1-1k8k"),
        "Coder": (
            "sglcb-qwen3codernext-2xb200-tp2-in1000-out1000-c1-n10",
            "sglcb-qwen3codernext-2xb200-tp2-in1000-out8000-c1-n10",
        ),
    }
    # How the bullet quotes each pair: m, d, p the runs' mean, median and p99 TTFT, 1 with 1k outputs and 2 with 8k.
    quoted = {
        "GLM-4.7-Flash": "mean {m1} ms with 1k outputs and {m2} ms with 8k, medians {d1} and {d2}, p99s {p1} and {p2}",
        "ERNIE": "mean {m1} ms and {m2} ms, medians {d1} and {d2}, the first run's p99 {p1} ms",
        "Qwen3-235B": "means {m1} and {m2} ms, medians {d1} and {d2}, p99s {p1} and {p2}",
        "Coder": "medians of {d1} and {d2} ms with 1k and 8k outputs (p99s {p1} and {p2})",
    }
    for name, template in quoted.items():
        a, b = (by_id[i] for i in pairs[name])
        figures = {
            f"{k}{n}": ms(run[f"{key}_ttft_ms"])
            for n, run in ((1, a), (2, b))
            for k, key in (("m", "mean"), ("d", "median"), ("p", "p99"))
        }
        assert template.format(**figures) in said, name
    # Each run the bullet calls one request's: its p99 at least 3 x its median, and over a tenth of it lifts the mean
    # past the median by a third or more; the Coder pair has no such request (p99 under 1.2 x its median).
    for name in ("GLM-4.7-Flash", "ERNIE", "Qwen3-235B"):
        m = by_id[pairs[name][0]]
        assert m["p99_ttft_ms"] >= 3 * m["median_ttft_ms"] and m["mean_ttft_ms"] >= 1.3 * m["median_ttft_ms"], name
    for i in pairs["Coder"]:
        assert by_id[i]["p99_ttft_ms"] < 1.2 * by_id[i]["median_ttft_ms"]

    # kvcalc's mean TTFT as the serving table prints it (measured / kvcalc in its TTFT column).
    def kvcalc_ttft(case_id: str) -> float:
        row = next(line for line in DOC.read_text().splitlines() if line.startswith(f"| [{case_id}]"))
        return float(row.split("|")[-3].split("/")[1].split("(")[0].replace(",", ""))

    # (52.2 ms for both GLM-4.7-Flash runs, 64.5 for Qwen3-235B's and 75.8 for the Coder's until SGLang's overlap loop ran
    # a step past a request's end, 2026-12-07: that step, at the end of the 8k outputs, is the longer)
    glm = [kvcalc_ttft(i) for i in pairs["GLM-4.7-Flash"]]
    assert f"kvcalc's mean 52.2 ms for both ({glm[0]:.1f} and {glm[1]:.1f} ms since SGLang's overlap loop runs a step" in said
    assert glm[1] > glm[0]
    assert f"kvcalc's mean 64.5 ms ({kvcalc_ttft(pairs['Qwen3-235B'][0]):.1f} ms since the step past a request's end)" in said
    assert f"kvcalc 75.8 ms for both ({kvcalc_ttft(pairs['Coder'][0]):.1f} ms for both since the step past" in said
    assert round(kvcalc_ttft(pairs["Coder"][0]), 1) == round(kvcalc_ttft(pairs["Coder"][1]), 1)


def test_the_closed_loop_runs_first_wave_is_as_the_doc_says():
    # docs/accuracy.md: the SGLang cookbook's closed-loop runs at more than 8 users that print a median TTFT. The
    # measured figures are the cases' own (cases.yaml); kvcalc's are its replays'.
    said = " ".join(DOC.read_text().split())
    runs = [
        c
        for c in CASES
        if c["id"].startswith("sglcb-") and int(c.get("max_concurrency") or 0) > 8 and c["measured"].get("median_ttft_ms")
    ]
    assert len(runs) == 50 and sorted({int(c["max_concurrency"]) for c in runs}) == [16, 64, 100]
    assert {int(c["measured"]["completed"]) // int(c["max_concurrency"]) for c in runs} == {5, 10}
    meas, kv = {}, {}
    for c in runs:
        m, b = c["measured"], replay(c["id"]).bench
        meas[c["id"]] = (m["mean_ttft_ms"], m["median_ttft_ms"])
        kv[c["id"]] = (b.ttft_s.mean * 1e3, b.ttft_s.p50 * 1e3)
        assert b.ttft_s.mean * 1e3 == pytest.approx(predict(c["id"])["mean_ttft_ms"])  # the table's figure
    ratio = sorted(a / d for a, d in meas.values())
    own = sorted(a / d for a, d in kv.values())
    mid = lambda v: (v[24] + v[25]) / 2  # (the median of 50)
    assert (round(ratio[0], 2), round(ratio[-1], 2), round(mid(ratio), 2)) == (0.97, 5.09, 1.82)
    assert (round(own[0], 2), round(own[-1], 2), round(mid(own), 2)) == (0.90, 3.29, 1.58)
    on_median = [kv[i][1] / meas[i][1] - 1 for i in meas]
    on_mean = [kv[i][0] / meas[i][0] - 1 for i in meas]
    assert sum(abs(e) <= 0.25 for e in on_median) == 27 and round(100 * sum(map(abs, on_median)) / 50) == 27
    assert sum(abs(e) <= 0.25 for e in on_mean) == 18 and round(100 * sum(map(abs, on_mean)) / 50) == 37
    assert (
        "on all 50 such runs in the corpus the mean is 0.97 to 5.09 times the median (1.82 at the median of the runs), "
        "where kvcalc's own replays give 0.90 to 3.29 (1.58). Scored on the median, kvcalc is within 25% on 27 of the "
        "50 and off by 27% on average; on the mean, which the table scores, 18 and 37%." in said
    )

    # MiniMax-M2.5 at 16 and 100 users: the first wave's mean if the rest took the median, n x mean = c x first +
    # (n - c) x median; kvcalc's first wave from its own per-request times (the first c requests sent).
    def first_wave(case_id: str) -> tuple[float, float]:
        c = next(x for x in runs if x["id"] == case_id)
        n, users = int(c["measured"]["completed"]), int(c["max_concurrency"])
        mean, med = meas[case_id]
        keep: dict[str, Any] = {}
        replay(case_id, keep=keep)
        order = np.argsort(keep["sent"], kind="stable")[:users]
        waits = (np.asarray(keep["first"]) - np.asarray(keep["sent"]))[order]
        if users == 16:  # one prompt alone, then the other fifteen together: two distinct first-token times
            assert len(np.unique(np.round(waits, 9))) == 2 and int(np.sum(waits == waits.max())) == 15
        return (n * mean - (n - users) * med) / users, float(np.mean(waits)) * 1e3

    m16 = next(x for x in runs if x["id"] == "sglcb-minimaxm25-b200x8-tp8ep8-sglang058-c16-1k1k")["measured"]
    assert (m16["mean_ttft_ms"], m16["median_ttft_ms"], m16["p99_ttft_ms"]) == (305.44, 106.75, 1053.26)
    a16, k16 = first_wave("sglcb-minimaxm25-b200x8-tp8ep8-sglang058-c16-1k1k")
    a100, k100 = first_wave("sglcb-minimaxm25-b200x8-tp8ep8-sglang058-c100-1k1k")
    mean16, med16 = kv["sglcb-minimaxm25-b200x8-tp8ep8-sglang058-c16-1k1k"]
    assert (round(a16), round(a100)) == (1100, 1423) and k16 < 0.15 * a16 and k100 < 0.25 * a100
    assert (
        f"mean 305.4 ms, median 106.8, p99 1,053.3. Had the 64 requests after the first wave taken the median, the first "
        f"16 averaged 1,100 ms, where kvcalc's first 16 average {k16:.0f} ms (its mean {mean16:.1f}, median {med16:.1f})" in said
    )
    assert f"the same server's first wave comes to about 1,423 ms against kvcalc's {k100:.0f}" in said


def test_the_inferencemax_sglang_b200_runs_ttft_floor_is_as_the_doc_says():
    # docs/accuracy.md, the twelfth held-out set: faradawn/InferenceMAX's SGLang 0.5.3rc1 runs against the same sweep's
    # TensorRT-LLM 1.1 runs (same checkpoint, B200s, random-range prompts and client), from cases.yaml.
    said = " ".join(DOC.read_text().split())
    sweep = [c for c in CASES if c["id"].startswith("infx-faradawn-")]
    sgl = [c for c in sweep if c["engine"].startswith("sglang")]
    trt = [c for c in sweep if c["engine"].startswith("tensorrt-llm") or c["engine"].startswith("trtllm")]
    assert len(sgl) == 5 and len(trt) == 3
    med = [c["measured"]["median_ttft_ms"] for c in sgl]
    assert (round(min(med)), round(max(med))) == (984, 1268)
    assert sorted({int(c["max_concurrency"]) for c in sgl}) == [4, 8, 16, 64]
    tp8 = next(c for c in sgl if c["id"] == "infx-faradawn-b200x8-dsr1fp4-sglang053rc1-tp8-ep8-1k1k-c4")["measured"]
    assert round(tp8["mean_tpot_ms"], 1) == 10.1 and 90 <= tp8["median_ttft_ms"] / tp8["mean_tpot_ms"] <= 110
    tmed = [c["measured"]["median_ttft_ms"] for c in trt]
    assert (round(min(tmed), 1), round(max(tmed), 1)) == (82.8, 90.6)
    assert sorted({int(c["max_concurrency"]) for c in trt}) == [4, 32]
    at4 = [predict(c["id"])["mean_ttft_ms"] / c["measured"]["mean_ttft_ms"] - 1 for c in trt if int(c["max_concurrency"]) == 4]
    assert len(at4) == 2 and max(map(abs, at4)) <= 0.09
    assert (
        "the five SGLang runs' median TTFTs are 984 to 1,268 ms at every load from 4 to 64 users, a hundred of their "
        "decode steps at 4 users (TPOT 10.1 ms at TP 8), where the sweep's TensorRT-LLM runs of the same checkpoint, "
        "GPUs, prompts and client measure medians of 82.8 to 90.6 ms at 4 and 32 users and kvcalc is within 9% of their "
        "means at 4." in said
    )


def test_the_twenty_fifth_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: five runs of GPUStack's Qwen3-14B page on one H100, siblings of two already in the corpus, scored
    with the default constants at 52a0a27 before they joined."""
    text = " ".join(DOC.read_text().split())
    five = [c for c in CASES if c.get("held_out") == TWENTYFIFTH]
    assert len(five) == 5 and {c["model"] for c in five} == {"qwen3-14b"} and {c["gpu"] for c in five} == {"h100-sxm"}
    mae = {k: round(100 * sum(abs(errors(c)[k]) for c in five) / 5, 1) for k, _ in METRICS}
    assert list(mae.values()) == [92.4, 92.8, 43.3, 51.8]
    assert "request throughput MAE 92.4%, output 92.8%, TTFT 43.3%, TPOT 51.8% (5 runs)" in text
    thr = [round(100 * errors(c)["request_throughput_per_s"]) for c in five]
    ttft = [round(100 * errors(c)["mean_ttft_ms"]) for c in five]
    assert thr == [17, 13, 70, 75, 287] and ttft == [-38, -8, -41, -47, -83]
    assert "throughput is 17% and 13% high, their TTFT 38% and 8% low; vLLM's three are 70%, 75% and 287% high" in text
    # The page's own figures: the 128-token run's prompt tokens over its duration, the 2,000-token run's likewise.
    short = next(c for c in five if c["id"].endswith("random128x4-inf"))["measured"]
    long = next(c for c in five if c["id"].endswith("random2000x100-inf"))["measured"]
    assert round(short["total_input_tokens"] / short["duration_s"]) == 5_621
    assert round(long["total_input_tokens"] / long["duration_s"]) == 10_092
    assert round(1000 * short["duration_s"] / short["completed"], 1) == 22.7
    kv = predict(next(c for c in five if c["id"].endswith("random128x4-inf"))["id"])
    assert round(short["completed"] / kv["request_throughput_per_s"], 2) == 5.86
    assert "took 22.72 s where kvcalc has 5.86 s: 127,698 prompt tokens at 5,621 tokens/s over the run" in text
    assert "carried 10,092 a second (998,175 in 98.91 s)" in text and "22.7 ms a request, which kvcalc does not charge" in text


def test_the_twenty_sixth_held_out_set_is_as_the_doc_says(monkeypatch):
    """docs/accuracy.md: fifty-one SGLang runs of Massed Compute's sweep, whose vLLM runs were in the corpus, scored with
    the default constants at b64952d before they joined (replayed as then: no step past a request's end), and now."""
    text = " ".join(DOC.read_text().split())
    set26 = [c for c in CASES if c.get("held_out") == TWENTYSIXTH]
    assert len(set26) == 51 and all(c["dataset"] == "random-sglang" and c["engine"].startswith("sglang@0.5.1") for c in set26)
    assert {c["gpu"] for c in set26} == {"h100-pcie", "l40s", "rtx-pro-6000"}
    assert len({c["model_as_run"] for c in set26}) == 10
    # The client's draw (numpy's legacy generator seeded 42, every prompt length and then every output length from 1 to
    # 128; the tokenizer's special tokens off each prompt) reproduces both printed totals of every run.
    for c in set26:
        rs = np.random.RandomState(42)
        n, s = c["measured"]["completed"], c["prompt_special_tokens"]
        p, o = rs.randint(1, 129, size=n), rs.randint(1, 129, size=n)
        assert int(np.maximum(p - s, 1).sum()) == c["measured"]["total_input_tokens"]
        assert int(o.sum()) == c["measured"]["total_output_tokens"]
        # The warm-up and the earlier runs' prompts: c1 sent prompt 0 first, c8 c1's 5, c32 c8's 40.
        assert c["prompts_cached_first"] == {1: 1, 8: 5, 32: 40}[c["max_concurrency"]] and n == 5 * c["max_concurrency"]
    now = {c["id"]: errors(c) for c in set26}
    mae = [round(100 * sum(abs(e[k]) for e in now.values()) / 51, 1) for k, _ in METRICS]
    assert mae == [8.3, 8.3, 14.2, 10.5]
    assert "8.3%, 8.3%, 14.2% and 10.5% since SGLang's overlap loop runs a step past a request's end" in text
    monkeypatch.setattr(engine_module.Engine, "overlap_tail", property(lambda self: False))

    def scored(c: dict[str, Any]) -> dict[str, float]:
        got = predict.__wrapped__(c["id"])
        return {k: got[k] / float(c["measured"][k]) - 1 for k, _ in METRICS}

    err = {c["id"]: scored(c) for c in set26}
    mae = [round(100 * sum(abs(e[k]) for e in err.values()) / 51, 1) for k, _ in METRICS]
    assert mae == [8.1, 8.1, 22.6, 10.5]
    assert "request throughput MAE 8.1%, output 8.1%, TTFT 22.6%, TPOT 10.5% (51 runs)" in text
    moe = {i for i in err if "30b-a3b" in i or "glm47" in i}

    def tpot(keep: Any) -> tuple[int, int, int]:
        v = sorted(round(100 * e["mean_tpot_ms"]) for i, e in err.items() if keep(i))
        return v[0], v[-1], len(v)

    assert tpot(lambda i: "-pro6000" in i and i not in moe) == (-11, 3, 18)
    assert tpot(lambda i: "-h100-" in i and i not in moe) == (3, 16, 12)
    assert tpot(lambda i: i in moe) == (12, 41, 12)
    assert "TPOT from 11% low to 3% high on the RTX PRO 6000s' dense models, 3% to 16% high on one H100's and 12% to 41%" in text
    one = [100 * e["mean_ttft_ms"] for i, e in err.items() if i.endswith("-c1")]
    more = [100 * e["mean_ttft_ms"] for i, e in err.items() if not i.endswith("-c1")]
    assert len(one) == 17 and max(one) < 0 and (round(min(one)), round(max(one))) == (-51, -3)
    assert (round(sum(map(abs, one)) / 17, 1), round(sum(map(abs, more)) / 34, 1)) == (36.6, 15.6)
    assert "at one user TTFT is low on all 17, from 51% to 3% low (36.6% mean absolute error, against 15.6% over the 34" in text


def test_the_overlap_loops_tail_step_paragraph_is_as_the_runs_score(monkeypatch):
    """docs/simulation.md: what the step SGLang's overlap loop runs past a request's end (Engine.overlap_tail) moves, the
    same runs replayed with and without it."""
    text = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    set26 = [c for c in CASES if c.get("held_out") == TWENTYSIXTH]
    one = [c for c in set26 if c["max_concurrency"] == 1]
    others = [c for c in CASES if c.get("max_concurrency") == 1 and c["engine"].startswith("sglang") and c not in set26]
    others = [c for c in others if "mean_ttft_ms" in errors(c)]
    waves = {u: f"dstackr1-h200x8-deepseek-r1-sglang-rand3200-800-c{u}" for u in (64, 128)}
    by_id = {c["id"]: c for c in CASES}

    def ttft_mae(cs: list[dict[str, Any]], get: Any) -> float:
        return round(100 * sum(abs(get(c)["mean_ttft_ms"]) for c in cs) / len(cs), 1)

    def pct(e: dict[str, float], k: str) -> int:
        return round(100 * e[k])

    now = {c["id"]: errors(c) for c in [*one, *others, *(by_id[i] for i in waves.values())]}
    monkeypatch.setattr(engine_module.Engine, "overlap_tail", property(lambda self: False))

    def without(c: dict[str, Any]) -> dict[str, float]:
        got = predict.__wrapped__(c["id"])
        return {k: got[k] / float(c["measured"][k]) - 1 for k, _ in METRICS if c["measured"].get(k)}

    before = {i: without(by_id[i]) for i in now}
    assert (len(one), len(others)) == (17, 26)
    assert (ttft_mae(one, lambda c: before[c["id"]]), ttft_mae(one, lambda c: now[c["id"]])) == (36.6, 11.4)
    assert (ttft_mae(others, lambda c: before[c["id"]]), ttft_mae(others, lambda c: now[c["id"]])) == (44.2, 41.8)
    assert "their mean absolute error goes from 36.6% to 11.4%" in text and "at one user from 44.2% to 41.8%" in text
    q = "massed-h100-qwen3-32b-sglang0514-tp1-rand128-128-c1"
    assert (pct(before[q], "mean_ttft_ms"), pct(now[q], "mean_ttft_ms")) == (-51, -19)
    small = [c["id"] for c in one if "8b" in c["id"]]
    assert len(small) == 5
    assert sorted(pct(before[i], "mean_ttft_ms") for i in small) == [-39, -34, -33, -33, -32]
    assert sorted(pct(now[i], "mean_ttft_ms") for i in small) == [-10, -8, -7, -5, -5]
    assert "Qwen3-32B on one H100 from 51% to 19% low, the five Llama-3.1-8B-sized runs from 32-39% to 5-10% low" in text
    w64, w128 = waves[64], waves[128]
    thr = "request_throughput_per_s"
    assert (pct(before[w64], thr), pct(now[w64], thr), pct(before[w128], thr), pct(now[w128], thr)) == (23, 50, -13, 7)
    assert (pct(before[w128], "mean_tpot_ms"), pct(now[w128], "mean_tpot_ms")) == (57, 27)
    assert "at 64 users throughput from 23% to 50% high, at 128 from 13% low to 7% high, their TPOT 57% to 27% high" in text


def test_the_overlap_loops_tail_step_tried_for_vllm_is_as_the_doc_says(monkeypatch):
    """docs/simulation.md: the step SGLang's overlap loop runs past a request's end taken for vLLM from 0.14 too, as a trial
    (not landed): the vLLM runs whose TTFT it moves, their TTFT MAE before and with it, and the L40S one-user runs."""
    moved, now, trial = _sglang_rule_tried_for_vllm(monkeypatch, "overlap_tail")

    def err(got: dict[str, float], c: dict[str, Any]) -> float:
        return got[c["id"]] / c["measured"]["mean_ttft_ms"] - 1

    def mae(got: dict[str, float]) -> float:
        return round(100 * sum(abs(err(got, c)) for c in moved) / len(moved), 1)

    assert (len(moved), mae(now), mae(trial)) == (25, 18.0, 27.4)
    one = [c for c in moved if c.get("max_concurrency") == 1 and c["id"].startswith("vob-l40s")]
    assert sorted(round(100 * err(now, c)) for c in one) == [-10, -8, -6, 0]
    assert sorted(round(100 * err(trial, c)) for c in one) == [-4, 46, 52, 52]
    text = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    assert "the step moved 25 corpus runs of vLLM 0.14 and later, their TTFT MAE from 18.0% to 27.4%" in text
    assert "three of the four L40S runs at one user from within 10% to 46-52% high" in text


def test_the_twenty_seventh_held_out_set_is_as_the_doc_says():
    """docs/accuracy.md: six later points of the Scicom sweep on the servers whose first points were in the corpus, scored
    at 3136df4 before they joined, each with half of every prompt in the prefix cache."""
    text = " ".join(DOC.read_text().split())
    runs = [c for c in CASES if c.get("held_out") == "2026-12-07 (twenty-seventh set)"]
    assert len(runs) == 6 and {c["gpu"] for c in runs} == {"h100-sxm", "h200", "b200"}
    assert all(c["tp"] == 8 and c["prompt_cache_hit"] == 0.5 and c["input_len"] in (2048, 4096) for c in runs)

    # vLLM's random dataset (0.11.0): a one-value range draws nothing from numpy's generator, so the offsets, drawn after
    # the lengths, are the same at every prompt length, and prompt i of a longer run begins with the shorter run's.
    def offsets(length: int) -> Any:
        rng = np.random.default_rng(0)
        rng.integers(length, length + 1, size=100)
        rng.integers(128, 129, size=100)
        return rng.integers(0, 151_936, size=100)

    assert (offsets(1024) == offsets(2048)).all() and (offsets(2048) == offsets(4096)).all()
    err = {c["id"]: errors(c) for c in runs}
    mae = [round(100 * sum(abs(e[k]) for e in err.values()) / 6, 1) for k, _ in METRICS]
    bias = round(100 * sum(e["mean_tpot_ms"] for e in err.values()) / 6, 1)
    assert mae == [7.1, 7.1, 11.1, 4.5] and bias == -2.6
    assert "request throughput MAE 7.1%, output 7.1%, TTFT 11.1%, TPOT 4.5% (6 runs), TP 8 TPOT bias -2.6%" in text
    hopper = [e for i, e in err.items() if "b200" not in i]
    assert all(abs(v) <= 0.08 for e in hopper for v in e.values())
    b200 = [e for i, e in err.items() if "b200" in i]
    got = [sorted(round(100 * e[k]) for e in b200) for k in ("request_throughput_per_s", "mean_ttft_ms", "mean_tpot_ms")]
    assert got == [[17, 18], [-26, -21], [-10, -9]]
    assert "the B200 runs 17-18% high on throughput, TTFT 21-26% low and TPOT 9-10% low" in text


def test_the_twenty_eighth_held_out_set_is_as_the_doc_says(monkeypatch):
    """docs/accuracy.md: every 1k/1k InferenceMAX record of one nightly at 4 and 64 users on a single-node engine, scored
    at 83a531c before they joined, and as they stand since TensorRT-LLM's batch waiting is modelled."""
    text = " ".join(DOC.read_text().split())
    runs = [c for c in CASES if c.get("held_out") == TWENTYEIGHTH]
    # 176 records of the rule, two already in the corpus, four multi-node, one that kvcalc cannot replay (attention DP).
    assert len(runs) == 176 - 2 - 4 - 1 == 169
    assert {c["max_concurrency"] for c in runs} == {4, 64} and all(c["raw_format"] == "infmax-agg" for c in runs)
    assert all("18577107964-" in c["url"] and "_1k1k__agg_" in c["url"] for c in runs)
    assert {c["model"] for c in runs} == {"llama3.3-70b", "gpt-oss-120b", "deepseek-v3"}
    rejected = (SERVING / "rejected" / "2026-12-07-twenty-eighth-set.md").read_text()
    assert "infmax-b200x8-deepseek-v3-trtllm-tp8-1k1k-c64" in rejected and "four GB200 records" in rejected
    waits = [c for c in CASES if c.get("batch_wait_timeout_iters")]
    # Llama-3.3-70B under TensorRT-LLM at 1k/1k below TP 8 (benchmarks/70b_fp8_h200_trt_slurm.sh and its siblings):
    # 17 of this set's and the thirteenth and fourteenth sets' two.
    assert len(waits) == 19 and sum(c.get("held_out") == TWENTYEIGHTH for c in waits) == 17
    assert all(
        (c["batch_wait_timeout_iters"], c["batch_wait_max_tokens_ratio"], c["model"], c["engine"])
        == (20, 0.9, "llama3.3-70b", "trtllm@1.1")
        and int(c["tp"]) < 8
        for c in waits
    )
    by: dict[str, list[str]] = {}
    for c in runs:
        by.setdefault(c["engine"], []).append(c["id"])
    tp8 = [c["id"] for c in runs if int(c["tp"]) == 8]

    def mae(err: dict[str, dict[str, float]], ids: list[str]) -> list[float]:
        return [round(100 * sum(abs(err[i][k]) for i in ids) / len(ids), 1) for k, _ in METRICS]

    def bias(err: dict[str, dict[str, float]], ids: list[str], key: str = "mean_tpot_ms") -> float:
        return round(100 * sum(err[i][key] for i in ids) / len(ids), 1)

    def span(err: dict[str, dict[str, float]], ids: list[str], key: str = "mean_ttft_ms") -> tuple[int, int, int]:
        v = sorted(round(100 * err[i][key]) for i in ids)
        return v[0], v[-1], len(v)

    def uncached(c: dict[str, Any]) -> dict[str, float]:
        got = predict.__wrapped__(c["id"])  # (uncached: without the change taken off)
        return {k: got[k] / float(c["measured"][k]) - 1 for k, _ in METRICS}

    ids = [c["id"] for c in runs]
    today = {c["id"]: errors(c) for c in runs}
    assert mae(today, ids) == [13.5, 13.5, 31.7, 13.3] and "The set stands at 13.5%, 13.5%, 31.7% and 13.3%." in text
    module = sys.modules[__name__]
    trt = [c["id"] for c in runs if c["engine"].startswith("trtllm")]
    # Before TensorRT-LLM's fp8 matmuls took its own measured figures (GPUSpec.gemm_fp8_trtllm, 2026-12-08): vLLM's
    # gemm_fp8 and eta_c_fp8 for every engine.
    real_fp8 = module.resolve_gpu
    monkeypatch.setattr(module, "resolve_gpu", lambda name: dataclasses.replace(real_fp8(name), gemm_fp8_trtllm=None))
    fp8_before = {i: uncached(next(c for c in runs if c["id"] == i)) for i in trt}
    fp8_runs = [i for i in trt if next(c for c in runs if c["id"] == i).get("weight_dtype") == "fp8"]
    assert len(fp8_runs) == 15 and (mae(fp8_before, fp8_runs), bias(fp8_before, fp8_runs)) == ([18.7, 18.7, 25.7, 23.5], 23.5)
    assert (mae(today, fp8_runs), bias(today, fp8_runs)) == ([12.3, 12.3, 10.3, 15.0], 14.7)
    assert (mae(today, trt), bias(today, trt)) == ([14.6, 14.6, 23.5, 14.4], 5.1)
    assert (
        "its 15 fp8 TensorRT-LLM runs' request throughput MAE went from 18.7% to 12.3%, TTFT 25.7% to 10.3%, TPOT 23.5% to "
        "15.0%, TPOT bias +23.5% to +14.7%, and its 46 TensorRT-LLM runs' from 16.7% to 14.6%, TTFT 28.5% to 23.5%, TPOT "
        "17.2% to 14.4%, TPOT bias +8.0% to +5.1%. The set stands at" in text
    )
    today.update(fp8_before)
    assert mae(today, ids) == [14.0, 14.0, 33.0, 14.0] and "The set stood at 14.0%, 14.0%, 33.0% and 14.0%." in text
    # Before TensorRT-LLM deployments took its own measured all-reduce (GPUSpec.allreduce_trtllm, 2026-12-08): vLLM's
    # tables for every engine, as the rest of this history had them.
    real0 = module.resolve_gpu
    monkeypatch.setattr(module, "resolve_gpu", lambda name: dataclasses.replace(real0(name), allreduce_trtllm=None))
    trt_before = {i: uncached(next(c for c in runs if c["id"] == i)) for i in trt}
    assert len(trt) == 46 and (mae(trt_before, trt), bias(trt_before, trt)) == ([18.3, 18.3, 29.0, 19.5], 10.3)
    assert (mae(today, trt), bias(today, trt)) == ([16.7, 16.7, 28.5, 17.2], 8.0)
    assert (
        "its 46 TensorRT-LLM runs' request throughput MAE went from 18.3% to 16.7%, TTFT 29.0% to 28.5%, TPOT 19.5% to "
        "17.2%, TPOT bias +10.3% to +8.0%" in text
    )
    today.update(trt_before)
    assert mae(today, ids) == [14.5, 14.5, 33.2, 14.6] and "The set stood at 14.5%, 14.5%, 33.2% and 14.6%." in text
    # Before the MI355X took its own measured GEMM and all-reduce figures (gpu_specs/mi355x.yaml, 2026-12-08): its runs with the
    # pooled figures.
    m5 = [c for c in CASES if c["gpu"] == "mi355x"]
    m5_now = {c["id"]: errors(c) for c in m5}
    real5 = module.resolve_gpu
    gemms_only = dataclasses.replace(real5("mi355x"), allreduce=None)
    with monkeypatch.context() as m:
        m.setattr(module, "resolve_gpu", lambda name: gemms_only if name == "mi355x" else real5(name))
        m5_gemms = {c["id"]: uncached(c) for c in m5}
    pooled5 = dataclasses.replace(real5("mi355x"), gemm=None, allreduce=None)
    monkeypatch.setattr(module, "resolve_gpu", lambda name: pooled5 if name == "mi355x" else real5(name))
    m5_before = {c["id"]: uncached(c) for c in m5}
    assert len(m5) == 32 and sum(c.get("held_out") == TWENTYEIGHTH for c in m5) == 28
    assert (mae(m5_before, list(m5_before)), bias(m5_before, list(m5_before))) == ([28.6, 28.6, 39.5, 20.5], -18.9)
    assert (mae(m5_gemms, list(m5_gemms)), bias(m5_gemms, list(m5_gemms))) == ([13.7, 13.7, 37.7, 12.1], -2.7)
    assert (mae(m5_now, list(m5_now)), bias(m5_now, list(m5_now))) == ([12.8, 12.8, 37.4, 11.7], -1.0)
    assert (
        "the corpus's 32 MI355X runs' request throughput MAE is 28.6% -> 12.8%, TTFT 39.5% -> 37.4%, TPOT 20.5% -> 11.7%, "
        "TPOT bias -18.9% -> -1.0% (13.7%, 37.7%, 12.1% and -2.7% with the GEMMs alone)" in text
    )
    today.update({i: e for i, e in m5_before.items() if i in today})
    assert mae(today, ids) == [17.2, 17.2, 33.4, 16.1] and "The set stood at 17.2%, 17.2%, 33.4% and 16.1%." in text
    # Before the MI325X took the MI300X's measured tables (gpu_specs/mi325x.yaml): its runs with the pooled figures.
    mi = [c for c in CASES if c["gpu"] == "mi325x"]
    mi_now = {c["id"]: errors(c) for c in mi}
    pooled = dataclasses.replace(resolve_gpu("mi325x"), gemm=None, allreduce=None, nccl_allreduce=None)
    real = module.resolve_gpu
    monkeypatch.setattr(module, "resolve_gpu", lambda name: pooled if name == "mi325x" else real(name))
    mi_before = {c["id"]: uncached(c) for c in mi}
    assert len(mi) == 21 and sum(c.get("held_out") == TWENTYEIGHTH for c in mi) == 18
    assert (mae(mi_before, list(mi_before)), bias(mi_before, list(mi_before))) == ([32.5, 32.5, 48.0, 22.6], -22.6)
    assert (mae(mi_now, list(mi_now)), bias(mi_now, list(mi_now))) == ([16.4, 16.4, 41.0, 16.7], 5.0)
    assert (
        "the corpus's 21 MI325X runs' request throughput MAE is 32.5% -> 16.4%, TTFT 48.0% -> 41.0%, TPOT 22.6% -> 16.7%, "
        "TPOT bias -22.6% -> +5.0%" in text
    )
    assert round(bias(mi_before, [c["id"] for c in mi if c.get("held_out") == TWENTYEIGHTH])) == -23
    assert "Its 18 MI325X runs were 23% fast on TPOT on average" in text
    today.update({i: e for i, e in mi_before.items() if i in today})
    assert mae(today, ids) == [19.0, 19.0, 34.1, 16.8] and "The set stood at 19.0%, 19.0%, 34.1% and 16.8%." in text
    graphs = [c for c in CASES if c.get("cudagraph_mode")]
    assert len(graphs) == 17 and all(
        (c["cudagraph_mode"], c["engine"], c["gpu"], c["model"]) == ("full_decode_only", "vllm@0.10.2", "b200", "llama3.3-70b")
        for c in graphs
    )

    today.update({c["id"]: errors(c) for c in graphs})  # (with the thirteenth set's one)
    # Before vLLM's cudagraph mode was modelled: the replay without the seventeen runs' mode.
    for c in graphs:
        monkeypatch.delitem(c, "cudagraph_mode")
    before = {c["id"]: uncached(c) for c in graphs}
    assert sum(c.get("held_out") == TWENTYEIGHTH for c in graphs) == 16
    assert "Its vLLM 0.10.2 runs of Llama-3.3-70B on B200s (16, and the thirteenth set's one) set" in text
    g = [c["id"] for c in graphs]
    assert mae(before, g) == [9.8, 9.8, 29.2, 11.2] and mae(today, g) == [9.3, 9.3, 22.5, 10.9]
    assert "their TTFT MAE is 29.2% -> 22.5%, request throughput 9.8% -> 9.3%, TPOT 11.2% -> 10.9%" in text
    wide = [c["id"] for c in graphs if int(c["tp"]) >= 4]
    assert span(today, wide) == (-56, -23, 8) and span(before, wide) == (-70, -26, 8)
    assert "the eight at TP 4 and 8 still 23-56% low (26-70% before)" in text
    now = {**today, **{i: e for i, e in before.items() if i in ids}}
    now.update({c["id"]: errors(c) for c in CASES if c.get("batch_wait_timeout_iters") and c["id"] not in now})
    assert mae(now, ids) == [19.0, 19.0, 34.7, 16.9] and mae(now, by["trtllm@1.1"]) == [18.3, 18.3, 29.0, 19.5]
    assert "The set stood at 19.0%, 19.0%, 34.7% and 16.9%, TensorRT-LLM's 46 runs at 18.3%, 29.0% and 19.5%." in text
    fp8 = [c["id"] for c in waits if c.get("weight_dtype") == "fp8"]
    fp4 = [c["id"] for c in waits if c.get("weight_dtype") == "fp4"]

    assert span(now, fp8) == (15, 62, 13) and span(now, fp4) == (0, 20, 6) and span(now, fp8, "mean_tpot_ms")[:2] == (22, 37)
    # As scored: the replay without the runs' batch waiting (the rule came after).
    for c in waits:
        monkeypatch.delitem(c, "batch_wait_timeout_iters")
        monkeypatch.delitem(c, "batch_wait_max_tokens_ratio")

    err = {i: (uncached(next(c for c in CASES if c["id"] == i)) if i in {c["id"] for c in waits} else e) for i, e in now.items()}
    assert mae(err, [c["id"] for c in runs]) == [19.0, 19.0, 37.5, 17.0] and (bias(err, tp8), len(tp8)) == (-5.0, 56)
    assert "request throughput MAE 19.0%, output 19.0%, TTFT 37.5%, TPOT 17.0% (169 runs), TP 8 TPOT bias -5.0% (56 runs)" in text
    got = {e: (mae(err, v)[0], mae(err, v)[2], mae(err, v)[3], len(v)) for e, v in by.items()}
    assert got == {
        "vllm@0.10.2": (10.1, 25.1, 11.0, 51),
        "vllm@0.10.1": (28.6, 46.0, 21.1, 54),
        "trtllm@1.1": (18.0, 39.3, 20.0, 46),
        "sglang@0.5.2": (22.1, 31.2, 16.3, 12),
        "sglang@0.5.3": (9.0, 65.7, 9.4, 6),
    }
    assert (bias(err, by["vllm@0.10.1"]), bias(err, by["trtllm@1.1"])) == (-15.2, 10.8)
    assert (
        "vLLM 0.10.2 10.1%, 25.1% and 11.0% (request throughput, TTFT, TPOT; 51 runs); vLLM 0.10.1 on AMD GPUs 28.6%, "
        "46.0% and 21.1% (54), its TPOT 15.2% low on average; TensorRT-LLM 18.0%, 39.3% and 20.0% (46), its TPOT 10.8% "
        "high; SGLang 0.5.2 on AMD GPUs 22.1%, 31.2% and 16.3% (12); SGLang 0.5.3 on B200s 9.0%, 65.7% and 9.4% (6)" in text
    )
    at = {n: [c["id"] for c in runs if c["max_concurrency"] == n] for n in (4, 64)}
    assert (bias(err, at[4], "mean_ttft_ms"), bias(err, at[64], "mean_ttft_ms")) == (-39.5, -20.9)
    assert "TTFT is low at both loads, 39.5% on average at 4 users and 20.9% at 64" in text
    # The rule's runs, without and with it.
    w = [c["id"] for c in waits]
    assert mae(err, w) == [17.2, 17.2, 50.7, 24.2] and mae(now, w) == [17.7, 17.7, 25.2, 22.5]
    assert span(err, fp8) == (-68, -20, 13) and span(err, fp4) == (-75, -47, 6)
    assert (min(span(err, fp8)[0], span(err, fp4)[0]), max(span(err, fp8)[1], span(err, fp4)[1])) == (-75, -20)
    # At TP 8, where the scripts leave the options out: the six runs 20% low to 1% high, at 4 users 6-10% low.
    eight = [c["id"] for c in runs if c["engine"] == "trtllm@1.1" and c["model"] == "llama3.3-70b" and int(c["tp"]) == 8]
    assert span(err, eight) == (-20, 1, 6)
    assert span(err, [i for i in eight if i.endswith("-c4")]) == (-10, -6, 3)
    assert (
        "their TTFTs were 20-75% low at TP 1 to 4, but at TP 8, where the scripts leave the options out, from 20% low to "
        "1% high (6-10% low at 4 users)" in text
    )
    assert "those runs' TTFT MAE 50.7% -> 25.2%, TPOT 24.2% -> 22.5%, request throughput 17.2% -> 17.7%" in text
    assert "prices 22-37% long on the 13 fp8 runs" in text
    assert "so their TTFTs went from 20-68% low to 15-62% high and the six NVFP4 runs' from 47-75% low to 0-20% high" in text


def test_vllm_010s_async_scheduling_trial_is_as_the_doc_says(monkeypatch):
    """docs/accuracy.md: the twenty-eighth set's vLLM 0.10 runs start their servers with --async-scheduling, which kvcalc
    models as vLLM's default from 0.14 only; replayed with the host's time beside the GPU's, as from 0.14 (a trial, not
    landed), they move away from what they measured."""
    import dataclasses

    text = " ".join(DOC.read_text().split())
    runs = [
        c
        for c in CASES
        if c.get("held_out") == TWENTYEIGHTH
        and c["engine"].startswith("vllm@0.10")
        and "async-scheduling" in " ".join(json.dumps(c["inferred"]).split())
    ]
    assert len(runs) == 105 and engine("vllm@0.10").async_scheduling == "none"
    module = sys.modules[__name__]
    plain = module.engine

    def score() -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
        """The runs as kvcalc replays them, and with the host's time beside the GPU's (uncached)."""
        now = {c["id"]: {k: predict.__wrapped__(c["id"])[k] / float(c["measured"][k]) - 1 for k, _ in METRICS} for c in runs}
        with monkeypatch.context() as m:
            m.setattr(
                module,
                "engine",
                lambda name: (
                    dataclasses.replace(plain(name), async_scheduling="one-node") if name.startswith("vllm@0.10") else plain(name)
                ),
            )
            tried = {
                c["id"]: {k: predict.__wrapped__(c["id"])[k] / float(c["measured"][k]) - 1 for k, _ in METRICS} for c in runs
            }
        return now, tried

    def mae(err: dict[str, dict[str, float]]) -> list[float]:
        return [round(100 * sum(abs(e[k]) for e in err.values()) / len(err), 1) for k, _ in METRICS]

    def bias(err: dict[str, dict[str, float]]) -> float:
        return round(100 * sum(e["mean_tpot_ms"] for e in err.values()) / len(err), 1)

    def amd(err: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return {i: e for i, e in err.items() if next(c for c in runs if c["id"] == i)["gpu"].startswith("mi")}

    # As tried on 2026-12-07, when the MI355X took the pooled figures of a GPU no table measures.
    real = module.resolve_gpu
    pooled = dataclasses.replace(real("mi355x"), gemm=None, allreduce=None)
    with monkeypatch.context() as m:
        m.setattr(module, "resolve_gpu", lambda name: pooled if name == "mi355x" else real(name))
        now, tried = score()
    assert (mae(now), bias(now)) == ([17.0, 17.0, 33.9, 15.2], -0.7)
    assert (mae(tried), bias(tried)) == ([20.9, 20.9, 34.2, 16.5], -7.0)
    assert (len(amd(now)), round(bias(amd(now)))) == (54, -7)
    assert (
        "on the 105, their TPOT bias went from -0.7% to -7.0%, TPOT MAE 15.2% -> 16.5%, request throughput 17.0% -> 20.9%: "
        "not landed" in text
    )
    assert "(the 54 on AMD GPUs 7% low on TPOT)" in text
    # Tried again once the MI355X took its own measured GEMM and all-reduce figures (2026-12-08): still away from what they measured.
    now, tried = score()
    assert (mae(now), bias(now)) == ([13.5, 13.5, 33.4, 13.4], 3.2)
    assert (mae(tried), bias(tried)) == ([15.8, 15.8, 33.8, 13.8], -3.1)
    assert round(bias(amd(now)), 1) == 0.8
    assert (
        "tried again since the MI355X takes its own measured GEMM and all-reduce figures (2026-12-08), the 105's TPOT bias went from +3.2% "
        "to -3.1%, TPOT MAE 13.4% -> 13.8%, request throughput 13.5% -> 15.8% (the 54 on AMD GPUs now 0.8% high on TPOT): "
        "still not landed" in text
    )
