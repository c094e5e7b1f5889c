"""Request-length workloads: distributions typed on the command line, and trace files.

A workload is two arrays: each request's total length (prompt + output tokens) and its lifetime
in decode steps (its output tokens, the time it holds its cache).
"""

from __future__ import annotations

import math
import re
from typing import Any

from kvcalc.errors import KvcalcError
from kvcalc.units import count_of

ACCEPTED = (
    "N (a fixed length), fixed:N, uniform:MIN..MAX, lognormal:median=M,sigma=S (token counts such as 600 or 4k), or --trace FILE"
)
TRACE_ACCEPTED = (
    "JSON Lines or CSV with a prompt and an output token count per request "
    "(prompt_tokens/output_tokens, input_tokens/output_tokens, prompt_len/output_len or prompt/output), "
    "or a vllm bench serve --save-result JSON (its input_lens and output_lens)"
)
PROMPT_KEYS = ("prompt_tokens", "input_tokens", "prompt_len", "input_len", "prompt")
OUTPUT_KEYS = ("output_tokens", "completion_tokens", "output_len", "generated_tokens", "output")


def _tokens(v: str, where: str) -> int:
    from kvcalc.units import parse_tokens

    return parse_tokens(v, where)


def fixed_tokens(spec: str | None, where: str = "lengths") -> int | None:
    """The length of a fixed-length spec (N or fixed:N), else None (a distribution, or no spec)."""
    if spec is None:
        return None
    s = str(spec).strip()
    kind, _, arg = s.partition(":")
    if ":" not in s and s and s[0].isdigit():
        return _tokens(s, where)
    if kind.strip().lower() == "fixed" and arg:
        return _tokens(arg, where)
    return None


def check_fixed_pair(prompt: str | None, output: str | None, limit: int, limit_words: str) -> None:
    """Refuse a fixed prompt and a fixed output that together pass ``limit`` tokens: every request
    would be longer than the server takes (vLLM's OpenAI server answers a prompt + max_tokens over
    max_model_len with an error, not a shorter output: vllm/entrypoints/openai/serving_engine.py
    _validate_input, 0.6.6 and 0.11.0), where a distribution's longest draws are cut at it.
    ``limit_words`` says what the limit is."""
    p, o = fixed_tokens(prompt, "--prompt"), fixed_tokens(output, "--output")
    if p is not None and o is not None and p + o > limit:
        raise KvcalcError(
            f"a {p:,}-token prompt and a {o:,}-token output make {p + o:,} tokens, over {limit_words}",
            "--prompt/--output",
            f"a prompt and an output of at most {limit:,} tokens together",
        )


def sample_lengths(spec: str, n: int, seed: int, max_len: int, where: str = "lengths", limit: str | None = None):
    """(lengths, lifetimes, description, notes) for ``n`` requests of a typed distribution, none
    longer than ``max_len``; ``limit`` says what that is in an error (default: --max-len)."""
    import numpy as np

    s = str(spec).strip()
    kind, _, arg = s.partition(":")
    kind = kind.strip().lower()
    rng = np.random.default_rng(seed)
    notes = []
    lim = limit or f"--max-len {max_len:,}"
    n_tok = fixed_tokens(s, where)  # a plain token count is a fixed length, as plan takes it
    if n_tok is not None:
        if n_tok > max_len:
            raise KvcalcError(f"fixed length {n_tok:,} exceeds {lim}", where, f"a length up to {lim}")
        lengths = np.full(n, n_tok, dtype=np.int64)
    elif kind == "uniform" and ".." in arg:
        lo_s, hi_s = arg.split("..", 1)
        lo, hi = _tokens(lo_s, where), _tokens(hi_s, where)
        if hi < lo:
            raise KvcalcError(f"uniform range {arg!r} runs backwards", where, "uniform:MIN..MAX with MIN <= MAX")
        if hi > max_len:
            raise KvcalcError(f"uniform range reaches {hi:,}, over {lim}", where, f"a range within {lim}")
        lengths = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64)
    elif kind == "lognormal" and arg:
        params = {}
        for part in arg.split(","):
            k, eq, v = part.partition("=")
            if not eq or k.strip() not in ("median", "sigma") or k.strip() in params:
                raise KvcalcError(f"cannot read {part!r} in {spec!r}", where, "lognormal:median=600,sigma=1.0")
            params[k.strip()] = v.strip()
        if set(params) != {"median", "sigma"}:
            raise KvcalcError(f"lognormal needs median and sigma, got {spec!r}", where, "lognormal:median=600,sigma=1.0")
        median = _tokens(params["median"], where)
        try:
            sigma = float(params["sigma"])
        except ValueError:
            raise KvcalcError(f"sigma {params['sigma']!r} is not a number", where, "a sigma such as 1.0") from None
        if not (0 <= sigma <= 10) or math.isnan(sigma):
            raise KvcalcError(f"sigma {sigma} is out of range", where, "a sigma between 0 and 10")
        if median > max_len:
            raise KvcalcError(f"median {median:,} exceeds {lim}", where, f"a median within {lim}")
        raw = np.rint(rng.lognormal(mean=math.log(median), sigma=sigma, size=n))
        capped = int((raw > max_len).sum())
        lengths = np.clip(raw, 1, max_len).astype(np.int64)
        if capped:
            notes.append(
                f"{capped:,} of {n:,} sampled lengths ({capped / n:.1%}) exceeded --max-len and were capped at {max_len:,}"
            )
    else:
        raise KvcalcError(f"cannot read the workload {spec!r}", where, ACCEPTED)
    # Without a prompt/output split, a request holds its cache for a time proportional to its length.
    return lengths, lengths.astype(np.float64), s, notes


def length_summary(sample: Any, percentile: float) -> tuple[int, int, float]:
    """(mean, tail, cv2) of sampled lengths as plan's Traffic takes them: the mean rounded to a whole
    token (at least 1), the length at ``percentile`` (numpy's linear interpolation, truncated), and
    the squared coefficient of variation, variance / mean^2 (Traffic.prompt_cv2)."""
    import numpy as np

    mean = float(np.mean(sample))
    return max(int(round(mean)), 1), int(np.percentile(sample, percentile)), float(np.var(sample) / mean**2)


def read_trace(text: str, where: str, max_len: int, is_csv: bool):
    """(lengths, lifetimes, description, notes) from a trace of prompt and output token counts."""
    import numpy as np

    rows = trace_rows(text, where, max_len, is_csv)
    arr = np.array([(p, o) for p, o, _ in rows], dtype=np.int64)
    lengths = arr[:, 0] + arr[:, 1]
    return lengths, (arr[:, 1] + 1).astype(np.float64), f"trace {where} ({count_of(len(rows), 'request')})", []


ARRIVAL_KEYS = ("arrival_time", "arrival", "timestamp", "time")


def trace_rows(
    text: str, where: str, max_len: int, is_csv: bool, result: dict[str, Any] | None = None
) -> list[tuple[int, int, float | None]]:
    """(prompt, output, arrival seconds or None) per request of a JSON Lines or CSV trace, or of a saved bench
    result: ``result``, the text as :func:`bench_result_object` parsed it, where the caller already has it."""
    import csv
    import io
    import json

    rows: list[tuple[int, int, float | None]] = []
    unit = "line"

    def take(rec, line_no):
        if not isinstance(rec, dict):
            raise KvcalcError("a record is not an object", f"{where}, {unit} {line_no}", TRACE_ACCEPTED)
        p = next((rec[k] for k in PROMPT_KEYS if k in rec), None)
        o = next((rec[k] for k in OUTPUT_KEYS if k in rec), None)
        if p is None or o is None:
            raise KvcalcError("no prompt or output token count", f"{where}, {unit} {line_no}", TRACE_ACCEPTED)
        try:
            p_i, o_i = int(str(p).strip()), int(str(o).strip())
        except (TypeError, ValueError):
            raise KvcalcError(
                f"token counts must be whole numbers, got {p!r} and {o!r}", f"{where}, {unit} {line_no}", TRACE_ACCEPTED
            ) from None
        if p_i < 0 or o_i < 0 or p_i + o_i == 0:
            raise KvcalcError(f"token counts must be positive, got {p_i} and {o_i}", f"{where}, {unit} {line_no}", TRACE_ACCEPTED)
        if p_i + o_i > max_len:
            raise KvcalcError(
                f"request of {p_i + o_i:,} tokens exceeds --max-len {max_len:,}",
                f"{where}, {unit} {line_no}",
                "a --max-len at least the longest request",
            )
        t = next((rec[k] for k in ARRIVAL_KEYS if k in rec and rec[k] not in (None, "")), None)
        t_f: float | None = None
        if t is not None:
            try:
                t_f = float(str(t).strip())
            except ValueError:
                t_f = math.nan
            if not math.isfinite(t_f) or t_f < 0 or t_f > 1e9:
                raise KvcalcError(
                    f"arrival time {str(t)[:40]!r} is not a time in seconds",
                    f"{where}, {unit} {line_no}",
                    "seconds from 0 to 1e9",
                )
        rows.append((p_i, o_i, t_f))

    if is_csv:
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames:
            raise KvcalcError("the trace is empty", where, TRACE_ACCEPTED)
        try:
            for rec in reader:
                take({k.strip().lower(): v for k, v in rec.items() if k}, reader.line_num)
        except csv.Error as e:
            raise KvcalcError(f"malformed CSV: {e}", f"{where}, line {reader.line_num}", TRACE_ACCEPTED) from None
    elif (pairs := bench_result_lengths(bench_result_object(text) if result is None else result, where)) is not None:
        # vllm bench serve's --save-result JSON: one object whose input_lens and output_lens list each
        # request's prompt and output tokens as the client counted them (vllm/benchmarks/serve.py, 0.11.0;
        # benchmarks/benchmark_serving.py before), with no send times of its own.
        unit = "request"
        for no, (p, o) in enumerate(pairs, 1):
            take({"prompt_tokens": p, "output_tokens": o}, no)
    else:
        for no, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (ValueError, RecursionError) as e:
                # ValueError: malformed, or an integer of more than 4,300 digits.
                raise KvcalcError(f"malformed JSON: {getattr(e, 'msg', e)}", f"{where}, line {no}", TRACE_ACCEPTED) from None
            take(rec, no)
    if not rows:
        raise KvcalcError("the trace has no requests", where, TRACE_ACCEPTED)
    if len({t is None for _, _, t in rows}) > 1:
        raise KvcalcError("some requests have an arrival time and some do not", where, "arrival times on every request or none")
    return rows


def is_csv_name(name: str) -> bool:
    return bool(re.search(r"\.csv$", name, re.I))


def bench_result_object(text: str) -> dict[str, Any]:
    """The text as one JSON object, or {} where it is not one (JSON Lines, or malformed: the line reader
    says where). Parsed once for both of a saved result's readers (its lengths and its silent requests)."""
    import json

    if not text.lstrip().startswith("{"):
        return {}
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return obj if isinstance(obj, dict) else {}


def bench_result_lengths(obj: dict[str, Any], where: str) -> list[tuple[Any, Any]] | None:
    """(prompt, output) per request of a vllm bench serve --save-result JSON (``obj``, as
    :func:`bench_result_object` parsed it), or None where it is not one (a single JSON Lines record)."""
    if not {"input_lens", "output_lens"} & obj.keys():
        return None
    ins, outs = obj.get("input_lens"), obj.get("output_lens")
    if not isinstance(ins, list) or not isinstance(outs, list):
        raise KvcalcError("input_lens and output_lens must both be lists of token counts", where, TRACE_ACCEPTED)
    if len(ins) != len(outs):
        raise KvcalcError(
            f"input_lens lists {count_of(len(ins), 'request')} and output_lens {len(outs):,}", where, "as many of each"
        )
    return list(zip(ins, outs, strict=True))


def bench_result_silent(obj: dict[str, Any]) -> list[bool] | None:
    """Which requests of a vllm bench serve --save-result JSON (``obj``, as :func:`bench_result_object` parsed it)
    streamed no text (kvcalc.inputs.bench.silent_requests), or None where it is no such result or none did."""
    from kvcalc.inputs.bench import silent_requests

    return silent_requests(obj.get("ttfts"), obj.get("output_lens")) if obj else None


def read_trace_file(path: str, max_len: int) -> tuple[Any, Any, str, list[str]]:
    """A trace file (a regular file of at most 512 MiB; CSV by its .csv suffix, else JSON Lines)."""
    from kvcalc import files

    text = files.read_text(path, files.TRACE_LIMIT, TRACE_ACCEPTED)
    return read_trace(text, path, max_len, is_csv_name(path))


# Named workloads: lognormal lengths with the means of a published sample, not the dataset itself.
PRESETS = {
    "sharegpt": (
        "lognormal:median=98,sigma=1.0",
        "lognormal:median=205,sigma=1.0",
        "ShareGPT-like: lognormal prompts and outputs with the means of the vLLM paper's ShareGPT sample "
        "(161 and 338 tokens; Kwon et al., SOSP 2023, section 6.1)",
    ),
    "alpaca": (
        "lognormal:median=12,sigma=1.0",
        "lognormal:median=35,sigma=1.0",
        "Alpaca-like: lognormal prompts and outputs with the means of the vLLM paper's Alpaca sample (19 and 58 tokens)",
    ),
}


def read_request_trace(path: str, max_len: int) -> tuple[Any, Any, Any, str, Any]:
    """(prompts, outputs, arrivals or None, description, silent or None) from a trace file: ``silent`` marks the
    requests of a saved bench result that streamed no text (bench_result_silent), for Workload.silent."""
    import numpy as np

    from kvcalc import files

    text = files.read_text(path, files.TRACE_LIMIT, TRACE_ACCEPTED)
    csv_name = is_csv_name(path)
    result = {} if csv_name else bench_result_object(text)
    rows = trace_rows(text, path, max_len, csv_name, result)
    prompts = np.array([p for p, _, _ in rows], dtype=np.int64)
    outputs = np.array([max(o, 1) for _, o, _ in rows], dtype=np.int64)
    quiet = bench_result_silent(result)
    silent = np.asarray(quiet, dtype=bool) if quiet is not None and len(quiet) == len(rows) else None
    arrivals = None
    if rows[0][2] is not None:
        t = np.array([a for _, _, a in rows], dtype=np.float64)
        order = np.argsort(t, kind="stable")
        prompts, outputs, arrivals = prompts[order], outputs[order], t[order] - t.min()
        silent = silent[order] if silent is not None else None
    desc = f"trace {path} ({count_of(len(rows), 'request')})"
    if silent is not None:
        desc += (
            f"; {count_of(int(silent.sum()), 'request')} streamed no text (a TTFT of 0 s and 0 output tokens as the client "
            "recorded them): one token each, timed as the client timed them"
        )
    return prompts, outputs, arrivals, desc, silent
