"""The schema-to-grammar builder: one rule per (conjunction of subschemas, depth), memoized."""

from __future__ import annotations

import re
import warnings

from grammarc.errors import SchemaError, UnsupportedSchemaError
from grammarc.ir import Alt, Expr, Grammar, Literal, Ref, Regex, Repeat, Seq
from grammarc.frontends import json_formats as jf

from .arrays import Arrays
from .combinators import Combinators
from .documents import Index, Node, escape_ptr
from .keywords import ANNOTATIONS, NUMBER_KINDS
from .layout import MAX_INDENT_DEPTH, NUMBER_RFC, string_literal
from .merge import Merged, Merging
from .negation import Negation
from .numbers import Numbers
from .objects import Objects
from .strings import Strings
from .validate import Validation
from .values import dec, json_kind


class Builder(Combinators, Merging, Negation, Numbers, Strings, Arrays, Objects, Validation):
    """Builds the rules of one schema. The keyword families live in the mixin modules
    (combinators, merge, negation, numbers, strings, arrays, objects, validate); they share this
    object's rule table, memo and options and call each other through `self`."""

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
        self.index = Index(schema, draft, registry)
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

    def _rebase(self, node: Node) -> Node:
        """The node with the base URI its own $id (if any) establishes."""
        base = self.index.bases.get(id(node.schema))
        return node if base is None or base == node.base else Node(node.schema, node.ptr, base)

    # -- problems --------------------------------------------------------------------------
    def unsupported(self, keyword: str, ptr: str, why: str = "") -> None:
        where = f"{ptr}/{escape_ptr(keyword)}"
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
    def value(self, conj: tuple[Node, ...], depth: int, hint: str = "value") -> Expr | None:
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

    def _synth(self, what: str, source, build):
        """A schema built from `source` once, so that equal requests share one id (memo keys)."""
        key = (what, id(source))
        if key not in self.synthetic:
            self.keep.append(source)
            self.synthetic[key] = build()
        return self.synthetic[key]


    def _emit(self, m: Merged, conj, depth, hint) -> Expr | None:
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


    def _emit_enum(self, m: Merged, conj, depth, hint) -> Expr | None:
        keep = []
        for v in m.enum:
            if json_kind(v) == "integer" and "integer" not in m.types:
                continue
            if json_kind(v) != "integer" and json_kind(v) not in m.types:
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
            return Regex(self._numeral(dec(v)))
        if isinstance(v, str):
            return string_literal(v)
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
                    items.extend([string_literal(k), *self.layout.colon(), self.literal_value(x, depth + 1)])
                alts.append(Seq((*self.layout.open("{", depth), *items, *self.layout.close("}", depth))))
            return alts[0] if len(alts) == 1 else Alt(tuple(alts))
        raise SchemaError(f"not a JSON value: {v!r}")



def _ref_hint(ref: str) -> str:
    tail = ref.rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    return tail or "root"


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
