"""Concrete JSON values checked against schemas (enum/const filtering, property names)."""

from __future__ import annotations

import re

from grammarc.errors import UnsupportedSchemaError
from grammarc.frontends import json_formats as jf

from . import formats as fmt
from . import chardfa
from .documents import Node
from .strings import MAX_STRING_STATES
from .drafts import TupleItems
from .keywords import REFS, NOT_MULTIPLE_KEY, NOT_PATTERN_KEY, NOT_STRINGS_KEY, NOT_VALID_KEY, SOME_MEMBER_KEY, TYPES_KEY, UNSUPPORTED
from .objects import member_key_in
from .values import dec, json_equal, json_key, json_kind, number_value, type_set


class Validation:
    """Concrete values checked against schemas (enum/const filtering, property names)."""

    def _in_enum(self, v, values) -> bool:
        """Whether `v` equals a member of the enum list `values` (a set of keys per list,
        built once: checking every member of a 10k enum against it stays linear)."""
        table = self.__dict__.setdefault("_enum_keys", {})
        found = table.get(id(values))
        if found is None or found[0] is not values:  # the list itself is kept: ids stay unique
            found = table[id(values)] = (values, frozenset(json_key(e) for e in values))
        return json_key(v) in found[1]

    def _valid(self, value, conj) -> bool:
        return all(self._valid_node(value, n, 0) for n in conj)


    def _valid_node(self, v, node: Node, level: int) -> bool:
        saved = self.scope
        try:
            self.enter(node)
            return self._valid_in_scope(v, node, level)
        finally:
            self.scope = saved

    def _valid_in_scope(self, v, node: Node, level: int) -> bool:
        node = self._rebase(node)
        s = node.schema
        if s is True:
            return True
        if s is False:
            return False
        if s.get("nullable") is True and v is None:
            return True
        if level > 200:
            raise UnsupportedSchemaError("schema recursion too deep while checking enum values", node.ptr)
        p = node.ptr
        for word in REFS:
            if word in s and not self._valid_node(v, self.resolve_ref(word, node), level + 1):
                return False
        kind = json_kind(v)
        for key in s:
            if key in UNSUPPORTED:
                self.unsupported(key, p)
        if "type" in s:
            types = type_set(s["type"], p + "/type")
            if kind not in types:
                return False
        if TYPES_KEY in s and kind not in s[TYPES_KEY]:
            return False
        if NOT_PATTERN_KEY in s and kind == "string" and chardfa.accepts(chardfa.pattern(s[NOT_PATTERN_KEY], MAX_STRING_STATES), v):
            return False
        if NOT_STRINGS_KEY in s and kind == "string" and v in s[NOT_STRINGS_KEY]:
            return False
        if "not" in s and self._valid_node(v, node.child("not", s["not"]), level + 1):
            return False
        if NOT_VALID_KEY in s and self._valid_node(v, node.child(NOT_VALID_KEY, s[NOT_VALID_KEY]), level + 1):
            return False
        if SOME_MEMBER_KEY in s and kind == "object":
            spec = s[SOME_MEMBER_KEY]
            sub = node.child_of(SOME_MEMBER_KEY, "value", spec["value"])
            if not any(member_key_in(spec, k) and self._valid_node(x, sub, level + 1) for k, x in v.items()):
                return False
        if "if" in s and ("then" in s or "else" in s):
            branch = "then" if self._valid_node(v, node.child("if", s["if"]), level + 1) else "else"
            if branch in s and not self._valid_node(v, node.child(branch, s[branch]), level + 1):
                return False
        if kind == "object":
            for word in ("dependentRequired", "dependentSchemas", "dependencies"):
                for name, dep in (s.get(word) or {}).items():
                    if name not in v:
                        continue
                    if isinstance(dep, list):
                        if any(d not in v for d in dep):
                            return False
                    elif not self._valid_node(v, node.child_of(word, name, dep), level + 1):
                        return False
        if "enum" in s and not self._in_enum(v, s["enum"]):
            return False
        if "const" in s and not json_equal(v, s["const"]):
            return False
        if kind in ("integer", "fraction"):
            d = dec(v)
            if "minimum" in s and d < number_value(s["minimum"], p):
                return False
            if "maximum" in s and d > number_value(s["maximum"], p):
                return False
            if "exclusiveMinimum" in s and d <= number_value(s["exclusiveMinimum"], p):
                return False
            if "exclusiveMaximum" in s and d >= number_value(s["exclusiveMaximum"], p):
                return False
            if "multipleOf" in s and d % number_value(s["multipleOf"], p) != 0:
                return False
            if NOT_MULTIPLE_KEY in s and d % number_value(s[NOT_MULTIPLE_KEY], p) == 0:
                return False
            if s.get("format") in fmt.INTEGER_RANGES and fmt.asserted(s["format"], self.formats):
                a, b = fmt.INTEGER_RANGES[s["format"]]
                if kind != "integer" or not a <= d <= b:
                    return False
        if kind == "string":
            n = len(v)
            if "minLength" in s and n < s["minLength"]:
                return False
            if "maxLength" in s and n > s["maxLength"]:
                return False
            if "pattern" in s:
                try:
                    plain = jf.search_regex(s["pattern"], plain=True)
                except jf.PatternError as exc:
                    self.unsupported("pattern", p, str(exc))
                    plain = ""
                if plain is None or not re.fullmatch(plain, v, re.S):
                    return False
            if "format" in s and fmt.is_string_format(s["format"]) and fmt.asserted(s["format"], self.formats):
                if not re.fullmatch(fmt.plain_regex(s["format"]), v):
                    return False
        if kind == "array":
            if "minItems" in s and len(v) < s["minItems"]:
                return False
            if "maxItems" in s and len(v) > s["maxItems"]:
                return False
            if s.get("uniqueItems") is True:
                for i in range(len(v)):
                    for j in range(i):
                        if json_equal(v[i], v[j]):
                            return False
            if isinstance(s.get("items"), TupleItems):
                prefix = s["items"]
                rest = s.get("additionalItems")
            else:
                prefix = s.get("prefixItems", [])
                rest = s.get("items")
            for i, x in enumerate(v):
                if i < len(prefix):
                    sub = Node(prefix[i], f"{p}/prefix/{i}", node.base)
                elif rest is not None:
                    sub = Node(rest, f"{p}/items", node.base)
                else:
                    continue
                if not self._valid_node(x, sub, level + 1):
                    return False
            if "contains" in s:
                hits = sum(self._valid_node(x, node.child("contains", s["contains"]), level + 1) for x in v)
                if hits < s.get("minContains", 1) or ("maxContains" in s and hits > s["maxContains"]):
                    return False
        if kind == "object":
            if "required" in s and any(k not in v for k in s["required"]):
                return False
            if "minProperties" in s and len(v) < s["minProperties"]:
                return False
            if "maxProperties" in s and len(v) > s["maxProperties"]:
                return False
            props = s.get("properties", {})
            pats = s.get("patternProperties", {})
            for k, x in v.items():
                matched = False
                if k in props:
                    matched = True
                    if not self._valid_node(x, node.child_of("properties", k, props[k]), level + 1):
                        return False
                for pat, sub in pats.items():
                    if self._key_matches(pat, k, node):
                        matched = True
                        if not self._valid_node(x, node.child_of("patternProperties", pat, sub), level + 1):
                            return False
                if not matched and "additionalProperties" in s:
                    if not self._valid_node(x, node.child("additionalProperties", s["additionalProperties"]), level + 1):
                        return False
                if "propertyNames" in s and not self._valid_node(k, node.child("propertyNames", s["propertyNames"]), level + 1):
                    return False
        for j, sub in enumerate(s.get("allOf", []) or []):
            if not self._valid_node(v, node.child_of("allOf", j, sub), level + 1):
                return False
        if "anyOf" in s and not any(self._valid_node(v, node.child_of("anyOf", j, sub), level + 1) for j, sub in enumerate(s["anyOf"])):
            return False
        if "oneOf" in s and sum(self._valid_node(v, node.child_of("oneOf", j, sub), level + 1) for j, sub in enumerate(s["oneOf"])) != 1:
            return False
        return True
