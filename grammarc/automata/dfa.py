"""The DFA artifact and its normal form: trimmed, minimized, canonically numbered.

Every DFA returned by a public function of `grammarc.automata` is

* minimized and trimmed: every state can reach an accepting state, so ``state != -1``
  after running a prefix means "this prefix can still be completed" (a viable prefix);
* canonical: states are numbered in BFS order from the start, bytes ascending, so equal
  languages give identical arrays and the same `DFA.key`;
* read-only (numpy arrays with ``writeable=False``), so it can be shared and cached.

The empty language is one non-accepting state without transitions. Constructions live in
`nfa` (regexes, determinization), `operations` (the regular algebra) and `dialect` (the
grammar dialect's special terminals); they all end in `_finalize` here, but for the JSON
string tables of `json_strings` that the compiled core builds minimal and numbers itself.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from grammarc.automata import _core
from grammarc.automata.comb import CombTable
from grammarc.errors import StateBudgetExceeded

DEFAULT_MAX_STATES = 10_000

__all__ = ["DEFAULT_MAX_STATES", "DFA", "byte_classes", "from_table"]


# ----------------------------------------------------------------------------- DFA


@dataclass(frozen=True, eq=False)
class DFA:
    """Byte-level DFA. State 0 is the start; ``trans[s, b] == -1`` means no transition.

    `trans` is a dense ``int32 [n_states, 256]`` array, or for big sparse automata (long
    literals, tries of many literals) a `CombTable`, which answers the same indexing in
    O(transitions) memory. Equal languages give equal keys whichever one a DFA holds.
    """

    trans: np.ndarray | CombTable  # int32 [n_states, 256]
    accept: np.ndarray  # bool [n_states]

    @cached_property
    def n_states(self) -> int:
        """Remembered: the lowering asks it of every part it sizes up for a merge, thousands of
        times per grammar (a property's call each time)."""
        return int(self.trans.shape[0])

    @cached_property
    def is_empty(self) -> bool:
        """True for the empty language (trimmed DFAs: start state not accepting, no edges).
        Remembered: every grammar that holds the DFA asks it of each of its terminals."""
        if bool(self.accept[0]):
            return False
        trans = self.trans
        if isinstance(trans, np.ndarray) and trans.dtype == np.int32:  # the row's bytes: a NumPy reduction was ~3 us
            return trans[0].tobytes() == _NO_EDGES
        return not bool(trans[0].max() >= 0)

    @property
    def accepts_empty(self) -> bool:
        return bool(self.accept[0])

    @cached_property
    def key(self) -> str:
        """A digest of the canonical code (`suffix.suffix_key` of the start state): equal
        languages give equal keys, whatever the storage. Built in C from a dense table; from
        the edges of a compact one (too big for Python lists of runs), read in state order,
        which for a canonical DFA is the code's breadth-first order."""
        if self.dense_table is not None:
            code = _core.suffix_code(self.dense_table, self.accept.view(np.uint8), 0)
        else:
            code = _code_of_edges(self.n_states, *self._edges(), self.accept)
        return _key_of(code)

    def _edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src, byte, dst) of every transition, by state then byte, whatever the storage."""
        if isinstance(self.trans, CombTable):
            return self.trans.edges()
        src, byte = np.nonzero(self.trans >= 0)
        return src, byte, self.trans[src, byte]

    def step(self, state: int, byte: int) -> int:
        return int(self.trans[state, byte])

    def run(self, data: bytes, state: int = 0) -> int:
        """The state after reading `data` from `state`, or -1 once no transition exists."""
        trans = self.trans
        for b in data:
            state = trans[state, b]
            if state < 0:
                return -1
        return int(state)

    def walk(self, data: bytes, start: int = 0, state: int = 0) -> tuple[int, tuple[int, ...]]:
        """Read ``data[start:]`` from `state`: (the state after it, or -1 once a byte has no
        transition; the positions p, ``start < p <= len(data)``, after which the state
        accepts). In the compiled core: one call per token and lexer item."""
        return self._walker(state, data, start)

    @cached_property
    def _walker(self) -> "_core.Walker":
        """This DFA's tables held and checked once by the compiled core (the engine walks
        every token through every lexer item's DFA)."""
        trans = self.trans
        if isinstance(trans, CombTable):
            return _core.Walker(None, trans.base, trans.check, trans.next, self.accept)
        return _core.Walker(trans, b"", b"", b"", self.accept)

    def matches(self, data: bytes) -> bool:
        state = self.run(data)
        return state >= 0 and bool(self.accept[state])

    def live_bytes(self, state: int) -> list[int]:
        return np.flatnonzero(self.trans[state] >= 0).tolist()

    def shortest_match(self, state: int = 0) -> bytes | None:
        """A shortest byte string leading from `state` to acceptance (None if empty)."""
        parent: dict[int, tuple[int, int]] = {state: (-1, -1)}
        queue = [state]
        for s in queue:
            if self.accept[s]:
                out = bytearray()
                while parent[s][0] >= 0:
                    s, b = parent[s]
                    out.append(b)
                return bytes(reversed(out))
            row = self.trans[s]
            for b in np.flatnonzero(row >= 0).tolist():
                t = int(row[b])
                if t not in parent:
                    parent[t] = (s, b)
                    queue.append(t)
        return None

    @cached_property
    def accepting(self) -> list[int]:
        """The accepting states, ascending."""
        return np.flatnonzero(self.accept).tolist()

    @property
    def dense_table(self) -> np.ndarray | None:
        """`trans` when the C core can read it as it is (a C-contiguous ``int32 [n, 256]``
        array), else None (a compact table, or a dense one in another layout)."""
        trans = self.trans
        if isinstance(trans, np.ndarray) and trans.dtype == np.int32 and trans.flags.c_contiguous:
            return trans
        return None

    @cached_property
    def byte_runs(self) -> bytes:
        """A run number per byte (256 bytes, ascending from 0): neighbouring bytes share one
        when every state treats them alike (same target, or none), so a walk over pairs of
        states may read one byte per run (`grammarc.tokens._scan.agree_bytes`). Maximal
        runs, not classes: bytes far apart that behave alike are in different runs."""
        if not isinstance(self.trans, CombTable):  # in the core: a new automaton's first store name asks
            return _core.byte_runs(np.ascontiguousarray(self.trans, dtype=np.int32))  # (NumPy's took ~30-60 us)
        cut = np.zeros(256, dtype=bool)  # cut[b]: some state treats b and b - 1 apart
        src, byte, dst = self._edges()
        if len(src):
            goes_on = (src[1:] == src[:-1]) & (byte[1:] == byte[:-1] + 1) & (dst[1:] == dst[:-1])
            first = np.ones(len(src), dtype=bool)  # an edge that does not continue the one before
            first[1:] = ~goes_on
            last = np.ones(len(src), dtype=bool)  # an edge that the next one does not continue
            last[:-1] = ~goes_on
            cut[byte[first]] = True
            cut[byte[last][byte[last] < 255] + 1] = True
        cut[0] = False
        return np.cumsum(cut).astype(np.uint8).tobytes()

    @cached_property
    def _run_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """`_runs` of a dense table as arrays (ptr int64 [n + 1], runs int32 [m, 3] of lo, hi,
        target; state q's runs[ptr[q]:ptr[q + 1]]): what an NFA embeds it with (nfa._NFA)."""
        ptr, runs = _core.run_arrays(self.dense_table)
        return np.frombuffer(ptr, dtype=np.int64), np.frombuffer(runs, dtype=np.int32).reshape(-1, 3)

    @cached_property
    def _runs(self) -> list[list[tuple[int, int, int]]]:
        """Per state, maximal byte runs (lo, hi, target) with the same live target."""
        if isinstance(self.trans, np.ndarray) and self.trans.dtype == np.int32:
            return _core.runs(np.ascontiguousarray(self.trans))
        src, byte, dst = self._edges()
        out: list[list[tuple[int, int, int]]] = [[] for _ in range(self.n_states)]
        if not len(src):
            return out
        # a run starts at an edge that does not continue the previous one
        starts = np.ones(len(src), dtype=bool)
        starts[1:] = (src[1:] != src[:-1]) | (byte[1:] != byte[:-1] + 1) | (dst[1:] != dst[:-1])
        first = np.flatnonzero(starts)
        last = np.append(first[1:], len(src)) - 1
        for row, lo, hi, target in zip(src[first].tolist(), byte[first].tolist(), byte[last].tolist(),
                                       dst[first].tolist()):
            out[row].append((lo, hi, target))
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DFA) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"DFA(n_states={self.n_states}, key={self.key[:12]})"


def _key_of(code: bytes) -> str:
    """`DFA.key` from the canonical code of state 0."""
    return hashlib.blake2b(code, digest_size=20).hexdigest()


def _code_of_edges(n: int, src: np.ndarray, byte: np.ndarray, dst: np.ndarray, accept: np.ndarray) -> bytes:
    """`_core.suffix_code` of state 0 of a canonical DFA given by its edges: per state its
    flag and run count (2 bytes), then each run as lo, hi and its target (4 bytes, LE)."""
    order = np.lexsort((byte, src))
    src, byte, dst = src[order].astype(np.int64), byte[order].astype(np.int64), dst[order].astype(np.int64)
    starts = np.ones(len(src), dtype=bool)
    starts[1:] = (src[1:] != src[:-1]) | (byte[1:] != byte[:-1] + 1) | (dst[1:] != dst[:-1])
    first = np.flatnonzero(starts)
    last = np.append(first[1:], len(src)) - 1
    run_src, lo, hi, target = src[first], byte[first], byte[last], dst[first]
    counts = np.bincount(run_src, minlength=n)
    out = np.empty(3 * n + 6 * len(first), dtype=np.uint8)
    head = 3 * np.arange(n) + 6 * (np.cumsum(counts) - counts)
    out[head] = np.where(accept, ord("A"), ord("N"))
    out[head + 1] = counts & 0xFF
    out[head + 2] = counts >> 8
    at = 3 * (run_src + 1) + 6 * np.arange(len(first))
    out[at] = lo
    out[at + 1] = hi
    for k in range(4):
        out[at + 2 + k] = (target >> (8 * k)) & 0xFF
    return out.tobytes()


def _make(trans: np.ndarray, accept: np.ndarray, code: bytes | None = None) -> DFA:
    """A DFA of a canonical table; `code`, its canonical code where the construction wrote it
    on the way (the compiled core does), gives `DFA.key` without reading the table back."""
    trans = np.ascontiguousarray(trans, dtype=np.int32)
    accept = np.ascontiguousarray(accept, dtype=bool)
    trans.flags.writeable = False
    accept.flags.writeable = False
    dfa = DFA(trans, accept)
    if code is not None:
        object.__setattr__(dfa, "key", _key_of(code))  # where the cached property keeps it
    return dfa


_NO_EDGES = np.full(256, -1, dtype=np.int32).tobytes()  # a dense row without a transition
COMPACT_FROM = 4096  # states: a DFA built from edges with this many or more is stored compactly (4 MiB dense)


def _make_edges(n: int, src, byte, dst, accept: np.ndarray) -> DFA:
    """A DFA from its edges (already canonical), compact when it is big."""
    if n < COMPACT_FROM:
        trans = np.full((n, 256), -1, dtype=np.int32)
        trans[np.asarray(src, dtype=np.int64), np.asarray(byte, dtype=np.int64)] = dst
        return _make(trans, accept)
    accept = np.ascontiguousarray(accept, dtype=bool)
    accept.flags.writeable = False
    return DFA(CombTable.from_edges(n, src, byte, dst), accept)


@lru_cache(maxsize=1)
def _empty() -> DFA:
    return _make(np.full((1, 256), -1, dtype=np.int32), np.zeros(1, dtype=bool))


def _check_budget(max_states: int) -> None:
    if not isinstance(max_states, int) or max_states < 1:
        raise ValueError("max_states must be a positive integer")


# The budget bounds the minimized automaton that is kept. The unminimized one a
# construction walks first (subsets, products, tries) may be bigger; it is cut off at
# this many times the budget, so time and memory stay bounded before minimization too.
UNMINIMIZED_FACTOR = 4


def _unminimized_cap(max_states: int) -> int:
    """States a construction may build before minimizing, for a budget of `max_states`."""
    return UNMINIMIZED_FACTOR * max_states


def _budget_error(what: str, max_states: int, states: int | None = None) -> StateBudgetExceeded:
    """The error for a budget exceeded: by the minimized automaton, of `states` states, or
    (``states=None``) by the construction before minimization, past `_unminimized_cap`."""
    if states is not None:
        size = (f"needs {states} automaton states once minimized, more than the budget of {max_states} "
                f"automaton states (max_states={max_states})")
    else:
        size = (f"is too large: building it took more than {_unminimized_cap(max_states)} automaton states "
                f"before minimization ({UNMINIMIZED_FACTOR} times max_states={max_states})")
    return StateBudgetExceeded(f"{what} {size}; simplify it or raise the budget")


def _within_budget(dfa: DFA, what: str, max_states: int) -> DFA:
    """`dfa` (minimized) if it keeps within the budget; else the budget error with its size."""
    if dfa.n_states > max_states:
        raise _budget_error(what, max_states, dfa.n_states)
    return dfa


# ---------------------------------------------------------------- normalization


def byte_classes(trans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(table int32 [n, k], byte -> class uint8 [256]) with ``table[:, b2c] == trans``:
    bytes whose columns are equal share a class, numbered by their first byte. In the
    compiled core (`_core.byte_classes`); its oracle is tests/automata_reference.py."""
    trans = np.ascontiguousarray(trans, dtype=np.int32)
    table, b2c, k = _core.byte_classes(trans)
    return np.frombuffer(table, dtype=np.int32).reshape(len(trans), k), np.frombuffer(b2c, dtype=np.uint8)


def _finalize(trans_k: np.ndarray, accept: np.ndarray, b2c: np.ndarray) -> DFA:
    """Trim, minimize and canonically renumber a DFA given over byte classes.

    `trans_k` is [n, k] (-1 = dead), `b2c` maps each byte to its class; state 0 is start.
    The work (coreachability, minimization, breadth-first numbering with the classes taken
    in the order of their smallest byte, expansion to 256 columns, and the canonical code
    that `DFA.key` digests, read off the class table) is done by the compiled core; the
    oracle it is tested against is tests/automata_reference.py.
    """
    trans_k = np.ascontiguousarray(trans_k, dtype=np.int64)
    done = _core.finalize(trans_k, trans_k.shape[1], np.ascontiguousarray(accept, dtype=bool),
                          np.ascontiguousarray(b2c, dtype=np.int64))
    if done is None:
        return _empty()
    trans, accept, code = done
    return _make(np.frombuffer(trans, dtype=np.int32).reshape(-1, 256), np.frombuffer(accept, dtype=bool), code)


def from_table(trans: np.ndarray, accept: np.ndarray) -> DFA:
    """Normalize any byte table [n, 256] (-1 = dead, state 0 = start) into a canonical DFA."""
    trans = np.asarray(trans, dtype=np.int64)
    if trans.ndim != 2 or trans.shape[1] != 256 or trans.shape[0] != len(accept):
        raise ValueError("from_table needs trans [n, 256] and accept [n]")
    if trans.size and (trans.max() >= len(trans) or trans.min() < -1):
        raise ValueError("from_table: a target out of range (targets are states, or -1)")
    tk, b2c = byte_classes(trans)
    return _finalize(tk, np.asarray(accept, dtype=bool), b2c)

