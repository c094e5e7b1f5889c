"""kvcalc measure: time a real paged-attention decode step and hold it against the bound."""

from __future__ import annotations

from typing import Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import app


def run_measure(model, gpu: Optional[str], batch: int, seq: int, *, seq_dist=None, block_size=16, dtype=None,
                layers=1, kernels=None, weights=False, device="auto", runs=None, seed=0, show_progress=True):
    """Resolve the device and geometry, then measure (torch imported here, never at start-up)."""
    from kvcalc.errors import KvcalcError

    try:
        import torch
    except ImportError:
        raise KvcalcError("torch is not installed", "kvcalc measure", "pip install 'kvcalc[measure]' (or torch)") from None
    from kvcalc.measure.cache import geometry_from_model
    from kvcalc.measure.run import CPU_KERNELS, GPU_KERNELS, measure

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise KvcalcError("no CUDA device is available", "--device", "cpu, or run on a machine with a GPU")
    if device not in ("cpu", "cuda"):
        raise KvcalcError(f"unknown device {device!r}", "--device", "auto, cpu or cuda")
    dtype = dtype or ("bfloat16" if device == "cuda" else "float32")
    dtype = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}.get(dtype, dtype)
    if dtype not in ("bfloat16", "float16", "float32"):
        raise KvcalcError(f"unknown dtype {dtype!r}", "--dtype", "bf16, fp16 or fp32")
    allowed = GPU_KERNELS if device == "cuda" else CPU_KERNELS + ("triton-paged",)
    for k in kernels or []:
        if k not in allowed:
            raise KvcalcError(f"unknown kernel {k!r} on {device}", "--kernels", ", ".join(allowed))
    geo = geometry_from_model(model, block_size)
    if seq_dist:
        from kvcalc.workload import sample_lengths

        lens = [int(x) for x in sample_lengths(seq_dist, batch, seed, 1 << 30)[0]]
    else:
        lens = [seq] * batch
    gspec = None
    if device == "cuda":
        from kvcalc.specs.catalog import canonical_name, resolve_gpu

        if gpu:
            gspec = resolve_gpu(gpu)
        else:
            name = canonical_name("gpu", torch.cuda.get_device_name(0))
            gspec = resolve_gpu(name) if name else None
    status = None
    if show_progress:
        import sys

        if sys.stderr.isatty():
            from rich.console import Console

            status = Console(stderr=True).status("starting")
            status.start()
    try:
        return measure(geo, lens, device=device, dtype_name=dtype, layers=layers, kernels=kernels, gpu_spec=gspec,
                       model=model, seed=seed, runs=runs, weights=weights,
                       progress=(lambda label: status.update(f"{label}...")) if status else None)
    finally:
        if status:
            status.stop()


@app.command()
def measure(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Geometry from this model (default: the default model)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", "-g", help="GPU spec for the datasheet bound (default: matched by device name)."),
    batch: str = typer.Option("8", "--batch", "-b", help="Sequences in the decode step."),
    seq: str = typer.Option("4k", "--seq", "-s", help="Context of every sequence."),
    seq_dist: Optional[str] = typer.Option(None, "--seq-dist", help="Mixed lengths instead: uniform:1k..16k, lognormal:..."),
    block_size: str = typer.Option("16", "--block-size", help="Tokens per page."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="bf16 or fp16 on a GPU (default bf16); fp32 on a CPU (default)."),
    layers: str = typer.Option("1", "--layers", help="Layers per step, each with its own cache (L layers are measured, not multiplied)."),
    kernels: Optional[str] = typer.Option(None, "--kernels", help="Comma list: triton-paged, cpu-paged, sdpa-dense, gather-sdpa."),
    weights: bool = typer.Option(False, "--weights", help="Also time the weight-streaming matrix-vector products of the layers."),
    device: str = typer.Option("auto", "--device", help="auto, cpu or cuda."),
    runs: Optional[str] = typer.Option(None, "--runs", help="Timed runs (default 100 on a GPU, 50 on a CPU)."),
    quick: bool = typer.Option(False, "--quick", help="A small shape: batch 4 x 512 tokens."),
    seed: str = typer.Option("0", "--seed", help="Random seed for the cache contents and --seq-dist."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Build a real paged KV cache, run and check decode attention, time it, and compare with the bound.

    Example: kvcalc measure --model llama3.1-8b --batch 32 --seq 8k
    """
    from kvcalc.units import parse_count

    m, _, echo = opt.model_and_gpu(model, None, need_gpu=False)
    b = 4 if quick else opt.count(batch, "--batch")
    s = 512 if quick else opt.tokens(seq, "--seq")
    ks = [k.strip() for k in kernels.split(",") if k.strip()] if kernels else None
    r = run_measure(m, gpu, b, s, seq_dist=None if quick else seq_dist, block_size=opt.count(block_size, "--block-size"),
                    dtype=dtype, layers=opt.count(layers, "--layers"), kernels=ks, weights=weights, device=device,
                    runs=opt.count(runs, "--runs") if runs else (10 if quick else None), seed=parse_count(seed, "--seed", 0),
                    show_progress=not as_json)
    if as_json:
        from kvcalc.render import emit_json

        emit_json({"measure": r, "t_measured_s": r.t_measured_s, "t_bound_s": r.t_bound_s,
                   "measured_over_bound": r.measured_over_bound, "achieved_bytes_per_s": r.achieved_bytes_per_s,
                   "read_ceiling_bytes_per_s": r.read_ceiling_bytes_per_s, "rel_error": r.rel_error, "device": r.device_name,
                   "kernel": r.kernel, "inputs": {**echo, "batch": b, "seq": s, "seq_dist": seq_dist, "quick": quick}})
        return
    from kvcalc.render import render_measure

    render_measure(r, m)
