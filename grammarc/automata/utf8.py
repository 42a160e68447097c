"""UTF-8 encoding of code point ranges as sequences of byte ranges.

Automata run over bytes, but regex character classes are sets of code points. A range of
code points [lo, hi] is split into a few *byte-range sequences*: a list of (lo, hi) byte
ranges, one per byte of the encoding, such that the set of byte strings the sequence
matches is exactly the UTF-8 encoding of part of the range. Together the sequences cover
the whole range, without overlap. Surrogates (U+D800-U+DFFF) have no UTF-8 encoding and
are always excluded. This is the same decomposition as regex-automata's ``utf8`` module.
"""

from __future__ import annotations

from functools import lru_cache

MAX_CODE_POINT = 0x10FFFF
SURROGATE_LO = 0xD800
SURROGATE_HI = 0xDFFF

ByteRange = tuple[int, int]
Sequence_ = tuple[ByteRange, ...]

# Largest code point encodable in 1, 2, 3 bytes.
_LENGTH_LIMITS = (0x7F, 0x7FF, 0xFFFF)


def encode(cp: int) -> bytes:
    """The UTF-8 encoding of one code point (surrogates encode as their 3-byte form)."""
    if cp < 0x80:
        return bytes((cp,))
    if cp < 0x800:
        return bytes((0xC0 | (cp >> 6), 0x80 | (cp & 0x3F)))
    if cp < 0x10000:
        return bytes((0xE0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3F), 0x80 | (cp & 0x3F)))
    return bytes(
        (
            0xF0 | (cp >> 18),
            0x80 | ((cp >> 12) & 0x3F),
            0x80 | ((cp >> 6) & 0x3F),
            0x80 | (cp & 0x3F),
        )
    )


def range_sequences(lo: int, hi: int) -> list[Sequence_]:
    """Byte-range sequences whose union is the UTF-8 encoding of code points [lo, hi].

    Sequences are returned in ascending code point order and do not overlap.
    """
    out: list[Sequence_] = []
    stack = [(max(0, lo), min(hi, MAX_CODE_POINT))]
    while stack:
        lo, hi = stack.pop()
        if lo > hi:
            continue
        if lo <= SURROGATE_HI and hi >= SURROGATE_LO:
            # Cut the surrogate block out; push the upper part first so the lower pops first.
            stack.append((SURROGATE_HI + 1, hi))
            stack.append((lo, SURROGATE_LO - 1))
            continue
        split = False
        for limit in _LENGTH_LIMITS:
            if lo <= limit < hi:
                stack.append((limit + 1, hi))
                stack.append((lo, limit))
                split = True
                break
        if split:
            continue
        if hi <= 0x7F:
            out.append(((lo, hi),))
            continue
        for i in range(1, 4):
            mask = (1 << (6 * i)) - 1
            if lo & ~mask != hi & ~mask:
                if lo & mask != 0:
                    stack.append(((lo | mask) + 1, hi))
                    stack.append((lo, lo | mask))
                    split = True
                    break
                if hi & mask != mask:
                    stack.append((hi & ~mask, hi))
                    stack.append((lo, (hi & ~mask) - 1))
                    split = True
                    break
        if split:
            continue
        a, b = encode(lo), encode(hi)
        out.append(tuple(zip(a, b)))
    return out


@lru_cache(maxsize=4096)
def ranges_sequences(ranges: tuple[tuple[int, int], ...]) -> tuple[Sequence_, ...]:
    """Byte-range sequences for a union of disjoint code point ranges."""
    result: list[Sequence_] = []
    for lo, hi in ranges:
        result.extend(range_sequences(lo, hi))
    return tuple(result)


def is_continuation(byte: int) -> bool:
    """True for 0x80-0xBF, the bytes that never start a UTF-8 character."""
    return 0x80 <= byte <= 0xBF
