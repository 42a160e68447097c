"""The lowering's shortcuts against the general computations they stand for.

`_Lowering.is_regular` (leaves and references answered without its memo) against its
definition; `_Lowering._item_facts` gives the facts `_chunks` cuts a regular run by (`_merged_size`,
`_word`) without those calls for literals, references and bounded repetitions of a
reference (JSON's ``ws?``), from what a rule's first reference found; `symbols` dispatches
on a node's exact class, a subclass of an IR class as its class; `build_tables` reads the
productions a `Bnf` keeps flattened from normalisation. Each must give what the general
route gives.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings

import grammarc
from grammarc import Grammar, stdlib_grammars
from grammarc.ir import nodes
from grammarc.ir.check import check_grammar
from grammarc.lowering import compiler
from grammarc.lowering.lr import build_tables
from strategies import grammars

ROOT = Path(__file__).resolve().parents[1]
MASKBENCH = ROOT.parent / "shared" / "data" / "maskbench-dev"


def _lowered(grammar: Grammar) -> compiler._Lowering:
    lowering = compiler._Lowering(grammar, check_grammar(grammar), grammarc.automata.DEFAULT_MAX_STATES,
                                  compiler.DEFAULT_MERGE_MAX_STATES)
    lowering.lower_all()
    return lowering


def _run_items(grammar: Grammar):
    for _, expr in grammar.rules:
        for node in nodes.walk(expr):
            if isinstance(node, nodes.Seq):
                yield from node.items


def _regular(expr, regular_rules: set[str]) -> bool:
    """`_Lowering.is_regular` written out: no ``any!``, no ``except!`` with a token limit, no
    reference to a rule that is not regular, anywhere in `expr`."""
    if isinstance(expr, nodes.AnyToken) or (isinstance(expr, nodes.Except) and expr.limit is not None):
        return False
    if isinstance(expr, nodes.Ref):
        return expr.name in regular_rules
    return all(_regular(child, regular_rules) for child in nodes.children(expr))


def _check_facts(grammar: Grammar) -> None:
    lowering = _lowered(grammar)
    for _, expr in grammar.rules:
        for node in nodes.walk(expr):
            assert lowering.is_regular(node) == _regular(node, lowering.regular_rules), node
    for item in _run_items(grammar):
        if lowering.is_regular(item):
            assert lowering._item_facts(item) == (lowering._merged_size(item), lowering._word(item)), item


def _schemas(limit: int):
    if not MASKBENCH.is_dir():
        pytest.skip(f"MaskBench schemas not found at {MASKBENCH}")
    for path in sorted(MASKBENCH.glob("*.json"))[:limit]:
        yield path.name, json.loads(path.read_text())["schema"]


def test_item_facts_are_merged_size_and_word_on_stdlib_and_schemas():
    for name in stdlib_grammars.names():
        _check_facts(grammarc.stdlib(name))
    checked = 0
    for _, schema in _schemas(60):
        try:
            grammar = Grammar.from_json_schema(schema)
        except grammarc.GrammarcError:
            continue
        _check_facts(grammar)
        checked += 1
    assert checked > 20


@settings(max_examples=150, deadline=None)
@given(grammars(max_rules=5))
def test_item_facts_are_merged_size_and_word(grammar):
    try:
        _check_facts(grammar)
    except grammarc.GrammarcError:
        pass


class _Lit(nodes.Literal):
    __slots__ = ()


class _Seq(nodes.Seq):
    __slots__ = ()


class _Alt(nodes.Alt):
    __slots__ = ()


class _Ref(nodes.Ref):
    __slots__ = ()


class _Rep(nodes.Repeat):
    __slots__ = ()


_SUB = {nodes.Literal: _Lit, nodes.Seq: _Seq, nodes.Alt: _Alt, nodes.Ref: _Ref, nodes.Repeat: _Rep}


def _subclassed(expr):
    """`expr` with every node of a class in `_SUB` made of its subclass."""
    if isinstance(expr, (nodes.Seq, nodes.Alt)):
        return _SUB[type(expr)](tuple(_subclassed(item) for item in expr.items))
    if isinstance(expr, nodes.Repeat):
        return _Rep(_subclassed(expr.item), expr.min, expr.max)
    if type(expr) in (nodes.Literal, nodes.Ref):
        return _SUB[type(expr)](expr.text if isinstance(expr, nodes.Literal) else expr.name)
    return expr


def _compiled_form(compiled) -> tuple:
    return (tuple((t.dfa.key, t.any_token, t.token_limit) for t in compiled.terminals), compiled.bnf.productions,
            compiled.tables.action, compiled.tables.goto, compiled.accepts_empty)


@settings(max_examples=100, deadline=None)
@given(grammars(max_rules=4))
def test_subclassed_nodes_lower_as_their_classes(grammar):
    # a lowering of its own each (not the compile cache: the grammars are equal)
    twin = Grammar(tuple((name, _subclassed(expr)) for name, expr in grammar.rules), start=grammar.start)
    try:
        plain = compiler._compile_new(grammar, grammarc.automata.DEFAULT_MAX_STATES, compiler.DEFAULT_MERGE_MAX_STATES)
    except grammarc.GrammarcError as error:
        with pytest.raises(type(error)):
            compiler._compile_new(twin, grammarc.automata.DEFAULT_MAX_STATES, compiler.DEFAULT_MERGE_MAX_STATES)
        return
    sub = compiler._compile_new(twin, grammarc.automata.DEFAULT_MAX_STATES, compiler.DEFAULT_MERGE_MAX_STATES)
    assert _compiled_form(sub) == _compiled_form(plain)


def test_tables_from_the_kept_flat_productions_equal_tables_from_the_productions():
    sources = [grammarc.stdlib(name) for name in stdlib_grammars.names()]
    for _, schema in _schemas(10):
        try:
            sources.append(Grammar.from_json_schema(schema))
        except grammarc.GrammarcError:
            pass
    for grammar in sources:  # compiled afresh: one from a cache (the disk's) keeps nothing
        bnf = compiler._compile_new(grammar, grammarc.automata.DEFAULT_MAX_STATES,
                                    compiler.DEFAULT_MERGE_MAX_STATES).bnf
        assert "_flat" in bnf.__dict__
        copy = dataclasses.replace(bnf)  # the same productions, nothing kept
        assert "_flat" not in copy.__dict__
        assert build_tables(bnf) == build_tables(copy)
