"""kvcalc simulate: every allocation policy on the same requests, and the report.

The parts: ``client`` (who sends requests, and when the engine sees them), ``allocator`` (where
their KV lives), ``scheduler`` (admission, chunked prefill, preemption, the event loop),
``metrics`` (what a benchmark client prints) and the step-time model (kvcalc.engine.steptime);
this module sizes the pool, runs each policy (in forked processes for large runs) and says
whether the load was carried.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable
from typing import Any

from kvcalc.engine.engines import Engine, triton_default_note
from kvcalc.engine.kv import KVFootprint, stored_kv_dtype
from kvcalc.engine.memory import FitInputs, fit, layout_guess
from kvcalc.engine.simulate.scheduler import serve
from kvcalc.engine.simulate.types import MAX_EVENTS, GiB, PolicyRun, SimSettings, SimulationReport, Workload
from kvcalc.engine.steptime import StepModel
from kvcalc.engine.track import TrackRecord, for_estimate
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec
from kvcalc.units import count_of

PARALLEL_FROM = 200_000
"""Requests x policies from which simulate(workers=None) forks a process a policy."""
_JOB: Any = None


def _workers(asked: int | None, policies: int, n: int) -> int:
    import os
    import sys

    if policies < 2 or asked == 1 or sys.platform == "win32":
        return 1
    if asked is None:
        if n * policies < PARALLEL_FROM:
            return 1
        asked = os.cpu_count() or 1
    return max(1, min(asked, policies))


def _run_job(name: str, B: int | None) -> PolicyRun:
    wl, st, cost, pool, req_bytes, per_token, host = _JOB
    return serve(name, B, wl, st, cost, pool, req_bytes, per_token, host, None)


def _run_parallel(
    job: tuple[Any, ...], policies: list[tuple[str, int | None]], procs: int, progress: Callable[[str, int, int], None] | None
) -> list[PolicyRun]:
    """Each policy in a forked process (the workload and settings are inherited, not copied); the
    runs come back in the policies' order. Progress is reported a policy at a time."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    global _JOB
    _JOB = job
    n = len(job[0].prompts)
    try:
        with ProcessPoolExecutor(max_workers=procs, mp_context=mp.get_context("fork")) as ex:
            # The longest first (paged policies: the most events a request), so that the others fill the
            # remaining workers instead of leaving a paged run to start last.
            first = sorted(range(len(policies)), key=lambda k: policies[k][1] is None)
            by = {k: ex.submit(_run_job, *policies[k]) for k in first}
            futs = [by[k] for k in range(len(policies))]
            out = []
            for (name, _B), f in zip(policies, futs):
                out.append(f.result())
                if progress:
                    progress(name, n, n)
            return out
    finally:
        _JOB = None


def estimate_events(wl: Workload, st: SimSettings, policies: int) -> int:
    """An upper estimate of a run's events: a few per request, plus its prompt chunks."""
    import numpy as np

    chunks = int(np.ceil(wl.prompts / max(st.max_num_batched_tokens, 1)).sum())
    return policies * (4 * len(wl.prompts) + chunks)


def simulate(
    model: ModelSpec,
    gpu: GPUSpec,
    wl: Workload,
    st: SimSettings,
    policies: list[tuple[str, int | None]],
    engine: Engine,
    kv_dtype: KVDtype,
    tp: int = 1,
    pool_bytes: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    workers: int | None = 1,
    dp: int = 1,
    ep: int = 1,
    weight_dtype: str | None = None,
    keep: dict[str, Any] | None = None,
    pp: int = 1,
    prefilled: bool = False,
    util: float | None = None,
) -> SimulationReport:
    """Every policy on the same arrival stream; the KV pool from ``fit`` (the engine's budget).

    ``weight_dtype`` overrides the checkpoint's weight format (fit's per-role layout for it, and the
    matmuls' precision: fp8 weights run W8A8 where the GPU has fp8 units), for both the pool and the
    steps.

    ``workers``: policies run in that many forked processes at once (None: one a CPU for runs of
    PARALLEL_FROM requests x policies or more, where the fork pays for itself; 1: in this process).
    Each policy's run is the same either way.

    ``keep``: where given, each request's times in the first policy's run (scheduler.serve's
    ``keep``); the policies then run in this process.

    ``pp``: pipeline stages. The replica keeps pp micro-batches in flight, each crossing every stage
    in a step of the whole model (the step-time model's PP step); the run is one micro-batch's: every
    (dp x pp)-th request, a pp-th of the pool, and the engine's max_num_seqs as it applies it with PP
    (Engine.seqs_in_flight) shared evenly, as plan's closed form takes them.

    ``prefilled``: a disaggregated decode instance, whose requests arrive with their prompt's KV
    (the workload's prefix-cache hit of the whole prompt): what is left of a prompt rides beside the
    decodes whatever the engine's scheduling (vLLM computes the last tokens again for the first
    token's logits, v1/core/kv_cache_manager.py; SGLang's decode instance streams the first token
    the prefill instance sent and adds the request to its running batch without a step of its own,
    disaggregation/decode.py get_new_prebuilt_batch and "Generate fake extend output", 0.5.3), never
    as a prefill step of its own.

    ``util``: the share of each GPU's memory the engine may take (vLLM's gpu_memory_utilization, SGLang's
    mem_fraction_static, as fit takes it); None: the release's default. Not with ``pool_bytes``."""
    import numpy as np

    from kvcalc.engine.deployment import Shape, check_shape

    check_shape(model, Shape(tp, pp, dp, ep), engine)
    whole = len(wl.prompts)
    lanes = dp * pp
    what = "DP ranks" if pp == 1 else "PP micro-batches" if dp == 1 else "DP ranks x PP micro-batches"
    if lanes > 1:
        # One DP rank's share: every dp-th request, as round-robin routing deals them (SGLang's default;
        # vLLM's balancer with equal loads), and its share of a closed loop's users; with PP, one
        # micro-batch's share of that.
        one = "rank" if pp == 1 else "micro-batch"
        if whole < lanes:
            raise KvcalcError(f"{count_of(whole, 'request')} over {lanes} {what}", "requests", f"at least {lanes} (one a {one})")
        wl = dataclasses.replace(
            wl,
            arrivals=wl.arrivals[::lanes],
            prompts=wl.prompts[::lanes],
            outputs=wl.outputs[::lanes],
            silent=None if wl.silent is None else wl.silent[::lanes],
        )
        if st.concurrency is not None:
            # The replay is one rank's share of the users: they must split evenly (a rank given
            # concurrency // dp users would misstate the deployment that 1 or 6 users over 4 ranks make).
            if st.concurrency % lanes:
                lo, hi = st.concurrency // lanes * lanes, -(-st.concurrency // lanes) * lanes
                near = f"{lo:,} or {hi:,}" if lo else f"{hi:,} (one user a {one})"
                raise KvcalcError(
                    f"a closed loop of {st.concurrency:,} users over {lanes} {what} does not split evenly: the replay is "
                    f"one {one}'s share",
                    "concurrency",
                    f"a multiple of {lanes}, such as {near}",
                )
            st = dataclasses.replace(st, concurrency=st.concurrency // lanes)
    engine_seqs = st.max_num_seqs
    if pp > 1:
        # The engine's max_num_seqs over the micro-batches in flight, shared evenly (Engine.seqs_in_flight).
        st = dataclasses.replace(st, max_num_seqs=max(engine.seqs_in_flight(st.max_num_seqs, pp) // pp, 1))
    n = len(wl.prompts)
    if n < 1:
        raise KvcalcError("no requests", "requests", "at least one request")
    if wl.silent is not None and len(wl.silent) != n:
        raise KvcalcError(f"{len(wl.silent):,} silent flags for {count_of(n, 'request')}", "silent", "one flag a request")
    st.constants.check()
    engine.check_recv_interval(st.recv_interval, dp)
    engine.check_batch_wait(st.batch_wait_iters, st.batch_wait_ratio, dp)
    c = st.schedule_conservativeness
    if not (isinstance(c, (int, float)) and not isinstance(c, bool) and 0 <= c <= 100):
        raise KvcalcError(f"{c!r} is out of range", "schedule_conservativeness", "a number from 0 to 100, e.g. 0.3 or 1.3")
    if c != 1 and engine.token_ratio is None:
        raise KvcalcError(
            f"a schedule conservativeness with {engine.title}: it is SGLang's --schedule-conservativeness, modelled from 0.4.0",
            "schedule_conservativeness",
            "1 (the default), or an SGLang engine from 0.4.0 (sglang, sglang@0.5.9)",
        )
    if st.busy_ranks is not None and not 1 <= st.busy_ranks <= dp:
        raise KvcalcError(f"{st.busy_ranks} busy ranks of {dp}", "busy_ranks", f"1 to the DP ranks ({dp})")
    if st.concurrency is not None and not 1 <= st.concurrency <= n:
        raise KvcalcError(
            f"a concurrency of {st.concurrency:,} with {count_of(n, 'request')}",
            "concurrency",
            f"1 to the number of requests ({n:,}): each user needs a request to send",
        )
    if wl.prompt_cache_hits is not None:
        _check_hits(wl.prompt_cache_hits, n)
    if not st.prefix_caching and (wl.shared_prefix or wl.prompt_cache_hit or _any_hit(wl)):
        raise KvcalcError(
            "a shared prefix or prompt-cache hits with prefix caching off: nothing would be found in the cache",
            "prefix_caching",
            "prefix caching on, or neither a shared prefix nor prompt-cache hits",
        )
    # SGLang divides --chunked-prefill-size among its DP-attention ranks (Engine.dp_prompt_chunk): a rank's steps
    # take its share.
    server_budget = st.max_num_batched_tokens
    st = dataclasses.replace(st, max_num_batched_tokens=engine.rank_batched_tokens(server_budget, dp))
    est = estimate_events(wl, st, len(policies))
    if est > MAX_EVENTS:
        raise KvcalcError(
            f"this run needs about {est:,} events, over the bound of {MAX_EVENTS:,}",
            "requests",
            "fewer requests or policies, or a larger max_num_batched_tokens",
        )
    st = dataclasses.replace(
        st,
        mixed=prefilled
        or engine.schedule(model, gpu, st.max_len, st.max_num_batched_tokens, chunked_prefill=st.chunked_prefill)[1],
        chunk_blocks=engine.prompt_blocks == "chunk",
        # (A disaggregated decode instance takes its requests in through its own queue, not the prefill adder.)
        token_ratio=None
        if prefilled or engine.token_ratio is None
        else engine.token_ratio.conservative(st.schedule_conservativeness),
    )
    inp = FitInputs(
        seq=st.max_len,
        engine=engine,
        tp=tp,
        pp=pp,
        dp=dp,
        ep=ep,
        kv_dtype=kv_dtype,
        max_num_seqs=engine_seqs,
        weight_dtype=weight_dtype,
        prefix_caching=st.prefix_caching,
        util=util,
    )
    if pool_bytes is not None and util is not None:
        raise KvcalcError(
            "both a KV pool and a memory fraction: the pool given is used as it is, and the fraction would size another",
            "util",
            "one of the two: a pool, or a fraction for the engine's budget",
        )
    f = fit(model, gpu, inp)
    pool = pool_bytes if pool_bytes is not None else max(f.kv_pool_bytes, 0)
    state_cap = f.state_requests
    if state_cap is not None:
        # SGLang's own pool of recurrent states (memory.state_pool): a running request takes one of its slots, and the
        # tokens take what the slots leave. The run counts a request's state in its logical bytes: the pool it is given
        # holds the tokens' share and that many states so.
        st = dataclasses.replace(st, max_num_seqs=max(min(st.max_num_seqs, state_cap), 1))
        if pool_bytes is None:
            logical = KVFootprint(model, stored_kv_dtype(model, gpu.name, kv_dtype, engine, tp), tp).state_bytes
            pool = max(f.kv_pool_bytes - f.state_pool_bytes, 0) + state_cap * logical
    # The format the engine stores (fp8 on sparse MLA: fp8_ds_mla or standard fp8, by backend), as fit counts it.
    stored = stored_kv_dtype(model, gpu.name, kv_dtype, engine, tp)
    cost = StepModel(model, gpu, stored, tp, pp, constants=st.constants, ep=ep, dp=dp, engine=engine, weight_dtype=weight_dtype)
    d = cost.d
    per_token = d.kvfp.per_token
    if per_token <= 0:
        raise KvcalcError(f"{model.name} caches no tokens", "model", "a model with attention layers")
    per_gpu = pool
    if pp > 1:
        # A stage's pool (fit's, or the one given per GPU) holds its layers of every request in flight;
        # the run counts a request's KV over every layer (the step reads them all), so one micro-batch's
        # share is the tokens the busiest stage's pool holds, over pp, at the whole model's bytes a token.
        pool = pool * per_token // max(f.kv_bytes_per_token, 1) // pp
    if pool < per_token:
        if util is not None and pool_bytes is None:
            raise KvcalcError(
                f"at a memory fraction of {util:g} the KV pool ({pool:,} B) does not hold one token of {model.name} on "
                f"{gpu.name}",
                "util",
                "a larger fraction (fit shows the budget at a fraction)",
            )
        raise KvcalcError(
            f"the KV pool ({pool:,} B) does not hold one token of {model.name} on {gpu.name}",
            "gpu",
            "a larger GPU, more tensor parallelism (tp), or a smaller model",
        )
    host = (gpu.host_link_bytes_per_s or 64e9) / 2

    memo: dict[int, int] = {}

    def req_bytes(length: int) -> int:
        v = memo.get(length)
        if v is None:
            v = memo[length] = int(d.kvfp.request_bytes(length))
        return v

    job = (wl, st, cost, pool, req_bytes, per_token, host)
    procs = 1 if keep is not None else _workers(workers, len(policies), n)
    if procs > 1:
        runs = _run_parallel(job, policies, procs, progress)
    else:
        runs = []
        for name, B in policies:
            cb = (lambda done, total, _n=name: progress(_n, done, total)) if progress else None
            runs.append(serve(name, B, *job, cb, keep if not runs else None))
    frac = f" at a memory fraction of {util:g} (gpu_memory_utilization / mem_fraction_static)" if util is not None else ""
    source = "as given" if pool_bytes is not None else f"{f.engine_label}'s budget on {gpu.name}{frac}, from kvcalc fit"
    if state_cap is not None and pool_bytes is None:
        source += (
            f": the tokens' share beside its {f.state_slots:,} recurrent-state slots, with room for the states of the "
            f"{state_cap:,} requests they let run at once (in logical bytes)"
        )
    pre = next((r for r in runs if r.policy == "prealloc"), None)
    pg = next((r for r in runs if r.block_size), None)
    ratio = pg.requests_per_s / pre.requests_per_s if pre and pg and pre.requests_per_s else None
    assumptions = [
        (
            f"KV pool {pool / GiB:,.2f} GiB: one micro-batch's share of its stages' pools ({per_gpu / GiB:,.2f} GiB "
            f"a GPU, {source}) at {per_token:,} B a token over every layer"
            if pp > 1
            else f"KV pool {pool / GiB:,.2f} GiB per GPU: {source}"
        ),
        cost.describe() + ": the batch as it stands at each step (weights read, the KV the batch reads, the FLOPs of its tokens)",
        _client_line(wl, st),
        f"continuous batching: up to {st.max_num_seqs:,} requests, {st.max_num_batched_tokens:,} tokens per step"
        + (
            f" (--chunked-prefill-size {server_budget:,} {'halved' if engine.dp_prompt_chunk == 'half' else f'over {dp} ranks'} "
            f"under DP attention, as {engine.label} divides it)"
            if st.max_num_batched_tokens != server_budget
            else ""
        )
        + ", "
        + (
            "decodes first, then prompt chunks (chunked prefill); first-come first-served"
            if st.mixed
            else "waiting prompts first, as prefill steps of their own while the decodes wait, and decode steps when "
            f"no prompt waits ({engine.title}'s scheduler{', chunked prefill off' if engine.v0_chunking != 'none' else ''}); "
            "first-come first-served"
        ),
        f"prealloc reserves {st.max_len:,} tokens per request; oracle reserves its exact length, contiguous, first-fit; "
        "paged-B takes B-token blocks as tokens arrive"
        + (
            ", a prompt's chunk by chunk as steps schedule them (admitted when its first chunk fits: vLLM V1)"
            if st.chunk_blocks
            else ", a prompt's all at admission (admitted when they fit)"
            if st.token_ratio is None
            else ", a prompt's all at admission, admitted only where, as each running request ends in turn (those admitted "
            "with it too), room is left for the others' outputs to come (the requests ask to ignore EOS and the radix cache "
            f"is off: {engine.label}'s add_one_req_ignore_eos, schedule_policy.py)"
            if st.ignore_eos and not st.prefix_caching
            else f", a prompt's all at admission, admitted while its prompt and output (at most {st.token_ratio.clip:,} tokens) fit "
            "beside what the running requests are held to need: their outputs to come at a ratio of "
            f"{st.token_ratio.init:g}, falling to {st.token_ratio.floor:.3g} over {st.token_ratio.decay_steps:,} decode steps "
            f"({engine.label}'s new_token_ratio"
            + (f" at --schedule-conservativeness {st.schedule_conservativeness:g}" if st.schedule_conservativeness != 1 else "")
            + ", schedule_policy.py)"
        ),
        "paged: a request that needs a block when none is free preempts "
        + (
            "the most recently admitted request "
            if st.token_ratio is None
            else "the decoding request with the fewest output tokens, of those the longest prompt (SGLang's retraction, "
            f"after which the ratio is the outputs the requests left have made and {st.token_ratio.retract_steps} tokens each, over "
            "their outputs; "
            + (
                "it rejoins the waiting queue at its tail, behind the requests that reached the engine before it) "
                if st.token_ratio.requeue == "tail"
                else "it waits at the front of the queue, its cached prompt first under the longest-prefix-match policy) "
            )
        )
        + ("(recomputed later)" if st.preempt == "recompute" else f"(swapped to host memory, up to {st.swap_bytes / GiB:g} GiB)")
        + (
            (
                "; a preempted request, mid-prompt or decoding, finds its computed blocks in the prefix cache, "
                "less those allocated since (its last ones first)"
                if st.prefix_caching
                else "; a preempted request computes its tokens again (prefix caching off)"
            )
            if st.chunk_blocks
            else ""
        ),
        "KV bytes per token are the model's logical bytes (sliding windows and states as kvcalc size counts them); "
        "steady-state figures are the window between the 10th and 90th percentile completions; the benchmark "
        "figures (vllm bench serve's definitions) span the whole run, first send to last completion",
    ]
    if pp > 1:
        assumptions.insert(
            0,
            f"{Shape(tp, pp, dp, ep).describe()}: the runs are one PP micro-batch's"
            + (" on one DP rank" if dp > 1 else "")
            + f", serving every {_nth(lanes)} request of the {whole:,} (round robin) with a {_nth(pp)} of the pool and "
            f"max_num_seqs {st.max_num_seqs:,}; its steps cross every stage, the other micro-batches' interleaved with "
            f"them, so the deployment serves {lanes} x each throughput figure",
        )
    elif dp > 1:
        assumptions.insert(
            0,
            f"{Shape(tp, 1, dp, ep).describe()}: the runs are one DP rank's, serving every {_nth(dp)} request of the "
            f"{whole:,} (round robin){' and ' + str(st.concurrency) + ' of the users' if st.concurrency else ''}; the other "
            f"ranks step in lockstep with batches alike, so the deployment serves {dp} x each throughput figure"
            + (
                f"; {engine.label}'s ranks step with any rank's prompt batch, so a decode step beside one of the "
                f"other {cost.lockstep_ranks}'s (drawn at this rank's own rate of prompt steps) runs without CUDA graphs "
                "and lasts at least the prompt step"
                if cost.lockstep_ranks and not st.mixed
                else ""
            ),
        )
    if st.ignore_eos and (st.token_ratio is None or st.prefix_caching):
        assumptions.append(
            "--ignore-eos: every request makes the output it is given (as the simulation takes it anyway); it changes nothing "
            + (
                f"else under {engine.label}"
                if st.token_ratio is None
                else "else with the radix cache on (SGLang takes its other admission test only with --no-prefix-caching)"
            )
        )
    if st.recv_interval > 1:
        assumptions.append(
            f"--scheduler-recv-interval {st.recv_interval:,}: while requests decode, the scheduler takes in the requests "
            f"that reached it every {st.recv_interval:,} decode steps, at once after a prompt step and while idle "
            "(SGLang's scheduler_recv_skipper.py: a decode step weighs 1, a prompt step 1,000)"
        )
    if st.batch_wait_iters or st.batch_wait_ratio:
        tokens = st.batch_wait_ratio * st.max_num_batched_tokens
        assumptions.append(
            f"--batch-wait-iters {st.batch_wait_iters:,} and --batch-wait-ratio {st.batch_wait_ratio:g}: "
            + (
                f"while requests decode, new prompts wait up to {st.batch_wait_iters:,} iterations, until their tokens and "
                f"one a decoding request reach {tokens:,.0f} tokens (TensorRT-LLM's py_executor.py _waiting_requests)"
                if st.batch_wait_iters > 0 and tokens > 0
                else "no prompt waits (TensorRT-LLM waits only where both are above 0: py_executor.py _waiting_requests)"
            )
        )
    if cost.admit_lag:
        assumptions.append(
            f"{engine.label}'s overlap loop polls for requests as a step begins, for the step after it "
            "(managers/scheduler.py event_loop_overlap), so one that comes while requests decode starts a step later "
            "than it would without the overlap; an idle loop takes it in at once"
        )
    if cost.tail_step:
        assumptions.append(
            f"{engine.label}'s overlap loop launches the next step before it reads this one's tokens, so a request rides "
            "one decode step past its last token (process_batch_result marks it finished); where nothing else runs, a "
            "request that comes meanwhile starts after that step"
        )
    # A serving engine's own block (SGLang's None: by the token); the records without a pool (budget "all":
    # transformers, plain) page nothing.
    own = engine.block_size_for(model, gpu.vendor, gpu.name) or 1
    other = sorted({b for _, b in policies if b is not None and b != own})
    if other and engine.budget != "all":
        assumptions.append(
            f"{', '.join(f'paged-{b}' for b in other)}: {engine.label} pages this model's KV "
            + ("by the token" if own == 1 else f"in blocks of {own:,} tokens")
            + f" here; --policies paged-{own} for its own"
        )
    if wl.shared_prefix:
        assumptions.append(
            f"shared prefix of {wl.shared_prefix:,} tokens: stored once and not recomputed under paging (prefix caching); "
            "copied into every request under prealloc and oracle"
        )
    if _any_hit(wl):
        whole = sum(1 for h in wl.prompt_cache_hits if h >= 1.0)
        assumptions.append(
            f"{whole:,} of {len(wl.prompt_cache_hits):,} prompts wholly in the prefix cache when they arrive"
            + ("" if whole == sum(1 for h in wl.prompt_cache_hits if h > 0) else ", others in part")
            + ": their whole blocks are not recomputed under paging (at least the last token is), and are held as "
            "the request's own; prealloc and oracle recompute every prompt"
        )
    elif wl.prompt_cache_hit:
        assumptions.append(
            f"{wl.prompt_cache_hit:.0%} of each prompt is in the prefix cache when it arrives: its whole blocks are not "
            "recomputed under paging (at least the last token is), and are held as the request's own; prealloc and "
            "oracle recompute every prompt"
        )
    warnings = []
    if weight_dtype:
        w = next((e for e in f.estimates if e.key == "weights"), None)
        held = f" ({w.best / GiB:,.2f} GiB a GPU: {w.reason})" if w is not None else ""
        assumptions.append(f"weights as {weight_dtype}{held}; matmuls at the {cost.compute_dtype} peak")
        guess = layout_guess(model, inp)
        if guess:
            warnings.append(guess)
    note = triton_default_note(engine, model, gpu, tp)
    if note:
        warnings.append(note)
    for r in runs:
        if r.rejected:
            warnings.append(f"{r.policy}: {count_of(r.rejected, 'request')} can never fit this policy's pool and were not served")
    return SimulationReport(
        model=model.name,
        gpu=gpu.name,
        tp=tp,
        dp=dp,
        ep=ep,
        pp=pp,
        engine=engine.key,
        kv_dtype=stored.name,
        pool_bytes=pool,
        kv_bytes_per_token=per_token,
        requests=n,
        workload=wl.description,
        arrival=wl.arrival,
        mean_prompt=float(np.mean(wl.prompts)),
        mean_output=float(np.mean(wl.outputs)),
        shared_prefix=wl.shared_prefix,
        max_len=st.max_len,
        max_num_seqs=st.max_num_seqs,
        max_num_batched_tokens=st.max_num_batched_tokens,
        constants=cost.c,
        preempt=st.preempt,
        runs=runs,
        paged_over_prealloc=ratio,
        concurrency=st.concurrency,
        verdict=_verdict(runs, st)
        + (f" (one of {lanes} {what}: the deployment's rates are {lanes} x these)" if lanes > 1 else ""),
        assumptions=assumptions,
        warnings=warnings,
        prompts_beside_decodes=st.mixed,
        track_record=_track(model, tp * pp, dp, st, engine, runs),
    )


def _share(h: Any) -> float | None:
    """A prompt-cache share as a number from 0 to 1, or None where it is none (not a real number, text that reads as
    one included, NaN, outside)."""
    if not isinstance(h, numbers.Real):
        return None
    x = float(h)
    return x if 0.0 <= x <= 1.0 else None


def _check_hits(hits: Any, n: int) -> None:
    """Refuse per-request prompt-cache shares (Workload.prompt_cache_hits) that are not one share from 0 to 1 a request."""
    try:
        got = list(hits)
    except TypeError:
        got = None
    if got is None or len(got) != n:
        said = "not a list" if got is None else count_of(len(got), "prompt-cache share")
        raise KvcalcError(f"{said} for {count_of(n, 'request')}", "prompt_cache_hits", "one share from 0 to 1 a request")
    bad = next((i for i, h in enumerate(got) if _share(h) is None), -1)
    if bad >= 0:
        raise KvcalcError(
            f"prompt-cache share {got[bad]!r} of request {bad + 1:,}", "prompt_cache_hits", "one share from 0 to 1 a request"
        )


def _any_hit(wl: Workload) -> bool:
    """Whether the per-request prompt-cache shares (Workload.prompt_cache_hits) find any prompt in the cache."""
    return wl.prompt_cache_hits is not None and any(h > 0 for h in wl.prompt_cache_hits)


def _nth(k: int) -> str:
    """2nd, 3rd, 4th, 11th, 21st: every k-th request, a k-th of the pool."""
    tail = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{tail}"


def _track(model: ModelSpec, tp: int, dp: int, st: SimSettings, engine: Engine, runs: list[PolicyRun]) -> TrackRecord | None:
    """The track record of this kind of deployment (tp x dp GPUs a replica), with the figures of the run
    a benchmark replay takes (the first paged policy, else the first; tests/test_serving_accuracy.py
    replays paged-16): one DP rank's, as the runs are."""
    run = next((r for r in runs if r.policy.startswith("paged")), runs[0] if runs else None)
    b = run.bench if run is not None else None
    estimates = (
        {"mean_tpot": b.tpot_s.mean, "output_throughput": b.output_throughput_tok_per_s, "mean_ttft": b.ttft_s.mean}
        if b is not None and b.completed
        else None
    )
    subject = "this estimate"
    if run is not None:
        subject = f"the {run.policy} run" + (f" (one of {dp} DP ranks)" if dp > 1 else "")
    metrics = ("mean_tpot", "output_throughput", "mean_ttft")
    return for_estimate(model.is_moe, tp * dp, st.constants, engine, metrics, estimates, subject)


def _client_line(wl: Workload, st: SimSettings) -> str:
    c = st.constants
    load = (
        f"at most {count_of(st.concurrency, 'request')} in flight (each slot sends the next request when its last one ends)"
        if st.concurrency
        else "open loop: each request is sent at its arrival time"
    )
    return (
        f"client: {load}; a request reaches the engine {c.request_overhead_s * 1e3:g} ms + "
        f"{c.tokenize_s_per_token * 1e6:g} us per prompt token (x 0.5 to 1.5, drawn per request) after it is sent, "
        "and TTFT counts from the send"
    )


def _verdict(runs: list[PolicyRun], st: SimSettings) -> str:
    """The first line a reader needs: does the deployment keep up with what it is offered?"""
    over = [r for r in runs if r.overloaded]
    if over:
        offered = over[0].offered_per_s
        assert offered is not None
        served = ", ".join(f"{r.policy} sustains {r.sustained_per_s:,.3g}" for r in over if r.sustained_per_s is not None)
        keep = [r.policy for r in runs if not r.overloaded]
        return (
            f"OVERLOADED: offered {offered:,.3g} requests/s, {served} requests/s"
            + (f" ({', '.join(keep)} keep{'s' if len(keep) == 1 else ''} up)" if keep else "")
            + "; queues grow for as long as the load lasts, so latencies depend on the run's length"
        )
    r = runs[-1]
    if st.concurrency:
        return (
            f"{count_of(st.concurrency, 'request')} in flight: {r.policy} serves {r.requests_per_s:,.3g} requests/s "
            f"({r.output_tokens_per_s:,.4g} output tokens/s) in steady state"
        )
    if r.offered_per_s is None and r.completed + r.rejected <= 1:
        # One request offers no rate, whatever rate it was drawn at: its own latency is the figure.
        if r.completed < 1:
            return f"one request: {r.policy} never admits it"
        return (
            f"one request: no rate to judge; {r.policy} serves it in {r.ttft_s.mean * 1e3:,.4g} ms to its first "
            f"token and {r.tpot_s.mean * 1e3:,.3g} ms a token after"
        )
    if r.offered_per_s is None:
        # A burst has no steady state to speak of: its whole run (first send to last completion) is the figure.
        rps = r.bench.request_throughput_per_s if r.bench else r.requests_per_s
        return f"every request at once (rate inf): {r.policy} serves {rps:,.3g} requests/s over the whole run"
    b = r.bench
    if b is not None and b.completed > 1:
        arriving = (b.completed - 1) / r.offered_per_s
        if arriving < b.e2el_s.p50:
            # The last request arrives before a typical one is done: the system never reaches a steady state,
            # so neither "keeps up" nor an overload can be read from it.
            return (
                f"too short to judge: requests arrive over {arriving:,.3g} s and each takes {b.e2el_s.p50:,.3g} s "
                f"(median), so no steady state forms; {r.policy} served {b.request_throughput_per_s:,.3g} requests/s "
                f"over the whole run against {r.offered_per_s:,.3g} requests/s offered; more requests (-n) give a verdict"
            )
    return f"keeps up: offered {r.offered_per_s:,.3g} requests/s, {r.policy} serves {r.requests_per_s:,.3g} requests/s"
