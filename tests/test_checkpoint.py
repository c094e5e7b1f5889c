"""Weights read from a checkpoint's own files: safetensors headers (never the tensors) or the index."""

import json
import struct

import pytest

from kvcalc.engine.memory import FitInputs, fit
from kvcalc.engine.weights import weights
from kvcalc.errors import KvcalcError
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.checkpoint import read_checkpoint, tensor_role

CONFIG = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": False,
}


def write_shard(path, tensors):
    """A safetensors file whose data region is a hole: the header is real, the tensors are never read."""
    header, offset = {}, 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)


def llama_tensors(extra=None):
    h, i, kv, v = 256, 512, 2 * 64, 1000
    t = {"model.embed_tokens.weight": ("BF16", (v, h), v * h * 2), "lm_head.weight": ("BF16", (v, h), v * h * 2)}
    for layer in range(2):
        p = f"model.layers.{layer}."
        t[p + "self_attn.q_proj.weight"] = ("BF16", (h, h), h * h * 2)
        t[p + "self_attn.k_proj.weight"] = ("BF16", (kv, h), kv * h * 2)
        t[p + "self_attn.v_proj.weight"] = ("BF16", (kv, h), kv * h * 2)
        t[p + "self_attn.o_proj.weight"] = ("BF16", (h, h), h * h * 2)
        for m in ("gate_proj", "up_proj"):
            t[p + f"mlp.{m}.weight"] = ("BF16", (i, h), i * h * 2)
        t[p + "mlp.down_proj.weight"] = ("BF16", (h, i), h * i * 2)
        t[p + "input_layernorm.weight"] = ("BF16", (h,), h * 2)
        t[p + "post_attention_layernorm.weight"] = ("BF16", (h,), h * 2)
    t["model.norm.weight"] = ("BF16", (h,), h * 2)
    t.update(extra or {})
    return t


def folder(tmp_path, tensors=None, index=None):
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    if tensors is not None:
        names = list(tensors)
        write_shard(tmp_path / "model-00001-of-00002.safetensors", {n: tensors[n] for n in names[: len(names) // 2]})
        write_shard(tmp_path / "model-00002-of-00002.safetensors", {n: tensors[n] for n in names[len(names) // 2 :]})
    if index is not None:
        (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    return tmp_path


def test_headers_give_the_bytes_by_role(tmp_path):
    m = resolve_model(str(folder(tmp_path, llama_tensors())))
    h, i, kv, v = 256, 512, 128, 1000
    assert m.checkpoint.total_bytes == (2 * v * h + 2 * (2 * h * h + 2 * kv * h + 3 * i * h + 2 * h) + h) * 2
    assert m.checkpoint.role_bytes["attn"] == 2 * (2 * h * h + 2 * kv * h) * 2
    assert m.checkpoint.role_bytes["norms"] == (2 * 2 * h + h) * 2
    # At TP 2 the projections and vocabulary split, the norms do not.
    w = weights(m, tp=2)
    assert w.per_gpu_bytes == (2 * v * h + 2 * (2 * h * h + 2 * kv * h + 3 * i * h)) * 2 // 2 + (2 * 2 * h + h) * 2
    assert any("safetensors" in x for x in m.import_warnings)


def test_a_tensor_the_config_does_not_describe_is_counted(tmp_path):
    extra = {
        "model.layers.0.self_attn.rotary_emb.inv_freq": ("F32", (32,), 128),
        "model.mystery.weight": ("BF16", (256, 256), 131072),
    }
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    m = resolve_model(str(folder(tmp_path / "a", llama_tensors(extra))))
    plain = resolve_model(str(folder(tmp_path / "b", llama_tensors())))
    # The unknown matrix (and the float32 buffer, loaded at 16 bits: 32 x 2 B) join the split bytes.
    assert weights(m).total_bytes - weights(plain).total_bytes == 131072 + 64
    assert any("no role kvcalc knows" in x for x in m.import_warnings)


def test_float32_weights_load_at_16_bits_but_their_scales_do_not(tmp_path):
    t = llama_tensors()
    t["model.layers.0.mlp.down_proj.weight_scale"] = ("F32", (256,), 1024)
    t["model.layers.0.mlp.down_proj.weight"] = ("F32", (256, 512), 256 * 512 * 4)
    m = resolve_model(str(folder(tmp_path, t)))
    assert m.checkpoint.role_bytes["mlp"] == 2 * 3 * 512 * 256 * 2 + 1024


def test_index_only_total_corrects_the_count(tmp_path):
    computed = weights(resolve_model(str(folder(tmp_path)))).total_bytes
    f = folder(tmp_path, index={"metadata": {"total_size": computed + 4096}, "weight_map": {"a": "x"}})
    m = resolve_model(str(f))
    assert m.checkpoint.role_bytes == {} and m.checkpoint.total_bytes == computed + 4096
    assert weights(m).total_bytes == computed + 4096


def test_fit_uses_the_checkpoint(tmp_path):
    m = resolve_model(str(folder(tmp_path, llama_tensors())))
    f = fit(m, resolve_gpu("h100"), FitInputs(seq=1024, engine="plain"))
    assert f.weight_bytes == m.checkpoint.total_bytes
    est = next(e for e in f.estimates if e.key == "weights")
    assert "safetensors" in est.reason


@pytest.mark.parametrize(
    "raw,msg",
    [
        (b"\x01\x00", "shorter than"),
        (struct.pack("<Q", 2**40), "not a safetensors header"),
        (struct.pack("<Q", 50) + b"{}", "ends inside"),
        (struct.pack("<Q", 4) + b"[1]x", "not JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        (struct.pack("<Q", 14) + b'{"a": {"x":1}}', "has no dtype"),
    ],
)
def test_bad_headers_are_one_line_errors(tmp_path, raw, msg):
    (tmp_path / "model.safetensors").write_bytes(raw)
    with pytest.raises(KvcalcError, match=msg):
        read_checkpoint(tmp_path)


def test_bad_index(tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {"total_size": "big"}}')
    with pytest.raises(KvcalcError, match="total_size"):
        read_checkpoint(tmp_path)


@pytest.mark.parametrize(
    "name,role",
    [
        ("model.embed_tokens.weight", "embed"),
        ("lm_head.weight", "lm_head"),
        ("model.layers.3.self_attn.q_a_proj.weight", "replicated"),
        ("model.layers.3.self_attn.kv_a_layernorm.weight", "norms"),
        ("model.layers.3.mlp.experts.17.down_proj.weight_scale_inv", "experts"),
        ("model.layers.3.mlp.shared_experts.up_proj.weight", "shared_experts"),
        ("model.layers.3.mlp.gate.weight", "router"),
        ("model.layers.3.mlp.gate.e_score_correction_bias", "router"),
        ("model.layers.3.mlp.gate_proj.weight", "mlp"),
        ("model.visual.blocks.0.attn.qkv.weight", "vision"),
        ("model.layers.0.self_attn.sinks", "attn"),
    ],
)
def test_tensor_roles(name, role):
    assert tensor_role(name) == role
