"""kvcalc tiers: where KV can live, reload against recompute, and prefill/decode transfer."""

from __future__ import annotations

from typing import Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import app


@app.command()
def tiers(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Catalog name, alias, spec YAML or config.json."),
    gpu: Optional[str] = typer.Option(None, "--gpu", "-g", help="Catalog name, alias or spec YAML."),
    seq: str = typer.Option("32k", "--seq", "-s", help="Tokens of the request whose KV moves."),
    tp: str = typer.Option("1", "--tp", help="Tensor-parallel size (per-GPU figures)."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="bf16, fp16, fp8, int8, int4, fp4, fp32."),
    engine: str = typer.Option("vllm", "--engine", "-e", help="Engine whose budget gives the HBM pool."),
    dram: Optional[str] = typer.Option(None, "--dram", help="Host DRAM for KV per GPU (default 3 x the GPU's memory)."),
    dram_bw: Optional[str] = typer.Option(None, "--dram-bw", help="Host link, one direction (default: half the spec's host link)."),
    ssd: Optional[str] = typer.Option(None, "--ssd", help="Local SSD per GPU (default 3.84TB)."),
    ssd_bw: Optional[str] = typer.Option(None, "--ssd-bw", help="SSD read bandwidth (default 7GB/s)."),
    remote: Optional[str] = typer.Option(None, "--remote", help="Remote memory pool per GPU (default 1TB)."),
    remote_bw: Optional[str] = typer.Option(None, "--remote-bw", help="RDMA bandwidth per GPU (default 50GB/s)."),
    link: str = typer.Option("50GB/s", "--link", help="Prefill-to-decode link for disaggregation, one direction."),
    rate: Optional[str] = typer.Option(None, "--rate", help="Requests per second the prefill instance sends."),
    batch: str = typer.Option("1", "--batch", "-b", help="Decode batch for the decode step time."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """KV tiers (HBM, DRAM, SSD, remote): capacity, reload against recompute, and P/D transfer.

    Example: kvcalc tiers --model llama3.1-70b --gpu h100 --tp 4 --seq 32k --rate 2
    """
    from kvcalc.engine.dtypes import kv_dtype as get_kv
    from kvcalc.engine.memory import FitInputs, fit
    from kvcalc.engine.tiers import default_tiers, disaggregation
    from kvcalc.engine.tiers import tiers as run_tiers
    from kvcalc.errors import KvcalcError
    from kvcalc.units import parse_rate

    m, g, echo = opt.model_and_gpu(model, gpu)
    s = opt.tokens(seq, "--seq")
    t = opt.count(tp, "--tp")
    kv = get_kv(kv_dtype).name

    def r(v, where):
        return None if v is None else parse_rate(v, where)

    pool = fit(m, g, FitInputs(seq=s, engine=engine, tp=t, kv_dtype=kv)).kv_pool_bytes
    tl = default_tiers(g, pool, opt.size(dram, "--dram"), r(dram_bw, "--dram-bw"), opt.size(ssd, "--ssd"),
                       r(ssd_bw, "--ssd-bw"), opt.size(remote, "--remote"), r(remote_bw, "--remote-bw"))
    rows = run_tiers(m, g, s, tl, kv, t)
    rt = None
    if rate is not None:
        try:
            rt = float(rate)
        except ValueError:
            raise KvcalcError(f"cannot read {rate!r} as requests per second", "--rate", "a number such as 2.5") from None
        if not rt > 0 or rt == float("inf"):
            raise KvcalcError(f"{rate} is not a positive rate", "--rate", "a positive number of requests per second")
    d = disaggregation(m, g, s, parse_rate(link, "--link"), kv, t, opt.count(batch, "--batch"), rt)
    inputs = {**echo, "seq": s, "tp": t, "kv_dtype": kv, "engine": engine, "link_bytes_per_s": d.link_bytes_per_s, "rate": rt}
    assumptions = [
        "bandwidths are one direction; per GPU (each GPU moves its own shard of the KV)",
        "recompute: the compute-bound prefill time, FLOPs / dense peak (batched prefill shares the weight read)",
        "disaggregation ships the prompt's KV once per layer and KV head (tp 1 bytes), over --link",
    ] + [f"{t.name}: {t.source}" for t in tl]
    if as_json:
        from kvcalc.render import emit_json, to_plain

        emit_json({"tiers": to_plain(rows), "disaggregation": to_plain(d), "inputs": inputs, "assumptions": assumptions})
        return
    from kvcalc.render import render_tiers

    render_tiers(rows, d, m, g, s, assumptions)
