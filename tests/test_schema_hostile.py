"""Hostile JSON Schemas (issue 10): each ends in grammarc's own precise error with the JSON
pointer of the construct, or compiles, within a time and memory limit, in a child process
(see tests/hostile.py). The limits guard against hangs and blow-ups; they measure nothing."""

from __future__ import annotations

import pytest

from hostile import assert_grammarc_error, run_hostile


def _schema(expr: str) -> str:
    return f"import grammarc\nschema = {expr}\ngrammarc.Grammar.from_json_schema(schema).compile()\n"


def _nested(word: str, depth: int) -> str:
    return f"""(lambda: (lambda d: [d := {{"type": "array", "{word}": d}} for _ in range({depth})][-1])({{"type": "integer"}}))()"""


@pytest.mark.parametrize("expr, kind, fragments", [
    # a bound past the compiler's expansion limit: refused where it is written (was a
    # GrammarError about an internal rule after the whole schema was built)
    ('{"type": "array", "maxItems": 1e9}', "UnsupportedSchemaError",
     ["#/maxItems: keyword 'maxItems' is not supported: item counts above 200000 are not supported"]),
    ('{"properties": {"a": {"type": "array", "minItems": 10**12}}}', "UnsupportedSchemaError",
     ["#/properties/a/minItems: keyword 'minItems' is not supported: item counts above 200000"]),
    # $ref cycles that consume no input
    ('{"$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}', "SchemaError",
     ["#/$defs/a/not/$ref: ", "refers to itself without reading any part of the value"]),
    ('{"$ref": "#", "type": "integer"}', "SchemaError",
     ["#/$ref: the schema at # refers to itself without reading any part of the value"]),
    ('{"$ref": 5}', "SchemaError", ["#/$ref: $ref must be a string, not int"]),
    # nesting: a precise limit, never RecursionError
    (_nested("items", 200), "SchemaError", ["the schema is nested more than 128 levels deep"]),
    ("'{\"a\":' * 100000 + '1' + '}' * 100000", "SchemaError", ["schema text is nested too deeply to read"]),
    ("(lambda: [d := {}] and [d := {'not': d} for _ in range(5000)][-1])()", "SchemaError",
     ["the schema is nested more than 128 levels deep"]),
    # a chain of $refs through anyOf nests the translation, not the document: past the stack, a
    # precise error at the chain's first value (was a RecursionError; MaskBench's
    # Github_easy---o37788 with indent=2 reached it so)
    ('{"definitions": {**{f"d{i}": {"anyOf": [{"$ref": f"#/definitions/d{i + 1}"}, {"type": "null"}]} '
     'for i in range(400)}, "d400": {"type": "string"}}, "$ref": "#/definitions/d0"}', "UnsupportedSchemaError",
     ["#/definitions/d0: schema nesting too deep to translate ($ref and combinator chains nest past Python's "
      "recursion limit)"]),
    # anyOf distributed over a conjunction multiplies out: a budget, not a hang
    ('{"type": "string", "allOf": [{"anyOf": [{"minLength": i}, {"maxLength": 100 - i}]} for i in range(13)]}',
     "UnsupportedSchemaError", ["#/allOf/12/anyOf: keyword 'anyOf' is not supported: distributing the anyOf/oneOf "
                                "branches over the conjunction around them needs more than 4096 branches"]),
])
def test_hostile_schema_gets_a_precise_error(expr: str, kind: str, fragments: list[str]) -> None:
    outcome = run_hostile(_schema(expr))
    assert_grammarc_error(outcome, kind, *fragments)


def test_deep_but_allowed_nesting_compiles() -> None:
    code = _schema(_nested("items", 100)).replace(".compile()", "") + (
        "g = grammarc.Grammar.from_json_schema(schema, whitespace='compact')\n"
        "assert g.accepts('[' * 100 + '1' + ']' * 100) and not g.accepts('[' * 99 + '1' + ']' * 99)\n")
    outcome = run_hostile(code)
    assert outcome.kind == "" and not outcome.timed_out and not outcome.crashed, str(outcome)


def test_if_then_chains_on_a_discriminator_compile() -> None:
    # 2**40 combinations of if/then branches, of which 41 are not contradictory: they are
    # pruned as they are distributed (the chain used to hang)
    code = """
import grammarc
names = [f"k{i}" for i in range(40)]
schema = {"type": "object", "required": ["name"], "properties": {"name": {"enum": names}, "x": {}},
          "additionalProperties": False,
          "allOf": [{"if": {"properties": {"name": {"const": n}}},
                     "then": {"properties": {"x": {"type": "integer" if i % 2 else "string"}}, "required": ["x"]}}
                    for i, n in enumerate(names)]}
g = grammarc.Grammar.from_json_schema(schema, whitespace="compact")
for i, n in enumerate(names):
    good, bad = ('5', '"s"') if i % 2 else ('"s"', '5')
    assert g.accepts('{"name":"%s","x":%s}' % (n, good)), n
    assert not g.accepts('{"name":"%s","x":%s}' % (n, bad)), n
    assert not g.accepts('{"name":"%s"}' % n), n
assert not g.accepts('{"name":"k40","x":5}')
"""
    outcome = run_hostile(code)
    assert outcome.kind == "" and not outcome.timed_out and not outcome.crashed, str(outcome)
