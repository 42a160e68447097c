"""`tokens.index.follows` (worklist over bitsets) against the plain definition: a
round-robin fixpoint over FIRST/LAST sets, the way it was first written."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc
import grammarc.stdlib_grammars as stdlib_grammars
import strategies
from grammarc.lowering.compiler import compile_grammar
from grammarc.lowering.lr import Bnf
from grammarc.tokens.index import follows


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
        bnf = grammarc.stdlib(name).compile().bnf
        assert follows(bnf) == reference(bnf), name


def test_a_known_grammar():
    """`start ::= "a" x "c"; x ::= "b" | x "b";`: after a comes b, after b comes b or c."""
    compiled = grammarc.Grammar.from_ebnf('start ::= "a" x "c"; x ::= "b" | x "b";').compile()
    names = [t.name for t in compiled.terminals]
    got = {names[t]: sorted(names[u] for u in after) for t, after in enumerate(follows(compiled.bnf))}
    a, b, c = ('"a"', '"b"', '"c"')
    assert got == {a: [b], b: sorted([b, c]), c: []}


@settings(max_examples=150, deadline=None)
@given(alphabet=st.sampled_from(["ab", "abc"]), data=st.data())
def test_random_grammars(alphabet, data):
    grammar = data.draw(strategies.grammars(alphabet))
    bnf = compile_grammar(grammar).bnf
    assert follows(bnf) == reference(bnf)
