"""Exceptions and source positions shared by every stage of the compiler.

Every error that a user can cause by writing a grammar carries a `Span` when one is
known, and renders as ``file:line:col: message`` followed by the offending line and a
caret, the way compilers do.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_QUOTE = 200  # characters of user text an error message quotes, at most


def clip(text: str, at: int = 0, width: int = MAX_QUOTE) -> str:
    """`text` cut to at most about `width` characters around offset `at`, ``…`` marking cuts.

    Error messages quote the pattern or line they talk about; a generated pattern can be a
    megabyte long, and a message that long helps nobody.
    """
    if len(text) <= width:
        return text
    start = max(0, min(at - width // 2, len(text) - width))
    end = start + width
    return ("…" if start > 0 else "") + text[start:end] + ("…" if end < len(text) else "")


@dataclass(frozen=True)
class Span:
    """A region of grammar source text. Lines and columns are 1-based; `end` is exclusive."""

    line: int
    col: int
    end_line: int
    end_col: int
    source: "Source | None" = None

    def location(self) -> str:
        name = self.source.name if self.source is not None else "<grammar>"
        return f"{name}:{self.line}:{self.col}"

    def excerpt(self) -> str:
        """The source line under the span with a caret (or a run of carets) beneath it."""
        if self.source is None:
            return ""
        lines = [line.rstrip("\r") for line in self.source.text.split("\n")]
        if not 1 <= self.line <= len(lines):
            return ""
        text = lines[self.line - 1].expandtabs(1)
        width = self.end_col - self.col if self.end_line == self.line else len(text) - self.col + 1
        width = max(1, min(width, len(text) - self.col + 1))
        col = self.col
        if len(text) > MAX_QUOTE:  # a window of the line around the span, carets capped too
            width = min(width, MAX_QUOTE // 2)
            start = max(0, min(col - 1 - MAX_QUOTE // 2, len(text) - MAX_QUOTE))
            clipped = clip(text, col - 1, MAX_QUOTE)
            col = col - start + (1 if start > 0 else 0)
            text = clipped
        return f"{text}\n{' ' * (col - 1)}{'^' * width}"


@dataclass(frozen=True)
class Source:
    """Grammar source text with the name it came from (a path, or ``<string>``)."""

    text: str
    name: str = "<string>"

    def span(self, start: int, end: int | None = None) -> Span:
        """The span of character offsets ``[start, end)`` in this text."""
        end = start + 1 if end is None else end
        line, col = self.position(start)
        end_line, end_col = self.position(max(start, end))
        return Span(line, col, end_line, end_col, self)

    def position(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, len(self.text)))
        line = self.text.count("\n", 0, offset) + 1
        col = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return line, col


class GrammarcError(Exception):
    """Base class of every error grammarc raises on purpose."""


class GrammarError(GrammarcError, ValueError):
    """A grammar is malformed or meaningless: syntax, undefined rules, empty languages, ...

    ``str(error)`` is ``file:line:col: message`` plus the source line and a caret when
    the position is known; `message` and `span` are available separately.
    """

    def __init__(self, message: str, span: Span | None = None, *, hint: str | None = None):
        self.message = message
        self.span = span
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.span.location()}: {self.message}" if self.span else self.message
        parts = [head]
        if self.span is not None and (excerpt := self.span.excerpt()):
            parts.append(excerpt)
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class RegexError(GrammarError):
    """A regular expression is malformed, unsupported, or too large to compile."""


class StateBudgetExceeded(RegexError):
    """An automaton construction needed more states than the configured budget."""


class GrammarWarning(UserWarning):
    """Something in a grammar is legal but probably not what the author meant."""


class SchemaError(GrammarcError, ValueError):
    """A JSON Schema (or model) is malformed, contradictory or describes no value.

    `pointer` is the JSON pointer of the offending keyword (``#/properties/age/minimum``).
    """

    def __init__(self, message: str, pointer: str = "#"):
        self.message = message
        self.pointer = pointer
        super().__init__(f"{pointer}: {message}")


class UnsupportedSchemaError(SchemaError):
    """A schema keyword grammarc cannot express exactly (``lenient=True`` ignores it, with a warning)."""
