"""Bisection over whole numbers, for the engine's crossovers and limits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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


def first_true_each(pred: Callable[[Any], Any], lo: Any, hi: Any) -> Any:
    """:func:`first_true` for many searches at once: ``lo`` and ``hi`` are numpy int64 arrays and
    ``pred`` maps an array of candidates to an array of bools (element i for search i). Returns the
    smallest n of each search, -1 where pred(hi) is false."""
    import numpy as np

    lo = np.array(lo, dtype=np.int64)
    hi = np.array(hi, dtype=np.int64)
    at_hi = np.asarray(pred(hi), dtype=bool)
    at_lo = np.asarray(pred(lo), dtype=bool)
    out = np.where(at_lo, lo, np.where(at_hi, hi, -1))
    active = at_hi & ~at_lo
    while True:
        open_ = active & (hi - lo > 1)
        if not open_.any():
            break
        mid = (lo + hi) // 2
        p = np.asarray(pred(np.where(open_, mid, hi)), dtype=bool)
        hi = np.where(open_ & p, mid, hi)
        lo = np.where(open_ & ~p, mid, lo)
    return np.where(active, hi, out)
