"""Regex ASTs and DFAs -> Thompson NFAs over byte ranges -> subset construction.

Text is UTF-8: regex character classes become chains of byte transitions, so a model
token that ends inside a multi-byte character leaves the automaton in a live state.
Constructions take a ``max_states`` budget and raise `StateBudgetExceeded` while
building, never after, so a pathological regex is an error and not a hang.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from grammarc.errors import StateBudgetExceeded, clip
from grammarc.automata import _core, prebuilt
from grammarc.automata.dfa import (
    DEFAULT_MAX_STATES, DFA, _budget_error, _check_budget, _finalize, _unminimized_cap, _within_budget,
)
from grammarc.automata.json_strings import bounded_string
from grammarc.automata.regex import ANY, Alt, Anchor, Chars, Node, Repeat, Seq, parse
from grammarc.automata.utf8 import ranges_sequences

__all__ = ["from_regex", "from_ast"]


# ---------------------------------------------------------------------------- NFA


_NO_EDGES: list = []  # the edge list of an embedded table's states (see _NFA)


class _NFA:
    """Thompson-style NFA over byte ranges, with assertion edges for ^ and $.

    An embedded DFA's states (`embed`) are given by the DFA's run arrays (`DFA._run_arrays`,
    made once per DFA, read in C without a Python object per run): for a state q in one of
    the ``embedded`` ranges (first, past, ptr, runs), its edges are runs[ptr[q - first]:
    ptr[q - first + 1]], where a target t means state ``first + t``, and its edge list is
    the shared empty `_NO_EDGES` (never appended to). A DFA with a compact table shares its
    own edge lists instead (`DFA._runs`, targets relative too), the range (first, past).
    """

    __slots__ = ("edges", "eps", "bol", "eol", "embedded", "limit", "what")

    def __init__(self, limit: int, what: str):
        self.edges: list[list[tuple[int, int, int]]] = []
        self.eps: list[list[int]] = []
        self.bol: dict[int, list[int]] = {}
        self.eol: dict[int, list[int]] = {}
        self.embedded: list[tuple] = []
        self.limit = limit
        self.what = what

    def new(self) -> int:
        n = len(self.edges)
        if n >= self.limit:
            raise StateBudgetExceeded(
                f"{self.what} is too large: its NFA needs more than {self.limit} states "
                "(a large counted repetition?)"
            )
        self.edges.append([])
        self.eps.append([])
        return n

    def add_chars(self, src: int, ranges, dst: int) -> None:
        """Byte chains from src to dst spelling any code point in `ranges`.

        Identical tails of the UTF-8 sequences share states, which keeps `.` small.
        """
        if ranges and ranges[0][0] >= 0 and ranges[-1][1] < 0x80:  # ASCII: one byte per range, as
            edges = self.edges[src]                                # ranges_sequences spells it
            for lo, hi in ranges:
                edges.append((lo, hi, dst))
            return
        tails: dict[tuple, int] = {}
        for seq in ranges_sequences(ranges):
            nxt = dst
            for i in range(len(seq) - 1, 0, -1):
                key = seq[i:]
                state = tails.get(key)
                if state is None:
                    state = self.new()
                    lo, hi = seq[i]
                    self.edges[state].append((lo, hi, nxt))
                    tails[key] = state
                nxt = state
            lo, hi = seq[0]
            self.edges[src].append((lo, hi, nxt))

    def build(self, node: Node, s: int) -> int:
        """Add `node` starting at state s; return its end state.

        No construction loops back to its start state, so fragments may share starts.
        """
        kind = type(node)  # the regex AST's classes have no subclasses
        if kind is Chars:
            e = self.new()
            self.add_chars(s, node.ranges, e)
            return e
        if kind is Seq:
            for item in node.items:
                s = self.build(item, s)
            return s
        if isinstance(node, Alt):
            e = self.new()
            for item in node.items:
                self.eps[self.build(item, s)].append(e)
            return e
        if isinstance(node, Repeat):
            for _ in range(node.min):
                s = self.build(node.item, s)
            if node.max is None:
                return self.star_from(s, lambda m: self.build(node.item, m))
            ends = []
            for _ in range(node.max - node.min):
                ends.append(s)
                s = self.build(node.item, s)
            if not ends:
                return s
            e = self.new()
            for x in ends + [s]:
                self.eps[x].append(e)
            return e
        if isinstance(node, Anchor):
            e = self.new()
            (self.bol if node.kind == "start" else self.eol).setdefault(s, []).append(e)
            return e
        raise TypeError(f"unknown regex node {node!r}")  # pragma: no cover

    def star_from(self, s: int, body) -> int:
        m = self.new()
        self.eps[s].append(m)
        self.eps[body(m)].append(m)
        e = self.new()
        self.eps[m].append(e)
        return e

    def embed(self, d: DFA, s: int) -> int:
        """Add a copy of DFA d reached from s by an epsilon edge; return its end state."""
        base = len(self.edges)
        if base + d.n_states + 1 > self.limit:
            raise StateBudgetExceeded(
                f"{self.what} is too large: its NFA needs more than {self.limit} states"
            )
        if d.dense_table is not None:  # its runs as arrays, shared: read by the core as they are
            self.edges.extend([_NO_EDGES] * d.n_states)
            self.embedded.append((base, base + d.n_states, *d._run_arrays))
        else:  # a compact table: its runs' lists, shared, not copied
            self.edges.extend(d._runs)
            self.embedded.append((base, base + d.n_states))
        self.eps.extend([[] for _ in range(d.n_states)])
        e = self.new()
        for q in d.accepting:
            self.eps[base + q].append(e)
        self.eps[s].append(base)
        return e


def _estimate(node: Node) -> int:
    """An upper bound on the NFA states `_NFA.build` creates (checked before building)."""
    if isinstance(node, Chars):
        return _chars_estimate(node.ranges)
    if isinstance(node, (Seq, Alt)):
        total = 0 if isinstance(node, Seq) else 1
        for x in node.items:  # a loop, not sum() over a generator: every node of a new pattern
            total += _estimate(x)
        return total
    if isinstance(node, Repeat):
        inner = _estimate(node.item)
        copies = node.min + (1 if node.max is None else node.max - node.min)
        return inner * copies + 3
    return 1


@lru_cache(maxsize=4096)
def _chars_estimate(ranges) -> int:
    """`_estimate` of one character from `ranges`: its UTF-8 byte chains' states, plus one."""
    return 1 + sum(len(seq) - 1 for seq in ranges_sequences(ranges))


def _determinize(
    nfa: _NFA,
    start: int,
    final: int,
    max_states: int,
    what: str,
    absorbing: frozenset[int] = frozenset(),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Subset construction over byte classes: (trans [n, k], accept [n], byte -> class).

    ^ edges may only be crossed before the first byte, $ edges only after the last one:
    DFA states are closures without them, and acceptance is decided with $ edges allowed
    (plus ^ edges in the start state, which is kept distinct from every later state).

    `absorbing` NFA states accept every continuation the other states could accept (the
    trailing ``.*`` of a search): a set that contains one is cut down to them, since the
    other members cannot add anything. This keeps e.g. a search for ``x{0,1000}`` linear instead of quadratic.

    The construction runs in the compiled core (`_core.determinize`), which reads the NFA's
    lists directly; its oracle is tests/automata_reference.py.
    """
    built = _core.determinize(nfa.edges, nfa.eps, nfa.bol, nfa.eol, nfa.embedded, absorbing, start, final,
                              _unminimized_cap(max_states))  # the budget itself is checked once minimized
    if built is None:
        raise _budget_error(what, max_states)
    trans, accept, b2c, k = built
    return (np.frombuffer(trans, dtype=np.int64).reshape(-1, k), np.frombuffer(accept, dtype=bool),
            np.frombuffer(b2c, dtype=np.int64))


def _nfa_limit(max_states: int) -> int:
    return max(1000, 5 * max_states)


# ------------------------------------------------------------------------ regexes


def from_regex(
    pattern: str, *, search: bool = False, ecma: bool = False, max_states: int = DEFAULT_MAX_STATES
) -> DFA:
    """The DFA of a regex: ``re.fullmatch`` semantics, or ``re.search`` with `search`.

    Strings are UTF-8 text; ``^``/``$`` only match at the very start/end of the text (no
    multiline mode; ``$`` does not match before a final newline, as in ECMAScript).
    `ecma` reads the pattern as ECMA-262 (JSON Schema ``pattern``; see `regex`).
    """
    return _from_regex(pattern, bool(search), bool(ecma), max_states)


@lru_cache(maxsize=4096)
def _from_regex(pattern: str, search: bool, ecma: bool, max_states: int) -> DFA:
    _check_budget(max_states)
    if not search and not ecma and max_states >= DEFAULT_MAX_STATES:  # where a build could not fail
        known = prebuilt.find(pattern)  # a JSON Schema format's: stored ready-made
        if known is not None:
            return known
    return _built(pattern, search, ecma, max_states)


def _built(pattern: str, search: bool, ecma: bool, max_states: int) -> DFA:
    """`from_regex` from scratch: parse, Thompson's construction, subsets, minimization."""
    ast = parse(pattern, ecma)
    what = f"pattern '{clip(pattern)}'"
    limit = _nfa_limit(max_states)
    estimate = _estimate(ast) + (40 if search else 0)
    if estimate > limit:
        raise StateBudgetExceeded(
            f"{what} is too large: its automaton would need about {estimate} states, more "
            f"than the budget of {limit} (a large counted repetition?)"
        )
    if not search:
        try:
            counted = _bounded_json_string(ast)  # a JSON string of bounded length: built directly
        except StateBudgetExceeded:  # past its table's cap: the subset construction says how far
            counted = None
        if counted is not None:
            return _within_budget(counted, what, max_states)
    nfa = _NFA(limit, what)
    s = nfa.new()
    if search:
        nfa.add_chars(s, ANY, s)
        e = nfa.build(ast, s)
        final = nfa.new()
        nfa.eps[e].append(final)
        nfa.add_chars(final, ANY, final)
        absorbing = frozenset(range(final, len(nfa.edges)))
    else:
        final = nfa.build(ast, s)
        absorbing = frozenset()
    trans, accept, b2c = _determinize(nfa, s, final, max_states, what, absorbing)
    return _within_budget(_finalize(trans, accept, b2c), what, max_states)


def _bounded_json_string(ast: Node) -> DFA | None:
    """`json_strings.bounded_string` when the regex `ast` is ``"X{m,n}"`` (``"X*"``,
    ``"X{m,}"``) with X one JSON string character in every spelling; None otherwise."""
    if not (isinstance(ast, Seq) and len(ast.items) == 3 and ast.items[0] == _QUOTE == ast.items[2]
            and isinstance(ast.items[1], Repeat) and _is_json_character(ast.items[1].item)):
        return None
    return bounded_string(ast.items[1].min, ast.items[1].max)


_QUOTE = Chars(((0x22, 0x22),))


@lru_cache(maxsize=64)
def _is_json_character(node: Node) -> bool:
    """Whether regex `node` spells exactly one JSON string character, in every spelling:
    ``"node"`` has the minimal DFA of the JSON strings of one character (decided by
    language, so any regex for it qualifies; the JSON Schema front end writes one)."""
    if _estimate(node) > 256:  # its spellings take ~80 NFA states: no need to build this one
        return False
    return from_ast(Seq((_QUOTE, node, _QUOTE))).key == bounded_string(1, 1).key


def from_ast(node: Node, max_states: int = DEFAULT_MAX_STATES, what: str = "regex") -> DFA:
    """The DFA of a parsed regex (``re.fullmatch`` semantics)."""
    nfa = _NFA(_nfa_limit(max_states), what)
    s = nfa.new()
    final = nfa.build(node, s)
    return _within_budget(_finalize(*_determinize(nfa, s, final, max_states, what)), what, max_states)
