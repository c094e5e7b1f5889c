"""Reading serving-engine start-up logs (vLLM 0.2 to current, SGLang, TensorRT-LLM): text in, facts
out, one set of facts per start-up in the file. The recomputation is kvcalc.engine.explain's.

Units, as the engines print them: vLLM's "GiB" is 2^30 B; vLLM 0.2 to 0.7 printed "Loading model
weights took X GB" but computed X in GiB; SGLang prints "GB" for values it divides by 2^30.
kvcalc reads all of them as GiB and says so.

A file may hold several start-ups (logs appended run after run, or an issue quoting a few): a
start-up marker ("vLLM API server version", "Initializing ... LLM engine", SGLang's server_args,
a quoted ``vllm serve`` command) after a start-up's results opens the next one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import field
from typing import BinaryIO

from kvcalc._record import record
from kvcalc.errors import KvcalcError
from kvcalc.files import UTF16_BOMS

GiB = 2**30
NUM = r"(-?[0-9][0-9,]{0,30}(?:\.[0-9]{1,20})?)"
_GIVEN_POOL = re.compile(r"reserved " + NUM + r"\s*GiB memory for KV Cache as specified by kv_cache_memory_bytes")


def _human_int(s: str) -> int:
    """A length as vLLM's human_readable_int reads it (engine/arg_utils.py, 0.8.5): k, m, g multiply by powers of
    1,000 and take decimals ('25.6k' is 25,600); K, M, G by powers of 1,024 and take whole numbers only ('32K' is
    32,768); a bare number is itself. ValueError for what vLLM refuses."""
    mult = {"k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}.get(s[-1:])
    if mult is None:
        return int(s)
    if s[-1].isupper():
        return int(s[:-1]) * mult
    return int(float(s[:-1]) * mult)


def _num(s: str) -> float:
    """A figure from a log line: finite, and of a size a log prints (no 400-digit numbers)."""
    if len(s) > 24:
        raise ValueError(f"figure too long: {s[:30]}")
    v = float(s.replace(",", ""))
    if not math.isfinite(v):
        raise ValueError(f"not a finite figure: {s}")
    return v


@record
class LogFacts:
    engine: str | None = None
    version: str | None = None
    """The release the log names (a version line)."""
    formats: list[str] = field(default_factory=list)
    """What the line formats say about the release, in words ('V0 (0.2 to 0.7)', '0.21 or later', ...)."""
    model: str | None = None
    max_model_len: int | None = None
    tp: int | None = None
    pp: int | None = None
    dtype: str | None = None
    quantization: str | None = None
    """The checkpoint's quantization method as the engine's config names it (vLLM's quantization=, SGLang's
    server args); 'None' where the config line says none."""
    device_name: str | None = None
    """The GPU as the engine names its tuned-kernel config files ("device_name=NVIDIA_H100_80GB_HBM3" in vLLM's and
    SGLang's fused-MoE config lines: torch's device name, spaces as underscores)."""
    quant_scheme: str | None = None
    """compressed-tensors' scheme, as its layers log it ("Using scheme: CompressedTensorsW8A8Int8 for ...")."""
    kv_cache_dtype: str | None = None
    block_size: int | None = None
    util: float | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    total_gib: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    activation_gib: float | None = None
    consumed_gib: float | None = None
    """vLLM V1 after 0.10.2: weights and non-torch memory together ("X GiB for consumed memory (weights +
    non-torch)"); with the weights line it gives the non-torch figure."""
    peak_torch_gib: float | None = None
    """vLLM 0.6.4: weights and activation peak together (peak_torch_memory)."""
    available_kv_gib: float | None = None
    kv_tokens: int | None = None
    gpu_blocks: int | None = None
    concurrency: float | None = None
    concurrency_len: int | None = None
    cudagraph_gib: float | None = None
    """CUDA graphs captured after the KV cache was sized ("Graph capturing finished ... took X GiB")."""
    cudagraph_estimate_gib: float | None = None
    """vLLM >= 0.18: its estimate of the CUDA graphs ("Estimated CUDA graph memory"), subtracted before
    sizing where cudagraph_estimate_applied (0.20 and later by default)."""
    cudagraph_estimate_applied: bool | None = None
    """Whether the log says the estimate was subtracted: True for "CUDA graph memory profiling is
    enabled", False for 0.18-0.19's "In v0.19, CUDA graph memory profiling will be enabled by default
    ... To try it now" and 0.20's "is disabled"; None where it says neither (the release's rule)."""
    dp_size: int | None = None
    """SGLang's dp_size (its server_args), read with dp_attention."""
    dp_attention: bool | None = None
    """SGLang's enable_dp_attention (its server_args): with it the tp_size GPUs run dp_size attention ranks of
    tp_size / dp_size GPUs each (kvcalc's --tp and --dp)."""
    enforce_eager: bool | None = None
    """vLLM's enforce_eager, where the log gives it (the V1 engine's config line, the non-default args or
    the command): True runs no CUDA graphs."""
    prefix_caching: bool | None = None
    """vLLM V1's enable_prefix_caching, where the log gives it (the V1 engine's config line or the non-default
    args): False holds one recurrent-state page a request where True holds two (FitInputs.prefix_caching)."""
    util_without_cudagraph: float | None = None
    error_kv_tokens: int | None = None
    """V0's error: the maximum number of tokens the KV cache can store."""
    needed_kv_gib: float | None = None
    estimated_max_len: int | None = None
    sampler: str | None = None
    """vLLM V1's top-k/top-p sampler as the log names it: 'flashinfer' or 'pytorch'
    (v1/sample/ops/topk_topp_sampler.py's start-up line)."""
    breakdown_weights_gib: float | None = None
    """The weights on the budget line whose available KV memory is kept (a pipeline stage's own:
    "Model loading took", first wins, may be another stage's)."""
    ray_deduplicated: bool = False
    """Ray merged lines of other processes into '[repeated Nx across cluster]' (its log
    deduplication ignores numbers, so ranks with other figures may be hidden)."""
    v0_engine: bool = False
    """vLLM 0.8 to 0.10 ran its V0 engine: "Initializing a V0 LLM engine", or V1's "Falling back to V0"
    (pipeline parallelism without Ray in 0.8, engine/arg_utils.py _is_v1_supported_oracle), or lines from
    V0's own modules (v0_modules) with none from V1's."""
    v0_modules: bool = False
    """Lines from V0's own modules in 0.8's bracketed format ([model_runner.py:, [worker.py:, V0's start check
    raise_if_cache_size_invalid), where V1 prints gpu_model_runner.py and gpu_worker.py."""
    v1_engine: bool = False
    """vLLM's V1 engine, as its own lines say: VLLM_USE_V1=1 on the launch line, "Initializing a V1 LLM
    engine", or a line from a V1-only source file (v1/worker/gpu_model_runner.py, v1/core/kv_cache_utils.py;
    V0 logs from worker/model_runner.py and its executors). Read where the release number alone would give
    V0's rules: V1 ran behind VLLM_USE_V1=1 from 0.7.0, before it became the default in 0.8."""
    auto_max_len: int | None = None
    """vLLM 0.14 and later under --max-model-len auto: "Auto-fit max_model_len: reduced from A to B"
    (B, which max_model_len becomes) or "full model context length A fits" (A)
    (v1/core/kv_cache_utils.py _auto_fit_max_model_len; kv_cache_planning.py from 0.33)."""
    kv_cache_memory_gib: float | None = None
    """vLLM V1 was given kv_cache_memory_bytes: "reserved N GiB memory for KV Cache as specified by
    kv_cache_memory_bytes config and skipped memory profiling" (v1/worker/gpu_worker.py, 0.10.2 and later)."""
    skip_mm_profiling: bool = False
    """vLLM V1 said "Skipping memory profiling for multimodal encoder and encoder cache"
    (--skip-mm-profiling, v1/worker/gpu_model_runner.py profile_run, 0.10.1 and later)."""
    encoder_budget: int | None = None
    """vLLM V1's encoder profile: "Encoder cache will be initialized with a budget of N tokens, and
    profiled with M <modality> items of the maximum feature size" (gpu_model_runner.py profile_run)."""
    encoder_items: int | None = None
    encoder_modality: str | None = None
    # SGLang
    max_total_num_tokens: int | None = None
    avail_before_load_gib: float | None = None
    """SGLang: memory free before loading ("Load weight begin. avail mem=X GB")."""
    avail_after_load_gib: float | None = None
    k_size_gib: float | None = None
    v_size_gib: float | None = None
    kv_size_gib: float | None = None
    """SGLang's MLA line: one KV size for the latent."""
    # TensorRT-LLM
    trt_tokens: int | None = None
    trt_kv_bytes: int | None = None
    trt_engine_mib: float | None = None
    trt_kv_gib: float | None = None
    """The GiB on TensorRT-LLM's last '[MemUsageChange] Allocated X GiB for max tokens' line (the pool)."""
    trt_allocations: list[tuple[float, int]] = field(default_factory=list)
    """Every such line, (GiB, tokens), in order: the first of two is the estimation's dry run."""
    trt_peak_gib: float | None = None
    """'Peak memory during memory usage profiling (torch + non-torch)'."""
    trt_available_kv_gib: float | None = None
    trt_fraction: float | None = None
    trt_kv_per_token: int | None = None
    trt_total_gib: float | None = None
    """'device total memory' on the peak line (TensorRT-LLM's free/total reading)."""
    trt_tmp_kv_gib: float | None = None
    """The dry run's KV memory, which the real pool's budget adds back."""
    trt_free_gib: float | None = None
    """'available' on the C++ KV cache manager's 'Memory usage when calculating max tokens in paged kv cache'
    line: the device's free memory plus the runtime's memory pool's, which it takes the fraction of."""
    trt_free_total_gib: float | None = None
    """'total' on that line: the device's memory."""
    lines: dict[str, str] = field(default_factory=dict)
    """The line each fact was read from (fact name -> line)."""
    rank_of: dict[str, int] = field(default_factory=dict)
    """The worker rank a per-rank fact was kept from (its line's 'rank=N'; 0 when unnamed)."""
    rank_values: dict[str, list[float]] = field(default_factory=dict)
    """Facts that several ranks printed differently within one start-up, each value as printed
    (the fact itself keeps the minimum, as the engine sizes every rank to the smallest)."""

    @property
    def has_result(self) -> bool:
        return any(
            getattr(self, k) is not None
            for k in (
                "kv_tokens",
                "gpu_blocks",
                "available_kv_gib",
                "error_kv_tokens",
                "max_total_num_tokens",
                "k_size_gib",
                "kv_size_gib",
                "trt_tokens",
                "needed_kv_gib",
            )
        )


# SGLang 0.4: "KV Cache is allocated. #tokens: N, K size: ..."; 0.5: "... allocated. dtype: torch.bfloat16, #tokens: ...".
_SGL_KV = r"KV Cache (?:is allocated|VA upper bound)\.(?: dtype: (?:torch\.)?([a-z0-9_]{1,30}),)? #tokens: " + NUM
_V = r"v?([0-9]+\.[0-9]+(?:\.[0-9]+)?[^\s),'\x1b]*)"
_INT = r"([0-9]{1,20})"
_HUMAN_INT = r"([0-9]{1,20}(?:\.[0-9]{1,6})?[kKmMgG]?)(?![\w.])"
"""A length as vLLM's --max-model-len takes it (human_readable_int, engine/arg_utils.py from 0.8.5): "32k" is 32,000,
"32K" 32,768, decimals only with the lowercase (decimal) suffixes; read by _human_int."""

# (fact, a literal the line must hold, pattern, how to read the groups, what the format says about
# the release). The literal is the cheap filter: a line holding none of them (almost every line of
# a long log) costs one regex search.
_PATTERNS: list[tuple[str, str, re.Pattern[str], str, str]] = [
    ("sampler", "for top-p & top-k sampling", re.compile(r"Using (FlashInfer) for top-p & top-k sampling"), "sampler", ""),
    (
        "sampler",
        "implementation of top-p & top-k sampling",
        re.compile(r"Falling back to the (PyTorch)-native implementation of top-p & top-k sampling"),
        "sampler",
        "",
    ),
    ("v0_engine", "Initializing a V0 LLM engine", re.compile(r"Initializing a V0 LLM engine"), "v0", ""),
    ("v0_engine", "Falling back to V0", re.compile(r"Falling back to V0"), "v0", ""),
    # V0's own modules, by the bracketed file names 0.8's format prints (V1's are gpu_model_runner.py and
    # gpu_worker.py): "[model_runner.py:1110] Starting to load model", "[worker.py:267] Memory profiling
    # takes", and V0's start check, worker.py raise_if_cache_size_invalid (0.8.4): "the maximum number of
    # tokens that can be stored in KV cache" (V1's says "KV cache is needed").
    ("v0_modules", "[model_runner.py:", re.compile(r"\[model_runner\.py:\d"), "v0mod", ""),
    ("v0_modules", "[worker.py:", re.compile(r"\[worker\.py:\d"), "v0mod", ""),
    ("v0_modules", "raise_if_cache_size_invalid", re.compile(r"\braise_if_cache_size_invalid\b"), "v0mod", ""),
    ("v1_engine", "VLLM_USE_V1=1", re.compile(r"\bVLLM_USE_V1=1\b"), "v1", ""),
    ("v1_engine", "Initializing a V1 LLM engine", re.compile(r"Initializing a V1 LLM engine"), "v1", ""),
    ("v1_engine", "gpu_model_runner.py", re.compile(r"\bgpu_model_runner\.py:\d"), "v1", ""),
    ("v1_engine", "kv_cache_utils.py", re.compile(r"\bkv_cache_utils\.py:\d"), "v1", ""),
    (
        "skip_mm_profiling",
        "Skipping memory profiling for multimodal encoder",
        re.compile(r"Skipping memory profiling for multimodal encoder"),
        "skip_mm",
        "",
    ),
    (
        "encoder_budget",
        "Encoder cache will be initialized with a budget of",
        re.compile(r"Encoder cache will be initialized with a budget of (\d+) tokens, and profiled with (\d+) (\w+) items"),
        "encoder",
        "",
    ),
    ("version", "LLM engine", re.compile(r"LLM engine\s*\(" + _V, re.I), "str", ""),
    ("version", "vLLM API server version", re.compile(r"vLLM API server version\s*" + _V), "str", ""),
    ("version", "vllm version", re.compile(r"vllm version\s*[=:]?\s*" + _V, re.I), "str", ""),
    ("version", "vLLM Version", re.compile(r"vLLM Version\s*:\s*" + _V), "str", ""),
    # vLLM's start-up banner (vllm/entrypoints/common/startup.py log_version_and_model, 0.33.0;
    # entrypoints/utils.py in 0.20; 0.13 printed "vLLM API server version"): a logo whose lines end
    # "version X" and "model   NAME", coloured with ANSI codes where the log is, one space apart
    # where a web page pasted it; or, with the logo off, "vLLM server version X, serving model NAME".
    ("version", "█", re.compile(r"█(?:\x1b\[[0-9;]*m)*\s+version\s+(?:\x1b\[[0-9;]*m)*" + _V), "str", ""),
    ("model", "█", re.compile(r"█(?:\x1b\[[0-9;]*m)*\s+model\s+(?:\x1b\[[0-9;]*m)*([^\s\x1b]{1,500})"), "str", ""),
    ("version", "vLLM server version", re.compile(r"vLLM server version\s*" + _V + ","), "str", ""),
    ("model", "serving model", re.compile(r"vLLM server version .{1,60}, serving model\s+([^\s]{1,500})"), "str", ""),
    ("model", "model='", re.compile(r"\bmodel='([^']{1,500})'"), "str", ""),
    ("model", "'model':", re.compile(r"'model':\s*'([^']{1,500})'"), "str", ""),
    ("model", "model_path=", re.compile(r"\bmodel_path='?([^',\s)]{1,500})"), "str", ""),
    ("model", "vllm serve ", re.compile(r"vllm serve\s+(?!-)([^\s\\]{1,500})"), "str", ""),
    ("model", "--model", re.compile(r"--model[= ]\s*[\"']?([^\s\"'\\]{1,500})"), "str", ""),
    ("max_model_len", "max_seq_len=", re.compile(r"\bmax_seq_len=" + _INT), "int", ""),
    ("max_model_len", "max_model_len", re.compile(r"\bmax_model_len['\"]?[=:]\s*" + _INT), "int", ""),
    ("max_model_len", "max-model-len", re.compile(r"--max[-_]model[-_]len[= ]\s*" + _HUMAN_INT), "human_int", ""),
    ("max_model_len", "context_len=", re.compile(r"\bcontext_len=" + _INT), "int", ""),
    ("max_model_len", "max seq len (", re.compile(r"max seq len \(" + _INT + r"\)"), "int", ""),
    # vLLM's config/model.py (0.11 on): "Using max model len N", the length it settled on.
    ("max_model_len", "Using max model len", re.compile(r"Using max model len " + _INT), "int", ""),
    (
        "auto_max_len",
        "Auto-fit max_model_len:",
        re.compile(r"Auto-fit max_model_len: (?:reduced from [0-9]{1,20} to |full model context length )" + _INT),
        "autofit",
        "0.14 or later",
    ),
    ("tp", "tensor_parallel_size", re.compile(r"\btensor_parallel_size['\"]?\s*[=:]\s*" + _INT), "int", ""),
    ("tp", "tensor-parallel-size", re.compile(r"--tensor[-_]parallel[-_]size[= ]\s*" + _INT), "int", ""),
    ("tp", "tp_size=", re.compile(r"\btp_size=" + _INT), "int", ""),
    ("tp", "--tp", re.compile(r"(?:--tp|--tp-size|-tp)[= ]\s*" + _INT + r"\b"), "int", ""),
    ("pp", "pipeline_parallel_size", re.compile(r"\bpipeline_parallel_size['\"]?\s*[=:]\s*" + _INT), "int", ""),
    ("pp", "pipeline-parallel-size", re.compile(r"--pipeline[-_]parallel[-_]size[= ]\s*" + _INT), "int", ""),
    ("dtype", "dtype=torch.", re.compile(r"\bdtype=torch\.([a-z0-9]{1,20})"), "str", ""),
    ("dtype", "--dtype", re.compile(r"--dtype[= ]\s*[\"']?([a-z0-9]{1,20})"), "str", ""),
    # The config line's quantization=None is kept too (first wins), so that a later line's text, a request's
    # prompt among them, cannot name a method for an unquantized start.
    ("quantization", "quantization=", re.compile(r"\bquantization=['\"]?([A-Za-z][A-Za-z0-9_-]{0,29})"), "str", ""),
    ("quantization", "'quantization'", re.compile(r"'quantization': '([A-Za-z][A-Za-z0-9_-]{0,29})'"), "str", ""),
    ("quantization", "--quantization", re.compile(r"--quantization[= ]\s*['\"]?([A-Za-z][A-Za-z0-9_-]{0,29})"), "str", ""),
    (
        "device_name",
        "device_name=",
        re.compile(r"\bdevice_name=([A-Za-z][A-Za-z0-9_+-]{0,79}?)(?:\.json|[,\s'\"\]]|$)"),
        "str",
        "",
    ),
    ("quant_scheme", "Using scheme: ", re.compile(r"Using scheme: (CompressedTensors[A-Za-z0-9]{1,40})"), "str", ""),
    ("kv_cache_dtype", "kv_cache_dtype", re.compile(r"\bkv_cache_dtype['\"]?\s*[=:]\s*'?([A-Za-z0-9_]{1,20})"), "str", ""),
    ("kv_cache_dtype", "kv-cache-dtype", re.compile(r"--kv-cache-dtype[= ]\s*([A-Za-z0-9_]{1,20})"), "str", ""),
    # A KV block is counted in tokens; vLLM 0.2x's checkpoint prefetch logs its read size as
    # "block_size=16777216 bytes" (model_executor/model_loader/weight_utils.py), which is not one.
    ("block_size", "block_size", re.compile(r"\bblock_size['\"]?\s*[=:]\s*" + _INT + r"(?![0-9]*\s*bytes)"), "int", ""),
    ("block_size", "block-size", re.compile(r"--block-size[= ]\s*" + _INT), "int", ""),
    ("block_size", "page_size=", re.compile(r"\bpage_size=" + _INT), "int", ""),
    # vLLM's platform hook raising the block for an attention backend: "Forcing kv cache block size to 64 for
    # FlashMLA backend." (platforms/cuda.py, 0.11.0 to 0.16.0), "Setting kv cache block size to 64 for
    # DEEPSEEK_V32_INDEXER backend." (platforms/interface.py, 0.19 on); later than the config line.
    ("block_size", "kv cache block size to", re.compile(r"(?:Forcing|Setting) kv cache block size to " + _INT), "int", ""),
    (
        "util",
        "is equivalent to --gpu-memory-utilization=",
        re.compile(r"--gpu-memory-utilization=([0-9.]{1,12}) is equivalent to --gpu-memory-utilization=([0-9.]{1,12})"),
        "util_equiv",
        "0.18 or later",
    ),
    (
        "util",
        "gpu_memory_utilization",
        re.compile(r"gpu_memory_utilization['\"]?\s*(?:[=:(]\s*|\s+)([0-9.]{1,20})"),
        "float",
        "",
    ),
    ("util", "gpu-memory-utilization", re.compile(r"--gpu[-_]memory[-_]utilization[= ]\s*([0-9.]{1,20})"), "float", ""),
    ("util", "mem_fraction_static=", re.compile(r"\bmem_fraction_static=([0-9.]{1,20})"), "float", ""),
    ("util", "mem-fraction-static", re.compile(r"--mem-fraction-static[= ]\s*([0-9.]{1,20})"), "float", ""),
    (
        "max_num_batched_tokens",
        "max_num_batched_tokens",
        re.compile(r"\bmax_num_batched_tokens['\"]?\s*[=:]\s*" + _INT),
        "int",
        "",
    ),
    ("max_num_batched_tokens", "max-num-batched-tokens", re.compile(r"--max-num-batched-tokens[= ]\s*" + _INT), "int", ""),
    ("max_num_seqs", "max_num_seqs", re.compile(r"\bmax_num_seqs['\"]?\s*[=:]\s*" + _INT), "int", ""),
    ("max_num_seqs", "max-num-seqs", re.compile(r"--max-num-seqs[= ]\s*" + _INT), "int", ""),
    ("total_gib", "total_gpu_memory (", re.compile(r"total_gpu_memory \(" + NUM + r"\s*GiB\)"), "float", ""),
    ("total_gib", "total_gpu_memory=", re.compile(r"total_gpu_memory=" + NUM + r"\s*GiB"), "float", "0.6.4 (V0)"),
    ("total_gib", "total_gpu_memory ", re.compile(r"total_gpu_memory\s{2,}" + NUM + r"\s*GiB"), "float", "0.6.5 (V0)"),
    ("weights_gib", "Model loading took", re.compile(r"Model loading took " + NUM + r"\s*GiB"), "float", "V1 (0.8 or later)"),
    ("weights_gib", "Loading model weights took", re.compile(r"Loading model weights took " + NUM + r"\s*GB"), "float", "V0"),
    ("weights_gib", "model weights take", re.compile(r"model weights take\s+" + NUM + r"\s*GiB"), "float", ""),
    ("breakdown_weights_gib", "model weights take", re.compile(r"model weights take\s+" + NUM + r"\s*GiB"), "float", ""),
    ("weights_gib", "Load weight end.", re.compile(r"mem usage=" + NUM + r"\s*GB"), "float", ""),
    ("avail_before_load_gib", "Load weight begin.", re.compile(r"avail mem=" + NUM + r"\s*GB"), "float", "SGLang"),
    ("avail_after_load_gib", "Load weight end.", re.compile(r"avail mem=" + NUM + r"\s*GB"), "float", ""),
    # V0's budget lines (0.6.4: "non_torch_memory=X GiB"); not vLLM V1's MemorySnapshot, whose
    # non_torch_memory is what the device held before the model (the CUDA context): "worker init memory
    # snapshot: ... non_torch_memory=0.51GiB" (v1/worker/gpu_worker.py, 0.19.0).
    (
        "non_torch_gib",
        "non_torch_memory",
        re.compile(r"^(?!.*memory snapshot).*?non_torch_memory(?: takes\s+|=|\s{2,})" + NUM + r"\s*GiB"),
        "float",
        "",
    ),
    # V1's profile result (utils/mem_utils.py MemoryProfilingResult.__repr__, 0.19.0): "Memory profiling takes
    # S seconds. Total non KV cache memory: X GiB; torch peak memory increase: A GiB; non-torch forward
    # increase memory: N GiB; weights memory: W GiB." (DEBUG).
    (
        "activation_gib",
        "torch peak memory increase:",
        re.compile(r"torch peak memory increase:\s*" + NUM + r"\s*GiB"),
        "float",
        "",
    ),
    ("non_torch_gib", "non-torch forward increase memory:", re.compile(r"increase memory:\s*" + NUM + r"\s*GiB"), "float", ""),
    (
        "activation_gib",
        "activation peak memory",
        re.compile(r"activation peak memory(?: takes)?\s+" + NUM + r"\s*GiB"),
        "float",
        "",
    ),
    # V1 from 0.10.2, after the CUDA graphs (v1/worker/gpu_worker.py compile_or_warm_up_model): "Free memory on
    # device (F/T GiB) on startup. Desired GPU memory utilization is (U, B GiB). Actual usage is W GiB for
    # weight, A GiB for peak activation, N GiB for non-torch memory, and G GiB for CUDAGraph memory." (0.10.2);
    # later releases join the first and third: "X GiB for consumed memory (weights + non-torch)".
    (
        "total_gib",
        "Free memory on device (",
        re.compile(r"Free memory on device \([0-9.]{1,20}/" + NUM + r"\s*GiB\) on startup"),
        "float",
        "V1 (0.10.2 or later)",
    ),
    ("util", "Desired GPU memory utilization is (", re.compile(r"Desired GPU memory utilization is \(" + NUM + ","), "float", ""),
    ("activation_gib", "GiB for peak activation", re.compile(NUM + r"\s*GiB for peak activation"), "float", ""),
    ("non_torch_gib", "GiB for non-torch memory", re.compile(NUM + r"\s*GiB for non-torch memory"), "float", ""),
    (
        "consumed_gib",
        "GiB for consumed memory (weights + non-torch)",
        re.compile(NUM + r"\s*GiB for consumed memory \(weights \+ non-torch\)"),
        "float",
        "",
    ),
    ("peak_torch_gib", "peak_torch_memory=", re.compile(r"peak_torch_memory=" + NUM + r"\s*GiB"), "float", "0.6.4 (V0)"),
    (
        "available_kv_gib",
        "Available KV cache memory:",
        re.compile(r"Available KV cache memory: " + NUM + r"\s*GiB"),
        "float",
        "V1 (0.8 or later)",
    ),
    ("available_kv_gib", "reserved for KV Cache is", re.compile(r"reserved for KV Cache is " + NUM + r"\s*GiB"), "float", ""),
    # A pool given as kv_cache_memory_bytes: the figure given, and the pool (v1/worker/gpu_worker.py).
    *(
        (fact, "as specified by kv_cache_memory_bytes", _GIVEN_POOL, "float", "V1 (0.10.2 or later)")
        for fact in ("kv_cache_memory_gib", "available_kv_gib")
    ),
    ("available_kv_gib", "kv_cache_size=", re.compile(r"kv_cache_size=" + NUM + r"\s*GiB"), "float", "0.6.4 (V0)"),
    (
        "available_kv_gib",
        "available_kv_cache_memory",
        re.compile(r"available_kv_cache_memory\s+" + NUM + r"\s*GiB"),
        "float",
        "0.6.5 (V0)",
    ),
    (
        "kv_tokens",
        "KV cache size: ",
        re.compile(r"(?:GPU|[A-Z]+) KV cache size: " + NUM + r" tokens"),
        "int",
        "V1 (0.8 or later)",
    ),
    ("gpu_blocks", "blocks: ", re.compile(r"(?:# )?(?:GPU|cuda|CUDA) blocks: " + NUM), "int", "V0"),
    (
        "concurrency",
        "Maximum concurrency for",
        re.compile(r"Maximum concurrency for " + NUM + r" tokens per request: " + NUM + r"x"),
        "conc",
        "",
    ),
    (
        "error_kv_tokens",
        "maximum number of tokens that can be stored in KV cache",
        re.compile(r"maximum number of tokens that can be stored in KV cache \(" + NUM + r"\)"),
        "int",
        "V0",
    ),
    (
        "needed_kv_gib",
        "KV cache is needed",
        re.compile(
            r"\(" + NUM + r" GiB KV cache is needed, which is larger than the available KV cache memory \(" + NUM + r" GiB\)"
        ),
        "needed",
        "V1 (0.8 or later)",
    ),
    (
        "estimated_max_len",
        "estimated maximum model length is",
        re.compile(r"estimated maximum model length is " + NUM),
        "int",
        "",
    ),
    (
        "cudagraph_gib",
        "Graph capturing finished",
        re.compile(r"Graph capturing finished in [0-9.]{1,20} secs?, took " + NUM + r"\s*GiB"),
        "float",
        "",
    ),
    (
        "cudagraph_estimate_gib",
        "Estimated CUDA graph memory",
        re.compile(r"Estimated CUDA graph memory: " + NUM + r"\s*GiB"),
        "float",
        "0.18 or later",
    ),
    # Whether that estimate was subtracted (v1/worker/gpu_worker.py determine_available_memory: only
    # when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, default 0 in 0.18.0 and 0.19.0, 1 from 0.20.0).
    ("cudagraph_estimate_applied", "CUDA graph memory profiling is enabled", re.compile(r"profiling is (enabled)"), "cg_on", ""),
    (
        "cudagraph_estimate_applied",
        "CUDA graph memory profiling is disabled",
        re.compile(r"profiling is (disabled)"),
        "cg_on",
        "",
    ),
    (
        "cudagraph_estimate_applied",
        "CUDA graph memory profiling will be enabled by default",
        re.compile(r"(will) be enabled by default"),
        "cg_on",
        "0.18 or 0.19",
    ),
    # SGLang's data-parallel attention (server_args: "dp_size=4, ... enable_dp_attention=True").
    ("dp_size", "dp_size=", re.compile(r"\bdp_size=" + _INT), "int", ""),
    ("dp_attention", "enable_dp_attention=", re.compile(r"\benable_dp_attention=(True|False)\b"), "bool", ""),
    # enforce_eager: the V1 engine's config line ("enforce_eager=True,"), the non-default args
    # ("'enforce_eager': True") or a command's flag ("--enforce-eager").
    ("enforce_eager", "enforce_eager=", re.compile(r"\benforce_eager=(True|False)\b"), "bool", ""),
    ("enforce_eager", "'enforce_eager':", re.compile(r"'enforce_eager':\s*(True|False)\b"), "bool", ""),
    ("enforce_eager", "--enforce-eager", re.compile(r"--enforce-eager(?![\w-])()"), "bool", ""),
    # enable_prefix_caching: the V1 engine's config line ("enable_prefix_caching=False,") or the non-default args.
    ("prefix_caching", "enable_prefix_caching=", re.compile(r"\benable_prefix_caching=(True|False)\b"), "bool", ""),
    ("prefix_caching", "'enable_prefix_caching':", re.compile(r"'enable_prefix_caching':\s*(True|False)\b"), "bool", ""),
    ("max_total_num_tokens", "max_total_num_tokens=", re.compile(r"max_total_num_tokens=" + NUM), "int", "SGLang"),
    (
        "kv_sizes",
        "#tokens: ",
        re.compile(_SGL_KV + r", K size: " + NUM + r" GB, V size: " + NUM + r" GB"),
        "kv",
        "SGLang",
    ),
    ("kv_size_mla", "#tokens: ", re.compile(_SGL_KV + r", KV size: " + NUM + r" GB"), "kv_mla", "SGLang"),
    ("trt_tokens", "tokens in paged KV cache", re.compile(r"Using " + NUM + r" tokens in paged KV cache"), "int", "TensorRT-LLM"),
    ("version", "LLM version:", re.compile(r"TensorRT[- ]LLM version:\s*([0-9][^\s,]{0,30})"), "str", "TensorRT-LLM"),
    (
        "weights_gib",
        "Memory used after loading model weights (inside torch)",
        re.compile(r"Memory used after loading model weights \(inside torch\) in memory usage profiling: " + NUM + r"\s*GiB"),
        "float",
        "TensorRT-LLM 1.x",
    ),
    (
        "trt_free",
        "Memory usage when calculating max tokens in paged kv cache",
        re.compile(
            r"Memory usage when calculating max tokens in paged kv cache: total: " + NUM + r" GiB, available: " + NUM + r" GiB"
        ),
        "trt_free",
        "TensorRT-LLM's C++ KV cache manager",
    ),
    (
        "trt_alloc",
        "for max tokens in paged KV cache",
        re.compile(r"Allocated " + NUM + r" GiB for max tokens in paged KV cache \(" + NUM + r"\)"),
        "trt_alloc",
        "TensorRT-LLM 1.x",
    ),
    (
        "trt_peak",
        "Peak memory during memory usage profiling",
        re.compile(
            r"Peak memory during memory usage profiling \(torch \+ non-torch\): " + NUM + r" GiB, available KV cache memory "
            r"when calculating max tokens: "
            + NUM
            + r" GiB, fraction is set "
            + NUM
            + r", kv size (?:per token )?is "
            + NUM
            + r"(?: bytes/token)?\. device total memory "
            + NUM
            + r" GiB, (?:, tmp kv_mem|temporary kv cache memory during profiling) "
            + NUM
            + r" GiB"
        ),
        "trt_peak",
        "TensorRT-LLM 1.x",
    ),
    ("trt_kv_bytes", "bytes for k/v cache", re.compile(r"Allocate " + NUM + r" bytes for k/v cache"), "int", "TensorRT-LLM"),
    (
        "trt_engine_mib",
        "TensorRT-managed allocation",
        re.compile(r"TensorRT-managed allocation.*GPU " + NUM + r" \(MiB\)"),
        "float",
        "TensorRT-LLM",
    ),
]
# Lines that open a start-up: after a start-up's results, one of them opens the next.
_STARTS = (
    "vLLM API server version",
    "vLLM server version",
    "Initializing an LLM engine",
    "Initializing a V1 LLM engine",
    "Initializing a V0 LLM engine",
    "server_args=ServerArgs(",
    "vllm serve ",
    "non-default args:",
    "vllm.entrypoints",
    "sglang.launch_server",
)
_KEYS = list(dict.fromkeys([k for _, k, _, _, _ in _PATTERNS] + list(_STARTS) + ["EngineCore_DP0", "[TensorRT-LLM]"]))
_ANY = re.compile("|".join(re.escape(k) for k in _KEYS))
_KEYS_BYTES = [k.encode() for k in _KEYS]
CHUNK = 4 * 2**20
LINE_LIMIT = 65536


def _blocks(stream: BinaryIO) -> Iterator[bytes]:
    """The stream's bytes in chunks, as UTF-8: a log that starts with a UTF-16 byte-order mark (Windows
    PowerShell's `>` writes UTF-16LE) is decoded as it is read and re-encoded."""
    first = stream.read(CHUNK)
    if first[:2] in UTF16_BOMS:
        import codecs

        dec = codecs.getincrementaldecoder("utf-16")(errors="replace")
        block = first
        while block:
            yield dec.decode(block).encode("utf-8")
            block = stream.read(CHUNK)
        yield dec.decode(b"", final=True).encode("utf-8")
        return
    block = first
    while block:
        yield block
        block = stream.read(CHUNK)


def candidate_lines(stream: BinaryIO) -> Iterator[str]:
    """The lines of a log that hold one of the literals kvcalc reads, in order, found by scanning
    4 MiB chunks in C: a 100 MB log of request lines costs a few tenths of a second, in a few MiB of
    memory. Lines are cut to 64 KiB; bytes that are not UTF-8 are replaced (a UTF-16 log with its
    byte-order mark is read as UTF-16)."""
    rest = b""
    for block in _blocks(stream):
        if not block:
            continue
        data = rest + block
        end = data.rfind(b"\n") + 1
        if end == 0:
            # No line end in this chunk: keep at most one line's worth.
            rest = data[-LINE_LIMIT:] if len(data) > LINE_LIMIT else data
            continue
        yield from _scan(data, end)
        rest = data[end:]
        if len(rest) > LINE_LIMIT:
            rest = rest[-LINE_LIMIT:]
    if rest:
        yield from _scan(rest + b"\n", len(rest) + 1)


def _scan(data: bytes, end: int) -> Iterator[str]:
    """The lines of data[:end] holding a literal: one bytes.find per literal (C speed, over 100 MB/s
    for all of them together), then each line once, in order."""
    hits: dict[int, int] = {}
    for key in _KEYS_BYTES:
        i = data.find(key, 0, end)
        while i >= 0:
            start = data.rfind(b"\n", 0, i) + 1
            hits.setdefault(start, i)
            stop = data.find(b"\n", i, end)
            i = data.find(key, stop if stop >= 0 else end, end)
    for start in sorted(hits):
        stop = data.find(b"\n", start, end)
        stop = end - 1 if stop < 0 else stop
        lo = max(start, hits[start] - LINE_LIMIT // 2)
        yield data[lo : min(stop, lo + LINE_LIMIT)].decode("utf-8", errors="replace")


# Facts kept from their first line (a model named twice, the version printed by every worker).
_FIRST_WINS = (
    "model",
    "version",
    "max_model_len",
    "weights_gib",
    "tp",
    "pp",
    "dp_size",
    "quantization",
    "quant_scheme",
    "device_name",
)
# Facts each rank may print within one start-up: the engine sizes every rank's pool to the smallest
# (vLLM V1: the KV cache config is taken at the minimum available memory over the workers,
# vllm/v1/core/kv_cache_utils.py get_kv_cache_configs, 0.33.0; V0: the executor takes
# min(num_gpu_blocks) over its workers, vllm/executor/ray_distributed_executor.py; SGLang
# min-reduces the free memory over ranks), so the smallest is the figure the engine uses.
_MIN_OVER_RANKS = ("kv_tokens", "gpu_blocks", "max_total_num_tokens")
# Facts each rank prints that are not comparable across pipeline stages (each stage holds its own
# layers, so vLLM takes the minimum of the blocks they give, not of the bytes): the lowest rank's is
# kept, the others recorded (vllm#20665: stage 0's 12.13 GiB over 14 layers binds, not stage 1's 11.33
# over 13).
_FIRST_OF_RANKS = ("available_kv_gib", "activation_gib", "non_torch_gib", "breakdown_weights_gib", "peak_torch_gib")
"""(A V0 breakdown line's activation and non-torch figures are kept from the same line as its
available KV memory, so that the pool recomputed from them is that rank's.)"""


_RANK = re.compile(r"\brank=(\d{1,6})")


# V0's worker processes prefix their lines, the driver (rank 0, which also samples) does not:
# "(VllmWorkerProcess pid=722547) INFO ... Memory profiling results: ..." (0.6.4), "(RayWorkerWrapper pid=...)".
_WORKER = ("(VllmWorkerProcess", "(RayWorkerWrapper")


# A container runtime's prefix before the engine's own line: docker compose's "vllm-server-1  | ".
_COMPOSE_PREFIX = re.compile(r"^\s*[A-Za-z0-9][\w.-]*\s+\|\s?")


def _rank(line: str) -> int:
    m = _RANK.search(line)
    if m:
        return int(m.group(1))
    return 1 if _COMPOSE_PREFIX.sub("", line, count=1).lstrip().startswith(_WORKER) else 0


def _read(f: LogFacts, line: str) -> None:
    for fact, key, pat, kind, fmt in _PATTERNS:
        if key not in line:
            continue
        m = pat.search(line)
        if not m:
            continue
        try:
            if kind == "conc":
                c = _num(m.group(2))
                if f.concurrency is not None and c >= f.concurrency:
                    continue
                f.concurrency_len = int(_num(m.group(1)))
                f.concurrency = c
                f.lines["concurrency"] = line.strip()
            elif kind in ("kv", "kv_mla"):
                if m.group(1) and f.kv_cache_dtype is None:
                    f.kv_cache_dtype = m.group(1)
                f.max_total_num_tokens = f.max_total_num_tokens or int(_num(m.group(2)))
                if kind == "kv":
                    f.k_size_gib, f.v_size_gib = _num(m.group(3)), _num(m.group(4))
                else:
                    f.kv_size_gib = _num(m.group(3))
                f.lines["kv_sizes"] = line.strip()
            elif kind == "trt_alloc":
                gib, tokens = _num(m.group(1)), int(_num(m.group(2)))
                if gib <= 0:
                    continue  # AutoDeploy's placeholder cache manager, not a pool
                f.trt_allocations.append((gib, tokens))
                f.trt_kv_gib, f.trt_tokens = gib, tokens
                f.lines["trt_tokens"] = line.strip()
            elif kind == "trt_free":
                # Every rank prints its own; the pool of each is sized from the rank with least free memory
                # (TensorRT-LLM 0.16 at TP 8: 52.08 GiB = 0.90 x the lowest rank's 57.87, where the others had
                # 61.38-61.64), so the minimum is kept, as for vLLM's ranks.
                total, free = _num(m.group(1)), _num(m.group(2))
                if f.trt_free_gib is not None:
                    seen = f.rank_values.setdefault("trt_free_gib", [float(f.trt_free_gib)])
                    seen.append(free)
                    if free >= f.trt_free_gib:
                        continue
                f.trt_free_total_gib, f.trt_free_gib = total, free
                f.lines["trt_free"] = line.strip()
            elif kind == "trt_peak":
                f.trt_peak_gib, f.trt_available_kv_gib, f.trt_fraction = (_num(m.group(i)) for i in (1, 2, 3))
                f.trt_kv_per_token = int(_num(m.group(4)))
                f.trt_total_gib, f.trt_tmp_kv_gib = _num(m.group(5)), _num(m.group(6))
                f.lines["trt_peak"] = line.strip()
            elif kind == "needed":
                f.needed_kv_gib, f.available_kv_gib = _num(m.group(1)), _num(m.group(2))
                f.lines["needed_kv_gib"] = line.strip()
            elif kind == "sampler":
                f.sampler = m.group(1).lower()
                f.lines["sampler"] = line.strip()
            elif kind == "v0":
                f.v0_engine = True
                f.lines["v0_engine"] = line.strip()
            elif kind == "v0mod":
                if not f.v0_modules:
                    f.v0_modules = True
                    f.lines["v0_modules"] = line.strip()
            elif kind == "v1":
                if not f.v1_engine:
                    f.v1_engine = True
                    f.lines["v1_engine"] = line.strip()
            elif kind == "autofit":
                # The length vLLM settled on overrides the context it was profiled at.
                f.auto_max_len = f.max_model_len = int(m.group(1))
                f.lines["auto_max_len"] = line.strip()
            elif kind == "skip_mm":
                f.skip_mm_profiling = True
                f.lines["skip_mm_profiling"] = line.strip()
            elif kind == "encoder":
                f.encoder_budget, f.encoder_items, f.encoder_modality = int(m.group(1)), int(m.group(2)), m.group(3)
                f.lines["encoder_budget"] = line.strip()
            elif kind == "cg_on":
                f.cudagraph_estimate_applied = m.group(1) == "enabled"
                f.lines["cudagraph_estimate_applied"] = line.strip()
            elif kind == "bool":
                if getattr(f, fact) is None:
                    setattr(f, fact, m.group(1) != "False")
                    f.lines[fact] = line.strip()
            elif kind == "util_equiv":
                f.util, f.util_without_cudagraph = _num(m.group(1)), _num(m.group(2))
                f.lines["util"] = line.strip()
            else:
                if fact in _FIRST_WINS and getattr(f, fact) is not None:
                    continue
                raw = m.group(1)
                if kind == "human_int":
                    kind, raw = "int", str(_human_int(raw))
                val: object = raw if kind == "str" else int(_num(raw)) if kind == "int" else _num(raw)
                if kind == "int" and isinstance(val, int) and val < 0:
                    continue
                old = getattr(f, fact)
                ranked = fact in _MIN_OVER_RANKS or fact in _FIRST_OF_RANKS
                if ranked and isinstance(old, (int, float)) and isinstance(val, (int, float)):
                    if old != val or fact in f.rank_values:
                        seen = f.rank_values.setdefault(fact, [float(old)])
                        seen.append(float(val))
                    rank = _rank(line)
                    if fact in _FIRST_OF_RANKS:
                        # Keep the lowest rank's: the first pipeline stage holds the embedding and
                        # its own layers, the stage whose blocks bind in vllm#20665.
                        if rank >= f.rank_of.get(fact, 0):
                            continue
                        f.rank_of[fact] = rank
                    elif val >= old:
                        continue
                elif ranked:
                    f.rank_of[fact] = _rank(line)
                setattr(f, fact, val)
                f.lines[fact] = line.strip()
        except (ValueError, OverflowError):
            continue
        if fmt and fmt not in f.formats:
            f.formats.append(fmt)
    if "KV cache size: " in line and "Maximum concurrency for" in line and "0.27 or later" not in f.formats:
        f.formats.append("0.27 or later")
    if "across cluster]" in line and "[repeated " in line:
        f.ray_deduplicated = True
    if "(EngineCore_DP0" in line and "0.10 or later" not in f.formats:
        f.formats.append("0.10 or later")


def _finish(f: LogFacts) -> LogFacts:
    if f.v0_modules and not f.v1_engine:
        # Lines from V0's own modules and none from V1's: the V0 engine ran, though no line says so.
        f.v0_engine = True
    if f.trt_tokens is not None or f.trt_kv_bytes is not None or f.trt_peak_gib is not None:
        f.engine = "trtllm"
    elif any(x is not None for x in (f.max_total_num_tokens, f.avail_after_load_gib, f.k_size_gib, f.kv_size_gib)):
        f.engine = "sglang"
    elif f.has_result or f.weights_gib is not None or f.concurrency is not None:
        f.engine = "vllm"
    if f.max_model_len is None and f.concurrency_len:
        f.max_model_len = f.concurrency_len
    if f.non_torch_gib is None and f.consumed_gib is not None and f.weights_gib is not None:
        # The budget line after 0.10.2 joins weights and non-torch memory; the load line has the weights.
        f.non_torch_gib = max(f.consumed_gib - f.weights_gib, 0.0)
        f.lines["non_torch_gib"] = f.lines.get("consumed_gib", "")
    return f


def parse_startups(text: str | Iterable[str], where: str = "the log") -> list[LogFacts]:
    """Facts from a log (its text, or its lines), one per start-up; lines not recognised are ignored.
    ``where`` names the log in an error (its file)."""
    out: list[LogFacts] = []
    f = LogFacts()
    for line in text.splitlines() if isinstance(text, str) else text:
        if len(line) > LINE_LIMIT:
            line = line[:LINE_LIMIT]
        if not _ANY.search(line):
            continue
        if f.has_result and any(s in line for s in _STARTS):
            out.append(_finish(f))
            f = LogFacts()
        _read(f, line)
    out.append(_finish(f))
    found = [x for x in out if x.engine is not None]
    if not found:
        raise KvcalcError(
            "nothing recognisable in this log",
            where,
            "a vLLM, SGLang or TensorRT-LLM start-up log with lines such as 'Model loading took X GiB', "
            "'Available KV cache memory', 'GPU KV cache size', '# GPU blocks', SGLang's 'max_total_num_tokens' or "
            "TensorRT-LLM's 'tokens in paged KV cache'",
        )
    # Settings printed once (a quoted command, a version line) hold for the start-ups that follow
    # when those do not say otherwise.
    for prev, cur in zip(found, found[1:]):
        for k in ("model", "version", "tp", "pp", "util", "dtype", "kv_cache_dtype", "block_size"):
            if getattr(cur, k) is None and getattr(prev, k) is not None:
                setattr(cur, k, getattr(prev, k))
    return found


def parse_log(text: str | Iterable[str]) -> LogFacts:
    """The facts of a log's first start-up (see :func:`parse_startups` for all of them)."""
    return parse_startups(text)[0]
