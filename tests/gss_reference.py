"""The Python oracle of the GLR runtime's compiled core (grammarc.runtime._gss): the
graph-structured stack, the parser core and the stepping loop as they were written in Python
before the port (grammarc/runtime/gss.py and stepping.py hold the contracts; _gss.c, _gss_core.c
and _step.c the one implementation). tests/test_gss_core.py asserts the two agree: the same
item sets after each step (compared as vertex graphs), the same levels, shifts and work counts.

The docstrings below are the original ones; where they say "vertex identity", the oracle's
vertices are its own `Node` objects, never the compiled core's.
"""

from __future__ import annotations

from typing import Sequence

from lalr_reference import runtime_rows
from grammarc.lowering.compiler import CompiledGrammar, Terminal

__all__ = ["Level", "Node", "ParserCore", "ancestors", "complete", "initial", "step"]


class Node:
    """A GSS vertex: an LR state above every stack that reaches it.

    `kept`: hash-consed by `ParserCore` (its identity may key memos); the vertices of
    token tree walks' hypothetical shifts are not. `closure`: what reductions reach from
    it (`ParserCore._closure`), made on first use; it depends on the state and the
    parents alone, so it lives as long as the vertex and is never stale.
    """

    __slots__ = ("state", "parents", "kept", "closure", "__weakref__")

    def __init__(self, state: int, parents: tuple["Node", ...] = (), kept: bool = False):
        self.state = state
        self.parents = parents
        self.kept = kept
        self.closure: dict[int, tuple[Node, ...]] | None = None

    def __repr__(self) -> str:
        return f"Node({self.state})"


class Level:
    """The GSS vertices of one text position that can shift a terminal (or accept), after
    the shifts and reductions there.

    `accepting` says whether the text up to this position is a complete string of the
    language; `states` are the vertices' LR states (sorted). The levels of texts are
    hash-consed by their vertices (`ParserCore.level`), so for them identity is equality;
    the hypothetical levels of token tree walks (`ParserCore.shift`) are not.
    """

    __slots__ = ("vertices", "accepting", "states", "openings")

    def __init__(self, vertices: tuple[Node, ...], accepting: bool, states: tuple[int, ...]):
        self.vertices = vertices
        self.accepting = accepting
        self.states = states
        self.openings: tuple[tuple[Node, int], ...] | None = None  # ParserCore.openings memo


_LEVEL_MEMO_LIMIT = 200_000


class ParserCore:
    """GSS construction over one compiled grammar's tables, memoized per set of completions.

    Shared by every recognizer and engine of that grammar. Equal completion sets give the
    same `Level` object while it stays in the memo; a level built again after the memo was
    cleared is equal in meaning, so dropping the memo never changes an answer.

    `work` counts what was made (``vertices``) and the reduction steps taken
    (``reductions``): a measure of parsing work that does not depend on the machine.
    """

    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        tables = compiled.tables
        self.goto = tables.goto
        self.accept_state = tables.goto[0].get(1)  # goto(0, S) for the augmented S' -> S
        lhs = [p.lhs for p in compiled.bnf.productions]
        rhs_len = [len(p.rhs) for p in compiled.bnf.productions]
        # per state: terminal -> the state it shifts to; (lhs, rhs length, LALR(1) lookaheads)
        # of each production it reduces; those productions; the lookaheads after which a
        # vertex of it is in a level itself
        self.shift_to: list[dict[int, int]]
        self._reducing: list[tuple[tuple[int, int, frozenset[int]], ...]]
        self.reduces: list[tuple[int, ...]]
        self._own: list[tuple[int, ...]]
        self.shift_to, self._reducing, self.reduces, self._own = runtime_rows(
            tables.action, lhs, rhs_len, self.accept_state)
        self.work = {"vertices": 0, "reductions": 0}
        self.root = Node(0, kept=True)
        self._vertices: dict[tuple[int, ...], Node] = {}  # (state, *parent ids) -> vertex
        self._by_vertices: dict[tuple[int, ...], Level] = {}  # vertex ids -> hash-consed level
        self._levels: dict[frozenset, Level] = {}  # completions -> level
        self._pure: dict[tuple[tuple[int, ...], int], tuple[int, ...] | None] = {}  # bounded by the tables
        self._shiftable: dict[tuple[int, ...], frozenset[int]] = {}
        self.root_level = self._level_of({0: self.root})

    def level(self, completions: frozenset) -> Level:
        """The level after shifting each ``(node, terminal)`` of `completions` at one position."""
        level = self._levels.get(completions)
        if level is None:
            if len(self._levels) > _LEVEL_MEMO_LIMIT:
                self._forget()
            level = self._levels[completions] = self._build(completions)
        return level

    def shift(self, level: Level, t: int, upcoming: frozenset[int]) -> Level:
        """The level after shifting `t` from every vertex of `level` that can shift it (at
        least one must), for a token tree walk that goes on only with terminals of
        `upcoming`.

        Of the vertices reductions reach, only those that can shift a terminal of
        `upcoming` are kept; the shifted ones all are (the shifts of a walk path before
        its last one are pure, and `upcoming` is the path's last). The shifted
        vertices and the level are built afresh, neither memoized nor hash-consed: a
        walk's levels are hypothetical and die with the walk, and keeping them would fill
        the memos with objects the garbage collector then scans over and over. What
        reductions make from them over real vertices is hash-consed, and shared with the
        real levels (its closure is memoized on it).
        """
        shift_to = self.shift_to
        completions = frozenset((node, t) for node in level.vertices if t in shift_to[node.state])
        return self._build(completions, keep=False, upcoming=upcoming)

    def pure_shift(self, states: tuple[int, ...], t: int) -> tuple[int, ...] | None:
        """The LR states after shifting `t` from vertices in `states`, when no reduction can
        follow (the new states complete no item); None otherwise.

        Such a shift depends on the states alone, never on the stacks below them: the
        level it makes holds exactly one vertex per new state. Token tree walks use this to
        summarize paths once per set of states instead of once per configuration.
        """
        key = (states, t)
        if key not in self._pure:
            nxt = tuple(sorted({self.shift_to[s][t] for s in states if t in self.shift_to[s]}))
            self._pure[key] = None if any(self.reduces[s] for s in nxt) else nxt
        return self._pure[key]

    def shiftable(self, states: tuple[int, ...]) -> frozenset[int]:
        """The terminals some state of `states` can shift."""
        out = self._shiftable.get(states)
        if out is None:
            out = self._shiftable[states] = frozenset(t for s in states for t in self.shift_to[s])
        return out

    def openings(self, level: Level) -> tuple[tuple[Node, int], ...]:
        """Every (vertex, terminal) pair of `level` a new terminal may start from (made on
        first use: the levels of token tree walks never need them)."""
        if level.openings is None:
            level.openings = tuple((node, t) for node in level.vertices for t in self.shift_to[node.state])
        return level.openings

    def _forget(self) -> None:
        """Drop the memos (bounded memory). Vertices and levels made later are equal in
        meaning to the forgotten ones, only not identical: memos keyed on them miss."""
        self._levels.clear()
        self._vertices.clear()
        self._by_vertices.clear()

    def _build(self, completions, *, keep: bool = True, upcoming: frozenset[int] | None = None) -> Level:
        """Shift the completions (one vertex per new state), then add the vertices that
        reductions reach from them, each under a lookahead it can then shift (`_closure`).

        Exact: every vertex reductions reach is a viable stack, so what it shifts may
        follow; and a stack that goes on with terminal u was reduced under u, which is in
        the LALR(1) lookahead of each of its reductions. With `upcoming` (a token tree
        walk), the shifted vertices all stay (a walk path shifts on from them without
        reducing) and only the reduced ones are dropped whose lookaheads miss `upcoming`.

        Reductions are not merged into the level's vertices while they are made: each
        makes its own hash-consed vertex over its base, whose closure is memoized. That
        is what keeps deterministic grammars linear: in right recursion
        (``start ::= 'a' start | 'a'``) only the end of the text reduces the whole stack,
        and each position extends the memoized chain by one step, where merged vertices
        gathered an edge per position and were reduced down the whole stack each time.
        """
        shifted: dict[int, dict[int, Node]] = {}
        for parent, t in completions:
            shifted.setdefault(self.shift_to[parent.state][t], {})[id(parent)] = parent
        reached: dict[int, dict[int, Node]] = {}  # state -> vertices
        for state, parents in shifted.items():
            top = self._vertex(state, tuple(parents.values()), keep)
            if upcoming is not None or self._own[state]:  # a walk path may shift on from it
                reached.setdefault(state, {})[id(top)] = top
            for u, ws in self._closure(top).items():
                if upcoming is not None and u not in upcoming:
                    continue
                for w in ws:
                    reached.setdefault(w.state, {})[id(w)] = w
        nodes = {state: self._merged(state, ws, keep) for state, ws in reached.items()}
        return self._level_of(nodes) if keep else self._new_level(nodes)

    def _merged(self, state: int, vertices: dict[int, Node], keep: bool) -> Node:
        """One vertex for the stacks of several vertices of one state (at most one per
        state in a level: what bounds a level by the grammar)."""
        if len(vertices) == 1:
            return next(iter(vertices.values()))
        parents: dict[int, Node] = {}
        for v in vertices.values():
            for p in v.parents:
                parents.setdefault(id(p), p)
        return self._vertex(state, tuple(parents.values()), keep)

    def _closure(self, top: Node) -> dict[int, tuple[Node, ...]]:
        """Lookahead u -> the vertices that reductions under u reach from `top` (not
        `top` itself) and that can shift u (for EOF: that accept). Iterative (stacks can
        be deep) and memoized on each vertex reached, so a deep stack is reduced once:
        right recursion's chain grows by one memoized step per position."""
        if top.closure is not None:
            return top.closure
        stack: list[tuple[Node, list[tuple[Node, frozenset[int]]] | None]] = [(top, None)]
        while stack:
            v, kids = stack[-1]
            if kids is None:
                if v.closure is not None:  # reached twice (a DAG) and done meanwhile: not reduced again
                    stack.pop()  # (so each vertex is reduced once, whatever the order of the walk)
                    continue
                kids = self._reduce(v)
                stack[-1] = (v, kids)
                pending = [(k, None) for k, _ in kids if k.closure is None]
                if pending:
                    stack.extend(pending)
                    continue
            stack.pop()
            if v.closure is None:  # else reached twice (a DAG) and done meanwhile
                v.closure = self._combine(kids)
        return top.closure

    def _combine(self, kids: list[tuple[Node, frozenset[int]]]) -> dict[int, tuple[Node, ...]]:
        """A closure from the reductions' vertices (each under the lookaheads it is made
        under): their own shifts and their closures. A vertex's closure leaves out the
        vertex itself (`_own` says where it belongs), so that no vertex refers to itself
        and vertices are freed as soon as nothing holds them."""
        own = self._own
        result: dict[int, tuple[Node, ...]] = {}
        for k, lookaheads in kids:
            below = k.closure
            assert below is not None
            if not own[k.state]:
                if not result and lookaheads.issuperset(below):
                    result = below  # a chain: share the closure below (never mutated)
                    continue
                if result is below:
                    continue
            merged = dict(result)
            for u in own[k.state]:
                if u in lookaheads:
                    have = merged.get(u)
                    merged[u] = (k,) if have is None else tuple({id(w): w for w in (*have, k)}.values())
            for u, ws in below.items():
                if u in lookaheads:
                    have = merged.get(u)
                    if have is None:
                        merged[u] = ws
                    elif have is not ws:
                        merged[u] = tuple({id(w): w for w in (*have, *ws)}.values())
            result = merged
        return result

    def _reduce(self, v: Node) -> list[tuple[Node, frozenset[int]]]:
        """The vertices one reduction makes from `v`, with the lookaheads it is made under."""
        out: list[tuple[Node, frozenset[int]]] = []
        for lhs, length, lookaheads in self._reducing[v.state]:
            for base in ancestors(v, length):
                out.append((self._vertex(self.goto[base.state][lhs], (base,), True), lookaheads))
        self.work["reductions"] += len(out)
        return out

    # Memo keys are tuples of ints where they can be: the cyclic garbage collector stops
    # tracking those, and with hundreds of thousands of memoized vertices its full passes
    # otherwise cost hundreds of milliseconds. The ids stay valid: a memoized vertex keeps
    # its parents alive, and a memoized level its vertices.
    def _vertex(self, state: int, parents: tuple[Node, ...], keep: bool) -> Node:
        """The vertex of `state` over `parents`: hash-consed when `keep` and every parent
        is (a vertex above a walk's hypothetical vertex is hypothetical too)."""
        if keep and all(p.kept for p in parents):
            key = (state, id(parents[0])) if len(parents) == 1 else (state, *sorted(map(id, parents)))
            node = self._vertices.get(key)
            if node is None:  # setdefault: threads that race agree on one vertex
                node = self._vertices.setdefault(key, Node(state, parents, kept=True))
                self.work["vertices"] += 1
            return node
        self.work["vertices"] += 1
        return Node(state, parents)

    def _level_of(self, nodes: dict[int, Node]) -> Level:
        key = tuple(sorted(map(id, nodes.values())))
        level = self._by_vertices.get(key)
        if level is None:
            level = self._by_vertices[key] = self._new_level(nodes)
        return level

    def _new_level(self, nodes: dict[int, Node]) -> Level:
        accepting = self.accept_state is not None and self.accept_state in nodes
        return Level(tuple(nodes.values()), accepting, tuple(sorted(nodes)))


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


# ---- stepping (grammarc/runtime/stepping.py) ----

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
