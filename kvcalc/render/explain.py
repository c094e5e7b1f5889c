"""kvcalc explain-log: the log's figures beside kvcalc's, and why they differ, in words."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, notes, table

GiB = 2**30

LABELS = {
    "weights": "weights per GPU",
    "activation": "activation peak",
    "non_torch": "non-torch memory",
    "available_kv": "available KV cache memory",
    "kv_tokens": "KV cache size, tokens",
    "concurrency": "max concurrency at {length:,} tokens",
    "kv_bytes_per_token": "KV bytes per token (all layers)",
    "max_total_num_tokens": "max_total_num_tokens",
}


def _reason(row: Any, r: Any) -> str:
    engine = "SGLang" if r.engine == "sglang" else "vLLM"
    return {
        "weights": f"{engine} measured the loaded checkpoint; kvcalc counts parameters x dtype from the config "
        "(extra tensors such as vision towers or unquantized layers make the difference)",
        "activation": f"{engine} ran a profiling forward pass; kvcalc estimates the largest MLP and logits buffers",
        "non_torch": f"CUDA context, cuBLAS and NCCL buffers: measured by {engine}, a fixed estimate in kvcalc",
        "available_kv": "the same budget (util x total - weights - activation - non-torch); with the log's inputs it "
        f"agrees to the log's rounding, the estimate differs by what {engine} measured",
        "kv_tokens": f"pool / ({r.block_size} x {r.kv_bytes_per_token:,} B per token over all layers), in whole blocks; "
        "the log's GiB has two decimals (+/- 5.4 MB)",
        "concurrency": "blocks / blocks per request of max_model_len tokens",
        "kv_bytes_per_token": "(K size + V size) / #tokens from the log, against kvcalc's per-token bytes",
        "max_total_num_tokens": "KV pool / bytes per token (SGLang pages are single tokens)",
    }.get(row.key, "")


def _cell(unit: str, v: Any) -> str:
    if v is None:
        return "-"
    if unit == "bytes":
        return f"{v / GiB:,.2f} GiB"
    if unit == "tokens":
        return f"{int(v):,}"
    if unit == "ratio":
        return f"{v:.2f}x"
    if unit == "bytes_per_token":
        return f"{v:,.0f} B"
    return str(v)


def _note(n: Any) -> str:
    v = n.values
    if n.key == "other_memory":
        src = (
            ""
            if not v["total_from_spec"]
            else f" (taking the runtime total of {v['gpu']}'s spec, {v['total_bytes'] / GiB:,.2f} GiB)"
        )
        return (
            f"this log does not break down activation and non-torch memory; together they are {v['util']:g} x "
            f"{v['total_bytes'] / GiB:,.2f} GiB - weights - KV = {v['other_bytes'] / GiB:,.2f} GiB{src}"
        )
    if n.key == "cudagraph_after_sizing":
        return (
            f"CUDA graphs took {v['bytes'] / GiB:.2f} GiB after the KV cache was sized: they came out of the "
            "1 - gpu_memory_utilization headroom, not the KV pool"
        )
    if n.key == "state_padding":
        return (
            "hybrid model with state layers: vLLM pads their state pages to the attention page size, which kvcalc "
            "does not model: its token count can differ by that padding"
        )
    if n.key == "sglang_pool":
        return (
            f"SGLang: pool = memory free after loading ({v['available_bytes'] / GiB:.2f} GiB) - "
            f"(1 - mem_fraction_static {v['fraction']:g}) x total ({v['total_bytes'] / GiB:,.2f} GiB)"
        )
    if n.key == "sglang_requests":
        return f"{v['tokens']:,} tokens hold {v['requests']:,} requests of the full {v['seq']:,}-token context at once"
    if n.key == "sglang_gb_is_gib":
        return "SGLang prints 'GB' for figures it divides by 2^30: kvcalc reads them as GiB"
    if n.key == "concurrency_meaning":
        return (
            f"'Maximum concurrency {v['concurrency']:.2f}x' means: if every request ran to the full {v['length']:,} "
            f"tokens, {int(v['concurrency'])} could be in flight at once. Real requests are shorter, and vLLM admits "
            "requests while blocks are free, so more usually run together."
        )
    if n.key == "vllm_gb_is_gib":
        return "vLLM before 0.7 printed 'Loading model weights took X GB' but computed X in GiB: read as GiB"
    return n.key


def render(r: Any) -> None:
    c = console()
    where = r.inputs.get("log", "log")
    c.print(f"[bold]{where}[/bold]: {r.engine} log, model {r.model}, max_model_len {r.max_model_len:,}, GPU {r.gpu}")
    t = table(
        None,
        ("", "left"),
        ("log", "right"),
        ("kvcalc, log's inputs", "right"),
        ("kvcalc estimate", "right"),
        ("est. vs log", "right"),
    )
    for col in t.columns[1:]:
        col.no_wrap = True
    for x in r.rows:
        label = LABELS.get(x.key, x.key).format(length=x.length or 0)
        measured = "(taken from the log)" if x.taken_from_log else _cell(x.unit, x.from_log_inputs)
        diff = "" if x.relative_difference is None else f"{x.relative_difference:+.1%}"
        t.add_row(label, _cell(x.unit, x.log), measured, _cell(x.unit, x.estimate), diff)
    c.print(t)
    notes(c, "Why they differ", [f"{LABELS.get(x.key, x.key).format(length=x.length or 0)}: {_reason(x, r)}" for x in r.rows], "")
    notes(c, "Notes", [_note(n) for n in r.notes], "")
    c.print(
        "[dim]GiB = 2^30 B. 'kvcalc, log's inputs' recomputes with what the engine measured; "
        "'kvcalc estimate' is what kvcalc predicts with no log.[/dim]"
    )
