"""kvcalc size: KV bytes per token, per request, per batch."""

from __future__ import annotations

from typing import Any

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit


def size(
    seq: opt.Seq,
    model: opt.ModelOpt = None,
    batch: opt.Batch = "1",
    kv_dtype: opt.KVDtypeOpt = "auto",
    tp: opt.TP = "1",
    pp: opt.PP = "1",
    dp: opt.DP = "1",
    ep: opt.EP = "1",
    block_size: opt.BlockSize = None,
    engine: opt.EngineOpt = "",
    max_num_batched_tokens: opt.MaxBatchedTokens = None,
    as_json: opt.Json = False,
) -> Any:
    """KV-cache bytes per token, per request and per batch, by layer kind: logical bytes, or with
    --engine what that engine allocates (its blocks, window reservations and grouping).

    Example: kvcalc size --model llama3.1-70b --seq 32k --batch 8 --kv-dtype fp8 --tp 4
    """
    from kvcalc.engine.alloc import Allocation
    from kvcalc.engine.deployment import Shape, check_shape
    from kvcalc.engine.kv import engine_allocation, kv_size

    m, _, origin = opt.model_and_gpu(model, None, need_gpu=False)
    bs = opt.block(block_size)
    eng = opt.engine(engine) if engine else None
    pp_n = opt.parallel(pp, "--pp")
    tp_n, dp_n = opt.parallel(tp, "--tp"), opt.parallel(dp, "--dp")
    check_shape(m, Shape(tp_n, pp_n, dp_n, opt.parallel(ep, "--ep")), eng)
    alloc = engine_allocation(eng, m, bs, opt.batched_tokens(max_num_batched_tokens), pp_n) if eng else Allocation(block_size=bs)
    r = kv_size(
        m,
        opt.tokens(seq, "--seq"),
        opt.batch(batch),
        opt.kv(kv_dtype),
        tp_n,
        pp_n,
        alloc,
        eng,
        dp_n,
    )
    return emit(r, origin, as_json)
