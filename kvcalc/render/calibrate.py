"""kvcalc calibrate: the fitted constants, and each run measured against the fit."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, notes, table


def _ms(t: float | None) -> str:
    if t is None or t != t or t == float("inf"):
        return "-"
    return f"{t * 1e3:,.2f}" if t < 1 else f"{t * 1e3:,.0f}"


def render(r: Any) -> None:
    c = console()
    k = r.constants
    if r.runs:
        c.print(
            f"[bold]{esc(r.model)}[/bold] on [bold]{esc(r.gpu)}[/bold] (TP {', '.join(map(str, r.tp))}), {len(r.runs)} runs: "
            f"TPOT off by {r.rms_default:.1%} (rms of log ratios) with the defaults, {r.rms_fitted:.1%} fitted"
        )
    else:
        c.print(f"[bold]{esc(r.model)}[/bold] on [bold]{esc(r.gpu)}[/bold]: the bandwidth share from kvcalc measure")
    t = table(None, ("constant", "left"), ("value", "right"), ("", "left"))
    rows = [
        ("eta_bw", f"{k.eta_bw:.3f}", "share of peak memory bandwidth"),
        ("eta_c", f"{k.eta_c:.3f}", "share of 16-bit peak FLOP/s"),
        ("eta_c_fp8", f"{k.eta_c_fp8:.3f}", "share of fp8 peak FLOP/s"),
        ("eta_c_int8", f"{k.eta_c_int8:.3f}", "share of INT8 peak OP/s"),
        ("eta_c_fp4", f"{k.eta_c_fp4:.3f}", "share of fp4 peak FLOP/s"),
        ("eta_c_gemm", f"{k.eta_c_gemm:.3f}" if k.eta_c_gemm is not None else "GPU's", "matmuls' share, GPU's if measured"),
        ("fixed_s", f"{k.fixed_s * 1e3:.3f} ms", "per step"),
        ("alpha_s", f"{k.alpha_s * 1e6:.2f} us" if k.alpha_s is not None else "link's", "per all-reduce"),
        ("request_overhead_s", f"{k.request_overhead_s * 1e3:.2f} ms", "request path, in TTFT"),
    ]
    # eta_c_gemm follows a fitted eta_c, eta_c_fp8, eta_c_int8 or eta_c_fp4 (kvcalc.engine.calibrate._set).
    fitted = set(r.fitted) | ({"eta_c_gemm"} if {"eta_c", "eta_c_fp8", "eta_c_int8", "eta_c_fp4"} & set(r.fitted) else set())
    for name, val, what in rows:
        t.add_row(name, val, ("fitted: " if name in fitted else "default: ") + what)
    for col in t.columns:
        col.no_wrap = True
    c.print(t)
    t2 = table(
        None,
        ("run", "left"),
        ("TP", "right"),
        ("req/s", "right"),
        ("decoding", "right"),
        ("TPOT ms\nmeasured", "right"),
        ("bound", "right"),
        ("default", "right"),
        ("fitted", "right"),
        ("TTFT ms\nmeasured", "right"),
        ("fitted", "right"),
    )
    for col in t2.columns:
        col.no_wrap = True
    for i, x in enumerate(r.runs, 1):
        t2.add_row(
            str(i),
            str(x.tp),
            f"{x.request_throughput_per_s:,.2f}",
            f"{x.decoding:,.1f}",
            _ms(x.measured_tpot_s),
            _ms(x.bound_tpot_s),
            _ms(x.default_tpot_s),
            _ms(x.fitted_tpot_s),
            _ms(x.measured_ttft_s),
            _ms(x.fitted_ttft_s),
        )
    if r.runs:
        c.print(t2)
        notes(c, "Runs", [f"{i}. {x.where} ({x.tool})" for i, x in enumerate(r.runs, 1)], "")
    notes(c, "Held at their defaults", [f"{n}: {why}" for n, why in r.held.items()], "")
    notes(c, "Warnings", r.warnings, "yellow")
    notes(c, "Assumptions", r.assumptions)
    c.print(
        "[dim]decoding: requests decoding on average (Little's law); bound: the roofline bound of that step. ms = 10^-3 s.[/dim]"
    )
