"""Simulation throughput: requests and events per second of `kvcalc simulate`'s engine.

Usage: python bench/simulate.py [requests]   (default 1,000,000; llama2-13b on an A100 40GB,
ShareGPT-like lengths, Poisson arrivals at 2 requests/s, near the paged policy's capacity)
"""

from __future__ import annotations

import sys
import time

import numpy as np

from kvcalc.engine.engines import engine
from kvcalc.engine.simulate import SimSettings, Workload, parse_policies, simulate
from kvcalc.inputs.workload import PRESETS, sample_lengths
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import kv_dtype


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    p_spec, o_spec, _ = PRESETS["sharegpt"]
    P = sample_lengths(p_spec, n, 0, 2047)[0]
    O = np.maximum(np.minimum(sample_lengths(o_spec, n, 1, 2047)[0], 2048 - P), 1)
    arrivals = np.cumsum(np.random.default_rng(0).exponential(0.5, size=n))
    m, g = resolve_model("llama2-13b"), resolve_gpu("a100-40gb")
    wl = Workload(arrivals, P, O, "sharegpt", "poisson 2/s")
    st = SimSettings(2048, 256, 2048)
    for pol in ("prealloc", "oracle", "paged-16"):
        t0 = time.perf_counter()
        r = simulate(m, g, wl, st, parse_policies(pol), engine("vllm"), kv_dtype("bf16"))
        dt = time.perf_counter() - t0
        run = r.runs[0]
        print(
            f"{pol:9s} {n:>10,} requests {dt:7.1f} s  {n / dt:>9,.0f} requests/s  {run.events:>10,} events  "
            f"{run.events / dt:>9,.0f} events/s  util {run.kv_utilization:.1%}"
        )
    # The three together, as kvcalc simulate runs them: a forked process a policy, up to one a CPU.
    t0 = time.perf_counter()
    simulate(m, g, wl, st, parse_policies("prealloc,oracle,paged-16"), engine("vllm"), kv_dtype("bf16"), workers=None)
    print(f"all three in one call (workers=None): {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
