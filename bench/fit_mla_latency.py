"""Derive the MLA decode attention call's latency (GPUSpec.mla, the step model's mla_attn_latency_s) from
AIConfigurator's measured vLLM MLA generation module tables, and print SGLang's MLA attention call beside it.

The tables: ai-dynamo/aiconfigurator at 095f58a,
aic-core/src/aiconfigurator_core/systems/data/<gpu>/mla/vllm/0.24.0/mla_generation_module_perf.parquet, saved as
<gpu>-vllm-0.24-module.parquet (`git show 095f58a:<path> > ...`): vLLM's whole MLA attention module of DeepSeek-V3
(its projections, norms, rotary, the absorbed multiplies, the attention call and the latent cache's write) timed
at batch sizes 1 to 1,024, contexts 2 to 131,072 tokens and 1 to 128 heads a GPU; and, where present,
.../mla/sglang/<release>/generation_mla_perf.parquet saved as <gpu>-sgl-<release>.parquet: SGLang's attention call
alone (GPUSpec.mla sglang_latency_us: its figure at 1,023 tokens).
Needs pandas and pyarrow, which kvcalc does not:

    python bench/fit_mla_latency.py DIR    # DIR holds those files

For each GPU kvcalc has matmul figures for, the module at batch 1, 16 heads a GPU (TP 8), bf16 matmuls and bf16
KV and 1,024 tokens of context, less what kvcalc's step model charges the module's other kernels at batch 1:
five projections at the GPU's measured matmul latency (gpu_specs/*.yaml gemm.latency_us: the query's and the
latent's down projections run as one, vLLM's fused_qkv_a_proj from 0.10.0, which the collector's DeepseekV2MLAAttention
builds; six until 2026-12-06) and four small kernels at kernel_gap_s (2.7 us). The projections' weights, which the step model streams in its weight term, are left in
(at 16 heads DeepSeek-V3's are 73.3 MB in bf16: 12 us on B200, 18 on H200, 25 on H100 at their matmul shares),
so each figure is an upper bound on the call's own floor by that much; SGLang's call alone, where its table
exists, is printed beside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

# GPU file prefix: the matmul latency kvcalc's spec measures, microseconds (gpu_specs/*.yaml, gemm.latency_us)
GEMM_US = {"h100_sxm": 3.4, "h200_sxm": 3.6, "b200_sxm": 2.9, "gb200": 3.0}
SMALL_US, PROJECTIONS, SMALL = 2.7, 5, 4


def derive(d: Path, gpu: str) -> None:
    m = pd.read_parquet(d / f"{gpu}-vllm-0.24-module.parquet")
    q = m[(m.num_heads == 16) & (m.batch_size == 1) & (m.kv_cache_dtype == "bfloat16") & (m.gemm_type == "bfloat16")]
    by_step = q.groupby("step").latency.median() * 1e3  # the tables' latency is in ms
    module = float(by_step.loc[1024])
    others = PROJECTIONS * GEMM_US[gpu] + SMALL * SMALL_US
    line = (
        f"{gpu} ({', '.join(sorted(q.kernel_source.unique()))}): module {module:.1f} us at 1,024 tokens "
        f"({by_step.min():.1f}-{by_step[by_step.index <= 4096].max():.1f} us over 2 to 4,096), less {others:.1f} "
        f"= {module - others:.1f} us"
    )
    for s in sorted(d.glob(f"{gpu}-sgl-*.parquet")):
        if s.stem.endswith("-bmm"):
            continue
        a = pd.read_parquet(s)
        a = a[(a.num_heads == 16) & (a.batch_size == 1) & (a.kv_cache_dtype == "bfloat16") & (a.step <= 1023)]
        at = a[a.step == 1023].latency.median() * 1e3
        release = s.stem.split("-sgl-")[1]
        line += (
            f"; SGLang {release}'s call alone ({a.kernel_source.iloc[0]}) {a.latency.min() * 1e3:.1f}-"
            f"{a.latency.max() * 1e3:.1f} us, {at:.1f} at 1,023 tokens"
        )
    print(line)


if __name__ == "__main__":
    here = Path(sys.argv[1])
    for g in GEMM_US:
        if (here / f"{g}-vllm-0.24-module.parquet").exists():
            derive(here, g)
