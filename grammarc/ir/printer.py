"""IR -> canonical `.ebnf` text, the inverse of `grammarc.frontends.ebnf.parse_ebnf`.

Users read and diff the grammars grammarc derives from schemas, so the text is canonical
(one spelling per IR) and exact: ``Grammar.from_ebnf(to_ebnf(g), start=g.start) == g``
for every grammar that passes `grammarc.ir.check.check_grammar`.

Canonical forms:

* one rule per line, ``name ::= rhs;``; a rule whose top-level alternation would make the
  line longer than 80 characters puts each alternative on its own line, the ``|`` aligned
  under the ``=`` of ``::=``;
* parentheses only where the structure needs them: ``|`` binds loosest, then sequence,
  then postfix repetition. An alternation inside an alternation, or a sequence inside a
  sequence, is parenthesized too, because the parser keeps that nesting as written;
  a repetition of a repetition is written ``(x*)?`` rather than ``x*?``;
* ``Seq(())`` (the empty sequence) is ``()``, while ``Literal('')`` is ``""``;
  a one-item ``Seq((x,))`` is ``(x,)`` and a one-item ``Alt((x,))`` is ``(| x)`` (the
  parser reads a trailing ``,`` / leading ``|`` as "this is a sequence / an alternation");
* literals in double quotes, escaping only ``"``, ``\\`` and characters that are not
  printable: ``\\n \\r \\t``, else ``\\xHH`` below U+0100, ``\\uXXXX`` in the BMP and
  ``\\u{XXXXX}`` above; printable non-ASCII characters are written as themselves;
* regexes as ``#/R/`` (``#e/R/``, ``#ex/R/``) when R has no ``/``, no unprintable
  character and does not end in an odd run of backslashes, else in the quoted form
  ``#"R"`` with R escaped like a literal; the empty pattern is ``#""``;
* ``#substrs"S"``, ``any!``, ``except!("x")``, ``except!(name, 3)``,
  ``json_string_except!("a", "b")``; a rule that is one ``json_string_except!`` too long for
  its line lists the strings on indented lines of their own, filled to 80 characters;
* repetitions as ``?`` ``*`` ``+`` ``{m}`` ``{m,}`` ``{m,n}`` (``[x]`` and ``{x}`` read
  back as ``x?`` and ``x*``).
"""

from __future__ import annotations

from grammarc.ir.check import check_depth
from grammarc.ir.nodes import (
    Alt, AnyToken, Except, Expr, Grammar, JsonStringExcept, Literal, Ref, Regex, Repeat, Seq, Substrings,
)

__all__ = ["to_ebnf", "expr_to_ebnf", "quote"]

_LINE_WIDTH = 80
_NAMED_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_REGEX_PREFIX = {"match": "#", "early": "#e", "complement": "#ex"}


def to_ebnf(grammar: Grammar) -> str:
    """The canonical text of `grammar`, one rule per line, ending with a newline."""
    check_depth(grammar)  # printing recurses on expressions
    return "".join(_rule(name, expr) + "\n" for name, expr in grammar.rules)


def expr_to_ebnf(expr: Expr) -> str:
    """The canonical text of one expression (as it would appear as a rule's right side)."""
    return _expr(expr, _TOP)


def quote(text: str) -> str:
    """`text` as a double-quoted literal with the minimal escapes."""
    if text.isprintable() and '"' not in text and "\\" not in text:  # most texts: nothing to escape
        return '"' + text + '"'
    return '"' + "".join(_escape_char(char) for char in text) + '"'


def _escape_char(char: str) -> str:
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    if char.isprintable():
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02X}"
    if code < 0x10000:
        return f"\\u{code:04X}"
    return f"\\u{{{code:X}}}"


def _rule(name: str, expr: Expr) -> str:
    head = f"{name} ::= "
    line = head + _expr(expr, _TOP) + ";"
    if len(line) <= _LINE_WIDTH:
        return line
    if isinstance(expr, JsonStringExcept) and expr.words:
        return head + "json_string_except!(\n" + _filled([quote(word) for word in expr.words]) + ");"
    if not isinstance(expr, Alt) or len(expr.items) < 2:
        return line
    joiner = "\n" + " " * (len(name) + 3) + "| "
    return head + joiner.join(_expr(item, _IN_ALT) for item in expr.items) + ";"


def _filled(words: list[str]) -> str:
    """`words` separated by commas, in indented lines of at most `_LINE_WIDTH` characters
    with the ``);`` that closes the last (a longer word alone on its line)."""
    lines: list[str] = []
    line = ""
    for i, word in enumerate(words):
        after = 2 if i == len(words) - 1 else 1  # ");" after the last, "," after the others
        if line and len(line) + 2 + len(word) + after > _LINE_WIDTH:
            lines.append(line + ",")
            line = ""
        line = f"{line}, {word}" if line else f"    {word}"
    return "\n".join(lines + [line])


# Contexts, loosest to tightest.
_TOP, _IN_ALT, _IN_SEQ, _IN_REPEAT = range(4)


def _expr(expr: Expr, context: int) -> str:
    if isinstance(expr, Alt):
        if len(expr.items) == 1:
            return "(| " + _expr(expr.items[0], _IN_ALT) + ")"
        text = " | ".join(_expr(item, _IN_ALT) for item in expr.items)
        return text if context == _TOP else f"({text})"
    if isinstance(expr, Seq):
        if not expr.items:
            return "()"
        if len(expr.items) == 1:
            return "(" + _expr(expr.items[0], _IN_SEQ) + ",)"
        text = " ".join(_expr(item, _IN_SEQ) for item in expr.items)
        return text if context <= _IN_ALT else f"({text})"
    if isinstance(expr, Repeat):
        text = _expr(expr.item, _IN_REPEAT) + _repeat_suffix(expr.min, expr.max)
        return f"({text})" if context == _IN_REPEAT else text
    return _atom(expr)


def _repeat_suffix(low: int, high: int | None) -> str:
    if (low, high) == (0, 1):
        return "?"
    if (low, high) == (0, None):
        return "*"
    if (low, high) == (1, None):
        return "+"
    if high is None:
        return f"{{{low},}}"
    if low == high:
        return f"{{{low}}}"
    return f"{{{low},{high}}}"


def _atom(expr: Expr) -> str:
    if isinstance(expr, Literal):
        return quote(expr.text)
    if isinstance(expr, Ref):
        return expr.name
    if isinstance(expr, Regex):
        return _REGEX_PREFIX[expr.mode] + _regex_body(expr.pattern)
    if isinstance(expr, Substrings):
        return "#substrs" + quote(expr.text)
    if isinstance(expr, AnyToken):
        return "any!"
    if isinstance(expr, JsonStringExcept):
        return "json_string_except!(" + ", ".join(quote(word) for word in expr.words) + ")"
    if isinstance(expr, Except):
        item = _atom(expr.item)
        return f"except!({item})" if expr.limit is None else f"except!({item}, {expr.limit})"
    raise TypeError(f"not an IR expression: {expr!r}")


def _regex_body(pattern: str) -> str:
    trailing = len(pattern) - len(pattern.rstrip("\\"))
    raw_ok = pattern and "/" not in pattern and pattern.isprintable() and trailing % 2 == 0
    return f"/{pattern}/" if raw_ok else quote(pattern)
