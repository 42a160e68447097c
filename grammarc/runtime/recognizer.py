"""A scannerless GLR recognizer over bytes: the reference semantics of a compiled grammar.

A configuration is an *item* ``(node, terminal, dfa_state)``: `node` is a vertex of the
graph-structured stack (GSS) whose LR state can shift `terminal`, and the lexer is part
way through that terminal. Each byte advances every item's DFA; the items whose DFA
accepts may also end their terminal there. All the terminals that end at one position are
shifted together into one GSS *level* — the vertices of that position, after every
reduction — and each level opens an item for every terminal one of its vertices can shift.
Nothing is ever disambiguated: every split of the text into terminals that the grammar
allows stays alive, so membership is exactly the language of DESIGN.md §4.

Because a level has at most one vertex per LR state, the work per byte is bounded by the
grammar, not by the number of parses: ambiguous grammars stay polynomial (Tomita's GLR).

Reductions follow the LR(0) automaton (every completed item, whatever the lookahead):
that is exact for GLR, and the grammar is ε-free and free of unit cycles (compiler.py),
so every reduction pops at least one vertex and each level is finite.

Vertices are hash-consed: a vertex *is* its LR state and its set of parent vertices, so two
positions whose stacks hold the same LR states share one vertex, one level and, in the
engine, one configuration. That is what lets levels, masks and token tree walks be
memoized across positions and documents (``"(1+2"`` and ``"(7*3+4"`` end in the same
configuration), not only when one text repeats.
"""

from __future__ import annotations

from dataclasses import dataclass

from grammarc.lowering.compiler import CompiledGrammar
from grammarc.lowering.lr import EOF


class Node:
    """A GSS vertex: an LR state at one text position, above every stack that reaches it."""

    __slots__ = ("state", "parents", "depth", "__weakref__")

    def __init__(self, state: int, depth: int = 0):
        self.state = state
        self.parents: list[Node] = []
        self.depth = depth  # the shortest stack through this vertex (a search heuristic)

    def __repr__(self) -> str:
        return f"Node({self.state})"



class Level:
    """The GSS vertices of one text position, after all shifts and reductions there.

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
    """

    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        tables = compiled.tables
        self.goto = tables.goto
        self.rhs_len = [len(p.rhs) for p in compiled.bnf.productions]
        self.lhs = [p.lhs for p in compiled.bnf.productions]
        self.shift_to = [{t: a for t, acts in row.items() if t != EOF for a in acts if a >= 0} for row in tables.action]
        self.lookaheads = [_reduce_lookaheads(row) for row in tables.action]  # state -> prod -> LALR(1) set
        self.reduces = [tuple(sorted(la)) for la in self.lookaheads]  # state -> every production it reduces
        self.accept_state = tables.goto[0].get(1)  # goto(0, S) for the augmented S' -> S
        self.root = Node(0)
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

        Only the reductions whose LALR(1) lookahead meets `upcoming` are made: a reduction
        after which a terminal v is eventually shifted has v in its LALR(1) lookahead (a
        superset of the canonical LR(1) one), so the vertices that can shift a terminal of
        `upcoming` are all there; the others may be missing. Built afresh, neither
        memoized nor hash-consed: a walk's levels are hypothetical and die with the walk,
        and keeping them would fill the memos with objects the garbage collector then
        scans over and over.
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
        nodes: dict[int, Node] = {}
        work: list[tuple[Node, Node]] = []  # (vertex, new edge below it) to reduce through

        def link(state: int, parent: Node) -> None:
            node = nodes.get(state)
            if node is None:
                node = nodes[state] = Node(state, parent.depth + 1)
            elif any(p is parent for p in node.parents):
                return
            node.depth = min(node.depth, parent.depth + 1)
            node.parents.append(parent)
            work.append((node, parent))

        for parent, t in completions:
            link(self.shift_to[parent.state][t], parent)
        while work:
            node, parent = work.pop()
            for prod in self.reduces[node.state]:
                if upcoming is not None and upcoming.isdisjoint(self.lookaheads[node.state][prod]):
                    continue
                lhs = self.lhs[prod]
                for base in _ancestors(parent, self.rhs_len[prod] - 1):
                    link(self.goto[base.state][lhs], base)
        if not keep:
            return self._new_level(nodes)
        # Every parent lies at an earlier position (terminals are never empty), so it is
        # already a hash-consed vertex and the new vertices can be interned bottom-up.
        return self._level_of({state: self._intern(node) for state, node in nodes.items()})

    # Memo keys are tuples of ints where they can be: the cyclic garbage collector stops
    # tracking those, and with hundreds of thousands of memoized vertices its full passes
    # otherwise cost hundreds of milliseconds. The ids stay valid: a memoized vertex keeps
    # its parents alive, and a memoized level its vertices.
    def _intern(self, node: Node) -> Node:
        key = (node.state, *sorted(map(id, node.parents)))
        return self._vertices.setdefault(key, node)

    def _level_of(self, nodes: dict[int, Node]) -> Level:
        key = tuple(sorted(map(id, nodes.values())))
        level = self._by_vertices.get(key)
        if level is None:
            level = self._by_vertices[key] = self._new_level(nodes)
        return level

    def _new_level(self, nodes: dict[int, Node]) -> Level:
        accepting = self.accept_state is not None and self.accept_state in nodes
        return Level(tuple(nodes.values()), accepting, tuple(sorted(nodes)))


def _reduce_lookaheads(row: dict[int, tuple[int, ...]]) -> dict[int, frozenset[int]]:
    """Production -> the lookaheads (terminals, EOF) under which an ACTION row reduces it."""
    out: dict[int, set[int]] = {}
    for lookahead, actions in row.items():
        for a in actions:
            if a < -1:
                out.setdefault(~a, set()).add(lookahead)
    return {prod: frozenset(la) for prod, la in out.items()}


def _ancestors(node: Node, depth: int) -> list[Node]:
    """The vertices exactly `depth` edges below `node` (each once)."""
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


Item = tuple[Node, int, int]  # (GSS vertex that can shift the terminal, terminal, dfa state)


@dataclass(frozen=True)
class Failure:
    """Where and why a text left the language (for `grammarc check` and errors)."""

    offset: int  # index of the first byte that cannot continue the text
    expected: tuple[str, ...]  # names of the terminals that could continue there
    next_bytes: frozenset[int]  # the bytes that could have come instead


class Recognizer:
    """Incremental membership for one text: feed bytes, ask whether the text is complete."""

    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        self.core = parser_core(compiled)
        self._dfas = [t.dfa for t in compiled.terminals]
        self.items: frozenset[Item] = self._initial()
        self.consumed = 0

    def _initial(self) -> frozenset[Item]:
        return frozenset((r, t, 0) for r, t in self.core.openings(self.core.root_level))

    def reset(self) -> None:
        self.items = self._initial()
        self.consumed = 0

    def clone(self) -> "Recognizer":
        twin = object.__new__(Recognizer)
        twin.compiled, twin.core, twin._dfas = self.compiled, self.core, self._dfas
        twin.items, twin.consumed = self.items, self.consumed
        return twin

    # -- stepping ---------------------------------------------------------------------
    def step(self, items: frozenset[Item], byte: int) -> frozenset[Item]:
        """The items after one more byte (empty: the byte cannot continue the text)."""
        out: set[Item] = set()
        ended: set[tuple[Node, int]] = set()
        for node, t, q in items:
            dfa = self._dfas[t]
            q2 = int(dfa.trans[q, byte])
            if q2 < 0:
                continue
            out.add((node, t, q2))
            if dfa.accept[q2]:
                ended.add((node, t))
        if ended:
            out.update((r, t2, 0) for r, t2 in self.core.openings(self.core.level(frozenset(ended))))
        return frozenset(out)

    def feed(self, data: bytes | str) -> bool:
        """Consume `data` if the text stays a viable prefix; otherwise change nothing."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        items = self.items
        for byte in data:
            items = self.step(items, byte)
            if not items:
                return False
        self.items = items
        self.consumed += len(data)
        return True

    def is_complete(self) -> bool:
        """Whether the text fed so far is a string of the language."""
        if self.consumed == 0 and self.compiled.accepts_empty:
            return True
        ended = frozenset((node, t) for node, t, q in self.items if self._dfas[t].accept[q])
        return bool(ended) and self.core.level(ended).accepting

    def next_bytes(self) -> set[int]:
        """The bytes that keep the text a viable prefix."""
        return _next_bytes(self._dfas, self.items)

    def expected(self) -> tuple[str, ...]:
        """Names of the terminals that could continue the text (sorted, unique)."""
        names = {self.compiled.terminals[t].name for _, t, _ in self.items}
        return tuple(sorted(names))

    # -- one-shot questions -----------------------------------------------------------
    def accepts(self, text: bytes | str) -> bool:
        twin = self.clone()
        twin.reset()
        return twin.feed(text) and twin.is_complete()

    def is_prefix(self, text: bytes | str) -> bool:
        twin = self.clone()
        twin.reset()
        return twin.feed(text)

    def first_failure(self, text: bytes | str) -> Failure | None:
        """None if `text` is a viable prefix, else the offset of the first bad byte."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        items = self._initial()
        for offset, byte in enumerate(text):
            nxt = self.step(items, byte)
            if not nxt:
                names = {self.compiled.terminals[t].name for _, t, _ in items}
                return Failure(offset, tuple(sorted(names)), frozenset(_next_bytes(self._dfas, items)))
            items = nxt
        return None


def _next_bytes(dfas, items) -> set[int]:
    out: set[int] = set()
    for _, t, q in items:
        out.update(int(b) for b in (dfas[t].trans[q] >= 0).nonzero()[0])
    return out
