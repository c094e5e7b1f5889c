"""kvcalc measure: time a real paged-attention decode step and hold it against the bound."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit


def measure(
    model: opt.ModelOpt = None,
    gpu: Annotated[
        Optional[str],
        typer.Option(
            "--gpu", "-g", metavar="<name|file>", help="GPU spec for the datasheet bound (default: matched by device name)."
        ),
    ] = None,
    batch: Annotated[str, typer.Option("--batch", "-b", metavar="<n>", help="Sequences in the decode step.")] = "8",
    seq: Annotated[str, typer.Option("--seq", "-s", metavar="<tokens>", help="Context of every sequence.")] = "4k",
    seq_dist: Annotated[
        Optional[str], typer.Option("--seq-dist", metavar="<dist>", help="Mixed lengths instead: uniform:1k..16k, lognormal:...")
    ] = None,
    block_size: Annotated[str, typer.Option("--block-size", metavar="<tokens>", help="Tokens per page.")] = "16",
    dtype: Annotated[
        Optional[str],
        typer.Option("--dtype", metavar="<dtype>", help="bf16 or fp16 on a GPU (default bf16); fp32 on a CPU (default)."),
    ] = None,
    layers: Annotated[
        str,
        typer.Option(
            "--layers", metavar="<n>", help="Layers per step, each with its own cache (L layers are measured, not multiplied)."
        ),
    ] = "1",
    kernels: Annotated[
        Optional[str],
        typer.Option("--kernels", metavar="<list>", help="Comma list: triton-paged, cpu-paged, sdpa-dense, gather-sdpa."),
    ] = None,
    weights: Annotated[
        bool, typer.Option("--weights", help="Also time the weight-streaming matrix-vector products of the layers.")
    ] = False,
    device: Annotated[str, typer.Option("--device", metavar="<device>", help="auto, cpu or cuda.")] = "auto",
    runs: Annotated[
        Optional[str], typer.Option("--runs", metavar="<n>", help="Timed runs, 1 to 10,000 (default 100 on a GPU, 50 on a CPU).")
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="A small shape: batch 4 x 512 tokens.")] = False,
    kv_dtype: Annotated[
        Optional[str], typer.Option("--kv-dtype", metavar="<dtype>", help="fp8: an e4m3 cache with per-tensor scales.")
    ] = None,
    full_step: Annotated[
        bool,
        typer.Option("--full-step", help="Also time a whole decode step: every layer's weights and attention and the LM head."),
    ] = False,
    threads: Annotated[
        Optional[str], typer.Option("--threads", metavar="<n>", help="torch threads on a CPU (default 1: stable timings).")
    ] = None,
    seed: opt.Seed = "0",
    as_json: opt.Json = False,
) -> Any:
    """Build a real paged KV cache, run and check decode attention, time it, and compare with the bound.

    Example: kvcalc measure --model llama3.1-8b --batch 32 --seq 8k
    """
    from kvcalc.errors import KvcalcError
    from kvcalc.measure.setup import run_measure

    m, _, origin = opt.model_and_gpu(model, None, need_gpu=False)
    b = opt.need_count(batch, "--batch", maximum=65536, noun="a number of sequences")
    s = opt.tokens(seq, "--seq")
    if seq_dist:
        from kvcalc.inputs.workload import sample_lengths

        sample_lengths(seq_dist, 1, 0, 1 << 30)  # checked before any allocation
    n_runs = opt.count(runs, "--runs", maximum=10_000, noun="a number of runs")
    if quick:
        if batch != "8" or seq != "4k" or seq_dist:
            raise KvcalcError("--quick sets its own shape", "--quick", "--quick alone, or --batch and --seq without it")
        b, s, seq_dist, n_runs = 4, 512, None, n_runs or 10
    ks = [k.strip() for k in kernels.split(",") if k.strip()] if kernels else None
    r = run_measure(
        m,
        gpu,
        b,
        s,
        seq_dist=seq_dist,
        block_size=opt.need_count(block_size, "--block-size", maximum=1024, noun="a number of tokens per page"),
        dtype=dtype,
        layers=opt.need_count(layers, "--layers", maximum=1024, noun="a number of layers"),
        kernels=ks,
        weights=weights,
        device=device,
        runs=n_runs,
        seed=opt.seed(seed),
        show_progress=not as_json,
        kv_dtype=kv_dtype,
        full_step=full_step,
        threads=opt.count(threads, "--threads", maximum=256, noun="a number of threads"),
    )
    return emit(r, origin, as_json)
