"""The JSON Schema front end's shortcuts agree with the general code they skip.

The builder takes shortcuts for what most subschemas are: a conjunction of one schema that
brings no other (`Merging._collect`), a type named by one string (`_merge_one`), a member of a
keyword's map in one step (`Node.child_of`), one kept `Layout` per set of options, a `Merged`
whose defaults are class attributes. Each is checked here against the general path on random
inputs: the same nodes, pointers, layouts and merged constraints.
"""

from __future__ import annotations

import dataclasses

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

from grammarc.frontends.jsonschema.builder import Builder  # noqa: E402
from grammarc.frontends.jsonschema.documents import Node, escape_ptr  # noqa: E402
from grammarc.frontends.jsonschema.keywords import TYPES  # noqa: E402
from grammarc.frontends.jsonschema.layout import Layout, _layout  # noqa: E402
from grammarc.frontends.jsonschema.merge import Merged  # noqa: E402
from grammarc.frontends.jsonschema.numbers import _replace  # noqa: E402
from grammarc.frontends.jsonschema.values import type_set  # noqa: E402

KEYS = st.text(alphabet="ab~/_$0", max_size=4)
TYPE_NAMES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])
LEAF = st.fixed_dictionaries({}, optional={
    "type": st.one_of(TYPE_NAMES, st.lists(TYPE_NAMES, min_size=1, max_size=3)),
    "minimum": st.integers(-3, 3), "maxLength": st.integers(0, 3), "enum": st.lists(st.integers(0, 2), min_size=1, max_size=2),
    "title": st.just("A title"), "description": st.just("d"), "required": st.lists(KEYS, max_size=2),
})
SCHEMAS = st.recursive(LEAF, lambda inner: st.one_of(
    st.fixed_dictionaries({"properties": st.dictionaries(KEYS, inner, max_size=3)}, optional={"type": st.just("object")}),
    st.fixed_dictionaries({"allOf": st.lists(inner, min_size=1, max_size=2)}),
    st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=2)}),
    st.fixed_dictionaries({"items": inner}),
    st.fixed_dictionaries({"not": inner}),
    st.fixed_dictionaries({"$ref": st.just("#/$defs/d")}),
), max_leaves=6)


def _builder(schema) -> Builder:
    return Builder({"$defs": {"d": {"type": "integer"}}, **schema}, lenient=True,
                   layout=Layout.make("bounded", None, None), close_objects=False, draft=None, registry={})


@settings(max_examples=300, deadline=None)
@given(SCHEMAS)
def test_collect_of_one_schema_is_the_general_walk(schema) -> None:
    """A conjunction of one node gives what the general walk gives it beside `true` (which
    adds nothing): the same nodes in the same order, and the same scope after."""
    builder = _builder(schema)
    node = builder.index.root
    fast = builder._collect((node,))
    scope = dict(builder.scope)
    general = builder._collect((node, Node(True, "#/x", node.base)))
    assert fast == general
    assert scope == builder.scope


@settings(max_examples=200, deadline=None)
@given(KEYS, st.one_of(KEYS, st.integers(0, 20)), st.sampled_from(["properties", "allOf", "patternProperties", "$defs"]))
def test_child_of_is_two_steps(ptr_tail, key, keyword) -> None:
    node = Node({}, "#/" + escape_ptr(ptr_tail), "https://example.invalid/s.json")
    assert node.child_of(keyword, key, True) == node.child(keyword, None).child(key, True)


@pytest.mark.parametrize("whitespace", ["bounded", "compact", "unbounded"])
@pytest.mark.parametrize("indent", [None, 0, 1, 2, True])
@pytest.mark.parametrize("separators", [None, (",", ":"), (", ", ": "), [",", ": "]])
def test_kept_layouts_are_the_layouts_made(whitespace, indent, separators) -> None:
    made = Layout.make(whitespace, indent, separators)
    assert made == _layout(whitespace, indent, separators)
    assert made.indent is indent  # typed: True is not kept as 1
    assert made._pieces == _layout(whitespace, indent, separators)._pieces


@settings(max_examples=200, deadline=None)
@given(st.one_of(TYPE_NAMES, st.lists(TYPE_NAMES, min_size=1, max_size=3)), st.lists(LEAF, min_size=1, max_size=3))
def test_merged_types_and_fields_match_a_fresh_merge(named, schemas) -> None:
    """`_merge_one`'s one-name shortcut gives `type_set`'s types; two merges never share a
    field's value through the class defaults."""
    builder = _builder({})
    first, second = Merged(types=set(TYPES)), Merged(types=set(TYPES))
    builder._merge_one(first, Node({"type": named}, "#", ""))
    assert first.types == set(TYPES) & type_set(named, "#")
    for schema in schemas:
        builder._merge_one(second, Node(schema, "#", ""))
    blank = Merged(types=set(TYPES))
    for field in dataclasses.fields(Merged):
        if field.name != "types":
            assert getattr(blank, field.name) == field.default
            assert getattr(first, field.name) == field.default


@settings(max_examples=200, deadline=None)
@given(st.lists(LEAF, min_size=1, max_size=3))
def test_replace_is_a_copy_with_changes(schemas) -> None:
    builder = _builder({})
    m = Merged(types=set(TYPES))
    for schema in schemas:
        builder._merge_one(m, Node(schema, "#", ""))
    before = {f.name: getattr(m, f.name) for f in dataclasses.fields(Merged)}
    out = _replace(m, multiple_of=None, lo=None)
    assert {f.name: getattr(m, f.name) for f in dataclasses.fields(Merged)} == before
    assert {f.name: getattr(out, f.name) for f in dataclasses.fields(Merged)} == {**before, "multiple_of": None, "lo": None}
