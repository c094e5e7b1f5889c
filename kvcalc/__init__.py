"""kvcalc: KV-cache capacity planning and decode roofline for LLM serving.

The library API (no I/O in the engine; spec loading in ``kvcalc.specs``)::

    import kvcalc
    m = kvcalc.load_model("llama2-7b")
    kvcalc.kv_size(m, seq=4096).kv_bytes_per_request   # 2147483648
"""

from typing import Any

__version__ = "0.3.0"

_LAZY = {
    "load_model": ("kvcalc.specs.catalog", "resolve_model"),
    "load_gpu": ("kvcalc.specs.catalog", "resolve_gpu"),
    "ModelSpec": ("kvcalc.specs.model", "ModelSpec"),
    "GPUSpec": ("kvcalc.specs.gpu", "GPUSpec"),
    "spec_from_config": ("kvcalc.specs.hf", "spec_dict_from_config"),
    "kv_dtype": ("kvcalc.specs.dtypes", "kv_dtype"),
    "KVFootprint": ("kvcalc.engine.kv", "KVFootprint"),
    "kv_size": ("kvcalc.engine.kv", "kv_size"),
    "request_bytes": ("kvcalc.engine.kv", "request_bytes"),
    "SizeReport": ("kvcalc.engine.kv", "SizeReport"),
    "fit": ("kvcalc.engine.memory", "fit"),
    "reverse": ("kvcalc.engine.plan", "reverse"),
    "FitInputs": ("kvcalc.engine.memory", "FitInputs"),
    "FitReport": ("kvcalc.engine.memory", "FitReport"),
    "weights": ("kvcalc.engine.weights", "weights"),
    "roofline": ("kvcalc.engine.roofline", "roofline"),
    "simulate": ("kvcalc.engine.simulate", "simulate"),
    "Workload": ("kvcalc.engine.simulate", "Workload"),
    "SimSettings": ("kvcalc.engine.simulate", "SimSettings"),
    "parse_policies": ("kvcalc.engine.simulate", "parse_policies"),
    "StepModel": ("kvcalc.engine.steptime", "StepModel"),
    "StepConstants": ("kvcalc.engine.steptime", "StepConstants"),
    "calibrate": ("kvcalc.engine.calibrate", "calibrate"),
    "parse_bench": ("kvcalc.inputs.bench", "parse_bench"),
    "plan": ("kvcalc.engine.plan", "plan"),
    "Traffic": ("kvcalc.engine.plan", "Traffic"),
    "SLO": ("kvcalc.engine.plan", "SLO"),
    "explain": ("kvcalc.engine.explain", "explain"),
    "parse_log": ("kvcalc.inputs.logs", "parse_startups"),
    "decode_bound": ("kvcalc.engine.roofline", "decode_bound"),
    "decode_grid": ("kvcalc.engine.roofline", "decode_grid"),
    "ENGINES": ("kvcalc.engine.engines", "ENGINES"),
    "load_engine": ("kvcalc.engine.engines", "engine"),
    "Allocation": ("kvcalc.engine.alloc", "Allocation"),
    "KvcalcError": ("kvcalc.errors", "KvcalcError"),
    "parse_size": ("kvcalc.units", "parse_size"),
    "parse_tokens": ("kvcalc.units", "parse_tokens"),
    "to_json": ("kvcalc.render.json", "to_json"),
}
__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod), attr)
    raise AttributeError(f"module 'kvcalc' has no attribute {name!r}")
