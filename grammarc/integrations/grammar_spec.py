"""Per-request grammars for servers: parse, check, build and cache them.

A serving engine hands each request's grammar over as plain JSON data (vLLM:
``SamplingParams.extra_args["grammarc"]``; over HTTP, the same object as JSON text), for
example::

    {"json_schema": {"type": "object", ...}, "whitespace": "compact"}
    {"regex": "[a-z]+@example\\\\.com"}
    {"ebnf": "start ::= ...;", "start": "start"}
    {"gbnf": "root ::= ..."}      {"lark": "start: ..."}      {"stdlib": "json"}

`parse_spec` checks that data and turns it into a `GrammarSpec`: hashable, with the
source in canonical form, so equal grammars are equal keys. `compiled_for` compiles a
spec once per process (bounded LRU), so every request with that grammar shares one
`CompiledGrammar` (and, through it, one token index per vocabulary). Every mistake in a
request is a `GrammarSpecError` (a `ValueError`, which servers answer with HTTP 400) that
says which key is wrong and why.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Mapping

from grammarc import stdlib_grammars
from grammarc.errors import GrammarcError
from grammarc.grammar import Grammar
from grammarc.lowering.compiler import CompiledGrammar

__all__ = [
    "EXTRA_ARGS_KEY",
    "KINDS",
    "GrammarSpec",
    "GrammarSpecError",
    "compiled_for",
    "grammar_for",
    "parse_spec",
    "spec_from_extra_args",
]

EXTRA_ARGS_KEY = "grammarc"
MAX_SOURCE_CHARS = 1_000_000  # a request's grammar text; larger ones are refused up front
CACHE_SIZE = 64  # distinct compiled grammars kept per process
WHERE = f"extra_args[{EXTRA_ARGS_KEY!r}]"  # how errors name the request's grammar data

# Grammar kinds and the options each accepts next to it.
KINDS: dict[str, frozenset[str]] = {
    "json_schema": frozenset(
        {"whitespace", "indent", "separators", "close_objects", "draft", "integer_fraction"}
    ),
    "regex": frozenset(),
    "ebnf": frozenset({"start"}),
    "gbnf": frozenset(),
    "lark": frozenset({"start"}),
    "stdlib": frozenset({"start"}),
}


class GrammarSpecError(GrammarcError, ValueError):
    """A request's grammar is malformed, or names a grammar that does not compile."""


@dataclass(frozen=True)
class GrammarSpec:
    """One request's grammar: its kind, canonical source and options (sorted by name).

    `source` is the grammar text, the regex, the stdlib name, or for ``json_schema`` the
    schema as compact JSON text with its key order kept (property order is meaningful).
    """

    kind: str
    source: str
    options: tuple[tuple[str, Any], ...] = ()

    def describe(self) -> str:
        """A short label for logs: never the whole (possibly huge) source."""
        digest = hashlib.sha256(self.source.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        return f"{self.kind} grammar ({len(self.source)} chars, sha256 {digest})"


def spec_from_extra_args(extra_args: Mapping[str, Any] | None) -> GrammarSpec | None:
    """The spec under ``extra_args["grammarc"]``; None when the request has none."""
    if not extra_args or EXTRA_ARGS_KEY not in extra_args:
        return None
    return parse_spec(extra_args[EXTRA_ARGS_KEY])


def parse_spec(value: Any, *, where: str = WHERE) -> GrammarSpec:
    """Check a request's grammar data and return it as a `GrammarSpec`.

    `value` is the object, or its JSON text: vLLM's HTTP API (``vllm_xargs``) carries
    only strings and numbers.
    """
    kinds = ", ".join(KINDS)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise GrammarSpecError(
                f"{where} is a string, so it must be the JSON text of an object with one of the keys "
                f"{kinds}: {error}"
            ) from None
        if not isinstance(value, Mapping):
            raise GrammarSpecError(f"{where} is JSON text of {_type_name(value)}; it must be of an object with one of the keys {kinds}")
    if not isinstance(value, Mapping):
        raise GrammarSpecError(
            f"{where} must be an object with one of the keys {kinds}; got {_type_name(value)}"
        )
    named = [key for key in value if key in KINDS]
    if not named:
        keys = ", ".join(map(repr, value)) or "none"
        raise GrammarSpecError(f"{where} names no grammar (keys: {keys}); give one of {kinds}")
    if len(named) > 1:
        raise GrammarSpecError(f"{where} names {len(named)} grammars ({', '.join(named)}); give exactly one")
    kind = named[0]
    allowed = KINDS[kind]
    for key in value:
        if key != kind and key not in allowed:
            choices = ", ".join(sorted(allowed)) or "none"
            raise GrammarSpecError(f"{where}: unknown key {key!r} next to {kind!r}; allowed options: {choices}")
    source = _source(kind, value[kind], f"{where}[{kind!r}]")
    options = []
    for key in sorted(k for k in value if k != kind):
        options.append((key, _option(key, value[key], f"{where}[{key!r}]")))
    return GrammarSpec(kind, source, tuple(options))


def _source(kind: str, value: Any, where: str) -> str:
    if kind == "json_schema":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                raise GrammarSpecError(f"{where} is not valid JSON: {error}") from None
        if not isinstance(value, (dict, bool)):
            raise GrammarSpecError(f"{where} must be a schema (an object or a boolean), got {_type_name(value)}")
        try:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as error:
            raise GrammarSpecError(f"{where} is not JSON data: {error}") from None
    elif isinstance(value, str):
        text = value
    else:
        raise GrammarSpecError(f"{where} must be a string, got {_type_name(value)}")
    if len(text) > MAX_SOURCE_CHARS:
        raise GrammarSpecError(f"{where} has {len(text):,} characters; the limit is {MAX_SOURCE_CHARS:,}")
    if kind == "stdlib" and text not in _stdlib_names():
        raise GrammarSpecError(f"{where}: no stdlib grammar named {text!r}; available: {', '.join(_stdlib_names())}")
    return text


def _option(key: str, value: Any, where: str) -> Any:
    """Options are checked for shape here; their values are checked by the frontend."""
    if key == "start":
        if not isinstance(value, str) or not value:
            raise GrammarSpecError(f"{where} must be a rule name (a non-empty string), got {value!r}")
        return value
    if key == "separators":
        if not (isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(s, str) for s in value)):
            raise GrammarSpecError(f"{where} must be a list of two strings (item, key), got {value!r}")
        return tuple(value)
    if key in ("close_objects", "integer_fraction") and not isinstance(value, bool):
        raise GrammarSpecError(f"{where} must be true or false, got {value!r}")
    if key == "indent" and not (value is None or (isinstance(value, int) and not isinstance(value, bool))):
        raise GrammarSpecError(f"{where} must be an integer or null, got {value!r}")
    if key in ("whitespace", "draft") and not isinstance(value, str):
        raise GrammarSpecError(f"{where} must be a string, got {value!r}")
    return value


@functools.cache
def _stdlib_names() -> tuple[str, ...]:
    from grammarc import stdlib_grammars

    return tuple(stdlib_grammars.names())


def grammar_for(spec: GrammarSpec) -> Grammar:
    """Translate a spec to a `Grammar` (not cached; see `compiled_for`)."""
    options = dict(spec.options)
    where = f"{WHERE}[{spec.kind!r}]"
    try:
        if spec.kind == "json_schema":
            return Grammar.from_json_schema(spec.source, **options)
        if spec.kind == "regex":
            return Grammar.from_regex(spec.source)
        if spec.kind == "ebnf":
            return Grammar.from_ebnf(spec.source, name="<request ebnf>", **options)
        if spec.kind == "stdlib":
            return stdlib_grammars.load(spec.source, **options)
        if spec.kind == "gbnf":
            return Grammar.from_gbnf(spec.source, name="<request gbnf>", **options)
        return Grammar.from_lark(spec.source, name="<request lark>", **options)
    except GrammarSpecError:
        raise
    except (GrammarcError, ValueError, KeyError, TypeError) as error:
        raise GrammarSpecError(f"{where}: {_message(error)}") from None


@functools.lru_cache(maxsize=CACHE_SIZE)
def compiled_for(spec: GrammarSpec) -> CompiledGrammar:
    """The compiled grammar of a spec, built once per process for equal specs."""
    grammar = grammar_for(spec)
    try:
        return grammar.compile()
    except (GrammarcError, ValueError) as error:
        raise GrammarSpecError(f"{WHERE}[{spec.kind!r}]: {_message(error)}") from None


def _message(error: BaseException) -> str:
    if isinstance(error, KeyError) and error.args:
        return str(error.args[0])
    return str(error) or type(error).__name__


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__
