"""``json_string_except!`` and `automata.json_strings`: JSON string literals, in every
spelling, whose decoded text a character automaton accepts, built directly in C.

Two oracles: the regex route (the JSON Schema front end's right-linear rules over
`json_formats.char_label` regexes, lowered through regex parsing, subset construction and
minimization: the same minimal automaton, compared by key), and Python's own JSON decoder
on texts spelled every way a JSON writer may spell them.
"""

from __future__ import annotations

import itertools
import json
import random

import pytest
from hypothesis import given, settings, strategies as st

from grammarc import Grammar, GrammarError, StateBudgetExceeded
from grammarc.automata import DFA, json_string, json_string_except, json_strings
from grammarc.automata.codepoints import CharDFA
from grammarc.frontends.jsonschema import chardfa
from grammarc.frontends.jsonschema.strings import Strings
from grammarc.ir import Grammar as IRGrammar, JsonStringExcept
from grammarc.tokens.vocabulary import Vocabulary
from automata_reference import except_runs as reference_except_runs
from test_engine_oracle import _walk_against_brute_force

# each class of character the construction treats apart: ASCII raw and short-escaped, the
# controls, the edges of the 2-, 3- and 4-byte UTF-8 ranges and of the surrogate gap
_EDGES = "ab/\"\\\n\x00\x1f\x7f\u0080\u07ff\u0800é€\ud7ff\ue000\uffff\U00010000😀\U0010ffff"
_SURROGATES = frozenset("\ud800\udfff")
# word sets over the edges, or over two letters (where words share prefixes and endings)
_WORDS = st.one_of(st.lists(st.text(alphabet=_EDGES + "\ud800\udfff", max_size=4), max_size=6),
                   st.lists(st.text(alphabet="ab", max_size=4), max_size=8))


class _Rules:
    """What `Strings._char_dfa` needs of the schema builder: rules, names, a memo."""

    def __init__(self) -> None:
        self.rules: dict = {}
        self.memo: dict = {}
        self.internal: set = set()
        self.count = itertools.count()

    def fresh(self, hint: str) -> str:
        return f"{hint}_{next(self.count)}"


def _regex_route(chars) -> str:
    """The key of the automaton of `chars`' JSON spellings, lowered from right-linear rules."""
    builder = _Rules()
    expr = Strings._char_dfa(builder, chars, True, "k")
    grammar = IRGrammar(rules=(("start", expr),) + tuple(builder.rules.items()), start="start")
    compiled = Grammar.of(grammar).compile(merge_max_states=100_000)
    assert len(compiled.terminals) == 1
    return compiled.terminals[0].dfa.key


@settings(max_examples=150, deadline=None)
@given(_WORDS)
def test_keys_other_than_names_equal_the_regex_route(words):
    """The oracle's characters come from the regular algebra (the complement of the words'
    union within UTF-8 text, read back over code points), not from the words' trie."""
    size = sum(len(w.encode("utf-8", "surrogatepass")) for w in words) + 2
    chars = chardfa.chars(chardfa.complement(chardfa.literals(words), size), size)
    assert json_string_except(tuple(words)).key == _regex_route(chars)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["^a+$", "^a[^a]*$", "^(?:é|😀){1,3}$", "^[\\u0000-\\u001f\"\\\\/]x?$", "^.{2}",
                        "^(?:\\uffff|\\ue000\\u0800)$"]),
       st.integers(0, 3), st.sampled_from([None, 0, 3]))
def test_any_character_automaton_equals_the_regex_route(pattern, low, extra):
    """`json_string` of other character automata (anchored: their only cycles are loops, so
    the regex route lowers to one terminal)."""
    high = None if extra is None else low + extra
    dfa = chardfa.strings([chardfa.jf.search_tree(pattern)], low, high, 1500)
    if dfa is None:
        return
    chars = chardfa.chars(dfa, 1500)
    assert json_string(chars).key == _regex_route(chars)


def _spell(text: str, rng: random.Random) -> str:
    """`text` as a JSON string literal, each character spelled one of the ways JSON allows."""
    short = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = []
    for ch in text:
        cp = ord(ch)
        ways = [] if cp < 0x20 or ch in '"\\' else [ch]
        if ch in short:
            ways.append(short[ch])
        if cp < 0x10000:
            ways += [f"\\u{cp:04x}", f"\\u{cp:04X}"]
        else:
            v = cp - 0x10000
            hi, lo = 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF)
            ways += [f"\\u{hi:04x}\\u{lo:04X}", f"\\u{hi:04X}\\u{lo:04x}"]
        out.append(rng.choice(ways))
    return '"' + "".join(out) + '"'


@settings(max_examples=300, deadline=None)
@given(_WORDS, st.text(alphabet=_EDGES, max_size=4), st.randoms(use_true_random=False))
def test_json_decoding_is_the_oracle(words, text, rng):
    dfa = json_string_except(tuple(words))
    for candidate in [text] + [w for w in words if w and not _SURROGATES.intersection(w)]:
        spelled = _spell(candidate, rng)
        assert json.loads(spelled) == candidate
        excluded = candidate in words
        assert dfa.matches(spelled.encode("utf-8", "surrogatepass")) == (not excluded), spelled


@pytest.mark.parametrize("text", [
    '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"\\ud800x"', '"\\x41"', '"\\u00g0"', '"\\u00e"',
    '"a', 'a"', '""x', '"\x00"', '"\x1f"', '"\\"', "\"\xc3\"",
])
def test_what_is_no_json_string_is_refused(text):
    dfa = json_string_except(("a",))
    data = text.encode("utf-8", "surrogatepass") if "\xc3" not in text else b'"\xc3"'
    assert not dfa.matches(data)


def test_the_excluded_names_and_nothing_else():
    dfa = json_string_except(("name", "", "é"))
    yes = ['"nam"', '"names"', '"Name"', '"\\u00e9\\u00e9"', '"x"', '"\\ud83d\\ude00"', '"\\/"']
    no = ['"name"', '"\\u006eame"', '"n\\u0061me"', '""', '"é"', '"\\u00e9"', '"\\u00E9"']
    assert [dfa.matches(t.encode()) for t in yes] == [True] * len(yes)
    assert [dfa.matches(t.encode()) for t in no] == [False] * len(no)


def test_a_word_with_a_lone_surrogate_excludes_nothing():
    assert json_string_except(("a\ud800",)).key == json_string_except(()).key


def test_too_many_states_is_a_budget_error(monkeypatch):
    monkeypatch.setattr(json_strings, "MAX_STATES", 100)
    json_strings._except.cache_clear()
    try:
        with pytest.raises(StateBudgetExceeded, match="needs more than 100 states before minimization"):
            json_string_except(("abcdefghijklmnopqrstuvwxyz",))
        grammar = Grammar.from_ebnf('start ::= "{" json_string_except!("abcdefghijklmnopqrstuvwxyz") "}";',
                                    name="g.ebnf")
        with pytest.raises(StateBudgetExceeded) as caught:
            grammar.compile()
        assert str(caught.value).startswith("g.ebnf:1:15: the JSON string automaton needs more than 100 states")
    finally:
        json_strings._except.cache_clear()


# -- the dialect -------------------------------------------------------------------------------

def test_dialect_parses_prints_and_round_trips():
    text = 'start ::= "{" json_string_except!("a", "b\\n", "é") ":" json_string_except!() "}";'
    g = Grammar.from_ebnf(text)
    assert dict(g.rules)["start"].items[1] == JsonStringExcept(("a", "b\n", "é"))
    assert dict(g.rules)["start"].items[3] == JsonStringExcept(())
    assert g.to_ebnf() == text + "\n"
    assert Grammar.from_ebnf(g.to_ebnf()) == g
    assert [g.accepts(t) for t in ['{"x":"y"}', '{"a":"y"}', '{"\\u0061b":""}', '{"b\\n":"z"}', '{"B\\n":"z"}']] == \
        [True, False, True, False, True]


def test_a_long_list_of_words_prints_in_filled_lines():
    words = tuple(f"property{i:02d}" for i in range(12))
    g = Grammar.of(IRGrammar(rules=(("object_other_key", JsonStringExcept(words)),), start="object_other_key"))
    assert g.to_ebnf() == (
        "object_other_key ::= json_string_except!(\n"
        '    "property00", "property01", "property02", "property03", "property04",\n'
        '    "property05", "property06", "property07", "property08", "property09",\n'
        '    "property10", "property11");\n')
    assert Grammar.from_ebnf(g.to_ebnf(), start="object_other_key") == g
    one = Grammar.of(IRGrammar(rules=(("k", JsonStringExcept(("x" * 90,))),), start="k"))
    assert one.to_ebnf() == 'k ::= json_string_except!(\n    "' + "x" * 90 + '");\n'


@pytest.mark.parametrize("text, message", [
    ('start ::= json_string_except!("a",);', "g.ebnf:1:35: expected a string literal, found ')'"),
    ("start ::= json_string_except!(a);", "g.ebnf:1:31: expected ')' or a string literal, found rule name 'a'"),
    ("start ::= json_string_except!;", "g.ebnf:1:30: expected '(', found ';'"),
    ('start ::= json_string_except!("\\ud800");',
     "g.ebnf:1:32: lone surrogate in escape '\\ud800': a high surrogate must be followed by a low surrogate escape"),
])
def test_dialect_errors(text, message):
    with pytest.raises(GrammarError) as caught:
        Grammar.from_ebnf(text, name="g.ebnf")
    assert str(caught.value).splitlines()[0] == message


def test_words_are_checked_like_literals():
    grammar = IRGrammar(rules=(("start", JsonStringExcept(("a", "b\ud800"))),), start="start")
    with pytest.raises(GrammarError, match="^rule 'start': json_string_except! contains a lone surrogate U\\+D800, "):
        Grammar.of(grammar).compile()
    with pytest.raises(GrammarError, match="^rule 'start': json_string_except! text must be a str, not int"):
        Grammar.of(IRGrammar(rules=(("start", JsonStringExcept((1,))),), start="start")).compile()


def test_schema_keys_are_one_terminal_per_object():
    """``additionalProperties`` next to ``properties``: the other keys print as one
    ``json_string_except!`` of the names, in a rule named for the object."""
    schema = {"title": "Pod", "type": "object", "properties": {"kind": {"type": "string"}, "spec": {"type": "integer"}},
              "additionalProperties": {"type": "null"}}
    g = Grammar.from_json_schema(schema, whitespace="compact")
    assert 'json_string_except!("kind", "spec")' in g.to_ebnf()
    texts = ['{"kind":"x","spec":1,"x":null}', '{"kin":null}', '{"kind":null}', '{"\\u006bind":null}']
    assert [g.accepts(t) for t in texts] == [True, True, False, False]


@pytest.mark.parametrize("limit", [4096, 0])
def test_schema_keys_past_the_limit_are_rules_of_the_same_language(limit, monkeypatch):
    """Past `EXCEPT_WORDS_CHARS` characters of names the other keys are the trie's rules
    (which the lowering may cut into several terminals): the same keys either way."""
    from grammarc.frontends.jsonschema import strings

    monkeypatch.setattr(strings, "EXCEPT_WORDS_CHARS", limit)
    names = ["a", "ab", "é", "\U0001F600x", 'a"/', ""]
    schema = {"type": "object", "properties": {n: {"type": "integer"} for n in names},
              "additionalProperties": {"type": "null"}}
    g = Grammar.from_json_schema(schema, whitespace="compact")
    assert ("json_string_except!(" in g.to_ebnf()) == (limit > 0)
    rng = random.Random(limit)
    for text in names + ["b", "abc", "é\n", "\U0001F600", "\U0001F600xy", 'a"', "A"]:
        for _ in range(4):
            spelled = _spell(text, rng)
            value = "1" if text in names else "null"
            # a named property is written as json.dumps writes it (a documented narrowing)
            plain = spelled in (json.dumps(text), json.dumps(text, ensure_ascii=False))
            assert g.accepts("{" + spelled + ":" + value + "}") == (text not in names or plain), spelled
            assert not g.accepts("{" + spelled + ":" + ("null" if text in names else "1") + "}"), spelled


# -- the engine over a json_string_except! terminal ------------------------------------------

@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_engine_masks_over_json_keys_equal_brute_force(data):
    """Masks along random walks, against the byte-level recognizer, with tokens cut from
    JSON texts whose keys are spelled every way (the terminal's automaton has long escape
    chains and UTF-8 readers that tokens cross in the middle)."""
    words = data.draw(st.lists(st.text(alphabet="aé", min_size=1, max_size=2), min_size=1, max_size=3), label="words")
    grammar = Grammar.from_ebnf("start ::= '{' json_string_except!(" + ", ".join(json.dumps(w) for w in words)
                                + ") ':' ('1' | '22') '}' ;")
    rng = data.draw(st.randoms(use_true_random=False), label="rng")
    texts = [("{" + _spell(data.draw(st.text(alphabet="aéb", max_size=3)), rng) + ":22}").encode() for _ in range(4)]
    pieces = set()
    for text in texts:
        i = 0
        while i < len(text):
            n = rng.randint(1, 4)
            pieces.add(text[i:i + n])
            i += n
    tokens = sorted(pieces) + [b""]  # the EOS token carries no text
    _walk_against_brute_force(Grammar.of(grammar), Vocabulary.from_bytes(tokens, eos_token_ids=[len(tokens) - 1]), data)


# -- strings of bounded length, built from their character automaton ---------------------

from grammarc.automata import nfa as _nfa  # noqa: E402
from grammarc.automata.regex import parse as _parse  # noqa: E402
from grammarc.frontends import json_formats as _jf  # noqa: E402


@pytest.mark.parametrize("low, high", [(0, 0), (0, 1), (1, 1), (0, 3), (2, 5), (3, 3), (0, None), (1, None),
                                       (4, None), (0, 40), (17, 60)])
def test_a_bounded_string_built_directly_is_the_regex_route_automaton(low, high):
    """`from_regex` builds ``"(?:char){m,n}"`` from its character automaton: the very DFA
    (tables, accepting states) that the subset construction over the regex makes."""
    pattern = _jf.string_regex(low, high)
    ast = _parse(pattern, False)
    if high != 0:  # '""' is not a repetition
        assert _nfa._bounded_json_string(ast) is not None
    direct, regex_route = _nfa.from_regex(pattern), _nfa.from_ast(ast)
    assert direct.key == regex_route.key
    assert (direct.trans == regex_route.trans).all() and (direct.accept == regex_route.accept).all()


@pytest.mark.parametrize(
    "pattern",
    [
        '"(?:a){0,5}"',  # not a JSON character
        "'(?:" + _jf.UNIT + "){0,3}'",  # not quotes
        '"(?:' + _jf.UNIT + '){0,3}"x',  # something after
        '"(?:' + _jf.UNIT.replace("|\\\\/", "", 1) + '){0,3}"',  # one escape short (\/)
        '"(?:' + _jf.UNIT + '|a){0,3}"',  # the same language spelled otherwise: taken, and exact
    ],
    ids=["letters", "single-quotes", "suffix", "missing-escape", "respelled"],
)
def test_only_json_characters_between_quotes_take_the_direct_route(pattern):
    ast = _parse(pattern, False)
    expected = _nfa.from_ast(ast)
    taken = _nfa._bounded_json_string(ast) is not None
    assert taken == pattern.endswith('|a){0,3}"'), pattern
    assert _nfa.from_regex(pattern).key == expected.key


def test_a_bounded_string_over_the_budget_says_so_as_before():
    # within the subset construction's estimate (5 x 4,100 states), over the budget once minimized
    with pytest.raises(StateBudgetExceeded, match=r"needs 5103 automaton states once minimized, more than the "
                                                   r"budget of 4100 automaton states \(max_states=4100\)"):
        _nfa.from_regex(_jf.string_regex(0, 255), max_states=4100)


# -- the minimal route: tables the core numbers without minimizing -------------------------


def _same_table(a, b) -> bool:
    """Equal tables, and equal keys: the numbered route's key comes from the code the core
    writes while numbering, the other's from `_finalize`'s; both must be what a fresh DFA of
    the table (nothing known) reads back from it."""
    fresh = DFA(a.trans, a.accept)
    return (a.trans.shape == b.trans.shape and (a.trans == b.trans).all() and (a.accept == b.accept).all()
            and a.key == b.key == fresh.key)


@settings(max_examples=300, deadline=None)
@given(_WORDS)
def test_the_keys_table_needs_no_minimization(words):
    """The keys' character automaton is minimal, so the core's table is (its escape and reader
    states are shared by what they lead to) and is only numbered: the very table that
    minimizing the table as built gives."""
    arrays = json_strings._except_runs(tuple(sorted(set(words))))
    numbered = json_strings._from_arrays(*arrays, minimal=True)
    assert _same_table(numbered, json_strings._from_arrays(*arrays, minimal=False))


@settings(max_examples=300, deadline=None)
@given(st.one_of(_WORDS, st.lists(st.text(max_size=6), max_size=12)))
def test_the_core_builds_the_keys_trie_as_the_python_one_did(words):
    """`_core.except_runs` (C) gives the very runs and accept flags of the Python trie it
    replaced (tests/automata_reference.py): the same states, numbered alike."""
    words = tuple(sorted(set(words)))
    ptr, lo, hi, dst, accept = json_strings._except_runs(words)
    runs = [list(zip(lo[a:b].tolist(), hi[a:b].tolist(), dst[a:b].tolist())) for a, b in zip(ptr[:-1], ptr[1:])]
    assert (runs, accept.astype(bool).tolist()) == reference_except_runs(words)


@pytest.mark.parametrize("words", [("b", "a"), ("a", "a"), ("ab", "a"), ("a", 1)])
def test_the_core_refuses_words_out_of_order(words):
    with pytest.raises((ValueError, TypeError), match="except_runs: words must be"):
        json_strings._except_runs(words)


@pytest.mark.parametrize("low, high", [(0, 0), (0, 1), (1, 1), (0, 3), (2, 5), (0, None), (3, None), (0, 40)])
def test_a_bounded_string_needs_no_minimization(low, high):
    top = low if high is None else high
    runs = [[(0, 0x10FFFF, k + 1)] for k in range(top)] + [[(0, 0x10FFFF, top)] if high is None else []]
    accept = [k >= low for k in range(top + 1)]
    assert _same_table(json_strings.bounded_string(low, high), json_strings._from_runs(runs, accept, minimal=False))


@pytest.mark.parametrize("limit, refused", [(60, True), (61, False)])
def test_the_budget_counts_the_states_as_before_escape_states_were_shared(monkeypatch, limit, refused):
    """The keys "name" and "type" took 61 states before minimization when every character
    state had an escape state of its own; sharing them leaves 60, but the limit falls where
    it did, so a grammar refused before is refused still."""
    monkeypatch.setattr(json_strings, "MAX_STATES", limit)
    json_strings._except.cache_clear()
    try:
        if refused:
            with pytest.raises(StateBudgetExceeded, match=f"needs more than {limit} states before minimization"):
                json_string_except(("name", "type"))
        else:
            assert json_string_except(("name", "type")).matches(b'"nam"')
    finally:
        json_strings._except.cache_clear()


# code points where a reader's intervals begin or end: the UTF-8 and \uXXXX digit blocks,
# the surrogate gap, the astral blocks of one high surrogate (0x400 wide)
_CUTS = sorted({0, 0x1F, 0x20, 0x21, 0x2F, 0x30, 0x3F, 0x40, 0x5B, 0x5C, 0x5D, 0x7F, 0x80, 0xBF, 0xC0, 0xFF, 0x100,
                0x7FF, 0x800, 0xFFF, 0x1000, 0xD7FF, 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xE000, 0xFFFF, 0x10000,
                0x103FF, 0x10400, 0x107FF, 0x1F600, 0x3FFFF, 0x40000, 0x10FFFF})


@st.composite
def _char_dfas(draw):
    """A character automaton whose states split the code points at random cuts, so that runs
    begin and end inside, at and across the blocks a reader's digits cover. What the regex
    route lowers to one terminal: state q goes on to q + 1 on its first run (the last state
    loops there), its other runs go nowhere, loop or skip ahead (no cycle but loops), and
    the last state accepts."""
    n = draw(st.integers(1, 3))
    edges = []
    for q in range(n):
        cuts = sorted(draw(st.sets(st.sampled_from(_CUTS[1:]), min_size=1, max_size=6)) | {0x10FFFF + 1})
        bounds = zip([0] + cuts[:-1], cuts)
        ranges = [(lo, hi - 1) for lo, hi in bounds if not 0xD800 <= lo < hi <= 0xE000]  # none of surrogates alone
        by_target: dict[int, list[tuple[int, int]]] = {}
        for i, r in enumerate(ranges):
            t = min(q + 1, n - 1) if i == 0 else draw(st.integers(q - 1, n - 1))  # q - 1: no character there
            if t >= q:
                by_target.setdefault(t, []).append(r)
        edges.append(tuple((tuple(rs), t) for t, rs in sorted(by_target.items())))
    accept = draw(st.lists(st.booleans(), min_size=n - 1, max_size=n - 1)) + [True]
    return CharDFA(tuple(edges), tuple(accept))


@settings(max_examples=80, deadline=None)
@given(_char_dfas())
def test_random_character_automata_equal_the_regex_route(chars):
    """The readers' digits, walked run by run in the core, give the regex route's language
    wherever the character runs cut the digit blocks."""
    assert json_string(chars).key == _regex_route(chars)


# -- the core's own storage: runs per state, grown past its first estimates ------------------

_LETTERS = "abcdefghijklmnopqrstuvwxyz_AZ09é€😀\"\\/\n"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(alphabet=_LETTERS, min_size=1, max_size=14), min_size=20, max_size=80))
def test_many_keys_number_as_minimization_does(words):
    """Key sets large enough that the core grows every store past what it reserved (states,
    runs, signatures, the readers remembered whole): the numbered table is still the one
    minimizing the table as built gives, and its code is the one read back from the table."""
    arrays = json_strings._except_runs(tuple(sorted(set(words))))
    numbered = json_strings._from_arrays(*arrays, minimal=True)
    assert _same_table(numbered, json_strings._from_arrays(*arrays, minimal=False))
    assert numbered.key == json_string_except(tuple(words)).key


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 30), st.one_of(st.none(), st.integers(0, 70)))
def test_bounded_strings_need_no_minimization(low, extra):
    """Every bound: each character state sends all of its characters to one place, so all
    of its readers are readers of whole intervals (whole_reader), hundreds of them."""
    high = None if extra is None else low + extra
    top = low if high is None else high
    runs = [[(0, 0x10FFFF, k + 1)] for k in range(top)] + [[(0, 0x10FFFF, top)] if high is None else []]
    accept = [k >= low for k in range(top + 1)]
    assert _same_table(json_strings.bounded_string(low, high), json_strings._from_runs(runs, accept, minimal=False))


def test_the_core_takes_its_runs_as_memoryviews_or_arrays():
    """`_except` hands the core's bytes back to it through memoryviews, the other routes
    NumPy arrays: the same table either way."""
    words = ("name", "type", "é")
    assert _same_table(json_strings._except.__wrapped__(words),
                       json_strings._from_arrays(*json_strings._except_runs(words), minimal=True))
