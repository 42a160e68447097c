"""The `.ebnf` front-end: grammar text in grammarc's dialect -> IR (`grammarc.ir.Grammar`).

The work is split in two so that every error points at the right column:

* a small hand-written lexer turns the text into tokens, decoding string escapes and
  regex bodies on the way, so that an unterminated string, an unterminated comment or an
  unknown escape is reported exactly where it starts (a generic lexer could only say
  "unexpected character" somewhere nearby);
* a lark LALR(1) parser, built once and cached, checks the structure; we feed it tokens one
  at a time, which lets us explain a syntax error in terms of what came just before it
  ("missing ';' at the end of rule 'a'", "'(' is never closed").

The parse tree is then turned into IR nodes that carry their source spans. The structure
is kept as written, with two simplifications: a one-item sequence is the item itself and
a parenthesized group ``( x )`` is ``x``. Forms that exist so that every IR prints back
exactly (see `grammarc.ir.printer`):

* ``()`` is the empty sequence ``Seq(())`` (``''`` is ``Literal('')``);
* a trailing comma makes a sequence even of one item: ``(x,)`` is ``Seq((x,))``;
* a leading ``|`` makes an alternation even of one item: ``(| x)`` is ``Alt((x,))``.

A name defined several times becomes one `Alt` whose alternatives are those of every
definition, in definition order (a definition that is itself an alternation contributes
its alternatives, so ``a ::= x | y; a ::= z;`` equals ``a ::= x | y | z;``).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedToken

from grammarc.allocation import gc_paused
from grammarc.ir.check import check_grammar
from grammarc.errors import GrammarError, Source, Span
from grammarc.ir import (
    Alt, AnyToken, Except, Expr, Grammar, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq, Substrings,
)

__all__ = ["parse_ebnf"]

# --------------------------------------------------------------------------------------
# The LALR grammar of the dialect (tokens come from our own lexer, hence %declare).

_LARK_GRAMMAR = r"""
%declare NAME DEFINE SEMI PIPE COMMA LPAR RPAR LBRACK RBRACK LBRACE RBRACE QMARK STAR PLUS COUNT STRING REGEX NUMBER ANY EXCEPT JSON_EXCEPT

start: rule*
rule: NAME DEFINE alt SEMI

alt: PIPE? seq (PIPE seq)*
seq: postfix (COMMA? postfix)* COMMA?
postfix: atom (QMARK | STAR | PLUS | COUNT)*

atom: NAME                              -> ref
    | STRING                            -> string
    | REGEX                             -> regex
    | ANY                               -> any
    | LPAR alt RPAR                     -> group
    | LPAR RPAR                         -> empty
    | LBRACK alt RBRACK                 -> optional
    | LBRACE alt RBRACE                 -> star
    | EXCEPT LPAR except_item (COMMA NUMBER)? RPAR -> except_
    | JSON_EXCEPT LPAR (STRING (COMMA STRING)*)? RPAR -> json_string_except

except_item: STRING | NAME
"""


@lru_cache(maxsize=1)
def _parser() -> Lark:
    """The LALR parser, built on first use (tables take a few milliseconds to build)."""
    return Lark(_LARK_GRAMMAR, parser="lalr", lexer="basic", propagate_positions=True)


# Readable names of the token kinds, for syntax errors.
_TOKEN_WORDS = {
    "NAME": "a rule name",
    "DEFINE": "'::='",
    "SEMI": "';'",
    "PIPE": "'|'",
    "COMMA": "','",
    "LPAR": "'('",
    "RPAR": "')'",
    "LBRACK": "'['",
    "RBRACK": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "QMARK": "'?'",
    "STAR": "'*'",
    "PLUS": "'+'",
    "COUNT": "a counted repetition",
    "STRING": "a string literal",
    "REGEX": "a regex literal",
    "NUMBER": "a number",
    "ANY": "'any!'",
    "EXCEPT": "'except!'",
    "JSON_EXCEPT": "'json_string_except!'",
    "$END": "the end of the grammar",
}
_EXPR_START = frozenset({"NAME", "STRING", "REGEX", "ANY", "EXCEPT", "JSON_EXCEPT", "LPAR", "LBRACK", "LBRACE"})
_POSTFIX = frozenset({"QMARK", "STAR", "PLUS", "COUNT"})
_ENDS_ALTERNATIVE = frozenset({"SEMI", "PIPE", "RPAR", "RBRACK", "RBRACE", "DEFINE", "$END"})
_OPENERS = {"LPAR": "(", "LBRACK": "[", "LBRACE": "{"}
_CLOSERS = {"RPAR": "LPAR", "RBRACK": "LBRACK", "RBRACE": "LBRACE"}
_CLOSER_TEXT = {"LPAR": ")", "LBRACK": "]", "LBRACE": "}"}


# --------------------------------------------------------------------------------------
# Positions


class _Positions:
    """Offset -> Span, giving exactly what `Source.span` gives.

    O(log n) by bisection, O(1) when the offset lies on the line of the previous query
    (tokens come in text order, so that is nearly always).
    """

    def __init__(self, source: Source):
        self.source = source
        self.length = len(source.text)
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", source.text)] + [self.length + 1]
        self.line = 0  # index of the line the last query fell on

    def position(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, self.length))
        starts, index = self.line_starts, self.line
        if not starts[index] <= offset < starts[index + 1]:
            index = self.line = bisect.bisect_right(starts, offset) - 1
        return index + 1, offset - starts[index] + 1

    def span(self, start: int, end: int | None = None) -> Span:
        end = start + 1 if end is None else end
        line, col = self.position(start)
        end_line, end_col = self.position(max(start, end))
        return Span(line, col, end_line, end_col, self.source)


# --------------------------------------------------------------------------------------
# Lexer


@dataclass
class _Lexed:
    """Decoded values of tokens, keyed by their start offset (lark tokens are plain str)."""

    strings: dict[int, str]
    regexes: dict[int, tuple[str, str]]  # offset -> (prefix, body)
    counts: dict[int, tuple[int, int | None]]


_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WS_RE = re.compile(r"[ \t\r\n\f\v\ufeff]+")
_COUNT_RE = re.compile(r"\{[ \t]*(\d*)[ \t]*(?:(,)[ \t]*(\d*)[ \t]*)?\}")
_NUMBER_RE = re.compile(r"\d+")
_PUNCT = {
    ";": "SEMI", "|": "PIPE", ",": "COMMA", "(": "LPAR", ")": "RPAR", "[": "LBRACK",
    "]": "RBRACK", "}": "RBRACE", "?": "QMARK", "*": "STAR", "+": "PLUS", "=": "DEFINE",
}
_REGEX_PREFIXES = {"": "match", "e": "early", "ex": "complement", "substrs": "substrs"}
_SIMPLE_ESCAPES = {
    "n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v", "0": "\0",
    "'": "'", '"': '"', "\\": "\\", "/": "/",
}
_HEX = set("0123456789abcdefABCDEF")
_LINE_ENDS = "\n\r"


def _describe_char(char: str) -> str:
    if char.isprintable() and not char.isspace():
        return f"'{char}'"
    return f"U+{ord(char):04X}"


class _Lexer:
    def __init__(self, text: str, pos: _Positions):
        self.text = text
        self.pos = pos
        self.lexed = _Lexed({}, {}, {})

    def error(self, message: str, start: int, end: int | None = None, hint: str | None = None) -> GrammarError:
        return GrammarError(message, self.pos.span(start, end), hint=hint)

    def token(self, kind: str, start: int, end: int) -> Token:
        """The lark token of a lexed (kind, start, end) triple."""
        line, col = self.pos.position(start)
        end_line, end_col = self.pos.position(end)
        return Token(kind, self.text[start:end], start_pos=start, line=line, column=col,
                     end_line=end_line, end_column=end_col, end_pos=end)

    def tokens(self) -> Iterator[tuple[str, int, int]]:
        """(kind, start offset, end offset) of each token, lexed lazily, errors in text order."""
        text, i, n = self.text, 0, len(self.text)
        while i < n:
            char = text[i]
            if m := _WS_RE.match(text, i):
                i = m.end()
            elif text.startswith("(*", i):
                close = text.find("*)", i + 2)
                if close < 0:
                    raise self.error("unterminated comment: '(*' has no matching '*)'", i, i + 2)
                i = close + 2
            elif m := _NAME_RE.match(text, i):
                end = m.end()
                if text.startswith("!", end):
                    word = m.group()
                    if word == "any":
                        yield ("ANY", i, end + 1)
                    elif word == "except":
                        yield ("EXCEPT", i, end + 1)
                    elif word == "json_string_except":
                        yield ("JSON_EXCEPT", i, end + 1)
                    else:
                        raise self.error(f"unknown special nonterminal '{word}!'", i, end + 1,
                                         hint="the special nonterminals are 'any!', 'except!(...)' and "
                                              "'json_string_except!(...)'")
                    i = end + 1
                else:
                    yield ("NAME", i, end)
                    i = end
            elif char in "'\"":
                end, value = self.string(i)
                self.lexed.strings[i] = value
                yield ("STRING", i, end)
                i = end
            elif char == "#":
                end = self.regex(i)
                yield ("REGEX", i, end)
                i = end
            elif char == ":":
                if text.startswith("::=", i):
                    yield ("DEFINE", i, i + 3)
                    i += 3
                else:
                    raise self.error("unexpected character ':'", i, i + 1,
                                     hint="rules are written 'name ::= ...;' or 'name = ...;'")
            elif char == "{":
                token = self.brace(i)
                yield token
                i = token[2]
            elif m := _NUMBER_RE.match(text, i):
                yield ("NUMBER", i, m.end())
                i = m.end()
            elif char in _PUNCT:
                yield (_PUNCT[char], i, i + 1)
                i += 1
            else:
                raise self.error(f"unexpected character {_describe_char(char)}", i, i + 1)

    def brace(self, i: int) -> tuple[str, int, int]:
        """`{` opens a repetition `{ x }`, or a count `{m,n}` when a digit or ',' follows."""
        text = self.text
        j = i + 1
        while j < len(text) and text[j] in " \t":
            j += 1
        if j < len(text) and (text[j].isdigit() and text[j].isascii() or text[j] == ","):
            m = _COUNT_RE.match(text, i)
            if not m:
                raise self.error("malformed counted repetition: expected '{m}', '{m,}', '{m,n}' or '{,n}'", i, i + 1)
            low, comma, high = m.groups()
            if not low and not high:
                raise self.error(f"counted repetition '{m.group()}' needs at least one bound", i, m.end())
            if comma:
                bounds = (int(low) if low else 0, int(high) if high else None)
            else:
                bounds = (int(low), int(low))
            self.lexed.counts[i] = bounds
            return ("COUNT", i, m.end())
        return ("LBRACE", i, i + 1)

    def string(self, start: int, what: str = "string literal", token_start: int | None = None) -> tuple[int, str]:
        """Scan a quoted string at `start`; return (end offset, decoded value)."""
        text, quote = self.text, self.text[start]
        i = start + 1
        while i < len(text) and text[i] != quote:
            if text[i] in _LINE_ENDS:
                break
            i += 2 if text[i] == "\\" and i + 1 < len(text) and text[i + 1] not in _LINE_ENDS else 1
        if i >= len(text) or text[i] != quote:
            line_end = len(text)
            for end_char in _LINE_ENDS:
                found = text.find(end_char, start)
                if found >= 0:
                    line_end = min(line_end, found)
            token_start = start if token_start is None else token_start
            raise self.error(f"unterminated {what}", token_start, max(line_end, start + 1),
                             hint=f"close it with {quote} on the same line (write \\n for a line break)")
        return i + 1, self.unescape(start + 1, i)

    def unescape(self, start: int, end: int) -> str:
        """Decode the JavaScript escapes of text[start:end] (a literal or kbnf regex body)."""
        text, out, i = self.text, [], start
        pending_high: tuple[int, int, int] | None = None  # (code, escape start, escape end)
        while i < end:
            char = text[i]
            if char != "\\":
                if pending_high:
                    raise self.lone_surrogate(*pending_high)
                out.append(char)
                i += 1
                continue
            code, next_i = self.escape(i, end)
            if code is None:  # a simple escape, already a string
                if pending_high:
                    raise self.lone_surrogate(*pending_high)
                out.append(_SIMPLE_ESCAPES[text[i + 1]])
            elif 0xD800 <= code <= 0xDBFF:
                if pending_high:
                    raise self.lone_surrogate(*pending_high)
                pending_high = (code, i, next_i)
            elif 0xDC00 <= code <= 0xDFFF:
                if not pending_high:
                    raise self.lone_surrogate(code, i, next_i)
                high = pending_high[0]
                out.append(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
                pending_high = None
            else:
                if pending_high:
                    raise self.lone_surrogate(*pending_high)
                out.append(chr(code))
            i = next_i
        if pending_high:
            raise self.lone_surrogate(*pending_high)
        return "".join(out)

    def lone_surrogate(self, code: int, start: int, end: int) -> GrammarError:
        kind = "high" if code <= 0xDBFF else "low"
        partner = "followed by a low" if kind == "high" else "preceded by a high"
        return self.error(f"lone surrogate in escape '{self.text[start:end]}': a {kind} surrogate must be "
                          f"{partner} surrogate escape", start, end)

    def escape(self, i: int, end: int) -> tuple[int | None, int]:
        """Decode the escape at text[i] == '\\'; code None means a simple escape."""
        text = self.text
        kind = text[i + 1]
        if kind in _SIMPLE_ESCAPES:
            return None, i + 2
        if kind == "x":
            digits = text[i + 2:min(i + 4, end)]
            if len(digits) < 2 or not set(digits) <= _HEX:
                bad_end = i + 2 + len(digits)
                raise self.error("bad escape: '\\x' must be followed by exactly two hex digits", i, bad_end)
            return int(digits, 16), i + 4
        if kind == "u":
            if text.startswith("{", i + 2):
                close = text.find("}", i + 3, end)
                digits = text[i + 3:close] if close >= 0 else ""
                if close < 0 or not digits or not set(digits) <= _HEX:
                    bad_end = close + 1 if close >= 0 else min(end, i + 3)
                    raise self.error("bad escape: '\\u{...}' must hold 1 to 6 hex digits", i, bad_end)
                code = int(digits, 16)
                if len(digits.lstrip("0")) > 6 or code > 0x10FFFF:
                    raise self.error(f"bad escape: '{text[i:close + 1]}' is beyond U+10FFFF", i, close + 1)
                return code, close + 1
            digits = text[i + 2:min(i + 6, end)]
            if len(digits) < 4 or not set(digits) <= _HEX:
                good = len(digits) - len(digits.lstrip("0123456789abcdefABCDEF"))
                raise self.error("bad escape: '\\u' must be followed by four hex digits or '{hex digits}'",
                                 i, i + 2 + good + (1 if good < len(digits) else 0))
            return int(digits, 16), i + 6
        raise self.error(f"unknown escape '\\{kind}'", i, i + 2,
                         hint="valid escapes: \\n \\r \\t \\b \\f \\v \\0 \\' \\\" \\\\ \\/ \\xHH \\uXXXX \\u{X...}")

    def regex(self, start: int) -> int:
        """Scan `#prefix'R'`, `#prefix"R"` or `#prefix/R/` at `start`; return its end."""
        text = self.text
        m = re.compile(r"[A-Za-z]*").match(text, start + 1)
        prefix, i = m.group(), m.end()
        if prefix not in _REGEX_PREFIXES:
            raise self.error(f"unknown regex prefix '#{prefix}'", start, i,
                             hint="write #'R', #e'R', #ex'R' (or /R/ instead of 'R'), or #substrs'S'")
        if i >= len(text) or text[i] not in "'\"/":
            raise self.error(f"expected a quoted or /.../ regex after '#{prefix}'", start, i)
        if text[i] != "/":
            end, body = self.string(i, "regex literal" if prefix != "substrs" else "#substrs literal", start)
            self.lexed.regexes[start] = (prefix, body)
            return end
        j = i + 1
        while j < len(text) and text[j] != "/" and text[j] not in _LINE_ENDS:
            j += 2 if text[j] == "\\" and j + 1 < len(text) and text[j + 1] not in _LINE_ENDS else 1
        if j >= len(text) or text[j] != "/":
            raise self.error("unterminated regex literal: '/' has no matching '/' on its line", start, i + 1)
        self.lexed.regexes[start] = (prefix, _raw_body(text[i + 1:j]))
        return j + 1


def _raw_body(body: str) -> str:
    """The raw form's body verbatim, except that the pair `\\/` stands for `/`."""
    return re.sub(r"\\(.)", lambda m: "/" if m.group(1) == "/" else m.group(), body, flags=re.S)


# --------------------------------------------------------------------------------------
# Parsing: feed tokens to lark, explain failures


def _describe_token(token: Token) -> str:
    if token.type == "$END":
        return "the end of the grammar"
    text = str(token)
    if len(text) > 24:
        text = text[:21] + "..."
    if token.type == "NAME":
        return f"rule name '{text}'"
    if token.type == "STRING":
        return f"string literal {text}"
    if token.type == "REGEX":
        return f"regex literal {text}"
    if token.type == "NUMBER":
        return f"number {text}"
    if token.type == "COUNT":
        return f"counted repetition '{text}'"
    if token.type == "DEFINE":
        return f"'{text}'"
    return _TOKEN_WORDS.get(token.type, repr(text))


def _describe_expected(expected: set[str]) -> str:
    words = []
    if "SEMI" in expected:
        words.append("';'")
    if "PIPE" in expected:
        words.append("'|'")
    if _EXPR_START <= expected:
        words.append("an expression")
        expected = expected - _EXPR_START - _POSTFIX - {"COMMA"}
    for kind in sorted(expected - {"SEMI", "PIPE"}, key=lambda k: list(_TOKEN_WORDS).index(k) if k in _TOKEN_WORDS else 99):
        words.append(_TOKEN_WORDS.get(kind, kind))
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " or " + words[-1]


class _Feeder:
    """Feeds lexed tokens to the LALR parser, remembering context for error messages."""

    def __init__(self, lexer: _Lexer):
        self.lexer = lexer
        self.pos = lexer.pos
        self.previous: list[Token] = []
        self.open: list[Token] = []
        self.rule_name: Token | None = None

    def parse(self) -> Tree:
        interactive = _parser().parse_interactive()
        for kind, start, end in self.lexer.tokens():
            token = self.lexer.token(kind, start, end)
            try:
                interactive.feed_token(token)
            except UnexpectedToken as error:
                raise self.explain(token, set(error.expected)) from None
            self.track(token)
        end = len(self.lexer.text)
        eof = Token("$END", "", start_pos=end, end_pos=end)
        try:
            return interactive.feed_eof(eof)
        except UnexpectedToken as error:
            raise self.explain(eof, set(error.expected)) from None

    def track(self, token: Token) -> None:
        if token.type == "DEFINE" and self.previous and self.previous[-1].type == "NAME":
            self.rule_name = self.previous[-1]
        if token.type in _OPENERS:
            self.open.append(token)
        elif token.type in _CLOSERS and self.open:
            self.open.pop()
        elif token.type == "SEMI":
            self.open.clear()
            self.rule_name = None
        self.previous.append(token)

    def at(self, token: Token) -> Span:
        return self.pos.span(token.start_pos, max(token.end_pos, token.start_pos + 1))

    def after(self, token: Token) -> Span:
        return self.pos.span(token.end_pos, token.end_pos + 1)

    def explain(self, found: Token, expected: set[str]) -> GrammarError:
        kind = found.type
        prev = self.previous[-1] if self.previous else None
        rule = f"rule '{self.rule_name}'" if self.rule_name is not None else "the rule"
        # `a ::= b` followed by the next rule or the end: the ';' was forgotten.
        if kind == "DEFINE" and prev is not None and prev.type == "NAME" and len(self.previous) >= 2 and not self.open:
            return GrammarError(f"expected ';' at the end of {rule} (before the definition of '{prev}')",
                                self.after(self.previous[-2]))
        if kind == "$END" and "SEMI" in expected and not self.open and prev is not None:
            return GrammarError(f"expected ';' at the end of {rule}, found the end of the grammar", self.after(prev))
        # An unclosed bracket meets the end of the rule.
        if self.open and kind in {"SEMI", "$END", "DEFINE"}:
            opener = self.open[-1]
            before = f"the definition of '{prev}'" if kind == "DEFINE" and prev is not None else _describe_token(found)
            return GrammarError(f"'{opener}' is never closed: expected '{_CLOSER_TEXT[opener.type]}' before "
                                f"{before}", self.at(opener))
        # A closing bracket that matches nothing, or the wrong opener.
        if kind in _CLOSERS and kind not in expected:
            if not self.open:
                return GrammarError(f"unmatched '{found}': no '{_OPENERS[_CLOSERS[kind]]}' is open", self.at(found))
            opener = self.open[-1]
            if opener.type != _CLOSERS[kind] and (prev is None or prev.type not in _OPENERS):
                line, col = opener.line, opener.column
                return GrammarError(f"'{found}' does not match '{opener}' at {line}:{col}: expected "
                                    f"'{_CLOSER_TEXT[opener.type]}'", self.at(found))
        if kind in _POSTFIX and kind not in expected:
            return GrammarError(f"{_describe_token(found)} has nothing to repeat: it must follow an expression",
                                self.at(found))
        # Nothing between two delimiters: an empty alternative.
        if prev is not None and _EXPR_START <= expected and kind in _ENDS_ALTERNATIVE:
            write = "write '' for the empty string"
            if prev.type == "DEFINE":
                return GrammarError(f"{rule} has an empty definition: expected an expression, found "
                                    f"{_describe_token(found)} ({write})", self.at(found))
            if prev.type == "PIPE":
                return GrammarError(f"empty alternative: expected an expression after '|', found "
                                    f"{_describe_token(found)} ({write})", self.at(found))
            if prev.type in ("LBRACK", "LBRACE"):
                return GrammarError(f"empty '{prev}{_CLOSER_TEXT[prev.type]}': expected an expression after "
                                    f"'{prev}', found {_describe_token(found)}", self.at(found))
        if expected == {"DEFINE"} and prev is not None:
            return GrammarError(f"expected '::=' or '=' after rule name '{prev}', found {_describe_token(found)}",
                                self.at(found))
        if expected <= {"NAME", "$END"} and "NAME" in expected:
            return GrammarError(f"expected a rule definition (name ::= ...;), found {_describe_token(found)}",
                                self.at(found))
        return GrammarError(f"expected {_describe_expected(self.plausible(expected))}, found "
                            f"{_describe_token(found)}", self.at(found))

    def plausible(self, expected: set[str]) -> set[str]:
        """Drop what LALR's merged lookaheads allow but the brackets rule out."""
        if self.previous and self.previous[-1].type in ("DEFINE", "LPAR") and _EXPR_START <= expected:
            expected = expected - {"PIPE"}  # a leading '|' is legal but never what was meant
        if self.open:
            closer = {kind for kind, opener in _CLOSERS.items() if opener == self.open[-1].type}
            return (expected - set(_CLOSERS) - {"SEMI"}) | (expected & closer) or expected
        return expected - set(_CLOSERS) or expected


# --------------------------------------------------------------------------------------
# The fast path: tokens -> IR in one iterative pass


class _Refused(Exception):
    """The fast parser met something it does not accept; the lark path explains it."""


_ATOMS = frozenset({"NAME", "STRING", "REGEX", "ANY"})
_BRACKETS = {"LPAR": "RPAR", "LBRACK": "RBRACK", "LBRACE": "RBRACE"}


class _Frame:
    """An alternation being read: a rule body, or the inside of ( ), [ ] or { }."""

    __slots__ = ("opener", "start", "alts", "leading", "items", "comma_end")

    def __init__(self, opener: str, start: int):
        self.opener = opener  # "DEFINE" for a rule body, else the bracket's token kind
        self.start = start  # where the bracket opened (rule bodies: unused)
        self.alts: list[tuple[Expr, int, int]] = []  # (expr, start, end) of finished sequences
        self.leading: int | None = None  # offset of a leading '|'
        self.items: list[list] = []  # [expr, start, end] of the sequence being read
        self.comma_end: int | None = None  # end of a comma after the last item


class _FastParser:
    """Builds the IR straight from the tokens, with an explicit stack instead of recursion.

    It accepts exactly the texts the lark grammar accepts and builds exactly what `_Builder`
    builds from lark's tree (spans included), but does none of the explaining: on anything
    unexpected it gives up (`_Refused`) and `parse_ebnf` runs the lark path, whose errors
    say what is wrong. The split keeps big grammars fast and deep nesting free of recursion.
    """

    def __init__(self, lexer: _Lexer, pos: _Positions):
        self.lexer = lexer
        self.lexed = lexer.lexed
        self.pos = pos
        self.text = lexer.text

    def grammar(self, start: str) -> Grammar:
        try:
            tokens = list(self.lexer.tokens())
        except GrammarError:
            raise _Refused() from None
        bodies: dict[str, list[Expr]] = {}
        spans: dict[str, Span] = {}
        stack: list[_Frame] = []
        rule = ""
        i, n = 0, len(tokens)
        while i < n:
            kind, s, e = tokens[i]
            if not stack:  # between rules: NAME DEFINE
                if kind != "NAME" or i + 1 >= n or tokens[i + 1][0] != "DEFINE":
                    raise _Refused()
                rule = self.text[s:e]
                spans.setdefault(rule, self.pos.span(s, e))
                stack.append(_Frame("DEFINE", tokens[i + 1][1]))
                i += 2
                continue
            frame = stack[-1]
            if kind in _ATOMS:
                self.item(frame, self.atom(kind, s, e), s, e)
            elif kind in _POSTFIX:
                if not frame.items or frame.comma_end is not None:
                    raise _Refused()
                last = frame.items[-1]
                last[0] = self.repeat(last[0], kind, last[1], s, e)
                last[2] = e
            elif kind == "COMMA":
                if not frame.items or frame.comma_end is not None:
                    raise _Refused()
                frame.comma_end = e
            elif kind == "PIPE":
                if frame.items:
                    self.end_sequence(frame)
                elif not frame.alts and frame.leading is None and tokens[i - 1][0] == frame.opener:
                    frame.leading = s
                else:
                    raise _Refused()
            elif kind == "EXCEPT":
                i = self.except_(frame, tokens, i)
                continue
            elif kind == "JSON_EXCEPT":
                i = self.json_string_except(frame, tokens, i)
                continue
            elif kind == "LPAR" and i + 1 < n and tokens[i + 1][0] == "RPAR":
                end = tokens[i + 1][2]
                self.item(frame, Seq((), span=self.pos.span(s, end)), s, end)
                i += 2
                continue
            elif kind in _BRACKETS:
                stack.append(_Frame(kind, s))
            elif kind in _CLOSERS or kind == "SEMI":
                if _BRACKETS.get(frame.opener, "SEMI") != kind:
                    raise _Refused()
                body = self.end_alternation(frame)
                stack.pop()
                if kind == "SEMI":
                    bodies.setdefault(rule, []).append(body)
                elif kind == "RPAR":
                    self.item(stack[-1], body, frame.start, e)
                else:
                    high = 1 if kind == "RBRACK" else None
                    self.item(stack[-1], Repeat(body, 0, high, span=self.pos.span(frame.start, e)), frame.start, e)
            else:
                raise _Refused()
            i += 1
        if stack:
            raise _Refused()
        return _merge_definitions(bodies, spans, start)

    def item(self, frame: _Frame, expr: Expr, start: int, end: int) -> None:
        if frame.comma_end is not None and not frame.items:  # pragma: no cover - refused earlier
            raise _Refused()
        frame.items.append([expr, start, end])
        frame.comma_end = None

    def atom(self, kind: str, s: int, e: int) -> Expr:
        span = self.pos.span(s, e)
        if kind == "NAME":
            return Ref(self.text[s:e], span=span)
        if kind == "STRING":
            return Literal(self.lexed.strings[s], span=span)
        if kind == "ANY":
            return AnyToken(span=span)
        prefix, body = self.lexed.regexes[s]
        mode = _REGEX_PREFIXES[prefix]
        return Substrings(body, span=span) if mode == "substrs" else Regex(body, mode, span=span)

    def repeat(self, expr: Expr, kind: str, start: int, s: int, e: int) -> Expr:
        low, high = {"QMARK": (0, 1), "STAR": (0, None), "PLUS": (1, None)}.get(kind) or self.lexed.counts[s]
        return Repeat(expr, low, high, span=self.pos.span(start, e))

    def except_(self, frame: _Frame, tokens: list, i: int) -> int:
        """``except!( item [, n] )`` at tokens[i]; returns the index after it."""
        kinds = [t[0] for t in tokens[i + 1:i + 6]]
        if kinds[:1] != ["LPAR"] or len(kinds) < 3 or kinds[1] not in ("STRING", "NAME"):
            raise _Refused()
        _, s, _ = tokens[i]
        _, a, b = tokens[i + 2]
        span = self.pos.span(a, b)
        item = Literal(self.lexed.strings[a], span=span) if kinds[1] == "STRING" else Ref(self.text[a:b], span=span)
        if kinds[2:3] == ["RPAR"]:
            limit, close = None, i + 3
        elif kinds[2:5] == ["COMMA", "NUMBER", "RPAR"]:
            limit, close = int(self.text[tokens[i + 4][1]:tokens[i + 4][2]]), i + 5
        else:
            raise _Refused()
        end = tokens[close][2]
        self.item(frame, Except(item, limit, span=self.pos.span(s, end)), s, end)
        return close + 1

    def json_string_except(self, frame: _Frame, tokens: list, i: int) -> int:
        """``json_string_except!( "a", "b" )`` at tokens[i]; returns the index after it."""
        _, s, _ = tokens[i]
        if i + 1 >= len(tokens) or tokens[i + 1][0] != "LPAR":
            raise _Refused()
        words: list[str] = []
        j = i + 2
        while j < len(tokens) and tokens[j][0] == "STRING":
            words.append(self.lexed.strings[tokens[j][1]])
            if j + 1 < len(tokens) and tokens[j + 1][0] == "COMMA":
                j += 2
                if j >= len(tokens) or tokens[j][0] != "STRING":
                    raise _Refused()
            else:
                j += 1
        if j >= len(tokens) or tokens[j][0] != "RPAR":
            raise _Refused()
        end = tokens[j][2]
        self.item(frame, JsonStringExcept(tuple(words), span=self.pos.span(s, end)), s, end)
        return j + 1

    def end_sequence(self, frame: _Frame) -> None:
        items = frame.items
        start = items[0][1]
        end = frame.comma_end if frame.comma_end is not None else items[-1][2]
        if len(items) == 1 and frame.comma_end is None:
            expr = items[0][0]
        else:
            expr = Seq(tuple(x[0] for x in items), span=self.pos.span(start, end))
        frame.alts.append((expr, start, end))
        frame.items = []
        frame.comma_end = None

    def end_alternation(self, frame: _Frame) -> Expr:
        if not frame.items:
            raise _Refused()
        self.end_sequence(frame)
        alts = frame.alts
        if len(alts) == 1 and frame.leading is None:
            return alts[0][0]
        start = frame.leading if frame.leading is not None else alts[0][1]
        return Alt(tuple(x[0] for x in alts), span=self.pos.span(start, alts[-1][2]))


def _merge_definitions(bodies: dict[str, list[Expr]], spans: dict[str, Span], start: str) -> Grammar:
    """One rule per name: several definitions become one alternation, in order."""
    rules = []
    for name, exprs in bodies.items():
        if len(exprs) == 1:
            rules.append((name, exprs[0]))
            continue
        items: list[Expr] = []
        for expr in exprs:
            items.extend(expr.items if isinstance(expr, Alt) else (expr,))
        rules.append((name, Alt(tuple(items), span=exprs[0].span)))
    return Grammar(rules=tuple(rules), start=start, rule_spans=spans)


# --------------------------------------------------------------------------------------
# Tree -> IR


class _Builder:
    def __init__(self, lexed: _Lexed, pos: _Positions):
        self.lexed = lexed
        self.pos = pos

    def span_of(self, node: Tree | Token) -> Span:
        if isinstance(node, Token):
            return self.pos.span(node.start_pos, node.end_pos)
        return self.pos.span(node.meta.start_pos, node.meta.end_pos)

    def expr(self, node: Tree) -> Expr:
        return getattr(self, "_" + node.data)(node)

    def _alt(self, node: Tree) -> Expr:
        leading = isinstance(node.children[0], Token)
        items = tuple(self.expr(child) for child in node.children if isinstance(child, Tree))
        if len(items) == 1 and not leading:
            return items[0]
        return Alt(items, span=self.span_of(node))

    def _seq(self, node: Tree) -> Expr:
        trailing = isinstance(node.children[-1], Token)
        items = tuple(self.expr(child) for child in node.children if isinstance(child, Tree))
        if len(items) == 1 and not trailing:
            return items[0]
        return Seq(items, span=self.span_of(node))

    def _postfix(self, node: Tree) -> Expr:
        result = self.expr(node.children[0])
        start = node.meta.start_pos
        for op in node.children[1:]:
            span = self.pos.span(start, op.end_pos)
            if op.type == "QMARK":
                result = Repeat(result, 0, 1, span=span)
            elif op.type == "STAR":
                result = Repeat(result, 0, None, span=span)
            elif op.type == "PLUS":
                result = Repeat(result, 1, None, span=span)
            else:
                low, high = self.lexed.counts[op.start_pos]
                result = Repeat(result, low, high, span=span)
        return result

    def _ref(self, node: Tree) -> Expr:
        return Ref(str(node.children[0]), span=self.span_of(node))

    def _string(self, node: Tree) -> Expr:
        token = node.children[0]
        return Literal(self.lexed.strings[token.start_pos], span=self.span_of(node))

    def _regex(self, node: Tree) -> Expr:
        token = node.children[0]
        prefix, body = self.lexed.regexes[token.start_pos]
        mode = _REGEX_PREFIXES[prefix]
        if mode == "substrs":
            return Substrings(body, span=self.span_of(node))
        return Regex(body, mode, span=self.span_of(node))

    def _any(self, node: Tree) -> Expr:
        return AnyToken(span=self.span_of(node))

    def _group(self, node: Tree) -> Expr:
        return self.expr(node.children[1])

    def _empty(self, node: Tree) -> Expr:
        return Seq((), span=self.span_of(node))

    def _optional(self, node: Tree) -> Expr:
        return Repeat(self.expr(node.children[1]), 0, 1, span=self.span_of(node))

    def _star(self, node: Tree) -> Expr:
        return Repeat(self.expr(node.children[1]), 0, None, span=self.span_of(node))

    def _except_(self, node: Tree) -> Expr:
        item_token = node.children[2].children[0]
        if item_token.type == "STRING":
            item: Literal | Ref = Literal(self.lexed.strings[item_token.start_pos], span=self.span_of(item_token))
        else:
            item = Ref(str(item_token), span=self.span_of(item_token))
        numbers = [child for child in node.children if isinstance(child, Token) and child.type == "NUMBER"]
        limit = int(numbers[0]) if numbers else None
        return Except(item, limit, span=self.span_of(node))

    def _json_string_except(self, node: Tree) -> Expr:
        words = tuple(self.lexed.strings[child.start_pos] for child in node.children
                      if isinstance(child, Token) and child.type == "STRING")
        return JsonStringExcept(words, span=self.span_of(node))

    def grammar(self, tree: Tree, start: str) -> Grammar:
        bodies: dict[str, list[Expr]] = {}
        spans: dict[str, Span] = {}
        for rule in tree.children:
            name_token, _, alt, _ = rule.children
            name = str(name_token)
            bodies.setdefault(name, []).append(self.expr(alt))
            spans.setdefault(name, self.span_of(name_token))
        return _merge_definitions(bodies, spans, start)


def parse_ebnf(text: str, start: str = "start", *, name: str = "<string>") -> Grammar:
    """Parse `text` in grammarc's EBNF dialect into a checked `Grammar`.

    Raises `GrammarError` (``name:line:col: message`` with the source line and a caret)
    for syntax errors and for the problems `grammarc.ir.check.check_grammar` finds.
    """
    if not isinstance(text, str):
        hint = "decode it first, e.g. data.decode('utf-8')" if isinstance(text, (bytes, bytearray)) else None
        raise GrammarError(f"grammar text must be a str, not {type(text).__name__}", hint=hint)
    if not isinstance(start, str):
        raise GrammarError(f"the start rule name must be a str, not {type(start).__name__}")
    source = Source(text, name)
    pos = _Positions(source)
    with gc_paused():
        try:
            grammar = _FastParser(_Lexer(text, pos), pos).grammar(start)
        except _Refused:
            lexer = _Lexer(text, pos)
            tree = _Feeder(lexer).parse()  # raises the precise syntax error
            grammar = _Builder(lexer.lexed, pos).grammar(tree, start)
    check_grammar(grammar)
    return grammar

