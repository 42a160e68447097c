"""The oracle against hand-computed languages, so that differential tests can trust it."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import oracle
from grammarc.ir import (
    Alt,
    AnyToken,
    Except,
    Expr,
    Literal as L,
    Ref as R,
    Regex,
    Repeat,
    Seq,
    Substrings,
)
from grammarc import Grammar
from oracle import OracleError, accepts, is_viable_prefix, language, viable_prefixes
from strategies import HAND_WRITTEN, grammars, regex_patterns


def g(*rules: tuple[str, Expr]) -> Grammar:
    return Grammar(rules=rules, start=rules[0][0])


def one(expr: Expr) -> Grammar:
    return g(("s", expr))


def all_strings(alphabet: str, max_len: int) -> list[str]:
    return ["".join(t) for n in range(max_len + 1) for t in itertools.product(alphabet, repeat=n)]


# -- plain context-free constructs ----------------------------------------------------------


def test_literals_and_epsilon():
    assert language(one(L("ab")), "ab", 3) == {"ab"}
    assert language(one(L("ab")), "ab", 1) == set()
    assert language(one(L("")), "ab", 3) == {""}
    assert language(one(Seq(())), "ab", 3) == {""}
    assert language(one(L("ac")), "ab", 3) == set()  # 'c' is outside the alphabet
    assert language(one(Alt((L("a"), L(""), L("ba")))), "ab", 3) == {"", "a", "ba"}


def test_left_recursion():
    grammar = HAND_WRITTEN["left_recursion"][0]  # a ::= a 'x' | 'y'
    assert language(grammar, "xy", 4) == {"y", "yx", "yxx", "yxxx"}


def test_right_recursion():
    grammar = HAND_WRITTEN["right_recursion"][0]  # a ::= 'x' a | 'y'
    assert language(grammar, "xy", 4) == {"y", "xy", "xxy", "xxxy"}


def test_epsilon_rules():
    grammar = HAND_WRITTEN["epsilon_rules"][0]  # s ::= 'a' e f 'b'; e ::= '' | 'c'; f ::= ();
    assert language(grammar, "abc", 5) == {"ab", "acb"}


def test_hidden_left_recursion():
    grammar = HAND_WRITTEN["hidden_left_recursion"][0]  # s ::= e s 'a' | 'b'; e ::= '';
    assert language(grammar, "ab", 4) == {"b", "ba", "baa", "baaa"}


def test_cyclic_unit_rules():
    grammar = HAND_WRITTEN["cyclic_unit_rules"][0]  # a ::= b | 'x'; b ::= a;
    assert language(grammar, "xy", 4) == {"x"}
    assert language(g(("b", R("a")), ("a", Alt((R("b"), L("x"))))), "xy", 4) == {"x"}


def test_highly_ambiguous():
    grammar = HAND_WRITTEN["highly_ambiguous"][0]  # s ::= s s | 'a'
    assert language(grammar, "ab", 5) == {"a" * n for n in range(1, 6)}


def test_balanced():
    grammar = HAND_WRITTEN["balanced_parens"][0]  # s ::= 'a' s 'b' s | ''
    expected = {"", "ab", "aabb", "abab", "aaabbb", "aababb", "aabbab", "abaabb", "ababab"}
    assert language(grammar, "ab", 6) == expected


def test_mutual_recursion():
    grammar = HAND_WRITTEN["mutual_recursion"][0]  # s ::= t 'a' | 'b'; t ::= s 'b';
    assert language(grammar, "ab", 7) == {"b", "bba", "bbaba", "bbababa"}


def test_unproductive_rules():
    grammar = g(("s", Alt((R("t"), L("a")))), ("t", Seq((R("t"), L("b")))))
    assert language(grammar, "ab", 4) == {"a"}
    assert oracle.productive_rules(grammar) == {"s"}
    assert language(g(("s", Seq((L("a"), R("s"))))), "ab", 4) == set()


# -- repetition -------------------------------------------------------------------------------


def test_counted_repetition():
    grammar = HAND_WRITTEN["counted_repetition"][0]  # ('a' | 'bb'){2,3}
    expected = {
        "aa", "abb", "bba", "bbbb",
        "aaa", "aabb", "abba", "abbbb", "bbaa", "bbabb", "bbbba", "bbbbbb",
    }  # fmt: skip
    assert language(grammar, "ab", 6) == expected


def test_repetition_bounds():
    assert language(one(Repeat(L("ab"), 2, None)), "ab", 7) == {"abab", "ababab"}
    assert language(one(Repeat(L("a"), 0, None)), "ab", 3) == {"", "a", "aa", "aaa"}
    assert language(one(Repeat(L("a"), 1, None)), "ab", 3) == {"a", "aa", "aaa"}
    assert language(one(Repeat(L("a"), 0, 1)), "ab", 3) == {"", "a"}
    assert language(one(Repeat(L("a"), 0, 0)), "ab", 3) == {""}
    assert language(one(Repeat(L("a"), 2, 2)), "ab", 3) == {"aa"}
    assert language(one(Repeat(L("a"), 4, 4)), "ab", 3) == set()
    assert language(one(Repeat(L("a"), 50, None)), "ab", 3) == set()


def test_repetition_of_nullable():
    assert language(one(Repeat(Alt((L(""), L("a"))), 2, 2)), "ab", 3) == {"", "a", "aa"}
    assert language(HAND_WRITTEN["nullable_star"][0], "ab", 3) == {"", "a", "aa", "aaa"}
    assert language(one(Repeat(L(""), 100, None)), "ab", 3) == {""}


def test_nested_repetition():
    # (('a'{2}) | 'b')* up to 4
    expr = Repeat(Alt((Repeat(L("a"), 2, 2), L("b"))), 0, None)
    expected = {s for s in all_strings("ab", 4) if all(len(run) % 2 == 0 for run in s.split("b"))}
    assert language(one(expr), "ab", 4) == expected


# -- regex terminals --------------------------------------------------------------------------


def test_regex_match():
    assert language(one(Regex("a+b?")), "ab", 3) == {"a", "aa", "aaa", "ab", "aab"}
    assert language(one(Regex("a*?b+?")), "ab", 2) == {"b", "ab", "bb"}  # lazy: same language
    assert language(one(Regex("(?<n>a)|(?P<m>bb)")), "ab", 3) == {"a", "bb"}


def test_regex_early():
    assert language(one(Regex("a+b?", "early")), "ab", 4) == {"a"}
    assert language(one(Regex("a*b", "early")), "ab", 3) == {"b", "ab", "aab"}
    assert language(one(Regex("a|ab", "early")), "ab", 3) == {"a"}
    assert language(one(Regex("ab|b+", "early")), "ab", 3) == {"ab", "b"}
    assert language(one(Regex("a?", "early")), "ab", 3) == {""}  # the empty match comes first


def test_regex_early_grammar():
    # #e'a+b?' 'b' : the terminal stops at its first match, so only "ab".
    assert language(HAND_WRITTEN["regex_early"][0], "ab", 4) == {"ab"}
    assert language(HAND_WRITTEN["regex_match"][0], "ab", 4) == {
        "ab", "aab", "aaab", "abb", "aabb",
    }  # fmt: skip


def test_regex_complement():
    no_aa = {s for s in all_strings("ab", 3) if s and "aa" not in s}
    assert language(one(Regex("aa", "complement")), "ab", 3) == no_aa
    assert len(no_aa) == 10
    # Every substring is tested in full, so lazy quantifiers and anchors change nothing.
    assert language(one(Regex("a+?", "complement")), "ab", 3) == {"b", "bb", "bbb"}
    assert language(one(Regex("^a$", "complement")), "ab", 3) == {"b", "bb", "bbb"}
    assert language(one(Regex("ab|ba", "complement")), "ab", 3) == {"a", "b", "aa", "bb", "aaa", "bbb"}
    # A pattern that matches the empty string occurs in every text: nothing is left.
    assert language(one(Regex("b*", "complement")), "ab", 3) == set()
    assert oracle.productive_rules(one(Regex("b*", "complement"))) == set()
    # A pattern that matches every character leaves nothing either, over any alphabet.
    assert oracle.productive_rules(one(Regex("[^b]|b", "complement"))) == set()
    assert oracle.productive_rules(one(Regex("[^b]", "complement"))) == {"s"}


def test_regex_complement_grammar():
    grammar = HAND_WRITTEN["regex_complement"][0]  # #ex'aa' 'c' over abc
    expected = {s + "c" for s in all_strings("abc", 3) if s and "aa" not in s}
    assert language(grammar, "abc", 4) == expected


def test_regex_dialect_classes():
    def matches(pattern: str, text: str) -> bool:
        return accepts(one(Regex(pattern)), text)

    assert matches(r"\d", "7") and not matches(r"\d", "\u0663")  # ASCII digits only
    assert matches(r"\w", "_") and not matches(r"\w", "\u00e9")
    assert matches(r"\W", "\u00e9") and matches(r"\D", "\u0663")
    for space in " \t\n\r\x0b\x0c\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff":
        assert matches(r"\s", space), repr(space)
        assert not matches(r"\S", space), repr(space)
    for not_space in "\x85\x1c\x1f\u200b":  # Python's \s has these; ECMAScript's does not
        assert not matches(r"\s", not_space), repr(not_space)
        assert matches(r"\S", not_space), repr(not_space)
    assert matches(".", "\r") and not matches(".", "\n")
    assert matches(r"[a\D]", "a") and matches(r"[a\D]", "x") and not matches(r"[a\D]", "5")
    assert matches(r"[^a\S]", " ") and not matches(r"[^a\S]", "a") and not matches(r"[^a\S]", "b")
    assert matches(r"[\d-]", "-") and matches(r"[a-c]", "b") and not matches(r"[a-c]", "d")
    assert matches(r"[\]\\]", "]") and matches(r"[\]\\]", "\\")


def test_regex_dialect_escapes_and_anchors():
    def matches(pattern: str, text: str) -> bool:
        return accepts(one(Regex(pattern)), text)

    assert matches(r"\u{1F600}", "\U0001f600")
    assert matches(r"\uD83D\uDE00", "\U0001f600")  # a surrogate pair is one code point
    assert matches(r"\x41\u0042\0", "AB\x00")
    assert matches(r"a\/b", "a/b") and matches(r"\.", ".") and not matches(r"\.", "a")
    assert matches("^ab$", "ab") and matches("(?:^a)(?:b$)", "ab")  # anchors are no-ops
    assert language(one(Regex("^a$|^b$")), "ab", 2) == {"a", "b"}
    # Anchors hold at the edges of the matched text only: elsewhere their branch is dead.
    assert language(one(Regex("a$b")), "ab", 3) == set()
    assert language(one(Regex("a^b|b")), "ab", 3) == {"b"}
    assert language(one(Regex("(^a|b)c")), "abc", 3) == {"ac", "bc"}
    assert language(one(Regex("b(a$|c)")), "abc", 3) == {"ba", "bc"}
    assert matches("a$\n", "a\n") is False  # Python's $ would match before the final \n
    # In complement mode every substring is matched on its own, so ^a is the same as a.
    assert language(one(Regex("^a", "complement")), "ab", 2) == {"b", "bb"}
    assert language(one(Regex("b(a$|c)", "complement")), "abc", 2) == {
        "a", "b", "c", "aa", "ab", "ac", "bb", "ca", "cb", "cc",
    }  # fmt: skip
    for bad in [r"\b", r"(a)\1", r"\p{L}", "[]a]"]:
        with pytest.raises(OracleError):
            language(one(Regex(bad)), "ab", 2)


def test_regex_viability_edge_cases():
    # Lazy quantifiers, alternations of negated classes and empty classes, which trip up
    # partial matching in the `regex` package, must be exact here.
    assert viable_prefixes(one(Regex("b+?b")), "ab", 2) == {"", "b", "bb"}
    assert viable_prefixes(one(Regex("[^a]+?[^a]{1,2}.", "early")), "ab", 3) == {"", "b", "bb", "bba", "bbb"}
    assert language(one(Regex(r"[^\n]|[^a]")), "ab", 1) == {"a", "b"}
    assert viable_prefixes(one(Regex(r"a[^\s\S]")), "ab", 2) == set()
    assert viable_prefixes(one(Regex(r"a|b[^\s\S]")), "ab", 2) == {"", "a"}
    assert viable_prefixes(one(Regex("(a|)*b")), "ab", 2) == {"", "a", "b", "aa", "ab"}
    assert viable_prefixes(one(Regex("a$b|ab")), "ab", 2) == {"", "a", "ab"}
    assert viable_prefixes(one(Regex("a$b|a")), "ab", 2) == {"", "a"}
    assert viable_prefixes(one(Regex("(^a|b)*c")), "abc", 2) == {"", "a", "b", "c", "ab", "ac", "bb", "bc"}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(regex_patterns("ab", depth=2, anchors=True))
@example("$^")  # the empty text's one position is both its start and its end
def test_regex_paths_agree(pattern):
    """Python re (full matches) and the oracle's NFA (viability) read the dialect alike."""
    fullmatch, can_complete = oracle._compiled(pattern)
    machine = oracle._machine(pattern)
    for s in oracle.universe("ab\n", 3):
        assert machine.fullmatch(s) == fullmatch(s), s
    completions = oracle.universe("ab\n", 4)
    for s in oracle.universe("ab", 3):
        if fullmatch(s):
            assert can_complete(s)
        if any(fullmatch(s + w) for w in completions):
            assert can_complete(s), s


# -- special terminals --------------------------------------------------------------------------


def test_substrings():
    assert language(one(Substrings("abc")), "abc", 3) == {"", "a", "b", "c", "ab", "bc", "abc"}
    assert language(one(Substrings("abc")), "ab", 3) == {"", "a", "b", "ab"}
    assert language(one(Substrings("aba")), "ab", 2) == {"", "a", "b", "ab", "ba"}
    grammar = HAND_WRITTEN["substrs"][0]  # #substrs'abc' #substrs'ca'
    left, right = ["", "a", "b", "c", "ab", "bc", "abc"], ["", "c", "a", "ca"]
    assert language(grammar, "abc", 5) == {x + y for x in left for y in right}
    assert "bcca" in language(grammar, "abc", 5) and "cb" not in language(grammar, "abc", 5)


def test_any_token():
    every = set(all_strings("ab", 3))
    assert language(one(AnyToken()), "ab", 3) == every - {""}
    grammar = HAND_WRITTEN["any_token"][0]  # any! 'a'
    assert language(grammar, "ab", 3) == {s for s in every if len(s) >= 2 and s.endswith("a")}


def test_except_example_from_semantics():
    grammar = one(Seq((Except(L("\n\n")), L("\n\n"))))
    assert accepts(grammar, "\n\n\n")  # "\n" + "\n\n"
    assert accepts(grammar, "a\n\n")
    assert not accepts(grammar, "\n\n")  # except! text must be non-empty
    assert language(grammar, "\na", 4) == {"\n\n\n", "a\n\n", "\na\n\n", "a\n\n\n", "aa\n\n"}


def test_except_through_rules_and_limit():
    grammar = HAND_WRITTEN["except_rule_limit"][0]  # 'c' except!(stop, 2); stop ::= 'aa' | stop2; stop2 ::= 'bc';
    expected = {"c" + s for s in all_strings("abc", 4) if s and "aa" not in s and "bc" not in s}
    assert language(grammar, "abc", 5) == expected  # the limit has no effect without a vocabulary
    assert oracle.except_strings(grammar, grammar["s"].items[1]) == {"aa", "bc"}
    same = one(Seq((L("c"), Except(Alt((L("aa"), L("bc"))))))).rules[0][1]
    assert language(Grammar(rules=(("s", same),) + grammar.rules[1:], start="s"), "abc", 5) == expected


def test_except_literal_grammar():
    grammar = HAND_WRITTEN["except_literal"][0]  # except!('ab') 'ab'
    expected = {s + "ab" for s in all_strings("ab", 3) if s and "ab" not in s}
    assert language(grammar, "ab", 5) == expected


def test_invalid_grammars_raise():
    with pytest.raises(OracleError, match="undefined"):
        language(g(("s", R("nope"))), "ab", 2)
    with pytest.raises(OracleError, match="start"):
        language(Grammar(rules=(("s", L("a")),), start="t"), "ab", 2)
    with pytest.raises(OracleError, match="alternation of literals"):
        language(g(("s", Except(R("t"))), ("t", Regex("a"))), "ab", 2)
    with pytest.raises(OracleError, match="cycles"):
        language(g(("s", Except(R("t"))), ("t", Alt((L("a"), R("t"))))), "ab", 2)


# -- prefixes and helpers ---------------------------------------------------------------------


def test_viable_prefixes_are_unbounded():
    grammar = one(Repeat(L("a"), 5, 5))
    assert viable_prefixes(grammar, "ab", 3) == {"", "a", "aa", "aaa"}
    assert not is_viable_prefix(grammar, "ab", 3, "a")  # bounded: no string of length <= 3
    assert is_viable_prefix(grammar, "ab", 5, "a")
    assert viable_prefixes(one(L("ab")), "ab", 3) == {"", "a", "ab"}
    # Completions may use characters outside the alphabet.
    except_ab = one(Except(Alt((L("a"), L("b")))))
    assert language(except_ab, "ab", 3) == set()
    assert viable_prefixes(except_ab, "ab", 3) == {""}


def test_viable_prefixes_of_terminals():
    assert viable_prefixes(one(Regex("a|ab", "early")), "ab", 3) == {"", "a"}
    assert viable_prefixes(one(Regex("a{3}b")), "ab", 3) == {"", "a", "aa", "aaa"}
    assert viable_prefixes(one(Regex("ab", "complement")), "ab", 2) == {"", "a", "b", "aa", "ba", "bb"}
    assert viable_prefixes(one(Regex("[^b]|b", "complement")), "ab", 2) == set()
    assert viable_prefixes(one(Seq((L("a"), Regex("b*", "complement")))), "ab", 2) == set()
    assert viable_prefixes(one(Substrings("abc")), "ab", 3) == {"", "a", "b", "ab"}
    assert viable_prefixes(one(AnyToken()), "a", 2) == {"", "a", "aa"}


def test_viable_prefixes_of_structure():
    grammar = HAND_WRITTEN["left_recursion"][0]
    assert viable_prefixes(grammar, "xy", 3) == {"", "y", "yx", "yxx"}
    grammar = HAND_WRITTEN["balanced_parens"][0]
    assert viable_prefixes(grammar, "ab", 3) == {"", "a", "aa", "ab", "aaa", "aab", "aba"}
    grammar = one(Repeat(Seq((L("a"), L("b"))), 1, 2))
    assert viable_prefixes(grammar, "ab", 5) == {"", "a", "ab", "aba", "abab"}
    grammar = g(("s", Seq((L("a"), R("t")))), ("t", Seq((L("b"), R("t")))))  # t derives nothing
    assert viable_prefixes(grammar, "ab", 3) == set()


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_prefixes_reach_the_bounded_language(name):
    # For these grammars every viable prefix of length <= 3 completes within 4 more characters.
    grammar, alphabet = HAND_WRITTEN[name]
    exact = {p for p in viable_prefixes(grammar, alphabet, 3)}
    bounded = {p for p in all_strings(alphabet, 3) if is_viable_prefix(grammar, alphabet, 7, p)}
    if name == "except_literal" or name == "except_rule_limit" or name == "any_token":
        assert bounded <= exact
    else:
        assert exact == bounded


def test_accepts():
    grammar = HAND_WRITTEN["highly_ambiguous"][0]
    assert accepts(grammar, "aaaa") and not accepts(grammar, "") and not accepts(grammar, "ab")
    assert accepts(one(L("")), "")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["ab", "abc"]).flatmap(lambda a: st.tuples(st.just(a), grammars(a))))
def test_oracle_self_consistency(case):
    alphabet, grammar = case
    lang = language(grammar, alphabet, 5)
    prefixes = viable_prefixes(grammar, alphabet, 5)
    assert lang <= prefixes
    assert all(p[:k] in prefixes for p in prefixes for k in range(len(p)))
    shorter = language(grammar, alphabet, 3)
    assert shorter == {s for s in lang if len(s) <= 3}
    bounded = {p for p in all_strings(alphabet, 3) if is_viable_prefix(grammar, alphabet, 5, p)}
    assert bounded <= prefixes
    assert oracle.productive_rules(grammar) == set(grammar.names)
    for s in sorted(lang)[:5]:
        assert accepts(grammar, s)
