"""`documents.check_tree` (a cyclic Python object or nesting past MAX_DEPTH is refused with a
precise pointer) against a reference: the same refusals, the same pointers, on random
documents that share containers, contain themselves or nest around the limit."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc.errors import SchemaError
from grammarc.frontends.jsonschema.documents import MAX_DEPTH, _shallow, check_tree, escape_ptr, pointer


def reference_check_tree(doc, ptr: str = "#") -> None:
    """Test oracle: the check as first written, every container entered and left on the
    stack (the implementation settles a container without containers inside at once)."""
    if not isinstance(doc, (dict, list)):
        return
    height: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list = [(doc, ptr, None)]
    while stack:
        obj, where, kids = stack.pop()
        key = id(obj)
        if kids is not None:
            on_path.discard(key)
            height[key] = 1 + max([height[id(k)] for k in kids], default=0)
            continue
        if key in on_path:
            raise SchemaError("the schema contains itself (a cyclic Python object)", pointer(where))
        if key in height:
            continue
        on_path.add(key)
        kids = []
        stack.append((obj, where, kids))
        items = obj.items() if isinstance(obj, dict) else enumerate(obj)
        for name, value in items:
            if isinstance(value, (dict, list)):
                kids.append(value)
                stack.append((value, (where, name), None))
    if height[id(doc)] > MAX_DEPTH:
        where, obj = ptr, doc
        for _ in range(MAX_DEPTH):
            items = obj.items() if isinstance(obj, dict) else enumerate(obj)
            name, obj = max(((n, v) for n, v in items if isinstance(v, (dict, list))), key=lambda nv: height[id(nv[1])])
            where = f"{where}/{escape_ptr(str(name))}"
        raise SchemaError(f"the schema is nested more than {MAX_DEPTH} levels deep", where)


def _attach(rnd: random.Random, parent, child) -> None:
    if isinstance(parent, dict):
        parent[f"k{rnd.randrange(6)}/~{len(parent)}"] = child
    else:
        parent.insert(rnd.randrange(len(parent) + 1), child)


def document(rnd: random.Random, spine: int, share: bool, cycle: bool):
    """Random containers under a root, a chain `spine` containers deep hung somewhere, and
    perhaps a container hung twice (shared) or an ancestor hung under a descendant (a cycle)."""
    root: dict = {"type": "object"}
    made: list = [root]
    parents: dict[int, object] = {}
    for _ in range(rnd.randrange(1, 30)):
        child = {} if rnd.random() < 0.6 else []
        for _ in range(rnd.randrange(3)):
            _attach(rnd, child, rnd.choice([1, "x", None, True]))
        parent = rnd.choice(made)
        _attach(rnd, parent, child)
        parents[id(child)] = parent
        made.append(child)
    chain = top = [] if rnd.random() < 0.5 else {}
    for _ in range(spine - 1):
        inner = [] if rnd.random() < 0.5 else {}
        _attach(rnd, chain, inner)
        chain = inner
    _attach(rnd, rnd.choice(made), top)
    if share:
        _attach(rnd, rnd.choice(made), rnd.choice(made[1:] or made))
    if cycle:
        node = rnd.choice(made)
        ancestor = node
        for _ in range(rnd.randrange(4)):
            ancestor = parents.get(id(ancestor), ancestor)
        _attach(rnd, node, ancestor)
    return root


def outcome(check, doc) -> tuple[str, str] | None:
    try:
        check(doc)
    except SchemaError as exc:
        return str(exc), exc.pointer
    return None


@given(st.randoms(use_true_random=False), st.integers(1, MAX_DEPTH + 4), st.booleans(), st.booleans())
@settings(max_examples=200, deadline=None)
def test_check_tree_agrees_with_the_reference(rnd, spine, share, cycle) -> None:
    doc = document(rnd, spine, share, cycle)
    assert outcome(check_tree, doc) == outcome(reference_check_tree, doc)


def test_the_documents_reach_every_outcome() -> None:
    # the random documents above are refused as cyclic, refused as too deep, and accepted
    seen = set()
    for seed in range(300):
        rnd = random.Random(seed)
        found = outcome(check_tree, document(rnd, rnd.randrange(1, MAX_DEPTH + 4), rnd.random() < 0.3, rnd.random() < 0.3))
        seen.add(None if found is None else found[0].split(":")[-1].split("(")[0].strip()[:20])
    assert len(seen) == 3, seen


@given(st.randoms(use_true_random=False), st.integers(1, MAX_DEPTH + 4), st.booleans(), st.booleans())
@settings(max_examples=200, deadline=None)
def test_the_level_pass_clears_exactly_the_accepted_documents(rnd, spine, share, cycle) -> None:
    # check_tree's fast path: it must clear every document the reference accepts (else the
    # exact walk does the work) and none it refuses (else a refusal is lost)
    doc = document(rnd, spine, share, cycle)
    assert _shallow(doc) == (outcome(reference_check_tree, doc) is None)


class _Counted(list):
    """A list that counts how often it is read."""

    reads = 0

    def __iter__(self):
        _Counted.reads += 1
        return super().__iter__()


def test_the_level_pass_reads_a_shared_container_once_per_level() -> None:
    # each container holds the next one twice: 2**20 paths, 21 containers
    doc = inner = _Counted()
    for _ in range(20):
        nxt = _Counted()
        inner.extend([nxt, nxt])
        inner = nxt
    _Counted.reads = 0
    assert _shallow(doc)
    assert _Counted.reads <= 21
    check_tree(doc)
