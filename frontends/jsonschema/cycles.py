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

from .documents import Index, Node, pointer

_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")
_CONSUMING_ONE = ("additionalProperties", "additionalItems", "items", "contains", "propertyNames",
                  "unevaluatedProperties", "unevaluatedItems")
_CONSUMING_MAPS = ("properties", "patternProperties")
_CONSUMING_LISTS = ("prefixItems", "items")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
_IN_PLACE = frozenset(_REFS + _IN_PLACE_LISTS + _IN_PLACE_ONE + _IN_PLACE_MAPS)  # what leads in place
_EDGE_WORDS = frozenset(_REFS + _IN_PLACE_LISTS + _IN_PLACE_ONE + _IN_PLACE_MAPS + _CONSUMING_ONE + _CONSUMING_MAPS
                        + _CONSUMING_LISTS)

# A subschema on the walk: (schema, place, base URI). Its place is its JSON pointer, or
# (its parent's place, key), written out as a pointer (`documents.pointer`) only for a $ref to
# resolve or an error to report: most subschemas need neither.
_Sub = tuple


def _edges(index: Index, sub: _Sub) -> tuple[list[tuple[_Sub, object]], list[_Sub]]:
    """(in-place children with the place of the keyword leading there, consuming children)
    of a subschema that has some (`_leaf`: most have none)."""
    s, place, base = sub
    present = s.keys() & _EDGE_WORDS  # the few of its keywords that lead anywhere (no probe per word)
    in_place: list[tuple[_Sub, object]] = []
    consuming: list[_Sub] = []
    if not present.isdisjoint(_IN_PLACE):  # most lead only into parts of the value
        for word in _REFS:
            if word in present and isinstance(s[word], str):
                # a reference resolved before needs no pointer (a document repeats its references)
                target = index.resolved(s[word], base) or index.resolve(s[word], Node(s, pointer(place), base), word)
                in_place.append(((target.schema, target.ptr, target.base), (place, word)))
        for word in _IN_PLACE_LISTS:
            if word in present and isinstance(s[word], list):
                parent = (place, word)  # once, not once per element
                in_place += [((x, (parent, i), base), place) for i, x in enumerate(s[word])]
        for word in _IN_PLACE_ONE:
            if word in present:
                in_place.append(((s[word], (place, word), base), place))
        for word in _IN_PLACE_MAPS:
            if word in present and isinstance(s[word], dict):
                parent = (place, word)
                in_place += [((x, (parent, k), base), place) for k, x in s[word].items() if isinstance(x, (dict, bool))]
    for word in _CONSUMING_ONE:
        if word in present and isinstance(s[word], (dict, bool)):
            consuming.append((s[word], (place, word), base))
    for word in _CONSUMING_MAPS:
        if word in present and isinstance(s[word], dict):
            parent = (place, word)
            consuming += [(x, (parent, k), base) for k, x in s[word].items()]
    for word in _CONSUMING_LISTS:
        if word in present and isinstance(s[word], list):
            parent = (place, word)
            consuming += [(x, (parent, i), base) for i, x in enumerate(s[word])]
    return in_place, consuming


def _leaf(schema) -> bool:
    """Whether a subschema leads nowhere (no keyword of `_EDGE_WORDS`): most subschemas."""
    return not isinstance(schema, dict) or schema.keys().isdisjoint(_EDGE_WORDS)


def check_cycles(index: Index, root: Node) -> None:
    """Raise SchemaError at the first in-place cycle reachable from `root` (iterative DFS).

    A cycle takes a reference: the schemas as read, less their references, are a tree (or a
    DAG where the document shares objects; `check_tree` refused cyclic ones). A document read
    without any (most) has none to find, and nothing reads further documents for it."""
    if not index.has_refs:
        return None
    state: dict[int, int] = {}  # id(schema) -> 1 on the in-place path, 2 done
    roots: list[_Sub] = [(root.schema, root.ptr, root.base)]
    seen_roots = {id(root.schema)}
    while roots:
        start = roots.pop()
        if state.get(id(start[0])) == 2:
            continue
        stack: list = [(start, None)]
        while stack:
            sub, children = stack.pop()
            key = id(sub[0])
            if children is None:
                if state.get(key) == 2:
                    continue
                if _leaf(sub[0]):  # done at once
                    state[key] = 2
                    continue
                state[key] = 1
                in_place, consuming = _edges(index, sub)
                for child in consuming:
                    if isinstance(child[0], dict) and id(child[0]) not in seen_roots:
                        seen_roots.add(id(child[0]))
                        roots.append(child)
                stack.append((sub, iter(in_place)))
                continue
            for child, via in children:
                if not isinstance(child[0], dict):
                    continue
                mark = state.get(id(child[0]))
                if mark == 1:
                    raise SchemaError(f"the schema at {pointer(child[1])} refers to itself without reading any part "
                                      "of the value (a $ref cycle through in-place keywords only)", pointer(via))
                if mark is None:
                    stack.append((sub, children))
                    stack.append((child, None))
                    break
            else:
                state[key] = 2
    return None
