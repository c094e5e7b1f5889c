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
  tokens recomputed later, or swapped to host memory and back), as vLLM does. A prompt takes all
  its blocks at admission (vLLM V0, SGLang), or under vLLM V1 (``SimSettings.chunk_blocks``) those
  of each chunk as it is scheduled, admitted when its first chunk fits, no request admitted in a
  step that preempted one.
A shared prompt prefix (``shared_prefix``) is stored once under paging (prefix caching: its full
blocks are shared and not recomputed); the contiguous policies copy it into every request. A
prompt found in the prefix cache (``prompt_cache_hit``, a share of each prompt) is not recomputed
in its whole blocks under paging, and at least its last token is (vLLM's scheduler,
v1/core/kv_cache_manager.py get_computed_blocks: a prompt wholly cached recomputes its last token);
its blocks count as the request's own.

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
from typing import Any, TypeVar

from kvcalc.engine.paging import cached_prompt_tokens
from kvcalc.engine.simulate.admission import Reserve
from kvcalc.engine.simulate.allocator import Allocator, Contiguous, Paged
from kvcalc.engine.simulate.client import Client
from kvcalc.engine.simulate.metrics import bench_metrics, pct
from kvcalc.engine.simulate.types import (
    BACKLOG_SHARE,
    MAX_EVENTS,
    OVERLOAD_SHARE,
    TIMELINE_POINTS,
    PolicyRun,
    SimSettings,
    Workload,
    overload_margin,
)
from kvcalc.engine.steptime import StepModel
from kvcalc.errors import KvcalcError


def _longest(can_ever: Callable[[int], bool], upper: int) -> int:
    """The longest request (prompt + output tokens, at most ``upper``) a policy can ever hold: what
    it can hold shrinks with a request's length, so bisect."""
    lo, hi = 0, upper
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if can_ever(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


# ---- one policy ----------------------------------------------------------------------------------


F = TypeVar("F", bound=Callable[..., Any])


def _gc_paused(fn: F) -> F:
    """Runs ``fn`` with the cyclic garbage collector paused: the loop makes no reference cycles (what
    it drops is freed by reference counting), and at a million requests the collector's passes over
    the run's long-lived lists cost a fifth of the run."""
    import functools

    @functools.wraps(fn)
    def paused(*args: Any, **kw: Any) -> Any:
        import gc

        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kw)
        finally:
            if was:
                gc.enable()

    return paused  # type: ignore[return-value]


def _absorbed(reach: Any, admitted: Any, finished: Any) -> tuple[float | None, bool, bool]:
    """Over the arrival window (the 10th to the 90th percentile of the times requests reach the
    engine): the rate the engine took them in, whether its queue grew, and whether the requests in
    the system (arrived, not finished) grew, each by more than BACKLOG_SHARE of the window's
    arrivals and more than chance allows (overload_margin). A queue that grows is an overload
    however fast the steady window completes (a run short beside its latencies completes its first
    requests fast, at a batch that has not yet grown); so is a batch that grows without a queue (an
    engine that admits every request and finishes them slower than they come), judged once the
    system has had a request's median lifetime to fill. Rejected requests, never admitted, are left
    out."""
    import numpy as np

    ok = ~np.isnan(admitted)
    r, a, f = np.sort(reach[ok]), np.sort(admitted[ok]), np.sort(finished[ok])
    n = len(r)
    if n < 20:
        return None, False, False
    t0, t1 = float(r[int(0.1 * n)]), float(r[int(0.9 * n)])
    if t1 <= t0:
        return None, False, False

    def behind(t: float, done: Any) -> int:
        return int(np.searchsorted(r, t, side="right") - np.searchsorted(done, t, side="right"))

    came = int(np.searchsorted(r, t1, side="right") - np.searchsorted(r, t0, side="right"))
    limit = overload_margin(came, BACKLOG_SHARE) * came
    grew = behind(t1, a) - behind(t0, a)
    # The system fills for a request's lifetime after the first arrival whatever the load: judge its
    # growth only after that, and only where that leaves half the window.
    life = float(np.median(finished[ok] - reach[ok]))
    s0 = max(t0, float(r[0]) + life)
    piling = False
    if t1 - s0 >= (t1 - t0) / 2:
        k = int(np.searchsorted(r, t1, side="right") - np.searchsorted(r, s0, side="right"))
        piling = behind(t1, f) - behind(s0, f) > overload_margin(k, BACKLOG_SHARE) * k
    return (came - grew) / (t1 - t0), grew > limit, piling


@_gc_paused
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
    keep: dict[str, Any] | None = None,
) -> PolicyRun:
    """One policy's run of the workload. ``keep``, where given, receives each request's times (s):
    'sent', 'first' (its first token), 'finish', and 'measured' (a mask: it completed in the
    measured window), so that runs of two stages can be joined request by request (plan's check of
    a disaggregated deployment)."""
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
    # [request, prompt tokens left, tokens done, length after, tokens found in the prefix cache, tokens
    # its blocks hold]
    prefilling: deque[list[int]] = deque()
    heap: list[tuple[int, int]] = []
    front: deque[int] = deque()  # preempted requests, served before new arrivals
    # SGLang (TokenRatio.requeue 'tail'): retracted requests join the waiting queue at its tail, behind the requests that
    # reached the engine before they were retracted: (when retracted, request).
    behind: deque[tuple[float, int]] = deque()
    order: list[int] = []  # admission order, for LIFO preemption
    # The run's state: the step count, the clock, host-transfer time owed to the next step, the sum
    # of the decoding requests' bases, the prompt tokens the prefilling requests hold, and counters.
    S = 0
    now = stall = 0.0
    held = 0.0  # prefill steps of their own (not mixed) the decoding requests waited through since their last token
    mixed = st.mixed
    # DP attention in lockstep (StepModel.lockstep_ranks; prompt steps of their own only): the other
    # ranks are alike, each running prompt steps as often as this one does (its prompt steps so far
    # over the time so far), so theirs come at ``others`` times that rate, and a step of this rank's
    # decodes of t seconds steps beside at least one of them with chance 1 - e^(-rate x t): then it
    # runs without CUDA graphs and for at least a prompt step's time (``foreign_dt``, this rank's
    # last). ``foreign`` counts such steps owed, as they accrue over the decode spans.
    others = 0 if mixed else cost.lockstep_ranks
    if others and st.busy_ranks is not None:
        others = min(others, st.busy_ranks - 1)
    foreign = foreign_dt = 0.0
    own_prompt_steps = 0
    sum_base = pf_done = swap_used = 0
    done = rejected = preemptions = recomputed = swapped_bytes = 0
    blocked = blocked_at = -1  # the request that last did not fit, and the allocator's version then
    q10 = max(int(0.1 * n), 1)
    q90 = max(int(0.9 * n), q10 + 1)
    w0: float | None = None  # the measured window: the 10th and 90th percentile completions
    w1: float | None = None
    # Integrals of live bytes, reserved bytes and running requests, and the time they span, from the
    # start until the window closes (whole_*), and their values when it opens (at_w0): the window's
    # are the difference (the whole run's serve a window too short to hold a step).
    whole_live = whole_res = whole_run = whole_t = 0.0
    at_w0 = (0.0, 0.0, 0.0, 0.0)
    tl: list[tuple[float, int, int]] = []
    tl_gap = 0.0
    report_every = max(n // 100, 1)
    mns = st.max_num_seqs
    mnbt = st.max_num_batched_tokens
    # vLLM V1 (paged): a prompt takes its blocks chunk by chunk, is admitted when its first chunk fits,
    # and no request is admitted in a step that preempted one (Engine.prompt_blocks).
    chunk = paged and st.chunk_blocks and mixed
    skip_admit = skipped = False
    # V1 with prefix caching: a request preempted mid-prefill or decoding -> the tokens of its computed
    # full blocks still in the cache (its first blocks, evicted last).
    cache_kept: dict[int, int] = {}
    # ... and the blocks in use and the blocks freed so far when it was preempted: the blocks allocated
    # since (the change in use plus those freed) came first from its freed blocks, its last ones first.
    cache_at: dict[int, tuple[int, int]] = {}
    freed_total = 0
    keeps = chunk and st.prefix_caching
    blk = B or 1
    # Bound methods looked up once: the loop below runs millions of times.
    take, client_finished = client.take, client.finished
    lines, span_s, span_until = cost.lines, cost.span_s, cost.span_until
    to_full, in_use, fits_held, alloc_fits = alloc.steps_to_full, alloc.in_use, alloc.fits_held, alloc.fits
    unit, cap = alloc.unit, alloc.cap
    start_decode, stop_decode, release = alloc.start_decode, alloc.stop_decode, alloc.release
    itl_add, itl_w_add = itl.append, itl_w.append
    push, pop = heapq.heappush, heapq.heappop
    reserve, prompt_done, closed = alloc.reserve, alloc.prompt_done, st.concurrency is not None
    own_blocks = alloc.own_blocks if isinstance(alloc, Paged) else (lambda length: 0)
    grow: Callable[[int, int], None] = alloc.grow if isinstance(alloc, Paged) else (lambda i, tokens: None)
    kv, prefill_attn, kv_of, pattn_of = cost.kv, cost.prefill_attn, cost.kv_memo, cost.prefill_attn_memo
    isnan = math.isnan
    longest = _longest(alloc.can_ever, int(np.max(wl.prompts + wl.outputs)))
    # SGLang's --scheduler-recv-interval N (SimSettings.recv_interval): the scheduler takes in the requests that
    # reached it only where its counter reaches N, a decode step adding 1 and any step with prompt work 1000; idle, its
    # loop takes them at once. ``vis``: when it last took them in; ``since``: decode steps since then.
    N = st.recv_interval
    # SGLang's overlap loop (StepModel.admit_lag) polls as a step begins, for the step after it, and counts the step it
    # launched: it decides at the same step ends as a loop without it, taking in what had reached it one step earlier.
    # ``vis`` is then the start of the step whose end the last decision came at.
    lag = cost.admit_lag
    ride = cost.tail_step  # (StepModel.tail_step: tail_step below)
    recv_gate = N > 1 or lag
    # TensorRT-LLM's batch waiting (SimSettings.batch_wait_iters and batch_wait_ratio; Engine.check_batch_wait): while
    # requests decode, the prompts that reached the engine wait, an iteration at a time (``bwc`` counts those its
    # scheduler held them back), until the count reaches bw_n or their tokens and one a decoding request reach bw_tok;
    # then every prompt that had reached it runs (``vis``: arrivals up to then are let through) and the count starts
    # again. Without decoding requests nothing waits. Both must be set: at a ratio of 0 the token test always passes,
    # at 0 iterations the count's (py_executor.py _waiting_requests).
    bw_n = st.batch_wait_iters
    bw_tok = st.batch_wait_ratio * st.max_num_batched_tokens
    bw = bw_n > 0 and bw_tok > 0
    bwc = 0
    gate = recv_gate or bw
    # vLLM V0 (StepModel.decode_graph_max_len): a decode step replays its CUDA graph only while its longest sequence
    # is at most max_seq_len_to_capture (8,192; no sequence passes max_model_len, the other bound). The decoding
    # requests' bases, largest first (lazily: an entry whose request left, or came back with another base, is stale).
    gml = cost.decode_graph_max_len
    longest_base: list[tuple[int, int]] = []
    # SGLang's reserve for the output tokens to come (SimSettings.token_ratio; paged only; kvcalc.engine.simulate.admission),
    # with its radix cache off and the requests asking to ignore EOS the other test (TokenRatio, add_one_req_ignore_eos).
    res = (
        Reserve(st.token_ratio, st.ignore_eos and not st.prefix_caching)
        if st.token_ratio is not None and paged and not chunk
        else None
    )
    eos = res is not None and res.eos
    eos_own = res is not None and res.own
    tail = res is not None and res.ratio.requeue == "tail"
    src = 2  # where the request admit() last tried came from: 0 front, 1 behind, 2 the client
    vis = -math.inf
    since = 0

    def live_bytes() -> int:
        tokens = sum_base + len(dec_base) * S + pf_done
        r = len(dec_base) + len(prefilling)
        if prefix and r > 1:
            tokens -= (r - 1) * prefix  # the shared prefix is held once
        return tokens * per_token

    def resume(i: int) -> bool:
        """A swapped-out request comes back from host memory over the host link; it decodes on."""
        nonlocal swap_used, stall
        length = P[i] + gen[i]
        assert isinstance(alloc, Paged)
        if not alloc_fits(length, S, len(dec_base)):
            return False
        alloc.take_prefix()
        swap_used -= swapped.pop(i) * per_token
        stall += length * per_token / host_bw
        add_decoder(i, length)
        return True

    def add_decoder(i: int, length: int) -> None:
        nonlocal sum_base
        base = length - S
        dec_base[i] = base
        sum_base += base
        if gml is not None:
            push(longest_base, (-base, i))
        if paged:
            start_decode(base)
        f = S + (O[i] - gen[i])
        fin[i] = f
        push(heap, (f, i))
        if res is not None:
            res.add(i, f, S)

    def drop_decoder(i: int) -> int:
        nonlocal sum_base, freed_total
        base = dec_base.pop(i)
        f = fin.pop(i, None)
        if res is not None and f is not None:
            res.drop(i, f)
        sum_base -= base
        if paged:
            stop_decode(base)
            freed_total += own_blocks(base + S)
        return base + S

    def finished(i: int) -> None:
        nonlocal done, w0, w1, at_w0
        if not paged:
            release(i)  # (a paged request's blocks went with its decode: stop_decode)
        finish[i] = now
        gen[i] = O[i]
        done += 1
        if closed:
            client_finished(now)
        if done == q10:
            w0 = now
            at_w0 = (whole_live, whole_res, whole_run, whole_t)  # this event counts in the window
        if done == q90:
            w1 = now
        if progress and done % report_every == 0:
            progress(done, n)

    # Each prompt's tokens already in the prefix cache (paging only): whole blocks of its share.
    # (Workload.prompt_cache_hits, where given, one share a request in place of the one share.)
    hits = wl.prompt_cache_hits
    if not (paged and B) or (not wl.prompt_cache_hit if hits is None else not any(hits)):
        C = None
    elif hits is None:
        C = [cached_prompt_tokens(wl.prompt_cache_hit, p, B) for p in P]
    else:
        C = [cached_prompt_tokens(float(h), p, B) for h, p in zip(hits, P, strict=True)]
    some_cached = bool(C or alloc.cached_prefix)  # else no prompt starts with tokens cached (min(0, length - 1) = 0)

    def admit() -> None:
        nonlocal rejected, blocked, blocked_at, pf_done, skip_admit, skipped, recomputed, src
        if skip_admit:
            skip_admit = False
            if dec_base or prefilling:
                skipped = True  # (the next step tries again)
                return
        cached_prefix = alloc.cached_prefix
        claim = free = 0.0
        clip = inputs = 0
        states: list[tuple[int, int]] | None = None  # (ignore-EOS test) outputs to come and tokens held, in SGLang's order
        stop = False  # (the batch has claimed every free token)
        if res is not None:
            # What the batch has claimed of the free tokens: the running requests' outputs to come at the ratio, then
            # each request taken in now, its whole prompt and output (PrefillAdder.rem_total_tokens).
            res.wait, res.held = 0, False
            claim = res.claim(S, [O[x[0]] - gen[x[0]] for x in prefilling])
            free = (cap - in_use(S, len(dec_base))) * blk
            clip = res.clip
        # V1's token budget left for a new prompt's first chunk, after the decodes and the prompts running.
        avail = (mnbt - len(dec_base) - (sum([x[1] for x in prefilling]) if prefilling else 0)) if chunk else 1
        while len(dec_base) + len(prefilling) < mns:
            if avail <= 0:
                return
            if front:
                i, src = front[0], 0
            else:
                nxt = client.head
                if behind and (nxt is None or nxt[0] > (vis if gate else now) or behind[0][0] < nxt[0]):
                    i, src = behind[0][1], 1  # (retracted before the client's next reached the engine)
                else:
                    if nxt is None or nxt[0] > (vis if gate else now):
                        return
                    i, src = nxt[1], 2
                    if P[i] + O[i] > longest:
                        rejected += 1
                        take()
                        if closed:
                            client_finished(now)
                        continue
            if swapped and i in swapped:
                if not resume(i):
                    blocked, blocked_at = i, alloc.version
                    return
            elif not chunk:
                length = P[i] + gen[i]
                cached = min(max(cached_prefix, C[i] if C else 0), length - 1) if some_cached and gen[i] == 0 else 0
                if res is not None:
                    left = O[i] - gen[i]
                    need = length - cached + (left if left < clip else clip)
                    if eos:
                        # The ignore-EOS test in place of the claim's (add_one_req_ignore_eos); from 0.4.8 the prompt
                        # must first fit beside the claim too. Tried again at the next event: between events the
                        # running requests' growth and their outputs' fall cancel.
                        inp = -(-(length - cached) // blk) * blk
                        if eos_own and inp > min(free - inputs, free - claim):
                            res.held = True
                            return
                        if states is None:
                            run = [(f - S, P[j] + O[j] - (f - S)) for j, f in fin.items()]
                            run += [(O[x[0]] - gen[x[0]], P[x[0]] + gen[x[0]]) for x in prefilling]
                            trial = res.eos_order((left, length) if left > 0 else None, run)
                        else:
                            trial = res.eos_insert(states, left, length)
                        if not res.eos_fits(trial, int(free) - inputs - (inp if eos_own else P[i])):
                            res.held = True
                            return
                        states = trial
                        inputs += inp
                    elif need >= free - claim:
                        res.wait = need  # not while the batch's claim stands: tried again at the next event
                        res.held = True
                        return
                    claim += need
                if not reserve(i, length, P[i] + O[i], S, len(dec_base)):
                    blocked, blocked_at = i, alloc.version  # it will not fit before room is freed
                    return
                prefilling.append([i, length - cached, cached, length, cached, length])
                pf_done += cached
                # (budget_state: under the ignore-EOS test the batch may claim every free token; no more then)
                stop = eos and (free - claim <= 0 or free - inputs <= 0)
            else:
                length = P[i] + gen[i]
                cached = min(max(cached_prefix, C[i] if C else 0), length - 1) if some_cached and gen[i] == 0 else 0
                lost = 0
                if cache_kept and i in cache_kept:
                    # Its cached blocks were the pool's free blocks when it was preempted, its last ones
                    # first in line: every block allocated since took one of them, and as many as are still
                    # free remain. They stay cached until it is taken in (not when a try to take it in
                    # finds no room: until 2026-12-06 such a try forgot them, and the request recomputed
                    # its whole prompt, uncounted).
                    # (Conditional expressions, not min and max: this runs at every try to take one in.)
                    kept = cache_kept[i]
                    u0, f0 = cache_at[i]
                    held = in_use(S, len(dec_base))
                    taken = held - u0 + freed_total - f0  # (blocks allocated since; below 0 counts as 0)
                    own = (kept - cached_prefix) // blk - (taken if taken > 0 else 0)  # (below 0 counts as 0)
                    room = cap - held  # (likewise)
                    left = cached_prefix + ((own if own < room else room) if own > 0 and room > 0 else 0) * blk
                    now_kept = kept if kept < left else left
                    most = now_kept if now_kept > cached else cached
                    lost = kept - most if kept > most else 0
                    cached = most if most < length - 1 else length - 1
                rest = length - cached
                need = cached + (rest if rest < avail else avail)
                if not reserve(i, need, P[i] + O[i], S, len(dec_base)):
                    blocked, blocked_at = i, alloc.version  # it will not fit before room is freed
                    return
                if cache_kept and i in cache_kept:
                    del cache_kept[i], cache_at[i]
                    recomputed += lost
                prefilling.append([i, length - cached, cached, length, cached, need])
                pf_done += cached
                avail -= length - cached
            if src == 0:
                front.popleft()
            elif src == 1:
                behind.popleft()
            else:
                take()
            if isnan(admitted[i]):
                admitted[i] = now
            order.append(i)
            if stop:
                return

    def fits_first(j: int, nd: int, held: int) -> bool:
        """Whether request j could be admitted beside ``nd`` decodes with ``held`` blocks in use: its
        whole length, or under V1 its first chunk (the budget the decodes leave)."""
        first = P[j] + gen[j]
        if chunk and first > mnbt - nd:
            first = mnbt - nd
        return first > 0 and fits_held(first, held)

    def preempt_until_fits() -> None:
        """Paged: free blocks by preempting the most recently admitted running requests (their
        computed tokens to be computed again; under V1 with prefix caching, a request's full blocks,
        a prompt's or a decoding request's, stay cached, less those taken at once: cache_kept); SGLang
        (token_ratio) retracts the decoding request with the fewest output tokens first, of those the longest
        prompt (schedule_batch.py retract_decode sorts by (output, -prompt) and retracts from the end)."""
        nonlocal preemptions, swap_used, swapped_bytes, stall, recomputed, pf_done, skip_admit, freed_total
        assert isinstance(alloc, Paged)
        before = preemptions
        while order:
            over = in_use(S, len(dec_base)) - cap
            if over <= 0:
                # SGLang retracts on until the requests left have room for its next steps (TokenRatio.room), one at least,
                # and never the last.
                if res is None or preemptions == before or len(fin) <= 1 or -over * blk >= res.ratio.room(len(fin)):
                    break
            if res is not None and fin:
                i = res.victim(fin, S, O, P)
                # (Its entry in ``order`` stays: an entry is popped only after every later one, its newer entries
                # among them, so it is popped only while its request is not running, and skipped.)
            else:
                i = order.pop()
            skip_admit = chunk
            kept = 0
            if i in dec_base:
                length = drop_decoder(i)
                if keeps:
                    # A decoding request's full blocks, its prompt's and its output's so far, stay cached as
                    # a prompt's do (V1 hashes every full block a request computes), less those the requests
                    # short of blocks take now (its last blocks, freed first).
                    full_blocks = length // blk * blk
                    spare = own_blocks(length) - over
                    kept = alloc.cached_prefix + (spare if spare > 0 else 0) * blk
                    if full_blocks < kept:
                        kept = full_blocks
                    if kept > 0:
                        cache_kept[i] = kept
                        cache_at[i] = (in_use(S, len(dec_base)), freed_total)
            elif i in alloc.pref_blocks:
                keep = found = 0
                for k, x in enumerate(prefilling):
                    if x[0] == i:
                        pf_done -= x[2]
                        found = x[4]
                        if keeps:
                            # Its computed full blocks stay cached, less those the requests short of blocks
                            # take now (its last blocks, freed first).
                            keep = min(x[2] // blk * blk, alloc.cached_prefix + max(alloc.pref_blocks[i] - over, 0) * blk)
                        recomputed += max(x[2] - max(keep, x[4]), 0)
                        del prefilling[k]
                        break
                freed_total += alloc.pref_blocks[i]
                alloc.prompt_done(i)
                if keep > found:
                    cache_kept[i] = keep
                    cache_at[i] = (in_use(S, len(dec_base)), freed_total)
                length = 0
            else:
                continue
            preemptions += 1
            if length:
                gen[i] = length - P[i] + 1
            nbytes = length * per_token
            if st.preempt == "swap" and length and swap_used + nbytes <= st.swap_bytes:
                swapped[i] = length
                swap_used += nbytes
                swapped_bytes += nbytes
                stall += nbytes / host_bw
                cache_kept.pop(i, None)  # it comes back from host memory, not the prefix cache
                cache_at.pop(i, None)
            else:
                recomputed += length - kept
            if tail:
                behind.append((now, i))  # SGLang: at the waiting queue's tail, in the order retracted
            else:
                front.appendleft(i)
        if res is not None and preemptions > before:
            # SGLang's ratio after a retraction: the requests left's outputs so far and 20 steps each, over their
            # max_new_tokens (schedule_batch.py retract_decode).
            res.retracted(sum(O[j] - (f - S) for j, f in fin.items()), len(fin), sum(O[j] for j in fin), S)

    def complete_due() -> tuple[int, int]:
        """The decoding requests whose last token this step made leave: (how many, their tokens)."""
        k = tokens = 0
        while heap and heap[0][0] <= S:
            f, i = pop(heap)
            if fin.get(i) != f:
                continue  # stale: the request was preempted since
            tokens += drop_decoder(i)
            finished(i)
            k += 1
        return k, tokens

    def tail_step(k: int, tokens: int) -> float:
        """SGLang's overlap loop launched the step after this one before it read this one's tokens (event_loop_overlap:
        run_batch, then process_batch_result of the batch before; a request is finished only as its result is read,
        Req.check_finished / update_finish_state, and filter_batch keeps it until then): the ``k`` requests that just
        made their last token ride one more decode step. Where nothing else runs, that step is the GPU's alone and a
        request that comes meanwhile starts after it (the loop waits for its result before it polls again): its
        seconds, else 0 (in a batch that runs on, the extra seat for one step is not charged)."""
        if not (ride and k) or dec_base or prefilling:
            return 0.0
        return float(span_s(lines(k, tokens / k), 1))

    steps = max_running = 0
    # What was in use and live when the last event ended, while nothing has changed them since (-1: ask).
    u_last = l_last = -1
    for events in range(1, MAX_EVENTS + 2):  # noqa: B007 (counted, reported after the loop)
        if done + rejected >= n:
            break
        # V1 (chunk): first the running prompts' blocks for this step's chunks, then admission, which a
        # preemption (here or after the last step, as the decodes grew) skips for this step.
        if chunk and prefilling:
            # The blocks of each prompt's chunk in this step, taken in admission order as the budget
            # gives the chunks out; past the pool, the last admitted requests are preempted first.
            b = mnbt - len(dec_base)
            grew = False
            for x in prefilling:
                if b <= 0:
                    break
                c = x[1] if x[1] < b else b
                b -= c
                if x[2] + c > x[5]:
                    x[5] = x[2] + c
                    grow(x[0], x[5])
                    grew = True
            if grew:
                if in_use(S, len(dec_base)) > cap:
                    preempt_until_fits()
                u_last = l_last = -1
        skipped = False
        if bw:
            if not dec_base:
                vis = now  # nothing decodes: the prompts run at once (_schedule does not hold them back)
            else:
                pk = client.head
                if (
                    pk is not None
                    and vis < pk[0] <= now
                    and (bwc >= bw_n or client.waiting_tokens(now, P) + len(dec_base) >= bw_tok)
                ):
                    vis, bwc = now, 0  # this iteration's scheduler lets the waiting prompts through
        if front:
            if front[0] != blocked or alloc.version != blocked_at:
                admit()
                u_last = l_last = -1
        else:
            pk = client.head
            if behind:
                if pk is not None and pk[0] > (vis if gate else now):
                    pk = None  # (not yet in the engine's queue)
                j = behind[0][1] if pk is None or behind[0][0] < pk[0] else pk[1]  # (the queue's head)
                if j != blocked or alloc.version != blocked_at:
                    admit()
                    u_last = l_last = -1
            elif pk is not None and pk[0] <= (vis if gate else now) and (pk[1] != blocked or alloc.version != blocked_at):
                admit()
                u_last = l_last = -1
        nd = len(dec_base)
        r_now = nd + len(prefilling)
        if r_now > max_running:
            max_running = r_now
        mean = (sum_base + nd * S) / nd if nd else 0.0
        budget = st.max_num_batched_tokens - nd
        if prefilling and (budget > 0 or not mixed):
            # One step with prompt work. Mixed (vLLM): every running request decodes a token and prompts
            # fill the rest of the budget. Not mixed (SGLang): the prompts alone, in the whole budget; the
            # decodes wait, their next token's gap growing by the step.
            if not mixed:
                budget = st.max_num_batched_tokens
            chunks = []
            extra_b = extra_f = 0.0
            T = 0
            for x in prefilling:
                if budget <= 0:
                    break
                c = x[1] if x[1] < budget else budget
                budget -= c
                T += c
                chunks.append((x, c))
                v = kv_of.get(x[2] + c)
                extra_b += kv(x[2] + c) if v is None else v
                h = x[2] + c // 2
                v = pattn_of.get(h)
                extra_f += c * (prefill_attn(h if h > 1 else 1) if v is None else v)
            ln = lines(nd, mean, T, extra_b, extra_f) if mixed else lines(0, 0.0, T, extra_b, extra_f)
            dt = span_s(ln, 1) + stall
            if others:
                own_prompt_steps += 1
                foreign_dt = dt - stall
            if nd and mixed:
                itl_add(dt + held)
                itl_w_add(nd)
                held = 0.0
            elif nd:
                held += dt
            stall = 0.0
            if w1 is None or not tl or now - tl[-1][0] >= tl_gap:
                live0, res0 = l_last if l_last >= 0 else live_bytes(), (u_last if u_last >= 0 else in_use(S, nd)) * unit
            else:
                live0 = res0 = -1
            t0 = now
            now += dt
            steps += 1
            if recv_gate:
                # A step with prompt work weighs 1000: the next loop takes requests in. The overlap loop counts the
                # step it launched, so it took them in as this step began (for the step after it).
                vis = t0 if lag else now
                since = 0
            if mixed:
                S += 1
                if heap and heap[0][0] <= S:
                    complete_due()
            ended = ended_tokens = 0
            for x, c in chunks:
                x[1] -= c
                x[2] += c
                pf_done += c
            # The chunks are the first prompts waiting, each taking all it has left but perhaps the last
            # (the budget ran out): those that ended are the first len(chunks), or one fewer.
            for _ in range(len(chunks) if not chunks[-1][0][1] else len(chunks) - 1):
                x = prefilling.popleft()
                i = x[0]
                pf_done -= x[2]
                prompt_done(i)
                if isnan(first_tok[i]):
                    first_tok[i] = now
                gen[i] += 1
                if gen[i] >= O[i]:
                    finished(i)
                    ended += 1
                    ended_tokens += x[3]
                else:
                    add_decoder(i, x[3])
            g = tail_step(ended, ended_tokens)
            if g:
                now += g
                dt += g
                steps += 1
            u1 = -1
            if paged:
                u1 = in_use(S, len(dec_base))
                if u1 > cap:
                    preempt_until_fits()
                    u1 = -1
        elif nd == 0:
            u_last = l_last = -1
            if prefilling:
                continue
            if res is not None:
                res.idle(S)  # the scheduler idles (self_check_during_idle)
            if front:
                # Nothing runs and the first preempted request still does not fit: it never will.
                front.popleft()
                rejected += 1
                if closed:
                    client_finished(now)
                continue
            if res is not None and res.held:
                # Nothing runs and SGLang's tests still hold the request back: its prompt and output fill the pool, and
                # the engine would never take it in (the tests are at their loosest with nothing running).
                res.held = False
                if src == 1:
                    behind.popleft()
                else:
                    take()
                rejected += 1
                if closed:
                    client_finished(now)
                continue
            nxt = client.head
            if nxt is not None and nxt[0] > now:
                now = nxt[0]
            if gate:
                vis, since = now, 0  # idle, the loop spins and takes the request in as it reaches it
            continue
        else:
            # A span of decode-only steps up to the next event.
            v0_cut = 0
            if gml is not None and nd:
                while dec_base.get(longest_base[0][1]) != -longest_base[0][0]:
                    pop(longest_base)
                past = -longest_base[0][0] + S - gml  # the longest sequence at this step, past the captured length
                if past > 0:
                    ln = lines(nd, mean, 0, 0.0, 0.0, True)  # without its graph
                else:
                    ln = lines(nd, mean)
                    v0_cut = 1 - past  # the steps before the longest passes it
            else:
                ln = lines(nd, mean)
            K = heap[0][0] - S if heap else 1
            if K < 1:
                K = 1
            if v0_cut and K > v0_cut:
                K = v0_cut
            h0 = u_last if u_last >= 0 else in_use(S, nd)
            pk = client.head
            if skipped and K > 1:
                # Admission was skipped this step (V1, after a preemption): the next step admits the request
                # waiting first if its first chunk fits by then (blocks only run short as the span goes on).
                j = front[0] if front else (pk[1] if pk is not None and pk[0] <= now else -1)
                if j >= 0 and r_now < mns and fits_first(j, nd, h0):
                    K = 1
            if foreign >= 1.0:
                K = 1  # a step beside another rank's prompt step
            # Cut at the step blocks run out (paged), then at the next arrival that could be admitted.
            full = to_full(S, K, nd, h0) if paged else K + 1
            if full < K:
                K = full
            if res is not None and res.wait and K > 1 and r_now < mns:
                t = res.turn(K, S, fin, (cap - h0) * blk)  # the step SGLang's decaying claim lets the request held back in
                if t < K:
                    K = t
            dt = span_s(ln, K)
            if foreign >= 1.0:
                foreign -= 1.0
                e = span_s(lines(nd, mean, 0, 0.0, 0.0, True), 1)
                dt = e if e > foreign_dt else foreign_dt
            elif bw:
                if not front and not behind and pk is not None and pk[0] > vis and r_now < mns:
                    # The prompt at the head is held back from the first iteration after it reaches the engine (k0) to
                    # the one at which the count reaches bw_n, or at once if its tokens pass the budget's share.
                    if pk[0] <= now:
                        k0 = 0
                    elif dt >= pk[0] - now:
                        k0 = span_until(ln, pk[0] - now, K, True)[0]  # the step in which it reaches the engine
                    else:
                        k0 = K  # it reaches the engine after the span
                    if k0 < K:
                        k = k0 if client.waiting_tokens(pk[0], P) + nd >= bw_tok else k0 + bw_n - bwc
                        if k < K:
                            K = k if k > 0 else 1
                            dt = span_s(ln, K)
                        bwc += K - k0
            elif recv_gate:
                if not front and not behind and pk is not None and pk[0] > vis and r_now < mns and fits_first(pk[1], nd, h0):
                    # Taken in at the first receive once it has reached the scheduler: every N decode steps, the
                    # next at the end of step N - since; with the overlap loop (which counts the step it launched)
                    # one step earlier, at the start of that step, for the step after it.
                    first = N - since - lag
                    if pk[0] <= now:
                        k = first
                    elif dt >= pk[0] - now:
                        k = span_until(ln, pk[0] - now, K, True)[0]  # the step in which it reaches the scheduler
                        k = first if k <= first else first + -(-(k - first) // N) * N
                    else:
                        k = K  # it reaches the scheduler after the span
                    k += lag  # (the overlap loop had launched the step after that receive already)
                    if k < K:
                        K = k
                        dt = span_s(ln, K)
            elif not front and not behind and pk is not None and pk[0] > now and dt >= pk[0] - now:
                if r_now < mns and fits_first(pk[1], nd, h0):
                    K, dt = span_until(ln, pk[0] - now, K, True)
            if others and own_prompt_steps and now > 0:
                foreign += K * -math.expm1(-others * own_prompt_steps / now * dt / K)
            if recv_gate:
                # The receives this span passed: the last one took in whatever had reached the scheduler by then (with
                # the overlap loop, one step earlier: at the start of a step, not its end).
                tot = since + K
                if tot >= N:
                    off = tot // N * N - since - lag
                    vis = now + stall + (dt if off == K else span_s(ln, off) if off else 0.0)
                since = tot % N
            # The span's K gaps take its mean step each; what the decodes waited before it (a prompt step they
            # sat out, a host transfer) lengthens the first gap alone, as a client sees one long gap.
            wait = held + stall
            if wait > 0.0:
                itl_add(dt / K + wait)
                itl_w_add(nd)
                if K > 1:
                    itl_add(dt / K)
                    itl_w_add(nd * (K - 1))
            else:
                itl_add(dt / K)
                itl_w_add(nd * K)
            dt += stall
            stall = held = 0.0
            if w1 is None or not tl or now - tl[-1][0] >= tl_gap:
                live0, res0 = l_last if l_last >= 0 else live_bytes(), h0 * unit
            else:
                live0 = res0 = -1
            now += dt
            S += K
            steps += K
            u1 = -1  # what is in use now, where known without asking
            if heap and heap[0][0] <= S:
                g = tail_step(*complete_due())
                if g:
                    now += g
                    dt += g
                    steps += 1
                full = K  # completions change the blocks held: check
            elif not paged:
                u1 = h0  # a contiguous pool changes only at admission and release
            if paged and K == full:
                u1 = in_use(S, len(dec_base))
                if u1 > cap:
                    preempt_until_fits()
                    u1 = -1
        # The memory integrals (trapezoids between the figures before the step or span and after it) and
        # the timeline; the figures before it are -1 when they were not needed as it began.
        if live0 < 0:
            if not (w1 is None or not tl or now - tl[-1][0] >= tl_gap):
                u_last = l_last = -1
                continue
            live0, res0 = live_bytes(), in_use(S, len(dec_base)) * unit
            u1 = -1
        u_last = u1 if u1 >= 0 else in_use(S, len(dec_base))
        l_last = live1 = live_bytes()
        res1 = u_last * unit
        if dt > 0 and w1 is None:
            whole_live += (live0 + live1) * 0.5 * dt
            whole_res += (res0 + res1) * 0.5 * dt
            whole_run += r_now * dt
            whole_t += dt
        if not tl or now - tl[-1][0] >= tl_gap:
            tl.append((now, live1, res1))
            if len(tl) > TIMELINE_POINTS:
                del tl[1::2]
                tl_gap = (tl[-1][0] - tl[0][0]) / (TIMELINE_POINTS / 2)
    else:
        raise KvcalcError(f"the {policy} run passed {MAX_EVENTS:,} events", "requests", "a smaller run (fewer requests)")
    events -= 1  # the pass that found every request done was not an event

    sent = np.asarray(client.sent)
    reach = sent + np.asarray(client.over)
    ft, fn, ad = np.asarray(first_tok), np.asarray(finish), np.asarray(admitted)
    ok = ~np.isnan(fn)
    outs = np.asarray(O)
    if w0 is None or w1 is None or w1 <= w0:
        w0, w1 = 0.0, float(np.nanmax(fn)) if ok.any() else 0.0
    span = max(w1 - w0, 1e-12)
    in_win = ok & (fn > w0) & (fn <= w1)
    multi = in_win & (outs > 1)
    acc_live, acc_res, acc_run, acc_t = (x - y for x, y in zip((whole_live, whole_res, whole_run, whole_t), at_w0))
    if w0 is None or not acc_t:
        acc_live, acc_res, acc_run, acc_t = whole_live, whole_res, whole_run, whole_t
    bench = bench_metrics(sent, ft, fn, wl.prompts, outs, itl, itl_w, wl.silent)
    if keep is not None:
        keep.update(sent=sent, first=ft, finish=fn, measured=in_win)
    offered = client.offered_per_s()
    rps = float(in_win.sum()) / span
    sustained, backlog, piling = _absorbed(reach, ad, fn) if offered is not None else (None, False, False)
    overloaded = offered is not None and (
        rps < (1 - overload_margin(int(in_win.sum()), 1 - OVERLOAD_SHARE)) * offered or backlog or piling
    )
    if offered is None:
        kept: float | None = None
    else:
        kept = rps if sustained is None else min(rps, sustained)
        if piling:
            # Admitted as they came, finished slower: the whole run's rate is what it sustained.
            kept = min(kept, bench.request_throughput_per_s)
    return PolicyRun(
        policy=policy,
        block_size=B,
        completed=int(ok.sum()),
        rejected=rejected,
        duration_s=float(np.nanmax(fn)) if ok.any() else 0.0,
        requests_per_s=rps,
        output_tokens_per_s=float(outs[in_win].sum()) / span,
        kv_utilization=acc_live / acc_res if acc_res else 0.0,
        pool_occupancy=acc_res / (pool * acc_t) if acc_t and pool else 0.0,
        mean_running=acc_run / acc_t if acc_t else 0.0,
        max_running=max_running,
        ttft_s=pct((ft - sent)[in_win]),
        tpot_s=pct((fn - ft)[multi] / (outs[multi] - 1)),
        queue_s=pct((ad - reach)[in_win]),
        preemptions=preemptions,
        recomputed_tokens=recomputed,
        swapped_bytes=swapped_bytes,
        steps=steps,
        events=events,
        window_s=(float(w0), float(w1)),
        bench=bench,
        offered_per_s=offered,
        overloaded=overloaded,
        sustained_per_s=kept,
        timeline=[(round(t, 6), int(a), int(b)) for t, a, b in tl],
    )
