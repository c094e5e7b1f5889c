"""Plots: log-log charts drawn with characters for the terminal, and matplotlib files (optional).

Pure drawing: the numbers come from the engine, already computed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kvcalc._record import record


@record
class Series:
    label: str
    xs: list[float]
    ys: list[float]
    marker: str
    line: bool = True
    color: int | None = None
    """The same number draws in the same colour in every panel of a file (None: black)."""


def _ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [10.0**e for e in range(a, b + 1)]


def _fmt(v: float) -> str:
    """A tick label of at most three significant digits: 1.37k, 10k, 5m (milli), 20u (micro)."""
    for unit, m in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= m:
            return f"{v / m:.3g}{unit}"
    if v < 1e-3:
        return f"{v * 1e6:.3g}u"
    if v < 1:
        return f"{v * 1e3:.3g}m"
    return f"{v:.3g}"


def ascii_loglog(series: list[Series], title: str, xlabel: str, ylabel: str, width: int = 64, height: int = 16) -> str:
    """A log-log chart in plain characters; each series a marker, lines joined by dots."""
    pts = [(x, y) for s in series for x, y in zip(s.xs, s.ys) if x > 0 and y > 0]
    if not pts:
        return f"{title}\n(nothing to plot)"
    xlo, xhi = min(p[0] for p in pts), max(p[0] for p in pts)
    ylo, yhi = min(p[1] for p in pts), max(p[1] for p in pts)
    if xhi / xlo < 10:
        xlo, xhi = xlo / 3, xhi * 3
    if yhi / ylo < 10:
        ylo, yhi = ylo / 3, yhi * 3
    lx0, lx1, ly0, ly1 = math.log10(xlo), math.log10(xhi), math.log10(ylo), math.log10(yhi)
    grid = [[" "] * width for _ in range(height)]

    def cell(x, y):
        c = round((math.log10(x) - lx0) / (lx1 - lx0) * (width - 1))
        r = height - 1 - round((math.log10(y) - ly0) / (ly1 - ly0) * (height - 1))
        return r, c

    for s in series:
        xy = [(x, y) for x, y in zip(s.xs, s.ys) if x > 0 and y > 0]
        if s.line:
            for (x0, y0), (x1, y1) in zip(xy, xy[1:]):
                for i in range(1, 24):
                    t = i / 24
                    x = 10 ** (math.log10(x0) + t * (math.log10(x1) - math.log10(x0)))
                    y = 10 ** (math.log10(y0) + t * (math.log10(y1) - math.log10(y0)))
                    r, c = cell(x, y)
                    if grid[r][c] == " ":
                        grid[r][c] = "."
        for x, y in xy:
            r, c = cell(x, y)
            grid[r][c] = s.marker
    ylabels = {cell(xlo, t)[0]: _fmt(t) for t in _ticks(ylo, yhi) if ylo <= t <= yhi}
    lw = max([len(v) for v in ylabels.values()] + [1])
    lines = [title]
    for r in range(height):
        lines.append(f"{ylabels.get(r, ''):>{lw}} |" + "".join(grid[r]))
    lines.append(" " * lw + " +" + "-" * width)
    axis = [" "] * width
    decades = [t for t in _ticks(xlo, xhi) if xlo <= t <= xhi]
    # Decade ticks first; with fewer than two, the data's own ends too. A label that would touch
    # one already placed is left out rather than printed over it.
    marks = decades + ([xlo, xhi] if len(decades) < 2 else [])
    if len(decades) < 2:
        xs_data = sorted({x for x, _ in pts})
        marks += [xs_data[0], xs_data[-1]]
    taken = [False] * width
    for t in marks:
        c = cell(t, ylo)[1]
        lab = _fmt(t)
        c = max(0, min(c - len(lab) // 2, width - len(lab)))
        span = range(max(0, c - 1), min(width, c + len(lab) + 1))
        if any(taken[i] for i in span):
            continue
        for i, ch in enumerate(lab):
            axis[c + i] = ch
            taken[c + i] = True
    lines.append(" " * (lw + 2) + "".join(axis))
    lines.append(" " * (lw + 2) + f"x: {xlabel}   y: {ylabel}")
    lines.append(" " * (lw + 2) + "   ".join(f"{s.marker} {s.label}" for s in series))
    return "\n".join(lines)


@contextmanager
def figure_file(path: str) -> Iterator[Any]:
    """matplotlib's pyplot for a chart written to ``path`` (.png, .svg or .pdf): the format checked
    first, the figure saved and closed after the block, a write that fails said in one line."""
    from kvcalc.errors import KvcalcError

    if not str(path).lower().endswith((".png", ".svg", ".pdf")):
        raise KvcalcError(f"cannot tell the format of {path!r}", "--plot-file", "a path ending in .png, .svg or .pdf")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise KvcalcError("matplotlib is not installed", "--plot-file", "pip install 'kvcalc[plot]'") from None
    try:
        yield plt
        plt.gcf().tight_layout()
        plt.gcf().savefig(path)
    except OSError as e:
        raise KvcalcError(f"cannot write the plot: {e.strerror or e}", str(path), "a writable path") from None
    finally:
        plt.close("all")


def write_plot_file(path: str, charts: list[dict]) -> None:
    """charts: [{title, xlabel, ylabel, series: [Series]}] side by side, log-log, to PNG or SVG."""
    with figure_file(path) as plt:
        _, axes = plt.subplots(1, len(charts), figsize=(6.5 * len(charts), 5))
        axes = axes if len(charts) > 1 else [axes]
        for ax, ch in zip(axes, charts):
            for s in ch["series"]:
                ax.plot(
                    s.xs,
                    s.ys,
                    ("-" if s.line else "") + ("o" if s.marker not in "-." else ""),
                    label=s.label,
                    color="black" if s.color is None else f"C{s.color % 10}",
                )
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(ch["title"])
            ax.set_xlabel(ch["xlabel"])
            ax.set_ylabel(ch["ylabel"])
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
