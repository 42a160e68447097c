"""Build the schema-to-grammar gallery of docs/schema.rst at documentation build time.

conf.py calls `write()`, which compiles every example below with grammarc as it is now and
writes ``_generated/schema_gallery.inc`` (an include, not a page). Nothing in the gallery is
pasted by hand: change the front-ends and the page changes with them.
"""

from __future__ import annotations

import json
import sys
import textwrap
import types
from pathlib import Path

import grammarc

OUT = Path(__file__).resolve().parent / "_generated" / "schema_gallery.inc"

# (title, what it shows, kind, source); kind "json" is a JSON Schema, "python" is code whose
# last class is the target.
EXAMPLES: list[tuple[str, str, str, str]] = [
    ("An object with required and optional keys",
     "Optional keys are left out entirely, never written as ``\"key\":,``; the schema's order is kept.",
     "json", """
{"type": "object",
 "properties": {"name": {"type": "string"}, "email": {"type": "string"}, "age": {"type": "integer"}},
 "required": ["name"],
 "additionalProperties": false}
"""),
    ("Enumerations and constants",
     "Any JSON value may be listed; strings are matched as ``json.dumps`` writes them.",
     "json", """
{"type": "object",
 "properties": {"status": {"enum": ["draft", "published", null, 3]}, "version": {"const": 2}},
 "required": ["status", "version"],
 "additionalProperties": false}
"""),
    ("Numeric ranges",
     "Bounds other than zero, exclusive bounds and decimals are exact regular languages.",
     "json", """
{"type": "array",
 "prefixItems": [{"type": "integer", "minimum": 18, "maximum": 120},
                 {"type": "number", "exclusiveMinimum": -1.5, "maximum": 2.25}],
 "items": false}
"""),
    ("Array lengths",
     "``minItems`` keeps its commas; large bounds are counted, not unrolled.",
     "json", """
{"type": "array", "items": {"type": "boolean"}, "minItems": 2, "maxItems": 4}
"""),
    ("String formats",
     "Formats are asserted, not treated as annotations: users want real dates from ``format: date``.",
     "json", """
{"type": "object",
 "properties": {"day": {"type": "string", "format": "date"}, "id": {"type": "string", "format": "uuid"},
                "host": {"type": "string", "format": "ipv4"}},
 "required": ["day", "id", "host"],
 "additionalProperties": false}
"""),
    ("Patterns and lengths",
     "A ``pattern`` matches anywhere unless anchored; lengths count characters, not bytes.",
     "json", """
{"type": "object",
 "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                "title": {"type": "string", "minLength": 1, "maxLength": 8}},
 "required": ["sku", "title"],
 "additionalProperties": false}
"""),
    ("Recursion through $defs",
     "Each definition becomes a named rule; references become rule references.",
     "json", """
{"$defs": {"node": {"type": "object",
                    "properties": {"value": {"type": "integer"},
                                   "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                    "required": ["value"], "additionalProperties": false}},
 "$ref": "#/$defs/node"}
"""),
    ("Unions: anyOf and a disjoint oneOf",
     "``oneOf`` is compiled only when its branches provably cannot overlap (here: different "
     "``const`` tags), since otherwise it is not the same language.",
     "json", """
{"type": "object",
 "properties": {
   "shape": {"oneOf": [
     {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
      "required": ["kind", "r"], "additionalProperties": false},
     {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
      "required": ["kind", "side"], "additionalProperties": false}]},
   "label": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]}},
 "required": ["shape", "label"],
 "additionalProperties": false}
"""),
    ("A Pydantic model: Optional, Literal, Field constraints",
     "Objects are closed unless the model allows extra fields; ``Optional`` without a default is "
     "a required key that may be ``null``.",
     "python", """
from typing import Literal, Optional
from pydantic import BaseModel, Field

class Product(BaseModel):
    name: str = Field(min_length=1, max_length=30)
    price: float = Field(gt=0, le=10000)
    currency: Literal["EUR", "USD"] = "EUR"
    discount: Optional[int] = Field(ge=0, le=90)
"""),
    ("A discriminated union with aliases",
     "pydantic needs the tag even where it has a default, so every branch requires it; "
     "aliases are the keys.",
     "python", """
from typing import Literal, Union
from pydantic import BaseModel, Field

class Cat(BaseModel):
    kind: Literal["cat"] = "cat"
    lives: int = Field(ge=0, le=9)

class Dog(BaseModel):
    kind: Literal["dog"] = "dog"
    good_boy: bool = Field(alias="goodBoy")

class Owner(BaseModel):
    pet: Union[Cat, Dog] = Field(discriminator="kind")
"""),
    ("A recursive model with dates and enums",
     "Dates are the ISO texts pydantic accepts (no year 0000, no leap seconds).",
     "python", """
import datetime, enum
from pydantic import BaseModel

class Role(str, enum.Enum):
    admin = "admin"
    user = "user"

class Person(BaseModel):
    name: str
    born: datetime.date
    role: Role
    reports: list["Person"] = []
"""),
    ("A dataclass with a tuple and a dict",
     "Dataclasses, TypedDict, NamedTuple and typing generics go through pydantic's TypeAdapter.",
     "python", """
import dataclasses

@dataclasses.dataclass
class Reading:
    position: tuple[float, float]
    labels: dict[str, int]
    tags: set[str] = dataclasses.field(default_factory=set)
"""),
]


def _target(source: str):
    module = types.ModuleType("gallery")  # a real module: dataclasses and pydantic look it up
    sys.modules["gallery"] = module
    namespace = module.__dict__
    exec(compile(source, "<gallery>", "exec"), namespace)
    classes = [v for k, v in namespace.items() if isinstance(v, type) and v.__module__ == "gallery"]
    target = classes[-1]
    for cls in classes:  # resolve forward references such as list["Person"]
        if hasattr(cls, "model_rebuild"):
            cls.model_rebuild(_types_namespace=namespace)
    return target


def _grammar(kind: str, source: str) -> grammarc.Grammar:
    if kind == "json":
        return grammarc.Grammar.from_json_schema(json.loads(source), whitespace="compact")
    return grammarc.Grammar.from_model(_target(source), whitespace="compact")


def _block(language: str, text: str) -> str:
    return f".. code-block:: {language}\n\n{textwrap.indent(text.strip(), '   ')}\n"


def render() -> str:
    parts = [".. This file is generated by docs/schema_gallery.py at build time; do not edit.\n"]
    for title, note, kind, source in EXAMPLES:
        grammar = _grammar(kind, source)
        parts.append(f"{title}\n{'-' * len(title)}\n\n{note}\n")
        if kind == "json":
            shown = json.dumps(json.loads(source), indent=2)
            parts.append(_block("json", shown))
        else:
            parts.append(_block("python", source))
        parts.append("becomes\n")
        parts.append(_block("grammarc", grammar.to_ebnf()))
    return "\n".join(parts)


def write(path: Path = OUT) -> Path:
    """Write the gallery include (only when its text changed, to keep rebuilds incremental)."""
    text = render()
    path.parent.mkdir(exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write())
