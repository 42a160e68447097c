"""A compact transition table for big, sparse DFAs: O(transitions) memory, not O(256 · states).

A dense table spends 256 cells on every state. A literal of 1 MB is a chain of a million
states with one live byte each, a trie of 100k enum values is mostly such chains: dense, they
take gigabytes. `CombTable` stores each state's live bytes, from its lowest to its highest,
in one shared array at a per-state offset (row displacement, the "comb" of parser tables):
``next[base[q] + b]`` is the target when ``check[base[q] + b] == q``, else there is no
transition. Lookups stay O(1), scalar and vectorized, and the table answers the indexing
that code written for a dense ``int32 [n, 256]`` array does (``t[q, b]``, ``t[q]``,
``t[states, bytes]``), so its users need not know which one they hold.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CombTable"]

_SCALARS = (int, np.integer)


class CombTable:
    """Row-displaced DFA transitions; read-only, built from a list of edges."""

    __slots__ = ("base", "check", "next", "n")
    dtype = np.dtype(np.int32)
    ndim = 2

    def __init__(self, base: np.ndarray, check: np.ndarray, nxt: np.ndarray, n: int):
        self.base, self.check, self.next, self.n = base, check, nxt, n

    @classmethod
    def from_edges(cls, n: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray) -> "CombTable":
        """The table of the edges ``src --byte--> dst`` (each (src, byte) at most once)."""
        src = np.asarray(src, dtype=np.int64)
        byte = np.asarray(byte, dtype=np.int64)
        lo = np.full(n, 256, dtype=np.int64)
        hi = np.full(n, -1, dtype=np.int64)
        np.minimum.at(lo, src, byte)
        np.maximum.at(hi, src, byte)
        span = np.where(hi >= 0, hi - lo + 1, 0)
        starts = 256 + np.cumsum(span) - span  # a row of padding before and after: no index escapes
        base = np.where(hi >= 0, starts - lo, 0)
        size = 512 + int(span.sum())
        check = np.full(size, -1, dtype=np.int32)
        nxt = np.full(size, -1, dtype=np.int32)
        pos = base[src] + byte
        check[pos] = src
        nxt[pos] = dst
        for array in (base, check, nxt):
            array.flags.writeable = False
        return cls(base, check, nxt, n)

    @classmethod
    def from_dense(cls, trans: np.ndarray) -> "CombTable":
        src, byte = np.nonzero(trans >= 0)
        return cls.from_edges(trans.shape[0], src, byte, trans[src, byte])

    def edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src, byte, dst) of every transition, by state, then byte (as `np.nonzero` of a dense table)."""
        pos = np.flatnonzero(self.check >= 0)
        src = self.check[pos].astype(np.int64)
        return src, pos - self.base[src], self.next[pos].astype(np.int64)

    # -- the dense table's interface ---------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, 256)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, key):
        if isinstance(key, tuple):
            state, byte = key
            if isinstance(state, _SCALARS) and isinstance(byte, _SCALARS):  # the hot path: one step
                i = int(self.base[state]) + int(byte)
                return int(self.next[i]) if self.check[i] == state else -1
            return self._lookup(np.asarray(state), np.asarray(byte))
        if np.ndim(key) == 0:  # a state's row: its 256 cells lie side by side (the padding keeps them in)
            state = int(key)
            start = int(self.base[state])
            if not 0 <= start <= len(self.check) - 256:
                raise IndexError(f"state {state}'s row lies outside the table")
            cells = slice(start, start + 256)
            return np.where(self.check[cells] == state, self.next[cells], -1).astype(np.int32, copy=False)
        return np.asarray(self)[key]

    def _lookup(self, states: np.ndarray, bytes_: np.ndarray) -> np.ndarray:
        states, bytes_ = np.broadcast_arrays(states, bytes_)
        i = self.base[states] + bytes_
        return np.where(self.check[i] == states, self.next[i], -1).astype(np.int32)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        dense = np.full((self.n, 256), -1, dtype=np.int32)
        src, byte, dst = self.edges()
        dense[src, byte] = dst
        return dense if dtype is None else dense.astype(dtype)

    def astype(self, dtype) -> np.ndarray:
        return np.asarray(self).astype(dtype)

    @property
    def nbytes(self) -> int:
        return self.base.nbytes + self.check.nbytes + self.next.nbytes

    def __repr__(self) -> str:
        return f"CombTable(n={self.n}, cells={len(self.check)})"
