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


def main(folder: Path) -> None:
    for gpu, (bw, bf16_share) in GPUS.items():
        path = folder / f"{gpu}-0.24.0-gemm.parquet"
        if not path.exists():
            continue
        d = pd.read_parquet(path)
        d = d[(d.gemm_dtype == "fp8") & (d.m <= 16)]
        weight_bytes = (d.n * d.k).to_numpy(float)
        keep = (weight_bytes >= 4e6) & (weight_bytes <= 600e6)
        weight_bytes, t = weight_bytes[keep], d.latency.to_numpy(float)[keep] * 1e-3

        def rel(p: np.ndarray, wb: np.ndarray = weight_bytes, t: np.ndarray = t, bw: float = bw) -> np.ndarray:
            return (p[0] + wb / (bw * p[1])) / t - 1

        fit = least_squares(rel, [5e-6, 0.7], bounds=([0.0, 0.05], [1e-4, 1.0]))
        latency, share = fit.x
        print(
            f"{gpu}: {len(t):,} rows, {', '.join(sorted(d.kernel_source.unique()))}: fitted {latency * 1e6:.1f} us "
            f"(less the quantization kernel, {(latency - QUANT_KERNEL_S) * 1e6:.1f} us) + bytes / ({share:.2f} x bandwidth), "
            f"median error {np.median(np.abs(rel(fit.x))):.1%}; bf16 share {bf16_share}"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
