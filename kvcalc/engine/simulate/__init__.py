"""Capacity over time: a continuous-batching engine serving a client's requests (kvcalc simulate).

The parts, each with one job: ``client`` (open loop or a concurrency limit, the request path),
``allocator`` (where a request's KV lives: prealloc, oracle, paged-B), ``admission`` (SGLang's
reserve for the outputs to come, its ignore-EOS test and retraction order, as a run goes on), ``scheduler`` (admission,
chunked prefill, preemption, the event loop), ``metrics`` (the figures a benchmark client
prints), ``types`` (the workload, settings and reports) and ``run`` (every policy on the same
requests, and the verdict); the step time comes from :mod:`kvcalc.engine.steptime` only.
"""

from kvcalc.engine.simulate.allocator import Blocks, Contiguous, Paged
from kvcalc.engine.simulate.client import Client
from kvcalc.engine.simulate.metrics import BenchMetrics, Percentiles
from kvcalc.engine.simulate.run import estimate_events, simulate
from kvcalc.engine.simulate.types import (
    MAX_EVENTS,
    POLICY_ACCEPTED,
    PolicyRun,
    SimSettings,
    SimulationReport,
    Workload,
    parse_policies,
)

__all__ = [
    "MAX_EVENTS",
    "POLICY_ACCEPTED",
    "BenchMetrics",
    "Blocks",
    "Client",
    "Contiguous",
    "Paged",
    "Percentiles",
    "PolicyRun",
    "SimSettings",
    "SimulationReport",
    "Workload",
    "estimate_events",
    "parse_policies",
    "simulate",
]
