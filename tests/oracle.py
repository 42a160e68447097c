"""A brute-force recognizer over the IR: the independent oracle of every differential test.

It shares no code with the compiler (no grammarc.automata, grammarc.lowering):
it enumerates the finite universe of strings over a small alphabet up to a length bound and
computes, by monotone fixpoints, exactly which of them each rule derives. Recursion of any
kind, epsilon rules, cycles and ambiguity need no special care, because nothing here parses.
The meaning of every construct follows notes/SEMANTICS.md; regex terminals use Python's `re`
(membership) after a translation of our regex dialect where Python's differs, and a small
Thompson NFA over the same dialect for "can this text still become a match?" (Python has no
partial matching; the `regex` package's is wrong for lazy quantifiers and even mis-matches
``[^\\n]|[^a]``). Tests check the two regex paths agree on full matches.

Public API:
- ``language(grammar, alphabet, max_len)``: every string over `alphabet` of length <= max_len
  that the grammar derives. Exact: a string of the universe is in the result iff it is in the
  (unbounded) language, because a concatenation of strings is only as long as its parts.
- ``viable_prefixes(grammar, alphabet, max_len)``: every string of the universe that some
  string of the *unbounded* language (over all characters, of any length) starts with. Exact;
  this is what a recognizer's "can this text still continue?" must agree with.
- ``is_viable_prefix(grammar, alphabet, max_len, prefix)``: the bounded notion: some string of
  ``language(grammar, alphabet, max_len)`` starts with `prefix`. An under-approximation of
  viability (a completion may be longer than max_len or need other characters); use
  ``viable_prefixes`` to compare with a recognizer.
- ``accepts(grammar, s)``: whole-string membership.
- ``productive_rules(grammar)``: the rules that derive at least one string (over all
  characters), i.e. the ones a compiler must not reject with "derives nothing".
- ``translate_regex(pattern)``: our regex dialect as a Python `re` pattern.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable

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
from grammarc.ir import Grammar

__all__ = [
    "OracleError",
    "language",
    "viable_prefixes",
    "is_viable_prefix",
    "accepts",
    "productive_rules",
    "except_strings",
    "translate_regex",
    "universe",
]


class OracleError(ValueError):
    """The grammar is invalid, or uses a construct the oracle refuses to guess about."""


# ---------------------------------------------------------------------------------------
# Regex dialect -> Python
# ---------------------------------------------------------------------------------------

# ECMAScript \s: WhiteSpace (TAB VT FF SP NBSP ZWNBSP and category Zs) plus LineTerminator.
_ECMA_SPACE = "\\t\\n\\x0b\\x0c\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_SHORTHANDS = {"d": "0-9", "w": "A-Za-z0-9_", "s": _ECMA_SPACE}
_SIMPLE_ESCAPES = {"n": 0x0A, "r": 0x0D, "t": 0x09, "f": 0x0C, "v": 0x0B, "0": 0x00}


def _char(code: int) -> str:
    """A Python-regex spelling of one code point, safe inside and outside classes."""
    return f"\\U{code:08x}"


def _read_escape(pattern: str, i: int) -> tuple[tuple, int]:
    """Read the escape at pattern[i] == '\\'. Returns (("char", code) | ("set", body, negated), next)."""
    if i + 1 >= len(pattern):
        raise OracleError(f"regex {pattern!r}: trailing backslash")
    c = pattern[i + 1]
    if c.lower() in _SHORTHANDS:
        return ("set", _SHORTHANDS[c.lower()], c.isupper()), i + 2
    if c in _SIMPLE_ESCAPES:
        return ("char", _SIMPLE_ESCAPES[c]), i + 2
    if c == "x":
        digits = pattern[i + 2 : i + 4]
        if not re.fullmatch(r"[0-9A-Fa-f]{2}", digits):
            raise OracleError(f"regex {pattern!r}: bad \\x escape")
        return ("char", int(digits, 16)), i + 4
    if c == "u":
        if pattern.startswith("{", i + 2):
            end = pattern.find("}", i + 3)
            digits = pattern[i + 3 : end] if end >= 0 else ""
            if not re.fullmatch(r"[0-9A-Fa-f]{1,6}", digits) or int(digits, 16) > 0x10FFFF:
                raise OracleError(f"regex {pattern!r}: bad \\u{{...}} escape")
            return ("char", int(digits, 16)), end + 1
        digits = pattern[i + 2 : i + 6]
        if not re.fullmatch(r"[0-9A-Fa-f]{4}", digits):
            raise OracleError(f"regex {pattern!r}: bad \\u escape")
        code = int(digits, 16)
        low = pattern[i + 6 : i + 12]
        if 0xD800 <= code < 0xDC00 and re.fullmatch(r"\\u[Dd][C-Fc-f][0-9A-Fa-f]{2}", low):
            code = 0x10000 + ((code - 0xD800) << 10) + (int(low[2:], 16) - 0xDC00)
            return ("char", code), i + 12
        return ("char", code), i + 6
    if c.isalnum() or c == "_":
        raise OracleError(f"regex {pattern!r}: escape \\{c} is not part of the dialect")
    return ("char", ord(c)), i + 2


def _read_class(pattern: str, i: int) -> tuple[str, int]:
    """Translate the class starting at pattern[i] == '['; returns (python text, next index)."""
    i += 1
    negated = pattern.startswith("^", i)
    if negated:
        i += 1
    if pattern.startswith("]", i):
        # Perl reads `[]a]` as a class containing ']', ECMAScript reads `[]` as the empty
        # class: SEMANTICS.md does not say which, so the oracle refuses to guess.
        raise OracleError(f"regex {pattern!r}: ']' first in a class is ambiguous")
    items: list[tuple] = []
    while True:
        if i >= len(pattern):
            raise OracleError(f"regex {pattern!r}: unterminated class")
        c = pattern[i]
        if c == "]":
            i += 1
            break
        if c == "\\":
            item, i = _read_escape(pattern, i)
            items.append(item)
        elif c == "-":
            items.append(("dash",))
            i += 1
        else:
            items.append(("char", ord(c)))
            i += 1
    positive: list[str] = []
    negated_sets: list[str] = []
    k = 0
    while k < len(items):
        item = items[k]
        if (
            item[0] == "char"
            and k + 2 < len(items)
            and items[k + 1][0] == "dash"
            and items[k + 2][0] == "char"
        ):
            lo, hi = item[1], items[k + 2][1]
            if lo > hi:
                raise OracleError(f"regex {pattern!r}: range out of order")
            positive.append(f"{_char(lo)}-{_char(hi)}")
            k += 3
            continue
        if item[0] == "char":
            positive.append(_char(item[1]))
        elif item[0] == "dash":
            positive.append(_char(ord("-")))
        elif item[2]:
            negated_sets.append(item[1])
        else:
            positive.append(item[1])
        k += 1
    body = "".join(positive)
    if not negated_sets:
        return (f"[^{body}]" if negated else f"[{body}]"), i
    if not negated:
        # [x\D] = x or a non-digit: a union of classes.
        parts = ([f"[{body}]"] if body else []) + [f"[^{s}]" for s in negated_sets]
        return "(?:" + "|".join(parts) + ")", i
    # [^x\D] = neither x nor a non-digit = a digit that is not x: an intersection.
    guard = f"(?![{body}])" if body else ""
    looks = "".join(f"(?=[{s}])" for s in negated_sets[:-1])
    return f"(?:{guard}{looks}[{negated_sets[-1]}])", i


_COUNTED = re.compile(r"\{(?:[0-9]+(?:,[0-9]*)?|,[0-9]+)\}")


@lru_cache(maxsize=None)
def translate_regex(pattern: str) -> str:
    """Our regex dialect (SEMANTICS.md) as a Python `re` pattern with the same full matches.

    \\d \\w \\s mean the ASCII/ECMA sets (Python's are Unicode-wide); `.` is any character
    but \\n; ^ and $ hold only at the start and end of the text being matched (no-ops at
    the edges of a pattern, a dead branch anywhere else); \\u{X} and surrogate pairs are
    code points; (?<n>...) is a named group; lazy quantifiers become greedy (same full
    matches). Escapes outside the dialect (\\b, backreferences, ...) raise OracleError.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            item, i = _read_escape(pattern, i)
            if item[0] == "char":
                out.append(_char(item[1]))
            else:
                out.append(f"[^{item[1]}]" if item[2] else f"[{item[1]}]")
        elif c == "[":
            text, i = _read_class(pattern, i)
            out.append(text)
        elif c == "^":
            out.append("^")
            i += 1
        elif c == "$":
            out.append("\\Z")  # Python's $ also matches before a final newline
            i += 1
        elif c == ".":
            out.append("[^\\n]")
            i += 1
        elif pattern.startswith("(?", i):
            # Group syntax, not a quantifier. (?<n>...) is Python's (?P<n>...).
            named = pattern.startswith("(?<", i) and not pattern.startswith(("(?<=", "(?<!"), i)
            out.append("(?P<" if named else "(?")
            i += 3 if named else 2
        elif c in "*+?" or (c == "{" and _COUNTED.match(pattern, i)):
            end = _COUNTED.match(pattern, i).end() if c == "{" else i + 1
            out.append(pattern[i:end])
            i = end
            if pattern.startswith("+", i):
                raise OracleError(f"regex {pattern!r}: possessive quantifiers are not in the dialect")
            if pattern.startswith("?", i):
                i += 1  # lazy and greedy quantifiers have the same full matches
        else:
            out.append(c)
            i += 1
    return "".join(out)


# -- a Thompson NFA over the dialect, for prefix viability ---------------------------------


class _Nfa:
    """States are ints; `eps[q]` = [(kind, target)] with kind "" (free), "^" (only at the
    start of the text) or "$" (only at its end); `edges[q]` = [(char predicate, target)].
    Atoms are single-character predicates built from the same translation as above."""

    def __init__(self) -> None:
        self.eps: list[list[tuple[str, int]]] = []
        self.edges: list[list[tuple[Callable[[str], bool], int]]] = []

    def state(self) -> int:
        self.eps.append([])
        self.edges.append([])
        return len(self.eps) - 1


def _parse_regex(pattern: str) -> tuple:
    """Parse the dialect into ('pred', text) | ('anchor', '^' or '$') | ('cat', items) |
    ('alt', items) | ('rep', item, min, max)."""
    pos = 0

    def alternation() -> tuple:
        nonlocal pos
        items = [concatenation()]
        while pos < len(pattern) and pattern[pos] == "|":
            pos += 1
            items.append(concatenation())
        return items[0] if len(items) == 1 else ("alt", items)

    def concatenation() -> tuple:
        nonlocal pos
        items = []
        while pos < len(pattern) and pattern[pos] not in "|)":
            node = atom()
            while pos < len(pattern):
                counted = _COUNTED.match(pattern, pos)
                if pattern[pos] in "*+?":
                    lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[pattern[pos]]
                    pos += 1
                elif counted:
                    body = pattern[pos + 1 : counted.end() - 1]
                    lo_text, _, hi_text = body.partition(",")
                    lo = int(lo_text or 0)
                    hi = lo if "," not in body else (int(hi_text) if hi_text else None)
                    pos = counted.end()
                else:
                    break
                if pattern.startswith("?", pos):
                    pos += 1
                node = ("rep", node, lo, hi)
            items.append(node)
        return ("cat", items)

    def atom() -> tuple:
        nonlocal pos
        c = pattern[pos]
        if c == "(":
            if pattern.startswith("(?:", pos):
                pos += 3
            elif pattern.startswith(("(?<", "(?P<"), pos) and not pattern.startswith(("(?<=", "(?<!"), pos):
                pos = pattern.index(">", pos) + 1
            elif pattern.startswith("(?", pos):
                raise OracleError(f"regex {pattern!r}: group syntax at {pos} is not in the dialect")
            else:
                pos += 1
            node = alternation()
            if not pattern.startswith(")", pos):
                raise OracleError(f"regex {pattern!r}: unbalanced parenthesis")
            pos += 1
            return node
        if c == "[":
            text, pos = _read_class(pattern, pos)
            return ("pred", text)
        if c == "\\":
            item, pos = _read_escape(pattern, pos)
            if item[0] == "char":
                return ("pred", _char(item[1]))
            return ("pred", f"[^{item[1]}]" if item[2] else f"[{item[1]}]")
        pos += 1
        if c in "^$":
            return ("anchor", c)
        if c == ".":
            return ("pred", "[^\\n]")
        if c in "*+?{":
            if c != "{" or _COUNTED.match(pattern, pos - 1):
                raise OracleError(f"regex {pattern!r}: nothing to repeat at {pos - 1}")
        return ("pred", _char(ord(c)))

    node = alternation()
    if pos != len(pattern):
        raise OracleError(f"regex {pattern!r}: unbalanced parenthesis")
    return node


@lru_cache(maxsize=None)
def _predicate(text: str) -> Callable[[str], bool]:
    compiled = re.compile(text)
    return lambda ch: compiled.fullmatch(ch) is not None


_PROBES = "ab0_ \n\x00~\u00e9\u00a0\u4e00\U0001f600"


def _some_char(pred: Callable[[str], bool]) -> bool:
    """Whether `pred` holds for some character (a few probes first, then all of Unicode)."""
    return any(pred(ch) for ch in _PROBES) or any(
        pred(chr(code)) for code in itertools.chain(range(0xD800), range(0xE000, 0x110000))
    )


@lru_cache(maxsize=None)
def _satisfiable(text: str) -> bool:
    """Whether the one-character pattern `text` matches some character."""
    return _some_char(_predicate(text))


# Where a run of the NFA stands: nothing read yet, inside the text, past a `$`, or past a
# `$` with nothing read (the empty text: its one position is both start and end).
_START, _INSIDE, _ENDED, _ENDED_AT_START = 0, 1, 2, 3
_PHASES = (_START, _INSIDE, _ENDED, _ENDED_AT_START)
_READING = (_START, _INSIDE)


class _RegexMachine:
    """Full matching and prefix viability of one dialect pattern, by NFA simulation.

    A configuration is (state, phase); `^` edges are open only in phase _START, a `$` edge
    moves to phase _ENDED, where no character can be read any more."""

    def __init__(self, pattern: str) -> None:
        self.nfa = _Nfa()
        self.start, self.accept = self.nfa.state(), self.nfa.state()
        self._build(_parse_regex(pattern), self.start, self.accept)
        self.alive = self._coreachable()

    def _build(self, node: tuple, src: int, dst: int) -> None:
        nfa, kind = self.nfa, node[0]
        if kind == "pred":
            if _satisfiable(node[1]):  # an empty class: no character ever takes the edge
                nfa.edges[src].append((_predicate(node[1]), dst))
        elif kind == "anchor":
            nfa.eps[src].append((node[1], dst))
        elif kind == "cat":
            cur = src
            for item in node[1]:
                nxt = nfa.state()
                self._build(item, cur, nxt)
                cur = nxt
            nfa.eps[cur].append(("", dst))
        elif kind == "alt":
            for item in node[1]:
                self._build(item, src, dst)
        else:
            _, item, lo, hi = node
            cur = src
            for _ in range(lo):
                nxt = nfa.state()
                self._build(item, cur, nxt)
                cur = nxt
            if hi is None:
                loop = nfa.state()
                nfa.eps[cur].append(("", loop))
                self._build(item, loop, loop)
                nfa.eps[loop].append(("", dst))
            else:
                for _ in range(hi - lo):
                    nfa.eps[cur].append(("", dst))
                    nxt = nfa.state()
                    self._build(item, cur, nxt)
                    cur = nxt
                nfa.eps[cur].append(("", dst))

    @staticmethod
    def _eps_phase(kind: str, phase: int) -> int | None:
        if kind == "^":
            return phase if phase in (_START, _ENDED_AT_START) else None
        if kind == "$":
            return _ENDED_AT_START if phase in (_START, _ENDED_AT_START) else _ENDED
        return phase

    def _coreachable(self) -> frozenset[tuple[int, int]]:
        """Configurations from which some continuation of the text reaches accept."""
        back: dict[tuple[int, int], set[tuple[int, int]]] = defaultdict(set)
        for q in range(len(self.nfa.eps)):
            for phase in _PHASES:
                for kind, t in self.nfa.eps[q]:
                    after = self._eps_phase(kind, phase)
                    if after is not None:
                        back[(t, after)].add((q, phase))
                if phase in _READING:
                    for _, t in self.nfa.edges[q]:
                        back[(t, _INSIDE)].add((q, phase))
        goals = [(self.accept, phase) for phase in _PHASES]
        seen, stack = set(goals), list(goals)
        while stack:
            for config in back[stack.pop()]:
                if config not in seen:
                    seen.add(config)
                    stack.append(config)
        return frozenset(seen)

    def _closure(self, configs: set[tuple[int, int]]) -> set[tuple[int, int]]:
        stack = list(configs)
        while stack:
            q, phase = stack.pop()
            for kind, t in self.nfa.eps[q]:
                after = self._eps_phase(kind, phase)
                if after is not None and (t, after) not in configs:
                    configs.add((t, after))
                    stack.append((t, after))
        return configs

    def run(self, text: str) -> set[tuple[int, int]]:
        configs = self._closure({(self.start, _START)})
        for ch in text:
            configs = self._closure(
                {
                    (t, _INSIDE)
                    for q, phase in configs
                    if phase in _READING
                    for pred, t in self.nfa.edges[q]
                    if pred(ch)
                }
            )
            if not configs:
                break
        return configs

    def fullmatch(self, text: str) -> bool:
        return any(q == self.accept for q, _ in self.run(text))

    def can_complete(self, text: str) -> bool:
        return not self.alive.isdisjoint(self.run(text))


@lru_cache(maxsize=None)
def _machine(pattern: str) -> _RegexMachine:
    return _RegexMachine(pattern)


@lru_cache(maxsize=None)
def _compiled(pattern: str) -> tuple[Callable[[str], bool], Callable[[str], bool]]:
    """(full match by Python re, prefix-of-a-match by the NFA) for a dialect pattern."""
    text = translate_regex(pattern)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            full = re.compile(text)
    except re.error as exc:
        raise OracleError(f"regex {pattern!r} (as {text!r}): {exc}") from None

    def fullmatch(s: str) -> bool:
        return full.fullmatch(s) is not None

    return fullmatch, _machine(pattern).can_complete


@lru_cache(maxsize=None)
def _complement_productive(pattern: str) -> bool:
    """Whether some non-empty text contains no match of `pattern` (mode complement).

    Any non-empty text contains a one-character substring, and a one-character text is a
    witness by itself: the language is non-empty iff "" and some character are not matches."""
    fullmatch, _ = _compiled(pattern)
    return not fullmatch("") and _some_char(lambda ch: not fullmatch(ch))


# ---------------------------------------------------------------------------------------
# The finite universe
# ---------------------------------------------------------------------------------------


def _normalize_alphabet(alphabet: Iterable[str]) -> str:
    chars = sorted(set("".join(alphabet)))
    return "".join(chars)


@lru_cache(maxsize=64)
def universe(alphabet: str, max_len: int) -> tuple[str, ...]:
    """Every string over `alphabet` of length <= max_len, shortest first."""
    alphabet = _normalize_alphabet(alphabet)
    return tuple(
        "".join(chars)
        for n in range(max_len + 1)
        for chars in itertools.product(alphabet, repeat=n)
    )


@dataclass(frozen=True)
class _Universe:
    alphabet: str
    max_len: int

    @property
    def strings(self) -> tuple[str, ...]:
        return universe(self.alphabet, self.max_len)

    def contains(self, s: str) -> bool:
        return len(s) <= self.max_len and all(ch in self.alphabet for ch in s)

    def concat(self, xs: set[str] | frozenset[str], ys: set[str] | frozenset[str]) -> set[str]:
        """{x + y} truncated to max_len (exact: longer parts can never contribute)."""
        if not xs or not ys:
            return set()
        by_len: dict[int, list[str]] = defaultdict(list)
        for y in ys:
            by_len[len(y)].append(y)
        out: set[str] = set()
        for x in xs:
            room = self.max_len - len(x)
            for n, bucket in by_len.items():
                if n <= room:
                    out.update(x + y for y in bucket)
        return out

    def power_range(self, item: set[str], lo: int, hi: int | None) -> set[str]:
        """Concatenations of k strings of `item`, lo <= k <= hi (hi None: unbounded)."""
        if hi is not None and lo > hi:
            return set()
        cur = {""}
        for _ in range(lo):
            nxt = self.concat(cur, item)
            if nxt == cur:  # only with "" in item: every later power is the same set
                break
            cur = nxt
        result = set(cur)
        k = lo
        while hi is None or k < hi:
            cur = self.concat(cur, item)
            k += 1
            if cur <= result:
                # result . item is then inside result, so no later power adds anything.
                break
            result |= cur
        return result


# ---------------------------------------------------------------------------------------
# Grammar checks
# ---------------------------------------------------------------------------------------


def _rules(grammar: Grammar) -> dict[str, Expr]:
    """The rule map, after checking what the oracle relies on."""
    names = [name for name, _ in grammar.rules]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise OracleError(f"rules defined twice in the IR: {dupes}")
    rules = dict(grammar.rules)
    if grammar.start not in rules:
        raise OracleError(f"start rule {grammar.start!r} is not defined")
    for name, expr in rules.items():
        for node in walk(expr):
            if isinstance(node, Ref) and node.name not in rules:
                raise OracleError(f"rule {name!r} refers to undefined rule {node.name!r}")
            if isinstance(node, Repeat) and (node.min < 0 or (node.max is not None and node.max < 0)):
                raise OracleError(f"rule {name!r}: negative repetition bound")
            if isinstance(node, Alt) and not node.items:
                raise OracleError(f"rule {name!r}: empty alternation")
            if isinstance(node, Regex) and node.mode not in ("match", "early", "complement"):
                raise OracleError(f"rule {name!r}: unknown regex mode {node.mode!r}")
    for name, expr in rules.items():
        for node in walk(expr):
            if isinstance(node, Except):
                except_strings(grammar, node)
    return rules


def except_strings(grammar: Grammar, node: Except) -> frozenset[str]:
    """The finite set X of `except!(X)`: a literal, or a rule that is an alternation of
    literals, possibly through other rules (a Seq of such parts is read as concatenation)."""
    rules = dict(grammar.rules)

    def strings(expr: Expr, seen: tuple[str, ...]) -> frozenset[str]:
        if isinstance(expr, Literal):
            return frozenset({expr.text})
        if isinstance(expr, Ref):
            if expr.name in seen:
                raise OracleError(f"except! target cycles through rule {expr.name!r}")
            if expr.name not in rules:
                raise OracleError(f"except! target {expr.name!r} is not defined")
            return strings(rules[expr.name], seen + (expr.name,))
        if isinstance(expr, Alt):
            return frozenset().union(*(strings(item, seen) for item in expr.items))
        if isinstance(expr, Seq):
            acc = frozenset({""})
            for item in expr.items:
                part = strings(item, seen)
                acc = frozenset(a + b for a in acc for b in part)
            return acc
        raise OracleError(f"except! target is not an alternation of literals: {expr!r}")

    return strings(node.item, ())


# ---------------------------------------------------------------------------------------
# Terminals
# ---------------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def _regex_language(pattern: str, mode: str, alphabet: str, max_len: int) -> frozenset[str]:
    fullmatch, _ = _compiled(pattern)
    strings = universe(alphabet, max_len)
    matches = {s for s in strings if fullmatch(s)}
    if mode == "match":
        return frozenset(matches)
    if mode == "early":
        return frozenset(s for s in matches if not any(s[:k] in matches for k in range(len(s))))
    # complement: test every substring, the empty one included (all are in the universe).
    return frozenset(
        s
        for s in strings
        if s and not any(s[i:j] in matches for i in range(len(s) + 1) for j in range(i, len(s) + 1))
    )


@lru_cache(maxsize=512)
def _regex_prefixes(pattern: str, mode: str, alphabet: str, max_len: int) -> frozenset[str]:
    fullmatch, can_complete = _compiled(pattern)
    strings = universe(alphabet, max_len)
    if mode == "match":
        return frozenset(s for s in strings if can_complete(s))
    matches = {s for s in strings if fullmatch(s)}
    if mode == "early":
        # Viable iff no proper prefix is a match and some extension (maybe s) is a match:
        # the shortest such extension then has no proper prefix that matches.
        return frozenset(
            s
            for s in strings
            if can_complete(s) and not any(s[:k] in matches for k in range(len(s)))
        )
    productive = _complement_productive(pattern)
    return frozenset(
        s
        for s in strings
        if (s or productive)
        and not any(s[i:j] in matches for i in range(len(s) + 1) for j in range(i, len(s) + 1))
    )


def _regex_productive(node: Regex) -> bool:
    if node.mode == "complement":
        return _complement_productive(node.pattern)
    # A match exists iff the empty text is a prefix of one; the shortest match is early.
    return _compiled(node.pattern)[1]("")


def _substrings(text: str) -> set[str]:
    return {text[i:j] for i in range(len(text) + 1) for j in range(i, len(text) + 1)}


def _avoids(s: str, forbidden: frozenset[str]) -> bool:
    return not any(x in s for x in forbidden)


# ---------------------------------------------------------------------------------------
# Fixpoints
# ---------------------------------------------------------------------------------------


def _fixpoint(rules: dict[str, Expr], evaluate: Callable[[Expr, dict], object], bottom) -> dict:
    """Least fixpoint of env[name] = evaluate(rules[name], env), by chaotic iteration.

    Every evaluator below is monotone in env, so this terminates on the finite universe."""
    env = {name: bottom for name in rules}
    changed = True
    while changed:
        changed = False
        for name, expr in rules.items():
            value = evaluate(expr, env)
            if value != env[name]:
                env[name] = value
                changed = True
    return env


class _Oracle:
    """The three analyses of one grammar over one universe: productivity, language, prefixes."""

    def __init__(self, grammar: Grammar, alphabet: str = "", max_len: int = 0) -> None:
        self.grammar = grammar
        self.rules = _rules(grammar)
        self.u = _Universe(_normalize_alphabet(alphabet), max_len)
        self._excepts: dict[Except, frozenset[str]] = {}
        self.productive_env = _fixpoint(self.rules, self.productive, False)
        self._lang_env: dict[str, frozenset[str]] | None = None

    def forbidden(self, node: Except) -> frozenset[str]:
        if node not in self._excepts:
            self._excepts[node] = except_strings(self.grammar, node)
        return self._excepts[node]

    # -- productivity (over all characters, unbounded) ------------------------------------
    def productive(self, expr: Expr, env: dict[str, bool] | None = None) -> bool:
        env = self.productive_env if env is None else env
        if isinstance(expr, (Literal, Substrings, AnyToken)):
            return True
        if isinstance(expr, Regex):
            return _regex_productive(expr)
        if isinstance(expr, Except):
            return "" not in self.forbidden(expr)
        if isinstance(expr, Ref):
            return env[expr.name]
        if isinstance(expr, Seq):
            return all(self.productive(item, env) for item in expr.items)
        if isinstance(expr, Alt):
            return any(self.productive(item, env) for item in expr.items)
        if isinstance(expr, Repeat):
            if expr.max is not None and expr.min > expr.max:
                return False
            return expr.min == 0 or self.productive(expr.item, env)
        raise OracleError(f"unknown IR node {expr!r}")

    # -- language (exact on the universe) -------------------------------------------------
    @property
    def lang_env(self) -> dict[str, frozenset[str]]:
        if self._lang_env is None:
            self._lang_env = _fixpoint(self.rules, self.lang, frozenset())
        return self._lang_env

    def lang(self, expr: Expr, env: dict[str, frozenset[str]] | None = None) -> frozenset[str]:
        env = self.lang_env if env is None else env
        u = self.u
        if isinstance(expr, Literal):
            return frozenset({expr.text}) if u.contains(expr.text) else frozenset()
        if isinstance(expr, Regex):
            return _regex_language(expr.pattern, expr.mode, u.alphabet, u.max_len)
        if isinstance(expr, Substrings):
            return frozenset(s for s in _substrings(expr.text) if u.contains(s))
        if isinstance(expr, AnyToken):
            return frozenset(s for s in u.strings if s)
        if isinstance(expr, Except):
            forbidden = self.forbidden(expr)
            return frozenset(s for s in u.strings if s and _avoids(s, forbidden))
        if isinstance(expr, Ref):
            return env[expr.name]
        if isinstance(expr, Seq):
            acc: set[str] = {""}
            for item in expr.items:
                acc = u.concat(acc, self.lang(item, env))
                if not acc:
                    break
            return frozenset(acc)
        if isinstance(expr, Alt):
            return frozenset().union(*(self.lang(item, env) for item in expr.items))
        if isinstance(expr, Repeat):
            return frozenset(u.power_range(set(self.lang(expr.item, env)), expr.min, expr.max))
        raise OracleError(f"unknown IR node {expr!r}")

    # -- viable prefixes (exact on the universe) ------------------------------------------
    def prefixes(self, expr: Expr, env: dict[str, frozenset[str]]) -> frozenset[str]:
        """Universe strings that begin some string of expr's unbounded language.

        Pref(A B) = Pref(A) | L(A).Pref(B) when both derive something: the split point of a
        witness lies either after the prefix or inside it, and in the second case the part
        before it is a universe string, so the bounded L(A) is enough."""
        u = self.u
        if not self.productive(expr):
            return frozenset()
        if isinstance(expr, Literal):
            text = expr.text
            return frozenset(text[:k] for k in range(len(text) + 1) if u.contains(text[:k]))
        if isinstance(expr, Regex):
            return _regex_prefixes(expr.pattern, expr.mode, u.alphabet, u.max_len)
        if isinstance(expr, Substrings):
            return frozenset(s for s in _substrings(expr.text) if u.contains(s))
        if isinstance(expr, AnyToken):
            return frozenset(u.strings)
        if isinstance(expr, Except):
            forbidden = self.forbidden(expr)
            return frozenset(s for s in u.strings if _avoids(s, forbidden))
        if isinstance(expr, Ref):
            return env[expr.name]
        if isinstance(expr, Seq):
            done: set[str] = {""}  # the language of the items so far
            result: set[str] = {""}
            for item in expr.items:
                result |= u.concat(done, self.prefixes(item, env))
                done = u.concat(done, self.lang(item))
            return frozenset(result)
        if isinstance(expr, Alt):
            return frozenset().union(*(self.prefixes(item, env) for item in expr.items))
        if isinstance(expr, Repeat):
            result = {""} if expr.min == 0 else set()
            if expr.max == 0 or not self.productive(expr.item):
                return frozenset(result)
            # The prefix ends inside copy j+1 of a run of k >= max(min, j+1) copies, k <= max;
            # the copies after it can always be completed because the item is productive.
            head_max = None if expr.max is None else expr.max - 1
            heads = u.power_range(set(self.lang(expr.item)), 0, head_max)
            result |= u.concat(heads, self.prefixes(expr.item, env))
            return frozenset(result)
        raise OracleError(f"unknown IR node {expr!r}")

    def prefix_env(self) -> dict[str, frozenset[str]]:
        return _fixpoint(self.rules, self.prefixes, frozenset())


def productive_rules(grammar: Grammar) -> frozenset[str]:
    """Names of the rules that derive at least one string (over all characters)."""
    env = _Oracle(grammar).productive_env
    return frozenset(name for name, ok in env.items() if ok)


def language(grammar: Grammar, alphabet: str, max_len: int) -> frozenset[str]:
    """Every string over `alphabet` of length <= max_len that `grammar` derives."""
    return _cached_language(grammar, _normalize_alphabet(alphabet), max_len)


def viable_prefixes(grammar: Grammar, alphabet: str, max_len: int) -> frozenset[str]:
    """Every string over `alphabet` of length <= max_len that begins some string of the
    grammar's unbounded language (completions may use any characters, of any length)."""
    return _cached_prefixes(grammar, _normalize_alphabet(alphabet), max_len)


# Grammars are frozen and hash by value (spans excluded), so answers can be memoized.
@lru_cache(maxsize=256)
def _cached_language(grammar: Grammar, alphabet: str, max_len: int) -> frozenset[str]:
    return _Oracle(grammar, alphabet, max_len).lang_env[grammar.start]


@lru_cache(maxsize=256)
def _cached_prefixes(grammar: Grammar, alphabet: str, max_len: int) -> frozenset[str]:
    return _Oracle(grammar, alphabet, max_len).prefix_env()[grammar.start]


def is_viable_prefix(grammar: Grammar, alphabet: str, max_len: int, prefix: str) -> bool:
    """Some string of ``language(grammar, alphabet, max_len)`` starts with `prefix`.

    Bounded (an under-approximation of viability): prefer `viable_prefixes` when comparing
    with a recognizer.
    """
    return any(s.startswith(prefix) for s in language(grammar, alphabet, max_len))


def accepts(grammar: Grammar, s: str) -> bool:
    """Whether `grammar` derives exactly `s`."""
    return s in language(grammar, "".join(set(s)), len(s))
