"""Per-request grammar data (grammarc.integrations.grammar_spec): what each key builds,
canonical keys for caching, and the exact error for every kind of mistake."""

from __future__ import annotations

import json

import pytest

import grammarc
from grammarc import Grammar
from grammarc import stdlib_grammars
from grammarc.integrations import grammar_spec
from grammarc.integrations.grammar_spec import (
    GrammarSpec,
    GrammarSpecError,
    compiled_for,
    grammar_for,
    parse_spec,
    spec_from_extra_args,
)

SCHEMA = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "boolean"}}, "required": ["b", "a"]}
EBNF = "doc ::= item { ',' item } ; item ::= 'x' | 'y' ;"


@pytest.mark.parametrize(
    "data, direct",
    [
        ({"json_schema": SCHEMA}, lambda: Grammar.from_json_schema(SCHEMA)),
        ({"json_schema": SCHEMA, "whitespace": "compact", "close_objects": True},
         lambda: Grammar.from_json_schema(SCHEMA, whitespace="compact", close_objects=True)),
        ({"json_schema": SCHEMA, "separators": [", ", ": "], "whitespace": "compact"},
         lambda: Grammar.from_json_schema(SCHEMA, separators=(", ", ": "), whitespace="compact")),
        ({"regex": "[a-z]+@x\\.org"}, lambda: Grammar.from_regex("[a-z]+@x\\.org")),
        ({"ebnf": EBNF, "start": "doc"}, lambda: Grammar.from_ebnf(EBNF, start="doc")),
        ({"stdlib": "json"}, lambda: grammarc.stdlib("json")),
        ({"stdlib": "arithmetic"}, lambda: grammarc.stdlib("arithmetic")),
    ],
)
def test_each_kind_builds_the_grammar_of_the_direct_api(data, direct):
    assert grammar_for(parse_spec(data)) == direct()


def test_schema_text_and_object_give_one_key_and_keep_property_order():
    as_object = parse_spec({"json_schema": SCHEMA})
    as_text = parse_spec({"json_schema": json.dumps(SCHEMA, indent=2)})
    assert as_object == as_text and hash(as_object) == hash(as_text)
    assert as_object.source == json.dumps(SCHEMA, separators=(",", ":"))
    reordered = dict(SCHEMA, properties={"a": {"type": "boolean"}, "b": {"type": "integer"}})
    assert parse_spec({"json_schema": reordered}) != as_object  # order is part of the language
    assert parse_spec({"regex": "a"}) == GrammarSpec("regex", "a")


def test_json_text_of_the_object_is_the_same_spec():
    data = {"json_schema": SCHEMA, "whitespace": "compact"}
    assert parse_spec(json.dumps(data)) == parse_spec(data)


def test_options_are_sorted_and_hashable():
    spec = parse_spec({"whitespace": "compact", "json_schema": True, "separators": [",", ":"]})
    assert spec.options == (("separators", (",", ":")), ("whitespace", "compact"))
    hash(spec)


def test_compiled_grammars_are_shared_by_equal_specs():
    first = compiled_for(parse_spec({"regex": "ab|cd"}))
    assert compiled_for(parse_spec({"regex": "ab|cd"})) is first
    assert first.grammar.accepts("cd") and not first.grammar.accepts("abcd")


def test_extra_args_without_the_key_have_no_spec():
    assert spec_from_extra_args(None) is None
    assert spec_from_extra_args({}) is None
    assert spec_from_extra_args({"other": {"regex": "a"}}) is None
    assert spec_from_extra_args({"grammarc": {"regex": "a"}}) == GrammarSpec("regex", "a")


W = "extra_args['grammarc']"
BAD = [
    (None, f"{W} must be an object with one of the keys json_schema, regex, ebnf, gbnf, lark, stdlib; got null"),
    (3, f"{W} must be an object with one of the keys json_schema, regex, ebnf, gbnf, lark, stdlib; got int"),
    ("json", f"{W} is a string, so it must be the JSON text of an object with one of the keys json_schema, regex, "
             "ebnf, gbnf, lark, stdlib: Expecting value: line 1 column 1 (char 0)"),
    ("[1]", f"{W} is JSON text of list; it must be of an object with one of the keys json_schema, regex, ebnf, gbnf, "
            "lark, stdlib"),
    ({}, f"{W} names no grammar (keys: none); give one of json_schema, regex, ebnf, gbnf, lark, stdlib"),
    ({"start": "x"}, f"{W} names no grammar (keys: 'start'); give one of json_schema, regex, ebnf, gbnf, lark, stdlib"),
    ({"regex": "a", "ebnf": "b"}, f"{W} names 2 grammars (regex, ebnf); give exactly one"),
    ({"ebnf": "s ::= 'a';", "strat": "s"}, f"{W}: unknown key 'strat' next to 'ebnf'; allowed options: start"),
    ({"regex": "a", "start": "s"}, f"{W}: unknown key 'start' next to 'regex'; allowed options: none"),
    ({"regex": 3}, f"{W}['regex'] must be a string, got int"),
    ({"json_schema": "{"}, f"{W}['json_schema'] is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
    ({"json_schema": [1]}, f"{W}['json_schema'] must be a schema (an object or a boolean), got list"),
    ({"json_schema": {"const": float("nan")}}, f"{W}['json_schema'] is not JSON data: Out of range float values are not JSON compliant"),
    ({"stdlib": "jsn"}, f"{W}['stdlib']: no stdlib grammar named 'jsn'; available: {', '.join(stdlib_grammars.names())}"),
    ({"ebnf": "s ::= 'a';", "start": ""}, f"{W}['start'] must be a rule name (a non-empty string), got ''"),
    ({"json_schema": {}, "separators": ","}, f"{W}['separators'] must be a list of two strings (item, key), got ','"),
    ({"json_schema": {}, "close_objects": 1}, f"{W}['close_objects'] must be true or false, got 1"),
    ({"json_schema": {}, "indent": True}, f"{W}['indent'] must be an integer or null, got True"),
    ({"json_schema": {}, "whitespace": 2}, f"{W}['whitespace'] must be a string, got 2"),
]


@pytest.mark.parametrize("data, message", BAD)
def test_malformed_data_is_a_precise_error(data, message):
    with pytest.raises(GrammarSpecError) as caught:
        parse_spec(data)
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)  # servers answer ValueError with HTTP 400


BAD_GRAMMARS = [
    ({"ebnf": "start ::= foo ;"}, f"{W}['ebnf']: <request ebnf>:1:11: rule 'start' refers to undefined rule 'foo'\nstart ::= foo ;\n          ^^^"),
    ({"regex": "(?<=a)b"}, f"{W}['regex']: lookbehind (?<=...) is not supported (at offset 0 in pattern '(?<=a)b')"),
    ({"json_schema": {}, "whitespace": "wide"}, f"{W}['json_schema']: whitespace must be 'bounded', 'compact' or 'unbounded', not 'wide'"),
    ({"json_schema": {"$ref": "http://example.com/s.json"}},
     f"{W}['json_schema']: #/$ref: remote $ref 'http://example.com/s.json' is not supported "
     "(no network access at compile time; pass it in registry=)"),
    ({"stdlib": "json", "start": "nope"},
     f"{W}['stdlib']: start rule 'nope' is not defined; defined rules: 'start', 'value', 'object', 'member', "
     "'array', 'element', 'string', 'number', 'ws'"),
]


@pytest.mark.parametrize("data, message", BAD_GRAMMARS)
def test_grammars_that_do_not_compile_are_precise_errors(data, message):
    with pytest.raises(GrammarSpecError) as caught:
        compiled_for(parse_spec(data))
    assert str(caught.value) == message


def test_source_size_is_bounded(monkeypatch):
    monkeypatch.setattr(grammar_spec, "MAX_SOURCE_CHARS", 10)
    with pytest.raises(GrammarSpecError) as caught:
        parse_spec({"regex": "a" * 11})
    assert str(caught.value) == f"{W}['regex'] has 11 characters; the limit is 10"


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"gbnf": 'root ::= "x" [0-9]+'}, Grammar.from_gbnf('root ::= "x" [0-9]+')),
        ({"lark": 'top: "x" DIGIT+\n%import common.DIGIT', "start": "top"},
         Grammar.from_lark('top: "x" DIGIT+\n%import common.DIGIT', start="top")),
    ],
    ids=["gbnf", "lark"],
)
def test_gbnf_and_lark_use_the_grammar_frontends(data, expected):
    grammar = grammar_for(parse_spec(data))
    assert grammar == expected
    assert grammar.accepts("x12") and not grammar.accepts("x")
