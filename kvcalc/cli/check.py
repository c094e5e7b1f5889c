"""kvcalc check: run a file of worked examples and compare named JSON keys with expectations."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kvcalc.cli import options as opt
from kvcalc.cli.app import emit

# What --safe forbids: commands that time real kernels, and options that write files.
UNSAFE_COMMANDS = {"measure"}
UNSAFE_OPTIONS = {"--plot-file", "--measure"}


def run_examples(path: str, safe: bool = False) -> Any:
    """Each example's command run in this process (the CLI built once per command, reports taken
    before rendering), its expectations compared with the report's JSON."""
    import contextlib
    import io

    from kvcalc.cli.app import COMMANDS, Collect, root
    from kvcalc.engine.check import compare, nearest_key, report
    from kvcalc.errors import KvcalcError
    from kvcalc.inputs.checkfile import parse_examples
    from kvcalc.render.json import to_json
    from kvcalc.specs.loader import parse_yaml, read_text

    doc = parse_yaml(read_text(path), path)
    examples = parse_examples(doc, path, set(COMMANDS))
    cmd = root()
    results = []
    for ex in examples:
        if safe and (ex.args[0] in UNSAFE_COMMANDS or UNSAFE_OPTIONS & {a.split("=")[0] for a in ex.args}):
            raise KvcalcError(
                f"example {ex.name!r} runs {ex.args[0]} or writes a file, which --safe forbids",
                path,
                "commands that only compute (size, fit, roofline, ...) without --plot-file or --measure",
            )
        # An example's own output (help text, a usage message) is not the check's: keep it off stdout.
        with Collect() as got, contextlib.redirect_stdout(io.StringIO()):
            try:
                cmd.main(
                    args=[*ex.args, "--json"] if "--json" not in ex.args else ex.args, prog_name="kvcalc", standalone_mode=False
                )
            except KvcalcError as e:
                raise KvcalcError(
                    f"example {ex.name!r}: the command failed: {e.line()}", path, "a command that runs (try it by hand)"
                ) from None
            except Exception as e:  # a usage error in the example, said as the example's
                fmt = getattr(e, "format_message", None)
                msg = fmt() if fmt is not None else str(e)
                raise KvcalcError(
                    f"example {ex.name!r}: the command failed: {msg}", path, "a kvcalc command line that runs (try it by hand)"
                ) from None
        if not got:
            raise KvcalcError(
                f"example {ex.name!r}: the command printed no report (did it ask for --help?)",
                path,
                "a command that computes something",
            )
        rep, origin = got[-1]
        doc_out = to_json(rep, origin)
        try:
            results += compare(ex, doc_out)
        except KeyError:
            key = next(e.key for e in ex.expect if _missing(doc_out, e.key))
            near = nearest_key(doc_out, key)
            hint = f"did you mean {near!r}?" if near else "see the command's --json output"
            raise KvcalcError(
                f"example {ex.name!r}: key {key[:80]!r} is not in the output of '{ex.args[0]}'", path, hint
            ) from None
    return report(results)


def _missing(doc: Any, key: str) -> bool:
    from kvcalc.engine.check import lookup

    try:
        lookup(doc, key)
        return False
    except KeyError:
        return True


def check(
    file: Annotated[
        str, typer.Argument(metavar="FILE", help="A YAML file of worked examples: commands and the JSON values they must give.")
    ],
    safe: Annotated[bool, typer.Option("--safe", help="Refuse examples that run measure or write files (--plot-file).")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Print every check, not only the failures, in long files.")
    ] = False,
    as_json: opt.Json = False,
) -> Any:
    """Run worked examples and compare their JSON keys with expected values; exit 1 if any fails.

    A check file runs kvcalc's own commands only (never a shell); see docs/checks.md for its format
    and docs/security.md for what it can make kvcalc do.

    Example: kvcalc check docs/worked-examples.yaml
    """
    r = run_examples(file, safe)
    emit(r, None, as_json, verbose=verbose)
    if r.failed:
        raise typer.Exit(1)
    return r
