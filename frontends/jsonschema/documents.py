"""Reading schema documents: JSON pointers, base URIs, `$id`/`$anchor` resources, `$ref` resolution."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin

from grammarc.errors import SchemaError, UnsupportedSchemaError

DEFAULT_BASE = "https://grammarc.invalid/schema.json"


@dataclass(frozen=True)
class Node:
    """A subschema with the JSON pointer it sits at and its base URI."""

    schema: Any
    ptr: str
    base: str

    def child(self, key, value) -> "Node":
        return Node(value, f"{self.ptr}/{escape_ptr(str(key))}", self.base)


def escape_ptr(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if",
               "then", "else", "unevaluatedProperties", "unevaluatedItems", "items", "contentSchema")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")


class Index:
    """Every schema resource ($id), anchor and subschema base URI, for resolving $ref."""

    def __init__(self, root, draft: str, registry: dict):
        self.draft = draft
        self.resources: dict[str, Node] = {}
        self.anchors: dict[str, Node] = {}
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

    def _add_document(self, doc, uri: str, ptr: str) -> Node:
        base = urldefrag(uri)[0]
        node = Node(doc, ptr, base)
        self.resources.setdefault(base, node)
        self._scan(node)
        return self.resources[base] if ptr != "#" else node

    def _scan(self, node: Node) -> None:
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
                node = Node(schema, node.ptr, base)
                self.resources.setdefault(base, node)
                if frag and self.draft == "7":
                    self.anchors[base + "#" + frag] = node
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(schema.get(key), str):
                self.anchors[base + "#" + schema[key]] = node
        self.bases[id(schema)] = base
        node = Node(schema, node.ptr, base)
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

    def resolve(self, ref: str, node: Node) -> Node:
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
                ptr = f"{ptr}/{escape_ptr(token)}"
            return Node(current, ptr, self.bases.get(id(current), doc.base))
        found = self.anchors.get(uri + "#" + frag)
        if found is None and self._load_registry():
            found = self.anchors.get(uri + "#" + frag)
        if found is None:
            raise SchemaError(f"$ref {ref!r} names no $anchor", ref_ptr)
        return found
