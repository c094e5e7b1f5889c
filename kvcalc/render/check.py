"""kvcalc check: each expectation, what the command gave, pass or fail. A long file prints its
failures and a count; --verbose (or a file of up to 50 checks) prints every row."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, esc, table, verdict_line

ALL_ROWS = 50


def _got(got: Any) -> str:
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return str(got)[:16]
    s = f"{got:,}" if isinstance(got, int) else f"{got:.6g}"
    return s if len(s) <= 16 else f"{got:.6g}"


def _key_lines(key: str, width: int = 26) -> str:
    """A dotted key on lines of at most ``width`` characters, broken only after a dot."""
    lines, cur = [], ""
    for part in key.split("."):
        piece = part if not cur else "." + part
        if cur and len(cur) + len(piece) > width:
            lines.append(cur + ".")
            cur = part
        else:
            cur += piece
    return "\n".join(lines + [cur])


def verdict(r: Any) -> str:
    """The answer first: whether every expectation holds."""
    examples = len({x.example for x in r.results})
    failing = len({x.example for x in r.results if not x.passed})
    if r.failed:
        return f"FAIL: {r.failed:,} of {r.passed + r.failed:,} checks failed, in {failing:,} of {examples:,} examples"
    return f"PASS: all {r.passed:,} checks hold, in {examples:,} examples"


def render(r: Any, verbose: bool = False) -> None:
    c = console()
    verdict_line(c, verdict(r), "bold red" if r.failed else "bold green")
    rows = r.results if verbose or len(r.results) <= ALL_ROWS else [x for x in r.results if not x.passed]
    if rows:
        # The delta says by how much a check missed: a column only when one did.
        with_delta = any(not x.passed for x in rows)
        cols = [("example / key", "left"), ("expected", "right"), ("got", "right")]
        cols += [("delta", "right")] if with_delta else []
        t = table(None, *cols, ("", "left"))
        # Figures never break; an expectation may wrap at its spaces (">= a and" / "<= b") so that a
        # narrow screen keeps every key whole rather than squeezing their column away.
        for col in t.columns[2:]:
            col.no_wrap = True
        t.columns[1].overflow = "fold"
        # Keys break only at their dots (long dotted paths go on two lines); names wrap at spaces.
        t.columns[0].min_width = max(len(part) for x in rows for part in _key_lines(x.key).split("\n")) + 4
        last = None
        for x in rows:
            if x.example != last:
                t.add_row(f"[bold]{esc(x.example)}[/bold]", *[""] * (len(cols)))
                last = x.example
            key = "  " + _key_lines(x.key).replace("\n", "\n    ")
            status = "[green]pass[/green]" if x.passed else "[bold red]FAIL[/bold red]"
            t.add_row(esc(key), esc(x.expected), esc(_got(x.got)), *([x.delta] if with_delta else []), status)
        c.print(t)
    examples = len({x.example for x in r.results})
    shown = "" if len(rows) == len(r.results) else " (failures shown; --verbose for every check)"
    c.print(f"{r.passed} passed, {r.failed} failed, in {examples} examples{shown}")
