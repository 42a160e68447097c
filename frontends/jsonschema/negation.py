"""`not`, `if`/`then`/`else` and dependencies, rewritten into exact anyOf/allOf schemas."""

from __future__ import annotations

import itertools
import json

from grammarc.errors import SchemaError

from . import formats as fmt
from .documents import Node
from .keywords import (REFS, ANNOTATIONS, NOT_MULTIPLE_KEY, NOT_PATTERN_KEY, NOT_STRINGS_KEY, NOT_VALID_KEY, NUMBER_KINDS, SOME_MEMBER_KEY,
                       SUPPORTED, TYPES, TYPES_KEY, UNSUPPORTED)
from .values import count_value, dec, json_equal, json_kind, number_value, type_set


MAX_NEGATED_ONE_OF = 8  # branches of a oneOf under `not` (its negation has a branch per pair)
_EXPANDING = frozenset({"not", "if", "dependentRequired", "dependentSchemas", "dependencies"})  # what _expansions reads


class Negation:
    """Keywords rewritten into anyOf/allOf: not, if/then/else, dependencies."""

    def _expansions(self, node: Node) -> list[Node]:
        """Extra conjuncts for `not`, `if`/`then`/`else` and `dependent*`/`dependencies`.

        - ``not: X`` becomes the negation of X (see `_negate`), an anyOf of plain schemas;
          beside enum/const it stays a check of each listed value (NOT_VALID_KEY);
        - ``if: I, then: T, else: E`` is ``anyOf: [allOf: [I, T], allOf: [not I, E]]`` (a
          missing then/else is true; `if` alone, or then/else alone, assert nothing);
        - ``dependentRequired: {k: [d...]}`` is ``anyOf: [{properties: {k: false}}, {required:
          [d...]}]`` (k absent, or every d present), and ``dependentSchemas: {k: S}`` is
          ``anyOf: [{properties: {k: false}}, {type: object, required: [k], allOf: [S]}]``;
          draft-7 ``dependencies`` holds either form.
        """
        s = node.schema
        if s.keys().isdisjoint(_EXPANDING):  # most schemas
            return []
        out: list[Node] = []
        if "not" in s and ("enum" in s or "const" in s):
            # beside enum/const the values are listed and each is checked: no complement needed
            checked = self._synth("not-checked", s, lambda: {NOT_VALID_KEY: s["not"]})
            out.append(Node(checked, node.ptr, node.base))
        elif "not" in s:
            neg = self._negate_or_ignore(node.child("not", s["not"]))
            if neg is not None:
                out.append(neg)
        if "if" in s and ("then" in s or "else" in s):
            def ite():
                cond = s["if"]
                return {"anyOf": [{"allOf": [cond, s.get("then", True)]},
                                  {"allOf": [{"not": cond}, s.get("else", True)]}]}
            out.append(Node(self._synth("ite", s, ite), node.ptr + "/if", node.base))
        for word in ("dependentRequired", "dependentSchemas", "dependencies"):
            deps = s.get(word)
            if deps is None:
                continue
            if not isinstance(deps, dict):
                raise SchemaError(f"{word} must be an object", f"{node.ptr}/{word}")
            out.append(Node(self._synth(word, deps, lambda: dependencies_schema(deps)), f"{node.ptr}/{word}", node.base))
        return out


    def _negate_or_ignore(self, node: Node) -> Node | None:
        """The node for ``not: node``; None when lenient and the negation is not expressible."""
        try:
            schema, base = self._negate(node)
        except CannotNegate as exc:
            self.unsupported("not", node.ptr.rsplit("/", 1)[0], exc.why)
            return None
        return Node(schema, node.ptr, base)


    def _negate(self, node: Node):
        """(schema, base URI) of the values that do NOT satisfy `node`, exactly, or CannotNegate.

        not(K1 and K2 ...) = not K1 or not K2 ...: each keyword's negation is a plain schema
        restricted to the type the keyword applies to (``minimum: 5`` fails only for numbers
        below 5, so its negation is ``{type: number, exclusiveMaximum: 5}``); ``oneOf: [A...]``
        fails where none holds or two do: ``anyOf: [allOf: [not A...], allOf: [Ai, Aj]...]``.
        Keywords whose negation is not regular or not simple (format, uniqueItems, ...)
        raise CannotNegate. ``patternProperties``/``additionalProperties`` fail where some member
        (a key they govern) has a value failing their schema: SOME_MEMBER_KEY says so.
        """
        node = self._rebase(node)
        s = node.schema
        if s is True:
            return False, node.base
        if s is False:
            return True, node.base
        if not isinstance(s, dict):
            raise SchemaError(f"a schema must be an object or a boolean, not {type(s).__name__}", node.ptr)
        key = ("not", id(s))
        if key in self.synthetic:
            return self.synthetic[key], node.base
        if id(s) in self.negating:
            raise CannotNegate("a recursive schema")
        self.negating.add(id(s))
        try:
            result = self._negate_dict(node)
        finally:
            self.negating.discard(id(s))
        self.keep.append(s)
        self.synthetic[key] = result
        return result, node.base


    def _negate_dict(self, node: Node):
        s = node.schema
        disj: list = []
        seen: set = set()

        def add(schema) -> None:
            if schema is False:
                return
            text = json.dumps(schema, sort_keys=True, default=str) if not isinstance(schema, bool) else str(schema)
            if text not in seen:
                seen.add(text)
                disj.append(schema)

        def neg(sub):
            return self._synth("not-wrap", sub, lambda: {"not": sub}) if isinstance(sub, dict) else (not sub)

        keys = list(s)
        bounds = {"minimum": ("exclusiveMaximum", "number"), "maximum": ("exclusiveMinimum", "number"),
                  "exclusiveMinimum": ("maximum", "number"), "exclusiveMaximum": ("minimum", "number"),
                  "minLength": ("maxLength", "string"), "maxLength": ("minLength", "string"),
                  "minItems": ("maxItems", "array"), "maxItems": ("minItems", "array"),
                  "minProperties": ("maxProperties", "object"), "maxProperties": ("minProperties", "object")}
        values = None
        for k in keys:
            v = s[k]
            if k in ANNOTATIONS and k != "nullable":
                continue
            if k in REFS:
                target = self.resolve_ref(k, node)
                schema, base = self._negate(target)
                if base != node.base and not isinstance(schema, bool):
                    raise CannotNegate("a $ref into another schema resource")
                add(schema)
            elif k == "type":
                rest = sorted(set(TYPES) - type_set(v, node.ptr + "/type"))
                if rest:
                    add({TYPES_KEY: rest})
            elif k == TYPES_KEY:
                rest = sorted(set(TYPES) - set(v))
                if rest:
                    add({TYPES_KEY: rest})
            elif k == "pattern":
                add({"type": "string", NOT_PATTERN_KEY: v})
            elif k == NOT_PATTERN_KEY:
                add({"type": "string", "pattern": v})
            elif k == NOT_STRINGS_KEY:
                add({"enum": list(v)})
            elif k in ("enum", "const"):
                new = [v] if k == "const" else v
                if not isinstance(new, list):
                    raise SchemaError("enum must be an array", node.ptr + "/enum")
                values = new if values is None else [x for x in values if any(json_equal(x, y) for y in new)]
            elif k in bounds:
                other, typ = bounds[k]
                if typ == "number":
                    add({"type": "number", other: number_value(v, f"{node.ptr}/{k}")})
                else:
                    n = count_value(v, f"{node.ptr}/{k}")
                    if k.startswith("min"):
                        if n > 0:
                            add({"type": typ, other: n - 1})
                    else:
                        add({"type": typ, other: n + 1})
            elif k == "required":
                for name in v:
                    add({"type": "object", "properties": {name: False}})
            elif k == "properties":
                for name, sub in v.items():
                    if sub is not True and sub != {}:
                        add({"type": "object", "required": [name], "properties": {name: neg(sub)}})
            elif k == "patternProperties":
                for pat, sub in v.items():
                    if sub is not True and sub != {}:
                        add({"type": "object", SOME_MEMBER_KEY: {"pattern": pat, "value": neg(sub)}})
            elif k == "additionalProperties":
                if v is not True and v != {}:
                    add({"type": "object", SOME_MEMBER_KEY: {"except": sorted(s.get("properties") or {}),
                                                             "notPatterns": sorted(s.get("patternProperties") or {}),
                                                             "value": neg(v)}})
            elif k == "multipleOf":
                add({"type": "number", NOT_MULTIPLE_KEY: number_value(v, f"{node.ptr}/multipleOf")})
            elif k == NOT_MULTIPLE_KEY:
                add({"type": "number", "multipleOf": v})
            elif k == NOT_VALID_KEY:
                add(v)
            elif k == "items" and not isinstance(v, list) and "prefixItems" not in s:
                if v is not True and v != {}:
                    add({"type": "array", "contains": neg(v)})
            elif k == "contains" and not ("minContains" in s or "maxContains" in s):
                add({"type": "array", "items": neg(v)})
            elif k == "uniqueItems" and v is False:
                continue
            elif k == "allOf":
                for sub in v:
                    add(neg(sub))
            elif k == "anyOf":
                add({"allOf": [neg(sub) for sub in v]})
            elif k == "oneOf":  # not exactly one: none of them, or two at once
                if not isinstance(v, list) or not v:
                    raise SchemaError("oneOf must be a non-empty array", node.ptr + "/oneOf")
                if len(v) > MAX_NEGATED_ONE_OF:
                    raise CannotNegate(f"the negation of a oneOf of more than {MAX_NEGATED_ONE_OF} branches")
                add({"allOf": [neg(sub) for sub in v]})
                for i, j in itertools.combinations(range(len(v)), 2):
                    add({"allOf": [v[i], v[j]]})
            elif k == "not":
                add(v)
            elif k == "if":
                if "then" in s or "else" in s:
                    add({"if": v, "then": neg(s["then"]) if "then" in s else False,
                         "else": neg(s["else"]) if "else" in s else False})
            elif k in ("then", "else") or (k in ("minContains", "maxContains") and "contains" not in s):
                continue
            elif k == "format" and isinstance(v, str) and fmt.asserted(v, self.formats) is False:
                continue  # an annotation
            elif k in SUPPORTED or k in UNSUPPORTED or k == "nullable" or k.startswith("$grammarc:"):
                raise CannotNegate(f"the negation of {k!r} is not supported")
        if values is not None:
            for schema in negate_values(values):
                add(schema)
        if not disj:
            return False
        return disj[0] if len(disj) == 1 else {"anyOf": disj}



class CannotNegate(Exception):
    """A `not` (or a keyword that needs a complement) whose negation is not expressible."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def dependencies_schema(deps: dict) -> dict:
    """dependentRequired / dependentSchemas / dependencies as a plain allOf of anyOfs."""
    parts = []
    for name, dep in deps.items():
        absent = {"properties": {name: False}}
        if isinstance(dep, list):
            if dep:
                parts.append({"anyOf": [absent, {"required": list(dep)}]})
        elif dep is False:
            parts.append(absent)
        elif dep is not True and dep != {}:
            parts.append({"anyOf": [absent, {"type": "object", "required": [name], "allOf": [dep]}]})
    return {"allOf": parts} if parts else True


def negate_values(values: list) -> list:
    """Plain schemas whose union is every JSON value other than the scalars `values`."""
    if not values:
        return [True]
    kinds = {json_kind(v) for v in values}
    if kinds & {"array", "object"}:
        raise CannotNegate("the negation of an array or object const/enum")
    covered = set(kinds) | (set(NUMBER_KINDS) if kinds & NUMBER_KINDS else set())
    out: list = [{TYPES_KEY: sorted(set(TYPES) - covered)}]
    bools = {v for v in values if isinstance(v, bool)}
    if len(bools) == 1:
        out.append({"const": not bools.pop()})
    strings = sorted({v for v in values if isinstance(v, str)})
    if strings:
        out.append({"type": "string", NOT_STRINGS_KEY: strings})
    numbers = sorted({dec(v) for v in values if json_kind(v) in NUMBER_KINDS})
    if numbers:
        out.append({"type": "number", "exclusiveMaximum": numbers[0]})
        for a, b in zip(numbers, numbers[1:]):
            out.append({"type": "number", "exclusiveMinimum": a, "exclusiveMaximum": b})
        out.append({"type": "number", "exclusiveMinimum": numbers[-1]})
    return out
