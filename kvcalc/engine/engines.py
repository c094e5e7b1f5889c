"""Serving engines as data: one record per engine, each field a rule of its memory accounting.

``fit`` is one function over these records, so engines differ only where a field says they do,
and no code elsewhere asks an engine its name. Each rule cites the engine's source in
docs/engines.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kvcalc.engine.alloc import Allocation
from kvcalc.errors import unknown_name


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
    pad_groups: bool = False
    """Hybrid models: each attention type's layers grouped into equal groups sharing one block pool."""
    subtracts_activation: bool = True
    subtracts_non_torch: bool = True
    cudagraph_line: bool = False
    """The budget shows a CUDA-graph line (0 B unless given), with ``cudagraph_note`` as the assumption."""
    cudagraph_note: str = ""
    util_flag: str = ""
    note: str = ""
    mla_note: str = ""
    """What this engine caches for an MLA layer, when that is the point of choosing it."""

    def allocation(self, block_size: int | None = None, in_flight: int = 0) -> Allocation:
        bs = block_size if block_size is not None else self.block_size
        return Allocation(
            name=self.name,
            block_size=bs,
            window_slack=in_flight if self.window_style == "vllm" else 0,
            window_style=self.window_style,
            mla_expanded=self.mla_expanded,
            pad_groups=self.pad_groups,
        )


ENGINES: dict[str, Engine] = {
    e.name: e
    for e in (
        Engine(
            "vllm",
            "vLLM (V1 engine)",
            "util_of_total",
            0.9,
            16,
            "vllm",
            pad_groups=True,
            cudagraph_line=True,
            util_flag="gpu_memory_utilization",
            cudagraph_note="CUDA graphs: 0 B, as vLLM captures them after sizing the KV cache (they come out of the "
            "1 - gpu_memory_utilization headroom); pass --cudagraph if your vLLM profiles them first",
            note="KV pool = gpu_memory_utilization x runtime total - weights - activation peak - non-torch - CUDA graphs; "
            "blocks of 16 tokens; sliding layers reserve cdiv(min(window - 1 + max_num_batched_tokens, S), 16) + 1 blocks",
        ),
        Engine(
            "sglang",
            "SGLang",
            "util_of_total",
            0.88,
            None,
            "window",
            subtracts_activation=False,
            util_flag="mem_fraction_static",
            note="KV pool = mem_fraction_static x runtime total - weights - non-torch; activations live in the "
            "1 - mem_fraction_static headroom; token-granular pool (page size 1)",
        ),
        Engine(
            "trtllm",
            "TensorRT-LLM",
            "fraction_of_free",
            0.9,
            32,
            "window",
            util_flag="free_gpu_memory_fraction",
            note="KV pool = free_gpu_memory_fraction x (runtime total - weights - activations - non-torch); 32 tokens per block",
        ),
        Engine(
            "hf",
            "transformers 5.x (DynamicCache)",
            "all",
            None,
            None,
            "window-1",
            note="no pool: every request's cache is allocated as it grows; sliding layers keep window - 1 tokens; "
            "MLA caches the latent",
            mla_note="MLA cached as the latent (transformers 5.x); --engine hf4 gives the other",
        ),
        Engine(
            "hf4",
            "transformers 4.x (DynamicCache)",
            "all",
            None,
            None,
            "window-1",
            mla_expanded=True,
            note="as hf, but MLA layers cache decompressed per-head K (nope + rope dims) and V instead of the latent",
            mla_note="MLA cached as decompressed per-head K and V (transformers 4.x); --engine hf gives the other",
        ),
        Engine(
            "plain",
            "no engine (logical bytes)",
            "all",
            None,
            None,
            "window",
            subtracts_activation=False,
            subtracts_non_torch=False,
            note="device memory minus weights; every byte left holds KV; no blocks",
        ),
    )
}


def engine(name: str | Engine, where: str = "--engine") -> Engine:
    """Parse an engine name (or pass a parsed one through)."""
    if isinstance(name, Engine):
        return name
    key = str(name).strip().lower().replace("tensorrt-llm", "trtllm").replace("transformers", "hf")
    if key not in ENGINES:
        raise unknown_name("engine", str(name)[:60], ENGINES, where)
    return ENGINES[key]
