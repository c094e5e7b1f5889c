"""The memory budget, the KV pool, concurrency and the longest request that fits.

``fit`` is one function over the engine records of :mod:`kvcalc.engine.engines`: the budget line by
line (each estimated line with a low and a high and its reason), the pool carved as the engine
carves it (vLLM's block pool shared by its KV cache groups, SGLang's token pool with its sliding
pool, TensorRT-LLM's pools per window size), how many requests of a length it holds, and the
longest one. docs/engines.md cites the released code behind every rule.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from fractions import Fraction
from math import ceil
from typing import Any, Literal

from kvcalc._record import record
from kvcalc.engine.alloc import PPSplit
from kvcalc.engine.deployment import Shape, check_shape, engine_flags, node_of, place, role_splits
from kvcalc.engine.encoder import EncoderProfile, encoder_profile, modelled as encoder_modelled
from kvcalc.engine.engines import HOPPER_GPUS, Engine, MemFractionRule, engine as parse_engine, sglang_graph_band
from kvcalc.engine.kv import KVFootprint, dtype_note, start_check_footprint, stored_kv_dtype
from kvcalc.engine.track import MemoryRecord, memory_record
from kvcalc.engine.weights import (
    WeightFormats,
    flag_layout,
    mla_absorbed_bytes,
    mla_materialized as mla_materialized_weights,
    moe_width,
    rope_cache_bytes,
    rope_cache_factor,
    weights,
)
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import BF16, KVDtype, kv_dtype, normalize_weight_dtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.layers import MLA
from kvcalc.specs.model import ModelSpec
from kvcalc.units import count_of, fmt_iec

GiB = 2**30
MiB = 2**20

# ---- estimates of what an engine measures at start-up ----------------------------------------

Basis = Literal["given", "estimated", "computed", "none"]


@record(frozen=True)
class Estimate:
    """One term of the budget: kvcalc's best figure, the range it may really take and why.

    ``given``: passed by you (exact). ``computed``: exact from the spec. ``estimated``: an engine
    measures it at start-up and kvcalc can only bound it. ``none``: the engine does not take it."""

    key: str
    best: int
    low: int
    high: int
    basis: Basis
    reason: str = ""

    @property
    def exact(self) -> bool:
        return self.low == self.high


def _given(key: str, value: int) -> Estimate:
    return Estimate(key, value, value, value, "given", "passed by you")


def activation_bytes_per_token(model: ModelSpec, tp: int = 1, act_bytes: int = 2) -> int:
    """The largest live tensors of one token's forward pass on one GPU, in bytes.

    Dense MLP: gate and up (2 x intermediate / tp) and the activated product (intermediate / tp)
    beside three hidden-size buffers (residual, normed input, layer output). MoE layers (vLLM's
    fused MoE): per routed copy, gate+up, the product and the down projection's output
    (k x (3 x moe_intermediate / tp + hidden)), beside the same hidden buffers. Fitted to vLLM
    0.6's profile of Llama-3.1-8B on an RTX 3090 (vllm#10517: 2.07 GiB at 20,000 tokens, 2.99 GiB
    at 29,000; this gives 2.06 and 2.99)."""
    h = model.hidden_size
    dense = 3 * -(-model.intermediate_size // tp)
    mlp = dense
    m = model.moe
    if m is not None:
        routed = m.num_experts_per_tok * (3 * -(-moe_width(model) // tp) + h)
        mlp = routed if m.num_moe_layers >= model.num_layers else max(dense, routed)
    return (mlp + 3 * h) * act_bytes


SAMPLERS = ("flashinfer", "pytorch")
"""vLLM V1's top-k/top-p samplers, as FitInputs.sampler names them."""

PRE_AMPERE = ("t4",)
"""Catalog GPUs before sm_80, where vLLM 0.21-0.26 runs PyTorch's sampler, not FlashInfer's."""


def sampler_bytes(model: ModelSpec, rows: int, per_logit: int = 14) -> int:
    """The sampler's warm-up over ``rows`` requests: ``per_logit`` bytes per vocabulary entry per
    row at its peak (the engine record's figure: 14 with FlashInfer's sampler, 28 to 32 where
    PyTorch sorts the logits for top-k/top-p)."""
    return rows * model.vocab_size * per_logit


TRT_UNNAMED_BYTES_PER_TOKEN = 8
"""Bytes a sequence slot and token of max_seq_len that TensorRT-LLM#1188's logged runtime buffers hold beyond those
trt_decoder_bytes names (2.66 GB logged against 2.16 GiB counted at B 2,048 and S 32,768: 0.5 GiB, 8 B x B x S): the
estimate's high end takes them."""


def trt_decoder_bytes(model: ModelSpec, rows: int, seq: int, tp: int = 1) -> int:
    """What TensorRT-LLM's C++ runtime allocates for ``rows`` sequences (max_batch_size) of up to ``seq``
    tokens (max_seq_len) before it sizes the KV cache, on each GPU, at one beam and the default fp32 logits
    (trtGptModelInflightBatching.cpp createBuffers then createDecoder): the runtime's logits, [B, Vp] fp32,
    its per-slot output ids and log-probs, 8 B a token, and its beam search's cache indirection in and out,
    [B, S] int32 each (batch_manager/runtimeBuffers.cpp, decoderBuffers.cpp); the decoder's embedding bias and
    runtime logits, [B, Vp] fp32 each (runtime/decoderState.cpp, decodingLayerWorkspace.cpp), its top-k scratch, B x Vp x 4 + 64 x B x 1,024
    (TopKSamplingLayer, getTopKWorkspaceSize at TOP_K_MAX 1,024), the occurrence penalties' int32 [B, V]
    (PenaltyLayer, on in the default TopKTopP mode) and four [B, S] buffers of 4 B (ids, parent ids,
    log-probs and their tiled copy). Vp is the vocabulary padded to a multiple of the TP size. Read in
    NVIDIA/TensorRT-LLM's 1.0-era C++ (commits 00825c4e, 092a5a15, 000a01de, 00fdb650, 1a43c7d6, 03961722);
    the decoder's part reproduces the 5.76 GB a late-2024 release logged for B 2,048, S 32,768 and a
    151,936-token vocabulary (NVIDIA/TensorRT-LLM#1188: 5.762 GiB), and its runtime buffers, 2.66 GB logged, come to
    2.16 GiB here: one more [B, S] buffer of 8 B that release held is not named (TRT_UNNAMED_BYTES_PER_TOKEN)."""
    v = model.vocab_size
    vp = -(-v // tp) * tp
    runtime = rows * vp * 4 + rows * seq * 8 + rows * seq * 8
    decoder = 3 * rows * vp * 4 + 4 * rows * v + 64 * rows * 1024 + 16 * rows * seq
    return runtime + decoder


def triton_sampler_buffer_bytes(model: ModelSpec, rows: int, sms: int) -> int:
    """The fp32 buffer vLLM's Triton top-k/top-p kernel caches on the device over ``rows`` requests
    on a GPU of ``sms`` multiprocessors: min(next power of 2 of min(sms, rows), sms) rows of the
    vocabulary (v1/sample/ops/topk_topp_triton.py apply_top_k_top_p_triton, 0.17.0 to 0.33.0; under
    8 rows PyTorch's sort runs instead, topk_topp_sampler.py apply_top_k_top_p)."""
    if rows < 8:
        return 0
    programs = min(sms, rows)
    return min(1 << (programs - 1).bit_length(), sms) * model.vocab_size * 4


def cublas_workspace_bytes(gpu: GPUSpec) -> int:
    """torch's cuBLAS and cuBLASLt workspaces for one handle and stream, which its caching allocator
    holds from the first matmul on (aten/src/ATen/cuda/CublasHandlePool.cpp, pytorch/pytorch at
    26a3905: parseChosenWorkspaceSize, 4096 KiB x 8 on compute capability 9.0, else 4096 KiB x 2 +
    16 KiB x 8; parseCUDABlasLtWorkspaceSize, 1,024 KiB). 0 for other vendors: ROCm's hipBLAS and
    hipBLASLt workspaces differ by build and were not read."""
    if gpu.vendor != "NVIDIA":
        return 0
    cublas = 4096 * 1024 * 8 if gpu.name in HOPPER_GPUS else 4096 * 1024 * 2 + 16 * 1024 * 8
    return cublas + 1024 * 1024


def moe_workspace_bytes(model: ModelSpec, tokens: int, tp: int = 1, dtype: str | None = None) -> int:
    """The fused-MoE modular kernel's two workspaces for a batch of ``tokens`` on one GPU, as vLLM's
    TritonExperts sizes them (model_executor/layers/fused_moe/fused_moe.py workspace_shapes, 0.19.0):
    M x k x max(i, hidden) for the first, which the M x hidden output shares, and M x k x max(2i, hidden)
    for the second, i the expert's intermediate width per TP rank, 16-bit, each rounded to 256 B. Counted
    for 16-bit experts and, at the same sizes, fp8 ones (their DeepGEMM and CUTLASS backends' own shapes
    were not read; the peer records' DeepSeek-R1 starts on H200 under 0.14.1, 0.18.0 and 0.19.0 land within
    2% with them); 0 for a dense model and for experts in 4 bits (MXFP4, Marlin's int4: kernels of their
    own, not read)."""
    m = model.moe
    f = WeightFormats.of(model, dtype)
    q = f.quantization
    if (
        m is None
        or f.experts not in ("bf16", "fp16", "fp32", "fp8")
        or (q is not None and "experts" in q.roles and "fp8" not in q.method)
    ):
        return 0
    i, h, k = -(-moe_width(model) // tp), model.hidden_size, m.num_experts_per_tok
    first = max(tokens * k * max(i, h), tokens * h) * 2
    second = tokens * k * max(2 * i, h) * 2
    return -(-first // 256) * 256 + -(-second // 256) * 256


def activation_estimate(
    model: ModelSpec,
    tokens: int,
    tp: int = 1,
    rows: int = 256,
    act_bytes: int = 2,
    sampler_per_logit: int = 14,
    sampler_range: tuple[int, int] | None = None,
    held: int = 0,
    row_copies: int = 0,
    triton_sms: int | None = None,
    workspace: int = 0,
) -> Estimate:
    """vLLM's profile run: one forward pass over ``tokens`` tokens (max_num_batched_tokens), then
    the sampler over ``rows`` requests (max_num_seqs) with the hidden states still alive; the peak
    is the larger of the two. Logits are gathered whole on every TP rank (V1's logits processor), so
    the sampler's share does not shrink with TP.

    ``sampler_range``: the sampler's bytes per logit at its low and high ends, and the forward pass
    0.85x to 1.15x (V1: 17 of 18 public breakdowns inside, vLLM 0.10 to 0.26); without it, V0's
    0.6x to 1.6x of the whole peak. ``held``: buffers the forward pass leaves allocated (vLLM's fused-MoE
    workspaces, Engine.moe_workspace_held), alive under the sampler too. ``row_copies``: copies of the
    sampler run's rows of hidden state alive under it (Engine.sampler_row_copies). ``triton_sms``: the
    GPU's multiprocessors where vLLM's Triton top-k/top-p kernel runs, which caches an fp32 buffer of
    up to that many rows of the vocabulary (triton_sampler_buffer_bytes); None: it does not run.
    ``workspace``: torch's cuBLAS workspaces, allocated by the profile's first matmul and alive through
    both phases (cublas_workspace_bytes)."""
    forward = tokens * activation_bytes_per_token(model, tp, act_bytes)
    r = min(rows, tokens)
    hidden = tokens * model.hidden_size * act_bytes
    hidden += row_copies * r * model.hidden_size * act_bytes
    buffer = triton_sampler_buffer_bytes(model, r, triton_sms) if triton_sms else 0

    def sampler(b: int) -> int:
        return sampler_bytes(model, r, b) + hidden + held + buffer

    best = max(forward, sampler(sampler_per_logit)) + workspace
    if sampler_range is None:
        low, high, words = best * 6 // 10, best * 8 // 5, "so the range is 0.6x to 1.6x"
    else:
        lo_b, hi_b = sampler_range
        low = max(forward * 85 // 100, sampler(lo_b)) + workspace
        high = max(forward * 115 // 100, sampler(hi_b)) + workspace
        words = (
            f"so the range takes the forward pass at 0.85x to 1.15x and the sampler at {lo_b} to {hi_b} B a logit "
            f"({sampler_per_logit} at best)"
        )
    return Estimate(
        "activation",
        best,
        min(low, best),
        max(high, best),
        "estimated",
        f"a forward pass over {tokens:,} tokens (max_num_batched_tokens) and the sampler over {r:,} "
        + (f"requests beside the fused-MoE workspaces the pass keeps ({_gib(held)})" if held else "requests")
        + (f" and the Triton top-k/top-p kernel's fp32 buffer ({_gib(buffer)})" if buffer else "")
        + (f", beside torch's cuBLAS workspaces ({_gib(workspace)})" if workspace else "")
        + "; "
        + "the profiled peak varies with the attention backend, torch.compile's fusions and the sampler, "
        + words,
    )


def engine_encoder_profile(model: ModelSpec, eng: Engine, tp: int, batched_tokens: int, model_len: int) -> EncoderProfile | None:
    """The vision encoder's profile under this engine release's rules (kvcalc.engine.encoder), or None
    where kvcalc does not model it."""
    return encoder_profile(
        model,
        eng.vision_profile,
        tp,
        batched_tokens,
        model_len,
        eng.encoder_cache_padded,
        eng.video_tokens_formatted,
        eng.video_frames_cap,
        eng.video_frames_less_image,
    )


def with_encoder(text: Estimate, enc: EncoderProfile, later: str = "") -> Estimate:
    """The profile's activation peak with vLLM V1's vision-encoder pass before the text pass: the
    larger of the encoder's peak and the text pass's with the dummy pixels and cached embeddings
    still alive (kvcalc.engine.encoder). The encoder's peak is counted from its code's live tensors;
    its range, 0.95x to 1.15x, leaves room for the attention backend's and the patch embedding's
    workspaces."""

    def peak(t: int, e: int) -> int:
        return max(e, t + enc.held_bytes)

    best = peak(text.best, enc.peak_bytes)
    # Releases the record covers past the one read may hold far less: the low end takes none of it.
    low = peak(text.low, 0 if later else enc.peak_bytes * 95 // 100)
    high = peak(text.high, enc.peak_bytes * 115 // 100)
    which = "the encoder's" if enc.peak_bytes >= text.best + enc.held_bytes else "the text pass's"
    words = (
        f"; before it, the vision encoder's profile on {enc.items} dummy {enc.modality}{'s' if enc.items > 1 else ''} of "
        f"{enc.patches:,} patches (an encoder budget of {enc.budget:,} tokens) peaks at {_gib(enc.peak_bytes)} "
        f"({float(enc.units):g} hidden states a patch at its widest), and {_gib(enc.held_bytes)} of pixels and "
        f"embeddings{' (padded to the budget)' if enc.padded else ''} stay alive through the text pass: {which} peak "
        "is the larger" + (f" (counted from the release read; {later}, so the range's low end takes none of it)" if later else "")
    )
    return Estimate(text.key, best, min(low, best), max(high, best), text.basis, text.reason + words)


def _mxfp4_padding(model: ModelSpec, tp: int, n_round: int, h_round: int) -> Fraction:
    """How much an engine's mxfp4 MoE kernels grow the expert matrices by padding the intermediate
    size per partition to a multiple of ``n_round`` and the hidden size to ``h_round``."""
    inter = max(1, -(-moe_width(model) // tp))
    h = model.hidden_size
    return Fraction(-(-inter // n_round) * n_round * (-(-h // h_round) * h_round), inter * h)


LOADED_WEIGHTS_MARGIN_PCT = 2
"""The range's high end over the counted weights, for an engine's measured load (weights_estimate)."""


def weights_estimate(
    model: ModelSpec,
    dtype: str | None,
    tp: int,
    pp: int,
    engine_buffers: bool,
    pads_mxfp4: bool = False,
    engine: str = "vllm",
    dp: int = 1,
    ep: int = 1,
    splits: dict[str, int] | None = None,
    mla_absorbed: bool = False,
    pp_split: PPSplit = "before-last",
    mla_materialized: bool = False,
) -> Estimate:
    """Weight memory on the most loaded GPU: the checkpoint's bytes by role (kvcalc.engine.weights),
    plus, for serving engines, the rotary cos/sin cache, and with ``mla_absorbed`` vLLM V1's 16-bit
    copies of a quantized MLA kv_b_proj, and with ``mla_materialized`` vLLM 0.7's materialized MLA decode
    weights (kvcalc.engine.weights.MLAMaterialized). Exact for 16-bit checkpoints; a range where an engine pads
    quantized matrices for its kernels or where a vision tower is estimated."""
    w = weights(model, dtype, tp, pp, dp, ep, splits, pp_split)
    absorbed = mla_absorbed_bytes(model, dtype, tp, pp, pp_split) if mla_absorbed else 0
    materialized = mla_materialized_weights(model, dtype, tp, pp, pp_split).resident_bytes if mla_materialized else 0
    best = w.per_gpu_bytes + (rope_cache_bytes(model, engine) if engine_buffers else 0) + absorbed + materialized
    low = high = best
    why = [f"the checkpoint's bytes by role ({WeightFormats.of(model, dtype).describe()}), " + w.note]
    if engine_buffers:
        why.append(
            "plus the rotary cos/sin cache (max_position_embeddings x "
            + ("4 (a multimodal rotary embedding) x " if rope_cache_factor(model) > 1 else "")
            + "rotary dims x 2 B)"
        )
    if absorbed:
        why.append(f"plus vLLM's 16-bit copy of each MLA layer's quantized kv_b_proj for its absorbed decode ({_gib(absorbed)})")
    if materialized:
        why.append(
            "plus vLLM 0.7's materialized MLA decode weights on each MLA layer (W_Q_UK, W_QR and W_UV_O, and a "
            f"quantized kv_b_proj's 16-bit copy) ({_gib(materialized)})"
        )
    q = model.quantization
    if q is not None and not dtype and q.method == "mxfp4" and pads_mxfp4:
        # vllm/model_executor/layers/quantization/mxfp4.py (0.11) Mxfp4MoEMethod.create_weights: the Marlin
        # backend (GPUs before Blackwell; vllm#23278 logs it on an H100) rounds the intermediate size per
        # partition up to 128 and the hidden size to 256 (gpt-oss: 2,880 -> 2,944 and 3,072, +9.0%);
        # Triton's kernels round to 64 (no padding for gpt-oss); Blackwell's FlashInfer backends to 256 and 256.
        experts = w.roles.get("experts", 0)
        width = 1 if ep > 1 else tp * dp  # EP keeps each expert whole
        best += int(experts * (_mxfp4_padding(model, width, 128, 256) - 1))
        high = best + int(experts * (_mxfp4_padding(model, width, 256, 256) - _mxfp4_padding(model, width, 128, 256)))
        why.append(
            "vLLM pads mxfp4 expert matrices to its kernels' tiles (Marlin's, as on an H100; from none with Triton's "
            "kernels to Blackwell's FlashInfer tiles)"
        )
    if dtype and flag_layout(model, dtype) is not None:
        # A guessed layout: at the low end the embeddings and LM head are quantized too.
        from kvcalc.specs.dtypes import weight_bits

        head = w.roles.get("embed", 0) + w.roles.get("lm_head", 0)
        low -= int(head * (1 - weight_bits(dtype) / 16))
        why.append(f"a checkpoint that also quantizes the embeddings and LM head would hold {_gib(low)}")
    if model.checkpoint is not None and not dtype:
        why.append(f"read from {model.checkpoint.source}")
    if w.vision_bytes and model.vision is None and not (model.checkpoint and model.checkpoint.role_bytes and not dtype):
        high += w.vision_bytes * 15 // 100
        low -= w.vision_bytes * 15 // 100
        why.append("the vision tower is estimated from vision_config (+-15%)")
    if engine in ("vllm", "sglang"):
        # What an engine measures loaded ('Model loading took', 'Load weight end') against kvcalc's count, in
        # the 124 public start-up logs of tests/logs/real that printed it when this was set: at most 2% over in
        # 121 (130 of 133 with the sixteenth held-out set, scored after; median +0.1%;
        # Qwen2.5 checkpoints +0.2 to +1.2%, Llama's exact), under by over 0.1% in 4 (gpt-oss's mxfp4 padding, to -3.8%).
        # The over is buffers a model's code registers beyond the rotary cache and the allocator's rounding,
        # not itemised here, so the range's high end takes it. The three beyond 2%: a 4-bit AWQ export that
        # keeps more than its guessed layout in 16 bits (+9%), Gemma 2 under vLLM 0.5.4 (+9%), MiniMax-M2.5 in
        # fp8 on MI300X (+2.4%).
        high += best * LOADED_WEIGHTS_MARGIN_PCT // 100
        why.append(f"up to {LOADED_WEIGHTS_MARGIN_PCT}% more as the engine loads it (public logs: 0 to 2% over the count)")
    basis: Basis = "computed" if low == high else "estimated"
    return Estimate("weights", best, low, high, basis, "; ".join(why))


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def non_torch_v1(model: ModelSpec, gpu: GPUSpec, tp: int, pp: int, rows: int, penalty: float) -> Estimate:
    """vLLM V1's non-torch memory: what grows outside PyTorch's allocator after its first memory
    snapshot, which it takes once the CUDA context exists and before NCCL starts
    (v1/worker/gpu_worker.py, 0.10.1): cuBLAS handles and kernel images, and with more than one GPU
    NCCL's buffers and the custom all-reduce's (2 x 8 MiB a rank), symmetric-memory all-reduce from
    0.11 (32 to 128 MiB). Public breakdowns: 0.02 to 0.46 GiB on one GPU (0.24 to 0.27 in most of
    llm-d-planner#205's 0.19.0 starts on H100s, 0.33 under 0.26.1 on an A100, 0.46 for Granite-3.3-8B;
    the range's high end was 0.25 GiB until 2026-12-02), 0.1 to 0.75 GiB on several;
    on NVSwitch Hopper systems up to 2.2 GiB (vllm-project/vllm#21429's TP 4 profile: 2.04 GiB; a 0.10.2
    TP 2 start on H200s: 1.38 GiB; 0.19.0 at TP 2 and 4 on H100s: 2.06 to 2.21 GiB, among them
    llm-d-planner#205's 2.07, 2.07, 2.09 and 2.17): NCCL's buffers, connected at their first collective
    (NCCL_RUNTIME_CONNECT, on by default from 2.22), land in the profile even where 0.11 and later take
    the snapshot after NCCL starts. The high end there, and at TP 2 or more the best figure, 2 GiB
    (since 2026-12-02; 0.5 before, which left such starts 3-13% over).
    From 0.27 the profile counts every persistent buffer: the sampler's penalty state,
    4.125 B per vocabulary entry per max_num_seqs row (v1/worker/gpu/sample/penalties.py, 0.33.0)."""
    extra = int(penalty * rows * model.vocab_size)
    why = ""
    if extra:
        why = f"; plus the sampler's penalty buffers, {penalty:g} B x {rows:,} rows x {model.vocab_size:,} vocabulary"
    if tp * pp == 1:
        return Estimate(
            "non_torch",
            80 * MiB + extra,
            16 * MiB + extra,
            512 * MiB + extra,
            "estimated",
            "cuBLAS handles and kernel images after vLLM's first snapshot; public V1 logs of one GPU show 0.02 to 0.46 GiB" + why,
        )
    nvlink = bool(gpu.interconnect_bytes_per_s)
    nvswitch = hopper_nvswitch(gpu)
    # On Hopper NVSwitch a TP (or DP x TP) group's NCCL buffers come to about 2 GiB a GPU in every public
    # breakdown (1.38 to 2.21 GiB, median 2.07); pipeline stages alone exchange by send/recv (0.07 GiB
    # at PP 2 and 4 in llm-d-planner#205's 0.19.0 logs) and keep the NVLink figure.
    best = (2048 if nvswitch and tp > 1 else 512 if nvlink else 160) * MiB
    high, seen = (
        (2304 * MiB, "0.1 to 2.2 GiB, 2.0 to 2.2 at TP 2 and 4 on Hopper NVSwitch")
        if nvswitch
        else (768 * MiB, "0.1 to 0.75 GiB")
    )
    return Estimate(
        "non_torch",
        best + extra,
        96 * MiB + extra,
        high + extra,
        "estimated",
        "NCCL and all-reduce buffers (custom all-reduce 2 x 8 MiB a rank, symmetric memory 32 to 128 MiB on NVLink) "
        f"and cuBLAS handles; public V1 logs of 2 to 8 GPUs show {seen}" + why,
    )


# aiter's custom all-reduce as SGLang builds it on HIP with aiter's default max_size of 1 GiB (ROCm/aiter 32e1e6d,
# aiter/dist/device_communicators/custom_all_reduce.py: meta = meta_size() + 2 x max_size, uncached, where
# meta_size() is the Signal struct's 5,504 B at kMaxBlocks 80, csrc/kernels/custom_all_reduce.cuh; the IPC
# input buffer of max_size; rank_data of 8 MiB), a rank.
AITER_CUSTOM_AR_BYTES = (5_504 + 2 * GiB) + GiB + 8 * MiB


def quick_reduce_bytes(ranks: int) -> int:
    """QuickAllReduce's buffer a rank at its default maximum problem of 2 GiB (sgl-kernel
    csrc/allreduce/quick_all_reduce_hip.h DeviceComms::init, as vLLM's csrc/quickreduce/quick_reduce.h): one
    allocation of 2 x ranks x 1,216 x 4 B of flags and 2 x 2 GiB of data, and ranks x 8 B of handles."""
    return 2 * ranks * 1216 * 4 + 2 * 2 * GiB + ranks * 8


def start_up_estimate(tp: int, pp: int, gpu: GPUSpec, hip_buffers: bool = False) -> Estimate:
    """SGLang: what the device holds before the weights load, which its budget leaves out of the
    memory it takes mem_fraction_static of: the CUDA context, and with more than one GPU what
    ``init_torch_distributed`` makes (model_executor/model_runner.py, 0.5.3): NCCL communicators,
    each with its buffers, and the custom all-reduce's. NCCL's NVLS is off (entrypoints/engine.py
    sets NCCL_NVLS_ENABLE to --enable-nccl-nvls, 0.4.4.post3 and 0.5.3). Read from SGLang's logs as
    the device total less 'Load weight begin. avail mem' (the smallest over ranks):

    - one GPU: about 0.6 GiB (an H200, sglang#6753: 139.80 - 139.20);
    - GPUs joined by NVLink, where NCCL runs many channels and the custom all-reduce is on: 2.56 GiB
      on 8 H100s (sglang#1386, 0.3.0), 2.25 on 16 H800s over two nodes (sglang#4161, 0.4.3.post2),
      3.15 on 8 B200s (sglang#5390, 2025-05: 'Init torch distributed ends. mem usage=2.50 GB') and
      2.51 on 8 H200s (sglang#11716, 0.5.3: 2.01 GB of it distributed init). No log shows 2 to 4
      NVLink ranks, so the range keeps 0.9 GiB at its low end;
    - GPUs on PCIe: 0.37 GiB on 4 L4s (llms-in-clouds, 0.4.3.post4: 'mem usage=0.13 GB') and 1.13
      on 4 RTX PRO 6000s (sglang#40558, NCCL 2.29.7: 'mem usage=0.39 GB', a Blackwell context).

    The device totals are kvcalc's runtime estimates (gpu_specs), good to about 0.1 GiB.

    ``hip_buffers`` (Engine.hip_allreduce_buffers: SGLang from 0.5.10 on an AMD GPU) with a TP group of 2 or
    more counts what the code allocates there instead: aiter's custom all-reduce (AITER_CUSTOM_AR_BYTES) and
    QuickAllReduce's buffer (quick_reduce_bytes) as SGLang's ROCm image runs it, RCCL's two TP communicators
    (RCCL_TP_COMMUNICATORS: PyNccl's and torch's group, which SGLang pre-warms on HIP, server_args.py
    pre_warm_nccl) and the one-GPU context. The low end leaves QuickAllReduce out (its quantization unset, the
    code's default) and takes RCCL's first communicator alone (about 1 GiB)."""
    if hip_buffers and tp > 1:
        best = 600 * MiB + AITER_CUSTOM_AR_BYTES + quick_reduce_bytes(tp) + RCCL_TP_COMMUNICATORS
        return Estimate(
            "non_torch",
            best,
            450 * MiB + AITER_CUSTOM_AR_BYTES + GiB,
            best + 256 * MiB,
            "estimated",
            "in use before the weights (the HIP context, RCCL communicators, aiter's custom all-reduce of "
            f"{_gib(AITER_CUSTOM_AR_BYTES)} and QuickAllReduce's {_gib(quick_reduce_bytes(tp))} a GPU, which SGLang's "
            "ROCm image turns on); pass --gpu-free with SGLang's 'Load weight begin. avail mem' figure for the exact "
            "budget",
        )
    if tp * pp == 1:
        return Estimate(
            "non_torch",
            600 * MiB,
            450 * MiB,
            768 * MiB,
            "estimated",
            "in use before the weights (the CUDA context); pass --gpu-free with SGLang's 'Load weight begin. avail mem' "
            "figure for the exact budget",
        )
    if node_of(gpu).nvlink_domain > 1:
        return Estimate(
            "non_torch",
            2560 * MiB,
            920 * MiB,
            3277 * MiB,
            "estimated",
            "in use before the weights (the CUDA context, NCCL communicators, custom all-reduce buffers): SGLang's logs "
            "of 8 and 16 NVLink GPUs show 2.25 to 3.15 GiB; pass --gpu-free with SGLang's 'Load weight begin. avail "
            "mem' figure for the exact budget",
        )
    return Estimate(
        "non_torch",
        768 * MiB,
        358 * MiB,
        1229 * MiB,
        "estimated",
        "in use before the weights (the CUDA context, NCCL communicators over PCIe): SGLang's logs of 4 PCIe GPUs "
        "show 0.37 to 1.13 GiB; pass --gpu-free with SGLang's 'Load weight begin. avail mem' figure for the exact "
        "budget",
    )


def hopper_nvswitch(gpu: GPUSpec) -> bool:
    """An NVSwitch domain of Hopper or later: an NVIDIA GPU with fp8 units whose NVLink domain is over
    2 GPUs (an H100 NVL pair is not one), where NCCL has NVLS and its largest buffers."""
    return gpu.vendor == "NVIDIA" and gpu.flops_fp8 is not None and node_of(gpu).nvlink_domain > 2


def nvls_ranks(gpu: GPUSpec, tp: int) -> int:
    """The ranks of a TP group that NCCL's NVLS joins on one node: NVLS needs a Hopper NVSwitch
    domain (hopper_nvswitch) and more than 2 ranks (vllm-project/vllm#9699); 0 where it is off."""
    node = node_of(gpu)
    ranks = min(tp, node.gpus_per_node, node.nvlink_domain)
    return ranks if hopper_nvswitch(gpu) and ranks > 2 else 0


# The high end of V0's non-torch memory on AMD GPUs, where the runtime's own memory is counted: the one
# public breakdown of a ROCm V0 start on an MI300X shows 6.07 GiB at TP 1 (llm-tracker.info's 'vLLM
# MI300X vs H100', a ROCm build of 0.6.4's profile: non_torch_memory=6.07GiB beside 67.70 GB of
# weights); the same profile on other ROCm cards shows 0.29 to 0.73 GiB (MI50s, nlzy/vllm-gfx906#10;
# a 24 GB Radeon, ServerlessLLM's docs/stable/store/rocm_quickstart.md; gfx906 cards, Said-Akbar/triton-gcn5#4). With more than one GPU, RCCL's
# buffers come on top: about 1 GiB for a rank's first communicator and 0.65 GiB for each further one
# (LUMI's measurements on MI250X, Lumi-supercomputer/LUMI-AI-Guide#111), and V0 makes two for TP
# (a PyNccl communicator and torch's group).
ROCM_V0_NON_TORCH_HIGH = 6216 * MiB
RCCL_TP_COMMUNICATORS = 1690 * MiB


def non_torch_estimate(tp: int, pp: int, nvls_bytes: int = 0, rocm: bool = False) -> Estimate:
    """Memory outside PyTorch's allocator that the engine counts: cuBLAS and cuDNN workspaces, and
    with more than one GPU NCCL's and the custom all-reduce's buffers. ``nvls_bytes``: one TP
    communicator's NCCL NVLS buffers (Engine.nvls_mib_per_rank x ranks), which vLLM 0.5 to 0.7 create
    twice before the profile reads free memory (vllm/worker/worker.py init_device takes its snapshot
    before init_worker_distributed_environment; distributed/parallel_state.py GroupCoordinator makes a
    PyNccl communicator and a torch NCCL group for TP, the latter's communicator made by the profile
    run's first large all-reduce, 0.6.3): twice at best and high, once at low. ``rocm``: an AMD GPU,
    whose range reaches the ROCm runtime memory an MI300X breakdown shows (ROCM_V0_NON_TORCH_HIGH);
    the best figure stays the NVIDIA one, which the other ROCm cards' breakdowns bear out."""
    rocm_why = (
        "; on ROCm the high end allows 6.07 GiB, what the one public MI300X breakdown of a V0 start shows (other "
        "ROCm cards show 0.29 to 0.73 GiB)"
        if rocm
        else ""
    )
    if tp * pp == 1:
        return Estimate(
            "non_torch",
            256 * MiB,
            64 * MiB,
            ROCM_V0_NON_TORCH_HIGH if rocm else 512 * MiB,
            "estimated",
            "cuBLAS/cuDNN workspaces; public logs of one GPU show 0.07 to 0.35 GiB" + rocm_why,
        )
    nvls = ""
    if nvls_bytes:
        nvls = (
            f"; plus NCCL's NVLS buffers of two TP communicators, 2 x {_gib(nvls_bytes)} (one at the low end: "
            "NCCL 2.18 to 2.21 size them at each communicator's start, nvls.cc)"
        )
    if rocm:
        rocm_why += ", and RCCL's buffers for two TP communicators, about 1.65 GiB (LUMI's measurements)"
    return Estimate(
        "non_torch",
        768 * MiB + 2 * nvls_bytes,
        256 * MiB + nvls_bytes,
        (ROCM_V0_NON_TORCH_HIGH + RCCL_TP_COMMUNICATORS if rocm else 2 * GiB) + 2 * nvls_bytes,
        "estimated",
        "cuBLAS workspaces plus NCCL and custom all-reduce buffers; public logs of 2 to 8 GPUs show 0.25 to 1.8 GiB"
        + nvls
        + rocm_why,
    )


def cudagraph_estimate(model: ModelSpec) -> Estimate:
    """vLLM (>= 0.21) captures a few CUDA graphs at start-up and extrapolates their memory."""
    return Estimate(
        "cudagraph",
        512 * MiB,
        128 * MiB,
        2 * GiB,
        "estimated",
        "vLLM's own estimate of its CUDA graphs ('Estimated CUDA graph memory'); public logs show 0.17 to "
        "0.65 GiB, and up to 2.4 GiB on hybrid linear-attention models",
    )


def runtime_total(gpu: GPUSpec) -> Estimate:
    """The device memory the runtime reports (torch.cuda.mem_get_info()[1])."""
    t = gpu.memory_runtime_bytes
    if gpu.memory_runtime_measured:
        return Estimate("total", t, t, t, "computed", f"{gpu.name}'s runtime total, read off a real device")
    return Estimate(
        "total",
        t,
        t - t // 200,
        t + t // 1000,
        "estimated",
        f"{gpu.name}'s runtime total is an estimate (the driver's reserve varies with driver, ECC and MIG): -0.5% to +0.1%",
    )


# ---- SGLang's default memory fraction ----------------------------------------------------------


def prefill_graph_sizes(max_tokens: int) -> int:
    """How many prompt-step sizes SGLang captures in CUDA graphs up to ``max_tokens``
    (server_args.py _generate_piecewise_cuda_graph_tokens, 0.5.10; arg_groups/cuda_graph_hook.py
    generate_prefill_cuda_graph_batch_sizes, 0.5.23): 4 to 32 by 4, 48 to 256 by 16, 288 to 512 by 32,
    576 to 1,024 by 64, 1,280 to 4,096 by 256, then by 512."""
    sizes = [
        *range(4, 33, 4),
        *range(48, 257, 16),
        *range(288, 513, 32),
        *range(576, 1025, 64),
        *range(1280, 4097, 256),
        *range(4608, max_tokens + 1, 512),
    ]
    return sum(1 for x in sizes if x <= max_tokens)


def sglang_mem_fraction(
    gpu_mib: int,
    tp: int,
    pp: int,
    rule: MemFractionRule,
    dp: int = 1,
    cuda: bool = True,
    prefill_graphs: bool = False,
    mla: bool = False,
) -> float:
    """SGLang's default mem_fraction_static. ``tp`` is SGLang's tp_size, every GPU of a pipeline stage
    (with DP attention kvcalc's tp x dp); ``dp`` > 1: DP attention is on, over that many ranks;
    ``cuda``: an NVIDIA GPU (SGLang's is_cuda()); ``prefill_graphs``: prompt steps are captured in CUDA
    graphs (0.5.10 on), ``mla``: an MLA model, for whose graphs SGLang reserves a flat 1.5 GiB.

    0.5.3 to 0.5.9 (server_args.py _handle_gpu_memory_settings, 0.5.3rc2 to 0.5.9): by the GPU's memory
    in MiB as nvidia-smi reports it, reserve 512 MiB + 1.5 x max(chunked_prefill_size, 2048) + tp x pp /
    8 x 1024 + 2 x cuda_graph_max_bs MiB, with DP attention cuda_graph_max_bs x dp x 3 more (and x 1.5
    more past 300), at least 10 GiB on GPUs over 60 GiB, and keep round((memory - reserved) / memory,
    3). From 0.5.10, before that floor, 8 MiB for each captured prompt-step size up to the chunk (1.5
    GiB for an MLA model) where prompt steps run in graphs as the engine decides before it sizes
    (Engine.prompt_graphs with sizing: by release, e.g. not under DP attention in 0.5.10 to 0.5.16,
    nor for an MLA model in 0.5.15 to 0.5.16); from 0.5.20 (arg_groups/memory_hook.py, read in
    0.5.20 and 0.5.23) GPUs under 35 GiB take a 4,096-token chunk and decode graphs to 48 (160 at TP 4
    or more) where 0.5.19 took 2,048 and 24 (80). 0.4.7.post1 to 0.5.2 (server_args.py __post_init__; the same code in each
    wheel between): a reserve by the GPU's memory, (2.8 + tp x pp / 10) GiB under 35 GiB, (9.5 + tp x pp /
    2) GiB under 90 GiB, (12 + tp x pp / 2) GiB under 160 GiB, else 32 GiB, 4 GiB more with DP attention,
    and round((memory - reserved) / memory, 3). 0.4 (0.4.6.post2 to 0.4.6.post5): a table by TP x PP on
    GPUs of <= 80 GiB, raised towards (memory - 18 GiB) / memory on GPUs over 96 GiB; 0.4.7 as 0.4 but
    0.79 on NVIDIA GPUs of over 180,000 MiB (the B200). Before: 0.4.5.post3 to 0.4.6.post1 the table on
    GPUs of <= 80 GiB, else (memory - 13 GiB) / memory; 0.3.0 to 0.4.5.post2 the table by TP alone, 0.83
    at TP 8 to 15 in 0.3.0 to 0.3.5, 0.82 in 0.3.6, 0.81 from 0.4.0.
    """
    table = {"sglang-0.3": 0.83, "sglang-0.3.6": 0.82, "sglang-0.4.0": 0.81, "sglang-0.4.5": 0.81}
    if rule in table:
        # 0.3.0 to 0.4.6.post1 (server_args.py, read from each release's wheel): by TP alone, 0.83, 0.82 or 0.81
        # at TP 8 to 15; from 0.4.5.post3 to 0.4.6.post1 on GPUs over 80 GiB, (memory - 13 GiB) / memory.
        if rule == "sglang-0.4.5" and gpu_mib > 81920:
            return (gpu_mib - 13 * 1024) / gpu_mib
        return 0.79 if tp >= 16 else table[rule] if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88
    if rule in ("sglang-0.4", "sglang-0.4.7"):
        p = tp * pp
        m = 0.88
        if gpu_mib <= 81920:
            m = 0.79 if p >= 16 else 0.81 if p >= 8 else 0.85 if p >= 4 else 0.87 if p >= 2 else 0.88
        if rule == "sglang-0.4.7" and cuda and gpu_mib > 180_000:
            return 0.79
        if gpu_mib > 96 * 1024:
            m = min(m + 48 * 1024 * (1 - m) / gpu_mib, (gpu_mib - 18 * 1024) / gpu_mib)
        return m
    gib = 1024
    if rule == "sglang-0.4.7.post1":
        p = tp * pp
        if gpu_mib < 35 * gib:
            reserved = (2.8 + p / 10) * gib
        elif gpu_mib < 90 * gib:
            reserved = (9.5 + p / 2) * gib
        elif gpu_mib < 160 * gib:
            reserved = (12 + p / 2) * gib
        else:
            reserved = 32 * gib
        if dp > 1:
            reserved += 4 * gib
        return round((gpu_mib - reserved) / gpu_mib, 3)
    cps, bs = sglang_graph_band(gpu_mib, tp, rule)
    reserved = 512 + max(cps, 2048) * 1.5 + tp * pp / 8 * 1024 + bs * 2
    if dp > 1:
        reserved += bs * dp * 3 + (bs * dp * 1.5 if bs > 300 else 0)
    if rule in ("sglang-0.5", "sglang-0.5.10") and prefill_graphs:
        reserved += 1.5 * gib if mla else prefill_graph_sizes(cps) * 8
    if gpu_mib > 60 * gib:
        reserved = max(reserved, 10 * gib)
    return round((gpu_mib - reserved) / gpu_mib, 3)


# ---- fit ----------------------------------------------------------------------------------


@record(frozen=True)
class BudgetLine:
    key: str
    """What the line is, for code: total, usable, weights, activation, non_torch, cudagraph, free_fraction, pool."""
    label: str
    bytes: int
    low: int | None = None
    """The line's smallest and largest plausible values, where it is estimated (None: exact)."""
    high: int | None = None
    basis: Basis = "computed"

    @property
    def is_reserve(self) -> bool:
        """A cost taken out of the budget before the KV pool."""
        return self.key in ("weights", "activation", "non_torch", "cudagraph")


@record(frozen=True)
class FitInputs:
    """Everything fit takes besides the model and GPU, parsed. None means "use the documented default"."""

    seq: int
    engine: Engine = dataclasses.field(default_factory=lambda: parse_engine("vllm"))
    tp: int = 1
    pp: int = 1
    dp: int = 1
    """Data-parallel attention ranks (kvcalc.engine.deployment): each keeps its own requests' KV."""
    ep: int = 1
    """Expert-parallel ranks: 1 or dp x tp."""
    kv_dtype: KVDtype = BF16
    weight_dtype: str | None = None
    gpu_memory: int | None = None
    weights: int | None = None
    activation: int | None = None
    non_torch: int | None = None
    cudagraph: int | None = None
    util: float | None = None
    block_size: int | None = None
    max_num_batched_tokens: int | None = None
    max_model_len: int | None = None
    """The engine's max_model_len (what it reports concurrency and tokens for); default: seq."""
    max_model_len_auto: bool = False
    """vLLM's --max-model-len auto (0.14 and later, Engine.auto_max_model_len): profiled at the
    model's context, then the largest length whose one request fits."""
    kv_cache_memory: int | None = None
    """vLLM's --kv-cache-memory-bytes (0.10.2 and later, Engine.kv_cache_memory_flag): each GPU's KV
    pool, taken as given, gpu_memory_utilization not applied."""
    max_num_seqs: int | None = None
    gpu_free: int | None = None
    """Memory free at start-up, before the weights load (SGLang: 'Load weight begin. avail mem');
    what SGLang's budget takes its fraction of."""
    sampler: str | None = None
    """vLLM V1's top-k/top-p sampler where it is known ('flashinfer' or 'pytorch': a log's line, or
    the user's word); None: the release's estimate over both."""
    enforce_eager: bool = False
    """vLLM's --enforce-eager: no CUDA graphs, so a release that subtracts its CUDA-graph estimate before
    sizing the pool (Engine.cudagraph 'estimate') subtracts none (config/vllm.py sets cudagraph_mode NONE
    under enforce_eager, and v1/worker/gpu_worker.py determine_available_memory profiles graph memory only
    when it is not NONE, 0.22.1)."""
    prefix_caching: bool = True
    """The server's --enable-prefix-caching (vLLM V1's default: on). Off, vLLM holds one recurrent-state page a
    request where prefix caching holds two (Engine.allocation): max concurrency, not the pool, moves."""
    skip_mm_profiling: bool = False
    """vLLM V1's --skip-mm-profiling (0.10.1 and later): the profile runs no multimodal encoder and
    caches no dummy embeddings ("Skipping memory profiling for multimodal encoder and encoder
    cache", v1/worker/gpu_model_runner.py profile_run, 0.11.0)."""

    def __post_init__(self) -> None:
        # The Python API may pass names; parse them once, here.
        object.__setattr__(self, "engine", parse_engine(self.engine))
        object.__setattr__(self, "kv_dtype", kv_dtype(self.kv_dtype))
        if self.sampler is not None:
            low = str(self.sampler).strip().lower()
            if low not in SAMPLERS:
                raise KvcalcError(f"unknown sampler {str(self.sampler)[:30]!r}", "sampler", ", ".join(SAMPLERS))
            if not self.engine.sampler_impl:
                raise KvcalcError(
                    f"{self.engine.title} has one estimate of its sampler's warm-up",
                    "sampler",
                    "no sampler for this engine; it tells vLLM 0.8 to 0.26 (V1 before 0.27) apart",
                )
            object.__setattr__(self, "sampler", low)
        if self.max_model_len_auto and not self.engine.auto_max_model_len:
            raise KvcalcError(
                f"{self.engine.title} has no auto max_model_len",
                "max_model_len",
                "a number of tokens; vLLM 0.14 and later also take auto",
            )
        if self.kv_cache_memory is not None and not self.engine.kv_cache_memory_flag:
            raise KvcalcError(
                f"{self.engine.title} takes no KV cache memory as given",
                "kv_cache_memory",
                "vLLM 0.10.2 and later (kv_cache_memory_bytes); other engines and releases size the pool themselves",
            )
        if self.max_model_len_auto and self.max_model_len is not None:
            raise KvcalcError("both a max_model_len and auto", "max_model_len", "one of them")
        if self.skip_mm_profiling and self.engine.non_torch_rule != "v1":
            raise KvcalcError(
                f"{self.engine.title} cannot skip the multimodal encoder's memory profile",
                "skip_mm_profiling",
                "vLLM V1 (0.10.1 and later) skips it on request; other engines and releases always run theirs",
            )

    def replace(self, **changes: Any) -> FitInputs:
        return dataclasses.replace(self, **changes)

    @property
    def model_len(self) -> int:
        return self.max_model_len or self.seq

    def echo(self) -> dict[str, Any]:
        """The inputs as plain values, names for the parsed objects."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["engine"] = self.engine.key
        d["kv_dtype"] = self.kv_dtype.name
        return d


@record(frozen=True)
class ReverseReport:
    """What ``concurrency`` requests of the fit's length need."""

    concurrency: int
    kv_bytes_needed_per_gpu: int
    util_needed: float | None
    util_possible: bool
    tp_needed: int | None
    pp_needed: int | None
    replicas_needed: int | None
    gpus_needed: int | None
    tried: list[dict[str, int]]
    """The deployments with the fewest GPUs that hold them (kvcalc plan's search on this GPU)."""
    dp_needed: int | None = None
    ep_needed: int | None = None
    shape_needed: str | None = None
    """The answer's shape, e.g. 'DP 16 x TP 1 x EP 16'."""


@record(frozen=True)
class Range:
    low: int
    high: int


@record(frozen=True)
class FitReport:
    model: str
    gpu: str
    engine: str
    """The engine record's key (vllm@0.33, sglang@0.5, ...)."""
    engine_label: str
    engine_releases: str
    util_flag: str
    seq: int
    max_model_len: int
    tp: int
    pp: int
    gpus: int
    kv_dtype: str
    block_size: int | None
    util: float | None
    budget: list[BudgetLine]
    gpu_memory_bytes: int
    weight_bytes: int
    kv_pool_bytes: int
    kv_pool_usable_bytes: int
    """The pool as the engine carves it: whole blocks, less the null block."""
    kv_bytes_per_token: int
    kv_pool_blocks: int | None
    kv_pool_tokens: int | None
    """The KV cache size in tokens as the engine logs it (vLLM: 'GPU KV cache size')."""
    request_bytes: int
    max_concurrency: int
    """Whole requests of seq tokens the pool holds at once (one DP rank's pool)."""
    concurrency: float
    """The engine's own concurrency figure (vLLM: 'Maximum concurrency for max_model_len tokens')."""
    concurrency_label: str
    max_concurrency_range: Range
    """max_concurrency when every estimated term sits at the end of its range that helps (high) or hurts (low)."""
    max_seq_len: int
    max_seq_len_memory: int | None
    max_seq_len_limited_by: str
    max_model_len_accepted: int | None
    """The largest max_model_len the engine starts with (vLLM: one request of it must fit the
    available KV memory, v1/core/kv_cache_utils.py check_enough_kv_cache_memory; at most the
    model's context); None for engines without such a check."""
    fits: bool
    starts: bool = True
    """Whether the engine starts with this max_model_len (False: it is above max_model_len_accepted)."""
    estimates: list[Estimate] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reverse: ReverseReport | None = None
    dp: int = 1
    """Data-parallel attention ranks, each with its own pool (the pool figures are one rank's)."""
    ep: int = 1
    max_concurrency_total: int = 0
    """max_concurrency over all DP ranks."""
    verdict: str = ""
    """The first line: whether a request of the length fits, and how many do."""
    fewest: ReverseReport | None = None
    """When nothing fits: the fewest GPUs that hold one request (kvcalc.engine.plan.reverse)."""
    util_to_hold: float | None = None
    """When nothing fits: the smallest memory fraction (util_flag), to a thousandth, at which this shape holds one
    request (kvcalc.engine.plan.util_to_hold); None where none up to 1 does, or where it was not asked."""
    state_slots: int | None = None
    """SGLang's recurrent-state slots where it keeps them in a pool of their own (memory.state_pool); None elsewhere."""
    state_pool_bytes: int = 0
    """What those slots take of kv_pool_bytes on one GPU; the tokens take the rest."""
    state_requests: int | None = None
    """The running requests those slots allow (a third of them under the radix cache)."""
    track_record: MemoryRecord | None = None
    """How far this estimate with kvcalc's defaults has been from public start-up logs of this engine and
    GPU count (kvcalc.engine.track); None when every term of the budget was given."""
    inputs: dict[str, Any] = field(default_factory=dict)


@record(frozen=True)
class Budget:
    lines: list[BudgetLine]
    pool: int
    util: float | None
    weights: int
    estimates: list[Estimate]
    assumptions: list[str]
    pool_low: int
    pool_high: int


def profile_len(model: ModelSpec, inp: FitInputs) -> int:
    """The max_model_len the engine profiles at: the model's context under --max-model-len auto
    (vLLM fits the length after profiling), else the given or default one."""
    return model.max_position_embeddings if inp.max_model_len_auto else inp.model_len


def batched_tokens(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> int:
    """max_num_batched_tokens: given, or as the engine defaults it on this GPU."""
    return inp.engine.schedule(model, gpu, profile_len(model, inp), inp.max_num_batched_tokens, inp.gpu_memory)[0]


def triton_sampler_runs(eng: Engine, old_gpu: bool, sampler: str | None) -> bool:
    """Whether the release's profile masks top-k/top-p with its Triton kernel (Engine.triton_sampler_buffer):
    by default in 0.17 to 0.20 unless FlashInfer's sampler is named; from 0.21 where FlashInfer's does
    not run (a GPU before sm_80 or not NVIDIA's) or PyTorch's is named."""
    if eng.triton_sampler_buffer == "default":
        return sampler != "flashinfer"
    if eng.triton_sampler_buffer == "fallback":
        return old_gpu or sampler == "pytorch"
    return False


def num_seqs(gpu: GPUSpec, inp: FitInputs) -> int:
    if inp.max_num_seqs:
        return inp.max_num_seqs
    return inp.engine.default_num_seqs(inp.gpu_memory or gpu.memory_runtime_bytes, gpu.name)


def _estimates(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> dict[str, Estimate]:
    eng = inp.engine
    out: dict[str, Estimate] = {}
    if inp.gpu_free is not None and eng.budget == "util_of_start_free":
        out["total"] = _given("total", inp.gpu_free)
    else:
        out["total"] = _given("total", inp.gpu_memory) if inp.gpu_memory is not None else runtime_total(gpu)
    if inp.weights is not None:
        out["weights"] = _given("weights", inp.weights)
    else:
        out["weights"] = weights_estimate(
            model,
            inp.weight_dtype,
            inp.tp,
            inp.pp,
            eng.name in ("vllm", "sglang", "trtllm"),
            pads_mxfp4=eng.name == "vllm",
            engine=eng.name,
            mla_absorbed=eng.name == "vllm" and eng.non_torch_rule == "v1",
            mla_materialized=eng.mla_materializes(model, inp.weight_dtype),
            dp=inp.dp,
            ep=inp.ep,
            splits=role_splits(Shape(inp.tp, inp.pp, inp.dp, inp.ep), eng),
            pp_split=eng.pp_split,
        )
    # An engine that does not take activations out of its pool (SGLang keeps them in the headroom
    # that mem_fraction_static leaves) ignores a measured figure too.
    if not eng.subtracts_activation:
        out["activation"] = Estimate("activation", 0, 0, 0, "none")
    elif inp.activation is not None:
        out["activation"] = _given("activation", inp.activation)
    elif eng.decoder_buffers:
        # TensorRT-LLM on a TensorRT engine: the engine's execution context, one buffer for the largest
        # optimization profile (tllmRuntime.cpp getDeviceMemorySizeV2), beside the runtime's and decoder's buffers.
        tokens, rows, seq = batched_tokens(model, gpu, inp), num_seqs(gpu, inp), profile_len(model, inp)
        context = tokens * activation_bytes_per_token(model, inp.tp)
        buffers = trt_decoder_bytes(model, rows, seq, inp.tp)
        unnamed = rows * seq * TRT_UNNAMED_BYTES_PER_TOKEN
        out["activation"] = Estimate(
            "activation",
            context + buffers,
            context * 85 // 100 + buffers,
            context * 5 // 2 + buffers + unnamed,
            "estimated",
            f"the engine's execution context over {tokens:,} tokens (max_num_tokens), 0.85x to 2.5x of a forward pass's "
            "live tensors (TensorRT-LLM logs of 1.3x and 2.5x), and the runtime's and decoder's buffers for "
            f"{rows:,} sequences (max_batch_size) of {seq:,} tokens (max_seq_len, --max-model-len; "
            f"trtllm-build's default is the model's {model.max_position_embeddings:,}): five of max_batch_size x the "
            f"vocabulary at 4 B and per-sequence buffers ({_gib(buffers)})",
        )
    else:
        old_gpu = gpu.vendor != "NVIDIA" or gpu.name in PRE_AMPERE
        per_logit, rng = eng.sampler_bytes_per_logit, eng.sampler_range
        if eng.sampler_old_gpus and old_gpu:
            per_logit, lo, hi = eng.sampler_old_gpus
            rng = (lo, hi)
        known = {name: (best, lo, hi) for name, best, lo, hi in eng.sampler_impl}
        if inp.sampler in known:
            per_logit, lo, hi = known[inp.sampler]
            rng = (lo, hi)
        tokens = batched_tokens(model, gpu, inp)
        out["activation"] = activation_estimate(
            model,
            tokens,
            inp.tp,
            num_seqs(gpu, inp),
            # The forward pass runs in the model's dtype: 4 bytes an activation under --dtype float32.
            act_bytes=4 if inp.weight_dtype and normalize_weight_dtype(inp.weight_dtype) == "fp32" else 2,
            sampler_per_logit=per_logit,
            sampler_range=rng,
            held=moe_workspace_bytes(model, tokens, inp.tp, inp.weight_dtype) if eng.moe_workspace_held else 0,
            row_copies=eng.sampler_row_copies,
            workspace=cublas_workspace_bytes(gpu) if eng.non_torch_rule == "v1" else 0,
            triton_sms=gpu.multiprocessors if triton_sampler_runs(eng, old_gpu, inp.sampler) else None,
        )
        enc = engine_encoder_profile(model, eng, inp.tp, tokens, profile_len(model, inp))
        if model.vision_params and inp.skip_mm_profiling:
            a = out["activation"]
            out["activation"] = dataclasses.replace(
                a, reason=a.reason + "; the vision encoder's profile skipped (--skip-mm-profiling)"
            )
        elif enc is not None:
            out["activation"] = with_encoder(out["activation"], enc, eng.vision_profile_later)
        elif model.vision_params and eng.non_torch_rule == "v1":
            # vLLM V1 also profiles the vision encoder on dummy images of the largest size, their
            # embeddings alive through the text pass (v1/worker/gpu_model_runner.py profile_run and
            # v1/worker/utils.py, 0.11.0; kvcalc.engine.encoder models it for the Qwen-VL towers);
            # --skip-mm-profiling removes it. Not modelled for this release: the range's high end.
            a = out["activation"]
            extra, what = 3 * GiB, "dummy images"
            bound = encoder_profile(model, "concat", inp.tp, tokens, profile_len(model, inp), video_cap=eng.video_frames_cap)
            if bound is not None:
                # A Qwen-VL tower under a release whose ViT code kvcalc has not counted: 0.11.0's
                # count (q and k rotated through float32 copies) bounds the leaner code since.
                extra = max(extra, max(bound.peak_bytes, a.high + bound.held_bytes) - a.high)
                what = f"{bound.items} dummy {bound.modality}{'s' if bound.items > 1 else ''} of {bound.patches:,} patches"
            out["activation"] = dataclasses.replace(
                a,
                high=a.high + extra,
                reason=a.reason
                + f"; up to {_gib(extra)} more for the vision encoder's profile on {what} (not modelled for this "
                + ("release: 0.11.0's count bounds it" if bound is not None else "model")
                + ")",
            )
        if eng.v0_chunking != "none" and not inp.max_num_batched_tokens:
            a, on = out["activation"], eng.chunks_prefill(model, profile_len(model, inp), gpu.vendor)
            why = (
                f"; {eng.label}'s chunked prefill is {'on' if on else 'off'} by default for this model, GPU and "
                "max_model_len (kvcalc engines gives the rule), so the profile runs "
                + ("its chunk" if on else "max(max_model_len, 2,048) tokens")
            )
            out["activation"] = dataclasses.replace(a, reason=a.reason + why)
    if inp.non_torch is not None:
        out["non_torch"] = _given("non_torch", inp.non_torch)
    elif eng.budget == "util_of_start_free":
        out["non_torch"] = (
            Estimate("non_torch", 0, 0, 0, "none")
            if inp.gpu_free is not None
            else start_up_estimate(inp.tp * inp.dp, inp.pp, gpu, eng.hip_allreduce_buffers and gpu.vendor == "AMD" and inp.tp > 1)
        )
    elif eng.subtracts_non_torch and eng.non_torch_rule == "v1":
        out["non_torch"] = non_torch_v1(model, gpu, inp.tp * inp.dp, inp.pp, num_seqs(gpu, inp), eng.penalty_bytes_per_logit)
    elif eng.subtracts_non_torch:
        nvls = int(eng.nvls_mib_per_rank * MiB) * nvls_ranks(gpu, inp.tp)
        out["non_torch"] = non_torch_estimate(inp.tp * inp.dp, inp.pp, nvls, rocm=gpu.vendor == "AMD" and eng.name == "vllm")
    else:
        out["non_torch"] = Estimate("non_torch", 0, 0, 0, "none")
    if inp.cudagraph is not None:
        out["cudagraph"] = _given("cudagraph", inp.cudagraph)
    elif eng.cudagraph == "estimate" and inp.enforce_eager:
        out["cudagraph"] = Estimate("cudagraph", 0, 0, 0, "computed", "--enforce-eager: no CUDA graphs, so none is estimated")
    elif eng.cudagraph == "estimate" and (gpu.vendor != "AMD" or eng.cudagraph_estimate_rocm):
        out["cudagraph"] = cudagraph_estimate(model)
    else:
        out["cudagraph"] = Estimate("cudagraph", 0, 0, 0, "none")
    return out


def vit_fraction_factor(model: ModelSpec) -> float:
    """What SGLang multiplies its default mem_fraction_static by for a multimodal model from 0.4.9.post3
    (server_args.py adjust_mem_fraction_for_vlm, 0.4.9.post3 to 0.5.18; arg_groups/memory_hook.py from
    0.5.19): 0.95 x (1 - 0.1 x (layers x hidden^2 / (24 x 1024^2) - 1)), the second factor held to 0.8 to
    1.05, with vision_config's num_hidden_layers and hidden_size (24 and 1024 where it names neither)."""
    layers = model.vision_config_layers or 24
    hidden = model.vision_config_hidden or 1024
    ratio = layers * hidden**2 / (24 * 1024**2)
    return 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))


def _aiter_cut(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> bool:
    """Whether SGLang cuts the memory fraction by 0.85 for ROCm's aiter attention: on an AMD GPU, where aiter
    is the default backend (every MHA model; an MLA model whose heads over tp_size are 16 or 128,
    model_runner.py model_specific_adjustment, 0.4.7 to 0.5.4), at a context over 8,192 tokens."""
    if not inp.engine.aiter_fraction or gpu.vendor != "AMD":
        return False
    context = inp.max_model_len or model.max_position_embeddings
    mla = [k for k in model.kinds() if isinstance(k, MLA)]
    if mla and max(1, mla[0].num_attention_heads // (inp.tp * inp.dp)) not in (16, 128):
        return False
    return context > 8192


def _default_util(model: ModelSpec, gpu: GPUSpec, inp: FitInputs, total: int) -> tuple[float | None, str, str]:
    """The memory fraction, how it was had (given, derived, default), and for a derived one what set it."""
    eng = inp.engine
    multimodal = bool(model.vision_params or model.vision)
    cuts = []
    if inp.util is not None:
        f, basis, why = inp.util, "given", f"the given {inp.util:g}"
    elif eng.mem_fraction_rule != "none":
        mib = gpu.memory_smi_mib if gpu.memory_smi_mib and inp.gpu_memory is None else total // MiB
        # SGLang's tp_size spans every GPU of a stage: with DP attention kvcalc's tp x dp.
        rule = eng.mem_fraction_rule
        graphs = eng.prompt_graphs(inp.pp, gpu.vendor, model, inp.dp, gpu.name, sizing=True)
        mla = model.mla is not None
        f = sglang_mem_fraction(mib, inp.tp * inp.dp, inp.pp, rule, inp.dp, gpu.vendor == "NVIDIA", graphs, mla)
        where = f"tp {inp.tp}" if inp.dp == 1 else f"tp_size {inp.tp * inp.dp} (attention TP {inp.tp} x DP {inp.dp})"
        basis, why = "derived", f"SGLang's default for this GPU's memory at {where}, pp {inp.pp}"
        if multimodal and eng.vlm_fraction == "vit":
            k = vit_fraction_factor(model)
            cuts.append(
                f"x {k:.3f} for the vision tower ({model.vision_config_layers or 24} layers of {model.vision_config_hidden or 1024})"
            )
            f *= k
    else:
        return eng.default_util, "default", ""
    if multimodal and eng.vlm_fraction in ("runner-0.95", "runner-0.9"):
        # model_runner.py multiplies the fraction it is given for a multimodal model: by 0.95 (0.3.0 to 0.4.4.post3)
        # or 0.9 (0.4.4.post4 to 0.4.8).
        k = 0.95 if eng.vlm_fraction == "runner-0.95" else 0.9
        cuts.append(f"x {k:g} for a multimodal model (SGLang's model runner)")
        f *= k
    if _aiter_cut(model, gpu, inp):
        cuts.append("x 0.85 for ROCm's aiter attention at a context over 8,192 tokens")
        f *= 0.85
    if cuts:
        basis, why = "derived", why + ", " + ", ".join(cuts)
    return f, basis, why


def _pool(eng: Engine, util: float | None, total: int, w: int, act: int, nt: int, cg: int) -> int:
    """The KV pool on one GPU from the budget's terms, rounded as the engine rounds."""
    if eng.budget == "util_of_total":
        assert util is not None
        if eng.util_rounding == "ceil":
            usable: float = ceil(total * util)
        elif eng.util_rounding == "float":
            usable = total * util
        else:
            usable = int(Fraction(str(util)) * total)
        return int(usable - w - act - nt - cg)
    if eng.budget == "util_of_start_free":
        assert util is not None
        return int(Fraction(str(util)) * (total - nt)) - w - act - cg
    free = total - w - act - nt - cg
    if eng.budget == "fraction_of_free":
        assert util is not None
        return int(Fraction(str(util)) * free) if free > 0 else free
    return free


def _usable(eng: Engine, util: float | None, total: int) -> int:
    assert util is not None
    if eng.util_rounding == "ceil":
        return ceil(total * util)
    if eng.util_rounding == "float":
        return int(total * util)
    return int(Fraction(str(util)) * total)


def budget(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> Budget:
    """The engine's budget on one GPU, line by line, down to the KV pool, with the pool's range."""
    eng = inp.engine
    est = _estimates(model, gpu, inp)
    total, w, act, nt, cg = (est[k] for k in ("total", "weights", "activation", "non_torch", "cudagraph"))
    util, util_basis, util_why = _default_util(model, gpu, inp, total.best)
    assumptions = []
    if total.basis != "given":
        assumptions.append(
            f"device memory: {gpu.name}'s runtime total ({'measured' if gpu.memory_runtime_measured else 'estimated'}); pass --gpu-memory to use yours"
        )
    if w.basis != "given":
        # What the figure holds, as the estimate itself says (roles and formats, the rotary cache,
        # an engine's padding), not a shorthand that leaves those out.
        assumptions.append(f"weights: {w.reason}; pass --weights to use the measured figure")
    for e in (act, nt, cg):
        if e.basis == "estimated":
            flag = {"activation": "--activation", "non_torch": "--non-torch", "cudagraph": "--cudagraph"}[e.key]
            if e.key == "non_torch" and eng.budget == "util_of_start_free":
                flag = "--gpu-free (or --non-torch)"
            assumptions.append(f"{e.key.replace('_', '-')}: {e.reason}; pass {flag} to use the measured figure")
    if util_basis == "derived":
        assumptions.append(f"{eng.util_flag} {util:g}: {util_why}")

    def line(e: Estimate, key: str, label: str) -> BudgetLine:
        if e.exact:
            return BudgetLine(key, label, e.best, basis=e.basis)
        return BudgetLine(key, label, e.best, e.low, e.high, e.basis)

    start = eng.budget == "util_of_start_free"
    given_free = start and inp.gpu_free is not None
    lines = [
        line(total, "start_free" if given_free else "total", "free at start-up (--gpu-free)" if given_free else "device memory")
    ]
    if start:
        free = total.best - nt.best
        if nt.basis != "none":
            lines.append(line(nt, "non_torch", "- in use at start-up"))
            lines.append(BudgetLine("start_free", "= free at start-up", free, basis="estimated" if not nt.exact else total.basis))
        usable = int(Fraction(str(util)) * free)
        lines.append(BudgetLine("usable", f"x util {util:g}", usable, basis="computed"))
    if eng.budget == "util_of_total":
        usable = _usable(eng, util, total.best)
        lo_u, hi_u = _usable(eng, util, total.low), _usable(eng, util, total.high)
        lines.append(
            BudgetLine(
                "usable", f"x util {util:g}", usable, None if lo_u == hi_u else lo_u, None if lo_u == hi_u else hi_u, total.basis
            )
        )
    lines.append(line(w, "weights", "- weights"))
    if act.basis != "none":
        lines.append(line(act, "activation", "- activation peak"))
    if nt.basis != "none" and not start:
        lines.append(line(nt, "non_torch", "- non-torch"))
    if cg.basis != "none":
        lines.append(line(cg, "cudagraph", "- CUDA graphs"))
    if inp.kv_cache_memory is not None:
        # vLLM's kv_cache_memory_bytes: the pool as given; no utilization, no subtraction
        # (v1/worker/gpu_worker.py determine_available_memory, 0.11.0 and 0.33.0). What is left of
        # the device beside the estimated reserves says whether it can fit.
        lines = [x for x in lines if x.key not in ("usable", "start_free")]
        given = inp.kv_cache_memory
        left = total.best - w.best - act.best - nt.best - cg.best - given
        lo = total.low - w.high - act.high - nt.high - cg.high - given
        hi = total.high - w.low - act.low - nt.low - cg.low - given
        lines.append(BudgetLine("pool", "- KV pool, as given", given, basis="given"))
        lines.append(BudgetLine("headroom", "= left on the device", left, lo, hi, "estimated" if lo != hi else "computed"))
        assumptions.append(
            "KV pool: kv_cache_memory_bytes as given, on every GPU; vLLM applies no gpu_memory_utilization and "
            "subtracts nothing from it (v1/worker/gpu_worker.py determine_available_memory)"
        )
        return Budget(lines, given, None, w.best, [e for e in est.values() if e.basis != "none"], assumptions, given, given)
    pool = _pool(eng, util, total.best, w.best, act.best, nt.best, cg.best)
    pool_low = _pool(eng, util, total.low, w.high, act.high, nt.high, cg.high)
    pool_high = _pool(eng, util, total.high, w.low, act.low, nt.low, cg.low)
    rng = (None, None) if pool_low == pool_high else (pool_low, pool_high)
    if eng.budget == "fraction_of_free":
        lines.append(BudgetLine("free_fraction", f"x util {util:g} of the rest", pool, rng[0], rng[1]))
    lines.append(BudgetLine("pool", "= KV pool", pool, rng[0], rng[1], "estimated" if rng[0] is not None else "computed"))
    return Budget(lines, pool, util, w.best, [e for e in est.values() if e.basis != "none"], assumptions, pool_low, pool_high)


def footprint(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> KVFootprint:
    """The KV footprint under the engine's allocation (its blocks and window reservations)."""
    eng = inp.engine
    in_flight = eng.in_flight_tokens(batched_tokens(model, gpu, inp), inp.pp)
    kv = stored_kv_dtype(model, gpu.name, inp.kv_dtype, eng, inp.tp)
    alloc = eng.allocation(
        inp.block_size,
        in_flight,
        model,
        gpu.vendor,
        gpu.name,
        prefix_caching=inp.prefix_caching,
        max_running=inp.max_num_seqs,
        dp=inp.dp,
        weight_dtype=inp.weight_dtype,
    )
    return KVFootprint(model, kv, inp.tp, inp.pp, alloc)


# ---- the pool carved as each engine carves it ------------------------------------------------


@record(frozen=True)
class Capacity:
    usable: int
    blocks: int | None
    tokens: int | None
    concurrency: float
    max_concurrency: int


def _window_split(fp: KVFootprint, stage: int = 0) -> dict[int | None, int]:
    """Bytes per token of each window size on one stage (None: full attention)."""
    model = fp.model
    out: dict[int | None, int] = {}
    for name, n in fp.stage_counts[stage].items():
        k = model.layer_kinds[name]
        if not k.holds_tokens:
            continue
        w = k.window if fp.alloc.window_style != "full" else None
        out[w] = out.get(w, 0) + n * k.kv_bytes_per_token(fp.kv_dtype, fp.tp, fp.alloc)
    return out


STATE_TOKEN_RATIO = Fraction(9, 10)
"""SGLang's mamba_full_memory_ratio default: state memory over token memory (server_args.py, 0.9 in 0.5.4 to 0.5.23)."""
STATE_SLOTS_A_REQUEST = 3
"""SGLang's MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO: state slots a running request holds under the radix cache
(model_runner.py 0.5.4 to 0.5.6, model_runner_kv_cache_mixin.py 0.5.9 and 0.5.14, kv_cache_configurator.py 0.5.23)."""
FIXED_STATE_SLOTS = 512
"""SGLang 0.5.2's state slots without --max-running-requests (model_runner.py, 0.5.2 and 0.5.3)."""


@record(frozen=True)
class StatePool:
    """SGLang's pool of recurrent states beside its token pool (Engine.state_pool)."""

    slots: int
    """max_mamba_cache_size: the states it holds."""
    bytes: int
    """What they take, padding slot included, on one GPU."""
    requests: int
    """The running requests they allow: a third of the slots under the radix cache, else every one."""


def state_pool(fp: KVFootprint, rest: int) -> StatePool | None:
    """SGLang's recurrent-state slots for a Gated DeltaNet model (Qwen3-Next, Qwen3.5), carved from ``rest``, the
    bytes mem_fraction_static leaves after the weights (Engine.state_pool): 'ratio', mamba_full_memory_ratio (0.9)
    : 1 of it to the states, (budget - a slot) // a slot slots with a padding slot (0.5.17 on), budget // a slot
    without; with the radix cache off and --max-running-requests given, that many (0.5.9 on); 'fixed' (0.5.2 and 0.5.3,
    and 0.5.4 to 0.5.8 with the radix cache off: Engine.state_radix_off), --max-running-requests or 512 slots. Under DP attention a rank keeps the fixed slots over the ranks, and in 0.5.4 to
    0.5.6 the ratio's too (Allocation.state_dp, state_ratio_dp). A slot is one
    request's states over its GPU's layers, the recurrent state in fp32 (Engine.recurrent_itemsize). None: the
    engine keeps the states among the tokens. Qwen3.5-9B at TP 2 on 24 GB cards, rest 9.49 GiB: 186 slots of
    25,755,648 B, 62 running requests (its SGLang start's log)."""
    a = fp.alloc
    per = fp.state_bytes
    if a.state_pool == "none" or not per:
        return None
    pad, dp = a.state_pool_pad, max(a.state_dp, 1)
    if a.state_pool == "fixed":
        slots = (a.state_slots if a.state_slots is not None else FIXED_STATE_SLOTS) // dp
    elif not a.radix and a.state_slots is not None:
        slots = a.state_slots // dp
    else:
        budget = max(rest, 0) * STATE_TOKEN_RATIO / (1 + STATE_TOKEN_RATIO)
        slots = int((budget - per * pad) // per) if budget >= per * pad else 0
        slots = slots // dp if a.state_ratio_dp else slots
    requests = slots // STATE_SLOTS_A_REQUEST if a.radix and a.state_pool == "ratio" else slots
    return StatePool(slots, (slots + pad) * per, requests)


def capacity(eng: Engine, fp: KVFootprint, pool: int, seq: int, model_len: int) -> Capacity:
    """The pool as the engine carves it: what it logs (blocks, tokens, concurrency at model_len)
    and the whole requests of ``seq`` tokens it holds."""
    if pool <= 0:
        return Capacity(0, 0 if fp.alloc.block_size else None, 0, 0.0, 0)
    sp = state_pool(fp, pool)
    if sp is not None:
        # SGLang: the tokens take what the states leave, and a request takes a state slot besides its tokens.
        per_tok = fp.per_token
        tokens = (pool - sp.bytes) // per_tok if pool > sp.bytes and per_tok else 0
        conc = min(Fraction(tokens, seq), Fraction(sp.requests)) if seq else Fraction(sp.requests)
        return Capacity(pool, None, tokens, float(conc), int(conc))
    if eng.concurrency_report == "blocks":
        return _block_pool(eng, fp, pool, seq, model_len)
    if eng.swa_pool_ratio is not None and fp.alloc.window_style != "full":
        return _sglang_swa(eng.swa_pool_ratio, fp, pool, seq)
    if eng.per_window_pools:
        return _window_pools(fp, pool, seq, model_len)
    return _token_pool(fp, pool, seq, counting_footprint(eng, fp))


def counting_footprint(eng: Engine, fp: KVFootprint) -> KVFootprint | None:
    """The footprint an engine counts its pool's tokens in where that is not the one it stores: SGLang 0.5.4 to
    0.5.9 counts a DSA model's fp8 cache (stored as fp8_ds_mla) in raw fp8 tokens (Engine.dsa_cell_raw)."""
    if eng.dsa_cell_raw and fp.kv_dtype.name == "fp8" and fp.model.has_sparse_mla:
        return dataclasses.replace(fp, kv_dtype=kv_dtype("fp8_e4m3"))
    return None


def _block_pool(eng: Engine, fp: KVFootprint, pool: int, seq: int, model_len: int) -> Capacity:
    """vLLM: num_blocks = pool // the bytes one block id stands for (the least over the stages'
    workers); a request of max_model_len takes its whole blocks in every KV cache group
    (v1/core/kv_cache_utils.py get_max_concurrency_for_kv_cache_config, 0.33)."""
    stages = range(len(fp.layouts))
    bpb = [fp.bytes_per_block(s) for s in stages]
    if min(bpb) <= 0:
        return Capacity(0, None, None, 0.0, 0)
    nb = min(pool // b for b in bpb)
    at_len = fp.stage_bytes(model_len)
    per_req = max(Fraction(int(at_len[s][1]), bpb[s]) for s in stages)
    bs = fp.alloc.block_size or 1
    if eng.tokens_report == "blocks":
        # V0 (executor/gpu_executor.py, 0.6.3): num_gpu_blocks x block_size / max_model_len.
        conc = nb * bs / model_len
    else:
        conc = float(nb / per_req) if per_req else float("inf")
    tokens: int | None
    if eng.tokens_report == "concurrency-x-length":
        # 0.21 and later: int(max concurrency x max_model_len) (get_kv_cache_capacity).
        tokens = int(nb / per_req * model_len) if per_req else None
    elif eng.tokens_report == "blocks-per-group":
        # 0.11: num_blocks // number of groups x block size.
        tokens = nb // max(fp.layouts[0].groups, 1) * bs
    else:
        tokens = nb * bs
    live = max(nb - (1 if eng.null_block else 0), 0)
    at_seq = [int(r) for _, r in fp.stage_bytes(seq)]
    maxc = min(live * bpb[s] // at_seq[s] for s in stages) if all(at_seq) else 0
    return Capacity(live * min(bpb), nb, tokens, conc, maxc)


def _sglang_swa(ratio: float, fp: KVFootprint, pool: int, seq: int) -> Capacity:
    """SGLang hybrid SWA: a full pool and a sliding pool of ``ratio`` x its tokens sharing the bytes
    (srt/model_executor/pool_configurator.py, HybridSWAPoolConfigurator; 0.5.23)."""
    split = _window_split(fp)
    full = sum(b for w, b in split.items() if w is None)
    swa = {w: b for w, b in split.items() if w is not None}
    cell = full + ratio * sum(swa.values())
    full_tokens = int(pool // cell) if cell else 0
    swa_tokens = int(full_tokens * ratio)
    limits = [Fraction(full_tokens, seq)] if full else []
    limits += [Fraction(swa_tokens, min(seq, w)) for w in swa]
    conc = min(limits) if limits else Fraction(0)
    return Capacity(pool, None, full_tokens, float(conc), int(conc))


def _window_pools(fp: KVFootprint, pool: int, seq: int, model_len: int) -> Capacity:
    """TensorRT-LLM: one pool per window size; window w gets pool x (c_w x w) / sum(c_v x v) of the
    bytes, floor(share / c_w) tokens in whole blocks of 32 rounded up; a request needs
    cdiv(min(seq, w), 32) blocks of each (kvCacheManager.cpp: calculateWindowSizeToShare,
    calculateMaxNumBlocks, getMaxCapacityBatchSize)."""
    bs = fp.alloc.block_size or 32
    split: dict[int, int] = {}
    for w, b in _window_split(fp).items():
        key = model_len if w is None else min(w, model_len)
        split[key] = split.get(key, 0) + b
    weight = sum(b * w for w, b in split.items())
    if not weight:
        return Capacity(0, None, None, 0.0, 0)
    blocks = {w: -(-int(Fraction(pool * w, weight)) // bs) for w in split}
    conc = min(Fraction(blocks[w], -(-min(seq, w) // bs)) for w in split)
    longest = max(split)
    return Capacity(pool, blocks[longest], blocks[longest] * bs, float(conc), int(conc))


def _token_pool(fp: KVFootprint, pool: int, seq: int, counted: KVFootprint | None = None) -> Capacity:
    """One pool of tokens (whole blocks where the allocation has them), less one request's state. ``counted``: the
    footprint the engine counts the tokens in where it differs from the one it stores (counting_footprint); the
    memory those tokens take as stored is then what the pool holds, over the budget."""
    req = int(fp.request_bytes(seq))
    per_tok, state, bs = fp.per_token, fp.state_bytes, fp.alloc.block_size
    size = counted.per_token if counted is not None else per_tok
    nb: int | None = None
    tokens: int | None = None
    usable = pool
    if per_tok and bs:
        nb = (pool - state) // (bs * size) if pool > state else 0
        tokens = nb * bs
        usable = nb * bs * per_tok + state
    elif per_tok:
        tokens = (pool - state) // size if pool > state else 0
        if counted is not None:
            usable = tokens * per_tok + state
    return Capacity(usable, nb, tokens, usable / req if req else float("inf"), usable // req if req else 0)


def check_free(gpu: GPUSpec, inp: FitInputs) -> None:
    """Memory free at start-up is at most the device's total: the one given, else the most the
    runtime total of this GPU may be."""
    if inp.gpu_free is None:
        return
    top, whose = (
        (inp.gpu_memory, "the device memory given,")
        if inp.gpu_memory is not None
        else (runtime_total(gpu).high, f"the most {gpu.name}'s runtime total may be,")
    )
    if inp.gpu_free > top:
        raise KvcalcError(
            f"{fmt_iec(inp.gpu_free)} free is more than {whose} {fmt_iec(top)}",
            "gpu_free",
            f"at most {top:,} B ({fmt_iec(top)})"
            + ("" if inp.gpu_memory is not None else f"; for a GPU with more memory than {gpu.name}, give its total memory too"),
        )


def layout_guess(model: ModelSpec, inp: FitInputs) -> str | None:
    """The warning that a weight format given by flag guesses the checkpoint's per-role layout, where
    it does (no measured weights given, and a layout the format implies)."""
    if inp.weight_dtype and inp.weights is None and flag_layout(model, inp.weight_dtype) is not None:
        return (
            f"--weight-dtype {inp.weight_dtype} guesses the checkpoint's layout (the linear layers quantized, the "
            "embeddings, LM head, norms, routers and any vision tower in bf16); the model's own config.json with its "
            "quantization_config, or --weights, gives the real one"
        )
    return None


def fit(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> FitReport:
    eng = inp.engine
    shape = Shape(inp.tp, inp.pp, inp.dp, inp.ep)
    check_shape(model, shape, eng)
    check_free(gpu, inp)
    fp = footprint(model, gpu, inp)
    dt = fp.kv_dtype  # the format the engine stores: fp8 on sparse MLA may be fp8_e4m3 or fp8_ds_mla
    bs = fp.alloc.block_size
    b = budget(model, gpu, inp)
    pool = b.pool
    ctx = model.max_position_embeddings
    accepted: int | None = None
    whole, check = False, fp
    if eng.concurrency_report == "blocks":
        # vLLM compares one request of max_model_len (its blocks in every layer) with the whole
        # available memory, before the null block is taken (0.11 and 0.33 alike; V0 compares
        # max_model_len with num_gpu_blocks x block_size, the same figure for full attention).
        # 0.14 to 0.16 at PP > 1: every stage's layers together, the whole model, against one stage's
        # memory (Engine.pp_start_check).
        check = start_check_footprint(eng, fp)
        whole = check is not fp
        fits_len = check.longest_request(max(pool, 0), cap=ctx + 1) if pool > 0 else 0
        accepted = min(fits_len if fits_len is not None else ctx, ctx)
    # --max-model-len auto: the length the start check's search finds (_auto_fit_max_model_len); where
    # not one token fits, 1 keeps the capacity arithmetic defined (the verdict says DOES NOT START).
    mml = (accepted or 1) if inp.max_model_len_auto else inp.model_len
    cap = capacity(eng, fp, pool, inp.seq, mml)
    lo = capacity(eng, fp, b.pool_low, inp.seq, mml).max_concurrency
    hi = capacity(eng, fp, b.pool_high, inp.seq, mml).max_concurrency
    assumptions = [f"engine: {eng.title}: {eng.note}", *b.assumptions, dtype_note(model, dt)]
    if eng.in_flight != "none" and model.has_windows:
        assumptions.append(
            f"sliding and chunked layers reserve for {eng.in_flight_tokens(batched_tokens(model, gpu, inp), inp.pp):,} "
            f"tokens in flight ({eng.in_flight_words(inp.pp)}, max_num_batched_tokens {batched_tokens(model, gpu, inp):,})"
        )
    for note in dict.fromkeys(n for k in model.kinds() if (n := k.engine_note(eng))):
        assumptions.append(note)
    if (
        inp.block_size is None
        and model.has_sparse_mla
        and eng.sparse_mla_block
        and fp.alloc.block_size == eng.sparse_mla_block != eng.block_size
    ):
        instead = f"not {eng.block_size}" if eng.block_size else "where its pool is otherwise token-granular"
        assumptions.append(
            f"blocks of {fp.alloc.block_size} tokens, {instead}: {eng.label} forces them for a sparse-MLA model's "
            "backends on NVIDIA GPUs"
        )
    elif (
        inp.block_size is None
        and not model.has_sparse_mla
        and fp.alloc.block_size == eng.block_size_for(model, gpu.vendor, gpu.name) != eng.block_size
    ):
        assumptions.append(
            f"blocks of {fp.alloc.block_size} tokens, not {eng.block_size}: {eng.label}'s default MLA backend on "
            f"{gpu.name} takes them"
        )
    if fp.alloc.block_size and fp.alloc.state_page_bytes and eng.block_size and fp.alloc.block_size != eng.block_size:
        assumptions.append(
            f"block size raised to {fp.alloc.block_size} tokens so that one attention page holds a recurrent state "
            f"({fp.alloc.state_page_bytes:,} B per layer page); a request holds {fp.alloc.state_blocks} such page"
            + ("s a state layer (prefix caching on)" if fp.alloc.state_blocks == 2 else " a state layer")
            + (" (prefix caching off)" if fp.alloc.state_blocks == 1 and eng.state_pages == "align" else "")
        )
    sp = state_pool(fp, pool) if pool > 0 else None
    if sp is not None:
        a = fp.alloc
        ranks = f"over {a.state_dp} DP-attention ranks"
        if a.state_pool == "ratio" and (a.radix or a.state_slots is None):
            how = f"{float(STATE_TOKEN_RATIO)} : 1 of the pool to them (mamba_full_memory_ratio), {sp.slots:,} slots"
            how += f" (the ratio's {ranks})" if a.state_dp > 1 and a.state_ratio_dp else ""
        elif a.state_slots is not None:
            how = f"{sp.slots:,} slots (--max-running-requests" + (f" {ranks}" if a.state_dp > 1 else "")
            how += ", the radix cache off)" if a.state_pool == "ratio" else ")"
        else:
            how = f"{sp.slots:,} fixed slots (the radix cache off" + (
                f"; {FIXED_STATE_SLOTS} {ranks})" if a.state_dp > 1 else ")"
            )
        assumptions.append(
            f"{eng.label} keeps the recurrent states in a pool of their own: {how} of {fp.state_bytes:,} B "
            f"(the recurrent state in fp32, the conv state in 16 bits)"
            + (f" and {a.state_pool_pad} padding slot" if a.state_pool_pad else "")
            + f", {sp.bytes:,} B ({fmt_iec(sp.bytes)}); at most {count_of(sp.requests, 'running request')}"
            + (" (a third of the slots under the radix cache)" if a.radix and a.state_pool == "ratio" else "")
            + "; the tokens take the rest"
        )
    elif fp.state_bytes and not fp.alloc.state_page_bytes:
        assumptions.append(
            "recurrent-state layers hold a fixed state per request; the pool's token count leaves room for one request's state"
        )
    req = int(fp.request_bytes(inp.seq))
    mem_len = fp.longest_request(cap.usable) if sp is None else cap.tokens
    if mem_len is None or mem_len > ctx:
        max_len, limited = ctx, "max context"
    else:
        max_len, limited = mem_len, "memory"
    if inp.max_model_len_auto:
        # Nothing left for the KV cache at all is DOES NOT FIT (and its fewest-GPUs answer), as without auto.
        starts = pool <= 0 or bool(accepted)
    else:
        starts = accepted is None or inp.max_model_len is None or pool <= 0 or inp.max_model_len <= accepted
    warnings = []
    if inp.max_model_len_auto:
        assumptions.append(
            f"--max-model-len auto: {eng.label} profiles at the model's context ({ctx:,} tokens), then takes the "
            f"largest max_model_len whose one request fits the available memory: {accepted or 0:,} tokens"
            + (" (the whole context)" if accepted == ctx else "")
        )
        if not starts:
            warnings.append(
                f"{eng.label} cannot auto-fit max_model_len: not one token's KV fits the {fmt_iec(max(pool, 0))} available"
            )
    elif not starts:
        need = int(check.request_bytes(mml))
        warnings.append(
            f"{eng.label} refuses to start with --max-model-len {mml:,}: one request of it needs "
            f"{fmt_iec(need)} of KV cache"
            + (f" in all {model.num_layers} layers of the {inp.pp} stages together" if whole else "")
            + f", more than the {fmt_iec(max(pool, 0))} available"
            + (" on one stage's GPU (its start-up check, 0.14 to 0.16, takes the whole model's layers)" if whole else "")
            + f"; it starts with at most {accepted:,}"
        )
    elif accepted is not None and inp.max_model_len is None and not inp.max_model_len_auto and 0 < accepted < ctx:
        # vLLM's max_model_len defaults to the model's context (max_position_embeddings), which its
        # start-up check then weighs: the commonest refused start.
        warnings.append(
            f"without --max-model-len {eng.label} takes the model's context, {ctx:,} tokens, and refuses to start "
            f"here (one request of it needs {fmt_iec(int(check.request_bytes(ctx)))} of KV cache, "
            f"{fmt_iec(pool)} available): pass --max-model-len {accepted:,} or less"
        )
    if pool <= 0:
        warnings.append(f"does not fit: nothing is left for the KV cache ({pool:,} B after weights and reserves)")
    elif cap.max_concurrency == 0:
        warnings.append(f"not even one request of {inp.seq:,} tokens fits in the KV pool")
    counted = counting_footprint(eng, fp)
    if counted is not None and pool > 0 and cap.usable > pool:
        warnings.append(
            f"{eng.label} counts this pool in tokens of the raw fp8 latent ({counted.per_token:,} B a token here) but "
            f"stores FlashMLA's layout ({fp.per_token:,} B): its {cap.tokens or 0:,} tokens take "
            f"{cap.usable:,} B ({fmt_iec(cap.usable)}), {cap.usable - pool:,} B ({fmt_iec(cap.usable - pool)}) beyond the "
            "budget (0.5.10 counts the stored layout)"
        )
    if inp.seq > ctx:
        warnings.append(f"seq {inp.seq:,} exceeds the model's max context of {ctx:,} tokens (max_position_embeddings)")
    # What tensor parallelism costs each kind (an MLA latent whole on every rank, replicated KV heads),
    # as kvcalc size says it.
    for w in dict.fromkeys(w for k in model.kinds() if (w := k.tp_warning(inp.tp, fp.alloc))):
        warnings.append(w)
    # Where the record's releases differ on a rule, say so rather than choose (Engine fields).
    if eng.sparse_mla_auto_fp8 and inp.kv_dtype.name == "bf16" and model.has_sparse_mla:
        warnings.append(
            f"vLLM {eng.sparse_mla_auto_fp8} stores a sparse-MLA cache (DeepSeek-V3.2's) as fp8_ds_mla by default "
            f"(kv_cache_dtype auto), where the record's other releases keep bf16: pass --kv-dtype fp8 for "
            f"{eng.sparse_mla_auto_fp8}"
        )
    # Where the engine's kv_cache_dtype auto stores a format of its own here (stored_kv_dtype): say which.
    auto_dt = stored_kv_dtype(model, gpu.name, dataclasses.replace(inp.kv_dtype, auto=True), eng, inp.tp)
    if eng.sparse_mla_auto_kv and auto_dt.name != inp.kv_dtype.name:
        if inp.kv_dtype.auto:
            assumptions.append(
                f"kv_cache_dtype auto: {eng.label} stores this sparse-MLA cache as fp8 on {gpu.name} "
                f"({eng.sparse_mla_auto_kv}), so it is counted so"
            )
        elif inp.kv_dtype.bits == 16:
            warnings.append(
                f"{eng.label} stores a sparse-MLA cache as fp8_e4m3 on {gpu.name} by default (kv_cache_dtype auto: "
                f"{eng.sparse_mla_auto_kv}); {inp.kv_dtype.name} as given is counted here"
            )
    if inp.kv_cache_memory is not None and eng.kv_cache_memory_since:
        warnings.append(
            f"of the releases {eng.key} covers only {eng.kv_cache_memory_since} and later take kv_cache_memory_bytes; "
            "the earlier ones refuse it"
        )
    room = next((x for x in b.lines if x.key == "headroom"), None)
    if room is not None and room.bytes < 0:
        warnings.append(
            f"the given KV cache memory ({fmt_iec(inp.kv_cache_memory or 0)}) with the weights and the estimated "
            f"reserves needs {fmt_iec(-room.bytes)} more than the device has: expect out-of-memory at start-up"
        )
    if inp.gpu_free is not None and eng.budget != "util_of_start_free":
        warnings.append(
            f"--gpu-free is SGLang's budget (a fraction of the memory free at start-up); {eng.title} budgets the device "
            "total: pass --gpu-memory instead"
        )
    guess = layout_guess(model, inp)
    if guess:
        warnings.append(guess)
    if shape.dp > 1:
        assumptions.append(
            f"{shape.describe()} ({engine_flags(shape, eng)}): each of the {shape.dp} DP ranks "
            f"has its own KV pool and scheduler and keeps only its own requests' KV; the pool, the blocks and the "
            "concurrency above are one DP rank's, as each engine core logs them; requests spread evenly over the ranks"
        )
    elif shape.ep > 1:
        assumptions.append(
            f"{shape.describe()} ({engine_flags(shape, eng)}): attention and the KV cache split over the TP ranks as "
            f"without EP, one KV pool and scheduler; each routed expert whole on one of the {shape.ep} GPUs"
        )
    if shape.dp > 1 or shape.ep > 1:
        assumptions.append(f"placement: {place(gpu, shape).describe()}")
    if lo != hi and lo == 0 < cap.max_concurrency:
        warnings.append("at the pessimistic end of the estimates not one request fits: measure before relying on it")
    modelled = encoder_modelled(model, eng.vision_profile) or inp.skip_mm_profiling
    if model.vision_params and eng.subtracts_activation and not modelled and inp.activation is None:
        warnings.append(
            "multimodal model: the vision tower's weights are counted, but the engine's profile run also encodes dummy "
            "images at their largest, which the activation estimate does not model; it can take GiB (Llama 3.2 Vision "
            "at 64k tokens and 128 sequences: 36.6 GiB, vllm#12126): pass --activation with the logged figure"
        )
    if not starts:
        verdict = (
            f"DOES NOT START: {eng.label} cannot auto-fit max_model_len (not one token fits)"
            if inp.max_model_len_auto
            else f"DOES NOT START: {eng.label} refuses --max-model-len {mml:,}; it starts with at most {accepted:,}"
        )
    elif pool <= 0:
        verdict = f"DOES NOT FIT: nothing is left for the KV cache ({pool:,} B after weights and reserves)"
    elif cap.max_concurrency == 0:
        verdict = f"DOES NOT FIT: not even one request of {inp.seq:,} tokens fits in the KV pool"
    else:
        verdict = f"fits: {count_of(cap.max_concurrency, 'request')} of {inp.seq:,} tokens at once" + (
            f" on each DP rank, {cap.max_concurrency * inp.dp:,} over {inp.dp} DP ranks" if inp.dp > 1 else ""
        )
    return FitReport(
        model=model.name,
        gpu=gpu.name,
        engine=eng.key,
        engine_label=eng.label,
        engine_releases=eng.releases,
        util_flag=eng.util_flag,
        seq=inp.seq,
        max_model_len=mml,
        tp=inp.tp,
        pp=inp.pp,
        dp=inp.dp,
        ep=inp.ep,
        gpus=shape.gpus,
        kv_dtype=dt.name,
        block_size=bs,
        util=b.util,
        budget=b.lines,
        gpu_memory_bytes=b.lines[0].bytes,
        weight_bytes=b.weights,
        kv_pool_bytes=pool,
        kv_pool_usable_bytes=cap.usable,
        kv_bytes_per_token=fp.per_token,
        kv_pool_blocks=cap.blocks,
        kv_pool_tokens=cap.tokens,
        request_bytes=req,
        max_concurrency=cap.max_concurrency,
        max_concurrency_total=cap.max_concurrency * inp.dp,
        concurrency=cap.concurrency,
        concurrency_label=(
            f"as vLLM logs it ({mml:,} tokens)" if eng.concurrency_report == "blocks" else "the pool over one request"
        ),
        max_concurrency_range=Range(min(lo, cap.max_concurrency), max(hi, cap.max_concurrency)),
        max_seq_len=max_len,
        max_seq_len_memory=mem_len,
        max_seq_len_limited_by=limited,
        max_model_len_accepted=accepted,
        fits=pool > 0 and cap.max_concurrency > 0 and starts,
        starts=starts,
        verdict=verdict,
        estimates=b.estimates,
        assumptions=assumptions,
        warnings=warnings,
        inputs={"model": model.name, "gpu": gpu.name, **inp.echo()},
        track_record=(memory_record(eng, inp.tp * inp.pp * inp.dp) if any(e.basis == "estimated" for e in b.estimates) else None),
        state_slots=sp.slots if sp is not None else None,
        state_pool_bytes=sp.bytes if sp is not None else 0,
        state_requests=sp.requests if sp is not None else None,
    )


def requests_in_memory(f: FitReport, seq: int, request_bytes: int) -> int | None:
    """Requests of ``seq`` tokens that fit in ``f``'s KV pool, ``request_bytes`` each: the pool over a request, or
    where SGLang keeps the states in a pool of their own (state_pool), the tokens its slots leave over ``seq``, at most
    the running requests the slots allow. None: a request caches nothing."""
    if f.state_requests is not None:
        return min((f.kv_pool_tokens or 0) // max(seq, 1), f.state_requests)
    return max(f.kv_pool_usable_bytes, 0) // request_bytes if request_bytes else None
