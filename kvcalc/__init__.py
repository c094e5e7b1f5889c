"""kvcalc: KV-cache capacity planning and decode roofline for LLM serving.

The library API (no I/O in the engine; spec loading in ``kvcalc.specs``)::

    import kvcalc
    m = kvcalc.load_model("llama2-7b")
    kvcalc.kv_size(m, seq=4096).kv_bytes_per_request   # 2147483648
"""

__version__ = "0.1.0"

_LAZY = {
    "load_model": ("kvcalc.specs.catalog", "resolve_model"),
    "load_gpu": ("kvcalc.specs.catalog", "resolve_gpu"),
    "ModelSpec": ("kvcalc.specs.model", "ModelSpec"),
    "GPUSpec": ("kvcalc.specs.gpu", "GPUSpec"),
    "spec_from_config": ("kvcalc.specs.hf", "spec_dict_from_config"),
    "kv_size": ("kvcalc.engine.kv", "kv_size"),
    "request_bytes": ("kvcalc.engine.kv", "request_bytes"),
    "KVSize": ("kvcalc.engine.kv", "KVSize"),
    "fit": ("kvcalc.engine.memory", "fit"),
    "plan": ("kvcalc.engine.memory", "plan"),
    "FitInputs": ("kvcalc.engine.memory", "FitInputs"),
    "FitResult": ("kvcalc.engine.memory", "FitResult"),
    "weights": ("kvcalc.engine.memory", "weights"),
    "ENGINES": ("kvcalc.engine.memory", "ENGINES"),
    "Allocation": ("kvcalc.engine.layers", "Allocation"),
    "kv_dtype": ("kvcalc.engine.dtypes", "kv_dtype"),
    "KvcalcError": ("kvcalc.errors", "KvcalcError"),
    "parse_size": ("kvcalc.units", "parse_size"),
    "parse_tokens": ("kvcalc.units", "parse_tokens"),
}
__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod), attr)
    raise AttributeError(f"module 'kvcalc' has no attribute {name!r}")
