"""kvcalc check: each expectation, what the command gave, pass or fail."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, table


def render(r: Any) -> None:
    c = console()
    t = table(None, ("example / key", "left"), ("expected", "right"), ("got", "right"), ("delta", "right"), ("", "left"))
    for col in t.columns[1:]:
        col.no_wrap = True
    last = None
    for x in r.results:
        if x.example != last:
            t.add_row(f"[bold]{x.example}[/bold]", "", "", "", "")
            last = x.example
        got = x.got
        got_s = (
            f"{got:,}"
            if isinstance(got, int) and not isinstance(got, bool)
            else (f"{got:.6g}" if isinstance(got, float) else str(got))
        )
        got_s = got_s if len(got_s) <= 16 else f"{got:.6g}" if isinstance(got, (int, float)) else got_s[:16]
        t.add_row("  " + x.key, x.expected, got_s, x.delta, "[green]pass[/green]" if x.passed else "[bold red]FAIL[/bold red]")
    c.print(t)
    c.print(f"{r.passed} passed, {r.failed} failed")
