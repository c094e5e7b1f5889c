"""kvcalc roofline: how fast can decode possibly go, and what limits it."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit


def roofline(
    model: opt.ModelOpt = None,
    gpu: opt.GPUOpt = None,
    batch: Annotated[
        str,
        typer.Option(
            "--batch",
            "-b",
            metavar="<n|list|range>",
            help="Requests decoding together: 32, a list 1,8,32, a doubling range 1..256 or a stepped one 8..256:8 "
            "(whole numbers; 1000, not 1k).",
        ),
    ] = "1",
    seq: Annotated[
        str,
        typer.Option(
            "--seq",
            "-s",
            metavar="<tokens|list|range>",
            help="Context per request: 4096, 4k, a list, a doubling range 1k..128k or a stepped one 1k..32k:1k.",
        ),
    ] = "4k",
    kv_dtype: opt.KVDtypeOpt = "auto",
    weight_dtype: opt.WeightDtypeOpt = None,
    util: opt.Util = None,
    compute_dtype: Annotated[
        Optional[str],
        typer.Option(
            "--compute-dtype",
            metavar="<dtype>",
            help="Peak FLOP/s to use: bf16 (or fp16), fp8, fp4 or int8 (default: fp8 for an fp8 checkpoint on a GPU with "
            "fp8 units, fp4 for an NVFP4 one on a GPU with fp4 units, int8 for a W8A8 int8 one on a GPU whose spec gives "
            "its INT8 peak).",
        ),
    ] = None,
    tp: opt.TP = "1",
    dp: opt.DP = "1",
    ep: opt.EP = "1",
    engine: Annotated[
        str, typer.Option("--engine", "-e", metavar="<engine>", help="Engine whose KV pool decides which batches fit.")
    ] = "vllm",
    attention_backend: opt.AttentionBackend = None,
    cudagraph_mode: opt.CudagraphMode = None,
    moe_backend: opt.MoeBackend = None,
    all_reduce_backend: opt.AllReduceBackend = None,
    allreduce: Annotated[
        bool, typer.Option("--allreduce", help="Add the tensor-parallel all-reduce time as a separate line.")
    ] = False,
    prefill: Annotated[
        Optional[str],
        typer.Option("--prefill", metavar="<tokens>", help="Also bound the prefill (TTFT) of a prompt of this many tokens."),
    ] = None,
    plot: Annotated[bool, typer.Option("--plot", help="Draw the roofline and time-vs-context charts in the terminal.")] = False,
    plot_file: Annotated[
        Optional[str],
        typer.Option("--plot-file", metavar="<file>", help="Write the charts to a .png/.svg/.pdf file (needs matplotlib)."),
    ] = None,
    measure: Annotated[
        bool,
        typer.Option(
            "--measure",
            help="Also time a real decode step (every layer and the head, on this device) at the first batch and seq.",
        ),
    ] = False,
    efficiency: opt.Efficiency = None,
    calibration: opt.Calibration = None,
    as_json: opt.Json = False,
) -> Any:
    """Decode-step lower bound: (weights read + KV read) / bandwidth against FLOPs / peak.

    A grid of up to 1,000,000 points (batches x contexts); --json lists every point, the table
    summarises grids of more than 64.

    Example: kvcalc roofline --model llama3.1-70b --gpu h100 --tp 4 --batch 1,8,32,128 --seq 1k..32k
    """
    import dataclasses

    from kvcalc.engine.roofline import roofline as run_roofline
    from kvcalc.units import parse_count_list, parse_token_list

    m, g, origin = opt.model_and_gpu(model, gpu)
    batches = parse_count_list(batch, "--batch")
    seqs = parse_token_list(seq, "--seq")
    eng = opt.engine(engine, attention_backend, moe_backend, all_reduce_backend, cudagraph_mode)
    opt.check_backend(m, [g], eng)
    r = run_roofline(
        m,
        g,
        batches,
        seqs,
        opt.kv(kv_dtype, weight_dtype),
        opt.parallel(tp, "--tp"),
        opt.weight_dtype(weight_dtype),
        compute_dtype,
        eng,
        allreduce,
        opt.tokens(prefill, "--prefill") if prefill else None,
        opt.step_constants(efficiency, calibration, model=m, gpus=[g], engine=eng),
        dp=opt.parallel(dp, "--dp"),
        ep=opt.parallel(ep, "--ep"),
        util=opt.fraction(util, "--util"),
    )
    if plot_file:
        from kvcalc.render.plot import write_plot_file
        from kvcalc.render.roofline import charts

        write_plot_file(plot_file, charts(r))
    if measure:
        from kvcalc.measure.setup import run_measure

        # The whole step (every layer's weights and attention, the head), held against the bound of
        # the same step on the device that ran it.
        r = dataclasses.replace(r, measure=run_measure(m, gpu, batches[0], seqs[0], show_progress=not as_json, full_step=True))
    emit(r, origin, as_json, plot=plot)
    if plot_file and not as_json:
        print(f"wrote {plot_file}")
    return r
