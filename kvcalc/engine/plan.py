"""The cheapest deployment that carries a load within its latency targets.

A deployment is a GPU type, a tensor-parallel size, a pipeline-parallel size and a number of
data-parallel replicas. Each candidate is checked for:

- memory: ``fit`` with the engine's budget gives the requests of the traffic's full length one
  replica holds (its pool; tensor parallelism splits KV heads, pipeline parallelism splits
  layers, so for MLA models, whose latent every TP rank keeps whole, PP is what adds room);
- the steady state, on the step-time model (kvcalc.engine.steptime) the simulator steps with:
  with n requests decoding and prompts arriving at x a second, whole prompts ride in steps up to
  the token budget (Poisson lumps), prefill steps take the share u of the time and decode-only
  steps the rest; the mean step is the TPOT, and u >= 1 means the prompts outrun the replica;
  with PP the replica keeps PP micro-batches in flight, each crossing every stage;
- latency targets: TPOT as above; TTFT the request path, half a step, the M/G/1 wait for prefill
  capacity and the prompt's own steps (``verify`` checks both by simulation);
- max_num_seqs: requests in flight within the engine's default, as it applies it with PP
  (Engine.seqs_in_flight).

The load is either concurrent users (a closed loop: each always has one request in flight) or an
arrival rate; for a rate, the requests in flight per replica follow Little's law, n = lambda x
(TTFT + (output - 1) x TPOT(n)), solved by fixed-point iteration (TPOT grows with n).

Deployments are ranked by GPU count, or by cost where every GPU has a price; each names its binding
constraint. When none meets the targets, the nearest one says by how much it falls short.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import field
from typing import Any

from kvcalc._record import record
from kvcalc.engine.deployment import (
    PP_SIZES as PP_SIZES,
    TP_SIZES as TP_SIZES,
    Shape,
    candidate_shapes,
    engine_flags,
    fits_nodes,
    link_name,
    node_of,
    place,
)
from kvcalc.engine.engines import Engine, triton_default_note, triton_mla_fixed_splits
from kvcalc.engine.kv import stored_kv_dtype
from kvcalc.engine.memory import FitInputs, ReverseReport, fit
from kvcalc.engine.paging import cached_prompt_tokens
from kvcalc.engine.steptime import (
    ATTN_REQUEST_S,
    DEFAULTS,
    GEMM_LATENCY_S,
    StepConstants,
    StepModel,
    experts_runner,
    for_engine,
)
from kvcalc.engine.track import TrackRecord, for_estimate
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec
from kvcalc.units import count_of

PREFIX_BLOCK = 16
"""The block a prefix-cache hit is counted in whole: vLLM's default block size, and the paged
policy ``verify`` simulates with."""


@record(frozen=True)
class Traffic:
    prompt: int
    """Prompt tokens (the mean of a mix)."""
    output: int
    users: int | None = None
    rate: float | None = None
    prompt_tail: int | None = None
    """The prompt TTFT is judged on (a percentile of the mix); default: prompt."""
    prompt_cache_hit: float = 0.0
    """The share of each prompt already in the prefix cache when it arrives (its whole blocks are
    not computed again; ``cached_prompt_tokens``)."""
    prompt_cv2: float = 0.0
    """The squared coefficient of variation of the prompts' lengths (variance / mean^2; 0 when they
    are all one length): how much more than one length's the prompts' queue for prefill capacity
    waits (``_prefill_wait``)."""

    @property
    def length(self) -> int:
        return self.prompt + self.output

    def describe(self) -> str:
        load = count_of(self.users, "concurrent user") if self.users else f"{self.rate:g} requests/s"
        return f"{load}, {self.lengths()}"

    def lengths(self) -> str:
        hit = f" ({self.prompt_cache_hit:.0%} of each prompt in the prefix cache)" if self.prompt_cache_hit else ""
        return f"{self.prompt:,} prompt{hit} + {self.output:,} output tokens"


@record(frozen=True)
class SLO:
    ttft_s: float | None = None
    """The bound on TTFT at ``percentile`` over requests."""
    tpot_s: float | None = None
    """The bound on the mean TPOT."""
    percentile: int = 90
    """The percentile of TTFT across requests that ttft_s bounds: 50, 90 or 99 (``latency_percentile``),
    in the closed form (``_ttft_at``) and in the simulation's check alike."""


def latency_percentile(pct: float) -> int:
    """The percentile of a latency that a target at ``pct`` is judged at: 99 above 90, 90 above 50,
    else 50 (the simulation reports these three)."""
    return 99 if pct > 90 else 90 if pct > 50 else 50


def _ttft_at(mean: float, waits: list[tuple[float, float]], percentile: int) -> float:
    """TTFT at ``percentile`` from its mean and the mean queueing waits in it, each (mean wait, the
    chance an arrival waits at all). The waits together are taken as 0 with the chance that none is
    met, and otherwise exponential with the mean that keeps their total (exact for M/M/1 and M/M/c,
    Erlang; the exponential approximation for heavy-traffic M/G/1 waits, Kingman 1962), so the q
    quantile of the wait is (W / p) ln(p / (1 - q)) where p > 1 - q, else 0; the rest of the TTFT
    (the request path, the prompt's own steps, a transfer) is taken at its mean. Against kvcalc's own
    simulation of 48 disaggregated shapes the p90 lands within 15% on 44 (mean gap 8%), where the
    mean taken as the p90 is 41% below (docs/simulation.md)."""
    q = percentile / 100
    W = sum(w for w, _ in waits)
    none = 1.0
    for _, p in waits:
        none *= 1.0 - min(max(p, 0.0), 1.0)
    p_wait = 1.0 - none
    if W <= 0 or p_wait <= 1 - q:
        return mean - W
    return mean - W + W / p_wait * math.log(p_wait / (1 - q))


@record(frozen=True)
class Deployment:
    gpu: str
    tp: int
    pp: int
    replicas: int
    gpus: int
    cost_per_hour: float | None
    in_flight_per_replica: float
    """Requests in flight on one replica."""
    capacity_per_replica: int
    """Requests of the traffic's full length one replica's KV pool holds."""
    tpot_s: float
    ttft_s: float
    """The mean TTFT."""
    step_bound_by: str
    """What bounds the decode step: memory (bandwidth), compute, or the all-reduce."""
    memory_share: float
    binding: str
    """What sets the replica count: the target one replica fewer misses; with one replica, the
    constraint nearest its limit."""
    use: dict[str, float]
    """Each constraint's share of its limit (memory: requests in flight / the pool's capacity)."""
    feasible: bool
    shortfall: str = ""
    dp: int = 1
    """Data-parallel attention ranks of a replica (each with its own KV pool)."""
    ep: int = 1
    shape: str = ""
    """The replica's shape, e.g. 'DP 16 x TP 1 x EP 16'."""
    engine_flags: str = ""
    """The shape in the engine's own flags."""
    placement: str = ""
    """How the replica lies on servers and which link each collective crosses."""
    mode: str = "aggregated"
    """'aggregated' (prefill and decode on the same GPUs) or 'disaggregated' (separate pools)."""
    prefill_pool: str = ""
    """Disaggregated: the prefill instances, e.g. '2 x TP 4'."""
    decode_pool: str = ""
    kv_transfer_s: float = 0.0
    """Disaggregated: a prompt's KV from its prefill to its decode instance, part of the TTFT."""
    why: str = ""
    """Why this shape: PP across servers, DP attention for an MLA latent, disaggregation."""
    seat_wait_s: float = 0.0
    """The part of the mean TTFT spent waiting for a seat in a full KV pool (a decode instance's,
    disaggregated), from the pool's states; 0 for users, or where the pool is never full."""
    pool_full_share: float = 0.0
    """The share of the time that pool is full (its pool's states)."""
    prefill_instances: int = 0
    """Disaggregated: the prefill instances (replicas counts the decode instances); 0 aggregated."""
    prefill_tp: int = 0
    """Disaggregated: a prefill instance's TP, DP attention ranks and EP (tp, dp, ep are the decode
    instance's)."""
    prefill_dp: int = 0
    prefill_ep: int = 0
    ttft_at_percentile_s: float = 0.0
    """TTFT at the targets' percentile (SLO.percentile), which the TTFT target bounds: the mean with its
    queueing waits taken at that percentile (``_ttft_at``)."""
    prefill_busy_share: float = 0.0
    """Disaggregated: the share of the time a prefill instance runs prompt steps at its share of the rate
    (``_Prefill.load``); 0 aggregated."""
    prefill_step_s: float = 0.0
    """Disaggregated: a prefill instance's mean prompt step, seconds (the prompts it takes together as they wait)."""


@record(frozen=True)
class PlanReport:
    model: str
    traffic: str
    slo: SLO
    kv_dtype: str
    engine: str
    constants: StepConstants
    best: Deployment | None
    ranked: list[Deployment]
    """Feasible deployments, fewest GPUs first (then cost, then TPOT); at most 12."""
    per_gpu_type: list[Deployment]
    """The best feasible deployment of each GPU type that has one."""
    nearest: Deployment | None
    """When nothing is feasible: the candidate that comes closest, and by how much it falls short."""
    considered: int
    skipped: dict[str, str] = field(default_factory=dict)
    """GPU types with no candidate at all, and why (weights do not fit at any size tried)."""
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    ranked_by: str = "gpus"
    """'gpus' (fewest GPUs, then cost) or 'cost' (lowest cost, when every deployment has a price)."""
    verified: list[Any] = field(default_factory=list)
    """The best deployments checked by simulation (Verification), in the order tried."""
    inputs: dict[str, Any] = field(default_factory=dict)
    disaggregation: str = ""
    """Whether disaggregated prefill/decode wins over the best aggregated deployment, and why."""
    track_record: TrackRecord | None = None
    """How far kvcalc with the default constants has been from public measured runs of the best (or
    nearest) deployment's kind (kvcalc.engine.track); None under a calibration or an efficiency given."""


class _Replica:
    """One (GPU, TP, PP) configuration: its memory capacity and its steady state at any load, on
    the step-time model (the same one the simulator steps with)."""

    def __init__(
        self,
        model: ModelSpec,
        gpu: GPUSpec,
        tp: int,
        pp: int,
        traffic: Traffic,
        kv_dtype: KVDtype,
        engine: Engine,
        constants: StepConstants = DEFAULTS,
        base: FitInputs | None = None,
        dp: int = 1,
        ep: int = 1,
        seq: int | None = None,
        recv_interval: int = 1,
    ):
        self.gpu, self.tp, self.pp, self.dp, self.ep = gpu, tp, pp, dp, ep
        engine.check_recv_interval(recv_interval, dp)
        self.recv = recv_interval
        """SGLang's --scheduler-recv-interval: while requests decode, arrivals are taken in every this many
        decode steps (Engine.check_recv_interval; the simulator's SimSettings.recv_interval)."""
        self.shape = Shape(tp, pp, dp, ep)
        self.engine = engine
        inp = (base or FitInputs(seq=traffic.length)).replace(
            seq=seq or traffic.length, engine=engine, tp=tp, pp=pp, dp=dp, ep=ep, kv_dtype=kv_dtype, max_model_len=None
        )
        f = fit(model, gpu, inp)
        self.capacity = f.max_concurrency * dp
        self.kv_request = f.request_bytes
        stored = stored_kv_dtype(model, gpu.name, kv_dtype, engine, tp)  # as fit sizes the pool
        self.sm = StepModel(model, gpu, stored, tp, pp, constants, ep=ep, dp=dp, engine=engine, weight_dtype=inp.weight_dtype)
        self.mla_per_head = engine.mla_per_head(model, inp.weight_dtype)
        """Whether the engine caches the model's MLA per head, split by TP (Engine.mla_per_head)."""
        self.lanes = pp * dp
        """Batches stepping side by side: PP micro-batches on each of the DP ranks."""
        self.c = self.sm.c  # the engine release's defaults where constants were the defaults
        self.ctx = traffic.prompt + max(traffic.output // 2, 1)
        self.P, self.O = traffic.prompt, max(traffic.output, 1)
        self.P_tail = traffic.prompt_tail or traffic.prompt
        self.cv2 = traffic.prompt_cv2
        # Prompt tokens found in the prefix cache, which no step computes (the pages verify simulates).
        self.hit = traffic.prompt_cache_hit
        self.C = cached_prompt_tokens(self.hit, self.P, PREFIX_BLOCK)
        budget, self.mixed = engine.schedule(model, gpu, traffic.length)
        self.budget = engine.rank_batched_tokens(budget, dp)
        """A DP rank's prompt tokens a step: the engine's budget, as SGLang divides it among DP-attention ranks."""
        self.max_seqs = engine.default_num_seqs(gpu.memory_runtime_bytes, gpu.name)
        self.seq_limit = engine.seqs_in_flight(self.max_seqs, pp, dp)
        """The most requests the replica runs at once (max_num_seqs as the engine applies it with PP and DP)."""
        self.memo: dict[tuple[Traffic, int], Any] = {}
        """``_steady``'s answers, by traffic and replica count."""
        self.steps: dict[tuple[int, float, float | None], Any] = {}
        """``step``'s answers, by whole batch, rate and seen batch."""
        self.at_memo: dict[tuple[float, int, bool], float] = {}
        """``_step``'s step times, by requests decoding, prompt tokens and eager (they depend on the replica alone)."""
        self.work_memo: dict[tuple[float, float], float] = {}
        """``_step``'s step times with prompt work, by requests decoding and prompt tokens (``prompt_work``)."""
        self.seats: dict[tuple[Traffic, int], tuple[float, float]] = {}
        """The wait for a seat and the share of the time the pool is full (``_pool``), by traffic and
        replica count, where ``_steady`` took the pool's states."""

    @property
    def graph_max(self) -> int | None:
        """The engine's largest decode CUDA graph a lane (StepModel.decode_graph_max; None: no limit): past it a
        decode step runs eagerly, a jump in the step's time that ``_pool`` evaluates on both sides of."""
        return self.sm.decode_graph_max

    def with_constants(self, c: StepConstants) -> _Replica:
        import copy

        new = copy.copy(self)
        new.sm, new.c, new.memo, new.steps, new.seats = self.sm.with_constants(c), c, {}, {}, {}
        new.at_memo, new.work_memo = {}, {}
        return new

    def seen(self, decodes: float, users: int | None) -> float:
        """The batch a decoding request's own steps carry, per micro-batch, with ``decodes`` requests
        decoding on average (the time average, Little's law).

        A request's mean TPOT weighs each step by the requests in it, so it sees the batch size-biased:
        its own seat plus the others. With Poisson arrivals the others decoding beside it are Poisson
        with the time-average mean (an M/G/infinity count, independent of the tagged request), so it
        sees ``decodes + 1`` (E[b^2] / E[b] = m + 1 for a Poisson m). In a closed loop of N users the
        others are the N - 1 remaining users, each decoding the share ``decodes / N`` of the time:
        ``decodes + 1 - decodes / N``, which is N when every user is always decoding. At most what the
        pool holds at full length, per micro-batch."""
        per = decodes / self.lanes
        seen = per + 1 - min(decodes / users, 1.0) if users else per + 1
        # No more than the pool holds at full length sit beside it (one that holds one request never
        # runs another beside it).
        return max(min(seen, self.capacity / self.lanes), 1.0) if self.capacity else seen

    def step(self, decodes: float, rate: float, batch: float | None = None) -> tuple[float, str, float, float, float] | None:
        """``_step``, once for each whole batch, rate and seen batch (the steady state and the pool's
        states ask for the same ones again)."""
        key = (self._lane_batch(decodes), rate, batch)
        if key not in self.steps:
            self.steps[key] = self._step(*key)
        return self.steps[key]  # type: ignore[no-any-return]

    def _step(self, b: int, rate: float, batch: float | None) -> tuple[float, str, float, float, float] | None:
        """(mean step seconds, what bounds a step, the share of time in steps that carry prompt work,
        those steps a second, and what each one queued behind a request when its decode begins adds
        to its decode, seconds) in steady state, with ``b`` requests decoding in each PP
        micro-batch (``decodes`` spread over them, rounded up) and ``rate`` prompts arriving per second; None when the prompts
        alone outrun the replica. With ``batch`` (``seen``), the mean step and the last figure are as a
        decoding request's own tokens see them, with ``batch`` requests in its micro-batch (between
        whole batches by linear interpolation: a step's time is linear in its requests between two);
        the prompt steps, their share and their count stay those of the time-average batch, which is
        what a prompt finds.

        Prompts come whole, as the simulator and vLLM take them: a step carries every prompt waiting,
        up to the token budget left beside the decodes (chunked beyond it). With mu = rate x step
        prompts arriving per step, a step with prompt work carries j of them with the chances
        ``_prompt_law`` gives (Poisson given at least one, P x mu / (1 - e^-mu) tokens on average, where
        one lane takes every request; every lanes-th request of them where several DP ranks or PP
        micro-batches are dealt in turn), min(room, j x P) tokens (P / ceil(P / room) when a prompt needs
        several chunks): q tokens and T(q) seconds on average over j, each count at its own time.
        Prefill steps then number rate x P / q a second and take the share u = rate x P / q x T(q) of the time;
        decode-only steps fill the rest, (1 - u) / T(0) a second, and the mean step is one over the
        two counts together. A step with prompt work lengthens a decoding request's next token by
        T(q) - T(0) (mixed), or by T(q) (prompts first), and the prompt steps that come while it
        decodes stretch those by 1 / (1 - n_p (T(q) - T(0))), or 1 / (1 - u): the last figure.

        Where one lane takes Poisson arrivals in whole prompts (``windows``), the count a step takes in follows the
        step before it instead, a decode step's length or a prompt step's (``_window_law``, 2026-12-07): a mean
        window counted too many prompt steps, too few prompts in each, where prompt steps are several decode steps
        long. Elsewhere (a lane dealt every k-th request, ranks in lockstep, a prompt in chunks):

        "Step" in mu is the mean step, prompt and decode-only steps together, over which the prompts that
        came during the step before are taken in: with prompts first that is 1 / (n_p + 1 / t), shorter
        than a decoding request's gap t (until 2026-12-06 mu took t, which lumped more prompts a step
        than SGLang's loop takes in, and so fewer, cheaper prompt steps: Qwen3-30B-A3B at TP 2 on H100s
        under SGLang 0.5.9 at 20 requests/s came to a TPOT of 32.2 ms against its simulation's 43.3, 37.4
        until each count of prompts a step takes in took its own time, the same day, and 49.0 since, at
        its CUDA-graph edge: docs/simulation.md)."""
        mixed = self.mixed
        # An engine that runs prompts first, as steps of their own (SGLang), gives them the whole budget;
        # its decodes wait through those steps, so a token comes only with each decode step.
        room = self.budget - b if mixed else self.budget
        Pn = self.P - self.C  # the tokens a prompt's steps compute
        sm = self.sm

        def mid(q: int) -> int:
            return _chunk_end(self.C, Pn, q)

        seen_at = self.at_memo  # (a step's time depends on the replica and these alone: kept across calls)

        def at(n: float, q: int = 0, eager: bool = False) -> float:
            """A step's seconds with n requests decoding (linear between whole counts) and q prompt
            tokens; ``eager``: without CUDA graphs (StepModel.step)."""
            if (n, q, eager) not in seen_at:
                seen_at[n, q, eager] = step_at(n, q, eager)
            return seen_at[n, q, eager]

        def step_at(n: float, q: int, eager: bool) -> float:
            if not n and not q:
                return sm.overhead_s(0, 0)
            lo = math.floor(n + 1e-9)
            end = mid(q) if q else 0
            # Several whole prompts, each over its own context (StepModel.step's span), where a receive interval
            # gathers them (``ttft``); elsewhere the closed form prices a step of several prompts as one chunk.
            span = Pn if q > Pn and self.recv > 1 else 0
            t_lo = sm.step(lo, self.ctx, q, end, eager, span).t_step_s if lo or q else sm.overhead_s(0, 0)
            w = n - lo
            return t_lo if w <= 1e-9 else t_lo + w * (sm.step(lo + 1, self.ctx, q, end, eager, span).t_step_s - t_lo)

        steps_of = self.work_memo

        def prompt_work(n: float, law: list[tuple[int, float, float]]) -> tuple[float, float]:
            """(mean prompt tokens, mean seconds) of a step with prompt work beside n decoding, its prompts as
            ``law`` (``_prompt_law``) has them."""

            def step_s(x: float) -> float:
                v = steps_of.get((n, x))
                if v is None:
                    v = steps_of[n, x] = at(n, max(math.ceil(x), 1))
                return v

            return _law_means(law, step_s)

        # DP attention in lockstep (StepModel.lockstep_ranks, prompts first): the other ranks run prompt
        # steps as often as this one, n_p a second each, so lam = others x n_p a second in all, and a
        # decode step steps beside at least one of them with chance 1 - e^(-lam x t), t the step before
        # it (the prompts that came during it): a = 1 - e^(-lam t0) after a plain decode step, b = 1 -
        # e^(-lam tf) after one beside a prompt step (without CUDA graphs and at least a prompt step
        # long, tf = max(te, tq)), a share phi = a / (1 + a - b) of the decode steps in steady state, as
        # the simulator draws them.
        others = sm.lockstep_ranks if not mixed else 0

        def decode_gap(n_p: float, tq: float, t0: float, te: float, u: float) -> float:
            """Seconds between a decoding request's tokens: the decode steps take the time the prompt
            steps leave, 1 - u, at (1 - phi) t0 + phi tf each."""
            if not others or n_p <= 0:
                return t0 / (1 - u)
            lam, tf = others * n_p, (te if te > tq else tq)
            a, b = -math.expm1(-lam * t0), -math.expm1(-lam * tf)
            phi = a / (1 + a - b)
            return ((1 - phi) * t0 + phi * tf) / (1 - u)

        # vLLM V0 (StepModel.decode_graph_max_len): a decode step runs without its CUDA graph while any request in it
        # is past the captured length. A running request's length is its prompt and a share of its output uniform over
        # [0, O) in steady state, so a share f = (P + O - cap) / O of them is past it, and a step of n requests holds
        # one with chance 1 - (1 - f)^n, as the simulator's longest running request has it.
        cap = sm.decode_graph_max_len
        past = min(max((self.P + self.O - cap) / self.O, 0.0), 1.0) if cap is not None else 0.0

        def decode_at(n: float) -> float:
            if past <= 0.0:
                return at(n)
            q = 1.0 - math.pow(1.0 - past, n)
            return (1.0 - q) * at(n) + q * at(n, 0, True)

        t0 = decode_at(b)
        if rate <= 0:
            return (decode_at(batch) if batch is not None else t0), sm.step(max(b, 1), self.ctx).bound_by, 0.0, 0.0, 0.0
        if room <= 0:
            return None
        per_pp = rate / self.lanes  # each micro-batch's steps see its share of the prompts
        t = t0
        # Under a receive interval N (and requests decoding) the scheduler takes the prompts in every N
        # decode steps, so a step with prompt work carries those of N steps (``ttft``).
        every = self.recv if b else 1
        n_p = 0.0
        # One lane of Poisson arrivals, whole prompts, no lockstep ranks: the prompts a step takes in follow the
        # length of the step before, a decode step's or a prompt step's (_window_law). Its law does not depend on
        # t, only on the prompt steps' mean time: find where that law's mean prompt step is the one it was given
        # (secant steps after a first plain one), and t follows in one pass.
        windows = self.windows(others, Pn, room)
        if windows:

            def gap(tp: float) -> tuple[float, list[tuple[int, float, float]]]:
                law = _window_law(per_pp, every * t0, tp, Pn, room)
                return prompt_work(b if mixed else 0, law)[1] - tp, law

            x0 = at(b if mixed else 0, max(Pn, 1))
            f0, law = gap(x0)
            x1 = x0 + f0
            f1, law = gap(x1)
            for _ in range(30):
                # (the law's tail, cut at LAW_TAIL, moves in steps: where the root sits on one, the steps stall instead)
                if abs(f1) <= 1e-9 * x1 or abs(x1 - x0) <= 1e-9 * x1:
                    break
                x2 = x1 - f1 * (x1 - x0) / (f1 - f0) if f1 != f0 else x1 + f1
                x0, f0, x1 = x1, f1, (x2 if 0.0 < x2 < math.inf else x1 + f1)
                f1, law = gap(x1)
        for _ in range(100):
            if not windows:
                # The prompts that came during the step before (SGLang takes every arrival in at each step): a mean
                # step's worth, which prompts first is shorter than a decoding request's gap t, 1 / (n_p + 1 / t).
                mu = per_pp * (t if mixed else 1.0 / (n_p + 1.0 / t)) * every
                # Whole prompts, as many as came (_prompts_a_step), within the budget, each count at its own time
                # (a step's time is no straight line in its prompts: a flat floor, then their FLOPs).
                law = _prompt_law(mu, self.lanes, Pn, room)
            q, tq = prompt_work(b if mixed else 0, law)
            n_p = per_pp * Pn / q
            u = n_p * tq
            if u >= 1:
                return None
            # Mixed: every step gives each decoding request a token; else only the decode steps do.
            new = 1.0 / (n_p + (1 - u) / t0) if mixed else decode_gap(n_p, tq, t0, at(b, 0, True), u)
            if math.isinf(new):
                return None
            if windows:
                t = new
                break
            if abs(new - t) <= 1e-10 * t:
                t = new
                break
            t = 0.5 * (t + new)
        bound = (
            sm.step(max(b, 1), self.ctx, max(math.ceil(q), 1), mid(max(math.ceil(q), 1))).bound_by
            if u > 0.5
            else sm.step(max(b, 1), self.ctx).bound_by
        )
        own = u
        if batch is not None:
            # The same prompt steps, as the requests decoding beside the tagged one make them.
            t0, tq = decode_at(batch), prompt_work(batch if mixed else 0, law)[1]
            own = n_p * tq
            if own >= 1 or (mixed and n_p * (tq - t0) >= 1):
                return math.inf, bound, u, n_p, math.inf
            t = 1.0 / (n_p + (1 - own) / t0) if mixed else decode_gap(n_p, tq, t0, at(batch, 0, True), own)
            if math.isinf(t):
                return math.inf, bound, u, n_p, math.inf
        late = (tq - t0) / (1 - n_p * (tq - t0)) if mixed else tq / (1 - own)
        return t, bound, u, n_p, late

    def windows(self, others: int, prompt: int, room: int) -> bool:
        """Whether ``_step`` takes the prompts a step takes in by the length of the step before (``_window_law``): one
        lane (Poisson arrivals; a DP rank or PP micro-batch dealt every k-th request keeps the mean step's law,
        ``_prompts_a_step``), no ranks stepping in lockstep beside it, and prompts that come whole (a prompt past
        the budget runs one chunk a step whatever came)."""
        return self.lanes == 1 and not others and prompt <= room

    def _lane_batch(self, decodes: float) -> int:
        """The requests a lane (a DP rank or PP micro-batch) decodes at ``decodes`` in the replica, rounded up."""
        return max(math.ceil(decodes / self.lanes - 1e-9), 0)

    def _decode_step(self, decodes: float, t_step: float) -> float:
        """A decode step's own time at ``decodes``, without the prompt steps between (``t_step`` where none)."""
        alone = self.step(decodes, 0.0)
        return alone[0] if alone else t_step

    def recv_wait(self, decodes: float, t_step: float, u: float) -> float:
        """What a receive interval adds to a request's wait to be taken in (``ttft``): 0 without one, without
        requests decoding, or in an engine that mixes prompts into the decode steps."""
        if self.recv <= 1 or self.mixed or self._lane_batch(decodes) == 0:
            return 0.0
        return (1 - u) * (self.recv - 1) * self._decode_step(decodes, t_step) / 2

    def admit_wait(self, decodes: float, t_step: float, u: float, rate: float, t_prompt: float) -> float:
        """What SGLang's overlap loop adds to a request's mean wait (``ttft``; StepModel.admit_lag): 0 without it
        or without requests decoding. The loop decides at the same step ends as a loop without it (after a prompt
        step, and after every N-th decode step since, N the receive interval), but takes requests in as the
        step that ends there begins (Engine.overlap_admission): one that comes during that step misses the
        decision and waits from the step's end to the next. That step is a prompt step (the share ``u`` of the
        time) or the N-th decode step (1 / N of the rest). The next decision comes after one prompt step
        (``t_prompt``) if the missed one found requests, else after N decode steps. The missed decision found
        requests with the chance that one came in its window (Poisson, ``rate`` a second a lane): after N
        decode steps, N decode steps long; after a prompt step, the step before it, taken as a decode step."""
        if not self.sm.admit_lag or self._lane_batch(decodes) == 0:
            return 0.0
        t0, n, lam = self._decode_step(decodes, t_step), self.recv, rate / self.lanes
        f_d, f_p = -math.expm1(-lam * n * t0), -math.expm1(-lam * t0)
        after_prompt = f_p * t_prompt + (1 - f_p) * n * t0
        after_decodes = f_d * t_prompt + (1 - f_d) * n * t0
        return u * after_prompt + (1 - u) / n * after_decodes

    def ttft(self, decodes: float, t_step: float, u: float = 0.0, rate: float = 0.0) -> float:
        """Mean TTFT without queueing: the request path, half a step waiting for the one in progress,
        then the steps that carry the prompt in chunks of the token budget left beside the decodes.

        Under a receive interval N (SGLang's --scheduler-recv-interval) with requests decoding, the
        scheduler takes new requests in every N decode steps, and at once after a step with prompt
        work: one that comes while the decodes run (the share 1 - ``u`` of the time outside prompt
        steps, ``u`` as ``step`` gives it) waits for the next of those, N steps apart, N / 2 steps on
        average where it would wait half of one: (N - 1) / 2 decode steps more. One that comes during a
        prompt step waits that out (the prefill wait) and is taken in after it. The prompts taken in
        together run in one step, whose end gives each its first token: beside a request's own prompt,
        those that came in the N - 1 decode steps more it waited for (``rate`` prompts a second, Poisson,
        rate x (N - 1) x the decode step of them on average), within the token budget."""
        b = self._lane_batch(decodes)
        P, C = self.P_tail, cached_prompt_tokens(self.hit, self.P_tail, PREFIX_BLOCK)
        path = float(self.c.request_path_s(P)) + t_step / 2  # the whole prompt is tokenised
        if not self.mixed:
            # Prompts first, in steps of their own: the whole budget, no decodes beside them.
            own = None
            if self.recv > 1 and b:
                t0 = self._decode_step(decodes, t_step)
                path += self.recv_wait(decodes, t_step, u)
                Pn = P - C
                if rate > 0 and Pn < self.budget:
                    q = min(self.budget, round(Pn * (1 + rate / self.lanes * (self.recv - 1) * t0)))
                    own = self.sm.step(0, 0.0, q, _chunk_end(C, Pn, q), span=Pn).t_step_s
            if own is None:
                own = self.sm.prefill_s(P - C, self.budget, start=C)
        else:
            own = self.sm.prefill_s(P - C, max(self.budget - b, 1), b, self.ctx, start=C)
        return path + self.admit_wait(decodes, t_step, u, rate, own) + own


def _shape_replica(
    model: ModelSpec,
    gpu: GPUSpec,
    shape: Shape,
    traffic: Traffic,
    kv_dtype: KVDtype,
    engine: Engine,
    constants: StepConstants,
    base: FitInputs | None,
    recv_interval: int,
) -> _Replica | None:
    """A candidate shape's replica (plan's and max_throughput's search); None where a receive interval rules the
    shape out: SGLang refuses one under DP attention (Engine.check_recv_interval)."""
    if recv_interval > 1 and shape.dp > 1:
        return None
    return _Replica(
        model,
        gpu,
        shape.tp,
        shape.pp,
        traffic,
        kv_dtype,
        engine,
        constants,
        base,
        shape.dp,
        shape.ep,
        recv_interval=recv_interval,
    )


def _check(rep: _Replica, traffic: Traffic, slo: SLO, replicas: int) -> tuple[bool, float, str, dict[str, float]]:
    """Whether ``replicas`` of this configuration carry the traffic: (ok, requests in flight per
    replica, the reason it fails or '', each constraint's use of its limit)."""
    st = _steady(rep, traffic, replicas)
    if st is None:
        # The prompts alone outrun the replica, or with them its pool full cannot carry the rate.
        x = (traffic.rate or 0.0) / replicas
        alone = rep.step(0.0, x) if x > 0 else None
        if x > 0 and alone is None:
            return False, math.inf, "prefill", {"prefill": math.inf, "memory": math.inf}
        return False, math.inf, "memory", {"memory": math.inf, "prefill": alone[2] if alone else 0.0}
    n, x, t, ttft, bound, u = st
    use = {
        "memory": n / rep.capacity if rep.capacity else math.inf,
        "prefill": u,
        "max_num_seqs": n / (rep.seq_limit),
    }
    if slo.tpot_s:
        use["TPOT"] = t / slo.tpot_s
    if slo.ttft_s:
        use["TTFT"] = _replica_ttft_at(rep, traffic, replicas, st, slo.percentile) / slo.ttft_s
    over = [k for k, v in use.items() if v > 1]
    return not over, n, over[0] if over else "", use


def _replica_ttft_at(rep: _Replica, traffic: Traffic, replicas: int, st: tuple[Any, ...], percentile: int) -> float:
    """A replica's TTFT at ``percentile`` (``_ttft_at``): its waits are the prompt's for the prefill
    capacity (M/G/1 at the share u of the time in prompt steps, met with chance u) and, for a rate,
    the wait for a seat in its pool (met when the pool is full); a receive interval's wait for the
    scheduler's poll is added at its own quantile."""
    n, x, t, ttft, _, u = st
    seat, full = rep.seats.get((traffic, replicas), (0.0, 0.0))
    # A receive interval's wait (_Replica.recv_wait) is no queue's: 0 with chance u (a prompt step was running),
    # else uniform over the (N - 1) decode steps to the next poll, so its q quantile is (N - 1) t0 (q - u) / (1 - u).
    gate = rep.recv_wait(n, t, u)
    at = 0.0
    if gate > 0:
        q = percentile / 100
        at = 2 * gate / (1 - u) * (q - u) / (1 - u) if q > u else 0.0
    return _ttft_at(ttft - gate, [(_prefill_wait(u, x, rep.cv2), u), (seat, full)], percentile) + at


def _window_law(rate: float, decode_s: float, prompt_s: float, prompt: float, room: int) -> list[tuple[int, float, float]]:
    """[(j, chance, tokens)]: what a step with prompt work takes in (as ``_prompt_law``), where the engine takes in at
    each decision the prompts that came during the step before it and those steps are of two lengths: a decode step
    (``decode_s``; under a receive interval N, the N decode steps between polls) and a prompt step (``prompt_s``, their
    mean). Arrivals are Poisson at ``rate``: a window of L seconds holds one or more with chance a(L) = 1 - e^(-rate L).

    A decision after a decode window launches a prompt step with chance a_d = a(decode_s), after a prompt step with
    a_p = a(prompt_s); the windows are a two-state chain whose stationary shares are pi_p = a_d / (1 - a_p + a_d)
    after a prompt step and pi_d = 1 - pi_p. The prompt steps come from the two with weights pi_d a_d and pi_p a_p,
    so a prompt step's count is Poisson(rate x decode_s) given one or more with chance w_d = pi_d a_d / (pi_d a_d + pi_p
    a_p) = 1 - a_p (a prompt step follows a prompt step with chance a_p, else it ends a run of decode windows), else
    Poisson(rate x prompt_s) given one or more.

    A mean window (rate x the mean step, ``_prompt_law``) takes a(mean) for the chance that a window finds a prompt,
    more than the mean of a(L) over windows of unequal lengths (a is concave): where prompt steps are several times a
    decode step's length it counts too many prompt steps of too few prompts each. Llama-3.1-70B at TP 8 on H200s,
    1,000 + 200 tokens at 15.1 requests/s under SGLang: the mean window gives 1.24 prompts a step, 12.2 prompt steps a
    second and a TPOT of 48.1 ms, where 3,000 simulated requests ran 1.43 prompts a step, 10.3 prompt steps a second
    and 43.1 ms (docs/simulation.md). The overlap loop's late admission (StepModel.admit_lag) takes each decision's
    arrivals from the window before last: at a receive interval of 1 the counts at even and odd decisions are then two
    such chains interleaved, with the same law."""
    cap = -(-room // max(int(prompt), 1))
    md, mp = rate * decode_s, rate * prompt_s
    ap = -math.expm1(-mp)
    laws = [(1.0 - ap, md), (ap, mp)]  # (a window of no length, an idle engine's, takes the one that ends it)
    acc: dict[int, float] = {}
    for w, m in laws:
        if w > 0.0:
            for j, c in _poisson_law(m, cap):
                acc[j] = acc.get(j, 0.0) + w * c
    return [(j, c, j * prompt if j * prompt < room else float(room)) for j, c in sorted(acc.items())]


@functools.lru_cache(maxsize=4096)
def _poisson_law(mu: float, cap: int) -> tuple[tuple[int, float], ...]:
    """``_prompts_a_step`` of one lane, kept: ``_window_law`` asks for a decode window's law again at each prompt step's
    length it tries."""
    return tuple(_prompts_a_step(mu, 1, cap))


def _prompts_a_step(mu: float, k: int, cap: int) -> list[tuple[int, float]]:
    """The law of the prompts a prompt step takes in, given that it takes at least one: those that came
    during the step before, mu of them on average, where a replica's lane (a DP rank or PP micro-batch)
    is dealt every k-th request of Poisson arrivals, as round-robin routing and the simulator deal them
    (k = 1: Poisson). Round robin is SGLang's default (server_args.py _handle_load_balance_method, 'auto' to
    round_robin but on a PD prefill server, and data_parallel_controller.py round_robin_scheduler, 0.5.9); a PD
    prefill server follows each request's random bootstrap room instead, which Poisson describes better, where
    the simulator too deals in turn. Of such a stream a window holds j or more with chance P(N >= j) = (1/k) sum over
    r = 1..k of P(Poisson(k mu) >= (j - 1) k + r), its phase uniform over the k. At most ``cap`` (the
    prompts the step's token budget takes), the rest of the mass there. [(j, chance)], chances summing
    to 1; the mean is mu / P(N >= 1) below the cap, the Poisson lump mu / (1 - e^-mu) at k = 1."""
    if mu <= 1e-9 or cap <= 1:
        return [(1, 1.0)]
    if k == 1 and mu < 600:
        # Poisson: P(N = j | N >= 1) = e^-mu mu^j / j! / (1 - e^-mu), by recurrence in j.
        w = mu * math.exp(-mu) / -math.expm1(-mu)
        # Counts below the mean whose chances together stay under LAW_TAIL go on the first count kept, as those past
        # the last kept go on it: at hundreds of prompts a window, most of a law's counts carry nothing.
        law: list[tuple[int, float]] = []
        left, below, stop = 1.0, 0.0, cap
        for j in range(1, cap):
            if left - w < LAW_TAIL:
                stop = j
                break
            if not law and j < mu and below + w < LAW_TAIL:
                below += w
            else:
                law.append((j, w + below))
                below = 0.0
            left -= w
            w *= mu / (j + 1)
        law.append((stop, left + below))
        return law
    m = k * mu
    # P(Poisson(m) = i) by recurrence from i = 0 (by logs where e^-m would underflow), as far as the tail
    # matters: N reaches j only with (j - 1) k + 1 arrivals of the base stream or more.
    top = min(cap * k, math.ceil(m + 10 * math.sqrt(m) + 10))
    if m < 600:
        pmf = [math.exp(-m)]
        for i in range(1, top + 1):
            pmf.append(pmf[-1] * m / i)
    else:
        pmf = [math.exp(-m + i * math.log(m) - math.lgamma(i + 1)) for i in range(top + 1)]
    sf, acc = [], 0.0
    for v in pmf:
        sf.append(1.0 - acc if acc < 1.0 else 0.0)  # P(Poisson(m) >= i)
        acc += v
    J = min(cap, top // k + 1)  # past J, P(N >= j) is below the tail the recurrence kept

    def ge(j: int) -> float:
        """P(N >= j)."""
        if j > J:
            return 0.0
        lo = (j - 1) * k + 1
        return sum(sf[lo : min(j * k, top) + 1]) / k

    first = ge(1)
    if first <= 0.0:
        return [(1, 1.0)]
    law, here = [], first
    for j in range(1, cap + 1):
        nxt = ge(j + 1) if j < cap else 0.0
        if nxt < LAW_TAIL * first:
            law.append((j, here / first))
            return law
        law.append((j, (here - nxt) / first))
        here = nxt
    return law


def _prompt_law(mu: float, lanes: int, prompt: float, room: int) -> list[tuple[int, float, float]]:
    """[(j, chance, tokens)]: what a step with prompt work takes in, of prompts of ``prompt`` tokens with mu
    arriving a step on average at a lane dealt every ``lanes``-th request: j whole prompts (``_prompts_a_step``)
    within the token budget ``room``, or, where one prompt is longer than the budget, one of its equal chunks."""
    if prompt > room:
        return [(1, 1.0, prompt / math.ceil(prompt / room))]
    return [
        (j, w, j * prompt if j * prompt < room else float(room))
        for j, w in _prompts_a_step(mu, lanes, -(-room // max(int(prompt), 1)))
    ]


def _law_means(law: list[tuple[int, float, float]], step_s: Callable[[float], float]) -> tuple[float, float]:
    """(mean tokens, mean seconds) of a step with prompt work over ``law`` (``_prompt_law``), ``step_s`` the
    seconds of a step of so many prompt tokens."""
    q = t = 0.0
    for _, w, x in law:
        q += w * x
        t += w * step_s(x)
    return q, t


def _backlog_means(
    rate: float, step_of: Callable[[int], float], cap: int, full_s: float, clears: float
) -> tuple[float, float, float, float] | None:
    """(mean seconds, mean prompts cleared, a prompt's mean wait to be taken in, the mean step a prompt runs in) of a
    step of one lane that takes Poisson arrivals of whole prompts at
    ``rate`` a second and runs nothing but prompt steps: j prompts waiting, up to ``cap``, take ``step_of(j)`` seconds
    together (asked only for the counts the chain reaches); more than cap fill the token budget, a step of ``full_s``
    seconds that clears ``clears`` prompts (cap to cap + 1: the budget over a prompt's tokens, a chunk of the next
    counted by its share).
    An idle lane starts a step for the first prompt to come, alone. None where full steps cannot keep up.

    The prompts waiting as a step ends, n, are a Markov chain: from n = 0 a step of the one prompt that ends the idle
    wait; from 1 to cap a step of all n; past cap a full step, leaving n - cap - 1 with chance clears - cap and n - cap
    otherwise (the mean it clears); Poisson(rate x the step's seconds) come during it. Its stationary law gives the
    means exactly where the budget holds whole prompts, over states 0..N with the chance past N put on N, N doubled
    until its last quarter holds under BACKLOG_TAIL (at most BACKLOG_STATES). The window laws (``_window_law``,
    ``_prompt_law``) take one mean length for every step, which where long steps follow long steps falls short:
    Llama-3.1-8B's prompts of 1,024 tokens on one H100 at 33 a second, a loop of 200,000 arrivals steps 49.6 ms on
    average, this chain 49.8, the two windows 43.4 and a mean window 56.7; at 28 a second 38.2, 38.3, 36.2 and 46.1
    (tests/test_plan.py). The wait is Little's law over the prompts waiting through each step (those left over all of
    it, those arriving during it half of it; none through an idle wait of 1 / rate on average); the step a prompt
    runs in is weighted by the prompts in it."""
    import numpy as np

    if rate * full_s >= clears:
        return None
    frac = clears - cap
    mean_in = rate * full_s
    n = min(math.ceil(mean_in + 10 * math.sqrt(mean_in) + 10), BACKLOG_STATES)  # past what one step brings
    while True:
        ks = np.arange(n + 1)
        log_fact = np.concatenate(([0.0], np.cumsum(np.log(ks[1:]))))
        steps = [step_of(j) for j in range(1, min(cap, n) + 1)]
        laws = [_poisson_pmf(rate * t, ks, log_fact) for t in steps]
        full = _poisson_pmf(rate * full_s, ks, log_fact)
        chain = np.zeros((n + 1, n + 1))
        chain[0] = laws[0]  # the idle wait's one prompt; then all n waiting, up to cap
        chain[1 : len(laws) + 1] = laws
        chain[: len(laws) + 1, n] += np.maximum(0.0, 1.0 - chain[: len(laws) + 1].sum(axis=1))
        for state in range(cap + 1, n + 1):  # a full step clears cap + 1 with chance frac, else cap
            for rest, w in ((state - cap, 1.0 - frac), (state - cap - 1, frac)):
                if w > 0.0:
                    row = full[: n + 1 - rest]
                    chain[state, rest:] += w * row
                    chain[state, n] += w * max(0.0, 1.0 - float(row.sum()))
        a = chain.T - np.eye(n + 1)
        a[-1, :] = 1.0
        b = np.zeros(n + 1)
        b[-1] = 1.0
        pi = np.clip(np.linalg.solve(a, b), 0.0, None)
        pi /= pi.sum()
        if float(pi[n - n // 4 :].sum()) < BACKLOG_TAIL or 2 * n > BACKLOG_STATES:
            break
        n *= 2
    secs = np.array([steps[0], *steps, *[full_s] * max(n - cap, 0)])[: n + 1]
    cleared = np.array([1.0, *range(1, cap + 1), *[clears] * max(n - cap, 0)])[: n + 1]
    if rate <= 0:
        return float(pi @ secs), float(pi @ cleared), 0.0, steps[0]
    # A prompt's wait (Little's law): through a step of s seconds from state n, n - cleared wait all of it and those
    # arriving during it half of it on average (rate s^2 / 2); an idle wait (mean 1 / rate) holds none waiting.
    left = np.maximum(np.arange(n + 1) - cleared, 0.0)
    left[0] = 0.0
    waiting = float(pi @ (left * secs + rate * secs * secs / 2)) / (float(pi @ secs) + float(pi[0]) / rate)
    served = float(pi @ (cleared * secs)) / float(pi @ cleared)  # the step a prompt runs in, by its prompts
    return float(pi @ secs), float(pi @ cleared), waiting / rate, served


def _poisson_pmf(m: float, ks: Any, log_fact: Any) -> Any:
    """P(Poisson(m) = k) for the counts ``ks`` (a numpy range from 0), ``log_fact`` their log factorials."""
    import numpy as np

    return np.exp(-m + ks * math.log(m) - log_fact) if m > 0 else (ks == 0).astype(float)


CHAIN_ARRIVALS = 64.0
"""The most prompts a full prefill step's time brings for which ``_Prefill`` solves ``_backlog_means``'s chain: its
states reach a few times that, and past it (thousands of prompts a second of a few tokens each) the instance takes the
mean window's law, whose error shrinks as a step's count grows."""
BACKLOG_TAIL = 1e-9
"""``_backlog_means`` widens its chain until its last states hold less than this share of it."""
BACKLOG_STATES = 512
"""The most states ``_backlog_means`` solves for (a dense solve; past it the chain stays truncated)."""


LAW_TAIL = 1e-4
"""``_prompts_a_step`` puts the chance of more prompts than this share of its law on the last it keeps."""


def _chunk_end(cached: int, prompt: int, q: int) -> int:
    """Where a step's prompt chunk of ``q`` tokens ends, on average over a prompt of ``prompt``
    computed tokens after ``cached`` ones: a prompt in chunks of q ends them at q, 2q, ... prompt,
    whose mean is (prompt + q) / 2, so the step's attention (each chunk token at its context) and
    KV reads are those of the mean chunk; one chunk (q = prompt) ends at the prompt's end. Before
    2026-12-04 every chunk was priced as ending at half the prompt, the first chunk's context,
    which left a long prompt's later chunks cheap: 16,000 tokens in chunks of 8,192 on one H100
    (Llama-3.1-8B) came to 2.31 prompts/s where its steps (``StepModel.prefill_s``) carry 2.08.
    A step of several whole prompts (q above the prompt) ends at q, as ``StepModel.step`` takes it."""
    return cached + max((prompt + min(q, prompt)) // 2, 1)


def _prefill_wait(u: float, x: float, cv2: float = 0.0) -> float:
    """Mean wait for the prefill capacity, as in an M/G/1 queue (Pollaczek-Khinchine): prompts
    arrive at x a second and each holds the replica's prompt work for S = u / x seconds on average,
    in proportion to its length, whose squared coefficient of variation is ``cv2``; so the wait is
    u / (1 - u) x S x (1 + cv2) / 2, M/D/1's (cv2 0) for prompts of one length."""
    if x <= 0 or u <= 0:
        return 0.0
    return u / (1 - u) * (u / x) * (1 + cv2) / 2


def _steady(rep: _Replica, traffic: Traffic, replicas: int) -> tuple[float, float, float, float, str, float] | None:
    """``_solve``, once for each traffic and replica count on a replica (checks and reports ask again)."""
    key = (traffic, replicas)
    if key not in rep.memo:
        rep.memo[key] = _solve(rep, traffic, replicas)
    return rep.memo[key]  # type: ignore[no-any-return]


def _solve(rep: _Replica, traffic: Traffic, replicas: int) -> tuple[float, float, float, float, str, float] | None:
    """(requests in flight, requests/s, mean TPOT s, TTFT s, step bound, prefill share) per replica in
    steady state, or None when none exists (the prompts or the decodes outrun the replica).

    Rate: throughput x is the rate per replica. Users (a closed loop of N per replica): x = N / (TTFT +
    (output - 1) x TPOT), at most what keeps prefill under 99% of the time. Either way the decoding
    count is x (output - 1) TPOT (Little's law).

    TPOT is the mean step, plus the prompt steps queued behind a request as its decode begins:
    prompts are computed first come first served, so those that reached the engine while it waited
    for and ran its own prompt steps, n_p x W of them (W its time there, to its first token), come
    in its first decode steps, each adding what ``_Replica.step`` says over its output - 1 tokens.
    With long prompts near the replica's prefill capacity this is most of a request's TPOT (Qwen2.5-32B
    at TP 4 with 32,000-token prompts at half a request a second: docs/simulation.md)."""
    out = max(traffic.output, 1)
    users = math.ceil(traffic.users / replicas) if traffic.users else None
    x = traffic.rate / replicas if traffic.rate is not None else 0.0
    nd = float(users) if users else 0.0
    limit = 4 * max(rep.capacity, rep.seq_limit) + 1
    path = float(rep.c.request_path_s(rep.P_tail))
    res: tuple[float, str, float, float, float] | None = None
    own: tuple[float, str, float, float, float] | None = None
    tpot = ttft = 0.0

    def both(nd: float, x: float) -> tuple[Any, Any]:
        # The steps as a prompt finds them (the time-average batch) and as a decoding request's own
        # tokens do (``_Replica.seen``); None where the prompts outrun the replica.
        res = rep.step(nd, x)
        return res, (rep.step(nd, x, rep.seen(nd, users)) if res is not None and out > 1 else res)

    trail: list[float] = []
    for k in range(400):
        res, own = both(nd, x)
        if users:
            while res is None or res[2] > 0.99:
                x *= 0.9  # a closed loop cannot outrun its prompts: they queue
                res, own = both(nd, x)
        if res is None or own is None:
            return None
        t, _, u, _, _ = res
        ttft = rep.ttft(nd, t, u, x) + _prefill_wait(u, x, rep.cv2)
        tpot = _tpot(rep, nd, x, own, ttft - path - rep.recv_wait(nd, t, u), out, users)
        if users:
            x_new = users / (ttft + (out - 1) * tpot)
            x = x_new if k < 20 else 0.5 * (x + x_new)
        new = min(x * (out - 1) * tpot, float(users)) if users else x * (out - 1) * tpot
        if new > limit:
            return None
        if abs(new - nd) <= 1e-7 * max(nd, 1) and k > 1:
            nd = new
            break
        nd = new if k < 20 else 0.5 * (nd + new)
        # A decode step's time jumps at each whole request a lane holds, and where the steady state sits on such a
        # jump the iterates circle within it without closing in: stop once the last 20 lie within half a request.
        trail.append(nd)
        if k >= 60 and max(trail[-20:]) - min(trail[-20:]) <= CIRCLE_REQUESTS:
            break
    assert res is not None and own is not None
    t, bound, u, _, _ = res
    ttft = rep.ttft(nd, t, u, x) + _prefill_wait(u, x, rep.cv2)
    tpot = _tpot(rep, nd, x, own, ttft - path - rep.recv_wait(nd, t, u), out, users)
    if not users and x > 0 and out > 1 and rep.capacity >= 1:
        pool = _pool(rep, x, out, path, x * (ttft + (out - 1) * tpot))
        if pool is None:
            return None
        tpot, ttft, wait, full = pool
        rep.seats[traffic, replicas] = (wait, full)
    n = float(users) if users else x * (ttft + (out - 1) * tpot)
    return n, x, tpot, ttft, bound, u


CIRCLE_REQUESTS = 0.5
"""``_solve`` stops once its last 20 iterates of the requests in flight (past the 60th) lie within this many requests:
a decode step's time jumps at each whole request a lane holds, and a steady state on such a jump has iterates that
circle within it without closing in."""


POOL_GRID = 1.25
"""``_pool`` evaluates the step model at every pool size to 8, then at sizes 1.25x apart (and at the
ends of the states it weighs), linear between: a grid that does not move with the load, so the
figures it gives grow with the rate as the chain's do."""

POOL_SIGMAS = 8
"""``_pool`` weighs the states within this many Poisson standard deviations of the steady state's
requests in flight (and up to what the pool holds, plus this many beyond the spread): a Poisson count
leaves under 1e-12 of its probability outside, and the chain, wider where S grows with k, is weighed
over the same states."""


def _pool(
    rep: _Replica, x: float, out: int, path: float, n: float, decode_only: bool = False
) -> tuple[float, float, float, float] | None:
    """(mean TPOT, mean TTFT, its wait for a seat, the share of the time the pool is full) of open (Poisson) traffic at ``x`` requests/s on one replica whose pool
    holds at most c requests, from the distribution of the requests in it, not its mean alone; None
    when the replica cannot carry ``x`` even with its pool full.

    The requests in the pool are a birth-death chain: arrivals at x; with k in it, each decodes a token
    every T(k) (``_tpot`` at the batch k, the prompts arriving at x beside it) after F(k) to its first
    token (``_Replica.ttft`` beside k - 1 others, and the M/G/1 wait for prefill capacity), so they
    leave at k / S(k), S(k) = F(k) + (output - 1) T(k). Past c (what the pool holds at full length,
    the engine's max_num_seqs, or the most beside which a prompt still gets a step) arrivals wait,
    leaving at c / S(c), so the chain is stable only for x < c / S(c). Its stationary law gives:

    - TTFT: the request path, the wait for a seat in the pool (Little: the mean queue / x), and F as
      the state an arrival finds (Poisson arrivals see the time average) plus itself;
    - TPOT: a request's tokens over its decoding time. It spends time in state k in proportion to k
      p_k (the size-biased law: it is one of the k), making tokens at 1 / T(k), so its mean TPOT is
      sum(k p_k) / sum(k p_k / T(k)). With S constant the chain is Poisson and this is T at the mean
      plus one, ``_Replica.seen``; near the pool's limit the tail of full pools and the queue for a
      seat, which a mean alone misses, come in.

    ``n``, the steady state's requests in flight, centres the states weighed (``POOL_SIGMAS``).

    ``decode_only``: a disaggregated decode instance, whose requests arrive with their first token
    (F = 0, ``path`` 0) and whose steps carry no prompts; the TTFT figure is then the wait for a seat
    alone."""
    lanes = rep.lanes
    c = min(rep.capacity, rep.seq_limit)
    spread = POOL_SIGMAS * math.sqrt(n + 1)
    # A steady state past what the pool seats (its mean can be, queueing) weighs the states up to it.
    s0 = max(0, min(math.floor(n - spread), c - 1))
    k0 = max(s0, 1)  # the first state with a request decoding
    hi = max(min(c, math.ceil(n + spread) + POOL_SIGMAS), k0)
    # The pool sizes where a lane's decode batch passes the largest CUDA graph (the step's time jumps there, and
    # the grid's straight line across it would smear the jump over a quarter of the pool: docs/simulation.md).
    g = rep.graph_max
    edges = () if g is None else (lanes * g, lanes * g + 1, lanes * (g + 1), lanes * (g + 1) + 1)
    ks = sorted({k0, hi} | {k for k in (*_grid(hi), *edges) if k0 < k < hi})
    got: list[tuple[int, float, float]] = []
    for k in ks:
        if decode_only:
            alone = rep.step(k, 0.0, max(k / lanes, 1.0))
            if alone is None:
                break
            got.append((k, alone[0], 0.0))
            continue
        seen = rep.step(k, x, max(k / lanes, 1.0))
        found = rep.step(k - 1, x)
        if seen is None or found is None or not math.isfinite(seen[0]):
            break  # a prompt gets no step beside k requests: the pool's effective limit is below k
        t, _, u, _, _ = found
        first = rep.ttft(k - 1, t, u, x) - path + _prefill_wait(u, x, rep.cv2)
        got.append((k, _tpot(rep, float(k), x, seen, first - rep.recv_wait(k - 1, t, u), out, None), first))
    if not got:
        return None
    top = got[-1][0]
    full = top < hi or hi == c  # the chain reaches the most the pool seats: past it, arrivals wait
    xs = [g[0] for g in got]
    # T, F and S by state k0 .. top (index k - k0).
    T, F = _interp(xs, [g[1] for g in got]), _interp(xs, [g[2] for g in got])
    S = [f + (out - 1) * t for t, f in zip(T, F)]
    if full and x * S[-1] >= top:
        return None
    # p_k / p_(k-1) = x S(k) / k (arrivals at x, departures k / S(k)) from the first state weighed, s0;
    # past a full pool each further state is rho = x S(top) / top times the one before.
    p = [0.0] if s0 == 0 else []  # log p, relative to the first state
    logp = 0.0
    for k in range(k0, top + 1):
        if p or k > k0:
            logp += math.log(x * S[k - k0] / k)
        p.append(logp)
    peak = max(p)
    p = [math.exp(v - peak) for v in p]  # index k - s0
    tail = queue = 0.0
    if full:
        rho = x * S[-1] / top
        tail, queue = p[-1] * rho / (1 - rho), p[-1] * rho / (1 - rho) ** 2  # states past it: mass, mean excess
    z = sum(p) + tail
    states = range(s0, top + 1)
    busy = sum(k * q for k, q in zip(states, p) if k) + top * tail
    rate = sum(k * q / T[k - k0] for k, q in zip(states, p) if k) + top * tail / T[-1]
    # An arrival finds state k and joins it: its first token as with k + 1 in the pool (at most top).
    first = sum(q * F[min(k + 1, top) - k0] for k, q in zip(states, p)) + tail * F[-1]
    wait = queue / z / x
    return busy / rate, path + wait + first / z, wait, (p[-1] + tail) / z if full else 0.0


def _grid(hi: int) -> list[int]:
    """Pool sizes 1 to 8, then 1.25x apart, up to hi (``POOL_GRID``)."""
    out, k = list(range(1, min(hi, 8) + 1)), 8.0
    while k * POOL_GRID <= hi:
        k *= POOL_GRID
        out.append(round(k))
    return out


def _interp(xs: list[int], ys: list[float]) -> list[float]:
    """ys at every whole k from xs[0] to xs[-1], linear between the points xs."""
    out = [ys[0]]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        out += [y0 + (y1 - y0) * (k - x0) / (x1 - x0) for k in range(x0 + 1, x1 + 1)]
    return out


def _tpot(
    rep: _Replica, nd: float, x: float, res: tuple[float, str, float, float, float], wait: float, out: int, users: int | None
) -> float:
    """A request's mean TPOT (``_steady``): the mean step, plus the prompt steps queued behind it when
    its decode begins, n_p x ``wait`` (its time in the engine to its first token, from when the scheduler
    takes it in: the prompts that came while a receive interval held it back run in its own prompt step,
    ``_Replica.ttft``), each adding ``late``. Those prompts must fit beside it: a pool that holds c requests at full length holds at
    most c - 1 others, each ``n_p / x`` prompt steps; one that holds one request never runs a prompt
    beside a decode, and the TPOT is the decode-only step."""
    t, _, _, n_p, late = res
    if rep.capacity < 2 and x > 0:
        alone = rep.step(nd, 0.0, rep.seen(nd, users))
        return alone[0] if alone else t
    if out <= 1 or x <= 0:
        return t
    queued = min(n_p * wait, (rep.capacity - 1) * n_p / (x / rep.lanes))
    return t + queued * late / (out - 1)


def _deployment(rep: _Replica, traffic: Traffic, slo: SLO, replicas: int, price: float | None, why: str = "") -> Deployment:
    ok, n, fail, use = _check(rep, traffic, slo, replicas)
    st = _steady(rep, traffic, replicas)
    binding = why or max(use, key=lambda k: use[k])
    short = ""
    if not ok:
        short = (
            ", ".join(
                f"{k} at {v:.0%} of its limit" if math.isfinite(v) else f"{k} past its limit (no steady state at this rate)"
                for k, v in use.items()
                if v > 1
            )
            or "carries no steady state"
        )
    tpot, ttft, bound = (st[2], st[3], st[4]) if st else (math.inf, math.inf, "compute")
    ttft_at = _replica_ttft_at(rep, traffic, replicas, st, slo.percentile) if st else math.inf
    seat = rep.seats.get((traffic, replicas), (0.0, 0.0))
    gpus = rep.shape.gpus * replicas
    return Deployment(
        gpu=rep.gpu.name,
        tp=rep.tp,
        pp=rep.pp,
        replicas=replicas,
        gpus=gpus,
        cost_per_hour=price * gpus if price is not None else None,
        in_flight_per_replica=float(n),
        capacity_per_replica=rep.capacity,
        tpot_s=tpot,
        ttft_s=ttft,
        step_bound_by=bound,
        memory_share=n / rep.capacity if rep.capacity else math.inf,
        binding=binding,
        use={k: round(v, 6) for k, v in use.items()},
        feasible=ok,
        shortfall=short,
        dp=rep.dp,
        ep=rep.ep,
        shape=rep.shape.describe(),
        engine_flags=engine_flags(rep.shape, rep.engine),
        placement=_placement(rep.gpu, rep.shape, replicas),
        why=_why(rep),
        seat_wait_s=seat[0],
        pool_full_share=seat[1],
        ttft_at_percentile_s=ttft_at,
    )


def _track(
    model: ModelSpec, dep: Deployment, constants: StepConstants, engine: Engine, metrics: tuple[str, ...], subject: str
) -> TrackRecord | None:
    """The track record of a deployment's kind (model kind, GPUs a replica), its TPOT carried through it."""
    tpot = {"mean_tpot": dep.tpot_s} if dep.tpot_s > 0 else None
    return for_estimate(model.is_moe, dep.tp * dep.pp * dep.dp, constants, engine, metrics, tpot, subject)


def _placement(gpu: GPUSpec, shape: Shape, replicas: int) -> str:
    per = node_of(gpu).gpus_per_node
    total = shape.gpus * replicas
    nodes = math.ceil(total / per)
    where = place(gpu, shape).describe()
    if replicas > 1:
        where = f"{replicas} replicas of {where}"
    if total < per:
        # One replica's place already says its share of the node.
        return where if replicas == 1 else f"{where}; {total} of one {per}-GPU node"
    spare = nodes * per - total
    return where + (f"; {nodes} nodes in all" + (f" ({spare} GPUs spare)" if spare else "") if replicas > 1 else "")


def _why(rep: _Replica) -> str:
    bits = []
    if rep.pp > 1:
        bits.append(f"PP {rep.pp}: the stages span servers while TP stays inside the {link_name(rep.sm.gpu, 'nvlink')} domain")
    if rep.dp > 1:
        latent = any(k.mla_attention for k in rep.sm.model.kinds()) and not rep.mla_per_head
        bits.append(
            f"DP attention {rep.dp}: each rank keeps only its own requests' KV"
            + (" (an MLA latent would be whole on every TP rank)" if latent else "")
            + f", the experts spread over all {rep.dp * rep.tp} GPUs"
        )
    return "; ".join(bits)


def _gemm_words(c: StepConstants) -> str:
    """The matmuls' bandwidth share as the step model takes it (kvcalc.engine.steptime.for_gpu)."""
    if c.eta_gemm is not None:
        return f"{c.eta_gemm:g}"
    return f"the GPU's measured matmul share where its spec has one, else {c.eta_bw:g}"


def _compute_words(c: StepConstants) -> str:
    """The matmuls' share of the peak as the step model takes it (kvcalc.engine.steptime.for_gpu)."""
    if c.eta_c_gemm is not None:
        return f"{c.eta_c_gemm:g}"
    return f"the GPU's measured share where its spec has one, else {c.eta_c:g}, {c.eta_c_fp8:g} at fp8, {c.eta_c_int8:g} at int8, {c.eta_c_fp4:g} at fp4"


def _gemm_latency_words(c: StepConstants) -> str:
    if c.gemm_latency_s is not None:
        return f"{c.gemm_latency_s * 1e6:g} us"
    return f"the GPU's measured latency, else {GEMM_LATENCY_S * 1e6:g} us,"


def _attn_request_words(c: StepConstants) -> str:
    if c.attn_request_s is not None:
        return f"{c.attn_request_s * 1e9:g} ns"
    return f"the GPU's measured cost, else {ATTN_REQUEST_S * 1e9:g} ns,"


def _eager_prompt_words(
    engine: Engine, gpus: list[GPUSpec], model: ModelSpec, constants: StepConstants, weight_dtype: str | None = None
) -> str:
    """Where the release runs prompt steps without CUDA graphs (Engine.prompt_graphs, with the MoE kernel it picks for
    the experts: experts_runner), in words for the TTFT assumption; empty where it never does on these GPUs."""
    eager = [
        g.name
        for g in gpus
        if not engine.prompt_graphs(1, g.vendor, model, 1, g.name, moe=experts_runner(engine, model, g, weight_dtype))
    ]
    at_pp = [g.name for g in gpus if g.name not in eager and not engine.prompt_graphs(2, g.vendor, model, 1, g.name)]
    at_dp = [g.name for g in gpus if g.name not in eager and not engine.prompt_graphs(1, g.vendor, model, 2, g.name)]
    # Where the release captures an MLA model's prompt steps only up to a size of its own (Engine.prefill_graph_max_mla).
    cap = engine.prefill_graph_max_mla if model.mla is not None and len(eager) < len(gpus) else None
    if not eager and not at_pp and not at_dp and cap is None:
        return ""
    where = [] if len(eager) == len(gpus) else ([f"on {', '.join(eager)}"] if eager else [])
    where += [f"at PP > 1 on {', '.join(at_pp)}"] if at_pp else []
    where += [f"under DP attention on {', '.join(at_dp)}"] if at_dp else []
    where += [f"{'elsewhere ' if where else ''}past {cap:,} tokens (its largest prompt graph for an MLA model)"] if cap else []
    return (
        f"; {engine.label} runs those steps without CUDA graphs{' ' + ' and '.join(where) if where else ''}, so each "
        f"takes at least the host's issue of the model's kernels ({constants.eager_host_s * 1e6:g} us a kernel)"
    )


def _fixed_triton_words(engine: Engine, model: ModelSpec, gpus: list[GPUSpec], constants: StepConstants) -> str:
    """The fixed-split Triton MLA decode the release runs by default on the GPUs where the step model prices it
    (engines.triton_mla_fixed_splits), in words for the decode step's assumption; empty where it runs on none."""
    said = [f"{g.name}: {got[0]} parts" for g in gpus if (got := triton_mla_fixed_splits(engine, model, g)) is not None]
    if not said:
        return ""
    return (
        f"; decode attention on {engine.label}'s default Triton MLA kernel, which splits every request's context into a "
        f"fixed count of parts whatever the batch ({', '.join(said)}): the KV reads take at least the longest part at "
        f"{constants.triton_cta_bytes_per_s / 1e9:g} GB/s a block, once for every turn of the blocks past those the GPU "
        "runs at once"
    )


def _eager_decode_words(engine: Engine, gpus: list[GPUSpec], constants: StepConstants) -> str:
    """The largest decode batch the release replays from a CUDA graph on each GPU (Engine.decode_graph_max),
    in words for the decode step's assumption; empty where the release has no such limit."""
    said = []
    for g in gpus:
        small, large = engine.decode_graph_max(g, 1), engine.decode_graph_max(g, 4)
        if small is None or large is None:
            return ""
        said.append(
            f"{g.name}: {small:,} requests" if small == large else f"{g.name}: {small:,} requests at TP < 4, {large:,} at TP >= 4"
        )
    return (
        f"; {engine.label} runs a decode batch (a DP rank's) past the largest it captures in a CUDA graph ("
        + "; ".join(said)
        + ") without one, so it takes at least the host's issue of the model's kernels "
        f"({constants.eager_host_s * 1e6:g} us a kernel)"
    )


def plan(
    model: ModelSpec,
    gpus: list[GPUSpec],
    traffic: Traffic,
    slo: SLO,
    kv_dtype: KVDtype,
    engine: Engine,
    max_gpus: int = 64,
    prices: dict[str, float] | None = None,
    constants: StepConstants = DEFAULTS,
    latency: bool = True,
    tp_sizes: tuple[int, ...] = TP_SIZES,
    pp_sizes: tuple[int, ...] = PP_SIZES,
    base: FitInputs | None = None,
    dp_sizes: tuple[int, ...] | None = None,
    cross_node_tp: bool = False,
    disaggregate: bool = True,
    ep_modes: tuple[bool, ...] = (True,),
    recv_interval: int = 1,
) -> PlanReport:
    """Every shape people deploy on each GPU (kvcalc.engine.deployment.candidate_shapes: TP inside the
    NVLink domain, PP across servers, DP attention with EP for MoE models, on whole servers) up to
    ``max_gpus`` GPUs, each with the fewest replicas that carry the traffic; and, with
    ``disaggregate``, prefill and decode pools of those shapes side by side. ``recv_interval``:
    SGLang's --scheduler-recv-interval (``_Replica.ttft``), which rules out DP attention."""
    constants = for_engine(constants, engine)
    engine.check_recv_interval(recv_interval, max(dp_sizes or (1,)))
    if (traffic.users is None) == (traffic.rate is None):
        raise KvcalcError(
            "give the load as users or as a rate", "traffic", "users (requests in flight) or a rate (requests/s), not both"
        )
    if traffic.prompt < 1 or traffic.output < 0:
        raise KvcalcError("a request needs at least one prompt token", "prompt", "a positive number of tokens")
    prices = prices or {}
    feasible: list[Deployment] = []
    near: list[tuple[float, Deployment]] = []
    near_disagg: list[Deployment] = []
    skipped: dict[str, str] = {}
    considered = 0
    if dp_sizes and any(x > 1 for x in dp_sizes) and not (model.moe and engine.name in ("vllm", "sglang")):
        raise KvcalcError(
            f"DP {','.join(map(str, dp_sizes))}: data-parallel attention needs a mixture-of-experts model on vLLM or "
            f"SGLang; {model.name}'s DP ranks would be plain replicas, which plan counts itself",
            "dp_sizes",
            "DP 1, or leave it out",
        )
    for gpu in gpus:
        for x in dp_sizes or ():
            if not any(
                sh.dp == x for sh in candidate_shapes(model, gpu, engine, max_gpus, tp_sizes, pp_sizes, (x,), cross_node_tp)
            ):
                per = node_of(gpu).gpus_per_node
                raise KvcalcError(
                    f"DP {x}: no DP x TP of {gpu.name} fills whole {per}-GPU servers or divides one within {max_gpus} GPUs",
                    "dp_sizes",
                    f"a DP size whose DP x TP divides {per} or is a multiple of it",
                )
    shapes_by_gpu: dict[str, list[_Replica]] = {}
    for gpu in gpus:
        any_fit = False
        reason = ""
        fitting: list[_Replica] = []
        for shape in candidate_shapes(model, gpu, engine, max_gpus, tp_sizes, pp_sizes, dp_sizes, cross_node_tp, ep_modes):
            try:
                made = _shape_replica(model, gpu, shape, traffic, kv_dtype, engine, constants, base, recv_interval)
            except KvcalcError as e:
                reason = reason or e.what
                continue
            if made is None:
                continue
            rep = made
            if rep.capacity < 1:
                reason = reason or f"no request of {traffic.length:,} tokens fits beside the weights"
                continue
            any_fit = True
            fitting.append(rep)
            considered += 1
            price = prices.get(gpu.name)
            s = slo if latency else SLO()
            best_miss: tuple[float, Deployment] | None = None
            found = False
            prev: tuple[bool, float, str, dict[str, float]] | None = None
            for r in range(1, max_gpus // shape.gpus + 1):
                got = _check(rep, traffic, s, r)
                ok, _, fail, use = got
                if ok:
                    feasible.append(_deployment(rep, traffic, s, r, price, prev[2] if prev else ""))
                    found = True
                    break
                worst = max(use.values()) if use else math.inf
                # Equal shortfalls (no steady state at this rate is inf for all): the more replicas, the nearer.
                if best_miss is None or worst <= best_miss[0]:
                    best_miss = (worst, _deployment(rep, traffic, s, r, price))
                # More replicas cannot lower a latency floor: stop once a latency target alone fails and
                # adding a replica no longer helps it.
                if prev is not None and fail in ("TPOT", "TTFT") and use.get("memory", 0) <= 1:
                    if prev[3].get(fail, 0) <= use.get(fail, 0) * 1.0001:
                        break
                prev = got
            if not found and best_miss is not None:
                near.append(best_miss)
        if not any_fit:
            skipped[gpu.name] = reason or "nothing fits"
        shapes_by_gpu[gpu.name] = fitting
    if disaggregate and latency:
        for gpu in gpus:
            for d in _disaggregated(
                model,
                gpu,
                shapes_by_gpu.get(gpu.name, []),
                traffic,
                slo,
                kv_dtype,
                engine,
                constants,
                base,
                max_gpus,
                prices.get(gpu.name),
            ):
                (feasible if d.feasible else near_disagg).append(d)

    def key(d: Deployment) -> tuple[float, float, float, float]:
        # Fewest GPUs, then cost, then the shallower pipeline, then the faster TPOT.
        return (d.gpus, d.cost_per_hour if d.cost_per_hour is not None else 0.0, d.pp, d.tpot_s)

    feasible.sort(key=key)
    per_type: dict[str, Deployment] = {}
    for d in feasible:
        per_type.setdefault(d.gpu, d)
    ranked_by = "gpus"
    if prices and feasible and all(d.cost_per_hour is not None for d in feasible):
        feasible.sort(key=lambda d: (d.cost_per_hour or 0.0, d.gpus, d.tpot_s))
        ranked_by = "cost"
    # The least shortfall; among equal ones (no steady state is inf for all), the most GPUs.
    nearest = min(near, key=lambda x: (x[0], -x[1].gpus))[1] if near and not feasible else None
    fabric = " or ".join(dict.fromkeys(link_name(g, "nvlink") for g in gpus))
    assumptions = [
        f"memory: kvcalc fit with {engine.title}'s budget at {traffic.length:,} tokens per request (prompt + output)"
        + (f", a memory fraction of {base.util:g}" if base is not None and base.util is not None else "")
        + ", "
        "per replica; TP splits KV heads"
        + (
            " (an MLA layer's per-head K and V too, as this release caches them)"
            if model.mla is not None and engine.mla_per_head(model, base.weight_dtype if base is not None else None)
            else " (an MLA latent is kept whole on every TP rank)"
        )
        + ", PP splits layers",
        f"decode step (kvcalc.engine.steptime, constants: {constants.origin}): the root-sum-square of (weight bytes / (bandwidth x "
        f"{_gemm_words(constants)}), matmul FLOPs / (peak x {_compute_words(constants)})) (their sum where the GPU's "
        "measured matmuls add them) + "
        f"max(KV bytes / (bandwidth x {constants.eta_bw:g}), attention FLOPs / (16-bit peak x {constants.eta_c:g})) + "
        "the small kernels' activation bytes over the same bandwidth + "
        f"{constants.fixed_s * 1e3:g} ms a step + "
        f"{constants.per_request_s * 1e6:g} us a running request + each layer's kernel latencies "
        f"({_gemm_latency_words(constants)} a matmul, {constants.attn_latency_s * 1e6:g} us an attention call, and "
        f"{_attn_request_words(constants)} a running request and KV head in each attention call) + the "
        "TP all-reduces (as the GPU spec measured them by size, where it has them) and PP hand-offs over the GPU's "
        "link, at the requests decoding (context "
        f"{traffic.prompt + max(traffic.output // 2, 1):,} tokens, mid-output) and the prompt tokens each step "
        "carries (chunked prefill); with PP, PP micro-batches are in flight and a token crosses every stage"
        + (
            f"; {engine.label} schedules the next step while the GPU runs this one, so the host's per-step and "
            "per-request time runs beside the GPU's work and a step takes the longer of the two (not at PP > 1"
            + {"one-node": " or across nodes)", "pp1-no-dp": " or under DP attention)"}.get(engine.async_scheduling, ")")
            if engine.async_scheduling != "none"
            else ""
        )
        + _eager_decode_words(engine, gpus, constants)
        + (
            "; decode attention on SGLang's Triton backend: the KV reads take at least the longest part of a request's "
            "context that one of the kernel's thread blocks reads (up to 8 parts a request, fewer as the batch fills "
            f"the GPU) at {constants.triton_cta_bytes_per_s / 1e9:g} GB/s a block, once for every turn of the blocks "
            "past those the multiprocessors run at once"
            if engine.attention_backend == "triton"
            else _fixed_triton_words(engine, model, gpus, constants)
        ),
        f"TTFT (mean): the request path ({constants.request_overhead_s * 1e3:g} ms + "
        f"{constants.tokenize_s_per_token * 1e6:g} us per prompt token), half a step, the wait for prefill capacity "
        "(M/G/1, Pollaczek-Khinchine: u / (1 - u) x the prompt's service time x (1 + cv2) / 2, cv2 the prompts' "
        "lengths' squared coefficient of variation, 0 for one length), then the steps that carry the prompt in chunks of the "
        "token budget left beside the decodes"
        + _eager_prompt_words(engine, gpus, model, constants, base.weight_dtype if base is not None else None),
        f"TTFT p{slo.percentile} (what the TTFT target bounds): the mean with its waits (for prefill capacity, met "
        "with chance u, and for a seat in a full pool) taken together as 0 or, when met, exponential with their "
        f"mean, at the {slo.percentile}th percentile: (W / p) ln(p / (1 - q))",
        "TPOT (mean): the mean step over prompt and decode-only steps at the batch a request's own tokens see (the "
        "others decoding and itself), plus the prompts that reached the engine while it waited for its first token, "
        "whose steps come first in its decode (first come, first served)",
        *(
            [
                f"prefix cache: {traffic.prompt_cache_hit:.0%} of each prompt was computed before; its whole blocks of "
                f"{PREFIX_BLOCK} tokens ({cached_prompt_tokens(traffic.prompt_cache_hit, traffic.prompt, PREFIX_BLOCK):,} of "
                f"{traffic.prompt:,}) are not computed again, never the last token; they still count in the KV a request holds"
            ]
            if traffic.prompt_cache_hit
            else []
        ),
        f"searched: TP {', '.join(map(str, tp_sizes))} x PP 1 to {max(pp_sizes)} x replicas, up to {max_gpus} GPUs"
        + (
            ", and for mixture-of-experts models DP attention with EP over every GPU of a stage"
            if model.moe and engine.name in ("vllm", "sglang")
            else ""
        )
        + f"; TP inside the {fabric} domain (or a PCIe server), PP only across servers, every deployment on whole "
        "servers or a share of one (the GPU spec's node)",
    ]
    if recv_interval > 1:
        assumptions.append(
            f"--scheduler-recv-interval {recv_interval:,}: while requests decode, the scheduler takes new ones in every "
            f"{recv_interval:,} decode steps and at once after a prompt step, so a request that comes during the decodes "
            f"waits {(recv_interval - 1) / 2:g} decode steps more on average and a prompt step carries the prompts of "
            f"{recv_interval:,} decode steps (aggregated replicas; no DP attention, which SGLang refuses with it)"
        )
    if engine.overlap_admission:
        assumptions.append(
            f"{engine.label}'s overlap loop (at PP 1) polls for requests as a step begins, for the step after it "
            "(managers/scheduler.py event_loop_overlap): a request that comes during a prompt step, or during the step "
            "whose end a poll decides at, waits for the next poll, one prompt step later if the missed poll found "
            "requests (Poisson), else a receive interval of decode steps"
        )
    if any(d.dp > 1 for d in feasible):
        assumptions.append(
            "DP attention: requests spread evenly over the DP ranks, which step in lockstep (the MoE layers gather "
            "every rank's tokens); each MoE layer waits for the busiest EP rank, which reads the most distinct "
            "experts (uniform routing: the expected largest of the ranks' counts) and carries moe_imbalance "
            f"{constants.moe_imbalance:g}x the mean expert FLOPs (1.0 balanced to 2.6 unbalanced at EP 32)"
        )
    if disaggregate and latency:
        assumptions.append(
            "disaggregated: x prefill instances and y decode instances, the fewest of each; a prompt's KV (every layer, "
            f"each KV head once) crosses {fabric} inside one domain, else the prefill GPUs' NICs at 0.7 of their rate; TTFT "
            "= request path + M/G/1 wait + the prompt's steps + the transfer + 1.5 decode steps (+ the wait for a decode "
            "instance's seat, from its pool's states, for a rate)"
        )
    if traffic.users:
        assumptions.append(
            "users: each sends its next request when its last one finishes, out of step with the others (prompts "
            "reach the engine as a steady stream, as lengths that differ make them); clients replaying identical "
            "lengths, as a benchmark's fixed-length dataset does, stay in step, and their prompts come in bursts "
            "whose TTFT is several times this one (docs/simulation.md)"
        )
    if traffic.rate is not None:
        assumptions.append("requests in flight per replica by Little's law: rate / replicas x (TTFT + (output - 1) x TPOT)")
        assumptions.append(
            "the pool's states: the requests in a replica's pool as a birth-death chain (arrivals at the rate, each "
            "leaving after its first token and output at the step times of that many in the pool); the mean TTFT and "
            "TPOT are over its stationary law, with the wait for a seat when the pool is full, and a rate the full pool "
            "cannot carry has no steady state (memory)"
        )
    if base is not None and base.weight_dtype:
        assumptions.append(_weights_words(base.weight_dtype))
    warnings = list(dict.fromkeys(n for g in gpus if (n := triton_default_note(engine, model, g))))
    if not feasible:
        warnings.append(
            "no deployment of at most "
            f"{max_gpus} GPUs carries this load"
            + (
                f" within the targets; nearest: {nearest.gpus} x {nearest.gpu} (TP {nearest.tp}, PP {nearest.pp}, "
                f"{nearest.replicas} replica{'s' if nearest.replicas > 1 else ''}): {nearest.shortfall}"
                if nearest
                else ""
            )
        )
    agg = next((d for d in feasible if d.mode == "aggregated"), None)
    dis = next((d for d in feasible if d.mode == "disaggregated"), None)
    disagg_note = ""
    if dis and agg:
        head_d, head_a = max(dis.use.values(), default=0.0), max(agg.use.values(), default=0.0)
        if (dis.gpus, dis.cost_per_hour or 0) == (agg.gpus, agg.cost_per_hour or 0):
            winner, loser, hw, hl = (dis, agg, head_d, head_a) if head_d < head_a else (agg, dis, head_a, head_d)
            disagg_note = (
                f"both need {dis.gpus} x {dis.gpu}; {winner.mode} ({winner.shape}) has more headroom: its tightest "
                f"constraint ({winner.binding}) at {hw:.0%} of its limit against {hl:.0%} ({loser.binding}) for "
                f"{loser.mode} ({loser.shape})"
            )
        elif (dis.gpus, dis.cost_per_hour or 0) < (agg.gpus, agg.cost_per_hour or 0):
            disagg_note = (
                f"disaggregated wins: {dis.shape} on {dis.gpus} x {dis.gpu} against {agg.gpus} aggregated "
                f"({agg.shape}); {agg.binding} binds the aggregated deployment, and on separate pools decode steps carry "
                "no prompt chunks"
            )
        else:
            disagg_note = (
                f"aggregated wins: {agg.gpus} x {agg.gpu} ({agg.shape}) against {dis.gpus} disaggregated ({dis.shape}): "
                "the prefill pool idles between prompts while an aggregated replica fills those steps with decodes"
            )
    elif dis and not agg:
        disagg_note = f"only disaggregated deployments meet the targets: {dis.shape} on {dis.gpus} x {dis.gpu}"
    elif disaggregate and latency and agg:
        disagg_note = f"no disaggregated deployment of at most {max_gpus} GPUs meets the targets"
    shown = feasible[0] if feasible else nearest
    track = (
        _track(
            model,
            shown,
            constants,
            engine,
            ("mean_tpot", "output_throughput", "mean_ttft"),
            "the best deployment" if feasible else "the nearest deployment",
        )
        if shown
        else None
    )
    band = next((m for m in track.metrics if m.metric == "mean_tpot"), None) if track and feasible and slo.tpot_s else None
    if track and band and band.measured_high and slo.tpot_s and band.measured_high > slo.tpot_s:
        warnings.append(
            f"the best deployment's TPOT of {feasible[0].tpot_s * 1e3:,.1f} ms meets the {slo.tpot_s * 1e3:,.1f} ms target, but "
            f"kvcalc's TPOT was {band.middle_half()} measured in the middle half of public runs of {track.kind}: off by "
            f"as much, it would measure up to {band.measured_high * 1e3:,.1f} ms (its track record)"
        )
    return PlanReport(
        track_record=track,
        disaggregation=disagg_note,
        model=model.name,
        traffic=traffic.describe(),
        slo=slo,
        kv_dtype=kv_dtype.name,
        engine=engine.key,
        constants=constants,
        best=feasible[0] if feasible else None,
        ranked=feasible[:12],
        per_gpu_type=sorted(per_type.values(), key=key),
        nearest=nearest,
        considered=considered,
        skipped=skipped,
        assumptions=assumptions,
        warnings=warnings,
        ranked_by=ranked_by,
    )


# ---- the reverse question of kvcalc fit --concurrency ------------------------------------------------


def reverse(model: ModelSpec, gpu: GPUSpec, inp: FitInputs, concurrency: int, max_gpus: int = 64) -> ReverseReport:
    """The reverse question: what do ``concurrency`` requests of ``inp.seq`` tokens need?

    The memory fraction that would hold them at the given tp and pp, and the deployment of fewest
    GPUs that holds them: kvcalc plan's search over TP x PP x replicas on this GPU, with this
    fit's engine, dtype and measured figures.
    """
    if concurrency < 1:
        raise KvcalcError(f"a concurrency of {concurrency}", "concurrency", "a positive number of requests")
    eng = inp.engine
    here = fit(model, gpu, inp)
    need = concurrency * here.request_bytes
    # Memory the budget must reach at this tp: fixed costs plus the requests.
    fixed = sum(line.bytes for line in here.budget if line.is_reserve)
    util_needed = None
    if eng.budget == "util_of_total":
        util_needed = (fixed + need) / here.gpu_memory_bytes
    elif eng.budget == "util_of_start_free":
        start = next((line.bytes for line in here.budget if line.key == "start_free"), here.gpu_memory_bytes)
        util_needed = (here.weight_bytes + need) / start if start > 0 else None
    elif eng.budget == "fraction_of_free":
        free = here.gpu_memory_bytes - fixed
        util_needed = need / free if free > 0 else None
    p = plan(
        model,
        [gpu],
        Traffic(prompt=inp.seq, output=0, users=concurrency),
        SLO(),
        inp.kv_dtype,
        eng,
        max_gpus=max_gpus,
        latency=False,
        base=inp,
    )
    best = p.best
    tried = [
        {
            "tp": d.tp,
            "pp": d.pp,
            "dp": d.dp,
            "ep": d.ep,
            "replicas": d.replicas,
            "gpus": d.gpus,
            "max_concurrency": d.capacity_per_replica * d.replicas,
        }
        for d in p.ranked[:6]
        if d.mode == "aggregated"
    ]
    return ReverseReport(
        concurrency=concurrency,
        kv_bytes_needed_per_gpu=need,
        util_needed=util_needed,
        util_possible=util_needed is not None and util_needed <= 1.0,
        tp_needed=best.tp if best else None,
        pp_needed=best.pp if best else None,
        replicas_needed=best.replicas if best else None,
        gpus_needed=best.gpus if best else None,
        dp_needed=best.dp if best else None,
        ep_needed=best.ep if best else None,
        shape_needed=best.shape if best else None,
        tried=tried,
    )


def util_to_hold(model: ModelSpec, gpu: GPUSpec, inp: FitInputs, requests: int = 1) -> float | None:
    """The smallest memory fraction, to a thousandth, above ``inp``'s own (its util, else the engine's default) at which
    the engine's pool on this shape holds ``requests`` requests of ``inp.seq`` tokens (the engine's fraction flag:
    vLLM's gpu_memory_utilization, SGLang's mem_fraction_static, TensorRT-LLM's free_gpu_memory_fraction); None where
    even 1.0 does not, or the engine takes no fraction. Found by bisection over fit, whose pool grows with the
    fraction."""
    here = fit(model, gpu, inp)
    if here.util is None or not inp.engine.util_flag:
        return None

    def holds(milli: int) -> bool:
        return fit(model, gpu, dataclasses.replace(inp, util=milli / 1000)).max_concurrency >= requests

    lo, hi = math.floor(here.util * 1000), 1000  # lo: does not hold (or is the fraction itself); hi: to test
    if here.max_concurrency >= requests or lo >= hi or not holds(hi):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi / 1000


# ---- checking the closed form by simulation --------------------------------------------------------


@record(frozen=True)
class Verification:
    """A deployment run through kvcalc simulate: one replica at rate / replicas, Poisson (or one
    prefill and one decode instance at their shares: plan's _verify_pools)."""

    gpu: str
    tp: int
    pp: int
    replicas: int
    gpus: int
    ttft_s: float
    """TTFT at ``percentile`` over the simulated requests: what the TTFT target bounds."""
    tpot_s: float
    """TPOT at ``percentile``, for reference: the TPOT target bounds the mean (``tpot_mean_s``)."""
    percentile: int
    offered_per_s: float
    served_per_s: float
    preemptions: int
    ok: bool
    note: str = ""
    tpot_mean_s: float = 0.0
    """The simulation's mean TPOT, what the TPOT target bounds and the closed form predicts."""
    closed_form_tpot_s: float | None = None
    """The closed form's TPOT for this many replicas (None: it found no steady state)."""
    dp: int = 1
    ep: int = 1
    shape: str = ""
    mode: str = "aggregated"
    """'disaggregated': one prefill and one decode instance were run; replicas, tp, dp and ep are
    the decode pool's, offered_per_s and served_per_s the deployment's (served: the lesser pool's)."""
    prefill_pool: str = ""
    decode_pool: str = ""

    @property
    def agreement(self) -> float | None:
        """Simulated mean TPOT over the closed form's."""
        if not self.closed_form_tpot_s or not math.isfinite(self.closed_form_tpot_s) or not self.tpot_mean_s:
            return None
        return self.tpot_mean_s / self.closed_form_tpot_s


def _weights_words(weight_dtype: str) -> str:
    """The assumption line of a weight format given in place of the checkpoint's."""
    return (
        f"weights as {weight_dtype}: kvcalc fit's per-role layout for that format (the linear layers in it; embeddings, "
        "LM head, norms and routers in 16 bits), in memory and in each step's bytes; fp8 matmuls at the fp8 peak "
        "where the GPU has one (W8A8), int8 ones at the INT8 peak where its spec gives one (W8A8), NVFP4 ones at the fp4 "
        "peak where it has one (W4A4)"
    )


def verify(
    model: ModelSpec,
    gpus: list[GPUSpec],
    report: PlanReport,
    prompts: Any,
    outputs: Any,
    rate: float,
    slo: SLO,
    kv_dtype: KVDtype,
    engine: Engine,
    percentile: int = 90,
    top: int = 3,
    extra_replicas: int = 4,
    seed: int = 0,
    constants: StepConstants = DEFAULTS,
    max_gpus: int = 64,
    traffic: Traffic | None = None,
    weight_dtype: str | None = None,
    recv_interval: int = 1,
    util: float | None = None,
) -> list[Verification]:
    """The closed form's best deployments (up to ``top``), each simulated with the traffic's own
    lengths, Poisson, adding replicas (up to ``extra_replicas`` more) until the targets hold at the
    ``percentile`` (50, 90 or 99) and the deployment keeps up with what it is offered, never past
    ``max_gpus``; TTFT is judged at the percentile and TPOT on its mean, as the closed form
    judges them. An aggregated deployment runs as one replica at rate / replicas (with PP, one
    micro-batch of it: simulate's ``pp``); a disaggregated one as one prefill instance and one
    decode instance at their shares (``_verify_pools``). The simulation steps with the same
    step-time model as the closed form, so the two are compared on mean TPOT. ``util``: the engine's memory
    fraction, as the closed form's pools took it (plan's ``base``)."""
    import numpy as np

    constants = for_engine(constants, engine)
    by_name = {g.name: g for g in gpus}
    key = f"p{latency_percentile(percentile)}"
    out: list[Verification] = []
    sim = _Sim(model, prompts, outputs, kv_dtype, engine, constants, seed, weight_dtype, traffic, recv_interval, util)
    for d in report.ranked[:top]:
        gpu = by_name[d.gpu]
        if d.mode == "disaggregated":
            out += _verify_pools(sim, gpu, d, rate, slo, key, percentile, extra_replicas, max_gpus)
            continue
        rep = sim.replica(gpu, d.tp, d.dp, d.ep, d.pp)
        size = d.tp * d.dp * d.pp
        for r in range(d.replicas, d.replicas + extra_replicas + 1):
            if size * r > max_gpus:
                break
            lam = rate / r
            base = Verification(
                d.gpu, d.tp, d.pp, r, size * r, 0.0, 0.0, percentile, lam, 0.0, 0, False, dp=d.dp, ep=d.ep, shape=d.shape
            )
            try:
                life = d.ttft_s + float(np.mean(outputs)) * d.tpot_s
                run = sim.run(gpu, lam, d.tp, d.dp, d.ep, pp=d.pp, requests=_check_requests(len(prompts), life, lam))
            except KvcalcError as e:
                out.append(dataclasses.replace(base, note=e.what))
                break
            ttft, tpot = getattr(run.ttft_s, key), getattr(run.tpot_s, key)
            # The simulation is one DP rank's (PP micro-batch's); whether it keeps up is the simulator's own verdict.
            served = _served(run, d.dp * d.pp)
            keeps_up = not run.overloaded
            # The targets as the closed form judges them: TTFT at the percentile, the mean TPOT.
            mean_tpot = run.tpot_s.mean
            ok = keeps_up and (slo.ttft_s is None or ttft <= slo.ttft_s) and (slo.tpot_s is None or mean_tpot <= slo.tpot_s)
            why = [] if keeps_up else [f"serves {served:.2f} of {lam:.2f} requests/s"]
            if slo.ttft_s is not None and ttft > slo.ttft_s:
                why.append(f"TTFT {key} {ttft * 1e3:,.0f} ms")
            if slo.tpot_s is not None and mean_tpot > slo.tpot_s:
                why.append(f"mean TPOT {mean_tpot * 1e3:,.1f} ms")
            st = _steady(rep, traffic, r) if rep is not None and traffic is not None else None
            out.append(
                dataclasses.replace(
                    base,
                    ttft_s=ttft,
                    tpot_s=tpot,
                    served_per_s=served,
                    preemptions=run.preemptions,
                    ok=ok,
                    note="; ".join(why),
                    tpot_mean_s=mean_tpot,
                    closed_form_tpot_s=st[2] if st else None,
                )
            )
            if ok:
                break
    return out


CHECK_LIVES = 16
"""A plan check simulates enough requests that its arrival window (the middle 80% of them, where the
simulator judges overload) spans this many of the closed form's request lifetimes (TTFT + output x
TPOT). A queue fills for several lifetimes before it settles, longer the nearer the load is to what
the deployment holds: a decode instance of Qwen3-32B on 8 H100s at 10 requests/s of 1,000 output
tokens (21.6 ms a token, a 22 s lifetime) is still filling after 2,000 requests, 7 lifetimes, and
reads as serving 9.35 of the 10, where 4,000 and 8,000 serve 10.05 and 9.99."""
CHECK_MAX_REQUESTS = 20_000
"""The most requests a plan check simulates for one replica or instance."""


def _check_requests(base: int, life_s: float, lam: float) -> int:
    """Requests a plan check simulates at ``lam`` requests/s for a request lifetime of ``life_s``:
    at least the plan's ``base`` samples, and enough for CHECK_LIVES lifetimes (CHECK_MAX_REQUESTS
    at most)."""
    need = math.ceil(CHECK_LIVES * max(life_s, 0.0) * lam / 0.8) if math.isfinite(life_s) else base
    return max(base, min(need, CHECK_MAX_REQUESTS))


class _Sim:
    """One replica or instance of a deployment run through kvcalc simulate on the plan's requests."""

    def __init__(
        self,
        model: ModelSpec,
        prompts: Any,
        outputs: Any,
        kv_dtype: KVDtype,
        engine: Engine,
        constants: StepConstants,
        seed: int,
        weight_dtype: str | None,
        traffic: Traffic | None,
        recv_interval: int = 1,
        util: float | None = None,
    ):
        import numpy as np

        self.util = util
        """The engine's memory fraction (None: the release's default), for the replicas' pools and runs."""
        self.recv = recv_interval
        """SGLang's --scheduler-recv-interval, for the aggregated replicas' runs."""
        self.model, self.prompts, self.outputs, self.kv_dtype = model, prompts, outputs, kv_dtype
        self.engine, self.constants, self.seed, self.weight_dtype, self.traffic = engine, constants, seed, weight_dtype, traffic
        self.max_len = int(np.max(prompts + outputs))

    def replica(self, gpu: GPUSpec, tp: int, dp: int, ep: int, pp: int = 1) -> _Replica | None:
        """The closed form's replica of this shape (None without the plan's traffic)."""
        t = self.traffic
        if t is None:
            return None
        base = FitInputs(seq=t.length, weight_dtype=self.weight_dtype, util=self.util)
        return _Replica(
            self.model, gpu, tp, pp, t, self.kv_dtype, self.engine, self.constants, base, dp=dp, ep=ep, recv_interval=self.recv
        )

    def run(
        self,
        gpu: GPUSpec,
        lam: float,
        tp: int,
        dp: int,
        ep: int,
        stage: str = "",
        keep: dict[str, Any] | None = None,
        pp: int = 1,
        requests: int = 0,
    ) -> Any:
        """The paged run of one replica at ``lam`` requests/s, Poisson, of ``requests`` requests (the
        plan's samples repeated; at least the samples once). ``stage`` 'prefill': each
        request ends at its first token; 'decode': each arrives with its prompt's KV in place (a
        prefix-cache hit of the whole prompt: the last token is computed again, as a decode instance
        does for the first token's logits) and without the client's request path, which its prefill
        counted; its arrivals are a second Poisson stream."""
        import numpy as np

        from kvcalc.engine.simulate import SimSettings, Workload, simulate

        n = max(len(self.prompts), requests)
        seed = self.seed + (1 if stage == "decode" else 0)
        arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / lam, size=n))
        hit = self.traffic.prompt_cache_hit if self.traffic else 0.0
        prompts, outputs, c = np.resize(self.prompts, n), np.resize(self.outputs, n), self.constants
        if stage == "prefill":
            outputs = np.ones_like(outputs)
        elif stage == "decode":
            hit = 1.0
            c = dataclasses.replace(c, request_overhead_s=0.0, tokenize_s_per_token=0.0)
        wl = Workload(arrivals, prompts, outputs, "the plan's traffic", f"Poisson, {lam:g} requests/s", 0, hit)
        mnbt = self.engine.schedule(self.model, gpu, self.max_len)[0]
        mns = self.engine.default_num_seqs(gpu.memory_runtime_bytes, gpu.name)
        # A receive interval gates what a scheduler with decodes takes in; a prefill instance decodes nothing, and a
        # decode instance's requests wait for their KV, not for the scheduler (the closed form's pools likewise).
        recv = self.recv if not stage else 1
        st = SimSettings(self.max_len, mns, mnbt, constants=c, seed=self.seed, recv_interval=recv)
        report = simulate(
            self.model,
            gpu,
            wl,
            st,
            [(f"paged-{PREFIX_BLOCK}", PREFIX_BLOCK)],
            self.engine,
            self.kv_dtype,
            tp,
            dp=dp,
            ep=ep,
            weight_dtype=self.weight_dtype,
            keep=keep,
            pp=pp,
            prefilled=stage == "decode",
            util=self.util,
        )
        return report.runs[0]


def _served(run: Any, lanes: int) -> float:
    """What a deployment of ``lanes`` like the simulated one serves, requests/s: the rate the run
    sustains (its own overload verdict's figure), else its steady window's."""
    return float(run.sustained_per_s if run.sustained_per_s is not None else run.requests_per_s) * lanes


def _on_servers(gpu: GPUSpec, gpus: int, max_gpus: int) -> int:
    """``gpus`` rounded up to whole servers or a share of one (``fits_nodes``); the rest idles. Past
    ``max_gpus`` when no count up to it fits."""
    while not fits_nodes(gpu, gpus) and gpus <= max_gpus:
        gpus += 1
    return gpus


def _pools_shape(x: int, pre: Shape, y: int, dec: Shape) -> tuple[str, str, str]:
    """(shape, prefill pool, decode pool) of x prefill instances beside y decode instances, as a
    disaggregated Deployment and its Verification name them."""
    return (
        f"{x} x ({pre.describe()}) prefill + {y} x ({dec.describe()}) decode",
        f"{x} x {pre.describe()}",
        f"{y} x {dec.describe()}",
    )


def _verify_pools(
    sim: _Sim,
    gpu: GPUSpec,
    d: Deployment,
    rate: float,
    slo: SLO,
    key: str,
    percentile: int,
    extra: int,
    max_gpus: int,
) -> list[Verification]:
    """A disaggregated deployment in simulation: one prefill instance at rate / x, each request
    ending at its first token, and one decode instance at rate / y, each request arriving with its
    prompt's KV (``_Sim.run``'s stages). A request's TTFT is its prefill instance's (the request
    path, the queue, the prompt) plus the KV's transfer plus its decode instance's (the wait for a
    seat and the first step), the two stages' measured requests taken in order; its TPOT is the
    decode instance's. Where the targets or the rate are missed, the pool that misses gets an
    instance more (up to ``extra`` more in all), never past ``max_gpus``."""
    import numpy as np

    from kvcalc.engine.simulate.metrics import pct

    x, y = d.prefill_instances, d.replicas
    pre_shape, dec_shape = Shape(d.prefill_tp, 1, d.prefill_dp, d.prefill_ep), Shape(d.tp, d.pp, d.dp, d.ep)
    rep = sim.replica(gpu, d.tp, d.dp, d.ep, d.pp)
    out_tokens = sim.traffic.output if sim.traffic else int(np.mean(sim.outputs))
    got: list[Verification] = []
    for _ in range(extra + 1):
        gpus = _on_servers(gpu, x * pre_shape.gpus + y * dec_shape.gpus, max_gpus)
        if gpus > max_gpus:
            break
        shape, pre_pool, dec_pool = _pools_shape(x, pre_shape, y, dec_shape)

        base = Verification(
            d.gpu,
            d.tp,
            d.pp,
            y,
            gpus,
            0.0,
            0.0,
            percentile,
            rate,
            0.0,
            0,
            False,
            dp=d.dp,
            ep=d.ep,
            shape=shape,
            mode="disaggregated",
            prefill_pool=pre_pool,
            decode_pool=dec_pool,
        )
        first: dict[str, Any] = {}
        then: dict[str, Any] = {}
        try:
            # Both stages run as many requests, their measured ones paired in order: enough for the decode
            # instance's lifetimes and the prefill instance's.
            mean_out = float(np.mean(sim.outputs))
            count = max(
                _check_requests(len(sim.prompts), mean_out * d.tpot_s, rate / y),
                _check_requests(len(sim.prompts), d.ttft_s, rate / x),
            )
            pre = sim.run(gpu, rate / x, pre_shape.tp, pre_shape.dp, pre_shape.ep, "prefill", first, requests=count)
            dec = sim.run(gpu, rate / y, dec_shape.tp, dec_shape.dp, dec_shape.ep, "decode", then, dec_shape.pp, requests=count)
        except KvcalcError as e:
            got.append(dataclasses.replace(base, note=e.what))
            break
        a = (first["first"] - first["sent"])[first["measured"]]
        b = (then["first"] - then["sent"])[then["measured"]]
        m = min(len(a), len(b))
        ttft = getattr(pct(a[:m] + d.kv_transfer_s + b[:m]), key)
        tpot = getattr(dec.tpot_s, key)
        pre_served, dec_served = _served(pre, pre_shape.dp * x), _served(dec, dec_shape.dp * dec_shape.pp * y)
        why = []
        if pre.overloaded:
            why.append(f"prefill serves {pre_served:.2f} of {rate:.2f} requests/s")
        if dec.overloaded:
            why.append(f"decode serves {dec_served:.2f} of {rate:.2f} requests/s")
        ttft_miss = slo.ttft_s is not None and ttft > slo.ttft_s
        tpot_miss = slo.tpot_s is not None and dec.tpot_s.mean > slo.tpot_s
        if ttft_miss:
            why.append(f"TTFT {key} {ttft * 1e3:,.0f} ms")
        if tpot_miss:
            why.append(f"mean TPOT {dec.tpot_s.mean * 1e3:,.1f} ms")
        closed = _decode_tpot(rep, rate / y, out_tokens) if rep is not None else None
        ok = not why
        got.append(
            dataclasses.replace(
                base,
                ttft_s=ttft,
                tpot_s=tpot,
                served_per_s=min(pre_served, dec_served),
                preemptions=dec.preemptions,
                ok=ok,
                note="; ".join(why),
                tpot_mean_s=dec.tpot_s.mean,
                closed_form_tpot_s=closed[0] if closed else None,
            )
        )
        if ok:
            break
        # The pool that misses gets an instance more: prefill where it falls behind or holds most of the
        # TTFT, decode where it falls behind, misses the TPOT, or holds most of the TTFT (its seat wait).
        pre_part = getattr(pct(a), key)
        grow_pre = pre.overloaded or (ttft_miss and pre_part >= getattr(pct(b), key))
        grow_dec = dec.overloaded or tpot_miss or (ttft_miss and not grow_pre)
        x, y = x + grow_pre, y + grow_dec
    return got


# ---- disaggregated prefill and decode ------------------------------------------------------------------


def _kv_link(gpu: GPUSpec, pre: _Replica, gpus_total: int) -> tuple[float, float, str]:
    """(bytes/s, latency s, what) of a prompt's KV from a prefill instance to a decode instance: every
    GPU of the prefill instance sends its share at once, over NVLink when both pools share the
    domain (NVL72, or a small deployment on one HGX board), else over each GPU's NIC (NCCL/NIXL
    send, 0.7 of the NIC: NET_P2P_SHARE)."""
    from kvcalc.engine.steptime import NET_P2P_ALPHA_S, NET_P2P_SHARE, NVLINK_SHARE, P2P_ALPHA_S

    node = node_of(gpu)
    senders = pre.shape.stage_gpus
    if gpu.interconnect_bytes_per_s and gpus_total <= node.nvlink_domain:
        return senders * float(gpu.interconnect_bytes_per_s) / 2 * NVLINK_SHARE, P2P_ALPHA_S, link_name(gpu, "nvlink")
    return senders * float(node.scale_out_bytes_per_s) * NET_P2P_SHARE, NET_P2P_ALPHA_S, "the network"


class _Prefill:
    """A prefill instance's prompts: each DP rank takes whole prompts up to the token budget a step, nothing decoding
    beside them. With one rank and prompts within the budget, a step takes what waits as the step before it ends or,
    the instance idle, the prompt that ends the wait alone (``_backlog_means``, exact for whole prompts, up to
    CHAIN_ARRIVALS a full step); else the mean window (``_prompt_law``), as the aggregated closed form."""

    def __init__(self, rep: _Replica):
        self.rep = rep
        self.P, self.C = rep.P - rep.C, rep.C  # computed and cached tokens of a prompt
        self.budget = rep.budget
        self.loads: dict[float, tuple[float, float] | None] = {}
        """``load``'s answers by rate (the searches ask for the same rates again)."""
        self.spans: dict[int, float] = {}
        """``_load``'s steps of whole prompts by their tokens (the chain asks for the same counts at every rate)."""
        self.exact: dict[float, tuple[float, float]] = {}
        """By rate, where ``_load`` solved the chain of prompts left waiting (prompts of one length): a prompt's mean
        wait to be taken in and the mean step it runs in, seconds (``_backlog_means``)."""

    def load(self, rate: float) -> tuple[float, float] | None:
        """(share of time busy, mean seconds of a step) at ``rate`` prompts/s on one instance."""
        if rate not in self.loads:
            self.loads[rate] = self._load(rate)
        return self.loads[rate]

    def _load(self, rate: float) -> tuple[float, float] | None:
        lane = rate / self.rep.dp
        room, P = self.budget, self.P
        t = self.rep.sm.step(0, 0.0, min(P, room), _chunk_end(self.C, P, min(P, room))).t_step_s
        u = 0.0
        steps_of: dict[int, float] = {}

        def step_s(x: float) -> float:
            n = max(math.ceil(x), 1)
            if n not in steps_of:
                steps_of[n] = self.rep.sm.step(0, 0.0, n, _chunk_end(self.C, P, n)).t_step_s
            return steps_of[n]

        def whole_s(x: int) -> float:
            """A step of x prompt tokens in whole prompts, each over its own context (StepModel.step's span), as the
            simulator prices one (``step_s`` prices them as one chunk, as the mean window's law takes them)."""
            if x not in self.spans:
                self.spans[x] = self.rep.sm.step(0, 0.0, x, _chunk_end(self.C, P, x), False, int(P) if x > P else 0).t_step_s
            return self.spans[x]

        if self.rep.dp == 1 and P <= room and lane * whole_s(room) <= CHAIN_ARRIVALS:
            got = _backlog_means(lane, lambda j: whole_s(int(j * P)), max(int(room // P), 1), whole_s(room), room / P)
            if got is None or lane * got[0] / got[1] >= 1:
                return None
            self.exact[rate] = (got[2], got[3])
            return lane * got[0] / got[1], got[0]
        for _ in range(60):
            q, t_new = _law_means(_prompt_law(lane * t, self.rep.dp, P, room), step_s)
            u = lane * P / q * t_new
            if abs(t_new - t) <= 1e-9 * t:
                t = t_new
                break
            t = 0.5 * (t + t_new)
        return None if u >= 1 else (u, t)

    def wait(self, rate: float) -> tuple[float, float]:
        """(mean wait for the prefill capacity s, the chance a prompt waits: u) at ``rate`` prompts/s."""
        got = self.load(rate)
        if got is None:
            return math.inf, 1.0
        return _prefill_wait(got[0], rate / self.rep.dp, self.rep.cv2), got[0]

    def ttft_s(self, rate: float, prompt: int) -> float | None:
        got = self.load(rate)
        if got is None:
            return None
        u, _ = got
        lane = rate / self.rep.dp
        c = self.rep.c
        if not self.rep.cv2 and rate in self.exact:  # one length: the chain's own wait and the step a prompt runs in
            wait, served = self.exact[rate]
            return float(c.request_path_s(prompt)) + wait + served
        cached = cached_prompt_tokens(self.rep.hit, prompt, PREFIX_BLOCK)
        work = self.rep.sm.prefill_s(prompt - cached, self.budget, start=cached)
        return float(c.request_path_s(prompt)) + _prefill_wait(u, lane, self.rep.cv2) + work


def _pools_ttft(
    pf: _Prefill, rate: float, prompt: int, transfer: float, step: float, seat: float, full: float, percentile: int
) -> tuple[float, float] | None:
    """(mean TTFT, TTFT at ``percentile``) of a disaggregated deployment whose prefill instance takes
    ``rate`` prompts/s: its prefill (the request path, the wait for prefill capacity, the prompt's
    steps), the KV's ``transfer``, 1.5 decode steps (``step`` each) and a decode instance's wait for a seat
    (``seat``, met with chance ``full``); None where the prefill instance cannot carry the rate."""
    base = pf.ttft_s(rate, prompt)
    if base is None:
        return None
    mean = base + transfer + 1.5 * step + seat
    return mean, _ttft_at(mean, [pf.wait(rate), (seat, full)], percentile)


def _decode_tpot(rep: _Replica, rate: float, out: int, open_loop: bool = True) -> tuple[float, float, float, float] | None:
    """(TPOT s, requests decoding, the wait for a seat s, the share of the time its pool is full) on one
    decode instance at ``rate``
    requests/s: decode-only steps at the batch a request's own tokens see (``_Replica.seen``), Little's
    law n = rate x (output - 1) x TPOT(n), solved by iteration; with open (Poisson) traffic, over the
    pool's states (``_pool``: the TPOT, and the wait when the pool is full), None when even a full pool
    cannot carry the rate."""
    n = 0.0
    t = rep.sm.overhead_s(0, 0)
    limit = 4 * max(rep.capacity, rep.seq_limit) + 1
    for k in range(300):
        res = rep.step(n, 0.0, rep.seen(n, None))
        if res is None:
            return None
        t = res[0]
        new = rate * (out - 1) * t
        if new > limit:
            return None
        if abs(new - n) <= 1e-7 * max(n, 1) and k > 1:
            n = new
            break
        n = new if k < 20 else 0.5 * (n + new)
    if not open_loop or rate <= 0 or out <= 1:
        return t, n, 0.0, 0.0
    pool = _pool(rep, rate, out, 0.0, n, decode_only=True)
    if pool is None:
        return None
    return pool[0], n, pool[2], pool[3]


def _pools_deployment(
    gpu: GPUSpec,
    engine: Engine,
    pr: _Replica,
    dr: _Replica,
    x: int,
    y: int,
    gpus: int,
    tpot: float,
    n: float,
    ttft: float,
    transfer: float,
    use: dict[str, float],
    price: float | None,
    binding: str,
    why: str,
    seat: tuple[float, float] = (0.0, 0.0),
    ttft_at: float | None = None,
    prefill: tuple[float, float] | None = None,
) -> Deployment:
    """A disaggregated deployment: x prefill instances of ``pr``'s shape beside y decode instances
    of ``dr``'s, on ``gpus`` GPUs; ``seat``: a decode instance's wait for a seat and the share of the
    time its pool is full; ``ttft_at``: the TTFT at the targets' percentile (default: the mean);
    ``prefill``: a prefill instance's (busy share, mean step s) at its rate (``_Prefill.load``)."""
    _, _, what = _kv_link(gpu, pr, gpus)
    shape, pre_pool, dec_pool = _pools_shape(x, pr.shape, y, dr.shape)
    return Deployment(
        gpu=gpu.name,
        tp=dr.tp,
        pp=dr.pp,
        replicas=y,
        gpus=gpus,
        cost_per_hour=price * gpus if price is not None else None,
        in_flight_per_replica=n,
        capacity_per_replica=dr.capacity,
        tpot_s=tpot,
        ttft_s=ttft,
        step_bound_by=dr.sm.step(max(math.ceil(n / dr.lanes), 1), dr.ctx).bound_by,
        memory_share=n / dr.capacity,
        binding=binding,
        use={k: round(v, 6) for k, v in use.items()},
        feasible=True,
        dp=dr.dp,
        ep=dr.ep,
        shape=shape,
        engine_flags=f"prefill: {engine_flags(pr.shape, engine)}; decode: {engine_flags(dr.shape, engine)}",
        placement=f"prefill {x} x {pr.shape.gpus} GPUs, decode {y} x {dr.shape.gpus} GPUs; KV over {what}",
        mode="disaggregated",
        prefill_pool=pre_pool,
        decode_pool=dec_pool,
        kv_transfer_s=transfer,
        why=why.format(what=what),
        seat_wait_s=seat[0],
        pool_full_share=seat[1],
        prefill_instances=x,
        prefill_tp=pr.tp,
        prefill_dp=pr.dp,
        prefill_ep=pr.ep,
        ttft_at_percentile_s=ttft if ttft_at is None else ttft_at,
        prefill_busy_share=prefill[0] if prefill else 0.0,
        prefill_step_s=prefill[1] if prefill else 0.0,
    )


def _pool_shapes(reps: list[_Replica], prompt: int) -> tuple[list[_Replica], list[_Replica]]:
    """The four shapes that prefill a prompt fastest for their GPUs (PP 1), and the four that decode
    most for theirs: the disaggregated search is a product of the two."""
    pre = sorted((r for r in reps if r.pp == 1), key=lambda r: r.sm.prefill_s(prompt, r.budget) * r.shape.gpus / r.dp)
    dec = sorted(reps, key=lambda r: r.sm.step(min(r.capacity, r.seq_limit), r.ctx).t_step_s * r.shape.gpus)
    return pre[:4], dec[:4]


def _disaggregated(
    model: ModelSpec,
    gpu: GPUSpec,
    reps: list[_Replica],
    traffic: Traffic,
    slo: SLO,
    kv_dtype: KVDtype,
    engine: Engine,
    constants: StepConstants,
    base: FitInputs | None,
    max_gpus: int,
    price: float | None,
    keep: int = 3,
) -> list[Deployment]:
    """x prefill instances of one shape beside y decode instances of another (PP 1 for prefill), the
    fewest of each that meet the targets: prefill capacity and TTFT on the prefill side, with the
    prompt's KV shipped to the decode side (kvcalc tiers' bytes: every layer, each KV head once, in the form the
    release caches it) and one decode step before the first token; TPOT, memory and max_num_seqs on the decode side. A
    closed loop of users sets the rate by iteration: rate = users / (TTFT + (output - 1) x TPOT)."""
    from kvcalc.engine.tiers import shipped_bytes

    if not reps or engine.name not in ("vllm", "sglang", "trtllm"):
        return []
    out_tokens = max(traffic.output, 1)
    prompt = traffic.prompt_tail or traffic.prompt
    # The shapes that prefill and decode best for their GPUs (at most four of each: the search is a product).
    pre_reps, dec_reps = _pool_shapes(reps, traffic.prompt)
    shipped = shipped_bytes(model, kv_dtype, prompt, engine, base.weight_dtype if base else None)
    found: list[Deployment] = []
    for pr in pre_reps:
        pf = _Prefill(pr)
        for dr in dec_reps:
            rate = traffic.rate if traffic.rate is not None else float(traffic.users or 1) / max(out_tokens * 0.02, 1e-3)
            best: tuple[int, int, float, float, float, float, float, float, float, tuple[float, float] | None] | None = None
            for _ in range(12 if traffic.users else 1):
                # Fewest decode instances meeting TPOT and memory at this rate.
                y, dec = 0, None
                for yy in range(1, max_gpus // dr.shape.gpus + 1):
                    got = _decode_tpot(dr, rate / yy, out_tokens, not traffic.users)
                    if got is None:
                        continue
                    tp_s, n, _, _ = got
                    if n <= dr.capacity and n <= dr.seq_limit and (slo.tpot_s is None or tp_s <= slo.tpot_s):
                        y, dec = yy, got
                        break
                if not y or dec is None:
                    best = None
                    break
                left = max_gpus - y * dr.shape.gpus
                x, ttft = 0, math.inf
                link_bw, link_alpha, _ = _kv_link(gpu, pr, y * dr.shape.gpus + pr.shape.gpus)
                transfer = shipped / link_bw + link_alpha
                for xx in range(1, left // pr.shape.gpus + 1):
                    link_bw, link_alpha, _ = _kv_link(gpu, pr, y * dr.shape.gpus + xx * pr.shape.gpus)
                    transfer = shipped / link_bw + link_alpha
                    got_t = _pools_ttft(pf, rate / xx, prompt, transfer, dec[0], dec[2], dec[3], slo.percentile)
                    if got_t is None:
                        continue
                    if slo.ttft_s is None or got_t[1] <= slo.ttft_s:
                        x, (ttft, ttft_at) = xx, got_t
                        break
                if not x:
                    best = None
                    break
                best = (x, y, ttft, dec[0], dec[1], transfer, dec[2], dec[3], ttft_at, pf.load(rate / x))
                if traffic.users:
                    new = float(traffic.users) / (ttft + (out_tokens - 1) * dec[0])
                    if abs(new - rate) <= 1e-4 * rate:
                        rate = new
                        break
                    rate = 0.5 * (rate + new)
            if best is None:
                continue
            x, y, ttft, tpot, n, transfer, seat, full, ttft_at, busy = best
            gpus = _on_servers(gpu, x * pr.shape.gpus + y * dr.shape.gpus, max_gpus)
            if gpus > max_gpus:
                continue
            use = {"memory": n / dr.capacity, "TTFT": ttft_at / slo.ttft_s if slo.ttft_s else 0.0}
            if slo.tpot_s:
                use["TPOT"] = tpot / slo.tpot_s
            why = (
                f"prefill on its own GPUs: decode steps carry no prompt chunks, and the prompt's {shipped:,} B of KV "
                f"cross {{what}} in {transfer * 1e3:,.1f} ms"
            )
            binding = max(use, key=lambda k: use[k])
            found.append(
                _pools_deployment(
                    gpu,
                    engine,
                    pr,
                    dr,
                    x,
                    y,
                    gpus,
                    tpot,
                    n,
                    ttft,
                    transfer,
                    use,
                    price,
                    binding,
                    why,
                    seat=(seat, full),
                    ttft_at=ttft_at,
                    prefill=busy,
                )
            )
    found.sort(key=lambda d: (d.gpus, d.tpot_s))
    return found[:keep]


# ---- the reverse of plan: the most a fixed set of GPUs carries within the targets ----------------------


@record(frozen=True)
class Carried:
    """The most one mode (aggregated or disaggregated) carries on the GPUs: its best deployment at the
    highest rate that meets the targets."""

    mode: str
    deployment: Deployment | None
    rate_per_s: float
    """Requests per second."""
    output_tokens_per_s_per_gpu: float
    """rate x output tokens / the GPUs the deployment uses (AIConfigurator's tokens/s/gpu)."""


@record(frozen=True)
class ThroughputReport:
    model: str
    gpu: str
    gpus: int
    traffic: str
    slo: SLO
    kv_dtype: str
    engine: str
    aggregated: Carried
    disaggregated: Carried
    winner: str
    """'aggregated', 'disaggregated' or '' (neither meets the targets)."""
    why: str
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)
    track_record: TrackRecord | None = None
    """How far kvcalc with the default constants has been from public measured runs of the winning
    deployment's kind (kvcalc.engine.track); None under a calibration, or when nothing meets the targets."""


def _bisect_rate(ok: Any, hi: float) -> float:
    """The largest rate in (0, hi] for which ok(rate) holds (true below some rate, false above), to
    0.5%; 0 when not even a millionth of hi is carried."""
    r = hi
    while r > hi * 1e-6 and not ok(r):
        r /= 2
    if not ok(r):
        return 0.0
    if r == hi:
        return hi
    lo, up = r, r * 2
    while up - lo > 0.005 * lo:
        mid = (lo + up) / 2
        lo, up = (mid, up) if ok(mid) else (lo, mid)
    return lo


def max_throughput(
    model: ModelSpec,
    gpu: GPUSpec,
    gpus: int,
    prompt: int,
    output: int,
    slo: SLO,
    kv_dtype: KVDtype,
    engine: Engine,
    constants: StepConstants = DEFAULTS,
    dp_sizes: tuple[int, ...] | None = None,
    prompt_cache_hit: float = 0.0,
    weight_dtype: str | None = None,
    recv_interval: int = 1,
    util: float | None = None,
) -> ThroughputReport:
    """The highest arrival rate ``gpus`` GPUs carry within the targets, aggregated (every shape, as many
    replicas as fit) and disaggregated (x prefill + y decode instances of the best shapes), each by
    bisection on plan's closed form; and which carries more, and why. ``recv_interval`` as ``plan``'s; ``util``
    the engine's memory fraction (None: the release's default)."""
    constants = for_engine(constants, engine)
    engine.check_recv_interval(recv_interval, max(dp_sizes or (1,)))
    probe = Traffic(prompt=prompt, output=output, rate=1.0, prompt_cache_hit=prompt_cache_hit)
    reps: list[_Replica] = []
    for shape in candidate_shapes(model, gpu, engine, gpus, dp_sizes=dp_sizes):
        try:
            base = FitInputs(seq=probe.length, weight_dtype=weight_dtype, util=util)
            rep = _shape_replica(model, gpu, shape, probe, kv_dtype, engine, constants, base, recv_interval)
        except KvcalcError:
            continue
        if rep is not None and rep.capacity >= 1:
            reps.append(rep)
    out_t = max(output, 1)
    # Aggregated: each shape with as many replicas as the GPUs take.
    best_agg: tuple[float, Deployment] | None = None
    for rep in reps:
        r = gpus // rep.shape.gpus
        if r < 1:
            continue
        hi = r * max(rep.capacity, 1) / max(out_t * 1e-3, 1e-3)  # far above what any replica decodes

        def ok(rate: float, rep: _Replica = rep, r: int = r) -> bool:
            return _check(rep, dataclasses.replace(probe, rate=rate), slo, r)[0]

        rate = _bisect_rate(ok, hi)
        if rate > 0 and (best_agg is None or rate * out_t / (rep.shape.gpus * r) > best_agg[0]):
            d = _deployment(rep, dataclasses.replace(probe, rate=rate), slo, r, None)
            best_agg = (rate * out_t / d.gpus, d)
    # Disaggregated: the best pair of shapes, split over the GPUs.
    best_dis: tuple[float, Deployment] | None = None
    pre_reps, dec_reps = _pool_shapes(reps, prompt)
    from kvcalc.engine.tiers import shipped_bytes

    shipped = shipped_bytes(model, kv_dtype, prompt, engine, weight_dtype)
    for pr in pre_reps:
        pf = _Prefill(pr)
        for dr in dec_reps:
            for x in range(1, (gpus - dr.shape.gpus) // pr.shape.gpus + 1):
                y = (gpus - x * pr.shape.gpus) // dr.shape.gpus
                if y < 1:
                    continue
                bw, alpha, _ = _kv_link(gpu, pr, x * pr.shape.gpus + y * dr.shape.gpus)
                transfer = shipped / bw + alpha

                def dec_ok(rate: float, dr: _Replica = dr, y: int = y) -> bool:
                    got = _decode_tpot(dr, rate / y, out_t)
                    if got is None:
                        return False
                    t, n, _, _ = got
                    return n <= dr.capacity and n <= dr.seq_limit and (slo.tpot_s is None or t <= slo.tpot_s)

                hi = y * max(dr.capacity, 1) / max(out_t * 1e-3, 1e-3)
                r_dec = _bisect_rate(dec_ok, hi)
                if r_dec <= 0:
                    continue
                tpot = _decode_tpot(dr, r_dec / y, out_t)
                assert tpot is not None

                def pre_ok(rate: float, pf: _Prefill = pf, x: int = x, transfer: float = transfer, step: float = tpot[0]) -> bool:
                    t = _pools_ttft(pf, rate / x, prompt, transfer, step, 0.0, 0.0, slo.percentile)
                    return t is not None and (slo.ttft_s is None or t[1] <= slo.ttft_s)

                r_pre = _bisect_rate(pre_ok, x * pr.dp * 1e3)
                rate = min(r_dec, r_pre)

                def all_ok(
                    rate: float, dr: _Replica = dr, pf: _Prefill = pf, x: int = x, y: int = y, transfer: float = transfer
                ) -> bool:
                    # The decode instances' wait for a seat lengthens the TTFT too, most near their pool's limit.
                    got = _decode_tpot(dr, rate / y, out_t)
                    if got is None:
                        return False
                    t = _pools_ttft(pf, rate / x, prompt, transfer, got[0], got[2], got[3], slo.percentile)
                    return t is not None and (slo.ttft_s is None or t[1] <= slo.ttft_s)

                if rate > 0 and not all_ok(rate):
                    rate = _bisect_rate(all_ok, rate)
                if rate <= 0:
                    continue
                used = x * pr.shape.gpus + y * dr.shape.gpus
                if best_dis is not None and rate * out_t / used <= best_dis[0]:
                    continue
                got = _decode_tpot(dr, rate / y, out_t)
                assert got is not None
                both_t = _pools_ttft(pf, rate / x, prompt, transfer, got[0], got[2], got[3], slo.percentile)
                assert both_t is not None
                ttft, ttft_at = both_t
                use = {"TPOT": got[0] / slo.tpot_s if slo.tpot_s else 0.0, "TTFT": ttft_at / slo.ttft_s if slo.ttft_s else 0.0}
                use["memory"] = got[1] / dr.capacity
                binding = "prefill" if r_pre < r_dec else "decode"
                dep = _pools_deployment(
                    gpu,
                    engine,
                    pr,
                    dr,
                    x,
                    y,
                    used,
                    got[0],
                    got[1],
                    ttft,
                    transfer,
                    use,
                    None,
                    binding,
                    f"the {binding} pool sets the rate",
                    seat=(got[2], got[3]),
                    ttft_at=ttft_at,
                    prefill=pf.load(rate / x),
                )
                best_dis = (rate * out_t / used, dep)

    def carried(mode: str, best: tuple[float, Deployment] | None) -> Carried:
        if best is None:
            return Carried(mode, None, 0.0, 0.0)
        per_gpu, dep = best
        return Carried(mode, dep, per_gpu * dep.gpus / out_t, per_gpu)

    agg, dis = carried("aggregated", best_agg), carried("disaggregated", best_dis)
    a, b = agg.output_tokens_per_s_per_gpu, dis.output_tokens_per_s_per_gpu
    winner = "" if not (a or b) else "disaggregated" if b > a else "aggregated"
    ratio = max(a, b) / min(a, b) if min(a, b) > 0 else math.inf
    if not winner:
        why = "no deployment on these GPUs meets the targets"
    elif not (a and b):
        why = f"only {winner} meets the targets on {gpus} GPUs"
    elif winner == "disaggregated" and agg.deployment:
        why = (
            f"disaggregated carries {ratio:.2f}x the output tokens per GPU: the aggregated best ({agg.deployment.shape}) "
            f"is held by {agg.deployment.binding}, its decode steps also carrying prompt chunks, while the separate pools "
            "each run at their own best batch"
        )
    else:
        assert dis.deployment is not None
        why = (
            f"aggregated carries {ratio:.2f}x the output tokens per GPU: the {dis.deployment.why.replace('the ', '', 1)} "
            "while the other pool idles part of the time; an aggregated replica fills prefill gaps with decodes"
        )
    won = (dis if winner == "disaggregated" else agg).deployment if winner else None
    return ThroughputReport(
        track_record=_track(model, won, constants, engine, ("output_throughput", "mean_tpot"), f"the {winner} best")
        if won
        else None,
        model=model.name,
        gpu=gpu.name,
        gpus=gpus,
        traffic=f"{probe.lengths()}, Poisson arrivals",
        slo=slo,
        kv_dtype=kv_dtype.name,
        engine=engine.key,
        aggregated=agg,
        disaggregated=dis,
        winner=winner,
        why=why,
        assumptions=[
            "each mode's highest rate that meets the targets, by bisection on kvcalc plan's closed form (the step-time "
            f"model, constants: {constants.origin}); output tokens per second per GPU = rate x output / the GPUs used",
            "aggregated: every shape kvcalc plan searches, with as many replicas as the GPUs take; disaggregated: x prefill "
            "+ y decode instances of the four best prefill and decode shapes, every split of the GPUs",
            *([_weights_words(weight_dtype)] if weight_dtype else []),
        ],
        inputs={"model": model.name, "gpu": gpu.name, "gpus": gpus, "prompt": prompt, "output": output},
    )
