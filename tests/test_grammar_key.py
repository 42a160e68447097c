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


# -- fields read from their slots (offsets located once per (classes, fields) pair) -----------


class _Pair:
    """A slotted class of two fields, for shapes of the tests' own."""

    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


def _pair_code(value) -> bytes:
    """The code of `value` under shapes ((_Pair,), (("a", "b"),)), written out."""
    u64 = lambda n: struct.pack("<Q", n)  # noqa: E731
    if type(value) is _Pair:
        return b"E\0" + _pair_code(value.a) + _pair_code(value.b)
    if type(value) is tuple:
        return b"T" + u64(len(value)) + b"".join(map(_pair_code, value))
    if type(value) is str:
        return b"S\1" + u64(len(value)) + value.encode("latin-1")
    if type(value) is int:
        return b"I" + struct.pack("<q", value)
    text = repr(value).encode()
    return b"R" + u64(len(text)) + text


def test_fields_follow_the_class_when_it_changes():
    # a class attribute reassigned after the offsets were located (its type version changes):
    # the field is read as getattr reads it, through the new descriptor
    class Changing(_Pair):
        __slots__ = ()

    shapes = ((Changing,), (("a", "b"),))
    value = (Changing("x", 1), Changing("y", 2))
    assert _canon.encode(value, *shapes) == _pair_code((_Pair("x", 1), _Pair("y", 2)))
    Changing.a = property(lambda self: "p")
    try:
        assert _canon.encode(value, *shapes) == _pair_code((_Pair("p", 1), _Pair("p", 2)))
    finally:
        del Changing.a
    assert _canon.encode(value, *shapes) == _pair_code((_Pair("x", 1), _Pair("y", 2)))


def test_a_field_that_is_no_slot_or_never_set_reads_as_getattr():
    class Computed:
        __slots__ = ("a",)

        def __init__(self, a):
            self.a = a

        @property
        def b(self):
            return len(self.a)

    assert _canon.encode(Computed("xyz"), (Computed,), (("a", "b"),)) == _pair_code(_Pair("xyz", 3))
    unset = _Pair("x", 1)
    del unset.b
    with pytest.raises(AttributeError):
        _canon.encode(unset, (_Pair,), (("a", "b"),))
    with pytest.raises(TypeError, match="a class is not a type"):
        _canon.encode((), (1,), (("a",),))


class _Reentrant:
    """A value whose repr encodes under shapes of its own, taking the kept pairs' places."""

    def __repr__(self):
        for i in range(3):
            cls = type(f"Other{i}", (_Pair,), {"__slots__": ()})
            assert _canon.encode(cls("q", i), (cls,), (("a", "b"),)) == _pair_code(_Pair("q", i))
        return "reentrant"


def test_pairs_taken_over_while_in_use_and_in_turn_stay_right():
    shapes = ((_Pair,), (("a", "b"),))
    value = (_Pair("a", _Reentrant()), _Pair("b", 2), _Pair(_Reentrant(), 3), _Pair("c", 4))
    for _ in range(3):
        assert _canon.encode(value, *shapes) == _pair_code(value)
    for i in range(5):  # more pairs than are kept, one after the other
        cls = type(f"Turn{i}", (_Pair,), {"__slots__": ()})
        assert _canon.encode(cls("t", i), (cls,), (("a", "b"),)) == _pair_code(_Pair("t", i))
        grammar = grammarc.stdlib("arithmetic")
        assert encode(grammar) == reference((grammar.start, grammar.rules))


def test_tree_hash_reads_a_subclass_field_as_getattr():
    # a subclass may override a field: only a node of exactly its class is read from the slot
    class Overriding(nodes.Seq):
        __slots__ = ()

        @property
        def items(self):
            return (nodes.Literal("o"),)

    node = Overriding((nodes.Literal("a"), nodes.Ref("r")))
    assert hash(node) == hash(nodes.Seq((nodes.Literal("o"),)))
