"""kvcalc fit: the budget line by line, the pool, concurrency and the longest request."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, kv_lines, nb, notes, table
from kvcalc.units import fmt_bytes, fmt_iec, fmt_si


def render(r: Any) -> None:
    c = console()
    c.print(
        f"[bold]{r.model}[/bold] on [bold]{r.gpus} x {r.gpu}[/bold] (tp {r.tp}, pp {r.pp}), "
        f"{r.engine_label}, seq {r.seq:,} tokens, KV {r.kv_dtype}"
    )
    t = table("Memory budget per GPU", ("", "left"), ("bytes", "right"), ("GB", "right"), ("GiB", "right"))
    for line in r.budget:
        t.add_row(line.label, f"{line.bytes:,}", nb(fmt_si(line.bytes)), nb(fmt_iec(line.bytes)))
    c.print(t)
    rows = [
        ("KV per token, all layers on this GPU", fmt_bytes(r.kv_bytes_per_token)),
        ("KV pool", f"{r.kv_pool_tokens:,} tokens" if r.kv_pool_tokens is not None else "unbounded in tokens"),
        (f"one request of {r.seq:,} tokens", fmt_bytes(r.request_bytes)),
        (f"max concurrency at {r.seq:,} tokens", f"{r.max_concurrency:,} requests ({r.concurrency:.2f}x)"),
        ("longest single request", f"{r.max_seq_len:,} tokens (limited by {r.max_seq_len_limited_by})"),
    ]
    kv_lines(c, rows)
    rev = r.reverse
    if rev:
        c.print(f"[bold]{rev.concurrency:,} requests of {r.seq:,} tokens[/bold]")
        rr = [("KV they need, per GPU", fmt_bytes(rev.kv_bytes_needed_per_gpu))]
        if rev.util_needed is not None:
            u = rev.util_needed
            rr.append(
                (
                    f"{r.util_flag or 'utilisation'} needed at tp {r.tp}",
                    f"{u:.3f}" + ("" if rev.util_possible else " (over 1: impossible)"),
                )
            )
        if rev.gpus_needed:
            rr.append(("GPUs needed", f"{rev.gpus_needed} (tp {rev.tp_needed} x pp {r.pp})"))
        else:
            rr.append(("GPUs needed", "more than tensor parallelism up to 64 provides"))
        kv_lines(c, rr)
    notes(c, "Warnings", r.warnings, "yellow")
    notes(c, "Assumptions", r.assumptions)
    c.print("[dim]GB = 10^9 B, GiB = 2^30 B. Concurrency assumes every request reaches the given length.[/dim]")
