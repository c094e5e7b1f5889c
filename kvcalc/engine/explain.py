"""A serving engine's start-up figures, recomputed: once from the log's own measured inputs (what
must agree up to the log's rounding), once from kvcalc's estimates (what kvcalc predicts without a
log). Numbers only; the sentences that explain them are the renderer's.

Units, as the engines print them: vLLM's "GiB" is 2^30 B; vLLM 0.5/0.6 printed "Loading model
weights took X GB" but computed X in GiB; SGLang prints "GB" for values it divides by 2^30.
kvcalc reads all of them as GiB and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kvcalc.engine.engines import ENGINES, engine as parse_engine
from kvcalc.engine.memory import FitInputs, FitReport, fit, footprint
from kvcalc.inputs.logs import LogFacts
from kvcalc.specs.dtypes import kv_dtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

GiB = 2**30


@dataclass(frozen=True)
class Comparison:
    """One figure of the log beside kvcalc's: ``from_log_inputs`` recomputed with what the engine
    measured (None where the log's figure is itself one of those inputs), ``estimate`` with kvcalc's
    own estimates. ``unit``: bytes, tokens, ratio or bytes_per_token."""

    key: str
    unit: str
    log: float | int
    from_log_inputs: float | int | None
    estimate: float | int | None
    relative_difference: float | None
    """(estimate - log) / log, where comparing them means something."""
    taken_from_log: bool = False
    length: int | None = None
    """For concurrency: the request length it is for."""


@dataclass(frozen=True)
class Note:
    """A fact worth saying about this log, with its numbers; ``key`` names the sentence."""

    key: str
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PoolFigures:
    kv_pool_bytes: int
    kv_pool_tokens: int | None
    concurrency: float
    weight_bytes: int | None = None


@dataclass(frozen=True)
class ExplainReport:
    engine: str
    model: str
    gpu: str
    max_model_len: int
    log: dict[str, Any]
    kvcalc_from_log_inputs: PoolFigures | None
    kvcalc_estimate: PoolFigures
    tokens_from_log_memory: int | None
    kv_bytes_per_token: int
    block_size: int | None
    rows: list[Comparison]
    notes: list[Note]
    inputs: dict[str, Any] = field(default_factory=dict)


def _rel(a: float | int | None, b: float | int | None) -> float | None:
    if a is None or not b:
        return None
    return (a - b) / b


def _figures(r: FitReport, with_weights: bool = False) -> PoolFigures:
    return PoolFigures(r.kv_pool_bytes, r.kv_pool_tokens, r.concurrency, r.weight_bytes if with_weights else None)


def explain(
    facts: LogFacts, model: ModelSpec, gpu: GPUSpec, engine_override: str | None = None, source: str = ""
) -> ExplainReport:
    """Recompute the log's figures from its own measured inputs and from kvcalc's estimates."""
    eng = engine_override or facts.engine or "vllm"
    seq = facts.max_model_len or model.max_position_embeddings
    kv_name = (
        facts.kv_cache_dtype
        if facts.kv_cache_dtype and facts.kv_cache_dtype.lower() not in ("auto", "none")
        else ("fp16" if facts.dtype == "float16" else "bf16")
    )
    kv = kv_dtype(kv_name, "kv_cache_dtype in the log")
    tp, pp = facts.tp or 1, facts.pp or 1
    total = round(facts.total_gib * GiB) if facts.total_gib else None
    rows: list[Comparison] = []
    notes: list[Note] = []
    common = FitInputs(
        seq=seq,
        engine=parse_engine(eng),
        tp=tp,
        pp=pp,
        kv_dtype=kv,
        gpu_memory=total,
        util=facts.util,
        block_size=facts.block_size if eng == "vllm" else None,
        max_num_batched_tokens=facts.max_num_batched_tokens,
    )
    est = fit(model, gpu, common)
    fp = footprint(model, gpu, common)
    per_tok = fp.per_token
    meas: FitReport | None = None
    from_log: int | None = None

    if facts.weights_gib is not None:
        w_log = facts.weights_gib * GiB
        rows.append(Comparison("weights", "bytes", w_log, None, est.weight_bytes, _rel(est.weight_bytes, w_log), True))

    if eng == "vllm":
        util = facts.util if facts.util is not None else ENGINES["vllm"].default_util
        assert util is not None
        measured: dict[str, int | None] = dict(
            weights=round(facts.weights_gib * GiB) if facts.weights_gib is not None else None,
            activation=round(facts.activation_gib * GiB) if facts.activation_gib is not None else None,
            non_torch=round(facts.non_torch_gib * GiB) if facts.non_torch_gib is not None else None,
            cudagraph=0,
        )
        if facts.available_kv_gib is not None and facts.weights_gib is not None and facts.activation_gib is None:
            # Current vLLM logs only the result: everything else vLLM measured is util x total - weights - KV.
            tot = total if total is not None else gpu.memory_runtime_bytes
            other = util * tot - facts.weights_gib * GiB - facts.available_kv_gib * GiB
            measured["activation"] = max(round(other), 0)
            measured["non_torch"] = 0
            notes.append(
                Note(
                    "other_memory",
                    {"util": util, "total_bytes": tot, "other_bytes": other, "total_from_spec": total is None, "gpu": gpu.name},
                )
            )
        meas = fit(model, gpu, common.replace(**{k: v for k, v in measured.items() if v is not None}))
        if facts.activation_gib is not None:
            act = next((b.bytes for b in est.budget if b.key == "activation"), 0)
            rows.append(Comparison("activation", "bytes", facts.activation_gib * GiB, None, act, None, True))
        if facts.non_torch_gib is not None:
            nt = next((b.bytes for b in est.budget if b.key == "non_torch"), 0)
            rows.append(Comparison("non_torch", "bytes", facts.non_torch_gib * GiB, None, nt, None, True))
        if facts.available_kv_gib is not None:
            log_b = facts.available_kv_gib * GiB
            rows.append(
                Comparison("available_kv", "bytes", log_b, meas.kv_pool_bytes, est.kv_pool_bytes, _rel(est.kv_pool_bytes, log_b))
            )
        log_tokens = (
            facts.kv_tokens
            if facts.kv_tokens is not None
            else (facts.gpu_blocks * (facts.block_size or 16) if facts.gpu_blocks is not None else None)
        )
        if log_tokens is not None:
            if facts.available_kv_gib is not None and per_tok:
                bs = est.block_size or 16
                from_log = int(facts.available_kv_gib * GiB) // (bs * per_tok) * bs
            rows.append(
                Comparison(
                    "kv_tokens",
                    "tokens",
                    log_tokens,
                    from_log if from_log is not None else meas.kv_pool_tokens,
                    est.kv_pool_tokens,
                    _rel(est.kv_pool_tokens or 0, log_tokens),
                )
            )
        if facts.concurrency is not None:
            rows.append(
                Comparison(
                    "concurrency",
                    "ratio",
                    facts.concurrency,
                    meas.concurrency,
                    est.concurrency,
                    _rel(est.concurrency, facts.concurrency),
                    length=facts.concurrency_len or seq,
                )
            )
        if facts.cudagraph_gib is not None:
            notes.append(Note("cudagraph_after_sizing", {"bytes": facts.cudagraph_gib * GiB}))
        if model.has_state:
            notes.append(Note("state_padding"))
    else:  # sglang
        if facts.max_total_num_tokens is not None:
            tok_est = est.kv_pool_tokens
            if facts.k_size_gib is not None and facts.v_size_gib is not None and facts.max_total_num_tokens:
                cell = (facts.k_size_gib + facts.v_size_gib) * GiB / facts.max_total_num_tokens
                rows.append(Comparison("kv_bytes_per_token", "bytes_per_token", cell, per_tok, per_tok, _rel(per_tok, cell)))
            meas_tokens = None
            if facts.avail_after_load_gib is not None:
                tot = total if total is not None else gpu.memory_runtime_bytes
                frac = facts.util if facts.util is not None else ENGINES["sglang"].default_util
                assert frac is not None
                rest = facts.avail_after_load_gib * GiB - tot * (1 - frac)
                meas_tokens = int(rest // per_tok) if per_tok else None
                notes.append(
                    Note(
                        "sglang_pool", {"available_bytes": facts.avail_after_load_gib * GiB, "fraction": frac, "total_bytes": tot}
                    )
                )
            rows.append(
                Comparison(
                    "max_total_num_tokens",
                    "tokens",
                    facts.max_total_num_tokens,
                    meas_tokens,
                    tok_est,
                    _rel(tok_est or 0, facts.max_total_num_tokens),
                )
            )
            if seq:
                notes.append(
                    Note(
                        "sglang_requests",
                        {"tokens": facts.max_total_num_tokens, "seq": seq, "requests": facts.max_total_num_tokens // seq},
                    )
                )
        notes.append(Note("sglang_gb_is_gib"))
    if eng == "vllm" and facts.concurrency is not None:
        notes.append(Note("concurrency_meaning", {"concurrency": facts.concurrency, "length": facts.concurrency_len or seq}))
    if "Loading model weights took" in facts.lines.get("weights_gib", ""):
        notes.append(Note("vllm_gb_is_gib"))
    log = {k: v for k, v in vars(facts).items() if k != "lines" and v is not None}
    return ExplainReport(
        engine=eng,
        model=model.name,
        gpu=gpu.name,
        max_model_len=seq,
        log=log,
        kvcalc_from_log_inputs=_figures(meas) if meas is not None else None,
        kvcalc_estimate=_figures(est, with_weights=True),
        tokens_from_log_memory=from_log,
        kv_bytes_per_token=per_tok,
        block_size=est.block_size,
        rows=rows,
        notes=notes,
        inputs={"model": model.name, "gpu": gpu.name, "log": source},
    )
