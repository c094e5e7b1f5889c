"""The GPU validation run of `kvcalc measure`, in one go. Run by bench/measure_gpu.sh.

1. Environment: torch, Triton, the device, its catalog spec.
2. Smoke test: every kernel variant on a tiny shape (GQA bf16, GQA fp8 KV, MLA), checked against
   the reference; a variant that fails costs its own line, not the run.
3. Sweep: GQA 32/8 x 128 (Llama-3.1-8B's attention) at (1, 64k), (8, 4k), (32, 8k), (64, 2k) and a
   mixed 1k-16k batch of 32; the same with an fp8 cache at (32, 8k); the MLA latent (DeepSeek-V3)
   at (64, 4k); the full decode step of Llama-3.1-8B at batch 32 x 4k.
4. Output under $OUT: summary.md (the table for docs/measure.md), summary.json (every row), and
   the shell script adds device.txt and log.txt: four files.

KVCALC_DRY=1 runs the same steps on a CPU with the shapes shrunk (contexts / 64, batches <= 4,
the interpreter for the Triton smoke test), to check the script before a GPU is spent on it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DRY = os.environ.get("KVCALC_DRY") == "1"
BUDGET_S = float(os.environ.get("KVCALC_BUDGET_S", "480"))
"""Seconds of sweep before the remaining rows are skipped (KVCALC_BUDGET_S: a shorter lease)."""

SWEEP = [
    # label, model, batch, seq, dist, kv, full step
    ("gqa 32/8 x 128", "llama3.1-8b", 1, 65536, None, None, False),
    ("gqa 32/8 x 128", "llama3.1-8b", 8, 4096, None, None, False),
    ("gqa 32/8 x 128", "llama3.1-8b", 32, 8192, None, None, False),
    ("gqa 32/8 x 128", "llama3.1-8b", 64, 2048, None, None, False),
    ("gqa mixed", "llama3.1-8b", 32, 0, "uniform:1k..16k", None, False),
    ("gqa fp8 KV", "llama3.1-8b", 32, 8192, None, "fp8", False),
    ("mla 512+64", "deepseek-v3", 64, 4096, None, None, False),
    ("full step 8B", "llama3.1-8b", 32, 4096, None, None, True),
]


def log(msg: str) -> None:
    print(msg, flush=True)


def environment() -> dict:
    import torch

    env = {"torch": torch.__version__, "cuda": torch.cuda.is_available()}
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        env.update(device=p.name, sms=p.multi_processor_count, memory_bytes=p.total_memory)
        from kvcalc.specs.catalog import canonical_name

        env["catalog_gpu"] = canonical_name("gpu", p.name)
    return env


def smoke() -> list[dict]:
    """Every Triton variant on a tiny shape, against the reference."""
    import torch

    from kvcalc.measure.cache import Geometry, build, reference, rel_error
    from kvcalc.measure.kernels import triton_paged

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    tol = 2e-2 if device == "cuda" else 1e-5
    out = []
    for name, geo, fp8 in [
        ("gqa bf16", Geometry("gqa", 32, 8, 128, 0, 128, 16), False),
        ("gqa fp8", Geometry("gqa", 32, 8, 128, 0, 128, 16), True),
        ("mla", Geometry("mla", 128, 1, 512, 64, 512, 64), False),
        ("gqa 128-token pages", Geometry("gqa", 32, 8, 128, 0, 128, 128), False),
    ]:
        t0 = time.time()
        try:
            c = build(geo, [37, 300, 5], dtype, device, seed=1, kv_fp8=fp8)
            err = rel_error(triton_paged(c)(), reference(c))
            out.append({"variant": name, "rel_error": err, "ok": err <= tol, "seconds": round(time.time() - t0, 2)})
        except Exception as e:  # one variant failing is a line, not the end of the run
            out.append({"variant": name, "ok": False, "error": " ".join(f"{type(e).__name__}: {e}".split())[:300]})
        log(f"smoke {name}: {out[-1]}")
    return out


def sweep(start: float) -> list[dict]:
    from kvcalc.measure.setup import run_measure
    from kvcalc.render import to_plain
    from kvcalc.specs.catalog import resolve_model

    rows = []
    only = os.environ.get("KVCALC_ROWS", "")  # rows whose label holds this text (a rerun of some)
    for label, model, b, s, dist, kv, full in SWEEP:
        if only and only not in label:
            continue
        if DRY:
            b, s, dist = min(b, 4), s // 64, "uniform:16..256" if dist else None
        if time.time() - start > BUDGET_S:
            rows.append({"label": label, "batch": b, "seq": s or dist, "error": "skipped: the run's time budget is spent"})
            continue
        t0 = time.time()
        try:
            r = run_measure(
                resolve_model(model),
                None,
                b,
                s,
                seq_dist=dist,
                runs=5 if DRY else 50,
                show_progress=False,
                kv_dtype=kv,
                full_step=full,
                kernels=["cpu-paged"] if DRY else None,
            )
            doc = to_plain(r)
            doc.update(label=label, seconds=round(time.time() - t0, 1))
            rows.append(doc)
        except Exception as e:
            rows.append(
                {"label": label, "batch": b, "seq": s or dist, "error": " ".join(f"{type(e).__name__}: {e}".split())[:300]}
            )
        log(
            f"{label} b={b} s={s or dist}: {'FAILED ' + rows[-1]['error'] if 'error' in rows[-1] else 'done'} ({time.time() - t0:.1f} s)"
        )
    return rows


def table(env: dict, smoke_rows: list[dict], rows: list[dict]) -> str:
    head = f"Device: {env.get('device', 'CPU (dry run)')}; torch {env['torch']}, Triton {env.get('triton')}."
    lines = [
        head,
        "",
        "| shape | batch | context | kernel | time (us) | TB/s | % read | % sheet | x bound | error |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['label']} | {row['batch']} | {row['seq']} | failed: {row['error'][:80]} | | | | | | |")
            continue
        ctx = f"{row['seq_lens']['min']:,}..{row['seq_lens']['max']:,}"
        for k in row["kernels"]:
            if k["t_measured_s"] is None:
                lines.append(f"| {row['label']} | {row['batch']} | {ctx} | {k['kernel']}: {k['note'][:60]} | | | | | | |")
                continue
            approx = "~" if not k.get("stable", True) else ""
            sheet = f"{k['pct_datasheet']:.0%}" if k.get("pct_datasheet") else "-"
            lines.append(
                f"| {row['label']} | {row['batch']} | {ctx} | {k['kernel']} | {approx}{k['t_measured_s'] * 1e6:,.1f} | "
                f"{k['achieved_bytes_per_s'] / 1e12:.2f} | {k['pct_read_ceiling']:.0%} | {sheet} | {k['measured_over_bound']:.2f} | "
                f"{k['rel_error']:.1e} |"
            )
        if row.get("full_step"):
            f = row["full_step"]
            lines.append(
                f"| {row['label']} | {row['batch']} | {ctx} | whole step ({f['layers_timed']}/{f['layers']} layers) | "
                f"{f['t_measured_s'] * 1e6:,.1f} | | | | {f['measured_over_bound']:.2f} | |"
            )
    lines += ["", "Smoke test: " + ", ".join(f"{s['variant']} {'ok' if s['ok'] else 'FAILED'}" for s in smoke_rows)]
    return "\n".join(lines) + "\n"


def main() -> None:
    if DRY:
        os.environ["TRITON_INTERPRET"] = "1"
    start = time.time()
    out = Path(os.environ.get("OUT", "measure-out"))
    out.mkdir(parents=True, exist_ok=True)
    env = environment()
    log(f"environment: {env}")
    if not env["cuda"] and not DRY:
        log("no CUDA device: nothing to measure (KVCALC_DRY=1 runs the CPU dry run)")
        sys.exit(2)
    smoke_rows = smoke()
    rows = sweep(start)
    (out / "summary.json").write_text(json.dumps({"environment": env, "smoke": smoke_rows, "rows": rows}, indent=1, default=str))
    md = table(env, smoke_rows, rows)
    (out / "summary.md").write_text(md)
    log("")
    log(md)
    log(f"total {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
