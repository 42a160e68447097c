"""Pydantic models, dataclasses and typing types to grammarc IR, through JSON Schema.

The route is ``pydantic JSON Schema -> frontends.jsonschema``; pydantic already knows how to
describe models, dataclasses, ``TypedDict``, ``NamedTuple``, enums, ``Literal`` and typing
generics, and aliases are in its schema. What its schema says is not always what pydantic
*validates*, so a schema generator subclass (`PydanticSchema`) rewrites the parts where the two
differ. The rule is the JSON Schema front-end's: the grammar may be narrower than what pydantic
accepts (generation stays sound) but never wider; what cannot be kept sound raises
`UnsupportedSchemaError` naming the field.

Where pydantic's schema and its validator differ, and what we emit instead:

- objects: closed (``close_objects=True``) unless the model allows extra fields, which pydantic
  writes as ``additionalProperties: true``;
- discriminated unions: pydantic needs the tag in the input even where the tag field has a
  default, so each branch requires its tag, and the branches are an ``anyOf`` (disjoint by
  their tags); callable and nested discriminators are refused;
- ``datetime``/``date``/``time``/``timedelta``: the standard formats allow year 0000 and leap
  seconds, which pydantic rejects, so these are patterns of the ISO 8601 texts pydantic accepts
  (datetimes with an offset unless the type is naive; at most six fraction digits; simple
  durations);
- ``set``/``frozenset``: pydantic removes duplicates instead of rejecting them, so
  ``uniqueItems`` is dropped (kept, and refused, where a minimum length makes duplicates matter);
- ``dict[int, T]``: keys are integer texts (``propertyNames``); other non-string keys refused;
- ``bytes``: any string (pydantic reads JSON strings as UTF-8 bytes);
- integers are written without a zero fraction (``integer_fraction=False``): JSON Schema counts
  ``1.0`` as an integer, but pydantic reads it as a float (rejected in strict mode and past
  ``2**63``); plain integer numerals of any size validate exactly, strict or not;
- temporal bounds (``gt=datetime(...)``, ``PastDate``) are refused.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from grammarc.errors import UnsupportedSchemaError
from grammarc.ir import Grammar

from .jsonschema import schema_to_grammar

_YEAR = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9][0-9]|[0-9][1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
DATE = (
    f"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    f"|02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)"
)
OFFSET = "(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
CLOCK = "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,6})?"
DURATION = "P(?:[0-9]{1,4}D|(?:[0-9]{1,4}D)?T[0-9]{1,2}H[0-9]{1,2}M[0-9]{1,2}(?:\\.[0-9]{1,6})?S)"
INT_KEY = "^-?(?:0|[1-9][0-9]*)$"

# keys of temporal core schemas that our patterns account for; any other key is a constraint
_TEMPORAL_KEYS = {"type", "ref", "metadata", "serialization", "microseconds_precision", "tz_constraint", "strict"}


def _pydantic():
    try:
        import pydantic
        from pydantic.json_schema import GenerateJsonSchema
    except ImportError:  # pragma: no cover - pydantic is a dependency of this front-end only
        raise UnsupportedSchemaError("grammarc needs pydantic (pip install pydantic) for models and typing types") from None
    return pydantic, GenerateJsonSchema


def _refuse(what: str) -> typing.NoReturn:
    raise UnsupportedSchemaError(what)


def _make_generator():
    _, GenerateJsonSchema = _pydantic()

    class PydanticSchema(GenerateJsonSchema):
        """pydantic's JSON Schema, rewritten where pydantic validates something else (see module doc)."""

        def _temporal(self, schema, kind: str) -> dict:
            extra = sorted(set(schema) - _TEMPORAL_KEYS)
            if extra:
                _refuse(f"{kind} constraints ({', '.join(extra)}) are not supported")
            return {"type": "string"}

        def datetime_schema(self, schema):
            out = self._temporal(schema, "datetime")
            tz = schema.get("tz_constraint")
            offset = "" if tz == "naive" else OFFSET
            if isinstance(tz, int) and not isinstance(tz, bool):
                _refuse("datetimes with a fixed UTC offset are not supported")
            return {**out, "pattern": f"^{DATE}T{CLOCK}{offset}$"}

        def date_schema(self, schema):
            return {**self._temporal(schema, "date"), "pattern": f"^{DATE}$"}

        def time_schema(self, schema):
            out = self._temporal(schema, "time")
            tz = schema.get("tz_constraint")
            if tz not in (None, "naive", "aware"):
                _refuse("times with a fixed UTC offset are not supported")
            offset = {"naive": "", "aware": OFFSET}.get(tz, f"{OFFSET}?")
            return {**out, "pattern": f"^{CLOCK}{offset}$"}

        def timedelta_schema(self, schema):
            return {**self._temporal(schema, "timedelta"), "pattern": f"^{DURATION}$"}

        def uuid_schema(self, schema):
            version = schema.get("version")
            if version is None:
                return {"type": "string", "format": "uuid"}
            if version not in range(1, 9):
                _refuse(f"UUID version {version} is not supported")
            h = "[0-9a-fA-F]"
            # pydantic's UuidVersion adds format "uuid<version>" afterwards; `_drop_uuid_formats` removes it
            return {"type": "string",
                    "pattern": f"^{h}{{8}}-{h}{{4}}-{version}{h}{{3}}-[89abAB]{h}{{3}}-{h}{{12}}$"}

        def bytes_schema(self, schema):
            if self._config.config_dict.get("val_json_bytes", "utf8") != "utf8":
                _refuse("bytes read as base64 (val_json_bytes) are not supported")
            out: dict = {"type": "string"}
            self.update_with_validations(out, schema, self.ValidationsMapping.string)
            return out

        def complex_schema(self, schema):
            _refuse("complex numbers are not supported (pydantic's schema says any string)")

        def decimal_schema(self, schema):
            # pydantic's schema adds a string pattern with a lookahead; a JSON number is also valid
            out: dict = {"type": "number"}
            extra = sorted(set(schema) & {"max_digits", "decimal_places", "multiple_of"})
            if extra:
                _refuse(f"Decimal constraints ({', '.join(extra)}) are not supported")
            self.update_with_validations(out, schema, self.ValidationsMapping.numeric)
            return out

        def url_schema(self, schema):
            _refuse("URL types are not supported (pydantic's URL parser is not RFC 3986)")

        def multi_host_url_schema(self, schema):
            _refuse("URL types are not supported (pydantic's URL parser is not RFC 3986)")

        def _common_set_schema(self, schema):
            out = super()._common_set_schema(schema)
            if out.get("minItems", 0) <= 1:
                out.pop("uniqueItems", None)  # pydantic drops duplicates instead of rejecting them
            return out

        def dict_schema(self, schema):
            # pydantic >= 2.12 builds dict schemas here (no `_common_dict_schema` any more)
            out = super().dict_schema(schema)
            keys = schema.get("keys_schema", {"type": "any"})
            kind = keys.get("type")
            if kind == "int" and set(keys) <= {"type", "metadata", "strict"}:
                out["propertyNames"] = {"pattern": INT_KEY}
            elif kind not in ("str", "any") and "propertyNames" not in out and "patternProperties" not in out:
                _refuse(f"dict keys of type {kind!r} are not supported (only str and int)")
            return out

        def tagged_union_schema(self, schema):
            tag = schema.get("discriminator")
            if not isinstance(tag, str):
                _refuse("only discriminators naming one field are supported (not callables or paths)")
            out = super().tagged_union_schema(schema)
            # pydantic reads the tag before anything else: it must be present, defaults or not
            branches = [{"allOf": [branch, {"required": [tag]}]} for branch in out["oneOf"]]
            return {k: v for k, v in out.items() if k not in ("oneOf", "discriminator")} | {"anyOf": branches}

    return PydanticSchema


def _drop_uuid_formats(node: Any) -> Any:
    """Remove ``format: uuid4`` (etc.) where our pattern already says the version."""
    if isinstance(node, dict):
        out = {k: _drop_uuid_formats(v) for k, v in node.items()}
        fmt = out.get("format")
        if isinstance(fmt, str) and fmt[:4] == "uuid" and fmt[4:].isdigit() and "pattern" in out:
            del out["format"]
        return out
    if isinstance(node, list):
        return [_drop_uuid_formats(v) for v in node]
    return node


def _describe(target: Any) -> str:
    if isinstance(target, type) and typing.get_origin(target) is None:
        return target.__qualname__
    return repr(target).replace("typing.", "")


def model_json_schema(target: Any) -> dict:
    """The JSON Schema we compile for `target` (validation mode, pydantic's semantics)."""
    pydantic, _ = _pydantic()
    generator = _make_generator()
    try:
        if isinstance(target, type) and issubclass(target, pydantic.BaseModel):
            return _drop_uuid_formats(target.model_json_schema(schema_generator=generator))
        return _drop_uuid_formats(pydantic.TypeAdapter(target).json_schema(schema_generator=generator))
    except UnsupportedSchemaError as exc:
        reason = exc.message
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticInvalidForJsonSchema,
            pydantic.PydanticUserError, TypeError) as exc:
        reason = "not supported: " + str(exc).splitlines()[0]
    except _core_schema_error() as exc:  # pydantic-core cannot build a validator (e.g. a lookahead pattern)
        reason = "pydantic cannot validate it: " + _last_line(str(exc))
    field = _failing_field(target, generator)
    if field is None:
        raise UnsupportedSchemaError(f"{_describe(target)}: {reason}")
    key, name, annotation = field
    raise UnsupportedSchemaError(f"{_describe(target)}.{name} ({_describe(annotation)}): {reason}",
                                 f"#/properties/{key}")


def _fields(target: Any) -> list[tuple[str, str, Any, Any]]:
    """(JSON key, field name, annotation, annotation with the field's own constraints)."""
    pydantic, _ = _pydantic()
    if isinstance(target, type) and issubclass(target, pydantic.BaseModel):
        return [(info.alias or name, name, info.annotation, typing.Annotated[info.annotation, info])
                for name, info in target.model_fields.items()]
    if dataclasses.is_dataclass(target):
        return [(f.name, f.name, f.type, f.type) for f in dataclasses.fields(target)]
    try:
        hints = typing.get_type_hints(target, include_extras=True) if isinstance(target, type) else {}
    except Exception:
        return []
    return [(name, name, hint, hint) for name, hint in hints.items()]


def _failing_field(target: Any, generator) -> tuple[str, str, Any] | None:
    """(key, name, annotation) of the first field that fails on its own, to point at it."""
    pydantic, _ = _pydantic()
    config = getattr(target, "model_config", None) or getattr(target, "__pydantic_config__", None)
    is_model = isinstance(target, type) and issubclass(target, pydantic.BaseModel)
    for key, name, annotation, constrained in _fields(target):
        try:
            if is_model:  # a one-field model keeps the config (val_json_bytes, ...) in force
                info = target.model_fields[name]
                probe = pydantic.create_model(target.__name__, __config__=config, **{name: (info.annotation, info)})
                probe.model_json_schema(schema_generator=generator)
                continue
            try:
                adapter = pydantic.TypeAdapter(constrained, config=config)
            except pydantic.PydanticUserError:  # a model type carries its own config
                adapter = pydantic.TypeAdapter(constrained)
            adapter.json_schema(schema_generator=generator)
        except Exception:
            return key, name, annotation
    return None


def _core_schema_error() -> type:
    try:
        from pydantic_core import SchemaError
    except ImportError:  # pragma: no cover - pydantic always brings pydantic-core
        return ()
    return SchemaError


def _last_line(text: str) -> str:
    """The line of a pydantic-core error that says what is wrong (its last non-empty one)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("error: ") if lines else text


def _classes(target: Any) -> dict[str, Any]:
    """Models and dataclasses reachable from `target` through field types, by class name
    (pydantic names its ``$defs`` after them)."""
    found: dict[str, Any] = {}
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, type) and (_is_model(node) or dataclasses.is_dataclass(node)):
            if node.__name__ in found:
                continue
            found[node.__name__] = node
            try:  # resolves string annotations (``from __future__ import annotations``)
                stack.extend(typing.get_type_hints(node).values())
            except Exception:
                stack.extend(annotation for _, _, annotation, _ in _fields(node))
        else:
            stack.extend(typing.get_args(node))
    return found


def _is_model(cls: Any) -> bool:
    pydantic, _ = _pydantic()
    return isinstance(cls, type) and issubclass(cls, pydantic.BaseModel)


def python_location(target: Any, pointer: str) -> str | None:
    """``Model.field (type)`` for a JSON pointer into `target`'s schema; None when it names no field.

    ``#/properties/p/format`` -> ``A.p (Path)``; ``#/$defs/B/properties/s`` -> ``B.s (SecretStr)``.
    """
    parts = pointer.removeprefix("#").strip("/").split("/")
    owner = target
    if len(parts) >= 2 and parts[0] == "$defs":
        owner = _classes(target).get(parts[1])
        parts = parts[2:]
    if owner is None or len(parts) < 2 or parts[0] != "properties":
        return None
    key = parts[1].replace("~1", "/").replace("~0", "~")
    for json_key, name, annotation, _ in _fields(owner):
        if json_key == key:
            return f"{_describe(owner)}.{name} ({_describe(annotation)})"
    return None


def field_descriptions(target: Any) -> list[tuple[str, str]]:
    """``(Model.field, description)`` for every field with a description (``Field(description=...)``
    or a dataclass field's ``metadata["description"]``) in `target` and the classes it uses."""
    out = []
    for cls in _classes(target).values():
        if _is_model(cls):
            described = [(name, info.description) for name, info in cls.model_fields.items()]
        else:
            described = [(f.name, f.metadata.get("description")) for f in dataclasses.fields(cls)]
        out.extend((f"{cls.__qualname__}.{name}", text) for name, text in described if text)
    return out


def description_comments(target: Any) -> str:
    """The field descriptions of `target` as ``.ebnf`` comment lines (empty when there are none):
    what the grammar cannot say about a field, kept next to it for the reader and the prompt."""
    lines = []
    for where, text in field_descriptions(target):
        text = " ".join(str(text).split()).replace("*)", "* )").replace("(*", "( *")
        lines.append(f"(* {where}: {text} *)\n")
    return "".join(lines)


def model_to_grammar(target: Any, **options) -> Grammar:
    """The JSON texts that pydantic validates into `target` (a subset where not exact).

    `target` is a ``BaseModel`` subclass, a dataclass, ``TypedDict``, ``NamedTuple``, ``Enum``
    or any typing type pydantic understands. `options` go to `schema_to_grammar` (whitespace,
    indent, separators, lenient); objects are closed unless a model allows extra fields.
    """
    options.setdefault("close_objects", True)
    options.setdefault("integer_fraction", False)  # pydantic reads 1.0 as a float
    schema = model_json_schema(target)  # its refusals name the field already
    try:
        return schema_to_grammar(schema, **options)
    except UnsupportedSchemaError as exc:  # name the Python field, not only the JSON pointer
        where = python_location(target, exc.pointer)
        if where is None:
            raise
        raise UnsupportedSchemaError(f"{where}: {exc.message}", exc.pointer) from None
