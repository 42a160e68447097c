"""The compiled automaton core against its Python oracle (tests/automata_reference.py).

`dfa._finalize` (trim, minimize, number canonically) and `nfa._determinize` (subset
construction) run in C; the oracle is the pure-Python code they replaced. Both must give
identical arrays (the canonical numbering is what makes `DFA.key` a language key), the same
budget errors, and refuse malformed arrays with a Python error instead of reading out of
bounds.
"""

from __future__ import annotations

import hashlib
import threading

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import automata_reference as ref
from automata_reference import suffix_code
from strategies import regex_patterns
from grammarc.automata import _core, dialect, nfa as nfa_module, operations
from grammarc.automata.dfa import DFA, _finalize, byte_classes
from grammarc.automata.nfa import _NFA, _determinize
from grammarc.errors import StateBudgetExceeded

SETTINGS = settings(max_examples=200, deadline=None)


@pytest.fixture(scope="module")
def monkeypatch_module():
    """`nfa._determinize` replaced, for the module's tests, by the checked `_both`."""
    with pytest.MonkeyPatch.context() as patch:
        for module in (nfa_module, operations, dialect):
            patch.setattr(module, "_determinize", _both)
        yield


def _same(a, b) -> None:
    assert np.array_equal(np.asarray(a.trans), np.asarray(b.trans))
    assert np.array_equal(a.accept, b.accept)
    assert a.key == b.key


@st.composite
def class_maps(draw, k: int) -> np.ndarray:
    """A byte -> class map with k classes, numbered in any order (not by first byte)."""
    cuts = sorted(draw(st.sets(st.integers(1, 255), min_size=k - 1, max_size=k - 1)))
    perm = np.asarray(draw(st.permutations(range(k))), dtype=np.int64)
    return perm[np.searchsorted(np.asarray(cuts, dtype=np.int64), np.arange(256), side="right")]


@st.composite
def class_tables(draw, max_states: int = 12, max_classes: int = 5):
    """(trans [n, k], accept [n], b2c [256]): any table over byte classes."""
    n = draw(st.integers(1, max_states))
    k = draw(st.integers(1, max_classes))
    cells = draw(st.lists(st.integers(-1, n - 1), min_size=n * k, max_size=n * k))
    accept = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return np.asarray(cells, dtype=np.int64).reshape(n, k), np.asarray(accept, dtype=bool), draw(class_maps(k))


@st.composite
def unfolded_tables(draw):
    """A table and a bigger one of the same language: each state copied up to 4 times, every
    edge going to any copy of its target (so minimization has states to merge)."""
    trans, accept, b2c = draw(class_tables(max_states=8, max_classes=4))
    n, k = trans.shape
    copies = draw(st.lists(st.integers(1, 4), min_size=n, max_size=n))
    first = np.concatenate(([0], np.cumsum(copies)))
    owner = np.repeat(np.arange(n), copies)
    choice = draw(st.lists(st.integers(0, 3), min_size=len(owner) * k, max_size=len(owner) * k))
    choice = np.asarray(choice, dtype=np.int64).reshape(len(owner), k)
    target = trans[owner]
    big = np.where(target < 0, -1, first[target] + choice % np.asarray(copies)[np.maximum(target, 0)])
    return (trans, accept, b2c), (big, accept[owner], b2c)


@SETTINGS
@given(class_tables())
def test_finalize_equals_the_oracle(table):
    _same(_finalize(*table), ref.finalize(*table))


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(20, 400), st.integers(1, 12), st.floats(0, 0.9), st.floats(0, 1))
def test_finalize_equals_the_oracle_on_bigger_random_tables(seed, n, k, dead, accepting):
    rng = np.random.default_rng(seed)
    trans = rng.integers(0, n, size=(n, k))
    trans[rng.random((n, k)) < dead] = -1
    accept = rng.random(n) < accepting
    runs = np.sort(np.concatenate((np.arange(k), rng.integers(0, k, size=256 - k))))  # every class used
    b2c = np.asarray(rng.permutation(k)[runs], dtype=np.int64)
    _same(_finalize(trans, accept, b2c), ref.finalize(trans, accept, b2c))


@SETTINGS
@given(unfolded_tables())
def test_finalize_merges_equivalent_states(pair):
    small, big = pair
    _same(_finalize(*big), _finalize(*small))
    _same(_finalize(*big), ref.finalize(*big))


@SETTINGS
@given(class_tables(max_states=30, max_classes=12))
def test_finalize_knows_the_key_its_table_gives(table):
    # the core writes the key's code while expanding classes to bytes: the same code the
    # general path reads back from the byte table (`DFA.key` of a fresh DFA, nothing known)
    d = _finalize(*table)
    assert "key" in vars(d) or d.is_empty
    assert d.key == DFA(d.trans, d.accept).key
    assert d.key == hashlib.blake2b(suffix_code(d, 0), digest_size=20).hexdigest()


def test_finalize_of_the_empty_language_is_the_one_state_automaton():
    trans = np.array([[1], [-1]], dtype=np.int64)
    d = _finalize(trans, np.zeros(2, dtype=bool), np.zeros(256, dtype=np.int64))
    assert d.n_states == 1 and d.is_empty


def test_finalize_refuses_malformed_arrays():
    accept = np.ones(2, dtype=bool)
    b2c = np.zeros(256, dtype=np.int64)
    trans = np.array([[0], [1]], dtype=np.int64)
    with pytest.raises(ValueError, match="out of range"):
        _core.finalize(np.array([[0], [2]], dtype=np.int64), 1, accept, b2c)
    with pytest.raises(ValueError, match="out of range"):
        _core.finalize(trans, 1, accept, b2c + 1)
    with pytest.raises(ValueError, match="inconsistent array sizes"):
        _core.finalize(trans, 2, accept, b2c)
    with pytest.raises(ValueError, match="inconsistent array sizes"):
        _core.finalize(trans, 1, accept, b2c[:255])
    with pytest.raises(TypeError, match="items of 8 bytes"):
        _core.finalize(trans.astype(np.int32), 1, accept, b2c)


def test_finalize_gives_the_same_automata_from_threads():
    rng = np.random.default_rng(7)
    tables = []
    for _ in range(40):
        n, k = int(rng.integers(50, 300)), int(rng.integers(2, 8))
        trans = rng.integers(-1, n, size=(n, k))
        b2c = np.asarray(np.sort(np.concatenate((np.arange(k), rng.integers(0, k, 256 - k)))), dtype=np.int64)
        tables.append((trans, rng.random(n) < 0.3, b2c))
    expected = [ref.finalize(*t).key for t in tables]
    got: dict[int, list[str]] = {}

    def work(i: int) -> None:
        got[i] = [_finalize(*t).key for t in tables]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(keys == expected for keys in got.values()) and len(got) == 4


# ------------------------------------------------------------------ determinize


def _isomorphic(got, want) -> bool:
    """Whether two subset constructions are the same automaton up to state numbers (every
    state of both is reachable from state 0, so one breadth-first walk pairs them all)."""
    (t1, a1, c1), (t2, a2, c2) = got, want
    if not np.array_equal(c1, c2) or t1.shape != t2.shape:
        return False
    pair = {0: 0}
    queue = [0]
    for q in queue:
        p = pair[q]
        if a1[q] != a2[p]:
            return False
        for x, y in zip(t1[q].tolist(), t2[p].tolist()):
            if (x < 0) != (y < 0):
                return False
            if x >= 0 and pair.setdefault(x, y) != y:
                return False
            if x >= 0 and x not in queue:
                queue.append(x)
    return len(pair) == t1.shape[0] and len(set(pair.values())) == t1.shape[0]


def _both(nfa, start, final, max_states, what, absorbing=frozenset()):
    """The C construction, checked against the oracle: same automaton or same error."""
    outcomes = []
    for run in (_determinize, ref.determinize):
        try:
            outcomes.append(run(nfa, start, final, max_states, what, absorbing))
        except StateBudgetExceeded as e:
            outcomes.append(str(e))
    got, want = outcomes
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        raise StateBudgetExceeded(want)
    assert _isomorphic(got, want)
    _same(_finalize(*got), ref.finalize(*want))
    _same(_finalize(got[0], ~got[1], got[2]), ref.finalize(want[0], ~want[1], want[2]))  # as dialect does
    return got


@SETTINGS
@given(regex_patterns("ab\u00e9\u20ac", depth=3, anchors=True), st.booleans(), st.sampled_from([3, 10, 10_000]))
def test_determinize_equals_the_oracle_on_regexes(monkeypatch_module, pattern, search, max_states):
    try:
        nfa_module._from_regex.__wrapped__(pattern, search, False, max_states)
    except StateBudgetExceeded:
        pass  # _both checked that the oracle gives the same error


@st.composite
def nfas(draw):
    """Any NFA: byte-range, epsilon, ^ and $ edges between a few states, absorbing states;
    two embedded ranges, each given by its edge lists or by run arrays (as DFA._run_arrays)."""
    n = draw(st.integers(1, 8))
    state = st.integers(0, n - 1)
    bounds = st.sampled_from([0, 9, 97, 98, 99, 200, 255])
    nfa = _NFA(n, "random NFA")
    a, b, c, d = sorted(draw(st.lists(st.integers(0, n), min_size=4, max_size=4)))
    arrays = set()
    for first, past in ((a, b), (c, d)):  # targets relative to a and c there
        if not draw(st.booleans()):
            nfa.embedded.append((first, past))
            continue
        ptr, runs = [0], []  # runs of any bytes, overlapping too (an NFA's edges may)
        for _ in range(first, past):
            runs += [(min(x, y), max(x, y), t)
                     for x, y, t in draw(st.lists(st.tuples(bounds, bounds, st.integers(0, n - 1 - first)), max_size=3))]
            ptr.append(len(runs))
        nfa.embedded.append((first, past, np.array(ptr, dtype=np.int64), np.array(runs, dtype=np.int32).reshape(-1, 3)))
        arrays.update(range(first, past))
    for q in range(n):
        nfa.new()
        if q in arrays:
            continue  # its edges are its runs there
        base = a if a <= q < b else c if c <= q < d else 0
        ranges = draw(st.lists(st.tuples(bounds, bounds, st.integers(-base, n - 1 - base)), max_size=3))
        nfa.edges[-1].extend((min(x, y), max(x, y), t) for x, y, t in ranges)
        nfa.eps[-1].extend(draw(st.lists(state, max_size=2)))
    for edges in (nfa.bol, nfa.eol):
        for s in draw(st.lists(state, max_size=2, unique=True)):
            edges[s] = draw(st.lists(state, min_size=1, max_size=2))
    absorbing = frozenset(draw(st.lists(state, max_size=2)))
    return nfa, draw(state), draw(state), absorbing


@SETTINGS
@given(nfas(), st.integers(1, 6))
def test_determinize_equals_the_oracle_on_any_nfa(case, max_states):
    nfa, start, final, absorbing = case
    try:
        _both(nfa, start, final, max_states, "random NFA", absorbing)
    except StateBudgetExceeded:
        pass


@settings(max_examples=60, deadline=None)
@given(st.lists(regex_patterns("ab\u00e9", depth=2), min_size=1, max_size=3), st.integers(0, 2), st.integers(1, 3),
       st.sampled_from([5, 150]))  # budgets that keep the Python oracle quick
def test_determinize_equals_the_oracle_in_the_regular_algebra(monkeypatch_module, patterns, lo, more, max_states):
    """The operations embed DFAs in NFAs (their edge lists shared, targets relative)."""
    ds = [nfa_module.from_regex(p) for p in patterns]
    for build in (lambda: operations.union(ds, max_states=max_states),
                  lambda: operations.concat(ds, max_states=max_states),
                  lambda: operations.star(ds[0], max_states=max_states),
                  lambda: operations.repeat(ds[-1], lo, lo + more, max_states=max_states),
                  lambda: operations.repeat(ds[-1], lo, None, max_states=max_states),
                  lambda: dialect.complement_containing(ds[0], max_states=max_states)):
        try:
            build()
        except StateBudgetExceeded:
            pass  # _both checked that the oracle gives the same error


def test_determinize_budget_error_names_the_pattern():
    with pytest.raises(StateBudgetExceeded, match=r"pattern '\(a\|b\)\*a\(a\|b\)\{8\}' is too large: building it took "
                                                  r"more than 40 automaton states before minimization"):
        nfa_module._from_regex.__wrapped__("(a|b)*a(a|b){8}", False, False, 10)


def test_determinize_refuses_malformed_nfas():
    trans, accept, b2c, k = _core.determinize([[(0, 255, 1)], []], [[], []], {}, {}, [], (), 0, 1, 8)
    assert k == 1 and np.frombuffer(trans, dtype=np.int64).tolist() == [1, -1] and list(accept) == [0, 1]
    assert np.frombuffer(b2c, dtype=np.int64).tolist() == [0] * 256
    # state 1 embedded: its self-loop's target 0 is relative to 1
    trans, accept, b2c, k = _core.determinize([[(0, 255, 1)], [(0, 255, 0)]], [[], []], {}, {}, [(1, 2)], (), 0, 1, 8)
    assert np.frombuffer(trans, dtype=np.int64).tolist() == [1, 1] and list(accept) == [0, 1]
    # the same, state 1's edges given by run arrays: bytes 0-99 to 0 (relative), none after
    ptr, runs = np.array([0, 1], dtype=np.int64), np.array([[0, 99, 0]], dtype=np.int32)
    trans, accept, b2c, k = _core.determinize([[(0, 255, 1)], []], [[], []], {}, {}, [(1, 2, ptr, runs)], (), 0, 1, 8)
    assert k == 2 and np.frombuffer(trans, dtype=np.int64).tolist() == [1, 1, 1, -1] and list(accept) == [0, 1]
    assert np.frombuffer(b2c, dtype=np.int64).tolist() == [0] * 100 + [1] * 156
    cases = [
        (([[(0, 255, 2)], []], [[], []], {}, {}, [], (), 0, 1, 8), ValueError, r"2 is not in 0\.\.1"),
        (([[(9, 3, 1)], []], [[], []], {}, {}, [], (), 0, 1, 8), ValueError, r"3 is not in 9\.\.255"),
        (([[(0, 256, 1)], []], [[], []], {}, {}, [], (), 0, 1, 8), ValueError, r"256 is not in 0\.\.255"),
        (([[(0, 1)], []], [[], []], {}, {}, [], (), 0, 1, 8), TypeError, "tuple"),
        (([[(0, 255, 1)], []], [[]], {}, {}, [], (), 0, 1, 8), ValueError, "list of 2 lists"),
        (([[(0, 255, 1)], []], [[], [-1]], {}, {}, [], (), 0, 1, 8), ValueError, r"-1 is not in 0\.\.1"),
        (([[(0, 255, 1)], []], [[], []], {5: [0]}, {}, [], (), 0, 1, 8), ValueError, r"5 is not in 0\.\.1"),
        (([[(0, 255, 1)], []], [[], []], {}, {0: (1,)}, [], (), 0, 1, 8), TypeError, "must be a list"),
        (([[(0, 255, 1)], []], [[], []], {}, {}, [], (7,), 0, 1, 8), ValueError, r"7 is not in 0\.\.1"),
        (([[(0, 255, 1)], []], [[], []], {}, {}, [], (), 0, 2, 8), ValueError, "out of range"),
        (([[(0, 255, "x")], []], [[], []], {}, {}, [], (), 0, 1, 8), TypeError, "integer"),
        (([[], [(0, 255, 1)]], [[], []], {}, {}, [(1, 2)], (), 0, 1, 8), ValueError, r"1 is not in -1\.\.0"),
        (([[], []], [[], []], {}, {}, [(1, 3)], (), 0, 1, 8), ValueError, r"3 is not in 1\.\.2"),
        (([[], []], [[], []], {}, {}, [(1,)], (), 0, 1, 8), TypeError, r"\(first, past\)"),
        (([[], []], [[], []], {}, {}, [(0, 2), (1, 2)], (), 0, 1, 8), ValueError, "overlap"),
        (([[], []], [[], []], {}, {}, [(0, 1, None)], (), 0, 1, 8), TypeError, r"\(first, past, ptr, runs\)"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([0]), _I32([]))], (), 0, 1, 8), ValueError, "ascending from 0 to m"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([0, 2]), _I32([0, 1, 0]))], (), 0, 1, 8), ValueError, "from 0 to m"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([1, 1]), _I32([0, 1, 0]))], (), 0, 1, 8), ValueError, "from 0 to m"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([0, 1]), _I32([0, 1]))], (), 0, 1, 8), ValueError, "from 0 to m"),
        (([[], []], [[], []], {}, {}, [(0, 2, _I64([0, 2, 1]), _I32([0] * 6))], (), 0, 1, 8), ValueError,
         "from 0 to m"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([0, 1]), np.zeros(3, np.int64))], (), 0, 1, 8), TypeError, "4 bytes"),
        (([[], []], [[], []], {}, {}, [(1, 2, "ptr", _I32([0, 1, 0]))], (), 0, 1, 8), TypeError, "bytes-like"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([0, 1]), _I32([0, 1, -1]))], (), 0, 1, 8), ValueError,
         r"embedded run \(0, 1, -1\): not bytes lo <= hi to a target in 0\.\.0"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([0, 1]), _I32([0, 1, 1]))], (), 0, 1, 8), ValueError,
         r"\(0, 1, 1\): not bytes"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([0, 1]), _I32([2, 1, 0]))], (), 0, 1, 8), ValueError, "not bytes"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([0, 1]), _I32([0, 256, 0]))], (), 0, 1, 8), ValueError, "not bytes"),
        (([[], []], [[], []], {}, {}, [(1, 2, _I64([0, 1]), _I32([-1, 0, 0]))], (), 0, 1, 8), ValueError, "not bytes"),
        (([[], [(0, 255, 0)]], [[], []], {}, {}, [(1, 2, _I64([0, 1]), _I32([0, 1, 0]))], (), 0, 1, 8), ValueError,
         "edges of its own"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            _core.determinize(*args)


def _I64(values):
    return np.array(values, dtype=np.int64)


def _I32(values):
    return np.array(values, dtype=np.int32)


def _runs_oracle(trans: np.ndarray) -> list[list[tuple[int, int, int]]]:
    """Byte runs with one live target, read off the table one byte at a time."""
    out = []
    for row in trans.tolist():
        runs: list[tuple[int, int, int]] = []
        for b, t in enumerate(row):
            if t < 0:
                continue
            if runs and runs[-1][1] == b - 1 and runs[-1][2] == t:
                runs[-1] = (runs[-1][0], b, t)
            else:
                runs.append((b, b, t))
        out.append(runs)
    return out


@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.floats(0, 1))
def test_runs_equals_the_oracle(seed, n, dead):
    rng = np.random.default_rng(seed)
    # few distinct targets, so that runs longer than one byte are common
    trans = rng.integers(0, min(n, 3), size=(n, 256)).astype(np.int32)
    trans[rng.random((n, 256)) < dead] = -1
    trans = np.sort(trans, axis=1)  # long runs of one target, dead bytes first
    assert _core.runs(trans) == _runs_oracle(trans)
    assert DFA(trans, np.ones(n, dtype=bool))._runs == _runs_oracle(trans)
    ptr, runs = DFA(trans, np.ones(n, dtype=bool))._run_arrays
    assert [[tuple(run) for run in runs[ptr[q]:ptr[q + 1]].tolist()] for q in range(n)] == _runs_oracle(trans)


def test_runs_refuses_malformed_tables():
    with pytest.raises(ValueError, match=r"not \[n, 256\]"):
        _core.runs(np.zeros(255, dtype=np.int32))
    with pytest.raises(ValueError, match="a target out of range"):
        _core.runs(np.full((1, 256), 1, dtype=np.int32))
    with pytest.raises(TypeError, match="items of 4 bytes"):
        _core.runs(np.zeros((1, 256), dtype=np.int64))
    with pytest.raises(ValueError, match=r"run_arrays: the table is not \[n, 256\]"):
        _core.run_arrays(np.zeros(255, dtype=np.int32))
    with pytest.raises(ValueError, match="run_arrays: a target out of range"):
        _core.run_arrays(np.full((1, 256), 1, dtype=np.int32))
    ptr, runs = _core.run_arrays(np.full((2, 256), -1, dtype=np.int32))  # no runs at all
    assert np.frombuffer(ptr, dtype=np.int64).tolist() == [0, 0, 0] and runs == b""


# ------------------------------------------------------------------ byte_classes


@given(class_tables(max_states=10, max_classes=6), st.integers(0, 3), st.integers(0, 2**32 - 1))
@SETTINGS
def test_byte_classes_equal_the_oracle(table, collide: int, seed: int):
    """Byte tables made by unfolding a class table (equal columns in runs and scattered),
    with some columns made copies of another but for one cell (near-duplicates stay apart):
    the same classes, numbered by first byte, and the same merged table."""
    trans_k, _, b2c = table
    full = trans_k[:, b2c].astype(np.int32)
    rng = np.random.default_rng(seed)
    for _ in range(collide):
        b, c = rng.integers(0, 256, size=2)
        full[:, b] = full[:, c]
        full[rng.integers(0, len(full)), b] = rng.integers(-1, len(full))
    mine, theirs = byte_classes(full), ref.byte_classes(full)
    assert np.array_equal(mine[0], theirs[0]) and np.array_equal(mine[1], theirs[1])
    assert np.array_equal(mine[0][:, mine[1]], full)


def test_byte_classes_of_tables_with_no_rows_or_wide_ones():
    table, b2c = byte_classes(np.zeros((0, 256), dtype=np.int32))
    assert table.shape == (0, 1) and not b2c.any()
    ramp = np.tile(np.arange(256, dtype=np.int32), (3, 1))  # every column its own class
    table, b2c = byte_classes(ramp)
    assert np.array_equal(table, ramp) and np.array_equal(b2c, np.arange(256))


def test_byte_classes_refuses_malformed_tables():
    with pytest.raises(ValueError, match=r"not \[n, 256\]"):
        _core.byte_classes(np.zeros(255, dtype=np.int32))
    with pytest.raises(TypeError, match="items of 4 bytes"):
        _core.byte_classes(np.zeros((1, 256), dtype=np.int64))


def _walk_oracle(dfa: DFA, data: bytes, start: int, state: int) -> tuple[int, tuple[int, ...]]:
    """`DFA.walk` a byte at a time, through the table's indexing."""
    ends = []
    for i in range(start, len(data)):
        state = int(dfa.trans[state, data[i]])
        if state < 0:
            return -1, tuple(ends)
        if dfa.accept[state]:
            ends.append(i + 1)
    return state, tuple(ends)


@SETTINGS
@given(regex_patterns("ab\u00e9", depth=3),
       st.binary(max_size=12).map(lambda b: bytes(x % 4 + 97 if x % 5 else 0xC3 for x in b)),
       st.integers(0, 12), st.integers(0, 50), st.booleans())
def test_walk_equals_a_step_per_byte(pattern, data, start, state, comb):
    from grammarc.automata import from_regex
    from grammarc.automata.comb import CombTable

    try:
        dfa = from_regex(pattern, max_states=2_000)
    except StateBudgetExceeded:
        return  # too large to build (the module checks every construction against the oracle: slow)
    if comb:
        dfa = DFA(CombTable.from_dense(np.asarray(dfa.trans)), dfa.accept)
    start, state = min(start, len(data)), state % dfa.n_states
    assert dfa.walk(data, start, state) == _walk_oracle(dfa, data, start, state)


def test_walk_refuses_what_it_cannot_read():
    """A walker checks its tables once, when made (the walks step unchecked), and each
    call's state and start."""
    trans = np.full((2, 256), -1, dtype=np.int32)
    trans[0, ord("a")] = 1
    accept = np.array([False, True])
    walker = _core.Walker(trans, b"", b"", b"", accept)
    assert walker(0, b"xa", 1) == (1, (2,))
    assert walker(0, b"xab", 1) == (-1, (2,))  # the ends before it died
    assert walker(1, bytearray(b"xab"), 3) == (1, ())  # any bytes-like data; nothing read
    for state, start in ((2, 0), (0, 4), (-1, 0)):
        with pytest.raises(ValueError, match="^walk: the state or the start is out of range$"):
            walker(state, b"xab", start)
    with pytest.raises(TypeError, match=r"^a walker takes \(state, data, start\)$"):
        walker(0, b"xab")
    with pytest.raises(ValueError, match=r"^walk: the table is not \[len\(accept\), 256\]$"):
        _core.Walker(trans, b"", b"", b"", np.zeros(3, dtype=bool))
    cells = np.full(512, -1, dtype=np.int32)
    for table, base, nxt in ((trans, b"", b""), (None, np.array([0, 257], dtype=np.int64), cells),
                             (None, np.array([-1, 0], dtype=np.int64), cells),
                             (None, np.array([0, 256], dtype=np.int64), np.full(512, 2, dtype=np.int32))):
        if table is not None:
            table[1, ord("b")] = 7
        with pytest.raises(ValueError, match="^walk: a target or a comb row is out of range$"):
            _core.Walker(table, base, cells, nxt, accept)
    for base, check in ((np.array([0], dtype=np.int64), cells), (np.zeros(2, dtype=np.int64), cells[:300])):
        with pytest.raises(ValueError, match="^walk: inconsistent array sizes$"):
            _core.Walker(None, base, check, cells, accept)
    # a comb base pointing outside the table is refused, never read out of bounds
    with pytest.raises(ValueError, match="^walk: a target or a comb row is out of range$"):
        _core.Walker(None, np.array([10**9, -10**9], dtype=np.int64), cells, cells, accept)


@SETTINGS
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 255), st.integers(-1, n - 1)), max_size=60))))
def test_byte_runs_cut_exactly_where_some_state_treats_neighbours_apart(table):
    """`DFA.byte_runs`: neighbouring bytes share a run exactly when every state sends them to
    the same target (or none); the same runs from a dense table and from a compact one."""
    from grammarc.automata.comb import CombTable

    n, edges = table
    trans = np.full((n, 256), -1, dtype=np.int32)
    for s, b, target in edges:
        trans[s, b] = target
    accept = np.zeros(n, dtype=bool)
    runs = np.frombuffer(DFA(trans, accept).byte_runs, dtype=np.uint8).tolist()
    assert runs[0] == 0
    for b in range(1, 256):
        apart = any(trans[s, b] != trans[s, b - 1] for s in range(n))
        assert runs[b] == runs[b - 1] + apart, b
    assert DFA(CombTable.from_dense(trans), accept).byte_runs == DFA(trans, accept).byte_runs


def _literal_oracle(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The chain of states a byte string's DFA is, through numpy (what `operations._literal`
    built before the core wrote it): state i reads data[i] to i + 1, the last accepts."""
    n = len(data)
    trans = np.full((n + 1, 256), -1, dtype=np.int32)
    trans[np.arange(n), np.frombuffer(data, dtype=np.uint8)] = np.arange(1, n + 1)
    accept = np.zeros(n + 1, dtype=bool)
    accept[n] = True
    return trans, accept


@given(st.binary(max_size=80))
@SETTINGS
def test_literal_table_and_code_equal_the_oracle(data):
    """The core's table, accept flags and code are the chain's, and the code is the one
    `suffix_code` reads off that table (so `DFA.key` is the language's); the DFA the
    regular algebra returns for the literal says so too."""
    trans, accept, code = _core.literal(data)
    want_trans, want_accept = _literal_oracle(data)
    assert np.array_equal(np.frombuffer(trans, dtype=np.int32).reshape(-1, 256), want_trans)
    assert np.array_equal(np.frombuffer(accept, dtype=bool), want_accept)
    assert code == _core.suffix_code(want_trans, want_accept.view(np.uint8), 0) == suffix_code(DFA(want_trans, want_accept), 0)
    dfa = operations.literal(data)
    assert dfa.key == DFA(want_trans, want_accept).key
    assert dfa.matches(data) and not dfa.matches(data + b"x") and (not data or not dfa.matches(data[:-1]))


def test_literal_refuses_what_is_not_bytes():
    with pytest.raises(TypeError):
        _core.literal("text")
    with pytest.raises(TypeError):
        _core.literal()


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 40), data=st.data())
def test_a_target_out_of_range_is_found_wherever_it_lies(n, data):
    """The tables' one bounds check (automata/_bounds.h, vectorized, a copy per instruction
    set) finds a target >= n at any cell, the vectors' tails included; for the walker and
    the token walks' table alike."""
    from grammarc.tokens import _scan

    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    trans = rng.integers(-1, n, size=(n, 256)).astype(np.int32)
    bad = data.draw(st.none() | st.tuples(st.integers(0, n * 256 - 1), st.integers(n, 2**31 - 1)))
    if bad is not None:
        trans.reshape(-1)[bad[0]] = bad[1]
    accept = np.zeros(n, dtype=bool)
    if bad is None:
        assert _core.Walker(trans, b"", b"", b"", accept)(0, b"", 0) == (0, ())
        assert _scan.Table(trans, b"", b"", b"", accept).n_states == n
        return
    with pytest.raises(ValueError, match="^walk: a target or a comb row is out of range$"):
        _core.Walker(trans, b"", b"", b"", accept)
    with pytest.raises(ValueError, match="^Table: a target or a comb row lies outside the table$"):
        _scan.Table(trans, b"", b"", b"", accept)
