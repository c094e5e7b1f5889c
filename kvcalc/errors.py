"""The one error type users see.

Every problem with what the user typed or gave us becomes a :class:`KvcalcError`; the CLI
prints it as one line, ``kvcalc: error: <what> (<where>): <accepted>``, and exits with code 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class KvcalcError(ValueError):
    """Bad input: what was wrong, where, and what is accepted."""

    def __init__(self, what: str, where: str | None = None, accepted: str | None = None):
        self.what = what
        self.where = where
        self.accepted = accepted
        super().__init__(self.line())

    def line(self) -> str:
        msg = _cut(self.what, 400)
        if self.where:
            msg += f" ({_cut(self.where, 300)})"
        if self.accepted:
            msg += f": {_cut(self.accepted, 400)}"
        # Always one line, whatever the pieces held, and never a screenful.
        return " ".join(msg.split())


def _cut(text: str, limit: int) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 20] + " ... " + text[-15:]


def closest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The closest names to ``name`` among ``choices``, best first (may be empty)."""
    pool = sorted(set(choices))
    low = name.lower()
    hits = difflib.get_close_matches(low, pool, n=n, cutoff=0.5)
    # Prefix and substring matches people expect ("llama2" -> "llama2-7b").
    for c in pool:
        if len(hits) >= n:
            break
        if c not in hits and low and (c.startswith(low) or low in c):
            hits.append(c)
    return hits[:n]


LISTED = {"model": "models", "gpu": "gpus", "engine": "engines"}
"""The kinds of name a kvcalc command lists (kvcalc models, gpus, engines)."""


def unknown_name(kind: str, name: str, choices: Iterable[str], where: str) -> KvcalcError:
    choices = list(choices)
    near = closest(name, choices)
    names = sorted(set(choices))
    if near:
        accepted = "did you mean " + ", ".join(near) + "?"
    elif kind in LISTED:
        accepted = f"see 'kvcalc {LISTED[kind]}' for the {len(names)} known names"
    elif len(names) <= 12:
        accepted = "one of " + ", ".join(names)
    else:
        accepted = f"one of {len(names)} names, such as " + ", ".join(names[:6])
    return KvcalcError(f"unknown {kind} {name!r}", where, accepted)
