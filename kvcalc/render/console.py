"""What every table shares: the console, table and list helpers, units in words.

rich is imported inside these functions, so a ``--json`` run never loads it.
"""

from __future__ import annotations

import os
import re
from typing import Any

from kvcalc.units import fmt_bytes


def console() -> Any:
    from rich.console import Console

    class _Console(Console):
        def print(self, *objects: Any, **kw: Any) -> None:
            # Text and strings (verdicts, notes, the paragraphs between tables) wrap with each figure kept beside its
            # unit (line_breaks); tables and other renderables as rich lays them out.
            if objects and not kw.get("soft_wrap") and all(isinstance(o, str) for o in objects):
                text = self.render_str(
                    " ".join(objects), markup=kw.pop("markup", None), highlight=kw.pop("highlight", None) or False
                )
                objects = (held_text(text, self.width),)
            super().print(*objects, **kw)

        def on_broken_pipe(self) -> None:
            # rich exits 1 when the reader goes away; kvcalc's entry point stops quietly with 0
            # (docs/security.md), so hand it the error instead.
            self.quiet = True
            raise BrokenPipeError

    # NO_COLOR (no-color.org): no escape codes at all, bold included.
    if os.environ.get("NO_COLOR"):
        return _Console(highlight=False, soft_wrap=False, color_system=None)
    return _Console(highlight=False, soft_wrap=False)


def table(title: str | None = None, *cols: tuple[str, Any]) -> Any:
    from rich import box
    from rich.table import Table

    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", title_style="bold", pad_edge=False, collapse_padding=True)
    for name, justify in cols:
        t.add_column(name, justify=justify, overflow="fold")
    return t


def kv_lines(c: Any, rows: list[tuple[str, str]]) -> None:
    """Label / value lines; the value column wraps at spaces, labels stay whole."""
    t = table(None, ("", "left"), ("", "right"))
    t.show_header = False
    for a, b in rows:
        t.add_row(a, b)
    c.print(t)


def esc(text: object) -> str:
    """A name or other given text inside a markup string, as it is: a spec named ``a[b]`` keeps its
    brackets (rich would read ``[b]`` as a style)."""
    from rich.markup import escape

    return escape(str(text))


_UNIT = (
    r"(?:[KMGTP]i?B(?:/s)?|B(?:/s)?|[mun]?s|[KMGTP]?FLOP(?:/s|/B)?|tokens?(?:/s)?|requests?(?:/s)?|req/s|x|GPUs?|"
    r"layers?|users?|steps?)"
)
_FIGURE_UNIT = re.compile(r"(?<=\d)[ \u00a0](?=" + _UNIT + r"(?![\w/]))")
"""The space between a figure and the unit after it (13.154 ms, 10.00 GiB, 1,100 tokens, 16 x)."""


def line_breaks(plain: str, width: int) -> list[int]:
    """Where ``plain`` breaks to fit ``width`` columns: the indices of the spaces that end its lines, chosen greedily,
    never the space between a figure and its unit (rich wraps at any whitespace, a no-break space included, so at 80
    columns a line could end on "13.154" and the next start on "ms"). A line without a space to break at runs on (the
    console folds it). Lines already within the width are kept."""
    held = {m.start() for m in _FIGURE_UNIT.finditer(plain)}

    def breakable(i: int) -> bool:
        return plain[i] == " " and i not in held

    out: list[int] = []
    start = 0
    for line in plain.split("\n"):
        end = start + len(line)
        s = start
        while end - s > width:
            # The last breakable space within the width, else the first after it (the line then runs on).
            cut = next((i for i in range(s + width, s, -1) if breakable(i)), None)
            if cut is None:
                cut = next((i for i in range(s + width + 1, end) if breakable(i)), None)
            if cut is None:
                break
            out.append(cut)
            s = cut + 1
        start = end + 1
    return out


def held_text(text: Any, width: int) -> Any:
    """A rich Text wrapped as line_breaks says: the chosen spaces become line breaks, styles kept."""
    from rich.text import Text

    cuts = line_breaks(text.plain, width)
    if not cuts:
        return text
    parts, s = [], 0
    for i in cuts:
        parts.append(text[s:i])
        s = i + 1
    parts.append(text[s:])
    return Text("\n").join(parts)


def verdict_line(c: Any, text: str, style: str = "bold") -> None:
    """A command's first line, its answer: the text as it is (a file name or an example's name may
    hold brackets, which are not markup), in bold, or in ``style`` (bold red for a failure)."""
    c.print(text, style=style, markup=False, highlight=False)


def notes(c: Any, title: str | None, items: list[str], style: str = "dim") -> None:
    """A titled list whose wrapped lines stay indented under their item (no title: the list alone)."""
    if not items:
        return
    from rich.table import Table
    from rich.text import Text

    if title:
        c.print(f"[bold]{title}[/bold]")
    t = Table.grid(padding=(0, 1))
    t.add_column(no_wrap=True)
    t.add_column(overflow="fold")
    for i in items:
        # The item's column is the console less " -" and the padding: each figure kept beside its unit (line_breaks).
        t.add_row(" -", held_text(Text(i, style=style), c.width - 3))
    c.print(t)


def track_record(c: Any, rec: Any) -> None:
    """kvcalc's track record on public runs like this one (kvcalc.engine.track), where a report has one."""
    if rec is None:
        return
    first, *rest = rec.lines()
    c.print("[bold]Track record[/bold]")
    c.print(first, style="dim", markup=False, highlight=False)
    notes(c, None, rest)


def origin_line(c: Any, origin: dict[str, str] | None) -> None:
    """Say what was taken by default and from where: 'model: llama3.1-8b (kvcalc's built-in default)', 'gpu: h200
    (default; from /path/kvcalc.toml)', 'tp 4 (default; from /path/kvcalc.toml)'."""
    if not origin:
        return
    parts = []
    for kind in ("model", "gpu"):
        src = origin.get(f"{kind}_from")
        if src:
            # ("built-in default" is the source's own name: "(default; from built-in default)" said it twice.)
            said = "kvcalc's built-in default" if src == "built-in default" else f"default; from {src}"
            parts.append(f"{kind}: {origin.get(kind, '?')} ({said})")
    if origin.get("options_from"):
        parts.append(f"{origin['options']} (default; from {origin['options_from']})")
    if parts:
        c.print("; ".join(parts), markup=False, style="dim")


def nb(text: str) -> str:
    """Keep a figure and its unit together when a column wraps."""
    return text.replace(" ", "\u00a0")


def bytes_cell(n: int) -> str:
    return fmt_bytes(n)


def ms(t: float) -> str:
    return f"{t * 1e3:,.3f} ms" if t < 10 else f"{t:,.3f} s"


def us(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1e6:,.1f} us" if t < 1e-3 else f"{t * 1e3:,.3f} ms"
