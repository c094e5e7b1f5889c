"""kvcalc simulate: each policy's KV utilisation, throughput and latency, and memory over time."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, notes, table, track_record, verdict_line
from kvcalc.units import count_of, fmt_iec, fmt_si


def _ms(t: float) -> str:
    return f"{t * 1e3:,.0f}" if t >= 0.1 else f"{t * 1e3:,.1f}"


def _s(t: float) -> str:
    return f"{t:,.0f}" if t >= 100 else f"{t:,.1f}" if t >= 1 else f"{t:.2f}"


def render(r: Any, plot: bool = False) -> None:
    c = console()
    if r.verdict:
        style = "bold red" if r.verdict.startswith("OVERLOADED") else "bold"
        verdict_line(c, r.verdict, style)
    dpw = (
        (f", DP {r.dp}" if r.dp > 1 else "") + (f", EP {r.ep}" if r.ep > 1 else "") + (": one DP rank shown" if r.dp > 1 else "")
    )
    pool = (
        f"PP {r.pp}{dpw}, one micro-batch shown: its share of {r.engine}'s KV pools {fmt_si(r.pool_bytes)} = "
        f"{fmt_iec(r.pool_bytes)} over every stage, {r.kv_bytes_per_token:,} B per token over every layer"
        if getattr(r, "pp", 1) > 1
        else f"{dpw[2:] + ', ' if dpw else ''}{r.engine}'s KV pool {fmt_si(r.pool_bytes)} = {fmt_iec(r.pool_bytes)} per GPU, "
        f"{r.kv_bytes_per_token:,} B per token"
    )
    c.print(
        f"[bold]{esc(r.model)}[/bold] on [bold]{esc(r.gpu)}[/bold] (TP {r.tp}, {pool}): {count_of(r.requests, 'request')}, "
        f"mean prompt {r.mean_prompt:,.0f} and output {r.mean_output:,.0f} tokens, max {r.max_len:,}; {r.arrival}"
    )
    t = table(
        None,
        ("policy", "left"),
        ("KV util", "right"),
        ("batch", "right"),
        ("req/s", "right"),
        ("tok/s", "right"),
        ("TTFT s\np50/p99", "right"),
        ("TPOT ms\np50/p99", "right"),
        ("preempt", "right"),
    )
    for col in t.columns:
        col.no_wrap = True
    for p in r.runs:
        t.add_row(
            p.policy,
            f"{p.kv_utilization:.1%}",
            f"{p.mean_running:,.1f}",
            f"{p.requests_per_s:,.2f}",
            f"{p.output_tokens_per_s:,.0f}",
            f"{_s(p.ttft_s.p50)}/{_s(p.ttft_s.p99)}",
            f"{_ms(p.tpot_s.p50)}/{_ms(p.tpot_s.p99)}",
            f"{p.preemptions:,}",
        )
    c.print(t)
    bench = [p for p in r.runs if p.bench is not None]
    if bench:
        c.print("The whole run as vllm bench serve reports it (first send to last completion):")
        tb = table(
            None,
            ("policy", "left"),
            ("req/s", "right"),
            ("out tok/s", "right"),
            ("TTFT s\nmean/p50/p99", "right"),
            ("TPOT ms\nmean/p50/p99", "right"),
            ("ITL ms\nmean/p99", "right"),
            ("E2EL s\nmean", "right"),
        )
        for col in tb.columns:
            col.no_wrap = True
        for p in bench:
            m = p.bench
            tb.add_row(
                p.policy,
                f"{m.request_throughput_per_s:,.2f}",
                f"{m.output_throughput_tok_per_s:,.0f}",
                f"{_s(m.ttft_s.mean)}/{_s(m.ttft_s.p50)}/{_s(m.ttft_s.p99)}",
                f"{_ms(m.tpot_s.mean)}/{_ms(m.tpot_s.p50)}/{_ms(m.tpot_s.p99)}",
                f"{_ms(m.itl_s.mean)}/{_ms(m.itl_s.p99)}",
                _s(m.e2el_s.mean),
            )
        c.print(tb)
    if r.paged_over_prealloc is not None:
        pg = next(p for p in r.runs if p.block_size)
        c.print(f"{pg.policy} serves [bold]{r.paged_over_prealloc:.2f}x[/bold] the requests per second of prealloc")
    c.print("pool reserved: " + ", ".join(f"{p.policy} {p.pool_occupancy:.0%}" for p in r.runs) + " of the KV pool")
    pre = [p for p in r.runs if p.preemptions]
    for p in pre:
        c.print(
            f"{p.policy}: {p.preemptions:,} preemptions, {p.recomputed_tokens:,} tokens recomputed"
            + (f", {fmt_si(p.swapped_bytes)} swapped" if p.swapped_bytes else "")
        )
    if plot:
        c.print(ascii_timeline(r), markup=False, highlight=False)
    notes(c, "Warnings", r.warnings, "yellow")
    track_record(c, r.track_record)
    notes(c, "Assumptions", [f"workload: {r.workload}", *r.assumptions])
    c.print(
        "[dim]KV util: bytes of tokens held / bytes reserved; batch: requests running; "
        "all time-weighted between the 10th and 90th percentile completions, where req/s and tok/s (output) "
        "are measured too (steady state). TTFT from the send to the first token; TPOT (end-to-end - TTFT) / (output - 1); "
        "ITL the gaps between tokens; E2EL send to last token. ms = 10^-3 s. GB = 10^9 B, GiB = 2^30 B.[/dim]"
    )


def ascii_timeline(r: Any, width: int = 64, height: int = 12) -> str:
    """Reserved KV memory over time, one row of marks per policy's share of the pool."""
    marks = "PO123456789"
    end = max((p.timeline[-1][0] for p in r.runs if p.timeline), default=0.0)
    if end <= 0:
        return "(nothing to plot)"
    grid = [[" "] * width for _ in range(height)]
    legend = []
    for k, p in enumerate(r.runs):
        m = "P" if p.policy == "prealloc" else "O" if p.policy == "oracle" else marks[2 + k % 9]
        legend.append(f"{m} {p.policy} reserved ({p.kv_utilization:.0%} of it holds tokens)")
        for t, _live, res in p.timeline:
            col = min(int(t / end * (width - 1)), width - 1)
            y = height - 1 - min(int(res / r.pool_bytes * (height - 1) + 0.5), height - 1) if r.pool_bytes else height - 1
            grid[y][col] = m
    lines = ["KV memory reserved over time (share of the pool)"]
    for i, cells in enumerate(grid):
        label = f"{(height - 1 - i) / (height - 1):>4.0%}" if i in (0, height // 2, height - 1) else "    "
        lines.append(f"{label} |" + "".join(cells))
    lines.append("     +" + "-" * width)
    lines.append(f"      0 s{'':>{width - 12}}{end:,.1f} s")
    lines += ["      " + x for x in legend]
    return "\n".join(lines)


def write_chart(r: Any, path: str) -> None:
    """Memory over time for every policy (reserved, solid; holding tokens, dashed) to a file."""
    from kvcalc.render.plot import figure_file

    with figure_file(path) as plt:
        _, ax = plt.subplots(figsize=(8, 4.5))
        gib = 2**30
        for k, p in enumerate(r.runs):
            ts = [x[0] for x in p.timeline]
            ax.plot(ts, [x[2] / gib for x in p.timeline], "-", color=f"C{k}", label=f"{p.policy} reserved")
            ax.plot(ts, [x[1] / gib for x in p.timeline], "--", color=f"C{k}", label=f"{p.policy} holding tokens")
        ax.axhline(r.pool_bytes / gib, color="black", linewidth=0.8, label="KV pool")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("KV memory per GPU (GiB)")
        ax.set_title(f"{r.model} on {r.gpu}: {count_of(r.requests, 'request')}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
