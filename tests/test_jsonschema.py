"""JSON Schema front-end: exact languages of small schemas, errors, and known peer failures."""

from __future__ import annotations

import itertools
import json
import re
import warnings
from decimal import Decimal

import pytest
from hypothesis import given, settings, strategies as st

from grammarc import Grammar
from grammarc.errors import SchemaError, UnsupportedSchemaError
from grammarc.frontends import json_formats as jf
from grammarc.frontends.jsonschema import numeric_ranges as nr
from grammarc.ir import Ref
from grammarc import Grammar


def G(schema, **options) -> Grammar:
    return Grammar.from_json_schema(schema, **options)


def check(grammar: Grammar, yes=(), no=()):
    for text in yes:
        assert grammar.accepts(text), f"should accept {text!r}"
    for text in no:
        assert not grammar.accepts(text), f"should reject {text!r}"


# -- numbers --------------------------------------------------------------------------------

def test_integer_bounds_other_than_zero():
    g = G({"type": "integer", "minimum": -17, "maximum": 1234})
    check(g, yes=["-17", "-9", "0", "-0", "7", "99", "1000", "1234", "12.0"],
          no=["-18", "1235", "2000", "01", "1.5", "1e3", "", "-"])


def test_exclusive_decimal_bounds():
    g = G({"type": "number", "exclusiveMinimum": 2.5, "maximum": 10})
    check(g, yes=["2.51", "2.500001", "3", "9.99", "10", "10.000"],
          no=["2.5", "2.50", "2", "10.01", "11", "-3"])


def test_negative_decimal_range():
    g = G({"type": "number", "minimum": -1.25, "exclusiveMaximum": -0.5})
    check(g, yes=["-1.25", "-1", "-0.75", "-0.5000001"], no=["-1.26", "-0.5", "0", "-2"])


def test_plain_number_follows_rfc8259():
    g = G({"type": "number"})
    check(g, yes=["0", "-0", "1.5", "1e10", "1E+2", "-0.0e-0", "123456789012345678901234567890"],
          no=["01", "+1", ".5", "1.", "1e", "NaN", "Infinity", "0x10", "- 1"])


def test_integer_type_accepts_zero_fraction():
    check(G({"type": "integer"}), yes=["1", "-5", "1.0", "0.00"], no=["1.5", "1.01", "a"])


def test_integer_fraction_option():
    for schema in ({"type": "integer"}, {"type": "integer", "minimum": -3, "maximum": 40},
                   {"type": "integer", "multipleOf": 3}, {"type": "integer", "multipleOf": 3, "minimum": 0},
                   {"const": 3}, {"enum": [3, "a"]}):
        check(G(schema), yes=["3", "3.0"])
        check(G(schema, integer_fraction=False), yes=["3"], no=["3.0", "3.00", "3e0"])
    check(G({"type": "number", "multipleOf": 0.5}, integer_fraction=False), yes=["3", "3.5", "3.0"])


def test_integer_ranges_are_compact():
    assert nr.integer_range_regex(-(10**18 - 1), 10**18 - 1) == "-?(?:0|[1-9][0-9]{0,17})"
    assert nr.integer_range_regex(7, 99999) == "(?:[7-9]|[1-9][0-9]{1,4})"
    assert nr.integer_range_regex(100, None) == "[1-9][0-9]{2,}"


def test_multiple_of_integer_is_exact():
    g = G({"type": "integer", "multipleOf": 7})
    for i in range(-50, 50):
        assert g.accepts(str(i)) == (i % 7 == 0), i


def test_multiple_of_power_of_ten_fraction():
    check(G({"type": "number", "multipleOf": 0.01}), yes=["1", "1.5", "1.25", "1.250"], no=["1.255", "0.001"])


def test_min_greater_than_max_is_an_error():
    with pytest.raises(SchemaError) as info:
        G({"type": "integer", "minimum": 5, "maximum": 3})
    assert info.value.pointer == "#/maximum"
    assert "no number can match" in info.value.message


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.integers(-5000, 5000)), st.one_of(st.none(), st.integers(-5000, 5000)), st.integers(-6000, 6000))
def test_integer_range_regex_differential(lo, hi, center):
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    pattern = re.compile(nr.integer_range_regex(lo, hi))
    for v in range(center - 60, center + 60):
        want = (lo is None or v >= lo) and (hi is None or v <= hi)
        assert bool(pattern.fullmatch(str(v))) == want, (lo, hi, v)
    assert not pattern.fullmatch("0" + str(abs(center) + 1))


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.none(), st.decimals(-1000, 1000, places=2)),
    st.booleans(),
    st.one_of(st.none(), st.decimals(-1000, 1000, places=2)),
    st.booleans(),
    st.integers(-120000, 120000),
)
def test_decimal_range_regex_differential(lo, lo_strict, hi, hi_strict, center):
    pattern = nr.decimal_range_regex(lo, lo_strict, hi, hi_strict)
    compiled = re.compile(pattern) if pattern is not None else None
    for k in range(center - 40, center + 40):
        v = Decimal(k) / 100
        want = (lo is None or (v > lo if lo_strict else v >= lo)) and (hi is None or (v < hi if hi_strict else v <= hi))
        plain = format(v, "f")
        for text in {plain, plain + ("0" if "." in plain else ".0"), format(v.normalize(), "f")}:
            got = bool(compiled is not None and compiled.fullmatch(text))
            assert got == want, (lo, lo_strict, hi, hi_strict, text, pattern)


def test_integer_range_regex_with_automata():
    automata = pytest.importorskip("grammarc.automata")
    if not hasattr(automata, "from_regex"):
        pytest.skip("grammarc.automata.from_regex not available")
    g = Grammar.from_regex(nr.integer_range_regex(-17, 1234))
    for v in range(-40, 1300, 7):
        assert g.accepts(str(v)) == (-17 <= v <= 1234), v


# -- strings --------------------------------------------------------------------------------

def test_lengths_count_characters_not_bytes():
    g = G({"type": "string", "minLength": 2, "maxLength": 3})
    check(g, yes=['"ab"', '"abc"', '"éé"', json.dumps("éé"), '"\\ud83d\\ude00x"', '"\\n\\t"', '"😀😀😀"'],
          no=['"a"', '"abcd"', '"😀"', '"\\ud83d"', '"\\ud83dx"'])


def test_plain_string_follows_rfc8259():
    g = G({"type": "string"})
    check(g, yes=['""', '"a\\"b"', '"\\/"', '"\\u00e9"', '"\\u00E9"', '"\x7f"', '"é"'],
          no=['"a', '"\x01"', '"\n"', '"\\x41"', '"\\u12"', "'a'", '"\\a"'])


def test_pattern_is_unanchored_and_sees_escapes():
    g = G({"type": "string", "pattern": "é+"})
    check(g, yes=['"xéy"', '"\\u00e9"', '"a\\u00E9\\u00e9"'], no=['"e"', '""'])
    anchored = G({"type": "string", "pattern": "^a[0-9]$"})
    check(anchored, yes=['"a1"', '"\\u00611"'], no=['"ba1"', '"a12"', '"a"'])


def test_pattern_with_length_is_exact():
    # the common case: the length goes into the repetition count
    g = G({"type": "string", "pattern": "^[a-z0-9_]+$", "maxLength": 5})
    root = dict(g.rules)["root"]
    root = dict(g.rules)[root.name] if isinstance(root, Ref) else root  # the shared pattern rule
    assert root.pattern.endswith("){1,5}\"")  # one counted repetition
    check(g, yes=['"a"', '"abcde"', '"a\\u005f1"'], no=['""', '"abcdef"', '"A"'])
    check(G({"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$", "minLength": 5, "maxLength": 6}),
          yes=['"AB-12"', '"AB-123"'], no=['"AB-1"', '"AB-1234"'])
    # two parts of variable length: the automaton product
    check(G({"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "minLength": 3, "maxLength": 8}),
          yes=['"ab-c"', '"abc"', '"a-b-c-de"'], no=['"ab"', '"a-b-c-def"', '"a--b"', '"-ab"'])
    check(G({"type": "string", "pattern": "é", "maxLength": 2}),
          yes=['"é"', '"\\u00e9x"', '"xé"'], no=['"xxé"', '""', '"e"'])
    check(G({"allOf": [{"pattern": "a"}, {"pattern": "b"}], "type": "string"}),
          yes=['"ab"', '"ba"', '"xaxb"'], no=['"aa"', '""'])


def test_pattern_length_product_counts_characters():
    # minLength 2 over a one-character pattern: the counter must see escapes as one character
    g = G({"type": "string", "pattern": "^(ab|c)*$", "minLength": 2, "maxLength": 3})
    check(g, yes=['"ab"', '"cc"', '"abc"', '"cab"', '"\\u0061b"'], no=['"c"', '"abab"', '"ccab"', '"a"'])


PATTERNS = ["^[a-c]+$", "a", "^(ab|b)*$", "b$", "^a.c", "^[ab]{2}-?[0-9]*$", "ab|^c"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(PATTERNS), st.integers(0, 4), st.one_of(st.none(), st.integers(0, 6)),
       st.lists(st.text("abc-1é", max_size=8), min_size=8, max_size=8))
def test_pattern_and_length_differential(pattern, lo, hi, texts):
    schema = {"type": "string", "pattern": pattern, "minLength": lo}
    if hi is not None:
        schema["maxLength"] = hi
    if hi is not None and hi < lo:
        return
    try:
        g = G(schema)
    except UnsupportedSchemaError:
        pytest.fail(f"refused {schema}")
    except SchemaError:  # no string qualifies
        g = None
    for text in texts + ["", "abc", "ab-12", "c", "ab"]:
        want = re.search(pattern, text) is not None and lo <= len(text) and (hi is None or len(text) <= hi)
        if g is None:
            assert not want, (schema, text)
            continue
        assert g.accepts(json.dumps(text)) == want, (schema, text)
        assert g.accepts(json.dumps(text, ensure_ascii=False)) == want, (schema, text)


def test_format_with_pattern_or_length():
    check(G({"type": "string", "format": "date", "pattern": "^2020"}),
          yes=['"2020-01-31"'], no=['"2021-01-31"', '"2020-02-30"'])
    check(G({"type": "string", "format": "date-time", "maxLength": 22}),
          yes=['"2020-01-01T00:00:00Z"', '"2020-01-01T00:00:00.1Z"'], no=['"2020-01-01T00:00:00.12Z"'])
    check(G({"type": "string", "format": "uuid", "maxLength": 36}),
          yes=['"2eb8aa08-aa98-11ea-b4aa-73b441d16380"'], no=['"x"'])
    check(G({"type": "string", "format": "ipv4", "pattern": "^10\\."}), yes=['"10.0.0.1"'], no=['"11.0.0.1"'])


def test_too_large_intersection_is_refused_with_pointer():
    with pytest.raises(UnsupportedSchemaError, match="more than .* automaton states") as info:
        G({"properties": {"e": {"type": "string", "format": "email", "maxLength": 40}}})
    assert info.value.pointer == "#/properties/e/format"


def test_lookahead_pattern_is_refused_with_pointer():
    with pytest.raises(UnsupportedSchemaError) as info:
        G({"properties": {"x": {"type": "string", "pattern": "(?=a)b"}}})
    assert info.value.pointer == "#/properties/x/pattern"


@pytest.mark.parametrize(
    "fmt, good, bad",
    [
        ("date", ["2020-02-29", "2021-12-31"], ["2021-02-29", "2021-13-01", "2021-1-01", "2021-04-31"]),
        ("date-time", ["2021-01-01T12:00:00Z", "2021-01-01t12:00:00.5+05:30"], ["2021-01-01 12:00:00Z", "2021-01-01T25:00:00Z"]),
        ("time", ["08:30:06Z", "23:59:60Z"], ["008:30:06Z", "08:30:06"]),
        ("duration", ["P4DT12H30M5S", "PT1S", "P2W"], ["P", "PT", "P1D2H", "4DT12H"]),
        ("email", ["a.b@example.com", "x@[127.0.0.1]"], ["a..b@example.com", "@example.com", "a@"]),
        ("hostname", ["www.example.com", "a"], ["-a.com", "a_b.com", "a..b"]),
        ("ipv4", ["192.168.0.1"], ["256.0.0.1", "01.2.3.4", "1.2.3"]),
        ("ipv6", ["::1", "1:2:3:4:5:6:7:8", "::ffff:1.2.3.4"], ["1:2:3:4:5:6:7:8:9", "12345::", ":::"]),
        ("uri", ["http://example.com/a?b#c", "urn:isbn:123"], ["//example.com", "a b:c", "http://x y"]),
        ("uri-reference", ["/a/b", "#frag", "http://e.com"], ["\\\\\\\\WINDOWS\\\\fileshare", "a b"]),
        ("uri", ["http://[V1.fe]/", "http://[v7.x:y]"], ["http://é.com/", "http://[v.x]"]),
        ("iri", ["http://ƒøø.ßår/?∂éœ=πîx#πîüx", "http://\U00010000.com/", "http://a/b?\ue000", "urn:x"],
         ["not-an-iri", "//ƒøø.ßår/", "http://a/b#\ue000", "http://a/\ue000", "http://a b/"]),
        ("iri-reference", ["//ƒøø.ßår/?∂éœ", "#ƒrag", "ƒøø", "http://a/b?\ue000"],
         ["\\\\WINDOWS\\fileshare", "a b", "#\ue000"]),
        ("uuid", ["2eb8aa08-aa98-11ea-b4aa-73b441d16380"], ["2eb8aa08aa9811eab4aa73b441d16380", "2eb8aa08-aa98-11ea-b4aa-73b441d1638"]),
    ],
)
def test_formats_are_asserted(fmt, good, bad):
    g = G({"type": "string", "format": fmt})
    # raw characters: formats leave escaped spellings out (a documented narrowing)
    check(g, yes=[json.dumps(x, ensure_ascii=False) for x in good], no=[json.dumps(x, ensure_ascii=False) for x in bad])


def test_format_policies():
    # "known" (default): a format grammarc does not implement is the annotation it is
    check(G({"type": "string", "format": "credit-card"}), yes=['"anything"', '""'], no=["1"])
    # "strict": it is refused, with its pointer
    with pytest.raises(UnsupportedSchemaError) as info:
        G({"properties": {"c": {"type": "string", "format": "credit-card"}}}, formats="strict")
    assert info.value.pointer == "#/properties/c/format"
    check(G({"type": "string", "format": "date"}, formats="strict"), yes=['"2020-01-31"'], no=['"2020-01-32"'])
    # "ignore": no format constrains (the 2019-09/2020-12 default reading)
    check(G({"type": "string", "format": "date"}, formats="ignore"), yes=['"2020-01-32"', '"x"'])
    # formats apply to strings only
    check(G({"format": "date"}), yes=["1", "null", '"2020-01-31"'], no=['"x"'])
    with pytest.raises(ValueError):
        G({}, formats="assert")


@pytest.mark.parametrize(
    "schema, good, bad",
    [
        ({"type": "string", "format": "byte"}, ["", "QQ==", "QUI=", "QUJD", "QUJDRA=="], ["Q", "QQ=", "QUJD=", "a b", "QQ==QQ=="]),
        ({"type": "integer", "format": "int32"}, [0, -2**31, 2**31 - 1], [2**31, -2**31 - 1]),
        ({"type": "integer", "format": "int64"}, [2**63 - 1, -2**63], [2**63]),
        ({"type": "number", "format": "int32"}, [5, 5.0], [5.5, 2**40]),
        ({"format": "int32"}, ["text", 7], [1.5]),
        ({"type": "number", "format": "double"}, [1.5, 1e300], ["x"]),
        ({"type": "string", "format": "binary"}, ["\u0000", "x"], [1]),
        ({"type": "string", "format": "password"}, ["hunter2"], [None]),
    ],
)
def test_openapi_formats(schema, good, bad):
    check(G(schema), yes=[json.dumps(x) for x in good], no=[json.dumps(x) for x in bad])
    if schema.get("format") in ("byte", "int32", "int64"):
        with_enum = G({**schema, "enum": good + bad})
        check(with_enum, yes=[json.dumps(x) for x in good], no=[json.dumps(x) for x in bad])


# -- objects --------------------------------------------------------------------------------

def test_optional_keys_are_omitted_entirely():
    g = G({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}},
           "additionalProperties": False})
    check(g, yes=["{}", '{"a":1}', '{"b":"x"}', '{"c":true}', '{"a":1,"c":true}', '{"a":1,"b":"x","c":false}'],
          no=['{"a":,"b":"x"}', '{"a":1,}', '{,"b":"x"}', '{"a":null}', '{"d":1}', '{"a":1 "b":"x"}'])


def test_required_and_order():
    g = G({"type": "object", "properties": {"a": {"const": 1}, "b": {"const": 2}}, "required": ["b"], "additionalProperties": False})
    check(g, yes=['{"b":2}', '{"a":1,"b":2}', '{"a":1.0,"b":2}'], no=["{}", '{"a":1}', '{"b":3}'])


@pytest.mark.parametrize("schema, order", [
    # own properties, then the conjuncts in the order the schema lists them
    ({"allOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}, {"properties": {"c": {}}}]}, "abc"),
    ({"properties": {"a": {}}, "allOf": [{"properties": {"b": {}}}, {"properties": {"c": {}}}]}, "abc"),
    ({"$defs": {"c": {"properties": {"c": {}}}}, "$ref": "#/$defs/c", "allOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}]}, "cab"),
    ({"$defs": {"c": {"properties": {"c": {}}}}, "allOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}], "$ref": "#/$defs/c"}, "abc"),
    ({"$defs": {"b": {"properties": {"b": {}}}}, "allOf": [{"properties": {"a": {}}}, {"$ref": "#/$defs/b"}, {"properties": {"c": {}}}]}, "abc"),
])
def test_properties_of_conjuncts_come_in_listing_order(schema, order):
    g = G({"type": "object", **schema}, whitespace="compact")
    texts = {"".join(p): "{" + ",".join(f'"{k}":1' for k in p) + "}" for p in itertools.permutations("abc")}
    assert [p for p, text in texts.items() if g.accepts(text)] == [order]


def test_additional_properties_default_is_allowed_but_never_shadows_a_named_key():
    g = G({"type": "object", "properties": {"a": {"type": "integer"}}})
    check(g, yes=['{"a":1,"b":"anything"}', '{"zz":[1,{}]}', '{"ab":"x"}', '{"":null}'],
          no=['{"a":"x"}', '{"b":1,"a":"x"}', '{"\\u0061":"x"}'])


def test_close_objects_option():
    g = G({"type": "object", "properties": {"a": {"type": "integer"}}}, close_objects=True)
    check(g, yes=["{}", '{"a":1}'], no=['{"b":1}'])


def test_required_key_forbidden_by_additional_properties_false():
    with pytest.raises(SchemaError) as info:
        G({"type": "object", "properties": {"a": {}}, "required": ["b"], "additionalProperties": False})
    assert info.value.pointer == "#/required"
    assert "'b'" in info.value.message


def test_min_max_properties_count_members():
    g = G({"type": "object", "properties": {"a": {}, "b": {}, "c": {}}, "additionalProperties": False,
           "minProperties": 1, "maxProperties": 2})
    check(g, yes=['{"a":1}', '{"a":1,"c":3}', '{"b":1,"c":2}'], no=["{}", '{"a":1,"b":2,"c":3}'])


def test_pattern_properties():
    g = G({"type": "object", "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False})
    check(g, yes=["{}", '{"x-a":1}', '{"x-a":1,"x-b":2}'], no=['{"x-a":"s"}', '{"y":1}'])


def test_many_optional_properties_stay_linear():
    props = {f"p{i}": {"type": "integer"} for i in range(60)}
    g = G({"type": "object", "properties": props, "additionalProperties": False})
    assert len(g.to_ebnf()) < 60_000
    # compiled at a smaller size: the compiler currently re-merges shared regular rules once
    # per path through them (cubic here, ~80 s at 60 properties; reported to the lead)
    small = G({"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(12)},
               "additionalProperties": False})
    check(small, yes=["{}", '{"p11":1}', '{"p0":1,"p6":2,"p11":3}'], no=['{"p11":1,"p0":1}', '{"p0":1,,"p1":2}'])


# -- arrays ---------------------------------------------------------------------------------

def test_min_items_arrays_keep_their_commas():
    g = G({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4})
    check(g, yes=["[1,2]", "[1,2,3,4]", "[1, 2, 3]"], no=["[1]", "[1 2]", "[1,2,3,4,5]", "[1,,2]", "[,1,2]", "[1,2,]"])


def test_large_item_bounds_do_not_blow_up():
    g = G({"type": "array", "items": {"type": "boolean"}, "minItems": 1000, "maxItems": 100000})
    assert len(g.to_ebnf()) < 2000


def test_prefix_items_then_rest():
    g = G({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False})
    check(g, yes=["[]", '["a"]', '["a",1]'], no=['["a",1,2]', "[1]", '["a","b"]'])
    g7 = G({"type": "array", "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}, draft="7")
    check(g7, yes=['["a",1,2]'], no=['["a","b"]'])


def test_contains():
    g = G({"type": "array", "items": {"type": "integer"}, "contains": {"const": 5}})
    check(g, yes=["[5]", "[1,5]", "[5,1,2]", "[1,2,5,3]"], no=["[]", "[1,2]"])


# -- composition ----------------------------------------------------------------------------

def test_all_of_is_merged_not_ignored():
    g = G({"allOf": [{"type": "integer", "minimum": 3}, {"maximum": 5}]})
    check(g, yes=["3", "4", "5"], no=["2", "6", '"a"'])


def test_all_of_objects_merge_properties():
    g = G({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                     {"properties": {"a": {"minimum": 10}, "b": {"type": "string"}}}]})
    check(g, yes=['{"a":10}', '{"a":12,"b":"x"}'], no=['{"a":9}', '{"a":12,"b":1}', "{}"])


def test_one_of_with_disjoint_branches():
    g = G({"oneOf": [{"type": "string"}, {"type": "integer"}]})
    check(g, yes=['"a"', "1"], no=["null", "1.5"])
    tagged = G({"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"const": "b"}, "y": {"type": "string"}}, "required": ["kind"]},
    ]})
    check(tagged, yes=['{"kind":"a","x":1}', '{"kind":"b","y":"s"}'], no=['{"kind":"c"}'])


def test_one_of_with_overlapping_branches_is_exclusive():
    # exactly one: (integer and not >= 2) or (>= 2 and not integer)
    g = G({"oneOf": [{"type": "integer"}, {"minimum": 2}]})
    check(g, yes=["1", "-1", "2.5", '"a"', "null"], no=["2", "3", "1.5", "2.0"])
    g = G({"oneOf": [{"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}]})
    check(g, yes=['{"a":1}', '{"b":1}'], no=['{"a":1,"b":2}', "{}", "1"])


def test_one_of_overlapping_patterns_is_exclusive():
    g = G({"oneOf": [{"type": "string", "pattern": "a"}, {"type": "string", "pattern": "b"}]})
    check(g, yes=['"a"', '"xb"', '"\\u0061"'], no=['"ab"', '"ba"', '"c"', '""', "1"])


def test_one_of_disjoint_within_the_conjunction_types():
    # the integer branch cannot hold where the value must be a string: only dates remain
    g = G({"type": "string", "oneOf": [{"format": "date"}, {"type": "integer"}]})
    check(g, yes=['"2020-01-31"'], no=['"2020-13-01"', "1", '""'])


def test_one_of_discriminator_through_ref_and_closed_objects():
    kinds = {"$defs": {"A": {"enum": ["a", "aa"]}, "B": {"const": "b"}}}
    g = G({**kinds, "oneOf": [
        {"type": "object", "properties": {"kind": {"$ref": "#/$defs/A"}, "d": {"type": "string", "format": "date"}},
         "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"$ref": "#/$defs/B"}, "d": {"type": "string", "format": "date"}},
         "required": ["kind"]},
    ]})
    check(g, yes=['{"kind":"a"}', '{"kind":"aa","d":"2020-01-01"}', '{"kind":"b","d":"2020-01-01"}'],
          no=['{"kind":"c"}', '{"kind":"b","d":"x"}', "{}"])
    # a property one branch requires and the other forbids (closed by additionalProperties)
    g = G({"oneOf": [
        {"type": "object", "properties": {"a": {"type": "string", "format": "date"}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "string", "format": "date"}}, "additionalProperties": False},
    ]})
    check(g, yes=['{"a":"2020-01-01"}', '{"b":"2020-01-01"}', "{}", '{"a":"2020-01-01","c":1}',
                  '{"a":"2020-01-01","b":"x"}'],
          no=['{"a":"x"}', '{"b":"x"}', '{"c":1}', "1"])


def test_one_of_nullable_branch_overlaps_null():
    # nullable widens a branch with null: null satisfies both branches, so the branches are
    # not disjoint (reading them as string vs null accepted null); nullable is not negated
    schema = {"oneOf": [{"type": "string", "nullable": True}, {"type": "null"}]}
    with pytest.raises(UnsupportedSchemaError, match="the negation of 'nullable' is not supported") as info:
        G(schema)
    assert info.value.pointer == "#/oneOf"


def test_one_of_that_cannot_be_made_exclusive_is_refused():
    with pytest.raises(UnsupportedSchemaError, match="not provably disjoint") as info:
        G({"oneOf": [{"type": "string", "format": "date"}, {"type": "string", "maxLength": 10}]})
    assert info.value.pointer == "#/oneOf"


def test_any_of_and_nullable():
    check(G({"anyOf": [{"type": "integer"}, {"type": "null"}]}), yes=["1", "null"], no=['"a"'])
    check(G({"type": "string", "nullable": True}), yes=['"a"', "null"], no=["1"])


@pytest.mark.parametrize("keyword, schema", [
    ("not", {"not": {"type": "string", "format": "date"}}),
    ("not", {"if": {"format": "date"}, "then": {"minLength": 1}}),
    ("uniqueItems", {"type": "array", "uniqueItems": True}),
    ("maxContains", {"contains": {"type": "string", "format": "date"}, "maxContains": 1}),
    ("multipleOf", {"not": {"type": "integer"}, "multipleOf": 123457}),
    ("unevaluatedProperties", {"unevaluatedProperties": False}),
])
def test_unsupported_keywords_name_keyword_and_pointer(keyword, schema):
    with pytest.raises(UnsupportedSchemaError) as info:
        G(schema)
    assert keyword in info.value.message
    assert info.value.pointer.startswith("#")


def test_lenient_ignores_with_one_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = G({"type": "array", "uniqueItems": True, "items": {"not": {"format": "date"}}}, lenient=True)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "uniqueItems at #/uniqueItems" in text and "not at #/items/not" in text
    assert g.accepts("[1,1]")


def test_empty_enum_is_an_error():
    with pytest.raises(SchemaError) as info:
        G({"enum": []})
    assert info.value.pointer == "#/enum"


def test_const_of_any_json_value():
    g = G({"const": {"a": [1, "x", None], "b": {"c": True}}})
    check(g, yes=['{"a":[1,"x",null],"b":{"c":true}}', '{"b":{"c":true},"a":[1.0,"x",null]}', '{"a": [1, "x", null], "b": {"c": true}}'],
          no=['{"a":[1,"x"],"b":{"c":true}}', '{"a":[1,"x",null]}'])


# -- references -----------------------------------------------------------------------------

def test_recursive_ref_and_escaped_pointer():
    schema = {
        "$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
                                                               "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                           "required": ["value"], "additionalProperties": False},
                  "a/b~c": {"type": "boolean"}},
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}, "flag": {"$ref": "#/$defs/a~1b~0c"}},
        "additionalProperties": False,
    }
    g = G(schema)
    check(g, yes=['{"tree":{"value":1,"children":[{"value":2,"children":[]}]},"flag":true}'],
          no=['{"tree":{"children":[]}}', '{"flag":1}'])
    assert "node ::=" in g.to_ebnf()


def test_anchor_ref():
    g = G({"$defs": {"x": {"$anchor": "num", "type": "integer"}}, "$ref": "#num"})
    check(g, yes=["1"], no=['"a"'])


@pytest.mark.parametrize("base", ["urn:example:policy:1.0", "tag:example.com,2005:policy"])
def test_fragment_refs_resolve_under_a_non_hierarchical_id(base):
    # urljoin leaves "#/$defs/a" unchanged under urn: and tag:, which named no resource
    g = G({"$id": base, "$defs": {"a": {"type": "integer"}, "b": {"$ref": "#/$defs/a"}},
           "properties": {"x": {"$ref": "#/$defs/b"}, "y": {"$ref": base + "#/$defs/a"}}})
    check(g, yes=['{"x":1,"y":2}', "{}"], no=['{"x":"a"}', '{"y":1.5}'])


def test_remote_ref_is_refused():
    with pytest.raises(UnsupportedSchemaError) as info:
        G({"$ref": "https://example.com/schema.json"})
    assert "remote $ref" in info.value.message
    assert info.value.pointer == "#/$ref"


def test_unresolvable_ref_is_an_error():
    with pytest.raises(SchemaError) as info:
        G({"properties": {"a": {"$ref": "#/$defs/missing"}}})
    assert info.value.pointer == "#/properties/a/$ref"


# -- layout ---------------------------------------------------------------------------------

def test_whitespace_modes():
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}, "required": ["a"],
              "additionalProperties": False}
    value = {"a": [1, 2]}
    compact = G(schema, whitespace="compact")
    check(compact, yes=[json.dumps(value, separators=(",", ":"))], no=[json.dumps(value)])
    bounded = G(schema)
    check(bounded, yes=[json.dumps(value), json.dumps(value, indent=4), json.dumps(value, indent=2).replace("\n", "\r\n")],
          no=[" " + json.dumps(value), '{"a":[1,' + " " * 80 + "2]}"])
    unbounded = G(schema, whitespace="unbounded")
    check(unbounded, yes=['{"a":[1,' + " " * 80 + "2]}"])
    indented = G(schema, indent=2)
    check(indented, yes=[json.dumps(value, indent=2)], no=[json.dumps(value), json.dumps(value, indent=4)])
    seps = G(schema, separators=(", ", ": "))
    check(seps, yes=[json.dumps(value)], no=[json.dumps(value, separators=(",", ":"))])


def test_bounded_whitespace_allows_deep_pretty_printing():
    schema = {"$defs": {"n": {"type": "array", "items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}
    value: list = []
    for _ in range(10):
        value = [value]
    check(G(schema), yes=[json.dumps(value, indent=4)])


def test_ebnf_is_readable_and_round_trips():
    g = G({"$defs": {"Person": {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
                                "required": ["name"], "additionalProperties": False}},
           "type": "array", "items": {"$ref": "#/$defs/Person"}})
    text = g.to_ebnf()
    assert "Person ::=" in text and "Person_age ::=" in text
    assert Grammar.from_ebnf(text, start=g.start) == g


def test_schema_as_json_text_and_booleans():
    check(G('{"type": "boolean"}'), yes=["true", "false"], no=["1"])
    check(G(True), yes=["1", '{"a":[null]}'], no=[""])
    with pytest.raises(SchemaError):
        G(False)


_NAMES = ["a", "ab", "", "é", "\U0001F600x", "a\"/"]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.sampled_from(_NAMES), st.text(alphabet="abxé\"\\/\U0001F600", max_size=4)))
def test_keys_and_strings_other_than_a_set_of_names(text):
    """Keys other than the named properties, and strings other than a `not: {enum}`, in every
    JSON spelling: exactly the texts that are none of the names (the trie's complement)."""
    keys = _excluding_grammars()[0]
    strings = _excluding_grammars()[1]
    other = text not in _NAMES
    for spelled in _spellings(text):
        assert keys.accepts("{" + spelled + ":null}") == other, spelled
        assert strings.accepts(spelled) == other, spelled
    # a named property is written in its plain spelling only (a documented narrowing)
    assert keys.accepts("{" + json.dumps(text, ensure_ascii=False) + ":1}") == (text == "a")


@settings(max_examples=300, deadline=None)
@given(st.sets(st.text(alphabet="ab\u00e9\U0001F600\ud800", max_size=4), max_size=6))
def test_the_key_trie_is_the_complement_of_the_names(words):
    """chardfa.excluding builds the trie directly; the regular algebra (literals, complement
    within UTF-8 text, read back over code points) is its oracle: the same minimal automaton,
    numbered the same way."""
    from grammarc.frontends.jsonschema import chardfa

    size = sum(len(w.encode("utf-8", "surrogatepass")) for w in words) + 2
    expected = chardfa.chars(chardfa.complement(chardfa.literals(words), size), size)
    assert chardfa.excluding(words) == expected


def _excluding_grammars(memo=[]) -> list[Grammar]:
    if not memo:
        memo.append(G({"type": "object", "properties": {n: {"type": "integer"} if n == "a" else False for n in _NAMES},
                       "additionalProperties": {"type": "null"}}, whitespace="compact"))
        memo.append(G({"type": "string", "not": {"enum": _NAMES}}))
    return memo


# -- not, if/then/else, dependencies, maxContains (rewritten to anyOf of exact complements) ---

def test_not_type_and_non_integer_numbers():
    check(G({"not": {"type": "integer"}}), yes=['"a"', "1.5", "-0.25", "null", "[]", "{}", "true"],
          no=["1", "1.0", "-3", "0"])
    check(G({"not": {"type": ["integer", "boolean"]}}), yes=['"a"', "1.5"], no=["1", "true", "false"])
    check(G({"not": {"type": "number"}}), yes=['"1"', "null"], no=["1", "1.5"])


def test_not_const_and_enum_over_scalars():
    g = G({"not": {"enum": [1, "a", True, None]}})
    check(g, yes=["2", "0.5", "1.01", '"b"', '"aa"', '""', "false", "[]", '{"a":1}'],
          no=["1", "1.0", '"a"', '"\\u0061"', "true", "null"])
    check(G({"type": "string", "not": {"const": "x"}}), yes=['"y"', '"xx"'], no=['"x"', "1"])
    with pytest.raises(UnsupportedSchemaError):
        G({"not": {"const": [1]}})


def test_not_of_keywords_is_scoped_to_their_type():
    # non-numbers satisfy minimum, so they fail not: {minimum}
    check(G({"not": {"minimum": 3}}), yes=["2", "-5.5", "2.999"], no=["3", "3.0", "4", '"a"', "null"])
    check(G({"not": {"maxLength": 2}}), yes=['"abc"'], no=['"ab"', "1"])
    check(G({"not": {"required": ["a"]}}), yes=["{}", '{"b":1}'], no=['{"a":1}', "1"])
    check(G({"not": {"type": "object", "properties": {"foo": {"type": "string"}}}}),
          yes=["1", '{"foo":1}'], no=['{"foo":"a"}', "{}", '{"bar":1}'])
    check(G({"not": {"items": {"type": "integer"}}}), yes=['[1,"a"]', '["a"]'], no=["[]", "[1,2]", "1"])
    check(G({"not": {"anyOf": [{"type": "string"}, {"minimum": 0}]}}), yes=["-1", "-0.5"], no=['"a"', "0", "5", "null"])


def test_not_boolean_and_double_negation():
    check(G({"not": False}), yes=["1", '"x"', "{}"])
    check(G({"not": {"not": {"type": "string"}}}), yes=['"x"'], no=["1"])
    check(G({"properties": {"foo": {"not": {}}}}), yes=["{}", '{"bar":1}'], no=['{"foo":1}'])
    with pytest.raises(SchemaError):
        G({"not": {}})


def test_not_of_a_pattern_is_its_complement():
    g = G({"properties": {"a": {"not": {"pattern": "^x+$"}}}}, whitespace="compact")
    check(g, yes=['{"a":""}', '{"a":"xy"}', '{"a":"\\u0079"}', "{}"], no=['{"a":"x"}', '{"a":"xx"}', '{"a":"\\u0078"}', '{"a":1}'])


def test_not_of_a_format_is_refused():
    with pytest.raises(UnsupportedSchemaError) as info:
        G({"properties": {"a": {"not": {"format": "date"}}}})
    assert info.value.pointer == "#/properties/a/not"


def test_if_then_else():
    g = G({"if": {"exclusiveMaximum": 0}, "then": {"minimum": -10}, "else": {"multipleOf": 2}})
    check(g, yes=["-1", "-10", "0", "4", '"x"'], no=["-11", "3", "0.5"])
    check(G({"if": {"const": 1}, "then": False}), yes=["2", '"a"'], no=["1"])
    check(G({"if": {"type": "string"}}), yes=["1", '"a"'])  # if alone asserts nothing
    check(G({"then": {"const": 0}}), yes=["1"])


def test_dependent_required_and_schemas():
    g = G({"dependentRequired": {"bar": ["foo"]}})
    check(g, yes=["{}", '{"foo":1}', '{"foo":1,"bar":2}', "1", "[]"], no=['{"bar":2}'])
    g = G({"dependentSchemas": {"bar": {"properties": {"foo": {"type": "integer"}}}}})
    check(g, yes=['{"foo":"q"}', '{"foo":1,"bar":2}'], no=['{"foo":"q","bar":2}'])
    g7 = G({"dependencies": {"bar": ["foo"], "baz": False}}, draft="7")
    check(g7, yes=['{"foo":1,"bar":2}', "{}"], no=['{"bar":2}', '{"baz":1}'])


def test_max_contains_counts_matches_exactly():
    g = G({"contains": {"const": 1}, "minContains": 2, "maxContains": 3})
    for items in ([1, 1], [2, 1, 1, 2], [1, 2, 1, 1], [1], [1, 1, 1, 1], [2, 2], []):
        assert g.accepts(json.dumps(items)) == (2 <= items.count(1) <= 3), items
    check(G({"contains": {"const": 1}, "minContains": 0, "maxContains": 0}), yes=["[]", "[2]"], no=["[1]", "[2,1]"])


def test_decimal_multiple_of_is_exact():
    for step in ("1.5", "0.25", "0.3"):
        g = G({"multipleOf": float(step)})
        for k in range(-200, 200, 3):
            v = Decimal(k) / 100
            text = format(v, "f")
            assert g.accepts(text) == (v % Decimal(step) == 0), (step, text)
    check(G({"multipleOf": 1.5}), yes=["4.5", "-1.50", "3", "0"], no=["4.", "4.55", "1", "01.5"])


def test_any_of_through_a_ref_with_siblings():
    g = G({"$ref": "#/$defs/a", "type": "integer", "$defs": {"a": {"anyOf": [{"minimum": 1}, {"maximum": -1}]}}})
    check(g, yes=["5", "-3"], no=["0", "1.5"])


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(st.none(), st.decimals(-30, 30, places=2)),
    st.booleans(),
    st.one_of(st.none(), st.decimals(-30, 30, places=2)),
    st.booleans(),
)
def test_fraction_range_regex_differential(lo, lo_strict, hi, hi_strict):
    pattern = nr.fraction_range_regex(lo, lo_strict, hi, hi_strict)
    compiled = re.compile(pattern) if pattern is not None else None
    for k in range(-3200, 3200, 7):
        v = Decimal(k) / 100
        want = (v != v.to_integral_value() and (lo is None or (v > lo if lo_strict else v >= lo))
                and (hi is None or (v < hi if hi_strict else v <= hi)))
        plain = format(v, "f")
        for text in {plain, plain + "0", format(v.normalize(), "f")}:
            assert bool(compiled is not None and compiled.fullmatch(text)) == want, (lo, lo_strict, hi, hi_strict, text)


# -- keys: named properties, patternProperties and additionalProperties together -----------

_KEYED = {"type": "object",
          "properties": {"ab": {"type": "integer"}, "é": {"type": "boolean"}},
          "patternProperties": {"^a": {"type": ["string", "integer"]}, "b$": {"type": ["integer", "null"]},
                                "^[^a]*$": {"not": {"pattern": "^x+$"}}},
          "additionalProperties": {"type": "null"}}


def _spellings(key: str) -> list[str]:
    escaped = '"' + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x10000 else json.dumps(c)[1:-1] for c in key) + '"'
    return [json.dumps(key, ensure_ascii=False), json.dumps(key), escaped]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="abxé\"\\/\U0001F600", max_size=4),
       st.sampled_from(["1", '"x"', '"xx"', "null", "true", '"q"']))
def test_pattern_and_additional_keys_against_jsonschema(key, value):
    """Each key, in every JSON spelling, gets exactly the schemas jsonschema applies to it;
    a named property is written in its plain spelling only (the narrowing docs/schema.rst
    states), so its escaped spellings are refused."""
    import jsonschema

    g = _keyed_grammar()
    valid = jsonschema.Draft202012Validator(_KEYED).is_valid({key: json.loads(value)})
    plain = json.dumps(key, ensure_ascii=False)
    for spelled in _spellings(key):
        narrowed = key in _KEYED["properties"] and spelled != plain
        assert g.accepts("{" + spelled + ":" + value + "}") == (valid and not narrowed), (spelled, value)


def test_named_properties_only_in_their_plain_spelling():
    """The cases hypothesis rarely draws: "ab" escaped is refused, plain accepted."""
    g = _keyed_grammar()
    cases = {'{"ab":1}': True, '{"\\u0061\\u0062":1}': False, '{"a\\u0062":1}': False, '{"ab":null}': False}
    assert {text: g.accepts(text) for text in cases} == cases


_KEYED_GRAMMAR = []


def _keyed_grammar() -> Grammar:
    if not _KEYED_GRAMMAR:
        _KEYED_GRAMMAR.append(G(_KEYED, whitespace="compact"))
    return _KEYED_GRAMMAR[0]


# enum membership by hashable keys: json_key(a) == json_key(b) exactly when json_equal(a, b)
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, 1.0, -2.0, 0.5, 1e3])
    | st.text("ab", max_size=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("ab", max_size=1), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(_JSON_VALUES, _JSON_VALUES)
def test_json_key_agrees_with_json_equal(a, b):
    from grammarc.frontends.jsonschema.values import json_equal, json_key

    assert (json_key(a) == json_key(b)) is json_equal(a, b)
    assert json_key(a) == json_key(a) and hash(json_key(a)) == hash(json_key(a))


def test_large_enum_is_exact():
    words = [f"item_{i % 97}_{i}" for i in range(5000)]
    g = Grammar.from_json_schema({"enum": words + [1, True, None, [1], {"a": 1}]}, whitespace="compact")
    assert all(g.accepts(json.dumps(w)) for w in words[::7])
    assert [g.accepts(t) for t in ('"item_3_4"', '"item_0_0x"', "1.0", "1", "true", "false", "[1]", '{"a":1}', '{"a":2}')] \
        == [False, False, True, True, True, False, True, True, False]


def test_a_schema_that_contains_itself_is_refused_with_the_pointer_of_the_repeat():
    inner: dict = {"type": "array", "items": []}
    schema = {"properties": {"a/b": {"anyOf": [{"type": "null"}, inner]}}}
    inner["prefixItems"] = [{"type": "string"}, schema]
    with pytest.raises(SchemaError, match="contains itself") as caught:
        Grammar.from_json_schema(schema)
    assert caught.value.pointer == "#/properties/a~1b/anyOf/1/prefixItems/1"
