"""JSON strings with large length bounds, counted by the parser in blocks of characters.

One terminal for ``"(?:char){0,32767}"`` needs ~20 byte states per character (escapes and
UTF-8 included): hundreds of thousands of states, past any budget. Yet a token of a few
characters cannot tell the 1,000th character from the 1,001st: only the distance to a bound
matters near it. So a long string is written as a grammar whose *rules* count, and whose
terminals stay small.

Construction (exact). Let K be the block size and S = K**level the size of a *unit* (a unit of
level 1 is the terminal "exactly K characters"; a unit of level l+1 is K units of level l). A
string body of n characters, n in [lo, hi], followed by its closing quote, is

    n = S*a + r,   0 <= r < S   (a and r are unique for each n)

so the body is ``U^a`` then a *tail* of r characters and the quote, r in a range that depends
on a: for the smallest admissible a, r >= lo - S*a; for the largest, r <= hi - S*a; every a in
between allows all of [0, S-1]. Hence

    body = P(a_lo) tail[r_lo .. ] | Mid tail[0 .. S-1] | P(a_hi) tail[ .. r_hi]

where P(a) = U^a is a left-linear chain of rules (``P_a := P_{a-1} U``: the LR stack stays
shallow and each block costs one reduction), Mid derives P(a) for the a strictly between, and
each tail is the same construction one level down (at level 0 a tail is one small terminal
``(?:char){x,y}"``). Putting the quote inside the tail makes the split unique: a unit never
contains an unescaped quote, so the grammar is unambiguous and the parser never guesses
where the tail begins. The level is the smallest with at most `max_count` units per chain,
so a bound M costs O(K + M / K**level) rules and no terminal over K characters.
"""

from __future__ import annotations

from functools import cache
from typing import Callable

from grammarc import automata
from grammarc.frontends import json_formats as jf
from grammarc.ir import Alt, Expr, Literal, Ref, Regex, Seq

BLOCK = 32  # characters per block terminal (~640 byte states)
MAX_COUNT = 512  # units one chain of rules may count before units nest a level up
MAX_LENGTH = 2**64  # larger bounds are refused: each level (x32) adds ~60 rules (2**64: ~3 s)


@cache
def plain_fits(bound: int, max_states: int = automata.DEFAULT_MAX_STATES) -> bool:
    """Whether one terminal for strings of up to `bound` characters (or at least `bound` when
    unbounded above) stays within `max_states` byte states: those keep today's single regex."""
    one = automata.from_regex(jf.string_regex(0, 1)).n_states
    per_char = automata.from_regex(jf.string_regex(0, 2)).n_states - one
    return one + per_char * (bound - 1) <= max_states


class LongStrings:
    """Builds the block grammar of long strings into a rule table, sharing the counting rules
    of every length range built through the same instance."""

    def __init__(self, rules: dict[str, Expr], fresh: Callable[[str], str], *,
                 block: int = BLOCK, max_count: int = MAX_COUNT, unit: str = jf.UNIT):
        """`unit` is the regex of one character as written in JSON text (default: any
        character, every escape spelling); a pattern's character class gives another."""
        if block < 2 or max_count < 1:
            raise ValueError("block must be at least 2 and max_count at least 1")
        self.unit = unit
        self.rules = rules
        self.fresh = fresh
        self.block = block
        self.max_count = max_count
        self.added: list[str] = []  # names of the rules this instance defined
        self._chains: dict[int, list[Expr]] = {}  # level -> [P_1, P_2, ...]
        self._counts: dict[tuple[int, int, int | None], Expr | None] = {}
        self._tails: dict[tuple[int, int, int | None], Expr] = {}

    def string(self, lo: int, hi: int | None) -> Expr:
        """A complete JSON string (quotes included) of lo..hi characters (hi None: no bound)."""
        if hi is not None and not 0 <= lo <= hi:
            raise ValueError(f"empty length range [{lo}, {hi}]")
        bound = lo if hi is None else hi
        level = 1
        while bound // self.block ** level > self.max_count:
            level += 1
        return Seq((Literal('"'), self._tail(lo, hi, level)))

    # -- pieces ----------------------------------------------------------------------------
    def _define(self, hint: str, body: Expr) -> Ref:
        name = self.fresh(hint)
        self.rules[name] = body
        self.added.append(name)
        return Ref(name)

    def _tail(self, lo: int, hi: int | None, level: int) -> Expr:
        """lo..hi characters and the closing quote, counted in units of level `level`."""
        key = (level, lo, hi)
        if key in self._tails:
            return self._tails[key]
        if level == 0:
            expr: Expr = Regex(counted(self.unit, lo, hi) + '"')
        else:
            alts = []
            for a1, a2, r_lo, r_hi in _groups(lo, hi, self.block ** level):
                count = self._count(a1, a2, level)
                tail = self._tail(r_lo, r_hi, level - 1)
                alts.append(tail if count is None else Seq((count, tail)))
            body = alts[0] if len(alts) == 1 else Alt(tuple(alts))
            expr = self._define(f"str_{lo}_{'inf' if hi is None else hi}_chars", body)
        self._tails[key] = expr
        return expr

    def _count(self, a1: int, a2: int | None, level: int) -> Expr | None:
        """Units of level `level` repeated a1..a2 times (a2 None: no bound); None for zero times."""
        key = (level, a1, a2)
        if key in self._counts:
            return self._counts[key]
        size = self.block ** level
        expr: Expr | None
        if a1 == a2:
            expr = self._power(a1, level)
        elif a2 is None:  # Q := P(a1) | Q U   (left-recursive: a shallow stack)
            name = self.fresh(f"str_{a1}_or_more_x{size}")
            first = self._power(a1, level) or Literal("")
            self.rules[name] = Alt((first, Seq((Ref(name), self._unit(level)))))
            self.added.append(name)
            expr = Ref(name)
        else:
            items = [self._power(a, level) or Literal("") for a in range(a1, a2 + 1)]
            expr = self._define(f"str_{a1}_to_{a2}_x{size}", Alt(tuple(items)))
        self._counts[key] = expr
        return expr

    def _power(self, a: int, level: int) -> Expr | None:
        """Exactly `a` units of level `level` (None for a = 0): P_a := P_{a-1} U."""
        chain = self._chains.setdefault(level, [])
        while len(chain) < a:
            unit = self._unit(level)
            body = unit if not chain else Seq((chain[-1], unit))
            chain.append(self._define(f"str_{len(chain) + 1}_x{self.block ** level}", body))
        return chain[a - 1] if a else None

    def _unit(self, level: int) -> Expr:
        """Exactly block**level characters: a terminal at level 1, K units one level down above."""
        if level == 1:
            chain = self._chains.setdefault(0, [])
            if not chain:
                chain.append(self._define(f"str_block_{self.block}", Regex(counted(self.unit, self.block, self.block))))
            return chain[0]
        power = self._power(self.block, level - 1)
        assert power is not None
        return power


def counted(unit: str, lo: int, hi: int | None) -> str:
    """The regex of lo..hi repetitions of `unit` (hi None: no bound)."""
    if hi == 0:
        return ""
    if hi is None:
        rep = "*" if lo == 0 else ("+" if lo == 1 else f"{{{lo},}}")
    else:
        rep = f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"
    return f"(?:{unit}){rep}"


def _groups(lo: int, hi: int | None, size: int) -> list[tuple[int, int | None, int, int]]:
    """(a1, a2, r_lo, r_hi): lengths size*a + r for a in [a1, a2] (a2 None: unbounded) and r in
    [r_lo, r_hi], 0 <= r < size, together exactly [lo, hi], adjacent groups with equal r merged."""
    a_lo = lo // size
    groups: list[tuple[int, int | None, int, int]]
    if hi is None:
        groups = [(a_lo, a_lo, lo - size * a_lo, size - 1), (a_lo + 1, None, 0, size - 1)]
    else:
        a_hi = hi // size
        if a_lo == a_hi:
            return [(a_lo, a_lo, lo - size * a_lo, hi - size * a_lo)]
        groups = [(a_lo, a_lo, lo - size * a_lo, size - 1)]
        if a_lo + 1 <= a_hi - 1:
            groups.append((a_lo + 1, a_hi - 1, 0, size - 1))
        groups.append((a_hi, a_hi, 0, hi - size * a_hi))
    merged = [groups[0]]
    for a1, a2, r_lo, r_hi in groups[1:]:
        p1, p2, p_lo, p_hi = merged[-1]
        if (p_lo, p_hi) == (r_lo, r_hi):
            merged[-1] = (p1, a2, r_lo, r_hi)
        else:
            merged.append((a1, a2, r_lo, r_hi))
    return merged
