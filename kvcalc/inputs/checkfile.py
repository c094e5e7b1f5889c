"""Check files: worked examples as a YAML list of commands and the JSON values they must give.

What a check file can make kvcalc do: run kvcalc's own commands (never a shell or another program),
with their arguments. Those commands read the files they name and, with ``--plot-file``, write
one; ``measure`` times a real kernel for a while. ``kvcalc check --safe`` refuses examples that run
``measure`` or write files (docs/security.md).
"""

from __future__ import annotations

import shlex
from typing import Any

from kvcalc._record import record
from kvcalc.errors import KvcalcError

ACCEPTED = (
    "a mapping with 'examples': a list of {name, run, expect}; run is a kvcalc command (a string or a list), "
    "expect maps JSON keys (dotted paths) to a value or {value, abs|rel} or {min, max}"
)
NUMBER_LIMIT = 10**30
"""Expected values and tolerances beyond this are not figures any command prints."""


@record(frozen=True)
class Expectation:
    key: str
    value: Any = None
    abs: float | None = None
    rel: float | None = None
    min: float | None = None
    max: float | None = None

    def describe(self) -> str:
        if self.value is None:
            parts = ([f">= {self.min:,}"] if self.min is not None else []) + (
                [f"<= {self.max:,}"] if self.max is not None else []
            )
            return " and ".join(parts)
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            return str(self.value)
        v = f"{self.value:,}" if isinstance(self.value, int) else f"{self.value:.6g}"
        if self.abs:
            v += f" ±{self.abs:g}"
        elif self.rel:
            v += f" ±{self.rel:.0e}r"
        return v

    def check(self, got: Any) -> tuple[bool, str]:
        """(passed, delta as text)."""
        if self.value is None:
            if not isinstance(got, (int, float)) or isinstance(got, bool):
                return False, "not a number"
            ok = (self.min is None or got >= self.min) and (self.max is None or got <= self.max)
            return ok, ""
        if (
            isinstance(self.value, (int, float))
            and not isinstance(self.value, bool)
            and isinstance(got, (int, float))
            and not isinstance(got, bool)
        ):
            delta = got - self.value
            tol = self.abs if self.abs is not None else (abs(self.value) * self.rel if self.rel is not None else None)
            if tol is None:
                tol = 0 if isinstance(self.value, int) and isinstance(got, int) else abs(self.value) * 1e-9
            text = f"{delta:+,}" if isinstance(delta, int) else f"{delta:+.4g}"
            return abs(delta) <= tol, text
        return got == self.value, "" if got == self.value else "differs"


@record(frozen=True)
class Example:
    name: str
    args: list[str]
    expect: list[Expectation]


def _number_ok(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return v == v and abs(v) <= NUMBER_LIMIT


def _expectation(entry: str, key: str, spec: Any, where: str) -> Expectation:
    if isinstance(spec, dict):
        unknown = set(spec) - {"value", "abs", "rel", "min", "max"}
        if unknown:
            raise KvcalcError(
                f"example {entry!r}, key {key!r}: unknown tolerance field {str(sorted(map(str, unknown))[0])[:40]!r}",
                where,
                "value, abs, rel, min, max",
            )
        if "value" not in spec and "min" not in spec and "max" not in spec:
            raise KvcalcError(
                f"example {entry!r}, key {key!r}: no value, min or max", where, "{value: 123, rel: 0.01} or {min: 64}"
            )
        for f in ("abs", "rel", "min", "max"):
            v = spec.get(f)
            if v is not None and (not _number_ok(v) or (f in ("abs", "rel") and v < 0)):
                raise KvcalcError(
                    f"example {entry!r}, key {key!r}: {f} is {str(v)[:40]!r}",
                    where,
                    "a non-negative number" if f in ("abs", "rel") else f"a number up to {NUMBER_LIMIT:.0e}",
                )
        value = spec.get("value")
        _check_value(entry, key, value, where)
        return Expectation(key, value, spec.get("abs"), spec.get("rel"), spec.get("min"), spec.get("max"))
    if isinstance(spec, list):
        raise KvcalcError(f"example {entry!r}, key {key!r}: a list is not an expectation", where, "a value or {value, abs|rel}")
    _check_value(entry, key, spec, where)
    return Expectation(key, spec)


def _check_value(entry: str, key: str, value: Any, where: str) -> None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not _number_ok(value):
        raise KvcalcError(
            f"example {entry!r}, key {key!r}: the value is out of range", where, f"a number up to {NUMBER_LIMIT:.0e}"
        )


def parse_examples(doc: Any, where: str, commands: set[str]) -> list[Example]:
    """The examples of a parsed check file; ``commands`` are the kvcalc commands a ``run`` may name."""
    if not isinstance(doc, dict) or not isinstance(doc.get("examples"), list) or not doc["examples"]:
        raise KvcalcError("no examples", where, ACCEPTED)
    unknown = set(doc) - {"examples", "description"}
    if unknown:
        raise KvcalcError(f"unknown top-level field {str(sorted(map(str, unknown))[0])[:40]!r}", where, ACCEPTED)
    out = []
    for i, ex in enumerate(doc["examples"]):
        name = ex.get("name") if isinstance(ex, dict) else None
        label = str(name)[:80] if name else f"#{i + 1}"
        if not isinstance(ex, dict):
            raise KvcalcError(f"example {label} is not a mapping", where, ACCEPTED)
        extra = set(ex) - {"name", "run", "expect", "note"}
        if extra:
            raise KvcalcError(
                f"example {label!r}: unknown field {str(sorted(map(str, extra))[0])[:40]!r}", where, "name, run, expect, note"
            )
        run = ex.get("run")
        if isinstance(run, str):
            try:
                args = shlex.split(run)
            except ValueError as e:
                raise KvcalcError(f"example {label!r}: cannot split run: {e}", where, "a kvcalc command line") from None
        elif isinstance(run, list) and all(isinstance(a, (str, int, float)) and not isinstance(a, bool) for a in run):
            args = [str(a) for a in run]
        else:
            raise KvcalcError(f"example {label!r}: missing or malformed 'run'", where, "a kvcalc command as a string or a list")
        if args and args[0] == "kvcalc":
            args = args[1:]
        if not args or args[0] not in commands or args[0] == "check":
            raise KvcalcError(
                f"example {label!r}: 'run' must be a kvcalc command other than check",
                where,
                "one of " + ", ".join(sorted(commands - {"check"})),
            )
        exp = ex.get("expect")
        if not isinstance(exp, dict) or not exp:
            raise KvcalcError(f"example {label!r}: missing 'expect'", where, "a mapping of JSON keys to expected values")
        out.append(Example(label, args, [_expectation(label, str(k)[:200], v, where) for k, v in exp.items()]))
    return out
