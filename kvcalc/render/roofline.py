"""kvcalc roofline: the bound of one step, or a grid of them (summarised when it is large)."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, kv_lines, ms, notes, origin_line, table, track_record, verdict_line
from kvcalc.units import count_of, fmt_bytes, fmt_flops, fmt_rate, fmt_si

TABLE_ROWS = 64
"""Grids with more points print a summary per batch instead of every row (all rows are in --json)."""


def _header(c: Any, r: Any, origin: dict[str, str] | None) -> None:
    origin_line(c, origin)  # (after the verdict, which comes first: what was taken by default, as every command says it)
    c.print(
        f"[bold]{esc(r.model)}[/bold] on [bold]{esc(r.gpu)}[/bold]: tp {r.tp}"
        + (f", dp {r.dp}" if r.dp > 1 else "")
        + (f", ep {r.ep}" if r.ep > 1 else "")
        + f", KV {r.kv_dtype}, "
        f"{fmt_rate(r.bandwidth_bytes_per_s)}, {fmt_flops(r.peak_flops_per_s, 'OP' if r.compute_dtype == 'int8' else 'FLOP')} "
        f"{r.compute_dtype} dense"
    )


def verdict(r: Any) -> str:
    """The answer in one line, first: what binds, the least a step takes, and whether the batch fits."""
    if len(r.rows) == 1:
        p = r.rows[0]
        line = f"{p.bound_by}-bound: a decode step of {p.batch} x {p.seq:,} tokens takes at least {ms(p.t_bound_s)}"
        if p.t_step_s is not None:
            line += f", {ms(p.t_step_s)} with the step model"
        if p.fits_in_memory is False:
            line += (
                f"; the batch does NOT fit in memory (at most {count_of(p.max_batch_in_memory or 0, 'request')} of this length)"
            )
        elif p.fits_in_memory:
            line += f"; the batch fits in memory (up to {count_of(p.max_batch_in_memory, 'request')} of this length)"
        return line
    cols = r.rows.columns
    n = len(r.rows)
    mem = cols["bound_by"].count("memory")
    if mem == n:
        line = f"memory-bound at all {n:,} points"
    elif mem == 0:
        line = f"compute-bound at all {n:,} points"
    else:
        line = f"memory-bound at {mem:,} of {n:,} points, compute-bound at {n - mem:,}"
    line += f"; a step takes at least {ms(min(cols['t_bound_s']))} to {ms(max(cols['t_bound_s']))}"
    fits = cols["fits_in_memory"]
    if None not in fits:
        k = fits.count(True)
        line += (
            "; every point fits in memory"
            if k == n
            else "; NONE fits in memory"
            if k == 0
            else f"; {k:,} of the {n:,} fit in memory"
        )
    return line


def _one(c: Any, r: Any, p: Any) -> None:
    lines = [
        ("weights resident, per GPU", fmt_bytes(p.weight_bytes_resident)),
        ("weights read per step", fmt_bytes(p.weight_bytes_read)),
        (f"KV read per step ({p.batch} x {p.seq:,} tokens)", fmt_bytes(p.kv_bytes_read)),
        ("memory term", f"{ms(p.t_memory_s)} ({fmt_si(p.bytes_read)} / {fmt_rate(r.bandwidth_bytes_per_s)})"),
        ("compute term", f"{ms(p.t_compute_s)}  ({p.flops:,.4g} FLOP)"),
        ("decode step lower bound", f"{ms(p.t_bound_s)}, {p.bound_by}-bound"),
        *(
            [
                (
                    "realistic step (step model)",
                    f"{ms(p.t_step_s)} = {ms(p.t_step_s - p.t_fixed_s - (p.t_collective_s or 0.0))} of matmul and "
                    f"attention kernels + {ms(p.t_fixed_s)} fixed"
                    + (f" + {ms(p.t_collective_s)} {'all-reduces' if r.dp == 1 else 'collectives'}" if p.t_collective_s else ""),
                ),
                (
                    "tokens/s at the realistic step" + (f", {r.dp} DP ranks" if r.dp > 1 else ""),
                    f"{p.tokens_per_s_step:,.1f} tokens/s",
                ),
            ]
            if p.t_step_s is not None
            else []
        ),
        ("KV share of bytes read", f"{p.kv_share:.1%}"),
        (
            "tokens/s upper bound, per replica" if r.dp == 1 else f"tokens/s upper bound, {r.dp} DP ranks",
            f"{p.tokens_per_s:,.1f} tokens/s",
        ),
        ("arithmetic intensity", f"{p.arithmetic_intensity:,.2f} FLOP/B (ridge {p.ridge_intensity:,.0f} FLOP/B)"),
        (
            "KV term = weights term at",
            f"{p.kv_equals_weights_at_seq:,} tokens"
            if p.kv_equals_weights_at_seq is not None
            else "never (KV stops growing: windowed or state layers)",
        ),
        ("compute-bound from batch", f"{p.compute_bound_at_batch:,}" if p.compute_bound_at_batch else "never at this context"),
        (
            "batches that fit in memory",
            (
                f"up to {p.max_batch_in_memory:,}" + ("" if p.fits_in_memory else "  [this batch does NOT fit]")
                if p.max_batch_in_memory is not None
                else "any (the model caches nothing per request)"
            ),
        ),
    ]
    if p.t_allreduce_s is not None:
        lines.append(("+ all-reduce (separate)", f"{ms(p.t_allreduce_s)} ({fmt_bytes(p.allreduce_bytes)} of activations, ring)"))
    kv_lines(c, lines)


WIDE = 100
"""Terminals at least this wide also show each point's memory and compute terms (the bound is the
larger, and 'by' names it); narrower ones would crop them, so they are left to --json."""


def _grid(c: Any, r: Any) -> None:
    wide = c.width >= WIDE
    t = table(
        None,
        ("batch", "right"),
        ("seq", "right"),
        *([("mem ms", "right"), ("comp ms", "right")] if wide else []),
        ("bound ms", "right"),
        ("step ms", "right"),
        ("by", "left"),
        ("KV %", "right"),
        ("tokens/s", "right"),
        ("fits", "left"),
    )
    for col in t.columns:
        col.no_wrap = True
    for p in r.rows:
        t.add_row(
            f"{p.batch:,}",
            f"{p.seq:,}",
            *([f"{p.t_memory_s * 1e3:,.3f}", f"{p.t_compute_s * 1e3:,.3f}"] if wide else []),
            f"{p.t_bound_s * 1e3:,.3f}",
            f"{p.t_step_s * 1e3:,.3f}" if p.t_step_s is not None else "-",
            p.bound_by,
            f"{p.kv_share * 100:.1f}",
            f"{p.tokens_per_s:,.0f}",
            "yes" if p.fits_in_memory else "[bold red]NO[/bold red]",
        )
    c.print(t)
    c.print(
        "[dim]bound: no step can be faster (the larger of the memory and compute terms; by: which); step: kvcalc's "
        "step model (efficiencies, per-step cost, all-reduces), what an engine's step takes; tokens/s at the bound. "
        "fits: whether the batch's KV fits in the engine's pool (kvcalc fit); "
        + ("" if wide else f"each term in --json or on a terminal of {WIDE} columns; ")
        + "bytes per row in --json.[/dim]"
    )


def _summary(c: Any, r: Any) -> None:
    """One line per batch (up to 64 batches, evenly spaced): the bound at the shortest and longest
    context, where the KV term reaches the weights, where compute binds, and up to which context the
    batch fits."""
    cols = r.rows.columns
    seqs = r.inputs["seq"]
    n_batch = len(r.kv_equals_weights)
    c.print(
        f"{len(r.rows):,} points: {n_batch:,} batches x {len(seqs):,} contexts from {seqs[0]:,} to "
        f"{seqs[-1]:,} tokens. A summary per batch; every point is in --json."
    )
    t = table(
        None,
        ("batch", "right"),
        ("bound, ms", "right"),
        ("KV = weights", "right"),
        ("compute-bound", "right"),
        ("fits up to", "right"),
    )
    shown = list(r.kv_equals_weights)
    if len(shown) > TABLE_ROWS:
        step = -(-len(shown) // TABLE_ROWS)
        shown = shown[::step] + ([shown[-1]] if shown[-1] not in shown[::step] else [])
    index = {b: i for i, b in enumerate(r.kv_equals_weights)}
    for b in shown:
        idx = range(index[b], n_batch * len(seqs), n_batch)  # this batch's point at every context
        lo, hi = idx[0], idx[-1]
        comp = [cols["seq"][j] for j in idx if cols["bound_by"][j] == "compute"]
        fits = [cols["seq"][j] for j in idx if cols["fits_in_memory"][j]]
        kv_eq = r.kv_equals_weights[b]
        t.add_row(
            f"{b:,}",
            f"{cols['t_bound_s'][lo] * 1e3:,.3f}..{cols['t_bound_s'][hi] * 1e3:,.3f}",
            f"{kv_eq:,} tokens" if kv_eq is not None else "never",
            f"from {min(comp):,}" if comp else "never",
            f"{max(fits):,}" if fits else "none",
        )
    c.print(t)
    c.print(
        "[dim]bound: at the shortest..longest context; KV = weights: the context where the KV term reaches the "
        "weights term; compute-bound: from which context FLOPs bind; fits up to: the longest context at which "
        "the batch fits in the pool.[/dim]"
    )


def render(r: Any, origin: dict[str, str] | None = None, plot: bool = False) -> None:
    c = console()
    verdict_line(c, verdict(r))
    _header(c, r, origin)
    if len(r.rows) == 1:
        _one(c, r, r.rows[0])
    elif len(r.rows) <= TABLE_ROWS:
        _grid(c, r)
        c.print(
            "KV term = weights term at: "
            + ", ".join(
                f"batch {b}: {s:,} tokens" if s is not None else f"batch {b}: never" for b, s in r.kv_equals_weights.items()
            )
        )
    else:
        _summary(c, r)
    if r.prefill:
        pre = r.prefill
        c.print(
            f"prefill of {pre.prompt:,} tokens: >= {ms(pre.t_bound_s)} ({pre.bound_by}-bound; "
            f"compute {ms(pre.t_compute_s)}, weights {ms(pre.t_memory_s)})"
        )
    for p in r.rows if len(r.rows) <= TABLE_ROWS else []:
        for w in p.warnings:
            if "does not fit" not in w or len(r.rows) == 1:
                c.print(f"[yellow]warning:[/yellow] {w}", markup=True)
    for w in r.warnings:
        c.print(f"[yellow]warning:[/yellow] {esc(w)}", markup=True)
    if plot:
        from kvcalc.render.plot import ascii_loglog

        for ch in charts(r):
            c.print(ascii_loglog(ch["series"], ch["title"], ch["xlabel"], ch["ylabel"]), markup=False, highlight=False)
    track_record(c, r.track_record)
    notes(c, "Assumptions", r.assumptions)
    c.print("[dim]ms = 10^-3 s; GB = 10^9 B, GiB = 2^30 B; tokens/s is an upper bound per model replica.[/dim]")
    if r.measure is not None:
        from kvcalc.render.measure import render as render_measure

        m = r.measure
        c.print(
            f"[bold]Measured on {esc(m.device_name)}[/bold] ({m.device}): the rows above are {esc(r.gpu)}'s bound; the measurement "
            "below is held against the bound of the same step on the device that ran it"
        )
        render_measure(r.measure)


def charts(r: Any) -> list[dict[str, Any]]:
    """The roofline (attainable FLOP/s against intensity, configurations marked) and the step
    time against context, one series per batch."""
    from kvcalc.render.plot import Series

    peak, bw = r.peak_flops_per_s, r.bandwidth_bytes_per_s
    cols = r.rows.columns
    ai = list(cols["arithmetic_intensity"])
    lo, hi = min(ai + [1.0]) / 4, max(ai + [peak / bw]) * 4
    xs = sorted([lo * (hi / lo) ** (i / 40) for i in range(41)] + [peak / bw])  # the ridge: a sharp corner
    roof = Series(f"roof: min({fmt_flops(peak)}, {fmt_rate(bw)} x I)", xs, [min(peak, bw * x) for x in xs], "-")
    marks = "ox+*#@%&"
    by_batch: dict[int, list[int]] = {}
    for i, b in enumerate(cols["batch"]):
        by_batch.setdefault(b, []).append(i)
    points, times = [], []
    for n, (b, idx) in enumerate(by_batch.items()):
        m = marks[n % len(marks)]
        points.append(
            Series(
                f"batch {b}",
                [cols["arithmetic_intensity"][i] for i in idx],
                [cols["flops"][i] / cols["t_bound_s"][i] for i in idx],
                m,
                line=False,
                color=n,
            )
        )
        times.append(Series(f"batch {b}", [float(cols["seq"][i]) for i in idx], [cols["t_bound_s"][i] for i in idx], m, color=n))
    roofline_chart = {
        "title": f"Roofline: {r.gpu}, {r.compute_dtype}",
        "xlabel": "arithmetic intensity, FLOP/B",
        "ylabel": "attainable FLOP/s",
        "series": [roof] + points,
    }
    if len(r.inputs["seq"]) > 1:
        return [
            roofline_chart,
            {
                "title": "Decode step lower bound against context",
                "xlabel": "context, tokens",
                "ylabel": "seconds per step",
                "series": times,
            },
        ]
    if len(by_batch) > 1:
        # One context: the step time against the batch instead (a chart of single points says nothing).
        s0 = cols["seq"][0]
        step = Series(
            f"context {s0:,} tokens",
            [float(b) for b in by_batch],
            [cols["t_bound_s"][idx[0]] for idx in by_batch.values()],
            "o",
            color=0,
        )
        return [
            roofline_chart,
            {
                "title": f"Decode step lower bound against batch, context {s0:,}",
                "xlabel": "batch, requests",
                "ylabel": "seconds per step",
                "series": [step],
            },
        ]
    return [roofline_chart]
