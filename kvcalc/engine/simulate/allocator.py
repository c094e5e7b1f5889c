"""The allocator: where a running request's KV lives, one class per policy.

- :class:`Contiguous` ``prealloc`` reserves ``max_len`` tokens at admission (the output length is
  unknown); ``oracle`` reserves exactly prompt + output tokens, first-fit in one address space
  (holes appear).
- :class:`Paged` (``paged-B``) takes B-token blocks as tokens arrive. Decoding requests' blocks
  are counted in closed form (:class:`Blocks`), prompts hold theirs from admission, and a shared
  prefix's full blocks are held once (prefix caching).

The scheduler asks each the same questions: can a request ever fit, does it fit now, take it,
let it go, how much is in use (in ``unit`` bytes); paging also says when its blocks run out and
when it is over capacity (the scheduler then preempts). ``version`` counts the changes that can
free room (a release, a request starting or stopping its decode, a prompt done): between two, what
is in use only grows, so a request that did not fit still does not.
"""

from __future__ import annotations

from collections.abc import Callable

from kvcalc.engine.paging import _FirstFit


class Blocks:
    """Blocks held by decoding requests whose lengths are base_i + S at step S: the sum of
    ceil((base_i + S) / B) in O(B), from each request's quotient and residue of (base_i - 1) / B."""

    def __init__(self, B: int):
        self.B = B
        self.cnt = [0] * B
        self.sumk = 0
        self.n = 0
        self._memo = (-1, 0)
        self.version = 0
        """Counts the requests added and removed (see the module's note)."""

    def add(self, base: int) -> None:
        k, r = divmod(base - 1, self.B)
        self.sumk += k
        self.cnt[r] += 1
        self.n += 1
        self._memo = (-1, 0)
        self.version += 1

    def remove(self, base: int) -> None:
        k, r = divmod(base - 1, self.B)
        self.sumk -= k
        self.cnt[r] -= 1
        self.n -= 1
        self._memo = (-1, 0)
        self.version += 1

    def total(self, S: int) -> int:
        m = self._memo
        if m[0] == S:
            return m[1]
        if not self.n:
            return 0
        B = self.B
        a = S // B
        s = S - a * B  # (S % B, without divmod's call)
        v = self.sumk + self.n * (a + 1) + (sum(self.cnt[B - s :]) if s else 0)
        self._memo = (S, v)
        return v

    def first_over(self, S: int, limit: int) -> int:
        """The fewest steps k >= 1 after which the blocks pass ``limit`` (total(S + k) > limit); 0
        if they never do (no decoding requests, and the limit not passed already). A request of residue r takes a new block at the
        steps S' with (r + S') % B == 0, so the n requests take n blocks every B steps, and
        within a cycle step S + j adds cnt[-(S + j) % B]: whole cycles, then at most B single steps."""
        n = self.n
        room = limit - self.total(S)
        if room < 0:
            return 1
        if not n:
            return 0
        B, cnt = self.B, self.cnt
        q, room = divmod(room, n)
        k = q * B
        r = -(S + 1) % B  # the residue taking a block at step S + 1; then r - 1, r - 2, ... (mod B)
        # (Indices r, r - 1, ..., 0, then B - 1, ..., r + 1: the residues in the order they take blocks; no list built.)
        for j in range(r, r - B, -1):
            k += 1
            room -= cnt[j]
            if room < 0:
                return k
        raise AssertionError("a whole cycle takes n blocks")  # pragma: no cover


class Contiguous:
    """prealloc or oracle: one contiguous reservation per request, released when it finishes
    (prealloc's are all the same size, so only their total matters; oracle's are placed first-fit)."""

    paged = False
    block = 1
    prefix_tokens = 0
    cached_prefix = 0

    def __init__(self, policy: str, pool: int, req_bytes: Callable[[int], int], max_len: int):
        self.policy, self.pool, self.req_bytes, self.max_len = policy, pool, req_bytes, max_len
        self.prealloc = policy == "prealloc"
        self.first_fit = None if self.prealloc else _FirstFit(pool)
        self.fixed = req_bytes(max_len) if self.prealloc else 0
        self.cap = pool
        self.unit = 1
        self.held: dict[int, int] = {}
        self.held_sum = 0
        self.version = 0
        self._need: dict[int, int] = {}

    def can_ever(self, total: int) -> bool:
        if self.prealloc:
            return self.fixed <= self.pool and total <= self.max_len
        return self.req_bytes(total) <= self.pool

    def fits(self, length: int, S: int, decoding: int) -> bool:
        """Whether a request of ``length`` tokens may be admitted now (first-fit: only trying tells)."""
        return self.fits_held(length, self.held_sum)

    def reserve(self, i: int, length: int, total: int, S: int, decoding: int) -> bool:
        if self.prealloc:
            need = self.fixed
            if need > self.pool - self.held_sum:
                return False
        else:
            need = self._need.get(total, -1)
            if need < 0:
                need = self._need[total] = self.req_bytes(total)
            assert self.first_fit is not None
            if not self.first_fit.alloc(i, need):
                return False
        self.held[i] = need
        self.held_sum += need
        return True

    def release(self, i: int) -> None:
        self.version += 1
        h = self.held.pop(i)
        self.held_sum -= h
        if self.first_fit is not None:
            self.first_fit.release(i, h)

    def in_use(self, S: int, decoding: int) -> int:
        """Bytes reserved (the unit of a contiguous pool is one byte)."""
        return self.held_sum

    def fits_held(self, length: int, held: int) -> bool:
        """``fits`` given what ``in_use`` says is held now."""
        return self.pool - held >= self.fixed if self.prealloc else True

    # A contiguous reservation is made whole at admission: nothing grows, nothing runs out.
    def prompt_done(self, i: int) -> None:
        return None

    def start_decode(self, base: int) -> None:
        return None

    def stop_decode(self, base: int) -> None:
        return None

    def over(self, S: int, decoding: int) -> bool:
        return False

    def steps_to_full(self, S: int, K: int, decoding: int, held: int) -> int:
        return K + 1


class Paged(Blocks):
    """paged-B: blocks of B tokens as tokens arrive; a shared prefix's full blocks held once. The
    decoding requests' blocks are this object's :class:`Blocks` (start_decode adds a request,
    stop_decode removes it)."""

    paged = True

    def __init__(self, B: int, pool: int, per_token: int, prefix: int):
        super().__init__(B)
        self.block = B
        self.unit = B * per_token
        """Bytes a block holds."""
        self.cap = pool // self.unit
        self.prefix_tokens = prefix
        self.sp_full = prefix // B
        self.cached_prefix = self.sp_full * B
        self.shared = 0
        """Blocks of the shared prefix, once a request holding it has been admitted."""
        self.pref_blocks: dict[int, int] = {}
        """Prompts being prefilled -> the blocks they hold."""
        self.other = 0
        """Blocks held besides the decoding requests': the shared prefix's and the prompts'."""

    start_decode = Blocks.add
    stop_decode = Blocks.remove

    def own_blocks(self, length: int) -> int:
        return -(-length // self.block) - self.sp_full

    def can_ever(self, total: int) -> bool:
        return self.own_blocks(total) + self.sp_full <= self.cap

    def in_use(self, S: int, decoding: int) -> int:
        """Blocks held at step S, by the shared prefix, the decoding requests and the prompts (a
        decoding request's blocks count the prefix's full blocks, held once)."""
        m = self._memo
        return (m[1] if m[0] == S else self.total(S)) + self.other - self.sp_full * decoding

    def fits(self, length: int, S: int, decoding: int) -> bool:
        return self.fits_held(length, self.in_use(S, decoding))

    def fits_held(self, length: int, held: int) -> bool:
        """``fits`` given what ``in_use`` says is held now (the first request holding the prefix
        also takes its blocks)."""
        extra = self.sp_full if self.sp_full and not self.shared else 0
        return self.own_blocks(length) + extra <= self.cap - held

    def take_prefix(self) -> None:
        if self.sp_full and not self.shared:
            self.shared = self.sp_full
            self.other += self.sp_full

    def reserve(self, i: int, length: int, total: int, S: int, decoding: int) -> bool:
        """Blocks for a prompt of ``length`` tokens (the request's tokens so far)."""
        if not self.fits_held(length, self.in_use(S, decoding)):
            return False
        self.take_prefix()
        nb = self.own_blocks(length)
        self.pref_blocks[i] = nb
        self.other += nb
        return True

    def grow(self, i: int, tokens: int) -> None:
        """A prompt's blocks grown to hold its first ``tokens`` tokens (vLLM V1 takes a chunk's blocks
        as it schedules the chunk); over the pool is the scheduler's to resolve by preemption."""
        nb = self.own_blocks(tokens)
        old = self.pref_blocks[i]
        if nb > old:
            self.pref_blocks[i] = nb
            self.other += nb - old

    def prompt_done(self, i: int) -> None:
        self.version += 1
        self.other -= self.pref_blocks.pop(i)

    def release(self, i: int) -> None:
        return None  # a finished request's blocks went with its decoding (stop_decode)

    def over(self, S: int, decoding: int) -> bool:
        return self.in_use(S, decoding) > self.cap

    def steps_to_full(self, S: int, K: int, decoding: int, held: int) -> int:
        """The fewest steps (1..K) after which the decoding requests' blocks pass the pool; K + 1 if
        they do not within K. ``held``: what in_use(S, decoding) says (the scheduler has it at hand)."""
        if self.cap - held >= (K // self.block + 1) * self.n:
            return K + 1  # K steps take at most ceil(K / B) blocks a request
        k = self.first_over(S, self.cap - self.other + self.sp_full * decoding)
        return K + 1 if not k or k > K else k


Allocator = Contiguous | Paged
