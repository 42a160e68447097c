"""`cycles.check_cycles` skips its walk for a document read without references
(`Index.has_refs`): on random schemas of in-place and consuming keywords, with and without
references of each kind, shared subschemas included, the result (None, or the exact error)
is the full walk's, and `has_refs` is set exactly when a schema as read keeps a reference."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from grammarc.errors import GrammarcError
from grammarc.frontends.jsonschema.cycles import check_cycles
from grammarc.frontends.jsonschema.documents import Index
from grammarc.frontends.jsonschema.drafts import dialect_named

_REF_WORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_TARGETS = ("#", "#/$defs/a", "#/$defs/b", "#/properties/p", "#/allOf/0", "#/$defs/missing")
_DRAFTS = ("7", "2019-09", "2020-12")


def _schemas(with_refs: bool):
    leaf = st.sampled_from([{}, {"type": "integer"}, True, False, {"minimum": 1}])
    if with_refs:
        ref = st.builds(lambda word, target: {word: target}, st.sampled_from(_REF_WORDS), st.sampled_from(_TARGETS))
        leaf = st.one_of(leaf, ref)

    def extend(children):
        one = st.sampled_from(("not", "if", "then", "else", "items", "additionalProperties", "contains"))
        many = st.sampled_from(("allOf", "anyOf", "oneOf", "prefixItems"))
        maps = st.sampled_from(("properties", "dependentSchemas", "patternProperties"))
        return st.one_of(
            st.builds(lambda k, c: {k: c}, one, children),
            st.builds(lambda k, cs: {k: cs}, many, st.lists(children, min_size=1, max_size=3)),
            st.builds(lambda k, cs: {k: {f"p{i}" if i else "p": c for i, c in enumerate(cs)}}, maps,
                      st.lists(children, min_size=1, max_size=3)),
            st.builds(lambda a, b: {**a, **b} if isinstance(a, dict) and isinstance(b, dict) else a, children, children),
        )

    return st.recursive(leaf, extend, max_leaves=12)


def _document(root, defs_a, defs_b, share: bool):
    doc = dict(root) if isinstance(root, dict) else {"allOf": [root]}
    doc["$defs"] = {"a": defs_a, "b": defs_a if share else defs_b}  # `share`: one object held twice
    return doc


def _outcome(index: Index, full: bool) -> str:
    if full:
        index.has_refs = True  # the walk as if the document had references (the reference result)
    try:
        check_cycles(index, index.root)
    except GrammarcError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def _has_reference(schema) -> bool:
    """Test oracle: whether some schema object under `schema` holds a reference keyword."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any(isinstance(node.get(w), str) for w in _REF_WORDS):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


@given(_schemas(True), _schemas(True), _schemas(False), st.booleans(), st.sampled_from(_DRAFTS))
@settings(max_examples=400, deadline=None)
def test_skipping_the_walk_changes_no_result(root, defs_a, defs_b, share, draft) -> None:
    doc = _document(root, defs_a, defs_b, share)
    try:
        fast = Index(doc, dialect_named(draft), {})
        full = Index(doc, dialect_named(draft), {})
    except GrammarcError:
        return
    assert _outcome(fast, full=False) == _outcome(full, full=True)


@given(_schemas(False), _schemas(False), st.booleans())
@settings(max_examples=200, deadline=None)
def test_no_reference_means_no_cycle(root, defs_a, share) -> None:
    """Without references the walk itself finds nothing (what the skip relies on)."""
    doc = _document(root, defs_a, defs_a, share)
    index = Index(doc, dialect_named("2020-12"), {})
    assert not index.has_refs
    assert _outcome(index, full=True) == "ok"


@given(_schemas(True))
@settings(max_examples=300, deadline=None)
def test_has_refs_says_whether_a_reference_was_read(root) -> None:
    """In 2020-12, which defines every keyword the strategy writes (and ignores $recursiveRef)."""
    draft = "2020-12"
    doc = root if isinstance(root, dict) else {"allOf": [root]}
    try:
        index = Index(doc, dialect_named(draft), {})
    except GrammarcError:
        return
    dialect = dialect_named(draft)
    kept = tuple(w for w in _REF_WORDS if w not in dialect.ignored)
    expected = _has_reference(_only(doc, kept))
    assert index.has_refs == expected


def _only(schema, kept: tuple[str, ...]):
    """`schema` less the reference keywords not in `kept` (test helper)."""
    if isinstance(schema, dict):
        return {k: _only(v, kept) for k, v in schema.items() if k in kept or k not in _REF_WORDS}
    if isinstance(schema, list):
        return [_only(v, kept) for v in schema]
    return schema


@given(_schemas(False), st.sampled_from(("allOf", "anyOf", "oneOf")), st.sampled_from(("$ref", "$dynamicRef")),
       st.integers(0, 3))
@settings(max_examples=200, deadline=None)
def test_a_document_that_refers_to_itself_in_place_is_refused(other, word, ref, where) -> None:
    """The oracle needs no walk: the root's own combinator refers back to the root (the other
    branches, before it, hold no reference that could fail first)."""
    branches = [other] * where + [{ref: "#"}]
    index = Index({word: branches}, dialect_named("2020-12"), {})
    try:
        check_cycles(index, index.root)
    except GrammarcError as exc:
        assert "refers to itself without reading any part of the value" in str(exc)
    else:
        raise AssertionError("an in-place cycle through the root was not refused")
