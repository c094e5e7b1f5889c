"""The paged KV cache a measurement runs on, its reference answer, and the bytes and FLOPs of a step."""

from __future__ import annotations

from typing import Any

from kvcalc._record import record
from kvcalc.errors import KvcalcError


@record(frozen=True)
class Geometry:
    """One attention layer's decode step."""

    kind: str  # "gqa" or "mla"
    n_q: int
    n_kv: int
    d_a: int
    """Key dimension (MLA: the latent rank)."""
    d_b: int
    """Extra key dimension that is not part of V (MLA: the decoupled RoPE dims); 0 otherwise."""
    dv: int
    block_size: int

    @property
    def group(self) -> int:
        return self.n_q // self.n_kv

    @property
    def d_k(self) -> int:
        return self.d_a + self.d_b

    @property
    def v_from_k(self) -> bool:
        return self.kind == "mla"


def geometry_from_model(model, block_size: int) -> Geometry:
    """The attention geometry the model's layer kinds read at decode (MLA's latent first, as it
    is what an MLA model's decode reads)."""
    geos = [g for k in model.kinds() if (g := k.decode_geometry()) is not None]
    if not geos:
        raise KvcalcError(f"{model.name} has no attention layer to measure", "--model", "a model with attention layers")
    g = next((x for x in geos if x.v_from_k), geos[0])
    return Geometry(g.kind, g.n_q, g.n_kv, g.d_a, g.d_b, g.dv, block_size)


def step_bytes(geo: Geometry, seq_lens: list[int], elt: int, kv_elt: int | None = None) -> int:
    """Bytes a decode step must move: K and V (or the latent) of the valid tokens, read once
    (``kv_elt`` bytes per element: 1 for fp8), plus the query read and the output written."""
    tokens = sum(seq_lens)
    kv = tokens * geo.n_kv * (geo.d_k + (0 if geo.v_from_k else geo.dv)) * (kv_elt or elt)
    return kv + len(seq_lens) * geo.n_q * (geo.d_k + geo.dv) * elt


def step_flops(geo: Geometry, seq_lens: list[int]) -> int:
    """2 FLOPs per multiply-add: scores over d_k and the weighted sum over dv, per query head and key."""
    return 2 * sum(seq_lens) * geo.n_q * (geo.d_k + geo.dv)


@record
class PagedCache:
    geo: Geometry
    q: Any
    k_pool: Any
    v_pool: Any
    block_table: Any
    seq_lens: Any
    lens: list[int]
    sm_scale: float
    k_scale: float = 1.0
    v_scale: float = 1.0
    """An fp8 cache's per-tensor scales: stored value x scale = the value it stands for."""

    @property
    def fp8(self) -> bool:
        return "float8" in str(self.k_pool.dtype)


FP8_MAX = 448.0
"""The largest finite e4m3 value."""


def build(
    geo: Geometry, lens: list[int], dtype, device: str, seed: int = 0, spare_pages: int = 0, kv_fp8: bool = False
) -> PagedCache:
    """Random K/V pages (never zeros) in a head-major pool [n_kv, pages, block, d], handed out in a
    shuffled order, a block table per sequence, and a query per sequence. ``kv_fp8``: K and V
    stored as float8 e4m3 with a per-tensor scale (amax / 448), the query in ``dtype``."""
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    bs = geo.block_size
    need = [-(-n // bs) for n in lens]
    pages = sum(need) + spare_pages
    perm = torch.randperm(pages, generator=g)
    table = torch.zeros((len(lens), max(need)), dtype=torch.int32)
    i = 0
    for b, n in enumerate(need):
        table[b, :n] = perm[i : i + n].to(torch.int32)
        i += n

    def rand(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32).to(dtype=dtype, device=device)

    k = rand(geo.n_kv, pages, bs, geo.d_k)
    v = k if geo.v_from_k else rand(geo.n_kv, pages, bs, geo.dv)
    q = rand(len(lens), geo.n_q, geo.d_k)
    ks = vs = 1.0
    if kv_fp8:

        def quant(x):
            scale = float(x.float().abs().max()) / FP8_MAX
            return (x.float() / scale).to(torch.float8_e4m3fn), scale

        k, ks = quant(k)
        v, vs = (k, ks) if geo.v_from_k else quant(v)
    return PagedCache(
        geo,
        q,
        k,
        v,
        table.to(device),
        torch.tensor(lens, dtype=torch.int32, device=device),
        list(lens),
        1.0 / (geo.d_k**0.5),
        ks,
        vs,
    )


def gather(c: PagedCache, b: int, dtype=None):
    """Sequence b's K [n_kv, len, d_k] and V [n_kv, len, dv], gathered through its block table
    (an fp8 cache dequantized to ``dtype``, or to the query's dtype)."""
    n = c.lens[b]
    nb = -(-n // c.geo.block_size)
    pages = c.block_table[b, :nb].long()
    k = c.k_pool.index_select(1, pages).reshape(c.geo.n_kv, nb * c.geo.block_size, c.geo.d_k)[:, :n]
    if c.geo.v_from_k:
        v = k[..., : c.geo.dv]
    else:
        v = c.v_pool.index_select(1, pages).reshape(c.geo.n_kv, nb * c.geo.block_size, c.geo.dv)[:, :n]
    if c.fp8:
        to = dtype or c.q.dtype
        return k.to(to) * c.k_scale, v.to(to) * c.v_scale
    return (k, v) if dtype is None else (k.to(dtype), v.to(dtype))


def reference(c: PagedCache, dtype=None):
    """The exact answer in float64 (float32 on a GPU), one sequence at a time."""
    import torch

    dtype = dtype or (torch.float64 if c.q.device.type == "cpu" else torch.float32)
    geo = c.geo
    out = torch.empty((len(c.lens), geo.n_q, geo.dv), dtype=dtype, device=c.q.device)
    for b in range(len(c.lens)):
        k, v = gather(c, b, dtype)
        q = c.q[b].to(dtype).view(geo.n_kv, geo.group, geo.d_k)
        p = torch.softmax(q @ k.transpose(1, 2) * c.sm_scale, dim=-1)
        out[b] = (p @ v).reshape(geo.n_q, geo.dv)
    return out


def rel_error(out, ref) -> float:
    import torch

    o = out.to(ref.dtype)
    if not torch.isfinite(o).all():
        return float("inf")
    return float(torch.linalg.vector_norm(o - ref) / torch.linalg.vector_norm(ref))
