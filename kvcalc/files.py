"""Reading what users point kvcalc at, bounded in time and memory.

Every path a user gives (a spec, a config, a check file, a trace, a log, kvcalc.toml) is opened
here. Only regular files are read: a FIFO would block forever and /dev/zero never ends, and
``stat`` reports a size of 0 for both, so the size check is not enough. Files are opened
non-blocking, checked with ``fstat`` on the open descriptor (no race with a swapped path), and
read with a byte bound whatever ``stat`` said.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from typing import BinaryIO

from kvcalc.errors import KvcalcError

MiB = 2**20
SPEC_LIMIT = 4 * MiB
"""Model and GPU specs, config.json, check files, kvcalc.toml: a few KB in practice."""
INDEX_LIMIT = 64 * MiB
"""model.safetensors.index.json (a weight map of every tensor: a few MB for the largest models)."""
TRACE_LIMIT = 512 * MiB
"""Request traces: millions of lines."""
LINE_LIMIT = 64 * 1024
"""Log lines longer than this are cut: no start-up line that kvcalc reads is longer."""


def probe(path: str | os.PathLike[str]) -> str | None:
    """'file', 'dir', 'special' (FIFO, device, socket) or None (missing, unreadable, a name too long
    or holding a NUL byte) for any string a user typed."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISDIR(mode):
        return "dir"
    return "file" if stat.S_ISREG(mode) else "special"


def _describe(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def open_regular(path: str | os.PathLike[str], accepted: str) -> BinaryIO:
    """Open a regular file for reading in binary; anything else is a one-line error."""
    where = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError:
        raise KvcalcError("is a folder", where, accepted) from None
    except FileNotFoundError:
        raise KvcalcError("no such file", where, accepted) from None
    except (OSError, ValueError) as e:
        raise KvcalcError(f"cannot read file: {getattr(e, 'strerror', None) or e}", where, accepted) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise KvcalcError(f"is {_describe(mode)}, not a regular file", where, accepted)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike[str], limit: int, accepted: str) -> bytes:
    """At most ``limit`` bytes of a regular file; a longer file is refused, whatever stat says."""
    where = str(path)
    with open_regular(path, accepted) as f:
        try:
            data = f.read(limit + 1)
        except OSError as e:
            raise KvcalcError(f"cannot read file: {e.strerror or e}", where, accepted) from None
    if len(data) > limit:
        raise KvcalcError(f"file is over {limit:,} bytes", where, f"{accepted} of at most {limit:,} bytes")
    return data


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
"""UTF-16's byte-order marks, little- and big-endian: Windows PowerShell's `>` writes a file with the first."""


def read_text(path: str | os.PathLike[str], limit: int = SPEC_LIMIT, accepted: str = "a YAML or JSON text file") -> str:
    """A text file's contents: UTF-8, or UTF-16 with its byte-order mark (Windows PowerShell's `>` writes
    UTF-16LE), its mark dropped."""
    data = read_bytes(path, limit, accepted)
    try:
        if data[:2] in UTF16_BOMS:
            return data.decode("utf-16")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise KvcalcError("file is not UTF-8 or UTF-16 text", str(path), accepted) from None


def iter_lines(stream: BinaryIO, max_line: int = LINE_LIMIT) -> Iterator[str]:
    """Lines of a binary stream as text, each cut to ``max_line`` bytes, in bounded memory: a line
    longer than that is read through in chunks and its rest dropped. Bytes that are not UTF-8 are
    replaced."""
    while True:
        line = stream.readline(max_line)
        if not line:
            return
        if not line.endswith(b"\n") and len(line) >= max_line:
            # Skip the rest of an over-long line without holding it.
            while True:
                rest = stream.readline(max_line)
                if not rest or rest.endswith(b"\n"):
                    break
        yield line.decode("utf-8", errors="replace").rstrip("\r\n")


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write a file kvcalc was asked to write (a calibration); a failure is one line."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise KvcalcError(f"cannot write it: {e.strerror or e}", str(path), "a writable path") from None
