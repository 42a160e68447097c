"""The compiled token walk (`grammarc.tokens._scan`) against its Python oracle: the same
arrays in the same order, on dense and compact (comb) transition tables."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc.automata.comb import CombTable
from grammarc.tokens import _scan

from scan_reference import scan as reference

ALPHABET = b"ab\"\\ "


def _matrix(tokens: list[bytes]):
    lengths = np.array([len(t) for t in tokens], dtype=np.int32)
    width = int(lengths.max()) + 1
    matrix = np.zeros((len(tokens), width), dtype=np.uint8)
    for r, t in enumerate(tokens):
        matrix[r, :len(t)] = np.frombuffer(t, dtype=np.uint8)
    return matrix, lengths


@st.composite
def cases(draw):
    n = draw(st.integers(1, 6))
    trans = np.full((n, 256), -1, dtype=np.int32)
    for s in range(n):
        for b in ALPHABET:
            trans[s, b] = draw(st.integers(-1, n - 1))
    accept = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    tokens = draw(st.lists(st.binary(min_size=1, max_size=7).map(lambda t: bytes(ALPHABET[x % 5] for x in t)),
                           min_size=1, max_size=30))
    matrix, lengths = _matrix(tokens)
    picks = draw(st.lists(st.integers(0, len(tokens) - 1), max_size=40))
    rows = np.array(picks, dtype=np.int32)
    pos = np.array([draw(st.integers(0, int(lengths[r]))) for r in picks], dtype=np.int32)
    q = draw(st.integers(0, n - 1))
    return trans, accept, matrix, lengths, rows, pos, q


def _compiled(trans, accept, matrix, lengths, rows, pos, q, comb: bool):
    if comb:
        table = CombTable.from_dense(trans)
        out = _scan.scan(None, table.base, table.check, table.next, accept, matrix, matrix.shape[1], lengths, rows,
                         pos, q)
    else:
        out = _scan.scan(trans, b"", b"", b"", accept, matrix, matrix.shape[1], lengths, rows, pos, q)
    return [np.frombuffer(part, dtype=np.int32) for part in out]


@settings(max_examples=400, deadline=None)
@given(case=cases(), comb=st.booleans())
def test_compiled_walk_equals_the_numpy_walk(case, comb):
    expected = reference(*case)
    got = _compiled(*case, comb=comb)
    for e, g in zip(expected, got):
        assert e.tolist() == g.tolist()


def test_a_known_walk():
    """`"ab"` through a DFA of `a*b?`-ish edges: exact rows, states and split points."""
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, ord("a")] = 0
    trans[0, ord("b")] = 1
    accept = np.array([True, True])
    matrix, lengths = _matrix([b"aab", b"ba", b"a"])
    rows = np.array([0, 1, 2, 0], dtype=np.int32)
    pos = np.array([0, 0, 0, 2], dtype=np.int32)
    end_rows, end_states, split_rows, split_pos = _compiled(trans, accept, matrix, lengths, rows, pos, 0, comb=False)
    assert end_rows.tolist() == [0, 2, 0] and end_states.tolist() == [1, 0, 1]
    assert split_rows.tolist() == [0, 0, 1] and split_pos.tolist() == [1, 2, 1]


@pytest.mark.parametrize("change, message", [
    (dict(pos=np.array([5], dtype=np.int32)), "scan: a row or position is out of range"),
    (dict(rows=np.array([3], dtype=np.int32)), "scan: a row or position is out of range"),
    (dict(q=2), "scan: inconsistent array sizes"),
    (dict(accept=np.array([True])), "scan: inconsistent array sizes"),
    (dict(rows=np.array([0, 0], dtype=np.int32)), "scan: inconsistent array sizes"),
    (dict(lengths=np.array([1, 2, 3], dtype=np.int64)), "scan: inconsistent array sizes"),
])
def test_bad_arrays_are_refused_not_read_out_of_bounds(change, message):
    trans = np.zeros((2, 256), dtype=np.int32)
    matrix, lengths = _matrix([b"ab", b"b", b"aba"])
    args = dict(accept=np.array([True, False]), lengths=lengths, rows=np.array([0], dtype=np.int32),
                pos=np.array([0], dtype=np.int32), q=0)
    args.update(change)
    with pytest.raises(ValueError) as err:
        _scan.scan(trans, b"", b"", b"", args["accept"], matrix, matrix.shape[1], args["lengths"], args["rows"],
                   args["pos"], args["q"])
    assert str(err.value) == message
