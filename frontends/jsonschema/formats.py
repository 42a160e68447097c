"""What each `format` compiles to, under the `formats=` option.

In 2019-09 and 2020-12 `format` is an annotation unless a schema opts into the
format-assertion vocabulary; drafts 4-7 leave asserting it to the implementation. grammarc
asserts the formats it implements exactly (a documented narrowing: a model asked for a
``date`` should write a date) and reads every other format as the annotation it is:

- ``formats="known"`` (default): the formats in `ASSERTED` constrain; any other name adds no
  constraint (exact under the annotation reading of every draft);
- ``formats="strict"``: the same, but a format not in `ASSERTED` is refused
  (`UnsupportedSchemaError` with its pointer): the format-assertion reading;
- ``formats="ignore"``: no format constrains anything (the exact 2019-09/2020-12 default).

What the asserted formats compile to (string formats match raw characters, see json_formats):

- RFC 3339 ``date-time``, ``date``, ``time``, ISO 8601 ``duration``, ``email``, ``hostname``,
  ``ipv4``, ``ipv6``, RFC 3986 ``uri``, ``uri-reference``, RFC 3987 ``iri``, ``iri-reference``, ``uuid``, ``json-pointer``,
  ``relative-json-pointer``: the json_formats automata;
- ``byte`` (OpenAPI): standard base64 with padding (RFC 4648 §4);
- ``int32`` / ``int64`` (OpenAPI): a number must be an integer in the signed 32/64-bit range
  (strings and other types are not affected);
- ``binary``, ``password``, ``float``, ``double`` (OpenAPI): no constraint (any string, any number).
"""

from __future__ import annotations

from functools import lru_cache

from grammarc.automata import prebuilt
from grammarc.frontends import json_formats as jf

POLICIES = ("known", "strict", "ignore")

JSON_FORMATS = frozenset({"date-time", "date", "time", "duration", "email", "hostname", "ipv4", "ipv6",
                          "uri", "uri-reference", "iri", "iri-reference", "uuid", "json-pointer", "relative-json-pointer"})
STRING_PATTERNS = {
    "byte": r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?",
}
INTEGER_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
NO_CONSTRAINT = frozenset({"binary", "password", "float", "double"})
ASSERTED = JSON_FORMATS | frozenset(STRING_PATTERNS) | frozenset(INTEGER_RANGES) | NO_CONSTRAINT


def asserted(name: str, policy: str) -> bool | None:
    """Whether format `name` constrains under `policy`; None: refuse it (strict, unknown)."""
    if policy == "ignore":
        return False
    if name in ASSERTED:
        return name not in NO_CONSTRAINT
    return None if policy == "strict" else False


def is_string_format(name: str) -> bool:
    return name in JSON_FORMATS or name in STRING_PATTERNS


# -- the string formats as json_formats renders them ------------------------------------------

@lru_cache(maxsize=None)  # one entry per asserted format
def string_regex(name: str) -> str:
    """Regex of the complete JSON string (quotes included) of an asserted string format: the
    one stored with its automaton (grammarc.automata.prebuilt), else `rendered_regex`."""
    stored = prebuilt.named(name)
    return stored if stored is not None else rendered_regex(name)


def rendered_regex(name: str) -> str:
    """`string_regex` rendered from the format's definition (json_formats): what the store
    holds (tests/test_prebuilt.py)."""
    if name in JSON_FORMATS:
        return jf.format_regex(name)
    return '"' + jf.search_regex("^(?:" + STRING_PATTERNS[name] + ")$", escapes=False) + '"'


def string_tree(name: str):
    """The json_formats syntax tree of an asserted string format (for intersections)."""
    if name in JSON_FORMATS:
        return jf.format_tree(name)
    return jf.search_tree("^(?:" + STRING_PATTERNS[name] + ")$")


def plain_regex(name: str) -> str:
    """Python regex (for `re.fullmatch`) of the decoded strings of an asserted string format."""
    if name in JSON_FORMATS:
        return jf.format_plain_regex(name)
    return "(?:" + STRING_PATTERNS[name] + ")"
