"""docs/cli.md, generated from the typer app: `python -m kvcalc.cli.docs > docs/cli.md`.

A test fails when docs/cli.md is stale.
"""

from __future__ import annotations


def generate() -> str:
    from kvcalc.cli.app import COMMANDS, build_command

    out = [
        "# Command reference",
        "",
        "Generated from the command definitions by `python -m kvcalc.cli.docs > docs/cli.md`; a test fails",
        "when this file is stale. Every command also takes `-h`/`--help`.",
        "",
    ]
    for name in sorted(COMMANDS):
        cmd = build_command(name)
        out.append(f"## kvcalc {name}")
        out.append("")
        doc = (cmd.help or "").strip()
        out.extend(line.strip() for line in doc.splitlines())
        out.append("")
        args = [p for p in cmd.params if p.param_type_name == "argument"]
        opts = [p for p in cmd.params if p.param_type_name == "option" and p.name != "help"]
        if args or opts:
            out.append("| argument / option | default | what |")
            out.append("|---|---|---|")
        for p in args:
            out.append(f"| `{p.name.upper()}` | {'required' if p.required else ''} | {_help(p)} |")
        for p in opts:
            names = ", ".join(f"`{o}`" for o in p.opts)
            if p.is_flag:
                default = ""
            elif p.required:
                default = "required"
            else:
                default = "" if p.default is None else f"`{p.default}`"
            out.append(f"| {names} | {default} | {_help(p)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _help(p) -> str:
    h = getattr(p, "help", None) or ""
    return " ".join(h.split()).replace("|", "\\|")


if __name__ == "__main__":
    import sys

    sys.stdout.write(generate())
