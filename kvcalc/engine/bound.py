"""The bound's pieces: one model on one GPU at one tensor-parallel size, what a decode step must
read and compute (weights, KV, FLOPs), the peak it computes at, and the prefill bound of a prompt.

roofline (the grid), steptime (a real step's time) and plan build on these; this module imports
none of them.
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from functools import cached_property
from math import ceil
from typing import Any

from kvcalc._record import record
from kvcalc.engine.alloc import LOGICAL, Allocation
from kvcalc.engine.kv import KVFootprint, check_parallel
from kvcalc.engine.search import first_true_each
from kvcalc.engine.weights import StreamedWeights, active_matmul_params, streamed_weights
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.layers import MLA
from kvcalc.specs.model import ModelSpec

ACT_BYTES = 2  # bf16/fp16 activations
KV_CROSSOVER_CAP = 2**40
BATCH_CAP = 2**24


# What a GPU spec without a peak at a precision lacks, as the error says it.
_NO_PEAK = {"fp8": " has no fp8 tensor units", "fp4": " has no fp4 tensor units", "int8": "'s spec gives no INT8 tensor peak"}


def peak_flops(gpu: GPUSpec, compute_dtype: str) -> float:
    """The dense peak at ``compute_dtype`` (GPUSpec.flops_bf16, flops_fp8, flops_fp4, flops_int8); one line where the
    spec has none."""
    if compute_dtype in ("bf16", "fp16"):
        return float(gpu.flops_bf16)
    if compute_dtype not in _NO_PEAK:
        raise KvcalcError(f"unknown compute dtype {compute_dtype[:20]!r}", "compute_dtype", "bf16, fp16, fp8, fp4 or int8")
    peak = getattr(gpu, f"flops_{compute_dtype}")
    if not peak:
        has = ["bf16", *(d for d in _NO_PEAK if getattr(gpu, f"flops_{d}"))]
        said = has[0] if len(has) == 1 else f"{', '.join(has[:-1])} or {has[-1]}"
        raise KvcalcError(f"{gpu.name}{_NO_PEAK[compute_dtype]}", "compute_dtype", f"{said} on this GPU")
    return float(peak)


def elementwise_bytes(model: ModelSpec, tp: int) -> int:
    """Bytes one token moves on one rank through the memory-bound kernels between the matmuls, 16-bit
    activations read and written (vllm/model_executor/layers: layernorm, activation, fused_moe):
    two fused residual-add RMSNorms a layer (read x and the residual, write both: 4 x hidden x 2 B
    each), each kind's own (rotary, the cache write: LayerKind.elementwise_bytes_per_token), a dense
    MLP's SiLU-and-multiply (read 2 x intermediate, write intermediate, split tp ways), an MoE layer's
    for its k routed experts and its shared experts, and the sum of the k experts' outputs (read k x
    hidden, write hidden). With expert parallelism a rank holds whole experts for every DP rank's
    tokens: the same bytes a rank as split tp ways."""
    h = model.hidden_size
    total = 0
    for name, n in model.layer_counts().items():
        total += n * model.layer_kinds[name].elementwise_bytes_per_token(tp)
    total += model.num_layers * 2 * 4 * h * 2
    moe = model.moe
    n_moe = moe.num_moe_layers if moe else 0
    total += (model.num_layers - n_moe) * 6 * model.intermediate_size // tp
    if moe:
        k = moe.num_experts_per_tok
        inter = moe.intermediate_size or moe.params_per_expert // (3 * h)
        shared = model.params.shared_experts // (3 * h * n_moe) if model.params is not None and model.params.shared_experts else 0
        total += n_moe * (6 * k * inter // tp + 6 * shared // tp + 2 * (k + 1) * h)
    return total


@record(eq=False)
class Decode:
    """One model on one GPU at one tensor-parallel size: the pieces every decode bound is made of."""

    model: ModelSpec
    gpu: GPUSpec
    kv: KVDtype
    tp: int = 1
    weight_dtype: str | None = None
    compute_dtype: str = "bf16"
    dp: int = 1
    """Data-parallel attention ranks stepping together: the experts see all their tokens."""
    mla_heads: int = 0
    """The query heads a rank's sparse-MLA kernel runs, prompt and decode tokens alike in the absorbed form
    (Engine.sparse_mla_heads: padded); 0: the model's own heads, in the form each layer kind counts."""
    kv_alloc: Allocation = LOGICAL
    """What a step reads of each layer's cache: the model's own need (LOGICAL), but an MLA layer as the engine caches
    it where that is per-head K and V, not the latent (engines.Engine.mla_storage, kv_form_alloc): its bytes, and its
    attention over those heads (MLA.stored_head_dims)."""

    peak: float = field(init=False)
    bw: int = field(init=False)
    sw: StreamedWeights = field(init=False)
    kvfp: KVFootprint = field(init=False)
    matmul_flops_per_token: int = field(init=False)

    def __post_init__(self) -> None:
        check_parallel(self.model, self.tp, 1)
        self.peak = peak_flops(self.gpu, self.compute_dtype)
        self.bw = int(self.gpu.memory_bandwidth_bytes_per_s)
        self.sw = streamed_weights(self.model, self.weight_dtype)
        self.kvfp = KVFootprint(self.model, self.kv, self.tp, 1, self.kv_alloc)
        self.matmul_flops_per_token = 2 * active_matmul_params(self.model)
        m = self.model.moe
        self.expert_flops_per_token = 2 * m.num_moe_layers * m.num_experts_per_tok * m.params_per_expert if m else 0
        """Of matmul_flops_per_token, the routed experts' share."""
        self.elementwise_bytes_per_token = elementwise_bytes(self.model, self.tp)
        """Bytes one token moves through the small kernels between the matmuls, on one rank."""

    def weight_read(self, batch: Any) -> Any:
        """Weight bytes one rank reads in a step of ``batch`` tokens on each DP rank."""
        if self.dp == 1:
            return self.sw.bytes_read(batch, self.tp)
        return self.sw.bytes_read(batch, self.tp, self.tp * self.dp, batch * self.dp)

    def kv_request(self, seq: Any) -> Any:
        """KV bytes one decode token of a request at context ``seq`` reads on one rank: all the request
        holds, or under sparse attention its indexer keys and the top-k latents (KVFootprint.read_bytes)."""
        return self.kvfp.read_bytes(seq)

    def attn_flops(self, seq: Any) -> Any:
        """Attention FLOPs of one decode token at context ``seq``, on one rank."""
        total: Any = 0 * seq
        for name, n in self.model.layer_counts().items():
            total = total + n * self._attn(self.model.layer_kinds[name], seq, False)
        return total

    def _attn(self, kind: Any, seq: Any, prefill: bool) -> Any:
        if self.mla_heads and getattr(kind, "sparse_topk", 0):
            return kind.kernel_attn_flops_per_token(seq, self.mla_heads)
        if isinstance(kind, MLA) and (dims := kind.stored_head_dims(self.kv_alloc)) is not None:
            return kind.stored_attn_flops_per_token(seq, self.tp, dims)
        return kind.prefill_attn_flops_per_token(seq, self.tp) if prefill else kind.attn_flops_per_token(seq, self.tp)

    def prefill_attn_flops(self, seq: Any) -> Any:
        """Attention FLOPs of one prompt token at context ``seq`` in a prefill chunk, on one rank."""
        total: Any = 0 * seq
        for name, n in self.model.layer_counts().items():
            total = total + n * self._attn(self.model.layer_kinds[name], seq, True)
        return total

    def flops(self, batch: Any, attn: Any) -> Any:
        # Each token multiplies through the dense matrices and its own k experts; attention reads its context.
        return self.matmul_flops_per_token * batch / self.tp + attn * batch

    @cached_property
    def resident_per_gpu(self) -> int:
        """Weights one GPU holds: a tp-th of them, the routed experts a (dp x tp)-th."""
        if self.dp == 1:
            return ceil(Fraction(self.sw.resident_bytes, self.tp))
        experts = self.sw.expert_bytes_each * self.sw.moe_layers * self.sw.num_experts
        return ceil((self.sw.resident_bytes - experts) / self.tp + experts / (self.tp * self.dp))

    def _exact_int64(self, longest: int) -> bool:
        """Whether a request's bytes and a token's FLOPs up to ``longest`` tokens fit numpy's int64."""
        return bool(self.kv_request(longest) < 2**62 and self.attn_flops(longest) < 2**62)

    def per_context(self, seqs: list[int]) -> tuple[list[int], list[int]]:
        """(KV bytes of one request, attention FLOPs of one token) at each context, exact."""
        if len(seqs) > 16 and self._exact_int64(max(seqs)):
            import numpy as np

            arr = np.asarray(seqs, dtype=np.int64)
            kv = np.broadcast_to(self.kv_request(arr), arr.shape)
            attn = np.broadcast_to(self.attn_flops(arr), arr.shape)
            return [int(x) for x in kv.tolist()], [int(x) for x in attn.tolist()]
        return [int(self.kv_request(x)) for x in seqs], [int(self.attn_flops(x)) for x in seqs]

    def kv_equals_weights(self, batches: list[int], cap: int = KV_CROSSOVER_CAP) -> list[int | None]:
        """For each batch, the context at which the KV bytes a step reads reach the weight bytes it
        reads, rounded down to a whole token (the last s with b x KV(s) <= weights). None if KV never
        reaches them (windowed or state layers, or not before ``cap`` tokens)."""
        import numpy as np

        per_token, state = self.kvfp.per_token, self.kvfp.state_bytes
        if per_token:
            cap = min(cap, (2**62 - state) // per_token)  # keep a request's bytes inside int64
        # b x KV(s) > W  <=>  KV(s) > W // b, all in integers.
        threshold = np.asarray([int(self.weight_read(b)) // b for b in batches], dtype=np.int64)
        first_over = first_true_each(lambda s: self.kv_request(s) > threshold, np.ones(len(batches)), np.full(len(batches), cap))
        return [None if x < 0 else int(x) - 1 for x in first_over.tolist()]

    def compute_bound_from(
        self, seqs: list[int], kv: list[int] | None = None, attn: list[int] | None = None, cap: int = BATCH_CAP
    ) -> list[int | None]:
        """For each context, the smallest batch at which the compute term reaches the memory term
        (None: not up to ``cap``). Floats, as the two terms are."""
        import numpy as np

        if kv is None or attn is None:
            kv, attn = self.per_context(seqs)
        kv_f = np.asarray(kv, dtype=np.float64)
        attn_f = np.asarray(attn, dtype=np.float64)

        def binds(b: Any) -> Any:
            bf = b.astype(np.float64)
            w = np.asarray(self.weight_read(b if not self.sw.moe_layers else bf), dtype=np.float64)
            return self.flops(bf, attn_f) / self.peak >= (w + kv_f * bf) / self.bw

        first = first_true_each(binds, np.ones(len(seqs)), np.full(len(seqs), cap))
        return [None if x < 0 else int(x) for x in first.tolist()]

    def kv_equals_weights_at_seq(self, batch: int, cap: int = KV_CROSSOVER_CAP) -> int | None:
        return self.kv_equals_weights([batch], cap)[0]

    def compute_bound_at_batch(self, seq: int, cap: int = BATCH_CAP) -> int | None:
        return self.compute_bound_from([seq], cap=cap)[0]

    def allreduce(self, batch: int) -> tuple[int, float]:
        """Two all-reduces of b x hidden activations per layer, ring cost 2(tp-1)/tp of the bytes,
        over one direction of the interconnect (half the bidirectional datasheet figure)."""
        if self.tp == 1:
            return 0, 0.0
        if not self.gpu.interconnect_bytes_per_s:
            raise KvcalcError(
                f"{self.gpu.name} has no GPU interconnect in its spec", "allreduce", "a GPU spec with interconnect_bytes_per_s"
            )
        payload = 2 * self.model.num_layers * batch * self.model.hidden_size * ACT_BYTES
        moved = payload * 2 * (self.tp - 1) / self.tp
        return payload, moved / (self.gpu.interconnect_bytes_per_s / 2)


@record(frozen=True)
class PrefillBound:
    prompt: int
    flops: float
    t_compute_s: float
    t_memory_s: float
    t_bound_s: float
    bound_by: str
    weight_bytes_read: int


def prefill_bound(
    model: ModelSpec, gpu: GPUSpec, prompt: int, tp: int = 1, weight_dtype: str | None = None, compute_dtype: str = "bf16"
) -> PrefillBound:
    """TTFT lower bound for one prompt of p tokens: max(compute, weights / bandwidth)."""
    sw = streamed_weights(model, weight_dtype)
    w = sw.bytes_read(prompt, tp)
    attn = 0
    for name, n in model.layer_counts().items():
        attn += n * model.layer_kinds[name].prefill_attn_flops(prompt, tp)
    flops = 2 * active_matmul_params(model) * prompt / tp + attn
    tc = flops / peak_flops(gpu, compute_dtype)
    tm = w / gpu.memory_bandwidth_bytes_per_s
    return PrefillBound(prompt, float(flops), tc, tm, max(tc, tm), "compute" if tc >= tm else "memory", int(w))
