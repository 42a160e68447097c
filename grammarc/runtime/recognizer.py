"""A scannerless GLR recognizer over bytes: the reference semantics of a compiled grammar.

`Recognizer` answers whole-text membership, viable prefixes and the next bytes for one
text, without any vocabulary. It reads the text with the runtime's one stepping core
(grammarc.runtime.stepping, shared with the engine) over the graph-structured stack of
grammarc.runtime.gss; see there for the items, levels and reductions.
"""

from __future__ import annotations

from dataclasses import dataclass

from grammarc.lowering.compiler import CompiledGrammar
from grammarc.runtime import stepping
from grammarc.runtime.gss import parser_core

__all__ = ["Failure", "Recognizer"]


@dataclass(frozen=True)
class Failure:
    """Where and why a text left the language (for `grammarc check` and errors)."""

    offset: int  # index of the first byte that cannot continue the text
    expected: tuple[str, ...]  # names of the terminals that could continue there
    next_bytes: frozenset[int]  # the bytes that could have come instead


class Recognizer:
    """Incremental membership for one text: feed bytes, ask whether the text is complete.
    It steps with the engine's own core (grammarc.runtime.stepping), reading plain text."""

    def __init__(self, compiled: CompiledGrammar):
        self.compiled = compiled
        self.core = parser_core(compiled)
        self._terminals = compiled.terminals
        self.items: frozenset = stepping.initial(self.core)
        self.consumed = 0

    def reset(self) -> None:
        self.items = stepping.initial(self.core)
        self.consumed = 0

    def clone(self) -> "Recognizer":
        twin = object.__new__(Recognizer)
        twin.compiled, twin.core, twin._terminals = self.compiled, self.core, self._terminals
        twin.items, twin.consumed = self.items, self.consumed
        return twin

    # -- stepping ---------------------------------------------------------------------
    def step(self, items: frozenset, byte: int) -> frozenset:
        """The items after one more byte (empty: the byte cannot continue the text)."""
        return stepping.step(self.core, self._terminals, items, bytes((byte,)))

    def feed(self, data: bytes | str) -> bool:
        """Consume `data` if the text stays a viable prefix; otherwise change nothing."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if not data:
            return True
        items = stepping.step(self.core, self._terminals, self.items, data)
        if not items:
            return False
        self.items = items
        self.consumed += len(data)
        return True

    def is_complete(self) -> bool:
        """Whether the text fed so far is a string of the language."""
        if self.consumed == 0 and self.compiled.accepts_empty:
            return True
        return stepping.complete(self.core, self._terminals, self.items)

    def next_bytes(self) -> set[int]:
        """The bytes that keep the text a viable prefix."""
        return stepping.next_bytes(self._terminals, self.items)

    def expected(self) -> tuple[str, ...]:
        """Names of the terminals that could continue the text (sorted, unique)."""
        return stepping.expected(self._terminals, self.items)

    # -- one-shot questions -----------------------------------------------------------
    def accepts(self, text: bytes | str) -> bool:
        twin = self.clone()
        twin.reset()
        return twin.feed(text) and twin.is_complete()

    def is_prefix(self, text: bytes | str) -> bool:
        twin = self.clone()
        twin.reset()
        return twin.feed(text)

    def first_failure(self, text: bytes | str) -> Failure | None:
        """None if `text` is a viable prefix, else the offset of the first bad byte."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        items = stepping.initial(self.core)
        for offset, byte in enumerate(text):
            nxt = self.step(items, byte)
            if not nxt:
                return Failure(offset, stepping.expected(self._terminals, items),
                               frozenset(stepping.next_bytes(self._terminals, items)))
            items = nxt
        return None
