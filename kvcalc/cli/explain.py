"""kvcalc explain-log: a serving engine's start-up figures, recomputed and explained."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from kvcalc.cli.app import app


def _read(path: Optional[str]) -> tuple[str, str]:
    from pathlib import Path

    from kvcalc.errors import KvcalcError
    from kvcalc.specs.loader import read_text

    if path in (None, "-"):
        if path is None and sys.stdin.isatty():
            raise KvcalcError("no log given", "LOG", "a log file, '-' for standard input, or a pipe: vllm serve ... 2>&1 | kvcalc explain-log")
        try:
            data = sys.stdin.read(64 * 2**20)
        except (OSError, UnicodeDecodeError) as e:
            raise KvcalcError(f"cannot read standard input: {e}", "LOG", "a log file, or a log piped in as text") from None
        return data, "standard input"
    p = Path(path)
    from kvcalc.specs.loader import probe

    if probe(p) != "file":
        raise KvcalcError("no such file", path, "a vLLM or SGLang start-up log")
    return read_text(p), path


@app.command("explain-log")
def explain_log(
    log: Optional[str] = typer.Argument(None, help="The log file; '-' or a pipe for standard input."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="The model, when the log's name is not in the catalog."),
    gpu: Optional[str] = typer.Option(None, "--gpu", "-g", help="The GPU (default: $KVCALC_GPU, kvcalc.toml, h100-sxm); the log's total memory wins."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Read a vLLM (0.6 to current) or SGLang start-up log and recompute its KV figures side by side.

    Example: vllm serve meta-llama/Llama-3.1-8B 2>&1 | tee vllm.log; kvcalc explain-log vllm.log
    """
    from kvcalc.cli import options as opt
    from kvcalc.errors import KvcalcError
    from kvcalc.logparse import explain, parse_log

    text, where = _read(log)
    facts = parse_log(text)
    name = model or facts.model
    if not name:
        raise KvcalcError("the log does not name the model", where, "pass --model NAME")
    try:
        m, g, echo = opt.model_and_gpu(name, gpu)
    except KvcalcError as e:
        if model:
            raise
        tail = name.rstrip("/").split("/")[-1]
        try:
            m, g, echo = opt.model_and_gpu(tail, gpu)
        except KvcalcError:
            raise KvcalcError(f"the log's model {name!r} is not in the catalog", where,
                              "pass --model with a catalog name, a spec YAML or its config.json") from e
    ex = explain(facts, m, g)
    if as_json:
        from kvcalc.render import emit_json, to_plain

        v = ex.values
        doc = {
            "engine": ex.engine, "model": ex.model, "gpu": ex.gpu, "max_model_len": ex.seq,
            "log": {k: val for k, val in to_plain(facts).items() if k != "lines" and val is not None},
            "kvcalc_from_log_inputs": {k: getattr(v["measured"], k) for k in ("kv_pool_bytes", "kv_pool_tokens", "concurrency")}
            if "measured" in v else None,
            "kvcalc_estimate": {k: getattr(v["estimate"], k) for k in ("kv_pool_bytes", "kv_pool_tokens", "concurrency", "weight_bytes")},
            "tokens_from_log_memory": v.get("tokens_from_log_memory"),
            "kv_bytes_per_token": v["kv_bytes_per_token"],
            "rows": ex.rows, "notes": ex.notes, "inputs": {**echo, "log": where},
        }
        emit_json(doc)
        return
    from kvcalc.render import render_explain

    render_explain(ex, where)
