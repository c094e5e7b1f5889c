"""Simulation throughput: requests and events per second of `kvcalc simulate`'s engine.

Usage: python bench/simulate.py [requests] [REFERENCE [rounds]]
  requests    default 1,000,000; llama2-13b on an A100 40GB, ShareGPT-like lengths, Poisson
              arrivals at 2 requests/s, near the paged policy's capacity
  REFERENCE   a checkout of another kvcalc release (e.g. `git worktree add /tmp/ref efdd608`): the
              three policies in one call are then timed for it and for this one, alternately, in
              `rounds` rounds (default 2), and the ratio of each round is printed. This machine's
              speed drifts by a third within minutes; a ratio taken within one round compares like
              with like.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import numpy as np

from kvcalc.engine.engines import engine
from kvcalc.engine.simulate import SimSettings, Workload, parse_policies, simulate
from kvcalc.inputs.workload import PRESETS, sample_lengths
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import kv_dtype

TOGETHER = "prealloc,oracle,paged-16"


def workload(n: int) -> Workload:
    p_spec, o_spec, _ = PRESETS["sharegpt"]
    P = sample_lengths(p_spec, n, 0, 2047)[0]
    O = np.maximum(np.minimum(sample_lengths(o_spec, n, 1, 2047)[0], 2048 - P), 1)
    arrivals = np.cumsum(np.random.default_rng(0).exponential(0.5, size=n))
    return Workload(arrivals, P, O, "sharegpt", "poisson 2/s")


def together(n: int) -> float:
    """Seconds for the three default policies in one call, as `kvcalc simulate` runs them (a forked
    process a policy, up to one a CPU). A release from before simulate took ``workers`` (such as
    8407836, the code the serving-time issue timed at 55-75 s) runs them as it did: one after the
    other in one process."""
    import inspect

    m, g = resolve_model("llama2-13b"), resolve_gpu("a100-40gb")
    wl, st = workload(n), SimSettings(2048, 256, 2048)
    kw = {"workers": None} if "workers" in inspect.signature(simulate).parameters else {}
    t0 = time.perf_counter()
    simulate(m, g, wl, st, parse_policies(TOGETHER), engine("vllm"), kv_dtype("bf16"), **kw)
    return time.perf_counter() - t0


def _timed(source: str | None, n: int) -> float:
    """``together(n)`` in a fresh process, from ``source`` (a checkout) or from this kvcalc."""
    env = {**os.environ, "PYTHONPATH": source} if source else None
    here = os.path.abspath(__file__)
    out = subprocess.run([sys.executable, here, "--together", str(n)], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--together":
        print(f"{together(int(sys.argv[2])):.3f}")
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    if len(sys.argv) > 2:
        ref = os.path.abspath(sys.argv[2])
        rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
        ratios = []
        for k in range(rounds):
            r, c = _timed(ref, n), _timed(None, n)
            ratios.append(c / r)
            print(f"round {k + 1}: reference {r:.1f} s, this release {c:.1f} s, ratio {c / r:.2f}")
        print(f"{TOGETHER} in one call, {n:,} requests: median ratio {statistics.median(ratios):.2f} ({ref})")
        return
    m, g = resolve_model("llama2-13b"), resolve_gpu("a100-40gb")
    wl, st = workload(n), SimSettings(2048, 256, 2048)
    for pol in TOGETHER.split(","):
        t0 = time.perf_counter()
        r = simulate(m, g, wl, st, parse_policies(pol), engine("vllm"), kv_dtype("bf16"))
        dt = time.perf_counter() - t0
        run = r.runs[0]
        print(
            f"{pol:9s} {n:>10,} requests {dt:7.1f} s  {n / dt:>9,.0f} requests/s  {run.events:>10,} events  "
            f"{run.events / dt:>9,.0f} events/s  util {run.kv_utilization:.1%}"
        )
    print(f"all three in one call (workers=None): {together(n):.1f} s")


if __name__ == "__main__":
    main()
