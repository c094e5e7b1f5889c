"""The per-request cost of vLLM V1's scheduler in steady decode: Scheduler.schedule() plus
update_from_output(), timed on the CPU with vLLM's own code (no GPU, no model weights).

Usage (a scratch virtualenv; vLLM is not a kvcalc dependency):
    pip install vllm==0.11.0 && python bench/vllm_scheduler.py

This is the source of the step-time model's per_request_s (kvcalc.engine.steptime.DEFAULT_SOURCES):
on a 2-vCPU VM it printed 8.0 to 13.8 us a running request a step for 32 to 1,024 requests.
A config.json with Qwen3-14B's shapes (architecture llama: only the scheduler reads it) is written
to a temporary folder first.
"""

# ruff: noqa
import json
import os
import tempfile

_MODEL = tempfile.mkdtemp()
with open(os.path.join(_MODEL, "config.json"), "w") as _f:
    _f.write(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "model_type": "llama",
                "hidden_size": 5120,
                "intermediate_size": 17408,
                "num_attention_heads": 40,
                "num_key_value_heads": 8,
                "head_dim": 128,
                "num_hidden_layers": 40,
                "vocab_size": 151936,
                "max_position_embeddings": 40960,
                "rms_norm_eps": 1e-6,
                "torch_dtype": "bfloat16",
                "rope_theta": 1000000,
            }
        )
    )

import vllm.platforms as _P

_P.builtin_platform_plugins["cpu"] = lambda: "vllm.platforms.cpu.CpuPlatform"
import time, sys, statistics, torch
from vllm.config import CacheConfig, ModelConfig, SchedulerConfig, VllmConfig
from vllm.sampling_params import SamplingParams
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
from vllm.v1.request import Request
from vllm.v1.outputs import ModelRunnerOutput
from vllm.v1.structured_output import StructuredOutputManager


def make(n, prefix_caching):
    bs = 16
    sc = SchedulerConfig(max_num_seqs=n, max_num_batched_tokens=max(8192, n), max_model_len=8192, enable_chunked_prefill=True)
    mc = ModelConfig(model=_MODEL, dtype="bfloat16", seed=0, skip_tokenizer_init=True)
    cc = CacheConfig(
        block_size=bs, gpu_memory_utilization=0.9, swap_space=0, cache_dtype="auto", enable_prefix_caching=prefix_caching
    )
    vc = VllmConfig(scheduler_config=sc, model_config=mc, cache_config=cc)
    nb = n * 600 // bs + 100
    kv = KVCacheConfig(
        num_blocks=nb,
        kv_cache_tensors=[],
        kv_cache_groups=[KVCacheGroupSpec(["layer"], FullAttentionSpec(bs, 1, 1, torch.float32, False))],
    )
    cc.num_gpu_blocks = nb
    return Scheduler(vllm_config=vc, kv_cache_config=kv, log_stats=True, structured_output_manager=StructuredOutputManager(vc))


def run(n, prompt_len=200, steps=60, prefix_caching=True):
    s = make(n, prefix_caching)
    from vllm.utils import sha256 as _sha

    init_none_hash(_sha)
    bh = get_request_block_hasher(16, _sha)
    sp = SamplingParams(ignore_eos=True, max_tokens=100000, temperature=0.6, top_p=0.95, top_k=20)
    for i in range(n):
        s.add_request(
            Request(
                request_id=str(i),
                prompt_token_ids=[(i * 7 + j) % 150000 for j in range(prompt_len)],
                sampling_params=sp,
                pooling_params=None,
                eos_token_id=2,
                block_hasher=bh,
            )
        )
    ts = []
    tu = []
    for step in range(steps + (n * prompt_len) // 8192 + 3):
        t0 = time.perf_counter()
        so = s.schedule()
        t1 = time.perf_counter()
        ids = list(so.num_scheduled_tokens.keys())
        # one sampled token per request that finished its prompt
        mro = ModelRunnerOutput(
            req_ids=ids,
            req_id_to_index={r: k for k, r in enumerate(ids)},
            sampled_token_ids=[[5] for _ in ids],
            logprobs=None,
            prompt_logprobs_dict={},
            pooler_output=[],
        )
        t2 = time.perf_counter()
        s.update_from_output(so, mro)
        t3 = time.perf_counter()
        decode_only = all(v == 1 for v in so.num_scheduled_tokens.values()) and len(ids) == n
        if decode_only:
            ts.append(t1 - t0)
            tu.append(t3 - t2)
    return statistics.median(ts) * 1e6, statistics.median(tu) * 1e6, len(ts)


if __name__ == "__main__":
    for pc in (True, False):
        for n in (1, 8, 32, 128, 256, 512, 1024):
            a, b, k = run(n, prefix_caching=pc)
            print(
                f"prefix_caching={pc} running={n:5d}  schedule={a:8.1f} us  update_from_output={b:8.1f} us  total/req={(a + b) / n:6.2f} us  (decode steps {k})",
                flush=True,
            )
