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
