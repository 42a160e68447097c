"""Objects: named, pattern and additional properties, `required`, counts, `propertyNames`."""

from __future__ import annotations

import re

from grammarc.errors import SchemaError
from grammarc.ir import Alt, Expr, Literal, Regex, Repeat, Seq
from grammarc.frontends import json_formats as jf

from .documents import Node
from .layout import MAX_INDENT_DEPTH, key_literal, string_literal
from .merge import Merged
MAX_COUNT_STATES = 4000


class Objects:
    """Objects: named, pattern and additional properties, counts, propertyNames."""

    def _object(self, m: Merged, depth: int, hint: str) -> Expr | None:
        if self.layout.indent is not None and depth >= MAX_INDENT_DEPTH:
            return None
        members = m.objects or []
        required = m.required or {}
        named: list[str] = []
        for _, props, _, _ in members:
            for k in props:
                if k not in named:
                    named.append(k)
        for k in required:
            if k not in named:
                named.append(k)
        with_patterns = [mem for mem in members if mem[2]]
        if len(with_patterns) > 1 or (with_patterns and len(members) > 1):
            self.unsupported("patternProperties", with_patterns[0][0].ptr, "patternProperties merged with other object schemas")
        # the schemas each named key must satisfy
        key_conj: dict[str, tuple] = {}
        for k in named:
            conj = []
            for node, props, pats, add in members:
                if k in props:
                    conj.append(node.child("properties", None).child(k, props[k]))
                    matched = True
                else:
                    matched = False
                for pat, sub in pats.items():
                    if self._key_matches(pat, k, node):
                        conj.append(node.child("patternProperties", None).child(pat, sub))
                        matched = True
                if not matched:
                    if add is not None:
                        conj.append(add)
                    elif self.close_objects:
                        conj.append(Node(False, node.ptr + "/additionalProperties", node.base))
            if not members and self.close_objects:
                conj.append(Node(False, "#/additionalProperties", ""))
            key_conj[k] = tuple(conj)
        # property names
        name_conj = tuple(m.property_names or [])
        usable: list[tuple[str, Expr | None, bool]] = []
        for k in named:
            req = k in required
            ok_name = not name_conj or self._valid(k, name_conj)
            value = self.value(key_conj[k], depth + 1, hint=f"{hint}_{k}") if ok_name else None
            if value is None:
                if req:
                    why = "its name is not allowed" if not ok_name else "its schema allows no value (additionalProperties: false?)"
                    if len(members) <= 1 and len(self._collect_required_sources(m)) <= 1:
                        raise SchemaError(f"required property {k!r} can never be present: {why}", required[k])
                    return None
                continue
            usable.append((k, value, req))
        extras = self._extras(m, members, named, name_conj, depth, hint)
        return self._object_layout(usable, extras, m.min_props, m.max_props, depth, hint)


    def _collect_required_sources(self, m) -> set:
        return set((m.required or {}).values())


    def _key_matches(self, pattern: str, key: str, node: Node) -> bool:
        try:
            plain = jf.search_regex(pattern, plain=True)
        except jf.PatternError as exc:
            self.unsupported("patternProperties", node.ptr, str(exc))
            return False
        return plain is not None and re.fullmatch(plain, key, re.S) is not None


    def _extras(self, m, members, named, name_conj, depth, hint) -> list[tuple[Expr, Expr]]:
        """(key, value) kinds of the members beyond the named properties."""
        adds = [add for _, _, _, add in members if add is not None]
        if not members and not self.close_objects:
            adds = []
        elif self.close_objects and any(add is None for _, _, _, add in members):
            return []
        if not members and self.close_objects:
            return []
        if any(a.schema is False for a in adds):
            adds_closed = True
        else:
            adds_closed = False
        pats = [(node, pat, sub) for node, _, ps, _ in members for pat, sub in ps.items()]
        out = []
        if name_conj:
            key_re = self._property_name_regex(name_conj, named)
            if key_re is None:
                return []
        else:
            key_re = None
        if pats:
            return self._pattern_extras(m, pats, adds, adds_closed, named, key_re, depth, hint)
        if adds_closed:
            return []
        value = self.value(tuple(adds), depth + 1, hint=f"{hint}_additional")
        if value is None:
            return []
        if key_re is None:
            key_re = Regex(jf.string_excluding(named)) if named else Regex(jf.string_regex())
        out.append((key_re, value))
        return out


    def _pattern_extras(self, m, pats, adds, adds_closed, named, key_re, depth, hint):
        """Members whose keys match patternProperties, then keys that match none of them.

        Several patterns: a key matching any of them gets the conjunction of all their schemas
        (exact for keys matching all, stricter for the others: a sound narrowing).
        """
        node0 = pats[0][0]
        if key_re is not None:
            self.unsupported("propertyNames", m.property_names[0].ptr.rsplit("/", 1)[0], "together with patternProperties")
        if named and any(self._key_matches(p2, k, n2) for n2, p2, _ in pats for k in named):
            self.unsupported("patternProperties", node0.ptr, "a pattern that also matches a named property")
        out = []
        bodies, plains = [], []
        for n2, p2, _ in pats:
            try:
                body = jf.search_regex(p2)
                plain = jf.match_regex_unanchored(p2)
            except jf.PatternError as exc:
                self.unsupported("patternProperties", n2.ptr, str(exc))
                continue
            if body is not None:
                bodies.append(body)
            plains.append(plain)
        conj = tuple(n2.child("patternProperties", None).child(p2, sub) for n2, p2, sub in pats)
        value = self.value(conj, depth + 1, hint=f"{hint}_pattern")
        if value is not None and bodies:
            key = Regex('"' + (bodies[0] if len(bodies) == 1 else "(?:" + "|".join(bodies) + ")") + '"')
            out.append((key, value))
        if adds_closed:
            return out
        if any(p is None for p in plains) and not self.lenient:
            self.unsupported("additionalProperties", node0.ptr, "next to an anchored patternProperties pattern")
            return out
        value = self.value(tuple(adds), depth + 1, hint=f"{hint}_additional")
        plains = [p for p in plains if p]
        if value is None or any(re.fullmatch(p, "") for p in plains):
            return out
        # keys in which no pattern finds a match: raw text free of pattern matches, of named
        # keys (so that no named key is spelled twice) and of characters needing escapes
        forbidden = plains + [jf.literal_regex(k) for k in named if k] + ['["\\\\\\x00-\\x1f]']
        keys: list[Expr] = [Seq((Literal('"'), Regex("|".join(forbidden), mode="complement"), Literal('"')))]
        if "" not in named and not any(re.search(p, "") for p in plains):
            keys.append(Literal('""'))
        out.append((keys[0] if len(keys) == 1 else Alt(tuple(keys)), value))
        return out


    def _property_name_regex(self, name_conj, named) -> Expr | None:
        """Key strings allowed by propertyNames (only when no named property could collide)."""
        m = self._merge(name_conj)
        if m is None:
            return None
        if m.enum is not None:
            keys = [v for v in m.enum if isinstance(v, str) and v not in named and self._valid(v, name_conj)]
            if not keys:
                return None
            lits = [string_literal(k) for k in keys]
            return lits[0] if len(lits) == 1 else Alt(tuple(lits))
        if "string" not in m.types:
            return None
        if named:
            self.unsupported("propertyNames", name_conj[0].ptr.rsplit("/", 1)[0], "together with named properties and additional properties")
        return self._string(m)


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


    def _object_layout(self, usable, extras, min_props, max_props, depth, hint) -> Expr | None:
        """Named members in order (optional ones may be absent), then extra members.

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
                if extra is None:
                    res = "eps" if need == 0 else None
                elif room == 0:
                    res = "eps" if need == 0 else None
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
            member = self._member(key_literal(k), value)
            take = None
            if present_next is not None:
                head = (*sep, member) if c > 0 else (member,)
                take = Seq(head + _tail(present_next))
            skip = None if req else state(i + 1, c)
            res = _choice(take, skip)
            if isinstance(res, tuple):
                res = ("opt", self.define(f"{hint}_from_{k}", res[1], internal=True))
            elif res is not None and res != "eps":
                res = self.define(f"{hint}_from_{k}", res, internal=True)
            memo[key] = res
            return res

        body = state(0, 0)
        parts: list[Expr] = []
        allow_empty = body == "eps" or (isinstance(body, tuple) and body[0] == "opt")
        content = None
        if isinstance(body, tuple) and body[0] == "opt":
            content = body[1]
        elif isinstance(body, tuple) and body[0] == "alt":
            allow_empty = body[2]
            content = body[1]
        elif body not in (None, "eps"):
            content = body
        if allow_empty:
            parts.append(Seq(tuple(self.layout.empty("{}"))))
        if content is not None:
            parts.append(Seq((*self.layout.open("{", depth), content, *self.layout.close("}", depth))))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))



def _tail(rest) -> tuple:
    if rest == "eps":
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
    if skip == "eps":
        return ("opt", take)
    if isinstance(skip, tuple) and skip[0] == "opt":
        return ("opt", Alt((take, skip[1])))
    return Alt((take, skip))
