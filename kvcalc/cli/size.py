"""kvcalc size: KV bytes per token, per request, per batch."""

from __future__ import annotations

from typing import Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import app


@app.command()
def size(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Catalog name, alias, spec YAML or config.json."),
    seq: str = typer.Option(..., "--seq", "-s", help="Tokens per request: 4096, 4k, 32K, 1M."),
    batch: str = typer.Option("1", "--batch", "-b", help="Requests in the batch."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="bf16, fp16, fp8, int8, int4, fp4, fp32."),
    tp: str = typer.Option("1", "--tp", help="Tensor-parallel size."),
    pp: str = typer.Option("1", "--pp", help="Pipeline-parallel size."),
    block_size: Optional[str] = typer.Option(None, "--block-size", help="Round each layer's tokens up to blocks of this many."),
    engine: Optional[str] = typer.Option(None, "--engine", "-e", help="Count what an engine allocates: vllm, sglang, trtllm, hf, hf4, plain."),
    max_num_batched_tokens: Optional[str] = typer.Option(None, "--max-num-batched-tokens", help="vLLM's in-flight tokens, added to sliding-window reservations (default 8192)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """KV-cache bytes per token, per request and per batch, by layer kind.

    Example: kvcalc size --model llama3.1-70b --seq 32k --batch 8 --kv-dtype fp8 --tp 4
    """
    from kvcalc.engine.layers import Allocation
    from kvcalc.engine.kv import kv_size
    from kvcalc.engine.memory import engine as get_engine

    m, _, echo = opt.model_and_gpu(model, None, need_gpu=False)
    s = opt.tokens(seq, "--seq")
    b = opt.count(batch, "--batch")
    t = opt.count(tp, "--tp")
    p = opt.count(pp, "--pp")
    bs = opt.count(block_size, "--block-size")
    mnbt = opt.count(max_num_batched_tokens, "--max-num-batched-tokens") or 8192
    assumptions = []
    if engine:
        e = get_engine(engine)
        alloc = e.allocation(bs, mnbt)
        assumptions.append(f"{e.label}: {e.note}")
        if e.name in ("hf", "hf4") and any(k.kind == "mla" for k in m.layer_kinds.values()):
            other = "hf4" if e.name == "hf" else "hf"
            assumptions.append(
                "MLA cached as " + ("decompressed per-head K and V (transformers 4.x)" if e.mla_expanded else "the latent (transformers 5.x)")
                + f"; --engine {other} gives the other"
            )
    else:
        alloc = Allocation("logical", block_size=bs)
        assumptions.append("logical bytes: full layers hold every token, sliding layers min(seq, window), chunked layers at most one chunk; --engine E for what an engine allocates")
    r = kv_size(m, s, b, kv_dtype, t, p, alloc)
    from kvcalc.engine.dtypes import kv_dtype as get_dtype

    assumptions.append(f"KV dtype {r.kv_dtype}: {get_dtype(r.kv_dtype).note}")
    if t > 1:
        assumptions.append("tensor parallel: each rank holds max(1, kv_heads // tp) KV heads"
                           + ("; the MLA latent is replicated on every rank" if any(k.kind == "mla" for k in m.layer_kinds.values()) else "")
                           + ("; recurrent state is split across ranks" if any(k.kind == "state" for k in m.layer_kinds.values()) else ""))
    if p > 1:
        assumptions.append("pipeline parallel: layers split as vLLM splits them; per-GPU figures are for the most loaded stage")
    inputs = {**echo, "seq": s, "batch": b, "kv_dtype": r.kv_dtype, "tp": t, "pp": p, "block_size": alloc.block_size,
              "engine": engine and alloc.name}
    if as_json:
        from kvcalc.render import emit_json, to_plain

        doc = to_plain(r)
        per_gpu = {k.removeprefix("per_gpu_"): doc.pop(k) for k in list(doc) if k.startswith("per_gpu_")}
        doc["per_gpu"] = per_gpu
        doc["exceeds_max_context"] = s > m.max_position_embeddings
        emit_json({**doc, "inputs": inputs, "assumptions": assumptions})
        return
    from kvcalc.render import render_size

    render_size(r, m, inputs, assumptions)
