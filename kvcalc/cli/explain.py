"""kvcalc explain-log: a serving engine's start-up figures, recomputed and explained."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit

LOG_ACCEPTED = "a vLLM or SGLang start-up log (a regular file, '-' for standard input, or a pipe)"


def _facts(path: str | None) -> tuple[Any, str]:
    """Parse the log, streaming it line by line (any size; lines cut at 64 KiB)."""
    from kvcalc import files
    from kvcalc.errors import KvcalcError
    from kvcalc.inputs.logs import candidate_lines, parse_log

    if path in (None, "-"):
        if path is None and sys.stdin.isatty():
            raise KvcalcError(
                "no log given", "LOG", "a log file, '-' for standard input, or a pipe: vllm serve ... 2>&1 | kvcalc explain-log"
            )
        try:
            return parse_log(candidate_lines(sys.stdin.buffer)), "standard input"
        except (OSError, ValueError) as e:
            raise KvcalcError(f"cannot read standard input: {e}", "LOG", LOG_ACCEPTED) from None
    assert path is not None
    with files.open_regular(path, LOG_ACCEPTED) as f:
        try:
            return parse_log(candidate_lines(f)), path
        except OSError as e:
            raise KvcalcError(f"cannot read file: {e.strerror or e}", path, LOG_ACCEPTED) from None


def explain_log(
    log: Annotated[Optional[str], typer.Argument(metavar="[LOG]", help="The log file; '-' or a pipe for standard input.")] = None,
    model: opt.ModelOpt = None,
    gpu: Annotated[
        Optional[str],
        typer.Option(
            "--gpu",
            "-g",
            metavar="<name|file>",
            help="The GPU (default: $KVCALC_GPU, kvcalc.toml, h100-sxm); the log's total memory wins.",
        ),
    ] = None,
    as_json: opt.Json = False,
) -> Any:
    """Read vLLM or SGLang start-up logs and recompute their KV figures side by side.

    Example: vllm serve meta-llama/Llama-3.1-8B 2>&1 | tee vllm.log; kvcalc explain-log vllm.log
    """
    from kvcalc.engine.explain import explain
    from kvcalc.errors import KvcalcError
    from kvcalc.specs.catalog import resolve_model

    facts, where = _facts(log)
    if model:
        m, g, origin = opt.model_and_gpu(model, gpu)
    else:
        name = facts.model
        if not name:
            raise KvcalcError("the log does not name the model", where, "pass --model NAME")
        # A model named in a log is a name to look up, never a path to open.
        try:
            m = resolve_model(name, "the log's model", files_allowed=False)
        except KvcalcError:
            tail = name.rstrip("/").split("/")[-1]
            try:
                m = resolve_model(tail, "the log's model", files_allowed=False)
            except KvcalcError:
                raise KvcalcError(
                    f"the log's model {name[:80]!r} is not in the catalog",
                    where,
                    "pass --model with a catalog name, a spec YAML or its config.json",
                ) from None
        _, g, origin = opt.model_and_gpu(m.name, gpu)
    return emit(explain(facts, m, g, source=where), origin, as_json)
