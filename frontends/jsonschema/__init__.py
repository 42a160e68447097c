"""JSON Schema (drafts 4, 6, 7, 2019-09 and 2020-12) to grammarc IR.

`schema_to_grammar` turns a schema into a `Grammar` whose language is the JSON texts that
validate against it, laid out as the whitespace options say. The rule it follows is *never
widen*: a keyword that cannot be expressed exactly raises `UnsupportedSchemaError` naming the
keyword and its JSON pointer (``lenient=True`` ignores such keywords instead, with one warning
listing each); a schema that describes no value raises `SchemaError`.

Some valid texts are deliberately left out where the exact language is not context-free or
would be needlessly large (the grammar is then a *subset*, which keeps generation sound):

- properties appear in the schema's order, additional properties after the named ones;
- numbers under `minimum`/`maximum`/`multipleOf` and `integer` values are written without an
  exponent (``1e3``); integers may carry a zero fraction (``1.0``) as JSON Schema allows
  (``integer_fraction=False`` leaves it out: pydantic reads ``1.0`` as a float);
- `const`/`enum` numbers are matched in plain notation with optional trailing zeros; strings in
  `const`/`enum` and property names are matched as written by ``json.dumps`` (raw, or with
  ``ensure_ascii``), not in every escape spelling;
- `format` strings are matched with raw characters (see `json_formats`);
- lone surrogate escapes (``"\\ud800"``) are never matched.

Keywords rewritten into exact equivalents (see `negation.py`):

- ``not: X``: the complement of X as an anyOf of plain schemas (de Morgan over X's keywords;
  each keyword's complement stays within the type it applies to: ``not {minimum: 5}`` is
  ``{type: number, exclusiveMaximum: 5}``; ``not {type: integer}`` includes the non-integer
  numbers; ``not {enum: [scalars]}`` is the other types, the other boolean, the strings but
  these, and the number intervals between the excluded numbers). X with pattern, format,
  multipleOf, uniqueItems, additional/pattern properties, oneOf... is refused;
- ``if/then/else``: ``anyOf: [allOf: [if, then], allOf: [not if, else]]``;
- ``dependentRequired``/``dependentSchemas``/``dependencies``: per key, "absent, or the
  dependency holds" (an anyOf);
- ``maxContains``: each item is a hit (contains) or a miss (not contains), hits counted;
- ``oneOf`` whose branches are not provably disjoint: branch i becomes ``allOf: [A_i, not A_j
  for every j != i]`` (exact wherever each branch can be negated; at most 1,024 alternatives each);
- ``pattern`` with ``minLength``/``maxLength``, several patterns, ``format`` with either: the
  length range is pushed into the pattern's repetition counts where a concatenation has one
  part of variable length (``^[a-z0-9_]+$`` + maxLength 64 is ``[a-z0-9_]{1,64}``), else the
  product automaton of the patterns, the format and a character counter, emitted as
  right-linear rules (at most 1,500 states; ``format: email`` with a length is refused);
- ``minLength``/``maxLength`` too large for one string terminal (past ~500 characters): the
  grammar counts blocks of 32 characters (`long_strings.py`, exact; also for a pattern that
  is one character class repeated); other patterns or formats with such lengths are refused;
- ``multipleOf`` a/10**s: a divisibility automaton over the digits of x*10**s; with bounds,
  the multiples are listed (at most 256) or, for a half-open range around 0, the unsigned
  automaton plus the listed multiples between 0 and the bound.

Whitespace (`whitespace=`):

- ``"bounded"`` (default): between any two tokens, up to 2 spaces or tabs, optionally followed
  by one line break (``\\n`` or ``\\r\\n``) and up to 64 spaces or tabs -- enough for indent-4
  pretty printing 16 levels deep, without letting a model emit whitespace forever;
- ``"compact"``: no whitespace at all (``{"a":1,"b":[1,2]}``);
- ``"unbounded"``: any run of JSON whitespace (``[ \\t\\n\\r]*``);
- ``indent=k``: the fixed layout of ``json.dumps(x, indent=k)`` (nesting deeper than 32 levels
  is not produced);
- ``separators=(item, key)``: these exact separator strings, no other whitespace (like
  ``json.dumps``); combined with `indent` they are used as ``json.dumps`` would.

No whitespace is allowed before or after the top-level value.
"""

from __future__ import annotations

import json
from typing import Any

from grammarc.allocation import gc_paused
from grammarc.errors import SchemaError, UnsupportedSchemaError
from grammarc.ir import Grammar

from .builder import Builder
from .formats import POLICIES
from .layout import Layout

__all__ = ["schema_to_grammar"]


def schema_to_grammar(
    schema: dict | bool | str,
    *,
    lenient: bool = False,
    whitespace: str = "bounded",
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    close_objects: bool = False,
    draft: str | None = None,
    registry: dict[str, Any] | None = None,
    start: str = "start",
    integer_fraction: bool = True,
    formats: str = "known",
    property_order: str = "schema",
) -> Grammar:
    """The grammar of the JSON texts that validate against `schema` (see the module docstring).

    `schema` is a dict, a boolean, or JSON text. `draft` is one of ``"4"``, ``"6"``, ``"7"``,
    ``"2019-09"``, ``"2020-12"`` (default: from ``$schema``, else 2020-12). `registry` maps absolute URIs to schema documents that
    ``$ref`` may use (nothing is ever fetched). `close_objects=True` treats a missing
    `additionalProperties` as false. `integer_fraction=False` writes integers (``type:
    integer`` and integer `const`/`enum` values) without a zero fraction: ``1``, never ``1.0``
    (JSON Schema counts ``1.0`` as an integer, but e.g. pydantic's strict mode does not).
    """
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as exc:
            raise SchemaError(f"schema is not valid JSON: {exc}") from None
        except RecursionError:  # the decoder recurses per nesting level
            raise SchemaError("schema text is nested too deeply to read (more than Python's recursion limit)") from None
    if not isinstance(schema, (dict, bool)):
        raise SchemaError(f"a schema must be an object or a boolean, not {type(schema).__name__}")
    if whitespace not in ("bounded", "compact", "unbounded"):
        raise ValueError(f"whitespace must be 'bounded', 'compact' or 'unbounded', not {whitespace!r}")
    if indent is not None and (not isinstance(indent, int) or indent < 0):
        raise ValueError("indent must be a non-negative integer")
    if property_order not in ("schema", "any"):
        raise ValueError(f"property_order must be 'schema' or 'any', not {property_order!r}")
    if formats not in POLICIES:
        raise ValueError(f"formats must be one of {', '.join(map(repr, POLICIES))}, not {formats!r}")
    options = dict(lenient=lenient, layout=Layout.make(whitespace, indent, separators), close_objects=close_objects,
                   draft=draft, registry=registry or {}, integer_fraction=integer_fraction, formats=formats,
                   property_order=property_order)
    with gc_paused():  # see grammarc.allocation; the builder is gone before the collector resumes
        return _build(schema, options, start)


def _build(schema: dict | bool, options: dict[str, Any], start: str) -> Grammar:
    builder = Builder(schema, **options)
    try:
        return builder.build(start)
    except RecursionError:  # each nesting level of $refs and combinators takes a few Python frames
        raise UnsupportedSchemaError("schema nesting too deep to translate ($ref and combinator chains nest "
                                     "past Python's recursion limit)", "#" if builder.too_deep is None else builder.too_deep.ptr) from None
    finally:
        # its memos hold bound methods of it (reference cycles): emptied, refcounting frees
        # the builder and its working state now, not the next full collection
        vars(builder).clear()
