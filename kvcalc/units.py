"""Units: parsing what people type, formatting what we print. The only unit code in kvcalc.

Sizes are exact integers of bytes. ``GB`` is 10**9 and ``GiB`` is 2**30, never mixed.
Token counts follow how context lengths are named: ``4k`` = ``4K`` = 4096, ``1M`` = 2**20.
Counts of things (requests, GPUs, blocks) are plain whole numbers: ``--batch 1k`` is refused, never
read as 1,024 requests.

Every parser has a range. Inside it, figures stay exact (Python ints end to end); outside it, the
input is refused with one line that says the range, so no float overflows and no number prints
with thousands of digits.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kvcalc.errors import KvcalcError

if TYPE_CHECKING:
    from decimal import Decimal
    from fractions import Fraction

SI = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12, "PB": 10**15}
IEC = {"KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "PIB": 2**50}
_SIZE_UNITS = {**SI, **IEC}

MAX_TOKENS = 2**34
"""The longest context kvcalc sizes: 16,777,216k tokens (2^34), over a thousand times any model's."""
MAX_BYTES = 2**60
"""The largest size kvcalc takes: 1 EiB."""
MAX_RATE = 10**18
"""The largest rate kvcalc takes: 1 EB/s."""
MAX_COUNT = 2**24
"""The largest count of requests kvcalc takes (16,777,216)."""

_SIZE_ACCEPTED = (
    "a byte count (85031714816 or 85031714816B) or a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB "
    "(80GB, 79.2GiB), up to 1 EiB"
)
_TOKENS_ACCEPTED = "a whole number of tokens: 4096, 4k or 4K (= 4096), 1M (= 1048576), up to 16,777,216k"


class _Lazy:
    """A regular expression compiled the first time it is used (compiling all four at import costs a
    few ms of every command's start-up)."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.compiled: re.Pattern[str] | None = None

    def match(self, text: str) -> re.Match[str] | None:
        if self.compiled is None:
            self.compiled = re.compile(self.pattern)
        return self.compiled.match(text)


_NUM = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?"
_SIZE_RE = _Lazy(r"^\s*" + _NUM + r"\s*([A-Za-z]*)\s*$")


_CONTEXT: list[Any] = []


def _ctx() -> Any:
    """The exact-decimal context (120 significant digits), made on first use: decimal and fractions
    are imported only by a number that needs them (one with a point or an exponent)."""
    if not _CONTEXT:
        from decimal import Context

        _CONTEXT.append(Context(prec=120, Emax=5000, Emin=-5000))
    return _CONTEXT[0]


def _exact(num: str, exp: str | None, mult: int) -> Any:
    """num x 10^exp x mult exactly: an int for a plain whole number, else a Decimal."""
    if exp is None and num.isdigit():
        return int(num) * mult
    from decimal import localcontext

    with localcontext(_ctx()):
        return _decimal(num, exp) * mult


def show(text: object, limit: int = 40) -> str:
    """A typed value as it goes into an error line: quoted, and cut when it is long."""
    s = str(text)
    return repr(s if len(s) <= limit else s[: limit - 3] + "...")


def _decimal(text: str, exp: str | None) -> Decimal:
    """Exact decimal of a typed number (120 significant digits; exponents up to 10**100)."""
    from decimal import Decimal, DecimalException, localcontext

    if exp and (len(exp) > 6 or abs(int(exp)) > 100):
        raise DecimalException
    with localcontext(_ctx()):
        d = Decimal(text)
        if exp:
            d = d.scaleb(int(exp))
        return d


def parse_size(text: str | int, where: str = "size", maximum: int = MAX_BYTES) -> int:
    """Parse a memory size into exact bytes. ``80GB`` -> 80*10**9, ``79.2GiB`` -> round(79.2*2**30)."""
    if isinstance(text, bool):
        raise KvcalcError(f"cannot read {show(text)} as a size", where, _SIZE_ACCEPTED)
    if isinstance(text, int):
        value_i = text
    else:
        m = _SIZE_RE.match(str(text)) if len(str(text)) <= 1000 else None
        if not m:
            raise KvcalcError(f"cannot read {show(text)} as a size", where, _SIZE_ACCEPTED)
        num, exp, unit = m.groups()
        mult = _SIZE_UNITS.get(unit.upper())
        if mult is None:
            raise KvcalcError(f"unknown size unit {show(unit)} in {show(text)}", where, _SIZE_ACCEPTED)
        try:
            value = _exact(num, exp, mult)
        except (ArithmeticError, ValueError):
            raise KvcalcError(f"cannot read {show(text)} as a size", where, _SIZE_ACCEPTED) from None
        if value != int(value) and mult == 1:
            raise KvcalcError(f"a byte count must be whole, got {show(text)}", where, _SIZE_ACCEPTED)
        if value > maximum:
            raise KvcalcError(f"size {show(text)} is over the limit", where, _SIZE_ACCEPTED)
        value_i = round(value)
    if value_i < 0:
        raise KvcalcError(f"negative size {show(text)}", where, _SIZE_ACCEPTED)
    if value_i > maximum:
        raise KvcalcError(f"size {show(text)} is over the limit", where, _SIZE_ACCEPTED)
    return value_i


_TOKENS_RE = _Lazy(r"^\s*" + _NUM + r"\s*([kKmM]?)\s*$")


def parse_tokens(text: str | int, where: str = "tokens", allow_zero: bool = False, maximum: int = MAX_TOKENS) -> int:
    """Parse a token count: ``4096``, ``4k``/``4K`` (x1024), ``1M`` (x2**20)."""
    if isinstance(text, bool):
        raise KvcalcError(f"cannot read {show(text)} as a token count", where, _TOKENS_ACCEPTED)
    value: Any
    if isinstance(text, int):
        value = text
    else:
        m = _TOKENS_RE.match(str(text)) if len(str(text)) <= 1000 else None
        if not m:
            raise KvcalcError(f"cannot read {show(text)} as a token count", where, _TOKENS_ACCEPTED)
        num, exp, suffix = m.groups()
        try:
            value = _exact(num, exp, {"": 1, "k": 1024, "m": 2**20}[suffix.lower()])
        except (ArithmeticError, ValueError):
            raise KvcalcError(f"cannot read {show(text)} as a token count", where, _TOKENS_ACCEPTED) from None
    if value != int(value):
        raise KvcalcError(f"a token count must be whole, got {show(text)}", where, _TOKENS_ACCEPTED)
    if value < 0 or (value == 0 and not allow_zero):
        raise KvcalcError(f"token count must be positive, got {show(text)}", where, _TOKENS_ACCEPTED)
    if value > maximum:
        raise KvcalcError(f"{show(text)} tokens is over the limit of {maximum:,}", where, _TOKENS_ACCEPTED)
    return int(value)


_COUNT_RE = _Lazy(r"^\s*\+?([0-9][0-9_,]*)\s*$")


def parse_count(text: str | int, where: str, minimum: int = 1, maximum: int = MAX_COUNT, noun: str = "a whole number") -> int:
    """A plain whole number (batch size, tp, pp, block size, requests): no unit suffix, so ``1k``
    is refused rather than read as a token count."""
    if isinstance(text, bool):
        raise KvcalcError(f"cannot read {show(text)} as {noun}", where, f"{noun} from {minimum:,} to {maximum:,}")
    if isinstance(text, int):
        n = text
    else:
        s = str(text)
        m = _COUNT_RE.match(s) if len(s) <= 1000 else None
        if not m or "__" in s or ",," in s:
            hint = " (a count, not a token length: write 1000, not 1k)" if re.match(r"^\s*[0-9.]+\s*[kKmM]\s*$", s) else ""
            raise KvcalcError(f"cannot read {show(text)} as {noun}{hint}", where, f"{noun} from {minimum:,} to {maximum:,}")
        n = int(m.group(1).replace("_", "").replace(",", ""))
    if n < minimum:
        raise KvcalcError(f"{show(text)} is too small", where, f"{noun} from {minimum:,} to {maximum:,}")
    if n > maximum:
        raise KvcalcError(f"{show(text)} is too large", where, f"{noun} from {minimum:,} to {maximum:,}")
    return n


_RATE_RE = _Lazy(r"^\s*" + _NUM + r"\s*([A-Za-z]*)\s*(?:/\s*s)?\s*$")
_RATE_ACCEPTED = "a number with a unit per second, e.g. 3.35TB/s or 900GB/s, up to 1 EB/s"


def parse_rate(text: str | int | float, where: str = "bandwidth", maximum: int = MAX_RATE) -> int:
    """Bytes per second: ``3.35TB/s``, ``2039GB/s``, ``900 GB/s``; a bare number is B/s."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if not text > 0 or text != text:
            raise KvcalcError(f"rate must be positive, got {show(text)}", where, _RATE_ACCEPTED)
        if text > maximum:
            raise KvcalcError(f"rate {show(text)} is over the limit", where, _RATE_ACCEPTED)
        return int(text)
    m = _RATE_RE.match(str(text)) if len(str(text)) <= 1000 else None
    if not m:
        raise KvcalcError(f"cannot read {show(text)} as a rate", where, _RATE_ACCEPTED)
    num, exp, unit = m.groups()
    mult = _SIZE_UNITS.get(unit.upper())
    if mult is None:
        raise KvcalcError(f"unknown unit {show(unit)} in {show(text)}", where, "B/s, KB/s, MB/s, GB/s, TB/s, GiB/s")
    try:
        d = _exact(num, exp, mult)
    except (ArithmeticError, ValueError):
        raise KvcalcError(f"cannot read {show(text)} as a rate", where, _RATE_ACCEPTED) from None
    if d > maximum:
        raise KvcalcError(f"rate {show(text)} is over the limit", where, _RATE_ACCEPTED)
    value = int(d)
    if value <= 0:
        raise KvcalcError(f"rate must be positive, got {show(text)}", where, _RATE_ACCEPTED)
    return value


def parse_float(text: str | float, where: str, minimum: float, maximum: float, accepted: str, open_low: bool = True) -> float:
    """A finite number in a range: (minimum, maximum] when ``open_low``, else [minimum, maximum]."""
    try:
        f = float(str(text).strip()) if len(str(text)) <= 64 else float("nan")
    except ValueError:
        raise KvcalcError(f"cannot read {show(text)} as a number", where, accepted) from None
    ok = f == f and (f > minimum if open_low else f >= minimum) and f <= maximum
    if not ok:
        raise KvcalcError(f"{show(text)} is out of range", where, accepted)
    return f


def _fmt(value: Fraction | float, digits: int) -> str:
    return f"{float(value):,.{digits}f}"


def _ratio(n: int, d: int) -> Fraction:
    from fractions import Fraction

    return Fraction(n, d)


def fmt_si(n: int, digits: int = 2) -> str:
    """Bytes in decimal units: 42949672960 -> '42.95 GB'."""
    for unit, mult in (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if abs(n) >= mult:
            return f"{_fmt(_ratio(n, mult), digits)} {unit}"
    return f"{n:,} B"


def fmt_iec(n: int, digits: int = 2) -> str:
    """Bytes in binary units: 42949672960 -> '40.00 GiB'."""
    for unit, mult in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= mult:
            return f"{_fmt(_ratio(n, mult), digits)} {unit}"
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


def fmt_flops(fps: float, what: str = "FLOP") -> str:
    """A rate of operations with its unit: FLOP/s, or ``what`` (OP for INT8 tensor operations)."""
    for unit, mult in (("P", 1e15), ("T", 1e12), ("G", 1e9)):
        if abs(fps) >= mult:
            return f"{fps / mult:,.1f} {unit}{what}/s"
    return f"{fps:,.0f} {what}/s"


MAX_LIST = 1_000_000
_LIST_ACCEPTED = "a value, a list (1,8,32), a doubling range (1k..128k) or a stepped range (1024..8192:1024)"


def parse_list(text: str | int, where: str, one: Callable[[str, str], int], limit: int = MAX_LIST) -> list[int]:
    """A list or range of whole numbers: ``1,8,32``; ``1k..128k`` doubles from the first to the
    last (and ends on the last); ``1024..8192:1024`` steps linearly. ``one`` parses one item. The
    number of values is checked before any is made."""
    s = str(text).strip()
    if not s:
        raise KvcalcError("empty list", where, _LIST_ACCEPTED)
    if len(s) > 100_000:
        raise KvcalcError("the list is too long to read", where, _LIST_ACCEPTED)
    out: list[int] = []
    for part in s.split(","):
        part = part.strip()
        if ".." in part:
            lo_s, _, rest = part.partition("..")
            hi_s, _, step_s = rest.partition(":")
            lo, hi = one(lo_s, where), one(hi_s, where)
            if hi < lo:
                raise KvcalcError(f"range {show(part)} runs backwards", where, _LIST_ACCEPTED)
            if step_s:
                step = one(step_s, where)
                if (hi - lo) // step + 1 + len(out) > limit:
                    raise KvcalcError(f"range {show(part)} has over {limit:,} values", where, "a coarser step")
                out.extend(range(lo, hi + 1, step))
            else:
                v = lo
                while v < hi:
                    out.append(v)
                    v = v * 2 if v else 1
                out.append(hi)
        else:
            out.append(one(part, where))
        if len(out) > limit:
            raise KvcalcError(f"more than {limit:,} values", where, _LIST_ACCEPTED)
    return list(dict.fromkeys(out))


def parse_token_list(text: str | int, where: str = "--seq", limit: int = MAX_LIST) -> list[int]:
    return parse_list(text, where, lambda v, w: parse_tokens(v, w), limit)


def parse_count_list(
    text: str | int, where: str = "--batch", minimum: int = 1, maximum: int = MAX_COUNT, limit: int = MAX_LIST
) -> list[int]:
    """A list or range of plain whole numbers (``1,8,32``, ``1..256``): ``1k`` is not a count."""
    return parse_list(text, where, lambda v, w: parse_count(v, w, minimum, maximum), limit)


def parse_seconds(text: str | float, where: str, allow_zero: bool = False) -> float:
    """A duration with its unit: 2s, 500ms, 50 ms, 800us; positive (or 0 where allowed) and at most
    a day. A bare number is refused: 50 could be seconds or milliseconds."""
    s = str(text).strip().lower().replace(" ", "")
    scale = 0.0
    for suffix, mult in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0)):
        if s.endswith(suffix):
            s, scale = s[: -len(suffix)], mult
            break
    lo = "0" if allow_zero else "above 0"
    accepted = f"a duration with its unit, such as 2s, 500ms or 800us, {lo} and at most a day"
    if not scale:
        raise KvcalcError(f"{show(text)} has no unit", where, accepted)
    try:
        v = float(s) * scale if len(s) <= 64 else math.nan
    except ValueError:
        raise KvcalcError(f"cannot read {show(text)} as a duration", where, accepted) from None
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero) or v > 86400:
        raise KvcalcError(f"{show(text)} is out of range", where, accepted)
    return v


def count_of(n: int | float, noun: str) -> str:
    """A whole count with its noun, singular for one: '1 request', '2,048 requests'."""
    return f"{n:,.0f} {noun}" + ("" if n == 1 else "s")
