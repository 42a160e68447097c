"""JSON Schema drafts: which one a document declares, and what its keywords mean there.

Every document is read (see `documents.py`) into one internal reading, the 2020-12 keywords
plus a few compatibility forms, so the rest of the front-end never asks which draft it is in:

- a keyword that the document's draft does not define is ignored, as the draft says (``const``
  in draft-04, ``if`` in draft-06, ``prefixItems`` before 2020-12, ``additionalItems`` in
  2020-12, ...);
- draft-04 ``exclusiveMinimum: true`` next to ``minimum: m`` becomes ``exclusiveMinimum: m``;
- drafts 4-7 ignore the siblings of ``$ref`` (only ``$ref`` is kept);
- ``items: [...]`` before 2020-12 becomes a `TupleItems` list (its ``additionalItems`` kept);
- draft-04 identifies resources with ``id``, the others with ``$id``; ``$anchor`` exists from
  2019-09 on, before that an ``$id``/``id`` of the form ``#name`` is the anchor.

``dependencies`` keeps its draft-7 meaning in every draft (2019-09 split it in two, and the
test suite's ``optional/dependencies-compatibility`` files expect the old keyword to work).
Draft-04 alone does not count ``1.0`` as an integer (the builder reads that from the root
document's dialect).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from grammarc.errors import UnsupportedSchemaError

DRAFTS = ("4", "6", "7", "2019-09", "2020-12")
DEFAULT_DRAFT = "2020-12"  # when `$schema` is absent or names no draft we know

_COMMON = frozenset({
    "type", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "pattern", "format", "properties", "required", "additionalProperties",
    "patternProperties", "minProperties", "maxProperties", "items", "additionalItems", "minItems",
    "maxItems", "uniqueItems", "allOf", "anyOf", "oneOf", "not", "$ref", "dependencies", "nullable",
})
_ADDED = {
    "4": frozenset(),
    "6": frozenset({"const", "contains", "propertyNames"}),
    "7": frozenset({"if", "then", "else"}),
    "2019-09": frozenset({"dependentRequired", "dependentSchemas", "minContains", "maxContains",
                          "unevaluatedProperties", "unevaluatedItems", "$recursiveRef"}),
    "2020-12": frozenset({"prefixItems", "$dynamicRef"}),
}
_REMOVED = {"2020-12": frozenset({"additionalItems", "$recursiveRef"})}


def _vocabulary(draft: str) -> frozenset:
    words: set = set(_COMMON)
    for name in DRAFTS[: DRAFTS.index(draft) + 1]:
        words |= _ADDED[name]
        words -= _REMOVED.get(name, frozenset())
    return frozenset(words)


ALL_KEYWORDS = frozenset().union(*(_vocabulary(d) for d in DRAFTS), _ADDED["2020-12"])
# per draft, computed once: reading a document asks `ignored` of every key of every schema
_KEYWORDS = {d: _vocabulary(d) for d in DRAFTS}
_IGNORED = {d: ALL_KEYWORDS - words for d, words in _KEYWORDS.items()}


@dataclass(frozen=True)
class Dialect:
    """What a draft's keywords mean (see the module docstring)."""

    draft: str
    # keywords some draft gives a meaning that this one does not: dropped on reading (a field,
    # not a property: reading a document asks it of every schema object)
    ignored: frozenset = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ignored", _IGNORED.get(self.draft, frozenset()))

    def at_least(self, other: str) -> bool:
        return DRAFTS.index(self.draft) >= DRAFTS.index(other)

    @property
    def keywords(self) -> frozenset:
        return _KEYWORDS[self.draft]

    @property
    def id_keyword(self) -> str:
        return "id" if self.draft == "4" else "$id"

    @property
    def ref_overrides(self) -> bool:
        """Drafts 4-7: a schema with ``$ref`` is the referenced schema, its siblings ignored."""
        return not self.at_least("2019-09")

    @property
    def fragment_ids(self) -> bool:
        """Drafts 4-7: ``$id: "#name"`` names a plain-name anchor (later: ``$anchor``)."""
        return not self.at_least("2019-09")

    @property
    def integer_fraction(self) -> bool:
        """Whether ``1.0`` is an integer (draft-06 on; draft-04 says it is not)."""
        return self.draft != "4"


_SPELLINGS = {"4": "4", "04": "4", "draft4": "4", "draft-04": "4", "draft-4": "4",
              "6": "6", "06": "6", "draft6": "6", "draft-06": "6", "draft-6": "6",
              "7": "7", "07": "7", "draft7": "7", "draft-07": "7", "draft-7": "7",
              "2019-09": "2019-09", "draft2019-09": "2019-09", "2020-12": "2020-12",
              "draft2020-12": "2020-12"}


def dialect_named(draft: str) -> Dialect:
    """The `draft=` option: ``"4"``, ``"6"``, ``"7"``, ``"2019-09"``, ``"2020-12"`` (or "draft-07"...)."""
    name = _SPELLINGS.get(str(draft).lower()) if isinstance(draft, (str, int)) else None
    if name is None:
        raise ValueError(f"draft must be one of {', '.join(DRAFTS)}, not {draft!r}")
    return Dialect(name)


_META = re.compile(r"^https?://json-schema\.org/(?:draft-0?(\d)|draft/(\d{4}-\d{2}))/(?:hyper-)?schema#?$")


def declared_dialect(uri, registry: dict) -> Dialect | None:
    """The dialect a ``$schema`` value names; None when it names none we know (the caller's default).

    Draft-03 and custom meta-schemas (from `registry`) whose ``$vocabulary`` leaves out the
    validation or applicator vocabulary are refused: their keywords mean other things.
    """
    if not isinstance(uri, str):
        return None
    found = _META.match(uri.strip())
    if found:
        number, dated = found.groups()
        if dated:
            return Dialect(dated) if dated in DRAFTS else None
        if number == "3":
            raise UnsupportedSchemaError("draft-03 schemas are not supported (required: true, disallow, extends)", "#/$schema")
        number = "4" if number == "5" else number  # "draft-05" was never published; it is read as draft-04
        return Dialect(number) if number in DRAFTS else None
    if uri.strip().rstrip("#") in ("http://json-schema.org/schema", "https://json-schema.org/schema"):
        return Dialect(DEFAULT_DRAFT)
    meta = registry.get(uri.strip().rstrip("#")) or registry.get(uri.strip())
    if not isinstance(meta, dict):
        return None
    vocab = meta.get("$vocabulary")
    if isinstance(vocab, dict):
        needed = ("validation", "applicator")
        missing = [v for v in needed if not any(k.endswith("/vocab/" + v) for k in vocab)]
        if missing:
            raise UnsupportedSchemaError(f"meta-schema {uri!r} leaves out the {' and '.join(missing)} vocabulary", "#/$schema")
    if meta.get("$schema") == uri:
        return None
    return declared_dialect(meta.get("$schema"), {})


class TupleItems(list):
    """``items`` in its array form (drafts before 2020-12): schemas for the leading items,
    with ``additionalItems`` for the rest (2020-12 spells this ``prefixItems``/``items``)."""
