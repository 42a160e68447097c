"""Object members laid out: in the schema's order (linear), or in any order (subsets, bounded)."""

from __future__ import annotations

from math import comb

from grammarc.ir import Alt, Expr, Literal, Ref, Repeat, Seq

from .layout import key_literal

MAX_COUNT_STATES = 4000
MAX_WITNESS_COUNT = 64  # member counts enumerated around a witness member (see _witnessed_extras)
MAX_ANY_ORDER_STATES = 512  # (set of named properties written, member count) pairs; see docs/schema.rst
# a continuation that is only the empty one; compared by identity (an IR node compared with
# == runs its generated __eq__, a Python call per comparison)
_EPS = "eps"


class Members:
    """Member sequences of an object: named properties, then extra (additional/pattern) members."""

    def _member(self, key: Expr, value: Expr) -> Expr:
        return Seq((key, *self.layout.colon(), value))


    def _members_repeat(self, member: Expr, lo: int, hi: int | None, depth: int, pair: str) -> Expr:
        sep = self.layout.sep(depth)
        parts = []
        if lo == 0:
            parts.append(Seq(tuple(self.layout.empty(pair))))
        if hi is None or hi > 0:
            more = Repeat(Seq((*sep, member)), max(0, lo - 1), None if hi is None else hi - 1)
            parts.append(Seq((*self.layout.open(pair[0], depth), member, more, *self.layout.close(pair[1], depth))))
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))


    def _object_layout(self, usable, extras, min_props, max_props, depth, hint, witness: Expr | None = None) -> Expr | None:
        """Named members in order (optional ones may be absent), then extra members; with a
        `witness` (an extra member), at least one of the extra members is one.

        R(i, c) = the members from index i on, c members already written (capped): linear in
        the number of properties times the count cap, never exponential.
        """
        if max_props is not None and min_props > max_props:
            return None
        n = len(usable)
        cap = (max_props + 1) if max_props is not None else max(min_props, 1)
        if (n + 1) * (cap + 1) > MAX_COUNT_STATES:
            self.unsupported("maxProperties", "#", "too many counting states")
        sep = self.layout.sep(depth)
        extra_members = [self._member(k, v) for k, v in extras]
        extra = None
        if extra_members:
            extra = extra_members[0] if len(extra_members) == 1 else Alt(tuple(extra_members))
            extra = self.define(f"{hint}_extra", extra, internal=True)
        memo: dict = {}
        members: dict[int, Expr] = {}  # property i's member: the same at every count

        def state(i: int, c: int) -> Expr | None | str:
            """Returns an Expr, None (impossible) or 'eps' (only the empty continuation)."""
            key = (i, c)
            if key in memo:
                return memo[key]
            memo[key] = None  # no cycles: i only grows
            if max_props is not None and c > max_props:
                return None
            if i == n:
                need = max(0, min_props - c)
                room = None if max_props is None else max_props - c
                if witness is not None:
                    res = self._witnessed_extras(extra, witness, c, need, room, depth, hint) if extra is not None else None
                elif extra is None:
                    res = _EPS if need == 0 else None
                elif room == 0:
                    res = _EPS if need == 0 else None
                elif c == 0:
                    more = Repeat(Seq((*sep, extra)), max(0, need - 1), None if room is None else room - 1)
                    first = Seq((extra, more))
                    res = Alt((first, Literal(""))) if need == 0 else first
                    res = first if need > 0 else ("opt", first)
                else:
                    res = Repeat(Seq((*sep, extra)), need, room)
                memo[key] = res
                return res
            k, value, req = usable[i]
            nc = min(c + 1, cap)
            present_next = state(i + 1, nc)
            member = members.get(i)
            if member is None:
                member = members[i] = self._member(key_literal(k), value)
            take = None
            if present_next is not None:
                head = (*sep, member) if c > 0 else (member,)
                take = Seq(head + _tail(present_next))
            skip = None if req else state(i + 1, c)
            res = _choice(take, skip)
            if isinstance(res, tuple):
                res = ("opt", self.define(f"{hint}_from_{k}", res[1], internal=True))
            elif res is not None and res is not _EPS:
                res = self.define(f"{hint}_from_{k}", res, internal=True)
            memo[key] = res
            return res

        body = state(0, 0)
        del state  # a recursive closure is a reference cycle: unbound, refcounting frees it and `memo`
        allow_empty = body is _EPS or (isinstance(body, tuple) and body[0] == "opt")
        content = None
        if isinstance(body, tuple) and body[0] == "opt":
            content = body[1]
        elif isinstance(body, tuple) and body[0] == "alt":
            allow_empty = body[2]
            content = body[1]
        elif body is not None and body is not _EPS:
            content = body
        return self.layout.container("{}", depth, allow_empty, content)

    def _witnessed_extras(self, extra: Expr, witness: Expr, c: int, need: int, room: int | None, depth: int, hint: str) -> Expr | None:
        """need..room extra members (after c members), at least one of them a witness:
        ``E{a} W E{b}`` for each a, b with need <= a + 1 + b <= room (E: any extra member).
        The count of alternatives grows with the bounds: more than MAX_WITNESS_COUNT refused."""
        if room is not None and room <= 0:
            return None
        top = need if room is None else room
        if top > MAX_WITNESS_COUNT:
            self.unsupported("minProperties" if room is None else "maxProperties", "#",
                             "too many counting states beside a negated additionalProperties")
            return None
        sep = self.layout.sep(depth)
        w = self.define(f"{hint}_witness", witness, internal=True)

        def run(a: int, open_end: bool) -> Expr:
            """a extra members (or at least a when open_end), each after a separator."""
            return Repeat(Seq((*sep, extra)), a, None if open_end else a)

        alts = []
        last = max(need - 1, 0) if room is None else room - 1
        for a in range(last + 1):
            lo_b = max(need - 1 - a, 0)
            open_a = room is None and a == last
            hi_b = None if room is None else room - 1 - a
            before = run(a, open_a)
            after = Repeat(Seq((*sep, extra)), lo_b, hi_b)
            if c == 0:  # the first member has no separator before it
                if a == 0 and not open_a:
                    alts.append(Seq((w, after)))
                else:
                    alts.append(Seq((extra, run(a - 1 if a else 0, open_a), *sep, w, after)))
                    if a == 0:  # open_a with a == 0: the witness may also come first
                        alts.append(Seq((w, after)))
            else:
                alts.append(Seq((before, *sep, w, after)))
        return alts[0] if len(alts) == 1 else Alt(tuple(alts))

    def _object_any_order(self, usable, extras, min_props, max_props, depth, hint, ptr) -> Expr | None:
        """Members in any order, each named property at most once, the required ones present.

        Exact, hence a state per (set of named properties written, members counted up to the
        bound that min/maxProperties need): 2**n sets for n named properties, which no grammar
        avoids (a context-free grammar for the orders of n keys has exponential size), so more
        than MAX_ANY_ORDER_STATES states are refused. Extra members (additional or pattern
        properties) may come anywhere, as often as the counts allow.
        """
        if max_props is not None and min_props > max_props:
            return None
        n = len(usable)
        need = sum(1 << i for i, (_, _, req) in enumerate(usable) if req)
        cap = max_props if max_props is not None else max(min_props, 1)
        sets = any_order_states(n, max_props)
        if sets * (cap + 1 if extras else 1) > MAX_ANY_ORDER_STATES:
            self.unsupported("properties", ptr, f"property_order='any' for {n} properties needs {sets} "
                             f"sets of written properties (limit {MAX_ANY_ORDER_STATES}); use the schema's order")
            return self._object_layout(usable, extras, min_props, max_props, depth, hint)
        sep = self.layout.sep(depth)
        members = [self.define(f"{hint}_{k}_member", self._member(key_literal(k), v), internal=True)
                   for k, v, _ in usable]
        extra = None
        if extras:
            alts = [self._member(k, v) for k, v in extras]
            extra = self.define(f"{hint}_extra", alts[0] if len(alts) == 1 else Alt(tuple(alts)), internal=True)

        def moves(state):
            written, count = state
            if max_props is not None and count >= max_props:
                return []
            nxt = min(count + 1, cap)
            out = [(members[i], (written | 1 << i, nxt)) for i in range(n) if not written >> i & 1]
            if extra is not None:
                out.append((extra, (written, nxt)))
            return out

        def accepting(state) -> bool:
            written, count = state
            return written & need == need and count >= min(min_props, cap)

        # reachable states, then the live ones (those that can still reach an accepting state)
        start = (0, 0)
        order, edges, seen = [start], {}, {start}
        for state in order:
            edges[state] = moves(state)
            for _, target in edges[state]:
                if target not in seen:
                    seen.add(target)
                    order.append(target)
        live = {s for s in order if accepting(s)}
        changed = True
        while changed:
            changed = False
            for s in order:
                if s not in live and any(t in live for _, t in edges[s]):
                    live.add(s)
                    changed = True
        if start not in live:
            return None
        names = {s: self.fresh(f"{hint}_members_{s[0]}_{s[1]}") for s in order if s in live and s != start}
        for s, name in names.items():
            alts: list[Expr] = [Literal("")] if accepting(s) else []
            alts += [Seq((*sep, member, Ref(names[t]))) for member, t in edges[s] if t in live]
            self.rules[name] = alts[0] if len(alts) == 1 else Alt(tuple(alts))
        first = [Seq((member, Ref(names[t]))) for member, t in edges[start] if t in live]
        body = None if not first else first[0] if len(first) == 1 else Alt(tuple(first))
        return self.layout.container("{}", depth, accepting(start), body)


def _tail(rest) -> tuple:
    if rest is _EPS:
        return ()
    if isinstance(rest, tuple) and rest[0] == "opt":
        return (Repeat(rest[1], 0, 1),)
    return (rest,)


def _choice(take, skip):
    """Combine 'write this member' and 'skip it' continuations (skip may be eps/opt)."""
    if take is None:
        return skip
    if skip is None:
        return take
    if skip is _EPS:
        return ("opt", take)
    if isinstance(skip, tuple) and skip[0] == "opt":
        return ("opt", Alt((take, skip[1])))
    return Alt((take, skip))


def any_order_states(n: int, max_props: int | None) -> int:
    """How many subsets of `n` named properties an any-order object can have written."""
    top = n if max_props is None else min(n, max_props)
    return sum(comb(n, i) for i in range(top + 1))
