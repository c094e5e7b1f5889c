"""The JSON contract, in one place: every command's ``--json`` is ``to_json(report)``.

A report is a frozen dataclass; its JSON is its fields, recursively. Keys are snake_case, bytes
integer ``*_bytes``, times float seconds ``*_s``; NaN and infinities become null. An object may
shape its own JSON with a ``__json__()`` method (a grid's points stored by column). The one
reshaping of the contract: a roofline of one point prints that point's fields at the top level
(as well as ``rows``), as it always has.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from collections.abc import Iterator
from itertools import islice
from typing import Any

from kvcalc._version import __version__

BIG_DOCUMENT = 2000
"""Reports with more rows than this print compact JSON (the indenting encoder is pure Python)."""
SCHEMA_VERSION = 1
"""The --json documents' schema: raised when a key is renamed or removed (an added key keeps it)."""


def to_plain(obj: Any) -> Any:
    hook = getattr(obj, "__json__", None)
    if hook is not None and not isinstance(obj, type):
        return to_plain(hook())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, int) or obj is None or isinstance(obj, (str, bool)):
        return obj
    item = getattr(obj, "item", None)  # numpy scalars
    if item is not None:
        return to_plain(item())
    return str(obj)


def _finite(col: list[Any]) -> bool:
    floats = [x for x in col if type(x) is float]
    return not floats or math.isfinite(sum(floats)) or all(map(math.isfinite, floats))


def _fast_rows(rows: Any) -> list[dict[str, Any]]:
    """Rows that already are plain dicts of plain values (a grid's columns) pass as they are, but
    for a NaN or an infinity (null, as everywhere)."""
    hook = getattr(rows, "__json__", None)
    if hook is None:
        return [to_plain(r) for r in rows]
    out: list[dict[str, Any]] = hook()
    cols = getattr(rows, "__json_columns__", None)
    if cols is not None and all(map(_finite, cols().values())):
        return out
    return [{k: to_plain(v) for k, v in r.items()} for r in out]


def to_json(report: Any, origin: dict[str, str] | None = None, rows: bool = True) -> dict[str, Any]:
    """The JSON object a command prints for its report; ``origin`` says where defaults came from.
    ``rows=False``: a roofline's many rows are left out (None in their place), for a caller that
    encodes them itself."""
    name = type(report).__name__
    doc: dict[str, Any]
    if name == "RooflineReport":
        doc = {
            f.name: ((_fast_rows(report.rows) if rows else None) if f.name == "rows" else to_plain(getattr(report, f.name)))
            for f in dataclasses.fields(report)
        }
        if len(report.rows) == 1:
            point: dict[str, Any] = doc["rows"][0]
            doc = {**doc, **point, "warnings": doc["warnings"] + point["warnings"]}
    else:
        doc = to_plain(report)
    if origin and isinstance(doc.get("inputs"), dict):
        doc["inputs"] = {**doc["inputs"], **origin}
    return {"kvcalc_version": __version__, "schema_version": SCHEMA_VERSION, **doc}


def dumps(doc: dict[str, Any]) -> str:
    rows = doc.get("rows")
    big = isinstance(rows, list) and len(rows) > BIG_DOCUMENT
    return json.dumps(doc, ensure_ascii=False, **({"separators": (",", ":")} if big else {"indent": 2})) + "\n"


def _encode_value(v: Any) -> str:
    return json.dumps(to_plain(v), ensure_ascii=False, separators=(",", ":"))


def encode_columns(columns: dict[str, list[Any]]) -> str:
    """A list of row objects, given by column (key -> one value per row), as the text that
    ``json.dumps(rows, ensure_ascii=False, separators=(",", ":"))`` of the plain rows prints, byte
    for byte, without building a dict per row: each row is one %-template, with a column that holds
    one value written into the template once, and an all-int or all-finite-float column left to
    %d / %r (what json's encoder calls for those types). Other columns are encoded per distinct value."""
    return "".join(iter_columns(columns))


def _count(columns: dict[str, list[Any]]) -> int:
    return len(next(iter(columns.values()))) if columns else 0


def iter_columns(columns: dict[str, list[Any]], chunk: int = 8192) -> Iterator[str]:
    """:func:`encode_columns`'s text in pieces of ``chunk`` rows, to write as they are made."""
    n = _count(columns)
    if not n:
        yield "[]"
        return
    yield from _rows_text(columns, 0, n, n, chunk)


def _rows_text(columns: dict[str, list[Any]], start: int, stop: int, n: int, chunk: int = 8192) -> Iterator[str]:
    """Rows ``start`` to ``stop`` of ``n``, as pieces of the list's text: the first piece of row 0
    opens the list, the last of row ``n - 1`` closes it, and every other row is preceded by a
    comma. How a column is written is decided from these rows alone; a row's text never depends on
    it (a value written once into the template reads as it would written per row)."""
    if (start, stop) != (0, n):
        columns = {k: col[start:stop] for k, col in columns.items()}
    template, values = _row_template(columns, stop - start)
    rows = zip(*values) if values else iter([()] * (stop - start))
    sep = "[" if start == 0 else ","
    for _ in range(start, stop, chunk):
        yield sep + ",".join([template % row for row in islice(rows, chunk)])
        sep = ","
    if stop == n:
        yield "]"


def _row_template(columns: dict[str, list[Any]], n: int) -> tuple[str, list[list[Any]]]:
    """One row's %-template, and the columns its placeholders take, in order (``n`` rows)."""
    from json.encoder import encode_basestring

    parts: list[str] = []
    values: list[list[Any]] = []
    for key, col in columns.items():
        head = encode_basestring(key).replace("%", "%%") + ":"
        kinds = set(map(type, col))
        if kinds == {int}:
            if col.count(col[0]) == n:
                parts.append(head + str(col[0]))
            else:
                parts.append(head + "%d")
                values.append(col)
            continue
        if kinds == {float} and math.isfinite(sum(col)):
            if col.count(col[0]) == n and (col[0] != 0.0 or all(math.copysign(1.0, x) > 0 for x in col)):
                # One value: written once (0.0 == -0.0, so a zero column is one value only if no zero is negative).
                parts.append(head + repr(col[0]))
            elif len(set(col[: n // 4])) * 4 < n and len(distinct := set(col)) * 4 < n and not any(x == 0.0 for x in distinct):
                # Few values (a per-batch term over a grid): each written once. (0.0 and -0.0 are
                # equal keys with different text, so a column holding zeros is written per value.)
                # The first quarter's values, counted first, rule out most columns at a quarter of the cost.
                text = {x: repr(x) for x in distinct}
                parts.append(head + "%s")
                values.append([text[x] for x in col])
            else:
                parts.append(head + "%r")
                values.append(col)
            continue
        if kinds == {float}:  # with a NaN or an infinity, which JSON writes as null
            enc = [repr(v) if math.isfinite(v) else "null" for v in col]
        elif kinds <= {str, bool, type(None)}:
            distinct = set(col)
            if len(distinct) == 1 and len(kinds) == 1:
                parts.append(head + _encode_value(col[0]).replace("%", "%%"))
                continue
            text = {v: _encode_value(v) for v in distinct}
            enc = [text[v] for v in col]
        elif kinds == {list} and all(type(x) is str for v in col for x in v):
            # Lists of strings (a row's warnings) are common: joined directly.
            enc = ["[" + ",".join(map(encode_basestring, v)) + "]" for v in col]
        else:
            enc = list(map(_encode_value, col))
        parts.append(head + "%s")
        values.append(enc)
    return "{" + ",".join(parts) + "}", values


def emit_json(report: Any, origin: dict[str, str] | None = None) -> None:
    """Print a report's JSON. A report whose rows are stored by column (``__json_columns__``) and
    are many is written without a dict per row: its other fields through :func:`to_json`, the
    rows as :func:`encode_columns` writes them (:func:`_write_rows`); the text is what
    ``dumps(to_json(report))`` prints."""
    rows = getattr(report, "rows", None)
    cols = getattr(rows, "__json_columns__", None)
    if cols is None or len(rows) <= BIG_DOCUMENT:  # type: ignore[arg-type]
        sys.stdout.write(dumps(to_json(report, origin)))
        return
    doc = to_json(report, origin, rows=False)
    write, sep = sys.stdout.write, "{"
    for k, v in doc.items():
        write(sep + _encode_value(k) + ":")
        sep = ","
        if k == "rows":
            _write_rows(cols())
        else:
            write(_encode_value(v))
    write("}\n")


PARALLEL_ROWS = 20_000
"""Rows from which a document's rows are written by two processes (half each), where the machine
has two CPUs for this process and standard output is a file descriptor."""
PARALLEL_MAX_ROWS = 250_000
"""Rows up to which they are: this process holds its half's text until the child is done (about
100 MB at this many rows); a bigger document is written by one process as it is made."""


def _halves(n: int) -> int:
    """Where to split ``n`` rows between two writer processes; 0 to write them in this one."""
    if not PARALLEL_ROWS <= n <= PARALLEL_MAX_ROWS or not hasattr(os, "fork") or os.environ.get("KVCALC_JSON_PROCESSES") == "1":
        return 0
    import threading

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cpus < 2 or threading.active_count() > 1:
        return 0
    try:
        sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stream (io.UnsupportedOperation is an OSError)
        return 0
    return n // 2


def _write_rows(columns: dict[str, list[Any]]) -> None:
    """Write the rows' list to standard output. A long list is written by two processes: a forked
    child encodes and writes the first half while this process encodes the second, which it writes
    once the child has finished (so the text is in order, and what each row's text is does not
    change). A child that could not write (a reader gone, a full disk) is raised here as its error."""
    n = _count(columns)
    half = _halves(n)
    if not half:
        for piece in iter_columns(columns):
            sys.stdout.write(piece)
        return
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:  # the child: rows [0, half), straight to standard output, then gone
        code = 0
        try:
            for piece in _rows_text(columns, 0, half, n):
                sys.stdout.write(piece)
            sys.stdout.flush()
        except OSError as e:
            code = e.errno if e.errno and 0 < e.errno < 255 else 255
        except BaseException:
            code = 255
        os._exit(code)
    try:
        rest = list(_rows_text(columns, half, n, n))
    finally:
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code:
        import errno

        if code == errno.EPIPE:
            raise BrokenPipeError(code, os.strerror(code))
        if 0 < code < 255:
            raise OSError(code, os.strerror(code))
        raise RuntimeError(f"the process writing the first half of the rows ended with status {code}")
    for piece in rest:
        sys.stdout.write(piece)
