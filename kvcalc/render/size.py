"""kvcalc size: KV bytes by layer kind, then per token, per request and per batch."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, kv_lines, notes, table, verdict_line
from kvcalc.units import fmt_bytes


def verdict(r: Any) -> str:
    """The answer first: a request's KV and the batch's, and the busiest GPU's share when split."""
    line = f"KV cache: {fmt_bytes(r.kv_bytes_per_request)} a request of {r.seq:,} tokens"
    if r.batch > 1:
        line += f", {fmt_bytes(r.kv_bytes_total)} for the batch of {r.batch:,}"
    if r.tp * r.pp * r.dp > 1:
        line += f"; {fmt_bytes(r.per_gpu.kv_bytes_total)} on the most loaded GPU"
    return line


def render(r: Any) -> None:
    c = console()
    verdict_line(c, verdict(r))
    alloc = "logical bytes" if r.allocation == "logical" else f"what {r.allocation} allocates"
    c.print(
        f"[bold]{esc(r.model)}[/bold]  seq {r.seq:,} tokens, batch {r.batch}, KV {r.kv_dtype}, "
        f"tp {r.tp}, pp {r.pp}"
        + (f", dp {r.dp}" if r.dp > 1 else "")
        + f": {alloc}"
        + (f", blocks of {r.block_size} tokens" if r.block_size else "")
    )
    per_gpu = r.tp * r.pp * r.dp > 1
    t = table(
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
            esc(f"{row.name}: {row.description}"),
            str(row.layers),
            f"{row.bytes_per_token_per_layer:,}" if row.holds_tokens else "-",
            f"{row.tokens_held:,}" if row.holds_tokens else "constant",
            f"{row.bytes_per_request:,}",
            f"{row.bytes_per_request / 2**30:,.2f}",
        )
    c.print(t)
    rows = []
    if per_gpu:
        rows += [
            ("KV per token, per GPU", fmt_bytes(r.per_gpu.kv_bytes_per_token)),
            ("KV per request, per GPU", fmt_bytes(r.per_gpu.kv_bytes_per_request)),
            (
                f"KV for the batch of {r.batch}, per GPU"
                if r.dp == 1
                else f"KV for {-(-r.batch // r.dp)} requests (a DP rank), per GPU",
                fmt_bytes(r.per_gpu.kv_bytes_total),
            ),
        ]
    label = f", all {r.tp * r.pp} GPUs" if per_gpu and r.dp == 1 else f", all {r.tp * r.pp * r.dp} GPUs" if per_gpu else ""
    rows += [
        (f"KV per token{label}", fmt_bytes(r.kv_bytes_per_token)),
        (f"KV per request{label}", fmt_bytes(r.kv_bytes_per_request)),
        (f"KV for the batch of {r.batch}{label}", fmt_bytes(r.kv_bytes_total)),
    ]
    kv_lines(c, rows)
    notes(c, "Warnings", r.warnings, "yellow")
    notes(c, "Assumptions", r.assumptions)
    c.print("[dim]GB = 10^9 B, GiB = 2^30 B. KV per token: what one token adds while inside every layer's window.[/dim]")
