"""anyOf and oneOf: distributed over the conjunction; oneOf kept exact by disjointness or negation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from grammarc.errors import SchemaError
from grammarc.ir import Alt, Expr

from .documents import Node
from .keywords import ANNOTATIONS, NUMBER_KINDS, REFS, SUPPORTED, TYPES, TYPES_KEY, UNSUPPORTED
from .merge import Merged
from .negation import CannotNegate
from .values import json_equal, json_kind, type_set
MAX_ONE_OF_PRODUCT = 1024  # alternatives per exclusive oneOf branch (contradictory ones are pruned)
MAX_DISTRIBUTED = 4096  # branches built by distributing anyOf/oneOf, per schema
_DISTRIBUTED = frozenset(("nullable", "anyOf", "oneOf"))  # the words `_alternatives` distributes


class Combinators:
    """anyOf / oneOf / nullable distributed over a conjunction."""

    def _alternatives(self, conj, depth, hint) -> Expr | None:
        """Distribute anyOf/oneOf/nullable over the conjunction, then build each branch."""
        conj = tuple(self._collect(conj))
        if any(n.schema is False for n in conj):
            return None
        for i, node in enumerate(conj):
            schema = node.schema
            if not isinstance(schema, dict) or schema.keys().isdisjoint(_DISTRIBUTED):  # most schemas
                continue
            if schema.get("nullable") is True:
                rest = dict(schema)
                del rest["nullable"]
                branches = [Node({"type": "null"}, node.ptr + "/nullable", node.base), Node(rest, node.ptr, node.base)]
                return self._union(conj, i, branches, depth, hint)
            for word in ("anyOf", "oneOf"):
                if word in schema:
                    subs = schema[word]
                    if not isinstance(subs, list) or not subs:
                        raise SchemaError(f"{word} must be a non-empty array", f"{node.ptr}/{word}")
                    rest = {k: v for k, v in schema.items() if k != word}
                    self.keep.append(rest)
                    parent = Node(rest, node.ptr, node.base)
                    branches = [Node(sub, f"{node.ptr}/{word}/{j}", node.base) for j, sub in enumerate(subs)]
                    context = conj[:i] + (parent,) + conj[i + 1:]
                    if word == "oneOf" and not self._disjoint(branches, context):
                        by_type = self._one_of_by_type(branches, context)
                        if by_type is not None:
                            branches = [Node(self._synth(f"oneOf-types/{j}/{','.join(ts)}", subs,
                                                         lambda j=j, ts=ts: {TYPES_KEY: list(ts), "allOf": [subs[j]]}),
                                             b.ptr, node.base)
                                        for j, (b, ts) in enumerate(zip(branches, by_type)) if ts]
                            if not branches:
                                self.note_empty("every value matches none or several of the oneOf branches", node.ptr + "/oneOf")
                                return None
                        else:
                            branches = self._exclusive(node, subs, branches)
                    # a branch the rest provably contradicts is left out before it is built: a
                    # chain of if/then on one discriminator distributes into ~n**2 branches, not 2**n
                    if len(branches) > 1:
                        around = self._conj_signature(context)  # once, not once per branch
                        branches = [b for b in branches if not self._contradictory(around, b)] or branches[:1]
                    self.distributed += len(branches)
                    if self.distributed > MAX_DISTRIBUTED:
                        # lenient: the anyOf/oneOf is dropped (wider, as the warning says)
                        self.unsupported(word, node.ptr, "distributing the anyOf/oneOf branches over the "
                                         f"conjunction around them needs more than {MAX_DISTRIBUTED} branches")
                        return self._alternatives(context, depth, hint)
                    return self._union(context, None, branches, depth, hint, extra_index=i)
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
            expr = self.value(sub, depth, hint=f"{hint}_{j}")
            if expr is not None and expr not in parts:
                parts.append(expr)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))


    def _contradictory(self, around: "Signature | None", branch: Node) -> bool:
        """Whether no value satisfies `branch` within the conjunction whose signature is
        `around` (None: unknown), by their signatures (conservative). The same fold as the
        signature of the conjunction with the branch last: a chain of n if/then distributes
        into ~n**2 conjunctions, and folding each one whole made it cubic."""
        if around is None:
            return False
        sig = self._signature(branch, set())
        return sig is not None and self._sig_empty(around.meet(sig), 0)

    def _sig_empty(self, sig: "Signature", level: int) -> bool:
        if not sig.types or sig.values == []:
            return True
        if sig.types != {"object"} or level >= 3:
            return False
        for k in sig.required:
            if sig.forbids(k):
                return True
            inner = self._conj_signature(sig.props.get(k, ()))
            if inner is not None and self._sig_empty(inner, level + 1):
                return True
        return False

    def _disjoint(self, branches: list[Node], context: tuple = ()) -> bool:
        """Whether no JSON value satisfies two of the branches (checked conservatively).

        The standard reductions: disjoint types (within the types the rest of the conjunction,
        `context`, allows), disjoint const/enum values, and for objects a property one branch
        requires that the other forbids (``false``, or closed by ``additionalProperties:
        false``) or that both require with disjoint values (a discriminator).
        """
        found = self._branch_signatures(branches, context)
        if found is None:
            return False
        sigs, allowed = found
        return all(self._sigs_disjoint(sigs[i], sigs[j], allowed, 0)
                   for i in range(len(sigs)) for j in range(i + 1, len(sigs)))

    def _branch_signatures(self, branches: list[Node], context: tuple):
        """The branches' signatures, each met with the rest of the conjunction (the oneOf is
        only ever evaluated inside it, so a ``required`` or a type beside the oneOf counts),
        and the types the conjunction allows; None when a branch has no signature."""
        ctx = None
        for node in context:
            sig = self._signature(node, set())
            if sig is not None:  # a conjunct left out only widens: still sound
                ctx = sig if ctx is None else ctx.meet(sig)
        sigs = []
        for b in branches:
            sig = self._signature(b, set())
            if sig is None:
                return None
            sigs.append(sig if ctx is None else sig.meet(ctx, constrains=False))
        return sigs, (set(TYPES) if ctx is None else set(ctx.types))

    def _one_of_by_type(self, branches: list[Node], context: tuple) -> list[tuple] | None:
        """oneOf split by JSON type: for each branch, the types on which it is the only match.

        For a type t, the branches that accept *every* value of type t (t among their types,
        no keyword of theirs constrains t) decide it: two of them, and no value of type t
        passes the oneOf; one alone (no other branch allows t), and it gets t; none, and t
        goes to each branch allowing it when those are pairwise disjoint on t. Any other
        case (one accepts all of t, another constrains t) is None: the caller negates.
        """
        found = self._branch_signatures(branches, context)
        if found is None:
            return None
        sigs, allowed = found
        kept: list[set] = [set() for _ in sigs]
        for t in TYPES:
            if t not in allowed:
                continue
            some = [i for i, sig in enumerate(sigs) if t in sig.types]
            every = [i for i in some if t not in sigs[i].constrains]
            if len(every) >= 2:
                continue
            if every and len(some) > 1:
                return None
            if not all(self._sigs_disjoint(sigs[i], sigs[j], {t}, 0) for i in some for j in some if i < j):
                return None
            for i in some:
                kept[i].add(t)
        return [tuple(t for t in TYPES if t in ts) for ts in kept]

    def _sigs_disjoint(self, a: "Signature", b: "Signature", allowed: set, level: int) -> bool:
        types = a.types & b.types & allowed
        if not types:
            return True
        if a.values is not None and b.values is not None:
            if not any(json_equal(x, y) for x in a.values for y in b.values):
                return True
        for one, other in ((a, b), (b, a)):
            if one.values is not None and not any(json_kind(x) in other.types & allowed for x in one.values):
                return True
        if not types <= {"object"}:
            return False
        for one, other in ((a, b), (b, a)):
            if any(other.forbids(k) for k in one.required):
                return True
        if level < 3:
            for k in a.required & b.required:
                if k in a.props and k in b.props:
                    sa, sb = self._conj_signature(a.props[k]), self._conj_signature(b.props[k])
                    if sa is not None and sb is not None and self._sigs_disjoint(sa, sb, set(TYPES), level + 1):
                        return True
        return False

    def _conj_signature(self, nodes) -> "Signature | None":
        out = None
        for node in nodes:
            sig = self._signature(node, set())
            if sig is None:
                return None
            out = sig if out is None else out.meet(sig)
        return out

    def _signature(self, node: Node, seen: set) -> "Signature | None":
        """What a branch says about types, values and object keys, following $ref and allOf
        (memoized per schema, base and dynamic scope; callers never modify one)."""
        key = (id(node.schema), node.base, self._scope_key()) if not seen else None
        if key is not None and key in self.signatures:
            return self.signatures[key]
        saved = self.scope
        try:
            self.enter(node)
            sig = self._signature_in_scope(node, seen)
        finally:
            self.scope = saved
        if key is not None:
            self.keep.append(node.schema)
            self.signatures[key] = sig
        return sig

    def _signature_in_scope(self, node: Node, seen: set) -> "Signature | None":
        schema = node.schema
        if schema is False:
            return Signature(set(), [])
        if schema is True:
            return Signature(set(TYPES))
        if id(schema) in seen:
            return None
        seen = seen | {id(schema)}
        sig = Signature(set(TYPES))
        sig.constrains = constrained_types(schema)
        if "type" in schema:
            sig.types &= type_set(schema["type"], node.ptr + "/type")
        if TYPES_KEY in schema:
            sig.types &= set(schema[TYPES_KEY])
        if "const" in schema:
            sig.values = [schema["const"]]
        if "enum" in schema and isinstance(schema["enum"], list):
            sig.values = list(schema["enum"]) if sig.values is None else [v for v in sig.values if any(json_equal(v, e) for e in schema["enum"])]
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        sig.props = {k: [node.child_of("properties", k, v)] for k, v in props.items()}
        if isinstance(schema.get("required"), list):
            sig.required = {k for k in schema["required"] if isinstance(k, str)}
        if schema.get("additionalProperties") is False and not schema.get("patternProperties"):
            sig.closed = frozenset(props)
        parts = []  # the branches this one is the conjunction of: its $ref and its allOf
        for word in REFS:
            if word in schema:
                parts.append(self.resolve_ref(word, node))
        for j, sub in enumerate(schema.get("allOf", []) or []):
            parts.append(node.child_of("allOf", j, sub))
        for part in parts:
            inner = self._signature(part, seen)
            if inner is None:
                return None
            sig = sig.meet(inner)
        for word in ("anyOf", "oneOf"):  # at least one branch holds: the union of their types
            subs = schema.get(word)
            if isinstance(subs, list) and subs:
                inner = [self._signature(node.child_of(word, j, sub), seen) for j, sub in enumerate(subs)]
                if all(x is not None for x in inner):
                    sig.types &= set().union(*(x.types for x in inner))
        if schema.get("nullable") is True:  # widens: null passes whatever else the schema says
            sig.types |= {"null"}
            if sig.values is not None:
                sig.values.append(None)
        if sig.values is not None:
            sig.types &= {json_kind(v) for v in sig.values}
            sig.values = [v for v in sig.values if json_kind(v) in sig.types]
        return sig


@dataclass
class Signature:
    """The part of a schema that disjointness checks read (a conjunction meets them)."""

    types: set
    values: list | None = None  # const/enum, None: any
    required: set = field(default_factory=set)
    props: dict = field(default_factory=dict)  # key -> [property subschema nodes]
    closed: frozenset | None = None  # with additionalProperties: false, the only keys allowed
    constrains: frozenset = frozenset()  # types some keyword may reject values of (beyond `types`)

    def forbids(self, key: str) -> bool:
        """Whether no object valid here has `key`."""
        if self.closed is not None and key not in self.closed:
            return True
        return any(n.schema is False for n in self.props.get(key, ()))

    def meet(self, other: "Signature", constrains: bool = True) -> "Signature":
        """Both signatures; `constrains=False` keeps this one's constrained types (`other` is
        the conjunction around a oneOf, which applies to every branch alike)."""
        if self.values is None or other.values is None:
            values = other.values if self.values is None else self.values
            values = None if values is None else list(values)  # a copy: signatures are memoized
        else:
            values = [v for v in self.values if any(json_equal(v, w) for w in other.values)]
        props = {k: self.props.get(k, []) + other.props.get(k, []) for k in {*self.props, *other.props}}
        closed = self.closed if other.closed is None else other.closed if self.closed is None else self.closed & other.closed
        return Signature(self.types & other.types, values, self.required | other.required, props, closed,
                         self.constrains | other.constrains if constrains else self.constrains)


OBJECT_WORDS = frozenset({"properties", "required", "additionalProperties", "patternProperties", "propertyNames",
                          "minProperties", "maxProperties", "dependentRequired", "dependentSchemas", "dependencies"})
ARRAY_WORDS = frozenset({"items", "prefixItems", "additionalItems", "minItems", "maxItems", "contains",
                         "minContains", "maxContains", "uniqueItems"})
STRING_WORDS = frozenset({"minLength", "maxLength", "pattern"})
NUMBER_WORDS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
QUIET_WORDS = frozenset({"type", TYPES_KEY, "allOf", *REFS}) | ANNOTATIONS - {"nullable"}


def constrained_types(schema: dict) -> frozenset:
    """The types whose values some keyword of `schema` itself may reject (its `type`, $ref and
    allOf aside: the signature reads those); any keyword not known to apply to one type only
    (enum, not, anyOf, format, ...) counts for every type."""
    out: set = set()
    for word in schema:
        if word in QUIET_WORDS:
            continue
        if word in OBJECT_WORDS:
            out.add("object")
        elif word in ARRAY_WORDS:
            out.add("array")
        elif word in STRING_WORDS:
            out.add("string")
        elif word in NUMBER_WORDS:
            out |= NUMBER_KINDS
        elif word in SUPPORTED or word in UNSUPPORTED or word.startswith("$grammarc:") or word == "nullable":
            return frozenset(TYPES)
    return frozenset(out)

