"""IR -> text -> IR is the identity; text -> IR -> text gives the canonical spelling."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc import Grammar, GrammarWarning
from grammarc.ir import Alt, AnyToken, Except, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq, Substrings
from grammarc.ir.printer import expr_to_ebnf, quote


def parse(text: str, start: str = "start") -> Grammar:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GrammarWarning)
        return Grammar.from_ebnf(text, start=start)


def assert_round_trip(grammar: Grammar) -> None:
    text = grammar.to_ebnf()
    again = parse(text, start=grammar.start)
    assert again == grammar, text
    assert again.to_ebnf() == text


# -- canonical text of hand-written grammars ------------------------------------------

CANONICAL = [
    # (source, canonical text)
    ("start = 'a' , 'b';", 'start ::= "a" "b";\n'),
    ("start ::= ('a' | 'b') | 'c';", 'start ::= ("a" | "b") | "c";\n'),
    ("start ::= 'a' | ('b' | 'c');", 'start ::= "a" | ("b" | "c");\n'),
    ("start ::= ('a' 'b') 'c';", 'start ::= ("a" "b") "c";\n'),
    ("start ::= 'a' ('b' 'c');", 'start ::= "a" ("b" "c");\n'),
    ("start ::= ('a' 'b') | 'c';", 'start ::= "a" "b" | "c";\n'),
    ("start ::= 'a' ('b' | 'c')*;", 'start ::= "a" ("b" | "c")*;\n'),
    ("start ::= ['a'] {'b'} 'c'+ 'd'{2} 'e'{2,} 'f'{2,5} 'g'{,3};",
     'start ::= "a"? "b"* "c"+ "d"{2} "e"{2,} "f"{2,5} "g"{0,3};\n'),
    ("start ::= 'a'*? ('b' 'c')+ ('d'+)*;", 'start ::= ("a"*)? ("b" "c")+ ("d"+)*;\n'),
    ("start ::= '' () ('a',) (| 'b');", 'start ::= "" () ("a",) (| "b");\n'),
    ("start ::= #'\\\\d+' #e'a' #ex'b' #substrs'xyz';", 'start ::= #/\\d+/ #e/a/ #ex/b/ #substrs"xyz";\n'),
    ("start ::= #/a\\/b/ #'a\\nb' #'' #/x\\\\/ #'x\\\\';", 'start ::= #"a/b" #"a\\nb" #"" #/x\\\\/ #"x\\\\";\n'),
    ("start ::= any! except!('ab') except!(s, 4); s ::= 'x' | 'y';",
     'start ::= any! except!("ab") except!(s, 4);\ns ::= "x" | "y";\n'),
    ("start ::= 'it\\'s' \"say \\\"hi\\\"\" '\\\\' '\\/';", 'start ::= "it\'s" "say \\"hi\\"" "\\\\" "/";\n'),
    ("start ::= '\\n\\r\\t\\b\\f\\v\\0\\x7f\\x80\\xa0';", 'start ::= "\\n\\r\\t\\x08\\x0C\\x0B\\x00\\x7F\\x80\\xA0";\n'),
    ("start ::= 'é😀中' '\\u200b\\u2028\\uFEFF' '\\u{E0001}';",
     'start ::= "é😀中" "\\u200B\\u2028\\uFEFF" "\\u{E0001}";\n'),
    ("start ::= x; x ::= 'a'; x ::= 'b';", 'start ::= x;\nx ::= "a" | "b";\n'),
    ("(* c *) start (* c *) ::= 'a' (* c *);", 'start ::= "a";\n'),
]


@pytest.mark.parametrize("source, canonical", CANONICAL)
def test_canonical_text(source, canonical):
    grammar = parse(source)
    assert grammar.to_ebnf() == canonical
    assert parse(canonical) == grammar
    assert_round_trip(grammar)


def test_long_alternation_is_broken_over_lines():
    items = " | ".join(f"'alternative_{i}'" for i in range(6))
    grammar = parse(f"value ::= {items};", start="value")
    assert grammar.to_ebnf() == (
        'value ::= "alternative_0"\n'
        '        | "alternative_1"\n'
        '        | "alternative_2"\n'
        '        | "alternative_3"\n'
        '        | "alternative_4"\n'
        '        | "alternative_5";\n'
    )
    assert_round_trip(grammar)


def test_short_alternation_stays_on_one_line():
    assert parse("v ::= 'a' | 'b' 'c';", start="v").to_ebnf() == 'v ::= "a" | "b" "c";\n'


def test_expr_to_ebnf_and_quote():
    assert expr_to_ebnf(Alt((Seq((Literal("a"), Ref("b"))), Repeat(Alt((Literal("c"), AnyToken())), 1, 3)))) == (
        '"a" b | ("c" | any!){1,3}'
    )
    assert quote('a"b\\c\n') == '"a\\"b\\\\c\\n"'


def test_every_construct_round_trips_from_ir():
    lits = Alt((Literal("x"), Literal("y")))
    rules = (
        ("start", Seq((Ref("body"), Ref("lits")))),
        ("body", Alt((
            Seq(()), Seq((Literal(""),)), Alt((Literal("a"),)), Alt((Alt((Literal("a"), Literal("b"))), Literal("c"))),
            Seq((Seq((Literal("a"), Literal("b"))), Seq(()))), Repeat(Repeat(Literal("a"), 0, 1), 2, None),
            Repeat(Seq(()), 0, 0), Repeat(Alt((Literal("a"),)), 1, 1), Regex("a/b", "early"), Regex("[/]\n"),
            Regex("\\", "complement"), Regex("\\\\"), Substrings("s/'\""), AnyToken(),
            Except(Literal("\n\n"), 7), Except(Ref("lits")), JsonStringExcept(()), JsonStringExcept(("a\"", "", "\n")),
        ))),
        ("lits", lits),
    )
    assert_round_trip(Grammar(rules=rules))
    assert_round_trip(Grammar(rules=rules, start="lits"))


def test_stdlib_like_grammar_round_trips():
    source = r"""
    (* A small JSON grammar *)
    start ::= ws value ws;
    value ::= object | array | string | number | 'true' | 'false' | 'null';
    object ::= '{' ws [member {ws ',' ws member} ws] '}';
    member ::= string ws ':' ws value;
    array ::= '[' ws [value {ws ',' ws value} ws] ']';
    string ::= '"' { #'[^"\\\\\x00-\x1f]' | '\\' (#'["\\\\/bfnrt]' | 'u' #'[0-9a-fA-F]'{4}) } '"';
    number ::= ['-'] ('0' | #'[1-9]' #'[0-9]'*) ['.' #'[0-9]'+] [('e' | 'E') ['+' | '-'] #'[0-9]'+];
    ws ::= #'[ \t\n\r]'*;
    """
    assert_round_trip(parse(source))


# -- hypothesis: arbitrary valid IR grammars ------------------------------------------

NAMES = ("start", "a", "b_2", "_c")
TRICKY = st.sampled_from(list("\"'\\/\n\r\t\x00\x7f\x85\u00a0\u2028\ufeff é😀*()#{}[]|;,:= "))
TEXT = st.text(alphabet=st.one_of(TRICKY, st.characters(exclude_categories=("Cs",))), max_size=6)
NONEMPTY = TEXT.filter(bool)


def bounds():
    return st.integers(0, 4).flatmap(
        lambda low: st.tuples(st.just(low), st.one_of(st.none(), st.integers(low, low + 3)))
    )


LEAVES = st.one_of(
    TEXT.map(Literal),
    st.builds(Regex, TEXT, st.sampled_from(("match", "early", "complement"))),
    TEXT.map(Substrings),
    st.sampled_from(NAMES).map(Ref),
    st.just(AnyToken()),
    st.builds(Except, st.one_of(NONEMPTY.map(Literal), st.just(Ref("lits"))), st.one_of(st.none(), st.integers(1, 9))),
    st.just(Seq(())),
)


def extend(children):
    items = st.lists(children, min_size=1, max_size=3).map(tuple)
    return st.one_of(
        items.map(Seq),
        items.map(Alt),
        st.builds(lambda item, b: Repeat(item, b[0], b[1]), children, bounds()),
    )


EXPRS = st.recursive(LEAVES, extend, max_leaves=10)


@st.composite
def grammars(draw):
    order = draw(st.permutations(NAMES))
    rules = [(name, draw(EXPRS)) for name in order]
    literals = draw(st.lists(NONEMPTY.map(Literal), min_size=1, max_size=3))
    lits = literals[0] if len(literals) == 1 and draw(st.booleans()) else Alt(tuple(literals))
    rules.insert(draw(st.integers(0, len(rules))), ("lits", lits))
    return Grammar(rules=tuple(rules), start=draw(st.sampled_from(NAMES)))


@settings(max_examples=200, deadline=None)
@given(grammars())
def test_ir_round_trip(grammar):
    assert_round_trip(grammar)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_literal_and_regex_text_round_trip(text):
    grammar = Grammar(rules=(("start", Seq((Literal(text), Regex(text), Substrings(text)))),))
    assert_round_trip(grammar)
