"""The lowering's library (grammarc.lowering.rule_graph): which rules it is, and that a
grammar compiles to the same thing whether its library was lowered now or taken from the
memo another grammar left.

The library is lowered first and on its own, so what it makes must be a function of its
rules; the memo hands a copy of that to the next grammar. These tests compile each grammar
with the memo empty and again after other grammars with the same library filled it, and
compare the compiled grammars field by field (terminal names, automata, productions,
tables): a memo that shared its state instead of copying it, or kept too little of it,
gives a different grammar.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings

import grammarc
from grammarc import Grammar
from grammarc.ir import Alt, Literal, Ref, Seq
from grammarc.ir.check import check_grammar
from grammarc.lowering import compiler, rule_graph
from strategies import grammars

ROOT = Path(__file__).resolve().parents[1]
MASKBENCH = ROOT.parent / "shared" / "data" / "maskbench-dev"


def _library(ebnf: str) -> tuple[str, ...]:
    grammar = Grammar.from_ebnf(ebnf)
    return rule_graph.rule_kinds(check_grammar(grammar), grammar.start)[1]


def test_the_library_is_the_first_recursive_group_over_regular_rules_and_what_it_uses():
    assert _library('start ::= "{" value "}"; value ::= "[" value "]" | num | word; '
                    'num ::= #"[0-9]+"; word ::= "x" num;') == ("value", "num", "word")
    # `a` is recursive but uses `b`, itself recursive: `b` (callees first) is the library
    assert _library('start ::= a; a ::= "(" a ")" | b; b ::= "[" b "]" | "x";') == ("b",)
    # a group of two, from its first rule in grammar order
    assert _library('start ::= "<" s ">"; s ::= "[" t "]" | "x"; t ::= s "," s;') == ("s", "t")


def test_no_library_when_it_is_the_start_rule_too_large_or_absent():
    assert _library('start ::= "(" start ")" | "x";') == ()
    assert _library('start ::= "a" b; b ::= "c";') == ()
    many = " | ".join(f"w{i}" for i in range(rule_graph.LIBRARY_MAX_RULES))
    words = " ".join(f'w{i} ::= "{i}";' for i in range(rule_graph.LIBRARY_MAX_RULES))
    assert _library(f'start ::= "<" v ">"; v ::= "[" v "]" | {many}; {words}') == ()
    fewer = " | ".join(f"w{i}" for i in range(rule_graph.LIBRARY_MAX_RULES - 1))
    words = " ".join(f'w{i} ::= "{i}";' for i in range(rule_graph.LIBRARY_MAX_RULES - 1))
    assert len(_library(f'start ::= "<" v ">"; v ::= "[" v "]" | {fewer}; {words}')) == rule_graph.LIBRARY_MAX_RULES


def _compile(grammar: Grammar):
    """A lowering of its own (not the compile caches, which would answer equal grammars)."""
    return compiler._compile_new(grammar, grammarc.automata.DEFAULT_MAX_STATES, compiler.DEFAULT_MERGE_MAX_STATES)


def _form(compiled) -> tuple:
    return (tuple((t.name, t.dfa.key, t.any_token, t.token_limit) for t in compiled.terminals),
            compiled.bnf.nonterminals, compiled.bnf.productions, compiled.tables.action, compiled.tables.goto,
            compiled.accepts_empty)


def _fresh(grammar: Grammar):
    """`grammar` compiled with the memo empty (and the memo left holding its library)."""
    rule_graph._LIBRARIES.clear()
    return _form(_compile(grammar))


def _same_from_memo(first: Grammar, second: Grammar) -> None:
    """`second` compiles alike with an empty memo and after `first` filled it; and so does
    `first` again after `second` took its library from the memo."""
    alone = _fresh(second)
    before = _fresh(first)
    assert _form(_compile(second)) == alone
    assert _form(_compile(first)) == before


def _schemas(count: int) -> list[Grammar]:
    """The first `count` MaskBench schemas (by file name) whose grammars have a library."""
    if not MASKBENCH.is_dir():
        pytest.skip(f"MaskBench schemas not found at {MASKBENCH}")
    found = []
    for path in sorted(MASKBENCH.glob("*.json")):
        try:
            grammar = Grammar.from_json_schema(json.loads(path.read_text())["schema"])
        except grammarc.GrammarcError:
            continue
        if rule_graph.rule_kinds(check_grammar(grammar), grammar.start)[1]:
            found.append(grammar)
            if len(found) == count:
                return found
    raise AssertionError(f"only {len(found)} MaskBench schemas have a library")


def test_schemas_compile_alike_with_and_without_the_memo():
    schemas = _schemas(30)
    for first, second in zip(schemas, schemas[1:]):
        _same_from_memo(first, second)


def test_a_library_met_before_is_not_lowered_again(monkeypatch):
    first, second = _schemas(2)
    lowered: list[str] = []
    alternatives = compiler._Lowering.alternatives

    def recording(self, nt, items, rule):
        lowered.append(rule)
        return alternatives(self, nt, items, rule)

    monkeypatch.setattr(compiler._Lowering, "alternatives", recording)
    _fresh(first)
    assert "value" in lowered
    lowered.clear()
    _compile(second)
    assert "value" not in lowered and lowered  # the schema's own rules only


@settings(max_examples=150, deadline=None)
@given(grammars(max_rules=5))
def test_grammars_around_a_shared_library_compile_alike_with_and_without_the_memo(grammar):
    # two hosts of the drawn rules: whatever library they hold, the hosts share it
    rules = grammar.rules
    hosts = [Grammar(((name, body),) + rules, start=name) for name, body in (
        ("host", Alt((Seq((Literal("<"), Ref("start"), Literal(">"))), Literal("!")))),
        ("host2", Seq((Ref("start"), Literal(","), Ref("start")))),
    )]
    try:
        _fresh(hosts[0])
        _fresh(hosts[1])
    except grammarc.GrammarcError:
        return
    _same_from_memo(*hosts)


def test_libraries_of_the_same_names_but_other_rules_or_options_are_not_confused():
    one = Grammar.from_ebnf('start ::= "<" value ">"; value ::= "[" value "]" | num; num ::= #"[0-9]";')
    other = Grammar.from_ebnf('start ::= "<" value ">"; value ::= "[" value "]" | num; num ::= #"[a-z]";')
    _same_from_memo(one, other)
    assert Grammar.from_ebnf(other.to_ebnf()).accepts("<[[q]]>") and not other.accepts("<[[1]]>")
    # under a merge budget of 1, "[" "(" are two terminals, not one
    nested = Grammar.from_ebnf('start ::= "<" value ">"; value ::= "[" "(" value ")" "]" | "x";')
    rule_graph._LIBRARIES.clear()
    small = _form(compiler._compile_new(nested, grammarc.automata.DEFAULT_MAX_STATES, 1))
    rule_graph._LIBRARIES.clear()
    assert _form(_compile(nested)) != small
    assert _form(compiler._compile_new(nested, grammarc.automata.DEFAULT_MAX_STATES, 1)) == small


def test_a_library_holding_large_automata_is_not_kept_and_the_memo_stays_bounded():
    # a trie of distinct hex words: thousands of states that minimization cannot share
    words = " | ".join(f'"{hashlib.sha1(str(i).encode()).hexdigest()[:8]}"' for i in range(600))
    large = Grammar.from_ebnf(f'start ::= "<" value ">"; value ::= "[" value "]" | {words};')
    rule_graph._LIBRARIES.clear()
    _compile(large)
    assert rule_graph._LIBRARIES == {}
    for i in range(40):  # small libraries, each its own
        _compile(Grammar.from_ebnf(f'start ::= "<" value ">"; value ::= "[" value "]" | "{"x" * (i + 1) * 20}";'))
    held = [size for _, size in rule_graph._LIBRARIES.values()]
    assert 0 < len(held) < 40 and sum(held) <= rule_graph.MEMO_STATES
    assert all(size <= rule_graph.LIBRARY_MAX_STATES for size in held)


def test_threads_lowering_one_library_at_once_compile_what_one_thread_does():
    schemas = _schemas(8)
    rule_graph._LIBRARIES.clear()
    alone = [_form(_compile(grammar)) for grammar in schemas]
    for _ in range(3):
        rule_graph._LIBRARIES.clear()  # every thread may lower the library and keep it, or take it
        with ThreadPoolExecutor(max_workers=8) as pool:
            assert list(pool.map(lambda grammar: _form(_compile(grammar)), schemas)) == alone
