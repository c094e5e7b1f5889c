"""kvcalc simulate: allocation policies serving the same arrival stream over time."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit

MAX_REQUESTS = 2_000_000


PRESET_MAX_LEN = 2048
"""--max-len of a preset workload (sharegpt, alpaca) when none is given."""


def simulate(
    model: opt.ModelOpt = None,
    gpu: opt.GPUOpt = None,
    workload: opt.WorkloadName = None,
    prompt: opt.Prompt = None,
    output: opt.Output = None,
    trace: Annotated[
        Optional[str],
        typer.Option(
            "--trace",
            metavar="<file>",
            help="JSON Lines or CSV: prompt and output tokens per request, optional arrival_time (s).",
        ),
    ] = None,
    requests: Annotated[
        str, typer.Option("--requests", "-n", metavar="<n>", help="Requests to sample, 1 to 2,000,000.")
    ] = "2000",
    rate: Annotated[
        Optional[str],
        typer.Option(
            "--rate",
            metavar="<req/s>",
            help="Poisson arrivals at this rate; inf sends every request at once (the default without --concurrency).",
        ),
    ] = None,
    concurrency: Annotated[
        Optional[str],
        typer.Option(
            "--concurrency",
            "--max-concurrency",
            metavar="<n>",
            help="At most N requests in flight, as vllm bench serve --max-concurrency: alone, N users each sending "
            "their next request when the last one ends.",
        ),
    ] = None,
    seed: opt.Seed = "0",
    max_len: Annotated[
        Optional[str],
        typer.Option(
            "--max-len",
            metavar="<tokens>",
            help="What prealloc reserves per request, and the longest request (a server's --max-model-len). Default: "
            "2,048 for the sharegpt and alpaca workloads (vllm bench serve drops longer pairs); for --prompt, --output "
            "or --trace, their longest request (at least 2,048, at most the model's context).",
        ),
    ] = None,
    policies: Annotated[
        str, typer.Option("--policies", metavar="<list>", help="prealloc, oracle, paged-B (e.g. paged-16), comma-separated.")
    ] = "prealloc,oracle,paged-16",
    preempt: Annotated[
        str, typer.Option("--preempt", metavar="<mode>", help="When paged blocks run out: recompute (vLLM's default) or swap.")
    ] = "recompute",
    swap_space: Annotated[
        str, typer.Option("--swap-space", metavar="<size>", help="Host memory for swapped KV per GPU (vLLM's default 4 GiB).")
    ] = "4GiB",
    shared_prefix: Annotated[
        str, typer.Option("--shared-prefix", metavar="<tokens>", help="Tokens every prompt starts with (counted in the prompt).")
    ] = "0",
    prompt_cache_hit: opt.PromptCacheHit = "0",
    weight_dtype: opt.WeightDtypeOpt = None,
    efficiency: opt.Efficiency = None,
    calibration: opt.Calibration = None,
    request_overhead: opt.RequestOverhead = None,
    tp: opt.TP = "1",
    pp: opt.PP = "1",
    dp: opt.DP = "1",
    ep: opt.EP = "1",
    kv_dtype: opt.KVDtypeOpt = "auto",
    engine: opt.PoolEngine = "vllm",
    attention_backend: opt.AttentionBackend = None,
    cudagraph_mode: opt.CudagraphMode = None,
    moe_backend: opt.MoeBackend = None,
    all_reduce_backend: opt.AllReduceBackend = None,
    max_num_seqs: opt.MaxNumSeqs = None,
    max_num_batched_tokens: opt.MaxBatchedTokens = None,
    chunked_prefill: opt.ChunkedPrefill = None,
    prefix_caching: opt.PrefixCaching = True,
    ignore_eos: opt.IgnoreEos = False,
    schedule_conservativeness: opt.Conservativeness = "1",
    scheduler_recv_interval: opt.RecvInterval = "1",
    batch_wait_iters: opt.BatchWaitIters = "0",
    batch_wait_ratio: opt.BatchWaitRatio = "0",
    pool: opt.Pool = None,
    util: opt.Util = None,
    plot: Annotated[bool, typer.Option("--plot", help="Draw KV memory over time in the terminal.")] = False,
    plot_file: Annotated[
        Optional[str], typer.Option("--plot-file", metavar="<path>", help="Write the memory-over-time chart (.png, .svg, .pdf).")
    ] = None,
    as_json: opt.Json = False,
) -> Any:
    """Serve an arrival stream under each allocation policy: KV utilisation over time, throughput, latency.

    A continuous-batching engine (token budget per step, chunked prefill, max_num_seqs) on the same
    requests for each policy: prealloc reserves --max-len up front, oracle the exact length,
    paged-B allocates blocks as tokens arrive and preempts when they run out. Requests come as a
    benchmark client sends them (--rate, --concurrency); the figures are vllm bench serve's.

    Example: kvcalc simulate --model llama2-13b --gpu a100-40gb --workload sharegpt --requests 2000
    """
    import math

    import numpy as np

    from kvcalc.cli.defaults import from_file
    from kvcalc.engine.simulate import SimSettings, Workload, parse_policies, simulate as run_sim
    from kvcalc.errors import KvcalcError
    from kvcalc.inputs.workload import check_fixed_pair, read_request_trace, sample_lengths
    from kvcalc.units import parse_float

    m, g, origin = opt.model_and_gpu(model, gpu)
    t = opt.parallel(tp, "--tp")
    kv = opt.kv(kv_dtype, weight_dtype)
    eng = opt.engine(engine, attention_backend, moe_backend, all_reduce_backend, cudagraph_mode)
    opt.check_backend(m, [g], eng)
    # Without --max-len: a preset workload keeps to 2,048 tokens, as vllm bench serve's ShareGPT sampling
    # does (vllm/benchmarks/datasets.py, is_valid_sequence: max_total_len=2048); lengths the user gives
    # are drawn up to the model's context, and --max-len becomes their longest request (below).
    if max_len:
        ml = opt.tokens(max_len, "--max-len")
    else:
        ml = m.max_position_embeddings if (prompt or output or trace) else PRESET_MAX_LEN
    if ml > 2**31:
        raise KvcalcError(f"--max-len {ml:,} is longer than a simulation handles", "--max-len", "at most 2,147,483,648 tokens")
    pols = parse_policies(policies)
    if preempt not in ("recompute", "swap"):
        raise KvcalcError(f"unknown preemption mode {preempt[:40]!r}", "--preempt", "recompute or swap")
    swap_b = opt.size(swap_space, "--swap-space")
    assert swap_b is not None
    consts = opt.step_constants(efficiency, calibration, request_overhead, model=m, gpus=[g], engine=eng)
    n = opt.need_count(requests, "--requests", maximum=MAX_REQUESTS, noun="a number of requests")
    conc = (
        opt.need_count(concurrency, "--concurrency", maximum=MAX_REQUESTS, noun="a number of requests") if concurrency else None
    )
    seed_n = opt.seed(seed)
    prefix = opt.need_count(shared_prefix, "--shared-prefix", minimum=0, maximum=ml - 2, noun="a number of tokens")
    rng = np.random.default_rng(seed_n)
    arrivals = silent = None
    if trace:
        if prompt or output:
            raise KvcalcError("give a trace or distributions, not both", "--trace", "--trace FILE, or --prompt/--output")
        P, O, arrivals, desc, silent = read_request_trace(trace, ml)
        n = len(P)
    else:
        preset = opt.workload_preset(workload or "sharegpt")
        assert preset is not None
        p_spec, o_spec, desc = preset
        if prompt or output:
            desc = f"prompts {prompt or p_spec}, outputs {output or o_spec}"
        # A prompt or output is at most the limit less the one token a request outputs; without
        # --max-len, the limit of lengths the user gives is the model's context.
        whole = f"--max-len {ml:,}" if max_len else f"{m.name}'s context of {ml:,} tokens"
        lim = f"{whole} less one output token" if max_len or prompt or output else None
        check_fixed_pair(prompt or p_spec, output or o_spec, ml, whole)
        P = sample_lengths(prompt or p_spec, n, seed_n, ml - 1, "--prompt", lim)[0]
        O = sample_lengths(output or o_spec, n, seed_n + 1, ml - 1, "--output", lim)[0]
        # A request longer than --max-len is cut at it (its output shortened), as a server's limit would.
        O = np.maximum(np.minimum(O, ml - P), 1)
    if prefix:
        P = np.maximum(P, prefix + 1)
        O = np.maximum(np.minimum(O, ml - P), 1)
        if (P + O > ml).any():
            raise KvcalcError(
                f"--shared-prefix {prefix:,} leaves no room under --max-len {ml:,}", "--shared-prefix", "a shorter prefix"
            )
    if not max_len and (prompt or output or trace):
        # Lengths the user gives were drawn up to the model's context; --max-len is then what a user
        # sets a server's --max-model-len to for them: the longest request, at least the presets' 2,048.
        ml = min(max(PRESET_MAX_LEN, int((P + O).max())), ml)
    if arrivals is None:
        if rate and rate.strip().lower() not in ("inf", "infinity"):
            r = parse_float(rate, "--rate", 0.0, 1e9, "requests per second, e.g. 20, or inf")
            if r <= 0 or math.isnan(r):
                raise KvcalcError("--rate must be above 0", "--rate", "requests per second, e.g. 20, or inf")
            arrivals = np.cumsum(rng.exponential(1.0 / r, size=n))
            arrival = f"Poisson, {r:g} requests/s"
        else:
            arrivals = np.zeros(n)
            arrival = "rate inf: every request is ready at time 0"
    else:
        arrival = "the trace's arrival times"
    if conc:
        arrival += f", at most {conc:,} in flight"
    total_mem = g.memory_runtime_bytes
    mnbt = eng.schedule(m, g, ml, opt.batched_tokens(max_num_batched_tokens), chunked_prefill=chunked_prefill)[0]
    mns = opt.count(max_num_seqs, "--max-num-seqs") or eng.default_num_seqs(total_mem, g.name)
    hit = opt.prompt_cache_hit(prompt_cache_hit)
    wl = Workload(arrivals, P, O, desc, arrival, prefix, hit, silent)
    if conc is not None and conc > n:
        raise KvcalcError(
            f"--concurrency {conc:,} is more than the {n:,} requests of the run",
            "--concurrency",
            f"at most {n:,} (or more --requests)",
        )
    every = opt.recv_interval(scheduler_recv_interval)
    st = SimSettings(
        ml,
        mns,
        mnbt,
        preempt,
        swap_b,
        consts,
        conc,
        seed_n,
        chunked_prefill=chunked_prefill,
        prefix_caching=prefix_caching,
        ignore_eos=ignore_eos,
        schedule_conservativeness=opt.conservativeness(schedule_conservativeness),
        recv_interval=every,
        batch_wait_iters=opt.batch_wait_iters(batch_wait_iters),
        batch_wait_ratio=opt.batch_wait_ratio(batch_wait_ratio),
    )
    progress, done = _progress(not as_json, n * len(pols))
    try:
        rep = run_sim(
            m,
            g,
            wl,
            st,
            pols,
            eng,
            kv,
            t,
            opt.size(pool, "--pool") if pool else None,
            progress,
            workers=None,
            dp=opt.parallel(dp, "--dp"),
            ep=opt.parallel(ep, "--ep"),
            weight_dtype=opt.weight_dtype(weight_dtype),
            pp=opt.parallel(pp, "--pp"),
            # A pool on the command line is taken as given over kvcalc.toml's util (as fit takes --kv-cache-memory);
            # both on the command line is refused.
            util=None if pool and from_file("util") else opt.fraction(util, "--util"),
        )
    finally:
        done()
    if plot_file:
        from kvcalc.render.simulate import write_chart

        write_chart(rep, plot_file)
    return emit(rep, origin, as_json, plot=plot)


def _progress(enabled: bool, total: int) -> tuple[Any, Any]:
    """A progress bar on stderr for long runs (a terminal only)."""
    import sys

    if not enabled or total < 200_000 or not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import Progress

    p = Progress(console=Console(stderr=True), transient=True)
    tasks: dict[str, Any] = {}

    def step(name: str, k: int, of: int) -> None:
        if name not in tasks:
            tasks[name] = p.add_task(f"simulating {name}", total=of)
        p.update(tasks[name], completed=k)

    p.start()
    return step, p.stop
