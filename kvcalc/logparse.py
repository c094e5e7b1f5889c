"""Reading serving-engine start-up logs (vLLM 0.6 to current, SGLang) and recomputing their
figures with kvcalc's engine. Pure: text in, facts and comparison rows out.

Units, as the engines print them: vLLM's "GiB" is 2^30 B; vLLM 0.5/0.6 printed "Loading model
weights took X GB" but computed X in GiB; SGLang prints "GB" for values it divides by 2^30.
kvcalc reads all of them as GiB and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kvcalc.errors import KvcalcError

GiB = 2**30
NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"


def _num(s: str) -> float:
    return float(s.replace(",", ""))


@dataclass
class LogFacts:
    engine: str | None = None
    version: str | None = None
    model: str | None = None
    max_model_len: int | None = None
    tp: int | None = None
    pp: int | None = None
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    block_size: int | None = None
    util: float | None = None
    max_num_batched_tokens: int | None = None
    total_gib: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    activation_gib: float | None = None
    available_kv_gib: float | None = None
    kv_tokens: int | None = None
    gpu_blocks: int | None = None
    concurrency: float | None = None
    concurrency_len: int | None = None
    cudagraph_gib: float | None = None
    # SGLang
    max_total_num_tokens: int | None = None
    avail_after_load_gib: float | None = None
    k_size_gib: float | None = None
    v_size_gib: float | None = None
    lines: dict[str, str] = field(default_factory=dict)
    """The line each fact was read from (fact name -> line)."""


_PATTERNS: list[tuple[str, re.Pattern, str]] = [
    # (fact, pattern, how to read group 1)
    ("version", re.compile(r"(?:LLM engine|vLLM API server version|vllm version)\s*\(?v?([0-9]+\.[0-9]+(?:\.[0-9]+)?[^\s),]*)", re.I), "str"),
    ("model", re.compile(r"\bmodel='([^']+)'"), "str"),
    ("model", re.compile(r"'model':\s*'([^']+)'"), "str"),
    ("model", re.compile(r"\bmodel_path='?([^',\s)]+)"), "str"),
    ("max_model_len", re.compile(r"\bmax_seq_len=([0-9]+)"), "int"),
    ("max_model_len", re.compile(r"\bmax_model_len['\"]?[=:]\s*([0-9]+)"), "int"),
    ("max_model_len", re.compile(r"\bcontext_len=([0-9]+)"), "int"),
    ("tp", re.compile(r"\btensor_parallel_size['\"]?[=:]\s*([0-9]+)"), "int"),
    ("tp", re.compile(r"\btp_size=([0-9]+)"), "int"),
    ("pp", re.compile(r"\bpipeline_parallel_size['\"]?[=:]\s*([0-9]+)"), "int"),
    ("dtype", re.compile(r"\bdtype=torch\.([a-z0-9]+)"), "str"),
    ("kv_cache_dtype", re.compile(r"\bkv_cache_dtype['\"]?[=:]\s*'?([A-Za-z0-9_]+)"), "str"),
    ("block_size", re.compile(r"\bblock_size['\"]?[=:]\s*([0-9]+)"), "int"),
    ("block_size", re.compile(r"\bpage_size=([0-9]+)"), "int"),
    ("util", re.compile(r"gpu_memory_utilization['\"]?\s*(?:[=:]|\()\s*([0-9.]+)"), "float"),
    ("util", re.compile(r"\bmem_fraction_static=([0-9.]+)"), "float"),
    ("max_num_batched_tokens", re.compile(r"\bmax_num_batched_tokens['\"]?[=:]\s*([0-9]+)"), "int"),
    ("total_gib", re.compile(r"total_gpu_memory \(" + NUM + r"\s*GiB\)"), "float"),
    ("weights_gib", re.compile(r"Model loading took " + NUM + r"\s*GiB"), "float"),
    ("weights_gib", re.compile(r"Loading model weights took " + NUM + r"\s*GB"), "float"),
    ("weights_gib", re.compile(r"model weights take " + NUM + r"\s*GiB"), "float"),
    ("weights_gib", re.compile(r"Load weight end\..*?mem usage=" + NUM + r"\s*GB"), "float"),
    ("avail_after_load_gib", re.compile(r"Load weight end\..*?avail mem=" + NUM + r"\s*GB"), "float"),
    ("non_torch_gib", re.compile(r"non_torch_memory takes " + NUM + r"\s*GiB"), "float"),
    ("activation_gib", re.compile(r"activation peak memory takes " + NUM + r"\s*GiB"), "float"),
    ("available_kv_gib", re.compile(r"Available KV cache memory: " + NUM + r"\s*GiB"), "float"),
    ("available_kv_gib", re.compile(r"reserved for KV Cache is " + NUM + r"\s*GiB"), "float"),
    ("kv_tokens", re.compile(r"GPU KV cache size: " + NUM + r" tokens"), "int"),
    ("gpu_blocks", re.compile(r"# (?:GPU|cuda|CUDA) blocks: " + NUM), "int"),
    ("concurrency", re.compile(r"Maximum concurrency for " + NUM + r" tokens per request: " + NUM + r"x"), "conc"),
    ("cudagraph_gib", re.compile(r"Graph capturing finished in [0-9.]+ secs?, took " + NUM + r"\s*GiB"), "float"),
    ("max_total_num_tokens", re.compile(r"max_total_num_tokens=" + NUM), "int"),
    ("kv_sizes", re.compile(r"KV Cache is allocated\. #tokens: " + NUM + r", K size: " + NUM + r" GB, V size: " + NUM + r" GB"), "kv"),
]


def parse_log(text: str) -> LogFacts:
    """Facts from a start-up log; lines not recognised are ignored. The first match of each fact wins,
    except that later figures of the same kind (a log of several restarts) replace earlier ones."""
    f = LogFacts()
    for line in text.splitlines():
        if len(line) > 100_000:
            line = line[:100_000]
        for fact, pat, kind in _PATTERNS:
            m = pat.search(line)
            if not m:
                continue
            try:
                if kind == "str":
                    val = m.group(1)
                elif kind == "int":
                    val = int(_num(m.group(1)))
                elif kind == "float":
                    val = _num(m.group(1))
                elif kind == "conc":
                    f.concurrency_len = int(_num(m.group(1)))
                    f.concurrency = _num(m.group(2))
                    f.lines["concurrency"] = line.strip()
                    continue
                else:  # kv sizes
                    f.max_total_num_tokens = f.max_total_num_tokens or int(_num(m.group(1)))
                    f.k_size_gib, f.v_size_gib = _num(m.group(2)), _num(m.group(3))
                    f.lines["kv_sizes"] = line.strip()
                    continue
            except (ValueError, OverflowError):
                continue
            if fact in ("model", "version", "max_model_len", "weights_gib") and getattr(f, fact) is not None:
                continue
            setattr(f, fact, val)
            f.lines[fact] = line.strip()
    if f.max_total_num_tokens is not None or f.avail_after_load_gib is not None or f.k_size_gib is not None:
        f.engine = "sglang"
    elif any(getattr(f, k) is not None for k in ("available_kv_gib", "kv_tokens", "gpu_blocks", "concurrency", "weights_gib")):
        f.engine = "vllm"
    if f.max_model_len is None and f.concurrency_len:
        f.max_model_len = f.concurrency_len
    if f.engine is None:
        raise KvcalcError("nothing recognisable in this log", "LOG",
                          "a vLLM (0.6 or later) or SGLang start-up log with lines such as 'Model loading took X GiB', "
                          "'Available KV cache memory', 'GPU KV cache size' or SGLang's 'max_total_num_tokens'")
    return f


@dataclass
class Row:
    quantity: str
    log: str
    kvcalc_measured: str
    kvcalc_estimated: str
    difference: str
    reason: str


@dataclass
class Explanation:
    engine: str
    model: str
    gpu: str
    seq: int
    rows: list[Row]
    notes: list[str]
    facts: LogFacts
    values: dict


def _gib(x: float | None) -> str:
    return "-" if x is None else f"{x:,.2f} GiB"


def _pct(a: float, b: float) -> str:
    if not b:
        return "-"
    return f"{(a - b) / b:+.1%}"


def explain(facts: LogFacts, model, gpu, engine_override: str | None = None) -> Explanation:
    """Recompute the log's figures: once from the log's own measured inputs (what must agree up to
    the log's rounding), once from kvcalc's estimates (what kvcalc predicts without a log)."""
    from kvcalc.engine.dtypes import kv_dtype
    from kvcalc.engine.memory import FitInputs, fit, per_token_all_layers, ENGINES

    eng = engine_override or facts.engine
    seq = facts.max_model_len or model.max_position_embeddings
    kv = facts.kv_cache_dtype if facts.kv_cache_dtype and facts.kv_cache_dtype.lower() not in ("auto", "none") else \
        ("fp16" if facts.dtype == "float16" else "bf16")
    kv = kv_dtype(kv, "kv_cache_dtype in the log").name
    tp, pp = facts.tp or 1, facts.pp or 1
    total = round(facts.total_gib * GiB) if facts.total_gib else None
    rows: list[Row] = []
    notes: list[str] = []
    values: dict = {"seq": seq, "kv_dtype": kv, "tp": tp, "pp": pp}
    common = dict(seq=seq, engine=eng, tp=tp, pp=pp, kv_dtype=kv, gpu_memory=total, util=facts.util,
                  block_size=facts.block_size if eng == "vllm" else None,
                  max_num_batched_tokens=facts.max_num_batched_tokens)
    est = fit(model, gpu, FitInputs(**common))
    values["estimate"] = est
    alloc = ENGINES[eng].allocation(est.block_size, facts.max_num_batched_tokens or 8192)
    per_tok, state = per_token_all_layers(model, kv, tp, pp, alloc)
    values["kv_bytes_per_token"] = per_tok

    if facts.weights_gib is not None:
        w_log = facts.weights_gib * GiB
        rows.append(Row("weights per GPU", _gib(facts.weights_gib), "(taken from the log)", _gib(est.weight_bytes / GiB),
                        _pct(est.weight_bytes, w_log),
                        "vLLM measured the loaded checkpoint; kvcalc counts parameters x dtype from the config "
                        "(extra tensors such as vision towers or unquantized layers make the difference)"))

    if eng == "vllm":
        util = facts.util if facts.util is not None else ENGINES["vllm"].default_util
        measured_inputs = dict(weights=round(facts.weights_gib * GiB) if facts.weights_gib is not None else None,
                               activation=round(facts.activation_gib * GiB) if facts.activation_gib is not None else None,
                               non_torch=round(facts.non_torch_gib * GiB) if facts.non_torch_gib is not None else None,
                               cudagraph=0)
        if facts.available_kv_gib is not None and facts.weights_gib is not None and facts.activation_gib is None:
            # Current vLLM logs only the result: everything else vLLM measured is util x total - weights - KV.
            tot = total if total is not None else gpu.memory_runtime_bytes
            other = util * tot - facts.weights_gib * GiB - facts.available_kv_gib * GiB
            measured_inputs["activation"] = max(round(other), 0)
            measured_inputs["non_torch"] = 0
            notes.append(f"this log does not break down activation and non-torch memory; together they are "
                         f"{util:g} x {tot / GiB:,.2f} GiB - weights - KV = {other / GiB:,.2f} GiB"
                         + ("" if total is not None else f" (taking the runtime total of {gpu.name}'s spec, {tot / GiB:,.2f} GiB)"))
        meas = fit(model, gpu, FitInputs(**{**common, **{k: v for k, v in measured_inputs.items() if v is not None}}))
        values["measured"] = meas
        if facts.activation_gib is not None:
            rows.append(Row("activation peak", _gib(facts.activation_gib), "(taken from the log)",
                            _gib(next((b.bytes for b in est.budget if b.key == "activation"), 0) / GiB), "",
                            "vLLM ran a profiling forward pass; kvcalc estimates the largest MLP and logits buffers"))
        if facts.non_torch_gib is not None:
            rows.append(Row("non-torch memory", _gib(facts.non_torch_gib), "(taken from the log)",
                            _gib(next((b.bytes for b in est.budget if b.key == "non_torch"), 0) / GiB), "",
                            "CUDA context, cuBLAS and NCCL buffers: measured by vLLM, a fixed estimate in kvcalc"))
        if facts.available_kv_gib is not None:
            rows.append(Row("available KV cache memory", _gib(facts.available_kv_gib), _gib(meas.kv_pool_bytes / GiB),
                            _gib(est.kv_pool_bytes / GiB), _pct(est.kv_pool_bytes, facts.available_kv_gib * GiB),
                            "the same budget (util x total - weights - activation - non-torch); with the log's inputs it "
                            "agrees to the log's rounding, the estimate differs by what vLLM measured"))
        log_tokens = facts.kv_tokens if facts.kv_tokens is not None else (
            facts.gpu_blocks * (facts.block_size or 16) if facts.gpu_blocks is not None else None)
        if log_tokens is not None:
            from_log = None
            if facts.available_kv_gib is not None and per_tok:
                bs = est.block_size or 16
                from_log = int(facts.available_kv_gib * GiB) // (bs * per_tok) * bs
            rows.append(Row("KV cache size, tokens", f"{log_tokens:,}",
                            f"{from_log:,}" if from_log is not None else f"{meas.kv_pool_tokens:,}",
                            f"{est.kv_pool_tokens:,}" if est.kv_pool_tokens is not None else "-",
                            _pct(est.kv_pool_tokens or 0, log_tokens),
                            f"pool / ({est.block_size} x {per_tok:,} B per token over all layers), in whole blocks; "
                            "the log's GiB has two decimals (+/- 5.4 MB)"))
            values["tokens_from_log_memory"] = from_log
        if facts.concurrency is not None:
            rows.append(Row(f"max concurrency at {facts.concurrency_len or seq:,} tokens", f"{facts.concurrency:.2f}x",
                            f"{meas.concurrency:.2f}x", f"{est.concurrency:.2f}x", _pct(est.concurrency, facts.concurrency),
                            "blocks / blocks per request of max_model_len tokens"))
        if facts.cudagraph_gib is not None:
            notes.append(f"CUDA graphs took {facts.cudagraph_gib:.2f} GiB after the KV cache was sized: they came out of the "
                         f"1 - gpu_memory_utilization headroom, not the KV pool")
        if any(k.kind == "state" for k in model.layer_kinds.values()):
            notes.append("hybrid model with state layers: vLLM pads their state pages to the attention page size, "
                         "which kvcalc does not model: its token count can differ by that padding")
    else:  # sglang
        if facts.max_total_num_tokens is not None:
            tok_est = est.kv_pool_tokens
            cell = None
            if facts.k_size_gib is not None and facts.v_size_gib is not None and facts.max_total_num_tokens:
                cell = (facts.k_size_gib + facts.v_size_gib) * GiB / facts.max_total_num_tokens
                rows.append(Row("KV bytes per token (all layers)", f"{cell:,.0f} B", f"{per_tok:,} B", f"{per_tok:,} B",
                                _pct(per_tok, cell), "(K size + V size) / #tokens from the log, against kvcalc's per-token bytes"))
            meas_tokens = None
            if facts.avail_after_load_gib is not None:
                tot = total if total is not None else gpu.memory_runtime_bytes
                frac = facts.util if facts.util is not None else ENGINES["sglang"].default_util
                rest = facts.avail_after_load_gib * GiB - tot * (1 - frac)
                meas_tokens = int(rest // per_tok) if per_tok else None
                notes.append(f"SGLang: pool = memory free after loading ({facts.avail_after_load_gib:.2f} GiB) - "
                             f"(1 - mem_fraction_static {frac:g}) x total ({tot / GiB:,.2f} GiB)")
            rows.append(Row("max_total_num_tokens", f"{facts.max_total_num_tokens:,}",
                            f"{meas_tokens:,}" if meas_tokens is not None else "-",
                            f"{tok_est:,}" if tok_est is not None else "-", _pct(tok_est or 0, facts.max_total_num_tokens),
                            "KV pool / bytes per token (SGLang pages are single tokens)"))
            if seq:
                notes.append(f"{facts.max_total_num_tokens:,} tokens hold {facts.max_total_num_tokens // seq:,} requests of the "
                             f"full {seq:,}-token context at once")
        notes.append("SGLang prints 'GB' for figures it divides by 2^30: kvcalc reads them as GiB")
    if eng == "vllm" and facts.concurrency is not None:
        n = facts.concurrency_len or seq
        notes.append(f"'Maximum concurrency {facts.concurrency:.2f}x' means: if every request ran to the full {n:,} tokens, "
                     f"{int(facts.concurrency)} could be in flight at once. Real requests are shorter, and vLLM admits "
                     f"requests while blocks are free, so more usually run together.")
    if "Loading model weights took" in facts.lines.get("weights_gib", ""):
        notes.append("vLLM before 0.7 printed 'Loading model weights took X GB' but computed X in GiB: read as GiB")
    values["facts"] = facts
    return Explanation(eng, model.name, gpu.name, seq, rows, notes, facts, values)
