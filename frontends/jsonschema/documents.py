"""Reading schema documents: checks, the draft's reading, base URIs, `$id`/`$anchor` resources, `$ref`.

A document is first checked without recursion (a cyclic Python object, or nesting deeper than
`MAX_DEPTH`, is a precise `SchemaError`), then read once into the internal reading (see
`drafts.py`): each schema object becomes a new dict in which the keywords mean what 2020-12
says. Reading also records every resource (``$id``), anchor and base URI. `$ref` pointers walk
the document as written and read what they land on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from grammarc.allocation import slot_init
from grammarc.errors import SchemaError, UnsupportedSchemaError

from .drafts import ALL_KEYWORDS, Dialect, TupleItems, declared_dialect

DEFAULT_BASE = "https://grammarc.invalid/schema.json"
MAX_DEPTH = 128  # objects and arrays nested in one schema document


@slot_init
@dataclass(frozen=True, slots=True)
class Node:
    """A subschema (as read) with the JSON pointer it sits at and its base URI."""

    schema: Any
    ptr: str
    base: str

    def child(self, key, value) -> "Node":
        return Node(value, f"{self.ptr}/{escape_ptr(str(key))}", self.base)

    def child_of(self, keyword: str, key, value) -> "Node":
        """``child(keyword, None).child(key, value)``: a member of a keyword's map or list, in
        one step (objects build one per property)."""
        return Node(value, f"{self.ptr}/{escape_ptr(keyword)}/{escape_ptr(str(key))}", self.base)


def escape_ptr(token: str) -> str:
    if "~" not in token and "/" not in token:  # most names: no copies made
        return token
    return token.replace("~", "~0").replace("/", "~1")


def check_tree(doc, ptr: str = "#") -> None:
    """Refuse a cyclic Python object or a document nested deeper than MAX_DEPTH (iteratively).

    Most documents are neither: `_shallow` says so level by level (one comprehension per
    level); only a document it cannot clear goes through `_check_places`, which finds which
    of the two it is and where."""
    if not isinstance(doc, (dict, list)) or _shallow(doc):
        return
    _check_places(doc, ptr)


def _shallow(doc) -> bool:
    """Whether no chain of containers under `doc` holds more than MAX_DEPTH of them: the
    containers `depth` steps below it, level by level, run out before level MAX_DEPTH (a
    cycle never runs out). A container held twice in one level is kept once, so that shared
    containers cost at most a level each, never a path each."""
    level = [doc]
    for _ in range(MAX_DEPTH):
        level = [value for obj in level for value in (obj.values() if isinstance(obj, dict) else obj)
                 if isinstance(value, (dict, list))]
        if not level:
            return True
        if len(level) > 1 and len(set(map(id, level))) < len(level):
            level = list({id(obj): obj for obj in level}.values())
    return False


def _check_places(doc, ptr: str) -> None:
    """`check_tree`'s walk with each container's place: its place is kept as (its parent's
    place, its key) and written out as a pointer only for the error."""
    height: dict[int, int] = {}  # id -> nesting below (1 for a leaf container)
    on_path: set[int] = set()
    stack: list = [(doc, ptr, None)]  # (container, place, None; or its child containers once entered)
    while stack:
        obj, where, kids = stack.pop()
        key = id(obj)
        if kids is not None:
            on_path.discard(key)
            height[key] = 1 + max(map(height.__getitem__, map(id, kids)))
            continue
        if key in on_path:
            raise SchemaError("the schema contains itself (a cyclic Python object)", pointer(where))
        if key in height:
            continue
        kids = []
        entries = []
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for name, value in items:
            if isinstance(value, (dict, list)):
                kids.append(value)
                entries.append((value, (where, name), None))
        if not kids:  # most containers hold none: done at once
            height[key] = 1
            continue
        on_path.add(key)
        stack.append((obj, where, kids))
        stack.extend(entries)
    if height[id(doc)] > MAX_DEPTH:
        where, obj = ptr, doc
        for _ in range(MAX_DEPTH):
            items = obj.items() if isinstance(obj, dict) else enumerate(obj)
            name, obj = max(((n, v) for n, v in items if isinstance(v, (dict, list))), key=lambda nv: height[id(nv[1])])
            where = f"{where}/{escape_ptr(str(name))}"
        raise SchemaError(f"the schema is nested more than {MAX_DEPTH} levels deep", where)


def pointer(place) -> str:
    """The JSON pointer of a place ``(parent's place, key)`` (the root's: a string): places
    cost a tuple each where a pointer costs a string, and most are never written out."""
    keys = []
    while isinstance(place, tuple):
        place, key = place
        keys.append(key)
    return place + "".join(f"/{escape_ptr(str(key))}" for key in reversed(keys))


_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")
_DEFINITIONS = ("$defs", "definitions")  # read in every draft (pointers into them are common)
_SCHEMA_ONE = ("additionalProperties", "contains", "propertyNames", "not", "if", "then", "else",
               "unevaluatedProperties", "unevaluatedItems")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# what read rewrites
_READ_WORDS = frozenset(_REFS + _SCHEMA_MAPS + _DEFINITIONS + _SCHEMA_ONE + _SCHEMA_LISTS + (
    "dependencies", "items", "additionalItems", "exclusiveMinimum", "exclusiveMaximum", "minimum", "maximum"))
_RESOURCE_WORDS = frozenset(("id", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor"))  # what _enter reads


class Index:
    """Every document read, with its resources ($id), anchors and base URIs, for resolving $ref."""

    def __init__(self, root, dialect: Dialect, registry: dict):
        self.dialect = dialect
        self.resources: dict[str, tuple[Node, Any, Dialect]] = {}  # uri -> (read node, as written, dialect)
        self.anchors: dict[str, Node] = {}
        self.dynamic: dict[str, dict[str, Node]] = {}  # resource uri -> $dynamicAnchor name -> node
        self.recursive: set[str] = set()  # resources whose root says $recursiveAnchor: true
        self.bases: dict[int, str] = {}
        self.read_memo: dict[int, Any] = {}
        self._resolved: dict[tuple[str, str], Node] = {}  # (reference, base URI) -> its target
        self.originals: list = []  # keeps the documents alive (memo keys are ids)
        self.registry = registry
        self.refused: dict[str, str] = {}  # registry documents in a dialect we refuse: uri -> why
        self.has_refs = False  # whether a schema read so far has a $ref, $dynamicRef or $recursiveRef
        self.root = self._add_document(root, DEFAULT_BASE, "#", dialect)
        self.pending = dict(registry)  # read on the first $ref that needs it (most never do)

    def _load_registry(self) -> bool:
        """Read the registry documents once; False when there was nothing left to load."""
        if not self.pending:
            return False
        pending, self.pending = self.pending, {}
        for uri, doc in pending.items():
            try:
                declared = declared_dialect(doc.get("$schema"), self.registry) if isinstance(doc, dict) else None
            except UnsupportedSchemaError as exc:  # refused only if a $ref needs it
                self.refused[urldefrag(uri)[0]] = exc.message
                continue
            self._add_document(doc, uri, uri + "#", declared or self.dialect)
        return True

    def _add_document(self, doc, uri: str, ptr: str, dialect: Dialect) -> Node:
        check_tree(doc, ptr)
        self.originals.append(doc)
        base = _defragged(uri)[0]
        schema = self.read(doc, ptr, base, dialect)
        node = Node(schema, ptr, base)
        self.resources.setdefault(base, (node, doc, dialect))
        own = self.bases.get(id(schema), base)
        return Node(schema, ptr, own)

    # -- reading -------------------------------------------------------------------------
    def read(self, obj, ptr: str, base: str, dialect: Dialect):
        """`obj` (a schema as written) in the internal reading; read once, then memoized."""
        if isinstance(obj, bool):
            return obj
        if not isinstance(obj, dict):
            raise SchemaError(f"a schema must be an object or a boolean, not {type(obj).__name__}", ptr)
        if id(obj) in self.read_memo:
            return self.read_memo[id(obj)]
        out: dict = {}
        self.read_memo[id(obj)] = out
        overrides = "$ref" in obj and dialect.ref_overrides
        if not obj.keys().isdisjoint(_RESOURCE_WORDS):  # most subschemas declare nothing
            base = self._enter(obj, out, ptr, base, dialect, overrides)
        self.bases[id(out)] = base

        read = self.read  # a subschema's pointer: ptr/keyword/member (no keyword read here needs escaping)
        ignored = dialect.ignored
        for key, value in obj.items():
            if key in ignored or (overrides and key in ALL_KEYWORDS and key != "$ref"):
                continue
            if key not in _READ_WORDS:  # most keys: kept as written, without the tests below
                out[key] = value
            elif key in _REFS:
                if not isinstance(value, str):
                    raise SchemaError(f"{key} must be a string, not {type(value).__name__}", f"{ptr}/{key}")
                out[key] = value
                self.has_refs = True
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                at = f"{ptr}/{key}/"
                out[key] = {name: read(s, at + escape_ptr(name), base, dialect) for name, s in value.items()}
            elif key in _DEFINITIONS and isinstance(value, dict):
                at = f"{ptr}/{key}/"
                out[key] = {name: read(s, at + escape_ptr(name), base, dialect) if isinstance(s, (dict, bool)) else s
                            for name, s in value.items()}
            elif key == "dependencies" and isinstance(value, dict):
                at = f"{ptr}/{key}/"
                out[key] = {name: s if isinstance(s, list) else read(s, at + escape_ptr(name), base, dialect)
                            for name, s in value.items()}
            elif key in _SCHEMA_ONE:
                out[key] = read(value, f"{ptr}/{key}", base, dialect)
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [read(s, f"{ptr}/{key}/{i}", base, dialect) for i, s in enumerate(value)]
            elif key == "items":
                if isinstance(value, list):
                    items = [read(s, f"{ptr}/{key}/{i}", base, dialect) for i, s in enumerate(value)]
                    out[key] = items if dialect.at_least("2020-12") else TupleItems(items)
                else:
                    out[key] = read(value, f"{ptr}/{key}", base, dialect)
            elif key == "additionalItems":
                if isinstance(obj.get("items"), list):
                    out[key] = read(value, f"{ptr}/{key}", base, dialect)
            elif key in ("exclusiveMinimum", "exclusiveMaximum") and dialect.draft == "4":
                self._draft4_exclusive(obj, out, key, ptr)
            elif key in ("minimum", "maximum") and dialect.draft == "4":
                if obj.get("exclusive" + key[0].upper() + key[1:]) is not True:
                    out[key] = value
            else:
                out[key] = value
        return out

    @staticmethod
    def _draft4_exclusive(obj: dict, out: dict, key: str, ptr: str) -> None:
        """Draft-04 ``exclusiveMinimum: true`` makes ``minimum`` strict (alone it means nothing)."""
        value = obj[key]
        if not isinstance(value, bool):
            raise SchemaError(f"{key} must be a boolean in draft-04 (a number is the draft-06 form)", f"{ptr}/{key}")
        bound = "minimum" if key == "exclusiveMinimum" else "maximum"
        if value and bound in obj:
            out[key] = obj[bound]

    def _enter(self, obj: dict, out: dict, ptr: str, base: str, dialect: Dialect, overrides: bool) -> str:
        """Record the resource and anchors `obj` declares (one with some of `_RESOURCE_WORDS`);
        the base URI inside it."""
        sid = obj.get(dialect.id_keyword)
        if isinstance(sid, str) and not overrides:
            if dialect.fragment_ids and sid.startswith("#"):
                self.anchors.setdefault(base + sid, Node(out, ptr, base))
            else:
                try:
                    full = join_uri(base, sid)
                except ValueError:
                    raise SchemaError(f"{dialect.id_keyword} {sid!r} is not a URI reference", f"{ptr}/{dialect.id_keyword}") from None
                base, frag = _defragged(full)
                self.resources.setdefault(base, (Node(out, ptr, base), obj, dialect))
                if frag and dialect.fragment_ids:
                    self.anchors.setdefault(base + "#" + frag, Node(out, ptr, base))
        node = Node(out, ptr, base)
        if dialect.at_least("2019-09") and isinstance(obj.get("$anchor"), str):
            self.anchors.setdefault(base + "#" + obj["$anchor"], node)
        if dialect.at_least("2020-12") and isinstance(obj.get("$dynamicAnchor"), str):
            self.anchors.setdefault(base + "#" + obj["$dynamicAnchor"], node)
            self.dynamic.setdefault(base, {}).setdefault(obj["$dynamicAnchor"], node)
        if dialect.draft == "2019-09" and obj.get("$recursiveAnchor") is True:
            self.recursive.add(base)
        return base

    # -- references ------------------------------------------------------------------------
    def resolve(self, ref: str, node: Node, keyword: str = "$ref") -> Node:
        """The node `ref` (a reference of `node`'s, under `keyword`) lands on. Remembered per
        (reference, base URI) once found: the cycle check and the builder resolve the same
        references, a document repeats its own, and what a reference found stays what it
        finds (resources and anchors are only ever added). Failures are not remembered: their
        errors carry the pointer of the reference at hand."""
        if not isinstance(ref, str):
            raise SchemaError(f"{keyword} must be a string, not {type(ref).__name__}", f"{node.ptr}/{keyword}")
        found = self._resolved.get((ref, node.base))
        if found is None:
            found = self._resolved[ref, node.base] = self._resolve(ref, node, keyword)
        return found

    def resolved(self, ref: str, base: str) -> Node | None:
        """What `resolve` found for `ref` under the base URI `base` before (None: not yet)."""
        return self._resolved.get((ref, base))

    def _resolve(self, ref: str, node: Node, keyword: str) -> Node:
        ref_ptr = f"{node.ptr}/{keyword}"
        try:
            target = join_uri(node.base, ref)
        except ValueError:
            raise SchemaError(f"{keyword} {ref!r} is not a URI reference", ref_ptr) from None
        uri, frag = _defragged(target)
        found = self.resources.get(uri)
        if found is None and self._load_registry():
            found = self.resources.get(uri)
        if found is None and uri in self.refused:
            raise UnsupportedSchemaError(f"{keyword} {ref!r}: {self.refused[uri]}", ref_ptr)
        if found is None:
            if uri.startswith(("http://", "https://", "file:", "urn:")) and uri != urldefrag(DEFAULT_BASE)[0]:
                raise UnsupportedSchemaError(f"remote {keyword} {ref!r} is not supported (no network access at compile time; pass it in registry=)", ref_ptr)
            raise SchemaError(f"{keyword} {ref!r} does not resolve", ref_ptr)
        doc, written, dialect = found
        if not frag:
            return doc
        if frag.startswith("/"):
            current = written
            ptr = doc.ptr
            for token in frag[1:].split("/"):
                token = unquote(token).replace("~1", "/").replace("~0", "~")
                if isinstance(current, dict) and token in current:
                    current = current[token]
                elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
                    current = current[int(token)]
                else:
                    raise SchemaError(f"{keyword} {ref!r} does not resolve", ref_ptr)
                ptr = f"{ptr}/{escape_ptr(token)}"
            schema = self.read(current, ptr, doc.base, dialect)
            return Node(schema, ptr, self.bases.get(id(schema), doc.base) if isinstance(schema, dict) else doc.base)
        anchor = self.anchors.get(uri + "#" + frag)
        if anchor is None and self._load_registry():
            anchor = self.anchors.get(uri + "#" + frag)
        if anchor is None:
            raise SchemaError(f"{keyword} {ref!r} names no $anchor", ref_ptr)
        return anchor


# An absolute http(s) URI that urllib's parsing gives back as it is (`_plain`): scheme in
# lower case, a host of letters, digits, dots and dashes (and a port), a path of unreserved
# characters; no query, no parameters, no fragment, nothing urllib strips or checks.
_PLAIN_URI = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[A-Za-z0-9._~/-]*)?")
_URL_REMOVED = ("\t", "\r", "\n")  # what urllib deletes anywhere in a URI, fragments included


def _plain(uri: str) -> bool:
    """Whether `uri` is one that ``urlunparse(urlparse(uri))`` writes back unchanged, with the
    scheme and host that urljoin resolves against (a schema's own ``$id`` most often, and
    the default base): the URIs whose fragments and joins need no parsing."""
    return _PLAIN_URI.fullmatch(uri) is not None


@lru_cache(maxsize=4096)  # a document's $refs repeat, and urllib's parsing is slow Python
def _defragged(uri: str) -> tuple[str, str]:
    """`urldefrag(uri)`: (the URI without its fragment, the fragment). A plain URI (`_plain`)
    before the ``#`` is cut there, without urllib's parse (each new reference paid one)."""
    head, hash_, frag = uri.partition("#")
    if hash_ and _plain(head) and not any(c in frag for c in _URL_REMOVED):
        return head, frag
    return tuple(urldefrag(uri))


@lru_cache(maxsize=4096)
def join_uri(base: str, ref: str) -> str:
    """`ref` resolved against `base` (RFC 3986, section 5.2). urljoin alone returns a
    fragment-only reference unchanged under a scheme it does not know as hierarchical
    (``urn:``, ``tag:``), so ``#/$defs/a`` inside a schema whose ``$id`` is a URN would
    name no resource: a fragment (or nothing) is resolved here for every scheme. A plain
    absolute `ref` (`_plain`) under a plain `base` is itself: what urljoin returns, parsed
    (a schema's ``$id`` is mostly such a URI)."""
    if ref == "" or ref.startswith("#"):
        return urldefrag(base)[0] + ref
    if _plain(ref) and _plain(base):
        return ref
    return urljoin(base, ref)
