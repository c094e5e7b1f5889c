"""explain-log: reading vLLM, SGLang and TensorRT-LLM start-up logs and recomputing their figures.

The logs under tests/logs/ are written in the engines' line formats (README there); the real
excerpts under tests/logs/real/ are tested in test_real_logs.py.
"""

import io
from pathlib import Path
from typing import Any

import pytest

from conftest import one_line_error
from kvcalc.engine.explain import choose_engine
from kvcalc.errors import KvcalcError
from kvcalc.inputs.logs import parse_log, parse_startups

LOGS = Path(__file__).parent / "logs"
GiB = 2**30


def test_parse_vllm_v0():
    f = parse_log((LOGS / "vllm-0.6.3-llama2-7b.log").read_text())
    assert (f.engine, f.version, f.model) == ("vllm", "0.6.3", "meta-llama/Llama-2-7b-hf")
    assert (f.max_model_len, f.tp, f.dtype, f.kv_cache_dtype) == (4096, 1, "float16", "auto")
    assert (f.weights_gib, f.gpu_blocks, f.concurrency, f.concurrency_len) == (12.5523, 7449, 29.10, 4096)


def test_parse_vllm_v1_with_memory_profile():
    f = parse_log((LOGS / "vllm-0.8-llama3.1-8b.log").read_text())
    assert (f.total_gib, f.util, f.weights_gib, f.non_torch_gib, f.activation_gib, f.available_kv_gib) == (
        79.19,
        0.90,
        14.9889,
        0.13,
        1.23,
        54.92,
    )
    assert (f.kv_tokens, f.concurrency, f.concurrency_len, f.cudagraph_gib) == (449_904, 13.73, 32_768, 0.53)


def test_parse_current_vllm():
    f = parse_log((LOGS / "vllm-0.11-qwen3-32b-tp2.log").read_text())
    assert (f.model, f.max_model_len, f.tp, f.util, f.available_kv_gib, f.kv_tokens) == (
        "Qwen/Qwen3-32B",
        16384,
        2,
        0.92,
        40.29,
        330_048,
    )


def test_parse_sglang():
    f = parse_log((LOGS / "sglang-llama3.1-8b.log").read_text())
    assert f.engine == "sglang"
    assert (f.max_total_num_tokens, f.weights_gib, f.avail_after_load_gib, f.util, f.max_model_len) == (
        438_913,
        15.09,
        63.49,
        0.88,
        131072,
    )
    assert (f.k_size_gib, f.v_size_gib) == (26.79, 26.79)


def test_nothing_recognisable():
    with pytest.raises(KvcalcError, match="nothing recognisable"):
        parse_log("hello\nworld\n")


# ---- the formats people paste -----------------------------------------------------------------

V064 = (
    "INFO 11-21 worker.py:232] Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB "
    "peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB "
    "gpu_memory_utilization=0.90\n"
)


def test_one_line_profile_of_0_6_4():
    f = parse_log(V064 + "INFO # GPU blocks: 1952, # CPU blocks: 2048\n")
    assert (f.total_gib, f.peak_torch_gib, f.non_torch_gib, f.available_kv_gib, f.util) == (23.58, 17.06, 0.35, 3.81, 0.90)
    assert choose_engine(f)[0].key == "vllm@0.6"


def test_a_v0_driver_line_binds_over_its_workers(cli, tmp_path):
    # 0324wy/MapCoder's vLLM 0.6.4.post1 log, Llama-3.1-8B at TP 4 on 48 GB cards (tests/logs/real): the
    # workers print their profile first with a "(VllmWorkerProcess pid=...)" prefix; the driver, which
    # also samples, prints its own last with more torch peak and less KV, and V0 takes the fewest blocks.
    worker = (
        "(VllmWorkerProcess pid=722547) INFO 11-18 01:15:52 worker.py:232] Memory profiling results: total_gpu_memory=44.42GiB "
        "initial_memory_usage=4.42GiB peak_torch_memory=3.80GiB memory_usage_post_profile=4.49GiB non_torch_memory=0.71GiB "
        "kv_cache_size=35.47GiB gpu_memory_utilization=0.90\n"
    )
    driver = worker.replace("(VllmWorkerProcess pid=722547) ", "").replace("3.80GiB", "4.95GiB").replace("35.47", "34.32")
    text = worker + driver + "INFO 11-18 01:15:52 distributed_gpu_executor.py:57] # GPU blocks: 70293, # CPU blocks: 8192\n"
    f = parse_log(text)
    assert (f.peak_torch_gib, f.available_kv_gib) == (4.95, 34.32)
    log = tmp_path / "v064.log"
    log.write_text(text)
    d = cli("explain-log", log, "--model", "llama3.1-8b", "--gpu", "l40s", "--tp", "4", "--json").json()["startups"][0]
    # 0.90 x 44.42 - 4.95 - 0.71 = 34.318 GiB, in blocks of 16 tokens x 32 layers x 2 KV heads a rank x 2 x 128 x 2 B.
    assert d["from_log"]["kv_pool_blocks"] == int((0.9 * 44.42 - 4.95 - 0.71) * 2**30) // (16 * 32 * 2 * 2 * 128 * 2) == 70283
    row = next(r for r in d["rows"] if r["key"] == "available_kv")
    assert row["log"] == pytest.approx(34.32 * 2**30)


def test_a_worker_behind_a_compose_prefix_is_still_a_worker():
    # dzhsurf's vLLM 0.7.3 start under docker compose (tests/logs/real): every line carries the service's
    # "vllm-server-1  | " prefix, the workers' "(VllmWorkerProcess pid=...)" after it; the driver's line,
    # printed last, is rank 0's and binds (V0 takes the fewest blocks over its workers).
    line = (
        "vllm-server-1  | {who}INFO 03-03 02:44:10 worker.py:267] model weights take 50.47GiB; non_torch_memory takes "
        "{nt}GiB; PyTorch activation peak memory takes 6.52GiB; the rest of the memory reserved for KV Cache is {kv}GiB.\n"
    )
    text = line.format(who="(VllmWorkerProcess pid=354) ", nt="4.66", kv="13.49") + line.format(who="", nt="7.16", kv="10.99")
    f = parse_log(text)
    assert (f.non_torch_gib, f.available_kv_gib) == (7.16, 10.99)
    assert f.rank_values["available_kv_gib"] == [13.49, 10.99]


def test_a_worker_with_less_kv_memory_binds_over_the_drivers_breakdown(cli, tmp_path):
    # Without PP every rank holds the same layers and V0 sizes every cache to the fewest blocks: where a
    # worker printed less KV memory than the driver's breakdown leaves, the worker's figure is the pool.
    line = (
        "{who}INFO 03-03 02:44:10 worker.py:267] the current vLLM instance can use total_gpu_memory (79.10GiB) x "
        "gpu_memory_utilization (0.95) = 75.14GiB\n"
        "{who}INFO 03-03 02:44:10 worker.py:267] model weights take 50.47GiB; non_torch_memory takes "
        "{nt}GiB; PyTorch activation peak memory takes 6.52GiB; the rest of the memory reserved for KV Cache is {kv}GiB.\n"
    )
    text = line.format(who="", nt="4.66", kv="13.49") + line.format(who="(VllmWorkerProcess pid=354) ", nt="7.16", kv="10.99")
    log = tmp_path / "v073.log"
    log.write_text(text)
    args = ("--model", "llama3.1-70b", "--gpu", "h100-sxm", "--tp", "8", "--engine", "vllm@0.7.3", "--json")
    d = cli("explain-log", log, *args).json()["startups"][0]
    # The worker's 10.99 GiB in blocks of 16 tokens x 80 layers x 1 KV head a rank x 2 x 128 x 2 B.
    assert d["from_log"]["kv_pool_blocks"] == int(10.99 * 2**30) // (16 * 80 * 1 * 2 * 128 * 2) == 18006


def test_v0_error_line_and_max_len():
    f = parse_log(
        "ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be stored "
        "in KV cache (23648). Try increasing `gpu_memory_utilization`\n"
    )
    assert (f.error_kv_tokens, f.max_model_len, f.engine) == (23648, 29000, "vllm")
    assert choose_engine(f)[0].key == "vllm@0.6"


def test_v1_needed_line_and_negative_available():
    f = parse_log(
        "(EngineCore_DP0 pid=1) INFO [gpu_worker.py:276] Available KV cache memory: -2.14 GiB\n"
        "ValueError: To serve at least one request with the models's max seq len (221000), (10.12 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (5.59 GiB). Based on the available memory, the "
        "estimated maximum model length is 122080.\n"
    )
    assert (f.needed_kv_gib, f.available_kv_gib, f.estimated_max_len, f.max_model_len) == (10.12, 5.59, 122080, 221000)
    g = parse_log("(EngineCore_DP0 pid=1) INFO [gpu_worker.py:276] Available KV cache memory: -2.14 GiB\n")
    assert g.available_kv_gib == -2.14
    assert choose_engine(g)[0].key == "vllm@0.11"


def test_cuda_graph_estimate_and_utilisation_lines_mark_0_21():
    f = parse_log(
        "INFO Model loading took 14.99 GiB\n"
        "INFO Estimated CUDA graph memory: 0.62 GiB total\n"
        "INFO --gpu-memory-utilization=0.92 is equivalent to --gpu-memory-utilization=0.9122 without CUDA graphs\n"
        "INFO Available KV cache memory: 55.31 GiB\n"
    )
    assert (f.cudagraph_estimate_gib, f.util, f.util_without_cudagraph) == (0.62, 0.92, 0.9122)
    assert choose_engine(f)[0].key == "vllm@0.33"


_V019 = (
    "(EngineCore pid=285) DEBUG 04-22 15:56:40 [v1/worker/gpu_worker.py:284] worker init memory snapshot: torch_peak=0.0GiB, "
    "free_memory=78.68GiB, total_memory=79.19GiB, cuda_memory=0.51GiB, torch_memory=0.0GiB, non_torch_memory=0.51GiB, "
    "timestamp=1776873400.8206272, auto_measure=True\n"
    "(EngineCore pid=285) INFO 04-22 15:57:24 [v1/worker/gpu_model_runner.py:4820] Model loading took 17.22 GiB memory and "
    "42.298113 seconds\n"
    "(EngineCore pid=285) INFO 04-22 15:57:45 [v1/worker/gpu_model_runner.py:5955] Estimated CUDA graph memory: 0.84 GiB total\n"
    "(EngineCore pid=285) DEBUG 04-22 15:57:45 [v1/worker/gpu_worker.py:435] Memory profiling takes 21.51 seconds. Total non "
    "KV cache memory: 21.11GiB; torch peak memory increase: 3.65GiB; non-torch forward increase memory: 0.25GiB; weights "
    "memory: 17.22GiB.\n"
    "(EngineCore pid=285) INFO 04-22 15:57:45 [v1/worker/gpu_worker.py:436] Available KV cache memory: 54.12 GiB\n"
    "{switch}\n"
    "(EngineCore pid=285) INFO 04-22 15:57:49 [v1/worker/gpu_model_runner.py:6046] Graph capturing finished in 4 secs, "
    "took 1.09 GiB\n"
    "(EngineCore pid=285) DEBUG 04-22 15:57:49 [v1/worker/gpu_worker.py:661] Free memory on device (78.68/79.19 GiB) on startup. "
    "Desired GPU memory utilization is (0.95, 75.23 GiB). Actual usage is 17.22 GiB for weight, 3.65 GiB for peak activation, "
    "0.25 GiB for non-torch memory, and 1.09 GiB for CUDAGraph memory.\n"
)
_OFF_019 = (
    "(EngineCore pid=285) INFO 04-22 15:57:45 [v1/worker/gpu_worker.py:470] In v0.19, CUDA graph memory profiling will be "
    "enabled by default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1), which more accurately accounts for CUDA graph memory "
    "during KV cache allocation. To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 and increase"
)
_ON_020 = (
    "INFO [v1/worker/gpu_worker.py:455] CUDA graph memory profiling is enabled (default since v0.21.0). The current "
    "--gpu-memory-utilization=0.9500 is equivalent to --gpu-memory-utilization=0.9394 without CUDA graph memory profiling."
)


def test_a_0_19_budget_is_read_from_the_profile_not_the_init_snapshot(cli, tmp_path):
    # llm-d-incubation/llm-d-planner#205's vLLM 0.19.0 log of Gemma-2-9B on an H100 (tests/logs/real): the
    # init snapshot's non_torch_memory (0.51 GiB, the CUDA context before the model) is not the profile's
    # non-torch increase (0.25 GiB), and 0.19 logs its CUDA-graph estimate without subtracting it.
    f = parse_log(_V019.format(switch=_OFF_019))
    assert (f.non_torch_gib, f.activation_gib, f.cudagraph_estimate_gib, f.cudagraph_estimate_applied) == (
        0.25,
        3.65,
        0.84,
        False,
    )
    log = tmp_path / "v019.log"
    log.write_text(_V019.format(switch=_OFF_019))
    s = cli("explain-log", log, "--model", "gemma2-9b", "--gpu", "h100-sxm", "--engine", "vllm@0.19.0", "--json").json()
    pool = s["startups"][0]["from_log"]["kv_pool_bytes"]
    # 0.95 x 79.19 - 17.22 - 3.65 - 0.25 = 54.1105 GiB; the log prints 54.12.
    assert abs(pool - (0.95 * 79.19 - 17.22 - 3.65 - 0.25) * GiB) < 2
    assert "cudagraph_estimate" not in [r["key"] for r in s["startups"][0]["rows"]]
    # The same lines where the estimate was applied (0.20's default): 0.84 GiB more comes off.
    on = parse_log(_V019.format(switch=_ON_020))
    assert on.cudagraph_estimate_applied is True
    log.write_text(_V019.format(switch=_ON_020))
    s = cli("explain-log", log, "--model", "gemma2-9b", "--gpu", "h100-sxm", "--engine", "vllm@0.20.0", "--json").json()
    assert abs(s["startups"][0]["from_log"]["kv_pool_bytes"] - (0.95 * 79.19 - 17.22 - 3.65 - 0.25 - 0.84) * GiB) < 2
    # Without a banner, the "will be enabled by default" line places the log at 0.18 or 0.19.
    assert choose_engine(f)[0].key == "vllm@0.17"
    # Each case says what became of the estimate and of the 1.09 GiB the graphs took.
    log.write_text(_V019.format(switch=_OFF_019))
    out = " ".join(cli("explain-log", log, "--model", "gemma2-9b", "--gpu", "h100-sxm", "--engine", "vllm@0.19.0").out.split())
    assert "estimated its CUDA graphs at 0.84 GiB but did not subtract that" in out
    assert "CUDA graphs took 1.09 GiB after the KV cache was sized: they came out of the" in out
    log.write_text(_V019.format(switch=_ON_020))
    out = " ".join(cli("explain-log", log, "--model", "gemma2-9b", "--gpu", "h100-sxm", "--engine", "vllm@0.20.0").out.split())
    assert "CUDA graphs took 1.09 GiB after the KV cache was sized, against the 0.84 GiB vLLM estimated" in out


def test_the_checkpoint_prefetchs_read_size_is_not_a_kv_block_size():
    # vLLM 0.2x logs its checkpoint prefetch as "block_size=16777216 bytes" (weight_utils.py); a KV block
    # is counted in tokens, and reading it as one made a 16,777,216-token block that no pool holds.
    f = parse_log(
        "INFO [weight_utils.py:829] Prefetching checkpoint files into page cache started (in background, "
        "num_threads=8, block_size=16777216 bytes)\n"
        "INFO Available KV cache memory: 13.84 GiB\n"
    )
    assert f.block_size is None
    config = (
        "INFO ... cache_config=CacheConfig(block_size=16, gpu_memory_utilization=0.9)\nINFO Available KV cache memory: 1 GiB\n"
    )
    assert parse_log(config).block_size == 16


def test_the_block_size_vllm_forces_for_an_attention_backend_is_read():
    # vLLM raises the block for MLA backends after the config line that printed 16 (platforms/cuda.py
    # 0.11.0 to 0.16.0; platforms/interface.py 0.19 on): the pool is counted in the later figure's blocks.
    forced = (
        "INFO ... cache_config=CacheConfig(block_size=16, gpu_memory_utilization=0.9)\n"
        "INFO 10-01 12:00:00 [cuda.py:165] Forcing kv cache block size to 64 for FlashMLA backend.\n"
        "INFO Available KV cache memory: 40.00 GiB\n"
    )
    assert parse_log(forced).block_size == 64
    real = (Path(__file__).parent / "logs" / "real" / "vllm-bbartels-8xh200-glm-5.1-fp8-0.20.0.log").read_text()
    assert parse_log(real).block_size == 64


def test_current_one_line_capacity():
    f = parse_log("INFO GPU KV cache size: 452,640 tokens, Maximum concurrency for 8,192 tokens per request: 55.25x\n")
    assert (f.kv_tokens, f.concurrency, f.concurrency_len) == (452_640, 55.25, 8192)
    assert choose_engine(f)[0].key == "vllm@0.33"


def test_sglang_0_5_lines_with_dtype_and_mla():
    f = parse_log(
        "[TP0] Load weight begin. avail mem=78.58 GB\n"
        "[TP0] Load weight end. elapsed=20.1 s, type=DeepseekV3ForCausalLM, avail mem=4.10 GB, mem usage=74.48 GB.\n"
        "[TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 53171, KV size: 3.49 GB\n"
    )
    assert (f.engine, f.avail_before_load_gib, f.avail_after_load_gib, f.weights_gib) == ("sglang", 78.58, 4.10, 74.48)
    assert (f.max_total_num_tokens, f.kv_size_gib, f.kv_cache_dtype) == (53171, 3.49, "bfloat16")


def test_tensorrt_llm_lines():
    f = parse_log(
        "[TensorRT-LLM][INFO] Allocate 69524783104 bytes for k/v cache.\n"
        "[TensorRT-LLM][INFO] Using 132608 tokens in paged KV cache.\n"
    )
    assert (f.engine, f.trt_kv_bytes, f.trt_tokens) == ("trtllm", 69_524_783_104, 132_608)


def test_several_start_ups_are_split_and_carry_their_settings():
    one = (LOGS / "vllm-0.11-qwen3-32b-tp2.log").read_text()
    two = one.replace("330,048", "331,000")
    found = parse_startups(one + two)
    assert len(found) == 2
    assert [f.kv_tokens for f in found] == [330_048, 331_000]
    assert found[1].model == "Qwen/Qwen3-32B" and found[1].tp == 2


# ---- the recomputation -----------------------------------------------------------------------


def test_recomputed_from_the_logs_figures_agrees(cli):
    d = cli("explain-log", LOGS / "vllm-0.8-llama3.1-8b.log", "--json").json()
    s = d["startups"][0]
    # KV pool = 0.9 x 79.19 GiB - 14.9889 - 1.23 - 0.13 GiB, which the log rounds to 54.92 GiB.
    pool = s["from_log"]["kv_pool_bytes"]
    assert s["from_log"]["basis"] == "components"
    assert abs(pool - (0.9 * 79.19 - 14.9889 - 1.23 - 0.13) * GiB) < 2
    assert abs(pool / GiB - 54.92) < 0.005
    # Tokens from that same pool: whole 16-token blocks of 32 x 2 x 8 x 128 x 2 B per token, and
    # the concurrency from the same blocks: blocks / (32,768 / 16).
    blocks = pool // (16 * 131072)
    assert s["from_log"]["kv_pool_tokens"] == blocks * 16
    assert s["from_log"]["concurrency"] == pytest.approx(blocks / (32768 / 16))
    assert abs(blocks * 16 - 449_904) <= 16
    assert s["kv_bytes_per_token"] == 2 * 32 * 8 * 128 * 2


def test_sglang_per_token_bytes_match(cli):
    d = cli("explain-log", LOGS / "sglang-llama3.1-8b.log", "--json").json()
    s = d["startups"][0]
    row = [r for r in s["rows"] if r["key"] == "kv_bytes_per_token"][0]
    # (26.79 + 26.79) GiB / 438,913 tokens ~ 131,076 B against 2 x 32 x 8 x 128 x 2 = 131,072 B.
    assert row["log"] == pytest.approx((26.79 + 26.79) * GiB / 438_913)
    assert row["from_log"] == row["estimate"] == 2 * 32 * 8 * 128 * 2
    # SGLang's pool: 63.49 GiB free after loading - (1 - 0.88) x 78.58 GiB free before.
    tokens = [r for r in s["rows"] if r["key"] == "max_total_num_tokens"][0]
    assert tokens["from_log"] == round((63.49 - 0.12 * 78.58) * GiB) // 131072
    assert any(n["key"] == "sglang_gb_is_gib" for n in s["notes"])
    assert "divides by 2^30" in cli("explain-log", LOGS / "sglang-llama3.1-8b.log").out


def test_table_and_concurrency_in_words(cli):
    r = cli("explain-log", LOGS / "vllm-0.6.3-llama2-7b.log")
    assert r.code == 0
    text = " ".join(r.out.split())
    assert "29 could be in flight" in text and "GiB" in text
    # The GPU is not in the log: said, with the flag that sets it.
    assert "gpu h100-sxm (assumed" in text and "--gpu" in text


def test_options_fill_what_the_log_does_not_say(cli, tmp_path):
    p = tmp_path / "blocks.log"
    p.write_text("INFO # GPU blocks: 507, # CPU blocks: 1024\n")
    d = cli(
        "explain-log",
        p,
        "--model",
        "deepseek-coder-6.7b",
        "--gpu",
        "t4",
        "--tp",
        "2",
        "--seq",
        "16k",
        "--engine",
        "vllm@0.4.3",
        "--kv-dtype",
        "fp16",
        "--json",
    ).json()
    s = d["startups"][0]
    settings = {x["key"]: (x["value"], x["source"]) for x in s["settings"]}
    assert settings["tp"] == (2, "option") and settings["gpu"] == ("t4", "option")
    # 0.4.3 is read with vllm@0.4's record (V0 before async output processing and before chunked
    # prefill was on by default; 0.6's memory rules).
    assert settings["engine"] == ("vllm@0.4", "option") and settings["max_model_len"] == (16384, "option")
    # 507 blocks of 16 tokens x 32 layers x 2 x (32 / 2) heads x 128 x 2 B.
    assert s["from_log"]["kv_pool_bytes"] == 507 * 16 * 32 * 2 * 16 * 128 * 2
    # The log's own figure wins over an option, with a warning.
    q = tmp_path / "tp.log"
    q.write_text("model='meta-llama/Llama-3.1-8B', tensor_parallel_size=1\nINFO GPU KV cache size: 449,904 tokens\n")
    d = cli("explain-log", q, "--tp", "2", "--json").json()
    assert d["startups"][0]["tp"] == 1
    assert any("--tp 2 not used" in w for w in d["warnings"])


def test_gpu_guessed_from_the_logs_total(cli):
    d = cli(
        "explain-log",
        LOGS.parent / "logs" / "real" / "vllm-10517-rtx3090-llama3.1-8b-20k.log",
        "--model",
        "llama3.1-8b",
        "--json",
    ).json()
    g = [x for x in d["startups"][0]["settings"] if x["key"] == "gpu"][0]
    assert (g["value"], g["source"]) == ("rtx3090", "guess")


def test_a_figure_impossible_on_the_gpu_is_flagged(cli, tmp_path):
    p = tmp_path / "x.log"
    p.write_text("INFO # GPU blocks: 8348, # CPU blocks: 512\n")
    d = cli("explain-log", p, "--model", "llama2-7b", "--gpu", "a10", "--json").json()
    assert any("more than the" in w for w in d["warnings"])


def test_each_start_up_explained(cli, tmp_path):
    one = (LOGS / "vllm-0.11-qwen3-32b-tp2.log").read_text()
    p = tmp_path / "two.log"
    p.write_text(one + one.replace("330,048", "331,000"))
    r = cli("explain-log", p)
    assert r.code == 0 and "Start-up 1 of 2" in r.out and "Start-up 2 of 2" in r.out
    d = cli("explain-log", p, "--json").json()
    assert [s["index"] for s in d["startups"]] == [1, 2]


def test_stdin(cli, monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO((LOGS / "vllm-0.11-qwen3-32b-tp2.log").read_bytes()))
    monkeypatch.setattr("sys.stdin", stdin)
    r = cli("explain-log", "-", "--json")
    assert r.code == 0 and r.json()["startups"][0]["model"] == "qwen3-32b"


def test_model_override_and_errors(cli, tmp_path):
    p = tmp_path / "x.log"
    p.write_text("INFO GPU KV cache size: 1,000 tokens\nmodel='/data/ckpt/my-private-model'\n")
    r = cli("explain-log", p)
    assert r.code == 2 and "--model" in r.err and len(r.err.strip().splitlines()) == 1
    assert cli("explain-log", p, "--model", "llama3.1-8b").code == 0
    empty = tmp_path / "empty.log"
    empty.write_text("nothing here\n")
    r = cli("explain-log", empty)
    assert r.code == 2 and "nothing recognisable" in r.err
    assert cli("explain-log", tmp_path / "missing.log").code == 2


def test_a_model_named_in_a_log_is_never_opened(cli, tmp_path):
    # A log naming a path to a spec file must not make kvcalc read that file.
    spec = tmp_path / "evil.yaml"
    spec.write_text("name: evil\n")
    p = tmp_path / "x.log"
    p.write_text(f"model='{spec}'\nINFO GPU KV cache size: 1,000 tokens\n")
    r = cli("explain-log", p)
    assert r.code == 2 and "not in the catalog" in r.err


def test_an_unreadable_log_is_named_by_its_file(cli, tmp_path):
    f = tmp_path / "server.log"
    f.write_text("nothing that a start-up prints\n")
    one_line_error(cli("explain-log", str(f)), "nothing recognisable", str(f))


def test_ranks_that_print_different_kv_sizes_are_read_at_the_smallest():
    """vLLM sizes every rank's pool to the smallest (V1: get_kv_cache_configs takes the minimum
    available memory over the workers; V0: min(num_gpu_blocks) over them), so when two ranks print
    different figures the smaller one is the pool, whichever comes last (issue 19, cause 5)."""
    from kvcalc.inputs.logs import parse_startups

    log = (
        "INFO 01-01 00:00:00 llm_engine.py:100] Initializing an LLM engine (v0.6.3) with config: model='x'\n"
        "(RayWorkerWrapper pid=2) INFO 01-01 00:00:05 distributed_gpu_executor.py:57] # GPU blocks: 9000, # CPU blocks: 2048\n"
        "INFO 01-01 00:00:05 distributed_gpu_executor.py:57] # GPU blocks: 8500, # CPU blocks: 2048\n"
        "(RayWorkerWrapper pid=3) INFO 01-01 00:00:05 distributed_gpu_executor.py:57] # GPU blocks: 8800, # CPU blocks: 2048\n"
    )
    f = parse_startups(log)[0]
    assert f.gpu_blocks == 8500
    assert f.rank_values["gpu_blocks"] == [9000.0, 8500.0, 8800.0]
    v1 = (
        "(EngineCore_DP0 pid=1) INFO [kv_cache_utils.py:1148] GPU KV cache size: 120,000 tokens\n"
        "(EngineCore_DP0 pid=1) INFO [kv_cache_utils.py:1149] Maximum concurrency for 8,192 tokens per request: 14.65x\n"
        "(EngineCore_DP0 pid=1) INFO [kv_cache_utils.py:1148] GPU KV cache size: 118,000 tokens\n"
        "(EngineCore_DP0 pid=1) INFO [kv_cache_utils.py:1149] Maximum concurrency for 8,192 tokens per request: 14.40x\n"
    )
    g = parse_startups(v1)[0]
    assert (g.kv_tokens, g.concurrency) == (118_000, 14.40)


def test_without_pp_the_smallest_available_kv_memory_is_the_pool():
    """Every rank of a TP-only start-up holds the same layers: vLLM sizes the cache to the least
    available memory over them, so the from-log pool is the smallest figure printed, not the first
    rank's (a TP 8 log of Qwen3-235B-FP8 printed 35.74 on rank 0 and 35.65 on six ranks). With PP each
    stage's figure is for its own layers and the lowest rank's stays (vllm#20665)."""
    from kvcalc.engine.explain import Given, explain
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    lines = "".join(
        f"(VllmWorker rank={r} pid={r}) INFO [gpu_worker.py:276] Available KV cache memory: {gib} GiB\n"
        for r, gib in ((0, "35.74"), (1, "35.65"), (2, "36.12"))
    )
    f = parse_startups(lines)[0]
    assert f.available_kv_gib == 35.74 and f.rank_values["available_kv_gib"] == [35.74, 35.65, 36.12]
    m, g = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    tp = explain(f, m, g, Given(engine="vllm@0.11", tp=4, pp=1, max_model_len=8192))
    pp = explain(f, m, g, Given(engine="vllm@0.11", tp=1, pp=4, max_model_len=8192))
    row = {x.key: x for x in tp.rows}["available_kv"]
    assert row.log == 35.65 * GiB and tp.from_log is not None and tp.from_log.kv_pool_bytes == round(35.65 * GiB)
    assert pp.from_log is not None and pp.from_log.kv_pool_bytes == round(35.74 * GiB)


def test_tensorrt_llm_1x_lines_are_read_and_the_dry_run_is_not_the_pool():
    """Issue 19, cause 5: TensorRT-LLM 1.x's weights line, the GiB on its KV allocation line, its
    profile's peak and device-total line, and its first 'Allocated' line being the estimation's dry
    run (sized to max_num_tokens), not the pool."""
    from pathlib import Path

    from kvcalc.inputs.logs import parse_startups

    logs = Path(__file__).resolve().parent / "logs"
    f = parse_startups((logs / "trtllm-1.1-gb10-gpt-oss-120b.log").read_text())[0]
    assert (f.engine, f.version, f.weights_gib) == ("trtllm", "1.1.0rc3", 63.52)
    assert f.trt_allocations == [(0.56, 8224), (5.95, 86720)]
    assert (f.trt_kv_gib, f.trt_tokens) == (5.95, 86720)  # the last line: the pool
    assert (f.trt_peak_gib, f.trt_total_gib, f.trt_tmp_kv_gib, f.trt_kv_per_token) == (113.65, 119.70, 0.56, 73728)
    # The pool from the log's own terms: 0.9 x (119.70 - 113.65 + 0.56) = 5.949 GiB, as allocated.
    assert abs(f.trt_fraction * (119.70 - 113.65 + 0.56) - 5.95) < 0.005
    g = parse_startups((logs / "trtllm-pr15734-h200.log").read_text())[0]
    assert (g.trt_kv_gib, g.trt_tokens, g.trt_kv_per_token) == (81.90, 536768, 163840)
    assert abs(0.9 * (139.80 - 69.42 + 20.62) - 81.90) < 0.005
    # AutoDeploy's placeholder manager allocates 0.00 GiB for millions of tokens: not a pool.
    h = parse_startups(
        "[TensorRT-LLM] TensorRT LLM version: 1.2.0rc5\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 0.00 GiB for max tokens in paged KV cache (3958272).\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 12.50 GiB for max tokens in paged KV cache (100000).\n"
    )[0]
    assert h.trt_allocations == [(12.5, 100000)] and h.version == "1.2.0rc5"


def test_a_tensorrt_llm_logs_version_line_picks_its_record(cli):
    """TensorRT-LLM prints its release ('[TensorRT-LLM] TensorRT-LLM version: 0.19.0'): a 0.14 to 0.21 log is read
    with trtllm@0.19 (TensorRT engines: the runtime's and decoder's buffers), a 1.x log with trtllm@1.2, a release
    kvcalc has no rules for with the 1.x rules, saying so."""
    from pathlib import Path

    from kvcalc.engine.explain import choose_engine
    from kvcalc.inputs.logs import parse_startups

    real = Path(__file__).resolve().parent / "logs" / "real" / "trtllm-issue4275-rtx5090-llama3.1-8b-fp8.log"
    f = parse_startups(real.read_text())[0]
    e, s = choose_engine(f)
    assert (f.version, e.key, s.source) == ("0.19.0", "trtllm@0.19", "log") and "version line" in s.detail
    one = parse_startups((Path(__file__).resolve().parent / "logs" / "trtllm-1.1-gb10-gpt-oss-120b.log").read_text())[0]
    assert choose_engine(one)[0].key == "trtllm@1.2"
    old = parse_startups(
        "[TensorRT-LLM] TensorRT-LLM version: 0.12.0\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 12.50 GiB for max tokens in paged KV cache (100000).\n"
    )[0]
    e, s = choose_engine(old)
    assert e.key == "trtllm@1.2" and "no rules for" in s.detail and "1.x rules" in s.detail
    # The command says which record read the log.
    r = cli("explain-log", str(real), "--model", "llama3.1-8b", "--gpu", "rtx5090", "--kv-dtype", "fp8", "--json")
    assert r.code == 0, r.err
    assert r.json()["startups"][0]["engine"] == "trtllm@0.19"


def test_explain_log_says_which_tensorrt_llm_line_is_the_dry_run(cli):
    from pathlib import Path

    log = Path(__file__).resolve().parent / "logs" / "trtllm-1.1-gb10-gpt-oss-120b.log"
    r = cli("explain-log", str(log), "--model", "gpt-oss-120b", "--gpu", "h200", "--json")
    d = r.json()["startups"][0]
    rows = {x["key"]: x for x in d["rows"]}
    assert abs(rows["trt_kv_gib"]["from_log_error"]) < 0.002
    assert abs(rows["trt_tokens"]["from_log_error"]) < 0.002
    assert any(n["key"] == "trt_dry_run" for n in d["notes"])


# vLLM's start-up banner, as vllm/entrypoints/common/startup.py (log_version_and_model, 0.33.0) writes
# it: a logo whose second and third lines end "version X" and "model   NAME" (vLLM's formatter puts
# the log prefix on every line of a message), ANSI-coloured under the colour formatter, or one plain
# line with the logo off. A web page that pasted it may have collapsed the logo's runs of spaces.
_PREFIX = "(APIServer pid=1) INFO 11-20 10:00:00 [startup.py:40] "
_KV = "(EngineCore pid=2) INFO 11-20 10:01:00 [kv_cache_utils.py:1300] GPU KV cache size: 100,000 tokens\n"
BANNERS = {
    "monochrome": (
        _PREFIX + " ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.33.0\n" + _PREFIX + "  █▄█▀ █     █     █     █  model   Qwen/Qwen3-8B\n"
    ),
    "colour": (
        _PREFIX
        + " \x1b[93m▄▄\x1b[0m \x1b[94m▄█\x1b[0m \x1b[1m█     █     █ ▀▄▀ █\x1b[0m  version \x1b[1m0.33.0\x1b[0m\n"
        + _PREFIX
        + "  \x1b[93m█\x1b[0m\x1b[94m▄█▀\x1b[0m \x1b[1m█     █     █     █\x1b[0m  model   \x1b[1mQwen/Qwen3-8B\x1b[0m\n"
    ),
    "pasted": _PREFIX + "▄▄ ▄█ █ █ █ ▀▄▀ █ version 0.33.0\n" + _PREFIX + "█▄█▀ █ █ █ █ model Qwen/Qwen3-8B\n",
    "logo off": _PREFIX + "vLLM server version 0.33.0, serving model Qwen/Qwen3-8B\n",
}


@pytest.mark.parametrize("form", list(BANNERS))
def test_the_start_up_banner_gives_the_release_and_the_model(form):
    f = parse_startups(BANNERS[form] + _KV)
    assert [(x.version, x.model, x.kv_tokens) for x in f] == [("0.33.0", "Qwen/Qwen3-8B", 100_000)]
    assert choose_engine(f[0])[0].key == "vllm@0.33"


def test_a_release_in_the_banner_chooses_its_rules():
    # 0.19's banner: read with the rules of 0.18 and 0.19, not guessed from the line formats.
    f = parse_log(BANNERS["monochrome"].replace("0.33.0", "0.19.0") + _KV)
    assert choose_engine(f)[0].key == "vllm@0.18"


def test_a_posted_0_19_log_is_read_by_its_banner(cli):
    # A real excerpt (tests/logs/README.md): the banner names 0.19.0, so 0.18-0.19's rules apply, not
    # the V1 formats' guess; the non-default args give the model, util 0.65 and max_model_len 131,072.
    f = parse_log((LOGS / "vllm-0.19-a100-gpt-oss-20b-pasted.log").read_text())
    assert (f.version, f.model, f.util, f.max_model_len, f.available_kv_gib) == (
        "0.19.0",
        "openai/gpt-oss-20b",
        0.65,
        131072,
        36.56,
    )
    assert choose_engine(f)[0].key == "vllm@0.18"
    d = cli("explain-log", LOGS / "vllm-0.19-a100-gpt-oss-20b-pasted.log", "--gpu", "a100-80gb", "--json").json()
    row = next(r for r in d["startups"][0]["rows"] if r["key"] == "available_kv")
    assert d["startups"][0]["engine"] == "vllm@0.18"
    assert abs(row["estimate"] / (36.56 * 2**30) - 1) < 0.10  # kvcalc's estimate within 10% of what vLLM logged


def test_the_sampler_a_log_names_sets_its_warm_up():
    # vLLM 0.8 to 0.14 runs FlashInfer's top-k/top-p sampler where it is installed, else PyTorch's sort:
    # 14 bytes a logit at the profile's peak against 38 (v1/sample/ops/topk_topp_sampler.py, 0.11).
    # dennislee22's Qwen2-7B on an A100 80GB at util 0.25 (vLLM 0.10.1.1) logs FlashInfer: the warm-up
    # is 256 rows x 152,064 vocabulary x 14 B beside the hidden states, not x 38.
    from kvcalc.engine.memory import FitInputs, fit
    from kvcalc.inputs.logs import parse_startups
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    real = Path(__file__).resolve().parent / "logs" / "real"
    facts = parse_startups((real / "vllm-dennislee-a100-qwen2-7b-u025.log").read_text())[0]
    assert facts.sampler == "flashinfer"
    fallback = parse_startups((real / "vllm-dennislee-2xa100-40gb-qwen2-7b.log").read_text())[0]
    assert fallback.sampler == "pytorch"
    older = "INFO [topk_topp_sampler.py:44] Currently, FlashInfer top-p & top-k sampling sampler is disabled because "
    older += "FlashInfer>=v0.2.3 is not backward compatible. Falling back to the PyTorch-native implementation of top-p & "
    older += "top-k sampling.\nINFO [gpu_worker.py:276] Available KV cache memory: 5.01 GiB"
    assert parse_startups(older)[0].sampler == "pytorch"
    m, g = resolve_model("qwen2.5-7b"), resolve_gpu("a100-80gb")
    base: dict[str, Any] = dict(seq=16384, engine="vllm@0.10.1.1", util=0.25, max_num_batched_tokens=2048)

    def activation(sampler: str | None) -> Any:
        return next(e for e in fit(m, g, FitInputs(**base, sampler=sampler)).estimates if e.key == "activation")

    # The sampler's peak holds its 256 rows' logits beside the profile's 2,048 tokens of hidden states
    # (3,584 x 2 B each), the 256 rows taken from them and their random copy, and torch's cuBLAS workspaces
    # on an A100 (4,096 KiB x 2 + 16 KiB x 8, cuBLASLt's 1,024 KiB), above the forward pass: the best
    # figure and the range follow the sampler named.
    hidden = 2048 * 3584 * 2 + 2 * 256 * 3584 * 2 + 4096 * 1024 * 2 + 16 * 1024 * 8 + 1024 * 1024
    fi, pt = activation("flashinfer"), activation("pytorch")
    # PyTorch's sort path at 38 B a logit, as a 0.10.2 breakdown that names it measures (kolyangg/mlops-assignment:
    # 5.58 GiB of peak activation = 1,024 rows x 151,936 x 38.0 B + 8,192 x 2,048 x 2 B of hidden states,
    # 2 x 1,024 x 2,048 x 2 B of the sampler's rows and their random copy, and 33 MiB of cuBLAS workspaces).
    assert fi.best == 256 * 152064 * 14 + hidden and pt.best == 256 * 152064 * 38 + hidden
    assert (fi.low, fi.high) == (256 * 152064 * 12 + hidden, 256 * 152064 * 16 + hidden)
    # Its low end is the 28 B of the tensors the code names (what the sort leaves behind it), its high end 40.
    assert (pt.low, pt.high) == (256 * 152064 * 28 + hidden, 256 * 152064 * 40 + hidden)
    # Without a sampler named, the release's estimate lies between the two paths: 28 B, 12 to 40.
    unknown = activation(None)
    assert unknown.best == 256 * 152064 * 28 + hidden and fi.best < unknown.best < pt.best


# ---- 0.8.3's V0 fallback, same-line budget terms and Ray's deduplication (2026-12-02) ---------

_REAL = Path(__file__).resolve().parent / "logs" / "real"


def _llama_pp(cli):
    """explain-log's JSON for surajssd/llm-k8s's Llama-3.3-70B TP 4 x PP 2 start-up."""
    log = _REAL / "vllm-surajssd-8xa100-40gb-llama3.3-70b-tp4pp2.log"
    return cli("explain-log", str(log), "--model", "llama3.3-70b", "--gpu", "a100-40gb", "--json").json()


def test_a_v1_release_running_v0_is_read_with_v0_rules(cli):
    """surajssd/llm-k8s, vLLM 0.8.3 with PP 2: 'Falling back to V0' and 'Initializing a V0 LLM engine
    (v0.8.3)'; its accounting is V0's (0.7's rules), not 0.8's V1."""
    from kvcalc.inputs.logs import parse_log

    text = (_REAL / "vllm-surajssd-8xa100-40gb-llama3.3-70b-tp4pp2.log").read_text()
    f = parse_log(text)
    assert f.version == "0.8.3" and f.v0_engine
    d = _llama_pp(cli)
    assert d["startups"][0]["engine"] == "vllm@0.7"
    # But its pipeline stages are 0.8.3's (get_pp_indices changed in 0.8.0): the layers left over go to the
    # stages before the last, where 0.7 gave them all to the last.
    from kvcalc.engine.engines import ENGINES

    assert choose_engine(f)[0].pp_split == "before-last" and ENGINES["vllm@0.7"].pp_split == "last"
    # Without the lines that say V0 the log's own modules still do (V0's worker.py and model_runner.py, where
    # V1 prints gpu_worker.py and gpu_model_runner.py, since 2026-12-05); without those too, the same version is V1's.
    said = "\n".join(line for line in text.splitlines() if "V0" not in line)
    assert "[worker.py:" in said and parse_log(said).v0_engine
    v1 = "\n".join(line for line in said.splitlines() if "[worker.py:" not in line and "[model_runner.py:" not in line)
    assert not parse_log(v1).v0_engine


def test_a_v1_release_whose_lines_come_from_v0_modules_is_read_with_v0_rules():
    """gpustack/gpustack#1800: vLLM 0.8.4 started by GPUStack on its V0 engine, the excerpt without a line
    that says so; its modules do (V0's model_runner.py and worker.py's start check, where V1 has
    gpu_model_runner.py and kv_cache_utils.py), so 0.7's V0 rules read it, not 0.8.4's V1 ones."""
    from kvcalc.engine.explain import choose_engine
    from kvcalc.inputs.logs import parse_log

    log = (
        "INFO 04-17 15:09:15 [api_server.py:1034] vLLM API server version 0.8.4\n"
        "INFO 04-17 15:09:36 [model_runner.py:1110] Starting to load model /var/lib/gpustack/cache/Qwen2.5-VL-7B-Instruct...\n"
        'ERROR 04-17 15:10:09 [engine.py:448]   File "/opt/conda/lib/python3.11/site-packages/vllm/worker/worker.py", '
        "line 545, in raise_if_cache_size_invalid\n"
        "ERROR 04-17 15:10:09 [engine.py:448] ValueError: The model's max seq len (8192) is larger than the maximum number "
        "of tokens that can be stored in KV cache (2400). Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.\n"
    )
    f = parse_log(log)
    assert f.version == "0.8.4" and f.v0_engine
    assert choose_engine(f)[0].key == "vllm@0.7"
    # The same version with V1's modules is V1's; and with a line of V1's beside V0's modules (the repository's
    # hand-written 0.8 log has V1's engine and kv_cache_utils.py lines and V0's worker.py breakdown) V1 stands.
    g = parse_log(log.replace("[model_runner.py:", "[gpu_model_runner.py:").replace("raise_if_cache_size_invalid", "check"))
    assert not g.v0_engine and choose_engine(g)[0].key == "vllm@0.8.4"
    both = parse_log(log + "INFO 04-17 15:10:00 [kv_cache_utils.py:578] GPU KV cache size: 2,400 tokens\n")
    assert both.v0_modules and both.v1_engine and not both.v0_engine


def test_a_v0_release_running_v1_is_read_with_the_earliest_v1_rules(cli):
    """vllm-project/vllm#12569 (main of 2025-01-30, between 0.7.0 and 0.7.1): VLLM_USE_V1=1 on the launch
    line, V1's gpu_model_runner.py and kv_cache_utils.py lines, no version line. Its V0-era formats
    ('Loading model weights took X GB') alone read as V0 (+27.7% on its 1,381 blocks, the fourteenth
    set's first score); its V1 lines make it the earliest V1 record's rules, vllm@0.8 (1,266 blocks: -8.3%)."""
    from kvcalc.engine.explain import choose_engine
    from kvcalc.inputs.logs import parse_log

    log = _REAL / "vllm-12569-h100-llama3.1-70b-w8a8.log"
    f = parse_log(log.read_text())
    assert f.v1_engine and not f.v0_engine and f.version is None and f.gpu_blocks == 1381
    eng, why = choose_engine(f)
    assert eng.key == "vllm@0.8" and "V1 engine lines in formats before 0.8" in why.detail
    # With the release named, the same: 0.7.1 alone is V0's record.
    f.version = "0.7.1"
    eng, why = choose_engine(f)
    assert eng.key == "vllm@0.8" and "running its V1 engine" in why.detail
    # With V0's source files and no VLLM_USE_V1 it reads as V0, as before.
    v0 = log.read_text().replace("VLLM_USE_V1=1 ", "").replace("gpu_model_runner.py", "model_runner.py")
    g = parse_log(v0.replace("kv_cache_utils.py", "executor_base.py"))
    assert not g.v1_engine and choose_engine(g)[0].key == "vllm@0.6"
    args = ("--model", "llama3.1-70b", "--gpu", "h100-sxm", "--weight-dtype", "int8", "--json")
    d = cli("explain-log", str(log), *args).json()["startups"][0]
    assert d["engine"] == "vllm@0.8"
    blocks = next(r for r in d["rows"] if r["key"] == "gpu_blocks")
    assert (blocks["log"], blocks["estimate"]) == (1381, 1266)
    # 1,266 blocks: (0.98 x 79.19 GiB - 67.73 weights - 3.61 activation - 0.08 non-torch) / (16 x 320 KiB).
    pool = 0.98 * 85_030_076_416 - 72_723_349_504 - 3_879_731_200 - 83_886_080
    assert int(pool // (16 * 327_680)) == 1266


def test_budget_terms_come_from_the_kept_line_and_ray_merges_are_said(cli):
    """The first breakdown line (a second-stage rank: non-torch 2.11, activation 0.22, KV 16.75 GiB)
    is kept whole; the last (0.25 / 1.03 / 17.80, Ray's merged line) no longer lends its terms:
    39.49 x 0.9 - 16.46 - 0.22 - 2.11 = 16.751 GiB."""
    from kvcalc.inputs.logs import parse_log

    f = parse_log((_REAL / "vllm-surajssd-8xa100-40gb-llama3.3-70b-tp4pp2.log").read_text())
    assert (f.available_kv_gib, f.activation_gib, f.non_torch_gib, f.breakdown_weights_gib) == (16.75, 0.22, 2.11, 16.46)
    assert f.ray_deduplicated
    d = _llama_pp(cli)
    keys = [n["key"] for n in d["startups"][0]["notes"]]
    assert "ray_dedup" in keys
    # DeepSeek-V2.5: 'Model loading took 28.4772 GiB' (a second-stage rank, printed first) is not the
    # first-stage budget line's 27.63.
    g = parse_log((_REAL / "vllm-surajssd-16xa100-40gb-deepseek-v2.5-tp8pp2.log").read_text())
    assert (g.weights_gib, g.breakdown_weights_gib, g.available_kv_gib) == (28.4772, 27.63, 5.71)


def test_the_third_held_out_paragraph_is_current(cli):
    import re

    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "accuracy.md").read_text().split())
    got = {}
    for name, model, gpu in (
        ("vllm-surajssd-8xa100-40gb-llama3.3-70b-tp4pp2", "llama3.3-70b", "a100-40gb"),
        ("vllm-surajssd-16xa100-40gb-deepseek-v2.5-tp8pp2", "deepseek-v2", "a100-40gb"),
    ):
        r = cli("explain-log", str(_REAL / f"{name}.log"), "--model", model, "--gpu", gpu)
        m = re.search(
            r"own figures to ([+-][0-9.]+%), and from\s+its settings\s+alone to ([+-][0-9.]+%)", " ".join(r.out.split())
        )
        assert m, r.out[:300]
        got[name] = m.groups()
    llama, ds = got["vllm-surajssd-8xa100-40gb-llama3.3-70b-tp4pp2"], got["vllm-surajssd-16xa100-40gb-deepseek-v2.5-tp8pp2"]
    assert f"Now: Llama {llama[0]} and {llama[1]}, DeepSeek-V2.5 {ds[0]} and {ds[1]}" in doc


def test_a_pool_given_as_kv_cache_memory_bytes_is_read_as_the_pool(tmp_path, cli):
    """vLLM 0.10.2 and later, given kv_cache_memory_bytes, log "Initial free memory F GiB, reserved N GiB
    memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling" (the
    f-string of v1/worker/gpu_worker.py determine_available_memory: 0.11.0 writes "{N:.2f}GiB", 0.33.0
    "{N} GiB"). explain-log takes N as the pool, and kvcalc's estimate takes it as given too."""
    for reserved in ("40.00GiB", "40.00 GiB"):
        text = (
            "INFO 12-02 10:00:00 [gpu_worker.py:251] Initial free memory 78.50 GiB, reserved "
            f"{reserved} memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory "
            "profiling. This does not respect the gpu_memory_utilization config.\n"
            "INFO 12-02 10:00:01 [kv_cache_utils.py:1087] GPU KV cache size: 327,680 tokens\n"
        )
        f = parse_log(text)
        assert (f.kv_cache_memory_gib, f.available_kv_gib, f.kv_tokens) == (40.0, 40.0, 327_680)
        log = tmp_path / "given.log"
        log.write_text(text)
        d = cli("explain-log", log, "--model", "llama3.1-8b", "--gpu", "h100", "--engine", "vllm@0.11", "--json").json()
        rows = {r["key"]: r for r in d["startups"][0]["rows"]}
        # 40 GiB of 16-token blocks of 32 x 2 x 8 x 128 x 2 B = 2 MiB: 20,480 blocks, 327,680 tokens.
        assert rows["available_kv"]["estimate"] == 40 * 2**30
        assert rows["kv_tokens"]["from_log"] == rows["kv_tokens"]["estimate"] == 20_480 * 16 == 327_680


def test_an_auto_fitted_max_model_len_is_read_and_predicted(tmp_path, cli):
    """vLLM 0.14 and later under --max-model-len auto log "Auto-fit max_model_len: reduced from A to B to fit
    in available GPU memory (X GiB available for KV cache)" (v1/core/kv_cache_utils.py
    _auto_fit_max_model_len, 0.14.0; "... in available KV cache memory (X)" from kv_cache_planning.py,
    0.33.0). explain-log takes B as max_model_len and sets the length the log's pool gives beside it."""
    for tail in (
        "to fit in available GPU memory (5.70 GiB available for KV cache)",
        "to fit in available KV cache memory (5.70 GiB)",
    ):
        text = (
            "INFO 12-02 10:00:00 [model.py:1510] Using max model len 131072\n"
            "INFO 12-02 10:00:05 [gpu_worker.py:359] Available KV cache memory: 5.70 GiB\n"
            f"INFO 12-02 10:00:05 [kv_cache_utils.py:1442] Auto-fit max_model_len: reduced from 131072 to 46688 {tail}\n"
        )
        f = parse_log(text)
        assert (f.auto_max_len, f.max_model_len) == (46_688, 46_688)
        log = tmp_path / "auto.log"
        log.write_text(text)
        d = cli("explain-log", log, "--model", "llama3.1-8b", "--gpu", "rtx4090", "--engine", "vllm@0.21", "--json").json()
        rows = {r["key"]: r for r in d["startups"][0]["rows"]}
        # 5.70 GiB = 6,120,328,396 B over blocks of 16 tokens x 131,072 B (2 MiB): 2,918 blocks, 46,688 tokens.
        assert rows["auto_max_len"]["log"] == 46_688
        assert rows["auto_max_len"]["from_log"] == int(5.70 * 2**30) // (16 * 131_072) * 16 == 46_688


def test_the_ranks_note_says_which_rule_sizes_the_cache(cli, tmp_path):
    log = tmp_path / "ranks.log"
    log.write_text(
        "".join(
            f"(VllmWorker rank={r} pid={r}) INFO [gpu_worker.py:276] Available KV cache memory: {gib} GiB\n"
            f"(VllmWorker rank={r} pid={r}) INFO [kv_cache_utils.py:716] GPU KV cache size: {tok:,} tokens\n"
            for r, gib, tok in ((0, "35.74", 1_594_928), (1, "35.65", 1_590_736))
        )
    )
    base = [
        "explain-log",
        str(log),
        "--model",
        "llama3.1-8b",
        "--gpu",
        "h100",
        "--engine",
        "vllm@0.11",
        "--max-model-len",
        "8192",
    ]
    tp = " ".join(cli(*base, "--tp", "2").out.split())
    assert "ranks printed 35.74, 35.65 for available_kv_gib: every rank holds the same layers" in tp
    assert "ranks printed 1,594,928, 1,590,736 for kv_tokens: the engine uses the smallest, 1,590,736" in tp
    pp = " ".join(cli(*base, "--pp", "2").out.split())
    assert "each pipeline stage's is its own layers'" in pp


def test_the_budget_line_after_the_cuda_graphs_is_read():
    """vLLM V1 from 0.10.2 prints its budget after the CUDA graphs (v1/worker/gpu_worker.py): the device
    total, the utilisation, the activation peak and non-torch memory are read from it, in its 0.10.2 form
    and in the later one that joins weights and non-torch memory."""
    from kvcalc.inputs.logs import parse_startups

    head = "INFO [gpu_model_runner.py:2392] Model loading took 56.9342 GiB and 13.4 seconds\n"
    head += "INFO [gpu_worker.py:298] Available KV cache memory: 8.68 GiB\n"
    old = head + (
        "INFO [gpu_worker.py:391] Free memory on device (78.57/79.18 GiB) on startup. Desired GPU memory utilization is "
        "(0.9, 71.26 GiB). Actual usage is 56.93 GiB for weight, 5.58 GiB for peak activation, 0.07 GiB for non-torch "
        "memory, and 0.69 GiB for CUDAGraph memory."
    )
    f = parse_startups(old)[0]
    assert (f.total_gib, f.util, f.activation_gib, f.non_torch_gib) == (79.18, 0.9, 5.58, 0.07)
    new = head + (
        "INFO [gpu_worker.py:440] Free memory on device (78.84/79.25 GiB) on startup. Desired GPU memory utilization is "
        "(0.9, 71.33 GiB). Actual usage is 57.26 GiB for consumed memory (weights + non-torch), 0.23 GiB for peak "
        "activation, and 0.11 GiB for CUDAGraph memory."
    )
    g = parse_startups(new)[0]
    assert (g.total_gib, g.activation_gib, g.consumed_gib) == (79.25, 0.23, 57.26)
    # Non-torch memory is the consumed figure less the weights the load line gives: 57.26 - 56.9342.
    assert g.non_torch_gib is not None and abs(g.non_torch_gib - 0.3258) < 1e-9


@pytest.mark.parametrize(
    "line, words",
    [
        ("Desired GPU memory utilization is (99, 71.26 GiB).", "util 99 is out of range"),
        ("Free memory on device (78.57/99999999999999999999999 GiB) on startup.", "total_gib 1e+23 is out of range"),
    ],
)
def test_a_log_figure_no_engine_prints_is_one_line(cli, tmp_path, line, words):
    # A utilisation of 99 or a device of 10^23 GiB in a start-up line is a corrupted or hand-edited log:
    # refused in one line quoting the line, not carried into a pool of 10^26 %.
    log = tmp_path / "h.log"
    log.write_text(
        "INFO [gpu_model_runner.py:1] Model loading took 56.9342 GiB\n"
        "INFO [gpu_worker.py:2] Available KV cache memory: 8.68 GiB\n"
        "INFO [kv_cache_utils.py:3] GPU KV cache size: 94,784 tokens\n"
        f"INFO [gpu_worker.py:4] {line}\n"
    )
    one_line_error(cli("explain-log", str(log), "--model", "qwen3-30b-a3b", "--gpu", "h100"), words, "log line")


@pytest.mark.parametrize(
    "total, available, words",
    [
        ("31.84", "-17.83", "available -17.83 GiB of total 31.84 GiB"),
        ("31.84", "99999.5", "available 99999.5 GiB"),
        ("0.00", "0.00", "total 0 GiB"),
    ],
)
def test_a_trt_free_memory_line_no_engine_prints_is_one_line(cli, tmp_path, total, available, words):
    # TensorRT-LLM's C++ manager itself checks "Free memory cannot exceed total memory" (kvCacheManager.cpp):
    # a negative, oversized or zero-device figure is a corrupted line, refused in one line quoting it.
    log = tmp_path / "t.log"
    log.write_text(
        "[TensorRT-LLM][INFO] Memory usage when calculating max tokens in paged kv cache: "
        f"total: {total} GiB, available: {available} GiB\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 16.05 GiB for max tokens in paged KV cache (263008).\n"
    )
    r = cli("explain-log", str(log), "--model", "llama3.1-8b", "--gpu", "rtx5090", "--engine", "trtllm", "--kv-dtype", "fp8")
    one_line_error(r, words, "log line", "available memory from 0 to that total")


def test_the_trt_free_memory_line_gives_the_pool(cli, tmp_path):
    # The pool is the fraction of what that line says was available: 0.9 x 17.83 GiB = 16.047 GiB, which the
    # 'Allocated 16.05 GiB' line rounds; at 65,536 B a token (fp8 KV: 32 layers x 8 heads x 128 x 2 x 1 B) that is
    # 262,914 tokens, 8,217 blocks of 32 rounded up (NVIDIA/TensorRT-LLM#4275's RTX 5090 start).
    log = tmp_path / "t.log"
    log.write_text(
        "[TensorRT-LLM][INFO] Memory usage when calculating max tokens in paged kv cache: total: 31.84 GiB, "
        "available: 17.83 GiB\n"
        "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 16.05 GiB for max tokens in paged KV cache (263008).\n"
    )
    args = ("explain-log", str(log), "--model", "llama3.1-8b", "--gpu", "rtx5090", "--engine", "trtllm", "--kv-dtype", "fp8")
    d = cli(*args, "--util", "0.9", "--json").json()
    fl = d["startups"][0]["from_log"]
    assert fl["basis"] == "trt_free" and fl["kv_pool_bytes"] == int(0.9 * round(17.83 * 2**30))
    assert fl["kv_pool_tokens"] == 8217 * 32 == 262_944


def test_dtype_float32_makes_the_auto_kv_cache_and_the_weights_32_bit(cli):
    # llm-d-incubation/llm-d-planner#205: Llama-3.1-8B-Instruct under vLLM 0.19.0 with --dtype float32 on an
    # H100 (tests/logs/real). kv_cache_dtype auto is the model's dtype (vLLM utils/torch_utils.py,
    # kv_cache_dtype_str_to_dtype), and the model is built under that default dtype (base_loader.py).
    log = Path(__file__).parent / "logs" / "real" / "vllm-pr205-h100-llama3.1-8b-fp32.log"
    s = cli("explain-log", log, "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--json").json()["startups"][0]
    settings = {x["key"]: x["value"] for x in s["settings"]}
    assert (settings["kv_dtype"], settings["weight_dtype"]) == ("fp32", "fp32")
    # 32 layers x 8 KV heads x 128 x (K and V) x 4 B = 262,144 B a token. The log's pool,
    # 0.95 x 79.19 - 29.98 - 2.21 - 0.25 = 42.7905 GiB, holds 175,270 tokens: 175,264 in blocks of 16;
    # the log says 175,296 (its GiB figures are rounded).
    tokens = next(r for r in s["rows"] if r["key"] == "kv_tokens")
    assert tokens["from_log"] == int((0.95 * 79.19 - 29.98 - 2.21 - 0.25) * GiB // 262_144) // 16 * 16 == 175_264
    # The estimated weights are Llama-3.1-8B's 8,030,261,248 parameters at 4 bytes (29.92 GiB), within 1%.
    weights = next(r for r in s["rows"] if r["key"] == "weights")
    assert abs(weights["estimate"] / 4 - 8_030_261_248) < 0.01 * 8_030_261_248


def test_a_logs_quantization_method_gives_the_weight_format_of_a_16_bit_spec():
    """A log that says its checkpoint is quantized (vLLM's config line: quantization=compressed-tensors,
    its layers' "Using scheme: CompressedTensorsW8A8Int8"; non-default args; SGLang's --quantization)
    is read with the linear layers in that format when the model's spec is 16-bit, as --weight-dtype
    lays a checkpoint out; a --weight-dtype given or a quantized spec wins, and quantization=None is
    no quantization."""
    from kvcalc.engine.explain import Given, explain
    from kvcalc.engine.weights import logged_weight_dtype
    from kvcalc.inputs.logs import parse_startups
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    log = (
        "(EngineCore pid=1) INFO 04-22 00:12:34 [v1/engine/core.py:105] Initializing a V1 LLM engine (v0.19.0) with config: "
        "model='RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8', dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1, "
        "quantization=compressed-tensors, enforce_eager=False, kv_cache_dtype=auto\n"
        "(EngineCore pid=1) DEBUG 04-22 00:12:41 [compressed_tensors.py:759] Using scheme: CompressedTensorsW8A8Int8 for "
        "model.layers.0.self_attn.qkv_proj\n"
        "(EngineCore pid=1) INFO 04-22 00:13:30 [v1/worker/gpu_worker.py:436] Available KV cache memory: 60.00 GiB\n"
    )
    f = parse_startups(log)[0]
    assert (f.quantization, f.quant_scheme) == ("compressed-tensors", "CompressedTensorsW8A8Int8")
    m, g = resolve_model("qwen2.5-7b"), resolve_gpu("h100-sxm")
    r = explain(f, m, g, Given(engine="vllm@0.18"))
    said = {s.key: s for s in r.settings}
    assert (said["weight_dtype"].value, said["weight_dtype"].source) == ("int8", "log")
    assert "CompressedTensorsW8A8Int8" in said["weight_dtype"].detail
    # The same start read with the flag, and with no quantization line: the flag's format, then none.
    told = explain(f, m, g, Given(engine="vllm@0.18", weight_dtype="fp8"))
    flagged = {s.key: s for s in told.settings}
    assert (flagged["weight_dtype"].value, flagged["weight_dtype"].source) == ("fp8", "option")
    assert any("reads as int8; --weight-dtype fp8 used" in w for w in told.warnings)
    agreed = explain(f, m, g, Given(engine="vllm@0.18", weight_dtype="int8"))
    assert not any("reads as" in w for w in agreed.warnings)
    plain = parse_startups(log.replace("quantization=compressed-tensors", "quantization=None"))[0]
    assert plain.quantization == "None"
    assert "weight_dtype" not in {s.key for s in explain(plain, m, g, Given(engine="vllm@0.18")).settings}
    # The config line's None stands against a later line's text: a request whose prompt says quantization=awq.
    asked = parse_startups(
        log.replace("quantization=compressed-tensors", "quantization=None").replace("Using scheme", "Using x")
        + "INFO 04-22 00:14:00 [logger.py:39] Received request cmpl-1: prompt: 'why set quantization=awq?'\n"
    )[0]
    told = explain(asked, m, g, Given(engine="vllm@0.18"))
    assert asked.quantization == "None" and "weight_dtype" not in {s.key for s in told.settings}
    assert not any("quantization" in w for w in told.warnings)
    # A method kvcalc does not lay out is said, not silently counted at 16 bits.
    bnb = parse_startups(log.replace("quantization=compressed-tensors", "quantization=bitsandbytes"))[0]
    told = explain(bnb, m, g, Given(engine="vllm@0.18"))
    assert "weight_dtype" not in {s.key for s in told.settings}
    assert any("quantization=bitsandbytes" in w and "16 bits" in w for w in told.warnings)
    # A spec that is itself quantized keeps its own layout.
    fp8 = parse_startups(log.replace("compressed-tensors", "fp8"))[0]
    q = resolve_model("llama3.1-405b-fp8")
    assert "weight_dtype" not in {s.key for s in explain(fp8, q, g, Given(engine="vllm@0.18", tp=8)).settings}
    # Non-default args and SGLang's launch line name the method too.
    kv = "INFO [gpu_worker.py:436] Available KV cache memory: 10.00 GiB\n"
    args = parse_startups("INFO [utils.py:233] non-default args: {'model': 'x', 'quantization': 'fp8'}\n" + kv)[0]
    assert args.quantization == "fp8"
    sgl = parse_startups(
        "python3 -m sglang.launch_server --model-path x --quantization awq_marlin --tp 2\n"
        "[TP0] KV Cache is allocated. #tokens: 1000, K size: 1.00 GB, V size: 1.00 GB\n"
    )[0]
    assert sgl.quantization == "awq_marlin"
    # The methods and schemes kvcalc reads (vLLM 0.19's QUANTIZATION_METHODS; compressed-tensors' schemes).
    assert [logged_weight_dtype(x) for x in ("fp8", "awq_marlin", "gptq", "mxfp4", "modelopt_fp4", "bitsandbytes")] == [
        "fp8",
        "int4",
        "int4",
        "mxfp4",
        "fp4",
        None,
    ]
    assert logged_weight_dtype("compressed-tensors", "CompressedTensorsWNA16") == "int4"
    assert logged_weight_dtype("compressed-tensors", None) is None
    # docs/explain-log.md names the methods and schemes read: each is.
    from pathlib import Path

    doc = " ".join((Path(__file__).parent.parent / "docs" / "explain-log.md").read_text().split())
    for method in ("awq_marlin", "gptq_marlin", "mxfp4", "modelopt_fp4", "w8a8_int8"):
        assert f"`{method}`" in doc and logged_weight_dtype(method) is not None
    for scheme in ("W8A8Fp8", "WNA16", "W4A16Fp4"):
        assert f"`{scheme}`" in doc and logged_weight_dtype("compressed-tensors", "CompressedTensors" + scheme) is not None
    assert "`quantization=fp8`" in doc and "Using scheme: CompressedTensorsW8A8Int8" in doc
    assert "a method it does not read (bitsandbytes, GGUF) is said in a warning" in doc and logged_weight_dtype("gguf") is None


def test_a_log_naming_a_model_outside_the_catalog_is_told_the_closest(cli):
    """sglang#1386's log names models/Qwen2-72B-Instruct, which the catalog does not hold: one line, exit 2,
    naming the catalog's closest names (Qwen2.5-72B first), as an unknown --model is told."""
    log = _REAL / "sglang-1386-8xh100-qwen2-72b.log"
    line = one_line_error(cli("explain-log", str(log)), "'models/Qwen2-72B-Instruct' is not in the catalog", str(log))
    assert "closest in the catalog: qwen2.5-72b" in line


def test_an_assumed_gpu_the_weights_alone_overflow_is_said(cli, tmp_path, monkeypatch):
    """llm-tracker's Llama-3.1-405B start at TP 8 names no GPU and prints no device total: read on the default
    H100 SXM, its bf16 weights alone (405e9 parameters x 2 B / 8, about 94.3 GiB a GPU) exceed the card's
    79.19 GiB, so the log ran elsewhere (8 x MI300X) and the report says so; with --gpu mi300x it does not."""
    import json

    monkeypatch.chdir(tmp_path)  # no kvcalc.toml
    log = _REAL / "vllm-llmtracker-mi300x-llama3.1-405b-tp8.log"
    r = cli("explain-log", str(log), "--json")
    d = json.loads(r.out)["startups"][0]
    said = " ".join(d["warnings"])
    assert "weights alone take 94.53 GiB a GPU at TP 8 and PP 1, more than the 79.19 GiB of the h100-sxm assumed" in said
    # The model card's 405B parameters at 2 B over 8 GPUs: 94.3 GiB, within half a GiB of kvcalc's count.
    assert abs(94.53 - 405e9 * 2 / 8 / 2**30) < 0.5
    given = json.loads(cli("explain-log", str(log), "--gpu", "mi300x", "--json").out)["startups"][0]
    assert not any("weights alone" in w for w in given["warnings"])
    doc = " ".join((Path(__file__).parent.parent / "docs" / "explain-log.md").read_text().split())
    assert "the model's weights alone exceed it at the log's TP and PP, it says the log ran on another GPU" in doc


def test_a_utf16_log_as_powershell_writes_it_reads_as_the_utf8_one(tmp_path):
    """Windows PowerShell's `>` writes UTF-16LE with a byte-order mark and CRLF line ends: such a log reads
    as its UTF-8 original does, across the reader's 4 MiB chunks (5 MiB of request lines before its start-up)."""
    from kvcalc.inputs.logs import CHUNK, candidate_lines

    text = (_REAL / "vllm-pr205-h100-qwen2.5-7b-w8a8.log").read_text()
    padded = "INFO 04-22 00:00:00 [logger.py:39] Received request chatcmpl-0: prompt: 'hello'\n" * 60_000 + text
    f = tmp_path / "ps.log"
    f.write_bytes(b"\xff\xfe" + padded.replace("\n", "\r\n").encode("utf-16-le"))
    assert f.stat().st_size > CHUNK
    with f.open("rb") as ps, (_REAL / "vllm-pr205-h100-qwen2.5-7b-w8a8.log").open("rb") as plain:
        got = [line.rstrip("\r") for line in candidate_lines(ps)]
        want = list(candidate_lines(plain))
    assert got == want and any("GPU KV cache size" in line for line in got)


def test_an_sglang_logs_per_token_bytes_tell_its_tp_when_the_log_does_not(cli, tmp_path, monkeypatch):
    """vllm#21348's SGLang start of Qwen3-235B-A22B-FP8 (--tp 4 on its launch line, not in the excerpt) allocated
    K and V of 8.23 GB each for 367,404 tokens: 48,105 B a token, a quarter of the model's 192,512 B at TP 1
    (94 layers x 4 KV heads x 128 x 2 x 2 B), so read without --tp the report says TP 4; with --tp 4 it does not.
    And the weights warning, TP being assumed too, names --tp beside --gpu."""
    import json

    monkeypatch.chdir(tmp_path)
    assert 94 * 4 * 128 * 2 * 2 == 192_512 and round(2 * 8.23 * 2**30 / 367_404) == 48_105
    log = _REAL / "sglang-21348-4xh100-qwen3-235b-fp8.log"
    d = json.loads(cli("explain-log", str(log), "--model", "qwen3-235b-a22b-fp8", "--json").out)["startups"][0]
    said = " ".join(d["warnings"])
    # Its KV dtype is not in the excerpt either: a quarter is TP 4 at 16 bits, or TP 2 with an 8-bit cache.
    assert (
        "1/4 of qwen3-235b-a22b-fp8's 192,512 B at TP 1: the log ran at TP 4, or at TP 2 with an 8-bit KV cache "
        "(the log names neither); pass --tp and --kv-dtype" in said
    )
    assert "or at more than TP 1 (the log does not say); pass --gpu or --tp" in said
    bf16 = json.loads(cli("explain-log", str(log), "--model", "qwen3-235b-a22b-fp8", "--kv-dtype", "bf16", "--json").out)
    assert any(w.endswith("the log ran at TP 4; pass --tp 4") for w in bf16["startups"][0]["warnings"])
    given = json.loads(cli("explain-log", str(log), "--model", "qwen3-235b-a22b-fp8", "--tp", "4", "--json").out)
    assert not any("the log ran at TP" in w for w in given["startups"][0]["warnings"])
    doc = " ".join((Path(__file__).parent.parent / "docs" / "explain-log.md").read_text().split())
    assert "1/n of the model's bytes a token at TP 1, it says the log ran at TP n (or at TP n/2 with an 8-bit KV cache" in doc


def test_a_vllm_logs_available_memory_over_its_tokens_tells_its_tp(cli, tmp_path, monkeypatch):
    """vllm#21348's vLLM start (two lines: 8.11 GiB available, 178,880 tokens) of Qwen3-235B-A22B-FP8 at TP 4:
    8.11 GiB / 178,880 = 48,681 B a token, 3.95 times under the model's 192,512 at TP 1, within 2% of 4. A model
    with sliding layers is not told a TP this way (its layers do not hold every token alike)."""
    import json

    monkeypatch.chdir(tmp_path)
    assert round(8.11 * 2**30 / 178_880) == 48_681 and abs(192_512 / 48_681 - 4) < 0.08
    log = _REAL / "vllm-21348-4xh100-qwen3-235b-fp8.log"
    d = json.loads(cli("explain-log", str(log), "--model", "qwen3-235b-a22b-fp8", "--json").out)["startups"][0]
    assert any("are 1/4 of qwen3-235b-a22b-fp8's 192,512 B at TP 1: the log ran at TP 4" in w for w in d["warnings"])
    # Gemma 2's alternate layers hold a window: a log whose tokens are made exactly half kvcalc's bytes a token
    # names no TP.
    from kvcalc.engine.explain import Given, explain
    from kvcalc.inputs.logs import parse_startups
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    avail = "INFO 04-22 00:13:30 [gpu_worker.py:436] Available KV cache memory: 10.00 GiB\n"
    m, gpu = resolve_model("gemma2-9b"), resolve_gpu("h100-sxm")
    per = explain(parse_startups(avail)[0], m, gpu, Given(engine="vllm@0.11")).kv_bytes_per_token
    tokens = int(10 * 2**30 / (per / 2))
    half = parse_startups(avail + f"INFO 04-22 00:13:30 [kv_cache_utils.py:1148] GPU KV cache size: {tokens:,} tokens\n")[0]
    r = explain(half, m, gpu, Given(engine="vllm@0.11"))
    assert round(per / (10 * 2**30 / tokens), 3) == 2.0 and not any("the log ran at TP" in w for w in r.warnings)


@pytest.mark.parametrize(
    ("name", "device", "gpu"),
    [
        ("vllm-augmxnt-mi300x-mixtral-8x7b-tp1.log", "AMD_Instinct_MI300X", "mi300x"),
        ("vllm-anton-rtx3090-qwen3-30b-a3b-awq.log", "NVIDIA_GeForce_RTX_3090", "rtx3090"),
        ("vllm-VedioSifter-rtxpro6000-qwen3-30b-a3b.log", "NVIDIA_RTX_PRO_6000_Blackwell_Server_Edition", "rtx-pro-6000"),
    ],
)
def test_the_gpu_a_kernel_config_line_names_is_the_logs_gpu(cli, tmp_path, monkeypatch, name, device, gpu):
    """vLLM's fused-MoE config lines name the device (".../E=128,N=768,device_name=NVIDIA_GeForce_RTX_3090.json",
    torch's device name with spaces as underscores): read without --gpu, the log's GPU is that one, said as from
    the log; --gpu wins."""
    import json

    monkeypatch.chdir(tmp_path)
    log = _REAL / name
    assert f"device_name={device}" in log.read_text()
    d = json.loads(cli("explain-log", str(log), "--model", "qwen3-30b-a3b", "--json").out)["startups"][0]
    said = next(x for x in d["settings"] if x["key"] == "gpu")
    assert (said["value"], said["source"]) == (gpu, "log") and device in said["detail"]
    given = json.loads(cli("explain-log", str(log), "--model", "qwen3-30b-a3b", "--gpu", "h200", "--json").out)
    assert next(x for x in given["startups"][0]["settings"] if x["key"] == "gpu")["value"] == "h200"


def test_a_device_name_outside_the_catalog_leaves_the_gpu_to_the_other_clues():
    """SGLang's H800 start (device_name=NVIDIA_H800; no H800 spec in the catalog): the device names no catalog GPU."""
    from kvcalc.cli.explain import _gpu_named
    from kvcalc.inputs.logs import parse_log

    f = parse_log((_REAL / "sglang-4161-16xh800-deepseek-r1.log").read_text())
    assert f.device_name == "NVIDIA_H800" and _gpu_named(f.device_name) is None
    assert _gpu_named("NVIDIA_H100_80GB_HBM3").name == "h100-sxm" and _gpu_named("NVIDIA_A100-SXM4-80GB").name == "a100-80gb"
    doc = " ".join((Path(__file__).parent.parent / "docs" / "explain-log.md").read_text().split())
    assert "where a kernel config line names the device (vLLM's and SGLang's fused-MoE configs," in doc
