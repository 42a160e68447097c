"""The .ebnf front-end: exact IR for every construct, escapes, comments, spans."""

from __future__ import annotations

import warnings

import pytest

from grammarc import Grammar, GrammarWarning
from grammarc.errors import Source
from grammarc.frontends.ebnf import _Positions, parse_ebnf
from grammarc.ir import Alt, AnyToken, Except, Literal, Ref, Regex, Repeat, Seq, Substrings

A, B, C = Literal("a"), Literal("b"), Literal("c")


def rhs(text: str, **defs: str):
    """The IR of `start ::= text;` (extra rules given as name=rhs, all referenced or not)."""
    extra = "".join(f"{name} ::= {body};\n" for name, body in defs.items())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        return parse_ebnf(f"start ::= {text};\n{extra}")["start"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("'a'", A),
        ('"a"', A),
        ("''", Literal("")),
        ("()", Seq(())),
        ("'a' 'b'", Seq((A, B))),
        ("'a', 'b'", Seq((A, B))),
        ("'a','b' 'c'", Seq((A, B, C))),
        ("'a' | 'b'", Alt((A, B))),
        ("'a' | 'b' | 'c'", Alt((A, B, C))),
        ("('a' | 'b') | 'c'", Alt((Alt((A, B)), C))),
        ("'a' | ('b' | 'c')", Alt((A, Alt((B, C))))),
        ("('a' 'b') 'c'", Seq((Seq((A, B)), C))),
        ("'a' 'b' | 'c'", Alt((Seq((A, B)), C))),
        ("'a' ('b' | 'c')", Seq((A, Alt((B, C))))),
        ("('a')", A),
        ("((('a')))", A),
        ("('a',)", Seq((A,))),
        ("'a' 'b',", Seq((A, B))),
        ("(| 'a')", Alt((A,))),
        ("| 'a' | 'b'", Alt((A, B))),
        ("'a'?", Repeat(A, 0, 1)),
        ("['a']", Repeat(A, 0, 1)),
        ("'a'*", Repeat(A, 0, None)),
        ("{'a'}", Repeat(A, 0, None)),
        ("'a'+", Repeat(A, 1, None)),
        ("'a'{3}", Repeat(A, 3, 3)),
        ("'a'{3,}", Repeat(A, 3, None)),
        ("'a'{2,5}", Repeat(A, 2, 5)),
        ("'a'{,5}", Repeat(A, 0, 5)),
        ("'a'{ 2 , 5 }", Repeat(A, 2, 5)),
        ("'a' {2,5}", Repeat(A, 2, 5)),
        ("'a'{0}", Repeat(A, 0, 0)),
        ("'a'*?", Repeat(Repeat(A, 0, None), 0, 1)),
        ("('a'*)?", Repeat(Repeat(A, 0, None), 0, 1)),
        ("['a' 'b']", Repeat(Seq((A, B)), 0, 1)),
        ("{'a' | 'b'}", Repeat(Alt((A, B)), 0, None)),
        ("'a' 'b'+", Seq((A, Repeat(B, 1, None)))),
        ("('a' 'b')+", Repeat(Seq((A, B)), 1, None)),
        ("'a' {'b'}", Seq((A, Repeat(B, 0, None)))),
        ("#'[0-9]+'", Regex("[0-9]+")),
        ('#"[0-9]+"', Regex("[0-9]+")),
        ("#e'a+'", Regex("a+", "early")),
        ("#ex'a+'", Regex("a+", "complement")),
        ("#/a+/", Regex("a+")),
        ("#e/a+/", Regex("a+", "early")),
        ("#ex/a+/", Regex("a+", "complement")),
        ("#''", Regex("")),
        ("#substrs'abc'", Substrings("abc")),
        ("#substrs/a\\/b/", Substrings("a/b")),
        ("any!", AnyToken()),
        ("any! any!", Seq((AnyToken(), AnyToken()))),
        ("any!*", Repeat(AnyToken(), 0, None)),
        ("except!('ab')", Except(Literal("ab"))),
        ("except!('ab', 3)", Except(Literal("ab"), 3)),
        ("except!( 'ab' , 3 )", Except(Literal("ab"), 3)),
        ("except!('ab')+", Repeat(Except(Literal("ab")), 1, None)),
    ],
)
def test_construct(text, expected):
    assert rhs(text) == expected


def test_refs_and_except_rule():
    assert rhs("x y", x="'a'", y="'b'") == Seq((Ref("x"), Ref("y")))
    assert rhs("except!(stop, 2)", stop="'a' | 'b'") == Except(Ref("stop"), 2)


@pytest.mark.parametrize(
    "source, expected",
    [
        (r"'\n\r\t\b\f\v\0'", "\n\r\t\b\f\v\0"),
        (r"'\'\"\\\/'", "'\"\\/"),
        (r'"\x41\x7a\xff"', "Az\xff"),
        (r"'\u0041\u00e9\u4e2D'", "A\u00e9\u4e2d"),
        (r"'\u{41}\u{1F600}\u{00000041}'", "A\U0001F600A"),
        (r"'\uD83D\uDE00'", "\U0001F600"),
        (r"'\u{D83D}\u{DE00}'", "\U0001F600"),
        ("'é😀 ü'", "é😀 ü"),
        ("'\t'", "\t"),
        ('"it\'s"', "it's"),
        ("'say \"hi\"'", 'say "hi"'),
        (r"'\\n'", "\\n"),
    ],
)
def test_literal_escapes(source, expected):
    assert rhs(source) == Literal(expected)


@pytest.mark.parametrize(
    "source, pattern",
    [
        (r"#'\\d+'", r"\d+"),
        (r"#'\n'", "\n"),
        (r"#'a\/b'", "a/b"),
        (r"#'\u0041'", "A"),
        (r"#/\d+/", r"\d+"),
        (r"#/a\/b/", "a/b"),
        (r"#/a\\/", "a\\\\"),
        (r"#/['\x41]\n/", r"['\x41]\n"),
        (r"#/[^/]/".replace("/]", "\\/]"), "[^/]"),
    ],
)
def test_regex_bodies(source, pattern):
    assert rhs(source) == Regex(pattern)


def test_comments_anywhere():
    text = """(* head *) start (* a *) ::= (* b *) 'a' (* c *) | (* d *) x (* e *) ; (* f *)
    x (*g*)=(*h*)'x'(*i*)+(*j*);(* multi
    line *)"""
    g = parse_ebnf(text)
    assert g.rules == (("start", Alt((A, Ref("x")))), ("x", Repeat(Literal("x"), 1, None)))


def test_comment_chars_inside_strings_are_text():
    assert rhs("'(* not a comment *)'") == Literal("(* not a comment *)")


def test_both_rule_operators_and_whitespace():
    g = parse_ebnf("start = a;\na ::= 'a' ;\n\n")
    assert g.rules == (("start", Ref("a")), ("a", A))


def test_repeated_definitions_are_alternatives_in_order():
    g = parse_ebnf("start ::= 'a'; x ::= 'x'; start ::= 'b' | 'c'; start = x;")
    assert g.names == ("start", "x")
    assert g["start"] == Alt((A, B, C, Ref("x")))


def test_repeated_definitions_splice_top_level_alternatives_only():
    # A group is its content, so `('a' | 'b')` is spliced like `'a' | 'b'`; deeper nesting stays.
    g = parse_ebnf("start ::= ('a' | 'b'); start ::= 'c' ('a' | 'b');")
    assert g["start"] == Alt((A, B, Seq((C, Alt((A, B))))))
    g = parse_ebnf("start ::= ('a' | 'b') | 'c'; start ::= (| 'a');")
    assert g["start"] == Alt((Alt((A, B)), C, A))


def test_rule_order_and_start_option():
    g = parse_ebnf("b ::= 'b'; a ::= b;", start="a")
    assert g.names == ("b", "a") and g.start == "a"


def test_name_forms():
    g = parse_ebnf("_x1 ::= A_b; A_b ::= 'q'; start ::= _x1;")
    assert g["_x1"] == Ref("A_b")


def test_spans_of_nodes_and_rules():
    text = "start ::= 'a' x+;\nx ::= #'[0-9]'{2,3} | except!('z');\n"
    g = parse_ebnf(text, name="g.ebnf")
    seq = g["start"]
    assert (seq.span.line, seq.span.col, seq.span.end_col) == (1, 11, 17)
    assert seq.items[0].span.location() == "g.ebnf:1:11"
    rep = seq.items[1]
    assert (rep.span.col, rep.span.end_col) == (15, 17)
    assert (rep.item.span.col, rep.item.span.end_col) == (15, 16)
    alt = g["x"]
    assert alt.items[0].span.location() == "g.ebnf:2:7"
    assert alt.items[0].item.span.end_col == 15
    assert alt.items[1].item.span.location() == "g.ebnf:2:31"
    assert g.rule_spans["start"].location() == "g.ebnf:1:1"
    assert g.rule_spans["x"].location() == "g.ebnf:2:1"


def test_positions_agree_with_source_span():
    text = "a\n\nbc\r\nd\u00e9\n"
    source = Source(text, "n")
    pos = _Positions(source)
    for start in range(len(text) + 2):
        for end in (start, start + 1, start + 3):
            assert pos.span(start, end) == source.span(start, end)


def test_unreachable_rule_warns_with_location():
    with pytest.warns(GrammarWarning, match=r"^g:2:1: rule 'lost' is not reachable from the start rule 'start'$"):
        parse_ebnf("start ::= 'a';\nlost ::= 'b';", name="g")


def test_recursive_rules_parse():
    g = parse_ebnf("start ::= '(' start ')' | '';")
    assert g["start"] == Alt((Seq((Literal("("), Ref("start"), Literal(")"))), Literal("")))


def test_grammar_from_ebnf_and_from_file(tmp_path):
    path = tmp_path / "g.ebnf"
    path.write_text("start ::= 'a';\n", encoding="utf-8")
    assert Grammar.from_file(path) == Grammar.from_ebnf("start ::= 'a';")
    assert Grammar.from_file(path).rule_spans["start"].location() == f"{path}:1:1"


def test_large_grammar():
    rules = "".join(f"r{i} ::= 'x{i}' r{i + 1} | #'[a-z]+' {{'q'}} ;\n" for i in range(500))
    g = parse_ebnf("start ::= r0;\n" + rules + "r500 ::= '';\n")
    assert len(g.rules) == 502
    assert g["r499"] == Alt((Seq((Literal("x499"), Ref("r500"))), Seq((Regex("[a-z]+"), Repeat(Literal("q"))))))
    assert g["r499"].span.location() == "<string>:501:10"


# ------------------------------------------------- the fast path against lark's parse

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from grammarc.errors import GrammarError  # noqa: E402
from grammarc.frontends.ebnf import _Builder, _FastParser, _Feeder, _Lexer, _Refused  # noqa: E402
from grammarc.ir import walk  # noqa: E402

PIECES = ["a", "b", "'x'", "#'y'", "#substrs'z'", "any!", "except!('z')", "except!(b, 2)", "except!(", "(",
          ")", "[", "]", "{", "}", "|", ",", "?", "*", "+", "{2,3}", "{,2}", ";", "::=", "=", "()", "2"]


def _both(text: str):
    """(fast result or None, lark-path result or None) for `text`."""
    pos = _Positions(Source(text, "t"))
    try:
        fast = _FastParser(_Lexer(text, pos), pos).grammar("start")
    except _Refused:
        fast = None
    lexer = _Lexer(text, pos)
    try:
        slow = _Builder(lexer.lexed, pos).grammar(_Feeder(lexer).parse(), "start")
    except GrammarError:
        slow = None
    return fast, slow


def _spans(grammar) -> list:
    return [(name, grammar.rule_spans.get(name)) for name in grammar.names] + [
        (type(node).__name__, node.span) for _, expr in grammar.rules for node in walk(expr)]


@given(st.lists(st.sampled_from(PIECES), max_size=12), st.lists(st.sampled_from(PIECES), max_size=6))
@settings(max_examples=400, deadline=None)
def test_fast_parser_builds_what_lark_builds(body, other) -> None:
    text = "start ::= " + " ".join(body) + " ;\nb ::= " + " ".join(other) + " ;\n"
    fast, slow = _both(text)
    assert (fast is None) == (slow is None), text
    if fast is not None:
        assert fast.rules == slow.rules and fast.start == slow.start, text
        assert _spans(fast) == _spans(slow), text


def _valid_rhs():
    atoms = st.sampled_from(["a", "b", "'x'", "#'y'", "any!", "except!('z')", "except!(b, 2)", "()"])

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from([" ", ", ", ","]), inner).map("".join),
            st.tuples(inner, inner).map(lambda x: f"{x[0]} | {x[1]}"),
            inner.map(lambda x: f"{x},"),
            inner.map(lambda x: f"| {x}"),
            st.tuples(st.sampled_from(["({})", "[{}]", "{{{}}}"]), inner).map(lambda x: x[0].format(x[1])),
            st.tuples(inner, st.sampled_from(["?", "*", "+", "{2}", "{1,}"])).map(lambda x: f"({x[0]}){x[1]}"),
        )

    return st.recursive(atoms, extend, max_leaves=8)


@given(_valid_rhs(), st.sampled_from(["", "|", ",", ")", "(", "?", ";"]), st.integers(0, 40))
@settings(max_examples=300, deadline=None)
def test_fast_parser_on_valid_and_damaged_rules(rhs, piece, at) -> None:
    for body in (rhs, rhs[:at] + piece + rhs[at:]):
        text = f"start ::= {body} ;\nb ::= 'q' ;\n"
        fast, slow = _both(text)
        assert (fast is None) == (slow is None), text
        if fast is not None:
            assert fast.rules == slow.rules and _spans(fast) == _spans(slow), text


def test_fast_parser_on_the_large_grammar_and_stdlib() -> None:
    from importlib import resources

    texts = [p.read_text(encoding="utf-8") for p in resources.files("grammarc.stdlib_grammars").iterdir()
             if p.name.endswith(".ebnf")]
    texts.append("".join(f"r{i} ::= 'x{i}' r{i + 1} | #'[a-z]+' {{'q'}} , ;\n" for i in range(50)) + "r50 ::= (| 'e');")
    for text in texts:
        fast, slow = _both(text)
        assert fast is not None and fast.rules == slow.rules and _spans(fast) == _spans(slow)


def test_unreachable_rule_warns_once_from_text_to_compiled_grammar():
    import warnings as _warnings

    from grammarc import Grammar

    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        grammar = Grammar.from_ebnf("start ::= 'a';\nunused_once ::= 'b';", name="once")
        grammar.compile()
        Grammar.from_ebnf("start ::= 'a';\nunused_once ::= 'b';", name="once").compile()
    assert [str(w.message) for w in caught] == [
        "once:2:1: rule 'unused_once' is not reachable from the start rule 'start'"]
