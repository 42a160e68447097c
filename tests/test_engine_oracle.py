"""The engine's masks against a brute-force mask, along random walks (DESIGN.md §11).

For generated grammars and random small byte vocabularies (tokens of 1-4 bytes, many of
them spanning terminal boundaries), at every step: token t is allowed exactly when the
byte-level recognizer says text + t is a viable prefix, and EOS exactly when the text is
complete. The recognizer is itself checked against tests/oracle.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies
from grammarc.engine import Engine
from grammarc import Grammar
from grammarc.ir import Except, walk
from grammarc.runtime.recognizer import Recognizer
from grammarc.tokens.vocabulary import Vocabulary


def _without_token_limits(grammar: Grammar) -> Grammar:
    """except!(X, n) counts tokens, which a byte-level oracle cannot see: drop n."""

    def strip(expr):
        if isinstance(expr, Except) and expr.limit is not None:
            return dataclasses.replace(expr, limit=None)
        if hasattr(expr, "items"):
            return dataclasses.replace(expr, items=tuple(strip(i) for i in expr.items))
        if hasattr(expr, "item") and not isinstance(expr, Except):
            return dataclasses.replace(expr, item=strip(expr.item))
        return expr

    return Grammar(tuple((name, strip(expr)) for name, expr in grammar.rules), grammar.start)


@st.composite
def vocabularies(draw, alphabet: str = "ab") -> Vocabulary:
    chars = st.sampled_from(alphabet)
    tokens = draw(st.lists(st.text(chars, min_size=1, max_size=4), min_size=1, max_size=24, unique=True))
    data = [t.encode() for t in tokens]
    data.append(b"")  # the EOS token carries no text
    return Vocabulary.from_bytes(data, eos_token_ids=[len(data) - 1])


def brute_force_mask(recognizer: Recognizer, vocab: Vocabulary) -> np.ndarray:
    mask = np.zeros(vocab.size, dtype=bool)
    for token_id, data in enumerate(vocab.tokens):
        if token_id in vocab.eos_token_ids:
            mask[token_id] = recognizer.is_complete()
        elif data and token_id not in vocab.special_ids:
            mask[token_id] = recognizer.clone().feed(data)
    return mask


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(grammar=strategies.grammars(any_token=False), vocab=vocabularies(), data=st.data())
def test_mask_equals_brute_force_along_random_walks(grammar, vocab, data):
    grammar = _without_token_limits(grammar)
    engine = Engine(grammar, vocab)
    recognizer = Recognizer(grammar.compile())
    for _ in range(8):
        expected = brute_force_mask(recognizer, vocab)
        got = engine.allowed_mask()
        assert np.array_equal(got, expected), (
            f"text {recognizer.consumed} bytes; extra {np.flatnonzero(got & ~expected)}, "
            f"missing {np.flatnonzero(expected & ~got)}"
        )
        assert engine.accepts_eos() == recognizer.is_complete()
        choices = [int(t) for t in np.flatnonzero(expected) if t not in vocab.eos_token_ids]
        if not choices:
            break
        token = data.draw(st.sampled_from(choices))
        engine.advance(token)
        assert recognizer.feed(vocab.tokens[token])
