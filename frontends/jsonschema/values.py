"""JSON values as the schema sees them: equality, kinds (integer vs fraction), keyword operands."""

from __future__ import annotations

import json
import math
from decimal import Decimal

from grammarc.errors import SchemaError

def json_equal(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return dec(a) == dec(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def json_key(v):
    """A hashable key with ``json_key(a) == json_key(b)`` exactly when ``json_equal(a, b)``:
    enum membership in constant time (equal Decimals hash alike, 1 and 1.0 included)."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", dec(v))
    if isinstance(v, list):
        return ("l", tuple(json_key(x) for x in v))
    if isinstance(v, dict):
        return ("d", frozenset((k, json_key(x)) for k, x in v.items()))
    return (type(v).__name__, v)


def dec(x) -> Decimal:
    if isinstance(x, float):
        if math.isinf(x) or math.isnan(x):
            raise SchemaError(f"non-finite number {x!r}")
        return Decimal(repr(x))
    return Decimal(x)


def json_kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "integer" if dec(value) == dec(value).to_integral_value() else "fraction"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise SchemaError(f"not a JSON value: {value!r}")


def type_set(value, ptr: str) -> set[str]:
    names = value if isinstance(value, list) else [value]
    out: set[str] = set()
    for name in names:
        if name == "number":
            out |= {"integer", "fraction"}
        elif name in ("null", "boolean", "integer", "string", "array", "object"):
            out.add(name)
        else:
            raise SchemaError(f"unknown type {name!r}", ptr)
    return out


def number_value(value, ptr: str) -> Decimal:
    if isinstance(value, Decimal):  # bounds that negation computed
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SchemaError(f"expected a number, got {json.dumps(value)}", ptr)
    return dec(value)


def count_value(value, ptr: str) -> int:
    if isinstance(value, float) and value == int(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaError(f"expected a non-negative integer, got {json.dumps(value)}", ptr)
    return value
