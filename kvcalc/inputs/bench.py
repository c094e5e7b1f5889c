"""Benchmark results people paste: what a serving benchmark measured, run by run (parsing only).

Read, by their labels (case and spacing ignored):
- ``vllm bench serve`` / ``benchmark_serving.py``: the printed "Serving Benchmark Result" block
  (vllm/benchmarks/serve.py, 0.6 to 0.33) or its ``--save-result`` JSON (one object, a list, or
  one per line with ``--append-result``);
- SGLang's ``bench_serving``: the same block with its own rows (E2E latency, concurrency) or its
  JSON Lines (bare ``Infinity`` accepted);
- NVIDIA genai-perf: its console table (the avg column; its "Inter token latency" is what vLLM
  calls TPOT, (latency - TTFT) / (output - 1)) or profile_export_genai_perf.json;
- ``kvcalc measure --json``: one timed paged decode step on a GPU and the bytes it read.

A text may hold several runs; each is located by file and line. Times are stored in seconds.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import field, replace
from typing import Any

from kvcalc import files
from kvcalc._record import record
from kvcalc.errors import KvcalcError

ACCEPTED = (
    "vllm bench serve's result block or --save-result JSON, SGLang bench_serving's block or JSON Lines, "
    "or genai-perf's table or profile_export_genai_perf.json"
)
LIMIT = 64 * 2**20


@record(frozen=True)
class BenchRun:
    """One measured run. None: the result does not say."""

    where: str
    tool: str
    completed: int | None = None
    duration_s: float | None = None
    mean_input: float | None = None
    mean_output: float | None = None
    request_throughput_per_s: float | None = None
    output_throughput_tok_per_s: float | None = None
    mean_ttft_s: float | None = None
    median_ttft_s: float | None = None
    mean_tpot_s: float | None = None
    median_tpot_s: float | None = None
    mean_itl_s: float | None = None
    max_concurrency: int | None = None
    request_rate_per_s: float | None = None
    """inf for every request at once."""
    model: str | None = None
    extra: dict[str, float] = field(default_factory=dict)
    kernel_bytes: int | None = None
    """For a kvcalc measure result: the bytes its timed decode step read."""
    kernel_s: float | None = None
    """For a kvcalc measure result: the measured time of that step."""
    silent_share: float = 0.0
    """The share of the completed requests whose stream carried no text, where a --save-result JSON's ttfts and
    output_lens say so (silent_requests): its mean TTFT counts them as 0, so the mean over the requests that
    streamed text is mean_ttft_s / (1 - share)."""
    datasheet_bytes_per_s: float | None = None
    device: str | None = None
    """The device a kvcalc measure result ran on (its device_name; 'cpu' for a CPU)."""


# label (lower case, single spaces, no trailing colon) -> (field, scale)
TEXT_LABELS: dict[str, tuple[str, float]] = {
    "successful requests": ("completed", 1),
    "benchmark duration (s)": ("duration_s", 1),
    "total input tokens": ("total_input", 1),
    "total generated tokens": ("total_output", 1),
    "request throughput (req/s)": ("request_throughput_per_s", 1),
    "output token throughput (tok/s)": ("output_throughput_tok_per_s", 1),
    "mean ttft (ms)": ("mean_ttft_s", 1e-3),
    "median ttft (ms)": ("median_ttft_s", 1e-3),
    "mean tpot (ms)": ("mean_tpot_s", 1e-3),
    "median tpot (ms)": ("median_tpot_s", 1e-3),
    "mean itl (ms)": ("mean_itl_s", 1e-3),
    "maximum request concurrency": ("max_concurrency", 1),
    "max request concurrency": ("max_concurrency", 1),
    "max reqeuest concurrency": ("max_concurrency", 1),  # SGLang 0.4.0.post2's spelling
    "request rate configured (rps)": ("request_rate_per_s", 1),
    "traffic request rate": ("request_rate_per_s", 1),
}
JSON_KEYS: dict[str, tuple[str, float]] = {
    "completed": ("completed", 1),
    "duration": ("duration_s", 1),
    "total_input_tokens": ("total_input", 1),
    "total_output_tokens": ("total_output", 1),
    "request_throughput": ("request_throughput_per_s", 1),
    "output_throughput": ("output_throughput_tok_per_s", 1),
    "mean_ttft_ms": ("mean_ttft_s", 1e-3),
    "median_ttft_ms": ("median_ttft_s", 1e-3),
    "mean_tpot_ms": ("mean_tpot_s", 1e-3),
    "median_tpot_ms": ("median_tpot_s", 1e-3),
    "mean_itl_ms": ("mean_itl_s", 1e-3),
    "max_concurrency": ("max_concurrency", 1),
    "request_rate": ("request_rate_per_s", 1),
}
GENAI_ROWS: dict[str, str] = {
    "time to first token (ms)": "mean_ttft_s",
    "inter token latency (ms)": "mean_tpot_s",
    "output sequence length": "mean_output",
    "input sequence length": "mean_input",
    "output token throughput (per sec)": "output_throughput_tok_per_s",
    "request throughput (per sec)": "request_throughput_per_s",
}
GENAI_JSON: dict[str, tuple[str, float]] = {
    "time_to_first_token": ("mean_ttft_s", 1e-3),
    "inter_token_latency": ("mean_tpot_s", 1e-3),
    "output_sequence_length": ("mean_output", 1),
    "input_sequence_length": ("mean_input", 1),
    "output_token_throughput": ("output_throughput_tok_per_s", 1),
    "request_throughput": ("request_throughput_per_s", 1),
}
BOUNDS = (
    ("completed", 2**40, "a count of requests up to 2^40"),
    ("max_concurrency", 2**40, "a count of requests up to 2^40"),
    ("mean_input", 2**34, "a mean prompt of at most 2^34 tokens"),
    ("mean_output", 2**34, "a mean output of at most 2^34 tokens"),
    ("duration_s", 1e9, "a duration of at most 10^9 s"),
    ("request_throughput_per_s", 1e9, "a request throughput of at most 10^9 a second"),
    ("output_throughput_tok_per_s", 1e12, "an output throughput of at most 10^12 tokens a second"),
    ("mean_ttft_s", 1e6, "a TTFT of at most 10^6 s"),
    ("median_ttft_s", 1e6, "a TTFT of at most 10^6 s"),
    ("mean_tpot_s", 1e6, "a TPOT of at most 10^6 s"),
    ("median_tpot_s", 1e6, "a TPOT of at most 10^6 s"),
    ("mean_itl_s", 1e6, "an ITL of at most 10^6 s"),
)
"""What a measured run can say: past these it is a corrupt file, not a benchmark."""
HEADER = re.compile(r"=+\s*serving benchmark result\s*=+", re.I)
ROW = re.compile(r"^\s*([A-Za-z][^:]{2,80}?)\s*:\s*(\S+)\s*$")


def read_bench(path: str) -> list[BenchRun]:
    return parse_bench(files.read_text(path, LIMIT, ACCEPTED), path)


def _number(v: Any, where: str, label: str) -> float:
    if isinstance(v, bool):
        raise KvcalcError(f"{label} is {v!r}", where, "a number")
    if isinstance(v, (int, float)):
        x = float(v)
    else:
        s = str(v).strip().lower().replace(",", "")
        if s in ("none", "not set", "null", "n/a"):
            return math.nan
        try:
            x = math.inf if s in ("inf", "infinity") else float(s) if len(s) < 40 else math.nan
        except ValueError:
            raise KvcalcError(f"{label} is {str(v)[:40]!r}, not a number", where, "a number") from None
        if math.isnan(x):
            raise KvcalcError(f"{label} is {str(v)[:40]!r}, not a number", where, "a number")
    if x < 0 or (math.isnan(x) and not isinstance(v, str)):
        raise KvcalcError(f"{label} is {x!r}", where, "a number at least 0")
    if math.isinf(x) and "rate" not in label.lower():
        raise KvcalcError(f"{label} is infinite", where, "a finite number")
    return x


def _build(vals: dict[str, float], where: str, tool: str, model: str | None = None) -> BenchRun:
    done = vals.get("completed")
    kw: dict[str, Any] = {}
    for k, v in vals.items():
        if k in ("total_input", "total_output") or math.isnan(v):
            continue
        if k in ("completed", "max_concurrency"):
            if math.isinf(v) or v != int(v):
                raise KvcalcError(f"{k} is {v!r}", where, "a whole number")
            kw[k] = int(v)
        else:
            kw[k] = v
    if done:
        if "total_input" in vals and "mean_input" not in kw:
            kw["mean_input"] = vals["total_input"] / done
        if "total_output" in vals and "mean_output" not in kw:
            kw["mean_output"] = vals["total_output"] / done
    if kw.get("max_concurrency") == 0:
        kw["max_concurrency"] = None
    for k, hi, what in BOUNDS:
        got = kw.get(k)
        if got is not None and got > hi:
            raise KvcalcError(f"{k} is {got:.4g}", where, what)
    return BenchRun(where=where, tool=tool, model=model, **kw)


def silent_requests(ttfts: Any, outputs: Any) -> list[bool] | None:
    """Which requests of a --save-result JSON streamed no text, from its ``ttfts`` and ``output_lens``: a recorded
    TTFT of 0.0 with 0 output tokens, as benchmark_serving.py of 2024 recorded a request whose one token was the end
    of sequence (it took the first token's time from the first chunk with text: vllm-project/vllm#6064; later
    clients time the first chunk and record no such zero). None where the lists are not two of one length, or none
    is such."""
    if not isinstance(ttfts, list) or not isinstance(outputs, list) or len(ttfts) != len(outputs) or not outputs:
        return None
    quiet = [t == 0 and o == 0 for t, o in zip(ttfts, outputs, strict=True)]
    return quiet if any(quiet) else None


def parse_bench(text: str, where: str) -> list[BenchRun]:
    """Every run a pasted result holds, in order; one clear error if it holds none."""
    s = text.lstrip("\ufeff")
    stripped = s.strip()
    if not stripped:
        raise KvcalcError("empty", where, ACCEPTED)
    if stripped[0] in "[{":
        return _parse_json(stripped, where)
    if "│" in s or "┃" in s or "|" in s and "Statistic" in s:
        runs = _parse_genai_table(s, where)
        if runs:
            return runs
    return _parse_blocks(s, where)


def _parse_blocks(text: str, where: str) -> list[BenchRun]:
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if HEADER.search(ln)]
    if not starts:
        raise KvcalcError("no 'Serving Benchmark Result' block", where, ACCEPTED)
    runs = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        vals: dict[str, float] = {}
        tool = "vllm"
        # Settings printed just above the block (vLLM before 0.10.1) belong to it too.
        lo = starts[k - 1] + 1 if k else 0
        for i in range(max(lo, start - 6), end):
            m = ROW.match(lines[i])
            if not m:
                continue
            label = " ".join(m.group(1).lower().split())
            if label == "backend":
                tool = "sglang" if "sglang" in m.group(2).lower() else tool
                continue
            if label in ("concurrency", "mean e2e latency (ms)"):
                tool = "sglang" if label == "concurrency" else tool
            key = TEXT_LABELS.get(label)
            if key is None or (i < start and key[0] not in ("max_concurrency", "request_rate_per_s")):
                continue
            vals[key[0]] = _number(m.group(2), f"{where}, line {i + 1}", m.group(1).strip()) * key[1]
        if "completed" not in vals and "mean_tpot_s" not in vals:
            raise KvcalcError("a result block with no figures", f"{where}, line {start + 1}", ACCEPTED)
        runs.append(_build(vals, f"{where}, line {start + 1}", tool))
    return runs


def _parse_json(text: str, where: str) -> list[BenchRun]:
    docs: list[Any] = []
    try:
        doc = json.loads(text, parse_constant=lambda c: math.inf if c == "Infinity" else math.nan)
        docs = doc if isinstance(doc, list) else [doc]
    except (json.JSONDecodeError, RecursionError, ValueError):
        # JSON Lines (one object a line; SGLang may break an object over lines).
        dec = json.JSONDecoder(parse_constant=lambda c: math.inf if c == "Infinity" else math.nan)
        pos, n = 0, len(text)
        while pos < n:
            while pos < n and text[pos].isspace():
                pos += 1
            if pos >= n:
                break
            try:
                obj, pos = dec.raw_decode(text, pos)
            except (json.JSONDecodeError, RecursionError, ValueError) as e:
                line = text.count("\n", 0, pos) + 1
                raise KvcalcError(f"not JSON ({str(e)[:60]})", f"{where}, line {line}", ACCEPTED) from None
            docs.append(obj)
    runs = []
    for k, d in enumerate(docs):
        at = f"{where}, run {k + 1}"
        if not isinstance(d, dict):
            raise KvcalcError("a result is not an object", at, ACCEPTED)
        if "t_measured_s" in d and "bytes" in d and "kernel" in d:
            runs.append(_measure(d, at))
            continue
        if any(isinstance(d.get(key), dict) for key in GENAI_JSON):
            vals = {}
            for key, (name, scale) in GENAI_JSON.items():
                v = d.get(key)
                avg = v.get("avg") if isinstance(v, dict) else None
                if avg is not None:
                    vals[name] = _number(avg, at, key) * scale
            runs.append(_build(vals, at, "genai-perf"))
            continue
        vals = {}
        for key, (name, scale) in JSON_KEYS.items():
            if key in d and d[key] is not None:
                vals[name] = _number(d[key], at, key) * scale
        if not vals:
            raise KvcalcError("no benchmark figures (completed, mean_tpot_ms, ...)", at, ACCEPTED)
        model = d.get("model_id") or d.get("model") or d.get("tokenizer_id")
        tool = "sglang" if str(d.get("backend", "")).startswith("sglang") and "concurrency" in d else "vllm"
        run = _build(vals, at, tool, str(model)[:200] if isinstance(model, str) else None)
        quiet = silent_requests(d.get("ttfts"), d.get("output_lens"))
        if quiet is not None:
            run = replace(run, silent_share=sum(quiet) / len(quiet))
        runs.append(run)
    if not runs:
        raise KvcalcError("no runs", where, ACCEPTED)
    return runs


def _measure(d: dict[str, Any], at: str) -> BenchRun:
    """A ``kvcalc measure --json`` result: one timed decode step and the bytes it read."""
    t, b = d.get("t_measured_s"), d.get("bytes")
    if t is None:
        raise KvcalcError("this measure result has no measured time (its kernel failed)", at, "a measure run that timed")
    secs = _number(t, at, "t_measured_s")
    nbytes = _number(b, at, "bytes")
    if not secs or not nbytes:
        raise KvcalcError("a measured time or byte count of 0", at, "a measure run that timed")
    ds = d.get("datasheet_bytes_per_s")
    device = d.get("device_name") if d.get("device") != "cpu" else "cpu"
    return BenchRun(
        where=at,
        tool="kvcalc-measure",
        model=str(d.get("model"))[:200] if d.get("model") else None,
        kernel_bytes=int(nbytes),
        kernel_s=secs,
        datasheet_bytes_per_s=_number(ds, at, "datasheet_bytes_per_s") if ds is not None else None,
        device=str(device)[:200] if device else None,
    )


def _parse_genai_table(text: str, where: str) -> list[BenchRun]:
    runs = []
    vals: dict[str, float] = {}
    first = 0
    for i, ln in enumerate(text.splitlines()):
        cells = [c.strip() for c in re.split(r"[│┃|]", ln) if c.strip()]
        if len(cells) < 2:
            continue
        label = " ".join(cells[0].lower().split())
        if label == "statistic":
            if vals:
                runs.append(_build(vals, f"{where}, line {first}", "genai-perf"))
            vals, first = {}, i + 1
            continue
        name = GENAI_ROWS.get(label)
        if name:
            scale = 1e-3 if "(ms)" in label else 1.0
            vals[name] = _number(cells[1], f"{where}, line {i + 1}", cells[0]) * scale
    if vals:
        runs.append(_build(vals, f"{where}, line {first}", "genai-perf"))
    return runs
