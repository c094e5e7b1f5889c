"""A checkpoint's bytes as its files hold them, read without reading a tensor.

A safetensors file starts with an 8-byte little-endian header length and that many bytes of JSON:
for each tensor its dtype, shape and byte range. kvcalc reads those headers only (a few hundred
KB for the largest models), never the tensors, and falls back to ``model.safetensors.index.json``
(whose ``metadata.total_size`` is the checkpoint's byte count) where the shards are not there.
What the bytes mean (which role each tensor plays) is kvcalc.specs.checkpoint's.
"""

from __future__ import annotations

import json
import struct
from dataclasses import field
from pathlib import Path

from kvcalc import files
from kvcalc._record import record
from kvcalc.errors import KvcalcError

HEADER_LIMIT = 100 * 2**20
"""No safetensors header is near this (DeepSeek-V3's largest shard header is under 1 MB)."""
MAX_SHARDS = 4096


@record(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]
    nbytes: int


@record
class CheckpointFiles:
    """What a model folder's weight files say."""

    tensors: dict[str, TensorInfo] = field(default_factory=dict)
    """Every tensor the headers list (empty when only the index was there)."""
    total_bytes: int | None = None
    """The bytes of all tensors: the headers' sum, else the index's metadata.total_size."""
    names: list[str] = field(default_factory=list)
    """Tensor names from the index's weight_map where the shards are absent."""
    source: str = ""


def _header(path: Path) -> dict[str, TensorInfo]:
    accepted = "a safetensors file (8-byte header length, then a JSON header)"
    with files.open_regular(path, accepted) as f:
        head = f.read(8)
        if len(head) < 8:
            raise KvcalcError("file is shorter than a safetensors header", str(path), accepted)
        (n,) = struct.unpack("<Q", head)
        if not 2 <= n <= HEADER_LIMIT:
            raise KvcalcError(f"header length {n:,} is not a safetensors header", str(path), accepted)
        raw = f.read(n)
    if len(raw) < n:
        raise KvcalcError("file ends inside its header", str(path), accepted)
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise KvcalcError("header is not JSON", str(path), accepted) from None
    if not isinstance(doc, dict):
        raise KvcalcError("header is not a JSON object", str(path), accepted)
    out: dict[str, TensorInfo] = {}
    for name, t in doc.items():
        if name == "__metadata__":
            continue
        try:
            start, end = (int(x) for x in t["data_offsets"])
            shape = tuple(int(x) for x in t["shape"])
            dtype = str(t["dtype"])
        except (KeyError, TypeError, ValueError):
            raise KvcalcError(f"tensor {str(name)[:80]!r} has no dtype, shape or data_offsets", str(path), accepted) from None
        if not 0 <= start <= end:
            raise KvcalcError(f"tensor {str(name)[:80]!r} has data_offsets {start}, {end}", str(path), accepted)
        out[str(name)] = TensorInfo(dtype, shape, end - start)
    return out


def read_checkpoint(folder: Path) -> CheckpointFiles | None:
    """The weight files of a model folder: the safetensors headers if the shards are there, else the
    index; None if there is neither."""
    shards = sorted(p for p in folder.glob("*.safetensors") if files.probe(p) == "file")
    if len(shards) > MAX_SHARDS:
        raise KvcalcError(f"{len(shards):,} safetensors files", str(folder), f"at most {MAX_SHARDS:,} shards")
    if shards:
        tensors: dict[str, TensorInfo] = {}
        for p in shards:
            tensors.update(_header(p))
        return CheckpointFiles(
            tensors=tensors,
            total_bytes=sum(t.nbytes for t in tensors.values()),
            source=f"the headers of {len(shards)} safetensors file{'s' if len(shards) > 1 else ''} in {folder}",
        )
    index = folder / "model.safetensors.index.json"
    if files.probe(index) != "file":
        return None
    accepted = "a model.safetensors.index.json: {metadata: {total_size}, weight_map: {...}}"
    try:
        doc = json.loads(files.read_bytes(index, files.INDEX_LIMIT, accepted))
    except (ValueError, RecursionError):
        raise KvcalcError("not JSON", str(index), accepted) from None
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    total = meta.get("total_size") if isinstance(meta, dict) else None
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise KvcalcError("metadata.total_size is missing or not a whole number", str(index), accepted)
    wm = doc.get("weight_map")
    names = [str(k) for k in wm] if isinstance(wm, dict) else []
    return CheckpointFiles(total_bytes=total, names=names, source=f"{index} (metadata.total_size)")


# ---- which role each tensor plays ---------------------------------------------------------------

CHECKPOINT_ROLES = (
    "embed",
    "lm_head",
    "attn",
    "mlp",
    "shared_experts",
    "experts",
    "router",
    "norms",
    "replicated",
    "vision",
    "other",
)
_SCALE_SUFFIXES = ("scale", "scale_inv", "scales", "qzeros", "zeros", "g_idx", "zero_point", "global_scale", "_blocks_scale")
# (substring, role), first match wins; names are lowercased.
_ROLE_RULES: tuple[tuple[str, str], ...] = (
    ("vision", "vision"),
    ("visual", "vision"),
    ("multi_modal_projector", "vision"),
    ("mm_projector", "vision"),
    ("image_newline", "vision"),
    ("embed_tokens", "embed"),
    ("word_embeddings", "embed"),
    ("tok_embeddings", "embed"),
    (".wte.", "embed"),
    ("lm_head", "lm_head"),
    ("shared_expert", "shared_experts"),
    (".experts.", "experts"),
    ("mlp.gate.", "router"),
    ("block_sparse_moe.gate.", "router"),
    (".router.", "router"),
    ("e_score_correction_bias", "router"),
    ("q_a_proj", "replicated"),
    ("kv_a_proj_with_mqa", "replicated"),
    ("norm", "norms"),
    ("self_attn", "attn"),
    (".attention.", "attn"),
    (".attn.", "attn"),
    ("linear_attn", "attn"),
    ("mixer", "attn"),
    ("mlp", "mlp"),
    ("feed_forward", "mlp"),
)


def tensor_role(name: str) -> str:
    """The role of a tensor by its name (kvcalc's roles; 'other' where none applies)."""
    low = name.lower()
    if low.startswith("model.embed") or low in ("transformer.wte.weight", "tok_embeddings.weight"):
        return "embed"
    if low in ("output.weight",):
        return "lm_head"
    for key, role in _ROLE_RULES:
        if key in low:
            return role
    return "other"


ELEMENT_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}


def loaded_bytes(name: str, t: TensorInfo) -> int:
    """Bytes a tensor takes once an engine loads it with dtype auto: float32 weights at 16 bits
    (their scales and zero points stay as stored); everything else as stored."""
    if (
        t.dtype in ("F32", "F64")
        and not name.lower().endswith(_SCALE_SUFFIXES)
        and not name.lower().endswith(tuple(s + "_2" for s in _SCALE_SUFFIXES))
    ):
        n = 1
        for d in t.shape:
            n *= d
        return 2 * n
    return t.nbytes


def role_bytes_of(files: CheckpointFiles) -> dict[str, int]:
    """Loaded bytes of each role, from the headers (empty when only the index is there)."""
    out: dict[str, int] = {}
    for name, t in files.tensors.items():
        r = tensor_role(name)
        out[r] = out.get(r, 0) + loaded_bytes(name, t)
    return out


def attach_checkpoint(spec: dict[str, object], folder: Path) -> list[str]:
    """Record the checkpoint bytes of the weight files beside a config.json in its spec dict, and
    say where they differ from what the config counts. Returns warnings."""
    found = read_checkpoint(folder)
    if found is None or found.total_bytes is None:
        return []
    roles = role_bytes_of(found)
    spec["checkpoint"] = {"total_bytes": found.total_bytes, "role_bytes": roles, "source": found.source}
    notes = [f"weights read from {found.source}: {found.total_bytes:,} B"]
    if roles.get("other"):
        names = sorted(n for n in found.tensors if tensor_role(n) == "other")
        notes.append(
            f"{len(names):,} tensors ({roles['other']:,} B as loaded) have no role kvcalc knows (e.g. {names[0][:60]}); "
            "they are counted as split over tensor-parallel ranks"
        )
    return notes
