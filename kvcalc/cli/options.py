"""Parsing what people type into numbers (units live in kvcalc.units)."""

from __future__ import annotations

from kvcalc.errors import KvcalcError
from kvcalc.units import parse_count, parse_size, parse_tokens


def tokens(v: str, where: str) -> int:
    return parse_tokens(v, where)


def count(v: str | int | None, where: str, minimum: int = 1) -> int | None:
    return None if v is None else parse_count(v, where, minimum)


def size(v: str | None, where: str) -> int | None:
    return None if v is None else parse_size(v, where)


def fraction(v: str | None, where: str) -> float | None:
    if v is None:
        return None
    try:
        f = float(v)
    except ValueError:
        raise KvcalcError(f"cannot read {v!r} as a fraction", where, "a number in (0, 1], e.g. 0.9") from None
    if not 0 < f <= 1:
        raise KvcalcError(f"{v} is outside (0, 1]", where, "a number in (0, 1], e.g. 0.9")
    return f


def model_and_gpu(model: str | None, gpu: str | None, need_gpu: bool = True):
    """Resolve --model and --gpu, falling back to the defaults; returns (model, gpu, inputs echo)."""
    from kvcalc.defaults import default
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    echo = {}
    if model is None:
        model, src = default("model")
        echo["model_from"] = src
    m = resolve_model(model, "--model" if "model_from" not in echo else echo["model_from"])
    echo["model"] = m.name
    g = None
    if need_gpu:
        if gpu is None:
            gpu, src = default("gpu")
            echo["gpu_from"] = src
        g = resolve_gpu(gpu, "--gpu" if "gpu_from" not in echo else echo["gpu_from"])
        echo["gpu"] = g.name
    return m, g, echo
