"""Capacity over time: a continuous-batching engine serving a client's requests (kvcalc simulate).

The parts, each with one job: ``client`` (open loop or a concurrency limit, the request path),
``run`` (the scheduler: admission, chunked prefill, preemption, over the allocation policies),
``metrics`` (the figures a benchmark client prints); the step time comes from
:mod:`kvcalc.engine.steptime` only.
"""

from kvcalc.engine.simulate.client import Client
from kvcalc.engine.simulate.metrics import BenchMetrics, Percentiles
from kvcalc.engine.simulate.run import (
    MAX_EVENTS,
    POLICY_ACCEPTED,
    PolicyRun,
    SimSettings,
    SimulationReport,
    Workload,
    _Blocks,
    estimate_events,
    parse_policies,
    simulate,
)

__all__ = [
    "MAX_EVENTS",
    "POLICY_ACCEPTED",
    "BenchMetrics",
    "Client",
    "Percentiles",
    "PolicyRun",
    "SimSettings",
    "SimulationReport",
    "Workload",
    "_Blocks",
    "estimate_events",
    "parse_policies",
    "simulate",
]
