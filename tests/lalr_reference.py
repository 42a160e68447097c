"""Test oracle: LALR(1) tables by the first implementation (lookaheads as integer bitsets,
computed by a plain fixed-point iteration), kept to check the worklist version against."""

from __future__ import annotations

from grammarc.lowering.lr import Bnf, LRTables, _closure, _lr0_automaton, _productions_by_lhs, _tables


def reference_tables(bnf: Bnf) -> LRTables:
    by_lhs = _productions_by_lhs(bnf)
    first = _first_sets(bnf, by_lhs)
    states, _, transitions = _lr0_automaton(bnf, by_lhs)
    lookaheads = _lalr_lookaheads(bnf, by_lhs, first, states, transitions)
    # Only the lookaheads are under test: the tables are assembled as lr.py assembles them.
    as_sets = [{item: set(_bits(bits)) for item, bits in row.items()} for row in lookaheads]
    return _tables(bnf, states, transitions, as_sets)


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
