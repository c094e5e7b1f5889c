"""kvcalc paging: how much each allocation policy wastes on a workload, and what paging buys."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit

MAX_REQUESTS = 2_000_000


def paging(
    model: opt.ModelOpt = None,
    gpu: opt.GPUOpt = None,
    lengths: Annotated[
        Optional[str],
        typer.Option(
            "--lengths",
            "-l",
            metavar="<dist>",
            help="uniform:100..4000, lognormal:median=600,sigma=1.0 or fixed:2048 (prompt + output tokens).",
        ),
    ] = None,
    trace: Annotated[
        Optional[str],
        typer.Option("--trace", metavar="<file>", help="JSON Lines or CSV of prompt and output token counts per request."),
    ] = None,
    requests: Annotated[
        str, typer.Option("--requests", "-n", metavar="<n>", help="Requests to sample from --lengths, 1 to 2,000,000.")
    ] = "20000",
    seed: opt.Seed = "0",
    max_len: Annotated[
        Optional[str],
        typer.Option(
            "--max-len",
            metavar="<tokens>",
            help="The length preallocation reserves (default: the model's context; at most 8k for --lengths).",
        ),
    ] = None,
    shared_prefix: Annotated[
        str,
        typer.Option(
            "--shared-prefix",
            metavar="<tokens>",
            help="Tokens every request starts with, stored once by paging (added to each length).",
        ),
    ] = "0",
    block_sizes: Annotated[
        str,
        typer.Option("--block-sizes", metavar="<list>", help="Paged block sizes to compare (up to 16 sizes, each 1 to 65,536)."),
    ] = "1,8,16,32,64,128",
    tp: opt.TP = "1",
    kv_dtype: opt.KVDtypeOpt = "auto",
    engine: opt.PoolEngine = "vllm",
    pool: opt.Pool = None,
    as_json: opt.Json = False,
) -> Any:
    """Steady state of allocation policies on a workload: utilisation, waste, and requests that fit.

    Every request is sized at its final length and the pool is sampled when the next request is
    refused: the quick view of what each policy holds at saturation. For memory over time as
    tokens are generated, see kvcalc simulate.

    Example: kvcalc paging --model llama3.1-8b --gpu h100 --lengths lognormal:median=600,sigma=1.0 --max-len 8k
    """
    from kvcalc.engine.memory import FitInputs, fit
    from kvcalc.engine.paging import simulate
    from kvcalc.errors import KvcalcError
    from kvcalc.units import parse_count_list

    m, g, origin = opt.model_and_gpu(model, gpu)
    t = opt.parallel(tp, "--tp")
    kv = opt.kv(kv_dtype)
    eng = opt.engine(engine)
    # A trace's lengths are what was served: by default it is held to the model's context, not to
    # the 8k a sampled distribution defaults to.
    if max_len:
        ml = opt.tokens(max_len, "--max-len")
    else:
        ml = m.max_position_embeddings if trace else min(m.max_position_embeddings, 8192)
    if ml > 2**31:
        raise KvcalcError(f"--max-len {ml:,} is longer than a simulation handles", "--max-len", "at most 2,147,483,648 tokens")
    prefix = opt.need_count(shared_prefix, "--shared-prefix", minimum=0, maximum=2**31, noun="a number of tokens")
    bss = parse_count_list(block_sizes, "--block-sizes", 1, 65536, limit=16)
    if 16 not in bss:
        bss = sorted(set(bss) | {16})
    n = opt.need_count(requests, "--requests", maximum=MAX_REQUESTS, noun="a number of requests")
    seed_n = opt.seed(seed)
    if prefix >= ml:
        raise KvcalcError(
            f"--shared-prefix {prefix:,} leaves no room under --max-len {ml:,}",
            "--shared-prefix",
            "a prefix shorter than --max-len",
        )
    if (lengths is None) == (trace is None):
        raise KvcalcError("give exactly one workload", "--lengths/--trace", "--lengths DIST or --trace FILE")
    if trace:
        from kvcalc.inputs.workload import read_trace_file

        L, life, desc, notes = read_trace_file(trace, ml - prefix)
    else:
        from kvcalc.inputs.workload import sample_lengths

        assert lengths is not None
        L, life, desc, notes = sample_lengths(lengths, n, seed_n, ml - prefix)
    if prefix:
        L = L + prefix
    if pool:
        pool_b = opt.size(pool, "--pool")
        assert pool_b is not None
    else:
        pool_b = fit(m, g, FitInputs(seq=ml, engine=eng, tp=t, kv_dtype=kv)).kv_pool_bytes
    progress, done = _progress(not as_json, len(L) * (len(bss) + 2 + (2 if prefix else 0)))
    try:
        r = simulate(
            m,
            L,
            life,
            pool_b,
            ml,
            kv,
            t,
            prefix,
            bss,
            progress,
            workload=desc,
            pool_source="--pool" if pool else f"{eng.name}'s budget from kvcalc fit",
            gpu=g.name,
            notes=notes,
            seed=None if trace else seed_n,
            engine=eng.name,
        )
    finally:
        done()
    return emit(r, origin, as_json)


def _progress(enabled: bool, total: int) -> tuple[Any, Any]:
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
