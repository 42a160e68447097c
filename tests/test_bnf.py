"""The BNF normalisation of the compiled core (grammarc.lowering._lalr, ``_bnf.c``) against the
Python it replaced (tests/bnf_reference.py): the same grammars, numbered alike, on random
productions (ε, unit cycles, unproductive rules, more than two nullable symbols)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

import bnf_reference as reference
from grammarc.lowering import _lalr, bnf


@st.composite
def _grammars(draw):
    """(productions, number of nonterminals, start, usable terminals) as the lowering makes them."""
    n = draw(st.integers(1, 7))
    symbol = st.one_of(st.integers(0, 4), st.integers(0, n - 1).map(lambda j: ~j))
    productions = draw(st.lists(st.tuples(st.integers(0, n - 1), st.lists(symbol, max_size=5).map(tuple)),
                                max_size=16))
    return productions, n, draw(st.integers(0, n - 1)), draw(st.frozensets(st.integers(0, 4)))


@settings(max_examples=500, deadline=None)
@given(_grammars())
def test_normalize_gives_the_grammar_the_python_one_gave(grammar):
    productions, n, start, usable = grammar
    expected_productive = reference.derivers(productions, usable.__contains__)
    flat = bnf.Flat.of(productions)
    productive = bnf.derivers(flat, n, bytes(t in usable for t in range(5)))
    assert {j for j in range(n) if productive[j]} == expected_productive
    names, expected_names = [f"r{j}" for j in range(n)], [f"r{j}" for j in range(n)]
    terminals = [f"t{t}" for t in range(5)]
    got = bnf.normalize(flat, names, terminals, start, productive)
    assert got == reference.normalize(productions, expected_names, terminals, start, expected_productive)
    assert names == expected_names


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, n - 1), max_size=n),
    st.lists(st.lists(st.integers(0, n + 2), max_size=4), min_size=n + 3, max_size=n + 3))))
def test_sccs_gives_the_components_in_the_order_the_python_one_did(graph):
    """The same components, members in the same order, sinks first; roots in the order given
    (repeated ones skipped), successors met outside them included."""
    roots, successors = graph
    names = [f"n{v}" for v in range(len(successors))]
    step = lambda name: [names[w] for w in successors[int(name[1:])]]  # noqa: E731
    roots = [names[v] for v in roots]
    assert bnf.sccs(roots, step) == reference.sccs(roots, step)


@pytest.mark.parametrize("args", [
    (bytes(4), bytes(0), bytes(0), 1, 0, b"\1"),  # starts of the wrong item size
    (bnf.Flat.of([(0, (~3,))]).lhs, bnf.Flat.of([(0, (~3,))]).starts, bnf.Flat.of([(0, (~3,))]).rhs, 2, 0, b"\1\1"),
    (bnf.Flat.of([(2, ())]).lhs, bnf.Flat.of([(2, ())]).starts, bnf.Flat.of([(2, ())]).rhs, 2, 0, b"\1\1"),
    (bnf.Flat.of([]).lhs, bnf.Flat.of([]).starts, bnf.Flat.of([]).rhs, 2, 5, b"\1\1"),
])
def test_the_core_refuses_malformed_productions(args):
    with pytest.raises((ValueError, TypeError)):
        _lalr.normalize(*args)
