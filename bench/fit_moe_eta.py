"""Fit the routed experts' share of the peak (StepConstants.moe_eta_c's default, kvcalc/engine/steptime.py
MOE_ETA) to AIConfigurator's measured vLLM fused-MoE tables.

The tables: ai-dynamo/aiconfigurator at 095f58a,
aic-core/src/aiconfigurator_core/systems/data/{h100_sxm,h200_sxm}/moe/vllm/0.24.0/moe_perf.parquet
(`git show 095f58a:<path> > <gpu>-moe.parquet`). Needs pandas, pyarrow and scipy, which kvcalc does not:

    python bench/fit_moe_eta.py DIR      # DIR holds h100_sxm-moe.parquet and h200_sxm-moe.parquet
    python bench/fit_moe_eta.py DIR TAG  # DIR holds h100_sxm-TAG-moe.parquet and/or h200_sxm-TAG-moe.parquet

With TAG (another release's tables, e.g. vllm-0.14.0 from .../moe/vllm/0.14.0/, sglang-0.5.9 from
.../moe/sglang/0.5.9/) it fits that release's rows the same way and also prints how the default
(0.24's) a and b fit them, by batch size: whether the release's kernels differ from 0.24's.

Every Triton row without expert parallelism, power-law (1.01) routing, is modelled as kvcalc's step
model charges one fused-MoE call: its floor (28 us, moe_latency_s; 38 us for block-scaled fp8,
moe_latency_s + moe_quant_s) + the root-sum-square of the touched experts' bytes at the GPU's
measured GEMM share of its bandwidth and their FLOPs at the peak x a x n / (n + b) (steptime.matmul_s;
the larger of the two until 2026-12-04, which fitted a 0.598, b 509 and a 0.280, b 448 with a median
|log error| of 0.181 and 0.150 where the root-sum-square gives 0.147 and 0.112), n the expert's
intermediate width on one GPU; a and b minimise the squared log error. Prints (a, b) per dtype and the median |log error| against
one share of 0.15, overall and by batch size, and at 2,048 tokens or more by the rows an expert gets (tokens x k / E) and
its width: at 16 bits the fit's model / measured is 1.19 and 0.98 below 512 rows (narrow and wide experts), 1.43 and
1.07 above (0.24's tables, 2026-12-05): at prompt-sized batches the width form charges narrow experts more than
the kernel takes, never less, so a step's prompt tokens are not made faster here than the tables measure.

The floors: for each dtype it also prints the median, over the rows of 1 to 16 tokens, of the measured
time less the root-sum-square term at the default (a, b): 26.1 us at 16 bits (28 us kept, the straight-line
fits' figure) and 38.2 us for block-scaled fp8 (SGLang 0.5.9's tables: 34.3 and 42.3 us), which set fp8's
floor at 38 us: moe_quant_s, 10 us over moe_latency_s. Until 2026-12-05 both took 28 us and fp8's fit was
a 0.307, b 473 (median |log| 0.112).

    python bench/fit_moe_eta.py DIR b200-flashinfer   # FlashInfer's TensorRT-LLM fp8 kernel on B200 (flashinfer_b200)
    python bench/fit_moe_eta.py DIR b200-flashinfer-bf16   # its 16-bit kernel (flashinfer_b200 bf16)
    python bench/fit_moe_eta.py DIR b200-triton       # the Triton kernel on B200, SGLang 0.5.9's table (triton_b200)
    python bench/fit_moe_eta.py DIR b200-fp4          # the NVFP4 MoE kernels on B200 (fp4_b200)

vLLM's Triton MXFP4 rows (OpenAI's triton_kernels, the kernel vLLM runs gpt-oss's experts with on Hopper; 648
rows of gpt-oss-20b's and -120b's shapes, weights at 4.25 bits) take the same treatment: the median over 1 to 16
tokens of the measured time less the root-sum-square term is 37.8 us, so their calls take moe_quant_s too (the
model / measured at one token goes from 0.77 at 28 us to 1.02). Their share is not fitted: the width form's
least-squares fit (a 0.394, b 206, printed as "fit") describes them worse than one 0.15 does (median |log| 0.171
against 0.143; model / measured 0.82 against 0.91 at 64 to 511 tokens), so MXFP4 experts keep 0.15.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

# GPU: (bandwidth B/s, dense bf16 peak, dense fp8 peak, the spec's measured GEMM bandwidth share)
GPUS = {"h200_sxm": (4.8e12, 989e12, 1979e12, 0.83), "h100_sxm": (3.35e12, 989e12, 1979e12, 0.86)}


# The Triton fused-MoE kernel as each release's collector names it (0.14-0.22: vllm_fused_moe; SGLang's own copy)
TRITON = ("triton", "vllm_fused_moe", "sglang_fused_moe_triton")
# The default's (a, b) by dtype: vLLM 0.24's fit (kvcalc/engine/steptime.py MOE_ETA)
DEFAULT = {"bfloat16": (0.666, 545.0), "fp8_block": (0.311, 459.0), "w4a16_mxfp4": (0.394, 206.0)}
# The call's floor by dtype: moe_latency_s, and for fp8 experts moe_latency_s + moe_quant_s
FLOOR = {"bfloat16": 28e-6, "fp8_block": 38e-6, "w4a16_mxfp4": 38e-6}
# Bytes a weight: MXFP4 is 4 bits and an 8-bit scale a block of 32 (4.25 bits)
WEIGHT_BYTES = {"bfloat16": 2.0, "fp8_block": 1.0, "w4a16_mxfp4": 4.25 / 8}


def rows(folder: Path, dtype: str, tag: str = "") -> pd.DataFrame:
    frames = []
    for gpu, (bw, bf16, fp8, share) in GPUS.items():
        path = folder / (f"{gpu}-{tag}-moe.parquet" if tag else f"{gpu}-moe.parquet")
        if tag and not path.exists():
            continue
        d = pd.read_parquet(path)
        triton = d.kernel_source.str.contains(TRITON[0]) | d.kernel_source.isin(TRITON[1:])
        if dtype == "w4a16_mxfp4":  # OpenAI's triton_kernels, vLLM's MXFP4 kernel on Hopper (not Marlin's rows)
            triton = d.kernel_source.str.contains("oaitriton")
        d = d[(d.moe_dtype == dtype) & triton & (d.distribution == "power_law_1.01")]
        d = d[d.moe_ep_size == 1]
        # Block-scaled fp8 experts read at the bf16 GEMM share, as the step model reads a block-fp8 checkpoint's
        # weights (steptime.fp8_block_scaled): the GPU spec's gemm_fp8 figures cover per-tensor scaling only.
        frames.append(d.assign(bw=bw, peak=fp8 if dtype == "fp8_block" else bf16, share=share))
    d = pd.concat(frames)
    n = d.inter_size / d.moe_tp_size
    experts, k, tokens, hidden = d.num_experts, d.topk, d.num_tokens, d.hidden_size
    touched = experts * (1 - (1 - k / experts) ** tokens)
    weight_bytes = WEIGHT_BYTES[dtype]
    return d.assign(
        n=n,
        t=d.latency * 1e-3,
        bytes=touched * 3 * hidden * n * weight_bytes,
        flops=2 * tokens * k * 3 * hidden * n,
    )


def body(d: pd.DataFrame, eta: pd.Series) -> pd.Series:
    return np.hypot(d.bytes / (d.bw * d.share), d.flops / (d.peak * eta))


def model(d: pd.DataFrame, eta: pd.Series, floor: float) -> pd.Series:
    return floor + body(d, eta)


def main(folder: Path, tag: str = "") -> None:
    for dtype in ("bfloat16", "fp8_block", "w4a16_mxfp4"):
        d = rows(folder, dtype, tag)
        if d.empty:
            continue

        floor = FLOOR[dtype]
        da, db = DEFAULT[dtype]
        small = d.num_tokens <= 16
        implied = np.median((d.t - body(d, da * d.n / (d.n + db)))[small]) * 1e6
        print(f"{dtype}: measured less the root-sum-square term, 1-16 tokens, median {implied:.1f} us (floor {floor * 1e6:g} us)")

        def residuals(p: np.ndarray, d: pd.DataFrame = d, floor: float = floor) -> pd.Series:
            return np.log(model(d, p[0] * d.n / (d.n + p[1]), floor) / d.t)

        fit = least_squares(residuals, [0.5, 300.0], bounds=([0.01, 1.0], [1.0, 20000.0]))
        a, b = fit.x
        print(f"{dtype}: {len(d)} rows, a {a:.3f}, b {b:.0f}")
        others = (("0.15", 0.15 + 0 * d.n),) if not tag else (("default (0.24's)", da * d.n / (d.n + db)),)
        for name, eta in (("fit", a * d.n / (d.n + b)), *others):
            ratio = model(d, eta, floor) / d.t
            line = f"  {name}: median |log| {np.median(np.abs(np.log(ratio))):.3f}"
            for lo, hi in ((1, 2), (2, 17), (1, 64), (64, 512), (512, 2048), (2048, 1 << 20)):
                s = (d.num_tokens >= lo) & (d.num_tokens < hi)
                line += f"; tokens {lo}-{hi - 1}: model / measured {np.median(ratio[s]):.2f}"
            print(line)
            # Where the width form misses at prompt-sized batches: by the rows an expert gets (tokens x k / E)
            # and its width, 2,048 tokens or more. The kernel's share of the peak rises with an expert's rows
            # as well as its width, which the width form does not carry.
            big = d.num_tokens >= 2048
            per = d.num_tokens * d.topk / d.num_experts
            for (mlo, mhi), (nlo, nhi) in (
                ((0, 512), (0, 384)),
                ((0, 512), (384, 1 << 20)),
                ((512, 1 << 20), (0, 384)),
                ((512, 1 << 20), (384, 1 << 20)),
            ):
                s = big & (per >= mlo) & (per < mhi) & (d.n >= nlo) & (d.n < nhi)
                if s.any():
                    print(
                        f"    {name}, 2,048+ tokens, {mlo}-{mhi - 1} rows an expert, width {nlo}-{nhi - 1}: "
                        f"model / measured {np.median(ratio[s]):.2f} ({int(s.sum())} rows)"
                    )


def by_batch(name: str, ratio: pd.Series, d: pd.DataFrame) -> str:
    """One line: the median |log(model / measured)| of ``ratio`` and its median by batch size."""
    line = f"  {name}: median |log| {np.median(np.abs(np.log(ratio))):.3f}"
    for lo, hi in ((1, 17), (17, 512), (512, 2048), (2048, 1 << 20)):
        s = (d.num_tokens >= lo) & (d.num_tokens < hi)
        line += f"; tokens {lo}-{hi - 1}: model / measured {np.median(ratio[s]):.2f}"
    return line


def flashinfer_b200(folder: Path, bf16: bool = False) -> None:
    """FlashInfer's TensorRT-LLM fp8 block-scale kernel on B200 (StepConstants.moe_flashinfer_s, MOE_ETA['fp8_flashinfer']):
    the B200 table's rows of that kernel (b200_sxm-vllm-0.24.0-moe.parquet in DIR, from
    .../systems/data/b200_sxm/moe/vllm/0.24.0/), power-law 1.01 routing, no EP; the experts' bytes at B200's GEMM share
    (0.76 of 8 TB/s) and their FLOPs at the fp8 peak (4.5 PFLOP/s). The floor is the median over 1 to 16 tokens of the
    measured time less the root-sum-square term, (a, b) refitted at it, the two alternated until they settle.

    ``bf16``: the same kernel family's 16-bit experts (trtllmbf16experts; StepConstants.moe_flashinfer_bf16_s,
    MOE_ETA['bf16_flashinfer']), two bytes a weight, at the 16-bit peak (2.25 PFLOP/s)."""
    d = pd.read_parquet(folder / "b200_sxm-vllm-0.24.0-moe.parquet")
    dtype, source, peak, weight = (
        ("bfloat16", "trtllmbf16experts", 2.25e15, 2.0) if bf16 else ("fp8_block", "trtllmfp8expertsmonolithic", 4.5e15, 1.0)
    )
    d = d[(d.moe_dtype == dtype) & d.kernel_source.str.contains(source)]
    d = d[(d.distribution == "power_law_1.01") & (d.moe_ep_size == 1)]
    n = d.inter_size / d.moe_tp_size
    touched = d.num_experts * (1 - (1 - d.topk / d.num_experts) ** d.num_tokens)
    d = d.assign(n=n, t=d.latency * 1e-3, bw=8e12, share=0.76, peak=peak)
    d = d.assign(bytes=touched * 3 * d.hidden_size * n * weight, flops=2 * d.num_tokens * d.topk * 3 * d.hidden_size * n)
    small = d.num_tokens <= 16
    a, b = DEFAULT[dtype]
    for _ in range(6):
        floor = float(np.median((d.t - body(d, a * d.n / (d.n + b)))[small]))

        def residuals(p: np.ndarray, floor: float = floor) -> pd.Series:
            return np.log(model(d, p[0] * d.n / (d.n + p[1]), floor) / d.t)

        a, b = least_squares(residuals, [a, b], bounds=([0.01, 1.0], [1.0, 20000.0])).x
    print(f"FlashInfer TensorRT-LLM {dtype} on B200: {len(d)} rows, floor {floor * 1e6:.1f} us, a {a:.3f}, b {b:.0f}")
    da, db = DEFAULT[dtype]
    tfl = FLOOR[dtype]
    for name, fl, eta in (
        ("fit", floor, a * d.n / (d.n + b)),
        (f"Triton's {tfl * 1e6:g} us and fit", tfl, da * d.n / (d.n + db)),
    ):
        print(by_batch(name, model(d, eta, fl) / d.t, d))


def triton_b200(folder: Path) -> None:
    """The Triton fused-MoE kernel on B200 (GPUSpec.moe in gpu_specs/b200.yaml): SGLang 0.5.9's rows of its own copy of
    the kernel (b200_sxm-sglang-0.5.9-moe.parquet in DIR, from .../systems/data/b200_sxm/moe/sglang/0.5.9/; vLLM 0.24's
    B200 table times FlashInfer's kernels only), power-law 1.01 routing, no EP; the experts' bytes at B200's GEMM share
    (0.76 of 8 TB/s) and their FLOPs at its peak (2.25 PFLOP/s 16-bit, 4.5 fp8), the floors kept (28 us, 38 us), (a, b)
    fitted as main() fits Hopper's and set beside the default's fit of the same rows."""
    d0 = pd.read_parquet(folder / "b200_sxm-sglang-0.5.9-moe.parquet")
    for dtype, peak, weight in (("bfloat16", 2.25e15, 2.0), ("fp8_block", 4.5e15, 1.0)):
        d = d0[(d0.moe_dtype == dtype) & (d0.kernel_source == "sglang_fused_moe_triton")]
        d = d[(d.distribution == "power_law_1.01") & (d.moe_ep_size == 1)]
        n = d.inter_size / d.moe_tp_size
        touched = d.num_experts * (1 - (1 - d.topk / d.num_experts) ** d.num_tokens)
        d = d.assign(n=n, t=d.latency * 1e-3, bw=8e12, share=0.76, peak=peak)
        d = d.assign(bytes=touched * 3 * d.hidden_size * n * weight, flops=2 * d.num_tokens * d.topk * 3 * d.hidden_size * n)
        floor = FLOOR[dtype]

        def residuals(p: np.ndarray, d: pd.DataFrame = d, floor: float = floor) -> pd.Series:
            return np.log(model(d, p[0] * d.n / (d.n + p[1]), floor) / d.t)

        a, b = least_squares(residuals, [0.5, 300.0], bounds=([0.01, 1.0], [1.0, 20000.0])).x
        da, db = DEFAULT[dtype]
        print(f"Triton on B200, {dtype}: {len(d)} rows, a {a:.3f}, b {b:.0f}")
        for name, eta in (("fit", a * d.n / (d.n + b)), ("default (Hopper's)", da * d.n / (d.n + db))):
            print(by_batch(name, model(d, eta, floor) / d.t, d))


def fp4_b200(folder: Path) -> None:
    """NVFP4 experts on B200 at 4.5 bits a weight and the fp4 peak (9 PFLOP/s), power-law 1.01 routing, no EP, each
    kernel's floor and (a, b) fitted as flashinfer_b200 fits them: the TensorRT-LLM-gen kernel in vLLM 0.24's table
    (trtllmnvfp4expertsmonolithic: StepConstants.moe_flashinfer_fp4_s, MOE_ETA['fp4_flashinfer']), vLLM 0.19's and
    TensorRT-LLM 1.2.0rc5's (its min-latency mode); the CUTLASS MoE in TensorRT-LLM 1.2.0rc5's table
    (moe_torch_flow_cutlass: moe_cutlass_fp4_s, MOE_ETA['fp4_cutlass']) and FlashInfer's in vLLM 0.24's. DIR holds
    b200_sxm-vllm-0.24.0-moe.parquet, b200_sxm-vllm-0.19.0-moe.parquet and b200_sxm-trtllm-1.2.0rc5-moe.parquet (from
    .../systems/data/b200_sxm/moe/{vllm/0.24.0,vllm/0.19.0,trtllm/1.2.0rc5}/moe_perf.parquet)."""
    v24 = pd.read_parquet(folder / "b200_sxm-vllm-0.24.0-moe.parquet")
    v19 = pd.read_parquet(folder / "b200_sxm-vllm-0.19.0-moe.parquet")
    trt = pd.read_parquet(folder / "b200_sxm-trtllm-1.2.0rc5-moe.parquet")
    for name, d in (
        ("TensorRT-LLM-gen, vLLM 0.24", v24[v24.kernel_source.str.contains("trtllmnvfp4expertsmonolithic")]),
        ("TensorRT-LLM-gen, vLLM 0.19", v19[v19.moe_dtype == "nvfp4"]),
        (
            "TensorRT-LLM-gen, TensorRT-LLM 1.2.0rc5",
            trt[(trt.moe_dtype == "nvfp4") & (trt.kernel_source == "moe_torch_flow_min_latency")],
        ),
        ("CUTLASS, TensorRT-LLM 1.2.0rc5", trt[(trt.moe_dtype == "nvfp4") & (trt.kernel_source == "moe_torch_flow_cutlass")]),
        ("FlashInfer CUTLASS, vLLM 0.24", v24[(v24.moe_dtype == "nvfp4") & v24.kernel_source.str.contains("flashinfer_cutlass")]),
    ):
        d = d[(d.distribution == "power_law_1.01") & (d.moe_ep_size == 1)]
        n = d.inter_size / d.moe_tp_size
        touched = d.num_experts * (1 - (1 - d.topk / d.num_experts) ** d.num_tokens)
        d = d.assign(n=n, t=d.latency * 1e-3, bw=8e12, share=0.76, peak=9e15)
        d = d.assign(bytes=touched * 3 * d.hidden_size * n * 4.5 / 8, flops=2 * d.num_tokens * d.topk * 3 * d.hidden_size * n)
        small = d.num_tokens <= 16
        a, b = 0.4, 500.0
        for _ in range(8):
            floor = float(np.median((d.t - body(d, a * d.n / (d.n + b)))[small]))

            def residuals(p: np.ndarray, d: pd.DataFrame = d, floor: float = floor) -> pd.Series:
                return np.log(model(d, p[0] * d.n / (d.n + p[1]), floor) / d.t)

            a, b = least_squares(residuals, [a, b], bounds=([0.01, 1.0], [1.0, 20000.0])).x
        print(f"{name}: {len(d)} rows, floor {floor * 1e6:.1f} us, a {a:.3f}, b {b:.0f}")
        print(by_batch("fit", model(d, a * d.n / (d.n + b), floor) / d.t, d))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "b200-fp4":
        fp4_b200(Path(sys.argv[1]))
    elif len(sys.argv) > 2 and sys.argv[2] == "b200-triton":
        triton_b200(Path(sys.argv[1]))
    elif len(sys.argv) > 2 and sys.argv[2] == "b200-flashinfer":
        flashinfer_b200(Path(sys.argv[1]))
    elif len(sys.argv) > 2 and sys.argv[2] == "b200-flashinfer-bf16":
        flashinfer_b200(Path(sys.argv[1]), bf16=True)
    else:
        main(Path(sys.argv[1] if len(sys.argv) > 1 else "."), sys.argv[2] if len(sys.argv) > 2 else "")
