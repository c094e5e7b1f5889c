"""kvcalc: KV-cache capacity planning and decode roofline for LLM serving.

The library API (no I/O in the engine; spec loading in ``kvcalc.specs``)::

    import kvcalc
    m = kvcalc.load_model("llama2-7b")
    kvcalc.kv_size(m, seq=4096).kv_bytes_per_request   # 2147483648
"""

from typing import TYPE_CHECKING, Any

from kvcalc._version import __version__

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
    "util_to_hold": ("kvcalc.engine.plan", "util_to_hold"),
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
    "max_throughput": ("kvcalc.engine.plan", "max_throughput"),
    "Shape": ("kvcalc.engine.deployment", "Shape"),
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
# Written out (not sorted(_LAZY)) so that linters and type checkers see the names; a test holds the two equal.
__all__ = [
    "Allocation",
    "ENGINES",
    "FitInputs",
    "FitReport",
    "GPUSpec",
    "KVFootprint",
    "KvcalcError",
    "ModelSpec",
    "SLO",
    "Shape",
    "SimSettings",
    "SizeReport",
    "StepConstants",
    "StepModel",
    "Traffic",
    "Workload",
    "calibrate",
    "decode_bound",
    "decode_grid",
    "explain",
    "fit",
    "kv_dtype",
    "kv_size",
    "load_engine",
    "load_gpu",
    "load_model",
    "max_throughput",
    "parse_bench",
    "parse_log",
    "parse_policies",
    "parse_size",
    "parse_tokens",
    "plan",
    "request_bytes",
    "reverse",
    "roofline",
    "simulate",
    "spec_from_config",
    "to_json",
    "util_to_hold",
    "weights",
    "__version__",
]

if TYPE_CHECKING:
    # What the lazy names below are, for type checkers (mypy, pyright): the real types, not Any.
    from kvcalc.engine.alloc import Allocation as Allocation
    from kvcalc.engine.calibrate import calibrate as calibrate
    from kvcalc.engine.deployment import Shape as Shape
    from kvcalc.engine.engines import ENGINES as ENGINES, engine as load_engine
    from kvcalc.engine.explain import explain as explain
    from kvcalc.engine.kv import (
        KVFootprint as KVFootprint,
        SizeReport as SizeReport,
        kv_size as kv_size,
        request_bytes as request_bytes,
    )
    from kvcalc.engine.memory import FitInputs as FitInputs, FitReport as FitReport, fit as fit
    from kvcalc.engine.plan import (
        SLO as SLO,
        Traffic as Traffic,
        max_throughput as max_throughput,
        plan as plan,
        reverse as reverse,
        util_to_hold as util_to_hold,
    )
    from kvcalc.engine.roofline import decode_bound as decode_bound, decode_grid as decode_grid, roofline as roofline
    from kvcalc.engine.simulate import (
        SimSettings as SimSettings,
        Workload as Workload,
        parse_policies as parse_policies,
        simulate as simulate,
    )
    from kvcalc.engine.steptime import StepConstants as StepConstants, StepModel as StepModel
    from kvcalc.engine.weights import weights as weights
    from kvcalc.errors import KvcalcError as KvcalcError
    from kvcalc.inputs.bench import parse_bench as parse_bench
    from kvcalc.inputs.logs import parse_startups as parse_log
    from kvcalc.render.json import to_json as to_json
    from kvcalc.specs.catalog import resolve_gpu as load_gpu, resolve_model as load_model
    from kvcalc.specs.dtypes import kv_dtype as kv_dtype
    from kvcalc.specs.gpu import GPUSpec as GPUSpec
    from kvcalc.specs.hf import spec_dict_from_config as spec_from_config
    from kvcalc.specs.model import ModelSpec as ModelSpec
    from kvcalc.units import parse_size as parse_size, parse_tokens as parse_tokens


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod), attr)
    raise AttributeError(f"module 'kvcalc' has no attribute {name!r}")
