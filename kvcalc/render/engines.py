"""kvcalc engines: each engine's current rules, then what each older release does differently."""

from __future__ import annotations

from typing import Any

from kvcalc.render.console import console, kv_lines, notes


def render(r: Any) -> None:
    c = console()
    families: dict[str, list[Any]] = {}
    for row in r.engines:
        families.setdefault(row.key.split("@")[0], []).append(row)
    for rows in families.values():
        cur = rows[0]
        if cur.key in ("hf", "hf4", "plain"):
            continue
        c.print(f"[bold]{cur.key}[/bold]  {cur.label}, {cur.releases} (--engine {cur.key.split('@')[0]})")
        kv_lines(c, [(label, cur.rules[f]) for f, label in r.labels.items() if cur.rules[f] not in ("-", "no")])
        older = [
            f"{row.key} ({row.releases}): " + "; ".join(f"{r.labels[f]}: {row.rules[f]}" for f in row.differs_from_next_newer)
            for row in rows[1:]
        ]
        notes(c, "Older releases, what differs from the next newer one", older)
    others = [row for row in r.engines if row.key in ("hf", "hf4", "plain")]
    notes(c, "Without a serving engine", [f"{row.key}: {row.label}: {row.note}" for row in others])
    c.print(
        "[dim]--engine takes a family (its current rules) or a release: vllm@0.11, vllm==0.9.2, vllm-0.6. "
        "docs/engines.md cites the code behind each rule.[/dim]"
    )
