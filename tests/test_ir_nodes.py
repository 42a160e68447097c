"""IR nodes (grammarc.ir.nodes): slotted, value-equal, hashable, and picklable by their fields."""

from __future__ import annotations

import copy
import pickle

from hypothesis import given, settings

from grammarc.errors import Span
from grammarc.ir import (
    EXPR_TYPES, Alt, AnyToken, Except, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq, Substrings, walk,
)
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
