"""How a matmul's time combines its weights' stream and its math: the larger of the two, or their
root-sum-square (kvcalc.engine.steptime.matmul_s), against AIConfigurator's measured vLLM GEMM tables.

The tables: ai-dynamo/aiconfigurator at 095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/gemm/vllm/<release>/gemm_perf.parquet
(`git show 095f58a:<path> > <gpu>-<release>-gemm.parquet`; the H100, H200 and B200 of 0.24.0, the
A100 of 0.14.0). Needs pandas and pyarrow, which kvcalc does not:

    python bench/fit_gemm_knee.py DIR

Every bf16 row of 4 to 600 MB of weights and at most 4,096 tokens (torch's linear, in a CUDA graph) is
modelled as the step model charges a matmul: the GPU spec's latency + combine(weight bytes /
(datasheet bandwidth x the spec's share), FLOPs / (bf16 peak x eta_c 0.7)), combine the larger of the
two or their root-sum-square. Prints, for each, the median |log(model / measured)| over all rows and
over 64 to 512 tokens, where the two terms meet, and the median measured / model there and where the two
terms are within 25% of each other.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

# file: (datasheet bandwidth B/s, dense bf16 peak FLOP/s, the spec's gemm latency s and share)
GPUS = {
    "h100_sxm-0.24.0-gemm.parquet": (3.35e12, 989.5e12, 3.4e-6, 0.86),
    "h200_sxm-0.24.0-gemm.parquet": (4.8e12, 989.5e12, 3.6e-6, 0.83),
    "a100_sxm-0.14.0-gemm.parquet": (2.039e12, 312e12, 5.3e-6, 0.74),
    "b200_sxm-0.24.0-gemm.parquet": (8e12, 2250e12, 2.9e-6, 0.76),
}


def main(folder: Path) -> None:
    for name, (bw, peak, latency, share) in GPUS.items():
        d = pd.read_parquet(folder / name)
        d = d[d.gemm_dtype == "bfloat16"]
        d = d[d.kernel_source.isin(["torch.nn.functional.linear", "vllm_default"])]
        weight_bytes = d.n * d.k * 2
        d = d[(weight_bytes >= 4e6) & (weight_bytes <= 600e6) & (d.m <= 4096)]
        tw = (d.n * d.k * 2 / (bw * share)).to_numpy(float)
        tc = (2 * d.m * d.n * d.k / (peak * 0.7)).to_numpy(float)
        measured = d.latency.to_numpy(float) * 1e-3  # the tables' latency is in ms
        knee = ((d.m >= 64) & (d.m <= 512)).to_numpy()
        meet = (tc / tw >= 0.8) & (tc / tw < 1.25)  # the two terms within 25% of each other
        line = f"{name.removesuffix('-gemm.parquet')} ({len(d):,} rows):"
        for label, model in (("larger", latency + np.maximum(tw, tc)), ("root-sum-square", latency + np.hypot(tw, tc))):
            e = np.log(model / measured)
            line += (
                f" {label}: median |log error| {np.median(np.abs(e)):.3f}, at 64-512 tokens {np.median(np.abs(e[knee])):.3f}"
                f" and measured / model {np.exp(-np.median(e[knee])):.2f}, where the terms meet {np.median(measured[meet] / model[meet]):.2f};"
            )
        print(line.rstrip(";"))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
