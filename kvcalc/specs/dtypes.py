"""Storage formats of KV caches and weights, as exact bit counts.

A KV cache stores vectors (one K or V vector of one head of one token, or one MLA latent).
``KVDtype.vector_bytes(dim)`` is the exact byte count of one stored vector, scales included
where the format keeps them per token-head vector or per small group.

Both are parsed once, where user input enters (``kv_dtype("fp8")``, ``weight_format("int4")``),
and travel as values from there on.
"""

from __future__ import annotations

from math import ceil
from typing import TYPE_CHECKING

from kvcalc._record import record
from kvcalc.errors import KvcalcError

if TYPE_CHECKING:
    from fractions import Fraction


@record(frozen=True)
class KVDtype:
    name: str
    bits: int
    """Bits per stored element."""
    scale_bytes_per_vector: int = 0
    """Bytes of scale (and zero point) kept per token-head vector."""
    group: int = 0
    """If > 0: one ``group_scale_bytes`` scale per ``group`` elements (micro-scaling formats)."""
    group_scale_bytes: int = 0
    note: str = ""
    auto: bool = False
    """Taken for kv_cache_dtype auto (the model's dtype), which an engine may store otherwise on some GPUs
    (engine.kv.stored_kv_dtype)."""

    def vector_bytes(self, dim: int) -> int:
        """Exact bytes of one stored vector of ``dim`` elements."""
        data = ceil(dim * self.bits / 8)
        scales = self.scale_bytes_per_vector
        if self.group:
            scales += ceil(dim / self.group) * self.group_scale_bytes
        return data + scales

    def __str__(self) -> str:
        return self.name


KV_DTYPES: dict[str, KVDtype] = {
    d.name: d
    for d in (
        KVDtype("fp32", 32, note="4 bytes per element"),
        KVDtype("bf16", 16, note="2 bytes per element"),
        KVDtype("fp16", 16, note="2 bytes per element"),
        KVDtype("fp8", 8, note="1 byte per element; per-tensor scale (vLLM/SGLang/TensorRT-LLM fp8), no per-token storage"),
        KVDtype(
            "fp8_e4m3",
            8,
            note="1 byte per element; per-tensor scale: standard fp8, which a sparse-MLA model (DeepSeek-V3.2) keeps "
            "under vLLM's FlashInfer sparse MLA backend (576 + 132 B per token per layer) where fp8 otherwise means "
            "fp8_ds_mla",
        ),
        KVDtype(
            "fp8_ds_mla",
            8,
            note="vLLM's fp8 layout for DeepSeek sparse MLA: the latent in fp8 with an fp32 scale per 128 elements, "
            "the rope dims in bf16 (656 B per token per layer for DeepSeek-V3.2); other layers fp8",
        ),
        KVDtype(
            "int8",
            8,
            scale_bytes_per_vector=4,
            note="1 byte per element plus an fp16 scale and fp16 zero point per token-head vector (LMDeploy-style)",
        ),
        KVDtype(
            "int4",
            4,
            scale_bytes_per_vector=4,
            note="half a byte per element plus an fp16 scale and fp16 zero point per token-head vector (LMDeploy-style)",
        ),
        KVDtype(
            "fp4",
            4,
            group=16,
            group_scale_bytes=1,
            note="NVFP4: half a byte per element plus one fp8 scale per 16 elements",
        ),
    )
}
KV_DTYPE_ALIASES = {
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "auto": "bf16",
    "fp8_e5m2": "fp8",
    "float8": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "fp8_e4m3fn": "fp8",
    "nvfp4": "fp4",
}
BF16 = KV_DTYPES["bf16"]


def kv_dtype(name: str | KVDtype, where: str = "kv_dtype") -> KVDtype:
    """Parse a KV dtype name (or pass a parsed one through)."""
    if isinstance(name, KVDtype):
        return name
    key = str(name).strip().lower()
    key = KV_DTYPE_ALIASES.get(key, key)
    if key not in KV_DTYPES:
        raise KvcalcError(f"unknown KV dtype {str(name)[:40]!r}", where, "one of " + ", ".join(KV_DTYPES))
    return KV_DTYPES[key]


# Weight formats: bits per parameter as (numerator, denominator), scales included as an average
# where the format has them (kept as integers: fractions is imported only when a weight is sized).
WEIGHT_BITS: dict[str, tuple[int, int]] = {
    "fp32": (32, 1),
    "bf16": (16, 1),
    "fp16": (16, 1),
    "fp8": (8, 1),
    "int8": (8, 1),
    # 8-bit GPTQ (W8A16) with group size 128: an fp16 scale and an 8-bit zero per 128 weights.
    "int8-w8a16": (8 * 128 + 16 + 8, 128),
    # GPTQ/AWQ int4 with group size 128: an fp16 scale and a 4-bit zero per 128 weights.
    "int4": (4 * 128 + 16 + 4, 128),
    # OCP MXFP4: 4-bit elements, one 8-bit shared exponent per 32.
    "mxfp4": (4 * 32 + 8, 32),
    # NVFP4: 4-bit elements, one fp8 scale per 16.
    "fp4": (4 * 16 + 8, 16),
}
WEIGHT_DTYPE_ALIASES = {
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "nvfp4": "fp4",
    "float8": "fp8",
    "fp8_e4m3": "fp8",
    "w8a16": "int8-w8a16",
    "gptq-int8": "int8-w8a16",
}


def normalize_weight_dtype(name: str, where: str = "weight dtype") -> str:
    """The canonical name of a weight format (``bfloat16`` -> ``bf16``); unknown names are an error."""
    key = str(name).strip().lower()
    key = WEIGHT_DTYPE_ALIASES.get(key, key)
    if key not in WEIGHT_BITS:
        raise KvcalcError(f"unknown weight dtype {str(name)[:40]!r}", where, "one of " + ", ".join(WEIGHT_BITS))
    return key


def weight_bits(name: str, where: str = "weight dtype") -> Fraction:
    from fractions import Fraction

    return Fraction(*WEIGHT_BITS[normalize_weight_dtype(name, where)])


def weight_bytes(params: int, dtype: str) -> int:
    """Exact bytes of ``params`` parameters stored as ``dtype`` (rounded up to a whole byte)."""
    return ceil(params * weight_bits(dtype) / 8)
