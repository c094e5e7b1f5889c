"""Fit a GPU's fp8 (W8A8, per-tensor scales) decode-shaped matmuls (GPUSpec.gemm_fp8) to AIConfigurator's
measured vLLM GEMM tables, as its bf16 ones were fitted (GPUSpec.gemm).

The tables: ai-dynamo/aiconfigurator at 095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/gemm/vllm/0.24.0/gemm_perf.parquet
(`git show 095f58a:<path> > <gpu>-0.24.0-gemm.parquet`). Needs pandas, pyarrow and scipy, which kvcalc
does not:

    python bench/fit_gemm_fp8.py DIR

Every fp8 row of 1 to 16 tokens and 4 to 600 MB of weights (vLLM's CUTLASS scaled_mm, per-tensor scales,
timed in a CUDA graph; the collector's fp8-block rows run eagerly and are left out) is fitted, least
squares in relative error, as latency + weight bytes / (datasheet bandwidth x share). The collector times
the linear layer's forward, its input's fp8 quantization included, which the step model charges as a
small kernel of its own (kernel_gap_s, 2.7 us): the spec's latency is the fitted one less that. Prints
each GPU's latency, share and median relative error, beside the bf16 fit's share (the gemm block).

    python bench/fit_gemm_fp8.py DIR fp4

fits the tables' NVFP4 rows (FlashInferCuteDslNvFp4LinearKernel, 4.5 bits a weight: GPUSpec.gemm_fp4) the same way,
the input's 4-bit quantization taken as fp8's is, and prints where the matmuls are compute-bound (1,024 tokens or
more, 16 M weights or more) the median share of the fp4 peak they reach and its ratio to the share of the bf16 peak
the same shapes reach in bf16 (StepConstants.eta_c_fp4).

    python bench/fit_gemm_fp8.py DIR trtllm

fits TensorRT-LLM 1.2.0rc5's own fp8 rows (GPUSpec.gemm_fp8_trtllm), from the same commit's
systems/data/<gpu>/gemm/trtllm/1.2.0rc5/gemm_perf.parquet, quantize/trtllm/1.2.0rc5/computescale_perf.parquet and
scale_matrix_perf.parquet (saved as <gpu>-trtllm_1.2.0rc5-gemm.parquet, -computescale.parquet and
-scalematrix.parquet). The collector's fp8 weights carry no input scale, so TensorRT-LLM's Linear runs its dynamic
path: it computes the input's scale (the computescale table's torch ops), quantizes the input (the scale_matrix table)
and multiplies (collector/trtllm/collect_gemm.py, which says AIConfigurator derives the static-scale GEMM by taking
the scale's computation off). A ModelOpt FP8 checkpoint, which TensorRT-LLM serves, carries static input scales: the
spec's latency is the fitted one less the median computed scale at 1 to 16 tokens and less the quantization kernel
as the step model charges it (QUANT_KERNEL_S, beside the table's own median); where the matmuls are compute-bound
(1,024 tokens or more, 16 M weights or more, rows whose m and k both quantize tables time) the share of the fp8 peak
is each row's time less its measured scale and quantization, the median over the rows.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

# file prefix: (datasheet bandwidth B/s, the spec's bf16 share)
GPUS = {"h100_sxm": (3.35e12, 0.86), "h200_sxm": (4.8e12, 0.83), "b200_sxm": (8e12, 0.76), "gb200": (8e12, 0.78)}
QUANT_KERNEL_S = 2.7e-6
# Dense bf16 and fp4 peaks, FLOP/s (gpu_specs), of the GPUs whose tables time NVFP4 GEMMs
FP4_PEAKS = {"b200_sxm": (2.25e15, 9e15), "gb200": (2.5e15, 10e15)}


def decode_fit(d: pd.DataFrame, bw: float, bytes_per_weight: float = 1.0) -> tuple[float, float, int, float]:
    """latency + weight bytes / (bw x share), least squares in relative error, over the rows of 4 to 600 MB of weights:
    (latency s, share, rows, median relative error)."""
    weight_bytes = (d.n * d.k).to_numpy(float) * bytes_per_weight
    keep = (weight_bytes >= 4e6) & (weight_bytes <= 600e6)
    weight_bytes, t = weight_bytes[keep], d.latency.to_numpy(float)[keep] * 1e-3

    def rel(p: np.ndarray) -> np.ndarray:
        return (p[0] + weight_bytes / (bw * p[1])) / t - 1

    fit = least_squares(rel, [5e-6, 0.7], bounds=([0.0, 0.05], [1e-4, 1.0]))
    return float(fit.x[0]), float(fit.x[1]), len(t), float(np.median(np.abs(rel(fit.x))))


def compute_bound(d: pd.DataFrame, gpu: str) -> None:
    """The NVFP4 rows' median share of the fp4 peak where compute-bound, and its ratio to the bf16 share of the same shape."""
    bf16, fp4 = FP4_PEAKS[gpu]
    b = d[d.gemm_dtype == "bfloat16"].set_index(["m", "n", "k"]).latency.rename("b")
    q = d[d.gemm_dtype == "nvfp4"].set_index(["m", "n", "k"]).latency.rename("q")
    j = pd.concat([b, q], axis=1).dropna().reset_index()
    j = j[(j.m >= 1024) & (j.n * j.k >= 16e6)]
    flops = 2.0 * j.m * j.n * j.k
    share_q, share_b = flops / (j.q * 1e-3) / fp4, flops / (j.b * 1e-3) / bf16
    print(
        f"  compute-bound, {len(j):,} shapes: {np.median(share_q):.3f} of the fp4 peak, {np.median(share_q / share_b):.2f} of the bf16 share"
    )


def main(folder: Path, fp4: bool = False) -> None:
    for gpu, (bw, bf16_share) in GPUS.items():
        path = folder / f"{gpu}-0.24.0-gemm.parquet"
        if not path.exists() or (fp4 and gpu not in FP4_PEAKS):
            continue
        d0 = pd.read_parquet(path)
        d = d0[(d0.gemm_dtype == ("nvfp4" if fp4 else "fp8")) & (d0.m <= 16)]
        latency, share, n, err = decode_fit(d, bw, 4.5 / 8 if fp4 else 1.0)
        print(
            f"{gpu}: {n:,} rows, {', '.join(sorted(d.kernel_source.unique()))}: fitted {latency * 1e6:.1f} us "
            f"(less the quantization kernel, {(latency - QUANT_KERNEL_S) * 1e6:.1f} us) + bytes / ({share:.2f} x bandwidth), "
            f"median error {err:.1%}; bf16 share {bf16_share}"
        )
        if fp4:
            compute_bound(d0, gpu)


# Dense fp8 peaks, FLOP/s (gpu_specs), of the GPUs whose TensorRT-LLM tables time fp8 GEMMs
FP8_PEAKS = {"h100_sxm": 1979e12, "h200_sxm": 1979e12, "b200_sxm": 4.5e15}


def trtllm(folder: Path) -> None:
    """TensorRT-LLM 1.2.0rc5's fp8 GEMMs in their static-scale form: decode fit and compute-bound share."""
    for gpu, (bw, _) in GPUS.items():
        path = folder / f"{gpu}-trtllm_1.2.0rc5-gemm.parquet"
        if not path.exists():
            continue
        d0 = pd.read_parquet(path)
        cs = pd.read_parquet(folder / f"{gpu}-trtllm_1.2.0rc5-computescale.parquet")
        sm = pd.read_parquet(folder / f"{gpu}-trtllm_1.2.0rc5-scalematrix.parquet")
        cs, sm = (t[t.quant_dtype == "fp8"].set_index(["m", "k"]).latency * 1e-3 for t in (cs, sm))
        latency, share, n, err = decode_fit(d0[(d0.gemm_dtype == "fp8") & (d0.m <= 16)], bw)
        small = cs.index.get_level_values("m") <= 16
        scale_s, quant_s = float(np.median(cs[small])), float(np.median(sm[sm.index.get_level_values("m") <= 16]))
        print(
            f"{gpu}: {n:,} rows of 1 to 16 tokens: fitted {latency * 1e6:.2f} us + bytes / ({share:.3f} x bandwidth), "
            f"median error {err:.1%}; less the computed scale ({scale_s * 1e6:.2f} us) and the "
            f"quantization kernel ({QUANT_KERNEL_S * 1e6:.1f} us; the table's {quant_s * 1e6:.2f}): "
            f"{(latency - scale_s - QUANT_KERNEL_S) * 1e6:.2f} us"
        )
        big = d0[(d0.gemm_dtype == "fp8") & (d0.m >= 1024) & (d0.n * d0.k >= 16e6)]
        extra = np.array([cs.get((m, k), np.nan) + sm.get((m, k), np.nan) for m, k in zip(big.m, big.k)])
        ok = ~np.isnan(extra)
        flops = 2.0 * (big.m * big.n * big.k).to_numpy(float)[ok]
        static = flops / (big.latency.to_numpy(float)[ok] * 1e-3 - extra[ok]) / FP8_PEAKS[gpu]
        raw = flops / (big.latency.to_numpy(float)[ok] * 1e-3) / FP8_PEAKS[gpu]
        print(
            f"  compute-bound, {ok.sum():,} of {len(big):,} shapes with both tables: {np.median(static):.3f} of the fp8 peak "
            f"static ({np.median(raw):.3f} as timed, dynamic)"
        )


if __name__ == "__main__":
    mode = sys.argv[2] if len(sys.argv) > 2 else ""
    if mode == "trtllm":
        trtllm(Path(sys.argv[1]))
    else:
        main(Path(sys.argv[1] if len(sys.argv) > 1 else "."), mode == "fp4")
