"""Keys for the language a DFA accepts from one of its states.

A vocabulary scan from state `q` of a terminal depends only on the language accepted from
`q`, not on the terminal around it: the string body inside ``"name": "…"`` scans like the
string body inside any other merged terminal. Keying scans by that language lets every
grammar, terminal and process share them.

For a minimized, trimmed DFA the states reachable from `q` form the minimal DFA of that
language, and minimal DFAs of one language are isomorphic; numbering them breadth-first
with bytes ascending makes them identical, so the key is exact: equal keys iff equal
languages. (For a DFA that is not minimal, equal keys still imply equal languages.)
"""

from __future__ import annotations

import hashlib
import threading
import weakref

import numpy as np

from grammarc.automata import _core
from grammarc.automata.dfa import DFA


def suffix_key(dfa: DFA, state: int) -> str:
    """A hex digest naming the language `dfa` accepts from `state` (the canonical code is
    built in C: `_core.suffix_code`; its Python oracle is tests/automata_reference.py).

    A dense table is read as it is, a row once per run of bytes its states treat alike
    (`DFA.byte_runs`); only a compact one goes through the DFA's runs, whose Python lists
    cost more than the code (and, made on a cold state, a garbage collection). Kept per
    automaton while it lives: grammars that share a terminal's automaton (JSON's strings
    and separators) ask for the same states' keys."""
    keys = per_state(_keys, dfa)
    found = keys.get(state)
    if found is None:
        table = dfa.dense_table
        code = _core.suffix_code(dfa._runs if table is None else table, dfa.accept.view(np.uint8), state,
                                 None if table is None else dfa.byte_runs)
        found = keys.setdefault(state, hashlib.blake2b(code, digest_size=20).hexdigest())
    return found


def made_keys(dfa: DFA) -> dict[int, str]:
    """The `suffix_key`s made so far for `dfa`'s states (state -> key), live: kept with the
    automaton and filled as keys are made, so a caller that asks of many states looks the
    automaton up once. Read-only for callers."""
    return per_state(_keys, dfa)


_lock = threading.Lock()
_keys: "weakref.WeakKeyDictionary[DFA, dict[int, str]]" = weakref.WeakKeyDictionary()  # automaton -> state -> key


def per_state(memo: "weakref.WeakKeyDictionary[DFA, dict]", dfa: DFA) -> dict:
    """`dfa`'s dict in `memo` (an automaton's values by state, kept while it lives), made on
    first use: the keys here, and what else is named per state (`grammarc.tokens.index`)."""
    with _lock:
        found = memo.get(dfa)
        if found is None:
            found = memo[dfa] = {}
    return found
