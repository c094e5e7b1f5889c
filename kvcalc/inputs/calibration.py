"""A calibration file: the step-time constants ``kvcalc calibrate`` fitted, as JSON.

The file is calibrate's own ``--json`` report (or what ``--write`` saved); this module reads back
its ``constants`` and what they were fitted on, and refuses anything else in one line.
"""

from __future__ import annotations

import json
import math
from typing import Any

from kvcalc import files
from kvcalc._record import record
from kvcalc.errors import KvcalcError, closest

KEYS = (
    "eta_bw",
    "eta_gemm",
    "eta_c",
    "eta_c_fp8",
    "eta_c_int8",
    "eta_c_fp4",
    "eta_c_gemm",
    "fixed_s",
    "per_request_s",
    "gemm_latency_s",
    "attn_latency_s",
    "attn_request_s",
    "mla_attn_latency_s",
    "moe_latency_s",
    "moe_quant_s",
    "moe_flashinfer_s",
    "moe_flashinfer_bf16_s",
    "moe_flashinfer_fp4_s",
    "moe_cutlass_fp4_s",
    "kernel_gap_s",
    "eager_launch_s",
    "eager_host_s",
    "alpha_s",
    "link_bytes_per_s",
    "moe_eta_c",
    "moe_imbalance",
    "net_alpha_s",
    "request_overhead_s",
    "tokenize_s_per_token",
    "triton_cta_bytes_per_s",
)
IGNORED = ("origin",)
ACCEPTED = "a JSON file written by kvcalc calibrate (--write FILE, or its --json output)"
LIMIT = 16 * 2**20
RANGES = {
    "eta_bw": (0.01, 1.0, True),
    "eta_gemm": (0.01, 1.0, True),
    "eta_c": (0.01, 1.0, True),
    "eta_c_fp8": (0.01, 1.0, True),
    "eta_c_int8": (0.01, 1.0, True),
    "eta_c_fp4": (0.01, 1.0, True),
    "eta_c_gemm": (0.01, 1.0, True),
    "fixed_s": (0.0, 10.0, True),
    "per_request_s": (0.0, 10.0, True),
    "kernel_gap_s": (0.0, 10.0, True),
    "eager_launch_s": (0.0, 10.0, True),
    "eager_host_s": (0.0, 10.0, True),
    "gemm_latency_s": (0.0, 10.0, True),
    "attn_latency_s": (0.0, 10.0, True),
    "attn_request_s": (0.0, 10.0, True),
    "mla_attn_latency_s": (0.0, 10.0, True),
    "moe_latency_s": (0.0, 10.0, True),
    "moe_quant_s": (0.0, 10.0, True),
    "moe_flashinfer_s": (0.0, 10.0, True),
    "moe_flashinfer_bf16_s": (0.0, 10.0, True),
    "moe_flashinfer_fp4_s": (0.0, 10.0, True),
    "moe_cutlass_fp4_s": (0.0, 10.0, True),
    "tokenize_s_per_token": (0.0, 10.0, True),
    "alpha_s": (0.0, 10.0, True),
    "link_bytes_per_s": (0.0, 1e15, False),
    "request_overhead_s": (0.0, 10.0, True),
    "moe_eta_c": (0.01, 1.0, True),
    "moe_imbalance": (1.0, 16.0, True),
    "net_alpha_s": (0.0, 10.0, True),
    "triton_cta_bytes_per_s": (1e6, 1e13, True),
}


@record(frozen=True)
class CalibrationFile:
    constants: dict[str, float | None]
    model: str
    gpu: str
    tp: list[int]


def read_calibration(path: str) -> CalibrationFile:
    text = files.read_text(path, LIMIT, ACCEPTED)
    return parse_calibration(text, path)


def parse_calibration(text: str, where: str) -> CalibrationFile:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as e:
        raise KvcalcError(f"not JSON ({str(e)[:60]})", where, ACCEPTED) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("constants"), dict):
        raise KvcalcError("no 'constants' object", where, ACCEPTED)
    raw: dict[str, Any] = doc["constants"]
    unknown = sorted(k for k in raw if k not in KEYS and k not in IGNORED)
    if unknown:
        near = closest(unknown[0][:40], KEYS)
        accepted = f"did you mean {', '.join(near)}?" if near else ", ".join(KEYS)
        raise KvcalcError(f"unknown constant {unknown[0][:40]!r}", f"{where}: constants", accepted)
    out: dict[str, float | None] = {}
    for k in KEYS:
        if k not in raw:
            continue
        v = raw[k]
        if v is None and k in (
            "alpha_s",
            "link_bytes_per_s",
            "net_alpha_s",
            "eta_gemm",
            "eta_c_gemm",
            "gemm_latency_s",
            "attn_request_s",
            "mla_attn_latency_s",
            "moe_eta_c",
        ):
            out[k] = None
            continue
        lo, hi, zero_ok = RANGES[k]
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float))
            or not math.isfinite(v)
            or not ((lo < v or (zero_ok and v == lo)) and v <= hi)
        ):
            raise KvcalcError(
                f"{k} is {str(v)[:40]!r}", f"{where}: constants.{k}", f"a number in {'[' if zero_ok else '('}{lo:g}, {hi:g}]"
            )
        out[k] = float(v)
    if "eta_bw" in out and "eta_gemm" not in raw:
        # A file from before eta_gemm: its fitted eta_bw covered the matmuls' weight reads too.
        out["eta_gemm"] = out["eta_bw"]
    model, gpu, tp = doc.get("model", ""), doc.get("gpu", ""), doc.get("tp", [])
    if not isinstance(model, str) or not isinstance(gpu, str):
        raise KvcalcError("model and gpu must be names", where, ACCEPTED)
    if isinstance(tp, int):
        tp = [tp]
    if not isinstance(tp, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in tp):
        raise KvcalcError("tp must be a list of whole numbers", f"{where}: tp", ACCEPTED)
    return CalibrationFile(out, model, gpu, tp)
