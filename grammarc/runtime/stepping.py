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
from grammarc.runtime.gss import Node, ParserCore

__all__ = ["Item", "complete", "expected", "initial", "next_bytes", "step"]

Item = tuple[Node, int, int, int]  # (vertex, terminal, dfa state, tokens spent)


def initial(core: ParserCore) -> frozenset[Item]:
    """The items before any text: every terminal that may start the text, in state 0."""
    return frozenset((r, t, 0, 0) for r, t in core.openings(core.root_level))


def step(core: ParserCore, terminals: Sequence[Terminal], items: frozenset[Item], data: bytes,
         *, tokens: bool | None = None) -> frozenset[Item]:
    """The items after `data` (empty: `data` cannot continue the text). Every terminal that
    ends at a byte is shifted into one GSS level there, which opens what may follow.

    Each item reads its bytes in one call (`DFA.walk`), which also gives the positions
    where its terminal may end; the positions are taken in order, so the items a level opens
    at a position read on from it after every item that reached it."""
    whole = tokens is True
    # any! takes a whole token, so what follows it starts after the token: its items go
    # straight to the result and never see the token's bytes.
    after_any: set[Item] = set()
    any_ended: set[tuple[Node, int]] = set()
    batch: list[Item] = []  # the items that read on from `position`
    for node, t, q, k in items:
        if tokens is not None and terminals[t].any_token:
            if whole and q == 0 and data:
                after_any.add((node, t, 1, 1))
                any_ended.add((node, t))
            continue
        batch.append((node, t, q, k))
    if any_ended:
        after_any.update((r, u, 0, 0) for r, u in core.openings(core.level(frozenset(any_ended))))
    out: set[Item] = set()
    ended: list[set[tuple[Node, int]] | None] = [None] * (len(data) + 1)  # position -> (vertex, terminal)
    position = 0
    while True:
        for node, t, q, k in batch:
            if position == len(data):
                out.add((node, t, q, k))
                continue
            terminal = terminals[t]
            if tokens is not None and terminal.any_token:
                continue  # opened inside this token: any! starts only at a token boundary
            if whole and terminal.token_limit is not None:  # this token touches it: one more spent
                if k >= terminal.token_limit:
                    continue
                k += 1
            q, ends = terminal.dfa.walk(data, position, q)
            if q >= 0:
                out.add((node, t, q, k))
            for p in ends:
                found = ended[p]
                if found is None:
                    found = ended[p] = set()
                found.add((node, t))
        position += 1
        while position <= len(data) and ended[position] is None:
            position += 1
        if position > len(data):
            return frozenset(out) | after_any
        batch = [(r, u, 0, 0) for r, u in core.openings(core.level(frozenset(ended[position])))]


def complete(core: ParserCore, terminals: Sequence[Terminal], items: frozenset[Item]) -> bool:
    """Whether some item's terminal can end here and leave the parser accepting. (The empty
    text is the caller's question: it has no item that ended.)"""
    ended = frozenset((node, t) for node, t, q, _ in items if terminals[t].dfa.accept[q])
    return bool(ended) and core.level(ended).accepting


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
