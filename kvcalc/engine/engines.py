"""Serving engines as data: one record per (engine, range of releases), each field a rule of its
memory accounting, read from that engine's released code (docs/engines.md cites file and release),
or a host cost of its steps that was measured apart (the step-time model's, kvcalc.engine.steptime).

``fit`` is one function over these records, so engines and their releases differ only where a field
says they do, and no code elsewhere asks an engine its name. ``engine("vllm")`` is the current
release's accounting; ``engine("vllm@0.11")`` (or ``vllm==0.11.2``, ``vllm-0.11``) an older one.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import field, replace
from typing import Any, Literal

from kvcalc._record import record
from kvcalc.engine.alloc import LOGICAL, Allocation, PPSplit
from kvcalc.errors import KvcalcError, closest, unknown_name
from kvcalc.specs.dtypes import normalize_weight_dtype
from kvcalc.specs.gpu import GPUSpec
from kvcalc.specs.model import ModelSpec

GiB = 2**30


MemFractionRule = Literal[
    "none",
    "sglang-0.5",
    "sglang-0.5.10",
    "sglang-0.5.3",
    "sglang-0.4.7.post1",
    "sglang-0.4.7",
    "sglang-0.4",
    "sglang-0.4.5",
    "sglang-0.4.0",
    "sglang-0.3.6",
    "sglang-0.3",
]
"""How an SGLang release sets its default mem_fraction_static (memory.sglang_mem_fraction)."""


SM100 = ("b200", "gb200")
"""Catalog GPUs of compute capability 10, where vLLM ranks FlashInfer's sparse MLA backend first at 16
heads a GPU or fewer (Engine.sparse_mla_fp8_by_backend)."""
SM10_UP = (*SM100, "rtx5090", "rtx-pro-6000")
"""Catalog GPUs of compute capability 10 or 12 (Blackwell), where SGLang stores a DSA model's cache in fp8
under kv_cache_dtype auto (Engine.sparse_mla_auto_kv)."""
HOPPER_GPUS = ("h100-sxm", "h100-pcie", "h100-nvl", "h200", "h20")
"""Catalog GPUs of compute capability 9.0: where FlashMLA runs, and torch sizes its cuBLAS workspace apart
(memory.cublas_workspace_bytes)."""
AMD_INSTINCT = ("mi300x", "mi325x", "mi355x")
"""The AMD Instinct GPUs in the catalog (the engines run HIP builds on them)."""
BELOW_SM80 = ("t4",)
"""Catalog NVIDIA GPUs of compute capability below 8.0 (the T4, 7.5), where SGLang keeps DeepSeek's shared expert out of
the fused MoE call (steptime.sglang_shared_fused)."""
TRITON_GPUS = ("h100-sxm", "h100-pcie", "h100-nvl", "h200", "h20", "b200")
"""The GPUs SGLang's Triton decode floor is priced on (StepModel.attn_floor_s): Hopper, where its block rate was
measured, and compute capability 10, where the compiled kernel's registers and shared memory are Hopper's
(steptime.TRITON_BLOCKS_PER_SM), those whose specs give their multiprocessors (not yet the GB200's: its SM
count is not published), which the kernel's splits and turns are counted in."""
TRITON_GPU_WORDS = "the H100, H200, H20 and B200"
"""TRITON_GPUS as the messages that name them say it."""
V0_TRITON_MLA_GPUS = ("mi300x", "mi325x")
"""The AMD GPUs on which the step model prices vLLM V0's Triton MLA decode (triton_mla_fixed_splits): the gfx942 parts,
whose compute units the kernel's occupancy was compiled for (steptime.V0_TRITON_MLA_BLOCKS_PER_CU)."""
V0_TRITON_MLA_SPLITS = 4
"""The parts vLLM V0's Triton MLA backend splits every request's context into, whatever the batch
(attention/backends/triton_mla.py, num_kv_splits = 4, "TODO(lucas) add heuristic", read in 0.7.3)."""


TritonMLAKernel = Literal["vllm-v0", "sglang-cuda", "sglang-hip"]
"""Which fixed-split Triton MLA decode launch a release runs (triton_mla_fixed_splits): vLLM V0's on ROCm, SGLang
0.4.1 to 0.4.4's on CUDA or on ROCm; each holds its own blocks a multiprocessor or compute unit
(steptime.FIXED_TRITON_MLA_BLOCKS)."""


def triton_mla_fixed_splits(e: Engine | None, model: ModelSpec, gpu: GPUSpec) -> tuple[int, TritonMLAKernel] | None:
    """The fixed KV splits of the Triton MLA decode ``e`` runs by default for ``model`` on ``gpu``, and which launch it
    is, where the step model prices it; else None.

    vLLM V0 releases that cache MLA's latent (0.7.x) on an AMD GPU of V0_TRITON_MLA_GPUS, where platforms/rocm.py
    returns TritonMLABackend for every MLA model (read in 0.7.3) and no other MLA backend exists (a posted V0 log of
    DeepSeek-R1 on MI300As, vllm-project/vllm#12773, prints "rocm.py:121] Using Triton MLA backend."), 4 splits. On
    NVIDIA GPUs V0 runs the same backend unless VLLM_ATTENTION_BACKEND asks for FlashMLA (from 0.7.3's nightlies),
    which a deployment's settings do not say, so there the note (triton_default_note) stands.

    SGLang 0.4.1 to 0.4.4 (Engine.triton_mla_splits), whose only MLA decode backend is Triton's unless
    --enable-flashinfer-mla is passed (from 0.4.3; model_runner.py, "MLA optimization is turned on. Use triton backend.",
    read in 0.4.1, 0.4.2.post4, 0.4.3.post2 and 0.4.4): on the Hopper GPUs
    of TRITON_GPUS, and on V0_TRITON_MLA_GPUS where the release's ROCm launch is one (0.4.2.post2 on)."""
    if e is None or e.attention_backend or model.mla is None or model.has_sparse_mla:
        return None
    if e.name == "sglang":
        cuda, hip = e.triton_mla_splits
        if cuda and gpu.name in HOPPER_GPUS and gpu.name in TRITON_GPUS:
            return cuda, "sglang-cuda"
        if hip and gpu.name in V0_TRITON_MLA_GPUS:
            return hip, "sglang-hip"
        return None
    if e.name != "vllm" or not e.older_than(0, 8) or e.mla_per_head(model):
        return None
    return (V0_TRITON_MLA_SPLITS, "vllm-v0") if gpu.name in V0_TRITON_MLA_GPUS else None


@record(frozen=True)
class TokenRatio:
    """SGLang's admission reserve for the output tokens still to come (Engine.token_ratio). Its prefill adder
    (managers/schedule_policy.py PrefillAdder) takes a waiting request in only while its prompt and its
    min(max_new_tokens, ``clip``) fall short of the pool's free and evictable tokens less what the batch has
    claimed: each running request's min(max_new_tokens - its output so far, ``clip``) times the running ratio, and
    the whole prompt and min(max_new_tokens, ``clip``) of each request taken in before it in the same batch. The
    ratio starts at ``init``, falls by (init - init x ``floor_factor``) / ``decay_steps`` each decode step to init x
    ``floor_factor`` (scheduler.py update_running_batch), returns to init when the scheduler idles
    (self_check_during_idle), and after a retraction is (the output tokens the requests left have made + ``retract_steps``
    a request) over their max_new_tokens, at most 1 (schedule_batch.py retract_decode). Read in 0.4.0, 0.4.3.post2,
    0.5.3, 0.5.6, 0.5.9 and 0.5.23 (new_token_ratio_tracker.py; 0.5.23 adds 1 to the divisor): the same figures, the
    default schedule_conservativeness of 1. SGLang 0.3.0 starts its ratio at 0.1 and decays it 0.001 a step
    (tp_worker.py, global_config.py): not modelled.

    With the radix cache off (ChunkCache, whose ``disable`` is set) a request that asks to ignore EOS (SGLang's
    bench_serving sends ignore_eos unless --disable-ignore-eos) takes the other test instead (add_one_req_ignore_eos):
    every running request, each taken in before it in the batch and itself, sorted by their outputs to come (in full:
    the ratio is 1 for them), must find room as each ends: at the i-th of n, the free tokens less its prompt (and the
    prompts taken in before it) plus the tokens the first i hold must exceed ``ignore_eos`` 'own': its outputs to come
    x (n - i) + (n - i), from 0.4.8 (read in 0.4.8, 0.4.9, 0.5.2, 0.5.3, 0.5.6, 0.5.9 and 0.5.23); 'next': the next
    one's outputs to come (its own for the last) x (n - i), to 0.4.7.post1 (read in 0.4.0, 0.4.3.post2, 0.4.5.post3,
    0.4.6.post5, 0.4.7 and 0.4.7.post1; the record of 0.4.7.post1 to 0.4.8 takes 0.4.7.post1's)."""

    init: float = 0.7
    floor_factor: float = 0.14
    decay_steps: int = 600
    clip: int = 4096
    retract_steps: int = 20
    ignore_eos: Literal["own", "next"] = "own"
    retract_room: Literal["step", "steps"] = "step"
    """How far a retraction goes: until the requests left have room for one more decode step ('step', from 0.5.2:
    check_decode_mem, read in 0.5.2, 0.5.3, 0.5.6, 0.5.9 and 0.5.23), or for ``retract_steps`` of them ('steps', to
    0.5.1.post3: available_size() < retract_decode_steps x the requests left, read in 0.4.0, 0.4.3.post2, 0.4.9,
    0.4.10, 0.5.0rc0 and 0.5.1.post3; the record of 0.5.0rc0 to 0.5.2 takes 0.5.2's); one request at least, never
    the last."""
    requeue: Literal["tail", "front"] = "tail"
    """Where a retracted request waits: appended to the waiting queue ('tail': scheduler.py waiting_queue.extend /
    _add_request_to_queue, read in 0.4.0, 0.4.3.post2, 0.4.5.post3, 0.4.8, 0.5.2, 0.5.3, 0.5.6, 0.5.9 and 0.5.23), which
    the default first-come-first-served policy (schedule_policy 'fcfs' from 0.4.4: server_args.py, read in 0.4.4 to
    0.5.9; schedule_policy.py calc_priority leaves the queue as it is) serves in that order, so the requests that reached
    the engine before the retraction go first; 'front' where the default policy was 'lpm' (0.4.0 to 0.4.3.post2), which
    sorts the queue by the tokens of each prompt found in the radix cache, and a retracted request's cached prompt puts
    it first (taken as at the front, as vLLM's preempted requests wait)."""

    @property
    def floor(self) -> float:
        return self.init * self.floor_factor

    @property
    def decay(self) -> float:
        return (self.init - self.floor) / self.decay_steps

    def at(self, start: float, steps: int) -> float:
        """The ratio ``steps`` decode steps after it was ``start``: each step takes max(ratio - decay, floor), so one
        below the floor (after a retraction) rises to it at the first."""
        if steps <= 0:
            return start
        r = start - self.decay * steps
        return r if r > self.floor else self.floor

    def conservative(self, c: float) -> TokenRatio:
        """The ratio under ``--schedule-conservativeness c``: its start init x c (at most 1), its floor and fall
        following (scheduler.py: init_new_token_ratio = min(default_init_new_token_ratio x c, 1.0), read in 0.4.0 to
        0.5.23)."""
        return self if c == 1 else replace(self, init=min(self.init * c, 1.0))

    def room(self, running: int) -> int:
        """The free tokens a retraction leaves ``running`` requests (retract_room)."""
        return running * (self.retract_steps if self.retract_room == "steps" else 1)

    def after_retract(self, made: int, left: int, max_new: int) -> float:
        """The ratio after a retraction that leaves ``left`` requests, which have made ``made`` output tokens of
        ``max_new`` in all."""
        return min(1.0, (made + self.retract_steps * left) / max_new) if max_new > 0 else 1.0


SGLANG_TOKEN_RATIO = TokenRatio()
SGLANG_TOKEN_RATIO_047 = TokenRatio(ignore_eos="next", retract_room="steps")
"""SGLang 0.4.4 to 0.4.7.post1: the ignore-EOS test against the next request's outputs to come, retractions to 20
steps' room (TokenRatio)."""
SGLANG_TOKEN_RATIO_043 = TokenRatio(ignore_eos="next", retract_room="steps", requeue="front")
"""SGLang 0.4.0 to 0.4.3.post2: as 0.4.4 to 0.4.7.post1, but its longest-prefix-match policy serves a retracted request
first (TokenRatio.requeue)."""
SGLANG_TOKEN_RATIO_051 = TokenRatio(retract_room="steps")
"""SGLang 0.4.8 to 0.5.1.post3: retractions to 20 steps' room (TokenRatio)."""


DenseMLARule = Literal["none", "flashmla", "cutlass", "flashinfer", "selector"]
"""How a vLLM release sizes the blocks of a dense (indexer-free) MLA model's cache on NVIDIA GPUs
(Engine.dense_mla):
'flashmla' (0.8.0 to 0.9.2): FlashMLA by default where it runs, 64 on Hopper;
'cutlass' (0.10.1.1 to 0.14.0): CUTLASS MLA on compute capability 10, 128; FlashMLA elsewhere, 64 on Hopper;
'flashinfer' (0.15.0 to 0.17.0): FlashInfer MLA, 64, on compute capability 10 for a qk_nope_head_dim of 128
(CUTLASS's 128 otherwise); FlashMLA, 64, on Hopper (each vllm/platforms/cuda.py check_and_update_config,
"Forcing kv cache block size to N for X backend");
'selector' (0.18.0 on): the backend the priorities pick and its smallest kernel block where 16 is not one
(platforms/interface.py update_block_size_for_backend, v1/attention/backend.py get_preferred_block_size;
read in 0.18.0, 0.19.0, 0.20.0, 0.24.0 and 0.33.0): FlashAttention MLA on Hopper, any multiple of 16, so 16;
FlashInfer MLA on compute capability 10, 32 and 64, so 32, for a qk_nope_head_dim of 64, 128 or 192 (0.18.0:
64 or 128), else CUTLASS MLA's 128; 'none': the record's block (V0 to 0.7.3, and other GPUs)."""


def dense_mla_block(rule: DenseMLARule, gpu: str, qk_nope: int) -> int | None:
    """The block a vLLM release's default MLA backend forces on ``gpu`` (a catalog name) for a dense MLA
    model with ``qk_nope`` (its qk_nope_head_dim); None: the record's own."""
    sm100, hopper = gpu in SM100, gpu in HOPPER_GPUS
    if rule == "flashmla":
        return 64 if hopper else None
    if rule == "cutlass":
        return 128 if sm100 else 64 if hopper else None
    if rule == "flashinfer":
        return (64 if qk_nope == 128 else 128) if sm100 else 64 if hopper else None
    if rule == "selector":
        return (32 if qk_nope in (64, 128, 192) else 128) if sm100 else None
    return None


@record(frozen=True)
class Engine:
    name: str
    """The engine's family: vllm, sglang, trtllm, hf, hf4, plain."""
    version: str
    """The release the rules were read from ("" for engines without releases that matter)."""
    releases: str
    """The releases these rules hold for, in words."""
    label: str
    budget: Literal["util_of_total", "fraction_of_free", "util_of_start_free", "all"]
    """util_of_total: util x device total, then subtract (vLLM).
    util_of_start_free: util x the memory free at start-up, before the weights, then subtract the
    weights (SGLang).
    fraction_of_free: util x (what is free after weights, activations, non-torch) (TensorRT-LLM).
    all: everything left (transformers, plain)."""
    default_util: float | None
    block_size: int | None
    window_style: Literal["window", "vllm", "window-1", "full"] = "window"
    """How a sliding or chunked layer is sized: its window (min(S, w)); vLLM's reservation (window
    plus the tokens in flight, in blocks, plus one); transformers' w - 1; or every token (engines
    that do not save memory on windows)."""
    pp_split: PPSplit = "before-last"
    """Which pipeline stages take the layers that do not divide evenly (kv.pp_partition): vLLM 0.8.0 on
    the stages just before the last; vLLM to 0.7.3 and SGLang to 0.5.5 the last stage all of them
    (vllm/distributed/utils.py get_pp_indices, read in 0.6.3, 0.6.6, 0.7.0 and 0.7.3 against 0.8.0 to
    0.9.0; sglang/srt/distributed/utils.py, 0.4.5.post1 to 0.5.5); SGLang from 0.5.6 the last stages one
    each (0.5.6, 0.5.14, 0.5.23); TensorRT-LLM the first stages one each (tensorrt_llm/mapping.py
    pp_layers, NVIDIA/TensorRT-LLM at b35ac1b)."""
    mla_storage: Literal["latent", "latent-256", "expanded", "padded-heads", "qk-heads"] = "latent"
    """MLA: the latent; decompressed per-head K and V (transformers 4.x); per-head K and V padded
    to a head size of 256 (vLLM before MLA support, 0.5-0.6); per-head K and V with V padded to the
    query-key head size (vLLM 0.7.0, the last release before MLA support: MLA.stored_head_dims)."""
    mla_fp8_only: bool = False
    """The release keeps MLA only for a checkpoint in 16 bits or fp8 (weights and activations): any other quantization
    (AWQ, GPTQ, int8, NVFP4, weight-only fp8) turns it off, and the model is cached and decoded per head as vLLM 0.7.0
    does, 'qk-heads' (vLLM 0.7.1 and 0.7.2: config.py ModelConfig.use_mla, "MLA is not supported with %s quantization.
    Disabling MLA." for a quantization other than fp8 or compressed-tensors, and compressed-tensors only where every
    group has fp8 weights and activations; 0.7.3 drops the test)."""
    pad_groups: bool = False
    """Hybrid models: each attention type's layers grouped into equal groups sharing one block pool."""
    chunked_as_full: bool = False
    """Chunked local attention (Llama 4) stored as full attention (hybrid manager off for it)."""
    swa_pool_ratio: float | None = None
    """SGLang: allowlisted hybrid-SWA models get a separate sliding pool of this size relative to the
    full pool; other models store every layer's every token."""
    swa_architectures: frozenset[str] = frozenset()
    per_window_pools: bool = False
    """TensorRT-LLM: one pool per window size, memory split in proportion to window x bytes per token."""
    state_pages: Literal["sum", "padded", "align"] = "sum"
    """Recurrent state: summed as it is; or padded to the attention page (one block per request);
    or 'align' (prefix caching): two padded blocks per request."""
    in_flight: Literal["none", "batched_tokens", "concurrent_batches"] = "none"
    """Tokens in flight added to window reservations: none; max_num_batched_tokens; or
    max_concurrent_batches x max_num_batched_tokens (2 at PP 1 with async scheduling, PP + 1 with
    the V2 model runner)."""
    batched_tokens_default: Literal[
        "none",
        "v0",
        "v1-0.8.0",
        "v1-0.8.4",
        "v1-0.8.5",
        "v1",
        "v1-160",
        "sglang-0.4",
        "sglang-0.4.7",
        "sglang-0.4.7.post1",
        "sglang-0.5",
        "sglang-0.5.20",
    ] = "none"
    """How max_num_batched_tokens defaults: V0 (max(max_model_len, 2048), or v0_chunk_tokens with
    chunked prefill, on by v0_chunking's rule); V1 (8192 on GPUs of >= 70 GiB that are not A100, else 2048;
    in 0.8.0 to 0.8.4 on a GPU named H100 or H200, in 0.8.5 on any of >= 70 GiB: Engine._large_batch_gpu);
    and 16,384 on GPUs of
    >= 160 GiB in current releases; SGLang's chunked_prefill_size by the GPU's memory (server_args.py:
    0.4.6.post5 2,048 under 25,000 MiB, else 8,192; 0.5.3 2,048 under 35 GiB, 4,096 under 60, 8,192
    under 160, else 16,384)."""
    util_rounding: Literal["fraction", "float", "ceil"] = "fraction"
    """util x total: as an exact fraction floored, as a float (vLLM 0.11), or its ceiling (vLLM 0.33)."""
    cudagraph: Literal["none", "after", "estimate"] = "none"
    """CUDA graphs: not used; captured after the KV cache is sized (out of the headroom); or their
    estimated memory subtracted before sizing (vLLM >= 0.20)."""
    cudagraph_estimate_rocm: bool = True
    """Whether the CUDA-graph estimate is made on ROCm too: vLLM 0.20.0 to 0.25.0 profile the graphs only
    where current_platform.is_cuda() (v1/worker/gpu_worker.py determine_available_memory), 0.26.0 on
    where is_cuda_alike(), ROCm included; where not, a ROCm start's graphs come out of the headroom."""
    tokens_report: Literal["pool", "blocks", "blocks-per-group", "concurrency-x-length"] = "pool"
    """What the engine logs as its KV cache size in tokens."""
    concurrency_report: Literal["bytes", "blocks"] = "bytes"
    """'blocks': blocks / blocks per request of max_model_len (vLLM's log); 'bytes': pool / request."""
    null_block: bool = False
    """One block is reserved (vLLM V1's null block): the pool holds one block less than it logs."""
    subtracts_activation: bool = True
    subtracts_non_torch: bool = True
    mem_fraction_rule: MemFractionRule = "none"
    """SGLang's default mem_fraction_static: derived from GPU memory, TP and PP (0.5.x), or a table by TP x PP (0.4)."""
    sampler_bytes_per_logit: int = 14
    """The profile run's sampler peak, in bytes per vocabulary entry per request (max_num_seqs rows):
    with FlashInfer's top-k/top-p sampler the model-dtype logits, their fp32 copy, the masked logits
    and the probabilities (2 + 4 + 4 + 4 = 14); where PyTorch sorts them (v1/sample/ops/
    topk_topp_sampler.py apply_top_k_top_p, 0.11) also the sorted values, int64 indices, two masks
    and the re-scattered logits (2 + 4 + 4 + 8 + 1 + 4 + 1 + 4 = 28); V0's sampler (model_executor/
    layers/sampler.py, 0.6.3) keeps the cumulative sum apart (32)."""
    sampler_range: tuple[int, int] | None = None
    """The sampler's bytes per logit from its low to its high end (V1: which sampler runs depends
    on what is installed and the GPU); None: the V0 range, 0.6x to 1.6x of the whole peak."""
    sampler_old_gpus: tuple[int, int, int] | None = None
    """(best, low, high) bytes per logit on GPUs without FlashInfer's sampler (ROCm, NVIDIA before
    sm_80), where the release picks FlashInfer by compute capability."""
    custom_allreduce: bool | None = None
    """Whether the engine's custom all-reduce runs, where a deployment names it (a fork's build, or
    ``--disable-custom-all-reduce``); None: as the release's code decides on the GPU (steptime.custom_ar_runs)."""
    mixes_prefill: bool = True
    """Whether a step carries prompt chunks beside the running requests' decodes (vLLM, TensorRT-LLM:
    chunked prefill), or runs waiting prompts as a prefill batch of their own, first, and decodes only
    when no prompt waits (SGLang: scheduler.py get_next_batch_to_run, 'Run prefill first if possible',
    enable_mixed_chunk off by default in server_args.py, 0.4.6.post5 and 0.5.3). A prefill batch holds
    at most chunked_prefill_size tokens over its requests (schedule_policy.py PrefillAdder takes each
    request's tokens off rem_chunk_tokens), which max_num_batched_tokens stands for here."""
    prompt_blocks: Literal["whole", "chunk"] = "whole"
    """When a paged prompt's KV blocks are taken. 'whole': all of them when the request is admitted,
    which waits until they fit (vLLM V0: core/block_manager.py can_allocate counts the whole prompt's
    blocks, also with chunked prefill, 0.6.5; SGLang's PrefillAdder counts the whole prompt).
    'chunk': vLLM V1 takes only the blocks of the tokens it schedules in a step
    (v1/core/kv_cache_manager.py allocate_slots: cdiv(computed + new tokens, block_size) less those
    held), so a waiting request is admitted when its first chunk fits, and a running request that
    finds no free block preempts the last admitted, its computed tokens dropped
    (v1/core/sched/scheduler.py schedule: self.running.pop(), num_computed_tokens = 0), and no
    waiting request is admitted in that step ('if not preempted_reqs'); read in 0.8.2, 0.11.0 and
    0.16.0."""
    v0_chunking: Literal["none", "off", "0.5", "0.6", "0.7"] = "none"
    """vLLM V0's chunked prefill, on or off by default by release (engine/arg_utils.py
    create_engine_config; config.py): 'off', never (0.2 to 0.5.2, enable_chunked_prefill False);
    '0.5', on for max_model_len > 32,768 on a CUDA device without sliding windows (0.5.3 to 0.5.5);
    '0.6', also off for multimodal models (0.6.3); '0.7', also off on ROCm (0.7.0), and forced off
    for MLA models ('MLA is enabled; forcing chunked prefill ... to be disabled', VllmConfig
    __post_init__, 0.7.3). Off, V0 runs waiting prompts whole as steps of their own and decodes
    only when none is scheduled (core/scheduler.py _schedule_default: 'Don't schedule decodes if
    prefills are scheduled'); on, its steps carry decodes first and prompt chunks beside them.
    'none': not V0 (mixes_prefill says how its steps are made)."""
    v0_chunk_tokens: int = 512
    """V0's max_num_batched_tokens with chunked prefill on: 512 through 0.6.3, 2,048 from 0.7.0
    (config.py SchedulerConfig)."""
    sampler_row_copies: int = 0
    """Copies of the sampler rows' hidden states alive under the profile's sampler run, rows x hidden
    in the model's dtype each: 2 where _dummy_run returns ``hidden_states[logit_indices]`` and
    _dummy_sampler_run replaces it with ``torch.rand_like`` (v1/worker/gpu_model_runner.py, 0.11.0
    to 0.26.0); 1 for the V2 model runner, which gathers them and samples from them as they are
    (v1/worker/gpu/model_runner.py profile_run, 0.33.0); 0 where not read (V0)."""
    triton_sampler_buffer: Literal["none", "default", "fallback"] = "none"
    """Where the top-k/top-p masks run as vLLM's Triton kernel (v1/sample/ops/topk_topp_triton.py
    apply_top_k_top_p_triton, 0.17.0 to 0.33.0; 8 rows or more), which caches an fp32 buffer of
    min(next power of 2 of min(SMs, rows), SMs) rows of the vocabulary on the device: 'default', the
    sampler PyTorch's path runs unless FlashInfer's is asked for (0.17 to 0.20); 'fallback', only
    where FlashInfer's does not run (0.21 on: ROCm, NVIDIA before sm_80, or the PyTorch sampler
    asked for); 'none', no such kernel (before 0.17)."""
    sampler_impl: tuple[tuple[str, int, int, int], ...] = ()
    """(sampler, best, low, high) bytes per logit where the release's top-k/top-p sampler is
    FlashInfer's or PyTorch's by what is installed or set, and a log says which ('Using FlashInfer
    for top-p & top-k sampling'; 'Falling back to the PyTorch-native implementation'): FlashInfer's
    as 0.21 measures it, PyTorch's path as the release runs it: its sort up to 0.16 (38 B, as a 0.10.2
    log that names the PyTorch sampler and breaks its budget down measures it), from 0.17 the Triton
    masks in place (14 B; docs/engines.md)."""
    num_seqs_default: int | None = None
    """max_num_seqs where the release fixes its default apart from vLLM's and SGLang's rules: TensorRT-LLM's
    trtllm-build max_batch_size, 2,048 (tensorrt_llm/builder.py BuildConfig, NVIDIA/TensorRT-LLM at 008b2b8d,
    beside max_num_tokens 8,192)."""
    decoder_buffers: bool = False
    """TensorRT-LLM's C++ runtime on a TensorRT engine (trtllm-build): before it sizes the KV cache, its
    runtime buffers and its decoder take buffers of max_batch_size x the vocabulary each
    (kvcalc.engine.memory.trt_decoder_bytes) and the engine's one execution context, sized by the
    build's max_num_tokens, in place of a profiled forward pass and sampler."""
    nvls_mib_per_rank: float = 0.0
    """NCCL's NVLink-SHARP (NVLS) buffers each TP communicator allocates on every GPU, MiB per rank of the
    node's TP group, where the release's NCCL sizes them large and creates them before the profile reads
    free memory: nChannels x 2 x (buffSize + 2 MiB) x ranks (NCCL src/transport/nvls.cc ncclNvlsSetup,
    2.18 to 2.20: buffSize the 4 MiB of NCCL_BUFFSIZE, 24 channels as vllm-project/vllm#9699's NCCL log line
    shows on 8 Hopper GPUs: 288 MiB; 2.21: buffSize 128 KiB x 8 steps, 144 MiB; 2.26 on: 16 channels of
    1 MiB, 32 MiB, no longer apart from the other NCCL buffers). Only on GPUs with NVLS (an NVSwitch
    domain of Hopper or later) and TP groups of more than 2 ranks; 0: not counted apart."""
    moe_workspace_held: bool = False
    """The fused-MoE kernel's workspaces outlive the profile's forward pass, so the sampler's warm-up
    peaks on top of them: vLLM from 0.14.0 runs its 16-bit and fp8 routed experts through the modular
    kernel (model_executor/layers/fused_moe/modular_kernel.py _allocate_buffers), whose buffers come from
    the worker's WorkspaceManager (v1/worker/workspace.py), grown to the largest batch and kept; 0.13.0
    and earlier call fused_experts, whose caches are freed with the forward pass."""
    penalty_bytes_per_logit: float = 0.0
    """Persistent sampler buffers per vocabulary entry per max_num_seqs row that the profile counts
    as memory in use (0.27 and later: output_bin_counts and prompt_bin_mask, 4 B + 1 bit)."""
    vision_profile: Literal["none", "each", "concat", "fused", "fused-ir"] = "none"
    """vLLM V1's profile of a vision encoder, where kvcalc counts the ViT's code (kvcalc.engine.encoder):
    'each' rotates q and k one at a time through float32 copies (read from 0.9.0.1, 0.10.0, 0.10.1.1 and
    0.10.2), 'concat' joins them first (0.11.0); 'fused' rotates them in 16 bits by a kernel beside a
    compiled SiLU-and-mul (0.15.0), 'fused-ir' as 'fused' with the norm's residual upcast too (0.21.0,
    0.33.0), Qwen2-VL's tower there not counted (its range bounded by 0.11.0's count); 'none': not
    modelled, the activation range's high end allows 3 GiB."""
    vision_profile_later: str = ""
    """Where the record's releases run past the one whose encoder code was read, what changed there
    (the estimate's low end then takes none of the encoder's peak); empty: every release read."""
    encoder_cache_padded: bool = False
    """The profile pads the encoder's cached embeddings with zeros to the encoder budget where they
    are fewer (v1/worker/gpu_model_runner.py profile_run, 0.11.0 to 0.11.2; gone in 0.12.0)."""
    video_tokens_formatted: bool = False
    """Qwen3-VL's video item counts its formatted prompt tokens, 12.5 a video token, so the profile
    encodes a dummy video (qwen3_vl.py get_max_video_tokens, 0.11.0 to 0.12.0)."""
    video_frames_cap: int = 0
    """Where kvcalc models the profile's dummy video, Qwen2-VL's and Qwen2.5-VL's most frames in it
    (qwen2_vl.py _MAX_FRAMES_PER_VIDEO: 16 in 0.9.0.1 to 0.10.2, 14 from 0.11.0); 0: not modelled."""
    video_frames_less_image: bool = False
    """The dummy video's frames fit max_model_len less one image's tokens, counted from 0 (qwen2_vl.py
    get_num_frames_with_most_features, 0.9.0.1 to 0.10.1.1); else all of max_model_len, from 1."""
    pp_start_check: Literal["stage", "whole"] = "stage"
    """vLLM V1's start-up check that one request of max_model_len fits: each pipeline stage's layers
    against that stage's available memory ('stage'), or every stage's layers together, the whole
    model, against the least any stage has ('whole': v1/core/kv_cache_utils.py get_kv_cache_configs,
    0.14.0 to 0.16.0, which merges the stages' KV specs into global groups before the check and its
    estimated maximum length; 0.13.0 checks each worker's own, 0.17.0 projects the groups onto each
    worker again). The same at PP 1."""
    kv_cache_memory_flag: bool = False
    """--kv-cache-memory-bytes is taken: the KV pool of each GPU as given, after a profile run
    that only compiles; gpu_memory_utilization is not applied (v1/worker/gpu_worker.py
    determine_available_memory, vLLM 0.10.2 and later; not in 0.10.1.1)."""
    kv_cache_memory_since: str = ""
    """Where only the record's later releases take --kv-cache-memory-bytes, the first that does
    (fit says so); empty: all of them."""
    sparse_mla_auto_fp8: str = ""
    """The releases of the record that store a sparse-MLA model's (DeepSeek-V3.2's) cache as
    fp8_ds_mla under kv_cache_dtype auto, where others keep bf16 (fit says so): 0.11.0's
    model_executor/models/config.py DeepseekV32ForCausalLM; 0.11.1 turns only fp8 into it."""
    sparse_mla_fp8_by_backend: bool = False
    """An fp8 cache of a sparse-MLA model (DeepSeek-V3.2's) is FlashMLA's fp8_ds_mla only under the
    FLASHMLA_SPARSE backend, and keeps the standard fp8 layout under FLASHINFER_MLA_SPARSE, which comes
    first on compute capability 10 GPUs at 16 heads a GPU or fewer (vLLM 0.18.0
    model_executor/layers/attention/mla_attention.py; platforms/cuda.py _get_backend_priorities, from
    0.17.0 to 0.33.0). 0.17.0 itself still turned every fp8 cache of DeepSeek-V3.2 into fp8_ds_mla
    (model_executor/models/config.py), as 0.11 to 0.16 did."""
    dense_mla: DenseMLARule = "none"
    """The blocks a dense MLA model's cache takes on NVIDIA GPUs, by the release's default backend
    (DenseMLARule, dense_mla_block)."""
    sparse_mla_block: int | None = None
    """The block size a sparse-MLA model's (DeepSeek-V3.2's, GLM-5's) cache takes on NVIDIA GPUs, where
    not the record's: vLLM forces 64 for its sparse backends (platforms/cuda.py "Forcing kv cache block
    size to 64 for FlashMLASparse backend", 0.11.0 and 0.16.0; 0.24.0's DEEPSEEK_V32_INDEXER backend
    supports only 64, v1/attention/backends/mla/indexer.py; 0.19.1 and 0.20.0 log "Setting kv cache
    block size to 64 for DEEPSEEK_V32_INDEXER backend")."""
    sparse_mla_auto_kv: str = ""
    """What the engine stores a sparse-MLA model's cache as under kv_cache_dtype auto on the GPUs that name
    (fit warns where kvcalc's 16-bit default differs): SGLang 0.5.3 to 0.5.23 take fp8_e4m3 on compute
    capability 10 and up, bf16 below (server_args.py 0.5.3rc2 to 0.5.14, arg_groups/overrides.py 0.5.19 and
    0.5.23: "Setting KV cache dtype to ... for DeepSeek DSA on SM{major} device")."""
    auto_max_model_len: bool = False
    """--max-model-len auto (or -1) is taken: after profiling at the model's context, the largest
    max_model_len whose one request fits the available memory, at most that context
    (engine/arg_utils.py human_readable_int_or_auto, v1/core/kv_cache_utils.py
    _auto_fit_max_model_len; vLLM 0.14.0 and later, not 0.13.0)."""
    vlm_fraction: Literal["none", "runner-0.95", "runner-0.9", "vit"] = "none"
    """How SGLang cuts mem_fraction_static for a multimodal model: 'runner-0.95' and 'runner-0.9', x 0.95
    (0.3.0 to 0.4.4.post3) or x 0.9 (0.4.4.post4 to 0.4.8) whether given or not (model_executor/model_runner.py); 'vit', the default alone, by the vision tower's
    size (memory.vit_fraction_factor; 0.4.9.post3 on); 'none' (0.4.9 to 0.4.9.post2, and other engines)."""
    aiter_fraction: bool = False
    """SGLang multiplies mem_fraction_static, given or default, by 0.85 where ROCm's aiter attention runs at
    a context over 8,192 tokens (model_executor/model_runner.py, 0.4.7 to 0.5.4; server_args.py
    _handle_attention_backend_compatibility, 0.5.5 to 0.5.18; arg_groups/attention_hook.py from 0.5.19,
    unless SGLANG_AITER_HONOR_EXPLICIT_MEM_FRACTION is set for a given one). aiter is the default on an
    AMD GPU for every MHA model and an MLA model of 16 or 128 heads over tp_size (model_runner.py
    model_specific_adjustment, 0.4.7 to 0.5.4; server_args.py from 0.5.5)."""
    state_pool: Literal["none", "fixed", "ratio"] = "none"
    """How the release keeps a Gated DeltaNet model's recurrent states (Qwen3-Next, Qwen3.5): 'none', beside the
    tokens in one pool (vLLM's state pages); SGLang's own pool of state slots beside its token pool,
    'fixed', max_running_requests or else 512 slots, the radix cache off ("Hybrid GDN model detected, disable
    radix cache": model_executor/model_runner.py, read in 0.5.2 and 0.5.3), or 'ratio', the memory left after
    the weights split mamba_full_memory_ratio (0.9) : 1 between states and tokens, a running request held to a
    third of the slots under the radix cache (MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO), every slot it without
    (handle_max_mamba_cache: model_executor/model_runner.py, read in 0.5.4, 0.5.5 and 0.5.6;
    model_runner_kv_cache_mixin.py in 0.5.9 and 0.5.14; mem_cache/kv_cache_configurator.py in 0.5.16, 0.5.17,
    0.5.18, 0.5.19 and 0.5.23). kvcalc.engine.memory.state_pool applies it."""
    mla_qkv_a_fused: bool = False
    """Whether the release runs an MLA layer's query and latent down projections (q_a_proj, kv_a_proj_with_mqa) as one
    matmul (steptime.mla_fewer_matmuls): vLLM from 0.10.0 (models/deepseek_v2.py fused_qkv_a_proj, a
    MergedReplicatedLinear; read in 0.10.0, 0.10.1.1, 0.11.0, 0.19.0 and 0.22.1, absent in 0.8.4, 0.8.5, 0.9.0 and 0.9.2)
    and SGLang from 0.4.6 (fused_qkv_a_proj_with_mqa; read in 0.4.6 to 0.4.10.post2, 0.5.0rc0, 0.5.2, 0.5.9 and 0.5.23,
    absent in 0.4.5.post3, whose record also spans 0.4.6 and 0.4.6.post1)."""
    state_radix_off: Literal["fixed", "ratio"] = "ratio"
    """Where the state pool is 'ratio' and the server runs with the radix cache off: 'fixed', --max-running-requests
    or else 512 slots, as 0.5.4 to 0.5.8 take them (handle_max_mamba_cache: "with disable radix cache, sets the
    max_mamba_cache_size based on the max_running_requests", model_executor/model_runner.py in 0.5.4, 0.5.5 and
    0.5.6, model_runner_kv_cache_mixin.py in 0.5.7 and 0.5.8); 'ratio', the ratio's slots unless
    --max-running-requests is given, as from 0.5.9 (model_runner_kv_cache_mixin.py, read in 0.5.9 and 0.5.14)."""
    state_ratio_dp: bool = False
    """Whether the release also divides the ratio's slots by the DP-attention size for a Gated DeltaNet model, as
    0.5.4 to 0.5.6 do (handle_max_mamba_cache: "if self.hybrid_gdn_config is not None", after either branch;
    model_executor/model_runner.py, read in 0.5.4, 0.5.5 and 0.5.6); every release divides the fixed slots
    (Allocation.state_dp)."""
    state_pool_pad: int = 0
    """Slots the state pool allocates beyond its count: one padding slot from 0.5.17 ((max_mamba_cache_size + 1)
    slots, read in 0.5.17, 0.5.18, 0.5.19 and 0.5.23; none in 0.5.16 and before)."""
    recurrent_itemsize: int = 0
    """Bytes the release keeps a recurrent (SSM) state element in where the model's spec tells them apart: SGLang
    4, mamba_ssm_dtype float32 by default (server_args.py, read in 0.5.2, 0.5.3 and 0.5.6; configs/mamba_utils.py
    mamba2_state_dtype from 0.5.9, the environment, then the config's mamba_ssm_dtype, then float32, read in 0.5.9,
    0.5.14 and 0.5.23), its conv state in bf16; 0, as the spec stores them (vLLM keeps the config's)."""
    mla_decode: Literal["per-head", "materialized"] = "per-head"
    """How an MLA layer's decode runs its absorbed multiplies: 'per-head', kv_b_proj's halves multiplied per
    head (vLLM 0.8 on, SGLang; kvcalc's streamed weights and FLOPs); 'materialized', vLLM 0.7.1 to 0.7.3's
    W_Q_UK and W_UV_O, built at load and held beside the originals (kvcalc.engine.weights.MLAMaterialized:
    their memory, and what a decode step reads and computes through them)."""
    non_torch_rule: Literal["v0", "v1"] = "v0"
    """Which non-torch estimate applies: V1 counts only NCCL, all-reduce and cuBLAS buffers set up
    after its first snapshot (gpu_worker.py)."""
    host_step_s: float | None = None
    """Host time of one step outside the GPU's kernels (scheduling, input preparation, the token's
    transfer back), seconds, where this release was measured apart from vLLM V1; None: the step
    model's default (kvcalc.engine.steptime.StepConstants.fixed_s)."""
    host_per_request_s: float | None = None
    """Host time of one step per running request on the step's critical path, seconds, where
    measured apart; None: the step model's default (StepConstants.per_request_s)."""
    host_kernel_s: float | None = None
    """Host time to issue one kernel of a step run eagerly from Python (a prompt step without CUDA graphs, a
    decode batch past the largest one), seconds, where this release's own whole prompt step was measured;
    None: the step model's default (StepConstants.eager_host_s)."""
    host_source: str = ""
    """Where host_step_s, host_per_request_s and host_kernel_s come from."""
    async_scheduling: Literal["none", "one-node", "pp1", "pp1-no-dp"] = "none"
    """Where the release schedules the next step while the GPU runs this one by default, so that its
    host time per step (StepConstants.fixed_s and per_request_s) runs beside the GPU's work:
    "one-node", vLLM from 0.14 at PP 1 on one node (vllm/config/vllm.py __post_init__: async_scheduling
    None turns on unless PP > 1, a speculative method other than EAGLE's, or an executor other than
    mp, uni or external_launcher, Ray's being the default across nodes; 0.14.0; off by default in
    0.13.0's config/scheduler.py); "pp1", SGLang's overlap scheduler, on by default from 0.3.6 but
    at PP > 1, with EAGLE or with mixed chunks (server_args.py disable_overlap_schedule, read in
    0.3.6, 0.4.0 to 0.4.3, 0.4.6.post5, 0.4.9, 0.5.2 and 0.5.3; opt-in enable_overlap_schedule to
    0.3.5); "pp1-no-dp", as "pp1" but off under DP attention (server_args.py sets disable_overlap_schedule with
    enable_dp_attention from 0.3.6 to 0.4.1.post6, and no longer from 0.4.1.post7, read in each 0.4.1 to 0.4.4.post3
    wheel; the records from 0.4.1.post7 to 0.4.4.post3 followed 0.4.0 until 2026-12-06). TensorRT-LLM 1.x's PyTorch backend: "pp1", its overlap
    scheduler (llmapi/llm_args.py disable_overlap_scheduler, default False; _torch/pyexecutor/py_executor.py
    PyExecutor.__init__: _executor_loop_pp at PP > 1, else _executor_loop_overlap unless disabled; read in the
    1.1-era llm_args.py that defaults the MoE backend to CUTLASS and in 1.2.0rc2's py_executor.py)."""
    dsa_cell_raw: bool = False
    """SGLang 0.5.4 to 0.5.9 counts a DSA model's pool in tokens of the raw latent, (512 + 64) elements at the cache's
    itemsize plus the indexer's 132 B a layer (model_runner.py profile_max_num_token, 0.5.4 to 0.5.6;
    model_runner_kv_cache_mixin.py get_cell_size_per_token, 0.5.7 to 0.5.9), while it stores an fp8 cache in
    FlashMLA's 656 B layout (mem_cache/memory_pool.py MLATokenToKVPool kv_cache_dim): the pool holds 708 / 788 of
    the tokens' bytes it was given and allocates the rest beyond mem_fraction_static. From 0.5.10 the count uses
    the stored layout (calculate_mla_kv_cache_dim). 0.5.3's count leaves the indexer out too (576 B a layer),
    which the sglang@0.5.3 record does not follow (it counts the indexer, as 0.5.4 does)."""
    hip_allreduce_buffers: bool = False
    """SGLang from 0.5.10 on AMD Instinct GPUs with a TP group of 2 or more holds two IPC all-reduce buffers from
    init_torch_distributed on, before the weights: aiter's custom all-reduce, its HIP default (SGLANG_USE_AITER_AR
    defaults to true, distributed/device_communicators/custom_all_reduce.py dispatch_custom_allreduce, read in
    0.5.9 to 0.5.23), 3,229,619,584 B a rank at aiter's default max_size of 1 GiB; and QuickAllReduce on gfx94x
    and gfx95x at 2, 4 or 8 ranks (quick_all_reduce.py), 4 GiB and its flags, allocated where the quantization is
    set, as SGLang's ROCm image sets it (docker/rocm.Dockerfile: ENV ROCM_QUICK_REDUCE_QUANTIZATION=INT8; the
    code's own default NONE allocates nothing). memory.start_up_estimate counts both."""
    sparse_mla_raw_fp8: bool = False
    """SGLang from 0.5.10 stores a DSA model's fp8 cache (DeepSeek-V3.2's, GLM-5's) in the raw MLA layout, the
    512 + 64 latent elements at one byte each and no scales, where its default DSA backend reads that layout:
    trtllm, its default for an fp8 cache on compute capability 10 and up, and tilelang, its default on HIP
    (calculate_mla_kv_cache_dim: model_executor/model_runner_kv_cache_mixin.py, read in 0.5.10 to 0.5.14;
    mem_cache/kv_cache_configurator.py, read in 0.5.16, 0.5.19 and 0.5.23; the backends' defaults in
    server_args.py, 0.5.10 to 0.5.14, and arg_groups/overrides.py, 0.5.16 to 0.5.23). Elsewhere (Hopper's
    flashmla_kv) and before 0.5.10 (flashmla_kv for every fp8 cache) it is FlashMLA's scaled fp8_ds_mla."""
    dp_prompt_chunk: Literal["none", "half", "dp"] = "none"
    """How SGLang sizes each DP-attention rank's prompt chunk from --chunked-prefill-size (kvcalc's
    max_num_batched_tokens: the release's default or as given): 'half', halved (server_args.py __post_init__ under
    enable_dp_attention, read in 0.3.6, 0.4.0, 0.4.1, 0.4.2, 0.4.3, 0.4.3.post2, 0.4.3.post4 and 0.4.4); 'dp',
    divided by the DP size (server_args.py, read in 0.4.4.post1, 0.4.4.post3, 0.4.5, 0.4.6.post5, 0.4.9, 0.5.3,
    0.5.6, 0.5.9 and 0.5.14, _handle_data_parallelism from 0.5; arg_groups/parallel_hook.py in 0.5.23); 'none'
    where every DP rank keeps the whole budget (vLLM: each DP rank an engine of its own). SGLang sizes its
    start-up reserve from the chunk before it divides it (_handle_gpu_memory_settings runs first), so
    kvcalc fit keeps the whole (rank_batched_tokens)."""
    decode_graph_max_len: int | None = None
    """vLLM V0: a decode-only step replays a CUDA graph only while the longest sequence in it is at most
    max_seq_len_to_capture, 8,192 tokens by default and at most max_model_len; a longer one runs its layers eagerly
    (worker/model_runner.py _use_captured_graph: max_decode_seq_len <= max_seq_len_to_capture, engine/arg_utils.py
    max_seq_len_to_capture = 8192, read in 0.5.3.post1, 0.6.3 and 0.7.3; 0.4.0.post1's max_context_len_to_capture,
    8,192, the same test). None: no such limit (V1's piecewise graphs do not depend on the context; SGLang's decode
    graphs neither)."""
    prefill_graphs: bool = True
    """Whether a step that carries prompt tokens runs in CUDA graphs: vLLM V1's piecewise graphs (up to
    512 tokens), SGLang's piecewise graphs (on by default from 0.5.10: server_args.py
    disable_piecewise_cuda_graph False). Where not, the model's layers run eagerly from Python and such
    a step takes at least the host's time to issue its kernels (kvcalc.engine.steptime
    StepConstants.eager_host_s): vLLM V0 captures decode-only batches (worker/model_runner.py
    _use_captured_graph, 0.6.3: decode_only and ...), SGLang before 0.5.10 replays graphs for decode
    batches only (server_args.py enable_piecewise_cuda_graph False, 0.5.6 to 0.5.9; model_runner.py
    forward_extend calls self.model.forward), TensorRT-LLM's PyTorch backend captures generation steps
    only unless torch_compile_config asks for piecewise graphs (llmapi/llm_args.py, default None)."""
    prefill_graphs_off: frozenset[str] = frozenset()
    """Where a release that runs prompt steps in CUDA graphs (prefill_graphs) still runs them without:
    'pp' (PP > 1), 'non-cuda' (a GPU that is not NVIDIA's), 'multimodal' (a model with a vision tower),
    'dp' (DP attention), 'mla' (an MLA model), 'mla-dense' (an MLA model without a sparse-attention
    indexer), 'qwen3-next' and 'dsa' (those architectures, by name: Qwen3-Next; DeepSeek-V3.2 and GLM-5),
    'deepseek-sm100' (DeepSeek-V3's architecture, Kimi-K2's too, on a compute capability 10 GPU,
    B200 and GB200, whose default trtllm_mla attention SGLang will not capture for prompts: decided
    after the memory reserve is, so it leaves the reserve in place), and 'flashinfer-moe' (routed experts on
    FlashInfer's TensorRT-LLM MoE runner, engines.moe_runner's 'flashinfer_trtllm' kinds, but gpt-oss's: decided
    after the reserve too). SGLang's prompt graphs by release
    (each read in its wheel): 0.5.10 to 0.5.14 piecewise graphs (server_args.py
    _handle_piecewise_cuda_graph, 0.5.10 to 0.5.13; _disable_tc_piecewise_cudagraph_if_incompatible,
    0.5.14), off for DP attention, PP, non-CUDA GPUs, multimodal models and an architecture list
    (configs/model_config.py piecewise_cuda_graph_disabled_model_archs: Qwen3-Next throughout,
    DeepSeek-V3.2 and GLM-5 to 0.5.12), and in 0.5.10 to 0.5.12 for the flashinfer_trtllm and flashinfer_mxfp4 MoE
    runners but for GptOssForCausalLM ("bypassed topk is incompatible with torch.compile": server_args.py
    _handle_moe_kernel_config, which runs after _handle_gpu_memory_settings and the model's hook that picks the
    runner; read in 0.5.10, 0.5.11 and 0.5.12, gone from 0.5.13 and 0.5.14: 'flashinfer-moe'; sgl-project/sglang#27841,
    2026-06-10, removed a copy a refactor had put back on main between releases, its author "seeing the 'Piecewise cuda
    graph is disabled...' log"; no release from 0.5.13 to 0.5.19 or 0.5.23 has it); from 0.5.15 breakable graphs on CUDA
    (model_executor/cuda_graph_config.py default_prefill_backend; ROCm keeps piecewise graphs, which
    it turns off), off for multimodal models and, by _disable_breakable_cudagraph_if_incompatible, MLA
    models and DP attention (0.5.15 and 0.5.16), MLA models without an indexer (0.5.17), neither from
    0.5.18; PP turns them off from 0.5.19 (arg_groups/cuda_graph_hook.py apply_cuda_graph_compatibility,
    0.5.19 and 0.5.23); and from 0.5.15 _disable_prefill_cuda_graph_for_deepseek_trtllm_mla
    ('deepseek-sm100'). An allowlist of newer multimodal architectures (Qwen3.5, Kimi-K2.5, GLM-5 Next
    and others, none in kvcalc's catalog) keeps its graphs; not followed."""
    prefill_graph_max_mla: int | None = None
    """The most tokens a prompt step of an MLA model may carry and still replay the release's prompt graphs
    (prefill_graphs), where it captures an MLA model's up to a size of its own; a larger step runs its layers eagerly.
    SGLang 0.5.10 to 0.5.19: 2,048 ("For MLA backend ... we set the max tokens to 2048 by default", server_args.py
    piecewise_cuda_graph_max_tokens, 0.5.10 to 0.5.13; prefill_cuda_graph_config.max_bs, server_args.py 0.5.14 to
    0.5.18 and arg_groups/memory_hook.py 0.5.19; another model's reach the chunk, which no prompt step passes), where the
    runner replays a step only at num_tokens <= max_num_tokens (model_executor/piecewise_cuda_graph_runner.py can_run,
    0.5.12; runner/prefill_cuda_graph_runner.py can_replay_locally, 0.5.15 to 0.5.19); 0.5.23 (the sglang@0.5 record):
    min(8,192, the chunk) (arg_groups/memory_hook.py), 8,192 here, as no prompt step passes the chunk. None: the chunk
    (or no prompt graphs)."""
    dp_prompt_lockstep: bool = False
    """Under DP attention, whether every rank steps with any rank's prompt batch, as a decode too: the
    ranks gather their batches every step for the MoE layers (SGLang's MLP sync), so a rank's decode
    step lasts as long as another rank's prompt step, and it runs without its CUDA graph, which is
    taken only when every rank's batch decodes (SGLang's can_cuda_graph is the minimum over ranks:
    managers/scheduler.py's all_reduce MIN of each rank's forward mode, 0.4.0; prepare_mlp_sync_batch_raw's
    min(global_info), 0.4.6.post5 and 0.5.3; managers/scheduler_dp_attn_mixin.py, 0.5.9). Read to 0.5.9,
    where prompt batches run without CUDA graphs; not read for vLLM or later SGLang releases."""
    attention_backend: Literal["", "triton"] = ""
    """The decode attention kernel the deployment chose where it is not the release's default (the
    server's --attention-backend): "triton", SGLang's Triton backend, whose split-KV decode kernel the
    step model prices (StepModel.attn_floor_s; with_attention_backend); "": the release's default."""
    moe_backend: Literal["", "trtllm"] = ""
    """The fused-MoE kernel the deployment chose where it is not the release's default: "trtllm", the TensorRT-LLM-gen
    kernel (TensorRT-LLM's moe_config backend TRTLLM, SGLang's --enable-flashinfer-trtllm-moe or --moe-runner-backend
    flashinfer_trtllm, vLLM's --moe-backend flashinfer_trtllm), priced on compute capability 10 for NVFP4 experts (with
    EP too) and for fp8 and 16-bit ones without EP (moe_runner; with_moe_backend); elsewhere the step model says it
    is not priced; "": the release's default."""
    triton_mla_splits: tuple[int, int] = (0, 0)
    """The KV splits of the Triton MLA decode kernel an SGLang release runs by default whatever the batch, on
    Hopper and on gfx942 GPUs (0: not priced there): --triton-attention-num-kv-splits, 8, which 0.4.2.post2 to
    0.4.4.post1 raise to 16 on ROCm (server_args.py __post_init__, 'if is_hip()'), each request's context split
    into that many parts of cdiv(length, splits) tokens (triton_ops/decode_attention.py kv_len_per_split, read in
    0.4.1 to 0.4.4.post1; 0.4.4.post2 sizes them by the batch, get_num_kv_splits). triton_mla_fixed_splits says
    where the step model prices it."""
    util_flag: str = ""
    note: str = ""
    mla_note: str = ""
    """What this engine caches for an MLA layer, when that is the point of choosing it."""
    aliases: tuple[str, ...] = field(default_factory=tuple)

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name

    @property
    def overlap_admission(self) -> bool:
        """Whether the scheduler takes requests in as a step begins, for the step after it, where the release
        schedules ahead (async_scheduling): SGLang's overlap loop polls, picks and launches the next batch, and only
        then waits for the running one's results (managers/scheduler.py event_loop_overlap: recv_requests,
        get_next_batch_to_run, run_batch, then process_batch_result of the batch before; read in 0.4.0, 0.5.3, 0.5.6
        and 0.5.19), a pass beginning as the running batch begins on the GPU, and its poll's counter adds the weight
        of that batch (recv_requests passes last_batch.forward_mode, the batch launched last; 0.5.6). So a request
        that comes during a step is taken in at the next step's start and runs in the one after. vLLM from 0.14 with
        async scheduling has the same structure (v1/engine/core.py step_with_batch_queue, a queue of two batches;
        read in 0.14.0) and TensorRT-LLM's overlap loop is not read: False for both, not yet modelled."""
        return self.name == "sglang" and self.async_scheduling != "none"

    @property
    def overlap_tail(self) -> bool:
        """Whether a request that made its last token rides one more decode step, where the release schedules ahead
        (async_scheduling): SGLang's overlap loop forms and launches the next batch before it reads the running
        one's tokens, and a request is finished only as its tokens are read (Req.check_finished, from 0.5.x
        update_finish_state, in process_batch_result), so filter_batch keeps it in the batch launched meanwhile
        (managers/scheduler.py event_loop_overlap and schedule_batch.py; read in 0.4.0, 0.5.3 and 0.5.14). Where
        nothing else runs, that step holds the GPU and the loop waits for its result before it polls again
        (StepModel.tail_step). vLLM's and TensorRT-LLM's loops are not read for it: False for both (taken for vLLM from
        0.14 as a trial, it moved its corpus runs' TTFT away from what they measured: docs/simulation.md)."""
        return self.name == "sglang" and self.async_scheduling != "none"

    def sparse_mla_heads(self, heads: int, gpu: str, kv_bits: int) -> int:
        """The query heads a rank's sparse-MLA kernel runs for ``heads`` heads a rank, prompt and decode tokens alike
        in the absorbed form (scores over the 576 latent and rope dims, the weighted sum over the 512), or 0 where
        kvcalc counts the model's own heads. vLLM from 0.11 on Hopper with a 16-bit cache runs FlashMLA's sparse
        kernel, the only sparse MLA backend there (platforms/cuda.py), whose heads are a multiple of 64: a rank of
        fewer zero-pads its query up to 64 (v1/attention/backends/mla/flashmla_sparse.py: 0.11.0
        FlashMLASparseImpl._forward_bf16_kv, self.padding; 0.16.0 and 0.22.1 _bf16_flash_mla_kernel,
        prefill_padding, "kernel requires num_local_head to be a multiple of 64 on hopper and 128 on blackwell").
        GLM-5 at TP 8, 8 heads a rank, runs 64. On compute capability 10 the multiple is 128, where the same kernel
        runs: from 0.11 to 0.16 it is the only sparse MLA backend there, and from 0.17 it comes first above 16 heads a
        rank with a 16-bit cache (platforms/cuda.py _get_backend_priorities, read in 0.22.1; FlashInfer's sparse
        backend first at 16 or fewer, whose kernel is not read: 0). Its fp8 cache (fp8_ds_mla) is not read here.
        vllm-project/recipes#234 says the same of DeepSeek-V3.2 at TP 8 (16 heads a rank padded to 64)."""
        if self.name != "vllm" or self.older_than(0, 11) or kv_bits < 16 or heads < 1:
            return 0
        if gpu in HOPPER_GPUS:
            pad = 64
        elif gpu in SM100 and (self.older_than(0, 17) or heads > 16):
            pad = 128
        else:
            return 0
        return -(-heads // pad) * pad

    def check_recv_interval(self, every: int, dp: int = 1) -> None:
        """Refuse a scheduler receive interval this release does not take: SGLang's --scheduler-recv-interval
        (managers/scheduler_recv_skipper.py, read 0.5.2 to 0.5.23), a whole number of decode steps, 1 for
        every other engine, and 1 under DP attention (``dp`` > 1: SchedulerRecvSkipper.__init__ asserts
        not server_args.enable_dp_attention, 0.5.2 to 0.5.14)."""
        if every == 1:
            return
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise KvcalcError(f"{every!r} is not a whole number of steps", "recv_interval", "1 or more")
        if self.name != "sglang" or self.older_than(0, 5):
            raise KvcalcError(
                f"a scheduler receive interval with {self.title}: it is SGLang's --scheduler-recv-interval, read from 0.5.2 on",
                "recv_interval",
                "1 (every step), or an SGLang engine from 0.5.2 (sglang, sglang@0.5.9)",
            )
        if dp > 1:
            raise KvcalcError(
                f"a scheduler receive interval under DP attention (dp {dp}): SGLang refuses --scheduler-recv-interval "
                "with --enable-dp-attention",
                "recv_interval",
                "1, or dp 1",
            )

    def check_batch_wait(self, iters: int, ratio: float, dp: int = 1) -> None:
        """Refuse batch waiting this release does not do: TensorRT-LLM's batch_wait_timeout_iters (a whole number of
        iterations, 0 or more) and batch_wait_max_tokens_ratio (a share, 0 to 1), which its PyTorch backend applies from
        1.1 (NVIDIA/TensorRT-LLM#7287, to the 1.1 branch by #7416; tensorrt_llm/_torch/pyexecutor/py_executor.py
        _schedule and _waiting_requests, read in an unversioned copy, the release's own wheel being on
        pypi.nvidia.com, out of reach here): while generation requests run, the context requests the scheduler
        picked are held back an iteration at a time, each such iteration counted, until the count reaches the
        iterations or the context requests' prompt tokens and one a generation request reach the ratio of
        max_num_tokens; then they all run and the count starts again. Not under attention data parallelism
        (``dp`` > 1), which kvcalc's TensorRT-LLM rules do not model."""
        if iters == 0 and ratio == 0:
            return
        if isinstance(iters, bool) or not isinstance(iters, int) or iters < 0:
            raise KvcalcError(f"{iters!r} is not a whole number of iterations", "batch_wait_iters", "0 or more")
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
            raise KvcalcError(f"{ratio!r} is out of range", "batch_wait_ratio", "a share from 0 to 1, e.g. 0.9")
        if self.name != "trtllm" or self.older_than(1):
            raise KvcalcError(
                f"batch waiting with {self.title}: it is TensorRT-LLM's batch_wait_timeout_iters and "
                "batch_wait_max_tokens_ratio, from 1.1 (its PyTorch backend)",
                "batch_wait_iters",
                "0 (no waiting), or a TensorRT-LLM engine from 1.1 (trtllm)",
            )
        if dp > 1:
            raise KvcalcError(
                f"batch waiting under attention data parallelism (dp {dp}): TensorRT-LLM skips it there",
                "batch_wait_iters",
                "0, or dp 1",
            )

    @property
    def token_ratio(self) -> TokenRatio | None:
        """SGLang's reserve for running requests' output tokens at admission (TokenRatio), from 0.4.0; None for
        other engines, and SGLang 0.3.x, whose ratio starts and decays otherwise."""
        if self.name != "sglang" or self.older_than(0, 4):
            return None
        if self.older_than(0, 4, 4):
            return SGLANG_TOKEN_RATIO_043
        if self.older_than(0, 4, 8):
            return SGLANG_TOKEN_RATIO_047  # (the "0.4" record is 0.4.6.post2 to 0.4.6.post5)
        return SGLANG_TOKEN_RATIO_051 if self.older_than(0, 5, 2) else SGLANG_TOKEN_RATIO

    def older_than(self, *release: int) -> bool:
        """Whether this record's release comes before ``release`` (0, 14); a record named by fewer
        numbers than asked is its first release ("0.8" is 0.8.0), but a family's current record, which
        covers every later release of its series (sglang@0.5: 0.5.20 and later, its rules read from
        0.5.23), is the series' newest ("0.5" is no older than any 0.5.x); a record without a release
        number (hf, plain) is none's."""
        if not self.version:
            return False
        v = _version_tuple(self.version)
        current = self.name in _CURRENT and _CURRENT[self.name].key == self.key
        return v + (10**9 if current else 0,) * (len(release) - len(v)) < release

    @property
    def title(self) -> str:
        """The label with the releases the rules hold for, where the label does not already say them."""
        return f"{self.label} ({self.releases})" if self.releases and self.releases not in self.label else self.label

    def prompt_graphs(
        self, pp: int, vendor: str, model: ModelSpec, dp: int = 1, gpu: str = "", sizing: bool = False, moe: str = "default"
    ) -> bool:
        """Whether this release runs a step carrying prompt tokens in CUDA graphs for ``model`` at
        ``pp`` pipeline stages and ``dp`` DP-attention ranks on ``gpu`` (a catalog name) of ``vendor``
        (prefill_graphs, prefill_graphs_off); ``sizing``: as the engine sees it when it sizes its memory
        reserve, before the rules it applies after ('deepseek-sm100', 'flashinfer-moe'); ``moe``: the fused-MoE
        kernel the release picks by itself for the model's routed experts there (moe_runner, without EP)."""
        off = self.prefill_graphs_off
        multimodal = bool(model.vision_params or model.vision)
        mla = model.mla is not None
        arch = model.architecture
        return self.prefill_graphs and not (
            ("pp" in off and pp > 1)
            or ("non-cuda" in off and vendor != "NVIDIA")
            or ("multimodal" in off and multimodal)
            or ("dp" in off and dp > 1)
            or ("mla" in off and mla)
            or ("mla-dense" in off and mla and not model.has_sparse_mla)
            or ("qwen3-next" in off and arch == "qwen3_next")
            or ("dsa" in off and arch in ("deepseek_v32", "glm_moe_dsa"))
            or ("deepseek-sm100" in off and not sizing and arch in ("deepseek_v3", "kimi_k2") and gpu in SM100)
            or ("flashinfer-moe" in off and not sizing and moe.startswith("flashinfer_trtllm") and arch != "gpt_oss")
        )

    @property
    def cudagraph_line(self) -> bool:
        return self.cudagraph != "none"

    def mla_storage_for(self, model: ModelSpec | None, weight_dtype: str | None = None) -> str:
        """How the release caches ``model``'s MLA layers (mla_storage), but per head where it turns MLA off for the
        checkpoint's quantization (mla_fp8_only; ``weight_dtype``: the format it is served in, else its own)."""
        if self.mla_fp8_only and model is not None and model.mla is not None and not mla_kept(model, weight_dtype):
            return "qk-heads"
        return self.mla_storage

    def mla_per_head(self, model: ModelSpec | None = None, weight_dtype: str | None = None) -> bool:
        """Whether the release caches an MLA layer of ``model`` as per-head K and V, not its latent (mla_storage_for),
        and so runs its attention as any attention's."""
        return self.mla_storage_for(model, weight_dtype) not in MLA_LATENT_FORMS

    def mla_materializes(self, model: ModelSpec, weight_dtype: str | None = None) -> bool:
        """Whether the release runs ``model``'s MLA decode through materialized weights (mla_decode 'materialized'):
        not where it caches that model's MLA per head (mla_per_head), which decodes it as any attention."""
        return self.mla_decode == "materialized" and not self.mla_per_head(model, weight_dtype)

    def kv_form_alloc(self, model: ModelSpec | None = None, weight_dtype: str | None = None) -> Allocation:
        """The cache of ``model`` in the form this release keeps it, token for token (no blocks): the logical
        allocation, with the release's per-head storage of MLA where it has one (mla_storage_for). What a decode step
        reads (bound.Decode.kv_alloc), what an offload tier holds of a request and what a prefill instance ships to a
        decode instance (tiers.shipped_bytes)."""
        how = self.mla_storage_for(model, weight_dtype)
        return LOGICAL if how in MLA_LATENT_FORMS else Allocation(**mla_flags(how))

    def in_flight_tokens(self, batched_tokens: int, pp: int) -> int:
        """Tokens scheduled but not settled, which window reservations add."""
        if self.in_flight == "none":
            return 0
        if self.in_flight == "batched_tokens":
            return batched_tokens
        # vllm/config/vllm.py max_concurrent_batches (0.33): async scheduling on by default; with the
        # V2 model runner (the default) pp + 1 batches, i.e. 2 at PP 1.
        return (pp + 1) * batched_tokens

    def in_flight_words(self, pp: int) -> str:
        if self.in_flight == "concurrent_batches":
            return f"{pp + 1} concurrent batches (async scheduling, PP {pp} + 1) x max_num_batched_tokens"
        return "one batch of max_num_batched_tokens"

    def window_style_for(self, model: ModelSpec | None) -> str:
        """SGLang keeps a separate sliding pool only for the architectures on its allowlist."""
        if self.swa_pool_ratio is not None:
            return "window" if model is not None and model.architecture in self.swa_architectures else "full"
        return self.window_style

    def block_size_for(self, model: ModelSpec | None, vendor: str = "NVIDIA", gpu: str = "") -> int | None:
        """The block size the engine takes for this model on ``gpu`` (a catalog name), unless one is given
        (sparse_mla_block, dense_mla)."""
        if model is not None and vendor == "NVIDIA":
            if self.sparse_mla_block and model.has_sparse_mla:
                return self.sparse_mla_block
            mla = model.mla
            if mla is not None and not model.has_sparse_mla:
                forced = dense_mla_block(self.dense_mla, gpu, mla.qk_nope_head_dim)
                if forced:
                    return forced
        return self.block_size

    def allocation(
        self,
        block_size: int | None = None,
        in_flight: int = 0,
        model: ModelSpec | None = None,
        vendor: str = "NVIDIA",
        gpu: str = "",
        prefix_caching: bool = True,
        max_running: int | None = None,
        dp: int = 1,
        weight_dtype: str | None = None,
    ) -> Allocation:
        """``weight_dtype``: the format the checkpoint is served in (None: its own), where the release's MLA depends on
        it (mla_storage_for). ``prefix_caching``: the server's --enable-prefix-caching. Off, a release that keeps two state pages a
        request for it ('align') keeps one: vLLM sets mamba_cache_mode 'none' without prefix caching, and a
        recurrent layer then needs one page a request (model_executor/models/config.py MambaModelConfig and
        v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes, 0.19.0 and 0.22.1)."""
        bs = block_size if block_size is not None else self.block_size_for(model, vendor, gpu)
        style = self.window_style_for(model)
        state_pages = "padded" if self.state_pages == "align" and not prefix_caching else self.state_pages
        # SGLang's state pool and fp32 recurrent state: read for Gated DeltaNet models only (state_pool).
        gdn = model is not None and any(getattr(k, "mixer", None) == "gdn" for k in model.kinds())
        how = self.mla_storage_for(model, weight_dtype)
        return Allocation(
            recurrent_itemsize=self.recurrent_itemsize if gdn else 0,
            state_pool=(
                "none"
                if not gdn
                else "fixed"
                if self.state_pool == "ratio" and not prefix_caching and self.state_radix_off == "fixed"
                else self.state_pool
            ),
            state_pool_pad=self.state_pool_pad,
            radix=prefix_caching,
            state_slots=max_running,
            state_dp=max(dp, 1),
            state_ratio_dp=self.state_ratio_dp,
            name=self.key,
            block_size=bs,
            window_slack=in_flight if style == "vllm" else 0,
            window_style=style,  # type: ignore[arg-type]
            **mla_flags(how, vendor),
            pp_split=self.pp_split,
            pad_groups=self.pad_groups,
            chunked_as_full=self.chunked_as_full,
            state_pages=state_pages,
        )

    def rank_batched_tokens(self, budget: int, dp: int) -> int:
        """The prompt tokens one DP-attention rank's step takes of ``budget``, the server's
        --chunked-prefill-size, as the release divides it (dp_prompt_chunk); ``budget`` with one rank."""
        if dp <= 1 or self.dp_prompt_chunk == "none":
            return budget
        return max(budget // (2 if self.dp_prompt_chunk == "half" else dp), 1)

    def seqs_in_flight(self, max_num_seqs: int, pp: int, dp: int = 1) -> int:
        """The most requests one replica runs at once: ``max_num_seqs`` per DP rank, whose scheduler
        is its own. With PP, vLLM V0 keeps a scheduler per virtual engine, pp of them, each with
        max_num_seqs and 1/pp of the blocks (engine/llm_engine.py, core/scheduler.py: num_gpu_blocks
        //= pipeline_parallel_size, 0.6.5); vLLM V1 runs one scheduler whose running requests, over
        every batch in flight, are at most max_num_seqs (v1/core/sched/scheduler.py
        max_num_running_reqs, v1/engine/core.py step_with_batch_queue, 0.11.0); SGLang splits
        max_running_requests over its micro-batches (managers/scheduler.py max_micro_batch_size =
        max_running_requests // pp_size, 0.5.3). TensorRT-LLM's is taken as V0's (not read)."""
        one_scheduler = self.prompt_blocks == "chunk" or self.batched_tokens_default.startswith("sglang")
        return max_num_seqs * dp * (1 if one_scheduler else pp)

    def decode_graph_max(self, gpu: GPUSpec, tp: int, dp: int = 1) -> int | None:
        """The largest decode batch (one DP rank's requests) this release replays from a CUDA graph
        by default: a larger one runs its layers eagerly from Python. SGLang's cuda_graph_max_bs and
        capture list by release (sglang_decode_graph_max), its tp_size being every GPU of a stage
        (kvcalc's tp x dp); its graph runner falls back to the eager forward above it
        (model_executor/cuda_graph_runner.py can_run, model_runner.py _forward_raw, 0.5.3). None: no
        limit kvcalc models (vLLM V1 runs larger steps torch.compiled without graphs, charged as
        eager launches past GRAPH_MAX_TOKENS; V0 captures batches up to max_num_seqs rounded up to 8, config.py
        _set_cudagraph_sizes, 0.6.6, and runs a decode eagerly once its longest context passes
        max_seq_len_to_capture: decode_graph_max_len; TensorRT-LLM not read)."""
        if self.mem_fraction_rule == "none":
            return None
        mib = gpu.memory_smi_mib or int(gpu.memory_runtime_bytes) // 2**20
        return sglang_decode_graph_max(mib, tp * dp, self.mem_fraction_rule, dp, self.version)

    def default_num_seqs(self, runtime_total: int, gpu_name: str) -> int:
        """max_num_seqs as vLLM defaults it (engine/arg_utils.py get_batch_defaults): 1024 on the GPUs
        that get V1's larger batch (_large_batch_gpu; every GPU in 0.8.0 to 0.8.3), else 256. SGLang's max_running_requests: the smaller of half
        its token pool and its request slots, max(pool tokens / context x 512, 2,048) up to 4,096
        (managers/tp_worker.py, model_executor/model_runner.py, 0.4.6.post5 and 0.5.3): 2,048, the
        slots' floor, which half a pool of 4,096 tokens or more does not bind."""
        if self.num_seqs_default is not None:
            return self.num_seqs_default
        if self.batched_tokens_default.startswith("sglang"):
            return 2048
        rule = self.batched_tokens_default
        if rule == "v1-0.8.0":
            return 1024  # every GPU (engine/arg_utils.py _set_default_args_v1, 0.8.0 to 0.8.3)
        if rule.startswith("v1") and self._large_batch_gpu(runtime_total, gpu_name):
            return 1024
        return 256

    def _large_batch_gpu(self, runtime_total: int, gpu_name: str) -> bool:
        """Whether vLLM V1 gives this GPU its larger batch defaults (engine/arg_utils.py): by name, an H100 or
        H200 (0.8.0 to 0.8.4); 70 GiB of memory or more (0.8.5); and not an A100 (0.9.0 on, after
        vllm-project/vllm#17885)."""
        name = gpu_name.lower()
        rule = self.batched_tokens_default
        if rule in ("v1-0.8.0", "v1-0.8.4"):
            return "h100" in name or "h200" in name
        if rule == "v1-0.8.5":
            return runtime_total >= 70 * GiB
        return runtime_total >= 160 * GiB or (runtime_total >= 70 * GiB and "a100" not in name)

    def chunks_prefill(self, model: ModelSpec | None, max_model_len: int, vendor: str = "NVIDIA") -> bool:
        """Whether the engine, left at its defaults, schedules prompts in chunks beside the decodes
        (see v0_chunking for vLLM V0's rule; every other engine: mixes_prefill)."""
        rule = self.v0_chunking
        if rule == "none":
            return self.mixes_prefill
        if rule == "off" or max_model_len <= 32768 or vendor not in ("NVIDIA", "AMD"):
            return False
        if model is not None and (model.has_windows or (rule != "0.5" and model.vision_params > 0)):
            return False
        # MLA forces chunked prefill off where the release caches MLA's latent (0.7.1 on); 0.7.0 runs DeepSeek's heads
        # as any attention (MLA.stored_head_dims), on the long-context rule alone (engine/arg_utils.py, read in 0.7.0).
        mla = model is not None and model.mla is not None and not self.mla_per_head(model)
        return not (rule == "0.7" and (vendor != "NVIDIA" or mla))

    def schedule(
        self,
        model: ModelSpec | None,
        gpu: GPUSpec,
        max_model_len: int,
        batched_tokens: int | None = None,
        runtime_total: int | None = None,
        chunked_prefill: bool | None = None,
    ) -> tuple[int, bool]:
        """(max_num_batched_tokens, whether a step carries prompt work beside decodes) on this GPU: the
        budget given or the release's default; V0 chunks when its default says so, or when the
        budget given is under max_model_len (V0 refuses a budget below it without chunked prefill:
        config.py SchedulerConfig._verify_args). runtime_total: the device memory the defaults go by,
        where not the GPU spec's. chunked_prefill: V0's --enable-chunked-prefill as given (None: the
        release's default); off, a prompt runs whole in a step of its own while the decodes wait, and
        the budget defaults to max(max_model_len, 2,048) (vllm/core/scheduler.py _schedule_default and
        config.py SchedulerConfig, 0.6.5)."""
        chunked = self.chunks_prefill(model, max_model_len, gpu.vendor)
        if chunked_prefill is not None:
            if self.v0_chunking == "none":
                raise KvcalcError(
                    f"{self.label} is not modelled with chunked prefill set by hand",
                    "chunked_prefill",
                    "a vLLM V0 release (vllm@0.4 to vllm@0.7); V1 and SGLang chunk as their defaults say",
                )
            if not chunked_prefill and batched_tokens is not None and batched_tokens < max_model_len:
                raise KvcalcError(
                    f"max_num_batched_tokens {batched_tokens:,} is below max_model_len {max_model_len:,} without "
                    "chunked prefill, which vLLM refuses to start with (config.py SchedulerConfig._verify_args)",
                    "max_num_batched_tokens",
                    f"at least {max_model_len:,}, or chunked prefill on",
                )
            chunked = chunked_prefill
        total = runtime_total or gpu.memory_runtime_bytes
        budget = batched_tokens or self.default_batched_tokens(total, gpu.name, max_model_len, chunked)
        if self.v0_chunking == "none":
            return budget, self.mixes_prefill
        return budget, chunked or budget < max_model_len

    def default_batched_tokens(self, runtime_total: int, gpu_name: str, max_model_len: int, chunked_prefill: bool = False) -> int:
        """max_num_batched_tokens as the engine defaults it for its OpenAI server; ``chunked_prefill``
        (V0 only) as chunks_prefill decides it, which schedule() passes."""
        if self.batched_tokens_default == "v0":
            # vllm/config.py SchedulerConfig: with chunked prefill 512 (0.6.3) or 2,048 (0.7.0); without,
            # max(max_model_len, 2048).
            return self.v0_chunk_tokens if chunked_prefill else max(max_model_len, 2048)
        if self.batched_tokens_default == "sglang-0.4":
            return 2048 if runtime_total < 25_000 * 2**20 else 8192
        if self.batched_tokens_default == "sglang-0.4.7":
            # server_args.py, 0.4.7: 16,384 on GPUs of over 180,000 MiB (the B200), 2,048 under 25,000 MiB.
            return 16384 if runtime_total > 180_000 * 2**20 else 2048 if runtime_total < 25_000 * 2**20 else 8192
        if self.batched_tokens_default == "sglang-0.4.7.post1":
            # server_args.py, 0.4.7.post1 to 0.5.2: 2,048 under 35 GiB, 8,192 under 160 GiB, else 16,384.
            return 2048 if runtime_total < 35 * GiB else 8192 if runtime_total < 160 * GiB else 16384
        if self.batched_tokens_default in ("sglang-0.5", "sglang-0.5.20"):
            # 0.5.20 (arg_groups/memory_hook.py) moved GPUs of 20 to 35 GiB to 4,096 tokens.
            low = 20 if self.batched_tokens_default == "sglang-0.5.20" else 35
            for limit, tokens in ((low, 2048), (60, 4096), (160, 8192)):
                if runtime_total < limit * GiB:
                    return tokens
            return 16384
        # vllm/engine/arg_utils.py get_batch_defaults: by the device's total memory and name.
        if self.batched_tokens_default == "v1-160" and runtime_total >= 160 * GiB:
            return 16384
        return 8192 if self._large_batch_gpu(runtime_total, gpu_name) else 2048


_VLLM_V1_NOTE = (
    "KV pool = gpu_memory_utilization x runtime total - weights - activation peak - non-torch{cg}; blocks of "
    "16 tokens; sliding layers reserve cdiv(min(window - 1 + {slack}, S), 16) + 1 blocks"
)

VLLM_033 = Engine(
    "vllm",
    "0.33",
    "0.27 and later; rules read from 0.33.0",
    "vLLM 0.33",
    "util_of_total",
    0.92,
    16,
    "vllm",
    pad_groups=True,
    state_pages="align",
    in_flight="concurrent_batches",
    batched_tokens_default="v1-160",
    prompt_blocks="chunk",
    util_rounding="ceil",
    cudagraph="estimate",
    tokens_report="concurrency-x-length",
    concurrency_report="blocks",
    null_block=True,
    util_flag="gpu_memory_utilization",
    note=_VLLM_V1_NOTE.format(cg=" - CUDA graphs (estimated, since 0.21)", slack="2 x max_num_batched_tokens in flight"),
    sampler_bytes_per_logit=10,
    sampler_range=(6, 16),
    sampler_row_copies=1,
    # The V2 model runner's sampler samples with FlashInfer where flashinfer_sampler_supported() (CUDA,
    # a supported compute capability), else masks with apply_top_k_top_p_triton and its buffer
    # (v1/worker/gpu/sample/sampler.py _sample_random; v1/sample/ops/topk_topp_sampler.py, 0.33.0).
    triton_sampler_buffer="fallback",
    penalty_bytes_per_logit=4.125,
    non_torch_rule="v1",
    vision_profile="fused-ir",
    video_frames_cap=14,
    moe_workspace_held=True,
    auto_max_model_len=True,
    kv_cache_memory_flag=True,
    mla_qkv_a_fused=True,
    aliases=("vllm", "vllm@current", "vllm@latest"),
)
# Each older V1 release: the newer one's record with what it did differently.
VLLM_033 = replace(
    VLLM_033, sparse_mla_fp8_by_backend=True, sparse_mla_block=64, dense_mla="selector", async_scheduling="one-node"
)
VLLM_021 = replace(
    VLLM_033,
    version="0.21",
    releases="0.21 to 0.26; rules read from 0.21.0",
    label="vLLM 0.21",
    in_flight="batched_tokens",
    batched_tokens_default="v1",
    note=_VLLM_V1_NOTE.format(cg=" - CUDA graphs (estimated)", slack="max_num_batched_tokens"),
    aliases=(),
    # 0.21.0 to 0.25.0 estimate the CUDA graphs on CUDA only (0.26.0, the record's last, on ROCm too).
    cudagraph_estimate_rocm=False,
    sampler_row_copies=2,
    sampler_bytes_per_logit=14,
    sampler_range=(12, 16),
    # Without FlashInfer (not installed, or a GPU it does not serve: ROCm, the T4) the top-k/top-p
    # masks of 8 or more rows run as one Triton kernel in place on the fp32 logits (v1/sample/ops/
    # topk_topp_sampler.py apply_top_k_top_p -> topk_topp_triton.py, from 0.17.0): the logits (2),
    # their fp32 copy (4), the probabilities (4) and random_sample's exponentials (4), as FlashInfer's.
    # Fewer rows still sort, at most 7 x vocab x 38 B.
    sampler_old_gpus=None,
    sampler_impl=(("flashinfer", 14, 12, 16), ("pytorch", 14, 12, 16)),
    penalty_bytes_per_logit=0.0,
)
# 0.20.0 already defaults to utilisation 0.92 and subtracts its CUDA-graph estimate before sizing
# (config/cache.py; envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "1", v1/worker/
# gpu_worker.py determine_available_memory), but still logs "GPU KV cache size" from the blocks as 0.19
# does (v1/core/kv_cache_utils.py _report_kv_cache_config), and its encoder is not read (0.17's taken).
VLLM_020 = replace(
    VLLM_021,
    version="0.20",
    releases="0.20; rules read from 0.20.0 (the utilisation default, the CUDA-graph estimate, the KV size line), the rest as 0.17",
    label="vLLM 0.20",
    vision_profile="fused",
    tokens_report="blocks-per-group",
    triton_sampler_buffer="default",
)
VLLM_018 = replace(
    VLLM_021,
    version="0.18",
    releases="0.18 to 0.19; rules read from 0.15.0, the start check from 0.17.0, the CUDA-graph estimate's switch from "
    "0.19.0, the MLA blocks from 0.18.0 and 0.19.0",
    label="vLLM 0.18",
    triton_sampler_buffer="default",
    vision_profile="fused",
    default_util=0.9,
    util_rounding="float",
    cudagraph="after",
    tokens_report="blocks-per-group",
    note=_VLLM_V1_NOTE.format(cg="", slack="max_num_batched_tokens"),
    # 0.17 to 0.20: FlashInfer's sampler only on request, the Triton masks of 0.21 otherwise (above).
    # 0.18 and 0.19 log their CUDA-graph estimate but subtract it only with
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (envs.py default "0", 0.19.0): graphs after sizing.
)
# 0.17: 0.18's rules, but a dense MLA model's blocks forced by the platform as 0.15 and 0.16 force them
# (vllm/platforms/cuda.py, read in 0.17.0), before 0.18 took them from the chosen backend.
VLLM_017 = replace(
    VLLM_018,
    version="0.17",
    releases="0.17; rules read from 0.15.0, the start check and the MLA blocks from 0.17.0",
    label="vLLM 0.17",
    dense_mla="flashinfer",
)
# 0.15 and 0.16 check one request of max_model_len across every pipeline stage's layers against one
# stage's memory (kv_cache_utils.py get_kv_cache_configs, read in 0.15.0 and 0.16.0).
VLLM_015 = replace(
    VLLM_017,
    sparse_mla_fp8_by_backend=False,
    version="0.15",
    releases="0.15 to 0.16; rules read from 0.15.0 and 0.16.0",
    label="vLLM 0.15",
    pp_start_check="whole",
    triton_sampler_buffer="none",
    # Before 0.17's Triton masks PyTorch sorts the logits (apply_top_k_top_p), FlashInfer's sampler
    # only on request ("Users must opt in explicitly via VLLM_USE_FLASHINFER_SAMPLER=1", 0.15.0).
    sampler_bytes_per_logit=38,
    sampler_range=(34, 40),
    sampler_impl=(("flashinfer", 14, 12, 16), ("pytorch", 38, 28, 40)),
)
VLLM_014 = replace(
    VLLM_015,
    dense_mla="cutlass",
    version="0.14",
    releases="0.14, the V1 engine; rules read from 0.11.0, the encoder's batch and the start check from 0.14.0",
    label="vLLM 0.14",
    vision_profile="concat",
    vision_profile_later="0.14.0 rotates the encoder's q and k by a custom op in 16 bits, with no float32 copies, and holds less",
    chunked_as_full=True,
    state_pages="padded",
    sampler_bytes_per_logit=28,
    sampler_range=(12, 40),
    sampler_impl=(("flashinfer", 14, 12, 16), ("pytorch", 38, 28, 40)),
    note=_VLLM_V1_NOTE.format(cg="", slack="max_num_batched_tokens")
    + "; chunked local attention stored as full attention (hybrid manager off for it)",
)
VLLM_012 = replace(
    VLLM_014,
    async_scheduling="none",
    version="0.12",
    releases="0.12 to 0.13, the V1 engine; rules read from 0.11.0, the encoder's batch from 0.12.0 and 0.13.0",
    label="vLLM 0.12",
    vision_profile_later="0.12 and 0.13 rewrote the encoder's rotary after 0.11.0 and hold less; 0.12.0 profiles "
    "Qwen3-VL with a dummy video of 3/4 the image's patches",
    pp_start_check="stage",
    auto_max_model_len=False,
    moe_workspace_held=False,  # 0.13.0's unquantized experts: fused_experts, caches freed after the pass
)

# 0.11.x: 0.12's rules but for the vision encoder's profile, whose cached embeddings are padded to the
# encoder budget and which counts Qwen3-VL's video formatted (gpu_model_runner.py and qwen3_vl.py,
# 0.11.0 to 0.11.2).
VLLM_011 = replace(
    VLLM_012,
    version="0.11",
    releases="0.11.0 to 0.11.2, the V1 engine; rules read from 0.11.0",
    label="vLLM 0.11",
    vision_profile_later="0.11.1 and 0.11.2 rotate q and k from a strided view of the qkv projection (no contiguous "
    "copies of q, k and v, qwen2_5_vl.py) and hold less",
    encoder_cache_padded=True,
    video_tokens_formatted=True,
    sparse_mla_auto_fp8="0.11.0",
)

# 0.9 to 0.10 (and 0.8 below): 0.11's rules but for the vision encoder's profile, whose rotary embedding took q and
# k one at a time (model_executor/models/qwen2_5_vl.py, 0.9.0.1 to 0.10.2), and whose cached
# embeddings are not padded.
VLLM_010 = replace(
    VLLM_011,
    version="0.10",
    releases="0.10, the V1 engine; rules read from 0.11.0, the vision encoder's profile from 0.9.0.1 to 0.10.2, the MLA "
    "blocks from 0.10.1.1",
    label="vLLM 0.10",
    vision_profile="each",
    vision_profile_later="",
    encoder_cache_padded=False,
    video_tokens_formatted=False,  # Qwen3-VL arrived in 0.11.0
    video_frames_cap=16,
    video_frames_less_image=True,  # 0.9.0.1 to 0.10.1.1; 0.10.2 counts from 1 within all of max_model_len
    kv_cache_memory_since="0.10.2",
    sparse_mla_auto_fp8="",  # DeepSeek-V3.2 arrived in 0.11.0
    sparse_mla_block=None,
)
# 0.9: 0.10's rules, but FlashMLA's 64-token blocks for a dense MLA model where it runs and nothing else forced
# (vllm/platforms/cuda.py, read in 0.9.0 and 0.9.2; CUTLASS MLA on compute capability 10 from 0.10).
VLLM_09 = replace(
    VLLM_010,
    mla_qkv_a_fused=False,  # fused_qkv_a_proj from 0.10.0
    version="0.9",
    releases="0.9, the V1 engine; as 0.10 but the MLA blocks, read from 0.9.0 and 0.9.2",
    label="vLLM 0.9",
    dense_mla="flashmla",
)
# V1 before 0.9.1 took no start-up snapshot: its non-torch memory is all the device has in use after the
# profile less PyTorch's allocations (v1/worker/gpu_worker.py determine_available_memory, read in 0.7.1, 0.8.0,
# 0.8.4, 0.8.5 and 0.9.0; 0.9.1 measures against a snapshot, vllm-project/vllm#19312), so the CUDA context
# counts there too. kvcalc keeps 0.10's estimate for them: tried on 2026-12-03 with the context's 0.6 GiB added
# (start_up_estimate's one-GPU figure), 1 of the 13 public logs of these releases entered 10% (an RTX 5090
# start of 0.9.0, +12.3% to +7.1%) and 3 left it (an L4 start of 0.9.0.1, +7.9% to -24.5%; 4 A10s under 0.8.5,
# -4.2% to -17.1%; an H100 under a V1 of January 2025, -8.3% to -17.0%): their activation estimates run high
# by about as much, which no breakdown of these releases (they log none) can separate.
# 0.8: 0.10's record but for V1's batch defaults (engine/arg_utils.py, read in 0.8.0, 0.8.2, 0.8.3, 0.8.4,
# 0.8.5 and 0.9.0): 8,192 tokens a step on a GPU named H100 or H200 and 2,048 on others, with 1,024
# requests on every GPU, to 0.8.3; 0.8.4 gives the others 256 requests; 0.8.5 decides by memory (70 GiB
# or more), an A100 80GB included, which 0.9.0 leaves out again (vllm-project/vllm#17885).
VLLM_085 = replace(
    VLLM_09,
    version="0.8.5",
    releases="0.8.5, the V1 engine; rules as 0.9's but for the batch defaults (read from 0.8.5)",
    label="vLLM 0.8.5",
    batched_tokens_default="v1-0.8.5",
)
VLLM_084 = replace(
    VLLM_085,
    version="0.8.4",
    releases="0.8.4, the V1 engine; rules as 0.10's but for the batch defaults (read from 0.8.4)",
    label="vLLM 0.8.4",
    batched_tokens_default="v1-0.8.4",
)
VLLM_08 = replace(
    VLLM_085,
    version="0.8",
    releases="0.8.0 to 0.8.3, the V1 engine; rules as 0.10's but for the batch defaults (read from 0.8.0, 0.8.2 and 0.8.3)",
    label="vLLM 0.8",
    batched_tokens_default="v1-0.8.0",
)
# 0.7.0's opt-in V1 engine (VLLM_USE_V1=1): 0.8's rules (its determine_available_memory, v1/worker/gpu_worker.py,
# and its batch defaults, engine/arg_utils.py: 1,024 requests, _override_v1_engine_args' 8,192 tokens a step on an
# H100 or H200 and 2,048 on others for the API server, read in 0.7.0), but with one attention backend
# (v1/attention/backends/flash_attn.py) and no MLA: DeepSeek cached and decoded as 0.7.0's V0 does.
VLLM_070_V1 = replace(
    VLLM_08,
    version="0.7.0-v1",
    releases="0.7.0 with VLLM_USE_V1=1, the V1 engine's first release; rules as 0.8's but for MLA (read from 0.7.0)",
    label="vLLM 0.7.0 (V1)",
    mla_storage="qk-heads",
    dense_mla="none",
    aliases=("vllm@0.7.0+v1",),
)

V0_HOST_STEP_S = 0.004
V0_HOST_STEP_SOURCE = (
    "V0 before multi-step scheduling (off by default through 0.7): about 4 ms of GPU idle between two decode steps "
    "in vLLM's own torch-profiler trace (token transfer to the CPU, its conversion, input preparation, the "
    "scheduler; Llama 3 8B on one H100, vllm-project/vllm#6854), of the 5-13 ms bubbles that RFC reports"
)

VLLM_06 = Engine(
    "vllm",
    "0.6",
    "0.6, the V0 engine; rules read from 0.6.3 and 0.5.5",
    "vLLM 0.6 (V0)",
    "util_of_total",
    0.9,
    16,
    "full",
    pp_split="last",
    mla_storage="padded-heads",
    batched_tokens_default="v0",
    v0_chunking="0.6",
    sampler_bytes_per_logit=32,
    util_rounding="float",
    cudagraph="after",
    tokens_report="blocks",
    concurrency_report="blocks",
    util_flag="gpu_memory_utilization",
    note="blocks = (gpu_memory_utilization x total - peak memory of a profile run over max_num_batched_tokens) // "
    "(16 tokens x every attention layer); every layer holds every token; DeepSeek-V2 cached as per-head K and V "
    "padded to 256 (before MLA support in 0.7)",
    nvls_mib_per_rank=288.0,  # torch 2.4's NCCL 2.20.5
    prefill_graphs=False,
    decode_graph_max_len=8192,
    host_step_s=V0_HOST_STEP_S,
    host_source=V0_HOST_STEP_SOURCE
    + "; its per-request output processing runs beside the next step from 0.6.0 (async output processing, on by "
    "default: vllm-project/vllm#7049, which leaves scheduling on the critical path), so no V0 per-request cost is "
    "charged here beyond V1's (not measured apart for 0.6 and 0.7: a floor)",
    aliases=("vllm@v0", "vllm-v0"),
)
# V0 before async output processing (0.6.0): the same memory rules, each step's output processing
# (detokenisation, stop checks, the request outputs) still on its critical path.
VLLM_07 = replace(
    VLLM_06,
    version="0.7",
    releases="0.7.1, the V0 engine; rules read from 0.7.3, 0.7.1 and 0.7.0",
    label="vLLM 0.7 (V0)",
    mla_storage="latent",
    mla_decode="materialized",
    v0_chunking="0.7",
    v0_chunk_tokens=2048,
    mla_fp8_only=True,
    nvls_mib_per_rank=144.0,  # torch 2.5.1's NCCL 2.21.5
    note="blocks = (gpu_memory_utilization x total - peak memory of a profile run over max_num_batched_tokens) // "
    "(16 tokens x every attention layer); every layer holds every token; MLA cached as its latent (0.7.1 on), which "
    "turns chunked prefill off",
    aliases=(),
)
# 0.7.0: 0.7.1's rules but for MLA, which came in 0.7.1 (config.py use_mla): 0.7.0 caches DeepSeek-V2 and V3 as
# per-head K and V of the query-key head size, V padded to it (config.py get_head_size; models/deepseek_v2.py
# DeepseekV2Attention, read in 0.7.0), and decodes them as any attention.
VLLM_070 = replace(
    VLLM_07,
    version="0.7.0",
    releases="0.7.0, the V0 engine; rules read from 0.7.0 and 0.7.3",
    label="vLLM 0.7.0 (V0)",
    mla_storage="qk-heads",
    mla_decode="per-head",
    mla_fp8_only=False,
    note="blocks = (gpu_memory_utilization x total - peak memory of a profile run over max_num_batched_tokens) // "
    "(16 tokens x every attention layer); every layer holds every token; DeepSeek cached as per-head K and V of the "
    "query-key head size, V padded to it (before MLA support in 0.7.1)",
)


MLA_LATENT_FORMS = ("latent", "latent-256")
"""The storage forms (Engine.mla_storage) that cache an MLA layer as its latent; the others cache it per head."""


def mla_flags(how: str, vendor: str = "NVIDIA") -> dict[str, Any]:
    """An Allocation's MLA fields for a storage form (Engine.mla_storage_for): per-head K and V as decompressed,
    padded to 256 or to the query-key head size, or the latent, each token's entry padded to 256 bytes on NVIDIA GPUs
    ('latent-256')."""
    return {
        "mla_expanded": how == "expanded",
        "mla_padded_heads": how == "padded-heads",
        "mla_qk_heads": how == "qk-heads",
        "mla_align": MLA_ALIGN_ELEMENTS if how == "latent-256" and vendor == "NVIDIA" else 0,
    }


MLA_KEPT_FORMATS = ("bf16", "fp16", "fp32", "fp8")
"""Formats a checkpoint may be served in and keep MLA where the release keeps it only for those (Engine.mla_fp8_only):
16 bits, or fp8 weights and activations (--quantization fp8, an fp8 checkpoint)."""


def mla_kept(model: ModelSpec, weight_dtype: str | None = None) -> bool:
    """Whether vLLM 0.7.1 and 0.7.2 keep ``model``'s MLA (config.py ModelConfig.use_mla): served in 16 bits or in fp8
    (``weight_dtype``, where given: --weight-dtype), or, as the checkpoint comes, unquantized or in fp8 weights and
    activations (Quantization.method fp8-*, not weight-only); AWQ, GPTQ, int8, MXFP4 and NVFP4 turn it off."""
    if weight_dtype is not None:
        return normalize_weight_dtype(weight_dtype) in MLA_KEPT_FORMATS
    q = model.quantization
    if q is None:
        return model.weight_dtype in MLA_KEPT_FORMATS
    return q.method.startswith("fp8-") and not q.weight_only


MLA_ALIGN_ELEMENTS = 128
"""vLLM 0.7.2 and 0.7.3 pad each token's MLA cache entry to 256 bytes' worth of the model's (16-bit)
dtype, 128 elements, on CUDA (worker/cache_engine.py CacheEngine._align_cache and get_cache_block_size:
align_to_256bytes(num_heads x head_size, model_config.dtype), VLLM_CUDA_MEM_ALIGN_KV_CACHE on by
default in envs.py; read in 0.7.2 and 0.7.3, absent from 0.7.1 and 0.8.0): DeepSeek's 576-element
latent takes 640, 1,280 B a layer in 16 bits (640 B in fp8)."""
# 0.7.2 and 0.7.3: 0.7's rules with the MLA latent's entries aligned (MLA_ALIGN_ELEMENTS).
VLLM_072 = replace(
    VLLM_07,
    version="0.7.2",
    releases="0.7.2, the V0 engine; rules read from 0.7.3 and 0.7.2",
    label="vLLM 0.7.2 (V0)",
    mla_storage="latent-256",
    note="blocks = (gpu_memory_utilization x total - peak memory of a profile run over max_num_batched_tokens) // "
    "(16 tokens x every attention layer); every layer holds every token; MLA cached as its latent, each "
    "token's entry padded to 256 bytes on CUDA (576 elements to 640), which turns chunked prefill off",
)
# 0.7.3: 0.7.2's rules, but MLA whatever the checkpoint's quantization (config.py ModelConfig.use_mla, read in 0.7.3:
# no quantization test; dzhsurf's start of DeepSeek-V3-AWQ under 0.7.3, tests/logs/real, logs latent-sized blocks).
VLLM_073 = replace(
    VLLM_072,
    version="0.7.3",
    releases="0.7.3, the V0 engine; rules read from 0.7.3",
    label="vLLM 0.7.3 (V0)",
    mla_fp8_only=False,
)
VLLM_05 = replace(
    VLLM_06,
    version="0.5",
    releases="0.5.3 to 0.5.5, the V0 engine before async output processing; memory rules as 0.6",
    label="vLLM 0.5 (V0)",
    v0_chunking="0.5",
    host_per_request_s=103e-6,
    host_source=V0_HOST_STEP_SOURCE
    + "; per running request, its output processing on the critical path: _process_model_outputs took 0.2 ms at "
    "batch 1 and 3.4 ms at batch 32 (Llama 3 70B FP8 on 4 H100s, vllm-project/vllm#6913), (3.4 - 0.2) / 31 = 0.103 ms "
    "a request",
    aliases=(),
)
VLLM_04 = replace(
    VLLM_05,
    version="0.4",
    releases="0.2 to 0.5.2, the V0 engine before chunked prefill was on by default; memory rules as 0.6",
    label="vLLM 0.4 (V0)",
    v0_chunking="off",
    nvls_mib_per_rank=0.0,  # 0.2 to 0.5.2 spans NCCL 2.14 to 2.20 and other communicators: not read
)

SGLANG_HOST_KERNEL_S = 91e-6
"""SGLang's host time to issue one kernel of an eager forward (Engine.host_kernel_s): the median of the three
posted `sglang.bench_one_batch` prompt steps of DeepSeek-V3/R1 at TP 8 on 8 H200s, batch 1, run without a profiler
(SGLANG_HOST_KERNEL_SOURCE), 179.55 ms, over the 1,980 kernels the step model counts for the model's 61 layers
(steptime.layer_kernels at fp8): 90.7 us."""
SGLANG_HOST_KERNEL_SOURCE = (
    "sglang.bench_one_batch's prompt step (batch preparation, the eager forward and sampling, timed between two "
    "synchronizations, as a server's prompt step runs them), DeepSeek-V3/R1 at TP 8 on 8 H200s, batch 1: 166.62 and "
    "179.55 ms at 1,000 tokens (sgl-project/sglang#5432, April 2025, with and without DeepGEMM's BMM), 196.35 ms at "
    "128 (datacrunch-research/blogs deepseek-r1-deployment, January 2025); median 179.55 ms, host-bound (the GPU's "
    "work at 1,000 tokens is under 60 ms), over 1,980 kernels: 91 us a kernel, about twice the 42 us of one forward's "
    "'forward cost' log line on a GPU it does not name (sgl-project/sglang#12160, StepConstants.eager_host_s)"
)

SGLANG_05 = Engine(
    "sglang",
    "0.5",
    "0.5.20 and later 0.5.x; rules read from 0.5.23, the default memory fraction and chunk from 0.5.20 and 0.5.23",
    "SGLang 0.5",
    "util_of_start_free",
    None,
    None,
    "full",
    subtracts_activation=False,
    mixes_prefill=False,
    batched_tokens_default="sglang-0.5.20",
    dp_prompt_chunk="dp",
    sparse_mla_raw_fp8=True,
    hip_allreduce_buffers=True,
    swa_pool_ratio=0.8,
    swa_architectures=frozenset({"gpt_oss", "llama4", "llama4_text", "gemma4", "gemma4_text", "mimo_v2", "step3p5"}),
    mem_fraction_rule="sglang-0.5",
    vlm_fraction="vit",
    aiter_fraction=True,
    util_flag="mem_fraction_static",
    pp_split="last-n",
    prefill_graphs_off=frozenset({"pp", "non-cuda", "multimodal", "deepseek-sm100"}),
    # DeepSeek-V3.2 and GLM-5 (DSA): pages of 64 tokens on CUDA GPUs ("Setting page size to 64 for DeepSeek
    # DSA", server_args.py 0.5.3rc2 to 0.5.14; mem_cache/memory_pool.py 0.5.23 asserts "DSA requires 64-token
    # physical pages"), 1 on ROCm (0.5.9 on); fp8_e4m3 under auto on compute capability 10 and up.
    sparse_mla_block=64,
    sparse_mla_auto_kv="fp8_e4m3 on compute capability 10 and up (B200, GB200, RTX 5090, RTX PRO 6000)",
    state_pool="ratio",
    state_pool_pad=1,
    recurrent_itemsize=4,
    note="KV pool = mem_fraction_static x the memory free at start-up (after distributed init, before the "
    "weights; the minimum over ranks) - weights (activations and CUDA graphs live in the rest; "
    "srt/model_executor/kv_cache_configurator.py); mem_fraction_static derived from GPU memory, TP, PP and DP "
    "attention (and the prompt graphs, from 0.5.10); token-granular pool; sliding layers hold "
    "every token unless the architecture is on SGLang's hybrid-SWA allowlist (then a full pool plus a sliding "
    "pool of 0.8 its size)",
    mla_qkv_a_fused=True,
    aliases=("sglang", "sglang@current", "sglang@latest"),
)
# SGLang 0.5.10 to 0.5.19: the same rules but the chunk and decode graphs of GPUs under 35 GiB (2,048 tokens,
# 24 or 80), and prompt graphs (and their reserve) by release (Engine.prefill_graphs_off).
SGLANG_05 = replace(SGLANG_05, async_scheduling="pp1", prefill_graph_max_mla=8192)
SGLANG_0519 = replace(
    SGLANG_05,
    version="0.5.19",
    releases="0.5.19; rules read from 0.5.23, the default memory fraction and chunk from 0.5.10, 0.5.14, "
    "0.5.18 and 0.5.19, prompt graphs from 0.5.19",
    label="SGLang 0.5.19",
    batched_tokens_default="sglang-0.5",
    mem_fraction_rule="sglang-0.5.10",
    prefill_graphs_off=frozenset({"pp", "non-cuda", "multimodal", "deepseek-sm100"}),
    prefill_graph_max_mla=2048,
    aliases=(),
)


def _sglang_prompt_graphs(version: str, releases: str, label: str, off: set[str]) -> Engine:
    """0.5.19's record for a release of 0.5.10 to 0.5.18 that turns its prompt graphs off for other
    deployments (Engine.prefill_graphs_off)."""
    return replace(SGLANG_0519, version=version, releases=releases, label=label, prefill_graphs_off=frozenset(off))


SGLANG_0518 = _sglang_prompt_graphs(
    "0.5.18",
    "0.5.18; as 0.5.19 but prompt graphs at PP > 1, read from 0.5.18",
    "SGLang 0.5.18",
    {"non-cuda", "multimodal", "deepseek-sm100"},
)
SGLANG_0517 = _sglang_prompt_graphs(
    "0.5.17",
    "0.5.17; as 0.5.18 but no prompt graphs for MLA models without an indexer, read from 0.5.17",
    "SGLang 0.5.17",
    {"non-cuda", "multimodal", "mla-dense", "deepseek-sm100"},
)
SGLANG_0516 = _sglang_prompt_graphs(
    "0.5.16",
    "0.5.15 and 0.5.16; as 0.5.18 but no prompt graphs for MLA models or under DP attention, read from 0.5.15 and 0.5.16",
    "SGLang 0.5.15-0.5.16",
    {"non-cuda", "multimodal", "mla", "dp", "deepseek-sm100"},
)
SGLANG_0516 = replace(SGLANG_0516, state_pool_pad=0)  # no padding slot in 0.5.16 (Engine.state_pool_pad)
SGLANG_0514 = _sglang_prompt_graphs(
    "0.5.14",
    "0.5.13 and 0.5.14; piecewise prompt graphs, off for DP attention, PP, non-CUDA GPUs, multimodal models and "
    "Qwen3-Next, read from 0.5.13 and 0.5.14",
    "SGLang 0.5.13-0.5.14",
    {"pp", "non-cuda", "multimodal", "dp", "qwen3-next"},
)
SGLANG_0514 = replace(SGLANG_0514, state_pool_pad=0)
SGLANG_0512 = _sglang_prompt_graphs(
    "0.5.12",
    "0.5.10 to 0.5.12; as 0.5.14 but no prompt graphs for DeepSeek-V3.2 and GLM-5, nor with routed experts on "
    "FlashInfer's TensorRT-LLM MoE runner (but gpt-oss's), read from 0.5.10, 0.5.11 and 0.5.12",
    "SGLang 0.5.10-0.5.12",
    {"pp", "non-cuda", "multimodal", "dp", "qwen3-next", "dsa", "flashinfer-moe"},
)
SGLANG_0512 = replace(SGLANG_0512, state_pool_pad=0)
# SGLang before 0.5.10: the same memory rules; prompts run without CUDA graphs (piecewise graphs were
# opt-in: server_args.py enable_piecewise_cuda_graph False, 0.5.6 to 0.5.9), so no reserve for them.
SGLANG_059 = replace(
    SGLANG_05,
    version="0.5.9",
    releases="0.5.9; memory rules read from 0.5.23, the default memory fraction from 0.5.3rc2 to 0.5.9, "
    "prompt steps from 0.5.6 and 0.5.9",
    label="SGLang 0.5.9",
    batched_tokens_default="sglang-0.5",
    sparse_mla_raw_fp8=False,
    hip_allreduce_buffers=False,
    dsa_cell_raw=True,
    mem_fraction_rule="sglang-0.5.3",
    prefill_graphs=False,
    prefill_graphs_off=frozenset(),
    prefill_graph_max_mla=None,
    dp_prompt_lockstep=True,
    state_pool_pad=0,
    aliases=(),
)
# 0.5.7 and 0.5.8: 0.5.9's rules but a Gated DeltaNet model's states in 512 fixed slots with the radix cache off
# (Engine.state_radix_off), read from the wheels of 0.5.7 and 0.5.8.
SGLANG_058 = replace(
    SGLANG_059,
    version="0.5.8",
    releases="0.5.7 and 0.5.8; as 0.5.9 but a Gated DeltaNet model's states in --max-running-requests or 512 slots "
    "with the radix cache off, and MiniMax-M2's q/k-norm all-reduce unpadded (0.5.8's: 0.5.7 all-reduces q's and k's "
    "sums apart, as 0.5.6 does), read from 0.5.7 and 0.5.8",
    label="SGLang 0.5.7-0.5.8",
    state_radix_off="fixed",
)
# 0.5.6: 0.5.8's rules but a Gated DeltaNet model's ratio slots divided by the DP-attention size too
# (Engine.state_ratio_dp), read from the wheel of 0.5.6.
SGLANG_056 = replace(
    SGLANG_058,
    version="0.5.6",
    releases="0.5.6; as 0.5.8 but a Gated DeltaNet model's state slots divided by the DP-attention size under the "
    "radix cache too, read from 0.5.6",
    label="SGLang 0.5.6",
    state_ratio_dp=True,
)
# 0.5.4.post1 to 0.5.5: 0.5.6's rules but the pipeline's uneven layers all on the last stage (Engine.pp_split).
SGLANG_055 = replace(
    SGLANG_056,
    version="0.5.5",
    releases="0.5.4.post1 to 0.5.5; as 0.5.6 but the last pipeline stage takes every layer left over, read from 0.5.3, "
    "0.5.4 and 0.5.5",
    label="SGLang 0.5.4.post1-0.5.5",
    pp_split="last",
)
# 0.5.4: 0.5.5's rules but DeepSeek's fp8 experts on the default fused-MoE runner on compute capability 10, not
# FlashInfer's TensorRT-LLM kernel (moe_runner; a record of its own since 2026-12-06, one with 0.5.5 until then).
SGLANG_054 = replace(
    SGLANG_055,
    version="0.5.4",
    releases="0.5.4; as 0.5.5 but DeepSeek-V3's fp8 experts on the default MoE runner on B200, read from 0.5.4",
    label="SGLang 0.5.4",
)
# 0.5.3: 0.5.5's rules but a Gated DeltaNet model's states in fixed slots with the radix cache always off, as 0.5.2
# keeps them ("Hybrid GDN model detected, disable radix cache", model_executor/model_runner.py, read in 0.5.3).
SGLANG_053 = replace(
    SGLANG_054,
    version="0.5.3",
    releases="0.5.3; as 0.5.4 but a Gated DeltaNet model's states in --max-running-requests or 512 slots, the radix "
    "cache off, read from 0.5.3",
    label="SGLang 0.5.3",
    state_pool="fixed",
)

# SGLang 0.3 and 0.4: mem_fraction_static from a table, no sliding pool, prompts without CUDA graphs.
SGLANG_04 = replace(
    SGLANG_059,
    state_pool="none",  # no Gated DeltaNet model before 0.5.2
    recurrent_itemsize=0,
    pp_split="last",
    version="0.4",
    releases="0.4.6.post2 to 0.4.6.post5; rules read from 0.4.6.post5",
    label="SGLang 0.4",
    batched_tokens_default="sglang-0.4",
    mem_fraction_rule="sglang-0.4",
    vlm_fraction="runner-0.9",
    aiter_fraction=False,
    swa_pool_ratio=None,
    swa_architectures=frozenset(),
    sparse_mla_block=None,  # DeepSeek-V3.2 arrived in 0.5.3
    sparse_mla_auto_kv="",
    note="KV pool = mem_fraction_static x the memory free at start-up - weights (model_runner.py "
    "profile_max_num_token); mem_fraction_static from a table by "
    "TP x PP on GPUs of <= 80 GiB (0.88 at 1, 0.87 at 2, 0.85 at 4, 0.81 at 8, 0.79 at 16), raised on GPUs over "
    "96 GiB; every layer holds every token (no sliding pool)",
)
# SGLang 0.4.7 to 0.5.2: each its own default mem_fraction_static and chunked_prefill_size, read from
# server_args.py of the wheels of 0.4.7, 0.4.7.post1, 0.4.8, 0.4.9 (.post1 to .post6), 0.4.10 (.post1, .post2),
# 0.5.1 and 0.5.2; 0.5.3rc2 has 0.5's rule.
_BUCKETS = (
    "mem_fraction_static = (memory - reserve) / memory, the reserve (2.8 + TP x PP / 10) GiB under 35 GiB, "
    "(9.5 + TP x PP / 2) GiB under 90 GiB, (12 + TP x PP / 2) GiB under 160 GiB, else 32 GiB, 4 GiB more with DP "
    "attention"
)
_VLM_WORDS = {
    "runner-0.95": "; x 0.95 for a multimodal model",
    "runner-0.9": "; x 0.9 for a multimodal model",
    "none": "",
    "vit": "; the default cut by a multimodal model's vision tower",
}


def _sglang_bucketed(
    version: str,
    releases: str,
    read: str,
    vlm: Literal["none", "runner-0.9", "vit"],
    rule: Literal["sglang-0.4.7", "sglang-0.4.7.post1"] = "sglang-0.4.7.post1",
) -> Engine:
    """A release of 0.4.7 to 0.4.10.post2: sglang@0.4's record with its own default mem_fraction_static
    and chunk (``rule``: 0.4.7's, or the bucketed one of 0.4.7.post1 on), ROCm's aiter cut, and its own
    cut for a multimodal model, read from the wheels ``read``."""
    words = (
        "mem_fraction_static as 0.4.6.post5's but 0.79 on NVIDIA GPUs of over 180,000 MiB (the B200)"
        if rule == "sglang-0.4.7"
        else _BUCKETS
    )
    return replace(
        SGLANG_04,
        version=version,
        releases=f"{releases}; rules read from 0.4.6.post5, the default memory fraction and chunk from {read}",
        label="SGLang " + releases.replace(" to ", "-"),
        batched_tokens_default=rule,
        mem_fraction_rule=rule,
        vlm_fraction=vlm,
        aiter_fraction=True,
        note="KV pool = mem_fraction_static x the memory free at start-up - weights (model_runner.py "
        f"profile_max_num_token); {words}{_VLM_WORDS[vlm]}; every layer holds every token (no sliding pool)",
        aliases=(),
    )


SGLANG_047 = _sglang_bucketed("0.4.7", "0.4.7", "0.4.7", "runner-0.9", "sglang-0.4.7")
SGLANG_0471 = _sglang_bucketed("0.4.7.post1", "0.4.7.post1 to 0.4.8", "0.4.7.post1 and 0.4.8", "runner-0.9")
# 0.4.9 drops the model runner's x 0.9 for multimodal models; 0.4.9.post3 cuts the default by the vision tower.
SGLANG_049 = _sglang_bucketed("0.4.9", "0.4.9 to 0.4.9.post2", "0.4.9, 0.4.9.post1 and 0.4.9.post2", "none")
SGLANG_0493 = _sglang_bucketed(
    "0.4.9.post3", "0.4.9.post3 to 0.4.10.post2", "0.4.9.post3, 0.4.9.post6, 0.4.10.post1 and 0.4.10.post2", "vit"
)
SGLANG_052 = replace(
    SGLANG_055,
    state_pool="fixed",
    version="0.5.2",
    releases="0.5.0rc0 to 0.5.2; memory rules read from 0.5.23, the default memory fraction and chunk from 0.5.1 and 0.5.2",
    label="SGLang 0.5.0-0.5.2",
    batched_tokens_default="sglang-0.4.7.post1",
    mem_fraction_rule="sglang-0.4.7.post1",
    note=SGLANG_059.note.replace(
        "mem_fraction_static derived from GPU memory, TP, PP and DP attention (and the prompt graphs, from 0.5.10)", _BUCKETS
    ),
    aliases=(),
)
# Earlier 0.3 and 0.4 releases: sglang@0.4's rules but for the default mem_fraction_static, which
# server_args.py ServerArgs.__post_init__ set by TP from a table alone until 0.4.5.post2, with 0.83
# (0.3.0 to 0.3.5) or 0.82 (0.3.6) at TP 8 to 15, and from 0.4.5.post3 to 0.4.6.post1 as (GPU memory -
# 13 GiB) / GPU memory on GPUs over 80 GiB (read from the sglang wheels of each release named).
_SGLANG_04_NOTE = (
    "KV pool = mem_fraction_static x the memory free at start-up - weights (model_runner.py profile_max_num_token); "
    "mem_fraction_static {rule}; every layer holds every token (no sliding pool)"
)


def _sglang_before_046(
    version: str,
    releases: str,
    read: str,
    rule: MemFractionRule,
    table: str,
    vlm: Literal["runner-0.95", "runner-0.9"] = "runner-0.9",
) -> Engine:
    """An earlier 0.3 or 0.4 release: sglang@0.4's record with its own default mem_fraction_static, read
    from the server_args.py of the wheels named by ``read``, and its model runner's cut for a multimodal
    model (model_runner.py: x 0.95 to 0.4.4.post3, x 0.9 from 0.4.4.post4)."""
    return replace(
        SGLANG_04,
        mla_qkv_a_fused=False,  # fused_qkv_a_proj_with_mqa from 0.4.6
        version=version,
        releases=releases + "; rules read from 0.4.6.post5, the default memory fraction from " + read,
        label="SGLang " + releases.replace(" to ", "-"),
        mem_fraction_rule=rule,
        vlm_fraction=vlm,
        note=_SGLANG_04_NOTE.format(rule=table),
        aliases=(),
    )


_TABLE = "from a table by TP (0.88 at 1, 0.87 at 2, 0.85 at 4, {} at 8, 0.79 at 16)"
SGLANG_0453 = _sglang_before_046(
    "0.4.5.post3",
    "0.4.5.post3 to 0.4.6.post1",
    "0.4.5.post3 and 0.4.6",
    "sglang-0.4.5",
    _TABLE.format("0.81") + " on GPUs of <= 80 GiB, else (GPU memory - 13 GiB) / GPU memory",
)
# 0.4.5.post1 made FlashAttention 3 the MLA decode backend on Hopper where none is asked for (with CUDA 12.3 or
# later: model_runner.py model_specific_adjustment, is_hopper_with_cuda_12_3; Triton in 0.4.4.post4 and 0.4.5, read
# in the wheels of 0.4.4.post4, 0.4.5, 0.4.5.post1 and 0.4.5.post2): SGLANG_BEFORE_FA3_MLA. A posted 0.4.5.post2 log of
# DeepSeek-R1 on 8 H200s prints "Attention backend not set. Use fa3 backend by default." (tests/logs/real). The two
# records' other rules are alike.
SGLANG_0451 = _sglang_before_046(
    "0.4.5.post1",
    "0.4.5.post1 to 0.4.5.post2",
    "0.4.5.post1 and 0.4.5.post2",
    "sglang-0.4.0",
    _TABLE.format("0.81"),
)
# 0.4.4.post4 turned the model runner's multimodal cut from x 0.95 to x 0.9 (model_runner.py of 0.4.4.post3 and .post4).
SGLANG_0444 = _sglang_before_046(
    "0.4.4.post4",
    "0.4.4.post4 to 0.4.5",
    "0.4.4.post4 and 0.4.5",
    "sglang-0.4.0",
    _TABLE.format("0.81"),
)
# 0.4.4.post1 divided a DP-attention rank's prompt chunk by the DP size where 0.4.4 halved it (Engine.dp_prompt_chunk).
SGLANG_0441 = _sglang_before_046(
    "0.4.4.post1",
    "0.4.4.post1 to 0.4.4.post3",
    "0.4.0, 0.4.3 and 0.4.4.post3",
    "sglang-0.4.0",
    _TABLE.format("0.81"),
    "runner-0.95",
)
SGLANG_040 = _sglang_before_046(
    "0.4.0", "0.4.0 to 0.4.4", "0.4.0, 0.4.3 and 0.4.4.post3", "sglang-0.4.0", _TABLE.format("0.81"), "runner-0.95"
)
SGLANG_040 = replace(SGLANG_040, async_scheduling="pp1-no-dp", dp_prompt_chunk="half")
# 0.4.1 and 0.4.2.post2 changed the Triton MLA decode SGLang runs by default on Hopper and ROCm (Engine.triton_mla_splits;
# 0.4.0 launches another kernel, a fixed SPLIT_K over 64-token tiles): 0.4.1 to 0.4.2.post1 split a request's context in
# 8 everywhere, their ROCm tile changing within them (32 tokens to 0.4.1.post3, 16 from 0.4.1.post4: not priced there);
# 0.4.2.post2 to 0.4.4 in 8 on CUDA and 16 on ROCm, one tile (16 tokens, waves_per_eu 1). Their other rules are 0.4.0's.


def _sglang_04_span(first: str, last: str, splits: tuple[int, int]) -> Engine:
    """0.4.0's record for the releases ``first`` to ``last``, whose Triton MLA decode splits in ``splits``."""
    span = f"{first} to {last}" if last != first else first
    label = f"SGLang {first}-{last}" if last != first else f"SGLang {first}"
    return replace(
        SGLANG_040,
        version=first,
        releases=SGLANG_040.releases.replace("0.4.0 to 0.4.4", span),
        label=label,
        triton_mla_splits=splits,
    )


# 0.4.1.post7 kept the overlap scheduler on under DP attention, which 0.3.6 to 0.4.1.post6 turn off (server_args.py;
# Engine.async_scheduling).
SGLANG_041 = _sglang_04_span("0.4.1", "0.4.1.post6", (8, 0))
SGLANG_0417 = replace(_sglang_04_span("0.4.1.post7", "0.4.2.post1", (8, 0)), async_scheduling="pp1")
SGLANG_0422 = replace(_sglang_04_span("0.4.2.post2", "0.4.4", (8, 16)), async_scheduling="pp1")
SGLANG_040 = _sglang_04_span("0.4.0", "0.4.0", (0, 0))


def _posted_host_kernel(e: Engine) -> Engine:
    """``e`` with the host time a kernel of an eager forward that SGLang 0.4.1 to 0.4.5's posted prompt steps give
    (SGLANG_HOST_KERNEL_S); the records of 0.4.0 and of 0.4.5.post3 on, whose steps no post times, keep the default."""
    return replace(e, host_kernel_s=SGLANG_HOST_KERNEL_S, host_source=SGLANG_HOST_KERNEL_SOURCE)


SGLANG_041, SGLANG_0417, SGLANG_0422, SGLANG_0441, SGLANG_0444, SGLANG_0451 = (
    _posted_host_kernel(e) for e in (SGLANG_041, SGLANG_0417, SGLANG_0422, SGLANG_0441, SGLANG_0444, SGLANG_0451)
)
SGLANG_036 = _sglang_before_046("0.3.6", "0.3.6", "0.3.6", "sglang-0.3.6", _TABLE.format("0.82"), "runner-0.95")
SGLANG_036 = replace(SGLANG_036, async_scheduling="pp1-no-dp", dp_prompt_chunk="half")
SGLANG_03 = _sglang_before_046("0.3", "0.3.0 to 0.3.5", "0.3.0 to 0.3.5", "sglang-0.3", _TABLE.format("0.83"), "runner-0.95")
SGLANG_03 = replace(SGLANG_03, async_scheduling="none", dp_prompt_chunk="none")  # (no DP attention before 0.3.6)

ENGINE_LIST: list[Engine] = [
    VLLM_033,
    VLLM_021,
    VLLM_020,
    VLLM_018,
    VLLM_017,
    VLLM_015,
    VLLM_014,
    VLLM_012,
    VLLM_011,
    VLLM_010,
    VLLM_09,
    VLLM_085,
    VLLM_084,
    VLLM_08,
    VLLM_070_V1,
    VLLM_073,
    VLLM_072,
    VLLM_07,
    VLLM_070,
    VLLM_06,
    VLLM_05,
    VLLM_04,
    SGLANG_05,
    SGLANG_0519,
    SGLANG_0518,
    SGLANG_0517,
    SGLANG_0516,
    SGLANG_0514,
    SGLANG_0512,
    SGLANG_059,
    SGLANG_058,
    SGLANG_056,
    SGLANG_055,
    SGLANG_054,
    SGLANG_053,
    SGLANG_052,
    SGLANG_0493,
    SGLANG_049,
    SGLANG_0471,
    SGLANG_047,
    SGLANG_04,
    SGLANG_0453,
    SGLANG_0451,
    SGLANG_0444,
    SGLANG_0441,
    SGLANG_0422,
    SGLANG_0417,
    SGLANG_041,
    SGLANG_040,
    SGLANG_036,
    SGLANG_03,
    Engine(
        "trtllm",
        "1.2",
        "1.x; rules read from its C++ KV cache manager",
        "TensorRT-LLM 1.x",
        "fraction_of_free",
        0.9,
        32,
        "window",
        per_window_pools=True,
        util_flag="free_gpu_memory_fraction",
        prefill_graphs=False,
        async_scheduling="pp1",
        pp_split="first-n",
        note="KV pool = free_gpu_memory_fraction x (runtime total - weights - activations - non-torch); 32 tokens per "
        "block; one pool per window size, memory split in proportion to window x bytes per token",
        aliases=("trtllm", "tensorrt-llm", "tensorrt_llm"),
    ),
    Engine(
        "trtllm",
        "0.19",
        "0.14 to 0.21 on TensorRT engines (trtllm-build); rules read from its C++ batch manager, runtime buffers and decoder",
        "TensorRT-LLM 0.19 (TensorRT engine)",
        "fraction_of_free",
        0.9,
        32,
        "window",
        per_window_pools=True,
        util_flag="kv_cache_free_gpu_mem_fraction",
        prefill_graphs=False,
        pp_split="first-n",
        decoder_buffers=True,
        num_seqs_default=2048,
        note="KV pool = kv_cache_free_gpu_mem_fraction x (runtime total - weights - the engine's execution context - "
        "the runtime's and decoder's buffers - non-torch); the runtime's logits and four decoder buffers of max_batch_size "
        "x the vocabulary (trtGptModelInflightBatching.cpp createBuffers, createDecoder); 32 tokens per block; one pool "
        "per window size",
        aliases=(),
    ),
    Engine(
        "hf",
        "",
        "5.x",
        "transformers 5.x (DynamicCache)",
        "all",
        None,
        None,
        "window-1",
        note="no pool: every request's cache is allocated as it grows; sliding layers keep window - 1 tokens; MLA "
        "caches the latent",
        mla_note="MLA cached as the latent (transformers 5.x); --engine hf4 gives the other",
        aliases=("hf", "transformers", "hf5"),
    ),
    Engine(
        "hf4",
        "",
        "4.x",
        "transformers 4.x (DynamicCache)",
        "all",
        None,
        None,
        "window-1",
        mla_storage="expanded",
        note="as hf, but MLA layers cache decompressed per-head K (nope + rope dims) and V instead of the latent",
        mla_note="MLA cached as decompressed per-head K and V (transformers 4.x); --engine hf gives the other",
        aliases=("hf4", "transformers4"),
    ),
    Engine(
        "plain",
        "",
        "",
        "no engine (logical bytes)",
        "all",
        None,
        None,
        "window",
        subtracts_activation=False,
        subtracts_non_torch=False,
        note="device memory minus weights; every byte left holds KV; no blocks",
        aliases=("plain", "none", "logical"),
    ),
]

# The default record of each family is the first listed (the current release).
_CURRENT = {e.name: e for e in reversed(ENGINE_LIST)}
ENGINES: dict[str, Engine] = {**_CURRENT, **{e.key: e for e in ENGINE_LIST}}
"""Every record by its key (vllm@0.11), and each family's current record by the family's name (vllm)."""
# A release as pip and the engines' banners print it: up to four numbers (vLLM 0.10.1.1, 0.9.0.1),
# then a pre-, post- or dev-release (rc1, .post1, .dev181) and a local part (+gf35f8e22).
_VERSION_RE = re.compile(
    r"^([a-z0-9_-]+?)(?:@|==|=|-|:|\s+)v?([0-9]+(?:\.[0-9]+){0,3}(?:\.?(?:post|rc|dev)[0-9]*)*(?:\+[0-9a-z.]+)?)$"
)
ACCEPTED = (
    "vllm (current, 0.33), vllm@0.21, vllm@0.20, vllm@0.18, vllm@0.17, vllm@0.15, vllm@0.14, vllm@0.12, vllm@0.11, vllm@0.10, "
    "vllm@0.9, vllm@0.8.5, "
    "vllm@0.8.4, vllm@0.8, vllm@0.7.0-v1 (0.7.0's opt-in V1), vllm@0.7.3, vllm@0.7.2, vllm@0.7 (0.7.1), vllm@0.7.0, vllm@0.6, vllm@0.5, "
    "vllm@0.4 (V0; any release as vllm@0.9.2 or "
    "vllm==0.9.2), "
    "sglang (0.5.20 and later 0.5), sglang@0.5.19, sglang@0.5.18, sglang@0.5.17, sglang@0.5.16 (0.5.15 to 0.5.16), "
    "sglang@0.5.14 (0.5.13 to 0.5.14), sglang@0.5.12 (0.5.10 to 0.5.12), sglang@0.5.9, sglang@0.5.8 (0.5.7 to 0.5.8), sglang@0.5.6, sglang@0.5.5 (0.5.4.post1 to 0.5.5), sglang@0.5.4, sglang@0.5.3, sglang@0.5.2 (0.5.0 to 0.5.2), sglang@0.4.9.post3 "
    "(to 0.4.10.post2), sglang@0.4.9, sglang@0.4.7.post1 (to 0.4.8), sglang@0.4.7, sglang@0.4 (0.4.6.post2 to 0.4.6.post5), sglang@0.4.5.post3, "
    "sglang@0.4.5.post1 (to 0.4.5.post2), sglang@0.4.4.post4 (to 0.4.5), sglang@0.4.4.post1, sglang@0.4.2.post2 (to 0.4.4), sglang@0.4.1.post7 (to 0.4.2.post1), sglang@0.4.1 (to 0.4.1.post6), sglang@0.4.0, sglang@0.3.6, sglang@0.3 (any release as sglang@0.4.4.post3), trtllm (1.x), trtllm@0.19 (0.14 to 0.21 on TensorRT engines), hf, hf4, plain"
)


def sglang_graph_band(gpu_mib: float, tp_size: int, rule: MemFractionRule) -> tuple[int, int]:
    """(chunked_prefill_size, cuda_graph_max_bs) as SGLang 0.5.3 and later default them by the GPU's
    memory in MiB and tp_size (server_args.py _handle_gpu_memory_settings, read in 0.5.3, 0.5.5, 0.5.9
    and 0.5.10; arg_groups/memory_hook.py in 0.5.23): under 20 GiB 2,048 and 8; under 35 GiB 2,048
    and 24 at TP < 4 (16 in 0.5.3), else 80, where from 0.5.20 (``rule`` sglang-0.5) 4,096 and 48
    (160); under 60 GiB 4,096 and 32 (160); under 160 GiB 8,192 and 256 (512); else 16,384 and 512."""
    if gpu_mib < 20 * 1024:
        return 2048, 8
    if gpu_mib < 35 * 1024:
        if rule == "sglang-0.5":
            return 4096, (48 if tp_size < 4 else 160)
        return 2048, (24 if tp_size < 4 else 80)
    if gpu_mib < 60 * 1024:
        return 4096, (32 if tp_size < 4 else 160)
    if gpu_mib < 160 * 1024:
        return 8192, (256 if tp_size < 4 else 512)
    return 16384, 512


def sglang_decode_graph_max(gpu_mib: float, tp_size: int, rule: MemFractionRule, dp: int = 1, release: str = "") -> int:
    """The largest decode batch SGLang captures in a CUDA graph by default, by release (``rule``, the
    record's mem_fraction_rule), the GPU's memory in MiB (get_device_memory_capacity) and tp_size: the
    capture list of model_executor/cuda_graph_runner.py (get_batch_sizes_to_capture) cut at
    server_args.py's cuda_graph_max_bs, each read in the wheels named.

    - 0.3.0 to 0.3.5 (read in 0.3.0): 160.
    - 0.3.6: 160; 4 on GPUs under 25,000 MiB; 96 with DP attention.
    - 0.4.0 to 0.4.5.post2 (0.4.0, 0.4.3, 0.4.4.post3, 0.4.5): 160; under 25,000 MiB 8 at TP < 4, else
      80 (8 at any TP in 0.4.0, whose DP attention also takes at most 96: ``release`` "0.4.0", the record of
      0.4.0 alone, since 2026-12-06; 0.4.3 on ROCm adds sizes to 256 after the cut, which this record does
      not follow).
    - 0.4.5.post3 to 0.4.6.post1: 256 on GPUs over 81,920 MiB (0.4.6.post1: without DP attention),
      else 160; under 25,000 MiB 8 or 80.
    - 0.4.6.post2 to 0.4.6.post5: 256 over 96 GiB, else 160; under 25,000 MiB 8 or 80.
    - 0.4.7: 512 over 180,000 MiB, 256 over 96 GiB, else 160; under 25,000 MiB 8 or 80.
    - 0.4.7.post1 to 0.5.2 (0.4.7.post1, 0.4.8, 0.4.9, 0.4.10.post2, 0.5.0rc0, 0.5.2): 512 over
      160,000 MiB, 256 over 90 GiB, else 160; under 35 GiB 8 or 80.
    - 0.5.3 and later: cuda_graph_max_bs by sglang_graph_band, the capture list reaching it.
    """
    if rule in ("sglang-0.5.3", "sglang-0.5.10", "sglang-0.5"):
        return sglang_graph_band(gpu_mib, tp_size, rule)[1]
    if rule == "sglang-0.3":
        return 160
    small = 25_000 if rule != "sglang-0.4.7.post1" else 35 * 1024
    if gpu_mib < small:
        if rule == "sglang-0.3.6":
            return 4
        return 8 if tp_size < 4 or release == "0.4.0" else 80
    if (rule == "sglang-0.3.6" or release == "0.4.0") and dp > 1:
        return 96
    if rule == "sglang-0.4.7.post1":
        return 512 if gpu_mib > 160_000 else 256 if gpu_mib > 90 * 1024 else 160
    if rule == "sglang-0.4.7" and gpu_mib > 180_000:
        return 512
    if rule in ("sglang-0.4.7", "sglang-0.4"):
        return 256 if gpu_mib > 96 * 1024 else 160
    if rule == "sglang-0.4.5":
        return 256 if gpu_mib > 81_920 else 160
    return 160


def _version_tuple(v: str) -> tuple[int, ...]:
    """The release's first three numbers (0.10.1.1 -> (0, 10, 1); 0.7.4.dev181+g1 -> (0, 7, 4))."""
    m = re.match(r"[0-9]+(?:\.[0-9]+)*", v)
    return tuple(int(x) for x in (m.group(0) if m else "0").split(".")[:3])


def _vllm_record(version: tuple[int, ...]) -> str | None:
    if version < (0, 2):
        return None
    if version < (0, 5, 3):
        return "vllm@0.4"
    if version < (0, 6):
        return "vllm@0.5"
    if version < (0, 7):
        return "vllm@0.6"
    if version < (0, 7, 1):
        return "vllm@0.7.0"
    if version < (0, 7, 2):
        return "vllm@0.7"
    if version < (0, 7, 3):
        return "vllm@0.7.2"
    if version < (0, 8):
        return "vllm@0.7.3"
    if version < (0, 8, 4):
        return "vllm@0.8"
    if version < (0, 8, 5):
        return "vllm@0.8.4"
    if version < (0, 9):
        return "vllm@0.8.5"
    if version < (0, 10):
        return "vllm@0.9"
    if version < (0, 11):
        return "vllm@0.10"
    if version < (0, 12):
        return "vllm@0.11"
    if version < (0, 14):
        return "vllm@0.12"
    if version < (0, 15):
        return "vllm@0.14"
    if version < (0, 17):
        return "vllm@0.15"
    if version < (0, 18):
        return "vllm@0.17"
    if version < (0, 20):
        return "vllm@0.18"
    if version < (0, 21):
        return "vllm@0.20"
    if version < (0, 27):
        return "vllm@0.21"
    return "vllm@0.33"


def _sglang_record(v: tuple[int, ...], version: str) -> str:
    """The record of a 0.3 or 0.4 SGLang release, by where its default mem_fraction_static changed
    (server_args.py): 0.3.6, 0.4.0, 0.4.5.post3, 0.4.6.post2, 0.4.7 and 0.4.7.post1, or its cut for a multimodal
    model (model_runner.py, server_args.py): 0.4.4.post4, 0.4.9 and 0.4.9.post3, or its MLA decode default on Hopper
    (model_runner.py): 0.4.5.post1, or its overlap scheduler under DP attention (server_args.py): 0.4.1.post7."""
    m = re.search(r"post([0-9]+)", version)
    post = int(m.group(1)) if m else 0
    if v < (0, 3, 6):
        return "sglang@0.3"
    if v < (0, 4):
        return "sglang@0.3.6"
    if v < (0, 4, 1):
        return "sglang@0.4.0"
    if v == (0, 4, 1) and post < 7:
        return "sglang@0.4.1"
    if v < (0, 4, 2) or (v == (0, 4, 2) and post < 2):
        return "sglang@0.4.1.post7"
    if v < (0, 4, 4) or (v == (0, 4, 4) and post < 1):
        return "sglang@0.4.2.post2"
    if v == (0, 4, 4) and post < 4:
        return "sglang@0.4.4.post1"
    if v < (0, 4, 5) or (v == (0, 4, 5) and post < 1):
        return "sglang@0.4.4.post4"
    if v == (0, 4, 5) and post < 3:
        return "sglang@0.4.5.post1"
    if v < (0, 4, 6) or (v == (0, 4, 6) and post < 2):
        return "sglang@0.4.5.post3"
    if v < (0, 4, 7):
        return "sglang@0.4"
    if v == (0, 4, 7) and post < 1:
        return "sglang@0.4.7"
    if v < (0, 4, 9):
        return "sglang@0.4.7.post1"
    if v == (0, 4, 9) and post < 3:
        return "sglang@0.4.9"
    return "sglang@0.4.9.post3"


ATTENTION_BACKENDS = ("default", "triton")
"""What --attention-backend accepts: the release's default kernel, or SGLang's Triton backend."""

TRITON_RECORDS = frozenset(
    {
        "sglang@0.4.4.post4",
        "sglang@0.4.5.post1",
        "sglang@0.4.5.post3",
        "sglang@0.4",
        "sglang@0.4.7",
        "sglang@0.4.7.post1",
        "sglang@0.4.9",
        "sglang@0.4.9.post3",
        "sglang@0.5.2",
        "sglang@0.5.3",
        "sglang@0.5.4",
        "sglang@0.5.5",
        "sglang@0.5.6",
        "sglang@0.5.8",
        "sglang@0.5.9",
    }
)
"""The SGLang records whose Triton decode the step model prices (0.4.4.post4 to 0.5.9): their releases size
the decode kernel's KV splits by the batch and the GPU's multiprocessors, at most
--triton-attention-num-kv-splits (8), for MLA too (get_num_kv_splits_triton in
srt/layers/attention/triton_backend.py, read alike in 0.4.4.post3, 0.4.5.post3, 0.4.7.post1, 0.5.0rc0, 0.5.2,
0.5.3, 0.5.6, 0.5.9 and 0.5.10). 0.4.0 launches a fixed count; by 0.5.12 MLA's cap grows to the
multiprocessors (_mla_decode_kv_splits_cap), not followed; the records spanning either are refused."""


def _backend_key(backend: str | None, names: Collection[str], what: str, where: str, accepted: str) -> str:
    """A backend's name as ``names`` spell it (None or "": "default"); an unknown one is refused in one line with the
    closest names and what is ``accepted``."""
    key = (backend or "").strip().lower() or "default"
    if key not in names:
        near = closest(key, names)
        raise KvcalcError(
            f"unknown {what} {str(backend)[:40]!r}", where, ("did you mean " + ", ".join(near) + "? " if near else "") + accepted
        )
    return key


def attention_backend_name(backend: str | None, where: str = "attention_backend") -> str:
    """An attention backend's name as ATTENTION_BACKENDS spells it (None or "": "default"); an unknown one
    is refused in one line with the closest names."""
    return _backend_key(backend, ATTENTION_BACKENDS, "attention backend", where, "default, or triton (SGLang's Triton backend)")


MOE_BACKENDS = {"default": "", "trtllm": "trtllm", "flashinfer_trtllm": "trtllm"}
"""The fused-MoE kernels --moe-backend names (Engine.moe_backend), by the names the engines give them: TensorRT-LLM's
moe_config backend TRTLLM, SGLang's and vLLM's flashinfer_trtllm."""


def with_moe_backend(e: Engine, backend: str | None, where: str = "moe_backend") -> Engine:
    """``e`` running its routed experts on the fused-MoE kernel ``backend`` names (None, "" or "default": the release's
    own; MOE_BACKENDS); an unknown name is refused in one line with the closest ones."""
    accepted = "default, or trtllm (the TensorRT-LLM-gen kernel; flashinfer_trtllm is the same)"
    key = _backend_key(backend, MOE_BACKENDS, "MoE backend", where, accepted)
    return replace(e, moe_backend="trtllm") if MOE_BACKENDS[key] else e


ALL_REDUCE_BACKENDS: dict[str, bool | None] = {"default": None, "custom": True, "nccl": False, "rccl": False}
"""What --all-reduce-backend names (Engine.custom_allreduce): the release's own choice on the GPU (steptime.custom_ar_runs), its
custom all-reduce (a fork's build that has one where the release has none: AMD's ROCm/vllm images), or NCCL (RCCL on
ROCm) for every all-reduce (the servers' --disable-custom-all-reduce)."""


def with_all_reduce_backend(e: Engine, name: str | None, where: str = "all_reduce_backend") -> Engine:
    """``e`` with its TP all-reduces as ``name`` says (ALL_REDUCE_BACKENDS; None, "" or "default": as the release's code decides);
    an unknown name is refused in one line with the closest ones."""
    accepted = "default, custom (the engine's custom all-reduce) or nccl (NCCL or RCCL for every all-reduce; rccl is the same)"
    key = _backend_key(name, ALL_REDUCE_BACKENDS, "all-reduce backend", where, accepted)
    on = ALL_REDUCE_BACKENDS[key]
    return e if on is None else replace(e, custom_allreduce=on)


CUDAGRAPH_MODES = ("default", "piecewise", "full_and_piecewise", "full_decode_only")
"""What --cudagraph-mode names (vLLM's compilation_config cudagraph_mode, from 0.10.2): the release's own, its piecewise
graphs for every step (0.10's default) or full graphs for decode steps beside them (0.11's), in which prompt steps replay
graphs; or FULL_DECODE_ONLY, full graphs for decode-only steps and none for a step that carries prompt tokens."""


def with_cudagraph_mode(e: Engine, mode: str | None, where: str = "cudagraph_mode") -> Engine:
    """``e`` with vLLM's cudagraph_mode ``mode`` (CUDAGRAPH_MODES; None, "" or "default": the release's own): under
    FULL_DECODE_ONLY a step that carries prompt tokens runs without CUDA graphs ("Mixed prefill-decode batches are run
    without cudagraphs", vllm/config/compilation.py CUDAGraphMode, read in 0.10.2; Engine.prefill_graphs False), the
    others leave the release's graphs as they are. NONE and FULL are not modelled: refused in one line, as is the mode
    with another engine or before 0.10.2."""
    key = _backend_key(
        mode,
        CUDAGRAPH_MODES,
        "cudagraph mode",
        where,
        "default, piecewise, full_and_piecewise or full_decode_only (NONE and FULL are not modelled)",
    )
    if key == "default":
        return e
    if e.name != "vllm" or e.older_than(0, 10):
        raise KvcalcError(
            f"a cudagraph mode with {e.title}: it is vLLM's compilation_config cudagraph_mode, read from 0.10.2 on",
            where,
            "default, or a vLLM engine from 0.10 (vllm@0.10, vllm@0.11)",
        )
    return replace(e, prefill_graphs=False) if key == "full_decode_only" else e


def with_attention_backend(e: Engine, backend: str | None, where: str = "attention_backend") -> Engine:
    """``e`` running the decode attention kernel ``backend`` names (None, "" or "default": the release's
    own). Only SGLang's Triton backend, in the releases whose splits the step model follows
    (TRITON_RECORDS), is priced; anything else is refused in one line."""
    key = attention_backend_name(backend, where)
    if key == "default":
        return e
    if e.name != "sglang":
        raise KvcalcError(
            f"attention backend triton with {e.title}: kvcalc prices SGLang's Triton decode kernel only",
            where,
            "default, or triton with an SGLang engine (sglang, sglang@0.5.7)",
        )
    if e.key not in TRITON_RECORDS:
        fixed = (
            " (this release's MLA default, a fixed count of splits, is priced without the flag)"
            if any(e.triton_mla_splits)
            else ""
        )
        raise KvcalcError(
            f"attention backend triton with {e.title}: kvcalc prices the Triton decode kernel of SGLang 0.4.4.post4 "
            "to 0.5.9, which size its KV splits by the batch (earlier releases launch a fixed count; by 0.5.12 MLA's "
            "cap follows the GPU)",
            where,
            f"default{fixed}, or a release from 0.4.4.post4 to 0.5.9 (sglang@0.4.5.post3, sglang@0.5.7)",
        )
    return replace(e, attention_backend="triton")


SGLANG_AITER_MLA_HEADS = (16, 128)
"""Heads a GPU holds (the config's num_key_value_heads over TP, at least 1; MLA checkpoints set it to their query
heads, as DeepSeek-V3's 128, Kimi-K2's 64 and GLM-4.7-Flash's 20) at which SGLang decodes an MLA model on
an AMD GPU with AITER's kernel; at any other count it takes its Triton backend (model_runner.py from 0.4.7,
server_args.py from 0.5.6, arg_groups/model_override_base.py from 0.5.19: "current aiter only support head
number 16 or 128"; read in 0.4.7, 0.4.7.post1, 0.5.2, 0.5.3, 0.5.6, 0.5.10, 0.5.14 and 0.5.19)."""
SGLANG_BEFORE_FA3_MLA = frozenset(
    {
        "sglang@0.3",
        "sglang@0.3.6",
        "sglang@0.4.0",
        "sglang@0.4.1",
        "sglang@0.4.1.post7",
        "sglang@0.4.2.post2",
        "sglang@0.4.4.post1",
        "sglang@0.4.4.post4",
    }
)
"""SGLang records before 0.4.5.post1, which decode MLA with Triton on Hopper too (no FlashAttention 3 MLA default;
SGLANG_0451)."""
SGLANG_BEFORE_0_4_7 = SGLANG_BEFORE_FA3_MLA | {"sglang@0.4.5.post1", "sglang@0.4.5.post3", "sglang@0.4"}
"""SGLang records before 0.4.7, whose MLA defaults had neither FlashInfer on compute capability 10 nor an AITER
backend on AMD GPUs, where Triton was the only one (model_runner.py, read in 0.4.0, 0.4.4.post3, 0.4.5.post3 and
0.4.6.post5; 0.4.7 brought both, is_sm100_supported and the AITER head check, read alike in 0.4.7 and 0.4.7.post1;
the sglang@0.4.7 record was taken to be without them until 2026-12-06)."""


def triton_default_note(e: Engine, model: ModelSpec, gpu: GPUSpec, tp: int | None = None) -> str | None:
    """A warning where a release, given no attention backend, decodes the MLA model ``model`` on ``gpu`` (at
    ``tp``, where it is known) with a Triton kernel whose time the step model does not price unasked. None elsewhere.

    SGLang: on NVIDIA GPUs other than Hopper (FlashAttention 3 there from 0.4.5.post1) and, from 0.4.7,
    other than compute capability 10 (FlashInfer there), by model_executor/model_runner.py's defaults (read in
    0.4.4.post3, 0.4.5, 0.4.5.post1, 0.4.5.post3, 0.4.7, 0.4.7.post1, 0.5.2 and 0.5.3; server_args.py from 0.5.6, read in 0.5.6); on AMD
    GPUs before 0.4.7 (SGLANG_BEFORE_0_4_7), and after it where a GPU holds other than 16 or 128 heads
    (SGLANG_AITER_MLA_HEADS).
    vLLM (releases that cache MLA's latent): its Triton MLA backend, 4 KV splits a request
    (v1/attention/backends/mla/triton_mla.py, num_kv_splits = 4, read in 0.11.0; attention/backends/triton_mla.py
    in 0.7.3), where no other MLA backend
    runs: every NVIDIA GPU under V0 (0.7.x: platforms/cuda.py returns TritonMLABackend for any MLA model, read in
    0.7.3), and under V1 NVIDIA GPUs other than Hopper (FlashMLA) and compute capability 10 (CUTLASS MLA from 0.10;
    platforms/cuda.py, read in 0.11.0); AMD GPUs under V0, and under V1 unless AITER is turned on
    (platforms/rocm.py: ROCM_AITER_MLA only under VLLM_ROCM_USE_AITER, off by default; read in 0.11.0)."""
    if e.attention_backend or model.mla is None or model.has_sparse_mla:
        return None
    if e.name == "sglang" and triton_mla_fixed_splits(e, model, gpu) is not None:
        return None  # priced
    if e.name == "vllm":
        return _vllm_triton_mla_note(e, model, gpu)
    if e.name != "sglang":
        return None
    if gpu.vendor == "AMD":
        return _sglang_hip_note(e, model, gpu, tp)
    if gpu.vendor != "NVIDIA":
        return None
    fa3, flashinfer = e.key not in SGLANG_BEFORE_FA3_MLA, e.key not in SGLANG_BEFORE_0_4_7
    if (fa3 and gpu.name in HOPPER_GPUS) or (flashinfer and gpu.name in SM100):
        return None
    said = f"{e.label} decodes an MLA model on {gpu.name} with its Triton backend unless told otherwise; these figures are the default kernels'"
    if gpu.name in TRITON_GPUS and e.key in TRITON_RECORDS:
        return said + " (pass --attention-backend triton to price the Triton kernel's floor)"
    return said + f" (kvcalc prices that kernel for SGLang 0.4.4.post4 to 0.5.9 on {TRITON_GPU_WORDS} only)"


def _sglang_hip_note(e: Engine, model: ModelSpec, gpu: GPUSpec, tp: int | None) -> str | None:
    """SGLang's MLA decode backend on an AMD GPU, where it is Triton's (triton_default_note)."""
    tail = f"; these figures are the default kernels' (kvcalc prices that kernel on {TRITON_GPU_WORDS} only)"
    if e.triton_mla_splits[0] and not e.triton_mla_splits[1]:
        # (0.4.1 to 0.4.2.post1: priced on Hopper, not on ROCm, whose tile changed within them)
        tail = (
            "; these figures are the default kernels' (kvcalc prices this release's fixed-split launch on Hopper, not its "
            "ROCm launch of 0.4.1 to 0.4.2.post1, 32-token tiles to 0.4.1.post3 and 16 from 0.4.1.post4)"
        )
    if e.key in SGLANG_BEFORE_0_4_7:
        return f"{e.label} decodes an MLA model on {gpu.name} with its Triton backend, its only MLA backend on AMD GPUs" + tail
    heads = model.mla.num_attention_heads if model.mla is not None else 1
    aiter = [t for t in (1, 2, 4, 8, 16) if max(heads // t, 1) in SGLANG_AITER_MLA_HEADS]
    if tp is not None and max(heads // tp, 1) in SGLANG_AITER_MLA_HEADS:
        return None
    where = f"at TP {', '.join(map(str, aiter))}" if aiter else "at no TP size"
    return (
        f"{e.label} decodes {model.name} on {gpu.name} with AITER's MLA kernel only where a GPU holds 16 or 128 of its "
        f"{heads} heads ({where}), else with its Triton backend" + (f", as at TP {tp}" if tp is not None else "") + tail
    )


def _vllm_triton_mla_note(e: Engine, model: ModelSpec, gpu: GPUSpec) -> str | None:
    """vLLM's MLA decode backend, where it is the Triton one (triton_default_note)."""
    if e.mla_per_head(model):
        return None  # MLA cached as per-head K and V (0.7.0 and before; 0.7.1-0.7.2 off fp8): no MLA kernel
    tail = (
        "; these figures are the default kernels' (kvcalc does not price vLLM's Triton MLA kernel, which splits each "
        "request's context into 4 parts whatever the batch)"
    )
    v0 = e.older_than(0, 8)  # V0: Triton MLA on every GPU, no AITER (platforms/cuda.py and rocm.py, 0.7.3)
    if gpu.vendor == "AMD":
        if v0 and gpu.name in V0_TRITON_MLA_GPUS:
            return None  # priced: triton_mla_fixed_splits
        aiter = "" if v0 else " unless AITER is turned on (VLLM_ROCM_USE_AITER=1)"
        return f"{e.label} decodes an MLA model on {gpu.name} with its Triton MLA backend{aiter}" + tail
    if gpu.vendor != "NVIDIA":
        return None
    if (not v0 and gpu.name in HOPPER_GPUS) or (gpu.name in SM100 and e.dense_mla not in ("none", "flashmla")):
        return None
    return f"{e.label} decodes an MLA model on {gpu.name} with its Triton MLA backend" + tail


MlaKernel = Literal["default", "sglang", "triton"]
"""Whose measured MLA decode call a deployment's MLA layers take (GPUSpec.mla): vLLM's module ('default'), SGLang's
own call ('sglang') or none ('triton': SGLang's Triton backend, priced apart by the step model)."""


def mla_kernel(e: Engine | None, gpu: GPUSpec, model: ModelSpec) -> MlaKernel:
    """Which measured MLA decode call ``e`` runs for ``model`` on ``gpu``: 'triton' where SGLang's Triton backend is
    asked for (Engine.attention_backend); 'sglang', SGLang's own call, which AIConfigurator's SGLang 0.5.6.post2, 0.5.9,
    0.5.10 and 0.5.14 tables time alone (GPUSpec.mla's sglang_latency_us), where a release runs it by default:

    - on Hopper, FlashAttention 3, from 0.4.5.post1 (model_runner.py's, then server_args.py's and
      arg_groups/model_override_base.py's "MLA architecture" branch, is_hopper_with_cuda_12_3; read in 0.4.5.post1,
      0.4.5.post2, 0.4.6.post5, 0.4.7, 0.4.7.post1, 0.5.2, 0.5.5, 0.5.6, 0.5.9, 0.5.14, 0.5.16, 0.5.17, 0.5.19 and 0.5.23,
      none overriding it for a DeepSeek model; 0.5.6 to 0.5.14 only until 2026-12-06);
    - on compute capability 10, trtllm_mla for a DeepseekV3ForCausalLM model (DeepSeek-V3, R1 and V3.1, Kimi-K2) from
      0.5.4 ("Use trtllm_mla as attention backend on sm100 for DeepseekV3ForCausalLM", server_args.py, then
      arg_groups/model_overrides/deepseek_v2.py; read in every wheel from 0.5.3, which lacks it, to 0.5.19 and 0.5.23).
      Another MLA model there runs FlashInfer's MLA (the default branch), whose measured call is vLLM's module on the
      B200 (0.5.6 to 0.5.14 took SGLang's for every MLA model until 2026-12-06).

    'default' (vLLM's measured module) otherwise: vLLM, earlier SGLang releases, other GPUs (whose specs have no
    SGLang figure), or no engine named."""
    if e is None or e.name != "sglang":
        return "default"
    if e.attention_backend == "triton":
        return "triton"
    if gpu.name in HOPPER_GPUS:
        return "sglang" if e.key not in SGLANG_BEFORE_FA3_MLA else "default"
    if gpu.name in SM100 and AR_FUSION_CLASSES.get(model.architecture) == "DeepseekV3ForCausalLM":
        return "sglang" if not e.older_than(0, 5, 4) else "default"
    return "default"


AR_FUSION_CLASSES = {
    "deepseek_v3": "DeepseekV3ForCausalLM",
    "kimi_k2": "DeepseekV3ForCausalLM",
    "deepseek_v32": "DeepseekV32ForCausalLM",
    "gpt_oss": "GptOssForCausalLM",
    "glm4_moe": "Glm4MoeForCausalLM",
    "glm4_moe_lite": "Glm4MoeLiteForCausalLM",
    "glm_moe_dsa": "GlmMoeDsaForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
    "qwen3_vl_moe_text": "Qwen3VLMoeForConditionalGeneration",
    "qwen3_next": "Qwen3NextForCausalLM",
    "qwen3_5_moe_text": "Qwen3_5MoeForConditionalGeneration",
    "qwen3_5_text": "Qwen3_5ForConditionalGeneration",
}
"""The model classes (config.json architectures[0]) of the catalog's model types that SGLang's lists below name:
Kimi-K2's checkpoints run DeepseekV3ForCausalLM."""
_AR_057 = frozenset({"DeepseekV3ForCausalLM", "GptOssForCausalLM", "Glm4MoeForCausalLM", "Qwen3MoeForCausalLM"})
_AR_059 = _AR_057 | {"Glm4MoeLiteForCausalLM", "KimiK25ForConditionalGeneration"}
_AR_0512 = _AR_059 | {
    "DeepseekV32ForCausalLM",
    "GlmMoeDsaForCausalLM",
    "Qwen3NextForCausalLM",
    "Qwen3_5MoeForConditionalGeneration",
    "Qwen3_5ForConditionalGeneration",
    "InternS2PreviewForConditionalGeneration",
}
_AR_0514 = _AR_0512 | {"MistralLarge3ForCausalLM", "Qwen3VLMoeForConditionalGeneration", "NemotronHForCausalLM"}
SGLANG_AR_FUSION: dict[str, tuple[frozenset[str], str]] = {
    "sglang@0.5.2": (frozenset({"GptOssForCausalLM"}), "sm100"),
    "sglang@0.5.3": (frozenset({"GptOssForCausalLM"}), "sm100"),
    "sglang@0.5.4": (frozenset({"DeepseekV3ForCausalLM", "GptOssForCausalLM"}), "sm100"),
    "sglang@0.5.5": (frozenset({"DeepseekV3ForCausalLM", "GptOssForCausalLM"}), "sm100"),
    "sglang@0.5.6": (frozenset({"DeepseekV3ForCausalLM", "GptOssForCausalLM"}), "sm100, one node"),
    "sglang@0.5.8": (_AR_057 | {"Glm4MoeLiteForCausalLM"}, "sm90, one node, not H20"),
    "sglang@0.5.9": (_AR_059, "sm90, one node, not H20"),
    "sglang@0.5.12": (_AR_0512, "sm90, one node, not H20"),
    **dict.fromkeys(
        ("sglang@0.5.14", "sglang@0.5.16", "sglang@0.5.17", "sglang@0.5.18", "sglang@0.5.19", "sglang@0.5"),
        (_AR_0514, "sm90, one node or sm100"),
    ),
}
"""The SGLang records that turn on FlashInfer's all-reduce fusion by themselves (server_args.py, then from 0.5.15
arg_groups/overrides.py _flashinfer_allreduce_fusion_auto_enable), for the model classes named, at TP over 1, without
DP attention and without an all-to-all MoE backend: on compute capability 10 ('sm100': B200, GB200) for GPT-OSS from
0.5.2 (read in 0.5.2 and 0.5.3) and DeepSeek-V3 from 0.5.4 (0.5.4, 0.5.5; one node from 0.5.6); on Hopper too from 0.5.7
('sm90', one node, not the H20: read in 0.5.7, 0.5.8 (which adds GLM-4.7-Flash's class, kept for the record's two
releases), 0.5.9, 0.5.10 and 0.5.12 (whose classes the record of 0.5.10 to 0.5.12 takes)); from 0.5.13 on any number of
nodes on compute capability 10 and the H20 again (read in 0.5.14, 0.5.16, 0.5.17, 0.5.18, 0.5.19 and 0.5.23, whose
further classes are not in the catalog)."""

SGLANG_AR_FUSION_MAX_TOKENS = 2048
"""The largest step, in tokens, whose all-reduces SGLang fuses with the norms after them: FUSE_ALLREDUCE_MAX_BATCH_SIZE,
2,048 in every release read from 0.5.2 to 0.5.19 (layers/communicator.py apply_flashinfer_allreduce_fusion, the step's
input_ids) and 0.5.23 (layers/layer_boundary/residual/add_norm.py); a larger step runs the all-reduce and the norms
apart (steptime.StepModel.ar_fused_norms)."""


def allreduce_norm_fusion(e: Engine | None, model: ModelSpec, gpu: str, tp: int, dp: int, nodes: int) -> bool:
    """Whether ``e`` fuses each TP all-reduce with the residual add and RMSNorm after it (FlashInfer's
    trtllm_allreduce_fusion: layers/communicator.py, the layer's post-attention norm and the next layer's input norm
    applied inside the all-reduce, for batches of at most 2,048 tokens, FUSE_ALLREDUCE_MAX_BATCH_SIZE; read in 0.5.9),
    as SGLANG_AR_FUSION says the release does by itself for ``model`` on ``gpu``; False for other engines (vLLM's fusion
    pass is off by default: config/compilation.py enable_fi_allreduce_fusion, 0.11.0) or where the release does not."""
    if e is None or e.name != "sglang" or tp < 2 or dp > 1:
        return False
    rule = SGLANG_AR_FUSION.get(e.key)
    if rule is None or AR_FUSION_CLASSES.get(model.architecture) not in rule[0]:
        return False
    where = rule[1]
    if gpu in SM100:
        return where in ("sm100", "sm90, one node or sm100") or nodes == 1
    if gpu in HOPPER_GPUS and where.startswith("sm90"):
        return nodes == 1 and (gpu != "h20" or where == "sm90, one node or sm100")
    return False


MoeRunner = Literal[
    "default", "triton_mxfp4", "flashinfer_trtllm", "flashinfer_trtllm_bf16", "flashinfer_trtllm_fp4", "cutlass_fp4"
]
"""The fused-MoE kernel a deployment's routed experts run on, where it is not the one kvcalc's default figures measure
(vLLM's Triton fused-MoE: StepConstants.moe_latency_s, MOE_ETA)."""

_FI_MOE_056 = frozenset({"deepseek_v3", "kimi_k2", "qwen3_moe", "qwen3_vl_moe_text", "qwen3_next"})
_FI_MOE_059 = _FI_MOE_056 | {"qwen3_5_moe_text", "glm_moe_dsa"}
_FI_MOE_0514 = _FI_MOE_059 | {"deepseek_v32"}
SGLANG_FLASHINFER_MOE: dict[str, frozenset[str]] = {
    "sglang@0.5.5": frozenset({"deepseek_v3", "kimi_k2"}),
    "sglang@0.5.6": _FI_MOE_056,
    "sglang@0.5.8": _FI_MOE_056,
    "sglang@0.5.9": _FI_MOE_059,
    "sglang@0.5.12": _FI_MOE_059,
    **dict.fromkeys(
        ("sglang@0.5.14", "sglang@0.5.16", "sglang@0.5.17", "sglang@0.5.18", "sglang@0.5.19", "sglang@0.5"), _FI_MOE_0514
    ),
}
"""The SGLang records that run a model's fp8 routed experts with FlashInfer's TensorRT-LLM block-scale kernel on
compute capability 10 (the flashinfer_trtllm MoE runner) by themselves, without an all-to-all backend, and the catalog's
model types they do it for (moe_runner). The release sets it where --moe-runner-backend is left at auto, from the
checkpoint's class and its quant_method (fp8 for these models' fp8 checkpoints):

- DeepseekV3ForCausalLM (DeepSeek-V3, R1, V3.1; Kimi-K2's checkpoints) from 0.5.4.post1 (server_args.py; 0.5.4 only
  for modelopt_fp4; read in 0.5.4, 0.5.4.post1, 0.5.4.post2, 0.5.4.post3, 0.5.5, 0.5.5.post1 and 0.5.5.post3);
- Qwen3MoeForCausalLM, Qwen3VLMoeForConditionalGeneration and Qwen3NextForCausalLM from 0.5.6 (read in 0.5.6, 0.5.7
  and 0.5.8), Qwen3_5MoeForConditionalGeneration from 0.5.9, the first release read that serves it;
- GlmMoeDsaForCausalLM (GLM-5) from 0.5.9, in DeepSeek's list (read in 0.5.9, 0.5.10, 0.5.11 and 0.5.12);
- DeepseekV32ForCausalLM (DeepSeek-V3.2) from 0.5.12 (0.5.10 and 0.5.11 lack it: the sglang@0.5.12 record, 0.5.10
  to 0.5.12, follows those two);
- the same in every release read after, where 0.5.15 moved the choice into arg_groups/overrides.py
  (_deepseek_moe_quant_resolution, _qwen3_moe_family_overrides) and 0.5.19 the Qwen branch into
  arg_groups/model_overrides/qwen3_moe.py (read in 0.5.14, 0.5.16, 0.5.17, 0.5.18, 0.5.19 and 0.5.23).

From 0.5.9 the Qwen branches take 16-bit experts too (quantization None), as from 0.5.14 DeepSeek's and from 0.5.16
GLM-4.5/4.6's (arg_groups/overrides.py _glm4_moe_overrides): SGLANG_FLASHINFER_MOE_BF16, priced at that kernel's own
16-bit figures. GLM-4.5/4.6's fp8, GLM-4.7-Flash's and MiniMax-M2's experts stay on
the default (Triton) runner in every release read."""


_V_MOE_GROUPED = frozenset({"deepseek_v3", "kimi_k2", "deepseek_v32", "glm_moe_dsa", "glm4_moe"})
_V_MOE_SOFTMAX = frozenset({"qwen3_moe", "qwen3_vl_moe_text"})
_V_MOE_015 = _V_MOE_GROUPED | _V_MOE_SOFTMAX | {"minimax_m2"}
VLLM_FLASHINFER_MOE: dict[str, frozenset[str]] = {
    "vllm@0.15": _V_MOE_015,
    "vllm@0.17": _V_MOE_GROUPED | _V_MOE_SOFTMAX,
    "vllm@0.18": _V_MOE_GROUPED | _V_MOE_SOFTMAX,
    "vllm@0.20": _V_MOE_015,
    "vllm@0.21": _V_MOE_015,
    "vllm@0.33": _V_MOE_015,
}
"""The vLLM records that run a block-fp8 checkpoint's routed experts (128 x 128 weight blocks, activations scaled per
128) with FlashInfer's TensorRT-LLM kernel on compute capability 10 by default, without expert parallelism, and the
catalog's model types they do it for (moe_runner). From 0.15.0 the fp8 MoE oracle takes the first backend in its list
that supports the layer, FLASHINFER_TRTLLM second after ROCm's AITER (model_executor/layers/fused_moe/oracle/fp8.py
select_fp8_moe_backend; from 0.16.0 _get_priority_backends, which moves Triton first on Hopper only), where 0.14.0
took it only with VLLM_USE_FLASHINFER_MOE_FP8 set. The kernel supports block fp8 for the routers vLLM labels
DeepSeekV3 (a grouped top-k with sigmoid scores: DeepSeek-V3, R1, V3.2, Kimi-K2 and GLM-5 in models/deepseek_v2.py,
GLM-4.5/4.6 in models/glm4_moe.py; DeepSeek-V2's softmax groups are not) and Renormalize (a softmax top-k: Qwen3-MoE and
Qwen3-VL-MoE's Qwen3MoeSparseMoeBlock), in every release read from 0.15.0 to 0.34.0 (fused_moe/flashinfer_trtllm_moe.py
_supports_routing_method, later experts/trtllm_fp8_moe.py; 0.18 and 0.19 run Qwen3's through its routed variant, the
monolithic kernel then refusing that router). A posted B200 deployment logs it (crinex/b200_glm_poc FINDINGS.md: GLM-5.2
FP8 at TP 8 without EP under vLLM 0.28.0, "Using FLASHINFER_TRTLLM Fp8 MoE backend out of potential backends").
MiniMax-M2's top-k with a score bias only in 0.15 and 0.16 (labelled as the softmax router's) and from 0.19 (a
MiniMax2 router from 0.21): the vllm@0.18 record (0.18 to 0.19) follows 0.18.
Read in 0.14.0, 0.14.1, 0.15.0, 0.16.0, 0.17.0, 0.18.0, 0.19.0, 0.20.0, 0.21.0, 0.22.1 and 0.34.0 (0.34.0's wheel no
longer requires flashinfer-cubin: without it, or nvcc to build the kernel, FlashInfer counts as absent and DeepSeek's
experts fall to DeepGEMM or Triton; kvcalc takes the kernel there, as vLLM's images ship FlashInfer whole). Per-tensor
fp8 experts (online quantization, --weight-dtype fp8 on a 16-bit checkpoint) and 16-bit ones (FlashInfer's kernel
from 0.20 for some) take the default runner's figures: no table kvcalc reads times those."""


_FI_BF16_059 = frozenset({"qwen3_moe", "qwen3_vl_moe_text", "qwen3_next", "qwen3_5_moe_text"})
_FI_BF16_0514 = _FI_BF16_059 | {"deepseek_v3", "kimi_k2", "deepseek_v32", "glm_moe_dsa"}
SGLANG_FLASHINFER_MOE_BF16: dict[str, frozenset[str]] = {
    "sglang@0.5.9": _FI_BF16_059,
    "sglang@0.5.12": _FI_BF16_059,
    "sglang@0.5.14": _FI_BF16_0514,
    **dict.fromkeys(
        ("sglang@0.5.16", "sglang@0.5.17", "sglang@0.5.18", "sglang@0.5.19", "sglang@0.5"), _FI_BF16_0514 | {"glm4_moe"}
    ),
}
"""The SGLang records that run a model's 16-bit routed experts with FlashInfer's TensorRT-LLM kernel on compute
capability 10 (the same flashinfer_trtllm runner, its 16-bit kernel) by themselves, without an all-to-all backend, and
the catalog's model types they do it for (moe_runner): the Qwen branches take an unquantized checkpoint too
(``quantization is None``) from 0.5.9 (server_args.py, read in 0.5.9, 0.5.10, 0.5.11 and 0.5.12); DeepSeek's list
(DeepSeek-V3's class, V3.2's, GLM-5's) from 0.5.14 ("or self.quantization is None", server_args.py; a DeepseekV3ForCausalLM
checkpoint without a quantization config keeps None unless its safetensors hold fp8 weights); GLM-4.5/4.6 from 0.5.16
(arg_groups/overrides.py _glm4_moe_overrides: quantization in (modelopt_fp4, None)); read in 0.5.14, 0.5.16, 0.5.17,
0.5.18, 0.5.19 and 0.5.23. GLM-4.7-Flash's and MiniMax-M2's stay on Triton."""


_FI_FP4 = frozenset({"deepseek_v3", "kimi_k2", "qwen3_moe", "glm4_moe"})
SGLANG_FLASHINFER_MOE_FP4: dict[str, frozenset[str]] = dict.fromkeys(
    ("sglang@0.5.12", "sglang@0.5.14", "sglang@0.5.16", "sglang@0.5.17", "sglang@0.5.18", "sglang@0.5.19", "sglang@0.5"),
    _FI_FP4,
)
"""The SGLang records that run a ModelOpt NVFP4 checkpoint's routed experts with the TensorRT-LLM-gen fp4 kernel
(FlashInfer's trtllm_fp4_block_scale_moe) on compute capability 10 by themselves, and the catalog's model types they do
it for (moe_runner): from 0.5.10, whose ModelConfig rewrites a config.json "modelopt" quant_method to modelopt_fp4
(configs/model_config.py _parse_quant_hf_config), so that the DeepSeek (DeepSeek-V3/R1 and Kimi-K2's class), Qwen3-MoE
and GLM-4.5/4.6 hooks set the flashinfer_trtllm runner (server_args.py; from 0.5.16 arg_groups/overrides.py); read in
0.5.10, 0.5.12, 0.5.14, 0.5.16, 0.5.17, 0.5.18, 0.5.19 and 0.5.23. 0.5.3 to 0.5.9 run them with SGLang's CUTLASS
kernel (layers/quantization/modelopt_quant.py cutlass_moe_fp4, the method's fall-through) unless the server is told
(--enable-flashinfer-trtllm-moe, --moe-runner-backend flashinfer_trtllm: Engine.moe_backend). Other models keep the
CUTLASS figures. A checkpoint that gives its quantization in hf_quant_config.json alone, without a quantization_config in
config.json, reaches the kernel earlier for DeepSeek's class (from 0.5.4.post1, whose hook then sets fp8 and ModelConfig
modelopt_fp4; Qwen3-MoE from 0.5.8, read in the same wheels): kvcalc takes the config.json layout."""


_V_FP4 = _V_MOE_GROUPED | _V_MOE_SOFTMAX
VLLM_FLASHINFER_MOE_FP4: dict[str, frozenset[str]] = dict.fromkeys(VLLM_FLASHINFER_MOE, _V_FP4)
"""The vLLM records that run a ModelOpt NVFP4 checkpoint's routed experts with FlashInfer's TensorRT-LLM-gen fp4 kernel
(monolithic, its routing inside) on compute capability 10 by default without EP or EPLB, and the catalog's model types
they do it for (moe_runner): from 0.15.0 the NVFP4 MoE oracle takes the first supported backend of a list that starts
with FLASHINFER_TRTLLM (model_executor/layers/fused_moe/oracle/nvfp4.py), which takes the routers vLLM labels
DeepSeekV3 and Renormalize (experts/trtllm_nvfp4_moe.py _supports_routing_method; earlier
quantization/utils/flashinfer_fp4_moe.py); read in 0.14.0, 0.15.0 to 0.22.1, 0.24.0 and 0.34.0. 0.14 runs vLLM's
CUTLASS kernel (CutlassExpertsFp4) unless VLLM_USE_FLASHINFER_MOE_FP4 is set. A posted vLLM 0.15.1 log logs that
order off compute capability 10, and the oracle passing over the TensorRT-LLM kernel there: "Using 'VLLM_CUTLASS'
NvFp4 MoE backend out of potential backends: ['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS',
'VLLM_CUTLASS', 'MARLIN']" (GLM-4.7-NVFP4 on four RTX PRO 6000s, SM120; AlexGS74/glm47-nvfp4-sm120
docs/vllm-sm120-nvfp4-working-state.md). No posted B200 log of the choice was found."""


_V_BF16 = _V_MOE_GROUPED | _V_MOE_SOFTMAX | {"qwen3_next", "qwen3_5_moe_text", "mixtral"}
VLLM_FLASHINFER_MOE_BF16: dict[str, frozenset[str]] = dict.fromkeys(("vllm@0.20", "vllm@0.21", "vllm@0.33"), _V_BF16)
"""The vLLM records that run 16-bit routed experts with FlashInfer's TensorRT-LLM 16-bit kernel on compute capability
10 by default, without expert parallelism, and the catalog's model types they do it for (moe_runner). From 0.20.0 the
unquantized MoE oracle takes the first of FLASHINFER_TRTLLM, FLASHINFER_CUTLASS, TRITON that supports the layer
(model_executor/layers/fused_moe/oracle/unquantized.py _get_priority_backends; 0.14.0 to 0.19.0 took FlashInfer only with
VLLM_USE_FLASHINFER_MOE_FP16 set), and the TensorRT-LLM 16-bit kernel (experts/trtllm_bf16_moe.py) takes SiLU experts
under the routers vLLM labels DeepSeekV3 (grouped top-k over sigmoid scores: DeepSeek-V3's class, V3.2's, GLM-5's,
GLM-4.5/4.6's) and Renormalize (a softmax top-k: Qwen3-MoE, Qwen3-VL-MoE, Qwen3-Next, Qwen3.5-MoE, Mixtral) on compute
capability 10 only. Read in 0.14.0 to 0.22.1, 0.24.0 and 0.34.0; AIConfigurator's vLLM 0.24 collector, which builds the
layer and records the experts class vLLM chose, logs that kernel for every B200 shape of these routers. On Hopper
0.20.0 to 0.22.1 pick FlashInfer's CUTLASS kernel instead, which 0.24.0 moves behind Triton ("FlashInfer unquantized
MoE kernels are slower than Triton"); no table times it, and kvcalc keeps Triton's figures there. 0.34.0's wheel no
longer requires flashinfer-cubin, without which (or nvcc) FlashInfer counts as absent and Triton runs."""


def moe_runner(
    e: Engine | None,
    model: ModelSpec,
    gpu: GPUSpec,
    ep: int,
    fp8_experts: bool,
    bf16_experts: bool = False,
    fp4_experts: bool = False,
) -> MoeRunner:
    """The fused-MoE kernel ``e`` runs ``model``'s routed experts with on ``gpu`` without expert parallelism:

    'triton_mxfp4': MXFP4 experts on OpenAI's Triton kernel (triton_kernels), as vLLM from 0.10.1 picks on Hopper
    (vllm/model_executor/layers/quantization/mxfp4.py get_mxfp4_backend, 0.11.0: Marlin below compute capability 9,
    FlashInfer on 10) and SGLang from 0.5 for gpt-oss without EP off SM100 (server_args.py, the 'triton_kernel' MoE
    runner, read in 0.5.0rc0, 0.5.2, 0.5.6 and 0.5.9);

    'flashinfer_trtllm': fp8 experts (``fp8_experts``: stored and multiplied at fp8) on FlashInfer's TensorRT-LLM
    block-scale kernel, where an SGLang record picks it on SM100 for ``model`` (SGLANG_FLASHINFER_MOE), or a vLLM
    record for a checkpoint of ``model`` whose experts are block fp8 (VLLM_FLASHINFER_MOE);

    'flashinfer_trtllm_bf16': 16-bit experts (``bf16_experts``) on FlashInfer's TensorRT-LLM 16-bit kernel, where an
    SGLang record picks that runner on SM100 for ``model`` (SGLANG_FLASHINFER_MOE_BF16) or a vLLM record its
    unquantized oracle's first choice there (VLLM_FLASHINFER_MOE_BF16);

    'flashinfer_trtllm_fp4': NVFP4 experts at the fp4 peak (``fp4_experts``) on the TensorRT-LLM-gen fp4 kernel, where
    a vLLM or SGLang record picks it for ``model`` (VLLM_FLASHINFER_MOE_FP4, SGLANG_FLASHINFER_MOE_FP4) or the
    deployment asked for it (Engine.moe_backend "trtllm", with EP too: its floor holds there, 13-16 us in vLLM 0.24's
    B200 table at EP 2 to 8 and 18-20 in TensorRT-LLM 1.2.0rc5's, balanced routing, 1 to 16 tokens, less the busiest
    rank's expert bytes); 'cutlass_fp4': other NVFP4 experts at the fp4 peak without EP, a CUTLASS grouped-GEMM MoE
    (vLLM 0.14's CutlassExpertsFp4, SGLang's cutlass_moe_fp4 to 0.5.9, TensorRT-LLM's default CUTLASS backend:
    tensorrt_llm/llmapi/llm_args.py MoeConfig.backend, default 'CUTLASS' until an AUTO choice was added), with no
    engine named too. The TensorRT-LLM-gen kernels are built for compute capability 10 alone (SM100);

    'default' otherwise, and with no engine named (which kernel runs is then not known)."""
    sm100 = gpu.name in SM100  # the TensorRT-LLM-gen kernels are built for compute capability 10 alone
    asked = sm100 and e is not None and e.moe_backend == "trtllm"
    if fp4_experts and asked:
        # Asked for, the kernel runs with EP too: SGLang's FlashInferFP4MoE "regardless of EP"
        # (layers/moe/ep_moe/layer.py get_moe_impl_class, 0.5.3), TensorRT-LLM's TRTLLM backend at any EP size.
        return "flashinfer_trtllm_fp4"
    if fp4_experts and ep == 1:
        fi = sm100 and e is not None and model.architecture in flashinfer_moe_models(e, "fp4")
        return "flashinfer_trtllm_fp4" if fi else "cutlass_fp4"
    if asked and ep == 1 and (fp8_experts or bf16_experts):
        # Asked for without EP, fp8 and 16-bit experts take the kernel's measured figures too (its EP floors are not).
        return "flashinfer_trtllm" if fp8_experts else "flashinfer_trtllm_bf16"
    if e is None or ep != 1:
        return "default"
    q = model.quantization
    mxfp4 = q is not None and "experts" in q.roles and q.method == "mxfp4"
    vllm_mxfp4 = e.name == "vllm" and not e.older_than(0, 10)
    sglang_mxfp4 = e.name == "sglang" and not e.older_than(0, 5)
    if mxfp4 and gpu.name in HOPPER_GPUS and (vllm_mxfp4 or sglang_mxfp4):
        return "triton_mxfp4"
    if gpu.name not in SM100:
        return "default"
    # vLLM's oracle takes the kernel for block-scaled fp8 experts only; SGLang's runner for any fp8 experts.
    block = e.name != "vllm" or (q is not None and "experts" in q.roles and q.method == "fp8-block")
    if fp8_experts and block and model.architecture in flashinfer_moe_models(e):
        return "flashinfer_trtllm"
    if bf16_experts and model.architecture in flashinfer_moe_models(e, "bf16"):
        return "flashinfer_trtllm_bf16"
    return "default"


ExpertsFormat = Literal["fp8", "bf16", "fp4"]


def flashinfer_moe_models(e: Engine, experts: ExpertsFormat = "fp8") -> tuple[str, ...]:
    """The catalog's model types whose routed experts stored as ``experts`` (fp8, 16-bit or NVFP4) ``e`` runs on
    FlashInfer's TensorRT-LLM MoE kernel on compute capability 10 without EP by itself (SGLANG_FLASHINFER_MOE,
    VLLM_FLASHINFER_MOE and their 16-bit and NVFP4 tables), in the order kvcalc engines names them; empty where it runs
    them on none."""
    sglang, vllm = {
        "fp8": (SGLANG_FLASHINFER_MOE, VLLM_FLASHINFER_MOE),
        "bf16": (SGLANG_FLASHINFER_MOE_BF16, VLLM_FLASHINFER_MOE_BF16),
        "fp4": (SGLANG_FLASHINFER_MOE_FP4, VLLM_FLASHINFER_MOE_FP4),
    }[experts]
    kinds = sglang.get(e.key) or vllm.get(e.key) or frozenset()
    return tuple(k for k in _FLASHINFER_MOE_WORDS if k in kinds) + tuple(sorted(kinds - _FLASHINFER_MOE_WORDS.keys()))


def engine(name: str | Engine, where: str = "engine") -> Engine:
    """Parse an engine name, with an optional release (or pass a parsed one through)."""
    if isinstance(name, Engine):
        return name
    key = str(name).strip().lower()
    for e in ENGINE_LIST:
        if key in e.aliases or key == e.key:
            return e
    m = _VERSION_RE.match(key)
    if m:
        family, version = m.group(1).replace("tensorrt-llm", "trtllm").replace("tensorrt_llm", "trtllm"), m.group(2)
        v = _version_tuple(version)
        newest = {"vllm": (0, 33), "sglang": (0, 5), "trtllm": (1,)}.get(family)
        if newest is not None and v[: len(newest)] > newest:
            # A release newer than any kvcalc has read: its rules are not known, not assumed.
            raise KvcalcError(
                f"no rules for {family} {version[:20]}: the newest release kvcalc has read is "
                f"{'.'.join(map(str, newest))}{'.x' if family == 'trtllm' else ''}",
                where,
                f"{family} for the newest rules, or an earlier record (kvcalc engines lists them all: "
                f"{', '.join(e.key for e in ENGINE_LIST if e.name == family)})",
            )
        if family == "vllm":
            rec = _vllm_record(v)
            if rec:
                return ENGINES[rec]
        elif family == "sglang" and v >= (0, 5, 20):
            return ENGINES["sglang@0.5"]
        elif family == "sglang" and v >= (0, 5, 10):
            for last in (12, 14, 16, 17, 18, 19):
                if v <= (0, 5, last):
                    return ENGINES[f"sglang@0.5.{last}"]
        elif family == "sglang" and v >= (0, 5, 9):
            return ENGINES["sglang@0.5.9"]
        elif family == "sglang" and v >= (0, 5, 7):
            return ENGINES["sglang@0.5.8"]
        elif family == "sglang" and v >= (0, 5, 6):
            return ENGINES["sglang@0.5.6"]
        elif family == "sglang" and v >= (0, 5, 4):
            # 0.5.4.post1 on takes 0.5.5's MoE runner (moe_runner): "0.5.4" and its rc and dev builds do not.
            return ENGINES["sglang@0.5.5" if v > (0, 5, 4) or "post" in version else "sglang@0.5.4"]
        elif family == "sglang" and v >= (0, 5, 3):
            return ENGINES["sglang@0.5.3"]
        elif family == "sglang" and v >= (0, 5):
            return ENGINES["sglang@0.5.2"]
        elif family == "sglang" and v >= (0, 3):
            return ENGINES[_sglang_record(v, version)]
        elif family == "trtllm" and v >= (1, 0):
            return ENGINES["trtllm@1.2"]
        elif family == "trtllm" and v >= (0, 14):
            return ENGINES["trtllm@0.19"]
        if family == "trtllm":
            # A TensorRT-LLM release before the decoder's buffers kvcalc read (a 0.12 log shows about twice them).
            raise KvcalcError(
                f"no rules for {family} {version[:20]}: kvcalc reads TensorRT-LLM 0.14 to 0.21 on TensorRT engines and 1.x",
                where,
                "trtllm@0.19 (0.14 to 0.21 on TensorRT engines) or trtllm (1.x)",
            )
        raise KvcalcError(f"no rules for {family} {version[:20]}", where, ACCEPTED)
    if key in _CURRENT:
        return _CURRENT[key]
    raise unknown_name("engine", str(name)[:60], sorted({a for e in ENGINE_LIST for a in e.aliases}), where)


# ---- kvcalc engines: what each record does, in words ----------------------------------------

_RULE_WORDS: dict[str, dict[str, str]] = {
    "prompt_blocks": {
        "whole": "all at admission, which waits until they fit",
        "chunk": "chunk by chunk as steps schedule them; admitted when the first chunk fits",
    },
    "budget": {
        "util_of_total": "util x device total, less the measured reserves",
        "fraction_of_free": "util x what is free after weights and reserves",
        "util_of_start_free": "util x the memory free at start-up, less the weights",
        "all": "everything left after the weights",
    },
    "util_rounding": {"ceil": "rounded up", "float": "as a float, truncated", "fraction": "exact, floored"},
    "cudagraph": {
        "estimate": "estimated and subtracted before sizing",
        "after": "captured after sizing, out of the headroom",
        "none": "not counted",
    },
    "window_style": {
        "vllm": "cdiv(min(w - 1 + in flight, S), block) + 1 blocks",
        "window": "min(S, w)",
        "window-1": "min(S, w - 1)",
        "full": "every token (no saving)",
    },
    "in_flight": {
        "concurrent_batches": "(PP + 1) x max_num_batched_tokens",
        "batched_tokens": "max_num_batched_tokens",
        "none": "none",
    },
    "tokens_report": {
        "concurrency-x-length": "int(concurrency x max_model_len)",
        "blocks-per-group": "blocks // groups x block size",
        "blocks": "blocks x block size",
        "pool": "pool // bytes per token",
    },
    "dense_mla": {
        "none": "the record's block",
        "flashmla": "64 on Hopper (FlashMLA)",
        "cutlass": "128 on B200/GB200 (CUTLASS MLA), 64 on Hopper (FlashMLA)",
        "flashinfer": "64 on B200/GB200 at qk_nope 128 (FlashInfer MLA), else 128; 64 on Hopper (FlashMLA)",
        "selector": "32 on B200/GB200 (FlashInfer MLA), 128 where it cannot run; 16 on Hopper (FlashAttention MLA)",
    },
    "pp_split": {
        "before-last": "one each to the stages before the last",
        "last": "all to the last stage",
        "last-n": "one each to the last stages",
        "first-n": "one each to the first stages",
    },
    "mla_storage": {
        "latent": "the latent",
        "latent-256": "the latent, each token's entry padded to 256 bytes on NVIDIA GPUs",
        "expanded": "per-head K and V",
        "padded-heads": "per-head K and V, head size 256",
        "qk-heads": "per-head K and V, V padded to the query-key head size",
    },
    "state_pages": {
        "align": "two pages padded to the attention page (prefix caching)",
        "padded": "one page padded to the attention page",
        "sum": "as it is",
    },
    "batched_tokens_default": {
        "v1-160": "16,384 (>= 160 GiB), 8,192 (>= 70 GiB, not A100), else 2,048",
        "v1": "8,192 (>= 70 GiB, not A100), else 2,048",
        "v1-0.8.5": "8,192 and 1,024 requests (>= 70 GiB, A100 80GB included), else 2,048 and 256",
        "v1-0.8.4": "8,192 and 1,024 requests (a GPU named H100 or H200), else 2,048 and 256",
        "v1-0.8.0": "8,192 (a GPU named H100 or H200), else 2,048; 1,024 requests on every GPU",
        "v0": "max(max_model_len, 2,048); {chunk} with chunked prefill",
        "sglang-0.5.20": "chunked_prefill_size: 2,048 (< 20 GiB), 4,096 (< 60 GiB), 8,192 (< 160 GiB), else 16,384",
        "sglang-0.5": "chunked_prefill_size: 2,048 (< 35 GiB), 4,096 (< 60 GiB), 8,192 (< 160 GiB), else 16,384",
        "sglang-0.4.7.post1": "chunked_prefill_size: 2,048 (< 35 GiB), 8,192 (< 160 GiB), else 16,384",
        "sglang-0.4.7": "chunked_prefill_size: 16,384 (> 180,000 MiB), 2,048 (< 25,000 MiB), else 8,192",
        "sglang-0.4": "chunked_prefill_size: 2,048 (< 25,000 MiB), else 8,192",
        "none": "-",
    },
    "v0_chunking": {
        "off": "off (prompts whole, as steps of their own)",
        "0.5": "on above 32k tokens (CUDA, no sliding window)",
        "0.6": "on above 32k tokens (CUDA, no sliding window, not multimodal)",
        "0.7": "on above 32k tokens (NVIDIA, no sliding window, not multimodal, not MLA)",
        "none": "-",
    },
    "pp_start_check": {
        "stage": "each stage's layers against its own memory",
        "whole": "the whole model's layers against the least memory of any stage",
    },
    "vision_profile": {
        "each": "modelled (Qwen2-VL, Qwen2.5-VL): q and k rotated one at a time in float32",
        "concat": "modelled (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) as 0.11.0: q and k joined, then rotated in float32",
        "fused": "modelled (Qwen2.5-VL, Qwen3-VL) as 0.15.0: q and k rotated in 16 bits, a compiled SiLU-and-mul",
        "fused-ir": "modelled (Qwen2.5-VL, Qwen3-VL) as 0.21.0 and 0.33.0: as 0.15, the norm's residual upcast too",
        "none": "not modelled",
    },
}
_RULE_LABELS = {
    "budget": "budget",
    "default_util": "default util",
    "util_rounding": "util x total",
    "cudagraph": "CUDA graphs",
    "block_size": "block size",
    "window_style": "sliding layer holds",
    "in_flight": "tokens in flight",
    "batched_tokens_default": "max_num_batched_tokens",
    "v0_chunking": "V0 chunked prefill default",
    "vision_profile": "vision encoder profile",
    "encoder_cache_padded": "encoder cache padded to the budget",
    "video_frames_cap": "Qwen2-VL dummy video's most frames",
    "video_frames_less_image": "dummy video fits max_model_len less an image",
    "video_tokens_formatted": "Qwen3-VL video counted formatted",
    "pad_groups": "hybrid groups padded",
    "chunked_as_full": "chunked layers as full",
    "null_block": "null block",
    "tokens_report": "tokens logged",
    "mla_storage": "MLA cached as",
    "mla_fp8_only": "MLA off for a checkpoint quantized other than in fp8",
    "pp_split": "pipeline layers left over",
    "dense_mla": "dense MLA's block (NVIDIA)",
    "state_pages": "recurrent state",
    "pp_start_check": "start check at PP > 1",
    "auto_max_model_len": "--max-model-len auto",
    "kv_cache_memory_flag": "--kv-cache-memory-bytes",
    "sparse_mla_auto_fp8": "sparse MLA's cache under kv_cache_dtype auto",
    "sparse_mla_fp8_by_backend": "sparse MLA's fp8 cache",
    "sparse_mla_block": "sparse MLA's block (NVIDIA)",
    "sparse_mla_auto_kv": "sparse MLA's cache under auto, by GPU",
    "cudagraph_estimate_rocm": "CUDA-graph estimate on ROCm",
    "nvls_mib_per_rank": "NCCL NVLS buffers (TP > 2, NVSwitch Hopper+)",
    "vlm_fraction": "memory fraction of a multimodal model",
    "aiter_fraction": "x 0.85 for ROCm's aiter attention over 8,192 tokens",
    "moe_workspace_held": "fused-MoE workspaces held under the sampler",
    "host_step_s": "step host time",
    "host_per_request_s": "host time a request",
    "host_kernel_s": "host time to issue a kernel, eager",
    "async_scheduling": "host time beside the GPU's (async scheduling)",
    "prefill_graphs": "prompt steps in CUDA graphs",
    "decode_graph_max_len": "decode graphs while the longest sequence is at most",
    "prefill_graphs_off": "prompt graphs turned off for",
    "prefill_graph_max_mla": "an MLA model's prompt graphs up to",
    "dp_prompt_lockstep": "DP ranks step with any rank's prompt batch, without graphs",
    "dp_prompt_chunk": "a DP-attention rank's prompt chunk",
    "sparse_mla_raw_fp8": "a DSA model's fp8 cache raw (no scales) on compute capability 10+ and HIP",
    "hip_allreduce_buffers": "aiter's and QuickAllReduce's buffers before the weights on AMD GPUs",
    "dsa_cell_raw": "a DSA model's fp8 pool counted in raw-latent tokens (708 B a layer), stored at 788",
    "prompt_blocks": "a paged prompt's blocks taken",
    "triton_decode": "--attention-backend triton priced",
    "triton_mla_splits": "Triton MLA decode by default, fixed splits priced",
    "mla_decode_triton": "MLA decoded by Triton where no backend is asked for",
    "flashinfer_moe": "fp8 experts on FlashInfer's TensorRT-LLM MoE kernel (B200, GB200)",
    "flashinfer_moe_bf16": "16-bit experts on FlashInfer's TensorRT-LLM MoE kernel (B200, GB200)",
    "flashinfer_moe_fp4": "NVFP4 experts on the TensorRT-LLM-gen MoE kernel (B200, GB200)",
    "state_pool": "a Gated DeltaNet model's state slots",
}


_CHOICE_WORDS: dict[str, dict[str, str]] = {
    "vlm_fraction": {
        "none": "as any model's",
        "runner-0.95": "x 0.95, given or default (model runner)",
        "runner-0.9": "x 0.9, given or default (model runner)",
        "vit": "the default x 0.95 x (1 - 0.1 x (ViT layers x width^2 / (24 x 1024^2) - 1)), held to 0.76-0.9975",
    },
    "dp_prompt_chunk": {
        "none": "the whole budget",
        "half": "half --chunked-prefill-size",
        "dp": "--chunked-prefill-size over the DP size",
    },
    "async_scheduling": {
        "none": "no",
        "one-node": "yes, at PP 1 on one node",
        "pp1": "yes, at PP 1",
        "pp1-no-dp": "yes, at PP 1 without DP attention",
    },
}
"""kvcalc engines' words for each choice of the fields that are one of a few named choices."""

_FLASHINFER_MOE_WORDS = {
    "deepseek_v3": "DeepSeek-V3/R1",
    "kimi_k2": "Kimi-K2",
    "deepseek_v32": "DeepSeek-V3.2",
    "glm_moe_dsa": "GLM-5",
    "glm4_moe": "GLM-4.5/4.6",
    "qwen3_moe": "Qwen3-MoE",
    "qwen3_vl_moe_text": "Qwen3-VL-MoE",
    "qwen3_next": "Qwen3-Next",
    "qwen3_5_moe_text": "Qwen3.5-MoE",
    "minimax_m2": "MiniMax-M2",
    "mixtral": "Mixtral",
}
"""kvcalc engines' names for the model types of SGLANG_FLASHINFER_MOE, VLLM_FLASHINFER_MOE and their 16-bit tables, in
the order it lists them."""


@record(frozen=True)
class EngineRow:
    key: str
    label: str
    releases: str
    aliases: list[str]
    util_flag: str
    rules: dict[str, str]
    """Each rule in words, keyed by the record's field name."""
    differs_from_next_newer: list[str]
    """Fields whose rule differs from the next newer record of the same engine."""
    note: str


@record(frozen=True)
class EnginesReport:
    engines: list[EngineRow]
    labels: dict[str, str]


# How each SGLang record sets its default mem_fraction_static, in words (memory.sglang_mem_fraction).
_FRACTION_WORDS: dict[str, str] = {
    "sglang-0.5": "from GPU memory, TP, PP, DP attention, prompt graphs",
    "sglang-0.5.10": "from GPU memory, TP, PP, DP attention, prompt graphs (where the release captures them)",
    "sglang-0.5.3": "from GPU memory, TP, PP, DP attention",
    "sglang-0.4.7.post1": "a reserve by GPU memory and TP x PP, 4 GiB more with DP attention",
    "sglang-0.4.7": "a table by TP x PP, raised on GPUs over 96 GiB, 0.79 over 180,000 MiB (NVIDIA)",
    "sglang-0.4": "a table by TP x PP, raised on GPUs over 96 GiB",
    "sglang-0.4.5": "a table by TP (0.81 at TP 8), or from GPU memory over 80 GiB",
    "sglang-0.4.0": "a table by TP, 0.81 at TP 8",
    "sglang-0.3.6": "a table by TP, 0.82 at TP 8",
    "sglang-0.3": "a table by TP, 0.83 at TP 8",
}


def _state_pool_words(e: Engine) -> str:
    """kvcalc engines' words for SGLang's pool of Gated DeltaNet states: Engine.state_pool and, for its 'ratio', the
    three rules that refine it (state_radix_off, state_ratio_dp, state_pool_pad); '-' where the record keeps none."""
    if e.state_pool == "none":
        return "-"
    if e.state_pool == "fixed":
        return "--max-running-requests or 512, the radix cache off"
    radix_off = "--max-running-requests or 512" if e.state_radix_off == "fixed" else "the ratio's unless --max-running-requests"
    dp = "; the ratio's divided among DP-attention ranks too" if e.state_ratio_dp else ""
    pad = f"; {e.state_pool_pad} padding slot{'s' if e.state_pool_pad != 1 else ''}" if e.state_pool_pad else ""
    return f"0.9 : 1 of the memory after the weights, states to tokens; with the radix cache off, {radix_off}{dp}{pad}"


def _rule_words(e: Engine) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in _RULE_LABELS:
        v = getattr(e, f, None)
        if f == "triton_decode":
            # Not a field: which records' Triton decode the step model prices (TRITON_RECORDS).
            out[f] = (f"yes, on {TRITON_GPU_WORDS}" if e.key in TRITON_RECORDS else "no") if e.name == "sglang" else "-"
        elif f == "mla_decode_triton":
            # Not a field: where SGLang's default MLA decode backend is Triton's (SGLANG_BEFORE_FA3_MLA,
            # SGLANG_BEFORE_0_4_7, SGLANG_AITER_MLA_HEADS; triton_default_note).
            if e.name != "sglang":
                out[f] = "-"
            elif e.key in SGLANG_BEFORE_FA3_MLA:
                out[f] = "on every GPU"
            elif e.key in SGLANG_BEFORE_0_4_7:
                out[f] = "on every GPU but Hopper (FlashAttention 3)"
            else:
                out[f] = (
                    "on every GPU but Hopper (FlashAttention 3), compute capability 10 and AMD GPUs holding 16 or 128 "
                    "heads a GPU (AITER)"
                )
        elif f == "state_pool":
            out[f] = _state_pool_words(e)
        elif f in ("flashinfer_moe", "flashinfer_moe_bf16", "flashinfer_moe_fp4"):
            # Not a field: the models whose fp8 (16-bit, NVFP4) experts the record runs on that kernel (flashinfer_moe_models).
            fmt: ExpertsFormat = "bf16" if f == "flashinfer_moe_bf16" else "fp4" if f == "flashinfer_moe_fp4" else "fp8"
            kinds = flashinfer_moe_models(e, fmt)
            names = [_FLASHINFER_MOE_WORDS.get(k, k) for k in kinds]
            block = " (block-fp8 checkpoints)" if e.name == "vllm" and f == "flashinfer_moe" else ""
            out[f] = ", ".join(names) + block if names else ("no" if e.name in ("sglang", "vllm") else "-")
        elif f == "triton_mla_splits":
            cuda, hip = e.triton_mla_splits
            parts = ([f"{cuda} splits a request on Hopper"] if cuda else []) + (
                [f"{hip} on the MI300X and MI325X"] if hip else []
            )
            out[f] = "; ".join(parts) if parts else "-"
        elif f == "default_util":
            out[f] = "-" if v is None else f"{v:g}"
            if e.mem_fraction_rule != "none":
                out[f] = _FRACTION_WORDS[e.mem_fraction_rule]
        elif f == "block_size":
            out[f] = "-" if v is None else str(v)
        elif f == "prefill_graph_max_mla":
            out[f] = "-" if v is None else f"{v:,} tokens"
        elif f == "prompt_blocks" and e.budget == "all":
            out[f] = "-"  # (no pool, no scheduler)
        elif f == "video_frames_cap":
            out[f] = f"{v} frames" if v else "not modelled"
        elif f == "sparse_mla_auto_fp8":
            out[f] = f"fp8_ds_mla in {v}, bf16 in the rest" if v else "bf16"
        elif f == "sparse_mla_auto_kv":
            out[f] = v or "as the model's dtype"
        elif f == "sparse_mla_block":
            out[f] = f"{v} tokens" if v else "the record's block"
        elif f == "sparse_mla_fp8_by_backend":
            out[f] = "standard fp8 on compute capability 10 at <= 16 heads a GPU, else fp8_ds_mla" if v else "fp8_ds_mla"
        elif f == "kv_cache_memory_flag" and e.kv_cache_memory_since:
            out[f] = f"from {e.kv_cache_memory_since}"
        elif f == "nvls_mib_per_rank":
            out[f] = f"2 communicators x {v:g} MiB a rank" if v else "not counted apart"
        elif f in _CHOICE_WORDS:
            out[f] = _CHOICE_WORDS[f][str(v)]
        elif f == "prefill_graphs_off":
            words = {
                "pp": "PP > 1",
                "non-cuda": "GPUs other than NVIDIA's",
                "multimodal": "models with a vision tower",
                "dp": "DP attention",
                "mla": "MLA models",
                "mla-dense": "MLA models without an indexer",
                "qwen3-next": "Qwen3-Next",
                "dsa": "DeepSeek-V3.2 and GLM-5",
                "deepseek-sm100": "DeepSeek-V3 and Kimi-K2 on B200 and GB200 (after sizing)",
                "flashinfer-moe": "routed experts on FlashInfer's TensorRT-LLM MoE runner, but gpt-oss's (after sizing)",
            }
            out[f] = ", ".join(words[x] for x in sorted(v)) if v else "-"
        elif f in ("host_step_s", "host_per_request_s"):
            out[f] = "the step model's default (vLLM V1's)" if v is None else f"{v * 1e3:g} ms"
        elif f == "decode_graph_max_len":
            out[f] = "-" if v is None else f"{v:,} tokens (max_seq_len_to_capture; max_model_len if less)"
        elif f == "host_kernel_s":
            out[f] = "the step model's default" if v is None else f"{v * 1e6:g} us"
        elif isinstance(v, bool):
            out[f] = "yes" if v else "no"
        else:
            out[f] = _RULE_WORDS[f].get(str(v), str(v)).replace("{chunk}", f"{e.v0_chunk_tokens:,}")
    if e.swa_pool_ratio is not None:
        out["window_style"] = f"every token, or a sliding pool of {e.swa_pool_ratio:g} x the full pool (allowlist)"
    if e.per_window_pools:
        out["window_style"] = "min(S, w), one pool per window size"
    return out


def engines_report() -> EnginesReport:
    rows = []
    for i, e in enumerate(ENGINE_LIST):
        newer = next((n for n in reversed(ENGINE_LIST[:i]) if n.name == e.name), None)
        words = _rule_words(e)
        diff = [] if newer is None else [f for f, w in words.items() if _rule_words(newer)[f] != w]
        rows.append(EngineRow(e.key, e.label, e.releases, list(e.aliases), e.util_flag, words, diff, e.note))
    return EnginesReport(rows, dict(_RULE_LABELS))
