"""`Merging._merge_one` reads each family of keywords (numbers, strings, objects, arrays) only
where a schema has one of its words: every keyword it reads must be in its family's word set,
or it would be skipped. Each keyword below, alone (or beside the keyword it depends on), must
change the merged constraints."""

from __future__ import annotations

import pytest

from grammarc.frontends.jsonschema.builder import Builder
from grammarc.frontends.jsonschema.documents import Node
from grammarc.frontends.jsonschema.drafts import TupleItems
from grammarc.frontends.jsonschema.keywords import (ANNOTATIONS, EXPANDED, NOT_MULTIPLE_KEY, NOT_PATTERN_KEY,
                                                    NOT_STRINGS_KEY, SOME_MEMBER_KEY, SUPPORTED, TYPES, TYPES_KEY,
                                                    UNSUPPORTED)
from grammarc.frontends.jsonschema.layout import Layout
from grammarc.frontends.jsonschema.merge import Merged

# keyword -> (a schema with it, the same schema without it)
CASES = {
    "type": ({"type": "string"}, {}),
    TYPES_KEY: ({TYPES_KEY: ["string"]}, {}),
    NOT_PATTERN_KEY: ({NOT_PATTERN_KEY: "a"}, {}),
    NOT_STRINGS_KEY: ({NOT_STRINGS_KEY: ["a"]}, {}),
    "enum": ({"enum": [1]}, {}),
    "const": ({"const": 1}, {}),
    "format": ({"format": "date"}, {}),
    "minimum": ({"minimum": 1}, {}),
    "exclusiveMinimum": ({"exclusiveMinimum": 1}, {}),
    "maximum": ({"maximum": 1}, {}),
    "exclusiveMaximum": ({"exclusiveMaximum": 1}, {}),
    "multipleOf": ({"multipleOf": 2}, {}),
    NOT_MULTIPLE_KEY: ({NOT_MULTIPLE_KEY: 2}, {}),
    "minLength": ({"minLength": 1}, {}),
    "maxLength": ({"maxLength": 1}, {}),
    "pattern": ({"pattern": "a"}, {}),
    "properties": ({"properties": {}}, {}),
    "patternProperties": ({"patternProperties": {}}, {}),
    "additionalProperties": ({"additionalProperties": False}, {}),
    "required": ({"required": ["a"]}, {}),
    "minProperties": ({"minProperties": 1}, {}),
    "maxProperties": ({"maxProperties": 1}, {}),
    SOME_MEMBER_KEY: ({SOME_MEMBER_KEY: {"value": True}}, {}),
    "propertyNames": ({"propertyNames": {}}, {}),
    "items": ({"items": {}}, {}),
    "tuple items": ({"items": TupleItems([{}])}, {}),
    "additionalItems": ({"items": TupleItems([{}]), "additionalItems": False}, {"items": TupleItems([{}])}),
    "prefixItems": ({"prefixItems": [{}]}, {}),
    "minItems": ({"minItems": 1}, {}),
    "maxItems": ({"maxItems": 1}, {}),
    "contains": ({"contains": {}}, {}),
    "minContains": ({"contains": {}, "minContains": 2}, {"contains": {}}),
    "maxContains": ({"contains": {}, "maxContains": 2}, {"contains": {}}),
    "uniqueItems": ({"uniqueItems": True}, {}),
    "unevaluatedProperties": ({"unevaluatedProperties": False}, {}),
    "unevaluatedItems": ({"unevaluatedItems": False}, {}),
}


def merged(schema: dict, draft: str = "2020-12") -> tuple[Merged, list[str]]:
    """The constraints `_merge_one` reads from `schema`, and the keywords it ignored (lenient)."""
    builder = Builder({}, lenient=True, layout=Layout.make("bounded", None, None), close_objects=False,
                      draft=draft, registry={})
    m = Merged(types=set(TYPES))
    builder._merge_one(m, Node(schema, "#", ""))
    return m, builder.ignored


@pytest.mark.parametrize("keyword", sorted(CASES))
def test_every_keyword_merged_changes_the_constraints(keyword: str) -> None:
    with_it, without = CASES[keyword]
    assert merged(with_it) != merged(without)


@pytest.mark.parametrize("keyword", ["contentMediaType", "contentEncoding"])
def test_draft7_content_keywords_are_refused(keyword: str) -> None:
    assert merged({keyword: "x"}, draft="7")[1] == [f"{keyword} at #/{keyword}"]
    assert merged({keyword: "x"})[1] == []


def test_the_cases_cover_the_keywords_merged() -> None:
    # every keyword that reaches _merge_one (not expanded into the conjunction, not anyOf/oneOf)
    merged_words = SUPPORTED - EXPANDED - {"anyOf", "oneOf"} | UNSUPPORTED
    assert merged_words - set(CASES) - ANNOTATIONS == set()
