"""The allocator: where a running request's KV lives, one class per policy.

- :class:`Contiguous` ``prealloc`` reserves ``max_len`` tokens at admission (the output length is
  unknown); ``oracle`` reserves exactly prompt + output tokens, first-fit in one address space
  (holes appear).
- :class:`Paged` (``paged-B``) takes B-token blocks as tokens arrive. Decoding requests' blocks
  are counted in closed form (:class:`Blocks`), prompts hold theirs from admission, and a shared
  prefix's full blocks are held once (prefix caching).

The scheduler asks each the same questions: can a request ever fit, does it fit now, take it,
let it go, how many bytes are reserved; paging also says when its blocks run out and when it is
over capacity (the scheduler then preempts).
"""

from __future__ import annotations

from collections.abc import Callable

from kvcalc.engine.paging import _Counter, _FirstFit


class Blocks:
    """Blocks held by decoding requests whose lengths are base_i + S at step S: the sum of
    ceil((base_i + S) / B) in O(B), from each request's quotient and residue of (base_i - 1) / B."""

    def __init__(self, B: int):
        self.B = B
        self.cnt = [0] * B
        self.sumk = 0
        self.n = 0
        self._memo = (-1, 0)

    def add(self, base: int, sign: int = 1) -> None:
        k, r = divmod(base - 1, self.B)
        self.sumk += sign * k
        self.cnt[r] += sign
        self.n += sign
        self._memo = (-1, 0)

    def total(self, S: int) -> int:
        m = self._memo
        if m[0] == S:
            return m[1]
        if not self.n:
            return 0
        a, s = divmod(S, self.B)
        v = self.sumk + self.n * (a + 1) + (sum(self.cnt[self.B - s :]) if s else 0)
        self._memo = (S, v)
        return v


class Contiguous:
    """prealloc or oracle: one contiguous reservation per request, released when it finishes."""

    paged = False
    block = 1
    prefix_tokens = 0
    cached_prefix = 0

    def __init__(self, policy: str, pool: int, req_bytes: Callable[[int], int], max_len: int):
        self.policy, self.pool, self.req_bytes, self.max_len = policy, pool, req_bytes, max_len
        self.first_fit = _FirstFit(pool) if policy == "oracle" else None
        self.count = _Counter(pool) if policy != "oracle" else None
        self.alloc: _FirstFit | _Counter = self.first_fit or self.count  # type: ignore[assignment]
        self.fixed = req_bytes(max_len) if policy == "prealloc" else 0
        self.held: dict[int, int] = {}
        self.held_sum = 0

    def can_ever(self, total: int) -> bool:
        if self.policy == "prealloc":
            return self.fixed <= self.pool and total <= self.max_len
        return self.req_bytes(total) <= self.pool

    def fits(self, length: int, S: int, decoding: int) -> bool:
        """Whether a request of ``length`` tokens may be admitted now (first-fit: only trying tells)."""
        return bool(self.count.free >= self.fixed) if self.count is not None and self.policy == "prealloc" else True

    def reserve(self, i: int, length: int, total: int, S: int, decoding: int) -> bool:
        need = self.fixed if self.policy == "prealloc" else self.req_bytes(total)
        if not self.alloc.alloc(i, need):
            return False
        self.held[i] = need
        self.held_sum += need
        return True

    def release(self, i: int) -> None:
        h = self.held.pop(i)
        self.held_sum -= h
        self.alloc.release(i, h)

    def reserved_bytes(self, S: int, decoding: int, per_token: int) -> int:
        return self.pool - self.count.free if self.count is not None else self.held_sum

    # A contiguous reservation is made whole at admission: nothing grows, nothing runs out.
    def prompt_done(self, i: int) -> None:
        return None

    def start_decode(self, base: int) -> None:
        return None

    def stop_decode(self, base: int) -> None:
        return None

    def over(self, S: int, decoding: int) -> bool:
        return False

    def steps_before_full(self, S: int, K: int, decoding: int) -> int:
        return K


class Paged:
    """paged-B: blocks of B tokens as tokens arrive; a shared prefix's full blocks held once."""

    paged = True

    def __init__(self, B: int, pool: int, per_token: int, prefix: int):
        self.block = B
        self.cap = pool // (B * per_token)
        self.prefix_tokens = prefix
        self.sp_full = prefix // B
        self.cached_prefix = self.sp_full * B
        self.blocks = Blocks(B)
        self.shared = 0
        """Blocks of the shared prefix, once a request holding it has been admitted."""
        self.pref_sum = 0
        self.pref_blocks: dict[int, int] = {}
        """Prompts being prefilled -> the blocks they hold."""

    def own_blocks(self, length: int) -> int:
        return -(-length // self.block) - self.sp_full

    def can_ever(self, total: int) -> bool:
        return self.own_blocks(total) + self.sp_full <= self.cap

    def used(self, S: int, decoding: int) -> int:
        return self.shared + self.blocks.total(S) - self.sp_full * decoding + self.pref_sum

    def fits(self, length: int, S: int, decoding: int) -> bool:
        extra = self.sp_full if self.sp_full and not self.shared else 0
        return self.own_blocks(length) + extra <= self.cap - self.used(S, decoding)

    def take_prefix(self) -> None:
        if self.sp_full and not self.shared:
            self.shared = self.sp_full

    def reserve(self, i: int, length: int, total: int, S: int, decoding: int) -> bool:
        """Blocks for a prompt of ``length`` tokens (the request's tokens so far)."""
        if not self.fits(length, S, decoding):
            return False
        self.take_prefix()
        nb = self.own_blocks(length)
        self.pref_blocks[i] = nb
        self.pref_sum += nb
        return True

    def prompt_done(self, i: int) -> None:
        self.pref_sum -= self.pref_blocks.pop(i)

    def release(self, i: int) -> None:
        return None  # a finished request's blocks went with its decoding (stop_decode)

    def start_decode(self, base: int) -> None:
        self.blocks.add(base)

    def stop_decode(self, base: int) -> None:
        self.blocks.add(base, -1)

    def over(self, S: int, decoding: int) -> bool:
        return self.used(S, decoding) > self.cap

    def steps_before_full(self, S: int, K: int, decoding: int) -> int:
        """The fewest steps (1..K) after which the decoding requests' blocks pass the pool; K if
        they never do within it."""
        lim = self.cap - self.shared - self.pref_sum + self.sp_full * decoding
        total = self.blocks.total
        if total(S + K) <= lim:
            return K
        lo, hi = 1, K
        while lo < hi:
            mid = (lo + hi) // 2
            if total(S + mid) > lim:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def reserved_bytes(self, S: int, decoding: int, per_token: int) -> int:
        return self.used(S, decoding) * self.block * per_token


Allocator = Contiguous | Paged
