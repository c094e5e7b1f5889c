"""kvcalc explain-log: a serving engine's start-up figures, recomputed and explained."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Optional

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit

LOG_ACCEPTED = "a vLLM, SGLang or TensorRT-LLM start-up log (a regular file, '-' for standard input, or a pipe)"


def _startups(path: str | None) -> tuple[list[Any], str]:
    """Parse the log, streaming it line by line (any size; lines cut at 64 KiB)."""
    from kvcalc import files
    from kvcalc.errors import KvcalcError
    from kvcalc.inputs.logs import candidate_lines, parse_startups

    if path in (None, "-"):
        if path is None and sys.stdin.isatty():
            raise KvcalcError(
                "no log given",
                "kvcalc explain-log",
                "a log file, '-' for standard input, or a pipe: vllm serve ... 2>&1 | kvcalc explain-log",
            )
        try:
            return parse_startups(candidate_lines(sys.stdin.buffer), "standard input"), "standard input"
        except (OSError, ValueError) as e:
            raise KvcalcError(f"cannot read standard input: {e}", "standard input", LOG_ACCEPTED) from None
    assert path is not None
    with files.open_regular(path, LOG_ACCEPTED) as f:
        try:
            return parse_startups(candidate_lines(f), path), path
        except OSError as e:
            raise KvcalcError(f"cannot read file: {e.strerror or e}", path, LOG_ACCEPTED) from None


def _log_model(name: str, where: str) -> Any:
    """A model named in a log is a name to look up (its last path part too), never a path to open."""
    from kvcalc.errors import KvcalcError
    from kvcalc.specs.catalog import resolve_model, suggest

    last = name.rstrip("/").split("/")[-1]
    for ref in dict.fromkeys([name, last]):
        try:
            return resolve_model(ref, "the log's model", files_allowed=False)
        except KvcalcError:
            continue
    near = suggest("model", last)
    closest = f" (closest in the catalog: {', '.join(near)})" if near else ""
    raise KvcalcError(
        f"the log's model {name[:80]!r} is not in the catalog",
        where,
        f"pass --model with a catalog name{closest}, a spec YAML or its config.json",
    )


def _gpu_named(device: str) -> Any:
    """The catalog GPU a log's device_name is (torch's name, spaces as underscores: 'NVIDIA_H100_80GB_HBM3',
    'AMD_Instinct_MI300X'), by its aliases, with and without the vendor's prefix; None where none is."""
    from kvcalc.specs.catalog import canonical_name, resolve_gpu

    for ref in (device, device.removeprefix("NVIDIA_"), device.removeprefix("AMD_")):
        name = canonical_name("gpu", ref)
        if name is not None:
            return resolve_gpu(name)
    return None


def _gpu_guess(total_gib: float) -> tuple[Any, str] | None:
    """The catalog GPU whose runtime total is nearest the log's total_gpu_memory (within 1%); among
    GPUs as near (an H100 SXM and PCIe report the same total), the default GPU, else a measured one."""
    from kvcalc.cli.defaults import default
    from kvcalc.specs.catalog import all_specs, canonical_name

    gpus = all_specs("gpu")
    gap = {g.name: abs(g.memory_runtime_bytes / 2**30 - total_gib) for g in gpus}
    near = min(gap.values())
    if near > 0.01 * total_gib:
        return None
    ties = [g for g in gpus if gap[g.name] <= near + 0.002 * total_gib]
    preferred = canonical_name("gpu", default("gpu")[0])
    best = next((g for g in ties if g.name == preferred), None) or min(
        ties, key=lambda g: (gap[g.name], not g.memory_runtime_measured, g.name)
    )
    others = [g.name for g in ties if g is not best]
    also = f" (as near: {', '.join(others[:4])})" if others else ""
    return best, (
        f"the log's total_gpu_memory {total_gib:g} GiB is nearest {best.name}'s runtime total "
        f"({best.memory_runtime_bytes / 2**30:.2f} GiB){also}; pass --gpu"
    )


def explain_log(
    log: Annotated[Optional[str], typer.Argument(metavar="[LOG]", help="The log file; '-' or a pipe for standard input.")] = None,
    model: Annotated[
        Optional[str],
        typer.Option(
            "--model",
            "-m",
            metavar="<name|file>",
            help="The model, where the log does not name one kvcalc knows (a catalog name, spec YAML or config.json).",
        ),
    ] = None,
    gpu: Annotated[
        Optional[str],
        typer.Option(
            "--gpu",
            "-g",
            metavar="<name|file>",
            help="The GPU (default: guessed from the log's total_gpu_memory, else $KVCALC_GPU, kvcalc.toml, h100-sxm).",
        ),
    ] = None,
    tp: Annotated[
        Optional[str], typer.Option("--tp", metavar="<n>", help="Tensor-parallel size, where the log does not say.")
    ] = None,
    pp: Annotated[
        Optional[str], typer.Option("--pp", metavar="<n>", help="Pipeline-parallel size, where the log does not say.")
    ] = None,
    dp: Annotated[
        Optional[str],
        typer.Option(
            "--dp", metavar="<n>", help="Data-parallel attention ranks (each its own pool), where the log does not say."
        ),
    ] = None,
    ep: Annotated[Optional[str], typer.Option("--ep", metavar="<n>", help="Expert-parallel size: 1 or DP x TP.")] = None,
    util: opt.Util = None,
    seq: Annotated[
        Optional[str],
        typer.Option("--seq", "--max-model-len", "-s", metavar="<tokens>", help="max_model_len, where the log does not say."),
    ] = None,
    kv_dtype: Annotated[
        Optional[str], typer.Option("--kv-dtype", metavar="<dtype>", help="KV cache dtype, where the log does not say.")
    ] = None,
    engine: Annotated[
        Optional[str],
        typer.Option(
            "--engine",
            "-e",
            metavar="<engine>",
            help="The engine and release whose rules apply (vllm@0.11, sglang, ...); default: read from the log.",
        ),
    ] = None,
    weight_dtype: opt.WeightDtypeOpt = None,
    block_size: opt.BlockSize = None,
    max_num_batched_tokens: opt.MaxBatchedTokens = None,
    max_num_seqs: opt.MaxNumSeqs = None,
    as_json: opt.Json = False,
) -> Any:
    """Read vLLM, SGLang or TensorRT-LLM start-up logs and recompute their KV figures side by side.

    Each start-up in the file is explained separately. Options fill in what the log does not say;
    every setting the log did not state is listed as assumed.

    Example: vllm serve meta-llama/Llama-3.1-8B 2>&1 | tee vllm.log; kvcalc explain-log vllm.log
    """
    from kvcalc.engine.explain import ExplainLogReport, Given, Setting, explain
    from kvcalc.errors import KvcalcError
    from kvcalc.specs.catalog import resolve_gpu

    given = Given(
        engine=opt.engine(engine).key if engine else None,
        tp=opt.parallel(tp, "--tp") if tp else None,
        pp=opt.parallel(pp, "--pp") if pp else None,
        dp=opt.parallel(dp, "--dp") if dp else 1,
        ep=opt.parallel(ep, "--ep") if ep else 1,
        util=opt.fraction(util, "--util"),
        max_model_len=opt.tokens(seq, "--seq") if seq else None,
        kv_dtype=opt.kv(kv_dtype, weight_dtype).name if kv_dtype else None,
        max_num_batched_tokens=opt.batched_tokens(max_num_batched_tokens),
        max_num_seqs=opt.count(max_num_seqs, "--max-num-seqs"),
        block_size=opt.block(block_size),
        weight_dtype=opt.weight_dtype(weight_dtype),
    )
    startups, where = _startups(log)
    m_given = g_given = None
    origin: dict[str, str] = {}
    if model:
        m_given, _, origin = opt.model_and_gpu(model, None, need_gpu=False)
    if gpu:
        g_given = resolve_gpu(gpu, "--gpu")
    reports = []
    skipped: list[str] = []
    first_error: KvcalcError | None = None
    for i, facts in enumerate(startups, 1):
        try:
            if m_given is not None:
                m, m_set = m_given, Setting("model", m_given.name, "option", "--model")
            elif facts.model:
                m = _log_model(facts.model, where)
                m_set = Setting("model", m.name, "log", facts.model[:160])
            else:
                raise KvcalcError("the log does not name the model", where, "pass --model NAME")
            if g_given is not None:
                g, g_set = g_given, Setting("gpu", g_given.name, "option", "--gpu")
            elif facts.device_name and (named := _gpu_named(facts.device_name)) is not None:
                g = named
                g_set = Setting("gpu", named.name, "log", f"device_name={facts.device_name} (a kernel config file it names)")
            else:
                guess = _gpu_guess(facts.total_gib) if facts.total_gib else None
                if guess is not None:
                    g, g_set = guess[0], Setting("gpu", guess[0].name, "guess", guess[1])
                else:
                    _, g, o = opt.model_and_gpu(m.name, None)
                    g_set = Setting("gpu", g.name, "default", f"not in the log ({o.get('gpu_from', 'default')}); pass --gpu")
            reports.append(explain(facts, m, g, given, g_set, m_set, index=i))
        except KvcalcError as e:
            if len(startups) == 1:
                raise
            first_error = first_error or e
            skipped.append(f"start-up {i}: {e.line()}")
    if not reports:
        assert first_error is not None
        raise first_error
    report = ExplainLogReport(
        source=where,
        startups=reports,
        skipped=skipped,
        warnings=[f"start-up {r.index}: {w}" if len(startups) > 1 else w for r in reports for w in r.warnings],
        inputs={"log": where, **{k: v for k, v in vars(given).items() if v is not None}},
    )
    return emit(report, origin, as_json)
