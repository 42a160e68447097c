"""The keywords the front-end knows, by what it does with them."""

from __future__ import annotations

ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$anchor", "$dynamicAnchor", "$comment", "$defs", "definitions",
    "$vocabulary", "title", "description", "default", "examples", "deprecated", "readOnly",
    "writeOnly", "contentMediaType", "contentEncoding", "contentSchema", "nullable",
})
# annotations that change neither the values a schema accepts nor how references resolve in it
# (contentMediaType & co. are not: draft 7 lets them assert, and grammarc refuses them there)
INERT = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"})
UNSUPPORTED = frozenset({"unevaluatedProperties", "unevaluatedItems"})
REFS = ("$ref", "$dynamicRef", "$recursiveRef")
# private keywords of the schemas that negation builds (never in user schemas)
TYPES_KEY = "$grammarc:types"  # a set of internal TYPES (e.g. "fraction": non-integer numbers)
NOT_STRINGS_KEY = "$grammarc:notStrings"  # strings other than these
NOT_PATTERN_KEY = "$grammarc:notPattern"  # strings in which this pattern finds no match
SOME_MEMBER_KEY = "$grammarc:someMember"  # {pattern?, except?, notPatterns?, value}: a member with such a key and value
NOT_MULTIPLE_KEY = "$grammarc:notMultipleOf"  # numbers that are not multiples of this
NOT_VALID_KEY = "$grammarc:notValid"  # values this schema rejects (only beside enum/const: checked per value)
NUMBER_KINDS = frozenset({"integer", "fraction"})
EXPANDED = frozenset({"$ref", "$dynamicRef", "$recursiveRef", "allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
                      "dependencies"})
SUPPORTED = frozenset({
    "type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "format", "properties", "required",
    "additionalProperties", "patternProperties", "propertyNames", "minProperties",
    "maxProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
    "contains", "minContains", "maxContains", "uniqueItems", "allOf", "anyOf", "oneOf", "$ref", "$dynamicRef", "$recursiveRef",
    "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies",
})
TYPES = ("null", "boolean", "integer", "fraction", "string", "array", "object")
