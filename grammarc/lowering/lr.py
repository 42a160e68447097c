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
    states, transitions = _lr0_automaton(bnf, by_lhs)
    lookaheads = _lalr_lookaheads(bnf, by_lhs, first, states, transitions)
    return _tables(bnf, states, transitions, lookaheads)


def _productions_by_lhs(bnf: Bnf) -> list[list[int]]:
    by_lhs: list[list[int]] = [[] for _ in bnf.nonterminals]
    for index, production in enumerate(bnf.productions):
        by_lhs[production.lhs].append(index)
    return by_lhs


def _first_sets(bnf: Bnf, by_lhs: list[list[int]]) -> list[int]:
    """FIRST of each nonterminal as a bitset of terminals (no symbol is nullable)."""
    first = [0] * len(bnf.nonterminals)
    changed = True
    while changed:
        changed = False
        for production in bnf.productions:
            head = production.rhs[0]
            bits = 1 << head if bnf.is_terminal(head) else first[head - bnf.n_terminals]
            if bits & ~first[production.lhs]:
                first[production.lhs] |= bits
                changed = True
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
    for kernel in states:  # grows while iterating
        moves: dict[int, set[Item]] = {}
        for prod, dot in _closure(bnf, by_lhs, kernel):
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
    return states, transitions


def _lalr_lookaheads(bnf, by_lhs, first, states, transitions) -> list[dict[Item, int]]:
    """Lookahead bitsets for every item of every state's closure (bit n_terminals = EOF)."""
    eof_bit = 1 << bnf.n_terminals
    closures = [_closure(bnf, by_lhs, kernel) for kernel in states]
    la: list[dict[Item, int]] = [{item: 0 for item in items} for items in closures]
    la[0][(0, 0)] = eof_bit
    changed = True
    while changed:
        changed = False
        for state, items in enumerate(closures):
            table = la[state]
            for item in items:  # closure order: predicted items follow their predictors
                prod, dot = item
                rhs = bnf.productions[prod].rhs
                bits = table[item]
                if dot == len(rhs):
                    continue
                symbol = rhs[dot]
                target = transitions[state][symbol]
                moved = (prod, dot + 1)
                if bits & ~la[target][moved]:
                    la[target][moved] |= bits
                    changed = True
                if not bnf.is_terminal(symbol):
                    if dot + 1 < len(rhs):
                        nxt = rhs[dot + 1]
                        follow = 1 << nxt if bnf.is_terminal(nxt) else first[nxt - bnf.n_terminals]
                    else:
                        follow = bits
                    for p in by_lhs[symbol - bnf.n_terminals]:
                        if follow & ~table[(p, 0)]:
                            table[(p, 0)] |= follow
                            changed = True
    return la


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
        for (prod, dot), bits in lookaheads[state].items():
            if dot != len(bnf.productions[prod].rhs):
                continue
            for terminal in _bits(bits):
                key = EOF if terminal == bnf.n_terminals else terminal
                row.setdefault(key, []).append(~prod)
        action.append({key: tuple(sorted(set(acts), reverse=True)) for key, acts in row.items()})
        goto.append(gotos)
    return LRTables(tuple(action), tuple(goto))


def _bits(bits: int):
    index = 0
    while bits:
        if bits & 1:
            yield index
        bits >>= 1
        index += 1
