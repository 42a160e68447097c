"""JSON string literals as byte DFAs: every spelling of some decoded texts.

A JSON document spells one string character in several ways: raw (``é``), as a short escape
(``\\n``, ``\\/``), as ``\\u00e9`` or ``\\u00E9``, and above U+FFFF as a surrogate pair. A
language of *decoded* texts (a DFA over code points) therefore stands for a much larger
language of literals. `json_string` builds that byte DFA directly, in the compiled core
(``_json.c``), in time linear in its size: the states reading part of a character (some hex
digits, a UTF-8 lead byte) and the escape states are shared wherever what each value leads
to is the same, so the table comes out minimal when the character automaton is. Then it
needs no minimization, only numbering (in the core too): the keys of an object and the
strings of bounded length, whose character automata are minimal by construction, take
that route; any other character automaton is minimized as usual.

The JSON Schema front end's keys "other than these names" (``additionalProperties`` next
to ``properties``) are the main use, through the grammar dialect's
``json_string_except!`` (`json_string_except`); its strings of bounded length
(``"(?:char){m,n}"``: ``maxLength``, ``minLength``) are the other, which `from_regex`
recognizes and builds here (`bounded_string`). Lone surrogate escapes (``\\ud800`` not
followed by a low surrogate) decode to no character and are never accepted, as everywhere
in grammarc's JSON languages.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import chain

import numpy as np

from grammarc.automata import _core
from grammarc.automata.codepoints import CharDFA
from grammarc.automata.dfa import DFA, _finalize, _make, byte_classes
from grammarc.automata.regex import normalize
from grammarc.errors import StateBudgetExceeded

__all__ = ["bounded_string", "excluding", "json_string", "json_string_except"]

MAX_CODE_POINT = 0x10FFFF

# States the table may hold before minimization (1 KiB each, so 64 MiB): about ten per
# character of the words, ~6,500 characters; past it, StateBudgetExceeded (the JSON Schema
# front end writes rules instead from 4,096 characters on).
MAX_STATES = 1 << 16

# dtypes passed by position: np.frombuffer's keyword parsing cost more than the rest of it
_INT32, _INT64, _UINT8, _BOOL = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint8), np.dtype(bool)


def json_string(chars: CharDFA) -> DFA:
    """The JSON string literals, quotes included, whose decoded text `chars` accepts."""
    runs = [sorted((lo, hi, target) for ranges, target in edges for lo, hi in ranges) for edges in chars.edges]
    return _from_runs(runs, list(chars.accept), minimal=False)


def json_string_except(words: tuple[str, ...]) -> DFA:
    """The JSON string literals whose decoded text is none of `words` (a word no text can
    hold, with a lone surrogate, excludes nothing)."""
    return _except(tuple(sorted(set(words))))


def bounded_string(low: int, high: int | None) -> DFA:
    """The JSON strings of `low` to `high` characters (None: no upper bound), quotes
    included, in every spelling: the strings of ``minLength``/``maxLength``. Built from a
    character automaton of high + 1 states, it is two to five times faster than the regex
    ``"(?:char){m,n}"`` through n copies of a character's NFA (n = 100: ~12-20 -> ~3-4 ms;
    n = 255: ~45-65 -> ~21-25 ms, most of it minimizing 5,103 states; since the table comes
    out minimal and is only numbered, about a quarter of that), which
    `grammarc.automata.nfa.from_regex` therefore builds here; the same minimal DFA."""
    top = low if high is None else high  # character states 0..top; without a bound the last loops
    runs = [[(0, MAX_CODE_POINT, k + 1)] for k in range(top)] + [[(0, MAX_CODE_POINT, top)] if high is None else []]
    return _from_runs(runs, [k >= low for k in range(top + 1)], minimal=True)  # each state: its own lengths left


def excluding(words) -> CharDFA:
    """The decoded texts that are none of `words`, over characters: the trie of
    `_core.except_runs`, numbered breadth first, each target when its smallest character
    meets it (as `code_point_dfa` numbers a byte DFA's), so it is the minimal automaton,
    canonically numbered. (The JSON Schema front end renders it as rules where it is too
    large for `json_string_except`.)"""
    ptr, lo, hi, dst, accept = _except_runs(tuple(sorted(set(words))))
    ptr, lo, hi, dst = ptr.tolist(), lo.tolist(), hi.tolist(), dst.tolist()
    ids = {0: 0}
    order = [0]
    edges = []
    for q in order:  # grows while iterating
        by_target: dict[int, list[tuple[int, int]]] = {}
        for i in range(ptr[q], ptr[q + 1]):  # ascending
            t = dst[i]
            if t not in ids:
                ids[t] = len(order)
                order.append(t)
            by_target.setdefault(ids[t], []).append((lo[i], hi[i]))
        edges.append(tuple((normalize(ranges), t) for t, ranges in sorted(by_target.items())))
    return CharDFA(tuple(edges), tuple(bool(accept[q]) for q in order))


@lru_cache(maxsize=1024)
def _except(words: tuple[str, ...]) -> DFA:
    """The core's runs go to the core as they came, read as int64 through memoryviews: one
    object's keys are one to five words most often, where making five NumPy arrays of them
    was a tenth of the cost."""
    ptr, lo, hi, dst, accept = _core.except_runs(words)
    return _from_arrays(memoryview(ptr).cast("q"), memoryview(lo).cast("q"), memoryview(hi).cast("q"),
                        memoryview(dst).cast("q"), accept, minimal=True)


def _except_runs(words: tuple[str, ...]) -> tuple[np.ndarray, ...]:
    """(ptr, lo, hi, dst, accept) of the decoded texts that are none of `words` (sorted,
    distinct), as `_from_arrays` takes them: the words' trie, equal subtrees shared, and a
    last state for "left the trie", where every character loops; the minimal automaton.
    Built in the compiled core (``_keys.c``: in Python it was a third of an object's keys'
    cost); its oracle is tests/automata_reference.py's `except_runs`."""
    ptr, lo, hi, dst, accept = _core.except_runs(words)
    return (np.frombuffer(ptr, _INT64), np.frombuffer(lo, _INT64), np.frombuffer(hi, _INT64), np.frombuffer(dst, _INT64),
            np.frombuffer(accept, _UINT8))


def _from_runs(runs: list[list[tuple[int, int, int]]], accept: list[bool], *, minimal: bool) -> DFA:
    """`_from_arrays` of a character automaton given by its runs (per state, sorted disjoint
    (lo, hi, target) code point ranges)."""
    ptr = np.zeros(len(runs) + 1, dtype=np.int64)
    np.cumsum([len(row) for row in runs], out=ptr[1:])
    flat = chain.from_iterable(chain.from_iterable(runs))  # lo, hi, target of each run: ints, not tuples
    table = np.fromiter(flat, dtype=np.int64, count=3 * int(ptr[-1])).reshape(-1, 3)
    return _from_arrays(ptr, np.ascontiguousarray(table[:, 0]), np.ascontiguousarray(table[:, 1]),
                        np.ascontiguousarray(table[:, 2]), np.array(accept, dtype=np.uint8), minimal=minimal)


def _from_arrays(ptr, lo, hi, dst, accept, *, minimal: bool) -> DFA:
    """The minimized DFA of the JSON spellings of a character automaton given by its runs:
    those of state q are ``lo[ptr[q]:ptr[q + 1]]`` .. `hi` to `dst` (buffers of int64, sorted
    and disjoint), `accept` of uint8. `minimal`: the caller vouches that the character automaton
    is minimal and every state of it reaches acceptance, so the core's table is minimal too
    and is only numbered, not minimized (a quarter of a schema's compile time went to
    minimizing tables already minimal)."""
    done = _core.json_string(ptr, lo, hi, dst, accept, MAX_STATES, minimal)
    if done is None:
        raise StateBudgetExceeded(f"the JSON string automaton needs more than {MAX_STATES} states before minimization")
    trans, acc = done[:2]  # well formed by construction: from_table's checks are not needed
    if minimal:  # numbered canonically, its key's code written on the way
        return _make(np.frombuffer(trans, _INT32).reshape(-1, 256), np.frombuffer(acc, _BOOL), done[2])
    table, b2c = byte_classes(np.frombuffer(trans, _INT32).reshape(-1, 256))
    return _finalize(table, np.frombuffer(acc, _BOOL), b2c)
