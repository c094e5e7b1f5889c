"""Calibration: the step-time constants that make kvcalc's steps match what a user measured.

Each measured run (a benchmark's request throughput X, mean prompt P and output O tokens, mean
TPOT and TTFT) fixes how many requests were decoding on average, by Little's law:
n = X x (O - 1) x TPOT. kvcalc's steady-state step at that load (plan's closed form: n decodes per
step plus the prompts arriving at X a second, whole, in chunks of the token budget) predicts the
TPOT; the fit chooses the constants that minimise the squared log-ratios of predicted to measured
TPOT over the runs, each constant inside its physical range, by coordinate descent (golden-section
search on one constant at a time, four sweeps).

Which constants are free depends on what the runs can tell apart:
- eta_bw always (memory-bound decode is what every run measures);
- fixed_s when the decoding batch varies at least 2x across runs (a per-step cost and a bandwidth
  share are otherwise the same thing to the data);
- eta_c (eta_c_fp8 for an fp8 checkpoint, eta_c_int8 for a W8A8 int8 one, eta_c_fp4 for an NVFP4 one at the fp4 peak) when some run's compute term is at least half its memory term;
- alpha_s when the runs span two or more TP sizes above 1 (else it is one more per-step cost);
- request_overhead_s from the least TTFT left over at light prefill load (prefill under half the
  time), where queueing is least.
A fit needs one run more than it has free constants (and at least two); a run faster than the
bound, runs the best fit misses by more than 30%, a run naming another model, or a run whose
figures put more than twice its max concurrency (or its requests) decoding at once is refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import field, replace
from typing import Any

from kvcalc._record import record
from kvcalc.engine.engines import Engine, triton_default_note
from kvcalc.engine.memory import FitInputs
from kvcalc.engine.plan import Traffic, _prefill_wait, _Replica
from kvcalc.engine.steptime import DEFAULTS, MATMUL_SHARE, StepConstants, for_engine
from kvcalc.errors import KvcalcError
from kvcalc.inputs.bench import BenchRun
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

RANGES = {
    "eta_bw": (0.2, 1.0),
    "eta_c": (0.1, 1.0),
    "eta_c_fp8": (0.05, 1.0),
    "eta_c_int8": (0.05, 1.0),
    "eta_c_fp4": (0.05, 1.0),
    "fixed_s": (0.0, 0.02),
    "alpha_s": (0.0, 100e-6),
}
CONTRADICTION = 0.30
"""A fitted run missed by more than this (ratio) means the runs cannot all be the same deployment."""


CONCURRENCY_SLACK = 2.0
"""How far Little's law may put a run's decoding requests above its max concurrency (or its count of
requests) before its figures contradict each other. Mean TPOT x mean output is not the mean of their
product: with every prompt sent at once, short requests' TPOT carries the other prompts' prefill, and
SGLang's 1,000-request ShareGPT run of DeepSeek-R1 in tests/serving (gpustack, rate inf) comes to
1.33x its count; twice (and one request more, for runs of one or two) is no measurement."""


@record(frozen=True)
class CalibrationRun:
    where: str
    tool: str
    tp: int
    mean_input: float
    mean_output: float
    request_throughput_per_s: float
    decoding: float
    """Requests decoding on average: throughput x (output - 1) x TPOT."""
    measured_tpot_s: float
    bound_tpot_s: float
    """The roofline bound of a decode step at that batch: no step is faster."""
    default_tpot_s: float
    fitted_tpot_s: float
    measured_ttft_s: float | None
    fitted_ttft_s: float | None
    """As the run's client means it: where it counted requests that streamed no text as 0 (BenchRun.silent_share),
    the fitted TTFT of the others times their share."""

    @property
    def residual(self) -> float:
        return self.fitted_tpot_s / self.measured_tpot_s - 1


@record(frozen=True)
class CalibrationReport:
    model: str
    gpu: str
    tp: list[int]
    engine: str
    kv_dtype: str
    constants: StepConstants
    fitted: list[str]
    held: dict[str, str]
    """Constants kept at their defaults, and why."""
    runs: list[CalibrationRun]
    rms_default: float
    """Root-mean-square of log(predicted / measured TPOT) with the default constants."""
    rms_fitted: float
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)


def _names(model: ModelSpec) -> set[str]:
    out = {model.name.lower(), *(a.lower() for a in model.aliases)}
    return out | {x.rsplit("/", 1)[-1] for x in out}


def _run_model(name: str, model: ModelSpec, known: set[str], identify: Callable[[str], str | None] | None) -> str | None:
    """Which model a run names, against the one given: None when it is that one (by name or alias, or
    by ``identify``, the catalog's loose match, of its last path part: a local copy such as
    'qwen2_5-7b-instruct/'); the other model's name when it is another; '' when ``identify`` knows
    it as none. Without ``identify`` a name that is not the model's is another model's."""
    low = name.strip().lower().rstrip("/")
    parts = [low, low.rsplit("/", 1)[-1]]
    if any(p in known for p in parts):
        return None
    if identify is None:
        return name
    found = [c for c in (identify(p) for p in parts) if c]
    if model.name in found:
        return None
    return found[0] if found else ""


def calibrate(
    model: ModelSpec,
    gpu: GPUSpec,
    runs: list[BenchRun],
    tps: list[int],
    kv_dtype: KVDtype,
    engine: Engine,
    base: StepConstants = DEFAULTS,
    weight_dtype: str | None = None,
    identify: Callable[[str], str | None] | None = None,
) -> CalibrationReport:
    """Fit the step-time constants to measured runs (``tps``: each run's TP size), from the engine
    release's defaults where ``base`` is the defaults; ``weight_dtype`` is the format the runs served
    the weights in where it is not the checkpoint's (vLLM's --quantization fp8 on a bf16 model);
    ``identify`` maps a model name a run gives to a catalog model (None: unknown), so that a run from
    a local folder is matched by its name and only a run of another known model is refused."""
    base = for_engine(base, engine)
    if not runs:
        raise KvcalcError("no runs", "calibrate", "one or more benchmark results")
    if len(tps) != len(runs):
        raise KvcalcError(f"{len(tps)} TP sizes for {len(runs)} runs", "tp", "one TP size, or one per run")
    known = _names(model)
    kernels = [r for r in runs if r.kernel_s is not None]
    if kernels:
        base = _from_measure(kernels, gpu, base)
        tps = [tp for r, tp in zip(runs, tps) if r.kernel_s is None]
        runs = [r for r in runs if r.kernel_s is None]
        if not runs:
            return _measure_report(model, gpu, kernels, kv_dtype, engine, base)
    pts: list[tuple[BenchRun, int, _Replica, float, float]] = []
    unnamed: list[str] = []
    # A run's figures -> where it was read: a second run with every figure the same is the same run given twice (a file
    # named twice, or a log holding its block twice), one point of the fit, not two.
    seen: dict[tuple[Any, ...], str] = {}
    for r, tp in zip(runs, tps):
        same = (
            tp,
            r.completed,
            r.mean_input,
            r.mean_output,
            r.request_throughput_per_s,
            r.mean_tpot_s,
            r.mean_ttft_s,
            r.mean_itl_s,
        )
        if same in seen:
            raise KvcalcError(
                f"every figure of this run is that of the run at {seen[same]}: the same run given twice",
                r.where,
                "each run once (runs at different loads: concurrencies or rates)",
            )
        seen[same] = r.where
        named = (r.model or "")[:80]
        other = _run_model(named, model, known, identify) if named else None
        if other:
            which = f" ({other})" if other != named else ""
            raise KvcalcError(
                f"this run is of {named!r}{which}, not {model.name}",
                r.where,
                f"results of {model.name}, or a calibration for {other}",
            )
        if other == "" and named not in unnamed:
            unnamed.append(named)
        tpot = r.mean_tpot_s or r.median_tpot_s or r.mean_itl_s
        missing = [
            k
            for k, v in (
                ("mean input tokens", r.mean_input),
                ("mean output tokens", r.mean_output),
                ("request throughput", r.request_throughput_per_s),
                ("TPOT", tpot),
            )
            if not v
        ]
        if missing:
            raise KvcalcError(f"the run does not say its {', '.join(missing)}", r.where, "a complete benchmark result")
        assert tpot and r.mean_input and r.mean_output and r.request_throughput_per_s
        if r.mean_output < 2:
            raise KvcalcError("one output token a request has no TPOT", r.where, "runs of two or more output tokens")
        X, P, O = r.request_throughput_per_s, r.mean_input, r.mean_output
        traffic = Traffic(prompt=max(int(round(P)), 1), output=max(int(round(O)), 2), rate=X)
        inp = FitInputs(seq=traffic.length, weight_dtype=weight_dtype)
        rep = _Replica(model, gpu, tp, 1, traffic, kv_dtype, engine, base, inp)
        n_d = X * (O - 1) * tpot
        # Little's law cannot put more requests in flight than the client sent at once, or than the run had.
        caps = [(v, what) for v, what in ((r.max_concurrency, "its max concurrency"), (r.completed, "its requests")) if v]
        v, what = min(caps) if caps else (0, "")
        if caps and n_d > CONCURRENCY_SLACK * v + 1:
            rate = f"{X:,.2f}".rstrip("0").rstrip(".")
            raise KvcalcError(
                f"the run's figures contradict each other: {rate} requests/s x {O - 1:,.0f} output tokens x TPOT "
                f"{tpot * 1e3:,.2f} ms is {n_d:,.0f} requests decoding at once, over {what} ({v:,})",
                r.where,
                "one run's result block as the benchmark printed it",
            )
        pts.append((r, tp, rep, n_d, tpot))

    def predict(c: StepConstants, rep: _Replica, n_d: float, r: BenchRun) -> tuple[float, float, float] | None:
        # plan's step at the run's load, at the batch a decoding request's own tokens see (_Replica.seen).
        got = rep.with_constants(c).step(n_d, _seen_rate(r), rep.seen(n_d, _clients(r)))
        return None if got is None else (got[0], got[2], 0.0)

    # Physically impossible: faster than the bound of the decode step at the measured batch.
    bounds = []
    for r, _tp, rep, n_d, tpot in pts:
        b = max(math.ceil(n_d), 1)
        bound = rep.sm.step(b, rep.ctx).t_bound_s
        bounds.append(bound)
        if tpot < 0.98 * bound:
            raise KvcalcError(
                f"TPOT {tpot * 1e3:,.2f} ms is below the roofline bound of {bound * 1e3:,.2f} ms for {b:,} request{'s' if b != 1 else ''} of "
                f"{model.name} on {gpu.name} (throughput above the roofline)",
                r.where,
                "a run of this model on this GPU (check the model, GPU, TP and weight format the run used)",
            )
    free, held = _free(pts, base)
    if len(pts) < max(2, len(free) + 1):
        raise KvcalcError(
            f"{len(pts)} run{'s' if len(pts) != 1 else ''} cannot fit {len(free)} constant{'s' if len(free) != 1 else ''}",
            "calibrate",
            f"at least {max(2, len(free) + 1)} runs at different loads (concurrencies or rates)",
        )

    def loss(c: StepConstants) -> float:
        tot = 0.0
        for r, _tp, rep, n_d, tpot in pts:
            got = predict(c, rep, n_d, r)
            tot += 25.0 if got is None else math.log(got[0] / tpot) ** 2
        return tot

    c = base
    for _sweep in range(4):
        for name in free:
            lo, hi = RANGES[name]
            c = _golden(lambda v, n=name, base_c=c: loss(_set(base_c, n, v)), lo, hi, c, name)
    c = _fit_overhead(c, pts, held)
    c = replace(c, origin="calibration")
    out: list[CalibrationRun] = []
    for (r, tp, rep, n_d, tpot), bound in zip(pts, bounds):
        X = r.request_throughput_per_s or 0.0
        d0 = predict(base, rep, n_d, r)
        f1 = predict(c, rep, n_d, r)
        ttft = _ttft(c, rep, n_d, X)
        if ttft is not None:
            ttft *= 1.0 - r.silent_share  # as the client's mean has it (BenchRun.silent_share)
        out.append(
            CalibrationRun(
                r.where,
                r.tool,
                tp,
                r.mean_input or 0.0,
                r.mean_output or 0.0,
                X,
                n_d,
                tpot,
                bound,
                d0[0] if d0 else math.inf,
                f1[0] if f1 else math.inf,
                r.mean_ttft_s,
                ttft,
            )
        )
    worst = max(out, key=lambda x: abs(x.residual))
    if abs(worst.residual) > CONTRADICTION:
        raise KvcalcError(
            f"the runs contradict each other: the best fit gives {worst.fitted_tpot_s * 1e3:,.2f} ms TPOT where "
            f"{worst.measured_tpot_s * 1e3:,.2f} ms was measured",
            worst.where,
            "runs of one deployment (same model, GPU, TP, engine and settings)",
        )

    def rms(key: str) -> float:
        vals = [math.log(getattr(x, key) / x.measured_tpot_s) for x in out if math.isfinite(getattr(x, key))]
        return math.sqrt(sum(v * v for v in vals) / len(vals)) if vals else math.inf

    return CalibrationReport(
        model=model.name,
        gpu=gpu.name,
        tp=sorted(set(tps)),
        engine=engine.key,
        kv_dtype=kv_dtype.name,
        constants=c,
        fitted=free + (["request_overhead_s"] if "request_overhead_s" not in held else []),
        held=held,
        runs=out,
        rms_default=rms("default_tpot_s"),
        rms_fitted=rms("fitted_tpot_s"),
        assumptions=[
            "requests decoding per run by Little's law: request throughput x (mean output - 1) x mean TPOT",
            "predicted TPOT: kvcalc plan's steady-state step at that load (the decodes, and the prompts arriving at the "
            "run's request rate, whole, in chunks of the engine's token budget), on the step-time model",
            "fit: least squares on log(predicted / measured TPOT), one constant at a time in its range "
            + ", ".join(f"{k} {lo:g}..{hi:g}" for k, (lo, hi) in RANGES.items()),
            *(
                [
                    "decode attention on SGLang's Triton backend (--attention-backend triton): each step's KV reads take "
                    "at least the longest part of a request's context one of the kernel's thread blocks reads, at "
                    "triton_cta_bytes_per_s a block, in the predictions the fit compares"
                ]
                if engine.attention_backend == "triton"
                else []
            ),
        ],
        warnings=(
            [
                f"the runs name {', '.join(repr(u) for u in unnamed)}, which kvcalc cannot match to a model: taken as "
                f"{model.name}, as given"
            ]
            if unnamed
            else []
        )
        + list(dict.fromkeys(n for t in sorted(set(tps)) if (n := triton_default_note(engine, model, gpu, t)))),
        inputs={
            "model": model.name,
            "gpu": gpu.name,
            "tp": tps,
            "engine": engine.key,
            **({"attention_backend": engine.attention_backend} if engine.attention_backend else {}),
            "kv_dtype": kv_dtype.name,
            "runs": len(out),
            **({"weight_dtype": weight_dtype} if weight_dtype else {}),
        },
    )


def _free(pts: list[tuple[BenchRun, int, _Replica, float, float]], base: StepConstants) -> tuple[list[str], dict[str, str]]:
    free, held = ["eta_bw"], {}
    batches = [p[3] for p in pts]
    # An engine that schedules ahead runs its host time beside the GPU's work: a step whose GPU work is
    # the longer does not show it, so runs of such steps cannot fit it.
    sm0 = pts[0][2].sm
    hidden = sm0.async_host and all(
        rep.sm.step(max(math.ceil(n_d), 1), rep.ctx).t_step_s > 2 * (base.fixed_s + base.per_request_s * max(math.ceil(n_d), 1))
        for _r, _tp, rep, n_d, _t in pts
    )
    if hidden:
        held["fixed_s"] = "the engine schedules the next step while the GPU runs this one: its host time is hidden in these runs"
    elif max(batches) >= 2 * max(min(batches), 1e-9) and len(pts) >= 3:
        free.append("fixed_s")
    else:
        held["fixed_s"] = "the runs' decoding batches differ by less than 2x (or fewer than 3 runs)"
    ratios = []
    for _r, _tp, rep, n_d, _t in pts:
        s = rep.sm.step(max(math.ceil(n_d), 1), rep.ctx)
        ratios.append(s.t_compute_s / s.t_memory_s)
    # The matmuls' efficiency the runs' steps use (StepModel.eta_mm): eta_c at 16 bits, eta_c_fp8 at fp8, eta_c_int8
    # at int8, eta_c_fp4 at fp4.
    eta = MATMUL_SHARE.get(pts[0][2].sm.compute_dtype, "eta_c")
    if max(ratios) >= 0.5 and len(pts) >= 4:
        free.append(eta)
    else:
        held[eta] = f"no run is compute-heavy (compute at most {max(ratios):.0%} of the memory term) or fewer than 4 runs"
    tps = {p[1] for p in pts if p[1] > 1}
    if len(tps) >= 2 and len(pts) >= 5:
        free.append("alpha_s")
    else:
        held["alpha_s"] = "the runs do not span two TP sizes above 1 (or fewer than 5 runs)"
    return free, held


def _golden(f: Any, lo: float, hi: float, c: StepConstants, name: str) -> StepConstants:
    g = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    x1, x2 = b - g * (b - a), a + g * (b - a)
    f1, f2 = f(x1), f(x2)
    for _ in range(30):
        if f1 <= f2:
            b, x2, f2 = x2, x1, f1
            x1 = b - g * (b - a)
            f1 = f(x1)
        else:
            a, x1, f1 = x1, x2, f2
            x2 = a + g * (b - a)
            f2 = f(x2)
    best = (a + b) / 2
    return _set(c, name, best) if f(best) <= f(getattr(c, name)) else c


def _clients(r: BenchRun) -> int | None:
    """The clients of a closed loop (a max concurrency and no request rate), None for open traffic."""
    c = r.max_concurrency
    return c if c and not (r.request_rate_per_s and math.isfinite(r.request_rate_per_s)) else None


def _seen_rate(r: BenchRun) -> float:
    """The prompt rate a decoding request shares its steps with. A closed loop of c clients (a
    max concurrency and no request rate) holds c requests, one of them this one: while it decodes,
    the other c - 1 each send a prompt every c / X seconds, (c - 1) / c of the run's rate X. Its own
    prompt came before its first output token, so it is not in TPOT. Open traffic (a stated rate)
    arrives independently of the request: all of X."""
    X = r.request_throughput_per_s or 0.0
    c = r.max_concurrency
    if c and not (r.request_rate_per_s and math.isfinite(r.request_rate_per_s)):
        return X * (c - 1) / c
    return X


def _ttft(c: StepConstants, rep: _Replica, n_d: float, X: float) -> float | None:
    r = rep.with_constants(c)
    got = r.step(n_d, X)
    if got is None:
        return None
    return r.ttft(n_d, got[0]) + _prefill_wait(got[2], X)


def _fit_overhead(
    c: StepConstants, pts: list[tuple[BenchRun, int, _Replica, float, float]], held: dict[str, str]
) -> StepConstants:
    """The request path: the least TTFT left over, among runs at light prefill load, once the
    predicted prefill steps (and the tokenisation) are taken away."""
    zero = replace(c, request_overhead_s=0.0)
    left = []
    for r, _tp, rep, n_d, _t in pts:
        if r.mean_ttft_s is None:
            continue
        got = rep.with_constants(zero).step(n_d, r.request_throughput_per_s or 0.0)
        if got is None or got[2] >= 0.5:
            continue
        pred = _ttft(zero, rep, n_d, r.request_throughput_per_s or 0.0)
        if pred is not None and r.silent_share < 1.0:
            # The client's mean counts the requests that streamed no text as 0 (BenchRun.silent_share): the mean
            # over those that did is what the prediction is.
            left.append(r.mean_ttft_s / (1.0 - r.silent_share) - pred)
    if not left:
        held["request_overhead_s"] = "no run with a TTFT at light prefill load (prefill under half the time)"
        return c
    # The run with the least left over queued least: what remains there is the request path.
    return replace(c, request_overhead_s=min(max(min(left), 0.0), 9.0))


def _set(c: StepConstants, name: str, v: float) -> StepConstants:
    change: dict[str, Any] = {name: v}
    if name == "eta_bw":
        # A run measures the step's bytes together: the fitted share is the matmuls' weight reads' too
        # (eta_gemm), not left at the GPU's microbenchmark figure.
        change["eta_gemm"] = v
    if name == "eta_c" or name in MATMUL_SHARE.values():
        # Likewise the matmuls' share of the peak: the fitted figure, not the GPU's measured one
        # (GemmSpec.compute_share, which for_gpu would otherwise put in eta_c_gemm).
        change["eta_c_gemm"] = v
    return replace(c, **change)


def _from_measure(kernels: list[BenchRun], gpu: GPUSpec, base: StepConstants) -> StepConstants:
    """eta_bw from kvcalc measure's timed decode steps: bytes read / time / the datasheet bandwidth,
    the median over the results (each must have run on this GPU)."""
    shares = []
    for k in kernels:
        if k.device == "cpu":
            raise KvcalcError(
                "a CPU measurement cannot calibrate a GPU's steps", k.where, f"kvcalc measure --json run on {gpu.name}"
            )
        dev = (k.device or "").lower().replace(" ", "-")
        names = {gpu.name.lower(), *(a.lower() for a in gpu.aliases)}
        if dev and not any(n in dev or dev in n for n in names):
            raise KvcalcError(
                f"this measurement ran on {k.device!r}, not {gpu.name}", k.where, f"the GPU {k.device}, or a run on {gpu.name}"
            )
        assert k.kernel_bytes and k.kernel_s
        shares.append(k.kernel_bytes / k.kernel_s / float(gpu.memory_bandwidth_bytes_per_s))
    shares.sort()
    mid = shares[len(shares) // 2] if len(shares) % 2 else (shares[len(shares) // 2 - 1] + shares[len(shares) // 2]) / 2
    if not 0 < mid <= 1.05:
        raise KvcalcError(
            f"the measured steps read {mid:.0%} of {gpu.name}'s datasheet bandwidth",
            kernels[0].where,
            "a measurement of this GPU",
        )
    return replace(base, eta_bw=min(mid, 1.0), eta_gemm=min(mid, 1.0))


def _measure_report(
    model: ModelSpec, gpu: GPUSpec, kernels: list[BenchRun], kv_dtype: KVDtype, engine: Engine, c: StepConstants
) -> CalibrationReport:
    return CalibrationReport(
        model=model.name,
        gpu=gpu.name,
        tp=[1],
        engine=engine.key,
        kv_dtype=kv_dtype.name,
        constants=replace(c, origin="calibration"),
        fitted=["eta_bw"],
        held={
            "fixed_s": "kvcalc measure times kernels, not an engine's steps: give benchmark runs to fit the rest",
            "eta_c": "as fixed_s",
            "eta_c_fp8": "as fixed_s",
            "eta_c_int8": "as fixed_s",
            "eta_c_fp4": "as fixed_s",
            "alpha_s": "as fixed_s",
            "request_overhead_s": "as fixed_s",
        },
        runs=[],
        rms_default=0.0,
        rms_fitted=0.0,
        assumptions=[
            f"eta_bw = bytes read / measured time / {gpu.name}'s datasheet bandwidth, the median of {len(kernels)} "
            "kvcalc measure result(s)"
        ],
        inputs={"model": model.name, "gpu": gpu.name, "engine": engine.key, "kv_dtype": kv_dtype.name, "runs": len(kernels)},
    )
