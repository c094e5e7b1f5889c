"""kvcalc tiers: where KV can live, reload against recompute, and prefill/decode transfer."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit

SizeOpt = Optional[str]


def tiers(
    model: opt.ModelOpt = None,
    gpu: opt.GPUOpt = None,
    seq: Annotated[str, typer.Option("--seq", "-s", metavar="<tokens>", help="Tokens of the request whose KV moves.")] = "32k",
    tp: opt.TP = "1",
    kv_dtype: opt.KVDtypeOpt = "auto",
    engine: Annotated[
        str, typer.Option("--engine", "-e", metavar="<engine>", help="Engine whose budget gives the HBM pool.")
    ] = "vllm",
    dram: Annotated[
        SizeOpt, typer.Option("--dram", metavar="<size>", help="Host DRAM for KV per GPU (default 3 x the GPU's memory).")
    ] = None,
    dram_bw: Annotated[
        SizeOpt,
        typer.Option("--dram-bw", metavar="<rate>", help="Host link, one direction (default: half the spec's host link)."),
    ] = None,
    ssd: Annotated[SizeOpt, typer.Option("--ssd", metavar="<size>", help="Local SSD per GPU (default 3.84TB).")] = None,
    ssd_bw: Annotated[SizeOpt, typer.Option("--ssd-bw", metavar="<rate>", help="SSD read bandwidth (default 7GB/s).")] = None,
    remote: Annotated[
        SizeOpt, typer.Option("--remote", metavar="<size>", help="Remote memory pool per GPU (default 1TB).")
    ] = None,
    remote_bw: Annotated[
        SizeOpt, typer.Option("--remote-bw", metavar="<rate>", help="RDMA bandwidth per GPU (default 50GB/s).")
    ] = None,
    link: Annotated[
        str, typer.Option("--link", metavar="<rate>", help="Prefill-to-decode link for disaggregation, one direction.")
    ] = "50GB/s",
    rate: Annotated[
        SizeOpt, typer.Option("--rate", metavar="<req/s>", help="Requests per second the prefill instance sends.")
    ] = None,
    batch: opt.Batch = "1",
    as_json: opt.Json = False,
) -> Any:
    """KV tiers (HBM, DRAM, SSD, remote): capacity, reload against recompute, and P/D transfer.

    Example: kvcalc tiers --model llama3.1-70b --gpu h100 --tp 4 --seq 32k --rate 2
    """
    from kvcalc.engine.memory import FitInputs, fit
    from kvcalc.engine.tiers import default_tiers, tiers as run_tiers
    from kvcalc.units import parse_float, parse_rate

    m, g, origin = opt.model_and_gpu(model, gpu)
    s = opt.tokens(seq, "--seq")
    t = opt.parallel(tp, "--tp")
    kv = opt.kv(kv_dtype)
    eng = opt.engine(engine)

    def r(v: str | None, where: str) -> int | None:
        return None if v is None else parse_rate(v, where)

    pool = fit(m, g, FitInputs(seq=s, engine=eng, tp=t, kv_dtype=kv)).kv_pool_bytes
    tl = default_tiers(
        g,
        pool,
        opt.size(dram, "--dram"),
        r(dram_bw, "--dram-bw"),
        opt.size(ssd, "--ssd"),
        r(ssd_bw, "--ssd-bw"),
        opt.size(remote, "--remote"),
        r(remote_bw, "--remote-bw"),
    )
    rt = None if rate is None else parse_float(rate, "--rate", 0.0, 1e9, "a positive number of requests per second, up to 1e9")
    report = run_tiers(m, g, s, tl, kv, t, parse_rate(link, "--link"), opt.batch(batch), rt, eng)
    return emit(report, origin, as_json)
