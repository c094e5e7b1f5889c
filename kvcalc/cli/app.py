"""The command line: which commands exist, building only the one invoked, and the one place where
errors become one line and exit code 2.

Each command is a function in its own module (``kvcalc/cli/<name>.py``) that parses its options,
calls the engine and hands the report to :func:`emit`. This module imports none of them until it
knows which one runs, so ``kvcalc size`` never pays for ``roofline`` or ``measure``.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import sys
import textwrap
from typing import Any

import typer
from typer._click.core import Context
from typer._click.formatting import HelpFormatter as ClickHelpFormatter
from typer.core import TyperCommand, TyperGroup

from kvcalc import __version__

# name -> (module, function, one-line help). The one-line help is also in each function's docstring.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "size": ("kvcalc.cli.size", "size", "KV-cache bytes per token, per request and per batch, by layer kind."),
    "fit": ("kvcalc.cli.fit", "fit", "The memory budget line by line, the KV pool, max concurrency and the longest request."),
    "roofline": (
        "kvcalc.cli.roofline",
        "roofline",
        "Decode-step lower bound: (weights read + KV read) / bandwidth against FLOPs / peak.",
    ),
    "paging": (
        "kvcalc.cli.paging",
        "paging",
        "Steady state of allocation policies on a workload: utilisation, waste, requests that fit.",
    ),
    "simulate": (
        "kvcalc.cli.simulate",
        "simulate",
        "Serve an arrival stream under each allocation policy: KV utilisation over time, throughput, latency.",
    ),
    "plan": (
        "kvcalc.cli.plan",
        "plan",
        "The fewest GPUs (then the lowest cost) that carry a load within TTFT and TPOT targets.",
    ),
    "tiers": (
        "kvcalc.cli.tiers",
        "tiers",
        "KV tiers (HBM, DRAM, SSD, remote): capacity, reload against recompute, and P/D transfer.",
    ),
    "measure": (
        "kvcalc.cli.measure",
        "measure",
        "Build a real paged KV cache, run and check decode attention, time it, and compare with the bound.",
    ),
    "calibrate": (
        "kvcalc.cli.calibrate",
        "calibrate",
        "Fit kvcalc's step-time constants to measured benchmark runs, and print the fit and its residuals.",
    ),
    "check": (
        "kvcalc.cli.check",
        "check",
        "Run worked examples and compare their JSON keys with expected values; exit 1 if any fails.",
    ),
    "explain-log": (
        "kvcalc.cli.explain",
        "explain_log",
        "Read vLLM or SGLang start-up logs and recompute their KV figures side by side.",
    ),
    "engines": ("kvcalc.cli.catalog", "engines", "List the serving engines and releases kvcalc models, rule by rule."),
    "models": ("kvcalc.cli.catalog", "models", "List the models in the catalog."),
    "gpus": ("kvcalc.cli.catalog", "gpus", "List the GPUs and accelerators in the catalog."),
    "show": ("kvcalc.cli.catalog", "show", "Show one model or GPU spec and its derived figures."),
    "import": ("kvcalc.cli.catalog", "import_", "Print the YAML model spec for a Hugging Face config.json (offline)."),
    "schema": (
        "kvcalc.cli.catalog",
        "schema",
        "Print the JSON Schema of a model or GPU spec, for editors to validate YAML files.",
    ),
}
HELP = "KV-cache capacity planning and decode roofline for LLM serving.\n\nExample: kvcalc size --model llama2-7b --seq 4096"


def reflow(doc: str) -> str:
    """A docstring as help text: each paragraph one line, which the help wraps to the terminal's width (the rich help
    keeps a paragraph's own line breaks, which at 80 columns left every source line a ragged break of its own)."""
    return "\n\n".join(" ".join(par.split()) for par in doc.split("\n\n") if par.strip())


def build_command(name: str) -> Any:
    """The click command of one kvcalc command, built from its function."""
    module, fn, _ = COMMANDS[name]
    func = getattr(importlib.import_module(module), fn)
    # Plain click help, as the root's: the rich help's boxed table cut option names and help short with an
    # ellipsis at 80 columns ("--prefix-cachi…", "lognormal:median=600,sigm…").
    t = typer.Typer(
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    t.command(name=name, cls=KvcalcCommand, help=reflow(inspect.getdoc(func) or ""))(func)
    cmd = typer.main.get_command(t)
    cmd.name = name
    return cmd


def wrap_help(text: str, width: int, indent: str = "") -> str:
    """Help text wrapped to ``width`` columns at spaces only: each paragraph (blank-line separated) refilled, no word
    broken, at a hyphen or for its length (click's wrapper breaks "--max-len" after "--max-", and the rich help cut
    option names and values short with an ellipsis at 80 columns)."""
    fill = textwrap.TextWrapper(
        max(width, 10), initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
    )
    return "\n\n".join(fill.fill(" ".join(par.split())) for par in text.split("\n\n") if par.strip())


class HelpFormatter(ClickHelpFormatter):
    """click's plain help, wrapped by :func:`wrap_help`: at any width every option name, value and word of the help
    appears whole."""

    def write_text(self, text: str) -> None:
        self.write(wrap_help(text, self.width, " " * self.current_indent) + "\n")

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        first_col = min(max((len(first) for first, _ in rows), default=0), col_max) + col_spacing
        pad = " " * (first_col + self.current_indent)
        for first, second in rows:
            self.write(f"{'':>{self.current_indent}}{first}")
            if not second:
                self.write("\n")
                continue
            if len(first) <= first_col - col_spacing:
                self.write(" " * (first_col - len(first)))
            else:
                self.write("\n" + pad)
            self.write(wrap_help(second, self.width, pad)[len(pad) :] + "\n")


class HelpContext(Context):
    formatter_class = HelpFormatter


class ReaderGone(Exception):
    """Standard output's reader closed it while a command was writing (not an OSError, which
    click would turn into exit 1)."""


class KvcalcCommand(TyperCommand):
    """A command that refuses an option given twice (click would silently keep the last value), and
    names its own options where the library's errors name the library's arguments."""

    context_class = HelpContext

    def parse_args(self, ctx: Any, args: list[str]) -> Any:
        refuse_repeats(self, self.name or "", args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        from kvcalc.errors import KvcalcError

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader went away mid-output (more than a pipe's buffer, then `| head`): click
            # would exit 1 for it; kvcalc's entry point stops quietly with 0 (docs/security.md).
            raise ReaderGone from None
        except KvcalcError as e:
            where = file_where(self, ctx, flag_where(self, e.where))
            if where == e.where:
                raise
            raise KvcalcError(e.what, where, e.accepted) from None


ARGUMENT_OPTIONS = {
    "batches": "batch",
    "seqs": "seq",
    "dp_sizes": "dp",
    "tp_sizes": "tp",
    "traffic": "users/rate",
    "recv_interval": "scheduler_recv_interval",
}
"""Library arguments whose option is named otherwise."""


def flag_where(cmd: Any, where: str | None) -> str | None:
    """A library error's ``where`` (an argument name, or several joined by ' x ' or '/') as the
    command's options: ``tp`` -> ``--tp``. Anything else (a file, a line, a field) is kept."""
    import re

    if not where or not re.fullmatch(r"[a-z_]+(?:(?: x |/)[a-z_]+)*", where):
        return where
    flags = {p.name: max(p.opts, key=len) for p in cmd.params if getattr(p, "param_type_name", "") == "option" and p.opts}

    def one(m: re.Match[str]) -> str:
        return "/".join(flags.get(x, x) for x in ARGUMENT_OPTIONS.get(m.group(0), m.group(0)).split("/"))

    return re.sub(r"[a-z_]+", one, where)


def file_where(cmd: Any, ctx: Any, where: str | None) -> str | None:
    """An error's ``where`` that names one option whose value the command took from kvcalc.toml (click's
    default_map, not the command line) as that file and key, where the user can find and change it:
    ``--attention-backend`` -> ``/path/kvcalc.toml, key attention_backend``."""
    from typer._click.core import ParameterSource

    if not where or not ctx.default_map:
        return where
    for p in cmd.params:
        if getattr(p, "param_type_name", "") == "option" and where in p.opts:
            if ctx.get_parameter_source(p.name) == ParameterSource.DEFAULT_MAP:
                from kvcalc.cli.defaults import option_defaults

                return f"{option_defaults()[1]}, key {p.name}"
            break
    return where


def refuse_repeats(cmd: Any, name: str, args: list[str]) -> None:
    """An option given twice is an error: click would silently keep the last value."""
    from kvcalc.errors import KvcalcError

    # A flag pair's two spellings (--chunked-prefill / --no-chunked-prefill) are one option.
    options = {
        o: p
        for p in cmd.params
        if getattr(p, "param_type_name", "") == "option"
        for o in (*p.opts, *getattr(p, "secondary_opts", ()))
    }
    seen: dict[str, str] = {}
    skip = False
    for token in args:
        if skip:
            skip = False
            continue
        if token == "--":
            break
        opt = token.split("=", 1)[0]
        p = options.get(opt)
        if p is None:
            continue
        if p.name in seen and not getattr(p, "multiple", False):
            raise KvcalcError(
                f"option {opt} given more than once (also as {seen[p.name]})", f"kvcalc {name}", "give each option once"
            )
        seen[p.name] = opt
        skip = not p.is_flag and "=" not in token


class LazyGroup(TyperGroup):
    """A group that knows its commands by name and builds one only when it is invoked or listed."""

    context_class = HelpContext

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in COMMANDS:
            return None
        if cmd_name not in self.commands:
            self.commands[cmd_name] = build_command(cmd_name)
        return self.commands[cmd_name]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # The command list from the table above: help does not import every command.
        with formatter.section("Commands"):
            formatter.write_dl([(n, h) for n, (_, _, h) in COMMANDS.items()])

    def format_help(self, ctx: Any, formatter: Any) -> None:
        # Plain click help (no rich): the same text on a terminal and in a pipe.
        self.format_usage(ctx, formatter)
        formatter.write_paragraph()
        formatter.write_text(HELP)
        self.format_options(ctx, formatter)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        opts = [p.get_help_record(ctx) for p in self.get_params(ctx)]
        with formatter.section("Options"):
            formatter.write_dl([o for o in opts if o])
        self.format_commands(ctx, formatter)


def _version(value: bool) -> None:
    if value:
        print(f"kvcalc {__version__}")
        raise typer.Exit()


root_app = typer.Typer(
    name="kvcalc",
    cls=LazyGroup,
    help=HELP,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@root_app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """KV-cache capacity planning and decode roofline for LLM serving."""


_ROOT: Any = None


def root() -> Any:
    global _ROOT
    if _ROOT is None:
        _ROOT = typer.main.get_command(root_app)
    return _ROOT


# ---- output -----------------------------------------------------------------------------------

_collector: list[Any] | None = None


def emit(report: Any, origin: dict[str, str] | None = None, as_json: bool = False, **options: Any) -> Any:
    """Hand a report to the renderer (or, inside ``kvcalc check``, to the collector). What kvcalc
    assumed importing the model's config.json joins the report's warnings."""
    if origin and "model_warnings" in origin:
        import dataclasses

        origin = dict(origin)
        notes = origin.pop("model_warnings").split("\n")
        old = getattr(report, "warnings", None)
        if dataclasses.is_dataclass(report) and not isinstance(report, type) and isinstance(old, list):
            report = dataclasses.replace(report, warnings=[*notes, *old])
    origin = _with_file_options(origin)
    if _collector is not None:
        _collector.append((report, origin))
        return report
    from kvcalc.render import show

    show(report, origin, as_json, **options)
    return report


def _with_file_options(origin: dict[str, str] | None) -> dict[str, str] | None:
    """Name the options the command took from kvcalc.toml (click's default_map), as the model and
    GPU taken by default are named."""
    from typer._click.globals import get_current_context

    from kvcalc.cli.defaults import from_file, option_defaults

    ctx = get_current_context(silent=True)
    if ctx is None or not ctx.default_map:
        return origin
    used = [f"{k.replace('_', '-')} {ctx.default_map[k]}" for k in ctx.default_map if from_file(k)]
    if not used:
        return origin

    out = dict(origin or {})
    out["options"], out["options_from"] = ", ".join(used), option_defaults()[1]
    return out


class Collect:
    """Run commands for their reports instead of their output (``kvcalc check``)."""

    def __enter__(self) -> list[Any]:
        global _collector
        self.previous = _collector
        _collector = []
        return _collector

    def __exit__(self, *exc: Any) -> None:
        global _collector
        _collector = self.previous


# ---- errors -----------------------------------------------------------------------------------


def fail(line: str) -> int:
    sys.stderr.write(f"kvcalc: error: {' '.join(str(line).split())}\n")
    return 2


def _usage_line(e: Any) -> str:
    """A click usage error as kvcalc's one line: what, (where), what is accepted or meant."""
    from kvcalc.errors import KvcalcError

    ctx = getattr(e, "ctx", None)
    cmd = ctx.command_path if ctx is not None else "kvcalc"
    kind = type(e).__name__
    if kind == "NoSuchOption":
        opts = sorted({o for p in (ctx.command.params if ctx else []) for o in getattr(p, "opts", []) if o.startswith("--")})
        near = difflib.get_close_matches(e.option_name, opts, n=3, cutoff=0.5)
        accepted = f"did you mean {', '.join(near)}?" if near else f"see '{cmd} --help' for its options"
        return KvcalcError(f"no such option {e.option_name}", cmd, accepted).line()
    if kind == "MissingParameter":
        p = e.param
        name = (
            ("/".join(o for o in getattr(p, "opts", []) if o.startswith("--")) or getattr(p, "name", "?")).upper()
            if getattr(p, "param_type_name", "") == "argument"
            else "/".join(o for o in p.opts if o.startswith("--"))
        )
        what = "argument" if getattr(p, "param_type_name", "") == "argument" else "option"
        return KvcalcError(f"missing {what} {name}", cmd, getattr(p, "help", None) or f"see '{cmd} --help'").line()
    msg = e.format_message()
    if msg.startswith("No such command"):
        typed = msg.split("'")[1] if "'" in msg else msg
        near = difflib.get_close_matches(typed, list(COMMANDS), n=3, cutoff=0.5)
        accepted = (f"did you mean {', '.join(near)}? " if near else "") + "commands: " + ", ".join(COMMANDS)
        return KvcalcError(f"unknown command {typed[:40]!r}", "kvcalc", accepted).line()
    return KvcalcError(msg.rstrip("."), cmd, f"see '{cmd} --help'").line()


def _default_map(args: list[str]) -> dict[str, dict[str, str]] | None:
    """kvcalc.toml's options (defaults.OPTION_KEYS) for the command being run (click's default_map: a flag on the
    command line wins)."""
    from kvcalc.cli.defaults import option_defaults

    cmd = next((a for a in args if not a.startswith("-")), None)
    if cmd is None or cmd in ("schema", "models", "gpus", "engines", "show", "import", "check"):
        return None
    values, _ = option_defaults()
    return {cmd: values} if values else None


def main(argv: list[str] | None = None) -> int:
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

    from kvcalc.errors import KvcalcError

    args = list(argv if argv is not None else sys.argv[1:])
    try:
        rv = root().main(args=args, prog_name="kvcalc", standalone_mode=False, default_map=_default_map(args))
    except KvcalcError as e:
        return fail(e.line())
    except NoArgsIsHelpError as e:
        sys.stdout.write(e.ctx.get_help() + "\n")
        return 0
    except UsageError as e:
        return fail(_usage_line(e))
    except ClickException as e:
        return fail(e.format_message())
    except (typer.Exit, SystemExit) as e:
        code = getattr(e, "exit_code", None)
        if code is None:
            code = getattr(e, "code", 0) or 0
        return int(code)
    except typer.Abort:
        return fail("aborted")
    except KeyboardInterrupt:
        return 130
    except (BrokenPipeError, ReaderGone):
        return _closed_pipe()
    except OSError as e:
        if _writing_failed(e):
            return fail(f"cannot write the output: {e.strerror or e} (standard output)")
        return fail(f"internal error: {type(e).__name__}: {e} (a kvcalc bug: please report it with the command)")
    except RecursionError:
        return fail("input nested too deeply")
    except ValueError as e:
        if "integer string conversion" in str(e):
            # Python reads no integer of over 4,300 digits: an input holds one.
            return fail("a number with thousands of digits in the input (figures of ordinary size: at most 2^50)")
        return fail(f"internal error: {type(e).__name__}: {e} (a kvcalc bug: please report it with the command)")
    except MemoryError:
        return fail("out of memory: the input asks for more than this machine has (try a smaller grid, batch or run)")
    except Exception as e:
        return fail(f"internal error: {type(e).__name__}: {e} (a kvcalc bug: please report it with the command)")
    return int(rv) if isinstance(rv, int) and not isinstance(rv, bool) else 0


def _writing_failed(e: OSError) -> bool:
    """Whether an OSError is standard output refusing the output (a full disk, a device gone)."""
    import errno

    return e.errno in (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EFBIG, errno.EBADF)


def _closed_pipe() -> int:
    """The reader went away (``kvcalc models | head``): stop quietly, as well-behaved tools do.
    stdout is pointed at /dev/null so that Python's own flush at exit does not complain."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 0


def run() -> None:
    import os

    if sys.stdout is None:
        # Standard output closed before kvcalc started (kvcalc tiers >&-): nothing can be read from
        # it, so the answer goes nowhere and kvcalc ends as it does for a reader gone away.
        sys.stdout = open(os.devnull, "w")
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _closed_pipe()
    except OSError as e:
        if not _writing_failed(e):
            raise
        code = fail(f"cannot write the output: {e.strerror or e} (standard output)")
    sys.exit(code)
