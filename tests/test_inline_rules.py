"""`grammarc.ir.nodes.inline_rules` and `substituted` (``_walk``, C) against their Python
oracles (tests/check_reference.py's, the JSON Schema front end's walks before they moved): the
same rules in the same order, equal bodies, spans kept, and the same bodies kept as the same
objects.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import check_reference
from grammarc import Grammar
from grammarc.ir import Alt, AnyToken, Except, Expr, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq, Substrings
from grammarc.ir import _walk
from grammarc.errors import Span
from grammarc.ir.nodes import WALK_CLASSES, inline_rules, references, substituted, walk
from strategies import grammars


def _same_as_the_oracle(rules: dict[str, Expr], inline: set[str], max_nesting: int) -> dict[str, Expr]:
    got = inline_rules(rules, set(inline), max_nesting)
    want = check_reference.inline_rules(rules, set(inline), max_nesting)
    assert list(got) == list(want)
    assert got == want
    for name in got:  # an unchanged body is the same object in both, a changed one in neither
        assert (got[name] is rules.get(name)) == (want[name] is rules.get(name)), name
    return got


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_inlining_in_the_core_is_the_python_walk(data):
    grammar: Grammar = data.draw(grammars("ab", max_rules=6, any_token=True, token_level=True), label="grammar")
    rules = dict(grammar.rules)
    names = sorted(rules)
    inline = data.draw(st.sets(st.sampled_from(names)), label="inline")
    max_nesting = data.draw(st.integers(0, 4), label="max_nesting")
    _same_as_the_oracle(rules, inline, max_nesting)
    # nested sequences and alternations (flattened), a lone item, repeats of walked nodes
    wrapped = {name: Seq((Alt((body, Seq((Ref(name), body)))), Repeat(Seq((body,)), 1, 3), Seq((body,))))
               for name, body in rules.items()}
    _same_as_the_oracle(wrapped, inline, max_nesting)


@dataclass(frozen=True)
class _NamedSeq(Seq):
    """A node of a class of its own (not entered: its references are cut)."""


@dataclass(frozen=True)
class _Call(Ref):
    """A reference of a class of its own."""


_EDGES = {
    "start": Seq((Ref("a"), Except(Ref("b")), Repeat(Ref("c"), 0, 1), _NamedSeq((Ref("d"), _Call("e"))), Ref("f"))),
    "a": Seq((Literal("x"), Ref("a2"))),
    "a2": Alt((Seq((Ref("a3"),)), Regex("[0-9]"), Seq(()))),
    "a3": Seq((Ref("a4"), Substrings("s"), JsonStringExcept(("k",)), AnyToken())),
    "a4": Alt((Literal("p"), Alt((Literal("q"), Ref("a5"))))),
    "a5": Repeat(Seq((Literal("r"), Ref("a")))),  # a cycle back to `a`: cut at the nesting limit
    "b": Literal("b"),
    "c": Alt((Literal("c"), Literal("cc"))),
    "d": Literal("d"),
    "e": Literal("e"),
    "f": Seq((Literal("f"),)),
    "kept": Alt((Seq((Literal("u"), Literal("v"))), Repeat(Literal("w")))),
}


@pytest.mark.parametrize("max_nesting", [0, 1, 2, 3, 6, 20])
def test_inlining_in_the_core_is_the_python_walk_on_edges(max_nesting):
    inline = set(_EDGES) - {"start", "kept"}
    got = _same_as_the_oracle(_EDGES, inline, max_nesting)
    assert got["kept"] is _EDGES["kept"]
    assert "b" in got and "d" in got and "e" in got  # inside except! and a class of its own: rules of their own


def test_inlining_flattens_and_cuts_exactly():
    """Written out: what the walk makes of a chain of three helpers, cut after two levels."""
    rules = {
        "start": Seq((Literal("<"), Ref("h1"), Literal(">"))),
        "h1": Seq((Literal("1"), Ref("h2"))),
        "h2": Alt((Literal("2"), Ref("h3"))),
        "h3": Seq((Literal("3"), Repeat(Ref("h1"), 0, 1))),
    }
    got = inline_rules(rules, {"h1", "h2", "h3"}, 2)
    assert got == {
        "start": Seq((Literal("<"), Literal("1"), Alt((Literal("2"), Ref("h3"))), Literal(">"))),
        "h3": Seq((Literal("3"), Repeat(Seq((Literal("1"), Alt((Literal("2"), Ref("h3"))))), 0, 1))),
    }
    assert list(got) == ["start", "h3"]


def test_inlining_refuses_what_is_no_node_precisely():
    with pytest.raises(TypeError, match="items are not a tuple"):
        inline_rules({"start": Seq((Ref("a"), Seq("xy"))), "a": Literal("a")}, {"a"}, 2)
    with pytest.raises(ValueError, match="ten classes"):
        _walk.inline_rules({"start": Ref("a")}, {"a"}, 2, (Seq,), references)
    with pytest.raises(KeyError, match="'missing'"):
        inline_rules({"start": Ref("missing")}, {"missing"}, 2)
    assert len(WALK_CLASSES) == 10


# -- substitution (sharing.py's renames and hoisted terminals) ---------------------------------

def _same_substitution_as_the_oracle(expr: Expr, refs: dict, terminals: dict) -> Expr:
    got = substituted(expr, refs, terminals)
    want = check_reference.substituted(expr, refs, terminals)
    assert got == want
    assert (got is expr) == (want is expr)
    assert _spans(got) == _spans(want)
    return got


def _spans(expr: Expr) -> list:
    return [getattr(node, "span", None) for node in walk(expr)]


_SPAN = Span(1, 2, 1, 5)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_substitution_in_the_core_is_the_python_walk(data):
    grammar: Grammar = data.draw(grammars("ab", max_rules=5, any_token=True, token_level=True), label="grammar")
    names = sorted({name for _, body in grammar.rules for name in references(body)} | {"start", "zz"})
    renamed = data.draw(st.sets(st.sampled_from(names)), label="renamed")
    refs = {name: Ref(name + "_x") for name in renamed}
    terminals = [node for _, body in grammar.rules for node in walk(body) if type(node) in (Regex, JsonStringExcept)]
    hoisted = data.draw(st.sets(st.sampled_from(terminals)) if terminals else st.just(set()), label="hoisted")
    hoist = {check_reference._terminal_key(t): Ref(f"t{i}") for i, t in enumerate(hoisted)}
    for _, body in grammar.rules:
        for expr in (body, Seq((Literal("a", _SPAN), body, Repeat(body, 1, 2, _SPAN)), _SPAN), Alt((Regex("x"), body))):
            _same_substitution_as_the_oracle(expr, refs, hoist)
            _same_substitution_as_the_oracle(expr, refs, {})
            _same_substitution_as_the_oracle(expr, {}, hoist)


def test_substitution_in_the_core_is_the_python_walk_on_edges():
    expr = Seq((Literal("a"), Except(Ref("b"), 2, _SPAN), _NamedSeq((Ref("b"),)), Regex("r", "early"),
                JsonStringExcept(("k",)), Repeat(Ref("b"), 0, 3, _SPAN), Except(Literal("b")), Ref("c"), AnyToken()),
               _SPAN)
    refs = {"b": Ref("B"), "c": Ref("C")}
    terminals = {(Regex, "r", "early"): Ref("R"), (JsonStringExcept, ("k",)): Ref("K"), (Regex, "r", "match"): Ref("no")}
    got = _same_substitution_as_the_oracle(expr, refs, terminals)
    assert got == Seq((Literal("a"), Except(Ref("B"), 2), _NamedSeq((Ref("b"),)), Ref("R"), Ref("K"),
                       Repeat(Ref("B"), 0, 3), Except(Literal("b")), Ref("C"), AnyToken()))
    assert got.span is _SPAN and got.items[1].span is _SPAN and got.items[5].span is _SPAN
    assert got.items[0] is expr.items[0] and got.items[2] is expr.items[2]
    assert _same_substitution_as_the_oracle(expr, {"zz": Ref("y")}, {(Regex, "r", "match"): Ref("no")}) is expr
    with pytest.raises(TypeError, match="items are not a tuple"):
        substituted(Seq((Ref("b"), Seq("xy"))), refs, {})
