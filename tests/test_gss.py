"""The GLR runtime shares stacks in a graph (GSS): ambiguity costs polynomial, not exponential, work.

The number of live items at a text position is bounded by the grammar (LR states x
terminal DFA states), whatever the text's length and however many parses it has. With a
set of whole stacks instead, these grammars grow exponentially many items.
"""

from __future__ import annotations

import pytest

import oracle
from grammarc import Grammar
from grammarc.runtime.recognizer import Recognizer

AMBIGUOUS = {
    # chunks of text in right recursion, each chunk any of several overlapping terminals
    "chunks": (r"start ::= (except!('a') | #'b+' | 'ab' | 'ba') start | 'a';", "ab"),
    # Catalan-many parses
    "catalan": (r"start ::= start start | 'a' | 'b';", "ab"),
    # hidden left recursion through an empty rule
    "hidden": (r"start ::= e start 'a' | e 'b' start | 'b'; e ::= '' | 'a';", "ab"),
}


def _bound(recognizer: Recognizer) -> int:
    compiled = recognizer.compiled
    return compiled.tables.n_states * sum(t.dfa.n_states for t in compiled.terminals)


@pytest.mark.parametrize("name", sorted(AMBIGUOUS))
def test_items_stay_bounded_on_long_ambiguous_texts(name):
    source, alphabet = AMBIGUOUS[name]
    recognizer = Recognizer(Grammar.from_ebnf(source).compile())
    text = (alphabet * 40)[:80]  # Catalan grammars cost O(n^3) in any GLR: keep n modest
    bound = _bound(recognizer)
    for byte in text.encode():
        assert recognizer.feed(bytes([byte])), name
        assert len(recognizer.items) <= bound


@pytest.mark.parametrize("name", sorted(AMBIGUOUS))
def test_ambiguous_grammars_agree_with_the_oracle(name):
    source, alphabet = AMBIGUOUS[name]
    grammar = Grammar.from_ebnf(source)
    language = oracle.language(grammar, alphabet, 7)
    recognizer = Recognizer(grammar.compile())
    for s in oracle.universe(alphabet, 7):
        assert recognizer.accepts(s) == (s in language), s
