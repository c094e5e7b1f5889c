"""The JSON contract, in one place: every command's ``--json`` is ``to_json(report)``.

A report is a frozen dataclass; its JSON is its fields, recursively. Keys are snake_case, bytes
integer ``*_bytes``, times float seconds ``*_s``; NaN and infinities become null. An object may
shape its own JSON with a ``__json__()`` method (a grid's points stored by column). The one
reshaping of the contract: a roofline of one point prints that point's fields at the top level
(as well as ``rows``), as it always has.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from typing import Any

from kvcalc._version import __version__

BIG_DOCUMENT = 2000
"""Reports with more rows than this print compact JSON (the indenting encoder is pure Python)."""
SCHEMA_VERSION = 1
"""The --json documents' schema: raised when a key is renamed or removed (an added key keeps it)."""


def to_plain(obj: Any) -> Any:
    hook = getattr(obj, "__json__", None)
    if hook is not None and not isinstance(obj, type):
        return to_plain(hook())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, int) or obj is None or isinstance(obj, (str, bool)):
        return obj
    item = getattr(obj, "item", None)  # numpy scalars
    if item is not None:
        return to_plain(item())
    return str(obj)


def _fast_rows(rows: Any) -> list[dict[str, Any]]:
    """Rows that already are plain dicts of plain values (a grid's columns) pass as they are."""
    hook = getattr(rows, "__json__", None)
    return hook() if hook is not None else [to_plain(r) for r in rows]


def to_json(report: Any, origin: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON object a command prints for its report; ``origin`` says where defaults came from."""
    name = type(report).__name__
    doc: dict[str, Any]
    if name == "RooflineReport":
        doc = {
            f.name: (_fast_rows(report.rows) if f.name == "rows" else to_plain(getattr(report, f.name)))
            for f in dataclasses.fields(report)
        }
        if len(report.rows) == 1:
            point: dict[str, Any] = doc["rows"][0]
            doc = {**doc, **point, "warnings": doc["warnings"] + point["warnings"]}
    else:
        doc = to_plain(report)
    if origin and isinstance(doc.get("inputs"), dict):
        doc["inputs"] = {**doc["inputs"], **origin}
    return {"kvcalc_version": __version__, "schema_version": SCHEMA_VERSION, **doc}


def dumps(doc: dict[str, Any]) -> str:
    rows = doc.get("rows")
    big = isinstance(rows, list) and len(rows) > BIG_DOCUMENT
    return json.dumps(doc, ensure_ascii=False, **({"separators": (",", ":")} if big else {"indent": 2})) + "\n"


def emit_json(report: Any, origin: dict[str, str] | None = None) -> None:
    sys.stdout.write(dumps(to_json(report, origin)))
