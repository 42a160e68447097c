"""LALR(1) tables (grammarc.lowering.lr, built by grammarc.lowering._lalr) against the first,
bitset-based implementation: contents and the rows' key order; malformed grammars refused;
grammars of 20k rules and 100k terminals built."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc
from grammarc import stdlib_grammars
from grammarc.lowering import _lalr
from grammarc.lowering.lr import Bnf, Production, build_tables, flat_productions
from grammarc.runtime import _gss
from lalr_reference import reference_tables, runtime_rows

STDLIB = ["json", "arithmetic", "c", "xml", "csv", "sql"]


def test_stdlib_tables_and_their_row_order_match_the_reference() -> None:
    for name in STDLIB:
        bnf = grammarc.stdlib(name).compile().bnf
        assert _rows(build_tables(bnf)) == _rows(reference_tables(bnf)), name


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


@st.composite
def bnfs_with_the_start_inside(draw) -> Bnf:
    """Random ε-free BNFs where any symbol may appear in a right-hand side, S' included (so state 0
    may predict S' and have a transition on it), and production 0 may be longer than S' -> S."""
    n_t = draw(st.integers(1, 4))
    n_nt = draw(st.integers(2, 5))
    symbols = st.integers(0, n_t + n_nt - 1)
    prods = [Production(0, (draw(st.sampled_from([n_t + 1, 0])), *draw(st.lists(symbols, max_size=2))))]
    for lhs in range(1, n_nt):
        for _ in range(draw(st.integers(1, 3))):
            prods.append(Production(lhs, tuple(draw(st.lists(symbols, min_size=1, max_size=4)))))
    return Bnf(n_t, tuple(f"n{i}" for i in range(n_nt)), tuple(prods))


@given(bnfs_with_the_start_inside())
@settings(max_examples=300, deadline=None)
def test_tables_with_the_start_inside_match_the_reference(bnf: Bnf) -> None:
    assert _rows(build_tables(bnf)) == _rows(reference_tables(bnf))


def _rows(tables) -> tuple[list, list]:
    """Each row as its (key, cell) pairs in insertion order: the disk cache reads rows in it."""
    return [list(row.items()) for row in tables.action], [list(row.items()) for row in tables.goto]


@given(bnfs())
@settings(max_examples=300, deadline=None)
def test_random_rows_are_in_the_reference_order(bnf: Bnf) -> None:
    assert _rows(build_tables(bnf)) == _rows(reference_tables(bnf))


def _core_of(tables, bnf: Bnf) -> tuple[_gss.Core, int | None]:
    """A parser core set up on `tables` (of `bnf`), and the accepting state it found."""
    core = _gss.Core()
    lhs, starts, _ = flat_productions(bnf)
    return core, core._setup(tables.n_terminals, *tables.arrays(), lhs, starts, 1000)


def _runtime_rows_of(bnf: Bnf) -> tuple[tuple, tuple]:
    """(what the parser core read of the flat tables of `bnf`, its oracle's (shifts, reducing,
    own) read off the reference's rows)."""
    tables, reference = build_tables(bnf), reference_tables(bnf)
    core, accept_state = _core_of(tables, bnf)
    assert accept_state == reference.goto[0].get(1)
    shift_to, reducing, _, own = runtime_rows(reference.action, [p.lhs for p in bnf.productions],
                                              [len(p.rhs) for p in bnf.productions], accept_state)
    return tuple(core._rows(s) for s in range(tables.n_states)), tuple(zip(shift_to, reducing, own))


@given(bnfs_with_the_start_inside())
@settings(max_examples=300, deadline=None)
def test_what_the_runtime_reads_of_random_tables_matches_the_reference(bnf: Bnf) -> None:
    got, expected = _runtime_rows_of(bnf)
    assert got == expected
    assert [list(row[0]) for row in got] == [sorted(row[0]) for row in expected]  # shifts by ascending terminal


def test_what_the_runtime_reads_of_the_stdlib_tables_matches_the_reference() -> None:
    for name in STDLIB:
        got, expected = _runtime_rows_of(grammarc.stdlib(name).compile().bnf)
        assert got == expected, name


def _ints(array: bytes) -> list[int]:
    return np.frombuffer(array, np.int32).tolist()


def _packed(values: list[int]) -> bytes:
    return np.array(values, np.int32).tobytes()


@given(bnfs_with_the_start_inside())
@settings(max_examples=200, deadline=None)
def test_the_flat_arrays_have_their_documented_shape(bnf: Bnf) -> None:
    """lr.LRTables' invariants, read off the arrays directly (not through the views)."""
    tables = build_tables(bnf)
    trans_start, sym, to, red_start, prod, la_start, la = map(_ints, tables.arrays())
    n, t = tables.n_states, bnf.n_terminals
    assert len(trans_start) == len(red_start) == n + 1 and trans_start[0] == red_start[0] == la_start[0] == 0
    assert trans_start[-1] == len(sym) == len(to) and red_start[-1] == len(prod) == len(la_start) - 1
    assert la_start[-1] == len(la)
    for s in range(n):
        syms = sym[trans_start[s]:trans_start[s + 1]]
        assert syms == sorted(set(syms)) and all(0 <= x < t + len(bnf.nonterminals) for x in syms)
        assert all(0 <= x < n for x in to[trans_start[s]:trans_start[s + 1]])
        prods = prod[red_start[s]:red_start[s + 1]]
        assert prods == sorted(set(prods))
        for r in range(red_start[s], red_start[s + 1]):
            las = la[la_start[r]:la_start[r + 1]]
            assert las and las == sorted(set(las), key=lambda u: t if u == -1 else u)
    _lalr.check(t, len(bnf.productions), *tables.arrays())


def _malformed(tables, name: str, values: list[int]) -> tuple:
    arrays = dict(zip(("trans_start", "trans_sym", "trans_to", "red_start", "red_prod", "la_start", "la"),
                      tables.arrays()))
    arrays[name] = _packed(values)
    return tuple(arrays.values())


_ARITH = Bnf(2, ("S'", "E"), (Production(0, (3,)), Production(1, (3, 0, 3)), Production(1, (1,))))


@pytest.mark.parametrize("name, change, message", [
    ("trans_start", lambda a: [], "the tables must have at least one LR state"),
    ("trans_start", lambda a: [1] + a[1:], "the transitions' offsets do not match their arrays"),
    ("trans_sym", lambda a: a[:-1], "the transitions' offsets do not match their arrays"),
    ("trans_to", lambda a: a[:-1] + [10**6], "a transition to a state out of range"),
    ("trans_sym", lambda a: [a[1], a[0], *a[2:]], "a state's transitions are not by ascending symbol"),
    ("red_start", lambda a: a[:-1], "the reductions' offsets do not match their arrays"),
    ("la_start", lambda a: a[:1] + a[:-1], "the lookaheads' offsets do not match their arrays"),
    ("red_prod", lambda a: [9] * len(a), "a state's reductions are not by ascending production"),
    ("la", lambda a: [-1] * len(a), "a reduction's lookaheads are not ascending terminals (then EOF)"),
    ("la", lambda a: [5] * len(a), "a reduction's lookaheads are not ascending terminals (then EOF)"),
])
def test_malformed_flat_tables_are_refused(name, change, message) -> None:
    """By the check the disk cache runs and by the parser core, in the same words."""
    tables = build_tables(_ARITH)
    arrays = _malformed(tables, name, change(_ints(getattr(tables, name))))
    with pytest.raises(ValueError, match=f"^lalr: {re.escape(message)}$"):
        _lalr.check(2, 3, *arrays)
    lhs, starts, _ = flat_productions(_ARITH)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        _gss.Core()._setup(2, *arrays, lhs, starts, 1000)


def test_the_parser_core_refuses_odd_arrays_and_a_second_set_up() -> None:
    tables = build_tables(_ARITH)
    lhs, starts, _ = flat_productions(_ARITH)
    with pytest.raises(ValueError, match="not an array of 4-byte items"):
        _gss.Core()._setup(2, b"abc", *tables.arrays()[1:], lhs, starts, 1000)
    with pytest.raises(ValueError, match="a reduction pops at least one vertex"):
        _gss.Core()._setup(2, *tables.arrays(), lhs, _packed([0, 1, 1, 2]), 1000)
    core, _ = _core_of(tables, _ARITH)
    with pytest.raises(RuntimeError, match="set up already"):
        core._setup(2, *tables.arrays(), lhs, starts, 1000)


def test_conflicting_cells_hold_the_shift_then_reductions_by_production() -> None:
    # E -> E + E | E * E | a: every operator cell after E op E . holds a shift and a reduction
    plus, times, a = 0, 1, 2
    e = 3 + 1
    bnf = Bnf(3, ("S'", "E"), (Production(0, (e,)), Production(1, (e, plus, e)), Production(1, (e, times, e)),
                               Production(1, (a,))))
    tables = build_tables(bnf)
    cells = {actions for row in tables.action for actions in row.values() if len(actions) > 1}
    assert cells and all(actions[0] >= 0 and list(actions) == sorted(actions, reverse=True) for actions in cells)
    assert _rows(tables) == _rows(reference_tables(bnf))


def _flat(productions: list[tuple[int, tuple[int, ...]]]):
    lhs = np.array([p for p, _ in productions], np.int32)
    starts = np.array(np.cumsum([0] + [len(rhs) for _, rhs in productions]), np.int32)
    rhs = np.array([s for _, r in productions for s in r], np.int32)
    return lhs, starts, rhs


def test_malformed_grammars_are_refused() -> None:
    good = [(0, (3,)), (1, (0, 3)), (1, (1,))]  # 2 terminals; S' -> A ; A -> 0 A | 1
    lhs, starts, rhs = _flat(good)
    assert _lalr.tables(2, 2, lhs, starts, rhs)[0]  # the arrays below differ from these in one place
    i32 = lambda values: np.array(values, np.int32)  # noqa: E731
    cases = [
        ((2, 2, lhs.tobytes()[:-1], starts, rhs), "lalr: lhs is not an array of 4-byte items"),
        ((2, 2, lhs, starts.tobytes()[:-2], rhs), "lalr: rhs_start is not an array of 4-byte items"),
        ((2, 2, lhs, starts, rhs.tobytes()[:-3]), "lalr: rhs is not an array of 4-byte items"),
        ((-1, 2, lhs, starts, rhs), "lalr: -1 terminals and 2 nonterminals (at least 0 and 1)"),
        ((2, 0, lhs, starts, rhs), "lalr: 2 terminals and 0 nonterminals (at least 0 and 1)"),
        ((2**31, 2, lhs, starts, rhs), "lalr: too many symbols"),
        ((2, 2, i32([]), i32([0]), i32([])), "lalr: no productions (production 0 must be the start, S' -> S)"),
        ((2, 2, lhs, starts[:-1], rhs), "lalr: 3 productions need 4 rhs_start entries, not 3"),
        ((2, 2, lhs, i32([1, 1, 3, 4]), rhs), "lalr: rhs_start runs from 1 to 4, not from 0 to len(rhs) = 4"),
        ((2, 2, lhs, starts, rhs[:-1]), "lalr: rhs_start runs from 0 to 4, not from 0 to len(rhs) = 3"),
        ((2, 2, lhs, i32([0, 1, 1, 4]), rhs), "lalr: production 1 has an empty right-hand side"),
        ((2, 2, lhs, i32([0, 3, 1, 4]), rhs), "lalr: rhs_start decreases after production 1"),
        ((2, 2, i32([0, 1, 2]), starts, rhs), "lalr: production 2 has left-hand side 2, not one of 0..1"),
        ((2, 2, i32([0, -1, 1]), starts, rhs), "lalr: production 1 has left-hand side -1, not one of 0..1"),
        ((2, 2, i32([1, 1, 1]), starts, rhs), "lalr: production 0 has left-hand side 1, not 0 (the start, S')"),
        ((2, 2, i32([0, 0, 1]), starts, rhs),
         "lalr: production 1 has left-hand side 0, the start's, which only production 0 may have"),
        ((2, 2, lhs, starts, i32([3, 0, 4, 1])), "lalr: production 1 has symbol 4, not one of 0..3"),
        ((2, 2, lhs, starts, i32([3, 0, 3, -2])), "lalr: production 2 has symbol -2, not one of 0..3"),
    ]
    for args, message in cases:
        with pytest.raises(ValueError) as refused:
            _lalr.tables(*args)
        assert str(refused.value) == message
    with pytest.raises(ValueError, match="production 1 has an empty right-hand side"):
        build_tables(Bnf(2, ("S'", "A"), (Production(0, (3,)), Production(1, ()))))


def test_a_20k_rule_chain_is_built() -> None:
    # r_i -> 'x' r_{i+1} | '(' r_{i+1} ')' | 'z' ; r_n -> 'e': a chain of 20k "includes" (each
    # r_{i+1} ends r_i's first production), 3 states per rule beside the chain's own
    n = 20_000
    x, lp, rp, z, e = range(5)
    nt = lambda i: 5 + 1 + i  # noqa: E731  (nonterminal 0 is S')
    productions = [Production(0, (nt(0),))]
    for i in range(n):
        productions += [Production(1 + i, (x, nt(i + 1))), Production(1 + i, (lp, nt(i + 1), rp)),
                        Production(1 + i, (z,))]
    productions.append(Production(1 + n, (e,)))
    bnf = Bnf(5, ("S'",) + tuple(f"r{i}" for i in range(n + 1)), tuple(productions))
    tables = build_tables(bnf)
    assert tables.conflicts() == []
    # accept: S' -> r0 . on EOF in goto(0, r0)
    assert tables.action[tables.goto[0][1]] == {-1: (~0,)}
    # the deepest rule: 'e' reduces r_n on what follows r_n: EOF (through the chain) and ')'
    state = 0
    for i in range(n):
        state = tables.action[state][x][0]
    state = tables.action[state][e][0]
    assert tables.action[state] == {rp: (~(len(productions) - 1),), -1: (~(len(productions) - 1),)}


def test_many_terminals_keep_sparse_lookaheads() -> None:
    # S -> t_i A t_i | t_i 'end' ; A -> 'a' for 100k terminals t_i: A's state reduces on all of
    # them (one union of 100k one-terminal Follow sets) and every other set is small. States
    # x terminals would be 10^10 entries; a union done one set at a time, 10^10 steps.
    n = 100_000
    a_, end = n, n + 1
    s, a = n + 2 + 1, n + 2 + 2
    productions = [Production(0, (s,))]
    productions += [Production(1, (t, a, t)) for t in range(n)] + [Production(1, (t, end)) for t in range(n)]
    productions.append(Production(2, (a_,)))
    tables = build_tables(Bnf(n + 2, ("S'", "S", "A"), tuple(productions)))
    assert tables.n_states == 3 + 4 * n  # 0, S' -> S., A -> a., and per t_i: t_i., t_i A., t_i A t_i., t_i end.
    after_t7 = tables.action[0][7][0]
    reduce_a = tables.action[tables.action[after_t7][a_][0]]
    assert list(reduce_a) == list(range(n)) and set(reduce_a.values()) == {(~(len(productions) - 1),)}


@pytest.mark.parametrize("name", sorted(stdlib_grammars.names()))
def test_a_compiled_bnf_reads_its_productions_off_the_core_arrays(name):
    # normalisation leaves the productions as the core's arrays (FlatProductions): read as,
    # equal to and pickled as the tuple of Productions they stand for, made only when read
    import dataclasses
    import pickle

    from grammarc.lowering import compiler
    from grammarc.lowering.lr import FlatProductions

    grammar = grammarc.stdlib(name)
    bnf = compiler._compile_new(grammar, grammarc.automata.DEFAULT_MAX_STATES, compiler.DEFAULT_MERGE_MAX_STATES).bnf
    productions = bnf.productions
    assert isinstance(productions, FlatProductions)
    lhs, starts, rhs = (np.frombuffer(part, dtype=np.int32).tolist() for part in bnf.__dict__["_flat"])
    expected = tuple(Production(lhs[i], tuple(rhs[starts[i]:starts[i + 1]])) for i in range(len(lhs)))
    assert len(productions) == len(expected) and productions._made is None  # counted without making them
    assert productions == expected and expected == productions and list(productions) == list(expected)
    assert productions[0] == expected[0] and productions[-1] == expected[-1] and productions[1:3] == expected[1:3]
    assert hash(productions) == hash(expected) and repr(productions) == repr(expected)
    assert pickle.loads(pickle.dumps(productions)) == expected
    assert bnf == dataclasses.replace(bnf, productions=expected)
    assert build_tables(dataclasses.replace(bnf, productions=expected)) == build_tables(bnf)
