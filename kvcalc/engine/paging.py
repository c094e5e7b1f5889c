"""Allocation policies on a request workload: reservation, internal and external fragmentation.

Every policy sees the same stream: requests queue in arrival order (the queue never empties, so the
pool is always contended), each is admitted first-come first-served when its allocation fits,
holds it for a lifetime proportional to its generated tokens, then frees it. Whenever the request
at the head of the queue cannot be admitted, the pool is as full as this policy can make it: those
moments are sampled (after a warm-up), and the policy's figures are averages over them.

A request is sized at its full length (prompt + output), the peak it reaches:
- ``prealloc``: contiguous, reserved for ``max_len`` tokens (output length unknown at admission);
- ``contiguous``: contiguous, exactly its length (an oracle), placed first-fit: holes appear;
- ``paged-B``: blocks of B tokens anywhere in the pool: only the last block is partly empty.
Bytes per request come from the model's layer kinds (``request_bytes``), so sliding windows and
MLA are sized as they really are.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from dataclasses import field
from typing import Any

from kvcalc._record import record
from kvcalc.engine.alloc import LOGICAL, Allocation
from kvcalc.engine.kv import KVFootprint
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import KVDtype
from kvcalc.specs.model import ModelSpec
from kvcalc.units import count_of

BLOCK_SIZES = (1, 8, 16, 32, 64, 128)
WARMUP = 0.1


@record(frozen=True)
class PolicyResult:
    policy: str
    block_size: int | None
    utilization: float
    """Bytes of live tokens / bytes reserved for them (the allocator's view)."""
    pool_utilization: float
    """Bytes of live tokens / the whole pool, when the next request is refused."""
    reserved_bytes: int
    live_bytes: int
    wasted_bytes: int
    """Reserved but not holding live tokens: reservation waste or the partly empty last blocks."""
    external_bytes: int
    """Free but unusable when the next request is refused: holes (and the tail smaller than it)."""
    max_concurrency: int
    """Requests resident at once when the pool is full (the mean over the samples, rounded)."""
    mean_concurrency: float
    samples: int


@record(frozen=True)
class PrefixSharing:
    shared_prefix_tokens: int
    shared_blocks: int
    shared_bytes: int
    copied_tokens_per_request: int
    max_concurrency_without: int
    max_concurrency_with: int
    gain: float


@record(frozen=True)
class PagingReport:
    model: str
    gpu: str | None
    workload: str
    pool_bytes: int
    requests: int
    max_len: int
    mean_len: float
    shared_prefix: int
    policies: dict[str, PolicyResult]
    paged_over_prealloc: float | None
    """Requests resident at once under paged-16 over prealloc (contiguous, max_len reserved per request);
    None when prealloc holds none, or paged-16 was not run."""
    prefix_sharing: PrefixSharing | None = None
    notes: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)


class _Counter:
    """Pools without external fragmentation (preallocated slots, pages): only the free total matters."""

    def __init__(self, pool: int):
        self.free = pool

    def alloc(self, i: int, n: int) -> bool:
        if n > self.free:
            return False
        self.free -= n
        return True

    def release(self, i: int, n: int) -> None:
        self.free += n


class _FirstFit:
    """One address space, each request a contiguous range placed in the lowest-addressed hole that
    fits. The holes, sorted by address, are kept in buckets of at most 64 with each bucket's largest
    hole, so a placement skips whole buckets that cannot hold it instead of scanning every hole."""

    SPLIT = 64

    def __init__(self, pool: int):
        self.starts: list[list[int]] = [[0]]
        self.sizes: list[list[int]] = [[pool]]
        self.maxes: list[int] = [pool]
        self.firsts: list[int] = [0]
        self.where: dict[int, int] = {}

    def alloc(self, i: int, n: int) -> bool:
        maxes = self.maxes
        for bi in range(len(maxes)):
            if maxes[bi] >= n:
                break
        else:
            return False
        starts, sizes = self.starts[bi], self.sizes[bi]
        k = 0
        while sizes[k] < n:
            k += 1
        z = sizes[k]
        self.where[i] = starts[k]
        if z == n:
            del starts[k], sizes[k]
        else:
            starts[k] += n
            sizes[k] = z - n
        self._fix(bi, z == maxes[bi])
        return True

    def _fix(self, bi: int, remax: bool = True) -> None:
        """Bucket bi changed: drop it if empty, refresh its first address and (if asked) its maximum,
        split it if it grew past SPLIT holes."""
        starts, sizes = self.starts[bi], self.sizes[bi]
        if not starts:
            del self.starts[bi], self.sizes[bi], self.maxes[bi], self.firsts[bi]
            return
        self.firsts[bi] = starts[0]
        if remax:
            self.maxes[bi] = max(sizes)
        if len(starts) > self.SPLIT:
            h = len(starts) // 2
            self.starts[bi : bi + 1] = [starts[:h], starts[h:]]
            self.sizes[bi : bi + 1] = [sizes[:h], sizes[h:]]
            self.maxes[bi : bi + 1] = [max(sizes[:h]), max(sizes[h:])]
            self.firsts[bi : bi + 1] = [starts[0], starts[h]]

    def release(self, i: int, n: int) -> None:
        s = self.where.pop(i)
        if not self.starts:  # the pool was full: this range becomes the only hole
            self.starts, self.sizes, self.maxes, self.firsts = [[s]], [[n]], [n], [s]
            return
        bi = max(bisect_right(self.firsts, s) - 1, 0)
        starts, sizes = self.starts[bi], self.sizes[bi]
        k = bisect_left(starts, s)
        # The hole just before (in this bucket or at the end of the previous one) and just after.
        pb, pk = (bi, k - 1) if k > 0 else (bi - 1, len(self.starts[bi - 1]) - 1) if bi > 0 else (-1, -1)
        nb, nk = (bi, k) if k < len(starts) else (bi + 1, 0) if bi + 1 < len(self.starts) else (-1, -1)
        merge_prev = pb >= 0 and self.starts[pb][pk] + self.sizes[pb][pk] == s
        merge_next = nb >= 0 and s + n == self.starts[nb][nk]
        if merge_prev and merge_next:
            self.sizes[pb][pk] += n + self.sizes[nb][nk]
            del self.starts[nb][nk], self.sizes[nb][nk]
            self.maxes[pb] = max(self.maxes[pb], self.sizes[pb][pk])
            if nb != pb:
                self._fix(nb)
        elif merge_prev:
            self.sizes[pb][pk] += n
            self.maxes[pb] = max(self.maxes[pb], self.sizes[pb][pk])
        elif merge_next:
            self.starts[nb][nk] = s
            self.sizes[nb][nk] += n
            self.maxes[nb] = max(self.maxes[nb], self.sizes[nb][nk])
            self.firsts[nb] = self.starts[nb][0]
        else:
            starts.insert(k, s)
            sizes.insert(k, n)
            self.maxes[bi] = max(self.maxes[bi], n)
            self._fix(bi, remax=False)


Sums = tuple[int, int, int, int]


def _simulate(need: list[int], live: list[int], life: list[float], allocator: Any, progress: Any = None) -> Sums:
    """Admit requests in order while the allocator can place them; when the head of the queue is
    refused, sample the pool and let the earliest request finish.

    Returns (samples, sum of live bytes, sum of reserved bytes, sum of residents) over the refusals
    after the warm-up.
    """
    n = len(need)
    push, pop = heapq.heappush, heapq.heappop
    alloc, release = allocator.alloc, allocator.release
    t = 0.0
    heap: list[tuple[float, int]] = []
    live_now = res_now = 0
    k = s_live = s_res = s_conc = 0
    warm = int(n * WARMUP)
    step = 8192
    i = 0
    while i < n:
        ni = need[i]
        if alloc(i, ni):
            live_now += live[i]
            res_now += ni
            push(heap, (t + life[i], i))
            i += 1
            if progress is not None and not i % step:
                progress(step)
            continue
        if not heap:
            break  # this request can never fit
        if i >= warm:
            k += 1
            s_live += live_now
            s_res += res_now
            s_conc += len(heap)
        t, j = pop(heap)
        release(j, need[j])
        live_now -= live[j]
        res_now -= need[j]
    if not k:
        # No refusal to average over after the warm-up: the one moment to report is the end, every
        # request that fits resident. Samples stay 0 when nothing was ever refused (the workload
        # fits at once), else that moment counts as the one sample.
        refused = i < n or i > len(heap)  # one stopped the stream, or some request made way (was popped)
        return (1 if refused else 0), live_now, res_now, len(heap)
    return k, s_live, s_res, s_conc


def _summarise(policy: str, bs: int | None, sums: Sums, pool: int) -> PolicyResult:
    k, s_live, s_res, s_conc = sums
    if not s_conc:
        return PolicyResult(policy, bs, 0.0, 0.0, 0, 0, 0, pool, 0, 0.0, k)
    live, res, conc = s_live / max(k, 1), s_res / max(k, 1), s_conc / max(k, 1)
    return PolicyResult(
        policy=policy,
        block_size=bs,
        utilization=live / res if res else 0.0,
        pool_utilization=live / pool,
        reserved_bytes=round(res),
        live_bytes=round(live),
        wasted_bytes=round(res - live),
        external_bytes=round(pool - res),
        max_concurrency=round(conc),
        mean_concurrency=conc,
        samples=k,
    )


ASSUMPTIONS = [
    "one stream for every policy: requests queue in order and the queue never empties; each holds its allocation "
    "for a time proportional to its output tokens; figures are averages over the moments the next request is refused",
    "each request is sized at its full length (prompt + output), the peak it reaches",
    "prealloc reserves --max-len tokens per request; contiguous reserves the exact length (an oracle) first-fit; "
    "paged-B rounds each layer's tokens up to blocks of B",
]


def simulate(
    model: ModelSpec,
    lengths: Any,
    lifetimes: Any,
    pool_bytes: int,
    max_len: int,
    kv_dtype: KVDtype,
    tp: int = 1,
    shared_prefix: int = 0,
    block_sizes: Any = BLOCK_SIZES,
    progress: Any = None,
    workload: str = "",
    pool_source: str = "",
    gpu: str | None = None,
    notes: list[str] | None = None,
    seed: int | None = None,
    engine: str | None = None,
) -> PagingReport:
    """Compare the policies on one workload. ``lengths`` and ``lifetimes`` are numpy arrays."""
    import numpy as np

    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.size == 0:
        raise KvcalcError("the workload has no requests", "lengths", "at least one request")
    if pool_bytes <= 0:
        raise KvcalcError("the KV pool is empty: the weights do not leave room", "pool_bytes", "a GPU with memory to spare")
    if int(lengths.max()) > max_len:
        raise KvcalcError(
            f"a request of {int(lengths.max()):,} tokens exceeds the max length of {max_len:,}",
            "max_len",
            "a max length at least the longest request",
        )
    life = np.asarray(lifetimes, dtype=np.float64).tolist()
    logical = KVFootprint(model, kv_dtype, tp, 1, LOGICAL)
    live = np.asarray(logical.request_bytes(lengths), dtype=np.int64).tolist()
    prealloc = int(logical.request_bytes(max_len))
    plans: list[tuple[str, int | None, list[int]]] = [("prealloc", None, [prealloc] * int(lengths.size))]
    for b in block_sizes:
        paged = KVFootprint(model, kv_dtype, tp, 1, Allocation(f"paged-{b}", block_size=b))
        plans.append((f"paged-{b}", b, np.asarray(paged.request_bytes(lengths), dtype=np.int64).tolist()))
    results = [
        _summarise(name, bs, _simulate(need, live, life, _Counter(pool_bytes), progress), pool_bytes) for name, bs, need in plans
    ]
    ff = _summarise("contiguous", None, _simulate(live, live, life, _FirstFit(pool_bytes), progress), pool_bytes)
    results.insert(1, ff)
    by = {p.policy: p for p in results}
    base = by["prealloc"].mean_concurrency
    gain = by["paged-16"].mean_concurrency / base if base and "paged-16" in by else None
    notes = list(notes or [])
    never = [p.policy for p in results if not p.samples and p.mean_concurrency]
    if never:
        who = (
            f"no policy refused a request of this workload (all {count_of(int(lengths.size), 'request')} fit at once)"
            if len(never) == len(results)
            else f"{', '.join(never)} never refused a request of this workload"
        )
        notes.append(f"{who}: the figures are the moment every request that fits is resident, not an average over a full pool")
    if not base:
        notes.append(f"prealloc holds no request: one reservation of the max length ({max_len:,} tokens) is more than the pool")
    sharing = None
    if shared_prefix:
        sharing = prefix_sharing(model, lengths, life, pool_bytes, shared_prefix, kv_dtype, tp, progress)
    return PagingReport(
        model=model.name,
        gpu=gpu,
        workload=workload,
        pool_bytes=pool_bytes,
        requests=int(lengths.size),
        max_len=max_len,
        mean_len=float(lengths.mean()),
        shared_prefix=shared_prefix,
        policies=by,
        paged_over_prealloc=gain,
        prefix_sharing=sharing,
        notes=notes,
        assumptions=ASSUMPTIONS + [f"KV pool: {pool_source}"] if pool_source else list(ASSUMPTIONS),
        inputs={
            "model": model.name,
            "gpu": gpu,
            "workload": workload,
            "requests": int(lengths.size),
            "seed": seed,
            "max_len": max_len,
            "shared_prefix": shared_prefix,
            "tp": tp,
            "kv_dtype": kv_dtype.name,
            "engine": engine,
            "pool_bytes": pool_bytes,
        },
    )


def cached_prompt_tokens(hit: float, prompt: int, block: int) -> int:
    """Tokens of a ``prompt`` found in the prefix cache when the share ``hit`` of it was computed
    before: whole blocks of ``block`` tokens, and never the last token, which is computed again for
    its logits. vLLM 0.11.0, v1/core/kv_cache_manager.py get_computed_blocks: "When all tokens hit
    the cache, we must recompute the last token", so the hit is at most ``num_tokens - 1``; and
    v1/core/single_type_kv_cache_manager.py find_longest_cache_hit counts ``max_length //
    block_size`` whole blocks (kv_cache_utils.py: "We only hash full blocks")."""
    if hit <= 0 or prompt <= 1 or block <= 0:
        return 0
    return min(int(hit * prompt), prompt - 1) // block * block


def prefix_sharing(
    model: ModelSpec,
    lengths: Any,
    life: list[float],
    pool_bytes: int,
    prefix: int,
    kv_dtype: KVDtype,
    tp: int,
    progress: Any = None,
    block_size: int = 16,
) -> PrefixSharing:
    """Paged (block 16) with ``prefix`` tokens common to every request stored once: the prefix's
    whole blocks are shared, its partial last block is copied into each request (copy-on-write)."""
    import numpy as np

    b = block_size
    if not all(k.prefix_shareable for k in model.kinds()):
        raise KvcalcError(
            "prefix sharing is modelled for layers that keep every token (full attention, MLA)",
            "shared_prefix",
            "a model without sliding, chunked or state layers",
        )
    shared_blocks = prefix // b
    shared_tokens = shared_blocks * b
    logical = KVFootprint(model, kv_dtype, tp, 1, LOGICAL)
    paged = KVFootprint(model, kv_dtype, tp, 1, Allocation("paged", block_size=b))
    per_token = logical.per_token
    own = np.asarray(paged.request_bytes(lengths - shared_tokens), dtype=np.int64).tolist()
    shared = shared_tokens * per_token
    pool = pool_bytes - shared
    live = np.asarray(logical.request_bytes(lengths), dtype=np.int64).tolist()
    without = np.asarray(paged.request_bytes(lengths), dtype=np.int64).tolist()
    s_with = _summarise("paged-16+prefix", b, _simulate(own, live, life, _Counter(pool), progress), pool)
    s_without = _summarise("paged-16", b, _simulate(without, live, life, _Counter(pool_bytes), progress), pool_bytes)
    return PrefixSharing(
        shared_prefix_tokens=prefix,
        shared_blocks=shared_blocks,
        shared_bytes=shared,
        copied_tokens_per_request=prefix - shared_tokens,
        max_concurrency_without=s_without.max_concurrency,
        max_concurrency_with=s_with.max_concurrency,
        gain=(s_with.mean_concurrency / s_without.mean_concurrency) if s_without.mean_concurrency else float("inf"),
    )
