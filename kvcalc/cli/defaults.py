"""Default model and GPU: $KVCALC_MODEL / $KVCALC_GPU, then kvcalc.toml or [tool.kvcalc] in
pyproject.toml (in this folder or the nearest one above it that has either), then the built-in
ones. Whichever is used, the command says so."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from kvcalc import files
from kvcalc.errors import KvcalcError

BUILTIN = {"model": "llama3.1-8b", "gpu": "h100-sxm"}
ACCEPTED = (
    "UTF-8 TOML with model, gpu, calibration, engine, kv_dtype, tp, util, block_size, attention_backend, moe_backend, all_reduce_backend and scheduler_recv_interval keys (kvcalc.toml, or "
    "[tool.kvcalc] in pyproject.toml)"
)


def _toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    text = files.read_text(path, files.SPEC_LIMIT, ACCEPTED)
    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError) as e:
        raise KvcalcError(f"cannot read defaults: {e}", str(path), ACCEPTED) from None


OPTION_KEYS: dict[str, tuple[type, ...]] = {
    "engine": (str,),
    "kv_dtype": (str,),
    "tp": (int,),
    "util": (int, float),
    "block_size": (int,),
    "attention_backend": (str,),
    "moe_backend": (str,),
    "all_reduce_backend": (str,),
    "scheduler_recv_interval": (int,),
}
"""Options every command that has them takes from kvcalc.toml when the command line leaves them out."""
KEYS = ("model", "gpu", "calibration", *OPTION_KEYS)
"""What kvcalc.toml (or [tool.kvcalc]) may set."""


def from_file(name: str) -> bool:
    """Whether the running command took option ``name`` from kvcalc.toml (click's default_map), not its command line."""
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context

    ctx = get_current_context(silent=True)
    return ctx is not None and ctx.get_parameter_source(name) == ParameterSource.DEFAULT_MAP


def _checked(doc: dict[str, Any], where: str) -> dict[str, Any]:
    """The defaults file's keys, each one kvcalc reads: an unknown key is refused, never ignored."""
    from kvcalc.errors import closest

    for k in doc:
        if k not in KEYS:
            near = closest(str(k), KEYS)
            raise KvcalcError(
                f"unknown key {str(k)[:40]!r}",
                where,
                (f"did you mean {', '.join(near)}? " if near else "") + "the keys are " + ", ".join(KEYS),
            )
    return doc


def _resolve(v: str, where: str) -> str:
    """A relative path in a defaults file is from that file's folder; a name stays a name."""
    p = Path(v)
    if p.is_absolute() or not ("/" in v or p.suffix.lower() in (".yaml", ".yml", ".json")):
        return v
    return str(Path(where.split(" [", 1)[0]).parent / p)


def _from_files(start: Path) -> tuple[dict[str, Any], str] | None:
    for d in (start, *start.parents):
        f = d / "kvcalc.toml"
        if files.probe(f) in ("file", "special"):
            return _checked(_toml(f), str(f)), str(f)
        p = d / "pyproject.toml"
        if files.probe(p) == "file":
            try:
                doc = _toml(p).get("tool", {})
            except KvcalcError:
                continue  # a project file that is not kvcalc's to judge: it holds no readable [tool.kvcalc]
            doc = doc.get("kvcalc") if isinstance(doc, dict) else None
            if isinstance(doc, dict):
                return _checked(doc, f"{p} [tool.kvcalc]"), f"{p} [tool.kvcalc]"
    return None


def default(kind: str) -> tuple[str, str]:
    """(name, where it came from) for kind 'model' or 'gpu'."""
    env = os.environ.get(f"KVCALC_{kind.upper()}")
    if env:
        return env, f"$KVCALC_{kind.upper()}"
    try:
        cwd = Path.cwd()
    except OSError:
        return BUILTIN[kind], "built-in default"
    found = _from_files(cwd)
    if found:
        doc, where = found
        v = doc.get(kind)
        if v is not None:
            if not isinstance(v, str) or not v or len(v) > 4096:
                raise KvcalcError(f"{kind} must be a name or a path", where, f"{kind} = 'name'")
            return _resolve(v, where), where
    return BUILTIN[kind], "built-in default"


def default_path(key: str) -> str | None:
    """A path set in kvcalc.toml (or [tool.kvcalc]), resolved from that file's folder; None if unset.
    $KVCALC_<KEY> wins, as for the model and GPU."""
    env = os.environ.get(f"KVCALC_{key.upper()}")
    if env:
        return env
    try:
        cwd = Path.cwd()
    except OSError:
        return None
    found = _from_files(cwd)
    if not found:
        return None
    doc, where = found
    v = doc.get(key)
    if v is None:
        return None
    if not isinstance(v, str) or not v or len(v) > 4096:
        raise KvcalcError(f"{key} must be a path", where, f"{key} = 'path/to/file'")
    base = Path(where.split(" [", 1)[0]).parent
    return str(base / v) if not Path(v).is_absolute() else v


def option_defaults() -> tuple[dict[str, str], str]:
    """The command options kvcalc.toml sets (OPTION_KEYS), as the text a
    user would type, and the file they come from; a flag on the command line wins. $KVCALC_* are
    not read for these."""
    try:
        cwd = Path.cwd()
    except OSError:
        return {}, ""
    found = _from_files(cwd)
    if not found:
        return {}, ""
    doc, where = found
    out: dict[str, str] = {}
    for key, types in OPTION_KEYS.items():
        if key not in doc:
            continue
        v = doc[key]
        if isinstance(v, bool) or not isinstance(v, types) or (isinstance(v, str) and not 0 < len(v) <= 200):
            words = {
                "engine": "a name such as 'vllm@0.11'",
                "kv_dtype": "a name such as 'fp8'",
                "attention_backend": "a name such as 'triton'",
                "moe_backend": "a name such as 'trtllm'",
                "all_reduce_backend": "a name such as 'nccl'",
            }.get(key, "a number" if key == "util" else "a whole number")
            raise KvcalcError(f"{key} must be {words}, got {str(v)[:40]!r}", where, f"{key} = {words.split(' such as ')[-1]}")
        _check_value(key, v, f"{where}, key {key}")
        out[key] = str(v)
    return out, where


def _check_value(key: str, v: Any, where: str) -> None:
    """Refuse a value the option itself would refuse, naming the file and key it came from."""
    if key == "engine":
        from kvcalc.engine.engines import engine

        engine(str(v), where)
    elif key == "kv_dtype":
        from kvcalc.specs.dtypes import kv_dtype

        kv_dtype(str(v), where)
    elif key == "attention_backend":
        from kvcalc.engine.engines import attention_backend_name

        attention_backend_name(str(v), where)
    elif key == "moe_backend":
        from kvcalc.engine.engines import engine, with_moe_backend

        with_moe_backend(engine("vllm", where), str(v), where)
    elif key == "all_reduce_backend":
        from kvcalc.engine.engines import engine, with_all_reduce_backend

        with_all_reduce_backend(engine("vllm", where), str(v), where)
    elif key == "util" and not 0 < float(v) <= 1:
        raise KvcalcError(f"util {v!r} is out of range", where, "a fraction in (0, 1], e.g. 0.9")
    elif key in ("tp", "block_size", "scheduler_recv_interval"):
        hi = {"tp": 4096, "block_size": 65536}.get(key, 1_000_000)
        if not 1 <= int(v) <= hi:
            raise KvcalcError(f"{key} {v!r} is out of range", where, f"a whole number from 1 to {hi:,}")
