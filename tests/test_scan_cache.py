"""The on-disk cache of terminal scans: round trip, sharing, bad files rebuilt with a warning
(checksums, versions), atomic writes and the size limits on disk and in memory."""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

from grammarc import Grammar, GrammarWarning, Vocabulary
from grammarc.automata.suffix import suffix_key
from grammarc.tokens import index as token_index_module
from grammarc.tokens import kin, scan_cache
from grammarc.tokens.index import TokenIndex
from grammarc import diskstore

GRAMMAR = Grammar.from_ebnf(r"""start ::= '[' item (', ' item)* ']' ; item ::= #'"[a-z]*"' | #'[0-9]+' ;""")
FILES = f"*{scan_cache.SUFFIX}"
VOCAB = Vocabulary.from_bytes(
    [b"[", b"]", b", ", b'"', b'"a', b'a"', b"ab", b"1", b"12", b'"]', b"1]", b", 3", b'", "', b""],
    eos_token_ids=[13],
)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
    monkeypatch.setattr(kin, "KIN", kin.Kin())  # no scan of another test to read scans off
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
    files = sorted(cache.rglob(FILES))
    # one file per language a terminal accepts from one of its states (scans are keyed by it)
    languages = {suffix_key(term.dfa, q) for term in compiled.terminals for q in range(term.dfa.n_states)}
    assert sorted(f.stem for f in files) == sorted(languages)
    scan_cache._registry.clear()  # a new process: only the disk remains
    dfa = compiled.terminals[0].dfa
    store = scan_cache.terminal_scans(suffix_key(dfa, 0), VOCAB.key, len(TokenIndex(compiled, VOCAB).token_ids))
    assert store.get(0) is not None  # loaded, not recomputed
    assert _same(first, _visit_all(TokenIndex(compiled, VOCAB)))


def test_scans_after_a_first_byte_round_trip_and_compose_the_same_masks(cache, monkeypatch):
    """A language's scan after a first byte (the slot scans of other states are composed
    from) is written beside its scan from the start and read back: a new process composes
    from the loaded one and builds the same index, without walking it again."""
    monkeypatch.setattr(token_index_module, "SHIFTED_MIN_SHARE", 0.0)
    monkeypatch.setattr(token_index_module, "SHIFTED_AFTER", 0.0)
    compiled = GRAMMAR.compile()
    first = _visit_all(TokenIndex(compiled, VOCAB))
    slots = {slot for store in scan_cache._registry.values() for slot in store._scans}
    assert slots == {scan_cache.FROM_START, scan_cache.AFTER_FIRST_BYTE}
    saved = {(store.dfa_key, slot): scan for store in scan_cache._registry.values()
             for slot, scan in store._scans.items()}
    scan_cache.save_all()
    scan_cache._registry.clear()  # a new process: only the disk remains
    monkeypatch.setattr(kin, "KIN", kin.Kin())
    assert _same(first, _visit_all(TokenIndex(compiled, VOCAB)))
    loaded = {(store.dfa_key, slot): scan for store in scan_cache._registry.values()
              for slot, scan in store._scans.items()}
    assert loaded.keys() == saved.keys()
    for key, scan in loaded.items():
        assert scan is not saved[key]
        assert np.array_equal(scan.inside, saved[key].inside), key
        assert np.array_equal(scan.split_rows, saved[key].split_rows), key
        assert np.array_equal(scan.split_pos, saved[key].split_pos), key
    for store in scan_cache._registry.values():  # as if no scan from the start were stored:
        store._scans.pop(scan_cache.FROM_START, None)  # each is composed from the loaded slots
    scan_cache._registry._walked.clear()  # (nor taken by an index of this process)
    monkeypatch.setattr(kin, "KIN", kin.Kin())  # (not read off the states just visited)
    made, composed = [], []
    monkeypatch.setattr(TokenIndex, "_scan_after_first_byte", lambda self, t, p: made.append(p))
    compose = TokenIndex._scan_composed
    monkeypatch.setattr(TokenIndex, "_scan_composed", lambda self, t, q: composed.append(q) or compose(self, t, q))
    assert _same(first, _visit_all(TokenIndex(compiled, VOCAB)))
    assert composed and made == []  # composed again, every scan after a first byte from disk


def test_scans_are_shared_between_grammars(cache):
    def item_terminal(index):
        return next(t for t, term in enumerate(index.terminals) if term.dfa.matches(b"12") and term.dfa.matches(b'"a"'))

    item = r"""item ::= #'"[a-z]*"' | #'[0-9]+' ;"""
    first = TokenIndex(Grammar.from_ebnf("start ::= item | '(' start ')' ;" + item).compile(), VOCAB)
    scan = first._terminal_scan(item_terminal(first), 0)
    other = Grammar.from_ebnf("start ::= item | '[' start ']' ;" + item)
    second = TokenIndex(other.compile(), VOCAB)
    assert second._terminal_scan(item_terminal(second), 0) is scan


def _without_arrays(path) -> None:
    """The same header, rightly checksummed, and no arrays."""
    meta, _ = diskstore.unpack(path.read_bytes())
    meta.pop("checksum")
    diskstore.write(path, meta, {})


@pytest.mark.parametrize(
    "damage",
    [
        lambda path: path.write_bytes(b"not a cache file"),
        lambda path: path.write_bytes(path.read_bytes()[:50]),
        lambda path: path.write_bytes(path.read_bytes()[:-1]),
        lambda path: path.write_bytes(diskstore.pack({"version": 99}, {})),
        lambda path: _without_arrays(path),
    ],
    ids=["garbage", "truncated", "last-byte-cut", "other-version", "no-arrays"],
)
def test_unreadable_files_are_ignored_with_a_warning_and_rewritten(cache, damage):
    compiled = GRAMMAR.compile()
    expected = _visit_all(TokenIndex(compiled, VOCAB))
    scan_cache.save_all()
    path = sorted(cache.rglob(FILES))[0]
    damage(path)
    scan_cache._registry.clear()
    with pytest.warns(GrammarWarning, match=r"ignoring unreadable index cache .*\.scans: "):
        got = _visit_all(TokenIndex(compiled, VOCAB))
    assert _same(expected, got)
    scan_cache.save_all()  # rewritten whole
    scan_cache._registry.clear()
    _visit_all(TokenIndex(compiled, VOCAB))  # no warning now (pytest -W error would fail)


def test_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")
    monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
    _visit_all(TokenIndex(GRAMMAR.compile(), VOCAB))
    scan_cache.save_all()
    assert scan_cache.cache_dir() is None
    assert not list(tmp_path.rglob(FILES))


def _rewrite(path, edit) -> bool:
    """Re-save a cache file with `edit` applied to its arrays and header (as array "meta"):
    a well-formed container whose content changed — damage only our own checksum can see.
    True when the file changed."""
    original = path.read_bytes()
    meta, stored = diskstore.unpack(original)
    arrays = {name: a.copy() for name, a in stored.items()}
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8).copy()
    edit(arrays)
    path.write_bytes(diskstore.pack(json.loads(bytes(arrays.pop("meta")).decode()), arrays))
    return path.read_bytes() != original


def _flip_inside_bit(arrays) -> None:
    arrays["inside"].reshape(-1)[0] ^= 1


def _meta(edit):
    def apply(arrays):
        meta = json.loads(bytes(arrays["meta"]).decode())
        edit(meta)
        arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    return apply


@pytest.mark.parametrize(
    "edit, why",
    [
        (_flip_inside_bit, "checksum mismatch"),
        (lambda a: a["inside"].reshape(-1).__setitem__(-1, ~a["inside"].reshape(-1)[-1]), "checksum mismatch"),
        (_meta(lambda m: m.__setitem__("package", "0.0.0-other")), "does not match"),
        (_meta(lambda m: m.pop("checksum")), "checksum mismatch"),
    ],
    ids=["inside-bit", "inside-last-byte", "other-package-version", "no-checksum"],
)
def test_damaged_content_gives_one_warning_and_the_fresh_masks(cache, edit, why):
    compiled = GRAMMAR.compile()
    expected = _visit_all(TokenIndex(compiled, VOCAB))
    scan_cache.save_all()
    damaged = 0
    for path in sorted(cache.rglob(FILES)):
        if not _rewrite(path, edit):
            continue  # nothing to damage in this file (no splits)
        damaged += 1
        scan_cache._registry.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = _visit_all(TokenIndex(compiled, VOCAB))
        messages = [str(w.message) for w in caught if issubclass(w.category, GrammarWarning)]
        assert len(messages) == 1 and why in messages[0] and path.name in messages[0], messages
        assert _same(expected, got)
        scan_cache.save_all()  # rewritten: the next process reads it silently
        scan_cache._registry.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert _same(expected, _visit_all(TokenIndex(compiled, VOCAB)))
    assert damaged


def test_every_flipped_byte_gives_the_fresh_masks(cache):
    compiled = GRAMMAR.compile()
    expected = _visit_all(TokenIndex(compiled, VOCAB))
    scan_cache.save_all()
    path = max(cache.rglob(FILES), key=lambda p: p.stat().st_size)
    original = path.read_bytes()
    for offset in range(0, len(original), max(1, len(original) // 97)):
        damaged = bytearray(original)
        damaged[offset] ^= 0x10
        path.write_bytes(bytes(damaged))
        scan_cache._registry.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = _visit_all(TokenIndex(compiled, VOCAB))
        assert len([w for w in caught if issubclass(w.category, GrammarWarning)]) <= 1
        assert _same(expected, got), f"byte {offset} flipped gave other masks"


def test_writes_are_atomic_and_leave_no_temporary_files(cache, monkeypatch):
    compiled = GRAMMAR.compile()
    _visit_all(TokenIndex(compiled, VOCAB))
    store = scan_cache._registry.values()[0]

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(scan_cache.os, "replace", fail)
    with pytest.warns(GrammarWarning, match="cannot write index cache .*disk full"):
        store.save()
    assert not store.path.exists() and not list(cache.rglob("*.tmp"))
    monkeypatch.undo()
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", str(cache))
    store.save()  # still marked changed: written on the next try
    assert store.path.exists() and not list(cache.rglob("*.tmp"))


def test_the_cache_directory_keeps_under_its_limit_least_recently_used_first(cache, monkeypatch):
    compiled = GRAMMAR.compile()
    _visit_all(TokenIndex(compiled, VOCAB))
    scan_cache.save_all()
    paths = sorted(cache.rglob(FILES))
    assert len(paths) >= 3
    for age, path in enumerate(paths):  # paths[0] oldest
        os.utime(path, (1_000_000 + age, 1_000_000 + age))
    sizes = [p.stat().st_size for p in paths]
    limit_mb = (sum(sizes[2:]) + 1) / (1 << 20)  # room for all but the two oldest
    monkeypatch.setenv("GRAMMARC_CACHE_MAX_MB", repr(limit_mb))
    assert scan_cache.enforce_cache_limit() == 2
    assert sorted(cache.rglob(FILES)) == paths[2:]
    # loading a file marks it used: it outlives files that were written later
    scan_cache._registry.clear()
    store = scan_cache.terminal_scans(*_key_of(paths[2]), len(TokenIndex(compiled, VOCAB).token_ids))
    assert store.get(0) is not None
    monkeypatch.setenv("GRAMMARC_CACHE_MAX_MB", repr((sizes[2] + 1) / (1 << 20)))
    scan_cache.enforce_cache_limit()
    assert sorted(cache.rglob(FILES)) == [paths[2]]


def test_files_of_earlier_formats_count_against_the_limit_and_leave_first(cache, monkeypatch):
    _visit_all(TokenIndex(GRAMMAR.compile(), VOCAB))
    scan_cache.save_all()
    current = sorted(cache.rglob(FILES))
    old = cache / "v4" / "vocab" / "language.npz"  # a numpy archive an earlier version wrote
    old.parent.mkdir(parents=True)
    old.write_bytes(bytes(4096))
    os.utime(old, (1_000_000, 1_000_000))
    limit = sum(p.stat().st_size for p in current)  # room for the current files only
    monkeypatch.setenv("GRAMMARC_CACHE_MAX_MB", repr((limit + 1) / (1 << 20)))
    assert scan_cache.enforce_cache_limit() == 1
    assert not old.exists() and sorted(cache.rglob(FILES)) == current


def _key_of(path):
    meta, _ = diskstore.unpack(path.read_bytes())
    return meta["dfa"], meta["vocab"]


def test_the_registry_in_memory_is_bounded_least_recently_used_first(cache, monkeypatch):
    compiled = GRAMMAR.compile()
    expected = _visit_all(TokenIndex(compiled, VOCAB))
    registry = scan_cache.ScanRegistry(max_bytes=1 << 30, max_stores=2)
    monkeypatch.setattr(scan_cache, "_registry", registry)
    got = _visit_all(TokenIndex(compiled, VOCAB))  # every scan still comes back (from disk or a rescan)
    assert _same(expected, got) and len(registry) == 2
    keys = [(s.dfa_key, s.vocab_key) for s in registry.values()]
    registry.get(keys[0], 0)  # used: now the most recent
    registry.get(("other", VOCAB.key), 1)
    assert [(s.dfa_key, s.vocab_key) for s in registry.values()] == [keys[0], ("other", VOCAB.key)]
    small = scan_cache.ScanRegistry(max_bytes=0)
    monkeypatch.setattr(scan_cache, "_registry", small)
    assert _same(expected, _visit_all(TokenIndex(compiled, VOCAB))) and len(small) == 1


def test_the_registry_counts_its_stores_bytes_as_they_grow_and_as_they_go(tmp_path, monkeypatch):
    """The byte bound reads a running total, not a sum over every store per new store: it
    must equal the sum over the stores kept after puts, evictions, and puts into a store
    already evicted (which no longer count)."""
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")

    def scan(n: int) -> scan_cache.Scan:
        return scan_cache.Scan(np.zeros(n, dtype=bool), np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32))

    registry = scan_cache.ScanRegistry(max_bytes=250, max_stores=100)
    first = registry.get(("a", "v"), 8)
    first.put(0, scan(100))
    first.put(0, scan(100))  # already there: not counted twice
    second = registry.get(("b", "v"), 8)
    second.put(0, scan(100))
    assert registry.nbytes() == 200 == sum(s.nbytes for s in registry.values())
    second.put(1, scan(100))  # 300 bytes: over the bound, evicted on the next new store
    third = registry.get(("c", "v"), 8)
    assert [s.dfa_key for s in registry.values()] == ["b", "c"]
    first.put(1, scan(50))  # evicted: its growth is its own, not the registry's
    third.put(0, scan(10))
    assert first.nbytes == 150 and registry.nbytes() == 210 == sum(s.nbytes for s in registry.values())
    registry.clear()
    assert registry.nbytes() == 0 and len(registry) == 0


def test_a_state_of_a_big_language_keeps_its_scans_under_no_key(cache, monkeypatch):
    """A state whose language has more than KEYED_MAX_STATES states (a length counter's)
    keeps its scans in memory under a name of its own (`scan_cache.unkeyed`): no canonical
    code is made for it, nothing is written out, and the index's parts are the same as with
    every scan keyed by its language."""
    grammar = Grammar.from_ebnf(r"""start ::= #'"[a-z]{0,12}"' ;""")
    monkeypatch.setattr(token_index_module, "KEYED_MAX_STATES", 10**9)
    keyed = _visit_all(TokenIndex(grammar.compile(), VOCAB))
    scan_cache._registry.clear()
    monkeypatch.setattr(kin, "KIN", kin.Kin())
    monkeypatch.setattr(token_index_module, "KEYED_MAX_STATES", 6)
    keys = []
    monkeypatch.setattr(token_index_module, "suffix_key", lambda dfa, q: keys.append(q) or suffix_key(dfa, q))
    compiled = grammar.compile()
    index = TokenIndex(compiled, VOCAB)
    assert _same(keyed, _visit_all(index))
    dfa = compiled.terminals[0].dfa
    reach = {q: _reachable(dfa, q) for q in range(dfa.n_states)}
    assert keys and all(reach[q] <= 6 for q in keys)  # only the counter's last states were keyed
    assert any(reach[q] > 6 for q in range(dfa.n_states))
    unkeyed = [store for store in scan_cache._registry.values() if store.dfa_key.startswith(scan_cache.UNKEYED)]
    assert unkeyed and all(store.path is None for store in unkeyed)
    assert any(store._scans for store in unkeyed)
    scan_cache.save_all()
    assert len(list(cache.rglob(FILES))) == len(scan_cache._registry) - len(unkeyed)


def _reachable(dfa, q: int) -> int:
    """How many states are reachable from q (q included), searched byte by byte."""
    seen, todo = {q}, [q]
    while todo:
        for target in np.asarray(dfa.trans[todo.pop()]).tolist():
            if target >= 0 and target not in seen:
                seen.add(target)
                todo.append(target)
    return len(seen)
