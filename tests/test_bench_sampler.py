"""bench/sampler_time.py's sort path samples as vLLM's top-k/top-p sampler does: only from the k
largest logits and, within them, only from the smallest set whose probability reaches top_p."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

_spec = importlib.util.spec_from_file_location("sampler_time", Path(__file__).parent.parent / "bench" / "sampler_time.py")
assert _spec and _spec.loader
sampler_time = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sampler_time)


def _args(batch: int, vocab: int, k: int, p: float) -> tuple:
    torch.manual_seed(1)
    logits = (torch.randn(batch, vocab) * 3).to(torch.bfloat16)
    return logits, torch.full((batch,), 0.6), torch.full((batch,), k, dtype=torch.int32), torch.full((batch,), p)


def test_top_k_of_one_is_the_argmax() -> None:
    logits, temp, k, p = _args(16, 500, 1, 1.0)
    assert torch.equal(sampler_time.sort_path(logits, temp, k, p), logits.float().argmax(dim=-1))


def test_samples_stay_within_the_top_k() -> None:
    logits, temp, k, p = _args(8, 300, 5, 1.0)
    allowed = logits.float().topk(5, dim=-1).indices
    seen = set()
    for _ in range(200):
        got = sampler_time.sort_path(logits, temp, k, p)
        assert bool((allowed == got.unsqueeze(1)).any(dim=1).all())
        seen.update(got.tolist())
    assert len(seen) > 8  # more than one token a row is drawn: the path samples, not argmaxes


def test_a_tiny_top_p_keeps_only_the_most_likely_token() -> None:
    logits, temp, k, p = _args(16, 400, 400, 1e-6)
    assert torch.equal(sampler_time.sort_path(logits, temp, k, p), logits.float().argmax(dim=-1))


def test_greedy_and_smoke_run(tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    assert sampler_time.main([str(out), "--smoke"]) == 0
    rows = out.read_text().splitlines()
    assert rows[0] == "path,batch,vocab,us,bytes_per_logit"
    assert [r.split(",")[0] for r in rows[1:]] == ["greedy", "sort", "greedy", "sort"]
