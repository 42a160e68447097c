"""`$ref` cycles that consume no input: refused before anything is built.

A schema may refer to itself through a keyword that reads a part of the value (``items``,
``properties``, ...): that is a recursive data type. Through in-place keywords only (``$ref``,
``allOf``/``anyOf``/``oneOf``, ``not``, ``if``/``then``/``else``, ``dependentSchemas``) it asks
the same value the same question forever -- ``{"$ref": "#", "type": "integer"}``, or a
definition whose ``not`` refers back to it. JSON Schema gives such schemas no meaning (a
validator would loop), so they are refused with the pointer of the reference that closes the
cycle, rather than given a guessed least-fixed-point language.
"""

from __future__ import annotations

from grammarc.errors import SchemaError

from .documents import Index, Node

_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")
_CONSUMING_ONE = ("additionalProperties", "additionalItems", "items", "contains", "propertyNames",
                  "unevaluatedProperties", "unevaluatedItems")
_CONSUMING_MAPS = ("properties", "patternProperties")
_CONSUMING_LISTS = ("prefixItems", "items")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
_EDGE_WORDS = frozenset(_REFS + _IN_PLACE_LISTS + _IN_PLACE_ONE + _IN_PLACE_MAPS + _CONSUMING_ONE + _CONSUMING_MAPS
                        + _CONSUMING_LISTS)


def _edges(index: Index, node: Node) -> tuple[list[tuple[Node, str]], list[Node]]:
    """(in-place children with the pointer of the keyword leading there, consuming children)."""
    s = node.schema
    if not isinstance(s, dict) or s.keys().isdisjoint(_EDGE_WORDS):  # most subschemas are leaves
        return [], []
    in_place: list[tuple[Node, str]] = []
    consuming: list[Node] = []
    for word in _REFS:
        if isinstance(s.get(word), str):
            in_place.append((index.resolve(s[word], node, word), f"{node.ptr}/{word}"))
    for word in _IN_PLACE_LISTS:
        if isinstance(s.get(word), list):
            parent = node.child(word, None)  # once, not once per element
            in_place += [(parent.child(i, x), node.ptr) for i, x in enumerate(s[word])]
    for word in _IN_PLACE_ONE:
        if word in s:
            in_place.append((node.child(word, s[word]), node.ptr))
    for word in _IN_PLACE_MAPS:
        if isinstance(s.get(word), dict):
            parent = node.child(word, None)
            in_place += [(parent.child(k, x), node.ptr) for k, x in s[word].items() if isinstance(x, (dict, bool))]
    for word in _CONSUMING_ONE:
        if isinstance(s.get(word), (dict, bool)):
            consuming.append(node.child(word, s[word]))
    for word in _CONSUMING_MAPS:
        if isinstance(s.get(word), dict):
            parent = node.child(word, None)
            consuming += [parent.child(k, x) for k, x in s[word].items()]
    for word in _CONSUMING_LISTS:
        if isinstance(s.get(word), list):
            parent = node.child(word, None)
            consuming += [parent.child(i, x) for i, x in enumerate(s[word])]
    return in_place, consuming


def check_cycles(index: Index, root: Node) -> None:
    """Raise SchemaError at the first in-place cycle reachable from `root` (iterative DFS)."""
    state: dict[int, int] = {}  # id(schema) -> 1 on the in-place path, 2 done
    roots = [root]
    seen_roots = {id(root.schema)}
    while roots:
        start = roots.pop()
        if state.get(id(start.schema)) == 2:
            continue
        stack: list = [(start, None)]
        while stack:
            node, children = stack.pop()
            key = id(node.schema)
            if children is None:
                if state.get(key) == 2:
                    continue
                state[key] = 1
                in_place, consuming = _edges(index, node)
                for child in consuming:
                    if isinstance(child.schema, dict) and id(child.schema) not in seen_roots:
                        seen_roots.add(id(child.schema))
                        roots.append(child)
                stack.append((node, iter(in_place)))
                continue
            for child, via in children:
                if not isinstance(child.schema, dict):
                    continue
                mark = state.get(id(child.schema))
                if mark == 1:
                    raise SchemaError(f"the schema at {child.ptr} refers to itself without reading any part "
                                      "of the value (a $ref cycle through in-place keywords only)", via)
                if mark is None:
                    stack.append((node, children))
                    stack.append((child, None))
                    break
            else:
                state[key] = 2
    return None
