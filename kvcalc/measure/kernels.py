"""The decode-attention implementations a measurement times, each a function step(cache) -> out."""

from __future__ import annotations

from kvcalc.measure.cache import PagedCache, gather


def cpu_paged(c: PagedCache):
    """The best plain-torch paged path: gather every page the batch needs with one index_select
    into a preallocated buffer (head-major pool, so each head's pages stay contiguous), then two
    matmuls per sequence on views of it."""
    import torch

    geo = c.geo
    bs = geo.block_size
    need = [-(-n // bs) for n in c.lens]
    flat = torch.cat([c.block_table[b, :n] for b, n in enumerate(need)]).long()
    kbuf = torch.empty((geo.n_kv, flat.numel(), bs, geo.d_k), dtype=c.k_pool.dtype, device=c.k_pool.device)
    vbuf = (
        None if geo.v_from_k else torch.empty((geo.n_kv, flat.numel(), bs, geo.dv), dtype=c.v_pool.dtype, device=c.v_pool.device)
    )
    out = torch.empty((len(c.lens), geo.n_q, geo.dv), dtype=c.q.dtype, device=c.q.device)
    offs = [0]
    for n in need:
        offs.append(offs[-1] + n)
    qg = c.q.view(len(c.lens), geo.n_kv, geo.group, geo.d_k)
    if c.fp8:
        # fp8 pages are gathered as bytes, then dequantized into the query's dtype.
        kbuf = kbuf.view(torch.uint8)
        vbuf = None if vbuf is None else vbuf.view(torch.uint8)
        kq = torch.empty(kbuf.shape, dtype=c.q.dtype, device=c.q.device)
        vq = None if vbuf is None else torch.empty(vbuf.shape, dtype=c.q.dtype, device=c.q.device)
        kpool8, vpool8 = c.k_pool.view(torch.uint8), (None if geo.v_from_k else c.v_pool.view(torch.uint8))

    def gathered():
        if not c.fp8:
            torch.index_select(c.k_pool, 1, flat, out=kbuf)
            if vbuf is not None:
                torch.index_select(c.v_pool, 1, flat, out=vbuf)
            return kbuf, vbuf
        torch.index_select(kpool8, 1, flat, out=kbuf)
        kq.copy_(kbuf.view(torch.float8_e4m3fn)).mul_(c.k_scale)
        if vbuf is not None:
            torch.index_select(vpool8, 1, flat, out=vbuf)
            vq.copy_(vbuf.view(torch.float8_e4m3fn)).mul_(c.v_scale)
        return kq, vq

    def step():
        kb, vb = gathered()
        for b, n in enumerate(c.lens):
            k = kb[:, offs[b] : offs[b + 1]].reshape(geo.n_kv, -1, geo.d_k)[:, :n]
            v = k[..., : geo.dv] if vb is None else vb[:, offs[b] : offs[b + 1]].reshape(geo.n_kv, -1, geo.dv)[:, :n]
            s = torch.matmul(qg[b], k.transpose(1, 2)).mul_(c.sm_scale)
            p = torch.softmax(s, dim=-1)
            out[b] = torch.matmul(p, v).reshape(geo.n_q, geo.dv)
        return out

    return step


def dense_sdpa(c: PagedCache):
    """Baseline: the same attention on a contiguous cache [B, n_kv, max_len, d] (built outside the
    timed step), with a mask for shorter sequences."""
    import torch
    import torch.nn.functional as F

    geo = c.geo
    B, S = len(c.lens), max(c.lens)
    k = torch.zeros((B, geo.n_kv, S, geo.d_k), dtype=c.q.dtype, device=c.k_pool.device)
    v = torch.zeros((B, geo.n_kv, S, geo.dv), dtype=c.q.dtype, device=c.k_pool.device)
    for b, n in enumerate(c.lens):
        kb, vb = gather(c, b)
        k[b, :, :n], v[b, :, :n] = kb, vb
    mask = None
    if min(c.lens) != S:
        idx = torch.arange(S, device=k.device)
        mask = (idx[None, :] < torch.tensor(c.lens, device=k.device)[:, None])[:, None, None, :]
    q = c.q.view(B, geo.n_q, 1, geo.d_k)
    if geo.n_kv != geo.n_q:
        k = k.repeat_interleave(geo.group, dim=1)
        v = v.repeat_interleave(geo.group, dim=1)

    def step():
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=c.sm_scale).view(B, geo.n_q, geo.dv)

    return step


def gather_sdpa(c: PagedCache):
    """Baseline: the naive paged path, gathering each sequence's pages into a contiguous copy, then SDPA."""
    import torch
    import torch.nn.functional as F

    geo = c.geo

    def step():
        outs = []
        for b in range(len(c.lens)):
            k, v = gather(c, b)
            if geo.n_kv != geo.n_q:
                k = k.repeat_interleave(geo.group, dim=0)
                v = v.repeat_interleave(geo.group, dim=0)
            q = c.q[b].view(geo.n_q, 1, geo.d_k)
            outs.append(F.scaled_dot_product_attention(q, k, v, scale=c.sm_scale).view(geo.n_q, geo.dv))
        return torch.stack(outs)

    return step


def triton_paged(c: PagedCache, sms: int = 132, splits: int | None = None):
    """The project's Triton kernel (kvcalc.measure.triton_paged)."""
    from kvcalc.measure.triton_paged import kernel_config, make_workspace, paged_decode, plan_splits

    geo = c.geo
    g_tile, tile, _, _ = kernel_config(geo.d_k, geo.group)
    n_tiles = -(-geo.group // g_tile)
    max_tiles = -(-c.block_table.shape[1] * geo.block_size // tile)
    sp = splits or plan_splits(len(c.lens), geo.n_kv * n_tiles, max_tiles, sms)
    ws = make_workspace(c.q, geo.n_kv, sp, g_tile * n_tiles, geo.dv)

    def step():
        return paged_decode(
            c.q,
            c.k_pool,
            c.v_pool,
            c.block_table,
            c.seq_lens,
            group=geo.group,
            d_a=geo.d_a,
            d_b=geo.d_b,
            dv=geo.dv,
            v_from_k=geo.v_from_k,
            sm_scale=c.sm_scale,
            splits=sp,
            sms=sms,
            workspace=ws,
            k_scale=c.k_scale,
            v_scale=c.v_scale,
        )

    return step
