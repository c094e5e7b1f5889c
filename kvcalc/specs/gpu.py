"""The GPU (accelerator) spec: what a YAML file in gpu_specs/ says.

Sizes and rates may be written with units (``80GB``, ``3.35TB/s``, ``989.5TFLOPS``); they are
stored as exact numbers (bytes, bytes/s, FLOP/s).
"""

from __future__ import annotations

import re
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kvcalc.errors import KvcalcError
from kvcalc.units import parse_rate, parse_size


def _flops(v, field: str) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if v <= 0:
            raise ValueError(f"{field} must be positive")
        return float(v)
    m = re.match(r"^\s*([0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([TPG]?)(?:FLOPS|FLOP/s|OPS|OP/s)?\s*$", str(v), re.I)
    if not m:
        raise ValueError(f"cannot read {v!r} as FLOP/s (e.g. 989.5TFLOPS)")
    mult = {"": 1, "G": 1e9, "T": 1e12, "P": 1e15}[m.group(2).upper()]
    out = float(Decimal(m.group(1)) * Decimal(mult))
    if out <= 0:
        raise ValueError(f"{field} must be positive")
    return out


class GPUSource(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str
    notes: str = ""


class GPUSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    aliases: list[str] = []
    vendor: str
    description: str = ""
    source: GPUSource
    memory_bytes: int
    """Memory as the vendor states it (decimal GB on the datasheet)."""
    memory_runtime_bytes: int
    """Memory as the runtime reports it (torch.cuda.mem_get_info()[1]); what engines budget against."""
    memory_runtime_measured: bool = False
    """True when memory_runtime_bytes was read off a real device, False for an estimate."""
    memory_bandwidth_bytes_per_s: int
    flops_bf16: float
    """Dense bf16/fp16 tensor FLOP/s (never the 2:4 sparse figure)."""
    flops_fp8: float | None = None
    """Dense fp8 FLOP/s, where the part has fp8 units."""
    interconnect_bytes_per_s: int | None = None
    """GPU-to-GPU bandwidth per GPU, one direction (NVLink, Infinity Fabric, ICI)."""
    host_link_bytes_per_s: int | None = None
    """Host link (PCIe or C2C) bandwidth, one direction."""

    @field_validator("memory_bytes", "memory_runtime_bytes", mode="before")
    @classmethod
    def _size(cls, v, info):
        try:
            n = parse_size(v, info.field_name)
        except KvcalcError as e:
            raise ValueError(e.line()) from None
        if n <= 0:
            raise ValueError(f"{info.field_name} must be positive")
        return n

    @field_validator("memory_bandwidth_bytes_per_s", "interconnect_bytes_per_s", "host_link_bytes_per_s", mode="before")
    @classmethod
    def _rate(cls, v, info):
        if v is None:
            return v
        try:
            return parse_rate(v, info.field_name)
        except KvcalcError as e:
            raise ValueError(e.line()) from None

    @field_validator("flops_bf16", "flops_fp8", mode="before")
    @classmethod
    def _fl(cls, v, info):
        return None if v is None else _flops(v, info.field_name)
