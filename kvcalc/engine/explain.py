"""A serving engine's start-up figures, recomputed: once from the log's own figures (what must
agree up to the log's rounding), once from kvcalc's estimates with the settings the log states
(what kvcalc predicts without a log). Numbers only; the sentences that explain them are the
renderer's.

"From the log's figures" means one budget throughout: the KV pool the log's own memory figures
give (util x total less the measured weights, activation peak and non-torch memory where the log
breaks them down; else its "Available KV cache memory"; else its block or token count), and the
tokens, blocks and concurrency that pool gives under the engine's rules.

Units, as the engines print them: vLLM's "GiB" is 2^30 B; vLLM 0.2 to 0.7 printed "Loading model
weights took X GB" but computed X in GiB; SGLang prints "GB" for values it divides by 2^30.
kvcalc reads all of them as GiB and says so.
"""

from __future__ import annotations

from dataclasses import field, replace
from fractions import Fraction
from typing import Any

from kvcalc._record import record
from kvcalc.engine.encoder import modelled as encoder_modelled
from kvcalc.engine.engines import ENGINES, Engine, engine as parse_engine
from kvcalc.engine.kv import KVFootprint, start_check_footprint
from kvcalc.engine.memory import Capacity, FitInputs, batched_tokens, capacity, engine_encoder_profile, fit, footprint
from kvcalc.engine.weights import logged_weight_dtype
from kvcalc.errors import KvcalcError
from kvcalc.inputs.logs import LogFacts
from kvcalc.specs.dtypes import kv_dtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

GiB = 2**30
MiB = 2**20


@record(frozen=True)
class Given:
    """What the user passed to fill what the log does not say (None: not passed)."""

    engine: str | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int = 1
    """Data-parallel attention ranks (the pool is one rank's)."""
    ep: int = 1
    util: float | None = None
    max_model_len: int | None = None
    kv_dtype: str | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    block_size: int | None = None
    weight_dtype: str | None = None
    """A checkpoint format the catalog's spec does not hold (an AWQ or SmoothQuant variant)."""
    enforce_eager: bool | None = None
    """vLLM's --enforce-eager, where the log does not say (FitInputs.enforce_eager)."""
    prefix_caching: bool | None = None
    """The server's --enable-prefix-caching, where the log does not say (FitInputs.prefix_caching)."""


@record(frozen=True)
class Setting:
    """One setting the recomputation used, and where it came from: ``log`` (the log says it),
    ``option`` (passed), ``guess`` (inferred from the log's figures), ``default`` (the engine's or
    kvcalc's default, which the log may not have used)."""

    key: str
    value: Any
    source: str
    detail: str = ""


@record(frozen=True)
class Comparison:
    """One figure of the log beside kvcalc's. ``from_log``: recomputed from the log's own figures
    (None where there is nothing to recompute it from; ``taken_from_log`` where the figure is itself
    the one the pool was taken from). ``estimate``: kvcalc's prediction with the log's settings and
    its own estimates. ``unit``: bytes, tokens, blocks, ratio or bytes_per_token."""

    key: str
    unit: str
    log: float | int
    from_log: float | int | None
    estimate: float | int | None
    from_log_error: float | None
    """(from_log - log) / log."""
    estimate_error: float | None
    """(estimate - log) / log."""
    taken_from_log: bool = False
    length: int | None = None
    """For concurrency: the request length it is for."""


@record(frozen=True)
class Note:
    """A fact worth saying about this log, with its numbers; ``key`` names the sentence."""

    key: str
    values: dict[str, Any] = field(default_factory=dict)


@record(frozen=True)
class PoolFigures:
    kv_pool_bytes: int
    kv_pool_blocks: int | None
    kv_pool_tokens: int | None
    concurrency: float
    basis: str
    """Where the pool came from: components, available, blocks, tokens, kv_sizes, trt_bytes, estimate."""
    kv_pool_low: int | None = None
    """The estimate's pool at the end of every range that hurts (None: exact or from the log)."""
    kv_pool_high: int | None = None


@record(frozen=True)
class ExplainReport:
    """One start-up of a log, recomputed."""

    index: int
    engine: str
    engine_label: str
    model: str
    gpu: str
    tp: int
    pp: int
    max_model_len: int
    kv_dtype: str
    block_size: int | None
    util: float | None
    kv_bytes_per_token: int
    settings: list[Setting]
    log: dict[str, Any]
    from_log: PoolFigures | None
    estimate: PoolFigures
    weight_bytes_estimate: int
    rows: list[Comparison]
    notes: list[Note]
    warnings: list[str] = field(default_factory=list)
    dp: int = 1
    """Data-parallel attention ranks (SGLang's DP attention: the pool is one rank's)."""

    @property
    def assumed(self) -> list[Setting]:
        """The settings the log did not state."""
        return [s for s in self.settings if s.source not in ("log", "option")]


@record(frozen=True)
class ExplainLogReport:
    """Every start-up found in one log file, each recomputed separately."""

    source: str
    startups: list[ExplainReport]
    skipped: list[str] = field(default_factory=list)
    """Start-ups that could not be explained, each with the reason."""
    warnings: list[str] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)


def _rel(a: float | int | None, b: float | int | None) -> float | None:
    if a is None or b is None or not b:
        return None
    return (a - b) / b


def _row(
    key: str,
    unit: str,
    log: float | int,
    from_log: float | int | None,
    estimate: float | int | None,
    taken: bool = False,
    length: int | None = None,
) -> Comparison:
    return Comparison(key, unit, log, from_log, estimate, _rel(from_log, log), _rel(estimate, log), taken, length)


# ---- which engine wrote the log -----------------------------------------------------------------


# vLLM's earliest V1 record: what a V1 engine of a release kvcalc reads as V0 (0.7.x under VLLM_USE_V1=1) is
# read with (0.7's own V1 batch defaults not read).
EARLIEST_V1 = "vllm@0.8"


def choose_engine(facts: LogFacts, override: str | None = None) -> tuple[Engine, Setting]:
    """The engine record for a log: --engine; else the release its version line names; else what
    its line formats say; else the family's current rules."""
    if override:
        e = parse_engine(override)
        return e, Setting("engine", e.key, "option", "--engine")
    if facts.engine == "trtllm":
        if facts.version:
            try:
                e = parse_engine(f"trtllm@{facts.version}", "the log's version line")
            except KvcalcError:
                e = ENGINES["trtllm"]
                why = f"TensorRT-LLM {facts.version[:20]}, a release kvcalc has no rules for; read with the 1.x rules"
                return e, Setting("engine", e.key, "log", why)
            return e, Setting("engine", e.key, "log", f"the log's version line (TensorRT-LLM {facts.version[:20]})")
        e = ENGINES["trtllm"]
        return e, Setting("engine", e.key, "log", "TensorRT-LLM's lines; read with the 1.x rules")
    if facts.engine == "sglang":
        e = ENGINES["sglang"]
        return e, Setting("engine", e.key, "log", "SGLang's lines; read with the current (0.5) rules")
    if facts.version:
        try:
            e = parse_engine(f"vllm=={facts.version}", "the log's version line")
        except KvcalcError:
            pass
        else:
            if facts.v0_engine and e.non_torch_rule == "v1":
                # 0.8 to 0.10 still shipped V0 and fell back to it (pipeline parallelism without Ray in
                # 0.8, VLLM_USE_V1=0): V0's accounting, whose newest rules kvcalc holds are 0.7's.
                # Its pipeline stages are split by the release's own get_pp_indices (vllm/distributed/utils.py),
                # which 0.8.0 changed (the layers left over go before the last stage), and its MLA blocks are
                # forced by the release's platform (vllm/platforms/cuda.py), V0 or V1. 0.8.0 stopped
                # materializing MLA's decode weights (vllm-project/vllm#14770), V0 and V1 alike, and keeps MLA whatever the
                # checkpoint's quantization, as 0.7.3 does (config.py use_mla, read in 0.8.3).
                v0 = replace(
                    ENGINES["vllm@0.7"], pp_split=e.pp_split, dense_mla=e.dense_mla, mla_decode="per-head", mla_fp8_only=False
                )
                return v0, Setting(
                    "engine", v0.key, "log", f"version {facts.version} running its V0 engine (the log says so): 0.7's V0 rules"
                )
            if facts.v1_engine and e.non_torch_rule != "v1" and e.name == "vllm" and not facts.v0_engine:
                early = ENGINES[EARLIEST_V1]
                return early, Setting(
                    "engine",
                    early.key,
                    "log",
                    f"version {facts.version} running its V1 engine (the log says so): the earliest V1 rules kvcalc holds",
                )
            return e, Setting("engine", e.key, "log", f"version {facts.version}")
    fm = facts.formats
    v1 = any(f.startswith("V1") or f.startswith("0.") and "or later" in f for f in fm)
    if "0.27 or later" in fm:
        key, why = "vllm@0.33", "one line of KV cache size and concurrency (0.27 or later)"
    elif "0.18 or 0.19" in fm:
        key, why = "vllm@0.17", "a CUDA-graph estimate that 'will be enabled by default' (0.18 or 0.19)"
    elif "0.18 or later" in fm:
        key, why = ("vllm@0.21", "0.21 to 0.26") if facts.kv_tokens is not None else ("vllm@0.33", "0.21 or later")
        why = f"CUDA-graph estimate lines (0.18 or later; read as {why})"
    elif v1:
        key, why = "vllm@0.11", "V1 lines (0.8 or later; read with 0.11's rules)"
    elif facts.v1_engine and not facts.v0_engine:
        key, why = EARLIEST_V1, "V1 engine lines in formats before 0.8 (VLLM_USE_V1=1 from 0.7.0; the earliest V1 rules)"
    elif any("V0" in f for f in fm):
        key, why = "vllm@0.6", "V0 lines (0.2 to 0.7; read with 0.6's rules)"
    else:
        e = ENGINES["vllm"]
        return e, Setting("engine", e.key, "default", "nothing in the log names the release: the current rules")
    return ENGINES[key], Setting("engine", key, "guess", f"the line formats: {why}")


# ---- the pool the log's own figures give --------------------------------------------------------


def cudagraph_estimate_applied(facts: LogFacts, eng: Engine) -> bool:
    """Whether vLLM subtracted the CUDA-graph estimate the log prints before sizing the pool: as the
    log says where it says (0.18 and 0.19 log the estimate with it off by default, unless
    VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1), else as the release does (on from 0.20.0)."""
    if facts.cudagraph_estimate_gib is None:
        return False
    if facts.cudagraph_estimate_applied is not None:
        return facts.cudagraph_estimate_applied
    return eng.cudagraph == "estimate"


def _components_pool(facts: LogFacts, util: float, eng: Engine) -> tuple[int, dict[str, float]] | None:
    """vLLM's budget from the figures the log breaks it down into: util x total less the measured
    peak (0.6.4's one line: peak_torch_memory + non_torch_memory; 0.6.5 to 0.8: weights +
    activation peak + non-torch) and, where it was applied, the CUDA-graph estimate. None if the log
    lacks one."""
    if facts.total_gib is None:
        return None
    usable = facts.total_gib * util
    if facts.peak_torch_gib is not None and facts.non_torch_gib is not None:
        terms = {"peak_torch": facts.peak_torch_gib, "non_torch": facts.non_torch_gib}
    elif None not in (facts.weights_gib, facts.activation_gib, facts.non_torch_gib):
        assert facts.weights_gib is not None and facts.activation_gib is not None and facts.non_torch_gib is not None
        # The weights of the same budget line as the other terms, where the log prints one (each
        # pipeline stage loads its own layers); the load line's four decimals where they agree to the
        # budget line's rounding.
        w = facts.weights_gib
        if facts.breakdown_weights_gib is not None and abs(facts.breakdown_weights_gib - w) > 0.005:
            w = facts.breakdown_weights_gib
        terms = {"weights": w, "activation": facts.activation_gib, "non_torch": facts.non_torch_gib}
    else:
        return None
    if facts.cudagraph_estimate_gib is not None and cudagraph_estimate_applied(facts, eng):
        terms["cudagraph"] = facts.cudagraph_estimate_gib
    pool = usable - sum(terms.values())
    return round(pool * GiB), {"total": facts.total_gib, "util": util, "usable": usable, **terms}


def _pool_for_tokens(eng: Engine, fp: KVFootprint, tokens: int, seq: int, mml: int) -> int:
    """The smallest pool, in whole blocks, whose logged token count reaches ``tokens`` under the
    engine's rule (bisection: the count grows with the pool)."""
    unit = min(fp.bytes_per_block(s) for s in range(len(fp.layouts))) if fp.alloc.block_size else max(fp.per_token, 1)
    lo, hi = 0, 1
    while (capacity(eng, fp, hi * unit, seq, mml).tokens or 0) < tokens:
        hi *= 2
        if hi > 2**50:
            break
    while lo < hi:
        mid = (lo + hi) // 2
        if (capacity(eng, fp, mid * unit, seq, mml).tokens or 0) >= tokens:
            hi = mid
        else:
            lo = mid + 1
    return hi * unit


def _binding_available_gib(facts: LogFacts, pp: int) -> float | None:
    """The available KV memory the engine sized its cache to. Without pipeline parallelism every rank
    holds the same layers and vLLM takes the least memory over them (vllm/v1/core/kv_cache_utils.py
    get_kv_cache_configs, 0.11.0 to 0.33.0; V0's executor the fewest blocks): the smallest printed.
    With PP each stage's memory is for its own layers, so the lowest rank's stays (LogFacts)."""
    vals = facts.rank_values.get("available_kv_gib")
    if pp == 1 and vals:
        return min(vals)
    return facts.available_kv_gib


def _vllm_pool(
    facts: LogFacts, eng: Engine, fp: KVFootprint, util: float, seq: int, mml: int, pp: int = 1
) -> tuple[int, str, dict[str, float] | None] | None:
    avail = _binding_available_gib(facts, pp)
    comp = _components_pool(facts, util, eng)
    # The breakdown is one rank's (the lowest's); where another rank printed less KV memory, that rank
    # binds (without PP), and its figure is the pool.
    binding_elsewhere = avail is not None and facts.available_kv_gib is not None and avail < facts.available_kv_gib
    if comp is not None and not binding_elsewhere:
        return comp[0], "components", comp[1]
    if avail is not None:
        return round(avail * GiB), "available", None
    bs = fp.alloc.block_size or 16
    # The stage with the most bytes a block binds (capacity: num_blocks = min over the stages of pool // its
    # bytes a block, the engine's minimum over its workers), so a logged block count is its pool.
    bpb = max(fp.bytes_per_block(s) for s in range(len(fp.layouts)))
    if facts.gpu_blocks is not None:
        return facts.gpu_blocks * bpb, "blocks", None
    if facts.error_kv_tokens is not None:
        return facts.error_kv_tokens // bs * bpb, "error_tokens", None
    if facts.kv_tokens is not None:
        return _pool_for_tokens(eng, fp, facts.kv_tokens, seq, mml), "tokens", None
    return None


def _sglang_pool(facts: LogFacts, util: float, per_token: int) -> tuple[int, str, dict[str, float] | None] | None:
    """SGLang: pool = memory free after loading - (1 - mem_fraction_static) x memory free before
    (srt/mem_cache/kv_cache_configurator.py _profile_available_bytes, 0.5.23; model_runner.py
    profile_max_num_token, 0.4.6); else the K and V sizes it allocated."""
    if facts.avail_after_load_gib is not None and facts.avail_before_load_gib is not None:
        rest = facts.avail_after_load_gib - facts.avail_before_load_gib * (1 - util)
        return (
            round(rest * GiB),
            "components",
            {
                "before": facts.avail_before_load_gib,
                "after": facts.avail_after_load_gib,
                "util": util,
            },
        )
    if facts.k_size_gib is not None and facts.v_size_gib is not None:
        return round((facts.k_size_gib + facts.v_size_gib) * GiB), "kv_sizes", None
    if facts.kv_size_gib is not None:
        return round(facts.kv_size_gib * GiB), "kv_sizes", None
    if facts.max_total_num_tokens is not None:
        return facts.max_total_num_tokens * per_token, "tokens", None
    return None


def _trt_pool(facts: LogFacts, fp: KVFootprint, util: float) -> tuple[int, str, dict[str, float] | None] | None:
    if facts.trt_peak_gib is not None and facts.trt_total_gib is not None and facts.trt_fraction is not None:
        # TensorRT-LLM 1.x (tensorrt_llm/_torch/pyexecutor/_util.py, KvCacheCreator): the fraction of what
        # the profile left free, with the dry run's KV added back: fraction x (total - peak + dry-run KV).
        free = facts.trt_total_gib - facts.trt_peak_gib + (facts.trt_tmp_kv_gib or 0.0)
        pool = int(facts.trt_fraction * free * GiB)
        parts = {"total": facts.trt_total_gib, "peak": facts.trt_peak_gib, "tmp": facts.trt_tmp_kv_gib or 0.0}
        return pool, "trt_components", parts | {"fraction": facts.trt_fraction}
    if facts.trt_free_gib is not None and facts.trt_peak_gib is None:
        # TensorRT-LLM's C++ KV cache manager (the TensorRT engine path): the fraction of the memory free once the
        # engine is loaded, the device's free memory plus its memory pool's, as that line logs it
        # (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp BaseKVCacheManager::calculateFreeMemBytes, NVIDIA/
        # TensorRT-LLM@b35ac1b: freePrimaryMemBytes = finalFreeMem x freeMemFraction).
        pool = int(Fraction(str(util)) * round(facts.trt_free_gib * GiB))
        return pool, "trt_free", {"available": facts.trt_free_gib, "fraction": util}
    if facts.trt_kv_bytes is not None:
        return facts.trt_kv_bytes, "trt_bytes", None
    if facts.trt_tokens is not None:
        return facts.trt_tokens * fp.per_token, "tokens", None
    return None


# ---- the recomputation ------------------------------------------------------------------------


def _settings(
    facts: LogFacts, model: ModelSpec, eng: Engine, eng_setting: Setting, given: Given
) -> tuple[list[Setting], list[str]]:
    out = [eng_setting]
    warnings: list[str] = []

    def pick(key: str, log_value: Any, option: Any, flag: str, default: Any, default_detail: str) -> None:
        if log_value is not None:
            out.append(Setting(key, log_value, "log", facts.lines.get(key, "")[:160]))
            if option is not None and option != log_value:
                warnings.append(f"the log says {key} {log_value}; {flag} {option} not used")
        elif option is not None:
            out.append(Setting(key, option, "option", flag))
        else:
            out.append(Setting(key, default, "default", default_detail))

    # Figures no engine prints: a corrupted or hand-edited line, refused rather than carried into the pool.
    for key, value, top, accepted in (
        ("util", facts.util, 1.0, "a memory fraction above 0 and at most 1"),
        ("total_gib", facts.total_gib, 100_000.0, "a device's memory in GiB, above 0 and at most 100,000"),
    ):
        if value is not None and not 0 < value <= top:
            line = facts.lines.get(key, "")[:120]
            raise KvcalcError(f"the log's {key} {value:g} is out of range", f"log line {line!r}", accepted)
    if facts.trt_free_gib is not None and facts.trt_free_total_gib is not None:
        # TensorRT-LLM checks it too: "Free memory cannot exceed total memory" (kvCacheManager.cpp).
        total, free = facts.trt_free_total_gib, facts.trt_free_gib
        if not (0 < total <= 100_000 and 0 <= free <= total):
            line = facts.lines.get("trt_free", "")[:120]
            raise KvcalcError(
                f"the log's available {free:g} GiB of total {total:g} GiB is out of range",
                f"log line {line!r}",
                "a total above 0 and at most 100,000 GiB, and available memory from 0 to that total",
            )
    mml_log = facts.max_model_len
    dp_log = facts.dp_size if facts.dp_attention and facts.dp_size and facts.dp_size > 1 else None
    if dp_log is not None and facts.tp and facts.tp % dp_log == 0:
        # SGLang's DP attention: tp_size GPUs in dp_size attention ranks of tp_size / dp_size each (kvcalc's --tp and
        # --dp; dp_attention.py compute_dp_attention_world_info: attn_tp_size = tp_size // dp_size).
        line = facts.lines.get("dp_attention", "")[:160]
        attn_tp = facts.tp // dp_log
        out.append(Setting("tp", attn_tp, "log", f"tp_size {facts.tp} / dp_size {dp_log} with enable_dp_attention: {line}"))
        out.append(Setting("dp", dp_log, "log", f"dp_size {dp_log} with enable_dp_attention"))
        for key, value, option, flag in (("tp", attn_tp, given.tp, "--tp"), ("dp", dp_log, given.dp, "--dp")):
            if option is not None and option != value and not (key == "dp" and option == 1):
                warnings.append(f"the log says {key} {value} (DP attention); {flag} {option} not used")
    else:
        pick("tp", facts.tp, given.tp, "--tp", 1, "not in the log; pass --tp")
    pick("pp", facts.pp, given.pp, "--pp", 1, "not in the log; pass --pp")
    pick(
        "max_model_len",
        mml_log,
        given.max_model_len,
        "--seq",
        model.max_position_embeddings,
        "not in the log: the model's max_position_embeddings, vLLM's default; pass --seq",
    )
    kv_log = facts.kv_cache_dtype if facts.kv_cache_dtype and facts.kv_cache_dtype.lower() not in ("auto", "none") else None
    # kv_cache_dtype auto is the model's dtype (vLLM 0.19.0 utils/torch_utils.py,
    # kv_cache_dtype_str_to_dtype: "auto" returns model_config.dtype), float32 included.
    auto = {"float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}.get(facts.dtype or "", "bf16")
    if kv_log is None and facts.kv_cache_dtype is not None:
        out.append(Setting("kv_dtype", auto, "log", f"kv_cache_dtype auto: the model dtype ({facts.dtype or 'bfloat16'})"))
        if given.kv_dtype is not None and given.kv_dtype != auto:
            warnings.append(f"the log says kv_cache_dtype auto ({auto}); --kv-dtype {given.kv_dtype} not used")
    else:
        pick("kv_dtype", kv_log, given.kv_dtype, "--kv-dtype", auto, "not in the log: the model dtype (auto); pass --kv-dtype")
    if eng.mem_fraction_rule != "none":
        util_default: Any = None
        util_detail = "not in the log: SGLang's default for this GPU, TP and PP"
    else:
        util_default = eng.default_util
        util_detail = f"not in the log: {eng.label}'s default; pass --util"
    pick("util", facts.util, given.util, "--util", util_default, util_detail)
    for key, flag in (
        ("block_size", "--block-size"),
        ("max_num_batched_tokens", "--max-num-batched-tokens"),
        ("max_num_seqs", "--max-num-seqs"),
    ):
        log_value, option = getattr(facts, key, None), getattr(given, key)
        if log_value is not None or option is not None:
            pick(key, log_value, option, flag, None, "")
    if facts.enforce_eager or given.enforce_eager:
        pick("enforce_eager", facts.enforce_eager, given.enforce_eager, "--enforce-eager", None, "")
    # Prefix caching moves only a hybrid model's state pages (FitInputs.prefix_caching): read where it can.
    if model.has_state and (facts.prefix_caching is not None or given.prefix_caching is not None):
        pick("prefix_caching", facts.prefix_caching, given.prefix_caching, "--prefix-caching", None, "")
    method = facts.quantization if facts.quantization not in (None, "None") else None
    logged = logged_weight_dtype(method, facts.quant_scheme) if model.quantization is None else None
    if given.weight_dtype:
        out.append(Setting("weight_dtype", given.weight_dtype, "option", "--weight-dtype"))
        if logged is not None and logged != given.weight_dtype:
            # The log's method names a format only by kvcalc's reading of it (an 8-bit GPTQ reads as int4), so
            # the flag stands, unlike a setting the log states outright; the difference is said.
            warnings.append(
                f"the log says quantization={method}, which kvcalc reads as {logged}; --weight-dtype {given.weight_dtype} used"
            )
    elif logged is not None:
        # The log says the checkpoint is quantized where the model's spec is 16-bit: its linear layers as
        # the method stores them, the rest 16-bit, as --weight-dtype lays it out.
        scheme = f" ({facts.quant_scheme})" if method == "compressed-tensors" and facts.quant_scheme else ""
        out.append(
            Setting(
                "weight_dtype",
                logged,
                "log",
                f"quantization={method}{scheme}: the linear layers as {logged}, a guessed layout "
                "(the checkpoint's config.json gives its own)",
            )
        )
    elif method is not None and model.quantization is None:
        # A method kvcalc does not lay out (bitsandbytes, GGUF, an experts-only or unread scheme): say so
        # rather than count a quantized checkpoint at the spec's 16 bits without a word.
        scheme = f" ({facts.quant_scheme})" if facts.quant_scheme else ""
        warnings.append(
            f"the log says quantization={method}{scheme}, a format kvcalc does not lay out: the weights "
            "are counted at the spec's 16 bits; pass the checkpoint's config.json as --model, --weight-dtype or --weights"
        )
    elif auto == "fp32" and model.quantization is None:
        # vLLM builds the model under set_default_torch_dtype(model_config.dtype) (0.19.0
        # model_executor/model_loader/base_loader.py), so --dtype float32 loads a 16-bit
        # checkpoint's parameters as 32-bit ones.
        out.append(Setting("weight_dtype", "fp32", "log", "dtype float32: the parameters loaded as 32-bit"))
    return out, warnings


def _tp_told(cell: float, per_tok: int, model: ModelSpec, said: dict[str, Setting], tp: int) -> str | None:
    """Where the log names no TP: the warning that its per-rank KV bytes a token (``cell``), 1/n of the
    model's at the TP assumed (``per_tok``), say it ran at TP n (n of 2 to 16, within 2%), or, where the
    KV cache's dtype was assumed 16-bit too, at TP n/2 with an 8-bit one. Only where every layer keeps
    every token in full attention (a window's or a state's bytes are not counted a token alike by engine
    and kvcalc; an MLA latent is whole on every rank, so its bytes do not tell TP). ``said``: the
    settings by key, with where each came from."""
    if said["tp"].source != "default" or cell <= 0 or any(getattr(k, "kind", "") != "full" for k in model.kinds()):
        return None
    ratio = per_tok / cell
    n = round(ratio)
    if n not in (2, 4, 8, 16) or abs(ratio - n) > 0.02 * n:
        return None
    told = f"the log's {cell:,.0f} B a token are 1/{n} of {model.name}'s {per_tok:,} B at TP {tp}: the log ran at TP {n}"
    if said["kv_dtype"].source == "default" and kv_dtype(str(said["kv_dtype"].value)).bits == 16:
        return f"{told}, or at TP {n // 2} with an 8-bit KV cache (the log names neither); pass --tp and --kv-dtype"
    return f"{told}; pass --tp {n}"


def explain(
    facts: LogFacts,
    model: ModelSpec,
    gpu: GPUSpec,
    given: Given | None = None,
    gpu_setting: Setting | None = None,
    model_setting: Setting | None = None,
    index: int = 1,
) -> ExplainReport:
    """Recompute one start-up's figures from the log's own figures and from kvcalc's estimates."""
    given = given or Given()
    eng, eng_setting = choose_engine(facts, given.engine)
    settings, warnings = _settings(facts, model, eng, eng_setting, given)
    settings.insert(1, model_setting or Setting("model", model.name, "option", "--model"))
    settings.insert(2, gpu_setting or Setting("gpu", gpu.name, "option", "--gpu"))
    said = {x.key: x for x in settings}
    s = {k: x.value for k, x in said.items()}
    tp, pp, mml = int(s["tp"]), int(s["pp"]), int(s["max_model_len"])
    kv = kv_dtype(str(s["kv_dtype"]), "kv_cache_dtype")
    total = round(facts.total_gib * GiB) if facts.total_gib else None
    auto = bool(facts.auto_max_len) and eng.auto_max_model_len
    inp = FitInputs(
        seq=mml,
        engine=eng,
        tp=tp,
        pp=pp,
        dp=int(s.get("dp", given.dp)),
        ep=given.ep,
        kv_dtype=kv,
        weight_dtype=s.get("weight_dtype"),
        gpu_memory=total,
        util=s["util"],
        block_size=s.get("block_size") if eng.block_size else None,
        max_num_batched_tokens=s.get("max_num_batched_tokens"),
        max_model_len=None if auto else mml,
        max_num_seqs=s.get("max_num_seqs"),
        sampler=facts.sampler if eng.sampler_impl else None,
        enforce_eager=bool(s.get("enforce_eager")),
        prefix_caching=s.get("prefix_caching", True) is not False,
        skip_mm_profiling=facts.skip_mm_profiling and eng.non_torch_rule == "v1",
        max_model_len_auto=auto,
        # A pool given as kv_cache_memory_bytes is the pool, whatever the budget would say.
        kv_cache_memory=round(facts.kv_cache_memory_gib * GiB)
        if facts.kv_cache_memory_gib and eng.kv_cache_memory_flag
        else None,
    )
    est = fit(model, gpu, inp)
    fp = footprint(model, gpu, inp)
    per_tok = fp.per_token
    util = est.util if est.util is not None else (eng.default_util or 0.9)
    if s["util"] is None:
        settings = [Setting("util", util, "default", x.detail) if x.key == "util" else x for x in settings]

    notes: list[Note] = []
    if facts.rank_values:
        notes.append(Note("ranks_differ", {"ranks": dict(facts.rank_values), "pp": pp}))
    if facts.ray_deduplicated:
        notes.append(Note("ray_dedup", {}))
    rows: list[Comparison] = []
    if eng.name == "trtllm":
        got = _trt_pool(facts, fp, util)
    elif eng.name == "sglang":
        got = _sglang_pool(facts, util, per_tok)
    else:
        got = _vllm_pool(facts, eng, fp, util, mml, mml, pp)
    cap: Capacity | None = None
    from_log: PoolFigures | None = None
    if got is not None:
        pool, basis, parts = got
        cap = capacity(eng, fp, pool, mml, mml)
        from_log = PoolFigures(pool, cap.blocks, cap.tokens, cap.concurrency, basis)
        if parts is not None and basis == "components":
            notes.append(Note("components_" + eng.name, parts))
    pool_line = next((b for b in est.budget if b.key == "pool"), None)
    estimate = PoolFigures(
        est.kv_pool_bytes,
        est.kv_pool_blocks,
        est.kv_pool_tokens,
        est.concurrency,
        "estimate",
        pool_line.low if pool_line is not None else None,
        pool_line.high if pool_line is not None else None,
    )
    basis = from_log.basis if from_log else ""

    def est_line(key: str) -> int | None:
        return next((b.bytes for b in est.budget if b.key == key), None)

    # Memory terms the log measured: beside kvcalc's estimate of each.
    if facts.weights_gib is not None:
        rows.append(_row("weights", "bytes", facts.weights_gib * GiB, None, est.weight_bytes, taken=True))
    if facts.peak_torch_gib is not None:
        w_act = est.weight_bytes + (est_line("activation") or 0)
        rows.append(_row("peak_torch", "bytes", facts.peak_torch_gib * GiB, None, w_act, taken=True))
    if facts.activation_gib is not None:
        rows.append(_row("activation", "bytes", facts.activation_gib * GiB, None, est_line("activation") or 0, taken=True))
    if facts.non_torch_gib is not None:
        rows.append(_row("non_torch", "bytes", facts.non_torch_gib * GiB, None, est_line("non_torch") or 0, taken=True))
    if facts.cudagraph_estimate_gib is not None and cudagraph_estimate_applied(facts, eng):
        rows.append(
            _row("cudagraph_estimate", "bytes", facts.cudagraph_estimate_gib * GiB, None, est_line("cudagraph") or 0, taken=True)
        )

    if eng.name == "vllm":
        avail = _binding_available_gib(facts, pp) if basis != "components" else facts.available_kv_gib
        if avail is not None:
            log_b = avail * GiB
            recomputed = from_log.kv_pool_bytes if from_log and basis == "components" else None
            rows.append(_row("available_kv", "bytes", log_b, recomputed, est.kv_pool_bytes, taken=basis == "available"))
        if facts.gpu_blocks is not None and cap is not None:
            rows.append(_row("gpu_blocks", "blocks", facts.gpu_blocks, cap.blocks, est.kv_pool_blocks, taken=basis == "blocks"))
        if facts.kv_tokens is not None and cap is not None:
            rows.append(_row("kv_tokens", "tokens", facts.kv_tokens, cap.tokens, est.kv_pool_tokens, taken=basis == "tokens"))
            # V1's available memory and token count are one rank's: their ratio is its KV bytes a token.
            if (
                avail is not None
                and facts.kv_tokens
                and (told := _tp_told(avail * GiB / facts.kv_tokens, per_tok, model, said, tp))
            ):
                warnings.append(told)
        if facts.error_kv_tokens is not None and cap is not None:
            bs = fp.alloc.block_size or 16
            rows.append(
                _row(
                    "max_kv_tokens",
                    "tokens",
                    facts.error_kv_tokens,
                    (cap.blocks or 0) * bs,
                    (est.kv_pool_blocks or 0) * bs,
                    taken=basis == "error_tokens",
                )
            )
            notes.append(Note("v0_refused", {"tokens": facts.error_kv_tokens, "max_model_len": mml}))
        if facts.needed_kv_gib is not None:
            need = int(start_check_footprint(eng, fp).request_bytes(mml))
            rows.append(_row("needed_kv", "bytes", facts.needed_kv_gib * GiB, need, need))
            notes.append(
                Note("v1_refused", {"needed": facts.needed_kv_gib * GiB, "available": (facts.available_kv_gib or 0) * GiB})
            )
        if facts.estimated_max_len is not None and from_log is not None:
            # The start check's estimate: the longest max_model_len whose one request fits.
            longest = start_check_footprint(eng, fp).longest_request(max(from_log.kv_pool_bytes, 0), cap=mml + 1)
            longest = mml if longest is None else longest  # None: max_model_len itself fits
            rows.append(_row("estimated_max_len", "tokens", facts.estimated_max_len, longest, est.max_model_len_accepted))
        if facts.auto_max_len is not None and from_log is not None:
            # --max-model-len auto: the length the start check's search settled on.
            ctx = model.max_position_embeddings
            fitted = start_check_footprint(eng, fp).longest_request(max(from_log.kv_pool_bytes, 0), cap=ctx + 1)
            fitted = ctx if fitted is None or fitted > ctx else fitted  # None: the whole context fits
            rows.append(_row("auto_max_len", "tokens", facts.auto_max_len, fitted, est.max_model_len_accepted))
        if facts.concurrency is not None and cap is not None:
            rows.append(
                _row(
                    "concurrency",
                    "ratio",
                    facts.concurrency,
                    cap.concurrency,
                    est.concurrency,
                    length=facts.concurrency_len or mml,
                )
            )
            notes.append(Note("concurrency_meaning", {"concurrency": facts.concurrency, "length": facts.concurrency_len or mml}))
        if basis == "available" and facts.weights_gib is not None and facts.activation_gib is None:
            # Current vLLM logs only the result: what else it measured is util x total - weights - KV.
            tot = total if total is not None else gpu.memory_runtime_bytes
            other = util * tot - facts.weights_gib * GiB - (facts.available_kv_gib or 0) * GiB
            notes.append(
                Note(
                    "other_memory",
                    {"util": util, "total_bytes": tot, "other_bytes": other, "total_from_spec": total is None, "gpu": gpu.name},
                )
            )
        if facts.available_kv_gib is not None and facts.available_kv_gib <= 0:
            notes.append(Note("no_kv_memory", {"available": facts.available_kv_gib * GiB}))
        cg_applied = cudagraph_estimate_applied(facts, eng)
        if facts.cudagraph_estimate_gib is not None and not cg_applied:
            notes.append(Note("cudagraph_estimate_unused", {"bytes": facts.cudagraph_estimate_gib * GiB}))
        if facts.cudagraph_gib is not None and cg_applied:
            assert facts.cudagraph_estimate_gib is not None
            notes.append(
                Note(
                    "cudagraph_within_estimate",
                    {"bytes": facts.cudagraph_gib * GiB, "estimate": facts.cudagraph_estimate_gib * GiB},
                )
            )
        elif facts.cudagraph_gib is not None:
            notes.append(Note("cudagraph_after_sizing", {"bytes": facts.cudagraph_gib * GiB}))
        if tp * pp > 1 and from_log is not None:
            notes.append(Note("min_over_ranks", {"ranks": tp * pp}))
        if "Loading model weights took" in facts.lines.get("weights_gib", ""):
            notes.append(Note("vllm_gb_is_gib"))
    elif eng.name == "sglang":
        kv_gib = (
            facts.k_size_gib + facts.v_size_gib
            if facts.k_size_gib is not None and facts.v_size_gib is not None
            else facts.kv_size_gib
        )
        if kv_gib is not None and facts.max_total_num_tokens:
            cell = kv_gib * GiB / facts.max_total_num_tokens
            rows.append(_row("kv_bytes_per_token", "bytes_per_token", cell, per_tok, per_tok))
            # SGLang's K and V sizes are one rank's.
            if told := _tp_told(cell, per_tok, model, said, tp):
                warnings.append(told)
        if facts.max_total_num_tokens is not None:
            rows.append(
                _row(
                    "max_total_num_tokens",
                    "tokens",
                    facts.max_total_num_tokens,
                    cap.tokens if cap is not None else None,
                    est.kv_pool_tokens,
                    taken=basis == "tokens",
                )
            )
            notes.append(
                Note(
                    "sglang_requests",
                    {"tokens": facts.max_total_num_tokens, "seq": mml, "requests": facts.max_total_num_tokens // mml},
                )
            )
        notes.append(Note("sglang_gb_is_gib"))
    else:
        if facts.trt_kv_gib is not None:
            rows.append(
                _row(
                    "trt_kv_gib",
                    "bytes",
                    facts.trt_kv_gib * GiB,
                    from_log.kv_pool_bytes if from_log and basis in ("trt_components", "trt_free") else None,
                    est.kv_pool_bytes,
                )
            )
        if len(facts.trt_allocations) > 1:
            gib, tok = facts.trt_allocations[0]
            notes.append(Note("trt_dry_run", {"gib": gib, "tokens": tok, "lines": len(facts.trt_allocations)}))
        elif facts.trt_allocations and facts.trt_peak_gib is None and facts.trt_free_gib is None:
            notes.append(Note("trt_maybe_dry_run", {"tokens": facts.trt_allocations[0][1]}))
        if facts.trt_kv_bytes is not None:
            rows.append(_row("trt_kv_bytes", "bytes", facts.trt_kv_bytes, None, est.kv_pool_bytes, taken=True))
        if facts.trt_tokens is not None:
            tokens_from_log = cap.tokens if cap else None
            if from_log is not None and facts.trt_kv_per_token and fp.alloc.block_size:
                # TensorRT-LLM 1.x counts tokens as the pool over its logged bytes per token (every layer),
                # rounded up to whole blocks (KvCacheCreator).
                bs = fp.alloc.block_size
                tokens_from_log = -(-(from_log.kv_pool_bytes // facts.trt_kv_per_token) // bs) * bs
            rows.append(
                _row(
                    "trt_tokens",
                    "tokens",
                    facts.trt_tokens,
                    tokens_from_log,
                    est.kv_pool_tokens,
                    taken=basis == "tokens",
                )
            )
        notes.append(Note("trt_pool", {"block_size": fp.alloc.block_size, "per_token": per_tok}))
    device = total if total is not None else gpu.memory_runtime_bytes
    if said["gpu"].source in ("default", "guess") and total is None and est.weight_bytes > device:
        # The GPU was assumed and the log gives no device total to check it by: weights that alone
        # exceed it say the log ran elsewhere (a larger GPU, or more of them).
        warnings.append(
            f"{model.name}'s weights alone take {est.weight_bytes / GiB:,.2f} GiB a GPU at TP {tp} and PP {pp}, more "
            f"than the {device / GiB:,.2f} GiB of the {gpu.name} assumed: the log ran on another GPU"
            + (
                "; pass --gpu"
                if said["tp"].source != "default"
                else f", or at more than TP {tp} (the log does not say); pass --gpu or --tp"
            )
        )
    if from_log is not None and from_log.kv_pool_bytes > device:
        warnings.append(
            f"the log's figures put {from_log.kv_pool_bytes / GiB:,.2f} GiB of KV on each GPU, more than the "
            f"{device / GiB:,.2f} GiB of the {gpu.name} assumed: the log was not {model.name} at TP {tp} on that GPU"
        )
    if model.vision_params:
        modelled = encoder_modelled(model, eng.vision_profile)
        notes.append(
            Note(
                "multimodal",
                {"vision_params": model.vision_params, "encoder_modelled": modelled, "skipped": inp.skip_mm_profiling},
            )
        )
    if facts.encoder_budget is not None and not inp.skip_mm_profiling:
        # The log's encoder profile beside the one kvcalc's rules for this release give.
        enc = engine_encoder_profile(model, eng, tp, batched_tokens(model, gpu, inp), inp.model_len)
        logged = (facts.encoder_budget, facts.encoder_items, facts.encoder_modality)
        ours = (enc.budget, enc.items, enc.modality) if enc is not None else None
        notes.append(Note("encoder_profile", {"log": list(logged), "kvcalc": list(ours) if ours else None}))
        if ours is not None and ours != logged:
            warnings.append(
                f"the log profiled {facts.encoder_items} {facts.encoder_modality} item(s) under a "
                f"{facts.encoder_budget:,}-token encoder budget, where {eng.label}'s rules give {ours[1]} "
                f"{ours[2]} item(s) under {ours[0]:,}: kvcalc's encoder estimate is not of the batch this "
                "engine ran (another release, --limit-mm-per-prompt or --mm-processor-kwargs)"
            )
    if eng_setting.source in ("guess", "default"):
        notes.append(Note("engine_basis", {"engine": eng.title, "detail": eng_setting.detail}))
    if facts.engine == "vllm" and given.engine is None and facts.version is None and eng_setting.source == "default":
        warnings.append(
            "the log names no vLLM release and its lines do not tell one: read with the current rules; pass --engine vllm@X"
        )
    log = {k: v for k, v in vars(facts).items() if k != "lines" and v not in (None, [])}
    return ExplainReport(
        index=index,
        engine=eng.key,
        engine_label=eng.title,
        model=model.name,
        gpu=gpu.name,
        tp=tp,
        pp=pp,
        dp=int(s.get("dp", given.dp)),
        max_model_len=mml,
        kv_dtype=kv.name,
        block_size=fp.alloc.block_size,
        util=util,
        kv_bytes_per_token=per_tok,
        settings=settings,
        log=log,
        from_log=from_log,
        estimate=estimate,
        weight_bytes_estimate=est.weight_bytes,
        rows=rows,
        notes=notes,
        warnings=warnings + [w for w in est.warnings if "exceeds the model's max context" not in w],
    )
