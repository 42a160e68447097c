"""LALR(1) parse tables that keep every conflict.

The input is an ε-free BNF grammar over integer symbols (see `Bnf`). The tables are
built like any LALR(1) generator's, except that a conflict is not an error: an ACTION
cell simply holds several actions, and the runtime (recognizer and engine) follows all of
them, GLR-style. Deterministic grammars produce cells of one action and never fork.

Because the grammar has no ε-productions and no cycles of unit productions (the compiler
guarantees both), every reduction pops at least one stack entry and chains of unit
reductions are finite, so following all actions always terminates.
"""

from __future__ import annotations

from dataclasses import dataclass

EOF = -1  # the end-of-text lookahead


@dataclass(frozen=True, slots=True)  # no per-production dict: compiled grammars keep tens of thousands
class Production:
    """``lhs -> rhs``; `lhs` is a nonterminal index, `rhs` a non-empty tuple of symbols."""

    lhs: int
    rhs: tuple[int, ...]


@dataclass(frozen=True)
class Bnf:
    """An ε-free grammar. Symbols ``0 <= s < n_terminals`` are terminals; a nonterminal with
    index ``k`` is the symbol ``n_terminals + k``. Production 0 must be the augmented start
    production ``S' -> S``."""

    n_terminals: int
    nonterminals: tuple[str, ...]
    productions: tuple[Production, ...]

    def is_terminal(self, symbol: int) -> bool:
        return symbol < self.n_terminals

    def nonterminal_symbol(self, index: int) -> int:
        return self.n_terminals + index


@dataclass(frozen=True)
class LRTables:
    """ACTION and GOTO for every LR state; state 0 is the initial state.

    ``action[s]`` maps a terminal (or `EOF`) to a tuple of actions: ``a >= 0`` shifts to
    state ``a``; ``a < 0`` reduces production ``~a``; reducing production 0 on EOF accepts.
    ``goto[s]`` maps a nonterminal index to a state.
    """

    action: tuple[dict[int, tuple[int, ...]], ...]
    goto: tuple[dict[int, int], ...]

    @property
    def n_states(self) -> int:
        return len(self.action)

    def conflicts(self) -> list[tuple[int, int, tuple[int, ...]]]:
        """Every (state, lookahead, actions) cell holding more than one action."""
        return [
            (state, lookahead, actions)
            for state, row in enumerate(self.action)
            for lookahead, actions in sorted(row.items())
            if len(actions) > 1
        ]


def build_tables(bnf: Bnf) -> LRTables:
    """LALR(1) tables: the LR(0) automaton, with lookaheads computed to a fixed point."""
    items = _Items(bnf)
    by_lhs = _productions_by_lhs(bnf)
    first = _first_sets(bnf, by_lhs)
    kernels, transitions = _lr0_automaton(bnf, items, by_lhs)
    lookaheads = _lalr_lookaheads(bnf, items, by_lhs, first, kernels, transitions)
    return _tables(bnf, items, transitions, lookaheads)


class _Items:
    """LR(0) items as integers: production p's items are ``base[p] + dot`` for dot 0..len,
    so moving the dot past a symbol adds one. `after[i]` is the symbol after item i's dot
    (-1 once the production is complete), `production[i]` its production. Integers hash
    and compare faster than (production, dot) pairs; a state's kernel is a frozenset of
    them."""

    __slots__ = ("base", "after", "production")

    def __init__(self, bnf: Bnf):
        self.base: list[int] = []
        self.after: list[int] = []
        self.production: list[int] = []
        for p, production in enumerate(bnf.productions):
            self.base.append(len(self.after))
            self.after.extend(production.rhs)
            self.after.append(-1)
            self.production.extend([p] * (len(production.rhs) + 1))


def _productions_by_lhs(bnf: Bnf) -> list[list[int]]:
    by_lhs: list[list[int]] = [[] for _ in bnf.nonterminals]
    for index, production in enumerate(bnf.productions):
        by_lhs[production.lhs].append(index)
    return by_lhs


def _first_sets(bnf: Bnf, by_lhs: list[list[int]]) -> list[set[int]]:
    """FIRST of each nonterminal, a set of terminals (no symbol is nullable).

    A worklist over "FIRST(lhs) includes FIRST(head)" edges that passes on only what a set
    gained, so the cost follows the sizes of the sets, not the length of rule chains.
    """
    n_terminals = bnf.n_terminals
    first: list[set[int]] = [set() for _ in bnf.nonterminals]
    users: list[list[int]] = [[] for _ in bnf.nonterminals]
    for production in bnf.productions:
        head = production.rhs[0]
        if head < n_terminals:
            first[production.lhs].add(head)
        else:
            users[head - n_terminals].append(production.lhs)
    work = [(nt, set(found)) for nt, found in enumerate(first) if found]
    while work:
        nt, new = work.pop()  # what FIRST(nt) gained last
        for user in users[nt]:
            theirs = first[user]
            gained = new - theirs
            if gained:
                theirs |= gained
                work.append((user, gained))
    return first


def _lr0_automaton(bnf: Bnf, items: _Items, by_lhs: list[list[int]]):
    """The kernels of the LR(0) states (state 0 first, then in the order they are found,
    symbols ascending) and each state's transitions, symbol -> state.

    A state's closure is its kernel plus the start items of every nonterminal it predicts:
    one after a kernel item's dot, and every nonterminal that begins one of the predicted
    productions, transitively. That set depends on the nonterminal alone, so it is found
    once per nonterminal (`reach`), not once per state."""
    n_terminals, after, base = bnf.n_terminals, items.after, items.base
    reach: dict[int, frozenset[int]] = {}
    start = frozenset((base[0],))
    kernels: list[frozenset[int]] = [start]
    index = {start: 0}
    transitions: list[dict[int, int]] = []
    for kernel in kernels:  # grows while iterating
        moves: dict[int, list[int]] = {}
        predicted: set[int] = set()
        for i in kernel:
            symbol = after[i]
            if symbol >= 0:
                moves.setdefault(symbol, []).append(i + 1)
                if symbol >= n_terminals and symbol not in predicted:
                    found = reach.get(symbol)
                    if found is None:
                        found = reach[symbol] = _predicted(symbol, n_terminals, after, base, by_lhs)
                    predicted |= found
        for symbol in predicted:
            for p in by_lhs[symbol - n_terminals]:
                i = base[p]
                moves.setdefault(after[i], []).append(i + 1)
        row: dict[int, int] = {}
        for symbol in sorted(moves):
            target = frozenset(moves[symbol])
            state = index.get(target)
            if state is None:
                state = index[target] = len(kernels)
                kernels.append(target)
            row[symbol] = state
        transitions.append(row)
    return kernels, transitions


def _predicted(symbol: int, n_terminals: int, after: list[int], base: list[int],
               by_lhs: list[list[int]]) -> frozenset[int]:
    """The nonterminals predicted with `symbol`: itself, and those its productions begin
    with, transitively."""
    seen = {symbol}
    todo = [symbol]
    while todo:
        for p in by_lhs[todo.pop() - n_terminals]:
            head = after[base[p]]
            if head >= n_terminals and head not in seen:
                seen.add(head)
                todo.append(head)
    return frozenset(seen)


def _lalr_lookaheads(bnf, items, by_lhs, first, kernels, transitions) -> list[dict[int, set[int]]]:
    """Lookahead sets of the kernel items of every state (terminal n_terminals = EOF): the
    only items that complete (no production is empty), so the only ones the tables read.

    The classic two phases: lookaheads generated spontaneously (FIRST of what follows a
    nonterminal), then propagated along shifts and predictions with a worklist that
    carries only what is new. The items a state predicts for a nonterminal B, ``B -> .γ``
    for every production of B, always receive the same sets, so they are kept once per
    (state, B): a prediction, propagated to each production's shift when it grows. Sets,
    not bitsets: a grammar with 100k terminals has small lookahead sets, and their cost
    follows their size, not the number of terminals.
    """
    n_terminals, after, base = bnf.n_terminals, items.after, items.base
    kernel_la: list[dict[int, set[int]]] = [{} for _ in kernels]
    predicted: list[dict[int, set[int]]] = [{} for _ in kernels]  # state -> B -> lookaheads
    # (state, key, what is new): key >= 0 is a kernel item, key < 0 the prediction of ~key
    work: list[tuple[int, int, set[int]]] = []

    def add(state: int, key: int, found: set[int]) -> None:
        table = kernel_la[state] if key >= 0 else predicted[state]
        current = table.get(key)
        if current is None:
            table[key] = new = set(found)
        else:
            new = found - current
            current |= new
        if new:
            work.append((state, key, new))

    def follow(symbol: int) -> set[int]:
        return {symbol} if symbol < n_terminals else first[symbol - n_terminals]

    # per nonterminal B: the nonterminals its productions begin with, and what FIRST of the
    # next symbol brings to their predictions
    heads: list[set[int]] = [set() for _ in by_lhs]
    seeds: list[dict[int, set[int]]] = [{} for _ in by_lhs]
    for b, prods in enumerate(by_lhs):
        for p in prods:
            head, nxt = after[base[p]], after[base[p] + 1]
            if head >= n_terminals:
                heads[b].add(head)
                if nxt >= 0:
                    seeds[b].setdefault(head, set()).update(follow(nxt))
    add(0, base[0], {n_terminals})
    for state, kernel in enumerate(kernels):
        predicts: set[int] = set()
        todo: list[int] = []
        for i in kernel:
            symbol = after[i]
            if symbol >= n_terminals:
                if after[i + 1] >= 0:
                    add(state, ~symbol, follow(after[i + 1]))
                if symbol not in predicts:
                    predicts.add(symbol)
                    todo.append(symbol)
        while todo:  # the nonterminals this state predicts, each with its seeds
            b = todo.pop() - n_terminals
            for c, found in seeds[b].items():
                add(state, ~c, found)
            for c in heads[b]:
                if c not in predicts:
                    predicts.add(c)
                    todo.append(c)
    while work:
        state, key, new = work.pop()
        if key >= 0:
            symbol = after[key]
            if symbol < 0:
                continue
            add(transitions[state][symbol], key + 1, new)
            if symbol >= n_terminals and after[key + 1] < 0:
                add(state, ~symbol, new)
        else:  # every production of the predicted nonterminal, at its start
            for p in by_lhs[~key - n_terminals]:
                i = base[p]
                symbol = after[i]
                add(transitions[state][symbol], i + 1, new)
                if symbol >= n_terminals and after[i + 1] < 0:
                    add(state, ~symbol, new)
    return kernel_la


def _tables(bnf, items, transitions, lookaheads) -> LRTables:
    n_terminals, after, production = bnf.n_terminals, items.after, items.production
    action: list[dict[int, tuple[int, ...]]] = []
    goto: list[dict[int, int]] = []
    for state, moves in enumerate(transitions):
        row: dict[int, list[int]] = {}
        gotos: dict[int, int] = {}
        for symbol, target in moves.items():
            if symbol < n_terminals:
                row[symbol] = [target]
            else:
                gotos[symbol - n_terminals] = target
        for item in sorted(lookaheads[state]):  # a canonical order: rows are read in it (the disk cache)
            if after[item] >= 0:
                continue
            reduce = ~production[item]
            for terminal in sorted(lookaheads[state][item]):
                row.setdefault(EOF if terminal == n_terminals else terminal, []).append(reduce)
        action.append({key: tuple(sorted(set(acts), reverse=True)) for key, acts in row.items()})
        goto.append(gotos)
    return LRTables(tuple(action), tuple(goto))
