"""The engine's masks against brute force, along random walks (DESIGN.md §11).

Two oracles, both independent of the engine:

* byte level (grammars without ``any!`` or ``except!`` budgets): token t is allowed
  exactly when the recognizer says text + t is a viable prefix, and EOS exactly when the
  text is complete. The recognizer is itself checked against tests/oracle.py;
* token level (``any!``, ``except!(X, n)``): tests/token_oracle.py decides whether a
  tokenized text is complete. The engine must allow EOS exactly then, never allow a token
  the byte-level recognizer refuses, never leave the walk at a dead end (after every
  allowed token some token or EOS is allowed), and never refuse a token that the token
  oracle completes within one more token.

Vocabularies are random cuts of UTF-8 text, so tokens often end inside a character
(b"\\xc3", b"a\\xc3", b"\\xa9"), as 499 of Llama-3's tokens do.
"""

from __future__ import annotations

import dataclasses
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies
import token_oracle
from grammarc.engine import Engine
from grammarc.ir import Except, Grammar
from grammarc.lowering.compiler import compile_grammar
from grammarc.runtime.recognizer import Recognizer
from grammarc.tokens import index
from grammarc.tokens.vocabulary import Vocabulary

ALPHABETS = ["ab", "a\u00e9"]  # é is two bytes: \xc3 \xa9
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


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
def pieces(draw, alphabet: str) -> list[bytes]:
    """1-24 distinct tokens: cuts of 1-4 bytes from UTF-8 text over `alphabet`."""
    out = []
    for _ in range(draw(st.integers(1, 24))):
        text = draw(st.text(st.sampled_from(alphabet), min_size=1, max_size=4)).encode()
        start = draw(st.integers(0, len(text) - 1))
        end = draw(st.integers(start + 1, min(len(text), start + 4)))
        out.append(text[start:end])
    return list(dict.fromkeys(out))


@st.composite
def vocabularies(draw, alphabet: str = "ab") -> Vocabulary:
    data = draw(pieces(alphabet)) + [b""]  # the EOS token carries no text
    return Vocabulary.from_bytes(data, eos_token_ids=[len(data) - 1])


def brute_force_mask(recognizer: Recognizer, vocab: Vocabulary) -> np.ndarray:
    mask = np.zeros(vocab.size, dtype=bool)
    for token_id, data in enumerate(vocab.tokens):
        if token_id in vocab.eos_token_ids:
            mask[token_id] = recognizer.is_complete()
        elif data and token_id not in vocab.special_ids:
            mask[token_id] = recognizer.clone().feed(data)
    return mask


@settings(SETTINGS, max_examples=150)
@given(alphabet=st.sampled_from(ALPHABETS), data=st.data())
def test_mask_equals_brute_force_along_random_walks(alphabet, data):
    grammar = _without_token_limits(data.draw(strategies.grammars(alphabet, any_token=False), label="grammar"))
    vocab = data.draw(vocabularies(alphabet), label="vocab")
    # a level of BUCKETED_ROWS suffixes or more is made whole from byte buckets (real
    # vocabularies); with 0, half the time, every level is
    with mock.patch.object(index, "BUCKETED_ROWS", data.draw(st.sampled_from([index.BUCKETED_ROWS, 0]))):
        _walk_against_brute_force(grammar, vocab, data)


def _walk_against_brute_force(grammar: Grammar, vocab: Vocabulary, data) -> None:
    engine = Engine(grammar, vocab)
    recognizer = Recognizer(compile_grammar(grammar))
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


@st.composite
def byte_complete_vocabularies(draw, alphabet: str) -> Vocabulary:
    """Every single byte (as in byte-level BPE: no text is out of the vocabulary's reach, so
    a dead end is the engine's fault), plus cuts of text over `alphabet`, plus EOS."""
    singles = [bytes([b]) for b in range(256)]
    data = singles + [p for p in draw(pieces(alphabet)) if len(p) > 1] + [b""]
    return Vocabulary.from_bytes(data, eos_token_ids=[len(data) - 1])


def _allowed(engine: Engine, vocab: Vocabulary) -> tuple[list[int], bool]:
    mask = engine.allowed_mask()
    eos = any(mask[i] for i in vocab.eos_token_ids)
    return [int(t) for t in np.flatnonzero(mask) if t not in vocab.eos_token_ids], eos


@settings(SETTINGS, max_examples=80)
@given(alphabet=st.sampled_from(ALPHABETS), data=st.data())
def test_token_budgets_and_any_token_against_the_token_oracle(alphabet, data):
    grammar = data.draw(strategies.grammars(alphabet, token_level=True), label="grammar")
    vocab = data.draw(byte_complete_vocabularies(alphabet), label="vocab")
    engine = Engine(grammar, vocab)
    recognizer = Recognizer(compile_grammar(grammar))  # byte level: any! = any bytes, budgets ignored
    interesting = [i for i, t in enumerate(vocab.tokens) if t and (len(t) > 1 or t.decode("latin-1") in alphabet
                                                                   or t[0] >= 0x80)]
    tokens: list[bytes] = []
    for _ in range(6):
        allowed, eos = _allowed(engine, vocab)
        allowed_set = set(allowed)
        assert eos == token_oracle.complete(grammar, tokens), f"EOS after {tokens}"
        assert eos == engine.accepts_eos()
        upper = brute_force_mask(recognizer, vocab)
        assert all(upper[t] for t in allowed), f"after {tokens}: allowed beyond the byte-level language"
        checked = [t for t in allowed if t in interesting][:12] + allowed[::29]
        for t in checked:  # no dead ends: after an allowed token, a token or EOS is allowed
            twin = engine.clone()
            twin.advance(t)
            after, after_eos = _allowed(twin, vocab)
            assert after or after_eos, f"dead end after {tokens + [vocab.tokens[t]]}"
        refused = [int(t) for t in np.flatnonzero(upper) if t not in allowed_set and t not in vocab.eos_token_ids]
        for t in [t for t in refused if t in interesting][:4] + refused[:2]:
            # refused by a budget or any!, allowed by the byte-level language: no short completion
            longer = tokens + [vocab.tokens[t]]
            assert not token_oracle.complete(grammar, longer), f"{longer} is complete but was refused"
            after = recognizer.clone()
            after.feed(vocab.tokens[t])
            for u in interesting:
                twin = after.clone()
                if twin.feed(vocab.tokens[u]) and twin.is_complete():
                    assert not token_oracle.complete(grammar, longer + [vocab.tokens[u]]), (
                        f"{longer + [vocab.tokens[u]]} is complete but {vocab.tokens[t]!r} was refused")
        choices = [t for t in allowed if t in interesting] or allowed
        if not choices:
            break
        token = data.draw(st.sampled_from(choices), label="token")
        engine.advance(token)
        assert recognizer.feed(vocab.tokens[token])
        tokens.append(vocab.tokens[token])
