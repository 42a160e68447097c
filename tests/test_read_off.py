"""`_scan.read_off` (a wide scan read off another state's, `TokenIndex._scan_near`) against
its NumPy oracle, the glue it replaced: the other scan's flags and splits with the walked
rows' replaced, merged by row, and its inside set edited; None exactly when the walked rows
scan as they do in the other scan."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc.automata.comb import CombTable
from grammarc.tokens import _scan
from grammarc.tokens.token_set import TokenSet

from scan_reference import dfa_and_tokens
from scan_reference import scan as reference_scan


def reference(trans, accept, data, offsets, lengths, ids, q, walked, inside, split_rows, split_pos, n_words):
    """The NumPy glue `_scan_near` ran before `read_off`: (inside, split_rows, split_pos,
    sorted ids of the new inside set), or None when the walked rows scan alike."""
    end_rows, _, rows, pos = reference_scan(trans, accept, data, offsets, lengths, walked,
                                            np.zeros(len(walked), np.int32), q)
    new = inside.copy()
    new[walked] = False
    new[end_rows] = True
    kept = ~np.isin(split_rows, walked)
    all_rows = np.concatenate([split_rows[kept], rows])
    order = np.argsort(all_rows, kind="stable")
    merged_rows, merged_pos = all_rows[order], np.concatenate([split_pos[kept], pos])[order]
    if (np.array_equal(new[walked], inside[walked]) and np.array_equal(merged_rows, split_rows)
            and np.array_equal(merged_pos, split_pos)):
        return None
    base = set(ids[inside].tolist())
    edited = (base - set(ids[walked].tolist())) | set(ids[end_rows].tolist())
    return new, merged_rows, merged_pos, sorted(edited)


@st.composite
def cases(draw):
    trans, accept, tokens = draw(dfa_and_tokens(5, 6, 40))
    n = len(trans)
    lengths = np.array([len(t) for t in tokens], dtype=np.int32)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    data = np.frombuffer(b"".join(tokens), dtype=np.uint8)
    n_rows = len(tokens)
    n_words = draw(st.integers(-(-n_rows // 32), -(-n_rows // 32) + 3))
    ids = np.array(draw(st.permutations(range(n_words * 32)))[:n_rows], dtype=np.int32)
    q, p = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
    # the other scan: a real one (of state p, or of q itself: then every row scans alike), or
    # flags and splits made up
    if draw(st.booleans()):
        end_rows, _, split_rows, split_pos = reference_scan(trans, accept, data, offsets, lengths,
                                                            np.arange(n_rows, dtype=np.int32),
                                                            np.zeros(n_rows, np.int32), p if draw(st.booleans()) else q)
        inside = np.zeros(n_rows, dtype=bool)
        inside[end_rows] = True
    else:
        inside = np.array(draw(st.lists(st.booleans(), min_size=n_rows, max_size=n_rows)), dtype=bool)
        splits = sorted(draw(st.sets(st.tuples(st.integers(0, n_rows - 1), st.integers(1, 5)), max_size=12)))
        split_rows = np.array([r for r, _ in splits], dtype=np.int32)
        split_pos = np.array([k for _, k in splits], dtype=np.int32)
    walked = np.array(draw(st.permutations(range(n_rows)))[:draw(st.integers(0, n_rows))], dtype=np.int32)
    return trans, accept, data, offsets, lengths, ids, q, walked, inside, split_rows, split_pos, n_words


def _args(case, comb: bool = False):
    trans, accept, data, offsets, lengths, ids, q, walked, inside, split_rows, split_pos, n_words = case
    if comb:
        packed = CombTable.from_dense(trans)
        table = _scan.Table(None, packed.base, packed.check, packed.next, accept)
    else:
        table = _scan.Table(trans, b"", b"", b"", accept)
    tokens = _scan.Tokens(data, offsets, lengths, b"", b"", b"", b"", ids, b"")
    words = np.zeros(n_words, dtype=np.uint32)
    _scan.pack_rows(inside.view(np.uint8), ids, words)
    base_set = TokenSet.from_words(words) or TokenSet.empty()
    return [table, tokens, q, walked, inside.view(np.uint8), split_rows, split_pos, base_set, n_words]


@settings(max_examples=500, deadline=None)
@given(case=cases(), comb=st.booleans())
def test_read_off_equals_the_numpy_glue_it_replaced(case, comb):
    expected = reference(*case[:6], *case[6:])
    found = _scan.read_off(*_args(case, comb))
    if expected is None:
        assert found is None
        return
    assert found is not None
    inside, split_rows, split_pos, packed = found
    new, rows, pos, ids = expected
    assert np.array_equal(np.frombuffer(inside, dtype=bool), new)
    assert np.frombuffer(split_rows, np.int32).tolist() == rows.tolist()
    assert np.frombuffer(split_pos, np.int32).tolist() == pos.tolist()
    edited = TokenSet._of_packed(packed) or TokenSet.empty()
    assert edited.ids().tolist() == ids and edited.count == len(ids)


def test_walking_nothing_or_a_scan_of_the_same_state_reads_the_scan_off_as_it_is():
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, ord("a")], trans[1, ord("a")] = 1, 1
    accept = np.array([False, True])
    case = (trans, accept, np.frombuffer(b"aaab", np.uint8), np.array([0, 2, 3], np.int64),
            np.array([2, 1, 1], np.int32), np.array([5, 0, 9], np.int32), 0, np.array([2, 0], np.int32),
            np.array([True, True, False]), np.array([0], np.int32), np.array([1], np.int32), 1)
    assert _scan.read_off(*_args(case)) is None  # "aa" splits after "a" and stays; "a" stays; "b" dies
    changed = case[:8] + (np.array([True, True, True]),) + case[9:]  # but the other scan kept "b"
    inside, rows, pos, packed = _scan.read_off(*_args(changed))
    assert inside == b"\x01\x01\x00" and np.frombuffer(rows, np.int32).tolist() == [0]
    assert (TokenSet._of_packed(packed)).ids().tolist() == [0, 5]


@pytest.mark.parametrize("change, message", [
    (lambda a: a.__setitem__(3, np.array([0, 0], np.int32)), "a walked row is out of range or repeated"),
    (lambda a: a.__setitem__(3, np.array([3], np.int32)), "a walked row is out of range or repeated"),
    (lambda a: a.__setitem__(3, np.array([-1], np.int32)), "a walked row is out of range or repeated"),
    (lambda a: a.__setitem__(4, np.zeros(2, np.uint8)), "inconsistent array sizes"),
    (lambda a: a.__setitem__(5, np.array([1, 0], np.int32)), "inconsistent array sizes"),
    (lambda a: (a.__setitem__(5, np.array([2, 0], np.int32)), a.__setitem__(6, np.array([1, 1], np.int32))),
     "the splits are out of range or not by row"),
    (lambda a: (a.__setitem__(5, np.array([7], np.int32))), "the splits are out of range or not by row"),
    (lambda a: a.__setitem__(2, 5), "the state is out of range"),
    (lambda a: a.__setitem__(8, 0), "a token id is out of range"),
])
def test_bad_arguments_are_refused_not_read_out_of_bounds(change, message):
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, ord("a")], trans[1, ord("a")] = 1, 1
    case = (trans, np.array([False, True]), np.frombuffer(b"aaab", np.uint8), np.array([0, 2, 3], np.int64),
            np.array([2, 1, 1], np.int32), np.array([5, 0, 9], np.int32), 0, np.array([2, 0], np.int32),
            np.array([True, True, False]), np.array([0], np.int32), np.array([1], np.int32), 1)
    args = _args(case)
    change(args)
    with pytest.raises(ValueError, match=f"^read_off: {message}$"):
        _scan.read_off(*args)


def test_a_one_row_scan_leaves_cpythons_one_byte_bytes_alone():
    """The new flags are written into bytes of their own: bytes made from one byte of data
    are CPython's shared object for that byte (`b"\\x01"` everywhere in the process)."""
    trans = np.full((1, 256), -1, dtype=np.int32)
    case = (trans, np.array([False]), np.frombuffer(b"a", np.uint8), np.array([0], np.int64),
            np.array([1], np.int32), np.array([3], np.int32), 0, np.array([0], np.int32),
            np.array([True]), np.zeros(0, np.int32), np.zeros(0, np.int32), 1)
    inside, _, _, packed = _scan.read_off(*_args(case))  # "a" dies: its flag goes 1 -> 0
    assert inside == b"\x00" and TokenSet._of_packed(packed) is None
    assert bytes([1])[0] == 1 and bytes.fromhex("01")[0] == 1
