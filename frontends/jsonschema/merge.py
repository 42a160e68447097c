"""A conjunction of schemas (allOf, `$ref` with siblings) merged into one set of constraints."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from grammarc.errors import SchemaError

from .documents import Node
from .drafts import TupleItems
from . import formats as fmt
from .keywords import REFS, NUMBER_KINDS, EXPANDED, NOT_MULTIPLE_KEY, NOT_PATTERN_KEY, NOT_STRINGS_KEY, SOME_MEMBER_KEY, TYPES, TYPES_KEY, UNSUPPORTED
from .values import count_value, json_equal, number_value, type_set


@dataclass(init=False)
class Merged:
    """The keywords of a conjunction of schemas (no anyOf/oneOf left), merged.

    Made with its types only: the other fields' defaults are class attributes, and a merge
    sets the few its keywords touch (always by assignment, never by changing a default in
    place). One is made per subschema built, and a generated ``__init__`` setting all of its
    fields cost more than merging the keywords of most subschemas."""

    types: set
    enum: list | None = None
    enum_ptr: str = "#"
    lo: Decimal | None = None
    lo_strict: bool = False
    hi: Decimal | None = None
    hi_strict: bool = False
    bound_ptr: str = "#"
    multiple_of: list | None = None
    not_multiple_of: list | None = None  # [(step, pointer)]: NOT_MULTIPLE_KEY
    min_len: int = 0
    max_len: int | None = None
    len_ptrs: tuple[str, str] = ("#", "#")  # where min_len and max_len were set
    patterns: list | None = None
    formats: list | None = None
    objects: list | None = None  # [(node, properties, patternProperties, additional)]
    required: dict | None = None  # key -> pointer
    min_props: int = 0
    max_props: int | None = None
    property_names: list | None = None
    arrays: list | None = None  # [(node, prefix list[Node], rest Node|None)]
    min_items: int = 0
    max_items: int | None = None
    items_ptrs: tuple = ("#", "#")  # the schemas that set min_items and max_items
    contains: list | None = None
    min_contains: int | None = None
    max_contains: int | None = None
    unique: str | None = None
    not_strings: list | None = None
    not_strings_ptr: str = "#"
    not_patterns: list | None = None  # [(pattern, pointer)] that must find no match
    some_members: list | None = None  # [(node, spec)]: SOME_MEMBER_KEY, a member each must have

    def __init__(self, types: set) -> None:
        self.types = types


# the keywords of each family `_merge_one` reads (a family is skipped where a schema has none)
_REFUSED = UNSUPPORTED | {"contentMediaType", "contentEncoding"}
_NUMBER_WORDS = frozenset({"format", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
                           NOT_MULTIPLE_KEY})
_STRING_WORDS = frozenset({"minLength", "maxLength", "pattern"})
_OBJECT_WORDS = frozenset({"properties", "patternProperties", "additionalProperties", "required", "minProperties",
                           "maxProperties", SOME_MEMBER_KEY, "propertyNames"})
_ARRAY_WORDS = frozenset({"items", "prefixItems", "minItems", "maxItems", "contains", "uniqueItems"})
_TYPE_SETS = {name: frozenset(type_set(name, "#")) for name in ("null", "boolean", "integer", "number", "string", "array", "object")}
_CONJOINING = frozenset(REFS) | {"allOf"}  # the words whose schemas `_collect` adds to the conjunction


class Merging:
    """allOf and $ref flattened into one conjunction; each keyword merged into `Merged`."""

    def _collect(self, conj) -> list[Node]:
        """Flatten allOf and $ref-with-siblings into a list of plain schema dicts."""
        if len(conj) == 1 and not (self.index.dynamic or self.index.recursive):
            # most conjunctions: one schema that brings no other, in a scope nothing changes
            node = self._rebase(conj[0])
            schema = node.schema
            if isinstance(schema, dict) and schema.keys().isdisjoint(EXPANDED):
                return [node]
        out: list[Node] = []
        # each entry carries the dynamic scope of its own path (a sibling's resources are not
        # in it); the conjunction goes on in the scope of all of them
        stack = [(n, self.scope) for n in reversed(conj)]
        seen: set = set()
        scopes = []
        while stack:
            node, self.scope = stack.pop()
            node = self._rebase(node)
            self.enter(node)
            scopes.append(self.scope)
            schema = node.schema
            if schema is True:
                continue
            if schema is False:
                return [node]
            if not isinstance(schema, dict):
                raise SchemaError(f"a schema must be an object or a boolean, not {type(schema).__name__}", node.ptr)
            if id(schema) in seen:
                continue
            seen.add(id(schema))
            if "allOf" in schema and (not isinstance(schema["allOf"], list) or not schema["allOf"]):
                raise SchemaError("allOf must be a non-empty array", node.ptr + "/allOf")
            out.append(self._flat(node))
            # the conjuncts it brings, in the order the schema lists them (their properties
            # are laid out in this order), then the expansions of not/if/dependencies
            parts: list[Node] = []
            if not schema.keys().isdisjoint(_CONJOINING):  # most schemas bring none
                for word in schema:
                    if word in REFS:
                        parts.append(self.resolve_ref(word, node))
                    elif word == "allOf":
                        parts.extend(Node(sub, f"{node.ptr}/allOf/{j}", node.base) for j, sub in enumerate(schema["allOf"]))
            parts.extend(self._expansions(node))
            stack.extend((n, self.scope) for n in reversed(parts))  # popped first to last
        merged = dict(scopes[0]) if scopes else dict(self.scope)
        for scope in scopes[1:]:
            for name, target in scope.items():
                merged.setdefault(name, target)
        self.scope = merged
        return out


    def _flat(self, node: Node) -> Node:
        """The node without the keywords `_collect` has already expanded ($ref, allOf, not, ...).

        Conjunctions handed on (when anyOf/oneOf is distributed) hold these flat copies, so
        expanding them again adds nothing: otherwise an anyOf reached through a $ref or a
        `not` would be distributed over and over.
        """
        s = node.schema
        if s.keys().isdisjoint(EXPANDED):
            return node
        flat = self._synth("flat", s, lambda: {k: v for k, v in s.items() if k not in EXPANDED})
        return Node(flat, node.ptr, node.base)


    def _merge(self, conj) -> Merged | None:
        """Merged keywords of a conjunction that must not contain anyOf/oneOf (propertyNames)."""
        nodes = self._collect(conj)
        if any(n.schema is False for n in nodes):
            return None
        for n in nodes:
            for k in ("anyOf", "oneOf", "nullable"):
                if k in n.schema:
                    self.unsupported(k, n.ptr, "inside propertyNames")
        m = Merged(types=set(TYPES))
        for node in nodes:
            self._merge_one(m, node)
        return m


    def _merge_one(self, m: Merged, node: Node) -> None:
        """Merge the keywords of `node` into `m`: each family of keywords only where the
        schema has one of them (most subschemas have a few keywords of one family)."""
        s = node.schema
        p = node.ptr
        words = s.keys()
        if not words.isdisjoint(_REFUSED):
            for key in s:
                if key in UNSUPPORTED or (self.dialect.draft == "7" and key in ("contentMediaType", "contentEncoding")):
                    self.unsupported(key, p)
        if "type" in s:
            named = s["type"]
            known = _TYPE_SETS.get(named) if type(named) is str else None  # most: one type's name
            m.types &= known if known is not None else type_set(named, p + "/type")
        if TYPES_KEY in s:
            m.types &= set(s[TYPES_KEY])
        if NOT_PATTERN_KEY in s:
            m.not_patterns = (m.not_patterns or []) + [(s[NOT_PATTERN_KEY], p)]
        if NOT_STRINGS_KEY in s:
            m.not_strings = (m.not_strings or []) + list(s[NOT_STRINGS_KEY])
            m.not_strings_ptr = p
        values = None
        if "enum" in s:
            if not isinstance(s["enum"], list):
                raise SchemaError("enum must be an array", p + "/enum")
            if not s["enum"]:
                self.note_empty("enum is empty: no value can match", p + "/enum")
            values = list(s["enum"])
            m.enum_ptr = p + "/enum"
        if "const" in s:
            values = [s["const"]] if values is None else [v for v in values if json_equal(v, s["const"])]
            m.enum_ptr = p + "/const"
        if values is not None:
            m.enum = values if m.enum is None else [v for v in m.enum if any(json_equal(v, w) for w in values)]
        if not words.isdisjoint(_NUMBER_WORDS):
            self._merge_numbers(m, s, p)
        if not words.isdisjoint(_STRING_WORDS):
            _merge_strings(m, s, p)
        if not words.isdisjoint(_OBJECT_WORDS):
            _merge_objects(m, node)
        if not words.isdisjoint(_ARRAY_WORDS):
            _merge_arrays(m, node)

    def _merge_numbers(self, m: Merged, s: dict, p: str) -> None:
        """`format` (a string format, or an integer range), bounds and `multipleOf`."""
        lo, lo_s, hi, hi_s = None, False, None, False
        if "format" in s:
            name = s["format"]
            if not isinstance(name, str):
                raise SchemaError("format must be a string", p + "/format")
            verdict = fmt.asserted(name, self.formats)
            if verdict is None:
                self.unsupported("format", p, f"unknown format {name!r} (formats='strict')")
            elif verdict and name in fmt.INTEGER_RANGES:  # an integer in range, when a number
                lo, hi = (Decimal(x) for x in fmt.INTEGER_RANGES[name])
                m.types.discard("fraction")
            elif verdict:
                m.formats = (m.formats or []) + [(name, p + "/format")]
        for key, strict in (("minimum", False), ("exclusiveMinimum", True)):
            if key in s:
                v = number_value(s[key], p + "/" + key)
                if lo is None or v > lo or (v == lo and strict):
                    lo, lo_s = v, strict
        for key, strict in (("maximum", False), ("exclusiveMaximum", True)):
            if key in s:
                v = number_value(s[key], p + "/" + key)
                if hi is None or v < hi or (v == hi and strict):
                    hi, hi_s = v, strict
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_s or hi_s))):
            word = "maximum" if "maximum" in s else "exclusiveMaximum"
            self.note_empty(f"minimum {lo} is above maximum {hi}: no number can match", f"{p}/{word}")
            m.types -= NUMBER_KINDS
        if lo is not None and (m.lo is None or lo > m.lo or (lo == m.lo and lo_s)):
            m.lo, m.lo_strict = lo, lo_s
        if hi is not None and (m.hi is None or hi < m.hi or (hi == m.hi and hi_s)):
            m.hi, m.hi_strict = hi, hi_s
        if lo is not None or hi is not None:
            m.bound_ptr = p
        if "multipleOf" in s:
            v = number_value(s["multipleOf"], p + "/multipleOf")
            if v <= 0:
                raise SchemaError("multipleOf must be greater than 0", p + "/multipleOf")
            m.multiple_of = (m.multiple_of or []) + [(v, p + "/multipleOf")]
        if NOT_MULTIPLE_KEY in s:
            m.not_multiple_of = (m.not_multiple_of or []) + [(number_value(s[NOT_MULTIPLE_KEY], p), p + "/multipleOf")]


def _merge_strings(m: Merged, s: dict, p: str) -> None:
    if "minLength" in s:
        v = count_value(s["minLength"], p + "/minLength")
        if v > m.min_len:
            m.min_len, m.len_ptrs = v, (p + "/minLength", m.len_ptrs[1])
    if "maxLength" in s:
        v = count_value(s["maxLength"], p + "/maxLength")
        if m.max_len is None or v < m.max_len:
            m.max_len, m.len_ptrs = v, (m.len_ptrs[0], p + "/maxLength")
    if "pattern" in s:
        if not isinstance(s["pattern"], str):
            raise SchemaError("pattern must be a string", p + "/pattern")
        m.patterns = (m.patterns or []) + [(s["pattern"], p + "/pattern")]


def _merge_objects(m: Merged, node: Node) -> None:
    s = node.schema
    p = node.ptr
    obj_keys = ("properties", "patternProperties", "additionalProperties")
    if any(k in s for k in obj_keys):
        props = s.get("properties", {})
        pats = s.get("patternProperties", {})
        if not isinstance(props, dict) or not isinstance(pats, dict):
            raise SchemaError("properties and patternProperties must be objects", p)
        add = node.child("additionalProperties", s["additionalProperties"]) if "additionalProperties" in s else None
        m.objects = (m.objects or []) + [(node, props, pats, add)]
    if "required" in s:
        req = s["required"]
        if not isinstance(req, list) or not all(isinstance(k, str) for k in req):
            raise SchemaError("required must be an array of strings", p + "/required")
        m.required = m.required or {}
        for k in req:
            m.required.setdefault(k, p + "/required")
    if "minProperties" in s:
        m.min_props = max(m.min_props, count_value(s["minProperties"], p + "/minProperties"))
    if "maxProperties" in s:
        v = count_value(s["maxProperties"], p + "/maxProperties")
        m.max_props = v if m.max_props is None else min(m.max_props, v)
    if SOME_MEMBER_KEY in s:
        m.some_members = (m.some_members or []) + [(node, s[SOME_MEMBER_KEY])]
    if "propertyNames" in s:
        m.property_names = (m.property_names or []) + [node.child("propertyNames", s["propertyNames"])]


def _merge_arrays(m: Merged, node: Node) -> None:
    s = node.schema
    p = node.ptr
    prefix, rest, has_items = [], None, False
    if isinstance(s.get("items"), TupleItems):
        prefix = [node.child_of("items", i, x) for i, x in enumerate(s["items"])]
        if "additionalItems" in s:
            rest = node.child("additionalItems", s["additionalItems"])
        has_items = True
    else:
        if "prefixItems" in s:
            if not isinstance(s["prefixItems"], list):
                raise SchemaError("prefixItems must be an array", p + "/prefixItems")
            prefix = [node.child_of("prefixItems", i, x) for i, x in enumerate(s["prefixItems"])]
            has_items = True
        if "items" in s:
            if isinstance(s["items"], list):
                raise SchemaError("items must be a schema in draft 2020-12 (use prefixItems)", p + "/items")
            rest = node.child("items", s["items"])
            has_items = True
    if has_items:
        m.arrays = (m.arrays or []) + [(node, prefix, rest)]
    if "minItems" in s:
        v = count_value(s["minItems"], p + "/minItems")
        if v > m.min_items:
            m.min_items, m.items_ptrs = v, (p, m.items_ptrs[1])
    if "maxItems" in s:
        v = count_value(s["maxItems"], p + "/maxItems")
        if m.max_items is None or v < m.max_items:
            m.max_items, m.items_ptrs = v, (m.items_ptrs[0], p)
    if "contains" in s:
        m.contains = (m.contains or []) + [node.child("contains", s["contains"])]
        if "minContains" in s:
            v = count_value(s["minContains"], p + "/minContains")
            m.min_contains = v if m.min_contains is None else max(m.min_contains, v)
        if "maxContains" in s:
            v = count_value(s["maxContains"], p + "/maxContains")
            m.max_contains = v if m.max_contains is None else min(m.max_contains, v)
    if s.get("uniqueItems") is True:
        m.unique = p + "/uniqueItems"
