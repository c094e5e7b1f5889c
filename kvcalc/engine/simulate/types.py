"""What a simulation is given and what it reports: the workload, the settings, each policy's run
and the report (plain frozen dataclasses; kvcalc.render draws them, to_json prints them)."""

from __future__ import annotations

import math
import re
from dataclasses import field
from typing import Any

from kvcalc._record import record
from kvcalc.engine.engines import TokenRatio
from kvcalc.engine.simulate.metrics import BenchMetrics, Percentiles
from kvcalc.engine.steptime import DEFAULTS, StepConstants
from kvcalc.engine.track import TrackRecord
from kvcalc.errors import KvcalcError

GiB = 2**30
POLICY_ACCEPTED = "prealloc, oracle or paged-B (B a block size in tokens, e.g. paged-16), comma-separated"
MAX_EVENTS = 50_000_000
"""A run whose estimated events exceed this is refused up front (a few minutes of work)."""
TIMELINE_POINTS = 2000
OVERLOAD_SHARE = 0.95
"""An open-loop run is overloaded when its steady window completes under this share of the rate
offered to it,"""
BACKLOG_SHARE = 0.05
"""or when its queue grows, over the arrival window, by more than this share of the requests that
arrive in it;"""
NOISE_SIGMAS = 2.0
"""and by more than this many standard deviations of a Poisson count: k requests counted in a
window are k +/- sqrt(k), so a steady window of k completions may fall short of the offered rate
by 2 / sqrt(k) of it (32% at 40 requests, 7% at 800) with nothing wrong, and a queue may end a
window 2 sqrt(k) longer than it began. Under that, a short run says it keeps up."""


def overload_margin(count: int, share: float) -> float:
    """The shortfall, as a share of ``count``, that a window of ``count`` requests can show by
    chance: the larger of ``share`` and NOISE_SIGMAS / sqrt(count)."""
    return max(share, NOISE_SIGMAS / math.sqrt(max(count, 1)))


@record(frozen=True)
class Workload:
    """Requests in arrival order: arrival times (s), prompt and output token counts."""

    arrivals: Any
    prompts: Any
    outputs: Any
    description: str
    arrival: str
    shared_prefix: int = 0
    prompt_cache_hit: float = 0.0
    """The share of each prompt already in the engine's prefix cache when it arrives (earlier turns
    of a conversation, a document sent again, a benchmark repeating its prompts): under paging its
    whole blocks are not recomputed, and they are held as the request's own."""
    silent: Any = None
    """Where given, a boolean per request: those whose stream carried no text, the model's end of sequence its
    first token (their output one token). The engine serves them as any other request; a client that takes
    the first token's time from the first chunk with text (vLLM's benchmark_serving.py of 2024, whose
    async_request_openai_completions keeps ttft at 0.0 until a chunk's text is not empty: vllm-project/vllm#6064)
    records a TTFT of 0 and 0 output tokens for them and counts them completed (bench_metrics). None: every
    request streams its text."""
    prompt_cache_hits: Any = None
    """Where given, that share one request at a time, in place of prompt_cache_hit: a benchmark run again on
    a server that served the same seeded prompts before finds those first requests' prompts whole in its
    prefix cache and the rest not."""


@record(frozen=True)
class SimSettings:
    max_len: int
    """The reservation of prealloc, and the longest request admitted."""
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    preempt: str = "recompute"
    swap_bytes: int = 4 * GiB
    constants: StepConstants = DEFAULTS
    """The step-time model's constants (defaults, --efficiency, or a calibration)."""
    concurrency: int | None = None
    """At most this many requests in flight (a benchmark client's --max-concurrency); None: open loop."""
    seed: int = 0
    """Seeds the request-path overhead's jitter."""
    chunked_prefill: bool | None = None
    """vLLM V0's --enable-chunked-prefill as the deployment set it; None: the release's default
    (Engine.schedule)."""
    mixed: bool = True
    """Prompt chunks ride beside the decodes (vLLM's chunked prefill), or run first as steps of their
    own while the decodes wait (SGLang; vLLM V0 without chunked prefill): Engine.schedule's answer,
    which simulate sets."""
    prefix_caching: bool = True
    """The engine keeps computed blocks in its prefix cache (vLLM V1's default, `--enable-prefix-caching`:
    engine/arg_utils.py, 0.8.2 and 0.11.0). Under chunk_blocks a request preempted mid-prefill or
    while decoding then finds its computed full blocks again when readmitted, less those others took
    meanwhile (V1 frees a request's blocks tail first, so its first blocks are evicted last:
    v1/core/single_type_kv_cache_manager.py free; it hashes its output's full blocks as they fill:
    v1/request.py append_output_token_ids, 0.11.0); off, it computes them again."""
    chunk_blocks: bool = False
    """Paged: a prompt takes the blocks of each chunk as it is scheduled, and is admitted when its
    first chunk fits (vLLM V1), rather than all its blocks at admission (Engine.prompt_blocks, which
    simulate sets)."""
    recv_interval: int = 1
    """SGLang's --scheduler-recv-interval: the scheduler takes in the requests that reached it only every this many
    decode steps, at once after a step with prompt work, and at once while idle (managers/scheduler_recv_skipper.py:
    a decode step weighs 1, an idle loop 1, any other forward mode 1,000 against the interval; read in 0.5.2, 0.5.3,
    0.5.5, 0.5.7, 0.5.9 and 0.5.14, its weights in environ.py from 0.5.7 and 0.5.23). 1: every step (vLLM, and
    SGLang's default)."""
    batch_wait_iters: int = 0
    """TensorRT-LLM's batch_wait_timeout_iters: while requests decode, the new prompts the scheduler picked wait up to this
    many iterations to be run together, until the iterations pass or their tokens reach batch_wait_ratio of the token
    budget (py_executor.py _waiting_requests; Engine.check_batch_wait). 0: they run at once (the default, and every other
    engine)."""
    batch_wait_ratio: float = 0.0
    """TensorRT-LLM's batch_wait_max_tokens_ratio: the waiting prompts run at once when their tokens and the decoding
    requests' one each reach this share of max_num_batched_tokens (its max_num_tokens)."""
    ignore_eos: bool = False
    """The client's requests ask the engine to ignore EOS (SGLang's bench_serving sends ignore_eos unless
    --disable-ignore-eos; vllm bench serve with --ignore-eos): their outputs are their max_tokens, as the replay takes
    them anyway. It changes only SGLang's admission with its radix cache off (prefix_caching False: TokenRatio)."""
    schedule_conservativeness: float = 1.0
    """SGLang's --schedule-conservativeness: its reserve's ratio starts at 0.7 x this (at most 1; TokenRatio.conservative)."""
    token_ratio: TokenRatio | None = None
    """SGLang's reserve for its running requests' output tokens at admission, and its retraction order
    (Engine.token_ratio, which simulate sets); None: a request is taken in when its prompt fits (vLLM)."""
    busy_ranks: int | None = None
    """With DP attention, the ranks that serve requests (None: every rank). A replay of fewer users
    than ranks (one user on one of four) runs one user a rank, but only that many ranks run prompt
    steps for the others to step beside (StepModel.lockstep_ranks)."""


@record(frozen=True)
class PolicyRun:
    policy: str
    block_size: int | None
    completed: int
    rejected: int
    """Requests no allocation of this policy can ever hold (longer than the pool): never admitted."""
    duration_s: float
    requests_per_s: float
    output_tokens_per_s: float
    kv_utilization: float
    """Bytes of tokens held / bytes reserved for them, time-weighted over the measured window."""
    pool_occupancy: float
    """Bytes reserved / the KV pool, time-weighted over the measured window."""
    mean_running: float
    max_running: int
    ttft_s: Percentiles
    tpot_s: Percentiles
    queue_s: Percentiles
    preemptions: int
    recomputed_tokens: int
    swapped_bytes: int
    steps: int
    events: int
    window_s: tuple[float, float]
    """The measured window: from the 10th to the 90th percentile completion."""
    bench: BenchMetrics | None = None
    """The whole run as a benchmark client reports it (first send to last completion)."""
    offered_per_s: float | None = None
    """The open-loop arrival rate offered; None for a burst or a concurrency limit."""
    overloaded: bool = False
    """Offered load above what this deployment serves: the steady window completes under 95% of it,
    or the queue grows by more than 5% of what arrives while requests arrive; either by more than
    a window of that many requests shows by chance (NOISE_SIGMAS)."""
    sustained_per_s: float | None = None
    """The rate it sustains: the steady window's completions, or, where lower, the rate it takes
    requests in while they arrive (offered less the queue's growth). None for a burst or a
    concurrency limit (no offered rate)."""
    timeline: list[tuple[float, int, int]] = field(default_factory=list)
    """(time s, bytes of tokens held, bytes reserved), at most 2,000 points."""


@record(frozen=True)
class SimulationReport:
    model: str
    gpu: str
    tp: int
    engine: str
    kv_dtype: str
    pool_bytes: int
    kv_bytes_per_token: int
    requests: int
    workload: str
    arrival: str
    mean_prompt: float
    mean_output: float
    shared_prefix: int
    max_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    constants: StepConstants
    preempt: str
    runs: list[PolicyRun]
    paged_over_prealloc: float | None
    """Throughput (requests/s) of the first paged policy over prealloc's, when both ran."""
    concurrency: int | None = None
    verdict: str = ""
    """The first line: whether the deployment keeps up with the load, and at what rate it saturates."""
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    inputs: dict[str, Any] = field(default_factory=dict)
    prompts_beside_decodes: bool = True
    """Prompt chunks ride in the decodes' steps (chunked prefill), or run first in steps of their own
    (SGLang; vLLM V0 with chunked prefill off): SimSettings.mixed as the run used it."""
    dp: int = 1
    """Data-parallel attention ranks: the runs are one rank's (every dp-th request)."""
    ep: int = 1
    pp: int = 1
    """Pipeline stages: the runs are one micro-batch's (every (dp x pp)-th request), pool_bytes its
    share of every stage's pool at kv_bytes_per_token over every layer."""
    track_record: TrackRecord | None = None
    """How far a simulation with the default constants has been from public measured runs of this kind
    (kvcalc.engine.track); None under a calibration or an efficiency given."""


def parse_policies(text: str) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for part in str(text).split(","):
        p = part.strip().lower()
        if p in ("prealloc", "oracle"):
            out.append((p, None))
            continue
        m = re.fullmatch(r"paged-([0-9]{1,6})", p)
        if m and 1 <= int(m.group(1)) <= 65536:
            out.append((p, int(m.group(1))))
            continue
        raise KvcalcError(f"unknown policy {part.strip()[:40]!r}", "policies", POLICY_ACCEPTED)
    if not out or len(out) > 8 or len(set(out)) != len(out):
        raise KvcalcError("give one to eight different policies", "policies", POLICY_ACCEPTED)
    return out
