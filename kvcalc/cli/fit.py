"""kvcalc fit: how many requests fit on a GPU after weights and the engine's reserve."""

from __future__ import annotations

from typing import Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import app


@app.command()
def fit(
    model: Optional[str] = typer.Option(None, "--model", "-m", help="Catalog name, alias, spec YAML or config.json."),
    gpu: Optional[str] = typer.Option(None, "--gpu", "-g", help="Catalog name, alias or spec YAML."),
    seq: str = typer.Option(..., "--seq", "-s", help="Tokens per request: 4096, 4k, 32K, 1M."),
    tp: str = typer.Option("1", "--tp", help="Tensor-parallel size (GPUs per replica, with --pp)."),
    pp: str = typer.Option("1", "--pp", help="Pipeline-parallel size."),
    engine: str = typer.Option("vllm", "--engine", "-e", help="vllm, sglang, trtllm, hf, hf4 or plain."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="bf16, fp16, fp8, int8, int4, fp4, fp32."),
    weight_dtype: Optional[str] = typer.Option(None, "--weight-dtype", help="Override the spec's weight format: bf16, fp8, int8, int4, mxfp4, fp4."),
    gpu_memory: Optional[str] = typer.Option(None, "--gpu-memory", help="The runtime's total device memory, e.g. 79.19GiB or 85031714816."),
    weights: Optional[str] = typer.Option(None, "--weights", help="Measured weight memory per GPU (vLLM: 'Model loading took X GiB')."),
    activation: Optional[str] = typer.Option(None, "--activation", help="Measured activation peak per GPU."),
    non_torch: Optional[str] = typer.Option(None, "--non-torch", help="Measured non-torch memory per GPU."),
    cudagraph: Optional[str] = typer.Option(None, "--cudagraph", help="CUDA-graph memory to subtract per GPU."),
    util: Optional[str] = typer.Option(None, "--util", help="gpu_memory_utilization (vLLM), mem_fraction_static (SGLang), free_gpu_memory_fraction (TensorRT-LLM)."),
    block_size: Optional[str] = typer.Option(None, "--block-size", help="Tokens per KV block (vLLM 16, TensorRT-LLM 32)."),
    max_num_batched_tokens: Optional[str] = typer.Option(None, "--max-num-batched-tokens", help="Tokens per forward pass (vLLM default: 8192 on >= 70 GiB GPUs, else 2048)."),
    concurrency: Optional[str] = typer.Option(None, "--concurrency", "-n", help="The reverse question: what do N requests of --seq tokens need?"),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """The memory budget line by line, the KV pool, max concurrency and the longest request.

    Example: kvcalc fit --model llama3.1-70b --gpu h100 --tp 4 --seq 8k --concurrency 64
    """
    from kvcalc.engine.memory import FitInputs, fit as run_fit, plan

    m, g, echo = opt.model_and_gpu(model, gpu)
    inp = FitInputs(
        seq=opt.tokens(seq, "--seq"),
        engine=engine,
        tp=opt.count(tp, "--tp"),
        pp=opt.count(pp, "--pp"),
        kv_dtype=kv_dtype,
        weight_dtype=weight_dtype,
        gpu_memory=opt.size(gpu_memory, "--gpu-memory"),
        weights=opt.size(weights, "--weights"),
        activation=opt.size(activation, "--activation"),
        non_torch=opt.size(non_torch, "--non-torch"),
        cudagraph=opt.size(cudagraph, "--cudagraph"),
        util=opt.fraction(util, "--util"),
        block_size=opt.count(block_size, "--block-size"),
        max_num_batched_tokens=opt.count(max_num_batched_tokens, "--max-num-batched-tokens"),
    )
    if inp.weight_dtype:
        from kvcalc.engine.dtypes import normalize_weight_dtype

        inp.weight_dtype = normalize_weight_dtype(inp.weight_dtype, "--weight-dtype")
    if inp.gpu_memory == 0:
        from kvcalc.errors import KvcalcError

        raise KvcalcError("--gpu-memory must be positive", "--gpu-memory", "a size such as 79.19GiB")
    r = run_fit(m, g, inp)
    rev = plan(m, g, inp, opt.count(concurrency, "--concurrency")) if concurrency is not None else None
    if as_json:
        from kvcalc.render import emit_json, to_plain

        doc = to_plain(r)
        doc.pop("reverse", None)
        assumptions = doc.pop("assumptions")
        if rev is not None:
            doc["reverse"] = rev
        inputs = {**echo, **{k: v for k, v in inp.__dict__.items()}}
        emit_json({**doc, "inputs": inputs, "assumptions": assumptions})
        return
    from kvcalc.render import render_fit

    render_fit(r, m, g, rev)
