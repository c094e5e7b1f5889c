"""The memory budget, the KV pool, concurrency and the longest request that fits.

``fit`` is one function over the engine records of :mod:`kvcalc.engine.engines`: the budget line by
line, the pool carved into blocks, how many requests of a length it holds, and the longest one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil
from typing import Any

from kvcalc.engine.engines import Engine, engine as parse_engine
from kvcalc.engine.kv import KVFootprint, check_parallel
from kvcalc.engine.weights import weights
from kvcalc.errors import KvcalcError
from kvcalc.specs.dtypes import BF16, KVDtype, kv_dtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

GiB = 2**30
MiB = 2**20


# ---- estimates of engine-measured quantities -------------------------------------------------


def default_max_num_batched_tokens(gpu: GPUSpec) -> int:
    """vLLM's default for its OpenAI server: 8192 tokens on GPUs of >= 70 GiB, else 2048."""
    return 8192 if gpu.memory_runtime_bytes >= 70 * GiB else 2048


def activation_estimate(model: ModelSpec, tokens: int, tp: int = 1, act_bytes: int = 2) -> int:
    """Peak activation memory of a forward pass over ``tokens`` tokens, per GPU (an estimate).

    The largest live tensors are the MLP's gate+up output (2 x intermediate per token per routed
    copy) beside a few hidden-size buffers (residual, norm output, attention output, QKV):
    ``tokens x (4 x hidden + 2 x intermediate / tp x k) x act_bytes``, plus the sampler's fp32
    logits for up to 256 sequences (``min(tokens, 256) x vocab x 4``).
    """
    k = model.moe.num_experts_per_tok if model.moe else 1
    inter = ceil(Fraction(model.intermediate_size * 2 * k, tp))
    return tokens * (4 * model.hidden_size + inter) * act_bytes + min(tokens, 256) * model.vocab_size * 4


def non_torch_estimate(tp: int, pp: int) -> int:
    """CUDA context leftovers, cuBLAS workspaces; NCCL buffers when there is more than one GPU."""
    return 256 * MiB + (768 * MiB if tp * pp > 1 else 0)


# ---- fit ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetLine:
    key: str
    """What the line is, for code: total, usable, weights, activation, non_torch, cudagraph, free_fraction, pool."""
    label: str
    bytes: int

    @property
    def is_reserve(self) -> bool:
        """A cost taken out of the budget before the KV pool."""
        return self.key in ("weights", "activation", "non_torch", "cudagraph")


@dataclass(frozen=True)
class FitInputs:
    """Everything fit takes besides the model and GPU, parsed. None means "use the documented default"."""

    seq: int
    engine: Engine = dataclasses.field(default_factory=lambda: parse_engine("vllm"))
    tp: int = 1
    pp: int = 1
    kv_dtype: KVDtype = BF16
    weight_dtype: str | None = None
    gpu_memory: int | None = None
    weights: int | None = None
    activation: int | None = None
    non_torch: int | None = None
    cudagraph: int | None = None
    util: float | None = None
    block_size: int | None = None
    max_num_batched_tokens: int | None = None

    def __post_init__(self) -> None:
        # The Python API may pass names; parse them once, here.
        object.__setattr__(self, "engine", parse_engine(self.engine))
        object.__setattr__(self, "kv_dtype", kv_dtype(self.kv_dtype))

    def replace(self, **changes: Any) -> FitInputs:
        return dataclasses.replace(self, **changes)

    def echo(self) -> dict[str, Any]:
        """The inputs as plain values, names for the parsed objects."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["engine"] = self.engine.name
        d["kv_dtype"] = self.kv_dtype.name
        return d


@dataclass(frozen=True)
class ReverseReport:
    """What ``concurrency`` requests of the fit's length need."""

    concurrency: int
    kv_bytes_needed_per_gpu: int
    util_needed: float | None
    util_possible: bool
    tp_needed: int | None
    gpus_needed: int | None
    tried: list[dict[str, int]]


@dataclass(frozen=True)
class FitReport:
    model: str
    gpu: str
    engine: str
    engine_label: str
    util_flag: str
    seq: int
    tp: int
    pp: int
    gpus: int
    kv_dtype: str
    block_size: int | None
    util: float | None
    budget: list[BudgetLine]
    gpu_memory_bytes: int
    weight_bytes: int
    kv_pool_bytes: int
    kv_pool_usable_bytes: int
    """The pool as the engine carves it: whole blocks (plus one request's recurrent state)."""
    kv_bytes_per_token: int
    kv_pool_tokens: int | None
    request_bytes: int
    max_concurrency: int
    concurrency: float
    max_seq_len: int
    max_seq_len_memory: int | None
    max_seq_len_limited_by: str
    fits: bool
    assumptions: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reverse: ReverseReport | None = None
    inputs: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Budget:
    lines: list[BudgetLine]
    pool: int
    util: float | None
    weights: int
    assumptions: list[str]


def budget(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> Budget:
    """The engine's budget on one GPU, line by line, down to the KV pool."""
    eng = inp.engine
    tp = inp.tp
    total = inp.gpu_memory if inp.gpu_memory is not None else gpu.memory_runtime_bytes
    assumptions = []
    if inp.gpu_memory is None:
        src = "measured" if gpu.memory_runtime_measured else "estimated"
        assumptions.append(f"device memory: {gpu.name}'s runtime total ({src}); pass --gpu-memory to use yours")
    w = inp.weights if inp.weights is not None else weights(model, inp.weight_dtype, tp, inp.pp).per_gpu_bytes
    if inp.weights is None:
        assumptions.append(
            "weights: parameters x weight dtype, split evenly over tp x pp GPUs; pass --weights to use the measured figure"
        )
    mnbt = inp.max_num_batched_tokens or default_max_num_batched_tokens(gpu)
    act = 0
    if eng.subtracts_activation:
        act = inp.activation if inp.activation is not None else activation_estimate(model, mnbt, tp)
        if inp.activation is None:
            assumptions.append(
                f"activation peak: estimated for a {mnbt:,}-token forward pass; pass --activation to use the measured figure"
            )
    if inp.non_torch is not None:
        nt = inp.non_torch
    else:
        nt = non_torch_estimate(tp, inp.pp) if eng.subtracts_non_torch else 0
    if inp.non_torch is None and nt:
        assumptions.append(
            "non-torch memory: estimated (CUDA context, cuBLAS, NCCL); pass --non-torch to use the measured figure"
        )
    cg = inp.cudagraph or 0
    if eng.cudagraph_line and inp.cudagraph is None and eng.cudagraph_note:
        assumptions.append(eng.cudagraph_note)
    util = inp.util if inp.util is not None else eng.default_util
    lines = [BudgetLine("total", "device memory (runtime total)", total)]
    if eng.budget == "util_of_total":
        assert util is not None
        usable = int(Fraction(str(util)) * total)
        lines.append(BudgetLine("usable", f"usable at {eng.util_flag} {util:g}", usable))
        pool = usable - w - act - nt - cg
    elif eng.budget == "fraction_of_free":
        assert util is not None
        free = total - w - act - nt - cg
        pool = int(Fraction(str(util)) * free) if free > 0 else free
    else:
        pool = total - w - act - nt - cg
    lines.append(BudgetLine("weights", "- weights", w))
    if eng.subtracts_activation:
        lines.append(BudgetLine("activation", "- activation peak", act))
    if nt:
        lines.append(BudgetLine("non_torch", "- non-torch", nt))
    if eng.cudagraph_line or cg:
        lines.append(BudgetLine("cudagraph", "- CUDA graphs", cg))
    if eng.budget == "fraction_of_free":
        lines.append(BudgetLine("free_fraction", f"x {eng.util_flag} {util:g} of what is free", pool))
    lines.append(BudgetLine("pool", "= KV pool", pool))
    return Budget(lines, pool, util, w, assumptions)


def footprint(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> KVFootprint:
    """The KV footprint under the engine's allocation (its blocks and window reservations)."""
    mnbt = inp.max_num_batched_tokens or default_max_num_batched_tokens(gpu)
    return KVFootprint(model, inp.kv_dtype, inp.tp, inp.pp, inp.engine.allocation(inp.block_size, mnbt))


def fit(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> FitReport:
    eng = inp.engine
    check_parallel(model, inp.tp, inp.pp)
    dt = inp.kv_dtype
    fp = footprint(model, gpu, inp)
    bs = fp.alloc.block_size
    b = budget(model, gpu, inp)
    pool = b.pool
    assumptions = [f"engine: {eng.label}: {eng.note}", *b.assumptions, f"KV dtype {dt.name}: {dt.note}"]

    per_tok, state = fp.per_token, fp.state_bytes
    usable = max(pool, 0)
    tokens: int | None
    if bs and per_tok:
        # Engines carve the pool into whole blocks across all layers (vLLM: pool // page // layers).
        block_bytes = bs * per_tok
        usable_blocks = (usable - state) // block_bytes if usable > state else 0
        tokens = usable_blocks * bs
        usable = usable_blocks * block_bytes + state
    elif per_tok:
        tokens = (usable - state) // per_tok if usable > state else 0
    else:
        tokens = None
    if state:
        assumptions.append(
            "recurrent-state layers hold a fixed state per request; the pool's token count leaves room for one request's state"
        )

    req = fp.request_bytes(inp.seq)
    conc = usable / req if req else float("inf")
    maxc = usable // req if req else 0
    mem_len = fp.longest_request(usable)
    ctx = model.max_position_embeddings
    if mem_len is None or mem_len > ctx:
        max_len, limited = ctx, "max context"
    else:
        max_len, limited = mem_len, "memory"
    warnings = []
    if pool <= 0:
        warnings.append(f"does not fit: nothing is left for the KV cache ({pool:,} B after weights and reserves)")
    elif maxc == 0:
        warnings.append(f"not even one request of {inp.seq:,} tokens fits in the KV pool")
    if inp.seq > ctx:
        warnings.append(f"seq {inp.seq:,} exceeds the model's max context of {ctx:,} tokens (max_position_embeddings)")
    return FitReport(
        model=model.name,
        gpu=gpu.name,
        engine=eng.name,
        engine_label=eng.label,
        util_flag=eng.util_flag,
        seq=inp.seq,
        tp=inp.tp,
        pp=inp.pp,
        gpus=inp.tp * inp.pp,
        kv_dtype=dt.name,
        block_size=bs,
        util=b.util,
        budget=b.lines,
        gpu_memory_bytes=b.lines[0].bytes,
        weight_bytes=b.weights,
        kv_pool_bytes=pool,
        kv_pool_usable_bytes=usable,
        kv_bytes_per_token=per_tok,
        kv_pool_tokens=tokens,
        request_bytes=req,
        max_concurrency=int(maxc),
        concurrency=float(conc),
        max_seq_len=max_len,
        max_seq_len_memory=mem_len,
        max_seq_len_limited_by=limited,
        fits=pool > 0 and maxc > 0,
        assumptions=assumptions,
        warnings=warnings,
        inputs={"model": model.name, "gpu": gpu.name, **inp.echo()},
    )


def reverse(model: ModelSpec, gpu: GPUSpec, inp: FitInputs, concurrency: int, max_tp: int = 64) -> ReverseReport:
    """The reverse question: what do ``concurrency`` requests of ``inp.seq`` tokens need?

    The smallest tensor-parallel size (at the given pipeline size) whose pool holds them, and the
    memory fraction that would hold them at the given tp.
    """
    if concurrency < 1:
        raise KvcalcError("--concurrency must be >= 1", "--concurrency", "a positive number of requests")
    eng = inp.engine
    here = fit(model, gpu, inp)
    need = concurrency * here.request_bytes
    # Memory the budget must reach at this tp: fixed costs plus the requests.
    fixed = sum(line.bytes for line in here.budget if line.is_reserve)
    util_needed = None
    if eng.budget == "util_of_total":
        util_needed = (fixed + need) / here.gpu_memory_bytes
    elif eng.budget == "fraction_of_free":
        free = here.gpu_memory_bytes - fixed
        util_needed = need / free if free > 0 else None
    tp_needed = None
    tp = inp.tp
    tried = []
    while tp <= max_tp:
        try:
            r = fit(model, gpu, inp.replace(tp=tp))
        except KvcalcError:
            tp *= 2
            continue
        tried.append({"tp": tp, "gpus": tp * inp.pp, "max_concurrency": r.max_concurrency})
        if r.max_concurrency >= concurrency:
            tp_needed = tp
            break
        tp *= 2
    return ReverseReport(
        concurrency=concurrency,
        kv_bytes_needed_per_gpu=need,
        util_needed=util_needed,
        util_possible=util_needed is not None and util_needed <= 1.0,
        tp_needed=tp_needed,
        gpus_needed=tp_needed * inp.pp if tp_needed else None,
        tried=tried,
    )


def max_batch_in_memory(model: ModelSpec, gpu: GPUSpec, inp: FitInputs, seqs: Any) -> tuple[Any, FitReport]:
    """Requests of each length in ``seqs`` (an int or a numpy array) that fit in the KV pool."""
    f = fit(model, gpu, inp)
    req = footprint(model, gpu, inp).request_bytes(seqs)
    return max(f.kv_pool_usable_bytes, 0) // req, f
