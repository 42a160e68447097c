"""The compiled token tree walk (grammarc.runtime._tree.c: `Tree`, ``ParserCore.walk``)
against its Python oracle (tests/tree_walk_reference.py, the code it was ported from).

Two indexes of one grammar and vocabulary, one making compiled trees and one the oracle's
Python trees, are walked in lockstep from the levels of real texts: at every tree node and
LR states the two walks must give the same token sets (as sets of ids, in the same order)
and the same frontier (paths, and subtrees that walk the same from the levels the paths
reach), down the whole walk that `Engine._collect_tree_tokens` does. On random grammars
and vocabularies, and on real schemas with the Llama-3 vocabulary. Then the compiled
tree's own contracts: parts published once and shared by threads, a deep walk without
recursion, freed by reference counting, precise errors.
"""

from __future__ import annotations

import gc
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gss_reference
import strategies
import tree_walk_reference as ref
import grammarc
from grammarc.engine import Engine
from grammarc.lowering.compiler import compile_grammar
from grammarc.runtime.gss import parser_core
from grammarc.tokens.index import TokenIndex
from grammarc.tokens.token_set import TokenSet
from grammarc.tokens.tree import NO_PART, Tree
from grammarc.tokens.vocabulary import Vocabulary

SETTINGS = settings(deadline=None, max_examples=60,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def ids(tokens) -> frozenset[int]:
    words = np.zeros(tokens.bits.size if tokens.words is None else int(tokens.words.max(initial=0)) + 1,
                     dtype=np.uint32)
    tokens.or_into(words)
    return frozenset(np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little")).tolist())


def item_levels(engine: Engine):
    """(t, q, level) of each item group of the engine's state, as `_mask_parts` walks them."""
    groups: dict[tuple[int, int], set] = {}
    for node, t, q, _ in engine.configuration():
        groups.setdefault((t, q), set()).add(node)
    for (t, q), nodes in sorted(groups.items()):
        yield t, q, engine.core.level(frozenset((node, t) for node in nodes))


class Lockstep:
    """Walks a compiled index's trees and a reference index's side by side."""

    def __init__(self, compiled, vocab: Vocabulary):
        self.core = parser_core(compiled)
        self.lr = gss_reference.ParserCore(compiled)  # the oracle's shiftable and pure_shift
        self.mine = TokenIndex(compiled, vocab)
        with ref.python_trees():
            self.theirs = TokenIndex(compiled, vocab)
        self.seen: set = set()
        self.summaries = 0

    def compare_item(self, t: int, q: int, level) -> None:
        mine = self.mine.mid(t, q)
        with ref.python_trees():
            theirs = self.theirs.mid(t, q)
        assert isinstance(mine, Tree) and isinstance(theirs, ref.Tree)
        self.compare(mine, theirs, level)

    def compare(self, mine: Tree, theirs, level) -> None:
        key = (mine.serial, level.states, level.vertices)
        if key in self.seen:
            return
        self.seen.add(key)
        assert mine.candidates == theirs.candidates
        parts, frontier = self.core.walk(mine, level.states)
        with ref.python_trees():
            their_parts, their_frontier = ref.walk_summary(self.lr, theirs, level.states)
        self.summaries += 1
        assert [ids(s) for s in parts] == [ids(s) for s in their_parts]
        assert [path for path, _ in frontier] == [path for path, _ in their_frontier]
        for (path, child), (_, their_child) in zip(frontier, their_frontier):
            assert isinstance(child, Tree) and not child.is_empty()
            reached = level
            for u in path:
                reached = self.core.shift(reached, u, child.keys)
            self.compare(child, their_child, reached)

    def from_states(self, t: int, q: int, states: tuple[int, ...]) -> None:
        """Compare the walks of (t, q)'s trees from any set of LR states (no level: the
        frontier's subtrees are compared by their candidates)."""
        mine = self.mine.mid(t, q)
        parts, frontier = self.core.walk(mine, states)
        with ref.python_trees():
            their_parts, their_frontier = ref.walk_summary(self.lr, self.theirs.mid(t, q), states)
        assert [ids(s) for s in parts] == [ids(s) for s in their_parts]
        assert [(path, child.candidates) for path, child in frontier] == \
            [(path, child.candidates) for path, child in their_frontier]

    def along(self, engine: Engine, tokens: list[int]) -> None:
        """Compare every item's walk at each state of `tokens` (stopping where one is refused)."""
        engine.reset()
        for token in [*tokens, None]:
            for t, q, level in item_levels(engine):
                self.compare_item(t, q, level)
            if token is None or engine.is_finished():
                break
            try:
                engine.advance(token)
            except grammarc.TokenRejected:
                break


@st.composite
def vocabularies(draw, alphabet: str) -> Vocabulary:
    """1-30 distinct tokens of 1-6 bytes of UTF-8 text over `alphabet` (cut anywhere), and EOS."""
    out = []
    for _ in range(draw(st.integers(1, 30))):
        text = draw(st.text(st.sampled_from(alphabet), min_size=1, max_size=6)).encode()
        start = draw(st.integers(0, len(text) - 1))
        out.append(text[start:draw(st.integers(start + 1, len(text)))])
    data = list(dict.fromkeys(out)) + [b""]
    return Vocabulary.from_bytes(data, eos_token_ids=[len(data) - 1])


@SETTINGS
@given(st.sampled_from(["ab", "a\u00e9"]).flatmap(lambda a: st.tuples(strategies.grammars(a), vocabularies(a))),
       st.lists(st.integers(0, 10**6), max_size=10), st.randoms(use_true_random=False))
def test_the_compiled_walk_gives_the_oracles_summaries_on_random_grammars(grammar_vocab, picks, rng):
    grammar, vocab = grammar_vocab
    compiled = compile_grammar(grammar)
    lockstep = Lockstep(compiled, vocab)
    engine = Engine(compiled, vocab)
    # a text under the mask: each pick chooses among the allowed tokens
    tokens = []
    for pick in picks:
        allowed = [i for i in engine.allowed_token_ids().tolist() if i not in vocab.eos_token_ids]
        if not allowed:
            break
        tokens.append(allowed[pick % len(allowed)])
        engine.advance(tokens[-1])
    lockstep.along(engine, tokens)
    # and a few tokens the mask may refuse: the walk from their states too
    lockstep.along(engine, [rng.randrange(vocab.size) for _ in range(6)])
    # and from sets of LR states no level need have (several states shifting one terminal)
    n_states = len(compiled.tables.goto)
    for _ in range(20 if lockstep.mine._mid else 0):
        t, q = rng.choice(sorted(lockstep.mine._mid))
        states = tuple(sorted(rng.sample(range(n_states), min(n_states, rng.randint(1, 4)))))
        lockstep.from_states(t, q, states)


REAL = {
    "object": ({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                                  "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["name"]}, '{"name": "Ann-Marie", "age": 42, "tags": ["a,b", "]]", "x"]}'),
    "nested": ({"type": "array", "items": {"anyOf": [{"type": "number"}, {"$ref": "#"}]}},
               "[[1,2.5e3],[[-4]],[],[7,[8,[9]]]]"),
    "enum": ({"type": "object", "properties": {"kind": {"enum": ["alpha", "beta", "gamma delta"]},
                                               "n": {"type": "number", "minimum": 0}}},
             '{"kind": "gamma delta", "n": 0.125}'),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_the_compiled_walk_gives_the_oracles_summaries_on_real_schemas_with_llama3(name):
    import vocabularies as V

    vocab = V.llama3()
    schema, document = REAL[name]
    compiled = grammarc.Grammar.from_json_schema(schema).compile()
    lockstep = Lockstep(compiled, vocab)
    lockstep.along(Engine(compiled, vocab), list(V.quicktok_reference("llama3").encode(document)))
    assert lockstep.summaries > 20


def test_arithmetic_walks_agree_and_a_walk_summary_is_the_oracles():
    from grammarc.engine import walk_summary

    tokens = [b"1", b"-", b"--(", b"(-", b")*", b"))", b"2)", b"-1", b"+(", b"(((", b")))", b"1+", b""]
    vocab = Vocabulary.from_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    compiled = grammarc.stdlib("arithmetic").compile()
    lockstep = Lockstep(compiled, vocab)
    lockstep.along(Engine(compiled, vocab), [9, 9, 7, 1, 2, 0, 6, 10, 11, 4, 5])  # stops at the first refused
    assert lockstep.summaries > 10
    summary = walk_summary(lockstep.core, _some_tree(lockstep),
                           lockstep.core.root_level.states, lockstep.mine.n_words)
    assert isinstance(summary.tokens, tuple) and isinstance(summary.frontier, tuple)


def _some_tree(lockstep: Lockstep) -> Tree:
    return next(tree for tree in lockstep.mine._mid.values() if tree.candidates)


# ------------------------------------------------------------------ the tree's contracts


class Source:
    """A tree's source for the contracts below: `made` counts part() calls per terminal."""

    def __init__(self, candidates, part=None, publish=True):
        self._candidates, self._part, self.publish = candidates, part, publish
        self.made: dict[int, int] = {}

    def candidates(self):
        return self._candidates

    def part(self, tree, u):
        self.made[u] = self.made.get(u, 0) + 1
        found = self._part(u) if self._part else (None, None)
        if self.publish:
            tree._publish(u, found)
        return found


def test_a_tree_makes_each_part_once_and_lets_its_source_go():
    source = Source(frozenset({5, 2, 9}), lambda u: NO_PART if u == 2 else (None, Tree()))
    tree = Tree(source)
    assert tree.candidates == {2, 5, 9} and tree.keys == tree.candidates
    assert tree._made(5) is None and tree.part(3) is NO_PART and tree.part(10**30) is NO_PART
    first = tree.part(5)
    assert tree.part(5) is first and tree._made(5) is first and source.made == {5: 1}
    assert not tree.is_empty() and source.made == {5: 1, 2: 1}  # parts made in turn until one holds something
    tree.part(9)
    assert tree._source is None and tree.part(9)[1].is_empty()
    tree._publish(9, NO_PART)  # the first published stays
    assert tree.part(9) is not NO_PART and set(tree.children) == {5, 9} and tree.open == {} and tree.size() == 0
    assert Tree().serial != Tree().serial and Tree().is_empty() and not gc.is_tracked(tree)
    assert tree._parts == {2: NO_PART, 5: first, 9: tree.part(9)} and Tree(source)._parts == {}
    assert sys.getsizeof(tree) > sys.getsizeof(Tree())  # its arrays of candidates and parts


def test_a_part_the_source_does_not_publish_is_published_by_the_tree():
    source = Source(frozenset({1}), lambda u: (None, Tree()), publish=False)
    tree = Tree(source)
    assert tree.part(1) is tree.part(1) and source.made == {1: 1}


class Terminals(frozenset):
    """A frozenset subclass: read as its members, never kept by the tree's cache of sets."""


@settings(max_examples=20, deadline=None)
@given(st.lists(st.frozensets(st.integers(0, 40), max_size=12), min_size=1, max_size=6), st.data())
def test_trees_of_equal_candidates_share_one_sorted_reading_and_keep_it(sets, data):
    """The sorted candidates are read once per set (`cand_cache`): trees of one set, of an
    equal one or of a subclass's find their parts by the same terminals; and a tree keeps
    them when the cache is cleared (past 4,096 sets)."""
    made = []
    for members in sets:
        for candidates in (members, frozenset(members), Terminals(members)):
            tree = Tree(Source(candidates, lambda u: (None, Tree()) if u % 3 else NO_PART))
            made.append((tree, members))
            assert tree.candidates == members
    if data.draw(st.booleans()):
        for k in range(4200):  # distinct sets: the cache is cleared at least once
            assert Tree(Source(frozenset({k, k + 1, 10**5 + k}))).part(k) == (None, None)
    for tree, members in made:
        for u in range(-1, 42):
            part = tree.part(u)
            assert (part is NO_PART) == (u not in members or u % 3 == 0)
        assert sorted(tree._parts) == sorted(members)


def test_candidates_given_when_a_tree_is_made_are_never_asked_for():
    """``Tree(source, candidates=...)``: a source that knows them as it makes the tree saves
    the call back; the tree walks as one that asks."""
    asked = Source(frozenset({3, 1}), lambda u: (None, Tree()))
    given = Tree(Source(None, lambda u: (None, Tree())), candidates=frozenset({1, 3}))
    assert given.candidates == {1, 3} and given.part(3)[1] is not None and given.part(2) is NO_PART
    core = parser_core(grammarc.stdlib("arithmetic").compile())
    terminals = frozenset(range(12))
    tokens = {u: TokenSet.of(np.array([u]), 4) for u in terminals}
    walked = core.walk(Tree(Source(terminals, lambda u: (tokens[u], None))), (0,))[0]
    assert walked == [tokens[u] for u in sorted(terminals & core.shiftable((0,)))] and walked
    assert core.walk(Tree(Source(None, lambda u: (tokens[u], None)), candidates=terminals), (0,))[0] == walked
    empty = Tree(Source(None), candidates=frozenset())
    assert empty._source is None and empty.is_empty()
    for wrong in [{1}, [1], frozenset({-2})]:
        with pytest.raises((TypeError, ValueError), match="frozenset|out of range"):
            Tree(Source(None), candidates=wrong)


@pytest.mark.parametrize("candidates, part, error", [
    (lambda u: {u}, None, "frozenset"),
    (lambda u: frozenset({-1}), None, "out of range"),
    (lambda u: frozenset({"a"}), None, "integer"),
    (lambda u: frozenset({u}), lambda u: (None,), "pair"),
    (lambda u: frozenset({u}), lambda u: (None, "tree"), "pair"),
    (lambda u: frozenset({u}), lambda u: 1 / 0, "division"),
])
def test_a_bad_source_gives_a_precise_error_in_a_walk_too(candidates, part, error):
    core = parser_core(grammarc.stdlib("arithmetic").compile())
    u = min(core.shiftable((0,)))  # a terminal the walk from state 0 takes
    for call in (lambda tree: tree.part(u), lambda tree: core.walk(tree, (0,)), lambda tree: tree.is_empty()):
        with pytest.raises((TypeError, ValueError, ZeroDivisionError), match=error):
            call(Tree(Source(candidates(u), part)))


def test_walk_refuses_bad_arguments():
    core = parser_core(grammarc.stdlib("arithmetic").compile())
    for args in [(Tree(),), (ref.Tree(), (0,)), (Tree(), [0]), (Tree(), (0,), 1)]:
        with pytest.raises(TypeError, match="walk"):
            core.walk(*args)
    with pytest.raises(IndexError, match="no such LR state"):
        core.walk(Tree(), (10**6,))
    assert core.walk(Tree(), (0,)) == ([], ())


def test_a_walk_through_thousands_of_terminals_needs_no_recursion():
    """A token of 3000 unary minus signs crosses 3000 terminals, each a pure shift."""
    tokens = [b"-" * 3000, b"-" * 3000 + b"1", b"1", b""]
    vocab = Vocabulary.from_bytes(tokens, eos_token_ids=[3])
    engine = Engine(compile_grammar(grammarc.stdlib("arithmetic"), max_states=20_023), vocab)
    assert engine.allowed_token_ids().tolist() == [0, 1, 2]
    engine.advance(1)
    assert engine.accepts_eos()
    depths = []
    for _, t, q, _ in engine._initial:
        deep, depth = engine.index.mid(t, q), 0
        while deep.children:
            deep, depth = next(iter(deep.children.values())), depth + 1
        depths.append(depth)
    assert max(depths) >= 2999
    del engine, deep
    gc.collect()


def test_threads_walking_one_fresh_index_share_its_parts_and_get_the_oracles_summaries(monkeypatch):
    tokens = [b"1", b"-", b"--(", b"(-", b")*", b"))", b"2)", b"-1", b"+(", b"(((", b")))", b"1+", b" - ", b""]
    vocab = Vocabulary.from_bytes(tokens, eos_token_ids=[len(tokens) - 1])
    compiled = compile_grammar(grammarc.stdlib("arithmetic"), max_states=20_029)
    lockstep = Lockstep(compiled, vocab)
    engine = Engine(compiled, vocab)
    starts, rng = [], np.random.default_rng(5)
    for _ in range(4):  # random texts under the mask
        engine.reset()
        for _ in range(12):
            starts += [(t, q, level.states) for t, q, level in item_levels(engine)]
            allowed = [i for i in engine.allowed_token_ids().tolist() if i != len(tokens) - 1]
            if not allowed:
                break
            engine.advance(int(rng.choice(allowed)))
    core = lockstep.core

    def summaries(index: TokenIndex) -> list:
        out = []
        for t, q, states in starts:
            parts, frontier = core.walk(index.mid(t, q), states)
            out.append(([ids(s) for s in parts], [(path, sorted(child.candidates)) for path, child in frontier]))
        return out

    with ref.python_trees():
        expected = [([ids(s) for s in parts], [(path, sorted(child.candidates)) for path, child in frontier])
                    for t, q, states in starts
                    for parts, frontier in [ref.walk_summary(lockstep.lr, lockstep.theirs.mid(t, q), states)]]
    alone = TokenIndex(compiled, vocab)
    assert summaries(alone) == expected
    # a small level's part is made in C with the GIL held throughout (_scan.SmallLevel):
    # no other thread runs between making and publishing it, so four threads make each
    # part once, as many as one thread alone
    original = TokenIndex._narrow_walk

    def slow_walk(self, t, q):
        time.sleep(0.001)  # widen the windows in which the threads' builds interleave
        return original(self, t, q)

    monkeypatch.setattr(TokenIndex, "_narrow_walk", slow_walk)
    shared = TokenIndex(compiled, vocab)
    barrier = threading.Barrier(4)

    def work(_: int) -> list:
        barrier.wait()  # all four start together
        return summaries(shared)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))  # raises what a thread raised
    assert results == [expected] * 4
    assert shared._parts.made == alone._parts.made > 0


@pytest.mark.parametrize("name", ["arithmetic", "json", "c"])
def test_the_walks_shifts_from_any_states_are_the_oracles(name):
    """The walk's shifts (`core_shift_states`, which `pure_shift` shares) from sets of states
    no text need reach: pairs and triples where several states shift one terminal."""
    compiled = grammarc.stdlib(name).compile()
    core, lr = parser_core(compiled), gss_reference.ParserCore(compiled)
    by_terminal: dict[int, list[int]] = {}
    for s, row in enumerate(lr.shift_to):
        for t in row:
            by_terminal.setdefault(t, []).append(s)
    checked = 0
    for t, states in sorted(by_terminal.items()):
        for i in range(len(states)):
            for j in range(i, min(len(states), i + 40)):
                for group in ((states[i], states[j]), tuple(states[i:j + 1])):
                    assert core.pure_shift(group, t) == lr.pure_shift(group, t), (group, t)
                    checked += 1
    assert checked > 100


def test_a_walk_summary_is_read_only_untracked_and_checked():
    """engine.WalkSummary (compiled): what the summaries' memo keeps, thousands on a new
    schema, so the cyclic collector never goes over one; its fields are tuples."""
    from grammarc.engine import WalkSummary, walk_summary

    core = parser_core(grammarc.stdlib("arithmetic").compile())
    summary = walk_summary(core, Tree(), (0,), 4)
    assert (summary.tokens, summary.frontier, summary.nbytes) == ((), (), 0) and not gc.is_tracked(summary)
    tree = Tree()
    made = WalkSummary(tokens=(), frontier=(((1, 2), tree),), nbytes=8)
    assert made.frontier[0][1] is tree and "nbytes=8" in repr(made)
    with pytest.raises(AttributeError):
        made.nbytes = 1
    for args in [([], (), 0), ((), [], 0), ((), (), "8"), ((), ())]:
        with pytest.raises(TypeError, match="WalkSummary|cannot be interpreted as an integer"):
            WalkSummary(*args)
