"""anyOf and oneOf: distributed over the conjunction; oneOf kept exact by disjointness or negation."""

from __future__ import annotations

import math

from grammarc.errors import SchemaError
from grammarc.ir import Alt, Expr

from .documents import Node
from .keywords import TYPES
from .merge import Merged
from .negation import CannotNegate
from .values import json_equal, json_kind, type_set
MAX_ONE_OF_PRODUCT = 64  # alternatives per exclusive oneOf branch


class Combinators:
    """anyOf / oneOf / nullable distributed over a conjunction."""

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
                branches = [Node({"type": "null"}, node.ptr + "/nullable", node.base), Node(rest, node.ptr, node.base)]
                return self._union(conj, i, branches, depth, hint)
            for word in ("anyOf", "oneOf"):
                if word in schema and not (self.draft == "7" and "$ref" in schema):
                    subs = schema[word]
                    if not isinstance(subs, list) or not subs:
                        raise SchemaError(f"{word} must be a non-empty array", f"{node.ptr}/{word}")
                    rest = {k: v for k, v in schema.items() if k != word}
                    self.keep.append(rest)
                    parent = Node(rest, node.ptr, node.base)
                    branches = [Node(sub, f"{node.ptr}/{word}/{j}", node.base) for j, sub in enumerate(subs)]
                    if word == "oneOf" and not self._disjoint(branches):
                        branches = self._exclusive(node, subs, branches)
                    return self._union(conj[:i] + (parent,) + conj[i + 1:], None, branches, depth, hint, extra_index=i)
        merged = Merged(types=set(TYPES))
        for node in conj:
            self._merge_one(merged, node)
        return self._emit(merged, conj, depth, hint)


    def _exclusive(self, node: Node, subs: list, branches: list[Node]) -> list[Node]:
        """oneOf with overlapping branches: branch i is ``allOf: [A_i, not A_j for j != i]``.

        Exact when every branch can be negated (see `_negate`); otherwise refused (lenient:
        the branches are kept as an anyOf, which is wider, as the warning says). The
        negations multiply out, so large products are refused too.
        """
        sizes = []
        for branch in branches:
            try:
                negated, _ = self._negate(branch)
            except CannotNegate as exc:
                self.unsupported("oneOf", node.ptr, f"its branches are not provably disjoint, and {exc.why}")
                return branches
            sizes.append(len(negated["anyOf"]) if isinstance(negated, dict) and "anyOf" in negated else 1)
        if max(math.prod(sizes[:i] + sizes[i + 1:]) for i in range(len(sizes))) > MAX_ONE_OF_PRODUCT:
            self.unsupported("oneOf", node.ptr, "its branches are not provably disjoint, and excluding "
                             f"each from the others needs more than {MAX_ONE_OF_PRODUCT} alternatives")
            return branches

        def exclusive(i: int) -> dict:
            return {"allOf": [subs[i]] + [{"not": sub} for j, sub in enumerate(subs) if j != i]}

        return [Node(self._synth(f"oneOf/{i}", subs, lambda i=i: exclusive(i)), b.ptr, node.base)
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


    def _disjoint(self, branches: list[Node]) -> bool:
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


    def _signature(self, node: Node, seen: set):
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
            types &= type_set(schema["type"], node.ptr + "/type")
        if "const" in schema:
            values = [schema["const"]]
        if "enum" in schema and isinstance(schema["enum"], list):
            values = list(schema["enum"]) if values is None else [v for v in values if any(json_equal(v, e) for e in schema["enum"])]
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
                values = inner[1] if values is None else [v for v in values if any(json_equal(v, e) for e in inner[1])]
            for k, v in inner[2].items():
                discriminators.setdefault(k, v)
        if values is not None:
            types &= {json_kind(v) for v in values}
            values = [v for v in values if json_kind(v) in types]
        return (types, values, discriminators)



def _signatures_disjoint(a, b) -> bool:
    types_a, values_a, disc_a = a
    types_b, values_b, disc_b = b
    if not (types_a & types_b):
        return True
    if values_a is not None and values_b is not None:
        if not any(json_equal(x, y) for x in values_a for y in values_b):
            return True
    if values_a is not None and not any(json_kind(x) in types_b for x in values_a):
        return True
    if values_b is not None and not any(json_kind(x) in types_a for x in values_b):
        return True
    common = set(disc_a) & set(disc_b)
    for k in common:
        if not any(json_equal(x, y) for x in disc_a[k] for y in disc_b[k]):
            if types_a & types_b <= {"object"}:
                return True
    return False
