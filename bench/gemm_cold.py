"""Decode-shaped bf16 matmuls with their weights warm in L2 and cold, on one GPU.

A decode step reads every weight matrix of the model once, each in its own kernel, and the step's
weights are many times the L2, so each matmul finds its weights in HBM. A microbenchmark that
replays one matmul on the same weights (as AIConfigurator's collector does: collector/helper.py
benchmark_with_power replays a CUDA graph of repeat_n calls on one weight tensor, no L2 flush)
finds a matrix smaller than the L2 there after the first call. This times both, for each shape:

  warm: one weight tensor, CALLS back-to-back calls in one CUDA graph (the collector's way);
  cold: R distinct weight tensors of the shape, R x bytes >= COLD_BYTES (many times the L2), one
        call on each in one CUDA graph: each call reads weights no recent call touched.

Each graph is replayed REPLAYS times after WARMUP replays; the time per call is the events' time over
the replays and calls. torch.matmul on bf16 is cuBLAS, the kernel vLLM's unquantized linear layers
run (F.linear). Writes CSV: m, n, k, weight_bytes, warm_us, cold_us, copies; and, for the small
kernels between them, the time of one elementwise add of an m x 4,096 bf16 tensor in a graph of
CALLS_SMALL of them (OUT with .small.csv: m, us).

    python bench/gemm_cold.py OUT.csv          # on a CUDA GPU
    python bench/gemm_cold.py OUT.csv --smoke  # CPU: two shapes, eager, to check the script runs
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

COLD_BYTES = 2 * 2**30
"""Bytes of distinct weights the cold graph cycles through: 2 GiB, 34 times an H200's 60 MB L2."""
MAX_COPIES = 256
CALLS = 20
WARMUP, REPLAYS = 3, 10
MS = (1, 8, 32)
CALLS_SMALL = 256
# (n, k) of decode matmuls, from 1 MB to 1 GB of bf16 weights: the projections of 7B to 405B models
# at TP 1 to 8 (hidden 4,096 to 16,384; widths 128 to 53,248 a rank).
SHAPES = [
    (512, 4096),
    (1024, 4096),
    (1536, 4096),
    (2048, 4096),
    (4096, 4096),
    (6144, 4096),
    (8192, 4096),
    (14336, 4096),
    (28672, 4096),
    (1024, 7168),
    (2304, 7168),
    (4608, 7168),
    (7168, 7168),
    (16384, 7168),
    (8192, 1024),
    (4096, 3584),
    (8192, 3584),
    (1280, 8192),
    (2560, 8192),
    (3584, 8192),
    (7168, 8192),
    (8192, 8192),
    (14336, 8192),
    (28672, 8192),
    (57344, 8192),
    (2048, 16384),
    (13312, 16384),
    (26624, 16384),
]


def timed(fn, dev: str, replays: int) -> float:
    """Seconds per replay of ``fn``."""
    if dev == "cpu":
        t = time.perf_counter()
        for _ in range(replays):
            fn()
        return (time.perf_counter() - t) / replays
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(replays):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e-3 / replays


def graph_of(calls, dev: str):
    """A callable that runs ``calls`` (a list of zero-argument callables) in one CUDA graph."""
    if dev == "cpu":
        return lambda: [c() for c in calls]
    from kvcalc.measure.timing import _capture  # measure's own capture: a side-stream warm-up, then the graph

    return _capture(calls)


def main() -> None:
    out, smoke = sys.argv[1], "--smoke" in sys.argv
    dev = "cpu" if smoke else "cuda"
    shapes, ms = (SHAPES[:2], MS[:1]) if smoke else (SHAPES, MS)
    cold_bytes = 64 * 2**20 if smoke else COLD_BYTES
    rows = []
    for n, k in shapes:
        wbytes = n * k * 2
        copies = max(2, min(MAX_COPIES, -(-cold_bytes // wbytes)))
        ws = [torch.randn(k, n, dtype=torch.bfloat16, device=dev) for _ in range(copies)]
        for m in ms:
            x = torch.randn(m, k, dtype=torch.bfloat16, device=dev)
            outs = [torch.empty(m, n, dtype=torch.bfloat16, device=dev) for _ in range(copies)]
            warm_calls = [lambda x=x, w=ws[0], o=outs[0]: torch.matmul(x, w, out=o) for _ in range(CALLS)]
            cold_calls = [lambda x=x, w=w, o=o: torch.matmul(x, w, out=o) for w, o in zip(ws, outs, strict=True)]
            warm, cold = graph_of(warm_calls, dev), graph_of(cold_calls, dev)
            for _ in range(WARMUP):
                warm()
                cold()
            tw = timed(warm, dev, REPLAYS) / len(warm_calls)
            tc = timed(cold, dev, REPLAYS) / len(cold_calls)
            rows.append((m, n, k, wbytes, round(tw * 1e6, 3), round(tc * 1e6, 3), copies))
            print(
                f"m {m:3d} n {n:6d} k {k:6d} {wbytes / 1e6:8.1f} MB warm {tw * 1e6:9.2f} us cold {tc * 1e6:9.2f} us", flush=True
            )
            del warm, cold, warm_calls, cold_calls, outs
        del ws
        if dev == "cuda":
            torch.cuda.empty_cache()
    small = []
    for m in ms:
        a = torch.randn(m, 4096, dtype=torch.bfloat16, device=dev)
        bufs = [torch.empty_like(a) for _ in range(CALLS_SMALL)]
        chain = [lambda i=i, a=a, bufs=bufs: torch.add(bufs[i - 1] if i else a, a, out=bufs[i]) for i in range(CALLS_SMALL)]
        g = graph_of(chain, dev)
        for _ in range(WARMUP):
            g()
        t = timed(g, dev, REPLAYS) / CALLS_SMALL
        small.append((m, round(t * 1e6, 3)))
        print(f"small kernel, m {m:3d} x 4096: {t * 1e6:.2f} us", flush=True)
    with open(out.removesuffix(".csv") + ".small.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["m", "us"])
        w.writerows(small)
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["m", "n", "k", "weight_bytes", "warm_us", "cold_us", "copies"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
