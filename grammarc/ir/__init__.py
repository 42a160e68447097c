"""The intermediate representation: what every front-end builds and the lowering consumes.

`nodes` holds the expression dataclasses and the data-only `Grammar`; `printer` turns IR back
into canonical ``.ebnf`` text; `check` resolves names and reports grammar errors. Nothing here
imports the lowering, the runtime or a front-end.
"""

from grammarc.ir.nodes import (
    EXPR_TYPES,
    Alt,
    AnyToken,
    Except,
    Expr,
    Grammar,
    JsonStringExcept,
    Literal,
    Ref,
    Regex,
    RegexMode,
    Repeat,
    Seq,
    Substrings,
    children,
    references,
    walk,
)

__all__ = [
    "EXPR_TYPES", "Alt", "AnyToken", "Except", "Expr", "Grammar", "JsonStringExcept", "Literal", "Ref",
    "Regex", "RegexMode", "Repeat", "Seq", "Substrings", "children", "references", "walk",
]
