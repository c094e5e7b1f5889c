"""Fit an AMD GPU's matmul figures (gpu_specs/<gpu>.yaml, its gemm block) to AMD aiter's measured
fp8 block-scale GEMM times, over every number of tokens they time.

The data (bench/data/README.md says how each was taken from ROCm/aiter: the tuner's kernel time of the
tuned kernel for each M x N x K of aiter's model configs):

- mi300x: bench/data/mi300x-aiter-fp8-gemm-466ccb7.csv, gfx942 with 304 compute units;
- mi355x: bench/data/mi355x-aiter-fp8-gemm-e404860.csv, gfx950 with 256 compute units.

Needs numpy only:

    python bench/fit_gemm_mi300x.py [mi300x|mi355x] [CSV]

Every row of 3.9 MB of weights or more (the smallest the MI300X's data holds is 5,120 x 768, 3.93 MB;
the MI355X's also times matrices of 0.26 MB, which no decode layer the fit is for reads) is modelled as
kvcalc's step model charges a matmul: latency + the weights' time (N x K bytes of fp8 and a 4-byte scale
per 128 x 128 block, / (the datasheet bandwidth x share)) combined with the math's time (2 M N K / (the
dense fp8 peak x eta)), either as their root-sum-square (NVIDIA's tables, kvcalc.engine.steptime.matmul_s)
or their sum. The three figures minimise the mean squared log error, each M weighted alike (a grid:
latency to 0.1 us, share to 0.01, eta to 0.005). Prints both forms' fits, the median |log(model /
measured)| and the median model / measured by range of M.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np

# gpu_specs/<gpu>.yaml: datasheet bandwidth and dense fp8 peak; the data file
DATA = Path(__file__).resolve().parent / "data"
GPUS = {
    "mi300x": (5.3e12, 2614.9e12, DATA / "mi300x-aiter-fp8-gemm-466ccb7.csv"),
    "mi355x": (8e12, 5033.2e12, DATA / "mi355x-aiter-fp8-gemm-e404860.csv"),
}
MIN_WEIGHTS = 3.9e6
MS = (16, 32, 48, 64, 80, 96, 128, 160, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384)
BANDS = ((16, 16), (32, 64), (80, 128), (144, 256), (288, 1024), (2048, 16384))


def load(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    rows: dict[tuple[int, int, int], float] = {}
    with path.open() as fh:
        for r in csv.DictReader(fh):
            if int(r["M"]) in MS and int(r["N"]) * int(r["K"]) >= MIN_WEIGHTS:
                rows[(int(r["M"]), int(r["N"]), int(r["K"]))] = float(r["us"]) * 1e-6
    keys = sorted(rows)
    m, n, k = (np.array([x[i] for x in keys], dtype=float) for i in range(3))
    # Weight bytes: N x K of fp8 and a 4-byte scale per 128 x 128 block.
    by = n * k + np.ceil(n / 128) * np.ceil(k / 128) * 4
    return m, by, 2.0 * m * n * k, np.array([rows[x] for x in keys]), len({x[1:] for x in keys})


def model(
    lat: np.ndarray, share: np.ndarray, eta: np.ndarray, by: np.ndarray, fl: np.ndarray, form: str, bw: float, peak: float
) -> np.ndarray:
    a, b = by / (bw * share), fl / (peak * eta)
    return lat + (a + b if form == "sum" else np.sqrt(a * a + b * b))


def fit(gpu: str, path: Path) -> None:
    bw, peak, _ = GPUS[gpu]
    m, by, fl, t, shapes = load(path)
    w = np.array([1.0 / np.sum(m == x) for x in m])
    print(f"{len(t)} GEMMs ({shapes} weight shapes) at {len(set(m))} sizes of M")
    lats = np.arange(0.0, 15.01, 0.1) * 1e-6
    shares = np.arange(0.30, 1.001, 0.01)
    etas = np.arange(0.10, 0.60, 0.005)
    for form in ("rss", "sum"):
        best = (np.inf, 0.0, 0.0, 0.0)
        for share in shares:
            for eta in etas:
                # Every latency at once: (latencies, rows).
                e = np.log(model(lats[:, None], share, eta, by[None, :], fl[None, :], form, bw, peak) / t[None, :])
                cost = (e * e * w[None, :]).sum(axis=1)
                i = int(np.argmin(cost))
                if cost[i] < best[0]:
                    best = (float(cost[i]), float(lats[i]), float(share), float(eta))
        _, lat, share, eta = best
        e = np.log(model(np.array(lat), np.array(share), np.array(eta), by, fl, form, bw, peak) / t)
        bands = " ".join(f"M {lo}-{hi}: {np.exp(np.median(e[(m >= lo) & (m <= hi)])):.2f}" for lo, hi in BANDS)
        print(
            f"{form}: latency {lat * 1e6:.1f} us, share {share:.2f}, eta {eta:.3f}; median |log| "
            f"{np.median(np.abs(e)):.3f} (M <= 256: {np.median(np.abs(e[m <= 256])):.3f}); model / measured {bands}"
        )


if __name__ == "__main__":
    args = sys.argv[1:]
    gpu = args.pop(0) if args and args[0] in GPUS else "mi300x"
    if len(args) > 1:
        sys.exit("usage: python bench/fit_gemm_mi300x.py [mi300x|mi355x] [CSV]")
    fit(gpu, Path(args[0]) if args else GPUS[gpu][2])
