"""The on-disk cache of terminal scans: round trip, sharing, and bad files rebuilt with a warning."""

from __future__ import annotations

import numpy as np
import pytest

from grammarc import Grammar, GrammarWarning, Vocabulary
from grammarc.automata.suffix import suffix_key
from grammarc.tokens import index as token_index_module
from grammarc.tokens import scan_cache
from grammarc.tokens.index import TokenIndex

GRAMMAR = Grammar.from_ebnf(r"""start ::= '[' item (', ' item)* ']' ; item ::= #'"[a-z]*"' | #'[0-9]+' ;""")
VOCAB = Vocabulary.from_bytes(
    [b"[", b"]", b", ", b'"', b'"a', b'a"', b"ab", b"1", b"12", b'"]', b"1]", b", 3", b'", "', b""],
    eos_token_ids=[13],
)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(scan_cache, "_registry", {})
    monkeypatch.setattr(token_index_module, "PERSIST_MIN_ROWS", 0)  # a tiny vocabulary: store every scan
    return tmp_path


def _visit_all(index: TokenIndex) -> dict:
    """Every (terminal, state) part of the index: inside masks and tree sizes."""
    out = {}
    for t, terminal in enumerate(index.terminals):
        for q in range(terminal.dfa.n_states):
            out[(t, q)] = (index.inside(t, q).ids(), index.mid(t, q).size())
    return out


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k][0], b[k][0]) and a[k][1] == b[k][1] for k in a)


def test_round_trip_through_disk(cache):
    compiled = GRAMMAR.compile()
    first = _visit_all(TokenIndex(compiled, VOCAB))
    scan_cache.save_all()
    files = sorted(cache.rglob("*.npz"))
    # one file per language a terminal accepts from one of its states (scans are keyed by it)
    languages = {suffix_key(term.dfa, q) for term in compiled.terminals for q in range(term.dfa.n_states)}
    assert sorted(f.stem for f in files) == sorted(languages)
    scan_cache._registry.clear()  # a new process: only the disk remains
    dfa = compiled.terminals[0].dfa
    store = scan_cache.terminal_scans(suffix_key(dfa, 0), VOCAB.key, len(TokenIndex(compiled, VOCAB).token_ids))
    assert store.get(0) is not None  # loaded, not recomputed
    assert _same(first, _visit_all(TokenIndex(compiled, VOCAB)))


def test_scans_are_shared_between_grammars(cache):
    def item_terminal(index):
        return next(t for t, term in enumerate(index.terminals) if term.dfa.matches(b"12") and term.dfa.matches(b'"a"'))

    item = r"""item ::= #'"[a-z]*"' | #'[0-9]+' ;"""
    first = TokenIndex(Grammar.from_ebnf("start ::= item | '(' start ')' ;" + item).compile(), VOCAB)
    scan = first._terminal_scan(item_terminal(first), 0)
    other = Grammar.from_ebnf("start ::= item | '[' start ']' ;" + item)
    second = TokenIndex(other.compile(), VOCAB)
    assert second._terminal_scan(item_terminal(second), 0) is scan


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(b"not a zip file"),
        lambda path: path.write_bytes(path.read_bytes()[:50]),
        lambda path: np.savez(path, meta=np.frombuffer(b'{"version": 99}', dtype=np.uint8)),
        lambda path: np.savez(path, meta=np.array([{"a": 1}], dtype=object)),  # pickled objects are refused
    ],
    ids=["garbage", "truncated", "other-version", "pickle"],
)
def test_unreadable_files_are_ignored_with_a_warning_and_rewritten(cache, damage):
    compiled = GRAMMAR.compile()
    expected = _visit_all(TokenIndex(compiled, VOCAB))
    scan_cache.save_all()
    path = sorted(cache.rglob("*.npz"))[0]
    damage(path)
    scan_cache._registry.clear()
    with pytest.warns(GrammarWarning, match=r"ignoring unreadable index cache .*\.npz: "):
        got = _visit_all(TokenIndex(compiled, VOCAB))
    assert _same(expected, got)
    scan_cache.save_all()  # rewritten whole
    scan_cache._registry.clear()
    _visit_all(TokenIndex(compiled, VOCAB))  # no warning now (pytest -W error would fail)


def test_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")
    monkeypatch.setattr(scan_cache, "_registry", {})
    _visit_all(TokenIndex(GRAMMAR.compile(), VOCAB))
    scan_cache.save_all()
    assert scan_cache.cache_dir() is None
    assert not list(tmp_path.rglob("*.npz"))
