"""Exact regular expressions for JSON numbers between bounds.

JSON Schema bounds (`minimum`, `exclusiveMaximum`, ...) are regular languages when numbers are
written without an exponent: comparing two decimal numerals is a digit-by-digit walk. The
functions here build those regexes directly (no automaton, no enumeration), so a bound such as
``minimum: -17, maximum: 1234`` costs a handful of alternatives however wide the range is.

Every pattern uses only plain classes, groups, alternation and counted repetition, so it means
the same in Python's `re` and in grammarc's regex syntax. Numerals are RFC 8259 numerals
without exponent: ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?``; ``-0`` is the number 0.

A number with an exponent (``1e3``) is never produced by these patterns: the set of exponent
numerals inside a bound is not regular, so bounded numbers are narrowed to plain notation.
"""

from __future__ import annotations

from decimal import Decimal

DIGIT = "[0-9]"


def _digit_class(lo: int, hi: int) -> str:
    if lo == hi:
        return str(lo)
    if lo == 0 and hi == 9:
        return DIGIT
    return f"[{lo}-{hi}]"


def _alt(parts: list[str]) -> str:
    parts = [p for p in parts]
    if not parts:
        raise ValueError("empty alternation")
    if len(parts) == 1:
        return parts[0]
    return "(?:" + "|".join(parts) + ")"


def _same_length(x: str, y: str) -> str:
    """Digit strings of len(x) == len(y) whose value lies in [x, y] (x <= y)."""
    n = len(x)
    if n == 0:
        return ""
    if x == y:
        return x
    if x[0] == y[0]:
        return x[0] + _same_length(x[1:], y[1:])
    rest = n - 1
    tail_any = f"{DIGIT}{{{rest}}}" if rest > 1 else (DIGIT if rest == 1 else "")
    x0, y0 = int(x[0]), int(y[0])
    lo_full = x[1:] == "0" * rest
    hi_full = y[1:] == "9" * rest
    parts = []
    mid_lo = x0 if lo_full else x0 + 1
    mid_hi = y0 if hi_full else y0 - 1
    if not lo_full:
        parts.append(x[0] + _same_length(x[1:], "9" * rest))
    if mid_lo <= mid_hi:
        parts.append(_digit_class(mid_lo, mid_hi) + tail_any)
    if not hi_full:
        parts.append(y[0] + _same_length("0" * rest, y[1:]))
    return _alt(parts)


def _lengths_run(first: int, last: int | None) -> str:
    """Every canonical numeral of `first` to `last` digits (None: no limit), 0 excluded."""
    a = first - 1
    if last is None:
        return f"[1-9]{DIGIT}" + ("*" if a == 0 else "+" if a == 1 else f"{{{a},}}")
    b = last - 1
    if a == b:
        return "[1-9]" + ("" if a == 0 else DIGIT if a == 1 else f"{DIGIT}{{{a}}}")
    return f"[1-9]{DIGIT}" + ("?" if (a, b) == (0, 1) else f"{{{a},{b}}}")


def natural_range_regex(lo: int, hi: int | None) -> str:
    """Canonical numerals (no leading zeros) of the integers in [lo, hi]; hi=None: no upper bound.

    Runs of complete lengths (every numeral of 2 to 18 digits, say) become one counted
    repetition, so ``[0, 10**18 - 1]`` is ``0|[1-9][0-9]{0,17}``, not 18 alternatives.
    """
    if lo < 0 or (hi is not None and hi < lo):
        raise ValueError(f"bad natural range [{lo}, {hi}]")
    if hi is not None and hi <= 9:
        return _same_length(str(lo), str(hi))
    parts = []
    if lo == 0:
        parts.append("0")
        lo = 1
    length = len(str(lo))
    cur = lo
    run: int | None = None  # first length of the current run of complete lengths
    while True:
        top = 10**length - 1
        complete = cur == 10 ** (length - 1) and (hi is None or hi >= top)
        if complete and hi is None:
            parts.append(_lengths_run(length if run is None else run, None))
            break
        if complete:
            run = length if run is None else run
        else:
            if run is not None:
                parts.append(_lengths_run(run, length - 1))
                run = None
            parts.append(_same_length(str(cur), str(top if hi is None else min(hi, top))))
        if hi is not None and hi <= top:
            if run is not None:
                parts.append(_lengths_run(run, length))
            break
        cur = top + 1
        length += 1
    return _alt(parts)


def integer_range_regex(lo: int | None, hi: int | None) -> str:
    """Canonical JSON integer numerals (``-0`` included when 0 is in range) of [lo, hi]."""
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"empty integer range [{lo}, {hi}]")
    if lo is not None and hi is not None and lo == -hi:  # symmetric: one optional sign
        return "-?" + _group(natural_range_regex(0, hi))
    if lo is None and hi is None:
        return "-?" + _group(natural_range_regex(0, None))
    parts = []
    # negative side: "-" + magnitude in [max(-hi, 0), -lo]
    if lo is None or lo <= 0:
        mag_lo = 0 if hi is None or hi >= 0 else -hi
        mag_hi = None if lo is None else -lo
        parts.append("-" + _group(natural_range_regex(mag_lo, mag_hi)))
    if hi is None or hi >= 0:
        positive = natural_range_regex(max(lo, 0) if lo is not None else 0, hi)
        if parts and positive.startswith("(?:") and _balanced_outer(positive):
            positive = positive[3:-1]  # one flat alternation with the negative side
        parts.append(positive)
    return _alt(parts)


def _group(pattern: str) -> str:
    if pattern.startswith("(?:") and _balanced_outer(pattern):
        return pattern
    if len(pattern) == 1 or (pattern.startswith("[") and pattern.endswith("]") and pattern.count("[") == 1):
        return pattern
    return "(?:" + pattern + ")"


def _balanced_outer(pattern: str) -> bool:
    """Whether the group opened at index 0 closes at the last character."""
    depth = 0
    escaped = False
    in_class = False
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and i != len(pattern) - 1:
                return False
    return True


# -- decimal bounds -----------------------------------------------------------------------

def _split(value: Decimal) -> tuple[int, str]:
    """A non-negative decimal as (integer part, fraction digits without trailing zeros)."""
    integer = int(value)  # truncates toward zero; value >= 0
    frac = value - integer
    if frac == 0:
        return integer, ""
    text = format(frac, "f")  # "0.xyz"
    digits = text.split(".", 1)[1].rstrip("0")
    return integer, digits


def _fraction(lo: str | None, lo_strict: bool, hi: str | None, hi_strict: bool, memo: dict) -> tuple[bool, str | None]:
    """Digit strings f (possibly empty) with lo (<|<=) 0.f (<|<=) hi.

    `lo`/`hi` are fraction digits without trailing zeros ("" is 0), None for no bound.
    Returns (whether the empty string qualifies, regex of the non-empty ones or None).
    """
    if lo == "" and not lo_strict:
        lo = None
    if lo is None:
        lo_strict = False
    if hi is None:
        hi_strict = False
    key = (lo, lo_strict, hi, hi_strict)
    if key in memo:
        return memo[key]
    # fixed points of the digit walk, in closed form
    if lo is None and hi is None:
        return True, f"{DIGIT}+"
    if hi == "" and (hi_strict or lo is not None):
        return False, None  # 0.f < 0, or 0 < 0.f <= 0
    if hi == "":
        return True, "0+"  # 0.f <= 0: only zeros
    if lo == "" and hi is None:
        return False, f"0*[1-9]{DIGIT}*"  # 0.f > 0
    empty_ok = (lo is None or (lo == "" and not lo_strict)) and (hi is None or hi != "" or not hi_strict)
    groups: dict[tuple, list[int]] = {}
    for d in range(10):
        if lo is None:
            nlo, nlo_s = None, False
        else:
            l0 = int(lo[0]) if lo else 0
            if d < l0:
                continue
            if d > l0:
                nlo, nlo_s = None, False
            else:
                nlo, nlo_s = lo[1:], lo_strict
                if nlo == "" and not nlo_s:
                    nlo = None
        if hi is None:
            nhi, nhi_s = None, False
        else:
            h0 = int(hi[0]) if hi else 0
            if d > h0:
                continue
            if d < h0:
                nhi, nhi_s = None, False
            else:
                nhi, nhi_s = hi[1:], hi_strict
        groups.setdefault((nlo, nlo_s, nhi, nhi_s), []).append(d)
    parts = []
    for (nlo, nlo_s, nhi, nhi_s), digits in groups.items():
        rest_empty, rest = _fraction(nlo, nlo_s, nhi, nhi_s, memo)
        if not rest_empty and rest is None:
            continue
        cls = _digits_class(digits)
        if rest is None:
            parts.append(cls)
        elif rest_empty:
            parts.append(cls + (f"{DIGIT}*" if rest == f"{DIGIT}+" else "(?:" + rest + ")?"))
        else:
            parts.append(cls + _group(rest))
    result = (empty_ok, _alt(parts) if parts else None)
    memo[key] = result
    return result


def _digits_class(digits: list[int]) -> str:
    runs = []
    start = prev = digits[0]
    for d in digits[1:]:
        if d == prev + 1:
            prev = d
            continue
        runs.append((start, prev))
        start = prev = d
    runs.append((start, prev))
    if len(runs) == 1:
        return _digit_class(*runs[0])
    return "[" + "".join(f"{a}-{b}" if a != b else str(a) for a, b in runs) + "]"


def _frac_suffix(empty_ok: bool, nonempty: str | None) -> str | None:
    """The numeral tail after the integer part: '' / '.f' (None if nothing qualifies)."""
    if nonempty is None:
        return "" if empty_ok else None
    tail = "\\." + _group(nonempty)
    return f"(?:{tail})?" if empty_ok else tail


def _nonneg_decimal(lo: Decimal | None, lo_strict: bool, hi: Decimal | None, hi_strict: bool) -> str | None:
    """Numerals (no sign) of non-negative numbers between the bounds; lo, hi >= 0 or None."""
    memo: dict = {}
    lo_i, lo_f = _split(lo) if lo is not None else (0, None)
    if lo is None:
        lo_strict = False
    hi_i, hi_f = _split(hi) if hi is not None else (None, None)
    parts = []
    if hi_i is not None and hi_i == lo_i:
        tail = _frac_suffix(*_fraction(lo_f, lo_strict, hi_f, hi_strict, memo))
        if tail is not None:
            parts.append(_group(natural_range_regex(lo_i, lo_i)) + tail)
    else:
        tail = _frac_suffix(*_fraction(lo_f, lo_strict, None, False, memo))
        if tail is not None:
            parts.append(_group(natural_range_regex(lo_i, lo_i)) + tail)
        mid_hi = None if hi_i is None else hi_i - 1
        if mid_hi is None or mid_hi >= lo_i + 1:
            parts.append(_group(natural_range_regex(lo_i + 1, mid_hi)) + f"(?:\\.{DIGIT}+)?")
        if hi_i is not None:
            tail = _frac_suffix(*_fraction(None, False, hi_f, hi_strict, memo))
            if tail is not None:
                parts.append(_group(natural_range_regex(hi_i, hi_i)) + tail)
    return _alt(parts) if parts else None


def decimal_range_regex(
    lo: Decimal | None, lo_strict: bool, hi: Decimal | None, hi_strict: bool
) -> str | None:
    """JSON numerals without exponent whose value v satisfies lo (<|<=) v (<|<=) hi.

    None when no number qualifies. Every numeral form of a qualifying value is matched
    (``1``, ``1.0``, ``1.000``, ``-0``), so the language is exact for plain notation.
    """
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_strict or hi_strict))):
        return None
    parts = []
    # negative side: v <= 0  <=>  magnitude m = -v >= 0, m in [-hi, -lo]
    if lo is None or lo < 0 or (lo == 0 and not lo_strict):
        if hi is None or hi > 0 or (hi == 0 and not hi_strict):
            m_lo, m_lo_strict = Decimal(0), False
        else:
            m_lo, m_lo_strict = -hi, hi_strict
        m_hi, m_hi_strict = (None, False) if lo is None else (-lo, lo_strict)
        neg = _nonneg_decimal(m_lo, m_lo_strict, m_hi, m_hi_strict)
        if neg is not None:
            parts.append("-" + _group(neg))
    if hi is None or hi > 0 or (hi == 0 and not hi_strict):
        if lo is None or lo < 0 or (lo == 0 and not lo_strict):
            p_lo, p_lo_strict = Decimal(0), False
        else:
            p_lo, p_lo_strict = lo, lo_strict
        pos = _nonneg_decimal(p_lo, p_lo_strict, hi, hi_strict)
        if pos is not None:
            parts.append(pos)
    return _alt(parts) if parts else None


def integer_bounds(lo: Decimal | None, lo_strict: bool, hi: Decimal | None, hi_strict: bool) -> tuple[int | None, int | None]:
    """The tightest integer bounds [a, b] equivalent to the decimal bounds."""
    import math

    a = b = None
    if lo is not None:
        if lo_strict and lo == math.floor(lo):
            a = int(lo) + 1
        else:
            a = math.ceil(lo)
    if hi is not None:
        if hi_strict and hi == math.floor(hi):
            b = int(hi) - 1
        else:
            b = math.floor(hi)
    return a, b


FRACTION_TAIL = f"\\.{DIGIT}*[1-9]{DIGIT}*"


def fraction_range_regex(
    lo: Decimal | None, lo_strict: bool, hi: Decimal | None, hi_strict: bool
) -> str | None:
    """Like `decimal_range_regex`, but only numerals of non-integer values (``1.5``, not ``2.0``).

    The range splits into whole unit intervals (n, n+1), written as the numeral of n (or of
    -(n+1) with a minus sign) followed by a fraction with a non-zero digit, plus at most two
    partial intervals at the ends, which hold no integer and so are plain decimal ranges.
    """
    import math

    if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_strict or hi_strict))):
        return None
    a = None if lo is None else math.ceil(lo)  # smallest integer >= lo
    b = None if hi is None else math.floor(hi)  # largest integer <= hi
    if a is not None and b is not None and a > b:
        return decimal_range_regex(lo, lo_strict, hi, hi_strict)  # no integer inside
    parts = []
    if lo is not None and lo < a:
        edge = decimal_range_regex(lo, lo_strict, Decimal(a), True)
        if edge is not None:
            parts.append(edge)
    # whole units (n, n+1) for a <= n <= b-1
    top = None if b is None else b - 1
    if top is None or top >= max(a if a is not None else 0, 0):
        parts.append(_group(natural_range_regex(max(a, 0) if a is not None else 0, top)) + FRACTION_TAIL)
    if (a is None or a <= -1) and (top is None or (a is None or a <= top)):
        neg_top = -1 if top is None else min(top, -1)
        if a is None or a <= neg_top:
            # n in [a, neg_top]  <=>  m = -(n+1) in [-(neg_top+1), -(a+1)]
            m_lo, m_hi = -(neg_top + 1), (None if a is None else -(a + 1))
            parts.append("-" + _group(natural_range_regex(m_lo, m_hi)) + FRACTION_TAIL)
    if hi is not None and hi > b:
        edge = decimal_range_regex(Decimal(b), True, hi, hi_strict)
        if edge is not None:
            parts.append(edge)
    return _alt(parts) if parts else None
