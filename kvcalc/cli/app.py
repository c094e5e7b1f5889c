"""The typer app and the one place errors become one line and exit code 2."""

from __future__ import annotations

import sys

import typer

from kvcalc import __version__

app = typer.Typer(
    name="kvcalc",
    help="KV-cache capacity planning and decode roofline for LLM serving.\n\n"
    "Example: kvcalc size --model llama2-7b --seq 4096",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool):
    if value:
        print(f"kvcalc {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """KV-cache capacity planning and decode roofline for LLM serving.

    Example: kvcalc size --model llama2-7b --seq 4096
    """


def _register() -> None:
    # Each command lives in its own module; importing it adds it to the app.
    from kvcalc.cli import catalog, check, explain, fit, measure, paging, roofline, size, tiers  # noqa: F401


def fail(line: str) -> int:
    sys.stderr.write(f"kvcalc: error: {' '.join(str(line).split())}\n")
    return 2


def main(argv: list[str] | None = None) -> int:
    from typer.exceptions import TyperException

    from kvcalc.errors import KvcalcError

    _register()
    cmd = typer.main.get_command(app)
    try:
        rv = cmd.main(args=argv if argv is not None else sys.argv[1:], prog_name="kvcalc", standalone_mode=False)
    except KvcalcError as e:
        return fail(e.line())
    except TyperException as e:
        code = getattr(e, "exit_code", 2)
        return fail(e.format_message()) if code else 0
    except (typer.Exit, SystemExit) as e:
        code = getattr(e, "exit_code", None)
        if code is None:
            code = getattr(e, "code", 0) or 0
        return int(code)
    except typer.Abort:
        return fail("aborted")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except RecursionError:
        return fail("input nested too deeply")
    except Exception as e:  # noqa: BLE001 - the last line of defence: a bug, said in one line
        return fail(f"internal error: {type(e).__name__}: {e} (a kvcalc bug: please report it with the command)")
    return int(rv) if isinstance(rv, int) else 0


def run() -> None:
    sys.exit(main())
