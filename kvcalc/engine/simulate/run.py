"""Capacity over time: a continuous-batching engine serving an arrival stream, one KV allocation
policy at a time, on the same requests.

The engine (vLLM's scheduler, simplified): requests wait first-come first-served; a waiting
request is admitted when fewer than ``max_num_seqs`` run and its allocation fits; each step
decodes one token for every running request and spends what is left of the token budget
(``max_num_batched_tokens``) on prompt chunks (chunked prefill); a request's first token comes
with the step that finishes its prompt. KV grows as tokens are made: the prompt at prefill, one
token per decode step.

Policies (``prealloc``, ``oracle``, ``paged-B``):
- ``prealloc`` reserves ``max_len`` tokens at admission (the output length is unknown);
- ``oracle`` reserves exactly prompt + output tokens, contiguously, first-fit (holes appear);
- ``paged-B`` takes blocks of B tokens as tokens arrive; when a running request needs a block
  and none is free, the most recently admitted request is preempted (its blocks freed; its
  tokens recomputed later, or swapped to host memory and back), as vLLM does.
A shared prompt prefix (``shared_prefix``) is stored once under paging (prefix caching: its full
blocks are shared and not recomputed); the contiguous policies copy it into every request.

Step time: kvcalc's one step-time model (kvcalc.engine.steptime) for the batch as it stands at that
step: the weights it reads, the KV the batch reads and the FLOPs of its tokens at the calibrated
efficiencies, plus the fixed per-step cost and the TP all-reduces. Requests come from a client
(kvcalc.engine.simulate.client: open loop or a concurrency limit, with the request-path overhead).

Event-driven: nothing is done per token. Between two events (a completion, an arrival that can be
admitted, a step with prompt work, the step at which paged blocks run out) the batch is fixed and
its lengths grow by one per step, so the steps in between are summed in closed form and the step
at which blocks run out is found by bisection over a count kept per block offset.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kvcalc.engine.engines import Engine
from kvcalc.engine.memory import FitInputs, fit
from kvcalc.engine.simulate.allocator import Allocator, Contiguous, Paged
from kvcalc.engine.simulate.client import Client
from kvcalc.engine.simulate.metrics import BenchMetrics, Percentiles, bench_metrics, pct
from kvcalc.engine.steptime import DEFAULTS, StepConstants, StepModel
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

GiB = 2**30
POLICY_ACCEPTED = "prealloc, oracle or paged-B (B a block size in tokens, e.g. paged-16), comma-separated"
MAX_EVENTS = 50_000_000
"""A run whose estimated events exceed this is refused up front (a few minutes of work)."""
TIMELINE_POINTS = 2000
OVERLOAD_SHARE = 0.95
"""An open-loop run is overloaded when its steady window completes under this share of the rate
offered to it."""


@dataclass(frozen=True)
class Workload:
    """Requests in arrival order: arrival times (s), prompt and output token counts."""

    arrivals: Any
    prompts: Any
    outputs: Any
    description: str
    arrival: str
    shared_prefix: int = 0


@dataclass(frozen=True)
class SimSettings:
    max_len: int
    """The reservation of prealloc, and the longest request admitted."""
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    preempt: str = "recompute"
    swap_bytes: int = 4 * GiB
    constants: StepConstants = DEFAULTS
    """The step-time model's constants (defaults, --efficiency, or a calibration)."""
    concurrency: int | None = None
    """At most this many requests in flight (a benchmark client's --max-concurrency); None: open loop."""
    seed: int = 0
    """Seeds the request-path overhead's jitter."""


@dataclass(frozen=True)
class PolicyRun:
    policy: str
    block_size: int | None
    completed: int
    rejected: int
    """Requests no allocation of this policy can ever hold (longer than the pool): never admitted."""
    duration_s: float
    requests_per_s: float
    output_tokens_per_s: float
    kv_utilization: float
    """Bytes of tokens held / bytes reserved for them, time-weighted over the measured window."""
    pool_occupancy: float
    """Bytes reserved / the KV pool, time-weighted over the measured window."""
    mean_running: float
    max_running: int
    ttft_s: Percentiles
    tpot_s: Percentiles
    queue_s: Percentiles
    preemptions: int
    recomputed_tokens: int
    swapped_bytes: int
    steps: int
    events: int
    window_s: tuple[float, float]
    """The measured window: from the 10th to the 90th percentile completion."""
    bench: BenchMetrics | None = None
    """The whole run as a benchmark client reports it (first send to last completion)."""
    offered_per_s: float | None = None
    """The open-loop arrival rate offered; None for a burst or a concurrency limit."""
    overloaded: bool = False
    """Offered load above what this deployment serves: the steady window completes under 95% of it."""
    timeline: list[tuple[float, int, int]] = field(default_factory=list)
    """(time s, bytes of tokens held, bytes reserved), at most 2,000 points."""


@dataclass(frozen=True)
class SimulationReport:
    model: str
    gpu: str
    tp: int
    engine: str
    kv_dtype: str
    pool_bytes: int
    kv_bytes_per_token: int
    requests: int
    workload: str
    arrival: str
    mean_prompt: float
    mean_output: float
    shared_prefix: int
    max_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    constants: StepConstants
    preempt: str
    runs: list[PolicyRun]
    paged_over_prealloc: float | None
    """Throughput (requests/s) of the first paged policy over prealloc's, when both ran."""
    concurrency: int | None = None
    verdict: str = ""
    """The first line: whether the deployment keeps up with the load, and at what rate it saturates."""
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)


def parse_policies(text: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for part in str(text).split(","):
        p = part.strip().lower()
        if p in ("prealloc", "oracle"):
            out.append((p, None))
            continue
        m = re.fullmatch(r"paged-([0-9]{1,6})", p)
        if m and 1 <= int(m.group(1)) <= 65536:
            out.append((p, int(m.group(1))))
            continue
        raise KvcalcError(f"unknown policy {part.strip()[:40]!r}", "--policies", POLICY_ACCEPTED)
    if not out or len(out) > 8 or len(set(out)) != len(out):
        raise KvcalcError("give one to eight different policies", "--policies", POLICY_ACCEPTED)
    return out


class _State:
    """The mutable counters of one run (attributes, so the closures below can change them)."""

    def __init__(self) -> None:
        self.S = 0
        self.now = 0.0
        self.stall = 0.0
        self.swap_used = 0
        self.sum_base = 0
        self.done = 0
        self.rejected = 0
        self.preemptions = 0
        self.recomputed = 0
        self.swapped_bytes = 0


# ---- one policy ----------------------------------------------------------------------------------


def _run(
    policy: str,
    B: int | None,
    wl: Workload,
    st: SimSettings,
    cost: StepModel,
    pool: int,
    req_bytes: Callable[[int], int],
    per_token: int,
    host_bw: float,
    progress: Callable[[int, int], None] | None,
) -> PolicyRun:
    from array import array

    import numpy as np

    client = Client(wl.arrivals, st.constants.request_path_s(wl.prompts), st.concurrency, st.seed)
    P = wl.prompts.tolist()
    O = wl.outputs.tolist()
    n = len(P)
    itl, itl_w = array("d"), array("d")  # inter-token gaps and the tokens that waited each
    alloc: Allocator = (
        Paged(B, pool, per_token, wl.shared_prefix) if B is not None else Contiguous(policy, pool, req_bytes, st.max_len)
    )
    paged = alloc.paged
    prefix = alloc.prefix_tokens

    gen = [0] * n  # tokens sampled so far
    first_tok = [math.nan] * n
    admitted = [math.nan] * n
    finish = [math.nan] * n
    swapped: dict[int, int] = {}  # request -> tokens held in host memory
    fin: dict[int, int] = {}  # decoding request -> the step it samples its last token
    dec_base: dict[int, int] = {}  # decoding request -> base (its length at step S is base + S)
    prefilling: deque[list[int]] = deque()  # [request, prompt tokens left, tokens done, length after]
    heap: list[tuple[int, int]] = []
    front: deque[int] = deque()  # preempted requests, served before new arrivals
    order: list[int] = []  # admission order, for LIFO preemption
    z = _State()
    q10 = max(int(0.1 * n), 1)
    q90 = max(int(0.9 * n), q10 + 1)
    win: list[float | None] = [None, None]
    acc = [0.0, 0.0, 0.0, 0.0]  # integrals of live bytes, reserved bytes, running requests; time (measured window)
    whole = [0.0, 0.0, 0.0, 0.0]  # the same over the whole run (when the window is too short to hold a step)
    tl: list[tuple[float, int, int]] = []
    tl_gap = [0.0]
    report_every = max(n // 100, 1)

    def running() -> int:
        return len(dec_base) + len(prefilling)

    def live_bytes() -> int:
        tokens = z.sum_base + len(dec_base) * z.S + sum(x[2] for x in prefilling)
        r = running()
        if prefix and r > 1:
            tokens -= (r - 1) * prefix  # the shared prefix is held once
        return tokens * per_token

    def reserved_bytes() -> int:
        return alloc.reserved_bytes(z.S, len(dec_base), per_token)

    def fits(i: int) -> bool:
        return alloc.fits(P[i] + gen[i], z.S, len(dec_base))

    def try_admit(i: int) -> bool:
        length = P[i] + gen[i]
        if i in swapped:
            # Resume from host memory: its blocks come back over the host link; it decodes on.
            assert isinstance(alloc, Paged)
            if not alloc.fits(length, z.S, len(dec_base)):
                return False
            alloc.take_prefix()
            z.swap_used -= swapped.pop(i) * per_token
            z.stall += length * per_token / host_bw
            add_decoder(i, length)
            return True
        if not alloc.reserve(i, length, P[i] + O[i], z.S, len(dec_base)):
            return False
        cached = min(alloc.cached_prefix, length - 1) if alloc.cached_prefix and gen[i] == 0 else 0
        prefilling.append([i, length - cached, cached, length])
        return True

    def add_decoder(i: int, length: int) -> None:
        base = length - z.S
        dec_base[i] = base
        z.sum_base += base
        alloc.start_decode(base)
        f = z.S + (O[i] - gen[i])
        fin[i] = f
        heapq.heappush(heap, (f, i))

    def drop_decoder(i: int) -> int:
        base = dec_base.pop(i)
        fin.pop(i, None)
        z.sum_base -= base
        alloc.stop_decode(base)
        return base + z.S

    def finished(i: int) -> None:
        alloc.release(i)
        finish[i] = z.now
        gen[i] = O[i]
        z.done += 1
        client.finished(z.now)
        d = z.done
        if d == q10:
            win[0] = z.now
        if d == q90:
            win[1] = z.now
        if progress and d % report_every == 0:
            progress(d, n)

    def admit() -> None:
        mns = st.max_num_seqs
        while len(dec_base) + len(prefilling) < mns:
            nxt = client.peek()
            if front:
                i = front[0]
            elif nxt is not None and nxt[0] <= z.now:
                i = nxt[1]
                if not alloc.can_ever(P[i] + O[i]):
                    z.rejected += 1
                    client.take()
                    client.finished(z.now)
                    continue
            else:
                return
            if not try_admit(i):
                return
            if front and front[0] == i:
                front.popleft()
            else:
                client.take()
            if math.isnan(admitted[i]):
                admitted[i] = z.now
            order.append(i)

    def preempt_until_fits() -> None:
        """Paged: free blocks by preempting the most recently admitted running requests."""
        S = z.S
        assert isinstance(alloc, Paged)
        while alloc.over(S, len(dec_base)) and order:
            i = order.pop()
            if i in dec_base:
                length = drop_decoder(i)
            elif i in alloc.pref_blocks:
                for k, x in enumerate(prefilling):
                    if x[0] == i:
                        del prefilling[k]
                        break
                alloc.prompt_done(i)
                length = 0
            else:
                continue
            z.preemptions += 1
            if length:
                gen[i] = length - P[i] + 1
            nbytes = length * per_token
            if st.preempt == "swap" and length and z.swap_used + nbytes <= st.swap_bytes:
                swapped[i] = length
                z.swap_used += nbytes
                z.swapped_bytes += nbytes
                z.stall += nbytes / host_bw
            else:
                z.recomputed += length
            front.appendleft(i)

    def complete_due() -> None:
        S = z.S
        while heap and heap[0][0] <= S:
            f, i = heapq.heappop(heap)
            if fin.get(i) != f:
                continue  # stale: the request was preempted since
            drop_decoder(i)
            finished(i)

    def wanted() -> bool:
        """Whether this event's memory figures are needed: inside the measured window, while no window
        has begun (the whole-run fallback), or for a timeline point."""
        return win[1] is None or not tl or z.now - tl[-1][0] >= tl_gap[0]

    def record(dt: float, live0: int, res0: int, run: int) -> None:
        if live0 < 0:
            if not wanted():
                return
            live0, res0 = live_bytes(), reserved_bytes()
        live1, res1 = live_bytes(), reserved_bytes()
        if dt > 0 and win[1] is None:
            for a in (acc, whole) if win[0] is not None else (whole,):
                a[0] += (live0 + live1) * 0.5 * dt
                a[1] += (res0 + res1) * 0.5 * dt
                a[2] += run * dt
                a[3] += dt
        now = z.now
        if not tl or now - tl[-1][0] >= tl_gap[0]:
            tl.append((now, live1, res1))
            if len(tl) > TIMELINE_POINTS:
                del tl[1::2]
                tl_gap[0] = (tl[-1][0] - tl[0][0]) / (TIMELINE_POINTS / 2)

    steps = events = max_running = 0
    # Bound methods looked up once: the loop below runs millions of times.
    peek, lines, span_s, steps_until = client.peek, cost.lines, cost.span_s, cost.steps_until
    before_full, alloc_reserved, alloc_over = alloc.steps_before_full, alloc.reserved_bytes, alloc.over
    itl_add, itl_w_add = itl.append, itl_w.append
    mns = st.max_num_seqs
    while z.done + z.rejected < n:
        events += 1
        if events > MAX_EVENTS:
            raise KvcalcError(f"the {policy} run passed {MAX_EVENTS:,} events", "--requests", "a smaller run (fewer requests)")
        if front:
            admit()
        else:
            pk = peek()
            if pk is not None and pk[0] <= z.now:
                admit()
        r_now = len(dec_base) + len(prefilling)
        if r_now > max_running:
            max_running = r_now
        nd = len(dec_base)
        S = z.S
        mean = (z.sum_base + nd * S) / nd if nd else 0.0
        budget = st.max_num_batched_tokens - nd
        if prefilling and budget > 0:
            # One step with prompt work: every running request decodes a token, prompts fill the rest.
            chunks = []
            extra_b = extra_f = 0.0
            for x in prefilling:
                if budget <= 0:
                    break
                c = min(x[1], budget)
                budget -= c
                chunks.append((x, c))
                extra_b += cost.kv(x[2] + c)
                extra_f += c * cost.attn(max(x[2] + c // 2, 1))
            ln = cost.lines(nd, mean, sum(c for _, c in chunks), extra_b, extra_f)
            dt = cost.span_s(ln, 1) + z.stall
            if nd:
                itl.append(dt)
                itl_w.append(nd)
            z.stall = 0.0
            live0, res0, run0 = (live_bytes(), reserved_bytes(), running()) if wanted() else (-1, -1, running())
            z.now += dt
            z.S += 1
            steps += 1
            complete_due()
            for x, c in chunks:
                x[1] -= c
                x[2] += c
            if any(x[1] == 0 for x, _ in chunks):
                left: deque[list[int]] = deque()
                for x in prefilling:
                    if x[1]:
                        left.append(x)
                        continue
                    i = x[0]
                    alloc.prompt_done(i)
                    if math.isnan(first_tok[i]):
                        first_tok[i] = z.now
                    gen[i] += 1
                    if gen[i] >= O[i]:
                        finished(i)
                    else:
                        add_decoder(i, x[3])
                prefilling.clear()
                prefilling.extend(left)
            if paged:
                preempt_until_fits()
            record(dt, live0, res0, run0)
            continue
        if nd == 0:
            if prefilling:
                continue
            if front:
                # Nothing runs and the first preempted request still does not fit: it never will.
                i = front.popleft()
                z.rejected += 1
                client.finished(z.now)
                continue
            nxt = client.peek()
            if nxt is not None:
                z.now = max(z.now, nxt[0])
            continue
        # A span of decode-only steps up to the next event.
        ln = lines(nd, mean)
        K = max(heap[0][0] - S, 1) if heap else 1
        now = z.now
        pk = peek()
        if not front and pk is not None and pk[0] > now and r_now < mns and fits(pk[1]):
            K = min(K, steps_until(ln, pk[0] - now, K))
        if paged:
            K = before_full(S, K, nd)
        dt = span_s(ln, K) + z.stall
        itl_add(dt / K)
        itl_w_add(nd * K)
        z.stall = 0.0
        if win[1] is None or not tl or now - tl[-1][0] >= tl_gap[0]:
            # Inline live_bytes and reserved_bytes: decode-only, so no prompt is being filled.
            tokens = z.sum_base + nd * S + (sum(x[2] for x in prefilling) if prefilling else 0)
            if prefix and r_now > 1:
                tokens -= (r_now - 1) * prefix
            live0, res0 = tokens * per_token, alloc_reserved(S, nd, per_token)
        else:
            live0 = res0 = -1
        z.now = now + dt
        S += K
        z.S = S
        steps += K
        if heap and heap[0][0] <= S:
            complete_due()
        if paged and alloc_over(S, len(dec_base)):
            preempt_until_fits()
        record(dt, live0, res0, r_now)

    sent = np.asarray(client.sent)
    reach = sent + np.asarray(client.over)
    ft, fn, ad = np.asarray(first_tok), np.asarray(finish), np.asarray(admitted)
    ok = ~np.isnan(fn)
    outs = np.asarray(O)
    w0, w1 = win
    if w0 is None or w1 is None or w1 <= w0:
        w0, w1 = 0.0, float(np.nanmax(fn)) if ok.any() else 0.0
    span = max(w1 - w0, 1e-12)
    in_win = ok & (fn > w0) & (fn <= w1)
    multi = in_win & (outs > 1)
    if not acc[3]:
        acc[:] = whole
    bench = bench_metrics(sent, ft, fn, wl.prompts, outs, itl, itl_w)
    offered = client.offered_per_s()
    rps = float(in_win.sum()) / span
    return PolicyRun(
        policy=policy,
        block_size=B,
        completed=int(ok.sum()),
        rejected=z.rejected,
        duration_s=float(np.nanmax(fn)) if ok.any() else 0.0,
        requests_per_s=rps,
        output_tokens_per_s=float(outs[in_win].sum()) / span,
        kv_utilization=acc[0] / acc[1] if acc[1] else 0.0,
        pool_occupancy=acc[1] / (pool * acc[3]) if acc[3] and pool else 0.0,
        mean_running=acc[2] / acc[3] if acc[3] else 0.0,
        max_running=max_running,
        ttft_s=pct((ft - sent)[in_win]),
        tpot_s=pct((fn - ft)[multi] / (outs[multi] - 1)),
        queue_s=pct((ad - reach)[in_win]),
        preemptions=z.preemptions,
        recomputed_tokens=z.recomputed,
        swapped_bytes=z.swapped_bytes,
        steps=steps,
        events=events,
        window_s=(float(w0), float(w1)),
        bench=bench,
        offered_per_s=offered,
        overloaded=offered is not None and rps < OVERLOAD_SHARE * offered,
        timeline=[(round(t, 6), int(a), int(b)) for t, a, b in tl],
    )


PARALLEL_FROM = 200_000
"""Requests x policies from which simulate(workers=None) forks a process a policy."""
_JOB: Any = None


def _workers(asked: int | None, policies: int, n: int) -> int:
    import os
    import sys

    if policies < 2 or asked == 1 or sys.platform == "win32":
        return 1
    if asked is None:
        if n * policies < PARALLEL_FROM:
            return 1
        asked = os.cpu_count() or 1
    return max(1, min(asked, policies))


def _run_job(name: str, B: int | None) -> PolicyRun:
    wl, st, cost, pool, req_bytes, per_token, host = _JOB
    return _run(name, B, wl, st, cost, pool, req_bytes, per_token, host, None)


def _run_parallel(
    job: tuple[Any, ...], policies: list[tuple[str, int | None]], procs: int, progress: Callable[[str, int, int], None] | None
) -> list[PolicyRun]:
    """Each policy in a forked process (the workload and settings are inherited, not copied); the
    runs come back in the policies' order. Progress is reported a policy at a time."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    global _JOB
    _JOB = job
    n = len(job[0].prompts)
    try:
        with ProcessPoolExecutor(max_workers=procs, mp_context=mp.get_context("fork")) as ex:
            futs = [ex.submit(_run_job, name, B) for name, B in policies]
            out = []
            for (name, _B), f in zip(policies, futs):
                out.append(f.result())
                if progress:
                    progress(name, n, n)
            return out
    finally:
        _JOB = None


def estimate_events(wl: Workload, st: SimSettings, policies: int) -> int:
    """An upper estimate of a run's events: a few per request, plus its prompt chunks."""
    import numpy as np

    chunks = int(np.ceil(wl.prompts / max(st.max_num_batched_tokens, 1)).sum())
    return policies * (4 * len(wl.prompts) + chunks)


def simulate(
    model: ModelSpec,
    gpu: GPUSpec,
    wl: Workload,
    st: SimSettings,
    policies: list[tuple[str, int | None]],
    engine: Engine,
    kv: KVDtype,
    tp: int = 1,
    pool_bytes: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    workers: int | None = 1,
) -> SimulationReport:
    """Every policy on the same arrival stream; the KV pool from ``fit`` (the engine's budget).

    ``workers``: policies run in that many forked processes at once (None: one a CPU for runs of
    PARALLEL_FROM requests x policies or more, where the fork pays for itself; 1: in this process).
    Each policy's run is the same either way."""
    import numpy as np

    n = len(wl.prompts)
    if n < 1:
        raise KvcalcError("no requests", "--requests", "at least one request")
    st.constants.check()
    if st.concurrency is not None and not 1 <= st.concurrency <= n:
        raise KvcalcError(
            f"a concurrency of {st.concurrency:,} with {n:,} requests",
            "--concurrency",
            f"1 to the number of requests ({n:,}): each user needs a request to send",
        )
    est = estimate_events(wl, st, len(policies))
    if est > MAX_EVENTS:
        raise KvcalcError(
            f"this run needs about {est:,} events, over the bound of {MAX_EVENTS:,}",
            "--requests",
            "fewer requests or policies, or a larger --max-num-batched-tokens",
        )
    inp = FitInputs(seq=st.max_len, engine=engine, tp=tp, kv_dtype=kv, max_num_seqs=st.max_num_seqs)
    f = fit(model, gpu, inp)
    pool = pool_bytes if pool_bytes is not None else max(f.kv_pool_bytes, 0)
    cost = StepModel(model, gpu, kv, tp, constants=st.constants)
    d = cost.d
    per_token = d.kvfp.per_token
    if per_token <= 0:
        raise KvcalcError(f"{model.name} caches no tokens", "--model", "a model with attention layers")
    if pool < per_token:
        raise KvcalcError(
            f"the KV pool ({pool:,} B) does not hold one token of {model.name} on {gpu.name}",
            "--gpu",
            "a larger GPU, more --tp, or a smaller model",
        )
    host = (gpu.host_link_bytes_per_s or 64e9) / 2

    memo: dict[int, int] = {}

    def req_bytes(length: int) -> int:
        v = memo.get(length)
        if v is None:
            v = memo[length] = int(d.kvfp.request_bytes(length))
        return v

    job = (wl, st, cost, pool, req_bytes, per_token, host)
    procs = _workers(workers, len(policies), n)
    if procs > 1:
        runs = _run_parallel(job, policies, procs, progress)
    else:
        runs = []
        for name, B in policies:
            cb = (lambda done, total, _n=name: progress(_n, done, total)) if progress else None
            runs.append(_run(name, B, *job, cb))
    pre = next((r for r in runs if r.policy == "prealloc"), None)
    pg = next((r for r in runs if r.block_size), None)
    ratio = pg.requests_per_s / pre.requests_per_s if pre and pg and pre.requests_per_s else None
    assumptions = [
        f"KV pool {pool / GiB:,.2f} GiB per GPU: {f.engine_label}'s budget on {gpu.name} (kvcalc fit)",
        cost.describe() + ": the batch as it stands at each step (weights read, the KV the batch reads, the FLOPs of its tokens)",
        _client_line(wl, st),
        f"continuous batching: up to {st.max_num_seqs:,} requests, {st.max_num_batched_tokens:,} tokens per step, "
        "decodes first, then prompt chunks (chunked prefill); first-come first-served",
        f"prealloc reserves {st.max_len:,} tokens per request; oracle reserves its exact length, contiguous, first-fit; "
        "paged-B takes B-token blocks as tokens arrive",
        "paged: a request that needs a block when none is free preempts the most recently admitted request "
        + ("(recomputed later)" if st.preempt == "recompute" else f"(swapped to host memory, up to {st.swap_bytes / GiB:g} GiB)"),
        "KV bytes per token are the model's logical bytes (sliding windows and states as kvcalc size counts them); "
        "steady-state figures are the window between the 10th and 90th percentile completions; the benchmark "
        "figures (vllm bench serve's definitions) span the whole run, first send to last completion",
    ]
    if wl.shared_prefix:
        assumptions.append(
            f"shared prefix of {wl.shared_prefix:,} tokens: stored once and not recomputed under paging (prefix caching); "
            "copied into every request under prealloc and oracle"
        )
    warnings = []
    for r in runs:
        if r.rejected:
            warnings.append(f"{r.policy}: {r.rejected:,} requests can never fit this policy's pool and were not served")
    return SimulationReport(
        model=model.name,
        gpu=gpu.name,
        tp=tp,
        engine=engine.key,
        kv_dtype=kv.name,
        pool_bytes=pool,
        kv_bytes_per_token=per_token,
        requests=n,
        workload=wl.description,
        arrival=wl.arrival,
        mean_prompt=float(np.mean(wl.prompts)),
        mean_output=float(np.mean(wl.outputs)),
        shared_prefix=wl.shared_prefix,
        max_len=st.max_len,
        max_num_seqs=st.max_num_seqs,
        max_num_batched_tokens=st.max_num_batched_tokens,
        constants=st.constants,
        preempt=st.preempt,
        runs=runs,
        paged_over_prealloc=ratio,
        concurrency=st.concurrency,
        verdict=_verdict(runs, st),
        assumptions=assumptions,
        warnings=warnings,
    )


def _client_line(wl: Workload, st: SimSettings) -> str:
    c = st.constants
    load = (
        f"at most {st.concurrency:,} requests in flight (each slot sends the next request when its last one ends)"
        if st.concurrency
        else "open loop: each request is sent at its arrival time"
    )
    return (
        f"client: {load}; a request reaches the engine {c.request_overhead_s * 1e3:g} ms + "
        f"{c.tokenize_s_per_token * 1e6:g} us per prompt token (x 0.5 to 1.5, drawn per request) after it is sent, "
        "and TTFT counts from the send"
    )


def _verdict(runs: list[PolicyRun], st: SimSettings) -> str:
    """The first line a reader needs: does the deployment keep up with what it is offered?"""
    over = [r for r in runs if r.overloaded]
    if over:
        r = over[-1]
        assert r.offered_per_s is not None
        return (
            f"OVERLOADED: offered {r.offered_per_s:,.3g} requests/s, {r.policy} serves {r.requests_per_s:,.3g} requests/s "
            "in steady state; queues grow for as long as the load lasts, so latencies depend on the run's length"
        )
    r = runs[-1]
    if st.concurrency:
        return (
            f"{st.concurrency:,} requests in flight: {r.policy} serves {r.requests_per_s:,.3g} requests/s "
            f"({r.output_tokens_per_s:,.4g} output tokens/s) in steady state"
        )
    if r.offered_per_s is None:
        return (
            f"every request at once (rate inf): {r.policy} serves {r.requests_per_s:,.3g} requests/s at saturation "
            "in steady state"
        )
    return f"keeps up: offered {r.offered_per_s:,.3g} requests/s, {r.policy} serves {r.requests_per_s:,.3g} requests/s"
