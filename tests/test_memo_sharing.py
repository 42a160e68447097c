"""Hash-consed GSS vertices and walk summaries (recognizer.py, engine.py).

Masks are memoized per engine state; vertices are hash-consed so that equal parser stacks
give equal states across positions and documents. Walk summaries answer the part of a
token tree walk that the LR states alone decide. These tests pin both down exactly: the
states that must coincide do, the ones that must not do not, and every summarized walk
equals the plain walk on real GSS levels and the brute-force mask.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import grammarc
from grammarc.engine import Engine
from grammarc.runtime.recognizer import Recognizer
from grammarc.tokens.token_set import TokenSet
from grammarc.tokens.vocabulary import Vocabulary
from test_engine_oracle import brute_force_mask

# Runs of one character are what make long terminal chains in a token tree (a Llama-3
# token of 16 dashes is 16 unary minus signs in arithmetic).
CHAINS = [c * n for c in "-(*!&)" for n in (1, 2, 3, 5, 8, 13)]
PIECES = ["1", "23", "4.5", "+", " + ", "-1", "--(", "(-", ")*", "))", " ", "  ", "x", "y1", "=", ";", "{", "}",
          "if", " (", "(x", "x)", "0;", " -", "/*", "*/", "//", "\n", "int", " x", "a", "'a'", "&&", "||", "=="]


def _vocab() -> Vocabulary:
    tokens = [t.encode() for t in dict.fromkeys(CHAINS + PIECES)] + [b""]
    return Vocabulary.from_bytes(tokens, eos_token_ids=[len(tokens) - 1])


def _engine(name: str) -> Engine:
    return Engine(grammarc.stdlib(name), _vocab())


def _advance_text(engine: Engine, text: str) -> None:
    engine.reset()
    engine.advance_bytes(text)


def test_equal_stacks_give_equal_states():
    engine = _engine("arithmetic")
    _advance_text(engine, "(1+2")
    first = engine._state
    _advance_text(engine, "(7*3+4")
    assert engine._state == first
    _advance_text(engine, "((1+2")
    assert engine._state != first  # one more open parenthesis: another stack
    _advance_text(engine, "(1-2")
    assert engine._state == first  # '+' and '-' are one merged terminal: the same stack
    _advance_text(engine, "(1*2")
    assert engine._state != first  # a term inside a sum vs a product: other LR states


def test_a_state_reached_through_other_reductions_hits_the_memo():
    engine = _engine("arithmetic")
    ids = {data: i for i, data in enumerate(engine.vocab.tokens)}

    def mask_after(pieces: list[str]) -> TokenSet:
        engine.reset()
        for piece in pieces:
            engine.advance(ids[piece.encode()])
        return engine._mask_tokens()  # the memo's entry

    first = mask_after(["(", "1", " + ", "23"])
    # 1*23 reduces to a term, then to the same expression vertex as 1 did: same stacks
    assert mask_after(["(", "1", "*", "23", " + ", "1"]) is first
    assert mask_after(["(", "(", "1", " + ", "23"]) is not first


def _plain_walk(engine: Engine, tree, level, mask: np.ndarray) -> None:
    """The walk without summaries: every tree node on a real GSS level."""
    core = engine.core
    can_shift = {t for node in level.vertices for t in core.shift_to[node.state]}
    for u, tokens in tree.open.items():
        if u in can_shift:
            tokens.or_into(mask)
    for u, child in tree.children.items():
        if u in can_shift:
            _plain_walk(engine, child, _full_shift(core, level, u), mask)


def _full_shift(core, level, u):
    """A walk step with every reduction (LR(0)), as the recognizer makes them."""
    return core._build(frozenset((node, u) for node in level.vertices if u in core.shift_to[node.state]), keep=False)


def _check_walks(engine: Engine) -> int:
    """Summarized walk == plain walk for every item of the engine's state."""
    checked = 0
    for node, t, q, _ in engine._state:
        tree = engine.index.mid(t, q)
        level = engine.core.level(frozenset({(node, t)}))
        ours = np.zeros(engine.index.n_words, dtype=np.uint32)
        plain = ours.copy()
        for tokens in engine._tree_tokens(tree, level):
            tokens.or_into(ours)
        _plain_walk(engine, tree, level, plain)
        assert np.array_equal(ours, plain)
        checked += int(plain.any())
    return checked


@pytest.mark.parametrize("name", ["arithmetic", "c", "json"])
def test_summarized_walks_equal_plain_walks_and_brute_force(name):
    engine = _engine(name)
    recognizer = Recognizer(engine.compiled)
    rng = random.Random(7)
    nonempty = 0
    for _ in range(12):
        engine.reset()
        recognizer.reset()
        for _ in range(25):
            nonempty += _check_walks(engine)
            mask = engine.allowed_mask()
            assert np.array_equal(mask, brute_force_mask(recognizer, engine.vocab))
            choices = [i for i in np.flatnonzero(mask) if i not in engine.vocab.eos_token_ids]
            if not choices:
                break
            token = int(rng.choice(choices))
            engine.advance(token)
            assert recognizer.feed(engine.vocab.tokens[token])
    assert nonempty > 10  # the walks did cross terminal boundaries
