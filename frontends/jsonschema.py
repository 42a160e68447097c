"""JSON Schema (draft 2020-12 and draft 7) to grammarc IR.

`schema_to_grammar` turns a schema into a `Grammar` whose language is the JSON texts that
validate against it, laid out as the whitespace options say. The rule it follows is *never
widen*: a keyword that cannot be expressed exactly raises `UnsupportedSchemaError` naming the
keyword and its JSON pointer (``lenient=True`` ignores such keywords instead, with one warning
listing each); a schema that describes no value raises `SchemaError`.

Some valid texts are deliberately left out where the exact language is not context-free or
would be needlessly large (the grammar is then a *subset*, which keeps generation sound):

- properties appear in the schema's order, additional properties after the named ones;
- numbers under `minimum`/`maximum`/`multipleOf` and `integer` values are written without an
  exponent (``1e3``); integers may carry a zero fraction (``1.0``) as JSON Schema allows
  (``integer_fraction=False`` leaves it out: pydantic reads ``1.0`` as a float);
- `const`/`enum` numbers are matched in plain notation with optional trailing zeros; strings in
  `const`/`enum` and property names are matched as written by ``json.dumps`` (raw, or with
  ``ensure_ascii``), not in every escape spelling;
- `format` strings are matched with raw characters (see `json_formats`);
- lone surrogate escapes (``"\\ud800"``) are never matched.

Keywords rewritten into exact equivalents (see `_Builder._expansions` and `_negate`):

- ``not: X``: the complement of X as an anyOf of plain schemas (de Morgan over X's keywords;
  each keyword's complement stays within the type it applies to: ``not {minimum: 5}`` is
  ``{type: number, exclusiveMaximum: 5}``; ``not {type: integer}`` includes the non-integer
  numbers; ``not {enum: [scalars]}`` is the other types, the other boolean, the strings but
  these, and the number intervals between the excluded numbers). X with pattern, format,
  multipleOf, uniqueItems, additional/pattern properties, oneOf... is refused;
- ``if/then/else``: ``anyOf: [allOf: [if, then], allOf: [not if, else]]``;
- ``dependentRequired``/``dependentSchemas``/``dependencies``: per key, "absent, or the
  dependency holds" (an anyOf);
- ``maxContains``: each item is a hit (contains) or a miss (not contains), hits counted;
- ``oneOf`` whose branches are not provably disjoint: branch i becomes ``allOf: [A_i, not A_j
  for every j != i]`` (exact wherever each branch can be negated; at most 64 alternatives each);
- ``pattern`` with ``minLength``/``maxLength``, several patterns, ``format`` with either: the
  length range is pushed into the pattern's repetition counts where a concatenation has one
  part of variable length (``^[a-z0-9_]+$`` + maxLength 64 is ``[a-z0-9_]{1,64}``), else the
  product automaton of the patterns, the format and a character counter, emitted as
  right-linear rules (at most 1,500 states; ``format: email`` with a length is refused);
- ``multipleOf`` a/10**s: a divisibility automaton over the digits of x*10**s; with bounds,
  the multiples are listed (at most 256) or, for a half-open range around 0, the unsigned
  automaton plus the listed multiples between 0 and the bound.

Whitespace (`whitespace=`):

- ``"bounded"`` (default): between any two tokens, up to 2 spaces or tabs, optionally followed
  by one line break (``\\n`` or ``\\r\\n``) and up to 64 spaces or tabs -- enough for indent-4
  pretty printing 16 levels deep, without letting a model emit whitespace forever;
- ``"compact"``: no whitespace at all (``{"a":1,"b":[1,2]}``);
- ``"unbounded"``: any run of JSON whitespace (``[ \\t\\n\\r]*``);
- ``indent=k``: the fixed layout of ``json.dumps(x, indent=k)`` (nesting deeper than 32 levels
  is not produced);
- ``separators=(item, key)``: these exact separator strings, no other whitespace (like
  ``json.dumps``); combined with `indent` they are used as ``json.dumps`` would.

No whitespace is allowed before or after the top-level value.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from grammarc.errors import SchemaError, UnsupportedSchemaError
from grammarc.ir import Alt, Expr, Grammar, Literal, Ref, Regex, Repeat, Seq

from . import json_formats as jf
from . import numeric_ranges as nr

DEFAULT_BASE = "https://grammarc.invalid/schema.json"
MAX_INDENT_DEPTH = 32
MAX_COUNT_STATES = 4000
MAX_MODULUS = 2000
MAX_ONE_OF_PRODUCT = 64  # alternatives per exclusive oneOf branch
MAX_STRING_STATES = 1500  # character automaton for pattern & format & length

NUMBER_RFC = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
WS_BOUNDED = r"[ \t]{1,2}(?:\r?\n[ \t]{0,64})?|\r?\n[ \t]{0,64}"
WS_UNBOUNDED = r"[ \t\n\r]+"

ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$comment", "$defs", "definitions",
    "$vocabulary", "title", "description", "default", "examples", "deprecated", "readOnly",
    "writeOnly", "contentMediaType", "contentEncoding", "contentSchema", "nullable",
})
UNSUPPORTED = frozenset({"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef"})
# private keywords of the schemas that negation builds (never in user schemas)
TYPES_KEY = "$grammarc:types"  # a set of internal TYPES (e.g. "fraction": non-integer numbers)
NOT_STRINGS_KEY = "$grammarc:notStrings"  # strings other than these
NUMBER_KINDS = frozenset({"integer", "fraction"})
EXPANDED = frozenset({"$ref", "allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
                      "dependencies"})
SUPPORTED = frozenset({
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format", "properties", "required",
    "additionalProperties", "patternProperties", "propertyNames", "minProperties",
    "maxProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
    "contains", "minContains", "maxContains", "uniqueItems", "allOf", "anyOf", "oneOf", "$ref",
    "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies",
})
TYPES = ("null", "boolean", "integer", "fraction", "string", "array", "object")


def schema_to_grammar(
    schema: dict | bool | str,
    *,
    lenient: bool = False,
    whitespace: str = "bounded",
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    close_objects: bool = False,
    draft: str | None = None,
    registry: dict[str, Any] | None = None,
    start: str = "start",
    integer_fraction: bool = True,
) -> Grammar:
    """The grammar of the JSON texts that validate against `schema` (see the module docstring).

    `schema` is a dict, a boolean, or JSON text. `draft` is ``"2020-12"`` or ``"7"`` (default:
    from ``$schema``, else 2020-12). `registry` maps absolute URIs to schema documents that
    ``$ref`` may use (nothing is ever fetched). `close_objects=True` treats a missing
    `additionalProperties` as false. `integer_fraction=False` writes integers (``type:
    integer`` and integer `const`/`enum` values) without a zero fraction: ``1``, never ``1.0``
    (JSON Schema counts ``1.0`` as an integer, but e.g. pydantic's strict mode does not).
    """
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"schema is not valid JSON: {exc}") from None
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a schema must be an object or a boolean, not {type(schema).__name__}")
    if whitespace not in ("bounded", "compact", "unbounded"):
        raise ValueError(f"whitespace must be 'bounded', 'compact' or 'unbounded', not {whitespace!r}")
    if indent is not None and (not isinstance(indent, int) or indent < 0):
        raise ValueError("indent must be a non-negative integer")
    builder = _Builder(schema, lenient=lenient, layout=_Layout.make(whitespace, indent, separators),
                       close_objects=close_objects, draft=draft, registry=registry or {},
                       integer_fraction=integer_fraction)
    return builder.build(start)


# -- layout ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Layout:
    """Where whitespace and separators go. `indent` set: fixed pretty layout per depth."""

    ws: Expr | None  # optional whitespace between tokens (None: none)
    ws_pattern: str | None
    item_sep: str
    key_sep: str
    indent: int | None

    @staticmethod
    def make(whitespace: str, indent: int | None, separators) -> "_Layout":
        if indent is not None:
            item, key = separators if separators else (",", ": ")
            return _Layout(None, None, item, key, indent)
        if separators is not None:
            item, key = separators
            return _Layout(None, None, item, key, None)
        if whitespace == "compact":
            return _Layout(None, None, ",", ":", None)
        pattern = WS_BOUNDED if whitespace == "bounded" else WS_UNBOUNDED
        return _Layout(Repeat(Ref("ws"), 0, 1), pattern, ",", ":", None)

    def _pad(self, depth: int) -> Literal:
        return Literal("\n" + " " * (self.indent * depth))

    def open(self, bracket: str, depth: int) -> list[Expr]:
        if self.indent is not None:
            return [Literal(bracket), self._pad(depth + 1)]
        return [Literal(bracket)] + ([self.ws] if self.ws else [])

    def close(self, bracket: str, depth: int) -> list[Expr]:
        if self.indent is not None:
            return [self._pad(depth), Literal(bracket)]
        return ([self.ws] if self.ws else []) + [Literal(bracket)]

    def empty(self, pair: str) -> list[Expr]:
        if self.ws is not None:
            return [Literal(pair[0]), self.ws, Literal(pair[1])]
        return [Literal(pair)]

    def sep(self, depth: int) -> list[Expr]:
        if self.indent is not None:
            return [Literal(self.item_sep), self._pad(depth + 1)]
        if self.ws is not None:
            return [self.ws, Literal(self.item_sep), self.ws]
        return [Literal(self.item_sep)]

    def colon(self) -> list[Expr]:
        if self.ws is not None:
            return [self.ws, Literal(self.key_sep), self.ws]
        return [Literal(self.key_sep)]


# -- schema locations ---------------------------------------------------------------------

@dataclass(frozen=True)
class _Node:
    """A subschema with the JSON pointer it sits at and its base URI."""

    schema: Any
    ptr: str
    base: str

    def child(self, key, value) -> "_Node":
        return _Node(value, f"{self.ptr}/{_escape_ptr(str(key))}", self.base)


def _escape_ptr(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if",
               "then", "else", "unevaluatedProperties", "unevaluatedItems", "items", "contentSchema")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")


class _Index:
    """Every schema resource ($id), anchor and subschema base URI, for resolving $ref."""

    def __init__(self, root, draft: str, registry: dict):
        self.draft = draft
        self.resources: dict[str, _Node] = {}
        self.anchors: dict[str, _Node] = {}
        self.bases: dict[int, str] = {}
        self.root = self._add_document(root, DEFAULT_BASE, "#")
        self.pending = registry  # scanned on the first $ref that needs it (most never do)

    def _load_registry(self) -> bool:
        """Index the registry documents once; False when there was nothing left to load."""
        if not self.pending:
            return False
        pending, self.pending = self.pending, {}
        for uri, doc in pending.items():
            self._add_document(doc, uri, uri + "#")
        return True

    def _add_document(self, doc, uri: str, ptr: str) -> _Node:
        base = urldefrag(uri)[0]
        node = _Node(doc, ptr, base)
        self.resources.setdefault(base, node)
        self._scan(node)
        return self.resources[base] if ptr != "#" else node

    def _scan(self, node: _Node) -> None:
        schema = node.schema
        if not isinstance(schema, dict):
            return
        base = node.base
        sid = schema.get("$id")
        if isinstance(sid, str) and not (self.draft == "7" and "$ref" in schema):
            if self.draft == "7" and sid.startswith("#"):
                self.anchors[base + sid] = node
            else:
                full = urljoin(base, sid)
                base, frag = urldefrag(full)
                node = _Node(schema, node.ptr, base)
                self.resources.setdefault(base, node)
                if frag and self.draft == "7":
                    self.anchors[base + "#" + frag] = node
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(schema.get(key), str):
                self.anchors[base + "#" + schema[key]] = node
        self.bases[id(schema)] = base
        node = _Node(schema, node.ptr, base)
        for key in _SCHEMA_MAPS:
            value = schema.get(key)
            if isinstance(value, dict):
                for name, sub in value.items():
                    self._scan(node.child(key, None).child(name, sub))
        for key in _SCHEMA_ONE:
            value = schema.get(key)
            if isinstance(value, (dict, bool)):
                self._scan(node.child(key, value))
        for key in _SCHEMA_LISTS:
            value = schema.get(key)
            if isinstance(value, list):
                for i, sub in enumerate(value):
                    self._scan(node.child(key, None).child(i, sub))
        deps = schema.get("dependencies")
        if isinstance(deps, dict):
            for name, sub in deps.items():
                if isinstance(sub, (dict, bool)):
                    self._scan(node.child("dependencies", None).child(name, sub))

    def resolve(self, ref: str, node: _Node) -> _Node:
        target = urljoin(node.base, ref)
        uri, frag = urldefrag(target)
        ref_ptr = f"{node.ptr}/$ref"
        doc = self.resources.get(uri)
        if doc is None and self._load_registry():
            doc = self.resources.get(uri)
        if doc is None:
            if uri.startswith(("http://", "https://", "file:", "urn:")) and uri != urldefrag(DEFAULT_BASE)[0]:
                raise UnsupportedSchemaError(f"remote $ref {ref!r} is not supported (no network access at compile time; pass it in registry=)", ref_ptr)
            raise SchemaError(f"$ref {ref!r} does not resolve", ref_ptr)
        if not frag:
            return doc
        if frag.startswith("/"):
            current = doc.schema
            ptr = doc.ptr
            for token in frag[1:].split("/"):
                token = unquote(token).replace("~1", "/").replace("~0", "~")
                if isinstance(current, dict) and token in current:
                    current = current[token]
                elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
                    current = current[int(token)]
                else:
                    raise SchemaError(f"$ref {ref!r} does not resolve", ref_ptr)
                ptr = f"{ptr}/{_escape_ptr(token)}"
            return _Node(current, ptr, self.bases.get(id(current), doc.base))
        found = self.anchors.get(uri + "#" + frag)
        if found is None and self._load_registry():
            found = self.anchors.get(uri + "#" + frag)
        if found is None:
            raise SchemaError(f"$ref {ref!r} names no $anchor", ref_ptr)
        return found


# -- JSON values --------------------------------------------------------------------------

def _json_equal(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return _dec(a) == _dec(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _dec(x) -> Decimal:
    if isinstance(x, float):
        if math.isinf(x) or math.isnan(x):
            raise SchemaError(f"non-finite number {x!r}")
        return Decimal(repr(x))
    return Decimal(x)


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "integer" if _dec(value) == _dec(value).to_integral_value() else "fraction"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise SchemaError(f"not a JSON value: {value!r}")


def _type_set(value, ptr: str) -> set[str]:
    names = value if isinstance(value, list) else [value]
    out: set[str] = set()
    for name in names:
        if name == "number":
            out |= {"integer", "fraction"}
        elif name in ("null", "boolean", "integer", "string", "array", "object"):
            out.add(name)
        else:
            raise SchemaError(f"unknown type {name!r}", ptr)
    return out


# -- merged constraints -------------------------------------------------------------------

@dataclass
class _Merged:
    """The keywords of a conjunction of schemas (no anyOf/oneOf left), merged."""

    types: set
    enum: list | None = None
    enum_ptr: str = "#"
    lo: Decimal | None = None
    lo_strict: bool = False
    hi: Decimal | None = None
    hi_strict: bool = False
    bound_ptr: str = "#"
    multiple_of: list | None = None
    min_len: int = 0
    max_len: int | None = None
    patterns: list | None = None
    formats: list | None = None
    objects: list | None = None  # [(node, properties, patternProperties, additional)]
    required: dict | None = None  # key -> pointer
    min_props: int = 0
    max_props: int | None = None
    property_names: list | None = None
    arrays: list | None = None  # [(node, prefix list[_Node], rest _Node|None)]
    min_items: int = 0
    max_items: int | None = None
    contains: list | None = None
    min_contains: int | None = None
    max_contains: int | None = None
    unique: str | None = None
    not_strings: list | None = None
    not_strings_ptr: str = "#"


class _Builder:
    def __init__(self, schema, *, lenient, layout, close_objects, draft, registry, integer_fraction=True):
        if draft is None:
            uri = schema.get("$schema", "") if isinstance(schema, dict) else ""
            draft = "7" if isinstance(uri, str) and "draft-07" in uri else "2020-12"
        if draft not in ("2020-12", "7"):
            raise ValueError(f"draft must be '2020-12' or '7', not {draft!r}")
        self.draft = draft
        self.lenient = lenient
        self.layout = layout
        self.close_objects = close_objects
        self.int_tail = r"(?:\.0+)?" if integer_fraction else ""  # after an integer numeral
        self.index = _Index(schema, draft, registry)
        self.rules: dict[str, Expr] = {}
        self.internal: set[str] = set()
        self.memo: dict = {}
        self.keep: list = []
        self.ignored: list[str] = []
        self.active: set = set()
        self.resolving: set = set()
        self.nesting = 0
        self.names: set[str] = set()
        self.synthetic: dict = {}  # (what, id(schema)) -> schema built from it (stable ids)
        self.negating: set = set()

    # -- entry ---------------------------------------------------------------------------
    def build(self, start: str) -> Grammar:
        root = self.index.root
        self.names.add(start)
        body = self.value((root,), 0, hint="root")
        if body is None:
            raise SchemaError("the schema matches no JSON value", root.ptr)
        self.rules = {start: body, **self.rules}
        if self.layout.ws is not None and any("ws" in _references(body) for body in self.rules.values()):
            self._add_ws_rule()
        if self.ignored and self.lenient:
            warnings.warn("ignored JSON Schema keywords (lenient=True): " + ", ".join(self.ignored), stacklevel=3)
        rules = _inline_single_use(_reachable(self.rules, start), self.internal, start)
        return Grammar(rules=tuple(rules.items()), start=start)

    def _add_ws_rule(self) -> None:
        self.rules["ws"] = Regex(self.layout.ws_pattern)

    def _rebase(self, node: _Node) -> _Node:
        """The node with the base URI its own $id (if any) establishes."""
        base = self.index.bases.get(id(node.schema))
        return node if base is None or base == node.base else _Node(node.schema, node.ptr, base)

    # -- problems --------------------------------------------------------------------------
    def unsupported(self, keyword: str, ptr: str, why: str = "") -> None:
        where = f"{ptr}/{_escape_ptr(keyword)}"
        if self.lenient:
            entry = f"{keyword} at {where}"
            if entry not in self.ignored:
                self.ignored.append(entry)
            return
        raise UnsupportedSchemaError(f"keyword {keyword!r} is not supported{': ' + why if why else ''}", where)

    # -- rule plumbing ---------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint).strip("_") or "value"
        if base[0].isdigit():
            base = "_" + base
        name = base
        i = 2
        while name in self.names or name in ("ws",):
            name = f"{base}_{i}"
            i += 1
        self.names.add(name)
        return name

    def define(self, hint: str, body: Expr | None, *, internal: bool = False) -> Expr | None:
        if body is None:
            return None
        if isinstance(body, (Literal, Ref)):
            return body
        name = self.fresh(hint)
        self.rules[name] = body
        if internal:
            self.internal.add(name)
        return Ref(name)

    # -- values ----------------------------------------------------------------------------
    def value(self, conj: tuple[_Node, ...], depth: int, hint: str = "value") -> Expr | None:
        """IR for the values valid under every schema in `conj` (None: no value)."""
        conj = tuple(n for n in conj if n.schema is not True and n.schema != {})
        if any(n.schema is False for n in conj):
            return None
        dkey = depth if self.layout.indent is not None else 0
        if self.layout.indent is not None and depth > MAX_INDENT_DEPTH:
            return self._no_containers(conj, depth, hint)
        if not conj:
            return self.any_value(dkey)
        # a lone reference: share (and allow recursion through) the target's rule
        if len(conj) == 1 and isinstance(conj[0].schema, dict):
            only = self._rebase(conj[0])
            keys = set(only.schema) - ANNOTATIONS
            if keys == {"$ref"}:
                if id(only.schema) in self.resolving:
                    raise SchemaError("$ref cycle that never reaches a schema", only.ptr + "/$ref")
                target = self.index.resolve(only.schema["$ref"], only)
                self.resolving.add(id(only.schema))
                try:
                    return self.value((target,), depth, hint=_ref_hint(only.schema["$ref"]))
                finally:
                    self.resolving.discard(id(only.schema))
        key = (tuple(id(n.schema) for n in conj), dkey)
        if key in self.memo:
            cached = self.memo[key]
            return None if cached is False else cached
        name = self.fresh(hint)
        self.memo[key] = Ref(name)
        self.keep.append(conj)
        self.names.add(name)
        saved = self.resolving
        self.resolving = set()
        self.nesting += 1
        try:
            if self.nesting > 400:
                raise UnsupportedSchemaError("schema nesting too deep (recursive composition?)", conj[0].ptr)
            body = self._alternatives(conj, depth, hint)
        finally:
            self.nesting -= 1
            self.resolving = saved
        if body is None:
            self.memo[key] = False
            return None
        self.rules[name] = body
        return Ref(name)

    def _no_containers(self, conj, depth, hint):
        return None

    def any_value(self, depth: int) -> Expr:
        key = ("any", depth)
        if key in self.memo:
            return self.memo[key]
        name = self.fresh("value" if depth == 0 else f"value_d{depth}")
        self.memo[key] = Ref(name)
        parts: list[Expr] = [Literal("null"), Literal("true"), Literal("false"), Regex(NUMBER_RFC), Regex(jf.string_regex())]
        if self.layout.indent is None or depth < MAX_INDENT_DEPTH:
            item = self.any_value(depth + 1 if self.layout.indent is not None else 0)
            parts.append(self._array_layout([], item, 0, None, depth))
            member = Seq((Regex(jf.string_regex()), *self.layout.colon(), item))
            parts.append(self._members_repeat(member, 0, None, depth, "{}"))
        self.rules[name] = Alt(tuple(parts))
        return Ref(name)

    # -- conjunctions ----------------------------------------------------------------------
    def _alternatives(self, conj, depth, hint) -> Expr | None:
        """Distribute anyOf/oneOf/nullable over the conjunction, then build each branch."""
        conj = tuple(self._collect(conj))
        if any(n.schema is False for n in conj):
            return None
        for i, node in enumerate(conj):
            schema = node.schema
            if not isinstance(schema, dict):
                continue
            if schema.get("nullable") is True:
                rest = dict(schema)
                del rest["nullable"]
                branches = [_Node({"type": "null"}, node.ptr + "/nullable", node.base), _Node(rest, node.ptr, node.base)]
                return self._union(conj, i, branches, depth, hint)
            for word in ("anyOf", "oneOf"):
                if word in schema and not (self.draft == "7" and "$ref" in schema):
                    subs = schema[word]
                    if not isinstance(subs, list) or not subs:
                        raise SchemaError(f"{word} must be a non-empty array", f"{node.ptr}/{word}")
                    rest = {k: v for k, v in schema.items() if k != word}
                    self.keep.append(rest)
                    parent = _Node(rest, node.ptr, node.base)
                    branches = [_Node(sub, f"{node.ptr}/{word}/{j}", node.base) for j, sub in enumerate(subs)]
                    if word == "oneOf" and not self._disjoint(branches):
                        branches = self._exclusive(node, subs, branches)
                    return self._union(conj[:i] + (parent,) + conj[i + 1:], None, branches, depth, hint, extra_index=i)
        merged = _Merged(types=set(TYPES))
        for node in conj:
            self._merge_one(merged, node)
        return self._emit(merged, conj, depth, hint)

    def _exclusive(self, node: _Node, subs: list, branches: list[_Node]) -> list[_Node]:
        """oneOf with overlapping branches: branch i is ``allOf: [A_i, not A_j for j != i]``.

        Exact when every branch can be negated (see `_negate`); otherwise refused (lenient:
        the branches are kept as an anyOf, which is wider, as the warning says). The
        negations multiply out, so large products are refused too.
        """
        sizes = []
        for branch in branches:
            try:
                negated, _ = self._negate(branch)
            except _CannotNegate as exc:
                self.unsupported("oneOf", node.ptr, f"its branches are not provably disjoint, and {exc.why}")
                return branches
            sizes.append(len(negated["anyOf"]) if isinstance(negated, dict) and "anyOf" in negated else 1)
        if max(math.prod(sizes[:i] + sizes[i + 1:]) for i in range(len(sizes))) > MAX_ONE_OF_PRODUCT:
            self.unsupported("oneOf", node.ptr, "its branches are not provably disjoint, and excluding "
                             f"each from the others needs more than {MAX_ONE_OF_PRODUCT} alternatives")
            return branches

        def exclusive(i: int) -> dict:
            return {"allOf": [subs[i]] + [{"not": sub} for j, sub in enumerate(subs) if j != i]}

        return [_Node(self._synth(f"oneOf/{i}", subs, lambda i=i: exclusive(i)), b.ptr, node.base)
                for i, b in enumerate(branches)]

    def _union(self, conj, drop_index, branches, depth, hint, extra_index=None):
        base = conj if drop_index is None else conj[:drop_index] + conj[drop_index + 1:]
        parts = []
        for j, branch in enumerate(branches):
            sub = base + (branch,) if base else (branch,)
            if len(sub) == 1:
                expr = self.value(sub, depth, hint=f"{hint}_{j}")
            else:
                expr = self.value(sub, depth, hint=f"{hint}_{j}")
            if expr is not None and expr not in parts:
                parts.append(expr)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))

    def _disjoint(self, branches: list[_Node]) -> bool:
        """Whether no JSON value satisfies two of the branches (checked conservatively)."""
        sigs = []
        for b in branches:
            sig = self._signature(b, set())
            if sig is None:
                return False
            sigs.append(sig)
        for i in range(len(sigs)):
            for j in range(i + 1, len(sigs)):
                if not _signatures_disjoint(sigs[i], sigs[j]):
                    return False
        return True

    def _signature(self, node: _Node, seen: set):
        """(type set, const values or None, {required key: const}) of a branch, following $ref."""
        schema = node.schema
        if schema is False:
            return (set(), [], {})
        if schema is True:
            return (set(TYPES), None, {})
        if id(schema) in seen:
            return None
        seen = seen | {id(schema)}
        types = set(TYPES)
        values = None
        discriminators: dict = {}
        if "type" in schema:
            types &= _type_set(schema["type"], node.ptr + "/type")
        if "const" in schema:
            values = [schema["const"]]
        if "enum" in schema and isinstance(schema["enum"], list):
            values = list(schema["enum"]) if values is None else [v for v in values if any(_json_equal(v, e) for e in schema["enum"])]
        props = schema.get("properties")
        if isinstance(props, dict):
            for key in schema.get("required", []) or []:
                sub = props.get(key)
                if isinstance(sub, dict) and ("const" in sub or "enum" in sub):
                    discriminators[key] = [sub["const"]] if "const" in sub else list(sub["enum"])
        parts = []  # the branches this one is the conjunction of: its $ref and its allOf
        if "$ref" in schema:
            parts.append(self.index.resolve(schema["$ref"], node))
        for j, sub in enumerate(schema.get("allOf", []) or []):
            parts.append(node.child("allOf", None).child(j, sub))
        for part in parts:
            inner = self._signature(part, seen)
            if inner is None:
                return None
            types &= inner[0]
            if inner[1] is not None:
                values = inner[1] if values is None else [v for v in values if any(_json_equal(v, e) for e in inner[1])]
            for k, v in inner[2].items():
                discriminators.setdefault(k, v)
        if values is not None:
            types &= {_kind(v) for v in values}
            values = [v for v in values if _kind(v) in types]
        return (types, values, discriminators)

    # -- merging -----------------------------------------------------------------------------
    def _collect(self, conj) -> list[_Node]:
        """Flatten allOf and $ref-with-siblings into a list of plain schema dicts."""
        out: list[_Node] = []
        stack = list(reversed(conj))
        seen: set = set()
        while stack:
            node = self._rebase(stack.pop())
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
            if "$ref" in schema:
                target = self.index.resolve(schema["$ref"], node)
                if id(target.schema) in self.active:
                    raise UnsupportedSchemaError("a recursive $ref combined with sibling keywords is not supported", node.ptr + "/$ref")
                stack.append(target)
                if self.draft == "7":
                    continue
            out.append(self._flat(node))
            for j, sub in enumerate(schema.get("allOf", []) or []):
                stack.append(_Node(sub, f"{node.ptr}/allOf/{j}", node.base))
            stack.extend(self._expansions(node))
            if "allOf" in schema and (not isinstance(schema["allOf"], list) or not schema["allOf"]):
                raise SchemaError("allOf must be a non-empty array", node.ptr + "/allOf")
        return out

    def _flat(self, node: _Node) -> _Node:
        """The node without the keywords `_collect` has already expanded ($ref, allOf, not, ...).

        Conjunctions handed on (when anyOf/oneOf is distributed) hold these flat copies, so
        expanding them again adds nothing: otherwise an anyOf reached through a $ref or a
        `not` would be distributed over and over.
        """
        s = node.schema
        if not any(k in s for k in EXPANDED):
            return node
        flat = self._synth("flat", s, lambda: {k: v for k, v in s.items() if k not in EXPANDED})
        return _Node(flat, node.ptr, node.base)

    # -- keywords rewritten into anyOf/allOf (not, if/then/else, dependencies) -------------------
    def _synth(self, what: str, source, build):
        """A schema built from `source` once, so that equal requests share one id (memo keys)."""
        key = (what, id(source))
        if key not in self.synthetic:
            self.keep.append(source)
            self.synthetic[key] = build()
        return self.synthetic[key]

    def _expansions(self, node: _Node) -> list[_Node]:
        """Extra conjuncts for `not`, `if`/`then`/`else` and `dependent*`/`dependencies`.

        - ``not: X`` becomes the negation of X (see `_negate`), an anyOf of plain schemas;
        - ``if: I, then: T, else: E`` is ``anyOf: [allOf: [I, T], allOf: [not I, E]]`` (a
          missing then/else is true; `if` alone, or then/else alone, assert nothing);
        - ``dependentRequired: {k: [d...]}`` is ``anyOf: [{properties: {k: false}}, {required:
          [d...]}]`` (k absent, or every d present), and ``dependentSchemas: {k: S}`` is
          ``anyOf: [{properties: {k: false}}, {type: object, required: [k], allOf: [S]}]``;
          draft-7 ``dependencies`` holds either form.
        """
        s = node.schema
        out: list[_Node] = []
        if "not" in s:
            neg = self._negate_or_ignore(node.child("not", s["not"]))
            if neg is not None:
                out.append(neg)
        if "if" in s and ("then" in s or "else" in s):
            def ite():
                cond = s["if"]
                return {"anyOf": [{"allOf": [cond, s.get("then", True)]},
                                  {"allOf": [{"not": cond}, s.get("else", True)]}]}
            out.append(_Node(self._synth("ite", s, ite), node.ptr + "/if", node.base))
        for word in ("dependentRequired", "dependentSchemas", "dependencies"):
            deps = s.get(word)
            if deps is None:
                continue
            if not isinstance(deps, dict):
                raise SchemaError(f"{word} must be an object", f"{node.ptr}/{word}")
            out.append(_Node(self._synth(word, deps, lambda: _dependencies(deps)), f"{node.ptr}/{word}", node.base))
        return out

    def _negate_or_ignore(self, node: _Node) -> _Node | None:
        """The node for ``not: node``; None when lenient and the negation is not expressible."""
        try:
            schema, base = self._negate(node)
        except _CannotNegate as exc:
            self.unsupported("not", node.ptr.rsplit("/", 1)[0], exc.why)
            return None
        return _Node(schema, node.ptr, base)

    def _negate(self, node: _Node):
        """(schema, base URI) of the values that do NOT satisfy `node`, exactly, or _CannotNegate.

        not(K1 and K2 ...) = not K1 or not K2 ...: each keyword's negation is a plain schema
        restricted to the type the keyword applies to (``minimum: 5`` fails only for numbers
        below 5, so its negation is ``{type: number, exclusiveMaximum: 5}``). Keywords whose
        negation is not regular or not simple (pattern, format, multipleOf, uniqueItems,
        additionalProperties, oneOf, ...) raise _CannotNegate.
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
            raise _CannotNegate("a recursive schema")
        self.negating.add(id(s))
        try:
            result = self._negate_dict(node)
        finally:
            self.negating.discard(id(s))
        self.keep.append(s)
        self.synthetic[key] = result
        return result, node.base

    def _negate_dict(self, node: _Node):
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

        keys = ["$ref"] if self.draft == "7" and "$ref" in s else list(s)
        is_2020 = self.draft != "7"
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
            if k == "$ref":
                target = self.index.resolve(v, node)
                schema, base = self._negate(target)
                if base != node.base and not isinstance(schema, bool):
                    raise _CannotNegate("a $ref into another schema resource")
                add(schema)
            elif k == "type":
                rest = sorted(set(TYPES) - _type_set(v, node.ptr + "/type"))
                if rest:
                    add({TYPES_KEY: rest})
            elif k == TYPES_KEY:
                rest = sorted(set(TYPES) - set(v))
                if rest:
                    add({TYPES_KEY: rest})
            elif k == NOT_STRINGS_KEY:
                add({"enum": list(v)})
            elif k in ("enum", "const"):
                new = [v] if k == "const" else v
                if not isinstance(new, list):
                    raise SchemaError("enum must be an array", node.ptr + "/enum")
                values = new if values is None else [x for x in values if any(_json_equal(x, y) for y in new)]
            elif k in bounds:
                other, typ = bounds[k]
                if typ == "number":
                    add({"type": "number", other: _number(v, f"{node.ptr}/{k}")})
                else:
                    n = _count(v, f"{node.ptr}/{k}")
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
            elif k == "items" and not isinstance(v, list) and not (is_2020 and "prefixItems" in s):
                if v is not True and v != {}:
                    add({"type": "array", "contains": neg(v)})
            elif k == "contains" and not (is_2020 and ("minContains" in s or "maxContains" in s)):
                add({"type": "array", "items": neg(v)})
            elif k == "uniqueItems" and v is False:
                continue
            elif k == "allOf":
                for sub in v:
                    add(neg(sub))
            elif k == "anyOf":
                add({"allOf": [neg(sub) for sub in v]})
            elif k == "not":
                add(v)
            elif k == "if":
                if "then" in s or "else" in s:
                    add({"if": v, "then": neg(s["then"]) if "then" in s else False,
                         "else": neg(s["else"]) if "else" in s else False})
            elif k in ("then", "else") or (k in ("minContains", "maxContains") and "contains" not in s):
                continue
            elif (k in SUPPORTED or k in UNSUPPORTED or k == "nullable") and not (
                    k in ("prefixItems", "minContains", "maxContains") and not is_2020) and not (
                    k == "additionalItems" and is_2020):
                raise _CannotNegate(f"the negation of {k!r} is not supported")
        if values is not None:
            for schema in _negate_values(values):
                add(schema)
        if not disj:
            return False
        return disj[0] if len(disj) == 1 else {"anyOf": disj}

    def _merge(self, conj) -> _Merged | None:
        """Merged keywords of a conjunction that must not contain anyOf/oneOf (propertyNames)."""
        nodes = self._collect(conj)
        if any(n.schema is False for n in nodes):
            return None
        for n in nodes:
            for k in ("anyOf", "oneOf", "nullable"):
                if k in n.schema:
                    self.unsupported(k, n.ptr, "inside propertyNames")
        m = _Merged(types=set(TYPES))
        for node in nodes:
            self._merge_one(m, node)
        return m

    def _merge_one(self, m: _Merged, node: _Node) -> None:
        s = node.schema
        p = node.ptr
        for key in s:
            if key in UNSUPPORTED or (self.draft == "7" and key in ("contentMediaType", "contentEncoding")):
                self.unsupported(key, p)
        if "type" in s:
            m.types &= _type_set(s["type"], p + "/type")
        if TYPES_KEY in s:
            m.types &= set(s[TYPES_KEY])
        if NOT_STRINGS_KEY in s:
            m.not_strings = (m.not_strings or []) + list(s[NOT_STRINGS_KEY])
            m.not_strings_ptr = p
        values = None
        if "enum" in s:
            if not isinstance(s["enum"], list):
                raise SchemaError("enum must be an array", p + "/enum")
            if not s["enum"]:
                raise SchemaError("enum is empty: no value can match", p + "/enum")
            values = list(s["enum"])
            m.enum_ptr = p + "/enum"
        if "const" in s:
            values = [s["const"]] if values is None else [v for v in values if _json_equal(v, s["const"])]
            m.enum_ptr = p + "/const"
        if values is not None:
            m.enum = values if m.enum is None else [v for v in m.enum if any(_json_equal(v, w) for w in values)]
        # numbers
        lo, lo_s, hi, hi_s = None, False, None, False
        for key, strict in (("minimum", False), ("exclusiveMinimum", True)):
            if key in s:
                v = _number(s[key], p + "/" + key)
                if lo is None or v > lo or (v == lo and strict):
                    lo, lo_s = v, strict
        for key, strict in (("maximum", False), ("exclusiveMaximum", True)):
            if key in s:
                v = _number(s[key], p + "/" + key)
                if hi is None or v < hi or (v == hi and strict):
                    hi, hi_s = v, strict
        if lo is not None and hi is not None and (lo > hi or (lo == hi and (lo_s or hi_s))):
            word = "maximum" if "maximum" in s else "exclusiveMaximum"
            raise SchemaError(f"minimum {lo} is above maximum {hi}: no number can match", f"{p}/{word}")
        if lo is not None and (m.lo is None or lo > m.lo or (lo == m.lo and lo_s)):
            m.lo, m.lo_strict = lo, lo_s
        if hi is not None and (m.hi is None or hi < m.hi or (hi == m.hi and hi_s)):
            m.hi, m.hi_strict = hi, hi_s
        if lo is not None or hi is not None:
            m.bound_ptr = p
        if "multipleOf" in s:
            v = _number(s["multipleOf"], p + "/multipleOf")
            if v <= 0:
                raise SchemaError("multipleOf must be greater than 0", p + "/multipleOf")
            m.multiple_of = (m.multiple_of or []) + [(v, p + "/multipleOf")]
        # strings
        if "minLength" in s:
            m.min_len = max(m.min_len, _count(s["minLength"], p + "/minLength"))
        if "maxLength" in s:
            v = _count(s["maxLength"], p + "/maxLength")
            m.max_len = v if m.max_len is None else min(m.max_len, v)
        if "pattern" in s:
            if not isinstance(s["pattern"], str):
                raise SchemaError("pattern must be a string", p + "/pattern")
            m.patterns = (m.patterns or []) + [(s["pattern"], p + "/pattern")]
        if "format" in s:
            m.formats = (m.formats or []) + [(s["format"], p + "/format")]
        # objects
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
            m.min_props = max(m.min_props, _count(s["minProperties"], p + "/minProperties"))
        if "maxProperties" in s:
            v = _count(s["maxProperties"], p + "/maxProperties")
            m.max_props = v if m.max_props is None else min(m.max_props, v)
        if "propertyNames" in s:
            m.property_names = (m.property_names or []) + [node.child("propertyNames", s["propertyNames"])]
        # arrays
        prefix, rest, has_items = [], None, False
        if self.draft == "7":
            items = s.get("items")
            if isinstance(items, list):
                prefix = [node.child("items", None).child(i, x) for i, x in enumerate(items)]
                if "additionalItems" in s:
                    rest = node.child("additionalItems", s["additionalItems"])
                has_items = True
            elif items is not None:
                rest = node.child("items", items)
                has_items = True
        else:
            if "prefixItems" in s:
                if not isinstance(s["prefixItems"], list):
                    raise SchemaError("prefixItems must be an array", p + "/prefixItems")
                prefix = [node.child("prefixItems", None).child(i, x) for i, x in enumerate(s["prefixItems"])]
                has_items = True
            if "items" in s:
                if isinstance(s["items"], list):
                    raise SchemaError("items must be a schema in draft 2020-12 (use prefixItems)", p + "/items")
                rest = node.child("items", s["items"])
                has_items = True
        if has_items:
            m.arrays = (m.arrays or []) + [(node, prefix, rest)]
        if "minItems" in s:
            m.min_items = max(m.min_items, _count(s["minItems"], p + "/minItems"))
        if "maxItems" in s:
            v = _count(s["maxItems"], p + "/maxItems")
            m.max_items = v if m.max_items is None else min(m.max_items, v)
        if "contains" in s:
            m.contains = (m.contains or []) + [node.child("contains", s["contains"])]
            if "minContains" in s and self.draft != "7":
                v = _count(s["minContains"], p + "/minContains")
                m.min_contains = v if m.min_contains is None else max(m.min_contains, v)
            if "maxContains" in s and self.draft != "7":
                v = _count(s["maxContains"], p + "/maxContains")
                m.max_contains = v if m.max_contains is None else min(m.max_contains, v)
        if s.get("uniqueItems") is True:
            m.unique = p + "/uniqueItems"

    # -- emission ------------------------------------------------------------------------------
    def _emit(self, m: _Merged, conj, depth, hint) -> Expr | None:
        if m.enum is not None:
            return self._emit_enum(m, conj, depth, hint)
        parts = []
        types = m.types
        if "null" in types:
            parts.append(Literal("null"))
        if "boolean" in types:
            parts.append(Alt((Literal("true"), Literal("false"))))
        if types & NUMBER_KINDS:
            num = self._number(m, "fraction" in types) if "integer" in types else self._fractions_only(m)
            if num is not None:
                parts.append(num)
        if "string" in types:
            st = self._string(m)
            if st is not None:
                parts.append(st)
        if "array" in types:
            arr = self._array(m, depth, hint)
            if arr is not None:
                parts.append(arr)
        if "object" in types:
            obj = self._object(m, depth, hint)
            if obj is not None:
                parts.append(obj)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))

    def _emit_enum(self, m: _Merged, conj, depth, hint) -> Expr | None:
        keep = []
        for v in m.enum:
            if _kind(v) == "integer" and "integer" not in m.types:
                continue
            if _kind(v) != "integer" and _kind(v) not in m.types:
                continue
            if self._valid(v, conj):
                keep.append(v)
        if not keep:
            return None
        parts = []
        for v in keep:
            e = self.literal_value(v, depth)
            if e not in parts:
                parts.append(e)
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))

    def literal_value(self, v, depth: int) -> Expr:
        """Every layout of the JSON value `v` (numbers: every plain numeral of that value)."""
        if v is None:
            return Literal("null")
        if isinstance(v, bool):
            return Literal("true" if v else "false")
        if isinstance(v, (int, float)):
            return Regex(self._numeral(_dec(v)))
        if isinstance(v, str):
            return _string_literal(v)
        if isinstance(v, list):
            if not v:
                return Seq(tuple(self.layout.empty("[]")))
            items: list[Expr] = []
            for i, x in enumerate(v):
                if i:
                    items.extend(self.layout.sep(depth))
                items.append(self.literal_value(x, depth + 1))
            return Seq((*self.layout.open("[", depth), *items, *self.layout.close("]", depth)))
        if isinstance(v, dict):
            if not v:
                return Seq(tuple(self.layout.empty("{}")))
            # any order of the members is the same value: every order for small objects
            import itertools

            orders = itertools.permutations(v.items()) if len(v) <= 4 else [tuple(v.items())]
            alts = []
            for order in orders:
                items = []
                for i, (k, x) in enumerate(order):
                    if i:
                        items.extend(self.layout.sep(depth))
                    items.extend([_string_literal(k), *self.layout.colon(), self.literal_value(x, depth + 1)])
                alts.append(Seq((*self.layout.open("{", depth), *items, *self.layout.close("}", depth))))
            return alts[0] if len(alts) == 1 else Alt(tuple(alts))
        raise SchemaError(f"not a JSON value: {v!r}")

    # numbers
    def _numeral(self, d: Decimal) -> str:
        """Every plain numeral of the number `d` (integers: with a zero fraction if allowed)."""
        if not self.int_tail and d == d.to_integral_value():
            return nr.integer_range_regex(int(d), int(d))
        return nr.decimal_range_regex(d, False, d, False)

    def _number(self, m: _Merged, fractions: bool) -> Expr | None:
        integer_only = not fractions
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

    def _fractions_only(self, m: _Merged) -> Expr | None:
        """Non-integer numbers (``not: {type: integer}``), plain notation, within the bounds."""
        if m.multiple_of:
            self.unsupported("multipleOf", m.multiple_of[-1][1].rsplit("/", 1)[0], "on non-integer numbers only")
        pattern = nr.fraction_range_regex(m.lo, m.lo_strict, m.hi, m.hi_strict)
        return None if pattern is None else Regex(pattern)

    def _multiple_of(self, m: _Merged, integer_only: bool) -> Expr | None:
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
            if hi is None:  # x >= lo with lo <= 0: every non-negative multiple, listed negatives
                parts = [unsigned] + listed(lo, m.lo_strict, Decimal(0), True)
            else:  # x <= hi with hi >= 0: every non-positive multiple, listed positives
                parts = [Seq((Literal("-"), unsigned)), zero] + listed(Decimal(0), True, hi, m.hi_strict)
            return Alt(tuple(parts))
        if lo is None or hi is None or (hi - lo) / step > 256:
            self.unsupported("multipleOf", ptr.rsplit("/", 1)[0], "multipleOf together with a wide or open minimum/maximum")
            return self._number(_replace(m, multiple_of=None), not integer_only)
        parts = listed(lo, m.lo_strict, hi, m.hi_strict)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))

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

    # strings
    def _string(self, m: _Merged) -> Expr | None:
        if m.max_len is not None and m.min_len > m.max_len:
            return None
        patterns = sorted({p for p, _ in m.patterns or []})
        formats = sorted({f for f, _ in m.formats or []})
        length_limited = m.min_len > 0 or m.max_len is not None
        if m.not_strings:
            if not (patterns or formats or length_limited):
                return Regex(jf.string_excluding(sorted(set(m.not_strings))))
            self.unsupported("not", m.not_strings_ptr, "excluded strings together with pattern, format or length")
        if formats and not patterns and len(formats) == 1 and not length_limited:
            ptr = m.formats[-1][1]
            name = formats[0]
            if not isinstance(name, str):
                raise SchemaError("format must be a string", ptr)
            pattern = jf.format_regex(name)
            if pattern is None:
                self.unsupported("format", ptr.rsplit("/", 1)[0], f"unknown format {name!r}")
                return Regex(jf.string_regex(m.min_len, m.max_len))
            return Regex(pattern)
        if patterns and not formats and len(patterns) == 1 and not length_limited:
            ptr = m.patterns[-1][1]
            try:
                body = jf.search_regex(patterns[0])
            except jf.PatternError as exc:
                self.unsupported("pattern", ptr.rsplit("/", 1)[0], str(exc))
                return Regex(jf.string_regex(m.min_len, m.max_len))
            return None if body is None else Regex('"' + body + '"')
        if patterns or formats:
            return self._string_intersection(m)
        return Regex(jf.string_regex(m.min_len, m.max_len))

    def _string_intersection(self, m: _Merged) -> Expr | None:
        """Strings under several of pattern/format/minLength/maxLength: exact (see json_formats)."""
        trees = []
        escapes = True
        for name, ptr in m.formats or []:
            if not isinstance(name, str):
                raise SchemaError("format must be a string", ptr)
            tree = jf.format_tree(name)
            if tree is None:
                self.unsupported("format", ptr.rsplit("/", 1)[0], f"unknown format {name!r}")
                continue
            if tree not in trees:
                trees.append(tree)
            # formats match raw characters only (a narrowing shared with the format alone)
            escapes = escapes and name in ("json-pointer", "relative-json-pointer")
        for pattern, ptr in m.patterns or []:
            try:
                tree = jf.search_tree(pattern)
            except jf.PatternError as exc:
                self.unsupported("pattern", ptr.rsplit("/", 1)[0], str(exc))
                continue
            if tree not in trees:
                trees.append(tree)
        plain = Regex(jf.string_regex(m.min_len, m.max_len))
        if not trees:
            return plain
        word, ptr = ("format", m.formats[-1][1]) if m.formats else ("pattern", m.patterns[-1][1])
        try:
            if len(trees) == 1:
                try:
                    tree = jf.restrict_length(trees[0], m.min_len, m.max_len)
                except jf.Hard:
                    pass
                else:
                    rendered = None if tree is None else jf.render_tree(tree, escapes=escapes)
                    return None if rendered is None else Regex(rendered)
            dfa = jf.string_automaton(trees, m.min_len, m.max_len, max_states=MAX_STRING_STATES)
        except jf.PatternError as exc:
            what = "pattern, format, minLength and maxLength together"
            self.unsupported(word, ptr.rsplit("/", 1)[0], f"{what}: {exc}")
            return plain
        return None if dfa is None else self._char_dfa(dfa, escapes)

    def _char_dfa(self, dfa, escapes: bool) -> Expr:
        """A JSON string whose decoded contents `dfa` accepts, as right-linear rules."""
        key = ("chardfa", dfa, escapes)
        if key in self.memo:
            return self.memo[key]
        names = [self.fresh(f"chars_{len(self.memo)}_q{q}") for q in range(len(dfa.accept))]
        for q, name in enumerate(names):
            alts: list[Expr] = [Literal("")] if dfa.accept[q] else []
            alts += [Seq((Regex(jf.char_label(ranges, escapes)), Ref(names[t]))) for ranges, t in dfa.edges[q]]
            self.rules[name] = alts[0] if len(alts) == 1 else Alt(tuple(alts))
            self.internal.add(name)
        expr = Seq((Literal('"'), Ref(names[0]), Literal('"')))
        self.memo[key] = expr
        return expr

    # arrays
    def _array(self, m: _Merged, depth: int, hint: str) -> Expr | None:
        if self.layout.indent is not None and depth >= MAX_INDENT_DEPTH:
            return None
        lo, hi = m.min_items, m.max_items
        if hi is not None and lo > hi:
            return None
        if m.unique is not None and not (hi is not None and hi <= 1):
            self.unsupported("uniqueItems", m.unique.rsplit("/", 1)[0])
        members = m.arrays or []
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
        if m.contains is not None:
            return self._array_contains(m, prefix, rest, lo, hi, depth, hint)
        return self._array_layout(prefix, rest, lo, hi, depth)

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
        parts = []
        if lo == 0:
            parts.append(Seq(tuple(self.layout.empty("[]"))))
        if content is not None:
            parts.append(Seq((*self.layout.open("[", depth), content, *self.layout.close("]", depth))))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))

    def _array_contains(self, m, prefix, rest, lo, hi, depth, hint):
        ptr = m.contains[-1].ptr.rsplit("/", 1)[0]
        need = 1 if m.min_contains is None else m.min_contains
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
        except _CannotNegate as exc:
            self.unsupported("maxContains", ptr, exc.why)
            return self._array_layout([], rest, lo, None, depth) if need == 0 else None
        rest_conj = tuple(r for _, _, r in (m.arrays or []) if r is not None)
        hit = self.value(rest_conj + (contains,), depth + 1, hint=f"{hint}_contains")
        miss = self.value(rest_conj + (_Node(schema, contains.ptr, base),), depth + 1, hint=f"{hint}_other")
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

    # objects
    def _object(self, m: _Merged, depth: int, hint: str) -> Expr | None:
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
                        conj.append(_Node(False, node.ptr + "/additionalProperties", node.base))
            if not members and self.close_objects:
                conj.append(_Node(False, "#/additionalProperties", ""))
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

    def _key_matches(self, pattern: str, key: str, node: _Node) -> bool:
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
            lits = [_string_literal(k) for k in keys]
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
            member = self._member(_key_literal(k), value)
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

    # -- validation of concrete values (enum/const filtering, property names) ------------------
    def _valid(self, value, conj) -> bool:
        return all(self._valid_node(value, n, 0) for n in conj)

    def _valid_node(self, v, node: _Node, level: int) -> bool:
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
        if "$ref" in s:
            if not self._valid_node(v, self.index.resolve(s["$ref"], node), level + 1):
                return False
            if self.draft == "7":
                return True
        kind = _kind(v)
        for key in s:
            if key in UNSUPPORTED:
                self.unsupported(key, p)
        if "type" in s:
            types = _type_set(s["type"], p + "/type")
            if kind not in types:
                return False
        if TYPES_KEY in s and kind not in s[TYPES_KEY]:
            return False
        if NOT_STRINGS_KEY in s and kind == "string" and v in s[NOT_STRINGS_KEY]:
            return False
        if "not" in s and self._valid_node(v, node.child("not", s["not"]), level + 1):
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
                    elif not self._valid_node(v, node.child(word, None).child(name, dep), level + 1):
                        return False
        if "enum" in s and not any(_json_equal(v, e) for e in s["enum"]):
            return False
        if "const" in s and not _json_equal(v, s["const"]):
            return False
        if kind in ("integer", "fraction"):
            d = _dec(v)
            if "minimum" in s and d < _number(s["minimum"], p):
                return False
            if "maximum" in s and d > _number(s["maximum"], p):
                return False
            if "exclusiveMinimum" in s and d <= _number(s["exclusiveMinimum"], p):
                return False
            if "exclusiveMaximum" in s and d >= _number(s["exclusiveMaximum"], p):
                return False
            if "multipleOf" in s and d % _number(s["multipleOf"], p) != 0:
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
            if "format" in s:
                fr = jf.format_plain_regex(s["format"])
                if fr is None:
                    self.unsupported("format", p, f"unknown format {s['format']!r}")
                elif not re.fullmatch(fr, v):
                    return False
        if kind == "array":
            if "minItems" in s and len(v) < s["minItems"]:
                return False
            if "maxItems" in s and len(v) > s["maxItems"]:
                return False
            if s.get("uniqueItems") is True:
                for i in range(len(v)):
                    for j in range(i):
                        if _json_equal(v[i], v[j]):
                            return False
            if self.draft == "7":
                items = s.get("items")
                prefix = items if isinstance(items, list) else []
                rest = s.get("additionalItems", True) if isinstance(items, list) else items
            else:
                prefix = s.get("prefixItems", [])
                rest = s.get("items")
            for i, x in enumerate(v):
                if i < len(prefix):
                    sub = _Node(prefix[i], f"{p}/prefix/{i}", node.base)
                elif rest is not None:
                    sub = _Node(rest, f"{p}/items", node.base)
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
                    if not self._valid_node(x, node.child("properties", None).child(k, props[k]), level + 1):
                        return False
                for pat, sub in pats.items():
                    if self._key_matches(pat, k, node):
                        matched = True
                        if not self._valid_node(x, node.child("patternProperties", None).child(pat, sub), level + 1):
                            return False
                if not matched and "additionalProperties" in s:
                    if not self._valid_node(x, node.child("additionalProperties", s["additionalProperties"]), level + 1):
                        return False
                if "propertyNames" in s and not self._valid_node(k, node.child("propertyNames", s["propertyNames"]), level + 1):
                    return False
        for j, sub in enumerate(s.get("allOf", []) or []):
            if not self._valid_node(v, node.child("allOf", None).child(j, sub), level + 1):
                return False
        if "anyOf" in s and not any(self._valid_node(v, node.child("anyOf", None).child(j, sub), level + 1) for j, sub in enumerate(s["anyOf"])):
            return False
        if "oneOf" in s and sum(self._valid_node(v, node.child("oneOf", None).child(j, sub), level + 1) for j, sub in enumerate(s["oneOf"])) != 1:
            return False
        return True


# -- helpers ------------------------------------------------------------------------------

class _CannotNegate(Exception):
    """A `not` (or a keyword that needs a complement) whose negation is not expressible."""

    def __init__(self, why: str):
        super().__init__(why)
        self.why = why


def _dependencies(deps: dict) -> dict:
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


def _negate_values(values: list) -> list:
    """Plain schemas whose union is every JSON value other than the scalars `values`."""
    if not values:
        return [True]
    kinds = {_kind(v) for v in values}
    if kinds & {"array", "object"}:
        raise _CannotNegate("the negation of an array or object const/enum")
    covered = set(kinds) | (set(NUMBER_KINDS) if kinds & NUMBER_KINDS else set())
    out: list = [{TYPES_KEY: sorted(set(TYPES) - covered)}]
    bools = {v for v in values if isinstance(v, bool)}
    if len(bools) == 1:
        out.append({"const": not bools.pop()})
    strings = sorted({v for v in values if isinstance(v, str)})
    if strings:
        out.append({"type": "string", NOT_STRINGS_KEY: strings})
    numbers = sorted({_dec(v) for v in values if _kind(v) in NUMBER_KINDS})
    if numbers:
        out.append({"type": "number", "exclusiveMaximum": numbers[0]})
        for a, b in zip(numbers, numbers[1:]):
            out.append({"type": "number", "exclusiveMinimum": a, "exclusiveMaximum": b})
        out.append({"type": "number", "exclusiveMinimum": numbers[-1]})
    return out


def _replace(m: _Merged, **changes) -> _Merged:
    from dataclasses import replace

    return replace(m, **changes)


def _lcm_decimal(values) -> Decimal:
    """The least common multiple of positive decimals: multiples of all = multiples of it."""
    values = list(values)
    scale = max(max(0, -v.normalize().as_tuple().exponent) for v in values)
    ints = [int(v * 10**scale) for v in values]
    acc = 1
    for i in ints:
        acc = acc * i // math.gcd(acc, i)
    return Decimal(acc) / Decimal(10**scale)


def _number(value, ptr: str) -> Decimal:
    if isinstance(value, Decimal):  # bounds that negation computed
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(f"expected a number, got {json.dumps(value)}", ptr)
    return _dec(value)


def _count(value, ptr: str) -> int:
    if isinstance(value, float) and value == int(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaError(f"expected a non-negative integer, got {json.dumps(value)}", ptr)
    return value


def _group(pattern: str) -> str:
    return "(?:" + pattern + ")"


def _digit_set(ds: list[int]) -> str:
    if len(ds) == 1:
        return str(ds[0])
    if ds == list(range(ds[0], ds[-1] + 1)):
        return f"[{ds[0]}-{ds[-1]}]"
    return "[" + "".join(map(str, ds)) + "]"


def _string_literal(s: str) -> Expr:
    raw = json.dumps(s, ensure_ascii=False)
    ascii_ = json.dumps(s)
    if raw == ascii_:
        return Literal(raw)
    return Alt((Literal(raw), Literal(ascii_)))


def _key_literal(k: str) -> Expr:
    return _string_literal(k)


def _ref_hint(ref: str) -> str:
    tail = ref.rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    return tail or "root"


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


def _signatures_disjoint(a, b) -> bool:
    types_a, values_a, disc_a = a
    types_b, values_b, disc_b = b
    if not (types_a & types_b):
        return True
    if values_a is not None and values_b is not None:
        if not any(_json_equal(x, y) for x in values_a for y in values_b):
            return True
    if values_a is not None and not any(_kind(x) in types_b for x in values_a):
        return True
    if values_b is not None and not any(_kind(x) in types_a for x in values_b):
        return True
    common = set(disc_a) & set(disc_b)
    for k in common:
        if not any(_json_equal(x, y) for x in disc_a[k] for y in disc_b[k]):
            if types_a & types_b <= {"object"}:
                return True
    return False


def _references(expr) -> list[str]:
    from grammarc.ir import walk

    return [e.name for e in walk(expr) if isinstance(e, Ref)]


def _reachable(rules: dict, start: str) -> dict:
    """Only the rules the start rule can reach (helpers built for dead branches go away)."""
    seen = {start}
    todo = [start]
    while todo:
        for name in _references(rules[todo.pop()]):
            if name not in seen and name in rules:
                seen.add(name)
                todo.append(name)
    return {name: body for name, body in rules.items() if name in seen}


def _inline_single_use(rules: dict, internal: set, start: str) -> dict:
    """Inline internal helper rules referenced exactly once (keeps the .ebnf readable)."""
    counts: dict[str, int] = {}
    for body in rules.values():
        for name in _references(body):
            counts[name] = counts.get(name, 0) + 1
    inline = {n for n in internal if counts.get(n) == 1 and n in rules and n not in _references(rules[n])}
    if not inline:
        return rules

    def subst(expr):
        if isinstance(expr, Ref) and expr.name in inline:
            return subst(rules[expr.name])
        if isinstance(expr, Seq):
            items = []
            for i in expr.items:
                i = subst(i)
                items.extend(i.items if isinstance(i, Seq) else (i,))
            return items[0] if len(items) == 1 else Seq(tuple(items))
        if isinstance(expr, Alt):
            items = []
            for i in expr.items:
                i = subst(i)
                items.extend(i.items if isinstance(i, Alt) else (i,))
            return Alt(tuple(items))
        if isinstance(expr, Repeat):
            return Repeat(subst(expr.item), expr.min, expr.max)
        return expr

    return {name: subst(body) for name, body in rules.items() if name not in inline}
