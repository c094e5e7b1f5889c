"""A peer's validation records (tests/peer/vllm-memory-estimator-records.json): vLLM start-ups that
vllm-memory-estimator's authors ran on H200, B200 and MI300X GPUs under releases 0.11 to 0.20 and
parsed into records, each with the GPU, TP, --gpu-memory-utilization, --max-model-len and release
it ran, and the "Available KV cache memory" and "GPU KV cache size" it logged. kvcalc's `fit`, with
those settings and its own defaults for everything else, against each.

docs/accuracy.md's section on them is this file's output (KVCALC_ACCURACY=write pytest
tests/test_peer_records.py rewrites it).
"""

from __future__ import annotations

import json
import re
import statistics
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

from conftest import generated_block
from kvcalc.engine.engines import engine
from kvcalc.engine.memory import FitInputs, FitReport, fit
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import kv_dtype

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "tests" / "peer" / "vllm-memory-estimator-records.json").read_text())
DOC = ROOT / "docs" / "accuracy.md"
BEGIN, END = "<!-- peer-records:begin -->", "<!-- peer-records:end -->"
GiB = 2**30
# The checkpoints the records ran, as kvcalc's catalog names them (DeepSeek-R1-0528 has DeepSeek-V3's
# architecture and config).
MODELS = {
    "meta-llama/Llama-3.3-70B-Instruct": "llama3.3-70b",
    "Qwen/Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b",
    "Qwen/Qwen3-VL-30B-A3B-Instruct": "qwen3-vl-30b-a3b",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-v3",
    "deepseek-ai/DeepSeek-V3.2": "deepseek-v3.2",
}
# Quantized checkpoints of catalog models (compressed-tensors and ModelOpt), added after the first 131
# were scored: run with the --weight-dtype of their format, the layout a flag guesses (linear layers
# quantized; embeddings, LM head, norms and routers in 16 bits), not a spec of their own.
FLAGGED = {
    "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic": ("llama3.3-70b", "fp8"),
    "nvidia/Llama-3.3-70B-Instruct-FP8": ("llama3.3-70b", "fp8"),
    "RedHatAI/Qwen3-235B-A22B-FP8-dynamic": ("qwen3-235b-a22b", "fp8"),
    "nvidia/DeepSeek-V3.2-NVFP4": ("deepseek-v3.2", "fp4"),
}
GPUS = {"H200": "h200", "B200": "b200", "MI300X": "mi300x"}


def settings(rec: dict[str, Any]) -> dict[str, Any]:
    """The settings a record ran with: its runtime arguments, and its log's config where they are silent."""
    cm, lc = rec["csv_metadata"], rec["log_config"]
    args = {}
    for a in cm["runtime_args"].split(";"):
        key, _, value = a.partition(":")
        args[key.strip()] = value.strip()
    # A Red Hat build ("0.14.1+rhai4") or a development build is read with its release's rules.
    m = re.match(r"v?([0-9]+\.[0-9]+\.[0-9]+)", lc["vllm_version"])
    assert m, lc["vllm_version"]
    kv = lc.get("kv_cache_dtype") or "auto"
    flagged = FLAGGED.get(lc["model"])
    return {
        "model": MODELS.get(lc["model"]) or FLAGGED[lc["model"]][0],
        "weight_dtype": flagged[1] if flagged else None,
        "kv_dtype": None if kv == "auto" else {"fp8_e4m3": "fp8"}.get(kv, kv),
        "gpu": GPUS[cm["accelerator"]],
        "tp": int(lc["tensor_parallel_size"]),
        "release": m.group(1),
        "util": float(args["gpu-memory-utilization"]),
        "max_model_len": int(args.get("max-model-len") or lc["max_seq_len"]),
    }


def fit_record(s: dict[str, Any], kv_cache_memory: int | None = None) -> FitReport:
    """kvcalc fit with a record's settings (and, given, its pool), its defaults for the rest."""
    inputs = FitInputs(
        seq=s["max_model_len"],
        engine=engine(f"vllm=={s['release']}"),
        tp=s["tp"],
        util=s["util"],
        max_model_len=s["max_model_len"],
        kv_cache_memory=kv_cache_memory,
        weight_dtype=s["weight_dtype"],
        **({"kv_dtype": kv_dtype(s["kv_dtype"])} if s["kv_dtype"] else {}),
    )
    return fit(resolve_model(s["model"]), resolve_gpu(s["gpu"]), inputs)


@cache
def results() -> list[dict[str, Any]]:
    out = []
    for uid, rec in sorted(DATA["records"].items()):
        s = settings(rec)
        r = fit_record(s)
        pool = next(b for b in r.budget if b.key == "pool")
        assert pool.low is not None and pool.high is not None
        logged = rec["log_memory"]["available_kv_cache_gib"]
        # The log prints two decimals: inside the range when it is within their rounding of it.
        inside = pool.low - 0.005 * GiB <= logged * GiB <= pool.high + 0.005 * GiB
        out.append(
            {
                "uid": uid,
                **s,
                "record": r.engine,
                "logged_gib": logged,
                "kvcalc_gib": r.kv_pool_bytes / GiB,
                "error": r.kv_pool_bytes / (logged * GiB) - 1,
                "logged_tokens": rec["log_memory"]["kv_cache_tokens"],
                "kvcalc_tokens": r.kv_pool_tokens,
                "inside": inside,
                "logged_weights_gib": rec["log_memory"]["model_load_gib"],
                "kvcalc_weights_gib": r.weight_bytes / GiB,
                "half_width": (pool.high - pool.low) / 2 / r.kv_pool_bytes,
            }
        )
    return out


def summary(flag: str | None = None) -> dict[str, Any]:
    """The first 131 records' scores (16-bit checkpoints), or those of the checkpoints run as
    ``--weight-dtype flag``."""
    got = [x for x in results() if x["weight_dtype"] == flag]
    errors = [abs(x["error"]) for x in got]
    return {
        "records": len(got),
        "within_10": sum(e <= 0.10 for e in errors),
        "within_5": sum(e <= 0.05 for e in errors),
        "inside": sum(x["inside"] for x in got),
        "median_error": statistics.median(errors),
        "median_half_width": statistics.median(x["half_width"] for x in got),
    }


def table() -> str:
    s, f, n = summary(), summary("fp8"), summary("fp4")
    groups: dict[tuple[str, str, int, str], list[dict[str, Any]]] = defaultdict(list)
    for x in results():
        name = x["model"] + {None: "", "fp8": " (fp8 checkpoints)", "fp4": " (NVFP4 checkpoint)"}[x["weight_dtype"]]
        groups[(name, x["gpu"], x["tp"], x["record"])].append(x)
    lines = [
        BEGIN,
        f"{s['records']} records; kvcalc's pool within 10% of the logged one on **{s['within_10']}** "
        f"({s['within_5']} within 5%), the logged pool inside kvcalc's printed range on **{s['inside']}**; "
        f"median error {s['median_error'] * 100:.1f}%, median half-width of the range {s['median_half_width'] * 100:.1f}% "
        f"of the pool. The {f['records']} records of fp8 checkpoints, run as `--weight-dtype fp8`: within 10% on "
        f"**{f['within_10']}** ({f['within_5']} within 5%), inside the range on **{f['inside']}**; median error "
        f"{f['median_error'] * 100:.1f}%. The {n['records']} of NVIDIA's NVFP4 DeepSeek-V3.2, run as `--weight-dtype fp4`: "
        f"within 5% on **{n['within_5']}**, inside the range on **{n['inside']}**; median error {n['median_error'] * 100:.1f}%.",
        "",
        "| model | GPU x TP | kvcalc record | releases | records | logged pool, GiB | kvcalc, GiB | error | inside the range "
        "| weights logged / kvcalc, GiB |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (model, gpu, tp, rec), xs in sorted(groups.items()):
        releases = ", ".join(sorted({x["release"] for x in xs}, key=lambda v: tuple(map(int, v.split(".")))))
        logged = sorted(x["logged_gib"] for x in xs)
        ours = sorted(x["kvcalc_gib"] for x in xs)
        errs = sorted(x["error"] * 100 for x in xs)

        def span(v: list[float], fmt: str) -> str:
            return format(v[0], fmt) if format(v[0], fmt) == format(v[-1], fmt) else f"{v[0]:{fmt}} to {v[-1]:{fmt}}"

        lines.append(
            f"| {model} | {gpu} x {tp} | {rec} | {releases} | {len(xs)} | {span(logged, '.2f')} | {span(ours, '.2f')} | "
            f"{span(errs, '+.1f')}% | {sum(x['inside'] for x in xs)} of {len(xs)} | "
            f"{span(sorted(x['logged_weights_gib'] for x in xs), '.2f')} / {span(sorted(x['kvcalc_weights_gib'] for x in xs), '.2f')} |"
        )
    lines.append(END)
    return "\n".join(lines)


def test_the_records_are_as_the_peer_published_them():
    assert DATA["source"].startswith("https://github.com/ashishkamra/vllm-memory-estimator/blob/8b0e21d1/")
    assert len(DATA["records"]) == 131 + 55 + 3
    # Every record ran a catalog model on a catalog GPU, with its util and release stated.
    for rec in DATA["records"].values():
        s = settings(rec)
        assert 0 < s["util"] <= 1 and s["max_model_len"] > 0 and s["model"] in MODELS.values()
        assert s["weight_dtype"] in (None, "fp8", "fp4") and s["kv_dtype"] in (None, "fp8")


def test_the_doc_section_is_current():
    generated_block(DOC, BEGIN, END, table(), "KVCALC_ACCURACY", "KVCALC_ACCURACY=write pytest tests/test_peer_records.py")


def test_the_records_score_as_the_doc_says():
    # Scored at 383cd28, before the records joined and with nothing changed for them: 126 of 131 within 10%,
    # 109 inside the range, median error 1.5%; at 1daca71 (before the tenth set's changes) 114, 98 and 3.3%.
    s = summary()
    text = " ".join(DOC.read_text().split())
    assert "126 of the 131 within 10%, 109 inside the printed range, median error 1.5%" in text
    # Since vLLM's 16-bit copy of a quantized MLA kv_b_proj joined the weights (after they were seen).
    assert "126 within 10% as before, 103 within 5% (99 before) and 112 inside the range (109" in text
    # Since the profile's allocations beside the sampler joined the activation peak (after all eleven real-log
    # sets): 124 records closer to the logged pool, 64 further; two DeepSeek-V3.2 starts leave the range.
    assert (s["records"], s["within_10"], s["within_5"], s["inside"]) == (131, 126, 103, 111)
    assert round(s["median_error"] * 100, 1) == 1.2
    assert "the 131 records' median error goes from 1.5% to 1.2%" in text and "111 inside in all" in text
    v32 = [x for x in results() if x["model"] == "deepseek-v3.2" and x["gpu"] == "h200" and x["release"] == "0.16.0"]
    assert sorted(round(x["error"] * 100, 1) for x in v32) == [-6.0] * 4 and sum(x["inside"] for x in v32) == 2
    assert "113 since the one-GPU non-torch range reaches 0.5 GiB" in text
    r1 = [x for x in results() if x["model"] == "deepseek-v3" and x["gpu"] == "h200" and x["release"] == "0.16.0"]
    assert {round(x["error"] * 100, 1) for x in r1} == {-6.1} and not any(x["inside"] for x in r1)
    assert "DeepSeek-R1 under 0.16.0 is at -6.1%" in text
    assert "114, 98 and 3.3%" in text
    # The fp8 checkpoints, run as --weight-dtype fp8 (scored at e3fed11 before they joined, nothing changed).
    f = summary("fp8")
    # 46 inside as scored; 54 since the weights' range reaches 2% over the count (memory.LOADED_WEIGHTS_MARGIN_PCT).
    assert (f["records"], f["within_10"], f["within_5"], f["inside"]) == (55, 55, 55, 54)
    assert round(f["median_error"] * 100, 1) == 0.2
    assert "median error 0.3% (0.2% since the profile's allocations beside the sampler are counted, below)" in text
    assert "all 55 land within 5% of the logged pool, 46 inside the printed range (54 since the loaded" in text
    fp8 = [x for x in results() if x["weight_dtype"] == "fp8"]
    outside = [x for x in fp8 if not x["inside"]]
    assert [(x["model"], x["gpu"], round(x["error"] * 100, 1)) for x in outside] == [("qwen3-235b-a22b", "mi300x", 3.5)]
    over = sorted(x["logged_weights_gib"] / x["kvcalc_weights_gib"] - 1 for x in fp8 if x["gpu"] == "mi300x")
    assert 0.009 <= over[0] and over[-1] <= 0.015 and "MI300X starts log 0.9% to 1.5% over kvcalc's count" in text
    assert all(abs(x["logged_weights_gib"] - x["kvcalc_weights_gib"]) <= 0.04 for x in fp8 if x["gpu"] != "mi300x")
    # NVIDIA's DeepSeek-V3.2-NVFP4 (scored at fbd5b35: +3.4%; the fp4 layout's MLA and the sparse backend's
    # fp8 came after): within 0.2% now, its weights 0.85 GiB over the log.
    n = [x for x in results() if x["weight_dtype"] == "fp4"]
    assert len(n) == 3 and all(x["inside"] and abs(x["error"]) < 0.0025 for x in n)
    assert {round(x["error"] * 100, 1) for x in n} == {-0.2} and "(-0.2% since the profile's allocations" in text
    assert {round(x["kvcalc_weights_gib"] - x["logged_weights_gib"], 2) for x in n} == {0.85}
    assert "They now land at -0.1%, inside the range, and their token counts within 0.2%" in text
    llama = [x for x in fp8 if x["gpu"] != "mi300x" and x["model"] == "llama3.3-70b"]
    assert all(abs(x["logged_weights_gib"] - x["kvcalc_weights_gib"]) <= 0.01 for x in llama)
    # The five over 10%: Qwen3-VL-30B-A3B on one MI300X (ROCm), 24% to 27% over.
    over = [x for x in results() if abs(x["error"]) > 0.10]
    assert {(x["model"], x["gpu"]) for x in over} == {("qwen3-vl-30b-a3b", "mi300x")} and len(over) == 5
    assert all(24 <= round(x["error"] * 100) <= 27 for x in over)
    # Their records log 79.29 GiB of weights where kvcalc counts 58.12; an upstream development build on
    # the same GPU logged 59.84 and lands within 1%.
    assert {round(x["logged_weights_gib"], 2) for x in over} == {79.29} and {round(x["kvcalc_weights_gib"], 2) for x in over} == {
        58.12
    }
    dev = next(x for x in results() if x["model"] == "qwen3-vl-30b-a3b" and x["gpu"] == "mi300x" and x["release"] == "0.13.1")
    assert round(dev["logged_weights_gib"], 2) == 59.84 and abs(dev["error"]) < 0.01
    assert "log 79.29 GiB of weights where kvcalc counts 58.12" in text and "logged 59.84 GiB and lands at +0.2%" in text
    assert round(dev["error"] * 100, 1) == 0.2
    # The other MI300X starts: 0.1 to 3.1 GiB more weights a GPU than kvcalc counts.
    amd = [
        x["logged_weights_gib"] - x["kvcalc_weights_gib"]
        for x in results()
        if x["gpu"] == "mi300x" and x["model"] != "qwen3-vl-30b-a3b"
    ]
    assert (round(min(amd), 1), round(max(amd), 1)) == (0.1, 3.1)
    assert "log 0.1 to 3.1 GiB more weights a GPU than kvcalc counts" in text


def test_the_token_counts_from_the_records_own_pools():
    # The release's block and token rules, from each record's own "Available KV cache memory" (given as
    # the pool, --kv-cache-memory-bytes): its "GPU KV cache size" within 0.5% (the GiB's two decimals, and
    # on MI300X the null block's share) on all but one. The exception, DeepSeek-R1 on 8 H200s under
    # 0.20.0 at its default 163,840-token length, logs 616,096 tokens where 41.24 GiB holds 630,138 at
    # 61 x 576 x 2 B a token: 2.2% fewer blocks than the logged memory; the record does not say why.
    off = {}
    for uid, rec in sorted(DATA["records"].items()):
        s = settings(rec)
        r = fit_record(s, kv_cache_memory=int(rec["log_memory"]["available_kv_cache_gib"] * GiB))
        assert r.kv_pool_tokens is not None
        err = r.kv_pool_tokens / rec["log_memory"]["kv_cache_tokens"] - 1
        if abs(err) > 0.005:
            off[uid[:8]] = round(err * 100, 1)
    assert off == {"687e659a": 2.3}
    assert int(41.24 * GiB) // (61 * 576 * 2) == 630_138


SWEEP = json.loads((ROOT / "tests" / "peer" / "llm-d-planner-version-sweep.json").read_text())


def sweep_results() -> list[dict[str, Any]]:
    """kvcalc fit on each of llm-d-planner#205's version-sweep records: the release from the file name
    (the records' vllm_version is null), their utilisation and length, H100 SXM, defaults for the rest."""
    out = []
    for path, rec in sorted(SWEEP["records"].items()):
        m = re.search(r"-vllm-v0-([0-9]+)-([0-9]+)--h100-80gb--tp1pp1dp1--", path)
        assert m and rec["model"] == "Qwen/Qwen3-14B" and rec["gpu"] == "H100-80GB", path
        args = rec["vllm_args"]
        assert (args["tensor_parallel_size"], args["quantization"], args["kv_cache_dtype"]) == (1, None, "auto")
        s = {
            "model": "qwen3-14b",
            "weight_dtype": None,
            "kv_dtype": None,
            "gpu": "h100-sxm",
            "tp": 1,
            "release": f"0.{m.group(1)}.{m.group(2)}",
            "util": args["gpu_memory_utilization"],
            "max_model_len": args["max_model_len"],
        }
        r = fit_record(s)
        act = next(e for e in r.estimates if e.key == "activation")
        out.append(
            {
                "release": s["release"],
                "logged_tokens": rec["kv_cache_tokens"],
                "kvcalc_tokens": r.kv_pool_tokens,
                "logged_activation_gib": rec["activation_memory_gib"],
                "kvcalc_activation_gib": act.best / GiB,
            }
        )
    return out


def test_the_version_sweep_scores_as_the_doc_says():
    text = " ".join(DOC.read_text().split())
    got = sweep_results()
    assert [x["release"] for x in got] == ["0.15.0", "0.16.0", "0.17.0", "0.18.0"]
    assert [x["logged_tokens"] for x in got] == [274_848, 274_848, 297_152, 296_400]
    assert "274,848, 274,848, 297,152 and 296,400" in text
    errs = [f"{(x['kvcalc_tokens'] / x['logged_tokens'] - 1) * 100:+.1f}%" for x in got]
    assert errs == ["+0.1%", "+0.1%", "+0.1%", "+0.4%"] and "+0.1%, +0.1%, +0.1% and +0.4%, with the" in text
    # The activation peaks as logged, to their two decimals.
    assert [x["logged_activation_gib"] for x in got] == [5.64, 5.64, 2.23, 2.23]
    assert all(abs(x["kvcalc_activation_gib"] - x["logged_activation_gib"]) <= 0.005 for x in got)
    assert "5.64 GiB under 0.15 and 0.16 to 2.23 GiB under 0.17 and 0.18" in text
