"""Reading serving-engine start-up logs (vLLM 0.6 to current, SGLang): text in, facts out.
The recomputation is kvcalc.engine.explain's.

Units, as the engines print them: vLLM's "GiB" is 2^30 B; vLLM 0.5/0.6 printed "Loading model
weights took X GB" but computed X in GiB; SGLang prints "GB" for values it divides by 2^30.
kvcalc reads all of them as GiB and says so.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from kvcalc.errors import KvcalcError

GiB = 2**30
NUM = r"([0-9][0-9,]{0,30}(?:\.[0-9]{1,12})?)"


def _num(s: str) -> float:
    """A figure from a log line: finite, and of a size a log prints (no 400-digit numbers)."""
    if len(s) > 24:
        raise ValueError(f"figure too long: {s[:30]}")
    v = float(s.replace(",", ""))
    if not math.isfinite(v):
        raise ValueError(f"not a finite figure: {s}")
    return v


@dataclass
class LogFacts:
    engine: str | None = None
    version: str | None = None
    model: str | None = None
    max_model_len: int | None = None
    tp: int | None = None
    pp: int | None = None
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    block_size: int | None = None
    util: float | None = None
    max_num_batched_tokens: int | None = None
    total_gib: float | None = None
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    activation_gib: float | None = None
    available_kv_gib: float | None = None
    kv_tokens: int | None = None
    gpu_blocks: int | None = None
    concurrency: float | None = None
    concurrency_len: int | None = None
    cudagraph_gib: float | None = None
    # SGLang
    max_total_num_tokens: int | None = None
    avail_after_load_gib: float | None = None
    k_size_gib: float | None = None
    v_size_gib: float | None = None
    lines: dict[str, str] = field(default_factory=dict)
    """The line each fact was read from (fact name -> line)."""


# (fact, a literal the line must hold, pattern, how to read the groups). The literal is the cheap
# filter: a line holding none of them (almost every line of a long log) costs one regex search.
_PATTERNS: list[tuple[str, str, re.Pattern[str], str]] = [
    ("version", "LLM engine", re.compile(r"LLM engine\s*\(?v?([0-9]+\.[0-9]+(?:\.[0-9]+)?[^\s),]*)", re.I), "str"),
    (
        "version",
        "vLLM API server version",
        re.compile(r"vLLM API server version\s*v?([0-9]+\.[0-9]+(?:\.[0-9]+)?[^\s),]*)"),
        "str",
    ),
    ("version", "vllm version", re.compile(r"vllm version\s*v?([0-9]+\.[0-9]+(?:\.[0-9]+)?[^\s),]*)", re.I), "str"),
    ("model", "model='", re.compile(r"\bmodel='([^']{1,500})'"), "str"),
    ("model", "'model':", re.compile(r"'model':\s*'([^']{1,500})'"), "str"),
    ("model", "model_path=", re.compile(r"\bmodel_path='?([^',\s)]{1,500})"), "str"),
    ("max_model_len", "max_seq_len=", re.compile(r"\bmax_seq_len=([0-9]{1,20})"), "int"),
    ("max_model_len", "max_model_len", re.compile(r"\bmax_model_len['\"]?[=:]\s*([0-9]{1,20})"), "int"),
    ("max_model_len", "context_len=", re.compile(r"\bcontext_len=([0-9]{1,20})"), "int"),
    ("tp", "tensor_parallel_size", re.compile(r"\btensor_parallel_size['\"]?[=:]\s*([0-9]{1,6})"), "int"),
    ("tp", "tp_size=", re.compile(r"\btp_size=([0-9]{1,6})"), "int"),
    ("pp", "pipeline_parallel_size", re.compile(r"\bpipeline_parallel_size['\"]?[=:]\s*([0-9]{1,6})"), "int"),
    ("dtype", "dtype=torch.", re.compile(r"\bdtype=torch\.([a-z0-9]{1,20})"), "str"),
    ("kv_cache_dtype", "kv_cache_dtype", re.compile(r"\bkv_cache_dtype['\"]?[=:]\s*'?([A-Za-z0-9_]{1,20})"), "str"),
    ("block_size", "block_size", re.compile(r"\bblock_size['\"]?[=:]\s*([0-9]{1,6})"), "int"),
    ("block_size", "page_size=", re.compile(r"\bpage_size=([0-9]{1,6})"), "int"),
    ("util", "gpu_memory_utilization", re.compile(r"gpu_memory_utilization['\"]?\s*(?:[=:]|\()\s*([0-9.]{1,20})"), "float"),
    ("util", "mem_fraction_static=", re.compile(r"\bmem_fraction_static=([0-9.]{1,20})"), "float"),
    (
        "max_num_batched_tokens",
        "max_num_batched_tokens",
        re.compile(r"\bmax_num_batched_tokens['\"]?[=:]\s*([0-9]{1,20})"),
        "int",
    ),
    ("total_gib", "total_gpu_memory (", re.compile(r"total_gpu_memory \(" + NUM + r"\s*GiB\)"), "float"),
    ("weights_gib", "Model loading took", re.compile(r"Model loading took " + NUM + r"\s*GiB"), "float"),
    ("weights_gib", "Loading model weights took", re.compile(r"Loading model weights took " + NUM + r"\s*GB"), "float"),
    ("weights_gib", "model weights take", re.compile(r"model weights take " + NUM + r"\s*GiB"), "float"),
    ("weights_gib", "Load weight end.", re.compile(r"mem usage=" + NUM + r"\s*GB"), "float"),
    ("avail_after_load_gib", "Load weight end.", re.compile(r"avail mem=" + NUM + r"\s*GB"), "float"),
    ("non_torch_gib", "non_torch_memory takes", re.compile(r"non_torch_memory takes " + NUM + r"\s*GiB"), "float"),
    ("activation_gib", "activation peak memory takes", re.compile(r"activation peak memory takes " + NUM + r"\s*GiB"), "float"),
    ("available_kv_gib", "Available KV cache memory:", re.compile(r"Available KV cache memory: " + NUM + r"\s*GiB"), "float"),
    ("available_kv_gib", "reserved for KV Cache is", re.compile(r"reserved for KV Cache is " + NUM + r"\s*GiB"), "float"),
    ("kv_tokens", "GPU KV cache size:", re.compile(r"GPU KV cache size: " + NUM + r" tokens"), "int"),
    ("gpu_blocks", " blocks: ", re.compile(r"# (?:GPU|cuda|CUDA) blocks: " + NUM), "int"),
    (
        "concurrency",
        "Maximum concurrency for",
        re.compile(r"Maximum concurrency for " + NUM + r" tokens per request: " + NUM + r"x"),
        "conc",
    ),
    (
        "cudagraph_gib",
        "Graph capturing finished",
        re.compile(r"Graph capturing finished in [0-9.]{1,20} secs?, took " + NUM + r"\s*GiB"),
        "float",
    ),
    ("max_total_num_tokens", "max_total_num_tokens=", re.compile(r"max_total_num_tokens=" + NUM), "int"),
    (
        "kv_sizes",
        "KV Cache is allocated.",
        re.compile(r"KV Cache is allocated\. #tokens: " + NUM + r", K size: " + NUM + r" GB, V size: " + NUM + r" GB"),
        "kv",
    ),
]
_KEYS = list(dict.fromkeys(k for _, k, _, _ in _PATTERNS))
_ANY = re.compile("|".join(re.escape(k) for k in _KEYS))
_KEYS_BYTES = [k.encode() for k in _KEYS]
CHUNK = 4 * 2**20
LINE_LIMIT = 65536


def candidate_lines(stream: BinaryIO) -> Iterator[str]:
    """The lines of a log that hold one of the literals kvcalc reads, in order, found by scanning
    4 MiB chunks in C: a 100 MB log of request lines costs a few tenths of a second, in a few MiB of
    memory. Lines are cut to 64 KiB; bytes that are not UTF-8 are replaced."""
    rest = b""
    while True:
        block = stream.read(CHUNK)
        if not block:
            break
        data = rest + block
        end = data.rfind(b"\n") + 1
        if end == 0:
            # No line end in this chunk: keep at most one line's worth.
            rest = data[-LINE_LIMIT:] if len(data) > LINE_LIMIT else data
            continue
        yield from _scan(data, end)
        rest = data[end:]
        if len(rest) > LINE_LIMIT:
            rest = rest[-LINE_LIMIT:]
    if rest:
        yield from _scan(rest + b"\n", len(rest) + 1)


def _scan(data: bytes, end: int) -> Iterator[str]:
    """The lines of data[:end] holding a literal: one bytes.find per literal (C speed, over 100 MB/s
    for all of them together), then each line once, in order."""
    hits: dict[int, int] = {}
    for key in _KEYS_BYTES:
        i = data.find(key, 0, end)
        while i >= 0:
            start = data.rfind(b"\n", 0, i) + 1
            hits.setdefault(start, i)
            stop = data.find(b"\n", i, end)
            i = data.find(key, stop if stop >= 0 else end, end)
    for start in sorted(hits):
        stop = data.find(b"\n", start, end)
        stop = end - 1 if stop < 0 else stop
        lo = max(start, hits[start] - LINE_LIMIT // 2)
        yield data[lo : min(stop, lo + LINE_LIMIT)].decode("utf-8", errors="replace")


def parse_log(text: str | Iterable[str]) -> LogFacts:
    """Facts from a start-up log (its text, or its lines); lines not recognised are ignored. The first
    match of each fact wins, except that later figures of the same kind (a log of several restarts)
    replace earlier ones."""
    f = LogFacts()
    for line in text.splitlines() if isinstance(text, str) else text:
        if len(line) > 65536:
            line = line[:65536]
        if not _ANY.search(line):
            continue
        for fact, key, pat, kind in _PATTERNS:
            if key not in line:
                continue
            m = pat.search(line)
            if not m:
                continue
            try:
                if kind == "str":
                    val = m.group(1)
                elif kind == "int":
                    val = int(_num(m.group(1)))
                elif kind == "float":
                    val = _num(m.group(1))
                elif kind == "conc":
                    f.concurrency_len = int(_num(m.group(1)))
                    f.concurrency = _num(m.group(2))
                    f.lines["concurrency"] = line.strip()
                    continue
                else:  # kv sizes
                    f.max_total_num_tokens = f.max_total_num_tokens or int(_num(m.group(1)))
                    f.k_size_gib, f.v_size_gib = _num(m.group(2)), _num(m.group(3))
                    f.lines["kv_sizes"] = line.strip()
                    continue
            except (ValueError, OverflowError):
                continue
            if fact in ("model", "version", "max_model_len", "weights_gib") and getattr(f, fact) is not None:
                continue
            setattr(f, fact, val)
            f.lines[fact] = line.strip()
    if f.max_total_num_tokens is not None or f.avail_after_load_gib is not None or f.k_size_gib is not None:
        f.engine = "sglang"
    elif any(getattr(f, k) is not None for k in ("available_kv_gib", "kv_tokens", "gpu_blocks", "concurrency", "weights_gib")):
        f.engine = "vllm"
    if f.max_model_len is None and f.concurrency_len:
        f.max_model_len = f.concurrency_len
    if f.engine is None:
        raise KvcalcError(
            "nothing recognisable in this log",
            "LOG",
            "a vLLM (0.6 or later) or SGLang start-up log with lines such as 'Model loading took X GiB', "
            "'Available KV cache memory', 'GPU KV cache size' or SGLang's 'max_total_num_tokens'",
        )
    return f
