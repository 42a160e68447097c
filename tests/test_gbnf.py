"""The GBNF front-end (frontends/gbnf.py): every construct of llama.cpp's guide, its errors,
a differential test against xgrammar's GBNF reader, and a corpus of realistic grammars."""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from grammarc import Grammar, GrammarError
from grammarc.cli import main as cli_main
from grammarc.frontends.gbnf import MAX_DEPTH, gbnf_to_grammar, ir_name
from grammarc.ir import Alt, Literal, Ref, Regex, Repeat, Seq

DATA = Path(__file__).parent / "data" / "gbnf"


def language_table(text: str, accepted: list[str], rejected: list[str]) -> None:
    grammar = Grammar.from_gbnf(text)
    assert [s for s in accepted if not grammar.accepts(s)] == []
    assert [s for s in rejected if grammar.accepts(s)] == []


# ------------------------------------------------------------------ constructs of the guide

CONSTRUCTS = [
    # sequences, literals, alternatives, grouping
    ('root ::= "1. " "e4"', ["1. e4"], ["1.e4", "1. e4 ", ""]),
    ('root ::= "a" | "bc" | ""', ["a", "bc", ""], ["b", "abc"]),
    ('root ::= ("a" | "b") "c"', ["ac", "bc"], ["c", "abc"]),
    ('root ::= "a""b"', ["ab"], ["a"]),
    ('root ::= ()', [""], ["a"]),
    # empty alternatives (the guide's `space ::= | " " | ...`)
    ('root ::= | " "', ["", " "], ["  "]),
    ('root ::= "a" |', ["a", ""], ["aa"]),
    ('root ::= "x" ( | "y") "z"', ["xz", "xyz"], ["xyyz"]),
    # escapes in strings
    ('root ::= "\\x41\\u00e9\\U0001F600"', ["A\u00e9\U0001F600"], ["A"]),
    ('root ::= "\\x61a"', ["aa"], ["\u061a", "a"]),  # \xXX is two digits, however many follow
    ('root ::= "\\t\\n\\r\\\\\\"\\[\\]"', ['\t\n\r\\"[]'], ["\\t"]),
    ('root ::= "[a]"', ["[a]"], ["a"]),  # no class inside a string
    ('root ::= "#"', ["#"], [""]),  # no comment inside a string
    ('root ::= "a\nb"', ["a\nb"], ["ab"]),  # a raw newline inside a string is a character
    ('root ::= "é😀"', ["é😀"], ["é", "😀"]),
    # character classes
    ('root ::= [NBKQR]', list("NBKQR"), ["", "n", "NB"]),
    ('root ::= [1-9] [0-9]?', ["1", "19", "90"], ["0", "01", "100"]),
    ('root ::= [^\\n]+ "\\n"', ["abc\n", "é\n"], ["\n", "a\nb\n", "abc"]),
    ('root ::= [ぁ-ゟ]', ["ぁ", "ゟ", "を"], ["ア", "a"]),
    ('root ::= [\\x00-\\x1F]', ["\x00", "\x1f"], [" "]),
    ('root ::= [^"\\\\\\x7F\\x00-\\x1F]', ["a", "é", "'"], ['"', "\\", "\x7f", "\n"]),
    ('root ::= [-a]', ["-", "a"], ["b"]),
    ('root ::= [a-]', ["-", "a"], ["b"]),
    ('root ::= [a-c-e]', ["a", "b", "c", "-", "e"], ["d"]),
    ('root ::= [\\]\\[]', ["]", "["], ["\\"]),
    ('root ::= ["]', ['"'], ["'"]),
    ('root ::= [a^]', ["a", "^"], ["b"]),
    ('root ::= [^^]', ["a", "é"], ["^"]),
    ('root ::= [\\u00e9-\\U0001F600]', ["é", "😀", "\u4e00"], ["e", "\U0001F601"]),
    ('root ::= [^a-c]', ["d", "é", "\n", "😀"], ["a", "b", "c", "", "dd"]),
    # `.`: any one code point, newline included
    ('root ::= .', ["a", "\n", "é", "😀", "\x00"], ["", "ab"]),
    ('root ::= "<" .* ">"', ["<>", "<a\nb>", "<>>"], ["<", "a"]),
    # repetition
    ('root ::= "ab"*', ["", "ab", "abab"], ["a", "aba"]),
    ('root ::= "ab"+', ["ab", "abab"], ["", "a"]),
    ('root ::= "ab"?', ["", "ab"], ["abab"]),
    ('root ::= "a"{3}', ["aaa"], ["aa", "aaaa"]),
    ('root ::= "a"{2,}', ["aa", "aaaaa"], ["", "a"]),
    ('root ::= "a"{1,3}', ["a", "aa", "aaa"], ["", "aaaa"]),
    ('root ::= "a"{0,2}', ["", "a", "aa"], ["aaa"]),
    ('root ::= "a"{0}', [""], ["a"]),
    ('root ::= "a" { 1 , 2 } "b"', ["ab", "aab"], ["b", "aaab"]),
    ('root ::= [0-9a-fA-F]{4}', ["09aF"], ["09a", "09aG"]),
    ('root ::= "a" *', ["", "aa"], ["b"]),  # a space before the operator is fine
    ('root ::= ("a" "b"?)+', ["a", "ab", "aab", "aba"], ["b", "abb"]),
    ('root ::= "a"{2}?', ["", "aa"], ["a"]),  # stacked operators apply in turn
    ('root ::= "a"+{2}', ["aa", "aaa"], ["a", ""]),
    # rules, dashed names, recursion (left recursion too: grammarc is LR)
    ('root ::= check-mate\ncheck-mate ::= "#"', ["#"], [""]),
    ('root ::= 2x\n2x ::= "x" "x"', ["xx"], ["x"]),
    ('root ::= "(" root ")" | ""', ["", "()", "(())"], ["(()", ")("]),
    ('root ::= root "a" | "b"', ["b", "baa"], ["a", ""]),
    # comments and newlines
    ('# c\nroot ::= "a" # c\n# c\n', ["a"], [""]),
    ('root ::= "a"#c', ["a"], ["a#c"]),
    ('root ::= "a" |\n  "b" |\n\n  "c"', ["a", "b", "c"], ["ab"]),
    ('root ::= (\n  # c\n  "a"\n\n  "b" # c\n  | "c"\n)\nx ::= "y"', ["ab", "c"], ["a"]),
    ('root ::=\n  "a"', ["a"], [""]),
    ('root ::= "a" |\r\n  "b"\r\n', ["a", "b"], ["\r"]),
    ('root ::= ("a"\n*)', ["", "aa"], ["b"]),
    ('root ::=', [""], ["a"]),
]


@pytest.mark.parametrize("text,accepted,rejected", CONSTRUCTS)
def test_constructs(text, accepted, rejected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unreachable helper rules
        language_table(text, accepted, rejected)


def test_ir_shape():
    grammar = gbnf_to_grammar('root ::= "a" [b-d]* | (x-y)\nx-y ::= "q"{2,3}')
    assert grammar.start == "root"
    assert grammar.rules == (
        ("root", Alt((Seq((Literal("a"), Repeat(Regex("[b-d]"), 0, None))), Ref("x_y")))),
        ("x_y", Repeat(Literal("q"), 2, 3)),
    )
    assert gbnf_to_grammar('root ::= [^\\n-]').rules == (("root", Regex("[^\\u{A}\\-]")),)


def test_rule_names_map_injectively():
    names = ["a", "a-b", "ab", "a--b", "-a", "1x", "-1x", "--1x", "x1", "A-b", "a-B"]
    mapped = [ir_name(name) for name in names]
    assert mapped == ["a", "a_b", "ab", "a__b", "__a", "_1x", "__1x", "___1x", "x1", "A_b", "a_B"]
    assert len(set(mapped)) == len(names)
    text = "".join(f'{name} ::= "{i}"\n' for i, name in enumerate(names)) + "root ::= " + " ".join(names)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grammar = Grammar.from_gbnf(text)
    assert grammar.accepts("".join(str(i) for i in range(len(names))))


# ------------------------------------------------------------------------------- errors

ERRORS = [
    ('root ::= "abc', "1:10: unterminated string: '\"' has no closing '\"'", "         ^"),
    ('root ::= [a-z', "1:10: unterminated character class: '[' has no closing ']'", "         ^"),
    ('root ::= "a\\q"', "1:12: unknown escape '\\q'", "           ^^"),
    ('root ::= [\\-]', "1:11: unknown escape '\\-'", "          ^^"),
    ('root ::= "\\x4"', "1:11: bad escape '\\x': expected 2 hex digits", "          ^^"),
    ('root ::= "\\u00e"', "1:11: bad escape '\\u': expected 4 hex digits", "          ^^"),
    ('root ::= "\\U0001F60"', "1:11: bad escape '\\U': expected 8 hex digits", "          ^^"),
    ('root "a"', "1:6: expected '::=' after rule name 'root', found '\"'", "     ^"),
    ('root\n::= "a"', "1:5: expected '::=' after rule name 'root', found a newline", "    ^"),
    ('::= "a"', "1:1: expected a rule name, found ':'", "^"),
    ('root ::= undefined-rule', "1:10: rule 'root' refers to undefined rule 'undefined-rule'",
     "         ^^^^^^^^^^^^^^"),
    ('root ::= "a"\n  "b"', "2:3: expected a rule name, found '\"'", "  ^"),
    ('root ::= "a"\n| "b"', "2:1: expected a rule name, found '|'", "^"),
    ('root ::= "a" |\nb ::= "c"', "2:3: unexpected '::=' in the body of rule 'root'", "  ^^^"),
    ('root ::= ("a" "b"', "1:10: '(' is never closed", "         ^"),
    ('root ::= ("a" ]', "1:15: expected ')' to close the '(' at 1:10, found ']'", "              ^"),
    ('root ::= "a")', "1:13: unmatched ')'", "            ^"),
    ('root ::= *', "1:10: '*' has nothing to repeat", "         ^"),
    ('root ::= ( | +)', "1:14: '+' has nothing to repeat", "             ^"),
    ('root ::= "a"{', "1:14: expected a number after '{', found the end of the grammar", "             ^"),
    ('root ::= "a"{2', "1:15: expected ',' or '}' in the repetition, found the end of the grammar",
     "              ^"),
    ('root ::= "a"{2,x}', "1:16: expected '}' to close the repetition, found 'x'", "               ^"),
    ('root ::= "a"{3,2}', "1:13: repetition {3,2}: the maximum is smaller than the minimum", "            ^^^^^"),
    ('root ::= []', "1:10: empty character class '[]'", "         ^^"),
    ('root ::= [^]', "1:10: empty character class '[^]'", "         ^^^"),
    ('root ::= [z-a]', "1:11: character range 'z-a' is out of order", "          ^^^"),
    ('root ::= "\\uD800"', "1:11: code point U+D800 is a surrogate and has no UTF-8 encoding", "          ^^^^^^"),
    ('root ::= [\\U00110000]', "1:11: code point U+110000 is beyond U+10FFFF and has no UTF-8 encoding",
     "          ^^^^^^^^^^"),
    ("root ::= 'a'", "1:10: unexpected \"'\": GBNF strings are written in double quotes", "         ^"),
    ('root ::= a_b', "1:11: unexpected '_' in the body of rule 'root'", "          ^"),
    ('root ::= "a"\nroot ::= "b"', "2:1: rule 'root' is defined twice (first at 1:1); GBNF has no merging "
     "of definitions", "^^^^"),
    ('root ::= "x" \f "y"', "1:14: unexpected U+000C in the body of rule 'root'", "             ^"),
]


@pytest.mark.parametrize("text,message,caret", ERRORS)
def test_error_messages(text, message, caret):
    with pytest.raises(GrammarError) as info:
        Grammar.from_gbnf(text, name="g.gbnf")
    lines = str(info.value).split("\n")
    assert lines[0] == "g.gbnf:" + message
    assert lines[2] == caret


def test_error_hints():
    def hint(text):
        with pytest.raises(GrammarError) as info:
            Grammar.from_gbnf(text)
        return info.value.hint

    assert hint('root ::= "a\\b"') == 'GBNF escapes are \\xXX \\uXXXX \\UXXXXXXXX \\t \\n \\r \\\\ \\" \\[ \\]'
    assert "end the line with '|' or wrap the body in parentheses" in hint('root ::= "a"\n| "b"')
    assert hint("root ::= a_b") == hint('a_b ::= "x"') == "GBNF rule names are ASCII letters, digits and '-'"
    assert hint("root ::= ab\nabc ::= \"x\"") == "did you mean 'abc'?"


def test_missing_root():
    for text, defined in (('a ::= "x"\nb ::= a', "'a', 'b'"), ("", "none"), ("# only a comment\n", "none")):
        with pytest.raises(GrammarError) as info:
            Grammar.from_gbnf(text, name="g.gbnf")
        assert str(info.value) == f"g.gbnf: the grammar has no 'root' rule, where GBNF starts (defined rules: {defined})"


def test_deep_nesting_is_a_precise_error():
    ok = "root ::= " + "(" * MAX_DEPTH + '"a"' + ")" * MAX_DEPTH
    assert Grammar.from_gbnf(ok).accepts("a")
    nested = "root ::= " + '("a" "b"?' * 90 + ")?" * 90  # IR height 182: compiles
    grammar = Grammar.from_gbnf(nested)
    assert grammar.accepts("a" * 90) and grammar.accepts("abab") and not grammar.accepts("bb")
    for text in ("root ::= " + "(" * 5000 + '"a"' + ")" * 5000,
                 "root ::= " + '("a" ' * 5000 + ")" * 5000,
                 'root ::= "a"' + "?" * 5000,
                 "root ::= " + '("a" "b"?' * 120 + ")?" * 120):
        with pytest.raises(GrammarError, match="nested more than"):
            Grammar.from_gbnf(text)


# ---------------------------------------------------------------- differential: xgrammar
#
# Grammars are generated as small ASTs, rendered twice: as GBNF for grammarc (with the GBNF
# spellings xgrammar 0.2.8 lacks) and in the subset xgrammar reads. Strings sampled from
# the AST itself (an oracle independent of both parsers) must be accepted by both; random
# strings and mutations of samples must get the same verdict from both.
#
# Where xgrammar 0.2.8 departs from llama.cpp's guide (the guide wins; tested above):
# it has no `.` (rendered for it as [\x00-\U0010FFFF]), no empty alternative (`| " "`,
# rendered for it as `"" | " "`), no stacked operators (`"a"*?`), no raw newline in
# strings, no `\[` `\]` in strings; it continues a rule over a newline and accepts a
# line starting with `|` (llama.cpp ends the rule there); it reads `[]` as nothing and
# `[^]` as any character (llama.cpp: the empty string; grammarc: an error); it accepts
# `\-`, `\b` and other escapes and `_` in names (llama.cpp rejects them); it rejects
# rule names that start with a digit and an empty rule body (llama.cpp accepts both); it
# reads `\x` with every hex digit that follows (`"\x61a"` is U+061A for it, "aa" for
# llama.cpp's two-digit `\xXX`), so the peer's text never puts a hex digit after `\x61`.

try:
    import xgrammar
    from xgrammar.testing import _is_grammar_accept_string
except ImportError:  # pragma: no cover - the peer is part of the dev environment
    xgrammar = None

CLASS_POOL = "abcé\n"          # what classes are made of
UNIVERSE = "abcé\nz😀"         # what strings are made of ('z', '😀' are in no class)
LITERAL_ALPHABET = 'abé\n"'
NAMES = ("item", "check-mate", "x2")


def _escape(char: str, style: int) -> str:
    code = ord(char)
    if char in '"\\':
        return "\\" + char
    if char == "\n" and style % 2 == 0:
        return "\\n"
    if style == 1 and code < 0x100:
        return f"\\x{code:02X}"
    if style == 2 and code < 0x10000:
        return f"\\u{code:04x}"
    if style == 3:
        return f"\\U{code:08X}"
    return "\\n" if char == "\n" else char


@st.composite
def terminals(draw, refs: tuple[str, ...]):
    kinds = ["lit", "class", "dot"] + (["ref"] if refs else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "lit":
        text = draw(st.text(LITERAL_ALPHABET, max_size=3))
        return ("lit", text, tuple(draw(st.integers(0, 3)) for _ in text))
    if kind == "class":
        items = draw(st.lists(st.tuples(st.sampled_from(CLASS_POOL), st.sampled_from(CLASS_POOL)),
                              min_size=1, max_size=3))
        items = tuple((min(a, b), max(a, b)) if a != b else (a, a) for a, b in items)
        return ("class", draw(st.booleans()), items, draw(st.integers(0, 3)))
    if kind == "dot":
        return ("dot",)
    return ("ref", draw(st.sampled_from(refs)))


@st.composite
def expressions(draw, refs: tuple[str, ...], depth: int = 0):
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return draw(terminals(refs))
    kind = draw(st.sampled_from(["seq", "alt", "rep"]))
    if kind == "rep":
        low = draw(st.integers(0, 2))
        high = draw(st.one_of(st.none(), st.integers(low, 3)))
        op = draw(st.sampled_from(["sugar", "braces"]))
        return ("rep", draw(expressions(refs, depth + 1)), low, high, op)
    items = draw(st.lists(expressions(refs, depth + 1), min_size=0 if kind == "alt" else 1, max_size=3))
    if kind == "alt":
        return ("alt", tuple(items) + (("seq", ()),) * draw(st.integers(0, 1)), draw(st.booleans()))
    return ("seq", tuple(items))


@st.composite
def grammars(draw):
    names = NAMES[:draw(st.integers(0, len(NAMES)))]
    rules = [("root", draw(expressions(names)))]
    for i, name in enumerate(names):
        rules.append((name, draw(expressions(names[i + 1:]))))
    return tuple(rules)


def render(node, peer: bool, top: bool = False) -> str:
    """GBNF text of `node`; `peer`: in the subset xgrammar 0.2.8 reads."""
    kind = node[0]
    if kind == "lit":
        text, styles = node[1], node[2]
        if peer:  # no `\xXX` before a hex digit (see above)
            styles = [0 if s == 1 and text[i + 1:i + 2] in tuple("0123456789abcdefABCDEF") else s
                      for i, s in enumerate(styles)]
        return '"' + "".join(_escape(c, s) for c, s in zip(text, styles)) + '"'
    if kind == "class":
        _, negated, items, style = node
        body = "".join(_escape(lo, style) if lo == hi else f"{_escape(lo, style)}-{_escape(hi, style)}"
                       for lo, hi in items)
        return f"[{'^' if negated else ''}{body}]"
    if kind == "dot":
        return "[\\x00-\\U0010FFFF]" if peer else "."
    if kind == "ref":
        return node[1]
    if kind == "seq":
        text = " ".join(render(item, peer) for item in node[1])
        if not node[1]:
            text = '""' if peer else ""
        return text if top else f"({text})"
    if kind == "alt":
        joiner = " |\n    " if node[2] else " | "
        texts = [render(item, peer, top=True) for item in node[1]]
        if texts and not texts[-1]:
            texts[-1] = "()"  # a trailing '|' would continue the rule on the next line
        text = joiner.join(texts) if texts else '""'
        return text if top else f"({text})"
    _, item, low, high, op = node
    sugar = {(0, None): "*", (1, None): "+", (0, 1): "?"}.get((low, high))
    if op == "sugar" and sugar:
        suffix = sugar
    else:
        suffix = f"{{{low}}}" if low == high else f"{{{low},{'' if high is None else high}}}"
    inner = render(item, peer)
    return (f"({inner})" if item[0] == "rep" else inner) + suffix


def render_grammar(rules, peer: bool) -> str:
    # An empty body would let the rule continue on the next line (after '::=' newlines are
    # skipped, as in llama.cpp), so it is written '()'.
    return "".join(f"{name} ::= {render(expr, peer, top=True) or '()'}  # {name}\n" for name, expr in rules)


def sample(node, rules: dict, rng: random.Random) -> str:
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "class":
        _, negated, items, _ = node
        inside = [c for c in UNIVERSE if any(lo <= c <= hi for lo, hi in items)]
        return rng.choice([c for c in UNIVERSE if c not in inside] if negated else inside)
    if kind == "dot":
        return rng.choice(UNIVERSE)
    if kind == "ref":
        return sample(rules[node[1]], rules, rng)
    if kind == "seq":
        return "".join(sample(item, rules, rng) for item in node[1])
    if kind == "alt":
        return sample(rng.choice(node[1]), rules, rng) if node[1] else ""
    _, item, low, high, _ = node
    count = rng.randint(low, low + 2 if high is None else high)
    return "".join(sample(item, rules, rng) for _ in range(count))


def mutate(text: str, rng: random.Random) -> str:
    i = rng.randint(0, len(text))
    op = rng.randint(0, 2)
    if op == 0:
        return text[:i] + rng.choice(UNIVERSE) + text[i:]
    if op == 1 and text:
        return text[:max(0, i - 1)] + text[i:]
    return text[:max(0, i - 1)] + rng.choice(UNIVERSE) + text[i:]


@pytest.mark.skipif(xgrammar is None, reason="xgrammar (the peer GBNF implementation) is not installed")
@pytest.mark.filterwarnings("ignore::grammarc.errors.GrammarWarning")
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grammars(), st.randoms(use_true_random=False), st.lists(st.text(UNIVERSE, max_size=5), max_size=4))
def test_differential_against_xgrammar(rules, rng, random_strings):
    ours = Grammar.from_gbnf(render_grammar(rules, peer=False))
    peer = xgrammar.Grammar.from_ebnf(render_grammar(rules, peer=True), root_rule_name="root")
    rule_map = dict(rules)
    samples = [sample(rules[0][1], rule_map, rng) for _ in range(4)]
    for text in samples:
        assert ours.accepts(text), text
        assert _is_grammar_accept_string(peer, text), text
    for text in random_strings + [mutate(s, rng) for s in samples]:
        assert ours.accepts(text) == _is_grammar_accept_string(peer, text), text


# ------------------------------------------------------------------------------- corpus

CORPUS = {
    "json.gbnf": (
        ['{}', '{"a": [1, -2.5e3, "x\\n\\u00e9"], "b": {"c": null}}', '{"t": [true, false]}',
         '{\n  "key": "é😀"\n}\n', '{"a":1} '],
        ['', '[true]', '{"a":1}  ', '{"a": [1,]}', '{"a" 1}', '{"a": 01}', '"unquoted\n"', '{"a": "\x01"}', '[1,   2]', 'nul'],
    ),
    "arithmetic.gbnf": (
        ["1+2=3\n", "(a *b)/c_2 = x\n1=1\n"],
        ["1+2\n", "=3\n", "1+2=3", "A=1\n", "(a * b)=1\n"],  # no space after an operator
    ),
    "list.gbnf": (["- milk\n", "- milk\n- eggs and é\n"], ["", "- \n", "milk\n", "- milk"]),
    "chess.gbnf": (
        ["1. e4 e5\n2. Nf3 Nc6\n", "1. d4 d5\n2. c4 dxc4\n10. O-O O-O-O+\n", "1. e4 e5\n2. exd8=Q# Kxd8\n"],
        ["1. e4 e5\n", "1. e9 e5\n2. Nf3 Nc6\n", "1. e4 e5\n2. Nf3 Nc6", "1. e4 e5\n100. a3 a6\n"],
    ),
    "c-subset.gbnf": (
        ["", "int x;\n", "int main(int argc) {\n  int y = -x * 2;\n  while (y < 10) {\n  y = y + 1;\n  }\n"
         "  return y;\n}\n", "void f() {\n  g(1, a);\n}\n"],
        ["int x\n", "int main() {\n  return y\n}\n", "long x;\n", "int 1x;\n"],
    ),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus(name):
    path = DATA / name
    grammar = Grammar.from_gbnf(path.read_text(encoding="utf-8"), name=str(path))
    grammar.compile()
    accepted, rejected = CORPUS[name]
    language_table(path.read_text(encoding="utf-8"), accepted, rejected)


def test_corpus_is_complete():
    assert sorted(path.name for path in DATA.glob("*.gbnf")) == sorted(CORPUS)


def test_cli_reads_gbnf_by_extension_or_format(tmp_path, capsys):
    text = tmp_path / "text.txt"
    text.write_text("- milk\n")
    assert cli_main(["check", str(DATA / "list.gbnf"), str(text)]) == 0
    assert cli_main(["fmt", str(DATA / "list.gbnf")]) == 0
    assert capsys.readouterr().out.endswith('root ::= ("- " item)+;\nitem ::= #/[^\\u{A}]/+ "\\n";\n')
    renamed = tmp_path / "list.txt"
    renamed.write_text((DATA / "list.gbnf").read_text())
    assert cli_main(["check", "--format", "gbnf", str(renamed), str(text)]) == 0
    assert cli_main(["check", str(renamed), str(text)]) == 2  # read as .ebnf: a syntax error
    bad = tmp_path / "bad.gbnf"
    bad.write_text('root ::= "a\n')
    assert cli_main(["compile", str(bad)]) == 2
    assert f"{bad}:1:10: unterminated string" in capsys.readouterr().err
