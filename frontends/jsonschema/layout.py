"""JSON text primitives: whitespace, separators and literal strings, as the layout options say."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from json.encoder import encode_basestring, encode_basestring_ascii

from grammarc.ir import Alt, Expr, Literal, Ref, Repeat, Seq

MAX_INDENT_DEPTH = 32
NUMBER_RFC = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
WS_BOUNDED = r"[ \t]{1,2}(?:\r?\n[ \t]{0,64})?|\r?\n[ \t]{0,64}"
WS_UNBOUNDED = r"[ \t\n\r]+"


@dataclass(frozen=True)
class Layout:
    """Where whitespace and separators go. `indent` set: fixed pretty layout per depth."""

    ws: Expr | None  # optional whitespace between tokens (None: none)
    ws_pattern: str | None
    item_sep: str
    key_sep: str
    indent: int | None

    @staticmethod
    def make(whitespace: str, indent: int | None, separators) -> "Layout":
        """The layout of these options: one per set of options, kept (a layout is immutable,
        and a schema's every member asks for its `_pieces`, built once per layout)."""
        try:
            return _kept_layout(whitespace, indent, separators)
        except TypeError:  # unhashable options (separators as a list): made as they are
            return _layout(whitespace, indent, separators)

    def _pad(self, depth: int) -> Literal:
        return Literal("\n" + " " * (self.indent * depth))

    @cached_property
    def _pieces(self) -> dict[str, tuple[Expr, ...]]:
        """What every object, member and item of an unindented layout repeats, built once
        (nodes are immutable, so one copy serves them all): an opening bracket and what
        follows it, a closing one and what precedes it, the item and key separators."""
        ws = (self.ws,) if self.ws is not None else ()
        pieces = {bracket: (Literal(bracket), *ws) for bracket in "[{"}
        pieces.update({bracket: (*ws, Literal(bracket)) for bracket in "]}"})
        pieces.update({",": (*ws, Literal(self.item_sep), *ws), ":": (*ws, Literal(self.key_sep), *ws)})
        return pieces

    def open(self, bracket: str, depth: int) -> tuple[Expr, ...]:
        if self.indent is not None:
            return (Literal(bracket), self._pad(depth + 1))
        return self._pieces[bracket]

    def close(self, bracket: str, depth: int) -> tuple[Expr, ...]:
        if self.indent is not None:
            return (self._pad(depth), Literal(bracket))
        return self._pieces[bracket]

    def empty(self, pair: str) -> tuple[Expr, ...]:
        if self.ws is not None:
            return (Literal(pair[0]), self.ws, Literal(pair[1]))
        return (Literal(pair),)

    def container(self, pair: str, depth: int, allow_empty: bool, content: Expr | None) -> Expr | None:
        """An object or array (`pair` is "{}" or "[]"): the empty one when `allow_empty`, and
        `content` between the brackets when there is some; None when it can be neither."""
        parts: list[Expr] = []
        if allow_empty:
            parts.append(Seq(tuple(self.empty(pair))))
        if content is not None:
            parts.append(Seq((*self.open(pair[0], depth), content, *self.close(pair[1], depth))))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Alt(tuple(parts))

    def sep(self, depth: int) -> tuple[Expr, ...]:
        if self.indent is not None:
            return (Literal(self.item_sep), self._pad(depth + 1))
        return self._pieces[","]

    def colon(self) -> tuple[Expr, ...]:
        return self._pieces[":"]


def _layout(whitespace: str, indent: int | None, separators) -> Layout:
    """The layout the options say (`Layout.make`, uncached)."""
    if indent is not None:
        item, key = separators if separators else (",", ": ")
        return Layout(None, None, item, key, indent)
    if separators is not None:
        item, key = separators
        return Layout(None, None, item, key, None)
    if whitespace == "compact":
        return Layout(None, None, ",", ":", None)
    pattern = WS_BOUNDED if whitespace == "bounded" else WS_UNBOUNDED
    return Layout(Repeat(Ref("ws"), 0, 1), pattern, ",", ":", None)


_kept_layout = lru_cache(maxsize=64, typed=True)(_layout)


def string_literal(s: str) -> Expr:
    """`s` as ``json.dumps`` writes it, raw and with ``ensure_ascii`` (one literal when equal)."""
    if isinstance(s, str):  # what json.dumps does for a string, without an encoder built per call
        raw, ascii_ = encode_basestring(s), encode_basestring_ascii(s)
    else:
        raw, ascii_ = json.dumps(s, ensure_ascii=False), json.dumps(s)
    if raw == ascii_:
        return Literal(raw)
    return Alt((Literal(raw), Literal(ascii_)))


def key_literal(k: str) -> Expr:
    return string_literal(k)
