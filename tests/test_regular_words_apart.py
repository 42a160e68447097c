"""A regular rule or part whose sequences set a word apart is lowered piece by piece.

The lowering merges a regular rule (or a regular part of a rule) into one terminal, unless
one of its sequences has a word next to large glue (a large part that is not a word, as
JSON's ``ws?``: `_word_beside_glue`): then it is lowered as a sequence is, so its values are
their types' terminals and its separators the ones every grammar shares. Merged, a JSON
string map (``additionalProperties: {type: string}``) was one terminal of ~390 states whose
every state was a language no store had (a string's body followed by the rest of the map),
each scanned against the vocabulary anew.

The terminals are checked exactly; the language and the masks must not change (a grammar
equal to the regular expression it spells, and the masks against brute force).
"""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc import Grammar
from test_engine_oracle import SETTINGS, _walk_against_brute_force, vocabularies

# an array of values, a regular rule: the values (a word: a regex) sit beside optional
# whitespace of 21 states (large glue, as JSON's ``ws?``), so the rule is lowered piece by
# piece, the repetition's body too
ARRAY = r'''
    start ::= "[" ws? "]" | "[" ws? item (ws? "," ws? item)* ws? "]";
    item ::= #/[ab]{1,3}/;
    ws ::= #/ {1,20}/;
'''
ARRAY_REGEX = re.compile(r"\[ {0,20}\]|\[ {0,20}[ab]{1,3}( {0,20}, {0,20}[ab]{1,3})* {0,20}\]")


def test_a_regular_array_of_values_keeps_its_values_apart() -> None:
    compiled = Grammar.from_ebnf(ARRAY).compile()
    assert sorted(t.name for t in compiled.terminals) == sorted(
        ['"[" ws? "]"', '"[" ws?', 'item', 'ws? "," ws?', 'ws? "]"'])


def test_a_word_before_glue_is_apart_too() -> None:
    ebnf = 'start ::= item ws? ";"; item ::= #/[ab]{1,3}/; ws ::= #/ {1,20}/;'
    assert sorted(t.name for t in Grammar.from_ebnf(ebnf).compile().terminals) == ['item', 'ws? ";"']


def test_a_regular_rule_without_words_beside_large_glue_is_still_one_terminal() -> None:
    """Punctuation beside whitespace, a word beside small parts, and a word beside a large
    word (a tag beside its text, whitespace that is a word: a regex of its own) still merge
    whole: nothing in them is shared glue."""
    ebnf = r'''
        start ::= "[" ws? ("," ws?)* "]" | "-" item "-" | "<title" ws ">" text "</title>";
        item ::= #/[ab]{1,3}/;
        text ::= #/[a-z]{0,30}/;
        ws ::= #/ {1,20}/;
    '''
    assert [t.name for t in Grammar.from_ebnf(ebnf).compile().terminals] == ['start']


def test_a_json_string_map_is_made_of_the_terminals_every_schema_shares() -> None:
    grammar = Grammar.from_json_schema({"type": "object", "additionalProperties": {"type": "string"}})
    names = sorted(t.name for t in grammar.compile().terminals)
    assert names == sorted(['"{" ws?', '"{" ws? "}"', 'string', 'ws? "," ws?', 'ws? ":" ws?', 'ws? "}"'])
    for doc in ({}, {"a": "b"}, {"a": "b", "": "\u00e9\\"}, {"k" * 40: "v"}):
        for text in (json.dumps(doc), json.dumps(doc, indent=2), json.dumps(doc, separators=(",", ":"))):
            assert grammar.accepts(text), text
    for text in ('{"a": 1}', '{"a": "b",}', '{"a" "b"}', '{a: "b"}', '{"a": "b" "c": "d"}'):
        assert not grammar.accepts(text), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="[], ab", max_size=14))
def test_the_arrays_language_is_its_regular_expressions(text: str) -> None:
    assert Grammar.from_ebnf(ARRAY).accepts(text) == bool(ARRAY_REGEX.fullmatch(text))


@settings(SETTINGS, max_examples=60)
@given(data=st.data())
def test_the_arrays_masks_equal_brute_force(data) -> None:
    vocab = data.draw(vocabularies("[], ab"), label="vocab")
    _walk_against_brute_force(Grammar.from_ebnf(ARRAY), vocab, data)
