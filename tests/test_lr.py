"""LALR(1) tables (grammarc.lowering.lr) against the first, bitset-based implementation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc
from grammarc.lowering.lr import Bnf, Production, build_tables
from lalr_reference import reference_tables

STDLIB = ["json", "arithmetic", "c", "xml", "csv", "sql"]


def test_stdlib_tables_match_the_reference() -> None:
    for name in STDLIB:
        try:
            bnf = grammarc.stdlib(name).compile().bnf
        except (KeyError, FileNotFoundError, ValueError):
            continue
        assert build_tables(bnf) == reference_tables(bnf), name


@st.composite
def bnfs(draw) -> Bnf:
    """Random ε-free BNFs: production 0 is S' -> S; every nonterminal has a production."""
    n_t = draw(st.integers(1, 4))
    n_nt = draw(st.integers(1, 5))
    symbols = st.integers(0, n_t + n_nt - 1)
    prods = [Production(0, (n_t + 1,))] if n_nt > 1 else [Production(0, (0,))]
    for lhs in range(1, n_nt):
        for _ in range(draw(st.integers(1, 3))):
            rhs = tuple(draw(st.lists(symbols.filter(lambda s: s != n_t), min_size=1, max_size=4)))
            prods.append(Production(lhs, rhs))
    return Bnf(n_t, tuple(f"n{i}" for i in range(n_nt)), tuple(prods))


@given(bnfs())
@settings(max_examples=300, deadline=None)
def test_random_tables_match_the_reference(bnf: Bnf) -> None:
    assert build_tables(bnf) == reference_tables(bnf)
