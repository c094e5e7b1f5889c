"""Simulation throughput: requests and events per second of `kvcalc simulate`'s engine.

Usage: python bench/simulate.py [requests] [REFERENCE [rounds]]
       python bench/simulate.py requests --calibrated [rounds]
  requests    default 1,000,000; llama2-13b on an A100 40GB, ShareGPT-like lengths, Poisson
              arrivals at 2 requests/s, near the paged policy's capacity
  REFERENCE   a checkout of another kvcalc release (e.g. `git worktree add /tmp/ref efdd608`): the
              three policies in one call are then timed for it and for this one, alternately, in
              `rounds` rounds (default 2), and the ratio of each round is printed. This machine's
              speed drifts by a third within minutes; a ratio taken within one round compares like
              with like.
  BENCH_ENGINE  (environment) the engine the runs schedule as, default vllm: e.g. BENCH_ENGINE=sglang@0.5.3 times
              SGLang's admission tests and retractions (the reference gets it too, through the environment)
  --calibrated  the three policies in one call with the defaults, with the defaults written as a
              calibration file and read back as `--calibration FILE` reads it, and with a
              calibration that changes every constant, alternately, `rounds` rounds (default 2):
              what a calibrated run costs
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from typing import Any

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


CALIBRATION: dict[str, Any] = {
    "model": "llama2-13b",
    "gpu": "a100-40gb",
    "tp": [1],
    "constants": {
        "eta_bw": 0.71,
        "eta_c": 0.63,
        "fixed_s": 0.0012,
        "per_request_s": 7e-6,
        "gemm_latency_s": 4e-6,
        "attn_latency_s": 13e-6,
        "kernel_gap_s": 1.5e-6,
        "eager_launch_s": 1.4e-6,
        "alpha_s": 9e-6,
        "request_overhead_s": 0.011,
        "tokenize_s_per_token": 2e-5,
    },
}
"""A calibration of the bench's model and GPU with every constant that applies off its default."""


ENGINE = os.environ.get("BENCH_ENGINE", "vllm")
"""The engine the runs schedule as (BENCH_ENGINE; vllm unless set)."""


def together(n: int, calibration: str | None = None) -> tuple[float, int]:
    """Seconds, and events over the three runs, for the three default policies in one call, as `kvcalc simulate` runs them (a forked
    process a policy, up to one a CPU). A release from before simulate took ``workers`` (such as
    8407836, the code the serving-time issue timed at 55-75 s) runs them as it did: one after the
    other in one process."""
    import inspect

    m, g = resolve_model("llama2-13b"), resolve_gpu("a100-40gb")
    kw: dict[str, Any] = {}
    if calibration:  # (a reference release's SimSettings may not take constants: only this one is calibrated)
        from kvcalc.cli.options import step_constants

        kw["constants"] = step_constants(None, calibration, model=m, gpus=[g])
    wl, st = workload(n), SimSettings(2048, 256, 2048, **kw)
    kw = {"workers": None} if "workers" in inspect.signature(simulate).parameters else {}
    t0 = time.perf_counter()
    r = simulate(m, g, wl, st, parse_policies(TOGETHER), engine(ENGINE), kv_dtype("bf16"), **kw)
    return time.perf_counter() - t0, sum(getattr(run, "events", 0) for run in r.runs)


def _timed(source: str | None, n: int, calibration: str | None = None) -> tuple[float, int]:
    """``together(n, calibration)`` in a fresh process, from ``source`` (a checkout) or from this kvcalc."""
    env = {**os.environ, "PYTHONPATH": source} if source else None
    here = os.path.abspath(__file__)
    cmd = [sys.executable, here, "--together", str(n), *([calibration] if calibration else [])]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    seconds, events = out.stdout.strip().splitlines()[-1].split()
    return float(seconds), int(events)


def calibrated(n: int, rounds: int) -> None:
    """The three policies in one call with the defaults, with the defaults written as a calibration
    file (what reading one costs), and with a calibration that changes every constant (what other
    constants cost: slower steps at the same arrivals also make the paged policy preempt more)."""
    import dataclasses
    import json
    import tempfile

    from kvcalc.engine.steptime import DEFAULTS
    from kvcalc.inputs.calibration import KEYS

    # Every constant a calibration file holds, at its default (None included: the GPU's measured figure). A file of only
    # some keys is not the defaults: one with eta_bw and no eta_gemm is read as a file from before eta_gemm, whose
    # eta_bw was the matmuls' share too (kvcalc.inputs.calibration), and until 2026-12-06 this one was such a file.
    same = {**CALIBRATION, "constants": {k: getattr(DEFAULTS, k) for k in KEYS}}
    paths = []
    for doc in (same, CALIBRATION):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(doc, f)
        paths.append(f.name)
    from kvcalc.cli.options import step_constants

    read = step_constants(None, paths[0], model=resolve_model(same["model"]), gpus=[resolve_gpu(same["gpu"])])
    assert dataclasses.replace(read, origin=DEFAULTS.origin) == DEFAULTS, "the defaults' file does not read back as the defaults"
    labels = ("defaults", "the defaults as a calibration file", "every constant changed")
    times: dict[str, list[float]] = {k: [] for k in labels}
    for k in range(rounds):
        cells = []
        for label, path in zip(labels, (None, *paths), strict=True):
            t, ev = _timed(None, n, path)
            times[label].append(t)
            cells.append(f"{label} {t:.1f} s ({ev:,} events)")
        print(f"round {k + 1}: " + "; ".join(cells))
    for p in paths:
        os.unlink(p)
    base = statistics.median(times["defaults"])
    print(
        f"{TOGETHER} in one call, {n:,} requests, medians over {rounds} rounds: defaults {base:.1f} s; "
        + "; ".join(f"{label} {statistics.median(times[label]) / base:.2f}x" for label in labels[1:])
    )


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--together":
        seconds, events = together(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
        print(f"{seconds:.3f} {events}")
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    if len(sys.argv) > 2 and sys.argv[2] == "--calibrated":
        calibrated(n, int(sys.argv[3]) if len(sys.argv) > 3 else 2)
        return
    if len(sys.argv) > 2:
        ref = os.path.abspath(sys.argv[2])
        rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
        ratios = []
        for k in range(rounds):
            t_ref, t_this = _timed(ref, n)[0], _timed(None, n)[0]
            ratios.append(t_this / t_ref)
            print(f"round {k + 1}: reference {t_ref:.1f} s, this release {t_this:.1f} s, ratio {t_this / t_ref:.2f}")
        print(f"{TOGETHER} in one call, {n:,} requests: median ratio {statistics.median(ratios):.2f} ({ref})")
        return
    m, g = resolve_model("llama2-13b"), resolve_gpu("a100-40gb")
    wl, st = workload(n), SimSettings(2048, 256, 2048)
    for pol in TOGETHER.split(","):
        t0 = time.perf_counter()
        r = simulate(m, g, wl, st, parse_policies(pol), engine(ENGINE), kv_dtype("bf16"))
        dt = time.perf_counter() - t0
        run = r.runs[0]
        print(
            f"{pol:9s} {n:>10,} requests {dt:7.1f} s  {n / dt:>9,.0f} requests/s  {run.events:>10,} events  "
            f"{run.events / dt:>9,.0f} events/s  util {run.kv_utilization:.1%}"
        )
    print(f"all three in one call (workers=None): {together(n)[0]:.1f} s")


if __name__ == "__main__":
    main()
