"""kvcalc explain-log: each start-up's figures beside kvcalc's, what was assumed, and why they differ."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, notes, table, verdict_line
from kvcalc.units import count_of

GiB = 2**30

LABELS = {
    "weights": "weights per GPU",
    "peak_torch": "weights + activation peak",
    "activation": "activation peak",
    "non_torch": "non-torch memory",
    "cudagraph_estimate": "CUDA graphs (estimated)",
    "available_kv": "available KV cache memory",
    "gpu_blocks": "GPU blocks",
    "kv_tokens": "KV cache size, tokens",
    "max_kv_tokens": "tokens the KV cache holds",
    "needed_kv": "KV one request needs",
    "estimated_max_len": "longest request that fits",
    "auto_max_len": "max_model_len auto-fitted",
    "concurrency": "max concurrency at {length:,} tokens",
    "kv_bytes_per_token": "KV bytes per token (all layers)",
    "max_total_num_tokens": "max_total_num_tokens",
    "trt_kv_bytes": "KV cache allocated",
    "trt_kv_gib": "KV cache allocated, GiB",
    "trt_tokens": "tokens in paged KV cache",
}

BASIS = {
    "components": "the log's breakdown of its budget",
    "available": "the log's available KV cache memory",
    "blocks": "the log's block count",
    "error_tokens": "the token count in the log's error",
    "tokens": "the log's token count",
    "kv_sizes": "the K and V sizes the log allocated",
    "trt_bytes": "the bytes the log allocated",
    "trt_components": "the log's profile peak, device total and fraction",
    "trt_free": "the memory the log says was available, and the fraction",
}


def _reason(row: Any, r: Any) -> str:
    engine = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}.get(r.engine.split("@")[0], r.engine)
    bs = r.block_size
    per = f"{r.kv_bytes_per_token:,} B per token over all layers"
    return {
        "weights": f"{engine} measured the loaded checkpoint; kvcalc counts parameters x their stored dtype from the config",
        "peak_torch": "the profile run's peak of weights and activations, against kvcalc's weights + activation estimate",
        "activation": f"{engine} ran a profiling forward pass; kvcalc estimates the largest MLP, attention and logits buffers",
        "non_torch": f"CUDA context, cuBLAS and NCCL buffers: measured by {engine}, a range in kvcalc",
        "cudagraph_estimate": "vLLM's own estimate, subtracted before sizing; kvcalc's is a fixed range",
        "available_kv": "util x total - weights - activation - non-torch: from the log's own terms it agrees to their rounding",
        "gpu_blocks": f"pool // ({bs} tokens x {per}), per block of every layer",
        "kv_tokens": f"from the pool in whole blocks of {bs} tokens x {per}; the log's GiB has two decimals (+/- 5.4 MB)",
        "max_kv_tokens": f"blocks x {bs}: the most tokens the cache holds, which V0 compared with max_model_len",
        "needed_kv": f"one request of max_model_len tokens: {per} x {r.max_model_len:,}",
        "estimated_max_len": "the longest request whose KV fits the available memory",
        "auto_max_len": "--max-model-len auto: the longest max_model_len whose one request fits the available memory",
        "concurrency": "blocks / blocks one request of max_model_len needs",
        "kv_bytes_per_token": "(K size + V size) / #tokens from the log, against kvcalc's per-token bytes",
        "max_total_num_tokens": "KV pool / bytes per token (SGLang pages are single tokens)",
        "trt_kv_bytes": "free_gpu_memory_fraction x memory free after loading",
        "trt_kv_gib": (
            "free_gpu_memory_fraction x the memory available once the engine is loaded, as the log gives it"
            if r.from_log is not None and r.from_log.basis == "trt_free"
            else "free_gpu_memory_fraction x (device total - profile peak + the dry run's KV), the log's own terms"
        ),
        "trt_tokens": f"bytes / ({bs}-token blocks x {per})",
    }.get(row.key, "")


def _cell(unit: str, v: Any) -> str:
    if v is None:
        return "-"
    if unit == "bytes":
        return f"{v / GiB:,.2f} GiB"
    if unit in ("tokens", "blocks"):
        return f"{int(v):,}"
    if unit == "ratio":
        return f"{v:.2f}x"
    if unit == "bytes_per_token":
        return f"{v:,.0f} B"
    return str(v)


def _pct(v: float | None) -> str:
    return "" if v is None else f"{v:+.1%}"


def _note(n: Any) -> str:
    v = n.values
    k = n.key
    if k == "components_vllm":
        terms = " - ".join(
            f"{v[t]:g} ({t.replace('_', '-')})"
            for t in ("peak_torch", "weights", "activation", "non_torch", "cudagraph")
            if t in v
        )
        return f"pool from the log's own figures: {v['total']:g} GiB x {v['util']:g} - {terms} = {v['usable'] - sum(v[t] for t in ('peak_torch', 'weights', 'activation', 'non_torch', 'cudagraph') if t in v):.3f} GiB"
    if k == "components_sglang":
        return (
            f"SGLang's pool: memory free after loading ({v['after']:g} GiB) - (1 - mem_fraction_static {v['util']:g}) x "
            f"memory free before ({v['before']:g} GiB)"
        )
    if k == "other_memory":
        src = "" if not v["total_from_spec"] else f" (taking {v['gpu']}'s runtime total, {v['total_bytes'] / GiB:,.2f} GiB)"
        return (
            f"this log does not break down activation and non-torch memory; together they are {v['util']:g} x "
            f"{v['total_bytes'] / GiB:,.2f} GiB - weights - KV = {v['other_bytes'] / GiB:,.2f} GiB{src}"
        )
    if k == "no_kv_memory":
        return (
            f"available KV cache memory is {v['available'] / GiB:.2f} GiB: the weights and the profile run took more than "
            "util x total. Raise gpu_memory_utilization, lower max_num_seqs or max_num_batched_tokens, or add GPUs (--tp)"
        )
    if k == "v0_refused":
        return (
            f"V0 refuses to start when max_model_len ({v['max_model_len']:,}) exceeds the tokens its cache holds "
            f"({v['tokens']:,}): pass --max-model-len {v['tokens']:,} or less, or raise gpu_memory_utilization"
        )
    if k == "v1_refused":
        return (
            f"vLLM refused to start: one request of max_model_len needs {v['needed'] / GiB:.2f} GiB of KV and "
            f"{v['available'] / GiB:.2f} GiB are available"
        )
    if k == "cudagraph_estimate_unused":
        return (
            f"vLLM estimated its CUDA graphs at {v['bytes'] / GiB:.2f} GiB but did not subtract that before sizing the "
            "KV cache (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, off by default before 0.20)"
        )
    if k == "cudagraph_within_estimate":
        return (
            f"CUDA graphs took {v['bytes'] / GiB:.2f} GiB after the KV cache was sized, against the "
            f"{v['estimate'] / GiB:.2f} GiB vLLM estimated and set aside for them before sizing"
        )
    if k == "cudagraph_after_sizing":
        return (
            f"CUDA graphs took {v['bytes'] / GiB:.2f} GiB after the KV cache was sized: they came out of the "
            "1 - gpu_memory_utilization headroom, not the KV pool"
        )
    if k == "trt_dry_run":
        return (
            f"the first of the log's {v['lines']} 'Allocated ... for max tokens' lines ({v['gib']:g} GiB, {v['tokens']:,} "
            "tokens) is TensorRT-LLM's estimation dry run, sized to max_num_tokens; the last is the pool"
        )
    if k == "trt_maybe_dry_run":
        return (
            f"the log's one 'Allocated ... for max tokens' line ({v['tokens']:,} tokens) comes without the profile's "
            "peak line: if the excerpt stops early it may be the estimation dry run, not the pool"
        )
    if k == "ranks_differ":
        pp = int(v["pp"])

        def fig(x: float) -> str:
            # Token and block counts whole (1,594,928, not 1.59493e+06); GiB as printed.
            return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.6g}"

        def rule(name: str, vals: list[float]) -> str:
            if name == "available_kv_gib" and pp > 1:
                return (
                    "each pipeline stage's is its own layers' (vLLM takes the fewest blocks they give); the lowest rank's is read"
                )
            if name == "available_kv_gib":
                return f"every rank holds the same layers and vLLM sizes the cache to the least, {fig(min(vals))}"
            if name in ("activation_gib", "non_torch_gib", "breakdown_weights_gib"):
                return "read from the same budget line as the available KV memory"
            return f"the engine uses the smallest, {fig(min(vals))}"

        return "; ".join(
            f"ranks printed {', '.join(fig(x) for x in vals)} for {name}: {rule(name, vals)}" for name, vals in v["ranks"].items()
        )
    if k == "ray_dedup":
        return (
            "Ray merged other ranks' lines into '[repeated Nx across cluster]', ignoring the numbers in them: a rank "
            "whose figures differ can be hidden, and the engine sizes every rank's cache to the smallest"
        )
    if k == "min_over_ranks":
        return (
            f"{v['ranks']} ranks: vLLM sizes every rank's cache to the smallest rank's; a breakdown printed by one rank "
            "can give more tokens than the engine used"
        )
    if k == "sglang_requests":
        return f"{v['tokens']:,} tokens hold {count_of(v['requests'], 'request')} of the full {v['seq']:,}-token context at once"
    if k == "sglang_gb_is_gib":
        return "SGLang prints 'GB' for figures it divides by 2^30: kvcalc reads them as GiB"
    if k == "trt_pool":
        return (
            f"TensorRT-LLM: tokens = blocks x {v['block_size']} where blocks = bytes / ({v['block_size']} x "
            f"{v['per_token']:,} B per token); its token count is the block pool, not a per-request limit"
        )
    if k == "concurrency_meaning":
        return (
            f"'Maximum concurrency {v['concurrency']:.2f}x' means: if every request ran to the full {v['length']:,} "
            f"tokens, {int(v['concurrency'])} could be in flight at once. Real requests are shorter, and vLLM admits "
            "requests while blocks are free, so more usually run together."
        )
    if k == "vllm_gb_is_gib":
        return "vLLM before 0.7 printed 'Loading model weights took X GB' but computed X in GiB: read as GiB"
    if k == "multimodal" and v.get("skipped"):
        return (
            f"multimodal model: the vision tower's {v['vision_params'] / 1e9:.2f} B parameters are counted in the weights; "
            "the log says the encoder's memory profile was skipped (--skip-mm-profiling), and so does the estimate"
        )
    if k == "multimodal" and v.get("encoder_modelled"):
        return (
            f"multimodal model: the vision tower's {v['vision_params'] / 1e9:.2f} B parameters are counted in the weights, "
            "and the activation estimate includes the engine's profile of the vision encoder on its largest dummy image"
        )
    if k == "multimodal":
        return (
            f"multimodal model: the vision tower's {v['vision_params'] / 1e9:.2f} B parameters are counted in the weights, "
            "but the engine's profile run also encodes dummy images at their largest size, which kvcalc's activation "
            "estimate does not model: the estimate can be GiB high (Llama 3.2 Vision at 64k: 36.6 GiB of activations)"
        )
    if k == "encoder_profile":
        b, n, what = v["log"]
        ours = v.get("kvcalc")
        same = ours is not None and list(ours) == list(v["log"])
        tail = (
            "; kvcalc's rules give the same batch"
            if same
            else "; kvcalc does not model this encoder's profile"
            if ours is None
            else f"; kvcalc's rules give {ours[1]} {ours[2]} item(s) under {ours[0]:,}"
        )
        return f"the log's encoder profile: {n} {what} item(s) of the largest size under a {b:,}-token budget{tail}"
    if k == "engine_basis":
        return f"read with {v['engine']}'s rules: {v['detail']}; pass --engine to choose another"
    return k


def _setting(s: Any) -> str:
    val = f"{s.value:,}" if isinstance(s.value, int) and not isinstance(s.value, bool) else f"{s.value}"
    if s.source == "log":
        return f"{s.key} {val}"
    where = {"option": "given", "guess": "guessed", "default": "assumed"}[s.source]
    return f"{s.key} {val} ({where}: {s.detail})" if s.detail else f"{s.key} {val} ({where})"


def _startup(c: Any, r: Any, n: int) -> None:
    head = f"Start-up {r.index} of {n}: " if n > 1 else ""
    c.print(
        f"[bold]{head}{esc(r.engine_label)}[/bold]: {esc(r.model)} on {esc(r.gpu)}, TP {r.tp}, "
        + (f"DP {r.dp}, " if r.dp > 1 else "")
        + f"PP {r.pp}, "
        f"max_model_len {r.max_model_len:,}, KV {r.kv_dtype}"
    )
    t = table(
        None,
        ("", "left"),
        ("log", "right"),
        ("from log", "right"),
        ("err", "right"),
        ("estimate", "right"),
        ("err", "right"),
    )
    for col in t.columns[1:]:
        col.no_wrap = True
    for x in r.rows:
        label = LABELS.get(x.key, x.key).format(length=x.length or 0)
        if x.taken_from_log:
            mid, err = "(the log's)", ""
        else:
            mid, err = _cell(x.unit, x.from_log), _pct(x.from_log_error)
        t.add_row(label, _cell(x.unit, x.log), mid, err, _cell(x.unit, x.estimate), _pct(x.estimate_error))
    c.print(t)
    if r.from_log is not None:
        c.print(f"[dim]'from log': one KV pool, {BASIS.get(r.from_log.basis, r.from_log.basis)}, and what it gives.[/dim]")
    notes(
        c,
        "Settings",
        [_setting(s) for s in r.settings if s.source != "log"]
        + ["from the log: " + ", ".join(_setting(s) for s in r.settings if s.source == "log")],
        "",
    )
    notes(c, "Why they differ", [f"{LABELS.get(x.key, x.key).format(length=x.length or 0)}: {_reason(x, r)}" for x in r.rows], "")
    notes(c, "Notes", [_note(x) for x in r.notes], "")


HEADLINE = ("kv_tokens", "gpu_blocks", "max_total_num_tokens", "trt_tokens", "max_kv_tokens", "available_kv")
"""The figure a start-up is judged on, the first the log has (its token or block count, else its KV memory)."""


def verdict(r: Any) -> str:
    """One start-up's answer first: how near kvcalc comes from the log's own figures, and from the
    settings alone, on its headline figure."""
    label = lambda x: LABELS.get(x.key, x.key).format(length=x.length or 0)
    by_key = {x.key: x for x in r.rows}
    head = next((by_key[k] for k in HEADLINE if k in by_key), r.rows[0] if r.rows else None)
    if head is None:
        return "nothing in this start-up to compare"
    parts = []
    if head.from_log_error is not None:
        parts.append(f"from the log's own figures to {head.from_log_error:+.1%}")
    elif head.taken_from_log:
        parts.append("from the log, as it gives it")
    if head.estimate_error is not None:
        parts.append(f"from its settings alone to {head.estimate_error:+.1%}")
    if not parts:
        return f"no figure of kvcalc's to set beside the log's {label(head)}"
    return f"kvcalc gives the log's {label(head)} " + ", and ".join(parts)


def render(rep: Any) -> None:
    c = console()
    n = len(rep.startups)
    if n == 1:
        verdict_line(c, f"{rep.source}: {verdict(rep.startups[0])}")
    else:
        verdict_line(c, f"{rep.source}: {n} start-up{'s' if n != 1 else ''} explained")
    for r in rep.startups:
        c.print()
        if n > 1:
            verdict_line(c, verdict(r))
        _startup(c, r, n + len(rep.skipped))
    notes(c, "Not explained", rep.skipped, "")
    notes(c, "Warnings", rep.warnings, "yellow")
    c.print(
        "[dim]GiB = 2^30 B. err = (figure - log) / log. 'estimate' is what kvcalc predicts from the log's "
        "settings alone, with its own estimates of weights, activations and reserves.[/dim]"
    )
