"""Decode and prefill lower bounds: the roofline with a KV term.

One decode step at batch b and context s must at least read the streamed weights and every
request's KV cache from memory, and do the matrix and attention FLOPs:

    t_memory  = (weight bytes read + KV bytes read) / bandwidth
    t_compute = FLOPs / peak
    t_bound   = max(t_memory, t_compute)

Everything here is per GPU (one tensor-parallel rank). :func:`roofline` answers a grid of batches
by contexts: the per-batch and per-context pieces (weights read, a request's KV, the crossovers)
are computed once each, exactly, and every point from them, so a grid of 100,000 points costs
about what its JSON costs to print.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import field, fields
from itertools import chain, repeat
from operator import add, truediv
from typing import Any

from kvcalc._record import record
from kvcalc.engine.alloc import LOGICAL, Allocation
from kvcalc.engine.bound import Decode as Decode, PrefillBound as PrefillBound, prefill_bound as prefill_bound
from kvcalc.engine.deployment import Shape, check_shape, place
from kvcalc.engine.engines import triton_default_note
from kvcalc.engine.kv import stored_kv_dtype
from kvcalc.engine.memory import FitInputs, fit, footprint, requests_in_memory
from kvcalc.engine.steptime import DEFAULTS, StepConstants, StepModel, matmul_dtype
from kvcalc.engine.track import TrackRecord, for_estimate
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype, kv_dtype as as_kv_dtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec
from kvcalc.units import count_of


@record(frozen=True)
class DecodePoint:
    batch: int
    seq: int
    tp: int
    kv_dtype: str
    compute_dtype: str
    weight_bytes_resident: int
    weight_bytes_read: int
    kv_bytes_read: int
    bytes_read: int
    flops: float
    t_memory_s: float
    t_compute_s: float
    t_bound_s: float
    bound_by: str
    kv_share: float
    tokens_per_s: float
    arithmetic_intensity: float
    ridge_intensity: float
    kv_equals_weights_at_seq: int | None
    compute_bound_at_batch: int | None
    max_batch_in_memory: int | None
    fits_in_memory: bool | None
    t_allreduce_s: float | None = None
    allreduce_bytes: int | None = None
    t_step_s: float | None = None
    """kvcalc's step-time model for this step (kvcalc.engine.steptime): what an engine's step takes."""
    t_fixed_s: float | None = None
    """Of t_step_s: the engine's per-step and per-request cost and the layers' kernel gaps."""
    t_collective_s: float | None = None
    """Of t_step_s: the TP all-reduces."""
    tokens_per_s_step: float | None = None
    """batch / t_step_s."""
    warnings: list[str] = field(default_factory=list)


_FIELDS = tuple(f.name for f in fields(DecodePoint))


class PointTable(Sequence[DecodePoint]):
    """The points of a grid, stored by column; a sequence of :class:`DecodePoint` to read, and
    plain rows for JSON (``__json__``) without building a dataclass per point."""

    def __init__(self, columns: dict[str, list[Any]]):
        self.columns = columns
        self._n = len(columns["batch"])

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        return DecodePoint(**{k: self.columns[k][i] for k in _FIELDS})

    def __iter__(self) -> Iterator[DecodePoint]:
        for i in range(self._n):
            yield self[i]

    def __json_columns__(self) -> dict[str, list[Any]]:
        """The columns in the rows' key order (kvcalc.render.json.encode_columns writes them)."""
        return {k: self.columns[k] for k in _FIELDS}

    def __json__(self) -> list[dict[str, Any]]:
        cols = [self.columns[k] for k in _FIELDS]
        return [dict(zip(_FIELDS, vals)) for vals in zip(*cols)]


@record(frozen=True)
class RooflineReport:
    model: str
    gpu: str
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float
    compute_dtype: str
    kv_dtype: str
    tp: int
    rows: PointTable
    kv_equals_weights: dict[int, int | None]
    """Per batch: the context at which the KV term reaches the weights term."""
    prefill: PrefillBound | None = None
    measure: Any = None
    warnings: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)
    dp: int = 1
    """Data-parallel attention ranks: a batch is one rank's; throughputs count them all."""
    ep: int = 1
    track_record: TrackRecord | None = None
    """How far the realistic step (t_step_s) with default constants has been from public measured runs
    of this kind (kvcalc.engine.track); None for a calibration or without the step model."""


VECTOR_POINTS = 4096
"""Grids from this many points are computed on numpy arrays (the same floats, at a tenth of the cost)."""


def _per(batch: list[int], dp: int, seconds: list[float]) -> list[float]:
    """Tokens a second: batch x DP ranks / a step's seconds, point by point (b x 1 is b, exactly)."""
    if dp == 1:
        return list(map(truediv, batch, seconds))
    return [b * dp / t for b, t in zip(batch, seconds)]


def decode_points(
    d: Decode,
    batches: list[int],
    seqs: list[int],
    with_allreduce: bool = False,
    max_batch: dict[int, int | None] | None = None,
    sm: StepModel | None = None,
) -> PointTable:
    """The bound at every (batch, seq) of a grid, context-major (all batches at the first context, then
    the next). Each per-batch and per-context piece is computed once; the points are column lists."""
    nb, ns = len(batches), len(seqs)
    w = [int(d.weight_read(b)) for b in batches]
    kv_eq = d.kv_equals_weights(batches)
    kvr, attn = d.per_context(seqs)
    cb = d.compute_bound_from(seqs, kvr, attn)
    ar = [d.allreduce(b) for b in batches] if with_allreduce else None
    bw, peak, tp, mm = d.bw, d.peak, d.tp, d.matmul_flops_per_token
    B, W = batches * ns, w * ns
    S = list(chain.from_iterable(repeat(s, nb) for s in seqs))
    mm_b = [mm * b / tp for b in batches]  # the matmul FLOPs, per batch
    big = max(batches)
    vec: Any = None
    if nb * ns >= VECTOR_POINTS and max(kvr) * big + max(w) < 2**53 and max(attn) * big < 2**53:
        # A big grid whose integers are all exact as floats: the same operations on numpy arrays
        # (IEEE sums, products and quotients of the same operands, in the same order, are the same
        # floats; an int below 2**53 converts to a float exactly, as Python's int / int rounds).
        import numpy as np

        bt = np.asarray(batches, dtype=np.int64)
        KVa = (np.asarray(kvr, dtype=np.int64)[:, None] * bt).ravel()
        AFa = (np.asarray(attn, dtype=np.int64)[:, None] * bt).ravel()
        Wa = np.tile(np.asarray(w, dtype=np.int64), ns)
        tota, MMa = Wa + KVa, np.tile(np.asarray(mm_b, dtype=np.float64), ns)
        flopsa = MMa + AFa
        tma, tca = tota / bw, flopsa / peak
        vec = (Wa, KVa, MMa, AFa)
        KV, total, MM, AF, flops = KVa.tolist(), tota.tolist(), MMa.tolist(), AFa.tolist(), flopsa.tolist()
        tm, tc, tb = tma.tolist(), tca.tolist(), np.where(tma >= tca, tma, tca).tolist()
        kv_share, intensity = (KVa / tota).tolist(), (flopsa / tota).tolist()
    else:
        # Whole columns through map() with the operator module: the same operations, in the same
        # order, as one expression per point, at a fraction of a comprehension's cost.
        KV = [kvr[j] * b for j in range(ns) for b in batches]
        total = list(map(add, W, KV))
        MM = mm_b * ns
        AF = [attn[j] * b for j in range(ns) for b in batches]  # the attention FLOPs
        flops = list(map(add, MM, AF))
        tm = list(map(truediv, total, repeat(bw)))
        tc = list(map(truediv, flops, repeat(peak)))
        tb = [a if a >= c else c for a, c in zip(tm, tc)]
        kv_share, intensity = list(map(truediv, KV, total)), list(map(truediv, flops, total))
    mb = [None] * len(B) if max_batch is None else [max_batch[s] for s in S]
    fits = [None if m is None else b <= m for b, m in zip(B, mb)]
    ctx = d.model.max_position_embeddings
    # Each context's warning text is built once; a point adds its batch.
    long = {s: f"seq {s:,} exceeds the model's max context of {ctx:,} tokens" for s in seqs if s > ctx}
    tail = {
        s: f" at {s:,} tokens does not fit in memory: at most {count_of(m or 0, 'request')}" for s, m in zip(S[::nb], mb[::nb])
    }
    warnings: list[list[str]] = []
    named = [f"batch {b}" for b in batches]
    for s, m in zip(seqs, mb[::nb]):  # a context's batches at a time (a row's list is its own)
        t = tail[s]
        if s in long:
            head = long[s]
            warnings += (
                [[head] for _ in batches] if m is None else [[head, p + t] if b > m else [head] for b, p in zip(batches, named)]
            )
        else:
            warnings += [[] for _ in batches] if m is None else [[p + t] if b > m else [] for b, p in zip(batches, named)]
    n = len(B)
    cols: dict[str, list[Any]] = {
        "batch": B,
        "seq": S,
        "tp": [tp] * n,
        "kv_dtype": [d.kv.name] * n,
        "compute_dtype": [d.compute_dtype] * n,
        "weight_bytes_resident": [d.resident_per_gpu] * n,
        "weight_bytes_read": W,
        "kv_bytes_read": KV,
        "bytes_read": total,
        "flops": flops,
        "t_memory_s": tm,
        "t_compute_s": tc,
        "t_bound_s": tb,
        "bound_by": ["memory" if a >= c else "compute" for a, c in zip(tm, tc)],
        "kv_share": kv_share,
        "tokens_per_s": _per(B, d.dp, tb),
        "arithmetic_intensity": intensity,
        "ridge_intensity": [peak / bw] * n,
        "kv_equals_weights_at_seq": kv_eq * ns,
        "compute_bound_at_batch": [c for c in cb for _ in range(nb)],
        "max_batch_in_memory": mb,
        "fits_in_memory": fits,
        "t_allreduce_s": [a[1] for a in ar] * ns if ar else [None] * n,
        "allreduce_bytes": [a[0] for a in ar] * ns if ar else [None] * n,
        "warnings": warnings,
    }
    if sm is not None:
        wb, kvb, mmf, af = vec if vec else (W, KV, MM, AF)
        ts, tf, tcol = sm.decode_columns(wb, kvb, mmf, af, B, S)
        cols["t_step_s"], cols["t_fixed_s"], cols["t_collective_s"] = ts, tf, tcol
        cols["tokens_per_s_step"] = _per(B, d.dp, ts)
    else:
        for k in ("t_step_s", "t_fixed_s", "t_collective_s", "tokens_per_s_step"):
            cols[k] = [None] * n
    return PointTable(cols)


def decode_bound(
    model: ModelSpec,
    gpu: GPUSpec,
    batch: int,
    seq: int,
    kv_dtype: str | KVDtype = "bf16",
    tp: int = 1,
    weight_dtype: str | None = None,
    compute_dtype: str = "bf16",
    with_allreduce: bool = False,
    max_batch_in_memory: int | None = None,
    kv_alloc: Allocation = LOGICAL,
) -> DecodePoint:
    """The bound of one decode step (``kv_alloc``: the form of the cache a step reads, Engine.kv_form_alloc)."""
    if batch < 1 or seq < 1:
        raise KvcalcError("batch and seq must be >= 1", f"batch={batch} seq={seq}", "positive integers")
    d = Decode(model, gpu, as_kv_dtype(kv_dtype), tp, weight_dtype, compute_dtype, kv_alloc=kv_alloc)
    mb: dict[int, int | None] | None = None if max_batch_in_memory is None else {seq: max_batch_in_memory}
    point: DecodePoint = decode_points(d, [batch], [seq], with_allreduce, mb)[0]
    return point


def decode_grid(
    model: ModelSpec,
    gpu: GPUSpec,
    batches: Any,
    seqs: Any,
    kv_dtype: str | KVDtype = "bf16",
    tp: int = 1,
    weight_dtype: str | None = None,
    compute_dtype: str = "bf16",
) -> dict[str, Any]:
    """The bound over a grid as numpy arrays of shape (len(batches), len(seqs)), in one vectorised
    pass (floats: for sweeps of millions of points through the Python API)."""
    import numpy as np

    d = Decode(model, gpu, as_kv_dtype(kv_dtype), tp, weight_dtype, compute_dtype)
    b = np.asarray(batches, dtype=np.int64)[:, None]
    s = np.asarray(seqs, dtype=np.int64)[None, :]
    bf = b.astype(np.float64)
    shape = (b.size, s.size)
    w = np.broadcast_to(d.weight_read(bf), shape)
    kvb = np.broadcast_to(d.kv_request(s) * bf, shape)
    flops = d.flops(bf, d.attn_flops(s))
    tm = (w + kvb) / d.bw
    tc = np.broadcast_to(flops / d.peak, shape)
    tb = np.maximum(tm, tc)
    return {
        "batch": np.broadcast_to(b, shape),
        "seq": np.broadcast_to(s, shape),
        "weight_bytes_read": w,
        "kv_bytes_read": kvb,
        "t_memory_s": tm,
        "t_compute_s": tc,
        "t_bound_s": tb,
        "compute_bound": tc > tm,
        "kv_share": kvb / (w + kvb),
        "tokens_per_s": bf / tb,
    }


ASSUMPTIONS = [
    "memory term: streamed weights (every layer's matrices and the LM head; not the input embedding table, of which a "
    "step reads b rows) plus each request's KV, read once, over the datasheet bandwidth in bytes/s (10^9 B per GB)",
    "compute term: 2 x active parameters x batch + attention (2 FLOPs per multiply-add over each key and value a token "
    "reads; MLA in its absorbed form), over dense peak FLOP/s at the precision the matmuls run in (fp8 for an fp8 "
    "checkpoint on a GPU with fp8 units, fp4 for an NVFP4 one on a GPU with fp4 units, int8 for a W8A8 int8 one on a GPU "
    "whose spec gives its INT8 peak, else 16-bit; --compute-dtype to choose)",
    "per GPU: weights and KV split over tp ranks, KV heads replicated when tp > KV heads",
]
MAX_POINTS = 1_000_000


def roofline(
    model: ModelSpec,
    gpu: GPUSpec,
    batches: list[int],
    seqs: list[int],
    kv_dtype: str | KVDtype = "bf16",
    tp: int = 1,
    weight_dtype: str | None = None,
    compute_dtype: str | None = None,
    engine: Any = "vllm",
    with_allreduce: bool = False,
    prefill: int | None = None,
    constants: StepConstants | None = DEFAULTS,
    dp: int = 1,
    ep: int = 1,
    util: float | None = None,
) -> RooflineReport:
    """The decode bound over every batch x context, which batches fit in the engine's pool, and
    optionally the prefill bound of a prompt. With data-parallel attention (``dp`` > 1) a batch is
    one DP rank's requests, every rank stepping together with a batch alike; the throughputs count
    all ``dp`` ranks. ``util``: the engine's memory fraction for its pool (None: the release's default)."""
    if len(batches) * len(seqs) > MAX_POINTS:
        raise KvcalcError(
            f"{len(batches) * len(seqs):,} grid points",
            "batches x seqs",
            f"at most {MAX_POINTS:,} points on the command line (decode_grid in the Python API takes more)",
        )
    compute_dtype = compute_dtype or matmul_dtype(model, gpu, weight_dtype)
    inp = FitInputs(
        seq=seqs[0], engine=engine, tp=tp, dp=dp, ep=ep, kv_dtype=as_kv_dtype(kv_dtype), weight_dtype=weight_dtype, util=util
    )
    check_shape(model, Shape(tp, 1, dp, ep), inp.engine)
    dt = stored_kv_dtype(model, gpu.name, inp.kv_dtype, inp.engine, tp)  # the format the engine stores
    d = Decode(model, gpu, dt, tp, weight_dtype, compute_dtype, dp, kv_alloc=inp.engine.kv_form_alloc(model, weight_dtype))
    sm = (
        StepModel(model, gpu, dt, tp, 1, constants, weight_dtype, compute_dtype, ep=ep, dp=dp, engine=inp.engine)
        if constants is not None
        else None
    )
    f = fit(model, gpu, inp)
    fp = footprint(model, gpu, inp)
    if len(seqs) > 16 and fp.request_bytes(max(seqs)) < 2**62:
        import numpy as np

        arr = np.asarray(seqs, dtype=np.int64)
        per = np.broadcast_to(fp.request_bytes(arr), arr.shape).tolist()
    else:
        per = [fp.request_bytes(x) for x in seqs]
    # A model that caches nothing per request (every layer cache-free) is not limited by its KV pool.
    max_batch: dict[int, int | None] = {x: requests_in_memory(f, x, int(r)) for x, r in zip(seqs, per)}
    rows = decode_points(d, batches, seqs, with_allreduce, max_batch, sm)
    pre = prefill_bound(model, gpu, prefill, tp, weight_dtype, compute_dtype) if prefill else None
    assumptions = (
        ASSUMPTIONS
        + ([f"realistic step (t_step_s): {sm.describe()}"] if sm else [])
        + [
            f"fits in memory: batch <= the requests of this length that {inp.engine.name}'s KV pool holds (kvcalc fit"
            + (f", a memory fraction of {util:g})" if util is not None else ")")
        ]
    )
    if dp > 1 or ep > 1:
        assumptions.append(
            f"{Shape(tp, 1, dp, ep).describe()}: a batch is one DP rank's requests, every rank stepping together "
            f"with one alike (engines keep DP ranks in lockstep for the MoE layers); the experts see all {dp} ranks' "
            f"tokens; tokens_per_s and tokens_per_s_step count all {dp} ranks; " + place(gpu, Shape(tp, 1, dp, ep)).describe()
        )
    if model.is_moe:
        assumptions.append(
            "MoE: a step reads the experts its tokens route to, E x (1 - (1 - k/E)^b) per MoE layer on average (uniform routing)"
        )
    assumptions += list(dict.fromkeys(n for k in model.kinds() if (n := k.roofline_note())))
    if model.mla is not None and inp.engine.mla_per_head(model, weight_dtype):
        dims = model.mla.stored_head_dims(inp.engine.kv_form_alloc(model, weight_dtype))
        assumptions.append(
            f"MLA as {inp.engine.label} caches it: per-head K and V of {dims[0] if dims else 0} and {dims[1] if dims else 0} "
            "elements, which each decode token reads whole and attends over as any attention (not the absorbed form)"
        )
    note = triton_default_note(inp.engine, model, gpu, tp) if sm is not None else None
    return RooflineReport(
        model=model.name,
        gpu=gpu.name,
        bandwidth_bytes_per_s=d.bw,
        peak_flops_per_s=d.peak,
        compute_dtype=compute_dtype,
        kv_dtype=dt.name,
        tp=tp,
        dp=dp,
        ep=ep,
        rows=rows,
        kv_equals_weights={b: rows.columns["kv_equals_weights_at_seq"][i] for i, b in enumerate(batches)},
        prefill=pre,
        assumptions=assumptions,
        warnings=[note] if note else [],
        track_record=(
            for_estimate(
                model.is_moe,
                tp * dp,
                constants,
                inp.engine,
                ("mean_tpot",),
                {"mean_tpot": rows[0].t_step_s} if len(rows) == 1 and rows[0].t_step_s else None,
                "this step",
            )
            if sm
            else None
        ),
        inputs={
            "model": model.name,
            "gpu": gpu.name,
            "batch": batches,
            "seq": seqs,
            "kv_dtype": dt.name,
            "weight_dtype": weight_dtype or model.weight_dtype,
            "compute_dtype": compute_dtype,
            "tp": tp,
            "dp": dp,
            "ep": ep,
            "engine": inp.engine.name,
        },
    )
