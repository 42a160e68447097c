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


@dataclass(frozen=True)
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


Item = tuple[int, int]  # (production index, dot position)


def build_tables(bnf: Bnf) -> LRTables:
    """LALR(1) tables: the LR(0) automaton, with lookaheads computed to a fixed point."""
    by_lhs = _productions_by_lhs(bnf)
    first = _first_sets(bnf, by_lhs)
    states, closures, transitions = _lr0_automaton(bnf, by_lhs)
    lookaheads = _lalr_lookaheads(bnf, by_lhs, first, closures, transitions)
    return _tables(bnf, states, transitions, lookaheads)


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


def _closure(bnf: Bnf, by_lhs: list[list[int]], kernel: frozenset[Item]) -> list[Item]:
    items = list(kernel)
    seen = set(kernel)
    added_lhs: set[int] = set()
    for prod, dot in items:  # grows while iterating
        rhs = bnf.productions[prod].rhs
        if dot < len(rhs) and not bnf.is_terminal(rhs[dot]):
            nt = rhs[dot] - bnf.n_terminals
            if nt not in added_lhs:
                added_lhs.add(nt)
                for p in by_lhs[nt]:
                    if (p, 0) not in seen:
                        seen.add((p, 0))
                        items.append((p, 0))
    return items


def _lr0_automaton(bnf: Bnf, by_lhs: list[list[int]]):
    start = frozenset({(0, 0)})
    states: list[frozenset[Item]] = [start]
    index = {start: 0}
    transitions: list[dict[int, int]] = []
    closures: list[list[Item]] = []
    for kernel in states:  # grows while iterating
        moves: dict[int, set[Item]] = {}
        closures.append(closure := _closure(bnf, by_lhs, kernel))
        for prod, dot in closure:
            rhs = bnf.productions[prod].rhs
            if dot < len(rhs):
                moves.setdefault(rhs[dot], set()).add((prod, dot + 1))
        row: dict[int, int] = {}
        for symbol in sorted(moves):
            target = frozenset(moves[symbol])
            if target not in index:
                index[target] = len(states)
                states.append(target)
            row[symbol] = index[target]
        transitions.append(row)
    return states, closures, transitions


def _lalr_lookaheads(bnf, by_lhs, first, closures, transitions) -> list[dict[Item, set[int]]]:
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
    n_terminals, productions = bnf.n_terminals, bnf.productions
    kernel_la: list[dict[Item, set[int]]] = [{} for _ in closures]
    predicted: list[dict[int, set[int]]] = [{} for _ in closures]  # state -> B -> lookaheads
    work: list[tuple[int, Item | int, set[int]]] = []  # (state, kernel item or predicted B, what is new)

    def add(state: int, key: Item | int, found: set[int]) -> None:
        table = kernel_la[state] if type(key) is tuple else predicted[state]
        current = table.get(key)
        if current is None:
            table[key] = new = set(found)
        else:
            new = found - current
            current |= new
        if new:
            work.append((state, key, new))

    # what each production's second symbol brings to the prediction of its first
    seeds: list[dict[int, set[int]]] = [{} for _ in by_lhs]  # B -> C -> FIRST of what follows C in B's productions
    for b, prods in enumerate(by_lhs):
        for p in prods:
            rhs = productions[p].rhs
            if len(rhs) > 1 and rhs[0] >= n_terminals:
                nxt = rhs[1]
                seeds[b].setdefault(rhs[0], set()).update((nxt,) if nxt < n_terminals else first[nxt - n_terminals])
    add(0, (0, 0), {n_terminals})
    for state, items in enumerate(closures):
        for prod, dot in items:
            rhs = productions[prod].rhs
            if dot == 0 and (prod, dot) != (0, 0):
                continue  # a prediction: its spontaneous sets are its nonterminal's seeds, below
            if dot + 1 < len(rhs) and rhs[dot] >= n_terminals:
                nxt = rhs[dot + 1]
                add(state, rhs[dot], {nxt} if nxt < n_terminals else first[nxt - n_terminals])
        for b in {productions[p].lhs for p, dot in items if dot == 0 and p}:
            for c, found in seeds[b].items():
                add(state, c, found)
    while work:
        state, key, new = work.pop()
        if type(key) is tuple:
            prod, dot = key
            rhs = productions[prod].rhs
            if dot == len(rhs):
                continue
            symbol = rhs[dot]
            add(transitions[state][symbol], (prod, dot + 1), new)
            if symbol >= n_terminals and dot + 1 == len(rhs):
                add(state, symbol, new)
        else:  # every production of the predicted nonterminal, at its start
            for p in by_lhs[key - n_terminals]:
                rhs = productions[p].rhs
                symbol = rhs[0]
                add(transitions[state][symbol], (p, 1), new)
                if symbol >= n_terminals and len(rhs) == 1:
                    add(state, symbol, new)
    return kernel_la


def _tables(bnf, states, transitions, lookaheads) -> LRTables:
    action: list[dict[int, tuple[int, ...]]] = []
    goto: list[dict[int, int]] = []
    for state in range(len(states)):
        row: dict[int, list[int]] = {}
        gotos: dict[int, int] = {}
        for symbol, target in transitions[state].items():
            if bnf.is_terminal(symbol):
                row.setdefault(symbol, []).append(target)
            else:
                gotos[symbol - bnf.n_terminals] = target
        for (prod, dot), terminals in lookaheads[state].items():
            if dot != len(bnf.productions[prod].rhs):
                continue
            for terminal in sorted(terminals):
                key = EOF if terminal == bnf.n_terminals else terminal
                row.setdefault(key, []).append(~prod)
        action.append({key: tuple(sorted(set(acts), reverse=True)) for key, acts in row.items()})
        goto.append(gotos)
    return LRTables(tuple(action), tuple(goto))
