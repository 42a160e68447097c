"""Hypothesis strategies for small random IR grammars, and hand-written tricky grammars.

Every grammar `grammars()` yields is one the compiler must accept:
- every Ref names a defined rule, the start rule is `start`, rules are unique;
- every rule is reachable from `start` (unreachable ones are dropped, so no "unused rule"
  warnings) and productive (a rule that would derive nothing gets an extra literal
  alternative, so no "derives nothing" errors: repairing instead of filtering keeps
  hypothesis from rejecting most draws);
- except! targets are non-empty literals or a rule `lits` that is an alternation of
  non-empty literals, possibly through a second rule `lits2`;
- regex patterns are small, over the alphabet, never with an empty class; a complement
  (#ex) pattern never matches the empty string and never matches every character (either
  would make the terminal derive nothing).
The language may still be empty *over the alphabet* (e.g. except!('a'|'b') over "ab" needs
other characters); that is fine: the oracle is exact either way.
"""

from __future__ import annotations

import re

from hypothesis import strategies as st

import oracle
from grammarc.errors import StateBudgetExceeded
from grammarc.ir import (
    Alt,
    AnyToken,
    Except,
    Expr,
    Literal,
    Ref,
    Regex,
    Repeat,
    Seq,
    Substrings,
    walk,
)
from grammarc import Grammar

__all__ = ["grammars", "strings", "regex_patterns", "HAND_WRITTEN"]


def strings(alphabet: str = "ab", max_len: int = 6) -> st.SearchStrategy[str]:
    """Strings over `alphabet` of length <= max_len."""
    return st.text(alphabet=alphabet, max_size=max_len)


# ---------------------------------------------------------------------------------------
# Regex patterns
# ---------------------------------------------------------------------------------------


def _regex_char(c: str) -> str:
    """One character as a dialect regex atom (alphanumerics bare, anything else as \\u)."""
    if c.isascii() and c.isalnum():
        return c
    return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\u{{{ord(c):x}}}"


_QUANTIFIERS = ["", "", "", "", "", "*", "+", "?", "{2}", "{1,2}", "{0,2}", "{2,}", "*?", "+?", "??"]


@st.composite
def regex_patterns(draw, alphabet: str = "ab", depth: int = 2, anchors: bool = False) -> str:
    """A small pattern of the dialect over `alphabet`, no empty class; ^ and $ anywhere
    only when `anchors` (for testing the oracle, not the compiler)."""

    def atom(d: int) -> str:
        kinds = ["char"] * 6 + ["class", "class", "negclass", "dot", "word"]
        if d > 0:
            kinds += ["group", "group"]
        if anchors:
            kinds += ["^", "$"]
        kind = draw(st.sampled_from(kinds))
        if kind in ("^", "$"):
            return kind
        if kind == "char":
            return _regex_char(draw(st.sampled_from(alphabet)))
        if kind == "class":
            chars = draw(st.lists(st.sampled_from(alphabet), min_size=1, max_size=2, unique=True))
            return "[" + "".join(map(_regex_char, chars)) + "]"
        if kind == "negclass":
            return "[^" + _regex_char(draw(st.sampled_from(alphabet))) + "]"
        if kind == "dot":
            return "."
        if kind == "word":
            return draw(st.sampled_from([r"\w", r"\S", r"\D"]))
        return "(" + draw(st.sampled_from(["", "?:"])) + alternation(d - 1) + ")"

    def concat(d: int) -> str:
        n = draw(st.integers(1, 3))
        parts = []
        for _ in range(n):
            a = atom(d)
            parts.append(a if a in ("^", "$") else a + draw(st.sampled_from(_QUANTIFIERS)))
        return "".join(parts)

    def alternation(d: int) -> str:
        n = draw(st.integers(1, 2))
        return "|".join(concat(d) for _ in range(n))

    return alternation(depth)


def _with_anchors(draw, pattern: str) -> str:
    """Sometimes wrap in ^...$: no-ops at the edges. (Anchors elsewhere are left out: what
    they mean mid-pattern is not settled by SEMANTICS.md.)"""
    return f"^(?:{pattern})$" if draw(st.integers(0, 9)) == 0 else pattern


def _regex_terminal(draw, alphabet: str) -> Regex:
    pattern = draw(regex_patterns(alphabet, depth=1))
    mode = draw(st.sampled_from(["match", "match", "early", "complement"]))
    if mode == "complement" and re.fullmatch(oracle.translate_regex(pattern), ""):
        pattern = f"(?:{pattern}){_regex_char(alphabet[0])}"
    anchored = _with_anchors(draw, pattern)
    if mode == "complement":
        probe = Grammar(rules=(("start", Regex(pattern, "complement")),))
        if not oracle.productive_rules(probe) or _too_large(anchored):
            mode = "match"
    return Regex(anchored, mode)


def _too_large(pattern: str) -> bool:
    """A complement whose automaton exceeds the state budget: compiling it is a precise
    error (StateBudgetExceeded, tested in test_automata), not a grammar to test with."""
    try:
        Grammar(rules=(("start", Regex(pattern, "complement")),)).compile()
    except StateBudgetExceeded:
        return True
    return False


# ---------------------------------------------------------------------------------------
# Expressions and grammars
# ---------------------------------------------------------------------------------------


class _Ctx:
    def __init__(self, alphabet: str, names: list[str], lits: bool, any_token: bool, token_level: bool = False) -> None:
        self.alphabet = alphabet
        self.names = names
        self.lits = lits
        self.any_token = any_token
        self.token_level = token_level  # favour any! and small except! budgets


def _literal(draw, ctx: _Ctx, min_size: int = 0) -> Literal:
    return Literal(draw(st.text(alphabet=ctx.alphabet, min_size=min_size, max_size=2)))


def _leaf(draw, ctx: _Ctx) -> Expr:
    kinds = ["lit"] * 5 + ["ref"] * 4 + ["regex", "regex", "substrs", "except", "eps"]
    if ctx.token_level:
        kinds += ["except", "except", "eps", "eps"]
    kind = draw(st.sampled_from(kinds))
    if kind == "lit":
        return _literal(draw, ctx)
    if kind == "ref":
        return Ref(draw(st.sampled_from(ctx.names)))
    if kind == "regex":
        return _regex_terminal(draw, ctx.alphabet)
    if kind == "substrs":
        return Substrings(draw(st.text(alphabet=ctx.alphabet, min_size=1, max_size=3)))
    if kind == "except":
        if ctx.lits and draw(st.booleans()):
            target: Literal | Ref = Ref("lits")
        else:
            target = _literal(draw, ctx, min_size=1)
        limit = draw(st.sampled_from([1, 1, 2, None] if ctx.token_level else [None, None, 1, 3]))
        return Except(target, limit)
    # epsilon, or (rarely) any!
    if ctx.any_token and draw(st.integers(0, 1 if ctx.token_level else 5)) == 0:
        return AnyToken()
    return draw(st.sampled_from([Seq(()), Literal("")]))


def _expr(draw, ctx: _Ctx, depth: int) -> Expr:
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return _leaf(draw, ctx)
    kind = draw(st.sampled_from(["seq", "seq", "alt", "repeat"]))
    if kind == "seq":
        n = draw(st.integers(1, 3))
        return Seq(tuple(_expr(draw, ctx, depth - 1) for _ in range(n)))
    if kind == "alt":
        n = draw(st.integers(2, 3))
        return Alt(tuple(_expr(draw, ctx, depth - 1) for _ in range(n)))
    bounds = [(0, None), (1, None), (0, 1), (2, None), (0, 0), (1, 1), (1, 2), (2, 3), (0, 3)]
    lo, hi = draw(st.sampled_from(bounds))
    return Repeat(_expr(draw, ctx, depth - 1), lo, hi)


def _rule_body(draw, ctx: _Ctx, name: str) -> Expr:
    """A rule, often in one of the shapes parsers find hard."""
    shape = draw(st.sampled_from(["free", "free", "left", "right", "hidden", "nested", "ambiguous"]))
    x = _expr(draw, ctx, 1)
    base = _expr(draw, ctx, 1)
    if shape == "left":  # name ::= name x | base
        return Alt((Seq((Ref(name), x)), base))
    if shape == "right":  # name ::= x name | base
        return Alt((Seq((x, Ref(name))), base))
    if shape == "hidden":  # name ::= nullable name x | base
        nullable = draw(
            st.sampled_from([Literal(""), Seq(()), Repeat(x, 0, None), Repeat(base, 0, 1)])
        )
        return Alt((Seq((nullable, Ref(name), x)), base))
    if shape == "nested":  # repetitions of repetitions
        lo, hi = draw(st.integers(0, 2)), draw(st.sampled_from([None, 2, 3]))
        return Repeat(Alt((Repeat(x, 0, None), base)), lo, hi)
    if shape == "ambiguous":  # name ::= name name | x
        return Alt((Seq((Ref(name), Ref(name))), x))
    n = draw(st.integers(1, 3))
    alts = tuple(_expr(draw, ctx, 2) for _ in range(n))
    return alts[0] if n == 1 else Alt(alts)


def _referenced(expr: Expr) -> set[str]:
    return {node.name for node in walk(expr) if isinstance(node, Ref)}


def _reachable(rules: dict[str, Expr], start: str) -> list[str]:
    seen = [start]
    for name in seen:  # grows while iterating: a breadth-first walk
        for ref in sorted(_referenced(rules[name])):
            if ref not in seen:
                seen.append(ref)
    return seen


@st.composite
def grammars(draw, alphabet: str = "ab", max_rules: int = 4, *, any_token: bool = True,
             token_level: bool = False) -> Grammar:
    """A small valid grammar over `alphabet` with start rule ``start`` (see module doc);
    `token_level` favours ``any!`` (when allowed) and ``except!`` with budgets of 1 or 2."""
    n = draw(st.integers(1, max_rules))
    names = ["start"] + [f"r{i}" for i in range(1, n)]
    lits = draw(st.integers(0, 3)) == 0
    ctx = _Ctx(alphabet, names, lits, any_token, token_level)
    rules: dict[str, Expr] = {name: _rule_body(draw, ctx, name) for name in names}
    if lits:
        words = tuple(_literal(draw, ctx, min_size=1) for _ in range(draw(st.integers(1, 2))))
        if draw(st.booleans()):
            rules["lits"] = Alt(words + (Ref("lits2"),))
            more = draw(st.integers(1, 2))
            rules["lits2"] = Alt(tuple(_literal(draw, ctx, min_size=1) for _ in range(more)))
        else:
            rules["lits"] = Alt(words)
    # Hook every unreachable rule onto a reachable one, so that multi-rule grammars stay
    # multi-rule (the lits rules are reachable only through except!, or not at all).
    for name in names[1:]:
        order = _reachable(rules, "start")
        if name not in order:
            parent = draw(st.sampled_from([n for n in order if n in names]))
            hook = draw(st.sampled_from(["alt", "opt"]))
            rules[parent] = (
                Alt((rules[parent], Ref(name)))
                if hook == "alt"
                else Seq((rules[parent], Repeat(Ref(name), 0, 1)))
            )
    order = _reachable(rules, "start")
    kept = {name: rules[name] for name in rules if name in order}
    grammar = Grammar(rules=tuple(kept.items()), start="start")
    productive = oracle.productive_rules(grammar)
    if len(productive) < len(kept):
        fallback = Literal(alphabet[0])
        kept = {
            name: expr if name in productive else Alt((expr, fallback))
            for name, expr in kept.items()
        }
        grammar = Grammar(rules=tuple(kept.items()), start="start")
    return grammar


# ---------------------------------------------------------------------------------------
# Hand-written grammars that break naive parsers: name -> (grammar, alphabet)
# ---------------------------------------------------------------------------------------


def _g(*rules: tuple[str, Expr], start: str | None = None) -> Grammar:
    return Grammar(rules=rules, start=start or rules[0][0])


L, R = Literal, Ref

HAND_WRITTEN: dict[str, tuple[Grammar, str]] = {
    "left_recursion": (_g(("a", Alt((Seq((R("a"), L("x"))), L("y"))))), "xy"),
    "right_recursion": (_g(("a", Alt((Seq((L("x"), R("a"))), L("y"))))), "xy"),
    "epsilon_rules": (
        _g(("s", Seq((L("a"), R("e"), R("f"), L("b")))), ("e", Alt((L(""), L("c")))), ("f", Seq(()))),
        "abc",
    ),
    "hidden_left_recursion": (
        _g(("s", Alt((Seq((R("e"), R("s"), L("a"))), L("b")))), ("e", L(""))),
        "ab",
    ),
    "cyclic_unit_rules": (_g(("a", Alt((R("b"), L("x")))), ("b", R("a"))), "xy"),
    "highly_ambiguous": (_g(("s", Alt((Seq((R("s"), R("s"))), L("a"))))), "ab"),
    "balanced_parens": (_g(("s", Alt((Seq((L("a"), R("s"), L("b"), R("s"))), L(""))))), "ab"),
    "nullable_star": (_g(("s", Repeat(Alt((L(""), L("a"))), 0, None))), "ab"),
    "counted_repetition": (_g(("s", Repeat(Alt((L("a"), L("bb"))), 2, 3))), "ab"),
    "counted_at_least": (_g(("s", Repeat(L("ab"), 2, None))), "ab"),
    "regex_match": (_g(("s", Seq((Regex("a+b?"), L("b"))))), "ab"),
    "regex_early": (_g(("s", Seq((Regex("a+b?", "early"), L("b"))))), "ab"),
    "regex_complement": (_g(("s", Seq((Regex("aa", "complement"), L("c"))))), "abc"),
    "substrs": (_g(("s", Seq((Substrings("abc"), Substrings("ca"))))), "abc"),
    "except_literal": (_g(("s", Seq((Except(L("ab")), L("ab"))))), "ab"),
    "except_rule_limit": (
        _g(
            ("s", Seq((L("c"), Except(R("stop"), 2)))),
            ("stop", Alt((L("aa"), R("stop2")))),
            ("stop2", L("bc")),
        ),
        "abc",
    ),
    "except_semantics_example": (_g(("s", Seq((Except(L("\n\n")), L("\n\n"))))), "\na"),
    "any_token": (_g(("s", Seq((AnyToken(), L("a"))))), "ab"),
    "utf8": (
        _g(("s", Seq((L("\u00e9"), Regex("[^a]*"), Except(L("\u00e9\u00e9")), Substrings("a\u00e9"))))),
        "a\u00e9",
    ),
    "mutual_recursion": (
        _g(("s", Alt((Seq((R("t"), L("a"))), L("b")))), ("t", Seq((R("s"), L("b"))))),
        "ab",
    ),
}
