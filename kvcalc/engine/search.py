"""Bisection over whole numbers, for the engine's crossovers and limits."""

from __future__ import annotations

from collections.abc import Callable


def first_true(pred: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """The smallest n in [lo, hi] with pred(n), for a pred that is false and then true as n grows;
    None if pred(hi) is false."""
    if not pred(hi):
        return None
    if pred(lo):
        return lo
    while hi - lo > 1:  # pred(lo) false, pred(hi) true
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi
