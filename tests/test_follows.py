"""`ParserCore.follows` (read off the LR tables, in C) against the plain definition over the
grammar: a round-robin fixpoint over FIRST/LAST sets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc
import grammarc.stdlib_grammars as stdlib_grammars
import strategies
from grammarc.lowering.compiler import compile_grammar
from grammarc.lowering.lr import Bnf
from grammarc.runtime.gss import parser_core


def follows(compiled) -> list[frozenset[int]]:
    return [frozenset(row) for row in parser_core(compiled).follows(compiled.bnf.n_terminals)]


def reference(bnf: Bnf) -> list[frozenset[int]]:
    n_t = bnf.n_terminals
    first = [set() for _ in bnf.nonterminals]
    last = [set() for _ in bnf.nonterminals]

    def edge_set(sets, symbol):
        return {symbol} if symbol < n_t else sets[symbol - n_t]

    changed = True
    while changed:
        changed = False
        for prod in bnf.productions:
            for sets, symbol in ((first, prod.rhs[0]), (last, prod.rhs[-1])):
                new = edge_set(sets, symbol) - sets[prod.lhs]
                if new:
                    sets[prod.lhs] |= new
                    changed = True
    out: list[set[int]] = [set() for _ in range(n_t)]
    for prod in bnf.productions:
        for x, y in zip(prod.rhs, prod.rhs[1:]):
            for a in edge_set(last, x):
                out[a] |= edge_set(first, y)
    return [frozenset(s) for s in out]


def test_stdlib_grammars():
    for name in stdlib_grammars.names():
        compiled = grammarc.stdlib(name).compile()
        assert follows(compiled) == reference(compiled.bnf), name


def test_a_known_grammar():
    """`start ::= "a" x "c"; x ::= "b" | x "b";`: after a comes b, after b comes b or c."""
    compiled = grammarc.Grammar.from_ebnf('start ::= "a" x "c"; x ::= "b" | x "b";').compile()
    names = [t.name for t in compiled.terminals]
    got = {names[t]: sorted(names[u] for u in after) for t, after in enumerate(follows(compiled))}
    a, b, c = ('"a"', '"b"', '"c"')
    assert got == {a: [b], b: sorted([b, c]), c: []}


@settings(max_examples=150, deadline=None)
@given(alphabet=st.sampled_from(["ab", "abc"]), data=st.data())
def test_random_grammars(alphabet, data):
    grammar = data.draw(strategies.grammars(alphabet))
    compiled = compile_grammar(grammar)
    assert follows(compiled) == reference(compiled.bnf)
