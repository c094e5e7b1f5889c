"""Checked by mypy --strict (tests/test_quality.py): the public API has real types, not Any.

Nothing here is annotated but the returns, so an export typed Any (as the lazy module
__getattr__ alone gives) fails: "Returning Any from function declared to return int"."""

from __future__ import annotations

import kvcalc


def per_request(model_name: str) -> int:
    return kvcalc.kv_size(kvcalc.load_model(model_name), seq=4096).kv_bytes_per_request


def pool(model_name: str, gpu_name: str) -> int:
    return kvcalc.fit(kvcalc.load_model(model_name), kvcalc.load_gpu(gpu_name), kvcalc.FitInputs(seq=8192)).kv_pool_bytes


def step_ms(model_name: str, gpu_name: str) -> float:
    sm = kvcalc.StepModel(kvcalc.load_model(model_name), kvcalc.load_gpu(gpu_name), kvcalc.kv_dtype("bf16"))
    return sm.step(32, 4096).t_step_s * 1e3


def runs(text: str) -> int:
    return len(kvcalc.parse_bench(text, "pasted"))


def deployments() -> float:
    """Issue 18's library calls, typed: a shape, a fit with DP attention, the most 8 GPUs carry."""
    s: kvcalc.Shape = kvcalc.Shape(tp=1, dp=8, ep=8)
    m, g = kvcalc.load_model("qwen3-30b-a3b"), kvcalc.load_gpu("h100")
    r: kvcalc.FitReport = kvcalc.fit(m, g, kvcalc.FitInputs(seq=4096, tp=s.tp, dp=s.dp, ep=s.ep))
    t = kvcalc.max_throughput(m, g, 8, 1000, 200, kvcalc.SLO(1.0, 0.05), kvcalc.kv_dtype("bf16"), kvcalc.load_engine("vllm"))
    return float(r.max_concurrency_total) + t.aggregated.output_tokens_per_s_per_gpu
