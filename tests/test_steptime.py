"""The one step-time model: each term against arithmetic written out here."""

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import one_line_error
from kvcalc.engine.steptime import DEFAULTS, StepConstants, StepModel, matmul_dtype, matmul_s, tp_link
from kvcalc.specs.catalog import resolve_gpu, resolve_model
from kvcalc.specs.dtypes import kv_dtype

BF16 = kv_dtype("bf16")


def test_a_tp8_decode_step_term_by_term():
    # Llama-3.1-70B (80 layers, hidden 8,192) at TP 8 on H100 SXM, 32 requests at 4,096 tokens.
    m, h = resolve_model("llama3.1-70b"), resolve_gpu("h100")
    sm = StepModel(m, h, BF16, tp=8)
    s = sm.step(32, 4096)
    # Bytes: the weights one rank reads (17,378,131,968 B, as roofline prints them) and 32 requests'
    # KV at 4,096 tokens: 2 x 80 layers x 8 KV heads / 8 ranks x 128 x 2 B = 40,960 B a token.
    kv = 32 * 4096 * 2 * 80 * 1 * 128 * 2
    assert kv == 5_368_709_120
    bytes_read = 17_378_131_968 + kv
    # The small kernels between the matmuls, per token on a rank, each of 80 layers: two fused
    # residual-add RMSNorms (read x and the residual, write both: 4 x 8,192 x 2 B each), rotary over 8
    # query and 1 KV head of 128 read and written, the cache write's read of K and V, SiLU-and-multiply
    # over 28,672 / 8 (read two, write one: 6 x 3,584 B).
    per_token = 80 * (2 * 4 * 8192 * 2 + 2 * (2 * (8 + 1) * 128 + (128 + 128)) + 6 * 28672 // 8)
    assert per_token == 12_615_680
    # The weights at the H100 spec's measured matmul share (0.86: its gemm block, AIConfigurator's GEMM
    # tables), the KV and the small kernels' bytes at eta_bw 0.80.
    assert h.gemm is not None and (h.gemm.bandwidth_share, h.gemm.latency_us) == (0.86, 3.4)
    want = 17_378_131_968 / (3.35e12 * 0.86) + (kv + 32 * per_token) / (3.35e12 * 0.80)
    assert s.t_memory_s == pytest.approx(want, rel=1e-12)
    # All-reduces: 2 per layer of 32 x 8,192 x 2 B = 524,288 B, which the H100 spec's measurements give
    # at TP 8 (vLLM's custom all-reduce in a CUDA graph, AIConfigurator's table): 11.99 us.
    a = 32 * 8192 * 2
    assert a == 524_288 and h.allreduce is not None
    assert h.allreduce.latency_us[8][h.allreduce.message_bytes.index(a)] == 11.99
    assert s.t_collective_s == pytest.approx(2 * 80 * 11.99e-6, rel=1e-12)
    # Without the measurements (a calibration's alpha_s, or a GPU whose spec has none): 5 us +
    # 524,288 B x 2 x 7/8 over 0.7 x 450 GB/s.
    import dataclasses

    c = dataclasses.replace(DEFAULTS, alpha_s=5e-6)
    per = 5e-6 + a * 2 * 7 / 8 / (0.7 * 450e9)
    assert StepModel(m, h, BF16, tp=8, constants=c).step(32, 4096).t_collective_s == pytest.approx(2 * 80 * per, rel=1e-12)
    # Fixed: 0.5 ms + 32 requests x 4 us, and each of the 80 layers' kernels: 4 matmuls (QKV, output,
    # gate-up, down) at the spec's measured 3.4 us, one attention call at 11 us, 5 small kernels (two
    # norms, rotary, the cache write, the activation) at 2.7 us; and each attention call's work per
    # request and KV head, 32 requests x 1 KV head a rank (8 / TP 8) at the spec's measured 24.5 ns
    # (its attention block: AIConfigurator's decode-attention tables).
    assert h.attention is not None and h.attention.request_head_ns == 24.5
    per_layer = 4 * 3.4e-6 + 11e-6 + 5 * 2.7e-6 + 32 * 1 * 24.5e-9
    assert s.t_fixed_s == pytest.approx(0.5e-3 + 32 * 4e-6 + 80 * per_layer, rel=1e-12)
    # A GPU whose spec measures no matmuls (an H100 NVL) takes the pooled figures: eta_bw and 3 us.
    nvl = StepModel(m, resolve_gpu("h100-nvl"), BF16, tp=8)
    assert resolve_gpu("h100-nvl").gemm is None and (nvl.c.eta_gemm, nvl.c.gemm_latency_s) == (0.80, 3e-6)
    # The step: the matmuls' weights (over the measured share) and their FLOPs (32 tokens at 0.7 of the bf16
    # peak) combine as their root-sum-square; the attention's KV bytes, above its FLOPs (32 x 4,096 pairs x 80
    # layers x 2 x 8 heads x (128 + 128)), and the small kernels' bytes add to it, then the fixed costs and
    # the all-reduces.
    import math

    tw, tmm = 17_378_131_968 / (3.35e12 * 0.86), 32 * sm.mm / (989.5e12 * 0.7)
    tat = 32 * 4096 * 80 * 2 * 8 * (128 + 128) / (989.5e12 * 0.7)
    assert s.t_compute_s == pytest.approx(tmm + tat, rel=1e-12) and kv / (3.35e12 * 0.80) > tat
    rest = (kv + 32 * per_token) / (3.35e12 * 0.80) + s.t_fixed_s + s.t_collective_s
    assert s.t_step_s == pytest.approx(math.hypot(tw, tmm) + rest, rel=1e-12)
    assert round(tw * 1e3, 3) == 6.032 and round(tmm * 1e3, 3) == 0.803 and round(math.hypot(tw, tmm) * 1e3, 3) == 6.085
    # The bound: the same bytes at the datasheet bandwidth, nothing added.
    assert s.t_bound_s == pytest.approx(bytes_read / 3.35e12, rel=1e-12)
    assert s.bound_by == "memory"


def test_measured_all_reduces_interpolate_and_never_charge_a_smaller_message_more():
    from kvcalc.engine.steptime import measured_allreduce

    a100 = resolve_gpu("a100-80gb")
    xs, ys = measured_allreduce(a100, 8)  # type: ignore[misc]
    # The A100 table at TP 8 has one slow sample at 4,096 B (14.85 us, between 5.62 at 2,048 and
    # 6.32 at 8,192): each size is charged the least measured at it or any larger size.
    i = xs.index(4096)
    assert a100.allreduce is not None and a100.allreduce.latency_us[8][i] == 14.85
    assert ys[i] == pytest.approx(6.32e-6)
    assert all(y0 <= y1 for y0, y1 in zip(ys, ys[1:]))
    link = tp_link(a100, 8)
    # Between two measured sizes, linear: 80 KB between 65,536 B (8.43 us) and 131,072 B (11.35 us).
    assert link.allreduce_s(81920, 8) == pytest.approx((8.43 + (11.35 - 8.43) * (81920 - 65536) / 65536) * 1e-6)
    # Below the smallest: the smallest's; past the largest (1 GiB, 8,250.86 us): the rest at the link's
    # bus bandwidth (0.7 x 300 GB/s).
    assert link.allreduce_s(16, 8) == pytest.approx(5.62e-6)
    assert link.allreduce_s(2 * 2**30, 8) == pytest.approx(8250.86e-6 + 2**30 * 2 * 7 / 8 / (0.7 * 300e9))
    # No table for the GPU (an L40S over PCIe, an H100 NVL pair): latency + bytes over the bandwidth.
    assert tp_link(resolve_gpu("l40s"), 4).measured is None
    assert tp_link(resolve_gpu("h100-nvl"), 2).measured is None


def test_mi300x_all_reduces_are_the_posted_custom_all_reduce_at_tp_2_and_4_only():
    # vLLM's custom all-reduce on MI300X, fp16 (vllm-project/vllm#19744's TP 4 "baseline" column:
    # 14.65 us at 512 KB, 22.91 at 1 MB; ROCm/aiter#801's TP 2 "vllm cr": 28.15 us at 1 MB).
    mi = resolve_gpu("mi300x")
    assert tp_link(mi, 4).allreduce_s(2**20, 4) == pytest.approx(22.91e-6)
    assert tp_link(mi, 2).allreduce_s(2**20, 2) == pytest.approx(28.15e-6)
    # 768 KB, halfway between 512 KB and 1 MB: linear.
    assert tp_link(mi, 4).allreduce_s(768 * 1024, 4) == pytest.approx((14.65 + (22.91 - 14.65) / 2) * 1e-6)
    # No TP 8 table: the TP 4 table's time at its smallest message, 7.26 us at 16 KB (more ranks are not
    # faster), + bytes x 2 x 7/8 over 0.7 of one direction of its 896 GB/s Infinity Fabric.
    link8 = tp_link(mi, 8)
    assert link8.measured is None
    assert link8.allreduce_s(2**20, 8) == pytest.approx(7.26e-6 + 2**20 * 2 * 7 / 8 / (0.7 * 448e9))


def test_mi355x_all_reduces_are_the_posted_custom_all_reduce_at_tp_8_only():
    # vLLM's custom all-reduce on MI355X, bf16 (vllm-project/vllm#39080's TP 8 "vllm/us" column: 6.3 us at 4 x 3,072 x
    # 2 B = 24 KiB, 10.0 at 192 KiB, 24.2 at 1.5 MiB).
    mi = resolve_gpu("mi355x")
    link8 = tp_link(mi, 8)
    assert link8.measured is not None
    assert [round(link8.allreduce_s(n * 3072 * 2, 8) * 1e6, 1) for n in (4, 32, 256)] == [6.3, 10.0, 24.2]
    # 1 MiB, between 768 KiB (16.0 us) and 1.5 MiB (24.2): linear.
    assert link8.allreduce_s(2**20, 8) == pytest.approx((16.0 + (24.2 - 16.0) * (2**20 - 786432) / 786432) * 1e-6)
    # Past 1.5 MiB, the rest of the bytes at 0.7 of one direction of its 1,075.2 GB/s Infinity Fabric, x 2 x 7/8.
    rest = 4 * 2**20 - 1572864
    assert link8.allreduce_s(4 * 2**20, 8) == pytest.approx(24.2e-6 + rest * 2 * 7 / 8 / (0.7 * 537.6e9))
    # Formerly the formula: 5 us + bytes x 2 x 7/8 / 376.32 GB/s, 5.1 us at 24 KiB and 12.3 at 1.5 MiB.
    assert [round((5e-6 + b * 2 * 7 / 8 / 376.32e9) * 1e6, 1) for b in (24576, 196608, 1572864)] == [5.1, 5.9, 12.3]
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert "keeps the custom all-reduce's figures (at TP 8 the posted measurements since 2026-12-08;" in doc
    # TP 2 and 4 are not in the table: the formula, 5 us at the smallest message.
    assert tp_link(mi, 4).measured is None and tp_link(mi, 4).allreduce_s(24576, 4) == pytest.approx(
        5e-6 + 24576 * 2 * 3 / 4 / 376.32e9
    )


def test_tensorrt_llm_deployments_take_its_own_measured_all_reduce():
    # TensorRT-LLM 1.2.0rc5's all-reduce on 8 H200s in a CUDA graph (AIConfigurator's trtllm custom_allreduce_perf:
    # 3.5 us at 256 B, 3.45 at 512 B, 5.02 at 64 KiB), where vLLM 0.24's measures 4.71 (4.80 at 512 B) and 6.56.
    from kvcalc.engine.engines import engine

    m, h200 = resolve_model("llama3.3-70b"), resolve_gpu("h200")
    trt = StepModel(m, h200, BF16, tp=8, engine=engine("trtllm@1.1"))
    vllm = StepModel(m, h200, BF16, tp=8, engine=engine("vllm@0.10.2"))
    assert trt.trtllm_table and not vllm.trtllm_table
    # Each size at the least measured at it or any larger one: 256 B takes 512 B's 3.45 us.
    assert [round(trt.link.allreduce_s(b, 8) * 1e6, 2) for b in (256, 512, 65536)] == [3.45, 3.45, 5.02]
    assert [round(vllm.link.allreduce_s(b, 8) * 1e6, 2) for b in (256, 65536)] == [4.71, 6.56]
    # A step's collectives move by the tables' difference alone: 2 all-reduces a layer of 4 tokens x 8,192 x 2 B.
    per = 4 * 8192 * 2
    assert vllm.collective_s(4) - trt.collective_s(4) == pytest.approx(
        2 * 80 * (vllm.link.allreduce_s(per, 8) - trt.link.allreduce_s(per, 8)), rel=1e-9
    )
    # The explanation names the table and its first figure: 512 B's 3.45 us, the least at 256 B or any larger size.
    assert (
        "2 all-reduces per layer through TensorRT-LLM's own all-reduce, over NVLink, as measured on h200 at TP 8 (3.45 us "
        "at 256 B, linear between the measured sizes)" in " ".join(trt.describe().split())
    )
    # Past 256 KiB TensorRT-LLM's is the slower: 19.61 us at 1 MiB against 14.07 (docs/simulation.md says so).
    assert [round(x.link.allreduce_s(2**20, 8) * 1e6, 2) for x in (trt, vllm)] == [19.61, 14.07]
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "on 8 H200s 3.45 us at 512 B and 5.02 at 64 KiB where vLLM's measures 4.80 and 6.56, but 19.61 at 1 MiB where "
        "vLLM's measures 14.07" in doc
    )
    # A calibration's link terms win over any table; a GPU whose spec has no TensorRT-LLM table keeps vLLM's.
    cal = StepModel(m, h200, BF16, tp=8, engine=engine("trtllm@1.1"), constants=dataclasses.replace(DEFAULTS, alpha_s=3e-6))
    assert not cal.trtllm_table and cal.link.measured is None
    # The same through a calibration applied to a built model (with_constants re-derives the links), and back.
    recal = trt.with_constants(dataclasses.replace(DEFAULTS, alpha_s=3e-6))
    assert not recal.trtllm_table and recal.link.measured is None
    assert recal.with_constants(DEFAULTS).trtllm_table and recal.with_constants(DEFAULTS).link.measured == trt.link.measured
    a100 = StepModel(m, resolve_gpu("a100-80gb"), BF16, tp=8, engine=engine("trtllm@1.1"))
    assert resolve_gpu("a100-80gb").allreduce_trtllm is None and not a100.trtllm_table and a100.link.measured is not None


def test_an_unmeasured_group_size_is_not_faster_than_the_measured_smaller_one():
    # The NVIDIA tables rise with the group at their smallest message (H100 SXM 4.29 / 4.59 / 4.71 us
    # at TP 2 / 4 / 8): a size without a table takes at least the largest smaller table's first time.
    # GB200 has no table at all: the NVLink default of 5 us.
    assert tp_link(resolve_gpu("gb200"), 8).alpha_s == pytest.approx(5e-6)
    assert tp_link(resolve_gpu("h100-sxm"), 8).measured is not None
    # A calibration's alpha wins over the floor.
    mi = resolve_gpu("mi300x")
    c = dataclasses.replace(DEFAULTS, alpha_s=3e-6)
    assert tp_link(mi, 8, c).alpha_s == pytest.approx(3e-6)


def test_the_all_reduce_floor_rests_on_tables_that_rise_with_the_group():
    # DEFAULT_SOURCES['alpha_s'] quotes each NVIDIA spec's smallest-message time at TP 2 / 4 / 8; each rises.
    from kvcalc.engine.steptime import DEFAULT_SOURCES

    for name, label in (("h100-sxm", "H100 SXM"), ("h200", "H200"), ("b200", "B200"), ("a100-80gb", "A100")):
        ar = resolve_gpu(name).allreduce
        assert ar is not None and sorted(ar.latency_us) == [2, 4, 8]
        first = [ar.latency_us[n][0] for n in (2, 4, 8)]
        assert first == sorted(first)
        assert f"{label} {first[0]:g}/{first[1]:g}/{first[2]:g}" in DEFAULT_SOURCES["alpha_s"]


def test_matmuls_and_attention_are_separate_kernels_whose_times_add():
    # Llama-3.1-8B on one H100 SXM (3.35 TB/s, 989.5 TFLOP/s bf16), 512 requests at 256 tokens: the
    # matmuls are compute-bound and the attention reads KV, memory-bound. They are separate kernels on
    # one stream, so each is held to its own roofline and the two add; the step is not the larger of
    # all bytes and all FLOPs, which would hide the KV reads under the matmuls.
    m, h = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    s = StepModel(m, h, BF16).step(512, 256)
    # Per layer: q and o 4,096 x 4,096, k and v 4,096 x 1,024, gate and up 4,096 x 14,336, down
    # 14,336 x 4,096; 32 layers, the LM head 4,096 x 128,256, and 65 norms of 4,096.
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
    params = 32 * layer + 4096 * 128256 + 65 * 4096
    weights = 2 * params + 512 * 4096 * 2  # bf16, and the 512 embedding rows the step looks up
    matmul = 512 * 2 * params
    kv = 512 * 256 * (2 * 32 * 8 * 128 * 2)  # K and V, 32 layers, 8 KV heads of 128, 2 bytes
    attention = 512 * 4 * 256 * 128 * 32 * 32  # QK and PV over 256 keys, 32 heads, 32 layers
    # The small kernels between the matmuls: norms 2 x 4 x 4,096 x 2 B, rotary and the cache write's
    # read 2 x (2 x (32 + 8) x 128 + 8 x 256) B, SiLU-and-multiply 6 x 14,336 B, a layer and token.
    small = 512 * 32 * (2 * 4 * 4096 * 2 + 2 * (2 * 40 * 128 + 8 * 256) + 6 * 14336)
    bw, peak = 3.35e12 * 0.80, 989.5e12 * 0.70
    assert matmul / peak > weights / bw and kv / bw > attention / peak
    # The matmuls: the root-sum-square of their FLOPs at 0.70 of the peak and their weights at H100's
    # measured matmul share (0.86), near enough to their knee that the two overlap imperfectly.
    import math

    mm = math.hypot(matmul / peak, weights / (3.35e12 * 0.86))
    want = mm + kv / bw + small / bw + s.t_fixed_s
    assert s.t_step_s == pytest.approx(want, rel=1e-12)
    # The memory term: the weights at H100's measured matmul share (0.86), the rest at 0.80.
    assert s.t_memory_s == pytest.approx(weights / (3.35e12 * 0.86) + (kv + small) / bw, rel=1e-12)
    assert s.t_compute_s == pytest.approx((matmul + attention) / peak, rel=1e-12)
    # 18.67 ms of matmul and attention kernels (17.51 with the matmuls at the larger of their two terms),
    # where the larger of all bytes and all FLOPs would have said 12.01; the small kernels 1.077 ms more.
    assert (mm + kv / bw) * 1e3 == pytest.approx(18.67, abs=0.005)
    assert (matmul / peak + kv / bw) * 1e3 == pytest.approx(17.51, abs=0.005)
    assert max((weights + kv) / bw, (matmul + attention) / peak) * 1e3 == pytest.approx(12.01, abs=0.005)
    assert small / bw * 1e3 == pytest.approx(1.077, abs=0.0005)
    # The bound is still max(all bytes / bandwidth, all FLOPs / peak): no step is faster.
    assert s.t_bound_s == pytest.approx(max((weights + kv) / 3.35e12, (matmul + attention) / 989.5e12), rel=1e-12)
    # docs/simulation.md's worked example quotes these figures.
    from pathlib import Path

    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    quoted = f"The kernels take {mm * 1e3:.3f} + {kv / bw * 1e3:.3f} = {(mm + kv / bw) * 1e3:.2f} ms"
    assert quoted in doc, quoted
    assert f"root-sum-square, {mm * 1e3:.3f} ms" in doc
    assert f"512 x 256 x 131,072 B = {kv:,} B of KV" in doc


def test_the_small_kernels_bytes_are_the_docs():
    # docs/simulation.md: Qwen3-14B (40 layers, hidden 5,120, 40 query and 8 KV heads of 128,
    # intermediate 17,408) moves 8.6 MB a token through the small kernels: a layer's two fused norms
    # 2 x 4 x 5,120 x 2 B, rotary and the cache write's read 2 x (2 x 48 x 128 + 8 x 256) B,
    # SiLU-and-multiply 6 x 17,408 B; 26 ms for an 8,192-token chunk on an H100 at 0.80, beside 331 ms
    # of matmuls at 0.70.
    from pathlib import Path

    sm = StepModel(resolve_model("qwen3-14b"), resolve_gpu("h100"), BF16)
    per = 40 * (2 * 4 * 5120 * 2 + 2 * (2 * 48 * 128 + 8 * 256) + 6 * 17408)
    assert sm.elementwise == per == 8_601_600
    chunk = sm.step(0, 0.0, 8192, 8192)
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    small, mm = per * 8192 / (3.35e12 * 0.80), sm.mm * 8192 * sm.inv_mm
    assert (
        f"{per / 1e6:.1f} MB a token, {small * 1e3:.0f} ms for 8,192 tokens on an H100 beside {mm * 1e3:.0f} ms of matmuls" in doc
    )
    # The chunk's step: the matmuls (compute-bound), the prompt attention, the small kernels, the rest.
    assert chunk.t_step_s > mm + small
    ll = StepModel(resolve_model("llama3.1-70b"), resolve_gpu("h100"), BF16, tp=8)
    assert f"Llama-3.1-70B at TP 8: {ll.elementwise / 1e6:.1f} MB a token" in doc


def test_vllm_v0_steps_carry_its_own_host_costs():
    # vLLM V0 measured its own host time apart from V1's 0.5 ms + 4 us a request: about 4 ms a decode
    # step (vllm-project/vllm#6854), and before async output processing (0.6.0) the output processing
    # too, (3.4 ms at batch 32 - 0.2 ms at batch 1) / 31 = 0.103 ms a request (vllm-project/vllm#6913).
    from kvcalc.engine.engines import engine

    m, h = resolve_model("llama3.1-70b"), resolve_gpu("h100")
    v1 = StepModel(m, h, BF16, tp=8).step(32, 4096)
    v05 = StepModel(m, h, BF16, tp=8, engine=engine("vllm@0.5.4")).step(32, 4096)
    v06 = StepModel(m, h, BF16, tp=8, engine=engine("vllm==0.6.3")).step(32, 4096)
    assert (3.4e-3 - 0.2e-3) / 31 == pytest.approx(103e-6, rel=3e-3)
    assert v05.t_fixed_s - v1.t_fixed_s == pytest.approx((4e-3 + 32 * 103e-6) - (0.5e-3 + 32 * 4e-6), rel=1e-12)
    assert v06.t_fixed_s - v1.t_fixed_s == pytest.approx(4e-3 - 0.5e-3, rel=1e-12)
    # Only the host terms differ: bytes, FLOPs, collectives and the bound are the engine's GPU work.
    for a, b in ((v1, v05), (v1, v06)):
        assert (a.t_memory_s, a.t_compute_s, a.t_collective_s, a.t_bound_s) == (
            b.t_memory_s,
            b.t_compute_s,
            b.t_collective_s,
            b.t_bound_s,
        )
    # V1 releases and other engines keep the defaults (with what they leave open, the matmuls' share and
    # latency, the GPU's); constants given on purpose are never replaced.
    from kvcalc.engine.steptime import for_engine, for_gpu

    for name in ("vllm", "vllm@0.11", "sglang", "trtllm"):
        assert for_engine(DEFAULTS, engine(name)) is DEFAULTS
        # (SGLang's own MLA call on Hopper: engines.mla_kernel)
        mla = "sglang" if name == "sglang" else "default"
        assert StepModel(m, h, BF16, tp=8, engine=engine(name)).c == for_gpu(DEFAULTS, h, mla=mla)
    mine = StepConstants(fixed_s=1e-3)
    assert for_engine(mine, engine("vllm@0.5")) is mine
    assert StepModel(m, h, BF16, tp=8, constants=mine, engine=engine("vllm@0.5")).c == for_gpu(mine, h)
    assert for_gpu(mine, h).fixed_s == 1e-3 and (for_gpu(mine, h).eta_gemm, for_gpu(mine, h).gemm_latency_s) == (
        0.86,
        pytest.approx(3.4e-6),
    )
    # Given on purpose, a matmul share or latency, or an attention call's cost a request, is kept;
    # --efficiency sets the share with eta_bw.
    set_ = StepConstants(eta_gemm=0.5, gemm_latency_s=1e-6, attn_request_s=5e-9, mla_attn_latency_s=30e-6)
    assert for_gpu(set_, h) is set_
    # A GPU whose spec measures no attention table (an H100 NVL) takes the H100's 24.5 ns, and no MLA
    # figure the H200's 62 us.
    nvl = for_gpu(DEFAULTS, resolve_gpu("h100-nvl"))
    assert resolve_gpu("h100-nvl").attention is None and nvl.attn_request_s == 24.5e-9
    assert resolve_gpu("h100-nvl").mla is None and nvl.mla_attn_latency_s == 62e-6
    assert for_gpu(DEFAULTS.with_efficiency(0.6), h).eta_gemm == 0.6


def test_the_docs_v0_example_is_what_roofline_prints(cli):
    # docs/simulation.md: the worked example's step under vLLM 0.5.4 and 0.6.
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text()
    base = ["roofline", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8", "--batch", "32", "--seq", "4k", "--json"]
    v1 = cli(*base, "--engine", "vllm@0.12").json()
    v05 = cli(*base, "--engine", "vllm@0.5.4").json()
    v06 = cli(*base, "--engine", "vllm@0.6").json()
    assert v05["t_fixed_s"] - v1["t_fixed_s"] == pytest.approx(4e-3 + 32 * 103e-6 - 0.5e-3 - 32 * 4e-6, rel=1e-9)
    assert f"{v05['t_step_s'] * 1e3:.3f} ms" in text and f"{v06['t_step_s'] * 1e3:.3f} ms" in text
    assert f"{(4e-3 + 32 * 103e-6) * 1e3:.3f} ms" in text  # 7.296


def test_an_fp8_step_reads_its_weights_at_the_gpus_fp8_matmul_figures():
    # Llama-3.1-405B-FP8's matmuls run at fp8 on an H100 (W8A8): its spec's gemm_fp8 block, vLLM 0.24's fp8
    # GEMMs fitted (bench/fit_gemm_fp8.py) as 6.0 us + bytes / (0.78 x 3.35 TB/s), less the 2.7 us of the
    # input's quantization charged as a small kernel: 3.3 us. Its bf16 twin keeps the gemm block, 3.4 us and 0.86.
    h = resolve_gpu("h100-sxm")
    fp8 = StepModel(resolve_model("llama3.1-405b-fp8"), h, BF16, tp=8)
    assert fp8.compute_dtype == "fp8" and (fp8.c.eta_gemm, fp8.c.gemm_latency_s) == (0.78, pytest.approx(3.3e-6))
    assert fp8.inv_w == pytest.approx(1 / (3.35e12 * 0.78), rel=1e-12, abs=0)
    bf16 = StepModel(resolve_model("llama3.1-405b"), h, BF16, tp=8)
    assert bf16.compute_dtype == "bf16" and (bf16.c.eta_gemm, bf16.c.gemm_latency_s) == (0.86, pytest.approx(3.4e-6))
    # The weights' term of one token's step: the rank's fp8 weights over the fp8 share.
    s = fp8.step(1, 1024)
    tw = fp8.weights(1) / (3.35e12 * 0.78)
    assert s.t_memory_s == pytest.approx(tw + (fp8.kv(1024) + fp8.elementwise) / (3.35e12 * 0.80), rel=1e-12)
    assert "as measured on h100-sxm for fp8 matmuls" in fp8.describe()
    # A GPU with fp8 units and no measured matmuls keeps the pooled figures; the B200 takes its own.
    nvl = StepModel(resolve_model("llama3.1-405b-fp8"), resolve_gpu("h100-nvl"), BF16, tp=8)
    assert (nvl.c.eta_gemm, nvl.c.gemm_latency_s) == (0.80, 3e-6)
    b200 = StepModel(resolve_model("llama3.1-405b-fp8"), resolve_gpu("b200"), BF16, tp=8)
    assert (b200.c.eta_gemm, b200.c.gemm_latency_s) == (0.66, pytest.approx(3.7e-6))
    # A block-scaled fp8 checkpoint (DeepSeek-V3's 128 x 128 blocks) keeps the bf16 figures: no table measures
    # its kernels in a CUDA graph.
    ds = StepModel(resolve_model("deepseek-v3"), h, BF16, tp=8)
    assert (
        ds.compute_dtype == "fp8"
        and not ds.fp8_measured
        and (ds.c.eta_gemm, ds.c.gemm_latency_s) == (0.86, pytest.approx(3.4e-6))
    )
    assert resolve_model("llama3.1-405b-fp8").quantization.method != "fp8-block"  # type: ignore[union-attr]


def test_tensorrt_llm_fp8_matmuls_take_its_own_measured_figures():
    # gpu_specs/h200.yaml gemm_fp8_trtllm: TensorRT-LLM 1.2.0rc5's fp8 GEMMs as AIConfigurator timed them, 15.01 us +
    # bytes / (0.83 x 4.8 TB/s) at 1 to 16 tokens, each call computing its input's scale (6.81 us, the computescale
    # table) and quantizing it (2.7 us, a small kernel in the step model): a static-scale checkpoint's GEMM is
    # 15.01 - 6.81 - 2.7 = 5.5 us. Compute-bound, less those two, a median 0.69 of the 1,979 TFLOPS fp8 peak.
    from kvcalc.engine.engines import engine

    h = resolve_gpu("h200")
    g = h.gemm_fp8_trtllm
    assert g is not None and g.latency_us == round(15.01 - 6.81 - 2.7, 1) == 5.5
    assert (g.bandwidth_share, g.compute_share, g.compute_dtype, g.combine) == (0.83, 0.69, "fp8", "rss")
    m = resolve_model("llama3.3-70b")
    trt = StepModel(m, h, BF16, tp=1, weight_dtype="fp8", engine=engine("trtllm@1.1"))
    vllm = StepModel(m, h, BF16, tp=1, weight_dtype="fp8", engine=engine("vllm@0.10.2"))
    assert trt.fp8_measured and (trt.c.eta_gemm, trt.c.gemm_latency_s, trt.c.eta_c_gemm) == (0.83, 5.5e-6, 0.69)
    assert trt.inv_w == pytest.approx(1 / (4.8e12 * 0.83), rel=1e-12, abs=0)
    assert trt.inv_mm == pytest.approx(1 / (0.69 * 1979e12), rel=1e-12, abs=0)
    # vLLM keeps its own CUTLASS kernels' figures (gemm_fp8: 3.6 us, 0.74) and eta_c_fp8's 0.35 of the peak.
    assert (vllm.c.eta_gemm, vllm.c.gemm_latency_s, vllm.c.eta_c_gemm) == (0.74, pytest.approx(3.6e-6), None)
    assert vllm.inv_mm == pytest.approx(1 / (0.35 * 1979e12), rel=1e-12, abs=0)
    # One token's weights: TensorRT-LLM's read them at 0.83 of the bandwidth where vLLM's take 0.74.
    assert vllm.weights(1) == trt.weights(1) and vllm.inv_w / trt.inv_w == pytest.approx(0.83 / 0.74, rel=1e-12)
    said = " ".join(trt.describe().split())
    assert "weight bytes / (bandwidth x 0.83, as measured on h200 for TensorRT-LLM's own fp8 matmuls)" in said
    assert "matmul FLOPs / (fp8 peak x 0.69, as measured on h200)" in said
    assert "320 matmuls at 5.5 us" in said
    # A bf16 checkpoint, and a block-scaled fp8 one (DeepSeek-V3), keep the gemm block under TensorRT-LLM too.
    bf16 = StepModel(m, h, BF16, tp=1, engine=engine("trtllm@1.1"))
    assert (bf16.c.eta_gemm, bf16.c.gemm_latency_s, bf16.c.eta_c_gemm) == (0.83, pytest.approx(3.6e-6), None)
    ds = StepModel(resolve_model("deepseek-v3"), h, BF16, tp=8, engine=engine("trtllm@1.1"))
    assert not ds.fp8_measured and (ds.c.eta_gemm, ds.c.gemm_latency_s) == (0.83, pytest.approx(3.6e-6))
    # A calibration's shares win; the defaults put the table back.
    cal = trt.with_constants(dataclasses.replace(DEFAULTS, eta_gemm=0.6, eta_c_gemm=0.5))
    assert (cal.c.eta_gemm, cal.c.gemm_latency_s, cal.c.eta_c_gemm) == (0.6, 5.5e-6, 0.5)
    assert "for TensorRT-LLM's own fp8 matmuls" not in cal.describe()
    assert (trt.with_constants(DEFAULTS).c.eta_gemm, trt.with_constants(DEFAULTS).c.eta_c_gemm) == (0.83, 0.69)
    # A GPU whose spec has no TensorRT-LLM table (GB200) gives TensorRT-LLM vLLM's fp8 figures.
    gb = resolve_gpu("gb200")
    assert gb.gemm_fp8_trtllm is None and gb.gemm_fp8 is not None
    gbt = StepModel(m, gb, BF16, tp=1, weight_dtype="fp8", engine=engine("trtllm@1.1"))
    assert (gbt.c.eta_gemm, gbt.c.gemm_latency_s) == (gb.gemm_fp8.bandwidth_share, pytest.approx(gb.gemm_fp8.latency_us * 1e-6))
    # H100 SXM and B200, fitted the same way (bench/fit_gemm_fp8.py DIR trtllm): 14.84 - 6.92 - 2.7 and 15.23 - 8.17 - 2.7.
    for name, raw, scale, share, compute in (("h100-sxm", 14.84, 6.92, 0.82, 0.66), ("b200", 15.23, 8.17, 0.74, 0.71)):
        t = resolve_gpu(name).gemm_fp8_trtllm
        assert t is not None and (t.latency_us, t.bandwidth_share, t.compute_share) == (
            round(raw - scale - 2.7, 1),
            share,
            compute,
        )
    # docs/simulation.md gives the same figures.
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    g3 = [resolve_gpu(n).gemm_fp8_trtllm for n in ("h100-sxm", "h200", "b200")]
    lat = [f"{x.latency_us:g}" for x in g3 if x is not None]
    cs = [f"{x.compute_share:g}" for x in g3 if x is not None]
    assert len(lat) == len(cs) == 3
    assert (
        f"(since 2026-12-08; H100 SXM 0.82 and {lat[0]} us, H200 0.83 and {lat[1]}, B200 0.74 and {lat[2]}: gemm_fp8_trtllm)"
        in doc
    )
    assert (
        f"and the quantization kernel (2.7 us; the scale_matrix tables measure 2.55-2.75): {lat[0]}, {lat[1]} and {lat[2]} us"
        in doc
    )
    assert f"a median {cs[0]}, {cs[1]} and {cs[2]} of the dense fp8 peak (0.49, 0.51 and 0.42 as timed" in doc
    assert f"TensorRT-LLM's fp8 matmuls on H100 SXM {cs[0]}, H200 {cs[1]} and B200 {cs[2]}, since 2026-12-08" in doc


def test_a_decode_attention_call_pays_for_each_request_and_kv_head():
    # AIConfigurator's measured vLLM 0.24 decode attention on H100 SXM (FlashAttention 3, bf16 KV, heads of
    # 128; ai-dynamo/aiconfigurator 095f58a, systems/data/h100_sxm/attention/vllm/0.24.0/
    # generation_attention_perf.parquet, its latency column in ms): 1,024 requests of 32 tokens, 32 query
    # and 8 KV heads, 0.237872 ms; 2,048 requests of 2 tokens, 8 and 1, 0.073712 ms. A call is charged
    # 11 us + max(KV bytes / (0.8 x 3.35 TB/s), FLOPs / (0.7 x 989.5 TFLOP/s)) + requests x KV heads x the
    # spec's 24.5 ns (its attention block, fitted over the table: bench/fit_attn_request.py).
    h = resolve_gpu("h100-sxm")
    assert h.attention is not None and h.attention.request_head_ns == 24.5
    for b, ctx, q, kv, measured in ((1024, 32, 32, 8, 0.237872e-3), (2048, 2, 8, 1, 0.073712e-3)):
        kv_bytes = b * ctx * kv * 128 * 2 * 2
        flops = b * ctx * q * 128 * 2 * 2
        without = 11e-6 + max(kv_bytes / (0.8 * 3.35e12), flops / (0.7 * 989.5e12))
        charged = without + b * kv * 24.5e-9
        assert without < 0.3 * measured  # the bytes alone say a quarter of the call
        assert charged == pytest.approx(measured, rel=0.2)
    # The step model charges it per request through every attention layer: Qwen3-8B's 36 layers of 8 KV
    # heads, 36 x 8 x 24.5 ns = 7.056 us a request on one H100, 1 KV head a rank at TP 8 (0.882 us).
    m = resolve_model("qwen3-8b")
    one, eight = StepModel(m, h, BF16), StepModel(m, h, BF16, tp=8)
    assert (one.attn_heads, eight.attn_heads) == (36 * 8, 36 * 1)
    assert one.attn_per_request_s == pytest.approx(7.056e-6, rel=1e-12) and eight.attn_per_request_s == pytest.approx(
        0.882e-6, rel=1e-12
    )
    import dataclasses

    off = StepModel(m, h, BF16, constants=dataclasses.replace(DEFAULTS, attn_request_s=0.0))
    assert one.step(512, 300).t_fixed_s - off.step(512, 300).t_fixed_s == pytest.approx(512 * 7.056e-6, rel=1e-9)
    assert one.step(512, 300).t_step_s - off.step(512, 300).t_step_s == pytest.approx(512 * 7.056e-6, rel=1e-9)
    # MLA's call is measured whole (mla_attn_latency_s), and a state layer has no such call.
    assert StepModel(resolve_model("deepseek-v3"), h, BF16, tp=8).attn_per_request_s == 0.0
    # A GPU whose spec has no attention table takes the H100's figure; the B200's kernel pays a third of it.
    assert StepModel(m, resolve_gpu("h100-nvl"), BF16).attn_per_request_s == pytest.approx(36 * 8 * 24.5e-9, rel=1e-12)
    assert StepModel(m, resolve_gpu("b200"), BF16).attn_per_request_s == pytest.approx(36 * 8 * 8.5e-9, rel=1e-12)


def test_pcie_all_reduce_follows_nccls_ring_model():
    # L40S has no NVLink: NCCL's ring latency 6.6 us + 1.0 us per hop over 2(N-1) hops, 20.6 us at 8
    # GPUs (NVIDIA/nccl tuning.cc), over 0.63 of one direction of its PCIe 4.0 x16 host link.
    g = resolve_gpu("l40s")
    link = tp_link(g, 8)
    assert link.kind == "pcie" and link.alpha_s == pytest.approx(20.6e-6)
    assert link.bytes_per_s == pytest.approx(float(g.host_link_bytes_per_s) / 2 * 0.63)


def test_fp8_checkpoints_compute_at_the_fp8_peak():
    # DeepSeek-V3 ships fp8-block weights: on an H100 its matmuls run at 1,979 TFLOP/s, on an A100
    # (no fp8 units) at the bf16 peak.
    m = resolve_model("deepseek-v3")
    assert matmul_dtype(m, resolve_gpu("h100")) == "fp8"
    assert matmul_dtype(m, resolve_gpu("a100-80gb")) == "bf16"
    assert matmul_dtype(resolve_model("llama3.1-8b"), resolve_gpu("h100")) == "bf16"
    assert StepModel(m, resolve_gpu("h100"), kv_dtype("fp8"), tp=8).peak_mm == pytest.approx(1979e12)
    # At 0.35 of it (eta_c_fp8, half eta_c: vLLM's fp8 kernels reach half the share of their peak that
    # the same shapes reach in bf16): a dense fp8 model's matmul FLOP costs 1 / (1,979e12 x 0.35) s.
    f8 = StepModel(resolve_model("llama3.1-405b-fp8"), resolve_gpu("h100"), kv_dtype("fp8"), tp=8)
    assert f8.compute_dtype == "fp8" and f8.inv_mm == pytest.approx(1 / (1979e12 * 0.35), rel=1e-12, abs=0)
    bf = StepModel(resolve_model("llama3.1-405b"), resolve_gpu("h100"), kv_dtype("fp8"), tp=8)
    assert bf.compute_dtype == "bf16" and bf.inv_mm == pytest.approx(1 / (989.5e12 * 0.70), rel=1e-12, abs=0)
    # --efficiency F sets all three efficiencies.
    one = DEFAULTS.with_efficiency(1.0)
    assert (one.eta_bw, one.eta_c, one.eta_c_fp8) == (1.0, 1.0, 1.0)


def test_w8a8_int8_checkpoints_compute_at_the_int8_peak():
    """W8A8 int8 checkpoints (compressed-tensors' CompressedTensorsW8A8Int8, --weight-dtype int8) run CUTLASS's int8
    scaled_mm (vLLM 0.11.0 quantization/kernels/scaled_mm/cutlass.py): their matmuls at the INT8 peak the GPU's spec
    states x eta_c_int8, each linear layer's input quantized first (scaled_int8_quant) in a kernel of its own; the
    routed experts run fp8's Triton path (fused_moe.py: `if use_fp8_w8a8 or use_int8_w8a8`)."""
    from kvcalc.engine.bound import peak_flops, prefill_bound
    from kvcalc.errors import KvcalcError

    m, a100, h100, t4 = resolve_model("llama3.1-8b"), resolve_gpu("a100-80gb"), resolve_gpu("h100"), resolve_gpu("t4")
    # A100 datasheet: INT8 Tensor Core 624 TOPS dense (1,248 with sparsity), twice its bf16 312; H100 SXM 3,958 with
    # sparsity, 1,979 dense.
    assert (peak_flops(a100, "int8"), peak_flops(h100, "int8")) == (624e12, 1979e12)
    assert (matmul_dtype(m, a100, "int8"), matmul_dtype(m, h100, "int8"), matmul_dtype(m, a100)) == ("int8", "int8", "bf16")
    # An fp8 checkpoint on an H100 still runs fp8; T4's spec gives no INT8 figure, so int8 weights stay at 16 bits there
    # and asking for its int8 peak is one line.
    assert (matmul_dtype(m, h100, "fp8"), matmul_dtype(m, t4, "int8")) == ("fp8", "bf16")
    with pytest.raises(KvcalcError, match="t4's spec gives no INT8 tensor peak"):
        peak_flops(t4, "int8")
    # A prompt of 4,096 tokens: its FLOPs over 624 TOPS, half the time at the bf16 312.
    p8, p16 = prefill_bound(m, a100, 4096, 1, "int8", "int8"), prefill_bound(m, a100, 4096, 1, "int8", "bf16")
    assert p8.t_compute_s * 2 == pytest.approx(p16.t_compute_s, rel=1e-12)
    # 2 x 7,504,924,672 parameters (8,030,261,248 less the 128,256 x 4,096 input embedding) x 4,096 tokens, plus the
    # causal attention's 4,096 x 4,097 / 2 pairs x 2 x 32 heads x (128 + 128) x 32 layers: 65,879,463,165,952 FLOPs,
    # 105.576 ms at 624 TOPS, as docs/formulas.md says.
    flops = 2 * 7_504_924_672 * 4096 + 4096 * 4097 // 2 * 2 * 32 * 256 * 32
    assert p8.flops == flops and p8.t_bound_s == pytest.approx(flops / 624e12, rel=1e-12, abs=0)
    assert (round(p8.t_bound_s * 1e3, 1), round(p16.t_bound_s * 1e3, 1)) == (105.6, 211.2)
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "formulas.md").read_text().split())
    assert "so a 4,096-token prompt of Llama-3.1-8B int8 is bound at 105.6 ms, not 211.2" in doc
    # eta_c_int8, three quarters of eta_c: a matmul FLOP costs 1 / (624e12 x 0.525) s on an A100, 1 / (1,979e12 x 0.525)
    # on an H100.
    assert DEFAULTS.eta_c_int8 == 0.525 == pytest.approx(DEFAULTS.eta_c * 0.75)
    sm, bf = StepModel(m, a100, BF16, weight_dtype="int8"), StepModel(m, a100, BF16)
    assert sm.compute_dtype == "int8" and sm.inv_mm == pytest.approx(1 / (624e12 * 0.525), rel=1e-12, abs=0)
    assert StepModel(m, h100, BF16, weight_dtype="int8").inv_mm == pytest.approx(1 / (1979e12 * 0.525), rel=1e-12, abs=0)
    # One scaled_int8_quant before each of 32 layers' QKV, output, gate-up and down projections, all small kernels.
    assert (sm.quant_kernels, sm.quant_small, sm.kernels.small - bf.kernels.small) == (128, 128, 128)
    assert (bf.compute_dtype, bf.quant_kernels) == ("bf16", 0)
    # Qwen3-30B-A3B's experts in int8: 48 layers' QKV and output projections quantize outside the fused calls, two
    # inside each; the experts' share of the peak is fp8's Triton fit, 0.311 x 768 / (768 + 459), of the INT8 peak.
    q = StepModel(resolve_model("qwen3-30b-a3b"), h100, BF16, weight_dtype="int8")
    assert (q.quant_kernels, q.quant_small, q.kernels.moe_quant) == (48 * 4, 48 * 2, 48)
    assert q.moe_runner == "default" and q.moe_eta(q.c) == pytest.approx(0.311 * 768 / (768 + 459), rel=1e-12)
    assert q.peak_mm == 1979e12


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(["vllm", "vllm@0.11", "sglang@0.5.6", None]),
    st.sampled_from([("llama3.1-8b", 1), ("qwen3-235b-a22b", 4), ("deepseek-v3", 8)]),
    st.integers(0, 1024),
    st.floats(1.0, 8_000.0),
    st.integers(1, 8192),
    st.integers(0, 30_000),
)
def test_a_prompt_carrying_span_step_is_the_step(key, shape, decodes, ctx, chunk, end):
    # The simulator's spans (lines + span_s) and step() are one formula: a step that carries a prompt
    # chunk beside decodes, its KV bytes and attention FLOPs passed as step() derives them, under an engine
    # that schedules ahead (vLLM from 0.14), one that does not (0.11), one that runs prompt steps eagerly
    # (SGLang: the general path) and the default; asking twice (lines() keeps a full-attention model's parts by
    # batch and prompt tokens, StepModel._line) gives the same lines.
    from kvcalc.engine.engines import engine

    name, tp = shape
    sm = StepModel(resolve_model(name), resolve_gpu("h100"), BF16, tp=tp, engine=engine(key) if key else None)
    last = max(end, chunk)
    ask = (decodes, ctx, chunk, sm.kv(last), chunk * sm.prefill_attn(max(last - chunk // 2, 1)))
    ln = sm.lines(*ask)
    assert sm.lines(*ask) == ln
    assert sm.span_s(ln, 1) == pytest.approx(sm.step(decodes, ctx, chunk, end).t_step_s, rel=1e-12)


def test_a_copy_under_other_constants_spans_with_its_own():
    # with_constants() copies a model: its spans are its constants', not the kept spans of the model it was
    # copied from (until 2026-12-06 the two shared lines()'s kept parts, so the copy answered with the original's
    # figures for every batch the original had been asked about, and the original with the copy's).
    base = StepModel(resolve_model("llama3.1-8b"), resolve_gpu("h100"), BF16)
    slower = dataclasses.replace(DEFAULTS, eta_bw=DEFAULTS.eta_bw / 2)
    fresh = StepModel(resolve_model("llama3.1-8b"), resolve_gpu("h100"), BF16, constants=slower)
    before = base.lines(32, 1000.0), base.lines(32, 1000.0, 256, 1e6, 1e9)
    copy = base.with_constants(slower)
    assert (copy.lines(32, 1000.0), copy.lines(32, 1000.0, 256, 1e6, 1e9)) == (
        fresh.lines(32, 1000.0),
        fresh.lines(32, 1000.0, 256, 1e6, 1e9),
    )
    assert (base.lines(32, 1000.0), base.lines(32, 1000.0, 256, 1e6, 1e9)) == before
    # Half the bandwidth share: the batch's KV reads a step take twice as long.
    assert copy.lines(32, 1000.0)[1] == pytest.approx(2 * before[0][1], rel=1e-12)


@settings(max_examples=80, deadline=None)
@given(
    st.sampled_from(["vllm", "vllm@0.11", "vllm@0.6", "sglang@0.5.6", None]),
    st.sampled_from([("llama3.1-8b", 1), ("qwen3-235b-a22b", 4), ("llama2-13b", 1)]),
    st.integers(1, 1024),
    st.floats(1.0, 20_000.0),
    st.sampled_from([None, 0.05]),
)
def test_a_decode_only_span_step_is_the_step_on_every_path(key, shape, decodes, mean, fixed):
    # lines() keeps a full-attention model's decode-only spans by batch (StepModel._line: the simulator's
    # most frequent question); its first step is step()'s under an engine that schedules ahead (vLLM from 0.14),
    # one that does not (0.11, V0) and past SGLang 0.5.6's largest decode graph (eager: the general path), and
    # asking twice (the kept figures) gives the same lines. ``fixed``: a host slower than any of these steps' GPU work
    # (50 ms a step), where a host beside the GPU hides none of the GPU's time.
    from kvcalc.engine.engines import engine

    name, tp = shape
    c = dataclasses.replace(DEFAULTS, fixed_s=fixed) if fixed else DEFAULTS
    sm = StepModel(resolve_model(name), resolve_gpu("h100"), BF16, tp=tp, constants=c, engine=engine(key) if key else None)
    # vLLM V0 past max_seq_len_to_capture: lines() does not know a batch's longest sequence, so the caller says the span
    # runs eagerly (the simulator, by its longest running request); step() takes the context as the longest.
    eager = sm.decode_graph_max_len is not None and mean > sm.decode_graph_max_len
    first, again = (
        (sm.lines(decodes, mean, 0, 0.0, 0.0, True), sm.lines(decodes, mean, 0, 0.0, 0.0, True))
        if eager
        else (sm.lines(decodes, mean), sm.lines(decodes, mean))
    )
    assert first == again
    assert sm.span_s(first, 1) == pytest.approx(sm.step(decodes, mean).t_step_s, rel=1e-12)


def test_a_span_is_the_sum_of_its_steps():
    # The simulator sums K decode steps in closed form; stepping them one by one must agree.
    m, h = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    sm = StepModel(m, h, BF16, tp=2)
    n, mean, K = 48, 1500.0, 37
    ln = sm.lines(n, mean)
    one_by_one = sum(sm.step(n, mean + k).t_step_s for k in range(K))
    assert sm.span_s(ln, K) == pytest.approx(one_by_one, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 512), st.integers(1, 64_000), st.sampled_from([1, 2, 4, 8]))
def test_a_real_step_is_never_faster_than_the_bound(batch, ctx, tp):
    sm = StepModel(resolve_model("llama3.1-70b"), resolve_gpu("h200"), BF16, tp=tp)
    s = sm.step(batch, ctx)
    assert s.t_step_s >= s.t_bound_s > 0


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(1, 4096),
            st.integers(1, 10**12),
            st.integers(0, 10**12),
            st.integers(0, 10**15),
            st.integers(0, 10**14),
        ),
        min_size=1,
        max_size=20,
    ),
    st.sampled_from([1, 2, 8]),
)
def test_a_grids_columns_are_its_steps_one_by_one(points, tp):
    # decode_columns (a roofline grid's path) must give, per point, exactly what time() gives.
    sm = StepModel(resolve_model("llama3.1-70b"), resolve_gpu("h100"), BF16, tp=tp)
    b, w, kv, mm, at = (list(x) for x in zip(*points))
    t, fixed, coll = sm.decode_columns(w, kv, mm, at, b)
    for i, (bi, wi, ki, fi, ai) in enumerate(points):
        one = sm.time(wi, ki, fi, ai, bi, bi)
        assert (t[i], fixed[i], coll[i]) == (one.t_step_s, one.t_fixed_s, one.t_collective_s)


def test_roofline_prints_the_estimate_beside_the_bound(cli):
    d = cli("roofline", "--model", "llama3.1-8b", "--gpu", "h100", "--batch", "1,64", "--seq", "2k", "--json").json()
    for row in d["rows"]:
        assert row["t_step_s"] > row["t_bound_s"]
        assert row["tokens_per_s_step"] == pytest.approx(row["batch"] / row["t_step_s"])
    # --efficiency 1 leaves only the per-step cost between them (32 layers of kernels as above; the host's
    # 0.5 ms + 4 us run beside the GPU's work under the default release, which schedules ahead)
    e = cli(
        "roofline", "--model", "llama3.1-8b", "--gpu", "h100", "--batch", "1", "--seq", "2k", "--efficiency", "1", "--json"
    ).json()["rows"][0]
    # and the small kernels' 5,636,096 B for the one token at the full bandwidth (--efficiency sets the
    # matmuls' share too; their latency stays the H100 spec's measured 3.4 us), and the one request's 8
    # KV heads in each attention call at the spec's measured 24.5 ns.
    fixed = 32 * (4 * 3.4e-6 + 11e-6 + 5 * 2.7e-6 + 1 * 8 * 24.5e-9)
    # The matmuls' FLOPs for the one token add a sliver beside their weights' time (the root-sum-square of
    # the two, where the bound takes the larger): Llama-3.1-8B's 7,504,924,672 streamed parameters (as above) and the
    # one embedding row the step reads.
    import math

    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336
    params = 32 * layer + 4096 * 128256 + 65 * 4096
    tw, tmm = (2 * params + 4096 * 2) / 3.35e12, 2 * params / 989.5e12
    knee = math.hypot(tw, tmm) - tw
    assert e["t_step_s"] - e["t_bound_s"] == pytest.approx(fixed + 5_636_096 / 3.35e12 + knee, rel=1e-9)


def test_an_mla_call_takes_its_gpus_measured_floor():
    # vLLM 0.24's whole MLA generation module of DeepSeek-V3 at TP 8 (16 heads a GPU), batch 1, bf16, 1,024
    # tokens of context (AIConfigurator's mla_generation_module_perf, ai-dynamo/aiconfigurator 095f58a;
    # bench/fit_mla_latency.py): 99.8 us on H100 SXM, 90.9 on H200, 43.8 on B200. Less five projections at each
    # spec's matmul latency (3.4, 3.6, 2.9 us; the collector builds vLLM's own DeepseekV2MLAAttention, whose query and
    # latent down projections are one matmul, fused_qkv_a_proj, from 0.10) and four small kernels at 2.7 us (six until
    # 2026-12-06: 69, 59 and 16 us). SGLang 0.5.6 to 0.5.14 time
    # their own call alone at 1,023 tokens: 17.4/17.3/16.6/16.7 us on H100, 17.4/17.2/16.5/16.5 on H200 (FlashAttention
    # 3), 14.6/14.6/14.5 on B200 (trtllm_mla).
    from kvcalc.engine.engines import engine, mla_kernel
    from kvcalc.engine.steptime import for_gpu

    for gpu, module, gemm, want, sgl in (
        ("h100-sxm", 99.8, 3.4, 72, 17),
        ("h200", 90.9, 3.6, 62, 17),
        ("b200", 43.8, 2.9, 18.5, 15),
    ):
        assert round(module - 5 * gemm - 4 * 2.7, 1 if gpu == "b200" else 0) == want
        g = resolve_gpu(gpu)
        assert g.mla is not None and (g.mla.latency_us, g.mla.sglang_latency_us) == (want, sgl)
        assert for_gpu(DEFAULTS, g).mla_attn_latency_s == pytest.approx(want * 1e-6)
        assert for_gpu(DEFAULTS, g, mla="sglang").mla_attn_latency_s == pytest.approx(sgl * 1e-6)
        assert for_gpu(DEFAULTS, g, mla="triton").mla_attn_latency_s == 62e-6
    # Which releases take SGLang's own figure for DeepSeek-V3: on Hopper its FlashAttention 3 call from 0.4.5.post1 (0.5.6 to
    # 0.5.14 until 2026-12-06), on B200 its trtllm_mla call from 0.5.4; not vLLM, not other GPUs, not SGLang's Triton
    # backend (test_serving_accuracy holds the FA3 and trtllm_mla rules release by release).
    from kvcalc.engine.engines import with_attention_backend

    ds, h200, b200, a100 = resolve_model("deepseek-v3"), resolve_gpu("h200"), resolve_gpu("b200"), resolve_gpu("a100-80gb")
    releases = ("sglang@0.5.6", "sglang@0.5.14", "sglang@0.5.3", "sglang@0.5.16", "vllm@0.11")
    assert [mla_kernel(engine(r), h200, ds) for r in releases] == ["sglang", "sglang", "sglang", "sglang", "default"]
    assert [mla_kernel(engine(r), b200, ds) for r in releases] == ["sglang", "sglang", "default", "sglang", "default"]
    assert {mla_kernel(engine(r), a100, ds) for r in releases} == {"default"}
    assert mla_kernel(with_attention_backend(engine("sglang@0.5.9"), "triton"), h200, ds) == "triton"
    # A step of DeepSeek-R1 on 8 B200s under SGLang 0.5.6 charges 61 calls at 15 us where it charged 59: 61 x 44 us less.
    m, b = resolve_model("deepseek-r1"), resolve_gpu("b200")
    fast = StepModel(m, b, BF16, tp=8, engine=engine("sglang@0.5.6")).step(4, 1500).t_step_s
    slow = StepModel(m, b, BF16, tp=8, engine=engine("sglang@0.5.6"), constants=StepConstants(mla_attn_latency_s=59e-6))
    assert slow.step(4, 1500).t_step_s - fast == pytest.approx(61 * 44e-6, rel=1e-6)
    said = " ".join(StepModel(m, b, BF16, tp=8, engine=engine("sglang@0.5.6")).describe().split())
    assert "61 MLA attention calls at 15 us (SGLang's, as measured on b200)" in said
    said = " ".join(StepModel(m, b, BF16, tp=8, engine=engine("vllm@0.11")).describe().split())
    assert "61 MLA attention calls at 18.5 us (as measured on b200)" in said


def test_an_mla_moe_layer_counts_its_kernels():
    # DeepSeek-V3: 61 MLA layers (6 matmuls, an MLA attention call, 4 small kernels each), 3 dense MLP
    # layers (2 matmuls, the activation) and 58 MoE layers with shared experts (router and 2 shared
    # matmuls: 3; the shared experts' activation, a silu and a multiply inside vLLM's fused-MoE op: 2; one fused
    # routed-expert call; top-k outside it, alignment and the combine inside it: 4 + 2),
    # two norms a layer. The call's own kernels are timed in its measured latency (moe_inner). Grouped
    # top-k with the score-correction bias runs 4 kernels in vLLM 0.11 (fused_grouped_topk: sigmoid and bias,
    # ops.grouped_topk's two, the indices' cast), as vllm-project/vllm#28084's trace shows them.
    from kvcalc.engine.steptime import Kernels, layer_kernels

    assert layer_kernels(resolve_model("deepseek-v3")) == Kernels(
        gemm=61 * 6 + 3 * 2 + 58 * 3,
        attention=0,
        mla_attention=61,
        moe=58,
        small=61 * 4 + 61 * 2 + 3 + 58 * (4 + 2),
        moe_inner=58 * 2,
    )
    # DeepSeek-V3.2 adds its indexer on each of the 61 layers (vLLM 0.24 deepseek_v2.py Indexer.forward): the
    # q up-projection and the fused wk and weights projection, the fp8 paged logits over every key (an
    # attention call), and the key norm, rotary, q quantization, the key's quantize-and-cache write, top-k.
    assert layer_kernels(resolve_model("deepseek-v3.2")) == Kernels(
        gemm=61 * (6 + 2) + 3 * 2 + 58 * 3,
        attention=61,
        mla_attention=61,
        moe=58,
        small=61 * (4 + 5) + 61 * 2 + 3 + 58 * (4 + 2),
        moe_inner=58 * 2,
    )
    # Qwen3-235B routes by softmax top-k (vLLM 0.11 fused_topk: the logits' fp32 cast and topk_softmax): 94 MoE
    # layers of 2 routing kernels, no shared experts, two norms, the attention's rotary and cache write, and its
    # query and key norms (qwen3_moe.py Qwen3MoeAttention.forward).
    q = layer_kernels(resolve_model("qwen3-235b-a22b"))
    assert (q.moe, q.small, q.moe_inner) == (94, 94 * 2 + 94 * 2 + 94 * 2 + 94 * 2, 94 * 2)
    # Qwen3-Next runs its shared expert in compiled code (vLLM 0.11 qwen3_next.py, no SharedFusedMoE): one
    # activation kernel, as a dense MLP's; 48 layers, all MoE.
    nxt = resolve_model("qwen3-next-80b-a3b")
    assert nxt.moe is not None and nxt.moe.num_moe_layers == nxt.num_layers == 48
    from kvcalc.engine.steptime import shared_activation_kernels

    assert shared_activation_kernels(nxt) == 1 and shared_activation_kernels(resolve_model("qwen3-30b-a3b")) == 0
    # Past 512 tokens a step runs without CUDA graphs: every kernel's launch adds 1.2 us.
    sm = StepModel(resolve_model("llama3.1-8b"), resolve_gpu("h100"), BF16)
    k = layer_kernels(resolve_model("llama3.1-8b"))
    n = k.gemm + k.attention + k.small
    assert sm.overhead_s(513, 513) - sm.overhead_s(512, 513) == pytest.approx(n * 1.2e-6)


def test_the_grouped_top_k_models_are_those_whose_configs_route_by_groups_or_a_score_bias():
    # Independent of the set in steptime: a config.json that names expert groups (n_group), DeepSeek's
    # group-limited or bias-corrected top-k (topk_method) or a routing bias (MiniMax-M2's use_routing_bias) is
    # routed by vLLM's grouped top-k; every other MoE config by fused_topk.
    import json

    from kvcalc.engine.steptime import routing_kernels

    seen = {True: 0, False: 0}
    for f in sorted((Path(__file__).parent / "configs").glob("*.json")):
        cfg = json.loads(f.read_text())
        m = resolve_model(f.stem)
        if m.moe is None:
            continue
        grouped = "n_group" in cfg or "topk_method" in cfg or bool(cfg.get("use_routing_bias"))
        seen[grouped] += 1
        assert routing_kernels(m) == (4 if grouped else 2), f.stem
    # ERNIE-4.5's router adds a correction bias to its scores without groups: two kernels as fused_topk's, its input's
    # cast to fp32 (its gate is an fp32 matmul) and topk_softmax with the bias (vLLM 0.22.1's ernie45_moe.py
    # Ernie4_5_MoeMoE.forward and fused_topk_bias_router.py fused_topk_bias).
    assert routing_kernels(resolve_model("ernie-4.5-21b-a3b")) == 2
    assert seen == {True: 10, False: 13}


def test_sglang_routes_glm_by_its_compiled_fallback_until_0_5_10():
    """SGLang 0.5.3-0.5.9's biased_grouped_topk_gpu fuses a router only for at most 32 experts a group of a power-of-two
    count (moe_fused_gate), or where topk_group x num_expert_group >= top-k (FlashInfer's fused_topk_deepseek, 0.5.8
    on): GLM-4.6 (tests/configs/glm-4.6.json: n_group 1, topk_group 1, 160 experts, top-8) and GLM-4.5-Air (128) fit
    neither, and take the compiled biased_grouped_topk_impl, 36 us a layer (sgl-project/sglang#5371)."""
    import json
    from pathlib import Path

    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import layer_latency_s, sglang_router_compiled

    for name in ("glm-4.6", "glm-4.5-air"):
        cfg = json.loads((Path(__file__).parent / "configs" / f"{name}.json").read_text())
        e, g, tg, k = cfg["n_routed_experts"], cfg["n_group"], cfg["topk_group"], cfg["num_experts_per_tok"]
        fused_gate = e // g <= 32 and e & (e - 1) == 0
        flashinfer = tg * g >= k
        assert not fused_gate and not flashinfer, name
    glm, b200, mi300x = resolve_model("glm-4.6"), resolve_gpu("b200"), resolve_gpu("mi300x")
    for key in ("sglang@0.5.3", "sglang@0.5.6", "sglang@0.5.8", "sglang@0.5.9"):
        assert sglang_router_compiled(glm, engine(key), b200), key
        assert sglang_router_compiled(resolve_model("glm-4.5-air"), engine(key), resolve_gpu("h100")), key
    # Not read after 0.5.9 (the later Triton router) nor before 0.5.3; vLLM, AMD (aiter's kernel), other models: no.
    for key in ("sglang@0.5.12", "sglang", "sglang@0.5.2", "vllm", "trtllm"):
        assert not sglang_router_compiled(glm, engine(key), b200), key
    assert not sglang_router_compiled(glm, engine("sglang@0.5.6"), mi300x)
    assert not sglang_router_compiled(resolve_model("deepseek-v3"), engine("sglang@0.5.6"), b200)
    assert not sglang_router_compiled(resolve_model("glm-4.7-flash"), engine("sglang@0.5.8"), b200)
    # The step: 89 MoE layers (92 less the 3 dense), each router 36 us in place of vLLM's 4 small kernels of 2.7 us.
    sm = StepModel(glm, b200, BF16, tp=8, engine=engine("sglang@0.5.6"))
    k = sm.kernels
    assert (k.router_compiled, k.router_kernels) == (89, 89 * 4)
    plain = dataclasses.replace(k, small=k.small + k.router_kernels, router_compiled=0, router_kernels=0)
    assert k.total == plain.total  # the host issues as many kernels
    assert sm.layer_gaps_s - layer_latency_s(glm, sm.c, kernels=plain) == pytest.approx(89 * (36 - 4 * 2.7) * 1e-6, rel=1e-9)
    assert "89 routers at 36 us each (SGLang's compiled grouped top-k, in place of 356 small kernels)" in sm.describe()
    assert StepModel(glm, b200, BF16, tp=8, engine=engine("vllm")).kernels.router_compiled == 0
    # docs/simulation.md quotes the one-user step (context 700) before and after.
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    before = sm.step(1, 700).t_step_s - 89 * (36 - 4 * 2.7) * 1e-6
    assert (round(before * 1e3, 1), round(sm.step(1, 700).t_step_s * 1e3, 1)) == (10.6, 12.8)
    assert "89 x (36 - 4 x 2.7) us = 2.24 ms to the step: 10.6 ms becomes 12.8 at one user" in doc


def test_sglang_runs_deepseeks_shared_expert_inside_the_fused_call(monkeypatch):
    """SGLang's determine_num_fused_shared_experts (models/deepseek_v2.py, 0.5.3 to 0.5.12): DeepseekV3ForCausalLM, 256
    routed experts and one shared, NVIDIA compute capability 8.0 or more without EP, or from 0.5.6 AMD gfx942 or later
    with EP too, and not under FlashInfer's TensorRT-LLM MoE runner."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import layer_latency_s, sglang_shared_fused

    ds, h200, mi300x, b200 = resolve_model("deepseek-v3"), resolve_gpu("h200"), resolve_gpu("mi300x"), resolve_gpu("b200")
    for key in ("sglang@0.5.3", "sglang@0.5.6", "sglang@0.5.9", "sglang@0.5.12"):
        assert sglang_shared_fused(ds, engine(key), h200, 1, "default"), key
        assert not sglang_shared_fused(ds, engine(key), h200, 8, "default"), key  # EP on NVIDIA
        assert sglang_shared_fused(ds, engine(key), mi300x, 8, "default") == (key != "sglang@0.5.3"), key
        assert not sglang_shared_fused(ds, engine(key), b200, 1, "flashinfer_trtllm"), key
    for key in ("sglang@0.5.2", "sglang@0.5.14", "sglang", "vllm", "trtllm"):
        assert not sglang_shared_fused(ds, engine(key), h200, 1, "default"), key
    assert not sglang_shared_fused(ds, engine("sglang@0.5.6"), resolve_gpu("t4"), 1, "default")  # compute capability 7.5
    for other in ("kimi-k2", "deepseek-v3.2", "glm-4.6"):  # 384 experts; DeepseekV32ForCausalLM; not DeepSeek's class
        assert not sglang_shared_fused(resolve_model(other), engine("sglang@0.5.6"), h200, 1, "default"), other
    # The step under 0.5.12 on 8 H200s (fp8 block-scaled: the matmuls quantize their inputs): each of the 58 MoE layers
    # runs none of the shared expert's two matmuls (3.6 us each, H200's measured GEMM latency, taken for block fp8), its
    # activation's two small kernels (vLLM's silu and multiply, as counted) nor its two inputs' quantization (2.7 us each).
    from kvcalc.engine import steptime

    sm = StepModel(ds, h200, kv_dtype("fp8"), tp=8, engine=engine("sglang@0.5.12"))
    monkeypatch.setattr(steptime, "sglang_shared_fused", lambda *a: False)
    apart = StepModel(ds, h200, kv_dtype("fp8"), tp=8, engine=engine("sglang@0.5.12"))
    monkeypatch.undo()
    assert sm.shared_fused and not apart.shared_fused and sm.c.gemm_latency_s == pytest.approx(3.6e-6)
    assert (apart.kernels.gemm - sm.kernels.gemm, apart.kernels.small - sm.kernels.small) == (2 * 58, 4 * 58)
    assert apart.layer_gaps_s - sm.layer_gaps_s == pytest.approx(58 * (2 * 3.6 + 4 * 2.7) * 1e-6, rel=1e-9)
    assert layer_latency_s(ds, sm.c, kernels=apart.kernels) == pytest.approx(apart.layer_gaps_s, rel=1e-12)
    assert not StepModel(ds, h200, kv_dtype("fp8"), tp=8, engine=engine("vllm")).shared_fused
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    assert round(58 * (2 * 3.6 + 4 * 2.7) * 1e-3, 2) == 1.04
    assert "under 0.5.12 that is 58 x (2 x 3.6 + 4 x 2.7) us = 1.04 ms less a step" in doc


def test_constants_out_of_range_are_refused():
    with pytest.raises(Exception, match="eta_bw"):
        StepConstants(eta_bw=1.5).check()
    assert DEFAULTS.check() is DEFAULTS


def test_bad_efficiency_is_one_line(cli):
    one_line_error(cli("roofline", "--model", "llama3.1-8b", "--efficiency", "0"), "--efficiency")


def test_the_docs_worked_example_is_what_roofline_prints(cli):
    # docs/simulation.md's Llama-3.1-70B TP 8 example, figure by figure.
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text()
    d = cli("roofline", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8", "--batch", "32", "--seq", "4k", "--json").json()
    for figure in (
        f"{d['weight_bytes_read']:,} B",
        f"{d['kv_bytes_read']:,} B",
        f"{d['t_bound_s'] * 1e3:.3f} ms",
        f"{d['t_fixed_s'] * 1e3:.3f} ms",
        f"{d['t_collective_s'] * 1e3:.3f} ms",
        f"{d['t_step_s'] * 1e3:.3f} ms",
        f"{d['tokens_per_s_step']:,.0f} tokens/s",
        f"{d['tokens_per_s']:,.0f}:",
    ):
        assert figure in text, figure
    # The host's 0.5 ms + 32 x 4 us run beside the GPU's work under the default release (async scheduling).
    w = cli(
        *["roofline", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8", "--batch", "32", "--seq", "4k"],
        "--engine",
        "vllm@0.12",
        "--json",
    ).json()
    assert w["t_step_s"] - d["t_step_s"] == pytest.approx(0.5e-3 + 32 * 4e-6, rel=1e-9)
    assert (
        f"takes 8.239 + {w['t_fixed_s'] * 1e3:.3f} + 1.918 = {w['t_step_s'] * 1e3:.3f} ms, {w['tokens_per_s_step']:,.0f} tokens/s"
        in text
    )


@settings(max_examples=300, deadline=None)
@given(
    st.floats(0, 0.05),
    st.floats(0, 1e-4),
    st.floats(0, 0.05),
    st.floats(0, 1e-4),
    st.floats(0, 2e-3),
    st.floats(1e-6, 60),
    st.integers(1, 5000),
)
def test_the_solved_arrival_step_is_the_bisected_one(m0, m1, c0, c1, o, dt, limit):
    # steps_until solves the span's quadratic; bisection over span_s is the independent answer.
    ln = (m0, m1, c0, c1, o)
    if StepModel.span_s(ln, limit) < dt:
        want = limit
    else:
        lo, hi = 1, limit
        while lo < hi:
            mid = (lo + hi) // 2
            if StepModel.span_s(ln, mid) >= dt:
                hi = mid
            else:
                lo = mid + 1
        want = lo
    sm = StepModel(resolve_model("llama3.1-8b"), resolve_gpu("h100"), BF16)
    assert sm.steps_until(ln, dt, limit) == want
    # The simulator takes the count with its seconds: they must be span_s's own figure, to the bit.
    assert sm.span_until(ln, dt, limit) == (want, StepModel.span_s(ln, want))
    if StepModel.span_s(ln, limit) >= dt:  # what the simulator knows when it says reached=True
        assert sm.span_until(ln, dt, limit, True) == (want, StepModel.span_s(ln, want))


def test_dp_attention_gathers_and_scatters_every_moe_layer():
    # Qwen3-30B-A3B (48 MoE layers, hidden 2,048) at DP 4 x TP 1 x EP 4 on H100s, 64 tokens on each DP
    # rank: each MoE layer all-gathers the other 3 ranks' 64 tokens x 2,048 x 2 B and reduce-scatters
    # them back (vLLM's allgather_reducescatter), over NVLink (0.7 x 450 GB/s) at 5 us each. With one DP
    # rank (EP 4 = TP 4) the TP ranks hold every token already: nothing beyond the all-reduces.
    m, h = resolve_model("qwen3-30b-a3b"), resolve_gpu("h100")
    assert StepModel(m, h, BF16).moe_exchange_s(64) == 0
    sm = StepModel(m, h, BF16, ep=4, dp=4)
    assert sm.moe_exchange_s(64) == pytest.approx(2 * 48 * (5e-6 + 3 * 64 * 2048 * 2 / (0.7 * 450e9)))
    assert sm.collective_s(64) == pytest.approx(sm.moe_exchange_s(64))
    assert StepModel(m, h, BF16, tp=4, ep=4).moe_exchange_s(64) == 0


def test_an_mla_prompt_attends_decompressed():
    # DeepSeek-V3 (128 heads; 128 nope + 64 rope dims of K, 128 of V; a 512 + 64 latent): a decode
    # token attends in the absorbed form, 2 x 128 x (576 + 512) = 278,528 FLOPs a key a layer; a
    # prompt chunk decompressed, 2 x 128 x (128 + 64 + 128) = 81,920. At TP 8, an eighth of the heads.
    m = resolve_model("deepseek-v3")
    sm = StepModel(m, resolve_gpu("h200"), kv_dtype("fp8"), tp=8)
    assert sm.attn(1000) == pytest.approx(61 * 278_528 / 8 * 1000)
    assert sm.prefill_attn(1000) == pytest.approx(61 * 81_920 / 8 * 1000)


def test_the_documented_json_keys_are_printed(cli, tmp_path):
    from pathlib import Path

    # docs/simulation.md's "JSON keys", command by command.
    s = cli("simulate", "--model", "llama3.1-8b", "-n", "60", "--policies", "paged-16", "--rate", "5", "--json").json()
    assert {"verdict", "concurrency", "constants"} <= s.keys()
    run = s["runs"][0]
    assert {
        "overloaded",
        "offered_per_s",
        "sustained_per_s",
        "requests_per_s",
        "output_tokens_per_s",
        "ttft_s",
        "tpot_s",
        "queue_s",
    } <= run.keys()
    bench = run["bench"]
    assert {
        "completed",
        "duration_s",
        "request_throughput_per_s",
        "output_throughput_tok_per_s",
        "total_token_throughput_tok_per_s",
    } <= bench.keys()
    for k in ("ttft_s", "tpot_s", "itl_s", "e2el_s"):
        assert set(bench[k]) == {"mean", "p50", "p90", "p99"}
    r = cli("roofline", "--model", "llama3.1-8b", "--batch", "1,2", "--json").json()
    assert {"t_bound_s", "t_step_s", "t_fixed_s", "t_collective_s", "tokens_per_s_step"} <= r["rows"][0].keys()
    p = cli("plan", "--model", "llama3.1-8b", "--gpus", "h100", "--rate", "5", "--prompt", "500", "--output", "100", "--json")
    d = p.json()
    assert {"constants", "ranked_by"} <= d.keys() and {"tpot_mean_s", "closed_form_tpot_s"} <= d["verified"][0].keys()
    f = cli("fit", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--dp", "4", "--ep", "4", "--seq", "4k", "--json").json()
    assert {"dp", "ep", "max_concurrency", "max_concurrency_total"} <= f.keys()
    load = ("--prompt", "2000", "--output", "500", "--ttft", "1s", "--tpot", "30ms", "--json")
    q = cli("plan", "--model", "llama3.1-70b", "--gpus", "h100", "--rate", "4", "--closed-form", *load).json()
    keys = {"dp", "ep", "shape", "engine_flags", "placement", "mode", "prefill_pool", "decode_pool", "kv_transfer_s", "why"}
    assert "disaggregation" in q and all(keys <= d.keys() for d in q["ranked"])
    t = cli("plan", "--model", "llama3.1-70b", "--gpus", "h100", "--max-gpus", "8", "--throughput", *load).json()
    assert {"aggregated", "disaggregated", "winner", "why"} <= t.keys()
    assert {"deployment", "rate_per_s", "output_tokens_per_s_per_gpu"} <= t["aggregated"].keys()
    raw = Path(__file__).resolve().parent / "serving" / "raw"
    files = [str(raw / f"gpustack-h100-qwen3-8b-vllm0110-sharegpt-c{c}.txt") for c in (1, 2, 4, 8)]
    c = cli("calibrate", *files, "--model", "qwen3-8b", "--gpu", "h100", "--json").json()
    assert {"model", "gpu", "tp", "constants", "fitted", "held", "rms_default", "rms_fitted"} <= c.keys()
    keys = {"where", "decoding", "measured_tpot_s", "bound_tpot_s", "default_tpot_s", "fitted_tpot_s"}
    assert keys | {"measured_ttft_s", "fitted_ttft_s"} <= c["runs"][0].keys()


def test_the_routed_experts_share_follows_their_width_on_a_gpu():
    # a x n / (n + b), fitted to vLLM 0.24's Triton fused-MoE tables (bench/fit_moe_eta.py, the call's weights
    # and FLOPs combined as their root-sum-square): 16-bit a 0.666, b 545; fp8 a 0.311, b 459 (0.307, 473 until fp8 calls took their own 38 us floor, 2026-12-05); n the expert's
    # intermediate width on one GPU.
    bf16 = kv_dtype("bf16")
    h100 = resolve_gpu("h100-sxm")
    q30 = resolve_model("qwen3-30b-a3b")  # moe_intermediate_size 768
    assert StepModel(q30, h100, bf16).moe_eta(DEFAULTS) == 0.666 * 768 / (768 + 545)
    assert StepModel(q30, h100, bf16, tp=4).moe_eta(DEFAULTS) == 0.666 * 192 / (192 + 545)
    ds = resolve_model("deepseek-v3")  # fp8-block experts of 2,048 at TP 8: 256 a GPU
    assert StepModel(ds, resolve_gpu("h200"), bf16, tp=8).moe_eta(DEFAULTS) == 0.311 * 256 / (256 + 459)
    # Outside the fit: expert parallelism and MXFP4 experts keep 0.15; a set moe_eta_c wins.
    assert StepModel(q30, h100, bf16, tp=2, dp=4, ep=8).moe_eta(DEFAULTS) == 0.15
    assert StepModel(resolve_model("gpt-oss-120b"), h100, bf16).moe_eta(DEFAULTS) == 0.15
    assert StepConstants(moe_eta_c=0.2).moe_eta(768, "bf16") == 0.2 and StepConstants().moe_eta(None, "bf16") == 0.15


def test_the_step_models_description_names_the_experts_share(cli):
    # roofline's realistic estimate says the share it took: 0.666 x 768 / (768 + 545) = 0.39 at TP 1.
    out = " ".join(cli("roofline", "--model", "qwen3-30b-a3b", "--gpu", "h100").out.split())
    assert f"routed experts at {0.666 * 768 / (768 + 545):.3g} of the peak (moe_eta_c)" in out


def test_a_wider_expert_makes_a_long_prefill_faster_than_one_share_did():
    # Qwen3-30B-A3B at TP 1: a 4,096-token step's routed experts at 0.36 of the peak, not 0.15.
    bf16, h100 = kv_dtype("bf16"), resolve_gpu("h100-sxm")
    q30 = resolve_model("qwen3-30b-a3b")
    by_width = StepModel(q30, h100, bf16).prefill_s(4096, 8192)
    flat = StepModel(q30, h100, bf16, constants=StepConstants(moe_eta_c=0.15)).prefill_s(4096, 8192)
    assert by_width < flat


def test_sglang_0_4_1_to_0_4_5_issue_an_eager_forwards_kernels_at_their_own_measured_rate():
    # sglang.bench_one_batch times a prompt step (batch preparation, the eager forward, sampling) between two
    # synchronizations: DeepSeek-V3/R1 at TP 8 on 8 H200s, batch 1, without a profiler: 179.55 and 166.62 ms at
    # 1,000 tokens (sgl-project/sglang#5432, DeepGEMM's BMM off and on), 196.35 ms at 128 (datacrunch-research/blogs,
    # deepseek-r1-deployment). Median 179.55 ms over the 1,980 kernels of the model at fp8: 90.7 us.
    from kvcalc.engine.engines import SGLANG_HOST_KERNEL_S, engine
    from kvcalc.engine.steptime import defaults_for, layer_kernels

    posted = sorted([179.55e-3, 166.62e-3, 196.35e-3])
    assert layer_kernels(resolve_model("deepseek-v3"), None, "fp8").total == 1980
    assert round(posted[1] / 1980 * 1e6) == 91 and SGLANG_HOST_KERNEL_S == 91e-6
    measured = ("sglang@0.4.1", "sglang@0.4.1.post7", "sglang@0.4.2.post2", "sglang@0.4.4.post1", "sglang@0.4.4.post4")
    for key in (*measured, "sglang@0.4.5.post1"):
        assert defaults_for(engine(key)).eager_host_s == 91e-6, key
    # Releases no such step was measured on keep the default (one forward's 'forward cost', 42 us).
    for key in ("sglang@0.4.0", "sglang@0.4.5.post3", "sglang@0.5.6", "sglang", "vllm@0.7.2", "vllm@0.6"):
        assert defaults_for(engine(key)).eager_host_s == 42e-6, key
    # A calibration's constants are the user's: the release's figure does not replace them.
    own = dataclasses.replace(DEFAULTS, eager_host_s=50e-6)
    sm = StepModel(
        resolve_model("deepseek-v3"), resolve_gpu("h200"), BF16, tp=8, constants=own, engine=engine("sglang@0.4.4.post4")
    )
    assert sm.c.eager_host_s == 50e-6
    # The posted steps, host-bound: 1,980 x 91 us = 180.2 ms, and the scheduler's 0.5 ms and 4 us before the forward.
    m, g = resolve_model("deepseek-v3"), resolve_gpu("h200")
    for key, tokens, posted_s in (
        ("sglang@0.4.4.post4", 1000, (166.62e-3, 179.55e-3)),
        ("sglang@0.4.1.post7", 128, (196.35e-3,)),
    ):
        t = StepModel(m, g, BF16, tp=8, engine=engine(key)).step(0, 0, tokens, tokens).t_step_s
        assert t == pytest.approx(0.5e-3 + 4e-6 + 1980 * 91e-6, rel=1e-9)
        assert all(abs(t / p - 1) < 0.1 for p in posted_s)  # within 10% of each (8.2% over 166.62 ms)


def test_a_prompt_step_without_cuda_graphs_takes_the_hosts_time_to_issue_its_kernels():
    # docs/simulation.md's example: Qwen3-8B on one H100 SXM, one 233-token prompt. SGLang's scheduler
    # timed a DeepSeek-V3 forward of one new token at 82.6 ms eager (sgl-project/sglang#12160): 61 layers,
    # 1,980 kernels as layer_kernels counts them at fp8: 82.6 ms / 1,980 = 42 us a kernel.
    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import layer_kernels

    ds = layer_kernels(resolve_model("deepseek-v3"))
    assert ds.gemm + ds.attention + ds.mla_attention + ds.moe + ds.small + ds.moe_inner == ds.total == 1498
    fp8 = layer_kernels(resolve_model("deepseek-v3"), None, "fp8")
    # Activation quantization before every fp8 linear: 61 MLA layers x 4 projections, 3 dense MLPs x 2, and in
    # 58 MoE layers the shared experts' 2 and the fused experts' 2: 244 + 6 + 232 = 482.
    # (the routed experts' 2 run inside the fused call: moe_inner)
    assert fp8.small - ds.small == 61 * 4 + 3 * 2 + 58 * 2 and fp8.moe_inner - ds.moe_inner == 58 * 2
    assert fp8.total == 1498 + 482 == 1980
    assert round(82.6e-3 / 1980 * 1e6) == 42 and DEFAULTS.eager_host_s == 42e-6
    m, h = resolve_model("qwen3-8b"), resolve_gpu("h100-sxm")
    k = layer_kernels(m)
    # 36 layers of 4 matmuls (QKV, output, gate-up, down), an attention call, 7 small kernels (rotary, the cache
    # write, two layer norms, the activation, and Qwen3's query and key norms: qwen3.py Qwen3Attention.forward).
    assert (k.gemm, k.attention, k.small, k.moe, k.mla_attention) == (36 * 4, 36, 36 * 7, 0, 0)
    # In graphs and waiting for its host (vLLM 0.11); SGLang 0.5.10 graphs it too but schedules ahead (its
    # overlap scheduler), so the host's 0.504 ms run beside the GPU's work there.
    graphed = StepModel(m, h, BF16, engine=engine("vllm@0.11")).step(0, 0, 233, 233)
    ahead = StepModel(m, h, BF16, engine=engine("sglang@0.5.10")).step(0, 0, 233, 233)
    assert ahead.t_step_s == pytest.approx(graphed.t_step_s - 0.504e-3, rel=1e-12)
    eager = StepModel(m, h, BF16, engine=engine("sglang@0.5.6")).step(0, 0, 233, 233)
    # (7.666 ms until the prompt's 36 layers x 8 KV heads in the attention calls were charged 24.5 ns each: 7.1 us;
    # 7.673 ms until the matmuls' weights and FLOPs, near their knee at 233 tokens, combined as their root-sum-square)
    # (9.736 ms until Qwen3's query and key norms were counted: 72 small kernels at 2.7 us, 0.194 ms)
    assert graphed.t_step_s == pytest.approx(9.930e-3, abs=1e-6)
    host = 0.5e-3 + 4e-6  # the scheduler's own time, before the forward
    assert 432 * 42e-6 == pytest.approx(18.144e-3) and graphed.t_step_s - host < 18.144e-3
    assert eager.t_step_s == pytest.approx(host + 18.144e-3, rel=1e-12)
    # The GPU's terms are the engine's work either way; the host's time goes to the fixed term.
    assert (eager.t_memory_s, eager.t_compute_s, eager.t_bound_s) == (graphed.t_memory_s, graphed.t_compute_s, graphed.t_bound_s)
    assert eager.t_fixed_s - graphed.t_fixed_s == pytest.approx(eager.t_step_s - graphed.t_step_s, rel=1e-12)

    # Decode steps are graphed in every engine; a prompt step whose GPU work outlasts the host is unchanged.
    # (The GPU's work: the step less the host's time where the engine waits for it.)
    def gpu(sm: StepModel) -> float:
        return sm.step(8, 500).t_step_s - (0.0 if sm.async_host else sm.c.fixed_s + 8 * sm.c.per_request_s)

    ref = StepModel(m, h, BF16, engine=engine("vllm@0.11"))
    for e in ("sglang@0.5.6", "vllm@0.6.3", "trtllm"):
        sm = StepModel(m, h, BF16, engine=engine(e))
        assert gpu(sm) == pytest.approx(gpu(ref))
        big = sm.step(0, 0, 8192, 8192)
        assert big.t_step_s - big.t_fixed_s > 18.144e-3
    assert StepModel(m, h, BF16, engine=engine("sglang@0.5.6")).step(0, 0, 8192, 8192).t_step_s == pytest.approx(
        StepModel(m, h, BF16, engine=engine("vllm@0.11")).step(0, 0, 8192, 8192).t_step_s
    )
    # The simulator's spans charge a prompt span's first step as step() does.
    sm = StepModel(m, h, BF16, engine=engine("sglang@0.5.6"))
    m0, m1, c0, c1, o = sm.lines(0, 0.0, 233, sm.kv(233), 233 * sm.prefill_attn(117))
    assert max(m0, c0) + o == pytest.approx(eager.t_step_s, rel=1e-9)


def test_which_engines_run_prompt_steps_without_cuda_graphs():
    from kvcalc.engine.engines import engine

    eager = ("sglang@0.4.6", "sglang@0.5.3", "sglang@0.5.9", "vllm@0.4", "vllm@0.5.4", "vllm@0.6.3", "vllm@0.7.3", "trtllm")
    graphed = ("sglang", "sglang@0.5.10", "sglang@0.5.23", "vllm@0.8.5", "vllm@0.11", "vllm")
    assert [engine(e).prefill_graphs for e in eager] == [False] * len(eager)
    assert [engine(e).prefill_graphs for e in graphed] == [True] * len(graphed)


def test_the_step_description_says_when_prompt_steps_run_without_cuda_graphs():
    from kvcalc.engine.engines import engine

    m, h = resolve_model("qwen3-8b"), resolve_gpu("h100-sxm")
    eager = StepModel(m, h, BF16, engine=engine("sglang@0.5.6")).describe()
    # 432 kernels x 42 us = 18.144 ms, printed to three figures.
    assert "takes at least the host's issue of its kernels (18.1 ms: 42 us a kernel)" in eager
    assert "CUDA graphs" not in StepModel(m, h, BF16, engine=engine("vllm@0.11")).describe()


def test_sglang_0_5_23_runs_prompt_steps_without_graphs_at_pp_off_cuda_and_for_vision_models():
    # SGLang 0.5.23: breakable prefill graphs by default on CUDA only (cuda_graph_config.py
    # default_prefill_backend), turned off for PP > 1 and for multimodal models (cuda_graph_hook.py).
    from kvcalc.engine.engines import engine
    from kvcalc.engine.plan import _eager_prompt_words

    cur = engine("sglang")
    text, vl = resolve_model("qwen3-8b"), resolve_model("qwen2.5-vl-7b")
    h, amd = resolve_gpu("h100-sxm"), resolve_gpu("mi300x")
    assert cur.prompt_graphs(1, "NVIDIA", text)
    assert not cur.prompt_graphs(2, "NVIDIA", text)
    assert not cur.prompt_graphs(1, "AMD", text)
    assert not cur.prompt_graphs(1, "NVIDIA", vl)
    # vLLM V1 graphs its prompt steps everywhere; the older records nowhere.
    for pp, vendor, m in ((1, "NVIDIA", text), (2, "AMD", vl)):
        assert engine("vllm").prompt_graphs(pp, vendor, m) and not engine("sglang@0.5.6").prompt_graphs(pp, vendor, m)
    # The step model follows it: a 233-token prompt step of Qwen3-8B on an MI300X takes the host's 18.144 ms.
    assert StepModel(text, amd, BF16, engine=cur).step(0, 0, 233, 233).t_step_s == pytest.approx(0.504e-3 + 18.144e-3)
    assert StepModel(text, h, BF16, engine=cur).step(0, 0, 233, 233).t_step_s < 10e-3
    # And plan's TTFT assumption says where.
    assert _eager_prompt_words(cur, [h], text, DEFAULTS) == (
        "; SGLang 0.5 runs those steps without CUDA graphs at PP > 1 on h100-sxm, so each takes at least the "
        "host's issue of the model's kernels (42 us a kernel)"
    )
    assert "without CUDA graphs on mi300x and at PP > 1 on h100-sxm" in _eager_prompt_words(cur, [h, amd], text, DEFAULTS)
    assert "without CUDA graphs, so" in _eager_prompt_words(engine("sglang@0.5.6"), [h, amd], text, DEFAULTS)
    assert _eager_prompt_words(engine("vllm"), [h, amd], text, DEFAULTS) == ""


# ---- the busiest expert-parallel rank, and MiniMax-M2's q/k-norm all-reduce -----------------------------


def _simulated_busiest(E: int, k: int, b: int, ranks: int, trials: int, seed: int) -> float:
    """An independent estimate: route b tokens to k distinct experts each, uniformly, place the
    experts on ranks as vLLM does (the first E mod ranks ranks one more), count each rank's distinct
    experts hit and average the largest count."""
    import numpy as np

    rng = np.random.default_rng(seed)
    sizes = [E // ranks + (1 if r < E % ranks else 0) for r in range(ranks)]
    owner = np.repeat(np.arange(ranks), sizes)
    total = 0
    for _ in range(trials):
        hit = np.zeros(E, dtype=bool)
        for _t in range(b):
            hit[rng.choice(E, size=k, replace=False)] = True
        total += int(np.bincount(owner[hit], minlength=ranks).max())
    return total / trials


@pytest.mark.parametrize(
    ("E", "k", "b", "ranks"),
    [(256, 8, 1, 8), (256, 8, 4, 8), (256, 8, 16, 8), (384, 8, 1, 32), (60, 4, 2, 8), (128, 8, 3, 6)],
)
def test_busiest_rank_experts_against_a_simulation_of_routing(E, k, b, ranks):
    from kvcalc.engine.weights import busiest_rank_experts

    want = _simulated_busiest(E, k, b, ranks, 4000, seed=E * 1000 + b)
    # The formula takes experts as independent (exact in the mean): within 2% of top-k routing.
    assert busiest_rank_experts(E, k, b, ranks) == pytest.approx(want, rel=0.02)


@given(
    st.sampled_from([(256, 8), (384, 8), (128, 8), (64, 6), (60, 4), (8, 2)]),
    st.integers(1, 4096),
    st.sampled_from([2, 4, 8, 16, 32]),
)
@settings(max_examples=150, deadline=None)
def test_busiest_rank_lies_between_the_mean_and_its_whole_share(ek, b, ranks):
    from kvcalc.engine.weights import busiest_rank_experts, expected_experts

    E, k = ek
    if ranks > E:
        return
    got = busiest_rank_experts(E, k, b, ranks)
    assert expected_experts(E, k, b) / ranks - 1e-9 <= got <= -(-E // ranks) + 1e-9
    # More tokens never lighten the busiest rank.
    assert busiest_rank_experts(E, k, b + 1, ranks) >= got - 1e-9


def test_the_busiest_ep_rank_reads_its_experts_in_the_step_not_the_bound():
    from kvcalc.engine.weights import busiest_rank_experts

    m, g = resolve_model("minimax-m2"), resolve_gpu("h100-sxm")
    ep = StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8)
    tp = StepModel(m, g, kv_dtype("bf16"), tp=8)
    # One MiniMax-M2 expert: 3 x 3,072 x 1,536 fp8 weights plus a 4-byte scale per 128 x 128 block
    # (24 x 12 a matrix): 3 x (4,718,592 + 1,152) = 14,159,232 B; 62 MoE layers. One token routes to 8
    # of 256 experts, 1 a rank on average; the busiest of 8 ranks holds about 2.54 of them.
    expert = 3 * (3072 * 1536 + 24 * 12 * 4)
    assert expert == 14_159_232
    busiest = busiest_rank_experts(256, 8, 1, 8)
    assert busiest == pytest.approx(2.544, abs=0.001)
    assert ep.weights(1) - ep.d.weight_read(1) == pytest.approx(62 * expert * (busiest - 1), rel=1e-12)
    # Without EP every rank reads an eighth of each expert hit: no busiest rank.
    assert tp.weights(1) == tp.d.weight_read(1)
    # The bound keeps the mean; the roofline's step has the busiest rank, as the simulator's does.
    from kvcalc.engine.engines import engine
    from kvcalc.engine.roofline import roofline

    r = roofline(m, g, batches=[1, 16], seqs=[900], kv_dtype="bf16", tp=8, ep=8)
    sm = StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8, engine=engine("vllm"))
    for i, b in enumerate((1, 16)):
        assert r.rows[i].weight_bytes_read == sm.d.weight_read(b)
        assert r.rows[i].t_step_s == pytest.approx(sm.step(b, 900).t_step_s, rel=1e-9)


def test_minimax_m2_adds_its_qk_norm_all_reduce_a_layer_at_tp():
    import dataclasses

    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import norm_allreduces

    m, g = resolve_model("minimax-m2"), resolve_gpu("h100-sxm")
    # One [tokens, 2] fp32 all-reduce a layer in SGLang and vLLM 0.14 on; vLLM 0.12 and 0.13 reduce q's
    # and k's [tokens, 1] apart.
    assert norm_allreduces(m) == norm_allreduces(m, engine("sglang@0.5.9")) == norm_allreduces(m, engine("vllm")) == (1, 8)
    assert norm_allreduces(m, engine("vllm@0.13")) == norm_allreduces(m, engine("vllm@0.12")) == (2, 4)
    # By the record's release: vllm@0.13 resolves to the 0.12 record; a record without a release is older than none.
    assert engine("vllm@0.13").older_than(0, 14) and not engine("vllm@0.14").older_than(0, 14)
    assert not engine("hf").older_than(99) and engine("sglang@0.5.9").older_than(0, 5, 10)
    assert norm_allreduces(resolve_model("qwen3-235b-a22b")) == (0, 0)  # its q/k norm is per head: no TP sum
    off = dataclasses.replace(m, source=dataclasses.replace(m.source, config={**m.source.config, "use_qk_norm": False}))
    assert norm_allreduces(off) == (0, 0)
    with_norm = StepModel(m, g, kv_dtype("bf16"), tp=8).collective_s(1)
    without = StepModel(off, g, kv_dtype("bf16"), tp=8).collective_s(1)
    # 62 layers x the H100 spec's measured TP 8 all-reduce at 8 B (its least at 256 B and above: 4.61 us,
    # gpu_specs/h100-sxm.yaml), docs/simulation.md's 0.286 ms.
    assert with_norm - without == pytest.approx(62 * 4.61e-6, rel=1e-9)
    assert round((with_norm - without) * 1e3, 3) == 0.286
    # The other two all-reduces of one token: 3,072 x 2 B = 6,144 B, between 4,096 B (5.11 us, the least
    # at 4,096 B or more) and 8,192 B (5.11 us): 62 x 2 x 5.11 us = 0.634 ms.
    assert round(without * 1e3, 3) == round(62 * 2 * 5.11e-3, 3) == 0.634
    # vLLM 0.13: two of 4 B a token, which at one token the custom all-reduce declines (not a whole number of 16 B):
    # each at NCCL's 15.59 us (nccl-tests at TP 8, 256 B, gpu_specs/h100-sxm.yaml nccl_allreduce); at four tokens, 16 B,
    # the custom all-reduce's 4.61 us.
    v013 = StepModel(m, g, kv_dtype("bf16"), tp=8, engine=engine("vllm@0.13"))
    assert v013.collective_s(1) - without == pytest.approx(2 * 62 * 15.59e-6, rel=1e-9)
    four = StepModel(off, g, kv_dtype("bf16"), tp=8).collective_s(4)
    assert v013.collective_s(4) - four == pytest.approx(2 * 62 * 4.61e-6, rel=1e-9)
    # One GPU has no all-reduce of any kind.
    assert StepModel(m, g, kv_dtype("bf16"), tp=1).collective_s(1) == 0


def test_a_norm_all_reduce_the_custom_all_reduce_declines_goes_through_nccl():
    """vLLM's and SGLang's custom all-reduce takes only whole numbers of 16 B (should_custom_ar); NCCL carries the rest,
    at nccl-tests' latency (gpu_specs/b200.yaml nccl_allreduce). MiniMax-M2 on 8 B200s, hidden 3,072 (config.json), 62
    layers: the attention's and the MLP's all-reduces carry 3,072 x 2 B a token; the q/k norm's 8 B a token (SGLang
    0.5.8: one [tokens, 2] fp32 tensor), 0.5.9 padding it to 16 B, 0.5.6 sending q's and k's 4 B apart."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import norm_allreduces

    m, g = resolve_model("minimax-m2"), resolve_gpu("b200")
    assert norm_allreduces(m, engine("sglang@0.5.6")) == (2, 4)
    assert norm_allreduces(m, engine("sglang@0.5.8")) == norm_allreduces(m, engine("sglang@0.5.9")) == (1, 8)
    assert norm_allreduces(m, engine("sglang@0.5.7")) == (1, 8)  # (the record of 0.5.7 and 0.5.8 takes 0.5.8's form)

    def coll(e: str, tokens: int) -> float:
        return StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8, engine=engine(e)).collective_s(tokens)

    # The custom all-reduce on B200 at TP 8 (gpu_specs/b200.yaml allreduce, each size at the least measured at it or
    # above): 6,144 B between 4,096 B (7.79 us) and 8,192 B (7.82): 7.805 us; 12,288 B between 8,192 and 16,384 B (8.07):
    # 7.945 us; 24,576 B between 16,384 and 32,768 B (8.22): 8.145 us; 16 B, below the table, 7.33 us (its least).
    # NCCL at TP 8 below 512 B: 25.09 us.
    ca1, ca2, ca4, ca_small, nccl = 7.805e-6, 7.945e-6, 8.145e-6, 7.33e-6, 25.09e-6
    # 0.5.8, one token: 8 B, declined -> NCCL.
    assert coll("sglang@0.5.8", 1) == pytest.approx(62 * (2 * ca1 + nccl), rel=1e-9)
    # Two tokens: 16 B, taken.
    assert coll("sglang@0.5.8", 2) == pytest.approx(62 * (2 * ca2 + ca_small), rel=1e-9)
    # 0.5.9 pads one token's 8 B to 16 B: taken.
    assert coll("sglang@0.5.9", 1) == pytest.approx(62 * (2 * ca1 + ca_small), rel=1e-9)
    # 0.5.6: two of 4 B at one token and 8 B at two, all declined; at four tokens 16 B each, taken.
    assert coll("sglang@0.5.6", 2) == pytest.approx(62 * (2 * ca2 + 2 * nccl), rel=1e-9)
    assert coll("sglang@0.5.6", 4) == pytest.approx(62 * (2 * ca4 + 2 * ca_small), rel=1e-9)
    # Three tokens in a CUDA graph run as a batch of 4 (the engines' capture sizes): taken. An eager step of 1,001 tokens
    # sends 8,008 B, declined; 1,000 tokens, 8,000 B, taken.
    sm = StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8, engine=engine("sglang@0.5.8"))
    assert [sm.norm_declined(t) for t in (1, 2, 3, 1000, 1001)] == [True, False, False, False, True]
    # At 1,001 tokens 0.5.8 sends 8,008 B through NCCL, between 4,096 B (25.98 us) and 8,192 B (26.02): the table's rows of
    # 2,048 and 4,096 half-precision elements (26.02 and 26.55 at 4,096 and 8,192 B until its sizes were read as elements,
    # 2026-12-07); 0.5.9 pads them to 8,016 B, the custom all-reduce's, between 4,096 B (7.79 us) and 8,192 B (7.82). The
    # rest of the two steps is alike.
    nccl_8008 = (25.98 + (26.02 - 25.98) * (8008 - 4096) / 4096) * 1e-6
    ca_8016 = (7.79 + (7.82 - 7.79) * (8016 - 4096) / 4096) * 1e-6
    assert coll("sglang@0.5.8", 1001) - coll("sglang@0.5.9", 1001) == pytest.approx(62 * (nccl_8008 - ca_8016), rel=1e-6)
    # Nothing to decline: TensorRT-LLM (its own all-reduce), an AMD GPU (SGLang runs aiter's all-reduce there, whose
    # rule was not read), a calibrated link, or no engine named.
    assert StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8, engine=engine("trtllm")).norm_nccl is None
    assert StepModel(m, resolve_gpu("mi300x"), kv_dtype("bf16"), tp=8, ep=8, engine=engine("sglang@0.5.8")).norm_nccl is None
    cal = dataclasses.replace(sm.c, alpha_s=5e-6)
    assert StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8, constants=cal, engine=engine("sglang@0.5.8")).norm_nccl is None
    assert StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8).norm_nccl is None
    # Said where it applies.
    said = sm.describe()
    assert (
        "through NCCL where not a whole number of 16 B" in said and "25.09 us as nccl-tests measures it on b200 at TP 8" in said
    )
    assert (
        "padded to a whole number of 16 B"
        in StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8, engine=engine("sglang@0.5.9")).describe()
    )


def test_dp_attention_gathers_and_scatters_through_nccls_measured_collectives():
    """SGLang 0.5.x gathers every DP rank's tokens with NCCL's all-gather over the whole TP group and reduce-scatters the
    MLP's output over it, in every layer; vLLM's allgather_reducescatter backend does so over the DP group for each MoE
    layer (dp_exchange_group). Priced at nccl-tests' figures (gpu_specs/b200.yaml nccl_allgather, nccl_reducescatter).
    Kimi-K2 (config.json: hidden 7,168, 61 layers, the first dense) at attention TP 2 and DP 4 on 8 B200s."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import dp_exchange_group

    assert dp_exchange_group(engine("sglang@0.5.6"), 2, 4) == 8 and dp_exchange_group(engine("sglang@0.5.2"), 1, 8) == 8
    assert dp_exchange_group(engine("vllm@0.14"), 4, 2) == 2
    assert dp_exchange_group(engine("sglang@0.4.3.post2"), 1, 8) == dp_exchange_group(engine("sglang@0.4.0"), 1, 8) == 8
    assert dp_exchange_group(engine("sglang@0.4.5.post3"), 1, 8) == dp_exchange_group(engine("sglang@0.4.10"), 1, 8) == 0
    assert dp_exchange_group(engine("sglang@0.5.0"), 1, 8) == 8  # read in 0.5.0rc0, 0.5.1 and 0.5.1.post3 too
    assert dp_exchange_group(engine("trtllm"), 1, 8) == dp_exchange_group(engine("sglang@0.5.6"), 8, 1) == 0
    assert dp_exchange_group(None, 1, 8) == 0
    m, g = resolve_model("kimi-k2"), resolve_gpu("b200")
    sm = StepModel(m, g, BF16, tp=2, dp=4, engine=engine("sglang@0.5.6"))
    assert (sm.dp_group, sm.dp_layers) == (8, 61)
    # One token a rank: 4 x 7,168 x 2 B = 57,344 B gathered. B200 at 8 GPUs, each size at the least measured at it or
    # above: the all-gather 18.66 us at 32,768 and 65,536 B; the reduce-scatter 17.59 us at 32,768 B, 18.21 at 65,536.
    rs = 17.59 + (18.21 - 17.59) * (57_344 - 32_768) / 32_768
    assert sm.moe_exchange_s(1) == pytest.approx(61 * (18.66 + rs) * 1e-6, rel=1e-9)
    # Past the tables' 536,870,912 B (10,000 tokens a rank: 573,440,000 B), the rest at 7/8 over 900 GB/s x 0.7.
    big = 4 * 10_000 * 7168 * 2
    rest = (big - 536_870_912) * 7 / 8 / 630e9
    assert sm.moe_exchange_s(10_000) == pytest.approx(61 * ((761.42 + 766.45) * 1e-6 + 2 * rest), rel=1e-9)
    said = " ".join(sm.describe().split())
    assert "NCCL's all-gather and reduce-scatter of every DP rank's tokens among 8 GPUs in each of 61 layers" in said

    # SGLang 0.4.0 to 0.4.4 combine with the MLP's all-reduce of every rank's tokens: DeepSeek-V3 at DP 8 on 8 H200s, 4
    # a rank, 8 x 4 x 7,168 x 2 B = 458,752 B: the all-gather 13.57 us (at 262,144 and 524,288 B, each the least at it or
    # above), the custom all-reduce 10.06 + (11.14 - 10.06) x 0.75 = 10.87 us (gpu_specs/h200.yaml allreduce, TP 8).
    old = StepModel(resolve_model("deepseek-v3"), resolve_gpu("h200"), BF16, tp=1, dp=8, engine=engine("sglang@0.4.3.post2"))
    assert old.dp_combine_ar and old.dp_nccl is not None and old.dp_nccl[1] is None
    assert old.moe_exchange_s(4) == pytest.approx(61 * (13.57 + 10.87) * 1e-6, rel=1e-9)
    assert "NCCL's all-gather of every DP rank's tokens among 8 GPUs in each of 61 layers" in " ".join(old.describe().split())

    # Where it is not priced so, the gather and scatter keep latency + bytes / bandwidth over the MoE layers: SGLang 0.4.5
    # to 0.5.1, a GPU whose spec measures neither (MI300X), a calibrated link.
    def kept(s: StepModel, tokens: int) -> float:
        link = s.stage_link
        return 2 * m.moe.num_moe_layers * (link.alpha_s + (s.dp - 1) * tokens * 7168 * 2 / link.bytes_per_s)  # type: ignore[union-attr]

    for s in (
        StepModel(m, g, BF16, tp=2, dp=4, engine=engine("sglang@0.4.5.post3")),
        StepModel(m, resolve_gpu("mi300x"), BF16, tp=2, dp=4, engine=engine("sglang@0.5.6")),
        StepModel(m, g, BF16, tp=2, dp=4, engine=engine("sglang@0.5.6"), constants=dataclasses.replace(DEFAULTS, alpha_s=5e-6)),
    ):
        assert s.dp_nccl is None and s.moe_exchange_s(3) == pytest.approx(kept(s, 3), rel=1e-9)
    # vLLM: the DP group (4 GPUs), the MoE layers only (60).
    v = StepModel(m, g, BF16, tp=2, dp=4, engine=engine("vllm@0.14"))
    assert (v.dp_group, v.dp_layers) == (4, 60) and v.dp_nccl is not None


def test_the_dp_nccl_paragraph_is_as_the_step_model_says():
    """docs/simulation.md: Kimi-K2 at attention TP 2 and DP 4 on 8 B200s under SGLang 0.5.6, one user (the cookbook's run:
    195 prompt and 276 output tokens on average, 333 at mid-output)."""
    from kvcalc.engine.engines import engine

    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    m, g = resolve_model("kimi-k2"), resolve_gpu("b200")
    now = StepModel(m, g, BF16, tp=2, dp=4, engine=engine("sglang@0.5.6"))
    before = StepModel(m, dataclasses.replace(g, nccl_allgather=None), BF16, tp=2, dp=4, engine=engine("sglang@0.5.6"))
    # 61 x (18.66 + 18.055) us; 2 x 60 MoE layers x (5 us + 3 x 14,336 B / 630 GB/s).
    assert round(61 * (18.66 + 18.055) * 1e-3, 2) == 2.24 and round(2 * 60 * (5 + 3 * 14_336 / 630e3) * 1e-3, 2) == 0.61
    assert (round(now.moe_exchange_s(1) * 1e3, 2), round(before.moe_exchange_s(1) * 1e3, 2)) == (2.24, 0.61)
    assert [round(s.step(1, 333).t_step_s * 1e3, 1) for s in (before, now)] == [10.7, 12.3]
    assert "57,344 B, 18.66 us to gather and 18.06 to scatter in each of 61 layers, 2.24 ms a step where the latency term" in doc
    assert "gave 0.61 ms (its step from 10.7 to 12.3 ms; the cookbook's run measured 18.4 ms at one user)" in doc


def test_the_side_by_sides_dp_gather_figures_are_as_the_step_model_says():
    """docs/simulation.md, Q2 and Q4 of the side-by-side with AIConfigurator: vLLM's DP gather and scatter at NCCL's
    measured times against the latency term, in the step of each question's DP shape."""
    from kvcalc.engine.engines import engine

    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())

    def pair(model: str, gpu: str, batch: int, **shape: int) -> list[tuple[float, float]]:
        m, g = resolve_model(model), resolve_gpu(gpu)
        out = []
        for spec in (dataclasses.replace(g, nccl_allgather=None), g):
            s = StepModel(m, spec, BF16, engine=engine("vllm"), **shape)
            out.append((round(s.moe_exchange_s(batch) * 1e3, 2), round(s.step(batch, 4500).t_step_s * 1e3, 1)))
        return out

    (q4_old, _), (q4_new, q4_step) = pair("qwen3-235b-a22b", "h200", 35, tp=2, dp=4, ep=8)
    assert (q4_old, q4_new, q4_step) == (1.45, 2.47, 31.0)
    assert "at 35 a rank 2.47 ms of a 31.0-ms step, where the latency term charged 1.45." in doc
    (q2_old, _), (q2_new, q2_step) = pair("deepseek-v3", "h100-sxm", 8, tp=2, dp=4, ep=8, pp=2)
    assert (round(q2_new - q2_old, 1), q2_step) == (0.5, 39.0)
    assert "its gather and scatter at NCCL's measured times add 0.5 ms to a step of 8 a rank, 39.0 ms)." in doc


def test_releases_without_a_custom_all_reduce_on_rocm_run_every_all_reduce_through_rccl():
    """vLLM before 0.8.3 builds no custom all-reduce for ROCm, and SGLang before 0.4.4 declines it past 2 GPUs there
    (custom_ar_runs): RCCL carries every TP all-reduce, at its measured latency (gpu_specs/mi300x.yaml nccl_allreduce,
    MK1's QuickReduce README). Llama-3.1-405B: hidden 16,384, 126 layers (config.json), so a token's all-reduce is
    32,768 B."""
    from kvcalc.engine.engines import engine, with_all_reduce_backend
    from kvcalc.engine.steptime import custom_ar_runs

    mi300x, h100 = resolve_gpu("mi300x"), resolve_gpu("h100-sxm")
    cases = [
        ("vllm@0.6.3", mi300x, 8, False),
        ("vllm@0.7.3", mi300x, 8, False),
        ("vllm@0.8.2", mi300x, 2, False),  # no op to run at any size
        ("vllm@0.8.4", mi300x, 8, True),
        ("vllm@0.10", mi300x, 8, True),
        ("vllm@0.6.3", h100, 8, True),  # CUDA builds have it
        ("vllm@0.6.3", mi300x, 1, True),  # nothing to reduce
        ("sglang@0.4.2.post4", mi300x, 8, False),
        ("sglang@0.4.2.post4", mi300x, 4, False),
        ("sglang@0.4.2.post4", mi300x, 2, True),  # its 2-GPU path there not read: unchanged
        ("sglang@0.4.5", mi300x, 8, True),
        ("sglang@0.4.2.post4", h100, 8, True),
        ("trtllm", h100, 8, True),
    ]
    assert [custom_ar_runs(engine(e), g, tp) for e, g, tp, _ in cases] == [want for *_, want in cases]
    assert custom_ar_runs(None, mi300x, 8)
    # Named on the command line (--all-reduce-backend): a fork's build with one, or NCCL asked for.
    assert custom_ar_runs(with_all_reduce_backend(engine("vllm@0.6.3"), "custom"), mi300x, 8)
    assert not custom_ar_runs(with_all_reduce_backend(engine("vllm@0.11"), "nccl"), h100, 8)
    assert not custom_ar_runs(with_all_reduce_backend(engine("vllm@0.11"), "RCCL"), mi300x, 8)
    assert with_all_reduce_backend(engine("vllm@0.6.3"), "default") == engine("vllm@0.6.3")

    m = resolve_model("llama3.1-405b")

    def coll(e: object, tokens: int, gpu: object = mi300x) -> float:
        return StepModel(m, gpu, BF16, tp=8, engine=e).collective_s(tokens)  # type: ignore[arg-type]

    # RCCL at 8 GPUs, each size at the least measured at it or any larger: 32,768 B 16.22 us (the row's least);
    # 2,097,152 B (64 tokens) 34.05 us. The custom all-reduce at TP 8, which no MI300X table measures: the TP 4 table's
    # 7.26 us at its smallest + bytes x 2 x 7/8 over 896 GB/s / 2 x 0.7 = 313.6 GB/s.
    def custom(nbytes: int) -> float:
        return 7.26e-6 + nbytes * 2 * 7 / 8 / 313.6e9

    old = engine("vllm@0.6.3")
    assert coll(old, 1) == pytest.approx(2 * 126 * 16.22e-6, rel=1e-9)
    assert coll(old, 64) == pytest.approx(2 * 126 * 34.05e-6, rel=1e-9)
    assert coll(with_all_reduce_backend(old, "custom"), 1) == pytest.approx(2 * 126 * custom(32_768), rel=1e-9)
    assert coll(with_all_reduce_backend(old, "custom"), 64) == pytest.approx(2 * 126 * custom(2_097_152), rel=1e-9)
    assert coll(engine("vllm@0.8.4"), 1) == pytest.approx(2 * 126 * custom(32_768), rel=1e-9)
    # The whole step moves by the collectives alone: 2 x 126 x (16.22 - 7.443) us = 2.21 ms at one token.
    a = StepModel(m, mi300x, BF16, tp=8, engine=old).step(1, 200).t_step_s
    b = StepModel(m, mi300x, BF16, tp=8, engine=with_all_reduce_backend(old, "custom")).step(1, 200).t_step_s
    assert a - b == pytest.approx(2 * 126 * (16.22e-6 - custom(32_768)), rel=1e-6)
    # A GPU whose spec measures no RCCL (MI355X; the MI325X until it took the MI300X's tables, 2026-12-07) keeps the
    # custom all-reduce's figures, and says why.
    mi355x = resolve_gpu("mi355x")
    assert mi355x.nccl_allreduce is None and coll(old, 1, mi355x) == coll(with_all_reduce_backend(old, "custom"), 1, mi355x)
    said = " ".join(StepModel(m, mi355x, BF16, tp=8, engine=old).describe().split())
    assert "RCCL would carry them, but mi355x's spec measures no NCCL all-reduce at TP 8" in said
    # (its custom all-reduce measured at TP 8 since 2026-12-08, which the line names too)
    assert "as measured on mi355x at TP 8 (6.3 us at 24,576 B, linear between the measured sizes) (RCCL would" in said
    assert coll(old, 1, resolve_gpu("mi325x")) == coll(old, 1)  # (the MI300X's RCCL table)
    said = " ".join(StepModel(m, mi300x, BF16, tp=8, engine=old).describe().split())
    assert "2 all-reduces per layer through RCCL, the release having no custom all-reduce here," in said
    assert "16.2 us at 32,768 B" in said
    assert "through RCCL" not in StepModel(m, mi300x, BF16, tp=8, engine=engine("vllm@0.8.4")).describe()


def test_the_rccl_paragraph_is_as_the_step_model_says():
    """docs/simulation.md: Llama-3.1-405B on 8 MI300Xs under vLLM 0.6.3, whose ROCm build has no custom all-reduce."""
    from kvcalc.engine.engines import engine, with_all_reduce_backend

    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    m, g = resolve_model("llama3.1-405b"), resolve_gpu("mi300x")
    rccl = StepModel(m, g, BF16, tp=8, engine=engine("vllm@0.6.3"))
    custom = StepModel(m, g, BF16, tp=8, engine=with_all_reduce_backend(engine("vllm@0.6.3"), "custom"))
    # 2 x 126 layers x 16.22 us; the custom all-reduce's 7.26 us + 32,768 B x 7/4 / 313.6 GB/s = 7.443 us.
    assert round(2 * 126 * 16.22e-3, 2) == 4.09 and round(2 * 126 * (7.26 + 32_768 * 7 / 4 / 313.6e3) * 1e-3, 2) == 1.88
    assert (round(rccl.collective_s(1) * 1e3, 2), round(custom.collective_s(1) * 1e3, 2)) == (4.09, 1.88)
    assert "that is 2 x 126 x 16.22 us = 4.09 ms a step where the custom all-reduce's 7.44 us gave 1.88 ms" in doc
    # One request of dstack's 80-token prompts and 85-token outputs (the corpus's n = 1 run), at mid-output.
    assert [round(s.step(1, 122).t_step_s * 1e3, 1) for s in (custom, rccl)] == [45.5, 47.8]
    assert "the step goes from 45.5 to 47.8 ms, where dstack's October 2024 build of vLLM measured 50.2 ms" in doc


def test_all_reduce_option_is_checked_where_it_is_given(cli, tmp_path, monkeypatch):
    """--all-reduce-backend and kvcalc.toml's all_reduce_backend: a known name, and nccl only where the GPU spec measures NCCL."""
    line = one_line_error(
        cli("roofline", "--model", "llama3.1-70b", "--gpu", "l40s", "--tp", "8", "--all-reduce-backend", "nccl")
    )
    assert "all-reduce backend nccl on l40s" in line and "(--all-reduce-backend)" in line and "mi300x" in line
    one_line_error(
        cli("roofline", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8", "--all-reduce-backend", "ncl"),
        "did you mean nccl",
    )
    one_line_error(
        cli("simulate", "--model", "llama3.1-70b", "--gpu", "l40s", "--tp", "8", "--all-reduce-backend", "nccl"),
        "--all-reduce-backend",
    )
    one_line_error(
        cli("plan", "--model", "llama3.1-70b", "--gpus", "l40s", "--all-reduce-backend", "nccl", "--rate", "1"),
        "--all-reduce-backend",
    )
    ok = cli("roofline", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8", "--all-reduce-backend", "nccl", "--json")
    custom = cli("roofline", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8", "--json")
    assert ok.code == 0 and ok.json()["t_step_s"] > custom.json()["t_step_s"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kvcalc.toml").write_text('all_reduce_backend = "nccll"\n')
    one_line_error(
        cli("roofline", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8"), "key all_reduce_backend", "did you mean nccl"
    )
    (tmp_path / "kvcalc.toml").write_text('all_reduce_backend = "nccl"\n')
    fromfile = cli("roofline", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "8", "--json")
    assert fromfile.code == 0 and fromfile.json()["t_step_s"] == ok.json()["t_step_s"]


def test_the_nccl_norm_paragraph_is_as_the_step_model_says():
    """docs/simulation.md: MiniMax-M2's norm all-reduce at one token under SGLang 0.5.8 on 8 B200s goes through NCCL."""
    from pathlib import Path

    from kvcalc.engine.engines import engine

    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    m, g = resolve_model("minimax-m2"), resolve_gpu("b200")
    s058 = StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8, engine=engine("sglang@0.5.8"))
    s059 = StepModel(m, g, kv_dtype("bf16"), tp=8, ep=8, engine=engine("sglang@0.5.9"))
    # 62 layers x 25.09 us (NCCL, 8 B200s, below 256 B) and x 7.33 us (the custom all-reduce there).
    assert round(s058.collective_s(1) - s059.collective_s(1), 5) == round(62 * (25.09 - 7.33) * 1e-6, 5)
    assert (round(62 * 25.09e-3, 2), round(62 * 7.33e-3, 2)) == (1.56, 0.45)
    assert (
        "one token under 0.5.8 that is 62 x 25.09 us = 1.56 ms a step where the custom all-reduce's 7.33 us gave 0.45 ms" in doc
    )
    # The one-user step at the cookbook runs' context (about 600 prompt and 400 output tokens: 700 at mid-output).
    h100 = StepModel(m, resolve_gpu("h100-sxm"), kv_dtype("bf16"), tp=8, ep=8, engine=engine("sglang@0.5.9"))
    steps = [round(x.step(1, 700).t_step_s * 1e3, 1) for x in (h100, s059, s058)]
    assert steps == [7.9, 7.8, 8.9]
    assert "kvcalc's one-user step, 7.9 ms on the H100s, goes from 7.8 to 8.9 ms on the B200s" in doc


def test_fp8_matmuls_quantize_their_activations_in_kernels_of_their_own():
    from kvcalc.engine.steptime import layer_kernels, quant_kernels

    # Meta's FP8 Llama-3.1-405B stores the MLPs in fp8, attention in 16 bits: 126 layers x gate-up and down.
    big = resolve_model("llama3.1-405b-fp8")
    assert tuple(big.quantization.roles) == ("mlp",)  # type: ignore[union-attr]
    assert quant_kernels(big) == 126 * 2
    # --weight-dtype fp8 on a 16-bit checkpoint: the layout an fp8 config gets, every linear layer (32 layers x
    # QKV, output, gate-up, down).
    assert quant_kernels(resolve_model("llama3.1-8b"), "fp8") == 32 * 4
    assert quant_kernels(resolve_model("llama3.1-8b")) == 0  # 16-bit weights quantize nothing
    # MiniMax-M2: 62 layers of QKV and output projections and the fused experts' two inputs.
    assert quant_kernels(resolve_model("minimax-m2")) == 62 * (2 + 2)
    # The kernels exist only where the matmuls run at fp8: an A100 runs fp8 weights at 16 bits.
    ds = resolve_model("deepseek-v3")
    h200 = StepModel(ds, resolve_gpu("h200"), kv_dtype("fp8"), tp=8)
    a100 = StepModel(ds, resolve_gpu("a100-80gb"), BF16, tp=8)
    assert (h200.compute_dtype, a100.compute_dtype) == ("fp8", "bf16")
    assert h200.kernels.total - layer_kernels(ds).total == 482 and a100.kernels == layer_kernels(ds)
    # Each is one small kernel in a CUDA graph, 2.7 us beside the 16-bit count, but for the 58 x 2 quantizing the
    # routed experts' inputs inside the fused call, whose measured latency holds them: (482 - 116) x 2.7 us; and
    # the 58 fused calls, at fp8, each take the fp8 calls' floor, 10 us over the 16-bit calls' (moe_quant_s).
    assert h200.kernels.moe_inner - layer_kernels(ds).moe_inner == 116 and (h200.quant_kernels, h200.quant_small) == (482, 366)
    assert (h200.kernels.moe_quant, layer_kernels(ds).moe_quant, a100.kernels.moe_quant) == (58, 0, 0)
    # The fp8 calls' floor was measured on NVIDIA's fused MoE; AMD's (aiter), which moe_latency_s alone already
    # over-charges, takes none though its matmuls run at fp8.
    mi300x = StepModel(ds, resolve_gpu("mi300x"), kv_dtype("fp8"), tp=8)
    assert mi300x.compute_dtype == "fp8" and mi300x.kernels.moe_quant == 0 and mi300x.kernels.moe_inner == h200.kernels.moe_inner
    doc = " ".join((Path(__file__).parent.parent / "docs" / "simulation.md").read_text().split())
    # The fp8 calls' floor at their measured median, 38 us: 10 over the 28 us moe_latency_s keeps for 16 bits.
    assert (DEFAULTS.moe_latency_s, DEFAULTS.moe_quant_s) == (28e-6, 10e-6)
    assert "is a median 38.2 us at block-scaled fp8 and 26.1 us at 16 bits, so on NVIDIA GPUs each fp8 call takes 10 us" in doc
    assert h200.layer_gaps_s - layer_latency_s_16(ds, h200) == pytest.approx((482 - 116) * 2.7e-6 + 58 * 10e-6, rel=1e-9)
    assert "366 of them quantizing the fp8 matmuls' activations" in h200.describe()  # 482 less the 116 inside the calls
    # The description names each kind's count a step and its latency, so the kernel latencies add up by hand:
    # 61 x 6 + 3 x 2 + 58 x 3 matmuls, 61 MLA calls, 58 fused calls, and the small kernels: 61 x (4 + 2) + 3 (the
    # dense MLPs' activations) + 58 x (4 + 2) (top-k and the shared experts' activation) + 366 = 1,083.
    said = (
        "546 matmuls at 3.6 us, 61 MLA attention calls at 62 us (as measured on h200), 58 fused routed-expert calls at 38 us (10 of it for "
        "fp8), their own kernels within them, 1,083 small kernels at 2.7 us, 366 of them quantizing the fp8 matmuls' "
        "activations"
    )
    assert said in " ".join(h200.describe().split())
    assert 61 * 6 + 3 * 2 + 58 * 3 == 546 and 61 * 6 + 3 + 58 * 6 + 366 == 1083
    # The fused calls at fp8: 28 us (moe_latency_s) and 10 more (moe_quant_s).
    assert h200.layer_gaps_s == pytest.approx((546 * 3.6 + 61 * 62 + 58 * (28 + 10) + 1083 * 2.7) * 1e-6, rel=1e-12)
    # (With no engine named the query's and the latent's down projections are two matmuls; the releases that run them
    # as one, vLLM from 0.10 and SGLang from 0.4.6, launch 61 matmuls and, at fp8, 61 quantizing kernels fewer.)
    from kvcalc.engine.engines import engine

    v11 = StepModel(ds, resolve_gpu("h200"), kv_dtype("fp8"), tp=8, engine=engine("vllm@0.11"))
    v09 = StepModel(ds, resolve_gpu("h200"), kv_dtype("fp8"), tp=8, engine=engine("vllm@0.9"))
    assert (v09.kernels.gemm - v11.kernels.gemm, v09.quant_kernels - v11.quant_kernels) == (61, 61)
    assert v09.kernels.gemm == 546 and v11.kernels.gemm == 61 * 5 + 3 * 2 + 58 * 3 == 485
    # docs/simulation.md's worked sum, term by term in ms.
    doc = " ".join((Path(__file__).parent.parent / "docs" / "simulation.md").read_text().split())
    assert "(10.693 ms with the MLA call at 59 us; 10.113 ms until the fp8 floor)" in doc
    assert 1.966 + 3.599 + 58 * 28e-3 + 2.924 == pytest.approx(10.113) and 1.966 + 3.599 + 2.204 + 2.924 == pytest.approx(10.693)
    assert "launch 485 matmuls and 305 quantizations" in doc and v11.quant_small == 366 - 61 == 305
    terms = [546 * 3.6e-3, 61 * 62e-3, 58 * 38e-3, 1083 * 2.7e-3]
    assert f"{' + '.join(f'{t:.3f}' for t in terms)} = {h200.layer_gaps_s * 1e3:.3f} ms of kernel latencies a step" in doc
    assert "quantizing" not in a100.describe()


def test_mxfp4_experts_take_the_quantized_calls_floor_where_vllm_runs_them_with_triton():
    """vLLM from 0.10.1 runs MXFP4 experts with OpenAI's Triton kernel on Hopper (0.11.0's get_mxfp4_backend:
    Marlin below compute capability 9, FlashInfer on 10), whose measured calls' floor is the fp8 calls' (docs/
    simulation.md): each of gpt-oss-120b's 36 MoE layers takes moe_quant_s there, and nowhere else."""
    from kvcalc.engine.engines import engine

    oss = resolve_model("gpt-oss-120b")
    assert oss.moe is not None and oss.moe.num_moe_layers == 36 and oss.quantization.method == "mxfp4"  # type: ignore[union-attr]

    def quant_calls(gpu: str, release: str | None, ep: int = 1) -> int:
        sm = StepModel(oss, resolve_gpu(gpu), BF16, tp=ep, ep=ep, engine=engine(release) if release else None)
        return sm.kernels.moe_quant

    assert quant_calls("h100-sxm", "vllm@0.11") == quant_calls("h200", "vllm@0.10") == 36
    assert quant_calls("a100-80gb", "vllm@0.11") == quant_calls("b200", "vllm@0.11") == 0  # Marlin, FlashInfer
    # SGLang from 0.5 runs gpt-oss's experts with the same kernel off SM100 (its 'triton_kernel' MoE runner).
    assert quant_calls("h100-sxm", "sglang@0.5.6") == 36 and quant_calls("b200", "sglang@0.5.6") == 0
    assert quant_calls("h100-sxm", "sglang@0.4.7.post1") == quant_calls("h100-sxm", None) == 0
    assert quant_calls("h100-sxm", "vllm@0.11", ep=2) == 0  # expert parallelism: outside the measured tables
    h100 = StepModel(oss, resolve_gpu("h100-sxm"), BF16, engine=engine("vllm@0.11"))
    bare = StepModel(oss, resolve_gpu("h100-sxm"), BF16)  # no engine named: which kernel runs is not known
    assert h100.layer_gaps_s - bare.layer_gaps_s == pytest.approx(36 * DEFAULTS.moe_quant_s)
    # Their share of the peak stays 0.15 (the width form describes the kernel's calls worse than one share).
    assert h100.moe_eta(h100.c) == bare.moe_eta(bare.c) == 0.15
    assert "36 fused routed-expert calls at 38 us (10 of it for MXFP4)" in " ".join(h100.describe().split())


def test_sglang_runs_fp8_experts_on_b200_with_flashinfers_kernel_at_its_own_floor_and_share(monkeypatch):
    """SGLang picks FlashInfer's TensorRT-LLM MoE runner on SM100 for DeepSeek-V3's fp8 experts from 0.5.4.post1, and
    Qwen3-MoE's and Qwen3-Next's from 0.5.6, without an all-to-all backend (server_args.py, read in 0.5.4 to 0.5.14;
    arg_groups from 0.5.15, read in 0.5.16 to 0.5.19 and 0.5.23; engines.SGLANG_FLASHINFER_MOE): those calls take
    moe_flashinfer_s in place of moe_latency_s + moe_quant_s, and their share 0.180 n / (n + 217)."""
    from kvcalc.engine.engines import engine

    r1 = resolve_model("deepseek-r1")

    def sm(model, gpu: str, release: str, ep: int = 1) -> StepModel:
        return StepModel(model, resolve_gpu(gpu), BF16, tp=8, ep=ep, engine=engine(release))

    on = sm(r1, "b200", "sglang@0.5.6")
    assert on.moe_flashinfer and (on.kernels.moe_flashinfer, on.kernels.moe_quant) == (58, 0)
    assert on.moe_eta(on.c) == 0.180 * 256 / (256 + 217)  # 2,048-wide experts, a 256-wide slice a GPU at TP 8
    assert DEFAULTS.moe_flashinfer_s == 22e-6
    # The Triton path as it was: 58 calls at 28 + 10 us. On FlashInfer's: 58 at 22 us.
    off = sm(r1, "b200", "sglang@0.5.3")
    assert not off.moe_flashinfer and (off.kernels.moe_flashinfer, off.kernels.moe_quant) == (0, 58)
    # (0.5.3, outside the releases whose own MLA call is measured, also takes vLLM's 18.5 us MLA figure where 0.5.6
    # takes SGLang's 15: 61 x 3.5 us more; and 0.5.6 fuses DeepSeek's all-reduces with the norms after them on B200,
    # which 0.5.3 does not: 2 x 61 - 1 small kernels of 2.7 us more.)
    assert on.ar_fusion and not off.ar_fusion
    # (And 0.5.3 runs DeepSeek's shared expert inside its Triton call, sglang_shared_fused, where 0.5.6's FlashInfer runner
    # does not: the shared expert's two matmuls at B200's 2.9 us and its four small kernels, activation and fp8
    # quantization, at 2.7 us, fewer in each of 58 layers.)
    assert off.shared_fused and not on.shared_fused
    assert off.layer_gaps_s - on.layer_gaps_s == pytest.approx(
        58 * (28e-6 + 10e-6 - 22e-6) + 61 * 3.5e-6 + 121 * 2.7e-6 - 58 * (2 * 2.9e-6 + 4 * 2.7e-6)
    )
    assert "58 fused routed-expert calls at 22 us (FlashInfer's TensorRT-LLM kernel)" in " ".join(on.describe().split())
    doc = " ".join((Path(__file__).parent.parent / "docs" / "simulation.md").read_text().split())
    step = (round(on.step(1, 1000).t_step_s * 1e3, 2), round(off.step(1, 1000).t_step_s * 1e3, 2))
    assert step == (7.96, 8.46)
    assert (
        "one request of 1,000 tokens, 7.96 ms a step, where Triton's figures (as SGLang 0.5.3 runs it) give 8.46 (9.43 until "
        "0.5.3's shared expert, which it runs inside the Triton call where 0.5.6's FlashInfer runner does not, left the "
        "step's kernels, 2026-12-07; 11.31 "
        "and 12.24 until an MLA call took its GPU's measured floor, 2026-12-05: SGLang 0.5.6's own 15 us on B200, 0.5.3's "
        "vLLM's 16 us; 8.63 and 9.62 until SGLang 0.5.6's all-reduce and norm fusion" in doc
    )
    assert "8.30 and 9.62 until an MLA layer's two down projections counted as the one matmul both releases run" in doc
    assert "its calls of 1 to 16 tokens measure a median 21.9 us beyond their bytes and math, not the Triton calls' 38" in doc
    # Not on Hopper, not under vLLM, not for other models' experts, not at 16 bits, not past the releases read.
    assert not sm(r1, "h200", "sglang@0.5.6").moe_flashinfer and not sm(r1, "b200", "vllm@0.11").moe_flashinfer
    assert not sm(resolve_model("minimax-m2"), "b200", "sglang@0.5.9").moe_flashinfer
    assert not sm(resolve_model("qwen3-235b-a22b"), "b200", "sglang@0.5.9").moe_flashinfer
    assert sm(resolve_model("qwen3-235b-a22b-fp8"), "b200", "sglang@0.5.9").moe_flashinfer
    # Qwen3.5's MoE checkpoints are in Qwen3-Next's branch from the first release read that serves them (0.5.9, 0.5.10
    # and 0.5.14: Qwen3_5MoeForConditionalGeneration); its fp8 experts take the kernel, its 16-bit ones do not.
    q35 = resolve_model("qwen3.5-35b-a3b")
    assert StepModel(q35, resolve_gpu("b200"), BF16, tp=2, weight_dtype="fp8", engine=engine("sglang@0.5.9")).moe_flashinfer
    assert not StepModel(q35, resolve_gpu("b200"), BF16, tp=2, engine=engine("sglang@0.5.9")).moe_flashinfer
    # 0.5.4 runs DeepSeek's fp8 experts on Triton ("flashinfer_trtllm" only for modelopt_fp4); 0.5.4.post1 on, on
    # FlashInfer's kernel ("Use flashinfer_trtllm as MoE runner backend on sm100 for DeepseekV3ForCausalLM", for any
    # quantization in post1 to post3, fp8 and the modelopt ones in 0.5.5): 58 calls at 22 us, not 28 + 10.
    e054, e055 = sm(r1, "b200", "sglang@0.5.4"), sm(r1, "b200", "sglang@0.5.4.post1")
    assert not e054.moe_flashinfer and e055.moe_flashinfer and e055.c == e054.c
    # (0.5.4's Triton call also holds the shared expert, sglang_shared_fused: 2 matmuls at 2.9 us and 4 small kernels
    # fewer a layer; 8.89 ms a step until then, 2026-12-07.)
    assert e054.shared_fused and not e055.shared_fused
    assert e054.layer_gaps_s - e055.layer_gaps_s == pytest.approx(58 * (28e-6 + 10e-6 - 22e-6) - 58 * (2 * 2.9e-6 + 4 * 2.7e-6))
    assert (round(e054.step(1, 1000).t_step_s * 1e3, 2), round(e055.step(1, 1000).t_step_s * 1e3, 2)) == (7.92, 7.96)
    # Qwen3-MoE's fp8 experts not before 0.5.6 (its branch sets no runner in 0.5.5).
    q3 = resolve_model("qwen3-235b-a22b-fp8")
    assert not sm(q3, "b200", "sglang@0.5.5").moe_flashinfer and sm(q3, "b200", "sglang@0.5.6").moe_flashinfer
    # Every release read after 0.5.14 keeps the choice (arg_groups/overrides.py _deepseek_moe_quant_resolution and
    # _qwen3_moe_family_overrides in 0.5.16 to 0.5.18; arg_groups/model_overrides/qwen3_moe.py in 0.5.19 and 0.5.23);
    # until 2026-12-06 kvcalc took it for 0.5.6 to 0.5.14 only.
    for rel in ("sglang@0.5.16", "sglang@0.5.17", "sglang@0.5.18", "sglang@0.5.19", "sglang"):
        assert sm(r1, "b200", rel).moe_flashinfer and sm(q3, "b200", rel).moe_flashinfer, rel
    # GLM-5 (GlmMoeDsaForCausalLM) in DeepSeek's list from 0.5.9; DeepSeek-V3.2 (DeepseekV32ForCausalLM) from 0.5.12,
    # which the record of 0.5.10 to 0.5.12 does not follow (0.5.10 and 0.5.11 lack it), so from sglang@0.5.14.
    v32, glm5 = resolve_model("deepseek-v3.2"), resolve_model("glm-5")

    def fp8(model, release: str) -> bool:
        return StepModel(model, resolve_gpu("b200"), BF16, tp=8, weight_dtype="fp8", engine=engine(release)).moe_flashinfer

    assert [fp8(glm5, r) for r in ("sglang@0.5.8", "sglang@0.5.9", "sglang")] == [False, True, True]
    assert [fp8(v32, r) for r in ("sglang@0.5.9", "sglang@0.5.12", "sglang@0.5.14", "sglang")] == [False, False, True, True]
    # Not GLM-4.5/4.6's fp8 experts, nor MiniMax-M2's, in any release read.
    assert not any(fp8(resolve_model(m), "sglang") for m in ("glm-4.6", "minimax-m2"))
    # docs/engines.md's figures: from 0.5.15 on, Qwen3-235B-A22B-FP8's 94 MoE layers take 94 calls at 22 us, not 28 + 10
    # (1.504 ms), as the same record priced them before (no release of the table: the Triton runner's figures).
    from kvcalc.engine import engines as eng

    now = sm(q3, "b200", "sglang@0.5.16").step(1, 1000).t_step_s
    r1_now = sm(r1, "b200", "sglang@0.5.16").step(1, 1000).t_step_s
    monkeypatch.setattr(eng, "SGLANG_FLASHINFER_MOE", {})
    before = sm(q3, "b200", "sglang@0.5.16").step(1, 1000).t_step_s
    r1_before = sm(r1, "b200", "sglang@0.5.16").step(1, 1000).t_step_s
    assert (round(r1_before * 1e3, 2), round(r1_now * 1e3, 2)) == (8.89, 7.96)
    assert before - now == pytest.approx(94 * 16e-6, abs=2e-5)
    assert (round(before * 1e3, 2), round(now * 1e3, 2)) == (9.41, 7.91)
    text = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    assert "one request of 1,000 tokens, 8.89 -> 7.96 ms a step under 0.5.4.post1 to 0.5.5 and from 0.5.15" in text
    assert "Qwen3-235B-A22B-FP8's 9.41 -> 7.91 ms from 0.5.15" in text


def test_vllm_runs_block_fp8_experts_on_b200_with_flashinfers_kernel_from_0_15():
    """vLLM's fp8 MoE oracle takes FlashInfer's TensorRT-LLM kernel first on compute capability 10 from 0.15.0 (0.14
    only with VLLM_USE_FLASHINFER_MOE_FP8 set), for block-fp8 experts under DeepSeek's grouped sigmoid router and
    Qwen3's softmax one, MiniMax-M2's biased top-k in 0.15-0.16 and from 0.19 (fused_moe/oracle/fp8.py and
    flashinfer_trtllm_moe.py, read 0.14.0 to 0.22.1 and 0.34.0; engines.VLLM_FLASHINFER_MOE)."""
    from kvcalc.engine.engines import engine

    b200 = resolve_gpu("b200")

    def sm(name: str, release: str, tp: int = 8, **kw) -> StepModel:
        return StepModel(resolve_model(name), b200, BF16, tp=tp, engine=engine(release), **kw)

    r1 = [sm("deepseek-r1", r) for r in ("vllm@0.14", "vllm@0.15", "vllm@0.18", "vllm")]
    assert [s.moe_flashinfer for s in r1] == [False, True, True, True]
    # 58 MoE layers at 22 us a call, not 28 + 10: 0.928 ms less at one request.
    assert r1[0].layer_gaps_s - r1[1].layer_gaps_s == pytest.approx(58 * 16e-6)
    assert [round(s.step(1, 1000).t_step_s * 1e3, 2) for s in r1[:2]] == [9.43, 8.50]
    q3 = [sm("qwen3-235b-a22b-fp8", r, 4) for r in ("vllm@0.14", "vllm@0.21")]
    assert [s.moe_flashinfer for s in q3] == [False, True]
    assert [round(s.step(1, 1000).t_step_s * 1e3, 2) for s in q3] == [10.24, 8.74]
    # Its share of the fp8 peak at 1,536 / 4 = 384 a GPU: FlashInfer's 0.180 x 384 / (384 + 217), Triton's 0.311 x
    # 384 / (384 + 459) (MOE_ETA).
    assert q3[1].moe_eta(q3[1].c) == pytest.approx(0.115, abs=5e-4) and q3[0].moe_eta(q3[0].c) == pytest.approx(0.142, abs=5e-4)
    mm = {r: sm("minimax-m2", r, 4).moe_flashinfer for r in ("vllm@0.15", "vllm@0.17", "vllm@0.18", "vllm@0.20", "vllm")}
    assert mm == {"vllm@0.15": True, "vllm@0.17": False, "vllm@0.18": False, "vllm@0.20": True, "vllm": True}
    # Not experts quantized online (per-tensor scales), not on Hopper, not with EP.
    assert not sm("qwen3-235b-a22b", "vllm", 4, weight_dtype="fp8").moe_flashinfer
    assert not StepModel(resolve_model("deepseek-r1"), resolve_gpu("h200"), BF16, tp=8, engine=engine("vllm")).moe_flashinfer
    assert not sm("deepseek-r1", "vllm", ep=8).moe_flashinfer
    text = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    assert "one request of 1,000 tokens: 9.43 ms a step under `vllm@0.14`, 8.50 from `vllm@0.15`" in text
    assert "Qwen3-235B-A22B-FP8 at TP 4, 10.24 and 8.74 ms" in text
    assert "(0.115 against 0.142 of the fp8 peak at 384 a GPU)" in text


def test_16_bit_experts_on_b200_take_flashinfers_16_bit_kernel_where_the_release_picks_it():
    """SGLang's Qwen branches take unquantized checkpoints to FlashInfer's TensorRT-LLM MoE runner on SM100 from 0.5.9,
    DeepSeek's list from 0.5.14, GLM-4.5/4.6 from 0.5.16 (engines.SGLANG_FLASHINFER_MOE_BF16): those calls take
    moe_flashinfer_bf16_s (8 us; 7.8 measured beyond their bytes over 1 to 16 tokens in AIConfigurator's vLLM 0.24
    B200 table, bench/fit_moe_eta.py DIR b200-flashinfer-bf16) in place of moe_latency_s, and the share 0.399 n /
    (n + 149)."""
    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import MOE_ETA

    b200 = resolve_gpu("b200")

    def sm(name: str, release: str, tp: int = 8, gpu=b200, **kw) -> StepModel:
        return StepModel(resolve_model(name), gpu, BF16, tp=tp, engine=engine(release), **kw)

    assert DEFAULTS.moe_flashinfer_bf16_s == 8e-6 and MOE_ETA["bf16_flashinfer"] == (0.399, 149.0)
    old, new = sm("qwen3-235b-a22b", "sglang@0.5.8"), sm("qwen3-235b-a22b", "sglang@0.5.9")
    assert (old.moe_runner, new.moe_runner) == ("default", "flashinfer_trtllm_bf16")
    assert new.kernels.moe_flashinfer_bf16 == new.kernels.moe == 94 and new.kernels.moe_flashinfer == 0
    # 94 calls at 8 us where Triton's were 28: 1.88 ms less at one request (both releases alike otherwise).
    assert old.layer_gaps_s - new.layer_gaps_s == pytest.approx(94 * 20e-6)
    assert [round(s.step(1, 1000).t_step_s * 1e3, 2) for s in (old, new)] == [8.39, 6.51]
    # 1,536-wide experts over 8 GPUs: 192 a GPU.
    assert new.moe_eta(new.c) == pytest.approx(0.399 * 192 / (192 + 149))
    assert "94 fused routed-expert calls at 8 us (FlashInfer's TensorRT-LLM 16-bit kernel)" in " ".join(new.describe().split())
    runner = {
        (m, r): sm(m, r, 4 if m == "glm-4.7-flash" else 8).moe_runner == "flashinfer_trtllm_bf16"
        for m in ("glm-4.6", "glm-5", "glm-4.7-flash")
        for r in ("sglang@0.5.12", "sglang@0.5.14", "sglang@0.5.16", "sglang")
    }
    assert [m for (m, r), on in runner.items() if on] == ["glm-4.6", "glm-4.6", "glm-5", "glm-5", "glm-5"]
    assert runner[("glm-4.6", "sglang@0.5.16")] and not runner[("glm-4.6", "sglang@0.5.14")]
    assert runner[("glm-5", "sglang@0.5.14")] and not runner[("glm-5", "sglang@0.5.12")]
    # Not fp8 experts (the fp8 kernel's figures), not on Hopper, not with EP.
    assert sm("qwen3-235b-a22b-fp8", "sglang@0.5.9").moe_runner == "flashinfer_trtllm"
    assert sm("qwen3-235b-a22b", "sglang@0.5.9", gpu=resolve_gpu("h200")).moe_runner == "default"
    assert sm("qwen3-235b-a22b", "sglang@0.5.9", ep=8).moe_runner == "default"
    text = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    assert (
        "Qwen3-235B-A22B in bf16 at TP 8 on B200s, one request of 1,000 tokens: 8.39 ms a step under 0.5.8, 6.51 under 0.5.9"
        in text
    )
    # vLLM from 0.20 on B200 (its unquantized oracle's first choice there: engines.VLLM_FLASHINFER_MOE_BF16), for DeepSeek's
    # router and the softmax one (Mixtral's too); on Hopper 0.20 to 0.22 run FlashInfer's CUTLASS kernel, which no table
    # times, and kvcalc keeps Triton's figures.
    v = {r: sm("qwen3-235b-a22b", r, 4) for r in ("vllm@0.18", "vllm@0.20", "vllm@0.21", "vllm")}
    assert [s.moe_runner for s in v.values()] == ["default"] + ["flashinfer_trtllm_bf16"] * 3
    assert [round(v[r].step(1, 1000).t_step_s * 1e3, 2) for r in ("vllm@0.18", "vllm@0.20")] == [9.65, 7.77]
    assert sm("mixtral-8x7b", "vllm", 2).moe_runner == "flashinfer_trtllm_bf16"
    assert sm("qwen3-235b-a22b", "vllm@0.21", 4, gpu=resolve_gpu("h200")).moe_runner == "default"
    assert (
        "Qwen3-235B-A22B in bf16 at TP 4 on B200s, one request of 1,000 tokens: 9.65 ms a step under `vllm@0.18`, 7.77 "
        "from `vllm@0.20`" in text
    )


def layer_latency_s_16(model, sm):
    from kvcalc.engine.steptime import layer_latency_s

    return layer_latency_s(model, sm.c)


def test_the_busiest_rank_figures_docs_simulation_md_quotes():
    from kvcalc.engine.weights import busiest_rank_experts, expected_experts

    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "simulation.md").read_text().split())
    # MiniMax-M2: 256 experts, top 8, over 8 ranks of 32.
    got = [(round(busiest_rank_experts(256, 8, b, 8), 2), round(float(expected_experts(256, 8, b)) / 8, 1)) for b in (1, 16, 100)]
    assert got == [(2.54, 1.0), (16.71, 12.7), (31.9, 30.7)]
    # One token: 8 of 256 experts hit, 1 a rank on average (8 x 32 / 256).
    assert 256 * (1 - (1 - 8 / 256) ** 1) / 8 == 1.0
    assert "1 a rank on average, but 2.54 on the busiest" in text
    assert "at 16 tokens 16.7 against 12.7; at 100 tokens 31.9 of 32 against 30.7" in text


# AMD aiter's tuned fp8 block-scale GEMMs on MI300X at 16 tokens (ROCm/aiter#3324, aiter/configs/model_configs/
# a8w8_blockscale_tuned_gemm_{qwen36_27b,qwen3_vl_32b,qwen3_vl_235b}.csv at 466ccb7): (N, K, microseconds).
MI300X_FP8_GEMMS = [
    (5120, 768, 5.13),
    (4096, 1024, 6.24),
    (5120, 1024, 5.91),
    (1280, 4096, 14.66),
    (1280, 5120, 17.47),
    (5120, 1536, 7.71),
    (4096, 2048, 8.99),
    (2304, 4096, 15.04),
    (2048, 5120, 17.31),
    (5120, 2048, 9.36),
    (5120, 2176, 11.23),
    (2560, 5120, 17.46),
    (5120, 3072, 11.75),
    (5120, 3200, 13.69),
    (4096, 4096, 15.54),
    (3584, 5120, 17.66),
    (4608, 4096, 15.49),
    (4096, 5120, 17.74),
    (5120, 4096, 16.13),
    (5120, 4352, 14.56),
    (4352, 5120, 17.6),
    (5120, 5120, 17.98),
    (5120, 6400, 20.56),
    (6400, 5120, 18.14),
    (7168, 5120, 18.64),
    (8192, 5120, 19.17),
    (5120, 8704, 28.84),
    (8704, 5120, 19.09),
    (5120, 12800, 41.5),
    (12800, 5120, 22.26),
    (17408, 5120, 27.35),
    (25600, 5120, 36.63),
]


def _mi300x_gemm_rows():
    """bench/data/mi300x-aiter-fp8-gemm-466ccb7.csv: (M, N, K, seconds)."""
    import csv

    path = Path(__file__).resolve().parent.parent / "bench" / "data" / "mi300x-aiter-fp8-gemm-466ccb7.csv"
    with path.open() as fh:
        return [(int(r["M"]), int(r["N"]), int(r["K"]), float(r["us"]) * 1e-6) for r in csv.DictReader(fh)]


class AmdGemmFit:
    """kvcalc's model of AMD aiter's fp8 block-scale GEMM rows ``rows`` ((M, N, K, seconds)) on a GPU of ``bw`` B/s
    and ``peak`` dense fp8 FLOP/s, as bench/fit_gemm_mi300x.py fits it: weight bytes N x K fp8 and a 4-byte scale per
    128 x 128 block, FLOPs 2 M N K; latency + bytes / (bw x share) and FLOPs / (peak x eta), added (or as their
    root-sum-square); each M weighted alike in the squared log error."""

    def __init__(self, rows, bw: float, peak: float):
        import numpy as np

        self.m, n, k, self.t = (np.array([r[i] for r in rows], dtype=float) for i in range(4))
        self.by, self.fl = n * k + np.ceil(n / 128) * np.ceil(k / 128) * 4, 2 * self.m * n * k
        self.w = np.array([1 / np.sum(self.m == x) for x in self.m])
        self.bw, self.peak = bw, peak

    def err(self, lat_us, share, eta, added=True, by=None, fl=None, t=None):
        import numpy as np

        by, fl, t = (self.by if by is None else by), (self.fl if fl is None else fl), (self.t if t is None else t)
        a, b = by / (self.bw * share), fl / (self.peak * eta)
        return np.log((lat_us * 1e-6 + (a + b if added else np.sqrt(a * a + b * b))) / t)

    def cost(self, *p, added=True):
        import numpy as np

        e = self.err(*p, added=added)
        return float(np.sum(self.w * e * e))

    def is_grid_optimum(self, fitted) -> bool:
        """No neighbour on the fit's grid (latency to 0.1 us, share to 0.01, eta to 0.005) does better."""
        best = self.cost(*fitted)
        return all(
            best < self.cost(*(p + sign * q for p, q in zip(fitted, d)))
            for d in ((0.1, 0, 0), (0, 0.01, 0), (0, 0, 0.005))
            for sign in (1, -1)
        )

    def bands(self, e) -> list[float]:
        """The median model / measured by range of M (bench/fit_gemm_mi300x.py's bands)."""
        import numpy as np

        ranges = ((16, 16), (32, 64), (80, 128), (144, 256), (288, 1024), (2048, 16384))
        return [round(float(np.exp(np.median(e[(self.m >= lo) & (self.m <= hi)]))), 2) for lo, hi in ranges]


def test_the_mi300x_matmul_figures_are_the_fit_of_the_cited_kernel_times():
    import numpy as np

    rows = _mi300x_gemm_rows()
    # The data file's 16-token rows are the cited tables' own (written out above, to 0.01 us).
    at16 = {(n, k): round(s * 1e6, 2) for m, n, k, s in rows if m == 16}
    assert at16 == {(n, k): us for n, k, us in MI300X_FP8_GEMMS}
    fit = AmdGemmFit(rows, 5.3e12, 2614.9e12)
    assert len(fit.t) == 576 and len(set(fit.m)) == 18
    g = resolve_gpu("mi300x").gemm
    assert g is not None
    fitted = (g.latency_us, g.bandwidth_share, g.compute_share)
    assert fitted == (7.4, 0.58, 0.28) and g.combine == "sum"
    # A least-squares fit in log error, each M weighted alike: no neighbour on the fit's grid does better.
    assert fit.is_grid_optimum(fitted)
    # The root-sum-square's own best (bench/fit_gemm_mi300x.py) fits worse: the two terms add on this GPU.
    assert fit.cost(8.1, 0.45, 0.255, added=False) > 1.25 * fit.cost(*fitted)
    e = fit.err(*fitted)
    assert fit.bands(e) == [1.0, 1.05, 1.0, 0.98, 0.91, 1.12]
    assert round(float(np.median(abs(e))), 3) == 0.131
    assert round(float(np.median(abs(fit.err(8.1, 0.45, 0.255, added=False)))), 3) == 0.158
    # The step model takes them in place of the pooled figures; for fp8 matmuls, the tables' precision,
    # the compute share too, and adds the two terms. 16-bit matmuls keep eta_c and the root-sum-square.
    mi = resolve_gpu("mi300x")
    assert g.compute_dtype == "fp8"
    sm = StepModel(resolve_model("llama3.1-8b"), mi, BF16, weight_dtype="fp8")
    assert sm.compute_dtype == "fp8"
    assert (sm.c.gemm_latency_s, sm.c.eta_gemm, sm.c.eta_c_gemm, sm.mm_added) == (7.4e-6, 0.58, 0.28, True)
    assert sm.eta_mm(sm.c) == 0.28
    b = StepModel(resolve_model("llama3.1-8b"), mi, BF16)
    assert (b.c.gemm_latency_s, b.c.eta_gemm, b.c.eta_c_gemm, b.mm_added, b.eta_mm(b.c)) == (7.4e-6, 0.58, None, False, 0.70)
    h = StepModel(resolve_model("llama3.1-8b"), resolve_gpu("h100-sxm"), BF16, weight_dtype="fp8")
    assert (h.c.eta_c_gemm, h.mm_added, h.eta_mm(h.c)) == (None, False, 0.35)


# AMD aiter's tuned fp8 block-scale GEMMs on gfx950 with 256 compute units (ROCm/aiter at e4048607a535,
# aiter/configs/model_configs/a8w8_blockscale_tuned_gemm_ds_v3.csv, its gfx950 rows): (M, N, K, microseconds).
MI355X_FP8_GEMMS = [
    (16, 7168, 2048, 8.5525),
    (16, 4608, 7168, 14.5213),
    (16, 7168, 16384, 49.2174),
    (16, 36864, 7168, 53.9674),
    (1, 7168, 2048, 7.9966),
    (8, 36864, 7168, 52.7222),
]


def test_the_mi355x_matmul_figures_are_the_fit_of_the_cited_kernel_times():
    import csv

    import numpy as np

    path = Path(__file__).resolve().parent.parent / "bench" / "data" / "mi355x-aiter-fp8-gemm-e404860.csv"
    with path.open() as fh:
        every = [(int(r["M"]), int(r["N"]), int(r["K"]), float(r["us"]) * 1e-6) for r in csv.DictReader(fh)]
    # The data file's rows are the cited table's own (a few written out above).
    got = {(m, n, k): round(s * 1e6, 4) for m, n, k, s in every}
    assert all(got[(m, n, k)] == us for m, n, k, us in MI355X_FP8_GEMMS)
    # The fit takes what the MI300X's took: 16 to 16,384 tokens, 3.9 MB of weights or more (the MI300X's smallest,
    # 5,120 x 768, is 3,932,160 B; the gfx950 rows also time matrices of 0.26 MB and 1, 2, 4 and 8 tokens).
    sizes = {16, 32, 48, 64, 80, 96, 128, 160, 192, 256, 384, 512, 768, 1024, 2048, 4096, 8192, 16384}
    rows = [r for r in every if r[0] in sizes and r[1] * r[2] >= 3.9e6]
    fit = AmdGemmFit(rows, 8e12, 5033.2e12)
    assert len(fit.t) == 730 and len(set(fit.m)) == 18 and len({(r[1], r[2]) for r in rows}) == 52
    nk = np.array([r[1] * r[2] for r in rows], dtype=float)
    assert (round(float(nk.min()) / 1e6, 1), round(float(nk.max()) / 1e6)) == (4.1, 264)
    g = resolve_gpu("mi355x").gemm
    assert g is not None
    fitted = (g.latency_us, g.bandwidth_share, g.compute_share)
    assert fitted == (7.6, 0.72, 0.25) and g.combine == "sum" and g.compute_dtype == "fp8"
    assert fit.is_grid_optimum(fitted)
    # The root-sum-square's own best (bench/fit_gemm_mi300x.py mi355x) fits worse, as on the MI300X.
    assert fit.cost(8.0, 0.56, 0.23, added=False) > fit.cost(*fitted)
    e = fit.err(*fitted)
    assert fit.bands(e) == [1.21, 1.06, 1.06, 1.04, 0.96, 1.02]
    assert round(float(np.median(abs(e))), 3) == 0.150
    assert round(float(np.median(abs(fit.err(8.0, 0.56, 0.23, added=False)))), 3) == 0.156
    # The 1-, 2-, 4- and 8-token rows, which the fit leaves out: the figures charge 1.24-1.31 of what they measured.
    small = {}
    for tokens in (1, 2, 4, 8):
        r = [x for x in every if x[0] == tokens and x[1] * x[2] >= 3.9e6]
        nn, kk, tt = (np.array([x[i] for x in r], dtype=float) for i in (1, 2, 3))
        by = nn * kk + np.ceil(nn / 128) * np.ceil(kk / 128) * 4
        es = fit.err(*fitted, by=by, fl=2 * tokens * nn * kk, t=tt)
        small[tokens] = (len(r), round(float(np.exp(np.median(es))), 2))
    assert small == {1: (46, 1.31), 2: (46, 1.28), 4: (46, 1.25), 8: (46, 1.24)}
    # The step model takes them for an fp8 checkpoint's matmuls on the MI355X, as on the MI300X.
    sm = StepModel(resolve_model("llama3.1-8b"), resolve_gpu("mi355x"), BF16, weight_dtype="fp8")
    assert (round(sm.c.gemm_latency_s * 1e6, 9), sm.c.eta_gemm, sm.c.eta_c_gemm, sm.mm_added) == (7.6, 0.72, 0.25, True)


def test_matmuls_add_where_the_gpu_measures_them_so():
    # matmul_s: the root-sum-square of the weights' time and the math's, or on a GPU whose spec says
    # combine "sum" their sum: 3 and 4 ms make 5 ms, or 7.
    assert matmul_s(3.0, 4.0) == 5.0 and matmul_s(3.0, 4.0, added=True) == 7.0
    # A decode step of fp8 matmuls on MI300X: its matmul term is the weights' time plus the math's, at the
    # spec's share of the fp8 peak, where the root-sum-square would take less.
    m, mi = resolve_model("llama3.1-70b"), resolve_gpu("mi300x")
    sm = StepModel(m, mi, BF16, weight_dtype="fp8")
    s = sm.step(64, 1024)
    w = sm.weights(64) / (5.3e12 * 0.58)
    f = sm.mm * 64 / (2614.9e12 * 0.28)
    # Swapping the sum for the root-sum-square (the same shares) takes exactly (w + f) - rss(w, f) off the step.
    rss_gpu = dataclasses.replace(mi, gemm=dataclasses.replace(mi.gemm, combine="rss"))
    rss = StepModel(m, rss_gpu, BF16, weight_dtype="fp8").step(64, 1024)
    assert abs((s.t_step_s - rss.t_step_s) - ((w + f) - (w * w + f * f) ** 0.5)) < 1e-12


def test_the_h200_matmul_check_is_as_the_doc_says():
    # docs/simulation.md, "The matmul figures, checked on an H200": each quoted figure recomputed from
    # bench/data/h200-gemm-cold-2026-12-04.csv (bench/gemm_cold.py's output) and the H200 spec's own
    # gemm line, read from gpu_specs/h200.yaml, not from the step model.
    import csv
    import statistics

    import yaml

    root = Path(__file__).resolve().parent.parent
    rows = list(csv.DictReader((root / "bench" / "data" / "h200-gemm-cold-2026-12-04.csv").open()))
    spec = yaml.safe_load((root / "gpu_specs" / "h200.yaml").read_text())
    lat, share = spec["gemm"]["latency_us"], spec["gemm"]["bandwidth_share"]
    assert (lat, share) == (3.6, 0.83)
    bw = 4.8e12  # the H200's datasheet bandwidth, bytes/s
    doc = " ".join((root / "docs" / "simulation.md").read_text().split())

    def f(r, k):
        return float(r[k])

    shapes = {(r["n"], r["k"]) for r in rows}
    assert len(rows) == 84 and len(shapes) == 28 and {r["m"] for r in rows} == {"1", "8", "32"}
    l2 = 60e6
    below = [r for r in rows if f(r, "weight_bytes") < l2]
    above = [r for r in rows if f(r, "weight_bytes") >= l2]
    slow = [f(r, "cold_us") / f(r, "warm_us") - 1 for r in below]
    worst = max(below, key=lambda r: f(r, "cold_us") / f(r, "warm_us"))
    assert round(statistics.median(slow) * 100) == 25 and round(max(slow) * 100) == 46
    assert (worst["m"], round(f(worst, "weight_bytes") / 1e6), worst["cold_us"], worst["warm_us"]) == (
        "8",
        42,
        "15.442",
        "10.557",
    )
    assert round(max(abs(f(r, "cold_us") / f(r, "warm_us") - 1) for r in above) * 100, 1) == 1.3
    aic = [r for r in rows if r["aic_us"]]
    assert len(aic) == 54
    vs_cold = [f(r, "aic_us") / f(r, "cold_us") - 1 for r in aic]
    vs_warm = [f(r, "aic_us") / f(r, "warm_us") - 1 for r in aic]
    aic_below = [r for r in aic if f(r, "weight_bytes") < l2]
    assert round(statistics.median(vs_cold) * 100, 1) == -1.9 and round(statistics.median(vs_warm) * 100, 1) == 9.3
    assert round(statistics.median(f(r, "aic_us") / f(r, "cold_us") - 1 for r in aic_below) * 100, 1) == -4.3
    assert round(statistics.median(f(r, "aic_us") / f(r, "warm_us") - 1 for r in aic_below) * 100, 1) == 17.4

    def line(r):  # 3.6 us + bytes / (0.83 x 4.8 TB/s), in us
        return lat + f(r, "weight_bytes") / (share * bw) * 1e6

    err = [line(r) / f(r, "cold_us") - 1 for r in rows]
    assert round(statistics.median(err) * 100, 1) == 0.1
    assert round(statistics.median(abs(e) for e in err) * 100, 1) == 10.6
    assert (round(min(err) * 100, 1), round(max(err) * 100, 1)) == (-38.7, 14.5)
    smallest = min(rows, key=lambda r: (f(r, "weight_bytes"), int(r["m"])))
    assert (round(f(smallest, "cold_us"), 1), round(line(smallest), 1)) == (7.2, 4.7)
    # Llama-3.1-70B's layer at TP 8: qkv (8,192 -> 1,280), o (1,024 -> 8,192), gate-up (8,192 -> 7,168),
    # down (3,584 -> 8,192).
    layer = {("1280", "8192"), ("8192", "1024"), ("7168", "8192"), ("8192", "3584")}
    sizes = sorted(round(f(r, "weight_bytes") / 1e6) for r in rows if (r["n"], r["k"]) in layer and r["m"] == "1")
    assert sizes == [17, 21, 59, 117]
    for m, cold in (("1", 67.3), ("8", 66.9), ("32", 65.6)):
        sel = [r for r in rows if (r["n"], r["k"]) in layer and r["m"] == m]
        assert round(sum(line(r) for r in sel), 1) == 68.1 and round(sum(f(r, "cold_us") for r in sel), 1) == cold
    rerun = {
        (r["m"], r["n"], r["k"]): float(r["cold_us"])
        for r in csv.DictReader((root / "bench" / "data" / "h200-gemm-cold-2026-12-04-rerun.csv").open())
    }
    assert len(rerun) == 84
    assert round(max(abs(rerun[(r["m"], r["n"], r["k"])] / f(r, "cold_us") - 1) for r in rows) * 100, 1) == 2.4
    assert "put every cold figure within 2.4% of the first's" in doc
    small = {r["m"]: r["us"] for r in csv.DictReader((root / "bench" / "data" / "h200-small-kernel-2026-12-04.csv").open())}
    assert (small["1"], small["32"]) == ("1.122", "1.451")
    for quote in (
        "a median 25% slower than the warm one (up to 46%: 15.44 against 10.56 us for 42 MB at 8 tokens)",
        "above it, within 1.3%",
        "(54 of the 84), sits a median 1.9% under the cold figure and 9.3% over the warm one (4.3% under and 17.4% over below the L2)",
        "is a median 0.1% off the cold figures, half of them within 10.6%, from 38.7% short (4 MB, where a cold call takes 7.2 us and the line says 4.7) to 14.5% long",
        "(21, 17, 117 and 59 MB) the line says 68.1 us against 67.3, 66.9 and 65.6 us measured cold at 1, 8 and 32 tokens",
        "1 x 4,096 tensor at 1.12 us in a graph of 256 (1.45 us at 32 x 4,096)",
        "times 28 bf16 decode shapes of 4 MB to 0.94 GB at 1, 8 and 32 tokens",
    ):
        assert quote in doc, quote


def test_sglang_decode_graph_sizes_by_release_as_each_wheel_sets_them():
    # server_args.py cuda_graph_max_bs and cuda_graph_runner.py's capture list, read in each wheel:
    # 0.5.3 to 0.5.19 by memory band (80-160 GiB: 256 at TP < 4, else 512; over 160 GiB: 512), 0.5.20 on
    # 48 / 160 under 35 GiB (arg_groups/memory_hook.py, 0.5.23); 0.4.7.post1 to 0.5.2 160, and 256 over
    # 90 GiB, 512 over 160,000 MiB; 0.4.7 256 over 96 GiB, 512 over 180,000 MiB; 0.4.6.post2 to .post5 256
    # over 96 GiB; 0.4.5.post3 to 0.4.6.post1 256 over 81,920 MiB; 0.4.0 to 0.4.5.post2 160; under
    # 25,000 MiB (35 GiB from 0.4.7.post1) 8 at TP < 4, else 80 (8 at any TP in 0.4.0).
    from kvcalc.engine.engines import sglang_decode_graph_max as g

    h100, h200, b200, l4, a10 = 81559, 143771, 183359, 23034, 24564
    assert [g(h200, 8, "sglang-0.5.3"), g(h200, 2, "sglang-0.5.3"), g(h100, 1, "sglang-0.5.10"), g(b200, 1, "sglang-0.5")] == [
        512,
        256,
        256,
        512,
    ]
    assert [g(a10, 1, "sglang-0.5.10"), g(a10, 1, "sglang-0.5"), g(a10, 4, "sglang-0.5"), g(l4 - 5000, 8, "sglang-0.5")] == [
        24,
        48,
        160,
        8,
    ]
    assert [g(h100, 8, "sglang-0.4.7.post1"), g(h200, 8, "sglang-0.4.7.post1"), g(b200, 8, "sglang-0.4.7.post1")] == [
        160,
        256,
        512,
    ]
    assert [g(h200, 8, "sglang-0.4.7"), g(b200, 8, "sglang-0.4.7"), g(b200, 8, "sglang-0.4"), g(97871, 8, "sglang-0.4")] == [
        256,
        512,
        256,
        160,
    ]
    assert [g(h100, 8, "sglang-0.4.5"), g(81921, 8, "sglang-0.4.5"), g(h200, 8, "sglang-0.4.0"), g(b200, 8, "sglang-0.3")] == [
        160,
        256,
        160,
        160,
    ]
    assert [g(l4, 1, "sglang-0.4.0"), g(l4, 4, "sglang-0.4.7"), g(l4, 1, "sglang-0.3.6"), g(h100, 8, "sglang-0.3.6", 8)] == [
        8,
        80,
        4,
        96,
    ]
    # 0.4.0 alone (server_args.py of 0.4.0 and 0.4.1): 8 under 25,000 MiB at any TP, and min(cuda_graph_max_bs, 96) under
    # DP attention; the capture list [1, 2, 4] + 8 to 160 in 8s reaches 96. Its record's Engine.decode_graph_max
    # passes its release.
    assert [g(l4, 4, "sglang-0.4.0", 1, "0.4.0"), g(l4, 4, "sglang-0.4.0", 1, "0.4.1")] == [8, 80]
    assert [g(h200, 8, "sglang-0.4.0", 8, "0.4.0"), g(h200, 8, "sglang-0.4.0", 8, "0.4.1")] == [96, 160]
    from kvcalc.engine.engines import engine

    assert engine("sglang@0.4.0").decode_graph_max(resolve_gpu("h200"), 1, 8) == 96
    assert engine("sglang@0.4.1").decode_graph_max(resolve_gpu("h200"), 1, 8) == 160


def test_a_decode_step_past_sglangs_largest_graph_takes_the_hosts_time_to_issue_its_kernels():
    # Qwen3-8B (432 kernels: 36 layers x (4 matmuls + attention + 7 small)) on 8 H200s under SGLang 0.5.23,
    # which captures decode batches up to 512 there (143,771 MiB, tp_size 8). At 513 its layers run eagerly:
    # the scheduler's 0.5 ms + 4 us x 513 requests, then the host's 432 x 42 us, which outlast the GPU's work.
    from kvcalc.engine.engines import engine

    m, h = resolve_model("qwen3-8b"), resolve_gpu("h200")
    sm = StepModel(m, h, BF16, tp=8, engine=engine("sglang"))
    assert sm.decode_graph_max == 512
    graphed, eager = sm.step(512, 1000), sm.step(513, 1000)
    assert eager.t_step_s == pytest.approx(0.5e-3 + 513 * 4e-6 + 432 * 42e-6, rel=1e-12)
    # In a graph the host's 0.5 ms + 512 x 4 us run beside the GPU's work (SGLang's overlap scheduler).
    # (of it, the attention calls' work: 512 requests x 36 layers x 1 KV head a rank x the H200's 25.5 ns = 0.47 ms)
    assert round(graphed.t_step_s * 1e3, 1) == 8.4 and graphed.t_step_s > 0.5e-3 + 512 * 4e-6
    doc = " ".join((Path(__file__).parent.parent / "docs" / "simulation.md").read_text().split())
    assert (
        "at 512 requests of 1,000 tokens a step takes 8.4 ms (its overlap scheduler runs the host's 2.55 ms beside the GPU's "
        "work; 8.2 ms until the query and key norms were counted, 2026-12-05; 8.1 ms until the matmuls' two terms combined as "
        "their root-sum-square, 7.7 ms until each attention call's work per request was charged, 2026-12-04), at 513 the "
        "host's 0.5 ms + 513 x 4 us + 432 x 42 us = 20.70 ms (17.67 ms with 360 kernels; tested)" in doc
    )
    # The host's time is not the GPU's: the bound moves by one request's share only.
    assert graphed.t_bound_s < eager.t_bound_s < graphed.t_bound_s * 1.01
    # vLLM V1 is not charged it (torch.compile runs larger steps; kvcalc adds only their launches).
    v = StepModel(m, h, BF16, tp=8, engine=engine("vllm@0.11"))
    assert v.decode_graph_max is None and v.step(513, 1000).t_step_s < 12e-3
    # The simulator's spans and roofline's columns charge it as step() does.
    m0, m1, c0, c1, o = sm.lines(513, 1000.0)
    assert max(m0, c0) + o == pytest.approx(eager.t_step_s, rel=1e-9)
    wb, kvb = sm.weights(513), 513 * sm.kv(1000)
    cols = sm.decode_columns([wb], [kvb], [sm.mm * 513], [513 * sm.attn(1000)], [513])
    assert cols[0][0] == pytest.approx(sm.step(513, 1000).t_step_s, rel=1e-6)
    assert "a decode step of more than 512 requests runs without CUDA graphs" in sm.describe()


def test_vllm_from_0_14_schedules_ahead_so_its_host_time_runs_beside_the_gpus():
    # vllm/config/vllm.py (0.14.0): async_scheduling None turns on unless PP > 1 (and a few other cases);
    # 0.13.0's config/scheduler.py defaults it off. Scheduled ahead, a step takes the longer of the GPU's
    # work and the host's 0.5 ms + 4 us a running request, where before it took their sum.
    from kvcalc.engine.engines import engine

    m, b200 = resolve_model("gemma3-1b"), resolve_gpu("b200")
    before = StepModel(m, b200, BF16, engine=engine("vllm@0.12"))
    ahead = StepModel(m, b200, BF16, engine=engine("vllm@0.14"))
    assert (before.async_host, ahead.async_host, StepModel(m, b200, BF16, engine=engine("vllm")).async_host) == (
        False,
        True,
        True,
    )
    for n in (1, 100, 1000, 4000):
        host = 0.5e-3 + 4e-6 * n
        gpu = before.step(n, 1).t_step_s - host
        assert ahead.step(n, 1).t_step_s == pytest.approx(max(gpu, host), rel=1e-12)
    # One request: the GPU's 1.27 ms hide the host's 0.504; a thousand: the host's 4.5 ms hide the GPU's 2.79.
    assert round(before.step(1, 1).t_step_s * 1e3, 2) == 1.77 and round(ahead.step(1, 1).t_step_s * 1e3, 2) == 1.27
    assert ahead.step(1000, 1).t_step_s == pytest.approx(4.5e-3, rel=1e-12)
    # Not at PP > 1, nor across nodes (Ray's executor).
    assert not StepModel(m, b200, BF16, pp=2, engine=engine("vllm")).async_host
    # The simulator's spans and roofline's columns as step().
    m0, m1, c0, c1, o = ahead.lines(1000, 1.0)
    assert max(m0, c0) + o == pytest.approx(4.5e-3, rel=1e-9)
    cols = ahead.decode_columns([ahead.weights(1000)], [1000 * ahead.kv(1)], [ahead.mm * 1000], [1000 * ahead.attn(1)], [1000])
    assert cols[0][0] == pytest.approx(4.5e-3, rel=1e-6)


def test_a_decode_step_forced_eager_takes_the_hosts_issue_of_every_kernel():
    # A decode beside another DP rank's prompt step runs without CUDA graphs (Engine.dp_prompt_lockstep):
    # the host issues every kernel at 42 us (sgl-project/sglang#12160's eager forward), after its own
    # step work, and the GPU's few milliseconds hide under that.
    from kvcalc.engine.engines import engine

    m, g = resolve_model("qwen3-30b-a3b"), resolve_gpu("h100")
    sm = StepModel(m, g, BF16, 1, 1, dp=4, ep=4, engine=engine("sglang@0.5.9"))
    graph, eager = sm.step(8, 1024), sm.step(8, 1024, eager=True)
    issue = sm.kernels.total * 42e-6
    assert graph.t_step_s < issue / 2
    assert eager.t_step_s == pytest.approx(sm.c.fixed_s + 8 * sm.c.per_request_s + issue, rel=1e-12)


def test_the_step_says_how_its_matmul_terms_combine():
    # roofline's assumption line (StepModel.describe): on MI300X fp8 matmuls the two terms are added and
    # the share of the peak is the spec's measured one; 16-bit ones there, and an H100's, keep the
    # root-sum-square and eta_c.
    m = resolve_model("llama3.1-70b")
    fp8 = StepModel(m, resolve_gpu("mi300x"), BF16, weight_dtype="fp8").describe()
    assert "step time = the sum of (weight bytes / (bandwidth x 0.58, as measured on mi300x)" in fp8
    assert "matmul FLOPs / (fp8 peak x 0.28, as measured on mi300x, the two added))" in fp8
    bf16 = StepModel(m, resolve_gpu("mi300x"), BF16).describe()
    assert "step time = the root-sum-square of (" in bf16 and "(bf16 peak x 0.7))" in bf16
    h100 = StepModel(m, resolve_gpu("h100-sxm"), BF16, weight_dtype="fp8").describe()
    assert "step time = the root-sum-square of (" in h100 and "(fp8 peak x 0.35))" in h100


def _triton(model: str, gpu: str, tp: int = 1, release: str = "sglang@0.5.9") -> tuple[StepModel, StepModel]:
    """The model on the GPU under an SGLang release, with its default decode attention and with the
    Triton backend (--attention-backend triton)."""
    from kvcalc.engine.engines import engine, with_attention_backend

    m, g, e = resolve_model(model), resolve_gpu(gpu), engine(release)
    return StepModel(m, g, BF16, tp, engine=e), StepModel(m, g, BF16, tp, engine=with_attention_backend(e, "triton"))


def test_sglangs_triton_decode_takes_at_least_its_longest_part_over_one_blocks_rate():
    # Qwen3-8B (config.json: 32 query heads, 8 KV heads of 128, 36 layers) on one H100 (132 SMs), one request at
    # 32,000 tokens. Blocks a request: a KV head each, its 4 query heads in one (BLOCK_H min(16, 32 / 8)): 8.
    # Splits: cdiv(int(132 x log2(32,000 / 64)), 1 x 8) = cdiv(1,183, 8) = 148, capped at 8. A part: cdiv(32,000,
    # 8) = 4,000 tokens, a whole number of 32-token tiles. A block's bytes a token: one KV head's keys and values,
    # 2 x 128 x 2 B, on 36 layers = 18,432 B. Floor: 4,000 x 18,432 B / 5.27 GB/s = 13.990 ms.
    base, tri = _triton("qwen3-8b", "h100-sxm")
    assert base.triton is None and base.attn_floor_s(1, 32000) == 0.0
    # Its tile (128, 0, 128) runs 3 blocks a multiprocessor: 64 blocks are one wave of the 396 the H100 runs at once.
    assert tri.triton == (8, 18432.0, 132, 3)
    assert tri.attn_floor_s(1, 32000) == pytest.approx(4000 * 18432 / 5.27e9, rel=1e-12)
    # It stands in for the KV reads' 32,000 x 147,456 B / (3.35 TB/s x 0.8) = 1.761 ms; nothing else moves.
    kv_s = 32000 * 147456 / (3.35e12 * 0.8)
    assert tri.step(1, 32000).t_step_s - base.step(1, 32000).t_step_s == pytest.approx(4000 * 18432 / 5.27e9 - kv_s, rel=1e-6)
    # The fit's source (sgl-project/sglang#21775, bench/data/sglang-21775-triton-decode-h100.csv): the released
    # kernel's time a token at each length, which kvcalc's whole step (its other terms from its defaults)
    # follows within 3%, above it (within 2% until Qwen3's query and key norms were counted, 2026-12-05, which add
    # 72 kernels' 0.19 ms to every step); its default backend 1.8-2.8% below FlashInfer's (4.5-5.5% until then).
    import csv

    rows = list(csv.DictReader((Path(__file__).parent.parent / "bench" / "data" / "sglang-21775-triton-decode-h100.csv").open()))
    # The rate itself: the released kernel's least-squares slope, 36 layers x 512 B / 8 parts over it.
    import numpy as np

    slope = np.polyfit([float(r["input_len"]) for r in rows], [1 / float(r["old_triton_tok_s"]) for r in rows], 1)[0]
    assert round(36 * 512 / 8 / slope / 1e7) == 527 and DEFAULTS.triton_cta_bytes_per_s == 5.27e9
    for r in rows:
        L = int(r["input_len"])
        assert 1.0 < tri.step(1, L).t_step_s * float(r["old_triton_tok_s"]) < 1.03
        assert 0.972 < base.step(1, L).t_step_s * float(r["flashinfer_tok_s"]) < 0.983


def test_sglangs_triton_decode_of_an_mla_model_splits_its_latent_among_fewer_parts_as_the_batch_grows():
    # GLM-4.7-Flash (config.json: 20 heads, MLA latent 512 + rope 64, 47 layers) on one B200 (148 SMs). MLA's one
    # latent head serves every query head: cdiv(20, min(16, 20)) = 2 blocks a request, each reading the whole
    # latent, 576 x 2 B x 47 layers = 54,144 B a token.
    base, tri = _triton("glm-4.7-flash", "b200")
    # Its tile (512, 64, 512) runs 2 blocks a multiprocessor (255 registers a thread): 296 at once on a B200.
    assert tri.triton == (2, 54144.0, 148, 2)
    # 64 requests at 4,300: cdiv(int(148 x log2(4,300 / 64)), 64 x 2) = cdiv(898, 128) = 8 splits; a part
    # cdiv(4,300, 8) = 538 rounded up to 32-token tiles, 544; 64 x 2 x 8 = 1,024 blocks, cdiv(1,024, 296) = 4 waves.
    assert tri.attn_floor_s(64, 4300) == pytest.approx(4 * 544 * 54144 / 5.27e9, rel=1e-12)
    # 256 requests at 1,000: cdiv(int(148 x log2(1,000 / 64)), 512) = cdiv(586, 512) = 2 splits, parts of 500,
    # rounded to 512; 256 x 2 x 2 = 1,024 blocks, 4 waves again.
    assert tri.attn_floor_s(256, 1000) == pytest.approx(4 * 512 * 54144 / 5.27e9, rel=1e-12)
    # 16 requests at 4,300: 16 x 2 x 8 = 256 blocks, one wave.
    assert tri.attn_floor_s(16, 4300) == pytest.approx(544 * 54144 / 5.27e9, rel=1e-12)
    # Short contexts: log2 is held at 1 below 128 tokens (int(148 x 1) = 148 over 2 blocks: 74, capped at 8),
    # and a part is never longer than the context: 16 tokens, one part of 16 (not a 32-token tile).
    assert tri.attn_floor_s(1, 16) == pytest.approx(16 * 54144 / 5.27e9, rel=1e-12)
    # The simulator's spans and roofline's columns charge it as step() does.
    m0, m1, c0, c1, o = tri.lines(64, 4300.0)
    assert max(m0, c0) + o == pytest.approx(tri.step(64, 4300).t_step_s, rel=1e-9)
    wb, kvb = tri.weights(64), 64 * tri.kv(4300)
    cols = tri.decode_columns([wb], [kvb], [tri.mm * 64], [64 * tri.attn(4300)], [64], [4300])
    assert cols[0][0] == pytest.approx(tri.step(64, 4300).t_step_s, rel=1e-9)
    assert "Triton" in tri.describe() and "Triton" not in base.describe()


def test_vllm_v0s_triton_mla_on_an_mi300x_splits_every_request_in_four_whatever_the_batch():
    # DeepSeek-V3 (config.json: 128 heads, MLA latent 512 + rope 64, 61 layers) at TP 8 on MI300Xs (304 compute units)
    # under vLLM 0.7.3, whose V0 ROCm platform decodes every MLA model with its Triton MLA backend (platforms/rocm.py)
    # at num_kv_splits = 4 (attention/backends/triton_mla.py). 128 / 8 = 16 heads a GPU: one block a request
    # (BLOCK_H 16), reading the latent, 576 x 2 B x 61 layers = 70,272 B a token. 4 blocks a compute unit
    # (bench/triton_decode_occupancy_hip.py): 1,216 at once.
    from kvcalc.engine.engines import engine, triton_default_note

    m, g = resolve_model("deepseek-v3"), resolve_gpu("mi300x")
    v0 = StepModel(m, g, BF16, 8, engine=engine("vllm@0.7.3"))
    assert v0.triton == (1, 70272.0, 304, 4) and v0.triton_fixed_splits == 4
    # 4 requests at 3,600 tokens: parts of cdiv(3,600, 4) = 900 (no tile rounding), 16 blocks, one wave.
    assert v0.attn_floor_s(4, 3600) == pytest.approx(900 * 70272 / 5.27e9, rel=1e-12)
    # 64 requests: still 256 blocks, one wave, the same floor (the splits do not shrink as the batch grows).
    assert v0.attn_floor_s(64, 3600) == v0.attn_floor_s(4, 3600)
    # 400 requests: 1,600 blocks, cdiv(1,600, 1,216) = 2 waves.
    assert v0.attn_floor_s(400, 3601) == pytest.approx(2 * 901 * 70272 / 5.27e9, rel=1e-12)
    assert "split in 4 whatever the batch, 1 block a request" in v0.describe() and "the 4 a compute unit runs" in v0.describe()
    # The note that kvcalc does not price it goes where it now does, and stays where it does not.
    assert triton_default_note(engine("vllm@0.7.3"), m, g) is None
    assert "does not price" in (triton_default_note(engine("vllm@0.7.3"), m, resolve_gpu("h200")) or "")
    assert "does not price" in (triton_default_note(engine("vllm@0.11"), m, g) or "")
    # V1 on the MI300X (AITER off), V0 on an H200 (FlashMLA where VLLM_ATTENTION_BACKEND asks), and a dense model
    # take no floor.
    _no_triton_floor(
        ("deepseek-v3", "mi300x", "vllm@0.11"), ("deepseek-v3", "h200", "vllm@0.7.3"), ("llama-3.1-70b", "mi300x", "vllm@0.7.3")
    )


def _no_triton_floor(*cases: tuple[str, str, str]) -> None:
    """Each (model, GPU, release) at TP 8 takes no Triton decode floor."""
    from kvcalc.engine.engines import engine

    for model, gpu, release in cases:
        s = StepModel(resolve_model(model), resolve_gpu(gpu), BF16, 8, engine=engine(release))
        assert s.triton is None and s.attn_floor_s(4, 3600) == 0.0


def test_sglang_0_4_1_to_0_4_4_split_every_mla_request_in_a_fixed_count_8_on_hopper_16_on_rocm():
    # SGLang 0.4.1 to 0.4.4 decode MLA with their Triton backend ("MLA optimization is turned on. Use triton backend.",
    # model_runner.py) at --triton-attention-num-kv-splits, 8, raised to 16 on ROCm from 0.4.2.post2 (server_args.py),
    # each request's context in parts of cdiv(length, splits) (kv_len_per_split). DeepSeek-V3 at TP 8: 16 heads a GPU,
    # one block a request (BLOCK_H 16), 576 x 2 B x 61 layers = 70,272 B a token.
    from kvcalc.engine.engines import engine, triton_default_note

    m = resolve_model("deepseek-v3")
    mi300x, h200 = resolve_gpu("mi300x"), resolve_gpu("h200")
    hip = StepModel(m, mi300x, BF16, 8, engine=engine("sglang@0.4.2.post4"))
    # ROCm: 1 block a compute unit (the kernel descriptor's 257 to 492 VGPRs), 304 at once.
    assert hip.triton == (1, 70272.0, 304, 1) and hip.triton_fixed_splits == 16
    # 4 requests at 3,600 tokens: parts of cdiv(3,600, 16) = 225, 64 blocks, one wave.
    assert hip.attn_floor_s(4, 3600) == pytest.approx(225 * 70272 / 5.27e9, rel=1e-12)
    # 20 requests: 320 blocks, cdiv(320, 304) = 2 waves.
    assert hip.attn_floor_s(20, 3600) == pytest.approx(2 * 225 * 70272 / 5.27e9, rel=1e-12)
    assert "split in 16 whatever the batch" in hip.describe() and "SGLang's Triton backend (this release's MLA default)" in (
        hip.describe()
    )
    assert "the 1 a compute unit runs" in hip.describe()
    # Hopper: 8 splits, 2 blocks a multiprocessor (255 registers a thread), 132 x 2 = 264 at once.
    cuda = StepModel(m, h200, BF16, 8, engine=engine("sglang@0.4.3.post2"))
    assert cuda.triton == (1, 70272.0, 132, 2) and cuda.triton_fixed_splits == 8
    # 40 requests at 3,600 tokens: parts of 450, 320 blocks, cdiv(320, 264) = 2 waves.
    assert cuda.attn_floor_s(40, 3600) == pytest.approx(2 * 450 * 70272 / 5.27e9, rel=1e-12)
    # DP attention (attention TP 1): 128 heads, 8 blocks a request; 33 requests, 2,112 blocks, cdiv(2,112, 264) = 8 waves.
    dp = StepModel(m, h200, BF16, 1, engine=engine("sglang@0.4.3.post2"), dp=8)
    assert dp.triton is not None and dp.triton[0] == 8
    assert dp.attn_floor_s(33, 3600) == pytest.approx(8 * 450 * 70272 / 5.27e9, rel=1e-12)
    # 0.4.1 to 0.4.2.post1: 8 on Hopper; their ROCm tile changed within them (not priced, the note stays).
    old = StepModel(m, h200, BF16, 8, engine=engine("sglang@0.4.1"))
    assert old.triton_fixed_splits == 8 and old.attn_floor_s(40, 3600) == cuda.attn_floor_s(40, 3600)
    assert StepModel(m, mi300x, BF16, 8, engine=engine("sglang@0.4.2.post1")).triton is None
    note = triton_default_note(engine("sglang@0.4.2.post1"), m, mi300x) or ""
    assert "its only MLA backend on AMD GPUs" in note and (
        "on Hopper, not its ROCm launch of 0.4.1 to 0.4.2.post1, 32-token tiles to 0.4.1.post3 and 16 from 0.4.1.post4" in note
    )
    assert triton_default_note(engine("sglang@0.4.1.post3"), m, mi300x) is not None
    for release, gpu in (("sglang@0.4.2.post4", mi300x), ("sglang@0.4.3.post2", h200), ("sglang@0.4.1", h200)):
        assert triton_default_note(engine(release), m, gpu) is None
    # 0.4.0 (another kernel), 0.4.4.post1 to post3 (post2 sizes the splits by the batch), an A100 (no measured block
    # rate) and a dense model take no floor.
    _no_triton_floor(
        ("deepseek-v3", "h200", "sglang@0.4.0"),
        ("deepseek-v3", "h200", "sglang@0.4.4.post1"),
        ("deepseek-v3", "a100-80gb", "sglang@0.4.3"),
        ("llama-3.1-70b", "mi300x", "sglang@0.4.3"),
    )


def test_a_posted_sglang_0_4_3_post2_log_prints_the_8_splits_the_record_takes_on_cuda():
    # sgl-project/sglang#4161 (tests/logs/real, SGLang 0.4.3.post2 on H800s, CUDA) prints its server_args with the
    # default --triton-attention-num-kv-splits; its record's CUDA splits are that default. (This run passed
    # --enable-flashinfer-mla, so its decode did not take the Triton kernel: the log checks the default, not the floor.)
    import re

    from kvcalc.engine.engines import engine

    text = (Path(__file__).parent / "logs" / "real" / "sglang-4161-16xh800-deepseek-r1.log").read_text()
    printed = {int(x) for x in re.findall(r"triton_attention_num_kv_splits=(\d+)", text)}
    assert printed == {8} and engine("sglang@0.4.3.post2").triton_mla_splits[0] == 8


def test_sglang_0_4_5_post1_decodes_mla_on_hopper_with_flashattention_3_as_a_posted_0_4_5_post2_log_says():
    # model_runner.py model_specific_adjustment with no --attention-backend: an MLA model takes "triton" in 0.4.4.post4
    # and 0.4.5, and "fa3" on Hopper with CUDA 12.3 or later from 0.4.5.post1 (read in the four wheels). The posted
    # 0.4.5.post2 log of DeepSeek-R1 on 8 H200s (Michaelvll/llm-ie-benchmarks, tests/logs/real) prints the fa3 default on
    # every rank, so no Triton note there; 0.4.5 still warns, and on the B200 (FlashInfer only from 0.4.7.post1) so does
    # 0.4.5.post1.
    from kvcalc.engine.engines import engine, triton_default_note

    text = (Path(__file__).parent / "logs" / "real" / "sglang-llmie-8xH200-deepseek-r1-sgl045post2-tp8.log").read_text()
    assert text.count("Attention backend not set. Use fa3 backend by default.") == 8  # TP0 to TP7
    m, h200, b200 = resolve_model("deepseek-v3"), resolve_gpu("h200"), resolve_gpu("b200")
    assert engine("sglang@0.4.5.post2").key == engine("sglang@0.4.5.post1").key == "sglang@0.4.5.post1"
    assert engine("sglang@0.4.5").key == "sglang@0.4.4.post4"
    for release in ("sglang@0.4.5.post1", "sglang@0.4.5.post2", "sglang@0.4.5.post3"):
        assert triton_default_note(engine(release), m, h200) is None, release
    assert "with its Triton backend unless told otherwise" in (triton_default_note(engine("sglang@0.4.5"), m, h200) or "")
    assert "with its Triton backend unless told otherwise" in (triton_default_note(engine("sglang@0.4.5.post1"), m, b200) or "")
    # Its Triton kernel (sized by the batch) stays priced when asked for, as 0.4.4.post4's and 0.4.5.post3's: DeepSeek-V3
    # at TP 8 on an H200, one request of 4,000 tokens: splits min(cdiv(int(132 x log2(62.5)), 1 x 1), 8) = 8, parts of
    # cdiv(4,000, 8) = 500 tokens in whole 32-token tiles, 32 x cdiv(500, 32) = 512, one turn: 512 x 70,272 B / 5.27 GB/s.
    base, tri = _triton("deepseek-v3", "h200", 8, "sglang@0.4.5.post1")
    assert base.triton is None and tri.attn_floor_s(1, 4000) == pytest.approx(512 * 70272 / 5.27e9, rel=1e-12)


def test_sglang_0_4_7_decodes_mla_with_flashinfer_on_sm100_and_aiter_on_amd_at_16_or_128_heads():
    # model_runner.py model_specific_adjustment, the same MLA branch in 0.4.7 and 0.4.7.post1: FlashAttention 3 on
    # Hopper, FlashInfer where is_sm100_supported, AITER on HIP where the config's num_key_value_heads over TP is 16 or
    # 128, else Triton; 0.4.6.post5 has only the first. DeepSeek-V3 (128 heads): 16 a GPU at TP 8, 32 at TP 4.
    from kvcalc.engine.engines import engine, triton_default_note

    m, b200, mi300x = resolve_model("deepseek-v3"), resolve_gpu("b200"), resolve_gpu("mi300x")
    for release in ("sglang@0.4.7", "sglang@0.4.7.post1"):
        assert triton_default_note(engine(release), m, b200) is None, release
        assert triton_default_note(engine(release), m, mi300x, 8) is None, release
        assert "with AITER's MLA kernel only where a GPU holds 16 or 128 of its 128 heads (at TP 1, 8)" in (
            triton_default_note(engine(release), m, mi300x, 4) or ""
        ), release
    assert "unless told otherwise" in (triton_default_note(engine("sglang@0.4.6.post5"), m, b200) or "")
    assert "its only MLA backend on AMD GPUs" in (triton_default_note(engine("sglang@0.4.6.post5"), m, mi300x, 8) or "")


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 600), ctx=st.integers(1, 200_000), rate=st.floats(1e8, 1e12))
def test_the_triton_floor_only_ever_lengthens_a_decode_step_and_by_no_more_than_itself(n, ctx, rate):
    base, tri = _triton("qwen3-8b", "h100-sxm")
    c = dataclasses.replace(DEFAULTS, triton_cta_bytes_per_s=rate)
    base, tri = base.with_constants(c), tri.with_constants(c)
    t0, t1, floor = base.step(n, ctx).t_step_s, tri.step(n, ctx).t_step_s, tri.attn_floor_s(n, ctx)
    # The floor enters as a max beside the attention term, so the two step times can differ by a rounding of
    # the last place when it does not bind (n=375, ctx=1: 0.020144000000000002 against 0.020144): 1e-12 s either side.
    assert t0 - 1e-12 <= t1 <= t0 + floor + 1e-12
    # A faster block only lowers the floor.
    assert tri.with_constants(dataclasses.replace(c, triton_cta_bytes_per_s=rate * 2)).attn_floor_s(n, ctx) <= floor


def test_the_h100_nvl_takes_the_triton_floor_of_its_132_multiprocessors():
    # The H100 NVL is the SXM5's die at 132 SMs (16,896 CUDA cores, 128 an SM: its spec's multiprocessors), so
    # at the same block rate its Triton floor is the H100 SXM's: Qwen3-8B, one request at 32,000 tokens, 8
    # parts of 4,000 tokens, 4,000 x 18,432 B / 5.27 GB/s (test above); at 200 requests of 2,000 tokens,
    # cdiv(int(132 x log2(31.25)), 200 x 8) = 1 split, 1,600 blocks in cdiv(1,600, 132 x 3) = 5 turns:
    # 5 x 2,000 x 18,432 / 5.27e9.
    nvl = _triton("qwen3-8b", "h100-nvl")[1]
    assert nvl.attn_floor_s(1, 32_000) == pytest.approx(4_000 * 18_432 / 5.27e9, rel=1e-12)
    assert nvl.attn_floor_s(200, 2_000) == pytest.approx(5 * 2_000 * 18_432 / 5.27e9, rel=1e-12)


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (("--engine", "sglang@0.5.9", "--attention-backend", "trition"), ("unknown attention backend", "did you mean triton")),
        (("--engine", "vllm@0.11", "--attention-backend", "triton"), ("SGLang's Triton decode kernel only",)),
        (("--engine", "sglang", "--attention-backend", "triton"), ("0.4.4.post4 to 0.5.9",)),
        (("--engine", "sglang@0.4.0", "--attention-backend", "triton"), ("0.4.4.post4 to 0.5.9",)),
        (
            ("--engine", "sglang@0.4.3", "--attention-backend", "triton"),
            ("0.4.4.post4 to 0.5.9", "default (this release's MLA default, a fixed count of splits, is priced without the flag)"),
        ),
        (("--engine", "sglang@0.5.9", "--attention-backend", "triton", "--gpu", "mi300x"), ("specs give their multiprocessors",)),
        (("--engine", "sglang@0.5.9", "--attention-backend", "triton", "--gpu", "a100-80gb"), ("h100-sxm, h100-pcie",)),
        (("--engine", "sglang@0.5.9", "--attention-backend", "triton", "--gpu", "gb200"), ("specs give their multiprocessors",)),
        (("--engine", "sglang@0.5.9", "--attention-backend", "triton", "--model", "llama2-7b"), ("grouped kernel",)),
        (("--engine", "sglang@0.5.9", "--attention-backend", "triton", "--model", "gemma2-9b"), ("full-attention model",)),
    ],
)
@pytest.mark.parametrize("command", ["simulate", "roofline", "plan"])
def test_an_attention_backend_kvcalc_does_not_price_is_refused_in_one_line(cli, command, args, needles):
    base = {
        "simulate": ("simulate", "--requests", "20"),
        "roofline": ("roofline", "--batch", "8"),
        "plan": ("plan", "--users", "10", "--tpot", "50ms"),
    }[command]
    defaults = {"--model": "qwen3-8b", "--gpu": "h100-sxm"}
    given_ = dict(zip(args[::2], args[1::2]))
    extra = [x for k, v in defaults.items() if k not in given_ for x in (k, v)]
    argv = [*base, *args, *extra]
    if command == "plan":  # plan takes the GPUs it may choose among
        argv = ["--gpus" if a == "--gpu" else a for a in argv]
    one_line_error(cli(*argv), "--attention-backend", *needles)


def test_a_one_user_simulation_on_sglangs_triton_backend_steps_as_the_step_model_does(cli):
    # GLM-4.7-Flash on one B200 under SGLang 0.5.7 with --attention-backend triton: one user, prompts of 8,000
    # tokens, 500 out. Each decode step is step(1, context) as the context grows from 8,000 to 8,499: the
    # simulation's TPOT is their mean (its spans hold the splits, 8 throughout).
    _, tri = _triton("glm-4.7-flash", "b200", release="sglang@0.5.7")
    r = cli(
        "simulate", "--model", "glm-4.7-flash", "--gpu", "b200", "--engine", "sglang@0.5.7", "--attention-backend",
        "triton", "--concurrency", "1", "--requests", "4", "--prompt", "8000", "--output", "500", "--policies",
        "paged-16", "--json",
    )  # fmt: skip
    assert r.code == 0, r.err
    run = r.json()["runs"][0]
    steps = [tri.step(1, 8000 + k).t_step_s for k in range(1, 500)]
    assert run["bench"]["tpot_s"]["mean"] == pytest.approx(sum(steps) / len(steps), rel=0.005)
    assert (
        run["bench"]["tpot_s"]["mean"] > 1.5 * _triton("glm-4.7-flash", "b200", release="sglang@0.5.7")[0].step(1, 8250).t_step_s
    )


def test_the_simulation_doc_works_the_triton_floor_as_the_step_model_does():
    """docs/simulation.md's worked example of SGLang's Triton decode floor, and its check on the tenth set."""
    doc = " ".join((Path(__file__).parent.parent / "docs" / "simulation.md").read_text().split())
    base, tri = _triton("qwen3-8b", "h100-sxm")
    assert round(tri.attn_floor_s(1, 32000) * 1e3, 2) == 13.99 and round(32000 * 147456 / (3.35e12 * 0.8) * 1e3, 2) == 1.76
    assert round(tri.step(1, 32000).t_step_s * 1e3, 2) == 20.82  # 20.63 before Qwen3's query and key norms
    assert int(132 * math.log2(32000 / 64)) == 1183 and -(-1183 // 8) == 148
    assert (
        "splits cdiv(int(132 x log2(500)), 8) = cdiv(1,183, 8) = 148, capped at 8; parts of 4,000 tokens; the floor 4,000 x "
        "18,432 B / 5.27 GB/s = 13.99 ms where the KV bytes take 1.76 ms at the bandwidth, and the step 20.82 ms (20.68 measured; "
        "20.63 until the query and key norms were counted, 2026-12-05)" in doc
    )
    assert round(1e3 / 48.35, 2) == 20.68 and round(36 * 2 * 128 * 2 / 8) == 2304
    assert "2,304 B / 0.437 us = 5.27 GB/s" in doc and round(2304 / 0.437e-6 / 1e9, 2) == 5.27
    assert "9.16, 11.75 and 13.76 ms against 8.75, 10.94 and 12.63 measured, where kvcalc had 8.0 ms at every length" in doc
    assert "at 16 users, one turn, 14-29% low on TPOT, and at 64 and 100 users, 3 or 4 turns, from 22% low to 13% high" in doc
    # The turns: 255 registers (MLA) and 160 (a 128-wide head) a thread, 4 warps a block, 65,536 registers.
    assert (65536 // (4 * 32 * 256), 65536 // (4 * 32 * 160)) == (2, 3) and 148 * 2 == 296 and -(-64 * 2 * 8 // 296) == 4
    assert (
        "296 blocks at once on a B200 for GLM-4.7-Flash, whose 64 users at 8,000-token prompts bring 64 x 2 x 8 = 1,024: 4 turns"
        in doc
    )
    # The two earlier runs' growth a token of context, and the floor's for Llama-3.1-8B (32 layers, 8 KV heads of 128).
    grow = [round((1 / b - 1 / a) / (2154 - 194) * 1e6, 3) for a, b in ((150.66, 138.86), (155.01, 141.59))]
    assert grow == [0.288, 0.312]
    _, llama = _triton("llama3.1-8b", "h100-sxm")
    assert llama.triton == (8, 16384.0, 132, 3) and round(16384 / 8 / 5.27e9 * 1e6, 3) == 0.389
    assert "grow 0.288 and 0.312 us a token of context, where the floor grows 0.389" in doc


def test_plan_prices_the_triton_floor_in_its_closed_form_and_its_simulation_agrees(cli):
    # GLM-4.7-Flash on one B200 under SGLang 0.5.7 at 1 request/s of 8,000 + 1,000 tokens: with the Triton backend
    # the closed form's TPOT rises from 13.5 ms to 80.0 ms (its requests in flight need two waves of the kernel's
    # blocks; the default backend's MLA call takes SGLang's measured 15 us on B200, the Triton backend's the default
    # 62 us: 15.8 ms until those figures, 2026-12-05; 12.4 until 0.5.7's one matmul for the query's and the latent's down
    # projections was counted, 2026-12-06; 12.2 and 71.3 until the B200's Triton fused-MoE calls took their own measured
    # share, 2026-12-06: slower prompt steps, more requests in flight; 79.8 until each count of prompts a step takes in took
    # its own time, the same day; 13.2 until its default MLA call on B200 was FlashInfer's, as SGLang gives a model of
    # another class than DeepseekV3ForCausalLM, not trtllm_mla's 15 us, 2026-12-06; 79.9 until SGLang's overlap loop took
    # requests in a step late, 2026-12-07: a request waits longer for its first token, more are in flight), and the
    # simulation of the same replica agrees within 10%.
    args = ("plan", "--model", "glm-4.7-flash", "--gpus", "b200", "--engine", "sglang@0.5.7", "--rate", "1", "--tpot", "100ms")
    args += ("--prompt", "8000", "--output", "1000", "--max-gpus", "1", "--json")
    base, tri = cli(*args), cli(*args, "--attention-backend", "triton")
    assert base.code == tri.code == 0, (base.err, tri.err)
    b, t = base.json(), tri.json()
    assert round(b["best"]["tpot_s"] * 1e3, 1) == 13.5 and round(t["best"]["tpot_s"] * 1e3, 1) == 80.0
    v = t["verified"][0]
    assert abs(v["tpot_mean_s"] / v["closed_form_tpot_s"] - 1) < 0.10 and v["ok"]
    assert any("SGLang's Triton backend" in a and "at 5.27 GB/s a block" in a for a in t["assumptions"])
    assert not any("Triton backend" in a for a in b["assumptions"])


@pytest.mark.parametrize(
    ("engine_", "gpu", "model", "warned"),
    [
        ("sglang@0.5.9", "a100-80gb", "glm-4.7-flash", True),  # MLA on an A100: Triton by default
        ("sglang@0.5.9", "h100-sxm", "glm-4.7-flash", False),  # Hopper: FlashAttention 3
        ("sglang@0.5.9", "b200", "glm-4.7-flash", False),  # compute capability 10: FlashInfer from 0.4.7
        ("sglang@0.4.5.post3", "b200", "glm-4.7-flash", True),  # before 0.4.7: Triton on Blackwell too
        ("sglang@0.4.0", "h100-sxm", "glm-4.7-flash", True),  # before 0.4.5.post3: Triton for MLA everywhere
        ("sglang@0.5.9", "a100-80gb", "qwen3-8b", False),  # GQA: FlashInfer
        ("vllm@0.11", "a100-80gb", "glm-4.7-flash", False),
        ("sglang@0.5.9", "mi300x", "glm-4.7-flash", False),  # AMD: another warning (test below)
    ],
)
def test_roofline_warns_where_sglang_would_pick_its_triton_backend_unasked(cli, engine_, gpu, model, warned):
    # model_executor/model_runner.py's defaults (0.4.4.post3: MLA -> triton; 0.4.5.post3: fa3 on Hopper, else triton;
    # 0.4.7.post1 and 0.5.x: flashinfer on compute capability 10 too).
    r = cli("roofline", "--model", model, "--gpu", gpu, "--engine", engine_, "--batch", "1", "--seq", "8000", "--json")
    assert r.code == 0, r.err
    said = [w for w in r.json()["warnings"] if "Triton backend unless told otherwise" in w]
    assert bool(said) == warned
    if warned:
        # Where kvcalc prices the kernel the warning says how to ask for it, and asking ends the warning; elsewhere
        # it says where kvcalc prices it, and asking is refused in one line.
        priced = gpu in ("h100-sxm", "b200") and engine_ != "sglang@0.4.0"
        assert ("pass --attention-backend triton" in said[0]) == priced
        assert ("on the H100, H200, H20 and B200 only" in said[0]) == (not priced)
        r = cli("roofline", "--model", model, "--gpu", gpu, "--engine", engine_, "--batch", "1", "--seq", "8000", "--json",
                "--attention-backend", "triton")  # fmt: skip
        if priced:
            assert r.code == 0 and not [w for w in r.json()["warnings"] if "Triton backend" in w]
        else:
            one_line_error(r, "--attention-backend")


def test_the_triton_kernels_blocks_a_multiprocessor_follow_its_compiled_registers_and_shared_memory():
    # bench/triton_decode_occupancy.py: SGLang 0.5.6's grouped kernel compiled with Triton 3.5.0 for sm_90a (sm_100a
    # alike but 158 registers at the 128 tile): registers a thread and shared bytes by tile.
    from kvcalc.engine.steptime import TRITON_BLOCKS_PER_SM, triton_tile
    from kvcalc.specs.layers import DecodeGeometry

    compiled = {(64, 0, 64): (96, 7168), (128, 0, 128): (160, 13312), (256, 0, 256): (226, 25600)}
    compiled |= {(256, 32, 256): (249, 26624), (512, 64, 512): (255, 52224)}
    for tile, (regs, shared) in compiled.items():
        warp = -(-regs * 32 // 256) * 256  # a warp's registers, in units of 256
        by_regs, by_shared, by_warps = 65536 // (4 * warp), 233472 // (shared + 1024), 64 // 4
        assert TRITON_BLOCKS_PER_SM[tile] == min(by_regs, by_shared, by_warps)
    # 255 registers: 8,192 a warp, 32,768 a block, 2 blocks; 52,224 B of shared memory alone would allow 4.
    assert (65536 // (4 * 8192), 233472 // (52224 + 1024)) == (2, 4)
    # The tile a layer takes: MLA's 576-wide latent as 512 + 64, a head of 80 or 128 as 128, of 192 as 256.
    assert triton_tile(DecodeGeometry("mla", 20, 1, 512, 64, 512, True)) == (512, 64, 512)
    assert triton_tile(DecodeGeometry("gqa", 32, 8, 80, 0, 80, False)) == (128, 0, 128)
    assert triton_tile(DecodeGeometry("gqa", 32, 8, 192, 0, 192, False)) == (256, 0, 256)


def test_kvcalc_engines_says_which_sglang_releases_triton_decode_it_prices(cli):
    r = cli("engines", "--json")
    assert r.code == 0, r.err
    rows = {e["key"]: e["rules"]["triton_decode"] for e in r.json()["engines"]}
    assert rows["sglang@0.5.9"] == rows["sglang@0.4.4.post4"] == "yes, on the H100, H200, H20 and B200"
    assert rows["sglang@0.4.0"] == rows["sglang@0.5.12"] == rows["sglang@0.5"] == "no"
    assert rows["vllm@0.11"] == "-"
    assert r.json()["labels"]["triton_decode"] == "--attention-backend triton priced"


def test_plan_on_the_triton_backend_without_gpus_searches_the_gpus_it_prices(cli):
    # The default GPU list holds A100s and MI300Xs, where the Triton floor is not priced: with the backend
    # asked for and no --gpus, plan searches the H100s (SXM, PCIe, NVL), H200, H20 and B200 rather than refusing.
    r = cli("plan", "--model", "qwen3-8b", "--engine", "sglang@0.5.9", "--attention-backend", "triton", "--users", "10",
            "--tpot", "50ms", "--closed-form", "--json")  # fmt: skip
    assert r.code == 0, r.err
    searched = {d["gpu"] for d in r.json()["ranked"]}
    assert searched and searched <= {"h100-sxm", "h100-pcie", "h100-nvl", "h200", "h20", "b200"}
    # Named on the command line, a GPU it does not price is refused in one line.
    one_line_error(cli("plan", "--model", "qwen3-8b", "--engine", "sglang@0.5.9", "--attention-backend", "triton",
                       "--gpus", "h100,a100-80gb", "--users", "10", "--tpot", "50ms"), "--attention-backend", "a100-80gb")  # fmt: skip


@pytest.mark.parametrize(
    ("engine_", "gpu", "model", "tp", "said"),
    [
        # vLLM: V0 (0.7.x) takes TritonMLABackend for any MLA model on CUDA and ROCm (platforms/cuda.py and rocm.py,
        # 0.7.3); V1 FlashMLA on Hopper, CUTLASS MLA on compute capability 10 from 0.10, Triton elsewhere, and on
        # ROCm Triton unless VLLM_ROCM_USE_AITER (platforms/cuda.py and rocm.py, 0.11.0).
        (
            "vllm@0.11",
            "a100-80gb",
            "deepseek-v2-lite",
            1,
            "vLLM 0.11 decodes an MLA model on a100-80gb with its Triton MLA backend;",
        ),
        ("vllm@0.11", "h100-sxm", "deepseek-v3", 8, None),
        ("vllm@0.9", "b200", "deepseek-v3", 8, "with its Triton MLA backend;"),
        ("vllm@0.10", "b200", "deepseek-v3", 8, None),
        ("vllm@0.7.2", "h200", "deepseek-v3", 8, "with its Triton MLA backend;"),
        (
            "vllm@0.11",
            "mi300x",
            "deepseek-v3",
            8,
            "with its Triton MLA backend unless AITER is turned on (VLLM_ROCM_USE_AITER=1)",
        ),
        # V0 on a gfx942 GPU is priced since 2026-12-06 (triton_mla_fixed_splits): no note; on an MI355X it is not.
        ("vllm@0.7.2", "mi300x", "deepseek-v3", 8, None),
        ("vllm@0.7.2", "mi355x", "deepseek-v3", 8, "on mi355x with its Triton MLA backend;"),
        ("vllm@0.6", "a100-80gb", "deepseek-v2-lite", 1, None),  # MLA cached as per-head K and V: no MLA kernel
        ("vllm@0.11", "a100-80gb", "qwen3-8b", 1, None),
        ("vllm@0.11", "a100-80gb", "deepseek-v3.2", 8, None),  # sparse MLA: its own kernels
        # SGLang on AMD: Triton only before 0.4.7.post1; then AITER where a GPU holds 16 or 128 heads.
        ("sglang@0.4.0", "mi300x", "deepseek-v3", 8, "with its Triton backend, its only MLA backend on AMD GPUs"),
        ("sglang@0.4.2.post1", "mi300x", "deepseek-v3", 8, "with its Triton backend, its only MLA backend on AMD GPUs"),
        ("sglang@0.4.2.post2", "mi300x", "deepseek-v3", 8, None),  # priced since 2026-12-06 (triton_mla_fixed_splits)
        ("sglang@0.5.9", "mi300x", "deepseek-v3", 8, None),  # 128 / 8 = 16 heads: AITER
        (
            "sglang@0.5.9",
            "mi300x",
            "deepseek-v3",
            4,
            "16 or 128 of its 128 heads (at TP 1, 8), else with its Triton backend, as at TP 4",
        ),
        ("sglang@0.5.9", "mi300x", "kimi-k2", 8, "16 or 128 of its 64 heads (at TP 4), else with its Triton backend, as at TP 8"),
        ("sglang@0.5.9", "mi300x", "glm-4.7-flash", 1, "16 or 128 of its 20 heads (at no TP size)"),
    ],
)
def test_roofline_warns_where_an_engine_decodes_mla_with_a_triton_kernel_unasked(cli, engine_, gpu, model, tp, said):
    r = cli(
        "roofline", "--model", model, "--gpu", gpu, "--engine", engine_, "--tp", tp, "--batch", "1", "--seq", "8000", "--json"
    )
    assert r.code == 0, r.err
    notes = [w for w in r.json()["warnings"] if "Triton" in w]
    if said is None:
        assert notes == []
    else:
        assert len(notes) == 1 and said in notes[0], notes
        assert "these figures are the default kernels'" in notes[0]


def test_a_gated_deltanet_layer_is_charged_the_kernels_its_decode_and_prompt_paths_launch():
    # Qwen3-Next: 36 Gated DeltaNet layers and 12 full-attention ones (config.json layer_types). Read from the
    # engines' code, a GDN layer launches 3 matmuls and 13 small kernels in a decode step (vLLM 0.11,
    # qwen3_next.py: 6 layout copies, a concatenation, the convolution update, a sigmoid, the gating, the
    # recurrent update, the gated norm, out_proj's copy) and 3 and 25 in a prompt step run eagerly (SGLang
    # 0.5.6: the same but the chunked delta rule's 12 kernels for the one recurrent update, the prefix test, the
    # state's gather and scatter). Mamba-2's count, which the layers had before, is 2 and 4.
    from kvcalc.engine.steptime import layer_kernels
    from kvcalc.specs.layers import GDN_DECODE_KERNELS, GDN_PROMPT_KERNELS

    assert GDN_DECODE_KERNELS == (3, 0, 6 + 1 + 1 + 1 + 1 + 1 + 1 + 1)
    assert GDN_PROMPT_KERNELS == (3, 0, 6 + 1 + 1 + 1 + 1 + 1 + (3 + 2 + 1 + 1 + 2 + 1 + 1 + 1) + 1 + 1)
    m = resolve_model("qwen3-next-80b-a3b")
    assert m.layer_counts() == {"attn": 12, "linear": 36} and m.layer_kinds["linear"].mixer == "gdn"
    mamba2 = dataclasses.replace(m.layer_kinds["linear"], mixer="mamba2")
    as_mamba2 = dataclasses.replace(m, layer_kinds={**m.layer_kinds, "linear": mamba2})
    decode, prompt = layer_kernels(m).total, layer_kernels(m, prompt=True).total
    assert decode - layer_kernels(as_mamba2).total == 36 * ((3 + 13) - (2 + 4))
    assert prompt - decode == 36 * (25 - 13)
    # Before either change (the next test's attention norms and gate too): Mamba-2's count, no norms.
    import kvcalc.engine.steptime as steptime

    norms = steptime.attention_norm_kernels
    steptime.attention_norm_kernels = lambda model: 0
    try:
        before = layer_kernels(as_mamba2).total
    finally:
        steptime.attention_norm_kernels = norms
    assert decode - before == 36 * ((3 + 13) - (2 + 4)) + 12 * 7
    # Layers of every other kind launch the same kernels in either step.
    llama = resolve_model("llama3.1-8b")
    assert layer_kernels(llama, prompt=True) == layer_kernels(llama)
    # SGLang 0.5.9 runs prompt steps without CUDA graphs: a one-token prompt step takes at least the host's issue
    # of the prompt path's kernels at 42 us each; a decode step past its largest graph, the decode path's.
    from kvcalc.engine.engines import engine

    sm = StepModel(m, resolve_gpu("b200"), BF16, 8, engine=engine("sglang@0.5.9"))
    assert sm.prefill_eager and sm.eager_prompt_total_s == pytest.approx(prompt * 42e-6)
    assert sm.step(0, 0, prefill_tokens=1).t_step_s >= prompt * 42e-6
    assert sm.eager_host_total_s == pytest.approx(decode * 42e-6)
    big = (sm.decode_graph_max or 0) + 1
    assert sm.step(big, 100).t_step_s < prompt * 42e-6 + sm.c.fixed_s + sm.c.per_request_s * big
    # The step's description names each floor: 1,680 x 42 us = 70.56 ms a prompt step, 1,248 x 42 us = 52.42 ms a
    # decode step past the largest graph (the decode path's 16 kernels a GDN layer, not the prompt path's 28).
    assert (prompt, decode) == (1680, 1248)
    said = sm.describe()
    assert (
        "prompt tokens runs without CUDA graphs in this release and takes at least the host's issue of its kernels (70.6 ms"
        in said
    )
    assert "decode batches up to 512 here) and takes at least the host's issue of its kernels (52.4 ms" in said
    # docs/accuracy.md quotes the prompt step's floor before and after.
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "accuracy.md").read_text().split())
    now_ms, gdn = prompt * 42e-3, prompt - 12 * 7
    said = (
        f"a prompt step of Qwen3-Next takes at least {prompt:,} kernels' issue, {now_ms:.0f} ms ({gdn:,} and "
        f"{gdn * 42e-3:.0f} ms until its attention layers' query and key norms and output gate were counted, the same "
        f"day), where kvcalc had {before:,}, {before * 42e-3:.0f} ms"
    )
    assert said in doc, said


@pytest.mark.parametrize(
    ("model", "extra"),
    [
        ("qwen3-8b", 36 * 2),  # q_norm and k_norm on each of 36 layers (vLLM 0.11 qwen3.py Qwen3Attention.forward)
        ("qwen3-235b-a22b", 94 * 2),  # qwen3_moe.py, the same two
        ("qwen3-next-80b-a3b", 12 * (2 + 5)),  # 12 attention layers: the norms and the output gate's 5 (qwen3_next.py)
        # Qwen3.5's attention layers are Qwen3NextAttention (vLLM 0.22.1 qwen3_5.py Qwen3_5DecoderLayer): 16 and 10 of them
        ("qwen3.5-27b", 16 * (2 + 5)),
        ("qwen3.5-35b-a3b", 10 * (2 + 5)),
        ("glm-4.6", 92 * 2),  # config use_qk_norm true (glm4_moe.py Glm4MoeAttention)
        ("glm-4.5-air", 0),  # use_qk_norm false
        # MiniMax-M2's norms over all heads, q's and k's: each a sum of squares before its all-reduce and the scaling after
        # (vLLM 0.13 minimax_m2.py MiniMaxM2Attention.forward; linear_attn.py MiniMaxText01RMSNormTP._forward, compiled)
        ("minimax-m2", 62 * 2 * 2),
        ("llama3.1-8b", 0),
    ],
)
def test_attention_layers_are_charged_their_query_and_key_norms_and_output_gate(model, extra, monkeypatch):
    import kvcalc.engine.steptime as steptime

    m = resolve_model(model)
    got, got_prompt = steptime.layer_kernels(m), steptime.layer_kernels(m, prompt=True)
    monkeypatch.setattr(steptime, "attention_norm_kernels", lambda model: 0)
    plain, plain_prompt = steptime.layer_kernels(m), steptime.layer_kernels(m, prompt=True)
    # Only the small kernels move, by the same count in a decode and a prompt step.
    assert (got.small - plain.small, got.gemm, got.attention) == (extra, plain.gemm, plain.attention)
    assert got_prompt.small - plain_prompt.small == extra


@pytest.mark.parametrize(
    ("log", "engine_", "gpu", "model"),
    [
        # vLLM 0.7.3 (V0) on 16 H100s: "cuda.py:160] Using Triton MLA backend" (tests/logs/real/cases.yaml)
        ("vllm-dzhsurf-16xh100-deepseek-v3-awq-tp8pp2.log", "vllm@0.7.2", "h100-sxm", "deepseek-v3"),
        # DeepSeek-V2.5 on A100-40GBs, vLLM 0.8.3 fallen back to V0 (read with 0.7's rules): "[cuda.py:191] Using Triton MLA
        # backend"
        ("vllm-surajssd-16xa100-40gb-deepseek-v2.5-tp8pp2.log", "vllm@0.7", "a100-40gb", "deepseek-v2"),
    ],
)
def test_real_logs_pick_the_triton_mla_backend_the_warning_names(log, engine_, gpu, model):
    from kvcalc.engine.engines import engine, triton_default_note

    text = (Path(__file__).parent / "logs" / "real" / log).read_text()
    assert "Using Triton MLA backend" in text
    note = triton_default_note(engine(engine_), resolve_model(model), resolve_gpu(gpu), 8)
    assert note is not None and "with its Triton MLA backend" in note


def test_a_real_log_runs_gpt_oss_experts_with_the_triton_kernel_where_kvcalc_says():
    """vLLM 0.19 serving gpt-oss-20b on 2 H100s (tests/logs/real/cases.yaml, llm-d-planner#205) prints "Using 'TRITON'
    Mxfp4 MoE backend.": the kernel whose calls take moe_quant_s (StepModel.mxfp4_triton)."""
    from kvcalc.engine.engines import engine

    text = (Path(__file__).parent / "logs" / "real" / "vllm-pr205-2xh100-gpt-oss-20b.log").read_text()
    assert "Using 'TRITON' Mxfp4 MoE backend." in text and "(v0.19.0)" in text
    sm = StepModel(resolve_model("gpt-oss-20b"), resolve_gpu("h100-sxm"), BF16, tp=2, engine=engine("vllm@0.19"))
    assert sm.mxfp4_triton and sm.kernels.moe_quant == sm.kernels.moe == 24


@pytest.mark.parametrize(
    "release,model,gpu,tp,dp,nodes,fused",
    [
        # 0.5.2 and 0.5.3 (server_args.py): GPT-OSS on compute capability 10 without DP attention.
        ("0.5.3", "gpt-oss-120b", "b200", 8, 1, 1, True),
        ("0.5.3", "gpt-oss-120b", "h200", 8, 1, 1, False),
        ("0.5.3", "deepseek-v3", "b200", 8, 1, 1, False),
        # 0.5.4 and 0.5.5: DeepSeek-V3 too; 0.5.6 on one node only.
        ("0.5.5", "deepseek-v3", "b200", 8, 1, 1, True),
        ("0.5.5", "deepseek-v3", "h200", 8, 1, 1, False),
        ("0.5.6", "deepseek-v3", "b200", 8, 1, 2, False),
        ("0.5.6", "kimi-k2", "b200", 8, 1, 1, True),  # Kimi-K2's checkpoints run DeepseekV3ForCausalLM
        # 0.5.7 on: Hopper too, one node, not the H20; GLM-4.x and Qwen3-MoE; not MiniMax-M2.
        ("0.5.7", "qwen3-235b-a22b", "h200", 8, 1, 1, True),
        ("0.5.7", "glm-4.6", "h100-sxm", 8, 1, 1, True),
        ("0.5.7", "deepseek-v3", "h20", 8, 1, 1, False),
        ("0.5.7", "minimax-m2", "h200", 8, 1, 1, False),
        ("0.5.9", "qwen3-next-80b-a3b", "h200", 4, 1, 1, False),
        # 0.5.10 to 0.5.12: Qwen3-Next, Qwen3.5 and DeepSeek-V3.2's classes join.
        ("0.5.12", "qwen3-next-80b-a3b", "h200", 4, 1, 1, True),
        ("0.5.12", "deepseek-v3.2", "h200", 8, 1, 1, True),
        ("0.5.12", "deepseek-v3", "h200", 8, 1, 2, False),
        ("0.5.12", "deepseek-v3", "b200", 8, 1, 2, False),
        ("0.5.5", "deepseek-v3", "b200", 8, 1, 2, True),
        # 0.5.13 on: the H20 again, and any number of nodes on compute capability 10.
        ("0.5.14", "deepseek-v3", "h20", 8, 1, 1, True),
        ("0.5.14", "deepseek-v3", "b200", 8, 1, 2, True),
        ("0.5.14", "deepseek-v3", "h200", 8, 1, 2, False),
        # Never at TP 1, under DP attention, on other GPUs, or for dense models outside the lists.
        ("0.5.14", "qwen3-30b-a3b", "h200", 1, 1, 1, False),
        ("0.5.14", "deepseek-v3", "h200", 1, 8, 1, False),
        ("0.5.14", "deepseek-v3", "mi300x", 8, 1, 1, False),
        ("0.5.14", "llama3.1-70b", "h200", 8, 1, 1, False),
    ],
)
def test_sglang_fuses_the_all_reduce_with_the_norm_after_it_where_its_release_turns_it_on(
    release, model, gpu, tp, dp, nodes, fused
):
    from kvcalc.engine.engines import allreduce_norm_fusion, engine

    assert allreduce_norm_fusion(engine(f"sglang=={release}"), resolve_model(model), gpu, tp, dp, nodes) is fused
    # vLLM's own fusion pass is off by default.
    assert not allreduce_norm_fusion(engine("vllm"), resolve_model(model), gpu, tp, dp, nodes)


def test_the_fused_norms_leave_a_decode_step():
    # DeepSeek-V3 at TP 8 under SGLang 0.5.12: on the H200 each of the 61 layers' post-attention norm and each
    # following layer's input norm run inside the all-reduces (2 x 61 - 1 = 121 kernels fewer); on the H20, where
    # 0.5.7 to 0.5.12 leave the fusion off, none do.
    from kvcalc.engine.engines import engine

    ds, e = resolve_model("deepseek-v3"), engine("sglang==0.5.12")
    h200 = StepModel(ds, resolve_gpu("h200"), kv_dtype("bf16"), tp=8, engine=e)
    h20 = StepModel(ds, resolve_gpu("h20"), kv_dtype("bf16"), tp=8, engine=e)
    assert h200.ar_fusion and not h20.ar_fusion
    assert h20.kernels.small - h200.kernels.small == 2 * 61 - 1 == 121
    assert h20.kernels.gemm == h200.kernels.gemm and h20.kernels.moe == h200.kernels.moe
    assert "small kernels at 2.7 us (the layers' norms but the first inside the all-reduces" in h200.describe()


def test_an_mla_layer_runs_five_matmuls_where_its_engine_fuses_the_down_projections_or_it_has_no_query_latent():
    # docs/simulation.md: six with the query's down and up and the latent's down projections apart; five where the
    # engine runs the two down projections as one (vLLM from 0.10, SGLang from 0.4.6) or the model has one query
    # projection (DeepSeek-V2-Lite, q_lora_rank 0). The fp8 linear layers quantizing their inputs follow: 4 or 3.
    from kvcalc.engine.engines import engine
    from kvcalc.engine.steptime import layer_kernels, quant_kernels

    ds, lite = resolve_model("deepseek-v3"), resolve_model("deepseek-v2-lite")
    assert layer_kernels(ds).gemm - layer_kernels(ds, mla_qkv_a_fused=True).gemm == 61
    assert quant_kernels(ds) - quant_kernels(ds, mla_qkv_a_fused=True) == 61
    # DeepSeek-V2-Lite: 27 layers, the first dense; five matmuls an MLA layer either way.
    assert layer_kernels(lite).gemm == layer_kernels(lite, mla_qkv_a_fused=True).gemm
    assert layer_kernels(lite).gemm == 27 * 5 + 1 * 2 + 26 * (1 + 2)
    fused = {
        r: engine(r).mla_qkv_a_fused for r in ("vllm@0.9", "vllm@0.10", "vllm", "sglang@0.4.5.post3", "sglang@0.4", "sglang")
    }
    assert fused == {
        "vllm@0.9": False,
        "vllm@0.10": True,
        "vllm": True,
        "sglang@0.4.5.post3": False,
        "sglang@0.4": True,
        "sglang": True,
    }
    doc = " ".join((Path(__file__).parent.parent / "docs" / "simulation.md").read_text().split())
    assert "five where the engine runs the query's and the latent's down projections as one matmul" in doc


def test_sglang_fuses_the_norms_into_the_all_reduces_of_steps_of_at_most_2048_tokens_only():
    # SGLang's FUSE_ALLREDUCE_MAX_BATCH_SIZE, 2,048 in every release read (layers/communicator.py
    # apply_flashinfer_allreduce_fusion takes the step's input_ids): a step of 2,049 tokens runs its all-reduces and the
    # 2 x 61 - 1 = 121 norms after them apart, each a small kernel (kernel_gap_s) launched eagerly (eager_launch_s);
    # a step of 2,048 launches none of them, decode or prompt. vLLM's steps launch them at every size.
    from kvcalc.engine.engines import SGLANG_AR_FUSION_MAX_TOKENS, engine

    assert SGLANG_AR_FUSION_MAX_TOKENS == 2048
    r1, b200 = resolve_model("deepseek-r1"), resolve_gpu("b200")
    on = StepModel(r1, b200, BF16, tp=8, engine=engine("sglang@0.5.6"))
    assert on.ar_fusion and on.ar_fused_norms == 121
    c = on.c
    step = on.overhead_s(2049, 1) - on.overhead_s(2048, 1) - (on.collective_s(2049) - on.collective_s(2048))
    assert step == pytest.approx(121 * (c.kernel_gap_s + c.eager_launch_s))
    # The host's issue of a prompt step run eagerly: 121 kernels more past 2,048 tokens.
    assert on.prefill_eager
    assert on.eager_prompt_large_s - on.eager_prompt_total_s == pytest.approx(121 * c.eager_host_s)
    assert on.eager_extra_s(0.0, 1, prompt=True, tokens=2049) - on.eager_extra_s(0.0, 1, prompt=True, tokens=2048) == (
        pytest.approx(121 * c.eager_host_s)
    )
    # A graphed decode step (at most 512 tokens) takes the fused count; vLLM has no fused norms at any size.
    assert on.layer_gaps_s < on.layer_gaps_eager_s < on.layer_gaps_eager_large_s
    plain = StepModel(r1, b200, BF16, tp=8, engine=engine("vllm"))
    assert plain.ar_fused_norms == 0 and plain.layer_gaps_eager_s == plain.layer_gaps_eager_large_s
    doc = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    assert "2 L - 1 small kernels fewer a step of at most 2,048 tokens, decode or prompt" in doc
    assert "the step model charges it the 2 L - 1 kernels" in doc
    assert "more in a step of over 2,048 tokens" in " ".join(on.describe().split())


def test_vllms_sparse_mla_attention_counts_the_kernels_padded_heads_in_the_absorbed_form():
    """GLM-5 (glm_moe_dsa: 64 heads, latent 512, rope 64, indexer 32 heads of 128, top-2,048; config.json) at TP 8 on
    H200s under vLLM 0.16 with a bf16 cache: FlashMLA's sparse kernel runs 64 heads a rank where the model has 8
    (Engine.sparse_mla_heads), prompt tokens as decode tokens in the absorbed form, so a token at context 8,000 costs
    78 layers x (2 x 64 x (2 x 512 + 64) x 2,048 + 32 x (128 + 1) x 8,000) FLOPs on a rank, a prompt token as much.
    SGLang's release is not read for it and keeps the model's 8 heads, prompt tokens decompressed."""
    from kvcalc.engine.engines import engine

    m, g = resolve_model("glm-5"), resolve_gpu("h200")
    want = 78 * (2 * 64 * (2 * 512 + 64) * 2048 + 32 * (128 + 1) * 8000)
    sm = StepModel(m, g, kv_dtype("bf16"), tp=8, engine=engine("vllm@0.16"), weight_dtype="fp8")
    assert sm.d.mla_heads == 64
    assert sm.d.attn_flops(8000) == want and sm.d.prefill_attn_flops(8000) == want
    # Without the rule: 8 heads; a decode token absorbed, a prompt token decompressed (nope 192 + rope 64 + v 256).
    other = StepModel(m, g, kv_dtype("bf16"), tp=8, engine=engine("sglang@0.5.9"), weight_dtype="fp8")
    assert other.d.mla_heads == 0
    assert other.d.attn_flops(8000) == 78 * (2 * 8 * (2 * 512 + 64) * 2048 + 32 * (128 + 1) * 8000)
    assert other.d.prefill_attn_flops(8000) == 78 * (2 * 8 * (192 + 64 + 256) * 2048 + 32 * (128 + 1) * 8000)
    # The step's assumptions say so where the rule applies.
    assert "sparse MLA attention over 64 query heads a rank" in sm.describe()
    assert "sparse MLA" not in other.describe()


def test_the_sparse_mla_heads_paragraph_is_as_the_runs_score():
    """docs/engines.md: GLM-5's 8,000-token prompt attention a rank, without and with the padded heads, and the runs
    the rule moves."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_serving_accuracy import CASES, errors

    from kvcalc.engine.engines import engine

    m, g = resolve_model("glm-5"), resolve_gpu("h200")
    padded = StepModel(m, g, kv_dtype("bf16"), tp=8, engine=engine("vllm@0.16"), weight_dtype="fp8")
    plain = StepModel(m, g, kv_dtype("bf16"), tp=8, engine=engine("vllm@0.10"), weight_dtype="fp8")
    # The whole prompt, each token over min(i, top-k) keys plus the indexer over all i: decompressed over the model's 8
    # heads a rank (nope 192 + rope 64 + v 256), as kvcalc counts it elsewhere, and absorbed over the kernel's 64.
    pairs = 2048 * 2049 // 2 + (8000 - 2048) * 2048
    indexer = 32 * 129 * (8000 * 8001 // 2)
    before = 78 * (2 * 8 * (192 + 64 + 256) * pairs + indexer)
    whole = 78 * (2 * 64 * (2 * 512 + 64) * pairs + indexer)
    assert m.layer_kinds["mla"].prefill_attn_flops(8000, 8) * 78 == before and plain.d.mla_heads == 0
    assert (round(before / 1e12, 1), round(whole / 1e12, 1)) == (19.4, 165.5) and padded.d.mla_heads == 64
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    assert "an 8,000-token prompt's attention goes from 19.4 to 165.5 TFLOP a rank" in text
    by = {c["id"]: c for c in CASES}
    g5 = errors(by["recipes-glm5-fp8-h200-tp8-8k1k-rr10"])
    assert [round(100 * g5[k]) for k in ("output_throughput_tok_per_s", "mean_tpot_ms", "mean_ttft_ms")] == [22, -15, -35]
    v32 = errors(by["gpustack-h200x8-deepseek-v3.2-vllm0130-tp8-random1000x2000-inf"])
    assert round(100 * v32["mean_ttft_ms"]) == -43
    assert "from 39% to 22% high on output throughput, from 21% to 15% low on TPOT and from 63% to 35% low on TTFT" in text
    assert "DeepSeek-V3.2 on 8 H200s under 0.13 from 50% to 43% low on TTFT" in text
    v32 = resolve_model("deepseek-v3.2").layer_kinds
    heads = next(k for k in v32.values() if getattr(k, "sparse_topk", 0)).num_attention_heads // 8
    assert heads == 16 and engine("vllm@0.16").sparse_mla_heads(heads, "b200", 16) == 128
    assert engine("vllm@0.22").sparse_mla_heads(heads, "b200", 16) == 0  # FlashInfer's backend first at 16
    assert "so DeepSeek-V3.2 at TP 8 (16 a rank) runs 128 to 0.16" in text


def test_the_b200s_triton_moe_share_is_its_own_measured_fit_at_16_bits():
    # Qwen3-235B-A22B (config.json: moe_intermediate_size 1,536) at TP 8: 192 of an expert's width a GPU. The B200's spec
    # (AIConfigurator's SGLang 0.5.9 Triton rows) gives a 0.213, b 314: 0.213 x 192 / (192 + 314) = 0.0808; the H200 keeps
    # Hopper's 0.666 x 192 / (192 + 545) = 0.1735.
    m = resolve_model("qwen3-235b-a22b")
    b200 = StepModel(m, resolve_gpu("b200"), BF16, 8)
    h200 = StepModel(m, resolve_gpu("h200"), BF16, 8)
    assert b200.moe_eta(b200.c) == pytest.approx(0.213 * 192 / (192 + 314), rel=1e-12)
    assert h200.moe_eta(h200.c) == pytest.approx(0.666 * 192 / (192 + 545), rel=1e-12)
    # fp8 experts keep the fp8 fit on the B200 too (0.311 x 192 / (192 + 459)); a calibrated share wins over the spec's.
    f8 = StepModel(resolve_model("qwen3-235b-a22b-fp8"), resolve_gpu("b200"), BF16, 8)
    assert f8.moe_eta(f8.c) == pytest.approx(0.311 * 192 / (192 + 459), rel=1e-12)
    cal = b200.with_constants(dataclasses.replace(DEFAULTS, moe_eta_c=0.3))
    assert cal.moe_eta(cal.c) == 0.3
    # The step's assumptions say whose share it is.
    said = "routed experts at 0.0808 of the peak (moe_eta_c; the fused-MoE kernel's 16-bit share as measured on b200)"
    assert said in b200.describe() and "as measured on" not in f8.describe().split("routed experts")[1].split(")")[0]
    assert "routed experts at 0.3 of the peak (moe_eta_c)" in cal.describe()
    # So a 16,384-token prompt step takes longer than the same B200 with Hopper's share (a spec without the block), and a
    # one-request decode step, whose experts are bound by their bytes, about as long.
    hopper = StepModel(m, dataclasses.replace(resolve_gpu("b200"), moe=None), BF16, 8)
    assert hopper.moe_eta(hopper.c) == pytest.approx(0.666 * 192 / (192 + 545), rel=1e-12)
    assert b200.step(0, 0, 16384).t_step_s > 1.2 * hopper.step(0, 0, 16384).t_step_s
    assert b200.step(1, 1000).t_step_s == pytest.approx(hopper.step(1, 1000).t_step_s, rel=0.01)


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ("bf16_a: 0\n  bf16_b: 314", "bf16_a"),
        ("bf16_a: 1.5\n  bf16_b: 314", "bf16_a"),
        ("bf16_a: 0.2\n  bf16_b: -1", "bf16_b"),
        ("bf16_a: true\n  bf16_b: 314", "bf16_a"),
        ("bf16_b: 314", "bf16_a"),
    ],
)
def test_a_gpu_specs_moe_block_out_of_range_is_one_line_naming_the_field(cli, tmp_path, block, said):
    src = (Path(__file__).parent.parent / "gpu_specs" / "h100-sxm.yaml").read_text()
    spec = tmp_path / "g.yaml"
    spec.write_text(src.replace("name: h100-sxm", "name: mygpu") + "moe:\n  url: https://example.com/t\n  " + block + "\n")
    r = cli("roofline", "--model", "qwen3-8b", "--gpu", str(spec), "--batch", "1", "--seq", "100")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1 and said in r.err and "Traceback" not in r.err, r.err


def test_nvfp4_checkpoints_run_their_matmuls_at_the_fp4_peak_on_blackwell():
    """An NVFP4 checkpoint's linear layers run W4A4 at the fp4 peak where the GPU spec gives one: B200 9 PFLOP/s dense
    (NVIDIA's HGX B200: 144 PFLOPS fp4 with sparsity for 8 GPUs, 144 / 8 / 2), with eta_c_fp4 0.35 and the spec's NVFP4
    GEMM figures (gemm_fp4: 5.2 us, 0.72 of the bandwidth; vLLM 0.24's measured CuteDSL GEMMs, bench/fit_gemm_fp8.py DIR
    fp4) and one 4-bit quantization kernel before each NVFP4 linear layer; elsewhere (H200) at the 16-bit peak."""
    from kvcalc.engine.bound import peak_flops
    from kvcalc.errors import KvcalcError

    ds, b200, h200 = resolve_model("deepseek-v3"), resolve_gpu("b200"), resolve_gpu("h200")
    assert peak_flops(b200, "fp4") == 144e15 / 8 / 2 == 9e15
    assert peak_flops(resolve_gpu("gb200"), "fp4") == 1440e15 / 72 / 2
    with pytest.raises(KvcalcError, match="h200 has no fp4 tensor units"):
        peak_flops(h200, "fp4")
    assert (matmul_dtype(ds, b200, "fp4"), matmul_dtype(ds, h200, "fp4"), matmul_dtype(ds, b200)) == ("fp4", "bf16", "fp8")
    assert DEFAULTS.eta_c_fp4 == 0.35 == DEFAULTS.eta_c / 2
    sm = StepModel(ds, b200, kv_dtype("fp8"), tp=4, weight_dtype="fp4")
    assert (sm.compute_dtype, sm.peak_mm, sm.eta_mm(sm.c)) == ("fp4", 9e15, 0.35)
    # --weight-dtype fp4 lays DeepSeek out as ModelOpt's recipe does, MLA in 16 bits: the NVFP4 linear layers outside
    # the experts are 3 dense layers' gate-up and down and 58 MoE layers' shared experts' two, 6 + 116 = 122 (one 4-bit
    # quantization kernel each), and two inside each of the 58 routed-expert calls.
    assert (sm.quant_small, sm.quant_kernels - sm.quant_small) == (122, 2 * 58)
    # Of the decode's 546 matmuls (61 layers' six MLA ones: q_a, q_b, kv_a, the absorbed k and v, o; 3 dense layers'
    # two; 58 MoE layers' router and shared experts' two: 366 + 6 + 174), 122 take the NVFP4 latency, the rest bf16's;
    # the weights stream at the bf16 block's share, most of their bytes being MLA's.
    assert sm.fp4_share == pytest.approx(122 / 546)
    assert sm.c.gemm_latency_s == pytest.approx((122 * 5.2 + 424 * 2.9) / 546 * 1e-6)
    assert sm.c.eta_gemm == 0.76
    # Qwen3-MoE's attention is NVFP4 too: of each of its 94 layers' three matmuls, qkv and o, the router's in 16 bits.
    qw = StepModel(resolve_model("qwen3-235b-a22b"), b200, kv_dtype("fp8"), tp=4, weight_dtype="fp4")
    assert qw.fp4_share == pytest.approx(2 / 3)
    assert qw.c.gemm_latency_s == pytest.approx((2 * 5.2 + 2.9) / 3 * 1e-6)
    # FLOPs: of a token's dense matmul parameters (active matmul parameters less 58 layers x 8 routed experts x 3 x 7,168 x
    # 2,048), the NVFP4 ones are the dense MLPs' (3 x 3 x 7,168 x 18,432) and the shared experts' (58 x 3 x 7,168 x 2,048);
    # the rest (MLA, the router, the LM head) run at the 16-bit peak x eta_c, the experts at the fp4 peak x their share.
    experts, mlp, shared = 58 * 8 * 3 * 7168 * 2048, 3 * 3 * 7168 * 18432, 58 * 3 * 7168 * 2048
    dense = ds.params_active - ds.embedding_params - experts
    assert sm.fp4_flops == pytest.approx((mlp + shared) / dense)
    s, f = (mlp + shared) / dense, experts / (dense + experts)
    moe = 0.489 * 512 / (512 + 3600)  # no engine named: the CUTLASS MoE's share at 512 a GPU
    per_flop = (1 - f) * (s / (0.35 * 9e15) + (1 - s) / (0.70 * 2.25e15)) + f / (moe * 9e15)
    assert sm.inv_mm == pytest.approx(per_flop, abs=0)
    h = StepModel(ds, h200, kv_dtype("fp8"), tp=4, weight_dtype="fp4")
    assert (h.compute_dtype, h.quant_kernels, h.peak_mm) == ("bf16", 0, 989.5e12)  # gpu_specs/h200.yaml flops_bf16


def test_nvfp4_experts_take_the_tensorrt_llm_gen_kernel_where_the_release_or_the_deployment_picks_it():
    """NVFP4 routed experts at the fp4 peak without EP: the TensorRT-LLM-gen fp4 kernel where vLLM from 0.15 or SGLang
    from 0.5.10 picks it for DeepSeek's, Qwen3's or GLM-4.5/4.6's experts, or --moe-backend trtllm asks for it
    (moe_flashinfer_fp4_s 14 us, share 0.429 n / (n + 1095)); else a CUTLASS grouped-GEMM MoE (moe_cutlass_fp4_s 86 us,
    0.489 n / (n + 3600)). Both fitted to AIConfigurator's measured B200 tables (bench/fit_moe_eta.py DIR b200-fp4)."""
    from kvcalc.engine.engines import engine, with_moe_backend
    from kvcalc.engine.steptime import MOE_ETA, MOE_ETA_OTHER

    ds, b200 = resolve_model("deepseek-v3"), resolve_gpu("b200")

    def sm(release: str, backend: str | None = None, ep: int = 1) -> StepModel:
        eng = with_moe_backend(engine(release), backend)
        return StepModel(ds, b200, kv_dtype("fp8"), tp=4, weight_dtype="fp4", engine=eng, ep=ep)

    assert (DEFAULTS.moe_flashinfer_fp4_s, DEFAULTS.moe_cutlass_fp4_s) == (14e-6, 86e-6)
    assert MOE_ETA["fp4_flashinfer"] == (0.429, 1095.0) and MOE_ETA["fp4_cutlass"] == (0.489, 3600.0)
    runner = {
        (r, b): sm(r, b).moe_runner
        for r, b in (
            ("vllm@0.14", None),
            ("vllm@0.15", None),
            ("vllm", None),
            ("sglang@0.5.9", None),
            ("sglang@0.5.12", None),
            ("sglang", None),
            ("trtllm@1.1", None),
            ("trtllm@1.1", "trtllm"),
            ("sglang@0.5.9", "flashinfer_trtllm"),
        )
    }
    fi = [k for k, v in runner.items() if v == "flashinfer_trtllm_fp4"]
    assert fi == [
        ("vllm@0.15", None),
        ("vllm", None),
        ("sglang@0.5.12", None),
        ("sglang", None),
        ("trtllm@1.1", "trtllm"),
        ("sglang@0.5.9", "flashinfer_trtllm"),
    ]
    assert {v for k, v in runner.items() if k not in fi} == {"cutlass_fp4"}
    old, new = sm("trtllm@1.1"), sm("trtllm@1.1", "trtllm")
    assert new.kernels.moe_flashinfer_fp4 == old.kernels.moe_cutlass_fp4 == 58 and old.kernels.moe_flashinfer_fp4 == 0
    # 58 calls at 14 us in place of 86: 4.176 ms less a step.
    assert old.layer_gaps_s - new.layer_gaps_s == pytest.approx(58 * 72e-6)
    # 2,048-wide experts over 4 GPUs: 512 a GPU.
    assert new.moe_eta(new.c) == pytest.approx(0.429 * 512 / (512 + 1095))
    assert old.moe_eta(old.c) == pytest.approx(0.489 * 512 / (512 + 3600))
    # Under EP: MOE_ETA_OTHER's 16-bit rate, 0.15 x 2.25 / 9 of the fp4 peak; the default runner's figures (28 us and
    # 10 for the quantization) unless the deployment asks for the TensorRT-LLM-gen kernel, which SGLang runs "regardless
    # of EP" (0.5.3): 58 calls at 14 us.
    ep = sm("vllm@0.15", ep=4)
    assert ep.moe_runner == "default" and ep.moe_eta(ep.c) == pytest.approx(MOE_ETA_OTHER * 2.25 / 9)
    # Off compute capability 10 (a spec of an RTX 5090 given an fp4 peak), the TensorRT-LLM-gen kernels do not run.
    rtx = dataclasses.replace(resolve_gpu("rtx5090"), flops_fp4=1676e12 / 2)
    off = StepModel(ds, rtx, kv_dtype("fp8"), tp=4, weight_dtype="fp4", engine=with_moe_backend(engine("vllm@0.15"), "trtllm"))
    assert (off.compute_dtype, off.moe_runner) == ("fp4", "cutlass_fp4")
    asked = sm("sglang@0.5.3", "trtllm", ep=4)
    assert asked.moe_runner == "flashinfer_trtllm_fp4" and asked.moe_eta(asked.c) == pytest.approx(MOE_ETA_OTHER * 2.25 / 9)
    plain = sm("sglang@0.5.3", ep=4)
    assert plain.layer_gaps_s - asked.layer_gaps_s == pytest.approx(58 * (28e-6 + 10e-6 - 14e-6))
    assert "58 fused routed-expert calls at 14 us (the TensorRT-LLM-gen NVFP4 kernel)" in " ".join(new.describe().split())
    # Its small kernels name the 122 quantizations for what they are (3 x 2 dense + 58 x 2 shared NVFP4 matmuls).
    assert "122 of them quantizing the NVFP4 matmuls' activations" in " ".join(new.describe().split())
    text = " ".join((Path(__file__).parent.parent / "docs" / "engines.md").read_text().split())
    # (12.98 and 8.81 under TensorRT-LLM until its deployments took its own measured all-reduce, 2026-12-08)
    assert [round(s.step(1, 1000).t_step_s * 1e3, 2) for s in (sm("vllm@0.14"), sm("vllm@0.15"), old, new)] == [
        12.77,
        8.60,
        12.74,
        8.57,
    ]
    assert (
        "DeepSeek-R1 in NVFP4 at TP 4 on B200s, one request of 1,000 tokens: 12.77 ms a step under vLLM 0.14, 8.60 under 0.15"
        in text
    )
    assert "TensorRT-LLM 1.1: 12.98 ms with its default CUTLASS backend, 8.81 with `--moe-backend trtllm`" in text
    assert "(12.74 and 8.57 since TensorRT-LLM deployments take its own measured all-reduce, 2026-12-08," in text
    assert 'SGLang runs it "regardless of EP" (`layers/moe/ep_moe/layer.py get_moe_impl_class`, 0.5.3)' in text


def test_moe_backend_trtllm_prices_every_experts_format_it_has_figures_for_and_says_where_it_has_none():
    """--moe-backend trtllm on compute capability 10: fp8 experts take FlashInfer's TensorRT-LLM fp8 kernel's figures
    (22 us a call where vLLM 0.14's default Triton ones are 28 + 10) and 16-bit ones its 16-bit kernel's (8 us where
    Triton's are 28), without EP; elsewhere (Hopper, EP, MXFP4 experts) the default kernel's, and the explanation says so."""
    from kvcalc.engine.engines import engine, with_moe_backend

    asked = with_moe_backend(engine("vllm@0.14"), "trtllm")

    def sm(name: str, gpu: str = "b200", ep: int = 1, eng=asked) -> StepModel:
        return StepModel(resolve_model(name), resolve_gpu(gpu), kv_dtype("fp8"), tp=8, ep=ep, engine=eng)

    ds, plain = sm("deepseek-v3"), sm("deepseek-v3", eng=engine("vllm@0.14"))
    assert (ds.moe_runner, plain.moe_runner) == ("flashinfer_trtllm", "default")
    assert plain.layer_gaps_s - ds.layer_gaps_s == pytest.approx(58 * (28e-6 + 10e-6 - 22e-6))
    qwen = sm("qwen3-235b-a22b")
    assert qwen.moe_runner == "flashinfer_trtllm_bf16" and not qwen.moe_backend_unpriced
    for s in (sm("deepseek-v3", "h200"), sm("deepseek-v3", ep=8), sm("gpt-oss-120b")):
        assert s.moe_runner == "default" and s.moe_backend_unpriced
        assert "--moe-backend trtllm is not priced for these experts here" in " ".join(s.describe().split())
    assert "not priced" not in " ".join(ds.describe().split())


def test_roofline_prices_a_v0_decode_past_max_seq_len_to_capture_eagerly(cli):
    # vLLM V0 (Engine.decode_graph_max_len): a batch of sequences of 8,193 tokens decodes without its CUDA graph,
    # one of 8,192 with it; roofline's rows (decode_columns) and step() agree on both, and vLLM V1 has no such limit.
    from kvcalc.engine.engines import engine

    m, g = resolve_model("llama3.1-8b"), resolve_gpu("h100")
    rows = cli(
        "roofline",
        "--model",
        "llama3.1-8b",
        "--gpu",
        "h100",
        "--engine",
        "vllm@0.6",
        "--batch",
        "1,4",
        "--seq",
        "8192,8193",
        "--json",
    ).json()["rows"]
    v0, v1 = StepModel(m, g, BF16, engine=engine("vllm@0.6")), StepModel(m, g, BF16, engine=engine("vllm@0.11"))
    for r in rows:
        assert r["t_step_s"] == pytest.approx(v0.step(r["batch"], r["seq"]).t_step_s, rel=1e-12)
    for b in (1, 4):
        graphed, eager = v0.step(b, 8192), v0.step(b, 8193)
        # The eager step is the host's issue of its kernels after the scheduler's own time (eager_extra_s).
        assert eager.t_step_s == pytest.approx(
            max(graphed.t_step_s, v0.c.fixed_s + v0.c.per_request_s * b + v0.eager_host_total_s), rel=1e-3
        )
        assert eager.t_step_s > graphed.t_step_s
        assert v1.step(b, 8193).t_step_s - v1.step(b, 8192).t_step_s < 1e-6


def test_the_v0_capture_length_worked_example_is_as_docs_engines_says():
    # docs/engines.md: DeepSeek-R1 at TP 8 on H200s under vLLM 0.7.3 (vllm@0.7.2), 4 requests: 84.6 ms a step at 9,000
    # tokens (eager: past 8,192), 19.8 ms at 4,000; the MI300X's graphed step of 128 at 9,000, 82.2 ms against 85.1.
    import dataclasses

    from kvcalc.engine.engines import engine, with_all_reduce_backend

    text = " ".join((Path(__file__).resolve().parents[1] / "docs" / "engines.md").read_text().split())
    kd = dataclasses.replace(BF16, auto=True)
    e = engine("vllm@0.7.2")
    graphed = dataclasses.replace(e, decode_graph_max_len=None)
    m = resolve_model("deepseek-v3")
    h200 = StepModel(m, resolve_gpu("h200"), kd, tp=8, engine=e)
    assert [round(h200.step(4, x).t_step_s * 1e3, 1) for x in (9000, 4000)] == [84.6, 19.8]
    # The MI300X sibling ran AMD's ROCm/vllm fork, whose custom all-reduce runs there (tests/serving/cases.yaml
    # all_reduce_backend): 84.0 ms graphed with the 0.7.2 record's RCCL (steptime.custom_ar_runs, 2026-12-07).
    fork = [with_all_reduce_backend(x, "custom") for x in (graphed, e)]
    mi = [StepModel(m, resolve_gpu("mi300x"), kd, tp=8, engine=x).step(128, 9000).t_step_s for x in fork]
    assert [round(t * 1e3, 1) for t in mi] == [82.2, 85.1]
    assert "4 requests of 9,000 tokens: 84.6 ms a step where 4,000 tokens take 19.8" in text
    assert "(82.2 ms against 85.1 at 9,000 tokens)" in text


def test_sglang_0_5_10_to_0_5_12_run_prompts_eagerly_with_experts_on_flashinfer_trtllm():
    # SGLang 0.5.10, 0.5.11 and 0.5.12 turn the piecewise prompt graphs off for the flashinfer_trtllm and
    # flashinfer_mxfp4 MoE runners unless the checkpoint is GptOssForCausalLM ("bypassed topk is incompatible with
    # torch.compile": server_args.py _handle_moe_kernel_config, after _handle_gpu_memory_settings, so the reserve
    # stays); 0.5.13 and 0.5.14 no longer do.
    from kvcalc.engine.engines import engine
    from kvcalc.engine.plan import _eager_prompt_words

    ds, oss, q235 = resolve_model("deepseek-v3"), resolve_model("gpt-oss-120b"), resolve_model("qwen3-235b-a22b")
    b200, h200 = resolve_gpu("b200"), resolve_gpu("h200")
    for v in ("0.5.10", "0.5.11", "0.5.12"):
        e = engine(f"sglang@{v}")
        assert not e.prompt_graphs(1, "NVIDIA", ds, 1, "b200", moe="flashinfer_trtllm")
        assert not e.prompt_graphs(1, "NVIDIA", q235, 1, "b200", moe="flashinfer_trtllm_bf16")
        assert e.prompt_graphs(1, "NVIDIA", ds, 1, "b200", sizing=True, moe="flashinfer_trtllm")
        assert e.prompt_graphs(1, "NVIDIA", ds, 1, "b200", moe="default")
        assert e.prompt_graphs(1, "NVIDIA", oss, 1, "b200", moe="flashinfer_trtllm_fp4")
    for v in ("0.5.13", "0.5.14"):
        assert engine(f"sglang@{v}").prompt_graphs(1, "NVIDIA", ds, 1, "b200", moe="flashinfer_trtllm")
    # The step model takes the runner the release picks by itself: DeepSeek-V3's fp8 experts on FlashInfer's kernel
    # on a B200 (not on an H200), so its prompt steps take the host's issue of their kernels there.
    e12 = engine("sglang@0.5.12")
    sm = StepModel(ds, b200, BF16, tp=8, engine=e12)
    assert sm.moe_runner == "flashinfer_trtllm" and sm.prefill_eager
    assert not StepModel(ds, h200, BF16, tp=8, engine=e12).prefill_eager
    assert not StepModel(ds, b200, BF16, tp=8, engine=engine("sglang@0.5.14")).prefill_eager
    assert StepModel(q235, b200, BF16, tp=8, engine=e12).prefill_eager  # 16-bit experts, the same runner
    said = "a step carrying prompt tokens runs without CUDA graphs"
    assert said in sm.describe()
    assert said not in StepModel(ds, b200, BF16, tp=8, engine=engine("sglang@0.5.14")).describe()
    # And plan's TTFT assumption says where (PP and DP attention turn the graphs off on the H200).
    words = _eager_prompt_words(e12, [b200, h200], ds, DEFAULTS)
    assert "without CUDA graphs on b200 and at PP > 1 on h200 and under DP attention on h200 and elsewhere past 2,048" in words


def test_sglang_0_5_10_to_0_5_19_replay_an_mla_models_prompt_graphs_up_to_2048_tokens():
    # SGLang 0.5.10 to 0.5.19 capture an MLA model's prompt graphs up to 2,048 tokens ("For MLA backend ... we set the
    # max tokens to 2048 by default": server_args.py piecewise_cuda_graph_max_tokens, 0.5.10 to 0.5.13;
    # prefill_cuda_graph_config.max_bs, 0.5.14 to 0.5.19), 0.5.23 up to min(8,192, the chunk), and the runner replays a
    # step only at num_tokens <= max_num_tokens (0.5.12; 0.5.15 to 0.5.19); another model's reach the chunk.
    import dataclasses as dc

    from kvcalc.engine.engines import engine

    ds, q8, h200 = resolve_model("deepseek-v3"), resolve_model("qwen3-8b"), resolve_gpu("h200")
    for v in ("0.5.12", "0.5.14", "0.5.18", "0.5.19"):
        sm = StepModel(ds, h200, BF16, tp=8, engine=engine(f"sglang@{v}"))
        assert not sm.prefill_eager and sm.prefill_graph_max == 2048
        assert not sm.eager(True, 1, 2048) and sm.eager(True, 1, 2049) and not sm.eager(False, 64, 4096)
    cur = StepModel(ds, h200, BF16, tp=8, engine=engine("sglang"))
    assert cur.prefill_graph_max == 8192 and not cur.eager(True, 1, 8192) and cur.eager(True, 1, 8193)
    # 0.5.15 and 0.5.16 run an MLA model's prompts without graphs at all; 0.5.9 captures none: no cap to speak of.
    assert StepModel(ds, h200, BF16, tp=8, engine=engine("sglang@0.5.16")).prefill_graph_max is None
    assert engine("sglang@0.5.9").prefill_graph_max_mla is None
    # plan's TTFT assumption says so, for an MLA model only.
    from kvcalc.engine.plan import _eager_prompt_words

    said = "elsewhere past 2,048 tokens (its largest prompt graph for an MLA model)"
    assert said in _eager_prompt_words(engine("sglang@0.5.19"), [h200], ds, DEFAULTS)
    assert "past 8,192 tokens (its largest prompt graph for an MLA model)" in _eager_prompt_words(
        engine("sglang"), [h200], ds, DEFAULTS
    )
    assert "largest prompt graph" not in _eager_prompt_words(engine("sglang@0.5.19"), [h200], q8, DEFAULTS)
    assert StepModel(q8, h200, BF16, engine=engine("sglang@0.5.12")).prefill_graph_max is None
    assert StepModel(ds, h200, BF16, tp=8, engine=engine("vllm")).prefill_graph_max is None
    # A prompt step of 3,000 tokens takes at least the host's issue of its kernels; without the cap it does not, where
    # its GPU work is the shorter (GLM-4.7-Flash, an MLA model, on one B200; DeepSeek-V3's 3,000 tokens on 8 H200s keep
    # the GPU the longer, so the cap costs nothing there).
    e, flash, b200 = engine("sglang@0.5.12"), resolve_model("glm-4.7-flash"), resolve_gpu("b200")
    capped = StepModel(flash, b200, BF16, engine=e)
    free = StepModel(flash, b200, BF16, engine=dc.replace(e, prefill_graph_max_mla=None))
    issue = capped.eager_prompt_total_s
    assert free.step(0, 0, 3000, 3000).t_step_s < issue <= capped.step(0, 0, 3000, 3000).t_step_s
    ms = [round(x * 1e3, 1) for x in (free.step(0, 0, 3000, 3000).t_step_s, capped.step(0, 0, 3000, 3000).t_step_s, issue)]
    big = StepModel(ds, h200, BF16, tp=8, engine=e)
    unchanged = StepModel(ds, h200, BF16, tp=8, engine=dc.replace(e, prefill_graph_max_mla=None)).step(0, 0, 3000, 3000)
    # The GPU's 140.1 ms outlasts the issue; the host's own 0.504 ms no longer runs beside it (async_host).
    assert (round(unchanged.t_step_s * 1e3, 1), round(big.step(0, 0, 3000, 3000).t_step_s * 1e3, 1)) == (140.1, 140.6)
    assert big.step(0, 0, 3000, 3000).t_step_s - unchanged.t_step_s == pytest.approx(0.5e-3 + 4e-6)
    doc = " ".join((Path(__file__).resolve().parent.parent / "docs" / "engines.md").read_text().split())
    assert ms == [45.8, 47.5, 47.0]
    assert "GLM-4.7-Flash on one B200 goes from 45.8 ms to 47.5 (the host's 47.0 ms issue of its kernels, after" in doc
    assert "DeepSeek-V3's on 8 H200s from 140.1 ms to 140.6" in doc
    assert capped.step(0, 0, 2000, 2000).t_step_s == free.step(0, 0, 2000, 2000).t_step_s
    assert "a step carrying more than 2,048 tokens with prompt tokens runs without CUDA graphs" in capped.describe()
    # The simulator's spans follow it: a span carrying 3,000 prompt tokens beside 10 decodes pays the host's issue.
    m0, _, c0, _, o = capped.lines(10, 500.0, 3000)
    assert max(m0, c0) + o >= issue


def test_vllms_full_decode_only_cudagraph_mode_runs_prompt_steps_eagerly():
    # vLLM's cudagraph_mode FULL_DECODE_ONLY (vllm/config/compilation.py CUDAGraphMode, 0.10.2: "Mixed prefill-decode
    # batches are run without cudagraphs"): a step that carries prompt tokens takes at least the host's issue of its
    # kernels, each at eager_host_s (42 us), where the release's piecewise graphs would replay it; decode-only steps keep
    # their full graphs. Llama-3.3-70B fp8 at TP 8 on B200s, a 927-token prompt alone: the GPU's work is a few ms, so
    # the step is the issue of its kernels (their count as layer_kernels gives them at fp8, 80 layers).
    from kvcalc.engine.engines import engine, with_cudagraph_mode
    from kvcalc.errors import KvcalcError

    m, g = resolve_model("llama3.3-70b"), resolve_gpu("b200")
    e = engine("vllm@0.10")
    on = StepModel(m, g, kv_dtype("fp8"), 8, engine=with_cudagraph_mode(e, "full_decode_only"), weight_dtype="fp8")
    off = StepModel(m, g, kv_dtype("fp8"), 8, engine=e, weight_dtype="fp8")
    assert on.prefill_eager and not off.prefill_eager
    kernels = on.prompt_kernels.total
    assert kernels % 80 == 0 and on.eager_prompt_total_s == pytest.approx(kernels * 42e-6)
    prompt_on, prompt_off = on.step(0, 0.0, 927).t_step_s, off.step(0, 0.0, 927).t_step_s
    assert prompt_off < on.eager_prompt_total_s <= prompt_on < on.eager_prompt_total_s + 2e-3
    # (the host's own step work, fixed_s and 4 us a request, before the forward: eager_extra_s)
    assert on.step(8, 1000).t_step_s == off.step(8, 1000).t_step_s  # decode steps as before
    text = " ".join((Path(__file__).parent.parent / "docs" / "simulation.md").read_text().split())
    assert kernels == 1120 and f"{on.eager_prompt_total_s * 1e3:.1f}" == "47.0"
    assert (f"{prompt_on * 1e3:.1f}", f"{prompt_off * 1e3:.1f}") == ("47.5", "27.5")
    assert "1,120 kernels at 42 us, 47.0 ms, so the step takes 47.5 ms" in text and "piecewise graphs run it in 27.5 ms" in text
    for mode in ("default", "piecewise", "full_and_piecewise"):
        assert with_cudagraph_mode(e, mode) == e
    for bad, says in (("none", "NONE and FULL are not modelled"), ("fulldecode", "did you mean full_decode_only")):
        with pytest.raises(KvcalcError, match=says):
            with_cudagraph_mode(e, bad)
    for other in ("sglang", "trtllm", "vllm@0.8"):
        with pytest.raises(KvcalcError, match="it is vLLM's compilation_config cudagraph_mode"):
            with_cudagraph_mode(engine(other), "full_decode_only")


def test_the_mi325x_takes_the_mi300xs_measured_tables():
    # gpu_specs/mi325x.yaml: the MI300X's measured all-reduce, RCCL and GEMM figures (gpu_specs/mi300x.yaml), taken for the
    # MI325X, which no table measures: the same gfx942 die (304 CUs, the same peaks) on the same Infinity Fabric mesh,
    # with HBM3E at 6 TB/s in place of 5.3, the GEMM's share read against its own datasheet bandwidth.
    a, b = resolve_gpu("mi300x"), resolve_gpu("mi325x")
    assert (a.flops_bf16, a.flops_fp8, a.multiprocessors, a.interconnect_bytes_per_s) == (
        b.flops_bf16,
        b.flops_fp8,
        b.multiprocessors,
        b.interconnect_bytes_per_s,
    )
    assert (a.memory_bandwidth_bytes_per_s, b.memory_bandwidth_bytes_per_s) == (5.3e12, 6e12)

    def figures(x: object) -> object:
        return dataclasses.replace(x, notes="")  # type: ignore[type-var]

    for block in ("gemm", "allreduce", "nccl_allreduce"):
        assert figures(getattr(a, block)) == figures(getattr(b, block)), block
        assert "taken for the MI325X, which no table measures" in getattr(b, block).notes
    assert b.gemm is not None and (b.gemm.latency_us, b.gemm.bandwidth_share) == (7.4, 0.58)
    assert b.nccl_allreduce is not None and b.allreduce is not None
    # A decode step's matmuls read at 0.58 of each GPU's own bandwidth: Llama-3.3-70B fp8 at TP 8, one request, the
    # MI325X's weight reads 5.3 / 6 of the MI300X's.
    m = resolve_model("llama3.3-70b")
    ta = StepModel(m, a, kv_dtype("fp8"), 8, weight_dtype="fp8")
    tb = StepModel(m, b, kv_dtype("fp8"), 8, weight_dtype="fp8")
    wa, wb = ta.step(1, 1000).t_memory_s, tb.step(1, 1000).t_memory_s
    assert wb / wa == pytest.approx(5.3 / 6, rel=0.02)
