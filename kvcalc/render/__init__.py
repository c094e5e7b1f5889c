"""Rendering reports: one module per report for people (rich tables, charts), one ``to_json`` for
scripts. Render computes nothing and imports no engine function: it reads the report's fields.
"""

from __future__ import annotations

import importlib
from typing import Any

from kvcalc.render.json import emit_json, to_json, to_plain

# Report class -> (module, function) that draws it as text.
RENDERERS = {
    "SizeReport": ("kvcalc.render.size", "render"),
    "FitReport": ("kvcalc.render.fit", "render"),
    "RooflineReport": ("kvcalc.render.roofline", "render"),
    "PagingReport": ("kvcalc.render.paging", "render"),
    "TiersReport": ("kvcalc.render.tiers", "render"),
    "ExplainLogReport": ("kvcalc.render.explain", "render"),
    "CheckReport": ("kvcalc.render.check", "render"),
    "ModelsReport": ("kvcalc.render.catalog", "render_models"),
    "GPUsReport": ("kvcalc.render.catalog", "render_gpus"),
    "ModelReport": ("kvcalc.render.catalog", "render_show_model"),
    "GPUReport": ("kvcalc.render.catalog", "render_show_gpu"),
    "ImportReport": ("kvcalc.render.catalog", "render_import"),
    "MeasureResult": ("kvcalc.render.measure", "render"),
    "SimulationReport": ("kvcalc.render.simulate", "render"),
    "PlanReport": ("kvcalc.render.plan", "render"),
    "ThroughputReport": ("kvcalc.render.plan", "render_throughput"),
    "EnginesReport": ("kvcalc.render.engines", "render"),
    "CalibrationReport": ("kvcalc.render.calibrate", "render"),
}
# Renderers that say where defaults came from themselves (in their header line).
OWN_ORIGIN = {"RooflineReport"}


def show(report: Any, origin: dict[str, str] | None = None, as_json: bool = False, **options: Any) -> None:
    """Print a report: its JSON, or its table (``options`` go to the table renderer)."""
    if as_json:
        emit_json(report, origin)
        return
    name = type(report).__name__
    module, fn = RENDERERS[name]
    draw = getattr(importlib.import_module(module), fn)
    if name in OWN_ORIGIN:
        draw(report, origin=origin, **options)
        return
    if origin:
        from kvcalc.render.console import console, origin_line

        origin_line(console(), origin)
    draw(report, **options)


__all__ = ["emit_json", "show", "to_json", "to_plain"]
