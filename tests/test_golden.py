"""Golden JSON: every command's --json output for a fixed set of inputs, recorded before the
restructuring of the CLI, engine and render layers (issue 9) and compared after it.

Every key recorded here must still be there with the same value (floats to 1e-9 relative); new
keys may be added. When a later change alters a figure on purpose (an engine rule, a catalog fix),
regenerate with ``KVCALC_GOLDEN=write pytest tests/test_golden.py`` and say why in the commit.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
LOGS = Path(__file__).resolve().parent / "logs"

CASES: dict[str, list[str]] = {
    "size-llama2-7b": ["size", "--model", "llama2-7b", "--seq", "4k", "--batch", "8"],
    "size-gemma3-vllm-tp2": ["size", "--model", "gemma3-27b", "--seq", "128k", "--engine", "vllm", "--tp", "2"],
    "size-deepseek-hf4": ["size", "--model", "deepseek-v3", "--seq", "1k", "--engine", "hf4"],
    "size-jamba-pp2": ["size", "--model", "jamba-v0.1", "--seq", "256k", "--batch", "4", "--pp", "2"],
    "size-llama4-fp8-block": ["size", "--model", "llama4-scout", "--seq", "100000", "--kv-dtype", "fp8", "--block-size", "32"],
    "size-70b-tp8-int4": ["size", "--model", "llama3.1-70b", "--seq", "32k", "--tp", "8", "--kv-dtype", "int4"],
    "fit-8b-h100": ["fit", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8k"],
    "fit-70b-reverse": ["fit", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "4", "--seq", "8k", "-n", "64"],
    "fit-measured": [
        "fit",
        "--model",
        "llama3.1-8b",
        "--gpu",
        "h100",
        "--seq",
        "8k",
        "--gpu-memory",
        "80GiB",
        "--weights",
        "16060522496B",
        "--activation",
        "1GiB",
        "--non-torch",
        "256MiB",
    ],
    "fit-sglang-gemma": ["fit", "--model", "gemma3-27b", "--gpu", "h200", "--seq", "32k", "--engine", "sglang"],
    "fit-trtllm-ds": [
        "fit",
        "--model",
        "deepseek-v3",
        "--gpu",
        "h200",
        "--tp",
        "8",
        "--seq",
        "32k",
        "--engine",
        "trtllm",
        "--kv-dtype",
        "fp8",
    ],
    "fit-plain": [
        "fit",
        "--model",
        "qwen2.5-32b",
        "--gpu",
        "h100",
        "--seq",
        "16k",
        "--engine",
        "plain",
        "--gpu-memory",
        "80GB",
        "--weights",
        "64GB",
    ],
    "fit-qwen3next-a100": ["fit", "--model", "qwen3-next-80b-a3b", "--gpu", "a100-80gb", "--tp", "4", "--seq", "64k"],
    "roofline-one": ["roofline", "--model", "llama2-7b", "--gpu", "a100", "--seq", "4096", "--allreduce"],
    "roofline-grid": [
        "roofline",
        "--model",
        "deepseek-v3",
        "--gpu",
        "h200",
        "--tp",
        "8",
        "--batch",
        "1,64",
        "--seq",
        "1k..16k",
        "--prefill",
        "4k",
        "--allreduce",
    ],
    "roofline-moe-fp8": [
        "roofline",
        "--model",
        "gpt-oss-120b",
        "--gpu",
        "h100",
        "--batch",
        "32",
        "--seq",
        "8k",
        "--compute-dtype",
        "fp8",
    ],
    "paging": [
        "paging",
        "--model",
        "llama3.1-8b",
        "--gpu",
        "h100",
        "--lengths",
        "lognormal:median=600,sigma=1.0",
        "-n",
        "3000",
        "--shared-prefix",
        "100",
        "--max-len",
        "8k",
    ],
    "paging-uniform-pool": [
        "paging",
        "--model",
        "mistral-7b-v0.1",
        "--gpu",
        "a100",
        "--lengths",
        "uniform:100..4000",
        "-n",
        "2000",
        "--pool",
        "20GiB",
        "--block-sizes",
        "8,16,32",
    ],
    "tiers": ["tiers", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--seq", "128k", "--rate", "1"],
    "tiers-70b": ["tiers", "--model", "llama3.1-70b", "--gpu", "h100", "--tp", "4", "--seq", "32k"],
    "models": ["models"],
    "gpus": ["gpus"],
    "show-model": ["show", "qwen3-next"],
    "show-gpu": ["show", "mi355x"],
    "import": ["import", str(ROOT / "tests/configs/gemma3-27b.json"), "--name", "g3"],
    "check": ["check", str(ROOT / "docs/worked-examples.yaml")],
    "explain-vllm-0.8": ["explain-log", str(LOGS / "vllm-0.8-llama3.1-8b.log")],
    "explain-vllm-0.6": ["explain-log", str(LOGS / "vllm-0.6.3-llama2-7b.log")],
    "explain-vllm-0.11": ["explain-log", str(LOGS / "vllm-0.11-qwen3-32b-tp2.log")],
    "explain-sglang": ["explain-log", str(LOGS / "sglang-llama3.1-8b.log")],
}


def _portable(doc):
    """Paths under the checkout written relative to it, so the files do not depend on where it lives."""
    if isinstance(doc, dict):
        return {k: _portable(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_portable(v) for v in doc]
    if isinstance(doc, str):
        return doc.replace(str(ROOT) + "/", "")
    return doc


def _same(want, got, path: str) -> list[str]:
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{path}: want an object, got {type(got).__name__}"]
        out = []
        for k, v in want.items():
            if k not in got:
                out.append(f"{path}.{k}: missing")
            else:
                out += _same(v, got[k], f"{path}.{k}")
        return out
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{path}: want a list of {len(want)}, got {got!r:.200}"]
        return [p for i, (a, b) in enumerate(zip(want, got)) for p in _same(a, b, f"{path}.{i}")]
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return [] if math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-300) else [f"{path}: want {want!r}, got {got!r}"]
    return [] if want == got and type(want) is type(got) else [f"{path}: want {want!r:.200}, got {got!r:.200}"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_json(cli, name):
    r = cli(*CASES[name], "--json")
    assert r.code == 0, r.err
    got = _portable(json.loads(r.out))
    path = GOLDEN / f"{name}.json"
    if os.environ.get("KVCALC_GOLDEN") == "write":
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
        return
    want = json.loads(path.read_text())
    problems = _same(want, got, name)
    assert not problems, "\n".join(problems[:20])
