"""Timers and in-process ceilings: what this device can read, copy and multiply."""

from __future__ import annotations

import statistics
import time


def _stats(samples: list[float]) -> tuple[float, float, float]:
    s = sorted(samples)
    q = lambda f: s[min(len(s) - 1, int(f * len(s)))]
    return statistics.median(s), q(0.1), q(0.9)


def time_cpu(fn, runs: int = 50, warmup: int = 3, budget_s: float = 20.0) -> tuple[float, float, float, int]:
    """(median, p10, p90, runs) of perf_counter around fn(); stops early past the time budget (>= 5 runs)."""
    for _ in range(warmup):
        fn()
    out = []
    start = time.perf_counter()
    for i in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
        if i >= 4 and time.perf_counter() - start > budget_s:
            break
    return (*_stats(out), len(out))


def time_cuda(fn, runs: int = 100, warmup: int = 10, graph: bool = False):
    """(median, p10, p90, runs, used_graph) with CUDA events around each call (or graph replay)."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    call = fn
    used_graph = False
    if graph:
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                fn()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn()
            call = g.replay
            used_graph = True
            for _ in range(3):
                call()
        except Exception:
            call = fn
    torch.cuda.synchronize()
    out = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        call()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / 1e3)
    return (*_stats(out), len(out), used_graph)


def ceilings(device: str, nbytes: int) -> dict:
    """Copy (read + write) and read-only bandwidth over ``nbytes``, and matmul FLOP/s, measured here."""
    import torch

    n = nbytes // 4
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)
    dst.copy_(src)  # touch every page before timing
    if device == "cuda":
        copy = time_cuda(lambda: dst.copy_(src), runs=20, warmup=3)[0]
        read = time_cuda(lambda: src.sum(), runs=20, warmup=3)[0]
        a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
        mm = time_cuda(lambda: a @ a, runs=10, warmup=3)[0]
        flops = 2 * 8192**3 / mm
    else:
        copy = time_cpu(lambda: dst.copy_(src), runs=10, warmup=2)[0]
        read = time_cpu(lambda: src.sum(), runs=10, warmup=2)[0]
        a = torch.randn(1024, 1024)
        mm = time_cpu(lambda: a @ a, runs=10, warmup=2)[0]
        flops = 2 * 1024**3 / mm
    return {
        "copy_bytes_per_s": 2 * n * 4 / copy,
        "read_bytes_per_s": n * 4 / read,
        "matmul_flops_per_s": flops,
        "ceiling_buffer_bytes": n * 4,
    }
