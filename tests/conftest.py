"""Shared fixtures and helpers: the in-process CLI runner, model builders, the one-line-error check.

Tests import the helpers with ``from conftest import dense, make_model, one_line_error``.
"""

import json
import os

os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # Triton 3.9 warns when it is unset

import pytest
from hypothesis import settings

from kvcalc.cli.app import main

# No per-example deadline: CI machines vary in speed, and speed is measured in bench/, not in tests.
settings.register_profile("kvcalc", deadline=None)
settings.load_profile("kvcalc")


class Run:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys, monkeypatch):
    """Run kvcalc in-process: cli('size', '--model', ...) -> Run(code, out, err)."""
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("KVCALC_MODEL", raising=False)
    monkeypatch.delenv("KVCALC_GPU", raising=False)

    def run(*args):
        code = main([str(a) for a in args])
        cap = capsys.readouterr()
        return Run(code, cap.out, cap.err)

    return run


@pytest.fixture
def monkeypatch_env(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("KVCALC_MODEL", raising=False)
    monkeypatch.delenv("KVCALC_GPU", raising=False)
    return monkeypatch


def one_line_error(r, *needles):
    """Bad input: exit code 2, exactly one line on stderr starting 'kvcalc: error: ', no traceback,
    every needle in it."""
    assert r.code == 2, (r.code, r.out, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("kvcalc: error: "), lines[0]
    assert "Traceback" not in r.err and "internal error" not in r.err, r.err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


ATTN = {"kind": "full", "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128}


def make_model(kinds=None, layers=None, **fields):
    """A validated model spec: one full-attention kind (32q/8kv x 128, 32 layers) unless ``kinds`` and
    ``layers`` say otherwise; any other spec field by keyword."""
    from kvcalc.specs.loader import validate

    kinds = kinds or {"attn": dict(ATTN)}
    doc = {
        "name": "test-model",
        "source": {"url": "test"},
        "hidden_size": 4096,
        "vocab_size": 32000,
        "max_position_embeddings": 1 << 20,
        "params_total": 7 * 10**9,
        "layer_kinds": kinds,
        "layers": layers or [{"repeat": 32, "pattern": [next(iter(kinds))]}],
        **fields,
    }
    return validate("model", doc, "test", None)


def dense(L, heads, kv, d, hidden=None, **fields):
    """L full-attention layers of `heads` query heads, `kv` KV heads of `d` dims."""
    return make_model(
        {"attn": {"kind": "full", "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": d}},
        [{"repeat": L, "pattern": ["attn"]}],
        **{"hidden_size": hidden or heads * d, **fields},
    )


def generated_block(doc, begin, end, new, env, command):
    """A generated block of a doc: rewritten where ``env`` is set to "write", else checked (the message
    names ``command``, which rewrites it)."""
    import os

    text = doc.read_text()
    start, stop = text.index(begin), text.index(end) + len(end)
    if os.environ.get(env) == "write":
        doc.write_text(text[:start] + new + text[stop:])
        return
    assert text[start:stop] == new, f"{doc.name} is stale: {command}"


def generated_file(path, new, env, command):
    """A generated file: rewritten where ``env`` is set to "write", else checked (the message names
    ``command``, which rewrites it)."""
    import os

    if os.environ.get(env) == "write":
        path.write_text(new)
        return
    assert path.read_text() == new, f"{path.name} is stale: {command}"
