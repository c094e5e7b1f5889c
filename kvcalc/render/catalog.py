"""kvcalc models / gpus / show / import: the catalog and one spec."""

from __future__ import annotations

import sys
from typing import Any

from kvcalc.render.console import console, esc, kv_lines, notes, table
from kvcalc.units import fmt_bytes, fmt_flops, fmt_iec, fmt_rate, fmt_si

GB_IS_GIB = (
    'the vendor\'s "GB" of memory is binary in practice (80 GB H100: 80 GiB of HBM); kvcalc keeps the figure '
    "as stated, in decimal bytes, and budgets against the runtime figure"
)


def _source(c: Any, url: str) -> None:
    """The source URL whole (never folded mid-address): on the label's line when it fits, else below it."""
    if len("source: " + url) <= c.width:
        c.print(f"source: {url}", markup=False, soft_wrap=True)
    else:
        c.print("source:", markup=False)
        c.print(url, markup=False, soft_wrap=True)


def _params(n: int) -> str:
    """Parameters in billions, or trillions from 1,000 billion (the column stays narrow)."""
    return f"{n / 1e9:.1f}B" if n < 999.95e9 else f"{n / 1e12:.2f}T"


def render_models(r: Any) -> None:
    c = console()
    t = table(
        None,
        ("name", "left"),
        ("params", "right"),
        ("active", "right"),
        ("layers", "left"),
        ("KV/token", "right"),
        ("context", "right"),
    )
    # Names and figures stay whole; the layers column wraps instead, at its words.
    for i in (0, 1, 2, 4, 5):
        t.columns[i].no_wrap = True
    t.columns[3].min_width = 10
    t.columns[3].max_width = 12
    for m in r.models:
        t.add_row(
            esc(m.name),
            _params(m.params_total),
            _params(m.params_active) if m.is_moe else "",
            m.kinds_text,
            fmt_iec(m.kv_bytes_per_token_bf16, 1),
            f"{m.max_position_embeddings:,}",
        )
    c.print(t)
    c.print(
        "[dim]params in billions (10^9) or trillions (10^12); KV/token: bytes one token adds across all attention layers in bf16, in KiB/MiB.[/dim]"
    )


def render_gpus(r: Any) -> None:
    c = console()
    t = table(
        None,
        ("name", "left"),
        ("memory", "right"),
        ("runtime", "right"),
        ("bandwidth", "right"),
        ("bf16 dense", "right"),
        ("fp8 dense", "right"),
    )
    t.columns[0].no_wrap = True  # names stay whole
    for g in r.gpus:
        t.add_row(
            esc(g.name),
            fmt_si(g.memory_bytes, 0),
            fmt_iec(g.memory_runtime_bytes, 1),
            fmt_rate(g.memory_bandwidth_bytes_per_s),
            fmt_flops(g.flops_bf16),
            fmt_flops(g.flops_fp8) if g.flops_fp8 else "-",
        )
    c.print(t)
    c.print(
        "[dim]memory: as the vendor states it, read as GB = 10^9 B; runtime: what the runtime reports (GiB = 2^30 B), "
        'estimated unless measured. Memory vendors\' "GB" is binary in practice: an "80 GB" H100 has 80 GiB of HBM, '
        "so its runtime figure exceeds 80 x 10^9 B.[/dim]"
    )


def render_show_model(r: Any) -> None:
    c = console()
    m, d = r.spec, r.derived
    c.print(f"[bold]{esc(m.name)}[/bold]: {esc(m.description)}")
    _source(c, m.source.url)
    rows = [
        ("architecture", m.architecture or "-"),
        ("aliases", ", ".join(m.aliases) or "-"),
        ("parameters", f"{m.params_total:,}" + (f" (active {m.params_active:,})" if m.moe else "")),
        ("weights", f"{d.weight_dtype}: {fmt_bytes(d.weight_bytes)}"),
        ("hidden / vocab", f"{m.hidden_size:,} / {m.vocab_size:,}"),
        ("max context", f"{m.max_position_embeddings:,} tokens"),
        ("layers", f"{d.num_layers}"),
    ]
    if m.moe:
        rows.append(("experts", f"{m.moe.num_experts} routed, top-{m.moe.num_experts_per_tok}, in {m.moe.num_moe_layers} layers"))
    if m.vision_params:
        rows.append(("vision tower", f"{m.vision_params:,} parameters, loaded beside the language model"))
    if m.vision is not None:
        v = m.vision
        rows.append(
            (
                "vision encoder",
                f"{v.encoder}: {v.depth} layers of {v.hidden_size:,}"
                + (f", {v.deepstack} deepstack mergers" if v.deepstack else "")
                + f"; largest image {v.max_image_tokens:,} tokens ({v.patches_per_image:,} patches)"
                + (f"; videos up to {v.max_video_pixels:,} pixels over all frames" if v.max_video_pixels else ""),
            )
        )
    kv_lines(c, rows)
    t = table("Layer kinds", ("name", "left"), ("layers", "right"), ("kind", "left"), ("KV per token (bf16)", "right"))
    for k in r.kinds:
        t.add_row(esc(k.name), str(k.layers), esc(k.description), fmt_bytes(d.per_kind_bytes_per_token[k.name]))
    c.print(t)
    kv_lines(
        c,
        [
            ("KV per token (bf16, all layers)", fmt_bytes(d.kv_bytes_per_token)),
            ("KV per request at max context (bf16)", fmt_bytes(d.kv_bytes_at_max_context)),
        ],
    )
    if m.source.notes:
        notes(c, "Notes", [m.source.notes])


def _gemm_said(g: Any) -> str:
    """A GPU spec's measured matmul block in words: its latency and bandwidth share, and where it has
    them its share of the peak and how the two terms combine (GemmSpec)."""
    if g is None:
        return "-"
    said = f"{g.latency_us:g} us + weight bytes / ({g.bandwidth_share:g} x bandwidth)"
    if g.compute_share is not None:
        how = "plus" if g.combine == "sum" else "root-sum-square with"
        said += f", {how} {g.compute_dtype} FLOPs / ({g.compute_share:g} x peak)"
    return said


def _mla_said(g: Any) -> str:
    """The GPU's measured MLA decode call (GPUSpec.mla), and SGLang's own where its spec has it."""
    if g.mla is None:
        return "-"
    said = f"{g.mla.latency_us:g} us"
    if g.mla.sglang_latency_us is not None:
        said += f"; SGLang's own call: {g.mla.sglang_latency_us:g} us"
    return said


def render_show_gpu(r: Any) -> None:
    c = console()
    g = r.spec
    c.print(f"[bold]{esc(g.name)}[/bold]: {esc(g.description)}")
    _source(c, g.source.url)
    rows = [
        ("memory (vendor, as stated)", fmt_bytes(g.memory_bytes)),
        ("memory (runtime)", fmt_bytes(g.memory_runtime_bytes) + ("" if g.memory_runtime_measured else " (estimate)")),
        ("memory bandwidth", fmt_rate(g.memory_bandwidth_bytes_per_s)),
        ("bf16 dense", fmt_flops(g.flops_bf16)),
        ("fp8 dense", fmt_flops(g.flops_fp8) if g.flops_fp8 else "-"),
        ("fp4 dense (NVFP4)", fmt_flops(g.flops_fp4) if g.flops_fp4 else "-"),
        ("int8 dense", fmt_flops(g.flops_int8, "OP") if g.flops_int8 else "-"),
        ("ridge point (bf16)", f"{r.ridge_bf16:,.0f} FLOP/B"),
        ("interconnect", fmt_rate(g.interconnect_bytes_per_s) + " (bidirectional)" if g.interconnect_bytes_per_s else "-"),
        ("host link", fmt_rate(g.host_link_bytes_per_s) + " (bidirectional)" if g.host_link_bytes_per_s else "-"),
        ("decode matmul (measured)", _gemm_said(g.gemm)),
        ("decode matmul fp8 (measured)", _gemm_said(g.gemm_fp8)),
        ("TensorRT-LLM decode matmul fp8 (measured)", _gemm_said(g.gemm_fp8_trtllm)),
        ("decode matmul NVFP4 (measured)", _gemm_said(g.gemm_fp4)),
        (
            "decode attention (measured)",
            f"{g.attention.request_head_ns:g} ns per request and KV head a call" if g.attention else "-",
        ),
        ("MLA call beyond its bytes (measured)", _mla_said(g)),
        ("all-reduce (measured)", "TP " + ", ".join(str(n) for n in sorted(g.allreduce.latency_us)) if g.allreduce else "-"),
        (
            "TensorRT-LLM all-reduce (measured)",
            "TP " + ", ".join(str(n) for n in sorted(g.allreduce_trtllm.latency_us)) if g.allreduce_trtllm else "-",
        ),
        (
            "NCCL all-reduce (measured)",
            "TP " + ", ".join(str(n) for n in sorted(g.nccl_allreduce.latency_us)) if g.nccl_allreduce else "-",
        ),
        (
            "NCCL gather, scatter (measured)",
            "TP " + ", ".join(str(n) for n in sorted(g.nccl_allgather.latency_us))
            if g.nccl_allgather and g.nccl_reducescatter
            else "-",
        ),
        ("aliases", ", ".join(g.aliases) or "-"),
    ]
    kv_lines(c, rows)
    measured = [
        "the measured decode matmuls, decode attention, MLA calls and all-reduces name their microbenchmarks in --json "
        "(gemm.url, gemm_fp8.url, gemm_fp8_trtllm.url, gemm_fp4.url, attention.url, mla.url, allreduce.url, allreduce_trtllm.url, nccl_allreduce.url, nccl_allgather.url, nccl_reducescatter.url)"
    ]
    notes(
        c,
        "Notes",
        ([g.source.notes] if g.source.notes else [])
        + (measured if g.gemm or g.attention or g.mla or g.allreduce else [])
        + [GB_IS_GIB],
    )


def render_import(r: Any) -> None:
    """The spec as YAML on stdout, the warnings on stderr (so the YAML can be redirected to a file)."""
    from kvcalc.specs.loader import to_yaml

    for w in r.warnings:
        sys.stderr.write(f"kvcalc: warning: {w}\n")
    sys.stdout.write(f"# Imported by kvcalc from {r.source}\n" + to_yaml(r.spec))
