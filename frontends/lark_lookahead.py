"""Lookaheads at the end of Lark terminals, compiled into the grammar exactly.

grammarc has no lexer: the text after a token is whatever the grammar allows next. A Lark
terminal ``P(?!C)`` (or ``P(?=C)``) asks that the text right after the token does not (does)
start with a character of C; end of input satisfies ``(?!C)`` and fails ``(?=C)``. We carry
that demand, a *follow* ``(allowed first characters, end of input ok)``, through the grammar:

* each rule R is split by the follow its strings leave pending: ``L(R) = U_c L(R_c)·[c]``
  (``None``: no demand), computed by a fixpoint over the rules;
* in a sequence ``a b``, a piece ``a_c`` (c pending) is followed by the *nonempty* strings of
  ``b`` whose first character c allows (`first_in`), or, when b can be empty, keeps c pending;
* the start rule keeps the pieces whose pending demand end of input meets.

`first_in(expr, S)` (the nonempty strings of expr starting with a character of S) distributes
over alternatives, filters literals directly, turns ``Seq(a, b)`` into
``first_in(a)·b | first_in(b)`` (the second only when a can be empty), derives one new rule
per (rule, S) so recursion terminates, and filters Lark terminals by their regex's first
character (the caller's `TerminalFirst`, frontends/lark_regex.py). Pieces with a pending
demand are never empty (the terminal that set it is not), so demands never need combining.
Rules that end up deriving nothing are dropped.
"""

from __future__ import annotations

from typing import Callable, Optional

from grammarc.errors import GrammarError, Span
from grammarc.ir import Alt, Expr, Literal, Ref, Repeat, Seq

Ranges = tuple[tuple[int, int], ...]
Follow = tuple[Ranges, bool]
Rules = list[tuple[str, Expr]]
TerminalFirst = Callable[[str, Optional[Follow], Ranges], Optional[Expr]]
"""(terminal, follow group or None, S) -> its nonempty strings starting in S (None: none)."""

EPS: Expr = Seq(())
MAX_DERIVED = 20_000
"""Most rules the split may derive: it grows with rules x demands x first-character sets, so a
hostile grammar gets a precise error instead of an unbounded compile."""


def _seq(a: Expr | None, b: Expr | None) -> Expr | None:
    if a is None or b is None:
        return None
    items = [y for x in (a, b) for y in (x.items if isinstance(x, Seq) else (x,))]
    return items[0] if len(items) == 1 else Seq(tuple(items))


def _alt(options: list[Expr]) -> Expr | None:
    unique = list(dict.fromkeys(x for x in options if x is not None))
    return None if not unique else unique[0] if len(unique) == 1 else Alt(tuple(unique))


def _inside(cp: int, ranges: Ranges) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


def _desugar_repeats(rules: Rules, taken: set[str]) -> Rules:
    """Repetitions as right recursion (``R* = ε | R R*``), so splitting sees every end."""
    out: Rules = []

    def fresh(base: str) -> str:
        k = 1
        while f"{base}__rep{k}" in taken:
            k += 1
        taken.add(f"{base}__rep{k}")
        return f"{base}__rep{k}"

    def fix(expr: Expr, owner: str) -> Expr:
        if isinstance(expr, (Seq, Alt)):
            return type(expr)(tuple(fix(x, owner) for x in expr.items))
        if not isinstance(expr, Repeat):
            return expr
        item = fix(expr.item, owner)
        tail: Expr = EPS
        if expr.max is None:
            star = fresh(owner)
            out.append((star, Alt((EPS, Seq((item, Ref(star)))))))
            tail = Ref(star)
        else:
            for _ in range(expr.max - expr.min):
                tail = Alt((EPS, _seq(item, tail) or EPS))
        return Seq(tuple([item] * expr.min) + (tail,))

    for name, body in rules:
        out.append((name, fix(body, name)))
    del fix  # a recursive closure is a reference cycle: unbound, refcounting frees it
    return out


class _Split:
    """The rewriting state: rule bodies, demands per rule and the derived rules made so far."""

    def __init__(self, rules: Rules, terminals: dict[str, bool], follows: dict[str, dict],
                 first: TerminalFirst, blame: Span | None = None):
        self.blame = blame  # where an error about the split points: the first such terminal
        self.body = dict(rules)
        self.first_of_terminal = first
        self.terminal = {t: (t, None) for t in terminals}  # rule name -> (Lark terminal, group)
        self.taken = set(self.body)
        self.nullable = {n: terminals.get(n, False) for n in self.body}
        self.conds: dict[str, set] = {n: {None} for n in terminals}
        self.piece: dict[tuple[str, object], str] = {}  # (rule, follow) -> derived rule name
        self.derived: dict[str, Expr | None] = {}  # output rule -> body (None: derives nothing)
        self.recipe: dict[str, Callable[[], Expr | None]] = {}  # derived rule -> its body, later
        self.first_memo: dict[tuple[str, Ranges], str] = {}
        for t, groups in follows.items():
            self.conds[t] = set(groups)
            for c, expr in groups.items():
                name = self._name(t, "la")
                self.piece[(t, c)] = name
                self.terminal[name] = (t, c)
                self.nullable[name] = False
                self.derived[name] = expr
        self._fixpoints()

    def _name(self, base: str, kind: str) -> str:
        if len(self.taken) - len(self.body) >= MAX_DERIVED:
            raise GrammarError(
                f"Lark grammar: enforcing the lookaheads at the ends of terminals needs more than "
                f"{MAX_DERIVED} derived rules; simplify the lookaheads or the grammar around them",
                self.blame)
        k = 1
        while f"{base}__{kind}{k}" in self.taken:
            k += 1
        self.taken.add(f"{base}__{kind}{k}")
        return f"{base}__{kind}{k}"

    # -- analyses ------------------------------------------------------------------------
    def is_nullable(self, expr: Expr) -> bool:
        if isinstance(expr, Ref):
            return self.nullable.get(expr.name, False)
        if isinstance(expr, Seq):
            return all(self.is_nullable(x) for x in expr.items)
        if isinstance(expr, Alt):
            return any(self.is_nullable(x) for x in expr.items)
        return isinstance(expr, Literal) and expr.text == ""

    def _conds_of(self, expr: Expr) -> set:
        if isinstance(expr, Ref):
            return self.conds.get(expr.name, set())
        if isinstance(expr, Alt):
            return set().union(*(self._conds_of(x) for x in expr.items))
        if isinstance(expr, Seq):
            acc: set = {None}
            for item in expr.items:
                kept = {c for c in acc if c is not None} if self.is_nullable(item) else set()
                acc = self._conds_of(item) | kept
            return acc
        return {None}

    def _fixpoints(self) -> None:
        rules = [n for n in self.body if n not in self.terminal]
        changed = True
        while changed:
            changed = False
            for n in rules:
                if not self.nullable[n] and self.is_nullable(self.body[n]):
                    self.nullable[n] = changed = True
        for n in rules:
            self.conds[n] = set()
        changed = True
        while changed:
            changed = False
            for n in rules:
                new = self._conds_of(self.body[n])
                if not new <= self.conds[n]:
                    self.conds[n] |= new
                    changed = True

    # -- rewriting -----------------------------------------------------------------------
    def name_of(self, rule: str, c) -> str:
        """The rule holding `rule`'s strings that leave demand `c` pending."""
        if self.conds.get(rule) == {None}:
            return rule
        key = (rule, c)
        if key not in self.piece:
            name = self.piece[key] = self._name(rule, "la")
            self.nullable[name] = c is None and self.nullable.get(rule, False)
            self.recipe[name] = lambda: self.tail(self.body[rule]).get(c)
        return self.piece[key]

    def tail(self, expr: Expr) -> dict:
        """`expr` split by pending demand: {follow or None: expression}, empty pieces left out."""
        if isinstance(expr, Ref):
            return {c: Ref(self.name_of(expr.name, c)) for c in self.conds.get(expr.name, {None})}
        if isinstance(expr, Alt):
            out: dict = {}
            for x in expr.items:
                for c, piece in self.tail(x).items():
                    out.setdefault(c, []).append(piece)
            return {c: e for c, ps in out.items() if (e := _alt(ps)) is not None}
        if isinstance(expr, Seq):
            acc: dict = {None: EPS}
            for item in expr.items:
                parts, nullable, new = self.tail(item), self.is_nullable(item), {}
                for c, a in acc.items():
                    for d, b in parts.items():
                        rest = b if c is None else self.first_in(b, c[0])
                        if (joined := _seq(a, rest)) is not None:
                            new.setdefault(d, []).append(joined)
                    if c is not None and nullable:
                        new.setdefault(c, []).append(a)
                acc = {c: e for c, ps in new.items() if (e := _alt(ps)) is not None}
            return acc
        return {None: expr}

    def first_in(self, expr: Expr, allowed: Ranges) -> Expr | None:
        """The nonempty strings of `expr` whose first character is in `allowed`."""
        if isinstance(expr, Literal):
            return expr if expr.text and _inside(ord(expr.text[0]), allowed) else None
        if isinstance(expr, Alt):
            return _alt([self.first_in(x, allowed) for x in expr.items])
        if isinstance(expr, Seq):
            options = []
            for j, item in enumerate(expr.items):
                rest: Expr = Seq(expr.items[j + 1:]) if len(expr.items) > j + 2 else (
                    expr.items[j + 1] if j + 1 < len(expr.items) else EPS)
                options.append(_seq(self.first_in(item, allowed), rest))
                if not self.is_nullable(item):
                    break
            return _alt(options)
        if isinstance(expr, Ref):
            key = (expr.name, allowed)
            if key not in self.first_memo:
                name = self.first_memo[key] = self._name(expr.name, "first")
                self.nullable[name] = False
                if expr.name in self.terminal:
                    terminal, group = self.terminal[expr.name]
                    self.recipe[name] = lambda: self.first_of_terminal(terminal, group, allowed)
                else:
                    self.recipe[name] = lambda: self.first_in_body(expr.name, allowed)
            return Ref(self.first_memo[key])
        raise AssertionError(f"unexpected {type(expr).__name__} in a Lark rule body")

    def first_in_body(self, name: str, allowed: Ranges) -> Expr | None:
        body = self.rule_body(name)
        return None if body is None else self.first_in(body, allowed)

    def rule_body(self, name: str) -> Expr | None:
        """The body rule `name` has in the output (made on first use, then kept)."""
        if name not in self.derived:
            if name in self.recipe:
                self.derived[name] = self.recipe[name]()
            elif name in self.terminal:
                self.derived[name] = self.body[name]
            else:
                self.derived[name] = self.tail(self.body[name]).get(None)
        return self.derived[name]


def split_follows(
    rules: Rules, start: str, terminals: dict[str, bool], follows: dict[str, dict], first: TerminalFirst,
    span_of: Callable[[str], Optional[Span]] = lambda name: None,
) -> Rules:
    """`rules` with the terminals in `follows` (name -> {follow or None: body}) split and each
    follow demand enforced where the grammar continues; `terminals` maps every Lark terminal
    rule to whether it matches the empty string."""
    if not follows:
        return rules
    live = productive(dict(rules))
    lost = [n for n, _ in rules if n not in live]
    if lost:  # the compiler's own refusal, before splitting would silently drop the rule
        raise GrammarError(
            f"rule '{lost[0]}' derives no string: every expansion of it either never ends "
            "or uses a terminal that matches nothing", span_of(lost[0]))
    rules = _desugar_repeats(rules, {n for n, _ in rules})
    split = _Split(rules, terminals, follows, first, span_of(next(iter(follows))))
    out: dict[str, Expr | None] = {}
    ends = split.conds[start]
    queue = [start]
    while queue:
        name = queue.pop()
        if name in out:
            continue
        if name == start and ends != {None}:
            body = _alt([Ref(split.name_of(start, c)) for c in ends if c is None or c[1]])
        else:
            body = split.rule_body(name)
        out[name] = body
        queue.extend(n for n in reversed(_refs(body)) if n not in out)
    return _prune(out, start)


def _refs(expr: Expr | None) -> list[str]:
    if expr is None:
        return []
    if isinstance(expr, Ref):
        return [expr.name]
    if isinstance(expr, (Seq, Alt)):
        return [n for x in expr.items for n in _refs(x)]
    if isinstance(expr, Repeat):
        return _refs(expr.item)
    return []


def productive(rules: dict[str, Expr | None]) -> set[str]:
    """The rules that derive at least one string (terminal bodies always do)."""
    found: set[str] = set()

    def live(expr: Expr | None) -> bool:
        if expr is None:
            return False
        if isinstance(expr, Ref):
            return expr.name in found
        if isinstance(expr, Seq):
            return all(live(x) for x in expr.items)
        if isinstance(expr, Alt):
            return any(live(x) for x in expr.items)
        if isinstance(expr, Repeat):
            return expr.min == 0 or live(expr.item)
        return True

    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in found and live(body):
                found.add(name)
                changed = True
    del live  # a recursive closure is a reference cycle: unbound, refcounting frees it
    return found


def _prune(rules: dict[str, Expr | None], start: str) -> Rules:
    """Drop rules that derive nothing (and what only they reached)."""
    productive_ = productive(rules)

    def cut(expr: Expr) -> Expr | None:
        if isinstance(expr, Ref):
            return expr if expr.name in productive_ else None
        if isinstance(expr, Seq):
            items = [cut(x) for x in expr.items]
            return None if None in items else Seq(tuple(items))  # type: ignore[arg-type]
        if isinstance(expr, Alt):
            return _alt([cut(x) for x in expr.items])
        return expr

    kept = {n: cut(b) for n, b in rules.items() if n in productive_ and b is not None}
    del cut  # a recursive closure is a reference cycle: unbound, refcounting frees it
    seen, stack = {start}, [start]
    while stack:
        for n in _refs(kept.get(stack.pop())):
            if n not in seen:
                seen.add(n)
                stack.append(n)
    return [(n, b) for n, b in kept.items() if n in seen and b is not None]
