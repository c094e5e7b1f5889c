"""kvcalc paging: how much each allocation policy wastes on a workload, and what paging buys."""

from __future__ import annotations

from typing import Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import app


@app.command()
def paging(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Catalog name, alias, spec YAML or config.json."),
    gpu: Optional[str] = typer.Option(None, "--gpu", "-g", help="Catalog name, alias or spec YAML."),
    lengths: Optional[str] = typer.Option(None, "--lengths", "-l", help="uniform:100..4000, lognormal:median=600,sigma=1.0 or fixed:2048 (prompt + output tokens)."),
    trace: Optional[str] = typer.Option(None, "--trace", help="JSON Lines or CSV of prompt and output token counts per request."),
    requests: str = typer.Option("20000", "--requests", "-n", help="Requests to sample from --lengths."),
    seed: str = typer.Option("0", "--seed", help="Random seed, for reproducible samples."),
    max_len: Optional[str] = typer.Option(None, "--max-len", help="The length preallocation reserves (default: the model's context, at most 8k)."),
    shared_prefix: str = typer.Option("0", "--shared-prefix", help="Tokens every request starts with, stored once by paging (added to each length)."),
    block_sizes: str = typer.Option("1,8,16,32,64,128", "--block-sizes", help="Paged block sizes to compare."),
    tp: str = typer.Option("1", "--tp", help="Tensor-parallel size."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="bf16, fp16, fp8, int8, int4, fp4, fp32."),
    engine: str = typer.Option("vllm", "--engine", "-e", help="Engine whose budget gives the KV pool (kvcalc fit)."),
    pool: Optional[str] = typer.Option(None, "--pool", help="The KV pool per GPU, instead of fit's (e.g. 40GiB)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Simulate allocation policies on a workload: utilisation, waste, and requests that fit.

    Example: kvcalc paging --model llama3.1-8b --gpu h100 --lengths lognormal:median=600,sigma=1.0 --max-len 8k
    """
    from pathlib import Path

    from kvcalc.engine.dtypes import kv_dtype as get_kv
    from kvcalc.engine.memory import FitInputs, fit
    from kvcalc.engine.paging import simulate
    from kvcalc.errors import KvcalcError
    from kvcalc.units import parse_count, parse_count_list
    from kvcalc.workload import is_csv_name, read_trace, sample_lengths

    m, g, echo = opt.model_and_gpu(model, gpu)
    t = opt.count(tp, "--tp")
    kv = get_kv(kv_dtype).name
    ml = opt.tokens(max_len, "--max-len") if max_len else min(m.max_position_embeddings, 8192)
    prefix = parse_count(shared_prefix, "--shared-prefix", minimum=0)
    bss = parse_count_list(block_sizes, "--block-sizes")
    if 16 not in bss:
        bss = sorted(set(bss) | {16})
    n = parse_count(requests, "--requests")
    if n > 2_000_000:
        raise KvcalcError(f"{n:,} requests", "--requests", "at most 2,000,000")
    if prefix >= ml:
        raise KvcalcError(f"--shared-prefix {prefix:,} leaves no room under --max-len {ml:,}", "--shared-prefix",
                          "a prefix shorter than --max-len")
    if (lengths is None) == (trace is None):
        raise KvcalcError("give exactly one workload", "--lengths/--trace", "--lengths DIST or --trace FILE")
    if trace:
        from kvcalc.specs.loader import probe, read_text

        if probe(trace) != "file":
            raise KvcalcError("no such file", trace, "a JSON Lines or CSV trace")
        L, life, desc, notes = read_trace(read_text(Path(trace)), trace, ml - prefix, is_csv_name(trace))
    else:
        L, life, desc, notes = sample_lengths(lengths, n, parse_count(seed, "--seed", minimum=0), ml - prefix)
    if prefix:
        L = L + prefix
    if pool:
        pool_b = opt.size(pool, "--pool")
    else:
        pool_b = fit(m, g, FitInputs(seq=ml, engine=engine, tp=t, kv_dtype=kv)).kv_pool_bytes
    progress, done = _progress(not as_json, len(L) * (len(bss) + 2 + (2 if prefix else 0)))
    try:
        r = simulate(m, L, life, pool_b, ml, kv, t, prefix, bss, progress)
    finally:
        done()
    r.notes = notes + r.notes
    inputs = {**echo, "workload": desc, "requests": int(len(L)), "seed": int(seed) if not trace else None, "max_len": ml,
              "shared_prefix": prefix, "tp": t, "kv_dtype": kv, "engine": engine, "pool_bytes": pool_b}
    assumptions = [
        "one stream for every policy: requests queue in order and the queue never empties; each holds its allocation "
        "for a time proportional to its output tokens; figures are averages over the moments the next request is refused",
        "each request is sized at its full length (prompt + output), the peak it reaches",
        "prealloc reserves --max-len tokens per request; contiguous reserves the exact length (an oracle) first-fit; "
        "paged-B rounds each layer's tokens up to blocks of B",
        f"KV pool: {'--pool' if pool else engine + chr(39) + 's budget from kvcalc fit'}",
    ]
    if as_json:
        from kvcalc.render import emit_json, to_plain

        doc = to_plain(r)
        doc["policies"] = {p["policy"]: p for p in doc["policies"]}
        emit_json({**doc, "inputs": inputs, "assumptions": assumptions})
        return
    from kvcalc.render import render_paging

    render_paging(r, m, g, inputs, assumptions)


def _progress(enabled: bool, total: int):
    """A progress bar on stderr for long simulations (a terminal only)."""
    import sys

    if not enabled or total < 400_000 or not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import Progress

    p = Progress(console=Console(stderr=True), transient=True)
    task = p.add_task("simulating", total=total)
    p.start()
    return (lambda k: p.advance(task, k)), p.stop
