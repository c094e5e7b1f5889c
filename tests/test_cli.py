"""The command line: JSON contract, tables, and bad input as one line with exit code 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def test_size_json_contract(cli):
    r = cli("size", "--model", "llama2-7b", "--seq", "4k", "--batch", "8", "--json")
    assert r.code == 0, r.err
    d = r.json()
    assert d["kv_bytes_per_token"] == 2 * 32 * 32 * 128 * 2
    assert d["kv_bytes_per_request"] == 2 * 32 * 32 * 128 * 2 * 4096
    assert d["kv_bytes_total"] == 2 * 32 * 32 * 128 * 2 * 4096 * 8
    assert d["per_gpu"]["kv_bytes_total"] == d["kv_bytes_total"]
    assert d["inputs"]["seq"] == 4096 and d["inputs"]["model"] == "llama2-7b"
    assert d["assumptions"] and d["exceeds_max_context"] is False


def test_size_table_names_units(cli):
    r = cli("size", "--model", "llama2-7b", "--seq", "4096")
    assert r.code == 0
    assert "2,147,483,648 B" in r.out and "GiB" in r.out and "GB" in r.out
    assert "\x1b[" not in r.out  # not a terminal: no escape codes


def test_size_engine_hf_says_which_mla_cache(cli):
    r = cli("size", "--model", "deepseek-v3", "--seq", "1k", "--engine", "hf", "--json")
    d = r.json()
    assert d["kv_bytes_per_token"] == 61 * 576 * 2
    assert any("latent" in a and "--engine hf4" in a for a in d["assumptions"])
    r4 = cli("size", "--model", "deepseek-v3", "--seq", "1k", "--engine", "hf4", "--json").json()
    assert r4["kv_bytes_per_token"] == 61 * 128 * 320 * 2


def test_size_over_max_context_warns(cli):
    r = cli("size", "--model", "llama2-7b", "--seq", "8k", "--json")
    assert r.code == 0
    d = r.json()
    assert d["exceeds_max_context"] is True and d["warnings"]


def test_fit_json_contract(cli):
    r = cli(
        "fit",
        "--model",
        "llama3.1-8b",
        "--gpu",
        "h100",
        "--seq",
        "8k",
        "--json",
        "--gpu-memory",
        "80GiB",
        "--weights",
        "16060522496B",
        "--activation",
        "1GiB",
        "--non-torch",
        "256MiB",
        "--cudagraph",
        "512MiB",
    )
    assert r.code == 0, r.err
    d = r.json()
    usable = 79_027_398_247  # ceil(0.92 x 80 GiB)
    pool = usable - 16060522496 - 2**30 - 2**28 - 2**29
    assert d["kv_pool_bytes"] == pool
    blocks = pool // (16 * 131072)
    assert d["kv_pool_blocks"] == blocks
    assert d["kv_pool_tokens"] == blocks * 8192 // 512  # int(blocks / 512 per request x 8,192)
    assert d["max_concurrency"] == (blocks - 1) // 512
    assert d["weight_bytes"] == 16060522496
    assert d["max_seq_len"] > 0 and d["inputs"]["gpu_memory"] == 80 * 2**30
    for k in ("max_concurrency", "kv_pool_bytes", "kv_pool_tokens", "max_seq_len", "weight_bytes"):
        assert k in d


def test_fit_reverse(cli):
    d = cli("fit", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "4", "--seq", "8k", "-n", "64", "--json").json()
    rev = d["reverse"]
    # TP 4 holds fewer than 64 (the fit above says so); the next shape on whole servers (PP only across
    # servers, a share of a server that divides it: 1, 2, 4 or 8 GPUs) is the full 8-GPU node, not a 6-GPU
    # TP 2 x PP 3 inside one (issue 18: deployments on nodes). The answer holds them.
    assert d["max_concurrency"] < 64
    assert rev["gpus_needed"] == 8 and rev["pp_needed"] == 1
    assert rev["tp_needed"] * rev["pp_needed"] * rev["replicas_needed"] == rev["gpus_needed"]
    tp, reps = rev["tp_needed"], rev["replicas_needed"]
    held = cli("fit", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", str(tp), "--seq", "8k", "--json").json()
    assert held["max_concurrency"] * reps >= 64


def test_catalog_commands(cli):
    assert "llama4-scout" in cli("models").out
    assert "mi355x" in cli("gpus").out
    d = cli("show", "deepseek-v3", "--json").json()
    assert d["derived"]["kv_bytes_per_token"] == 70_272
    g = cli("show", "h100", "--json").json()
    assert g["spec"]["name"] == "h100-sxm"
    assert cli("show", "qwen3-32b").code == 0
    assert len(cli("models", "--json").json()["models"]) == 69


def test_schema_is_json_schema(cli):
    for kind in ("model", "gpu"):
        r = cli("schema", kind)
        assert r.code == 0
        assert json.loads(r.out)["type"] == "object"


def test_import_round_trips(cli, tmp_path):
    r = cli("import", ROOT / "tests/configs/qwen3-32b.json", "--name", "my-qwen")
    assert r.code == 0, r.err
    spec = tmp_path / "my-qwen.yaml"
    spec.write_text(r.out)
    assert yaml.safe_load(r.out)["name"] == "my-qwen"
    d = cli("size", "--model", spec, "--seq", "1", "--json").json()
    assert d["kv_bytes_per_token"] == 2 * 64 * 8 * 128 * 2


def test_model_from_config_json_and_folder(cli, tmp_path):
    folder = tmp_path / "Gemma-2-9b"
    folder.mkdir()
    (folder / "config.json").write_text((ROOT / "tests/configs/gemma2-9b.json").read_text())
    for ref in (folder, folder / "config.json"):
        d = cli("size", "--model", ref, "--seq", "8192", "--json").json()
        # 21 sliding layers hold 4096 tokens, 21 full layers 8192; 8 KV heads x 256 x 2 B x K,V.
        assert d["kv_bytes_per_request"] == (21 * 4096 + 21 * 8192) * 2 * 8 * 256 * 2


def test_unknown_model_type_warns_every_assumption(cli, tmp_path):
    cfg = {
        "model_type": "brandnew",
        "hidden_size": 2048,
        "num_attention_heads": 16,
        "num_hidden_layers": 24,
        "intermediate_size": 5632,
        "vocab_size": 32000,
    }
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    r = cli("import", p)
    assert r.code == 0
    assert "unknown model_type 'brandnew'" in r.err
    assert "num_key_value_heads missing" in r.err and "head_dim missing" in r.err
    assert "torch_dtype missing" in r.err and "max_position_embeddings missing" in r.err


# ---- bad input: one line on stderr, exit code 2, no traceback ----------------------------------


def one_line_error(r, *needles):
    assert r.code == 2, (r.code, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("kvcalc: error: ")
    assert "Traceback" not in r.err
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.parametrize(
    "args,needles",
    [
        (["size", "--model", "llama2-7", "--seq", "4k"], ["llama2-7b"]),
        (["size", "--model", "lama3.1-8b", "--seq", "4k"], ["llama3.1-8b"]),
        (["fit", "--model", "llama2-7b", "--gpu", "h1OO", "--seq", "4k"], ["h100"]),
        (["size", "--model", "llama2-7b", "--seq", "4q"], ["--seq"]),
        (["size", "--model", "llama2-7b", "--seq", "0"], ["--seq"]),
        (["size", "--model", "llama2-7b", "--seq", "-5"], []),
        (["size", "--model", "llama2-7b", "--seq", "4k", "--batch", "0"], ["--batch"]),
        (["size", "--model", "llama2-7b", "--seq", "4k", "--kv-dtype", "fp9"], ["fp8"]),
        (["size", "--model", "llama3.1-70b", "--seq", "4k", "--tp", "3"], ["TP 3", "(--tp)"]),
        (["size", "--model", "llama2-7b", "--seq", "4k", "--pp", "33"], ["--pp"]),
        (["fit", "--model", "llama2-7b", "--gpu", "h100", "--seq", "4k", "--weights", "12 parsecs"], ["--weights"]),
        (["fit", "--model", "llama2-7b", "--gpu", "h100", "--seq", "4k", "--util", "1.5"], ["--util"]),
        (["fit", "--model", "llama2-7b", "--gpu", "h100", "--seq", "4k", "--engine", "vlm"], ["vllm"]),
        (["fit", "--model", "llama2-7b", "--gpu", "h100", "--seq", "4k", "--gpu-memory", "0"], ["--gpu-memory"]),
        (["size", "--model", "llama2-7b"], ["--seq"]),
        (["size", "--model", "llama2-7b", "--seq", "4k", "--bogus"], ["--bogus"]),
        (["nonsense"], ["nonsense"]),
        (["schema", "table"], ["model or gpu"]),
        (["show", "h1000"], ["h100"]),
        (["size", "--model", "/no/such/file.yaml", "--seq", "4k"], ["no such file"]),
        (
            ["roofline", "--model", "deepseek-v3", "--gpu", "b200", "--moe-backend", "trtlm"],
            ["did you mean trtllm", "--moe-backend"],
        ),
        (["simulate", "--model", "llama2-7b", "--gpu", "b200", "--moe-backend", "cutlass"], ["unknown MoE backend 'cutlass'"]),
        (["roofline", "--model", "deepseek-v3", "--gpu", "h200", "--compute-dtype", "fp4"], ["h200 has no fp4 tensor units"]),
        (["roofline", "--model", "llama2-7b", "--gpu", "a100-80gb", "--compute-dtype", "fp4"], ["bf16 or int8 on this GPU"]),
        (["roofline", "--model", "llama2-7b", "--gpu", "h200", "--compute-dtype", "fp4"], ["bf16, fp8 or int8 on this GPU"]),
        (
            ["roofline", "--model", "llama2-7b", "--gpu", "t4", "--compute-dtype", "int8"],
            ["no INT8 tensor peak", "bf16 on this GPU"],
        ),
        # An unknown --weight-dtype names the option (it had said "(weight dtype)"), with every format kvcalc reads.
        (
            ["fit", "--model", "llama2-7b", "--gpu", "h100", "--seq", "4k", "--weight-dtype", "int8-w8a17"],
            ["unknown weight dtype 'int8-w8a17' (--weight-dtype)", "int8, int8-w8a16, int4"],
        ),
        (["roofline", "--model", "deepseek-v3", "--gpu", "b200", "--compute-dtype", "fp5"], ["bf16, fp16, fp8, fp4 or int8"]),
    ],
)
def test_bad_input(cli, args, needles):
    one_line_error(cli(*args), *needles)


GOOD = (ROOT / "model_specs" / "llama2-7b.yaml").read_text()


@pytest.mark.parametrize(
    "text,needles",
    [
        ("name: x\n  bad: [\n", ["malformed YAML", "line"]),
        ("", ["empty"]),
        ("- a\n- b\n", ["top level"]),
        (GOOD.replace("head_dim: 128", "head_dim: -128"), ["head_dim", "line"]),
        (GOOD.replace("num_key_value_heads: 32", "num_key_value_heads: 5"), ["multiple of"]),
        (GOOD.replace("params_total: 6738415616", "params_total: lots"), ["params_total"]),
        (GOOD.replace("\nhidden_size: 4096\n", "\n"), ["hidden_size", "missing"]),
        (GOOD.replace("kind: full", "kind: fancy"), ["kind"]),
        (GOOD + "surprise: 1\n", ["surprise", "unknown field"]),
        ("a: &x [1]\nb: *x\n", ["aliases"]),
    ],
)
def test_bad_spec_files(cli, tmp_path, text, needles):
    p = tmp_path / "spec.yaml"
    p.write_text(text)
    r = cli("size", "--model", p, "--seq", "4k")
    one_line_error(r, str(p), *needles)


def test_bad_config_json(cli, tmp_path):
    p = tmp_path / "config.json"
    p.write_text('{"model_type": "llama",\n "hidden_size": 4096,,}')
    one_line_error(cli("size", "--model", p, "--seq", "4k"), "malformed JSON", "line 2")
    cfg = json.loads((ROOT / "tests/configs/llama2-7b.json").read_text())
    p.write_text(json.dumps({**cfg, "hidden_size": "big"}))
    one_line_error(cli("size", "--model", p, "--seq", "4k"), "hidden_size")


def test_a_spec_with_rope_caches_out_of_range_is_refused(cli, tmp_path):
    spec = cli("import", ROOT / "tests/configs/gemma3-4b.json", "--name", "g4").out
    assert "rope_caches: [1.0, 8.0]" in spec
    p = tmp_path / "g4.yaml"
    for bad in ("[0]", "[2000]", "[1, true]"):
        p.write_text(spec.replace("rope_caches: [1.0, 8.0]", f"rope_caches: {bad}"))
        one_line_error(cli("size", "--model", p, "--seq", "4k"), str(p), "rope_caches")
    # A config whose linear rope scaling has no usable factor: one line naming the field.
    cfg = json.loads((ROOT / "tests/configs/gemma3-4b.json").read_text())
    cfg["text_config"]["rope_scaling"]["factor"] = "big"
    c = tmp_path / "config.json"
    c.write_text(json.dumps(cfg))
    one_line_error(cli("size", "--model", c, "--seq", "4k"), "rope_scaling.factor 'big'", "e.g. 8.0")


def test_a_config_with_a_partial_rotary_factor_out_of_range_is_one_line(cli, tmp_path):
    cfg = json.loads((ROOT / "tests/configs/qwen3-next-80b-a3b.json").read_text())
    c = tmp_path / "config.json"
    for bad in (0, 1.5, "big", True):
        c.write_text(json.dumps({**cfg, "partial_rotary_factor": bad}))
        one_line_error(cli("size", "--model", c, "--seq", "4k"), "partial_rotary_factor", "(0, 1]")
    # In rope_parameters (transformers 5's place for it), named there.
    c.write_text(json.dumps({**cfg, "partial_rotary_factor": None, "rope_parameters": {"partial_rotary_factor": -1}}))
    one_line_error(cli("size", "--model", c, "--seq", "4k"), "rope_parameters.partial_rotary_factor '-1'", "e.g. 0.5")
    # MiniMax-M2's rotary_dim wider than its heads: named the same way.
    mm = json.loads((ROOT / "tests/configs/minimax-m2.json").read_text())
    c.write_text(json.dumps({**mm, "rotary_dim": 256}))
    one_line_error(cli("size", "--model", c, "--seq", "4k"), "rotary_dim over head_dim, '2.0'", "(0, 1]")
    # A spec file with one out of range: the file and the field.
    spec = cli("import", ROOT / "tests/configs/phi-2.json", "--name", "p2").out
    assert "partial_rotary_factor: 0.4" in spec
    p = tmp_path / "p2.yaml"
    p.write_text(spec.replace("partial_rotary_factor: 0.4", "partial_rotary_factor: 2"))
    one_line_error(cli("size", "--model", p, "--seq", "4k"), str(p), "partial_rotary_factor")


def test_a_phi_config_with_an_unreadable_n_inner_is_one_line(cli, tmp_path):
    cfg = json.loads((ROOT / "tests/configs/phi-2.json").read_text())
    p = tmp_path / "config.json"
    p.write_text(json.dumps({**cfg, "n_inner": "big"}))
    one_line_error(cli("import", p), "field 'n_inner' is 'big'", "a positive integer")


def test_commands_that_do_not_measure_import_neither_torch_nor_numpy(tmp_path):
    code = (
        "import sys; from kvcalc.cli.app import main\n"
        "for a in (['size','--model','llama2-7b','--seq','4096'], ['fit','--model','llama2-7b','--gpu','a100','--seq','4k'],"
        " ['size','--model','gemma3-27b','--seq','4096','--json']):\n"
        "    assert main(a) == 0\n"
        "bad = [m for m in ('torch', 'numpy', 'matplotlib') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert r.returncode == 0, r.stderr


def test_one_request_is_singular(cli):
    # Llama-3.1-8B on an L4 at 24k tokens holds one request: "1 request", not "1 requests".
    d = cli("fit", "--model", "llama3.1-8b", "--gpu", "l4", "--seq", "24k", "--json").json()
    assert d["max_concurrency"] == 1
    out = cli("fit", "--model", "llama3.1-8b", "--gpu", "l4", "--seq", "24k").out
    assert "1 request" in out and " 1 requests" not in out
    s = cli("simulate", "--model", "llama2-7b", "-n", "1", "--policies", "paged-16").out
    assert "1 request," in s


def _kvcalc():
    """The installed kvcalc command, beside this Python (the test extra installs it)."""
    import shutil
    import sys
    from pathlib import Path

    exe = shutil.which("kvcalc", path=str(Path(sys.executable).parent)) or shutil.which("kvcalc")
    assert exe, "kvcalc is not installed"
    return exe


def test_output_claims_of_docs_security_md():
    # docs/security.md, "Output", claim by claim, through the installed command.
    import os
    import subprocess

    exe = _kvcalc()
    # A reader gone away: exit 0, nothing on stderr.
    p = subprocess.Popen([exe, "models"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait() == 0 and err == b""
    # The same when the reader leaves in the middle of more than a pipe holds (a 16 MB JSON grid, 64
    # KiB a pipe): click itself would exit 1 for it.
    p = subprocess.Popen(
        [exe, "roofline", "--batch", "1..1000:1", "--seq", "1k..20k:1k", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(100_000)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait() == 0 and err == b""
    # Standard output closed from the start: exit 0.
    r = subprocess.run(f"{exe} tiers >&-", shell=True, capture_output=True, timeout=60)
    assert r.returncode == 0 and b"Traceback" not in r.stderr
    # A full disk: one line, exit 2.
    if os.path.exists("/dev/full"):
        # (the grid: over 20,000 rows, which two processes write, the first a forked child)
        for args in ("models", "models --json", "roofline --batch 1..1000:1 --seq 1k..25k:1k --json"):
            r = subprocess.run(f"{exe} {args} > /dev/full", shell=True, capture_output=True, timeout=60)
            lines = r.stderr.decode().strip().splitlines()
            assert r.returncode == 2 and len(lines) == 1
            assert lines[0].startswith("kvcalc: error: cannot write the output") and "standard output" in lines[0]


def test_measure_on_a_machine_without_a_gpu(cli):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    one_line_error(cli("measure", "--device", "cuda", "--batch", "1", "--seq", "128"), "no CUDA device", "--device")


def test_integers_of_thousands_of_digits_are_one_line(cli, tmp_path):
    # Python reads no integer of over 4,300 digits; a spec, a config or a trace holding one is one line.
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    big = "9" * 5000
    spec = tmp_path / "i5000.yaml"
    text = (root / "model_specs" / "llama2-7b.yaml").read_text()
    spec.write_text("\n".join(f"hidden_size: {big}" if ln.startswith("hidden_size:") else ln for ln in text.splitlines()))
    one_line_error(cli("show", str(spec)), "thousands of digits", "i5000.yaml")
    cfg = tmp_path / "config.json"
    cfg.write_text(
        (root / "tests" / "configs" / "llama3.1-8b.json").read_text().replace('"hidden_size": 4096', f'"hidden_size": {big}')
    )
    one_line_error(cli("size", "--model", str(cfg), "--seq", "4k"), "thousands of digits")
    trace = tmp_path / "t.jsonl"
    trace.write_text(f'{{"prompt_tokens": {big}, "output_tokens": 5}}\n')
    one_line_error(cli("simulate", "--trace", str(trace)), "t.jsonl, line 1")


def test_a_gpu_spec_no_accelerator_has_is_refused(cli, tmp_path):
    # FLOP/s of 1e-320 made every time infinite and the plot convert NaN; such a figure is a typo.
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "gpu_specs" / "h100-sxm.yaml").read_text()
    lines = []
    for ln in text.splitlines():
        if ln.startswith("flops_bf16:"):
            ln = "flops_bf16: 1e-320"
        elif ln.startswith(("name:", "aliases:")):
            ln = "name: tiny" if ln.startswith("name:") else "aliases: []"
        lines.append(ln)
    f = tmp_path / "tiny.yaml"
    f.write_text("\n".join(lines))
    one_line_error(cli("roofline", "--model", "llama2-7b", "--gpu", str(f), "--plot"), "flops_bf16 is 1e-320", "tiny.yaml")


@pytest.mark.parametrize(
    "block, old, new, words",
    [
        ("gemm", "  latency_us: 3.4", '  latency_us: "fast"', "latency_us"),
        ("gemm", "  latency_us: 3.4", "  latency_us: -1", "latency_us must be microseconds from 0 to 1,000"),
        ("gemm", "  bandwidth_share: 0.86", "  bandwidth_share: 1.5", "bandwidth_share must be a fraction from 0.01 to 1"),
        ("gemm", "  bandwidth_share: 0.86", "  bandwidth_share: .nan", "bandwidth_share must be a fraction from 0.01 to 1"),
        ("gemm", "  bandwidth_share: 0.86", "  bandwidth_share: 0.86\n  extra: 1", "unknown field"),
        # pydantic's lax mode would read true as 1 (us): a boolean is refused where a number belongs.
        ("gemm", "  latency_us: 3.4", "  latency_us: true", "a boolean where a number belongs"),
        ("gemm", "  bandwidth_share: 0.86", "  bandwidth_share: false", "a boolean where a number belongs"),
        # The compute share, its precision and how the two terms combine (GemmSpec; MI300X's block has them).
        ("gemm", "  bandwidth_share: 0.86", "  bandwidth_share: 0.86\n  compute_share: 1.5", "compute_share must be a fraction"),
        ("gemm", "  bandwidth_share: 0.86", "  bandwidth_share: 0.86\n  compute_share: true", "a boolean where a number belongs"),
        (
            "gemm",
            "  bandwidth_share: 0.86",
            "  bandwidth_share: 0.86\n  compute_dtype: fp16",
            "Input should be 'bf16', 'fp8' or 'fp4'",
        ),
        ("gemm", "  bandwidth_share: 0.86", "  bandwidth_share: 0.86\n  combine: max", "Input should be 'rss' or 'sum'"),
        ("attention", "  request_head_ns: 24.5", '  request_head_ns: "slow"', "request_head_ns"),
        (
            "attention",
            "  request_head_ns: 24.5",
            "  request_head_ns: -1",
            "request_head_ns must be nanoseconds from 0 to 100,000",
        ),
        (
            "attention",
            "  request_head_ns: 24.5",
            "  request_head_ns: .nan",
            "request_head_ns must be nanoseconds from 0 to 100,000",
        ),
        ("attention", "  request_head_ns: 24.5", "  request_head_ns: 24.5\n  extra: 1", "unknown field"),
        ("attention", "  request_head_ns: 24.5", "  request_head_ns: true", "a boolean where a number belongs"),
        ("attention", "  request_head_ns: 24.5", "", "request_head_ns"),
    ],
)
def test_a_gpu_specs_measured_blocks_refuse_typos(cli, tmp_path, block, old, new, words):
    # The H100 spec's measured matmul (gemm) and decode-attention (attention) blocks, each mistyped.
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "gpu_specs" / "h100-sxm.yaml").read_text()
    assert old in text
    text = text.replace("name: h100-sxm", "name: tiny").replace(old, new)
    text = "\n".join("aliases: []" if ln.startswith("aliases:") else ln for ln in text.splitlines())
    f = tmp_path / "tiny.yaml"
    f.write_text(text)
    one_line_error(cli("roofline", "--model", "llama2-7b", "--gpu", str(f)), words, "tiny.yaml, line", f"field {block}")


@pytest.mark.parametrize(
    "kind, base, old, new, field",
    [
        ("gpu", "h100-sxm", "memory_smi_mib:", "memory_smi_mib: true", "memory_smi_mib"),
        (
            "gpu",
            "h100-sxm",
            "memory_bandwidth_bytes_per_s:",
            "memory_bandwidth_bytes_per_s: true",
            "memory_bandwidth_bytes_per_s",
        ),
        ("model", "llama3-8b", "    head_dim: 128", "    head_dim: true", "layer_kinds.attn.head_dim"),
        ("model", "llama3-8b", "- repeat: 32", "- repeat: yes", "layers.0.repeat"),
        ("model", "llama3-8b", "hidden_size: 4096", "hidden_size: on", "hidden_size"),
        # An optional constrained number (Pos | None) too: pydantic sees Annotated[int, ...] inside the union.
        ("model", "gemma3-4b", "vision_config_layers:", "vision_config_layers: true", "vision_config_layers"),
    ],
)
def test_a_boolean_in_a_numeric_spec_field_is_refused(cli, tmp_path, kind, base, old, new, field):
    # YAML's true / yes / on are booleans; pydantic's lax mode reads them as 1. Each is refused in one
    # line naming the file, the line and the field, wherever the field sits (top level, a nested
    # block, a layer kind, a list item).
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / f"{kind}_specs" / f"{base}.yaml").read_text()
    lines, done = [], False
    for ln in text.splitlines():
        if ln.startswith(old) and not done:
            ln, done = new, True
        elif ln.startswith("name:"):
            ln = "name: tiny"
        elif ln.startswith("aliases:"):
            ln = "aliases: []"
        lines.append(ln)
    assert done, old
    f = tmp_path / "tiny.yaml"
    f.write_text("\n".join(lines))
    args = ("--model", "llama2-7b", "--gpu", str(f)) if kind == "gpu" else ("--model", str(f))
    line = next(i for i, ln in enumerate(lines, 1) if ln == new)
    one_line_error(cli("roofline", *args), "a boolean where a number belongs", f"tiny.yaml, line {line}, field {field}")


@pytest.mark.parametrize(
    "new, words, where",
    [
        ("multiprocessors: 0", "multiprocessors must be a whole number from 1 to 99,999, got 0", "tiny.yaml"),
        ("multiprocessors: 13.2", "a number with a fractional part (got 13.2)", "tiny.yaml, line 22, field multiprocessors"),
        (
            "multiprocessors: many",
            "unable to parse string as an integer (got 'many')",
            "tiny.yaml, line 22, field multiprocessors",
        ),
        ("multiprocessors: true", "a boolean where a number belongs", "tiny.yaml, line 22, field multiprocessors"),
    ],
)
def test_a_gpu_specs_multiprocessor_count_is_checked(cli, tmp_path, new, words, where):
    # The SM count sizes vLLM's Triton sampler buffer in fit's activation peak: a count that is not a
    # positive whole number is one line naming the file and the field.
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "gpu_specs" / "h100-sxm.yaml").read_text()
    old = next(ln for ln in text.splitlines() if ln.startswith("multiprocessors:"))
    text = text.replace("name: h100-sxm", "name: tiny").replace(old, new)
    text = "\n".join("aliases: []" if ln.startswith("aliases:") else ln for ln in text.splitlines())
    f = tmp_path / "tiny.yaml"
    f.write_text(text)
    one_line_error(cli("fit", "--model", "llama2-7b", "--gpu", str(f), "--seq", "4k"), words, where)


@pytest.mark.parametrize(
    "field, new, words",
    [
        ("flops_int8", "lots", "flops_int8: cannot read 'lots' as FLOP/s"),
        ("flops_int8", "-5TOPS", "flops_int8: cannot read '-5TOPS' as FLOP/s"),
        ("flops_int8", "1e30", "flops_int8 is 1e+30, outside 1 GFLOP/s to 10 EFLOP/s"),
        ("flops_fp8", "fastest", "flops_fp8: cannot read 'fastest' as FLOP/s"),
    ],
)
def test_a_gpu_specs_peak_that_cannot_be_read_is_named(cli, tmp_path, field, new, words):
    # A peak that is not a rate is one line naming the field (the error had said only "cannot read 'lots'").
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "gpu_specs" / "h100-sxm.yaml").read_text()
    old = next(ln for ln in text.splitlines() if ln.startswith(f"{field}:"))
    text = text.replace("name: h100-sxm", "name: tiny").replace(old, f"{field}: {new}")
    text = "\n".join("aliases: []" if ln.startswith("aliases:") else ln for ln in text.splitlines())
    f = tmp_path / "tiny.yaml"
    f.write_text(text)
    one_line_error(cli("roofline", "--model", "llama2-7b", "--gpu", str(f)), words, "tiny.yaml")


def test_shell_completion_is_installable_and_completes():
    # kvcalc --install-completion / --show-completion (typer's); the completion script answers with
    # kvcalc's own commands and options.
    import os
    import subprocess

    exe = _kvcalc()
    # Typer finds the shell among the command's parents (shellingham), as it does for a user typing
    # it at a prompt: a child of bash (not exec-ed by it), whatever runs the tests (no shell above them
    # when they are started in the background).
    r = subprocess.run(["bash", "-c", f'"{exe}" --show-completion; exit $?'], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "_kvcalc_completion" in r.stdout
    env = {**os.environ, "COMP_WORDS": "kvcalc ro", "COMP_CWORD": "1", "_KVCALC_COMPLETE": "complete_bash"}
    r = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60)
    assert "roofline" in r.stdout.split()
    env.update(COMP_WORDS="kvcalc roofline --ba", COMP_CWORD="2")
    r = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60)
    assert "--batch" in r.stdout.split()


def test_a_name_with_brackets_is_printed_as_it_is(cli, tmp_path):
    # rich reads "[red]" or "[x]" in a string as markup: a spec named so lost its brackets in every
    # header and table ("my[red]model[x]" printed "mymodel"). Each command's text must show the name whole.
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    model, gpu = "my[red]model[x]", "g[bold]pu[/]"
    m, g = tmp_path / "m.yaml", tmp_path / "g.yaml"
    m.write_text(
        "".join(
            f'name: "{model}"\n' if ln.startswith("name:") else ln
            for ln in (root / "model_specs" / "llama2-7b.yaml").read_text().splitlines(keepends=True)
        )
    )
    g.write_text(
        "".join(
            f'name: "{gpu}"\n' if ln.startswith("name:") else ln
            for ln in (root / "gpu_specs" / "h100-sxm.yaml").read_text().splitlines(keepends=True)
        )
    )
    runs = {
        "size": (("size", "--model", str(m), "--seq", "4k"), [model]),
        "fit": (("fit", "--model", str(m), "--gpu", str(g), "--seq", "4k"), [model, gpu]),
        "roofline": (("roofline", "--model", str(m), "--gpu", str(g), "--batch", "1"), [model, gpu]),
        "show": (("show", str(m)), [model]),
        "show gpu": (("show", str(g)), [gpu]),
        "plan": (("plan", "--model", str(m), "--gpus", f"{g},h200", "--rate", "5"), [model, gpu]),
        "simulate": (("simulate", "--model", str(m), "--gpu", str(g), "--requests", "50"), [model, gpu]),
        "paging": (("paging", "--model", str(m), "--gpu", str(g), "--lengths", "uniform:100..2000"), [model, gpu]),
        "tiers": (("tiers", "--model", str(m), "--gpu", str(g)), [model, gpu]),
    }
    for what, (args, names) in runs.items():
        r = cli(*args)
        assert r.code == 0, (what, r.err)
        for name in names:
            assert name in r.out, (what, name)
        assert "\\[" not in r.out, what  # escaped, not printed with its backslash


def test_library_errors_name_no_command_line_flag():
    # Issue 20: the library's errors say what was wrong in the library's own terms (its argument
    # names); the CLI maps the place to its flag. A `--flag` written into an engine or spec error is
    # a CLI word leaking into the API (the parallel-size flags of vLLM/SGLang deployments, which are
    # the engines' own, are not kvcalc's; nor is `kvcalc measure --json`, a command to run).
    import ast
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "kvcalc"
    engines_own = {
        "--enable-expert-parallel",
        "--ep-size",
        "--data-parallel-size",
        "--enable-dp-attention",
        "--scheduler-recv-interval",
        "--schedule-conservativeness",  # (SGLang's own, as its --scheduler-recv-interval)
    }
    leaks = []
    for p in [*(root / "engine").rglob("*.py"), *(root / "specs").rglob("*.py")]:
        text = p.read_text()
        for n in ast.walk(ast.parse(text)):
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "KvcalcError":
                seg = ast.get_source_segment(text, n) or ""
                flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", seg)) - engines_own
                if flags and "measure --json" not in seg:
                    leaks.append(f"{p.relative_to(root)}:{n.lineno} {sorted(flags)}")
    assert not leaks, leaks


def test_an_option_or_a_flag_pair_given_twice_is_one_line_exit_2(cli):
    # click keeps the last of a repeated option silently; kvcalc refuses it (app.refuse_repeats), and a
    # flag pair's two spellings are one option.
    r = cli("fit", "--model", "llama3.1-8b", "--tp", "2", "--tp", "4", "--seq", "4k")
    assert r.code == 2 and "option --tp given more than once (also as --tp)" in r.err and len(r.err.strip().splitlines()) == 1
    r = cli("simulate", "--engine", "vllm@0.6", "--chunked-prefill", "--no-chunked-prefill", "--requests", "10")
    assert r.code == 2 and "option --no-chunked-prefill given more than once (also as --chunked-prefill)" in r.err


def test_a_vision_config_figure_must_be_positive(cli, tmp_path):
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "model_specs" / "gemma3-4b.yaml").read_text()
    assert "vision_config_hidden: 1152" in text
    text = text.replace("vision_config_hidden: 1152", "vision_config_hidden: 0").replace("name: gemma3-4b", "name: tiny")
    text = "\n".join("aliases: []" if ln.startswith("aliases:") else ln for ln in text.splitlines())
    f = tmp_path / "tiny.yaml"
    f.write_text(text)
    one_line_error(
        cli("fit", "--model", str(f), "--seq", "4k", "--engine", "sglang"), "greater than 0", "field vision_config_hidden"
    )


def test_a_built_in_default_is_named_once(cli, tmp_path, monkeypatch):
    # With no flag, environment variable or kvcalc.toml the model and GPU are kvcalc's own defaults, said so once
    # (until 2026-12-07 "gpu: h100-sxm (default; from built-in default)"); a file's default still names the file.
    monkeypatch.chdir(tmp_path)
    both = "model: llama3.1-8b (kvcalc's built-in default); gpu: h100-sxm (kvcalc's built-in default)"
    for ask in (("fit", "--seq", "1k"), ("roofline", "--batch", "1", "--seq", "1k")):
        out = " ".join(cli(*ask).out.split())
        assert both in out and "from built-in default" not in out, ask
    (tmp_path / "kvcalc.toml").write_text('gpu = "h200"\n')
    for ask in (("fit", "--seq", "1k"), ("roofline", "--batch", "1", "--seq", "1k")):
        out = " ".join(cli(*ask).out.split())
        assert "gpu: h200 (default; from " in out and "kvcalc.toml)" in out, ask
