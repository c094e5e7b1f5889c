"""Output stability: generated docs are current, help carries examples, tables fit 80 columns,
NO_COLOR and pipes carry no escape codes."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from kvcalc.cli.app import COMMANDS

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_is_current():
    from kvcalc.cli.docs import generate

    assert (ROOT / "docs" / "cli.md").read_text() == generate(), "stale: python -m kvcalc.cli.docs > docs/cli.md"


@pytest.mark.parametrize("cmd", [None, *sorted(COMMANDS)])
def test_help_carries_an_example(cli, cmd):
    r = cli(*([cmd] if cmd else []), "--help")
    assert r.code == 0
    assert "Example: " in r.out and "kvcalc " in r.out


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
def test_help_paragraphs_wrap_to_the_width_and_keep_every_word(cli, monkeypatch, cmd):
    # At 80 columns a command's description reads as wrapped paragraphs: no line is broken where the next line's first
    # word would still have fit (the docstring's own line breaks, kept until 2026-12-07, broke "each decode step's
    # bound" from "at the batch" in plan's), and its words are the docstring's, in order.
    import inspect

    from kvcalc.cli.app import COMMANDS as TABLE

    monkeypatch.setenv("COLUMNS", "80")
    out = cli(cmd, "--help").out
    text = out.split("Usage: ", 1)[1].split("\n", 1)[1]
    desc = re.split(r"\n(?:Arguments|Options):\n", text, maxsplit=1)[0]
    lines = [line.rstrip() for line in desc.splitlines()]
    for a, b in zip(lines, lines[1:]):
        if a and b:
            # Help lines end by column 78 (click's width at 80 columns), the indent counted.
            assert len(a) + 1 + len(b.split()[0]) > 78, (a, b)
    module, fn, _ = TABLE[cmd]
    import importlib

    doc = inspect.getdoc(getattr(importlib.import_module(module), fn)) or ""
    assert " ".join(desc.split()) == " ".join(doc.split())


@pytest.mark.parametrize("cmd", [None, *sorted(COMMANDS)])
def test_help_keeps_every_option_name_and_word_whole_at_80_columns(cli, monkeypatch, cmd):
    # At 80 columns the help lists every option under all its names, whole, and each option's help with all its words
    # in order: the rich help's boxed table (until 2026-12-07) cut "--prefix-caching" to "--prefix-cachi…" and
    # "lognormal:median=600,sigma=1.0" to "lognormal:median=600,sigm…", and click's own wrapper breaks "--max-len"
    # after "--max-".
    from kvcalc.cli.app import build_command, root

    monkeypatch.setenv("COLUMNS", "80")
    out = cli(*([cmd] if cmd else []), "--help").out
    assert out and "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    words = out.split()
    flat = " " + " ".join(words) + " "
    command = build_command(cmd) if cmd else root()
    for p in command.params:
        for name in [*p.opts, *p.secondary_opts]:
            if name.startswith("-"):
                assert name in words or f"{name}," in words, (cmd, name)
        if getattr(p, "help", None):
            assert " " + " ".join(p.help.split()) + " " in flat, (cmd, p.name)
    if cmd:
        assert " " + " ".join((command.help or "").split()) + " " in flat


TABLES = [
    ["size", "--model", "gemma3-27b", "--seq", "128k", "--engine", "vllm", "--tp", "2"],
    ["size", "--model", "jamba", "--seq", "256k", "--batch", "4"],
    ["fit", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "4", "--seq", "8k", "--concurrency", "64"],
    [
        "roofline",
        "--model",
        "deepseek-v3",
        "--gpu",
        "h200",
        "--tp",
        "8",
        "--batch",
        "1,64",
        "--seq",
        "1k..16k",
        "--plot",
        "--prefill",
        "4k",
        "--allreduce",
    ],
    ["roofline", "--model", "llama2-7b", "--gpu", "a100", "--seq", "4096", "--allreduce"],
    [
        "paging",
        "--model",
        "llama3.1-8b",
        "--gpu",
        "h100",
        "--lengths",
        "lognormal:median=600,sigma=1.0",
        "-n",
        "3000",
        "--shared-prefix",
        "100",
        "--max-len",
        "8k",
    ],
    ["tiers", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--seq", "128k", "--rate", "1"],
    ["simulate", "--model", "llama2-7b", "--gpu", "a100", "-n", "300", "--rate", "5"],
    ["simulate", "--model", "llama3.1-8b", "-n", "200", "--concurrency", "16", "--policies", "paged-16"],
    [
        "calibrate",
        *(str(ROOT / "tests" / "serving" / "raw" / f"gpustack-h100-qwen3-8b-vllm0110-sharegpt-c{c}.txt") for c in (1, 2, 4, 8)),
        "--model",
        "qwen3-8b",
        "--gpu",
        "h100",
    ],
    ["plan", "--model", "llama3.1-70b", "--rate", "10", "--prompt", "1000", "--output", "200", "--tpot", "50ms", "--closed-form"],
    ["engines"],
    ["models"],
    ["gpus"],
    ["show", "qwen3-next"],
    ["show", "mi355x"],
    ["check", str(ROOT / "docs" / "worked-examples.yaml")],
    ["explain-log", str(ROOT / "tests" / "logs" / "vllm-0.8-llama3.1-8b.log")],
]


@pytest.mark.parametrize("args", TABLES, ids=lambda a: " ".join(a[:3]))
def test_tables_fit_80_columns(cli, monkeypatch, args):
    monkeypatch.setenv("COLUMNS", "80")
    r = cli(*args)
    assert r.code == 0, r.err
    wide = [line for line in r.out.splitlines() if len(line) > 80]
    assert not wide, wide[:3]
    assert "\x1b[" not in r.out


@pytest.mark.parametrize("args", TABLES[:4], ids=lambda a: " ".join(a[:3]))
def test_no_color_means_no_escape_codes(cli, monkeypatch, args):
    monkeypatch.setenv("FORCE_COLOR", "1")  # as if on a terminal
    monkeypatch.setenv("NO_COLOR", "1")
    r = cli(*args)
    assert r.code == 0 and "\x1b[" not in r.out


def test_forced_colour_does_colour(cli, monkeypatch):
    """The control for the test above: without NO_COLOR, a forced terminal gets escape codes."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" in cli(*TABLES[0]).out


def test_every_subpackage_ships_in_the_wheel():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.relative_to(ROOT).parent.parts) for p in (ROOT / "kvcalc").rglob("__init__.py")}
    assert found <= listed, found - listed


def test_names_keys_and_urls_stay_whole_at_80_columns(cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = cli("models").out
    for name in ("qwen3-next-80b-a3b", "deepseek-v2-lite", "mistral-7b-v0.1", "qwen3-235b-a22b"):
        assert name in out, name
    out = cli("gpus").out
    assert "a100-80gb" in out and "h100-pcie" in out
    out = cli("check", ROOT / "docs" / "worked-examples.yaml", "--verbose").out
    # A dotted key is split only after a dot, its pieces on consecutive lines.
    assert "per_gpu.kv_bytes_per_token" in out
    assert "policies.contiguous." in out and "max_concurrency" in out
    assert "per_gpu.kv_bytes_per_t\n" not in out
    out = cli("show", "qwen3-next").out
    assert "https://huggingface.co/Qwen/Qwen3-Next-80B-A3B-Instruct/blob/main/config.json" in out


def test_int8_peaks_stay_whole_at_80_columns_with_their_unit(cli, monkeypatch):
    # The A100's INT8 peak (datasheet: 624 TOPS dense) as the JSON holds it, and in the 80-column text as 624.0 TOP/s:
    # integer operations, not FLOPs, in show's row and roofline's header.
    monkeypatch.setenv("COLUMNS", "80")
    spec = json.loads(cli("show", "a100-80gb", "--json").out)["spec"]
    assert spec["flops_int8"] == 624e12
    row = next(ln for ln in cli("show", "a100-80gb").out.splitlines() if "int8 dense" in ln)
    assert row.split() == ["int8", "dense", "624.0", "TOP/s"]
    args = ("roofline", "--model", "llama3.1-8b", "--gpu", "a100-80gb", "--weight-dtype", "int8", "--batch", "1")
    d = json.loads(cli(*args, "--json").out)
    assert (d["peak_flops_per_s"], d["compute_dtype"]) == (624e12, "int8")
    assert "624.0 TOP/s int8 dense" in " ".join(cli(*args).out.split())


def test_calibrate_figures_stay_whole_at_80_columns(cli, monkeypatch):
    # Every run's measured and fitted TPOT of the JSON appears whole in the 80-column text.
    monkeypatch.setenv("COLUMNS", "80")
    raw = ROOT / "tests" / "serving" / "raw"
    files = [str(raw / f"gpustack-h100-qwen3-8b-vllm0110-sharegpt-c{c}.txt") for c in (1, 2, 4, 8)]
    args = ("calibrate", *files, "--model", "qwen3-8b", "--gpu", "h100")
    text = cli(*args).out
    d = cli(*args, "--json").json()
    for run in d["runs"]:
        assert f"{run['measured_tpot_s'] * 1e3:,.2f}" in text and f"{run['fitted_tpot_s'] * 1e3:,.2f}" in text
        assert run["where"].rsplit("/", 1)[-1].split(",")[0] in text.replace("\n", "").replace(" ", "")


@pytest.mark.parametrize("args", [a for a in TABLES if a[0] not in ("check",)], ids=lambda a: " ".join(a[:3]))
def test_every_json_names_its_version_and_schema(cli, args):
    # docs/api.md: every --json object opens with kvcalc_version and schema_version.
    import kvcalc

    r = cli(*args, "--json")
    assert r.code == 0, r.err
    d = r.json()
    assert list(d)[:2] == ["kvcalc_version", "schema_version"]
    assert d["kvcalc_version"] == kvcalc.__version__ and d["schema_version"] == 1


def test_check_keeps_every_key_and_figure_whole_at_80_columns(cli, monkeypatch, tmp_path):
    # With {min, max} and {value, abs} expectations the key column used to vanish and "got" to crop.
    monkeypatch.setenv("COLUMNS", "80")
    f = tmp_path / "plan.yaml"
    f.write_text(
        "examples:\n"
        "  - name: 8B at 32k on one H100 holds 13 requests\n"
        "    run: fit --model llama3.1-8b --gpu h100 --seq 32k\n"
        "    expect:\n"
        "      max_concurrency: {min: 14, max: 20}\n"
        "      kv_pool_bytes: {value: 59.0e+9, abs: 1.0e+9}\n"
        "      weight_bytes: {min: 16.0e+9, max: 16.2e+9}\n"
    )
    text = cli("check", str(f)).out
    assert all(len(line) <= 80 for line in text.splitlines())
    d = cli("check", str(f), "--json").json()
    for row in d["results"]:
        assert row["key"] in text
        got = row["got"]
        assert (f"{got:,}" if isinstance(got, int) else str(got)) in text
    assert "FAIL" in text


def test_simulate_figures_stay_whole_at_80_columns(cli, monkeypatch):
    # Each policy's steady and whole-run throughput and TPOT of the JSON appear whole in the text.
    monkeypatch.setenv("COLUMNS", "80")
    args = ("simulate", "--model", "llama2-13b", "--gpu", "a100-40gb", "--workload", "sharegpt", "--rate", "2")
    text = cli(*args).out
    d = cli(*args, "--json").json()
    for run in d["runs"]:
        b = run["bench"]
        for figure in (
            f"{run['requests_per_s']:,.2f}",
            f"{b['request_throughput_per_s']:,.2f}",
            f"{b['output_throughput_tok_per_s']:,.0f}",
            f"{b['tpot_s']['mean'] * 1e3:,.1f}",
        ):
            assert figure in text, (run["policy"], figure)
        assert sum(line.split()[0] == run["policy"] for line in text.splitlines() if line.split()) >= 2


def test_deployment_figures_stay_whole_at_80_columns(cli, monkeypatch):
    """Issue 18's tables at 80 columns: every deployment's GPUs, shape, TPOT and TTFT from the JSON
    appear whole in the text, and plan --throughput's rates and tokens per GPU."""
    monkeypatch.setenv("COLUMNS", "80")
    args = ("plan", "--model", "deepseek-v3", "--gpus", "h100-sxm", "--kv-dtype", "fp8", "--users", "64", "--prompt", "31k")
    args += ("--output", "1k")
    text = cli(*args).out
    d = cli(*args, "--json").json()
    rows = [line for line in text.splitlines() if line.strip()[:1].isdigit()]
    for dep in d["ranked"]:
        want = (f"{dep['gpus']:,}", f"{dep['tpot_s'] * 1e3:,.1f}")
        assert any(all(w in line.split() for w in want) for line in rows), dep["shape"]
    t_args = ("plan", "--model", "qwen3-32b", "--gpus", "h200", "--max-gpus", "8", "--throughput", "--prompt", "4000")
    t_args += ("--output", "1000", "--ttft", "2s", "--tpot", "30ms")
    t_text = cli(*t_args).out
    t = cli(*t_args, "--json").json()
    for mode in ("aggregated", "disaggregated"):
        c = t[mode]
        for figure in (f"{c['rate_per_s']:,.2f}", f"{c['output_tokens_per_s_per_gpu']:,.1f}"):
            assert figure in t_text.split(), (mode, figure)


def test_models_and_priced_plans_keep_figures_whole_at_80_columns(cli, monkeypatch):
    """Issue 20: `models` split 10,485,760 over two lines and `plan --price` cropped 1,534 to 1,53:
    every name and figure of the JSON appears whole, on its row."""
    monkeypatch.setenv("COLUMNS", "80")
    text = cli("models").out
    rows = {line.split()[0]: line for line in text.splitlines() if line.split()}
    for m in cli("models", "--json").json()["models"]:
        assert m["name"] in rows, m["name"]
        assert f"{m['max_position_embeddings']:,}" in rows[m["name"]].split(), m["name"]
    args = ("plan", "--model", "llama3.1-70b", "--gpus", "h100,h200,b200,mi300x", "--rate", "26", "--prompt", "1000")
    args += ("--output", "200", "--tpot", "50ms", "--ttft", "1s", "--closed-form")
    args += ("--price", "h100=2.5,h200=3.6,b200=5,mi300x=2")
    text = cli(*args).out
    d = cli(*args, "--json").json()
    lines = [line.split() for line in text.splitlines()]
    for dep in d["ranked"]:
        want = {f"{dep['gpus']:,}", dep["gpu"], f"{dep['capacity_per_replica']:,}", f"{dep['cost_per_hour']:,.2f}"}
        assert any(want <= set(words) for words in lines), dep
        share = dep["use"].get(dep["binding"])
        if share is not None and share <= 1:
            assert any(f"{share:.0%}" in words for words in lines), dep["binding"]


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.split()]


@pytest.mark.parametrize(
    "cmd",
    [
        ("size", "--model", "gemma3-27b", "--seq", "128k", "--engine", "vllm"),
        ("fit", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "4", "--seq", "8k"),
        # A pool given (kv_cache_memory_bytes) and a refused start past the check, with their own lines.
        ("fit", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8k", "--kv-cache-memory", "70GiB"),
        (
            "fit",
            "--model",
            "glm-4.6",
            "--gpu",
            "a100-80gb",
            "--pp",
            "8",
            "--engine",
            "vllm@0.15",
            "--seq",
            "202752",
            "--max-model-len",
            "202752",
        ),
        ("tiers", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "4", "--seq", "32k", "--rate", "2"),
        ("paging", "--model", "llama3.1-8b", "--gpu", "h100", "--lengths", "lognormal:median=600,sigma=1.0", "--max-len", "8k"),
        ("gpus",),
    ],
    ids=lambda c: c[0],
)
def test_every_commands_figures_stay_whole_at_80_columns(cli, monkeypatch, cmd):
    """Issue 20: per command, the figures its JSON holds appear whole in its 80-column text, each on
    the row that names it (not just lines of at most 80 characters, which cropping passes)."""
    monkeypatch.setenv("COLUMNS", "80")
    text = cli(*cmd).out
    d = cli(*cmd, "--json").json()
    rows = _rows(text)
    flat = " ".join(text.split())

    def on_a_row(*words: str) -> bool:
        return any(all(w in r for w in words) for r in rows)

    if cmd[0] == "size":
        for lay in d["layers"]:
            assert on_a_row(f"{lay['layers']}", f"{lay['bytes_per_request']:,}"), lay["name"]
        assert f"{d['kv_bytes_per_request']:,} B" in flat
    elif cmd[0] == "fit":
        for line in d["budget"]:
            assert f"{line['bytes']:,}" in flat, line["label"]
        assert f"{d['kv_pool_tokens']:,} tokens" in flat and f"{d['max_concurrency']} requests" in flat
    elif cmd[0] == "tiers":
        for t in d["tiers"]:
            assert on_a_row(t["tier"].split()[0], f"{t['requests']:,}"), t["tier"]
        assert f"{d['disaggregation']['bytes_per_request']:,} B" in flat
        g = d["disaggregation"]
        assert f"over {g['senders']} x 50.0 GB/s" in flat and f"{g['transfer_s'] * 1e3:,.3f} ms" in flat
        assert f"{g['transfer_over_model_step']:,.1f} of kvcalc's step model's {g['decode_step_model_s'] * 1e3:,.3f} ms" in flat
        assert f"at most {g['max_requests_per_s']:,.2f} requests/s" in flat
    elif cmd[0] == "paging":
        for name, p in d["policies"].items():
            assert on_a_row(name, f"{p['utilization']:.1%}", f"{p['mean_concurrency']:.1f}"), name
    elif cmd[0] == "gpus":
        for g in d["gpus"]:
            assert on_a_row(g["name"], f"{g['memory_bytes'] // 10**9}"), g["name"]


_SPLIT_FROM_UNIT = re.compile(
    r"[0-9]\n[ |│]*(?:ms|us|s|B|KB|KiB|MB|MiB|GB|GiB|TB|GB/s|TB/s|tokens|requests|requests/s|tokens/s)(?![\w/])"
)


@pytest.mark.parametrize(
    "cmd",
    [
        ("roofline", "--batch", "32"),
        ("roofline", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--batch", "1,64", "--seq", "4k"),
        ("tiers", "--model", "llama3.1-70b", "--tp", "4", "--seq", "32k"),
        (
            "plan",
            "--model",
            "llama3.1-70b",
            "--rate",
            "10",
            "--prompt",
            "1000",
            "--output",
            "200",
            "--tpot",
            "50ms",
            "--ttft",
            "2s",
        ),
        ("simulate", "--model", "llama2-13b", "--gpu", "a100-40gb", "--workload", "sharegpt", "--requests", "300"),
        ("fit", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "4", "--seq", "8k"),
    ],
    ids=lambda c: " ".join(c[:3]),
)
def test_no_figure_is_parted_from_its_unit_at_80_columns(cli, monkeypatch, cmd):
    # At 80 columns a paragraph wraps between words, never between a figure and its unit: until 2026-12-07 rich broke
    # roofline's verdict after "13.154" with "ms" on the next line, tiers' transfer after "10.00" with "GiB", plan's
    # verdict after "(context 1,100" with "tokens" (it wraps at any whitespace, a no-break space included). The
    # figures the JSON holds sit on one line with their units.
    monkeypatch.setenv("COLUMNS", "80")
    text = cli(*cmd).out
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert not _SPLIT_FROM_UNIT.search(text), _SPLIT_FROM_UNIT.search(text)
    d = cli(*cmd, "--json").json()

    def on_a_line(fig: str) -> bool:
        return any(fig in line for line in lines)

    if cmd[0] == "roofline" and len(d["rows"]) == 1:
        # One point: the verdict says both steps in words (a grid's table gives them in its ms columns).
        r = d["rows"][0]
        assert on_a_line(f"{r['t_bound_s'] * 1e3:,.3f} ms") and on_a_line(f"{r['t_step_s'] * 1e3:,.3f} ms")
    elif cmd[0] == "roofline":
        lo, hi = min(r["t_bound_s"] for r in d["rows"]), max(r["t_bound_s"] for r in d["rows"])
        assert on_a_line(f"{lo * 1e3:,.3f} ms to {hi * 1e3:,.3f} ms")
    elif cmd[0] == "tiers":
        g = d["disaggregation"]
        b = g["bytes_per_request"]
        assert on_a_line(f"{b / 1e9:,.2f} GB") and on_a_line(f"{b / 2**30:,.2f} GiB")
        assert on_a_line(f"{g['transfer_s'] * 1e3:,.3f} ms") and on_a_line(f"{g['max_requests_per_s']:,.2f} requests/s")


# ---- the column encoder of big grids: byte for byte what json.dumps prints -------------------------

_PLAIN = dict(ensure_ascii=False, separators=(",", ":"))


def _reference(columns):
    """The independent implementation: json.dumps of one dict per row, non-finite floats as null
    (the JSON contract, kvcalc.render.json)."""
    import json
    import math

    def plain(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return [plain(x) for x in v] if isinstance(v, list) else v

    keys = list(columns)
    n = len(columns[keys[0]]) if keys else 0
    return json.dumps([{k: plain(columns[k][i]) for k in keys} for i in range(n)], **_PLAIN)


def _values():
    from hypothesis import strategies as st

    return st.one_of(
        st.integers(min_value=-(10**30), max_value=10**30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.0, -0.0, 1e-320, 5e-324, 1e308]),
        st.text(max_size=8),
        st.sampled_from(["%", "%s", "%d", '"', "\\", "é", "\n", "\u2028"]),
        st.booleans(),
        st.none(),
        st.lists(st.text(max_size=5), max_size=3),
    )


def test_encode_columns_is_json_dumps_byte_for_byte():
    from hypothesis import given, settings, strategies as st

    from kvcalc.render.json import encode_columns, iter_columns

    @st.composite
    def tables(draw):
        n = draw(st.integers(min_value=0, max_value=12))
        keys = draw(st.lists(st.sampled_from(["a", "b", "%d", "k%", 'q"', "é", "t_s"]), unique=True, max_size=5))
        out = {}
        for k in keys:
            how = draw(st.sampled_from(["one", "mixed", "int", "float", "few"]))
            if how == "one":
                v = draw(_values())
                out[k] = [v] * n
            elif how == "int":
                out[k] = draw(st.lists(st.integers(), min_size=n, max_size=n))
            elif how == "float":
                out[k] = draw(st.lists(st.floats(), min_size=n, max_size=n))
            elif how == "few":
                pool = draw(st.lists(st.floats(), min_size=1, max_size=2))
                out[k] = [pool[i % len(pool)] for i in range(n)]
            else:
                out[k] = draw(st.lists(_values(), min_size=n, max_size=n))
        return out

    @settings(max_examples=400, deadline=None)
    @given(tables())
    def check(cols):
        want = _reference(cols)
        assert encode_columns(cols) == want
        assert "".join(iter_columns(cols, chunk=3)) == want  # written in pieces of 3 rows

    check()


def test_encode_columns_writes_few_valued_columns_and_zeros_exactly():
    # Hand-written: a per-batch column repeating 2 values over 10 rows takes the few-values path;
    # a column of 0.0 and -0.0 must keep both texts; a constant string with '%' stays whole.
    from kvcalc.render.json import encode_columns

    cols = {"t": [0.25, 1e-05] * 5, "z": [0.0, -0.0] * 5, "s": ["50%"] * 10, "b": [True, False] * 5}
    text = encode_columns(cols)
    assert text.startswith('[{"t":0.25,"z":0.0,"s":"50%","b":true},{"t":1e-05,"z":-0.0,"s":"50%","b":false},')
    assert text.count("{") == 10


def test_a_big_rooflines_json_is_what_to_json_dumps(capsys):
    # 2,500 points (> BIG_DOCUMENT) go through the column encoder; the text must equal the dict path's.
    import json

    from kvcalc import load_gpu, load_model
    from kvcalc.engine.roofline import roofline
    from kvcalc.render.json import BIG_DOCUMENT, dumps, emit_json, to_json

    r = roofline(load_model("llama3.1-8b"), load_gpu("h100"), list(range(1, 51)), list(range(1000, 200_001, 4000)))
    assert len(r.rows) > BIG_DOCUMENT
    emit_json(r, {"engine": "default"})
    got = capsys.readouterr().out
    assert got == dumps(to_json(r, {"engine": "default"}))
    assert len(json.loads(got)["rows"]) == 50 * 50
    # docs/api.md: a document of over 2,000 rows is one line, a smaller one indented.
    assert "\n" not in got[:-1] and got.startswith('{"kvcalc_version":')
    small = roofline(load_model("llama3.1-8b"), load_gpu("h100"), [1, 2], [1000])
    emit_json(small)
    assert capsys.readouterr().out.startswith('{\n  "kvcalc_version": ')


def test_two_processes_write_a_long_list_exactly_as_one_does(tmp_path, monkeypatch):
    # The rows of a long document are written half by a forked child, half by this process: the file
    # must hold json.dumps's text of the rows, byte for byte, whatever the split (odd, even, 1 row).
    import json
    import os
    import sys

    from kvcalc.render import json as kj

    rows = [
        {"i": i, "t_s": i / 7, "z": -0.0 if i % 3 else 0.0, "w": [f"row {i}"] if i % 2 else [], "k": "same"} for i in range(9)
    ]
    cols = {k: [r[k] for r in rows] for k in rows[0]}
    want = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    # docs/api.md and docs/benchmarks.md: from 20,000 rows, unless KVCALC_JSON_PROCESSES=1.
    assert kj.PARALLEL_ROWS == 20_000 and kj._halves(19_999) == 0
    assert kj.PARALLEL_MAX_ROWS == 250_000 and kj._halves(250_001) == 0  # (its half's text held: memory)
    monkeypatch.setenv("KVCALC_JSON_PROCESSES", "1")
    assert kj._halves(10**6) == 0
    monkeypatch.delenv("KVCALC_JSON_PROCESSES")
    for half in (1, 4, 5, 8):
        monkeypatch.setattr(kj, "_halves", lambda n, half=half: half)
        path = tmp_path / f"rows{half}.json"
        with open(path, "w", encoding="utf-8") as f:
            monkeypatch.setattr(sys, "stdout", f)
            pid = os.getpid()
            kj._write_rows(cols)
            assert os.getpid() == pid  # the child never returns here
            f.flush()
        monkeypatch.undo()
        assert path.read_text(encoding="utf-8") == want, half


def test_a_writer_childs_failure_is_raised_as_its_error(monkeypatch):
    # A child that cannot write (a full disk) is this process's error, not a silent missing half.
    import errno
    import os
    import sys

    from kvcalc.render import json as kj

    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    monkeypatch.setattr(kj, "_halves", lambda n: 5)
    with open("/dev/full", "w") as f:
        monkeypatch.setattr(sys, "stdout", f)
        with pytest.raises(OSError) as e:
            kj._write_rows({"i": list(range(10))})
        monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    assert e.value.errno == errno.ENOSPC


def test_a_big_grid_computed_on_arrays_is_the_per_point_arithmetic():
    # Grids of VECTOR_POINTS and more are computed with numpy: every column must equal, exactly,
    # what the per-point path (Python ints and floats) computes for the same grid, step model included.
    from kvcalc import load_gpu, load_model
    from kvcalc.engine import roofline as R
    from kvcalc.engine.steptime import DEFAULTS

    for model, gpu, tp in (("llama3.1-8b", "h100", 1), ("llama3.1-70b", "h200", 4), ("deepseek-v3", "h200", 8)):
        m, g = load_model(model), load_gpu(gpu)
        batches, seqs = [1, 3, 64, 7, 512, 1000], [1024 * k + 5 for k in range(1, 801)]
        assert len(batches) * len(seqs) >= R.VECTOR_POINTS == 4096  # (docs/benchmarks.md)
        fast = R.roofline(m, g, batches, seqs, tp=tp, constants=DEFAULTS).rows.columns
        try:
            R.VECTOR_POINTS, saved = 10**12, R.VECTOR_POINTS
            slow = R.roofline(m, g, batches, seqs, tp=tp, constants=DEFAULTS).rows.columns
        finally:
            R.VECTOR_POINTS = saved
        for k in slow:
            assert [type(x) for x in fast[k]] == [type(x) for x in slow[k]], k
            assert fast[k] == slow[k], k
        one = R.decode_bound(m, g, 512, seqs[-1], tp=tp)  # and one point, through decode_bound
        i = seqs.index(seqs[-1]) * len(batches) + batches.index(512)
        assert (one.t_memory_s, one.flops, one.kv_share) == (fast["t_memory_s"][i], fast["flops"][i], fast["kv_share"][i])


def test_a_grid_with_an_infinite_figure_prints_null_at_any_size(capsys):
    # The JSON contract (docs/api.md): a figure that is not finite is null, in a small grid (the
    # dict path) and a big one (the column encoder) alike; json.loads refuses neither.
    import dataclasses
    import json

    from kvcalc import load_gpu, load_model
    from kvcalc.engine.roofline import PointTable, roofline
    from kvcalc.render.json import emit_json

    for batches in ([1, 2], list(range(1, 2502))):
        r = roofline(load_model("llama3.1-8b"), load_gpu("h100"), batches, [1000])
        cols = dict(r.rows.columns)
        cols["t_compute_s"] = [float("inf")] + cols["t_compute_s"][1:]
        emit_json(dataclasses.replace(r, rows=PointTable(cols)))
        doc = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
        assert doc["rows"][0]["t_compute_s"] is None
        assert doc["rows"][1]["t_compute_s"] == cols["t_compute_s"][1]


def test_plans_simulation_table_keeps_every_figure_whole_at_80_columns(cli, monkeypatch):
    # Issue 20's own command, simulation included: the check table cropped GPU names, shapes and
    # rates ("h100-s", "shap", "24.58/26."). Every verified row's figures must appear whole, on one line.
    monkeypatch.setenv("COLUMNS", "80")
    args = ("plan", "--model", "llama3.1-70b", "--gpus", "h100,h200,b200,mi300x", "--rate", "26")
    args += ("--price", "h100=2.5,h200=3.5,b200=6,mi300x=2.8")
    text = cli(*args).out
    d = cli(*args, "--json").json()
    assert d["verified"], "the command checks its best deployments by simulation"
    lines = _rows(text)
    # One GPU type among the rows: its name heads the table (as the ranked table's) instead of a column.
    one_gpu = len({v["gpu"] for v in d["verified"]}) == 1
    if one_gpu:
        head = text.split("Checked by simulation")[1].splitlines()[:6]
        assert f"on {d['verified'][0]['gpu']}" in [line.strip() for line in head]
    for v in d["verified"]:
        want = {
            f"{v['gpus']:,}",
            *([] if one_gpu else [v["gpu"]]),
            f"{v['ttft_s'] * 1e3:,.0f}",
            f"{v['tpot_mean_s'] * 1e3:,.1f}",
            f"{v['served_per_s']:,.2f}/{v['offered_per_s']:,.2f}",
            "meets" if v["ok"] else "misses",
        }
        assert any(want <= set(words) for words in lines), v
        if not v["ok"]:
            assert v["note"] in " ".join(text.split()), v["note"]  # why it misses, below the table
    assert max(len(line) for line in text.splitlines()) <= 80


def test_every_answer_opens_with_its_verdict(cli, monkeypatch, tmp_path):
    # Issue 20: every answer opens with a verdict line, then the detail. The verdict is checked
    # against the JSON's own figures.
    monkeypatch.setenv("COLUMNS", "200")
    first = lambda out: [x for x in out.splitlines() if not x.startswith(("model:", "gpu:"))][0]
    one = ("roofline", "--model", "llama3.1-8b", "--gpu", "h100", "--batch", "32", "--seq", "4096")
    p = cli(*one, "--json").json()
    line = first(cli(*one).out)
    assert line.startswith(
        f"{p['bound_by']}-bound: a decode step of 32 x 4,096 tokens takes at least {p['t_bound_s'] * 1e3:.3f} ms"
    )
    assert f"up to {p['max_batch_in_memory']:,} requests" in line
    grid = ("roofline", "--model", "llama3.1-8b", "--gpu", "h100", "--batch", "1,64,512", "--seq", "1k,32k,128k")
    rows = cli(*grid, "--json").json()["rows"]
    mem, fit = sum(r["bound_by"] == "memory" for r in rows), sum(bool(r["fits_in_memory"]) for r in rows)
    line = first(cli(*grid).out)
    assert line.startswith(
        f"memory-bound at {mem} of 9 points, compute-bound at {9 - mem}" if mem < 9 else "memory-bound at all 9"
    )
    assert f"{fit} of the 9 fit in memory" in line
    plan = ("plan", "--model", "llama3.1-70b", "--gpus", "h100,h200", "--rate", "26", "--tpot", "50ms", "--ttft", "1s")
    d = cli(*plan, "--json").json()
    b = d["best"]
    line = first(cli(*plan).out)
    assert line.startswith(f"Fewest GPUs: {b['gpus']} x {b['gpu']} (") and "meets the targets" in line
    none = ("plan", "--model", "llama3.1-70b", "--gpus", "h100", "--rate", "2600", "--tpot", "5ms", "--ttft", "10ms")
    none += ("--max-gpus", "8")
    assert first(cli(*none).out).startswith("NO DEPLOYMENT carries this load. Nearest:")
    thr = ("plan", "--throughput", "--model", "llama3.1-8b", "--gpus", "h100", "--max-gpus", "8")
    t = cli(*thr, "--json").json()
    best = max(
        (x for x in (t["aggregated"], t["disaggregated"]) if x["deployment"]), key=lambda x: x["output_tokens_per_s_per_gpu"]
    )
    on = "8 x h100-sxm" if best["deployment"]["gpus"] == 8 else f"{best['deployment']['gpus']} of the 8 x h100-sxm"
    assert first(cli(*thr).out).startswith(f"{on} carry at most {best['rate_per_s']:,.2f} requests/s")
    fit = ("fit", "--model", "llama3.1-405b", "--gpu", "l4", "--seq", "4k")
    assert first(cli(*fit).out).startswith("DOES NOT FIT")
    # Llama-2-7B at 4,096 tokens: 32 layers x 32 KV heads x 128 x 2 (K and V) x 2 B x 4,096 = 2,147,483,648 B.
    assert first(cli("size", "--model", "llama2-7b", "--seq", "4096").out).startswith(
        "KV cache: 2,147,483,648 B (2.15 GB, 2.00 GiB) a request of 4,096 tokens"
    )
    pg = ("paging", "--model", "llama3.1-8b", "--gpu", "h100", "--lengths", "fixed:1000", "-n", "2000")
    d = cli(*pg, "--json").json()
    p16, pre = d["policies"]["paged-16"], d["policies"]["prealloc"]
    want = f"paged-16 holds {p16['mean_concurrency']:,.1f} requests at once, using {p16['utilization']:.1%} of what it reserves; "
    assert first(cli(*pg).out) == want + f"{d['paged_over_prealloc']:.2f}x the {pre['mean_concurrency']:,.1f} of prealloc"
    log = str(Path(__file__).parent / "logs" / "real" / "vllm-eole-gemma3-1b.log")
    ex = cli("explain-log", log, "--gpu", "rtx5090", "--json").json()["startups"][0]
    tok = next(x for x in ex["rows"] if x["key"] == "kv_tokens")
    want = f"kvcalc gives the log's KV cache size, tokens from the log's own figures to {tok['from_log_error']:+.1%}, "
    assert first(cli("explain-log", log, "--gpu", "rtx5090").out) == f"{log}: " + want + (
        f"and from its settings alone to {tok['estimate_error']:+.1%}"
    )
    ck = cli("check", str(Path(__file__).parents[1] / "docs" / "worked-examples.yaml"))
    d = cli("check", str(Path(__file__).parents[1] / "docs" / "worked-examples.yaml"), "--json").json()
    examples = len({x["example"] for x in d["results"]})
    assert first(ck.out) == f"PASS: all {d['passed']:,} checks hold, in {examples:,} examples" and d["failed"] == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "examples:\n  - name: wrong\n    run: size --model llama2-7b --seq 1\n    expect:\n      kv_bytes_per_token: 1\n"
    )
    assert first(cli("check", str(bad)).out) == "FAIL: 1 of 1 checks failed, in 1 of 1 examples"
    ti = ("tiers", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8k")
    tiers = {t["tier"]: t for t in cli(*ti, "--json").json()["tiers"]}
    line = first(cli(*ti).out)
    assert line.startswith("reloading a request's KV beats recomputing it from")
    for name, t in tiers.items():
        if t["break_even_seq"] and t["break_even_seq"] > 1:
            assert f"{name} from {t['break_even_seq']:,} tokens" in line


@pytest.mark.parametrize("width", ["80", "100"])
def test_a_roofline_grid_keeps_every_figure_whole(cli, monkeypatch, width):
    # 405B at TP 8 on B200 from 1k to 1M tokens: seven-digit contexts and four-digit milliseconds,
    # which an 80-column table cropped ('1,048,57', '4,341.94', 'comput'). At 80 columns the bound
    # and the step stay (the terms go to --json); from 100 columns the memory and compute terms too.
    monkeypatch.setenv("COLUMNS", width)
    args = ("roofline", "--model", "llama3.1-405b", "--gpu", "b200", "--tp", "8", "--batch", "1,512", "--seq", "1k,1M")
    text = cli(*args).out
    rows = _rows(text)
    for p in cli(*args, "--json").json()["rows"]:
        want = {f"{p['batch']:,}", f"{p['seq']:,}", f"{p['t_bound_s'] * 1e3:,.3f}", f"{p['t_step_s'] * 1e3:,.3f}"}
        want |= {p["bound_by"], f"{p['tokens_per_s']:,.0f}"}
        if width == "100":
            want |= {f"{p['t_memory_s'] * 1e3:,.3f}", f"{p['t_compute_s'] * 1e3:,.3f}"}
        assert any(want <= set(words) for words in rows), p
    assert max(len(line) for line in text.splitlines()) <= int(width)


NARROW_CASES = [
    ("size", "--model", "deepseek-v3", "--seq", "1M", "--batch", "64", "--tp", "8"),
    ("fit", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--seq", "128k", "--kv-dtype", "fp8"),
    ("fit", "--model", "llama3.1-405b", "--gpu", "l4", "--seq", "4k"),
    ("fit", "--model", "llama3.1-8b", "--gpu", "rtx4090", "--seq", "4k", "--max-model-len", "auto", "--kv-cache-memory", "3GiB"),
    ("roofline", "--model", "llama3.1-405b", "--gpu", "b200", "--tp", "8", "--batch", "4096", "--seq", "1M"),
    ("roofline", "--model", "kimi-k2", "--gpu", "b200", "--tp", "8", "--batch", "1..2048:1", "--seq", "1k..1M:64k"),
    ("tiers", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "4", "--seq", "1M", "--rate", "200"),
    ("paging", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--lengths", "uniform:100..100000", "--max-len", "128k"),
    ("simulate", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8", "--rate", "50", "-n", "400", "--prompt", "30000"),
    (
        "plan",
        "--model",
        "llama3.1-70b",
        "--gpus",
        "h100,h200,b200,mi300x",
        "--rate",
        "26",
        "--price",
        "h100=2.5,h200=3.5,b200=6,mi300x=2.8",
    ),
    ("plan", "--throughput", "--model", "llama3.1-70b", "--gpus", "b200", "--max-gpus", "64"),
    ("show", "deepseek-v3"),
    ("engines",),
]
_FIGURE = r"[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?x?"


@pytest.mark.parametrize("cmd", NARROW_CASES, ids=lambda c: "-".join(c[:2]))
def test_no_figure_of_a_wide_terminal_is_lost_at_80_columns(cli, monkeypatch, cmd):
    # Every figure a 240-column terminal shows appears, whole, at 80 columns: a cropped cell
    # ('mi3', '8.08/8.6', '1,048,57') turns a figure into another number or none. Each case holds
    # the widest figures kvcalc prints (1M contexts, 64-GPU plans, four-digit milliseconds).
    import re

    monkeypatch.setenv("COLUMNS", "240")
    wide = cli(*cmd).out
    monkeypatch.setenv("COLUMNS", "80")
    narrow = cli(*cmd).out
    lost = sorted(set(re.findall(_FIGURE, wide)) - set(re.findall(_FIGURE, narrow)))
    assert not lost, f"figures cropped at 80 columns: {lost[:10]}"
    assert max(len(line) for line in narrow.splitlines()) <= 80


def test_a_verdict_prints_brackets_as_they_are(cli, tmp_path, monkeypatch):
    # A verdict line carries names the user chose (a check example, a log file): '[red]' in them is
    # text, not rich markup that would vanish or colour the rest.
    monkeypatch.setenv("COLUMNS", "400")
    log = tmp_path / "run[red]1.log"
    log.write_text((Path(__file__).parent / "logs" / "real" / "vllm-eole-gemma3-1b.log").read_text())
    out = cli("explain-log", str(log), "--gpu", "rtx5090").out
    assert out.splitlines()[0].startswith(f"{log}: kvcalc gives")
    # A trace file's name in paging's header, and a count of one in the singular.
    trace = tmp_path / "t[red].jsonl"
    trace.write_text('{"prompt_tokens": 100, "output_tokens": 10}\n')
    out = cli("paging", "--trace", str(trace), "--model", "llama3.1-8b", "--gpu", "h100").out
    assert f"trace {trace} (1 request)," in out


def test_explain_logs_dp_attention_header_matches_its_json(cli, monkeypatch):
    """An SGLang start with DP attention (tp_size 4, dp_size 4): the 80-column header names TP and DP as the JSON does."""
    monkeypatch.setenv("COLUMNS", "80")
    log = str(ROOT / "tests" / "logs" / "real" / "sglang-stevenwang-b200-4xb200-deepseek-v3.2-awq-dpattn.log")
    args = ("explain-log", log, "--model", "deepseek-v3.2", "--gpu", "b200", "--engine", "sglang@0.5.9", "--weight-dtype", "int4")
    j = cli(*args, "--json").json()["startups"][0]
    assert (j["tp"], j["dp"]) == (1, 4)
    text = " ".join(cli(*args).out.split())
    assert f"TP {j['tp']}, DP {j['dp']}, PP {j['pp']}," in text
    assert all(len(line) <= 80 for line in cli(*args).out.splitlines())


def test_the_throughput_verdict_says_when_the_other_mode_carries_more_in_all(cli, monkeypatch):
    # The mode with the most output tokens per GPU leads the line; where it uses fewer of the GPUs and the other mode,
    # on its own GPUs, carries more requests a second in all, the line says so (before 2026-12-06 it called the first
    # "the most the GPUs carry"). Qwen3-30B-A3B on 8 H100s under SGLang 0.5.9 with a receive interval of 30, 1,000 + 300
    # tokens and a TPOT target of 100 ms: six GPUs disaggregated carry the most per GPU (111.9 requests/s), eight
    # aggregated more in all (117.9). Until a prefill instance's mean TTFT took its chain's own wait (2026-12-07) it was
    # 500 + 300 at 50 ms, where disaggregated then came to carry more in all too; until a prompt step's count of
    # prompts followed the length of the step before it (the same day), 1,000 + 300 at an interval of 10.
    thr = ("plan", "--throughput", "--model", "qwen3-30b-a3b", "--gpus", "h100", "--engine", "sglang@0.5.9", "--max-gpus", "8")
    thr += ("--prompt", "1000", "--output", "300", "--tpot", "100ms", "--ttft", "2s", "--scheduler-recv-interval", "30")
    t = cli(*thr, "--json").json()
    agg, dis = t["aggregated"], t["disaggregated"]
    assert dis["output_tokens_per_s_per_gpu"] > agg["output_tokens_per_s_per_gpu"] and dis["deployment"]["gpus"] < 8
    assert agg["rate_per_s"] > dis["rate_per_s"] and agg["deployment"]["gpus"] == 8
    monkeypatch.setenv("COLUMNS", "300")
    line = [x for x in cli(*thr).out.splitlines() if not x.startswith(("model:", "gpu:"))][0]
    assert line.startswith(f"{dis['deployment']['gpus']} of the 8 x h100-sxm carry at most {dis['rate_per_s']:,.2f} requests/s")
    assert line.endswith(f"; aggregated carries more in all: {agg['rate_per_s']:,.2f} requests/s on 8")


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(
        st.one_of(
            st.from_regex(r"[0-9][0-9,.]{0,7}", fullmatch=True),
            st.sampled_from(["ms", "GiB", "GB/s", "tokens", "requests/s", "x", "us", "the", "step", "(context", "1,100"]),
            st.text(alphabet="abcdefgh-/().,", min_size=1, max_size=30),
        ),
        min_size=1,
        max_size=80,
    ),
    width=st.integers(min_value=8, max_value=100),
)
def test_line_breaks_fit_the_width_and_never_part_a_figure_from_its_unit(words, width):
    # Invariants of the console's own wrapping (render/console.line_breaks): each cut is a space, the cuts rejoin into
    # the text, none falls between a figure and its unit, and a line runs past the width only where it holds no space it
    # could break at within it.
    from kvcalc.render.console import _FIGURE_UNIT, line_breaks

    plain = " ".join(words)
    cuts = line_breaks(plain, width)
    assert cuts == sorted(set(cuts)) and all(plain[c] == " " for c in cuts)
    assert not any(_FIGURE_UNIT.match(plain, c) for c in cuts)
    starts = [0] + [c + 1 for c in cuts]
    ends = cuts + [len(plain)]
    assert " ".join(plain[a:b] for a, b in zip(starts, ends)) == plain

    def breakable(i: int) -> bool:
        return plain[i] == " " and not _FIGURE_UNIT.match(plain, i)

    for a, b in zip(starts, ends):
        if b - a > width:
            assert not any(breakable(i) for i in range(a + 1, a + width + 1)), plain[a:b]
    # Greedy: no line ends early; the next stretch, up to its own break, would not have fitted on it.
    for a, c in zip(starts, cuts):
        nxt = next((i for i in range(c + 1, len(plain)) if breakable(i)), len(plain))
        assert nxt - a > width, (plain[a:c], plain[c + 1 : nxt])
