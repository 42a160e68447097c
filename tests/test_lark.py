"""Lark front-end: lark's shipped grammars, differential tests against Lark's Earley parser,
and exact refusals. Expected answers come from Lark itself wherever it can give them."""

from __future__ import annotations

import _sre
import re
from pathlib import Path

import lark
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from lark.load_grammar import GrammarBuilder

from grammarc import Grammar, GrammarError
from grammarc.automata import from_regex
from grammarc.automata.regex import Chars as RegexChars, contains, intersection, normalize
from grammarc.automata.regex import parse as parse_regex
from grammarc.frontends.lark_regex import _case_relevant, translate

GRAMMARS = Path(lark.__file__).parent / "grammars"
SHIPPED = sorted(GRAMMARS.glob("*.lark"))
LARK_LARK = (GRAMMARS / "lark.lark").read_text()
# lark.lark's OP looks at the character after the token (`[?](?![a-z])`): loaded as shipped,
# the lookahead is compiled into what may follow OP (frontends/lark_lookahead.py).
OP_LINE = "OP: /[+*]|[?](?![a-z])/"


@pytest.fixture(scope="module")
def meta() -> Grammar:
    assert OP_LINE in LARK_LARK
    return Grammar.from_lark(LARK_LARK, name="lark.lark")


def lark_terminals(text: str) -> list[str]:
    builder = GrammarBuilder(False, [])
    builder.load_grammar(text, "<test>")
    return [name for name, d in builder._definitions.items() if d.is_term and not name.startswith("_")]


def test_shipped_grammars_present():
    assert {p.name for p in SHIPPED} >= {"common.lark", "lark.lark", "python.lark", "unicode.lark"}


@pytest.mark.parametrize("name", ["common.lark", "unicode.lark"])
def test_terminal_libraries_load_every_terminal(name):
    text = (GRAMMARS / name).read_text()
    terminals = lark_terminals(text)
    assert len(terminals) >= 2
    for terminal in terminals:
        Grammar.from_lark(text, start=terminal).compile()


def test_python_grammar_refuses_declare_exactly():
    text = (GRAMMARS / "python.lark").read_text()
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark(text, start="file_input", name="python.lark")
    line = text[: text.index("%declare _INDENT")].count("\n") + 1
    assert str(info.value) == (
        f"python.lark:{line}:10: %declare _INDENT is not supported: a declared symbol has no "
        "definition (Lark leaves it to a postlexer), so grammarc cannot know its language\n"
        "%declare _INDENT _DEDENT\n         ^^^^^^^"
    )


def test_meta_grammar_op_lookahead(meta):
    """`?` is OP only where no letter follows (`?c` is then a RULE): Lark's verdicts."""
    earley = lark.Lark(LARK_LARK, parser="earley", lexer="dynamic_complete")
    texts = ["a: b?\n", "a: b? c\n", "a: b ?c\n", "a: (b)?\n", "a: (b)?c\n", "a: (b)?C\n",
             "a: (b)? // x\n", "a: b*?\n", "a: [b]?\n", "a: b?_c\n", "a: (b)?\"x\"\n", "a: (b)?",
             "a: b??\n", "a: b??c\n"]
    verdicts = [meta.accepts(t) for t in texts]
    assert verdicts == [lark_accepts(earley, t) for t in texts]
    assert verdicts == [True] * 7 + [False] + [True] * 4 + [False, True]


META_PIECES = ["a", "bc", "B", ":", " ", "?", "*", "+", "(", ")", "[", "]", "\n", '"x"', "|", "->",
               "~", "1", "..", "_", ".", "/y/", "%ignore", "//c\n", "{", "}", ","]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(META_PIECES), max_size=9))
def test_meta_grammar_same_language_as_earley(meta, meta_earley, pieces):
    """lark.lark as shipped (OP's lookahead included) against Lark's Earley on lark.lark."""
    text = "a: " + "".join(pieces) + "\n"
    assert meta.accepts(text) == lark_accepts(meta_earley, text), text


@pytest.fixture(scope="module")
def meta_earley() -> lark.Lark:
    return lark.Lark(LARK_LARK, parser="earley", lexer="dynamic_complete")


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_meta_grammar_accepts_every_shipped_grammar(meta, path):
    assert meta.accepts(path.read_text())


def lark_rejects_syntax(text: str) -> bool:
    """Whether Lark's own grammar loader rejects `text` as a syntax error."""
    try:
        GrammarBuilder(False, []).load_grammar(text, "<mutant>")
    except lark.exceptions.UnexpectedInput:
        return True
    except lark.exceptions.GrammarError as error:
        return "Unexpected" in str(error) or "Expecting" in str(error) or "line" in str(error)
    return False


MUTATIONS = {
    "drop a colon": lambda t: t.replace(":", " ", 1),
    "unbalanced paren": lambda t: re.sub(r"\(", "((", t, count=1),
    "unbalanced bracket": lambda t: t.replace("]", "", 1),
    "unterminated string": lambda t: t.replace('"', "", 1),
    "stray percent": lambda t: t + "\n%bogus x\n",
    "double arrow": lambda t: t.replace("->", "-> ->", 1),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_meta_grammar_rejects_what_lark_rejects(meta, mutation):
    checked = 0
    for path in SHIPPED:
        mutant = MUTATIONS[mutation](path.read_text())
        if mutant != path.read_text() and lark_rejects_syntax(mutant):
            assert not meta.accepts(mutant), (mutation, path.name)
            checked += 1
    assert checked >= 1


# ------------------------------------------------------------ differential vs Earley

DIFF_GRAMMARS = {
    "kv": (
        """
        start: pair ("," pair)*
        ?pair: CNAME "=" value -> kv
        value: NUMBER | ESCAPED_STRING | "true"i | list
        list: "[" [value ("," value)*] "]"
        %import common (CNAME, NUMBER, ESCAPED_STRING, WS)
        %ignore WS
        """,
        'abc"=,[]1.5e3 \ttrue TRUE\\x-',
    ),
    "regex": (
        """
        start: (WORD | HEX | _SEP)+
        WORD.2: /[a-c]+x?/i
        HEX: /0x[0-9a-f]{1,3}/
        _SEP: /-|;/
        """,
        "abcABxX0x19f;-",
    ),
}


@pytest.fixture(scope="module")
def diff_pairs():
    return {
        key: (Grammar.from_lark(text), lark.Lark(text, parser="earley", lexer="dynamic_complete"))
        for key, (text, _alphabet) in DIFF_GRAMMARS.items()
    }


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


@pytest.mark.parametrize("key", sorted(DIFF_GRAMMARS))
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_same_language_as_earley(diff_pairs, key, data):
    grammar, parser = diff_pairs[key]
    alphabet = DIFF_GRAMMARS[key][1]
    seeds = {"kv": ['a=1', ' a = "x\\"y" , b=[1,[]]', "x=TRUE"], "regex": ["ab-0x1f", "ABx;c"]}[key]
    text = data.draw(st.one_of(
        st.text(alphabet=alphabet, max_size=12),
        st.sampled_from(seeds).flatmap(
            lambda s: st.tuples(st.integers(0, len(s)), st.text(alphabet=alphabet, max_size=2))
            .map(lambda m: s[: m[0]] + m[1] + s[m[0] + 1:])),
        st.sampled_from(seeds),
    ))
    assert grammar.accepts(text) == lark_accepts(parser, text), text


def test_lazy_string_stops_at_first_quote():
    grammar, parser = Grammar.from_lark(DIFF_GRAMMARS["kv"][0]), None
    assert grammar.accepts('a="x\\"y"') and not grammar.accepts('a="x"y"')


# ---------------------------------------------------------------- exact refusals


@pytest.mark.parametrize("pattern, message", [
    (r"/a(?=b)c?/", "lookahead can see past the end of the terminal (grammarc has no lexer "
                    "context); only lookarounds that test a character inside the terminal are supported"),
    (r"/(?:a(?!b))+/", "lookaround inside a group, alternation or repetition is not supported"),
    (r"/a(?=bc)/", "lookahead (?=...) is supported only over a single character"),
    (r"/(?<!a)b/", "lookbehind can see past the start of the terminal (grammarc has no lexer "
                   "context); only lookarounds that test a character inside the terminal are supported"),
    (r"/a?(?!b)/", "lookahead at the end of a terminal that can be empty is not supported"),
    (r'/"a*?"(?!b)/', "lookahead at the end of a terminal with a lazy repetition is not supported"),
    (r"/(a)\1/", "backreference is not supported (not a regular language)"),
    (r"/^a/", "anchor ^ is not supported: Lark tests it against the whole input, outside the terminal"),
    (r"/a(?=bc)c/", "lookahead (?=...) is supported only over a single character"),
])
def test_refused_regexes(pattern, message):
    text = f"start: X\nX: {pattern}\n"
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark(text, name="g.lark")
    assert str(info.value) == f"g.lark:2:1: terminal X: {message}\nX: {pattern}\n^"


def test_inside_lookaround_compiled_exactly():
    g = Grammar.from_lark('start: X\nX: /a(?!b)[a-c]/\n')
    assert [g.accepts(t) for t in ("aa", "ab", "ac")] == [True, False, True]


def test_declare_refused():
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark("start: A\n%declare A\n", name="g.lark")
    assert str(info.value).startswith("g.lark:2:10: %declare A is not supported")


def test_start_undefined():
    with pytest.raises(GrammarError, match="start rule 'nope' is not defined"):
        Grammar.from_lark('start: "a"\n', start="nope")


def test_templates_and_override():
    text = '_sep{x, s}: x (s x)*\nstart: _sep{"a", ","}\n%import common.WS\n%ignore WS\n'
    g = Grammar.from_lark(text)
    assert [g.accepts(t) for t in ("a", " a , a", "a,", "")] == [True, True, False, False]


# ------------------------------------------------ terminals vs Python's own matcher

EVERY_CHARACTER = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)


def translated_chars(pattern: str):
    """The code point set our translation of a one-character pattern denotes, as grammarc reads it."""
    (text, mode), = translate(pattern)
    node = parse_regex(text)
    assert mode == "match" and isinstance(node, RegexChars), (pattern, text)
    return node.ranges


def python_chars(pattern: str):
    """Every character Python's matcher accepts for a one-character pattern: the runs of
    ``(?:pattern)+`` in the text of all characters (one scan at C speed)."""
    flags, body = re.fullmatch(r"(\(\?[a-z]+\))?(.*)", pattern, re.DOTALL).groups()
    runs = re.finditer(f"{flags or ''}(?:{body})+", EVERY_CHARACTER)
    return normalize((ord(m[0][0]), ord(m[0][-1])) for m in runs)


@settings(max_examples=100, deadline=None)
@given(a=st.lists(st.tuples(st.integers(0xD7F0, 0xE010), st.integers(0, 40))),
       b=st.lists(st.tuples(st.integers(0xD7F0, 0xE010), st.integers(0, 40))))
def test_intersection_of_code_point_sets(a, b):
    """`regex.intersection` (used by the lookaround filter) against Python sets, around surrogates."""
    a_ranges, b_ranges = [(lo, lo + n) for lo, n in a], [(lo, lo + n) for lo, n in b]
    expect = {cp for lo, hi in a_ranges for cp in range(lo, hi + 1)} & {
        cp for lo, hi in b_ranges for cp in range(lo, hi + 1)} - set(range(0xD800, 0xE000))
    assert intersection(tuple(a_ranges), tuple(b_ranges)) == normalize((cp, cp) for cp in expect)


def test_case_relevant_holds_every_cased_character():
    """Outside `_case_relevant` Python's IGNORECASE matcher sees no case (what `_fold` assumes)."""
    relevant = _case_relevant()
    outside = [cp for cp in range(0x110000) if not contains(relevant, cp)]
    assert len(outside) > 1_000_000
    assert not [cp for cp in outside if _sre.unicode_iscased(cp) or _sre.unicode_tolower(cp) != cp]
    assert all(contains(relevant, cp) for cp in (0x0130, 0x017F, 0x212A, 0x1E9E, 0x00DF, 0x0345))


@pytest.mark.parametrize("pattern", [
    "(?i)k", "(?i)s", "(?i)i", "(?i)\u0130", "(?i)\u00df", "(?i)\u1e9e", "(?i)\u00b5", "(?i)\u0345",
    "(?i)[^k]", "(?i)[a-z]", r"(?i)[^a-z\d]", r"(?i)[\W]", r"(?i)[a\W]", r"(?i)[^\w]",
    "(?i)[\U00010400-\U00010410]", "(?i)[\u0370-\u03ff]", "(?ai)k", r"(?ai)[^\u00e9\s]",
    r"(?ai)[\w\u212a]", "(?ai)[a-\U00010400]", r"(?a)[^\d]", r"\s", r"(?s).", ".",
])
def test_character_sets_equal_pythons(pattern):
    assert translated_chars(pattern) == python_chars(pattern)


# A mixed alphabet: ASCII, letters whose case Python pairs specially (long s, Kelvin sign, dotted
# and dotless i, sharp s, micro sign), accented and astral letters, digits of other scripts.
ALPHABET = ("aAkKsSiIeE_09 \n\t-\u017f\u212a\u0130\u0131\u00df\u1e9e\u00b5\u03bc\u00e9\u00c9"
            "\u0663\u096d\u00a0\U00010400\U00010428")


@st.composite
def python_patterns(draw, depth=0):
    """A small Python pattern of literals, classes, categories, alternation, counted repetition
    and scoped flags (greedy only)."""
    char = st.sampled_from(ALPHABET)
    leaves = [
        char.map(re.escape),
        st.sampled_from([r"\d", r"\w", r"\s", r"\D", r"\W", r"\S", "."]),
        st.tuples(st.booleans(), st.lists(st.one_of(
            char.map(re.escape),
            st.tuples(char, char).map(lambda p: "-".join(re.escape(c) for c in sorted(p))),
            st.sampled_from([r"\d", r"\w", r"\s", r"\W"])), min_size=1, max_size=3))
        .map(lambda c: "[" + "^" * c[0] + "".join(c[1]) + "]"),
    ]
    if depth >= 3 or (depth > 0 and draw(st.integers(0, 2)) == 0):
        return draw(st.one_of(leaves))
    sub = python_patterns(depth + 1)
    kind = draw(st.sampled_from(["seq", "alt", "rep", "flag"]))
    if kind == "seq":
        return "".join(draw(st.lists(sub, min_size=2, max_size=3)))
    if kind == "alt":
        return "(?:" + "|".join(draw(st.lists(sub, min_size=2, max_size=3))) + ")"
    if kind == "flag":
        return f"(?{draw(st.sampled_from(['i', 'a', '-i', 's']))}:{draw(sub)})"
    lo = draw(st.integers(0, 2))
    quantifier = draw(st.sampled_from(["*", "+", "?", f"{{{lo}}}", f"{{{lo},{lo + 1}}}", f"{{{lo},}}"]))
    return f"(?:{draw(sub)}){quantifier}"


SHORT_TEXTS = [""] + list(ALPHABET) + [a + b for a in ALPHABET for b in ALPHABET]


@settings(max_examples=100, deadline=None)
@given(flags=st.sampled_from(["", "(?i)", "(?a)", "(?ai)", "(?s)"]), body=python_patterns(),
       longer=st.lists(st.text(alphabet=ALPHABET, min_size=3, max_size=6), max_size=30))
def test_terminal_language_equals_python_fullmatch(flags, body, longer):
    pattern = flags + body
    (text, mode), = translate(pattern)
    dfa = from_regex(text)
    assert mode == "match"
    for s in SHORT_TEXTS + longer:
        assert dfa.matches(s.encode()) == (re.fullmatch(pattern, s) is not None), (pattern, s)


def test_ignored_terminals_match_greedily_as_in_lark():
    """Lark matches an ignored terminal with one greedy regex match, so `#ab` is all comment
    and never the comment `#a` then the name `b`; grammarc once accepted the latter."""
    text = 'start: "x" "->" NAME\nNAME: /[a-z]+/\nCOMMENT: /#[a-z]*/\n%ignore COMMENT\n%ignore " "\n'
    grammar = Grammar.from_lark(text)
    earley = lark.Lark(text, parser="earley", lexer="dynamic_complete")
    cases = {"x->#ab": False, "x->b#c": True, "x -> #ab b": True, "x->#a b": True, "x->#a": False, "x->b #c #d": True}
    assert {t: grammar.accepts(t) for t in cases} == cases
    assert {t: lark_accepts(earley, t) for t in cases} == cases


def test_meta_grammar_comments_are_greedy(meta, meta_earley):
    """`-> //c`: the comment takes `c`, so the alias has no name (hypothesis found it)."""
    texts = ["a: -> //c\n", "a: ->//c\n\n", "a: -> #c\n\n", "a: b -> c //c\n", "a: b//c\n//d\n", "a: b\t \tc\n"]
    verdicts = [meta.accepts(t) for t in texts]
    assert verdicts == [lark_accepts(meta_earley, t) for t in texts] == [False, False, False, True, True, True]
