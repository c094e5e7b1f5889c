"""Decode and prefill lower bounds: the roofline with a KV term.

One decode step at batch b and context s must at least read the streamed weights and every
request's KV cache from memory, and do the matrix and attention FLOPs:

    t_memory  = (weight bytes read + KV bytes read) / bandwidth
    t_compute = FLOPs / peak
    t_bound   = max(t_memory, t_compute)

Everything here is per GPU (one tensor-parallel rank). Functions take plain ints for the exact
single answer and numpy arrays (broadcast against each other) for grids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil

from kvcalc.engine.dtypes import kv_dtype, weight_bits
from kvcalc.engine.kv import check_parallel, request_bytes
from kvcalc.engine.layers import LOGICAL
from kvcalc.engine.search import first_true
from kvcalc.errors import KvcalcError
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

ACT_BYTES = 2  # bf16/fp16 activations


def _is_array(x) -> bool:
    return not isinstance(x, (int, float))


def expected_experts(E: int, k: int, b):
    """Expected distinct experts a batch of b tokens routes to in one MoE layer (uniform routing):
    E x (1 - (1 - k/E)^b). 1 token: k experts; many: tends to all E."""
    if _is_array(b):
        import numpy as np

        return E * (1.0 - np.power(1.0 - k / E, b))
    return E * (1.0 - (1.0 - k / E) ** b)


@dataclass
class StreamedWeights:
    """Parameters a decode step reads: every layer's matrices and the LM head, not the input
    embedding table (a step touches only b of its rows)."""

    dense_params: int
    """Non-expert parameters streamed every step (LM head included, input embedding excluded)."""
    dense_bits: Fraction
    expert_params_each: int
    expert_bits: Fraction
    moe_layers: int
    num_experts: int
    experts_per_tok: int
    embed_row_bytes: int
    resident_bytes: int


def streamed_weights(model: ModelSpec, dtype: str | None = None) -> StreamedWeights:
    from kvcalc.engine.memory import model_weight_bytes

    wd = dtype or model.weight_dtype
    ed = dtype or (model.moe.expert_weight_dtype if model.moe else None) or wd
    # Tied embeddings are read as the LM head every step; untied, the input table is not streamed.
    input_table = 0 if model.tie_word_embeddings else model.embedding_params
    dense = model.params_total - model.expert_params - input_table
    m = model.moe
    return StreamedWeights(
        dense_params=dense,
        dense_bits=weight_bits(wd),
        expert_params_each=m.params_per_expert if m else 0,
        expert_bits=weight_bits(ed),
        moe_layers=m.num_moe_layers if m else 0,
        num_experts=m.num_experts if m else 0,
        experts_per_tok=m.num_experts_per_tok if m else 0,
        embed_row_bytes=ceil(model.hidden_size * weight_bits(wd) / 8),
        resident_bytes=model_weight_bytes(model, dtype),
    )


def weight_bytes_read(sw: StreamedWeights, batch, tp: int = 1):
    """Bytes of weights one decode step reads on one rank (MoE: the expected distinct experts,
    rounded to whole bytes). Exact for dense models."""
    dense = Fraction(sw.dense_params) * sw.dense_bits / 8 + sw.embed_row_bytes * batch if not _is_array(batch) else None
    if sw.moe_layers or _is_array(batch):
        experts = 0.0
        if sw.moe_layers:
            experts = sw.moe_layers * expected_experts(sw.num_experts, sw.experts_per_tok, batch) \
                * (sw.expert_params_each * float(sw.expert_bits) / 8)
        total = float(Fraction(sw.dense_params) * sw.dense_bits / 8) + sw.embed_row_bytes * batch + experts
        if _is_array(total):
            import numpy as np

            return np.rint(total / tp)
        return int(round(total / tp))
    return ceil(dense / tp)


def active_matmul_params(model: ModelSpec) -> int:
    """Parameters one token multiplies through: active parameters less the input embedding lookup."""
    return model.params_active - (0 if model.tie_word_embeddings else model.embedding_params)


def attention_flops_per_token(model: ModelSpec, seq, tp: int = 1):
    total = 0 * seq
    for name, n in model.layer_counts().items():
        total = total + n * model.layer_kinds[name].attn_flops_per_token(seq, tp)
    return total


@dataclass
class DecodeBound:
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
    warnings: list[str] = field(default_factory=list)


def peak_flops(gpu: GPUSpec, compute_dtype: str) -> float:
    if compute_dtype in ("bf16", "fp16"):
        return gpu.flops_bf16
    if compute_dtype == "fp8":
        if not gpu.flops_fp8:
            raise KvcalcError(f"{gpu.name} has no fp8 tensor units", "--compute-dtype", "bf16 on this GPU")
        return gpu.flops_fp8
    raise KvcalcError(f"unknown compute dtype {compute_dtype!r}", "--compute-dtype", "bf16, fp16 or fp8")


def decode_terms(model: ModelSpec, gpu: GPUSpec, batch, seq, kv: str = "bf16", tp: int = 1,
                 weight_dtype: str | None = None, compute_dtype: str = "bf16") -> dict:
    """The two terms of one decode step, per rank; batch and seq may be broadcastable arrays."""
    sw = streamed_weights(model, weight_dtype)
    w = weight_bytes_read(sw, batch, tp)
    kvb = request_bytes(model, seq, kv_dtype(kv), tp, 1, LOGICAL) * batch
    # Each token multiplies through the dense matrices and its own k experts; attention reads
    # its context. Integers for a single point, floats for grids.
    flops = 2 * active_matmul_params(model) * batch / tp + attention_flops_per_token(model, seq, tp) * batch
    bw = gpu.memory_bandwidth_bytes_per_s
    peak = peak_flops(gpu, compute_dtype)
    t_mem = (w + kvb) / bw
    t_comp = flops / peak
    return {"weight_bytes_read": w, "kv_bytes_read": kvb, "flops": flops, "t_memory_s": t_mem,
            "t_compute_s": t_comp, "peak": peak, "bandwidth": bw, "resident": sw.resident_bytes}


def kv_equals_weights_at_seq(model: ModelSpec, gpu: GPUSpec, batch: int, kv: str, tp: int,
                             weight_dtype: str | None, cap: int = 2**40) -> int | None:
    """The context at which the KV bytes a step reads reach the weight bytes it reads, rounded
    down to a whole token (the last s with KV <= weights). None if KV never reaches them."""
    w = weight_bytes_read(streamed_weights(model, weight_dtype), batch, tp)
    dt = kv_dtype(kv)

    def kvb(s):
        return request_bytes(model, s, dt, tp, 1, LOGICAL) * batch

    first_over = first_true(lambda s: kvb(s) > w, 1, cap)
    return None if first_over is None else first_over - 1


def compute_bound_at_batch(model: ModelSpec, gpu: GPUSpec, seq: int, kv: str, tp: int,
                           weight_dtype: str | None, compute_dtype: str, cap: int = 2**24) -> int | None:
    """The smallest batch at which the compute term reaches the memory term at this context."""

    def binds(b):
        t = decode_terms(model, gpu, b, seq, kv, tp, weight_dtype, compute_dtype)
        return t["t_compute_s"] >= t["t_memory_s"]

    return first_true(binds, 1, cap)


def allreduce(model: ModelSpec, gpu: GPUSpec, batch, tp: int):
    """Two all-reduces of b x hidden activations per layer, ring cost 2(tp-1)/tp of the bytes,
    over one direction of the interconnect (half the bidirectional datasheet figure)."""
    if tp == 1:
        return 0, 0.0
    if not gpu.interconnect_bytes_per_s:
        raise KvcalcError(f"{gpu.name} has no GPU interconnect in its spec", "--allreduce",
                          "a GPU spec with interconnect_bytes_per_s")
    payload = 2 * model.num_layers * batch * model.hidden_size * ACT_BYTES
    moved = payload * 2 * (tp - 1) / tp
    return payload, moved / (gpu.interconnect_bytes_per_s / 2)


def decode_bound(model: ModelSpec, gpu: GPUSpec, batch: int, seq: int, kv: str = "bf16", tp: int = 1,
                 weight_dtype: str | None = None, compute_dtype: str = "bf16", with_allreduce: bool = False,
                 max_batch_in_memory: int | None = None) -> DecodeBound:
    if batch < 1 or seq < 1:
        raise KvcalcError("batch and seq must be >= 1", f"batch={batch} seq={seq}", "positive integers")
    check_parallel(model, tp, 1)
    t = decode_terms(model, gpu, batch, seq, kv, tp, weight_dtype, compute_dtype)
    total = t["weight_bytes_read"] + t["kv_bytes_read"]
    t_bound = max(t["t_memory_s"], t["t_compute_s"])
    warnings = []
    if seq > model.max_position_embeddings:
        warnings.append(f"seq {seq:,} exceeds the model's max context of {model.max_position_embeddings:,} tokens")
    fits = None if max_batch_in_memory is None else batch <= max_batch_in_memory
    if fits is False:
        warnings.append(f"batch {batch} at {seq:,} tokens does not fit in memory: at most {max_batch_in_memory} requests")
    ar_bytes = ar_t = None
    if with_allreduce:
        ar_bytes, ar_t = allreduce(model, gpu, batch, tp)
    return DecodeBound(
        batch=batch, seq=seq, tp=tp, kv_dtype=kv_dtype(kv).name, compute_dtype=compute_dtype,
        weight_bytes_resident=ceil(Fraction(t["resident"], tp)),
        weight_bytes_read=int(t["weight_bytes_read"]),
        kv_bytes_read=int(t["kv_bytes_read"]),
        bytes_read=int(total),
        flops=t["flops"],
        t_memory_s=t["t_memory_s"], t_compute_s=t["t_compute_s"], t_bound_s=t_bound,
        bound_by="memory" if t["t_memory_s"] >= t["t_compute_s"] else "compute",
        kv_share=t["kv_bytes_read"] / total,
        tokens_per_s=batch / t_bound,
        arithmetic_intensity=t["flops"] / total,
        ridge_intensity=t["peak"] / t["bandwidth"],
        kv_equals_weights_at_seq=kv_equals_weights_at_seq(model, gpu, batch, kv, tp, weight_dtype),
        compute_bound_at_batch=compute_bound_at_batch(model, gpu, seq, kv, tp, weight_dtype, compute_dtype),
        max_batch_in_memory=max_batch_in_memory,
        fits_in_memory=fits,
        t_allreduce_s=ar_t, allreduce_bytes=ar_bytes,
        warnings=warnings,
    )


def decode_grid(model: ModelSpec, gpu: GPUSpec, batches, seqs, kv: str = "bf16", tp: int = 1,
                weight_dtype: str | None = None, compute_dtype: str = "bf16") -> dict:
    """The same bound over a grid: arrays of shape (len(batches), len(seqs)), in one numpy pass."""
    import numpy as np

    b = np.asarray(batches, dtype=np.int64)[:, None]
    s = np.asarray(seqs, dtype=np.int64)[None, :]
    check_parallel(model, tp, 1)
    t = decode_terms(model, gpu, b.astype(np.float64), s, kv, tp, weight_dtype, compute_dtype)
    w = np.broadcast_to(t["weight_bytes_read"], (b.size, s.size))
    kvb = np.broadcast_to(t["kv_bytes_read"], (b.size, s.size))
    tm = np.broadcast_to(t["t_memory_s"], (b.size, s.size))
    tc = np.broadcast_to(t["t_compute_s"], (b.size, s.size))
    tb = np.maximum(tm, tc)
    return {
        "batch": np.broadcast_to(b, tb.shape), "seq": np.broadcast_to(s, tb.shape),
        "weight_bytes_read": w, "kv_bytes_read": kvb, "t_memory_s": tm, "t_compute_s": tc,
        "t_bound_s": tb, "compute_bound": tc > tm, "kv_share": kvb / (w + kvb), "tokens_per_s": b / tb,
    }


@dataclass
class PrefillBound:
    prompt: int
    flops: float
    t_compute_s: float
    t_memory_s: float
    t_bound_s: float
    bound_by: str
    weight_bytes_read: int


def prefill_bound(model: ModelSpec, gpu: GPUSpec, prompt: int, tp: int = 1, weight_dtype: str | None = None,
                  compute_dtype: str = "bf16") -> PrefillBound:
    """TTFT lower bound for one prompt of p tokens: max(compute, weights / bandwidth)."""
    sw = streamed_weights(model, weight_dtype)
    w = weight_bytes_read(sw, prompt, tp)
    attn = 0
    for name, n in model.layer_counts().items():
        attn += n * model.layer_kinds[name].prefill_attn_flops(prompt, tp)
    flops = 2 * active_matmul_params(model) * prompt / tp + attn
    tc = flops / peak_flops(gpu, compute_dtype)
    tm = w / gpu.memory_bandwidth_bytes_per_s
    return PrefillBound(prompt, float(flops), tc, tm, max(tc, tm), "compute" if tc >= tm else "memory", int(w))
