"""Acceptance test of the compiler core: the recognizer agrees with the brute-force oracle.

For every grammar (hypothesis-generated, or hand-written to break naive parsers) and every
string over a small alphabet up to MAX_LEN characters:
- ``Grammar.accepts(s)`` is exactly membership in ``oracle.language``;
- walking the trie of all such strings with ``Recognizer.feed`` / ``clone``, a character is
  accepted exactly when the text stays a viable prefix of the (unbounded) language
  (``oracle.viable_prefixes``), and ``is_complete`` is exactly membership;
- a rejected feed leaves the state unchanged; multi-byte feeds, ``is_prefix`` and
  ``accepts`` agree with the same sets.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import oracle
from grammarc import Grammar
from grammarc.runtime.recognizer import Recognizer
from strategies import HAND_WRITTEN, grammars, strings

MAX_LEN = 6


def _describe(grammar: Grammar) -> str:
    return "\n".join(f"  {name} ::= {expr!r}" for name, expr in grammar.rules)


def check_accepts(grammar: Grammar, alphabet: str, max_len: int = MAX_LEN) -> None:
    lang = oracle.language(grammar, alphabet, max_len)
    wrong = [s for s in oracle.universe(alphabet, max_len) if grammar.accepts(s) != (s in lang)]
    assert not wrong, (
        f"Grammar.accepts disagrees with the oracle on {len(wrong)} strings, e.g. "
        + ", ".join(f"{s!r} (oracle: {s in lang})" for s in wrong[:5])
        + f"\n{_describe(grammar)}"
    )


def check_incremental(grammar: Grammar, alphabet: str, max_len: int = MAX_LEN) -> None:
    """Depth-first over every string up to max_len, one feed per trie edge."""
    lang = oracle.language(grammar, alphabet, max_len)
    viable = oracle.viable_prefixes(grammar, alphabet, max_len)
    root = Recognizer(grammar.compile())
    stack = [(root, "")]
    while stack:
        rec, prefix = stack.pop()
        assert rec.is_complete() == (prefix in lang), (
            f"is_complete after {prefix!r}: oracle says {prefix in lang}\n{_describe(grammar)}"
        )
        if len(prefix) == max_len:
            continue
        for ch in alphabet:
            child = rec.clone()
            ok = child.feed(ch.encode("utf-8"))
            text = prefix + ch
            assert ok == (text in viable), (
                f"feed({ch!r}) after {prefix!r} returned {ok}; oracle: {text!r} is "
                f"{'' if text in viable else 'not '}a viable prefix\n{_describe(grammar)}"
            )
            if ok:
                stack.append((child, text))
            else:
                assert child.is_complete() == (prefix in lang), (
                    f"a rejected feed({ch!r}) after {prefix!r} changed the state\n{_describe(grammar)}"
                )
        # The parent must be untouched by its children's feeds.
        assert rec.is_complete() == (prefix in lang), f"clone() shares state after {prefix!r}"


def check_whole_texts(grammar: Grammar, alphabet: str, texts: list[str], max_len: int = MAX_LEN) -> None:
    lang = oracle.language(grammar, alphabet, max_len)
    viable = oracle.viable_prefixes(grammar, alphabet, max_len)
    compiled = grammar.compile()
    for text in texts:
        fresh = Recognizer(compiled)
        assert fresh.is_prefix(text) == (text in viable), f"is_prefix({text!r})\n{_describe(grammar)}"
        assert fresh.accepts(text) == (text in lang), f"accepts({text!r})\n{_describe(grammar)}"
        rec = Recognizer(compiled)
        ok = rec.feed(text.encode("utf-8"))  # one multi-byte feed
        assert ok == (text in viable), f"feed({text!r}) at once returned {ok}\n{_describe(grammar)}"
        if ok:
            assert rec.is_complete() == (text in lang), f"is_complete after feed({text!r})"
        else:
            assert rec.is_complete() == ("" in lang), f"a rejected feed({text!r}) changed the state"
            # ... and it still runs from the start: one character at a time, it stops exactly
            # at the first prefix of text that is not viable.
            stop = next(k for k in range(1, len(text) + 1) if text[:k] not in viable)
            for k in range(1, stop):
                assert rec.feed(text[k - 1].encode("utf-8")), f"feed after a rejected feed({text!r})"
            assert not rec.feed(text[stop - 1].encode("utf-8"))
            assert rec.is_complete() == (text[: stop - 1] in lang)


# -- hypothesis-generated grammars -------------------------------------------------------------

_cases = st.sampled_from(["ab", "ab", "abc"]).flatmap(lambda a: st.tuples(st.just(a), grammars(a)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases)
def test_accepts_agrees_with_oracle(case):
    alphabet, grammar = case
    check_accepts(grammar, alphabet)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases, st.data())
def test_viable_prefixes_agree_with_oracle(case, data):
    alphabet, grammar = case
    check_incremental(grammar, alphabet)
    texts = data.draw(st.lists(strings(alphabet, MAX_LEN), min_size=1, max_size=5))
    check_whole_texts(grammar, alphabet, texts)


# -- hand-written grammars ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_accepts(name):
    grammar, alphabet = HAND_WRITTEN[name]
    check_accepts(grammar, alphabet)


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_incremental(name):
    grammar, alphabet = HAND_WRITTEN[name]
    check_incremental(grammar, alphabet)
    check_whole_texts(grammar, alphabet, list(oracle.universe(alphabet, 4)))


def test_except_example_from_semantics():
    grammar, _ = HAND_WRITTEN["except_semantics_example"]  # except!('\n\n') '\n\n'
    assert grammar.accepts("\n\n\n")
    assert grammar.accepts("a\n\n")
    assert grammar.accepts(b"a\n\n")
    assert not grammar.accepts("\n\n")
    rec = Recognizer(grammar.compile())
    assert rec.feed(b"\n\n") and not rec.is_complete()
    assert rec.feed(b"\n") and rec.is_complete()


def test_highly_ambiguous_long_input():
    # s ::= s s | 'a' has Catalan-many parses; a recognizer that enumerates them blows up.
    grammar, _ = HAND_WRITTEN["highly_ambiguous"]
    assert grammar.accepts("a" * 60)
    assert not grammar.accepts("a" * 60 + "b")
    rec = Recognizer(grammar.compile())
    for _ in range(60):
        assert rec.feed(b"a")
    assert rec.is_complete()
    assert not rec.feed(b"b") and rec.is_complete()


def test_left_and_right_recursion_long_input():
    left, _ = HAND_WRITTEN["left_recursion"]  # a ::= a 'x' | 'y'
    right, _ = HAND_WRITTEN["right_recursion"]  # a ::= 'x' a | 'y'
    assert left.accepts("y" + "x" * 200) and not left.accepts("x" * 200 + "y")
    assert right.accepts("x" * 200 + "y") and not right.accepts("y" + "x" * 200)
