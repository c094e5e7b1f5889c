"""The catalog: every spec loads, cites its source, and holds the traps of the real configs."""

import json
from pathlib import Path

import pytest
import yaml

from kvcalc.engine.alloc import LOGICAL
from kvcalc.engine.kv import kv_size
from kvcalc.engine.weights import resident_bytes
from kvcalc.errors import KvcalcError
from kvcalc.specs.catalog import all_specs, catalog_files, resolve_gpu, resolve_model
from kvcalc.specs.dtypes import BF16
from kvcalc.specs.hf import spec_dict_from_config
from kvcalc.specs.loader import validate

CONFIGS = Path(__file__).parent / "configs"
MODELS = """llama2-7b llama2-13b llama2-70b llama3.1-8b llama3.1-70b llama3.1-405b mistral-7b-v0.1
mixtral-8x7b qwen2.5-7b qwen2.5-32b qwen2.5-72b qwen3-32b qwen3-235b-a22b deepseek-v2
deepseek-v2-lite deepseek-v3 kimi-k2 gemma2-9b gemma2-27b gemma3-1b gemma3-27b gpt-oss-20b gpt-oss-120b
falcon-7b phi3-mini qwen3-next-80b-a3b jamba-v0.1 llama4-scout llama3-8b llama3-70b llama3.3-70b
llama3.1-405b-fp8 qwen2.5-14b deepseek-r1-distill-qwen-14b qwen3-8b qwen3-14b qwen3-30b-a3b qwen3-235b-a22b-fp8
phi-4 mistral-small-24b glm-4.5-air glm-4.6 minimax-m2 deepseek-v3.2 llama3.2-11b-vision qwen2.5-vl-7b qwen2.5-vl-3b qwen3-vl-8b qwen3-vl-30b-a3b
deepseek-coder-6.7b codellama-7b gemma-7b gemma2-2b granite-3.3-8b qwen1.5-moe-a2.7b phi-2 gemma3-4b gemma3-12b
glm-5 glm-4.7-flash qwen2.5-1.5b qwen2.5-3b qwen3-4b mistral-7b-v0.3 qwen2.5-vl-32b qwen3-vl-32b qwen3.5-27b
qwen3.5-35b-a3b ernie-4.5-21b-a3b""".split()
GPUS = """a10g l4 l40s a100-40gb a100-80gb h100-sxm h100-pcie h100-nvl h200 b200 gb200 rtx4090
rtx5090 mi300x mi325x mi355x gaudi3 tpu-v5e tpu-v5p tpu-v6e rtx3090 a10 t4 rtx-a5000 rtx-a6000 l40
rtx-pro-6000 h20""".split()


def test_catalog_is_complete():
    assert sorted(catalog_files("model")) == sorted(MODELS)
    assert sorted(catalog_files("gpu")) == sorted(GPUS)


@pytest.mark.parametrize("name", MODELS)
def test_model_spec_is_what_its_config_says(name):
    """Each spec equals the import of the official config.json field values it cites."""
    m = resolve_model(name)
    assert m.name == name
    assert m.source.url.startswith("https://huggingface.co/") and m.source.url.endswith("/config.json")
    assert m.aliases and "/" in m.aliases[0]  # the Hugging Face repo id
    cfg = json.loads((CONFIGS / f"{name}.json").read_text())
    d, warnings = spec_dict_from_config(cfg, m.source.url, name=name)
    assert warnings == []
    imported = validate("model", {**d, "aliases": m.aliases, "description": m.description}, name, None)
    assert imported == m
    # The catalog is built without pydantic; the same file through pydantic gives the same spec.
    doc = yaml.safe_load((catalog_files("model")[name]).read_text())
    assert validate("model", doc, name, None) == m
    # The cited field values are the file's own.
    text = cfg.get("text_config", cfg)
    for k, v in m.source.config.items():
        assert text.get(k, cfg.get(k)) == v, k


@pytest.mark.parametrize("name", GPUS)
def test_gpu_spec_cites_a_datasheet(name):
    g = resolve_gpu(name)
    assert g == validate("gpu", yaml.safe_load(catalog_files("gpu")[name].read_text()), name, None)
    assert g.source.url.startswith("https://")
    assert g.memory_runtime_bytes < g.memory_bytes * 1.1
    assert g.memory_bandwidth_bytes_per_s > 10**11
    assert g.flops_fp8 is None or g.flops_fp8 >= g.flops_bf16


def test_dense_flops_are_half_the_sparse_datasheet_figures():
    # H100 SXM datasheet: bf16 1,979 TFLOPS and fp8 3,958 TFLOPS "with sparsity".
    h = resolve_gpu("h100-sxm")
    assert h.flops_bf16 == 1979e12 / 2
    assert h.flops_fp8 == 3958e12 / 2
    assert h.memory_bandwidth_bytes_per_s == 3_350_000_000_000
    assert resolve_gpu("a100-80gb").memory_bandwidth_bytes_per_s == 2_039_000_000_000


@pytest.mark.parametrize(
    "typed,canonical",
    [
        ("h100", "h100-sxm"),
        ("H100", "h100-sxm"),
        ("llama-2-7b", "llama2-7b"),
        ("meta-llama/Llama-2-7b-hf", "llama2-7b"),
        ("Llama-2-7b-hf", "llama2-7b"),
        ("LLAMA2-7B", "llama2-7b"),
        ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
        ("Qwen/Qwen3-32B", "qwen3-32b"),
        ("google/gemma-3-27b-it", "gemma3-27b"),
        ("openai/gpt-oss-120b", "gpt-oss-120b"),
    ],
)
def test_names_people_type(typed, canonical):
    kind_model = canonical in MODELS
    spec = resolve_model(typed) if kind_model else resolve_gpu(typed)
    assert spec.name == canonical


def test_catalog_index_matches_the_yaml_files():
    from kvcalc.specs.catalog import INDEX, build_index

    assert json.loads(INDEX.read_text()) == build_index(), "stale: run python -m kvcalc.specs.catalog"


def test_unknown_name_suggests_the_closest():
    with pytest.raises(KvcalcError) as e:
        resolve_model("llama2-7")
    assert "llama2-7b" in e.value.line()
    with pytest.raises(KvcalcError) as e:
        resolve_gpu("h1000")
    assert "h100" in e.value.line()


# ---- the traps the real configs hold ----------------------------------------------------------


def kinds(name):
    m = resolve_model(name)
    return m, {k: (v.kind, n) for k, v in m.layer_kinds.items() for kk, n in m.layer_counts().items() if kk == k}


def test_head_dim_is_not_hidden_over_heads():
    q = resolve_model("qwen3-32b").layer_kinds["attn"]
    assert (q.num_attention_heads, q.head_dim) == (64, 128)  # 5120 / 64 would be 80
    assert resolve_model("gemma2-9b").layer_kinds["global"].head_dim == 256  # 3584 / 16 = 224
    assert resolve_model("gpt-oss-20b").layer_kinds["global"].head_dim == 64  # 2880 / 64 = 45
    # Qwen3-32B: 2 x 64 layers x 8 KV heads x 128 x 2 bytes.
    assert kv_size(resolve_model("qwen3-32b"), 1).kv_bytes_per_token == 2 * 64 * 8 * 128 * 2


def test_falcon_is_multi_query():
    a = resolve_model("falcon-7b").layer_kinds["attn"]
    assert (a.num_attention_heads, a.num_key_value_heads, a.head_dim) == (71, 1, 64)
    assert kv_size(resolve_model("falcon-7b"), 1).kv_bytes_per_token == 2 * 32 * 1 * 64 * 2


def test_qwen25_window_is_off():
    m, k = kinds("qwen2.5-7b")
    assert k == {"attn": ("full", 28)}


def test_mistral_windows_every_layer_and_mixtral_none():
    m, k = kinds("mistral-7b-v0.1")
    assert k == {"attn": ("sliding", 32)} and m.layer_kinds["attn"].sliding_window == 4096
    assert kinds("mixtral-8x7b")[1] == {"attn": ("full", 32)}


def test_gemma2_and_gpt_oss_alternate():
    m = resolve_model("gemma2-9b")
    assert m.layer_list[:4] == ["local", "global", "local", "global"]
    assert m.layer_counts() == {"global": 21, "local": 21}
    g = resolve_model("gpt-oss-120b")
    assert g.layer_list[:2] == ["local", "global"] and g.layer_kinds["local"].sliding_window == 128


def test_gemma3_one_global_in_six():
    m = resolve_model("gemma3-27b")
    assert m.layer_counts() == {"global": 10, "local": 52}
    assert [i for i, n in enumerate(m.layer_list) if n == "global"] == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59]
    assert m.layer_kinds["local"].sliding_window == 1024


def test_llama4_scout_one_global_in_four_with_8k_chunks():
    m = resolve_model("llama4-scout")
    assert m.layer_counts() == {"local": 36, "global": 12}
    assert m.layer_kinds["local"].attention_chunk_size == 8192
    assert m.layer_list[3] == "global"


def test_deepseek_and_kimi_are_mla():
    for name in ("deepseek-v2", "deepseek-v2-lite", "deepseek-v3", "kimi-k2"):
        k = resolve_model(name).layer_kinds["mla"]
        assert (k.kind, k.kv_lora_rank, k.qk_rope_head_dim) == ("mla", 512, 64)


def test_hybrid_state_models():
    m = resolve_model("jamba-v0.1")
    assert m.layer_counts() == {"mamba": 28, "attn": 4}
    # Mamba state: d_inner = 2 x 4096; conv (4 - 1) x d_inner + ssm d_inner x 16, bf16.
    assert m.layer_kinds["mamba"].state_bytes == (8192 * 3 + 8192 * 16) * 2
    q = resolve_model("qwen3-next-80b-a3b")
    assert q.layer_counts() == {"linear": 36, "attn": 12}
    # Gated DeltaNet: conv (4 - 1) x (2 x 16 x 128 + 32 x 128) + recurrent 32 x 128 x 128, bf16.
    assert q.layer_kinds["linear"].state_bytes == (3 * (2 * 16 * 128 + 32 * 128) + 32 * 128 * 128) * 2


# ---- parameter counts, computed from the configs, against published figures -----------------


@pytest.mark.parametrize(
    "name,published,rel",
    [
        ("llama2-7b", 6_738_415_616, 0),  # HF safetensors parameter count
        ("llama3.1-8b", 8_030_261_248, 0),  # HF safetensors parameter count
        ("llama3.1-405b", 405.85e9, 0.001),  # Llama 3.1 model card
        ("mixtral-8x7b", 46.7e9, 0.005),  # Mistral AI: 46.7B total
        ("deepseek-v3", 671e9, 0.005),  # DeepSeek-V3 report: 671B total (MTP excluded)
        ("qwen3-235b-a22b", 235e9, 0.005),
        ("gpt-oss-120b", 116.83e9, 0.001),  # OpenAI gpt-oss model card: 116.83B
        ("gpt-oss-20b", 20.91e9, 0.001),  # OpenAI gpt-oss model card: 20.91B
        ("falcon-7b", 6.92e9, 0.005),
        ("jamba-v0.1", 51.6e9, 0.01),  # AI21: 52B total
        ("gemma2-9b", 9.24e9, 0.005),
        ("llama3-8b", 8_030_261_248, 0),  # the Llama 3.1 8B geometry with an 8k rope
        ("qwen3-30b-a3b", 30.5e9, 0.005),  # Qwen3 model card: 30.5B total
        ("qwen3-8b", 8.2e9, 0.005),  # Qwen3 model card: 8.2B
        ("qwen3-14b", 14.8e9, 0.005),  # Qwen3 model card: 14.8B
        ("qwen2.5-14b", 14.7e9, 0.005),  # Qwen2.5 model card: 14.7B
        ("phi-4", 14.66e9, 0.005),
        ("mistral-small-24b", 23.57e9, 0.005),
        ("glm-4.5-air", 106e9, 0.01),  # Z.ai: 106B total
        ("glm-4.6", 355e9, 0.01),  # Z.ai: 355B total (its MTP layer included there)
        ("minimax-m2", 230e9, 0.01),  # MiniMax: 230B total (MTP modules included there)
        ("deepseek-v3.2", 671e9 + 0.9e9, 0.005),  # V3's 671B plus the indexer
        # Z.ai: 744B total (zai-org/GLM-5's README), the MTP layer not in it: one more MoE layer and its
        # projection (about 9.9B by this count) make the 754B that GLM-5.1's card gives.
        ("glm-5", 744e9, 0.001),
        ("glm-4.7-flash", 30e9, 0.01),  # NVIDIA's Megatron Bridge page: about 30B total, 3B active
        ("qwen2.5-1.5b", 1.54e9, 0.005),  # Qwen2.5-1.5B-Instruct model card: 1.54B
        ("qwen2.5-3b", 3.09e9, 0.005),  # Qwen2.5-3B-Instruct model card: 3.09B
        ("qwen3-4b", 4.0e9, 0.01),  # Qwen3-4B model card: 4.0B
        ("mistral-7b-v0.3", 7.25e9, 0.005),  # the Hub's safetensors count for Mistral-7B-Instruct-v0.3: 7.25B
    ],
)
def test_parameter_counts(name, published, rel):
    got = resolve_model(name).params_total
    assert abs(got - published) <= rel * published


def test_vision_language_models_count_their_towers():
    """Llama 3.2 11B Vision is 10.6B parameters with its ViT (Meta's model card); Qwen2.5-VL-7B 8.29B."""
    v = resolve_model("llama3.2-11b-vision")
    assert abs(v.params_total + v.vision_params - 10.6e9) <= 0.02 * 10.6e9
    q = resolve_model("qwen2.5-vl-7b")
    assert abs(q.params_total + q.vision_params - 8.29e9) <= 0.03 * 8.29e9
    q = resolve_model("qwen2.5-vl-32b")  # the Hub's safetensors count: 33.5B
    assert abs(q.params_total + q.vision_params - 33.5e9) <= 0.01 * 33.5e9
    q = resolve_model("qwen3-vl-32b")  # the Hub's safetensors count: 33.4B
    assert abs(q.params_total + q.vision_params - 33.4e9) <= 0.01 * 33.4e9


def test_deepseek_v32_caches_the_indexer_keys():
    """V3.2: the 576-element latent plus the indexer's 128-dim key in fp8 with one fp32 scale."""
    m = resolve_model("deepseek-v3.2")
    assert kv_size(m, 1).kv_bytes_per_token == 61 * ((512 + 64) * 2 + 128 + 4)
    # vLLM's fp8 sparse-MLA layout: 512 fp8 + 4 fp32 scales + 64 bf16 rope dims = 656 B.
    assert kv_size(m, 1, kv_dtype="fp8_ds_mla").kv_bytes_per_token == 61 * (656 + 132)
    # FlashMLA's sparse decode kernel reads no other fp8 layout, so vLLM (0.11.0-0.14 config.py,
    # 0.21 mla_attention.py) and SGLang store an fp8 cache of V3.2 so: not 576 B of plain fp8.
    assert kv_size(m, 1, kv_dtype="fp8").kv_bytes_per_token == 61 * (512 + 4 * 4 + 64 * 2 + 132)
    # A dense MLA model's fp8 cache stays one byte an element: DeepSeek-V3, 576 B a layer.
    assert kv_size(resolve_model("deepseek-v3"), 1, kv_dtype="fp8").kv_bytes_per_token == 61 * 576


def test_glm5_caches_deepseek_v32s_latent_and_indexer_keys_on_all_78_layers():
    """GLM-5: kv_lora_rank 512 + 64 rope dims a layer, and the indexer's 128-dim fp8 key with its
    fp32 scale, on every one of its 78 layers (transformers 5.25.0 GlmMoeDsaConfig: all "full")."""
    m = resolve_model("glm-5")
    assert resolve_model("zai-org/GLM-5.1") == m
    assert kv_size(m, 1).kv_bytes_per_token == 78 * ((512 + 64) * 2 + 128 + 4) == 100_152
    assert kv_size(m, 1, kv_dtype="fp8").kv_bytes_per_token == 78 * (512 + 4 * 4 + 64 * 2 + 132)
    assert m.moe is not None and (m.moe.num_experts, m.moe.num_experts_per_tok, m.moe.num_moe_layers) == (256, 8, 75)
    # One routed expert: gate, up (6144 x 2048 each) and down (2048 x 6144).
    assert m.moe.params_per_expert == 3 * 6144 * 2048


def test_layers_sharing_an_indexers_top_k_cache_no_indexer_keys():
    """GLM-5.2's config.json sets index_topk_freq 4 and index_skip_topk_offset 3: layer i runs its own
    indexer when max(i - 3 + 1, 0) % 4 == 0 (vLLM 0.24 deepseek_v2.py, SGLang 0.5.23 model_config.py),
    layers 0, 1, 2 and 6, 10, ..., 74: 3 + 18 = 21; the other 57 build no indexer and cache no keys."""
    cfg = json.loads((CONFIGS / "glm-5.json").read_text())
    indexed = [0, 1, 2, *range(6, 78, 4)]
    assert len(indexed) == 21
    per_token = 78 * (512 + 64) * 2 + 21 * (128 + 4)
    shared = "".join("F" if i in indexed else "S" for i in range(78))
    for extra in (
        {"index_topk_freq": 4, "index_skip_topk_offset": 3},
        {"index_topk_pattern": shared},
        {"index_topk_pattern": list(shared)},
        {"indexer_types": ["full" if c == "F" else "shared" for c in shared]},
    ):
        d, _ = spec_dict_from_config({**cfg, **extra}, "config.json", name="glm-5.2")
        m = validate("model", d, "glm-5.2", None)
        assert kv_size(m, 1).kv_bytes_per_token == per_token == 92_628
        # The indexer's weights go with it: 57 layers fewer of wq_b, wk, weights_proj and k_norm.
        indexer = 2048 * 32 * 128 + 6144 * 128 + 6144 * 32 + 2 * 128
        assert resolve_model("glm-5").params_total - m.params_total == 57 * indexer
    for bad in ({"indexer_types": ["full"] * 77}, {"index_topk_pattern": "F" * 77 + "X"}, {"index_topk_pattern": [1] * 78}):
        with pytest.raises(KvcalcError, match="indexer_types|index_topk_pattern"):
            spec_dict_from_config({**cfg, **bad}, "config.json", name="glm-5.2")


def test_mllama_cross_layers_hold_the_image_tokens():
    m = resolve_model("llama3.2-11b-vision")
    r = kv_size(m, 1000)
    rows = {row.kind: row for row in r.layers}
    assert rows["cross"].layers == 8 and rows["cross"].tokens_held == 4 * (40 * 40 + 1)
    assert r.kv_bytes_per_request == (32 * 1000 + 8 * 6404) * 2 * 8 * 128 * 2


def test_unknown_model_type_with_cache_fields_is_refused(tmp_path, cli):
    cfg = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    cfg["model_type"] = "deepseek_v4_experimental"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = cli("size", "--model", str(tmp_path / "config.json"), "--seq", "1")
    assert r.code == 2 and "kv_lora_rank" in r.err and "cannot interpret" in r.err


def test_unknown_standard_model_type_proceeds_with_warnings(tmp_path, cli):
    cfg = json.loads((CONFIGS / "llama3.1-8b.json").read_text())
    cfg["model_type"] = "llama_next"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    d = cli("size", "--model", str(tmp_path / "config.json"), "--seq", "1", "--json").json()
    assert d["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2
    assert any("unknown model_type 'llama_next'" in w for w in d["warnings"])
    assert "unknown model_type" in cli("size", "--model", str(tmp_path / "config.json"), "--seq", "1").out


def test_active_parameters_of_moe():
    assert abs(resolve_model("mixtral-8x7b").params_active - 12.9e9) < 0.01 * 12.9e9  # Mistral AI: 12.9B active
    assert abs(resolve_model("deepseek-v3").params_active - 37e9) < 0.03 * 37e9  # 37B activated
    assert abs(resolve_model("jamba-v0.1").params_active - 12e9) < 0.02 * 12e9  # 12B active


def test_gpt_oss_experts_in_mxfp4():
    m = resolve_model("gpt-oss-20b")
    per_expert = 3 * 2880 * 2880 + 2 * 2880 + 2880
    experts = 24 * 32 * per_expert
    assert m.expert_params == experts
    # mxfp4: 4.25 bits per parameter; the rest bf16.
    expected = (experts * 17 + 31) // 32 + (m.params_total - experts) * 2
    assert resident_bytes(m) == expected
    assert 12.5e9 < expected < 14e9  # the checkpoint is about 13 GB


def test_every_spec_sizes():
    for m in all_specs("model"):
        r = kv_size(m, 4096)
        assert r.kv_bytes_per_request > 0


def test_show_names_the_checkpoints_own_formats(cli):
    # DeepSeek-V3 stores fp8 blocks and gpt-oss-120b mxfp4 experts: show says so, not "bf16".
    d = cli("show", "deepseek-v3", "--json").json()
    assert d["derived"]["weight_dtype"] == "attn, mlp, shared_experts, experts, replicated as fp8-block, the rest bf16"
    out = " ".join(cli("show", "gpt-oss-120b").out.split())
    assert "experts as mxfp4, the rest bf16" in out


def test_what_import_assumed_stays_with_the_spec(cli, tmp_path):
    # An unknown model_type read as Llama-style, head_dim derived: kvcalc import writes it into the
    # spec (source.assumed), and every later run on that YAML shows it among its warnings.
    import json
    from pathlib import Path

    cfg = json.loads((Path(__file__).resolve().parent / "configs" / "llama3.1-8b.json").read_text())
    cfg["model_type"] = "weirdlm"
    cfg.pop("head_dim", None)
    src = tmp_path / "config.json"
    src.write_text(json.dumps(cfg))
    r = cli("import", str(src))
    assert r.code == 0
    spec = tmp_path / "weird.yaml"
    spec.write_text(r.out)
    d = cli("size", "--model", str(spec), "--seq", "4k", "--json").json()
    joined = " ".join(d["warnings"])
    assert "unknown model_type 'weirdlm'" in joined and "head_dim missing" in joined


def test_a_hugging_face_id_reads_the_local_hub_cache(tmp_path, monkeypatch, cli):
    """--model org/name finds a config.json the Hugging Face hub cache already holds (issue 20),
    the snapshot refs/main names; nothing is fetched."""
    import json
    from pathlib import Path

    src = Path(__file__).resolve().parent / "configs"
    cfg = next(iter(sorted(src.glob("*.json"))), None) if src.is_dir() else None
    config = (
        json.loads(cfg.read_text())
        if cfg
        else {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": 2048,
            "intermediate_size": 8192,
            "num_hidden_layers": 16,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "max_position_embeddings": 131072,
            "torch_dtype": "bfloat16",
        }
    )
    root = tmp_path / "hub" / "models--acme--tiny-llama"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text("abc123")
    snap = root / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    r = cli("size", "--model", "acme/tiny-llama", "--seq", "1k", "--json")
    assert r.code == 0, r.err
    # Named as the repository, not the snapshot's revision hash (its folder).
    assert r.json()["model"] == "acme/tiny-llama"
    # Not in the cache: the offline message, exit 2.
    miss = cli("size", "--model", "acme/other-model", "--seq", "1k")
    assert miss.code == 2 and "works offline" in miss.err


def test_show_prints_a_gpus_measured_matmul_and_all_reduce_blocks(cli, monkeypatch):
    # The H100 spec's gemm block (AIConfigurator's GEMM tables fitted: 3.4 us + bytes / (0.86 x bandwidth))
    # and its all-reduce group sizes, whole at 80 columns; a GPU without them says so.
    monkeypatch.setenv("COLUMNS", "80")
    text = " ".join(cli("show", "h100-sxm").out.split())
    assert "decode matmul (measured) 3.4 us + weight bytes / (0.86 x bandwidth)" in text
    assert "all-reduce (measured) TP 2, 4, 8" in text
    d = cli("show", "h100-sxm", "--json").json()
    assert (d["spec"]["gemm"]["latency_us"], d["spec"]["gemm"]["bandwidth_share"]) == (3.4, 0.86)
    assert "decode matmul (measured) -" in " ".join(cli("show", "l40s").out.split())
    # The MI300X's block measures the math too (fp8, the two terms added): said whole.
    mi = " ".join(cli("show", "mi300x").out.split())
    assert "decode matmul (measured) 7.4 us + weight bytes / (0.58 x bandwidth), plus fp8 FLOPs / (0.28 x peak)" in mi
    # Its attention block (AIConfigurator's decode-attention tables fitted: 24.5 ns a request and KV head);
    # the H100 NVL has none.
    assert "decode attention (measured) 24.5 ns per request and KV head a call" in text
    assert d["spec"]["attention"]["request_head_ns"] == 24.5 and "attention.url" in text
    assert "decode attention (measured) -" in " ".join(cli("show", "h100-nvl").out.split())
    # Its MLA block (vLLM 0.24's MLA module at TP 8 and batch 1, 99.8 us, less five projections, the two down
    # projections run as one, at 3.4 us and four small kernels at 2.7: 72.0 us); the H100 NVL has none.
    assert round(99.8 - 5 * 3.4 - 4 * 2.7) == 72
    assert "MLA call beyond its bytes (measured) 72 us; SGLang's own call: 17 us" in text
    assert d["spec"]["mla"]["latency_us"] == 72 and "mla.url" in text
    assert "MLA call beyond its bytes (measured) -" in " ".join(cli("show", "h100-nvl").out.split())
    # Its fp8 matmuls (the same fit over the fp8 GEMM tables, less the input's quantization: 3.3 us + bytes /
    # (0.78 x bandwidth)); the A100, without fp8 units, has none.
    assert "decode matmul fp8 (measured) 3.3 us + weight bytes / (0.78 x bandwidth)" in text
    assert (d["spec"]["gemm_fp8"]["latency_us"], d["spec"]["gemm_fp8"]["bandwidth_share"]) == (3.3, 0.78)
    assert "decode matmul fp8 (measured) -" in " ".join(cli("show", "a100-80gb").out.split())


def test_show_gives_the_fp4_peak_and_the_nvfp4_matmuls_where_a_spec_has_them(cli):
    # B200: NVIDIA's 144 PFLOPS of fp4 with sparsity for 8 GPUs, 144 / 8 / 2 = 9 dense; vLLM 0.24's NVFP4 GEMMs fitted as
    # 7.9 us less the 2.7 us of the input's quantization + bytes / (0.72 x bandwidth) (gpu_specs/b200.yaml).
    r = cli("show", "b200")
    text, d = " ".join(r.out.split()), cli("show", "b200", "--json").json()
    assert "fp4 dense (NVFP4) 9.0 PFLOP/s" in text and d["spec"]["flops_fp4"] == 144e15 / 8 / 2
    assert round(7.9 - 2.7, 1) == 5.2
    assert "decode matmul NVFP4 (measured) 5.2 us + weight bytes / (0.72 x bandwidth)" in text and "gemm_fp4.url" in text
    h = " ".join(cli("show", "h200").out.split())
    assert "fp4 dense (NVFP4) -" in h and "decode matmul NVFP4 (measured) -" in h


def test_gemma_and_granite_are_counted_as_llama_layers_with_their_own_ties():
    # Gemma 7B (vLLM gemma.py): fused QKV of 16 heads x 256, o_proj, gated MLP of 24,576, two norms a
    # layer; transformers' GemmaConfig ties the embeddings by default. Google's model card: 8.54B.
    H, V, L, heads, d, inter = 3072, 256000, 28, 16, 256, 24576
    layer = H * heads * d * 3 + heads * d * H + 3 * H * inter + 2 * H
    assert resolve_model("gemma-7b").params_total == V * H + H + L * layer == 8_537_680_896
    # Granite 3.3 8B (granite.py): 32 query and 8 KV heads of 128, MLP 12,800, tied embeddings (its config).
    H, V, L, inter = 4096, 49159, 40, 12800
    layer = H * 32 * 128 + 2 * H * 8 * 128 + 32 * 128 * H + 3 * H * inter + 2 * H
    assert resolve_model("granite-3.3-8b").params_total == V * H + H + L * layer


def test_qwen2_moe_counts_its_experts_and_its_gated_shared_expert():
    # Qwen1.5-MoE-A2.7B (vLLM qwen2_moe.py): QKV with biases, 60 experts of 1,408 and a shared expert
    # of 5,632 behind a 1 x hidden gate in each of 24 layers; untied embeddings. Qwen's card: 14.3B in all.
    H, V, L, heads, d, E, Im, Ish = 2048, 151936, 24, 16, 128, 60, 1408, 5632
    attn = 3 * H * heads * d + 3 * heads * d + heads * d * H
    layer = attn + 2 * H + H * E + H + 3 * H * Ish + E * 3 * H * Im
    m = resolve_model("qwen1.5-moe-a2.7b")
    assert m.params_total == 2 * V * H + H + L * layer == 14_315_784_192
    assert m.moe is not None and (m.moe.num_experts, m.moe.num_experts_per_tok, m.moe.params_per_expert) == (60, 4, 3 * H * Im)


def test_phi_counts_its_biases_one_layernorm_and_an_ungated_mlp():
    # Phi-2 (vLLM phi.py): LayerNorm (weight + bias), QKV + bias, dense + bias, fc1 + bias of 4 x 2,560,
    # fc2 + bias, a final LayerNorm, an untied LM head with a bias. Microsoft's card: 2.7B parameters.
    H, V, L = 2560, 51200, 32
    inter = 4 * H
    layer = 2 * H + (3 * H * H + 3 * H) + (H * H + H) + (H * inter + inter) + (inter * H + H)
    m = resolve_model("phi-2")
    assert m.params_total == 2 * V * H + V + 2 * H + L * layer == 2_779_683_840
    from kvcalc.engine.kv import KVFootprint

    assert KVFootprint(m).per_token == L * 2 * 32 * 80 * 2  # K and V of 32 heads x 80 at 2 bytes, each layer


def test_gemma3_takes_transformers_defaults_for_the_heads_its_4b_config_omits():
    # google/gemma-3-4b-it's config.json names no heads: Gemma3TextConfig's defaults are 8 query and 4 KV
    # heads of 256. Its language model: tied embeddings of 262,208 x 2,560, 34 layers of Q/K/V/O, a
    # gated MLP of 10,240, four norms and Q/K norms; SigLIP's tower is counted apart.
    H, V, L, heads, kv, d, inter = 2560, 262208, 34, 8, 4, 256, 10240
    layer = H * heads * d + 2 * H * kv * d + heads * d * H + 3 * H * inter + 4 * H + 2 * d
    m = resolve_model("gemma3-4b")
    assert m.params_total == V * H + H + L * layer
    assert {k.num_attention_heads for k in m.layer_kinds.values()} == {8}
    assert {k.num_key_value_heads for k in m.layer_kinds.values()} == {4}


def test_sparse_attention_reads_the_indexer_keys_and_the_top_k_latents():
    """DeepSeek Sparse Attention: a decode token reads every cached indexer key (128 fp8 + a 4-byte
    scale) and the bf16 latents (576 x 2) of at most index_topk = 2,048 tokens, per layer; docs/formulas.md
    works DeepSeek-V3.2 at 131,072 tokens."""
    from kvcalc.engine.bound import Decode
    from kvcalc.specs.dtypes import kv_dtype

    text = " ".join((Path(__file__).parents[1] / "docs" / "formulas.md").read_text().split())
    m = resolve_model("deepseek-v3.2")
    d = Decode(m, resolve_gpu("h200"), kv_dtype("bf16"), tp=8)
    assert d.kv_request(131_072) == 61 * (131_072 * 132 + 2_048 * 1_152) == 61 * 19_660_800
    assert 131_072 * 1_284 == 168_296_448 and round(168_296_448 / 19_660_800, 1) == 8.6
    assert "131,072 x 132 + 2,048 x 1,152 = 19,660,800 B a layer" in text and "8.6 times as much" in text
    # Below the top-k every latent is read: the sparse read is the dense one.
    assert d.kv_request(1_000) == 61 * 1_000 * 1_284
    # What it holds is unchanged: every token's latent and key.
    assert d.kvfp.request_bytes(131_072) == 61 * 131_072 * 1_284
    # FLOPs a decode token: the indexer (64 heads of 128, + 1 for the heads' weighting, 2 FLOPs a
    # multiply-add, in fp8 at twice the 16-bit rate: half of it at the 16-bit peak) over every key, and
    # absorbed MLA (2 x 16 heads a rank x (2 x 512 + 64)) over the top 2,048.
    idx, mla = 2 * 64 * (128 + 1) // 2, 2 * (128 // 8) * (2 * 512 + 64)
    assert "counted as n_i x (d_i + 1) x s at the 16-bit peak" in text
    assert d.attn_flops(131_072) == 61 * (idx * 131_072 + mla * 2_048)
    assert d.attn_flops(1_000) == 61 * (idx * 1_000 + mla * 1_000)
    # A prompt of p tokens: query i attends to min(i, 2,048) keys, decompressed (2 x 16 x (128 + 64 + 128)).
    kind = m.layer_kinds["mla"]
    p, pre = 5_000, 2 * 16 * (128 + 64 + 128)
    pairs = 2_048 * 2_049 // 2 + (5_000 - 2_048) * 2_048
    assert kind.prefill_attn_flops(p, 8) == pre * pairs + idx * (5_000 * 5_001 // 2)
    # A dense MLA model (DeepSeek-V3) reads all it holds.
    v3 = Decode(resolve_model("deepseek-v3"), resolve_gpu("h200"), kv_dtype("bf16"), tp=8)
    assert v3.kv_request(131_072) == 61 * 131_072 * 1_152


def test_glm47_flash_is_mla_on_all_47_layers_and_glm47_is_glm46s_architecture():
    """GLM-4.7-Flash (glm4_moe_lite): one 512 + 64 latent a layer, 47 layers, no indexer; GLM-4.7 is
    the glm4_moe class of GLM-4.5 and 4.6 (transformers' glm4_moe docs; NVIDIA's Megatron Bridge page)."""
    m = resolve_model("zai-org/GLM-4.7-Flash")
    assert kv_size(m, 1).kv_bytes_per_token == 47 * (512 + 64) * 2 == 54_144
    assert m.moe is not None and (m.moe.num_experts, m.moe.num_experts_per_tok, m.moe.num_moe_layers) == (64, 4, 46)
    assert m.moe.params_per_expert == 3 * 2048 * 1536
    g = resolve_model("zai-org/GLM-4.7")
    assert g.name == "glm-4.6" and kv_size(g, 1).kv_bytes_per_token == 92 * 2 * 8 * 128 * 2


def test_a_checkpoint_name_is_told_the_base_model_it_holds_first():
    """A quantized or fine-tuned checkpoint's name holds its base model's: 'Qwen3-30B-A3B-Thinking-2507-AWQ-4bit'
    is nearest qwen3-30b-a3b (before qwen3-vl-30b-a3b, which it does not hold); a typo is told as before."""
    from kvcalc.specs.catalog import suggest

    assert suggest("model", "Qwen3-30B-A3B-Thinking-2507-AWQ-4bit")[0] == "qwen3-30b-a3b"
    assert suggest("model", "Qwen2.5-Coder-32B-Instruct-AWQ")[0] == "qwen2.5-32b"
    assert suggest("model", "gemma-3-27b-it-qat-q4_0")[0] == "gemma3-27b"
    assert suggest("model", "llama3.1-8bb")[0] == "llama3.1-8b"


def test_qwen35_is_qwen3_nexts_hybrid_with_a_dense_or_sparse_mlp_and_an_fp32_recurrent_state():
    """Qwen3.5-27B (tests/configs/qwen3.5-27b.json): 64 layers, every fourth full attention (16) of 24 query and 4 KV
    heads of 256, the other 48 Gated DeltaNet with 16 key and 48 value heads of 128 and a 4-tap convolution; the config's
    mamba_ssm_dtype float32 keeps the recurrent state in fp32 under vLLM 0.22.1 (model_executor/models/config.py
    Qwen3_5ForConditionalGenerationConfig), the conv state in bf16."""
    m = resolve_model("qwen3.5-27b")
    assert resolve_model("Qwen/Qwen3.5-27B") == m
    assert m.layer_counts() == {"linear": 48, "attn": 16}
    conv_channels = 2 * 16 * 128 + 48 * 128  # q and k of the key heads, v of the value heads
    assert conv_channels == 10_240
    assert m.layer_kinds["linear"].state_bytes == (4 - 1) * 10_240 * 2 + 48 * 128 * 128 * 4 == 3_207_168
    # KV: 16 layers x 4 KV heads x 256 x (K and V) x 2 B.
    assert kv_size(m, 1).kv_bytes_per_token == 16 * 4 * 256 * 2 * 2 == 65_536
    # Parameters, counted by hand from the same config: embeddings and an untied head of 248,320 x 5,120; a gated MLP
    # of 3 x 5,120 x 17,408 in all 64 layers; a gated attention layer: q and its gate 2 x 24 x 256, k and v 2 x 4 x 256,
    # each x 5,120, o 24 x 256 x 5,120, q and k norms of 256; a Gated DeltaNet layer: in_proj_qkvz 5,120 x (2 x 2,048 +
    # 2 x 6,144), in_proj_ba 5,120 x 2 x 48, conv 10,240 x 4, dt_bias and A_log 48 each, its norm 128, out_proj
    # 6,144 x 5,120; two RMSNorms a layer and the final one.
    H, V, I = 5120, 248_320, 17_408
    attn = H * (2 * 24 * 256 + 2 * 4 * 256) + 24 * 256 * H + 2 * 256
    gdn = H * (2 * 2048 + 2 * 6144) + H * 2 * 48 + 10_240 * 4 + 2 * 48 + 128 + 6144 * H
    total = 2 * V * H + 16 * attn + 48 * gdn + 64 * (3 * H * I + 2 * H) + H
    assert m.params_total == total == 26_895_998_464
    # Its ViT: Qwen3-VL's class without deepstack mergers (27 blocks of 1,152, a 4,304 MLP, out to 5,120): a Conv3d
    # patch embedding with its bias, 2,304 learned positions, blocks of two LayerNorms, qkv, proj and fc1/fc2 with
    # biases, the final norm and the merger (4 x 1,152 -> 4 x 1,152 -> 5,120).
    w, i, mw = 1152, 4304, 4 * 1152
    block = 2 * 2 * w + (w * 3 * w + 3 * w) + (w * w + w) + (2 * w * i + i + w)
    vit = 3 * 2 * 16 * 16 * w + w + 2304 * w + 27 * block + 2 * w + (mw * mw + mw) + (mw * 5120 + 5120)
    assert m.vision_params == vit == 460_730_096
    assert m.vision is not None and m.vision.encoder == "qwen3_vl" and m.vision.deepstack == 0

    moe = resolve_model("qwen3.5-35b-a3b")
    assert moe.layer_counts() == {"linear": 30, "attn": 10}
    assert moe.layer_kinds["linear"].state_bytes == 3 * (2 * 16 * 128 + 32 * 128) * 2 + 32 * 128 * 128 * 4 == 2_146_304
    assert moe.moe is not None and (moe.moe.num_experts, moe.moe.num_experts_per_tok, moe.moe.num_moe_layers) == (256, 8, 40)
    assert moe.moe.params_per_expert == 3 * 2048 * 512
    assert kv_size(moe, 1).kv_bytes_per_token == 10 * 2 * 256 * 2 * 2 == 20_480


def test_a_qwen35_config_naming_an_unknown_recurrent_dtype_is_refused(tmp_path, cli):
    cfg = json.loads((CONFIGS / "qwen3.5-27b.json").read_text())
    cfg["text_config"]["mamba_ssm_dtype"] = "float8"
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = cli("size", "--model", str(tmp_path / "config.json"), "--seq", "4096")
    assert r.code == 2 and "Traceback" not in r.err
    assert r.err.count("\n") == 1 and "mamba_ssm_dtype 'float8' is not one of float32, bfloat16, float16" in r.err


def test_a_text_only_qwen35_config_and_a_model_dtype_state_without_mamba_ssm_dtype(tmp_path, cli):
    """A qwen3_5_text config at the top level (a text-only export) imports as the same language model; without
    mamba_ssm_dtype its whole state is in the model's dtype, as Qwen3-Next's."""
    cfg = json.loads((CONFIGS / "qwen3.5-27b.json").read_text())["text_config"]
    del cfg["mamba_ssm_dtype"]
    d, warnings = spec_dict_from_config(cfg, "config.json")
    assert warnings == [] and d["architecture"] == "qwen3_5_text"
    assert d["params_total"] == 26_895_998_464 and "vision_params" not in d
    assert d["layer_kinds"]["linear"]["state_bytes"] == (3 * 10_240 + 48 * 128 * 128) * 2


def test_ernie_4_5_21b_a3b_counts_as_its_config_and_llama_cpp_say():
    """ERNIE-4.5-21B-A3B (ernie4_5_moe): the first layer dense, 27 of 64 experts of 1,536 (top 6) with two shared
    experts as one MLP of 3,072; llama.cpp's load of its GGUF prints "model params = 21.83 B" (tests/configs/README.md)."""
    m = resolve_model("ernie-4.5-21b-a3b")
    H, V, L, E, Im = 2560, 103424, 28, 64, 1536
    attn = H * 20 * 128 + 2 * H * 4 * 128 + 20 * 128 * H
    moe = H * E + E + 3 * H * 2 * Im + E * 3 * H * Im  # router and its correction bias, shared experts, routed experts
    total = V * H + H + L * (attn + 2 * H) + 3 * H * 12288 + 27 * moe  # tied embeddings, final norm, dense layer 0
    assert m.params_total == total == 21_825_437_888 and f"{total / 1e9:.2f}" == "21.83"
    assert (m.moe.num_moe_layers, m.moe.num_experts, m.moe.num_experts_per_tok) == (27, 64, 6)
    assert m.layer_kinds["attn"].kv_bytes_per_token(BF16, 1, LOGICAL) == 2 * 4 * 128 * 2


@pytest.mark.parametrize(
    "field,value,says",
    [
        ("moe_layer_end_index", "abc", "field 'moe_layer_end_index' is 'abc'"),
        ("moe_layer_end_index", -5, "field 'moe_layer_end_index' is -5"),
        ("moe_layer_start_index", 40, "no sparse layer: moe_layer_start_index 40 to moe_layer_end_index 27 every 1 of 28"),
        ("moe_k", 99, "moe_k (99) is more than moe_num_experts (64)"),
        ("moe_num_experts", 0, "field 'moe_num_experts' is 0"),
    ],
)
def test_a_broken_ernie_config_is_refused_in_one_line(field, value, says):
    c = json.loads((CONFIGS / "ernie-4.5-21b-a3b.json").read_text())
    c[field] = value
    with pytest.raises(KvcalcError) as e:
        spec_dict_from_config(c, "test", name="x")
    assert says in str(e.value) and "\n" not in str(e.value)


def test_ernie_moe_layer_end_index_minus_one_or_missing_means_the_last_layer():
    c = json.loads((CONFIGS / "ernie-4.5-21b-a3b.json").read_text())
    want = spec_dict_from_config(c, "test", name="x")[0]["moe"]["num_moe_layers"]
    c["moe_layer_end_index"] = -1
    assert spec_dict_from_config(c, "test", name="x")[0]["moe"]["num_moe_layers"] == want == 27
    del c["moe_layer_end_index"]
    assert spec_dict_from_config(c, "test", name="x")[0]["moe"]["num_moe_layers"] == 27
