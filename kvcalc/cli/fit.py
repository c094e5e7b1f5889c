"""kvcalc fit: how many requests fit on a GPU after weights and the engine's reserve."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit


def fit(
    seq: opt.Seq,
    model: opt.ModelOpt = None,
    gpu: opt.GPUOpt = None,
    tp: opt.TP = "1",
    pp: opt.PP = "1",
    dp: opt.DP = "1",
    ep: opt.EP = "1",
    engine: opt.EngineOpt = "vllm",
    kv_dtype: opt.KVDtypeOpt = "auto",
    weight_dtype: opt.WeightDtypeOpt = None,
    gpu_memory: Annotated[
        Optional[str],
        typer.Option("--gpu-memory", metavar="<size>", help="The runtime's total device memory, e.g. 79.19GiB or 85031714816."),
    ] = None,
    gpu_free: Annotated[
        Optional[str],
        typer.Option(
            "--gpu-free",
            metavar="<size>",
            help="SGLang: memory free at start-up, before the weights ('Load weight begin. avail mem'), e.g. 78.1GiB.",
        ),
    ] = None,
    weights: Annotated[
        Optional[str],
        typer.Option("--weights", metavar="<size>", help="Measured weight memory per GPU (vLLM: 'Model loading took X GiB')."),
    ] = None,
    activation: Annotated[
        Optional[str], typer.Option("--activation", metavar="<size>", help="Measured activation peak per GPU.")
    ] = None,
    non_torch: Annotated[
        Optional[str], typer.Option("--non-torch", metavar="<size>", help="Measured non-torch memory per GPU.")
    ] = None,
    cudagraph: Annotated[
        Optional[str], typer.Option("--cudagraph", metavar="<size>", help="CUDA-graph memory to subtract per GPU.")
    ] = None,
    sampler: Annotated[
        Optional[str],
        typer.Option(
            "--sampler",
            metavar="flashinfer|pytorch",
            help="vLLM V1's top-k/top-p sampler, where known (its start-up line: 'Using FlashInfer for top-p & top-k "
            "sampling' or 'Falling back to the PyTorch-native implementation'): narrows the sampler's warm-up.",
        ),
    ] = None,
    enforce_eager: Annotated[
        bool,
        typer.Option(
            "--enforce-eager",
            help="vLLM's flag of that name: no CUDA graphs, so releases that subtract a CUDA-graph estimate "
            "before sizing the pool (0.21 and later) subtract none.",
        ),
    ] = False,
    prefix_caching: Annotated[
        bool,
        typer.Option(
            "--prefix-caching/--no-prefix-caching",
            help="The server's --enable-prefix-caching (vLLM V1's default: on), or SGLang's radix cache (off: "
            "--disable-radix-cache). Off, vLLM 0.15 and later hold one recurrent-state page a request for hybrid "
            "models, not two: more requests at once; SGLang sizes a Gated DeltaNet model's state slots by its "
            "release (docs/engines.md).",
        ),
    ] = True,
    skip_mm_profiling: Annotated[
        bool,
        typer.Option(
            "--skip-mm-profiling",
            help="vLLM V1's flag of that name (0.10.1 and later): the start-up profile runs no vision encoder.",
        ),
    ] = False,
    util: opt.Util = None,
    block_size: opt.BlockSize = None,
    max_num_batched_tokens: opt.MaxBatchedTokens = None,
    max_model_len: opt.MaxModelLen = None,
    max_num_seqs: opt.MaxNumSeqs = None,
    kv_cache_memory: Annotated[
        Optional[str],
        typer.Option(
            "--kv-cache-memory",
            "--kv-cache-memory-bytes",
            metavar="<size>",
            help="vLLM's --kv-cache-memory-bytes (0.10.2 and later): each GPU's KV pool as given, "
            "utilization not applied (80GiB, 85e9).",
        ),
    ] = None,
    concurrency: Annotated[
        Optional[str],
        typer.Option(
            "--concurrency",
            "-n",
            metavar="<n>",
            help="The reverse question: what do N requests of --seq tokens need? (1 to 16,777,216)",
        ),
    ] = None,
    as_json: opt.Json = False,
) -> Any:
    """The memory budget line by line, the KV pool, max concurrency and the longest request.

    Example: kvcalc fit --model llama3.1-70b --gpu h100 --tp 4 --seq 8k --concurrency 64

    Data-parallel attention and expert parallelism: kvcalc fit --model deepseek-v3 --gpu h100 --dp 16 --ep 16
    --kv-dtype fp8 --seq 8k (the pool and concurrency are each DP rank's, with the total over the ranks).
    """
    import dataclasses

    from kvcalc.engine.memory import FitInputs, fit as run_fit
    from kvcalc.engine.plan import reverse, util_to_hold

    m, g, origin = opt.model_and_gpu(model, gpu)
    inp = FitInputs(
        seq=opt.tokens(seq, "--seq"),
        engine=opt.engine(engine),
        tp=opt.parallel(tp, "--tp"),
        pp=opt.parallel(pp, "--pp"),
        dp=opt.parallel(dp, "--dp"),
        ep=opt.parallel(ep, "--ep"),
        kv_dtype=opt.kv(kv_dtype, weight_dtype),
        weight_dtype=opt.weight_dtype(weight_dtype),
        gpu_memory=opt.size(gpu_memory, "--gpu-memory", positive=True),
        gpu_free=opt.size(gpu_free, "--gpu-free", positive=True),
        weights=opt.size(weights, "--weights"),
        activation=opt.size(activation, "--activation"),
        non_torch=opt.size(non_torch, "--non-torch"),
        cudagraph=opt.size(cudagraph, "--cudagraph"),
        util=opt.fraction(util, "--util"),
        block_size=opt.block(block_size),
        max_num_batched_tokens=opt.batched_tokens(max_num_batched_tokens),
        max_model_len=opt.max_model_len(max_model_len),
        kv_cache_memory=opt.size(kv_cache_memory, "--kv-cache-memory", positive=True),
        max_model_len_auto=opt.is_auto_len(max_model_len),
        max_num_seqs=opt.count(max_num_seqs, "--max-num-seqs", noun="a number of requests"),
        sampler=sampler,
        enforce_eager=enforce_eager,
        prefix_caching=prefix_caching,
        skip_mm_profiling=skip_mm_profiling,
    )
    n = opt.count(concurrency, "--concurrency", noun="a number of requests")
    r = run_fit(m, g, inp)
    if n is not None:
        r = dataclasses.replace(r, reverse=reverse(m, g, inp, n))
    if not r.fits and r.starts:
        # Say at once what would hold one request: the fewest GPUs of this type.
        one = reverse(m, g, inp, 1, max_gpus=512)
        verdict = r.verdict
        if one.gpus_needed:
            verdict += f"; the fewest {g.name} GPUs that hold one: {one.gpus_needed} ({one.shape_needed})"
        else:
            verdict += f"; no deployment of up to 512 {g.name} GPUs holds one"
        u = util_to_hold(m, g, inp)
        if u is not None and u < 1:
            # The memory fraction at this shape that would hold one (what the engine keeps back for activations
            # and graphs at its own fraction shrinks by as much).
            verdict += f"; at this shape one fits from {r.util_flag} {u:.3f} (here {r.util:g})"
        r = dataclasses.replace(r, fewest=one, verdict=verdict, util_to_hold=u)
    return emit(r, origin, as_json)
