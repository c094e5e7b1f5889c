"""The cheapest deployment that carries a load within its latency targets.

A deployment is a GPU type, a tensor-parallel size, a pipeline-parallel size and a number of
data-parallel replicas. Each candidate is checked for:

- memory: ``fit`` with the engine's budget gives the requests of the traffic's full length one
  replica holds (its pool; tensor parallelism splits KV heads, pipeline parallelism splits
  layers, so for MLA models, whose latent every TP rank keeps whole, PP is what adds room);
- bandwidth and compute: a decode step at the batch the traffic implies is kvcalc's roofline
  bound (weights read, KV read, FLOPs; plus the TP all-reduce over the GPU's interconnect),
  divided by an efficiency; with PP the replica keeps PP micro-batches in flight, each taking
  the whole model's step time to cross the stages;
- prefill: the prompts take (requests per second) x (a prompt's prefill bound) of the replica's
  time, which must stay under 1; decode steps share the rest;
- latency targets: TPOT is the step time over the share prefill leaves; TTFT is the prefill bound
  of the prompt plus one such step (queueing is not in this closed form: ``verify`` simulates).

The load is either concurrent users (a closed loop: each always has one request in flight) or an
arrival rate; for a rate, the requests in flight per replica follow Little's law, n = lambda x
(TTFT + output x TPOT(n)), solved by fixed-point iteration (TPOT grows with n).

Deployments are ranked by GPU count, then cost where prices are given; each names its binding
constraint. When none meets the targets, the nearest one says by how much it falls short.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kvcalc.engine.engines import Engine
from kvcalc.engine.memory import FitInputs, fit
from kvcalc.engine.roofline import Decode, prefill_bound
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

TP_SIZES = (1, 2, 4, 8)
PP_SIZES = tuple(range(1, 17))
DEFAULT_EFFICIENCY = 0.7


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
    efficiency: float
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
    verified: list[Any] = field(default_factory=list)
    """The best deployments checked by simulation (Verification), in the order tried."""
    inputs: dict[str, Any] = field(default_factory=dict)


class _Replica:
    """One (GPU, TP, PP) configuration: its memory capacity and its step time at any batch."""

    def __init__(
        self,
        model: ModelSpec,
        gpu: GPUSpec,
        tp: int,
        pp: int,
        traffic: Traffic,
        kv: KVDtype,
        engine: Engine,
        eff: float,
        base: FitInputs | None = None,
    ):
        self.gpu, self.tp, self.pp, self.eff = gpu, tp, pp, eff
        inp = (base or FitInputs(seq=traffic.length)).replace(
            seq=traffic.length, engine=engine, tp=tp, pp=pp, kv_dtype=kv, max_model_len=None
        )
        f = fit(model, gpu, inp)
        self.capacity = f.max_concurrency
        self.d = Decode(model, gpu, kv, tp)
        self.ctx = traffic.prompt + max(traffic.output // 2, 1)
        self.allreduce = tp > 1 and bool(gpu.interconnect_bytes_per_s)
        self.prefill = prefill_bound(model, gpu, traffic.prompt_tail or traffic.prompt, tp).t_bound_s / eff
        # Prompts take their share of the replica's time: the mean prompt's prefill per request,
        # divided over the PP stages that work on different requests at once.
        self.prefill_share = prefill_bound(model, gpu, traffic.prompt, tp).t_bound_s / eff / pp
        self._kv = float(self.d.kv_request(self.ctx))
        self._attn = float(self.d.attn_flops(self.ctx))

    def step(self, in_flight: float) -> tuple[float, str]:
        """(seconds, bound) of one decode step when ``in_flight`` requests run (in PP micro-batches)."""
        b = max(math.ceil(in_flight / self.pp), 1)
        d = self.d
        tm = (float(d.weight_read(b)) + b * self._kv) / d.bw
        tc = float(d.flops(b, self._attn)) / d.peak
        ta = d.allreduce(b)[1] if self.allreduce else 0.0
        t = max(tm, tc) + ta
        bound = "all-reduce" if ta > max(tm, tc) else "compute" if tc > tm else "memory"
        return t / self.eff, bound

    def ttft(self, in_flight: float, busy: float = 0.0) -> float:
        return self.prefill + self.step(in_flight)[0] / (1 - busy)


def _check(rep: _Replica, traffic: Traffic, slo: SLO, replicas: int) -> tuple[bool, float, str, dict[str, float]]:
    """Whether ``replicas`` of this configuration carry the traffic: (ok, requests in flight per
    replica, the reason it fails or '', each constraint's use of its limit).

    Prefill takes ``busy`` = (requests per second) x (a prompt's prefill time) of the replica's
    time; decode steps share the rest, so a token takes step / (1 - busy)."""
    n: float
    out = traffic.output
    if traffic.users:
        n = math.ceil(traffic.users / replicas)
        s = rep.step(n)[0]
        x = 0.0  # throughput of a closed loop: n = x (prefill + (output + 1) x step / (1 - x p))
        for _ in range(200):
            nxt = n / (rep.prefill + (out + 1) * s / max(1 - x * rep.prefill_share, 1e-9))
            if abs(nxt - x) <= 1e-9 * max(x, 1):
                x = nxt
                break
            x = nxt
        busy = min(x * rep.prefill_share, 0.999)
    else:
        assert traffic.rate is not None
        lam = traffic.rate / replicas
        busy = lam * rep.prefill_share
        if busy >= 1:
            return False, math.inf, "prefill", {"prefill": busy, "memory": math.inf}
        n = lam * (rep.ttft(1, busy) + out * rep.step(1)[0] / (1 - busy))
        for _ in range(200):
            nxt = lam * (rep.ttft(n, busy) + out * rep.step(n)[0] / (1 - busy))
            if nxt > 4 * max(rep.capacity, 1) + 1:
                return False, nxt, "throughput", {"prefill": busy, "memory": nxt / max(rep.capacity, 1)}
            if abs(nxt - n) <= 1e-6 * max(n, 1):
                n = nxt
                break
            n = nxt
        else:
            return False, n, "throughput", {"prefill": busy, "memory": n / max(rep.capacity, 1)}
    tpot = rep.step(n)[0] / (1 - busy)
    ttft = rep.ttft(n, busy)
    use = {"memory": n / rep.capacity if rep.capacity else math.inf, "prefill": busy}
    if slo.tpot_s:
        use["TPOT"] = tpot / slo.tpot_s
    if slo.ttft_s:
        use["TTFT"] = ttft / slo.ttft_s
    over = [k for k, v in use.items() if v > 1]
    return not over, n, over[0] if over else "", use


def _deployment(rep: _Replica, traffic: Traffic, slo: SLO, replicas: int, price: float | None, why: str = "") -> Deployment:
    ok, n, fail, use = _check(rep, traffic, slo, replicas)
    busy = min(use.get("prefill", 0.0), 0.999)
    step, bound = rep.step(n) if math.isfinite(n) else (math.inf, "compute")
    tpot = step / (1 - busy)
    gpus = rep.tp * rep.pp * replicas
    binding = why or max(use, key=lambda k: use[k])
    short = ""
    if not ok:
        short = ", ".join(f"{k} at {v:.0%} of its limit" for k, v in use.items() if v > 1) or "carries no steady state"
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
        ttft_s=rep.ttft(n, busy) if math.isfinite(n) else math.inf,
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
    efficiency: float = DEFAULT_EFFICIENCY,
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
                    rep = _Replica(model, gpu, tp, pp, traffic, kv, engine, efficiency, base)
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
    if prices and all(d.cost_per_hour is not None for d in feasible):
        feasible.sort(key=lambda d: (d.cost_per_hour or 0.0, d.gpus, d.tpot_s))
    nearest = min(near, key=lambda x: x[0])[1] if near and not feasible else None
    assumptions = [
        f"memory: kvcalc fit with {engine.title}'s budget at {traffic.length:,} tokens per request (prompt + output), "
        "per replica; TP splits KV heads (an MLA latent is kept whole on every TP rank), PP splits layers",
        f"decode step: the roofline bound at the requests in flight (context {traffic.prompt + max(traffic.output // 2, 1):,} "
        f"tokens, mid-output) plus the TP all-reduce over the GPU's interconnect, / efficiency {efficiency:g}; with PP, "
        "PP micro-batches are in flight and a token crosses every stage",
        "TTFT: the prompt's prefill bound / efficiency plus one decode step; queueing is not included (kvcalc simulate)",
        f"searched: TP {', '.join(map(str, tp_sizes))} x PP 1 to {max(pp_sizes)} x replicas, up to {max_gpus} GPUs",
    ]
    if traffic.rate is not None:
        assumptions.append("requests in flight per replica by Little's law: rate / replicas x (TTFT + output x TPOT)")
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
        efficiency=efficiency,
        best=feasible[0] if feasible else None,
        ranked=feasible[:12],
        per_gpu_type=sorted(per_type.values(), key=key),
        nearest=nearest,
        considered=considered,
        skipped=skipped,
        assumptions=assumptions,
        warnings=warnings,
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
    efficiency: float = DEFAULT_EFFICIENCY,
) -> list[Verification]:
    """The closed form's best deployments (up to ``top``, PP 1: the simulator runs TP only), each
    simulated at rate / replicas on one replica with the traffic's own lengths, adding replicas
    (up to ``extra_replicas`` more) until the targets hold at the ``percentile`` (50, 90 or 99) and
    the replica keeps up with what it is offered."""
    import numpy as np

    from kvcalc.engine.simulate import SimSettings, Workload, simulate

    by_name = {g.name: g for g in gpus}
    key = "p99" if percentile > 90 else "p90" if percentile > 50 else "p50"
    out: list[Verification] = []
    n = len(prompts)
    max_len = int(np.max(prompts + outputs))
    for d in [x for x in report.ranked if x.pp == 1][:top]:
        gpu = by_name[d.gpu]
        for r in range(d.replicas, d.replicas + extra_replicas + 1):
            lam = rate / r
            arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / lam, size=n))
            wl = Workload(arrivals, prompts, outputs, "the plan's traffic", f"Poisson, {lam:g} requests/s")
            mnbt = engine.default_batched_tokens(gpu.memory_runtime_bytes, gpu.name, max_len)
            mns = engine.default_num_seqs(gpu.memory_runtime_bytes, gpu.name)
            st = SimSettings(max_len, mns, mnbt, efficiency=efficiency)
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
            )
            out.append(v)
            if ok:
                break
    return out
