"""Where KV can live: HBM, host DRAM, local SSD, a remote memory pool; reload against recompute;
and the KV a prefill instance ships to a decode instance.

Link bandwidths are one direction (half a datasheet's bidirectional figure). Recompute is the
compute-bound prefill time (FLOPs / peak): in a serving engine prefill runs batched and chunked,
so the weight read is shared and compute is what a recomputed context costs.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from kvcalc._record import record
from kvcalc.engine.alloc import LOGICAL, Allocation
from kvcalc.engine.engines import Engine, engine as resolve_engine
from kvcalc.engine.kv import KVFootprint
from kvcalc.engine.roofline import decode_bound, prefill_bound
from kvcalc.engine.search import first_true
from kvcalc.engine.steptime import StepModel
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

GB = 10**9


@record(frozen=True)
class Tier:
    name: str
    capacity_bytes: int
    bandwidth_bytes_per_s: float | None
    """Into HBM, one direction; None for HBM itself."""
    source: str


def default_tiers(
    gpu: GPUSpec,
    pool_bytes: int,
    dram: int | None = None,
    dram_bw: float | None = None,
    ssd: int | None = None,
    ssd_bw: float | None = None,
    remote: int | None = None,
    remote_bw: float | None = None,
) -> list[Tier]:
    host = gpu.host_link_bytes_per_s / 2 if gpu.host_link_bytes_per_s else 32 * GB
    return [
        Tier("HBM", max(pool_bytes, 0), None, "the KV pool from kvcalc fit"),
        Tier(
            "DRAM",
            dram if dram is not None else 3 * gpu.memory_bytes,
            dram_bw if dram_bw is not None else host,
            "default: 3 x the GPU's memory per GPU, over one direction of its host link"
            + ("" if gpu.host_link_bytes_per_s else " (32 GB/s assumed: the spec has none)"),
        ),
        Tier(
            "SSD",
            ssd if ssd is not None else 3840 * GB,
            ssd_bw if ssd_bw is not None else 7 * GB,
            "default: one 3.84 TB PCIe 4 NVMe drive per GPU at 7 GB/s read",
        ),
        Tier(
            "remote (RDMA)",
            remote if remote is not None else 1000 * GB,
            remote_bw if remote_bw is not None else 50 * GB,
            "default: 1 TB per GPU behind a 400 Gb/s NIC (50 GB/s)",
        ),
    ]


@record(frozen=True)
class TierRow:
    tier: str
    capacity_bytes: int
    bandwidth_bytes_per_s: float | None
    tokens: int | None
    requests: int
    reload_s: float | None
    recompute_s: float
    reload_beats_recompute: bool | None
    break_even_seq: int | None
    """Shortest context from which reloading from this tier beats recomputing (None: never up to
    the model's context; 1: always)."""
    source: str


def _recompute_s(model: ModelSpec, gpu: GPUSpec, s: int, tp: int) -> float:
    return prefill_bound(model, gpu, s, tp).t_compute_s


def break_even(model: ModelSpec, gpu: GPUSpec, bw: float, fp: KVFootprint, tp: int, cap: int) -> int | None:
    """Smallest s with reload(s) < recompute(s), searching where the sign changes once."""

    def wins(s: int) -> bool:
        return bool(fp.request_bytes(s) / bw < _recompute_s(model, gpu, s, tp))

    return first_true(wins, 1, cap)


def tier_rows(
    model: ModelSpec, gpu: GPUSpec, seq: int, tier_list: list[Tier], kv_dtype: KVDtype, tp: int = 1, alloc: Allocation = LOGICAL
) -> list[TierRow]:
    """Each tier's capacity in requests of ``seq`` tokens and their reload, a request's KV on one GPU in the form
    ``alloc`` gives (an engine's Engine.kv_form_alloc: per-head MLA where the release caches it so)."""
    fp = KVFootprint(model, kv_dtype, tp, 1, alloc)
    req = fp.request_bytes(seq)
    per_tok = fp.per_token
    rec = _recompute_s(model, gpu, seq, tp)
    rows = []
    for t in tier_list:
        reload = None if t.bandwidth_bytes_per_s is None else req / t.bandwidth_bytes_per_s
        rows.append(
            TierRow(
                tier=t.name,
                capacity_bytes=t.capacity_bytes,
                bandwidth_bytes_per_s=t.bandwidth_bytes_per_s,
                tokens=t.capacity_bytes // per_tok if per_tok else None,
                requests=t.capacity_bytes // req if req else 0,
                reload_s=reload,
                recompute_s=rec,
                reload_beats_recompute=None if reload is None else reload < rec,
                break_even_seq=None
                if t.bandwidth_bytes_per_s is None
                else break_even(model, gpu, t.bandwidth_bytes_per_s, fp, tp, model.max_position_embeddings),
                source=t.source,
            )
        )
    return rows


@record(frozen=True)
class Disaggregation:
    prompt: int
    bytes_per_request: int
    """The prompt's KV for every layer, each KV head once (what a decode instance must receive)."""
    link_bytes_per_s: float
    """One GPU's link, one direction."""
    transfer_s: float
    """The prompt's KV over the ``senders`` GPUs' links at once, each carrying its share."""
    decode_step_s: float
    transfer_over_step: float
    max_requests_per_s: float | None
    """None when a request ships no KV (a model that caches nothing)."""
    rate: float | None
    link_utilization: float | None
    keeps_up: bool | None
    senders: int = 1
    """The GPUs whose links carry a request's KV at once: the instance's tensor-parallel ranks, each sending its share
    (replicated KV heads, or a latent kept whole on every rank, split among the ranks that hold them)."""
    decode_step_model_s: float | None = None
    """kvcalc's step model's decode step (kvcalc.engine.steptime, default constants, the report's engine) at the same
    batch and length: what an engine's step takes, where ``decode_step_s`` is the bound."""
    transfer_over_model_step: float | None = None
    """transfer_s / decode_step_model_s."""


def shipped_bytes(
    model: ModelSpec, kv_dtype: KVDtype, prompt: int, engine: Engine | None = None, weight_dtype: str | None = None
) -> int:
    """The prompt's KV a prefill instance ships to a decode instance: every layer, each KV head once (TP 1 bytes), in the
    form ``engine`` caches it (Engine.kv_form_alloc: an MLA layer per head where the release keeps it so, else its
    latent; ``weight_dtype`` the served format where the release decides by it); without one, the model's own need."""
    alloc = engine.kv_form_alloc(model, weight_dtype) if engine is not None else LOGICAL
    return int(KVFootprint(model, kv_dtype, 1, 1, alloc).request_bytes(prompt))


def disaggregation(
    model: ModelSpec,
    gpu: GPUSpec,
    prompt: int,
    link_bytes_per_s: float,
    kv_dtype: KVDtype,
    tp: int = 1,
    batch: int = 1,
    rate: float | None = None,
    engine: Engine | None = None,
) -> Disaggregation:
    """The prompt's KV from a prefill instance to a decode instance over each GPU's ``link_bytes_per_s``, against the
    decode step at ``batch`` requests of the prompt's length: its bound, and with ``engine`` kvcalc's step model's. The
    bytes shipped and read are those of the form ``engine`` caches (shipped_bytes)."""
    if link_bytes_per_s <= 0:
        raise KvcalcError("link bandwidth must be positive", "link", "e.g. 50GB/s")
    shipped = shipped_bytes(model, kv_dtype, prompt, engine)
    # Every GPU of the prefill instance sends its share at once, each over its own link (as plan's disaggregated pools
    # price it, kvcalc.engine.plan._kv_link; until 2026-12-07 the whole KV crossed one link at any TP, where the tiers
    # above, and this report's own assumption, take each bandwidth per GPU).
    carried = link_bytes_per_s * tp
    t = shipped / carried
    step = decode_bound(
        model, gpu, batch, prompt, kv_dtype, tp, kv_alloc=engine.kv_form_alloc(model) if engine else LOGICAL
    ).t_bound_s
    util = None if rate is None else rate * shipped / carried
    model_step = StepModel(model, gpu, kv_dtype, tp, engine=engine).step(batch, prompt).t_step_s if engine is not None else None
    return Disaggregation(
        prompt,
        shipped,
        link_bytes_per_s,
        t,
        step,
        t / step,
        carried / shipped if shipped else None,
        rate,
        util,
        None if util is None else util < 1,
        tp,
        model_step,
        None if model_step is None else t / model_step,
    )


@record(frozen=True)
class TiersReport:
    model: str
    gpu: str
    seq: int
    tiers: list[TierRow]
    disaggregation: Disaggregation
    assumptions: list[str] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)


def tiers(
    model: ModelSpec,
    gpu: GPUSpec,
    seq: int,
    tier_list: list[Tier],
    kv_dtype: KVDtype,
    tp: int,
    link_bytes_per_s: float,
    batch: int = 1,
    rate: float | None = None,
    engine: str | Engine = "vllm",
) -> TiersReport:
    """Capacity and reload cost of each tier, and the prefill-to-decode transfer of one request (``engine``: a release's
    record, or a name kvcalc.engine.engines resolves)."""
    eng = resolve_engine(engine)
    form = eng.kv_form_alloc(model)
    rows = tier_rows(model, gpu, seq, tier_list, kv_dtype, tp, form)
    d = disaggregation(model, gpu, seq, link_bytes_per_s, kv_dtype, tp, batch, rate, eng)
    assumptions = [
        "bandwidths are one direction; per GPU (each GPU moves its own shard of the KV)",
        "a request's KV: every token in the form the engine caches it, without block rounding"
        + (
            f" (MLA as per-head K and V: {eng.label} does not cache the latent)"
            if model.mla is not None and form != LOGICAL
            else ""
        ),
        "recompute: the compute-bound prefill time, FLOPs / dense peak (batched prefill shares the weight read)",
        "disaggregation ships the prompt's KV once per layer and KV head (tp 1 bytes), each of the tp GPUs its share over"
        " its own --link at once (plan prices the same transfer at 0.7 of each GPU's NIC)",
        "decode steps: the roofline bound at --batch requests of the prompt's length (kvcalc roofline's bound column), and"
        " kvcalc's step model's step there (its step column: the engine's overheads, default constants)",
    ] + [f"{t.name}: {t.source}" for t in tier_list]
    return TiersReport(
        model.name,
        gpu.name,
        seq,
        rows,
        d,
        assumptions,
        {
            "model": model.name,
            "gpu": gpu.name,
            "seq": seq,
            "tp": tp,
            "kv_dtype": kv_dtype.name,
            "engine": eng.name,
            "link_bytes_per_s": link_bytes_per_s,
            "rate": rate,
        },
    )
