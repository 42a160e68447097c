"""Objects: named, pattern and additional properties, `required`, counts, `propertyNames`."""

from __future__ import annotations

import re
from functools import lru_cache

from grammarc.ir import Alt, Expr, Regex
from grammarc.frontends import json_formats as jf

from .documents import Node
from .layout import MAX_INDENT_DEPTH, string_literal
from . import chardfa
from .keywords import SOME_MEMBER_KEY
from .merge import Merged
from .strings import MAX_STRING_STATES

MAX_KEY_REGIONS = 16  # sets of patternProperties patterns a key can match at once
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
        # the schemas each named key must satisfy
        key_conj: dict[str, tuple] = {}
        for k in named:
            conj = []
            for node, props, pats, add in members:
                if k in props:
                    conj.append(node.child_of("properties", k, props[k]))
                    matched = True
                else:
                    matched = False
                for pat, sub in pats.items():
                    if self._key_matches(pat, k, node):
                        conj.append(node.child_of("patternProperties", pat, sub))
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
                    self.note_empty(f"required property {k!r} can never be present: {why}", required[k])
                    return None
                continue
            usable.append((k, value, req))
        extras = self._extras(m, members, named, name_conj, depth, hint)
        if m.some_members:
            return self._object_witnessed(m, members, named, key_conj, name_conj, usable, extras, depth, hint)
        if self.property_order == "any":
            where = members[0][0].ptr if members else next(iter(required.values()), "#").rsplit("/", 1)[0]
            return self._object_any_order(usable, extras, m.min_props, m.max_props, depth, hint, where)
        return self._object_layout(usable, extras, m.min_props, m.max_props, depth, hint)



    def _object_witnessed(self, m, members, named, key_conj, name_conj, usable, extras, depth, hint):
        """Objects with at least one member whose key is in a set and whose value satisfies a
        schema (the negation of additionalProperties/patternProperties, SOME_MEMBER_KEY).

        The witness is either a named property (then required, its value also under the
        witness schema) or an extra member (additional keys only: the witness keys are an
        automaton, the key set less the named keys). Exact; refused where the object also has
        patternProperties or propertyNames, where two such constraints meet, or with
        property_order='any'.
        """
        node, spec = m.some_members[0]
        where = node.ptr
        def plain():
            return self._object_plain(m, usable, extras, depth, hint, members)

        if len(m.some_members) > 1:
            self.unsupported("not", where, "two negated additionalProperties/patternProperties on one object")
            return plain()
        value_node = node.child_of(SOME_MEMBER_KEY, "value", spec["value"])
        try:
            keys = member_key_dfa(spec, MAX_STRING_STATES)
        except (jf.PatternError, chardfa.TooLarge) as exc:
            self.unsupported("not", where, str(exc))
            return plain()
        layout = self._object_any_order if self.property_order == "any" else None
        alts = []
        for i, (k, _, _) in enumerate(usable):
            if not chardfa.accepts(keys, k):
                continue
            v2 = self.value(key_conj[k] + (value_node,), depth + 1, hint=f"{hint}_{k}")
            if v2 is None:
                continue
            u2 = usable[:i] + [(k, v2, True)] + usable[i + 1:]
            if layout is not None:
                alts.append(layout(u2, extras, m.min_props, m.max_props, depth, hint, where))
            else:
                alts.append(self._object_layout(u2, extras, m.min_props, m.max_props, depth, hint))
        if extras:
            witness = self._witness_extra(members, named, keys, value_node, depth, hint, where, name_conj)
            if witness is not None:
                if layout is not None:
                    self.unsupported("not", where, "a negated additionalProperties/patternProperties with property_order='any'")
                    return plain()
                alts.append(self._object_layout(usable, extras, m.min_props, m.max_props, depth, hint, witness=witness))
        alts = [a for a in alts if a is not None]
        if not alts:
            return None
        return alts[0] if len(alts) == 1 else Alt(tuple(alts))

    def _object_plain(self, m, usable, extras, depth, hint, members):
        """The object without its witness constraints (what lenient mode falls back to)."""
        if self.property_order == "any":
            where = members[0][0].ptr if members else "#"
            return self._object_any_order(usable, extras, m.min_props, m.max_props, depth, hint, where)
        return self._object_layout(usable, extras, m.min_props, m.max_props, depth, hint)

    def _witness_extra(self, members, named, keys, value_node, depth, hint, where, name_conj) -> Expr | None:
        """An extra member (a key no named property has) in the witness set, its value under
        every additionalProperties and the witness schema; None when there is none."""
        if name_conj or any(pats for _, _, pats, _ in members):
            self.unsupported("not", where, "a negated additionalProperties/patternProperties on an object "
                             "with patternProperties or propertyNames")
            return None
        try:
            rest = chardfa.intersection(keys, chardfa.complement(chardfa.literals(named), MAX_STRING_STATES),
                                        MAX_STRING_STATES) if named else keys
            key_chars = None if rest is None else chardfa.chars(rest, MAX_STRING_STATES)
        except chardfa.TooLarge as exc:
            self.unsupported("not", where, str(exc))
            return None
        if key_chars is None:
            return None
        adds = tuple(add for _, _, _, add in members if add is not None)
        value = self.value(adds + (value_node,), depth + 1, hint=f"{hint}_witness")
        if value is None:
            return None
        return self._member(self._char_dfa(key_chars, True, f"{hint}_witness_key"), value)

    def _key_matches(self, pattern: str, key: str, node: Node) -> bool:
        try:
            plain = jf.search_regex(pattern, plain=True)
        except jf.PatternError as exc:
            self.unsupported("patternProperties", node.ptr, str(exc))
            return False
        return plain is not None and _compiled(plain).fullmatch(key) is not None


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
        pats = [(node, pat, sub, j) for j, (node, _, ps, _) in enumerate(members) for pat, sub in ps.items()]
        out = []
        if name_conj:
            key_re = self._property_name_regex(name_conj, named)
            if key_re is None:
                return []
        else:
            key_re = None
        if pats:
            return self._pattern_extras(m, members, pats, adds, adds_closed, named, key_re, depth, hint)
        if adds_closed:
            return []
        value = self.value(tuple(adds), depth + 1, hint=f"{hint}_additional")
        if value is None:
            return []
        if key_re is None:
            key_re = self._keys_except(named, hint) if named else Regex(jf.string_regex())
        out.append((key_re, value))
        return out


    def _keys_except(self, named, hint: str) -> Expr:
        """A key naming none of `named` (see `_string_except`)."""
        return self._string_except(named, f"{hint}_other_key")

    def _pattern_extras(self, m, members, pats, adds, adds_closed, named, key_re, depth, hint):
        """Members whose keys match patternProperties, and the keys no pattern matches.

        Keys are split by the set of patterns they match, so that a key matching several gets
        all their schemas and one matching none gets additionalProperties; named properties are
        left out of every region (they are members of their own, and their values already carry
        the schemas of the patterns that match their names). Where object schemas meet (allOf),
        each judges a key by its own patterns, else by its own additionalProperties. Exact,
        over every JSON spelling of the keys; more than MAX_KEY_REGIONS regions are refused.
        """
        if key_re is not None:
            self.unsupported("propertyNames", m.property_names[0].ptr.rsplit("/", 1)[0], "together with patternProperties")
        found = []
        for n2, p2, sub, j in pats:
            try:
                found.append((n2, p2, sub, chardfa.pattern(p2, MAX_STRING_STATES), j))
            except (jf.PatternError, chardfa.TooLarge) as exc:
                self.unsupported("patternProperties", n2.ptr, str(exc))
        if len(found) == 1 and len(members) == 1 and not named and found[0][3] is not None:
            simple = self._one_pattern_extras(found[0], adds, adds_closed, depth, hint)
            if simple is not None:
                return simple
        try:
            regions = [(chardfa.complement(chardfa.literals(named), MAX_STRING_STATES), ())]
            for i, (n2, p2, _, dfa, _) in enumerate(found):
                split = []
                for region, tags in regions:
                    yes = chardfa.intersection(region, dfa, MAX_STRING_STATES)
                    no = chardfa.intersection(region, chardfa.complement(dfa, MAX_STRING_STATES), MAX_STRING_STATES)
                    split += [(r, t) for r, t in ((yes, tags + (i,)), (no, tags)) if r is not None]
                regions = split
                if len(regions) > MAX_KEY_REGIONS:
                    raise chardfa.TooLarge(f"the patterns split the keys into more than {MAX_KEY_REGIONS} regions")
            keys = [(chardfa.chars(region, MAX_STRING_STATES), tags) for region, tags in regions]
        except chardfa.TooLarge as exc:
            self.unsupported("patternProperties", found[0][0].ptr, str(exc))
            return []
        out = []
        for region, tags in keys:
            if tags:
                conj = tuple(found[i][0].child_of("patternProperties", found[i][1], found[i][2]) for i in tags)
                judged = {found[i][4] for i in tags}  # the members whose patterns match these keys
                conj += tuple(add for j, (_, _, _, add) in enumerate(members) if j not in judged and add is not None)
                value = self.value(conj, depth + 1, hint=f"{hint}_pattern")
            elif adds_closed:
                continue
            else:
                value = self.value(tuple(adds), depth + 1, hint=f"{hint}_additional")
            if value is not None:
                out.append((self._char_dfa(region, True, f"{hint}_key"), value))
        return out

    def _one_pattern_extras(self, found, adds, adds_closed, depth, hint):
        """One pattern, no named property: the pattern's keys as a regex, the others as an automaton."""
        n2, p2, sub, dfa, _ = found
        regex = jf.string_search_regex(p2)
        out = []
        value = self.value((n2.child_of("patternProperties", p2, sub),), depth + 1, hint=f"{hint}_pattern")
        if value is not None and regex is not None:
            out.append((Regex(regex), value))
        if not adds_closed:
            try:
                rest = chardfa.complement(dfa, MAX_STRING_STATES)
                keys = None if rest is None else chardfa.chars(rest, MAX_STRING_STATES)
            except chardfa.TooLarge:
                return None
            value = self.value(tuple(adds), depth + 1, hint=f"{hint}_additional")
            if value is not None and keys is not None:
                out.append((self._char_dfa(keys, True, f"{hint}_key"), value))
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


@lru_cache(maxsize=1024)
def _compiled(plain: str) -> re.Pattern:
    """`plain` compiled (``re.S``) once: `_key_matches` tries each pattern on every named key,
    and ``re.fullmatch`` looks its pattern up in re's own cache on every call."""
    return re.compile(plain, re.S)


def member_key_dfa(spec: dict, max_states: int):
    """The keys a SOME_MEMBER_KEY spec governs, as a byte DFA over the decoded key (None:
    no key): those the `pattern` matches, none of the `except` names, no `notPatterns` match."""
    keys = chardfa.pattern(spec["pattern"], max_states) if "pattern" in spec else chardfa.everything()
    if spec.get("except"):
        keys = chardfa.intersection(keys, chardfa.complement(chardfa.literals(spec["except"]), max_states), max_states)
    for pat in spec.get("notPatterns") or ():
        keys = chardfa.intersection(keys, chardfa.complement(chardfa.pattern(pat, max_states), max_states), max_states)
    return keys


def member_key_in(spec: dict, key: str) -> bool:
    """Whether the key `key` is one the SOME_MEMBER_KEY spec governs (concrete values)."""
    return chardfa.accepts(member_key_dfa(spec, MAX_STRING_STATES), key)
