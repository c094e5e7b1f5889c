"""Decode and prefill bounds, with the arithmetic written out."""

import pytest

from conftest import make_model, one_line_error
from kvcalc.engine.roofline import Decode, decode_bound, decode_grid, prefill_bound
from kvcalc.engine.weights import expected_experts
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import BF16
from kvcalc.units import parse_count_list, parse_token_list

A100 = resolve_gpu("a100-80gb")
H100 = resolve_gpu("h100-sxm")


def seventy_b():
    """The article's 70B: L=80, GQA 8, d=128, fp16, weights taken as 2 B x 70e9 = 140 GB (tied, so
    every parameter is streamed)."""
    return make_model(
        {"attn": {"kind": "full", "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128}},
        [{"repeat": 80, "pattern": ["attn"]}],
        name="70b",
        hidden_size=8192,
        tie_word_embeddings=True,
        params_total=70 * 10**9,
        weight_dtype="fp16",
    )


def test_70b_worked_example():
    r = decode_bound(seventy_b(), H100, batch=32, seq=4096, kv_dtype="fp16")
    assert r.kv_bytes_read == 2 * 80 * 8 * 128 * 4096 * 32 * 2 == 42_949_672_960
    # Weights: 140 GB plus the 32 embedding rows the step looks up (32 x 8192 x 2 B).
    assert r.weight_bytes_read == 140 * 10**9 + 32 * 8192 * 2
    assert r.kv_share == pytest.approx(42.95 / 182.95, abs=5e-4)  # 23.5%, not 11%
    long = decode_bound(seventy_b(), H100, batch=32, seq=32768, kv_dtype="fp16")
    assert long.kv_bytes_read == 2 * 80 * 8 * 128 * 32768 * 32 * 2 == 343_597_383_680  # 343.6 GB, not 137
    # KV equals the weights at s = 140e9 / (2 x 80 x 8 x 128 x 32 x 2) = 13,351.4 tokens.
    assert r.kv_equals_weights_at_seq == (140 * 10**9 + 32 * 8192 * 2) // (2 * 80 * 8 * 128 * 32 * 2) == 13_351


def test_llama2_7b_on_a100_reads_kv_once_and_bandwidth_in_decimal():
    r = decode_bound(resolve_model("llama2-7b"), A100, batch=1, seq=4096, kv_dtype="fp16")
    streamed = (6_738_415_616 - 32000 * 4096) * 2  # everything but the input embedding table
    assert streamed == 13_214_687_232  # 13.2 GB
    assert r.weight_bytes_read == streamed + 4096 * 2  # plus the one embedding row looked up
    kv = 2 * 32 * 32 * 128 * 4096 * 2
    assert r.kv_bytes_read == kv  # once: llm-analysis counts it twice
    # 2.039 TB/s is 2.039e12 B/s (GenZ reads it as GiB/s, 7% off).
    assert r.t_memory_s == (streamed + 8192 + kv) / 2.039e12
    assert r.t_bound_s == pytest.approx(7.534e-3, abs=1e-6)
    assert r.bound_by == "memory"


def test_compute_term():
    m = resolve_model("llama2-7b")
    r = decode_bound(m, A100, batch=8, seq=1000)
    matmul = 2 * (6_738_415_616 - 32000 * 4096) * 8
    attention = 32 * 2 * 32 * (128 + 128) * 1000 * 8
    assert r.flops == matmul + attention
    assert r.t_compute_s == (matmul + attention) / 312e12


def test_moe_reads_the_experts_it_routes_to():
    assert expected_experts(256, 8, 1) == pytest.approx(8)
    assert expected_experts(256, 8, 10_000) == pytest.approx(256)
    m = resolve_model("deepseek-v3")  # 61 MLA layers, 58 MoE layers of 256 experts, top-8; fp8 128x128 blocks

    def fp8(n):  # 1 byte per weight and an fp32 scale per 128 x 128 block
        return n + -(-n // 16384) * 4

    per_expert = 3 * 7168 * 2048
    attn = 61 * (1536 * 128 * 192 + 512 * 128 * 256 + 128 * 128 * 7168)  # q_b, kv_b, o projections
    replicated = 61 * 7168 * (1536 + 512 + 64)  # q_a and kv_a down-projections, whole on every rank
    mlp, shared = 3 * 3 * 7168 * 18432, 58 * per_expert  # 3 dense layers; one shared expert per MoE layer
    router, norms = 58 * (7168 * 256 + 256), 61 * (1536 + 512 + 2 * 7168) + 7168
    # Read every step: the fp8 matrices, the bf16 LM head, routers and norms, one bf16 embedding row per token.
    dense = fp8(attn) + fp8(mlp) + fp8(shared) + fp8(replicated) + 2 * (129280 * 7168 + router + norms)
    expert = fp8(58 * 256 * per_expert) / (58 * 256)
    r1 = decode_bound(m, resolve_gpu("h200"), batch=1, seq=1)
    assert r1.weight_bytes_read == round(dense + 58 * 8 * expert + 7168 * 2)
    r64 = decode_bound(m, resolve_gpu("h200"), batch=64, seq=1)
    expected = dense + 58 * 256 * (1 - (1 - 8 / 256) ** 64) * expert + 64 * 7168 * 2
    assert r64.weight_bytes_read == round(expected)


def test_compute_bound_batch_is_the_boundary():
    m = resolve_model("llama3.1-8b")
    r = decode_bound(m, H100, batch=1, seq=128)
    b = r.compute_bound_at_batch
    assert b is not None
    at = decode_bound(m, H100, batch=b, seq=128)
    before = decode_bound(m, H100, batch=b - 1, seq=128)
    assert at.t_compute_s >= at.t_memory_s and before.t_compute_s < before.t_memory_s


def test_sliding_only_model_never_reaches_weights():
    r = decode_bound(resolve_model("mistral-7b-v0.1"), H100, batch=1, seq=4096)
    assert r.kv_equals_weights_at_seq is None


def test_grid_is_the_arithmetic():
    """The numpy grid of Llama-2-7B at tp 2 on an A100, against the formula written out."""
    m = resolve_model("llama2-7b")
    bs, ss = [1, 7, 64], [100, 4096, 32768]
    g = decode_grid(m, A100, bs, ss, kv_dtype="fp16", tp=2)
    norms = (32 * 2 + 1) * 4096  # whole on each rank
    streamed = (6_738_415_616 - 32000 * 4096 - norms) * 2  # fp16, no input embedding table
    for i, b in enumerate(bs):
        for j, s in enumerate(ss):
            w = (streamed + b * 4096 * 2) / 2 + norms * 2  # plus b embedding rows, split over 2 ranks
            kv = 2 * 32 * 16 * 128 * s * 2 * b  # 16 of the 32 KV heads per rank
            flops = 2 * (6_738_415_616 - 32000 * 4096) * b / 2 + 32 * 2 * 16 * (128 + 128) * s * b
            assert g["weight_bytes_read"][i, j] == pytest.approx(w, abs=1)
            assert g["kv_bytes_read"][i, j] == kv
            assert g["t_bound_s"][i, j] == pytest.approx(max((w + kv) / 2.039e12, flops / 312e12), rel=1e-12)


def test_allreduce_term():
    m = resolve_model("llama3.1-70b")
    payload, t = Decode(m, H100, BF16, 4).allreduce(32)
    assert payload == 2 * 80 * 32 * 8192 * 2
    assert t == payload * 2 * 3 / 4 / (900e9 / 2)


def test_prefill_bound():
    m = resolve_model("llama2-7b")
    p = prefill_bound(m, A100, 1024)
    matmul = 2 * (6_738_415_616 - 32000 * 4096) * 1024
    attention = 32 * 2 * 32 * (128 + 128) * (1024 * 1025 // 2)
    assert p.flops == matmul + attention
    assert p.t_bound_s == max((matmul + attention) / 312e12, p.weight_bytes_read / 2.039e12)
    assert p.bound_by == "compute"


def test_lists_and_ranges():
    assert parse_token_list("1k..128k") == [1024 * 2**i for i in range(8)]
    assert parse_token_list("1024..4096:1024") == [1024, 2048, 3072, 4096]
    assert parse_count_list("1,8,32,128") == [1, 8, 32, 128]
    assert parse_count_list("1..100") == [1, 2, 4, 8, 16, 32, 64, 100]


# ---- CLI -----------------------------------------------------------------------------------


def test_roofline_json(cli):
    d = cli(
        "roofline", "--model", "llama2-7b", "--gpu", "a100", "--batch", "1", "--seq", "4096", "--kv-dtype", "fp16", "--json"
    ).json()
    for k in (
        "t_memory_s",
        "t_compute_s",
        "t_bound_s",
        "bound_by",
        "weight_bytes_read",
        "kv_bytes_read",
        "kv_share",
        "tokens_per_s",
        "kv_equals_weights_at_seq",
    ):
        assert k in d
    assert d["bound_by"] == "memory" and d["kv_bytes_read"] == 2 * 32 * 32 * 128 * 4096 * 2


def test_roofline_grid_flags_what_does_not_fit(cli):
    d = cli("roofline", "-m", "llama3.1-70b", "-g", "h100", "--tp", "4", "--batch", "1,32", "--seq", "4k,128k", "--json").json()
    rows = d["rows"]
    assert len(rows) == 4
    big = [r for r in rows if r["batch"] == 32 and r["seq"] == 131072][0]
    assert big["fits_in_memory"] is False and big["max_batch_in_memory"] < 32


def test_roofline_defaults(cli, tmp_path, monkeypatch):
    r = cli("roofline", "--batch", "32", "--json")
    assert r.code == 0
    d = r.json()
    assert d["inputs"]["model"] == "llama3.1-8b" and d["inputs"]["model_from"] == "built-in default"
    (tmp_path / "kvcalc.toml").write_text('model = "qwen3-32b"\ngpu = "h200"\n')
    monkeypatch.chdir(tmp_path)
    d = cli("roofline", "--batch", "32", "--json").json()
    assert (d["inputs"]["model"], d["inputs"]["gpu"]) == ("qwen3-32b", "h200")
    monkeypatch.setenv("KVCALC_MODEL", "mixtral-8x7b")
    d = cli("roofline", "--batch", "32", "--json").json()
    assert d["inputs"]["model"] == "mixtral-8x7b" and d["inputs"]["model_from"] == "$KVCALC_MODEL"
    out = cli("roofline", "--batch", "32").out
    assert "mixtral-8x7b" in out and "$KVCALC_MODEL" in out


def test_roofline_plot_in_the_terminal(cli):
    r = cli("roofline", "-m", "llama3.1-8b", "-g", "h100", "--batch", "1,64", "--seq", "1k..64k", "--plot")
    assert r.code == 0
    assert "Roofline: h100-sxm" in r.out and "Decode step lower bound against context" in r.out


def test_roofline_plot_file(cli, tmp_path):
    out = tmp_path / "roof.svg"
    r = cli("roofline", "-m", "llama3.1-8b", "-g", "h100", "--batch", "1,64", "--seq", "1k..8k", "--plot-file", out)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert r.code == 2 and "matplotlib is not installed" in r.err
    else:
        assert r.code == 0 and out.read_text().startswith("<?xml")


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--seq", "8k..1k"], "backwards"),
        (["--batch", "0"], "--batch"),
        (["--seq", "1..100000000:1"], "1,000,000"),
        (["--batch", "1k"], "not a token length"),
        (["--batch", "1..8", "--seq", "1..300000:1"], "grid points"),
        (["--compute-dtype", "fp8", "--gpu", "a100"], "fp8"),
        (["--plot-file", "x.bmp"], ".png"),
    ],
)
def test_roofline_bad_input(cli, args, needle):
    one_line_error(cli("roofline", *args), needle)


def test_kvcalc_toml_paths_are_from_its_folder_and_unknown_keys_refused(cli, tmp_path, monkeypatch):
    # A spec path in kvcalc.toml is read from the toml's folder wherever kvcalc runs below it.
    import shutil
    from pathlib import Path

    spec = Path(__file__).resolve().parent.parent / "model_specs" / "llama2-7b.yaml"
    (tmp_path / "specs").mkdir()
    shutil.copy(spec, tmp_path / "specs" / "mine.yaml")
    (tmp_path / "kvcalc.toml").write_text('model = "specs/mine.yaml"\ngpu = "h100"\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    d = cli("roofline", "--json").json()
    assert d["model"] == "llama2-7b"
    # A key kvcalc does not read is refused, with the closest one.
    (tmp_path / "kvcalc.toml").write_text('modle = "llama2-7b"\n')
    one_line_error(cli("roofline"), "unknown key 'modle'", "did you mean model?")


def test_kvcalc_toml_sets_engine_kv_dtype_tp_util_and_block_size(cli, tmp_path, monkeypatch):
    # Issue 20: the options a team fixes once. A flag on the command line wins; the command names
    # what it took from the file; a value of the wrong type is refused in one line.
    (tmp_path / "kvcalc.toml").write_text(
        'model = "llama3.1-70b"\ngpu = "h100"\nengine = "sglang"\nkv_dtype = "fp8"\ntp = 4\nutil = 0.8\nblock_size = 32\n'
    )
    monkeypatch.chdir(tmp_path)
    d = cli("fit", "--seq", "8k", "--json").json()
    assert (d["tp"], d["kv_dtype"], d["engine"], d["util"]) == (4, "fp8", "sglang@0.5", 0.8)
    assert "tp 4" in d["inputs"]["options"] and d["inputs"]["options_from"].endswith("kvcalc.toml")
    text = cli("fit", "--seq", "8k").out
    assert "tp 4" in " ".join(text.split()) and "(default; from" in text
    over = cli("fit", "--seq", "8k", "--tp", "8", "--engine", "vllm", "--json").json()
    assert (over["tp"], over["engine"], over["kv_dtype"]) == (8, "vllm@0.33", "fp8")
    (tmp_path / "kvcalc.toml").write_text('tp = "four"\n')
    one_line_error(cli("fit", "--seq", "8k"), "tp must be a whole number", "kvcalc.toml")
    # A value the option would refuse is refused naming the file and key, not the flag.
    for bad, words in (("util = 5", "util 5 is out of range"), ('engine = "nope"', "unknown engine"), ("tp = 0", "tp 0")):
        (tmp_path / "kvcalc.toml").write_text(bad + "\n")
        one_line_error(cli("fit", "--seq", "8k"), words, "kvcalc.toml, key")


def test_kvcalc_toml_sets_the_attention_backend_for_the_commands_that_take_it(cli, tmp_path, monkeypatch):
    # SGLang's Triton decode backend fixed once for a team: roofline takes it as --attention-backend triton gives it.
    (tmp_path / "kvcalc.toml").write_text(
        'model = "qwen3-8b"\ngpu = "h100"\nengine = "sglang@0.5.9"\nattention_backend = "triton"\n'
    )
    monkeypatch.chdir(tmp_path)
    got = cli("roofline", "--batch", "1", "--seq", "32000", "--json").json()["rows"][0]["t_step_s"]
    flag = cli("roofline", "--batch", "1", "--seq", "32000", "--attention-backend", "triton", "--json").json()
    assert got == flag["rows"][0]["t_step_s"] and round(got * 1e3, 2) == 20.82
    # The flag wins: default puts the release's own kernel back (FlashInfer's figures, 8.59 ms; 8.40 before Qwen3's q/k norms).
    back = cli("roofline", "--batch", "1", "--seq", "32000", "--attention-backend", "default", "--json").json()
    assert round(back["rows"][0]["t_step_s"] * 1e3, 2) == 8.59
    # fit has no such option and ignores the key, as it does block_size where it does not apply.
    assert cli("fit", "--seq", "8k").code == 0
    (tmp_path / "kvcalc.toml").write_text('attention_backend = "trition"\n')
    one_line_error(cli("roofline", "--batch", "1"), "unknown attention backend", "kvcalc.toml, key attention_backend", "triton")
    (tmp_path / "kvcalc.toml").write_text("attention_backend = 3\n")
    one_line_error(cli("roofline", "--batch", "1"), "attention_backend must be a name such as 'triton'", "kvcalc.toml")


def test_kvcalc_toml_and_moe_backend_put_nvfp4_experts_on_the_tensorrt_llm_gen_kernel(cli, tmp_path, monkeypatch):
    # TensorRT-LLM 1.1's default CUTLASS MoE against its TRTLLM backend for DeepSeek-R1 in NVFP4 at TP 4 on B200s: 58 MoE
    # layers, 86 us a call against 14 (gpu_specs and steptime's moe_cutlass_fp4_s and moe_flashinfer_fp4_s).
    base = ("roofline", "--model", "deepseek-v3", "--gpu", "b200", "--tp", "4", "--weight-dtype", "fp4", "--batch", "1")
    base += ("--seq", "1000", "--engine", "trtllm@1.1", "--json")
    cutlass = cli(*base).json()["rows"][0]["t_step_s"]
    flag = cli(*base, "--moe-backend", "trtllm").json()["rows"][0]["t_step_s"]
    # (and the experts' math at one token at the two kernels' shares, under a microsecond a step)
    assert cutlass - flag == pytest.approx(58 * 72e-6, abs=1e-6)
    (tmp_path / "kvcalc.toml").write_text('moe_backend = "flashinfer_trtllm"\n')
    monkeypatch.chdir(tmp_path)
    assert cli(*base).json()["rows"][0]["t_step_s"] == flag
    assert cli(*base, "--moe-backend", "default").json()["rows"][0]["t_step_s"] == cutlass
    (tmp_path / "kvcalc.toml").write_text('moe_backend = "trtlm"\n')
    one_line_error(cli(*base), "unknown MoE backend 'trtlm'", "kvcalc.toml, key moe_backend", "did you mean trtllm")
    (tmp_path / "kvcalc.toml").write_text("moe_backend = 1\n")
    one_line_error(cli(*base), "moe_backend must be a name such as 'trtllm'", "kvcalc.toml")


def test_an_option_from_kvcalc_toml_that_the_command_refuses_is_named_by_its_file_and_key(cli, tmp_path, monkeypatch):
    # attention_backend = "triton" is a valid name, so the file is read; the command refuses it only beside
    # what else it runs (vLLM, the default engine; a model the kernel is not priced for). The line names
    # kvcalc.toml and its key, where the value came from, not --attention-backend, which was never typed.
    (tmp_path / "kvcalc.toml").write_text('attention_backend = "triton"\n')
    monkeypatch.chdir(tmp_path)
    where = f"({tmp_path / 'kvcalc.toml'}, key attention_backend)"
    line = one_line_error(cli("roofline", "--batch", "8"), "SGLang's Triton decode kernel only", where)
    assert "--attention-backend" not in line
    one_line_error(
        cli("simulate", "--engine", "sglang@0.5.9", "--model", "llama2-7b", "--requests", "20"), "grouped kernel", where
    )
    # Typed on the command line, the same value is named as the option.
    one_line_error(cli("roofline", "--batch", "8", "--attention-backend", "triton"), "(--attention-backend)")


def test_kvcalc_toml_sets_sglangs_receive_interval_for_simulate_and_plan(cli, tmp_path, monkeypatch):
    # A server flag a team fixes once, as attention_backend: simulate and plan take it as the flag gives it; the flag
    # wins; a command without the option (fit) ignores it; a bad value, or one the engine refuses, is named by the file
    # and key where it came from.
    (tmp_path / "kvcalc.toml").write_text(
        'model = "qwen3-8b"\ngpu = "h100"\nengine = "sglang@0.5.9"\nscheduler_recv_interval = 10\n'
    )
    monkeypatch.chdir(tmp_path)
    sim = ("simulate", "--rate", "5", "--prompt", "1000", "--output", "100", "--requests", "300", "--json")
    got = cli(*sim).json()["runs"][-1]["ttft_s"]["mean"]
    flag = cli(*sim, "--scheduler-recv-interval", "10").json()["runs"][-1]["ttft_s"]["mean"]
    plain = cli(*sim, "--scheduler-recv-interval", "1").json()["runs"][-1]["ttft_s"]["mean"]
    assert got == flag and plain < got
    pl = ("plan", "--gpus", "h100", "--rate", "5", "--prompt", "1000", "--output", "100", "--tpot", "50ms", "--closed-form")
    assert any("--scheduler-recv-interval 10" in a for a in cli(*pl, "--json").json()["assumptions"])
    assert cli("fit", "--seq", "8k").code == 0
    where = f"{tmp_path / 'kvcalc.toml'}, key scheduler_recv_interval"
    line = one_line_error(cli(*sim, "--engine", "vllm"), "SGLang's --scheduler-recv-interval", where)
    assert "(--scheduler-recv-interval)" not in line
    one_line_error(cli(*sim, "--engine", "vllm", "--scheduler-recv-interval", "10"), "(--scheduler-recv-interval)")
    for bad, words in (("scheduler_recv_interval = 0", "out of range"), ('scheduler_recv_interval = "ten"', "whole number")):
        (tmp_path / "kvcalc.toml").write_text(bad + "\n")
        one_line_error(cli(*sim), words, "kvcalc.toml")


def test_util_sizes_the_pool_that_decides_which_batches_fit(cli):
    """roofline --util: the engine's memory fraction for the 'fits' column, as fit takes it. vLLM's pool moves
    by the fractions' difference times the GPU's memory (the L40S's 47,674,556,416 B: gpu_specs/l40s.yaml), and
    a request of 4,096 tokens of Llama-3.1-8B holds 4,096 x 131,072 B (32 layers x 8 KV heads x 128 x 2 x 2 B):
    0.4 x 47,674,556,416 / 536,870,912 = 35.5 requests fewer at 0.5 than at 0.9."""
    import json

    got = {}
    for u in ("0.9", "0.5"):
        r = cli("roofline", "--model", "llama3.1-8b", "--gpu", "l40s", "--batch", "64", "--seq", "4096", "--util", u, "--json")
        assert r.code == 0, r.err
        d = json.loads(r.out)
        got[u] = d["rows"][0]["max_batch_in_memory"]
        assert f"(kvcalc fit, a memory fraction of {u})" in " ".join(d["assumptions"])
    assert 32 * 8 * 128 * 2 * 2 * 4096 == 536_870_912
    assert got["0.9"] - got["0.5"] in (35, 36) and got["0.5"] < 64
    one_line_error(cli("roofline", "--model", "llama3.1-8b", "--util", "0"), "(--util)")
