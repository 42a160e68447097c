"""JSON Schema string languages (frontends/json_formats.py) on grammarc's shared regex machinery.

`pattern` is ECMA-262: compared with node's RegExp (u flag) where node is installed. The
rendered regexes match the *encoded* JSON string, so each text is tried raw and escaped.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from ecma import NODE, ecma_patterns, ecma_texts, node_results
from grammarc import automata as A
from grammarc.automata import CharDFA
from grammarc.automata import regex as rx
from grammarc.errors import RegexError
from grammarc.frontends import json_formats as jf


def run_chars(dfa: CharDFA, text: str) -> bool:
    """Whether a DFA over characters accepts `text` (an independent, direct reading)."""
    q = 0
    for c in text:
        for ranges, t in dfa.edges[q]:
            if any(lo <= ord(c) <= hi for lo, hi in ranges):
                q = t
                break
        else:
            return False
    return dfa.accept[q]


def encodings(text: str) -> list[str]:
    """JSON spellings of `text`: raw, and with every non-ASCII character escaped."""
    return [json.dumps(text, ensure_ascii=False), json.dumps(text, ensure_ascii=True)]


WINDOWS = [(0, None), (1, 2), (2, None), (0, 1), (3, 3)]


@pytest.mark.skipif(NODE is None, reason="node (an ECMA-262 engine to compare with) is not installed")
@given(st.lists(ecma_patterns(), min_size=40, max_size=40, unique=True))
@settings(max_examples=3, deadline=None, phases=[Phase.explicit, Phase.generate])  # failures name their case
def test_pattern_languages_agree_with_an_ecma_engine(patterns) -> None:
    texts = ecma_texts()
    found = node_results([(p, "u", texts) for p in patterns])
    for p, wants in zip(patterns, found):
        tree = jf.search_tree(p)
        try:
            rendered = jf.search_regex(p)
        except RegexError as exc:  # only an anchor inside the pattern cannot be rendered
            assert "inside a pattern" in str(exc), p
            rendered = ""
        whole = None if rendered in ("", None) else A.from_regex('"' + rendered + '"')
        for lo, hi in WINDOWS:
            dfa = jf.string_automaton([tree], lo, hi)
            for t, want in zip(texts, wants):
                want_here = want and lo <= len(t) and (hi is None or len(t) <= hi)
                assert (dfa is not None and run_chars(dfa, t)) == want_here, (p, lo, hi, t)
        if rendered == "":
            continue
        for t, want in zip(texts, wants):
            for spelled in encodings(t):
                got = whole is not None and whole.matches(spelled.encode())
                assert got == want, (p, spelled)


def test_intersection_of_patterns_formats_and_lengths() -> None:
    trees = [jf.search_tree("^[a-z]+$"), jf.search_tree("b"), jf.search_tree("^.{0,4}$")]
    dfa = jf.string_automaton(trees, 2, None)
    for text in ["ab", "bb", "abcb", "b", "abcde", "aa", "AB", "b1"]:
        want = text.isalpha() and text.islower() and "b" in text and 2 <= len(text) <= 4
        assert run_chars(dfa, text) == want, text
    assert jf.string_automaton([jf.search_tree("^a$"), jf.search_tree("^b$")], 0, None) is None
    date = jf.string_automaton([jf.format_tree("date"), jf.search_tree("^2020")], 0, None)
    assert run_chars(date, "2020-02-29") and not run_chars(date, "2021-02-28") and not run_chars(date, "2020-02-30")


def test_anchors_inside_a_pattern_are_exact_in_the_automaton() -> None:
    dfa = jf.string_automaton([jf.search_tree("(^a|b)c")], 0, 3)
    for text, want in [("ac", True), ("xbc", True), ("xac", False), ("bcx", True), ("abcd", False)]:
        assert run_chars(dfa, text) == want, text
    assert jf.string_automaton([jf.search_tree("a^b")], 0, None) is None
    with pytest.raises(jf.Hard):
        jf.restrict_length(jf.search_tree("(^a|b)c"), 0, 3)


def test_string_automaton_budget() -> None:
    trees = [jf.search_tree("^[a-z]*$")]
    assert len(jf.string_automaton(trees, 0, 100).accept) == 101
    with pytest.raises(jf.PatternError, match="^the intersection needs more than 50 automaton states$"):
        jf.string_automaton(trees, 0, 100, max_states=50)


def test_lone_surrogates_in_patterns_match_nothing() -> None:
    assert jf.search_regex(r"\ud800") is None
    assert jf.search_regex(r"^[^\ud800-\udfff]$") == jf.search_regex("^[^]$")
    assert jf.search_regex("^[\\ud800a]$") == jf.search_regex("^a$")


@given(st.text(alphabet="ab\u00e9\U0001F600\n", max_size=6))
@settings(max_examples=100, deadline=None)
def test_code_point_dfa_reads_the_byte_dfa(text: str) -> None:
    byte_dfa = A.from_regex("(?:a|é)*😀?[^b]{0,2}", ecma=True)
    chars = A.code_point_dfa(byte_dfa)
    assert run_chars(chars, text) == byte_dfa.matches(text.encode())


def test_code_point_dfa_ranges() -> None:
    chars = A.code_point_dfa(A.from_regex("[\u00e0-\u00ff\u4e00-\u9fff\U00010000-\U0010ffff]x"))
    assert chars.edges[0] == ((((0xE0, 0xFF), (0x4E00, 0x9FFF), (0x10000, 0x10FFFF)), 1),)
    assert chars.accept == (False, False, True)
    with pytest.raises(ValueError, match="not a DFA over UTF-8 text"):
        A.code_point_dfa(A.any_bytes())


@given(st.text(alphabet="ab\u00e9\U0001F600", max_size=5))
@settings(max_examples=150, deadline=None)
def test_complement_is_every_other_text(text: str) -> None:
    """complement: exactly the valid UTF-8 texts the DFA rejects (also read per character)."""
    d = A.from_regex("(?:a|é)*😀?b{0,2}", ecma=True)
    c = A.complement(d)
    assert c.matches(text.encode()) == (not d.matches(text.encode()))
    assert run_chars(A.code_point_dfa(c), text) == (not d.matches(text.encode()))


def test_complement_reads_only_utf8_and_is_an_involution() -> None:
    d = A.from_regex("ab|c")
    c = A.complement(d)
    assert not c.matches(b"\xff") and not c.matches(b"\xc3")
    assert c.matches(b"") and A.complement(c) == d
    assert A.complement(A.utf8_text()).is_empty
    assert A.complement(A.intersect(d, A.literal(b"q"))) == A.utf8_text()


_POINTS = st.one_of(st.integers(0, 300), st.integers(0xD700, 0xE100), st.integers(0, jf.MAX_CP))
_RANGES = st.lists(st.tuples(_POINTS, st.integers(-2, 5000)).map(lambda p: (p[0], p[0] + p[1])), max_size=5).map(tuple)


@given(_RANGES, _RANGES, st.integers(0, jf.MAX_CP))
@settings(max_examples=500, deadline=None)
def test_code_point_set_intersection(a, b, cp):
    # normalized like the complement of the union of the complements, and the code points
    # in it are exactly those in both (surrogates in neither)
    from grammarc.automata.regex import negate, normalize

    got = jf.intersect(a, b)
    assert got == negate(normalize(negate(normalize(a)) + negate(normalize(b))))
    inside = lambda rs: any(lo <= cp <= hi for lo, hi in rs)  # noqa: E731
    assert inside(got) == (inside(a) and inside(b) and not 0xD800 <= cp <= 0xDFFF)


def _python_chars(ranges) -> list[int]:
    """Code points to try against a class: its edges, the surrogates' and the ends of Unicode."""
    edges = [0, 0xD7FF, 0xD800, 0xDBFF, 0xDFFF, 0xE000, 0xFFFF, 0x10000, jf.MAX_CP]
    for lo, hi in ranges:
        edges += [lo - 1, lo, hi, hi + 1]
    return [cp for cp in edges if 0 <= cp <= jf.MAX_CP]


@given(st.one_of(_RANGES, _RANGES.map(lambda r: jf.complement(jf.intersect(r, ((0, jf.MAX_CP),))))),
       st.lists(st.one_of(_POINTS, st.integers(0xD800, 0xDFFF)), max_size=20))
@settings(max_examples=300, deadline=None)
def test_python_class_regex_holds_the_code_points_of_the_set(ranges, points) -> None:
    # negated or not, the class for Python's re holds exactly the set's code points, among
    # every character a Python string can hold (lone surrogates: in no set)
    from grammarc.automata.regex import contains

    ranges = jf.intersect(ranges, ((0, jf.MAX_CP),))  # code points (the strategy runs past the last)
    got = jf.python_class_regex(ranges)
    if not ranges:
        assert got is None
        return
    matcher = re.compile(got)
    for cp in _python_chars(ranges) + points:
        assert (matcher.fullmatch(chr(cp)) is not None) == contains(ranges, cp), (ranges, got, hex(cp))


def test_python_class_regex_negates_wide_sets() -> None:
    # ECMA '.': written as what it leaves out (re compiles a class code point by code point)
    dot = jf.complement(((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)))
    assert jf.python_class_regex(dot) == "[^\\x0a\\x0d\\u2028-\\u2029\\ud800-\\udfff]"
    assert jf.python_class_regex(((0x61, 0x7A),)) == jf.class_regex(((0x61, 0x7A),)) == "[a-z]"
    plain = jf.search_regex("^[^/]+$", plain=True)
    assert [bool(re.fullmatch(plain, key, re.S)) for key in ("a", "a/b", "", "\ud800", "\n")] == [True, False, False, False, True]


# -- the AST given with a rendered regex (json_formats._render, regex.remember) -------------

def _read_again(regex: str):
    """The parser's AST of `regex`, read now (neither given nor cached)."""
    return rx._Parser(regex, False).parse()


def _given_asts_agree(tree, escapes: bool) -> None:
    regex = jf.render_tree(tree, escapes=escapes)
    if regex is not None:
        given = rx._GIVEN[regex]
        assert given == _read_again(regex), (tree, escapes)
        assert rx.parse(regex) is given and regex not in rx._GIVEN  # taken once


@given(st.lists(ecma_patterns(), min_size=20, max_size=20, unique=True), st.booleans())
@settings(max_examples=30, deadline=None)
def test_a_rendered_pattern_comes_with_the_ast_its_text_parses_to(patterns, escapes) -> None:
    """`string_search_regex` and `render_tree` give the parser the AST of their text, built
    from the pattern's tree: it must be exactly what reading the text gives (the automaton
    is built from it)."""
    for p in patterns:
        try:
            regex = jf.string_search_regex(p)
        except RegexError as exc:  # only an anchor inside the pattern cannot be rendered
            assert "inside a pattern" in str(exc), p
        else:
            assert regex == (None if jf.search_regex(p) is None else '"' + jf.search_regex(p) + '"')
            if regex is not None:
                assert rx._GIVEN[regex] == _read_again(regex), p
        tree = jf.search_tree(p)
        try:
            _given_asts_agree(tree, escapes)
        except RegexError:
            pass
        for lo, hi in WINDOWS:
            try:
                short = jf.restrict_length(tree, lo, hi)
            except jf.Hard:
                continue
            if short is not None:
                _given_asts_agree(short, escapes)


@pytest.mark.parametrize("name", sorted(jf.FORMATS))
def test_a_rendered_format_comes_with_the_ast_its_text_parses_to(name) -> None:
    tree = jf.format_tree(name)
    for escapes in (False, True):
        _given_asts_agree(tree, escapes)
    try:
        short = jf.restrict_length(tree, 1, 40)
    except jf.Hard:
        return
    if short is not None:
        _given_asts_agree(short, False)


def test_given_asts_are_few_and_a_text_parses_alike_once_dropped() -> None:
    texts = [jf.string_search_regex(f"^a{{{n}}}$") for n in range(rx._MAX_GIVEN + 10)]
    assert len(rx._GIVEN) == rx._MAX_GIVEN
    assert texts[0] not in rx._GIVEN and texts[-1] in rx._GIVEN
    assert rx.parse(texts[0]) == _read_again(texts[0])


def test_sequence_items_refuse_what_is_not_one_concatenation() -> None:
    assert rx.sequence_items("a(?:b|c)") == (rx.Chars(((97, 97),)), rx.Alt((rx.Chars(((98, 98),)), rx.Chars(((99, 99),)))))
    for text in ("a|b", "a)b"):
        with pytest.raises(RegexError, match="not one concatenation"):
            rx.sequence_items(text)


@pytest.mark.parametrize("pattern", [
    "^a(?:[]|[]*)b$", "^(?:|a)$", "^(?:a|)$", "^a(?:)b$", "^[]*$", "^(?:[]*){2}$", "x{0}", "^(?:[]|b*){0,3}c$",
    "^(?:[]|[]?)$", "a|[]|", "^\\u{1F600}+[^a]{2,}$", "^\\\\\"/$", "(?:a|b)(?:c|)",
])
def test_rendered_edge_cases_come_with_the_ast_their_text_parses_to(pattern) -> None:
    """Empty groups, empty branches, classes of no character: what the hypothesis patterns
    rarely make."""
    regex = jf.string_search_regex(pattern)
    if regex is not None:
        assert rx._GIVEN[regex] == _read_again(regex), pattern
