"""Constructs that used to be refused, now compiled exactly: checked against `jsonschema`.

Each test draws schemas of one construct and JSON instances with hypothesis, and requires
``Grammar.from_json_schema(schema).accepts(text)`` to agree with
``jsonschema.Draft202012Validator(schema).is_valid(instance)`` on every instance. Objects are
compared modulo key order (the grammar writes named properties in the schema's order; an
object is accepted when some order of its keys is), so small objects only. A schema the
front-end refuses must be refused with UnsupportedSchemaError and a JSON pointer; the fixed
schemas below must compile.

The MaskBench schemas that motivated each construct must pass all their instances (they
live in ../shared/data/maskbench-dev; the test is skipped, saying so, when it is absent).
"""

from __future__ import annotations

import itertools
import json
import sys
import warnings
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grammarc import Grammar
from grammarc.errors import SchemaError, UnsupportedSchemaError

ROOT = Path(__file__).resolve().parents[1]
MASKBENCH = ROOT.parent / "shared" / "data" / "maskbench-dev"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- helpers ------------------------------------------------------------------------------


def key_orders(value, limit: int = 200):
    """`value` with its objects' keys in every order (nested too), at most `limit` of them."""
    if isinstance(value, dict):
        per_key = [list(key_orders(v, limit)) for v in value.values()]
        out = []
        for perm in itertools.permutations(range(len(value))):
            keys = list(value)
            for combo in itertools.product(*(per_key[i] for i in perm)):
                out.append({keys[i]: x for i, x in zip(perm, combo)})
                if len(out) >= limit:
                    return out
        return out
    if isinstance(value, list):
        out = []
        for combo in itertools.product(*(key_orders(v, limit) for v in value)):
            out.append(list(combo))
            if len(out) >= limit:
                break
        return out
    return [value]


def grammar_or_refusal(schema):
    """The grammar, None when the front-end refuses (with a pointer, as it must), or EMPTY
    when it says that no value matches (SchemaError)."""
    try:
        return Grammar.from_json_schema(schema)
    except UnsupportedSchemaError as exc:
        assert exc.pointer.startswith("#"), exc
        return None
    except SchemaError:
        return EMPTY


EMPTY = "empty"


def agree(grammar, schema, instance) -> None:
    expected = jsonschema.Draft202012Validator(schema).is_valid(instance)
    if grammar is EMPTY:
        assert not expected, (json.dumps(schema), json.dumps(instance))
        return
    texts = [json.dumps(v) for v in key_orders(instance)]
    got = any(grammar.accepts(t) for t in texts)
    assert got == expected, (json.dumps(schema), json.dumps(instance), expected)
    if got:  # the indented layout too
        assert any(grammar.accepts(json.dumps(v, indent=2)) for v in key_orders(instance)), (schema, instance)


# -- 1. negation of additionalProperties / patternProperties ----------------------------------

KEYS = ["a", "b", "c", "x", "xb", "d"]
SCALARS = st.sampled_from([0, 7, 2.5, "s", None, True])
VALUE_SCHEMAS = st.sampled_from([{"type": "integer"}, {"type": "string"}, {"minimum": 3}, False, True,
                                 {"type": ["integer", "null"]}])
PATTERNS = st.sampled_from(["^x", "b", "^[ac]$"])


@st.composite
def object_schemas(draw) -> dict:
    """Small object schemas: closures (additionalProperties) more often than patterns."""
    s: dict = {}
    if draw(st.booleans()):
        s["type"] = "object"
    props = draw(st.dictionaries(st.sampled_from(["a", "b"]), VALUE_SCHEMAS, max_size=2))
    if props:
        s["properties"] = dict(sorted(props.items()))
    if draw(st.integers(0, 3)) == 0:
        s["patternProperties"] = {draw(PATTERNS): draw(VALUE_SCHEMAS)}
    add = draw(st.sampled_from([None, False, False, True, {"type": "integer"}, {"type": "string"}]))
    if add is not None:
        s["additionalProperties"] = add
    if draw(st.integers(0, 2)) == 0:
        s["required"] = [draw(st.sampled_from(["a", "b", "c"]))]
    return s


@st.composite
def negation_schemas(draw) -> dict:
    shape = draw(st.sampled_from(["not", "and-not", "oneOf2", "oneOf3", "enum-not"]))
    if shape == "not":
        return {"not": draw(object_schemas())}
    if shape == "and-not":
        return {"allOf": [draw(object_schemas()), {"not": draw(object_schemas())}]}
    if shape == "oneOf2":
        return {"oneOf": [draw(object_schemas()), draw(object_schemas())]}
    if shape == "oneOf3":
        return {"type": "object", "oneOf": [draw(object_schemas()) for _ in range(3)]}
    values = [{"a": 1}, {"x": "s"}, {"b": 7, "xb": None}, {}, 5]
    return {"enum": values, "not": {"anyOf": [draw(object_schemas()), draw(object_schemas())]}}


instances = st.one_of(
    SCALARS,
    st.dictionaries(st.sampled_from(KEYS), SCALARS, max_size=3),
    st.dictionaries(st.sampled_from(KEYS[:3]), SCALARS, min_size=1, max_size=2),
    st.lists(SCALARS, max_size=2),
)


@SETTINGS
@given(negation_schemas(), st.lists(instances, min_size=12, max_size=12))
def test_object_negations_agree_with_jsonschema(schema, values):
    grammar = grammar_or_refusal(schema)
    if grammar is None:
        return
    for v in values:
        agree(grammar, schema, v)


@st.composite
def pattern_members(draw) -> dict:
    """An object schema of an allOf: patterns, a named property, additionalProperties."""
    s: dict = {}
    if draw(st.booleans()):
        s["patternProperties"] = dict([(draw(PATTERNS), draw(VALUE_SCHEMAS)) for _ in range(draw(st.integers(1, 2)))])
    if draw(st.booleans()):
        s["properties"] = {draw(st.sampled_from(["a", "b"])): draw(VALUE_SCHEMAS)}
    add = draw(st.sampled_from([None, False, True, {"type": "integer"}, {"type": "string"}]))
    if add is not None:
        s["additionalProperties"] = add
    return s


@SETTINGS
@given(st.lists(pattern_members(), min_size=2, max_size=3), st.lists(instances, min_size=12, max_size=12))
def test_object_schemas_with_patterns_meet_exactly(schemas, values):
    # allOf of object schemas with patternProperties: each judges a key by its own patterns,
    # else by its own additionalProperties (was refused: "merged with other object schemas")
    schema = {"allOf": schemas}
    grammar = grammar_or_refusal(schema)
    assert grammar is not None, schema
    for v in values:
        agree(grammar, schema, v)


FIXED_NEGATIONS = [
    {"allOf": [{"patternProperties": {"^x": {"type": "integer"}}}, {"additionalProperties": False}]},
    {"allOf": [{"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
               {"patternProperties": {"b": {"type": "string"}}, "additionalProperties": {"type": "integer"}}]},
    {"not": {"additionalProperties": False, "properties": {"a": True}}},
    {"not": {"patternProperties": {"^x": {"type": "integer"}}}},
    {"type": "object", "properties": {"a": True, "b": True}, "additionalProperties": False,
     "oneOf": [{"properties": {"a": True}, "additionalProperties": False},
               {"properties": {"b": True}, "additionalProperties": False}]},
    {"allOf": [{"properties": {"a": {"type": "integer"}}},
               {"not": {"properties": {"a": True}, "additionalProperties": {"type": "string"}}}]},
    {"oneOf": [{"required": ["t"], "properties": {"t": {"const": 1}}},
               {"required": ["t"], "properties": {"t": {"const": 2}}}]},
]
FIXED_INSTANCES = [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}, {"x": 1}, {"x": "s"}, {"a": "s", "q": 1},
                   {"a": 1, "q": "s"}, {"t": 1}, {"t": 2}, {"t": 3}, 5, "s", None, [1]]


@pytest.mark.parametrize("schema", FIXED_NEGATIONS, ids=lambda s: json.dumps(s)[:60])
def test_fixed_object_negations_compile_exactly(schema):
    grammar = Grammar.from_json_schema(schema)  # no refusal
    for v in FIXED_INSTANCES:
        agree(grammar, schema, v)


def test_two_negated_closures_on_one_object_are_refused_with_a_pointer():
    schema = {"type": "object", "properties": {"a": True}, "additionalProperties": True,
              "allOf": [{"not": {"properties": {"a": True}, "additionalProperties": False}},
                        {"not": {"patternProperties": {"^q": False}}}]}
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_json_schema(schema)
    assert info.value.pointer.startswith("#/allOf/")


# -- MaskBench schemas ----------------------------------------------------------------------

MASKBENCH_FIXED = [
    "Github_ultra---o65421.json",  # oneOf discriminated by a property the context requires
    "Github_hard---o13024.json",  # oneOf of untyped objects: other types match every branch
    "Github_easy---o74185.json",  # oneOf of closed objects that overlap on {}
    "Handwritten---pnmp7.json",  # not(patternProperties) beside const
    "Handwritten---oneofitemscontains1.json",  # multipleOf with an open minimum, several contains
    "Handwritten---oneofitemscontains8.json",
]


def _bench():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import maskbench
    finally:
        sys.path.pop(0)
    return maskbench


@pytest.mark.parametrize("name", MASKBENCH_FIXED)
def test_maskbench_schema_passes(name):
    path = MASKBENCH / name
    if not path.exists():
        pytest.skip(f"MaskBench sample not found at {MASKBENCH}")
    case = json.loads(path.read_text(encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grammar = Grammar.from_json_schema(case["schema"])
    mb = _bench()
    for i, test in enumerate(case["tests"]):
        ordered = mb.in_schema_order(test["data"], case["schema"], case["schema"])
        texts = mb.layout_texts(test["data"])
        for layout, text in mb.layout_texts(ordered).items():
            verdicts = {grammar.accepts(text), grammar.accepts(texts[layout])}
            # valid: accepted in the instance's own key order or in the schema's; invalid: in neither
            assert (True in verdicts) == test["valid"], (name, i, layout)


# -- 2. multipleOf with wide or open bounds ------------------------------------------------

def _is_integer(checker, instance) -> bool:
    if isinstance(instance, bool):
        return False
    if isinstance(instance, int):
        return True
    return isinstance(instance, (float, Decimal)) and instance == int(instance)


def exact_validator(schema):
    """Draft 2020-12 over Decimal numbers (1.0 is an integer, 0.01 divides 12.34 exactly)."""
    base = jsonschema.Draft202012Validator
    validator = jsonschema.validators.extend(base, type_checker=base.TYPE_CHECKER.redefine("integer", _is_integer))
    return validator(json.loads(json.dumps(schema), parse_float=Decimal))


STEPS = st.sampled_from([3, 7, 11, 1, 0.5, 0.01, 2.5, 0.25, 0.2, 1.5, 12])
BOUNDS = st.sampled_from([-5000, -100, -12.5, -1, 0, 0.5, 3, 100, 1000, 99999])


@st.composite
def multiple_of_schemas(draw) -> dict:
    s: dict = {"multipleOf": draw(STEPS)}
    kind = draw(st.sampled_from([None, "integer", "number"]))
    if kind:
        s["type"] = kind
    for word in draw(st.lists(st.sampled_from(["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"]),
                              unique=True, min_size=0, max_size=2)):
        s[word] = draw(BOUNDS)
    extra = draw(st.lists(st.sampled_from(["multipleOf", "not multipleOf", "not integer"]), unique=True, max_size=2))
    if extra:
        s["allOf"] = [{"multipleOf": draw(STEPS)} if e == "multipleOf" else {"not": {"multipleOf": draw(STEPS)}}
                      if e == "not multipleOf" else {"not": {"type": "integer"}} for e in extra]
    if draw(st.integers(0, 4)) == 0:
        del s["multipleOf"]
    return s


@st.composite
def numerals(draw) -> str:
    """Plain numerals (with -0, trailing zeros) and exponent forms."""
    whole = draw(st.one_of(st.integers(-20000, 20000), st.sampled_from([0, 99, 100, 110, 1000, 99990, -5000, -100])))
    sign = "-" if whole < 0 or (whole == 0 and draw(st.booleans())) else ""
    text = sign + str(abs(whole))
    frac = draw(st.sampled_from(["", "", ".0", ".5", ".25", ".01", ".50", ".125", ".2", ".000"]))
    text += frac
    if draw(st.integers(0, 5)) == 0:
        text += draw(st.sampled_from(["e2", "E-1", "e0"]))
    return text


@SETTINGS
@given(multiple_of_schemas(), st.lists(numerals(), min_size=30, max_size=30))
def test_multiple_of_agrees_with_jsonschema(schema, texts):
    grammar = grammar_or_refusal(schema)
    assert grammar is not None, schema  # nothing here is refused any more
    validator = exact_validator(schema)
    for text in texts:
        expected = validator.is_valid(json.loads(text, parse_float=Decimal))
        got = False if grammar is EMPTY else grammar.accepts(text)
        if "e" in text.lower():  # bounded numbers are written in plain notation: sound, not exact
            assert not got or expected, (schema, text)
        else:
            assert got == expected, (schema, text, expected)


def test_huge_multiple_of_with_bounds_is_refused_with_a_pointer():
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_json_schema({"properties": {"n": {"multipleOf": 1234567, "minimum": 5}}})
    assert info.value.pointer == "#/properties/n/multipleOf"


# -- several contains on one array (from negated items), not multipleOf --------------------

ITEM_SCHEMAS = st.sampled_from([{"type": "integer"}, {"minimum": 3}, {"type": "string"}, {"multipleOf": 2},
                                {"enum": [1, "a"]}, {"not": {"multipleOf": 3}}, {"type": "number", "multipleOf": 11, "minimum": 100}])


@st.composite
def contains_schemas(draw) -> dict:
    parts = [{"contains": draw(ITEM_SCHEMAS)} for _ in range(draw(st.integers(0, 2)))]
    parts += [{"not": {"items": draw(ITEM_SCHEMAS)}} for _ in range(draw(st.integers(0, 2)))]  # 4 contains at most
    s: dict = {"allOf": parts} if parts else {}
    if draw(st.booleans()):
        s["items"] = draw(ITEM_SCHEMAS)
    if draw(st.booleans()):
        s["type"] = "array"
    if draw(st.integers(0, 3)) == 0:
        s["minItems"] = 1
    return s


ITEM_VALUES = st.sampled_from([0, 1, 2, 3, 4, 6, 9, 110, 121, "a", "b", None, 2.5])


@SETTINGS
@given(contains_schemas(), st.lists(st.one_of(st.lists(ITEM_VALUES, max_size=4), ITEM_VALUES), min_size=12, max_size=12))
def test_several_contains_agree_with_jsonschema(schema, values):
    grammar = grammar_or_refusal(schema)
    assert grammar is not None, schema  # nothing here is refused any more
    validator = exact_validator(schema)
    for v in values:
        expected = validator.is_valid(json.loads(json.dumps(v), parse_float=Decimal))
        got = False if grammar is EMPTY else grammar.accepts(json.dumps(v))
        assert got == expected, (schema, v, expected)


def test_unique_items_of_a_few_values_after_a_prefix_are_exact():
    # refused once: every subset of its 11 values at every position counted 6,144 states
    schema = {"uniqueItems": True, "items": {"type": ["boolean", "null"]},
              "prefixItems": [{"enum": [1, 1.0, 2, [1], {"k": 1}]}, {"enum": [0, 1, 2, 3, 4, 5]}]}
    grammar, validator = Grammar.from_json_schema(schema), exact_validator(schema)
    pool = _pool(schema)
    for size in range(5):
        for items in itertools.product(pool, repeat=size) if size < 4 else [[2, 3, True, None], [1, 0, True, True]]:
            text = json.dumps(list(items))
            assert grammar.accepts(text) == validator.is_valid(json.loads(text, parse_float=Decimal)), text


def test_unique_items_beyond_the_state_budget_are_refused_with_the_count():
    # one listed prefix position of 12 values, then any of the 12: 1 + 12 + 12 * (2**12 - 2) states
    values = list(range(12))
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_json_schema({"uniqueItems": True, "prefixItems": [{"enum": values}], "items": {"enum": values}})
    assert info.value.pointer == "#/uniqueItems"
    assert str(info.value).endswith("distinct items of 12 values need 49141 states (limit 4096)")


# -- 3. uniqueItems over listed item values -------------------------------------------------

LISTED = st.sampled_from([{"enum": [1, "a", None]}, {"type": "boolean"}, {"type": ["boolean", "null"]},
                          {"const": 2}, {"enum": [1, 1.0, 2, [1], {"k": 1}]}, {"enum": [0, 1, 2, 3, 4, 5]},
                          {"enum": ["x", "y", 3], "type": "string"}, {"type": "null"}])
UNIQUE_VALUES = st.sampled_from([1, 1.0, 2, "a", None, True, False, [1], {"k": 1}])


@st.composite
def unique_schemas(draw) -> dict:
    s: dict = {"uniqueItems": True, "items": draw(LISTED)}
    if draw(st.booleans()):
        s["type"] = "array"
    if draw(st.integers(0, 2)) == 0:
        s["prefixItems"] = [draw(LISTED) for _ in range(draw(st.integers(1, 2)))]
    if draw(st.booleans()):
        s["minItems"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        s["maxItems"] = draw(st.integers(0, 4))
    return s


def _pool(schema: dict) -> list:
    """The values the schema's item schemas list, and a few others (1.0 beside 1, ...)."""
    out = [1.0, "zz", None, True, False]
    for sub in [schema["items"], *schema.get("prefixItems", [])]:
        out += sub.get("enum", []) + ([sub["const"]] if "const" in sub else [])
    return out


@SETTINGS
@given(unique_schemas(), st.data())
def test_unique_items_agree_with_jsonschema(schema, data):
    grammar = grammar_or_refusal(schema)
    assert grammar is not None, schema  # nothing here is refused any more
    validator = exact_validator(schema)
    pool = st.sampled_from(_pool(schema))
    for _ in range(15):
        v = data.draw(st.one_of(st.lists(pool, max_size=5), st.lists(pool, max_size=5, unique_by=json.dumps), UNIQUE_VALUES))
        expected = validator.is_valid(json.loads(json.dumps(v), parse_float=Decimal))
        got = False if grammar is EMPTY else grammar.accepts(json.dumps(v))
        assert got == expected, (schema, v, expected)


def test_unique_strings_stay_refused_with_a_pointer():
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_json_schema({"properties": {"authors": {"type": "array", "uniqueItems": True, "items": {"type": "string"}}}})
    assert info.value.pointer == "#/properties/authors/uniqueItems"
    assert "not a short list of values" in info.value.message


# -- 4. not over oneOf: none of the branches, or two at once ---------------------------------

BRANCHES = st.sampled_from([{"type": "integer"}, {"minimum": 3}, {"type": "string"}, {"maxLength": 1},
                            {"enum": [1, "a", None]}, {"type": "array", "maxItems": 1}, {"required": ["a"]},
                            {"properties": {"a": {"type": "integer"}}}, {"not": {"type": "null"}}])
NOT_ONE_OF_VALUES = st.sampled_from([0, 1, 5, 2.5, 3.5, "", "a", "ab", None, True, [], [1], [1, 2], {}, {"a": 1},
                                     {"a": "s"}, {"b": 1}])


@st.composite
def not_one_of_schemas(draw) -> dict:
    inner = {"oneOf": draw(st.lists(BRANCHES, min_size=1, max_size=4))}
    if draw(st.integers(0, 2)) == 0:  # a oneOf nested in a oneOf branch: negated by `_exclusive`
        return {"oneOf": [inner, draw(BRANCHES)]}
    return {"not": inner}


@SETTINGS
@given(not_one_of_schemas(), st.lists(NOT_ONE_OF_VALUES, min_size=12, max_size=12, unique_by=json.dumps))
def test_not_one_of_agrees_with_jsonschema(schema, values):
    grammar = grammar_or_refusal(schema)
    assert grammar is not None, schema  # up to 8 branches, nothing here is refused
    for value in values:
        agree(grammar, schema, value)


def test_not_over_a_wide_one_of_is_refused_with_a_pointer():
    with pytest.raises(UnsupportedSchemaError) as info:
        Grammar.from_json_schema({"properties": {"p": {"not": {"oneOf": [{"minimum": i} for i in range(9)]}}}})
    assert info.value.pointer == "#/properties/p/not"
    assert info.value.message == "keyword 'not' is not supported: the negation of a oneOf of more than 8 branches"
