"""The grammar dialect's special terminals as DFAs: ``#e'R'`` (stop at the first match),
``#ex'R'`` (text containing no match), ``except!`` (text containing none of some strings)
and ``#substrs`` (any substring of a text).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from grammarc.errors import RegexError
from grammarc.automata.dfa import (
    DEFAULT_MAX_STATES, DFA, _budget_error, _check_budget, _empty, _finalize, _unminimized_cap, from_table,
)
from grammarc.automata.nfa import _NFA, _determinize
from grammarc.automata.operations import _finalize_product, _intersect, _utf8_nonempty

__all__ = ["complement_containing", "early_end", "except_strings", "substrings"]


# ------------------------------------------------------------- dialect constructs


def early_end(d: DFA) -> DFA:
    """Strings of L(d) with no proper prefix in L(d) (``#e'R'``): stop at the first match."""
    trans = np.array(d.trans, dtype=np.int64)
    trans[d.accept] = -1
    return from_table(trans, d.accept)


def complement_containing(d: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """Non-empty valid UTF-8 text with no substring in L(d) (``#ex'R'``)."""
    _check_budget(max_states)
    what = "complement_containing"
    if d.accepts_empty:
        return _empty()
    if d.is_empty:
        return _utf8_nonempty()
    # Determinize (any byte)* . d . (any byte)*: it is total, so its complement is the
    # same table with acceptance flipped.
    nfa = _NFA(d.n_states + 8, what)
    s = nfa.new()
    nfa.edges[s].append((0, 255, s))
    final = nfa.embed(d, s)
    nfa.edges[final].append((0, 255, final))
    trans, accept, b2c = _determinize(nfa, s, final, max_states, what, frozenset({final}))
    avoid = _finalize(trans, ~accept, b2c)
    return _intersect(avoid, _utf8_nonempty(), max_states, what)


def except_strings(strings: Sequence[str], *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """Non-empty valid UTF-8 text in which none of `strings` occurs (``except!``).

    Built as an Aho-Corasick automaton over the UTF-8 bytes (its output states removed)
    crossed with the UTF-8 validator.
    """
    _check_budget(max_states)
    what = "except!"
    try:
        pats = sorted({s.encode("utf-8") for s in strings})
    except UnicodeEncodeError as exc:
        raise RegexError(f"except! string is not valid Unicode text: {exc}") from None
    if not pats:
        return _utf8_nonempty()
    if b"" in pats:
        return _empty()
    # Trie.
    children: list[dict[int, int]] = [{}]
    terminal = [False]
    for p in pats:
        node = 0
        for b in p:
            nxt = children[node].get(b)
            if nxt is None:
                nxt = len(children)
                children[node][b] = nxt
                children.append({})
                terminal.append(False)
            node = nxt
        terminal[node] = True
    m = len(children)
    if m > _unminimized_cap(max_states):  # the trie, before the product minimizes it
        raise _budget_error(what, max_states)
    goto = np.zeros((m, 256), dtype=np.int64)
    fail = [0] * m
    out = terminal[:]
    for b, t in children[0].items():
        goto[0, b] = t
    queue = list(children[0].values())
    for q in queue:
        out[q] = out[q] or out[fail[q]]
        goto[q] = goto[fail[q]]
        for b, t in children[q].items():
            goto[q, b] = t
            fail[t] = int(goto[fail[q], b])
            queue.append(t)
    bad = np.asarray(out, dtype=bool)
    goto[bad[goto]] = -1
    return _finalize_product(goto, ~bad, _utf8_nonempty(), max_states, what)


def substrings(text: str, *, max_states: int | None = None) -> DFA:
    """Every substring of `text` cut at character boundaries, the empty string included.

    A suffix automaton over the UTF-8 bytes: its states group substrings by their end
    positions, so "ends at a character boundary" is a per-state property; substrings that
    start inside a character are cut at the first byte.
    """
    data = text.encode("utf-8")
    nxt: list[dict[int, int]] = [{}]
    link = [-1]
    length = [0]
    first_end = [0]
    last = 0
    for i, b in enumerate(data):
        cur = len(nxt)
        nxt.append({})
        link.append(0)
        length.append(length[last] + 1)
        first_end.append(i + 1)
        p = last
        while p != -1 and b not in nxt[p]:
            nxt[p][b] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][b]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(nxt)
                nxt.append(dict(nxt[q]))
                link.append(link[q])
                length.append(length[p] + 1)
                first_end.append(first_end[q])
                while p != -1 and nxt[p].get(b) == q:
                    nxt[p][b] = clone
                    p = link[p]
                link[q] = clone
                link[cur] = clone
        last = cur
        if max_states is not None and len(nxt) > 2 * max_states:
            raise _budget_error("#substrs", max_states)
    n = len(nxt)
    trans = np.full((n, 256), -1, dtype=np.int64)
    for s, d in enumerate(nxt):
        if d:
            trans[s, list(d.keys())] = list(d.values())
    trans[0, 0x80:0xC0] = -1
    accept = np.array(
        [e == len(data) or not 0x80 <= data[e] <= 0xBF for e in first_end], dtype=bool
    )
    accept[0] = True
    result = from_table(trans, accept)
    if max_states is not None and result.n_states > max_states:
        raise _budget_error("#substrs", max_states, result.n_states)
    return result
