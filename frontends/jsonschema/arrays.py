"""Arrays: `prefixItems`/`items`, item counts, `contains`/`minContains`/`maxContains`."""

from __future__ import annotations

from math import comb

from grammarc.ir import Alt, Expr, Literal, Ref, Repeat, Seq

from .layout import MAX_INDENT_DEPTH
from .keywords import TYPES
from .merge import Merged
from .values import json_key, json_kind
from .negation import CannotNegate
from .documents import Node

MAX_UNIQUE_VALUES = 12  # listed item values under uniqueItems
MAX_UNIQUE_STATES = 4096  # (position, set of values used) states under uniqueItems
MAX_CONTAINS_SCHEMAS = 4  # contains schemas on one array (2**k states)
MAX_ITEMS_BOUND = 200_000  # largest item count a counted repetition may expand to (the compiler's limit)


class Arrays:
    """Arrays: prefixItems/items, counts, contains."""

    def _array(self, m: Merged, depth: int, hint: str) -> Expr | None:
        if self.layout.indent is not None and depth >= MAX_INDENT_DEPTH:
            return None
        lo, hi = m.min_items, m.max_items
        if hi is not None and lo > hi:
            return None
        members = m.arrays or []
        if m.unique is not None and not (hi is not None and hi <= 1):
            why = "together with contains" if m.contains is not None else None
            if why is None:
                unique = self._array_unique(members, lo, hi, depth, hint)
                if isinstance(unique, str):
                    why = unique
                else:
                    return unique
            self.unsupported("uniqueItems", m.unique.rsplit("/", 1)[0], why)
        plen = max((len(pre) for _, pre, _ in members), default=0)
        prefix: list[Expr | None] = []
        for i in range(plen):
            conj = tuple(pre[i] if i < len(pre) else rest for _, pre, rest in members if i < len(pre) or rest is not None)
            prefix.append(self.value(conj, depth + 1, hint=f"{hint}_item{i}"))
        rest_conj = tuple(rest for _, pre, rest in members if rest is not None)
        rest = self.value(rest_conj, depth + 1, hint=f"{hint}_item")
        # an impossible prefix item caps the length
        for i, p in enumerate(prefix):
            if p is None:
                hi = i if hi is None else min(hi, i)
                prefix = prefix[:i]
                rest = None
                break
        if rest is None:
            top = len(prefix)
            hi = top if hi is None else min(hi, top)
        if hi is not None and lo > hi:
            return None
        if lo > MAX_ITEMS_BOUND:
            self.unsupported("minItems", m.items_ptrs[0], f"item counts above {MAX_ITEMS_BOUND} are not supported")
            lo = 0
        if hi is not None and hi > MAX_ITEMS_BOUND:
            self.unsupported("maxItems", m.items_ptrs[1], f"item counts above {MAX_ITEMS_BOUND} are not supported")
            hi = None
        if m.contains is not None:
            return self._array_contains(m, prefix, rest, lo, hi, depth, hint)
        return self._array_layout(prefix, rest, lo, hi, depth)


    def _array_unique(self, members, lo: int, hi: int | None, depth: int, hint: str) -> Expr | None | str:
        """uniqueItems where every item is one of a few listed values (enum, const, boolean,
        null): a state per (position, set of values used), each item a value not used yet.
        Exact; a string says why not (items not listed, or too many states)."""
        plen = max((len(pre) for _, pre, _ in members), default=0)
        sets = []
        for i in range(plen):
            conj = tuple(pre[i] if i < len(pre) else rest for _, pre, rest in members if i < len(pre) or rest is not None)
            sets.append(self._listed_values(conj))
        rest_conj = tuple(rest for _, pre, rest in members if rest is not None)
        rest_values = self._listed_values(rest_conj)
        for i, vals in enumerate(sets):
            if vals is not None and not vals:  # an impossible prefix item caps the length
                hi = i if hi is None else min(hi, i)
                sets, rest_values = sets[:i], []
                break
        if rest_values is not None and not rest_values:
            hi = len(sets) if hi is None else min(hi, len(sets))
        if any(v is None for v in sets) or (rest_values is None and (hi is None or hi > len(sets))):
            return "its items are not a short list of values (enum, const, boolean or null)"
        if hi is not None and lo > hi:
            return None
        values: dict = {}  # json_key -> (index, value)
        for vals in sets + [rest_values or []]:
            for v in vals:
                values.setdefault(json_key(v), (len(values), v))
        allowed = [frozenset(values[json_key(v)][0] for v in vals) for vals in sets + [rest_values or []]]
        n = len(values)
        top = n if hi is None else min(hi, n)
        if lo > top:
            return None
        states = _unique_states(allowed, top)
        if n > MAX_UNIQUE_VALUES or states > MAX_UNIQUE_STATES:
            return f"distinct items of {n} values need {states} states (limit {MAX_UNIQUE_STATES})"
        items = {i: self.literal_value(v, depth + 1) for i, v in values.values()}
        sep = self.layout.sep(depth)
        names: dict = {}
        live: dict = {}

        def state(pos: int, used: int) -> Expr | None:
            """Items after `pos` items (the set `used` of values written), None if no way on."""
            key = (min(pos, len(sets)), used)
            if key in live:
                return live[key]
            live[key] = None
            count = bin(used).count("1")
            alts: list[Expr] = [Literal("")] if count >= lo else []
            if hi is None or count < hi:
                for i in sorted(allowed[key[0]]):
                    if not used >> i & 1:
                        nxt = state(pos + 1, used | 1 << i)
                        if nxt is not None:
                            alts.append(Seq((*sep, items[i], nxt)))
            if not alts:
                return None
            name = self.fresh(f"{hint}_unique")
            self.rules[name] = alts[0] if len(alts) == 1 else Alt(tuple(alts))
            self.internal.add(name)
            live[key] = Ref(name)
            return live[key]

        first = []
        if hi is None or hi > 0:
            for i in sorted(allowed[0]):
                nxt = state(1, 1 << i)
                if nxt is not None:
                    first.append(Seq((items[i], nxt)))
        del state  # a recursive closure is a reference cycle: unbound, refcounting frees it
        body = None if not first else first[0] if len(first) == 1 else Alt(tuple(first))
        return self.layout.container("[]", depth, lo == 0, body)

    def _listed_values(self, conj) -> list | None:
        """The values valid under every schema of `conj` when it lists them (enum/const, or
        only null and booleans), distinct; None when it does not."""
        conj = tuple(n for n in conj if n.schema is not True and n.schema != {})
        if not conj:
            return None
        saved = self.scope
        try:
            nodes = self._collect(conj)
            if any(n.schema is False for n in nodes):
                return []
            if any(k in n.schema for n in nodes for k in ("anyOf", "oneOf", "nullable")):
                return None
            m = Merged(types=set(TYPES))
            for node in nodes:
                self._merge_one(m, node)
        finally:
            self.scope = saved
        if m.enum is not None:
            cands = m.enum
        elif m.types <= {"null", "boolean"}:
            cands = ([None] if "null" in m.types else []) + ([True, False] if "boolean" in m.types else [])
        else:
            return None
        out, seen = [], set()
        for v in cands:
            kind = json_kind(v)
            if (kind == "integer" and "integer" not in m.types) or (kind != "integer" and kind not in m.types):
                continue
            if json_key(v) not in seen and self._valid(v, conj):
                seen.add(json_key(v))
                out.append(v)
        return out

    def _array_layout(self, prefix: list[Expr], rest: Expr | None, lo: int, hi: int | None, depth: int) -> Expr | None:
        """'[' items ']' with len(prefix) leading item kinds, then `rest` items, lo..hi items."""
        sep = self.layout.sep(depth)
        p = len(prefix) if hi is None else min(len(prefix), hi)

        def tail(j: int) -> Expr | None:
            """Items from index j on, after at least one item (each preceded by a separator)."""
            if j < p:
                after = tail(j + 1)
                item = Seq((*sep, prefix[j], *( [after] if after is not None else [])))
                return item if j < lo else Repeat(item, 0, 1)
            if rest is None:
                return None
            rlo = max(0, lo - j)
            rhi = None if hi is None else hi - j
            if rhi is not None and rhi <= 0:
                return None
            return Repeat(Seq((*sep, rest)), rlo, rhi)

        if p > 0:
            after = tail(1)
            content = Seq((prefix[0],) + ((after,) if after is not None else ()))
        elif rest is not None and (hi is None or hi > 0):
            rlo = max(0, lo - 1)
            rhi = None if hi is None else hi - 1
            more = Repeat(Seq((*sep, rest)), rlo, rhi)
            content = Seq((rest, more)) if rhi != 0 else rest
        else:
            content = None
        del tail  # a recursive closure is a reference cycle: unbound, refcounting frees it
        return self.layout.container("[]", depth, lo == 0, content)


    def _array_contains(self, m, prefix, rest, lo, hi, depth, hint):
        ptr = m.contains[-1].ptr.rsplit("/", 1)[0]
        need = 1 if m.min_contains is None else m.min_contains
        if hi is not None and hi < need:  # fewer items allowed than contains needs
            return None
        if (len(m.contains) > 1 and not prefix and hi is None and lo <= 1 and m.min_contains is None
                and m.max_contains is None and len(m.contains) <= MAX_CONTAINS_SCHEMAS):
            return self._array_all_contains(m, rest, depth, hint)
        if len(m.contains) > 1 or prefix or hi is not None or lo > need:
            self.unsupported("contains", ptr, "contains together with prefixItems, maxItems, minItems or another contains")
            return self._array_layout(prefix, rest, lo, hi, depth)
        if m.max_contains is not None:
            return self._array_max_contains(m, rest, lo, need, m.max_contains, depth, hint, ptr)
        if need == 0:
            return self._array_layout(prefix, rest, lo, hi, depth)
        if rest is None:
            return None
        rest_conj = tuple(r for _, _, r in (m.arrays or []) if r is not None)
        hit = self.value(rest_conj + (m.contains[0],), depth + 1, hint=f"{hint}_contains")
        if hit is None:
            return None
        sep = self.layout.sep(depth)
        gap = Repeat(Seq((rest, *sep)), 0, None)  # items before a hit
        more = Seq((Repeat(Seq((*sep, rest)), 0, None), *sep, hit))
        body = Seq((gap, hit, Repeat(more, need - 1, need - 1), Repeat(Seq((*sep, rest)), 0, None)))
        return Seq((*self.layout.open("[", depth), body, *self.layout.close("]", depth)))


    def _array_all_contains(self, m, rest, depth, hint):
        """Arrays with, for each of several `contains` schemas, some item matching it.

        A state per set of contains schemas matched so far; an item may count for any set
        T of them that it matches (an item ``I and C_T``), so the language is exact without
        negating anything: 2**k states and 2**k - 1 hit kinds for k contains schemas."""
        if rest is None:
            return None
        k = len(m.contains)
        full = (1 << k) - 1
        rest_conj = tuple(r for _, _, r in (m.arrays or []) if r is not None)
        hits = {}
        for t in range(1, full + 1):
            conj = rest_conj + tuple(c for i, c in enumerate(m.contains) if t >> i & 1)
            hit = self.value(conj, depth + 1, hint=f"{hint}_contains")
            if hit is not None:
                hits[t] = hit
        # the sets of contains schemas from which every one can still be matched
        live = {full}
        changed = True
        while changed:
            changed = False
            for s_ in range(full + 1):
                if s_ not in live and any((s_ | t) in live for t in hits):
                    live.add(s_)
                    changed = True
        if 0 not in live:
            return None
        sep = self.layout.sep(depth)
        names = {s_: self.fresh(f"{hint}_contains_{s_}") for s_ in live}

        def moves(s_: int, head: tuple) -> list:
            out = [Seq((*head, rest, Ref(names[s_])))]
            out += [Seq((*head, hit, Ref(names[s_ | t]))) for t, hit in hits.items() if (s_ | t) != s_ and (s_ | t) in live]
            return out

        for s_, name in names.items():
            alts = ([Literal("")] if s_ == full else []) + moves(s_, tuple(sep))
            self.rules[name] = alts[0] if len(alts) == 1 else Alt(tuple(alts))
            self.internal.add(name)
        first = moves(0, ())
        body = first[0] if len(first) == 1 else Alt(tuple(first))
        return Seq((*self.layout.open("[", depth), body, *self.layout.close("]", depth)))

    def _array_max_contains(self, m, rest, lo, need, top, depth, hint, ptr):
        """Arrays with need..top items matching `contains`: each item is a hit (contains) or a
        miss (its negation), ``(miss ,)* hit ((, miss)* , hit){need-1,top-1} (, miss)*``,
        plus the arrays of misses only when need is 0. Needs `contains` to be negatable."""
        if top < need:
            return None
        if rest is None:
            return Seq(tuple(self.layout.empty("[]"))) if need == 0 else None
        contains = m.contains[0]
        try:
            schema, base = self._negate(contains)
        except CannotNegate as exc:
            self.unsupported("maxContains", ptr, exc.why)
            return self._array_layout([], rest, lo, None, depth) if need == 0 else None
        rest_conj = tuple(r for _, _, r in (m.arrays or []) if r is not None)
        hit = self.value(rest_conj + (contains,), depth + 1, hint=f"{hint}_contains")
        miss = self.value(rest_conj + (Node(schema, contains.ptr, base),), depth + 1, hint=f"{hint}_other")
        sep = self.layout.sep(depth)
        parts = []
        if need == 0:
            parts.append(self._array_layout([], miss, lo, None, depth))
        first = max(need, 1)
        if hit is not None and top >= first:
            misses_before = Repeat(Seq((miss, *sep)), 0, None) if miss is not None else None
            misses_after = Repeat(Seq((*sep, miss)), 0, None) if miss is not None else None
            more = Seq(tuple(x for x in (misses_after, *sep, hit) if x is not None))
            items = [misses_before, hit, Repeat(more, first - 1, top - 1), misses_after]
            body = Seq(tuple(x for x in items if x is not None))
            parts.append(Seq((*self.layout.open("[", depth), body, *self.layout.close("]", depth))))
        parts = [p for p in parts if p is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))


def _unique_states(allowed: list[frozenset[int]], top: int) -> int:
    """A bound on the (position, values used) states of `_array_unique`: ``allowed[i]`` are
    the values prefix position i takes, the last entry those of every later position, and
    at most `top` items are written. At prefix position i the values used are i of those
    the first i positions take; after the prefix, the prefix's choice plus some of the rest's
    values. (Counting every subset of every value at every position refused small schemas:
    two enums of 4 and 6 values and three booleans and null "needed" 6,144 states.)"""
    prefix = len(allowed) - 1
    taken: frozenset[int] = frozenset()  # the values the first i positions take
    states = 0
    for i in range(min(top, prefix) + 1):
        states += comb(len(taken), i)
        if i < prefix:
            taken |= allowed[i]
    if top > prefix:
        rest = len(allowed[prefix])
        states += comb(len(taken), prefix) * sum(comb(rest, j) for j in range(1, min(rest, top - prefix) + 1))
    return states
