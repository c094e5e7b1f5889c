"""The sampler's GPU time a decode step, over [requests, vocabulary] logits, on one GPU.

kvcalc's step model charges no sampler time. Read from vLLM's released code (0.11.0: every
tensor-parallel rank all-gathers the logits and samples the whole vocabulary,
model_executor/layers/logits_processor.py and v1/worker/gpu_model_runner.py; the model's
generation_config gives every request its temperature, top_p and top_k from 0.8.0,
``--generation-config auto``), a step's sampler moves about 225-300 bytes a logit where PyTorch's
sort does top-k/top-p (v1/sample/ops/topk_topp_sampler.py: plain pip installs of 0.9-0.11, the
default from 0.12), 40-150 where FlashInfer's kernel does (the Docker images of 0.8.5-0.11.0), and
about 10 for a greedy batch (an argmax). Those are estimates from the code; this script measures
the time on the GPU, so that a sampler term can be cited to a measurement.

It times, eagerly (vLLM runs its sampler outside the CUDA graph), for each batch size and
vocabulary:

  greedy:  the logits cast to fp32 and their argmax;
  sort:    the fp32 cast, the temperature divide, an ascending sort of each row, the top-k and
           top-p masks over the sorted values (a softmax and a cumulative sum for top-p), the masked
           values scattered back to vocabulary order, a softmax, and a sample by the
           exponential-race (probabilities over Exp(1) draws, then argmax), the sequence vLLM
           0.11.0's PyTorch path runs;
  flashinfer: where flashinfer imports, a softmax and its top-k/top-p sampling kernel.

Each is run WARMUP times, then REPEATS times between two CUDA events; the time per call is their
mean. Writes CSV: path, batch, vocab, us, bytes_per_logit (us x BANDWIDTH / (batch x vocab): the
bytes a logit that time would move at the datasheet bandwidth given with --bandwidth, blank
without it).

    python bench/sampler_time.py OUT.csv --bandwidth 4.8e12   # on a CUDA GPU (H200's 4.8 TB/s)
    python bench/sampler_time.py OUT.csv --smoke              # CPU: two small shapes, to check it runs
"""

from __future__ import annotations

import csv
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

BATCHES = (1, 8, 32, 64, 128, 256, 512)
VOCABS = (128_256, 151_936)  # Llama 3.x; Qwen2.5 / Qwen3 (config.json vocab_size)
TOP_K, TOP_P, TEMPERATURE = 20, 0.95, 0.6  # Qwen3's generation_config.json
WARMUP, REPEATS = 5, 50

Sampler = Callable[..., torch.Tensor]


def greedy(logits: torch.Tensor) -> torch.Tensor:
    return logits.float().argmax(dim=-1)


def sort_path(logits: torch.Tensor, temp: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    x = logits.float()
    x.div_(temp.unsqueeze(1))
    vals, idx = x.sort(dim=-1, descending=False)
    vocab = vals.shape[1]
    kth = vals.gather(1, (vocab - k).unsqueeze(1).long())
    vals.masked_fill_(vals < kth, float("-inf"))
    cum = vals.softmax(dim=-1).cumsum(dim=-1)
    drop = cum <= 1 - p.unsqueeze(1)
    drop[:, -1] = False
    vals.masked_fill_(drop, float("-inf"))
    x = torch.empty_like(vals).scatter_(1, idx, vals)
    probs = x.softmax(dim=-1)
    q = torch.empty_like(probs).exponential_()
    return probs.div(q).argmax(dim=-1)


def flashinfer_path() -> Sampler | None:
    try:
        from flashinfer import sampling  # type: ignore[import-not-found]
    except Exception:
        return None

    def run(logits: torch.Tensor, temp: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        probs = (logits.float() / temp.unsqueeze(1)).softmax(dim=-1)
        return sampling.top_k_top_p_sampling_from_probs(probs, k, p)

    return run


def timed(fn: Sampler, args: tuple[torch.Tensor, ...], cuda: bool, warmup: int, repeats: int) -> float:
    for _ in range(warmup):
        fn(*args)
    if cuda:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            fn(*args)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1e3 / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        fn(*args)
    return (time.perf_counter() - t0) * 1e6 / repeats


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    out, smoke = Path(argv[0]), "--smoke" in argv
    bandwidth = float(argv[argv.index("--bandwidth") + 1]) if "--bandwidth" in argv else None
    cuda = torch.cuda.is_available() and not smoke
    if not cuda and not smoke:
        print("no CUDA GPU: run with --smoke to check the script on the CPU", file=sys.stderr)
        return 2
    device = "cuda" if cuda else "cpu"
    batches, vocabs = ((1, 4), (1_000,)) if smoke else (BATCHES, VOCABS)
    warmup, repeats = (1, 2) if smoke else (WARMUP, REPEATS)
    paths: dict[str, Sampler] = {"greedy": greedy, "sort": sort_path}
    fi = flashinfer_path() if cuda else None
    if fi is not None:
        paths["flashinfer"] = fi
    torch.manual_seed(0)
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["path", "batch", "vocab", "us", "bytes_per_logit"])
        for vocab in vocabs:
            for batch in batches:
                logits = torch.randn(batch, vocab, device=device, dtype=torch.bfloat16) * 4
                temp = torch.full((batch,), TEMPERATURE, device=device)
                k = torch.full((batch,), min(TOP_K, vocab), device=device, dtype=torch.int32)
                p = torch.full((batch,), TOP_P, device=device)
                for name, fn in paths.items():
                    args = (logits,) if name == "greedy" else (logits, temp, k, p)
                    us = timed(fn, args, cuda, warmup, repeats)
                    per = f"{us * 1e-6 * bandwidth / (batch * vocab):.1f}" if bandwidth else ""
                    w.writerow([name, batch, vocab, f"{us:.1f}", per])
                    print(f"{name:10s} batch {batch:4d} vocab {vocab:7,d}: {us:9.1f} us {per and per + ' B a logit'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
