"""The schema-to-grammar builder: one rule per (conjunction of subschemas, depth), memoized."""

from __future__ import annotations

import re
import warnings
from collections import Counter
from itertools import chain
from functools import lru_cache
from typing import Mapping
from urllib.parse import unquote

from grammarc.errors import SchemaError, UnsupportedSchemaError
from grammarc.ir import Alt, Expr, Grammar, JsonStringExcept, Literal, Ref, Regex, Seq, references
from grammarc.ir.nodes import inline_rules
from grammarc.frontends import json_formats as jf

from .arrays import Arrays
from .combinators import Combinators
from .cycles import check_cycles
from .documents import Index, Node, escape_ptr
from .drafts import DEFAULT_DRAFT, Dialect, declared_dialect, dialect_named
from .keywords import ANNOTATIONS, INERT, NUMBER_KINDS, REFS
from . import formats as fmt
from .layout import MAX_INDENT_DEPTH, NUMBER_RFC, string_literal
from .members import Members
from .merge import Merged, Merging
from .negation import Negation
from .numbers import Numbers
from .objects import Objects
from .sharing import identifier, reachable_from, share
from .strings import Strings
from .validate import Validation
from .values import dec, json_kind


# `Builder.any_value`'s bodies, by (layout, depth, the item rule's name); bounded (layouts
# with unhashable separators are made anew per schema, equal: they share entries)
_ANY_VALUES: dict[tuple, Expr] = {}
_MAX_ANY_VALUES = 256
_KNOWN_TERMINALS = {Regex(jf.string_regex()): "string", Regex(jf.UNIT): "char", Regex(NUMBER_RFC): "number"}


class Builder(Combinators, Merging, Negation, Numbers, Strings, Arrays, Objects, Members, Validation):
    """Builds the rules of one schema. The keyword families live in the mixin modules
    (combinators, merge, negation, numbers, strings, arrays, objects, members, validate); they share this
    object's rule table, memo and options and call each other through `self`."""

    def __init__(self, schema, *, lenient, layout, close_objects, draft, registry, integer_fraction=True,
                 formats="known", property_order="schema"):
        if draft is not None:
            dialect = dialect_named(draft)
        else:
            declared = schema.get("$schema") if isinstance(schema, dict) else None
            dialect = declared_dialect(declared, registry) or Dialect(DEFAULT_DRAFT)
        self.dialect = dialect
        self.formats = formats
        self.property_order = property_order
        self.empty_reason: tuple[str, str] | None = None  # why some subschema matches nothing
        self.lenient = lenient
        self.layout = layout
        self.close_objects = close_objects
        # after an integer numeral (draft-04 does not count 1.0 as an integer)
        self.int_tail = r"(?:\.0+)?" if integer_fraction and dialect.integer_fraction else ""
        self.index = Index(schema, dialect, registry)
        self.rules: dict[str, Expr] = {}
        self.internal: set[str] = set()
        self.memo: dict = {}
        self.keep: list = []
        self.ignored: list[str] = []
        self.active: set = set()
        self.resolving: set = set()
        self.nesting = 0
        self.too_deep: Node | None = None  # where the translation went past the stack (`value`)
        self.signatures: dict = {}  # (id(schema), base, scope) -> combinators.Signature
        self.distributed = 0  # anyOf/oneOf branches built so far (combinators.MAX_DISTRIBUTED)
        self.names: set[str] = set()
        self.synthetic: dict = {}  # (what, id(schema)) -> schema built from it (stable ids)
        self.negating: set = set()
        self.scope: dict[str, Node] = {}  # dynamic anchor -> the outermost resource's schema
        # what the terminals are, for the names of their shared rules (sharing.py)
        self.terminal_names: dict[Expr, str] = {**_KNOWN_TERMINALS, Regex(r"-?(?:0|[1-9][0-9]*)" + self.int_tail): "integer"}
        self._named_char_dfas: set = set()

    # -- entry ---------------------------------------------------------------------------
    def build(self, start: str) -> Grammar:
        root = self.index.root
        check_cycles(self.index, root)
        self.names.add(start)
        body = self.value((root,), 0, hint="root")
        if body is None:
            # an empty language has no grammar: say why, where a keyword made it empty
            if self.empty_reason is not None:
                raise SchemaError(*self.empty_reason)
            raise SchemaError("the schema matches no JSON value", root.ptr)
        self.rules = {start: body, **self.rules}
        # each body's references, read once for the passes below (the ws check, reachability, inlining)
        refs = {name: references(body) for name, body in self.rules.items()}
        if self.layout.ws is not None and any("ws" in used for used in refs.values()):
            self._add_ws_rule()
            refs["ws"] = []
        if self.ignored and self.lenient:
            warnings.warn("ignored JSON Schema keywords (lenient=True): " + ", ".join(self.ignored), stacklevel=3)
        live = reachable_from(self.rules, start, (), refs)
        rules = _inline_single_use(live, self.internal, start, refs=refs)
        rules = share(rules, start, self.terminal_names, reserved=("ws",))
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

    def note_empty(self, message: str, ptr: str) -> None:
        """A keyword makes (part of) a subschema match nothing: not an error unless the whole
        schema ends up empty, then the first such reason is the message."""
        if self.empty_reason is None:
            self.empty_reason = (message, ptr)

    # -- rule plumbing ---------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = identifier(hint)
        name = base
        names = self.names
        i = 2
        while name in names or name == "ws":
            name = f"{base}_{i}"
            i += 1
        names.add(name)
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

    # -- names of terminals: what produced them (for sharing.py) -----------------------------
    def _name_terminal(self, expr: Expr | None, name: str) -> None:
        if self._unnamed(expr):
            self.terminal_names[expr] = name

    def _unnamed(self, expr: Expr | None) -> bool:
        """Whether `expr` is a terminal with no name yet (asked first where a name costs more)."""
        return isinstance(expr, (Regex, JsonStringExcept)) and expr not in self.terminal_names

    def _char_dfa(self, dfa, escapes: bool, hint: str | None = None) -> Expr:
        expr = super()._char_dfa(dfa, escapes, hint)
        if (dfa, escapes) not in self._named_char_dfas:
            self._named_char_dfas.add((dfa, escapes))
            for edges in dfa.edges:
                for ranges, _ in edges:
                    self._name_terminal(Regex(jf.char_label(ranges, escapes)), _char_name(ranges))
        return expr

    # -- values ----------------------------------------------------------------------------
    def value(self, conj: tuple[Node, ...], depth: int, hint: str = "value") -> Expr | None:
        """IR for the values valid under every schema in `conj` (None: no value)."""
        kept = []
        for node in conj:
            schema = node.schema
            if schema is True or (isinstance(schema, dict) and schema.keys() <= INERT):  # `_inert`, inline
                continue
            if isinstance(schema, dict) and "allOf" in schema:  # what `_unwrap` may unwrap
                node = _unwrap(node)
            if node.schema is False:
                return None
            kept.append(node)
        conj = tuple(kept)
        indent = self.layout.indent
        dkey = depth if indent is not None else 0
        if indent is not None and depth > MAX_INDENT_DEPTH:
            return self._no_containers(conj, depth, hint)
        if not conj:
            return self.any_value(dkey)
        saved_scope = self.scope
        try:
            if self.index.dynamic or self.index.recursive:  # else `enter` changes nothing
                for node in conj:
                    self.enter(node)
            return self._scoped_value(conj, depth, hint, dkey)
        except RecursionError:  # a chain of $refs and combinators deeper than the stack: the innermost
            if self.too_deep is None:  # value is where it went past (`schema_to_grammar` says so; its
                self.too_deep = conj[0]  # pointer is made there, with the stack unwound)
            raise
        finally:
            self.scope = saved_scope

    def _scoped_value(self, conj, depth, hint, dkey) -> Expr | None:
        # a lone reference: share (and allow recursion through) the target's rule
        if len(conj) == 1 and isinstance(conj[0].schema, dict) and not conj[0].schema.keys().isdisjoint(REFS):
            only = self._rebase(conj[0])
            keys = set(only.schema) - ANNOTATIONS
            if len(keys) == 1 and next(iter(keys)) in REFS:
                word = next(iter(keys))
                if id(only.schema) in self.resolving:
                    raise SchemaError("$ref cycle that never reaches a schema", f"{only.ptr}/{word}")
                target = self.resolve_ref(word, only)
                self.resolving.add(id(only.schema))
                try:
                    return self.value((target,), depth, hint=_ref_hint(only.schema[word]))
                finally:
                    self.resolving.discard(id(only.schema))
        ids = (id(conj[0].schema),) if len(conj) == 1 else tuple([id(n.schema) for n in conj])
        key = (ids, dkey, self._scope_key() if self.scope else ())
        cached = self.memo.get(key)
        if cached is not None:
            return None if cached is False else cached
        if len(conj) == 1 and isinstance(conj[0].schema, dict) and "title" in conj[0].schema:
            hint = _title_hint(conj[0].schema, hint)
        name = self.fresh(hint)  # (which takes the name)
        ref = self.memo[key] = Ref(name)
        self.keep.append(conj)
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
        return ref

    # -- references and the dynamic scope ---------------------------------------------------
    def enter(self, node: Node) -> None:
        """Evaluation reaches `node`: its resource joins the dynamic scope, and binds the
        dynamic anchors ($dynamicAnchor, 2019-09's $recursiveAnchor) that no outer resource has."""
        index = self.index
        if not index.dynamic and not index.recursive:  # most documents declare no dynamic anchor
            return
        base = node.base
        anchors = index.dynamic.get(base, {})
        recursive = base in index.recursive
        if not anchors and not recursive:  # most resources: asked before the scope's bases are gathered
            return
        if base in self.scope_bases:
            return
        scope = dict(self.scope)
        for name, target in anchors.items():
            scope.setdefault(name, target)
        if recursive:
            scope.setdefault("$recursiveAnchor", self.index.resources[base][0])
        self.scope = scope

    @property
    def scope_bases(self) -> set:
        return {n.base for n in self.scope.values()}

    def _scope_key(self) -> tuple:
        return tuple(sorted((name, id(n.schema)) for name, n in self.scope.items()))

    def resolve_ref(self, word: str, node: Node) -> Node:
        """The schema a $ref, $dynamicRef or $recursiveRef of `node` refers to, in the current scope.

        ``$dynamicRef: "#name"`` whose static target carries ``$dynamicAnchor: name`` goes to the
        outermost resource of the dynamic scope that declares that anchor; 2019-09's
        ``$recursiveRef: "#"`` to a root with ``$recursiveAnchor: true`` likewise."""
        ref = node.schema[word]
        target = self.index.resolve(ref, node, word)
        if word == "$dynamicRef":
            frag = ref.rpartition("#")[2] if "#" in ref else ""
            if frag and not frag.startswith("/") and isinstance(target.schema, dict):
                if self.index.dynamic.get(target.base, {}).get(frag) is not None and frag in self.scope:
                    target = self.scope[frag]
        elif word == "$recursiveRef" and target.base in self.index.recursive and "$recursiveAnchor" in self.scope:
            target = self.scope["$recursiveAnchor"]
        return target

    def _no_containers(self, conj, depth, hint):
        return None

    def any_value(self, depth: int) -> Expr:
        key = ("any", depth)
        if key in self.memo:
            return self.memo[key]
        name = self.fresh("value" if depth == 0 else f"value_d{depth}")
        self.memo[key] = Ref(name)
        item = None
        if self.layout.indent is None or depth < MAX_INDENT_DEPTH:
            item = self.any_value(depth + 1 if self.layout.indent is not None else 0)
        # the body is the same for the same layout, depth and item rule: built once per process
        # (nodes are immutable; most schemas have an unconstrained value somewhere)
        made = (self.layout, depth, None if item is None else item.name)
        body = _ANY_VALUES.get(made)
        if body is None:
            body = self._any_value_body(depth, item)
            if len(_ANY_VALUES) >= _MAX_ANY_VALUES:
                _ANY_VALUES.clear()
            _ANY_VALUES[made] = body
        self.rules[name] = body
        return Ref(name)

    def _any_value_body(self, depth: int, item: Ref | None) -> Expr:
        """Any JSON value at `depth`, its items and member values `item` (None: scalars only)."""
        parts: list[Expr] = [Literal("null"), Literal("true"), Literal("false"), Regex(NUMBER_RFC), Regex(jf.string_regex())]
        if item is not None:
            parts.append(self._array_layout([], item, 0, None, depth))
            member = Seq((Regex(jf.string_regex()), *self.layout.colon(), item))
            parts.append(self._members_repeat(member, 0, None, depth, "{}"))
        return Alt(tuple(parts))

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
            if self._unnamed(num):
                self.terminal_names[num] = _number_name(m, "integer" if types & NUMBER_KINDS == {"integer"} else "number")
            if num is not None:
                parts.append(num)
        if "string" in types:
            st = self._string(m)
            if self._unnamed(st):
                self.terminal_names[st] = _string_name(m, hint)
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
        parts = list(dict.fromkeys(self.literal_value(v, depth) for v in keep))  # unique, in order
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



# compiled once (re's module functions look a pattern text up on every call)
_JSON_SUFFIX = re.compile(r"\.json$")
_NOT_WORD = re.compile(r"[^A-Za-z0-9]+")
_URI_PUNCTUATION = re.compile(r"[.:/]")
_WORD = re.compile(r"[A-Za-z0-9]+")


def _ref_hint(ref: str) -> str:
    """A short rule name for what a reference names: the last segment of its pointer (or of
    its URI, less ``.json``), and of a dotted or URL-mangled definition name
    (``io.k8s.api.core.v1.PodSpec``, ``https:__host_..._meta_v1_Time``) its last words."""
    uri, _, frag = ref.partition("#")
    tail = unquote(frag.rstrip("/").rsplit("/", 1)[-1] if frag.strip("/") else uri.rstrip("/").rsplit("/", 1)[-1])
    tail = _JSON_SUFFIX.sub("", tail)
    words = [w for w in _NOT_WORD.split(tail) if w]
    if not words:
        return "root"
    if len(tail) <= 32 and not _URI_PUNCTUATION.search(tail):
        return tail
    if words[-1][:1].isupper() and len(words[-1]) >= 3:
        return words[-1]
    kept: list[str] = []
    while words and len("_".join([words[-1], *kept])) <= 24:
        kept.insert(0, words.pop())
    return "_".join(kept or [words[-1][-24:]])


def _string_name(m: Merged, hint: str) -> str:
    """``string``, ``date_time``, ``zip_pattern``, ``uuid_max36``, ``string_min1_max64``: what
    a string terminal is, from the keywords that made it (a pattern: from its property)."""
    formats = sorted({f for f, _ in m.formats or []})
    if formats:
        base = formats[0] + ("_pattern" if m.patterns else "")
    elif m.patterns:
        word = hint.rsplit("_", 1)[-1]
        base = f"{word}_pattern" if word.isalpha() and word not in _GENERIC_HINTS else "pattern"
    else:
        base = "string"
    if m.min_len > 0:
        base += f"_min{m.min_len}"
    if m.max_len is not None:
        base += f"_max{m.max_len}"
    return identifier(base)


def _inert(schema) -> bool:
    return schema is True or (isinstance(schema, dict) and schema.keys() <= INERT)


def _unwrap(node: Node) -> Node:
    """``{allOf: [S, {description: ...}]}`` is S (the idiom for documenting a $ref, whose
    siblings draft 7 ignores): built once and shared with every other use of S."""
    while isinstance(node.schema, dict) and "allOf" in node.schema and node.schema.keys() - INERT == {"allOf"}:
        subs = node.schema["allOf"]
        live = [j for j, sub in enumerate(subs) if not _inert(sub)] if isinstance(subs, list) else []
        if len(live) != 1:
            break
        node = node.child_of("allOf", live[0], subs[live[0]])
    return node


_GENERIC_HINTS = frozenset({"root", "value", "item", "additional", "pattern", "contains", "other", "extra", "key"})


def _number_name(m: Merged, kind: str) -> str:
    """``integer``, ``int64``, ``integer_min0``, ``number_gt0_max1``, ``number_multiple_of_0_5``."""
    for name, (lo, hi) in fmt.INTEGER_RANGES.items():
        if kind == "integer" and (m.lo, m.hi) == (lo, hi) and not (m.lo_strict or m.hi_strict or m.multiple_of):
            return name
    base = kind
    if m.lo is not None:
        base += ("_gt" if m.lo_strict else "_min") + _number_word(m.lo)
    if m.hi is not None:
        base += ("_lt" if m.hi_strict else "_max") + _number_word(m.hi)
    if m.multiple_of:
        base += "_multiple_of_" + "_".join(_number_word(v) for v in sorted({v for v, _ in m.multiple_of}))
    return identifier(base)


def _number_word(value) -> str:
    text = format(value.normalize(), "f") if hasattr(value, "normalize") else str(value)
    return text.replace("-", "neg").replace(".", "_")


_SURROGATES = (0xD800, 0xDFFF)
_JSON_CHARS = jf.MAX_CP + 1 - (_SURROGATES[1] - _SURROGATES[0] + 1)


@lru_cache(maxsize=4096)
def _char_name(ranges) -> str:
    """``char``, ``char_not_e``, ``char_not_a_x2d``, ``char_e``: one JSON string character
    of `ranges` (named by the characters it leaves out, or has, when they are few)."""
    surrogates = sum(max(0, min(b, _SURROGATES[1]) - max(a, _SURROGATES[0]) + 1) for a, b in ranges)
    count = sum(b - a + 1 for a, b in ranges) - surrogates  # ranges do not overlap
    if count >= _JSON_CHARS - 3:
        missing = jf.intersect(jf.complement(ranges), jf.ALL)
        if sum(b - a + 1 for a, b in missing) <= 3:
            return "char_not_" + _char_words(missing) if missing else "char"
    if count <= 3:
        return "char_" + _char_words(ranges)
    return "char_set"


def _char_words(ranges) -> str:
    return "_".join(chr(cp) if chr(cp).isascii() and chr(cp).isalnum() else f"x{cp:02x}" for a, b in ranges for cp in range(a, b + 1))


def _title_hint(schema, hint: str) -> str:
    """The schema's own `title` as its rule's name where it names a thing: at the root, or on
    an object schema; short titles only (at most 4 words, 32 characters), else `hint`."""
    title = schema.get("title") if isinstance(schema, dict) else None
    if not isinstance(title, str) or not (hint == "root" or "properties" in schema or schema.get("type") == "object"):
        return hint
    words = _WORD.findall(title)
    if not words or len(words) > 4:
        return hint
    name = words[0] if len(words) == 1 else "".join(w[:1].upper() + w[1:] for w in words)
    return name if len(name) <= 32 else hint


def _inline_single_use(rules: dict, internal: set, start: str, max_nesting: int = 6,
                       refs: Mapping[str, list[str]] | None = None) -> dict:
    """Inline internal helper rules referenced exactly once (keeps the .ebnf readable).

    A chain of such helpers (an object's optional members, one rule each) is inlined at most
    `max_nesting` levels deep; the rule where it is cut stays a rule, so no expression ever
    nests deeper than that however long the chain is. Sequences and alternations come out
    flat; rules with nothing to inline or flatten are kept as they are (the same objects).
    The walk is `grammarc.ir.nodes.inline_rules`, in the compiled core. `refs`: each rule's
    references (`grammarc.ir.references`) where the caller has them (a superset of `rules`).
    """
    if refs is None:
        refs = {name: references(body) for name, body in rules.items()}
    counts = Counter(chain.from_iterable(map(refs.__getitem__, rules)))
    inline = {n for n in internal if counts.get(n) == 1 and n in rules and n not in refs[n]}
    if not inline:
        return rules
    return inline_rules(rules, inline, max_nesting)
