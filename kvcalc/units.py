"""Units: parsing what people type, formatting what we print. The only unit code in kvcalc.

Sizes are exact integers of bytes. ``GB`` is 10**9 and ``GiB`` is 2**30, never mixed.
Token counts follow how context lengths are named: ``4k`` = ``4K`` = 4096, ``1M`` = 2**20.
"""

from __future__ import annotations

import re
from decimal import Context, Decimal, InvalidOperation, localcontext
from fractions import Fraction

from kvcalc.errors import KvcalcError

SI = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
IEC = {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50}
_SIZE_UNITS = {**SI, **IEC}
_SIZE_ACCEPTED = "a byte count (85031714816 or 85031714816B) or a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB (80GB, 79.2GiB)"
_TOKENS_ACCEPTED = "a positive whole number of tokens: 4096, 4k or 4K (= 4096), 1M (= 1048576)"

_NUM = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?"
_SIZE_RE = re.compile(r"^\s*" + _NUM + r"\s*([A-Za-z]*)\s*$")


_CTX = Context(prec=120, Emax=200, Emin=-200)


def _decimal(text: str, exp: str | None) -> Decimal:
    """Exact decimal of a typed number (120 significant digits; exponents up to 10**100)."""
    if exp and abs(int(exp)) > 100:
        raise InvalidOperation
    with localcontext(_CTX):
        d = Decimal(text)
        if exp:
            d = d.scaleb(int(exp))
        return d


def parse_size(text: str | int, where: str = "size") -> int:
    """Parse a memory size into exact bytes. ``80GB`` -> 80*10**9, ``79.2GiB`` -> round(79.2*2**30)."""
    if isinstance(text, bool):
        raise KvcalcError(f"cannot read {text!r} as a size", where, _SIZE_ACCEPTED)
    if isinstance(text, int):
        if text < 0:
            raise KvcalcError(f"negative size {text}", where, _SIZE_ACCEPTED)
        return text
    m = _SIZE_RE.match(str(text)) if len(str(text)) <= 64 else None
    if not m:
        raise KvcalcError(f"cannot read {text!r} as a size", where, _SIZE_ACCEPTED)
    num, exp, unit = m.groups()
    mult = _SIZE_UNITS.get(unit.upper())
    if mult is None:
        raise KvcalcError(f"unknown size unit {unit!r} in {text!r}", where, _SIZE_ACCEPTED)
    try:
        with localcontext(_CTX):
            value = _decimal(num, exp) * mult
    except (InvalidOperation, ValueError, OverflowError):
        raise KvcalcError(f"cannot read {text!r} as a size", where, _SIZE_ACCEPTED) from None
    if value != value.to_integral_value() and mult == 1:
        raise KvcalcError(f"a byte count must be whole, got {text!r}", where, _SIZE_ACCEPTED)
    return int(value.to_integral_value())


_TOKENS_RE = re.compile(r"^\s*" + _NUM + r"\s*([kKmM]?)\s*$")


def parse_tokens(text: str | int, where: str = "tokens", allow_zero: bool = False) -> int:
    """Parse a token count: ``4096``, ``4k``/``4K`` (x1024), ``1M`` (x2**20)."""
    if isinstance(text, bool):
        raise KvcalcError(f"cannot read {text!r} as a token count", where, _TOKENS_ACCEPTED)
    if isinstance(text, int):
        value = Decimal(text)
    else:
        m = _TOKENS_RE.match(str(text)) if len(str(text)) <= 64 else None
        if not m:
            raise KvcalcError(f"cannot read {text!r} as a token count", where, _TOKENS_ACCEPTED)
        num, exp, suffix = m.groups()
        try:
            with localcontext(_CTX):
                value = _decimal(num, exp) * {"": 1, "k": 1024, "m": 2**20}[suffix.lower()]
        except (InvalidOperation, ValueError, OverflowError):
            raise KvcalcError(f"cannot read {text!r} as a token count", where, _TOKENS_ACCEPTED) from None
    if value != value.to_integral_value():
        raise KvcalcError(f"a token count must be whole, got {text!r}", where, _TOKENS_ACCEPTED)
    n = int(value)
    if n < 0 or (n == 0 and not allow_zero):
        raise KvcalcError(f"token count must be positive, got {text!r}", where, _TOKENS_ACCEPTED)
    return n


def parse_count(text: str | int, where: str, minimum: int = 1) -> int:
    """A plain positive integer (batch size, tp, pp, block size)."""
    try:
        n = int(str(text).strip()) if not isinstance(text, int) or isinstance(text, bool) else text
    except ValueError:
        raise KvcalcError(f"cannot read {text!r} as a whole number", where, f"an integer >= {minimum}") from None
    if isinstance(n, bool) or n < minimum:
        raise KvcalcError(f"{text!r} is too small", where, f"an integer >= {minimum}")
    return n


_RATE_RE = re.compile(r"^\s*" + _NUM + r"\s*([A-Za-z]*)\s*(?:/\s*s)?\s*$")


def parse_rate(text: str | int | float, where: str = "bandwidth") -> int:
    """Bytes per second: ``3.35TB/s``, ``2039GB/s``, ``900 GB/s``; a bare number is B/s."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if text <= 0:
            raise KvcalcError(f"rate must be positive, got {text}", where, "e.g. 3.35TB/s")
        return int(text)
    m = _RATE_RE.match(str(text)) if len(str(text)) <= 64 else None
    if not m:
        raise KvcalcError(f"cannot read {text!r} as a rate", where, "a number with a unit per second, e.g. 3.35TB/s or 900GB/s")
    num, exp, unit = m.groups()
    mult = _SIZE_UNITS.get(unit.upper())
    if mult is None:
        raise KvcalcError(f"unknown unit {unit!r} in {text!r}", where, "B/s, KB/s, MB/s, GB/s, TB/s, GiB/s")
    try:
        with localcontext(_CTX):
            value = int(_decimal(num, exp) * mult)
    except (InvalidOperation, ValueError, OverflowError):
        raise KvcalcError(f"cannot read {text!r} as a rate", where, "e.g. 3.35TB/s") from None
    if value <= 0:
        raise KvcalcError(f"rate must be positive, got {text!r}", where, "e.g. 3.35TB/s")
    return value


def _fmt(value: Fraction | float, digits: int) -> str:
    s = f"{float(value):,.{digits}f}"
    return s


def fmt_si(n: int, digits: int = 2) -> str:
    """Bytes in decimal units: 42949672960 -> '42.95 GB'."""
    for unit, mult in (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if abs(n) >= mult:
            return f"{_fmt(Fraction(n, mult), digits)} {unit}"
    return f"{n:,} B"


def fmt_iec(n: int, digits: int = 2) -> str:
    """Bytes in binary units: 42949672960 -> '40.00 GiB'."""
    for unit, mult in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= mult:
            return f"{_fmt(Fraction(n, mult), digits)} {unit}"
    return f"{n:,} B"


def fmt_bytes(n: int) -> str:
    """Exact bytes, then GB and GiB: '42,949,672,960 B (42.95 GB, 40.00 GiB)'."""
    if abs(n) < 1000:
        return f"{n:,} B"
    return f"{n:,} B ({fmt_si(n)}, {fmt_iec(n)})"


def fmt_rate(bps: float) -> str:
    """Bytes per second in decimal units (vendors quote bandwidth in GB/s and TB/s)."""
    for unit, mult in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("KB/s", 1e3)):
        if abs(bps) >= mult:
            return f"{bps / mult:,.3g} {unit}" if bps / mult < 10 else f"{bps / mult:,.1f} {unit}"
    return f"{bps:,.0f} B/s"


def fmt_flops(fps: float) -> str:
    for unit, mult in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)):
        if abs(fps) >= mult:
            return f"{fps / mult:,.1f} {unit}"
    return f"{fps:,.0f} FLOP/s"


def fmt_tokens(n: int) -> str:
    return f"{n:,} tokens"


MAX_LIST = 100_000
_LIST_ACCEPTED = "a value, a list (1,8,32), a doubling range (1k..128k) or a stepped range (1024..8192:1024)"


def parse_list(text: str | int, where: str, one) -> list[int]:
    """A list or range of whole numbers: ``1,8,32``; ``1k..128k`` doubles from the first to the
    last (and ends on the last); ``1024..8192:1024`` steps linearly. ``one`` parses one item."""
    s = str(text).strip()
    if not s:
        raise KvcalcError("empty list", where, _LIST_ACCEPTED)
    out: list[int] = []
    for part in s.split(","):
        part = part.strip()
        if ".." in part:
            lo_s, _, rest = part.partition("..")
            hi_s, _, step_s = rest.partition(":")
            lo, hi = one(lo_s, where), one(hi_s, where)
            if hi < lo:
                raise KvcalcError(f"range {part!r} runs backwards", where, _LIST_ACCEPTED)
            if step_s:
                step = one(step_s, where)
                if (hi - lo) // step + 1 > MAX_LIST:
                    raise KvcalcError(f"range {part!r} has over {MAX_LIST:,} values", where, "a coarser step")
                out.extend(range(lo, hi + 1, step))
            else:
                v = lo
                while v < hi:
                    out.append(v)
                    v *= 2
                out.append(hi)
        else:
            out.append(one(part, where))
        if len(out) > MAX_LIST:
            raise KvcalcError(f"more than {MAX_LIST:,} values", where, _LIST_ACCEPTED)
    return list(dict.fromkeys(out))


def parse_token_list(text: str | int, where: str = "--seq") -> list[int]:
    return parse_list(text, where, lambda v, w: parse_tokens(v, w))


def parse_count_list(text: str | int, where: str = "--batch") -> list[int]:
    return parse_list(text, where, lambda v, w: parse_tokens(v, w))
