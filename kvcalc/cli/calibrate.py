"""kvcalc calibrate: fit the step-time constants to benchmark runs a user measured."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit


def calibrate(
    results: Annotated[
        list[str],
        typer.Argument(
            metavar="RESULTS...",
            help="Files of benchmark results: vllm bench serve's printed block or --save-result JSON, SGLang "
            "bench_serving's block or JSON Lines, genai-perf's table or JSON; several runs a file is fine.",
        ),
    ],
    model: opt.ModelOpt = None,
    gpu: opt.GPUOpt = None,
    tp: Annotated[
        str, typer.Option("--tp", metavar="<n|list>", help="Tensor-parallel size of the runs: one, or one per run (1,1,8).")
    ] = "1",
    kv_dtype: opt.KVDtypeOpt = "auto",
    engine: opt.EngineOpt = "vllm",
    attention_backend: opt.AttentionBackend = None,
    moe_backend: opt.MoeBackend = None,
    all_reduce_backend: opt.AllReduceBackend = None,
    weight_dtype: opt.WeightDtypeOpt = None,
    write: Annotated[
        Optional[str],
        typer.Option("--write", metavar="<file>", help="Write the calibration (JSON) for --calibration and kvcalc.toml."),
    ] = None,
    as_json: opt.Json = False,
) -> Any:
    """Fit kvcalc's step-time constants to measured benchmark runs, and print the fit and its residuals.

    Each run's request throughput, mean lengths and TPOT say how many requests were decoding
    (Little's law); the fit picks the bandwidth and compute shares, the per-step cost and the
    all-reduce latency that predict the measured TPOTs, and the request path from TTFT.

    Example: kvcalc calibrate c1.txt c8.txt c32.txt --model llama3.1-8b --gpu h100 --write h100.json
    """
    from kvcalc.engine.calibrate import calibrate as run_calibrate
    from kvcalc.errors import KvcalcError
    from kvcalc.inputs.bench import read_bench

    m, g, origin = opt.model_and_gpu(model, gpu)
    runs = [r for path in results for r in read_bench(path)]
    if len(runs) > 1000:
        raise KvcalcError(f"{len(runs):,} runs", "RESULTS", "at most 1,000 runs")
    eng = opt.engine(engine, attention_backend, moe_backend, all_reduce_backend)
    opt.check_backend(m, [g], eng)
    sizes = [opt.parallel(x.strip(), "--tp") for x in tp.split(",") if x.strip()]
    if len(sizes) == 1:
        sizes = sizes * len(runs)
    from kvcalc.specs.catalog import canonical_name

    rep = run_calibrate(
        m,
        g,
        runs,
        sizes,
        opt.kv(kv_dtype, weight_dtype),
        eng,
        weight_dtype=opt.weight_dtype(weight_dtype),
        identify=lambda name: canonical_name("model", name),
    )
    if write:
        from kvcalc import files
        from kvcalc.render.json import dumps, to_json

        files.write_text(write, dumps(to_json(rep)))
    return emit(rep, origin, as_json)
