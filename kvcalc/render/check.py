"""kvcalc check: each expectation, what the command gave, pass or fail. A long file prints its
failures and a count; --verbose (or a file of up to 50 checks) prints every row."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, table

ALL_ROWS = 50


def _got(got: Any) -> str:
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return str(got)[:16]
    s = f"{got:,}" if isinstance(got, int) else f"{got:.6g}"
    return s if len(s) <= 16 else f"{got:.6g}"


def render(r: Any, verbose: bool = False) -> None:
    c = console()
    rows = r.results if verbose or len(r.results) <= ALL_ROWS else [x for x in r.results if not x.passed]
    if rows:
        t = table(None, ("example / key", "left"), ("expected", "right"), ("got", "right"), ("delta", "right"), ("", "left"))
        for col in t.columns[1:]:
            col.no_wrap = True
        last = None
        for x in rows:
            if x.example != last:
                t.add_row(f"[bold]{x.example}[/bold]", "", "", "", "")
                last = x.example
            t.add_row(
                "  " + x.key, x.expected, _got(x.got), x.delta, "[green]pass[/green]" if x.passed else "[bold red]FAIL[/bold red]"
            )
        c.print(t)
    examples = len({x.example for x in r.results})
    shown = "" if len(rows) == len(r.results) else " (failures shown; --verbose for every check)"
    c.print(f"{r.passed} passed, {r.failed} failed, in {examples} examples{shown}")
