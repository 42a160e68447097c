"""The graph-structured stack (GSS) of the scannerless GLR runtime, and the parser core
that builds it (`ParserCore`: levels, shifts, reductions, all memoized per grammar).

A configuration is an *item* ``(node, terminal, dfa_state)``: `node` is a vertex of the
graph-structured stack (GSS) whose LR state can shift `terminal`, and the lexer is part
way through that terminal. Each byte advances every item's DFA; the items whose DFA
accepts may also end their terminal there. All the terminals that end at one position are
shifted together into one GSS *level* — the vertices of that position, after the
reductions — and each level opens an item for every terminal one of its vertices can shift.
Nothing is ever disambiguated: every split of the text into terminals that the grammar
allows stays alive, so membership is exactly the language of DESIGN.md §4.

Because a level has at most one vertex per LR state, the work per byte is bounded by the
grammar, not by the number of parses: ambiguous grammars stay polynomial (Tomita's GLR).

Reductions follow the LR(0) automaton (every completed item), each tagged with its LALR(1)
lookaheads: a reduced vertex joins the level only under a lookahead it can shift (or
accept). That is exact for GLR, and the grammar is ε-free and free of unit cycles
(compiler.py), so every reduction pops at least one vertex and each level is finite.
Each reduction makes a vertex of its own over its base, whose reductions are memoized on it
(its closure; _gss.c `closure`, each vertex reduced once per walk): a deep stack is reduced
once, not again at every position, so deterministic grammars parse in linear time whichever
way they recurse.

Vertices are hash-consed: a vertex *is* its LR state and its set of parent vertices, so two
positions whose stacks hold the same LR states share one vertex, one level and, in the
engine, one configuration. That is what lets levels, masks and token tree walks be
memoized across positions and documents (``"(1+2"`` and ``"(7*3+4"`` end in the same
configuration), not only when one text repeats.

The stack and the core run in the compiled core (grammarc.runtime._gss, from _gss.c and
_gss_core.c; its Python oracle is tests/gss_reference.py): a never-seen schema's first
masks build thousands of levels and walk hundreds of hypothetical shifts, and in Python
that was the largest part of its first pass. `Node` and `Level` are its types, and
`ParserCore` extends its `Core` with the tables it reads.

Memory: vertices and levels are freed by reference counting alone. A vertex refers only to
the vertices below it and to its closure (what reductions make over those), never to
itself, so no cycle can pass through one and the cyclic collector never tracks them (a
100k-deep stack is freed iteratively: every edge goes through a tuple, whose deallocation
the interpreter bounds). The core itself is tracked: it sits on its grammar and refers to it.
Threads: the core runs with the GIL held; an allocation that lets another thread in is
followed by a fresh look into the memo it fills, so racing threads agree on one vertex.
"""

from __future__ import annotations

from functools import cached_property
from typing import Sequence

from grammarc.lowering.compiler import CompiledGrammar
from grammarc.lowering.lr import flat_productions
from grammarc.runtime import _gss

__all__ = ["Level", "Node", "ParserCore", "ancestors", "parser_core"]

Node = _gss.Node
# A GSS vertex: an LR state above every stack that reaches it.
#
# `state`, `parents` (a tuple of vertices), `kept`: hash-consed by `ParserCore` (its identity
# may key memos); the vertices of token tree walks' hypothetical shifts are not. Its closure
# (what reductions reach from it, `ParserCore`'s memo) is made on first use; it depends on the
# state and the parents alone, so it lives as long as the vertex and is never stale. Equality
# is identity (and hashing follows it).

Level = _gss.Level
# The GSS vertices of one text position that can shift a terminal (or accept),
# after the shifts and reductions there.
#
# `vertices`: one per LR state, by ascending state; `accepting` says whether the text up to
# this position is a complete string of the language; `states` are the vertices' LR states
# (ascending); `openings`: `ParserCore.openings`' memo (None until made). The levels of texts
# are hash-consed by their vertices (`ParserCore.level`), so for them identity is equality;
# the hypothetical levels of token tree walks (`ParserCore.shift`) are not.

_LEVEL_MEMO_LIMIT = 200_000


class ParserCore(_gss.Core):
    """GSS construction over one compiled grammar's tables, memoized per set of completions.

    Shared by every recognizer and engine of that grammar. Equal completion sets give the
    same `Level` object while it stays in the memo; past `_LEVEL_MEMO_LIMIT` levels the memos
    of levels and vertices are dropped (`_forget`): a level built again after that is equal
    in meaning, only not identical, so dropping the memo never changes an answer.

    `work` counts what was made (``vertices``) and the reduction steps taken
    (``reductions``): a measure of parsing work that does not depend on the machine.

    The methods, in the compiled core (their algorithms: tests/gss_reference.py):

    ``level(completions)``: the level after shifting each ``(node, terminal)`` of
    `completions` (a frozenset) at one position: the shifted vertices (one per new state),
    then those reductions reach from them, each under a lookahead it can then shift. Exact:
    every vertex reductions reach is a viable stack, so what it shifts may follow; and a
    stack that goes on with terminal u was reduced under u, which is in the LALR(1)
    lookahead of each of its reductions. Reductions are not merged into the level's vertices
    while they are made: each makes its own hash-consed vertex over its base, whose closure
    (lookahead u -> the vertices reductions under u reach from it that can shift u, or for
    EOF accept; never the vertex itself) is memoized on it, built iteratively (stacks can be
    deep). That keeps deterministic grammars linear: in right recursion
    (``start ::= 'a' start | 'a'``) only the end of the text reduces the whole stack, and
    each position extends the memoized chain by one step.

    ``shift(level, t, upcoming)``: the level after shifting `t` from every vertex of `level`
    that can shift it (at least one must), for a token tree walk that goes on only with
    terminals of `upcoming`. Of the vertices reductions reach, only those that can shift a
    terminal of `upcoming` are kept; the shifted ones all are (the shifts of a walk path
    before its last one are pure, and `upcoming` is the path's last). The shifted vertices
    and the level are built afresh, neither memoized nor hash-consed: a walk's levels are
    hypothetical and die with the walk. What reductions make from them over real vertices
    is hash-consed, and shared with the real levels.

    ``pure_shift(states, t)``: the LR states after shifting `t` from vertices in `states`,
    when no reduction can follow (the new states complete no item); None otherwise. Such a
    shift depends on the states alone: token tree walks use this to summarize paths once per
    set of states instead of once per configuration.

    ``shiftable(states)``: the terminals (a frozenset) some state of `states` can shift.

    ``openings(level)``: every (vertex, terminal) pair of `level` a new terminal may start
    from (made on first use: the levels of token tree walks never need them).

    ``follows(n)``: per terminal below `n`, the terminals that can come right after it in
    some sentence, ascending (a list of tuples; the token index tries only those after a
    terminal ends inside a token). Read off the tables: the states a terminal enters act on
    exactly the terminals that can follow it there (a valid sentence never meets an error
    action), so their union is the grammar's FOLLOW set, in one pass over the cells.

    ``root``, ``root_level``: the bottom vertex (state 0) and its level.
    """

    def __init__(self, compiled: CompiledGrammar):
        super().__init__()
        self.compiled = compiled
        tables = compiled.tables
        lhs, rhs_start, _ = flat_productions(compiled.bnf)
        # The core reads the builder's flat arrays as they are (no Python rows made: a new
        # schema pays this before its first mask): per state the terminals it shifts and where
        # to, the (lhs, rhs length, LALR(1) lookaheads) of each production it reduces, and the
        # lookaheads after which a vertex of it is in a level itself. It returns goto(0, S)
        # for the augmented S' -> S, the accepting state (None: no sentence is accepted).
        self.accept_state = self._setup(tables.n_terminals, *tables.arrays(), lhs, rhs_start, _LEVEL_MEMO_LIMIT)

    @property
    def goto(self) -> tuple[dict[int, int], ...]:
        """Per LR state, nonterminal -> state (the tables' GOTO rows, made on first read: the
        runtime does not need them; grammarc.integrations.steering does)."""
        return self.compiled.tables.goto

    @cached_property
    def shift_to(self) -> list[dict[int, int]]:
        """Per LR state, terminal -> the state it shifts to (read back from the core: the
        runtime does not need it; grammarc.integrations.steering does)."""
        return [self._rows(s)[0] for s in range(self.compiled.tables.n_states)]


def ancestors(node: Node, depth: int) -> Sequence[Node]:
    """The vertices exactly `depth` edges below `node` (each once)."""
    if depth == 1:
        return node.parents  # distinct: every vertex is made over distinct parents
    frontier = [node]
    for _ in range(depth):
        seen: dict[int, Node] = {}
        for n in frontier:
            for p in n.parents:
                seen.setdefault(id(p), p)
        frontier = list(seen.values())
    return frontier


_CORE_SLOT = "_grammarc_parser_core"


def parser_core(compiled: CompiledGrammar) -> ParserCore:
    """The shared `ParserCore` of a compiled grammar.

    Kept on the compiled grammar itself, not in a weak mapping keyed by it: the core
    refers to its grammar, and a weak mapping's value that refers to its key keeps both
    alive forever. This way they form one cycle that is freed with the grammar. Two
    threads may build a core at once; one is published (`setdefault`), both are equal."""
    slots = compiled.__dict__
    core = slots.get(_CORE_SLOT)
    if core is None:
        core = slots.setdefault(_CORE_SLOT, ParserCore(compiled))
    return core
