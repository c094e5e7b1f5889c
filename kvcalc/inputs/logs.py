"""Reading serving-engine start-up logs (vLLM 0.6 to current, SGLang): text in, facts out.
The recomputation is kvcalc.engine.explain's.

Units, as the engines print them: vLLM's "GiB" is 2^30 B; vLLM 0.5/0.6 printed "Loading model
weights took X GB" but computed X in GiB; SGLang prints "GB" for values it divides by 2^30.
kvcalc reads all of them as GiB and says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from kvcalc.errors import KvcalcError

GiB = 2**30
NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"


def _num(s: str) -> float:
    return float(s.replace(",", ""))


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


_PATTERNS: list[tuple[str, re.Pattern, str]] = [
    # (fact, pattern, how to read group 1)
    (
        "version",
        re.compile(r"(?:LLM engine|vLLM API server version|vllm version)\s*\(?v?([0-9]+\.[0-9]+(?:\.[0-9]+)?[^\s),]*)", re.I),
        "str",
    ),
    ("model", re.compile(r"\bmodel='([^']+)'"), "str"),
    ("model", re.compile(r"'model':\s*'([^']+)'"), "str"),
    ("model", re.compile(r"\bmodel_path='?([^',\s)]+)"), "str"),
    ("max_model_len", re.compile(r"\bmax_seq_len=([0-9]+)"), "int"),
    ("max_model_len", re.compile(r"\bmax_model_len['\"]?[=:]\s*([0-9]+)"), "int"),
    ("max_model_len", re.compile(r"\bcontext_len=([0-9]+)"), "int"),
    ("tp", re.compile(r"\btensor_parallel_size['\"]?[=:]\s*([0-9]+)"), "int"),
    ("tp", re.compile(r"\btp_size=([0-9]+)"), "int"),
    ("pp", re.compile(r"\bpipeline_parallel_size['\"]?[=:]\s*([0-9]+)"), "int"),
    ("dtype", re.compile(r"\bdtype=torch\.([a-z0-9]+)"), "str"),
    ("kv_cache_dtype", re.compile(r"\bkv_cache_dtype['\"]?[=:]\s*'?([A-Za-z0-9_]+)"), "str"),
    ("block_size", re.compile(r"\bblock_size['\"]?[=:]\s*([0-9]+)"), "int"),
    ("block_size", re.compile(r"\bpage_size=([0-9]+)"), "int"),
    ("util", re.compile(r"gpu_memory_utilization['\"]?\s*(?:[=:]|\()\s*([0-9.]+)"), "float"),
    ("util", re.compile(r"\bmem_fraction_static=([0-9.]+)"), "float"),
    ("max_num_batched_tokens", re.compile(r"\bmax_num_batched_tokens['\"]?[=:]\s*([0-9]+)"), "int"),
    ("total_gib", re.compile(r"total_gpu_memory \(" + NUM + r"\s*GiB\)"), "float"),
    ("weights_gib", re.compile(r"Model loading took " + NUM + r"\s*GiB"), "float"),
    ("weights_gib", re.compile(r"Loading model weights took " + NUM + r"\s*GB"), "float"),
    ("weights_gib", re.compile(r"model weights take " + NUM + r"\s*GiB"), "float"),
    ("weights_gib", re.compile(r"Load weight end\..*?mem usage=" + NUM + r"\s*GB"), "float"),
    ("avail_after_load_gib", re.compile(r"Load weight end\..*?avail mem=" + NUM + r"\s*GB"), "float"),
    ("non_torch_gib", re.compile(r"non_torch_memory takes " + NUM + r"\s*GiB"), "float"),
    ("activation_gib", re.compile(r"activation peak memory takes " + NUM + r"\s*GiB"), "float"),
    ("available_kv_gib", re.compile(r"Available KV cache memory: " + NUM + r"\s*GiB"), "float"),
    ("available_kv_gib", re.compile(r"reserved for KV Cache is " + NUM + r"\s*GiB"), "float"),
    ("kv_tokens", re.compile(r"GPU KV cache size: " + NUM + r" tokens"), "int"),
    ("gpu_blocks", re.compile(r"# (?:GPU|cuda|CUDA) blocks: " + NUM), "int"),
    ("concurrency", re.compile(r"Maximum concurrency for " + NUM + r" tokens per request: " + NUM + r"x"), "conc"),
    ("cudagraph_gib", re.compile(r"Graph capturing finished in [0-9.]+ secs?, took " + NUM + r"\s*GiB"), "float"),
    ("max_total_num_tokens", re.compile(r"max_total_num_tokens=" + NUM), "int"),
    (
        "kv_sizes",
        re.compile(r"KV Cache is allocated\. #tokens: " + NUM + r", K size: " + NUM + r" GB, V size: " + NUM + r" GB"),
        "kv",
    ),
]


def parse_log(text: str | Iterable[str]) -> LogFacts:
    """Facts from a start-up log (its text, or its lines); lines not recognised are ignored. The first
    match of each fact wins, except that later figures of the same kind (a log of several restarts)
    replace earlier ones."""
    f = LogFacts()
    for line in text.splitlines() if isinstance(text, str) else text:
        if len(line) > 100_000:
            line = line[:100_000]
        for fact, pat, kind in _PATTERNS:
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
