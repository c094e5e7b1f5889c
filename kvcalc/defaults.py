"""Default model and GPU: $KVCALC_MODEL / $KVCALC_GPU, then kvcalc.toml or [tool.kvcalc] in
pyproject.toml (in this folder or one above it), then the built-in ones."""

from __future__ import annotations

import os
from pathlib import Path

from kvcalc.errors import KvcalcError

BUILTIN = {"model": "llama3.1-8b", "gpu": "h100-sxm"}


def _toml(path: Path) -> dict:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise KvcalcError(f"cannot read defaults: {e}", str(path), "valid TOML with model = '...' and gpu = '...'") from None


def _from_files(start: Path) -> tuple[dict, str] | None:
    for d in (start, *start.parents):
        f = d / "kvcalc.toml"
        if f.is_file():
            return _toml(f), str(f)
        p = d / "pyproject.toml"
        if p.is_file():
            doc = _toml(p).get("tool", {}).get("kvcalc")
            if isinstance(doc, dict):
                return doc, f"{p} [tool.kvcalc]"
    return None


def default(kind: str) -> tuple[str, str]:
    """(name, where it came from) for kind 'model' or 'gpu'."""
    env = os.environ.get(f"KVCALC_{kind.upper()}")
    if env:
        return env, f"$KVCALC_{kind.upper()}"
    found = _from_files(Path.cwd())
    if found:
        doc, where = found
        v = doc.get(kind)
        if v is not None:
            if not isinstance(v, str) or not v:
                raise KvcalcError(f"{kind} must be a name or a path", where, f"{kind} = 'name'")
            return v, where
    return BUILTIN[kind], "built-in default"
