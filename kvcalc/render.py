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
    import os

    from rich.console import Console

    # NO_COLOR (no-color.org): no escape codes at all, bold included.
    plain = bool(os.environ.get("NO_COLOR"))
    return Console(highlight=False, soft_wrap=False, **({"color_system": None} if plain else {}))


def _table(title: str | None = None, *cols: tuple[str, str]):
    from rich import box
    from rich.table import Table

    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", title_style="bold", pad_edge=False,
              collapse_padding=True)
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
    c.print("[dim]memory: as the vendor states it, read as GB = 10^9 B; runtime: what the runtime reports (GiB = 2^30 B), "
            "estimated unless measured. Memory vendors' \"GB\" is binary in practice: an \"80 GB\" H100 has 80 GiB of HBM, "
            "so its runtime figure exceeds 80 x 10^9 B.[/dim]")


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
        ("memory (vendor, as stated)", fmt_bytes(g.memory_bytes)),
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
    _notes(c, "Notes", ([g.source.notes] if g.source.notes else []) + [
        "the vendor's \"GB\" of memory is binary in practice (80 GB H100: 80 GiB of HBM); kvcalc keeps the figure "
        "as stated, in decimal bytes, and budgets against the runtime figure"])


# ---- roofline -------------------------------------------------------------------------------

def _ms(t: float) -> str:
    return f"{t * 1e3:,.3f} ms" if t < 10 else f"{t:,.3f} s"


def render_roofline(rows, model, gpu, echo: dict, prefill, plot: bool, assumptions: list[str]) -> None:
    c = console()
    src = "".join(f" ({k.split('_')[0]} from {v})" for k, v in echo.items() if k.endswith("_from"))
    r0 = rows[0]
    c.print(
        f"[bold]{model.name}[/bold] on [bold]{gpu.name}[/bold]{src}: tp {r0.tp}, KV {r0.kv_dtype}, "
        f"{fmt_rate(gpu.memory_bandwidth_bytes_per_s)}, {fmt_flops(r0.ridge_intensity * gpu.memory_bandwidth_bytes_per_s)} {r0.compute_dtype} dense"
    )
    if len(rows) == 1:
        r = r0
        lines = [
            ("weights resident, per GPU", fmt_bytes(r.weight_bytes_resident)),
            ("weights read per step", fmt_bytes(r.weight_bytes_read)),
            (f"KV read per step ({r.batch} x {r.seq:,} tokens)", fmt_bytes(r.kv_bytes_read)),
            ("memory term", f"{_ms(r.t_memory_s)} ({fmt_si(r.bytes_read)} / {fmt_rate(gpu.memory_bandwidth_bytes_per_s)})"),
            ("compute term", f"{_ms(r.t_compute_s)}  ({r.flops:,.4g} FLOP)"),
            ("decode step lower bound", f"{_ms(r.t_bound_s)}, {r.bound_by}-bound"),
            ("KV share of bytes read", f"{r.kv_share:.1%}"),
            ("tokens/s upper bound, per replica", f"{r.tokens_per_s:,.1f} tokens/s"),
            ("arithmetic intensity", f"{r.arithmetic_intensity:,.2f} FLOP/B (ridge {r.ridge_intensity:,.0f} FLOP/B)"),
            ("KV term = weights term at", f"{r.kv_equals_weights_at_seq:,} tokens" if r.kv_equals_weights_at_seq is not None else "never (KV stops growing: windowed or state layers)"),
            ("compute-bound from batch", f"{r.compute_bound_at_batch:,}" if r.compute_bound_at_batch else "never at this context"),
            ("batches that fit in memory", f"up to {r.max_batch_in_memory:,}" + ("" if r.fits_in_memory else "  [this batch does NOT fit]")),
        ]
        if r.t_allreduce_s is not None:
            lines.append(("+ all-reduce (separate)", f"{_ms(r.t_allreduce_s)} ({fmt_bytes(r.allreduce_bytes)} of activations, ring)"))
        _kv_lines(c, lines)
    else:
        t = _table(None, ("batch", "right"), ("seq", "right"), ("mem ms", "right"), ("comp ms", "right"),
                   ("bound ms", "right"), ("by", "left"), ("KV %", "right"), ("tokens/s", "right"), ("fits", "left"))
        for col in t.columns:
            col.no_wrap = True
        for r in rows:
            t.add_row(str(r.batch), f"{r.seq:,}", f"{r.t_memory_s * 1e3:,.3f}", f"{r.t_compute_s * 1e3:,.3f}",
                      f"{r.t_bound_s * 1e3:,.3f}", r.bound_by, f"{r.kv_share * 100:.1f}", f"{r.tokens_per_s:,.0f}",
                      "yes" if r.fits_in_memory else "[bold red]NO[/bold red]")
        c.print(t)
        c.print("[dim]fits: whether the batch's KV fits in the engine's pool (kvcalc fit); bytes per row in --json.[/dim]")
        by_batch = {}
        for r in rows:
            by_batch.setdefault(r.batch, r)
        c.print("KV term = weights term at: " + ", ".join(
            f"batch {b}: {r.kv_equals_weights_at_seq:,} tokens" if r.kv_equals_weights_at_seq is not None else f"batch {b}: never"
            for b, r in by_batch.items()))
    if prefill:
        c.print(f"prefill of {prefill.prompt:,} tokens: >= {_ms(prefill.t_bound_s)} ({prefill.bound_by}-bound; "
                f"compute {_ms(prefill.t_compute_s)}, weights {_ms(prefill.t_memory_s)})")
    for r in rows:
        for w in r.warnings:
            if "does not fit" not in w or len(rows) == 1:
                c.print(f"[yellow]warning:[/yellow] {w}", markup=True)
    if plot:
        from kvcalc.plot import ascii_loglog

        for ch in roofline_charts(rows, gpu, r0.compute_dtype):
            c.print(ascii_loglog(ch["series"], ch["title"], ch["xlabel"], ch["ylabel"]), markup=False, highlight=False)
    _notes(c, "Assumptions", assumptions)
    c.print("[dim]ms = 10^-3 s; GB = 10^9 B, GiB = 2^30 B; tokens/s is an upper bound per model replica.[/dim]")


def roofline_charts(rows, gpu, compute_dtype: str) -> list[dict]:
    """The roofline (attainable FLOP/s against intensity, configurations marked) and the step
    time against context, one series per batch."""
    from kvcalc.plot import Series

    peak = rows[0].ridge_intensity * gpu.memory_bandwidth_bytes_per_s
    bw = gpu.memory_bandwidth_bytes_per_s
    ai = [r.arithmetic_intensity for r in rows]
    lo, hi = min(ai + [1.0]) / 4, max(ai + [rows[0].ridge_intensity]) * 4
    xs = [lo * (hi / lo) ** (i / 40) for i in range(41)]
    roof = Series(f"roof: min({fmt_flops(peak)}, {fmt_rate(bw)} x I)", xs, [min(peak, bw * x) for x in xs], "-")
    marks = "ox+*#@%&"
    by_batch: dict[int, list] = {}
    for r in rows:
        by_batch.setdefault(r.batch, []).append(r)
    points = [
        Series(f"batch {b}", [r.arithmetic_intensity for r in rs], [r.flops / r.t_bound_s for r in rs], marks[i % len(marks)], line=False)
        for i, (b, rs) in enumerate(by_batch.items())
    ]
    times = [
        Series(f"batch {b}", [float(r.seq) for r in rs], [r.t_bound_s for r in rs], marks[i % len(marks)])
        for i, (b, rs) in enumerate(by_batch.items())
    ]
    return [
        {"title": f"Roofline: {gpu.name}, {compute_dtype}", "xlabel": "arithmetic intensity, FLOP/B",
         "ylabel": "attainable FLOP/s", "series": [roof] + points},
        {"title": "Decode step lower bound against context", "xlabel": "context, tokens", "ylabel": "seconds per step",
         "series": times},
    ]


# ---- check ----------------------------------------------------------------------------------

def render_check(results: list[dict]) -> None:
    c = console()
    t = _table(None, ("example / key", "left"), ("expected", "right"), ("got", "right"), ("delta", "right"), ("", "left"))
    for col in t.columns[1:]:
        col.no_wrap = True
    last = None
    for r in results:
        if r["example"] != last:
            t.add_row(f"[bold]{r['example']}[/bold]", "", "", "", "")
            last = r["example"]
        got = r["got"]
        got_s = f"{got:,}" if isinstance(got, int) and not isinstance(got, bool) else (f"{got:.6g}" if isinstance(got, float) else str(got))
        got_s = got_s if len(got_s) <= 16 else f"{got:.6g}" if isinstance(got, (int, float)) else got_s[:16]
        t.add_row("  " + r["key"], r["expected"], got_s, r["delta"], "[green]pass[/green]" if r["passed"] else "[bold red]FAIL[/bold red]")
    c.print(t)
    failed = sum(not r["passed"] for r in results)
    c.print(f"{len(results) - failed} passed, {failed} failed")


# ---- explain-log ----------------------------------------------------------------------------

def render_explain(ex, where: str) -> None:
    c = console()
    c.print(f"[bold]{where}[/bold]: {ex.engine} log, model {ex.model}, max_model_len {ex.seq:,}, GPU {ex.gpu}")
    t = _table(None, ("", "left"), ("log", "right"), ("kvcalc, log's inputs", "right"), ("kvcalc estimate", "right"),
               ("est. vs log", "right"))
    for col in t.columns[1:]:
        col.no_wrap = True
    for r in ex.rows:
        t.add_row(r.quantity, r.log, r.kvcalc_measured, r.kvcalc_estimated, r.difference)
    c.print(t)
    _notes(c, "Why they differ", [f"{r.quantity}: {r.reason}" for r in ex.rows], "")
    _notes(c, "Notes", ex.notes, "")
    c.print("[dim]GiB = 2^30 B. 'kvcalc, log's inputs' recomputes with what the engine measured; "
            "'kvcalc estimate' is what kvcalc predicts with no log.[/dim]")


# ---- paging ---------------------------------------------------------------------------------

def render_paging(r, model, gpu, inputs: dict, assumptions: list[str]) -> None:
    c = console()
    c.print(f"[bold]{model.name}[/bold] on [bold]{gpu.name}[/bold]: {inputs['workload']}, {r.requests:,} requests "
            f"(mean {r.mean_len:,.0f} tokens), max-len {r.max_len:,}, KV pool {fmt_si(r.pool_bytes)} ({fmt_iec(r.pool_bytes)})")
    t = _table(None, ("policy", "left"), ("utilisation", "right"), ("pool used", "right"), ("wasted", "right"),
               ("free, unusable", "right"), ("requests", "right"))
    for col in t.columns:
        col.no_wrap = True
    for p in r.policies:
        t.add_row(p.policy, f"{p.utilization:.1%}", f"{p.pool_utilization:.1%}", fmt_si(p.wasted_bytes),
                  fmt_si(p.external_bytes), f"{p.mean_concurrency:,.1f}")
    c.print(t)
    c.print(f"paged (block 16) over contiguous preallocation: [bold]{r.paged_over_contiguous:.2f}x[/bold] the requests")
    if r.prefix_sharing:
        s = r.prefix_sharing
        c.print(f"shared prefix of {s['shared_prefix_tokens']:,} tokens ({s['shared_blocks']} blocks stored once, "
                f"{s['copied_tokens_per_request']} tokens copied per request): {s['max_concurrency_without']:,} -> "
                f"{s['max_concurrency_with']:,} requests ({s['gain']:.2f}x)")
    _notes(c, "Notes", r.notes, "yellow")
    _notes(c, "Assumptions", assumptions)
    c.print("[dim]utilisation: live bytes / reserved; pool used: live / pool; wasted: reserved, not live (reservation "
            "or last-block); free, unusable: holes and the tail too small for the next request. GB = 10^9 B.[/dim]")


# ---- tiers ----------------------------------------------------------------------------------

def render_tiers(rows, d, model, gpu, seq: int, assumptions: list[str]) -> None:
    c = console()
    c.print(f"[bold]{model.name}[/bold] on [bold]{gpu.name}[/bold]: one request of {seq:,} tokens; recomputing "
            f"its KV (prefill) takes {_ms(rows[0].recompute_s)}")
    t = _table(None, ("tier", "left"), ("capacity", "right"), ("bandwidth", "right"), ("requests", "right"),
               ("reload", "right"), ("reload wins from", "right"))
    for col in t.columns:
        col.no_wrap = True
    for r in rows:
        be = "-" if r.bandwidth_bytes_per_s is None else ("never" if r.break_even_seq is None else
                                                          ("always" if r.break_even_seq == 1 else f"{r.break_even_seq:,} tok"))
        t.add_row(r.tier, fmt_si(r.capacity_bytes), fmt_rate(r.bandwidth_bytes_per_s) if r.bandwidth_bytes_per_s else "-",
                  f"{r.requests:,}", _ms(r.reload_s) if r.reload_s is not None else "-", be)
    c.print(t)
    c.print(f"[bold]Prefill -> decode transfer[/bold] over {fmt_rate(d.link_bytes_per_s)}: {fmt_bytes(d.bytes_per_request)} "
            f"per request, {_ms(d.transfer_s)} ({d.transfer_over_step:,.1f} decode steps of {_ms(d.decode_step_s)}); "
            f"the link carries at most {d.max_requests_per_s:,.2f} requests/s"
            + (f"; at {d.rate:g}/s it is {d.link_utilization:.0%} busy: "
               + ("[green]keeps up[/green]" if d.keeps_up else "[bold red]does not keep up[/bold red]") if d.rate else ""))
    _notes(c, "Assumptions", assumptions)
    c.print("[dim]GB = 10^9 B; bandwidths in decimal units per second; ms = 10^-3 s.[/dim]")


# ---- measure --------------------------------------------------------------------------------

def render_measure(r, model) -> None:
    c = console()
    g = r.geometry
    shape = (f"MLA latent {g['d_k']} ({g['n_q']} heads)" if g["kind"] == "mla" else
             f"{g['n_q']}q/{g['n_kv']}kv x {g['d_k']}")
    c.print(f"[bold]{model.name}[/bold] decode attention on [bold]{r.device_name}[/bold] ({r.device}): {shape}, "
            f"batch {r.batch}, {r.seq_lens['min']:,}..{r.seq_lens['max']:,} tokens, {r.dtype}, {r.layers} layer(s), "
            f"block {g['block_size']}")
    c.print(f"validates: {r.label}")
    _kv_lines(c, [
        ("bytes moved (KV once, q, out)", fmt_bytes(r.bytes)),
        ("FLOPs", f"{r.flops:,}"),
        ("read ceiling, measured", fmt_rate(r.read_ceiling_bytes_per_s)),
        ("copy ceiling, measured (read + write)", fmt_rate(r.copy_ceiling_bytes_per_s)),
        ("datasheet bandwidth", fmt_rate(r.datasheet_bytes_per_s) if r.datasheet_bytes_per_s else "-"),
        ("bound for this step", f"{_us(r.t_bound_s)} ({r.bound_by}-bound)"),
    ])
    t = _table(None, ("kernel", "left"), ("error", "right"), ("median", "right"), ("achieved", "right"),
               ("% read", "right"), ("% sheet", "right"), ("x bound", "right"))
    for col in t.columns:
        col.no_wrap = True
    for k in r.kernels:
        if k.t_measured_s is None:
            t.add_row(k.kernel, f"{k.rel_error:.1e}", "[red]not timed[/red]", "-", "-", "-", "-")
            continue
        t.add_row(k.kernel + (" (graph)" if k.cuda_graph else ""), f"{k.rel_error:.1e}", _us(k.t_measured_s),
                  fmt_rate(k.achieved_bytes_per_s), f"{k.pct_read_ceiling:.0%}",
                  f"{k.pct_datasheet:.0%}" if k.pct_datasheet is not None else "-", f"{k.measured_over_bound:.2f}")
    c.print(t)
    c.print(f"[dim]median of {max((k.runs for k in r.kernels), default=0)} runs; p10 and p90 in --json. "
            "% read: of the measured read ceiling; % sheet: of the datasheet bandwidth.[/dim]")
    if r.weights:
        w = r.weights
        c.print(f"weights: {fmt_bytes(w['weight_bytes'])} streamed in {_us(w['t_measured_s'])} "
                f"({fmt_rate(w['achieved_bytes_per_s'])}, {w['measured_over_bound']:.2f}x the bound)")
    notes = [f"{k.kernel}: {k.note}" for k in r.kernels if k.note] + r.notes
    _notes(c, "Notes", notes, "yellow")
    c.print("[dim]error: ||out - ref|| / ||ref|| against a float64 (CPU) or float32 (GPU) reference on the timed shape; "
            "x bound: measured / the bound.[/dim]")


def _us(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1e6:,.1f} us" if t < 1e-3 else f"{t * 1e3:,.3f} ms"
