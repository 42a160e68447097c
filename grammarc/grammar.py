"""`grammarc.Grammar`: the IR grammar plus its front doors, the one class users hold.

The IR (`grammarc.ir.Grammar`) is plain data so that front-ends can build it without
importing the compiler. This facade sits above the front-ends, the lowering and the runtime
and adds what users call on a grammar: ``from_ebnf``, ``from_gbnf``, ``from_json_schema``, ``from_model``,
``from_regex``, ``from_file``, ``to_ebnf``, ``compile`` and ``accepts``. Every ``from_*``
returns an instance of this class; it compares equal to the IR grammar it wraps.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grammarc import ir
from grammarc.ir.printer import to_ebnf
from grammarc.lowering.compiler import compile_grammar
from grammarc.runtime.recognizer import Recognizer

if TYPE_CHECKING:
    from grammarc.lowering.compiler import CompiledGrammar


class Grammar(ir.Grammar):
    """A grammar: an ordered set of rules and a start rule, with its front doors.

    Build one with `Grammar.from_ebnf`, `Grammar.from_json_schema`, `Grammar.from_regex`,
    `Grammar.from_model` or `grammarc.stdlib`; or directly from IR nodes
    (``Grammar(rules=(("start", Literal("a")),))``).
    """

    __slots__ = ()

    @classmethod
    def of(cls, grammar: ir.Grammar) -> "Grammar":
        """`grammar` as this class (itself when it already is one)."""
        if isinstance(grammar, cls):
            return grammar
        return cls(rules=grammar.rules, start=grammar.start, rule_spans=grammar.rule_spans)

    # -- front doors ------------------------------------------------------------------
    @classmethod
    def from_ebnf(cls, text: str, start: str = "start", *, name: str = "<string>") -> "Grammar":
        """Parse grammar text in grammarc's EBNF dialect (see docs/dialect.rst)."""
        from grammarc.frontends.ebnf import parse_ebnf

        return cls.of(parse_ebnf(text, start=start, name=name))

    @classmethod
    def from_lark(cls, text: str, start: str = "start", *, name: str = "<string>") -> "Grammar":
        """Parse a Lark grammar (see docs/importing.rst for how its meaning maps to ours)."""
        from grammarc.frontends.lark_grammar import lark_to_grammar

        return cls.of(lark_to_grammar(text, start=start, name=name))

    @classmethod
    def from_gbnf(cls, text: str, *, name: str = "<string>") -> "Grammar":
        """Parse llama.cpp GBNF text (start rule ``root``; see docs/importing.rst)."""
        from grammarc.frontends.gbnf import gbnf_to_grammar

        return cls.of(gbnf_to_grammar(text, name=name))

    @classmethod
    def from_file(cls, path: str | os.PathLike, start: str = "start") -> "Grammar":
        """Parse an ``.ebnf`` file; errors name the file."""
        path = Path(path)
        return cls.from_ebnf(path.read_text(encoding="utf-8"), start=start, name=str(path))

    @classmethod
    def from_regex(cls, pattern: str) -> "Grammar":
        """The language of strings that `pattern` matches in full."""
        return cls(rules=(("start", ir.Regex(pattern)),), start="start")

    @classmethod
    def from_json_schema(cls, schema: Any, **options: Any) -> "Grammar":
        """The JSON texts that validate against `schema` (a dict, or JSON text)."""
        from grammarc.frontends.jsonschema import schema_to_grammar

        return cls.of(schema_to_grammar(schema, **options))

    @classmethod
    def from_model(cls, model: Any, **options: Any) -> "Grammar":
        """The JSON texts that a Pydantic model, dataclass or typing type validates."""
        from grammarc.frontends.pydantic_model import model_to_grammar

        return cls.of(model_to_grammar(model, **options))

    # -- back doors -------------------------------------------------------------------
    def to_ebnf(self) -> str:
        """Canonical grammar text: ``Grammar.from_ebnf(g.to_ebnf(), start=g.start) == g``."""
        return to_ebnf(self)

    def compile(self, **options: Any) -> "CompiledGrammar":
        """Lower to terminal automata and LR tables (cached per grammar and options)."""
        return compile_grammar(self, **options)

    def accepts(self, text: str | bytes) -> bool:
        """Whether the whole of `text` is a string of the language (no vocabulary involved)."""
        return Recognizer(self.compile()).accepts(text)
