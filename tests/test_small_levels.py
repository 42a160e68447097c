"""A small token tree level made in C (`_scan.PartMaker`, `_scan.SmallLevel`, _small.c)
against a Python oracle of its parts: for terminal u, the level's suffixes whose next byte
opens u walked through u's DFA from its start (tests/scan_reference.py), the ids of those
that end inside as its tokens, and the splits as its child level, whose candidates are the
terminals after u that start with a byte some split is followed by. Made through the
compiled tree (one C call per part) and through the source API of a Python tree (the
walk's oracle, tests/tree_walk_reference.py), several levels deep. Then the paths left
to the index's Python (a token-limited terminal, a big child) by masks against brute
force, and bad input refused with precise errors.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grammarc
import token_oracle
import tree_walk_reference as ref
from grammarc import Vocabulary
from grammarc.engine import Engine
from grammarc.ir import Except, Grammar, Literal, Seq
from grammarc.runtime.recognizer import Recognizer
from grammarc.tokens import _scan, index
from grammarc.tokens.rows import token_bytes
from grammarc.tokens.token_set import TokenSet
from grammarc.tokens.tree import NO_PART, Tree
from scan_reference import ALPHABET, dfa_and_tokens
from scan_reference import scan as reference

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Index:
    """What a maker refers to weakly (a token index; none of its methods is called here)."""


def _first_bytes(trans: np.ndarray) -> bytes:
    return np.packbits(trans[0] >= 0, bitorder="little").tobytes()


@st.composite
def levels(draw):
    """(tokens, [(trans, accept)] per terminal, follows, previous, rows, pos): terminals'
    DFAs over one alphabet, random follow lists, and suffixes strictly inside their tokens."""
    trans, accept, tokens = draw(dfa_and_tokens(4, 6, 12))
    dfas = [(trans, accept)]
    for _ in range(draw(st.integers(0, 3))):
        other, other_accept, _ = draw(dfa_and_tokens(3, 1, 1))
        dfas.append((other, other_accept))
    n = len(dfas)
    follows = [tuple(sorted(draw(st.sets(st.integers(0, n - 1))))) for _ in range(n)]
    tokens = list(dict.fromkeys(tokens))
    suffixes = [(i, p) for i, t in enumerate(tokens) for p in range(len(t))]
    picked = draw(st.lists(st.sampled_from(suffixes), min_size=1, max_size=20))
    return tokens, dfas, follows, draw(st.integers(0, n - 1)), picked


def _maker(tokens, dfas, follows, big: int = 1 << 20, limits=None):
    vocab = Vocabulary.from_bytes(list(tokens) + [None], eos_token_ids=[len(tokens)])
    rows = token_bytes(vocab)
    tables = [_scan.Table(np.ascontiguousarray(t, dtype=np.int32), b"", b"", b"", a) for t, a in dfas]
    owner = Index()
    maker = _scan.PartMaker(tables, rows.native, -(-vocab.size // 32), limits or [None] * len(dfas), follows,
                            b"".join(_first_bytes(t) for t, _ in dfas), TokenSet, weakref.ref(owner), big)
    return maker, rows, owner


def _starting(dfas, follows, previous: int, present: set[int]) -> frozenset[int]:
    return frozenset(v for v in follows[previous] if any(dfas[v][0][0, b] >= 0 for b in present))


def _check(tree, level_rows, level_pos, previous, rows, dfas, follows, depth: int) -> int:
    """Compare every part of `tree` (over the suffixes (level_rows, level_pos) after
    `previous`) with the oracle's, `depth` levels down; the number of parts compared."""
    data, offsets, lengths, ids = rows.data, rows.offsets, rows.lengths, rows.ids
    present = {int(data[offsets[r] + p]) for r, p in zip(level_rows, level_pos)}
    assert tree.candidates == _starting(dfas, follows, previous, present)
    compared = 0
    for u in sorted(tree.candidates):
        trans, accept = dfas[u]
        picks = [i for i, (r, p) in enumerate(zip(level_rows, level_pos)) if trans[0, data[offsets[r] + p]] >= 0]
        end_rows, _, split_rows, split_pos = reference(trans, accept, data, offsets, lengths,
                                                       np.array(level_rows, dtype=np.int32)[picks],
                                                       np.array(level_pos, dtype=np.int32)[picks], 0)
        tokens, child = part = tree.part(u)
        assert (None if tokens is None else tokens.ids().tolist()) == (
            sorted(set(ids[end_rows].tolist())) or None)
        assert (child is None) == (len(split_rows) == 0)
        assert (part is NO_PART) == (tokens is None and child is None)
        compared += 1
        if child is not None:
            assert type(child) is type(tree)
            source = child._source
            assert source is None or (np.frombuffer(source.rows, np.int32).tolist() == split_rows.tolist() and
                                      np.frombuffer(source.pos, np.int32).tolist() == split_pos.tolist())
            if depth:
                compared += _check(child, split_rows.tolist(), split_pos.tolist(), u, rows, dfas, follows, depth - 1)
    return compared


@SETTINGS
@given(levels(), st.booleans())
def test_a_small_levels_parts_are_the_oracles_through_either_tree(case, python_tree):
    tokens, dfas, follows, previous, picked = case
    maker, rows, owner = _maker(tokens, dfas, follows)
    by_token = {t: r for r, t in enumerate(bytes(rows.data[o:o + n]) for o, n in zip(rows.offsets, rows.lengths))}
    level_rows = [by_token[tokens[i]] for i, _ in picked]
    level_pos = [p for _, p in picked]
    level = _scan.SmallLevel(maker, previous, np.array(level_rows, dtype=np.int32), np.array(level_pos, np.int32))
    assert (level.previous, level.rows, level.pos) == (
        previous, np.array(level_rows, np.int32).tobytes(), np.array(level_pos, np.int32).tobytes())
    present = {int(rows.data[rows.offsets[r] + p]) for r, p in zip(level_rows, level_pos)}
    assert level.byte_set == sum(1 << b for b in present)
    assert level.candidates() == _starting(dfas, follows, previous, present)
    tree = (ref.Tree if python_tree else Tree)(level)
    made = _check(tree, level_rows, level_pos, previous, rows, dfas, follows, 3)
    assert maker.made == made
    assert maker.starting(previous, level.byte_set) is maker.starting(previous, level.byte_set)  # memoized


def test_a_python_trees_part_is_the_first_published():
    tokens, dfas = [b"ab", b"b"], [(np.full((1, 256), 0, dtype=np.int32), np.array([True]))]
    maker, rows, owner = _maker(tokens, dfas, [(0,)])
    level = _scan.SmallLevel(maker, 0, np.array([0], np.int32), np.array([0], np.int32))
    tree = ref.Tree(level)
    first = tree.part(0)  # through the source's `part`
    assert level.part(tree, 0) is first and tree.part(0) is first and maker.made == 1
    assert first[0].ids().tolist() == [0] and first[1].candidates == {0}


def _json_engine_masks(texts, vocab_tokens):
    """Masks after each text (allowed token ids) and their brute-force truth."""
    vocab = Vocabulary.from_bytes(vocab_tokens + [None], eos_token_ids=[len(vocab_tokens)])
    json = grammarc.stdlib("json")
    recognizer = Recognizer(json.compile())
    out = []
    for text in texts:
        engine = Engine(json, vocab)
        engine.advance_bytes(text)
        truth = [i for i, t in enumerate(vocab_tokens) if recognizer.is_prefix(text + t)]
        out.append((engine.allowed_token_ids().tolist(), truth))
    return out


def test_a_big_child_of_a_small_level_is_left_to_the_index_and_masks_stay_exact(monkeypatch):
    """With big levels from 2 suffixes, a small level's part whose suffixes go on to
    several splits makes its child through the index (`_small_big_child`)."""
    vocab_tokens = [bytes([b]) for b in range(256)] + [b'[123,', b',  12 ]', b'1],[']
    asked = []
    original = index.TokenIndex._small_big_child

    def spy(self, u, rows, pos, after):
        asked.append(len(rows) // 4)
        return original(self, u, rows, pos, after)

    monkeypatch.setattr(index, "BUCKETED_ROWS", 2)
    monkeypatch.setattr(index.TokenIndex, "_small_big_child", spy)
    for ours, truth in _json_engine_masks([b'[', b'[[1,2],[', b'{"a": [1'], vocab_tokens):
        assert ours == truth
    assert asked and min(asked) >= 2


def _completable(grammar, tokens: list[bytes], vocab_tokens: list[bytes], more: int) -> bool:
    """Whether `tokens` and at most `more` tokens after them are a sentence (token_oracle)."""
    if token_oracle.complete(grammar, tokens):
        return True
    return more > 0 and any(_completable(grammar, tokens + [t], vocab_tokens, more - 1) for t in vocab_tokens)


def test_a_token_limited_terminals_part_is_left_to_the_index_and_masks_stay_exact(monkeypatch):
    """``except!(X, n)`` after another terminal inside one token: its part over a small
    level is the index's (`_small_limited`), each token spending one of its budget. Masks
    along texts against the token oracle (a token is allowed when at most three more make a
    sentence: the budget of two, then the closing '>')."""
    grammar = Grammar(rules=(("start", Seq((Literal("<"), Except(Literal(">"), 2), Literal(">")))),), start="start")
    vocab_tokens = [b"<", b">", b"<a", b"<ab", b"<abc>", b"a", b"ab", b"b>", b"a>", b">>"]
    vocab = Vocabulary.from_bytes(vocab_tokens + [None], eos_token_ids=[len(vocab_tokens)])
    asked = []
    original = index.TokenIndex._small_limited

    def spy(self, u, rows, pos):
        asked.append(u)
        return original(self, u, rows, pos)

    monkeypatch.setattr(index.TokenIndex, "_small_limited", spy)
    for text in ([], [2], [0, 5], [3], [0, 6]):
        engine = Engine(grammar, vocab)
        for t in text:
            engine.advance(t)
        ours = sorted(t for t in engine.allowed_token_ids().tolist() if t < len(vocab_tokens))
        truth = [t for t, token in enumerate(vocab_tokens)
                 if _completable(grammar, [vocab_tokens[i] for i in text] + [token], vocab_tokens, 3)]
        assert ours == truth, text
    assert asked


def test_a_level_outliving_its_index_says_so():
    tokens, dfas = [b"ab"], [(np.full((1, 256), 0, dtype=np.int32), np.array([True]))]
    vocab = Vocabulary.from_bytes(tokens + [None], eos_token_ids=[1])
    rows = token_bytes(vocab)
    owner = Index()
    maker = _scan.PartMaker([None], rows.native, 1, [None], [(0,)], _first_bytes(dfas[0][0]), TokenSet,
                            weakref.ref(owner), 8)
    level = _scan.SmallLevel(maker, 0, np.array([0], np.int32), np.array([0], np.int32))
    del owner
    gc.collect()
    with pytest.raises(RuntimeError, match="outlived its token index"):
        Tree(level).part(0)  # its table is not read yet: the index would make it


@pytest.mark.parametrize("change, error, message", [
    (dict(follows=[(0,), (0,)]), ValueError, "cover the same terminals"),
    (dict(opening=b"\0" * 31), ValueError, "cover the same terminals"),
    (dict(follows=[[0]]), TypeError, "must be a tuple"),
    (dict(limits=5), TypeError, "limits must be a sequence"),
    (dict(token_set=int), ValueError, "PackedSet type"),
    (dict(n_words=0), ValueError, "fewer mask words than token rows"),
    (dict(big=-1), ValueError, "big >= 0"),
    (dict(tables=(None,)), TypeError, "must be list"),
])
def test_a_maker_refuses_bad_input(change, error, message):
    rows = token_bytes(Vocabulary.from_bytes([b"ab", None], eos_token_ids=[1]))
    owner = Index()
    args = dict(tables=[None], tokens=rows.native, n_words=1, limits=[None], follows=[(0,)], opening=b"\0" * 32,
                token_set=TokenSet, index=weakref.ref(owner), big=8)
    args.update(change)
    with pytest.raises(error, match=message):
        _scan.PartMaker(**args)


def test_bad_levels_and_terminals_are_refused():
    tokens, dfas = [b"ab", b"b"], [(np.full((1, 256), 0, dtype=np.int32), np.array([True]))]
    maker, rows, owner = _maker(tokens, dfas, [(0, 3)])
    one = np.array([0], np.int32)
    for previous, r, p, message in [(1, one, one, "no such terminal"), (0, one, np.array([2], np.int32), "inside"),
                                    (0, np.array([5], np.int32), one, "inside"),
                                    (0, one, np.array([0, 1], np.int32), "one size"),
                                    (0, b"\0\0\0", b"\0\0\0", "one size")]:
        with pytest.raises(ValueError, match=message):
            _scan.SmallLevel(maker, previous, r, p)
    level = _scan.SmallLevel(maker, 0, one, one)
    with pytest.raises(ValueError, match="a following terminal out of range"):
        level.candidates()  # follows name terminal 3 of one
    with pytest.raises(ValueError, match="no such terminal"):
        maker.starting(-1, 0)
    with pytest.raises(ValueError, match="no such terminal"):
        level.part(ref.Tree(level, candidates=frozenset({7})), 7)
    with pytest.raises(TypeError, match="part"):
        level.part(ref.Tree(level))


def test_equal_small_subtrees_are_made_once_per_follow_list_and_masks_stay_exact():
    """Terminals that end inside the same tokens at the same places share one small subtree
    when the same terminals may follow them (`TokenIndex._child`: a JSON object's keys, each
    a literal of its own before one separator); where the followers differ, so do the
    subtrees ('ab' before digits, 'cb' before letters, both ending inside the tokens that
    start with 'b'). Masks after every prefix against brute force."""
    vocab_tokens = [bytes([b]) for b in b"abc019xy()"] + [b"b1", b"bx", b"b(", b"b(1", b"b(x", b"b12", b"bxy", b"1)"]
    vocab = Vocabulary.from_bytes(vocab_tokens + [None], eos_token_ids=[len(vocab_tokens)])
    num, word = "num ::= #'[0-9]+' | '(' num ')' ;", "word ::= #'[a-z]+' | '(' word ')' ;"
    for start, shared, last in (("start ::= 'ab' num | 'cb' word ;" + num + word, False, b"cb(x"),
                                ("start ::= 'ab' num | 'cb' num ;" + num, True, b"cb(1")):
        grammar = grammarc.Grammar.from_ebnf(start)
        recognizer = Recognizer(grammar.compile())
        engine = Engine(grammar, vocab)
        ab, cb = (next(t for t, term in enumerate(engine.index.terminals) if term.dfa.matches(word))
                  for word in (b"ab", b"cb"))
        assert (engine.index.mid(ab, 1) is engine.index.mid(cb, 1)) == shared, start
        for text in (b"", b"a", b"c", b"ab", b"cb", b"ab(", b"cb(", b"ab(1", last):
            assert _allowed_after(grammar, vocab, text) == _truth_after(recognizer, vocab_tokens, text), (start, text)
    # the same tokens, the same followers, other places: 'ab' ends after their first byte,
    # 'abc' after their second
    vocab_tokens = [bytes([b]) for b in b"abc019()"] + [b"bc1", b"bc(", b"bcc"]
    vocab = Vocabulary.from_bytes(vocab_tokens + [None], eos_token_ids=[len(vocab_tokens)])
    grammar = grammarc.Grammar.from_ebnf("start ::= 'ab' num | 'abc' num ;" + num)
    engine = Engine(grammar, vocab)
    ab, abc = (next(t for t, term in enumerate(engine.index.terminals) if term.label[0] == Literal(word))
               for word in ("ab", "abc"))
    assert engine.index.mid(ab, 1) is not engine.index.mid(abc, 1)
    recognizer = Recognizer(grammar.compile())
    for text in (b"", b"a", b"ab", b"abc", b"ab("):
        assert _allowed_after(grammar, vocab, text) == _truth_after(recognizer, vocab_tokens, text), text


def _allowed_after(grammar, vocab: Vocabulary, text: bytes) -> list[int]:
    engine = Engine(grammar, vocab)
    engine.advance_bytes(text)
    return [t for t in engine.allowed_token_ids().tolist() if not vocab.is_special(t)]


def _truth_after(recognizer: Recognizer, vocab_tokens: list[bytes], text: bytes) -> list[int]:
    return [i for i, t in enumerate(vocab_tokens) if recognizer.is_prefix(text + t)]
