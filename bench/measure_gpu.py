"""The GPU sweep of `kvcalc measure` (issue: measure). Run by bench/measure_gpu.sh on a GPU machine.

GQA 32/8, head_dim 128, bf16 (Llama-3.1-8B's attention) at (batch, context) in
{(1, 65536), (8, 4096), (32, 8192), (64, 2048)}, a mixed 1k-16k batch of 32, and the MLA latent
(576 = 512 + 64, 128 heads, DeepSeek-V3) at (64, 4096). Writes one JSON per row and a summary
under $OUT (or ./measure-out), and prints a compact table last.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kvcalc.cli.measure import run_measure
from kvcalc.render import to_plain
from kvcalc.specs.catalog import resolve_model

SWEEP = [
    ("gqa-32/8", "llama3.1-8b", 1, 65536, None),
    ("gqa-32/8", "llama3.1-8b", 8, 4096, None),
    ("gqa-32/8", "llama3.1-8b", 32, 8192, None),
    ("gqa-32/8", "llama3.1-8b", 64, 2048, None),
    ("gqa-32/8 mixed", "llama3.1-8b", 32, 0, "uniform:1k..16k"),
    ("mla-576", "deepseek-v3", 64, 4096, None),
]


def main() -> None:
    # KVCALC_DRY=1: the same sweep shrunk (contexts / 64, batches <= 4) to test this script on a CPU.
    dry = os.environ.get("KVCALC_DRY") == "1"
    sweep = [(lb, m, min(b, 4), s // 64, "uniform:16..256" if d else None) for lb, m, b, s, d in SWEEP] if dry else SWEEP
    out = Path(os.environ.get("OUT", "measure-out"))
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, (label, model, b, s, dist) in enumerate(sweep):
        t0 = time.time()
        try:
            r = run_measure(resolve_model(model), None, b, s, seq_dist=dist, runs=5 if dry else 100, show_progress=False)
        except Exception as e:
            print(f"{label} b={b} s={s}: FAILED {type(e).__name__}: {e}", flush=True)
            rows.append({"label": label, "batch": b, "seq": s or dist, "error": f"{type(e).__name__}: {e}"})
            continue
        doc = to_plain(r)
        (out / f"row{i}.json").write_text(json.dumps(doc, indent=1))
        ks = {k["kernel"]: k for k in doc["kernels"]}
        row = {
            "label": label,
            "batch": b,
            "seq": s or dist,
            "device": r.device_name,
            "dtype": r.dtype,
            "read_ceiling": r.read_ceiling_bytes_per_s,
            "datasheet": r.datasheet_bytes_per_s,
            "bytes": r.bytes,
            "t_bound_s": r.t_bound_s,
            "kernels": {
                n: {
                    k2: k.get(k2)
                    for k2 in (
                        "t_measured_s",
                        "achieved_bytes_per_s",
                        "pct_read_ceiling",
                        "pct_datasheet",
                        "measured_over_bound",
                        "rel_error",
                        "cuda_graph",
                        "note",
                    )
                }
                for n, k in ks.items()
            },
            "seconds": round(time.time() - t0, 1),
        }
        rows.append(row)
        print(f"{label} b={b} s={s or dist}: done in {row['seconds']} s", flush=True)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    print()
    print(
        f"{'shape':16s} {'b':>3s} {'seq':>15s} {'kernel':13s} {'us':>9s} {'TB/s':>6s} {'%read':>6s} {'%sheet':>6s} {'x bound':>7s} {'err':>8s}"
    )
    for row in rows:
        if "error" in row:
            print(f"{row['label']:16s} {row['batch']:>3} {str(row['seq']):>15s} FAILED: {row['error'][:60]}")
            continue
        for name, k in row["kernels"].items():
            if k["t_measured_s"] is None:
                print(f"{row['label']:16s} {row['batch']:>3} {str(row['seq']):>15s} {name:13s} not timed: {k['note'][:50]}")
                continue
            print(
                f"{row['label']:16s} {row['batch']:>3} {str(row['seq']):>15s} {name:13s} {k['t_measured_s'] * 1e6:9.1f} "
                f"{k['achieved_bytes_per_s'] / 1e12:6.2f} {k['pct_read_ceiling']:6.0%} "
                f"{(k['pct_datasheet'] or 0):6.0%} {k['measured_over_bound']:7.2f} {k['rel_error']:8.1e}"
            )
    if rows and "read_ceiling" in rows[0]:
        print(
            f"read ceiling {rows[0]['read_ceiling'] / 1e12:.2f} TB/s measured; datasheet "
            f"{(rows[0]['datasheet'] or 0) / 1e12:.2f} TB/s; device {rows[0]['device']}"
        )


if __name__ == "__main__":
    main()
