"""A full decode step on random weights with the model's real shapes, timed whole and by part.

Every layer's attention projections and MLP (for MoE layers, the routed experts a batch of b
tokens reaches on average, E x (1 - (1 - k/E)^b), each over its share of the tokens, plus any
shared experts), its paged attention over its own cache, and the LM head. When the model does not
fit the device, a run of consecutive layers that fits is timed and scaled by the layer count (the
head once), and the result says so. The bound is kvcalc's for the same step: weights read + KV
read over the bandwidth against the FLOPs over the peak, reported per term.
"""

from __future__ import annotations

import math
from typing import Any


def layer_shapes(model: Any, batch: int) -> list[tuple[int, int, int]]:
    """(rows, in, out) of one layer's matrix products at a decode step of ``batch`` tokens."""
    from kvcalc.engine.weights import moe_width

    H = model.hidden_size
    proj: list[tuple[int, int]] = next((p for p in (k.projection_shapes(H) for k in model.kinds()) if p), [])
    shapes = [(batch, i, o) for i, o in proj]
    m = model.moe
    if m is None:
        inter = model.intermediate_size or 4 * H
        return shapes + [(batch, H, 2 * inter), (batch, inter, H)]
    E, k = m.num_experts, m.num_experts_per_tok
    reached = max(1, math.ceil(E * (1 - (1 - k / E) ** batch)))
    rows = max(1, math.ceil(batch * k / reached))
    w = moe_width(model)
    shapes += [(rows, H, 2 * w), (rows, w, H)] * reached
    shared = getattr(model.params, "shared_experts", 0) if model.params else 0
    if shared:
        per_layer = shared // max(m.num_moe_layers, 1)
        inter = max(per_layer // (3 * H), 1)
        shapes += [(batch, H, 2 * inter), (batch, inter, H)]
    return shapes


def full_step(
    model: Any,
    lens: list[int],
    device: str,
    dtype: Any,
    kv_fp8: bool,
    block: int,
    bw: float,
    peak: float,
    sms: int,
    l2: int,
    runs: int | None,
    seed: int = 0,
) -> dict[str, Any]:
    import torch

    from kvcalc.measure.cache import build, geometry_from_model, step_bytes, step_flops
    from kvcalc.measure.device import _free_bytes, _kernel
    from kvcalc.measure.timing import time_cpu, time_cuda_rotating

    b = len(lens)
    L = model.num_layers
    H = model.hidden_size
    geo = geometry_from_model(model, block)
    elt = torch.tensor([], dtype=dtype).element_size()
    shapes = layer_shapes(model, b)
    w_layer = sum(i * o for _, i, o in shapes) * elt
    head_bytes = H * model.vocab_size * elt
    kv_layer = step_bytes(geo, lens, elt, 1 if kv_fp8 else elt)
    pages = sum(-(-n // block) for n in lens)
    cache_layer = pages * block * geo.n_kv * (geo.d_k + (0 if geo.v_from_k else geo.dv)) * (1 if kv_fp8 else elt)
    # Half the free memory on a GPU; on a CPU at most 1 GiB of layers (a CPU run checks the method,
    # it does not stream a real model's weights).
    budget = min(0.5 * _free_bytes(device), float("inf") if device == "cuda" else float(2**30)) - head_bytes
    timed = max(1, min(L, int(budget // max(w_layer + cache_layer, 1))))
    g = torch.Generator(device="cpu").manual_seed(seed)

    def rand(*shape: int) -> Any:
        return (torch.randn(*shape, generator=g) * 0.02).to(dtype=dtype, device=device)

    mats = [[(r, rand(i, o)) for r, i, o in shapes] for _ in range(timed)]
    caches = [build(geo, lens, dtype, device, seed=seed + 100 + j, kv_fp8=kv_fp8) for j in range(timed)]
    kname = "triton-paged" if device == "cuda" else "cpu-paged"
    attn = [_kernel(kname, c, sms) for c in caches]
    head = rand(H, model.vocab_size)
    xs = {i: rand(b, i) for _, i, _ in shapes}
    x = rand(b, H)

    def matmuls(j: int) -> None:
        for r, w in mats[j]:
            xs[w.shape[0]][:r] @ w

    def weights_part() -> None:
        for j in range(timed):
            matmuls(j)

    def attention_part() -> None:
        for f in attn:
            f()

    def head_part() -> Any:
        return x @ head

    def whole() -> None:
        for j in range(timed):
            matmuls(j)
            attn[j]()
        head_part()

    def timer(f: Any) -> tuple[float, float, float]:
        if device == "cuda":
            med, p10, p90, _, _ = time_cuda_rotating([f], runs=runs or 30)
        else:
            med, p10, p90, _ = time_cpu(f, runs=runs or 10, warmup=2)
        return med, p10, p90

    t_whole, p10, p90 = timer(whole)
    t_w = timer(weights_part)[0]
    t_a = timer(attention_part)[0]
    t_h = timer(head_part)[0]
    scale = L / timed
    t_step = (t_whole - t_h) * scale + t_h
    weight_bytes = w_layer * L + head_bytes
    kv_bytes = kv_layer * L
    flops = 2 * sum(r * i * o for r, i, o in shapes) * L + 2 * b * H * model.vocab_size + step_flops(geo, lens) * L
    t_wb, t_kvb, t_cb = weight_bytes / bw, kv_bytes / bw, flops / peak
    bound = max(t_wb + t_kvb, t_cb)
    return {
        "layers": L,
        "layers_timed": timed,
        "scaled": timed < L,
        "t_measured_s": t_step,
        "t_p10_s": (p10 - t_h) * scale + t_h,
        "t_p90_s": (p90 - t_h) * scale + t_h,
        "t_bound_s": bound,
        "measured_over_bound": t_step / bound,
        "weights": {"bytes": weight_bytes, "t_measured_s": t_w * scale + t_h, "t_bound_s": t_wb},
        "kv": {"bytes": kv_bytes, "t_measured_s": t_a * scale, "t_bound_s": t_kvb},
        "compute": {"flops": flops, "t_bound_s": t_cb},
        "bound_by": "memory" if t_wb + t_kvb >= t_cb else "compute",
        "note": (
            f"{timed} of {L} layers timed and scaled by {scale:.2f} (the head once): "
            + ("the model does not fit this device" if device == "cuda" else "a CPU run times at most 1 GiB of layers")
            if timed < L
            else f"all {L} layers timed"
        )
        + "; every layer uses the model's first attention geometry",
    }
