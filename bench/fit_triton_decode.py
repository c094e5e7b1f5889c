"""Fit the rate at which one thread block of SGLang's Triton decode kernel reads the KV cache
(StepConstants.triton_cta_bytes_per_s) to the decode throughputs sgl-project/sglang#21775 measured.

The data: bench/data/sglang-21775-triton-decode-h100.csv (bench/data/README.md says how it was taken): one
request of Qwen3-8B decoding on one H100 after prompts of 1,000 to 32,000 tokens, in tokens a second, under
SGLang's Triton backend before that PR ("Old Triton", the released kernel), after it, and under FlashInfer.
Needs numpy only:

    python bench/fit_triton_decode.py [CSV]

A token's time (1 / throughput) is a line in the context: the released kernel's slope is what one more
token of context costs the step. At one request the kernel splits the context into 8 parts (its cap,
--triton-attention-num-kv-splits; get_num_kv_splits_triton asks for more at every length here) and runs
one block a part and KV head, 64 blocks on 132 multiprocessors, side by side: each more token of context
is an eighth of a token more for the block with the longest part to read, its KV head's keys and values,
128 x 2 x 2 B, on each of Qwen3-8B's 36 layers (config.json: 8 KV heads of 128, 36 layers). So the rate
is 36 x 512 B / 8 over the slope. Prints the three columns' slopes, the rate, and the released kernel's
per-token times beside the fitted line.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "sglang-21775-triton-decode-h100.csv"
LAYERS, KV_HEAD_BYTES, SPLITS = 36, 2 * 128 * 2, 8  # Qwen3-8B's layers, one KV head's K and V in bf16 a token
H100_BW = 3.35e12  # gpu_specs/h100-sxm.yaml: the datasheet bandwidth


def load(path: Path) -> dict[str, np.ndarray]:
    with path.open() as fh:
        rows = list(csv.DictReader(fh))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}


def line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares slope and intercept of y on x."""
    slope, icpt = np.polyfit(x, y, 1)
    return float(slope), float(icpt)


def main() -> None:
    d = load(Path(sys.argv[1]) if len(sys.argv) > 1 else DATA)
    L = d["input_len"]
    fits = {}
    for col in ("old_triton_tok_s", "new_triton_tok_s", "flashinfer_tok_s"):
        fits[col] = line(L, 1.0 / d[col])
        print(f"{col:18s} {fits[col][0] * 1e6:.4f} us a token of context, {fits[col][1] * 1e3:.3f} ms at none")
    slope, icpt = fits["old_triton_tok_s"]
    rate = LAYERS * KV_HEAD_BYTES / SPLITS / slope
    print(
        f"released Triton kernel: {LAYERS} x {KV_HEAD_BYTES} B / {SPLITS} / {slope * 1e6:.4f} us = {rate / 1e9:.3f} GB/s a block"
    )
    fi = fits["flashinfer_tok_s"][0]
    kv_token = LAYERS * 8 * KV_HEAD_BYTES
    print(
        f"FlashInfer's slope: {kv_token:,} B a token at {kv_token / fi / 1e12:.2f} TB/s, {kv_token / fi / H100_BW:.2f} of the datasheet"
    )
    for x, y in zip(L, 1.0 / d["old_triton_tok_s"]):
        print(f"  {int(x):>6,} tokens: measured {y * 1e3:7.3f} ms, line {(icpt + slope * x) * 1e3:7.3f} ms")


if __name__ == "__main__":
    main()
