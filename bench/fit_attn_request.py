"""Fit the decode attention's cost per request and KV head (GPUSpec.attention, the step model's
attn_request_s) to AIConfigurator's measured vLLM decode-attention tables.

The tables: ai-dynamo/aiconfigurator at 095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/attention/vllm/<release>/generation_attention_perf.parquet
(`git show 095f58a:<path> > <gpu>-vllm-<release>.parquet`; SGLang's tables, .../attention/sglang/<release>/, as
<gpu>-sglang-<release>.parquet, fit the same way): one attention call (vLLM's attention layer,
with its KV-cache write) timed at batch sizes 1 to 2,048 and contexts 2 to 131,072 tokens, for 1 to 64
query heads and 1 to 8 KV heads of 128 dimensions. Needs pandas and pyarrow, which kvcalc does not:

    python bench/fit_attn_request.py DIR    # DIR holds the <gpu>-<engine>-<release>.parquet files

Every row of 16-bit KV, head dimension 128 and full attention (no window) is modelled as kvcalc's step model charges one decode
attention call: attn_latency_s (11 us) + max(KV bytes / (datasheet bandwidth x eta_bw 0.8), attention
FLOPs / (bf16 peak x eta_c 0.7)) + batch x KV heads x c, with kvcalc's other constants held; c (to
0.5 ns) minimises the mean squared log error. Prints c per GPU and the median and 90th-percentile
|log(model / measured)| without the term and with it, and the median measured / model at 256
requests or more of at most 1,024 tokens, where the term matters.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

# GPU file prefix: (datasheet bandwidth B/s, dense bf16 peak FLOP/s), as gpu_specs/ state them
GPUS = {
    "h100_sxm": (3.35e12, 989.5e12),
    "h200_sxm": (4.8e12, 989.5e12),
    "a100_sxm": (2.039e12, 312e12),
    "b200_sxm": (8e12, 2250e12),
    "gb200": (8e12, 2500e12),
    "l40s": (864e9, 362.05e12),
}
LATENCY, ETA_BW, ETA_C = 11e-6, 0.8, 0.7


def fit(path: Path) -> None:
    bw, peak = GPUS[path.name.split("-")[0]]
    d = pd.read_parquet(path)
    d = d[(d.kv_cache_dtype == "bfloat16") & (d.head_dim == 128)]
    if "window_size" in d:  # 0.24's tables also time sliding windows (128 to 8,192): full attention only
        d = d[d.window_size == 0]
    for source, t in d.groupby("kernel_source"):
        ctx = (t.isl + t.step).to_numpy(float)
        b = t.batch_size.to_numpy(float)
        kv = t.num_key_value_heads.to_numpy(float)
        h = t.num_heads.to_numpy(float)
        kv_bytes = b * ctx * kv * 128 * 2 * 2
        flops = b * ctx * h * 128 * 2 * 2
        measured = t.latency.to_numpy(float) * 1e-3  # the tables' latency is in ms
        base = LATENCY + np.maximum(kv_bytes / (bw * ETA_BW), flops / (peak * ETA_C))
        pairs = b * kv

        def err(model: np.ndarray, measured: np.ndarray = measured) -> np.ndarray:
            return np.abs(np.log(model / measured))

        cs = np.arange(0.0, 200.5, 0.5) * 1e-9
        c = min(cs, key=lambda x: float(np.mean(err(base + pairs * x) ** 2)))
        e0, e1 = err(base), err(base + pairs * c)
        big = (b >= 256) & (ctx <= 1024)
        print(
            f"{path.stem} {source}: c = {c * 1e9:.1f} ns ({len(t):,} rows); median |log error| {np.median(e0):.3f} -> "
            f"{np.median(e1):.3f}, 90th percentile {np.quantile(e0, 0.9):.2f} -> {np.quantile(e1, 0.9):.2f}; "
            f"at 256+ requests of <= 1,024 tokens measured / model {np.median(measured[big] / base[big]):.2f} -> "
            f"{np.median(measured[big] / (base[big] + pairs[big] * c)):.2f}"
        )


if __name__ == "__main__":
    for p in sorted(Path(sys.argv[1]).glob("*.parquet")):
        fit(p)
