"""How far kvcalc's step model with its default constants has been from public measured serving
runs of the same kind: its track record, printed beside a realistic estimate so that a user can
see how much to trust it.

The figures come from docs/accuracy.md's serving section: every public ``vllm bench serve`` /
``bench_serving`` / genai-perf run in tests/serving/cases.yaml, replayed through ``simulate`` as the
benchmark ran it with the default constants. ``tests/test_serving_accuracy.py`` writes
:mod:`kvcalc.engine.track_data` from that replay and fails when the two differ, so the record cannot
go stale. Nothing here changes a prediction: the record is what kvcalc is judged against, never a
correction fitted to it (a calibration from one's own runs is ``kvcalc calibrate``).

Runs are grouped by two things that separate kvcalc's errors on that corpus: whether the model
routes tokens to experts (mixture of experts) and how many GPUs one replica spans (TP x PP x
data-parallel attention ranks: 1, 2 to 4, more than 4). A group with fewer than
:data:`MIN_RUNS` runs of a metric says how few there are instead of a median.

``fit`` has its own record (:class:`MemoryRecord`): its KV pool estimate against the public start-up
logs of tests/logs/real, by engine family and one GPU or more, which ``tests/test_real_logs.py``
writes to :mod:`kvcalc.engine.track_logs_data` the same way.
"""

from __future__ import annotations

import math
from dataclasses import field, replace
from typing import Any

from kvcalc._record import record
from kvcalc.engine.steptime import DEFAULTS, StepConstants, defaults_for
from kvcalc.engine.track_data import CORPUS_RUNS, GROUPS
from kvcalc.engine.track_logs_data import LOG_GROUPS, LOGS

MIN_RUNS = 5
"""Fewer runs than this of a metric in a group: the record gives their count, not their spread."""

METRIC_NAMES = {
    "mean_tpot": "mean TPOT",
    "output_throughput": "output throughput",
    "mean_ttft": "mean TTFT",
}


@record(frozen=True)
class MetricRecord:
    """One metric over a group's runs, as ``kvcalc / measured - 1``: negative where kvcalc's figure
    was below the measured one (a TPOT too short, a throughput too low)."""

    metric: str
    runs: int
    median_error: float | None
    """None when the group has fewer than MIN_RUNS runs of this metric."""
    lower_quartile_error: float | None = None
    upper_quartile_error: float | None = None
    estimate: float | None = None
    """This report's own figure for the metric (seconds for TPOT and TTFT, tokens/s for throughput),
    where it has one."""
    measured_low: float | None = None
    """What a measurement would be were kvcalc off here as on the middle half of the group's runs:
    estimate / (1 + error) at the quartiles, the lower of the two."""
    measured_high: float | None = None

    def middle_half(self) -> str:
        """The middle half of the errors in words: '23% to 48% below' ('' below MIN_RUNS runs)."""
        if self.lower_quartile_error is None or self.upper_quartile_error is None:
            return ""
        return _span(self.lower_quartile_error, self.upper_quartile_error)

    def describe(self, subject: str = "this estimate") -> str:
        name = METRIC_NAMES.get(self.metric, self.metric)
        if self.median_error is None or self.lower_quartile_error is None or self.upper_quartile_error is None:
            return f"{name}: {self.runs} run{'s' if self.runs != 1 else ''}, too few to say"
        text = f"{name}: {_signed(self.median_error)} measured at the median; middle half {self.middle_half()} ({self.runs} runs)"
        if self.estimate is not None and self.measured_low is not None and self.measured_high is not None:
            text += (
                f"; off by as much, the {_figure(self.metric, self.estimate)} of {subject} would measure "
                f"{_figure(self.metric, self.measured_low, unit=False)} to {_figure(self.metric, self.measured_high)}"
            )
        return text


def _figure(metric: str, value: float, unit: bool = True) -> str:
    if metric == "output_throughput":
        return f"{value:,.0f}" + (" tokens/s" if unit else "")
    return f"{value * 1e3:,.1f}" + (" ms" if unit else "")


@record(frozen=True)
class TrackRecord:
    kind: str
    """The group, in words: 'mixture-of-experts models on more than 4 GPUs a replica'."""
    group: str
    """The group's key: '<dense|moe>/<1|2-4|5+>'."""
    metrics: list[MetricRecord] = field(default_factory=list)
    subject: str = "this estimate"
    """Whose figures the metrics' estimates are: 'this step', 'the paged-16 run', 'the best deployment'."""
    corpus_runs: int = CORPUS_RUNS
    source: str = (
        "docs/accuracy.md, serving section: public measured vllm bench serve, bench_serving and genai-perf runs "
        "replayed with the default step-time constants"
    )

    def lines(self) -> list[str]:
        """What the record says, a line each: whose runs, then each metric."""
        return [
            f"With its default constants, on public measured runs of {self.kind} (docs/accuracy.md: "
            f"{self.corpus_runs} runs in all), kvcalc's figure was:",
            *(m.describe(self.subject) for m in self.metrics),
        ]


def _pct(x: float) -> str:
    return f"{abs(x):.0%}"


def _signed(x: float) -> str:
    word = "below" if x < 0 else "above"
    return f"{_pct(x)} {word}" if _pct(x) != "0%" else "within 0.5% of"


def _span(lo: float, hi: float) -> str:
    if lo < 0 and hi < 0:
        return f"{_pct(hi)} to {_pct(lo)} below"
    if lo >= 0 and hi >= 0:
        return f"{_pct(lo)} to {_pct(hi)} above"
    return f"{_pct(lo)} below to {_pct(hi)} above"


def group_of(moe: bool, gpus: int) -> tuple[str, str]:
    """The group key and its words for a model kind and the GPUs of one replica."""
    size = "1" if gpus <= 1 else "2-4" if gpus <= 4 else "5+"
    words = {"1": "one GPU", "2-4": "2 to 4 GPUs a replica", "5+": "more than 4 GPUs a replica"}[size]
    kind = "mixture-of-experts models" if moe else "dense models"
    return f"{'moe' if moe else 'dense'}/{size}", f"{kind} on {words}"


def track_record(
    moe: bool,
    gpus: int,
    metrics: tuple[str, ...] = ("mean_tpot", "output_throughput"),
    estimates: dict[str, float] | None = None,
    subject: str = "this estimate",
) -> TrackRecord:
    """kvcalc's record with its default constants on public runs of this kind (model kind, GPUs a
    replica), for the metrics asked, in that order; with ``estimates`` (a report's own figures by
    metric), what each would measure were kvcalc off as on the middle half of those runs."""
    key, words = group_of(moe, gpus)
    stats = GROUPS.get(key, {})
    out = []
    for m in metrics:
        runs, median, lo, hi = stats.get(m, (0, None, None, None))
        if runs < MIN_RUNS or median is None or lo is None or hi is None:
            out.append(MetricRecord(m, runs, None))
            continue
        est = (estimates or {}).get(m)
        # A figure that is not a finite positive one (a deployment with no steady state: an unbounded
        # TPOT) has nothing to carry the record to.
        if est is None or not 0 < est < math.inf or lo <= -1 or hi <= -1:
            out.append(MetricRecord(m, runs, median, lo, hi))
            continue
        a, b = est / (1 + hi), est / (1 + lo)
        out.append(MetricRecord(m, runs, median, lo, hi, est, min(a, b), max(a, b)))
    return TrackRecord(words, key, out, subject)


def for_estimate(
    moe: bool,
    gpus: int,
    constants: StepConstants | None,
    engine: Any = None,
    metrics: tuple[str, ...] = ("mean_tpot", "output_throughput"),
    estimates: dict[str, float] | None = None,
    subject: str = "this estimate",
) -> TrackRecord | None:
    """The record to print beside an estimate made with ``constants``: None unless they are the
    default constants (DEFAULTS, or the release's own defaults), since the record says nothing of a
    calibration or of an efficiency someone chose."""
    if constants is None:
        return None
    mine = replace(constants, origin="")
    if mine != replace(DEFAULTS, origin="") and mine != replace(defaults_for(engine), origin=""):
        return None
    return track_record(moe, gpus, metrics, estimates, subject)


# ---- memory: kvcalc fit's estimate against public start-up logs -----------------------------------------


@record(frozen=True)
class MemoryRecord:
    """How far fit's KV pool estimate with its defaults has been from public start-up logs of one kind
    (tests/logs/real: those that state their settings or were held out), each error ``kvcalc / log - 1``
    on the log's headline figure (its tokens, blocks or available KV memory)."""

    kind: str
    """The group in words: 'vLLM V1 (0.8 and later) on one GPU'."""
    group: str
    """The group's key: '<vllm-v0|vllm-v1|sglang|trtllm>/<1|2+>'."""
    logs: int
    within_10: int
    """Logs of the group whose headline figure the estimate put within 10%."""
    median_error: float | None
    """None when the group has fewer than MIN_RUNS logs."""
    lower_quartile_error: float | None = None
    upper_quartile_error: float | None = None
    corpus_logs: int = 0

    def lines(self) -> list[str]:
        head = (
            f"With its defaults, on public start-up logs of {self.kind} (docs/accuracy.md: {self.corpus_logs} logs "
            "in all), kvcalc's KV pool estimate was:"
        )
        if self.median_error is None or self.lower_quartile_error is None or self.upper_quartile_error is None:
            return [head, f"{self.logs} log{'s' if self.logs != 1 else ''}, too few to say"]
        return [
            head,
            f"within 10% of the logged figure on {self.within_10} of {self.logs}",
            f"at the median, {_signed(self.median_error)} the logged figure; middle half "
            f"{_span(self.lower_quartile_error, self.upper_quartile_error)}",
        ]


def memory_group(engine: Any, gpus: int) -> tuple[str, str] | None:
    """The group key and its words for an engine record and the GPUs of one replica; None for the
    engines that are not a serving engine's release (hf, plain)."""
    family = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}.get(engine.name)
    if family is None:
        return None
    key = engine.name
    if engine.name == "vllm":
        v1 = engine.non_torch_rule == "v1"
        key += "-v1" if v1 else "-v0"
        family += " V1 (0.8 and later)" if v1 else " V0 (to 0.7)"
    size = "1" if gpus <= 1 else "2+"
    return f"{key}/{size}", f"{family} on {'one GPU' if size == '1' else 'more than one GPU'}"


def memory_record(engine: Any, gpus: int) -> MemoryRecord | None:
    """fit's record on public start-up logs of this engine family and GPU count."""
    grp = memory_group(engine, gpus)
    if grp is None:
        return None
    key, words = grp
    n, within, median, lo, hi = LOG_GROUPS.get(key, (0, 0, None, None, None))
    if n < MIN_RUNS:
        return MemoryRecord(words, key, n, within, None, corpus_logs=LOGS)
    return MemoryRecord(words, key, n, within, median, lo, hi, corpus_logs=LOGS)
