"""kvcalc check: the project's own worked examples, and what a bad check file gets."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_projects_worked_examples_pass(cli):
    r = cli("check", ROOT / "docs" / "worked-examples.yaml")
    assert r.code == 0, r.out + r.err
    assert "0 failed" in r.out and "FAIL" not in r.out


def test_json_summary(cli):
    d = cli("check", ROOT / "docs" / "worked-examples.yaml", "--json").json()
    assert d["failed"] == 0 and d["passed"] == len(d["results"]) >= 20


def write(tmp_path, text):
    p = tmp_path / "plan.yaml"
    p.write_text(text)
    return p


def test_a_failing_expectation_exits_1(cli, tmp_path):
    p = write(
        tmp_path,
        """
examples:
  - name: wrong on purpose
    run: size --model llama2-7b --seq 1
    expect:
      kv_bytes_per_token: 268435456
""",
    )
    r = cli("check", p)
    assert r.code == 1 and "FAIL" in r.out and "0 passed, 1 failed" in r.out


def test_capacity_plan_with_bounds(cli, tmp_path):
    p = write(
        tmp_path,
        """
examples:
  - name: llama3.1-70b on 4 x h100 at 8k still serves 50 requests
    run: [fit, --model, llama3.1-70b, --gpu, h100, --tp, 4, --seq, 8k]
    expect:
      max_concurrency: {min: 50}
      kv_pool_tokens: {min: 400000, max: 600000}
  - name: tolerances
    run: kvcalc roofline --model llama2-7b --gpu a100 --seq 4096 --kv-dtype fp16
    expect:
      t_bound_s: {value: 0.007534, abs: 1.0e-6}
      kv_share: {value: 0.1398, rel: 0.001}
""",
    )
    r = cli("check", p, "--json")
    assert r.code == 0, r.out
    assert r.json()["passed"] == 4


@pytest.mark.parametrize(
    "text,needles",
    [
        (
            "examples:\n  - name: x\n    run: size --model llama2-7b --seq 1\n    expect: {kv_bytes_per_tokn: 1}\n",
            ["'x'", "kv_bytes_per_tokn", "kv_bytes_per_token"],
        ),
        (
            "examples:\n  - name: x\n    run: size --model llama2-7b --seq 1\n    expect: {kv_bytes_per_token: {value: 1, tolerance: 2}}\n",
            ["'x'", "tolerance"],
        ),
        (
            "examples:\n  - name: x\n    run: size --model nosuch --seq 1\n    expect: {kv_bytes_per_token: 1}\n",
            ["'x'", "nosuch"],
        ),
        ("examples:\n  - name: x\n    expect: {a: 1}\n", ["'x'", "run"]),
        ("examples:\n  - name: x\n    run: size --model llama2-7b --seq 1\n", ["'x'", "expect"]),
        ("examples: []\n", ["no examples"]),
        ("- 1\n", ["no examples"]),
        ("examples:\n  - name: x\n    run: check other.yaml\n    expect: {a: 1}\n", ["other than check"]),
        (
            "examples:\n  - name: x\n    run: size --model llama2-7b --seq 1\n    expect: {kv_bytes_per_token: {rel: -1, value: 3}}\n",
            ["rel"],
        ),
    ],
)
def test_bad_check_files(cli, tmp_path, text, needles):
    r = cli("check", write(tmp_path, text))
    assert r.code == 2, (r.out, r.err)
    assert len(r.err.strip().splitlines()) == 1
    for n in needles:
        assert n in r.err, r.err
