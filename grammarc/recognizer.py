"""A scannerless GLR recognizer over bytes: the reference semantics of a compiled grammar.

A configuration is an *item* ``(stack, terminal, dfa_state)``: the LR stack is ready to
shift `terminal` (every reduction for that lookahead done), and the lexer is part way
through it. Each byte advances every item's DFA; an item whose DFA accepts may also end
its terminal — shift it, then open an item for each terminal the new stack can take next.
Nothing is ever disambiguated: every split of the text into terminals that the grammar
allows stays alive, so membership is exactly the language of DESIGN.md §4.

Stacks are interned linked nodes, so equal stacks are the same object and the set of
items deduplicates; `ParserCore` memoizes reductions per (stack, lookahead).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from .compiler import CompiledGrammar
from .lr import EOF


class Stack:
    """An interned LR stack: `state` on top of `parent`. Compare by identity."""

    __slots__ = ("state", "parent", "depth", "__weakref__")

    def __init__(self, state: int, parent: "Stack | None"):
        self.state = state
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1

    def states(self) -> list[int]:
        out, node = [], self
        while node is not None:
            out.append(node.state)
            node = node.parent
        return out[::-1]

    def __repr__(self) -> str:
        return f"Stack({self.states()})"


class ParserCore:
    """GLR stack operations over one compiled grammar's tables, memoized.

    Shared by every recognizer and engine of that grammar (one per CompiledGrammar); it
    only grows caches, so sharing it never changes an answer.
    """

    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        self.action = compiled.tables.action
        self.goto = compiled.tables.goto
        self.rhs_len = [len(p.rhs) for p in compiled.bnf.productions]
        self.lhs = [p.lhs for p in compiled.bnf.productions]
        self._nodes: dict[tuple[int, int], Stack] = {}
        self.root = self.push(None, 0)
        self._ready: dict[tuple[Stack, int], tuple[Stack, ...]] = {}
        self._expected: dict[Stack, tuple[int, ...]] = {}
        self._shift: dict[tuple[Stack, int], Stack] = {}

    def push(self, parent: Stack | None, state: int) -> Stack:
        key = (state, id(parent))
        node = self._nodes.get(key)
        if node is None:
            node = self._nodes[key] = Stack(state, parent)
        return node

    def ready(self, node: Stack, terminal: int) -> tuple[Stack, ...]:
        """The stacks reachable from `node` by reductions on lookahead `terminal` that can
        shift it (for `EOF`: that accept)."""
        key = (node, terminal)
        cached = self._ready.get(key)
        if cached is not None:
            return cached
        result: list[Stack] = []
        seen = {node}
        work = [node]
        while work:
            top = work.pop()
            for act in self.action[top.state].get(terminal, ()):
                if act >= 0 or act == -1:  # shift, or reduce production 0 = accept
                    if top not in result:
                        result.append(top)
                    continue
                prod = ~act
                base = top
                for _ in range(self.rhs_len[prod]):
                    base = base.parent
                reduced = self.push(base, self.goto[base.state][self.lhs[prod]])
                if reduced not in seen:
                    seen.add(reduced)
                    work.append(reduced)
        out = tuple(result)
        self._ready[key] = out
        return out

    def shift(self, node: Stack, terminal: int) -> Stack:
        """Push the shift target of `terminal` (the caller got `node` from `ready`)."""
        key = (node, terminal)
        pushed = self._shift.get(key)
        if pushed is None:
            target = next(a for a in self.action[node.state][terminal] if a >= 0)
            pushed = self._shift[key] = self.push(node, target)
        return pushed

    def expected(self, node: Stack) -> tuple[int, ...]:
        """Terminals that can come next after the text that built `node`."""
        cached = self._expected.get(node)
        if cached is None:
            cached = tuple(t for t in self.action[node.state] if t != EOF and self.ready(node, t))
            self._expected[node] = cached
        return cached

    def accepts_eof(self, node: Stack) -> bool:
        return bool(self.ready(node, EOF))

    def openings(self, node: Stack) -> list[tuple[Stack, int]]:
        """Every (ready stack, terminal) pair a new terminal may start from."""
        return [(r, t) for t in self.expected(node) for r in self.ready(node, t)]


_cores: "weakref.WeakKeyDictionary[CompiledGrammar, ParserCore]" = weakref.WeakKeyDictionary()


def parser_core(compiled: CompiledGrammar) -> ParserCore:
    """The shared `ParserCore` of a compiled grammar."""
    core = _cores.get(compiled)
    if core is None:
        core = _cores[compiled] = ParserCore(compiled)
    return core


Item = tuple[Stack, int, int]  # (stack ready to shift terminal, terminal, dfa state)


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
        return frozenset((r, t, 0) for r, t in self.core.openings(self.core.root))

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
        core = self.core
        for node, t, q in items:
            dfa = self._dfas[t]
            q2 = int(dfa.trans[q, byte])
            if q2 < 0:
                continue
            out.add((node, t, q2))
            if dfa.accept[q2]:
                for r, t2 in core.openings(core.shift(node, t)):
                    out.add((r, t2, 0))
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
        core = self.core
        return any(
            self._dfas[t].accept[q] and core.accepts_eof(core.shift(node, t))
            for node, t, q in self.items
            if q != 0 or self._dfas[t].accept[0]
        )

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
