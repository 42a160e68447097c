"""The compiled token walk (`grammarc.tokens._scan`) against its Python oracle: the same
arrays in the same order, on dense and compact (comb) transition tables."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc.automata.comb import CombTable
from grammarc.automata.dfa import DFA
from grammarc.tokens import _scan
from grammarc.tokens.rows import _byte_sets

from scan_reference import ALPHABET, dfa_and_tokens
from scan_reference import scan as reference


def _packed(tokens: list[bytes]):
    """(data, offsets, lengths): the rows end to end, as `TokenBytes` lays them out."""
    lengths = np.array([len(t) for t in tokens], dtype=np.int32)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    return np.frombuffer(b"".join(tokens), dtype=np.uint8), offsets, lengths


def _sets(tokens: list[bytes]) -> np.ndarray:
    """Each token's bytes as four 64-bit words, written out bit by bit."""
    out = np.zeros((len(tokens), 4), dtype=np.uint64)
    for r, token in enumerate(tokens):
        for b in set(token):
            out[r, b // 64] |= np.uint64(1 << (b % 64))
    return out


@st.composite
def cases(draw):
    trans, accept, tokens = draw(dfa_and_tokens(6, 7, 30))
    n = len(trans)
    data, offsets, lengths = _packed(tokens)
    picks = draw(st.lists(st.integers(0, len(tokens) - 1), max_size=40))
    rows = np.array(picks, dtype=np.int32)
    pos = np.array([draw(st.integers(0, int(lengths[r]))) for r in picks], dtype=np.int32)
    q = draw(st.integers(0, n - 1))
    return trans, accept, data, offsets, lengths, rows, pos, q


def _kinds(data, offsets, lengths) -> np.ndarray:
    return np.frombuffer(_scan.row_kinds(data, offsets, lengths), dtype=np.uint16)


def _table(trans, accept, comb: bool = False) -> _scan.Table:
    """A dense table as the walks take it, stored as a comb table when `comb`."""
    if comb:
        table = CombTable.from_dense(trans)
        return _scan.Table(None, table.base, table.check, table.next, accept)
    return _scan.Table(trans, b"", b"", b"", accept)




def _rows(data, offsets, lengths, sets=b"", kinds=b"", shared=b"", skip=b"", ids=b"", starts=b"") -> _scan.Tokens:
    """Token rows as the walks take them (what is not given: empty)."""
    return _scan.Tokens(data, offsets, lengths, sets, kinds, shared, skip, ids, starts)


def _compiled(trans, accept, data, offsets, lengths, rows, pos, q, comb: bool, sets=b"", kinds=b""):
    out = _scan.scan(_table(trans, accept, comb), _rows(data, offsets, lengths, sets, kinds), rows, pos, q)
    return [np.frombuffer(part, dtype=np.int32) for part in out]


@settings(max_examples=400, deadline=None)
@given(case=cases(), comb=st.booleans(), with_sets=st.booleans(), with_kinds=st.booleans())
def test_compiled_walk_equals_the_numpy_walk(case, comb, with_sets, with_kinds):
    """With the rows' byte sets, rows on which the start state loops are not stepped (the
    strategy's small DFAs loop often: a state has 5 bytes and at most 6 targets); with their
    kinds too, the sets are read only where a byte group is partly leaving (a state looping
    on `a` but not `b`, both letters)."""
    expected = reference(*case)
    trans, accept, data, offsets, lengths, rows, pos, q = case
    tokens = [bytes(data[o:o + n]) for o, n in zip(offsets.tolist(), lengths.tolist())]
    got = _compiled(*case, comb=comb, sets=_sets(tokens) if with_sets else b"",
                    kinds=_kinds(data, offsets, lengths) if with_kinds else b"")
    for e, g in zip(expected, got):
        assert e.tolist() == g.tolist()


@settings(max_examples=200, deadline=None)
@given(case=cases(), comb=st.booleans())
def test_one_table_walks_from_every_state_as_the_reference_does(case, comb):
    """A `Table` keeps each state's loop test from the state's first walk: walks from every
    state of one table, in turn and again in reverse, are the reference's."""
    trans, accept, data, offsets, lengths, rows, pos, _ = case
    tokens = _tokens(data, offsets, lengths)
    table = _table(trans, accept, comb)
    token_rows = _rows(data, offsets, lengths, _sets(tokens), _kinds(data, offsets, lengths))
    for q in [*range(len(trans)), *reversed(range(len(trans)))]:
        got = _scan.scan(table, token_rows, rows, pos, q)
        expected = reference(trans, accept, data, offsets, lengths, rows, pos, q)
        assert [np.frombuffer(g, dtype=np.int32).tolist() for g in got] == [e.tolist() for e in expected]


@st.composite
def range_cases(draw):
    trans, accept, data, offsets, lengths, _, _, q = draw(cases())
    cuts = sorted(draw(st.lists(st.integers(0, len(lengths)), max_size=6)))
    lo, hi = np.array(cuts[0::2], dtype=np.int64), np.array(cuts[1::2], dtype=np.int64)
    lo = lo[:len(hi)]
    return trans, accept, data, offsets, lengths, lo, hi, q


def _common_prefixes(tokens: list[bytes]) -> list[int]:
    """Each token's leading bytes in common with the token before it, compared byte by byte."""
    out = [0]
    for before, token in zip(tokens, tokens[1:]):
        n = 0
        while n < min(len(before), len(token)) and before[n] == token[n]:
            n += 1
        out.append(n)
    return out


@settings(max_examples=500, deadline=None)
@given(case=range_cases(), comb=st.booleans(), start=st.integers(0, 1), split_at_start=st.booleans(),
       flagged=st.booleans(), sharing=st.sampled_from(["sorted", "exact", "less", "none"]), choices=st.data())
def test_walking_ranges_equals_walking_their_rows(case, comb, start, split_at_start, flagged, sharing, choices):
    """`scan_ranges`: every row of the ranges from byte `start` (tokens have a byte at least),
    the start itself a split when asked; with a flag array the ends are flagged, not returned.
    Rows resume from the row before where they share bytes: the shared counts exact (on
    tokens in drawn order, or sorted as a vocabulary's rows are), any lower bound, or none."""
    trans, accept, data, offsets, lengths, lo, hi, q = case
    if sharing == "sorted":
        data, offsets, lengths = _packed(sorted(_tokens(data, offsets, lengths)))
    tokens = [bytes(data[o:o + n]) for o, n in zip(offsets.tolist(), lengths.tolist())]
    common = _common_prefixes(tokens)
    if sharing == "less":
        common = [choices.draw(st.integers(0, c)) for c in common]
    shared = b"" if sharing == "none" else np.array(common, dtype=np.uint8)
    skip = b"" if sharing == "none" or not choices.draw(st.booleans()) else _scan.next_smaller(shared)
    rows = np.concatenate([np.arange(a, b) for a, b in zip(lo.tolist(), hi.tolist())] + [[]]).astype(np.int32)
    expected = reference(trans, accept, data, offsets, lengths, rows, np.full(len(rows), start), q, split_at_start)
    inside = np.zeros(len(tokens), dtype=np.uint8) if flagged else None
    got = [np.frombuffer(part, dtype=np.int32) for part in _scan.scan_ranges(
        _table(trans, accept, comb), _rows(data, offsets, lengths, _sets(tokens), _kinds(data, offsets, lengths),
                                           shared, skip), lo, hi, start, q, split_at_start, inside)]
    assert [g.tolist() for g in got[2:]] == [e.tolist() for e in expected[2:]]
    if flagged:
        assert got[0].tolist() == got[1].tolist() == []
        assert np.flatnonzero(inside).tolist() == sorted(expected[0].tolist())
    else:
        assert [g.tolist() for g in got[:2]] == [e.tolist() for e in expected[:2]]


@settings(max_examples=400, deadline=None)
@given(case=cases(), comb=st.booleans(), exact=st.booleans(), thin=st.sampled_from([0, 1, 3, 10**6]),
       choices=st.data())
def test_a_narrow_state_walks_the_rows_of_the_first_bytes_it_takes(case, comb, exact, thin, choices):
    """`scan_state`: over a vocabulary's rows sorted by bytes, the rows whose first byte q
    takes, walked from byte 0 as `scan` walks them, and the ids of those that end inside
    packed as `pack_ids` packs them (None: none end). Once those rows are `most`: None with
    `thin` 0, the scan when `thin` covers them all, else one or the other."""
    trans, accept, data, offsets, lengths, *_, q = case
    tokens = sorted(set(_tokens(data, offsets, lengths)))
    data, offsets, lengths = _packed(tokens)
    starts = np.zeros(257, dtype=np.int64)
    np.cumsum(np.bincount([t[0] for t in tokens], minlength=256), out=starts[1:])
    rows = np.array([r for r, t in enumerate(tokens) if trans[q, t[0]] >= 0], dtype=np.int32)
    most = len(rows) + (1 if exact else choices.draw(st.integers(-len(rows), 5)))
    ids = np.array(choices.draw(st.permutations(range(len(tokens)))), dtype=np.int32) * 5 % 61
    shared = np.array(_common_prefixes(tokens), dtype=np.uint8)
    got = _scan.scan_state(_table(trans, accept, comb),
                           _rows(data, offsets, lengths, _sets(tokens), _kinds(data, offsets, lengths), shared,
                                 _scan.next_smaller(shared), ids, starts), q, most, 2, thin)
    if len(rows) >= most and (thin == 0 or (got is None and thin < len(rows))):
        assert got is None
        return
    end_rows, _, split_rows, split_pos = reference(trans, accept, data, offsets, lengths, rows,
                                                   np.zeros(len(rows), dtype=np.int32), q)
    packed, *arrays = got
    assert packed == (_scan.pack_ids(ids[end_rows].astype(np.int64), 2) if len(end_rows) else None)
    assert [np.frombuffer(a, dtype=np.int32).tolist() for a in arrays] == [end_rows.tolist(), split_rows.tolist(),
                                                                          split_pos.tolist()]


@pytest.mark.parametrize("change, message", [
    (dict(starts=np.zeros(256, dtype=np.int64)), "Tokens: starts is not 257 ascending rows"),
    (dict(starts=np.array([0] * 97 + [2, 1] + [3] * 158, dtype=np.int64)), "Tokens: starts is not 257 ascending rows"),
    (dict(starts=np.array([0] * 97 + [4] * 160, dtype=np.int64)), "Tokens: starts is not 257 ascending rows"),
    (dict(starts=np.array([-1] * 98 + [3] * 159, dtype=np.int64)), "Tokens: starts is not 257 ascending rows"),
    (dict(starts=np.zeros(257, dtype=np.int32)), "Tokens: starts is not an array of 8-byte items"),
    (dict(ids=np.zeros(2, dtype=np.int32)), "Tokens: ids is not one 4-byte item per row"),
    (dict(shared=np.zeros(2, dtype=np.uint8)), "Tokens: shared is not one 1-byte item per row"),
    (dict(shared=b"", skip=np.zeros(3, dtype=np.int32)), "Tokens: skip is given without shared"),
    (dict(skip=np.zeros(2, dtype=np.int32)), "Tokens: skip is not one 4-byte item per row"),
    (dict(sets=np.zeros((2, 4), dtype=np.uint64)), "Tokens: sets is not one 32-byte item per row"),
    (dict(sets=np.zeros(3, dtype=np.uint64)), "Tokens: sets is not one 32-byte item per row"),
    (dict(kinds=np.zeros(2, dtype=np.uint16)), "Tokens: kinds is not one 2-byte item per row"),
    (dict(kinds=np.zeros(3, dtype=np.uint8)), "Tokens: kinds is not one 2-byte item per row"),
    (dict(lengths=np.array([1, 2, 3], dtype=np.int64)), "Tokens: inconsistent array sizes"),
    (dict(offsets=np.array([0, 2], dtype=np.int64)), "Tokens: inconsistent array sizes"),
    (dict(offsets=np.array([0, 2, 3], dtype=np.int32)), "Tokens: offsets is not an array of 8-byte items"),
    (dict(offsets=np.array([5, 2, 3], dtype=np.int64)), "Tokens: a row lies outside the data"),
    (dict(offsets=np.array([-1, 2, 3], dtype=np.int64)), "Tokens: a row lies outside the data"),
    (dict(data=np.frombuffer(b"abb", dtype=np.uint8)), "Tokens: a row lies outside the data"),
])
def test_bad_token_rows_are_refused_when_made(change, message):
    """Every walk reads the rows unchecked but for the rows and positions it is given: a
    `Tokens` is checked once, when made."""
    data, offsets, lengths = _packed([b"ab", b"aba", b"b"])
    args = dict(data=data, offsets=offsets, lengths=lengths, sets=b"", kinds=b"",
                shared=np.array([0, 2, 0], dtype=np.uint8), skip=b"", ids=np.zeros(3, dtype=np.int32),
                starts=np.array([0] * 98 + [2] + [3] * 158, dtype=np.int64))
    args.update(change)
    with pytest.raises(ValueError) as err:
        _scan.Tokens(*args.values())
    assert str(err.value) == message


@pytest.mark.parametrize("trans, base, check, nxt, accept, message", [
    (np.zeros(300, dtype=np.int32), b"", b"", b"", np.zeros(1, dtype=bool),
     "Table: trans is not an array of 1024-byte items"),
    (np.full((2, 256), 2, dtype=np.int32), b"", b"", b"", np.zeros(2, dtype=bool),
     "Table: a target or a comb row lies outside the table"),
    (np.zeros((2, 256), dtype=np.int32), b"", b"", b"", np.zeros(3, dtype=bool),
     "Table: accept is not a byte per state"),
    (None, np.array([0, 257], dtype=np.int64), np.full(512, -1, dtype=np.int32), np.full(512, -1, dtype=np.int32),
     np.zeros(2, dtype=bool), "Table: a target or a comb row lies outside the table"),
    (None, np.array([-1, 0], dtype=np.int64), np.full(512, -1, dtype=np.int32), np.full(512, -1, dtype=np.int32),
     np.zeros(2, dtype=bool), "Table: a target or a comb row lies outside the table"),
    (None, np.array([0, 256], dtype=np.int64), np.full(512, -1, dtype=np.int32), np.full(512, 2, dtype=np.int32),
     np.zeros(2, dtype=bool), "Table: a target or a comb row lies outside the table"),
    (None, np.array([0, 0], dtype=np.int64), np.full(512, -1, dtype=np.int32), np.full(300, -1, dtype=np.int32),
     np.zeros(2, dtype=bool), "Table: check and next differ in length"),
    (None, np.array([0, 0, 0], dtype=np.int32), np.full(512, -1, dtype=np.int32), np.full(512, -1, dtype=np.int32),
     np.zeros(1, dtype=bool), "Table: base is not an array of 8-byte items"),
])
def test_bad_tables_are_refused_when_made(trans, base, check, nxt, accept, message):
    """Every walk steps without bounds checks (`check[base[s] + b]`, `trans[s * 256 + b]`):
    a `Table` is checked once, when made: a target past the states, a comb row past the
    arrays, and arrays that disagree are refused; a good comb table is taken."""
    with pytest.raises(ValueError) as err:
        _scan.Table(trans, base, check, nxt, accept)
    assert str(err.value) == message
    cells = np.full(512, -1, dtype=np.int32)
    assert _scan.Table(None, np.array([0, 256], dtype=np.int64), cells, cells, np.zeros(2, dtype=bool)).n_states == 2


@pytest.mark.parametrize("change, message", [
    (dict(hi=np.array([4], dtype=np.int64)), "scan_ranges: a row or position is out of range"),
    (dict(lo=np.array([-1], dtype=np.int64)), "scan_ranges: a row or position is out of range"),
    (dict(start=3), "scan_ranges: a row or position is out of range"),
    (dict(lo=np.array([0, 1], dtype=np.int64)), "scan_ranges: inconsistent array sizes"),
    (dict(inside=np.zeros(2, dtype=np.uint8)), "scan_ranges: inside is not one byte per row"),
    (dict(q=2), "scan_ranges: the state is out of range"),
    (dict(q=-1), "scan_ranges: the state is out of range"),
])
def test_bad_ranges_are_refused_not_read_out_of_bounds(change, message):
    trans = np.zeros((2, 256), dtype=np.int32)
    data, offsets, lengths = _packed([b"ab", b"b", b"aba"])
    args = dict(lo=np.array([0], dtype=np.int64), hi=np.array([3], dtype=np.int64), start=1, q=0,
                inside=np.zeros(3, dtype=np.uint8))
    args.update(change)
    with pytest.raises(ValueError) as err:
        _scan.scan_ranges(_table(trans, np.array([True, False])), 
                          _rows(data, offsets, lengths, shared=np.zeros(3, np.uint8)),
                          args["lo"], args["hi"], args["start"], args["q"], False, args["inside"])
    assert str(err.value) == message


def test_a_row_that_runs_past_the_data_is_refused_when_the_rows_are_made():
    """The last row claims 30 bytes of 6: refused before any walk could read it."""
    data, offsets, _ = _packed([b"ab", b"b", b"aba"])
    with pytest.raises(ValueError) as err:
        _rows(data, offsets, np.array([2, 1, 30], dtype=np.int32))
    assert str(err.value) == "Tokens: a row lies outside the data"


@pytest.mark.parametrize("q, rows, message", [
    (2, None, "scan_state: the state is out of range"),
    (0, _rows(*_packed([b"ab"])), "scan_state: the tokens have no ids or no starts"),
])
def test_bad_narrow_states_are_refused(q, rows, message):
    data, offsets, lengths = _packed([b"ab"])
    good = _rows(data, offsets, lengths, ids=np.zeros(1, dtype=np.int32),
                 starts=np.array([0] * 98 + [1] * 159, dtype=np.int64))
    with pytest.raises(ValueError) as err:
        _scan.scan_state(_table(np.zeros((2, 256), dtype=np.int32), np.array([True, False])), rows or good, q, 100, 1,
                         0)
    assert str(err.value) == message


def test_a_row_the_state_loops_on_is_not_stepped():
    """A state looping on `a` and `b`: a row of those bytes ends in it, with a split at every
    inner position when it accepts, whatever the rest of the table says (it is never read);
    a row with another byte is walked."""
    trans = np.full((2, 256), 1, dtype=np.int32)  # every byte leads to state 1, which loops on nothing...
    trans[0, ord("a")] = trans[0, ord("b")] = 0  # ...but state 0 loops on a and b
    trans[1, :] = -1
    data, offsets, lengths = _packed([b"abba", b"abc", b"c"])
    sets = _sets([b"abba", b"abc", b"c"])
    rows, pos = np.array([0, 1, 2, 0], dtype=np.int32), np.array([0, 0, 0, 3], dtype=np.int32)
    for accept, splits in (([False, False], []), ([True, False], [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2)])):
        end_rows, end_states, split_rows, split_pos = _compiled(
            trans, np.array(accept), data, offsets, lengths, rows, pos, 0, comb=False, sets=sets)
        assert end_rows.tolist() == [0, 1, 2, 0] and end_states.tolist() == [0, 1, 1, 0]
        assert list(zip(split_rows.tolist(), split_pos.tolist())) == splits


def test_the_index_byte_sets_hold_each_tokens_bytes():
    tokens = [b"a", b"\x00\xff", b"hello", bytes(range(256))]
    index_sets = _byte_sets(np.array([len(t) for t in tokens], dtype=np.int32),
                            np.frombuffer(b"".join(tokens), dtype=np.uint8))
    assert index_sets.dtype == np.uint64 and index_sets.tolist() == _sets(tokens).tolist()


def test_a_known_walk():
    """`"ab"` through a DFA of `a*b?`-ish edges: exact rows, states and split points."""
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, ord("a")] = 0
    trans[0, ord("b")] = 1
    accept = np.array([True, True])
    data, offsets, lengths = _packed([b"aab", b"ba", b"a"])
    rows = np.array([0, 1, 2, 0], dtype=np.int32)
    pos = np.array([0, 0, 0, 2], dtype=np.int32)
    end_rows, end_states, split_rows, split_pos = _compiled(trans, accept, data, offsets, lengths, rows, pos, 0,
                                                            comb=False)
    assert end_rows.tolist() == [0, 2, 0] and end_states.tolist() == [1, 0, 1]
    assert split_rows.tolist() == [0, 0, 1] and split_pos.tolist() == [1, 2, 1]


@pytest.mark.parametrize("change, message", [
    (dict(pos=np.array([5], dtype=np.int32)), "scan: a row or position is out of range"),
    (dict(pos=np.array([-1], dtype=np.int32)), "scan: a row or position is out of range"),
    (dict(rows=np.array([3], dtype=np.int32)), "scan: a row or position is out of range"),
    (dict(q=2), "scan: the state is out of range"),
    (dict(rows=np.array([0, 0], dtype=np.int32)), "scan: inconsistent array sizes"),
    (dict(rows=np.zeros(3, dtype=np.uint8)), "scan: rows is not an array of 4-byte items"),
])
def test_bad_arrays_are_refused_not_read_out_of_bounds(change, message):
    trans = np.zeros((2, 256), dtype=np.int32)
    data, offsets, lengths = _packed([b"ab", b"b", b"aba"])
    args = dict(rows=np.array([0], dtype=np.int32), pos=np.array([0], dtype=np.int32), q=0)
    args.update(change)
    with pytest.raises(ValueError) as err:
        _scan.scan(_table(trans, np.array([True, False])), _rows(data, offsets, lengths), args["rows"], args["pos"],
                   args["q"])
    assert str(err.value) == message


def test_walks_take_a_table_and_token_rows_only():
    """The arrays come in the objects that checked them: a walk given bare arrays is refused."""
    data, offsets, lengths = _packed([b"ab"])
    table, rows = _table(np.zeros((1, 256), dtype=np.int32), np.array([True])), _rows(data, offsets, lengths)
    zero = np.zeros(1, dtype=np.int32)
    with pytest.raises(TypeError):
        _scan.scan(np.zeros((1, 256), dtype=np.int32), rows, zero, zero, 0)
    with pytest.raises(TypeError):
        _scan.scan(table, data, zero, zero, 0)
    with pytest.raises(TypeError):
        _scan.next_bytes(data, zero, zero)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 255), st.integers(0, 99)), max_size=300, unique_by=lambda x: x[1]),
       st.integers(0, 3), st.lists(st.integers(0, 2**32 - 1), min_size=7, max_size=7))
def test_packing_flagged_rows_sets_exactly_their_ids_bits(rows, extra_words, before):
    """`pack_rows`: the flagged rows' ids (any non-zero flag) OR-ed into the words, whose
    bits already set stay; the unflagged rows' ids untouched."""
    flags = np.array([f for f, _ in rows], dtype=np.uint8)
    ids = np.array([i for _, i in rows], dtype=np.int32)
    words = np.array(before[:4 + extra_words], dtype=np.uint32)
    _scan.pack_rows(flags, ids, words)
    expected = {i for f, i in rows if f} | {32 * w + b for w, word in enumerate(before[:len(words)])
                                            for b in range(32) if word >> b & 1}
    got = {32 * w + b for w in range(len(words)) for b in range(32) if int(words[w]) >> b & 1}
    assert got == expected


@pytest.mark.parametrize("ids, n_words, message", [
    ([0, 128], 4, "pack_rows: a token id is out of range"),
    ([0, -1], 4, "pack_rows: a token id is out of range"),
    ([0], 4, "pack_rows: inconsistent array sizes"),
])
def test_bad_packing_is_refused(ids, n_words, message):
    words = np.zeros(n_words, dtype=np.uint32)
    with pytest.raises(ValueError) as err:
        _scan.pack_rows(np.ones(2, dtype=np.uint8), np.array(ids, dtype=np.int32), words)
    assert str(err.value) == message
    assert not words.any()  # refused before a word is written


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=6), min_size=1, max_size=20), st.data())
def test_next_bytes_are_the_bytes_at_each_position_with_their_counts(tokens, data):
    packed, offsets, lengths = _packed(tokens)
    picks = data.draw(st.lists(st.integers(0, len(tokens) - 1), max_size=30))
    pos = [data.draw(st.integers(0, len(tokens[r]) - 1)) for r in picks]
    found, counts, present = _scan.next_bytes(_rows(packed, offsets, lengths), np.array(picks, dtype=np.int32),
                                              np.array(pos, dtype=np.int32))
    expected = [tokens[r][p] for r, p in zip(picks, pos)]
    assert list(found) == expected
    assert np.frombuffer(counts, dtype=np.int64).tolist() == [expected.count(b) for b in range(256)]
    assert present == sum(1 << b for b in set(expected))


@pytest.mark.parametrize("rows, pos, message", [
    ([0], [2], "next_bytes: a row or position is out of range"),  # the end of a token has no next byte
    ([3], [0], "next_bytes: a row or position is out of range"),
    ([0], [-1], "next_bytes: a row or position is out of range"),
    ([0, 1], [0], "next_bytes: inconsistent array sizes"),
])
def test_bad_positions_have_no_next_byte(rows, pos, message):
    data, offsets, lengths = _packed([b"ab", b"b", b"aba"])
    with pytest.raises(ValueError) as err:
        _scan.next_bytes(_rows(data, offsets, lengths), np.array(rows, dtype=np.int32), np.array(pos, dtype=np.int32))
    assert str(err.value) == message


@given(st.binary(max_size=300))
def test_ordering_by_byte_is_a_stable_sort(data):
    next_byte = np.frombuffer(data, dtype=np.uint8)
    counts = np.bincount(next_byte, minlength=256).astype(np.int64)
    got = np.frombuffer(_scan.order_by_byte(next_byte, counts), dtype=np.int32)
    assert got.tolist() == np.argsort(next_byte, kind="stable").tolist()


@pytest.mark.parametrize("counts, message", [
    (np.zeros(255, dtype=np.int64), "order_by_byte: counts is not 256 int64"),
    (np.zeros(256, dtype=np.int64), "order_by_byte: counts do not count next_byte"),
    (np.bincount([2, 1], minlength=256).astype(np.int64), "order_by_byte: counts do not count next_byte"),
])
def test_counts_that_do_not_count_the_bytes_are_refused(counts, message):
    with pytest.raises(ValueError) as err:
        _scan.order_by_byte(np.array([1, 1], dtype=np.uint8), counts)
    assert str(err.value) == message


def _agree_oracle(trans, accept, q: int, p: int, limit: int, trans2=None, accept2=None) -> int:
    """The largest d <= limit such that q and p (of a second DFA when given) die alike and
    accept alike on every string of up to d bytes (-1: on the empty string already), by
    enumerating the strings over the bytes some state takes (any other byte kills both)."""
    trans2, accept2 = (trans, accept) if trans2 is None else (trans2, accept2)
    alphabet = [b for b in range(256) if (trans[:, b] >= 0).any() or (trans2[:, b] >= 0).any()]
    level = [(q, p)]
    for depth in range(limit + 1):
        if any(x >= 0 and bool(accept[x]) != bool(accept2[y]) for x, y in level):
            return depth - 1
        if depth == limit:
            return limit
        nxt = []
        for x, y in level:
            if x < 0:  # both dead (else found below): every longer string too
                continue
            for b in alphabet:
                a, c = int(trans[x, b]), int(trans2[y, b])
                if (a < 0) != (c < 0):
                    return depth
                nxt.append((a, c))
        level = nxt
    return limit


@settings(max_examples=300, deadline=None)
@given(case=cases(), p=st.integers(0, 5), limit=st.integers(0, 6), comb=st.booleans())
def test_agree_depth_is_how_deep_two_states_die_and_accept_alike(case, p, limit, comb):
    trans, accept, *_ = case
    p = p % len(trans)
    q = case[-1]
    expected = _agree_oracle(trans, accept, q, p, limit)
    table = _table(trans, accept, comb)
    assert _scan.agree_depth(table, q, table, p, limit) == expected
    assert _scan.agree_depth(table, q, table, q, limit) == limit  # a state agrees with itself


@settings(max_examples=300, deadline=None)
@given(case=cases(), p=st.integers(0, 5))
def test_tokens_no_longer_than_the_agreement_scan_alike(case, p):
    """What `TokenIndex._scan_near` relies on: two states that agree up to d bytes give
    every token of at most d bytes the same walk (end, splits)."""
    trans, accept, data, offsets, lengths, _, _, q = case
    p = p % len(trans)
    table = _table(trans, accept)
    depth = _scan.agree_depth(table, q, table, p, 8)
    rows = np.flatnonzero(lengths <= depth).astype(np.int32)
    zero = np.zeros(len(rows), dtype=np.int32)
    from_q = _compiled(trans, accept, data, offsets, lengths, rows, zero, q, False)
    from_p = _compiled(trans, accept, data, offsets, lengths, rows, zero, p, False)
    assert [from_q[0].tolist(), *(x.tolist() for x in from_q[2:])] == [from_p[0].tolist(), *(x.tolist() for x in from_p[2:])]


@settings(max_examples=300, deadline=None)
@given(case=cases(), other=cases(), limit=st.integers(0, 6), comb=st.booleans())
def test_agree_depth_compares_states_of_two_dfas(case, other, limit, comb):
    trans, accept, *_, q = case
    trans2, accept2, *_, p = other
    expected = _agree_oracle(trans, accept, q, p, limit, trans2, accept2)
    assert _scan.agree_depth(_table(trans, accept, comb), q, _table(trans2, accept2, not comb), p, limit) == expected


def _parting(trans, accept, q, trans2, accept2, p, comb: bool, max_pairs: int = 10_000,
             max_parting: int = 256) -> set[int] | None:
    found = _scan.agree_bytes(_table(trans, accept, comb), q, _table(trans2, accept2, not comb), p,
                              max_pairs, max_parting)
    return None if found is None else set(np.flatnonzero(np.unpackbits(np.frombuffer(found, dtype=np.uint8),
                                                                       bitorder="little")).tolist())


def _parting_oracle(trans, accept, q, trans2, accept2, p, max_pairs: int = 10_000,
                    max_parting: int = 256) -> set[int] | None:
    """`agree_bytes` as its contract reads, a byte at a time: from each pair of states
    reached (depth first, bytes ascending), a byte that kills one walk and not the other,
    or leaves one accepting and not the other, parts the two and is not followed; None
    past `max_pairs` pairs or `max_parting` bytes, or when q and p differ on acceptance."""
    if bool(accept[q]) != bool(accept2[p]):
        return None
    parting: set[int] = set()
    seen, todo = {(q, p)}, [(q, p)]
    while todo:
        x, y = todo.pop()
        for b in range(256):
            if b in parting:
                continue
            a, c = int(trans[x, b]), int(trans2[y, b])
            if a < 0 and c < 0:
                continue
            if (a < 0) != (c < 0) or bool(accept[a]) != bool(accept2[c]):
                parting.add(b)
                if len(parting) > max_parting:
                    return None
                continue
            if (a, c) in seen:  # two tables (`_parting`): equal states are followed too
                continue
            seen.add((a, c))
            if len(seen) > max_pairs:
                return None
            todo.append((a, c))
    return parting


@settings(max_examples=400, deadline=None)
@given(case=cases(), other=cases(), comb=st.booleans(), max_pairs=st.integers(1, 12))
def test_agree_bytes_is_its_contract_read_a_byte_at_a_time(case, other, comb, max_pairs):
    """`agree_bytes` reads one byte per run of bytes both states treat alike (between the
    cuts of either) and finds, and gives up on, exactly what a walk over every byte does."""
    trans, accept, *_, q = case
    trans2, accept2, *_, p = other
    for limits in ({}, {"max_pairs": max_pairs}, {"max_parting": max_pairs}):
        assert _parting(trans, accept, q, trans2, accept2, p, comb, **limits) == \
            _parting_oracle(trans, accept, q, trans2, accept2, p, **limits)


@settings(max_examples=400, deadline=None)
@given(case=cases(), other=cases(), comb=st.booleans())
def test_tokens_without_a_parting_byte_scan_alike_from_two_dfas(case, other, comb):
    """`agree_bytes`: every token that holds none of the bytes on which q (one DFA) and p
    (another) part walks alike from the two: the same ends and splits; every byte that
    parts the two at once (on its own) is one of them; None exactly when q and p differ on
    acceptance (the pair limit is not reached here)."""
    trans, accept, data, offsets, lengths, *_, q = case
    trans2, accept2, *_, p = other
    parting = _parting(trans, accept, q, trans2, accept2, p, comb)
    assert (parting is None) == (bool(accept[q]) != bool(accept2[p]))
    if parting is None:
        return
    if parting:  # a cap below what parts them gives up; one at it changes nothing
        assert _parting(trans, accept, q, trans2, accept2, p, comb, max_parting=len(parting) - 1) is None
        assert _parting(trans, accept, q, trans2, accept2, p, comb, max_parting=len(parting)) == parting
    for b in range(256):
        a, c = int(trans[q, b]), int(trans2[p, b])
        if (a < 0) != (c < 0) or (a >= 0 and bool(accept[a]) != bool(accept2[c])):
            assert b in parting, b
    tokens = [bytes(data[o:o + n]) for o, n in zip(offsets.tolist(), lengths.tolist())]
    rows = np.array([r for r, token in enumerate(tokens) if not parting & set(token)], dtype=np.int32)
    zero = np.zeros(len(rows), dtype=np.int32)
    from_q = _compiled(trans, accept, data, offsets, lengths, rows, zero, q, False)
    from_p = _compiled(trans2, accept2, data, offsets, lengths, rows, zero, p, False)
    assert [x.tolist() for i, x in enumerate(from_q) if i != 1] == [x.tolist() for i, x in enumerate(from_p) if i != 1]


def _sorted_rows(tokens: list[bytes]):
    """(sorted tokens, their `_scan.Tokens`): rows in byte order, as `TokenBytes` sorts them."""
    tokens = sorted(tokens)
    return tokens, _rows(*_packed(tokens))


def _parting_rows_oracle(trans, accept, q, trans2, accept2, p, tokens: list[bytes]) -> list[int]:
    """`parting_rows` as its contract reads: the rows whose bytes, walked from q and p side
    by side, reach a byte that kills one walk and not the other, or leaves one accepting and
    the other not."""
    found = []
    for r, token in enumerate(tokens):
        x, y = q, p
        for b in token:
            x, y = int(trans[x, b]), int(trans2[y, b])
            if x < 0 and y < 0:
                break
            if (x < 0) != (y < 0) or bool(accept[x]) != bool(accept2[y]):
                found.append(r)
                break
    return found


def _parting_rows(trans, accept, q, trans2, accept2, p, rows, comb: bool, max_pairs: int = 10_000,
                  max_rows: int = 10_000, same: bool = False, max_parting: int = 10_000) -> list[int] | None:
    table = _table(trans, accept, comb)
    found = _scan.parting_rows(table, q, table if same else _table(trans2, accept2, not comb), p, rows, max_pairs,
                               max_parting, max_rows)
    return None if found is None else np.frombuffer(found, dtype=np.int32).tolist()


@settings(max_examples=400, deadline=None)
@given(case=cases(), other=cases(), comb=st.booleans(), same=st.booleans())
def test_parting_rows_are_the_rows_on_which_walks_from_two_states_part(case, other, comb, same):
    """`parting_rows`: exactly the rows on which walks from q (one DFA) and p (another, or
    the same one) part, ascending; every other row walks alike from the two (the same ends
    and splits); None exactly when q and p differ on acceptance (no limit is reached here)."""
    trans, accept, data, offsets, lengths, *_, q = case
    trans2, accept2, *_, p = other
    if same:
        trans2, accept2, p = trans, accept, p % len(trans)
    tokens, rows = _sorted_rows(_tokens(data, offsets, lengths))
    found = _parting_rows(trans, accept, q, trans2, accept2, p, rows, comb, same=same)
    assert (found is None) == (bool(accept[q]) != bool(accept2[p]))
    if found is None:
        return
    assert found == _parting_rows_oracle(trans, accept, q, trans2, accept2, p, tokens)
    data, offsets, lengths = _packed(tokens)
    alike = np.array(sorted(set(range(len(tokens))) - set(found)), dtype=np.int32)
    zero = np.zeros(len(alike), dtype=np.int32)
    from_q = _compiled(trans, accept, data, offsets, lengths, alike, zero, q, False)
    from_p = _compiled(trans2, accept2, data, offsets, lengths, alike, zero, p, False)
    assert [x.tolist() for i, x in enumerate(from_q) if i != 1] == [x.tolist() for i, x in enumerate(from_p) if i != 1]
    if found:  # a row limit below what parts them gives up; one at it changes nothing
        assert _parting_rows(trans, accept, q, trans2, accept2, p, rows, comb, max_rows=len(found) - 1,
                             same=same) is None
        assert _parting_rows(trans, accept, q, trans2, accept2, p, rows, comb, max_rows=len(found) + 1,
                             same=same) in (found, None)  # (rows followed count too)


def test_parting_rows_follow_a_key_trie_and_give_up_past_their_limits():
    """A trie of the keys ``ab`` and ``b`` (state 0: the start; then `ab` -> 2, `b` -> 3,
    ending there) beside a state that takes any string of a and b and accepts it: they part
    only where a key ends (the trie state accepts too, but a key may not go on: ``abb``,
    ``ba`` die in the trie). Past the pair or row limit, None; unsorted rows and bad states
    are refused."""
    trie = np.full((4, 256), -1, dtype=np.int32)
    trie[0, ord("a")], trie[1, ord("b")], trie[0, ord("b")] = 1, 2, 3
    trie_accept = np.array([True, False, True, True])
    loop = np.full((1, 256), -1, dtype=np.int32)
    loop[0, ord("a")] = loop[0, ord("b")] = 0
    loop_accept = np.ones(1, dtype=bool)
    tokens, rows = _sorted_rows([b"a", b"ab", b"aba", b"abb", b"b", b"ba", b"bb", b"c", b"aa"])
    assert tokens == [b"a", b"aa", b"ab", b"aba", b"abb", b"b", b"ba", b"bb", b"c"]
    for comb in (False, True):
        # `a`: the trie does not accept after it; `aa`: dies in the trie; `ab`+: parts at `a`
        found = _parting_rows(trie, trie_accept, 0, loop, loop_accept, 0, rows, comb)
        assert [tokens[r] for r in found] == [b"a", b"aa", b"ab", b"aba", b"abb", b"ba", b"bb"]
        assert found == _parting_rows_oracle(trie, trie_accept, 0, loop, loop_accept, 0, tokens)
        assert _parting_rows(trie, trie_accept, 0, loop, loop_accept, 0, rows, comb, max_pairs=1) is None
        assert _parting_rows(trie, trie_accept, 0, loop, loop_accept, 0, rows, comb, max_rows=6) is None
        # two runs part them (a's end, and b or nothing past ab and b): past a limit of one, None
        assert _parting_rows(trie, trie_accept, 0, loop, loop_accept, 0, rows, comb, max_parting=1) is None
        assert _parting_rows(trie, trie_accept, 0, loop, loop_accept, 0, rows, comb, max_parting=2) == found
        assert _parting_rows(trie, trie_accept, 2, loop, loop_accept, 0, rows, comb) == [0, 1, 2, 3, 4, 5, 6, 7]
        assert _parting_rows(trie, trie_accept, 1, loop, loop_accept, 0, rows, comb) is None  # accept differs
    table, loop_table = _table(trie, trie_accept), _table(loop, loop_accept)
    assert _scan.parting_rows(table, 3, table, 3, rows, 1, 0, 0) == b""  # a state parts from itself on nothing
    unsorted = _rows(*_packed([b"b", b"a"]))
    with pytest.raises(ValueError, match="^parting_rows: the rows are not sorted by their bytes$"):
        _scan.parting_rows(table, 0, loop_table, 0, unsorted, 10, 10, 10)
    for q, p, pairs, parting, most in ((4, 0, 10, 10, 10), (0, 1, 10, 10, 10), (0, 0, 0, 10, 10), (0, 0, 10, -1, 10),
                                       (0, 0, 10, 10, -1)):
        with pytest.raises(ValueError, match="^parting_rows: a state or a limit is out of range$"):
            _scan.parting_rows(table, q, loop_table, p, rows, pairs, parting, most)


def test_agree_bytes_follows_the_bytes_of_a_run_that_another_pair_found_parting():
    """From (0, 0), `b` parts the two (A accepts after it, B does not) and `c` leads to (2, 2),
    which treats `b` and `c` alike (one run); from there `c` leads on to (3, 3), where `d`
    parts them. A run is not done with because one of its bytes parts the two elsewhere:
    `d` is found only through `c`."""
    a, b = np.full((5, 256), -1, dtype=np.int32), np.full((5, 256), -1, dtype=np.int32)
    for trans in (a, b):
        trans[0, ord("b")], trans[0, ord("c")] = 1, 2
        trans[2, ord("b")] = trans[2, ord("c")] = 3
        trans[3, ord("d")] = 4
    accept_a, accept_b = np.zeros(5, dtype=bool), np.zeros(5, dtype=bool)
    accept_a[[1, 4]] = True
    for comb in (False, True):
        assert _parting(a, accept_a, 0, b, accept_b, 0, comb) == {ord("b"), ord("d")}
    assert _parting_oracle(a, accept_a, 0, b, accept_b, 0) == {ord("b"), ord("d")}


def test_agree_bytes_gives_up_past_its_pair_limit_and_refuses_bad_states():
    """A counter (state k: k more `a`) and a loop on `a` reach a pair per count: past the
    limit, None; within it, the one parting byte is `a` (the counter's end). Limits are
    checked, a negative parting limit too."""
    n = 6
    counter = np.full((n, 256), -1, dtype=np.int32)
    for k in range(n - 1):
        counter[k, ord("a")] = k + 1
    loop = np.full((1, 256), -1, dtype=np.int32)
    loop[0, ord("a")] = 0
    accept, accept_loop = np.ones(n, dtype=bool), np.ones(1, dtype=bool)
    assert _parting(counter, accept, 0, loop, accept_loop, 0, False, max_pairs=n) == {ord("a")}
    assert _parting(counter, accept, 0, loop, accept_loop, 0, False, max_pairs=n - 2) is None
    counter_table, loop_table = _table(counter, accept), _table(loop, accept_loop)
    for q, p, limit in ((n, 0, 5), (0, 1, 5), (0, 0, 0)):
        with pytest.raises(ValueError, match="^agree_bytes: a state or the pair limit is out of range$"):
            _scan.agree_bytes(counter_table, q, loop_table, p, limit, 16)
    with pytest.raises(ValueError, match="^agree_bytes: the parting limit is out of range$"):
        _scan.agree_bytes(counter_table, 0, loop_table, 0, 5, -1)
    with pytest.raises(TypeError, match="^agree_bytes takes 6 arguments$"):
        _scan.agree_bytes(counter_table, 0, loop_table, 0, 5)


@pytest.mark.parametrize(
    "q, p, limit, message",
    [
        (2, 0, 3, "agree_depth: a state or the limit is out of range"),
        (0, -1, 3, "agree_depth: a state or the limit is out of range"),
        (0, 1, -1, "agree_depth: a state or the limit is out of range"),
    ],
)
def test_agree_depth_refuses_states_it_does_not_have(q, p, limit, message):
    table = _table(np.full((2, 256), -1, dtype=np.int32), np.zeros(2, dtype=bool))
    with pytest.raises(ValueError, match=f"^{message}$"):
        _scan.agree_depth(table, q, table, p, limit)


def test_a_row_after_one_not_stepped_walks_from_the_start():
    """Rows resume from the states of the row before them; a row the start state loops on is
    not stepped, so the row after it has nothing to resume from, whatever the two share.
    State 0 loops on `a` and goes to 1 on `b`; state 1 loops on `a` and dies on `b`."""
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, ord("a")], trans[0, ord("b")], trans[1, ord("a")] = 0, 1, 1
    tokens = [b"baaa", b"aaaa", b"aaab"]  # walked to state 1 / not stepped / 3 bytes shared with the last
    data, offsets, lengths = _packed(tokens)
    shared = np.array(_common_prefixes(tokens), dtype=np.uint8)
    out = _scan.scan_ranges(_table(trans, np.array([False, True])),
                            _rows(data, offsets, lengths, _sets(tokens), _kinds(data, offsets, lengths), shared,
                                  _scan.next_smaller(shared)),
                            np.array([0], dtype=np.int64), np.array([3], dtype=np.int64), 0, 0, False, None)
    end_rows, end_states, split_rows, split_pos = (np.frombuffer(part, dtype=np.int32).tolist() for part in out)
    assert (end_rows, end_states) == ([0, 1, 2], [1, 0, 1])
    assert (split_rows, split_pos) == ([0, 0, 0], [1, 2, 3])


@settings(max_examples=300, deadline=None)
@given(case=cases(), comb=st.booleans(), choices=st.data())
def test_a_tree_part_walks_the_picked_suffixes_and_packs_the_ids_that_end(case, comb, choices):
    """`scan_part`: the suffixes at `picks` walked from state 0 as `scan` walks them, and the
    ids of the rows that end inside packed as `pack_ids` packs them (None: no row ends).
    Without picks, the suffixes whose next byte state 0 takes, in order."""
    trans, accept, data, offsets, lengths, rows, pos, _ = case
    every = choices.draw(st.booleans())
    if every:
        picks = np.array([i for i, (r, p) in enumerate(zip(rows.tolist(), pos.tolist()))
                          if p < lengths[r] and trans[0, data[offsets[r] + p]] >= 0], dtype=np.int64)
    else:
        picks = np.array(choices.draw(st.lists(st.integers(0, len(rows) - 1), max_size=12)) if len(rows) else [],
                         dtype=np.int64)
    ids = np.array(choices.draw(st.permutations(range(len(lengths)))), dtype=np.int32) * 7 % 97  # repeats allowed
    end_rows, _, split_rows, split_pos = reference(trans, accept, data, offsets, lengths, rows[picks], pos[picks], 0)
    packed, got_rows, got_pos, after = _scan.scan_part(
        _table(trans, accept, comb),
        _rows(data, offsets, lengths, _sets(_tokens(data, offsets, lengths)), _kinds(data, offsets, lengths), ids=ids),
        rows, pos, None if every else picks, 4)
    expected = _scan.pack_ids(ids[end_rows].astype(np.int64), 4) if len(end_rows) else None
    assert packed == expected
    assert np.frombuffer(got_rows, dtype=np.int32).tolist() == split_rows.tolist()
    assert np.frombuffer(got_pos, dtype=np.int32).tolist() == split_pos.tolist()
    assert after == sum(1 << b for b in {int(data[offsets[r] + p]) for r, p in zip(split_rows, split_pos)})


def _tokens(data, offsets, lengths) -> list[bytes]:
    return [bytes(data[o:o + n]) for o, n in zip(offsets.tolist(), lengths.tolist())]


def test_a_thin_state_counts_the_rows_it_walks_not_those_it_steps_over():
    """`scan_state` past `most` rows: the literal ``abx`` from its start takes the nine rows
    that start with ``a``; it walks ``a``, ``ab``, ``abx``, ``ac`` and ``ad`` and steps over
    the four rows between ``ac`` and ``ad`` (they die at the same ``c``), so a limit of five
    walked rows gives the scan, and of four, None."""
    tokens = [b"a", b"ab", b"abx", b"ac", b"aca", b"acb", b"acc", b"acd", b"ad", b"b"]
    data, offsets, lengths = _packed(tokens)
    trans = np.full((4, 256), -1, dtype=np.int32)
    trans[0, ord("a")], trans[1, ord("b")], trans[2, ord("x")] = 1, 2, 3
    accept = np.array([False, False, False, True])
    starts = np.zeros(257, dtype=np.int64)
    np.cumsum(np.bincount([t[0] for t in tokens], minlength=256), out=starts[1:])
    shared = np.array(_common_prefixes(tokens), dtype=np.uint8)
    ids = np.arange(len(tokens), dtype=np.int32)

    def scan(thin):
        return _scan.scan_state(_table(trans, accept),
                                _rows(data, offsets, lengths, _sets(tokens), _kinds(data, offsets, lengths), shared,
                                      _scan.next_smaller(shared), ids, starts), 0, 2, 1, thin)

    assert scan(4) is None and scan(0) is None
    packed, end_rows, split_rows, split_pos = scan(5)
    assert packed == _scan.pack_ids(np.array([0, 1, 2], dtype=np.int64), 1)
    assert np.frombuffer(end_rows, dtype=np.int32).tolist() == [0, 1, 2]
    assert split_rows == split_pos == b""


@pytest.mark.parametrize("picks, message", [
    ([2], "scan_part: a pick, row or position is out of range"),
    ([-1], "scan_part: a pick, row or position is out of range"),
])
def test_bad_picks_are_refused(picks, message):
    data, offsets, lengths = _packed([b"ab", b"b"])
    with pytest.raises(ValueError) as err:
        _scan.scan_part(_table(np.zeros((1, 256), dtype=np.int32), np.array([True])),
                        _rows(data, offsets, lengths, ids=np.array([0, 1], dtype=np.int32)),
                        np.array([0, 1], dtype=np.int32), np.array([0, 0], dtype=np.int32),
                        np.array(picks, dtype=np.int64), 1)
    assert str(err.value) == message


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=6), min_size=1, max_size=20))
def test_row_kinds_hold_the_group_of_every_byte(tokens):
    """Each row's kinds: bit g set exactly when one of its bytes is in group g
    (`_scan.BYTE_GROUPS`: byte -> group, 16 groups, the string-body bytes whole groups)."""
    groups = _scan.BYTE_GROUPS
    expected = [sum(1 << g for g in {groups[b] for b in token}) for token in tokens]
    assert _kinds(*_packed(tokens)).tolist() == expected


def test_byte_groups_split_a_json_string_body_into_whole_groups():
    """Quote, backslash, controls and non-ASCII (what a JSON string body state leaves on) are
    groups of their own, apart from the bytes it loops on."""
    groups = _scan.BYTE_GROUPS
    leaving = {0x22, 0x5C, *range(0x20), *range(0x80, 0x100)}
    assert not {groups[b] for b in leaving} & {groups[b] for b in set(range(256)) - leaving}
    assert len(set(groups)) == 16


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 255), max_size=40))
def test_next_smaller_is_the_first_later_row_with_a_smaller_count(counts):
    shared = np.array(counts, dtype=np.uint8)
    expected = [next((j for j in range(i + 1, len(counts)) if counts[j] < counts[i]), len(counts))
                for i in range(len(counts))]
    assert np.frombuffer(_scan.next_smaller(shared), dtype=np.int32).tolist() == expected


def test_rows_that_die_within_a_shared_prefix_are_stepped_over_and_a_bad_skip_refused():
    """Every row after `ab` holds the `b` that kills state 0 at depth 1: none is walked,
    and a skip that does not lead forward is refused instead of looped on."""
    trans = np.full((1, 256), -1, dtype=np.int32)
    trans[0, ord("a")] = 0
    tokens = [b"ab", b"aba", b"abb", b"abba", b"ac", b"b"]
    data, offsets, lengths = _packed(tokens)
    shared = np.array(_common_prefixes(tokens), dtype=np.uint8)
    table = _table(trans, np.array([False]))
    ranges = (np.array([0], dtype=np.int64), np.array([6], dtype=np.int64), 0, 0, False, None)
    out = [np.frombuffer(part, dtype=np.int32).tolist()
           for part in _scan.scan_ranges(table, _rows(data, offsets, lengths, shared=shared,
                                                      skip=_scan.next_smaller(shared)), *ranges)]
    assert out == [[], [], [], []]
    tokens = [b"ab", b"abb", b"aa"]  # the row after the dead ones lives: it is walked, not stepped over
    data, offsets, lengths = _packed(tokens)
    shared = np.array(_common_prefixes(tokens), dtype=np.uint8)
    out = _scan.scan_ranges(table, _rows(data, offsets, lengths, shared=shared, skip=_scan.next_smaller(shared)),
                            np.array([0], dtype=np.int64), np.array([3], dtype=np.int64), 0, 0, False, None)
    assert [np.frombuffer(part, dtype=np.int32).tolist() for part in out] == [[2], [0], [], []]
    data, offsets, lengths = _packed([b"ab", b"aba", b"abb", b"abba", b"ac", b"b"])
    rows = _rows(data, offsets, lengths, shared=np.array([0, 2, 2, 3, 1, 0], dtype=np.uint8),
                 skip=np.zeros(6, dtype=np.int32))
    with pytest.raises(ValueError) as err:
        _scan.scan_ranges(table, rows, *ranges)
    assert str(err.value) == "scan_ranges: a row or position is out of range"


def _byte_runs(trans: np.ndarray) -> bytes:
    """A run number per byte: a new run wherever some state treats a byte apart from the one
    before (`DFA.byte_runs`, recomputed here)."""
    cut = np.zeros(256, dtype=bool)
    cut[1:] = (trans[:, 1:] != trans[:, :-1]).any(axis=0)
    return np.cumsum(cut).astype(np.uint8).tobytes()


@settings(max_examples=300, deadline=None)
@given(case=cases(), comb=st.booleans(), shift=st.sampled_from(sorted(ALPHABET)))
def test_reaches_more_counts_the_states_a_search_reaches(case, comb, shift):
    """`reaches_more`: whether more than `limit` states are reachable from q (every limit up
    to past the states), against a
    breadth-first search over every byte; stepping one byte per run, of the automaton's runs
    or (no runs given) of each state's own, gives the same answer (the alphabet moved down by
    `shift`: one of its bytes is byte 0, the first run's)."""
    trans, accept, *_ = case
    trans = np.ascontiguousarray(np.roll(trans, -shift, axis=1))
    q = case[-1]
    seen, todo = {q}, [q]
    while todo:
        for target in trans[todo.pop()].tolist():
            if target >= 0 and target not in seen:
                seen.add(target)
                todo.append(target)
    table = _table(trans, accept, comb)
    for limit in range(len(trans) + 2):
        for runs in (b"", _byte_runs(trans)):
            assert _scan.reaches_more(table, q, limit, runs) == (len(seen) > limit), (limit, runs)


@pytest.mark.parametrize("q, limit, runs, message", [
    (3, 1, b"", "reaches_more: the state or the limit is out of range"),
    (-1, 1, b"", "reaches_more: the state or the limit is out of range"),
    (0, -1, b"", "reaches_more: the state or the limit is out of range"),
    (0, 1, bytes(255), "reaches_more: runs are not 256 ascending run numbers"),
    (0, 1, b"\x01" * 256, "reaches_more: runs are not 256 ascending run numbers"),
    (0, 1, bytes(128) + b"\x02" * 128, "reaches_more: runs are not 256 ascending run numbers"),
])
def test_bad_reach_questions_are_refused(q, limit, runs, message):
    trans = np.full((3, 256), -1, dtype=np.int32)
    trans[0, ord("a")], trans[1, ord("b")] = 1, 2
    with pytest.raises(ValueError) as err:
        _scan.reaches_more(_table(trans, np.zeros(3, dtype=np.bool_)), q, limit, runs)
    assert str(err.value) == message
