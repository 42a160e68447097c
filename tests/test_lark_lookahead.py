"""Lookaheads at the end of Lark terminals (frontends/lark_lookahead.py): exact against Lark.

The oracle is Lark's Earley parser with ``lexer="dynamic_complete"`` (the differential of
tests/test_lark.py): its dynamic lexer matches each terminal's regex against the whole input,
so a trailing lookahead sees the real next character (an ignored space included) and end of
input. Lark's lexer is not the issue as long as every terminal with a lookahead has a
prefix-free language (Python's one match is then the only candidate, and complete_lex finds
no shorter one) and no terminal contains the ignored space; the generated grammars keep to that.
"""

from __future__ import annotations

import random

import lark
import pytest
from hypothesis import given, settings, strategies as st

from grammarc import Grammar, GrammarError
from grammarc.ir import Literal, Ref, Regex, Repeat, Seq
from test_lark import lark_accepts

ALPHABET = "abc "
WORDS = ["a", "b", "c", "ab", "ba", "[ab]", "[bc]c"]
CLASSES = ["a", "b", "c", "ab", "bc", " ", "a "]


def earley(text: str) -> lark.Lark:
    return lark.Lark(text, parser="earley", lexer="dynamic_complete")


# -------------------------------------------------------------------- hand-picked cases

CASES = [
    # (grammar, {text: accepted})
    ('start: A B?\nA: /a(?!b)/\nB: "b"\n', {"a": True, "ab": False}),
    ('start: A B?\nA: /a(?=b)/\nB: "b"\n', {"a": False, "ab": True}),
    ('start: A+\nA: /a(?!a)/\n', {"a": True, "aa": False}),
    ('start: A+\nA: /a(?!a)/\n%ignore " "\n', {"a a": True, "aa": False, "a  a ": True}),
    ('start: A+\nA: /a(?! )/\n%ignore " "\n', {"aa": True, "a a": False, "a": True, "a ": False}),
    ('start: x "c"\nx: A | A "b"\nA: /a(?=c)/\n', {"ac": True, "abc": False}),
    ('start: x y\nx: A\ny: "b" | "c"\nA: /a|b(?!c)/\n', {"ab": True, "bb": True, "bc": False, "ac": True}),
    ('start: A B\nA: /a(?=b)(?!c)/\nB: /[bc]/\n', {"ab": True, "ac": False}),
    ('start: A B\nA: /a(?![bc])(?!a)/\nB: /[abcd]/\n', {"ab": False, "aa": False, "ac": False, "ad": True}),
    ('start: (A | "b")*\nA: /a(?!b)/\n', {"aab": False, "aba": False, "baa": True, "": True}),
    # an ignored terminal with its own lookahead
    ('start: (A | Y)+\nA: /[ab]/\nY: "y"\n%ignore /x(?!y)/\n', {"axa": True, "axya": False, "axxa": True, "ax": True}),
    # recursion through the start rule, whose strings end with the demand pending
    ('start: "(" start ")" | A\nA: /a(?!\\))/\n', {"a": True, "(a)": False, "((a))": False}),
    ('start: "(" start ")" | A\nA: /a(?=\\))/\n', {"a": False, "(a)": True, "((a))": True, "(a": False}),
]


@pytest.mark.parametrize("grammar, verdicts", CASES)
def test_hand_picked(grammar, verdicts):
    ours, theirs = Grammar.from_lark(grammar), earley(grammar)
    got = {text: ours.accepts(text) for text in verdicts}
    assert got == verdicts
    assert got == {text: lark_accepts(theirs, text) for text in verdicts}


def test_start_is_a_terminal_with_lookahead():
    text = "start: A\nA: /ab|a(?=c)|c(?!a)/\n"
    for start, expected in (("A", {"ab": True, "a": False, "c": True}),):
        g = Grammar.from_lark(text, start=start)
        assert {t: g.accepts(t) for t in expected} == expected


def test_terminal_without_lookahead_is_unchanged():
    """A grammar without trailing lookaheads gives exactly the IR it gave before."""
    g = Grammar.from_lark('start: A B\nA: /[ab]+/\nB: "c"\n%ignore " "\n')
    assert g.rules == (
        ("start", Seq((Ref("__ignore"), Seq((Ref("A"), Ref("__ignore"), Ref("B"), Ref("__ignore")))))),
        ("A", Regex("(?:[\\u{61}-\\u{62}]){1,}")), ("B", Literal("c")),
        ("__IGNORE_0", Literal(" ")), ("__ignore", Repeat(Ref("__IGNORE_0"))),
    )


def test_empty_language_reported():
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark("start: A B\nA: /a(?![bc])/\nB: /[bc]/\n", name="g.lark")
    assert str(info.value) == (
        "g.lark: Lark grammar: the start rule 'start' derives no string once the lookaheads at "
        "the ends of terminals are enforced")


def test_refusal_kept_for_what_we_cannot_do():
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark("start: X\nX: /a(?!bc)/\n", name="g.lark")
    assert str(info.value) == (
        "g.lark:2:1: terminal X: lookahead (?!...) is supported only over a single character\n"
        "X: /a(?!bc)/\n^"
    )


# -------------------------------------------------------------- generated grammars


@st.composite
def grammars(draw):
    """A small Lark grammar (text) and a sampler of texts near its language."""
    n_terms = draw(st.integers(1, 3))
    terms = []
    for k in range(n_terms):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=2, unique=True))
        if len(words) == 2 and len(words[0].replace("[ab]", "x").replace("[bc]", "x")) != len(
                words[1].replace("[ab]", "x").replace("[bc]", "x")):
            words = words[:1]  # alternatives of one length: a prefix-free language
        looks = [draw(st.sampled_from(["", "(?!{})", "(?={})"])).format(
            f"[{draw(st.sampled_from(CLASSES))}]") for _ in words]
        if k == 0 and not any(looks):
            looks[-1] = "(?![a])"
        terms.append((f"T{k}", "|".join(w + look for w, look in zip(words, looks)), words))
    n_rules = draw(st.integers(1, 3))
    symbols = [name for name, _, _ in terms] + ['"c"', '"ab"', "B"]
    rules = []
    for i in range(n_rules):
        below = [f"r{j}" for j in range(i + 1, n_rules)]
        recursive = [f'("c" {f"r{j}" if j else "start"} "a")' for j in range(i + 1)]
        alts = []
        for a in range(draw(st.integers(1, 2))):  # the first alternative keeps every rule productive
            items = []
            for _ in range(draw(st.integers(1, 3))):
                item = draw(st.sampled_from(symbols + below + (recursive if a else [])))
                items.append(item + draw(st.sampled_from(["", "", "?", "*", "+"])))
            alts.append(" ".join(items))
        rules.append((f"r{i}" if i else "start", " | ".join(alts)))
    ignore = draw(st.booleans())
    lines = [f"{name}: {body}" for name, body in rules]
    lines += [f"{name}: /{pattern}/" for name, pattern, _ in terms]
    lines += ['B: /b+/'] + (['%ignore " "'] if ignore else [])
    return "\n".join(lines) + "\n", terms


def texts_for(seed: int, terms) -> list[str]:
    """Random short texts over the alphabet, biased to the terminals' words."""
    rnd = random.Random(seed)
    pieces = [w.replace("[ab]", rnd.choice("ab")).replace("[bc]", rnd.choice("bc"))
              for _, _, words in terms for w in words] + ["a", "b", "c", " ", "ab", "c"]
    return ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 5))) for _ in range(40)]


@settings(max_examples=80, deadline=None)
@given(spec=grammars(), seed=st.integers(0, 2**32))
def test_same_language_as_earley(spec, seed):
    text, terms = spec
    theirs = earley(text)
    try:
        ours = Grammar.from_lark(text)
        ours.compile()
    except GrammarError as error:
        assert "derives no string" in str(error)
        assert not any(lark_accepts(theirs, sample) for sample in texts_for(seed, terms))
        return
    for sample in texts_for(seed, terms):
        assert ours.accepts(sample) == lark_accepts(theirs, sample), (text, sample)


def test_unproductive_rule_refused_as_without_lookahead():
    """Splitting drops rules that derive nothing; a rule that derived nothing to begin with
    still gets the compiler's refusal, word for word."""
    messages = []
    for text in ('start: "a" | r2\nr2: "c" r2\n', 'start: A | r2\nr2: "c" r2\nA: /a(?!b)/\n'):
        with pytest.raises(GrammarError) as info:
            Grammar.from_lark(text, name="g.lark").compile()
        messages.append(str(info.value))
    assert messages[0] == messages[1] == (
        "g.lark:2:1: rule 'r2' derives no string: every expansion of it either never ends or "
        "uses a terminal that matches nothing\nr2: \"c\" r2\n^^"
    )


def test_derived_rules_bounded(monkeypatch):
    """Many distinct lookaheads multiply the derived rules: past the bound, a precise error."""
    from grammarc.frontends import lark_lookahead

    monkeypatch.setattr(lark_lookahead, "MAX_DERIVED", 50)
    terms = "\n".join(f"T{i}: /{c}(?![{c}])/" for i, c in enumerate("abcdefgh"))
    text = "start: item*\nitem: " + " | ".join(f"T{i}" for i in range(8)) + "\n" + terms + "\n"
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark(text, name="g.lark")
    assert str(info.value) == (
        "g.lark:3:1: Lark grammar: enforcing the lookaheads at the ends of terminals needs more than 50 "
        "derived rules; simplify the lookaheads or the grammar around them\nT0: /a(?![a])/\n^^")
    monkeypatch.setattr(lark_lookahead, "MAX_DERIVED", 20_000)
    g = Grammar.from_lark(text)
    assert [g.accepts(t) for t in ("abab", "aab", "", "hgh", "hh")] == [True, False, True, True, False]
