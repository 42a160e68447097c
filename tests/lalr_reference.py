"""Test oracle: LALR(1) tables by the first implementation: the LR(0) automaton over
(production, dot) pairs with a closure per state, lookaheads as integer bitsets computed by
a plain fixed-point iteration, and the tables assembled from them (rows in lr.py's canonical
key order); kept to check grammarc.lowering.lr (in C: grammarc.lowering._lalr, DeRemer and
Pennello's lookaheads) against."""

from __future__ import annotations

from typing import NamedTuple

from grammarc.lowering.lr import EOF, Bnf

Item = tuple[int, int]  # (production index, dot position)


class RowTables(NamedTuple):
    """ACTION and GOTO rows, as `grammarc.lowering.lr.LRTables.action` and `.goto` read."""

    action: tuple[dict[int, tuple[int, ...]], ...]
    goto: tuple[dict[int, int], ...]


def reference_tables(bnf: Bnf) -> RowTables:
    by_lhs = _productions_by_lhs(bnf)
    first = _first_sets(bnf, by_lhs)
    states, _, transitions = _lr0_automaton(bnf, by_lhs)
    lookaheads = _lalr_lookaheads(bnf, by_lhs, first, states, transitions)
    as_sets = [{item: set(_bits(bits)) for item, bits in row.items()} for row in lookaheads]
    return _tables(bnf, states, transitions, as_sets)


def _productions_by_lhs(bnf: Bnf) -> list[list[int]]:
    by_lhs: list[list[int]] = [[] for _ in bnf.nonterminals]
    for index, production in enumerate(bnf.productions):
        by_lhs[production.lhs].append(index)
    return by_lhs


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


def _tables(bnf, states, transitions, lookaheads) -> RowTables:
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
        for (prod, dot), terminals in sorted(lookaheads[state].items()):  # lr.py's row order
            if dot != len(bnf.productions[prod].rhs):
                continue
            for terminal in sorted(terminals):
                key = EOF if terminal == bnf.n_terminals else terminal
                row.setdefault(key, []).append(~prod)
        action.append({key: tuple(sorted(set(acts), reverse=True)) for key, acts in row.items()})
        goto.append(gotos)
    return RowTables(tuple(action), tuple(goto))


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


def _bits(bits: int):
    index = 0
    while bits:
        if bits & 1:
            yield index
        bits >>= 1
        index += 1


def runtime_rows(action, lhs: list[int], rhs_len: list[int], accept_state: int | None) -> tuple[list, ...]:
    """The oracle of what grammarc.runtime.gss.ParserCore reads of each ACTION row (read
    back with `Core._rows`): terminal -> shift target; (lhs, rhs length, lookaheads) per reduced
    production, ascending; those productions; the shifted terminals, and EOF where the state
    accepts, ascending."""
    shift_to, reducing, reduces, own = [], [], [], []
    for s, row in enumerate(action):
        shifts = {t: a for t, actions in row.items() if t != EOF for a in actions if a >= 0}
        lookaheads: dict[int, set[int]] = {}
        for t, actions in row.items():
            for a in actions:
                if a < -1:  # -1 reduces production 0 on EOF: accepting
                    lookaheads.setdefault(~a, set()).add(t)
        shift_to.append(shifts)
        reducing.append(tuple((lhs[p], rhs_len[p], frozenset(la)) for p, la in sorted(lookaheads.items())))
        reduces.append(tuple(sorted(lookaheads)))
        own.append(tuple(sorted(set(shifts) | ({EOF} if s == accept_state else set()))))
    return shift_to, reducing, reduces, own
