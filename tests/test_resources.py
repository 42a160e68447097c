"""Shared, bounded, freed (issue 10): one-off grammars are freed with their indexes, parser
cores, planners and constraints; memos stay under their budgets and give the masks of an
unbounded run; engines shared by threads give the single-threaded masks."""

from __future__ import annotations

import dataclasses
import gc
import weakref

import numpy as np
import pydantic
import pytest

import grammarc
from grammarc import Grammar, Vocabulary
from grammarc.engine import Engine
from grammarc.integrations import steering
from grammarc.lowering.compiler import _compile_cached

TOKENS = [b"a", b"b", b"ab", b"x", b"0", b"1", b"12", b"{", b"}", b'"', b'"a', b":", b",", b" ", b""]
VOCAB = Vocabulary.from_bytes(TOKENS, eos_token_ids=[len(TOKENS) - 1])


def _one_off(i: int) -> Grammar:
    return Grammar.from_ebnf(f"start ::= 'x' ('a' | 'b')* '{i:b}' ;")


def _dead_after_collect(refs: list[weakref.ref]) -> int:
    gc.collect()
    return sum(r() is None for r in refs)


def test_one_off_grammars_free_their_indexes_cores_and_planners():
    n = 150
    refs: list[weakref.ref] = []
    for i in range(n):
        engine = Engine(_one_off(i), VOCAB)
        engine.advance_bytes("xab")
        engine.packed_mask()
        planner = steering.planner_for(engine)
        assert steering.shortest_completion(engine) == format(i, "b").encode()
        refs += [weakref.ref(engine.index), weakref.ref(engine.core), weakref.ref(planner), weakref.ref(engine.compiled)]
        del engine, planner
    cached = _compile_cached.cache_info().maxsize  # compiled grammars the compile cache keeps
    assert len(refs) - _dead_after_collect(refs) <= 4 * cached
    _compile_cached.cache_clear()
    assert _dead_after_collect(refs) == len(refs)


def test_constrained_classes_are_freed_with_their_constraints():
    refs = []
    for i in range(20):
        model = pydantic.create_model(f"Model{i}", value=(int, ...))
        grammarc.constrain(model)
        constraint = grammarc.constraint_of(model)
        assert grammarc.constraint_of(model) is constraint
        refs += [weakref.ref(model), weakref.ref(constraint)]
        point = dataclasses.make_dataclass(f"Point{i}", [("x", int)])
        assert grammarc.constraint_of(point) is grammarc.constraint_of(point)
        refs.append(weakref.ref(point))
        del model, constraint, point
    _compile_cached.cache_clear()
    assert _dead_after_collect(refs) == len(refs)


def test_a_registered_constraint_is_not_inherited():
    class Base(pydantic.BaseModel):
        a: int

    class Child(Base):
        b: int

    grammarc.constrain(Base, whitespace="compact")
    assert grammarc.constraint_of(Base).options == (("whitespace", "compact"),)
    assert grammarc.constraint_of(Child).options == ()
    assert "b" in grammarc.constraint_of(Child).ebnf and list(Base.model_fields) == ["a"]


def test_a_constraint_dropped_by_everyone_is_rebuilt_around_the_same_grammar():
    class Point(pydantic.BaseModel):
        x: int

    grammarc.constrain(Point, whitespace="compact")
    first = grammarc.constraint_of(Point)
    grammar, ref = first.grammar, weakref.ref(first)
    del first
    gc.collect()
    assert ref() is None
    again = grammarc.constraint_of(Point)
    assert again.grammar is grammar and again.options == (("whitespace", "compact"),) and again.target is Point


def test_per_vocabulary_tables_are_bounded():
    from grammarc.tokens import index as index_module

    grammar = Grammar.from_ebnf("start ::= ('a' | 'b')+ ;")
    masks = set()
    for i in range(3 * index_module.VOCABULARIES_KEPT):
        vocab = Vocabulary.from_bytes([b"a", b"b", b"ab", b"c" * (i + 1), b""], eos_token_ids=[4])
        engine = Engine(grammar, vocab)
        masks.add(tuple(engine.allowed_token_ids().tolist()))
        assert len(index_module._matrices) <= index_module.VOCABULARIES_KEPT
        assert len(index_module._first_bytes) <= index_module.VOCABULARIES_KEPT
    assert masks == {(0, 1, 2)}
