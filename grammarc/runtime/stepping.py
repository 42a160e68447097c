"""The one stepping core of the recognizer and the engine: items, bytes, completion.

An *item* ``(vertex, terminal, dfa_state, spent)`` is a lexer position inside one terminal
whose parser stack is the GSS vertex that will shift it when the terminal ends. `spent`
counts the tokens that have touched a token-limited terminal (``except!(X, n)``); it stays
0 everywhere else and whenever text is read without token boundaries. A frozenset of
items is a parser configuration: the recognizer's state, and the engine's.

Bytes are read in one of three ways (`tokens`):

* ``None``: plain text, no tokens at all (the recognizer): every terminal, ``any!``
  included, reads bytes through its DFA; no budget is counted;
* ``True``: `data` is one whole token (`Engine.advance`): ``any!`` takes it whole, and
  every token-limited terminal it touches spends one token of its budget;
* ``False``: bytes inside the token stream that are not a token of their own
  (`Engine.advance_bytes`, forced text): ``any!`` cannot be entered, nothing is spent.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from grammarc.lowering.compiler import Terminal
from grammarc.runtime import _gss
from grammarc.runtime.gss import Node

__all__ = ["Item", "complete", "expected", "initial", "next_bytes", "step"]

Item = tuple[Node, int, int, int]  # (vertex, terminal, dfa state, tokens spent)


# initial(core) -> frozenset[Item]: the items before any text: every terminal that may start
# the text, in state 0.
#
# step(core, terminals, items, data, *, tokens=None) -> frozenset[Item]: the items after `data`
# (empty: `data` cannot continue the text). Every terminal that ends at a byte is shifted into
# one GSS level there, which opens what may follow. Each item reads its bytes in one call
# (`DFA.walk`'s walker), which also gives the positions where its terminal may end; the
# positions are taken in order, so the items a level opens at a position read on from it
# after every item that reached it. `any!` takes a whole token, so what follows it starts
# after the token: its items go straight to the result and never see the token's bytes; one
# opened inside a token is dropped (any! starts only at a token boundary).
#
# These three run in the compiled core (grammarc.runtime._step.c); their Python oracle is
# tests/gss_reference.py.
initial = _gss.initial
step = _gss.step
# complete(core, terminals, items) -> bool: whether some item's terminal can end here and leave
# the parser accepting. (The empty text is the caller's question: it has no item that ended.)
complete = _gss.complete


def next_bytes(terminals: Sequence[Terminal], items: frozenset[Item], *, tokens: bool = False) -> set[int]:
    """The bytes that keep the text a viable prefix. With `tokens`, an ``any!`` that may
    start means any token may come: every byte."""
    out: set[int] = set()
    for _, t, q, _ in items:
        terminal = terminals[t]
        if tokens and terminal.any_token:
            if q == 0:
                return set(range(256))
            continue
        out.update(int(b) for b in np.flatnonzero(terminal.dfa.trans[q] >= 0))
    return out


def expected(terminals: Sequence[Terminal], items: frozenset[Item]) -> tuple[str, ...]:
    """Names of the terminals that could continue the text (sorted, unique)."""
    return tuple(sorted({terminals[t].name for _, t, _, _ in items}))
