"""Recognizing and masking stay linear in the text for deterministic grammars (issue 10),
whichever direction they recurse.

Measured without a clock: `ParserCore.work` counts the GSS vertices made and the
reduction steps taken. Doubling the text may at most double that work. Eager LR(0)
reductions made right recursion reduce the whole stack at every position (quadratic
work, cubic time); lazy reductions per lookahead, memoized per vertex, do not.
"""

from __future__ import annotations

import pytest

from grammarc import Grammar, Vocabulary
from grammarc.engine import Engine
from grammarc.lowering import compiler
from grammarc.runtime.gss import parser_core
from grammarc.runtime.recognizer import Recognizer

DETERMINISTIC = {
    # name: (grammar, text of about n bytes)
    "right": ("start ::= 'a' start | 'a' ;", lambda n: "a" * n),
    "right-tail": ("start ::= 'a' start | 'b' ;", lambda n: "a" * (n - 1) + "b"),
    "left": ("start ::= start 'a' | 'a' ;", lambda n: "a" * n),
    "middle": ("start ::= '(' start ')' | 'x' ;", lambda n: "(" * (n // 2) + "x" + ")" * (n // 2)),
    "list": (
        "start ::= '[' items ']' ; items ::= item ',' items | item ; item ::= #'[0-9]+' ;",
        lambda n: "[" + ",".join(["12"] * (n // 3)) + "]",
    ),
    "gbnf-style": (
        "start ::= line start | line ; line ::= word ' ' word '\\n' ; word ::= #'[a-z]+' ;",
        lambda n: "ab cd\n" * (n // 6),
    ),
    "nested-right": (
        "start ::= '{' body '}' ; body ::= pair ';' body | pair ; pair ::= 'k' '=' value ; value ::= 'v' | '{' body '}' ;",
        lambda n: "{" + "k=v;k={" * (n // 8) + "k=v" + "}" * (n // 8) + "}",
    ),
}
N = 200
SLACK = 16  # constant set-up work (the first levels, the end of the text)


def _fresh(source: str):
    compiler._compile_cached.cache_clear()  # a core of its own: no memo from another test
    return Grammar.from_ebnf(source).compile()


def _recognizer_work(source: str, text: str) -> int:
    compiled = _fresh(source)
    recognizer = Recognizer(compiled)
    core = parser_core(compiled)
    before = sum(core.work.values())
    assert recognizer.feed(text) and recognizer.is_complete()
    return sum(core.work.values()) - before


_VOCAB = Vocabulary.from_bytes(
    [bytes([b]) for b in range(256)] + [b"aa", b"k={", b"},", b"12,12", None], eos_token_ids=[260]
)


def _engine_work(source: str, text: str) -> int:
    compiled = _fresh(source)
    engine = Engine(compiled, _VOCAB)
    core = parser_core(compiled)
    before = sum(core.work.values())
    for byte in text.encode():
        assert engine.allowed_mask()[byte]
        engine.advance(byte)
    assert engine.allowed_mask()[260]
    return sum(core.work.values()) - before


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_recognizer_work_is_linear(name):
    source, make = DETERMINISTIC[name]
    small, large = _recognizer_work(source, make(N)), _recognizer_work(source, make(2 * N))
    assert large <= 2 * small + SLACK, (name, small, large)


@pytest.mark.parametrize("name", sorted(DETERMINISTIC))
def test_engine_work_is_linear(name):
    source, make = DETERMINISTIC[name]
    small, large = _engine_work(source, make(N)), _engine_work(source, make(2 * N))
    assert large <= 2 * small + SLACK, (name, small, large)


def test_right_recursion_work_exactly():
    """Per byte: one shifted vertex, one reduction to `start` and one step down the
    memoized chain; the chain's end (EOF) is reached from the memo at every position."""
    source = "start ::= 'a' start | 'a' ;"
    assert [_recognizer_work(source, "a" * n) for n in (100, 200, 400)] == [4 * 100 + 1, 4 * 200 + 1, 4 * 400 + 1]


def test_right_recursion_masks_exact_at_depth():
    """Deep right recursion keeps exact masks: 'b' may come anywhere, EOF only after 'b'."""
    compiled = _fresh("start ::= 'a' start | 'b' ;")
    engine = Engine(compiled, _VOCAB)
    for _ in range(300):
        allowed = set(engine.allowed_token_ids().tolist())
        assert allowed == {ord("a"), ord("b"), 256}  # 'a', 'b', 'aa'
        engine.advance(ord("a"))
    engine.advance(ord("b"))
    assert set(engine.allowed_token_ids().tolist()) == {260}


RECURSIVE = {
    # grammars that recurse every way, deterministic or not, over a small alphabet
    "right": ("start ::= 'a' start | 'a' ;", "ab"),
    "right-conflict": ("start ::= 'a' start | 'a' | 'a' 'a' ;", "ab"),
    "right-sep": ("start ::= 'a' ',' start | 'a' ; ", "a,"),
    "right-under-left": ("start ::= start 'b' list | list ; list ::= 'a' list | 'a' ;", "ab"),
    "middle-right": ("start ::= 'a' start 'b' | 'a' rest ; rest ::= 'b' rest | 'b' ;", "ab"),
    "lexical": ("start ::= word start | word ; word ::= #'a+' | 'ab' ;", "ab"),
    # two reductions reach one closure, one of them from a vertex that shifts itself
    "unit-left": ("start ::= start '' | start | r1 | 'a' ; r1 ::= r1 'a' | r1 | 'a' ;", "ab"),
}


@pytest.mark.parametrize("name", sorted(RECURSIVE))
def test_recursive_grammars_agree_with_the_oracle(name):
    """Membership and viable prefixes (what masks rest on) equal the brute-force oracle's."""
    import oracle

    source, alphabet = RECURSIVE[name]
    grammar = Grammar.from_ebnf(source)
    language = oracle.language(grammar, alphabet, 10)
    prefixes = {w[:i] for w in language for i in range(len(w) + 1)}
    recognizer = Recognizer(grammar.compile())
    for s in oracle.universe(alphabet, 8):
        assert recognizer.accepts(s) == (s in language), s
        if len(s) <= 5:  # each of these grammars completes a viable prefix of 5 within 10
            assert recognizer.is_prefix(s) == (s in prefixes), s


def test_bench_recursion_runs(capsys, monkeypatch):
    """bench/recursion.py prints its table (a smoke run on short texts)."""
    import bench_scripts

    module = bench_scripts.load("recursion.py", "bench_recursion")
    try:
        monkeypatch.setattr("sys.argv", ["recursion.py", "--lengths", "8,16", "--grammars", "right,ambiguous"])
        module.main()
    finally:
        bench_scripts.unload("bench_recursion")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["grammar", "bytes", "recognize", "s", "work", "engine", "s"]
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[1], r[3]) for r in rows] == [("right", "8", "33"), ("right", "16", "65"), ("ambiguous", "1", "5"), ("ambiguous", "2", "9")]
