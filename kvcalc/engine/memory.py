"""Weights, serving-engine budgets, the KV pool, concurrency and the longest request that fits.

Each serving engine is a data record (:class:`Engine`): how it takes its budget from device
memory, what it subtracts, and how it rounds a request's cache. ``fit`` is one function
over those records, so the engines differ only where they really do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from math import ceil
from typing import Literal

from kvcalc.engine.dtypes import kv_dtype, weight_bytes
from kvcalc.engine.kv import check_parallel, request_bytes, stage_counts, stages
from kvcalc.engine.layers import Allocation, RecurrentState
from kvcalc.engine.search import first_true
from kvcalc.errors import KvcalcError
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

GiB = 2**30
MiB = 2**20


@dataclass(frozen=True)
class Engine:
    name: str
    label: str
    budget: Literal["util_of_total", "fraction_of_free", "all"]
    """util_of_total: util x device total, then subtract (vLLM, SGLang).
    fraction_of_free: util x (what is free after weights, activations, non-torch) (TensorRT-LLM).
    all: everything left (transformers, plain)."""
    default_util: float | None
    block_size: int | None
    window_style: Literal["window", "vllm", "window-1"] = "window"
    mla_expanded: bool = False
    subtracts_activation: bool = True
    util_flag: str = ""
    note: str = ""

    def allocation(self, block_size: int | None = None, in_flight: int = 0) -> Allocation:
        bs = block_size if block_size is not None else self.block_size
        return Allocation(
            name=self.name,
            block_size=bs,
            window_slack=in_flight if self.window_style == "vllm" else 0,
            window_style=self.window_style,
            mla_expanded=self.mla_expanded,
            pad_groups=self.name == "vllm",
        )


ENGINES: dict[str, Engine] = {
    e.name: e
    for e in (
        Engine(
            "vllm", "vLLM (V1 engine)", "util_of_total", 0.9, 16, "vllm",
            util_flag="gpu_memory_utilization",
            note="KV pool = gpu_memory_utilization x runtime total - weights - activation peak - non-torch - CUDA graphs; "
            "blocks of 16 tokens; sliding layers reserve cdiv(min(window - 1 + max_num_batched_tokens, S), 16) + 1 blocks",
        ),
        Engine(
            "sglang", "SGLang", "util_of_total", 0.88, None, "window", subtracts_activation=False,
            util_flag="mem_fraction_static",
            note="KV pool = mem_fraction_static x runtime total - weights - non-torch; activations live in the "
            "1 - mem_fraction_static headroom; token-granular pool (page size 1)",
        ),
        Engine(
            "trtllm", "TensorRT-LLM", "fraction_of_free", 0.9, 32, "window",
            util_flag="free_gpu_memory_fraction",
            note="KV pool = free_gpu_memory_fraction x (runtime total - weights - activations - non-torch); 32 tokens per block",
        ),
        Engine(
            "hf", "transformers 5.x (DynamicCache)", "all", None, None, "window-1",
            note="no pool: every request's cache is allocated as it grows; sliding layers keep window - 1 tokens; "
            "MLA caches the latent",
        ),
        Engine(
            "hf4", "transformers 4.x (DynamicCache)", "all", None, None, "window-1", mla_expanded=True,
            note="as hf, but MLA layers cache decompressed per-head K (nope + rope dims) and V instead of the latent",
        ),
        Engine(
            "plain", "no engine (logical bytes)", "all", None, None, "window", subtracts_activation=False,
            note="device memory minus weights; every byte left holds KV; no blocks",
        ),
    )
}


def engine(name: str, where: str = "--engine") -> Engine:
    key = str(name).strip().lower().replace("tensorrt-llm", "trtllm").replace("transformers", "hf")
    if key not in ENGINES:
        from kvcalc.errors import unknown_name

        raise unknown_name("engine", name, ENGINES, where)
    return ENGINES[key]


# ---- weights ------------------------------------------------------------------------------

@dataclass
class Weights:
    total_bytes: int
    per_gpu_bytes: int
    dtype: str
    expert_dtype: str | None
    note: str


def model_weight_bytes(model: ModelSpec, dtype: str | None = None) -> int:
    """Resident bytes of all parameters: experts in their own format where the spec says so."""
    wd = dtype or model.weight_dtype
    ed = dtype or (model.moe.expert_weight_dtype if model.moe else None) or wd
    experts = model.expert_params
    return weight_bytes(model.params_total - experts, wd) + (weight_bytes(experts, ed) if experts else 0)


def weights(model: ModelSpec, dtype: str | None = None, tp: int = 1, pp: int = 1) -> Weights:
    total = model_weight_bytes(model, dtype)
    per_gpu = ceil(Fraction(total, tp * pp))
    ed = None if dtype else (model.moe.expert_weight_dtype if model.moe else None)
    return Weights(total, per_gpu, dtype or model.weight_dtype, ed, "total / (tp x pp): an even split")


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

@dataclass
class BudgetLine:
    key: str
    """What the line is, for code: total, usable, weights, activation, non_torch, cudagraph, free_fraction, pool."""
    label: str
    bytes: int

    @property
    def is_reserve(self) -> bool:
        """A cost taken out of the budget before the KV pool."""
        return self.key in ("weights", "activation", "non_torch", "cudagraph")


@dataclass
class FitResult:
    engine: str
    engine_label: str
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
    reverse: dict | None = None


@dataclass
class FitInputs:
    """Everything fit takes besides the model and GPU. None means "use the documented default"."""

    seq: int
    engine: str = "vllm"
    tp: int = 1
    pp: int = 1
    kv_dtype: str = "bf16"
    weight_dtype: str | None = None
    gpu_memory: int | None = None
    weights: int | None = None
    activation: int | None = None
    non_torch: int | None = None
    cudagraph: int | None = None
    util: float | None = None
    block_size: int | None = None
    max_num_batched_tokens: int | None = None


def _pool(model: ModelSpec, gpu: GPUSpec, inp: FitInputs, eng: Engine):
    """(budget lines, KV pool bytes, util, assumptions, weight bytes) on one GPU."""
    tp = inp.tp
    total = inp.gpu_memory if inp.gpu_memory is not None else gpu.memory_runtime_bytes
    assumptions = []
    if inp.gpu_memory is None:
        src = "measured" if gpu.memory_runtime_measured else "estimated"
        assumptions.append(f"device memory: {gpu.name}'s runtime total ({src}); pass --gpu-memory to use yours")
    w = inp.weights if inp.weights is not None else weights(model, inp.weight_dtype, tp, inp.pp).per_gpu_bytes
    if inp.weights is None:
        assumptions.append("weights: parameters x weight dtype, split evenly over tp x pp GPUs; pass --weights to use the measured figure")
    mnbt = inp.max_num_batched_tokens or default_max_num_batched_tokens(gpu)
    act = 0
    if eng.subtracts_activation:
        act = inp.activation if inp.activation is not None else activation_estimate(model, mnbt, tp)
        if inp.activation is None:
            assumptions.append(f"activation peak: estimated for a {mnbt:,}-token forward pass; pass --activation to use the measured figure")
    if inp.non_torch is not None:
        nt = inp.non_torch
    else:
        nt = 0 if eng.name == "plain" else non_torch_estimate(tp, inp.pp)
    if inp.non_torch is None and nt:
        assumptions.append("non-torch memory: estimated (CUDA context, cuBLAS, NCCL); pass --non-torch to use the measured figure")
    cg = inp.cudagraph or 0
    if eng.name == "vllm" and inp.cudagraph is None:
        assumptions.append(
            "CUDA graphs: 0 B, as vLLM captures them after sizing the KV cache (they come out of the "
            "1 - gpu_memory_utilization headroom); pass --cudagraph if your vLLM profiles them first"
        )
    util = inp.util if inp.util is not None else eng.default_util
    lines = [BudgetLine("total", "device memory (runtime total)", total)]
    if eng.budget == "util_of_total":
        usable = int(Fraction(str(util)) * total)
        lines.append(BudgetLine("usable", f"usable at {eng.util_flag} {util:g}", usable))
        pool = usable - w - act - nt - cg
    elif eng.budget == "fraction_of_free":
        free = total - w - act - nt - cg
        pool = int(Fraction(str(util)) * free) if free > 0 else free
    else:
        pool = total - w - act - nt - cg
    lines.append(BudgetLine("weights", "- weights", w))
    if eng.subtracts_activation:
        lines.append(BudgetLine("activation", "- activation peak", act))
    if nt:
        lines.append(BudgetLine("non_torch", "- non-torch", nt))
    if eng.name == "vllm" or cg:
        lines.append(BudgetLine("cudagraph", "- CUDA graphs", cg))
    if eng.budget == "fraction_of_free":
        lines.append(BudgetLine("free_fraction", f"x {eng.util_flag} {util:g} of what is free", pool))
    lines.append(BudgetLine("pool", "= KV pool", pool))
    return lines, pool, util, assumptions, w


def per_token_all_layers(model: ModelSpec, kv: str, tp: int, pp: int, alloc: Allocation) -> tuple[int, int]:
    """(bytes one token takes in every attention layer, state bytes per request) on the most loaded GPU."""
    dt = kv_dtype(kv)
    best = (0, 0)
    for names in stages(model, pp):
        counts = stage_counts(model, names, alloc)
        tok = sum(n * model.layer_kinds[k].kv_bytes_per_token(dt, tp, alloc) for k, n in counts.items()
                  if not isinstance(model.layer_kinds[k], RecurrentState))
        st = sum(n * model.layer_kinds[k].state_bytes_per_request(tp) for k, n in counts.items())
        if (tok, st) > best:
            best = (tok, st)
    return best


def longest_request(model: ModelSpec, pool: int, kv: str, tp: int, pp: int, alloc: Allocation,
                    cap: int = 2**40) -> int | None:
    """Largest S with request_bytes(S) <= pool (0 if none); None if it never runs out below ``cap``."""
    first_over = first_true(lambda s: request_bytes(model, s, kv, tp, pp, alloc) > pool, 1, cap)
    return None if first_over is None else first_over - 1


def fit(model: ModelSpec, gpu: GPUSpec, inp: FitInputs) -> FitResult:
    eng = engine(inp.engine)
    check_parallel(model, inp.tp, inp.pp)
    dt = kv_dtype(inp.kv_dtype)
    bs = inp.block_size if inp.block_size is not None else eng.block_size
    mnbt = inp.max_num_batched_tokens or default_max_num_batched_tokens(gpu)
    alloc = eng.allocation(bs, mnbt)
    lines, pool, util, assumptions, w = _pool(model, gpu, inp, eng)
    assumptions.insert(0, f"engine: {eng.label}: {eng.note}")
    assumptions.append(f"KV dtype {dt.name}: {dt.note}")

    per_tok, state = per_token_all_layers(model, dt.name, inp.tp, inp.pp, alloc)
    usable = max(pool, 0)
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
        assumptions.append("recurrent-state layers hold a fixed state per request; the pool's token count leaves room for one request's state")

    req = request_bytes(model, inp.seq, dt, inp.tp, inp.pp, alloc)
    conc = usable / req if req else float("inf")
    maxc = usable // req if req else 0
    mem_len = longest_request(model, usable, dt.name, inp.tp, inp.pp, alloc)
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
    return FitResult(
        engine=eng.name,
        engine_label=eng.label,
        seq=inp.seq,
        tp=inp.tp,
        pp=inp.pp,
        gpus=inp.tp * inp.pp,
        kv_dtype=dt.name,
        block_size=bs,
        util=util,
        budget=lines,
        gpu_memory_bytes=lines[0].bytes,
        weight_bytes=w,
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
    )


def max_batch_in_memory(model: ModelSpec, gpu: GPUSpec, inp: FitInputs, seqs):
    """Requests of each length in ``seqs`` (an int or a numpy array) that fit in the KV pool."""
    f = fit(model, gpu, inp)
    eng = engine(inp.engine)
    bs = inp.block_size if inp.block_size is not None else eng.block_size
    alloc = eng.allocation(bs, inp.max_num_batched_tokens or default_max_num_batched_tokens(gpu))
    req = request_bytes(model, seqs, kv_dtype(inp.kv_dtype), inp.tp, inp.pp, alloc)
    return max(f.kv_pool_usable_bytes, 0) // req, f


def plan(model: ModelSpec, gpu: GPUSpec, inp: FitInputs, concurrency: int, max_tp: int = 64) -> dict:
    """The reverse question: what do ``concurrency`` requests of ``inp.seq`` tokens need?

    Returns the smallest tensor-parallel size (at the given pipeline size) whose pool holds
    them, and the memory utilisation that would hold them at the given tp.
    """
    if concurrency < 1:
        raise KvcalcError("--concurrency must be >= 1", "--concurrency", "a positive number of requests")
    eng = engine(inp.engine)
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
            r = fit(model, gpu, FitInputs(**{**inp.__dict__, "tp": tp}))
        except KvcalcError:
            tp *= 2
            continue
        tried.append({"tp": tp, "gpus": tp * inp.pp, "max_concurrency": r.max_concurrency})
        if r.max_concurrency >= concurrency:
            tp_needed = tp
            break
        tp *= 2
    return {
        "concurrency": concurrency,
        "kv_bytes_needed_per_gpu": need,
        "util_needed": util_needed,
        "util_possible": util_needed is not None and util_needed <= 1.0,
        "tp_needed": tp_needed,
        "gpus_needed": tp_needed * inp.pp if tp_needed else None,
        "tried": tried,
    }
