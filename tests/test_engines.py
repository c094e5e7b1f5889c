"""Engine records: version parsing, the rules that differ between releases, and kvcalc engines."""

from pathlib import Path

import pytest

from conftest import one_line_error
from kvcalc.engine.engines import ENGINES, engine
from kvcalc.engine.kv import engine_allocation, request_bytes
from kvcalc.errors import KvcalcError
from kvcalc.specs.catalog import resolve_gpu, resolve_model


@pytest.mark.parametrize(
    "spelling, key",
    [
        ("vllm", "vllm@0.33"),
        ("vLLM", "vllm@0.33"),
        ("vllm@0.11", "vllm@0.11"),
        ("vllm@0.14.1", "vllm@0.14"),
        ("vllm@0.13.0", "vllm@0.12"),
        ("vllm@0.16.0", "vllm@0.15"),
        ("vllm@0.17.0", "vllm@0.17"),
        ("vllm@0.11.2", "vllm@0.11"),
        ("vllm@0.8.5", "vllm@0.8.5"),
        ("vllm@0.8.5.post1", "vllm@0.8.5"),
        ("vllm@0.8.4", "vllm@0.8.4"),
        ("vllm@0.8.3", "vllm@0.8"),
        ("vllm@0.8.0", "vllm@0.8"),
        ("vllm==0.9.2", "vllm@0.9"),
        ("vllm==0.9.0", "vllm@0.9"),
        ("vllm-0.6", "vllm@0.6"),
        ("vllm@0.7.0", "vllm@0.7.0"),
        ("vllm@0.7.1", "vllm@0.7"),
        ("vllm@0.7.2", "vllm@0.7.2"),
        ("vllm@0.5.5", "vllm@0.5"),
        ("vllm==0.6.0", "vllm@0.6"),
        ("vllm@0.7.3", "vllm@0.7.3"),
        ("vllm@0.5.2", "vllm@0.4"),
        ("vllm@0.5.3", "vllm@0.5"),
        ("vllm@0.2.4", "vllm@0.4"),
        ("vllm@0.18.1", "vllm@0.18"),
        ("vllm@0.24", "vllm@0.21"),
        ("vllm@0.30.2", "vllm@0.33"),
        ("vllm v0.10.1.post1", "vllm@0.10"),
        # Four-number releases and pre-, dev- and local versions, as pip and the banners print them.
        ("vllm@0.10.1.1", "vllm@0.10"),
        ("vllm==0.9.0.1", "vllm@0.9"),
        ("vllm@0.10.2rc1", "vllm@0.10"),
        ("vllm@0.7.4.dev181+gf35f8e22", "vllm@0.7.3"),
        ("vllm@0.6.3.post2.dev308+gb489fc3c", "vllm@0.6"),
        # Each 0.3 and 0.4 release to the record of its default mem_fraction_static (server_args.py of each), 0.4.0 to
        # 0.4.4 also by the Triton MLA decode each launches (Engine.triton_mla_splits).
        ("sglang@0.4.3.post4", "sglang@0.4.2.post2"),
        ("sglang@0.4.0", "sglang@0.4.0"),
        ("sglang@0.4.1", "sglang@0.4.1"),
        ("sglang@0.4.1.post6", "sglang@0.4.1"),
        # 0.4.1.post7 keeps the overlap scheduler under DP attention (server_args.py of 0.4.1.post6 and .post7).
        ("sglang@0.4.1.post7", "sglang@0.4.1.post7"),
        ("sglang@0.4.2.post1", "sglang@0.4.1.post7"),
        ("sglang@0.4.2.post2", "sglang@0.4.2.post2"),
        ("sglang@0.4.4", "sglang@0.4.2.post2"),
        ("sglang==0.3.0", "sglang@0.3"),
        ("sglang@0.3.6", "sglang@0.3.6"),
        # 0.4.5.post1 to 0.4.5.post2 apart by their FlashAttention 3 MLA default on Hopper (model_runner.py).
        ("sglang@0.4.5.post2", "sglang@0.4.5.post1"),
        ("sglang@0.4.5.post1", "sglang@0.4.5.post1"),
        ("sglang@0.4.5", "sglang@0.4.4.post4"),
        ("sglang@0.4.4.post4", "sglang@0.4.4.post4"),
        ("sglang@0.4.5.post3", "sglang@0.4.5.post3"),
        ("sglang@0.4.6.post1", "sglang@0.4.5.post3"),
        ("sglang@0.4.6.post2", "sglang@0.4"),
        ("trtllm@1.2.0rc1", "trtllm@1.2"),
        ("sglang", "sglang@0.5"),
        ("sglang==0.4.9", "sglang@0.4.9"),
        # 0.4.7 to 0.5.2 (server_args.py of 0.4.7, 0.4.7.post1, 0.4.8, 0.4.9, 0.4.10.post1, 0.5.1 and 0.5.2).
        ("sglang@0.4.6.post5", "sglang@0.4"),
        ("sglang@0.4.7", "sglang@0.4.7"),
        ("sglang@0.4.7.post1", "sglang@0.4.7.post1"),
        ("sglang@0.4.10.post2", "sglang@0.4.9.post3"),
        ("sglang@0.4.9.post3", "sglang@0.4.9.post3"),
        ("sglang@0.5.0rc2", "sglang@0.5.2"),
        ("sglang@0.5.2", "sglang@0.5.2"),
        ("sglang@0.5.3", "sglang@0.5.3"),
        ("sglang@0.5.3.post3", "sglang@0.5.3"),
        # 0.5.4 and 0.5.5 one record until 2026-12-06: 0.5.4.post1 on runs DeepSeek's fp8 experts on FlashInfer's
        # TensorRT-LLM MoE kernel on B200 (server_args.py of 0.5.4, 0.5.4.post1 to post3, 0.5.5, 0.5.5.post1 and post3).
        ("sglang@0.5.4", "sglang@0.5.4"),
        ("sglang@0.5.4rc1", "sglang@0.5.4"),
        ("sglang@0.5.4.post1", "sglang@0.5.5"),
        ("sglang@0.5.4.post3", "sglang@0.5.5"),
        ("sglang@0.5.5", "sglang@0.5.5"),
        ("sglang@0.5.5.post3", "sglang@0.5.5"),
        ("sglang@0.5.6", "sglang@0.5.6"),
        ("sglang@0.5.6.post2", "sglang@0.5.6"),
        ("sglang@0.5.7", "sglang@0.5.8"),
        ("sglang@0.5.8", "sglang@0.5.8"),
        ("sglang@0.5.9", "sglang@0.5.9"),
        ("trtllm", "trtllm@1.2"),
        ("tensorrt-llm==1.0.0", "trtllm@1.2"),
        ("transformers", "hf"),
    ],
)
def test_engine_spellings(spelling, key):
    assert engine(spelling).key == key


def test_unknown_releases_and_names_are_refused():
    with pytest.raises(KvcalcError, match="no rules for vllm 0.1"):
        engine("vllm@0.1")
    # An untagged development build of main is no release kvcalc has read.
    with pytest.raises(KvcalcError, match="no rules for vllm 0.1.dev7548"):
        engine("vllm@0.1.dev7548+gbaba038")
    with pytest.raises(KvcalcError, match="did you mean"):
        engine("vlm")


def test_family_name_is_the_current_record():
    assert ENGINES["vllm"] is ENGINES["vllm@0.33"] and ENGINES["sglang"] is ENGINES["sglang@0.5"]


def test_current_vllm_reserves_two_batches_in_flight_for_sliding_layers():
    """0.33: min(w - 1 + 2 x 8,192, S) tokens in blocks, + 1; 0.11: one batch of 8,192."""
    m = resolve_model("mistral-7b-v0.1")  # 32 sliding layers of 4,096, 8 KV heads x 128
    per_layer_token = 2 * 8 * 128 * 2
    now = engine_allocation(engine("vllm"), m, batched_tokens=8192)
    old = engine_allocation(engine("vllm@0.11"), m, batched_tokens=8192)
    assert request_bytes(m, 32768, alloc=now) == 32 * (-(-(4095 + 16384) // 16) + 1) * 16 * per_layer_token
    assert request_bytes(m, 32768, alloc=old) == 32 * (-(-(4095 + 8192) // 16) + 1) * 16 * per_layer_token
    # With pipeline parallelism the V2 runner keeps PP + 1 batches in flight.
    assert engine_allocation(engine("vllm"), m, batched_tokens=8192, pp=2).window_slack == 3 * 8192


def test_vllm_011_stores_llama4_chunked_layers_as_full_attention():
    m = resolve_model("llama4-scout")  # 36 chunked (8,192) + 12 full layers, 8 KV heads x 128
    old = engine_allocation(engine("vllm@0.11"), m, batched_tokens=8192)
    assert request_bytes(m, 65536, alloc=old) == 48 * 65536 * 2 * 8 * 128 * 2
    now = engine_allocation(engine("vllm"), m, batched_tokens=8192)
    assert request_bytes(m, 65536, alloc=now) == (36 * (8192 + 16384) + 12 * 65536) * 2 * 8 * 128 * 2


def test_vllm_v0_keeps_every_token_and_pads_mla_heads():
    g = resolve_model("gemma2-9b")  # 42 layers, half sliding (4,096), 8 KV heads x 256
    v0 = engine_allocation(engine("vllm@0.6"), g)
    assert request_bytes(g, 8192, alloc=v0) == 42 * 8192 * 2 * 8 * 256 * 2
    d = resolve_model("deepseek-v2-lite")  # 27 MLA layers, 16 heads: cached as per-head K and V padded to 256
    assert request_bytes(d, 1, alloc=engine_allocation(engine("vllm@0.6"), d)) == 27 * 16 * 2 * 256 * 2 * 16
    assert request_bytes(d, 16, alloc=engine_allocation(engine("vllm"), d)) == 27 * (512 + 64) * 2 * 16


def test_vllm_072_aligns_mla_entries_to_256_bytes_on_cuda():
    """vLLM 0.7.2 and 0.7.3 (worker/cache_engine.py _align_cache, get_cache_block_size) round each token's
    MLA entry up to 256 B of the 16-bit model dtype on CUDA; 0.7.1 and 0.8 do not."""
    d = resolve_model("deepseek-v3")  # 61 MLA layers, latent 512 + 64 = 576 elements
    padded = -(-576 // 128) * 128
    assert padded == 640
    for spelling in ("vllm@0.7.2", "vllm@0.7.3", "vllm==0.7.3"):
        alloc = engine_allocation(engine(spelling), d)
        assert request_bytes(d, 16, alloc=alloc) == 61 * padded * 2 * 16
        # The alignment counts elements of the model's dtype; an fp8 cache keeps 640 of them at a byte each.
        assert request_bytes(d, 16, "fp8", alloc=alloc) == 61 * padded * 16
    for spelling in ("vllm@0.7.1", "vllm@0.8.0"):
        assert request_bytes(d, 16, alloc=engine_allocation(engine(spelling), d)) == 61 * 576 * 2 * 16
    # Not on ROCm (_align_cache asks current_platform.is_cuda()).
    rocm = engine("vllm@0.7.3").allocation(None, 0, d, "AMD")
    assert request_bytes(d, 16, alloc=rocm) == 61 * 576 * 2 * 16
    # docs/engines.md's check against dzhsurf's 0.7.3 log: 9,442 blocks for 10.99 GiB.
    doc = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    per_block = 10.99 * 2**30 / 9442
    assert (round(per_block), round(per_block / 16 / 61, 1)) == (1_249_780, 1280.5)
    assert "logs 9,442 blocks for 10.99 GiB: 1,249,780 B a block, 1,280.5 B a token a layer" in doc
    assert "DeepSeek's 576 elements take 640, 78,080 B a token over 61 layers in 16 bits where the latent is 70,272" in doc


def test_each_engine_gives_the_uneven_layers_of_a_pipeline_to_its_own_stages():
    """vLLM to 0.7.3 gives every layer left over to the last stage and 0.8.0 on one each to the stages
    before the last (vllm/distributed/utils.py get_pp_indices); SGLang to 0.5.5 as vLLM 0.7, from 0.5.6
    one each to the last stages (sglang/srt/distributed/utils.py); TensorRT-LLM one each to the first
    (tensorrt_llm/mapping.py pp_layers, torch.tensor_split)."""
    from kvcalc.engine.kv import pp_partition

    # 32 layers over 3 stages: 10 each and 2 left over.
    assert pp_partition(32, 3, "before-last") == [11, 11, 10]
    assert pp_partition(32, 3, "last") == [10, 10, 12]
    assert pp_partition(32, 3, "last-n") == [10, 11, 11]
    assert pp_partition(32, 3, "first-n") == [11, 11, 10]
    # torch.tensor_split(range(46), 4): 12, 12, 11, 11.
    assert pp_partition(46, 4, "first-n") == [12, 12, 11, 11]
    rules = {e: engine(e).pp_split for e in ("vllm@0.6.3", "vllm@0.7.3", "vllm@0.8.0", "vllm", "sglang@0.4.9", "sglang@0.5.5")}
    assert rules == {
        "vllm@0.6.3": "last",
        "vllm@0.7.3": "last",
        "vllm@0.8.0": "before-last",
        "vllm": "before-last",
        "sglang@0.4.9": "last",
        "sglang@0.5.5": "last",
    }
    assert [engine(e).pp_split for e in ("sglang@0.5.6", "sglang@0.5.14", "sglang", "trtllm")] == ["last-n"] * 3 + ["first-n"]
    docs = Path(__file__).parent.parent / "docs"
    formulas = " ".join((docs / "formulas.md").read_text().split())
    assert "32 layers over 3 stages: [11, 11, 10] (vLLM 0.8 on, TensorRT-LLM), [10, 10, 12] (vLLM 0.7), [10, 11, 11]" in formulas
    engines_doc = " ".join((docs / "engines.md").read_text().split())
    assert pp_partition(62, 4, "last") == [15, 15, 15, 17] and max(pp_partition(62, 4, "before-last")) == 16
    assert "62 layers at PP 4 put 17 on the last stage under vLLM 0.7 and at most 16 under 0.8" in engines_doc
    # dzhsurf's 0.7.3 start at PP 2 (tests/logs/real): stages of 24.04 and 26.67 GiB, DeepSeek-V3's 61 layers
    # (3 dense) split 30 / 31 with the extra layer last.
    assert pp_partition(61, 2, "last") == [30, 31] and round(26.67 - 24.04, 2) == 2.63
    assert (
        "loads 2.63 GiB more on its second stage than on its first: 31 MoE layers against three dense and 27 MoE" in engines_doc
    )
    # The busiest stage's KV: Llama-3.1-8B (32 layers, 8 KV heads x 128, bf16: 4,096 B a layer a token) at PP 3.
    m = resolve_model("llama3.1-8b")
    per_layer = 2 * 8 * 128 * 2
    for e, layers in (("vllm@0.7.3", 12), ("vllm@0.8.0", 11), ("sglang@0.5.6", 11), ("trtllm", 11)):
        # 32 tokens: whole blocks of 16 (vLLM) and 32 (TensorRT-LLM), and SGLang's token-granular pool.
        assert request_bytes(m, 32, pp=3, alloc=engine_allocation(engine(e), m, pp=3)) == layers * 32 * per_layer, e


def test_a_dense_mla_models_blocks_follow_the_releases_default_backend():
    """vllm/platforms/cuda.py forced FlashMLA's 64 on Hopper (0.8.0 to 0.9.2), CUTLASS MLA's 128 on
    compute capability 10 (0.10 to 0.14), FlashInfer MLA's 64 there for a qk_nope_head_dim of 128 (0.15 to
    0.17); from 0.18 the chosen backend's smallest kernel block where 16 is not one: FlashAttention MLA's
    16 on Hopper, FlashInfer MLA's 32 on compute capability 10."""
    ds, glm = resolve_model("deepseek-v3"), resolve_model("glm-4.7-flash")  # qk_nope_head_dim 128 and 192
    # Release, GPU and the block: across the records and the GPU families they treat apart.
    cases = [
        ("vllm@0.8.4", "h100", 64),
        ("vllm@0.9.2", "h200", 64),
        ("vllm@0.9.2", "b200", 16),
        ("vllm@0.10.1", "b200", 128),
        ("vllm@0.14", "h200", 64),
        ("vllm@0.16", "b200", 64),
        ("vllm@0.17", "h100", 64),
        ("vllm@0.19", "h200", 16),
        ("vllm@0.20", "b200", 32),
        ("vllm", "gb200", 32),
        ("vllm", "a100", 16),
        ("vllm@0.7.3", "h100", 16),
    ]
    got = [(e, g, engine(e).block_size_for(ds, "NVIDIA", resolve_gpu(g).name)) for e, g, _ in cases]
    assert got == cases
    assert engine("vllm@0.16").block_size_for(glm, "NVIDIA", "b200") == 128
    assert engine("vllm").block_size_for(glm, "NVIDIA", "b200") == 32
    # Not on AMD, nor for a model without MLA, nor where a sparse-MLA rule applies.
    assert engine("vllm@0.11").block_size_for(ds, "AMD", "mi300x") == 16
    assert engine("vllm@0.11").block_size_for(resolve_model("llama3.1-8b"), "NVIDIA", "h100-sxm") == 16
    assert engine("vllm@0.11").block_size_for(resolve_model("deepseek-v3.2"), "NVIDIA", "h200") == 64
    doc = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    # Kimi-K2 on 8 H200s under 0.11 logs 715,072 tokens: 11,173 blocks of 64 (715,088 was 44,693 of 16).
    assert 715_072 == 11_173 * 64 and 715_088 == 44_693 * 16
    assert "logs 715,072 tokens, 11,173 blocks of 64, which its own figures now give to the token" in doc


def test_engines_command_lists_records_and_differences(cli):
    d = cli("engines", "--json").json()
    keys = [e["key"] for e in d["engines"]]
    assert keys[:22] == [
        "vllm@0.33",
        "vllm@0.21",
        "vllm@0.20",
        "vllm@0.18",
        "vllm@0.17",
        "vllm@0.15",
        "vllm@0.14",
        "vllm@0.12",
        "vllm@0.11",
        "vllm@0.10",
        "vllm@0.9",
        "vllm@0.8.5",
        "vllm@0.8.4",
        "vllm@0.8",
        "vllm@0.7.0-v1",
        "vllm@0.7.3",
        "vllm@0.7.2",
        "vllm@0.7",
        "vllm@0.7.0",
        "vllm@0.6",
        "vllm@0.5",
        "vllm@0.4",
    ]
    by = {e["key"]: e for e in d["engines"]}
    # 0.7.0 had no MLA (config.py use_mla arrived in 0.7.1): its V0 and its opt-in V1 cache DeepSeek as per-head K and V
    # of the query-key head size (config.py get_head_size, models/deepseek_v2.py, read in 0.7.0), decoded per head, and
    # its V1 has no MLA block rule (one attention backend, v1/attention/backends/flash_attn.py).
    assert by["vllm@0.7.0-v1"]["differs_from_next_newer"] == ["mla_storage", "dense_mla"]
    assert by["vllm@0.7.0"]["differs_from_next_newer"] == ["mla_storage", "mla_fp8_only"]
    # 0.7.1 and 0.7.2 keep MLA only for a checkpoint in 16 bits or fp8; 0.7.3 for any (config.py use_mla).
    assert by["vllm@0.7.2"]["differs_from_next_newer"] == ["mla_fp8_only"]
    assert by["vllm@0.7.2"]["rules"]["mla_fp8_only"] == "yes" and by["vllm@0.7.3"]["rules"]["mla_fp8_only"] == "no"
    assert by["vllm@0.7.0"]["rules"]["mla_storage"] == "per-head K and V, V padded to the query-key head size"
    # V1's batch defaults by release (engine/arg_utils.py, read in 0.8.0, 0.8.2 to 0.8.5 and 0.9.0).
    for key in ("vllm@0.8.5", "vllm@0.8.4", "vllm@0.8"):
        assert by[key]["differs_from_next_newer"] == ["batched_tokens_default"], key
    assert "in_flight" in by["vllm@0.21"]["differs_from_next_newer"]
    assert "chunked_as_full" in by["vllm@0.14"]["differs_from_next_newer"]
    # The start-up check at PP > 1 took the whole model's layers in 0.14.0 to 0.16.0 only
    # (v1/core/kv_cache_utils.py get_kv_cache_configs; per worker in 0.13.0 and from 0.17.0).
    # And from 0.18.0 an fp8 cache of a sparse-MLA model follows the attention backend (layers/attention/
    # mla_attention.py; FlashInfer's sparse MLA backend, first on compute capability 10 at <= 16 heads a GPU,
    # keeps standard fp8), where 0.15 and 0.16 always store fp8_ds_mla.
    # And 0.15 and 0.16 run MiniMax-M2's block-fp8 experts on FlashInfer's TensorRT-LLM kernel on compute capability
    # 10, which 0.17 and 0.18 do not (fused_moe/oracle/fp8.py, engines.VLLM_FLASHINFER_MOE; since 2026-12-06).
    assert by["vllm@0.15"]["differs_from_next_newer"] == ["pp_start_check", "sparse_mla_fp8_by_backend", "flashinfer_moe"]
    # 0.14 takes that kernel only with VLLM_USE_FLASHINFER_MOE_FP8 set (fused_moe/oracle/fp8.py, 0.14.0 and 0.14.1).
    assert "flashinfer_moe" in by["vllm@0.14"]["differs_from_next_newer"]
    assert by["vllm@0.14"]["rules"]["flashinfer_moe"] == "no"
    # 0.12 and 0.13 check per stage, and --max-model-len auto arrived in 0.14.0 (engine/arg_utils.py
    # human_readable_int_or_auto).
    # And 0.13.0 runs 16-bit experts through fused_experts, whose caches go with the pass; 0.14.0's modular
    # kernel keeps its workspaces (v1/worker/workspace.py). And 0.14.0 schedules ahead by default
    # (vllm/config/vllm.py: async_scheduling None turns on), which 0.13.0's config/scheduler.py leaves off.
    assert by["vllm@0.12"]["differs_from_next_newer"] == [
        "pp_start_check",
        "auto_max_model_len",
        "moe_workspace_held",
        "async_scheduling",
    ]
    # 0.11.x differs from 0.12 to 0.14 in the vision encoder's profile: the cached embeddings padded
    # to the encoder budget, and Qwen3-VL's video counted at its formatted tokens (gpu_model_runner.py and
    # qwen3_vl.py, 0.11.0 to 0.11.2 against 0.12.0 to 0.14.0); and 0.11.0 alone stores DeepSeek-V3.2's
    # cache as fp8_ds_mla under kv_cache_dtype auto (models/config.py, 0.11.0 against 0.11.1).
    assert by["vllm@0.11"]["differs_from_next_newer"] == [
        "encoder_cache_padded",
        "video_tokens_formatted",
        "sparse_mla_auto_fp8",
    ]
    assert by["vllm@0.11"]["rules"]["sparse_mla_auto_fp8"] == "fp8_ds_mla in 0.11.0, bf16 in the rest"
    assert by["vllm@0.10"]["rules"]["kv_cache_memory_flag"] == "from 0.10.2"
    # 0.8 to 0.10 differ from 0.11 in the vision encoder's profile (q and k rotated one at a time; no
    # padding; no Qwen3-VL; a dummy video of at most 16 frames within max_model_len less an image), in
    # kv_cache_memory_bytes (0.10.2 on), and in having no DeepSeek-V3.2 rules (it arrived in 0.11.0: its
    # fp8_ds_mla under auto, and the 64-token blocks platforms/cuda.py forces for sparse MLA).
    assert by["vllm@0.10"]["differs_from_next_newer"] == [
        "vision_profile",
        "encoder_cache_padded",
        "video_frames_cap",
        "video_frames_less_image",
        "video_tokens_formatted",
        "kv_cache_memory_flag",
        "sparse_mla_auto_fp8",
        "sparse_mla_block",
    ]
    assert by["vllm@0.11"]["rules"]["sparse_mla_block"] == "64 tokens" == by["vllm@0.33"]["rules"]["sparse_mla_block"]
    assert by["vllm@0.10"]["rules"]["video_frames_cap"] == "16 frames"
    assert by["vllm@0.12"]["rules"]["video_frames_cap"] == "14 frames"
    # V0's host costs (the step-time model's): 4 ms a step from 0.2 to 0.7, and before async output
    # processing (3.4 - 0.2) ms / 31 requests = 0.103 ms a request (vllm-project/vllm#6913).
    assert by["vllm@0.6"]["rules"]["host_step_s"] == "4 ms"
    assert by["vllm@0.5"]["differs_from_next_newer"] == ["v0_chunking", "host_per_request_s"]
    # 0.5.3 turned chunked prefill on by default above 32k tokens (engine/arg_utils.py); 0.2 to 0.5.2 never.
    # NCCL's NVLS buffers are counted for 0.5 to 0.7 only (NCCL 2.20 and 2.21 with two TP communicators).
    assert by["vllm@0.4"]["differs_from_next_newer"] == ["v0_chunking", "nvls_mib_per_rank"]
    nvls = [by[k]["rules"]["nvls_mib_per_rank"] for k in ("vllm@0.10", "vllm@0.7", "vllm@0.6", "vllm@0.5", "vllm@0.4")]
    assert nvls == [
        "not counted apart",
        "2 communicators x 144 MiB a rank",
        "2 communicators x 288 MiB a rank",
        "2 communicators x 288 MiB a rank",
        "not counted apart",
    ]
    assert by["vllm@0.4"]["rules"]["v0_chunking"].startswith("off")
    # 0.7.0 raised V0's chunk to 2,048 tokens (config.py SchedulerConfig) and cached MLA latents from 0.7.1.
    assert "2,048 with chunked prefill" in by["vllm@0.7"]["rules"]["batched_tokens_default"]
    assert "512 with chunked prefill" in by["vllm@0.6"]["rules"]["batched_tokens_default"]
    assert by["vllm@0.5"]["rules"]["host_per_request_s"] == f"{round((3.4 - 0.2) / 31, 3):g} ms"
    assert by["vllm@0.33"]["differs_from_next_newer"] == []
    out = cli("engines").out
    assert "vllm@0.33" in out and "sglang@0.5" in out and "trtllm@1.2" in out


def test_bad_engine_on_the_command_line_is_one_line(cli):
    r = cli("fit", "--model", "llama2-7b", "--gpu", "h100", "--seq", "4k", "--engine", "vllm@0.1")
    one_line_error(r, "no rules for vllm 0.1")


@pytest.mark.parametrize(
    "name,needle", [("vllm@9.9", "0.33"), ("vllm@0.34", "0.33"), ("sglang@0.6", "0.5"), ("trtllm@2.0", "1.x")]
)
def test_a_release_newer_than_any_read_is_refused(cli, name, needle):
    # Rules kvcalc has not read are not assumed: the line names the newest release read and the records.
    line = one_line_error(cli("fit", "--seq", "4k", "--engine", name), "--engine", needle)
    assert "for the newest rules" in line


def test_a_patch_release_of_a_known_one_takes_its_rules():
    assert engine("vllm@0.33.1").key == "vllm@0.33" and engine("sglang@0.5.23").key == "sglang@0.5"


def test_max_num_seqs_under_pp_is_per_scheduler():
    # vLLM 0.6.5 (V0): a scheduler per virtual engine, pp of them, each admitting up to max_num_seqs
    # (engine/llm_engine.py builds pipeline_parallel_size Schedulers; core/scheduler.py SchedulingBudget
    # num_curr_seqs <= max_num_seqs). vLLM 0.11.0 (V1): one scheduler, len(self.running) <=
    # max_num_running_reqs = max_num_seqs over every batch the batch queue holds. SGLang 0.5.3:
    # max_micro_batch_size = max_running_requests // pp_size. DP ranks each schedule their own.
    v0, v1, sgl = engine("vllm@0.6.5"), engine("vllm@0.11"), engine("sglang@0.5.3")
    assert [v0.seqs_in_flight(256, pp) for pp in (1, 2, 4)] == [256, 512, 1024]
    assert [v1.seqs_in_flight(256, pp) for pp in (1, 2, 4)] == [256, 256, 256]
    assert [sgl.seqs_in_flight(2048, pp) for pp in (1, 2, 4)] == [2048, 2048, 2048]
    assert v1.seqs_in_flight(1024, 2, dp=4) == 4096 and v0.seqs_in_flight(256, 2, dp=2) == 1024


def test_sglang_runs_prompts_first_with_its_own_batch_defaults():
    # SGLang 0.4.6.post5 and 0.5.3: scheduler.py get_next_batch_to_run runs a prefill batch first when
    # one forms and decodes otherwise (enable_mixed_chunk False); max_running_requests is the smaller of
    # half the token pool and max(pool / context x 512, 2,048) up to 4,096 request slots; the prefill
    # chunk is chunked_prefill_size by the GPU's memory (server_args.py).
    GiB = 2**30
    s05, s04, v = engine("sglang@0.5"), engine("sglang@0.4"), engine("vllm@0.11")
    assert not s05.mixes_prefill and not s04.mixes_prefill and v.mixes_prefill
    assert s05.default_num_seqs(80 * GiB, "h100-sxm") == s04.default_num_seqs(24 * GiB, "l4") == 2048
    # 0.5.3 to 0.5.19 (sglang@0.5.9): 2,048 under 35 GiB; 0.5.20 on (sglang@0.5): 2,048 only under 20 GiB.
    s059 = engine("sglang@0.5.9")
    for total, tokens in ((22 * GiB, 2048), (40 * GiB, 4096), (79 * GiB, 8192), (140 * GiB, 8192), (180 * GiB, 16384)):
        assert s059.default_batched_tokens(total, "x", 4096) == tokens, total
    for total, tokens in ((16 * GiB, 2048), (22 * GiB, 4096), (40 * GiB, 4096), (79 * GiB, 8192), (180 * GiB, 16384)):
        assert s05.default_batched_tokens(total, "x", 4096) == tokens, total
    assert s04.default_batched_tokens(24_000 * 2**20, "l4", 4096) == 2048
    assert s04.default_batched_tokens(26_000 * 2**20, "x", 4096) == 8192


@pytest.mark.parametrize(
    "eng,model,gpu,max_len,budget,want",
    [
        # 0.2 to 0.5.2: enable_chunked_prefill False (engine/arg_utils.py, 0.5.2): prompts whole, the
        # budget max(max_model_len, 2048), whatever the length.
        ("vllm@0.2.4", "llama3.1-8b", "h100", 131072, None, (131072, False)),
        # 0.5.3 to 0.6: on above 32,768 tokens on a CUDA device without sliding windows, 512 tokens a step.
        ("vllm@0.5.4", "llama3.1-8b", "h100", 131072, None, (512, True)),
        ("vllm@0.5.4", "llama3.1-8b", "h100", 32768, None, (32768, False)),
        ("vllm@0.5.4", "gemma3-27b", "h100", 131072, None, (131072, False)),
        ("vllm@0.5.4", "llama3.2-11b-vision", "h100", 131072, None, (512, True)),
        ("vllm@0.6.3", "llama3.1-8b", "mi300x", 131072, None, (512, True)),
        # 0.6.3 leaves multimodal models off.
        ("vllm@0.6.3", "llama3.2-11b-vision", "h100", 131072, None, (131072, False)),
        # 0.7: 2,048 tokens a step; off on ROCm (0.7.0) and for MLA models (0.7.3, forced off).
        ("vllm@0.7.3", "llama3.1-8b", "h100", 131072, None, (2048, True)),
        ("vllm@0.7.3", "llama3.1-8b", "mi300x", 131072, None, (131072, False)),
        ("vllm@0.7.3", "deepseek-v3", "h200", 163840, None, (163840, False)),
        # A budget under max_model_len is only possible with chunked prefill on (SchedulerConfig._verify_args).
        ("vllm@0.6.3", "llama3.1-8b", "h100", 8192, 2048, (2048, True)),
        ("vllm@0.6.3", "llama3.1-8b", "h100", 8192, 16384, (16384, False)),
        # V1 always chunks beside decodes; SGLang runs prompts first.
        ("vllm@0.11", "llama3.1-8b", "h100", 8192, None, (8192, True)),
        ("sglang@0.5", "llama3.1-8b", "h100", 8192, None, (8192, False)),
    ],
)
def test_vllm_v0_chunks_prompts_by_release_model_and_gpu(eng, model, gpu, max_len, budget, want):
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    assert engine(eng).schedule(resolve_model(model), resolve_gpu(gpu), max_len, budget) == want


@pytest.mark.parametrize(
    "eng, max_len, budget, chunked, want",
    [
        # --no-enable-chunked-prefill: whole prompts in steps of their own, max(max_model_len, 2,048) tokens
        # (0.6.5's config.py SchedulerConfig and core/scheduler.py _schedule_default), where 0.6.3 at
        # 131,072 tokens on MI300X defaults to 512-token chunks beside the decodes (the dstack runs).
        ("vllm@0.6.3", 131072, None, False, (131072, False)),
        ("vllm@0.6.3", 1024, None, False, (2048, False)),
        ("vllm@0.6.3", 131072, 262144, False, (262144, False)),
        # --enable-chunked-prefill where the default is off (0.7 on ROCm): the release's chunk.
        ("vllm@0.7.3", 131072, None, True, (2048, True)),
        ("vllm@0.6.3", 131072, None, None, (512, True)),
    ],
)
def test_v0_chunked_prefill_as_given(eng, max_len, budget, chunked, want):
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    m, g = resolve_model("llama3.1-405b-fp8"), resolve_gpu("mi300x")
    assert engine(eng).schedule(m, g, max_len, budget, chunked_prefill=chunked) == want


def test_chunked_prefill_by_hand_is_refused_where_not_modelled_or_impossible(cli):
    from kvcalc.errors import KvcalcError
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    m, g = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    for name in ("vllm@0.11", "vllm", "sglang@0.5"):
        with pytest.raises(KvcalcError, match="not modelled with chunked prefill set by hand"):
            engine(name).schedule(m, g, 8192, chunked_prefill=False)
    # V0 refuses a budget under max_model_len without chunked prefill (config.py _verify_args).
    with pytest.raises(KvcalcError, match="below max_model_len 8,192 without chunked prefill"):
        engine("vllm@0.6").schedule(m, g, 8192, 2048, chunked_prefill=False)
    base = ("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "--requests", "50", "--policies", "paged-16")
    for args, want in (
        (("--no-chunked-prefill",), "vLLM 0.33 is not modelled with chunked prefill set by hand (--chunked-prefill)"),
        (("--engine", "vllm@0.6", "--no-chunked-prefill", "--max-num-batched-tokens", "512"), "is below max_model_len"),
    ):
        r = cli(*base, *args)
        assert r.code == 2 and want in r.err and len(r.err.strip().splitlines()) == 1, r.err
    d = cli(*base, "--engine", "vllm@0.6", "--no-chunked-prefill", "--json").json()
    assert any(
        "waiting prompts first, as prefill steps of their own" in a and "chunked prefill off" in a for a in d["assumptions"]
    )
    assert d["prompts_beside_decodes"] is False
    assert cli(*base, "--engine", "vllm@0.6", "--chunked-prefill", "--json").json()["prompts_beside_decodes"] is True


def test_fit_says_why_v0_profiles_the_tokens_it_does(cli):
    # DeepSeek-V3 under 0.7.3: MLA forces chunked prefill off, so the profile runs max_model_len tokens;
    # Llama-3.1-8B under 0.6.3 at 131,072 tokens: on, a 512-token chunk. The reason names both.
    def activation(*args: str) -> dict:
        d = cli("fit", *args, "--json").json()
        return next(e for e in d["estimates"] if e["key"] == "activation")

    a = activation("--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--seq", "163840", "--engine", "vllm@0.7.3")
    assert a["reason"].startswith("a forward pass over 163,840 tokens") and "chunked prefill is off by default" in a["reason"]
    a = activation("--model", "llama3.1-8b", "--gpu", "h100", "--seq", "131072", "--engine", "vllm@0.6.3")
    assert a["reason"].startswith("a forward pass over 512 tokens") and "chunked prefill is on by default" in a["reason"]
    # A budget given is the user's: no default to explain.
    a = activation(
        "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8k", "--engine", "vllm@0.6.3", "--max-num-batched-tokens", "4096"
    )
    assert "by default" not in a["reason"]


def test_the_accepted_line_names_every_record():
    """The one-line error for a release kvcalc has no rules for lists every record there is."""
    from kvcalc.engine.engines import ACCEPTED, ENGINE_LIST

    for e in ENGINE_LIST:
        assert e.key in ACCEPTED or (e.aliases and e.aliases[0] in ACCEPTED), e.key


def test_vllm_020_defaults_to_092_and_subtracts_its_cuda_graph_estimate():
    # vllm 0.20.0: config/cache.py gpu_memory_utilization default 0.92; envs.py
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default "1" (0.19.0: 0.9 and "0").
    e20, e19 = engine("vllm==0.20.0"), engine("vllm==0.19.0")
    assert (e20.key, e20.default_util, e20.cudagraph) == ("vllm@0.20", 0.92, "estimate")
    assert (e19.key, e19.default_util, e19.cudagraph) == ("vllm@0.18", 0.9, "after")
    # 0.20.0 still logs "GPU KV cache size" from the blocks, as 0.19.0 does (0.21.0: concurrency x length).
    assert e20.tokens_report == e19.tokens_report == "blocks-per-group"
    assert engine("vllm==0.21.0").tokens_report == "concurrency-x-length"


def test_the_cuda_graph_estimate_on_rocm_from_0_26():
    # vllm 0.20.0 to 0.25.0 profile the graphs only off ROCm (gpu_worker.py: `not current_platform.is_rocm()`,
    # then `current_platform.is_cuda()`); 0.26.0 on, `is_cuda_alike()`: ROCm too.
    from kvcalc.engine.memory import FitInputs, fit
    from kvcalc.specs.catalog import resolve_gpu

    m = resolve_model("llama3.1-8b")

    def graphs(release: str, gpu: str) -> int:
        r = fit(m, resolve_gpu(gpu), FitInputs(seq=8192, engine=engine(release)))
        # No estimate at all (a reserve of 0) where vLLM makes none.
        return next((e.best for e in r.estimates if e.key == "cudagraph"), 0)

    assert graphs("vllm==0.21.0", "mi300x") == graphs("vllm==0.20.0", "mi300x") == 0
    r = fit(m, resolve_gpu("mi300x"), FitInputs(seq=8192, engine=engine("vllm==0.21.0")))
    assert "cudagraph" not in [b.key for b in r.budget]
    assert graphs("vllm==0.21.0", "h100") == graphs("vllm==0.33.0", "mi300x") == 512 * 2**20


@pytest.mark.parametrize(
    "release, gpu, want",
    [
        # vLLM's _set_default_args_v1 (engine/arg_utils.py) as read in each release: (max_num_batched_tokens,
        # max_num_seqs) for the OpenAI server.
        ("vllm@0.8.2", "h100-nvl", (8192, 1024)),  # "h100" in the device name
        ("vllm@0.8.2", "a100-80gb", (2048, 1024)),  # 1,024 requests on every GPU to 0.8.3
        ("vllm@0.8.3", "l40s", (2048, 1024)),
        ("vllm@0.8.4", "l40s", (2048, 256)),
        ("vllm@0.8.4", "b200", (2048, 256)),  # by name: a B200 is not an H100 or H200
        ("vllm@0.8.5", "b200", (8192, 1024)),  # by memory from 0.8.5
        ("vllm@0.8.5", "a100-80gb", (8192, 1024)),  # an A100 80GB included in 0.8.5 only
        ("vllm@0.9.0", "a100-80gb", (2048, 256)),  # vllm-project/vllm#17885
        ("vllm@0.9.0", "h20", (8192, 1024)),
    ],
)
def test_v1_batch_defaults_by_release(release, gpu, want):
    from kvcalc.specs.catalog import resolve_gpu

    e, g = engine(release), resolve_gpu(gpu)
    total = g.memory_runtime_bytes
    assert (e.default_batched_tokens(total, g.name, 8192), e.default_num_seqs(total, g.name)) == want


def test_only_vllm_v1_takes_a_prompts_blocks_chunk_by_chunk():
    """v1/core/kv_cache_manager.py allocate_slots (0.8.2, 0.11.0, 0.16.0) against V0's
    core/block_manager.py can_allocate (0.6.5) and SGLang's PrefillAdder: Engine.prompt_blocks."""
    from kvcalc.engine.engines import ENGINE_LIST

    v1 = {e.key for e in ENGINE_LIST if e.name == "vllm" and e.v0_chunking == "none"}
    assert {"vllm@0.8", "vllm@0.11", "vllm@0.33"} <= v1
    assert {e.key for e in ENGINE_LIST if e.prompt_blocks == "chunk"} == v1


def test_each_sglang_record_says_how_it_sets_its_default_fraction():
    """kvcalc engines: every SGLang record's default-fraction rule in words, and a record whose table differs from
    the next newer one's only at TP 8 (0.3.6's 0.82 beside 0.4.0's 0.81) says so."""
    from kvcalc.engine.engines import ENGINE_LIST, engines_report

    rows = {r.key: r for r in engines_report().engines}
    for e in ENGINE_LIST:
        if e.name == "sglang":
            assert rows[e.key].rules["default_util"] not in ("", "-"), e.key
    assert rows["sglang@0.3.6"].rules["default_util"] == "a table by TP, 0.82 at TP 8"
    assert "default_util" in rows["sglang@0.3.6"].differs_from_next_newer


def test_a_record_named_by_fewer_numbers_is_its_first_release():
    # vllm@0.8 holds 0.8.0 to 0.8.3: as old as 0.8.0, older than 0.8.4; suffixes after the numbers are dropped.
    assert not engine("vllm@0.8").older_than(0, 8, 0) and engine("vllm@0.8").older_than(0, 8, 4)
    assert not engine("vllm@0.8.4").older_than(0, 8, 4) and engine("vllm@0.7.3").older_than(0, 8, 0)
    assert not engine("sglang@0.4.6.post5").older_than(0, 4) and engine("vllm@0.12").older_than(0, 14)
    assert not engine("vllm@0.14").older_than(0, 14)


def test_a_familys_current_record_is_its_series_newest():
    # sglang@0.5 covers 0.5.20 and later (its rules read from 0.5.23): no older than any 0.5.x, where a bare "0.5"
    # read as 0.5.0 made three rules (the DP flags' spelling, SGLang's own MLA call on B200, the retraction depth)
    # spell the exception out. sglang@0.5.19, the record before it, keeps its own release; so does a copy of the current
    # record with another field set (its key is the same).
    import dataclasses

    cur = engine("sglang")
    assert cur.version == "0.5" and not cur.older_than(0, 5, 22) and not cur.older_than(0, 5, 2) and cur.older_than(0, 6)
    assert engine("sglang@0.5.19").older_than(0, 5, 22) and not dataclasses.replace(cur, moe_backend="trtllm").older_than(
        0, 5, 22
    )
    # Another family's current record likewise, and an older record named by two numbers is still its series' first.
    assert not engine("vllm").older_than(0, 33, 1) and engine("vllm@0.18").older_than(0, 18, 1)


@pytest.mark.parametrize(
    ("release", "record", "want"),
    [
        # server_args.py __post_init__ under enable_dp_attention: chunked_prefill_size // 2 (0.3.6 to 0.4.4) ...
        ("sglang@0.3.6", "sglang@0.3.6", 8192 // 2),
        ("sglang@0.4.0", "sglang@0.4.0", 8192 // 2),
        ("sglang@0.4.1", "sglang@0.4.1", 8192 // 2),
        ("sglang@0.4.4", "sglang@0.4.2.post2", 8192 // 2),
        # ... and chunked_prefill_size // dp_size from 0.4.4.post1 (through 0.5.23's arg_groups/parallel_hook.py).
        ("sglang@0.4.4.post1", "sglang@0.4.4.post1", 8192 // 8),
        ("sglang@0.4.4.post3", "sglang@0.4.4.post1", 8192 // 8),
        ("sglang@0.4.6.post5", "sglang@0.4", 8192 // 8),
        ("sglang@0.5.6", "sglang@0.5.6", 8192 // 8),
        ("sglang", "sglang@0.5", 8192 // 8),
        # vLLM's DP ranks are engines of their own, each with the whole budget.
        ("vllm@0.11", "vllm@0.11", 8192),
    ],
)
def test_sglang_divides_its_prompt_chunk_among_dp_attention_ranks(release, record, want):
    e = engine(release)
    assert e.key == record
    assert e.rank_batched_tokens(8192, 8) == want
    assert e.rank_batched_tokens(8192, 1) == 8192  # one rank: no DP attention, no division


def test_dp_attention_is_refused_before_sglang_0_3_6(cli):
    # --enable-dp-attention is in 0.3.6's server_args.py and not in 0.3.5's.
    from kvcalc.engine.deployment import Shape, check_shape

    m = resolve_model("deepseek-v3")
    check_shape(m, Shape(1, 1, 8, 1), engine("sglang@0.3.6"))
    with pytest.raises(KvcalcError, match="predates --enable-dp-attention"):
        check_shape(m, Shape(1, 1, 8, 1), engine("sglang@0.3.5"))
    r = cli("fit", "--model", "deepseek-v3", "--gpu", "h200", "--seq", "4k", "--dp", "8", "--engine", "sglang@0.3.5")
    one_line_error(r, "predates --enable-dp-attention", "sglang@0.3.6 or later")


def test_a_posted_dp_attention_run_prints_the_divided_chunk():
    """docs/engines.md: a posted run's --chunked-prefill-size 65536 at DP 8 printed as 8192 in its server_args line."""
    doc = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    assert "`--chunked-prefill-size 65536` printed as `chunked_prefill_size=8192` in its `server_args=` line" in doc
    assert engine("sglang").rank_batched_tokens(65536, 8) == 8192


def test_vllms_sparse_mla_kernel_runs_a_multiple_of_64_heads_on_hopper():
    # vLLM from 0.11 on Hopper with a 16-bit cache: FlashMLA's sparse kernel takes a multiple of 64 query heads a rank,
    # the query zero-padded up to it (flashmla_sparse.py: 0.11.0 _forward_bf16_kv, 0.16.0 and 0.22.1
    # _bf16_flash_mla_kernel). GLM-5 (64 heads) at TP 8 has 8 a rank and runs 64; DeepSeek-V3.2 (128) at TP 8, 16 -> 64;
    # at TP 1, 128 heads are already a multiple.
    from kvcalc.engine.engines import engine

    v16 = engine("vllm@0.16")
    assert [v16.sparse_mla_heads(h, "h200", 16) for h in (8, 16, 64, 128)] == [64, 64, 64, 128]
    assert engine("vllm@0.11").sparse_mla_heads(8, "h100-sxm", 16) == 64
    # Compute capability 10: a multiple of 128 (0.11.0 is_device_capability(100), 0.16.0 and 0.22.1
    # is_device_capability_family(100)); the only sparse backend to 0.16, first above 16 heads a rank from 0.17
    # (FlashInfer's first at 16 or fewer, not read: 0).
    assert [v16.sparse_mla_heads(h, "b200", 16) for h in (8, 16, 128)] == [128, 128, 128]
    v22 = engine("vllm@0.22")
    assert [v22.sparse_mla_heads(h, g, 16) for h, g in ((16, "b200"), (32, "gb200"), (16, "h200"))] == [0, 128, 64]
    # Not read, or not this kernel: before 0.11, SGLang, an fp8 cache, a GPU it does not run on.
    assert engine("vllm@0.10").sparse_mla_heads(8, "h200", 16) == 0
    assert engine("sglang@0.5.9").sparse_mla_heads(8, "h200", 16) == 0
    assert v16.sparse_mla_heads(8, "h200", 8) == 0
    assert v16.sparse_mla_heads(8, "a100-80gb", 16) == 0


def test_engines_says_which_sglang_0_4_records_price_their_fixed_split_triton_mla_decode(cli):
    # Engine.triton_mla_splits: --triton-attention-num-kv-splits, 8, and 16 on ROCm from 0.4.2.post2 (server_args.py);
    # 0.4.1 to 0.4.2.post1 priced on Hopper only (their ROCm tile changed within them), 0.4.0 another kernel.
    d = cli("engines", "--json").json()
    words = {e["key"]: e["rules"]["triton_mla_splits"] for e in d["engines"] if e["key"].startswith("sglang@0.4")}
    assert words["sglang@0.4.2.post2"] == "8 splits a request on Hopper; 16 on the MI300X and MI325X"
    assert words["sglang@0.4.1"] == words["sglang@0.4.1.post7"] == "8 splits a request on Hopper"
    assert words["sglang@0.4.0"] == words["sglang@0.4.4.post1"] == "-"
    rows = {e["key"]: e for e in d["engines"]}
    # Each record differs from the next newer one by this rule alone (0.4.1's from 0.4.1.post7's by the overlap
    # scheduler under DP attention: test below).
    assert rows["sglang@0.4.1.post7"]["differs_from_next_newer"] == ["triton_mla_splits"]
    # 0.4.0 also keeps the default host time a kernel of an eager forward: no posted step of it was timed
    # (0.4.1 to 0.4.5.post2 take SGLang's own, Engine.host_kernel_s).
    assert rows["sglang@0.4.0"]["differs_from_next_newer"] == ["host_kernel_s", "triton_mla_splits"]


def test_sglang_keeps_its_overlap_scheduler_under_dp_attention_from_0_4_1_post7(cli):
    # server_args.py: "Overlap scheduler is disabled." with enable_dp_attention from 0.3.6 to 0.4.1.post6, gone from
    # 0.4.1.post7 (read in each wheel from 0.4.1 to 0.4.4.post3); the scheduler turns it off for embedding and multimodal
    # models only.
    modes = {k: engine(k).async_scheduling for k in ("sglang@0.4.0", "sglang@0.4.1.post6", "sglang@0.4.1.post7")}
    assert modes == {"sglang@0.4.0": "pp1-no-dp", "sglang@0.4.1.post6": "pp1-no-dp", "sglang@0.4.1.post7": "pp1"}
    assert engine("sglang@0.4.3.post2").async_scheduling == engine("sglang@0.4.4.post3").async_scheduling == "pp1"
    rows = {e["key"]: e for e in cli("engines", "--json").json()["engines"]}
    assert rows["sglang@0.4.1"]["differs_from_next_newer"] == ["async_scheduling"]
    assert rows["sglang@0.4.1"]["rules"]["async_scheduling"] == "yes, at PP 1 without DP attention"
    assert rows["sglang@0.4.1.post7"]["rules"]["async_scheduling"] == "yes, at PP 1"


def test_engines_says_where_sglang_records_decode_mla_with_triton_unasked(cli):
    # model_runner.py's default for an MLA model: Triton to 0.4.5; FlashAttention 3 on Hopper from 0.4.5.post1
    # (SGLANG_BEFORE_FA3_MLA); FlashInfer on compute capability 10 and AITER on AMD GPUs at 16 or 128 heads a GPU from
    # 0.4.7 (SGLANG_BEFORE_0_4_7: 0.4.6.post5 has neither, 0.4.7 and 0.4.7.post1 both). The 0.4.4.post4 record (to 0.4.5)
    # differs from 0.4.5.post1's by this rule alone, 0.4.6.post2 to 0.4.6.post5's from 0.4.7's by it and the memory
    # rules 0.4.7 changed.
    d = cli("engines", "--json").json()
    rows = {e["key"]: e for e in d["engines"]}
    words = {k: r["rules"]["mla_decode_triton"] for k, r in rows.items()}
    assert words["sglang@0.4.4.post4"] == words["sglang@0.4.0"] == "on every GPU"
    assert words["sglang@0.4.5.post1"] == words["sglang@0.4"] == "on every GPU but Hopper (FlashAttention 3)"
    assert (
        words["sglang@0.4.7"]
        == words["sglang@0.5.9"]
        == (
            "on every GPU but Hopper (FlashAttention 3), compute capability 10 and AMD GPUs holding 16 or 128 heads a GPU (AITER)"
        )
    )
    assert words["vllm@0.11"] == "-"
    assert rows["sglang@0.4.4.post4"]["differs_from_next_newer"] == ["mla_decode_triton"]
    assert "mla_decode_triton" in rows["sglang@0.4"]["differs_from_next_newer"]


def test_engines_says_which_sglang_records_run_fp8_experts_on_flashinfers_moe_kernel_and_keep_a_state_pool(cli, monkeypatch):
    # SGLANG_FLASHINFER_MOE: DeepSeek's class from 0.5.4.post1 (server_args.py of 0.5.4.post1 to 0.5.5.post3; 0.5.4 only
    # for modelopt_fp4), the Qwen3 MoE classes from 0.5.6, GLM-5 from 0.5.9, DeepSeek-V3.2 from 0.5.12 (the
    # 0.5.10-0.5.12 record follows 0.5.10 and 0.5.11, which lack it). The 0.5.4 record differs from the next by this
    # rule alone; until 2026-12-06 0.5.4 and 0.5.5 were one record, and 0.5.6 and 0.5.3 listed no difference at all,
    # their state-pool rules having no row.
    d = cli("engines", "--json").json()
    rows = {e["key"]: e for e in d["engines"]}
    moe = {k: r["rules"]["flashinfer_moe"] for k, r in rows.items()}
    assert moe["sglang@0.5.4"] == moe["sglang@0.5.3"] == moe["sglang@0.4"] == "no"
    assert moe["sglang@0.5.5"] == "DeepSeek-V3/R1, Kimi-K2"
    assert moe["sglang@0.5.6"] == moe["sglang@0.5.8"] == "DeepSeek-V3/R1, Kimi-K2, Qwen3-MoE, Qwen3-VL-MoE, Qwen3-Next"
    five = "DeepSeek-V3/R1, Kimi-K2, GLM-5, Qwen3-MoE, Qwen3-VL-MoE, Qwen3-Next, Qwen3.5-MoE"
    assert moe["sglang@0.5.9"] == moe["sglang@0.5.12"] == five
    assert (
        moe["sglang@0.5.14"] == moe["sglang@0.5.19"] == moe["sglang@0.5"] == five.replace("Kimi-K2,", "Kimi-K2, DeepSeek-V3.2,")
    )
    assert moe["vllm@0.11"] == "no" and moe["trtllm@1.2"] == "-"
    # vLLM from 0.15, block-fp8 checkpoints: DeepSeek's grouped sigmoid router (GLM-4.5/4.6 and GLM-5 use it too) and
    # Qwen3's softmax one; MiniMax-M2's biased top-k but in 0.17 to 0.19 (engines.VLLM_FLASHINFER_MOE).
    grouped = "DeepSeek-V3/R1, Kimi-K2, DeepSeek-V3.2, GLM-5, GLM-4.5/4.6, Qwen3-MoE, Qwen3-VL-MoE"
    assert moe["vllm@0.33"] == moe["vllm@0.15"] == grouped + ", MiniMax-M2 (block-fp8 checkpoints)"
    assert moe["vllm@0.17"] == moe["vllm@0.18"] == grouped + " (block-fp8 checkpoints)"
    assert moe["vllm@0.14"] == "no"
    # 16-bit experts (engines.SGLANG_FLASHINFER_MOE_BF16): SGLang's Qwen branches from 0.5.9, DeepSeek's list from 0.5.14,
    # GLM-4.5/4.6 from 0.5.16.
    bf16 = {k: r["rules"]["flashinfer_moe_bf16"] for k, r in rows.items()}
    qwen = "Qwen3-MoE, Qwen3-VL-MoE, Qwen3-Next, Qwen3.5-MoE"
    assert bf16["sglang@0.5.8"] == "no" and bf16["sglang@0.5.9"] == bf16["sglang@0.5.12"] == qwen
    assert bf16["sglang@0.5.14"] == "DeepSeek-V3/R1, Kimi-K2, DeepSeek-V3.2, GLM-5, " + qwen
    assert bf16["sglang@0.5.16"] == bf16["sglang@0.5"] == "DeepSeek-V3/R1, Kimi-K2, DeepSeek-V3.2, GLM-5, GLM-4.5/4.6, " + qwen
    # vLLM from 0.20 (engines.VLLM_FLASHINFER_MOE_BF16): DeepSeek's router and the softmax one, Mixtral's too.
    assert bf16["vllm@0.18"] == "no"
    assert (
        bf16["vllm@0.20"]
        == bf16["vllm@0.33"]
        == ("DeepSeek-V3/R1, Kimi-K2, DeepSeek-V3.2, GLM-5, GLM-4.5/4.6, " + qwen + ", Mixtral")
    )
    # NVFP4 experts (engines.VLLM_FLASHINFER_MOE_FP4, SGLANG_FLASHINFER_MOE_FP4): vLLM from 0.15 for DeepSeek's router and
    # Qwen3's softmax one; SGLang from 0.5.10 (the sglang@0.5.12 record) for the DeepSeek, Qwen3-MoE and GLM-4.5/4.6 hooks.
    fp4 = {k: r["rules"]["flashinfer_moe_fp4"] for k, r in rows.items()}
    assert fp4["vllm@0.14"] == fp4["sglang@0.5.9"] == "no" and fp4["trtllm@1.2"] == "-"
    assert fp4["vllm@0.15"] == fp4["vllm@0.33"] == grouped
    assert fp4["sglang@0.5.12"] == fp4["sglang@0.5"] == "DeepSeek-V3/R1, Kimi-K2, GLM-4.5/4.6, Qwen3-MoE"
    assert rows["sglang@0.5.4"]["differs_from_next_newer"] == ["flashinfer_moe"]
    assert "flashinfer_moe" in rows["sglang@0.5.5"]["differs_from_next_newer"]
    pool = {k: r["rules"]["state_pool"] for k, r in rows.items()}
    assert pool["sglang@0.5.3"] == pool["sglang@0.5.2"] == "--max-running-requests or 512, the radix cache off"
    ratio = "0.9 : 1 of the memory after the weights, states to tokens; with the radix cache off, "
    assert pool["sglang@0.5.6"] == ratio + "--max-running-requests or 512; the ratio's divided among DP-attention ranks too"
    assert pool["sglang@0.5.8"] == ratio + "--max-running-requests or 512"
    assert pool["sglang@0.5.16"] == ratio + "the ratio's unless --max-running-requests"
    assert pool["sglang@0.5"] == ratio + "the ratio's unless --max-running-requests; 1 padding slot"
    assert pool["sglang@0.4.9.post3"] == pool["vllm@0.11"] == "-"
    for key in ("sglang@0.5.6", "sglang@0.5.3"):
        assert rows[key]["differs_from_next_newer"] == ["state_pool"], key
    # At 80 columns every older record's difference keeps its label and its words whole.
    monkeypatch.setenv("COLUMNS", "80")
    out = cli("engines").out
    assert max(len(line) for line in out.splitlines()) <= 80
    text = " ".join(out.split())
    assert (
        "sglang@0.5.4 (0.5.4; as 0.5.5 but DeepSeek-V3's fp8 experts on the default MoE runner on B200, read from 0.5.4): fp8 experts on FlashInfer's TensorRT-LLM MoE kernel (B200, GB200): no"
        in text
    )
    assert (
        "a Gated DeltaNet model's state slots: "
        + ratio
        + "--max-running-requests or 512; the ratio's divided among DP-attention ranks too"
        in text
    )


def test_engines_names_the_host_time_a_kernel_and_v0s_capture_length(cli, monkeypatch):
    # Engine.host_kernel_s: SGLang 0.4.1 to 0.4.5.post2 take their posted prompt steps' 91 us a kernel (179.55 ms over
    # 1,980 kernels); Engine.decode_graph_max_len: V0's decode graphs stop at max_seq_len_to_capture, 8,192 tokens.
    d = cli("engines", "--json").json()
    rules = {e["key"]: e["rules"] for e in d["engines"]}
    assert round(179.55e-3 / 1980 * 1e6) == 91
    assert rules["sglang@0.4.4.post4"]["host_kernel_s"] == rules["sglang@0.4.1"]["host_kernel_s"] == "91 us"
    assert rules["sglang@0.4.0"]["host_kernel_s"] == rules["sglang@0.5.6"]["host_kernel_s"] == "the step model's default"
    assert rules["vllm@0.6"]["decode_graph_max_len"] == "8,192 tokens (max_seq_len_to_capture; max_model_len if less)"
    assert (
        rules["vllm@0.4"]["decode_graph_max_len"]
        == rules["vllm@0.7.2"]["decode_graph_max_len"]
        == rules["vllm@0.6"]["decode_graph_max_len"]
    )
    assert rules["vllm@0.11"]["decode_graph_max_len"] == rules["sglang@0.5.6"]["decode_graph_max_len"] == "-"
    # The text says it whole at 80 columns, beside the rule's name.
    monkeypatch.setenv("COLUMNS", "80")
    text = " ".join(cli("engines").out.split())
    assert "host time to issue a kernel, eager: 91 us" in text
    assert (
        "decode graphs while the longest sequence is at most: 8,192 tokens (max_seq_len_to_capture; max_model_len if less)"
        in text
    )


def test_the_sglang_host_kernel_paragraph_is_as_the_step_model_prices_it():
    # docs/engines.md: DeepSeek-V3's 1,000-token prompt step at TP 8 on H200s under 0.4.4.post4: the scheduler's 0.5 ms
    # and 4 us, then 1,980 kernels at 91 us: 180.7 ms (83.7 at the default's 42 us).
    from pathlib import Path

    from kvcalc.engine.steptime import StepModel
    from kvcalc.specs.catalog import resolve_gpu, resolve_model
    from kvcalc.specs.dtypes import kv_dtype

    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "engines.md").read_text().split())
    m, g = resolve_model("deepseek-v3"), resolve_gpu("h200")
    steps = [
        StepModel(m, g, kv_dtype("bf16"), 8, engine=engine(k)).step(0, 0, 1000, 1000).t_step_s
        for k in ("sglang@0.4.4.post4", "sglang@0.4.0")
    ]
    assert round(0.5 + 0.004 + 1980 * 0.091, 1) == round(steps[0] * 1e3, 1) == 180.7
    assert round(steps[1] * 1e3, 1) == 83.7
    assert "prompt step of DeepSeek-V3 at TP 8 on H200s is 180.7 ms at 1,000 tokens (83.7 ms before" in text
    assert "91 us a kernel (`engines.SGLANG_HOST_KERNEL_S`)" in text


def test_vllm_070_caches_deepseek_per_head_and_its_steps_read_what_it_caches(cli):
    # vLLM 0.7.0 had no MLA (config.py's use_mla arrived in 0.7.1): get_head_size returns qk_nope + qk_rope for
    # deepseek_v2 and deepseek_v3 and DeepseekV2Attention pads v to that head size (models/deepseek_v2.py, read in
    # 0.7.0), for its V0 and its opt-in V1 alike. DeepSeek-V3 (128 heads, qk 128 + 64, v 128, latent 512 + 64) at TP 8,
    # a bf16 cache: 16 heads x (192 + 192) x 2 B = 12,288 B a layer, where 0.7.1 caches the latent, (512 + 64) x 2 =
    # 1,152 B on every rank, and 0.6 pads both to 256: 16 x (256 + 256) x 2 = 16,384 B.
    assert engine("vllm@0.7.0").key == "vllm@0.7.0" and engine("vllm==0.7.0").key == "vllm@0.7.0"
    assert engine("vllm@0.7.1").key == "vllm@0.7" and engine("vllm@0.7.0+v1").key == "vllm@0.7.0-v1"

    def size(e):
        return cli("size", "--model", "deepseek-v3", "--seq", "1k", "--tp", "8", "--engine", e, "--json").json()

    per_layer = {
        e: size(e)["layers"][0]["bytes_per_token_per_layer"] for e in ("vllm@0.7.0", "vllm@0.7.0-v1", "vllm@0.7", "vllm@0.6")
    }
    assert per_layer == {"vllm@0.7.0": 12_288, "vllm@0.7.0-v1": 12_288, "vllm@0.7": 1_152, "vllm@0.6": 16_384}
    # Per-head K and V are split over the TP ranks: no "latent on every rank" warning, and the assumption says so.
    for e, latent in (("vllm@0.7.0", False), ("vllm@0.6", False), ("vllm@0.7", True)):
        d = size(e)
        assert any("every tensor-parallel rank holds a full copy" in w for w in d["warnings"]) is latent, e
        said = " ".join(d["assumptions"])
        assert ("the MLA latent is replicated on every rank" in said) is latent, e
        assert ("each rank holds the K and V of its num_attention_heads // tp heads" in said) is not latent, e
        assert d["layers"][0]["description"].startswith("MLA cached as per-head") is not latent, e
    # plan says how TP splits the cache as the release keeps it.
    for e, said in (
        ("vllm@0.7.0", "TP splits KV heads (an MLA layer's per-head K and V too, as this release caches them)"),
        ("vllm@0.7", "TP splits KV heads (an MLA latent is kept whole on every TP rank)"),
    ):
        args = ("--model", "deepseek-v3", "--gpus", "h200", "--rate", "1", "--prompt", "1000", "--output", "200")
        a = cli("plan", *args, "--ttft", "2s", "--tpot", "100ms", "--engine", e, "--json").json()["assumptions"]
        assert any(said in x for x in a), e

    # A decode step reads what the release caches: 64 requests of 1,024 tokens over 61 layers.
    def row(e):
        args = ("--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--batch", "64", "--seq", "1k", "--engine", e)
        return cli("roofline", *args, "--json").json()["rows"][0]

    r070, r071, r06 = row("vllm@0.7.0"), row("vllm@0.7"), row("vllm@0.6")
    assert r070["kv_bytes_read"] == 64 * 1024 * 61 * 12_288
    assert r071["kv_bytes_read"] == 64 * 1024 * 61 * 1_152
    assert r06["kv_bytes_read"] == 64 * 1024 * 61 * 16_384
    # And attends over those heads: 2 FLOPs a multiply-add over each key's and value's elements, padding included,
    # so 0.6's 256 + 256 against 0.7.0's 192 + 192 (their matmuls alike: both decode per head, nothing materialized).
    assert r06["weight_bytes_read"] == r070["weight_bytes_read"]
    assert r06["flops"] - r070["flops"] == 64 * 61 * 2 * 16 * (512 - 384) * 1024
    # And says so, where the compute term's line speaks of the absorbed form.
    for e, dims in (("vllm@0.7.0", "192 and 192"), ("vllm@0.6", "256 and 256"), ("vllm@0.7", None)):
        args = ("--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--batch", "64", "--seq", "1k", "--engine", e)
        said = [a for a in cli("roofline", *args, "--json").json()["assumptions"] if a.startswith("MLA as ")]
        assert said == (
            []
            if dims is None
            else [
                f"MLA as {engine(e).label} caches it: per-head K and V of {dims} elements, which each decode token reads whole and attends over as any attention (not the absorbed form)"
            ]
        ), e
    # 0.7.0 turns chunked prefill on by the long-context rule (MLA, which forces it off from 0.7.1, is not on).
    ds = resolve_model("deepseek-v3")
    assert engine("vllm@0.7.0").chunks_prefill(ds, 163_840) and not engine("vllm@0.7").chunks_prefill(ds, 163_840)
    doc = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    assert "192 + 192 elements a head, 12,288 B a layer a token on each of 8 GPUs in 16 bits where the latent takes 1,152" in doc


def test_an_engine_that_caches_mla_per_head_runs_its_attention_as_any_attention():
    # Per-head K and V (vLLM 0.6 and 0.7.0): each layer's attention is a paged-attention call, not an MLA kernel, and
    # the layer runs five matmuls (q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj on the new tokens, o_proj;
    # models/deepseek_v2.py DeepseekV2Attention.forward, 0.6.3 and 0.7.0) where vLLM 0.8's absorbed decode runs six.
    from kvcalc.engine.steptime import StepModel
    from kvcalc.specs.dtypes import kv_dtype

    ds, h200 = resolve_model("deepseek-v3"), resolve_gpu("h200")
    old = StepModel(ds, h200, kv_dtype("bf16"), tp=8, engine=engine("vllm@0.7.0")).kernels
    new = StepModel(ds, h200, kv_dtype("bf16"), tp=8, engine=engine("vllm@0.8")).kernels
    assert (old.mla_attention, new.mla_attention) == (0, 61)
    assert old.attention - new.attention == 61
    assert new.gemm - old.gemm == 61


def test_vllm_071_and_072_cache_deepseek_per_head_when_its_checkpoint_is_not_fp8(cli):
    # vLLM 0.7.1 and 0.7.2 keep MLA only for a checkpoint quantized in fp8 or not at all (config.py ModelConfig.use_mla:
    # "MLA is not supported with %s quantization. Disabling MLA." for a quantization other than fp8 or
    # compressed-tensors, the latter only with fp8 weights and activations; read in 0.7.1 and 0.7.2), and then cache it
    # per head as 0.7.0 does; 0.7.3 and 0.8 keep MLA for any (read in 0.7.3 and 0.8.3). DeepSeek-V3 at TP 8 in a bf16
    # cache, 61 layers: per head 16 x (192 + 192) x 2 B a layer; the latent (512 + 64) x 2, padded to 640 x 2 on CUDA in
    # 0.7.2 and 0.7.3.
    from kvcalc.engine.engines import mla_kept

    heads, latent, padded = 61 * 16 * (192 + 192) * 2, 61 * 576 * 2, 61 * 640 * 2
    assert (heads, latent, padded) == (749_568, 70_272, 78_080)

    def fit(e, w=None):
        args = ["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--seq", "4k", "--engine", e]
        return cli("fit", *args, *(["--weight-dtype", w] if w else []), "--json").json()

    got = {
        (e, w): fit(e, w)["kv_bytes_per_token"]
        for e, w in [
            ("vllm@0.7.1", "int4"),
            ("vllm@0.7.1", None),
            ("vllm@0.7.2", "int4"),
            ("vllm@0.7.2", "fp8"),
            ("vllm@0.7.2", "int8"),
            ("vllm@0.7.3", "int4"),
            ("vllm@0.8.3", "int4"),
        ]
    }
    assert got == {
        ("vllm@0.7.1", "int4"): heads,
        ("vllm@0.7.1", None): latent,
        ("vllm@0.7.2", "int4"): heads,
        ("vllm@0.7.2", "fp8"): padded,
        ("vllm@0.7.2", "int8"): heads,
        ("vllm@0.7.3", "int4"): padded,
        ("vllm@0.8.3", "int4"): latent,
    }

    # Without MLA there are no materialized decode weights (0.7.1 to 0.7.3 build them only for MLA).
    def weights(e):
        return next(x["bytes"] for x in fit(e, "int4")["budget"] if "weights" in x["label"])

    assert weights("vllm@0.7.2") < weights("vllm@0.7.3")
    # The checkpoint's own format where none is given: DeepSeek-V3's block-fp8 keeps it; a weight-only or AWQ one not.
    import dataclasses

    ds = resolve_model("deepseek-v3")
    assert ds.quantization.method == "fp8-block" and mla_kept(ds)
    assert not mla_kept(dataclasses.replace(ds, quantization=dataclasses.replace(ds.quantization, weight_only=True)))
    assert not mla_kept(dataclasses.replace(ds, quantization=dataclasses.replace(ds.quantization, method="awq")))
    assert mla_kept(ds, "bf16") and mla_kept(ds, "fp8") and not mla_kept(ds, "int4") and not mla_kept(ds, "fp4")
    # An AWQ checkpoint under 0.7.2 is cached and decoded per head: no Triton MLA kernel to split or to warn of, where
    # 0.7.3 (MLA whatever the quantization) runs V0's Triton MLA decode, 4 splits on an MI300X, and warns on an H200.
    from kvcalc.engine.engines import triton_default_note, triton_mla_fixed_splits

    awq = dataclasses.replace(ds, quantization=dataclasses.replace(ds.quantization, method="awq"))
    mi300x, h200 = resolve_gpu("mi300x"), resolve_gpu("h200")
    assert triton_mla_fixed_splits(engine("vllm@0.7.3"), awq, mi300x) == (4, "vllm-v0")
    assert triton_mla_fixed_splits(engine("vllm@0.7.2"), awq, mi300x) is None
    assert triton_default_note(engine("vllm@0.7.3"), awq, h200, 8) is not None
    assert triton_default_note(engine("vllm@0.7.2"), awq, h200, 8) is None
    assert triton_default_note(engine("vllm@0.7.2"), ds, h200, 8) is not None  # (its fp8 checkpoint keeps MLA)
    doc = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    assert "DeepSeek-V3 at TP 8 served in int4 takes 749,568 B a token under 0.7.2 where 0.7.3 (`vllm@0.7.3`" in doc
    assert "takes 78,080." in doc
