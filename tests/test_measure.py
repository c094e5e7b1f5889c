"""kvcalc measure: every kernel against a float64 reference on the shapes that break kernels,
the Triton kernel under TRITON_INTERPRET=1, and the CPU measurement end to end."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kvcalc.errors import KvcalcError  # noqa: E402
from kvcalc.measure.cache import Geometry, build, reference, rel_error, step_bytes, step_flops  # noqa: E402
from kvcalc.measure.kernels import cpu_paged, dense_sdpa, gather_sdpa  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "length 1": (Geometry("gqa", 8, 2, 64, 0, 64, 16), [1]),
    "not a multiple of the block": (Geometry("gqa", 8, 2, 64, 0, 64, 16), [17, 33, 15]),
    "mixed lengths": (Geometry("gqa", 8, 8, 32, 0, 32, 16), [1, 100, 16, 47]),
    "GQA group 1 (MHA)": (Geometry("gqa", 4, 4, 64, 0, 64, 16), [40, 9]),
    "GQA group 4": (Geometry("gqa", 16, 4, 64, 0, 64, 8), [70, 2]),
    "GQA group 8": (Geometry("gqa", 32, 4, 64, 0, 64, 16), [55]),
    "head_dim not a power of two": (Geometry("gqa", 8, 1, 80, 0, 80, 16), [33]),
    "MLA latent + rope": (Geometry("mla", 16, 1, 64, 16, 64, 16), [50, 7]),
    "block of 48 tokens": (Geometry("gqa", 8, 2, 64, 0, 64, 48), [1, 100, 47]),
    "block of 128 tokens": (Geometry("gqa", 8, 2, 64, 0, 64, 128), [300, 5]),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("kernel", [cpu_paged, dense_sdpa, gather_sdpa], ids=["cpu-paged", "sdpa-dense", "gather-sdpa"])
def test_torch_kernels_match_the_reference(name, kernel):
    geo, lens = CASES[name]
    c = build(geo, lens, torch.float32, "cpu", seed=3)
    assert rel_error(kernel(c)(), reference(c)) <= 1e-5


def test_reference_is_attention():
    """The reference itself, against softmax(q k^T / sqrt(d)) v written out for one sequence and head."""
    geo, lens = CASES["GQA group 4"]
    c = build(geo, lens, torch.float64, "cpu", seed=5)
    ref = reference(c)
    b, h = 1, 6  # query head 6 belongs to KV head 6 // 4 = 1
    n = lens[b]
    pages = c.block_table[b, : -(-n // geo.block_size)].long()
    k = c.k_pool[1, pages].reshape(-1, geo.d_k)[:n]
    v = c.v_pool[1, pages].reshape(-1, geo.dv)[:n]
    s = (k @ c.q[b, h]) / geo.d_k**0.5
    w = torch.exp(s - s.max())
    assert torch.allclose(ref[b, h], (w / w.sum()) @ v, rtol=1e-12, atol=1e-12)


def test_pages_are_shuffled_and_never_zero():
    geo, lens = CASES["mixed lengths"]
    c = build(geo, lens, torch.float32, "cpu")
    used = torch.cat([c.block_table[b, : -(-n // 16)] for b, n in enumerate(lens)])
    assert sorted(used.tolist()) == list(range(len(used))) and used.tolist() != sorted(used.tolist())
    assert (c.k_pool != 0).float().mean() > 0.99


def test_step_bytes_and_flops():
    geo = Geometry("gqa", 32, 8, 128, 0, 128, 16)
    lens = [100, 28]
    assert step_bytes(geo, lens, 2) == 2 * 128 * 8 * 128 * 2 + 2 * 32 * (128 + 128) * 2
    assert step_flops(geo, lens) == 2 * 128 * 32 * (128 + 128)
    mla = Geometry("mla", 128, 1, 512, 64, 512, 64)
    assert step_bytes(mla, [10], 2) == 10 * 576 * 2 + 128 * (576 + 512) * 2


TRITON_SCRIPT = r"""
import json, torch
from kvcalc.measure.cache import Geometry, build, reference, rel_error
from kvcalc.measure.kernels import triton_paged
cases = json.loads(CASES)
out = {}
for name, (g, lens, splits) in cases.items():
    geo = Geometry(*g)
    c = build(geo, lens, torch.float32, "cpu", seed=11)
    res = triton_paged(c, splits=splits)()
    out[name] = rel_error(res, reference(c))
print(json.dumps(out))
"""


@pytest.mark.slow
def test_triton_kernel_under_the_interpreter():
    pytest.importorskip("triton")
    cases = {name: ([*g.__dict__.values()], lens, None) for name, (g, lens) in CASES.items()}
    # Splits that cover only padding: more splits than a sequence has blocks, so some are empty.
    cases["splits over padding"] = (["gqa", 8, 2, 64, 0, 64, 16], [1, 40], 8)
    cases["MLA split"] = (["mla", 16, 1, 64, 16, 64, 16], [9, 60], 4)
    # A latent wider than one merge program's 128 output dims: the merge runs in slices.
    cases["MLA wide latent, merged in slices"] = (["mla", 4, 1, 320, 16, 320, 16], [9, 40], 3)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT), "CASES": json.dumps(cases)}
    script = "import os; CASES = os.environ['CASES']\n" + TRITON_SCRIPT
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    errors = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(errors) == set(cases)
    bad = {k: v for k, v in errors.items() if not v <= 1e-5}
    assert not bad, bad


@pytest.mark.slow
def test_measure_on_cpu_end_to_end():
    from kvcalc.measure.run import measure
    from kvcalc.specs.catalog import resolve_model

    m = resolve_model("llama3.1-8b")
    geo = Geometry("gqa", 32, 8, 128, 0, 128, 16)
    r = measure(geo, [64, 100], device="cpu", dtype_name="float32", model=m, runs=3)
    assert r.kernel == "cpu-paged" and r.rel_error <= 1e-5 and "CPU" in r.label
    # The engine's KV bytes (from the layer kind) equal the measured step's KV bytes.
    assert r.kv_bytes == (64 + 100) * 2 * 8 * 128 * 4 == r.bytes - 2 * 32 * 256 * 4
    assert r.t_measured_s > 0 and r.measured_over_bound == pytest.approx(r.t_measured_s / r.t_bound_s)
    assert all(k.correct and k.t_measured_s for k in r.kernels)


@pytest.mark.slow
def test_measuring_a_sparse_attention_model_says_it_times_a_dense_decode():
    from kvcalc.measure.cache import geometry_from_model
    from kvcalc.measure.run import measure
    from kvcalc.specs.catalog import resolve_model

    m = resolve_model("deepseek-v3.2")
    r = measure(geometry_from_model(m, 16), [64, 30], device="cpu", dtype_name="float32", model=m, runs=3)
    assert any("attends sparsely (an indexer's top-2,048)" in n for n in r.notes)
    dense = resolve_model("deepseek-v3")
    r = measure(geometry_from_model(dense, 16), [64, 30], device="cpu", dtype_name="float32", model=dense, runs=3)
    assert not any("sparsely" in n for n in r.notes)


def test_a_wrong_kernel_is_reported_and_not_timed(monkeypatch):
    from kvcalc.measure import run

    real = run._kernel

    def broken(name, cache, sms):
        step = real(name, cache, sms)
        return (lambda: step() * 1.01) if name == "sdpa-dense" else step

    monkeypatch.setattr(run, "_kernel", broken)
    geo = Geometry("gqa", 8, 2, 64, 0, 64, 16)
    r = run.measure(geo, [20], device="cpu", dtype_name="float32", runs=3)
    k = {x.kernel: x for x in r.kernels}
    assert not k["sdpa-dense"].correct and k["sdpa-dense"].t_measured_s is None and "not timed" in k["sdpa-dense"].note
    assert k["cpu-paged"].correct and k["cpu-paged"].t_measured_s


def test_refuses_what_does_not_fit(monkeypatch):
    from kvcalc.measure import run

    monkeypatch.setattr(run, "_free_bytes", lambda device: 10**6)
    with pytest.raises(KvcalcError, match="needs"):
        run.measure(Geometry("gqa", 8, 2, 64, 0, 64, 16), [4096] * 8, device="cpu", dtype_name="float32")


def test_cli_measure_quick_json(cli, monkeypatch):
    r = cli("measure", "--model", "llama3.1-8b", "--quick", "--runs", "3", "--json")
    assert r.code == 0, r.err
    d = r.json()
    for k in (
        "t_measured_s",
        "t_bound_s",
        "measured_over_bound",
        "achieved_bytes_per_s",
        "read_ceiling_bytes_per_s",
        "rel_error",
        "device",
        "kernel",
    ):
        assert k in d
    assert d["kernel"] == "cpu-paged" and d["rel_error"] <= 1e-5
    # The text opens with its verdict (issue 20): the headline kernel against the bound of the step.
    import re

    monkeypatch.setenv("COLUMNS", "200")
    text = cli("measure", "--model", "llama3.1-8b", "--quick", "--runs", "3").out
    line = [x for x in text.splitlines() if not x.startswith(("model:", "gpu:"))][0]
    assert re.match(r"cpu-paged runs the decode attention in [\d.,]+ (us|ms), [\d.]+x its bound of [\d.,]+ (us|ms)", line), line


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--device", "cuda"], "CUDA"),
        (["--dtype", "fp8"], "--dtype"),
        (["--kernels", "magic"], "--kernels"),
        (["--device", "tpu"], "--device"),
    ],
)
def test_cli_measure_bad_input(cli, args, needle):
    if needle == "CUDA" and torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    r = cli("measure", "--quick", *args)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and needle in r.err, r.err


def test_roofline_measure_flag(cli, tmp_path):
    # The whole step on this device, not one attention layer: a small model keeps it quick on a CPU.
    p = tmp_path / "small.yaml"
    p.write_text(
        "name: small\nsource: {url: t}\nhidden_size: 512\nvocab_size: 2000\nintermediate_size: 1024\n"
        "max_position_embeddings: 4096\nparams_total: 20000000\n"
        "layer_kinds: {attn: {kind: full, num_attention_heads: 8, num_key_value_heads: 2, head_dim: 64}}\n"
        "layers: [{repeat: 6, pattern: [attn]}]\n"
    )
    d = cli("roofline", "-m", p, "-g", "h100", "--batch", "2", "--seq", "256", "--measure", "--json").json()
    m = d["measure"]
    assert m["kernel"] == "cpu-paged" and m["rel_error"] <= 1e-5
    assert m["full_step"]["layers"] == 6 and m["full_step"]["t_measured_s"] > 0


@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_triton_kernel_on_the_gpu():
    from kvcalc.measure.run import measure

    r = measure(Geometry("gqa", 32, 8, 128, 0, 128, 16), [4096] * 8, device="cuda", dtype_name="bfloat16", runs=20)
    assert r.kernel == "triton-paged" and r.rel_error <= 1e-2


def test_layers_and_weights_are_measured_not_multiplied():
    from kvcalc.measure.run import measure, weight_shapes
    from kvcalc.specs.loader import validate

    m = validate(
        "model",
        {
            "name": "tiny",
            "source": {"url": "t"},
            "hidden_size": 256,
            "vocab_size": 1000,
            "intermediate_size": 512,
            "max_position_embeddings": 4096,
            "params_total": 10**7,
            "layer_kinds": {"attn": {"kind": "full", "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64}},
            "layers": [{"repeat": 4, "pattern": ["attn"]}],
        },
        "t",
        None,
    )
    # One layer's matrices: q (256 x 256), k+v (256 x 2 x 2 x 64), o (256 x 256), gate+up (256 x 1024), down (512 x 256).
    assert weight_shapes(m) == [(256, 256), (256, 256), (256, 256), (256, 1024), (512, 256)]
    geo = Geometry("gqa", 4, 2, 64, 0, 64, 16)
    r = measure(geo, [64, 30], device="cpu", dtype_name="float32", layers=3, model=m, runs=3, weights=True)
    assert r.layers == 3 and r.caches == 3
    assert r.bytes == 3 * step_bytes(geo, [64, 30], 4)
    w = r.weights
    assert w["weight_bytes"] == 3 * 4 * (3 * 256 * 256 + 256 * 1024 + 512 * 256)
    assert w["t_measured_s"] > 0 and w["measured_over_bound"] == pytest.approx(w["t_measured_s"] / w["t_bound_s"])


# Kernel variants the catalog's models need (head dim, group, page size, dtype, cache dtype).
STATIC = {
    "llama 128 x group 4, bf16": (128, 0, 128, 4, 16, "bfloat16", None),
    "llama 128 x group 8, 128-token pages": (128, 0, 128, 8, 128, "bfloat16", None),
    "qwen3 128 x group 16": (128, 0, 128, 16, 16, "bfloat16", None),
    "MHA 64 x group 1": (64, 0, 64, 1, 16, "bfloat16", None),
    "gemma 256 x group 2": (256, 0, 256, 2, 16, "bfloat16", None),
    "80 x group 4, fp16": (80, 0, 80, 4, 16, "float16", None),
    "fp8 KV, 128 x group 8": (128, 0, 128, 8, 16, "bfloat16", "fp8"),
    "MLA 512 + 64, 64-token pages": (512, 64, 512, 128, 64, "bfloat16", None),
    "MLA 512 + 64, 128-token pages": (512, 64, 512, 128, 128, "bfloat16", None),
    "MLA fp8": (512, 64, 512, 128, 64, "bfloat16", "fp8"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(STATIC))
def test_kernel_compiles_for_sm90_within_its_resources(name, capsys):
    """Compiled for sm_90a here (no GPU needed): at most 227 KB of shared memory, no register
    spills in the partial kernel or the merge, and 64-bit offsets into the pools (a pool of more than 2^31 elements, 4 GiB of bf16,
    would wrap in 32 bits)."""
    pytest.importorskip("triton")
    from kvcalc.measure.triton_paged import SHARED_LIMIT, static_check

    r = static_check(*STATIC[name])
    with capsys.disabled():
        print(f"\n{name}: {r}")
    assert r["ptxas_ok"], r
    assert r["shared_bytes"] <= SHARED_LIMIT
    assert r["spill_bytes"] == 0
    assert r["merge_spill_bytes"] == 0  # the MLA merge spilled 508-640 B before it was split by output dims
    assert r["i64_pool_offsets"]


FP8_CASES = {
    "GQA group 4, fp8": (Geometry("gqa", 16, 4, 64, 0, 64, 16), [70, 2, 33]),
    "MLA, fp8": (Geometry("mla", 16, 1, 64, 16, 64, 16), [50, 7]),
}


@pytest.mark.parametrize("name", list(FP8_CASES))
@pytest.mark.parametrize("kernel", [cpu_paged, dense_sdpa, gather_sdpa], ids=["cpu-paged", "sdpa-dense", "gather-sdpa"])
def test_fp8_cache_against_its_dequantized_reference(name, kernel):
    geo, lens = FP8_CASES[name]
    c = build(geo, lens, torch.float32, "cpu", seed=3, kv_fp8=True)
    assert c.k_pool.dtype == torch.float8_e4m3fn and c.k_pool.element_size() == 1
    # The scale maps the largest magnitude to e4m3's largest finite value, 448.
    assert float(c.k_pool.float().abs().max()) == 448.0
    assert rel_error(kernel(c)(), reference(c)) <= 1e-5
    # Quantization itself moves the answer by a few percent against the unquantized cache.
    full = build(geo, lens, torch.float32, "cpu", seed=3)
    assert 1e-3 < rel_error(reference(c), reference(full)) < 0.1


@pytest.mark.slow
def test_triton_fp8_and_long_pages_under_the_interpreter():
    pytest.importorskip("triton")
    script = r"""
import json, torch
from kvcalc.measure.cache import Geometry, build, reference, rel_error
from kvcalc.measure.kernels import triton_paged
out = {}
for name, g, lens, fp8 in [
    ("gqa fp8", ("gqa", 16, 4, 64, 0, 64, 16), [70, 2, 33], True),
    ("mla fp8", ("mla", 16, 1, 64, 16, 64, 16), [50, 7], True),
    ("tokens per tile under a 128-token page", ("gqa", 8, 2, 64, 0, 64, 128), [300, 5], False),
    ("MLA 512 + 64", ("mla", 32, 1, 512, 64, 512, 64), [70, 3], False),
]:
    c = build(Geometry(*g), lens, torch.float32, "cpu", seed=11, kv_fp8=fp8)
    out[name] = rel_error(triton_paged(c)(), reference(c))
print(json.dumps(out))
"""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    errors = json.loads(r.stdout.strip().splitlines()[-1])
    assert all(v <= 1e-5 for v in errors.values()), errors


def test_memory_check_counts_baselines_ceilings_and_weights():
    # DeepSeek-V3's latent at batch 2 x 2,048, fp32: sdpa-dense builds a padded copy with all 128 query
    # heads, 2 x 2,048 x 128 x (576 + 512) x 4 B, twice (K and V repeated) = 4.56 GB alone.
    from kvcalc.measure.run import memory_needed

    geo = Geometry("mla", 128, 1, 512, 64, 512, 64)
    need = memory_needed(geo, [2048, 2048], 4, 4, 1, ["cpu-paged", "sdpa-dense", "gather-sdpa"], 256 * 2**20, "cpu")
    assert need >= 2 * 2048 * 128 * (576 + 512) * 4 * 2 + 2 * 256 * 2**20


def test_a_baseline_that_does_not_fit_is_left_out_not_the_kernel(monkeypatch):
    # The first GPU run (an H200, bench/measure_gpu.sh) refused DeepSeek-V3's latent at 64 x 4,096:
    # sdpa-dense's copy with all 128 query heads repeated needs 64 x 4,096 x 128 x (576 + 512) x 2 B x 2
    # = 146 GB, where the paged cache under test is 64 x 4,096 x 576 x 2 B = 0.3 GB. With the default
    # kernels, a baseline that does not fit is now left out and said; asked for by name, it still refuses.
    from kvcalc.errors import KvcalcError
    from kvcalc.measure import run

    geo = Geometry("mla", 128, 1, 512, 64, 512, 64)
    assert 64 * 4096 * 128 * (576 + 512) * 2 * 2 == 146_028_888_064
    lens = [64, 64]
    every = run.memory_needed(geo, lens, 4, 4, 1, ["cpu-paged", "sdpa-dense", "gather-sdpa"], 256 * 2**20, "cpu")
    fewer = run.memory_needed(geo, lens, 4, 4, 1, ["cpu-paged", "gather-sdpa"], 256 * 2**20, "cpu")
    assert fewer < every
    free = int((fewer + every) / 2 / 0.9)  # room for all but sdpa-dense
    monkeypatch.setattr(run, "_free_bytes", lambda device: free)
    r = run.measure(geo, lens, device="cpu", dtype_name="float32", runs=2)
    assert [k.kernel for k in r.kernels] == ["cpu-paged", "gather-sdpa"]
    assert any(n.startswith(f"sdpa-dense left out: with it the measurement needs {every:,} B") for n in r.notes)
    assert r.memory_needed_bytes == fewer
    with pytest.raises(KvcalcError, match="the measurement needs"):
        run.measure(geo, lens, device="cpu", dtype_name="float32", runs=2, kernels=["cpu-paged", "sdpa-dense"])


def test_a_gpu_runs_table_keeps_every_figure_whole_at_80_columns(monkeypatch, capsys):
    # The first GPU run's table (DeepSeek-V3's latent on an H200, 80 columns, piped) cropped its last
    # column to "x boun" and 3,227.31 to "3227.3": graph-timed kernels are named "triton-paged (graph)",
    # and every column refused to wrap. The figures of that run, rendered here as a GPU result.
    import dataclasses

    from kvcalc.measure.run import measure
    from kvcalc.render.measure import render

    monkeypatch.setenv("COLUMNS", "80")
    r = measure(Geometry("mla", 128, 1, 512, 64, 512, 16), [64, 64], device="cpu", dtype_name="float32", runs=2)
    figures = {
        "cpu-paged": (1.8e-3, 906.7e-6, 352.7e9, 0.08, 0.07, 12.29),
        "gather-sdpa": (1.7e-3, 238.142e-3, 1.34e9, 0.0003, 0.0003, 3227.31),
        "sdpa-dense": (1.7e-3, 1.2e-3, 300.1e9, 0.07, 0.06, 16.25),
    }
    kernels = [
        dataclasses.replace(
            k,
            kernel="triton-paged" if k.kernel == "cpu-paged" else k.kernel,
            rel_error=e,
            t_measured_s=t,
            achieved_bytes_per_s=a,
            pct_read_ceiling=pr,
            pct_datasheet=ps,
            measured_over_bound=xb,
            cuda_graph=True,
        )
        for k in r.kernels
        for e, t, a, pr, ps, xb in [figures[k.kernel]]
    ]
    render(dataclasses.replace(r, kernels=kernels, device="cuda", device_name="NVIDIA H200"))
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    text = " ".join(out.replace("\u00a0", " ").split())
    assert "x bound" in text and "3,227.31" in text and "12.29" in text and "238.142 ms" in text
    for k in kernels:
        assert k.kernel in text


def test_a_kernel_that_fails_costs_its_row_only(monkeypatch):
    from kvcalc.measure import run

    real = run._kernel

    def broken(name, cache, sms):
        if name == "gather-sdpa":
            raise RuntimeError("0 active drivers")
        return real(name, cache, sms)

    monkeypatch.setattr(run, "_kernel", broken)
    r = run.measure(Geometry("gqa", 8, 2, 64, 0, 64, 16), [20], device="cpu", dtype_name="float32", runs=3)
    k = {x.kernel: x for x in r.kernels}
    assert "failed to build or run" in k["gather-sdpa"].note and k["gather-sdpa"].t_measured_s is None
    assert k["cpu-paged"].t_measured_s and k["sdpa-dense"].t_measured_s


def test_ceilings_are_measured_once_per_run():
    from kvcalc.measure import timing

    a = timing.ceilings("cpu", 2**20)
    b = timing.ceilings("cpu", 2**20)
    assert a is b


def test_triton_on_a_cpu_without_the_interpreter_is_one_line(cli, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    r = cli("measure", "--quick", "--kernels", "triton-paged")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and "TRITON_INTERPRET" in r.err


def test_full_step_on_a_tiny_model(cli, tmp_path):
    import yaml

    spec = {
        "name": "tiny",
        "source": {"url": "t"},
        "hidden_size": 256,
        "vocab_size": 1000,
        "intermediate_size": 512,
        "max_position_embeddings": 4096,
        "params_total": 10**7,
        "layer_kinds": {"attn": {"kind": "full", "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64}},
        "layers": [{"repeat": 4, "pattern": ["attn"]}],
    }
    p = tmp_path / "tiny.yaml"
    p.write_text(yaml.safe_dump(spec))
    d = cli("measure", "--model", p, "--batch", "2", "--seq", "256", "--runs", "3", "--full-step", "--json").json()
    f = d["full_step"]
    assert f["layers"] == f["layers_timed"] == 4 and not f["scaled"]
    # Weights read: 4 layers x (q, k+v, o, gate+up, down) + the head, fp32.
    assert f["weights"]["bytes"] == 4 * 4 * (256 * 256 + 256 * 256 + 256 * 256 + 256 * 1024 + 512 * 256) + 4 * 256 * 1000
    # KV read: 4 layers x 2 sequences x 256 tokens x 2 KV heads x (64 + 64) x 4 B, plus q and out.
    assert f["kv"]["bytes"] == 4 * (2 * 256 * 2 * 128 * 4 + 2 * 4 * 128 * 4)
    assert f["t_measured_s"] > 0 and f["measured_over_bound"] == pytest.approx(f["t_measured_s"] / f["t_bound_s"])


def test_free_memory_counts_what_the_kernel_gives_back():
    # MemAvailable (page cache included) in kB, not MemFree: a machine that has read many files keeps
    # little free memory but much available.
    from kvcalc.measure.device import available_from_meminfo

    text = "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   22000000 kB\n"
    assert available_from_meminfo(text) == 22_000_000 * 1024
    assert available_from_meminfo("MemTotal: 5 kB\n") is None


def test_measure_states_the_memory_it_needs(monkeypatch):
    """Issue 20: measure's report carries the bytes it allocates at its peak and the free memory it
    checked them against, so a caller can hold its own peak to them."""
    from kvcalc.measure import run

    geo = Geometry("gqa", 8, 2, 64, 0, 64, 16)
    r = run.measure(geo, [20], device="cpu", dtype_name="float32", runs=3)
    want = run.memory_needed(geo, [20], 4, 4, r.caches, [k.kernel for k in r.kernels], 256 * 2**20, "cpu")
    assert r.memory_needed_bytes == want > 0
    assert 0 < r.memory_needed_bytes <= 0.9 * r.memory_free_bytes


def test_the_first_gpu_runs_paragraph_is_its_data():
    # docs/measure.md, "The first GPU run": each table row and figure from the run's own JSON
    # (bench/data/h200-measure-2026-12-04.json, bench/measure_gpu.sh's summary on an H200).
    root = Path(__file__).resolve().parent.parent
    d = json.loads((root / "bench" / "data" / "h200-measure-2026-12-04.json").read_text())
    doc = (root / "docs" / "measure.md").read_text()
    flat = " ".join(doc.split())
    assert d["environment"]["device"] == "NVIDIA H200" and d["environment"]["triton"] == "3.6.0"
    assert all(s["ok"] for s in d["smoke"]) and len(d["smoke"]) == 4
    errs = sorted(s["rel_error"] for s in d["smoke"])
    assert (f"{errs[0]:.1e}", f"{errs[-1]:.1e}") == ("1.9e-03", "2.0e-03")
    first = d["rows"][0]
    assert round(first["read_ceiling_bytes_per_s"] / 1e12, 2) == 4.31
    assert round(first["read_ceiling_bytes_per_s"] / first["datasheet_bytes_per_s"], 2) == 0.90
    table = [line for line in doc.splitlines() if line.startswith("| ") and " us |" in line]
    triton = [(r, r["kernels"][0]) for r in d["rows"] if r["kernels"][0]["kernel"] == "triton-paged"]
    # The seven attention rows (the full step's attention row is the table's 64 x 2,048 kind, not quoted).
    rows = [x for x in triton if not x[0].get("full_step")]
    assert len(rows) == len(table) == 7
    for (r, k), line in zip(rows, table, strict=True):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[2] == f"{k['t_measured_s'] * 1e6:,.1f} us", line
        assert cells[3] == f"{k['pct_read_ceiling']:.0%}", line
        assert cells[4] == f"{k['measured_over_bound']:.2f}", line
        lo, hi = r["seq_lens"]["min"], r["seq_lens"]["max"]
        assert (f"{lo:,}" in cells[1]) and (f"{hi:,}" in cells[1]) and cells[1].startswith(f"{r['batch']} ")
    full = next(r for r in d["rows"] if r.get("full_step"))["full_step"]
    assert f"took {full['t_measured_s'] * 1e3:.2f} ms, {full['measured_over_bound']:.2f} times its bound" in flat
    mla = next(r for r in d["rows"] if r["geometry"]["kind"] == "mla")
    assert (
        f"({mla['t_bound_s'] * 1e6:.1f} us at the bf16 peak), about {round(mla['flops'] / mla['t_measured_s'] / 1e12, -1):.0f} TFLOP/s"
        in flat
    )
    assert "GQA reaches 83% at 262,144 tokens and 79% at 131,072" in flat and 32 * 8192 == 262_144 and 64 * 2048 == 131_072
    # The sdpa-dense copy the first run could not hold: 64 x 4,096 x 128 heads x (576 + 512) x 2 B, K and V.
    assert round(64 * 4096 * 128 * (576 + 512) * 2 * 2 / 1e9) == 146 and "needs 146 GB at 64 x 4,096" in flat
    assert round(64 * 4096 * 576 * 2 / 1e9, 1) == 0.3
