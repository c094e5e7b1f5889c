"""Weights as the checkpoint holds them: roles, quantization formats, float32 checkpoints, TP and PP."""

import json
from pathlib import Path

import pytest

from conftest import make_model
from kvcalc.engine.memory import FitInputs, fit
from kvcalc.engine.weights import WeightFormats, quantized_bytes, resident_bytes, rope_cache_bytes, vision_bytes, weights
from kvcalc.errors import KvcalcError
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.hf import spec_dict_from_config
from kvcalc.specs.loader import validate
from kvcalc.specs.model import Quantization

CONFIGS = Path(__file__).parent / "configs"
GiB = 2**30


def _import(cfg, name="m"):
    d, w = spec_dict_from_config(cfg, "config.json", name=name)
    return validate("model", d, name, None), w


def test_float32_checkpoint_loads_at_16_bits():
    """gemma-2-9b ships float32 weights; vLLM and SGLang load them at 16 bits under dtype=auto."""
    m = resolve_model("gemma2-9b")
    assert m.checkpoint_dtype == "fp32" and m.weight_dtype == "bf16"
    assert resident_bytes(m) == 9_241_705_984 * 2  # not x 4
    assert resident_bytes(m, "fp32") == 9_241_705_984 * 4  # --weight-dtype still overrides


def test_roles_add_up_and_norms_are_whole_on_every_rank():
    m = resolve_model("llama3.1-8b")
    r = m.params
    assert r.embed == r.lm_head == 128256 * 4096
    assert r.attn == 32 * (4096 * 4096 * 2 + 2 * 4096 * 1024)
    assert r.mlp == 32 * 3 * 4096 * 14336
    assert r.norms == (32 * 2 + 1) * 4096
    assert r.total == m.params_total
    w = weights(m, None, tp=4)
    split = (r.embed + r.lm_head + r.attn + r.mlp) * 2
    assert w.per_gpu_bytes == -(-split // 4) + r.norms * 2


def test_deepseek_down_projections_are_replicated():
    """vLLM keeps DeepSeek's fused q/kv down-projection (ReplicatedLinear) whole on every rank."""
    m = resolve_model("deepseek-v3")
    assert m.params.replicated == 61 * 7168 * (1536 + 512 + 64)
    w8 = weights(m, None, tp=8)
    rep = m.params.replicated + -(-m.params.replicated // 16384) * 4  # fp8 with 128x128-block fp32 scales
    assert w8.roles["replicated"] == rep
    # Eight ranks hold eight copies: the per-GPU figure is more than an eighth of the total.
    assert w8.per_gpu_bytes > resident_bytes(m) / 8 + 7 / 8 * rep * 0.99


def test_pipeline_stages_hold_the_embedding_first_and_the_head_last():
    m = resolve_model("llama3.1-8b")
    w = weights(m, None, tp=1, pp=2)
    layers = (m.params.attn + m.params.mlp + (m.params.norms - 4096)) * 2 // 2  # half the 32 layers each
    assert w.per_gpu_bytes == pytest.approx(layers + 128256 * 4096 * 2, abs=4096 * 2)


@pytest.mark.parametrize(
    "method, n, expected",
    [
        ("fp8-block", 128 * 128 * 3, 128 * 128 * 3 + 3 * 4),
        ("fp8-channel", 4096 * 10, 4096 * 10 + 10 * 4),
        ("awq", 4096 * 128, 4096 * 128 // 2 + 4096 * 5 // 2),
        ("gptq", 4096 * 128, 4096 * 128 // 2 + 4096 * 5 // 2),
        ("mxfp4", 32 * 1000, 17 * 1000),
        ("nvfp4", 16 * 1000, 9 * 1000),
        ("fp8-tensor", 12345, 12345),
    ],
)
def test_quantized_bytes(method, n, expected):
    q = Quantization(method=method, roles=["mlp"], group_size=128 if method != "mxfp4" else 32)
    assert quantized_bytes(q, n, 4096) == expected


def _cfg(name):
    return json.loads((CONFIGS / f"{name}.json").read_text())


def test_meta_fp8_keeps_attention_and_the_end_layers_in_16_bits():
    """Meta's Llama-3.1-405B FP8 (fbgemm_fp8): only the MLPs of layers 1-124 are fp8, row-wise scales."""
    cfg = _cfg("llama3.1-405b")
    keep = [f"model.layers.{i}.self_attn.{p}_proj" for i in range(126) for p in "qkvo"]
    keep += [f"model.layers.{i}.mlp.{p}_proj" for i in (0, 125) for p in ("gate", "up", "down")] + ["lm_head"]
    cfg["quantization_config"] = {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": keep}
    m, _ = _import(cfg)
    assert m.quantization.method == "fp8-channel" and m.quantization.unquantized_layers == 2
    assert "attn" not in m.quantization.roles
    mlp = m.params.mlp
    kept = mlp * 2 // 126
    expected_mlp = (mlp - kept) + -(-(mlp - kept) // 16384) * 4 + kept * 2
    w = weights(m, None, tp=8)
    total = (m.params.total - mlp) * 2 + expected_mlp
    assert resident_bytes(m) == total
    # About 56.7 GiB per H100 at TP 8 (vLLM 0.5.3 logged 57.75 GiB, vllm#6746), not the 47 of "all fp8".
    assert 56.5 * GiB < w.per_gpu_bytes < 57 * GiB


@pytest.mark.parametrize(
    "qc, method, g",
    [
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}, "awq", 128),
        ({"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False}, "gptq", 32),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}},
                "ignore": ["lm_head"],
            },
            "int8-channel",
            128,
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}},
            },
            "fp8-channel",
            128,
        ),
        ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}, "fp8-block", 128),
    ],
)
def test_quantization_configs(qc, method, g):
    cfg = {**_cfg("qwen2.5-7b"), "quantization_config": qc}
    m, _ = _import(cfg)
    assert (m.quantization.method, m.quantization.group_size) == (method, g)
    assert m.quantization.roles == ["attn", "mlp"]
    # Embeddings, LM head and norms stay 16-bit.
    assert resident_bytes(m) > (m.params.embed + m.params.lm_head) * 2


def test_compressed_tensors_without_input_activations_quantize_the_weights_alone():
    """A compressed-tensors group with weights and no input_activations is W8A16: vLLM runs it through Marlin's 16-bit
    kernels (0.11.0 compressed_tensors.py _get_scheme_from_parts: CompressedTensorsWNA16 for int weights,
    CompressedTensorsW8A16Fp8 for float), so its matmuls run at the 16-bit peak and quantize no activations. With
    input_activations (RedHat's quantized.w8a8: dynamic per-token int8) they run W8A8 at the GPU's INT8 peak."""
    from kvcalc.engine.steptime import StepModel, matmul_dtype
    from kvcalc.specs.dtypes import kv_dtype

    def ct(typ, acts):
        g = {"weights": {"num_bits": 8, "type": typ, "strategy": "channel", "symmetric": True, "dynamic": False}}
        if acts:
            g["input_activations"] = {"num_bits": 8, "type": typ, "strategy": "token", "symmetric": True, "dynamic": True}
        m, _ = _import(
            {**_cfg("qwen2.5-7b"), "quantization_config": {"quant_method": "compressed-tensors", "config_groups": {"group_0": g}}}
        )
        return m

    h100, a100 = resolve_gpu("h100"), resolve_gpu("a100-80gb")
    w8a8, w8a16 = ct("int", True), ct("int", False)
    assert (w8a8.quantization.method, w8a8.quantization.weight_only) == ("int8-channel", False)
    assert (w8a16.quantization.method, w8a16.quantization.weight_only) == ("int8-channel", True)
    assert (matmul_dtype(w8a8, h100), matmul_dtype(w8a8, a100)) == ("int8", "int8")
    assert (matmul_dtype(w8a16, h100), matmul_dtype(w8a16, a100)) == ("bf16", "bf16")
    # The same bytes either way: an int8 weight and an fp32 scale a row; the layout says which it is.
    assert resident_bytes(w8a8) == resident_bytes(w8a16)
    assert WeightFormats.of(w8a16).describe() == "attn, mlp as int8-channel (the weights alone: W8A16), the rest bf16"
    assert WeightFormats.of(w8a8).describe() == "attn, mlp as int8-channel, the rest bf16"
    # Qwen2.5-7B's 28 layers quantize each of QKV, output, gate-up and down's inputs under W8A8, nothing under W8A16.
    bf = kv_dtype("bf16")
    assert (StepModel(w8a8, h100, bf).quant_kernels, StepModel(w8a16, h100, bf).quant_kernels) == (28 * 4, 0)
    # fp8 weights without input_activations: Marlin too, at 16 bits even on a GPU with fp8 units.
    f8a8, f8a16 = ct("float", True), ct("float", False)
    assert (f8a8.quantization.weight_only, f8a16.quantization.weight_only) == (False, True)
    assert (matmul_dtype(f8a8, h100), matmul_dtype(f8a16, h100)) == ("fp8", "bf16")
    assert (StepModel(f8a8, h100, bf).quant_kernels, StepModel(f8a16, h100, bf).quant_kernels) == (28 * 4, 0)


def test_an_8_bit_gptq_checkpoint_is_counted_and_runs_w8a16():
    """Qwen's GPTQ-Int8 releases: 8-bit weights packed four to an int32 (qweight), an fp16 scale and an 8-bit zero
    (qzeros, packed four to an int32) per group of 128 input rows; vLLM runs them through Marlin's 16-bit kernels
    (gptq_marlin.py TYPE_MAP (8, True)), so they multiply at the 16-bit peak and quantize no activations."""
    from kvcalc.engine.steptime import StepModel, matmul_dtype
    from kvcalc.specs.dtypes import kv_dtype

    qc = {"quant_method": "gptq", "bits": 8, "group_size": 128, "desc_act": False, "sym": True}
    m, _ = _import({**_cfg("qwen2.5-7b"), "quantization_config": qc})
    q = m.quantization
    assert (q.method, q.group_size, q.weight_only, q.roles) == ("gptq-int8", 128, True, ["attn", "mlp"])
    # Qwen2.5-7B: 822,212,608 attention and 5,703,204,864 MLP parameters (6,525,417,472 quantized: 1 B each and 3 B a
    # group of 128, 50,979,824 groups), the embeddings, LM head and norms (1,090,199,040) at 2 B.
    p = m.params
    assert (p.attn, p.mlp, p.embed + p.lm_head + p.norms) == (822_212_608, 5_703_204_864, 1_090_199_040)
    quantized = 6_525_417_472 + -(-822_212_608 // 128) * 3 + -(-5_703_204_864 // 128) * 3
    assert quantized == 6_525_417_472 + 50_979_824 * 3
    assert resident_bytes(m) == quantized + 1_090_199_040 * 2
    # 8.25 GiB, where vLLM 0.17.1 logged 8.31 GiB loading Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8 on a T4
    # (tests/logs/real, vllm-mrefaat-g4dn-t4-qwen2.5-7b-gptq-int8-eager.log).
    assert round(resident_bytes(m) / GiB, 2) == 8.25
    log = (Path(__file__).parent / "logs" / "real" / "vllm-mrefaat-g4dn-t4-qwen2.5-7b-gptq-int8-eager.log").read_text()
    assert "Model loading took 8.31 GiB memory" in log
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "formulas.md").read_text().split())
    assert "Qwen2.5-7B-Instruct-GPTQ-Int8 comes to 8.25 GiB, vLLM 0.17.1 logs 8.31" in doc
    assert matmul_dtype(m, resolve_gpu("a100-80gb")) == matmul_dtype(m, resolve_gpu("h100")) == "bf16"
    assert StepModel(m, resolve_gpu("h100"), kv_dtype("bf16")).quant_kernels == 0
    # --weight-dtype int8-w8a16 (aliases w8a16, gptq-int8) lays a 16-bit spec out as that checkpoint: the same bytes, W8A16.
    from kvcalc.engine.weights import flag_layout
    from kvcalc.specs.dtypes import normalize_weight_dtype

    base = resolve_model("qwen2.5-7b")
    lay = flag_layout(base, "int8-w8a16")
    assert lay is not None and (lay.method, lay.group_size, lay.weight_only) == ("gptq-int8", 128, True)
    assert resident_bytes(base, "int8-w8a16") == resident_bytes(m)
    assert normalize_weight_dtype("w8a16") == normalize_weight_dtype("GPTQ-Int8") == "int8-w8a16"
    assert matmul_dtype(base, resolve_gpu("a100-80gb"), "int8-w8a16") == "bf16"
    assert matmul_dtype(base, resolve_gpu("a100-80gb"), "int8") == "int8"  # the int8 flag stays W8A8
    assert StepModel(base, resolve_gpu("h100"), kv_dtype("bf16"), weight_dtype="int8-w8a16").quant_kernels == 0
    # Per channel (group_size -1): one group for the whole input.
    pc, _ = _import({**_cfg("qwen2.5-7b"), "quantization_config": {**qc, "group_size": -1}})
    assert pc.quantization.group_size == 2**20
    # 8-bit AWQ and 3-bit GPTQ are not modelled: one line each.
    for bad, said in (({"quant_method": "awq", "bits": 8}, "awq with 8-bit weights"), ({**qc, "bits": 3}, "gptq with 3-bit")):
        with pytest.raises(KvcalcError, match=said):
            _import({**_cfg("qwen2.5-7b"), "quantization_config": bad})


def test_unknown_quantization_is_refused():
    cfg = {**_cfg("qwen2.5-7b"), "quantization_config": {"quant_method": "bitsandbytes"}}
    with pytest.raises(KvcalcError, match="not modelled"):
        _import(cfg)


def test_rope_cache_is_in_the_engines_weights():
    m = resolve_model("llama3.1-8b")
    assert rope_cache_bytes(m) == 131072 * 128 * 2
    f = fit(m, resolve_gpu("h100"), FitInputs(seq=8192))
    assert f.weight_bytes == 16_060_522_496 + 131072 * 128 * 2  # vLLM logs 14.9888 GiB for 14.9575 + 0.0312
    p = fit(m, resolve_gpu("h100"), FitInputs(seq=8192, engine="plain"))
    assert p.weight_bytes == 16_060_522_496


def test_scaled_and_gemma3_rope_caches_are_as_long_as_vllm_builds_them():
    # Gemma-3-4B (vLLM 0.19.0 gemma3.py): its sliding layers' rope (rope_local_base_freq, no scaling)
    # caches 131,072 positions, its global layers' linear scaling by 8 caches 8 x 131,072
    # (linear_scaling_rope.py), each x 256 rotary dims x 2 bytes. llm-d-planner#205's log loads 8.58
    # GiB, where the parameters are 8.08.
    m = resolve_model("gemma3-4b")
    assert rope_cache_bytes(m) == (131072 + 8 * 131072) * 256 * 2 == 603_979_776
    # SGLang 0.5.6's Gemma 3 computes its angles from inv_freq and holds no cache (gemma3_causal.py).
    assert rope_cache_bytes(m, "sglang") == 0
    # DeepSeek-Coder-6.7B's linear scaling by 4 over 16,384 positions: one cache of 65,536.
    assert rope_cache_bytes(resolve_model("deepseek-coder-6.7b")) == 4 * 16384 * 128 * 2


def test_a_partial_rotary_embedding_caches_the_dimensions_it_turns():
    # vLLM 0.22.1 rotary_embedding/__init__.py get_rope: rotary_dim = int(head_size x partial_rotary_factor), and the
    # cos/sin cache is max_position x rotary_dim in the model's dtype (SGLang 0.5.9's get_rope likewise).
    # Qwen3-Next: a quarter of 256 over 262,144 positions.
    assert resolve_model("qwen3-next-80b-a3b").partial_rotary_factor == 0.25
    assert rope_cache_bytes(resolve_model("qwen3-next-80b-a3b")) == 262_144 * 64 * 2 == 33_554_432
    # GLM-4.6 (0.5 of 128 over 202,752); MiniMax-M2's rotary_dim 64 of its 128 (minimax_m2.py turns it into the
    # factor) over 196,608; Phi-2 0.4 of 80 over 2,048.
    assert rope_cache_bytes(resolve_model("glm-4.6")) == 202_752 * 64 * 2
    assert rope_cache_bytes(resolve_model("minimax-m2")) == 196_608 * 64 * 2
    assert rope_cache_bytes(resolve_model("phi-2")) == 2_048 * 32 * 2
    # Qwen3.5: a quarter of 256 in a multimodal rotary embedding over four times the positions (mrope.py).
    assert rope_cache_bytes(resolve_model("qwen3.5-27b")) == 4 * 262_144 * 64 * 2
    # A model that turns every dimension keeps the whole head.
    assert resolve_model("llama3.1-8b").partial_rotary_factor == 1.0


def test_a_quantized_flag_leaves_the_vision_tower_in_16_bits():
    # Quantized checkpoints of vision-language models leave the ViT alone (Qwen/Qwen2.5-VL-7B-Instruct-AWQ:
    # "modules_to_not_convert": ["visual"]), so --weight-dtype int4 or fp8 counts Gemma-3-27B's 451,957,104
    # vision parameters at 2 bytes; --weight-dtype fp32 (vLLM's --dtype float32) loads them at 4.
    m = resolve_model("gemma3-27b")
    assert vision_bytes(m, "int4") == vision_bytes(m, "fp8") == vision_bytes(m) == 451_957_104 * 2
    assert vision_bytes(m, "fp32") == 451_957_104 * 4


def test_mxfp4_padding_is_in_the_range():
    # vLLM's Marlin mxfp4 path pads gpt-oss's 2,880 x 2,880 expert matrices to 2,944 x 3,072 (the best
    # estimate: vllm#23278 logs 65.9651 GiB on an H100); Triton's kernels do not pad (the low end);
    # Blackwell's FlashInfer tiles pad both to 3,072 (the high end).
    m = resolve_model("gpt-oss-120b")
    f = fit(m, resolve_gpu("h100"), FitInputs(seq=8192))
    w = next(b for b in f.budget if b.key == "weights")
    experts = weights(m).roles["experts"]
    assert w.bytes - w.low == int(experts * (2944 * 3072 - 2880 * 2880) / (2880 * 2880))
    # Beside it, the 2% by which engines' loaded weights can exceed the count (memory.LOADED_WEIGHTS_MARGIN_PCT).
    assert w.high - w.bytes == int(experts * (3072 * 3072 - 2944 * 3072) / (2880 * 2880)) + w.bytes * 2 // 100
    assert abs(w.bytes / 2**30 - 65.9651) / 65.9651 < 0.005


def test_user_spec_without_roles_splits_everything_but_experts():
    m = make_model(
        {"attn": {"kind": "full", "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 64}},
        [{"repeat": 4, "pattern": ["attn"]}],
        hidden_size=512,
        vocab_size=1000,
        max_position_embeddings=1024,
        params_total=10**7,
    )
    assert m.params is None
    assert weights(m, None, tp=2).per_gpu_bytes == 10**7  # 2 x 10^7 bytes over 2 ranks


def test_which_layers_hold_the_experts_and_what_each_pipeline_stage_weighs():
    """The engines' model code: DeepSeek's and GLM's layers from first_k_dense_replace on (deepseek_v2.py,
    glm4_moe.py), Jamba's every expert_layer_period-th from expert_layer_offset, Qwen's every
    decoder_sparse_step-th but mlp_only_layers, Llama 4's every interleave_moe_layer_step-th."""
    import math
    from fractions import Fraction

    from kvcalc.engine.weights import moe_layer_mask, role_bytes

    ds = resolve_model("deepseek-v3")
    assert moe_layer_mask(ds) == [False] * 3 + [True] * 58
    assert moe_layer_mask(resolve_model("jamba-v0.1")) == [i % 2 == 1 for i in range(32)]
    assert moe_layer_mask(resolve_model("qwen3-30b-a3b")) == [True] * 48
    assert moe_layer_mask(resolve_model("glm-4.6")) == [False] * 3 + [True] * 89
    assert moe_layer_mask(resolve_model("llama3.1-8b")) is None
    # DeepSeek-V3 at PP 2 as vLLM 0.7 splits it (30 / 31): the second stage holds 31 of the 58 MoE layers and
    # no dense MLP, the first three dense layers and 27 MoE ones. The busiest is the second.
    rb = role_bytes(ds)
    w = weights(ds, None, 1, 2, pp_split="last")
    assert w.roles["experts"] == -(-rb["experts"] * 31 // 58)
    assert "mlp" not in w.roles and "lm_head" in w.roles
    assert w.roles["attn"] == math.ceil(Fraction(rb["attn"] * 31, 61))
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "formulas.md").read_text().split())
    assert "split 30 / 31, the second stage holds 31 of the 58 MoE layers, not 31 / 61 of them" in doc


def test_a_config_whose_moe_layout_cannot_be_read_shares_the_experts_evenly():
    """A config with a layout key kvcalc cannot use (0, a string, a bool, a non-list) gives no mask, so the
    stages share the experts by their layer counts, rather than failing."""
    import dataclasses

    from kvcalc.engine.weights import moe_layer_mask

    m = resolve_model("qwen3-30b-a3b")
    for bad in ({"decoder_sparse_step": 0}, {"decoder_sparse_step": "2"}, {"decoder_sparse_step": True}, {"mlp_only_layers": 5}):
        odd = dataclasses.replace(m, source=dataclasses.replace(m.source, config={**m.source.config, **bad}))
        assert moe_layer_mask(odd) is None, bad
        assert weights(odd, None, 1, 3).per_gpu_bytes == weights(m, None, 1, 3).per_gpu_bytes
    ds = resolve_model("deepseek-v3")
    for bad in ({"first_k_dense_replace": -1}, {"moe_layer_freq": 0}):
        odd = dataclasses.replace(ds, source=dataclasses.replace(ds.source, config={**ds.source.config, **bad}))
        assert moe_layer_mask(odd) is None, bad
