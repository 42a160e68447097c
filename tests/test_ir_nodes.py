"""IR nodes (grammarc.ir.nodes): slotted, value-equal, hashable, and picklable by their fields; built by
`grammarc.allocation.slot_init`, as their dataclass ``__init__`` would build them."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import pytest
from hypothesis import given, settings, strategies as st

from grammarc.errors import Span
from grammarc.ir import (
    EXPR_TYPES, Alt, AnyToken, Except, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq, Substrings, walk,
)
from grammarc.frontends.jsonschema.documents import Node
from strategies import grammars


@given(grammars(max_rules=5))
@settings(max_examples=150, deadline=None)
def test_grammars_survive_pickling_and_copying(grammar) -> None:
    """Equal after a round trip, node for node, with equal hashes (computed again on the
    copies: only fields travel, see `_Node.__reduce__`)."""
    before = {name: hash(expr) for name, expr in grammar.rules}  # remembered now
    for other in (pickle.loads(pickle.dumps(grammar)), copy.deepcopy(grammar)):
        assert other == grammar
        assert {name: hash(expr) for name, expr in other.rules} == before
        for (_, mine), (_, theirs) in zip(grammar.rules, other.rules):
            assert list(walk(mine)) == list(walk(theirs))


def test_every_node_is_slotted_and_keeps_its_span_through_pickling() -> None:
    span = Span(3, 4, 3, 9)
    nodes = [Literal("a", span), Regex("a+", "early", span), Substrings("ab", span), Ref("x", span),
             Seq((Literal("a"), Ref("x")), span), Alt((Literal("a"), Literal("b")), span),
             Repeat(Literal("a"), 1, 3, span), AnyToken(span), Except(Literal("ab"), 2, span),
             JsonStringExcept(("a", "b"), span)]
    assert {type(node) for node in nodes} == set(EXPR_TYPES)
    for node in nodes:
        assert not hasattr(node, "__dict__"), type(node).__name__
        hash(node)
        back = pickle.loads(pickle.dumps(node))
        assert back == node and back.span == span and type(back) is type(node)


def test_references_counts_each_use_and_sees_through_subclasses() -> None:
    from dataclasses import dataclass

    from grammarc.ir import references

    @dataclass(frozen=True, slots=True)
    class Named(Ref):  # a front end's own node kinds are subclasses the walk must still enter
        pass

    @dataclass(frozen=True, slots=True)
    class Group(Seq):
        pass

    expr = Alt((Seq((Ref("a"), Repeat(Ref("b"), 0, None))), Except(Ref("c")), Group((Named("d"), Ref("a"))),
                Literal("x"), AnyToken()))
    assert sorted(references(expr)) == ["a", "a", "b", "c", "d"]


def _dataclass_twin(cls: type) -> type:
    """`cls`'s fields in a frozen, slotted dataclass of its own: the ``__init__`` that
    `grammarc.allocation.slot_init` stands in for."""
    specs = [(f.name, f.type, dataclasses.field(default=f.default, compare=f.compare, repr=f.repr))
             for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True)


_NODES_AND_SUBSCHEMAS = (*EXPR_TYPES, Node)


@pytest.mark.parametrize("cls", _NODES_AND_SUBSCHEMAS, ids=lambda cls: cls.__name__)
def test_slot_init_has_the_dataclass_signature(cls: type) -> None:
    assert inspect.signature(cls) == inspect.signature(_dataclass_twin(cls))


@given(st.data())
@settings(max_examples=200, deadline=None)
def test_slot_init_binds_arguments_as_the_dataclass_init(data) -> None:
    """The same fields, from positional and keyword arguments alike (a node's fields are
    whatever the caller passes: the classes check nothing)."""
    cls = data.draw(st.sampled_from(_NODES_AND_SUBSCHEMAS))
    twin = _dataclass_twin(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
    passed = set(required) | set(data.draw(st.lists(st.sampled_from(names))))
    values = {name: data.draw(st.one_of(st.none(), st.integers(), st.text(max_size=3))) for name in names if name in passed}
    leading = next((i for i, name in enumerate(names) if name not in values), len(names))
    cut = data.draw(st.integers(0, leading))  # the first `cut` fields passed by position, the rest by name
    args = [values[name] for name in names[:cut]]
    kwargs = {name: values[name] for name in names[cut:] if name in values}
    mine, theirs = cls(*args, **kwargs), twin(*args, **kwargs)
    assert [getattr(mine, name) for name in names] == [getattr(theirs, name) for name in names]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(mine, names[0], 1)


def _hash_mirror(value):
    """`value` as plain tuples: a node as the tuple of its hashed fields (what its dataclass
    would hash), a tuple item by item. Python's own hash of the mirror is the oracle of
    `_canon.tree_hash` (composite nodes' and grammars' hashes)."""
    if isinstance(value, tuple):
        return tuple(_hash_mirror(item) for item in value)
    if type(value) in EXPR_TYPES:
        return tuple(_hash_mirror(getattr(value, f.name)) for f in dataclasses.fields(value)
                     if (f.compare if f.hash is None else f.hash))
    return value


@given(grammars(max_rules=5))
@settings(max_examples=200, deadline=None)
def test_hashes_are_the_dataclass_hashes_and_kept_on_the_way(grammar) -> None:
    """The compiled core's hash of a node (and of a grammar) is ``hash(tuple(fields))``, as
    the generated one was; the first hash of a grammar leaves every composite node below
    it holding its own, which equals what a fresh copy of the node computes alone."""
    fresh = pickle.loads(pickle.dumps(grammar))  # nothing hashed yet
    assert hash(fresh) == hash((_hash_mirror(grammar.start), _hash_mirror(grammar.rules)))
    composites = [node for _, expr in fresh.rules for node in walk(expr) if isinstance(node, (Seq, Alt, Repeat))]
    for node in composites:
        assert isinstance(object.__getattribute__(node, "_hash"), int)  # kept by the grammar's hash
    for node in composites:
        alone = pickle.loads(pickle.dumps(node))
        assert hash(alone) == hash(node) == hash(_hash_mirror(node))


def test_tree_hash_sees_subclasses_as_their_base_and_refuses_bad_input() -> None:
    from grammarc.ir import _canon, nodes

    class Mine(Seq):  # not a dataclass of its own: it inherits the hash and the fields
        __slots__ = ()

    items = (Literal("a"), Repeat(Ref("x"), 0, 2))
    assert hash(Mine(items)) == hash(Seq(items)) == hash(_hash_mirror(Seq(items)))
    deep = Literal("a")
    for _ in range(5000):
        deep = Seq((deep,))
    with pytest.raises(RecursionError):
        hash(deep)
    classes, fields, remember, slot = nodes._HASHING
    with pytest.raises(ValueError):
        _canon.tree_hash(deep, classes, fields, remember[:-1], slot)
    with pytest.raises(TypeError):
        _canon.tree_hash(deep, classes, fields, remember, Seq.__dict__["items"])  # a slot of one class only
    with pytest.raises(TypeError):
        _canon.tree_hash(deep, classes, fields, remember, object())
