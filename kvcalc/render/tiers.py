"""kvcalc tiers: capacity and reload cost per tier, and the prefill-to-decode transfer."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, ms, notes, table, verdict_line
from kvcalc.units import fmt_bytes, fmt_rate, fmt_si


def verdict(r: Any) -> str:
    """The answer first: which tiers reload a request's KV faster than recomputing it."""
    always = [x.tier for x in r.tiers if x.bandwidth_bytes_per_s is not None and x.break_even_seq == 1]
    later = [
        f"{x.tier} from {x.break_even_seq:,} tokens" for x in r.tiers if x.bandwidth_bytes_per_s and (x.break_even_seq or 0) > 1
    ]
    never = [x.tier for x in r.tiers if x.bandwidth_bytes_per_s is not None and x.break_even_seq is None]
    parts = ([f"{', '.join(always)} at any length"] if always else []) + later
    line = (
        "reloading a request's KV beats recomputing it from " + "; ".join(parts)
        if parts
        else "recomputing beats reloading from every tier"
    )
    if never and parts:
        line += f"; never from {', '.join(never)}"
    return line


def render(r: Any) -> None:
    c = console()
    verdict_line(c, verdict(r))
    rows, d = r.tiers, r.disaggregation
    c.print(
        f"[bold]{esc(r.model)}[/bold] on [bold]{esc(r.gpu)}[/bold]: one request of {r.seq:,} tokens; recomputing "
        f"its KV (prefill) takes {ms(rows[0].recompute_s)}"
    )
    t = table(
        None,
        ("tier", "left"),
        ("capacity", "right"),
        ("bandwidth", "right"),
        ("requests", "right"),
        ("reload", "right"),
        ("reload wins from", "right"),
    )
    for col in t.columns:
        col.no_wrap = True
    for x in rows:
        be = (
            "-"
            if x.bandwidth_bytes_per_s is None
            else ("never" if x.break_even_seq is None else ("always" if x.break_even_seq == 1 else f"{x.break_even_seq:,} tok"))
        )
        t.add_row(
            x.tier,
            fmt_si(x.capacity_bytes),
            fmt_rate(x.bandwidth_bytes_per_s) if x.bandwidth_bytes_per_s else "-",
            f"{x.requests:,}",
            ms(x.reload_s) if x.reload_s is not None else "-",
            be,
        )
    c.print(t)
    c.print(
        "[bold]Prefill -> decode transfer[/bold] over "
        + (f"{d.senders} x " if d.senders > 1 else "")
        + f"{fmt_rate(d.link_bytes_per_s)}: {fmt_bytes(d.bytes_per_request)} "
        f"per request, {ms(d.transfer_s)} ({d.transfer_over_step:,.1f} decode steps at their bound of {ms(d.decode_step_s)}"
        + (
            f", {d.transfer_over_model_step:,.1f} of kvcalc's step model's {ms(d.decode_step_model_s)}"
            if d.decode_step_model_s and d.transfer_over_model_step is not None
            else ""
        )
        + "); "
        + (
            f"the link{'s carry' if d.senders > 1 else ' carries'} at most {d.max_requests_per_s:,.2f} requests/s"
            if d.max_requests_per_s is not None
            else "no KV to ship: the link does not limit the rate"
        )
        + (
            f"; at {d.rate:g}/s {'they are' if d.senders > 1 else 'it is'} {d.link_utilization:.0%} busy: "
            + ("[green]keeps up[/green]" if d.keeps_up else "[bold red]does not keep up[/bold red]")
            if d.rate
            else ""
        )
    )
    notes(c, "Assumptions", r.assumptions)
    c.print("[dim]GB = 10^9 B; bandwidths in decimal units per second; ms = 10^-3 s.[/dim]")
