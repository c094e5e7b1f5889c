"""The one step-time model: what a real engine step costs, beside the bound it cannot beat.

A step runs ``n`` decoding requests (one token each, at their own contexts) and ``p`` prompt
tokens (chunked prefill). On one tensor-parallel rank it takes

    t_step = rss(weight bytes / (bandwidth x eta_gemm), matmul FLOPs / (matmul peak x eta_mm))
             + max(KV bytes / (bandwidth x eta_bw), attention FLOPs / (16-bit peak x eta_c))
             + tokens x elementwise bytes / (bandwidth x eta_bw)  (norms, rotary, activations)
             + t_fixed                                   (scheduling, sampling, launches)
             + 2 L x allreduce(a)                        (two all-reduces per layer at TP > 1)
             + (pp - 1) x (alpha_p2p + a / link)         (PP hand-offs between stages)

with ``a`` = tokens x hidden x 2 bytes of activations, ``eta_gemm`` the share of the bandwidth the
GPU's own decode-shaped matmuls reach where its spec measures them (GPUSpec.gemm, with their fixed
latency), else eta_bw, ``eta_mm`` eta_c (eta_c_fp8 for fp8 matmuls) and ``allreduce`` the GPU's
measured latency at that size where its spec has one, else alpha + a x 2(tp-1)/tp / link, and
``rss(a, b)`` = sqrt(a^2 + b^2) (:func:`matmul_s`: near the knee a matmul is neither purely memory- nor
compute-bound, and the measured tables take longer than the larger of the two). The matmuls, the attention and the small kernels between them are
separate kernels on one stream, one after the other, so each is held to its own roofline and their
times add: a step whose matmuls are compute-bound (a prefill chunk, hundreds of decodes) still
reads its requests' KV in attention kernels after them (Vidur and AIConfigurator likewise add their
operators' times). The bound (``t_bound``) is max(all bytes / bandwidth, all FLOPs / peak) with
nothing added: no engine step is faster, and roofline prints it beside the estimate. Matmuls run
at the checkpoint's precision where the GPU has units for it (fp8 weights at the fp8 peak: W8A8;
W8A8 int8 ones at the INT8 peak; NVFP4 ones at the fp4 peak: W4A4; weights quantized alone, W8A16, at
16 bits); attention at the 16-bit peak.

Every other module asks this one for a step's time: roofline's estimate, plan's closed form and
simulate's spans (``lines`` and ``span_s``: between two events the batch is fixed and its
contexts grow by one token a step, so a span of K steps is summed in closed form).

The defaults are microbenchmark and engine-code figures, each cited in :data:`DEFAULT_SOURCES`;
none was fitted to a serving benchmark. A calibration (kvcalc calibrate) replaces them.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import fields, replace
from typing import Any, Literal

from kvcalc._record import record
from kvcalc.engine.alloc import LOGICAL
from kvcalc.engine.bound import ACT_BYTES, Decode, peak_flops
from kvcalc.engine.deployment import Shape, check_shape, group_link_kind, link_name, node_of, place
from kvcalc.engine.engines import (
    AMD_INSTINCT,
    BELOW_SM80,
    SGLANG_AR_FUSION_MAX_TOKENS,
    TRITON_GPUS,
    Engine,
    MlaKernel,
    MoeRunner,
    TritonMLAKernel,
    allreduce_norm_fusion,
    mla_kernel,
    moe_runner,
    triton_mla_fixed_splits,
)
from kvcalc.engine.weights import busiest_rank_experts, expected_experts, mla_materialized, moe_width
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.gpu import GemmSpec, GPUSpec
from kvcalc.specs.layers import MLA, DecodeGeometry, LayerKind
from kvcalc.specs.model import ModelSpec

FP8_CHECKPOINTS = ("fp8", "fp8_e4m3", "fp8_e5m2")
QuantFormat = Literal["fp8", "int8", "fp4"]
"""The precisions whose matmuls quantize their activations before each linear layer (W8A8 fp8 and int8, NVFP4 W4A4)."""
QUANT_METHOD_OF: dict[str, str] = {"int8": "int8-channel", "fp4": "nvfp4"}
"""The quantization method (Quantization.method) whose checkpoints run int8 (fp4) matmuls; fp8's are every fp8-*."""


MATMUL_SHARE: dict[str, str] = {"fp8": "eta_c_fp8", "int8": "eta_c_int8", "fp4": "eta_c_fp4"}
"""The StepConstants field that gives the dense matmuls' share of the peak at a compute dtype (StepModel.eta_mm,
and what kvcalc calibrate fits for runs at it); eta_c at 16 bits."""


def quant_format(compute_dtype: str) -> QuantFormat | None:
    """The format matmuls at ``compute_dtype`` quantize their activations to; None at 16 bits."""
    return "fp8" if compute_dtype == "fp8" else "int8" if compute_dtype == "int8" else "fp4" if compute_dtype == "fp4" else None


@record(frozen=True)
class StepConstants:
    """The figures that separate a real step from the bound. ``alpha_s`` and ``link_bytes_per_s``
    of None take the link's own (by kind: NVLink-class or PCIe). Each default's source is in
    :data:`DEFAULT_SOURCES` (and docs/simulation.md)."""

    eta_bw: float = 0.80
    """Share of the datasheet memory bandwidth a decode step's reads reach (and its matmuls' weight
    reads on a GPU whose spec does not measure them: eta_gemm)."""
    eta_gemm: float | None = None
    """Share of the datasheet bandwidth the matmuls' weight reads reach; None: the GPU's measured share
    (GPUSpec.gemm) where its spec has one, else eta_bw."""
    eta_c: float = 0.70
    """Share of the dense 16-bit peak FLOP/s the matmuls and attention reach."""
    eta_c_fp8: float = 0.35
    """Share of the dense fp8 peak FLOP/s that fp8 (W8A8) matmuls reach: half eta_c, as vLLM's fp8
    kernels reach half the share of their peak that the same shapes reach in bf16."""
    eta_c_int8: float = 0.525
    """Share of the dense INT8 peak that W8A8 int8 matmuls reach: three quarters of eta_c, as vLLM's int8 CUTLASS kernels
    with their inputs' quantization reach 0.63-0.72 (Hopper) and 0.82-0.85 (A100) of the share of their peak that the
    same shapes reach in bf16 (DEFAULT_SOURCES['eta_c_int8'])."""
    eta_c_fp4: float = 0.35
    """Share of the dense fp4 peak FLOP/s that NVFP4 (W4A4) matmuls reach: half eta_c, as vLLM's NVFP4
    kernels on Blackwell reach about half the share of their peak that the same shapes reach in bf16."""
    eta_c_gemm: float | None = None
    """Share of the dense peak at their precision that the dense matmuls reach; None: the GPU's
    measured share where its spec has one for matmuls at that precision (GemmSpec.compute_share), else
    eta_c at 16 bits, eta_c_fp8 at fp8, eta_c_int8 at int8 and eta_c_fp4 at fp4."""
    fixed_s: float = 0.0005
    """Per-step engine cost outside the kernels (scheduling, input preparation, output
    processing), seconds."""
    per_request_s: float = 4e-6
    """Per-step engine cost per running request (the scheduler's schedule() and
    update_from_output()), seconds."""
    gemm_latency_s: float | None = None
    """Latency of one matrix-multiply kernel beyond its bytes over the bandwidth, seconds; None: the
    GPU's measured figure (GPUSpec.gemm) where its spec has one, else GEMM_LATENCY_S."""
    attn_latency_s: float = 11e-6
    """Latency of one decode attention call (with its KV-cache write) beyond its bytes, seconds."""
    attn_request_s: float | None = None
    """What one decode attention call adds per request it runs and KV head on the GPU, seconds (the
    per-request work of its thread blocks; MLA's calls are measured whole in mla_attn_latency_s); None:
    the GPU's measured figure (GPUSpec.attention) where its spec has one, else ATTN_REQUEST_S."""
    mla_attn_latency_s: float | None = None
    """Latency of one MLA decode attention call beyond its bytes, seconds; None: the GPU's measured
    figure (GPUSpec.mla) where its spec has one, else MLA_ATTN_LATENCY_S."""
    moe_latency_s: float = 28e-6
    """Latency of one fused routed-expert call (both multiplies, and the alignment, quantization and
    combine kernels inside it: Kernels.moe_inner) beyond its bytes, seconds."""
    moe_quant_s: float = 10e-6
    """What a fused routed-expert call of quantized experts (Kernels.moe_quant: fp8 W8A8, or MXFP4 on OpenAI's
    Triton kernel on Hopper) takes beyond moe_latency_s, seconds: the activations' quantization and the
    scales' work."""
    moe_flashinfer_s: float = 22e-6
    """Latency of one fused routed-expert call run by FlashInfer's TensorRT-LLM fp8 block-scale kernel
    (Kernels.moe_flashinfer, SGLang or vLLM on SM100: StepModel.moe_flashinfer) beyond its bytes, seconds: in place
    of moe_latency_s and moe_quant_s, which Triton's calls measure."""
    moe_flashinfer_bf16_s: float = 8e-6
    """Latency of one fused routed-expert call of 16-bit experts run by FlashInfer's TensorRT-LLM kernel
    (Kernels.moe_flashinfer_bf16, on SM100: StepModel.moe_flashinfer_bf16) beyond its bytes, seconds: in place of
    moe_latency_s."""
    moe_flashinfer_fp4_s: float = 14e-6
    """Latency of one fused routed-expert call of NVFP4 experts run by the TensorRT-LLM-gen fp4 block-scale kernel
    (FlashInfer's, or TensorRT-LLM's TRTLLM MoE backend; Kernels.moe_flashinfer_fp4, StepModel.moe_fp4 'flashinfer')
    beyond its bytes, seconds: in place of moe_latency_s and moe_quant_s."""
    moe_cutlass_fp4_s: float = 86e-6
    """Latency of one fused routed-expert call of NVFP4 experts run by a CUTLASS grouped-GEMM MoE (the engines' other
    NVFP4 MoE path on Blackwell; Kernels.moe_cutlass_fp4, StepModel.moe_fp4 'cutlass') beyond its bytes, seconds: in place
    of moe_latency_s and moe_quant_s."""
    kernel_gap_s: float = 2.7e-6
    """Time of one small kernel (a norm, rotary, an activation, routing) in a CUDA-graph decode step,
    with the spacing before the next, seconds."""
    eager_launch_s: float = 1.2e-6
    """What launching a kernel outside a CUDA graph adds to it, for steps past GRAPH_MAX_TOKENS."""
    eager_host_s: float = 42e-6
    """Host time to issue one kernel (as layer_kernels counts them) of a layer run eagerly from
    Python, where the engine runs a step's prompt tokens without CUDA graphs (Engine.prefill_graphs):
    such a step takes at least the host's time to issue the whole model's kernels."""
    alpha_s: float | None = None
    """Latency of one small all-reduce, seconds (None: the link's default)."""
    link_bytes_per_s: float | None = None
    """Bus bandwidth of an all-reduce, one direction per GPU (None: the link's default)."""
    moe_eta_c: float | None = None
    """Share of the dense peak FLOP/s vLLM's fused routed-expert kernels reach; None: by the expert's
    width on a GPU, as vLLM's measured Triton fused-MoE tables give it (moe_eta, MOE_ETA)."""
    moe_imbalance: float = 1.0
    """With expert parallelism, the busiest rank's routed-expert work over the mean beyond what
    moe_eta_c's measurements carry (1: as measured; up to 2.6 seen without EPLB: DEFAULT_SOURCES)."""
    net_alpha_s: float | None = None
    """Latency of one small collective across nodes, seconds (None: NET_ALPHA_S)."""
    request_overhead_s: float = 0.004
    """What a request spends outside the engine's steps before its first token (HTTP, the API
    server, the hand-off to the engine), added to TTFT."""
    tokenize_s_per_token: float = 1.5e-6
    """Tokenisation per prompt token, added to TTFT with the request overhead."""
    triton_cta_bytes_per_s: float = 5.27e9
    """KV-cache bytes one thread block of SGLang's Triton split-KV decode kernel reads a second: its
    blocks each walk their share of a request's context one tile at a time, so at a small batch a step
    takes at least the longest share over this, whatever the bandwidth (StepModel.attn_floor_s; only
    where the deployment runs that backend: Engine.attention_backend)."""
    origin: str = "defaults"
    """'defaults', or the calibration file these came from."""

    def check(self) -> StepConstants:
        for name in ("eta_bw", "eta_gemm", "eta_c", *MATMUL_SHARE.values(), "eta_c_gemm", "moe_eta_c"):
            v = getattr(self, name)
            if v is not None and not (0.01 <= v <= 1.0):
                raise KvcalcError(f"{name} {v!r} is out of range", name, "a fraction from 0.01 to 1")
        if not (1.0 <= self.moe_imbalance <= 16.0):
            raise KvcalcError(f"moe_imbalance {self.moe_imbalance!r} is out of range", "moe_imbalance", "a ratio from 1 to 16")
        # Every constant in seconds: its name ends in _s (not a rate's _per_s), or tokenisation's per token.
        seconds = [f.name for f in fields(self) if f.name.endswith("_s") and not f.name.endswith("_per_s")]
        for name in [*seconds, "tokenize_s_per_token"]:
            v = getattr(self, name)
            if v is not None and not (0.0 <= v < 10.0):
                raise KvcalcError(f"{name} {v!r} is out of range", name, "seconds from 0 to 10")
        if not (1e6 <= self.triton_cta_bytes_per_s <= 1e13):
            raise KvcalcError(
                f"triton_cta_bytes_per_s {self.triton_cta_bytes_per_s!r} is out of range",
                "triton_cta_bytes_per_s",
                "bytes/s from 1e6 to 1e13",
            )
        if self.link_bytes_per_s is not None and not (0 < self.link_bytes_per_s < 1e15):
            raise KvcalcError(f"link_bytes_per_s {self.link_bytes_per_s!r} is out of range", "link_bytes_per_s", "bytes/s")
        return self

    def moe_eta(self, width: float | None, dtype: str, fit: tuple[float, float] | None = None) -> float:
        """The routed experts' share of the peak: moe_eta_c where it is set, else a x n / (n + b) for
        ``width`` n, the expert's intermediate width on one GPU, with (a, b) the GPU's own measured ``fit``
        where given (GPUSpec.moe), else by the experts' compute ``dtype`` (MOE_ETA); MOE_ETA_OTHER where the
        fit does not reach (``width`` None)."""
        if self.moe_eta_c is not None:
            return self.moe_eta_c
        if width is None:
            return MOE_ETA_OTHER
        a, b = fit or MOE_ETA.get(dtype, MOE_ETA["bf16"])
        return a * width / (width + b)

    def with_efficiency(self, eta: float) -> StepConstants:
        """The constants with one efficiency for bandwidth (the matmuls' weight reads too) and compute,
        16-bit, fp8, int8 and fp4 (--efficiency)."""
        return replace(self, eta_bw=eta, eta_gemm=eta, eta_c=eta, eta_c_fp8=eta, eta_c_int8=eta, eta_c_fp4=eta, eta_c_gemm=eta)

    def request_path_s(self, prompt: Any) -> Any:
        """Seconds before the engine sees a request of ``prompt`` tokens."""
        return self.request_overhead_s + self.tokenize_s_per_token * prompt


DEFAULTS = StepConstants()


def hidden_host(host: float, t: float) -> float:
    """What of a step of ``t`` seconds the host's own ``host`` seconds no longer add when they run beside the GPU's
    work (async scheduling): the step takes the longer of the two, so min(host, max(t - host, 0))."""
    return min(host, max(t - host, 0.0))


def defaults_for(engine: Engine | None) -> StepConstants:
    """The default constants for an engine release: the release's own host costs where they were
    measured apart from vLLM V1's (Engine.host_step_s, host_per_request_s: vLLM's V0) and its host's issue of an
    eager forward's kernels where its own prompt step was measured (Engine.host_kernel_s: SGLang's), else DEFAULTS."""
    if engine is None or (engine.host_step_s is None and engine.host_per_request_s is None and engine.host_kernel_s is None):
        return DEFAULTS
    return replace(
        DEFAULTS,
        fixed_s=DEFAULTS.fixed_s if engine.host_step_s is None else engine.host_step_s,
        per_request_s=DEFAULTS.per_request_s if engine.host_per_request_s is None else engine.host_per_request_s,
        eager_host_s=DEFAULTS.eager_host_s if engine.host_kernel_s is None else engine.host_kernel_s,
        origin=f"defaults, {engine.label}'s host costs",
    )


GEMM_LATENCY_S = 3e-6
"""A matmul's fixed latency on a GPU whose spec does not measure it (DEFAULT_SOURCES)."""
ATTN_REQUEST_S = 24.5e-9
"""A decode attention call's cost per request and KV head on a GPU whose spec does not measure it: the
H100's (DEFAULT_SOURCES['attn_request_s'])."""
MLA_ATTN_LATENCY_S = 62e-6
"""An MLA decode attention call's latency on a GPU whose spec does not measure it: the H200's
(DEFAULT_SOURCES['mla_attn_latency_s'])."""
MOE_ETA: dict[str, tuple[float, float]] = {
    "bf16": (0.666, 545.0),
    "fp8": (0.311, 459.0),
    "fp8_flashinfer": (0.180, 217.0),
    "bf16_flashinfer": (0.399, 149.0),
    "fp4_flashinfer": (0.429, 1095.0),
    "fp4_cutlass": (0.489, 3600.0),
}
"""(a, b) of the routed experts' share of the peak, a x n / (n + b) for an expert width n on one GPU, by
the experts' compute dtype: vLLM's Triton fused-MoE kernels as measured (DEFAULT_SOURCES['moe_eta_c']);
'fp8_flashinfer': FlashInfer's TensorRT-LLM fp8 block-scale kernel on B200 (DEFAULT_SOURCES['moe_flashinfer_s']);
'bf16_flashinfer': its 16-bit kernel on B200 (DEFAULT_SOURCES['moe_flashinfer_bf16_s']); 'fp4_flashinfer': the
TensorRT-LLM-gen NVFP4 kernel on B200, at the fp4 peak (DEFAULT_SOURCES['moe_flashinfer_fp4_s']); 'fp4_cutlass':
TensorRT-LLM's CUTLASS NVFP4 MoE on B200, at the fp4 peak (DEFAULT_SOURCES['moe_cutlass_fp4_s'])."""
MOE_ETA_OTHER = 0.15
"""The share where the fit does not reach: MXFP4 experts (another kernel), and expert parallelism, whose
measured ranks lose efficiency with EP's size at a given width; the middle of the EP 8 tables at 16,384
tokens (DEFAULT_SOURCES['moe_eta_c'])."""


def gemm_block(gpu: GPUSpec, fp8: bool = False, fp4: bool = False, trtllm: bool = False) -> GemmSpec | None:
    """The GPU spec's measured matmul figures for a step's matmuls: its fp8 ones (GPUSpec.gemm_fp8)
    where the matmuls run at fp8 and it has them, TensorRT-LLM's own (GPUSpec.gemm_fp8_trtllm) there instead where the
    engine is TensorRT-LLM (``trtllm``) and the spec has them, its NVFP4 ones (GPUSpec.gemm_fp4) where they run at fp4
    and it has them, else its bf16 ones (GPUSpec.gemm), else None."""
    if fp4 and gpu.gemm_fp4 is not None:
        return gpu.gemm_fp4
    if fp8 and trtllm and gpu.gemm_fp8_trtllm is not None:
        return gpu.gemm_fp8_trtllm
    return gpu.gemm_fp8 if fp8 and gpu.gemm_fp8 is not None else gpu.gemm


def gpu_mla_s(gpu: GPUSpec, mla: MlaKernel) -> float | None:
    """The GPU spec's measured MLA decode call for the kernel ``mla`` names (engines.mla_kernel), seconds: SGLang's
    own where its spec has it, else vLLM's module figure; None where the spec has none or SGLang's Triton backend
    runs (its kernel priced apart)."""
    m = gpu.mla
    if m is None or mla == "triton":
        return None
    if mla == "sglang" and m.sglang_latency_us is not None:
        return m.sglang_latency_us * 1e-6
    return m.latency_us * 1e-6


def for_gpu(
    constants: StepConstants,
    gpu: GPUSpec,
    fp8: bool = False,
    compute_dtype: str | None = None,
    mla: MlaKernel = "default",
    fp4_share: float = 1.0,
    trtllm: bool = False,
) -> StepConstants:
    """``constants`` with what they leave open (None) taken from the GPU: its measured matmul share
    and latency (GPUSpec.gemm, or GPUSpec.gemm_fp8 for ``fp8`` matmuls where it has them: gemm_block),
    the share of the peak its measured matmuls reach where they ran at ``compute_dtype``, the step's
    matmuls' precision (GemmSpec.compute_share), its decode attention's cost per request and KV
    head (GPUSpec.attention) and its MLA attention call's latency (GPUSpec.mla) where its spec has
    them, else eta_bw, GEMM_LATENCY_S, eta_c, eta_c_fp8, eta_c_int8 or eta_c_fp4, ATTN_REQUEST_S and MLA_ATTN_LATENCY_S.
    Matmuls at fp4 take the GPU's NVFP4 figures (GPUSpec.gemm_fp4) where it has them; where only ``fp4_share`` of
    them are NVFP4 (fp4_matmul_share: DeepSeek's NVFP4 checkpoints keep MLA in 16 bits), each its own format's
    latency, and the bf16 block's bandwidth share.
    ``mla``: whose MLA decode call the deployment runs (engines.mla_kernel): vLLM's measured module, SGLang's own
    call (GPUSpec.mla's sglang_latency_us where it has one), or SGLang's Triton backend, whose split-KV kernel the step
    model prices apart (attn_floor_s) and which keeps MLA_ATTN_LATENCY_S.
    ``trtllm``: the engine is TensorRT-LLM, whose fp8 matmuls take its own measured figures where the spec has them
    (GPUSpec.gemm_fp8_trtllm: gemm_block)."""
    g = gemm_block(gpu, fp8, compute_dtype == "fp4" and fp4_share >= 1.0, trtllm)
    eta = constants.eta_gemm if constants.eta_gemm is not None else (g.bandwidth_share if g else constants.eta_bw)
    lat = constants.gemm_latency_s
    if lat is None:
        lat = g.latency_us * 1e-6 if g else GEMM_LATENCY_S
        if compute_dtype == "fp4" and fp4_share < 1.0 and gpu.gemm_fp4 is not None:
            lat = fp4_share * gpu.gemm_fp4.latency_us * 1e-6 + (1.0 - fp4_share) * lat
    per = constants.attn_request_s
    if per is None:
        per = gpu.attention.request_head_ns * 1e-9 if gpu.attention else ATTN_REQUEST_S
    mm = constants.eta_c_gemm
    if mm is None and g is not None and g.compute_dtype == compute_dtype:
        mm = g.compute_share
    call = constants.mla_attn_latency_s
    if call is None:
        measured = gpu_mla_s(gpu, mla)
        call = MLA_ATTN_LATENCY_S if measured is None else measured
    given = (
        constants.eta_gemm,
        constants.gemm_latency_s,
        constants.attn_request_s,
        constants.eta_c_gemm,
        constants.mla_attn_latency_s,
    )
    if (eta, lat, per, mm, call) == given:
        return constants
    return replace(constants, eta_gemm=eta, gemm_latency_s=lat, attn_request_s=per, eta_c_gemm=mm, mla_attn_latency_s=call)


def for_engine(constants: StepConstants, engine: Engine | None) -> StepConstants:
    """``constants``, or where they are the untouched DEFAULTS (none given on purpose) the engine
    release's own defaults (:func:`defaults_for`)."""
    return defaults_for(engine) if constants is DEFAULTS else constants


NORM_ALLREDUCE_ARCHITECTURES = ("minimax_m2",)
"""Architectures whose attention all-reduces at TP > 1 besides its output projection and its MLP.
MiniMax-M2 normalises q and k over all heads together, which TP splits across ranks: each rank's
sums of squares are all-reduced. SGLang does q's and k's in one [tokens, 2] fp32 all-reduce
(sglang/srt/models/minimax_m2.py, MiniMaxM2RMSNormTP.forward_qk, 0.5.9), as vLLM does from 0.14
(vllm/model_executor/layers/mamba/linear_attn.py, MiniMaxText01RMSNormTP.forward_qk, 0.14.0 and
0.15.0); vLLM 0.12 and 0.13 call q_norm and k_norm apart, two [tokens, 1] fp32 all-reduces
(vllm/model_executor/models/minimax_m2.py, MiniMaxM2Attention.forward, 0.12.0 and 0.13.0). A
config with use_qk_norm false has none."""


def norm_allreduces(model: ModelSpec, engine: Engine | None = None) -> tuple[int, int]:
    """(all-reduces a layer, bytes a token each) of NORM_ALLREDUCE_ARCHITECTURES under ``engine``
    (the fused form where the engine is not named); (0, 0) for other models. SGLang 0.5.6 and 0.5.7
    all-reduce q's and k's sums apart too, a [tokens, 1] fp32 tensor each (sglang/srt/models/minimax_m2.py,
    MiniMaxM2RMSNormTP.forward, called by q_norm and k_norm), fused from 0.5.8 (rms_sumsq_serial); the record of
    0.5.7 and 0.5.8 (sglang@0.5.8) takes 0.5.8's form."""
    if model.architecture not in NORM_ALLREDUCE_ARCHITECTURES or not model.source.config.get("use_qk_norm", True):
        return 0, 0
    if engine is not None and engine.name == "vllm" and engine.older_than(0, 14):
        return 2, 4
    if engine is not None and engine.name == "sglang" and engine.older_than(0, 5, 8):
        return 2, 4
    return 1, 8


CUSTOM_AR_ALIGN = 16
"""Bytes an all-reduce message must be a whole number of for vLLM's and SGLang's custom all-reduce to take it
(should_custom_ar declines one where ``inp_size % 16 != 0``: vllm/distributed/device_communicators/custom_all_reduce.py,
0.11.0 and 0.14.0; sglang/srt/distributed/device_communicators/custom_all_reduce.py, 0.5.6 to 0.5.9 and 0.5.23). A
declined message goes to NCCL: vLLM's symmetric-memory path takes only tensors of the group's dtype
(symm_mem.py should_use_symm_mem, 0.14.0), and the norm's sums are fp32; SGLang's order is custom, then
pymscclpp and torch symmetric memory, both off by default, then NCCL (parallel_state.py, 0.5.8). Among the
messages the step model charges, only MiniMax-M2's norm sums (NORM_ALLREDUCE_ARCHITECTURES: 4 or 8 B a token) can
miss it. The engines' CUDA graphs run batches of 1, 2, 4 and multiples of 4 above (vLLM's capture sizes
[1, 2, 4] + multiples of 8, config/compilation.py, 0.14.0; SGLang's [1, 2, 4, 8, 12] + multiples of 8,
server_args.py _generate_cuda_graph_batch_sizes, 0.5.8), a batch padded up to the next: in a graph, only a batch
of 1 or 2 can send such a message, and an eager step whose token count times the bytes is not a whole number of
16 B. The step model takes a step of up to GRAPH_MAX_TOKENS tokens as graphed, as it takes its kernel gaps."""


def norm_allreduce_padded(engine: Engine | None) -> bool:
    """Whether ``engine`` pads the norm's all-reduce to a whole number of CUSTOM_AR_ALIGN bytes, so that the custom
    all-reduce always takes it: SGLang from 0.5.9 (rms_sumsq_serial's B_padded, sgl-project/sglang#16483, read in
    0.5.9 and 0.5.23; 0.5.8 sends [tokens, 2] unpadded). vLLM 0.14.0's forward_qk does not
    (vllm/model_executor/layers/mamba/linear_attn.py)."""
    return engine is not None and engine.name == "sglang" and not engine.older_than(0, 5, 9)


def custom_ar_declines(engine: Engine | None) -> bool:
    """Whether ``engine``'s custom all-reduce declines messages that are not a whole number of CUSTOM_AR_ALIGN bytes
    (vLLM's and SGLang's; not a named engine's otherwise)."""
    return engine is not None and engine.name in ("vllm", "sglang")


def custom_ar_runs(engine: Engine | None, gpu: GPUSpec, tp: int) -> bool:
    """Whether ``engine``'s custom all-reduce runs for a TP group of ``tp`` GPUs on ``gpu``; where it does not, NCCL
    (RCCL on ROCm) carries every all-reduce. Not on AMD GPUs:
    - vLLM before 0.8.3: its ROCm build has no custom all-reduce op (``ops.meta_size()`` fails, "For AMD GPUs and
      CPUs", and the constructor asserts ``current_platform.is_cuda()``: distributed/device_communicators/
      custom_all_reduce.py, read in 0.6.3, 0.7.3, 0.8.0 and 0.8.2); 0.8.3 takes ``is_cuda_alike()``
      (vllm-project/vllm#14125, read in 0.8.3, 0.8.4 and 0.9.2). AMD's ROCm/vllm fork had its own since
      ROCm/vllm#27 (2024-05-30): a run of that fork's image names the custom all-reduce (Engine.custom_allreduce).
      A record that spans the change is charged as its earlier releases: vllm@0.8 (0.8.0 to 0.8.3) as 0.8.0 to 0.8.2.
    - SGLang before 0.4.4 at more than 2 GPUs: its custom all-reduce tests NVLink only under CUDA (``full_nvlink =
      False`` otherwise) and declines ``world_size > 2 and not full_nvlink`` (read in 0.4.2.post4, 0.4.3 and
      0.4.3.post2); 0.4.4 tests the HIP mesh (``if _is_cuda or _is_hip``). Its 2-GPU path there was not read. The
      record sglang@0.4.2.post2 (0.4.2.post2 to 0.4.4) is charged as its releases before 0.4.4.
    An engine named with its custom all-reduce on or off (Engine.custom_allreduce, --all-reduce-backend) takes that."""
    if engine is None or tp <= 1:
        return True
    if engine.custom_allreduce is not None:
        return engine.custom_allreduce
    if gpu.vendor != "AMD":
        return True
    if engine.name == "vllm":
        return not engine.older_than(0, 8, 3)
    if engine.name == "sglang":
        return tp <= 2 or not engine.older_than(0, 4, 4)
    return True


def nccl_link(gpu: GPUSpec, size: int, c: StepConstants = DEFAULTS) -> Link | None:
    """NCCL's own all-reduce among ``size`` GPUs over the scale-up links, where the GPU spec measures it
    (``nccl_allreduce``) and no calibration sets the link's terms; None otherwise (a declined message is then
    charged as the custom all-reduce's)."""
    measured = measured_allreduce(gpu, size, nccl=True)
    if measured is None or c.alpha_s is not None or c.link_bytes_per_s is not None:
        return None
    bw = float(gpu.interconnect_bytes_per_s or 0) / 2 * NVLINK_SHARE
    return Link("nvlink", bw, measured[1][0], measured)


TRITON_BLOCK_H = 16
"""Query heads one block of SGLang's grouped Triton decode kernel takes (BLOCK_H in
srt/layers/attention/triton_ops/decode_attention.py _decode_grouped_att_m_fwd, 0.4.4.post3 to 0.5.9)."""
TRITON_MIN_BLOCK_KV = 32
"""Tokens a part of a request's context is rounded up to a multiple of (_MIN_BLOCK_KV, kv_len_per_split in
srt/layers/attention/triton_ops/decode_attention.py, 0.4.4.post3 to 0.5.9)."""
TRITON_BLOCKS_PER_SM = {(64, 0, 64): 5, (128, 0, 128): 3, (256, 0, 256): 2, (256, 32, 256): 2, (512, 64, 512): 2}
"""Blocks of SGLang's grouped Triton decode kernel one multiprocessor runs at once on Hopper and compute capability
10, by the kernel's tile (BLOCK_DMODEL, BLOCK_DPE, BLOCK_DV: the key's width rounded up to a power of 2, MLA's
latent as 512 + 64 or 256 + 32, the value's): the kernel of SGLang 0.5.6 compiled with Triton 3.5.0 (the release
pins torch 2.9.1, which pins it) for sm_90a and sm_100a at 4 warps and 2 stages uses 96, 160 (158 on sm_100a),
226, 249 and 255 registers a thread and 7,168, 13,312, 25,600, 26,624 and 52,224 B of shared memory, so the
65,536 registers of a multiprocessor hold 5, 3, 2, 2 and 2 such blocks (a warp's registers in units of 256),
fewer than its 228 KB of shared memory or its 64 warps would (bench/triton_decode_occupancy.py)."""
V0_TRITON_MLA_BLOCKS_PER_CU = 4
"""Blocks of vLLM V0's grouped Triton MLA decode kernel one compute unit of a gfx942 GPU (MI300X, MI325X) runs at once:
_fwd_grouped_kernel_stage1 of attention/ops/triton_decode_attention.py (0.7.3) at its ROCm launch (16 tokens a tile
for a 576-wide key, 16 query heads a block, 4 warps of 64, 2 stages, waves_per_eu 4), compiled for gfx942 by Triton 3.9
(the release's ROCm Triton is not on the package index): 128 VGPRs (60 spilled to meet waves_per_eu), 16,384 B of LDS,
occupancy 4 waves a SIMD, so a compute unit's 4 SIMDs hold 4 such blocks, as do its 64 KB of LDS
(bench/triton_decode_occupancy_hip.py)."""
SGLANG_HIP_MLA_BLOCKS_PER_CU = 1
"""Blocks of SGLang 0.4.2.post2 to 0.4.4.post1's grouped Triton MLA decode kernel one compute unit of a gfx942 GPU runs
at once: _fwd_grouped_kernel_stage1 of triton_ops/decode_attention.py at its ROCm launch (16 tokens a tile for a
576-wide key, 16 query heads a block, 4 warps of 64, 1 stage, waves_per_eu 1), compiled for gfx942 by Triton 3.1.0 (the
release's torch 2.5.1 pins it; its ROCm build is not on the package index) and 3.9: the kernel descriptor asks for 492
and 257 VGPRs (.amdhsa_next_free_vgpr; 256 and 196 of them architectural), over the 256 of two waves a SIMD, so each
SIMD runs one wave and a compute unit one block (bench/triton_decode_occupancy_hip.py --sglang)."""
FIXED_TRITON_MLA_BLOCKS: dict[TritonMLAKernel, int] = {
    "vllm-v0": V0_TRITON_MLA_BLOCKS_PER_CU,
    "sglang-hip": SGLANG_HIP_MLA_BLOCKS_PER_CU,
    "sglang-cuda": TRITON_BLOCKS_PER_SM[(512, 64, 512)],
}
"""Blocks a multiprocessor or compute unit runs at once of each fixed-split Triton MLA launch
(engines.triton_mla_fixed_splits). SGLang 0.4.1 to 0.4.4's CUDA kernel (32 tokens a tile, 4 warps, 2 stages) compiled
for sm_90a by Triton 3.1.0 takes 255 registers a thread and 52,224 B of shared memory, 0.5.6's under 3.5.0 alike: 2
blocks (bench/triton_decode_occupancy.py)."""
TRITON_MAX_SPLITS = 8
"""The most parts SGLang's Triton decode kernel splits a request's context into: --triton-attention-num-kv-splits,
8 by default (server_args.py, 0.4.4.post3 to 0.5.9)."""

GRAPH_MAX_TOKENS = 512
"""The largest step vLLM captures in a CUDA graph by default (0.8.5 and later)."""
NVLINK_ALPHA_S = 5e-6
NVLINK_SHARE = 0.7
PCIE_BASE_S, PCIE_HOP_S = 6.6e-6, 1.0e-6
PCIE_SHARE = 0.63
P2P_ALPHA_S = 6e-6
NET_ALPHA_S = 47e-6
NET_SHARE = 0.94
NET_A2A_SHARE = 0.9
NET_P2P_ALPHA_S = 17e-6
NET_P2P_SHARE = 0.7
PCIE_FALLBACK_BYTES_PER_S = 32e9  # PCIe 4.0 x16, one direction, for a GPU whose spec states no host link

DEFAULT_SOURCES: dict[str, str] = {
    "eta_bw": "decode-shaped bf16 GEMMs (weights >= 128 MiB, 1-64 tokens, CUDA graph) reach a median 0.85-0.88 of "
    "peak bandwidth on H100, 0.80-0.82 on H200, 0.71-0.74 on A100, 0.75-0.85 on L40S (NVIDIA AIConfigurator's "
    "measured vLLM 0.24 gemm_perf tables, ai-dynamo/aiconfigurator 095f58a); 0.80 is their middle, and "
    "AIConfigurator's own default",
    "eta_c": "torch.matmul reaches 0.80 of dense bf16 peak on H100 and 0.87 on A100 at its best shape "
    "(stas00/ml-engineering, compute/accelerator, 'Maximum Achievable Matmul FLOPS'); the median over vLLM's shapes "
    "in AIConfigurator's tables is 0.70-0.73",
    "eta_c_fp8": "vLLM 0.24's fp8 matmuls (CUTLASS scaled_mm, per-tensor and block-scaled) reach a median 0.50 (H100), "
    "0.46-0.51 (H200) and 0.47 (B200) of the share of the fp8 peak that the same M x N x K reaches in bf16 of the bf16 "
    "peak, over the shapes compute-bound in both (AIConfigurator's measured gemm_perf tables, ai-dynamo/aiconfigurator "
    "095f58a; 0.39-0.41 of the fp8 peak against 0.76-0.77 of the bf16 peak on Hopper): eta_c x 0.50",
    "eta_c_int8": "vLLM's int8 CUTLASS scaled_mm (the baseline column of SGLang's sgl-kernel/benchmark/bench_int8_gemm.py, "
    "its inputs already quantized) reaches 0.67 and 0.69 of an SM90 GPU's 1,979 TOPS at M x N x K = 2,048 x 4,096 x 8,192 "
    "and 1,024 x 8,192 x 21,760 (sgl-project/sglang#3035), 0.74-0.78 of the A100's 624 (#2752, #2774); with each "
    "input's quantization (2 B read and 1 B written a value at 0.8 of the datasheet bandwidth, which the step model "
    "charges only as a small kernel's latency) 0.57-0.63 and 0.67-0.74, which is 0.63-0.72 (Hopper) and 0.82-0.85 (A100) "
    "of the share of the bf16 peak the same shapes reach in bf16 (0.87-0.90 and 0.82-0.88 in AIConfigurator's measured "
    "vLLM gemm_perf tables, ai-dynamo/aiconfigurator 095f58a): eta_c x 0.75, their mean. Not a measured vLLM table: "
    "AIConfigurator's vLLM and SGLang tables hold no W8A8 int8 GEMMs",
    "eta_c_fp4": "vLLM 0.24's NVFP4 matmuls (FlashInferCuteDslNvFp4LinearKernel) reach a median 0.54 (B200) and 0.51 "
    "(GB200) of the share of the fp4 peak that the same M x N x K reaches in bf16 of the bf16 peak, over 5,673 shapes of "
    "1,024 tokens or more and 16 M weights or more (0.369 and 0.343 of the fp4 peak; SGLang 0.5.14's CuteDSL NVFP4 "
    "GEMMs on B200: 0.57), AIConfigurator's measured gemm_perf tables (ai-dynamo/aiconfigurator 095f58a; "
    "bench/fit_gemm_fp8.py DIR fp4): eta_c x 0.50, as for fp8",
    "eta_c_gemm": "the GPU spec's measured share where it has one for matmuls at the step's precision (gemm.compute_share): "
    "MI300X 0.28 of the dense fp8 peak, AMD aiter's tuned fp8 block-scale GEMMs of 32 weight shapes at 16 to 16,384 tokens "
    "(ROCm/aiter@466ccb7 model_configs, bench/data/mi300x-aiter-fp8-gemm-466ccb7.csv), fitted with the latency and the "
    "bandwidth share, the weights' time and the math's added (gemm.combine sum; bench/fit_gemm_mi300x.py); MI355X 0.25, "
    "the same fit to aiter's gfx950 rows of 52 weight shapes (ROCm/aiter@e404860, "
    "bench/data/mi355x-aiter-fp8-gemm-e404860.csv; bench/fit_gemm_mi300x.py mi355x); else eta_c and eta_c_fp8",
    "fixed_s": "vLLM V1's schedule() 0.2 ms, _update_states 0.18 ms, _prepare_inputs 0.05 ms per step "
    "(vllm-project/vllm#42131): about 0.4-0.5 ms",
    "per_request_s": "vLLM 0.11's Scheduler.schedule() + update_from_output() in steady decode take 8.0-13.8 us a "
    "running request a step on a 2-vCPU VM (bench/vllm_scheduler.py), of which update_from_output is 2.5-3.7 us; "
    "vllm-project/vllm#46112 measured update_from_output at 1.1 us a request (0.142 ms at 128) on its machine, so "
    "about 4 us a request on a server core; synchronous with the GPU, async scheduling being off by default in "
    "0.11 to 0.13 (vllm/config/scheduler.py); from 0.14 it runs beside the GPU's work (Engine.async_scheduling)",
    "eta_gemm": "the GPU spec's measured share where it has one (gemm: vLLM's bf16 GEMMs of 1-16 tokens and 4-600 MB "
    "of weights in AIConfigurator's gemm_perf tables, ai-dynamo/aiconfigurator 095f58a, fitted as latency + bytes / "
    "(bandwidth x share): A100 80GB 0.74 (taken for the A100 40GB too, the same GA100, which no table measures), H100 SXM "
    "0.86, H200 0.83, B200 0.76, GB200 0.78; MI300X 0.57 from AMD aiter's "
    "fp8 block-scale GEMMs at 16 tokens, ROCm/aiter#3324); else eta_bw",
    "gemm_latency_s": "the GPU spec's measured latency where it has one (the same fit: A100 80GB and 40GB 5.3 us, H100 SXM "
    "3.4, H200 3.6, B200 2.9, GB200 3.0, MI300X 6.4); else 3 us: decode-shaped GEMMs have a fixed floor of about 3-5 us (a "
    "1024 x 8192 bf16 GEMM takes 10.3 us on H100 where its 17 MB need 5.1 us; AIConfigurator's measured vLLM 0.24 "
    "gemm_perf tables); AIConfigurator's own "
    "system files charge 3 us a kernel (mem_empirical_constant_latency)",
    "attn_latency_s": "vLLM's FlashAttention-3 decode with its KV-cache write takes 11.5 us at batch 1 and 128 tokens "
    "on H100 and H200 (12.8 on A100, 9.0 on L40S), where its bytes need well under 1 us (AIConfigurator's "
    "generation_attention_perf tables)",
    "attn_request_s": "the GPU spec's measured figure where it has one (attention: vLLM's decode attention in "
    "AIConfigurator's generation_attention_perf tables, ai-dynamo/aiconfigurator 095f58a, 1 to 2,048 requests of 2 to "
    "131,072 tokens, bf16 KV of 128-dimension heads, full attention, fitted as 11 us + max(KV bytes / (bandwidth x 0.8), "
    "FLOPs / (peak x 0.7)) + requests x KV heads x this, bench/fit_attn_request.py: H100 SXM 24.5 ns and H200 25.5 "
    "(FlashAttention 3, vLLM 0.24), A100 40.5 (FlashAttention 2, vLLM 0.14; taken for the A100 40GB), L40S 18 "
    "(FlashAttention 2, vLLM 0.24), B200 8.5 and GB200 8 (FlashInfer's TensorRT-LLM decode kernel, vLLM 0.24)); else "
    "the H100's 24.5 ns. Without it the step model put 256 requests or more of at most 1,024 tokens at 0.35-0.8 of the "
    "measured call (a median 2.43x under on H100, 2.82x on H200, 2.85x on A100, 1.71x on B200)",
    "mla_attn_latency_s": "the GPU spec's measured figure where it has one (mla), else the H200's 62 us: vLLM 0.24's "
    "whole MLA generation module at TP 8 (16 heads a GPU, bf16 matmuls and KV, batch 1; AIConfigurator's measured "
    "mla_generation_module_perf tables, ai-dynamo/aiconfigurator 095f58a, whose collector builds vLLM's own "
    "DeepseekV2MLAAttention) at 1,024 tokens of context, less its five projections (the query's and the latent's down "
    "projections run as one, fused_qkv_a_proj) at the GPU's matmul latency and four small kernels at 2.7 us: H200 "
    "(FlashAttention-MLA) 90.9 - (5 x 3.6 + 4 x 2.7 = 28.8) = 62 us, H100 SXM 99.8 - 27.8 = 72 us, B200 (FlashInfer MLA) "
    "43.8 - 25.3 = 18.5 us (59, 69 and 16 until 2026-12-06, less six projections; SGLang 0.5.9's TensorRT-LLM MLA call "
    "alone measures 10.4-14.6 us there, AIConfigurator's generation_mla_perf, and an SGLang 0.5.6 trace of DeepSeek-R1 "
    "on B200s at 64 in flight 18.9 us a call, SemiAnalysisAI/InferenceX#863); GB200's table gives 78-87 us for the same "
    "module on the same chip, twice B200's, and is not taken",
    "moe_latency_s": "vLLM's fused_experts call (both expert multiplies and the kernels around them inside it, CUDA "
    "graph; AIConfigurator's collector times the whole call): a fixed floor of 22-35 us "
    "a call over 1-16 tokens for Qwen3-235B's shape on H100 and H200, 24-51 for Mixtral's, with the touched experts "
    "read at 0.85-0.97 of peak (AIConfigurator's measured moe tables, straight-line fits)",
    "moe_flashinfer_s": "AIConfigurator's measured vLLM 0.24 fused-MoE table for B200 (ai-dynamo/aiconfigurator 095f58a), "
    "its 1,431 calls of FlashInfer's TensorRT-LLM fp8 block-scale kernel (trtllmfp8expertsmonolithic) under power-law "
    "1.01 routing without EP, 13 shapes: the median over 1 to 16 tokens of the measured time less the root-sum-square of "
    "the touched experts' bytes at B200's GEMM share (0.76 of 8 TB/s) and their FLOPs at the fp8 peak is 21.9 us, and "
    "the share of the peak fitted at that floor is 0.180 n / (n + 217) (MOE_ETA['fp8_flashinfer']; median |log(model / "
    "measured)| 0.143, where the Triton figures, 38 us and 0.311 n / (n + 459), give 0.221; bench/fit_moe_eta.py DIR "
    "b200-flashinfer)",
    "moe_flashinfer_bf16_s": "the same B200 table's 1,702 calls of FlashInfer's TensorRT-LLM 16-bit kernel "
    "(trtllmbf16experts) under power-law 1.01 routing without EP, 14 shapes, taken the same way with two bytes a weight "
    "at the 16-bit peak: 7.8 us beyond the root-sum-square term over 1 to 16 tokens, and a share of 0.399 n / (n + 149) "
    "(MOE_ETA['bf16_flashinfer']; median |log(model / measured)| 0.167, model / measured 1.00 at 1-16 tokens, 1.18 at "
    "17-511, 0.98 at 512-2,047, 1.07 beyond; the Triton figures, 28 us and 0.666 n / (n + 545), give 0.253 and 1.42 at "
    "1-16 tokens; bench/fit_moe_eta.py DIR b200-flashinfer-bf16)",
    "moe_flashinfer_fp4_s": "the same B200 table's 2,079 calls of FlashInfer's TensorRT-LLM-gen NVFP4 kernel "
    "(trtllmnvfp4expertsmonolithic) under power-law 1.01 routing without EP, taken the same way at 4.5 bits a weight "
    "and the fp4 peak (9 PFLOP/s): 13.7 us beyond the root-sum-square term over 1 to 16 tokens, and a share of "
    "0.429 n / (n + 1095) (MOE_ETA['fp4_flashinfer']; median |log(model / measured)| 0.165, model / measured 1.00 at "
    "1-16 tokens, 0.94 at 17-511, 0.82 at 512-2,047, 1.05 beyond). TensorRT-LLM 1.2.0rc5's B200 table times the same "
    "kernel family (its TRTLLM backend, min-latency mode: 1,072 calls) at 14.1 us, and vLLM 0.19's at 18.8 us "
    "(bench/fit_moe_eta.py DIR b200-fp4)",
    "moe_cutlass_fp4_s": "TensorRT-LLM 1.2.0rc5's B200 fused-MoE table (ai-dynamo/aiconfigurator 095f58a), its 1,215 "
    "calls of the CUTLASS NVFP4 MoE (moe_torch_flow_cutlass, in a CUDA graph) under power-law 1.01 routing without EP, "
    "taken as moe_flashinfer_fp4_s is: 86.4 us beyond the root-sum-square term over 1 to 16 tokens, and a share of "
    "0.489 n / (n + 3600) of the fp4 peak (MOE_ETA['fp4_cutlass']; median |log| 0.263). vLLM 0.24's 135 calls of "
    "FlashInfer's CUTLASS NVFP4 MoE give 77.1 us and 0.196 n / (n + 1156). No table times vLLM's or SGLang's own "
    "CUTLASS NVFP4 MoE; they take these figures. Under EP the same table's CUTLASS calls at EP 8 and 16,384 tokens "
    "reach 0.037 of the fp4 peak and the TensorRT-LLM-gen ones 0.065: NVFP4 experts under EP keep MOE_ETA_OTHER's "
    "16-bit rate, 0.0375 of it (bench/fit_moe_eta.py DIR b200-fp4)",
    "moe_quant_s": "the same tables' block-scaled fp8 calls (vLLM 0.24's Triton fused-MoE, H100 SXM and H200 without EP, "
    "power-law 1.01 routing; ai-dynamo/aiconfigurator 095f58a; bench/fit_moe_eta.py): over their 1 to 16-token rows "
    "the measured time less the touched experts' root-sum-square term has a median of 38.2 us where the 16-bit "
    "calls' is 26.1 us, and at a 28 us floor the fp8 calls had measured 1.04-1.16x what the model charged (median "
    "model / measured 0.86 at one token, 0.91-0.96 at 2 to 16); SGLang 0.5.9's own tables give 42.3 and 34.3 us. "
    "10 us a call over moe_latency_s (38 - 28). vLLM's Triton MXFP4 calls on Hopper (gpt-oss's shapes, 648 rows of the "
    "same tables) measure a median 37.8 us the same way, and take it too (model / measured at one token 0.77 -> 1.02)",
    "kernel_gap_s": "one decode step's small kernels as a trace times them: the eleven kernels besides the router's "
    "matmul between an MoE layer's all-reduce and its fused-MoE call (a fused add-RMSNorm, routing, the fp8 "
    "activations' quantization, token alignment) take 1.0 to 7.3 us, median 2.2, with 6.4 us of spacing over the "
    "span's twelve kernels (0.53 each): DeepSeek-V3.1 on H200 under vLLM at 4 in flight (vllm-project/vllm#28084); "
    "2.7 us a small kernel. An empty kernel takes 1.3 us in a CUDA graph on H200 (te42kyfo/gpu-benches, "
    "gpu-small-kernels): a floor, not what a norm or a routing kernel takes",
    "eager_launch_s": "the same kernels launched eagerly: 2.5 us each on H200, 2.7 on A100 (te42kyfo/gpu-benches), "
    "1.2 us more than in a graph; vLLM captures decode graphs up to 512 tokens by default from 0.8.5 "
    "(vllm/config: min(2 x max_num_seqs, 512)), and larger steps run without them",
    "eager_host_s": "SGLang's scheduler timed one DeepSeek-V3 forward carrying 1 new prompt token at 82.6 ms run "
    "eagerly and 23.1 ms replayed from a CUDA graph (sgl-project/sglang#12160, its 'forward cost' log lines): the eager "
    "forward is the host issuing 61 layers' kernels, 1,980 as layer_kernels counts them at fp8 (1,498 and the 482 "
    "kernels quantizing the fp8 matmuls' activations), 42 us each (82.6 ms / 1,980); one measurement, of MLA and MoE "
    "layers, taken as the cost of every model's kernels",
    "allreduce": "NVLink TP all-reduces where the GPU spec has measurements (A100 SXM, H100 SXM, H200, B200 at TP 2, "
    "4, 8): vLLM's tensor_model_parallel_all_reduce in a CUDA graph, bf16, 256 B to 1 GiB (AIConfigurator's measured "
    "custom_allreduce_perf tables, vLLM 0.14 on A100, 0.24 on the others; ai-dynamo/aiconfigurator 095f58a); MI300X at "
    "TP 2 and 4: vLLM's custom all-reduce, fp16, 16 KB to 16 MB (kernel benchmarks of vllm-project/vllm#19744 and "
    "ROCm/aiter#801); MI355X at TP 8: the same in bf16, 24 KiB to 1.5 MiB (vllm-project/vllm#39080); a TensorRT-LLM "
    "deployment takes TensorRT-LLM 1.2.0rc5's own all-reduce where the spec measures it (allreduce_trtllm: H100 SXM, H200, "
    "B200 at TP 2, 4, 8, AIConfigurator's trtllm custom_allreduce_perf tables, 095f58a); linear between measured sizes, each size at the least measured at it or any larger size; a "
    "message the custom all-reduce declines (not a whole number of 16 B: MiniMax-M2's q/k-norm sums at one or two "
    "tokens, CUSTOM_AR_ALIGN) at NCCL's own latency where the GPU spec measures it (A100 SXM, H100 SXM, H200, B200 at "
    "TP 2, 4, 8: nccl-tests all_reduce_perf, NCCL 2.27.3 on A100 and 2.29.2 on the others, 512 B to 128 KiB, "
    "AIConfigurator's nccl_perf tables; 15.6 us on H100 and 25.1 us on B200 at TP 8 and 512 B)",
    "alpha_s": "NVLink without measurements: vLLM 0.24's custom all-reduce in a CUDA graph, 4.2-5.1 us up to 8 KB on H100 "
    "(AIConfigurator's custom_allreduce_perf), and at a group size the GPU spec does not measure, at least the smallest "
    "message's time of the largest group it measures below (each NVIDIA table rises with the group at its smallest message: "
    "H100 SXM 4.29/4.59/4.71 us, H200 4.38/4.43/4.71, B200 6.59/6.86/7.42, A100 4.87/5.15/5.66 at TP 2/4/8); PCIe: NCCL's ring latency model, 6.6 us + 1.0 us per hop over 2(N-1) "
    "hops (NVIDIA/nccl src/graph/tuning.cc), 8.6/12.6/20.6 us at 2/4/8 GPUs against 6.0/12.0/22.4 measured on L40S",
    "link_bytes_per_s": "NVLink: 0.7 of one direction of the datasheet figure (custom all-reduce bus bandwidth about "
    "320 GB/s on 8 H100s, of 450); PCIe: 0.63 of one direction of the host link (20.1 GB/s measured on 2 L40S, PCIe 4.0)",
    "pp_alpha_s": "NCCL send/recv inside an H100 DGX in a CUDA graph: 5-8 us up to 64 KB "
    "(microsoft/vidur data/profiling/network/h100_dgx/send_recv.csv)",
    "moe_eta_c": "on a GPU whose spec measures it (moe: the B200's 16-bit a 0.213, b 314, from SGLang 0.5.9's Triton rows "
    "in AIConfigurator's B200 table, bench/fit_moe_eta.py DIR b200-triton), its own; else "
    "by the expert's intermediate width n on one GPU, a x n / (n + b): 16-bit a 0.666, b 545; fp8 a 0.311, "
    "b 459; fitted to every Triton fused-MoE measurement in AIConfigurator's vLLM 0.24 moe_perf tables for H100 SXM "
    "and H200 without EP (5,184 bf16 and 3,996 fp8-block rows, 1 to 16,384 tokens, power-law 1.01 routing; "
    "ai-dynamo/aiconfigurator 095f58a; bench/fit_moe_eta.py) as 28 us (38 us at fp8: moe_quant_s) + the root-sum-square "
    "of the touched experts' bytes at the GPU's bf16 GEMM share of its bandwidth (as a step reads a block-scaled fp8 "
    "checkpoint's weights too: fp8_block_scaled) and their FLOPs at the peak x eta (matmul_s): median "
    "|log(model / measured)| 0.231 -> 0.147 (16-bit) and 0.143 -> 0.094 (fp8) against one 0.15, and at 2,048 tokens or "
    "more the median model / measured 1.70 -> 1.08 (16-bit); at fp8 with a 28 us floor (until 2026-12-05) the fit was "
    "a 0.307, b 473, median 0.112; with the larger of the two in place of the root-sum-square "
    "(until 2026-12-04) the fit was a 0.598, b 509 and a 0.280, b 448, median 0.181 and 0.150. MXFP4 experts (another "
    "kernel; vLLM's Triton MXFP4 rows on Hopper fit the width form worse than one 0.15 does, median |log| 0.171 against "
    "0.143 at a 38 us floor) and expert-parallel ranks keep 0.15: the same tables "
    "at 16,384 tokens with EP 8 give 5.6-15.2% of the fp8 peak for DeepSeek-V3's fp8-block experts and 11.9-23.5% "
    "of the bf16 peak for Qwen3-30B-A3B and Qwen3-235B-A22B, and with EP the measured share falls as EP grows at "
    "a given width (the fit's model at EP 8 is 0.4 of the measured time at 2,048 tokens or more)",
    "matmul_s": "a step's matmuls take the root-sum-square of their weights' time over the bandwidth and their FLOPs' "
    "time at the peak, not the larger of the two: over vLLM's bf16 GEMMs of 4 to 600 MB of weights and up to 4,096 "
    "tokens (AIConfigurator's gemm_perf tables, 095f58a: H100, H200 and B200 of 0.24, A100 of 0.14; "
    "bench/fit_gemm_knee.py), with the spec's latency and share and eta_c 0.7, the median |log(model / measured)| goes "
    "from 0.108, 0.111, 0.111 and 0.092 to 0.103, 0.111, 0.083 and 0.081, and at 64 to 512 tokens, where the two terms "
    "meet, the median measured / model from 1.12, 1.11, 1.18 and 1.19 to 0.99, 0.96, 1.03 and 1.06",
    "moe_imbalance": "beyond the skew moe_eta_c's tables carry, none by default; the busiest expert-parallel rank's "
    "tokens over the mean reach 1.18 for DeepSeek-V3 prefill on 96 H100s with the default expert layout "
    "(LMSYS large-scale EP blog, lmsys.org/blog/2025-05-05-large-scale-ep: 50,302 against 59,337 tokens/s a node "
    "with perfect balance), 2.56 at EP 32 without balancing and 1.12 with EPLB (TensorRT-LLM's EP load balancer "
    "README); vLLM and SGLang ship EPLB off",
    "net_alpha_s": "all-reduce across 2 x 8 Hopper GPUs over 400 Gb/s InfiniBand, 46.3-47.6 us for 4-512 B "
    "(NVIDIA/nccl#1244, nccl-tests, no CUDA graph); bandwidth 0.94 of the node's NICs (46-48 GB/s a 400 Gb/s NIC, "
    "NVIDIA/nccl-tests#290); PP send/recv between nodes 17 us and 0.7 of one NIC (microsoft/vidur "
    "data/profiling/network/h100_dgx/send_recv.csv, 1 GPU a node)",
    "triton_cta_bytes_per_s": "SGLang's Triton backend decoding one Qwen3-8B request on one H100 (sgl-project/sglang#21775, "
    "March 2026, the table's 'Old Triton' column, that PR's base): the step's time rises 0.437 us a token of context from "
    "1,000 to 32,000 tokens (7.07 to 20.68 ms a token), FlashInfer's 0.058 us; at 8 splits each of the kernel's 64 blocks "
    "(1 request x 8 KV heads x 8 splits) reads an eighth of a token's keys and values of one KV head, 512 B x 36 layers / 8, "
    "so 2,304 B / 0.437 us = 5.27 GB/s a block (bench/fit_triton_decode.py); it stands in for vLLM V0's Triton MLA kernel on "
    "the MI300X and MI325X, whose blocks no timing found measures (docs/engines.md)",
    "request_overhead_s": "vLLM's OpenAI server over its offline engine: +4 ms TTFT, HTTP and ZMQ "
    "(tenstorrent/tt-inference-server#190)",
    "tokenize_s_per_token": "vLLM 0.11's tokenizer (get_tokenizer: a fast, Rust tokenizer, here a byte-level BPE of 32,000) "
    "takes 1.0-1.9 us a token over prompts of 250 to 16,500 tokens on a 2-vCPU VM, a ChatML template and the request's "
    "validation 50-90 us more (bench/vllm_frontend.py); tenstorrent/tt-inference-server#2173's 10-21 us a token are "
    "1.3-2.8 ms a call over 131 tokens, a per-call cost the request overhead already carries",
}


@record(frozen=True)
class Kernels:
    """The kernels one decode step runs through every layer, by the latency each is charged."""

    gemm: int
    attention: int
    mla_attention: int
    moe: int
    """Fused routed-expert calls (one an MoE layer: both expert multiplies)."""
    small: int
    moe_inner: int = 0
    """Kernels inside the fused routed-expert calls besides the two multiplies: token alignment, the
    combine and, where the experts run at fp8, the quantization of each multiply's input (vLLM 0.11's
    fused_experts_impl: moe_align_block_size, moe_kernel_quantize_input twice, moe_sum). The fused-MoE
    measurements moe_latency_s comes from time the whole call (AIConfigurator's collect_moe.py times
    fused_experts), so these carry no latency of their own in a CUDA graph; run eagerly, the host
    issues them like any other."""
    moe_flashinfer: int = 0
    """Of the fused routed-expert calls, those FlashInfer's TensorRT-LLM fp8 kernel runs (StepModel.moe_flashinfer),
    each charged moe_flashinfer_s in place of moe_latency_s (and of moe_quant_s: they are not in moe_quant)."""
    moe_flashinfer_bf16: int = 0
    """Of the fused routed-expert calls, those of 16-bit experts FlashInfer's TensorRT-LLM kernel runs
    (StepModel.moe_flashinfer_bf16), each charged moe_flashinfer_bf16_s in place of moe_latency_s."""
    moe_flashinfer_fp4: int = 0
    """Of the fused routed-expert calls, those of NVFP4 experts the TensorRT-LLM-gen fp4 kernel runs (StepModel.moe_runner
    'flashinfer_trtllm_fp4'), each charged moe_flashinfer_fp4_s in place of moe_latency_s."""
    moe_cutlass_fp4: int = 0
    """Of the fused routed-expert calls, those of NVFP4 experts a CUTLASS grouped-GEMM MoE runs (StepModel.moe_runner
    'cutlass_fp4'), each charged moe_cutlass_fp4_s in place of moe_latency_s."""
    router_compiled: int = 0
    """Of the MoE layers, those whose router SGLang runs by its compiled fallback (sglang_router_compiled), each charged
    ROUTER_COMPILED_S in place of the router's small kernels, which ``small`` then leaves out."""
    router_kernels: int = 0
    """The small kernels those routers replace (router_compiled x routing_kernels): the host still issues as many, so
    :attr:`total` counts them."""
    moe_quant: int = 0
    """Of the fused routed-expert calls, those of quantized experts (fp8 W8A8; MXFP4 where vLLM or SGLang runs them
    with OpenAI's Triton kernel on Hopper: StepModel.mxfp4_triton), each charged moe_quant_s beyond moe_latency_s: the
    measured fp8-block and MXFP4 calls' floor is 10 us above the 16-bit ones' (DEFAULT_SOURCES['moe_quant_s']).
    Not kernels of their own: :attr:`total` leaves them out."""

    @property
    def total(self) -> int:
        """Every kernel of a step, as the host issues them."""
        return self.gemm + self.attention + self.mla_attention + self.moe + self.small + self.moe_inner + self.router_kernels


GROUPED_TOPK_ARCHITECTURES = frozenset(
    {"deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa", "minimax_m2"}
)
"""Model types whose MoE layers vLLM routes by grouped top-k (use_grouped_topk=True): vLLM 0.11's
deepseek_v2.py (DeepSeek-V2, V3, V3.2 and Kimi-K2, whose checkpoints name DeepseekV3ForCausalLM) and
glm4_moe.py; 0.16's glm4_moe_lite.py (its MoE a Glm4MoE) and registry (GlmMoeDsaForCausalLM in
deepseek_v2.py); 0.13's minimax_m2.py (one group, with the score-correction bias)."""


QK_NORM_ARCHITECTURES = frozenset(
    {"qwen3", "qwen3_moe", "qwen3_next", "qwen3_vl_text", "qwen3_vl_moe_text", "qwen3_5_text", "qwen3_5_moe_text"}
)
"""Model types whose attention layers norm each query and key head before rotary (q_norm and k_norm, two
RMSNorm calls a layer: vLLM 0.11's qwen3.py and qwen3_moe.py Qwen3(Moe)Attention.forward, qwen3_next.py
Qwen3NextAttention.forward; Qwen3-VL's language models are those classes, qwen3_vl.py Qwen3LLMModel(Qwen3Model) and
qwen3_vl_moe.py Qwen3MoeLLMModel(Qwen3MoeModel), read in 0.22.1; Qwen3.5's attention layers are Qwen3NextAttention,
qwen3_5.py Qwen3_5DecoderLayer, 0.22.1); glm4_moe does where its config sets use_qk_norm
(glm4_moe.py Glm4MoeAttention)."""
GATED_ATTENTION_ARCHITECTURES = frozenset({"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"})
"""Model types whose attention output is gated by a sigmoid of a second half of the query projection (vLLM 0.11's
qwen3_next.py Qwen3NextAttention.forward, attn_output_gate): the query's and the gate's copies out of the
projection, the sigmoid, the multiply and o_proj's copy into the layer's output, 5 kernels a layer; Qwen3.5's
attention is that class, 0.22.1 qwen3_5.py Qwen3_5DecoderLayer)."""


def attention_norm_kernels(model: ModelSpec) -> int:
    """Small kernels an attention layer of ``model`` launches beyond Llama's (the rotary and the KV-cache write
    that _Attention.decode_kernels counts): 2 for the query and key norms (QK_NORM_ARCHITECTURES; glm4_moe by
    its config's use_qk_norm), 4 for MiniMax-M2's norms over all heads, each a sum of squares before its
    all-reduce and the scaling after it (NORM_ALLREDUCE_ARCHITECTURES: vLLM 0.13's minimax_m2.py
    MiniMaxM2Attention.forward and layers/mamba/linear_attn.py MiniMaxText01RMSNormTP._forward, compiled; the
    all-reduces are norm_allreduces'), and 5 for Qwen3-Next's output gate (GATED_ATTENTION_ARCHITECTURES)."""
    norms = model.architecture in QK_NORM_ARCHITECTURES or (
        model.architecture == "glm4_moe" and bool(model.source.config.get("use_qk_norm"))
    )
    split = model.architecture in NORM_ALLREDUCE_ARCHITECTURES and bool(model.source.config.get("use_qk_norm", True))
    return (2 if norms else 0) + (4 if split else 0) + (5 if model.architecture in GATED_ATTENTION_ARCHITECTURES else 0)


def routing_kernels(model: ModelSpec) -> int:
    """Small kernels an MoE layer's top-k runs outside the fused routed-expert call, as vLLM 0.11
    runs them (vllm/model_executor/layers/fused_moe/fused_moe.py). Grouped top-k with a
    score-correction bias (:data:`GROUPED_TOPK_ARCHITECTURES`) takes fused_grouped_topk: the scores'
    sigmoid and bias in one compiled kernel, ops.grouped_topk's two kernels and the indices' cast, 4,
    as a trace of DeepSeek-V3.1's decode on H200 shows them (vllm-project/vllm#28084:
    triton_poi_fused__to_copy_add_sigmoid, topk_with_k2_kernel, group_idx_and_topk_idx_kernel,
    triton_poi_fused__to_copy; 1.9, 1.8, 7.3 and 1.0 us). DeepSeek-V2's gates, without the bias, take
    grouped_topk's compiled torch code instead, not traced, and are charged the same 4. Other routers
    are charged as fused_topk runs, 2: the logits' cast to fp32 and topk_softmax (Llama 4's custom
    routing and gpt-oss's MXFP4 experts route by code of their own, charged the same). ERNIE-4.5's softmax gate
    with a score-correction bias is 2 as well: its input's cast to fp32 (Ernie4_5_MoeMoE.forward, whose gate is an
    fp32 matmul) and topk_softmax taking the bias (FusedTopKBiasRouter, fused_topk_bias_router.py; read in 0.22.1)."""
    return 4 if model.architecture in GROUPED_TOPK_ARCHITECTURES else 2


ROUTER_COMPILED_S = 36e-6
"""One MoE layer's router run by SGLang's torch.compile'd biased grouped top-k (topk.py biased_grouped_topk_impl: the
scores' sigmoid and bias, three torch.topk calls, the group and score masks, the gather, the renormalisation and the
fused shared expert's slot) in a decode step, seconds: 36 us, where the one fused kernel that replaced it for
DeepSeek-V3 takes 8 us (sgl-project/sglang#5371, torch profiles of DeepSeek-V3 at TP 8 on H200 serving two prompts:
"Only one kernel now. 36us->8us")."""


def sglang_router_compiled(model: ModelSpec, engine: Engine | None, gpu: GPUSpec) -> bool:
    """Whether SGLang routes ``model``'s MoE layers by its compiled fallback (ROUTER_COMPILED_S): GLM-4.5, 4.6 and 4.7
    (glm4_moe: grouped top-k with the score-correction bias over one group of 160, or GLM-4.5-Air's 128, experts) on
    NVIDIA GPUs under 0.5.3 to 0.5.9. biased_grouped_topk_gpu takes the fused moe_fused_gate only for at most 32
    experts a group and a power-of-two count, and 0.5.8's and 0.5.9's FlashInfer fused_topk_deepseek only where
    topk_group x num_expert_group >= top-k (1 x 1 against 8 fails), and its Kimi-K2 kernel only for 384 experts, so
    GLM's routers fall to biased_grouped_topk_impl (sglang/srt/layers/moe/topk.py and models/glm4_moe.py, read in
    0.5.3, 0.5.6, 0.5.7, 0.5.8 and 0.5.9; the records of 0.5.4 and 0.5.5 lie between). AMD GPUs take aiter's kernel.
    Later releases were not read, and are charged the routing kernels as vLLM runs them (routing_kernels)."""
    return (
        engine is not None
        and engine.name == "sglang"
        and model.architecture == "glm4_moe"
        and model.moe is not None
        and gpu.vendor == "NVIDIA"
        and not engine.older_than(0, 5, 3)
        and engine.older_than(0, 5, 10)
    )


def sglang_shared_fused(model: ModelSpec, engine: Engine | None, gpu: GPUSpec, ep: int, runner: str) -> bool:
    """Whether SGLang runs DeepSeek-V3's shared expert inside the routed experts' fused call (num_fused_shared_experts 1,
    the call's top-k one more), so that it launches none of the shared expert's own matmuls, activation or their inputs'
    quantization. models/deepseek_v2.py determine_num_fused_shared_experts, read in 0.5.3, 0.5.6, 0.5.7, 0.5.9 and
    0.5.12: a DeepseekV3ForCausalLM checkpoint of 256 routed experts and one shared (DeepSeek-V3, R1, V3.1; not
    Kimi-K2's 384, not V3.2's class), on an NVIDIA GPU of compute capability 8.0 or more without expert parallelism,
    or from 0.5.6 an AMD one of gfx942 or later with EP too; not where server_args.py turns it off, FlashInfer's
    TensorRT-LLM MoE runner among them (``runner``: the deployment's, engines.moe_runner; the Triton or aiter fused
    MoE, 'default', keeps it). Releases after 0.5.12 were not read: not counted."""
    if engine is None or engine.name != "sglang" or engine.older_than(0, 5, 3) or not engine.older_than(0, 5, 13):
        return False
    moe = model.moe
    if model.architecture != "deepseek_v3" or moe is None or moe.num_experts != 256 or runner != "default":
        return False
    if model.source.config.get("n_shared_experts") != 1:
        return False
    if gpu.vendor == "NVIDIA":
        return ep == 1 and gpu.name not in BELOW_SM80
    return gpu.name in AMD_INSTINCT and not engine.older_than(0, 5, 6)


SHARED_IN_FUSED_MOE_ARCHITECTURES = frozenset(
    {"deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe", "glm4_moe_lite", "glm_moe_dsa", "llama4_text"}
)
"""Model types whose shared experts vLLM runs inside the fused-MoE layer (SharedFusedMoE: vLLM 0.11's
deepseek_v2.py, glm4_moe.py and llama4.py; GLM-4.7-Flash's and GLM-5's classes build on the first
two in 0.16)."""


def _has_shared_experts(model: ModelSpec) -> bool:
    return model.params is not None and bool(model.params.shared_experts)


def shared_activation_kernels(model: ModelSpec) -> int:
    """Kernels of an MoE layer's shared-expert activation: none without shared experts; 2 where vLLM
    runs the shared experts inside the fused-MoE custom op (:data:`SHARED_IN_FUSED_MOE_ARCHITECTURES`),
    which torch.compile does not enter, so SiluAndMul takes its native torch code, a silu and a
    multiply (custom ops are off under Inductor: the two elementwise kernels between the shared
    experts' multiplies in vllm-project/vllm#28084's single-stream trace of DeepSeek-V3.1, 2.18 and
    2.02 us); else 1, compiled as a dense MLP's is."""
    if not _has_shared_experts(model):
        return 0
    return 2 if model.architecture in SHARED_IN_FUSED_MOE_ARCHITECTURES else 1


def layer_kernels(
    model: ModelSpec,
    weight_dtype: str | None = None,
    compute_dtype: str = "bf16",
    prompt: bool = False,
    mla_materialized: bool = False,
    mla_qkv_a_fused: bool = False,
    mla_per_head: bool = False,
) -> Kernels:
    """Each kind's mixer as it says (LayerKind.mixer_kernels: its decode kernels, or with ``prompt`` those of
    a prompt step run eagerly, where its prompt path differs; the query and key norms and output gate of the
    models that have them on each attention layer, attention_norm_kernels; an MLA kind's attention charged as
    MLA, and LayerKind.indexer_kernels on the layers that hold a sparse-attention indexer), two norms a
    layer, and the MLP: gate-up, down and the activation for a dense layer; the router, one fused call for the routed experts, the shared experts' two multiplies where the
    model has them with their activation (:func:`shared_activation_kernels`) and the top-k's kernels
    (:func:`routing_kernels`) for an MoE layer, with the alignment and the combine inside the fused call
    (Kernels.moe_inner; vllm/model_executor/layers/fused_moe). Matmuls that run at fp8
    (``compute_dtype``) add their activations' quantization kernels (:func:`quant_kernels`): to the
    small ones, but for the routed experts' two, which run inside the fused call. ``mla_materialized``: an engine that runs
    MLA's decode through materialized weights (Engine.mla_decode), whose MLA layers run five matmuls, not six: after
    q_a_proj and kv_a_proj_with_mqa, a decode runs W_Q_UK, W_QR and W_UV_O in place of q_b_proj, the absorbed k and v
    multiplies and o_proj, and a prompt q_b_proj, kv_b_proj and o_proj (attention/backends/mla/utils.py
    MLACommonImpl._q_proj_and_k_up_proj, _v_up_proj_and_o_proj and forward, VLLM_MLA_PERFORM_MATRIX_ABSORPTION;
    read in 0.7.3). An MLA layer without a query latent (q_lora_rank 0: DeepSeek-V2-Lite) runs one query projection
    where the others run a down and an up, one matmul fewer, and ``mla_qkv_a_fused`` (Engine.mla_qkv_a_fused) runs the
    query's and the latent's down projections as one (:func:`mla_fewer_matmuls`)."""
    g = a = am = k = 0
    for name, n in model.layer_counts().items():
        kind = model.layer_kinds[name]
        kg, ka, kk = kind.mixer_kernels(prompt)
        g, k = g + n * kg, k + n * kk
        if kind.mla_attention and mla_per_head:
            # An engine that caches MLA as per-head K and V (Engine.mla_per_head) runs it as any attention: after the
            # query's projections and kv_a_proj_with_mqa, kv_b_proj decompresses the new tokens' keys and values and
            # o_proj follows, five matmuls, and the attention call is a paged-attention one (models/deepseek_v2.py
            # DeepseekV2Attention.forward, read in 0.6.3 and 0.7.0).
            a += n * ka
            g -= n
        elif kind.mla_attention:
            am += n * ka
            g -= n if mla_materialized else 0
            g -= n * mla_fewer_matmuls(kind, mla_qkv_a_fused)
        else:
            a += n * ka
        ig, ia, ik = kind.indexer_kernels
        g, a, k = g + n * ig, a + n * ia, k + n * ik
    layers = model.num_layers
    k += attention_norm_kernels(model) * sum(
        n for name, n in model.layer_counts().items() if model.layer_kinds[name].KIND in ("full", "sliding", "chunked")
    )
    moe = model.moe.num_moe_layers if model.moe else 0
    shared = 2 if _has_shared_experts(model) else 0
    g += (layers - moe) * 2 + moe * (1 + shared)
    k += layers * 2 + (layers - moe) + moe * (routing_kernels(model) + shared_activation_kernels(model))
    inner, quantized_calls = moe * 2, 0
    fmt = quant_format(compute_dtype)
    if fmt is not None:
        q, q_experts = quant_kernels(model, weight_dtype, mla_qkv_a_fused, fmt), expert_quant_kernels(model, weight_dtype, fmt)
        k, inner, quantized_calls = k + q - q_experts, inner + q_experts, q_experts // 2
    return Kernels(g, a, am, moe, k, inner, moe_quant=quantized_calls)


def _quant_roles(model: ModelSpec, weight_dtype: str | None, fmt: QuantFormat = "fp8") -> tuple[str, ...]:
    """The weight roles a checkpoint stores in ``fmt`` and multiplies with its activations quantized to it (its
    quantization config, or the layout --weight-dtype stands for): fp8 or int8 (W8A8), fp4 (NVFP4, W4A4). None (empty) for
    a checkpoint that quantizes its weights alone (Quantization.weight_only: W8A16, 16-bit matmuls)."""
    from kvcalc.engine.weights import LINEAR_ROLES, WeightFormats

    f = WeightFormats.of(model, weight_dtype)
    q = f.quantization
    if q is not None:
        ours = q.method.startswith("fp8") if fmt == "fp8" else q.method == QUANT_METHOD_OF[fmt]
        return tuple(q.roles) if ours and not q.weight_only else ()
    names = FP8_CHECKPOINTS if fmt == "fp8" else ("int8",) if fmt == "int8" else ()
    roles: tuple[str, ...] = LINEAR_ROLES if f.dense in names else ()
    if f.experts in names and "experts" not in roles:
        roles = (*roles, "experts")
    return roles


def fp4_matmul_share(model: ModelSpec, weight_dtype: str | None) -> float:
    """Of the matmuls outside the routed experts that a decode step runs (layer_kernels at 16 bits), the share that are
    NVFP4 linear layers (one 4-bit quantization kernel each: quant_kernels less those inside the experts' calls)."""
    n = layer_kernels(model, weight_dtype).gemm
    q = quant_kernels(model, weight_dtype, fmt="fp4") - expert_quant_kernels(model, weight_dtype, "fp4")
    return min(q / n, 1.0) if n else 1.0


def fp4_flop_share(model: ModelSpec, weight_dtype: str | None) -> float:
    """Of the FLOPs a token spends in the matmuls outside the routed experts, the share in NVFP4 linear layers: their
    roles' parameters (engine.weights.roles_of) over the dense matmul parameters; the rest (DeepSeek's MLA in its NVFP4
    layout, the router, the LM head) run at 16 bits."""
    from kvcalc.engine.weights import active_matmul_params, roles_of

    moe = model.moe
    dense = active_matmul_params(model) - (moe.num_moe_layers * moe.num_experts_per_tok * moe.params_per_expert if moe else 0)
    roles = roles_of(model)
    fp4 = sum(getattr(roles, r, 0) or 0 for r in _quant_roles(model, weight_dtype, "fp4") if r != "experts")
    return min(fp4 / dense, 1.0) if dense > 0 else 1.0


def experts_runner(
    engine: Engine | None,
    model: ModelSpec,
    gpu: GPUSpec,
    weight_dtype: str | None = None,
    compute_dtype: str | None = None,
    ep: int = 1,
) -> MoeRunner:
    """The fused-MoE kernel ``engine`` runs ``model``'s routed experts with on ``gpu`` at ``ep`` (engines.moe_runner),
    from how the checkpoint (or --weight-dtype) stores them and the dtype the matmuls run in (matmul_dtype where
    ``compute_dtype`` is None)."""
    cd = compute_dtype or matmul_dtype(model, gpu, weight_dtype)
    fp8 = cd == "fp8" and "experts" in _quant_roles(model, weight_dtype)
    fp4 = cd == "fp4" and "experts" in _quant_roles(model, weight_dtype, "fp4")
    return moe_runner(engine, model, gpu, ep, fp8, bf16_experts(model, weight_dtype), fp4)


def bf16_experts(model: ModelSpec, weight_dtype: str | None) -> bool:
    """Whether a checkpoint stores (or --weight-dtype lays out) its routed experts in bf16, unquantized."""
    from kvcalc.engine.weights import WeightFormats

    f = WeightFormats.of(model, weight_dtype)
    quantized = f.quantization is not None and "experts" in f.quantization.roles
    return model.moe is not None and f.experts in ("bf16", "bfloat16") and not quantized


def mla_fewer_matmuls(kind: LayerKind, fused: bool) -> int:
    """Matmuls (and fp8 linear layers) an MLA layer runs fewer than its kind counts (MLA.mixer_kernels: the query's
    down and up projections, the latent's down projection, the absorbed multiplies, the output projection): one where
    the engine runs the query's and the latent's down projections as one matmul (``fused``: vLLM's fused_qkv_a_proj,
    a MergedReplicatedLinear, from 0.10.0, absent in 0.9.2; SGLang's fused_qkv_a_proj_with_mqa from 0.4.6, absent in
    0.4.5.post3: Engine.mla_qkv_a_fused) and the layer has a query latent to fuse; 0 elsewhere."""
    return 1 if fused and isinstance(kind, MLA) and kind.q_lora_rank else 0


def quant_kernels(
    model: ModelSpec, weight_dtype: str | None = None, mla_qkv_a_fused: bool = False, fmt: QuantFormat = "fp8"
) -> int:
    """Kernels a step spends quantizing activations for fp8 (W8A8) matmuls (``fmt`` int8: W8A8 int8 ones, one
    scaled_int8_quant a linear layer, vLLM 0.11.0 quantization/kernels/scaled_mm/cutlass.py
    CutlassScaledMMLinearKernel.apply_weights; fp4: NVFP4 W4A4 ones, one scaled_fp4_quant a linear layer as vLLM's
    NVFP4 linear kernels run it): one before each fp8 linear layer (vLLM 0.11's Fp8LinearMethod:
    per_token_group_quant_fp8 for block scales,
    vllm/model_executor/layers/quantization/utils/fp8_utils.py apply_w8a8_block_fp8_linear;
    scaled_fp8_quant otherwise, w8a8_utils.py Fp8LinearOp; its RMSNorm-and-quant fusion pass is off by
    default, config/compilation.py enable_fusion) and two in each fused routed-expert call, before
    each of its multiplies (fused_moe.py, moe_kernel_quantize_input; :func:`expert_quant_kernels`)."""
    roles = _quant_roles(model, weight_dtype, fmt)
    n = expert_quant_kernels(model, weight_dtype, fmt)
    if "attn" in roles:
        n += sum(c * model.layer_kinds[name].mixer_linears() for name, c in model.layer_counts().items())
        kinds = model.layer_kinds
        n -= sum(
            c * mla_fewer_matmuls(kinds[name], mla_qkv_a_fused)
            for name, c in model.layer_counts().items()
            if kinds[name].mla_attention
        )
    moe = model.moe.num_moe_layers if model.moe else 0
    if "mlp" in roles:
        n += (model.num_layers - moe) * 2
    if "shared_experts" in roles and _has_shared_experts(model):
        n += moe * 2
    return n


def expert_quant_kernels(model: ModelSpec, weight_dtype: str | None = None, fmt: QuantFormat = "fp8") -> int:
    """Of :func:`quant_kernels`, those inside the fused routed-expert calls: two a call where the
    routed experts are stored in ``fmt`` (fp8 or int8, W8A8: the Triton fused-MoE kernel quantizes both inputs alike,
    vLLM 0.11.0 fused_moe.py use_fp8_w8a8 or use_int8_w8a8; fp4: NVFP4)."""
    moe = model.moe.num_moe_layers if model.moe else 0
    roles = _quant_roles(model, weight_dtype, fmt)
    return 2 * moe if "experts" in roles else 0


def layer_latency_s(model: ModelSpec, c: StepConstants, eager: bool = False, kernels: Kernels | None = None) -> float:
    """The kernels' latencies of one step; ``eager`` (a batch past the largest captured CUDA graph)
    adds each kernel's launch outside a graph (eager_launch_s). ``c`` as :func:`for_gpu` leaves it
    (a matmul's latency open, None, is GEMM_LATENCY_S). ``kernels``: as layer_kernels counts them
    for the deployment (default: the model's at 16 bits)."""
    n = kernels or layer_kernels(model)
    t = (
        n.gemm * (GEMM_LATENCY_S if c.gemm_latency_s is None else c.gemm_latency_s)
        + n.attention * c.attn_latency_s
        + n.mla_attention * (MLA_ATTN_LATENCY_S if c.mla_attn_latency_s is None else c.mla_attn_latency_s)
        + (n.moe - n.moe_flashinfer - n.moe_flashinfer_bf16 - n.moe_flashinfer_fp4 - n.moe_cutlass_fp4) * c.moe_latency_s
        + n.moe_flashinfer * c.moe_flashinfer_s
        + n.moe_flashinfer_bf16 * c.moe_flashinfer_bf16_s
        + n.moe_flashinfer_fp4 * c.moe_flashinfer_fp4_s
        + n.moe_cutlass_fp4 * c.moe_cutlass_fp4_s
        + n.moe_quant * c.moe_quant_s
        + n.router_compiled * ROUTER_COMPILED_S
        + n.small * c.kernel_gap_s
    )
    if eager:
        t += n.total * c.eager_launch_s
    return t


def matmul_s(weights_s: Any, flops_s: Any, added: bool = False) -> Any:
    """A step's matmuls, from their weights' time over the bandwidth and their FLOPs' time at the peak
    (floats or numpy arrays): the root-sum-square of the two. A matmul is neither purely memory- nor
    purely compute-bound near the knee where the two are equal, and the measured tables take longer
    there than the larger of the two: vLLM's bf16 GEMMs of 64 to 512 tokens (AIConfigurator's
    gemm_perf tables) a median 1.11-1.19x the larger on H100, H200, A100 and B200 and 0.96-1.06x the
    root-sum-square; its Triton fused-MoE calls likewise (DEFAULT_SOURCES['matmul_s']). ``added``: the
    sum of the two, on a GPU whose measured matmuls overlap them not at all (GemmSpec.combine "sum")."""
    if added:
        return weights_s + flops_s
    return (weights_s * weights_s + flops_s * flops_s) ** 0.5


def attention_heads(model: ModelSpec, tp: int = 1) -> int:
    """(request, KV head) pairs one decoding request brings to a step's attention calls on a rank:
    each attention layer's KV heads on the rank (LayerKind.decode_attention_heads), summed over the
    layers. A decode attention kernel runs thread blocks per request and KV head, and past a few
    hundred short requests their per-request work, not the KV bytes, sets the call's time
    (StepConstants.attn_request_s)."""
    return sum(n * model.layer_kinds[name].decode_attention_heads(tp) for name, n in model.layer_counts().items())


def eager_issue_s(model: ModelSpec, c: StepConstants, kernels: Kernels | None = None) -> float:
    """Seconds the host takes to issue one step's kernels when the model's layers run eagerly from
    Python (no CUDA graph): every kernel layer_kernels counts, at eager_host_s each."""
    n = kernels or layer_kernels(model)
    return n.total * c.eager_host_s


@record(frozen=True)
class Link:
    kind: str
    """'nvlink' (NVLink, NVSwitch, Infinity Fabric, ICI: the spec's interconnect) or 'pcie'."""
    bytes_per_s: float
    """One direction, per GPU."""
    alpha_s: float
    measured: tuple[tuple[int, ...], tuple[float, ...]] | None = None
    """An all-reduce's seconds by message bytes, as the GPU spec's measurements give them for this
    group size (``allreduce``), each size at the least measured at it or any larger size (one
    sample a size: a smaller message is not charged more than a larger one); None: alpha + bytes
    over the bandwidth."""

    def allreduce_s(self, nbytes: float, n: int) -> float:
        """One all-reduce of ``nbytes`` among ``n`` GPUs: measured, linear between the measured
        sizes (the smallest's below them; past the largest, its time plus the rest of the bytes at
        the bus bandwidth), else alpha + bytes x 2(n - 1)/n / bandwidth."""
        ring = 2 * (n - 1) / n / self.bytes_per_s
        if self.measured is None:
            return self.alpha_s + nbytes * ring
        return measured_collective_s(self.measured, nbytes, ring)


MeasuredTable = tuple[tuple[int, ...], tuple[float, ...]]
"""A measured collective's (bytes, seconds) by message size, each at the least measured at it or above (measured_table)."""


def measured_allreduce(gpu: GPUSpec, size: int, nccl: bool = False) -> MeasuredTable | None:
    """The GPU spec's measured all-reduce latencies among ``size`` GPUs (bytes, seconds), each size
    at the least measured at it or any larger one; None where the spec has none for that size.
    ``nccl``: NCCL's own table (``nccl_allreduce``) in place of the engine's all-reduce."""
    return measured_table(gpu.nccl_allreduce if nccl else gpu.allreduce, size)


def measured_table(ar: Any, size: int) -> MeasuredTable | None:
    """A measured collective's latencies among ``size`` GPUs (an AllReduceSpec block: bytes, seconds), each size at the
    least measured at it or any larger one; None where the block is absent or has none for that size."""
    if ar is None or size not in ar.latency_us:
        return None
    raw = ar.latency_us[size]
    ys: list[float] = []
    low = math.inf
    for v in reversed(raw):
        low = min(low, float(v) * 1e-6)
        ys.append(low)
    return tuple(ar.message_bytes), tuple(reversed(ys))


def measured_collective_s(table: MeasuredTable, nbytes: float, per_byte_s: float) -> float:
    """One collective of ``nbytes`` from a measured ``table`` (bytes, seconds; measured_allreduce's form): linear between
    the measured sizes, the smallest's time below them, past the largest its time plus the rest at ``per_byte_s``."""
    xs, ys = table
    if nbytes <= xs[0]:
        return ys[0]
    if nbytes >= xs[-1]:
        return ys[-1] + (nbytes - xs[-1]) * per_byte_s
    i = bisect_right(xs, nbytes)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[i - 1], ys[i]
    return y0 + (y1 - y0) * (nbytes - x0) / (x1 - x0)


def dp_exchange_group(engine: Engine | None, tp: int, dp: int) -> int:
    """The GPUs data-parallel attention's gather and scatter run among, where their NCCL calls were read: SGLang 0.5.0rc0 to
    0.5.23 all-gather every DP rank's tokens over the whole TP group and reduce-scatter the MLP's output over it
    (dp_attention.py ``_dp_gather_via_all_gather``, ``dp_reduce_scatter_tensor``: ``get_tp_group()``, dp x tp GPUs;
    communicator.py ``_scatter_hidden_states`` with ``allow_reduce_scatter`` and the MAX_LEN padding a CUDA graph takes,
    read in 0.5.0rc0, 0.5.1, 0.5.1.post3, 0.5.2, 0.5.3, 0.5.6 and 0.5.9), for every layer whose MLP spans that group, dense or MoE
    (``_compute_mlp_mode``: FULL); vLLM's allgather_reducescatter all2all backend all-gathers and reduce-scatters over
    the DP group, dp GPUs, for each MoE layer (distributed/device_communicators/all2all.py AgRsAll2AllManager:
    ``all_gatherv``, ``reduce_scatterv`` through PyNccl, read in 0.14.0). SGLang 0.4.0 to 0.4.4 gather the same way
    (models/deepseek_v2.py ``all_gather``: ``torch.distributed.all_gather_into_tensor`` of each rank's tokens padded to
    the largest count, over the TP group, in every layer) but combine with the MLP's own all-reduce of the gathered
    tokens (``tensor_model_parallel_all_reduce``), then slice their own (dp_combine_allreduce; read in 0.4.0, 0.4.1,
    0.4.3, 0.4.3.post2 and 0.4.4). 0 where not read (SGLang 0.4.5 to 0.4.10, TensorRT-LLM)."""
    if dp <= 1 or engine is None:
        return 0
    if engine.name == "sglang" and (not engine.older_than(0, 5, 0) or dp_combine_allreduce(engine)):
        return dp * tp
    if engine.name == "vllm":
        return dp
    return 0


def dp_combine_allreduce(engine: Engine | None) -> bool:
    """Whether the engine combines data-parallel attention's MLP outputs with an all-reduce of every rank's tokens
    (its own all-reduce, the custom one where it takes the message), not NCCL's reduce-scatter: SGLang 0.4.0 to 0.4.4
    (dp_exchange_group)."""
    return engine is not None and engine.name == "sglang" and engine.older_than(0, 4, 5)


def nvlink_alpha_s(gpu: GPUSpec, size: int) -> float:
    """The latency of a small all-reduce among ``size`` GPUs over the scale-up links where the spec has
    no table at that size: NVLINK_ALPHA_S, and never less than the smallest message's time in the table
    of the largest group it measures below ``size`` (MI300X at TP 8 takes its TP 4 table's 7.26 us).
    More ranks do not make the call faster: each NVIDIA table of 2, 4 and 8 GPUs has it rising with
    the group (DEFAULT_SOURCES['alpha_s'])."""
    ar = gpu.allreduce
    fewer = [n for n in (ar.latency_us if ar is not None else {}) if n < size]
    if ar is None or not fewer or size in ar.latency_us:
        return NVLINK_ALPHA_S
    return max(NVLINK_ALPHA_S, float(ar.latency_us[max(fewer)][0]) * 1e-6)


def tp_link(gpu: GPUSpec, tp: int, c: StepConstants = DEFAULTS) -> Link:
    """The link a collective among ``tp`` GPUs placed together crosses
    (kvcalc.engine.deployment.group_link_kind): the GPU interconnect inside its domain (vLLM's
    custom all-reduce), PCIe through the host inside a node without one (NCCL), the network
    between nodes (NCCL over the NICs, one a GPU)."""
    return link_of(gpu, group_link_kind(gpu, tp), tp, c)


def link_of(gpu: GPUSpec, kind: str, size: int, c: StepConstants = DEFAULTS) -> Link:
    """One kind of link ('nvlink', 'pcie' or 'network') for a collective among ``size`` GPUs."""
    if kind == "network":
        # A collective spanning nodes runs one NCCL ring through each GPU's NIC: its bus bandwidth is
        # the node's NICs together (each ring carries 1/n of the bytes across), at 0.94 of their rate,
        # never above the link inside the node.
        node = node_of(gpu)
        per = min(size, node.gpus_per_node)
        bw = float(node.scale_out_bytes_per_s) * per * NET_SHARE
        inner = link_of(gpu, group_link_kind(gpu, per), per, c).bytes_per_s if per > 1 else bw
        alpha = c.net_alpha_s if c.net_alpha_s is not None else node.scale_out_latency_s or NET_ALPHA_S
        return Link(kind, min(bw, inner), alpha)
    measured = None
    if kind == "nvlink":
        bw, alpha = float(gpu.interconnect_bytes_per_s or 0) / 2 * NVLINK_SHARE, nvlink_alpha_s(gpu, size)
        # The GPU's own measurements where it has them, unless a calibration sets the link's terms.
        if c.alpha_s is None and c.link_bytes_per_s is None:
            measured = measured_allreduce(gpu, size)
    else:
        host = float(gpu.host_link_bytes_per_s) / 2 if gpu.host_link_bytes_per_s else PCIE_FALLBACK_BYTES_PER_S
        bw, alpha = host * PCIE_SHARE, PCIE_BASE_S + 2 * (max(size, 2) - 1) * PCIE_HOP_S
    return Link(kind, c.link_bytes_per_s or bw, alpha if c.alpha_s is None else c.alpha_s, measured)


def trtllm_allreduce(gpu: GPUSpec, tp: int, c: StepConstants = DEFAULTS) -> MeasuredTable | None:
    """TensorRT-LLM's own all-reduce among ``tp`` GPUs of one NVLink domain as the GPU spec measures it
    (GPUSpec.allreduce_trtllm), what a TensorRT-LLM deployment's TP all-reduces take in place of vLLM's; None where the
    spec has none for that size or a calibration sets the link's terms."""
    if c.alpha_s is not None or c.link_bytes_per_s is not None:
        return None
    return measured_table(gpu.allreduce_trtllm, tp)


def fp8_block_scaled(model: ModelSpec, weight_dtype: str | None = None) -> bool:
    """Whether a checkpoint's fp8 weights carry 128 x 128 block scales (its quantization config's
    fp8-block: DeepSeek-V3, MiniMax-M2, Qwen3's FP8 releases). Their matmuls run block-scaled kernels
    (CUTLASS's or DeepGEMM's), which no CUDA-graph table measures: AIConfigurator's collector times its
    fp8-block GEMMs eagerly, one layer a call (collector/vllm/collect_gemm.py), 2-6x the per-tensor
    kernels at one token, the launch rather than the kernel. They keep the GPU's bf16 figures."""
    return weight_dtype is None and model.quantization is not None and model.quantization.method == "fp8-block"


def matmul_dtype(model: ModelSpec, gpu: GPUSpec, weight_dtype: str | None = None) -> str:
    """The precision a checkpoint's matmuls run in: fp8 for fp8 weights on a GPU with fp8 units
    (vLLM and SGLang run fp8 checkpoints W8A8 there), fp4 for NVFP4 weights on a GPU with fp4 units (vLLM's
    ModelOpt NVFP4 linear and MoE methods quantize the activations to NVFP4 on compute capability 10:
    model_executor/layers/quantization/modelopt.py, read in 0.24.0; on other GPUs they run the weights through
    Marlin's 16-bit kernels), int8 for W8A8 int8 weights on a GPU whose spec gives its INT8 peak (vLLM's
    CompressedTensorsW8A8Int8 runs CUTLASS's int8 scaled_mm from compute capability 7.5, quantizing each linear layer's
    input: 0.11.0 quantization/kernels/scaled_mm/cutlass.py), 16-bit otherwise and for a checkpoint that quantizes
    its weights alone (Quantization.weight_only: W8A16 runs Marlin's 16-bit kernels)."""
    wd = weight_dtype or model.weight_dtype
    quant = model.quantization if not weight_dtype else None
    if quant is not None and quant.weight_only:
        return "bf16"
    q = quant.method if quant else ""
    if (wd in FP8_CHECKPOINTS or q.startswith("fp8")) and gpu.flops_fp8:
        return "fp8"
    if gpu.flops_fp4 and _quant_roles(model, weight_dtype, "fp4"):
        return "fp4"
    if gpu.flops_int8 and _quant_roles(model, weight_dtype, "int8"):
        return "int8"
    return "bf16"


def check_triton(model: ModelSpec, gpu: GPUSpec, engine: Engine | None) -> DecodeGeometry | None:
    """The decode geometry SGLang's Triton backend runs ``model`` with where ``engine`` runs that backend
    (Engine.attention_backend; None elsewhere), refused in one line where kvcalc does not price it: on a
    GPU without NVIDIA's measured block rate or its multiprocessors in its spec, or for a model whose
    layers are not all of one full-attention kind (windows, states and mixed kinds take other kernels)."""
    if engine is None or engine.attention_backend != "triton":
        return None
    where = "attention_backend"
    if gpu.name not in TRITON_GPUS or not gpu.multiprocessors:
        raise KvcalcError(
            f"SGLang's Triton decode kernel on {gpu.name}: its block rate is measured on Hopper and its occupancy "
            "compiled for Hopper and compute capability 10, on the GPUs whose specs give their multiprocessors",
            where,
            "one of " + ", ".join(TRITON_GPUS) + ", or the default attention backend",
        )
    kinds = model.kinds()
    g = kinds[0].decode_geometry() if len(kinds) == 1 and not model.has_windows else None
    if g is None:
        raise KvcalcError(
            f"SGLang's Triton decode kernel for {model.name}: priced for models whose every layer attends to the whole "
            "context with one attention kind",
            where,
            "a full-attention model (no windows, states or mixed kinds), or the default attention backend",
        )
    if g.kind != "mla" and g.n_kv == g.n_q or triton_tile(g) not in TRITON_BLOCKS_PER_SM:
        raise KvcalcError(
            f"SGLang's Triton decode kernel for {model.name}: priced for its grouped kernel (query heads sharing KV heads, "
            f"or MLA) at the tiles compiled ({', '.join(f'{a + b}/{c}' for a, b, c in TRITON_BLOCKS_PER_SM)} of key/value)",
            where,
            "a GQA, MQA or MLA model of those widths, or the default attention backend",
        )
    return g


def triton_tile(g: DecodeGeometry) -> tuple[int, int, int]:
    """The tile SGLang's grouped Triton decode kernel takes for a layer (_decode_grouped_att_m_fwd in
    srt/layers/attention/triton_ops/decode_attention.py, 0.4.4.post3 to 0.5.9): (BLOCK_DMODEL, BLOCK_DPE,
    BLOCK_DV), MLA's 576-wide key as 512 + 64 and a 288-wide one as 256 + 32, else the key's width rounded up
    to a power of 2 and none; the value's width rounded up."""
    lk = g.d_a + g.d_b
    dv = 1 << max(g.dv - 1, 0).bit_length()
    if lk == 576:
        return 512, 64, dv
    if lk == 288:
        return 256, 32, dv
    return 1 << max(lk - 1, 0).bit_length(), 0, dv


@record(frozen=True)
class StepTime:
    """One step's time, by term (seconds, on one rank)."""

    t_memory_s: float
    """Bytes read / (bandwidth x eta_bw)."""
    t_compute_s: float
    """FLOPs / (peak x eta_c)."""
    t_fixed_s: float
    """The engine's per-step and per-request cost and the layers' kernel gaps."""
    t_collective_s: float
    """TP all-reduces and PP hand-offs."""
    t_step_s: float
    t_bound_s: float
    """The roofline bound of the same step: eta 1, no fixed cost, no collectives."""
    bound_by: str
    """The largest term: memory, compute, collective or fixed."""


class StepModel:
    """A model's steps on one deployment shape (GPU, TP, PP), under one set of constants."""

    def __init__(
        self,
        model: ModelSpec,
        gpu: GPUSpec,
        kv_dtype: KVDtype,
        tp: int = 1,
        pp: int = 1,
        constants: StepConstants = DEFAULTS,
        weight_dtype: str | None = None,
        compute_dtype: str | None = None,
        ep: int = 1,
        dp: int = 1,
        engine: Engine | None = None,
    ):
        self.compute_dtype = compute_dtype or matmul_dtype(model, gpu, weight_dtype)
        self.fp8_measured = self.compute_dtype == "fp8" and not fp8_block_scaled(model, weight_dtype)
        """Whether the step's matmuls run the fp8 kernels the GPU spec's gemm_fp8 block measures (per-tensor or
        per-channel scales); block-scaled fp8 checkpoints keep the gemm block's figures (fp8_block_scaled)."""
        self.mla_kernel = mla_kernel(engine, gpu, model)
        """Whose measured MLA decode call the model's MLA layers take (engines.mla_kernel; for_gpu)."""
        self.fp4_share = fp4_matmul_share(model, weight_dtype) if self.compute_dtype == "fp4" else 1.0
        """Of the step's matmuls outside the routed experts, the share that are NVFP4 (fp4_matmul_share; 1 off fp4)."""
        self.fp4_flops = fp4_flop_share(model, weight_dtype) if self.compute_dtype == "fp4" else 1.0
        """Of their FLOPs, the share in NVFP4 layers (fp4_flop_share; 1 off fp4): the rest run at the 16-bit peak."""
        self.trtllm = engine is not None and engine.name == "trtllm"
        """Whether the engine is TensorRT-LLM, whose own fp8 matmuls and all-reduce the GPU spec may measure
        (GPUSpec.gemm_fp8_trtllm, GPUSpec.allreduce_trtllm): its fp8 matmuls and TP all-reduces take those in place of
        vLLM's (gemm_block, trtllm_allreduce)."""
        self.c = for_gpu(
            for_engine(constants, engine),
            gpu,
            self.fp8_measured,
            self.compute_dtype,
            self.mla_kernel,
            self.fp4_share,
            self.trtllm,
        ).check()
        g = gemm_block(gpu, self.fp8_measured, self.compute_dtype == "fp4" and self.fp4_share >= 1.0, self.trtllm)
        self.mm_added = g is not None and g.combine == "sum" and g.compute_dtype == self.compute_dtype
        """Whether the matmuls' weight reads and math add (GemmSpec.combine "sum") rather than combine as
        their root-sum-square (matmul_s)."""
        self.model, self.gpu, self.tp, self.pp = model, gpu, tp, pp
        per_head = engine is not None and engine.mla_per_head(model, weight_dtype)
        mat = (
            mla_materialized(model, weight_dtype, tp)
            if engine is not None and engine.mla_materializes(model, weight_dtype)
            else None
        )
        self.mla_decode_bytes = float(mat.decode_read_bytes) if mat else 0.0
        """Weight bytes a decode-only step reads beyond the streamed weights, where the engine runs MLA's decode
        through materialized weights (Engine.mla_decode; weights.MLAMaterialized): those less the originals."""
        self.mla_mixed_bytes = float(mat.absorbed_read_bytes) if mat else 0.0
        """The same for a step that carries prompt tokens beside its decodes: the materialized weights whole."""
        self.mla_decode_flops = float(mat.decode_flops_per_token) if mat else 0.0
        """FLOPs a decode token adds on a rank through the materialized weights."""
        self.dp, self.ep = dp, ep
        """Data-parallel attention ranks, stepping together (their batches are alike: ``decodes``
        and ``tokens`` below are one DP rank's), and expert-parallel ranks (1 or dp x tp)."""
        self.shape = Shape(tp, pp, dp, ep)
        self.norm_allreduces, self.norm_allreduce_bytes = norm_allreduces(model, engine)
        self.norm_padded = norm_allreduce_padded(engine)
        self.ar_declines = custom_ar_declines(engine)
        self.dp_group = dp_exchange_group(engine, tp, dp)
        """The GPUs data-parallel attention's NCCL gather and scatter run among (dp_exchange_group; 0: not read)."""
        self.dp_combine_ar = dp_combine_allreduce(engine)
        """Whether the combine is the engine's all-reduce of every rank's tokens (dp_combine_allreduce)."""
        self.dp_layers = (
            model.num_layers if engine is not None and engine.name == "sglang" else (model.moe.num_moe_layers if model.moe else 0)
        )
        """Layers that gather and scatter every DP rank's tokens: SGLang's every layer, vLLM's MoE layers."""
        self.custom_ar = custom_ar_runs(engine, gpu, tp)
        """Whether the engine's custom all-reduce runs here (custom_ar_runs); where not, NCCL's measured table carries
        every all-reduce (nccl_link)."""
        if dp > 1 or ep > 1:
            check_shape(model, self.shape)
        self.placement = place(gpu, self.shape)
        sparse = [k for k in model.layer_kinds.values() if isinstance(k, MLA) and k.sparse_topk]
        heads = engine.sparse_mla_heads(sparse[0].num_attention_heads // tp, gpu.name, kv_dtype.bits) if sparse and engine else 0
        self.d = d = Decode(
            model,
            gpu,
            kv_dtype,
            tp,
            weight_dtype,
            self.compute_dtype,
            dp,
            heads,
            engine.kv_form_alloc(model, weight_dtype) if engine else LOGICAL,
        )
        self._links()
        self.moe_runner = experts_runner(engine, model, gpu, weight_dtype, self.compute_dtype, ep)
        """The fused-MoE kernel the engine runs the routed experts with (engines.moe_runner): 'triton_mxfp4' calls take
        moe_quant_s beyond moe_latency_s, as AIConfigurator's tables of that kernel measure them; 'flashinfer_trtllm'
        calls take moe_flashinfer_s and the share MOE_ETA['fp8_flashinfer'], 'flashinfer_trtllm_bf16' calls
        moe_flashinfer_bf16_s and MOE_ETA['bf16_flashinfer'], 'flashinfer_trtllm_fp4' calls moe_flashinfer_fp4_s and
        MOE_ETA['fp4_flashinfer'], 'cutlass_fp4' calls moe_cutlass_fp4_s and MOE_ETA['fp4_cutlass'] (DEFAULT_SOURCES)."""
        self.moe_backend_unpriced = (
            engine is not None
            and engine.moe_backend == "trtllm"
            and model.moe is not None
            and not self.moe_runner.startswith("flashinfer_trtllm")
        )
        """Whether the deployment asked for the TensorRT-LLM-gen MoE kernel (Engine.moe_backend) where kvcalc has no
        figures of it (another GPU, MXFP4 experts, fp8 or 16-bit ones under EP): the default runner's are taken, and said."""
        fused_a = engine is not None and engine.mla_qkv_a_fused
        self.kernels = self._runner_kernels(
            layer_kernels(
                model,
                weight_dtype,
                self.compute_dtype,
                mla_materialized=mat is not None,
                mla_qkv_a_fused=fused_a,
                mla_per_head=per_head,
            )
        )
        fmt = quant_format(self.compute_dtype)
        self.quant_kernels = quant_kernels(model, weight_dtype, fused_a, fmt) if fmt else 0
        """Kernels quantizing fp8, int8 (fp4) matmuls' activations: among the small ones, but for the routed experts'
        two a call, which run inside the fused calls (Kernels.moe_inner)."""
        self.quant_small = self.quant_kernels - expert_quant_kernels(model, weight_dtype, fmt) if fmt else 0
        """Of quant_kernels, those charged as small kernels."""
        self.ar_fusion = allreduce_norm_fusion(engine, model, gpu.name, tp, dp, self.placement.nodes)
        """Whether each TP all-reduce runs with the residual add and RMSNorm after it fused in (engines.allreduce_norm_fusion):
        a step of at most SGLANG_AR_FUSION_MAX_TOKENS tokens then launches the layers' two norms but the first layer's
        input norm as part of the all-reduces."""
        self.ar_fused_norms = 2 * model.num_layers - 1 if self.ar_fusion else 0
        """Small kernels a step of at most SGLANG_AR_FUSION_MAX_TOKENS tokens does not launch (ar_fusion): its norms
        but the first. ``kernels`` and ``prompt_kernels`` are such a step's; a larger step launches them."""
        self.kernels = replace(self.kernels, small=self.kernels.small - self.ar_fused_norms)
        self.router_compiled = sglang_router_compiled(model, engine, gpu)
        """Whether each MoE layer's router runs SGLang's compiled fallback (sglang_router_compiled), charged
        ROUTER_COMPILED_S in place of its small kernels."""
        if self.router_compiled:
            self.kernels = self._compiled_router(self.kernels)
        self.shared_fused = sglang_shared_fused(model, engine, gpu, ep, self.moe_runner)
        """Whether SGLang runs the shared expert inside the fused routed-expert call (sglang_shared_fused): the shared
        expert's matmuls, activation and quantization kernels leave the step's count."""
        if self.shared_fused:
            self.kernels = self._shared_in_fused(self.kernels, weight_dtype)
        self.attn_heads = attention_heads(model, tp)
        """(request, KV head) pairs a decoding request brings to the step's attention calls (attention_heads)."""
        self.attn_per_request_s = self.attn_heads * (self.c.attn_request_s or 0.0)
        """What each request in the step adds to its attention calls, seconds (StepConstants.attn_request_s)."""
        self.prefill_eager = engine is not None and not engine.prompt_graphs(
            pp, gpu.vendor, model, dp, gpu.name, moe=experts_runner(engine, model, gpu, weight_dtype, self.compute_dtype)
        )
        """Whether steps that carry prompt tokens run without CUDA graphs (Engine.prefill_graphs)."""
        self.prefill_graph_max = (
            engine.prefill_graph_max_mla if engine is not None and model.mla is not None and not self.prefill_eager else None
        )
        """The most tokens a prompt step replays the engine's prompt graphs at, where the release caps an MLA model's
        below the chunk (Engine.prefill_graph_max_mla); a larger one runs eagerly (None: no cap)."""
        self.decode_graph_max = engine.decode_graph_max(gpu, tp, dp) if engine is not None else None
        """The largest decode-only step (one DP rank's requests) the engine replays from a CUDA graph;
        a larger one runs its layers eagerly, as a prompt step does where prefill_eager (None: no limit)."""
        self.decode_graph_max_len = engine.decode_graph_max_len if engine is not None else None
        """The longest sequence a decode-only step may hold and still replay a CUDA graph (vLLM V0's
        max_seq_len_to_capture: Engine.decode_graph_max_len); a step of a longer one runs eagerly. step() takes a
        batch's context as its longest (a roofline point's batch is alike); the simulator follows its longest
        request. None: no such limit."""
        self.prompt_kernels = self._runner_kernels(
            layer_kernels(
                model,
                weight_dtype,
                self.compute_dtype,
                prompt=True,
                mla_materialized=mat is not None,
                mla_qkv_a_fused=fused_a,
                mla_per_head=per_head,
            )
        )
        """The kernels of a step that carries prompt tokens, where a mixer's prompt path differs (LayerKind.mixer_kernels)."""
        self.prompt_kernels = replace(self.prompt_kernels, small=self.prompt_kernels.small - self.ar_fused_norms)
        if self.router_compiled:
            self.prompt_kernels = self._compiled_router(self.prompt_kernels)
        if self.shared_fused:
            self.prompt_kernels = self._shared_in_fused(self.prompt_kernels, weight_dtype)
        self._gaps()
        self.lockstep_ranks = dp - 1 if dp > 1 and engine is not None and engine.dp_prompt_lockstep else 0
        """The other DP ranks whose prompt steps this rank steps with, running its decodes without CUDA
        graphs (Engine.dp_prompt_lockstep); 0 where the engine's ranks do not (or one rank)."""
        mode = engine.async_scheduling if engine is not None else "none"
        self.async_host = (
            mode != "none"
            and pp == 1
            and not (mode == "one-node" and self.placement.nodes > 1)
            and not (mode == "pp1-no-dp" and dp > 1)
        )
        """Whether the engine schedules the next step while the GPU runs this one (Engine.async_scheduling:
        never at PP > 1; for vLLM not across nodes, where its executor is Ray's): the host's fixed and
        per-request time then runs beside the GPU's work, and a step takes the longer of the two."""
        self.admit_lag = self.async_host and engine is not None and engine.overlap_admission
        """Whether the scheduler takes requests in as a step begins, for the step after it (Engine.overlap_admission,
        where the engine schedules ahead here): the simulator holds a request back until that poll, and plan's closed
        form adds the wait (_Replica.admit_wait)."""
        self.tail_step = self.async_host and engine is not None and engine.overlap_tail
        """Whether a request rides one decode step past its last token (Engine.overlap_tail, where the engine schedules
        ahead here): the simulator runs that step where it leaves the GPU otherwise idle (simulate/scheduler.py
        tail_step)."""
        # Per token of one DP rank: the dense matmuls split tp ways; the experts see every DP rank's
        # tokens split over dp x tp GPUs (the same FLOPs a GPU), at their own kernel's efficiency.
        self.mm = d.matmul_flops_per_token / tp
        self.expert_share = d.expert_flops_per_token / d.matmul_flops_per_token if d.matmul_flops_per_token else 0.0
        self.peak_mm = d.peak
        self.peak_attn = peak_flops(gpu, "bf16")
        self.inv_bw = 1.0 / (d.bw * self.c.eta_bw)
        self.inv_w = 1.0 / (d.bw * self._eta_gemm(self.c))
        self.inv_mm = self._inv_mm(self.c)
        self.inv_attn = 1.0 / (self.peak_attn * self.c.eta_c)
        self._act = model.hidden_size * ACT_BYTES
        self.elementwise = float(d.elementwise_bytes_per_token)
        """Bytes a token moves through the small kernels between the matmuls (norms, rotary, the
        activation), memory-bound kernels of their own."""
        self._w: dict[int, float] = {}
        self.kv_memo: dict[int, float] = {}
        """kv() and prefill_attn() by argument (the simulator reads them before calling)."""
        self._at: dict[int, float] = {}
        self.prefill_attn_memo: dict[int, float] = {}
        self._coll: dict[int, float] = {}
        self._dl: dict[int | tuple[int, int], tuple[float, float, float, float, float]] = {}
        self._dq: dict[int | tuple[int, int], tuple[float, float, float, float, float | None] | None] = {}
        """lines()'s spans by batch, and prompt tokens where a step has some (_line), where a full-attention model's
        lines need only the mean length and the prompts' KV bytes and attention FLOPs beside them; None where such a
        step runs eagerly (the general path)."""
        # Full-attention models: a request's KV and a token's attention FLOPs are linear in its length.
        pts = (1, 2, 1000, 1001, 100_000, 100_001)
        kvs = [float(d.kv_request(x)) for x in pts]
        ats = [float(d.attn_flops(x)) for x in pts]
        self.linear = all(kvs[i + 1] - kvs[i] == kvs[1] - kvs[0] for i in (2, 4)) and all(
            ats[i + 1] - ats[i] == ats[1] - ats[0] for i in (2, 4)
        )
        self.k1, self.k0 = kvs[1] - kvs[0], 2 * kvs[0] - kvs[1]
        self.a1, self.a0 = ats[1] - ats[0], 2 * ats[0] - ats[1]
        self.triton, self.triton_fixed_splits, self.triton_launch = self._triton(engine)
        """(KV-head blocks a request brings to a Triton split-KV decode kernel, KV bytes a token of context puts
        on one of its blocks over every layer, the GPU's multiprocessors, blocks one runs at once) where the
        deployment runs one the step model prices (_triton); None elsewhere (attn_floor_s). ``triton_fixed_splits``:
        the splits such a kernel gives every request whatever the batch (vLLM V0's Triton MLA, SGLang 0.4.1 to 0.4.4's);
        None where they follow the batch (SGLang's Triton backend where it is asked for). ``triton_launch``: which
        fixed-split launch that is (engines.TritonMLAKernel), None where none is priced."""

    def _triton(self, engine: Engine | None) -> tuple[tuple[int, float, int, int] | None, int | None, TritonMLAKernel | None]:
        """(``triton``, ``triton_fixed_splits``, ``triton_launch``): SGLang's Triton backend where it is asked for (check_triton; its splits
        follow the batch), or vLLM V0's Triton MLA where the release runs it by default on a gfx942 GPU
        or SGLang 0.4.1 to 0.4.4's on Hopper or a gfx942 GPU (triton_mla_fixed_splits; a model other than one MLA kind
        of the compiled 512 + 64 latent tile keeps the default pricing and the note that says so); (None, None, None)
        elsewhere."""
        fixed_launch = triton_mla_fixed_splits(engine, self.model, self.gpu)
        fixed = launch = None
        if fixed_launch is not None:
            kinds = self.model.kinds()
            g = kinds[0].decode_geometry() if len(kinds) == 1 else None
            if g is None or g.kind != "mla" or triton_tile(g) != (512, 64, 512) or not self.gpu.multiprocessors:
                return None, None, None
            fixed, launch = fixed_launch
            per_sm = FIXED_TRITON_MLA_BLOCKS[launch]
        else:
            g = check_triton(self.model, self.gpu, engine)
            if g is None:
                return None, None, None
            per_sm = TRITON_BLOCKS_PER_SM[triton_tile(g)]
        # One request's blocks (srt/layers/attention/triton_ops/decode_attention.py, 0.5.6; vLLM 0.7.3's copy,
        # attention/ops/triton_decode_attention.py, launches the same grid): a block a KV head and a group of at most 16
        # of its query heads on the GPU (_decode_grouped_att_m_fwd, BLOCK_H 16; MLA's one latent head is every query head's).
        heads = max(g.n_q // self.tp, 1)
        kv = 1 if g.kind == "mla" else max(g.n_kv // self.tp, 1)
        blocks = -(-heads // min(TRITON_BLOCK_H, max(heads // kv, 1)))
        # A block reads its KV head's bytes for the tokens of its split, every layer: a token's KV bytes on the
        # GPU over its KV heads (MLA: the latent; its values, the latent's first columns, read again from cache).
        return (blocks, self.k1 / kv, int(self.gpu.multiprocessors or 0), per_sm), fixed, launch

    def attn_floor_s(self, n: int, ctx: float) -> float:
        """The least time the decode attention of ``n`` requests at context ``ctx`` takes on SGLang's Triton
        backend (0 elsewhere): the kernel splits each request's context into at most TRITON_MAX_SPLITS
        parts, fewer as the batch fills the GPU (get_num_kv_splits_triton in
        srt/layers/attention/triton_backend.py, 0.4.4.post3 to 0.5.10: cdiv(multiprocessors x max(log2(length /
        64), 1), requests x blocks a request)), parts of whole tiles (TRITON_MIN_BLOCK_KV), one block a part
        and KV head, and a block reads its part a tile at a time, at triton_cta_bytes_per_s; the blocks run
        side by side, as many at once as the multiprocessors hold (TRITON_BLOCKS_PER_SM), so the step waits on a
        part for each whole wave of blocks (the requests' lengths taken as their mean). vLLM V0's Triton MLA
        and SGLang 0.4.1 to 0.4.4's (triton_fixed_splits) split every request in the same count whatever the batch,
        parts not rounded to tiles, FIXED_TRITON_MLA_BLOCKS blocks a multiprocessor or compute unit."""
        return self._floor_line(n, ctx)[0]

    def _floor_line(self, n: int, ctx: float) -> tuple[float, float]:
        """attn_floor_s at ``ctx`` and what it grows a step (every request's context a token longer: its
        part a 1 / splits token), the splits held as they are at ``ctx``."""
        t = self.triton
        if t is None or n < 1:
            return 0.0, 0.0
        blocks, per_token, sms, per_sm = t
        L = max(math.ceil(ctx), 1)
        rate = self.c.triton_cta_bytes_per_s
        if self.triton_fixed_splits is not None:
            # vLLM V0: the same splits for every batch, a part the context over them (cdiv, no tile rounding).
            splits = self.triton_fixed_splits
            part = -(-L // splits)
        else:
            reach = int(sms * max(math.log2(L / 64.0), 1.0))
            splits = max(min(-(-reach // (n * blocks)), TRITON_MAX_SPLITS), 1)
            # A part: the context over the splits, rounded up to whole tiles of TRITON_MIN_BLOCK_KV tokens.
            per_split = -(-L // splits)
            part = min(-(-per_split // TRITON_MIN_BLOCK_KV) * TRITON_MIN_BLOCK_KV, L)
        # Blocks past what the GPU runs at once wait their turn: whole waves of them.
        waves = -(-(n * blocks * splits) // (sms * per_sm))
        return waves * part * per_token / rate, waves * per_token / rate / splits

    def _gaps(self) -> None:
        """The kernel latencies a step adds under the constants ``c`` (layer_latency_s) and the host's issue of its
        kernels where it runs eagerly (eager_issue_s): for steps of at most SGLANG_AR_FUSION_MAX_TOKENS tokens, and
        (``_large``) for larger ones, which launch ar_fused_norms small kernels more."""
        model, c, more = self.model, self.c, self.ar_fused_norms
        big, big_prompt = (replace(k, small=k.small + more) for k in (self.kernels, self.prompt_kernels))
        self.layer_gaps_s = layer_latency_s(model, c, kernels=self.kernels)
        """The kernel latencies of a step replayed from a CUDA graph (at most GRAPH_MAX_TOKENS tokens)."""
        self.layer_gaps_eager_s = layer_latency_s(model, c, eager=True, kernels=self.kernels)
        """The kernel latencies of a step run eagerly."""
        self.layer_gaps_eager_large_s = layer_latency_s(model, c, eager=True, kernels=big)
        self.eager_host_total_s = eager_issue_s(model, c, self.kernels)
        """The host's issue of a decode step's kernels run eagerly (a batch past the largest decode graph)."""
        self.eager_host_large_s = eager_issue_s(model, c, big)
        self.eager_prompt_total_s = eager_issue_s(model, c, self.prompt_kernels)
        """The host's issue of a prompt step's kernels, where the engine runs such steps eagerly (prefill_eager)."""
        self.eager_prompt_large_s = eager_issue_s(model, c, big_prompt)

    def with_constants(self, c: StepConstants) -> StepModel:
        """The same model and shape under other constants (the byte and FLOP caches are kept)."""
        import copy

        new = copy.copy(self)
        new.c = for_gpu(c, self.gpu, self.fp8_measured, self.compute_dtype, self.mla_kernel, self.fp4_share, self.trtllm).check()
        new._links()
        new._gaps()
        new.attn_per_request_s = self.attn_heads * (new.c.attn_request_s or 0.0)
        new.inv_bw = 1.0 / (self.d.bw * new.c.eta_bw)
        new.inv_w = 1.0 / (self.d.bw * new._eta_gemm(new.c))
        new.inv_mm = new._inv_mm(new.c)
        new.inv_attn = 1.0 / (self.peak_attn * new.c.eta_c)
        new._coll = {}
        new._dl = {}
        new._dq = {}  # (until 2026-12-06 the copy shared its original's: lines() gave the original's constants' spans)
        return new

    @staticmethod
    def _eta_gemm(c: StepConstants) -> float:
        """The matmuls' share of the bandwidth (for_gpu has filled it in)."""
        return c.eta_bw if c.eta_gemm is None else c.eta_gemm

    def _inv_mm(self, c: StepConstants) -> float:
        """Seconds a matmul FLOP costs, on average over the model's mix: the dense matrices at eta_c of
        the peak, the routed experts at moe_eta_c (vLLM's fused-MoE kernels), the busiest EP rank's
        experts moe_imbalance times the mean."""
        imb = c.moe_imbalance if self.ep > 1 else 1.0
        f = self.expert_share
        dense = 1.0 / (self.eta_mm(c) * self.peak_mm)
        if self.fp4_flops < 1.0:
            # A partly NVFP4 checkpoint: its 16-bit dense matrices at the 16-bit peak and eta_c (eta_c_gemm, the share at
            # the step's precision, is the NVFP4 matrices': a calibration that fits eta_c_fp4 sets it).
            dense = self.fp4_flops * dense + (1.0 - self.fp4_flops) / (c.eta_c * float(self.gpu.flops_bf16))
        if not f:
            return dense
        return (1.0 - f) * dense + f * imb / (self.moe_eta(c) * self.peak_mm)

    @property
    def mxfp4_triton(self) -> bool:
        """Whether the routed experts are MXFP4 on OpenAI's Triton kernel (moe_runner)."""
        return self.moe_runner == "triton_mxfp4"

    @property
    def moe_flashinfer(self) -> bool:
        """Whether the routed experts are fp8 on FlashInfer's TensorRT-LLM kernel (moe_runner)."""
        return self.moe_runner == "flashinfer_trtllm"

    @property
    def moe_flashinfer_bf16(self) -> bool:
        """Whether the routed experts are 16-bit on FlashInfer's TensorRT-LLM kernel (moe_runner)."""
        return self.moe_runner == "flashinfer_trtllm_bf16"

    @property
    def moe_fp4(self) -> str:
        """Which NVFP4 MoE kernel runs the routed experts (moe_runner): 'flashinfer' (TensorRT-LLM-gen's), 'cutlass',
        or '' where they are not NVFP4 at the fp4 peak."""
        return {"flashinfer_trtllm_fp4": "flashinfer", "cutlass_fp4": "cutlass"}.get(self.moe_runner, "")

    def _shared_in_fused(self, k: Kernels, weight_dtype: str | None) -> Kernels:
        """``k`` less each MoE layer's shared-expert kernels, which run inside the fused call (sglang_shared_fused): its
        two matmuls, its activation (shared_activation_kernels) and, where its matmuls run at fp8, their inputs'
        quantization (two: quant_kernels' shared experts)."""
        assert self.model.moe is not None
        layers = self.model.moe.num_moe_layers
        fmt = quant_format(self.compute_dtype)
        quant = 2 if fmt is not None and "shared_experts" in _quant_roles(self.model, weight_dtype, fmt) else 0
        small = layers * (shared_activation_kernels(self.model) + quant)
        return replace(k, gemm=k.gemm - 2 * layers, small=k.small - small)

    def _compiled_router(self, k: Kernels) -> Kernels:
        """``k`` with each MoE layer's router charged as SGLang's compiled fallback (sglang_router_compiled)."""
        assert self.model.moe is not None
        layers = self.model.moe.num_moe_layers
        replaced = layers * routing_kernels(self.model)
        return replace(k, small=k.small - replaced, router_compiled=layers, router_kernels=replaced)

    def _runner_kernels(self, k: Kernels) -> Kernels:
        """``k`` as this deployment's fused-MoE kernel runs them: the quantized calls' extra floor (moe_quant_s) was
        measured on NVIDIA's fp8 calls (vLLM's and SGLang's Triton kernels on H100 and H200) and on the Triton MXFP4
        calls on Hopper (every MoE layer's); FlashInfer's calls take their own floor (moe_flashinfer_s) in its place;
        AMD's fused MoE (aiter), which moe_latency_s alone already over-charges (docs/accuracy.md), takes none."""
        if self.mxfp4_triton:
            return replace(k, moe_quant=k.moe)
        if self.moe_flashinfer:
            return replace(k, moe_flashinfer=k.moe, moe_quant=0)
        if self.moe_flashinfer_bf16:
            return replace(k, moe_flashinfer_bf16=k.moe, moe_quant=0)
        if self.moe_fp4 == "flashinfer":
            return replace(k, moe_flashinfer_fp4=k.moe, moe_quant=0)
        if self.moe_fp4 == "cutlass":
            return replace(k, moe_cutlass_fp4=k.moe, moe_quant=0)
        return k if self.gpu.vendor == "NVIDIA" or not k.moe_quant else replace(k, moe_quant=0)

    def moe_eta(self, c: StepConstants) -> float:
        """The routed experts' share of the peak for this deployment: each GPU holds a tp-th of every
        expert's width; with expert parallelism, MOE_ETA_OTHER."""
        return self._moe_share(c)[0]

    def _moe_share(self, c: StepConstants) -> tuple[float, bool]:
        """``moe_eta`` and whether it is the GPU spec's measured share (GPUSpec.moe) rather than MOE_ETA's."""
        q = self.model.quantization
        # Outside the fit: MXFP4 experts (other kernels, whose measured calls the width form does not describe:
        # DEFAULT_SOURCES['moe_eta_c']), and EP ranks, which lose efficiency with EP's size at a given width.
        outside = self.ep > 1 or (q is not None and "experts" in q.roles and q.method == "mxfp4")
        dtype = "fp8_flashinfer" if self.moe_flashinfer else "bf16_flashinfer" if self.moe_flashinfer_bf16 else self.compute_dtype
        if dtype == "int8":
            # vLLM's Triton fused-MoE kernel runs int8 W8A8 experts down fp8's path (0.11.0 fused_moe.py: `if use_fp8_w8a8
            # or use_int8_w8a8`, one tl.dot of 8-bit inputs and the same scales): fp8's measured share, of the INT8 peak.
            dtype = "fp8"
        if self.moe_fp4:
            dtype = f"fp4_{self.moe_fp4}"
        width = None if outside else moe_width(self.model) / self.shape.tp
        if width is None and self.compute_dtype == "fp4" and c.moe_eta_c is None:
            # MOE_ETA_OTHER is a share of the 16-bit and fp8 peaks; NVFP4 experts outside the fit keep the 16-bit rate it
            # gives (0.0375 of B200's fp4 peak: TensorRT-LLM 1.2.0rc5's B200 table at EP 8 and 16,384 tokens measures
            # 0.037 for its CUTLASS NVFP4 MoE and 0.065 for its TensorRT-LLM-gen one, DEFAULT_SOURCES['moe_cutlass_fp4_s']).
            return MOE_ETA_OTHER * float(self.gpu.flops_bf16) / self.peak_mm, False
        # The Triton kernel's 16-bit share as measured on this GPU (GPUSpec.moe: B200, SGLang 0.5.9's table).
        spec = self.gpu.moe
        fit = (spec.bf16_a, spec.bf16_b) if spec is not None and dtype == "bf16" else None
        return c.moe_eta(width, dtype, fit), fit is not None and c.moe_eta_c is None and width is not None

    def eta_mm(self, c: StepConstants) -> float:
        """The dense matmuls' share of their peak: the GPU's measured share where its spec has one
        (eta_c_gemm, as for_gpu fills it in), else eta_c at 16 bits, eta_c_fp8 at fp8, eta_c_int8 at int8 and eta_c_fp4
        at fp4."""
        if c.eta_c_gemm is not None:
            return c.eta_c_gemm
        return float(getattr(c, MATMUL_SHARE.get(self.compute_dtype, "eta_c")))

    def _links(self) -> None:
        """The links the step's collectives cross: TP's, the whole stage's (the MoE gather across DP
        ranks), and between PP stages inside and across nodes."""
        self.link = tp_link(self.gpu, self.tp, self.c)
        # A TensorRT-LLM deployment: its own all-reduce where the GPU spec measures it.
        trt = trtllm_allreduce(self.gpu, self.tp, self.c) if self.trtllm and self.link.kind == "nvlink" else None
        self.trtllm_table = trt is not None
        """Whether TensorRT-LLM's own measured all-reduce carries the TP all-reduces (trtllm_allreduce)."""
        if trt is not None:
            self.link = Link(self.link.kind, self.link.bytes_per_s, trt[1][0], trt)
        # Where the engine's custom all-reduce does not run on this GPU (custom_ar_runs): NCCL's (RCCL's), as measured.
        whole = nccl_link(self.gpu, self.tp, self.c) if not self.custom_ar and self.link.kind == "nvlink" else None
        self.link = whole or self.link
        self.all_nccl = whole is not None
        """Whether NCCL's (RCCL's) measured table carries every TP all-reduce (custom_ar_runs)."""
        # Where the engine's custom all-reduce declines the norm's sums (CUSTOM_AR_ALIGN): NCCL's, as measured. Read in
        # vLLM's and SGLang's own custom all-reduce; not in aiter's, which SGLang runs on ROCm.
        nccl = (
            nccl_link(self.gpu, self.tp, self.c)
            if self.norm_allreduces
            and self.ar_declines
            and not self.norm_padded
            and self.custom_ar
            and self.link.kind == "nvlink"
            and self.gpu.vendor != "AMD"
            else None
        )
        self.norm_nccl = nccl
        self.stage_link = tp_link(self.gpu, self.shape.stage_gpus, self.c)
        self.near_link = tp_link(self.gpu, 2, self.c)
        # Data-parallel attention's gather and scatter as NCCL's all-gather and reduce-scatter, as measured, where the
        # engine's calls were read (dp_exchange_group), the GPU spec measures both at that group and no calibration
        # sets the link's terms.
        n = self.dp_group if self.stage_link.kind == "nvlink" else 0
        ag = measured_table(self.gpu.nccl_allgather, n) if n else None
        # Where the engine combines by its own all-reduce over the stage's link, no reduce-scatter is read.
        rs = measured_table(self.gpu.nccl_reducescatter, n) if n and not self.dp_combine_ar else None
        calibrated = self.c.alpha_s is not None or self.c.link_bytes_per_s is not None
        self.dp_nccl: tuple[MeasuredTable, MeasuredTable | None] | None = None
        """The all-gather's and reduce-scatter's measured tables (the latter None where the engine all-reduces instead)."""
        if ag is not None and (rs is not None or self.dp_combine_ar) and not calibrated:
            self.dp_nccl = (ag, rs)

    # ---- pieces, cached by their integer argument ------------------------------------------------

    def weights(self, tokens: int) -> float:
        """Weight bytes the step's slowest rank reads: a rank's share (Decode.weight_read) plus,
        under expert parallelism, what the busiest rank's experts add (:meth:`busiest_extra`)."""
        w = self._w.get(tokens)
        if w is None:
            w = self._w[tokens] = float(self.d.weight_read(tokens)) + self.busiest_extra(tokens)
        return w

    def busiest_extra(self, tokens: int) -> float:
        """Expert bytes the busiest expert-parallel rank reads beyond a rank's mean share, in a step of
        ``tokens`` tokens on each DP rank. Each MoE layer ends in a collective that waits for every
        rank, so the layer lasts as long as its busiest rank takes to read the experts its tokens
        route to: under uniform routing, busiest_rank_experts of them where the mean is the
        expected distinct experts over the ranks (2.54 against 1 for one token of MiniMax-M2's
        256 experts, top 8, over 8 ranks). 0 without EP: each rank then reads a tp-th of every
        expert the batch routes to."""
        sw = self.d.sw
        if self.ep <= 1 or not sw.moe_layers:
            return 0.0
        b = tokens * self.dp
        E, k = sw.num_experts, sw.experts_per_tok
        skew = busiest_rank_experts(E, k, b, self.ep) - float(expected_experts(E, k, b)) / self.ep
        return sw.moe_layers * float(sw.expert_bytes_each) * max(skew, 0.0)

    def kv(self, length: int) -> float:
        v = self.kv_memo.get(length)
        if v is None:
            v = self.kv_memo[length] = float(self.d.kv_request(length))
        return v

    def attn(self, length: int) -> float:
        v = self._at.get(length)
        if v is None:
            v = self._at[length] = float(self.d.attn_flops(length))
        return v

    def prefill_attn(self, length: int) -> float:
        """Attention FLOPs of one prompt token at context ``length`` (MLA decompressed)."""
        v = self.prefill_attn_memo.get(length)
        if v is None:
            v = self.prefill_attn_memo[length] = float(self.d.prefill_attn_flops(length))
        return v

    def collective_s(self, tokens: int) -> float:
        """TP all-reduces, PP hand-offs and EP all-to-alls of one step carrying ``tokens`` tokens
        (whole model). PP has no bubble term of its own: a token crosses every stage in one step of
        the whole model, and stages idle only when fewer micro-batches than stages are in flight,
        which the caller's batch per micro-batch already says."""
        v = self._coll.get(tokens)
        if v is None:
            a = tokens * self._act
            t = 0.0
            if self.tp > 1:
                t += 2 * self.model.num_layers * self.link.allreduce_s(a, self.tp)
                if self.norm_allreduces:
                    nb = tokens * self.norm_allreduce_bytes
                    if self.norm_padded:
                        nb = -(-nb // CUSTOM_AR_ALIGN) * CUSTOM_AR_ALIGN
                    link = self.link
                    if self.norm_nccl is not None and self.norm_declined(tokens):
                        link = self.norm_nccl
                    t += self.norm_allreduces * self.model.num_layers * link.allreduce_s(nb, self.tp)
            if self.pp > 1:
                net = self.placement.pp_network_handoffs
                t += (self.pp - 1 - net) * (P2P_ALPHA_S + a / self.near_link.bytes_per_s)
                # Between nodes one GPU's NIC carries the hand-off (NCCL send/recv).
                t += net * (NET_P2P_ALPHA_S + a / (float(node_of(self.gpu).scale_out_bytes_per_s) * NET_P2P_SHARE))
            t += self.moe_exchange_s(tokens)
            v = self._coll[tokens] = t
        return v

    def norm_declined(self, tokens: int) -> bool:
        """Whether the custom all-reduce declines the norm's sums in a step of ``tokens`` tokens (CUSTOM_AR_ALIGN): an
        unpadded message not a whole number of 16 B, in a graphed step (up to GRAPH_MAX_TOKENS) only at 1 or 2 tokens,
        the graph's batch being padded to a multiple of 4 above."""
        if self.norm_padded or not self.ar_declines or (3 <= tokens <= GRAPH_MAX_TOKENS):
            return False
        return tokens * self.norm_allreduce_bytes % CUSTOM_AR_ALIGN != 0

    def moe_exchange_s(self, tokens: int) -> float:
        """Data-parallel attention: each MoE layer gathers every DP rank's tokens to the GPUs holding
        the experts and scatters the results back (vLLM's default allgather_reducescatter
        all2all backend, SGLang's DP-attention gather): two collectives a layer over the stage's
        link, each bringing in (dp - 1) x tokens x hidden x 2 bytes (vllm/distributed/device_communicators/
        all2all.py, 0.33.0; sglang/srt/layers/dp_attention.py, 0.5.23). 0 with one DP rank: TP ranks already hold every token, and the MLP's
        all-reduce combines the experts' outputs."""
        if self.dp <= 1 or not self.model.moe:
            return 0.0
        moe = self.model.moe
        link = self.stage_link
        if self.dp_nccl is not None:
            # Every DP rank's tokens, padded to this rank's count (a CUDA graph's MAX_LEN padding), gathered and then
            # reduce-scattered: nccl-tests' size is the whole buffer; past the table, the rest at (n - 1)/n over the link.
            # SGLang 0.4.0 to 0.4.4 combine with the engine's all-reduce of the whole buffer instead (dp_combine_allreduce).
            (ag, rs), n = self.dp_nccl, self.dp_group
            total = self.dp * tokens * self._act
            per_byte = (n - 1) / n / link.bytes_per_s
            back = link.allreduce_s(total, n) if rs is None else measured_collective_s(rs, total, per_byte)
            return self.dp_layers * (measured_collective_s(ag, total, per_byte) + back)
        if link.kind != "network":
            a = (self.dp - 1) * tokens * self._act
            return 2 * moe.num_moe_layers * (link.alpha_s + a / link.bytes_per_s)
        # Across nodes: the ranks in this GPU's node send over NVLink, the others through this GPU's
        # own NIC: NCCL's all-to-all-like patterns cannot pool a node's NICs (NVIDIA's sjeaugey,
        # NVIDIA/nccl-tests#130 and #267), and DeepEP's internode kernels reach 43-58 GB/s of a 50 GB/s
        # NIC (deepseek-ai/DeepEP docs/legacy.md): 0.9 of it.
        node = node_of(self.gpu)
        near = max(min(node.gpus_per_node // max(self.tp, 1), self.dp), 1)
        inner = tp_link(self.gpu, min(node.gpus_per_node, self.shape.stage_gpus), self.c)
        t = (near - 1) * tokens * self._act / inner.bytes_per_s
        t += (self.dp - near) * tokens * self._act / (float(node.scale_out_bytes_per_s) * NET_A2A_SHARE)
        return 2 * moe.num_moe_layers * (link.alpha_s + t)

    def overhead_s(self, tokens: int, requests: int) -> float:
        """What a step costs beyond its memory and compute terms: the engine's per-step and
        per-request cost, the kernel gaps of every layer, the attention calls' work per request
        (attn_per_request_s), the collectives."""
        if tokens <= GRAPH_MAX_TOKENS:
            gaps = self.layer_gaps_s
        else:
            gaps = self.layer_gaps_eager_s if tokens <= SGLANG_AR_FUSION_MAX_TOKENS else self.layer_gaps_eager_large_s
        per_request = self.c.per_request_s + self.attn_per_request_s
        return self.c.fixed_s + per_request * requests + gaps + self.collective_s(tokens)

    # ---- one step ------------------------------------------------------------------------------------

    def step(
        self, decodes: int, ctx: float, prefill_tokens: int = 0, prefill_ctx: int = 0, eager: bool = False, span: int = 0
    ) -> StepTime:
        """One step: ``decodes`` requests at mean context ``ctx`` plus ``prefill_tokens`` prompt
        tokens of one chunk ending at context ``prefill_ctx`` (0: the chunk is the prompt's start);
        ``eager``: without CUDA graphs whatever its size (a decode beside another DP rank's prompt
        step: lockstep_ranks). ``span``: the prompt tokens are whole prompts of ``span`` computed tokens
        each, ending at ``prefill_ctx``, each attending over its own context and reading its own KV, as
        the simulator prices a step's prompts one by one (0: one chunk)."""
        tokens = decodes + prefill_tokens
        if tokens < 1:
            raise KvcalcError("a step needs at least one token", "batch", "a positive batch")
        kvb, at, _, _ = self._interp(ctx)
        extra_b = extra_f = 0.0
        if prefill_tokens and 0 < span < prefill_tokens:
            end = max(prefill_ctx, span)
            extra_b = self.kv(end) * prefill_tokens / span
            extra_f = prefill_tokens * self.prefill_attn(max(end - span // 2, 1))
        elif prefill_tokens:
            end = max(prefill_ctx, prefill_tokens)
            extra_b = self.kv(end)
            extra_f = prefill_tokens * self.prefill_attn(max(end - prefill_tokens // 2, 1))
        mb, mf = self.mla_extra(decodes, prefill_tokens)
        if not prefill_tokens and self.decode_graph_max_len is not None and ctx > self.decode_graph_max_len:
            eager = True  # V0: past max_seq_len_to_capture a decode runs without its graph
        return self.time(
            self.weights(tokens) + mb,
            decodes * kvb + extra_b,
            self.mm * tokens + mf,
            decodes * at + extra_f,
            tokens,
            decodes + (1 if prefill_tokens else 0),
            prefill=prefill_tokens > 0,
            eager=eager,
            floor=self.attn_floor_s(decodes, ctx) if self.triton else 0.0,
        )

    def mla_extra(self, decodes: int, prompt_tokens: int = 0) -> tuple[float, float]:
        """(weight bytes, matmul FLOPs) a step of ``decodes`` decoding requests and ``prompt_tokens`` prompt tokens adds
        where the engine runs MLA's decode through materialized weights (Engine.mla_decode); (0, 0) elsewhere or
        without decodes. Prompt tokens run through the originals, which the streamed weights count."""
        if not self.mla_decode_flops or decodes < 1:
            return 0.0, 0.0
        return (self.mla_mixed_bytes if prompt_tokens else self.mla_decode_bytes), self.mla_decode_flops * decodes

    def time(
        self,
        weight_bytes: float,
        kv_bytes: float,
        mm_flops: float,
        attn_flops: float,
        tokens: int,
        requests: int,
        prefill: bool = False,
        eager: bool = False,
        floor: float = 0.0,
    ) -> StepTime:
        """The step formula, once: weight and KV bytes read, matmul and attention FLOPs, and the
        tokens and requests the step carries (for its all-reduces and per-request cost); ``prefill``:
        the step carries prompt tokens (without CUDA graphs in some engines: :meth:`eager_extra_s`);
        ``floor``: the least time the KV reads take (attn_floor_s)."""
        fixed, coll = self._beyond(tokens, requests)
        tm, tc, t = self._terms(
            weight_bytes, kv_bytes, mm_flops, attn_flops, fixed + coll, self.elementwise * tokens, floor=floor or None
        )
        if eager or self.eager(prefill, requests, tokens):
            extra = self.eager_extra_s(t, requests, prompt=prefill and self.prompt_eager(tokens), tokens=tokens)
            t, fixed = t + extra, fixed + extra
        elif self.async_host:
            hidden = self.hidden_host_s(t, requests)
            t, fixed = t - hidden, fixed - hidden
        bound = max((weight_bytes + kv_bytes) / self.d.bw, mm_flops / self.peak_mm + attn_flops / self.peak_attn)
        # The largest term names the step (the first of equals, in this order).
        by, top = "memory", tm
        if tc > top:
            by, top = "compute", tc
        if coll > top:
            by, top = "collective", coll
        if fixed > top:
            by = "fixed"
        return StepTime(tm, tc, fixed, coll, t, bound, by)

    def eager(self, prefill: bool, requests: int, tokens: int = 0) -> bool:
        """Whether a step runs its layers eagerly from Python: one that carries prompt tokens where
        the engine runs those without CUDA graphs (prompt_eager, at ``tokens`` in all), a decode-only one of more
        requests than the engine's largest decode graph (decode_graph_max)."""
        if prefill:
            return self.prompt_eager(tokens)
        return self.decode_graph_max is not None and requests > self.decode_graph_max

    def prompt_eager(self, tokens: int) -> bool:
        """Whether a step carrying prompt tokens, ``tokens`` in all, runs without CUDA graphs: everywhere the engine
        runs them so (prefill_eager), else past the prompt graphs' largest size (prefill_graph_max)."""
        return self.prefill_eager or (self.prefill_graph_max is not None and tokens > self.prefill_graph_max)

    def hidden_host_s(self, t: float, requests: int) -> float:
        """What of a step of ``t`` seconds the host's own time (fixed_s and per_request_s) no longer adds
        when the engine schedules ahead (async_host): it runs beside the GPU's work, so the step takes
        the longer of the two."""
        return hidden_host(self.c.fixed_s + self.c.per_request_s * requests, t)

    def eager_extra_s(self, t: float, requests: int, prompt: bool = False, tokens: int = 0) -> float:
        """What a step of ``t`` seconds that runs its layers eagerly adds: the host issues the kernels
        while the GPU runs those already issued, so after the scheduler's own work (fixed_s and
        per_request_s, before the forward) the step takes the longer of its GPU work and the host's
        issue of every kernel (eager_host_s): a prompt step's kernels (``prompt``: prompt_kernels, where a
        mixer's prompt path launches more), else a decode step's; of a step of ``tokens`` tokens (``requests`` where 0),
        past SGLANG_AR_FUSION_MAX_TOKENS with the norms the all-reduces no longer fuse (ar_fused_norms)."""
        host = self.c.fixed_s + self.c.per_request_s * requests
        if (tokens or requests) <= SGLANG_AR_FUSION_MAX_TOKENS:
            issue = self.eager_prompt_total_s if prompt else self.eager_host_total_s
        else:
            issue = self.eager_prompt_large_s if prompt else self.eager_host_large_s
        return max(0.0, issue - (t - host))

    def _beyond(self, tokens: int, requests: int) -> tuple[float, float]:
        """What a step costs beyond its memory and compute terms, split as StepTime reports it:
        (the fixed and per-request costs and kernel gaps, the collectives)."""
        coll = self.collective_s(tokens)
        return self.overhead_s(tokens, requests) - coll, coll

    def _terms(
        self,
        weight_bytes: Any,
        kv_bytes: Any,
        mm_flops: Any,
        attn_flops: Any,
        over: Any,
        elementwise_bytes: Any,
        larger: Any = None,
        floor: Any = None,
    ) -> tuple[Any, Any, Any]:
        """The memory and compute terms (all bytes, all FLOPs) and the step's time: the matmuls'
        larger term plus the attention's larger term plus the small kernels' bytes, plus ``over``,
        what the step costs beyond them (fixed costs and collectives). Floats, or numpy arrays of
        them with ``larger=numpy.maximum``."""
        tw, tkv, tel = weight_bytes * self.inv_w, kv_bytes * self.inv_bw, elementwise_bytes * self.inv_bw
        if floor is not None:
            # The KV reads take at least the attention kernel's floor (attn_floor_s).
            tkv = larger(tkv, floor) if larger is not None else (tkv if tkv >= floor else floor)
        tmm, tat = mm_flops * self.inv_mm, attn_flops * self.inv_attn
        # The matmuls' weight stream and their math overlap, but not perfectly: their time is the
        # root-sum-square of the two (matmul_s), which the measured GEMM and fused-MoE tables follow
        # through the knee where a max() of the two is up to 1.4x short.
        if larger is None:
            top = matmul_s(tw, tmm, self.mm_added) + (tkv if tkv >= tat else tat)
        else:
            top = matmul_s(tw, tmm, self.mm_added) + larger(tkv, tat)
        return tw + tkv + tel, tmm + tat, top + tel + over

    def decode_columns(
        self,
        weight_bytes: Any,
        kv_bytes: Any,
        mm_flops: Any,
        attn_flops: Any,
        batches: list[int],
        seqs: list[int] | None = None,
    ) -> tuple[list[float], list[float], list[float]]:
        """:meth:`time` of many decode-only steps (``batches[i]`` requests, one token each), as columns
        (t_step_s, t_fixed_s, t_collective_s) without a :class:`StepTime` per step: what a roofline
        grid of 100,000 points asks. The terms come as lists, or as numpy arrays (a big grid). The
        overhead is computed once per distinct batch."""
        over = {b: self._beyond(b, b) for b in dict.fromkeys(batches)}
        terms, both = self._terms, {b: f + c for b, (f, c) in over.items()}
        # The attention kernel's floor at each point's batch and context (``seqs``), where it has one.
        floors = [self.attn_floor_s(b, x) for b, x in zip(batches, seqs)] if self.triton and seqs is not None else None
        skew = {b: self.busiest_extra(b) for b in over} if self.ep > 1 else None
        if self.mla_decode_flops:
            # Materialized MLA decode weights: every point is a decode-only step of its batch (mla_extra).
            mb, mf = zip(*(self.mla_extra(b) for b in batches))
            if isinstance(weight_bytes, list):
                weight_bytes = [w + x for w, x in zip(weight_bytes, mb)]
                mm_flops = [f + x for f, x in zip(mm_flops, mf)]
            else:
                import numpy as np

                weight_bytes = weight_bytes + np.asarray(mb, dtype=np.float64)
                mm_flops = mm_flops + np.asarray(mf, dtype=np.float64)
        if not isinstance(weight_bytes, list):  # numpy arrays (a big roofline grid): the formula once, on whole columns
            import numpy as np

            if skew is not None:
                weight_bytes = weight_bytes + np.asarray([skew[b] for b in batches], dtype=np.float64)
            o = np.asarray([both[b] for b in batches], dtype=np.float64)
            el = np.asarray(batches, dtype=np.float64) * self.elementwise
            fl = np.asarray(floors, dtype=np.float64) if floors is not None else None
            t = terms(weight_bytes, kv_bytes, mm_flops, attn_flops, o, el, np.maximum, fl)[2].tolist()
        else:
            e = self.elementwise
            if skew is not None:
                weight_bytes = [w + skew[b] for w, b in zip(weight_bytes, batches)]
            fls: list[float | None] = list(floors) if floors is not None else [None] * len(batches)
            t = [
                terms(w, k, f, a, both[b], e * b, floor=fl)[2]
                for w, k, f, a, b, fl in zip(weight_bytes, kv_bytes, mm_flops, attn_flops, batches, fls)
            ]
        fixed = [over[b][0] for b in batches]
        gml = self.decode_graph_max_len if seqs is not None else None
        if self.decode_graph_max is not None or self.async_host or gml is not None:
            # Batches past the engine's largest decode graph, or (V0) of sequences past the longest it captures,
            # run eagerly; an engine that schedules ahead hides its host time: as time() has them.
            for i, b in enumerate(batches):
                if self.eager(False, b) or (gml is not None and seqs is not None and seqs[i] > gml):
                    extra = self.eager_extra_s(t[i], b)
                elif self.async_host:
                    extra = -self.hidden_host_s(t[i], b)
                else:
                    continue
                t[i] += extra
                fixed[i] += extra
        return t, fixed, [over[b][1] for b in batches]

    def prefill_s(self, prompt: int, chunk: int, decodes: int = 0, ctx: float = 0.0, start: int = 0) -> float:
        """Seconds of the steps that carry a ``prompt`` in chunks of at most ``chunk`` tokens,
        beside ``decodes`` running requests at context ``ctx`` (the last chunk's step samples the
        first token); ``start`` tokens before it are already in the KV cache (a prefix-cache hit),
        so its chunks attend to them too."""
        chunk = max(chunk, 1)
        t, done = 0.0, 0
        full, rest = divmod(prompt, chunk)
        if full:
            # Chunks of one size differ only in their attention context: time the middle one.
            mid = start + chunk * (full // 2 + 1)
            t += full * self.step(decodes, ctx, chunk, mid).t_step_s
            done = full * chunk
        if rest:
            t += self.step(decodes, ctx, rest, start + done + rest).t_step_s
        return t

    def _interp(self, ctx: float) -> tuple[float, float, float, float]:
        """(KV bytes read, attention FLOPs) of one decoding request at mean context ``ctx``, and how
        much each grows a token: exact lines for full attention, else between the whole contexts
        either side (windows and states stop growing)."""
        if self.linear:
            return self.k0 + self.k1 * ctx, self.a0 + self.a1 * ctx, self.k1, self.a1
        L = max(int(ctx), 1)
        frac = ctx - L
        g = self.kv(L + 1) - self.kv(L)
        ga = self.attn(L + 1) - self.attn(L)
        return self.kv(L) + frac * g, self.attn(L) + frac * ga, g, ga

    # ---- spans, for the simulator -----------------------------------------------------------------------

    def lines(
        self,
        n: int,
        mean_len: float,
        extra_tokens: int = 0,
        extra_bytes: float = 0.0,
        extra_flops: float = 0.0,
        eager: bool = False,
    ) -> tuple[float, float, float, float, float]:
        """(m0, m1, c0, c1, o): step k of a span takes max(m0 + m1 k, c0 + c1 k) + o seconds, for n
        decoding requests of mean length mean_len (growing by one per step) plus a fixed extra load
        (prompt tokens, their KV bytes and attention FLOPs). The matmuls' larger term, which the span
        does not change, is in both m0 and c0; the lines are the attention's KV reads and FLOPs. A span of a full-attention model keeps
        what depends only on n and extra_tokens (the simulator asks at every event). ``eager``:
        the span runs without CUDA graphs whatever its size (a decode beside another DP rank's prompt
        step: lockstep_ranks; or, under vLLM V0, a batch whose longest sequence passes decode_graph_max_len, which
        only the caller knows: the simulator's longest running request)."""
        if not eager and self.linear and self.triton is None:
            # A span of a full-attention model (the simulator's question at every event): what depends on the batch
            # and its prompt tokens alone is kept (_line), the same arithmetic as below.
            key = n if not extra_tokens else (n, extra_tokens)
            q = self._dq.get(key)
            if q is None and key not in self._dq:
                if len(self._dq) > 200_000:
                    self._dq.clear()  # (a bound on the memo: mixed steps come in many sizes)
                q = self._dq[key] = self._line(n, extra_tokens)
            if q is not None:
                g0, m1, c1, o, host = q
                m0 = g0 + (n * (self.k0 + self.k1 * mean_len) + extra_bytes) * self.inv_bw
                c0 = g0 + (n * (self.a0 + self.a1 * mean_len) + extra_flops) * self.inv_attn
                if host is not None:
                    o -= hidden_host(host, (m0 if m0 >= c0 else c0) + o)
                return m0, m1, c0, c1, o
        if self.linear:
            kv0, a0 = self.k0 + self.k1 * mean_len, self.a0 + self.a1 * mean_len
            e = self._kept_pieces(n, extra_tokens)
        else:
            kv0, a0, g, ga = self._interp(mean_len)
            e = self._pieces(n, extra_tokens, g, ga)
        w, m1, cm, c1, o = e
        # The matmuls' time (matmul_s) and the small kernels' bytes are fixed over the span; the
        # attention's two lines grow with it.
        g0 = matmul_s(w * self.inv_w, cm, self.mm_added) + self.elementwise * (n + extra_tokens) * self.inv_bw
        m0, c0 = g0 + (n * kv0 + extra_bytes) * self.inv_bw, g0 + (n * a0 + extra_flops) * self.inv_attn
        if self.triton is not None:
            # The decodes' KV reads take at least the Triton kernel's floor: its line where it is the higher
            # as the span starts (the splits held there).
            f0, f1 = self._floor_line(n, mean_len)
            kv_s = n * kv0 * self.inv_bw
            if f0 > kv_s:
                m0, m1 = m0 - kv_s + f0, f1
        requests = n + (1 if extra_tokens else 0)
        if eager or self.eager(extra_tokens > 0, requests, n + extra_tokens):
            # A span run without CUDA graphs: its first step as time() has it.
            o += self.eager_extra_s(
                (m0 if m0 >= c0 else c0) + o,
                requests,
                prompt=extra_tokens > 0 and self.prompt_eager(n + extra_tokens),
                tokens=n + extra_tokens,
            )
        elif self.async_host:
            # The host's time beside the GPU's: the span's first step as time() has it (later steps,
            # whose GPU work only grows, hide no less).
            o -= self.hidden_host_s((m0 if m0 >= c0 else c0) + o, requests)
        return m0, m1, c0, c1, o

    def _line(self, n: int, extra_tokens: int) -> tuple[float, float, float, float, float | None] | None:
        """lines()'s parts of a span of ``n`` decoding requests and ``extra_tokens`` prompt tokens of a full-attention
        model that depend on neither the mean length nor the prompts' context: the matmuls' and small kernels' time,
        the attention's growth a step, the overhead, and the host's time where it runs beside the GPU's (async_host);
        None where the step runs eagerly."""
        requests = n + (1 if extra_tokens else 0)
        if self.eager(extra_tokens > 0, requests, n + extra_tokens):
            return None
        w, m1, cm, c1, o = self._kept_pieces(n, extra_tokens)
        g0 = matmul_s(w * self.inv_w, cm, self.mm_added) + self.elementwise * (n + extra_tokens) * self.inv_bw
        return g0, m1, c1, o, (self.c.fixed_s + self.c.per_request_s * requests) if self.async_host else None

    def _kept_pieces(self, n: int, extra_tokens: int) -> tuple[float, float, float, float, float]:
        """_pieces of a full-attention model (its growth a step the same at every length), kept by batch and prompt
        tokens."""
        key = n if not extra_tokens else (n, extra_tokens)
        e = self._dl.get(key)
        if e is None:
            if len(self._dl) > 200_000:
                self._dl.clear()  # (a bound on the memo: mixed steps come in many sizes)
            e = self._dl[key] = self._pieces(n, extra_tokens, self.k1, self.a1)
        return e

    def _pieces(self, n: int, extra_tokens: int, g: float, ga: float) -> tuple[float, float, float, float, float]:
        """lines()'s parts that do not depend on the mean length: the weights read, the KV and
        attention growth a step, the matmul time and the overhead."""
        tokens = n + extra_tokens
        w = self._w.get(tokens)
        mb, mf = self.mla_extra(n, extra_tokens)
        return (
            (self.weights(tokens) if w is None else w) + mb,
            n * g * self.inv_bw,
            (self.mm * tokens + mf) * self.inv_mm,
            n * ga * self.inv_attn,
            self.overhead_s(tokens, n + (1 if extra_tokens else 0)),
        )

    @staticmethod
    def span_s(ln: tuple[float, float, float, float, float], K: int) -> float:
        """Seconds of steps 0..K-1 of a span: each line summed over its steps, from step a to b
        (b - a) l0 + l1 (a + b - 1)(b - a) / 2, the larger line on each side of their crossing."""
        m0, m1, c0, c1, o = ln
        if m1 != c1:
            k = (c0 - m0) / (m1 - c1)  # the lines cross at step k
            if 0 < k < K - 1:
                cut = math.ceil(k)
                if m0 >= c0:
                    return (cut * m0 + m1 * (cut - 1) * cut / 2) + ((K - cut) * c0 + c1 * (cut + K - 1) * (K - cut) / 2) + K * o
                return (cut * c0 + c1 * (cut - 1) * cut / 2) + ((K - cut) * m0 + m1 * (cut + K - 1) * (K - cut) / 2) + K * o
        mid = (K - 1) / 2
        if m0 + m1 * mid >= c0 + c1 * mid:
            return K * m0 + m1 * (K - 1) * K / 2 + K * o
        return K * c0 + c1 * (K - 1) * K / 2 + K * o

    def steps_until(self, ln: tuple[float, float, float, float, float], dt: float, limit: int, reached: bool = False) -> int:
        """The fewest steps (1..limit) whose time reaches dt (limit if none does; ``reached``: the
        caller knows limit steps do): the span's time is quadratic in its length on each side of the
        step where the lines cross, so the count is solved for, then checked."""
        return self.span_until(ln, dt, limit, reached)[0]

    def span_until(
        self, ln: tuple[float, float, float, float, float], dt: float, limit: int, reached: bool = False
    ) -> tuple[int, float]:
        """:meth:`steps_until`'s count K and the seconds of those K steps (``span_s(ln, K)``, which
        checking the count computed already)."""
        span_s = self.span_s
        if not reached:
            t = span_s(ln, limit)
            if t < dt:
                return limit, t
        m0, m1, c0, c1, o = ln
        cut = 0
        if m1 != c1:
            k = (c0 - m0) / (m1 - c1)
            if 0 < k < limit - 1:
                cut = math.ceil(k)
        first = (m0, m1) if m0 >= c0 else (c0, c1)
        before = span_s(ln, cut) if cut else dt
        if before < dt:
            # Past the crossing: the second line from step ``cut`` on.
            l0, l1 = (c0, c1) if first == (m0, m1) else (m0, m1)
            rest, base = dt - before, cut
        else:
            if not cut:
                mid = (limit - 1) / 2
                first = (m0, m1) if m0 + m1 * mid >= c0 + c1 * mid else (c0, c1)
            l0, l1 = first
            rest, base = dt, 0
        # K steps from ``base``: K (l0 + l1 base + o) + l1 K (K - 1) / 2 >= rest.
        a = l1 / 2
        bq = l0 + l1 * base + o - l1 / 2
        if abs(a) < 1e-30:
            K = rest / bq if bq > 0 else limit
        else:
            disc = bq * bq + 4 * a * rest
            K = (-bq + math.sqrt(disc)) / (2 * a) if disc >= 0 else limit
        guess = min(max(base + math.ceil(K - 1e-9), 1), limit)
        # The solved count is exact up to rounding: step to the fewest that reach dt.
        t = span_s(ln, guess)
        if t >= dt:
            while guess > 1:
                before = span_s(ln, guess - 1)
                if before < dt:
                    break
                guess, t = guess - 1, before
        else:
            while guess < limit:
                guess += 1
                t = span_s(ln, guess)
                if t >= dt:
                    break
        return guess, t

    def _gemm_from(self) -> str:
        """Where the matmuls' share and latency came from, when the GPU's measurements gave them."""
        c, fp8 = self.c, self.fp8_measured
        fp4 = self.compute_dtype == "fp4" and self.gpu.gemm_fp4 is not None
        if fp4 and self.fp4_share < 1.0 and self.gpu.gemm is not None and c.eta_gemm == self.gpu.gemm.bandwidth_share:
            lat = self.gpu.gemm_fp4.latency_us if self.gpu.gemm_fp4 is not None else 0.0
            return f", as measured on {self.gpu.name}; {self.fp4_share:.0%} of the matmuls at the NVFP4 latency, {lat:g} us"
        g = gemm_block(self.gpu, fp8, fp4, self.trtllm)
        if g is not None and c.eta_gemm == g.bandwidth_share and c.gemm_latency_s == g.latency_us * 1e-6:
            which = (
                " for TensorRT-LLM's own fp8 matmuls"
                if fp8 and g is self.gpu.gemm_fp8_trtllm
                else " for fp8 matmuls"
                if fp8 and g is self.gpu.gemm_fp8
                else " for NVFP4 matmuls"
                if fp4
                else ""
            )
            return f", as measured on {self.gpu.name}{which}"
        return ""

    def _fp4_said(self, c: StepConstants) -> str:
        """Where a partly NVFP4 checkpoint's other dense matrices run at 16 bits (fp4_flops)."""
        if self.fp4_flops >= 1.0:
            return ""
        return f"; {1.0 - self.fp4_flops:.0%} of the dense FLOPs, outside NVFP4 layers, at 16-bit peak x {c.eta_c:g}"

    def _compute_from(self) -> str:
        """Where the matmuls' share of the peak came from, when the GPU's measurements gave it."""
        g = gemm_block(self.gpu, self.fp8_measured, trtllm=self.trtllm)
        if g is not None and g.compute_share is not None and self.c.eta_c_gemm == g.compute_share:
            return f", as measured on {self.gpu.name}" + (", the two added" if self.mm_added else "")
        return ""

    @property
    def _nccl_name(self) -> str:
        """NCCL's name on this GPU: RCCL, its ROCm port, on AMD's."""
        return "RCCL" if self.gpu.vendor == "AMD" else "NCCL"

    def _allreduces_said(self) -> str:
        if not self.norm_allreduces:
            return "2 all-reduces"
        what = "one" if self.norm_allreduces == 1 else str(self.norm_allreduces)
        how = ""
        if self.norm_padded:
            how = f", padded to a whole number of {CUSTOM_AR_ALIGN} B"
        elif self.norm_nccl is not None:
            us = self.norm_nccl.allreduce_s(self.norm_allreduce_bytes, self.tp) * 1e6
            how = (
                f"; through NCCL where not a whole number of {CUSTOM_AR_ALIGN} B, which the custom all-reduce declines "
                f"(a step of {'1 or 2 tokens' if self.norm_allreduce_bytes < 8 else '1 token'} in a CUDA graph), "
                f"{us:.2f} us as nccl-tests measures it on {self.gpu.name} at TP {self.tp}"
            )
        return (
            f"{2 + self.norm_allreduces} all-reduces ({what} of {self.norm_allreduce_bytes} B a token: the q/k norm over "
            f"all heads{how})"
        )

    def _quant_said(self) -> str:
        """The small kernels that quantize fp8 (NVFP4) matmuls' activations, where the step has them (those inside
        the fused routed-expert calls are in the call's latency)."""
        q, fmt = self.quant_small, "NVFP4" if self.compute_dtype == "fp4" else "fp8"
        return f", {q:,} of them quantizing the {fmt} matmuls' activations" if q else ""

    def _latencies_said(self) -> str:
        """Each kernel kind the step runs, how many a step and the latency of each: the counts times the
        latencies add up to layer_gaps_s."""
        c, k = self.c, self.kernels
        said = [f"{k.gemm:,} matmuls at {(c.gemm_latency_s or 0.0) * 1e6:g} us"]
        if k.attention:
            said.append(f"{k.attention:,} attention calls at {c.attn_latency_s * 1e6:g} us")
        if k.mla_attention:
            measured = gpu_mla_s(self.gpu, self.mla_kernel)
            where = ""
            if measured is not None and c.mla_attn_latency_s == measured:
                own = self.mla_kernel == "sglang" and self.gpu.mla is not None and self.gpu.mla.sglang_latency_us is not None
                who = "SGLang's, " if own else ""
                where = f" ({who}as measured on {self.gpu.name})"
            said.append(f"{k.mla_attention:,} MLA attention calls at {(c.mla_attn_latency_s or 0.0) * 1e6:g} us{where}")
        if k.moe:
            if k.moe_flashinfer:
                each = f"{c.moe_flashinfer_s * 1e6:g} us (FlashInfer's TensorRT-LLM kernel)"
            elif k.moe_flashinfer_bf16:
                each = f"{c.moe_flashinfer_bf16_s * 1e6:g} us (FlashInfer's TensorRT-LLM 16-bit kernel)"
            elif k.moe_flashinfer_fp4:
                each = f"{c.moe_flashinfer_fp4_s * 1e6:g} us (the TensorRT-LLM-gen NVFP4 kernel)"
            elif k.moe_cutlass_fp4:
                each = f"{c.moe_cutlass_fp4_s * 1e6:g} us (a CUTLASS NVFP4 MoE)"
            elif k.moe_quant:
                kind = "MXFP4" if self.mxfp4_triton else "fp8"
                each = f"{(c.moe_latency_s + c.moe_quant_s) * 1e6:g} us ({c.moe_quant_s * 1e6:g} of it for {kind})"
                if k.moe_quant < k.moe:
                    each = f"{c.moe_latency_s * 1e6:g} us, {k.moe_quant:,} of them at {kind} {c.moe_quant_s * 1e6:g} us more"
            else:
                each = f"{c.moe_latency_s * 1e6:g} us"
            if self.moe_backend_unpriced:
                each += " (--moe-backend trtllm is not priced for these experts here: the default kernel's figures)"
            said.append(f"{k.moe:,} fused routed-expert calls at {each}, their own kernels within them")
        if k.router_compiled:
            said.append(
                f"{k.router_compiled:,} routers at {ROUTER_COMPILED_S * 1e6:g} us each (SGLang's compiled grouped top-k, in place "
                f"of {k.router_kernels:,} small kernels)"
            )
        fused = (
            f" (the layers' norms but the first inside the all-reduces: SGLang's FlashInfer fusion; {self.ar_fused_norms:,} "
            f"more in a step of over {SGLANG_AR_FUSION_MAX_TOKENS:,} tokens)"
            if self.ar_fusion
            else ""
        )
        return ", ".join([*said, f"{k.small:,} small kernels at {c.kernel_gap_s * 1e6:g} us{fused}"]) + self._quant_said()

    def _attn_request_said(self) -> str:
        """The attention calls' work per request, where the step has attention calls it applies to."""
        if not self.attn_heads:
            return ""
        c, a = self.c, self.gpu.attention
        said = f"{(c.attn_request_s or 0.0) * 1e9:g} ns each"
        if a is not None and c.attn_request_s == a.request_head_ns * 1e-9:
            said += f", as measured on {self.gpu.name}"
        return (
            f" + {self.attn_per_request_s * 1e6:.3g} us per request in the attention calls ({self.attn_heads:,} KV heads, {said})"
        )

    def describe(self) -> str:
        c = self.c
        parts = [
            f"step time = the {'sum' if self.mm_added else 'root-sum-square'} of (weight bytes / (bandwidth x "
            f"{self._eta_gemm(c):g}{self._gemm_from()}), matmul FLOPs / ({self.compute_dtype} peak x "
            f"{self.eta_mm(c):g}{self._compute_from()}{self._fp4_said(c)})) + max(KV bytes / (bandwidth x {c.eta_bw:g}), attention FLOPs / (16-bit peak x {c.eta_c:g})) "
            f"+ {self.elementwise:,.0f} B a token through the small kernels / (bandwidth x {c.eta_bw:g})",
            f"+ {c.fixed_s * 1e3:g} ms + {c.per_request_s * 1e6:g} us per request + {self.layer_gaps_s * 1e3:.3g} ms "
            f"of kernel latencies per step ({self._latencies_said()})" + self._attn_request_said(),
        ]
        # A release without a custom all-reduce here whose GPU measures no NCCL all-reduce at this size: the custom
        # all-reduce's figures (measured or not), said so.
        unmeasured = (
            f" ({self._nccl_name} would carry them, but {self.gpu.name}'s spec measures no NCCL all-reduce at TP {self.tp}: charged "
            "as the custom all-reduce's)"
            if self.tp > 1 and not self.custom_ar and not self.all_nccl and self.link.kind == "nvlink"
            else ""
        )
        if self.tp > 1 and self.link.measured is not None:
            ys = self.link.measured[1]
            whose = f" through {self._nccl_name}, the release having no custom all-reduce here," if self.all_nccl else ""
            if self.trtllm_table and not self.all_nccl:
                whose = " through TensorRT-LLM's own all-reduce,"
            parts.append(
                f"+ {self._allreduces_said()} per layer{whose} over {link_name(self.gpu, self.link.kind)}, as measured on "
                f"{self.gpu.name} at TP {self.tp} ({ys[0] * 1e6:.3g} us at {self.link.measured[0][0]:,} B, linear between the "
                f"measured sizes){unmeasured}"
            )
        elif self.tp > 1:
            parts.append(
                f"+ {self._allreduces_said()} per layer over {link_name(self.gpu, self.link.kind)} ({self.link.alpha_s * 1e6:g} us + bytes / "
                f"{self.link.bytes_per_s / 1e9:g} GB/s){unmeasured}"
            )
        if self.dp > 1 and self.model.moe and self.dp_nccl is not None:
            (ag, rs), n = self.dp_nccl, self.dp_group
            if rs is None:
                parts.append(
                    f"+ NCCL's all-gather of every DP rank's tokens among {n} GPUs in each of {self.dp_layers} layers, as "
                    f"nccl-tests measures it on {self.gpu.name} ({ag[1][0] * 1e6:.3g} us at {ag[0][0]:,} B, linear between "
                    "the measured sizes), and the MLP's all-reduce of them all over the same GPUs"
                )
            else:
                parts.append(
                    f"+ NCCL's all-gather and reduce-scatter of every DP rank's tokens among {n} GPUs in each of "
                    f"{self.dp_layers} layers, as nccl-tests measures them on {self.gpu.name} ({ag[1][0] * 1e6:.3g} and "
                    f"{rs[1][0] * 1e6:.3g} us at {ag[0][0]:,} B, linear between the measured sizes)"
                )
        elif self.dp > 1 and self.model.moe:
            parts.append(
                f"+ a gather and a scatter of every DP rank's tokens per MoE layer over {link_name(self.gpu, self.stage_link.kind)} "
                f"({self.stage_link.alpha_s * 1e6:g} us + bytes / {self.stage_link.bytes_per_s / 1e9:g} GB/s)"
            )
        if self.ep > 1:
            parts.append(
                "; the busiest EP rank reads the most distinct experts (uniform routing: the expected largest "
                f"of the ranks' counts) and carries {c.moe_imbalance:g}x the mean expert FLOPs (moe_imbalance)"
            )
        if self.model.moe:
            share, measured = self._moe_share(c)
            where = f"; the fused-MoE kernel's 16-bit share as measured on {self.gpu.name}" if measured else ""
            parts.append(f"; routed experts at {share:.3g} of the peak (moe_eta_c{where})")
        if self.d.mla_heads:
            parts.append(
                f"; sparse MLA attention over {self.d.mla_heads} query heads a rank, prompt tokens as decode tokens in the "
                "absorbed form (vLLM's FlashMLA sparse kernel runs a multiple of 64 heads on Hopper, 128 on Blackwell)"
            )
        if self.triton is not None:
            blocks, per_token, _, per_sm = self.triton
            fixed = self.triton_fixed_splits
            whose, split = (
                (
                    "vLLM V0's Triton MLA backend (this release's only MLA kernel here)"
                    if self.triton_launch == "vllm-v0"
                    else "SGLang's Triton backend (this release's MLA default)",
                    f"split in {fixed} whatever the batch",
                )
                if fixed is not None
                else ("SGLang's Triton backend", f"split in up to {TRITON_MAX_SPLITS} by the batch")
            )
            parts.append(
                f"; decode attention on {whose}: the KV reads take at least the longest part of a "
                f"request's context ({split}, {blocks} block{'s' if blocks != 1 else ''} a request) x "
                f"{per_token:,.0f} B a token / {c.triton_cta_bytes_per_s / 1e9:g} GB/s (one block's rate, measured on an H100), "
                f"once for every wave of blocks past the {per_sm} a "
                f"{'compute unit' if self.gpu.vendor == 'AMD' else 'multiprocessor'} runs at once"
            )
        if self.pp > 1:
            net = self.placement.pp_network_handoffs
            parts.append(f"+ {self.pp - 1} PP hand-offs" + (f" ({net} between nodes)" if net else ""))

        def issue(total_s: float) -> str:
            return f"the host's issue of its kernels ({total_s * 1e3:.3g} ms: {c.eager_host_s * 1e6:g} us a kernel)"

        prompt_issue, decode_issue = issue(self.eager_prompt_total_s), issue(self.eager_host_total_s)
        if self.prefill_eager:
            parts.append(
                f"; a step carrying prompt tokens runs without CUDA graphs in this release and takes at least {prompt_issue}"
            )
        if self.prefill_graph_max is not None:
            parts.append(
                f"; a step carrying more than {self.prefill_graph_max:,} tokens with prompt tokens runs without CUDA graphs "
                f"(this release captures an MLA model's prompt steps up to {self.prefill_graph_max:,} tokens) and takes at "
                f"least {prompt_issue}"
            )
        if self.async_host:
            parts.append(
                f"; the host's {c.fixed_s * 1e3:g} ms + {c.per_request_s * 1e6:g} us per request run beside the GPU's "
                "work (the release schedules the next step ahead), so a step takes the longer of the two"
            )
        if self.decode_graph_max is not None:
            n = self.decode_graph_max
            parts.append(
                f"; a decode step of more than {n:,} requests{' a DP rank' if self.dp > 1 else ''} runs without CUDA graphs "
                f"(this release captures decode batches up to {n:,} here) and takes at least "
                + ("that" if self.prefill_eager and prompt_issue == decode_issue else decode_issue)
            )
        if self.decode_graph_max_len is not None:
            parts.append(
                f"; a decode step whose longest sequence passes {self.decode_graph_max_len:,} tokens runs without CUDA "
                "graphs (max_seq_len_to_capture, or max_model_len if less) and takes at least "
                + ("that" if self.prefill_eager and prompt_issue == decode_issue else decode_issue)
            )
        return " ".join(parts).replace(" ; ", "; ") + f" (constants: {c.origin})"
