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
