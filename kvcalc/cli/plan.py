"""kvcalc plan: the fewest GPUs (or the cheapest) that carry a load within latency targets."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit

# The parts a deployment search tries by default: data-centre GPUs and accelerators in the catalog.
DATACENTRE = (
    "h100-sxm",
    "h100-pcie",
    "h100-nvl",
    "h200",
    "h20",
    "b200",
    "gb200",
    "a100-80gb",
    "a100-40gb",
    "l40s",
    "l4",
    "mi300x",
    "mi325x",
    "mi355x",
)


def plan(
    model: opt.ModelOpt = None,
    gpus: Annotated[
        Optional[str],
        typer.Option(
            "--gpus", metavar="<list>", help="GPU types to consider, comma-separated (default: the catalog's data-centre parts)."
        ),
    ] = None,
    users: Annotated[
        Optional[str], typer.Option("--users", "-u", metavar="<n>", help="Concurrent users, each with one request in flight.")
    ] = None,
    rate: Annotated[Optional[str], typer.Option("--rate", metavar="<req/s>", help="Arrival rate in requests per second.")] = None,
    prompt: opt.Prompt = None,
    output: Annotated[
        Optional[str], typer.Option("--output", metavar="<tokens|dist>", help="Output tokens, as --prompt.")
    ] = None,
    workload: opt.WorkloadName = None,
    ttft: Annotated[
        Optional[str], typer.Option("--ttft", metavar="<time>", help="Time-to-first-token target: 2s, 500ms.")
    ] = None,
    tpot: Annotated[Optional[str], typer.Option("--tpot", metavar="<time>", help="Time-per-output-token target: 50ms.")] = None,
    percentile: Annotated[
        str,
        typer.Option(
            "--percentile",
            metavar="<p>",
            help="The percentile TTFT is judged at (50, 90 or 99; another goes to the next of these up, 99 at most), and the prompt it is judged on for a distribution (90).",
        ),
    ] = "90",
    kv_dtype: opt.KVDtypeOpt = "auto",
    engine: opt.EngineOpt = "vllm",
    attention_backend: opt.AttentionBackend = None,
    cudagraph_mode: opt.CudagraphMode = None,
    moe_backend: opt.MoeBackend = None,
    all_reduce_backend: opt.AllReduceBackend = None,
    max_gpus: Annotated[
        str, typer.Option("--max-gpus", metavar="<n>", help="Largest deployment to try, 1 to 4,096 GPUs.")
    ] = "64",
    price: Annotated[
        Optional[str],
        typer.Option("--price", metavar="<list>", help="GPU=$/hour pairs, e.g. h100=2.5,h200=3.6 (none are shipped as facts)."),
    ] = None,
    prompt_cache_hit: opt.PromptCacheHit = "0",
    weight_dtype: opt.WeightDtypeOpt = None,
    util: opt.Util = None,
    efficiency: opt.Efficiency = None,
    calibration: opt.Calibration = None,
    request_overhead: opt.RequestOverhead = None,
    closed_form: Annotated[
        bool,
        typer.Option(
            "--closed-form", help="Skip checking the best deployments by simulation (a rate load is simulated by default)."
        ),
    ] = False,
    throughput: Annotated[
        bool,
        typer.Option(
            "--throughput",
            help="The reverse question: the most --max-gpus GPUs of one --gpus type carry within the targets, "
            "aggregated and disaggregated (Poisson arrivals).",
        ),
    ] = False,
    dp: Annotated[
        Optional[str],
        typer.Option("--dp", metavar="<list>", help="DP attention sizes to try, e.g. 1,8 (default: 1 to 64 for MoE models)."),
    ] = None,
    ep: Annotated[
        str,
        typer.Option(
            "--ep",
            metavar="<on|off|both>",
            help="With DP attention: expert parallelism over every GPU of a stage (on), the experts split by width (off), or both.",
        ),
    ] = "on",
    cross_node_tp: Annotated[
        bool, typer.Option("--cross-node-tp", help="Also try TP wider than the NVLink domain (across servers).")
    ] = False,
    scheduler_recv_interval: opt.RecvInterval = "1",
    as_json: opt.Json = False,
) -> Any:
    """The fewest GPUs (then the lowest cost) that carry a load within TTFT and TPOT targets.

    Searches GPU type x TP x PP x replicas; checks memory (kvcalc fit), each decode step's bound
    at the batch the load implies, and the targets; names what binds each deployment.

    Example: kvcalc plan --model llama3.1-70b --rate 10 --prompt 1000 --output 200 --tpot 50ms --ttft 2s

    The most 8 GPUs carry: kvcalc plan --model qwen3-32b --gpus h200 --max-gpus 8 --throughput --prompt 4000
    --output 1000 --ttft 2s --tpot 30ms
    """
    import numpy as np

    from kvcalc.engine.memory import FitInputs
    from kvcalc.engine.plan import SLO, Traffic, latency_percentile, plan as run_plan
    from kvcalc.errors import KvcalcError
    from kvcalc.inputs.workload import check_fixed_pair, length_summary, sample_lengths
    from kvcalc.specs.catalog import resolve_gpu
    from kvcalc.units import parse_float, parse_seconds

    m, _, origin = opt.model_and_gpu(model, None, need_gpu=False)
    dp_sizes = tuple(opt.parallel(x.strip(), "--dp") for x in dp.split(",") if x.strip()) if dp else None
    modes = {"on": (True,), "off": (False,), "both": (True, False)}.get(ep.strip().lower())
    if modes is None:
        raise KvcalcError(f"--ep {ep[:20]!r}", "--ep", "on, off or both")
    if dp is not None and not dp_sizes:
        raise KvcalcError("no DP sizes given", "--dp", "a comma-separated list such as 1,8,16")
    eng = opt.engine(engine, attention_backend, moe_backend, all_reduce_backend, cudagraph_mode)
    wd = opt.weight_dtype(weight_dtype)
    frac = opt.fraction(util, "--util")
    every = opt.recv_interval(scheduler_recv_interval)
    if throughput:
        from kvcalc.engine.plan import SLO, latency_percentile, max_throughput
        from kvcalc.specs.catalog import resolve_gpu
        from kvcalc.units import parse_seconds

        if users is not None or rate is not None:
            raise KvcalcError("--throughput finds the rate itself", "--users/--rate", "leave out --users and --rate")
        if not gpus or "," in gpus:
            raise KvcalcError("--throughput needs one GPU type", "--gpus", "one GPU, e.g. --gpus h200")
        g = resolve_gpu(gpus.strip(), "--gpus")
        opt.check_backend(m, [g], eng)
        pct_t = parse_float(percentile, "--percentile", 0.0, 100.0, "a percentile from 0 to 100", open_low=False)
        rep = max_throughput(
            m,
            g,
            opt.need_count(max_gpus, "--max-gpus", maximum=4096, noun="a number of GPUs"),
            opt.tokens(prompt or "1000", "--prompt"),
            opt.tokens(output or "200", "--output"),
            SLO(
                parse_seconds(ttft, "--ttft") if ttft else None,
                parse_seconds(tpot, "--tpot") if tpot else None,
                latency_percentile(pct_t),
            ),
            opt.kv(kv_dtype, weight_dtype),
            eng,
            opt.step_constants(efficiency, calibration, request_overhead, model=m, gpus=[g], engine=eng),
            dp_sizes=dp_sizes,
            prompt_cache_hit=opt.prompt_cache_hit(prompt_cache_hit),
            weight_dtype=wd,
            recv_interval=every,
            util=frac,
        )
        return emit(rep, origin, as_json)
    if (users is None) == (rate is None):
        raise KvcalcError("give the load as users or as a rate", "--users/--rate", "--users N or --rate R (requests/s)")
    n_users = opt.count(users, "--users", noun="a number of users")
    r = parse_float(rate, "--rate", 0.0, 1e7, "requests per second, e.g. 10") if rate else None
    pct = parse_float(percentile, "--percentile", 0.0, 100.0, "a percentile from 0 to 100", open_low=False)

    samples: dict[str, Any] = {}
    cv2: dict[str, float] = {}

    def tokens(spec: str | None, preset: str, where: str) -> tuple[int, int]:
        s = spec or preset
        if ":" not in s:
            v = opt.tokens(s, where)
            samples[where] = np.full(2000, v, dtype=np.int64)
            return v, v
        ctx = m.max_position_embeddings
        sample = sample_lengths(s, 20_000, 0, ctx, where, f"{m.name}'s context of {ctx:,} tokens")[0]
        samples[where] = sample[:2000]
        mean, tail, cv2[where] = length_summary(sample, pct)
        return mean, tail

    preset = opt.workload_preset(workload)
    p_def, o_def = (preset[0], preset[1]) if preset else ("1000", "200")
    ctx = m.max_position_embeddings
    check_fixed_pair(prompt or p_def, output or o_def, ctx, f"{m.name}'s context of {ctx:,} tokens")
    p_mean, p_tail = tokens(prompt, p_def, "--prompt")
    o_mean, _ = tokens(output, o_def, "--output")
    if gpus is None:
        # A calibration holds for the GPU it was fitted on: the search is over that GPU alone.
        from kvcalc.cli.defaults import default_path
        from kvcalc.inputs.calibration import read_calibration

        cal_path = calibration or default_path("calibration")
        cal_gpu = read_calibration(cal_path).gpu if cal_path else ""
        gpus = cal_gpu or None
    names = [x.strip() for x in gpus.split(",") if x.strip()] if gpus else list(DATACENTRE)
    if not names or len(names) > 64:
        raise KvcalcError("give one to 64 GPU types", "--gpus", "a comma-separated list such as h100,h200")
    specs = [resolve_gpu(x, "--gpus") for x in names]
    if eng.attention_backend == "triton" and not gpus:
        from kvcalc.engine.engines import TRITON_GPUS

        # SGLang's Triton decode is priced on TRITON_GPUS only: the default list keeps those.
        specs = [x for x in specs if x.name in TRITON_GPUS]
    opt.check_backend(m, specs, eng)
    prices: dict[str, float] = {}
    for part in (price or "").split(","):
        if not part.strip():
            continue
        name, eq, val = part.partition("=")
        if not eq:
            raise KvcalcError(f"cannot read {part.strip()[:40]!r}", "--price", "GPU=$/hour pairs, e.g. h100=2.5")
        prices[resolve_gpu(name.strip(), "--price").name] = parse_float(
            val, "--price", 0.0, 1e6, "dollars per GPU-hour, e.g. 2.5"
        )
    traffic = Traffic(
        prompt=p_mean,
        output=o_mean,
        users=n_users,
        rate=r,
        prompt_tail=p_tail,
        prompt_cv2=cv2.get("--prompt", 0.0),
        prompt_cache_hit=opt.prompt_cache_hit(prompt_cache_hit),
    )
    slo = SLO(
        parse_seconds(ttft, "--ttft") if ttft else None,
        parse_seconds(tpot, "--tpot") if tpot else None,
        latency_percentile(pct),
    )
    consts = opt.step_constants(efficiency, calibration, request_overhead, model=m, gpus=specs, engine=eng)
    n_max = opt.need_count(max_gpus, "--max-gpus", maximum=4096, noun="a number of GPUs")
    report = run_plan(
        m,
        specs,
        traffic,
        slo,
        opt.kv(kv_dtype, weight_dtype),
        eng,
        max_gpus=n_max,
        prices=prices,
        constants=consts,
        dp_sizes=dp_sizes,
        cross_node_tp=cross_node_tp,
        ep_modes=modes,
        tp_sizes=(1, 2, 4, 8, 16) if cross_node_tp else (1, 2, 4, 8),
        base=FitInputs(seq=traffic.length, weight_dtype=wd, util=frac) if wd or frac is not None else None,
        recv_interval=every,
    )
    if r is not None and not closed_form and report.ranked:
        import dataclasses

        from kvcalc.engine.plan import verify

        P = samples["--prompt"]
        O = np.maximum(samples["--output"], 2)
        checks = verify(
            m,
            specs,
            report,
            P,
            O,
            r,
            slo,
            opt.kv(kv_dtype, weight_dtype),
            eng,
            int(pct),
            constants=consts,
            max_gpus=n_max,
            traffic=traffic,
            weight_dtype=wd,
            recv_interval=every,
            util=frac,
        )
        report = dataclasses.replace(report, verified=checks)
    return emit(report, origin, as_json)
