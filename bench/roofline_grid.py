"""Roofline grid throughput: one numpy pass over a (batch x seq) grid against a scalar loop.

Usage: python bench/roofline_grid.py [n_batch n_seq]   (default 1000 x 1000 = one million points)
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from kvcalc.engine.roofline import decode_grid, decode_terms
from kvcalc.specs.catalog import resolve_gpu, resolve_model


def main() -> None:
    nb, ns = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (1000, 1000)
    gpu = resolve_gpu("h100")
    print(f"{'model':18s} {'points':>10s} {'grid s':>8s} {'points/s':>12s} {'scalar points/s':>16s} {'speed-up':>9s}")
    for name in ("llama3.1-70b", "gemma3-27b", "deepseek-v3"):
        m = resolve_model(name)
        batches = np.unique(np.geomspace(1, 4096, nb).astype(np.int64))
        batches = np.arange(1, nb + 1) if batches.size < nb else batches
        seqs = np.linspace(128, 131072, ns).astype(np.int64)
        runs = []
        for _ in range(5):
            t0 = time.perf_counter()
            g = decode_grid(m, gpu, batches, seqs, tp=8)
            runs.append(time.perf_counter() - t0)
        pts = g["t_bound_s"].size
        grid_t = statistics.median(runs)
        # The scalar loop: the same engine function on plain ints, one point at a time.
        k = 2000
        t0 = time.perf_counter()
        for i in range(k):
            decode_terms(m, gpu, int(batches[i % len(batches)]), int(seqs[(i * 7) % len(seqs)]), "bf16", 8)
        scalar_rate = k / (time.perf_counter() - t0)
        print(
            f"{name:18s} {pts:>10,} {grid_t:8.3f} {pts / grid_t:>12,.0f} {scalar_rate:>16,.0f} {pts / grid_t / scalar_rate:>8,.0f}x"
        )


if __name__ == "__main__":
    main()
