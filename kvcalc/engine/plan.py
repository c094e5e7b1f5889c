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
- latency targets: TPOT as above; TTFT the request path, half a step, the M/D/1 wait for prefill
  capacity and the prompt's own steps (``verify`` checks both by simulation);
- max_num_seqs: requests in flight per micro-batch within the engine's default.

The load is either concurrent users (a closed loop: each always has one request in flight) or an
arrival rate; for a rate, the requests in flight per replica follow Little's law, n = lambda x
(TTFT + (output - 1) x TPOT(n)), solved by fixed-point iteration (TPOT grows with n).

Deployments are ranked by GPU count, or by cost where every GPU has a price; each names its binding
constraint. When none meets the targets, the nearest one says by how much it falls short.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kvcalc.engine.engines import Engine
from kvcalc.engine.memory import FitInputs, ReverseReport, fit
from kvcalc.engine.steptime import DEFAULTS, StepConstants, StepModel
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

TP_SIZES = (1, 2, 4, 8)
PP_SIZES = tuple(range(1, 17))


@dataclass(frozen=True)
class Traffic:
    prompt: int
    """Prompt tokens (the mean of a mix)."""
    output: int
    users: int | None = None
    rate: float | None = None
    prompt_tail: int | None = None
    """The prompt TTFT is judged on (a percentile of the mix); default: prompt."""

    @property
    def length(self) -> int:
        return self.prompt + self.output

    def describe(self) -> str:
        load = f"{self.users:,} concurrent users" if self.users else f"{self.rate:g} requests/s"
        return f"{load}, {self.prompt:,} prompt + {self.output:,} output tokens"


@dataclass(frozen=True)
class SLO:
    ttft_s: float | None = None
    tpot_s: float | None = None


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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
        kv: KVDtype,
        engine: Engine,
        constants: StepConstants = DEFAULTS,
        base: FitInputs | None = None,
    ):
        self.gpu, self.tp, self.pp = gpu, tp, pp
        inp = (base or FitInputs(seq=traffic.length)).replace(
            seq=traffic.length, engine=engine, tp=tp, pp=pp, kv_dtype=kv, max_model_len=None
        )
        f = fit(model, gpu, inp)
        self.capacity = f.max_concurrency
        self.sm = StepModel(model, gpu, kv, tp, pp, constants)
        self.c = constants
        self.ctx = traffic.prompt + max(traffic.output // 2, 1)
        self.P, self.O = traffic.prompt, max(traffic.output, 1)
        self.P_tail = traffic.prompt_tail or traffic.prompt
        self.budget = engine.default_batched_tokens(gpu.memory_runtime_bytes, gpu.name, traffic.length)
        self.max_seqs = engine.default_num_seqs(gpu.memory_runtime_bytes, gpu.name)

    def with_constants(self, c: StepConstants) -> _Replica:
        import copy

        new = copy.copy(self)
        new.sm, new.c = self.sm.with_constants(c), c
        return new

    def step(self, decodes: float, rate: float) -> tuple[float, str, float] | None:
        """(mean step seconds, what bounds a step, the share of time in steps that carry prompt work)
        in steady state, with ``decodes`` requests decoding (in PP micro-batches) and ``rate``
        prompts arriving per second; None when the prompts alone outrun the replica.

        Prompts come whole, as the simulator and vLLM take them: a step carries every prompt waiting,
        up to the token budget left beside the decodes (chunked beyond it). With mu = rate x step
        prompts arriving per step (Poisson), a step with prompt work carries q = min(room, P x mu /
        (1 - e^-mu)) tokens (P / ceil(P / room) when a prompt needs several chunks). Prefill steps
        then number rate x P / q a second and take the share u = rate x P / q x T(q) of the time;
        decode-only steps fill the rest, (1 - u) / T(0) a second, and the mean step is one over the
        two counts together."""
        b = max(math.ceil(decodes / self.pp - 1e-9), 0)
        room = self.budget - b
        sm, mid = self.sm, max(self.P // 2, 1)
        t0 = sm.step(b, self.ctx).t_step_s if b else sm.overhead_s(0, 0)
        if rate <= 0:
            return t0, sm.step(max(b, 1), self.ctx).bound_by, 0.0
        if room <= 0:
            return None
        per_pp = rate / self.pp  # each micro-batch's steps see its share of the prompts
        t = t0
        for _ in range(100):
            mu = per_pp * t
            if self.P > room:
                q = self.P / math.ceil(self.P / room)
            else:
                lump = mu / -math.expm1(-mu) if mu > 1e-9 else 1.0
                q = min(float(room), self.P * lump)
            tq = sm.step(b, self.ctx, max(math.ceil(q), 1), mid).t_step_s
            n_p = per_pp * self.P / q
            u = n_p * tq
            if u >= 1:
                return None
            new = 1.0 / (n_p + (1 - u) / t0)
            if abs(new - t) <= 1e-10 * t:
                t = new
                break
            t = 0.5 * (t + new)
        bound = (
            sm.step(max(b, 1), self.ctx, max(math.ceil(q), 1), mid).bound_by if u > 0.5 else sm.step(max(b, 1), self.ctx).bound_by
        )
        return t, bound, u

    def ttft(self, decodes: float, t_step: float) -> float:
        """Mean TTFT without queueing: the request path, half a step waiting for the one in progress,
        then the steps that carry the prompt in chunks of the token budget left beside the decodes."""
        b = max(math.ceil(decodes / self.pp - 1e-9), 0)
        room = max(self.budget - b, 1)
        return float(self.c.request_path_s(self.P_tail)) + t_step / 2 + self.sm.prefill_s(self.P_tail, room, b, self.ctx)


def _check(rep: _Replica, traffic: Traffic, slo: SLO, replicas: int) -> tuple[bool, float, str, dict[str, float]]:
    """Whether ``replicas`` of this configuration carry the traffic: (ok, requests in flight per
    replica, the reason it fails or '', each constraint's use of its limit)."""
    st = _steady(rep, traffic, replicas)
    if st is None:
        return False, math.inf, "prefill", {"prefill": math.inf, "memory": math.inf}
    n, x, t, ttft, bound, u = st
    use = {
        "memory": n / rep.capacity if rep.capacity else math.inf,
        "prefill": u,
        "max_num_seqs": n / (rep.max_seqs * rep.pp),
    }
    if slo.tpot_s:
        use["TPOT"] = t / slo.tpot_s
    if slo.ttft_s:
        use["TTFT"] = ttft / slo.ttft_s
    over = [k for k, v in use.items() if v > 1]
    return not over, n, over[0] if over else "", use


def _prefill_wait(u: float, x: float) -> float:
    """Mean wait for the prefill capacity, as in an M/D/1 queue: prompts arrive at x a second and
    each holds the replica's prompt work for u / x seconds, so the wait is u / (1 - u) x (u / x) / 2."""
    if x <= 0 or u <= 0:
        return 0.0
    return u / (1 - u) * (u / x) / 2


def _steady(rep: _Replica, traffic: Traffic, replicas: int) -> tuple[float, float, float, float, str, float] | None:
    """(requests in flight, requests/s, mean step s, TTFT s, step bound, prefill share) per replica in
    steady state, or None when none exists (the prompts or the decodes outrun the replica).

    Rate: throughput x is the rate per replica. Users (a closed loop of N per replica): x = N / (TTFT +
    (output - 1) x step), at most what keeps prefill under 99% of the time. Either way the decoding
    count is x (output - 1) step (Little's law)."""
    out = max(traffic.output, 1)
    users = math.ceil(traffic.users / replicas) if traffic.users else None
    x = traffic.rate / replicas if traffic.rate is not None else 0.0
    nd = float(users) if users else 0.0
    limit = 4 * max(rep.capacity, rep.max_seqs * rep.pp) + 1
    res: tuple[float, str, float] | None = None
    for k in range(400):
        res = rep.step(nd, x)
        if users:
            while res is None or res[2] > 0.99:
                x *= 0.9  # a closed loop cannot outrun its prompts: they queue
                res = rep.step(nd, x)
        if res is None:
            return None
        t = res[0]
        if users:
            x_new = users / (rep.ttft(nd, t) + (out - 1) * t)
            x = x_new if k < 20 else 0.5 * (x + x_new)
        new = min(x * (out - 1) * t, float(users)) if users else x * (out - 1) * t
        if new > limit:
            return None
        if abs(new - nd) <= 1e-7 * max(nd, 1) and k > 1:
            nd = new
            break
        nd = new if k < 20 else 0.5 * (nd + new)
    assert res is not None
    t, bound, u = res
    ttft = rep.ttft(nd, t) + _prefill_wait(u, x)
    n = float(users) if users else x * (ttft + (out - 1) * t)
    return n, x, t, ttft, bound, u


def _deployment(rep: _Replica, traffic: Traffic, slo: SLO, replicas: int, price: float | None, why: str = "") -> Deployment:
    ok, n, fail, use = _check(rep, traffic, slo, replicas)
    st = _steady(rep, traffic, replicas)
    gpus = rep.tp * rep.pp * replicas
    binding = why or max(use, key=lambda k: use[k])
    short = ""
    if not ok:
        short = ", ".join(f"{k} at {v:.0%} of its limit" for k, v in use.items() if v > 1) or "carries no steady state"
    tpot, ttft, bound = (st[2], st[3], st[4]) if st else (math.inf, math.inf, "compute")
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
    )


def plan(
    model: ModelSpec,
    gpus: list[GPUSpec],
    traffic: Traffic,
    slo: SLO,
    kv: KVDtype,
    engine: Engine,
    max_gpus: int = 64,
    prices: dict[str, float] | None = None,
    constants: StepConstants = DEFAULTS,
    latency: bool = True,
    tp_sizes: tuple[int, ...] = TP_SIZES,
    pp_sizes: tuple[int, ...] = PP_SIZES,
    base: FitInputs | None = None,
) -> PlanReport:
    """Every (GPU, TP, PP) up to ``max_gpus`` GPUs, each with the fewest replicas that carry the traffic."""
    if (traffic.users is None) == (traffic.rate is None):
        raise KvcalcError("give the load as users or as a rate", "--users/--rate", "--users N or --rate R (requests/s)")
    if traffic.prompt < 1 or traffic.output < 0:
        raise KvcalcError("a request needs at least one prompt token", "--prompt", "a positive number of tokens")
    prices = prices or {}
    feasible: list[Deployment] = []
    near: list[tuple[float, Deployment]] = []
    skipped: dict[str, str] = {}
    considered = 0
    for gpu in gpus:
        any_fit = False
        reason = ""
        for tp in tp_sizes:
            for pp in pp_sizes:
                if tp * pp > max_gpus or pp > model.num_layers:
                    continue
                try:
                    rep = _Replica(model, gpu, tp, pp, traffic, kv, engine, constants, base)
                except KvcalcError as e:
                    reason = reason or e.what
                    continue
                if rep.capacity < 1:
                    reason = reason or f"no request of {traffic.length:,} tokens fits beside the weights"
                    continue
                any_fit = True
                considered += 1
                price = prices.get(gpu.name)
                s = slo if latency else SLO()
                best_miss: tuple[float, Deployment] | None = None
                found = False
                prev: tuple[bool, float, str, dict[str, float]] | None = None
                for r in range(1, max_gpus // (tp * pp) + 1):
                    got = _check(rep, traffic, s, r)
                    ok, _, fail, use = got
                    if ok:
                        feasible.append(_deployment(rep, traffic, s, r, price, prev[2] if prev else ""))
                        found = True
                        break
                    worst = max(use.values()) if use else math.inf
                    if best_miss is None or worst < best_miss[0]:
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

    def key(d: Deployment) -> tuple[float, float, float, float]:
        return (d.gpus, d.cost_per_hour if d.cost_per_hour is not None else 0.0, d.tp * d.pp, d.tpot_s)

    feasible.sort(key=key)
    per_type: dict[str, Deployment] = {}
    for d in feasible:
        per_type.setdefault(d.gpu, d)
    ranked_by = "gpus"
    if prices and feasible and all(d.cost_per_hour is not None for d in feasible):
        feasible.sort(key=lambda d: (d.cost_per_hour or 0.0, d.gpus, d.tpot_s))
        ranked_by = "cost"
    nearest = min(near, key=lambda x: x[0])[1] if near and not feasible else None
    assumptions = [
        f"memory: kvcalc fit with {engine.title}'s budget at {traffic.length:,} tokens per request (prompt + output), "
        "per replica; TP splits KV heads (an MLA latent is kept whole on every TP rank), PP splits layers",
        f"decode step (kvcalc.engine.steptime, constants: {constants.origin}): max(bytes / (bandwidth x "
        f"{constants.eta_bw:g}), FLOPs / (peak x {constants.eta_c:g})) + {constants.fixed_s * 1e3:g} ms a step + "
        f"{constants.per_request_s * 1e6:g} us a running request + each layer's kernel latencies "
        f"({constants.gemm_latency_s * 1e6:g} us a matmul, {constants.attn_latency_s * 1e6:g} us an attention call) + the "
        "TP all-reduces and PP hand-offs over the GPU's link, at the requests decoding (context "
        f"{traffic.prompt + max(traffic.output // 2, 1):,} tokens, mid-output) and the prompt tokens each step "
        "carries (chunked prefill); with PP, PP micro-batches are in flight and a token crosses every stage",
        f"TTFT (mean): the request path ({constants.request_overhead_s * 1e3:g} ms + "
        f"{constants.tokenize_s_per_token * 1e6:g} us per prompt token), half a step, the wait for prefill capacity "
        "(M/D/1: u / (1 - u) x the prompt's service time / 2), then the steps that carry the prompt in chunks of the "
        "token budget left beside the decodes",
        f"searched: TP {', '.join(map(str, tp_sizes))} x PP 1 to {max(pp_sizes)} x replicas, up to {max_gpus} GPUs",
    ]
    if traffic.rate is not None:
        assumptions.append("requests in flight per replica by Little's law: rate / replicas x (TTFT + (output - 1) x TPOT)")
    warnings = []
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
    return PlanReport(
        model=model.name,
        traffic=traffic.describe(),
        slo=slo,
        kv_dtype=kv.name,
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
        raise KvcalcError("--concurrency must be >= 1", "--concurrency", "a positive number of requests")
    eng = inp.engine
    here = fit(model, gpu, inp)
    need = concurrency * here.request_bytes
    # Memory the budget must reach at this tp: fixed costs plus the requests.
    fixed = sum(line.bytes for line in here.budget if line.is_reserve)
    util_needed = None
    if eng.budget == "util_of_total":
        util_needed = (fixed + need) / here.gpu_memory_bytes
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
        {"tp": d.tp, "pp": d.pp, "replicas": d.replicas, "gpus": d.gpus, "max_concurrency": d.capacity_per_replica * d.replicas}
        for d in p.ranked[:6]
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
        tried=tried,
    )


# ---- checking the closed form by simulation --------------------------------------------------------


@dataclass(frozen=True)
class Verification:
    """A deployment run through kvcalc simulate: one replica at rate / replicas, Poisson."""

    gpu: str
    tp: int
    pp: int
    replicas: int
    gpus: int
    ttft_s: float
    tpot_s: float
    percentile: int
    offered_per_s: float
    served_per_s: float
    preemptions: int
    ok: bool
    note: str = ""
    tpot_mean_s: float = 0.0
    """The simulation's mean TPOT, what the closed form predicts."""
    closed_form_tpot_s: float | None = None
    """The closed form's TPOT for this many replicas (None: it found no steady state)."""

    @property
    def agreement(self) -> float | None:
        """Simulated mean TPOT over the closed form's."""
        if not self.closed_form_tpot_s or not math.isfinite(self.closed_form_tpot_s) or not self.tpot_mean_s:
            return None
        return self.tpot_mean_s / self.closed_form_tpot_s


def verify(
    model: ModelSpec,
    gpus: list[GPUSpec],
    report: PlanReport,
    prompts: Any,
    outputs: Any,
    rate: float,
    slo: SLO,
    kv: KVDtype,
    engine: Engine,
    percentile: int = 90,
    top: int = 3,
    extra_replicas: int = 4,
    seed: int = 0,
    constants: StepConstants = DEFAULTS,
    max_gpus: int = 64,
    traffic: Traffic | None = None,
) -> list[Verification]:
    """The closed form's best deployments (up to ``top``, PP 1: the simulator runs TP only), each
    simulated at rate / replicas on one replica with the traffic's own lengths, adding replicas
    (up to ``extra_replicas`` more) until the targets hold at the ``percentile`` (50, 90 or 99) and
    the replica keeps up with what it is offered, never past ``max_gpus``. The simulation steps
    with the same step-time model as the closed form, so the two are compared on mean TPOT."""
    import numpy as np

    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    by_name = {g.name: g for g in gpus}
    key = "p99" if percentile > 90 else "p90" if percentile > 50 else "p50"
    out: list[Verification] = []
    n = len(prompts)
    max_len = int(np.max(prompts + outputs))
    for d in [x for x in report.ranked if x.pp == 1][:top]:
        gpu = by_name[d.gpu]
        rep = _Replica(model, gpu, d.tp, d.pp, traffic, kv, engine, constants) if traffic else None
        for r in range(d.replicas, d.replicas + extra_replicas + 1):
            if d.tp * r > max_gpus:
                break
            lam = rate / r
            arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / lam, size=n))
            wl = Workload(arrivals, prompts, outputs, "the plan's traffic", f"Poisson, {lam:g} requests/s")
            mnbt = engine.default_batched_tokens(gpu.memory_runtime_bytes, gpu.name, max_len)
            mns = engine.default_num_seqs(gpu.memory_runtime_bytes, gpu.name)
            st = SimSettings(max_len, mns, mnbt, constants=constants, seed=seed)
            try:
                sim = simulate(model, gpu, wl, st, [("paged-16", 16)], engine, kv, d.tp)
            except KvcalcError as e:
                out.append(Verification(d.gpu, d.tp, d.pp, r, d.tp * r, 0.0, 0.0, percentile, lam, 0.0, 0, False, e.what))
                break
            run = sim.runs[0]
            ttft, tpot = getattr(run.ttft_s, key), getattr(run.tpot_s, key)
            keeps_up = run.requests_per_s >= 0.95 * lam
            ok = keeps_up and (slo.ttft_s is None or ttft <= slo.ttft_s) and (slo.tpot_s is None or tpot <= slo.tpot_s)
            why = [] if keeps_up else [f"serves {run.requests_per_s:.2f} of {lam:.2f} requests/s"]
            if slo.ttft_s is not None and ttft > slo.ttft_s:
                why.append(f"TTFT {key} {ttft * 1e3:,.0f} ms")
            if slo.tpot_s is not None and tpot > slo.tpot_s:
                why.append(f"TPOT {key} {tpot * 1e3:,.1f} ms")
            v = Verification(
                d.gpu,
                d.tp,
                d.pp,
                r,
                d.tp * r,
                ttft,
                tpot,
                percentile,
                lam,
                run.requests_per_s,
                run.preemptions,
                ok,
                "; ".join(why),
                tpot_mean_s=run.tpot_s.mean,
                closed_form_tpot_s=_closed_form_tpot(rep, traffic, r),
            )
            out.append(v)
            if ok:
                break
    return out


def _closed_form_tpot(rep: _Replica | None, traffic: Traffic | None, replicas: int) -> float | None:
    if rep is None or traffic is None:
        return None
    st = _steady(rep, traffic, replicas)
    return st[2] if st else None
