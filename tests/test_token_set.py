"""TokenSet: the packed layout the engine ORs masks in (sparse and dense forms)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc.tokens.index import TokenSet


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


@settings(max_examples=300, deadline=None)
@given(n_words=st.integers(1, 60), data=st.data())
def test_sorted_and_flagged_constructions_give_identical_sets(n_words, data):
    """`of` sorts a few ids and flags many: both must give the same arrays, count and form."""
    ids = np.array(data.draw(st.lists(st.integers(0, n_words * 32 - 1), max_size=n_words * 12)), dtype=np.int64)
    few, many = TokenSet._of_few(ids, n_words), TokenSet._of_many(ids, n_words)
    assert few.count == many.count
    assert (few.words is None) == (many.words is None)
    assert few.bits.dtype == many.bits.dtype == np.uint32
    assert np.array_equal(few.bits, many.bits)
    if few.words is not None:
        assert np.array_equal(few.words, many.words) and few.words.dtype == many.words.dtype
