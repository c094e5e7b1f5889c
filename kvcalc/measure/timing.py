"""Timers and in-process ceilings: what this device can read, copy and multiply.

On a GPU, a step is timed inside a CUDA graph that runs it over several cache copies in turn
(so L2 does not hold the working set and launch overhead is not timed); the figure is the graph's
time over the steps in it. Where capture fails, each step is timed with CUDA events instead, and
the result says so. Every timer returns the median with p10 and p90; a spread wider than
``SPREAD`` marks the figure as imprecise.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

SPREAD = 0.10
"""(p90 - p10) / median beyond which repeats disagree too much for a precise figure."""


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
            call = _capture([fn])
            used_graph = True
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


def _capture(steps: list[Any]) -> Any:
    """One CUDA graph running every step in turn (after a warm-up on a side stream); returns its replay."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in steps:
            f()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in steps:
            f()
    for _ in range(3):
        g.replay()
    return g.replay


def time_cuda_rotating(steps: list[Any], runs: int = 100, warmup: int = 5) -> tuple[float, float, float, int, bool]:
    """(median, p10, p90, runs, used_graph) of one step, each step over a different cache copy: a
    graph of all of them is replayed and timed whole, divided by their number. Without a graph,
    CUDA events around each step, rotating."""
    import torch

    for _ in range(warmup):
        for f in steps:
            f()
    torch.cuda.synchronize()
    n = len(steps)
    try:
        replay = _capture(steps)
        used = True
    except Exception:
        replay, used = None, False
    out = []
    for i in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        if replay is not None:
            replay()
        else:
            steps[i % n]()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / 1e3 / (n if replay is not None else 1))
    return (*_stats(out), len(out), used)


_CEILINGS: dict[tuple[str, int], dict] = {}


def ceilings(device: str, nbytes: int) -> dict:
    """Copy (read + write) and read-only bandwidth over ``nbytes``, and matmul FLOP/s, measured
    once per process and device (every row of a sweep shares them)."""
    key = (device, nbytes)
    if key in _CEILINGS:
        return _CEILINGS[key]
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
    _CEILINGS[key] = {
        "copy_bytes_per_s": 2 * n * 4 / copy,
        "read_bytes_per_s": n * 4 / read,
        "matmul_flops_per_s": flops,
        "ceiling_buffer_bytes": n * 4,
    }
    return _CEILINGS[key]
