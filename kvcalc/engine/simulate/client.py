"""The client: who sends requests, and when the engine sees them.

Two ways to load a server, as benchmark clients do (vLLM's ``vllm bench serve``, genai-perf):

- open loop: request i is sent at its arrival time (Poisson at a rate, a burst at time 0 for rate
  ``inf``, or a trace's times), whatever the server is doing;
- a concurrency limit of N (``--max-concurrency N``; genai-perf's ``--concurrency N``): at most
  N requests are in flight; request i is sent at its arrival time or when one of the N finishes,
  whichever is later. With every arrival at 0 this is the closed loop of N users, each sending
  its next request the moment its last one ends.

A request reaches the engine a request-path overhead after it is sent (HTTP, the API server,
tokenisation of its prompt): that overhead times a factor drawn uniformly from [0.5, 1.5] per
request (seeded),
so that requests of equal lengths do not move in lock-step. TTFT and end-to-end latency count
from the send, as a benchmark client's clock does.
"""

from __future__ import annotations

import heapq
import math
from typing import Any


class Client:
    """Sends requests ``0..n-1`` in order; the engine takes them in the order they reach it."""

    def __init__(self, arrivals: Any, path_s: Any, concurrency: int | None, seed: int = 0):
        """``path_s``: each request's request-path overhead in seconds (an array, or one figure)."""
        import numpy as np

        self.A = [float(x) for x in np.asarray(arrivals, dtype=float).tolist()]
        n = self.n = len(self.A)
        rng = np.random.default_rng(seed + 7919)
        base = np.broadcast_to(np.asarray(path_s, dtype=float), (n,))
        self.over = (base * rng.uniform(0.5, 1.5, size=n)).tolist()
        self.sent = [math.nan] * n
        self.limit = concurrency
        self._heap: list[tuple[float, int]] = []
        self._next = 0  # the next request to send
        self.in_flight = 0
        if concurrency is None:
            # Open loop: everything is sent at its arrival; the engine sees them in order of reaching it.
            at = [a + o for a, o in zip(self.A, self.over)]
            self.sent = list(self.A)
            self._order = sorted(range(n), key=at.__getitem__)
            self._at = at
            self._pos = 0
        else:
            self._order = []
            while self._next < n and self.in_flight < concurrency:
                self._send(self.A[self._next])
        self.head: tuple[float, int] | None = None
        """(time it reaches the engine, request) of the next request the engine has not taken (kept
        current by take and finished: the scheduler reads it at every event)."""
        self._head()

    def _head(self) -> None:
        if self.limit is None:
            if self._pos < self.n:
                i = self._order[self._pos]
                self.head = self._at[i], i
            else:
                self.head = None
        else:
            self.head = self._heap[0] if self._heap else None

    def _send(self, t: float) -> None:
        i = self._next
        s = max(self.A[i], t)
        self.sent[i] = s
        heapq.heappush(self._heap, (s + self.over[i], i))
        self._next += 1
        self.in_flight += 1

    def peek(self) -> tuple[float, int] | None:
        """(time it reaches the engine, request) of the next request the engine has not taken."""
        return self.head

    def take(self) -> None:
        if self.limit is None:
            self._pos = p = self._pos + 1
            if p < self.n:
                i = self._order[p]
                self.head = self._at[i], i
            else:
                self.head = None
        else:
            heap = self._heap
            heapq.heappop(heap)
            self.head = heap[0] if heap else None

    def waiting_tokens(self, t: float, prompts: list[int]) -> int:
        """The prompt tokens of the requests that have reached the engine by ``t`` and that it has not taken."""
        if self.limit is None:
            total, order, at, p = 0, self._order, self._at, self._pos
            while p < self.n and at[order[p]] <= t:
                total += prompts[order[p]]
                p += 1
            return total
        return sum(prompts[i] for reach, i in self._heap if reach <= t)

    def finished(self, t: float) -> None:
        """A request ended at ``t``: under a concurrency limit its slot sends the next one."""
        if self.limit is None:
            return
        self.in_flight -= 1
        if self._next < self.n:
            self._send(t)
            self._head()

    def offered_per_s(self) -> float | None:
        """The open-loop arrival rate (requests over the span of their arrivals); None for a burst
        or a concurrency-limited client, whose offered load follows the server."""
        if self.limit is not None or self.n < 2:
            return None
        span = self.A[-1] - self.A[0]
        return (self.n - 1) / span if span > 0 else None
