"""fit: engine budgets, the KV pool, concurrency, the longest request, and TP/PP sharding."""

import math
from fractions import Fraction
from pathlib import Path

import pytest

from conftest import make_model, one_line_error
from kvcalc.engine.alloc import Allocation
from kvcalc.engine.engines import ENGINES
from kvcalc.engine.kv import kv_size, pp_partition, request_bytes
from kvcalc.engine.memory import FitInputs, fit, sglang_mem_fraction
from kvcalc.engine.plan import reverse
from kvcalc.errors import KvcalcError
from kvcalc.specs.catalog import resolve_gpu, resolve_model

GiB, MiB = 2**30, 2**20
ROOT = Path(__file__).resolve().parent.parent
A100 = resolve_gpu("a100-80gb")


def test_vllm_011_budget_line_by_line():
    m = resolve_model("llama2-7b")
    f = fit(
        m,
        A100,
        FitInputs(
            seq=4096, engine="vllm@0.11", gpu_memory=80 * GiB, weights=13_476_831_232, activation=1 * GiB, non_torch=256 * MiB
        ),
    )
    usable = 80 * GiB * 9 // 10
    assert usable == 77_309_411_328
    pool = usable - 13_476_831_232 - 1 * GiB - 256 * MiB
    assert f.kv_pool_bytes == pool == 62_490_402_816
    block = 16 * 2 * 32 * 32 * 128 * 2  # 16 tokens x 524,288 B
    assert f.kv_pool_blocks == pool // block == 7449
    assert f.kv_pool_tokens == 7449 * 16  # 0.11 logs num_blocks // groups x block size
    assert f.max_concurrency == (7449 - 1) // (4096 // 16) == 29  # one block is the null block
    assert f.concurrency == 7449 / 256  # vLLM: blocks / blocks per request
    assert f.weight_bytes == 13_476_831_232
    assert f.max_concurrency_range.low == f.max_concurrency_range.high == 29  # everything measured: no band


def test_current_vllm_budget_rounds_up_and_subtracts_cuda_graphs():
    m = resolve_model("llama2-7b")
    f = fit(
        m,
        A100,
        FitInputs(
            seq=4096, gpu_memory=80 * GiB, weights=13_476_831_232, activation=1 * GiB, non_torch=256 * MiB, cudagraph=512 * MiB
        ),
    )
    usable = 79_027_398_247  # ceil(0.92 x 85,899,345,920 = 79,027,398,246.4)
    assert [b.bytes for b in f.budget if b.key == "usable"] == [usable]
    pool = usable - 13_476_831_232 - 1 * GiB - 256 * MiB - 512 * MiB
    assert f.kv_pool_bytes == pool == 63_671_518_823
    assert f.kv_pool_blocks == pool // (16 * 524_288) == 7590
    assert f.kv_pool_tokens == 7590 * 4096 // 256 == 121_440  # int(max concurrency x max_model_len)
    assert f.max_concurrency == (7590 - 1) // 256 == 29


def test_estimates_carry_ranges_that_measured_flags_collapse():
    m = resolve_model("llama3.1-8b")
    h = resolve_gpu("h100")
    f = fit(m, h, FitInputs(seq=8192))
    keys = {e.key: e for e in f.estimates}
    assert {"activation", "non_torch", "cudagraph", "total"} <= set(keys)
    for k in ("activation", "non_torch", "cudagraph"):
        assert keys[k].low < keys[k].best < keys[k].high and keys[k].reason
    r = f.max_concurrency_range
    assert r.low < f.max_concurrency < r.high
    g = fit(
        m,
        h,
        FitInputs(seq=8192, gpu_memory=85 * 10**9, activation=GiB, non_torch=GiB, cudagraph=GiB, weights=16 * 10**9),
    )
    assert g.max_concurrency_range.low == g.max_concurrency == g.max_concurrency_range.high
    assert all(e.exact for e in g.estimates)


def test_default_weights_are_params_times_dtype():
    m = resolve_model("llama2-7b")  # fp16 weights
    f = fit(m, A100, FitInputs(seq=4096))
    assert f.weight_bytes == 6_738_415_616 * 2 + 4096 * 128 * 2  # plus vLLM's rotary cos/sin cache


def test_sglang_and_trtllm_budgets():
    m = resolve_model("llama3.1-8b")
    common = dict(seq=8192, gpu_memory=80 * GiB, weights=16 * GiB, activation=2 * GiB, non_torch=1 * GiB)
    s = fit(m, A100, FitInputs(engine="sglang", **common))
    # SGLang 0.5 derives mem_fraction_static from the GPU's 81,920 MiB at tp 1: chunked prefill 8,192,
    # CUDA-graph batch 256, reserved 512 + 1.5 x 8,192 + 1 x 1 / 8 x 1,024 + 2 x 256 MiB, and 8 MiB for each of the
    # 58 prompt-step sizes it captures up to 8,192 tokens (0.5.10 on).
    frac = round((81920 - (512 + 1.5 * 8192 + 1024 / 8 + 2 * 256 + 58 * 8)) / 81920, 3)
    assert frac == 0.83 and s.util == frac
    # The pool: mem_fraction_static x what is free at start-up (the total less the 1 GiB in use before the
    # weights, given as --non-torch) - weights; activations live in the headroom (issue 19, cause 3).
    assert s.kv_pool_bytes == (80 * GiB - 1 * GiB) * 830 // 1000 - 16 * GiB
    assert s.kv_pool_tokens == s.kv_pool_bytes // (2 * 32 * 8 * 128 * 2)
    t = fit(m, A100, FitInputs(engine="trtllm", **common))
    # TensorRT-LLM: free_gpu_memory_fraction of what is free after weights, activations, non-torch;
    # tokens floor(pool / bytes per token), then whole blocks of 32 rounded up (calculateMaxNumBlocks).
    assert t.kv_pool_bytes == (80 * GiB - 16 * GiB - 2 * GiB - 1 * GiB) * 9 // 10
    assert t.kv_pool_tokens == -(-(t.kv_pool_bytes // 131_072) // 32) * 32


def test_sglang_mem_fraction_matches_its_release():
    """0.835 on an H100 (nvidia-smi 81,559 MiB) at tp 1, 0.818 at tp 8, 0.907 on an H200 (143,771 MiB)."""
    from kvcalc.engine.memory import sglang_mem_fraction

    assert sglang_mem_fraction(81559, 1, 1, "sglang-0.5") == round((81559 - (512 + 12288 + 128 + 512)) / 81559, 3) == 0.835
    assert sglang_mem_fraction(81559, 8, 1, "sglang-0.5") == round((81559 - (512 + 12288 + 1024 + 1024)) / 81559, 3) == 0.818
    assert sglang_mem_fraction(143771, 1, 1, "sglang-0.5") == round((143771 - 13440) / 143771, 3) == 0.907
    # 0.4: a table by TP x PP on GPUs of <= 80 GiB; on an H200 min(0.88 + 48 GiB x 0.12 / memory, (memory - 18 GiB) / memory).
    assert sglang_mem_fraction(81559, 8, 1, "sglang-0.4") == 0.81
    assert sglang_mem_fraction(81559, 2, 2, "sglang-0.4") == 0.85
    assert sglang_mem_fraction(143771, 1, 1, "sglang-0.4") == min(0.88 + 49152 * 0.12 / 143771, (143771 - 18432) / 143771)


def test_sglang_0_4_7_to_0_5_2_mem_fraction_and_dp_attention():
    """server_args.py of 0.4.7, 0.4.7.post1 to 0.5.2, 0.5.3rc2 to 0.5.9 (each wheel read): the reserve by GPU memory,
    and SGLang's tp_size, every GPU of a DP-attention group, where kvcalc's tp is the attention TP."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.memory import sglang_mem_fraction

    # 0.4.7.post1 to 0.5.2: a B200 (183,359 MiB) reserves 32 GiB; an H20 (97,871 MiB) at TP 8 (12 + 8 / 2) GiB; an H100
    # (81,559 MiB) at TP 8 (9.5 + 8 / 2) GiB, and 4 GiB more with DP attention.
    assert sglang_mem_fraction(183359, 8, 1, "sglang-0.4.7.post1") == round((183359 - 32768) / 183359, 3) == 0.821
    assert sglang_mem_fraction(97871, 8, 1, "sglang-0.4.7.post1") == round((97871 - 16384) / 97871, 3) == 0.833
    assert sglang_mem_fraction(81559, 8, 1, "sglang-0.4.7.post1") == round((81559 - 13824) / 81559, 3) == 0.831
    assert sglang_mem_fraction(81559, 8, 1, "sglang-0.4.7.post1", dp=8) == round((81559 - 17920) / 81559, 3) == 0.78
    # 0.4.7: 0.79 on NVIDIA GPUs over 180,000 MiB; elsewhere 0.4.6.post5's rule (an MI300X's 196,592 MiB is ROCm).
    assert sglang_mem_fraction(183359, 8, 1, "sglang-0.4.7") == 0.79
    mi = sglang_mem_fraction(196592, 8, 1, "sglang-0.4.7", cuda=False)
    assert mi == sglang_mem_fraction(196592, 8, 1, "sglang-0.4") == min(0.88 + 49152 * 0.12 / 196592, (196592 - 18432) / 196592)
    # 0.5.3 on: DP attention adds cuda_graph_max_bs x dp x 3 MiB, and x 1.5 more past 300: a GB200 (about 189 GiB, the
    # top tier: chunk 16,384, max bs 512) at tp_size 4, dp 2: 512 + 24,576 + 512 + 1,024 + 3,072 + 1,536 = 31,232 MiB.
    assert sglang_mem_fraction(189471, 4, 1, "sglang-0.5", dp=2) == round((189471 - 31232) / 189471, 3)
    # Under DP attention fit passes SGLang's tp_size, kvcalc's tp x dp: --tp 16 --dp 16 on H100s is 16 ways, 0.79 in 0.4.
    r = fit(resolve_model("deepseek-v3"), resolve_gpu("h100"), FitInputs(seq=4096, engine=engine("sglang@0.4.6.post2"), dp=16))
    assert r.util == 0.79
    # Each release to its record.
    assert [engine(f"sglang@{v}").key for v in ("0.4.6.post5", "0.4.7", "0.4.8", "0.4.10.post2", "0.5.2", "0.5.3")] == [
        "sglang@0.4",
        "sglang@0.4.7",
        "sglang@0.4.7.post1",
        "sglang@0.4.9.post3",
        "sglang@0.5.2",
        "sglang@0.5.3",
    ]


def test_sglang_cuts_a_multimodal_models_fraction_by_release():
    """model_runner.py: x 0.95 (0.3.0 to 0.4.4.post3) or x 0.9 (0.4.4.post4 to 0.4.8), given or default; none in 0.4.9 to 0.4.9.post2; from 0.4.9.post3
    (server_args.py adjust_mem_fraction_for_vlm; memory_hook.py from 0.5.19) the default alone, x 0.95 x
    clamp(1 - 0.1 x (layers x hidden^2 / (24 x 1024^2) - 1), 0.8, 1.05), vision_config's num_hidden_layers and
    hidden_size (24 and 1024 where it names neither)."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.memory import vit_fraction_factor

    # Gemma 3 (27 layers of 1,152): 27 x 1,152^2 / (24 x 1,024^2) = 1.423828; 0.95 x (1 - 0.0423828).
    assert (
        round(vit_fraction_factor(resolve_model("gemma3-27b")), 6)
        == round(0.95 * (1 - 0.1 * (27 * 1152**2 / (24 * 1024**2) - 1)), 6)
        == 0.909736
    )
    # Qwen2.5-VL's vision_config names its depth 'depth', so SGLang takes 24 layers of 1,280: 0.95 x (1 - 0.05625).
    assert vit_fraction_factor(resolve_model("qwen2.5-vl-7b")) == 0.95 * (1 - 0.1 * (1280**2 / 1024**2 - 1))
    # Llama 4 Scout (34 of 1,408) and Llama 3.2 Vision (32 of 1,280, its 8 global layers not read).
    assert round(vit_fraction_factor(resolve_model("llama4-scout")), 6) == 0.790553
    assert round(vit_fraction_factor(resolve_model("llama3.2-11b-vision")), 6) == round(
        0.95 * (1 - 0.1 * (32 * 1280**2 / (24 * 1024**2) - 1)), 6
    )
    g, h = resolve_model("gemma3-27b"), resolve_gpu("h100")

    def util(eng: str, given: float | None = None) -> float | None:
        return fit(g, h, FitInputs(seq=4096, engine=engine(eng), util=given)).util

    # 0.5.23 on an H100 at TP 1: no prompt graphs for a multimodal model, so 0.835, then x 0.909736.
    assert util("sglang") == 0.835 * vit_fraction_factor(g)
    assert util("sglang@0.4.9") == round((81559 - 10240) / 81559, 3)
    assert util("sglang@0.4.8") == round((81559 - 10240) / 81559, 3) * 0.9 and util("sglang@0.4.8", 0.8) == 0.8 * 0.9
    assert util("sglang", 0.8) == util("sglang@0.4.9", 0.8) == 0.8
    # model_runner.py multiplied by 0.95 up to 0.4.4.post3 (0.3.0, 0.4.0, 0.4.3 and 0.4.4.post3 read), 0.9 from 0.4.4.post4.
    assert util("sglang@0.4.4.post3", 0.8) == 0.8 * 0.95 and util("sglang@0.4.4.post4", 0.8) == 0.8 * 0.9
    assert util("sglang@0.3.0", 0.8) == 0.8 * 0.95
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    k = {
        m: f"{vit_fraction_factor(resolve_model(m)):.3f}"
        for m in ("qwen2.5-vl-7b", "qwen3-vl-8b", "gemma3-27b", "llama3.2-11b-vision", "llama4-scout")
    }
    assert k == {
        "qwen2.5-vl-7b": "0.897",
        "qwen3-vl-8b": "0.925",
        "gemma3-27b": "0.910",
        "llama3.2-11b-vision": "0.847",
        "llama4-scout": "0.791",
    }
    assert (
        "Qwen2.5-VL x 0.897, Qwen3-VL x 0.925; Gemma 3 (27 of 1,152) x 0.910, Llama 3.2 Vision (32 of 1,280; its 8 global layers not read) x 0.847, Llama 4 Scout (34 of 1,408) x 0.791"
        in doc
    )
    # A text-only model is not cut.
    assert fit(resolve_model("gemma3-1b"), h, FitInputs(seq=4096, engine=engine("sglang@0.4.8"))).util == 0.874


def test_sglang_cuts_the_fraction_for_rocm_aiter_attention_over_8k_tokens():
    """model_runner.py (0.4.7 to 0.5.4), server_args.py (0.5.5 to 0.5.18), arg_groups/attention_hook.py (0.5.19 on):
    x 0.85, given or default, where aiter attention (ROCm's default for MHA, and for MLA at 16 or 128 heads over
    tp_size) runs at a context over 8,192 tokens."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.memory import sglang_mem_fraction

    mi = resolve_gpu("mi300x")
    mib = mi.memory_smi_mib or mi.memory_runtime_bytes // 2**20

    def util(model: str, eng: str, tp: int = 1, **kw: object) -> float | None:
        return fit(resolve_model(model), mi, FitInputs(seq=4096, engine=engine(eng), tp=tp, **kw)).util  # type: ignore[arg-type]

    base = sglang_mem_fraction(mib, 1, 1, "sglang-0.5.3", cuda=False)
    # Llama-3.1-8B's context is 131,072 tokens: cut; at --max-model-len 8,192 not; nor before 0.4.7, nor on NVIDIA.
    assert util("llama3.1-8b", "sglang@0.5.9") == base * 0.85
    assert util("llama3.1-8b", "sglang@0.5.9", max_model_len=8192) == base
    assert util("llama3.1-8b", "sglang@0.5.9", util=0.8) == 0.8 * 0.85
    # sglang#36656's nightly (Llama-3.1-8B, aiter): "MF 0.867", "old effective MF 0.73695".
    assert util("llama3.1-8b", "sglang@0.5.9", util=0.867) == 0.867 * 0.85 and round(0.867 * 0.85, 5) == 0.73695
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    assert "names its fraction 0.867 and its effective one 0.73695, 0.867 x 0.85" in doc
    assert util("llama3.1-8b", "sglang@0.4.6.post5") == sglang_mem_fraction(mib, 1, 1, "sglang-0.4", cuda=False)
    assert (
        fit(resolve_model("llama3.1-8b"), resolve_gpu("h100"), FitInputs(seq=4096, engine=engine("sglang@0.5.9"))).util == 0.835
    )
    # MLA: DeepSeek-V3's 128 heads over TP 8 are 16, aiter's; Kimi-K2's 64 over 8 are 8, Triton's.
    ds = sglang_mem_fraction(mib, 8, 1, "sglang-0.5.3", cuda=False)
    assert util("deepseek-v3", "sglang@0.5.9", tp=8) == ds * 0.85
    assert util("kimi-k2", "sglang@0.5.9", tp=8) == ds


def test_sglang_prompt_graphs_and_their_reserve_by_release():
    """Which SGLang releases capture prompt steps in graphs, read in each wheel: 0.5.10 to 0.5.14's piecewise
    graphs are off for DP attention, PP and Qwen3-Next (server_args.py _handle_piecewise_cuda_graph, 0.5.10;
    _disable_tc_piecewise_cudagraph_if_incompatible, 0.5.14; configs/model_config.py's architecture list, with
    DeepSeek-V3.2 and GLM-5 in it to 0.5.12); 0.5.15 on CUDA take breakable graphs, off for MLA models and DP
    attention (0.5.15, 0.5.16), for MLA models without an indexer (0.5.17), for neither after, and for PP from
    0.5.19 (arg_groups/cuda_graph_hook.py); DeepSeek-V3's architecture on trtllm_mla (B200) runs its prompts
    eagerly from 0.5.15, decided after the memory reserve."""
    from kvcalc.engine.engines import engine

    ds, v32, q = resolve_model("deepseek-v3"), resolve_model("deepseek-v3.2"), resolve_model("qwen3-next-80b-a3b")
    kimi, llama = resolve_model("kimi-k2"), resolve_model("llama3.1-8b")

    def graphs(v: str, m: object, dp: int = 1, pp: int = 1, gpu: str = "h200", sizing: bool = False) -> bool:
        return engine(f"sglang@{v}").prompt_graphs(pp, "NVIDIA", m, dp, gpu, sizing)  # type: ignore[arg-type]

    # DP attention: off to 0.5.16, on from 0.5.17.
    assert [graphs(v, llama, dp=8) for v in ("0.5.10", "0.5.14", "0.5.15", "0.5.16", "0.5.17", "0.5.19", "0.5.23")] == [
        False, False, False, False, True, True, True
    ]  # fmt: skip
    # MLA: on under the piecewise graphs, off in 0.5.15 and 0.5.16, off in 0.5.17 unless sparse, on after.
    assert [graphs(v, ds) for v in ("0.5.12", "0.5.14", "0.5.16", "0.5.17", "0.5.18")] == [True, True, False, False, True]
    assert [graphs(v, v32) for v in ("0.5.12", "0.5.13", "0.5.16", "0.5.17")] == [False, True, False, True]
    # Qwen3-Next: off while the piecewise graphs are the default (0.5.10 to 0.5.14), on under the breakable ones.
    assert [graphs(v, q) for v in ("0.5.10", "0.5.14", "0.5.15", "0.5.23")] == [False, False, True, True]
    # PP: off under the piecewise graphs, on in 0.5.15 to 0.5.18, off from 0.5.19.
    assert [graphs(v, llama, pp=2) for v in ("0.5.14", "0.5.15", "0.5.18", "0.5.19", "0.5.23")] == [
        False,
        True,
        True,
        False,
        False,
    ]
    # DeepSeek-V3 and Kimi-K2 (DeepseekV3ForCausalLM) on a B200 from 0.5.18: eager prompts, but the reserve stays.
    for m in (ds, kimi):
        assert not graphs("0.5.18", m, gpu="b200") and graphs("0.5.18", m, gpu="b200", sizing=True)
        assert graphs("0.5.18", m, gpu="h200") and not graphs("0.5.23", m, gpu="gb200")
    assert graphs("0.5.18", v32, gpu="b200")
    # fit follows the release: DP attention's reserve differs between 0.5.14 and 0.5.19 (H200, TP 1 x DP 8).
    h200 = resolve_gpu("h200")
    u14, u19 = (
        fit(llama, h200, FitInputs(seq=4096, engine=engine(f"sglang@{v}"), tp=1, dp=8)).util for v in ("0.5.14", "0.5.19")
    )
    assert u14 == sglang_mem_fraction(143771, 8, 1, "sglang-0.5.10", dp=8, prefill_graphs=False)
    assert u19 == sglang_mem_fraction(143771, 8, 1, "sglang-0.5.10", dp=8, prefill_graphs=True) < u14
    # docs/engines.md: DeepSeek-V3 at TP 8 on H200s (143,771 MiB): 512 + 1.5 x 8,192 + 1,024 + 2 x 512 = 14,848 MiB,
    # and 1,536 more for an MLA model's prompt graphs under 0.5.14 and 0.5.18, none under 0.5.16.
    ut = {v: fit(ds, h200, FitInputs(seq=4096, engine=engine(f"sglang@{v}"), tp=8)).util for v in ("0.5.14", "0.5.16", "0.5.18")}
    assert ut == {
        "0.5.14": round((143771 - 14848 - 1536) / 143771, 3),
        "0.5.16": round((143771 - 14848) / 143771, 3),
        "0.5.18": 0.886,
    }
    assert ut["0.5.16"] == 0.897
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    assert "DeepSeek-V3 at TP 8 on H200s reserves 1.5 GiB more under 0.5.14 and 0.5.18 than under 0.5.16" in doc
    assert "for MLA models and DP attention in 0.5.15 and 0.5.16, for MLA models without an indexer in 0.5.17" in doc


def test_sglang_0_5_10_on_reserves_for_prompt_graphs():
    """0.5.10 on (server_args.py 0.5.10 to 0.5.18, arg_groups/memory_hook.py 0.5.19 to 0.5.23): 8 MiB for each
    prompt-step size captured up to the chunk, 1.5 GiB for an MLA model, before the 10 GiB floor; 0.5.10 to 0.5.19
    capture none under DP attention; 0.5.20 on take a 4,096-token chunk and decode graphs to 48 under 35 GiB."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.memory import prefill_graph_sizes, sglang_mem_fraction

    # 4..32 by 4 (8), 48..256 by 16 (14), 288..512 by 32 (8), 576..1024 by 64 (8), 1280..4096 by 256 (12), then by 512.
    assert [prefill_graph_sizes(n) for n in (2048, 4096, 8192, 16384)] == [42, 50, 58, 74]
    # An H100 at TP 1: 512 + 12,288 + 128 + 512 + 58 x 8 = 13,904 MiB; an MLA model 512 + 12,288 + 128 + 512 + 1,536.
    assert sglang_mem_fraction(81559, 1, 1, "sglang-0.5", prefill_graphs=True) == round((81559 - 13904) / 81559, 3) == 0.83
    mla = sglang_mem_fraction(81559, 1, 1, "sglang-0.5", prefill_graphs=True, mla=True)
    assert mla == round((81559 - 14976) / 81559, 3) == 0.816
    # Under the floor the reserve does not show: an H200 at TP 1 (143,771 MiB) 13,440 + 464 = 13,904 MiB still.
    assert sglang_mem_fraction(143771, 1, 1, "sglang-0.5", prefill_graphs=True) == round((143771 - 13904) / 143771, 3)
    # Without prompt graphs, no reserve for them: as 0.5.3 to 0.5.9's rule.
    dp = sglang_mem_fraction(81559, 8, 1, "sglang-0.5.10", dp=8, prefill_graphs=False)
    assert (
        dp
        == sglang_mem_fraction(81559, 8, 1, "sglang-0.5.3", dp=8)
        == round((81559 - (512 + 12288 + 1024 + 1024 + 12288 + 6144)) / 81559, 3)
    )
    # An RTX 4090 (24,564 MiB) at TP 1: 0.5.20 on 512 + 1.5 x 4,096 + 128 + 2 x 48 + 50 x 8 = 7,280 MiB; 0.5.19 512 +
    # 3,072 + 128 + 2 x 24 + 42 x 8 = 4,096; 0.5.9 (no prompt graphs) 3,760.
    assert sglang_mem_fraction(24564, 1, 1, "sglang-0.5", prefill_graphs=True) == round((24564 - 7280) / 24564, 3) == 0.704
    assert sglang_mem_fraction(24564, 1, 1, "sglang-0.5.10", prefill_graphs=True) == round((24564 - 4096) / 24564, 3)
    assert sglang_mem_fraction(24564, 1, 1, "sglang-0.5.3") == round((24564 - 3760) / 24564, 3) == 0.847
    # fit passes whether the record's prompt steps run in graphs: Llama-3.1-8B on an H100 under sglang (0.5.23), 0.83.
    r = fit(resolve_model("llama3.1-8b"), resolve_gpu("h100"), FitInputs(seq=4096, engine=engine("sglang")))
    assert r.util == 0.83
    assert [engine(f"sglang@{v}").key for v in ("0.5.9", "0.5.10", "0.5.19", "0.5.20", "0.5.23")] == [
        "sglang@0.5.9",
        "sglang@0.5.12",
        "sglang@0.5.19",
        "sglang@0.5",
        "sglang@0.5",
    ]
    assert sglang_mem_fraction(24564, 1, 1, "sglang-0.5.10", prefill_graphs=True) == 0.833
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    assert "before the floor: 0.83 on an H100 at TP 1" in doc
    assert "0.704 on an RTX 4090 at TP 1, where 0.5.19 gives 0.833 and 0.5.9 0.847" in doc
    assert engine("sglang@0.5.19").default_batched_tokens(24 * 2**30, "rtx4090", 8192) == 2048
    assert engine("sglang").default_batched_tokens(24 * 2**30, "rtx4090", 8192) == 4096


def test_sglang_holds_every_token_of_sliding_layers_unless_allowlisted():
    """SGLang keeps a sliding pool only for allowlisted architectures: Gemma-3 holds all 62 layers."""
    g = resolve_model("gemma3-27b")
    s = fit(g, resolve_gpu("h100"), FitInputs(seq=32768, engine="sglang"))
    assert s.request_bytes == 62 * 32768 * 2 * 16 * 128 * 2 == 16_642_998_272
    o = resolve_model("gpt-oss-120b")  # on the allowlist: a full pool plus a sliding pool of 0.8 its tokens
    r = fit(o, resolve_gpu("h100"), FitInputs(seq=32768, engine="sglang", tp=2))
    per_layer = 2 * 8 // 2 * 64 * 2  # 8 KV heads of 64 split over 2 ranks
    cell = 18 * per_layer + 0.8 * 18 * per_layer
    full = int(r.kv_pool_bytes // cell)
    assert r.kv_pool_tokens == full
    assert r.max_concurrency == min(full // 32768, int(full * 0.8) // 128)


def test_vllm_sliding_window_reservation():
    m = resolve_model("gemma2-9b")  # 21 sliding (4096) + 21 full layers, 8 KV heads x 256
    alloc = ENGINES["vllm"].allocation(16, 8192)
    per_layer_token = 2 * 8 * 256 * 2
    # Sliding layers reserve cdiv(min(4096 - 1 + 8192, S), 16) + 1 blocks.
    sliding_blocks = -(-min(4096 - 1 + 8192, 8192) // 16) + 1
    assert sliding_blocks == 513
    expected = 21 * sliding_blocks * 16 * per_layer_token + 21 * (8192 // 16) * 16 * per_layer_token
    assert request_bytes(m, 8192, "bf16", alloc=alloc) == expected
    # Logically a sliding layer holds min(S, window).
    assert request_bytes(m, 8192) == 21 * 4096 * per_layer_token + 21 * 8192 * per_layer_token


def test_hf_dynamic_cache_keeps_window_minus_one():
    m = resolve_model("mistral-7b-v0.1")
    r = kv_size(m, 8192, alloc=ENGINES["hf"].allocation())
    assert r.kv_bytes_per_request == 32 * 4095 * 2 * 8 * 128 * 2


def test_longest_request_limited_by_memory():
    m = resolve_model("llama3.1-8b")
    f = fit(m, A100, FitInputs(seq=4096, engine="plain", gpu_memory=26 * GiB, weights=16 * GiB))
    # 10 GiB of pool / (2 x 32 x 8 x 128 x 2 B per token).
    assert f.max_seq_len == 10 * GiB // 131_072 == 81_920
    assert f.max_seq_len_limited_by == "memory"
    f2 = fit(m, A100, FitInputs(seq=4096, engine="plain", gpu_memory=26 * GiB + 131_071, weights=16 * GiB))
    assert f2.max_seq_len == 81_920


def test_longest_request_of_an_all_sliding_model_is_its_context():
    m = resolve_model("mistral-7b-v0.1")
    f = fit(m, A100, FitInputs(seq=4096, engine="plain"))
    assert f.max_seq_len == 32768 and f.max_seq_len_limited_by == "max context"


def test_weights_that_do_not_fit():
    f = fit(resolve_model("llama3.1-405b"), resolve_gpu("l4"), FitInputs(seq=4096))
    assert not f.fits and f.max_concurrency == 0 and f.kv_pool_bytes < 0
    assert f.warnings


def test_tensor_parallel_splits_and_replicates_kv_heads():
    m = resolve_model("llama3.1-70b")  # 8 KV heads
    assert kv_size(m, 1, tp=4).per_gpu.kv_bytes_per_token == 2 * 80 * 2 * 128 * 2
    assert kv_size(m, 1, tp=8).per_gpu.kv_bytes_per_token == 2 * 80 * 1 * 128 * 2
    r16 = kv_size(m, 1, tp=16)  # 16 ranks, 8 heads: each head on 2 ranks
    assert r16.per_gpu.kv_bytes_per_token == 2 * 80 * 1 * 128 * 2
    assert r16.kv_bytes_per_token == 16 * 2 * 80 * 1 * 128 * 2
    with pytest.raises(KvcalcError, match=r"TP 3 .*\(tp\)"):
        kv_size(m, 1, tp=3)
    with pytest.raises(KvcalcError, match=r"TP 2 .*\(tp\)"):
        kv_size(resolve_model("falcon-7b"), 1, tp=2)  # 71 query heads


def test_library_errors_name_the_argument_and_the_cli_its_option(cli):
    # The library speaks of its own arguments; each command turns them into its options.
    m = resolve_model("llama3.1-8b")
    with pytest.raises(KvcalcError) as e:
        kv_size(m, 1, tp=3)
    assert e.value.where == "tp" and "--" not in e.value.line()
    from kvcalc.engine.deployment import Shape, check_shape

    with pytest.raises(KvcalcError) as e:
        check_shape(m, Shape(1, 1, 1, 2))
    assert e.value.where == "ep" and "--" not in e.value.line()
    r = cli("size", "--model", "llama3.1-8b", "--seq", "4k", "--tp", "3")
    assert r.code == 2 and "(--tp)" in r.err
    r = cli("fit", "--model", "llama3.1-8b", "--seq", "4k", "--ep", "2")
    assert r.code == 2 and "(--ep)" in r.err
    r = cli("roofline", "--batch", "1..20000:1", "--seq", "1k..100k:1k")
    assert r.code == 2 and "(--batch x --seq)" in r.err, r.err


def test_mla_latent_is_replicated_under_tp():
    m = resolve_model("deepseek-v3")
    r = kv_size(m, 1, tp=8)
    assert r.per_gpu.kv_bytes_per_token == 61 * 576 * 2
    assert r.kv_bytes_per_token == 8 * 61 * 576 * 2


def test_transformers_4_expands_mla():
    m = resolve_model("deepseek-v3")
    latent = kv_size(m, 1, alloc=ENGINES["hf"].allocation()).kv_bytes_per_token
    expanded = kv_size(m, 1, alloc=ENGINES["hf4"].allocation()).kv_bytes_per_token
    assert latent == 61 * (512 + 64) * 2
    assert expanded == 61 * 128 * ((128 + 64) + 128) * 2
    assert round(expanded / latent) == 71


def test_pipeline_parallel_partition():
    assert pp_partition(32, 3) == [11, 11, 10]
    assert pp_partition(80, 4) == [20, 20, 20, 20]
    assert pp_partition(61, 4) == [15, 15, 16, 15]  # the remainder goes to the stage before the last
    m = resolve_model("llama2-7b")
    r = kv_size(m, 100, pp=3)
    assert r.per_gpu.kv_bytes_per_request == 11 * 2 * 32 * 128 * 100 * 2
    assert r.kv_bytes_per_request == 32 * 2 * 32 * 128 * 100 * 2


def test_block_rounding():
    m = resolve_model("llama2-7b")
    r = kv_size(m, 17, alloc=Allocation("blocks", block_size=16))
    assert r.kv_bytes_per_request == 32 * 32 * 2 * 32 * 128 * 2


def test_kv_dtypes_with_scales():
    m = resolve_model("llama2-7b")
    assert kv_size(m, 1, kv_dtype="fp8").kv_bytes_per_token == 2 * 32 * 32 * 128 * 1
    # int8: 128 bytes + fp16 scale + fp16 zero per token-head vector.
    assert kv_size(m, 1, kv_dtype="int8").kv_bytes_per_token == 2 * 32 * 32 * (128 + 4)
    assert kv_size(m, 1, kv_dtype="int4").kv_bytes_per_token == 2 * 32 * 32 * (64 + 4)
    # NVFP4: 64 bytes + one fp8 scale per 16 elements.
    assert kv_size(m, 1, kv_dtype="fp4").kv_bytes_per_token == 2 * 32 * 32 * (64 + 8)


def test_reverse_question():
    """64 requests of 8k on Llama-3.1-70B at tp 4, H100 (runtime total 85,030,076,416 B, the spec's estimate)."""
    m = resolve_model("llama3.1-70b")
    h = resolve_gpu("h100")
    p = reverse(m, h, FitInputs(seq=8192, tp=4, activation=2 * GiB, non_torch=GiB, cudagraph=GiB // 2), 64)
    # KV: 64 x 8192 tokens x 2 (K, V) x 80 layers x 2 KV heads per rank x 128 x 2 B.
    need = 64 * 8192 * 2 * 80 * 2 * 128 * 2
    assert p.kv_bytes_needed_per_gpu == need == 42_949_672_960
    # Weights: every matrix split 4 ways, the 80 x 2 + 1 norms of 8,192 held whole by each rank.
    norms = (80 * 2 + 1) * 8192
    rope = 131072 * 128 * 2  # vLLM's rotary cos/sin cache, whole on each rank
    weights = (70_553_706_496 - norms) * 2 // 4 + norms * 2 + rope
    fixed = weights + 2 * GiB + GiB + GiB // 2
    assert p.util_needed == pytest.approx((fixed + need) / 85_030_076_416)
    # At tp 4 the pool holds (ceil(0.92 x total) - fixed) // (16 x 81,920 B) blocks, 512 blocks a request,
    # one of them the null block: fewer than 64 requests.
    usable = -(-85_030_076_416 * 92 // 100)
    blocks4 = (usable - fixed) // (16 * 2 * 80 * 2 * 128 * 2)
    assert (blocks4 - 1) // 512 < 64
    assert (
        fit(m, h, FitInputs(seq=8192, tp=4, activation=2 * GiB, non_torch=GiB, cudagraph=GiB // 2)).max_concurrency
        == (blocks4 - 1) // 512
    )
    # The fewest GPUs that hold 64 on whole servers.
    # Brute force over every shape of fewer GPUs: none holds 64 requests; the answer does.
    base = FitInputs(seq=8192, activation=2 * GiB, non_torch=GiB, cudagraph=GiB // 2)

    def holds(tp, pp):
        try:
            return fit(m, h, base.replace(tp=tp, pp=pp)).max_concurrency
        except KvcalcError:
            return 0

    assert p.gpus_needed is not None and p.gpus_needed <= 8
    assert holds(p.tp_needed, p.pp_needed) * p.replicas_needed >= 64

    # The shapes deployed on 8-GPU servers: a replica takes 1, 2, 4 or 8 GPUs of one server or whole
    # servers, and PP splits only across servers (a stage fills a server's TP 8).
    def on_nodes(tp, pp):
        n = tp * pp
        return (8 % n == 0 if n < 8 else n % 8 == 0) and (pp == 1 or tp == 8)

    # Brute force over every such shape of fewer GPUs: none holds 64 requests; the answer does.
    for tp in (1, 2, 4, 8):
        for pp in range(1, 17):
            for reps in range(1, 9):
                if on_nodes(tp, pp) and tp * pp * reps < p.gpus_needed:
                    assert holds(tp, pp) * reps < 64, (tp, pp, reps)
    assert on_nodes(p.tp_needed, p.pp_needed)


def test_vllm_pads_hybrid_groups():
    """vLLM groups each attention type's layers into equal groups (the smaller type's count), padding
    the last: Gemma-3-27B's 52 sliding layers become 6 groups of 10, i.e. 60 layer slots."""
    m = resolve_model("gemma3-27b")
    alloc = ENGINES["vllm"].allocation(16, 8192)
    per_layer_token = 2 * 16 * 128 * 2
    sliding_tokens = (-(-min(1024 - 1 + 8192, 32768) // 16) + 1) * 16  # 9,232
    assert request_bytes(m, 32768, "bf16", alloc=alloc) == (10 * 32768 + 60 * sliding_tokens) * per_layer_token
    r = kv_size(m, 32768, alloc=alloc)
    assert {row.name: row.layers for row in r.layers} == {"global": 10, "local": 60}
    assert any("8 padding layers" in w for w in r.warnings)
    # Logical bytes and other engines count the 52 real layers.
    assert request_bytes(m, 32768) == (10 * 32768 + 52 * 1024) * per_layer_token


def test_vllm_group_size_is_the_larger_count_when_close():
    """12 sliding + 13 full: 13 < 1.5 x 12, so the group size is 13 and one sliding layer pads."""
    geo = {"num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 64}
    m = make_model(
        {"sw": {"kind": "sliding", **geo, "sliding_window": 128}, "full": {"kind": "full", **geo}},
        [{"repeat": 12, "pattern": ["sw", "full"]}, {"repeat": 1, "pattern": ["full"]}],
        hidden_size=512,
        vocab_size=100,
        max_position_embeddings=8192,
        params_total=10**8,
    )
    r = kv_size(m, 4096, alloc=ENGINES["vllm"].allocation(16, 0))
    assert {row.name: row.layers for row in r.layers} == {"sw": 13, "full": 13}


def test_largest_max_model_len_vllm_starts_with():
    # vLLM 0.11 starts when one request of max_model_len fits the available memory, in whole blocks:
    # pool = 0.9 x 24 GiB - 16 GiB - 1 GiB; a block of 16 tokens is 16 x 32 x 2 x 8 x 128 x 2 B = 2 MiB.
    m, h = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    inp = FitInputs(
        seq=8192, engine="vllm@0.11", gpu_memory=24 * GiB, weights=16 * GiB, activation=GiB, non_torch=0, cudagraph=0, util=0.9
    )
    pool = int(0.9 * 24 * GiB) - 17 * GiB
    f = fit(m, h, inp)
    assert f.kv_pool_bytes == pool
    assert f.max_model_len_accepted == pool // (16 * 32 * 2 * 8 * 128 * 2) * 16
    # Never past the model's context, and None for engines without the check.
    assert fit(m, h, FitInputs(seq=8192)).max_model_len_accepted == 131072
    assert fit(m, h, FitInputs(seq=8192, engine="sglang")).max_model_len_accepted is None


def test_a_multimodal_model_says_what_is_not_modelled():
    # Llama 3.2 Vision's tower has no geometry kvcalc counts (the Qwen-VL towers' profile is modelled).
    m, h = resolve_model("llama3.2-11b-vision"), resolve_gpu("h100")
    f = fit(m, h, FitInputs(seq=8192))
    assert any("dummy images" in w and "--activation" in w for w in f.warnings)
    # With the measured activation the warning still names the method, and the pool uses the figure.
    g = fit(m, h, FitInputs(seq=8192, activation=36 * GiB))
    assert g.kv_pool_bytes < f.kv_pool_bytes
    assert not any("dummy images" in w for w in fit(resolve_model("llama3.1-8b"), h, FitInputs(seq=8192)).warnings)


def test_a_negative_pools_range_reads_as_two_figures(cli):
    # Llama-3.1-405B on one L4: the KV pool line's range is below zero at both ends. Its text is the
    # JSON's two bounds in GiB joined by '..', not a hyphen that reads as a double minus.
    args = ("fit", "--model", "llama3.1-405b", "--gpu", "l4", "--seq", "8k")
    d = cli(*args, "--json").json()
    pool = next(b for b in d["budget"] if b["label"] == "= KV pool")
    lo, hi = pool["low"] / 2**30, pool["high"] / 2**30
    assert lo < hi < 0
    text = cli(*args).out.replace("\u00a0", " ")  # labels and figures keep together with no-break spaces
    row = next(line for line in text.splitlines() if "KV pool" in line and "GiB" in line)
    assert row.split()[-1] == f"{lo:.2f}..{hi:.2f}" and "--" not in row
    # A range of positive figures keeps its hyphen: the device's own line.
    dev = next(b for b in d["budget"] if b["label"] == "device memory")
    row = next(line for line in text.splitlines() if line.strip().startswith("device memory"))
    assert row.split()[-1] == f"{dev['low'] / 2**30:.2f}-{dev['high'] / 2**30:.2f}"


def test_a_model_that_cannot_fit_says_so_first_and_names_the_fewest_gpus(cli):
    # Llama-3.1-405B on one L4: the first line says it does not fit, and how many L4s hold one request
    # of the length (the plan search over TP x PP on L4s); the JSON carries both.
    r = cli("fit", "--model", "llama3.1-405b", "--gpu", "l4", "--seq", "4k")
    assert r.code == 0
    first = r.out.splitlines()[0]
    assert first.startswith("DOES NOT FIT") and "the fewest l4 GPUs that hold one" in " ".join(r.out.split())
    d = cli("fit", "--model", "llama3.1-405b", "--gpu", "l4", "--seq", "4k", "--json").json()
    assert not d["fits"] and d["verdict"].startswith("DOES NOT FIT")
    n, tp, pp = d["fewest"]["gpus_needed"], d["fewest"]["tp_needed"], d["fewest"]["pp_needed"]
    assert f"hold one: {n} (TP {tp}" + (f" x PP {pp})" if pp > 1 else ")") in d["verdict"]
    # That deployment holds a request; one GPU fewer in the same shape family would not be the fewest.
    from kvcalc.engine.memory import FitInputs, fit
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    held = fit(resolve_model("llama3.1-405b"), resolve_gpu("l4"), FitInputs(seq=4096, tp=tp, pp=pp)).max_concurrency
    assert held >= 1 and n == tp * pp * d["fewest"]["replicas_needed"]
    ok = cli("fit", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8k", "--json").json()
    assert ok["verdict"] == f"fits: {ok['max_concurrency']:,} requests of 8,192 tokens at once"


def test_a_model_that_does_not_fit_at_the_engines_fraction_names_the_fraction_that_holds_one(cli):
    # Llama-3.1-8B on one L4 under SGLang 0.5 (0.5.20 and later): its derived mem_fraction_static, 0.684, leaves less
    # than the weights (16,094,076,928 B) of the 22,993,174,528 B free at start-up. One request of 4,096 tokens
    # (131,072 B a token: 536,870,912 B) needs f x 22,993,174,528 - 16,094,076,928 >= 536,870,912, so f >= 0.72330:
    # 0.723 leaves 529,988,255 B, 0.724 leaves 552,981,430 B (whole bytes, rounded down).
    from kvcalc.engine.memory import FitInputs, fit
    from kvcalc.engine.plan import util_to_hold
    from kvcalc.specs.catalog import resolve_gpu, resolve_model

    m, g = resolve_model("llama3.1-8b"), resolve_gpu("l4")
    free, weights, one = 22_993_174_528, 16_094_076_928, 4096 * 131_072
    assert int(0.723 * free) - weights == 529_988_255 < one < 552_981_430 == int(0.724 * free) - weights
    inp = FitInputs(seq=4096, engine="sglang@0.5")
    r = fit(m, g, inp)
    assert (r.util, r.weight_bytes, r.max_concurrency) == (0.684, weights, 0)
    assert util_to_hold(m, g, inp) == 0.724
    assert fit(m, g, FitInputs(seq=4096, engine="sglang@0.5", util=0.723)).max_concurrency == 0
    assert fit(m, g, FitInputs(seq=4096, engine="sglang@0.5", util=0.724)).max_concurrency == 1
    d = cli("fit", "--model", "llama3.1-8b", "--gpu", "l4", "-e", "sglang", "--seq", "4k", "--json").json()
    assert d["util_to_hold"] == 0.724 and d["verdict"].endswith(
        "; at this shape one fits from mem_fraction_static 0.724 (here 0.684)"
    )
    # Given a fraction, it counts from there; where one already fits there is nothing to say; where even 1.0 holds
    # none (Llama-3.1-70B's 141 GB of weights on one 80 GB H100), nothing either.
    assert util_to_hold(m, g, FitInputs(seq=4096, engine="sglang@0.5", util=0.5)) == 0.724
    assert util_to_hold(m, g, FitInputs(seq=4096, engine="sglang@0.5", util=0.8)) is None
    assert util_to_hold(resolve_model("llama3.1-70b"), resolve_gpu("h100"), FitInputs(seq=4096)) is None
    big = cli("fit", "--model", "llama3.1-70b", "--gpu", "h100", "--seq", "4k", "--json").json()
    assert big["util_to_hold"] is None and "fits from" not in big["verdict"]


def test_fit_warns_of_what_tp_replicates_as_size_does(cli):
    # DeepSeek-V3 at TP 8: every rank keeps each token's whole latent; size and fit both say so.
    w = "every tensor-parallel rank holds a full copy"
    assert any(w in x for x in cli("size", "--model", "deepseek-v3", "--tp", "8", "--seq", "4k", "--json").json()["warnings"])
    d = cli("fit", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--seq", "4k", "--json").json()
    assert any(w in x for x in d["warnings"])


def test_fit_says_what_its_weights_figure_holds(cli):
    # Not "parameters x weight dtype": the rotary cache and vLLM's mxfp4 padding are in the figure.
    d = cli("fit", "--model", "gpt-oss-120b", "--gpu", "h100", "--seq", "4k", "--json").json()
    w = next(a for a in d["assumptions"] if a.startswith("weights:"))
    assert "rotary cos/sin cache" in w and "pads mxfp4" in w and "parameters x weight dtype" not in w


def test_a_weight_dtype_flag_means_a_per_role_layout():
    """--weight-dtype int4 on Llama-3.1-8B (model_specs: embed and LM head 525,336,576 each, attention
    1,342,177,280, MLP 5,637,144,576, norms 266,240): the linear layers as GPTQ/AWQ int4 (half a byte
    a weight, an fp16 scale and a 4-bit zero per 128: 2.5 B a group), the embeddings, LM head and norms
    in bf16 (issue 19: parameters x bits left 1-2 GiB of them out), plus vLLM's rotary cache."""
    m, h = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    linear = 1_342_177_280 + 5_637_144_576
    int4 = -(-linear // 2) + -(-linear // 128) * 5 // 2
    sixteen = 2 * (2 * 525_336_576 + 266_240)
    rope = 131_072 * 128 * 2
    r = fit(m, h, FitInputs(seq=8192, weight_dtype="int4"))
    assert r.weight_bytes == int4 + sixteen + rope
    # The range's low end: a checkpoint that quantizes the embeddings and LM head as well.
    w = next(e for e in r.estimates if e.key == "weights")
    bits = 4 + Fraction(16 + 4, 128)
    assert w.low == r.weight_bytes - int(2 * 2 * 525_336_576 * (1 - bits / 16))
    assert any("guesses the checkpoint's layout" in x for x in r.warnings)
    # mxfp4 (gpt-oss's layout) quantizes only the routed experts.
    g = fit(resolve_model("gpt-oss-20b"), h, FitInputs(seq=8192, weight_dtype="mxfp4"))
    assert "the experts alone" in " ".join(g.assumptions)


def test_small_batch_v1_reserves_what_its_profile_run_holds():
    """Issue 19, cause 1: vLLM V1 at 2,048 batched tokens. Qwen2.5-7B on one A100 (hidden 3,584,
    intermediate 18,944, vocabulary 152,064), vLLM 0.21 to 0.26 (FlashInfer's sampler on sm_80+: 14 B
    a logit), max_num_seqs 256: the sampler's warm-up, 256 rows x 152,064 x 14 B, with the 2,048 x
    3,584 x 2 B hidden states alive, outweighs the forward pass, 2,048 x (3 x 18,944 + 3 x 3,584) x 2 B;
    non-torch memory on one GPU is 80 MiB (cuBLAS handles after vLLM's first snapshot). Beside the
    sampler: the 256 rows of hidden state it takes and their random copy (2 x 256 x 3,584 x 2 B), and
    torch's cuBLAS workspaces on a GPU before Hopper (4,096 KiB x 2 + 16 KiB x 8, and cuBLASLt's
    1,024 KiB). Together 0.61 GiB, inside the 0.50 to 0.78 GiB public V1 logs show at this size
    (kvcalc reserved 1.28 to 2.10 GiB before)."""
    m, a100 = resolve_model("qwen2.5-7b"), resolve_gpu("a100-80gb")
    r = fit(m, a100, FitInputs(seq=4096, engine="vllm@0.21", max_num_batched_tokens=2048, max_num_seqs=256))
    est = {e.key: e for e in r.estimates}
    beside = 2048 * 3584 * 2 + 2 * 256 * 3584 * 2 + (4096 * 1024 * 2 + 16 * 1024 * 8 + 1024 * 1024)
    sampler = 256 * 152_064 * 14 + beside
    forward = 2048 * (3 * 18_944 + 3 * 3584) * 2
    assert est["activation"].best == max(sampler, forward) == sampler
    assert est["non_torch"].best == 80 * 2**20
    together = (est["activation"].best + est["non_torch"].best) / 2**30
    assert 0.50 <= together <= 0.78
    # The range: the forward pass 0.85x to 1.15x, the sampler 12 to 16 B a logit.
    assert est["activation"].low == 256 * 152_064 * 12 + beside
    assert est["activation"].high == 256 * 152_064 * 16 + beside


def test_sglang_budgets_a_fraction_of_the_memory_free_at_start_up():
    """Issue 19, cause 3: SGLang's pool is mem_fraction_static x the memory free after distributed
    init, before the weights (kv_cache_configurator.py, 0.5.23), less the weights; no non-torch
    reserve besides. sglang#18263 (Qwen3-30B-A3B on an MI355X-class GPU, mem_fraction_static 0.911)
    logs 230.20 GB available after 56.98 GB of weights, so 287.18 GB free before them (SGLang's GB
    is GiB), and prints 204.63 GB of KV budget: 0.911 x 287.18 - 56.98 = 204.64."""
    m, g = resolve_model("qwen3-30b-a3b"), resolve_gpu("mi355x")
    inp = FitInputs(seq=4096, engine="sglang", util=0.911, gpu_free=int(287.18 * GiB), weights=int(56.98 * GiB))
    # The log comes from the PR's own branch, which drops the released x 0.85 for ROCm's aiter attention at a
    # context over 8,192 tokens (its stated change; arg_groups/attention_hook.py, 0.5.23): the formula is checked
    # where no such cut applies (an NVIDIA GPU; the memory free is given), and the MI355X takes the release's cut.
    r = fit(m, resolve_gpu("b200"), inp.replace(gpu_memory=300 * GiB))
    want = int(Fraction("0.911") * int(287.18 * GiB)) - int(56.98 * GiB)
    assert r.kv_pool_bytes == want
    assert abs(r.kv_pool_bytes / GiB - 204.63) < 0.02
    cut = fit(m, g, inp)
    assert cut.util == 0.911 * 0.85
    assert cut.kv_pool_bytes == int(Fraction(str(0.911 * 0.85)) * int(287.18 * GiB)) - int(56.98 * GiB)
    # Without the start-up figure the estimate takes the device total less what start-up holds.
    est = fit(m, g, FitInputs(seq=4096, engine="sglang", util=0.911))
    line = next(b for b in est.budget if b.key == "non_torch")
    assert line.label == "- in use at start-up" and 0.4 * GiB < line.bytes < 0.8 * GiB
    # vLLM does not take it: a warning says so.
    v = fit(m, resolve_gpu("h100"), FitInputs(seq=4096, gpu_free=70 * GiB))
    assert any("--gpu-free is SGLang's budget" in w for w in v.warnings)


@pytest.mark.parametrize(
    "release, gib, tp, want",
    [
        # server_args.py ServerArgs.__post_init__ of each release (the sglang wheels): by TP alone ...
        ("sglang@0.3.0", 80, 8, "0.83"),
        ("sglang@0.3.6", 80, 8, "0.82"),
        ("sglang@0.4.4.post3", 80, 8, "0.81"),
        ("sglang@0.4.4.post3", 192, 1, "0.88"),
        # ... from 0.4.5.post3 to 0.4.6.post1, (memory - 13 GiB) / memory on GPUs over 80 GiB: 143,771 MiB (an
        # H200 as nvidia-smi gives it) -> (143,771 - 13,312) / 143,771.
        ("sglang@0.4.5.post3", 141, 8, str((143_771 - 13_312) / 143_771)),
        ("sglang@0.4.5.post3", 80, 8, "0.81"),
    ],
)
def test_sglang_default_memory_fraction_by_release(release, gib, tp, want):
    gpu = {80: "h100-sxm", 141: "h200", 192: "mi300x"}[gib]
    r = fit(resolve_model("llama3.1-8b"), resolve_gpu(gpu), FitInputs(seq=4096, engine=release, tp=tp))
    assert r.util == pytest.approx(float(want), abs=1e-12)
    if release == "sglang@0.4.5.post3" and gib == 141:
        doc = " ".join((ROOT / "docs" / "engines.md").read_text().split())
        assert f"({r.util:.3f} on an H200 of 143,771 MiB)" in doc


def test_sglang_start_up_memory_follows_the_interconnect():
    """What SGLang's distributed start-up holds before the weights, read from its logs as the device
    total less 'Load weight begin. avail mem' (SGLang's GB is GiB): on NVLink GPUs 79.19 - 76.63 = 2.56
    GiB (8 H100s, sglang#1386), 139.80 - 137.29 = 2.51 (8 H200s, sglang#11716), 178.40 - 175.25 = 3.15
    (8 B200s, sglang#5390); over PCIe 22.00 - 21.63 = 0.37 (4 L4s) and 95.14 - 94.01 = 1.13 (4 RTX PRO
    6000s, sglang#40558). Each lies inside the range kvcalc prints for its interconnect, and the two
    interconnects' best figures are apart."""
    m = resolve_model("llama3.1-8b")

    def start_up(gpu: str, tp: int) -> tuple[float, float, float]:
        r = fit(m, resolve_gpu(gpu), FitInputs(seq=4096, engine="sglang", tp=tp, util=0.8))
        line = next(b for b in r.budget if b.key == "non_torch")
        assert line.low is not None and line.high is not None
        return line.low / GiB, line.bytes / GiB, line.high / GiB

    for gpu, logged in (("h100-sxm", 2.56), ("h200", 2.51), ("b200", 3.15)):
        lo, best, hi = start_up(gpu, 8)
        assert lo <= logged <= hi and abs(best - 2.5) < 0.01, gpu
    for gpu, logged in (("l4", 0.37), ("rtx-pro-6000", 1.13)):
        lo, best, hi = start_up(gpu, 4)
        assert lo <= logged <= hi and abs(best - 0.75) < 0.01, gpu
    # One GPU keeps the CUDA context's 0.6 GiB (139.80 - 139.20 on an H200, sglang#6753).
    lo, best, hi = start_up("h200", 1)
    assert lo <= 0.60 <= hi < 0.9
    # The pool it leaves: sglang#1386, 8 H100s, mem_fraction_static 0.83, Qwen2-72B (the Qwen2.5-72B
    # geometry): 0.83 x (79.19 - 2.5) GiB - the weights on a rank.
    q = resolve_model("qwen2.5-72b")
    r = fit(q, resolve_gpu("h100-sxm"), FitInputs(seq=32768, engine="sglang", tp=8, util=0.83))
    total = resolve_gpu("h100-sxm").memory_runtime_bytes
    assert r.kv_pool_bytes == int(Fraction("0.83") * (total - 2560 * 2**20)) - r.weight_bytes
    # docs/engines.md's worked example quotes it.
    text = " ".join((ROOT / "docs" / "engines.md").read_text().split())
    tokens = r.kv_pool_bytes // (80 * 2 * 128 * 2)  # 1 KV head a rank x 128 x 80 layers x K and V x 2 B
    assert f"- {r.weight_bytes / GiB:.2f} GiB of weights a rank = {r.kv_pool_bytes / GiB:.2f} GiB, {tokens:,} tokens" in text
    assert f"the log's 1,218,251 ({tokens / 1_218_251 - 1:+.1%};" in text


def test_sglang_on_amd_gpus_counts_its_all_reduce_buffers_before_the_weights():
    """SGLang from 0.5.10 on an AMD GPU with a TP group allocates, at init_torch_distributed: aiter's custom
    all-reduce at max_size 1 GiB (ROCm/aiter custom_all_reduce.py: meta of the 5,504 B Signal plus 2 x max_size,
    the input buffer of max_size, rank_data of 8 MiB) and QuickAllReduce's buffer as SGLang's ROCm image runs it
    (sgl-kernel quick_all_reduce_hip.h: flags 2 x ranks x 1,216 x 4 B and 2 x 2 GiB of data, ranks x 8 B of
    handles), beside RCCL's two communicators (1,690 MiB, LUMI's MI250X measurements) and the context (600 MiB).
    GLM-5.1's start on 2 MI355Xs under SGLang 0.5.12 logs 'Load weight begin. avail mem=279.13 GB' (GiB) of a
    device whose total kvcalc takes as 309,216,673,792 B: 8.85 GiB held before the weights."""
    m, gpu = resolve_model("llama3.1-8b"), resolve_gpu("mi355x")
    aiter = (5_504 + 2 * 2**30) + 2**30 + 8 * 2**20
    assert aiter == 3_229_619_584

    def start_up(engine: str, tp: int):
        r = fit(m, gpu, FitInputs(seq=4096, engine=engine, tp=tp, util=0.8))
        return next(b for b in r.budget if b.key == "non_torch")

    for tp in (2, 4, 8):
        quick = 2 * tp * 1216 * 4 + 2 * 2 * 2**30 + tp * 8
        line = start_up("sglang@0.5.12", tp)
        assert line.bytes == 600 * 2**20 + aiter + quick + 1690 * 2**20
    assert start_up("sglang@0.5.12", 2).bytes == 9_925_845_392
    logged = 309_216_673_792 - round(279.13 * 2**30)
    line = start_up("sglang@0.5.12", 2)
    assert line.low <= logged <= line.high and abs(line.bytes / logged - 1) < 0.05
    # One GPU has no TP group; 0.5.9's record and NVIDIA GPUs keep the estimates read from logs.
    assert start_up("sglang@0.5.12", 1).bytes == 600 * 2**20
    assert start_up("sglang@0.5.9", 2).bytes == 2560 * 2**20
    assert (
        fit(m, resolve_gpu("h200"), FitInputs(seq=4096, engine="sglang@0.5.12", tp=2, util=0.8)).budget[1].bytes == 2560 * 2**20
    )


def test_memory_free_at_start_up_is_at_most_the_device(cli):
    # An H100 SXM's runtime total is estimated at 85,030,076,416 B (79.19 GiB), at most 0.1% more:
    # 85,030,076,416 + 85,030,076 = 85,115,106,492 B, 79.27 GiB. More free than that is no H100.
    r = cli("fit", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang", "--seq", "4k", "--gpu-free", "90GiB")
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and "(--gpu-free)" in r.err and "90.00 GiB" in r.err
    assert "85,115,106,492 B (79.27 GiB)" in r.err and "give its total memory too" in r.err
    assert (
        cli("fit", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang", "--seq", "4k", "--gpu-free", "79GiB").code
        == 0
    )
    # A total given by --gpu-memory bounds it instead.
    args = ("fit", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--engine", "sglang", "--seq", "4k", "--gpu-free", "90GiB")
    assert cli(*args, "--gpu-memory", "94GiB").code == 0
    r = cli(*args, "--gpu-memory", "89GiB")
    assert r.code == 2 and "more than the device memory given, 89.00 GiB" in r.err


def test_the_sampler_option(cli):
    # --sampler narrows vLLM 0.8-0.26's sampler warm-up; an unknown sampler, or an engine with one
    # estimate of it, is one line.
    ask = ("fit", "--model", "qwen2.5-7b", "--gpu", "a100-80gb", "--engine", "vllm@0.10.1.1", "--seq", "16k")
    ask += ("--util", "0.25", "--json", "--sampler")
    d = cli(*ask, "flashinfer").json()
    act = next(e for e in d["estimates"] if e["key"] == "activation")
    # Beside the logits: the hidden states, the sampler's rows of them and their random copy, and
    # torch's cuBLAS workspaces on an A100 (4,096 KiB x 2 + 16 KiB x 8 + cuBLASLt's 1,024 KiB).
    beside = 2048 * 3584 * 2 + 2 * 256 * 3584 * 2 + 4096 * 1024 * 2 + 16 * 1024 * 8 + 1024 * 1024
    assert act["best"] == 256 * 152064 * 14 + beside
    # docs/engines.md quotes the pool both ways for this log's settings.
    from pathlib import Path

    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    pt = cli(*ask, "pytorch").json()
    quoted = f"{pt['kv_pool_bytes'] / 2**30:.2f} GiB at 38 B, {d['kv_pool_bytes'] / 2**30:.2f} GiB at 14 B"
    assert quoted in doc, quoted
    one_line_error(cli("fit", "--model", "qwen2.5-7b", "--gpu", "h100", "--seq", "4k", "--sampler", "triton"), "--sampler")
    one_line_error(
        cli("fit", "--model", "qwen2.5-7b", "--gpu", "h100", "--seq", "4k", "--engine", "sglang", "--sampler", "pytorch"),
        "vLLM 0.8 to 0.26",
    )


def test_vllm_014_to_016_check_the_whole_model_against_one_stage_at_pp():
    """vLLM 0.14.0 to 0.16.0 merge the pipeline stages' KV specs before the start-up check, so one
    request of max_model_len is weighed over every stage's layers against one stage's memory
    (v1/core/kv_cache_utils.py get_kv_cache_configs); 0.13.0 and 0.17.0 check each stage's own.
    GLM-4.6 (92 layers, 8 KV heads of 128) at PP 8, as in vllm-project/vllm#32105: a block of 16 tokens
    is 16 x 8 x 128 x 2 x 2 B = 65,536 B a layer."""
    m, a100 = resolve_model("glm-4.6"), resolve_gpu("a100-80gb")
    pool = 28 * GiB  # util x 80 GiB less 40 GiB of weights: 0.85 x 80 - 40 = 28
    base = dict(seq=202_752, max_model_len=202_752, pp=8, gpu_memory=80 * GiB, util=0.85, weights=40 * GiB)
    measured = dict(activation=0, non_torch=0, cudagraph=0)
    old = fit(m, a100, FitInputs(engine="vllm@0.15.0", **base, **measured))
    assert old.kv_pool_bytes == pool
    # The whole model: 92 layers x 65,536 B a block; 28 GiB // 6,029,312 B = 4,986 blocks.
    assert old.max_model_len_accepted == pool // (92 * 65_536) * 16 == 79_776
    assert not old.starts and not old.fits and old.verdict.startswith("DOES NOT START")
    need = 92 * 65_536 * (202_752 // 16)  # 71.16 GiB, as the log says
    assert round(need / GiB, 2) == 71.16
    assert any("refuses to start" in w and "71.16 GiB" in w and "79,776" in w for w in old.warnings)
    # One stage's own layers: vLLM splits 92 over 8 stages as 11 or 12, so 12 x 65,536 B a block; 28 GiB
    # holds 38,229 blocks, 611,664 tokens, past the model's 202,752.
    for release in ("vllm@0.13.0", "vllm@0.17.0"):
        new = fit(m, a100, FitInputs(engine=release, **base, **measured))
        assert new.kv_pool_bytes == pool and new.starts and new.fits
        assert new.max_model_len_accepted == 202_752
        assert pool // (12 * 65_536) * 16 == 611_664
    # At PP 1 the two checks are one: 0.15 refuses exactly when 0.17 does.
    one = dict(base, pp=1, weights=60 * GiB)
    a = fit(m, a100, FitInputs(engine="vllm@0.15", **one, **measured))
    b = fit(m, a100, FitInputs(engine="vllm@0.17", **one, **measured))
    assert a.max_model_len_accepted == b.max_model_len_accepted == (8 * GiB) // (92 * 65_536) * 16


def test_fit_says_vllm_refuses_a_max_model_len_past_its_start_check(cli):
    """Any release: a --max-model-len whose one request does not fit the available memory is refused at
    start-up; fit's first line says so and names the limit, and the JSON says starts: false."""
    measured = "--gpu-memory 24GiB --weights 16GiB --activation 1GiB --non-torch 0 --cudagraph 0 --util 0.9".split()
    args = ["fit", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8192", *measured, "--engine", "vllm@0.11", "--json"]
    d = cli(*args, "--max-model-len", "131072").json()
    pool = int(0.9 * 24 * GiB) - 17 * GiB
    limit = pool // (16 * 32 * 2 * 8 * 128 * 2) * 16
    assert d["starts"] is False and d["max_model_len_accepted"] == limit
    assert d["verdict"] == f"DOES NOT START: vLLM 0.11 refuses --max-model-len 131,072; it starts with at most {limit:,}"
    ok = cli(*args, "--max-model-len", str(limit)).json()
    assert ok["starts"] is True and ok["verdict"].startswith("fits:")


def test_vllm_0110_warns_that_deepseek_v32_defaults_to_its_fp8_layout():
    """vLLM 0.11.0 turned kv_cache_dtype auto into fp8_ds_mla for DeepSeek-V3.2 (model_executor/models/
    config.py DeepseekV32ForCausalLM); 0.11.1 and 0.11.2 only an fp8 one. The vllm@0.11 record covers
    all three, so fit says so rather than choose."""
    m, h200 = resolve_model("deepseek-v3.2"), resolve_gpu("h200")
    w = fit(m, h200, FitInputs(seq=4096, tp=8, engine="vllm@0.11")).warnings
    assert any("vLLM 0.11.0 stores a sparse-MLA cache (DeepSeek-V3.2's) as fp8_ds_mla" in x for x in w)
    for other in (FitInputs(seq=4096, tp=8, engine="vllm@0.12"), FitInputs(seq=4096, tp=8, engine="vllm@0.11", kv_dtype="fp8")):
        assert not any("fp8_ds_mla" in x for x in fit(m, h200, other).warnings)
    assert not any(
        "fp8_ds_mla" in x for x in fit(resolve_model("deepseek-v3"), h200, FitInputs(seq=4096, tp=8, engine="vllm@0.11")).warnings
    )


def test_fit_warns_when_vllms_default_max_model_len_would_be_refused():
    """Without --max-model-len vLLM takes the model's context (Llama 3.1: 131,072 tokens); where one
    request of it needs more than the pool, fit says so and names the largest length that starts."""
    m, h = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    measured = dict(gpu_memory=24 * GiB, weights=16 * GiB, activation=GiB, non_torch=0, cudagraph=0, util=0.9)
    f = fit(m, h, FitInputs(seq=8192, engine="vllm@0.11", **measured))
    pool = int(0.9 * 24 * GiB) - 17 * GiB
    limit = pool // (16 * 32 * 2 * 8 * 128 * 2) * 16
    need = 131_072 * 32 * 2 * 8 * 128 * 2  # 16 GiB
    assert f.starts and f.max_model_len_accepted == limit
    assert [w for w in f.warnings if "without --max-model-len" in w] == [
        f"without --max-model-len vLLM 0.11 takes the model's context, 131,072 tokens, and refuses to start here "
        f"(one request of it needs {need / GiB:.2f} GiB of KV cache, {pool / GiB:.2f} GiB available): pass "
        f"--max-model-len {limit:,} or less"
    ]
    # Given, or where the context fits, nothing is said.
    assert not any(
        "without --max-model-len" in w
        for w in fit(m, h, FitInputs(seq=8192, engine="vllm@0.11", max_model_len=8192, **measured)).warnings
    )
    assert not any("without --max-model-len" in w for w in fit(m, h, FitInputs(seq=8192, engine="vllm@0.11")).warnings)


def test_max_model_len_auto_takes_the_largest_length_that_starts(cli):
    """vLLM 0.14 and later take --max-model-len auto (or -1): after profiling at the model's context,
    the largest max_model_len whose one request fits the available memory (engine/arg_utils.py
    human_readable_int_or_auto, v1/core/kv_cache_utils.py _auto_fit_max_model_len, 0.14.0)."""
    measured = "--gpu-memory 24GiB --weights 16GiB --activation 1GiB --non-torch 0 --cudagraph 0 --util 0.9".split()
    args = ["fit", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8192", *measured, "--json"]
    pool = int(0.9 * 24 * GiB) - 17 * GiB
    limit = pool // (16 * 32 * 2 * 8 * 128 * 2) * 16
    for spelling, release in (("auto", "vllm@0.14"), ("-1", "vllm@0.21"), ("AUTO", "vllm")):
        d = cli(*args, "--engine", release, "--max-model-len", spelling).json()
        assert d["max_model_len"] == d["max_model_len_accepted"] == limit and d["starts"] is True
        # vLLM logs its concurrency for that length: whole blocks over one request's blocks.
        assert d["concurrency"] == pytest.approx((pool // (16 * 131_072)) / (limit // 16))
    # 0.13.0 has no auto (human_readable_int_or_auto arrived in 0.14.0).
    one_line_error(
        cli(*args, "--engine", "vllm@0.13", "--max-model-len", "auto"), "has no auto max_model_len", "(--max-model-len)"
    )
    # Neither a negative length other than -1 nor a word other than auto passes.
    one_line_error(cli(*args, "--max-model-len", "-2"), "--max-model-len")
    one_line_error(cli(*args, "--max-model-len", "autox"), "--max-model-len")
    # Where the whole context fits, auto is the context.
    whole = cli("fit", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8192", "--max-model-len", "auto", "--json").json()
    assert whole["max_model_len"] == 131_072
    # Less than one block left: vLLM cannot auto-fit, and says so (a block of 16 tokens is 2 MiB here).
    tiny = cli(*args, "--kv-cache-memory", "1MiB", "--max-model-len", "auto").json()
    assert tiny["starts"] is False and tiny["verdict"].startswith("DOES NOT START: vLLM 0.33 cannot auto-fit")
    # Nothing left at all is DOES NOT FIT, with the fewest GPUs that hold one, as without auto.
    none = cli("fit", "--model", "llama3.1-70b", "--gpu", "rtx4090", "--seq", "8192", "--max-model-len", "auto", "--json").json()
    assert none["starts"] is True and none["verdict"].startswith("DOES NOT FIT") and "fewest" in none["verdict"]


def test_kv_cache_memory_is_the_pool_as_given(cli):
    """vLLM 0.10.2 and later take --kv-cache-memory-bytes: each GPU's KV pool as given, no utilization
    applied (v1/worker/gpu_worker.py determine_available_memory, 0.10.2, 0.11.0 and 0.33.0; not in
    0.10.1.1)."""
    measured = "--gpu-memory 80GiB --weights 16GiB --activation 1GiB --non-torch 0 --cudagraph 0".split()
    args = ["fit", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8192", *measured, "--json"]
    d = cli(*args, "--kv-cache-memory", "40GiB", "--engine", "vllm@0.11").json()
    assert d["kv_pool_bytes"] == 40 * GiB
    assert d["kv_pool_blocks"] == 40 * GiB // (16 * 131_072) == 20_480
    left = next(b for b in d["budget"] if b["key"] == "headroom")
    assert left["bytes"] == (80 - 16 - 1 - 40) * GiB
    assert not any("out-of-memory" in w for w in d["warnings"])
    # More than the device holds beside the rest: said, not hidden.
    over = cli(*args, "--kv-cache-memory", "70GiB").json()
    assert over["kv_pool_bytes"] == 70 * GiB
    assert any("needs 7.00 GiB more than the device has" in w for w in over["warnings"])
    # vllm@0.10 covers 0.8 to 0.10.2, of which only 0.10.2 takes it: taken, and said.
    old = cli(*args, "--kv-cache-memory", "40GiB", "--engine", "vllm@0.10").json()
    assert old["kv_pool_bytes"] == 40 * GiB and any("only 0.10.2" in w for w in old["warnings"])
    # V0 and other engines size the pool themselves: one line, exit 2.
    one_line_error(cli(*args, "--kv-cache-memory", "40GiB", "--engine", "vllm@0.7"), "vLLM 0.10.2 and later")
    one_line_error(cli(*args, "--kv-cache-memory", "40GiB", "--engine", "sglang"), "vLLM 0.10.2 and later")
    for bad in ("0", "-1GiB", "nan", "40 GiX", ""):
        one_line_error(cli(*args, "--kv-cache-memory", bad), "--kv-cache-memory")


@pytest.mark.parametrize(
    "engine, gpu, tp, nvls_mib",
    [
        # NCCL 2.20 (torch 2.3, 2.4): 24 channels x 2 x (4 MiB + 2 MiB) = 288 MiB a rank, two TP communicators.
        ("vllm@0.6", "h100-sxm", 8, 2 * 288 * 8),
        ("vllm@0.5.3", "h200", 4, 2 * 288 * 4),
        # NCCL 2.21 (torch 2.5): the buffer is NVLS's 128 KiB chunk x 8 steps, 24 x 2 x (1 + 2) = 144 MiB a rank.
        ("vllm@0.7", "h100-sxm", 8, 2 * 144 * 8),
        # NVLS needs more than 2 ranks on an NVSwitch of Hopper or later: none at TP 2, on A100s, on H100 NVL pairs.
        ("vllm@0.6", "h100-sxm", 2, 0),
        ("vllm@0.6", "a100-80gb", 8, 0),
        ("vllm@0.6", "h100-nvl", 2, 0),
        # Records whose NCCL does not set them apart (0.4: not read; V1 0.8 to 0.10: NCCL 2.21 and 2.26 mixed).
        ("vllm@0.4", "h100-sxm", 8, 0),
        ("vllm@0.10", "h100-sxm", 8, 0),
    ],
)
def test_nccl_nvls_buffers_join_v0s_non_torch_memory(engine, gpu, tp, nvls_mib):
    from kvcalc.engine.engines import engine as find

    m, g = resolve_model("llama3.1-70b"), resolve_gpu(gpu)
    r = fit(m, g, FitInputs(seq=8192, engine=find(engine), tp=tp))
    nt = next(e for e in r.estimates if e.key == "non_torch")
    # V1 (vllm@0.10) on an NVSwitch of Hopper or later at TP 8: 2 GiB, 96 MiB to 2.25 GiB (public TP 2 and 4
    # breakdowns there: 1.38 to 2.21 GiB, median 2.07).
    base = (768 * MiB, 256 * MiB, 2 * GiB) if engine != "vllm@0.10" else (2048 * MiB, 96 * MiB, 2304 * MiB)
    # Two communicators at best and at the high end, one at the low end.
    assert (nt.best, nt.low, nt.high) == (base[0] + nvls_mib * MiB, base[1] + nvls_mib * MiB // 2, base[2] + nvls_mib * MiB)
    assert ("NVLS" in nt.reason) == bool(nvls_mib)


def test_the_nvls_example_in_the_docs_is_what_fit_says():
    """docs/engines.md: Llama-3.1-405B-FP8 at TP 8 on H100s under vLLM 0.5.3 (vllm-project/vllm#6746)."""
    from pathlib import Path

    from kvcalc.engine.engines import engine

    r = fit(resolve_model("llama3.1-405b-fp8"), resolve_gpu("h100"), FitInputs(seq=131072, engine=engine("vllm@0.5.3"), tp=8))
    est = {e.key: e.best for e in r.estimates}
    nvls = 2 * 288 * 8 * MiB
    assert round((est["activation"] + est["non_torch"]) / GiB, 1) == 6.2
    assert round((est["activation"] + est["non_torch"] - nvls) / GiB, 1) == 1.7
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    assert "kvcalc's estimate is 6.2 GiB with the NVLS buffers, 1.7 without them" in doc


def test_v1_non_torch_memory_reaches_2_25_gib_only_on_hopper_nvswitch():
    # vLLM V1 at TP > 1: 512 MiB at best on NVLink; the high end 2.25 GiB on an NVSwitch of Hopper or later
    # (public TP 2 and 4 breakdowns there: 1.38 to 2.21 GiB), 0.75 GiB elsewhere (A100 NVLink, PCIe cards).
    from kvcalc.engine.engines import engine

    m = resolve_model("llama3.1-8b")
    for gpu, high in (("h100-sxm", 2304), ("h200", 2304), ("a100-80gb", 768), ("l40s", 768), ("h100-nvl", 768)):
        r = fit(m, resolve_gpu(gpu), FitInputs(seq=8192, engine=engine("vllm@0.11"), tp=2))
        nt = next(e for e in r.estimates if e.key == "non_torch")
        assert nt.high == high * MiB, gpu


@pytest.mark.parametrize(
    "gpu, tp, pp, best_mib",
    [
        # Hopper NVSwitch, a TP group: NCCL's buffers, about 2 GiB in every public V1 breakdown (1.38 to 2.21).
        ("h100-sxm", 2, 1, 2048),
        ("h200", 4, 1, 2048),
        # Pipeline stages alone exchange by send/recv: 0.07 GiB at PP 2 and 4 on H100s (llm-d-planner#205, 0.19.0).
        ("h100-sxm", 1, 2, 512),
        # NVLink without NVLS (A100) and PCIe keep theirs.
        ("a100-80gb", 2, 1, 512),
        ("l40s", 2, 1, 160),
    ],
)
def test_v1_non_torch_memory_by_link(gpu, tp, pp, best_mib):
    from kvcalc.engine.engines import engine as find

    r = fit(resolve_model("llama3.1-8b"), resolve_gpu(gpu), FitInputs(seq=8192, engine=find("vllm@0.19"), tp=tp, pp=pp))
    assert next(e for e in r.estimates if e.key == "non_torch").best == best_mib * MiB


def test_the_fused_moe_workspaces_vllm_keeps_from_0_14():
    from kvcalc.engine.engines import engine as find
    from kvcalc.engine.memory import moe_workspace_bytes

    # TritonExperts.workspace_shapes (vllm 0.19.0): M x k x max(i, hidden) and M x k x max(2i, hidden), 2 B.
    # Qwen3-30B-A3B: k 8, i 768, hidden 2048 at 8,192 tokens.
    q30 = resolve_model("qwen3-30b-a3b")
    assert moe_workspace_bytes(q30, 8192) == 8192 * 8 * 2048 * 2 + 8192 * 8 * 2048 * 2 == 536_870_912
    # DeepSeek-V2-Lite: k 6, i 1,408: the second workspace is the wider gate-up (2,816).
    assert moe_workspace_bytes(resolve_model("deepseek-v2-lite"), 8192) == 8192 * 6 * 2048 * 2 + 8192 * 6 * 2816 * 2
    # At TP 4 each rank holds a quarter of i: 192 and 384, both under the hidden size.
    assert moe_workspace_bytes(q30, 2048, tp=4) == 2 * 2048 * 8 * 2048 * 2
    # None for a dense model, MXFP4 experts (gpt-oss) or int4 ones.
    assert moe_workspace_bytes(resolve_model("llama3.1-8b"), 8192) == 0
    assert moe_workspace_bytes(resolve_model("gpt-oss-20b"), 8192) == 0
    assert moe_workspace_bytes(q30, 8192, dtype="int4") == 0
    # fit adds them under the sampler's warm-up from 0.14 (the modular kernel), not in 0.13 (fused_experts).
    g = resolve_gpu("h100-sxm")

    def act(release: str) -> int:
        r = fit(q30, g, FitInputs(seq=8192, engine=find(release), max_num_batched_tokens=8192, max_num_seqs=1024))
        return next(e for e in r.estimates if e.key == "activation").best

    # The sampler's 14 B x 1,024 rows x 151,936 logits, with the 8,192 tokens' hidden states (2 B x 2,048),
    # the 1,024 rows taken from them and their random copy, and torch's cuBLAS workspaces on Hopper
    # (4,096 KiB x 8, cuBLASLt's 1,024 KiB); 0.19 masks top-k/top-p with its Triton kernel, whose fp32
    # buffer holds min(1,024, the H100's 132 SMs) rows of the vocabulary.
    beside = 8192 * 2048 * 2 + 2 * 1024 * 2048 * 2 + 4096 * 1024 * 8 + 1024 * 1024
    triton = 132 * 151936 * 4
    sampler = 1024 * 151936 * 14 + beside
    assert act("vllm==0.19.0") == sampler + triton + 536_870_912
    # 0.13 (vllm@0.12's record): PyTorch's sort at 28 B a logit, above the forward pass's 81,920 B x 8,192
    # tokens ((8 x (3 x 768 + 2,048) + 3 x 2,048) x 2 B), and no workspace beside it.
    assert act("vllm==0.13.0") == 1024 * 151936 * 28 + beside > 8192 * (8 * (3 * 768 + 2048) + 3 * 2048) * 2
    # 0.21 runs FlashInfer's sampler on an H100: no Triton buffer.
    assert act("vllm==0.21.0") == act("vllm==0.19.0") - triton
    # fit says so, the workspaces in GiB: 536,870,912 B = 0.50 GiB.
    r = fit(q30, g, FitInputs(seq=8192, engine=find("vllm==0.19.0"), max_num_batched_tokens=8192, max_num_seqs=1024))
    reason = next(e for e in r.estimates if e.key == "activation").reason
    assert f"beside the fused-MoE workspaces the pass keeps ({536_870_912 / 2**30:.2f} GiB)" in reason


def test_vllm_keeps_a_16_bit_copy_of_a_quantized_mla_kv_b_proj():
    from pathlib import Path

    from kvcalc.engine.engines import engine as find
    from kvcalc.engine.weights import mla_absorbed_bytes

    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    ds = resolve_model("deepseek-v3")  # 61 MLA layers, kv_lora_rank 512, 128 heads, 128 nope + 128 v, fp8
    assert mla_absorbed_bytes(ds, None, 8) == 61 * 512 * 16 * 256 * 2
    assert mla_absorbed_bytes(ds, None, 1) == 61 * 512 * 128 * 256 * 2
    # A 16-bit kv_b_proj is viewed, not copied; pipeline stages hold their own layers (16 of 61 at PP 4).
    assert mla_absorbed_bytes(resolve_model("deepseek-v2-lite"), None, 1) == 0
    assert mla_absorbed_bytes(ds, None, 4, pp=4) == 16 * 512 * 32 * 256 * 2
    h200 = resolve_gpu("h200")
    v1 = fit(ds, h200, FitInputs(seq=8192, tp=8, engine=find("vllm==0.19.0"))).weight_bytes
    sgl = fit(ds, h200, FitInputs(seq=8192, tp=8, engine=find("sglang"))).weight_bytes
    assert v1 - sgl == 61 * 512 * 16 * 256 * 2
    assert round(v1 / 2**30, 2) == 79.55 and "takes kvcalc's 79.31 GiB to 79.55 against the 79.74 GiB" in text
    assert round((v1 - 61 * 512 * 16 * 256 * 2) / 2**30, 2) == 79.31
    # fit names the copy in GiB: 255,852,544 B = 0.24 GiB.
    r = fit(ds, h200, FitInputs(seq=8192, tp=8, engine=find("vllm==0.19.0")))
    reason = next(e for e in r.estimates if e.key == "weights").reason
    assert f"kv_b_proj for its absorbed decode ({61 * 512 * 16 * 256 * 2 / 2**30:.2f} GiB)" in reason


def test_kv_dtype_auto_follows_a_16_or_32_bit_weight_dtype(cli):
    # vLLM's kv_cache_dtype auto is the model's dtype (utils/torch_utils.py, 0.19.0): --dtype float32
    # caches K and V at 4 bytes. Llama-3.1-8B: 32 layers x 8 KV heads x 128 x 2 (K, V) x 4 B = 262,144 B.
    base = ("fit", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8192", "--json")
    assert cli(*base, "--weight-dtype", "fp32").json()["kv_bytes_per_token"] == 32 * 8 * 128 * 2 * 4
    # A quantized weight format leaves the activations, and so the cache, at 16 bits; so does no flag.
    assert cli(*base, "--weight-dtype", "fp8").json()["kv_bytes_per_token"] == 32 * 8 * 128 * 2 * 2
    assert cli(*base).json()["kv_bytes_per_token"] == 32 * 8 * 128 * 2 * 2
    # A format given wins.
    assert cli(*base, "--weight-dtype", "fp32", "--kv-dtype", "bf16").json()["kv_bytes_per_token"] == 32 * 8 * 128 * 2 * 2
    # A name that is none of them says auto is accepted too.
    one_line_error(cli(*base, "--kv-dtype", "autox"), "unknown KV dtype 'autox' (--kv-dtype): auto or one of fp32, bf16")


def test_sparse_mla_fp8_is_standard_fp8_under_flashinfers_sparse_backend(cli):
    # vLLM 0.18.0 turns an fp8 cache of DeepSeek-V3.2 into FlashMLA's fp8_ds_mla only under the
    # FLASHMLA_SPARSE backend (layers/attention/mla_attention.py); on compute capability 10 at 16 heads a
    # GPU or fewer FLASHINFER_MLA_SPARSE comes first (platforms/cuda.py) and keeps standard fp8. Per token
    # and layer: the 512 + 64 latent at 1 byte and the indexer's 132 B, against FlashMLA's 512 + 4 x 4 + 2 x 64
    # = 656 B and the same 132. vllm-memory-estimator's records of NVIDIA's DeepSeek-V3.2-NVFP4 on 8 B200s
    # under 0.18.0 log 110.95 GiB holding 2,758,336 tokens: 43,188 B a token, 61 x 708.
    m = resolve_model("deepseek-v3.2")

    def per_token(gpu, tp, release, kv="fp8"):
        inp = FitInputs(seq=8192, engine=release, tp=tp, kv_dtype=kv)
        return fit(m, resolve_gpu(gpu), inp).kv_bytes_per_token

    from kvcalc.engine.engines import engine
    from kvcalc.specs.dtypes import kv_dtype

    fp8, e4m3 = kv_dtype("fp8"), kv_dtype("fp8_e4m3")
    v18 = engine("vllm==0.18.0")
    assert per_token("b200", 8, v18, fp8) == 61 * (576 + 132) == 43_188
    assert per_token("b200", 8, v18, e4m3) == 61 * (576 + 132)
    # Hopper has only FlashMLA's sparse kernel; 32 heads a GPU at TP 4 put it first on a B200 too; 0.16 and
    # 0.17.0's models/config.py convert every fp8 cache.
    assert per_token("h200", 8, v18, fp8) == per_token("h200", 8, v18, e4m3) == 61 * (656 + 132)
    assert per_token("b200", 4, v18, fp8) == 61 * (656 + 132)
    assert per_token("b200", 8, engine("vllm==0.16.0"), fp8) == 61 * (656 + 132)
    # The step model and the bound read the cache in the format stored: 1,024 tokens x 43,188 B on a B200
    # under 0.18, x 48,068 B under 0.16.
    base = ("roofline", "--model", "deepseek-v3.2", "--gpu", "b200", "--tp", "8", "--kv-dtype", "fp8")
    base += ("--batch", "1", "--seq", "1024", "--json")
    r18 = cli(*base, "--engine", "vllm==0.18.0").json()["rows"][0]
    r16 = cli(*base, "--engine", "vllm==0.16.0").json()["rows"][0]
    assert (r18["kv_dtype"], r18["kv_bytes_read"]) == ("fp8_e4m3", 1024 * 43_188)
    assert (r16["kv_dtype"], r16["kv_bytes_read"]) == ("fp8", 1024 * 48_068)
    # A model without an indexer stores fp8 as one byte an element whatever the name.
    llama = resolve_model("llama3.1-8b")
    assert fit(llama, resolve_gpu("b200"), FitInputs(seq=8192, kv_dtype=e4m3)).kv_bytes_per_token == 32 * 8 * 128 * 2


def test_sglang_keeps_a_dsa_fp8_cache_raw_from_0_5_10_where_its_default_backend_reads_it():
    # SGLang's calculate_mla_kv_cache_dim (model_runner_kv_cache_mixin.py, 0.5.10 to 0.5.14;
    # mem_cache/kv_cache_configurator.py, 0.5.16 to 0.5.23) sizes a DSA model's fp8 cache as the raw latent,
    # 512 + 64 elements at one byte, where the DSA backend is trtllm or tilelang: the defaults for an fp8 cache on
    # compute capability 10 and up, and on HIP. Elsewhere, and in 0.5.9 everywhere, FlashMLA's scaled layout:
    # 512 + 4 x 4 + 2 x 64 = 656 B. The indexer adds 132 B a layer either way; GLM-5 has 78 layers,
    # DeepSeek-V3.2 61. GLM-5.1's MI355X starts under 0.5.12 log 37.74 GB (GiB) for 733,696 tokens: 708 B x 78.
    from kvcalc.engine.engines import engine

    def per_token(model, gpu, release, kv="fp8", tp=8):
        inp = FitInputs(seq=8192, engine=engine(release), tp=tp, kv_dtype=kv)
        return fit(resolve_model(model), resolve_gpu(gpu), inp).kv_bytes_per_token

    raw, scaled = 576 + 132, 656 + 132
    assert per_token("glm-5", "mi355x", "sglang@0.5.12", tp=2) == 78 * raw == 55_224
    assert round(37.74 * 2**30 / 733_696 / 78) == raw
    assert per_token("deepseek-v3.2", "b200", "sglang@0.5.12") == 61 * raw
    assert per_token("deepseek-v3.2", "b200", "sglang@0.5.12", "fp8_e4m3") == 61 * raw
    # Under auto SGLang stores fp8 on compute capability 10 and up (bf16 on HIP and Hopper), raw from 0.5.10.
    import dataclasses

    from kvcalc.specs.dtypes import kv_dtype

    auto = dataclasses.replace(kv_dtype("bf16"), auto=True)  # as --kv-dtype auto is parsed
    assert per_token("deepseek-v3.2", "b200", "sglang@0.5.23", auto) == 61 * raw
    assert per_token("deepseek-v3.2", "mi355x", "sglang@0.5.23", auto) == 61 * (2 * 576 + 132)
    # Hopper runs flashmla_kv; 0.5.9 sizes every fp8 cache in FlashMLA's layout.
    assert per_token("deepseek-v3.2", "h200", "sglang@0.5.12") == 61 * scaled
    assert per_token("glm-5", "mi355x", "sglang@0.5.9", tp=2) == 78 * scaled
    assert per_token("deepseek-v3.2", "b200", "sglang@0.5.9") == 61 * scaled


def test_sglang_0_5_4_to_0_5_9_count_a_dsa_fp8_pool_in_raw_latent_tokens():
    # SGLang 0.5.9's get_cell_size_per_token (model_runner_kv_cache_mixin.py; profile_max_num_token in model_runner.py
    # from 0.5.4) counts (kv_lora_rank + qk_rope_head_dim) x layers x the cache's itemsize plus the indexer's 128 + 4 B:
    # 708 B a layer at fp8, where MLATokenToKVPool stores FlashMLA's 656 + 132 = 788. GLM-5-FP8 on 8 MI355Xs under a
    # 0.5.9 ROCm build (ajith-sirra-amd/Issues, GLM-5-FP8-MI355X-SGLANG-ERROR.md): mem_fraction_static 0.908, 279.48
    # GB free at weight load on the fullest rank, 190.28 GB after its 89.20 GB of weights (SGLang's GB are GiB):
    # rest = 190.28 - 279.48 x (1 - 0.908) GiB; the log's 3,199,575 tokens are rest over 78 x 708, not 78 x 788,
    # and its 183.15 GB of KV are those tokens at 788.
    rest = 190.28 - 279.48 * (1 - 0.908)
    assert abs(int(rest * 2**30) // (78 * 708) / 3_199_575 - 1) < 0.001
    assert int(rest * 2**30) // (78 * 788) < 0.9 * 3_199_575
    assert round(3_199_575 * 78 * 788 / 2**30, 2) == 183.15
    from kvcalc.engine.engines import engine

    m = resolve_model("glm-5")
    given = dict(seq=8192, tp=8, kv_dtype="fp8", util=0.908, gpu_free=int(279.48 * 2**30), weights=int(89.20 * 2**30))
    r = fit(m, resolve_gpu("mi355x"), FitInputs(engine=engine("sglang@0.5.9"), **given))
    assert r.kv_bytes_per_token == 78 * 788
    assert r.kv_pool_tokens is not None and abs(r.kv_pool_tokens / 3_199_575 - 1) < 0.001
    assert any("counts this pool in tokens of the raw fp8 latent (55,224 B a token here)" in w for w in r.warnings)
    # What those tokens take as stored, and the overrun, in exact bytes: tokens x 78 x 788 against the budget.
    taken = r.kv_pool_tokens * 78 * 788
    assert any(f"take {taken:,} B (" in w and f"{taken - r.kv_pool_bytes:,} B (" in w for w in r.warnings), r.warnings
    # 0.5.10 and later count the layout they store (raw on HIP, Engine.sparse_mla_raw_fp8): 708 B stored and counted.
    r12 = fit(m, resolve_gpu("mi355x"), FitInputs(engine=engine("sglang@0.5.12"), **given))
    assert r12.kv_bytes_per_token == 78 * 708 and not any("raw fp8 latent" in w for w in r12.warnings)
    # On Hopper 0.5.12 stores FlashMLA's layout and counts it.
    h = fit(
        resolve_model("deepseek-v3.2"),
        resolve_gpu("h200"),
        FitInputs(engine=engine("sglang@0.5.12"), seq=8192, tp=8, kv_dtype="fp8"),
    )
    assert h.kv_bytes_per_token == 61 * 788 and abs(h.kv_pool_tokens * 61 * 788 / h.kv_pool_bytes - 1) < 0.01


def test_the_triton_sampler_buffer_follows_the_release_and_the_gpu():
    """vLLM's Triton top-k/top-p kernel caches min(next power of 2 of min(SMs, rows), SMs) fp32 rows of the
    vocabulary (v1/sample/ops/topk_topp_triton.py): by default in 0.17 to 0.20, from 0.21 only where FlashInfer's
    sampler does not run (ROCm, a GPU before sm_80), 0.33's V2 sampler likewise. Llama-3.1-8B (vocabulary 128,256),
    1,024 rows: the T4's 40 SMs, the L4's 58, the MI300X's 304 compute units; torch's cuBLAS workspaces are
    4,096 KiB x 8 + 1,024 KiB on an H100, none counted on ROCm."""
    from kvcalc.engine.engines import engine as find

    m = resolve_model("llama3.1-8b")

    def act(gpu: str, release: str) -> int:
        inp = FitInputs(seq=8192, engine=find(release), max_num_batched_tokens=8192, max_num_seqs=1024, gpu_memory=80 * 2**30)
        return next(e for e in fit(m, resolve_gpu(gpu), inp).estimates if e.key == "activation").best

    row = 128_256 * 4
    # 0.33 on a T4 masks with Triton, on an L4 samples with FlashInfer: the same workspaces, 40 rows apart.
    assert act("t4", "vllm==0.33.0") - act("l4", "vllm==0.33.0") == 40 * row
    # 0.19 masks with Triton on an L4 by default, 0.21 samples with FlashInfer there.
    assert act("l4", "vllm==0.19.0") - act("l4", "vllm==0.21.0") == 58 * row
    # On an MI300X under 0.33: 304 rows, and no cuBLAS workspace, against an H100 with FlashInfer and 33 MiB.
    assert act("mi300x", "vllm==0.33.0") - act("h100", "vllm==0.33.0") == 304 * row - (4096 * 1024 * 8 + 1024 * 1024)


def test_vllm_takes_64_token_blocks_for_sparse_mla_on_nvidia_only():
    """vLLM forces blocks of 64 for a sparse-MLA model's backends on NVIDIA GPUs (platforms/cuda.py,
    0.11.0 and 0.16.0; the eighteenth set's 0.19.1 and 0.20.0 logs say so); ROCm and dense MLA keep 16,
    and a block size given wins."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.memory import FitInputs, fit

    glm, h200, mi = resolve_model("glm-5"), resolve_gpu("h200"), resolve_gpu("mi355x")
    inp = FitInputs(seq=32768, tp=8, weight_dtype="fp8", engine=engine("vllm@0.20"))
    r = fit(glm, h200, inp)
    assert r.block_size == 64 and r.kv_pool_tokens % 64 == 0
    assert any("blocks of 64 tokens, not 16" in a for a in r.assumptions)
    assert fit(glm, mi, inp).block_size == 16
    assert fit(glm, h200, inp.replace(block_size=16)).block_size == 16
    assert fit(glm, h200, inp.replace(engine=engine("vllm@0.10"))).block_size == 16
    assert fit(resolve_model("deepseek-v3"), h200, inp.replace(weight_dtype=None)).block_size == 16


def test_sglang_pages_a_sparse_mla_cache_in_64_and_says_its_blackwell_default_is_fp8():
    """SGLang 0.5.3 to 0.5.23: a DSA model's pages are 64 tokens on CUDA GPUs ("Setting page size to 64 for
    DeepSeek DSA", server_args.py; memory_pool.py 0.5.23), and kv_cache_dtype auto is fp8_e4m3 on compute
    capability 10 and up (server_args.py 0.5.6 to 0.5.14, arg_groups/overrides.py 0.5.19 and 0.5.23)."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.memory import FitInputs, fit

    m = resolve_model("deepseek-v3.2")
    inp = FitInputs(seq=32768, tp=8, engine=engine("sglang@0.5.6"))
    b200 = fit(m, resolve_gpu("b200"), inp)
    assert b200.block_size == 64 and b200.kv_pool_tokens % 64 == 0
    assert any("stores a sparse-MLA cache as fp8_e4m3 on b200 by default" in w for w in b200.warnings)
    assert any("where its pool is otherwise token-granular" in a for a in b200.assumptions)
    h200 = fit(m, resolve_gpu("h200"), inp)
    assert h200.block_size == 64 and not any("fp8_e4m3" in w for w in h200.warnings)
    # Given fp8, no warning; ROCm pages of 1 (the record's token-granular pool); 0.4 had no DSA rules.
    from kvcalc.specs.dtypes import kv_dtype

    assert not any("fp8_e4m3" in w for w in fit(m, resolve_gpu("b200"), inp.replace(kv_dtype=kv_dtype("fp8"))).warnings)
    assert fit(m, resolve_gpu("mi355x"), inp).block_size is None
    assert fit(m, resolve_gpu("b200"), inp.replace(engine=engine("sglang@0.4"))).block_size is None
    # kv_cache_dtype auto (the commands' default) is what SGLang stores: FlashMLA's fp8 layout on the B200,
    # 61 layers x (656 + 132) B a token, and the 16-bit latent on the H200.
    import dataclasses

    from kvcalc.specs.dtypes import BF16

    auto = inp.replace(kv_dtype=dataclasses.replace(BF16, auto=True))
    b = fit(m, resolve_gpu("b200"), auto)
    assert b.kv_bytes_per_token == 61 * (656 + 132) and any("kv_cache_dtype auto: SGLang" in a for a in b.assumptions)
    assert fit(m, resolve_gpu("h200"), auto).kv_bytes_per_token == 61 * (576 * 2 + 132)
    assert fit(m, resolve_gpu("b200"), auto.replace(engine=engine("vllm@0.20"))).kv_bytes_per_token == 61 * (576 * 2 + 132)


def test_fit_counts_a_dense_mla_model_in_its_backends_blocks_and_says_so():
    """vLLM 0.11 on an H200 forces FlashMLA's 64-token blocks for DeepSeek-V3 (platforms/cuda.py): the
    pool is whole blocks of 64 tokens x 61 layers x 576 x 2 B, and an assumption line says why."""
    from kvcalc.engine.engines import engine

    r = fit(resolve_model("deepseek-v3"), resolve_gpu("h200"), FitInputs(seq=32768, tp=8, engine=engine("vllm@0.11")))
    per_block = 64 * 61 * 576 * 2
    assert r.block_size == 64 and r.kv_pool_blocks == r.kv_pool_bytes // per_block
    assert r.kv_pool_tokens == r.kv_pool_blocks * 64
    assert any(a.startswith("blocks of 64 tokens, not 16: vLLM 0.11's default MLA backend on h200") for a in r.assumptions)
    # On an A100 the release forces nothing: blocks of 16, and no such line.
    a = fit(resolve_model("deepseek-v3"), resolve_gpu("a100-80gb"), FitInputs(seq=32768, tp=8, engine=engine("vllm@0.11")))
    assert a.block_size == 16 and not any("default MLA backend" in x for x in a.assumptions)


def test_tensorrt_engines_hold_the_runtimes_and_decoders_buffers_before_the_cache():
    """trtllm@0.19 (TensorRT engines, 0.14 to 0.21): the C++ runtime's logits and the decoder's four buffers of
    max_batch_size x the vocabulary, and its per-sequence buffers, come out of the memory the KV cache is sized
    from (kvcalc.engine.memory.trt_decoder_bytes; docs/engines.md)."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.memory import activation_bytes_per_token, trt_decoder_bytes

    m = resolve_model("llama3.1-8b")
    b, v, s = 2048, 128_256, 2048
    # Runtime: logits [B, V] fp32, 8 B a token a slot and the cache indirection's two [B, S] int32; decoder: embedding
    # bias, runtime logits and top-k scratch [B, V] fp32, 64 x B x 1,024 more for top-k, the penalties' int32 [B, V]
    # and four [B, S] of 4 B.
    want = (b * v * 4 + 8 * b * s + 8 * b * s) + (3 * b * v * 4 + 4 * b * v + 64 * b * 1024 + 16 * b * s)
    assert trt_decoder_bytes(m, b, s) == want == 5_521_801_216
    # The same release's runtime buffers, logged at 2.66 GB (GiB), come to 2.16 GiB by the runtime's part: one more
    # [B, S] buffer of 8 B (0.5 GiB there) is not named, and the range's high end takes it.
    assert round((b2 := 2048) * 151_936 * 4 / 2**30 + 16 * b2 * 32_768 / 2**30, 2) == 2.16
    assert round(2.66 - 2.16, 2) == round(8 * 2048 * 32_768 / 2**30, 2) == 0.5
    # NVIDIA/TensorRT-LLM#1188 logged "Allocated 5.76 GB GPU memory for decoder" (GiB) for B 2,048, S 32,768 and a
    # 151,936-token vocabulary: the decoder's part alone.
    b2, v2, s2 = 2048, 151_936, 32_768
    assert round((3 * b2 * v2 * 4 + 4 * b2 * v2 + 64 * b2 * 1024 + 16 * b2 * s2) / 2**30, 2) == 5.76
    # At TP 2 the vocabulary is padded to a multiple of 2 (128,256 already is): the same per GPU.
    assert trt_decoder_bytes(m, b, s, tp=2) == want
    # The sixteenth held-out set's start (tests/logs/real): the activation line is the execution context over
    # max_num_tokens 1,024 plus the buffers.
    inp = FitInputs(
        seq=2048, engine="trtllm@0.19", weight_dtype="fp8", kv_dtype="fp8", max_model_len=2048, max_num_seqs=2048,
        max_num_batched_tokens=1024, block_size=32, util=0.9,
    )  # fmt: skip
    r = fit(m, resolve_gpu("rtx5090"), inp)
    act = next(e for e in r.estimates if e.key == "activation")
    ctx = 1024 * activation_bytes_per_token(m)
    assert (act.best, act.low, act.high) == (ctx + want, ctx * 85 // 100 + want, ctx * 5 // 2 + want + 8 * b * s)
    # trtllm-build's default max_batch_size (BuildConfig, tensorrt_llm/builder.py) where none is given; the 1.x
    # record keeps its profiled forward pass and sampler.
    d = fit(m, resolve_gpu("h100-sxm"), FitInputs(seq=4096, engine="trtllm@0.19", max_model_len=4096))
    assert engine("trtllm@0.19").default_num_seqs(0, "h100-sxm") == 2048
    a = next(e for e in d.estimates if e.key == "activation")
    assert a.best == 8192 * activation_bytes_per_token(m) + trt_decoder_bytes(m, 2048, 4096)
    one = fit(m, resolve_gpu("h100-sxm"), FitInputs(seq=4096, engine="trtllm", max_model_len=4096))
    assert "sampler" in next(e for e in one.estimates if e.key == "activation").reason
    # Releases: 0.14 to 0.21 take this record, 1.x the other; before 0.14 (a 0.12 log shows twice the decoder
    # buffers) no rules.
    assert engine("trtllm@0.19.0").key == engine("tensorrt-llm@0.14").key == "trtllm@0.19"
    assert engine("trtllm@1.0").key == "trtllm@1.2"
    with pytest.raises(KvcalcError, match="no rules for trtllm 0.12") as e:
        engine("trtllm@0.12")
    assert "trtllm@0.19 (0.14 to 0.21 on TensorRT engines) or trtllm (1.x)" in e.value.line() and "vllm@" not in e.value.line()


def test_enforce_eager_subtracts_no_cuda_graph_estimate(cli):
    """vLLM 0.21 and later subtract an estimate of their CUDA graphs before sizing the pool (kvcalc's 512 MiB
    default); under --enforce-eager vLLM captures none (0.22.1: config/vllm.py sets cudagraph_mode NONE,
    gpu_worker.py determine_available_memory profiles graph memory only otherwise), so the pool is 512 MiB
    larger. Releases that capture their graphs after sizing (0.11) are unchanged."""
    base = ["fit", "--model", "qwen3-8b", "--gpu", "t4", "--tp", "2", "--util", "0.85", "--seq", "4096", "--json"]
    graphs = cli(*base, "--engine", "vllm@0.22").json()
    eager = cli(*base, "--engine", "vllm@0.22", "--enforce-eager").json()
    line = {name: next(b for b in d["budget"] if b["key"] == "cudagraph") for name, d in (("g", graphs), ("e", eager))}
    assert (line["g"]["bytes"], line["e"]["bytes"]) == (512 * 2**20, 0)
    assert eager["kv_pool_bytes"] - graphs["kv_pool_bytes"] == 512 * 2**20
    old = [cli(*base, "--engine", "vllm@0.11", *flag).json()["kv_pool_bytes"] for flag in ((), ("--enforce-eager",))]
    assert old[0] == old[1]


@pytest.mark.parametrize(
    "line,eager",
    [
        ("(EngineCore pid=1) INFO [core.py:1] Initializing a V1 LLM engine (v0.22.1) with config: enforce_eager=True, x", True),
        ("(APIServer pid=1) INFO [utils.py:1] non-default args: {'model': 'm', 'enforce_eager': True}", True),
        ("$ vllm serve Qwen/Qwen3-8B --enforce-eager --port 8000", True),
        ("(EngineCore pid=1) INFO [core.py:1] Initializing a V1 LLM engine (v0.22.1) with config: enforce_eager=False, x", False),
        ("$ vllm serve Qwen/Qwen3-8B --enforce-eager-mode --port 8000", None),
    ],
)
def test_a_logs_enforce_eager_is_read(line, eager):
    from kvcalc.inputs.logs import parse_startups

    log = line + "\nINFO [kv_cache_utils.py:1] GPU KV cache size: 1,000 tokens\n"
    assert parse_startups(log)[0].enforce_eager is eager


def test_without_prefix_caching_a_hybrid_request_holds_one_state_page_a_group_not_two(cli):
    """vLLM 0.15 and later hold two recurrent-state pages a request for prefix caching ('align') and one without it
    (0.19.0 model_executor/models/config.py MambaModelConfig: mamba_cache_mode 'none' when prefix caching is off;
    v1/kv_cache_interface.py MambaSpec.max_memory_usage_bytes): the concurrency vLLM logs divides the blocks by
    ceil(100,000 / 784) = 128 attention pages plus one or two for each of Qwen3.5-27B's three state groups."""
    ask = ["fit", "--model", "qwen3.5-27b", "--gpu", "rtx3090", "--tp", "4", "--seq", "100000", "--engine", "vllm@0.19"]
    on, off = cli(*ask, "--json").json(), cli(*ask, "--no-prefix-caching", "--json").json()
    assert on["block_size"] == off["block_size"] == 784 and on["kv_pool_blocks"] == off["kv_pool_blocks"]
    blocks = on["kv_pool_blocks"]
    assert -(-100_000 // 784) == 128
    assert on["concurrency"] == pytest.approx(blocks / (128 + 3 * 2))
    assert off["concurrency"] == pytest.approx(blocks / (128 + 3 * 1))
    # The text says which it took.
    said_on, said_off = (" ".join(cli(*ask, *extra).out.split()) for extra in ((), ("--no-prefix-caching",)))
    assert "a request holds 2 such pages a state layer (prefix caching on)" in said_on
    assert "a request holds 1 such page a state layer (prefix caching off)" in said_off
    # A model without recurrent layers is not moved.
    plain = ["fit", "--model", "llama3.1-8b", "--gpu", "h100-sxm", "--seq", "8k", "--engine", "vllm@0.19", "--json"]
    a, b = cli(*plain).json(), cli(*plain, "--no-prefix-caching").json()
    assert (a["concurrency"], a["kv_pool_blocks"]) == (b["concurrency"], b["kv_pool_blocks"])


def test_vllm_0_7_materializes_mla_decode_weights():
    """vLLM 0.7.1 to 0.7.3 multiply kv_b_proj's halves into their neighbours at load
    (attention/backends/mla/utils.py process_weights_after_loading, VLLM_MLA_PERFORM_MATRIX_ABSORPTION on);
    0.8.0 dropped it (vllm-project/vllm#14770). docs/engines.md's table, by hand."""
    from dataclasses import replace
    from pathlib import Path

    from kvcalc.engine.engines import engine as find
    from kvcalc.engine.weights import mla_materialized

    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    ds = resolve_model("deepseek-v3")  # q_lora_rank 1,536, kv_lora_rank 512, 128 heads (16 at TP 8), rope 64, hidden 7,168
    # fp8 block-scaled: W_Q_UK and W_UV_O requantized with an fp32 scale a 128 x 128 block; W_QR 16-bit; kv_b_proj's copy.
    w_q_uk = 1536 * 16 * 512 + (1536 // 128) * (16 * 512 // 128) * 4
    w_qr = 1536 * 16 * 64 * 2
    w_uv_o = 16 * 512 * 7168 + (16 * 512 // 128) * (7168 // 128) * 4
    copy = 512 * 16 * 256 * 2
    assert w_q_uk + w_qr + w_uv_o + copy == 78_660_608 and "| a layer | 78,660,608 B | 149,946,368 B |" in text
    m = mla_materialized(ds, None, 8)
    assert m.resident_bytes == 61 * 78_660_608 and f"{m.resident_bytes / 2**30:.2f}" == "4.47"
    # A decode step reads the products in place of q_b_proj, kv_b_proj and o_proj, each fp8 with a scale a 16,384 weights.
    originals = sum(n + -(-n // 16384) * 4 for n in (1536 * 16 * 192, 512 * 16 * 256, 16 * 128 * 7168))
    assert originals == 21_501_056 and w_q_uk + w_qr + w_uv_o == 74_466_304
    assert m.decode_read_bytes == 61 * (74_466_304 - 21_501_056) and m.absorbed_read_bytes == 61 * 74_466_304
    flops = 2 * 16 * (1536 * 512 + 1536 * 64 + 512 * 7168 - 1536 * 192 - 512 * 256 - 128 * 7168)
    assert m.decode_flops_per_token == 61 * flops and flops == 102_760_448
    assert "4.47 GiB a GPU for the fp8 checkpoint and 8.52 GiB for AWQ" in text and "(3.23 GB more a step" in text
    assert f"{m.decode_read_bytes / 1e9:.2f}" == "3.23" and f"{m.decode_flops_per_token / 1e9:.2f}" == "6.27"
    from kvcalc.engine.weights import active_matmul_params

    # Beside the model's own matmuls a GPU runs at TP 8: 2 x active parameters / 8.
    assert (
        f"{2 * active_matmul_params(ds) / 8 / 1e9:.2f}" == "9.16"
        and "the whole model's matmuls are 9.16 GFLOP a token a GPU" in text
    )
    # AWQ: every product in 16 bits, and the dequantized kv_b_proj kept.
    awq = 1536 * 16 * 512 * 2 + w_qr + 16 * 512 * 7168 * 2 + copy
    assert awq == 149_946_368 and mla_materialized(ds, "int4", 8).resident_bytes == 61 * awq
    # A 16-bit checkpoint keeps no copy (W_UK and W_UV view kv_b_proj); no q latent: the query from the hidden state.
    lite = resolve_model("deepseek-v2-lite")  # 16 heads, hidden 2,048, kv_lora_rank 512, no q_lora_rank, 27 layers
    assert lite.layer_kinds["mla"].q_lora_rank == 0
    assert mla_materialized(lite, None, 1).resident_bytes == 27 * (2048 * 16 * 512 * 2 + 2048 * 16 * 64 * 2 + 16 * 512 * 2048 * 2)
    # Pipeline stages hold their own layers: 31 of 61 on the second at PP 2 (0.7's split, the remainder last).
    assert mla_materialized(ds, "int4", 8, pp=2, pp_split="last").resident_bytes == 31 * awq
    assert mla_materialized(resolve_model("llama3.1-8b"), None, 1).resident_bytes == 0
    # Which releases: 0.7.1 to 0.7.3 (kvcalc's vllm@0.7 and vllm@0.7.2 records), not 0.6 or 0.8.
    assert [find(f"vllm=={v}").mla_decode for v in ("0.7.1", "0.7.3", "0.6.3", "0.8.0", "0.11.0")] == [
        "materialized",
        "materialized",
        "per-head",
        "per-head",
        "per-head",
    ]
    # fit adds the resident bytes to the weights and says so.
    h200 = resolve_gpu("h200")
    e072 = find("vllm==0.7.3")
    got = fit(ds, h200, FitInputs(seq=8192, tp=8, engine=e072))
    without = fit(ds, h200, FitInputs(seq=8192, tp=8, engine=replace(e072, mla_decode="per-head")))
    assert got.weight_bytes - without.weight_bytes == 61 * 78_660_608
    reason = next(e for e in got.estimates if e.key == "weights").reason
    assert (
        f"vLLM 0.7's materialized MLA decode weights on each MLA layer (W_Q_UK, W_QR and W_UV_O, and a quantized kv_b_proj's 16-bit copy) ({61 * 78_660_608 / 2**30:.2f} GiB)"
        in reason
    )


def test_the_step_model_reads_vllm_0_7s_materialized_mla_weights_at_decode_only():
    from dataclasses import replace

    from kvcalc.engine.engines import engine as find
    from kvcalc.engine.steptime import StepModel
    from kvcalc.specs.dtypes import kv_dtype

    ds, h200 = resolve_model("deepseek-v3"), resolve_gpu("h200")
    e = find("vllm==0.7.3")
    mat = StepModel(ds, h200, kv_dtype("bf16"), tp=8, engine=e)
    per = StepModel(ds, h200, kv_dtype("bf16"), tp=8, engine=replace(e, mla_decode="per-head"))
    layer_bytes, layer_flops = 74_466_304 - 21_501_056, 102_760_448  # test above, by hand
    for b in (1, 64):
        a, o = mat.step(b, 2000.0), per.step(b, 2000.0)
        # t_memory_s is the bytes over the bandwidth at the step's shares: the weights' at eta_gemm.
        assert math.isclose((a.t_memory_s - o.t_memory_s) / mat.inv_w, 61 * layer_bytes, rel_tol=1e-9)
        assert math.isclose((a.t_compute_s - o.t_compute_s) / mat.inv_mm, 61 * layer_flops * b, rel_tol=1e-9)
        assert a.t_step_s > o.t_step_s
    # A prompt step runs through the originals: the same bytes and FLOPs either way, and under vLLM 0.7 five matmuls an
    # MLA layer, not six (q_a_proj, kv_a_proj_with_mqa, q_b_proj, kv_b_proj, o_proj; decodes: W_Q_UK, W_QR and W_UV_O
    # after the first two), 61 matmuls' latency less.
    p_mat, p_per = mat.step(0, 0.0, 512, 512), per.step(0, 0.0, 512, 512)
    assert (p_mat.t_memory_s, p_mat.t_compute_s) == (p_per.t_memory_s, p_per.t_compute_s)
    assert (per.kernels.gemm - mat.kernels.gemm, per.prompt_kernels.gemm - mat.prompt_kernels.gemm) == (61, 61)
    assert mat.kernels.gemm == 61 * 5 + 3 * 2 + 58 * (1 + 2) == 485  # MLA; three dense MLPs' two; router, shared two
    assert per.kernels.gemm == 61 * 6 + 3 * 2 + 58 * (1 + 2) == 546
    doc = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    assert "so DeepSeek-V3's step launches 485 matmuls where 0.8 and 0.9 launch 546" in doc
    v10 = StepModel(ds, h200, kv_dtype("bf16"), tp=8, engine=find("vllm==0.10.0"))
    assert v10.kernels.gemm == 485 and "from 0.10 the query's and the latent's down projections are one matmul" in doc
    # Decodes beside a prompt read the products and the originals.
    a, o = mat.step(8, 2000.0, 512, 512), per.step(8, 2000.0, 512, 512)
    assert math.isclose((a.t_memory_s - o.t_memory_s) / mat.inv_w, 61 * 74_466_304, rel_tol=1e-9)
    # The simulator's spans and the roofline's columns take the same terms as step().
    span_a, span_o = mat.lines(32, 2000.0), per.lines(32, 2000.0)
    assert (
        span_a[0] > span_o[0]
        and mat.decode_columns([0.0], [0.0], [0.0], [0.0], [32])[0][0]
        > per.decode_columns([0.0], [0.0], [0.0], [0.0], [32])[0][0]
    )
