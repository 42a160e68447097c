"""Lark front-end: lark's shipped grammars, differential tests against Lark's Earley parser,
and exact refusals. Expected answers come from Lark itself wherever it can give them."""

from __future__ import annotations

import re
from pathlib import Path

import lark
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from lark.load_grammar import GrammarBuilder

from grammarc import Grammar, GrammarError

GRAMMARS = Path(lark.__file__).parent / "grammars"
SHIPPED = sorted(GRAMMARS.glob("*.lark"))
LARK_LARK = (GRAMMARS / "lark.lark").read_text()
# lark.lark's OP looks at the character after the token (`[?](?![a-z])`): lexer context that
# a scannerless grammar cannot see, so grammarc refuses it (test_refuses_context_lookahead).
# The acceptance test uses OP without the lookahead.
OP_LINE = "OP: /[+*]|[?](?![a-z])/"
META_TEXT = LARK_LARK.replace(OP_LINE, "OP: /[+*?]/")


@pytest.fixture(scope="module")
def meta() -> Grammar:
    assert OP_LINE in LARK_LARK
    return Grammar.from_lark(META_TEXT, name="lark.lark")


def lark_terminals(text: str) -> list[str]:
    builder = GrammarBuilder(False, [])
    builder.load_grammar(text, "<test>")
    return [name for name, d in builder._definitions.items() if d.is_term and not name.startswith("_")]


def test_shipped_grammars_present():
    assert {p.name for p in SHIPPED} >= {"common.lark", "lark.lark", "python.lark", "unicode.lark"}


@pytest.mark.parametrize("name", ["common.lark", "unicode.lark"])
def test_terminal_libraries_load_every_terminal(name):
    text = (GRAMMARS / name).read_text()
    terminals = lark_terminals(text)
    assert len(terminals) >= 2
    for terminal in terminals:
        Grammar.from_lark(text, start=terminal).compile()


def test_python_grammar_refuses_declare_exactly():
    text = (GRAMMARS / "python.lark").read_text()
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark(text, start="file_input", name="python.lark")
    line = text[: text.index("%declare _INDENT")].count("\n") + 1
    assert str(info.value) == (
        f"python.lark:{line}:10: %declare _INDENT is not supported: a declared symbol has no "
        "definition (Lark leaves it to a postlexer), so grammarc cannot know its language\n"
        "%declare _INDENT _DEDENT\n         ^^^^^^^"
    )


def test_refuses_context_lookahead():
    with pytest.raises(GrammarError) as info:
        Grammar.from_lark(LARK_LARK, name="lark.lark")
    line = LARK_LARK[: LARK_LARK.index(OP_LINE)].count("\n") + 1
    assert str(info.value) == (
        f"lark.lark:{line}:1: terminal OP: lookaround inside a group, alternation or "
        f"repetition is not supported\n{OP_LINE}\n^^"
    )


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_meta_grammar_accepts_every_shipped_grammar(meta, path):
    assert meta.accepts(path.read_text())
