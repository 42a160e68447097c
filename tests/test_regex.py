"""Regex parser (grammarc.automata.regex) and UTF-8 range encoding (grammarc.automata.utf8)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from grammarc.errors import GrammarError, RegexError
from grammarc.automata.regex import (
    ANY,
    CASED_BLOCKS,
    DIGIT,
    DOT,
    ECMA_DOT,
    SPACE,
    WORD,
    Alt,
    Anchor,
    Chars,
    Repeat,
    Seq,
    _case_table,
    case_fold,
    contains,
    negate,
    normalize,
    parse,
)
from grammarc.automata.utf8 import encode, range_sequences
from ecma import NODE, ecma_patterns, ecma_texts, node_results


def ch(c: str) -> Chars:
    return Chars(((ord(c), ord(c)),))


# ------------------------------------------------------------------------- AST


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("", Seq(())),
        ("a", ch("a")),
        ("ab", Seq((ch("a"), ch("b")))),
        ("a|b", Alt((ch("a"), ch("b")))),
        ("a|", Alt((ch("a"), Seq(())))),
        ("(a)", ch("a")),
        ("(?:a)(?P<x>b)(?<y>c)", Seq((ch("a"), ch("b"), ch("c")))),
        ("a*", Repeat(ch("a"), 0, None)),
        ("a+?", Repeat(ch("a"), 1, None)),
        ("a??", Repeat(ch("a"), 0, 1)),
        ("a{3}", Repeat(ch("a"), 3, 3)),
        ("a{2,}", Repeat(ch("a"), 2, None)),
        ("a{2,5}?", Repeat(ch("a"), 2, 5)),
        ("a{,5}", Repeat(ch("a"), 0, 5)),
        ("a{", Seq((ch("a"), ch("{")))),
        ("x{a}", Seq((ch("x"), ch("{"), ch("a"), ch("}")))),
        ("^a$", Seq((Anchor("start"), ch("a"), Anchor("end")))),
        (r"\Aa\Z", Seq((Anchor("start"), ch("a"), Anchor("end")))),
        ("[a-c]", Chars(((0x61, 0x63),))),
        ("[]a]", Chars(((0x5D, 0x5D), (0x61, 0x61)))),
        ("[a-]", Chars(((0x2D, 0x2D), (0x61, 0x61)))),
        (r"[\b]", Chars(((8, 8),))),
        (r"[\d_]", Chars(((0x30, 0x39), (0x5F, 0x5F)))),
        (r"\x41\u00e9\u{1F600}\U0001F601", Seq((ch("A"), ch("é"), ch("😀"), ch("😁")))),
        (r"\ud83d\ude00", ch("😀")),
        (r"\n\r\t\f\v\0", Seq(tuple(ch(c) for c in "\n\r\t\f\v\0"))),
        (r"\.\*\/\-\\", Seq(tuple(ch(c) for c in ".*/-\\"))),
        (r"\d", Chars(DIGIT)),
        (r"\w", Chars(WORD)),
        (r"\s", Chars(SPACE)),
        (".", Chars(DOT)),
        ("(?s).", Chars(((0, 0xD7FF), (0xE000, 0x10FFFF)))),
        ("(?i)k", Chars(((0x4B, 0x4B), (0x6B, 0x6B), (0x212A, 0x212A)))),
        ("(?i:a)b", Seq((Chars(((0x41, 0x41), (0x61, 0x61))), ch("b")))),
        ("a(?#comment)b", Seq((ch("a"), ch("b")))),
    ],
)
def test_parse(pattern: str, expected) -> None:
    assert parse(pattern) == expected


def test_nesting_limit() -> None:
    deep = "(" * 100 + "a" + ")" * 100
    assert parse(deep) == ch("a")
    with pytest.raises(RegexError, match=r"too many nested groups \(more than 100\) \(at offset 100 in"):
        parse("(" * 101 + "a" + ")" * 101)


def test_negated_classes() -> None:
    assert parse(r"\D") == Chars(negate(DIGIT))
    assert parse(r"[^\n]") == Chars(DOT)
    # Surrogates never appear in a set: they have no UTF-8 encoding.
    assert parse(r"[^a]").ranges == ((0, 0x60), (0x62, 0xD7FF), (0xE000, 0x10FFFF))


# ---------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("ab(?=c)", "lookahead (?=...) is not supported (at offset 2 in pattern 'ab(?=c)')"),
        ("a(?!c)", "lookahead (?!...) is not supported (at offset 1 in pattern 'a(?!c)')"),
        ("(?<=a)b", "lookbehind (?<=...) is not supported (at offset 0 in pattern '(?<=a)b')"),
        ("(?<!a)b", "lookbehind (?<!...) is not supported (at offset 0 in pattern '(?<!a)b')"),
        (r"(a)\1", r"backreference \1 is not supported (at offset 3 in pattern '(a)\1')"),
        (r"(a)\12", r"backreference \12 is not supported (at offset 3 in pattern '(a)\12')"),
        (
            r"(?<n>a)\k<n>",
            r"backreference \k<n> is not supported (at offset 7 in pattern '(?<n>a)\k<n>')",
        ),
        (
            "(?P<n>a)(?P=n)",
            "backreference (?P=name) is not supported (at offset 8 in pattern '(?P<n>a)(?P=n)')",
        ),
        (r"\bword", r"word boundary \b is not supported (at offset 0 in pattern '\bword')"),
        (r"a\B", r"word boundary \B is not supported (at offset 1 in pattern 'a\B')"),
        ("(?>a)", "atomic group (?>...) is not supported (at offset 0 in pattern '(?>a)')"),
        ("a*+", "possessive quantifier *+ is not supported (at offset 1 in pattern 'a*+')"),
        (
            "a{2}+",
            "possessive quantifier {2}+ is not supported (at offset 1 in pattern 'a{2}+')",
        ),
        (
            r"\p{L}",
            r"unicode property \p{...} is not supported (at offset 0 in pattern '\p{L}')",
        ),
        (
            "(?m)^a",
            "inline flag (?m) is not supported (only (?i) and (?s) are) "
            "(at offset 0 in pattern '(?m)^a')",
        ),
        ("a(?i)b", "global flags not at the start of the expression (at offset 1 in pattern 'a(?i)b')"),
        ("(a", "missing ), unterminated subpattern (at offset 0 in pattern '(a')"),
        ("a)", "unbalanced parenthesis ')' (at offset 1 in pattern 'a)')"),
        ("[ab", "unterminated character set (at offset 0 in pattern '[ab')"),
        ("*a", "nothing to repeat (at offset 0 in pattern '*a')"),
        ("a|{2}", "nothing to repeat (at offset 2 in pattern 'a|{2}')"),
        ("a**", "multiple repeat (at offset 2 in pattern 'a**')"),
        ("^*", "nothing to repeat (at offset 1 in pattern '^*')"),
        ("a{3,2}", "min repeat greater than max repeat (at offset 1 in pattern 'a{3,2}')"),
        ("[z-a]", "bad character range z-a (at offset 1 in pattern '[z-a]')"),
        (r"[\d-z]", r"bad character range \d-z (at offset 1 in pattern '[\d-z]')"),
        (r"\q", r"bad escape \q (at offset 0 in pattern '\q')"),
        ("a\\", "bad escape (end of pattern) (at offset 1 in pattern 'a\\')"),
        (r"\xZ1", r"bad escape \xZ1 (at offset 0 in pattern '\xZ1')"),
        (r"\ud800", r"lone surrogate escape is not supported (at offset 0 in pattern '\ud800')"),
        (r"\u{110000}", r"code point out of range (at offset 0 in pattern '\u{110000}')"),
        ("(?<1>a)", "bad group name (at offset 0 in pattern '(?<1>a)')"),
        ("(?x)a", "inline flag (?x) is not supported (only (?i) and (?s) are) (at offset 0 in pattern '(?x)a')"),
    ],
)
def test_errors(pattern: str, message: str) -> None:
    with pytest.raises(RegexError) as info:
        parse(pattern)
    err = info.value
    assert err.message == message
    assert err.span is None
    assert isinstance(err, GrammarError)


# ------------------------------------------------------------------ ECMA-262 mode


@pytest.mark.parametrize(
    "pattern, expected",
    [
        (".", Chars(ECMA_DOT)),
        ("[^]", Chars(ANY)),
        ("[]", Chars(())),
        ("a[]", Seq((ch("a"), Chars(())))),
        ("[^]a]", Seq((Chars(ANY), ch("a"), ch("]")))),
        (r"\cA\cz", Seq((Chars(((1, 1),)), Chars(((26, 26),))))),
        (r"[\cJ-\cM]", Chars(((10, 13),))),
        ("a{,5}", Seq(tuple(ch(c) for c in "a{,5}"))),
        ("a{2,}", Repeat(ch("a"), 2, None)),
        (r"\ud83d\ude00", ch("😀")),
        ("\ud83d\ude00", ch("😀")),  # a raw pair, as a UTF-16 engine would read it
        (r"\ud800", Chars(())),  # no text contains a lone surrogate
        ("\udc00", Chars(())),
        (r"\ud800\u{a0}", Seq((Chars(()), ch("\xa0")))),  # a pair only with a four-digit \uXXXX
        (r"\ud800\u00a0", Seq((Chars(()), ch("\xa0")))),
        (r"[\ud800-\udfffa]", ch("a")),
        (r"[^\ud800-\udfff]", Chars(ANY)),
        (r"\u{1F600}", ch("😀")),
        (r"(?<n>a)", ch("a")),
        (r"\s", Chars(SPACE)),
    ],
)
def test_parse_ecma(pattern: str, expected) -> None:
    assert parse(pattern, ecma=True) == expected


def test_ecma_sets() -> None:
    assert not contains(ECMA_DOT, 0x0D) and not contains(ECMA_DOT, 0x2028) and not contains(ECMA_DOT, 0x2029)
    assert contains(ECMA_DOT, 0x85) and contains(DOT, 0x0D) and contains(DOT, 0x2028)
    for cp in (0x09, 0x0B, 0x0C, 0x20, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF):
        assert contains(SPACE, cp), hex(cp)
    for cp in (0x85, 0x180E, 0x200B):
        assert not contains(SPACE, cp), hex(cp)


@pytest.mark.parametrize(
    "pattern, message",
    [
        ("(?i)a", "inline flags (?i) are not supported in ECMA-262 patterns (at offset 0 in pattern '(?i)a')"),
        ("(?i:a)", "inline flags (?i:...) are not supported in ECMA-262 patterns (at offset 0 in pattern '(?i:a)')"),
        ("(?-i:a)", "inline flags (?-...) are not supported in ECMA-262 patterns (at offset 0 in pattern '(?-i:a)')"),
        ("x(?P<n>a)", "named group (?P<name>...) is Python syntax; ECMA-262 writes (?<name>...) "
                      "(at offset 1 in pattern 'x(?P<n>a)')"),
        ("a(?#c)", "comment group (?#...) is not ECMA-262 syntax (at offset 1 in pattern 'a(?#c)')"),
        (r"\Aa", r"bad escape \A (at offset 0 in pattern '\Aa')"),
        (r"a\Z", r"bad escape \Z (at offset 1 in pattern 'a\Z')"),
        (r"\U0001F600", r"bad escape \U (at offset 0 in pattern '\U0001F600')"),
        ("[[:alpha:]]", "POSIX class syntax [: is not ECMA-262 (escape the '[' if it is meant) "
                        "(at offset 1 in pattern '[[:alpha:]]')"),
        (r"\c1", r"bad escape \c (a control escape needs a letter A-Z or a-z) (at offset 0 in pattern '\c1')"),
        ("a**", "multiple repeat (at offset 2 in pattern 'a**')"),
        ("{2}", "nothing to repeat (at offset 0 in pattern '{2}')"),
        (r"\bx", r"word boundary \b is not supported (at offset 0 in pattern '\bx')"),
        (r"x\B", r"word boundary \B is not supported (at offset 1 in pattern 'x\B')"),
        ("(?=a)", "lookahead (?=...) is not supported (at offset 0 in pattern '(?=a)')"),
        ("(?<!a)b", "lookbehind (?<!...) is not supported (at offset 0 in pattern '(?<!a)b')"),
        (r"(a)\1", r"backreference \1 is not supported (at offset 3 in pattern '(a)\1')"),
        (r"\p{L}", r"unicode property \p{...} is not supported (at offset 0 in pattern '\p{L}')"),
        (r"\u{110000}", r"code point out of range (at offset 0 in pattern '\u{110000}')"),
    ],
)
def test_errors_ecma(pattern: str, message: str) -> None:
    with pytest.raises(RegexError) as info:
        parse(pattern, ecma=True)
    assert info.value.message == message


def test_control_escapes_in_both_dialects() -> None:
    assert parse(r"\cA") == parse(r"\ca") == Chars(((1, 1),))
    assert parse(r"[\cA]", ecma=True) == parse(r"[\cA]")


def test_long_patterns_are_quoted_in_part() -> None:
    pattern = "a" * 100_000 + "(?=x)" + "b" * 100_000
    with pytest.raises(RegexError) as info:
        parse(pattern)
    message = info.value.message
    assert message.startswith("lookahead (?=...) is not supported (at offset 100000 in pattern '…aaaa")
    assert "(?=x)" in message and message.endswith("bbbb…')") and len(message) < 300


def test_parse_refuses_what_is_not_text() -> None:
    for value in (None, b"a", 3, ["a"]):
        with pytest.raises(RegexError, match=f"a regex pattern must be text \\(str\\), not {type(value).__name__}"):
            parse(value)




@pytest.mark.skipif(NODE is None, reason="node (an ECMA-262 engine to compare with) is not installed")
@given(st.lists(ecma_patterns(), min_size=60, max_size=60, unique=True))
@settings(max_examples=4, deadline=None, phases=[Phase.explicit, Phase.generate])  # failures name their case
def test_ecma_mode_agrees_with_an_ecma_engine(patterns) -> None:
    from grammarc.automata import from_regex

    texts = ecma_texts()
    cases = []
    for p in patterns:
        cases.append((f"^(?:{p})$", "u", texts))
        cases.append((p, "u", texts))
    results = node_results(cases)
    for i, p in enumerate(patterns):
        full, search = results[2 * i], results[2 * i + 1]
        assert full != "SyntaxError", p  # the generator only writes valid ECMA syntax
        whole, anywhere = from_regex(p, ecma=True), from_regex(p, ecma=True, search=True)
        for t, want_full, want_search in zip(texts, full, search):
            data = t.encode("utf-8")
            assert whole.matches(data) == want_full, (p, t)
            assert anywhere.matches(data) == want_search, (p, t)


@pytest.mark.skipif(NODE is None, reason="node (an ECMA-262 engine to compare with) is not installed")
def test_ecma_syntax_errors_agree_with_an_ecma_engine() -> None:
    invalid = ["a**", "{2}", "a{2}{3}", r"\c1", r"\q", r"\Z", r"\U00000041", "(?P<n>a)", "(?#c)", "(?i)a",
               "(a", "a)", "[ab", "[z-a]", r"[\d-z]", "a|*", r"\u{110000}", r"\x4", r"\u12", "(?<1>a)"]
    results = node_results([(p, "u", []) for p in invalid])
    assert results == ["SyntaxError"] * len(invalid)
    for p in invalid:
        with pytest.raises(RegexError):
            parse(p, ecma=True)


# ------------------------------------------------------------------- code points


def test_cased_blocks_cover_unicode() -> None:
    """No code point outside CASED_BLOCKS has a case mapping (checked at C speed)."""
    mask = np.ones(0x110000, dtype=bool)
    mask[0xD800:0xE000] = False
    for lo, hi in CASED_BLOCKS:
        mask[lo:hi + 1] = False
    outside = np.flatnonzero(mask).astype("<u4").tobytes().decode("utf-32-le")
    assert outside.upper() == outside and outside.lower() == outside
    keys, groups = _case_table()
    assert all(any(lo <= cp <= hi for lo, hi in CASED_BLOCKS) for g in groups for cp in g)
    assert len(keys) > 2500


def test_case_fold_ascii_and_beyond() -> None:
    assert case_fold(((ord("a"), ord("a")),)) == ((0x41, 0x41), (0x61, 0x61))
    assert case_fold(((ord("é"), ord("é")),)) == ((0xC9, 0xC9), (0xE9, 0xE9))
    assert case_fold(((ord("1"), ord("1")),)) == ((0x31, 0x31),)


@given(st.lists(st.tuples(st.integers(0, 0x10FFFF), st.integers(0, 300)), max_size=6))
@settings(max_examples=200, deadline=None)
def test_normalize_and_negate(raw) -> None:
    ranges = normalize([(lo, min(lo + w, 0x10FFFF)) for lo, w in raw])
    # sorted, disjoint, non-adjacent (except across the removed surrogate block)
    for (a, b), (c, d) in zip(ranges, ranges[1:]):
        assert a <= b < c - 1 or (b == 0xD7FF and c == 0xE000)
    neg = negate(ranges)
    probes = {0, 0x10FFFF, 0xD7FF, 0xE000} | {x for r in ranges for x in (r[0] - 1, r[0], r[1], r[1] + 1)}
    for cp in probes:
        if 0 <= cp <= 0x10FFFF and not 0xD800 <= cp <= 0xDFFF:
            inside = any(lo <= hi and lo <= cp <= hi for lo, w in raw for hi in [lo + w])
            assert contains(ranges, cp) == inside
            assert contains(neg, cp) != inside


# ------------------------------------------------------------------------ UTF-8


def _seq_matches(seq, data: bytes) -> bool:
    return len(seq) == len(data) and all(lo <= b <= hi for (lo, hi), b in zip(seq, data))


@pytest.mark.parametrize(
    "lo, hi, expected",
    [
        (0x00, 0x7F, [((0x00, 0x7F),)]),
        (0x80, 0x7FF, [((0xC2, 0xDF), (0x80, 0xBF))]),
        (
            0x800,
            0xFFFF,
            [
                ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)),
                ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)),
                ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)),
                ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)),
            ],
        ),
        (
            0x10000,
            0x10FFFF,
            [
                ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
                ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
                ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)),
            ],
        ),
        (0xD800, 0xDFFF, []),
    ],
)
def test_range_sequences_exact(lo: int, hi: int, expected) -> None:
    assert range_sequences(lo, hi) == expected


@given(st.integers(0, 0x10FFFF), st.integers(0, 5000), st.lists(st.integers(-64, 5064), max_size=40))
@settings(max_examples=200, deadline=None)
def test_range_sequences_cover_exactly(lo: int, width: int, offsets) -> None:
    hi = min(lo + width, 0x10FFFF)
    seqs = range_sequences(lo, hi)
    probes = {lo, hi, lo - 1, hi + 1} | {lo + o for o in offsets}
    for cp in probes:
        if not 0 <= cp <= 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
            continue
        data = encode(cp)
        assert data == chr(cp).encode("utf-8")
        hits = sum(_seq_matches(s, data) for s in seqs)
        assert hits == (1 if lo <= cp <= hi else 0)
    # Every byte string of every sequence is the encoding of a code point in range:
    # check the corners of each sequence.
    for seq in seqs:
        for pick in (0, 1):
            data = bytes(r[pick] for r in seq)
            cp = ord(data.decode("utf-8"))
            assert lo <= cp <= hi


# -- the class cache: a class's text parses the same whether or not it was read before ------

_CLASS_PIECES = ["a", "z", "-", "]", "[", "^", "\\]", "\\\\", "\\d", "\\w", "\\x41", "\\u00e9", "é", "0-9", "a-\\d",
                 ":", "\\-", "\\", "[:", "\\b"]


@given(st.lists(st.tuples(st.booleans(), st.lists(st.sampled_from(_CLASS_PIECES), max_size=6), st.sampled_from(["", "x", "]", "*"])),
                min_size=1, max_size=4))
@settings(max_examples=400, deadline=None)
def test_remembered_classes_parse_as_fresh_ones(parts) -> None:
    """Every pattern made of classes (some malformed, some with ']' or '[' where the two
    dialects read them differently) gives the same tree or the same error, in each mode
    (grammarc's dialect, with and without (?i), and ECMA-262), from a parser that never saw
    its classes and from one that has just read them in every mode."""
    from grammarc.automata import regex

    body = "".join("[" + ("^" if negated else "") + "".join(pieces) + "]" + after for negated, pieces, after in parts)
    modes = [(body, False), ("(?i)" + body, False), (body, True)]

    def outcome(pattern: str, ecma: bool):
        try:
            return regex._Parser(pattern, ecma).parse()
        except RegexError as error:
            return str(error)

    fresh = []
    for mode in modes:
        regex._CLASSES.clear()
        fresh.append(outcome(*mode))
    for mode in modes:
        outcome(*mode)
    assert [outcome(*mode) for mode in modes] == fresh  # now from the remembered classes
    regex._CLASSES.clear()
