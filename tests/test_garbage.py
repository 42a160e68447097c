"""Compiling and masking leave no reference cycles behind.

The front end and the lowering run with the cyclic collector paused (grammarc.allocation)
and count on reference counting to free their working state on return; a mask runs once
per token. A cycle (a recursive closure, a memo that holds a bound method of its owner)
keeps everything it reaches alive until the next collection, which then traverses it:
tens of milliseconds after a large schema, paid by whichever request comes next.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import pytest

import grammarc
from grammarc.lowering.compiler import _compile_cached

SCHEMAS = {
    "object": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
               "required": ["a"], "additionalProperties": {"type": "boolean"}, "maxProperties": 3},
    "tuple": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": {"type": "null"},
              "maxItems": 4},
    "long string": {"type": "string", "maxLength": 5000},
    "pattern": {"type": "string", "pattern": "^[a-z][^<>]{0,40}$", "minLength": 2},
    "keys": {"type": "object", "properties": {"name": {"const": 1}}, "patternProperties": {"^x-": {}},
             "additionalProperties": False},
    "union": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "array", "items": {"$ref": "#"}}]},
}


@pytest.fixture
def saved_garbage(monkeypatch):
    """gc.garbage filled with every unreachable object a collection finds (DEBUG_SAVEALL),
    the disk cache off and the in-process one empty: the grammar is lowered here."""
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")
    _compile_cached.cache_clear()  # before the collection below: what it held goes now
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_to_compiled_grammar_leaves_no_cycles(name, saved_garbage):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grammar = grammarc.Grammar.from_json_schema(SCHEMAS[name], whitespace="compact")
        compiled = grammar.compile()
    assert compiled.summary()["terminals"] > 0
    del grammar, compiled
    gc.collect()
    kinds = sorted({type(o).__qualname__ for o in saved_garbage})
    assert kinds == []


def test_masking_a_new_grammar_leaves_no_cycles(saved_garbage):
    """Every mask on a grammar the engine has not seen builds index states and walks trees
    (engine.walk_summary: tokens such as ``1,`` and ``]]`` cross terminals of a recursive
    grammar): none of it may outlive the engine by a cycle."""
    tokens = [b"[", b"]", b",", b"1", b"12", b"[[", b"1,", b"],", b"]]", b"2]", None]
    vocab = grammarc.Vocabulary.from_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    grammar = grammarc.Grammar.from_json_schema(
        {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}}]}, whitespace="compact")
    walks = []
    engine = grammarc.Engine(grammar.compile(), vocab)
    words = np.zeros(1, dtype=np.int32)
    for token in (5, 6, 4, 7, 0, 3, 8):  # [[1,12],[1]]
        engine.fill_bitmask(words)
        walks.append(len(engine.index.walks))
        engine.advance(token)
    engine.fill_bitmask(words)
    assert words[0] >> 10 & 1  # end of text allowed
    assert walks[-1] > 0  # tree walks did run
    del engine, grammar
    gc.collect()
    assert sorted({type(o).__qualname__ for o in saved_garbage}) == []
