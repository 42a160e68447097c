"""Whole-text membership for a *tokenized* text: the oracle of the token-level constructs.

``any!`` (exactly one vocabulary token) and ``except!(X, n)`` (at most n tokens touch the
text) mean something only once the text is cut into tokens, so neither the byte-level
recognizer nor tests/oracle.py can check them. This module decides whether a grammar
derives a text given as its list of tokens, by brute force over spans: every expression
is evaluated to the set of byte spans ``(i, j)`` of the text it derives, rules by a least
fixpoint (recursion of any kind needs no care, nothing here parses).

Leaves (literals, regexes, substrings, except! texts) are character-level: a span matches
one when its bytes are valid UTF-8 and the decoded string is in the leaf's language,
which comes from tests/oracle.py (independent of the compiler). ``any!`` spans exactly
one token, whatever its bytes; ``except!(X, n)`` spans at most n tokens.
"""

from __future__ import annotations

from functools import lru_cache

import oracle
from grammarc.ir import Alt, AnyToken, Except, Expr, Grammar, Literal, Ref, Regex, Repeat, Seq, Substrings

Span = tuple[int, int]


def complete(grammar: Grammar, tokens: list[bytes]) -> bool:
    """Whether the text of `tokens` (cut where the tokens meet) is a string of `grammar`."""
    return _complete(grammar, tuple(tokens))


@lru_cache(maxsize=4096)
def _complete(grammar: Grammar, tokens: tuple[bytes, ...]) -> bool:
    return (0, sum(map(len, tokens))) in _Spans(grammar, list(tokens)).of_start()


class _Spans:
    def __init__(self, grammar: Grammar, tokens: list[bytes]):
        self.grammar = grammar
        self.rules = dict(grammar.rules)
        self.text = b"".join(tokens)
        self.n = len(self.text)
        self.bounds = [0]
        for token in tokens:
            self.bounds.append(self.bounds[-1] + len(token))
        self.decoded: dict[Span, str] = {}  # the spans that are valid UTF-8
        for i in range(self.n + 1):
            for j in range(i, self.n + 1):
                try:
                    self.decoded[(i, j)] = self.text[i:j].decode("utf-8")
                except UnicodeDecodeError:
                    pass
        self.leaves: dict[int, frozenset[Span]] = {}  # id(leaf) -> spans (leaves ignore env)

    def of_start(self) -> frozenset[Span]:
        env = {name: frozenset() for name in self.rules}
        changed = True
        while changed:  # every evaluation is monotone in env: a least fixpoint
            changed = False
            for name, expr in self.rules.items():
                value = self.eval(expr, env)
                if value != env[name]:
                    env[name], changed = value, True
        return env[self.grammar.start]

    # -- leaves -----------------------------------------------------------------------
    def _leaf(self, expr: Expr, test) -> frozenset[Span]:
        spans = self.leaves.get(id(expr))
        if spans is None:
            spans = self.leaves[id(expr)] = frozenset(span for span, s in self.decoded.items() if test(s))
        return spans

    def _tokens_touched(self, i: int, j: int) -> int:
        return sum(1 for a, b in zip(self.bounds, self.bounds[1:]) if a < j and i < b)

    def eval(self, expr: Expr, env: dict[str, frozenset[Span]]) -> frozenset[Span]:
        if isinstance(expr, Literal):
            return self._leaf(expr, lambda s: s == expr.text)
        if isinstance(expr, Regex):
            return self._leaf(expr, lambda s: _regex_member(expr.pattern, expr.mode, s))
        if isinstance(expr, Substrings):
            return self._leaf(expr, lambda s: s in expr.text)
        if isinstance(expr, Except):
            forbidden = oracle.except_strings(self.grammar, expr)
            spans = self._leaf(expr, lambda s: bool(s) and not any(x in s for x in forbidden))
            if expr.limit is not None:
                spans = frozenset((i, j) for i, j in spans if self._tokens_touched(i, j) <= expr.limit)
            return spans
        if isinstance(expr, AnyToken):
            return frozenset(zip(self.bounds, self.bounds[1:]))
        if isinstance(expr, Ref):
            return env[expr.name]
        if isinstance(expr, Seq):
            acc = frozenset((i, i) for i in range(self.n + 1))
            for item in expr.items:
                acc = _join(acc, self.eval(item, env))
            return acc
        if isinstance(expr, Alt):
            return frozenset().union(*(self.eval(item, env) for item in expr.items))
        if isinstance(expr, Repeat):
            item = self.eval(expr.item, env)
            power = frozenset((i, i) for i in range(self.n + 1))
            for _ in range(expr.min):
                power = _join(power, item)
            result, k = power, expr.min
            while expr.max is None or k < expr.max:
                power, k = _join(power, item), k + 1
                if power <= result:
                    break  # result . item is then inside result: no later power adds a span
                result |= power
            return result
        raise oracle.OracleError(f"unknown IR node {expr!r}")


def _join(left: frozenset[Span], right: frozenset[Span]) -> frozenset[Span]:
    starts: dict[int, list[int]] = {}
    for i, j in right:
        starts.setdefault(i, []).append(j)
    return frozenset((i, k) for i, j in left for k in starts.get(j, ()))


@lru_cache(maxsize=1 << 16)
def _regex_member(pattern: str, mode: str, s: str) -> bool:
    """Whether `s` is in the language of the regex terminal (tests/oracle.py's matcher)."""
    fullmatch = oracle._compiled(pattern)[0]
    if mode == "match":
        return fullmatch(s)
    if mode == "early":
        return fullmatch(s) and not any(fullmatch(s[:k]) for k in range(len(s)))
    return bool(s) and not any(fullmatch(s[i:j]) for i in range(len(s) + 1) for j in range(i, len(s) + 1))
