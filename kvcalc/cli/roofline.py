"""kvcalc roofline: how fast can decode possibly go, and what limits it."""

from __future__ import annotations

from typing import Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import app


@app.command()
def roofline(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Catalog name, alias, spec YAML or config.json (default: $KVCALC_MODEL, kvcalc.toml, llama3.1-8b)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", "-g", help="Catalog name, alias or spec YAML (default: $KVCALC_GPU, kvcalc.toml, h100-sxm)."),
    batch: str = typer.Option("1", "--batch", "-b", help="Requests decoding together: 32, a list 1,8,32 or a range 1..256."),
    seq: str = typer.Option("4k", "--seq", "-s", help="Context per request: 4096, 4k, a list, or a range 1k..128k."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="bf16, fp16, fp8, int8, int4, fp4, fp32."),
    weight_dtype: Optional[str] = typer.Option(None, "--weight-dtype", help="Override the spec's weight format."),
    compute_dtype: str = typer.Option("bf16", "--compute-dtype", help="Peak FLOP/s to use: bf16 (or fp16) or fp8."),
    tp: str = typer.Option("1", "--tp", help="Tensor-parallel size: weights and KV split per rank."),
    engine: str = typer.Option("vllm", "--engine", "-e", help="Engine whose KV pool decides which batches fit."),
    allreduce: bool = typer.Option(False, "--allreduce", help="Add the tensor-parallel all-reduce time as a separate line."),
    prefill: Optional[str] = typer.Option(None, "--prefill", help="Also bound the prefill (TTFT) of a prompt of this many tokens."),
    plot: bool = typer.Option(False, "--plot", help="Draw the roofline and time-vs-context charts in the terminal."),
    plot_file: Optional[str] = typer.Option(None, "--plot-file", help="Write the charts to a .png/.svg file (needs matplotlib)."),
    measure: bool = typer.Option(False, "--measure", help="Also time a real paged decode step (one layer's attention) at the first batch and seq."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Decode-step lower bound: (weights read + KV read) / bandwidth against FLOPs / peak.

    Example: kvcalc roofline --model llama3.1-70b --gpu h100 --tp 4 --batch 1,8,32,128 --seq 1k..32k
    """
    from kvcalc.engine.memory import FitInputs, max_batch_in_memory
    from kvcalc.engine.roofline import decode_bound, prefill_bound
    from kvcalc.units import parse_count_list, parse_token_list

    m, g, echo = opt.model_and_gpu(model, gpu)
    batches = parse_count_list(batch, "--batch")
    seqs = parse_token_list(seq, "--seq")
    t = opt.count(tp, "--tp")
    if weight_dtype:
        from kvcalc.engine.dtypes import normalize_weight_dtype

        weight_dtype = normalize_weight_dtype(weight_dtype, "--weight-dtype")
    from kvcalc.engine.dtypes import kv_dtype as get_kv

    kv = get_kv(kv_dtype).name
    if len(batches) * len(seqs) > 10_000:
        from kvcalc.errors import KvcalcError

        raise KvcalcError(f"{len(batches) * len(seqs):,} grid points", "--batch x --seq",
                          "at most 10,000 points on the command line (the Python API's decode_grid takes millions)")
    inp = FitInputs(seq=seqs[0], engine=engine, tp=t, kv_dtype=kv, weight_dtype=weight_dtype)
    rows = []
    for s in seqs:
        fit_max, _ = max_batch_in_memory(m, g, FitInputs(**{**inp.__dict__, "seq": s}), s)
        for b in batches:
            rows.append(decode_bound(m, g, b, s, kv, t, weight_dtype, compute_dtype, allreduce, int(fit_max)))
    pre = prefill_bound(m, g, opt.tokens(prefill, "--prefill"), t, weight_dtype, compute_dtype) if prefill else None
    assumptions = [
        "memory term: streamed weights (every layer's matrices and the LM head; not the input embedding table, of which a step reads b rows) plus each request's KV, read once, over the datasheet bandwidth in bytes/s (10^9 B per GB)",
        "compute term: 2 x active parameters x batch + attention (2 FLOPs per multiply-add over each key and value a token reads; MLA in its absorbed form), over dense peak FLOP/s",
        "per GPU: weights and KV split over tp ranks, KV heads replicated when tp > KV heads",
        f"fits in memory: batch <= the requests of this length that {engine}'s KV pool holds (kvcalc fit)",
    ]
    if m.is_moe:
        assumptions.append("MoE: a step reads the experts its tokens route to, E x (1 - (1 - k/E)^b) per MoE layer on average (uniform routing)")
    if any(k.kind == "state" for k in m.layer_kinds.values()):
        assumptions.append("recurrent-state layers: the state is read each step; their FLOPs are not counted")
    inputs = {**echo, "batch": batches, "seq": seqs, "kv_dtype": kv, "weight_dtype": weight_dtype or m.weight_dtype,
              "compute_dtype": compute_dtype, "tp": t, "engine": engine}
    if plot_file:
        from kvcalc.render import roofline_charts
        from kvcalc.plot import write_plot_file

        write_plot_file(plot_file, roofline_charts(rows, g, compute_dtype))
    measured = None
    if measure:
        from kvcalc.cli.measure import run_measure

        measured = run_measure(m, gpu, batches[0], seqs[0], show_progress=not as_json)
    if as_json:
        from kvcalc.render import emit_json, to_plain

        doc = to_plain(rows[0]) if len(rows) == 1 else {"rows": [to_plain(r) for r in rows]}
        if pre:
            doc["prefill"] = to_plain(pre)
        if measured is not None:
            doc["measure"] = to_plain(measured)
        emit_json({**doc, "inputs": inputs, "assumptions": assumptions})
        return
    from kvcalc.render import render_roofline

    render_roofline(rows, m, g, echo, pre, plot, assumptions)
    if measured is not None:
        from kvcalc.render import render_measure

        render_measure(measured, m)
    if plot_file:
        print(f"wrote {plot_file}")
