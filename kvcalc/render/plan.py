"""kvcalc plan: the deployments that carry the load, fewest GPUs first, and what binds each."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, notes, table, track_record, verdict_line


def _ms(t: float) -> str:
    return f"{t * 1e3:,.1f}" if t < 1 else f"{t * 1e3:,.0f}"


def _compact(shape: str) -> str:
    """'DP 16 x TP 1 x EP 16' -> 'DP16 EP16' (TP 1 said only alone)."""
    parts = [p.replace(" ", "") for p in shape.split(" x ")]
    if len(parts) > 1:
        parts = [p for p in parts if p != "TP1"]
    return " ".join(parts)


def _pools(d: Any) -> str:
    (xp, _, sp), (yd, _, sd) = (d.prefill_pool.partition(" x "), d.decode_pool.partition(" x "))
    return f"{xp} x {_compact(sp)} prefill + {yd} x {_compact(sd)} decode"


def _shape(d: Any) -> str:
    if getattr(d, "mode", "aggregated") == "disaggregated":
        return _pools(d)
    base = _compact(d.shape) if getattr(d, "shape", "") else f"TP{d.tp}" + (f" PP{d.pp}" if d.pp > 1 else "")
    return base + (f" x{d.replicas}" if d.replicas > 1 else "")


def _targets(slo: Any) -> str:
    return ", ".join(
        x
        for x in (
            f"TTFT p{slo.percentile} <= {_ms(slo.ttft_s)} ms" if slo.ttft_s else "",
            f"mean TPOT <= {_ms(slo.tpot_s)} ms" if slo.tpot_s else "",
        )
        if x
    )


def _binding(d: Any) -> str:
    share = d.use.get(d.binding)
    return d.binding + (f" {share:.0%}" if share is not None and share <= 1 else "")


def _won(r: Any) -> str:
    b = r.best
    priced = any(d.cost_per_hour is not None for d in r.ranked)
    return "Lowest cost" if priced and b.cost_per_hour is not None and r.ranked_by == "cost" else "Fewest GPUs"


def _simulated_best(r: Any) -> Any:
    ok = [v for v in r.verified if v.ok]
    return min(ok, key=lambda v: v.gpus) if ok else None


def verdict(r: Any) -> str:
    """The answer in one line, first: the winner and whether it meets the targets, in the closed
    form and in simulation; or that nothing carries the load."""
    targets = _targets(r.slo)
    if r.ranked:
        b = r.best
        line = f"{_won(r)}: {b.gpus} x {b.gpu} ({_shape(b)}) " + ("meets the targets" if targets else "carries the load")
        if r.verified:
            key = (b.gpus, b.gpu, _shape(b))
            own = next((v for v in r.verified if (v.gpus, v.gpu, _shape(v)) == key), None)
            sb = _simulated_best(r)
            if own is not None and own.ok:
                line += "; the simulation agrees"
            elif own is not None:
                line += f"; in simulation it does not ({own.note}), " + (
                    "nor do the others checked" if sb is None else f"and the fewest that do: {sb.gpus} x {sb.gpu} ({_shape(sb)})"
                )
            else:
                # The best was not among those checked (a check table given without it).
                line += "; the simulation did not run it, " + (
                    f"and none of the {len(r.verified)} it checked does"
                    if sb is None
                    else f"and of those the fewest that do: {sb.gpus} x {sb.gpu} ({_shape(sb)})"
                )
        return line
    if r.nearest:
        d = r.nearest
        return f"NO DEPLOYMENT carries this load. Nearest: {d.gpus} x {d.gpu} ({_shape(d)}): {d.shortfall}"
    return "NO DEPLOYMENT carries this load: no candidate fits the model"


def render(r: Any) -> None:
    c = console()
    targets = _targets(r.slo)
    line = verdict(r)
    verdict_line(c, line, "bold red" if line.startswith("NO ") else "bold")
    c.print(
        f"[bold]{esc(r.model)}[/bold], {r.traffic}, KV {r.kv_dtype}, {r.engine}"
        + (f"; targets {targets}" if targets else "; no latency targets")
        + f" ({r.considered:,} configurations)"
    )
    if r.ranked:
        priced = any(d.cost_per_hour is not None for d in r.ranked)
        cols = (
            [
                ("GPUs", "right"),
                ("GPU", "left"),
                ("shape", "left"),
                ("in flight", "right"),
                ("holds", "right"),
                ("TPOT\nms", "right"),
                (f"TTFT\np{r.slo.percentile} ms", "right"),
            ]
            + ([("$/h", "right")] if priced else [])
            + [("binding", "left")]
        )
        one_type = len({d.gpu for d in r.ranked}) == 1
        if one_type:
            cols = [c_ for c_ in cols if c_[0] != "GPU"]
        t = table(f"on {esc(r.ranked[0].gpu)}" if one_type else None, *cols)
        for col in t.columns:
            col.no_wrap = True
        split = [d for d in r.ranked if d.mode == "disaggregated"]
        for d in r.ranked:
            row = (
                [f"{d.gpus:,}"]
                + ([] if one_type else [esc(d.gpu)])
                + [
                    f"P/D #{split.index(d) + 1}" if d in split else _shape(d),
                    f"{d.in_flight_per_replica:,.0f}",
                    f"{d.capacity_per_replica:,}",
                    _ms(d.tpot_s),
                    _ms(d.ttft_at_percentile_s),
                ]
            )
            if priced:
                row.append(f"{d.cost_per_hour:,.2f}" if d.cost_per_hour is not None else "-")
            t.add_row(*row, _binding(d))
        c.print(t)
        for i, d in enumerate(split, 1):
            c.print(f"P/D #{i}: {_pools(d)}; KV {d.kv_transfer_s * 1e3:,.1f} ms a prompt ({d.placement})")
        b = r.best
        c.print(
            f"{_won(r)}: [bold]{b.gpus} x {esc(b.gpu)}[/bold] ({_shape(b)}), {b.in_flight_per_replica:,.0f} requests in flight per "
            f"replica of the {b.capacity_per_replica:,} its KV pool holds; the decode step is {b.step_bound_by}-bound"
        )
        for line in (b.engine_flags, b.placement, b.why):
            if line:
                c.print(f"  {line}")
        if b.seat_wait_s >= 0.05 * b.ttft_s:
            pool = "a decode instance's KV pool" if b.mode == "disaggregated" else "its KV pool"
            c.print(
                f"  its mean TTFT of {_ms(b.ttft_s)} ms includes {_ms(b.seat_wait_s)} ms waiting for a seat: {pool} is "
                f"full {b.pool_full_share:.0%} of the time"
            )
        if b.mode == "disaggregated" and b.prefill_step_s > 0:
            c.print(
                f"  each prefill instance is busy {b.prefill_busy_share:.0%} of the time, its prompt steps "
                f"{_ms(b.prefill_step_s)} ms on average"
            )
        if r.disaggregation:
            c.print(r.disaggregation[0].upper() + r.disaggregation[1:])
        others = [d for d in r.per_gpu_type if d.gpu != b.gpu]
        if others:
            c.print("Best of each other GPU: " + "; ".join(f"{d.gpus} x {esc(d.gpu)} ({_shape(d)})" for d in others))
    if r.verified:
        c.print(
            f"[bold]Checked by simulation[/bold] (kvcalc simulate, one replica at the rate it is offered; P/D: one prefill "
            f"and one decode instance at theirs, the deployment's rate shown; p{r.verified[0].percentile}):"
        )
        # Figures only in the table, so that it stays whole at 80 columns; why a row misses goes below,
        # and a P/D row is named by the number the table above gave its pools (new ones said below).
        one_gpu = len({v.gpu for v in r.verified}) == 1
        t3 = table(
            f"on {esc(r.verified[0].gpu)}" if one_gpu else None,
            ("GPUs", "right"),
            *([] if one_gpu else [("GPU", "left")]),
            ("shape", "left"),
            (f"TTFT\np{r.verified[0].percentile} ms", "right"),
            ("TPOT\nmean ms", "right"),
            ("served/offered\nreq/s", "right"),
            ("vs\nclosed", "right"),
            ("", "left"),
        )
        for col in t3.columns:
            col.no_wrap = True
        misses = []
        labels = [_pools(d) for d in r.ranked if d.mode == "disaggregated"]
        told = len(labels)
        for v in r.verified:
            name = _shape(v)
            if v.mode == "disaggregated":
                if name not in labels:
                    labels.append(name)
                name = f"P/D #{labels.index(name) + 1}"
            t3.add_row(
                f"{v.gpus:,}",
                *([] if one_gpu else [esc(v.gpu)]),
                name,
                f"{v.ttft_s * 1e3:,.0f}",
                f"{v.tpot_mean_s * 1e3:,.1f}",
                f"{v.served_per_s:,.2f}/{v.offered_per_s:,.2f}",
                f"{v.tpot_mean_s / v.closed_form_tpot_s - 1:+.0%}" if v.closed_form_tpot_s else "-",
                "[green]meets[/green]" if v.ok else "[red]misses[/red]",
            )
            if not v.ok:
                misses.append(f"{v.gpus:,} x {v.gpu} ({_shape(v)}): {v.note}")
        c.print(t3)
        for i, name in enumerate(labels[told:], told + 1):
            c.print(f"P/D #{i}: {name}")
        notes(c, "Misses", misses, "")
        sb = _simulated_best(r)
        if sb is not None:
            b = sb
            c.print(
                f"Fewest that meet the targets in simulation: [bold]{b.gpus} x {esc(b.gpu)}[/bold] ({_shape(b)}"
                + (")" if b.mode == "disaggregated" else f", {b.replicas} replica{'s' if b.replicas > 1 else ''})")
            )
    notes(c, "Warnings", r.warnings, "yellow")
    notes(c, "Not considered", [f"{k}: {v}" for k, v in r.skipped.items()], "")
    track_record(c, r.track_record)
    notes(c, "Assumptions", r.assumptions)
    c.print(
        "[dim]shape: DP attention ranks, TP, EP, PP and replicas (x2); P/D: prefill and decode pools; in flight: requests per replica; holds: requests of the full length its KV pool holds; binding: what sets "
        "the replica count, or with one replica the constraint nearest its limit (share of it); vs closed: the "
        "simulation's mean TPOT against the closed form's. ms = 10^-3 s.[/dim]"
    )


def throughput_verdict(r: Any) -> str:
    """The most the GPUs carry, first: the better mode's rate and output tokens per GPU."""
    done = [x for x in (r.aggregated, r.disaggregated) if x.deployment is not None]
    if not done:
        return f"NO MODE meets the targets on {r.gpus} x {r.gpu}"
    x = max(done, key=lambda x: x.output_tokens_per_s_per_gpu)
    how = "disaggregated" if x.mode == "disaggregated" else f"aggregated as {_shape(x.deployment)}"
    used = x.deployment.gpus
    # The mode that carries the most per GPU may use fewer of the GPUs; where the other mode, on its own GPUs,
    # carries more requests in all, the line says so rather than call the first the most the GPUs carry.
    on = f"{used} of the {r.gpus} x {r.gpu}" if used < r.gpus else f"{r.gpus} x {r.gpu}"
    other = next((y for y in done if y is not x and y.rate_per_s > x.rate_per_s), None)
    more = (
        f"; {other.mode} carries more in all: {other.rate_per_s:,.2f} requests/s on {other.deployment.gpus}"
        if other is not None
        else ""
    )
    return (
        f"{on} carry at most {x.rate_per_s:,.2f} requests/s, {x.output_tokens_per_s_per_gpu:,.1f} output "
        f"tokens/s per GPU, {how}" + (" within the targets" if _targets(r.slo) else "") + more
    )


def render_throughput(r: Any) -> None:
    c = console()
    targets = _targets(r.slo)
    line = throughput_verdict(r)
    verdict_line(c, line, "bold red" if line.startswith("NO ") else "bold")
    c.print(
        f"[bold]{esc(r.model)}[/bold] on [bold]{r.gpus} x {esc(r.gpu)}[/bold], {r.traffic}, KV {r.kv_dtype}, {r.engine}; {targets or 'no targets'}"
    )
    t = table(
        None,
        ("mode", "left"),
        ("shape", "left"),
        ("GPUs", "right"),
        ("req/s", "right"),
        ("out tok/s/GPU", "right"),
        (f"TTFT p{r.slo.percentile} ms", "right"),
        ("TPOT ms", "right"),
    )
    for col in t.columns:
        col.no_wrap = True
    rows = []
    for carried in (r.aggregated, r.disaggregated):
        d = carried.deployment
        if d is None:
            t.add_row("agg" if carried.mode == "aggregated" else "disagg", "none meets the targets", "-", "-", "-", "-", "-")
            continue
        t.add_row(
            "agg" if carried.mode == "aggregated" else "disagg",
            "P/D, below" if d.mode == "disaggregated" else _shape(d),
            f"{d.gpus:,}",
            f"{carried.rate_per_s:,.2f}",
            f"{carried.output_tokens_per_s_per_gpu:,.1f}",
            _ms(d.ttft_at_percentile_s),
            _ms(d.tpot_s),
        )
        rows.append(d)
    c.print(t)
    for d in rows:
        if d.mode == "disaggregated":
            busy = f"each prefill instance busy {d.prefill_busy_share:.0%}; " if d.prefill_step_s > 0 else ""
            c.print(f"disagg: {_pools(d)}; KV {d.kv_transfer_s * 1e3:,.1f} ms a prompt; {busy}{d.engine_flags}")
        else:
            c.print(f"agg: {d.engine_flags}")
    if r.why:
        c.print(r.why[0].upper() + r.why[1:])
    notes(c, "Warnings", r.warnings, "yellow")
    track_record(c, r.track_record)
    notes(c, "Assumptions", r.assumptions)
    c.print(
        "[dim]agg: prefill and decode on the same GPUs; disagg: separate prefill and decode pools. out tok/s/GPU: output tokens a second per GPU used (AIConfigurator's tokens/s/gpu). ms = 10^-3 s.[/dim]"
    )
