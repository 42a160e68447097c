"""TokenSet: the packed layout the engine ORs masks in (sparse and dense forms)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc.tokens.token_set import TokenSet


def reference(ids, n_words: int) -> np.ndarray:
    words = np.zeros(n_words, dtype=np.uint32)
    for i in ids:
        words[i // 32] |= np.uint32(1 << (i % 32))
    return words


@settings(max_examples=300, deadline=None)
@given(
    n_words=st.integers(1, 40),
    data=st.data(),
)
def test_or_into_sets_exactly_the_ids_bits(n_words, data):
    ids = data.draw(st.lists(st.integers(0, n_words * 32 - 1), max_size=n_words * 40))
    before = np.array(data.draw(st.lists(st.integers(0, 2**32 - 1), min_size=n_words, max_size=n_words)), dtype=np.uint32)
    tokens = TokenSet.of(np.array(ids, dtype=np.int64), n_words)
    acc = before.copy()
    tokens.or_into(acc)
    assert np.array_equal(acc, before | reference(ids, n_words))
    assert tokens.ids().tolist() == sorted(set(ids))
    assert tokens.count == len(set(ids))


def test_forms():
    sparse = TokenSet.of(np.array([3, 35, 36, 4000]), 200)
    assert sparse.words.tolist() == [0, 1, 125] and sparse.bits.tolist() == [1 << 3, (1 << 3) | (1 << 4), 1]
    dense = TokenSet.of(np.arange(0, 200 * 32, 7), 200)
    assert dense.words is None and len(dense.bits) == 200


@settings(max_examples=200, deadline=None)
@given(n_words=st.integers(1, 40), data=st.data())
def test_union_holds_every_token_of_its_parts(n_words, data):
    parts = data.draw(st.lists(st.lists(st.integers(0, n_words * 32 - 1), min_size=1, max_size=n_words * 20), max_size=6))
    union = TokenSet.union([TokenSet.of(np.array(p, dtype=np.int64), n_words) for p in parts], n_words)
    everything = sorted({i for p in parts for i in p})
    if not everything:
        assert union is None
        return
    acc = np.zeros(n_words, dtype=np.uint32)
    union.or_into(acc)
    assert np.array_equal(acc, reference(everything, n_words))
    assert union.ids().tolist() == everything and union.count == len(everything)
    alone = TokenSet.of(np.array(everything, dtype=np.int64), n_words)  # the form its words decide
    assert union.bits.tolist() == alone.bits.tolist()
    assert (union.words is None and alone.words is None) or union.words.tolist() == alone.words.tolist()


@settings(max_examples=400, deadline=None)
@given(n_words=st.integers(1, 60), data=st.data())
def test_sorted_and_flagged_constructions_give_the_form_the_words_decide(n_words, data):
    """`of` sorts a few ids (fewer than a quarter of the words) and flags many: either way the
    set is sparse exactly when its non-zero words are at most an eighth of the vocabulary's,
    with those words ascending, their bits, and the count of distinct ids."""
    ids = data.draw(st.lists(st.integers(0, n_words * 32 - 1), max_size=n_words * 12))
    got = TokenSet.of(np.array(ids, dtype=np.int64), n_words)
    expected = reference(ids, n_words)
    nonzero = np.flatnonzero(expected)
    assert got.count == len(set(ids)) and got.bits.dtype == np.uint32
    if len(nonzero) * 8 > n_words:
        assert got.words is None and got.bits.tolist() == expected.tolist()
    else:
        assert got.words.dtype == np.intp and got.words.tolist() == nonzero.tolist()
        assert got.bits.tolist() == expected[nonzero].tolist()
    assert not got.bits.flags.writeable and (got.words is None or not got.words.flags.writeable)


@pytest.mark.parametrize("ids", [[-1], [64]])
def test_ids_outside_the_vocabulary_are_refused(ids):
    with pytest.raises(ValueError, match="pack_ids: a token id is out of range"):
        TokenSet.of(np.array(ids, dtype=np.int64), 2)


@settings(max_examples=300, deadline=None)
@given(n_words=st.integers(1, 60), data=st.data())
def test_a_packed_mask_becomes_the_set_of_its_bits(n_words, data):
    """`from_words`: None for an all-zero mask, else the same form and arrays as `of` gives for
    the ids whose bits are set."""
    words = np.array(data.draw(st.lists(st.integers(0, 2**32 - 1) | st.just(0), min_size=n_words,
                                        max_size=n_words)), dtype=np.uint32)
    got = TokenSet.from_words(words)
    ids = [32 * w + b for w in range(n_words) for b in range(32) if int(words[w]) >> b & 1]
    if not ids:
        assert got is None
        return
    expected = TokenSet.of(np.array(ids, dtype=np.int64), n_words)
    assert got.count == expected.count == len(ids)
    assert got.bits.tolist() == expected.bits.tolist()
    assert (got.words is None and expected.words is None) or got.words.tolist() == expected.words.tolist()


@settings(max_examples=300, deadline=None)
@given(n_words=st.integers(0, 40), extra=st.integers(0, 5), stride=st.integers(1, 3), data=st.data())
def test_write_into_writes_the_mask_and_zeroes_the_rest_of_the_target(n_words, extra, stride, data):
    """A mask of `n_words` words into a wider target (every word it has written: the mask,
    then zeros), through a strided view too; the words between a strided view's own stay."""
    ids = data.draw(st.lists(st.integers(0, max(n_words * 32 - 1, 0)), max_size=n_words * 40)) if n_words else []
    tokens = TokenSet.of(np.array(ids, dtype=np.int64), n_words)
    width = n_words + extra
    backing = np.array(data.draw(st.lists(st.integers(-2**31, 2**31 - 1), min_size=width * stride,
                                          max_size=width * stride)), dtype=np.int32)
    before = backing.copy()
    target = backing[::stride]
    tokens.write_into(target, n_words)
    expected = np.zeros(width, dtype=np.uint32)
    expected[:n_words] = reference(ids, n_words)
    assert target.view(np.uint32).tolist() == expected.tolist()
    untouched = np.ones(len(backing), dtype=bool)
    untouched[::stride] = False
    assert backing[untouched].tolist() == before[untouched].tolist()


def test_write_into_refuses_short_read_only_and_wrong_targets_untouched():
    tokens = TokenSet.of(np.array([3, 40]), 2)
    short = np.full(1, 7, dtype=np.int32)
    with pytest.raises(ValueError, match=r"^bitmask buffer has 1 words; 2 needed$"):
        tokens.write_into(short, 2)
    frozen = np.full(2, 7, dtype=np.int32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        tokens.write_into(frozen, 2)
    with pytest.raises(ValueError, match="^write_into: the target must be 1-D with 4-byte items$"):
        tokens.write_into(np.zeros(2, dtype=np.int64), 2)
    with pytest.raises(ValueError, match="^write_into: the target must be 1-D with 4-byte items$"):
        tokens.write_into(np.zeros((2, 2), dtype=np.int32), 2)
    with pytest.raises(TypeError, match=r"^write_into\(target, n_words\): n_words a non-negative int$"):
        tokens.write_into(np.zeros(2, dtype=np.int32), -1)
    with pytest.raises(TypeError, match=r"^write_into\(target, n_words\): n_words a non-negative int$"):
        tokens.write_into(np.zeros(2, dtype=np.int32), "2")
    assert short.tolist() == [7] and frozen.tolist() == [7, 7]


@pytest.mark.parametrize("who", ["or_into", "union_sets", "write_into"])
@pytest.mark.parametrize("bits, words, message", [
    ([1, 2], None, "a dense set is not as long as the mask"),
    ([1], [4], "a word is out of range"),
    ([1], [-1], "a word is out of range"),
    ([1, 2], [0], "inconsistent array sizes"),
])
def test_sets_that_do_not_fit_the_mask_are_refused(who, bits, words, message):
    """OR-ed into a mask of 4 words, written into one, or united with a set that fits one
    (nothing written)."""
    from grammarc.tokens import _scan

    wrong = TokenSet(np.array(bits, dtype=np.uint32), None if words is None else np.array(words, dtype=np.intp), 1)
    acc = np.full(6, 5, dtype=np.uint32) if who == "write_into" else np.zeros(4, dtype=np.uint32)
    before = acc.tolist()
    with pytest.raises(ValueError) as err:
        if who == "or_into":
            wrong.or_into(acc)
        elif who == "write_into":  # into a wider target
            wrong.write_into(acc, 4)
        else:
            _scan.union_sets([TokenSet.of(np.array([3]), 4), wrong], 4)
    assert str(err.value) == f"{who}: {message}"
    assert acc.tolist() == before


def test_a_union_of_what_is_not_a_token_set_is_refused():
    from grammarc.tokens import _scan

    with pytest.raises(TypeError, match="^union_sets: a set is not a TokenSet$"):
        _scan.union_sets([TokenSet.of(np.array([3]), 4), object()], 4)


def test_token_sets_stay_out_of_the_cyclic_collector_unless_a_subclass_adds_attributes():
    """A TokenSet holds bytes only, so it is untracked when made (a new schema's masks make
    thousands, each one more object for every collection to walk); a subclass with a
    __dict__ could be in a cycle, and stays tracked."""
    import gc

    class Annotated(TokenSet):
        pass

    sets = [TokenSet.of(np.array([1, 2]), 4), TokenSet.union([TokenSet.of(np.array([3]), 4)] * 9, 4),
            TokenSet.from_words(np.array([0, 5, 0, 0], dtype=np.uint32)), TokenSet.empty()]
    assert [gc.is_tracked(s) for s in sets] == [False] * 4
    annotated = Annotated(b"\x00" * 16, None, 0)
    annotated.me = annotated  # a cycle: only the collector frees it
    assert gc.is_tracked(annotated)


@settings(max_examples=400, deadline=None)
@given(n_words=st.integers(1, 200), data=st.data())
def test_a_union_is_the_set_of_its_sets_ored_together(n_words, data):
    """`union`: the same form and arrays as `from_words` gives for the mask the sets OR into,
    sparse sets only (merged word by word) or with dense ones (every word OR-ed); sparse sets
    that keep zero words, or list theirs out of order, are read alike."""
    sets = []
    for _ in range(data.draw(st.integers(2, 8))):
        ids = data.draw(st.lists(st.integers(0, n_words * 32 - 1), min_size=1, max_size=n_words * 8))
        tokens = TokenSet.of(np.array(ids, dtype=np.int64), n_words)
        if tokens.words is not None and data.draw(st.booleans()):  # the same tokens, laid out otherwise
            order = data.draw(st.permutations(range(len(tokens.words))))
            zero = data.draw(st.integers(0, n_words - 1))
            words = np.append(tokens.words[order], zero) if zero not in tokens.words else tokens.words[order]
            bits = np.append(tokens.bits[order], 0) if zero not in tokens.words else tokens.bits[order]
            tokens = TokenSet(bits.astype(np.uint32), words.astype(np.intp), tokens.count)
        sets.append(tokens)
    acc = np.zeros(n_words, dtype=np.uint32)
    for tokens in sets:
        tokens.or_into(acc)
    got, expected = TokenSet.union(sets, n_words), TokenSet.from_words(acc)
    assert got.count == expected.count
    assert got.bits.tolist() == expected.bits.tolist()
    assert (got.words is None and expected.words is None) or got.words.tolist() == expected.words.tolist()
