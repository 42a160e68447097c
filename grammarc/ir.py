"""The intermediate representation every front-end produces and every back-end consumes.

A `Grammar` is an ordered mapping from rule names to expressions plus a start rule. The
expressions form a small closed set of frozen dataclasses. Source spans ride along for
error messages but never take part in equality or hashing, so two grammars are equal
exactly when they denote the same rules written the same way.

The meaning of each node (DESIGN.md §4): the language of a grammar is a set of UTF-8 byte
strings; there is no implicit whitespace and no lexer priority.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Literal as TypingLiteral, Mapping, Union

from .errors import Span

RegexMode = TypingLiteral["match", "early", "complement"]


@dataclass(frozen=True)
class Literal:
    """Exactly this text (UTF-8 encoded). The empty literal denotes the empty string."""

    text: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Regex:
    """A regular-expression terminal, `pattern` in grammarc's regex syntax (already unescaped).

    mode "match" (``#'R'``): every string that R matches in full, of every length.
    mode "early" (``#e'R'``): the strings R matches in full that have no proper prefix R matches.
    mode "complement" (``#ex'R'``): non-empty text that contains no match of R anywhere.
    """

    pattern: str
    mode: RegexMode = "match"
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Substrings:
    """Any substring of `text` (the empty string included), cut at character boundaries."""

    text: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Ref:
    """A reference to the rule called `name`."""

    name: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Seq:
    """Concatenation. The empty sequence denotes the empty string."""

    items: tuple["Expr", ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Alt:
    """Union of at least one alternative."""

    items: tuple["Expr", ...]
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Repeat:
    """`item` repeated between `min` and `max` times (`max=None`: unbounded)."""

    item: "Expr"
    min: int = 0
    max: int | None = None
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class AnyToken:
    """``any!``: exactly one vocabulary token (special tokens excluded).

    Without a vocabulary (``Grammar.accepts``) it stands for any non-empty byte string.
    """

    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Except:
    """``except!(X)`` / ``except!(X, n)``: non-empty text in which no string of X occurs.

    `item` is a `Literal` or a `Ref` to a rule that expands to an alternation of literals.
    `limit`, when given, bounds the text to at most that many vocabulary tokens; it has no
    effect on text checked without a vocabulary.
    """

    item: Union[Literal, Ref]
    limit: int | None = None
    span: Span | None = field(default=None, compare=False, repr=False)


Expr = Union[Literal, Regex, Substrings, Ref, Seq, Alt, Repeat, AnyToken, Except]
EXPR_TYPES = (Literal, Regex, Substrings, Ref, Seq, Alt, Repeat, AnyToken, Except)


def children(expr: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of `expr`."""
    if isinstance(expr, (Seq, Alt)):
        return expr.items
    if isinstance(expr, Repeat):
        return (expr.item,)
    if isinstance(expr, Except):
        return (expr.item,)
    return ()


def walk(expr: Expr) -> Iterator[Expr]:
    """`expr` and all its sub-expressions, depth first, parents before children."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


@dataclass(frozen=True)
class Grammar:
    """An ordered set of rules and the name of the start rule.

    `rules` is a tuple of ``(name, expression)`` pairs in definition order; `rule_spans`
    optionally maps names to where each rule was defined (excluded from equality).
    Build one with `Grammar.from_ebnf`, `Grammar.from_json_schema`, `Grammar.from_regex`,
    `Grammar.from_model` or `grammarc.stdlib`; or directly from IR nodes.
    """

    rules: tuple[tuple[str, Expr], ...]
    start: str = "start"
    rule_spans: Mapping[str, Span] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        if isinstance(self.rules, Mapping):
            object.__setattr__(self, "rules", tuple(self.rules.items()))
        else:
            object.__setattr__(self, "rules", tuple((name, expr) for name, expr in self.rules))

    # -- mapping-like access ------------------------------------------------------------
    @property
    def rule_map(self) -> dict[str, Expr]:
        return dict(self.rules)

    def __getitem__(self, name: str) -> Expr:
        for rule_name, expr in self.rules:
            if rule_name == name:
                return expr
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(rule_name == name for rule_name, _ in self.rules)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.rules)

    # -- front doors ------------------------------------------------------------------
    @classmethod
    def from_ebnf(cls, text: str, start: str = "start", *, name: str = "<string>") -> "Grammar":
        """Parse grammar text in grammarc's EBNF dialect (see docs/dialect.rst)."""
        from .frontends.ebnf import parse_ebnf

        return parse_ebnf(text, start=start, name=name)

    @classmethod
    def from_file(cls, path, start: str = "start") -> "Grammar":
        """Parse an ``.ebnf`` file; errors name the file."""
        from pathlib import Path

        path = Path(path)
        return cls.from_ebnf(path.read_text(encoding="utf-8"), start=start, name=str(path))

    @classmethod
    def from_regex(cls, pattern: str) -> "Grammar":
        """The language of strings that `pattern` matches in full."""
        return cls(rules=(("start", Regex(pattern)),), start="start")

    @classmethod
    def from_json_schema(cls, schema, **options) -> "Grammar":
        """The JSON texts that validate against `schema` (a dict, or JSON text)."""
        from .frontends.jsonschema import schema_to_grammar

        return schema_to_grammar(schema, **options)

    @classmethod
    def from_model(cls, model, **options) -> "Grammar":
        """The JSON texts that a Pydantic model, dataclass or typing type validates."""
        from .frontends.pydantic_model import model_to_grammar

        return model_to_grammar(model, **options)

    # -- back doors -------------------------------------------------------------------
    def to_ebnf(self) -> str:
        """Canonical grammar text: ``Grammar.from_ebnf(g.to_ebnf(), start=g.start) == g``."""
        from .printer import to_ebnf

        return to_ebnf(self)

    def compile(self, **options):
        """Lower to terminal automata and LR tables (cached per grammar and options)."""
        from .compiler import compile_grammar

        return compile_grammar(self, **options)

    def accepts(self, text: str | bytes) -> bool:
        """Whether the whole of `text` is a string of the language (no vocabulary involved)."""
        from .recognizer import Recognizer

        return Recognizer(self.compile()).accepts(text)
