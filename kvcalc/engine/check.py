"""Checks: expected values against what a command gave, exact or within a tolerance or bounds."""

from __future__ import annotations

import difflib
from dataclasses import field
from typing import Any

from kvcalc._record import record
from kvcalc.inputs.checkfile import Example


@record(frozen=True)
class CheckResult:
    example: str
    key: str
    expected: str
    got: Any
    delta: str
    passed: bool


@record(frozen=True)
class CheckReport:
    passed: int
    failed: int
    results: list[CheckResult] = field(default_factory=list)


def lookup(doc: Any, path: str) -> Any:
    """A dotted path into the JSON output: 'per_gpu.kv_bytes_total', 'rows.2.t_bound_s', 'rows.-1.seq'."""
    cur = doc
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
            continue
        if isinstance(cur, list):
            digits = part[1:] if part.startswith("-") else part
            if digits.isdigit() and len(digits) < 10 and -len(cur) <= int(part) < len(cur):
                cur = cur[int(part)]
                continue
        raise KeyError(part)
    return cur


def keys_of(doc: Any, prefix: str = "") -> list[str]:
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append(prefix + k)
            if isinstance(v, dict):
                out += keys_of(v, prefix + k + ".")
    return out


def nearest_key(doc: Any, key: str) -> str | None:
    near = difflib.get_close_matches(key, keys_of(doc), n=1)
    return near[0] if near else None


def compare(example: Example, doc: Any) -> list[CheckResult]:
    """Each expectation of an example against the command's JSON; a missing key raises KeyError."""
    out = []
    for e in example.expect:
        got = lookup(doc, e.key)
        ok, delta = e.check(got)
        out.append(CheckResult(example.name, e.key, e.describe(), got, delta, ok))
    return out


def report(results: list[CheckResult]) -> CheckReport:
    failed = sum(not r.passed for r in results)
    return CheckReport(len(results) - failed, failed, results)
