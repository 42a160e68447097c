"""The GLR runtime's compiled core (grammarc.runtime._gss) against its Python oracle
(tests/gss_reference.py, the code it was ported from).

On random grammars and texts, read whole or in chunks, as plain text or as tokens, the two
must agree exactly: the item sets after each step (vertex graphs compared by state and
parent structure: the two cores' vertices are different objects), the levels (states,
accepting, vertices), the hypothetical shifts of token tree walks (`shift`), `pure_shift`,
`shiftable`, and the work counts. And the compiled core's own contracts: hash-consed levels
and vertices (identity is equality), walk levels made afresh, vertices freed by reference
counting, memos dropped past the limit without changing an answer, precise errors.
"""

from __future__ import annotations

import gc
import random
import sys
import weakref
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import gss_reference as ref
from grammarc import Grammar
from grammarc.runtime import gss, stepping
from grammarc.runtime.recognizer import Recognizer
from strategies import grammars


class _Forms:
    """Vertices as small ints, equal exactly when the vertex graphs below them are equal (by
    state and set of parents), whichever core made them: structures are interned bottom up,
    so comparing two forms never walks a graph again (shared stacks are DAGs). Iterative:
    stacks are deep."""

    def __init__(self) -> None:
        self.interned: dict[tuple, int] = {}
        self.memo: dict[int, int] = {}
        self.alive: list = []  # keeps the vertices whose id() the memo holds

    def __call__(self, node) -> int:
        memo, stack = self.memo, [node]
        while stack:
            n = stack[-1]
            if id(n) in memo:
                stack.pop()
                continue
            missing = [p for p in n.parents if id(p) not in memo]
            if missing:
                stack.extend(missing)
                continue
            key = (n.state, frozenset(memo[id(p)] for p in n.parents))
            memo[id(n)] = self.interned.setdefault(key, len(self.interned))
            self.alive.append(n)
            stack.pop()
        return memo[id(node)]

    def items(self, items) -> frozenset:
        return frozenset((self(n), t, q, k) for n, t, q, k in items)

    def level(self, level) -> tuple:
        return level.states, level.accepting, frozenset(map(self, level.vertices))


def _cores(grammar: Grammar):
    compiled = grammar.compile()
    return compiled, gss.ParserCore(compiled), ref.ParserCore(compiled)


def _agree_on_level(core, oracle, level, ref_level) -> None:
    """Everything the engine asks of a level: its shape, its openings, the token tree walks'
    shifts from it (with every terminal they can shift, under a few `upcoming` sets)."""
    forms = _Forms()
    assert forms.level(level) == forms.level(ref_level)
    assert {(forms(n), t) for n, t in core.openings(level)} == {(forms(n), t) for n, t in oracle.openings(ref_level)}
    states = level.states
    assert core.shiftable(states) == oracle.shiftable(states)
    terminals = sorted(oracle.shiftable(states))
    for t in terminals:
        assert core.pure_shift(states, t) == oracle.pure_shift(states, t)
        for upcoming in (frozenset(terminals), frozenset(terminals[:1]), frozenset()):
            walked, ref_walked = core.shift(level, t, upcoming), oracle.shift(ref_level, t, upcoming)
            assert forms.level(walked) == forms.level(ref_walked)
            assert walked is not core.shift(level, t, upcoming)  # hypothetical: never hash-consed
            oracle.shift(ref_level, t, upcoming)  # the same work on both sides


def _step_both(compiled, core, oracle, items, ref_items, data: bytes, tokens):
    terminals = compiled.terminals
    items = stepping.step(core, terminals, items, data, tokens=tokens)
    ref_items = ref.step(oracle, terminals, ref_items, data, tokens=tokens)
    forms = _Forms()
    assert forms.items(items) == forms.items(ref_items), data
    assert stepping.complete(core, terminals, items) == ref.complete(oracle, terminals, ref_items)
    ended = frozenset((n, t) for n, t, q, _ in items if terminals[t].dfa.accept[q])
    ref_ended = frozenset((n, t) for n, t, q, _ in ref_items if terminals[t].dfa.accept[q])
    if ended:
        _agree_on_level(core, oracle, core.level(ended), oracle.level(ref_ended))
        assert core.level(ended) is core.level(frozenset(ended))  # hash-consed: identity is equality
    return items, ref_items


_cases = st.sampled_from(["ab", "abc"]).flatmap(
    lambda a: st.tuples(grammars(a, token_level=True), st.lists(st.text(a, max_size=6), max_size=4),
                        st.sampled_from([None, True, False])))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases)
def test_the_compiled_core_gives_the_oracles_answers(case):
    grammar, chunks, tokens = case
    compiled, core, oracle = _cores(grammar)
    items, ref_items = stepping.initial(core), ref.initial(oracle)
    forms = _Forms()
    assert forms.items(items) == forms.items(ref_items)
    _agree_on_level(core, oracle, core.root_level, oracle.root_level)
    for chunk in chunks:
        if not items:
            break
        data = chunk.encode()
        if tokens is None:  # plain text: byte by byte and whole must agree as well
            for b in data:
                items, ref_items = _step_both(compiled, core, oracle, items, ref_items, bytes([b]), None)
        else:
            items, ref_items = _step_both(compiled, core, oracle, items, ref_items, data, tokens)
    assert core.work == oracle.work


DEEP = {
    "right": (r"start ::= 'a' start | 'a';", "a"),
    "left": (r"start ::= start 'a' | 'a';", "a"),
    "nested": (r"start ::= '(' start ')' | 'x';", "("),
    "chunks": (r"start ::= (except!('a') | #'b+' | 'ab' | 'ba') start | 'a';", "ab"),
    "catalan": (r"start ::= start start | 'a' | 'b';", "ab"),
    "hidden": (r"start ::= e start 'a' | e 'b' start | 'b'; e ::= '' | 'a';", "ab"),
}


@pytest.mark.parametrize("name", sorted(DEEP))
def test_the_compiled_core_agrees_on_long_texts(name):
    source, alphabet = DEEP[name]
    compiled, core, oracle = _cores(Grammar.from_ebnf(source))
    items, ref_items = stepping.initial(core), ref.initial(oracle)
    text = (alphabet * 30)[:60].encode()
    for i in range(0, len(text), 7):
        items, ref_items = _step_both(compiled, core, oracle, items, ref_items, text[i:i + 7], None)
    assert core.work == oracle.work


def test_a_deep_stack_is_parsed_and_freed_without_recursion():
    """100k nested vertices: reduced iteratively, and freed by reference counting alone
    (every edge goes through a tuple, whose deallocation the interpreter bounds)."""
    recognizer = Recognizer(Grammar.from_ebnf(r"start ::= '(' start ')' | 'x';").compile())
    assert recognizer.feed(b"(" * 100_000)
    probe = weakref.ref(next(iter(recognizer.items))[0])
    gc.disable()
    try:
        assert recognizer.feed(b"x" + b")" * 100_000) and recognizer.is_complete()
        recognizer.reset()
        recognizer.core._forget()
        assert probe() is None  # freed by refcounting, without the cyclic collector
    finally:
        gc.enable()


def test_forgetting_the_memos_changes_no_answer(monkeypatch):
    monkeypatch.setattr(gss, "_LEVEL_MEMO_LIMIT", 3)
    grammar = Grammar.from_ebnf(r"start ::= e start 'a' | e 'b' start | 'b'; e ::= '' | 'a';")
    compiled, core, oracle = _cores(grammar)
    items, ref_items = stepping.initial(core), ref.initial(oracle)
    for b in b"abbabaabba":
        items, ref_items = _step_both(compiled, core, oracle, items, ref_items, bytes([b]), None)
        assert core._memo_sizes["levels"] <= 4
    assert core._memo_sizes["vertices"] < oracle.work["vertices"]


def test_threads_share_one_core():
    """Threads stepping one grammar's shared core agree with the oracle read alone, with
    collections forced often (a collection may run Python code and let another thread in
    between the core's allocations)."""
    grammar = Grammar.from_ebnf(r"start ::= e start 'a' | e 'b' start | 'b'; e ::= '' | 'a';")
    compiled = grammar.compile()
    rng = random.Random(7)
    texts = ["".join(rng.choice("ab") for _ in range(rng.randrange(1, 24))) for _ in range(60)]
    oracle = ref.ParserCore(compiled)
    expected = []
    for text in texts:
        items = ref.initial(oracle)
        for b in text.encode():
            items = ref.step(oracle, compiled.terminals, items, bytes([b]))
        expected.append(bool(items) and ref.complete(oracle, compiled.terminals, items))
    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    sys.setswitchinterval(1e-6)
    gc.set_threshold(5, 1, 1)
    try:
        with ThreadPoolExecutor(8) as pool:
            for _ in range(3):
                gss.parser_core(compiled)._forget()
                assert list(pool.map(lambda t: Recognizer(compiled).accepts(t), texts)) == expected
    finally:
        sys.setswitchinterval(interval)
        gc.set_threshold(*thresholds)


def test_errors_are_precise():
    compiled, core, _ = _cores(Grammar.from_ebnf(r"start ::= 'a' 'b';"))
    with pytest.raises(KeyError):
        core.level(frozenset({(core.root, 10_000)}))  # the root cannot shift that terminal
    with pytest.raises(TypeError):
        core.level(frozenset({("not a vertex", 0)}))
    with pytest.raises(TypeError):
        stepping.step(core, compiled.terminals, frozenset({(1, 2)}), b"a")
    with pytest.raises(TypeError):
        core.openings("not a level")
    with pytest.raises(RuntimeError):
        gss._gss.Core().level(frozenset())  # not set up
