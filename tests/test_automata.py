"""Byte-level DFAs (grammarc.automata): differential tests against Python's `re`,
viable-prefix and UTF-8 properties, dialect constructions against brute force, budgets."""

from __future__ import annotations

import itertools
import re
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grammarc import automata as A
from grammarc.automata import dfa, operations
from grammarc.errors import RegexError, StateBudgetExceeded

ALPHABET = ["a", "b", "1", " ", "\n", "é", "😀"]
SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
FEWER = settings(SETTINGS, max_examples=100)

# (our pattern, the equivalent Python pattern, to be used with re.ASCII). On ALPHABET the
# ASCII meaning of \d \w \s in Python is the ECMA one we implement.
ATOMS = [
    (x, x)
    for x in [
        "a", "b", "1", " ", "é", "😀", r"\n", ".", r"\d", r"\w", r"\s", r"\D", r"\W", r"\S",
        "[ab]", "[^a]", "[a-c]", r"[^\n]", "[é😀]", r"[\d\s]", r"[^\w]", "[^a-zé]", r"\x61",
        r"\u00e9", r"\U0001F600", r"\.", "[.]", "(?:)", "[😀-😁]", "[à-ê]",
    ]
]
ANCHORS = [("^", "^"), ("$", r"\Z"), (r"\A", r"\A"), (r"\Z", r"\Z")]
QUANTS = ["*", "+", "?", "{2}", "{0,2}", "{1,}", "{1,3}", "*?", "+?", "??", "{1,2}?"]


def _regexes(anchors: bool):
    base = st.sampled_from(ATOMS + (ANCHORS if anchors else []))

    def extend(children):
        def cat(xy):
            (a, pa), (b, pb) = xy
            return a + b, pa + pb

        def alt(xy):
            (a, pa), (b, pb) = xy
            return f"{a}|{b}", f"{pa}|{pb}"

        def quant(xq):
            (a, pa), q = xq
            return f"(?:{a}){q}", f"(?:{pa}){q}"

        def group(xk):
            (a, pa), k = xk
            # Python rejects a repeated group name; the language is the same as "(".
            return f"{k}{a})", f"({pa})"

        return st.one_of(
            st.tuples(children, children).map(cat),
            st.tuples(children, children).map(alt),
            st.tuples(children, st.sampled_from(QUANTS)).map(quant),
            st.tuples(children, st.sampled_from(["(", "(?:", "(?P<g>"])).map(group),
        )

    return st.recursive(base, extend, max_leaves=8)


REGEXES = _regexes(anchors=True)
PLAIN_REGEXES = _regexes(anchors=False)
TEXTS = st.text(alphabet=ALPHABET, max_size=6)


def _compile(pattern: str, **kw) -> A.DFA:
    try:
        return A.from_regex(pattern, **kw)
    except StateBudgetExceeded:
        assume(False)
        raise


def _strings(max_len: int, alphabet=ALPHABET):
    for n in range(max_len + 1):
        for chars in itertools.product(alphabet, repeat=n):
            yield "".join(chars)


# ------------------------------------------------------------------ invariants


def _check_invariants(d: A.DFA) -> None:
    n = d.n_states
    assert d.trans.shape == (n, 256) and d.trans.dtype == np.int32
    assert d.accept.shape == (n,) and d.accept.dtype == bool
    assert not d.trans.flags.writeable and not d.accept.flags.writeable
    assert d.trans.min() >= -1 and d.trans.max() < n
    if d.is_empty:
        assert n == 1 and not d.accept[0] and (d.trans == -1).all()
        return
    # canonical BFS numbering (bytes ascending) reaches every state in order
    seen = [0]
    index = {0: 0}
    for s in seen:
        for t in d.trans[s].tolist():
            if t >= 0 and t not in index:
                index[t] = len(seen)
                seen.append(t)
    assert seen == list(range(n))
    # trimmed: every state reaches acceptance
    for s in range(n):
        assert d.shortest_match(s) is not None
    # minimized and canonical: normalizing again changes nothing
    again = A.from_table(np.array(d.trans), np.array(d.accept))
    assert np.array_equal(again.trans, d.trans) and np.array_equal(again.accept, d.accept)
    assert again.key == d.key


# ---------------------------------------------------------------- differential


@given(REGEXES, st.lists(TEXTS, max_size=20))
@SETTINGS
def test_fullmatch_agrees_with_re(rx, texts) -> None:
    ours, py = rx
    d = _compile(ours)
    prog = re.compile(py, re.ASCII)
    for t in texts + ALPHABET + [""]:
        assert d.matches(t.encode()) == bool(prog.fullmatch(t)), (ours, t)
    example = d.shortest_match()
    if example is None:
        assert d.is_empty
    else:
        assert prog.fullmatch(example.decode("utf-8")), (ours, example)


@given(REGEXES, st.lists(TEXTS, max_size=20))
@SETTINGS
def test_search_agrees_with_re(rx, texts) -> None:
    ours, py = rx
    d = _compile(ours, search=True)
    prog = re.compile(py, re.ASCII)
    for t in texts + ALPHABET + [""]:
        assert d.matches(t.encode()) == bool(prog.search(t)), (ours, t)


@given(PLAIN_REGEXES, st.lists(TEXTS, max_size=10))
@SETTINGS
def test_case_insensitive_agrees_with_re(rx, texts) -> None:
    ours, py = rx
    d = _compile("(?i)" + ours)
    prog = re.compile(py, re.ASCII | re.IGNORECASE)
    for t in texts + ["A", "B", "aB", "Ab"]:
        assert d.matches(t.encode()) == bool(prog.fullmatch(t)), (ours, t)


def test_dotall_and_anchor_details() -> None:
    assert not A.from_regex(".").matches(b"\n")
    assert A.from_regex("(?s).").matches(b"\n")
    # ECMA $: only at the very end (Python's $ would also match before a final newline)
    assert not A.from_regex("a$", search=True).matches(b"a\n")
    assert A.from_regex("a$", search=True).matches(b"ba")
    assert A.from_regex("^a", search=True).matches(b"ab")
    assert not A.from_regex("^a", search=True).matches(b"ba")
    # anchors in the middle of a full match can never match
    assert A.from_regex("a^b").is_empty
    assert A.from_regex("(^|x)a").matches(b"a") and A.from_regex("(^|x)a").matches(b"xa")
    assert A.from_regex("a($|b)") == A.from_regex("ab?")


@given(REGEXES)
@SETTINGS
def test_invariants(rx) -> None:
    _check_invariants(_compile(rx[0]))
    _check_invariants(_compile(rx[0], search=True))


# --------------------------------------------------------------- viable prefixes


@given(REGEXES, st.lists(TEXTS, min_size=1, max_size=6))
@SETTINGS
def test_viable_prefixes(rx, texts) -> None:
    ours, py = rx
    d = _compile(ours)
    prog = re.compile(py, re.ASCII)
    extensions = list(_strings(2))
    for t in texts:
        data = t.encode()
        for cut in range(len(data) + 1):
            prefix, rest_of_char = data[:cut], b""
            while cut + len(rest_of_char) < len(data) and 0x80 <= data[cut + len(rest_of_char)] <= 0xBF:
                rest_of_char = data[cut : cut + len(rest_of_char) + 1]
            state = d.run(prefix)
            if state >= 0 and not d.is_empty:  # the empty language keeps a start state
                completion = d.shortest_match(state)
                assert completion is not None
                assert prog.fullmatch((prefix + completion).decode("utf-8")), (ours, prefix)
            else:
                head = (prefix + rest_of_char).decode("utf-8")
                for ext in extensions:
                    assert not prog.fullmatch(head + ext), (ours, prefix, ext)


def test_token_ending_inside_a_character_is_viable() -> None:
    d = A.from_regex("é|😀x")
    assert d.run("é".encode()[:1]) >= 0
    for cut in (1, 2, 3):
        assert d.run("😀".encode()[:cut]) >= 0
    assert d.run(b"\xc3\xa8") == -1  # è: a different continuation byte
    dot = A.from_regex(".")
    assert dot.run(b"\xf0\x9f") >= 0 and not dot.matches(b"\xf0\x9f")


@given(REGEXES, st.lists(st.binary(max_size=6), max_size=20))
@SETTINGS
def test_invalid_utf8_never_accepted(rx, blobs) -> None:
    d = _compile(rx[0])
    for blob in blobs:
        if d.matches(blob):
            blob.decode("utf-8")
    assert A.intersect(d, A.utf8_text()) == d


def test_surrogates_and_overlongs_rejected() -> None:
    any_text = A.from_regex("(?s).*")
    assert any_text == A.utf8_text()
    for bad in [b"\xed\xa0\x80", b"\xc0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\xff", b"\x80"]:
        assert not any_text.matches(bad)
        assert any_text.run(bad) == -1
    assert any_text.matches("\ud7ff\ue000\U0010ffff".encode())


# ---------------------------------------------------------------- canonical keys


@pytest.mark.parametrize(
    "a, b",
    [
        ("a|b", "[ab]"),
        ("(a|b)*", "[ab]*"),
        ("a+", "aa*"),
        ("x{2,3}", "xxx?"),
        (r"\d", "[0-9]"),
        ("(?:)", "a{0}"),
        ("é|è", "[èé]"),
        ("(a*)*", "a*"),
        ("a*?b", "a*b"),
        ("^ab$", "ab"),
    ],
)
def test_equal_languages_equal_keys(a: str, b: str) -> None:
    da, db = A.from_regex(a), A.from_regex(b)
    assert da.key == db.key and da == db and hash(da) == hash(db)
    assert np.array_equal(da.trans, db.trans)


def test_different_languages_different_keys() -> None:
    patterns = ["a", "b", "a*", "a+", "", "[^a]", "a|b", "(?:a|b)+"]
    assert len({A.from_regex(p).key for p in patterns}) == len(patterns)


def test_empty_language() -> None:
    empty = A.from_regex("[^\\x00-\\U0010FFFF]")
    assert empty.is_empty and empty.n_states == 1 and not empty.accepts_empty
    assert empty == A.intersect(A.literal(b"a"), A.literal(b"b"))
    _check_invariants(empty)


def test_from_regex_is_cached() -> None:
    assert A.from_regex("cache[me]") is A.from_regex("cache[me]")


def test_literal_and_basics() -> None:
    d = A.literal("hé".encode())
    assert d.matches("hé".encode()) and not d.matches(b"h") and d.n_states == 4
    assert d == A.from_regex("hé")
    assert d.step(0, ord("h")) == 1 and d.step(0, ord("x")) == -1
    assert d.live_bytes(0) == [ord("h")] and d.live_bytes(1) == [0xC3]
    _check_invariants(d)
    assert A.literal(b"").accepts_empty and A.literal(b"").n_states == 1
    anyb = A.any_bytes()
    assert not anyb.accepts_empty and anyb.matches(b"\xff\x00") and anyb.n_states == 2
    _check_invariants(anyb)
    _check_invariants(A.utf8_text())


@SETTINGS
@given(st.binary(max_size=2 * operations.SHORT_LITERAL))
def test_a_remembered_literal_is_the_one_built(data: bytes) -> None:
    # short literals are remembered process-wide; any length gives what a build gives
    d = A.literal(data)
    built = operations._literal(data)
    assert np.array_equal(d.trans, built.trans) and np.array_equal(d.accept, built.accept) and d.key == built.key
    assert d.matches(data) and d.n_states == len(data) + 1
    assert (A.literal(bytearray(data)) is d) == (len(data) <= operations.SHORT_LITERAL)


# --------------------------------------------------------------------- budgets


@pytest.mark.parametrize("pattern", ["(a|b)*a(a|b){20}", "a{100000}", "(?:a{1000}){1000}"])
def test_pathological_regex_hits_budget(pattern: str) -> None:
    with pytest.raises(StateBudgetExceeded) as info:
        A.from_regex(pattern)
    assert f"pattern '{pattern}'" in info.value.message
    assert isinstance(info.value, RegexError) and info.value.span is None


def test_budget_parameter() -> None:
    A.from_regex("(a|b)*a(a|b){5}")  # 64 states
    with pytest.raises(StateBudgetExceeded, match="max_states=50"):
        A.from_regex("(a|b)*a(a|b){5}", max_states=50)
    ab = A.from_regex("[ab]")
    with pytest.raises(StateBudgetExceeded):
        A.repeat(ab, 0, 100000)
    with pytest.raises(StateBudgetExceeded):
        A.concat([A.from_regex("(a|b)*a"), A.from_regex("(a|b){7}")], max_states=100)
    assert A.concat([A.from_regex("(a|b)*a"), A.from_regex("(a|b){7}")]).n_states == 256
    # the budget bounds what is kept: this product walks many pairs, but its language is empty
    assert A.intersect(A.from_regex("(a|b)*a(a|b){6}"), A.from_regex("(a|b)*b(a|b){6}"), max_states=100).is_empty
    with pytest.raises(StateBudgetExceeded):
        A.intersect(A.from_regex("(a|b)*a(a|b){6}"), A.from_regex("(a|b)*b(a|b){5}"), max_states=20)
    with pytest.raises(StateBudgetExceeded):
        A.complement_containing(A.from_regex("a(a|b){7}b"), max_states=100)
    with pytest.raises(StateBudgetExceeded):
        A.except_strings(["abcdefgh" * 20], max_states=100)


def test_schema_like_patterns() -> None:
    """Patterns typical of JSON Schemas compile, fullmatch and search alike, as in `re`."""
    cases = {
        r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$": ["a.b@c.de", "x@y.z", "@a.bc"],
        r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$":
            ["2020-01-02T03:04:05Z", "2020-01-02T03:04:05.5+01:00", "2020-01-02T03:04:05"],
        r"^(\([0-9]{3}\))?[0-9]{3}-[0-9]{4}$": ["(555)123-4567", "123-4567", "(55)123-4567"],
        r"^[^\s@]+@[^\s@]+$": ["a@b", "a b@c", "a@@b"],
    }
    for pattern, texts in cases.items():
        full, search = A.from_regex(pattern), A.from_regex(pattern, search=True)
        for text in texts:
            want = re.search(pattern, text, re.ASCII) is not None
            assert full.matches(text.encode()) == want == search.matches(text.encode()), (pattern, text)


# ------------------------------------------------------------ dialect constructs

SMALL = ["a", "b", "é"]


def _char_substrings(s: str):
    return {s[i:j] for i in range(len(s) + 1) for j in range(i, len(s) + 1)}


@given(PLAIN_REGEXES)
@SETTINGS
def test_early_end(rx) -> None:
    ours, py = rx
    prog = re.compile(py, re.ASCII)
    d = A.early_end(_compile(ours))
    _check_invariants(d)
    for s in _strings(4, SMALL):
        want = bool(prog.fullmatch(s)) and not any(prog.fullmatch(s[:i]) for i in range(len(s)))
        assert d.matches(s.encode()) == want, (ours, s)


@given(PLAIN_REGEXES)
@SETTINGS
def test_complement_containing(rx) -> None:
    ours, py = rx
    prog = re.compile(py, re.ASCII)
    d = A.complement_containing(_compile(ours))
    _check_invariants(d)
    for s in _strings(4, SMALL):
        want = s != "" and not any(prog.fullmatch(x) for x in _char_substrings(s))
        assert d.matches(s.encode()) == want, (ours, s)
    assert not d.matches(b"\xff")


@given(st.lists(st.text(alphabet=SMALL + ["\n"], max_size=3), max_size=4))
@SETTINGS
def test_except_strings(strings) -> None:
    d = A.except_strings(strings)
    _check_invariants(d)
    for s in _strings(4, SMALL + ["\n"]):
        want = s != "" and not any(x in s for x in strings)
        assert d.matches(s.encode()) == want, (strings, s)
    if strings and "" not in strings:
        # the same language as the generic construction
        pattern = "|".join(re.escape(x) for x in strings)
        assert d == A.complement_containing(A.from_regex(pattern))


def test_except_example_from_semantics() -> None:
    d = A.except_strings(["\n\n"])
    tail = A.literal(b"\n\n")
    both = A.concat([d, tail])
    assert both.matches(b"\n\n\n") and both.matches(b"a\n\n") and not both.matches(b"\n\n")
    assert not d.matches(b"") and not d.matches("é".encode()[:1])


@given(st.text(alphabet=SMALL + ["😀"], max_size=7))
@SETTINGS
def test_substrings(text) -> None:
    d = A.substrings(text)
    _check_invariants(d)
    subs = _char_substrings(text)
    for s in _strings(3, SMALL + ["😀"]):
        assert d.matches(s.encode()) == (s in subs), (text, s)
    data = text.encode()
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            chunk = data[i:j]
            try:
                ok = chunk.decode("utf-8") in subs
            except UnicodeDecodeError:
                ok = False
            assert d.matches(chunk) == ok
            assert d.run(chunk) >= 0 or not ok


# ------------------------------------------------------------------ regular algebra


def _enumerate_check(d: A.DFA, pred, alphabet=SMALL, n=4) -> None:
    for s in _strings(n, alphabet):
        assert d.matches(s.encode()) == pred(s), s


@given(PLAIN_REGEXES, PLAIN_REGEXES)
@FEWER
def test_algebra_matches_regex_constructions(r1, r2) -> None:
    (a, _), (b, _) = r1, r2
    da, db = _compile(a), _compile(b)
    assert A.union([da, db]) == _compile(f"(?:{a})|(?:{b})")
    assert A.concat([da, db]) == _compile(f"(?:{a})(?:{b})")
    assert A.star(da) == _compile(f"(?:{a})*")
    assert A.plus(da) == _compile(f"(?:{a})+")
    assert A.optional(da) == _compile(f"(?:{a})?")
    assert A.repeat(da, 1, 3) == _compile(f"(?:{a}){{1,3}}")
    assert A.repeat(da, 2, None) == _compile(f"(?:{a}){{2,}}")
    for d in (A.union([da, db]), A.concat([da, db]), A.star(da)):
        _check_invariants(d)


@given(PLAIN_REGEXES, PLAIN_REGEXES)
@FEWER
def test_intersect_and_without_empty(r1, r2) -> None:
    (a, pa), (b, pb) = r1, r2
    pa_, pb_ = re.compile(pa, re.ASCII), re.compile(pb, re.ASCII)
    da, db = _compile(a), _compile(b)
    both = A.intersect(da, db)
    _check_invariants(both)
    _enumerate_check(both, lambda s: bool(pa_.fullmatch(s)) and bool(pb_.fullmatch(s)))
    ne = A.without_empty(da)
    _check_invariants(ne)
    _enumerate_check(ne, lambda s: s != "" and bool(pa_.fullmatch(s)))
    if da.accepts_empty:  # remembered by language: what a build from scratch gives
        fresh = operations._without_empty(da)
        assert np.array_equal(ne.trans, fresh.trans) and np.array_equal(ne.accept, fresh.accept)
        assert A.without_empty(dfa.DFA(da.trans, da.accept)) is ne


def _without_empty_over_bytes(d) -> dfa.DFA:
    """The oracle of `operations._without_empty` (over byte classes): the same construction
    over the 256-column byte table, normalized by `from_table`."""
    trans = d.trans.astype(np.int64)
    shifted = np.where(trans >= 0, trans + 1, -1)
    return dfa.from_table(np.vstack([shifted[:1], shifted]), np.concatenate([[False], d.accept]))


@given(PLAIN_REGEXES)
@FEWER
def test_without_empty_over_classes_is_the_byte_tables(r) -> None:
    d = A.optional(_compile(r[0]))
    for table in (d, A.literals([b"", b"x" * 5000])):  # dense, and compact (CombTable)
        got, expected = operations._without_empty(table), _without_empty_over_bytes(table)
        assert np.array_equal(np.asarray(got.trans), np.asarray(expected.trans))
        assert np.array_equal(got.accept, expected.accept) and got.key == expected.key


_WINDOW_TEXTS = ["".join(t) for n in range(7) for t in itertools.product(["a", "b", "é", "😀"], repeat=n)]


@pytest.mark.parametrize("pattern", ["(a|b)*", "a*é?b+", "(é|😀)*a", "(ab|é)*", "[ab]{2,5}", "a|bb|ééé", "",
                                     "(a|é😀)+b?", "😀*"])
def test_length_window_against_brute_force(pattern) -> None:
    # every text of up to 6 characters (1 to 4 bytes each): in the window iff the pattern
    # matches it and its length in characters is within bounds
    from grammarc.automata.operations import length_window

    d, rx = A.from_regex(pattern), re.compile(pattern)
    for lo, hi in [(0, 0), (0, 3), (2, 4), (3, None), (1, None), (5, 5), (0, 1), (6, None), (4, 9)]:
        w = length_window(d, lo, hi)
        _check_invariants(w)
        for text in _WINDOW_TEXTS:
            expected = bool(rx.fullmatch(text)) and lo <= len(text) and (hi is None or len(text) <= hi)
            assert w.matches(text.encode()) == expected, (pattern, lo, hi, text)


def test_length_window_budget() -> None:
    from grammarc.automata.operations import length_window

    with pytest.raises(StateBudgetExceeded, match=r"^length window 0\.\.5000 is too large: building it took more"):
        length_window(A.from_regex("[a-z]*@[a-z]*"), 0, 5000, max_states=100)


def test_algebra_edge_cases() -> None:
    empty = A.from_regex("[^\\x00-\\U0010FFFF]")
    a = A.literal(b"a")
    assert A.union([]) == empty
    assert A.concat([]) == A.literal(b"")
    assert A.concat([a, empty]) == empty
    assert A.star(empty) == A.literal(b"")
    assert A.repeat(a, 0, 0) == A.literal(b"")
    assert A.union([a, empty]) == a
    assert A.without_empty(A.literal(b"")) == empty
    assert A.concat([A.any_bytes(), a]).matches(b"\xffa")
    with pytest.raises(ValueError):
        A.repeat(a, 3, 2)


def test_budget_applies_to_the_minimized_automaton() -> None:
    """The budget bounds the minimal DFA kept, not the subset construction before it (the
    recognizer oracle was flaky: a pattern whose minimal DFA has 423 states was refused)."""
    pattern = "(a|b)*a(a|b){4}(a|b)*"  # subset construction: dozens of states; minimal: 6
    assert A.from_regex(pattern, max_states=20).n_states == 6
    assert A.concat([A.from_regex("(a|b)*a(a|b){4}"), A.from_regex("(a|b)*")], max_states=20).n_states == 6
    with pytest.raises(StateBudgetExceeded) as info:
        A.from_regex("(a|b)*a(a|b){5}", max_states=50)
    assert info.value.message == (
        "pattern '(a|b)*a(a|b){5}' needs 64 automaton states once minimized, more than the budget of 50 "
        "automaton states (max_states=50); simplify it or raise the budget")
    with pytest.raises(StateBudgetExceeded) as info:
        A.from_regex("(a|b)*a(a|b){7}", max_states=50)
    assert info.value.message == (
        "pattern '(a|b)*a(a|b){7}' is too large: building it took more than 200 automaton states before "
        "minimization (4 times max_states=50); simplify it or raise the budget")
    with pytest.raises(StateBudgetExceeded, match="^except! needs 168 automaton states once minimized"):
        A.except_strings(["abcdefgh" * 20], max_states=100)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.binary(max_size=6), max_size=30))
def test_literals_is_the_minimal_union(words: list[bytes]) -> None:
    """`literals` (a trie minimized as it is built) is exactly the union of the literals."""
    expected = A.union([A.literal(w) for w in words]) if words else A.union([])
    got = A.literals(words)
    assert got == expected and got.n_states == expected.n_states
    assert np.array_equal(np.asarray(got.trans), np.asarray(expected.trans))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 12), st.data())
def test_a_compact_tables_row_is_the_dense_row(n, data) -> None:
    """`CombTable[q]` reads a state's 256 cells side by side (the padding keeps a row with an
    edge on byte 0 or 255, or none, inside the arrays): the dense row, as int32."""
    from grammarc.automata.comb import CombTable

    cells = data.draw(st.lists(st.sampled_from([-1, -1, *range(n)]), min_size=n * 256, max_size=n * 256))
    dense = np.array(cells, dtype=np.int32).reshape(n, 256)
    if data.draw(st.booleans()):
        dense[data.draw(st.integers(0, n - 1))] = -1  # a state with no edge
    table = CombTable.from_dense(dense)
    for q in range(n):
        row = table[q]
        assert row.dtype == np.int32 and row.tolist() == dense[q].tolist()
        assert table[np.int64(q)].tolist() == dense[q].tolist()


def test_a_compact_row_outside_its_table_is_refused() -> None:
    """A damaged table (a base past the padding) is an error, never a short row."""
    from grammarc.automata.comb import CombTable

    table = CombTable(np.array([0, 300], dtype=np.int64), np.full(512, -1, dtype=np.int32),
                      np.full(512, -1, dtype=np.int32), 2)
    assert table[0].tolist() == [-1] * 256
    with pytest.raises(IndexError) as err:
        table[1]
    assert str(err.value) == "state 1's row lies outside the table"


def test_big_automata_are_stored_compactly() -> None:
    """Past COMPACT_FROM states a DFA keeps its edges, not 256 cells per state; it answers the
    same lookups as the dense table and has the same key."""
    from grammarc.automata.comb import CombTable
    from grammarc.automata.dfa import COMPACT_FROM

    data = bytes((i * 37) % 251 for i in range(COMPACT_FROM + 500))
    compact = A.literal(data)
    assert isinstance(compact.trans, CombTable) and compact.trans.nbytes < 64 * len(data)
    dense = A.from_table(np.asarray(compact.trans), compact.accept)
    assert isinstance(dense.trans, np.ndarray) and dense.key == compact.key and dense == compact
    rng = np.random.default_rng(0)
    states = rng.integers(0, compact.n_states, 2000)
    bytes_ = rng.integers(0, 256, 2000)
    states[:500] = np.arange(500)
    bytes_[:500] = np.frombuffer(data[:500], dtype=np.uint8)
    assert np.array_equal(compact.trans[states, bytes_], dense.trans[states, bytes_])
    for q in (0, 1, len(data) - 1, len(data)):
        assert np.array_equal(compact.trans[q], dense.trans[q])
        assert all(compact.trans[q, b] == dense.trans[q, b] for b in range(256))
    assert compact._runs == dense._runs
    assert compact.matches(data) and not compact.matches(data[:-1]) and not compact.matches(data + b"x")
    trie = A.literals([b"k%05d" % i for i in range(3000)])
    assert isinstance(trie.trans, CombTable) == (trie.n_states >= COMPACT_FROM)
    assert trie.matches(b"k02999") and not trie.matches(b"k03000") and not trie.matches(b"k0299")


_PIECES = ["a", "ab", "b*", "[ab]c?", "é", "(ab)+"]


@st.composite
def _trees(draw, depth: int = 2, pieces: tuple[str, ...] = tuple(_PIECES)):
    """A tree for `combine` and the same language written with the one-operation functions."""
    if depth == 0 or draw(st.booleans()):
        d = A.from_regex(draw(st.sampled_from(pieces)))
        return d, d
    kind = draw(st.sampled_from(["seq", "alt", "repeat"]))
    if kind == "repeat":
        (tree, lang), lo = draw(_trees(depth - 1, pieces)), draw(st.integers(0, 2))
        hi = draw(st.one_of(st.none(), st.integers(lo, 3)))
        return ("repeat", tree, lo, hi), A.repeat(lang, lo, hi)
    parts = [draw(_trees(depth - 1, pieces)) for _ in range(draw(st.integers(1, 3)))]
    langs = [lang for _, lang in parts]
    return (kind, [tree for tree, _ in parts]), A.concat(langs) if kind == "seq" else A.union(langs)


@settings(max_examples=150, deadline=None)
@given(_trees())
def test_combine_is_the_nested_operations(pair):
    tree, expected = pair
    assert A.combine(tree) == expected


@settings(max_examples=150, deadline=None)
@given(_trees(depth=4, pieces=("a", "b*", "ab")))
def test_combine_with_shared_tails_is_the_nested_operations(pair):
    """Few pieces and deep trees: sequences that end alike, in the same alternation or in
    nested ones, are frequent, so `_Embedding` shares their tails (and must not when they
    are followed by different things, or repeated)."""
    tree, expected = pair
    assert A.combine(tree) == expected


def test_a_key_trie_shares_its_tail():
    """'"' ('"' | [^p] t | p ('"' | [^q] t | q '"')) ':' with t = [a-z]* '"': the trie's exit
    tail t is embedded once, not once per level, and the language is the regex's."""
    letters = A.from_regex("[a-z]")
    quote, colon, t = A.literal(b'"'), A.literal(b":"), ("seq", [("repeat", letters, 0, None), A.literal(b'"')])
    level2 = ("alt", [quote, ("seq", [A.from_regex("[^q]"), t]), ("seq", [A.literal(b"q"), quote])])
    trie = ("seq", [quote, ("alt", [quote, ("seq", [A.from_regex("[^p]"), t]), ("seq", [A.literal(b"p"), level2])]), colon])
    assert A.combine(trie) == A.from_regex('"(?:"|[^p][a-z]*"|p(?:"|[^q][a-z]*"|q")):')

    class Counting(operations._NFA):
        __slots__ = ("embeds",)

        def embed(self, d, s):
            self.embeds.append(d.key)
            return super().embed(d, s)

    keys: dict = {}
    operations._tree_key(trie, keys)
    nfa = Counting(10_000, "test")
    nfa.embeds = []
    operations._Embedding(nfa, keys).tree(trie, nfa.new(), operations._FINAL)
    assert nfa.embeds.count(letters.key) == 1


def test_combine_remembers_a_tree_while_its_result_is_held(monkeypatch):
    import gc

    from grammarc.automata import operations

    tree = ("seq", [A.literal(b"x"), ("repeat", A.from_regex("[0-9]"), 0, 7), A.literal(b"\xc3\xa9")])
    first = A.combine(tree)
    again = ("seq", [A.literal(b"x"), ("repeat", A.from_regex("[0-9]"), 0, 7), A.literal(b"\xc3\xa9")])
    assert A.combine(again) is first  # equal trees of other DFA objects: the same result
    assert A.combine(again, max_states=500) is not first  # another budget is another entry
    key = (operations._tree_key(tree, {}), A.DEFAULT_MAX_STATES)
    n_states = first.n_states
    del first
    gc.collect()
    assert operations._recent[key].n_states == n_states  # held still: one of the recent results
    assert A.combine(tree) is operations._recent[key]
    # newer results push it out past RECENT_STATES states; then nothing holds it
    monkeypatch.setattr(operations, "RECENT_STATES", 40)
    for n in range(1, 9):
        A.combine(("repeat", A.literal(b"a"), n, n))  # n + 1 states each
    assert key not in operations._recent
    assert operations._recent_size[0] == sum(d.n_states for d in operations._recent.values()) == 39
    assert [k[0][2] for k in operations._recent] == [3, 4, 5, 6, 7, 8]  # least recent first, dropped first
    gc.collect()
    assert key not in operations._combined  # nothing held it: the entry went with it


def test_combine_holds_recent_results_within_its_bound(monkeypatch):
    """`_recent` holds the most recently asked trees, hits moved last, within RECENT_STATES
    states, and none larger than a quarter of it."""
    from grammarc.automata import operations

    monkeypatch.setattr(operations, "RECENT_STATES", 60)
    small = [("repeat", A.literal(b"cd"), n, n) for n in (1, 2, 3)]  # 3, 5, 7 states
    for tree in small:
        A.combine(tree)
    A.combine(small[0])  # a hit: now the most recent
    assert [k[0] for k in list(operations._recent)[-3:]] == [operations._tree_key(t, {}) for t in small[1:] + small[:1]]
    big = A.combine(("repeat", A.literal(b"ef"), 10, 10))  # 21 states: over a quarter of 60
    assert big.n_states == 21 and all(d is not big for d in operations._recent.values())
    assert operations._recent_size[0] == sum(d.n_states for d in operations._recent.values()) <= 60


@given(st.lists(st.integers(-5, 40), max_size=60))
def test_distinct_is_numpys_unique(values):
    """`operations.distinct` (which the automata and the index use in place of `np.unique`,
    whose first call imports `numpy.ma`): the distinct values, ascending, in the array's dtype."""
    array = np.array(values, dtype=np.int64)
    got = operations.distinct(array)
    assert got.dtype == array.dtype and got.tolist() == np.unique(array).tolist()
