"""Scans keyed by the language a terminal accepts from a state, and started from the tokens
whose first byte that state takes: exact against a scan of every token from every state."""

from __future__ import annotations

import json
import weakref

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grammarc import Grammar, Vocabulary
from grammarc.automata import from_regex, literal
from grammarc.automata.comb import CombTable
from grammarc.automata.dfa import DFA
from grammarc.automata.suffix import suffix_key
from grammarc.tokens import index as index_module, kin, scan_cache
from grammarc.tokens import _scan
from grammarc.tokens.index import TokenIndex, walk_table
from grammarc.tokens.rows import token_bytes

ATOMS = ["a", "b", "é", "[ab]", "[^a]", "(ab|ba)", "a?", "b*", "(a|é)+"]


@st.composite
def patterns(draw, depth: int = 2):
    parts = draw(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=4))
    return "".join(parts) if depth == 0 or draw(st.booleans()) else f"({draw(patterns(depth - 1))})*" + "".join(parts)


@settings(max_examples=150, deadline=None)
@given(patterns(), patterns(), st.sampled_from(["x", "xy", "é"]))
def test_keys_name_languages_exactly(r, s, prefix):
    # the state reached after `prefix` in DFA(prefix r) accepts exactly L(r)
    after = from_regex(prefix + "(" + r + ")")
    state = after.run(prefix.encode())
    assert suffix_key(after, state) == suffix_key(from_regex(r), 0)
    # and keys differ exactly when the languages differ (minimal DFAs are canonical)
    assert (suffix_key(from_regex(r), 0) == suffix_key(from_regex(s), 0)) == (from_regex(r).key == from_regex(s).key)


@settings(max_examples=100, deadline=None)
@given(patterns(), st.sampled_from(["", "x", "xy", "é"]))
def test_the_c_suffix_code_matches_its_python_oracle(r, prefix):
    from grammarc.automata import _core
    from automata_reference import suffix_code

    d = from_regex(prefix + "(" + r + ")")
    table = np.ascontiguousarray(d.trans, dtype=np.int32)
    for q in range(d.n_states):
        assert _core.suffix_code(d._runs, d.accept.view(np.uint8), q) == suffix_code(d, q)
        # a table read once per byte run, or cell by cell: one code
        assert _core.suffix_code(table, d.accept.view(np.uint8), q, d.byte_runs) == suffix_code(d, q)
        assert _core.suffix_code(table, d.accept.view(np.uint8), q) == suffix_code(d, q)
        # suffix_key reads a dense table directly and a compact one through its runs: one key
        compact = DFA(CombTable.from_dense(np.asarray(d.trans)), d.accept)
        assert suffix_key(d, q) == suffix_key(compact, q)


def test_suffix_code_refuses_bad_input():
    from grammarc.automata import _core

    accept = np.zeros(2, dtype=np.uint8)
    with pytest.raises(ValueError, match="suffix_code: state or accept out of range"):
        _core.suffix_code([[], []], accept, 2)
    with pytest.raises(ValueError, match="suffix_code: a run out of range"):
        _core.suffix_code([[(0, 5, 2)], []], accept, 0)
    with pytest.raises(ValueError, match=r"suffix_code: a run is not \(lo, hi, target\)"):
        _core.suffix_code([[(0, 5)], []], accept, 0)
    table = np.zeros((2, 256), dtype=np.int32)
    for runs in (b"\0" * 255, bytes(256) + b"\0"):
        with pytest.raises(ValueError, match="^suffix_code: byte runs are 256 bytes, beside a table$"):
            _core.suffix_code(table, accept, 0, runs)
    with pytest.raises(ValueError, match="^suffix_code: byte runs are 256 bytes, beside a table$"):
        _core.suffix_code([[], []], accept, 0, bytes(256))
    table[0, 7] = 2  # a target past the states, read at the start of its run
    with pytest.raises(ValueError, match="^suffix_code: a target out of range$"):
        _core.suffix_code(table, accept, 0, bytes(7) + b"\1" + b"\2" * 248)


def test_every_state_of_a_literal_has_its_own_language():
    d = literal(b"abcab")
    assert len({suffix_key(d, q) for q in range(d.n_states)}) == d.n_states


def _brute_scan(index: TokenIndex, t: int, q: int):
    """Every token row from position 0 in state q, with no bucketing and no store."""
    rows = np.arange(len(index.token_ids), dtype=np.int32)
    end_rows, _, split_rows, split_pos = index._scan(t, rows, np.zeros(len(rows), dtype=np.int32), q)
    return set(end_rows.tolist()), set(zip(split_rows.tolist(), split_pos.tolist()))


VOCAB = Vocabulary.from_bytes(
    [bytes([b]) for b in range(256)]
    + [b"ab", b"a\xc3", b"\xc3\xa9", b'"a', b'a"', b'",', b"12", b"1.5", b" {", b"}\n", b"\xe2\x82", b"\xac"]
    + [b"<eos>"],
    eos_token_ids=[268],
)
GRAMMARS = [
    Grammar.from_json_schema({"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "number"}}}),
    Grammar.from_ebnf("start ::= #'[a-zé]+' (',' #'[0-9]+(\\\\.[0-9]+)?')* ;"),
]


@pytest.mark.parametrize("grammar", GRAMMARS, ids=["schema", "ebnf"])
@pytest.mark.parametrize("persist_min_rows", [0, 10**9], ids=["stored", "narrow"])
@pytest.mark.parametrize("shifted_min_share", [0.0, 0.5, 2.0], ids=["shifted-all", "shifted-wide", "walked"])
def test_scans_equal_brute_force_scans(grammar, persist_min_rows, shifted_min_share, monkeypatch):
    """Stored scans are composed of other states' scans after a first byte (every group of
    first bytes so composed with share 0, none with share 2): the same rows and splits, in
    the order one walk gives them."""
    monkeypatch.setattr(index_module, "PERSIST_MIN_ROWS", persist_min_rows)
    monkeypatch.setattr(index_module, "SHIFTED_MIN_SHARE", shifted_min_share)
    monkeypatch.setattr(index_module, "SHIFTED_AFTER", 0.0)  # made on the first request
    monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())  # no scans from other tests
    index = TokenIndex(grammar.compile(), VOCAB)
    composed = []
    monkeypatch.setattr(index, "_scan_after_first_byte",
                        lambda t, p: composed.append(p) or TokenIndex._scan_after_first_byte(index, t, p))
    for t, terminal in enumerate(index.terminals):
        if terminal.any_token:
            continue
        for q in range(terminal.dfa.n_states):
            scan = index._terminal_scan(t, q)
            ends, splits = _brute_scan(index, t, q)
            assert (scan.inside is None) == (persist_min_rows > 0), (t, q)  # narrow: made with their inside set
            if scan.inside is not None:
                assert np.flatnonzero(scan.inside).tolist() == sorted(ends), (t, q)
            inside_ids = index_module._inside_set(scan, index.tokens, index.n_words).ids()
            assert inside_ids.tolist() == sorted(index.token_ids[sorted(ends)].tolist()), (t, q)
            assert list(zip(scan.split_rows.tolist(), scan.split_pos.tolist())) == sorted(splits), (t, q)
    if shifted_min_share != 0.5:  # composed from shared scans: all stored ones with share 0, none with 2
        assert bool(composed) == (persist_min_rows == 0 and shifted_min_share == 0), composed


def test_a_shared_scan_after_a_first_byte_is_made_for_one_request_of_half_the_rows(monkeypatch):
    """`_shifted_scan`: a request for at least SHIFTED_NOW of the vocabulary makes the scan at
    once (walking those rows costs about as much); smaller ones wait until the requests sum
    to SHIFTED_AFTER vocabularies, this one included."""
    monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
    index = TokenIndex(GRAMMARS[0].compile(), VOCAB)
    n = len(index.token_ids)
    t = next(t for t, terminal in enumerate(index.terminals) if terminal.dfa.n_states > 1)
    p, other = 0, 1
    assert index._store(t, p) is not index._store(t, other)  # two languages, two stores
    assert index._shifted_scan(t, p, int(index_module.SHIFTED_NOW * n)) is not None
    small = max(1, int(0.4 * n))
    assert index._shifted_scan(t, other, small) is None
    assert index._shifted_scan(t, other, small) is None
    assert index._shifted_scan(t, other, n - 2 * small) is not None  # the asks sum to one vocabulary


@settings(max_examples=60, deadline=None)
@given(patterns(), st.sampled_from(["", "x", "é"]))
def test_suffix_code_reads_a_byte_table_as_it_reads_runs(r, prefix):
    """The table form (what DFA.key hashes) and the runs form give one code per state."""
    from grammarc.automata import _core

    d = from_regex(prefix + "(" + r + ")")
    accept = d.accept.view(np.uint8)
    for q in range(d.n_states):
        assert _core.suffix_code(d.trans, accept, q) == _core.suffix_code(d._runs, accept, q)


def test_suffix_code_refuses_a_table_that_is_not_256_wide():
    from grammarc.automata import _core

    with pytest.raises(ValueError, match=r"suffix_code: the table is not \[n, 256\]"):
        _core.suffix_code(np.zeros(300, dtype=np.int32), np.zeros(1, dtype=np.uint8), 0)
    table = np.full((1, 256), -1, dtype=np.int32)
    table[0, 7] = 5
    with pytest.raises(ValueError, match="suffix_code: a target out of range"):
        _core.suffix_code(table, np.zeros(1, dtype=np.uint8), 0)


COUNTED = [
    Grammar.from_json_schema({"type": "object", "properties": {"s": {"type": "string", "minLength": 2, "maxLength": 9}}}),
    Grammar.from_ebnf("start ::= #'[ab]{2,11}' (';' #'x{0,6}')? ;"),
    # a counter over bytes few tokens start with: its neighbours differ on the rows of those
    # first bytes alone (`TokenBytes.longer_than` with `first`)
    Grammar.from_ebnf("start ::= #'[x;]{1,9}' ('\"' | 'b') ;"),
]
COUNTED_VOCAB = Vocabulary.from_bytes(
    [bytes([b]) for b in range(256)]
    + [b"a" * k for k in range(2, 15)] + [b"ab" * k for k in range(1, 6)] + [b"x" * k for k in range(2, 8)]
    + [b'a"', b'aaaa"', b'", ', b'"}', b"a;x", b"ba;xxx", b"\xc3\xa9" * 3, b"\\n" * 2, b"\\u00e9a"]
    + [b"<eos>"],
    eos_token_ids=[256 + 13 + 5 + 6 + 9],
)


@pytest.mark.parametrize("grammar", COUNTED, ids=["maxLength", "ebnf-counts", "rare-first-bytes"])
@pytest.mark.parametrize("enough, most", [(None, None), (0.0, None), (None, 1.0)],
                         ids=["defaults", "compare-to-the-longest", "walk-any-share"])
@pytest.mark.parametrize("backwards", [False, True], ids=["forwards", "backwards"])
def test_scans_read_off_a_neighbour_equal_brute_force_scans(grammar, enough, most, backwards, monkeypatch):
    """A length counter's states scan as their neighbours but for the tokens longer than
    the characters they have left (`TokenIndex._scan_near`): the same rows and splits, in
    the same order, as a walk of every token, whichever state is met first."""
    monkeypatch.setattr(index_module, "PERSIST_MIN_ROWS", 0)
    monkeypatch.setattr(index_module, "PARTING_MAX_ROWS", -1)  # this reads scans off by depth, not by rows
    if enough is not None:
        monkeypatch.setattr(index_module, "NEAR_ENOUGH_SHARE", enough)
    if most is not None:
        monkeypatch.setattr(index_module, "NEAR_MAX_SHARE", most)
    monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
    monkeypatch.setattr(kin, "KIN", kin.Kin())
    index = TokenIndex(grammar.compile(), COUNTED_VOCAB)
    near = []
    monkeypatch.setattr(index, "_scan_near", lambda t, q, candidates, by_bytes: near.append(
        found := TokenIndex._scan_near(index, t, q, candidates, by_bytes=by_bytes)) or found)
    for t, terminal in enumerate(index.terminals):
        states = range(terminal.dfa.n_states)
        for q in reversed(states) if backwards else states:
            scan = index._terminal_scan(t, q)
            ends, splits = _brute_scan(index, t, q)
            assert np.flatnonzero(scan.inside).tolist() == sorted(ends), (t, q)
            assert list(zip(scan.split_rows.tolist(), scan.split_pos.tolist())) == sorted(splits), (t, q)
            inside = index_module._inside_set(scan, index.tokens, index.n_words)  # edited from the neighbour's
            ids = index.token_ids[np.array(sorted(ends), dtype=np.intp)]
            assert inside.ids().tolist() == sorted(ids.tolist()), (t, q)
    assert sum(found is not None for found in near) >= 5  # the counters' states were read off their neighbours


def _every_state_scans_as_every_token_walks(index: TokenIndex) -> None:
    """Each state's scan of each terminal (read off a kin's or not) has the rows, splits
    (in order) and inside set (edited from the kin's) of a walk of every token."""
    for t, terminal in enumerate(index.terminals):
        for q in range(terminal.dfa.n_states):
            scan = index._terminal_scan(t, q)
            ends, splits = _brute_scan(index, t, q)
            assert np.flatnonzero(scan.inside).tolist() == sorted(ends), (t, q)
            assert list(zip(scan.split_rows.tolist(), scan.split_pos.tolist())) == sorted(splits), (t, q)
            inside = index_module._inside_set(scan, index.tokens, index.n_words)
            ids = index.token_ids[np.array(sorted(ends), dtype=np.intp)]
            assert inside.ids().tolist() == sorted(ids.tolist()), (t, q)


KIN_VOCAB = Vocabulary.from_bytes(
    [bytes([b]) for b in range(256)]
    + [b"ab", b"ba", b"abab", b"a\xc3", b"\xc3\xa9", b"\xc3\xa9a", b'a"', b'ab"', b'"}', b'"};', b'a"}', b'b";',
       b'"!', b'\xc3\xa9"', b"}", b"aaaa", b"bbb"]
    + [b"<eos>"],
    eos_token_ids=[256 + 17],
)
# (the terminal scanned first, the terminal whose states may read its scans off the first's)
KIN_TAILS = [('"', '"}'), ('"', '"};?'), ('"}', '"!'), ('(a|")', '"}')]


@settings(max_examples=60, deadline=None)
@given(patterns(), st.sampled_from(KIN_TAILS), st.sampled_from([16, 256]))
def test_scans_read_off_a_kin_equal_brute_force_scans(body, tails, most_parting):
    """A state whose kin (a state of another terminal that takes the same bytes, scanned
    before) walks alike every token without a parting byte has its scan read off the kin's
    (`TokenIndex._scan_near`, `_scan.agree_bytes`): the same rows and splits, in the same
    order, as a walk of every token, for every state of both terminals."""
    first, second = (Grammar.from_ebnf(f"start ::= #'\"({body}){tail}' ;") for tail in tails)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index_module, "PERSIST_MIN_ROWS", 0)
        mp.setattr(index_module, "KIN_MAX_SHARE", 1.0)
        mp.setattr(index_module, "KIN_MAX_PARTING", most_parting)
        mp.setattr(index_module, "PARTING_MAX_ROWS", -1)  # this reads scans off by bytes, not by rows
        mp.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
        mp.setattr(kin, "KIN", kin.Kin())
        read_off = []
        for grammar in (first, second):
            index = TokenIndex(grammar.compile(), KIN_VOCAB)
            def scan_near(t, q, candidates, by_bytes, index=index):
                found = TokenIndex._scan_near(index, t, q, candidates, by_bytes=by_bytes)
                if by_bytes:
                    read_off.append(found)
                return found

            mp.setattr(index, "_scan_near", scan_near)
            _every_state_scans_as_every_token_walks(index)
    assert any(found is not None for found in read_off)  # the second terminal's body read the first's


def test_a_string_body_that_goes_on_after_its_quote_reads_its_scan_off_any_string_body(monkeypatch):
    """Llama-3: the body of a string value merged with what follows it (``string ws? "}"``)
    parts from a plain string body only at the closing quote: its scan is the plain body's
    but for the ~2% of tokens that hold a quote, and equals the scan composed without kin."""
    import vocabularies

    vocab = vocabularies.llama3()
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")
    monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
    monkeypatch.setattr(kin, "KIN", kin.Kin())
    plain = TokenIndex(Grammar.from_ebnf(r"start ::= #'\"[a-z ]*\"' ;").compile(), vocab)
    plain._terminal_scan(0, 1)
    merged = TokenIndex(Grammar.from_ebnf(r"start ::= #'\"[a-z ]*\" *}' ;").compile(), vocab)
    kindred = kin.KIN.candidates(vocab.key, kin.profile(merged.terminals[0].dfa.trans[1], False))
    assert [(dfa is plain.terminals[0].dfa, p) for dfa, p, _ in kindred] == [(True, 1)]
    composed = merged._scan_composed(0, 1)
    near = merged._scan_near(0, 1, kindred, by_bytes=True)
    assert near is not None and near is not kindred[0][2]
    assert np.array_equal(near.inside, composed.inside)
    assert np.array_equal(near.split_rows, composed.split_rows) and np.array_equal(near.split_pos, composed.split_pos)
    holding_quote = merged.tokens.holding(ord('"'))
    assert 0 < len(holding_quote) < 0.03 * len(merged.token_ids)


LONG_VALUE = ("grammarc reads a length counter's states off their neighbours: " * 8).strip()


def _masks_with_and_without(schema, text: str, method: str, settings: dict, monkeypatch) -> list:
    """Llama-3: the masks before each token of `text` (and after the last), once under each
    of `settings` (a label -> the index module's constants to set), each from a fresh index,
    scan store and kin registry; asserts they are equal and returns (label, result) for
    each call of the index's `method` (the read-off path the settings switch)."""
    import vocabularies
    from grammarc import Engine

    vocab, encoder = vocabularies.llama3(), vocabularies.quicktok_reference("llama3")
    assert Grammar.from_json_schema(schema).accepts(text)
    ids = encoder.encode(text)
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")
    masks, calls = {}, []
    for label, constants in settings.items():
        for name, value in constants.items():
            monkeypatch.setattr(index_module, name, value)
        monkeypatch.setattr(kin, "KIN", kin.Kin())
        monkeypatch.setattr(index_module, "_indexes", weakref.WeakKeyDictionary())
        monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
        engine = Engine(Grammar.from_json_schema(schema), vocab)
        real = getattr(engine.index, method)
        monkeypatch.setattr(engine.index, method, lambda *args, label=label, real=real, **kwargs: calls.append(
            (label, found := real(*args, **kwargs))) or found)
        masks[label] = []
        for token in ids:
            masks[label].append(engine.packed_mask().copy())
            engine.advance(token)
        masks[label].append(engine.packed_mask().copy())
        assert engine.accepts_eos()
    for step, (a, b) in enumerate(zip(*masks.values(), strict=True)):
        assert np.array_equal(a, b), f"step {step}"
    return calls


@pytest.mark.parametrize(
    "schema, value",
    [
        ({"type": "string", "maxLength": 120}, LONG_VALUE[:118]),
        ({"type": "string", "minLength": 40, "maxLength": 2000}, LONG_VALUE + " \u00e9\\n\u4e2d\U0001f600"),
        ({"type": "string", "pattern": "^[a-z' :]{3,200}$"}, LONG_VALUE[:190]),
    ],
    ids=["maxLength", "blocks", "pattern"],
)
def test_real_vocabulary_masks_do_not_depend_on_reading_scans_off_neighbours(schema, value, monkeypatch):
    """Llama-3, a document with a long string: every mask with scans read off neighbours
    (`_scan_near`) equals the mask without (each from a fresh index and scan store)."""
    without = {"PARTING_MAX_ROWS": -1}  # by depth alone here (see the parting rows' test)
    calls = _masks_with_and_without(schema, json.dumps(value, ensure_ascii=False), "_scan_near", {
        "with": dict(without, NEAR_MAX_SHARE=index_module.NEAR_MAX_SHARE, KIN_MAX_SHARE=index_module.KIN_MAX_SHARE),
        "without": dict(without, NEAR_MAX_SHARE=-1.0, KIN_MAX_SHARE=-1.0),  # never a neighbour's (nor a kin's)
    }, monkeypatch)
    assert sum(label == "with" and found is not None for label, found in calls) >= 3
    assert not any(label == "without" and found is not None for label, found in calls)


@settings(max_examples=60, deadline=None)
@given(patterns(), st.sampled_from(KIN_TAILS + [('"', '"'), ('"}', '"}')]), st.sampled_from([0, 1, 3, 512]))
def test_scans_read_off_a_kin_along_parting_rows_equal_brute_force_scans(body, tails, max_rows):
    """`TokenIndex._parting`: a state's scan read off a kin's along the rows on which the two
    part (`_scan.parting_rows`), within `max_rows` of them: the same rows and splits, in the
    same order, as a walk of every token, for every state of both terminals; and, with no
    limit that binds, at least one was read off so."""
    first, second = (Grammar.from_ebnf(f"start ::= #'\"({body}){tail}' ;") for tail in tails)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index_module, "PERSIST_MIN_ROWS", 0)
        mp.setattr(index_module, "PARTING_MAX_ROWS", max_rows)
        mp.setattr(index_module, "NEAR_MAX_SHARE", -1.0)  # no other way to read a scan off
        mp.setattr(index_module, "KIN_MAX_SHARE", -1.0)
        mp.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
        mp.setattr(kin, "KIN", kin.Kin())
        read_off = []
        for grammar in (first, second):
            index = TokenIndex(grammar.compile(), KIN_VOCAB)
            mp.setattr(index, "_parting", lambda t, q, candidates, index=index: read_off.append(
                found := TokenIndex._parting(index, t, q, candidates)) or found)
            _every_state_scans_as_every_token_walks(index)
    if max_rows >= len(KIN_VOCAB.tokens) and tails[0] != tails[1]:  # (one automaton twice: the store has it all)
        assert any(found is not None for found in read_off)  # every row may part: some state is read off


KEY_VOCAB = Vocabulary.from_bytes(
    [bytes([b]) for b in range(256)]
    + [b"ab", b'ab"', b'b"', b'a"}', b"ba", b'ba"', b"aab", b'aab"', b"\xc3\xa9", b'\xc3\xa9"', b"b\\", b'\\"',
       b"abab", b'bab"']
    + [b"<eos>"],
    eos_token_ids=[256 + 14],
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet="abé", min_size=1, max_size=4), min_size=1, max_size=5, unique=True))
def test_a_key_tries_states_read_their_scans_off_one_another(keys):
    """`TokenIndex._parting` with a state of the same automaton (`_alike`): the states of an
    object's other keys (``json_string_except!``) read their scans off one another along
    the rows on which they part: every state's scan (each one wide here) equals a walk of
    every token, and some were read off a state of the same automaton."""
    grammar = Grammar.from_ebnf("start ::= json_string_except!(" + ", ".join(json.dumps(k) for k in keys) + ");")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index_module, "PERSIST_MIN_ROWS", 0)
        mp.setattr(index_module, "NEAR_MAX_SHARE", -1.0)  # no other way to read a scan off
        mp.setattr(index_module, "KIN_MAX_SHARE", -1.0)
        mp.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
        mp.setattr(kin, "KIN", kin.Kin())
        index = TokenIndex(grammar.compile(), KEY_VOCAB)
        read_off = []  # the states whose kin was one of their own terminal's recent states

        def parting(t, q, candidates):
            found = TokenIndex._parting(index, t, q, candidates)
            if found is not None and any(scan is found[1] for _, scan in index._recent.get(t, ())):
                read_off.append(q)
            return found

        mp.setattr(index, "_parting", parting)
        _every_state_scans_as_every_token_walks(index)
    if any(len(key) > 1 and key[0] != "é" for key in keys):  # a state below the root, alike it
        assert read_off


def test_states_alike_and_not():
    """`_alike`: a key trie's root and the state after a key's first letter mostly go to the
    same states (the string body); a length counter's states each go on to the next."""
    keys = Grammar.from_ebnf('start ::= json_string_except!("ab", "ba");').compile().terminals[0].dfa
    after_a = int(keys.trans[1, ord("a")])
    assert index_module._alike(np.asarray(keys.trans[1]), np.asarray(keys.trans[after_a]))
    counter = from_regex("[a-z]{0,40}")
    assert not index_module._alike(np.asarray(counter.trans[3]), np.asarray(counter.trans[4]))


def _masks_along(engine, encoder, text: str) -> list[np.ndarray]:
    """Every mask of `engine` along `text`'s tokens (the last after them), the text whole."""
    out = []
    for token in encoder.encode(text):
        out.append(engine.packed_mask().copy())
        engine.advance(token)
    out.append(engine.packed_mask().copy())
    assert engine.accepts_eos()
    return out


def test_shared_states_found_in_the_store_are_not_walked(monkeypatch):
    """Llama-3: a state of an automaton that an earlier grammar scanned (JSON's separators,
    strings, numbers) is found in the store (`TokenIndex._stored_scan`) without a walk to
    learn that it is wide (its first bytes' rows tell), and every mask of the second grammar
    equals the mask made with every state walked first."""
    import vocabularies
    from grammarc import Engine

    vocab, encoder = vocabularies.llama3(), vocabularies.quicktok_reference("llama3")
    first = ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}},
             '{"a": "x y", "b": 12}')
    second = ({"type": "array", "items": {"type": "object", "properties": {"c": {"type": "string"}, "d": {
        "type": "number"}}}}, '[{"c": "\u00e9 z", "d": -1.5}, {"d": 2}]')
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")
    monkeypatch.setattr(index_module, "walked_states", lambda dfa, vocab_key: {})  # each index walks (or finds) its own
    masks, found, walked, asked = {}, [], [], []
    for label in ("stored", "walked"):
        monkeypatch.setattr(kin, "KIN", kin.Kin())
        monkeypatch.setattr(index_module, "_indexes", weakref.WeakKeyDictionary())
        monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
        if label == "walked":
            monkeypatch.setattr(TokenIndex, "_stored_scan", lambda self, t, q: None)
        for (schema, text), keep in ((first, False), (second, True)):
            engine = Engine(Grammar.from_json_schema(schema), vocab)
            if keep and label == "stored":
                index, stored, narrow = engine.index, engine.index._stored_scan, engine.index._narrow_walk
                def looked_up(t, q, stored=stored):
                    asked.append((t, q))
                    scan = stored(t, q)
                    if scan is not None:
                        found.append((t, q))
                    return scan

                monkeypatch.setattr(index, "_stored_scan", looked_up)
                # a walk, not the refusal from the first bytes alone (`thin=False`) that comes first
                monkeypatch.setattr(index, "_narrow_walk", lambda t, q, thin=True: (
                    thin and walked.append((t, q))) or narrow(t, q, thin=thin))
            out = _masks_along(engine, encoder, text)
            if keep:
                masks[label] = out
    assert found and not set(found) & set(walked)
    starts = index.tokens.first_starts
    first_rows = {(t, q): int(sum(starts[b + 1] - starts[b] for b in range(256)
                                  if index.terminals[t].dfa.trans[q, b] >= 0)) for t, q in asked}
    few = [key for key in index._inside if key not in first_rows]  # every state built, and the store was not asked
    assert few and all(rows >= index_module.PERSIST_MIN_ROWS for rows in first_rows.values())  # only wide ones are
    for step, (a, b) in enumerate(zip(masks["stored"], masks["walked"], strict=True)):
        assert np.array_equal(a, b), f"step {step}"


def test_a_shared_automatons_walked_states_serve_the_next_index_over_its_vocabulary(monkeypatch):
    """The automata that grammars share (JSON's separators, strings and numbers: the same
    objects in every grammar that has them) keep their states' walks per vocabulary
    (`scan_cache.walked_states`): a later grammar's index over the same vocabulary reads them
    instead of walking or looking in the store, one over another vocabulary walks its own, and
    every mask equals the mask made with every state walked afresh."""
    import vocabularies
    from grammarc import Engine

    vocabs = {"llama3": (vocabularies.llama3(), vocabularies.quicktok_reference("llama3")),
              "qwen3": (vocabularies.qwen3(), vocabularies.quicktok_reference("qwen3"))}
    first = ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}},
             '{"a": "x y", "b": 12}')
    second = ({"type": "array", "items": {"type": "object", "properties": {"c": {"type": "string"}, "d": {
        "type": "number"}}}}, '[{"c": "\u00e9 z", "d": -1.5}, {"d": 2, "e": [true, "q"]}]')
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")
    masks, served = {}, {}
    for label in ("kept", "afresh"):
        monkeypatch.setattr(kin, "KIN", kin.Kin())
        monkeypatch.setattr(index_module, "_indexes", weakref.WeakKeyDictionary())
        monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())  # its walked states too
        if label == "afresh":
            monkeypatch.setattr(index_module, "walked_states", lambda dfa, vocab_key: {})
        for name, (vocab, encoder) in vocabs.items():
            for which, (schema, text) in (("first", first), ("second", second)):
                engine = Engine(Grammar.from_json_schema(schema), vocab)
                index, asked, worked = engine.index, [], []
                for method in ("_stored_scan", "_narrow_walk", "_wide_scan"):
                    monkeypatch.setattr(index, method, lambda t, q, _m=getattr(index, method), **how: worked.append(
                        (t, q)) or _m(t, q, **how))
                monkeypatch.setattr(index, "_state_walk", lambda t, q, _m=index._state_walk: asked.append(
                    (t, q, (found := _m(t, q))[0] is not None)) or found)
                masks[label, name, which] = _masks_along(engine, encoder, text)
                served[label, name, which] = {(t, q, narrow) for t, q, narrow in asked if (t, q) not in worked}
    for key in [k for k in masks if k[0] == "kept"]:
        for step, (a, b) in enumerate(zip(masks[key], masks[("afresh",) + key[1:]], strict=True)):
            assert np.array_equal(a, b), f"{key} step {step}"
    assert not any(served[key] for key in served if key[0] == "afresh")
    assert not served["kept", "llama3", "first"] and not served["kept", "qwen3", "first"]  # not llama3's walks
    for name in vocabs:  # narrow walks and wide scans alike
        assert {narrow for _, _, narrow in served["kept", name, "second"]} == {True, False}, name


def _parting_by_hand(index: TokenIndex, a: DFA, q: int, b: DFA, p: int) -> list[bytes]:
    """The tokens on which walks from state q of `a` and p of `b` part, walked side by side
    a byte at a time (only those holding a quote can, for the states used here)."""
    tokens, found = index.tokens, []
    for r in tokens.holding(ord('"')).tolist():
        token = bytes(tokens.data[tokens.offsets[r]:tokens.offsets[r] + tokens.lengths[r]])
        x, y = q, p
        for byte in token:
            x, y = int(a.trans[x, byte]), int(b.trans[y, byte])
            if x < 0 and y < 0:
                break
            if (x < 0) != (y < 0) or bool(a.accept[x]) != bool(b.accept[y]):
                found.append(token)
                break
    return sorted(found)


def test_an_objects_other_keys_read_their_scans_off_a_string_body(monkeypatch):
    """Llama-3: the state of an object's other keys (``json_string_except!``) right after
    the opening quote parts from a plain string body only on the rows that spell the rest of
    a key and then the quote (`_scan.parting_rows`): none for most keys (Llama-3 has no
    token ``name"``), two for the key " !", where ~3% of the tokens hold a quote. Its scan
    read off the body's equals the scan composed without kin, and so does the body's read
    off the trie's (a kin that much larger is tried only without `PARTING_LARGER`)."""
    import vocabularies

    vocab = vocabularies.llama3()
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", "off")
    monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
    keys = ("name", "names", "description", "id", "\u00e9t\u00e9", "\u4e2d", " !")
    others = TokenIndex(Grammar.from_ebnf("start ::= json_string_except!(" + ", ".join(
        json.dumps(k) for k in keys) + ");").compile(), vocab)
    words = TokenIndex(Grammar.from_json_schema({"type": "string"}).compile(), vocab)
    key, string = others.terminals[0].dfa, words.terminals[0].dfa
    assert kin.profile(string.trans[1], False) == kin.profile(key.trans[1], False)
    for q in (1, int(key.trans[1, ord(" ")])):  # and after the space: the tokens that start with !"
        rows = np.frombuffer(_scan.parting_rows(walk_table(key), q, walk_table(string), 1, words.tokens.native,
                                                4096, 64, 512), np.int32)
        spelled = sorted(bytes(words.tokens.data[o:o + n]) for o, n in zip(
            words.tokens.offsets[rows].tolist(), words.tokens.lengths[rows].tolist()))
        assert spelled == _parting_by_hand(words, key, q, string, 1)
        assert spelled == [b' !"', b' !");\n'] if q == 1 else all(token.startswith(b'!"') for token in spelled)
        assert _scan.parting_rows(walk_table(key), q, walk_table(string), 1, words.tokens.native, 4096, 64, 1) is None
    for first, second, larger in ((words, others, index_module.PARTING_LARGER), (others, words, 10**6)):
        monkeypatch.setattr(kin, "KIN", kin.Kin())
        monkeypatch.setattr(index_module, "PARTING_LARGER", larger)  # a trie's states past a body's: not tried
        first._terminal_scan(0, 1)
        kindred = kin.KIN.candidates(vocab.key, kin.profile(second.terminals[0].dfa.trans[1], False))
        parting = second._parting(0, 1, kindred)
        assert parting is not None and parting[1] is kindred[0][2] and len(parting[0]) == 2
        read = second._read_off(0, 1, *parting)
        composed = second._scan_composed(0, 1)
        assert read is not kindred[0][2]  # two rows part them: an edited copy
        assert np.array_equal(read.inside, composed.inside)
        assert np.array_equal(read.split_rows, composed.split_rows)
        assert np.array_equal(read.split_pos, composed.split_pos)
        inside = index_module._inside_set(read, second.tokens, second.n_words)
        assert inside.ids().tolist() == sorted(second.token_ids[np.flatnonzero(composed.inside)].tolist())


@pytest.mark.parametrize("document", [
    {"name": "x", "description": "d", "id": 3, "names": ["y"], "nam": 1, "name2": {"id": 3, "i": "\u00e9"},
     "\u00e9t\u00e9": 0},
    {"id": 1, "n": {"name": "a", "namex": 2, "i d": 3, " !": 4, "descriptions": 5}, "idx": 1, "na\"me": 2},
])
def test_real_vocabulary_masks_do_not_depend_on_reading_scans_off_parting_rows(document, monkeypatch):
    """Llama-3, objects with other keys beside their properties: every mask with scans read
    off kin along parting rows equals the mask without (each from a fresh index, store and
    kin registry), and some were read off so."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "description": {"type": "string"},
                                               "id": {"type": "integer"}, "n": {"$ref": "#"}}}
    calls = _masks_with_and_without(schema, json.dumps(document, ensure_ascii=False), "_parting", {
        "with": {"PARTING_MAX_ROWS": index_module.PARTING_MAX_ROWS}, "without": {"PARTING_MAX_ROWS": -1}},
        monkeypatch)
    assert sum(label == "with" and found is not None for label, found in calls) >= 1
    assert not any(label == "without" and found is not None for label, found in calls)


def _longer_rows(tokens, d: int, first: np.ndarray) -> tuple[list[int], list[int], bool]:
    """Brute force for `TokenBytes.longer_than(d, first)`: (the rows longer than `d` bytes
    whose first byte `first` flags, every row longer than `d`, whether the first are few
    enough, at most half of every long row, to be given alone)."""
    every = np.flatnonzero(tokens.lengths > max(d, 0))
    exact = np.flatnonzero((tokens.lengths > max(d, 0)) & first[tokens.data[tokens.offsets]])
    return exact.tolist(), every.tolist(), len(exact) <= len(every) // 2


def test_rows_by_length_answer_which_tokens_are_longer_than_a_depth():
    tokens = token_bytes(COUNTED_VOCAB)
    lengths = tokens.lengths
    for d in range(-1, tokens.longest + 2):
        assert sorted(tokens.longer_than(d).tolist()) == np.flatnonzero(lengths > max(d, 0)).tolist(), d
    for share in (0.0, 0.01, 0.25, 0.5, 1.0):
        d = tokens.depth_leaving(share)
        assert (lengths > d).sum() <= share * len(lengths) and (d == 0 or (lengths > d - 1).sum() > share * len(lengths))
    assert tokens.depth_leaving(-1.0) == tokens.longest + 1 == int(lengths.max()) + 1
    cut = 0
    for flagged in ([], [ord("x")], [ord("x"), ord(";")], [ord("a")], list(range(256)), [ord("x"), 0xC3, ord("b")]):
        first = np.zeros(256, dtype=bool)
        first[flagged] = True
        for d in range(-1, tokens.longest + 2):
            exact, every, few = _longer_rows(tokens, d, first)
            found = sorted(tokens.longer_than(d, first).tolist())
            # the flagged first bytes' rows, or every long row where those are not many fewer
            assert found == (exact if few else every), (flagged, d)
            cut += few and len(exact) < len(every)
    assert cut >= 10  # the rows of the flagged first bytes alone, not only every long row


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=40, unique=True),
       st.sets(st.integers(0, 255), max_size=6), st.integers(-1, 14))
def test_rows_longer_than_a_depth_from_some_first_bytes(pieces, flagged, d):
    tokens = token_bytes(Vocabulary.from_bytes(pieces))
    first = np.zeros(256, dtype=bool)
    first[sorted(flagged)] = True
    exact, every, few = _longer_rows(tokens, d, first)
    found = tokens.longer_than(d, first)
    assert len(set(found.tolist())) == len(found)
    assert sorted(found.tolist()) == (exact if few else every)


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(starts=a["starts"][:-1]), "inconsistent array sizes"),
    (lambda a: a.update(live=a["live"][:255]), "inconsistent array sizes"),
    (lambda a: a.update(d=a["width"]), "inconsistent array sizes"),
    (lambda a: a.update(d=-1), "inconsistent array sizes"),
    (lambda a: a["longer"].__setitem__((ord("x"), 0), 10 ** 6), "a count is out of its bucket"),
])
def test_bucket_prefixes_refuses_inconsistent_arrays(change, message):
    tokens = token_bytes(COUNTED_VOCAB)
    args = {"order": tokens.by_first_length, "starts": tokens.first_starts, "longer": tokens.first_longer.copy(),
            "d": 0, "live": np.ones(256, dtype=np.uint8), "width": tokens.first_longer.shape[1]}
    change(args)
    with pytest.raises(ValueError, match=f"^bucket_prefixes: {message}$"):
        _scan.bucket_prefixes(args["order"], args["starts"], args["longer"], args["d"], args["live"], 10 ** 9)


@settings(max_examples=100, deadline=None)
@given(st.lists(patterns(), min_size=1, max_size=5), st.booleans())
def test_openers_are_the_bytes_each_terminal_starts_with(rs, any_token):
    # read off the start rows at once (`_openers`): byte b opens terminal t iff its DFA steps
    # from the start on b; any! opens on no byte (it starts only at a token boundary)
    from grammarc.lowering.compiler import Terminal
    dfas = [from_regex(r) for r in rs]
    dfas[0] = DFA(CombTable.from_dense(np.asarray(dfas[0].trans)), dfas[0].accept)  # a compact table's row
    terminals = [Terminal(r, dfa) for r, dfa in zip(rs, dfas)]
    if any_token:
        terminals.insert(len(terminals) // 2, Terminal("any!", from_regex("[a-b]+"), any_token=True))
    openers = index_module._openers(terminals)
    assert openers.shape == (len(terminals), 256) and not openers.flags.writeable
    for row, terminal in zip(openers, terminals):
        expected = [False] * 256 if terminal.any_token else [terminal.dfa.step(0, b) >= 0 for b in range(256)]
        assert row.tolist() == expected
    assert index_module._openers(()).shape == (0, 256)


def test_parting_skips_a_kin_too_large_to_pair_within_the_budget(monkeypatch):
    """A kin whose automaton and the state's, twice over, have more states than
    `PARTING_MAX_PAIRS` is not walked beside the state at all (`_scan.parting_rows` is not
    called: such a walk gave up after ~1-3 ms, a counter of thousands of states beside a key
    trie); one within the budget is, and its read-off equals the state's whole scan."""
    monkeypatch.setattr(index_module, "PERSIST_MIN_ROWS", 0)  # every state wide, its scan whole
    monkeypatch.setattr(scan_cache, "_registry", scan_cache.ScanRegistry())
    monkeypatch.setattr(kin, "KIN", kin.Kin())
    kin_index = TokenIndex(Grammar.from_ebnf(r"start ::= #'\"[ab]*\"' ;").compile(), KIN_VOCAB)
    kin_scan = kin_index._terminal_scan(0, 1)
    index = TokenIndex(Grammar.from_ebnf(r"start ::= #'\"[ab]*\";?' ;").compile(), KIN_VOCAB)
    candidates = [(kin_index.terminals[0].dfa, 1, kin_scan)]
    needed = 2 * (index.terminals[0].dfa.n_states + kin_index.terminals[0].dfa.n_states)
    calls, real = [], _scan.parting_rows
    monkeypatch.setattr(_scan, "parting_rows", lambda *args: calls.append(args[5]) or real(*args))
    monkeypatch.setattr(index_module, "PARTING_MAX_PAIRS", needed - 1)
    assert index._parting(0, 1, candidates) is None and calls == []
    monkeypatch.setattr(index_module, "PARTING_MAX_PAIRS", needed)
    found = index._parting(0, 1, candidates)
    assert calls == [needed] and found is not None
    scan = index._read_off(0, 1, *found)
    ends, splits = _brute_scan(index, 0, 1)
    assert np.flatnonzero(scan.inside).tolist() == sorted(ends)
    assert list(zip(scan.split_rows.tolist(), scan.split_pos.tolist())) == sorted(splits)


def test_rows_longer_than_a_depth_past_the_depths_counted_per_first_byte():
    """Tokens longer than `rows.FIRST_LONGER_DEPTHS` bytes: the counts per first byte stop
    there, and deeper a state's rows are every long row (never fewer than the exact ones)."""
    from grammarc.tokens import rows as rows_module

    pieces = [b"a" * 300, b"a" * 257, b"a" * 10, b"b" * 270, b"b" * 256, b"ab", b"c" * 2, b"c" * 400]
    tokens = token_bytes(Vocabulary.from_bytes(pieces))
    assert tokens.longest == 400 and tokens.first_longer.shape == (256, rows_module.FIRST_LONGER_DEPTHS + 1)
    for flagged in (b"a", b"b", b"ab", b"c"):
        first = np.zeros(256, dtype=bool)
        first[list(flagged)] = True
        for d in range(-1, 403):
            exact, every, few = _longer_rows(tokens, d, first)
            found = sorted(tokens.longer_than(d, first).tolist())
            assert found in (exact, every), (flagged, d)
            if d < rows_module.FIRST_LONGER_DEPTHS and few:
                assert found == exact, (flagged, d)
