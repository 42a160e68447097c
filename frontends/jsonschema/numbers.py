"""Numbers: bounds, integers and `multipleOf`, as regexes or digit automata."""

from __future__ import annotations

import math
from copy import copy
from decimal import Decimal

import numpy as np

from grammarc import automata
from grammarc.errors import StateBudgetExceeded
from grammarc.ir import Alt, Expr, Literal, Ref, Regex, Repeat, Seq

from . import numeric_ranges as nr
from .layout import NUMBER_RFC
from .merge import Merged
MAX_MODULUS = 2000
MAX_PRODUCT_STATES = 20_000  # divisibility automaton x bounds automaton
NUMERAL_BYTES = b"-.0123456789"


class Numbers:
    """Numbers: ranges, integers, multipleOf."""

    def _numeral(self, d: Decimal) -> str:
        """Every plain numeral of the number `d` (integers: with a zero fraction if allowed)."""
        if not self.int_tail and d == d.to_integral_value():
            return nr.integer_range_regex(int(d), int(d))
        return nr.decimal_range_regex(d, False, d, False)


    def _number(self, m: Merged, fractions: bool) -> Expr | None:
        integer_only = not fractions
        if m.not_multiple_of:
            return self._not_multiples(m, integer_only)
        if m.multiple_of:
            return self._multiple_of(m, integer_only)
        if m.lo is None and m.hi is None:
            if integer_only:
                return Regex(r"-?(?:0|[1-9][0-9]*)" + self.int_tail)
            return Regex(NUMBER_RFC)
        if integer_only:
            a, b = nr.integer_bounds(m.lo, m.lo_strict, m.hi, m.hi_strict)
            if a is not None and b is not None and a > b:
                return None
            return Regex(_group(nr.integer_range_regex(a, b)) + self.int_tail)
        pattern = nr.decimal_range_regex(m.lo, m.lo_strict, m.hi, m.hi_strict)
        return None if pattern is None else Regex(pattern)


    def _fractions_only(self, m: Merged) -> Expr | None:
        """Non-integer numbers (``not: {type: integer}``), plain notation, within the bounds."""
        pattern = nr.fraction_range_regex(m.lo, m.lo_strict, m.hi, m.hi_strict)
        if pattern is not None and (m.multiple_of or m.not_multiple_of):
            return self._not_multiples(m, False, pattern)
        return None if pattern is None else Regex(pattern)


    def _multiple_of(self, m: Merged, integer_only: bool) -> Expr | None:
        values = {v for v, _ in m.multiple_of}
        ptr = m.multiple_of[-1][1]
        step = _lcm_decimal(values)
        # step = a * 10**-s with a an integer
        sign, digits, exp = step.normalize().as_tuple()
        a = int("".join(map(str, digits)))
        s = -exp if exp < 0 else 0
        if exp > 0:
            a *= 10**exp
        if integer_only and s > 0:
            # an integer x is a multiple of a/10**s iff x*10**s is divisible by a
            g = math.gcd(a, 10**s)
            a, s = a // g, 0
        if m.lo is not None or m.hi is not None:
            return self._bounded_multiples(m, step, integer_only, ptr, a, s)
        if a == 1:
            if s == 0:
                return Regex(r"-?(?:0|[1-9][0-9]*)" + (self.int_tail if integer_only else r"(?:\.0+)?"))
            return Regex(rf"-?(?:0|[1-9][0-9]*)(?:\.[0-9]{{1,{s}}}0*)?")
        if a > MAX_MODULUS:
            self.unsupported("multipleOf", ptr.rsplit("/", 1)[0], f"divisibility by {a} needs too many states")
            return self._number(_replace(m, multiple_of=None), not integer_only)
        if s > 0:
            return self._divisible_decimal(a, s)
        return self._divisible(a, tail=self.int_tail if integer_only else r"(?:\.0+)?")


    def _divisible_decimal(self, a: int, s: int, signed: bool = True) -> Expr:
        """Plain numerals that are multiples of a/10**s (a > 1): x*10**s is divisible by a.

        States: ("i", r) in the integer part with r = its value mod a; ("f", r, j) after j
        fraction digits, r = (digits read so far) mod a. A numeral may end where the value,
        padded to s fraction digits, is 0 mod a; past s fraction digits only zeros may follow.
        """
        key = ("divisible", a, s, signed)
        if key in self.memo:
            return self.memo[key]
        edges: dict = {}
        final: dict = {}

        def step(r, ds):
            out: dict = {}
            for d in ds:
                out.setdefault((r * 10 + d) % a, []).append(d)
            return out

        for r in range(a):
            final[("i", r)] = (r * 10**s) % a == 0
            edges[("i", r)] = [(_digit_set(ds), ("i", t)) for t, ds in step(r, range(10)).items()]
            edges[("i", r)].append((r"\.", ("f", r, 0)))
            for j in range(s):
                edges[("f", r, j)] = [(_digit_set(ds), ("f", t, j + 1)) for t, ds in step(r, range(10)).items()]
                final[("f", r, j)] = j > 0 and (r * 10 ** (s - j)) % a == 0
            edges[("f", r, s)] = [("0", ("f", r, s))]
            final[("f", r, s)] = r == 0
        edges[("zero",)] = [(r"\.", ("f", 0, 0))]
        final[("zero",)] = True
        starts = [("0", ("zero",))] + [(_digit_set(ds), ("i", t)) for t, ds in step(0, range(1, 10)).items()]
        body = self._automaton_rules(f"multiple_of_{a}e_{s}", edges, final, starts)
        expr = self.define(f"multiple_of_{a}e_{s}", Seq((Repeat(Literal("-"), 0, 1), body)) if signed else body)
        self.memo[key] = expr
        return expr


    def _automaton_rules(self, hint: str, edges: dict, final: dict, starts: list) -> Expr:
        """A finite automaton as right-linear rules (dead states dropped); the start choice."""
        live = {q for q, ok in final.items() if ok}
        changed = True
        while changed:
            changed = False
            for q, out in edges.items():
                if q not in live and any(t in live for _, t in out):
                    live.add(q)
                    changed = True
        names = {q: self.fresh(hint + "_" + "_".join(map(str, q))) for q in edges if q in live}

        def choice(out, accept: bool) -> Expr:
            alts: list[Expr] = [Literal("")] if accept else []
            alts += [Seq((Regex(label), Ref(names[t]))) for label, t in out if t in live]
            return alts[0] if len(alts) == 1 else Alt(tuple(alts))

        for q, name in names.items():
            self.rules[name] = choice(edges[q], final[q])
        return choice(starts, False)


    def _divisible(self, a: int, signed: bool = True, tail: str = r"(?:\.0+)?") -> Expr:
        """Canonical integers divisible by `a` (then `tail`): a DFA as right-linear rules."""
        key = ("divisible", a, signed, tail)
        if key in self.memo:
            return self.memo[key]
        names = [self.fresh(f"mod{a}_r{r}") for r in range(a)]
        for r in range(a):
            by_target: dict[int, list[int]] = {}
            for d in range(10):
                by_target.setdefault((r * 10 + d) % a, []).append(d)
            alts: list[Expr] = []
            if r == 0:
                alts.append(Literal(""))
            for t, ds in by_target.items():
                alts.append(Seq((Regex(_digit_set(ds)), Ref(names[t]))))
            self.rules[names[r]] = Alt(tuple(alts)) if len(alts) > 1 else alts[0]
        start = []
        for d in range(1, 10):
            start.append((d % a, d))
        by_target = {}
        for t, d in start:
            by_target.setdefault(t, []).append(d)
        first = [Seq((Regex(_digit_set(ds)), Ref(names[t]))) for t, ds in by_target.items()]
        body = Seq(((Repeat(Literal("-"), 0, 1),) if signed else ()) + (Alt((Literal("0"), *first)),)
                   + ((Regex(tail),) if tail else ()))
        expr = self.define(f"multiple_of_{a}", body)
        self.memo[key] = expr
        return expr


    def _bounded_multiples(self, m, step: Decimal, integer_only: bool, ptr: str, a: int, s: int) -> Expr | None:
        """Multiples within bounds: listed one by one when there are at most 256 of them;
        with one bound open and 0 inside the range, the unsigned (or negated) divisibility
        automaton for the open side plus the few multiples between 0 and the closed bound."""
        lo = m.lo if m.lo is not None else None
        hi = m.hi if m.hi is not None else None

        def listed(a_: Decimal, a_strict: bool, b_: Decimal, b_strict: bool) -> list[Expr]:
            k = math.ceil(a_ / step)
            parts = []
            while k * step <= b_:
                v = k * step
                ok = (v > a_ or (v == a_ and not a_strict)) and (v < b_ or (v == b_ and not b_strict))
                if ok and (not integer_only or v == v.to_integral_value()):
                    parts.append(Regex(self._numeral(v) if integer_only else nr.decimal_range_regex(v, False, v, False)))
                k += 1
            return parts

        unsigned = None
        if (lo is None) != (hi is None) and a <= MAX_MODULUS:
            near = lo if hi is None else hi
            strict = m.lo_strict if hi is None else m.hi_strict
            if (near < 0 if hi is None else near > 0) or (near == 0 and not strict):
                if abs(near) / step <= 256:
                    unsigned = self._unsigned_multiples(a, s, integer_only)
        if unsigned is not None:
            zero = Regex(self._numeral(Decimal(0)) if integer_only else nr.decimal_range_regex(Decimal(0), False, Decimal(0), False))
            if hi is None:  # x >= lo with lo <= 0: every non-negative multiple (and -0), listed negatives
                parts = [unsigned, zero] + listed(lo, m.lo_strict, Decimal(0), True)
            else:  # x <= hi with hi >= 0: every non-positive multiple, listed positives
                parts = [Seq((Literal("-"), unsigned)), zero] + listed(Decimal(0), True, hi, m.hi_strict)
            return Alt(tuple(parts))
        if lo is None or hi is None or (hi - lo) / step > 256:
            return self._multiples_in_range(m, integer_only, ptr, a, s)
        parts = listed(lo, m.lo_strict, hi, m.hi_strict)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))


    def _multiples_in_range(self, m, integer_only: bool, ptr: str, a: int, s: int) -> Expr | None:
        """Multiples of a/10**s within wide or open bounds (see `_number_automaton`)."""
        return self._number_automaton(m, integer_only, [(a, s, ptr, True)])

    def _not_multiples(self, m: Merged, integer_only: bool, pattern: str | None = None) -> Expr | None:
        """Numbers that are NOT multiples of some steps (``not: {multipleOf}``), with any
        multipleOf and bounds beside: one automaton (see `_number_automaton`)."""
        steps = []
        if m.multiple_of:
            a, s = _step_digits(_lcm_decimal({v for v, _ in m.multiple_of}))
            steps.append((a, s, m.multiple_of[-1][1], True))
        for v, ptr in m.not_multiple_of or ():
            a, s = _step_digits(v)
            steps.append((a, s, ptr, False))
        return self._number_automaton(m, integer_only, steps, pattern)

    def _number_automaton(self, m, integer_only: bool, steps: list, pattern: str | None = None) -> Expr | None:
        """Plain numerals within the bounds that are (or, with False, are not) multiples of
        each a/10**s in `steps`: the product of the bounds' automaton with divisibility
        automata (`divisibility_dfa`) and their complements, as rules. Exact over plain
        numerals (``-0`` included); refused past MAX_PRODUCT_STATES."""
        if pattern is not None:  # given: non-integers only
            pass
        elif integer_only:
            x, y = nr.integer_bounds(m.lo, m.lo_strict, m.hi, m.hi_strict)
            if x is not None and y is not None and x > y:
                return None
            pattern = _group(nr.integer_range_regex(x, y)) + self.int_tail
        else:
            pattern = nr.decimal_range_regex(m.lo, m.lo_strict, m.hi, m.hi_strict)
            if pattern is None:
                return None
        try:
            dfa = automata.from_regex(pattern, max_states=MAX_PRODUCT_STATES)
            for a, s, ptr, positive in steps:
                if a > MAX_MODULUS or a * (s + 2) > MAX_PRODUCT_STATES:
                    raise StateBudgetExceeded(f"divisibility by {a} needs too many states")
                div = divisibility_dfa(a, s)
                if not positive:
                    div = automata.complement(div, max_states=MAX_PRODUCT_STATES)
                dfa = automata.intersect(dfa, div, max_states=MAX_PRODUCT_STATES)
        except StateBudgetExceeded:
            where = ptr.rsplit("/", 1)[0]
            self.unsupported("multipleOf", where, f"multipleOf {a}e-{s} within these bounds needs more than {MAX_PRODUCT_STATES} states")
            return Regex(pattern)
        if dfa.is_empty:
            return None
        return self._byte_dfa_rules(dfa, f"multiple_of_{steps[0][0]}_in_range")

    def _byte_dfa_rules(self, dfa, hint: str) -> Expr:
        """An ASCII byte DFA (numerals) as right-linear rules."""
        edges: dict = {}
        final: dict = {}
        for q in range(dfa.n_states):
            final[(q,)] = bool(dfa.accept[q])
            by_target: dict = {}
            for b in NUMERAL_BYTES:
                t = dfa.step(q, b)
                if t >= 0:
                    by_target.setdefault(t, []).append(chr(b))
            edges[(q,)] = [(_char_set(cs), (t,)) for t, cs in by_target.items()]
        body = self._automaton_rules(hint, edges, final, list(edges[(0,)]))
        if final[(0,)]:
            body = Alt((Literal(""), body))
        return self.define(hint, body)

    def _unsigned_multiples(self, a: int, s: int, integer_only: bool) -> Expr:
        """Numerals without a sign of the non-negative multiples of a/10**s."""
        tail = self.int_tail if integer_only else r"(?:\.0+)?"
        if a == 1 and s == 0:
            return Regex(r"(?:0|[1-9][0-9]*)" + tail)
        if a == 1:
            return Regex(rf"(?:0|[1-9][0-9]*)(?:\.[0-9]{{1,{s}}}0*)?")
        if s == 0:
            return self._divisible(a, signed=False, tail=tail)
        return self._divisible_decimal(a, s, signed=False)



def _replace(m: Merged, **changes) -> Merged:
    """A copy of `m` with `changes` (`dataclasses.replace` would pass every field to
    `Merged`, which takes its types only)."""
    out = copy(m)
    for name, value in changes.items():
        setattr(out, name, value)
    return out


def _lcm_decimal(values) -> Decimal:
    """The least common multiple of positive decimals: multiples of all = multiples of it."""
    values = list(values)
    scale = max(max(0, -v.normalize().as_tuple().exponent) for v in values)
    ints = [int(v * 10**scale) for v in values]
    acc = 1
    for i in ints:
        acc = acc * i // math.gcd(acc, i)
    return Decimal(acc) / Decimal(10**scale)


def _step_digits(step: Decimal) -> tuple[int, int]:
    """(a, s) with step = a / 10**s, a an integer."""
    _, digits, exp = step.normalize().as_tuple()
    a = int("".join(map(str, digits)))
    if exp > 0:
        return a * 10**exp, 0
    return a, -exp


def _group(pattern: str) -> str:
    return "(?:" + pattern + ")"


def _digit_set(ds: list[int]) -> str:
    if len(ds) == 1:
        return str(ds[0])
    if ds == list(range(ds[0], ds[-1] + 1)):
        return f"[{ds[0]}-{ds[-1]}]"
    return "[" + "".join(map(str, ds)) + "]"


def _char_set(cs: list[str]) -> str:
    digits = [int(c) for c in cs if c.isdigit()]
    parts = [re_escape(c) for c in cs if not c.isdigit()]
    if digits:
        parts.append(_digit_set(digits))
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def re_escape(c: str) -> str:
    return "\\" + c if c in "-." else c


def divisibility_dfa(a: int, s: int):
    """Plain JSON numerals ``-?(0|[1-9][0-9]*)(\\.[0-9]+)?`` of multiples of a/10**s: the value
    times 10**s is divisible by a, and fraction digits past the s-th are zeros.

    States: start, after '-', after a leading 0, ("i", r) in the integer part (r: its value
    mod a), ("f", r, j) after j <= s fraction digits (r: all digits read, mod a), ("z", r)
    past s fraction digits (zeros only). A numeral may end where the value padded to s
    fraction digits is 0 mod a.
    """
    ids: dict = {}

    def sid(q) -> int:
        if q not in ids:
            ids[q] = len(ids)
        return ids[q]

    for q in ("start", "minus", "zero"):
        sid(q)
    rows: dict = {}
    accept: dict = {}
    todo = ["start", "minus", "zero"]
    seen = set(todo)

    def edge(q, ch: str, t) -> None:
        rows.setdefault(q, {})[ord(ch)] = t
        if t not in seen:
            seen.add(t)
            todo.append(t)

    while todo:
        q = todo.pop()
        rows.setdefault(q, {})
        if q in ("start", "minus"):
            if q == "start":
                edge(q, "-", "minus")
            edge(q, "0", "zero")
            for d in range(1, 10):
                edge(q, str(d), ("i", d % a))
            accept[q] = False
        elif q == "zero":
            edge(q, ".", ("f", 0, 0))
            accept[q] = True
        elif q[0] == "i":
            r = q[1]
            for d in range(10):
                edge(q, str(d), ("i", (r * 10 + d) % a))
            edge(q, ".", ("f", r, 0))
            accept[q] = (r * 10**s) % a == 0
        elif q[0] == "f":
            _, r, j = q
            if j < s:
                for d in range(10):
                    edge(q, str(d), ("f", (r * 10 + d) % a, j + 1))
                accept[q] = j > 0 and (r * 10 ** (s - j)) % a == 0
            else:  # j == s: zeros only from here (s == 0: right after the point)
                edge(q, "0", ("z", r))
                accept[q] = j > 0 and r == 0
        else:  # ("z", r)
            edge(q, "0", q)
            accept[q] = q[1] == 0
    for q in rows:
        sid(q)
    trans = np.full((len(ids), 256), -1, dtype=np.int64)
    acc = np.zeros(len(ids), dtype=bool)
    for q, row in rows.items():
        for b, t in row.items():
            trans[ids[q], b] = sid(t)
        acc[ids[q]] = accept[q]
    return automata.from_table(trans, acc)
