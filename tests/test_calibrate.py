"""kvcalc calibrate and the benchmark results it reads."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import one_line_error
from kvcalc.engine.calibrate import CalibrationReport, calibrate
from kvcalc.engine.engines import engine
from kvcalc.engine.simulate import SimSettings, Workload, simulate
from kvcalc.engine.steptime import DEFAULTS
from kvcalc.errors import KvcalcError
from kvcalc.inputs.bench import BenchRun, parse_bench
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import kv_dtype

ROOT = Path(__file__).resolve().parent.parent
SERVING = ROOT / "tests" / "serving"
CASES = yaml.safe_load((SERVING / "cases.yaml").read_text())["cases"]
BF16 = kv_dtype("bf16")


@pytest.mark.parametrize("case", [c for c in CASES if c.get("raw")], ids=lambda c: c["id"])
def test_every_public_block_parses_to_its_recorded_figures(case):
    # The figures in cases.yaml were copied out of the sources by a separate script; the parser must
    # read the same ones from the verbatim blocks.
    text = (SERVING / case["raw"]).read_text()
    if case.get("raw_format") == "csv-row":
        # A row of a table its source compiled from SGLang bench_serving's records (dstackai/benchmarks):
        # not a format anyone pastes, so read here, column by column, against cases.yaml.
        import csv

        # (Its 8 x H100 sweep's table, charts/qps_output.csv, holds vLLM benchmark_serving's fields: a header
        # from num_prompts on and the run's row after it.)
        lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
        at = next(i for i, ln in enumerate(lines) if ln.startswith(("GPU,", "num_prompts,")))
        head = next(csv.reader([lines[at]]))
        if lines[at].startswith("GPU,"):
            row = next(csv.reader([ln for ln in lines if ln.split(",")[0] in ("h200", "mi300x")]))
        else:
            row = next(csv.reader([lines[at + 1]]))
        got, want = dict(zip(head, row)), case["measured"]
        assert int(got["completed"]) == want["completed"]
        if case.get("max_concurrency"):
            assert int(got["max_concurrency"]) == case["max_concurrency"]
        else:
            assert float(got["request_rate"]) == float(case["request_rate"])
        for col, key in (("request_throughput", "request_throughput_per_s"), ("mean_ttft_ms", "mean_ttft_ms")):
            assert float(got[col]) == pytest.approx(want[key], rel=5e-4)
        assert float(got["mean_tpot_ms"]) == pytest.approx(want["mean_tpot_ms"], rel=5e-4)
        assert int(got["total_input_tokens"]) / int(got["completed"]) == pytest.approx(case["mean_input"])
        assert int(got["total_output_tokens"]) / int(got["completed"]) == pytest.approx(case["mean_output"])
        return
    if case.get("raw_format") == "pr-table":
        # A pull request's table of output throughput by TP size (sgl-project/sglang#10404), the "Before"
        # column the run: no printed block to parse, so read here against cases.yaml.
        row = next(ln.split("|") for ln in text.splitlines() if ln.startswith(f"{case['tp']}|"))
        assert float(row[2]) == case["measured"]["output_throughput_tok_per_s"]
        return
    if case.get("raw_format") == "infx-table":
        # A row of the baseline table InferenceX's image-update pull requests quote ("Point | Total tok/s/GPU | Output
        # tok/s/GPU | TTFT ms | TPOT ms", mean latencies): output throughput a GPU times TP, and the means, are cases.yaml's.
        line = next(ln for ln in text.splitlines() if ln.startswith("Row for this run (verbatim): "))
        cells = [c.strip() for c in line.split("|")[1:-1]]
        label, _, out_gpu, ttft, tpot = cells
        m = re.match(r"(\d+)k/1k c(\d+) TP(\d+) EP1 ", label)
        assert m is not None, label
        isl, conc, tp = m.groups()
        assert (int(isl) * 1024, int(conc), int(tp)) == (case["random_input_len"], case["max_concurrency"], case["tp"])
        want = case["measured"]
        assert float(out_gpu.replace(",", "")) * case["tp"] == pytest.approx(want["output_throughput_tok_per_s"])
        assert float(ttft.replace(",", "")) == want["mean_ttft_ms"] and float(tpot.replace(",", "")) == want["mean_tpot_ms"]
        return
    if case.get("raw_format") == "infx-metric-table":
        # A table of one metric a row and one concurrency a column (InferenceX#870's experimental sweep): the run's
        # column, its throughputs a GPU times TP and its latencies (E2E in seconds), are cases.yaml's.
        conc = int(re.search(r"conc=(\d+)", text.splitlines()[0]).group(1))
        assert conc == case["max_concurrency"]
        rows = [
            [c.strip().strip("*") for c in ln.strip().strip("|").split("|")] for ln in text.splitlines() if ln.startswith("| ")
        ]
        col = rows[0].index(f"conc={conc}")
        got = {r[0]: float(r[col]) for r in rows[2:]}
        want = case["measured"]
        assert got["Output tput/GPU (tok/s)"] * case["tp"] == pytest.approx(want["output_throughput_tok_per_s"])
        assert got["Input tput/GPU (tok/s)"] * case["tp"] == pytest.approx(want["input_throughput_tok_per_s"])
        for name, key in (("Mean TTFT (ms)", "mean_ttft_ms"), ("Mean TPOT (ms)", "mean_tpot_ms"), ("P99 ITL (ms)", "p99_itl_ms")):
            assert got[name] == want[key]
        assert got["Mean E2E (s)"] * 1e3 == pytest.approx(want["mean_e2el_ms"])
        return
    if case.get("raw_format") == "infmax-agg":
        # An InferenceMAX aggregated record (its utils/process_result.py: seconds, throughput a GPU), not a printed
        # block: its output throughput times TP and its latencies in ms are cases.yaml's.
        import json

        rec, want = json.loads(text)["record"], case["measured"]
        assert rec["tp"] == case["tp"] and rec["conc"] == case["max_concurrency"]
        assert rec["output_tput_per_gpu"] * rec["tp"] == pytest.approx(want["output_throughput_tok_per_s"])
        for key in ("mean_ttft", "median_ttft", "mean_tpot", "median_tpot"):
            assert rec[key] * 1e3 == pytest.approx(want[f"{key}_ms"])
        return
    if case.get("raw_format") == "vob-row":
        # vedanti02/vllm-optimization-bench's row files: each copies the metrics of vLLM's --save-result JSON key for key
        # under its own names (runner.py parse_bench_json), with the server's settings beside them.
        import json

        row, want = json.loads(text), case["measured"]
        assert row["completed"] == want["completed"] and row["max_num_seqs"] == case["max_num_seqs"]
        assert row["concurrency"] == case["max_concurrency"] and row["vllm_version"] == "0.24.0"
        for key, name in (
            ("request_throughput_req_s", "request_throughput_per_s"),
            ("output_throughput_tok_s", "output_throughput_tok_per_s"),
            ("ttft_ms_mean", "mean_ttft_ms"),
            ("tpot_ms_mean", "mean_tpot_ms"),
        ):
            assert row[key] == pytest.approx(want[name])
        assert row["total_output_tokens"] / row["completed"] == pytest.approx(case["mean_output"])
        return
    if case.get("raw_format") == "run-row":
        # A CSV its source published of one row a run (HwaminJung00/sglang-peak-kv-admission's w3_runs.csv, transcribed:
        # the raw file says which columns): the row raw_row names holds every figure cases.yaml measured but what it
        # derives from the row (said under inferred).
        row = next(ln for ln in text.splitlines() if ln.startswith(case["raw_row"] + ","))
        cells = []
        for cell in row.split(","):
            try:
                cells.append(float(cell))
            except ValueError:
                continue
        for key, value in case["measured"].items():
            if key not in case["inferred"]:
                assert float(value) in cells, (key, value)
        return
    if case.get("raw_format") == "md-table":
        # A markdown table its source published in place of the printed blocks (SGLang's benchmark READMEs): the
        # row raw_row names holds every figure cases.yaml measured, but the count and what cases.yaml derives
        # from the row (said under inferred).
        row = next(ln for ln in text.splitlines() if ln.startswith(case["raw_row"]))
        cells = []
        for cell in row.split("|"):
            try:
                cells.append(float(cell.strip().strip("*").replace(",", "")))
            except ValueError:
                continue
        for key, value in case["measured"].items():
            if key != "completed" and key not in case["inferred"]:
                assert float(value) in cells, (key, value)
        return
    runs = parse_bench(text, case["raw"])
    assert len(runs) == 1
    r, want = runs[0], case["measured"]
    assert r.completed == want["completed"]
    # SGLang's --output-file record of 0.4.0 has no request throughput: then cases.yaml has none either.
    if r.request_throughput_per_s is None:
        assert "request_throughput_per_s" not in want
    else:
        assert r.request_throughput_per_s == pytest.approx(want["request_throughput_per_s"])
    if "mean_tpot_ms" in want and "mean_tpot_ms" not in (case.get("inferred") or {}):
        assert r.mean_tpot_s == pytest.approx(want["mean_tpot_ms"] / 1e3)
    elif "mean_tpot_ms" in want:
        # Derived where the block prints none (--percentile-metrics ttft,itl,e2el): every request's output was the
        # stated length, so the mean TPOT is (mean E2E latency - mean TTFT) / (output - 1).
        assert want["total_output_tokens"] == want["completed"] * case["random_output_len"]
        derived = (want["mean_e2el_ms"] - want["mean_ttft_ms"]) / (case["random_output_len"] - 1)
        assert derived == pytest.approx(want["mean_tpot_ms"], abs=5e-4)
    if "mean_ttft_ms" in want:
        assert r.mean_ttft_s == pytest.approx(want["mean_ttft_ms"] / 1e3)
    assert r.mean_input == pytest.approx(want["total_input_tokens"] / want["completed"])
    assert r.mean_output == pytest.approx(want["total_output_tokens"] / want["completed"])
    if case.get("max_concurrency"):
        assert r.max_concurrency in (None, case["max_concurrency"])


SGLANG = """
============ Serving Benchmark Result ============
Backend: sglang
Traffic request rate: inf
Max request concurrency: 1
Successful requests: 10
Benchmark duration (s): 4.45
Total input tokens: 1972
Total generated tokens: 2784
Request throughput (req/s): 2.25
Output token throughput (tok/s): 625.26
Concurrency: 1.00
Mean E2E Latency (ms): 443.32
Mean TTFT (ms): 21.59
Median TTFT (ms): 20.89
Mean TPOT (ms): 1.47
Mean ITL (ms): 1.52
==================================================
"""

GENAI = """
                              NVIDIA GenAI-Perf | LLM Metrics
┃                         Statistic ┃    avg ┃    min ┃    max ┃
│          Time to first token (ms) │  16.26 │  12.39 │  17.25 │
│          Inter token latency (ms) │   1.85 │   1.55 │   2.04 │
│            Output sequence length │ 261.90 │ 256.00 │ 298.00 │
│             Input sequence length │ 550.06 │ 550.00 │ 553.00 │
│ Output token throughput (per sec) │ 520.87 │    N/A │    N/A │
│      Request throughput (per sec) │   1.99 │    N/A │    N/A │
"""


def test_sglang_and_genai_perf_read_by_their_labels():
    s = parse_bench(SGLANG, "s.txt")[0]
    assert (s.tool, s.completed, s.max_concurrency, s.request_rate_per_s) == ("sglang", 10, 1, float("inf"))
    assert s.mean_input == pytest.approx(197.2) and s.mean_tpot_s == pytest.approx(1.47e-3)
    g = parse_bench(GENAI, "g.txt")[0]
    # genai-perf's inter-token latency is (latency - TTFT) / (output - 1): what vLLM calls TPOT.
    assert g.tool == "genai-perf" and g.mean_tpot_s == pytest.approx(1.85e-3) and g.mean_input == pytest.approx(550.06)


def test_json_results_one_a_line_and_infinity():
    a = {"model_id": "Qwen/Qwen3-8B", "completed": 100, "request_rate": "inf", "max_concurrency": 4, "mean_tpot_ms": 7.4}
    b = dict(a, completed=50, request_rate=float("inf"))
    text = json.dumps(a) + "\n" + json.dumps(b).replace("Infinity", "Infinity")
    runs = parse_bench(text, "r.jsonl")
    assert [r.completed for r in runs] == [100, 50] and runs[0].model == "Qwen/Qwen3-8B"
    assert runs[1].request_rate_per_s == float("inf")


@pytest.mark.parametrize(
    "text,needle",
    [
        ("", "empty"),
        ("hello world", "no 'Serving Benchmark Result' block"),
        ("============ Serving Benchmark Result ============\n====\n", "no figures"),
        ('{"completed": 10, "mean_tpot_ms": "fast"}', "not a number"),
        ('{"completed": 10, "mean_tpot_ms": NaN}', "nan"),
        ('{"completed": -3}', "at least 0"),
        ('{"completed": 2.5}', "whole number"),
        ("[1, 2]", "not an object"),
        ('{"completed": 1', "not JSON"),
        ('{"foo": 1}', "no benchmark figures"),
        ('{"completed": 10, "mean_tpot_ms": 1e400}', "mean_tpot_ms is infinite"),
        ('{"completed": 10, "request_throughput": 1e400}', "request_throughput is infinite"),
        ('{"completed": 10, "total_input_tokens": 1e300}', "mean prompt of at most"),
        ('{"completed": 1e15}', "count of requests"),
        ("============ Serving Benchmark Result ============\nMean TPOT (ms): inf\n", "Mean TPOT (ms) is infinite"),
    ],
)
def test_malformed_results_are_one_line(text, needle):
    with pytest.raises(KvcalcError) as e:
        parse_bench(text, "bench.txt")
    assert needle in e.value.line() and "bench.txt" in e.value.line()


def synthetic(truth, concurrencies=(1, 4, 16, 64), model="llama3.1-8b", gpu="h100"):
    """Runs of kvcalc's own simulator under known constants: what a benchmark would measure if the
    engine behaved exactly as the step model with those constants."""
    m, g, eng = resolve_model(model), resolve_gpu(gpu), engine("vllm")
    out = []
    for c in concurrencies:
        n = max(4 * c, 40)
        wl = Workload(np.zeros(n), np.full(n, 1000), np.full(n, 200), "t", "b")
        b = simulate(m, g, wl, SimSettings(1200, 1024, 8192, constants=truth, concurrency=c), [("paged-16", 16)], eng, BF16)
        b = b.runs[0].bench
        out.append(
            BenchRun(
                f"c{c}",
                "vllm",
                b.completed,
                b.duration_s,
                1000.0,
                200.0,
                b.request_throughput_per_s,
                b.output_throughput_tok_per_s,
                b.ttft_s.mean,
                b.ttft_s.p50,
                b.tpot_s.mean,
                b.tpot_s.p50,
                b.itl_s.mean,
                c,
            )
        )
    return out


def test_a_closed_loop_request_shares_its_decode_steps_with_the_other_clients_prompts():
    from kvcalc.engine.calibrate import _seen_rate

    # 4 clients at 10 requests/s: each other client sends a prompt every 4 / 10 s, 3 of them, 7.5/s.
    assert _seen_rate(BenchRun("a", "vllm", request_throughput_per_s=10.0, max_concurrency=4)) == 7.5
    # One client: its own prompt is the only one, and it came before the first token.
    assert _seen_rate(BenchRun("a", "vllm", request_throughput_per_s=10.0, max_concurrency=1)) == 0.0
    # All at once (rate inf) is still a closed loop; a stated finite rate is open traffic, all of X.
    inf = float("inf")
    assert _seen_rate(BenchRun("a", "vllm", request_throughput_per_s=10.0, max_concurrency=4, request_rate_per_s=inf)) == 7.5
    assert _seen_rate(BenchRun("a", "vllm", request_throughput_per_s=10.0, max_concurrency=4, request_rate_per_s=12.0)) == 10.0
    assert _seen_rate(BenchRun("a", "vllm", request_throughput_per_s=10.0)) == 10.0


def test_a_fit_recovers_the_bandwidth_share_it_was_made_with():
    # A deployment whose reads all run at 0.62 of the bandwidth, the matmuls' weights too.
    truth = dataclasses.replace(DEFAULTS, eta_bw=0.62, eta_gemm=0.62, request_overhead_s=0.02)
    r = calibrate(resolve_model("llama3.1-8b"), resolve_gpu("h100"), synthetic(truth), [1] * 4, BF16, engine("vllm"))
    assert r.constants.eta_bw == pytest.approx(0.62, abs=0.02)
    # The fitted share is the matmuls' too: the H100 spec's measured 0.86 does not stay under it.
    assert r.constants.eta_gemm == r.constants.eta_bw
    assert "eta_bw" in r.fitted and "eta_c" in r.held and "alpha_s" in r.held
    # The default release schedules ahead: its host time runs beside these runs' GPU-bound steps, so
    # the runs cannot show it (docs/simulation.md, Calibration).
    assert "schedules the next step while the GPU runs this one" in r.held["fixed_s"]
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "unless the engine runs its host time beside the GPU's (vLLM from 0.14, SGLang's overlap scheduler)" in doc
    assert r.rms_fitted < 0.05 < r.rms_default
    # The request path: what TTFT leaves at the lightest load, 20 ms jittered x 0.5 to 1.5.
    assert 0.005 < r.constants.request_overhead_s < 0.035


def test_too_few_runs_are_refused():
    runs = synthetic(DEFAULTS, (4,))
    with pytest.raises(KvcalcError, match="cannot fit"):
        calibrate(resolve_model("llama3.1-8b"), resolve_gpu("h100"), runs, [1], BF16, engine("vllm"))


def test_a_run_faster_than_the_roofline_is_impossible():
    runs = synthetic(DEFAULTS, (1, 8))
    fast = dataclasses.replace(runs[0], mean_tpot_s=runs[0].mean_tpot_s / 3)
    with pytest.raises(KvcalcError, match="below the roofline bound") as e:
        calibrate(resolve_model("llama3.1-8b"), resolve_gpu("h100"), [fast, runs[1]], [1, 1], BF16, engine("vllm"))
    assert e.value.where == "c1"
    # One request is one request, not "1 requests".
    assert " for 1 request of llama3.1-8b on h100-sxm " in e.value.what


def test_contradictory_runs_are_refused():
    runs = synthetic(DEFAULTS, (1, 4, 16))
    # The same load twice, one measured 2x slower: no one set of constants gives both.
    slow = dataclasses.replace(runs[1], where="c4-again", mean_tpot_s=runs[1].mean_tpot_s * 2)
    with pytest.raises(KvcalcError, match="contradict"):
        calibrate(resolve_model("llama3.1-8b"), resolve_gpu("h100"), [*runs, slow], [1] * 4, BF16, engine("vllm"))


def test_a_run_of_another_model_is_refused():
    runs = [dataclasses.replace(r, model="meta-llama/Llama-3.1-70B-Instruct") for r in synthetic(DEFAULTS, (1, 4))]
    with pytest.raises(KvcalcError, match="not llama3.1-8b"):
        calibrate(resolve_model("llama3.1-8b"), resolve_gpu("h100"), runs, [1, 1], BF16, engine("vllm"))


def test_the_cli_writes_a_calibration_the_other_commands_take(cli, tmp_path, monkeypatch):
    truth = dataclasses.replace(DEFAULTS, eta_bw=0.62, eta_gemm=0.62)
    files = []
    for r in synthetic(truth):
        p = tmp_path / f"{r.where}.json"
        p.write_text(
            json.dumps(
                {
                    "completed": r.completed,
                    "total_input_tokens": 1000 * r.completed,
                    "total_output_tokens": 200 * r.completed,
                    "request_throughput": r.request_throughput_per_s,
                    "mean_tpot_ms": r.mean_tpot_s * 1e3,
                    "mean_ttft_ms": r.mean_ttft_s * 1e3,
                    "max_concurrency": r.max_concurrency,
                }
            )
        )
        files.append(str(p))
    cal = tmp_path / "cal.json"
    res = cli("calibrate", *files, "--model", "llama3.1-8b", "--gpu", "h100", "--write", str(cal))
    assert res.code == 0 and "eta_bw" in res.out, res.err
    # The matmuls' share of their peak, left to the GPU's measured one (none for these bf16 matmuls on an
    # H100: eta_c), is said so; the file keeps it open.
    assert "eta_c_gemm" in res.out and "GPU's" in res.out
    doc = json.loads(cal.read_text())
    assert doc["constants"]["eta_bw"] == pytest.approx(0.62, abs=0.02) and doc["constants"]["eta_c_gemm"] is None
    # roofline, simulate and plan take it, and say so.
    a = cli("roofline", "--model", "llama3.1-8b", "--gpu", "h100", "--calibration", str(cal), "--json").json()
    b = cli("roofline", "--model", "llama3.1-8b", "--gpu", "h100", "--json").json()
    assert a["t_step_s"] > b["t_step_s"] and any("calibration" in x for x in a["assumptions"])
    s = cli("simulate", "--model", "llama3.1-8b", "-n", "50", "--policies", "paged-16", "--calibration", str(cal), "--json")
    assert s.code == 0 and s.json()["constants"]["eta_bw"] == pytest.approx(0.62, abs=0.02)
    p = cli("plan", "--model", "llama3.1-8b", "--gpus", "h100", "--users", "8", "--calibration", str(cal), "--json")
    assert p.code == 0 and p.json()["constants"]["origin"].startswith("calibration")
    # kvcalc.toml's calibration, resolved from the file's own folder.
    (tmp_path / "kvcalc.toml").write_text('calibration = "cal.json"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    t = cli("roofline", "--model", "llama3.1-8b", "--gpu", "h100", "--json").json()
    assert t["t_step_s"] == pytest.approx(a["t_step_s"])


@pytest.mark.parametrize(
    "content,needle",
    [
        ("not json", "not JSON"),
        ('{"constants": {"eta_bw": 3}}', "constants.eta_bw"),
        ('{"constants": {"eta_bw": "fast"}}', "constants.eta_bw"),
        ('{"constants": {"eta_c_fp8": 0}}', "constants.eta_c_fp8"),
        ('{"constants": {"eta_c_fp4": 1.5}}', "constants.eta_c_fp4"),
        ('{"constants": {"eta_c_int8": 0.001}}', "constants.eta_c_int8"),
        ('{"constants": {"moe_flashinfer_fp4_s": -1}}', "constants.moe_flashinfer_fp4_s"),
        ('{"constants": {"speed": 1}}', "unknown constant"),
        # A misspelt constant names the closest ones.
        ('{"constants": {"moe_fp8_s": 1e-5}}', "did you mean moe_cutlass_fp4_s, moe_quant_s"),
        ('{"constants": {"eta_bww": 0.8}}', "did you mean eta_bw"),
        ('{"gpu": "h100"}', "no 'constants'"),
        ("", "not JSON"),
    ],
)
def test_a_bad_calibration_file_is_one_line(cli, tmp_path, content, needle):
    f = tmp_path / "cal.json"
    f.write_text(content)
    one_line_error(cli("roofline", "--model", "llama3.1-8b", "--calibration", str(f)), needle)


def test_a_calibration_of_another_gpu_is_refused(cli, tmp_path):
    f = tmp_path / "cal.json"
    f.write_text(json.dumps({"model": "llama3.1-8b", "gpu": "a100-80gb", "tp": [1], "constants": {"eta_bw": 0.7}}))
    one_line_error(cli("roofline", "--model", "llama3.1-8b", "--gpu", "h100", "--calibration", str(f)), "a100-80gb")


@pytest.mark.parametrize(
    "args,needle",
    [
        (["/nonexistent.txt"], "nonexistent"),
        (["--tp", "1,2,3"], "--tp"),
    ],
)
def test_bad_calibrate_input_is_one_line(cli, tmp_path, args, needle):
    f = tmp_path / "a.txt"
    f.write_text(SGLANG)
    extra = [] if args[0].startswith("/") else [str(f)]
    one_line_error(cli("calibrate", *extra, *args, "--model", "qwen3-8b"), needle)


def test_the_same_run_twice_is_one_line(cli, tmp_path, monkeypatch):
    # One file named twice (or its block pasted twice) is one point, not the two runs a fit of eta_bw needs: until
    # 2026-12-06 it passed as two and printed a fit of one constant from a single load.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.txt").write_text(SGLANG)
    one_line_error(cli("calibrate", "a.txt", "a.txt", "--model", "qwen3-8b"), "the same run given twice")
    first = SGLANG.index("=" * 10)  # where the block starts
    line = SGLANG[:first].count("\n") + 1
    (tmp_path / "b.txt").write_text(SGLANG + SGLANG)
    res = cli("calibrate", "b.txt", "--model", "qwen3-8b")
    one_line_error(res, "the same run given twice")
    second = line + SGLANG.count("\n")
    assert f"the run at b.txt, line {line}: the same run given twice (b.txt, line {second})" in res.err, res.err


def test_kvcalc_measure_results_give_the_bandwidth_share(cli, tmp_path):
    # A measured decode step on an H100 that read 1,000,000,000 B in 0.4 ms: 2.5 TB/s of 3.35, 0.746.
    m = {"model": "llama3.1-8b", "device": "cuda", "device_name": "NVIDIA H100 80GB HBM3", "kernel": "triton-paged"}
    f = tmp_path / "m.json"
    f.write_text(json.dumps({**m, "t_measured_s": 0.4e-3, "bytes": 1_000_000_000, "datasheet_bytes_per_s": 3.35e12}))
    d = cli("calibrate", str(f), "--model", "llama3.1-8b", "--gpu", "h100", "--json").json()
    assert d["constants"]["eta_bw"] == pytest.approx(1e9 / 0.4e-3 / 3.35e12) and d["fitted"] == ["eta_bw"]
    assert cli("calibrate", str(f), "--model", "llama3.1-8b", "--gpu", "h100").code == 0
    # Measured on another device, or on a CPU: refused.
    one_line_error(cli("calibrate", str(f), "--model", "llama3.1-8b", "--gpu", "a100-80gb"), "NVIDIA H100 80GB HBM3")
    f.write_text(json.dumps({**m, "device": "cpu", "t_measured_s": 0.4e-3, "bytes": 10**9}))
    one_line_error(cli("calibrate", str(f), "--model", "llama3.1-8b", "--gpu", "h100"), "CPU")


def test_the_calibration_file_reads_every_constant_and_only_those():
    # kvcalc.inputs cannot import the engine, so the reader keeps its own list of constants: it must be
    # StepConstants' own numeric fields, each with a range.
    from kvcalc.engine.steptime import StepConstants
    from kvcalc.inputs.calibration import KEYS, RANGES

    names = [f.name for f in dataclasses.fields(StepConstants) if f.name != "origin"]
    assert list(KEYS) == names and set(RANGES) == set(names)


def test_a_calibration_file_from_before_eta_gemm_covers_the_matmuls_with_its_eta_bw():
    from kvcalc.inputs.calibration import parse_calibration

    old = parse_calibration(json.dumps({"constants": {"eta_bw": 0.6}, "model": "m", "gpu": "h100-sxm", "tp": [1]}), "f")
    assert old.constants["eta_bw"] == old.constants["eta_gemm"] == 0.6
    new = parse_calibration(json.dumps({"constants": {"eta_bw": 0.6, "eta_gemm": None}, "model": "m", "gpu": "g"}), "f")
    assert new.constants["eta_gemm"] is None


def test_a_file_of_every_constant_at_its_default_reads_back_as_the_defaults(tmp_path):
    # What bench/simulate.py --calibrated times as "the defaults as a calibration file": every constant, None where the
    # default is the GPU's measured figure. (Until 2026-12-06 the bench wrote some keys only, eta_bw without eta_gemm,
    # which reads as a file from before eta_gemm: the A100 40GB's matmuls then took 0.8, not its measured 0.74, and the
    # bench's two runs differed, 1,887,764 events against 1,935,034 at 300,000 requests.)
    from kvcalc.cli.options import step_constants
    from kvcalc.inputs.calibration import KEYS

    p = tmp_path / "defaults.json"
    doc = {"model": "llama2-13b", "gpu": "a100-40gb", "tp": [1], "constants": {k: getattr(DEFAULTS, k) for k in KEYS}}
    p.write_text(json.dumps(doc))
    read = step_constants(None, str(p), model=resolve_model("llama2-13b"), gpus=[resolve_gpu("a100-40gb")])
    assert read.origin == f"calibration {p}"
    assert dataclasses.replace(read, origin=DEFAULTS.origin) == DEFAULTS
    # Without eta_gemm, the same file is the older kind: its eta_bw (0.8) stands for the matmuls' share too.
    del doc["constants"]["eta_gemm"]
    p.write_text(json.dumps(doc))
    old = step_constants(None, str(p), model=resolve_model("llama2-13b"), gpus=[resolve_gpu("a100-40gb")])
    assert DEFAULTS.eta_gemm is None and old.eta_gemm == DEFAULTS.eta_bw == 0.8


def test_a_calibration_file_leaves_the_experts_share_open_or_sets_it():
    from kvcalc.inputs.calibration import parse_calibration

    doc = {"model": "m", "gpu": "g", "tp": [1]}
    # null: the share by the experts' width (StepConstants.moe_eta); a number: that share for every width.
    assert parse_calibration(json.dumps({**doc, "constants": {"moe_eta_c": None}}), "f").constants["moe_eta_c"] is None
    assert parse_calibration(json.dumps({**doc, "constants": {"moe_eta_c": 0.2}}), "f").constants["moe_eta_c"] == 0.2
    with pytest.raises(KvcalcError, match="moe_eta_c"):
        parse_calibration(json.dumps({**doc, "constants": {"moe_eta_c": 0}}), "f")


def test_a_run_whose_figures_contradict_each_other_is_refused(cli, tmp_path):
    # 100 requests/s, 1,000 output tokens a request, 8 ms a token: Little's law puts
    # 100 x 999 x 0.008 = 799.2 requests decoding at once, in a run that never sent more than 4.
    a = {
        "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "completed": 100,
        "request_rate": "inf",
        "max_concurrency": 4,
        "total_input_tokens": 100_000,
        "total_output_tokens": 100_000,
        "duration": 1.0,
        "request_throughput": 100,
        "output_throughput": 100_000,
        "mean_tpot_ms": 8.0,
        "mean_ttft_ms": 30,
    }
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(a) + "\n" + json.dumps(dict(a, max_concurrency=16)) + "\n")
    r = cli("calibrate", str(f), "--model", "llama3.1-8b", "--gpu", "h100")
    one_line_error(
        r, "100 requests/s x 999 output tokens x TPOT 8.00 ms is 799 requests decoding at once, over its max concurrency (4)"
    )
    assert "run 1" in r.err
    # Without a max concurrency, its 100 requests bound it.
    f.write_text(json.dumps({k: v for k, v in a.items() if k != "max_concurrency"}) + "\n")
    one_line_error(cli("calibrate", str(f), "--model", "llama3.1-8b", "--gpu", "h100"), "over its requests (100)")
    # Real runs do go past their count, where every prompt is sent at once (docs/simulation.md: 1.33x):
    # SGLang's 1,000-request ShareGPT run of DeepSeek-R1, its own figures recomputed here.
    from kvcalc.engine.calibrate import CONCURRENCY_SLACK

    raw = ROOT / "tests/serving/raw/gpustack-h200x8-deepseek-r1-0528-sglang053-tp8-sharegpt-inf.txt"
    run = parse_bench(raw.read_text(), raw.name)[0]
    assert run.completed == 1000 and run.request_throughput_per_s and run.mean_output and run.mean_tpot_s
    ratio = run.request_throughput_per_s * (run.mean_output - 1) * run.mean_tpot_s / run.completed
    assert round(ratio, 2) == 1.33 and ratio < CONCURRENCY_SLACK


def test_a_run_served_from_a_local_copy_is_matched_by_its_folder_name():
    # vllm bench serve's --save-result JSON names the model as served: a local folder such as
    # '/root/autodl-tmp/llama-3.1-8b-instruct/' is Llama-3.1-8B-Instruct by the catalog's loose match of
    # its last part; a folder that names no catalog model is taken as the model given, with a warning; a
    # run that names another catalog model is refused, naming it.
    from kvcalc.specs.catalog import canonical_name

    def fit(model_named: str) -> CalibrationReport:
        runs = [dataclasses.replace(r, model=model_named) for r in synthetic(DEFAULTS, (1, 4))]
        return calibrate(
            resolve_model("llama3.1-8b"),
            resolve_gpu("h100"),
            runs,
            [1, 1],
            BF16,
            engine("vllm"),
            identify=lambda name: canonical_name("model", name),
        )

    assert fit("/root/autodl-tmp/llama-3.1-8b-instruct/").warnings == []
    assert fit("/models/my-finetune").warnings == [
        "the runs name '/models/my-finetune', which kvcalc cannot match to a model: taken as llama3.1-8b, as given"
    ]
    with pytest.raises(KvcalcError, match=r"\(llama3.1-70b\), not llama3.1-8b"):
        fit("/data/Llama-3.1-70B-Instruct")


def test_runs_served_in_another_weight_format_calibrate_with_it(cli):
    # Qwen2.5-7B served with --quantization fp8 on an RTX 4090 (violet-quartz/vllm-serving-experiments,
    # tests/serving): at 8 users its 11.42 ms TPOT is below the bf16 weights' roofline (15.2 GB over
    # 1,008 GB/s is 15 ms), so without the format the run is refused as impossible; with it, it fits.
    from pathlib import Path

    raw = Path(__file__).resolve().parent / "serving" / "raw"
    files = [str(raw / f"violetquartz-rtx4090-qwen2.5-7b-vllm0251-sharegpt-fp8-c{c}.json") for c in (8, 32, 128)]
    ask = ("calibrate", *files, "--model", "qwen2.5-7b", "--gpu", "rtx4090", "--engine", "vllm@0.25")
    r = cli(*ask)
    assert r.code == 2 and "below the roofline bound" in r.err and "weight format" in r.err
    d = cli(*ask, "--weight-dtype", "fp8", "--json").json()
    assert d["inputs"]["weight_dtype"] == "fp8" and len(d["runs"]) == 3
    assert all(x["measured_tpot_s"] >= x["bound_tpot_s"] for x in d["runs"])


def test_a_fitted_matmul_share_stands_in_for_the_gpus_measured_one():
    # The MI300X's spec measures its fp8 matmuls' share of the peak (0.28, GemmSpec.compute_share); a
    # calibration that fits eta_c_fp8 fits the matmuls the runs ran, so its figure replaces that one.
    from kvcalc.engine.calibrate import _set
    from kvcalc.engine.steptime import StepModel
    from kvcalc.inputs.calibration import parse_calibration

    mi = resolve_gpu("mi300x")
    fitted = _set(DEFAULTS, "eta_c_fp8", 0.2)
    assert (fitted.eta_c_fp8, fitted.eta_c_gemm) == (0.2, 0.2)
    # W8A8 int8 on an A100 (no measured int8 share): eta_c_int8, 0.525, until a calibration fits it; runs served in
    # int8 name eta_c_int8 as the matmuls' share they fit or hold.
    i8 = StepModel(resolve_model("llama3.1-8b"), resolve_gpu("a100-80gb"), BF16, weight_dtype="int8")
    got8 = i8.with_constants(_set(DEFAULTS, "eta_c_int8", 0.2))
    assert (i8.eta_mm(i8.c), got8.eta_mm(got8.c), got8.c.eta_c_fp8) == (0.525, 0.2, 0.35)
    runs = synthetic(DEFAULTS, (1, 4), gpu="a100-80gb")
    r8 = calibrate(
        resolve_model("llama3.1-8b"), resolve_gpu("a100-80gb"), runs, [1, 1], BF16, engine("vllm"), weight_dtype="int8"
    )
    assert "eta_c_int8" in r8.held and "eta_c" not in r8.held
    sm = StepModel(resolve_model("llama3.1-8b"), mi, BF16, weight_dtype="fp8")
    assert sm.eta_mm(sm.c) == 0.28 and sm.with_constants(fitted).eta_mm(sm.with_constants(fitted).c) == 0.2
    # NVFP4 alike: a fitted eta_c_fp4 is the NVFP4 matrices' share; DeepSeek's 16-bit ones (77% of its dense FLOPs in
    # the NVFP4 layout) keep eta_c at the 16-bit peak.
    b200, ds = resolve_gpu("b200"), resolve_model("deepseek-v3")
    fp4 = StepModel(ds, b200, BF16, tp=4, weight_dtype="fp4")
    got = fp4.with_constants(_set(DEFAULTS, "eta_c_fp4", 0.2))
    assert fp4.eta_mm(fp4.c) == 0.35 and got.eta_mm(got.c) == 0.2 and got.c.eta_c == 0.7
    s, f = fp4.fp4_flops, fp4.expert_share
    dense = s / (0.2 * 9e15) + (1 - s) / (0.7 * 2.25e15)
    assert got.inv_mm == pytest.approx((1 - f) * dense + f / (fp4.moe_eta(got.c) * 9e15), abs=0)
    # A file may leave it open (null: the GPU's) or set it; outside 0.01-1 is refused.
    f = parse_calibration(json.dumps({"constants": {"eta_c_gemm": None}, "model": "m", "gpu": "g"}), "f")
    assert f.constants["eta_c_gemm"] is None
    with pytest.raises(KvcalcError, match="eta_c_gemm"):
        parse_calibration(json.dumps({"constants": {"eta_c_gemm": 1.5}, "model": "m", "gpu": "g"}), "f")


def test_calibrate_takes_the_triton_backend_the_runs_were_served_on(cli, tmp_path, monkeypatch):
    # The SGLang cookbook's GLM-4.7-Flash runs on one B200 were served with --attention-backend triton
    # (the raw files' server lines). Fitted with the flag, the defaults' TPOT of the 8k-in run carries
    # the Triton kernel's floor; worked by hand from the release's split rule: 20 query heads are
    # ceil(20 / 16) = 2 blocks a request; one request at about 4,194 + 211 tokens reaches
    # 148 x log2(4,405 / 64) = 903 blocks, so 8 parts (the most) of ceil(4,405 / 8) = 551 tokens, rounded
    # up to 576 (whole 32-token tiles; 544 at the run's shortest context, 4,194); 16 blocks are one turn
    # on 148 x 2; a token puts 47 layers x 576 x 2 B = 54,144 B on its one block, so the floor is
    # 576 x 54,144 / 5.27e9 = 5.92 ms (5.59 at 544), less the KV read it replaces (238 MB at 0.8 x
    # 8 TB/s, 0.04 ms).
    raw = SERVING / "raw"
    files = [str(raw / f"sglcb-glm47flash-b200x1-tp1-c1-{x}.txt") for x in ("1k1k", "1k8k", "8k1k")]
    args = ("calibrate", *files, "--model", "glm-4.7-flash", "--gpu", "b200", "--engine", "sglang@0.5.7", "--json")
    plain = cli(*args).json()
    triton = cli(*args, "--attention-backend", "triton").json()
    assert triton["inputs"]["attention_backend"] == "triton" and "attention_backend" not in plain["inputs"]
    assert any("Triton backend" in a for a in triton["assumptions"])
    # The default backend's 47 MLA calls take FlashInfer's measured 18.5 us on B200 (gpu_specs/b200.yaml mla: SGLang runs
    # FlashInfer's MLA for a class other than DeepseekV3ForCausalLM; its own trtllm_mla 15 us until 2026-12-06), the
    # Triton backend's the default 62 us (the measured figures time other kernels): 47 x 43.5 us of the difference.
    gain = triton["runs"][2]["default_tpot_s"] - plain["runs"][2]["default_tpot_s"] - 47 * (62e-6 - 18.5e-6)
    assert 5.59e-3 - 0.04e-3 <= gain <= 5.92e-3, gain
    # The measured TPOTs (8.75, 10.94, 12.63 ms) grow with the context as the floor does, so the defaults
    # miss by less with it.
    assert triton["rms_default"] < plain["rms_default"] / 2
    # docs/simulation.md (Calibration) states both misses: the claim is checked against the fit's.
    doc = " ".join((ROOT / "docs" / "simulation.md").read_text().split())
    claim = (
        f"root-mean-square log-ratio of {plain['rms_default']:.2f} with the default constants and no floor "
        f"(kvcalc's 5.9 to 6.0 ms, its MLA calls at FlashInfer's measured 18.5 us on B200, the call SGLang runs for "
        f"GLM-4.7-Flash's class; 0.63 and 5.8 ms at SGLang's trtllm_mla 15 us until that, 2026-12-06; 0.32 and 8.0 ms at vLLM's "
        f"59 us until the measured figures, 2026-12-05; 0.60 and 5.9 ms until an MLA layer's two down projections ran as one matmul, 2026-12-06), "
        f"{triton['rms_default']:.2f} with it"
    )
    assert claim in doc, claim
    assert {round(r["default_tpot_s"] * 1e3, 1) for r in plain["runs"]} == {5.9, 6.0}  # {5.8} at trtllm_mla's 15 us
    # kvcalc.toml's attention_backend reaches calibrate as it reaches simulate.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kvcalc.toml").write_text('attention_backend = "triton"\n')
    assert cli(*args).json()["inputs"]["attention_backend"] == "triton"
    # A backend kvcalc does not price is refused in one line, naming the option.
    one_line_error(cli(*args, "--attention-backend", "tritn"), "--attention-backend", "did you mean triton")


def test_a_result_saved_as_utf16_or_with_a_utf8_mark_reads_as_plain_utf8(tmp_path):
    """Windows saves text as UTF-16 with a byte-order mark (PowerShell's `>`) or as UTF-8 with one (Notepad):
    the text reader takes both as the text they hold; bytes that are neither are one line naming both."""
    from kvcalc.errors import KvcalcError
    from kvcalc.files import read_text

    text = "Successful requests:                     10\nMean TPOT (ms):                          8.75\n"
    for name, data in (
        ("utf16le.txt", b"\xff\xfe" + text.encode("utf-16-le")),
        ("utf16be.txt", b"\xfe\xff" + text.encode("utf-16-be")),
        ("utf8bom.txt", b"\xef\xbb\xbf" + text.encode("utf-8")),
    ):
        (tmp_path / name).write_bytes(data)
        assert read_text(tmp_path / name) == text, name
    (tmp_path / "bad.txt").write_bytes(b"\x80\x81\x82 not text")
    with pytest.raises(KvcalcError, match="not UTF-8 or UTF-16 text"):
        read_text(tmp_path / "bad.txt")


def test_a_result_whose_client_timed_silent_requests_at_zero_calibrates_as_the_others():
    """A --save-result JSON of benchmark_serving.py of 2024 records a TTFT of 0.0 and 0 output tokens for a request
    whose stream carried no text (vllm-project/vllm#6064), and its mean TTFT counts those zeros. parse_bench reads
    the share; calibration compares the mean over the others with the prediction, so the same runs fit the same
    request overhead with a quarter of their requests silent and their means scaled as such a client's would be."""
    rec = {"completed": 8, "mean_ttft_ms": 30.0, "mean_tpot_ms": 10.0, "output_lens": [0, 5, 5, 0, 5, 5, 5, 5]}
    rec["ttfts"] = [0.0, 0.04, 0.04, 0.0, 0.04, 0.04, 0.04, 0.04]
    (run,) = parse_bench(json.dumps(rec), "r.json")
    assert run.silent_share == 2 / 8
    # A later client's zero-output request has its TTFT: nothing is silent.
    (later,) = parse_bench(json.dumps({**rec, "ttfts": [0.04] * 8}), "r.json")
    assert later.silent_share == 0.0
    truth = dataclasses.replace(DEFAULTS, eta_bw=0.62, eta_gemm=0.62, request_overhead_s=0.02)
    runs = synthetic(truth)
    m, g = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    plain = calibrate(m, g, runs, [1] * len(runs), BF16, engine("vllm"))
    quiet = [dataclasses.replace(r, silent_share=0.25, mean_ttft_s=r.mean_ttft_s * 0.75 if r.mean_ttft_s else None) for r in runs]
    scaled = calibrate(m, g, quiet, [1] * len(runs), BF16, engine("vllm"))
    assert scaled.constants.request_overhead_s == pytest.approx(plain.constants.request_overhead_s, rel=1e-9)
    # The residual table compares like with like: the fitted TTFT as the client's mean has it.
    for a, b in zip(plain.runs, scaled.runs, strict=True):
        if a.fitted_ttft_s is not None:
            assert b.fitted_ttft_s == pytest.approx(0.75 * a.fitted_ttft_s, rel=1e-9)


@pytest.mark.parametrize(
    "args,needle",
    [
        # NCCL for every all-reduce on a GPU whose spec measures none: refused as roofline, simulate and plan refuse it.
        (["--gpu", "l40s", "--engine", "sglang@0.5.7", "--all-reduce-backend", "nccl"], "(--all-reduce-backend)"),
        # SGLang's Triton attention under an engine that does not run it: the same.
        (["--gpu", "h100", "--attention-backend", "triton"], "(--attention-backend)"),
    ],
)
def test_calibrate_refuses_a_backend_the_step_model_does_not_price_before_any_fit(cli, args, needle):
    raw = SERVING / "raw"
    runs = [str(raw / f"sglcb-glm47flash-b200x1-tp1-{c}-1k1k.txt") for c in ("c1", "c16")]
    one_line_error(cli("calibrate", *runs, "--model", "glm-4.7-flash", *args), needle)
