"""Strings with large length bounds (issue 11.1): counted in blocks by the grammar
(frontends/jsonschema/long_strings.py), exactly the language of the single string terminal.

Oracles: the single-DFA string regex (``json_formats.string_regex``, compiled with a budget
large enough for it), and Python's own JSON decoder (a string's length in code points). The
block size is a parameter, lowered here to 2-4 characters so that several nesting levels
and every boundary case fit in strings of a few dozen characters.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammarc import Grammar
from grammarc.engine import Engine
from grammarc.errors import UnsupportedSchemaError
from grammarc.frontends import json_formats as jf
from grammarc.frontends.jsonschema.long_strings import LongStrings, _groups, counted, plain_fits
from grammarc.ir import Ref, Regex
from grammarc.lowering.compiler import compile_grammar
from grammarc.runtime.recognizer import Recognizer
from grammarc.tokens.vocabulary import Vocabulary

SETTINGS = settings(deadline=None, max_examples=150,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# one code point each, in every spelling the string regex allows
UNITS = ["a", "\u00e9", "\u20ac", "\U0001f600", '\\"', "\\\\", "\\/", "\\n", "\\t", "\\u00e9", "\\u20AC",
         "\\ud83d\\ude00", "\\uD83D\\uDE00", "\\u0000"]
# not one code point: a lone surrogate escape, a raw control character, a bare quote, a bad escape
BROKEN = ["\\ud800", "\\udc00", "\x01", '"', "\\x", "\\u12"]


# one character of a pattern's class [a-z\u00e9] in JSON text: with escapes, and raw only
CLASS = ((97, 122), (0xE9, 0xE9))
CLASS_UNITS = [jf.char_regex(CLASS, escapes=True), jf.char_regex(CLASS, escapes=False)]


@lru_cache(maxsize=None)
def block_grammar(lo: int, hi: int | None, block: int, max_count: int, unit: str = jf.UNIT) -> Grammar:
    rules: dict = {}
    counter = iter(range(10**9))
    maker = LongStrings(rules, lambda hint: f"{hint}_{next(counter)}", block=block, max_count=max_count, unit=unit)
    start = maker.string(lo, hi)
    return Grammar.of(Grammar(rules=[("start", start)] + list(rules.items())))


@lru_cache(maxsize=None)
def plain_grammar(lo: int, hi: int | None, unit: str = jf.UNIT) -> Recognizer:
    pattern = jf.string_regex(lo, hi) if unit == jf.UNIT else f'"{counted(unit, lo, hi)}"'
    grammar = Grammar(rules=[("start", Regex(pattern))])
    return Recognizer(compile_grammar(grammar, max_states=100_000))


def decoded_length(text: str) -> int | None:
    """Code points of a JSON string text, None if it is not one the string regex allows."""
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except json.JSONDecodeError:
        return None
    if end != len(text):
        return None
    if not isinstance(value, str) or any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        return None  # json.loads keeps lone surrogates; the string regex never matches them
    return len(value)


@st.composite
def lengths(draw) -> tuple[int, int | None]:
    lo = draw(st.integers(0, 20))
    hi = draw(st.one_of(st.none(), st.integers(lo, 26)))
    return lo, hi


@st.composite
def string_texts(draw) -> str:
    units = draw(st.lists(st.sampled_from(UNITS), max_size=30))
    if draw(st.integers(0, 4)) == 0:  # sometimes not a valid string at all
        units.insert(draw(st.integers(0, len(units))), draw(st.sampled_from(BROKEN)))
    text = '"' + "".join(units) + '"'
    if draw(st.integers(0, 9)) == 0:
        text = text[:-1] if draw(st.booleans()) else text + draw(st.sampled_from(['"', "a", " "]))
    return text


@SETTINGS
@given(bounds=lengths(), block=st.integers(2, 4), max_count=st.sampled_from([1, 2, 3, 100]), text=string_texts())
def test_block_grammar_accepts_exactly_what_the_string_regex_accepts(bounds, block, max_count, text):
    lo, hi = bounds
    plain = plain_grammar(lo, hi).clone()
    want = plain.feed(text.encode()) and plain.is_complete()
    n = decoded_length(text)
    assert want == (n is not None and lo <= n and (hi is None or n <= hi)), "the reference disagrees with json"
    assert block_grammar(lo, hi, block, max_count).accepts(text) == want


@SETTINGS
@given(bounds=lengths(), block=st.integers(2, 4), max_count=st.sampled_from([1, 2, 100]),
       unit=st.sampled_from(CLASS_UNITS), text=string_texts())
def test_block_grammar_over_a_character_class(bounds, block, max_count, unit, text):
    """Blocks of a pattern's character class (``^[a-z\u00e9]*$`` with long bounds) against
    the single regex over the same class."""
    lo, hi = bounds
    plain = plain_grammar(lo, hi, unit).clone()
    want = plain.feed(text.encode()) and plain.is_complete()
    assert block_grammar(lo, hi, block, max_count, unit).accepts(text) == want


@pytest.mark.parametrize("block, max_count", [(2, 1), (3, 1), (3, 2), (4, 3), (3, 100)])
def test_every_length_near_every_bound(block, max_count):
    """Each (lo, hi) up to 20: strings of every length 0..24 (mixing raw, escaped and
    surrogate-pair characters) are accepted exactly when their length lies in [lo, hi]."""
    rng = random.Random(block * 100 + max_count)
    valid = [u for u in UNITS]
    for lo in range(0, 21, 3):
        for hi in [None, lo, lo + 1, lo + 5, 20]:
            if hi is not None and hi < lo:
                continue
            grammar = block_grammar(lo, hi, block, max_count)
            for n in range(25):
                text = '"' + "".join(rng.choice(valid) for _ in range(n)) + '"'
                assert grammar.accepts(text) == (lo <= n and (hi is None or n <= hi)), (lo, hi, n, text)


def test_groups_cover_each_length_once():
    for size in (2, 3, 5):
        for lo in range(0, 30):
            for hi in [None] + list(range(lo, 40)):
                covered = []
                for a1, a2, r_lo, r_hi in _groups(lo, hi, size):
                    assert 0 <= r_lo <= r_hi < size
                    top = a2 if a2 is not None else (40 // size + 2)
                    covered += [size * a + r for a in range(a1, top + 1) for r in range(r_lo, r_hi + 1)]
                upper = hi if hi is not None else max(covered)
                assert sorted(covered) == list(range(lo, upper + 1)), (size, lo, hi)


# -- the JSON Schema front-end -----------------------------------------------------------------

def _string(n: int, unit: str = "a") -> str:
    return '"' + unit * n + '"'


def test_lengths_within_the_budget_keep_the_single_terminal():
    bound = max(n for n in range(1, 2000) if plain_fits(n))
    grammar = Grammar.from_json_schema({"type": "string", "maxLength": bound})
    assert [expr for _, expr in grammar.rules if not isinstance(expr, Ref)] == [Regex(jf.string_regex(0, bound))]
    long = Grammar.from_json_schema({"type": "string", "maxLength": bound + 1})
    assert Regex(jf.string_regex(0, bound + 1)) not in [expr for _, expr in long.rules]
    assert max(t.dfa.n_states for t in long.compile().terminals) < 1000


@pytest.mark.parametrize("schema, lo, hi", [
    ({"type": "string", "maxLength": 65535}, 0, 65535),
    ({"type": "string", "minLength": 40000}, 40000, None),
    ({"type": "string", "minLength": 1000, "maxLength": 1000}, 1000, 1000),
    ({"type": "string", "minLength": 1100, "maxLength": 17000}, 1100, 17000),  # two levels, partial ends
])
def test_long_bounds_are_exact(schema, lo, hi):
    grammar = Grammar.from_json_schema(schema)
    for n in sorted({lo - 1, lo, lo + 1, (hi or lo) - 1, hi or lo + 5000, (hi or lo) + 1} - {-1}):
        want = lo <= n and (hi is None or n <= hi)
        assert grammar.accepts(_string(n)) == want, n
        if 3 <= n <= 20000:  # escapes and multi-byte characters count one each
            assert grammar.accepts('"' + "\u00e9" * (n - 3) + '\\ud83d\\ude00\\n\U0001f600"') == want, n
    assert not grammar.accepts(_string(max(lo, 1), "\\ud800"))


def test_long_string_in_an_object():
    schema = {"type": "object", "properties": {"body": {"type": "string", "maxLength": 4096}},
              "required": ["body"], "additionalProperties": False}
    grammar = Grammar.from_json_schema(schema, whitespace="compact")
    assert grammar.accepts(json.dumps({"body": "x" * 4096}, separators=(",", ":")))
    assert not grammar.accepts(json.dumps({"body": "x" * 4097}, separators=(",", ":")))


def _token_walks(engine: Engine, reference: Recognizer, vocab: Vocabulary, rng: random.Random, steps: int) -> int:
    """Masks along one random walk against brute force over `reference`; the steps taken."""
    recognizer = reference.clone()
    for step in range(steps):
        expected = np.zeros(vocab.size, dtype=bool)
        for token_id, data in enumerate(vocab.tokens):
            if token_id in vocab.eos_token_ids:
                expected[token_id] = recognizer.is_complete()
            else:
                expected[token_id] = recognizer.clone().feed(data)
        got = engine.allowed_mask()
        assert np.array_equal(got, expected), (
            f"after {recognizer.consumed} bytes: extra {[vocab.tokens[t] for t in np.flatnonzero(got & ~expected)]}, "
            f"missing {[vocab.tokens[t] for t in np.flatnonzero(expected & ~got)]}")
        choices = [int(t) for t in np.flatnonzero(expected) if t not in vocab.eos_token_ids]
        if not choices:
            return step
        long = [t for t in choices if len(vocab.tokens[t]) >= 6]
        token = rng.choice(long if long and rng.random() < 0.9 else choices)
        engine.advance(token)
        assert recognizer.feed(vocab.tokens[token])
    return steps


def test_masks_inside_a_long_string_equal_brute_force():
    """Engine masks for ``minLength 505, maxLength 540`` (block grammar) against the
    recognizer of the single string terminal, along random walks that reach both bounds."""
    lo, hi = 505, 540
    assert not plain_fits(hi)
    grammar = Grammar.from_json_schema({"type": "string", "minLength": lo, "maxLength": hi})
    reference = plain_grammar(lo, hi)
    pieces = ['"', "a", "\u00e9", "aaaaaa", "aaaaaaa\u00e9", '\u00e9\u00e9\u00e9"', 'aaaaaaaa"', "\\n", "\\u00e9",
              "\\ud83d", "\\ude00", "\\ud83d\\ude00aa", "\U0001f600\U0001f600", 'aaaaaaaaaaaaaaaa', "a\\", "\\",
              'aa"', "u00", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"]
    data = [p.encode() for p in pieces] + ["\u00e9".encode()[:1], "\u00e9".encode()[1:], b""]
    vocab = Vocabulary.from_bytes(data, eos_token_ids=[len(data) - 1])
    rng = random.Random(7)
    ended = 0
    for _ in range(6):
        engine = Engine(grammar, vocab)
        steps = _token_walks(engine, reference, vocab, rng, 400)
        ended += steps < 400
    assert ended == 6, "every walk should reach the end of the string"


@pytest.mark.parametrize("lo, hi, block, max_count", [(5, 30, 3, 2), (0, 40, 2, 1), (13, None, 3, 1), (7, 7, 2, 2)])
def test_masks_with_nested_levels_equal_brute_force(lo, hi, block, max_count):
    """Several levels of units (the LR conflicts between 'another unit' and 'the tail
    begins' are left to GLR): masks against brute force over the single string terminal."""
    grammar = block_grammar(lo, hi, block, max_count)
    reference = plain_grammar(lo, hi)
    pieces = ['"', "a", "\\u00e9", "\\ud83d\\ude00", "\u00e9", "aa", "aaa", 'a"', "aaaaa", '\\"', "\\\\", "u0"]
    data = [p.encode() for p in pieces] + ["é".encode()[:1], "é".encode()[1:], b""]
    vocab = Vocabulary.from_bytes(data, eos_token_ids=[len(data) - 1])
    rng = random.Random(lo * 1000 + (hi or 0))
    for _ in range(5):
        steps = _token_walks(Engine(grammar, vocab), reference, vocab, rng, 80)
        assert hi is None or steps < 80, "a bounded string ends within 80 tokens"


# -- refusals: precise, never an internal state-budget error ----------------------------------

def test_pattern_with_a_huge_length_is_refused_at_its_pointer():
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(ab)+$", "maxLength": 100000}}}
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_json_schema(schema)
    assert str(info.value) == ("#/properties/code/pattern: keyword 'pattern' is not supported: "
                               "the pattern with maxLength 100000 needs more than 10000 automaton states")
    assert info.value.pointer == "#/properties/code/pattern"


def test_a_huge_pattern_is_refused_at_its_pointer():
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_json_schema({"type": "string", "pattern": "^(xy){1,100000}$"})
    assert str(info.value) == ("#/pattern: keyword 'pattern' is not supported: "
                               "the pattern needs more than 10000 automaton states")


def test_format_with_a_huge_length_is_refused_at_its_pointer():
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_json_schema({"type": "string", "format": "uri", "minLength": 60000})
    assert info.value.pointer == "#/format"


@pytest.mark.parametrize("schema, lo, hi", [
    ({"type": "string", "pattern": "^[a-z\u00e9]+$", "maxLength": 3000}, 1, 3000),
    ({"type": "string", "pattern": "^[a-z\u00e9]{2,}$", "minLength": 1000, "maxLength": 40000}, 1000, 40000),
    ({"type": "string", "pattern": "^[a-z\u00e9]{0,100000}$"}, 0, 100000),
])
def test_a_character_class_with_long_bounds_is_counted_in_blocks(schema, lo, hi):
    grammar = Grammar.from_json_schema(schema)
    assert Regex(f'"{counted(CLASS_UNITS[0], lo, hi)}"') not in [expr for _, expr in grammar.rules]
    for n in sorted({lo - 1, lo, lo + 1, hi - 1, hi, hi + 1} - {-1}):
        want = lo <= n <= hi
        assert grammar.accepts(_string(n, "q")) == want, n
        if 1 <= n <= 5000:
            assert grammar.accepts('"' + "\u00e9" * (n - 1) + '\\u00E9"') == want, n
            assert not grammar.accepts('"' + "q" * (n - 1) + 'Q"')


def test_lenient_keeps_the_long_length_and_compiles():
    with pytest.warns(UserWarning):
        grammar = Grammar.from_json_schema({"type": "string", "pattern": "^(ab)+$", "maxLength": 100000}, lenient=True)
    grammar.compile()
    assert grammar.accepts(_string(100000, "B"))
    assert not grammar.accepts(_string(100001, "B"))


# -- MaskBench schemas that were refused with StateBudgetExceeded -----------------------------

MASKBENCH = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "maskbench-dev"
LONG_STRING_SCHEMAS = ["Github_hard---o60887.json", "Github_hard---o82764.json", "Github_medium---o6199.json",
                       "JsonSchemaStore---publiccode.json", "Snowplow---sp_197_Normalized.json",
                       "WashingtonPost---wp_27_Normalized.json", "WashingtonPost---wp_3_Normalized.json"]


@pytest.mark.parametrize("name", LONG_STRING_SCHEMAS)
def test_maskbench_long_string_schemas_pass(name):
    path = MASKBENCH / name
    if not path.exists():
        pytest.skip(f"MaskBench data absent: {MASKBENCH}")
    case = json.loads(path.read_text())
    grammar = Grammar.from_json_schema(case["schema"])
    grammar.compile()
    for test in case["tests"]:
        for text in (json.dumps(test["data"]), json.dumps(test["data"], indent=2)):
            assert grammar.accepts(text) == test["valid"], (test["description"], text[:200])


@pytest.mark.parametrize("schema, message", [
    ({"type": "string", "maxLength": 10**30},
     "#/maxLength: keyword 'maxLength' is not supported: string lengths above 2**64 are not supported"),
    ({"properties": {"a": {"allOf": [{"minLength": 2**65}, {"type": "string", "minLength": 3}]}}},
     "#/properties/a/allOf/0/minLength: keyword 'minLength' is not supported: string lengths above 2**64 are not supported"),
])
def test_astronomical_lengths_are_refused_at_their_pointer(schema, message):
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_json_schema(schema)
    assert str(info.value) == message


def test_a_length_of_2_to_the_64_is_exact():
    grammar = Grammar.from_json_schema({"type": "string", "minLength": 7, "maxLength": 2**64})
    assert [grammar.accepts(_string(n)) for n in (6, 7, 1000)] == [False, True, True]
