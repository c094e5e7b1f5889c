"""kvcalc measure: the timed kernels against the bound of the same step."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, kv_lines, notes, table, us, verdict_line
from kvcalc.units import fmt_bytes, fmt_rate, fmt_si


def verdict(r: Any) -> str:
    """The answer first: how near the headline kernel runs to the bound of the same step."""
    if r.t_measured_s is None:
        return "no kernel was timed: see the notes"
    line = f"{r.kernel} runs the decode attention in {us(r.t_measured_s)}, {r.measured_over_bound:.2f}x its bound of {us(r.t_bound_s)}"
    if r.achieved_bytes_per_s and r.read_ceiling_bytes_per_s:
        line += f" ({r.achieved_bytes_per_s / r.read_ceiling_bytes_per_s:.0%} of the measured read ceiling)"
    return line


def render(r: Any) -> None:
    c = console()
    verdict_line(c, verdict(r))
    g = r.geometry
    shape = f"MLA latent {g['d_k']} ({g['n_q']} heads)" if g["kind"] == "mla" else f"{g['n_q']}q/{g['n_kv']}kv x {g['d_k']}"
    c.print(
        f"[bold]{esc(r.model)}[/bold] decode attention on [bold]{esc(r.device_name)}[/bold] ({r.device}): {shape}, "
        f"batch {r.batch}, {r.seq_lens['min']:,}..{r.seq_lens['max']:,} tokens, {r.dtype}"
        + (f", KV {r.kv_dtype}" if r.kv_dtype and r.kv_dtype != r.dtype else "")
        + f", {r.layers} layer(s), block {g['block_size']}"
    )
    c.print(f"validates: {r.label}")
    kv_lines(
        c,
        [
            ("bytes moved (KV once, q, out)", fmt_bytes(r.bytes)),
            ("FLOPs", f"{r.flops:,}"),
            ("read ceiling, measured", fmt_rate(r.read_ceiling_bytes_per_s)),
            ("copy ceiling, measured (read + write)", fmt_rate(r.copy_ceiling_bytes_per_s)),
            ("datasheet bandwidth", fmt_rate(r.datasheet_bytes_per_s) if r.datasheet_bytes_per_s else "-"),
            ("bound for this step", f"{us(r.t_bound_s)} ({r.bound_by}-bound)"),
        ],
    )
    t = table(
        None,
        ("kernel", "left"),
        ("error", "right"),
        ("median", "right"),
        ("achieved", "right"),
        ("% read", "right"),
        ("% sheet", "right"),
        ("x bound", "right"),
    )
    # Figures never wrap; the kernel's name may ("triton-paged (graph)" on a GPU), so that at 80
    # columns the name takes two lines rather than the last column losing its digits.
    for col in t.columns[1:]:
        col.no_wrap = True
    for k in r.kernels:
        if k.t_measured_s is None:
            err = "-" if k.rel_error != k.rel_error else f"{k.rel_error:.1e}"
            t.add_row(k.kernel, err, "[red]failed[/red]" if "failed" in k.note else "[red]not timed[/red]", "-", "-", "-", "-")
            continue
        # A median whose repeats disagree beyond the stated spread is printed as approximate.
        t.add_row(
            k.kernel + (" (graph)" if k.cuda_graph else ""),
            f"{k.rel_error:.1e}",
            ("~" if not k.stable else "") + us(k.t_measured_s),
            fmt_rate(k.achieved_bytes_per_s),
            f"{k.pct_read_ceiling:.0%}",
            f"{k.pct_datasheet:.0%}" if k.pct_datasheet is not None else "-",
            f"{k.measured_over_bound:,.2f}",
        )
    c.print(t)
    c.print(
        f"[dim]median of {max((k.runs for k in r.kernels), default=0)} runs; p10 and p90 in --json; ~: repeats "
        "spread over 10% of the median. % read: of the measured read ceiling; % sheet: of the datasheet "
        "bandwidth.[/dim]"
    )
    if r.weights:
        w = r.weights
        c.print(
            f"weights: {fmt_bytes(w['weight_bytes'])} streamed in {us(w['t_measured_s'])} "
            f"({fmt_rate(w['achieved_bytes_per_s'])}, {w['measured_over_bound']:.2f}x the bound)"
        )
    if r.full_step:
        f = r.full_step
        c.print(f"[bold]Full decode step[/bold] ({f['note']}):")
        t2 = table(None, ("term", "left"), ("moves", "right"), ("measured", "right"), ("bound", "right"), ("x bound", "right"))
        for col in t2.columns:
            col.no_wrap = True
        w, kv, cp = f["weights"], f["kv"], f["compute"]
        t2.add_row(
            "weights + head",
            fmt_si(w["bytes"]),
            us(w["t_measured_s"]),
            us(w["t_bound_s"]),
            f"{w['t_measured_s'] / w['t_bound_s']:.2f}",
        )
        t2.add_row(
            "KV (attention)",
            fmt_si(kv["bytes"]),
            us(kv["t_measured_s"]),
            us(kv["t_bound_s"]),
            f"{kv['t_measured_s'] / kv['t_bound_s']:.2f}",
        )
        t2.add_row("compute", f"{cp['flops'] / 1e9:,.1f} GFLOP", "-", us(cp["t_bound_s"]), "-")
        t2.add_row(
            "[bold]the step[/bold]",
            f["bound_by"] + "-bound",
            us(f["t_measured_s"]),
            us(f["t_bound_s"]),
            f"{f['measured_over_bound']:.2f}",
        )
        c.print(t2)
    notes(c, "Notes", [f"{k.kernel}: {k.note}" for k in r.kernels if k.note] + r.notes, "yellow")
    c.print(
        "[dim]error: ||out - ref|| / ||ref|| against a float64 (CPU) or float32 (GPU) reference on the timed shape; "
        "x bound: measured / the bound.[/dim]"
    )
