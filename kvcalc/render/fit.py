"""kvcalc fit: the budget line by line, the pool, concurrency and the longest request."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, kv_lines, nb, notes, table, track_record, verdict_line
from kvcalc.units import count_of, fmt_bytes, fmt_iec, fmt_si

GIB = 2**30


def _gib_span(low: int, high: int) -> str:
    """A budget line's range in GiB: '0.69-0.93', or '-754.52..-736.68' where a bound is negative (a
    hyphen between negative figures would read as a double minus; '..' as in the length ranges the
    options take, uniform:100..4000)."""
    sep = "-" if low >= 0 and high >= 0 else ".."
    return f"{low / GIB:.2f}{sep}{high / GIB:.2f}"


def render(r: Any) -> None:
    c = console()
    if r.verdict:
        style = "bold" if r.fits else "bold red"
        verdict_line(c, r.verdict, style)
    c.print(
        f"[bold]{esc(r.model)}[/bold] on [bold]{r.gpus} x {esc(r.gpu)}[/bold] (tp {r.tp}, pp {r.pp}"
        + (f", dp {r.dp}" if r.dp > 1 else "")
        + (f", ep {r.ep}" if r.ep > 1 else "")
        + "), "
        f"{r.engine_label}, seq {r.seq:,} tokens, KV {r.kv_dtype}"
    )
    ranged = any(line.low is not None for line in r.budget)
    cols = [("", "left"), ("bytes", "right"), ("GB", "right"), ("GiB", "right")]
    if ranged:
        cols.append(("GiB range", "right"))
    title = "Memory budget per GPU" + (f" (util: {r.util_flag})" if r.util_flag and r.util is not None else "")
    t = table(title, *cols)
    for line in r.budget:
        row = [nb(line.label), f"{line.bytes:,}", nb(fmt_si(line.bytes)), nb(fmt_iec(line.bytes))]
        if ranged:
            row.append(nb(_gib_span(line.low, line.high)) if line.low is not None else line.basis)
        t.add_row(*row)
    c.print(t)
    tokens = "unbounded in tokens" if r.kv_pool_tokens is None else f"{r.kv_pool_tokens:,} tokens"
    if r.kv_pool_blocks is not None and r.block_size:
        tokens += f" ({r.kv_pool_blocks:,} blocks of {r.block_size})"
    rng = r.max_concurrency_range
    band = "" if rng.low == rng.high else f" (range {rng.low:,}-{rng.high:,})"
    rows = [
        ("KV per token, all layers on this GPU", fmt_bytes(r.kv_bytes_per_token)),
        ("KV pool", tokens),
        (f"one request of {r.seq:,} tokens", fmt_bytes(r.request_bytes)),
        (
            "max concurrency, each DP rank" if r.dp > 1 else f"max concurrency at {r.seq:,} tokens",
            f"{count_of(r.max_concurrency, 'request')}{band}",
        ),
    ]
    if r.dp > 1:
        rows.append((f"max concurrency, all {r.dp} DP ranks", count_of(r.max_concurrency_total, "request")))
    if r.concurrency_label:
        rows.append((r.concurrency_label, f"{r.concurrency:.2f}x"))
    rows.append(("longest single request", f"{r.max_seq_len:,} tokens (limited by {r.max_seq_len_limited_by})"))
    if r.max_model_len_accepted is not None:
        rows.append(("largest --max-model-len it starts with", f"{r.max_model_len_accepted:,} tokens"))
    kv_lines(c, rows)
    rev = r.reverse
    if rev:
        c.print(f"[bold]{count_of(rev.concurrency, 'request')} of {r.seq:,} tokens[/bold]")
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
            shape = (rev.shape_needed or f"tp {rev.tp_needed} x pp {rev.pp_needed}") + (
                f" x {rev.replicas_needed} replicas" if rev.replicas_needed and rev.replicas_needed > 1 else ""
            )
            rr.append(("fewest GPUs that hold them", f"{rev.gpus_needed} ({shape})"))
        else:
            rr.append(("GPUs needed", "more than 64 GPUs of this type (the shapes kvcalc plan searches, on whole servers)"))
        kv_lines(c, rr)
    notes(c, "Warnings", r.warnings, "yellow")
    track_record(c, r.track_record)
    notes(c, "Assumptions", r.assumptions)
    c.print("[dim]GB = 10^9 B, GiB = 2^30 B. Concurrency assumes every request reaches the given length.[/dim]")
