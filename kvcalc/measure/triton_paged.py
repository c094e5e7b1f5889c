"""A paged decode-attention kernel in Triton: GQA-aware, split over the sequence, then merged.

One program handles one sequence, one KV head (and a tile of its query heads) and one split of
the sequence's blocks: it reads each K/V block of that split once for every query head of the
group (tl.dot over a group padded to at least 16 rows), keeps an online softmax (max, sum,
accumulator), and writes the partial result. A second kernel merges the splits. Splits that
cover only padding leave (max = -inf, sum = 0), which merge to nothing.

MLA uses the same kernel: one "KV head" whose key is the latent (D_A = kv_lora_rank) plus the
decoupled RoPE part (D_B = qk_rope_head_dim), and whose value is the latent itself (V_FROM_K).

Triton 3.6 API only (the GPU machine's image; also compiled with 3.9 here). Under
TRITON_INTERPRET=1 the caller passes fp32. An fp8 (e4m3) cache is read as bytes and converted to
the query's dtype; its K scale rides on the softmax scale and its V scale on the partial result.
Offsets into the K and V pools are 64-bit: pools of more than 2^31 elements are addressed right.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _paged_partial(
    Q,
    K,
    V,
    BT,
    LENS,
    M_OUT,
    L_OUT,
    ACC_OUT,
    sm_scale,
    v_scale,
    stride_qb,
    stride_qh,
    stride_kh,
    stride_kb,
    stride_kt,
    stride_vh,
    stride_vb,
    stride_vt,
    stride_btb,
    stride_mb,
    stride_mh,
    stride_ms,
    stride_ab,
    stride_ah,
    stride_as,
    stride_ag,
    GROUP: tl.constexpr,
    G_TILE: tl.constexpr,
    BLOCK: tl.constexpr,
    TILE: tl.constexpr,
    D_A: tl.constexpr,
    BLOCK_DA: tl.constexpr,
    D_B: tl.constexpr,
    BLOCK_DB: tl.constexpr,
    DV: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    V_FROM_K: tl.constexpr,
    TILES_PER_SPLIT,
):
    # sm_scale carries the K scale of an fp8 cache (sm_scale x k_scale); v_scale multiplies the
    # partial result. K and V are converted to the query's dtype as they are loaded.
    b = tl.program_id(0)
    hk_tile = tl.program_id(1)
    split = tl.program_id(2)
    n_tiles: tl.constexpr = (GROUP + G_TILE - 1) // G_TILE
    hk = hk_tile // n_tiles
    tile = hk_tile % n_tiles

    seq_len = tl.load(LENS + b)
    n_token_tiles = (seq_len + TILE - 1) // TILE
    start = split * TILES_PER_SPLIT
    end = tl.minimum(start + TILES_PER_SPLIT, n_token_tiles)

    g = tile * G_TILE + tl.arange(0, G_TILE)  # query heads of this group handled here
    g_ok = g < GROUP
    qh = hk * GROUP + g
    da = tl.arange(0, BLOCK_DA)
    q_a = tl.load(Q + b * stride_qb + qh[:, None] * stride_qh + da[None, :], mask=g_ok[:, None] & (da[None, :] < D_A), other=0.0)
    if D_B > 0:
        db = tl.arange(0, BLOCK_DB)
        q_b = tl.load(
            Q + b * stride_qb + qh[:, None] * stride_qh + D_A + db[None, :], mask=g_ok[:, None] & (db[None, :] < D_B), other=0.0
        )
    dv = tl.arange(0, BLOCK_DV)
    t = tl.arange(0, TILE)

    m_i = tl.full([G_TILE], float("-inf"), tl.float32)
    l_i = tl.zeros([G_TILE], tl.float32)
    acc = tl.zeros([G_TILE, BLOCK_DV], tl.float32)

    for it in range(start, end):
        # A tile of TILE tokens spans TILE // BLOCK pages: look each token's page up in the table.
        tok = it * TILE + t
        tok_ok = tok < seq_len
        pb = tl.load(BT + b * stride_btb + tok // BLOCK, mask=tok_ok, other=0)
        # Offsets into the pools in 64 bits: a pool of more than 2^31 elements (4 GiB of bf16, e.g. an
        # 8B model at batch 128 x 16k) would wrap in 32-bit arithmetic.
        # The 64-bit row offset goes into a pointer per token; the column offsets stay 32-bit.
        k_rows = K + (hk.to(tl.int64) * stride_kh + pb.to(tl.int64) * stride_kb + (tok % BLOCK) * stride_kt)
        k_a = tl.load(k_rows[:, None] + da[None, :], mask=tok_ok[:, None] & (da[None, :] < D_A), other=0.0).to(q_a.dtype)
        s = tl.dot(q_a, tl.trans(k_a))
        if D_B > 0:
            k_b = tl.load(k_rows[:, None] + (D_A + db)[None, :], mask=tok_ok[:, None] & (db[None, :] < D_B), other=0.0).to(
                q_a.dtype
            )
            s += tl.dot(q_b, tl.trans(k_b))
        s = s * sm_scale
        s = tl.where(g_ok[:, None] & tok_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m_i - m_safe)
        p = tl.exp(s - m_safe[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        if V_FROM_K:
            v = tl.load(k_rows[:, None] + dv[None, :], mask=tok_ok[:, None] & (dv[None, :] < DV), other=0.0).to(q_a.dtype)
        else:
            v_rows = V + (hk.to(tl.int64) * stride_vh + pb.to(tl.int64) * stride_vb + (tok % BLOCK) * stride_vt)
            v = tl.load(v_rows[:, None] + dv[None, :], mask=tok_ok[:, None] & (dv[None, :] < DV), other=0.0).to(q_a.dtype)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new

    mo = b * stride_mb + hk * stride_mh + split * stride_ms + g
    tl.store(M_OUT + mo, m_i, mask=g_ok)
    tl.store(L_OUT + mo, l_i, mask=g_ok)
    ao = b * stride_ab + hk * stride_ah + split * stride_as + g[:, None] * stride_ag + dv[None, :]
    tl.store(ACC_OUT + ao, acc * v_scale, mask=g_ok[:, None] & (dv[None, :] < DV))


@triton.jit
def _paged_merge(
    M_IN,
    L_IN,
    ACC_IN,
    OUT,
    stride_mb,
    stride_mh,
    stride_ms,
    stride_ab,
    stride_ah,
    stride_as,
    stride_ag,
    stride_ob,
    stride_oh,
    GROUP: tl.constexpr,
    G_TILE: tl.constexpr,
    DV: tl.constexpr,
    BLOCK_DV: tl.constexpr,
    SPLITS,
):
    b = tl.program_id(0)
    hk_tile = tl.program_id(1)
    # A program merges one slice of BLOCK_DV output dims (the 512-wide MLA latent in four): the whole
    # width at once held 32 x 512 fp32 accumulators a program and spilled at sm_90a.
    dv_tile = tl.program_id(2)
    n_tiles: tl.constexpr = (GROUP + G_TILE - 1) // G_TILE
    hk = hk_tile // n_tiles
    tile = hk_tile % n_tiles
    g = tile * G_TILE + tl.arange(0, G_TILE)
    g_ok = g < GROUP
    dv = dv_tile * BLOCK_DV + tl.arange(0, BLOCK_DV)
    m_all = tl.full([G_TILE], float("-inf"), tl.float32)
    for s in range(0, SPLITS):
        m_s = tl.load(M_IN + b * stride_mb + hk * stride_mh + s * stride_ms + g, mask=g_ok, other=float("-inf"))
        m_all = tl.maximum(m_all, m_s)
    m_safe = tl.where(m_all == float("-inf"), 0.0, m_all)
    l_all = tl.zeros([G_TILE], tl.float32)
    acc = tl.zeros([G_TILE, BLOCK_DV], tl.float32)
    for s in range(0, SPLITS):
        off = b * stride_mb + hk * stride_mh + s * stride_ms + g
        m_s = tl.load(M_IN + off, mask=g_ok, other=float("-inf"))
        l_s = tl.load(L_IN + off, mask=g_ok, other=0.0)
        w = tl.where(l_s > 0, tl.exp(m_s - m_safe), 0.0)
        a = tl.load(
            ACC_IN + b * stride_ab + hk * stride_ah + s * stride_as + g[:, None] * stride_ag + dv[None, :],
            mask=g_ok[:, None] & (dv[None, :] < DV),
            other=0.0,
        )
        l_all += l_s * w
        acc += a * w[:, None]
    out = acc / tl.where(l_all > 0, l_all, 1.0)[:, None]
    qh = hk * GROUP + g
    tl.store(
        OUT + b * stride_ob + qh[:, None] * stride_oh + dv[None, :],
        out.to(OUT.dtype.element_ty),
        mask=g_ok[:, None] & (dv[None, :] < DV),
    )


def _pow2(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


MERGE_DV = 128
"""Output dims one merge program combines (see _paged_merge)."""
SHARED_LIMIT = 227 * 1024
"""Shared memory one block may use on an H100 or H200 (sm_90)."""


def kernel_config(d_k: int, group: int) -> tuple[int, int, int, int]:
    """(query heads per program, tokens per iteration, warps, pipeline stages), chosen by compiling
    every variant for sm_90a (tests/test_measure.py prints registers, spills and shared memory):
    head dims up to 128 read 64 tokens per iteration with 8 warps (4 warps spill), up to 256 read 32
    (64 spill); the 576-wide MLA latent reads 32 tokens for 32 query heads with 8 warps and 2
    stages (86 KB of shared memory; 64 heads or 64 tokens spill). The page size does not enter: a tile looks each
    token's page up, so 128-token pages need no more shared memory than 16-token ones."""
    g_tile = min(max(16, _pow2(group)), 32)
    if d_k <= 128:
        return g_tile, 64, 8, 3
    if d_k <= 256:
        return g_tile, 32, 8, 3
    return g_tile, 32, 8, 2


def token_tile(block: int, dk: int) -> int:
    """Tokens per loop iteration (see :func:`kernel_config`)."""
    return kernel_config(dk, 1)[1]


def plan_splits(batch: int, n_kv_tiles: int, max_tiles: int, sms: int) -> int:
    """Split the sequence when the grid would not fill the GPU: aim for about 2 programs per SM,
    never splitting below 4 tiles per split."""
    programs = batch * n_kv_tiles
    if programs >= 2 * sms:
        return 1
    return max(1, min(-(-2 * sms // programs), -(-max_tiles // 4)))


def paged_decode(
    q,
    k_pool,
    v_pool,
    block_table,
    seq_lens,
    *,
    group: int,
    d_a: int,
    d_b: int,
    dv: int,
    v_from_k: bool,
    sm_scale: float,
    splits: int | None = None,
    sms: int = 132,
    workspace=None,
    k_scale: float = 1.0,
    v_scale: float = 1.0,
):
    """out[b, h] = softmax(q[b, h] . K_b^T * scale) V_b over each sequence's pages.

    q: [B, n_q, d_a + d_b]; k_pool: [n_kv, pages, BLOCK, d_a + d_b]; v_pool: [n_kv, pages, BLOCK, dv]
    (ignored with v_from_k); block_table: [B, max_blocks] int32; seq_lens: [B] int32.
    ``workspace`` (from :func:`workspace`) lets repeated calls reuse their buffers.
    """
    B, n_q, _ = q.shape
    n_kv = k_pool.shape[0]
    block = k_pool.shape[2]
    g_tile, tile, warps, stages = kernel_config(d_a + d_b, group)
    max_tiles = -(-block_table.shape[1] * block // tile)
    n_tiles = -(-group // g_tile)
    if splits is None:
        splits = plan_splits(B, n_kv * n_tiles, max_tiles, sms)
    per_split = -(-max_tiles // splits)
    ws = workspace or make_workspace(q, n_kv, splits, g_tile * n_tiles, dv)
    m, lse, acc, out = ws
    v = k_pool if v_from_k else v_pool
    grid = (B, n_kv * n_tiles, splits)
    _paged_partial[grid](
        q,
        k_pool,
        v,
        block_table,
        seq_lens,
        m,
        lse,
        acc,
        sm_scale * k_scale,
        v_scale,
        q.stride(0),
        q.stride(1),
        k_pool.stride(0),
        k_pool.stride(1),
        k_pool.stride(2),
        v.stride(0),
        v.stride(1),
        v.stride(2),
        block_table.stride(0),
        m.stride(0),
        m.stride(1),
        m.stride(2),
        acc.stride(0),
        acc.stride(1),
        acc.stride(2),
        acc.stride(3),
        **_constexprs(group, g_tile, block, tile, d_a, d_b, dv, v_from_k),
        TILES_PER_SPLIT=per_split,
        num_warps=warps,
        num_stages=stages,
    )
    merge_dv = min(_pow2(dv), MERGE_DV)
    _paged_merge[(B, n_kv * n_tiles, -(-dv // merge_dv))](
        m,
        lse,
        acc,
        out,
        m.stride(0),
        m.stride(1),
        m.stride(2),
        acc.stride(0),
        acc.stride(1),
        acc.stride(2),
        acc.stride(3),
        out.stride(0),
        out.stride(1),
        GROUP=group,
        G_TILE=g_tile,
        DV=dv,
        BLOCK_DV=merge_dv,
        SPLITS=splits,
    )
    return out


def _constexprs(group: int, g_tile: int, block: int, tile: int, d_a: int, d_b: int, dv: int, v_from_k: bool) -> dict:
    """The partial kernel's compile-time constants for one geometry and tiling."""
    return dict(
        GROUP=group,
        G_TILE=g_tile,
        BLOCK=block,
        TILE=tile,
        D_A=d_a,
        BLOCK_DA=_pow2(d_a),
        D_B=d_b,
        BLOCK_DB=_pow2(d_b) if d_b else 16,
        DV=dv,
        BLOCK_DV=_pow2(dv),
        V_FROM_K=v_from_k,
    )


def make_workspace(q, n_kv: int, splits: int, g_rows: int, dv: int):
    import torch

    B, n_q, _ = q.shape
    m = torch.empty((B, n_kv, splits, g_rows), dtype=torch.float32, device=q.device)
    lse = torch.empty_like(m)
    acc = torch.empty((B, n_kv, splits, g_rows, dv), dtype=torch.float32, device=q.device)
    out = torch.empty((B, n_q, dv), dtype=q.dtype, device=q.device)
    return m, lse, acc, out


# ---- compiling for a GPU without one ------------------------------------------------------------

_STRIDES = (
    "stride_qb stride_qh stride_kh stride_kb stride_kt stride_vh stride_vb stride_vt stride_btb "
    "stride_mb stride_mh stride_ms stride_ab stride_ah stride_as stride_ag TILES_PER_SPLIT"
).split()
_MERGE_STRIDES = (
    "stride_mb",
    "stride_mh",
    "stride_ms",
    "stride_ab",
    "stride_ah",
    "stride_as",
    "stride_ag",
    "stride_ob",
    "stride_oh",
)


def _ptxas(ptx: str, arch: int) -> tuple[bool, int | None, int | None]:
    """Assemble PTX for sm_<arch>a with the ptxas Triton ships: (it assembled, registers a thread,
    bytes of register spill stores)."""
    import os
    import re
    import subprocess
    import tempfile

    bindir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    ptxas = next(
        (os.path.join(bindir, n) for n in ("ptxas-blackwell", "ptxas") if os.path.exists(os.path.join(bindir, n))), "ptxas"
    )
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        r = subprocess.run(
            [ptxas, f"-arch=sm_{arch}a", "-v", src, "-o", os.path.join(d, "k.cubin")], capture_output=True, text=True, timeout=300
        )
    regs = re.search(r"Used (\d+) registers", r.stderr)
    spill = re.search(r"(\d+) bytes spill stores", r.stderr)
    return r.returncode == 0, int(regs.group(1)) if regs else None, int(spill.group(1)) if spill else None


_TRITON_TYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "fp8": "fp8e4nv"}


def static_check(
    d_a: int, d_b: int, dv: int, group: int, block: int, dtype: str = "bfloat16", kv_dtype: str | None = None, arch: int = 90
) -> dict:
    """Compile the partial kernel for sm_<arch> (no GPU needed: Triton compiles for a target) and
    read what it uses: shared memory (Triton's metadata), registers and spills (ptxas -v on its
    PTX, with the ptxas Triton ships), and the same of the merge kernel that follows it.
    ``kv_dtype``: the cache's dtype when it differs (fp8)."""
    import re

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    q_t, kv_t = _TRITON_TYPES[dtype], _TRITON_TYPES[kv_dtype or dtype]
    g_tile, tile, warps, stages = kernel_config(d_a + d_b, group)
    sig = {"Q": f"*{q_t}", "K": f"*{kv_t}", "V": f"*{kv_t}", "BT": "*i32", "LENS": "*i32"}
    sig.update({"M_OUT": "*fp32", "L_OUT": "*fp32", "ACC_OUT": "*fp32", "sm_scale": "fp32", "v_scale": "fp32"})
    sig.update(dict.fromkeys(_STRIDES, "i32"))
    consts = _constexprs(group, g_tile, block, tile, d_a, d_b, dv, d_b > 0)
    sig.update(dict.fromkeys(consts, "constexpr"))
    compiled = triton.compile(
        ASTSource(fn=_paged_partial, signature=sig, constexprs=consts),
        target=GPUTarget("cuda", arch, 32),
        options={"num_warps": warps, "num_stages": stages},
    )
    ok, regs, spill = _ptxas(compiled.asm["ptx"], arch)
    # The merge, as paged_decode launches it (default warps, MERGE_DV output dims a program).
    msig = {"M_IN": "*fp32", "L_IN": "*fp32", "ACC_IN": "*fp32", "OUT": f"*{q_t}"}
    msig.update(dict.fromkeys(_MERGE_STRIDES, "i32"))
    mconsts = {"GROUP": group, "G_TILE": g_tile, "DV": dv, "BLOCK_DV": min(_pow2(dv), MERGE_DV)}
    msig.update(dict.fromkeys(mconsts, "constexpr"))
    msig["SPLITS"] = "i32"
    merged = triton.compile(ASTSource(fn=_paged_merge, signature=msig, constexprs=mconsts), target=GPUTarget("cuda", arch, 32))
    m_ok, m_regs, m_spill = _ptxas(merged.asm["ptx"], arch)
    ttir = compiled.asm["ttir"]
    return {
        "shared_bytes": compiled.metadata.shared,
        "registers": regs,
        "spill_bytes": spill,
        "ptxas_ok": ok and m_ok,
        "i64_pool_offsets": bool(re.search(r"arith.muli .* : tensor<\d+xi64>", ttir)),
        "merge_registers": m_regs,
        "merge_spill_bytes": m_spill,
        "config": {"g_tile": g_tile, "tile": tile, "warps": warps, "stages": stages},
    }
