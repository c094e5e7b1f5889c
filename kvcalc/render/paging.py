"""kvcalc paging: each allocation policy's utilisation and waste on one workload."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from kvcalc.render.console import console, notes, table, verdict_line
from kvcalc.units import count_of, fmt_iec, fmt_si


def verdict(r: Any) -> str:
    """The answer first: how many requests paging holds against reserving --max-len."""
    pol = r.policies
    pg, pre = pol.get("paged-16"), pol["prealloc"]
    if pg is None:
        best = max(pol.values(), key=lambda p: p.mean_concurrency)
        return f"{best.policy} holds the most requests at once: {best.mean_concurrency:,.1f}"
    line = f"paged-16 holds {pg.mean_concurrency:,.1f} requests at once, using {pg.utilization:.1%} of what it reserves"
    if r.paged_over_prealloc is not None:
        line += f"; {r.paged_over_prealloc:.2f}x the {pre.mean_concurrency:,.1f} of prealloc"
    else:
        line += f"; prealloc holds none (one --max-len reservation, {r.max_len:,} tokens, is more than the pool)"
    return line


def render(r: Any) -> None:
    c = console()
    verdict_line(c, verdict(r))
    c.print(
        f"[bold]{escape(r.model)}[/bold]"
        + (f" on [bold]{escape(r.gpu)}[/bold]" if r.gpu else "")
        + f": {escape(r.workload)}, {count_of(r.requests, 'request')} (mean {r.mean_len:,.0f} tokens), max-len {r.max_len:,}, "
        f"KV pool {fmt_si(r.pool_bytes)} ({fmt_iec(r.pool_bytes)})"
    )
    t = table(
        None,
        ("policy", "left"),
        ("utilisation", "right"),
        ("pool used", "right"),
        ("wasted", "right"),
        ("free, unusable", "right"),
        ("requests", "right"),
    )
    for col in t.columns:
        col.no_wrap = True
    for p in r.policies.values():
        t.add_row(
            p.policy,
            f"{p.utilization:.1%}",
            f"{p.pool_utilization:.1%}",
            fmt_si(p.wasted_bytes),
            fmt_si(p.external_bytes),
            f"{p.mean_concurrency:,.1f}",
        )
    c.print(t)
    if r.prefix_sharing:
        s = r.prefix_sharing
        c.print(
            f"shared prefix of {s.shared_prefix_tokens:,} tokens ({s.shared_blocks} blocks stored once, "
            f"{s.copied_tokens_per_request} tokens copied per request): {s.max_concurrency_without:,} -> "
            f"{count_of(s.max_concurrency_with, 'request')} ({s.gain:.2f}x)"
        )
    notes(c, "Notes", r.notes, "yellow")
    notes(c, "Assumptions", r.assumptions)
    c.print(
        "[dim]utilisation: live bytes / reserved; pool used: live / pool; wasted: reserved, not live (reservation "
        "or last-block); free, unusable: holes and the tail too small for the next request. GB = 10^9 B.[/dim]"
    )
