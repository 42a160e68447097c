"""The GBNF front-end: llama.cpp grammar text -> IR (`grammarc.ir.Grammar`).

GBNF is read as llama.cpp's guide (docs/grammars/README.md) and its reference parser define
it; docs/importing.rst lists every rule. In short:

* ``name ::= body``; names are ``[a-zA-Z0-9-]+``; the start rule is ``root``;
* a newline ends a rule, except right after ``::=``, after ``|`` and inside ``( )``
  (``root ::= "a"`` followed by a line ``| "b"`` is an error, as in llama.cpp);
* ``"..."`` strings and ``[...]`` / ``[^...]`` classes over code points, with the escapes
  ``\\xXX \\uXXXX \\UXXXXXXXX \\t \\n \\r \\\\ \\" \\[ \\]`` and nothing else; ``.`` is any
  one code point (newline included); ``#`` starts a comment that runs to the end of the line;
* postfix ``? * + {m} {m,} {m,n}`` (stackable), grouping, empty alternatives.

Where llama.cpp silently gives a construct a surprising meaning we refuse it with an error
instead: a rule defined twice (llama.cpp keeps the last definition), the empty classes
``[]`` and ``[^]`` (llama.cpp reads them as the empty string), a range whose ends are out of
order, ``{m,n}`` with ``n < m``, and code points that have no UTF-8 encoding.

GBNF rule names may contain ``-`` and start with a digit; IR names may not. `ir_name` maps
them injectively: ``-`` becomes ``_`` (GBNF names never contain ``_``), and a name that does
not start with a letter gets a leading ``_``. Error messages use the GBNF names.
"""

from __future__ import annotations

import bisect
import difflib

from grammarc.errors import GrammarError, Source, Span
from grammarc.ir import Alt, Expr, Grammar, Literal, Ref, Regex, Repeat, Seq
from grammarc.ir.check import check_grammar

__all__ = ["gbnf_to_grammar", "ir_name", "MAX_DEPTH"]

#: Nesting limit for ``( )`` groups and stacked postfix operators together: later stages
#: recurse on the IR, so a deeper grammar gets a precise error here instead.
MAX_DEPTH = 100

START = "root"
MAX_CODE_POINT = 0x10FFFF
_HEX = frozenset("0123456789abcdefABCDEF")
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_CHAR_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_ESCAPES_TEXT = '\\xXX \\uXXXX \\UXXXXXXXX \\t \\n \\r \\\\ \\" \\[ \\]'
_ANY_CHAR = "[\\u{0}-\\u{10FFFF}]"


def ir_name(name: str) -> str:
    """The IR rule name of the GBNF rule `name` (injective on GBNF names)."""
    mapped = name.replace("-", "_")
    return mapped if name[:1].isascii() and name[:1].isalpha() else "_" + mapped


def is_name_char(char: str) -> bool:
    """llama.cpp's word characters: ASCII letters, digits and ``-``."""
    return char.isascii() and (char.isalnum() or char == "-")


class _Positions:
    """Offset -> `Span` in O(log n) (a grammar has one span per node)."""

    def __init__(self, source: Source):
        self.source = source
        self.line_starts = [0] + [i + 1 for i, char in enumerate(source.text) if char == "\n"]

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def span(self, start: int, end: int | None = None) -> Span:
        end = start + 1 if end is None else max(start, end)
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        return Span(line, col, end_line, end_col, self.source)


def describe(char: str) -> str:
    """`char` as an error message shows it."""
    if not char:
        return "the end of the grammar"
    if char == "\n" or char == "\r":
        return "a newline"
    if char.isprintable() and not char.isspace():
        return f"'{char}'"
    return f"U+{ord(char):04X}"


def class_pattern(ranges: list[tuple[int, int]], negated: bool) -> str:
    """A grammarc regex that matches one code point of the class (see automata/regex.py)."""
    body = "".join(_class_char(lo) if lo == hi else f"{_class_char(lo)}-{_class_char(hi)}"
                   for lo, hi in ranges)
    return f"[{'^' if negated else ''}{body}]"


def _class_char(code: int) -> str:
    char = chr(code)
    if char.isascii() and char.isalnum():
        return char
    if char.isascii() and char.isprintable() and char != " ":
        return "\\" + char
    if not char.isascii() and char.isprintable() and not char.isspace():
        return char
    return f"\\u{{{code:X}}}"


#: IR nesting limit (node height): hashing and lowering recurse on the IR.
MAX_HEIGHT = 200

_NAME_HINT = "GBNF rule names are ASCII letters, digits and '-'"
_CONTINUATION_HINT = ("in GBNF a newline ends the rule, except after '::=', after '|' and inside "
                      "'( )'; end the line with '|' or wrap the body in parentheses")


class _Parser:
    """Recursive descent over the text, following the structure of llama.cpp's parser.

    Every method starts at ``self.i`` and leaves it after what it read (and after the spaces
    that follow it). Expressions come with their height so that nesting is bounded.
    """

    def __init__(self, text: str, name: str):
        self.text = text
        self.n = len(text)
        self.pos = _Positions(Source(text, name))
        self.i = 0
        self.paren_depth = 0
        self.rule = ""
        self.rules: dict[str, Expr] = {}
        self.rule_spans: dict[str, Span] = {}
        self.refs: list[tuple[str, str, Span]] = []  # (rule, referenced name, span)

    # -- helpers ------------------------------------------------------------------------
    def error(self, message: str, start: int, end: int | None = None, hint: str | None = None) -> GrammarError:
        return GrammarError(message, self.pos.span(start, end), hint=hint)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.text[j] if j < self.n else ""

    def skip_space(self, newline_ok: bool) -> None:
        """Skip blanks and ``#`` comments; newlines too where `newline_ok`."""
        text, i = self.text, self.i
        while i < self.n:
            char = text[i]
            if char == " " or char == "\t" or (newline_ok and char in "\r\n"):
                i += 1
            elif char == "#":
                while i < self.n and text[i] not in "\r\n":
                    i += 1
            else:
                break
        self.i = i

    def read_name(self) -> str:
        start = self.i
        while self.i < self.n and is_name_char(self.text[self.i]):
            self.i += 1
        return self.text[start:self.i]

    # -- rules --------------------------------------------------------------------------
    def parse(self) -> None:
        self.skip_space(True)
        while self.i < self.n:
            self.parse_rule()

    def parse_rule(self) -> None:
        start = self.i
        if not is_name_char(self.peek()):
            at_line_start = start == 0 or self.text[start - 1] in "\r\n \t"
            raise self.error(f"expected a rule name, found {describe(self.peek())}", start,
                             hint=_CONTINUATION_HINT if at_line_start and self.rules else None)
        name = self.read_name()
        name_span = self.pos.span(start, self.i)
        self.skip_space(False)
        if not self.text.startswith("::=", self.i):
            raise self.error(f"expected '::=' after rule name '{name}', found {describe(self.peek())}",
                             self.i, hint=_NAME_HINT if self.peek() == "_" else None)
        if name in self.rules:
            first = self.rule_spans[name]
            raise GrammarError(f"rule '{name}' is defined twice (first at {first.line}:{first.col}); "
                               "GBNF has no merging of definitions", name_span,
                               hint="join the bodies with '|' in one definition")
        self.i += 3
        self.skip_space(True)
        self.rule = name
        body, _ = self.alternates(nested=False)
        self.end_of_rule(name)
        self.rules[name] = body
        self.rule_spans[name] = name_span

    def end_of_rule(self, name: str) -> None:
        char = self.peek()
        if char == "\r":
            self.i += 2 if self.peek(1) == "\n" else 1
        elif char == "\n":
            self.i += 1
        elif char:
            raise self.unexpected(name)
        self.skip_space(True)

    def unexpected(self, rule: str) -> GrammarError:
        char, at = self.peek(), self.i
        if char == ")":
            return self.error("unmatched ')'", at)
        if char == "'":
            return self.error("unexpected \"'\": GBNF strings are written in double quotes", at)
        if self.text.startswith("::=", at):
            return self.error(f"unexpected '::=' in the body of rule '{rule}'", at, at + 3,
                              hint=f"rule '{rule}' continues over the newline after a '|' or inside "
                                   "'( )'; a new rule must start after the previous one has ended")
        return self.error(f"unexpected {describe(char)} in the body of rule '{rule}'", at,
                          hint=_NAME_HINT if char == "_" else None)

    # -- expressions --------------------------------------------------------------------
    def alternates(self, nested: bool) -> tuple[Expr, int]:
        start = self.i
        items = [self.sequence(nested)]
        while self.peek() == "|":
            self.i += 1
            self.skip_space(True)
            items.append(self.sequence(nested))
        if len(items) == 1:
            return items[0]
        return self.bounded(Alt(tuple(e for e, _ in items), self.pos.span(start, self.i)),
                            1 + max(h for _, h in items), start)

    def sequence(self, nested: bool) -> tuple[Expr, int]:
        start = self.i
        items: list[tuple[Expr, int, int]] = []  # (expression, height, start offset)
        while True:
            char, at = self.peek(), self.i
            if char == '"':
                items.append((self.string(), 1, at))
            elif char == "[":
                items.append((self.char_class(), 1, at))
            elif char and is_name_char(char):
                name = self.read_name()
                span = self.pos.span(at, self.i)
                self.refs.append((self.rule, name, span))
                items.append((Ref(ir_name(name), span), 1, at))
            elif char == "(":
                items.append((*self.group(), at))
            elif char == ".":
                self.i += 1
                items.append((Regex(_ANY_CHAR, span=self.pos.span(at)), 1, at))
            elif char and char in "*+?{":
                if not items:
                    raise self.error(f"'{char}' has nothing to repeat", at)
                low, high = self.repetition(nested)
                item, height, item_start = items[-1]
                repeat = Repeat(item, low, high, self.pos.span(item_start, self.i))
                items[-1] = (*self.bounded(repeat, height + 1, at), item_start)
            else:
                break
            self.skip_space(nested)
        if len(items) == 1:
            return items[0][:2]
        height = 1 + max((h for _, h, _ in items), default=0)
        return self.bounded(Seq(tuple(e for e, _, _ in items), self.pos.span(start, self.i)), height, start)

    def bounded(self, expr: Expr, height: int, at: int) -> tuple[Expr, int]:
        if height > MAX_HEIGHT:
            raise self.error(f"the expression is nested more than {MAX_HEIGHT} levels deep", at,
                             hint="split it into several rules")
        return expr, height

    def group(self) -> tuple[Expr, int]:
        at = self.i
        if self.paren_depth >= MAX_DEPTH:
            raise self.error(f"parentheses nested more than {MAX_DEPTH} levels deep", at,
                             hint="split the expression into several rules")
        self.paren_depth += 1
        self.i += 1
        self.skip_space(True)
        inner = self.alternates(nested=True)
        if self.peek() != ")":
            if not self.peek():
                raise self.error("'(' is never closed", at)
            raise self.error(f"expected ')' to close the '(' at {self.pos.position(at)[0]}:"
                             f"{self.pos.position(at)[1]}, found {describe(self.peek())}", self.i)
        self.i += 1
        self.paren_depth -= 1
        return inner

    def repetition(self, nested: bool) -> tuple[int, int | None]:
        """``* + ?`` or ``{m}`` ``{m,}`` ``{m,n}`` at the cursor (spaces inside as llama.cpp allows)."""
        char, at = self.peek(), self.i
        self.i += 1
        if char != "{":
            return {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
        self.skip_space(nested)
        low = self.integer("'{'")
        self.skip_space(nested)
        if self.peek() == "}":
            high: int | None = low
        elif self.peek() == ",":
            self.i += 1
            self.skip_space(nested)
            high = self.integer("','") if self.peek().isdigit() and self.peek().isascii() else None
            self.skip_space(nested)
            if self.peek() != "}":
                raise self.error(f"expected '}}' to close the repetition, found {describe(self.peek())}",
                                 self.i)
        else:
            raise self.error(f"expected ',' or '}}' in the repetition, found {describe(self.peek())}", self.i)
        self.i += 1
        if high is not None and high < low:
            raise self.error(f"repetition {{{low},{high}}}: the maximum is smaller than the minimum",
                             at, self.i)
        return low, high

    def integer(self, after: str) -> int:
        start = self.i
        while self.i < self.n and self.text[self.i] in "0123456789":
            self.i += 1
        if self.i == start:
            raise self.error(f"expected a number after {after}, found {describe(self.peek())}", start)
        return int(self.text[start:self.i])

    # -- terminals ----------------------------------------------------------------------
    def string(self) -> Literal:
        at = self.i
        self.i += 1
        chars: list[str] = []
        while self.peek() != '"':
            if not self.peek():
                raise self.error("unterminated string: '\"' has no closing '\"'", at)
            chars.append(chr(self.char()))
        self.i += 1
        return Literal("".join(chars), self.pos.span(at, self.i))

    def char_class(self) -> Regex:
        at = self.i
        self.i += 1
        negated = self.peek() == "^"
        self.i += negated
        ranges: list[tuple[int, int]] = []
        while self.peek() != "]":
            if not self.peek():
                raise self.error("unterminated character class: '[' has no closing ']'", at)
            item_at = self.i
            low = self.char()
            high = low
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                high = self.char()
                if high < low:
                    raise self.error(f"character range '{self.text[item_at:self.i]}' is out of order",
                                     item_at, self.i)
            ranges.append((low, high))
        self.i += 1
        if not ranges:
            raise self.error(f"empty character class '{self.text[at:self.i]}'", at, self.i,
                             hint="llama.cpp reads it as the empty string: write \"\" if that is meant")
        return Regex(class_pattern(ranges, negated), span=self.pos.span(at, self.i))

    def char(self) -> int:
        """One character or escape of a string or class, as a code point."""
        at = self.i
        char = self.peek()
        if char != "\\":
            self.i += 1
            return self.code_point(ord(char), at)
        escape = self.peek(1)
        if escape in _HEX_ESCAPES:
            size = _HEX_ESCAPES[escape]
            digits = self.text[at + 2:at + 2 + size]
            if len(digits) != size or not set(digits) <= _HEX:
                raise self.error(f"bad escape '\\{escape}': expected {size} hex digits", at, at + 2)
            self.i = at + 2 + size
            return self.code_point(int(digits, 16), at)
        if escape in _CHAR_ESCAPES:
            self.i = at + 2
            return ord(_CHAR_ESCAPES[escape])
        shown = "'\\'" if not escape else f"'\\{escape}'"
        raise self.error(f"unknown escape {shown}", at, at + 2, hint=f"GBNF escapes are {_ESCAPES_TEXT}")

    def code_point(self, code: int, at: int) -> int:
        if code > MAX_CODE_POINT or 0xD800 <= code <= 0xDFFF:
            what = "a surrogate" if code <= MAX_CODE_POINT else "beyond U+10FFFF"
            raise self.error(f"code point U+{code:04X} is {what} and has no UTF-8 encoding",
                             at, self.i)
        return code


def gbnf_to_grammar(text: str, *, name: str = "<string>") -> Grammar:
    """Parse GBNF `text` into IR whose start rule is ``root`` (raises `GrammarError`)."""
    parser = _Parser(text, name)
    parser.parse()
    rules = parser.rules
    for rule, ref, span in parser.refs:
        if ref not in rules:
            close = difflib.get_close_matches(ref, list(rules), n=1)
            raise GrammarError(f"rule '{rule}' refers to undefined rule '{ref}'", span,
                               hint=f"did you mean '{close[0]}'?" if close else None)
    if START not in rules:
        defined = ", ".join(f"'{rule}'" for rule in rules) or "none"
        raise GrammarError(f"{name}: the grammar has no 'root' rule, where GBNF starts "
                           f"(defined rules: {defined})")
    grammar = Grammar(rules=tuple((ir_name(rule), expr) for rule, expr in rules.items()), start=START,
                      rule_spans={ir_name(rule): span for rule, span in parser.rule_spans.items()})
    check_grammar(grammar)
    return grammar
