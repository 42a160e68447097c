"""The grammars shipped in stdlib_grammars/: they load, print back to themselves, and
accept and reject exactly what their comments promise."""

from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc
from grammarc import stdlib_grammars

SHIPPED = ["arithmetic", "c", "json", "xml"]


@pytest.fixture(scope="module")
def grammars() -> dict[str, grammarc.Grammar]:
    """Each shipped grammar, parsed once for the whole module."""
    return {name: grammarc.stdlib(name) for name in stdlib_grammars.names()}


def test_shipped_names():
    assert set(SHIPPED) <= set(stdlib_grammars.names())


@pytest.mark.parametrize("name", stdlib_grammars.names())
def test_loads_with_start_rule(grammars, name):
    grammar = grammars[name]
    assert isinstance(grammar, grammarc.Grammar)
    assert grammar.start == "start"
    assert "start" in grammar


@pytest.mark.parametrize("name", stdlib_grammars.names())
def test_round_trip(grammars, name):
    grammar = grammars[name]
    text = grammar.to_ebnf()
    assert grammarc.Grammar.from_ebnf(text, start=grammar.start) == grammar
    # printing is canonical: the printed text prints to itself
    assert grammarc.Grammar.from_ebnf(text).to_ebnf() == text


@pytest.mark.parametrize("name", stdlib_grammars.names())
def test_compiles(grammars, name):
    grammars[name].compile()


def test_unknown_name_is_a_clear_error():
    with pytest.raises(KeyError, match="no stdlib grammar named 'nope'"):
        grammarc.stdlib("nope")


# -- exact expectations per grammar ------------------------------------------------------

GOOD: dict[str, list[str | bytes]] = {
    "json": [
        "0",
        "-0",
        "-12.5e+3",
        "1E-7",
        "true",
        " null ",
        '""',
        '"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00E9\\uD800"',
        '"é€😀\x7f"',
        '" \uffff\U0010ffff"',
        '{"a":1,"b":[true,false,null],"c":{"d":"e"}}',
        "[ ]",
        "{ }",
        '{\r\n\t"k" : [ 1 , 2 ]\r\n}\r\n',
        "[[[[]]]]",
    ],
    "arithmetic": [
        "1",
        "3.14",
        "-2",
        "1+2*3",
        " ( 1 + 2 ) * -3 / 4.5 ",
        "--1",
        "10 - -2",
        "((((0))))",
        "1\t*\t2",
    ],
    "c": [
        "",
        "int x;",
        "int main(void) { return 0; }",
        "char *name, **argv;",
        "float f(float a, int *b);",
        "int a[10] = 0;\n",
        # comments anywhere whitespace may stand
        "/* header */ int main() {\n  // count\n  int i = 0;\n  while (i < 10) i += 1;\n  return i;\n}\n",
        "void f(void) { if (a == 1 && !b) { x = -y * 2; } else if (c) ; else { g(1, 'c', \"s\\n\"); } }",
        "int g() { for (int i = 0; i <= 9; i = i + 1) s[i] = .5e1f; for (;;) {} }",
        "int h(){int*p=&x;*p=p[0]%2;return(x);}",
        "int /**/ k;",
        "void f(){ a = b = c; x /= 3.0; }",
    ],
    "xml": [
        "<catalog></catalog>",
        "<?xml version='1.0' encoding=\"UTF-8\"?>\n<catalog>\n</catalog>\n",
        '<catalog><book id="b1"><title>Dune</title><author>Frank Herbert</author>'
        "<price>9.99</price></book></catalog>",
        "<catalog>\n  <book id='b2' lang=\"fr\">\n    <title>L&apos;&#201;tranger &amp; co</title>\n"
        "    <author>Albert Camus</author>\n    <author>&#x41;non</author>\n"
        "    <year>1942</year>\n    <price currency = 'EUR' >7</price>\n  </book >\n</catalog >",
        "<catalog><book id='a\"b'><title>t</title><author>a</author><price>1</price></book></catalog>",
        '<catalog><book id=""><title></title><author>é</author><price>0</price></book></catalog>',
    ],
}

BAD: dict[str, list[str | bytes]] = {
    "json": [
        "",
        " ",
        "01",
        "+1",
        "1.",
        ".5",
        "1e",
        "0x10",
        "NaN",
        "-Infinity",
        "[1,]",
        '{"a":1,}',
        "{'a':1}",
        '{"a"}',
        '"\\x41"',
        '"\\u12"',
        '"tab\there"',
        '"\x00"',
        '"\x1f"',
        '"line\nbreak"',
        "\ufeff{}",
        "[1]\f",
        "[1] [2]",
        "tru",
        b'"\xff"',
        b'"\xed\xa0\x80"',
        b'"\xc0\xaf"',
    ],
    "arithmetic": [
        "",
        "1 +",
        "1 2",
        "(1",
        "1)",
        "1.",
        ".5",
        "1 . 5",
        "+1",
        "1 ** 2",
        "1\n+2",
        "a",
    ],
    "c": [
        "int x",
        "x;",
        "int main() { return 0 }",
        "intx;",
        "int main() { return 0 1; }",
        "int f() { if (a) x; else }",
        "int f() { x = ; }",
        "int f() { /* open }",
        "int f() { // no newline }",
        "int f() { s = \"a\nb\"; }",
        "int f() { c = 'ab'; }",
        "bool b;",
        "int f() { 1 +; }",
        "int f() { while x; }",
    ],
    "xml": [
        "",
        "<catalog>",
        "<catalog/>",
        "<book id='1'><title>t</title><author>a</author><price>1</price></book>",
        "<catalog><book><title>t</title><author>a</author><price>1</price></book></catalog>",
        "<catalog><book id='1'><author>a</author><title>t</title><price>1</price></book></catalog>",
        "<catalog><book id='1'><title>t</title><price>1</price></book></catalog>",
        "<catalog><book id='1'><title>a < b</title><author>a</author><price>1</price></book></catalog>",
        "<catalog><book id='1'><title>a & b</title><author>a</author><price>1</price></book></catalog>",
        "<catalog><book id='1'><title>&nbsp;</title><author>a</author><price>1</price></book></catalog>",
        "<catalog><book id='1'><title>t</title><author>a</author><price>1.5</price></book></catalog>",
        '<catalog><book id="a"b""><title>t</title><author>a</author><price>1</price></book></catalog>',
        "<catalog><book lang='en' id='1'><title>t</title><author>a</author><price>1</price></book></catalog>",
        "<catalog><book id='1'><title>t</title><author>a</author>"
        "<price currency='usd'>1</price></book></catalog>",
        "<catalog><book id='1'><title>\x01</title><author>a</author><price>1</price></book></catalog>",
        "< catalog></catalog>",
        "<?xml version='1.1'?><catalog></catalog>",
    ],
}


def _cases(table: dict[str, list[str | bytes]]) -> list:
    return [pytest.param(name, text, id=f"{name}-{i}") for name, texts in table.items() for i, text in enumerate(texts)]


@pytest.mark.parametrize("name, text", _cases(GOOD))
def test_accepts_good(grammars, name, text):
    assert grammars[name].accepts(text) is True


@pytest.mark.parametrize("name, text", _cases(BAD))
def test_rejects_bad(grammars, name, text):
    assert grammars[name].accepts(text) is False


def test_str_and_bytes_agree(grammars):
    for text in GOOD["json"] + BAD["json"]:
        if isinstance(text, str):
            assert grammars["json"].accepts(text) is grammars["json"].accepts(text.encode("utf-8"))


# -- JSON: whatever json.dumps produces ---------------------------------------------------

VALUES = [
    None,
    True,
    0,
    -1,
    2**70,
    1.5,
    -0.0,
    1e-300,
    1.7976931348623157e308,
    "",
    "plain",
    "quote \" backslash \\ slash / controls \x00\x01\x1f\x7f\b\f\n\r\t",
    "unicode é € 😀 \u2028 \ufeff \uffff",
    [],
    {},
    [1, [2, [3, []]], {"x": None}],
    {"nested": {"list": [1, 2.5, "three", False], "empty": {}}, "": [""], "é": "ü"},
]
DUMPS_OPTIONS = [
    {"indent": indent, "ensure_ascii": ensure_ascii, "separators": separators}
    for indent in (None, 2, 4)
    for ensure_ascii in (True, False)
    for separators in (None, (",", ":"))
]


@pytest.mark.parametrize("options", DUMPS_OPTIONS, ids=lambda o: f"indent={o['indent']}-ascii={o['ensure_ascii']}-sep={o['separators']}")
@pytest.mark.parametrize("value", VALUES, ids=[f"v{i}" for i in range(len(VALUES))])
def test_json_dumps_accepted(grammars, value, options):
    assert grammars["json"].accepts(json.dumps(value, **options).encode("utf-8")) is True


def test_json_crlf_pretty_printed_document(grammars):
    document = json.dumps(VALUES[-1], indent="\t").replace("\n", "\r\n") + "\r\n"
    assert "\r\n\t" in document
    assert grammars["json"].accepts(document) is True
    # a lone CR is whitespace too, but a form feed or vertical tab is not
    assert grammars["json"].accepts(document.replace("\r\n", "\r")) is True
    assert grammars["json"].accepts(document.replace("\r\n", "\r\n\f")) is False
    assert grammars["json"].accepts(document.replace("\r\n", "\v")) is False


@pytest.mark.parametrize("special", [math.nan, math.inf, -math.inf])
def test_json_dumps_of_non_finite_floats_rejected(grammars, special):
    # json.dumps writes NaN / Infinity / -Infinity, which are not JSON
    assert grammars["json"].accepts(json.dumps([special])) is False


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(json_values, st.sampled_from([None, 0, 2, 4]), st.booleans(), st.booleans())
def test_json_dumps_random_values(grammars, value, indent, ensure_ascii, sort_keys):
    text = json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, sort_keys=sort_keys)
    assert grammars["json"].accepts(text.encode("utf-8")) is True


# -- arithmetic: differential against a hand-written recognizer ---------------------------

_ARITH_TOKEN = re.compile(r"[ \t]*(?:(?P<number>[0-9]+(?:\.[0-9]+)?)|(?P<op>[-+*/()]))")


def arithmetic_oracle(text: str) -> bool:
    """Recursive descent over tokens; numbers are maximal runs (two numbers can never
    stand side by side, so greedy tokenizing loses nothing)."""
    tokens, i = [], 0
    while True:
        m = _ARITH_TOKEN.match(text, i)
        if not m:
            break
        tokens.append(m.group("number") and "n" or m.group("op"))
        i = m.end()
    if text[i:].strip(" \t"):
        return False

    def expr(k):
        k = term(k)
        while k is not None and k < len(tokens) and tokens[k] in "+-":
            k = term(k + 1)
        return k

    def term(k):
        k = factor(k)
        while k is not None and k < len(tokens) and tokens[k] in "*/":
            k = factor(k + 1)
        return k

    def factor(k):
        if k >= len(tokens):
            return None
        if tokens[k] == "-":
            return factor(k + 1)
        if tokens[k] == "n":
            return k + 1
        if tokens[k] == "(":
            k = expr(k + 1)
            return k + 1 if k is not None and k < len(tokens) and tokens[k] == ")" else None
        return None

    return expr(0) == len(tokens)


@st.composite
def arithmetic_texts(draw) -> str:
    def expression(depth):
        kind = draw(st.sampled_from(["number", "number", "binary", "neg", "paren"] if depth < 3 else ["number"]))
        if kind == "number":
            return draw(st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,2})?", fullmatch=True))
        space = draw(st.sampled_from(["", " ", "\t", "  "]))
        if kind == "binary":
            op = draw(st.sampled_from("+-*/"))
            return f"{expression(depth + 1)}{space}{op}{space}{expression(depth + 1)}"
        if kind == "neg":
            return f"-{space}{expression(depth + 1)}"
        return f"({space}{expression(depth + 1)}{space})"

    text = list(expression(0))
    for _ in range(draw(st.integers(0, 2))):  # then break it, maybe
        position = draw(st.integers(0, len(text)))
        text.insert(position, draw(st.sampled_from(list("0.+-*/() \t\nx"))))
    return "".join(text)


@settings(max_examples=200, deadline=None)
@given(arithmetic_texts())
def test_arithmetic_agrees_with_oracle(grammars, text):
    assert grammars["arithmetic"].accepts(text) is arithmetic_oracle(text)


# -- xml: catalogs serialized by the standard library --------------------------------------

xml_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffe\uffff",
                  min_codepoint=0x09).filter(lambda c: c in "\t\n\r" or ord(c) >= 0x20),
    max_size=12,
)
books = st.lists(
    st.tuples(
        xml_text,  # id
        st.none() | xml_text,  # lang
        xml_text,  # title
        st.lists(xml_text, min_size=1, max_size=3),  # authors
        st.none() | st.integers(1000, 9999),  # year
        st.none() | st.from_regex(r"[A-Z]{3}", fullmatch=True),  # currency
        st.from_regex(r"[0-9]{1,4}(\.[0-9]{2})?", fullmatch=True),  # price
    ),
    max_size=3,
)


@settings(max_examples=100, deadline=None)
@given(books, st.booleans(), st.sampled_from(["", "\n", "\n  ", "\r\n\t"]))
def test_xml_catalogs_from_saxutils(grammars, catalog, declaration, gap):
    from xml.etree import ElementTree
    from xml.sax.saxutils import escape, quoteattr

    parts = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" if declaration else "", "<catalog>", gap]
    for book_id, lang, title, authors, year, currency, price in catalog:
        lang_attr = f" lang={quoteattr(lang)}" if lang is not None else ""
        parts.append(f"<book id={quoteattr(book_id)}{lang_attr}>{gap}<title>{escape(title)}</title>{gap}")
        parts.extend(f"<author>{escape(author)}</author>{gap}" for author in authors)
        if year is not None:
            parts.append(f"<year>{year}</year>{gap}")
        currency_attr = f" currency={quoteattr(currency)}" if currency else ""
        parts.append(f"<price{currency_attr}>{price}</price>{gap}</book>{gap}")
    parts.append("</catalog>")
    document = "".join(parts)
    ElementTree.fromstring(document.encode("utf-8"))  # the generator writes well-formed XML
    assert grammars["xml"].accepts(document.encode("utf-8")) is True
