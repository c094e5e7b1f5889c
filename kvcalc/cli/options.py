"""The options commands share, declared once, and the parsing of what they hold.

Options arrive as text and are parsed here, once, into values (token counts, byte sizes, a KV
dtype, an engine); the engine never sees a string it has to interpret again. Every range is
stated in the help.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from kvcalc.errors import KvcalcError
from kvcalc.units import MAX_COUNT, parse_count, parse_float, parse_size, parse_tokens

ModelOpt = Annotated[
    Optional[str],
    typer.Option(
        "--model",
        "-m",
        metavar="<name|file>",
        help="Catalog name or alias, spec YAML, config.json or a folder holding one "
        "(default: $KVCALC_MODEL, kvcalc.toml, llama3.1-8b).",
    ),
]
GPUOpt = Annotated[
    Optional[str],
    typer.Option(
        "--gpu",
        "-g",
        metavar="<name|file>",
        help="Catalog name or alias, or a GPU spec YAML (default: $KVCALC_GPU, kvcalc.toml, h100-sxm).",
    ),
]
Seq = Annotated[
    str, typer.Option("--seq", "-s", metavar="<tokens>", help="Tokens per request: 4096, 4k, 32K, 1M (1 to 16,777,216k).")
]
Batch = Annotated[
    str,
    typer.Option("--batch", "-b", metavar="<n>", help="Requests in the batch: a whole number, 1 to 16,777,216 (1000, not 1k)."),
]
KVDtypeOpt = Annotated[
    str,
    typer.Option(
        "--kv-dtype",
        metavar="<dtype>",
        help="KV cache format: auto (the model's dtype, as vLLM's kv_cache_dtype auto: fp32 or fp16 under that "
        "--weight-dtype, else bf16), bf16, fp16, fp8, int8, int4, fp4, fp32.",
    ),
]
WeightDtypeOpt = Annotated[
    Optional[str],
    typer.Option(
        "--weight-dtype",
        metavar="<dtype>",
        help="Override the spec's weight format: bf16, fp8, int8 (W8A8), int8-w8a16 (8-bit GPTQ), int4, mxfp4, fp4.",
    ),
]
TP = Annotated[str, typer.Option("--tp", metavar="<n>", help="Tensor-parallel size, 1 to 4,096.")]
PP = Annotated[str, typer.Option("--pp", metavar="<n>", help="Pipeline-parallel size, 1 to the layer count.")]
DP = Annotated[
    str,
    typer.Option(
        "--dp",
        metavar="<n>",
        help="Data-parallel attention ranks, each with its own KV pool and requests (GPUs = DP x TP x PP).",
    ),
]
EP = Annotated[
    str,
    typer.Option("--ep", metavar="<n>", help="Expert-parallel size: 1, or DP x TP (every GPU of a stage holds whole experts)."),
]
EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        "-e",
        metavar="<engine>",
        help="Serving engine whose accounting applies: vllm, sglang, trtllm, hf, hf4, plain; a release as vllm@0.11 "
        "(kvcalc engines lists them).",
    ),
]
AttentionBackend = Annotated[
    Optional[str],
    typer.Option(
        "--attention-backend",
        metavar="<backend>",
        help="Decode attention kernel, as the server's --attention-backend chose it: default (the release's own) or "
        "triton (SGLang's Triton backend, 0.4.4.post4 to 0.5.9, on the H100, H200, H20 and B200: its split-KV kernel's "
        "floor priced).",
    ),
]
CudagraphMode = Annotated[
    Optional[str],
    typer.Option(
        "--cudagraph-mode",
        metavar="<mode>",
        help="vLLM's compilation_config cudagraph_mode (0.10 on): default (the release's own), piecewise, "
        "full_and_piecewise or full_decode_only (a step that carries prompt tokens runs without CUDA graphs).",
    ),
]
MoeBackend = Annotated[
    Optional[str],
    typer.Option(
        "--moe-backend",
        metavar="<backend>",
        help="Fused-MoE kernel, where the server was told one: default (the release's own) or trtllm (the "
        "TensorRT-LLM-gen kernel: TensorRT-LLM's moe_config backend TRTLLM, SGLang's and vLLM's flashinfer_trtllm; "
        "priced on the B200 and GB200 for NVFP4 experts, and for fp8 and 16-bit ones without EP).",
    ),
]
AllReduceBackend = Annotated[
    Optional[str],
    typer.Option(
        "--all-reduce-backend",
        metavar="<kind>",
        help="What carries the TP all-reduces: default (as the release's code decides on the GPU: vLLM before 0.8.3 and "
        "SGLang before 0.4.4 run none of their own on AMD GPUs), custom (the engine's custom all-reduce, as AMD's "
        "ROCm/vllm fork builds have) or nccl (NCCL or RCCL for every one, as --disable-custom-all-reduce asks; priced "
        "where the GPU spec measures it).",
    ),
]
BlockSize = Annotated[
    Optional[str],
    typer.Option("--block-size", metavar="<tokens>", help="Tokens per KV block (vLLM 16, TensorRT-LLM 32), 1 to 65,536."),
]
ChunkedPrefill = Annotated[
    Optional[bool],
    typer.Option(
        "--chunked-prefill/--no-chunked-prefill",
        help="vLLM V0's --enable-chunked-prefill as the server sets it (default: the release's rule, kvcalc engines); "
        "off, each prompt runs whole in a step of its own while the decodes wait.",
    ),
]
PrefixCaching = Annotated[
    bool,
    typer.Option(
        "--prefix-caching/--no-prefix-caching",
        help="The server's --enable-prefix-caching (vLLM V1's default: on), or SGLang's radix cache (off: "
        "--disable-radix-cache). Off, a prompt that vLLM V1 preempts mid-prefill computes its chunks again; "
        "--shared-prefix and --prompt-cache-hit need it on.",
    ),
]
MaxBatchedTokens = Annotated[
    Optional[str],
    typer.Option(
        "--max-num-batched-tokens",
        metavar="<tokens>",
        help="Tokens per forward pass (vLLM's default: 16,384 on GPUs of 160 GiB or more, 8,192 on GPUs of 70 GiB or "
        "more that are not A100s, else 2,048).",
    ),
]
MaxModelLen = Annotated[
    Optional[str],
    typer.Option(
        "--max-model-len",
        metavar="<tokens>",
        help="The engine's max_model_len, which its logged tokens and concurrency are for (default: --seq); "
        "auto: the largest that fits, as vLLM 0.14 and later pick it.",
    ),
]
MaxNumSeqs = Annotated[
    Optional[str],
    typer.Option(
        "--max-num-seqs", metavar="<n>", help="Requests per batch (vLLM's default: 1,024 on H100-class GPUs, else 256)."
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
PromptCacheHit = Annotated[
    str,
    typer.Option(
        "--prompt-cache-hit",
        metavar="<share>",
        help="Share of each prompt already in the prefix cache when it arrives (earlier turns, a repeated document, "
        "a benchmark sending its prompts again), 0 to 1: its whole blocks (the paged policy's; 16 tokens in plan) are "
        "not recomputed, never its last token.",
    ),
]
Util = Annotated[
    Optional[str],
    typer.Option(
        "--util",
        metavar="<fraction>",
        help="gpu_memory_utilization (vLLM), mem_fraction_static (SGLang), free_gpu_memory_fraction (TensorRT-LLM), in (0, 1].",
    ),
]
Seed = Annotated[str, typer.Option("--seed", metavar="<n>", help="Random seed, for reproducible samples (0 to 4,294,967,295).")]
PoolEngine = Annotated[
    str, typer.Option("--engine", "-e", metavar="<engine>", help="Engine whose budget gives the KV pool (kvcalc fit).")
]
Pool = Annotated[
    Optional[str], typer.Option("--pool", metavar="<size>", help="The KV pool per GPU, instead of fit's (e.g. 40GiB).")
]
WorkloadName = Annotated[
    Optional[str],
    typer.Option("--workload", "-w", metavar="<name>", help="sharegpt or alpaca: lognormal lengths with the vLLM paper's means."),
]
Prompt = Annotated[
    Optional[str],
    typer.Option(
        "--prompt", metavar="<tokens|dist>", help="Prompt tokens: 1000, 4k, uniform:100..4000, lognormal:median=600,sigma=1.0."
    ),
]
Output = Annotated[
    Optional[str], typer.Option("--output", metavar="<tokens|dist>", help="Output tokens, as --prompt (at least 1).")
]
Efficiency = Annotated[
    Optional[str],
    typer.Option(
        "--efficiency",
        metavar="<fraction>",
        help="One share of peak bandwidth and FLOP/s for every step, in (0, 1], in place of the step model's "
        "(0.80 bandwidth, 0.70 compute; kvcalc calibrate fits yours).",
    ),
]
Calibration = Annotated[
    Optional[str],
    typer.Option(
        "--calibration",
        metavar="<file>",
        help="Step-time constants fitted by kvcalc calibrate (default: calibration in kvcalc.toml, else the cited defaults).",
    ),
]
IgnoreEos = Annotated[
    bool,
    typer.Option(
        "--ignore-eos",
        help="The client's requests ask the server to ignore EOS (vllm bench serve --ignore-eos; SGLang's bench_serving "
        "unless --disable-ignore-eos). SGLang with its radix cache off (--no-prefix-caching) then takes a request in "
        "only where every running request can finish.",
    ),
]
Conservativeness = Annotated[
    str,
    typer.Option(
        "--schedule-conservativeness",
        metavar="<x>",
        help="SGLang's --schedule-conservativeness (0.4.0 on): the reserve it keeps for its running requests' outputs "
        "to come starts at 0.7 x this (at most 1) and falls to a seventh of that; lower takes more requests in, and "
        "retracts more.",
    ),
]


def conservativeness(v: str) -> float:
    return parse_float(v, "--schedule-conservativeness", 0.0, 100.0, "a number from 0 to 100, e.g. 0.3 or 1.3", open_low=False)


RecvInterval = Annotated[
    str,
    typer.Option(
        "--scheduler-recv-interval",
        metavar="<steps>",
        help="SGLang's --scheduler-recv-interval (0.5.2 on, not with --dp): while requests decode, the scheduler "
        "takes in new ones only every this many decode steps (at once after a prompt step, and while idle).",
    ),
]


def recv_interval(v: str) -> int:
    return need_count(v, "--scheduler-recv-interval", maximum=1_000_000, noun="a number of decode steps")


BatchWaitIters = Annotated[
    str,
    typer.Option(
        "--batch-wait-iters",
        metavar="<iterations>",
        help="TensorRT-LLM's batch_wait_timeout_iters (1.1 on, with --batch-wait-ratio): while requests decode, new "
        "prompts wait up to this many iterations to run together.",
    ),
]


def batch_wait_iters(v: str) -> int:
    return need_count(v, "--batch-wait-iters", minimum=0, maximum=1_000_000, noun="a number of iterations")


BatchWaitRatio = Annotated[
    str,
    typer.Option(
        "--batch-wait-ratio",
        metavar="<share>",
        help="TensorRT-LLM's batch_wait_max_tokens_ratio: the waiting prompts run at once when their tokens, and one a "
        "decoding request, reach this share of --max-num-batched-tokens (e.g. 0.9).",
    ),
]


def batch_wait_ratio(v: str) -> float:
    return parse_float(v, "--batch-wait-ratio", 0.0, 1.0, "a share from 0 to 1, e.g. 0.9", open_low=False)


RequestOverhead = Annotated[
    Optional[str],
    typer.Option(
        "--request-overhead",
        metavar="<time>",
        help="Time a request spends before the engine sees it (HTTP, API server, tokenisation), added to TTFT: 25ms.",
    ),
]


def efficiency(v: str) -> float:
    # Under 1% of a GPU's peak is no deployment: a step would take hours.
    return parse_float(v, "--efficiency", 0.01, 1.0, "a fraction from 0.01 to 1, e.g. 0.7", open_low=False)


def step_constants(
    eff: str | None,
    calibration: str | None,
    overhead: str | None = None,
    model: Any = None,
    gpus: Any = None,
    engine: Any = None,
) -> Any:
    """The step-time model's constants: a calibration file (the option, else kvcalc.toml's), then
    --efficiency and --request-overhead over them, else the cited defaults (the ``engine``
    release's host costs where they were measured apart). A calibration fitted on another model or
    GPU than ``model`` and ``gpus`` (specs) is refused."""
    import dataclasses

    from kvcalc.cli.defaults import default_path
    from kvcalc.engine.steptime import StepConstants, defaults_for
    from kvcalc.inputs.calibration import read_calibration
    from kvcalc.units import parse_seconds

    base: StepConstants = defaults_for(engine)
    c = base
    path = calibration or default_path("calibration")
    if path:
        cal = read_calibration(path)
        names = [g.name for g in (gpus or [])]
        if cal.gpu and names and any(n != cal.gpu for n in names):
            other = next(n for n in names if n != cal.gpu)
            raise KvcalcError(
                f"this calibration was fitted on {cal.gpu}, not {other}", path, f"--gpu {cal.gpu}, or a calibration of {other}"
            )
        if cal.model and model is not None and cal.model != model.name:
            raise KvcalcError(
                f"this calibration was fitted on {cal.model}, not {model.name}",
                path,
                f"--model {cal.model}, or a calibration of {model.name}",
            )
        c = dataclasses.replace(base, origin=f"calibration {path}", **cal.constants)  # type: ignore[arg-type]
    if eff is not None:
        c = c.with_efficiency(efficiency(eff))
    if overhead is not None:
        c = dataclasses.replace(c, request_overhead_s=parse_seconds(overhead, "--request-overhead", allow_zero=True))
    return c.check()


def prompt_cache_hit(v: str) -> float:
    return parse_float(v, "--prompt-cache-hit", 0.0, 1.0, "a share from 0 to 1, e.g. 0.5", open_low=False)


def seed(v: str) -> int:
    return parse_count(v, "--seed", 0, 2**32 - 1, "a seed")


def workload_preset(name: str | None) -> tuple[str, str, str] | None:
    """(prompt dist, output dist, description) of a named length mix, or None."""
    if name is None:
        return None
    from kvcalc.errors import unknown_name
    from kvcalc.inputs.workload import PRESETS

    key = name.strip().lower()
    if key not in PRESETS:
        raise unknown_name("workload", name[:40], PRESETS, "--workload")
    return PRESETS[key]


def tokens(v: str, where: str) -> int:
    return parse_tokens(v, where)


def is_auto_len(v: str | None) -> bool:
    """vLLM's --max-model-len auto (or -1)."""
    return v is not None and v.strip().lower() in ("auto", "-1")


def max_model_len(v: str | None) -> int | None:
    """--max-model-len: a number of tokens, or None (absent, or auto: is_auto_len)."""
    if v is None or is_auto_len(v):
        return None
    try:
        return parse_tokens(v, "--max-model-len")
    except KvcalcError as e:
        raise KvcalcError(e.what, e.where, f"{e.accepted}; or auto (vLLM 0.14 and later)") from None


def count(
    v: str | int | None, where: str, minimum: int = 1, maximum: int = MAX_COUNT, noun: str = "a whole number"
) -> int | None:
    return None if v is None else parse_count(v, where, minimum, maximum, noun)


def need_count(v: str | int, where: str, minimum: int = 1, maximum: int = MAX_COUNT, noun: str = "a whole number") -> int:
    return parse_count(v, where, minimum, maximum, noun)


def batch(v: str, where: str = "--batch") -> int:
    return parse_count(v, where, 1, MAX_COUNT, "a number of requests")


def parallel(v: str, where: str) -> int:
    return parse_count(v, where, 1, 4096, "a number of GPUs")


def block(v: str | None) -> int | None:
    return None if v is None else parse_count(v, "--block-size", 1, 65536, "a number of tokens per block")


def batched_tokens(v: str | None) -> int | None:
    return None if v is None else parse_tokens(v, "--max-num-batched-tokens", maximum=MAX_COUNT)


def size(v: str | None, where: str, positive: bool = False) -> int | None:
    if v is None:
        return None
    n = parse_size(v, where)
    if positive and n == 0:
        raise KvcalcError(f"{where} must be positive", where, "a size such as 79.19GiB")
    return n


def fraction(v: str | None, where: str) -> float | None:
    if v is None:
        return None
    return parse_float(v, where, 0.0, 1.0, "a number in (0, 1], e.g. 0.9")


def kv(v: str, weight: str | None = None) -> Any:
    """--kv-dtype, with auto taken as vLLM takes kv_cache_dtype auto: the model's dtype, which a 16- or
    32-bit --weight-dtype sets (utils/torch_utils.py kv_cache_dtype_str_to_dtype, 0.19.0)."""
    from kvcalc.specs.dtypes import kv_dtype, normalize_weight_dtype

    if str(v).strip().lower() == "auto":
        import dataclasses

        w = normalize_weight_dtype(weight, "--weight-dtype") if weight else None
        return dataclasses.replace(kv_dtype(w if w in ("fp32", "fp16") else "bf16"), auto=True)
    try:
        return kv_dtype(v, "--kv-dtype")
    except KvcalcError as e:
        raise KvcalcError(e.what, e.where, "auto or " + (e.accepted or "")) from None


def weight_dtype(v: str | None) -> str | None:
    if not v:
        return None
    from kvcalc.specs.dtypes import normalize_weight_dtype

    return normalize_weight_dtype(v, "--weight-dtype")


def engine(
    v: str,
    attention_backend: str | None = None,
    moe_backend: str | None = None,
    all_reduce_backend: str | None = None,
    cudagraph_mode: str | None = None,
) -> Any:
    from kvcalc.engine.engines import (
        engine as parse_engine,
        with_all_reduce_backend,
        with_attention_backend,
        with_cudagraph_mode,
        with_moe_backend,
    )

    e = with_attention_backend(parse_engine(v, "--engine"), attention_backend, "--attention-backend")
    e = with_all_reduce_backend(with_moe_backend(e, moe_backend, "--moe-backend"), all_reduce_backend, "--all-reduce-backend")
    return with_cudagraph_mode(e, cudagraph_mode, "--cudagraph-mode")


def check_backend(model: Any, gpus: list[Any], eng: Any) -> None:
    """Refuse, before any work, an --attention-backend the step model does not price for the model on a GPU, and an
    --all-reduce-backend nccl on a GPU whose spec measures no NCCL all-reduce."""
    from kvcalc.engine.steptime import check_triton
    from kvcalc.errors import KvcalcError

    for g in gpus:
        if eng.custom_allreduce is False and g.nccl_allreduce is None:
            have = ", ".join(s.name for s in _nccl_measured())
            raise KvcalcError(
                f"all-reduce backend nccl on {g.name}: its GPU spec measures no NCCL all-reduce (nccl_allreduce)",
                "--all-reduce-backend",
                f"default or custom, or nccl on a GPU whose spec measures it ({have})",
            )
        try:
            check_triton(model, g, eng)
        except KvcalcError as e:
            raise KvcalcError(e.what, "--attention-backend", e.accepted) from None


def _nccl_measured() -> list[Any]:
    from kvcalc.specs.catalog import all_specs

    return [g for g in all_specs("gpu") if g.nccl_allreduce is not None]


def model_and_gpu(model: str | None, gpu: str | None, need_gpu: bool = True) -> tuple[Any, Any, dict[str, str]]:
    """Resolve --model and --gpu, falling back to the defaults; returns (model, gpu, origin), where
    origin names what was taken by default and from where."""
    from kvcalc.cli.defaults import default
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    origin: dict[str, str] = {}
    if model is None:
        model, src = default("model")
        origin["model_from"] = src
    m = resolve_model(model, origin.get("model_from", "--model"))
    if "model_from" in origin:
        origin["model"] = m.name
    if m.import_warnings:
        origin["model_warnings"] = "\n".join(m.import_warnings)
    g = None
    if need_gpu:
        if gpu is None:
            gpu, src = default("gpu")
            origin["gpu_from"] = src
        g = resolve_gpu(gpu, origin.get("gpu_from", "--gpu"))
        if "gpu_from" in origin:
            origin["gpu"] = g.name
    return m, g, origin
