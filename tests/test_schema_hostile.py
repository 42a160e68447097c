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
