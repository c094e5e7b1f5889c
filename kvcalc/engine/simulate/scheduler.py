"""The scheduler: a continuous-batching engine serving a client's requests under one KV allocation
policy, event by event.

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
from collections import deque
from collections.abc import Callable

from kvcalc.engine.simulate.allocator import Allocator, Contiguous, Paged
from kvcalc.engine.simulate.client import Client
from kvcalc.engine.simulate.metrics import bench_metrics, pct
from kvcalc.engine.simulate.types import MAX_EVENTS, OVERLOAD_SHARE, TIMELINE_POINTS, PolicyRun, SimSettings, Workload
from kvcalc.engine.steptime import StepModel
from kvcalc.errors import KvcalcError


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


def serve(
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
                extra_f += c * cost.prefill_attn(max(x[2] + c // 2, 1))
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
