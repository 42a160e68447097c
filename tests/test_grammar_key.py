"""The compiled-grammar cache's key (grammarc.lowering.compiled_cache.grammar_key) hashes the
grammar's canonical bytes (`grammarc.ir._canon.encode`, in C). Checked against a Python
version of the code that the C file documents (the oracle below), and for what a key
needs: equal grammars give equal bytes, different grammars different bytes."""

from __future__ import annotations

import dataclasses
import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grammarc
from grammarc import Grammar, stdlib_grammars
from grammarc.ir import _canon, nodes
from grammarc.lowering import compiled_cache
from strategies import grammars

ROOT = Path(__file__).resolve().parents[1]
MASKBENCH = ROOT.parent / "shared" / "data" / "maskbench-dev"
SHAPES = compiled_cache._SHAPES


def reference(value: object) -> bytes:
    """The code `_canon.c`'s header describes, written out in Python."""
    classes, fields = SHAPES
    u64 = lambda n: struct.pack("<Q", n)  # noqa: E731
    if type(value) is str:
        width = 1 if all(ord(c) < 256 for c in value) else 2 if all(ord(c) < 65536 for c in value) else 4
        return b"S" + bytes([width]) + u64(len(value)) + b"".join(ord(c).to_bytes(width, "little") for c in value)
    if type(value) is tuple:
        return b"T" + u64(len(value)) + b"".join(map(reference, value))
    if value is None:
        return b"N"
    if type(value) is int and -(1 << 63) <= value < (1 << 63):
        return b"I" + struct.pack("<q", value)
    if type(value) in classes:
        k = classes.index(type(value))
        return b"E" + bytes([k]) + b"".join(reference(getattr(value, name)) for name in fields[k])
    text = repr(value).encode("utf-8", "surrogatepass")
    return b"R" + u64(len(text)) + text


def encode(grammar: Grammar) -> bytes:
    return _canon.encode((grammar.start, grammar.rules), *SHAPES)


def test_every_compared_field_is_read_and_no_other():
    # the key must see every field equality compares (else two grammars could share a file),
    # and no span (else equal grammars would not)
    classes, fields = SHAPES
    assert classes == nodes.EXPR_TYPES
    for cls, names in zip(classes, fields):
        assert names == tuple(f.name for f in dataclasses.fields(cls) if f.compare)
        assert "span" not in names


@settings(max_examples=150, deadline=None)
@given(grammars())
def test_encode_is_the_reference_code(grammar):
    assert encode(grammar) == reference((grammar.start, grammar.rules))


@settings(max_examples=150, deadline=None)
@given(grammars(max_rules=2), grammars(max_rules=2))
def test_equal_bytes_exactly_for_equal_grammars(a, b):
    assert (encode(a) == encode(b)) == (a == b)
    assert encode(a) == encode(Grammar(a.rules, start=a.start))  # a copy, spans and all


class _Marked(nodes.Literal):
    """A node of a class the code does not list (a subclass): it is read by its repr."""


EDGE_VALUES = [
    "",
    "ascii \"quoted\" \\",
    "caf\u00e9 \u00ff",  # one byte per character (Latin-1)
    "\u20ac \u4e2d",  # two bytes
    "\U0001f600 and \u00e9",  # four bytes
    "lone \ud800 surrogate",  # four bytes in PEP 393 (a surrogate is a code unit above 0xff)
    (),
    ((),),
    None,
    0,
    -1,
    (1 << 63) - 1,
    -(1 << 63),
    1 << 63,  # past 64 bits: by its repr
    True,  # a bool is not an int here: by its repr
    nodes.Repeat(nodes.Literal("a"), 2, None),
    nodes.Repeat(nodes.Literal("a"), 2, 3),
    nodes.Except(nodes.Ref("x"), 4),
    nodes.JsonStringExcept(("a", "b\u00e9")),
    nodes.Regex("[a-z]+", "complement"),
    nodes.AnyToken(),
    _Marked("a"),
    nodes.Seq((nodes.Alt((nodes.Literal("a"), nodes.Substrings("bc"))), nodes.Ref("r"))),
]


@pytest.mark.parametrize("value", EDGE_VALUES, ids=repr)
def test_edge_values_are_the_reference_code(value):
    assert _canon.encode(value, *SHAPES) == reference(value)


def test_edge_values_have_distinct_codes():
    codes = [_canon.encode(v, *SHAPES) for v in EDGE_VALUES]
    assert len(set(codes)) == len(codes)
    # same text, different kinds of node or value: different codes
    assert len({_canon.encode(v, *SHAPES) for v in (nodes.Literal("a"), nodes.Ref("a"), nodes.Substrings("a"),
                                                     _Marked("a"), "a", ("a",))}) == 6


def test_stdlib_and_schema_grammars_are_the_reference_code():
    for name in stdlib_grammars.names():
        grammar = grammarc.stdlib(name)
        assert encode(grammar) == reference((grammar.start, grammar.rules)), name
    if not MASKBENCH.is_dir():
        pytest.skip(f"MaskBench schemas not found at {MASKBENCH}")
    for path in sorted(MASKBENCH.glob("Github_medium*.json"))[:20]:
        try:
            grammar = Grammar.from_json_schema(json.loads(path.read_text())["schema"])
        except grammarc.GrammarcError:
            continue
        assert encode(grammar) == reference((grammar.start, grammar.rules)), path.name


def test_nesting_past_the_limit_is_a_value_error_not_a_crash():
    value: tuple = ()
    for _ in range(5000):
        value = (value,)
    with pytest.raises(ValueError, match="encode: the grammar nests deeper than 4096 levels"):
        _canon.encode(value, *SHAPES)


def test_malformed_shapes_are_refused():
    with pytest.raises(ValueError, match="one tuple of field names per class"):
        _canon.encode((), (nodes.Literal,), ())
    with pytest.raises(TypeError, match="field names are not a tuple"):
        _canon.encode((), (nodes.Literal,), ("text",))
    with pytest.raises(TypeError, match="a field name is not a str"):
        _canon.encode((), (nodes.Literal,), ((1,),))
