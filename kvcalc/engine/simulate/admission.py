"""SGLang's admission reserve through a run: the state its scheduler keeps between steps to decide whether
a waiting request may join, and which running request a retraction takes first.

The rules are :class:`kvcalc.engine.engines.TokenRatio`'s (read from SGLang's released code, cited there); this
part holds what they need as a run goes on, so the scheduler (:mod:`kvcalc.engine.simulate.scheduler`) asks
it questions instead of keeping the figures itself:

- the ratio now: ``start`` at decode step ``at_step``, falling a fixed amount a step to its floor, back to
  its start when the scheduler idles, recomputed after a retraction;
- the output tokens the running requests are held to still need: each decoding request's
  min(outputs to come, clip). A request that had at most ``clip`` to come when it started decoding has
  ``last step - S`` to come at step S throughout, so those are kept as one running sum of last steps and a
  count; the others (``long``) are summed one by one;
- the request the batch's claim last held back (``wait``, its prompt and outputs in tokens) and whether the
  last try stopped at SGLang's tests (``held``).

Nothing here touches the pool: the free tokens are the allocator's, passed in.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from kvcalc.engine.engines import TokenRatio


class Reserve:
    """SGLang's reserve for the output tokens still to come, through one run (TokenRatio). ``eos``: the requests
    ask to ignore EOS and the radix cache is off, so the ignore-EOS test stands in for the claim's."""

    __slots__ = ("at_step", "clip", "eos", "held", "long", "n", "own", "ratio", "start", "sum", "wait")

    def __init__(self, ratio: TokenRatio, eos: bool = False) -> None:
        self.ratio = ratio
        self.clip = ratio.clip
        self.start = ratio.init
        self.at_step = 0
        self.sum = 0  # the last steps of the decoding requests that had at most ``clip`` outputs to come
        self.n = 0  # ... and how many they are
        self.long: dict[int, int] = {}  # the others: request -> its last step
        self.wait = 0  # the tokens of the request the claim last held back; 0: none
        self.held = False
        self.eos = eos
        self.own = ratio.ignore_eos == "own"

    # ---- the decoding requests ---------------------------------------------------------------------------------

    def add(self, i: int, last: int, step: int) -> None:
        """Request ``i`` starts decoding at ``step`` and samples its last token at step ``last``."""
        if last - step > self.clip:
            self.long[i] = last
        else:
            self.sum += last
            self.n += 1

    def drop(self, i: int, last: int) -> None:
        """Request ``i``, whose last step was ``last``, stops decoding (it ended or was retracted)."""
        if self.long.pop(i, None) is None:
            self.sum -= last
            self.n -= 1

    def outputs_left(self, step: int) -> int:
        """The decoding requests' min(outputs to come, clip), summed, at ``step``."""
        clip = self.clip
        left = self.sum - self.n * step
        for f in self.long.values():
            k = f - step
            left += k if k < clip else clip
        return left

    # ---- the ratio ---------------------------------------------------------------------------------------------

    def ratio_at(self, step: int) -> float:
        return self.ratio.at(self.start, step - self.at_step)

    def claim(self, step: int, pending: Iterable[int] = ()) -> float:
        """What the running requests have claimed at ``step``: their outputs to come (the decoding requests', and
        ``pending``, the outputs to come of those whose prompts still run), each at most ``clip``, times the ratio."""
        clip = self.clip
        left = self.outputs_left(step)
        for k in pending:
            left += k if k < clip else clip
        return self.ratio_at(step) * left

    def idle(self, step: int) -> None:
        """The scheduler idles (self_check_during_idle): the ratio returns to its start."""
        self.start, self.at_step = self.ratio.init, step

    def retracted(self, made: int, left: int, max_new: int, step: int) -> None:
        """A retraction at ``step`` left ``left`` requests, which have made ``made`` output tokens of ``max_new``."""
        self.start, self.at_step = self.ratio.after_retract(made, left, max_new), step

    def turn(self, span: int, step: int, fin: dict[int, int], free: int) -> int:
        """The first of the next ``span`` decode steps after which the request the claim held back (``wait`` tokens)
        is taken in, as the ratio falls and the outputs are made, the ``free`` tokens falling a token a decoding
        request a step (``fin``: each decoding request's last step; none ends inside the span); ``span`` + 1 if
        none."""
        r = self.ratio
        nd = len(fin)
        # First a bound: over the span the free tokens are at most those after one step, the ratio at least its last
        # step's, the outputs to come at least their last step's: none can let it in where even these do not.
        end = step + span
        last = self.sum - self.n * end + sum(min(f - end, r.clip) for f in self.long.values())
        if free - nd - max(self.start - r.decay * (end - self.at_step), r.floor) * last <= self.wait:
            return span + 1
        rem = np.fromiter(fin.values(), float, nd) - step
        k = np.arange(1, span + 1, dtype=float)
        # sum_j min(rem_j - k, clip) = sum_j (rem_j - k) - sum_j max(rem_j - clip - k, 0)
        a = np.sort(rem - r.clip)
        c = np.concatenate(([0.0], np.cumsum(a)))
        at = np.searchsorted(a, k, side="right")
        left = rem.sum() - nd * k - ((c[-1] - c[at]) - k * (nd - at))
        ratio = np.maximum(self.start - r.decay * (step - self.at_step + k), r.floor)
        ok = self.wait < free - nd * k - ratio * left
        return int(np.argmax(ok)) + 1 if ok.any() else span + 1

    # ---- the ignore-EOS test -----------------------------------------------------------------------------------

    @staticmethod
    def eos_order(first: tuple[int, int] | None, running: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """The ignore-EOS test's list at a batch's first try: (outputs to come, tokens held) of the request asked
        about (``first``, None if it has none to come) and the running requests with outputs to come, sorted by
        outputs to come (SGLang builds it with the one asked about first, and its sort is stable)."""
        head = [first] if first is not None else []
        return sorted(head + [s for s in running if s[0] > 0], key=lambda s: s[0])

    @staticmethod
    def eos_insert(states: list[tuple[int, int]], left: int, held: int) -> list[tuple[int, int]]:
        """``states`` with a later request of the batch inserted as SGLang's insert_sort does: before the first with
        as many outputs to come; past them all, before the last (its loop leaves the index at the last)."""
        if left <= 0:
            return states
        at = next((k for k, s in enumerate(states) if left <= s[0]), max(len(states) - 1, 0))
        return [*states[:at], (left, held), *states[at:]]

    def eos_fits(self, states: list[tuple[int, int]], rem: int) -> bool:
        """SGLang's ignore-EOS test (TokenRatio): ``states`` the (outputs to come, tokens held) of the running requests,
        those taken in before and the one asked about, in SGLang's order; ``rem`` the free tokens less the prompts of
        those taken in now, its own included. As the i-th of n ends, the others having grown by its outputs to come
        ('own') or the next one's ('next'), the tokens of the first i freed, room must be left."""
        n = len(states)
        freed = 0
        for k, (left, held) in enumerate(states):
            bs = n - k
            if self.own:
                if rem + freed - left * bs <= bs:
                    return False
            elif rem + freed - (states[k + 1][0] if k + 1 < n else left) * bs <= 0:
                return False
            freed += held
        return True

    # ---- retraction --------------------------------------------------------------------------------------------

    @staticmethod
    def victim(fin: dict[int, int], step: int, outputs: list[int], prompts: list[int]) -> int:
        """The decoding request a retraction takes first: the fewest outputs made (its outputs less those to come,
        ``fin`` - ``step``), of those the longest prompt, of those the last in the batch (schedule_batch.py
        retract_decode sorts by (outputs, -prompt) and retracts from the end)."""
        return min(reversed(fin), key=lambda j: (outputs[j] - (fin[j] - step), -prompts[j]))
