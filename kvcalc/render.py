"""Rendering results: rich tables for people, JSON for scripts. No formulas here.

rich is imported inside the functions that draw, so ``--json`` runs never load it.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

from kvcalc.units import fmt_bytes, fmt_flops, fmt_iec, fmt_rate, fmt_si


def to_plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {k: to_plain(v) for k, v in dataclasses.asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, float) and (obj != obj or obj in (float("inf"), float("-inf"))):
        return None
    return obj


def emit_json(doc: dict) -> None:
    sys.stdout.write(json.dumps(to_plain(doc), indent=2, ensure_ascii=False) + "\n")


def console():
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def _table(title: str | None = None, *cols: tuple[str, str]):
    from rich import box
    from rich.table import Table

    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", title_style="bold", pad_edge=False)
    for name, justify in cols:
        t.add_column(name, justify=justify, overflow="fold")
    return t


def _kv_lines(c, rows: list[tuple[str, str]]):
    t = _table(None, ("", "left"), ("", "right"))
    t.show_header = False
    for a, b in rows:
        t.add_row(a, b)
    c.print(t)


def _notes(c, title: str, items: list[str], style: str = "dim") -> None:
    if not items:
        return
    c.print(f"[bold]{title}[/bold]")
    for i in items:
        c.print(f"  - {i}", style=style, markup=False)


def bytes_cell(n: int) -> str:
    return fmt_bytes(n)


# ---- size -----------------------------------------------------------------------------------

def render_size(r, model, inputs: dict, assumptions: list[str]) -> None:
    c = console()
    alloc = "logical bytes" if r.allocation == "logical" else f"what {r.allocation} allocates"
    c.print(
        f"[bold]{model.name}[/bold]  seq {r.seq:,} tokens, batch {r.batch}, KV {r.kv_dtype}, "
        f"tp {r.tp}, pp {r.pp}: {alloc}" + (f", blocks of {r.block_size} tokens" if r.block_size else "")
    )
    per_gpu = r.tp * r.pp > 1
    t = _table(
        "Per layer kind" + (" (on the most loaded GPU)" if per_gpu else ""),
        ("layer kind", "left"),
        ("layers", "right"),
        ("B/token/layer", "right"),
        ("tokens held", "right"),
        ("per request, B", "right"),
        ("GiB", "right"),
    )
    for col in t.columns[1:]:
        col.no_wrap = True
    for row in r.layers:
        t.add_row(
            f"{row.name}: {row.description}",
            str(row.layers),
            f"{row.bytes_per_token_per_layer:,}" if row.kind != "state" else "-",
            f"{row.tokens_held:,}" if row.kind != "state" else "constant",
            f"{row.bytes_per_request:,}",
            f"{row.bytes_per_request / 2**30:,.2f}",
        )
    c.print(t)
    rows = []
    if per_gpu:
        rows += [
            ("KV per token, per GPU", fmt_bytes(r.per_gpu_kv_bytes_per_token)),
            ("KV per request, per GPU", fmt_bytes(r.per_gpu_kv_bytes_per_request)),
            (f"KV for the batch of {r.batch}, per GPU", fmt_bytes(r.per_gpu_kv_bytes_total)),
        ]
    label = f", all {r.tp * r.pp} GPUs" if per_gpu else ""
    rows += [
        (f"KV per token{label}", fmt_bytes(r.kv_bytes_per_token)),
        (f"KV per request{label}", fmt_bytes(r.kv_bytes_per_request)),
        (f"KV for the batch of {r.batch}{label}", fmt_bytes(r.kv_bytes_total)),
    ]
    _kv_lines(c, rows)
    _notes(c, "Warnings", r.warnings, "yellow")
    _notes(c, "Assumptions", assumptions)
    c.print("[dim]GB = 10^9 B, GiB = 2^30 B. KV per token: what one token adds while inside every layer's window.[/dim]")


# ---- fit ------------------------------------------------------------------------------------

def render_fit(r, model, gpu, reverse: dict | None) -> None:
    c = console()
    c.print(
        f"[bold]{model.name}[/bold] on [bold]{r.gpus} x {gpu.name}[/bold] (tp {r.tp}, pp {r.pp}), "
        f"{r.engine_label}, seq {r.seq:,} tokens, KV {r.kv_dtype}"
    )
    t = _table("Memory budget per GPU", ("", "left"), ("bytes", "right"), ("GB", "right"), ("GiB", "right"))
    for line in r.budget:
        t.add_row(line.label, f"{line.bytes:,}", fmt_si(line.bytes).replace(" ", "\u00a0"), fmt_iec(line.bytes).replace(" ", "\u00a0"))
    c.print(t)
    rows = [
        ("KV per token, all layers on this GPU", fmt_bytes(r.kv_bytes_per_token)),
        ("KV pool", f"{r.kv_pool_tokens:,} tokens" if r.kv_pool_tokens is not None else "unbounded in tokens"),
        (f"one request of {r.seq:,} tokens", fmt_bytes(r.request_bytes)),
        (f"max concurrency at {r.seq:,} tokens", f"{r.max_concurrency:,} requests ({r.concurrency:.2f}x)"),
        ("longest single request", f"{r.max_seq_len:,} tokens (limited by {r.max_seq_len_limited_by})"),
    ]
    _kv_lines(c, rows)
    if reverse:
        c.print(f"[bold]{reverse['concurrency']:,} requests of {r.seq:,} tokens[/bold]")
        rr = [("KV they need, per GPU", fmt_bytes(reverse["kv_bytes_needed_per_gpu"]))]
        if reverse["util_needed"] is not None:
            u = reverse["util_needed"]
            rr.append(
                (f"{ENGINE_UTIL.get(r.engine, 'utilisation')} needed at tp {r.tp}",
                 f"{u:.3f}" + ("" if reverse["util_possible"] else " (over 1: impossible)"))
            )
        if reverse["gpus_needed"]:
            rr.append(("GPUs needed", f"{reverse['gpus_needed']} (tp {reverse['tp_needed']} x pp {r.pp})"))
        else:
            rr.append(("GPUs needed", "more than tensor parallelism up to 64 provides"))
        _kv_lines(c, rr)
    _notes(c, "Warnings", r.warnings, "yellow")
    _notes(c, "Assumptions", r.assumptions)
    c.print("[dim]GB = 10^9 B, GiB = 2^30 B. Concurrency assumes every request reaches the given length.[/dim]")


ENGINE_UTIL = {"vllm": "gpu_memory_utilization", "sglang": "mem_fraction_static", "trtllm": "free_gpu_memory_fraction"}


# ---- catalog --------------------------------------------------------------------------------

def render_models(specs) -> None:
    c = console()
    t = _table(None, ("name", "left"), ("params", "right"), ("active", "right"), ("layers", "left"),
               ("KV/token bf16", "right"), ("context", "right"))
    from kvcalc.engine.kv import kv_size

    for m in specs:
        kinds = ", ".join(f"{n} {m.layer_kinds[k].kind}" for k, n in m.layer_counts().items())
        kv = kv_size(m, 1).kv_bytes_per_token
        t.add_row(m.name, f"{m.params_total / 1e9:,.1f}B", f"{m.params_active / 1e9:,.1f}B" if m.is_moe else "",
                  kinds, fmt_iec(kv), f"{m.max_position_embeddings:,}")
    c.print(t)
    c.print("[dim]params in billions (10^9); KV/token: bytes one token adds across all attention layers, in KiB/MiB.[/dim]")


def render_gpus(specs) -> None:
    c = console()
    t = _table(None, ("name", "left"), ("memory", "right"), ("runtime", "right"), ("bandwidth", "right"),
               ("bf16 dense", "right"), ("fp8 dense", "right"))
    for g in specs:
        t.add_row(g.name, fmt_si(g.memory_bytes, 0), fmt_iec(g.memory_runtime_bytes, 1), fmt_rate(g.memory_bandwidth_bytes_per_s),
                  fmt_flops(g.flops_bf16), fmt_flops(g.flops_fp8) if g.flops_fp8 else "-")
    c.print(t)
    c.print("[dim]memory: as the vendor states it (GB = 10^9 B); runtime: what the runtime reports (GiB = 2^30 B), estimated unless measured.[/dim]")


def render_show_model(m, derived: dict) -> None:
    c = console()
    c.print(f"[bold]{m.name}[/bold]: {m.description}")
    rows = [
        ("source", m.source.url),
        ("architecture", m.architecture or "-"),
        ("aliases", ", ".join(m.aliases) or "-"),
        ("parameters", f"{m.params_total:,}" + (f" (active {m.params_active:,})" if m.is_moe else "")),
        ("weights", f"{derived['weight_dtype']}: {fmt_bytes(derived['weight_bytes'])}"),
        ("hidden / vocab", f"{m.hidden_size:,} / {m.vocab_size:,}"),
        ("max context", f"{m.max_position_embeddings:,} tokens"),
        ("layers", f"{m.num_layers}"),
    ]
    if m.moe:
        rows.append(("experts", f"{m.moe.num_experts} routed, top-{m.moe.num_experts_per_tok}, in {m.moe.num_moe_layers} layers"))
    _kv_lines(c, rows)
    t = _table("Layer kinds", ("name", "left"), ("layers", "right"), ("kind", "left"), ("KV per token (bf16)", "right"))
    for name, n in m.layer_counts().items():
        k = m.layer_kinds[name]
        t.add_row(name, str(n), k.describe(), fmt_bytes(derived["per_kind_bytes_per_token"][name]))
    c.print(t)
    _kv_lines(c, [
        ("KV per token (bf16, all layers)", fmt_bytes(derived["kv_bytes_per_token"])),
        ("KV per request at max context (bf16)", fmt_bytes(derived["kv_bytes_at_max_context"])),
    ])
    if m.source.notes:
        _notes(c, "Notes", [m.source.notes])


def render_show_gpu(g) -> None:
    c = console()
    c.print(f"[bold]{g.name}[/bold]: {g.description}")
    rows = [
        ("source", g.source.url),
        ("memory (vendor)", fmt_bytes(g.memory_bytes)),
        ("memory (runtime)", fmt_bytes(g.memory_runtime_bytes) + ("" if g.memory_runtime_measured else " (estimate)")),
        ("memory bandwidth", fmt_rate(g.memory_bandwidth_bytes_per_s)),
        ("bf16 dense", fmt_flops(g.flops_bf16)),
        ("fp8 dense", fmt_flops(g.flops_fp8) if g.flops_fp8 else "-"),
        ("ridge point (bf16)", f"{g.flops_bf16 / g.memory_bandwidth_bytes_per_s:,.0f} FLOP/B"),
        ("interconnect", fmt_rate(g.interconnect_bytes_per_s) + " (bidirectional)" if g.interconnect_bytes_per_s else "-"),
        ("host link", fmt_rate(g.host_link_bytes_per_s) + " (bidirectional)" if g.host_link_bytes_per_s else "-"),
        ("aliases", ", ".join(g.aliases) or "-"),
    ]
    _kv_lines(c, rows)
    if g.source.notes:
        _notes(c, "Notes", [g.source.notes])
