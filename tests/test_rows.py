"""A vocabulary's token rows (`grammarc.tokens.rows`): sorted by bytes, and what each row
shares with the one before it, which scans resume from (tests/test_compiled_scan.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vocabularies
from grammarc.tokens import _scan
from grammarc.tokens.rows import common_prefixes, rows_by_byte, token_bytes
from grammarc.tokens.vocabulary import Vocabulary


def _common(before: bytes, token: bytes) -> int:
    n = 0
    while n < min(len(before), len(token)) and before[n] == token[n]:
        n += 1
    return n


def _rows(tokens: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lengths = np.array([len(t) for t in tokens], dtype=np.int32)
    offsets = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    return np.frombuffer(b"".join(tokens), dtype=np.uint8), offsets, lengths


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=9).map(lambda t: bytes(b % 3 for b in t)), min_size=1, max_size=40),
       st.booleans())
def test_common_prefixes_count_the_bytes_each_row_shares_with_the_one_before(tokens, in_order):
    tokens = sorted(tokens) if in_order else tokens
    expected = [0] + [_common(a, b) for a, b in zip(tokens, tokens[1:])]
    assert common_prefixes(*_rows(tokens)).tolist() == expected


def test_a_prefix_shared_past_255_bytes_counts_as_255():
    """uint8: a lower bound is all a scan needs (it then steps the rest itself)."""
    tokens = [b"x" * 300, b"x" * 300 + b"y", b"x" * 254 + b"z", b"x" * 255 + b"z"]
    assert common_prefixes(*_rows(tokens)).tolist() == [0, 255, 254, 254]


def test_llama3_rows_are_sorted_and_share_what_their_bytes_share():
    rows = token_bytes(vocabularies.llama3())
    tokens = [bytes(rows.data[o:o + n]) for o, n in zip(rows.offsets.tolist(), rows.lengths.tolist())]
    assert tokens == sorted(tokens)
    assert rows.shared.tolist() == [0] + [min(255, _common(a, b)) for a, b in zip(tokens, tokens[1:])]


def test_rows_hold_the_normal_non_empty_tokens_with_their_ids():
    vocab = Vocabulary.from_bytes([b"b", b"ab", b"", b"a", b"ab"], eos_token_ids=[2])
    rows = token_bytes(vocab)
    tokens = [bytes(rows.data[o:o + n]) for o, n in zip(rows.offsets.tolist(), rows.lengths.tolist())]
    assert list(zip(rows.ids.tolist(), tokens)) == [(3, b"a"), (1, b"ab"), (4, b"ab"), (0, b"b")]
    assert rows.shared.tolist() == [0, 1, 2, 0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=9).map(lambda t: bytes(b % 5 * 60 for b in t)), min_size=1, max_size=40))
def test_rows_by_byte_list_each_row_once_under_every_byte_it_holds(tokens):
    rows, starts = rows_by_byte(*_rows(tokens))
    for b in range(256):
        assert rows[starts[b]:starts[b + 1]].tolist() == [r for r, token in enumerate(tokens) if b in token], b
    assert starts[256] == len(rows) == sum(len(set(token)) for token in tokens)


def test_llama3_rows_holding_a_byte_are_those_whose_byte_set_has_it():
    tokens = token_bytes(vocabularies.llama3())
    for b in (0, ord('"'), ord("\\"), ord("a"), 0x80, 0xC3, 0xFF):
        assert tokens.holding(b).tolist() == np.flatnonzero(tokens.sets[:, b // 64] >> np.uint64(b % 64) & np.uint64(1)).tolist()


def test_rows_by_byte_refuses_rows_outside_the_data():
    data = np.frombuffer(b"abc", dtype=np.uint8)
    with pytest.raises(ValueError, match="^rows_by_byte: a row lies outside the data$"):
        rows_by_byte(data, np.array([0, 2]), np.array([1, 2]))
    with pytest.raises(ValueError, match="^rows_by_byte: a row lies outside the data$"):
        rows_by_byte(data, np.array([-1]), np.array([1]))
    for make in (_scan.rows_by_byte, _scan.row_kinds):  # the two read the rows alike
        who = make.__name__
        with pytest.raises(ValueError, match=f"^{who}: inconsistent array sizes$"):
            make(data, np.array([0, 1], dtype=np.int64), np.array([1], dtype=np.int32))
        with pytest.raises(ValueError, match=f"^{who}: a row lies outside the data$"):
            make(data, np.array([2], dtype=np.int64), np.array([2], dtype=np.int32))
