"""kvcalc check: run a file of worked examples and compare named JSON keys with expectations."""

from __future__ import annotations

import io
import shlex
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from kvcalc.cli.app import app
from kvcalc.errors import KvcalcError

ACCEPTED = ("a mapping with 'examples': a list of {name, run, expect}; run is a kvcalc command (a string or a list), "
            "expect maps JSON keys (dotted paths) to a value or {value, abs|rel} or {min, max}")


@dataclass
class Expectation:
    key: str
    value: Any = None
    abs: float | None = None
    rel: float | None = None
    min: float | None = None
    max: float | None = None

    def describe(self) -> str:
        if self.value is None:
            parts = ([f">= {self.min:,}"] if self.min is not None else []) + ([f"<= {self.max:,}"] if self.max is not None else [])
            return " and ".join(parts)
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            return str(self.value)
        v = f"{self.value:,}" if isinstance(self.value, int) else f"{self.value:.6g}"
        if self.abs:
            v += f" ±{self.abs:g}"
        elif self.rel:
            v += f" ±{self.rel:.0e}r"
        return v

    def check(self, got) -> tuple[bool, str]:
        """(passed, delta as text)."""
        if self.value is None:
            if not isinstance(got, (int, float)) or isinstance(got, bool):
                return False, "not a number"
            ok = (self.min is None or got >= self.min) and (self.max is None or got <= self.max)
            return ok, ""
        if isinstance(self.value, (int, float)) and not isinstance(self.value, bool) and isinstance(got, (int, float)) \
                and not isinstance(got, bool):
            delta = got - self.value
            tol = self.abs if self.abs is not None else (abs(self.value) * self.rel if self.rel is not None else None)
            if tol is None:
                tol = 0 if isinstance(self.value, int) and isinstance(got, int) else abs(self.value) * 1e-9
            text = f"{delta:+,}" if isinstance(delta, int) else f"{delta:+.4g}"
            return abs(delta) <= tol, text
        return got == self.value, "" if got == self.value else "differs"


def _expectation(entry: str, key: str, spec, where: str) -> Expectation:
    if isinstance(spec, dict):
        unknown = set(spec) - {"value", "abs", "rel", "min", "max"}
        if unknown:
            raise KvcalcError(f"example {entry!r}, key {key!r}: unknown tolerance field {sorted(unknown)[0]!r}", where,
                              "value, abs, rel, min, max")
        if "value" not in spec and "min" not in spec and "max" not in spec:
            raise KvcalcError(f"example {entry!r}, key {key!r}: no value, min or max", where, "{value: 123, rel: 0.01} or {min: 64}")
        for f in ("abs", "rel", "min", "max"):
            v = spec.get(f)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or (f in ("abs", "rel") and v < 0)):
                raise KvcalcError(f"example {entry!r}, key {key!r}: {f} is {v!r}", where, "a non-negative number" if f in ("abs", "rel") else "a number")
        return Expectation(key, spec.get("value"), spec.get("abs"), spec.get("rel"), spec.get("min"), spec.get("max"))
    if isinstance(spec, (list,)):
        raise KvcalcError(f"example {entry!r}, key {key!r}: a list is not an expectation", where, "a value or {value, abs|rel}")
    return Expectation(key, spec)


def lookup(doc, path: str):
    """A dotted path into the JSON output: 'per_gpu.kv_bytes_total', 'rows.2.t_bound_s'."""
    cur = doc
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise KeyError(part)
    return cur


def _keys(doc, prefix="") -> list[str]:
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append(prefix + k)
            if isinstance(v, dict):
                out += _keys(v, prefix + k + ".")
    return out


def run_kvcalc(args: list[str]) -> tuple[int, str, str]:
    from kvcalc.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def load_examples(path: Path) -> list[dict]:
    from kvcalc.specs.loader import parse_yaml, read_text

    where = str(path)
    from kvcalc.specs.loader import probe

    if probe(path) != "file":
        raise KvcalcError("no such file", where, "a YAML file of worked examples")
    doc = parse_yaml(read_text(path), where)
    if not isinstance(doc, dict) or not isinstance(doc.get("examples"), list) or not doc["examples"]:
        raise KvcalcError("no examples", where, ACCEPTED)
    unknown = set(doc) - {"examples", "description"}
    if unknown:
        raise KvcalcError(f"unknown top-level field {sorted(unknown)[0]!r}", where, ACCEPTED)
    out = []
    for i, ex in enumerate(doc["examples"]):
        name = ex.get("name") if isinstance(ex, dict) else None
        label = str(name) if name else f"#{i + 1}"
        if not isinstance(ex, dict):
            raise KvcalcError(f"example {label} is not a mapping", where, ACCEPTED)
        extra = set(ex) - {"name", "run", "expect", "note"}
        if extra:
            raise KvcalcError(f"example {label!r}: unknown field {sorted(extra)[0]!r}", where, "name, run, expect, note")
        run = ex.get("run")
        if isinstance(run, str):
            try:
                args = shlex.split(run)
            except ValueError as e:
                raise KvcalcError(f"example {label!r}: cannot split run: {e}", where, "a kvcalc command line") from None
        elif isinstance(run, list) and all(isinstance(a, (str, int, float)) for a in run):
            args = [str(a) for a in run]
        else:
            raise KvcalcError(f"example {label!r}: missing or malformed 'run'", where, "a kvcalc command as a string or a list")
        if args and args[0] == "kvcalc":
            args = args[1:]
        if not args or args[0] in ("check",):
            raise KvcalcError(f"example {label!r}: 'run' must be a kvcalc command other than check", where, "e.g. size --model llama2-7b --seq 4k")
        exp = ex.get("expect")
        if not isinstance(exp, dict) or not exp:
            raise KvcalcError(f"example {label!r}: missing 'expect'", where, "a mapping of JSON keys to expected values")
        out.append({"name": label, "args": args, "expect": [_expectation(label, str(k), v, where) for k, v in exp.items()]})
    return out


def run_checks(path: Path) -> list[dict]:
    import difflib
    import json

    results = []
    for ex in load_examples(path):
        args = ex["args"] + ([] if "--json" in ex["args"] else ["--json"])
        code, out, err = run_kvcalc(args)
        if code != 0:
            msg = err.strip().splitlines()[-1] if err.strip() else f"exit code {code}"
            raise KvcalcError(f"example {ex['name']!r}: the command failed: {msg.removeprefix('kvcalc: error: ')}", str(path),
                              "a command that runs (try it by hand)")
        doc = json.loads(out)
        for e in ex["expect"]:
            try:
                got = lookup(doc, e.key)
            except KeyError:
                near = difflib.get_close_matches(e.key, _keys(doc), n=1)
                hint = f"did you mean {near[0]!r}?" if near else "see the command's --json output"
                raise KvcalcError(f"example {ex['name']!r}: key {e.key!r} is not in the output of '{args[0]}'", str(path), hint) from None
            ok, delta = e.check(got)
            results.append({"example": ex["name"], "key": e.key, "expected": e.describe(), "got": got, "delta": delta, "passed": ok})
    return results


@app.command()
def check(
    file: str = typer.Argument(..., help="A YAML file of worked examples: commands and the JSON values they must give."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run worked examples and compare their JSON keys with expected values; exit 1 if any fails.

    Example: kvcalc check docs/worked-examples.yaml
    """
    results = run_checks(Path(file))
    failed = sum(not r["passed"] for r in results)
    if as_json:
        from kvcalc.render import emit_json

        emit_json({"passed": len(results) - failed, "failed": failed, "results": results})
    else:
        from kvcalc.render import render_check

        render_check(results)
    if failed:
        raise typer.Exit(1)
