"""The suffixes of a big token tree level, read once per process for every level over them.

A token tree's root level holds the token suffixes that start where a terminal may end
strictly inside a token: its scan's splits (`grammarc.tokens.index`). The big ones are a
few sets whatever the terminal and grammar: every space-led token after its space (where
``ws? "," ws?``, ``ws? ":" ws?`` and ``ws?`` end), every token holding a quote after its
first quote (where any string body ends). On 60 never-seen MaskBench schemas, 386 big root
levels were 9 distinct sets, two of them 370 times; each level read its set anew (next
bytes, a counting sort by next byte, a gather per terminal) and made all of its 20-50
terminals' parts at once, because its arrays were too big to keep for the parts never read
(58% of them were not).

`Suffixes` holds one such set for every level over it. Equal scan splits are interned
(`shared`); the buckets by next byte are made once; the suffixes that each set of opening
bytes takes are gathered once (an object's keys all open at the quote); and a terminal's
part is walked once per terminal automaton (`part`: shared by every grammar whose
terminal is the same automaton, such as JSON's separators and values). Levels over a
shared `Suffixes` make their parts one at a time, when read, as small levels do; every
other level has a `Suffixes` of its own (its next bytes and buckets, made once).
"""

from __future__ import annotations

import threading
import weakref
from typing import Callable

import numpy as np

from grammarc.tokens import _scan
from grammarc.tokens.rows import TokenBytes, ranges
from grammarc.tokens.scan_cache import Scan

__all__ = ["ByByte", "Suffixes", "byte_bits", "shared"]


class Suffixes:
    """Token suffixes ``(rows[i], pos[i])`` (read-only int32 arrays, each suffix once, every
    `pos` strictly inside its token) with what levels over them read: next bytes, buckets,
    the suffixes each set of opening bytes takes, and parts by terminal automaton (`part`:
    only for shared ones, whose levels read it). Made on first use and published once
    (threads that race compute equal values twice; one is kept)."""

    __slots__ = ("rows", "pos", "_tokens", "_next", "_byte_set", "_by_byte", "_taken", "_parts", "__weakref__")

    def __init__(self, tokens: TokenBytes, rows: np.ndarray, pos: np.ndarray, byte_set: int | None = None):
        """`byte_set`: what `byte_set` answers, when the walk that found the suffixes gave it."""
        self.rows, self.pos = rows, pos
        self._tokens = tokens
        self._next: tuple[np.ndarray, np.ndarray] | None = None
        self._byte_set = byte_set
        self._by_byte: ByByte | None = None
        self._taken: dict[bytes, np.ndarray] = {}
        # terminal automaton -> its part (tokens, split rows, split positions): weakly, so a
        # grammar's own terminals (its keys) go with it; made on the first part (shared only)
        self._parts: weakref.WeakKeyDictionary | None = None

    def next_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """(each suffix's next byte, how many suffixes each byte value starts: int64 [256])."""
        found = self._next
        if found is None:
            next_byte, counts, present = _scan.next_bytes(self._tokens.native, self.rows, self.pos)
            # one assignment publishes each (racing threads make equal values; one is kept)
            self._byte_set = present
            found = self._next = np.frombuffer(next_byte, np.uint8), np.frombuffer(counts, np.int64)
        return found

    def byte_set(self) -> int:
        """The byte values some suffix starts with, as an int (bit b = byte b): what
        `TokenIndex._starting` tests each following terminal's first bytes against."""
        found = self._byte_set
        if found is None:
            self.next_bytes()
            found = self._byte_set
        return found

    def taking(self, opens: np.ndarray) -> np.ndarray:
        """The positions of the suffixes whose next byte is one of `opens` (bool [256]),
        ascending (gathered once per set of bytes)."""
        key = opens.tobytes()
        found = self._taken.get(key)
        if found is None:
            by_byte = self._by_byte
            if by_byte is None:
                by_byte = ByByte(*self.next_bytes())
                with _lock:
                    by_byte = self._by_byte = self._by_byte or by_byte
            found = by_byte.taking(opens)
            with _lock:
                found = self._taken.setdefault(key, found)
        return found

    def part(self, dfa: object, make: Callable[[], tuple]) -> tuple:
        """The part of the terminal whose automaton is `dfa` over these suffixes, made by
        `make` the first time (the same automaton walks the same suffixes alike)."""
        with _lock:
            if self._parts is None:
                self._parts = weakref.WeakKeyDictionary()
            found = self._parts.get(dfa)
        if found is None:
            found = make()
            with _lock:
                found = self._parts.setdefault(dfa, found)
        return found


def byte_bits(flags: np.ndarray) -> int:
    """bool [256] as an int (bit b = flags[b]): a set of byte values that one AND tests."""
    return int.from_bytes(np.packbits(flags, bitorder="little").tobytes(), "little")


_lock = threading.Lock()
# scan -> the interned suffixes of its splits (as long as the scan lives)
_by_scan: "weakref.WeakKeyDictionary[Scan, Suffixes]" = weakref.WeakKeyDictionary()
# (vocabulary, size, sampled content) -> suffixes, checked equal on a hit
_interned: "weakref.WeakValueDictionary[tuple, Suffixes]" = weakref.WeakValueDictionary()


def shared(scan: Scan, tokens: TokenBytes) -> Suffixes:
    """The `Suffixes` of `scan`'s splits, the same object for every scan of the process with
    equal splits over the same vocabulary rows (a string body's and a key set's, say)."""
    found = _by_scan.get(scan)
    if found is not None:
        return found
    rows, pos = scan.split_rows, scan.split_pos
    step = max(1, len(rows) // 256)
    key = (id(tokens), len(rows), rows[::step].tobytes(), pos[::step].tobytes())
    with _lock:
        found = _by_scan.get(scan)
        if found is None:
            seen = _interned.get(key)
            if seen is not None and seen._tokens is tokens and np.array_equal(seen.rows, rows) \
                    and np.array_equal(seen.pos, pos):
                found = seen
            else:  # new, or a sample's collision: not interned
                found = Suffixes(tokens, rows, pos)
                if seen is None:
                    _interned[key] = found
            _by_scan[scan] = found
    return found


class ByByte:
    """The positions of a level's suffixes grouped by their next byte, so the suffixes that a
    terminal can take (those whose next byte opens it) are gathered bucket by bucket. A
    level after whitespace holds every space-led token (60k on Llama-3) and may branch on
    dozens of terminals (the keys of an object), each opening with one or two bytes: a
    boolean test of every suffix per terminal costs more than the scan that follows."""

    __slots__ = ("_next_byte", "_order", "_bounds")

    def __init__(self, next_byte: np.ndarray, counts: np.ndarray | None = None):
        """`counts`: how many times each byte value is in `next_byte` (counted here if None)."""
        counts = np.bincount(next_byte, minlength=256).astype(np.int64) if counts is None else counts
        self._next_byte = next_byte
        self._order = np.frombuffer(_scan.order_by_byte(next_byte, counts), dtype=np.int32)
        self._bounds = np.zeros(257, dtype=np.int64)
        np.cumsum(counts, out=self._bounds[1:])

    def taking(self, opens: np.ndarray) -> np.ndarray:
        """The positions whose next byte is one of `opens` (bool [256]), ascending: the same
        suffixes, in the same order, as the boolean mask ``opens[next_byte]`` selects."""
        byte = np.flatnonzero(opens)
        if (self._bounds[byte + 1] - self._bounds[byte]).sum() * 8 > len(self._next_byte):
            return np.flatnonzero(opens[self._next_byte])  # most of the level: one pass is cheaper
        return self.gathered(byte)

    def gathered(self, byte: np.ndarray) -> np.ndarray:
        """The positions whose next byte is in `byte` (ascending byte values), ascending."""
        return np.sort(self._order[ranges(self._bounds[byte], self._bounds[byte + 1])])

