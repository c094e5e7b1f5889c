"""The figures a benchmark client prints, named and defined as ``vllm bench serve`` defines them
(vllm/benchmarks/serve.py, ``calculate_metrics``):

- request throughput: completed requests / benchmark duration (first send to last completion);
- output token throughput: output tokens of completed requests / duration; total token
  throughput adds their prompt tokens;
- TTFT: first token minus send; TPOT: (end-to-end latency - TTFT) / (output tokens - 1), over
  requests of more than one output token; ITL: every gap between two successive tokens of a
  request, pooled over requests; E2EL: last token minus send;
- mean, median and p99 of each (numpy percentiles, linear interpolation).

A request whose stream carried no text (its one token the model's end of sequence: Workload.silent)
completes with a TTFT of 0 and 0 output tokens where the client takes the first token from the
first chunk with text, as vLLM's benchmark_serving.py of 2024 did (vllm-project/vllm#6064).
"""

from __future__ import annotations

from typing import Any

from kvcalc._record import record


@record(frozen=True)
class Percentiles:
    p50: float
    p90: float
    p99: float
    mean: float


def pct(x: Any, weights: Any = None) -> Percentiles:
    import numpy as np

    x = np.asarray(x, dtype=float)
    if len(x) == 0:
        return Percentiles(0.0, 0.0, 0.0, 0.0)
    if weights is None:
        p = np.percentile(x, [50, 90, 99])
        return Percentiles(float(p[0]), float(p[1]), float(p[2]), float(np.mean(x)))
    w = np.asarray(weights, dtype=float)
    keep = w > 0
    x, w = x[keep], w[keep]
    if not len(x):
        return Percentiles(0.0, 0.0, 0.0, 0.0)
    order = np.argsort(x, kind="stable")
    x, w = x[order], w[order]
    cum = np.cumsum(w)
    total = cum[-1]

    def q(f: float) -> float:
        return float(x[min(int(np.searchsorted(cum, f * total, side="left")), len(x) - 1)])

    return Percentiles(q(0.5), q(0.9), q(0.99), float(np.sum(x * w) / total))


@record(frozen=True)
class BenchMetrics:
    """One run's figures as a benchmark client reports them (times in seconds)."""

    completed: int
    duration_s: float
    request_throughput_per_s: float
    output_throughput_tok_per_s: float
    total_token_throughput_tok_per_s: float
    ttft_s: Percentiles
    tpot_s: Percentiles
    itl_s: Percentiles
    e2el_s: Percentiles


def bench_metrics(
    sent: Any, first: Any, finish: Any, prompts: Any, outputs: Any, itl: Any, itl_w: Any, silent: Any = None
) -> BenchMetrics:
    """From per-request send, first-token and finish times (NaN: never finished) and the pooled
    inter-token gaps (``itl`` with the number of tokens that waited each gap, ``itl_w``). ``silent``:
    where given, the requests whose stream carried no text, which the client times at a first token
    of 0 s and counts at 0 output tokens (Workload.silent)."""
    import numpy as np

    sent, first, finish = (np.asarray(a, dtype=float) for a in (sent, first, finish))
    P, O = np.asarray(prompts), np.asarray(outputs)
    if silent is not None:
        quiet = np.asarray(silent, dtype=bool)
        first = np.where(quiet, sent, first)
        O = np.where(quiet, 0, O)
    ok = ~np.isnan(finish)
    if not ok.any():
        z = pct([])
        return BenchMetrics(0, 0.0, 0.0, 0.0, 0.0, z, z, z, z)
    duration = float(np.max(finish[ok]) - np.min(sent))
    dur = max(duration, 1e-12)
    multi = ok & (O > 1)
    out_tok = float(O[ok].sum())
    return BenchMetrics(
        completed=int(ok.sum()),
        duration_s=duration,
        request_throughput_per_s=float(ok.sum()) / dur,
        output_throughput_tok_per_s=out_tok / dur,
        total_token_throughput_tok_per_s=(out_tok + float(P[ok].sum())) / dur,
        ttft_s=pct((first - sent)[ok]),
        tpot_s=pct((finish - first)[multi] / (O[multi] - 1)),
        itl_s=pct(itl, itl_w),
        e2el_s=pct((finish - sent)[ok]),
    )
