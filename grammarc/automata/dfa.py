"""Byte-level DFAs for terminals: regex -> NFA -> minimized, trimmed, canonical DFA.

Every DFA returned by a public function here is

* minimized and trimmed: every state can reach an accepting state, so ``state != -1``
  after running a prefix means "this prefix can still be completed" (a viable prefix);
* canonical: states are numbered in BFS order from the start, bytes ascending, so equal
  languages give identical arrays and the same `DFA.key`;
* read-only (numpy arrays with ``writeable=False``), so it can be shared and cached.

The empty language is one non-accepting state without transitions.

Text is UTF-8: regex character classes become chains of byte transitions, so a model
token that ends inside a multi-byte character leaves the automaton in a live state.
Constructions take a ``max_states`` budget and raise `StateBudgetExceeded` while
building, never after, so a pathological regex is an error and not a hang.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Iterable, Sequence

import numpy as np

from grammarc.errors import RegexError, StateBudgetExceeded
from grammarc.automata.regex import ANY, Alt, Anchor, Chars, Node, Repeat, Seq, parse
from grammarc.automata.utf8 import ranges_sequences

DEFAULT_MAX_STATES = 10_000

__all__ = [
    "DEFAULT_MAX_STATES",
    "DFA",
    "any_bytes",
    "complement_containing",
    "concat",
    "early_end",
    "except_strings",
    "from_regex",
    "from_table",
    "intersect",
    "literal",
    "optional",
    "plus",
    "repeat",
    "star",
    "substrings",
    "union",
    "utf8_text",
    "without_empty",
]


# ----------------------------------------------------------------------------- DFA


@dataclass(frozen=True, eq=False)
class DFA:
    """Byte-level DFA. State 0 is the start; ``trans[s, b] == -1`` means no transition."""

    trans: np.ndarray  # int32 [n_states, 256]
    accept: np.ndarray  # bool [n_states]

    @property
    def n_states(self) -> int:
        return int(self.trans.shape[0])

    @property
    def is_empty(self) -> bool:
        """True for the empty language (trimmed DFAs: start state not accepting, no edges)."""
        return not bool(self.accept[0]) and not bool((self.trans[0] >= 0).any())

    @property
    def accepts_empty(self) -> bool:
        return bool(self.accept[0])

    @cached_property
    def key(self) -> str:
        """sha256 of the canonical arrays: equal languages give equal keys."""
        h = hashlib.sha256()
        h.update(self.n_states.to_bytes(8, "little"))
        h.update(np.ascontiguousarray(self.trans, dtype="<i4").tobytes())
        h.update(np.ascontiguousarray(self.accept, dtype=np.uint8).tobytes())
        return h.hexdigest()

    def step(self, state: int, byte: int) -> int:
        return int(self.trans[state, byte])

    def run(self, data: bytes, state: int = 0) -> int:
        """The state after reading `data` from `state`, or -1 once no transition exists."""
        trans = self.trans
        for b in data:
            state = trans[state, b]
            if state < 0:
                return -1
        return int(state)

    def matches(self, data: bytes) -> bool:
        state = self.run(data)
        return state >= 0 and bool(self.accept[state])

    def live_bytes(self, state: int) -> list[int]:
        return np.flatnonzero(self.trans[state] >= 0).tolist()

    def shortest_match(self, state: int = 0) -> bytes | None:
        """A shortest byte string leading from `state` to acceptance (None if empty)."""
        parent: dict[int, tuple[int, int]] = {state: (-1, -1)}
        queue = [state]
        for s in queue:
            if self.accept[s]:
                out = bytearray()
                while parent[s][0] >= 0:
                    s, b = parent[s]
                    out.append(b)
                return bytes(reversed(out))
            row = self.trans[s]
            for b in np.flatnonzero(row >= 0).tolist():
                t = int(row[b])
                if t not in parent:
                    parent[t] = (s, b)
                    queue.append(t)
        return None

    @cached_property
    def _runs(self) -> list[list[tuple[int, int, int]]]:
        """Per state, maximal byte runs (lo, hi, target) with the same live target."""
        trans = self.trans
        begins = np.ones(trans.shape, dtype=bool)  # where a run starts: byte 0, or a change
        begins[:, 1:] = trans[:, 1:] != trans[:, :-1]
        rows, starts = np.nonzero(begins)  # row-major: runs in order within each state
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:] - 1
        ends[np.flatnonzero(np.diff(rows))] = 255  # a state's last run ends at byte 255
        ends[-1:] = 255
        targets = trans[rows, starts]
        live = targets >= 0
        out: list[list[tuple[int, int, int]]] = [[] for _ in range(len(trans))]
        for row, lo, hi, target in zip(rows[live].tolist(), starts[live].tolist(), ends[live].tolist(),
                                       targets[live].tolist()):
            out[row].append((lo, hi, target))
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DFA) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        return f"DFA(n_states={self.n_states}, key={self.key[:12]})"


def _make(trans: np.ndarray, accept: np.ndarray) -> DFA:
    trans = np.ascontiguousarray(trans, dtype=np.int32)
    accept = np.ascontiguousarray(accept, dtype=bool)
    trans.flags.writeable = False
    accept.flags.writeable = False
    return DFA(trans, accept)


@lru_cache(maxsize=1)
def _empty() -> DFA:
    return _make(np.full((1, 256), -1, dtype=np.int32), np.zeros(1, dtype=bool))


def _budget_error(what: str, max_states: int) -> StateBudgetExceeded:
    return StateBudgetExceeded(
        f"{what} needs more than {max_states} automaton states "
        f"(max_states={max_states}); simplify it or raise the budget"
    )


# ---------------------------------------------------------------- normalization


def _compress_columns(trans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge bytes with identical columns into classes: (table [n, k], byte -> class)."""
    cols, b2c = np.unique(trans.T, axis=0, return_inverse=True)
    return np.ascontiguousarray(cols.T), b2c.reshape(-1).astype(np.int64)


def _coreachable(trans: np.ndarray, accept: np.ndarray) -> np.ndarray:
    """States from which an accepting state can be reached."""
    n, k = trans.shape
    flat = trans.ravel()
    mask = flat >= 0
    src = np.repeat(np.arange(n), k)[mask]
    dst = flat[mask]
    order = np.argsort(dst, kind="stable")
    srcs = src[order].tolist()
    bounds = np.searchsorted(dst[order], np.arange(n + 1)).tolist()
    live = accept.copy()
    stack = np.flatnonzero(accept).tolist()
    while stack:
        q = stack.pop()
        for s in srcs[bounds[q]:bounds[q + 1]]:
            if not live[s]:
                live[s] = True
                stack.append(s)
    return live


def _hopcroft(t: np.ndarray, labels: list[int], skip: int) -> tuple[list[int], int]:
    """Coarsest partition of a total DFA `t` [N, k] refining the initial `labels`.

    Hopcroft's algorithm with per-state incoming edge lists. The initial block labelled
    `skip` is left out of the worklist (all blocks but one suffice for a total DFA); the
    caller passes the sink, whose incoming edges are the most numerous.
    """
    N, k = t.shape
    flat = t.ravel()
    order = np.lexsort((np.tile(np.arange(k), N), flat))  # by target, then class
    tgt = flat[order]
    cls = order % k
    src = order // k
    # Group consecutive (target, class) runs.
    key = tgt * k + cls
    cuts = np.flatnonzero(np.diff(key)) + 1
    starts = np.concatenate(([0], cuts)).tolist()
    ends = np.concatenate((cuts, [key.size])).tolist()
    src_list = src.tolist()
    tgt_list = tgt.tolist()
    cls_list = cls.tolist()
    incoming: list[list[tuple[int, list[int]]]] = [[] for _ in range(N)]
    for a, b in zip(starts, ends):
        incoming[tgt_list[a]].append((cls_list[a], src_list[a:b]))
    groups: dict[int, set[int]] = {}
    for s, lab in enumerate(labels):
        groups.setdefault(lab, set()).add(s)
    blocks = list(groups.values())
    block_of = [0] * N
    for b, members in enumerate(blocks):
        for s in members:
            block_of[s] = b
    work = [b for b, lab in enumerate(groups) if lab != skip]
    while work:
        a = work.pop()
        by_class: dict[int, list[int]] = {}
        for q in blocks[a]:
            for c, srcs in incoming[q]:
                xs = by_class.get(c)
                if xs is None:
                    by_class[c] = list(srcs)
                else:
                    xs.extend(srcs)
        for xs in by_class.values():
            touched: dict[int, list[int]] = {}
            for s in xs:
                y = block_of[s]
                lst = touched.get(y)
                if lst is None:
                    touched[y] = [s]
                else:
                    lst.append(s)
            for y, ys in touched.items():
                members = blocks[y]
                if len(ys) == len(members):
                    continue
                if 2 * len(ys) <= len(members):
                    moved = ys
                    blocks[y] = members.difference(ys)
                else:
                    keep = set(ys)
                    moved = [s for s in members if s not in keep]
                    blocks[y] = keep
                z = len(blocks)
                blocks.append(set(moved))
                for s in moved:
                    block_of[s] = z
                work.append(z)
    return block_of, len(blocks)


def _finalize(trans_k: np.ndarray, accept: np.ndarray, b2c: np.ndarray) -> DFA:
    """Trim, minimize and canonically renumber a DFA given over byte classes.

    `trans_k` is [n, k] (-1 = dead), `b2c` maps each byte to its class; state 0 is start.
    """
    trans_k = np.asarray(trans_k, dtype=np.int64)
    accept = np.asarray(accept, dtype=bool)
    live = _coreachable(trans_k, accept)
    if not live[0]:
        return _empty()
    if not live.all():
        keep = np.flatnonzero(live)
        remap = np.full(trans_k.shape[0] + 1, -1, dtype=np.int64)
        remap[keep] = np.arange(keep.size)
        trans_k = remap[trans_k[keep]]  # -1 indexes the trailing -1 entry
        accept = accept[keep]
    n, k = trans_k.shape
    # Minimize over a total DFA with an explicit sink n.
    total = np.where(trans_k < 0, n, trans_k)
    total = np.vstack([total, np.full((1, k), n, dtype=np.int64)])
    labels = accept.astype(np.int64).tolist() + [2]
    block_of, nb = _hopcroft(total, labels, skip=2)
    block_arr = np.asarray(block_of, dtype=np.int64)
    sink_block = block_arr[n]
    reps = np.full(nb, -1, dtype=np.int64)
    reps[block_arr[::-1]] = np.arange(n, -1, -1)
    real = np.flatnonzero(np.arange(nb) != sink_block)
    tmin = block_arr[total[reps[real]]]
    # Map block ids to 0..m-1 with the sink block as -1.
    bmap = np.full(nb, -1, dtype=np.int64)
    bmap[real] = np.arange(real.size)
    tmin = bmap[tmin]
    amin = accept[reps[real]]
    start = int(bmap[block_arr[0]])
    # Canonical BFS numbering, bytes ascending: order classes by their smallest byte.
    minb = np.full(k, 256, dtype=np.int64)
    np.minimum.at(minb, b2c, np.arange(256))
    col_order = np.argsort(minb, kind="stable")
    rows = tmin[:, col_order].tolist()
    newid = [-1] * len(rows)
    newid[start] = 0
    order = [start]
    for s in order:
        for t in rows[s]:
            if t >= 0 and newid[t] < 0:
                newid[t] = len(order)
                order.append(t)
    newid_arr = np.asarray(newid + [-1], dtype=np.int64)
    canon = newid_arr[tmin[order]]
    full = canon[:, b2c]
    return _make(full, amin[order])


def from_table(trans: np.ndarray, accept: np.ndarray) -> DFA:
    """Normalize any byte table [n, 256] (-1 = dead, state 0 = start) into a canonical DFA."""
    trans = np.asarray(trans, dtype=np.int64)
    if trans.ndim != 2 or trans.shape[1] != 256 or trans.shape[0] != len(accept):
        raise ValueError("from_table needs trans [n, 256] and accept [n]")
    tk, b2c = _compress_columns(trans)
    return _finalize(tk, np.asarray(accept, dtype=bool), b2c)


# ---------------------------------------------------------------------------- NFA


class _NFA:
    """Thompson-style NFA over byte ranges, with assertion edges for ^ and $."""

    __slots__ = ("edges", "eps", "bol", "eol", "limit", "what")

    def __init__(self, limit: int, what: str):
        self.edges: list[list[tuple[int, int, int]]] = []
        self.eps: list[list[int]] = []
        self.bol: dict[int, list[int]] = {}
        self.eol: dict[int, list[int]] = {}
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
        if isinstance(node, Chars):
            e = self.new()
            self.add_chars(s, node.ranges, e)
            return e
        if isinstance(node, Seq):
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
        for runs in d._runs:
            self.edges.append([(lo, hi, base + t) for lo, hi, t in runs])
            self.eps.append([])
        e = self.new()
        for q in np.flatnonzero(d.accept).tolist():
            self.eps[base + q].append(e)
        self.eps[s].append(base)
        return e


def _estimate(node: Node) -> int:
    """An upper bound on the NFA states `_NFA.build` creates (checked before building)."""
    if isinstance(node, Chars):
        return 1 + sum(len(seq) - 1 for seq in ranges_sequences(node.ranges))
    if isinstance(node, Seq):
        return sum(_estimate(x) for x in node.items)
    if isinstance(node, Alt):
        return 1 + sum(_estimate(x) for x in node.items)
    if isinstance(node, Repeat):
        inner = _estimate(node.item)
        copies = node.min + (1 if node.max is None else node.max - node.min)
        return inner * copies + 3
    return 1


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
    """
    marks = np.zeros(257, dtype=bool)
    marks[0] = True
    for edges in nfa.edges:
        for lo, hi, _ in edges:
            marks[lo] = True
            marks[hi + 1] = True
    b2c = np.cumsum(marks[:256]) - 1
    k = int(b2c[-1]) + 1
    b2c_list = b2c.tolist()
    moves: list[list[tuple[int, int]]] = []
    for edges in nfa.edges:
        mv = []
        for lo, hi, t in edges:
            for c in range(b2c_list[lo], b2c_list[hi] + 1):
                mv.append((c, t))
        moves.append(mv)
    eps, bol, eol = nfa.eps, nfa.bol, nfa.eol

    def closure(seeds: Iterable[int], use_bol: bool, use_eol: bool) -> frozenset[int]:
        seen = set(seeds)
        stack = list(seen)
        while stack:
            s = stack.pop()
            nxt = eps[s]
            if use_bol and s in bol:
                nxt = nxt + bol[s]
            if use_eol and s in eol:
                nxt = nxt + eol[s]
            for t in nxt:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        return frozenset(seen)

    def accepting(states: frozenset[int], initial: bool) -> bool:
        if final in states:
            return True
        if not eol and not (initial and bol):
            return False
        return final in closure(states, initial, True)

    def cut(states: frozenset[int]) -> frozenset[int]:
        if absorbing and not absorbing.isdisjoint(states):
            return states & absorbing
        return states

    start_set = cut(closure([start], bool(bol), False))
    sets: list[frozenset[int]] = [start_set]
    ids: dict[frozenset[int], int] = {}  # non-initial states only
    by_seeds: dict[frozenset[int], int] = {}
    rows: list[list[int]] = []
    accept: list[bool] = []
    i = 0
    while i < len(sets):
        cur = sets[i]
        accept.append(accepting(cur, i == 0))
        buckets: dict[int, set[int]] = {}
        for s in cur:
            for c, t in moves[s]:
                b = buckets.get(c)
                if b is None:
                    buckets[c] = {t}
                else:
                    b.add(t)
        row = [-1] * k
        for c, targets in buckets.items():
            seeds = frozenset(targets)
            j = by_seeds.get(seeds)
            if j is None:
                tset = cut(closure(seeds, False, False))
                j = ids.get(tset)
                if j is None:
                    if len(sets) >= max_states:
                        raise _budget_error(what, max_states)
                    j = len(sets)
                    ids[tset] = j
                    sets.append(tset)
                by_seeds[seeds] = j
            row[c] = j
        rows.append(row)
        i += 1
    return (
        np.asarray(rows, dtype=np.int64).reshape(len(rows), k),
        np.asarray(accept, dtype=bool),
        b2c.astype(np.int64),
    )


def _nfa_limit(max_states: int) -> int:
    return max(1000, 5 * max_states)


def _check_budget(max_states: int) -> None:
    if not isinstance(max_states, int) or max_states < 1:
        raise ValueError("max_states must be a positive integer")


# ------------------------------------------------------------------------ regexes


def from_regex(pattern: str, *, search: bool = False, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """The DFA of a regex: ``re.fullmatch`` semantics, or ``re.search`` with `search`.

    Strings are UTF-8 text; ``^``/``$`` only match at the very start/end of the text (no
    multiline mode; ``$`` does not match before a final newline, as in ECMAScript).
    """
    return _from_regex(pattern, bool(search), max_states)


@lru_cache(maxsize=4096)
def _from_regex(pattern: str, search: bool, max_states: int) -> DFA:
    _check_budget(max_states)
    ast = parse(pattern)
    what = f"pattern '{pattern}'"
    limit = _nfa_limit(max_states)
    estimate = _estimate(ast) + (40 if search else 0)
    if estimate > limit:
        raise StateBudgetExceeded(
            f"{what} is too large: its automaton would need about {estimate} states, more "
            f"than the budget of {limit} (a large counted repetition?)"
        )
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
    return _finalize(trans, accept, b2c)


def _from_ast(node: Node, max_states: int, what: str) -> DFA:
    nfa = _NFA(_nfa_limit(max_states), what)
    s = nfa.new()
    final = nfa.build(node, s)
    return _finalize(*_determinize(nfa, s, final, max_states, what))


# ------------------------------------------------------------------ basic languages


def literal(data: bytes) -> DFA:
    """Exactly the byte string `data` (already minimal: a chain)."""
    data = bytes(data)
    n = len(data)
    trans = np.full((n + 1, 256), -1, dtype=np.int32)
    if n:
        trans[np.arange(n), np.frombuffer(data, dtype=np.uint8)] = np.arange(1, n + 1)
    accept = np.zeros(n + 1, dtype=bool)
    accept[n] = True
    return _make(trans, accept)


@lru_cache(maxsize=1)
def any_bytes() -> DFA:
    """Every non-empty byte string (``any!`` without a vocabulary)."""
    trans = np.ones((2, 256), dtype=np.int32)
    return _make(trans, np.array([False, True]))


@lru_cache(maxsize=1)
def utf8_text() -> DFA:
    """All valid UTF-8 text, the empty string included."""
    return _from_ast(Repeat(Chars(ANY), 0, None), DEFAULT_MAX_STATES, "utf8_text")


@lru_cache(maxsize=1)
def _utf8_nonempty() -> DFA:
    return without_empty(utf8_text())


# ------------------------------------------------------------- dialect constructs


def early_end(d: DFA) -> DFA:
    """Strings of L(d) with no proper prefix in L(d) (``#e'R'``): stop at the first match."""
    trans = np.array(d.trans, dtype=np.int64)
    trans[d.accept] = -1
    return from_table(trans, d.accept)


def complement_containing(d: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """Non-empty valid UTF-8 text with no substring in L(d) (``#ex'R'``)."""
    _check_budget(max_states)
    what = "complement_containing"
    if d.accepts_empty:
        return _empty()
    if d.is_empty:
        return _utf8_nonempty()
    # Determinize (any byte)* . d . (any byte)*: it is total, so its complement is the
    # same table with acceptance flipped.
    nfa = _NFA(d.n_states + 8, what)
    s = nfa.new()
    nfa.edges[s].append((0, 255, s))
    final = nfa.embed(d, s)
    nfa.edges[final].append((0, 255, final))
    trans, accept, b2c = _determinize(nfa, s, final, max_states, what, frozenset({final}))
    avoid = _finalize(trans, ~accept, b2c)
    return _intersect(avoid, _utf8_nonempty(), max_states, what)


def except_strings(strings: Sequence[str], *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """Non-empty valid UTF-8 text in which none of `strings` occurs (``except!``).

    Built as an Aho-Corasick automaton over the UTF-8 bytes (its output states removed)
    crossed with the UTF-8 validator.
    """
    _check_budget(max_states)
    what = "except!"
    try:
        pats = sorted({s.encode("utf-8") for s in strings})
    except UnicodeEncodeError as exc:
        raise RegexError(f"except! string is not valid Unicode text: {exc}") from None
    if not pats:
        return _utf8_nonempty()
    if b"" in pats:
        return _empty()
    # Trie.
    children: list[dict[int, int]] = [{}]
    terminal = [False]
    for p in pats:
        node = 0
        for b in p:
            nxt = children[node].get(b)
            if nxt is None:
                nxt = len(children)
                children[node][b] = nxt
                children.append({})
                terminal.append(False)
            node = nxt
        terminal[node] = True
    m = len(children)
    if m > max_states:
        raise _budget_error(what, max_states)
    goto = np.zeros((m, 256), dtype=np.int64)
    fail = [0] * m
    out = terminal[:]
    for b, t in children[0].items():
        goto[0, b] = t
    queue = list(children[0].values())
    for q in queue:
        out[q] = out[q] or out[fail[q]]
        goto[q] = goto[fail[q]]
        for b, t in children[q].items():
            goto[q, b] = t
            fail[t] = int(goto[fail[q], b])
            queue.append(t)
    bad = np.asarray(out, dtype=bool)
    goto[bad[goto]] = -1
    return _finalize_product(goto, ~bad, _utf8_nonempty(), max_states, what)


def substrings(text: str, *, max_states: int | None = None) -> DFA:
    """Every substring of `text` cut at character boundaries, the empty string included.

    A suffix automaton over the UTF-8 bytes: its states group substrings by their end
    positions, so "ends at a character boundary" is a per-state property; substrings that
    start inside a character are cut at the first byte.
    """
    data = text.encode("utf-8")
    nxt: list[dict[int, int]] = [{}]
    link = [-1]
    length = [0]
    first_end = [0]
    last = 0
    for i, b in enumerate(data):
        cur = len(nxt)
        nxt.append({})
        link.append(0)
        length.append(length[last] + 1)
        first_end.append(i + 1)
        p = last
        while p != -1 and b not in nxt[p]:
            nxt[p][b] = cur
            p = link[p]
        if p != -1:
            q = nxt[p][b]
            if length[p] + 1 == length[q]:
                link[cur] = q
            else:
                clone = len(nxt)
                nxt.append(dict(nxt[q]))
                link.append(link[q])
                length.append(length[p] + 1)
                first_end.append(first_end[q])
                while p != -1 and nxt[p].get(b) == q:
                    nxt[p][b] = clone
                    p = link[p]
                link[q] = clone
                link[cur] = clone
        last = cur
        if max_states is not None and len(nxt) > 2 * max_states:
            raise _budget_error("#substrs", max_states)
    n = len(nxt)
    trans = np.full((n, 256), -1, dtype=np.int64)
    for s, d in enumerate(nxt):
        if d:
            trans[s, list(d.keys())] = list(d.values())
    trans[0, 0x80:0xC0] = -1
    accept = np.array(
        [e == len(data) or not 0x80 <= data[e] <= 0xBF for e in first_end], dtype=bool
    )
    accept[0] = True
    result = from_table(trans, accept)
    if max_states is not None and result.n_states > max_states:
        raise _budget_error("#substrs", max_states)
    return result


# ------------------------------------------------------------------ regular algebra


def _nfa_of(ds: Sequence[DFA], max_states: int, what: str) -> _NFA:
    total = sum(d.n_states + 2 for d in ds) + 4
    limit = max(_nfa_limit(max_states), 0)
    if total > limit:
        raise StateBudgetExceeded(
            f"{what} is too large: its NFA needs {total} states, more than {limit}"
        )
    return _NFA(limit, what)


def union(ds: Sequence[DFA], *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(d1) | L(d2) | ..."""
    _check_budget(max_states)
    ds = list(ds)
    if not ds:
        return _empty()
    if len(ds) == 1:
        return ds[0]
    nfa = _nfa_of(ds, max_states, "union")
    s = nfa.new()
    e = nfa.new()
    for d in ds:
        nfa.eps[nfa.embed(d, s)].append(e)
    return _finalize(*_determinize(nfa, s, e, max_states, "union"))


def concat(ds: Sequence[DFA], *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(d1) L(d2) ... (the empty sequence is the empty string)."""
    _check_budget(max_states)
    ds = list(ds)
    if any(d.is_empty for d in ds):
        return _empty()
    if not ds:
        return literal(b"")
    if len(ds) == 1:
        return ds[0]
    nfa = _nfa_of(ds, max_states, "concatenation")
    s = start = nfa.new()
    for d in ds:
        s = nfa.embed(d, s)
    return _finalize(*_determinize(nfa, start, s, max_states, "concatenation"))


def star(d: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(d)* (the empty string included)."""
    _check_budget(max_states)
    nfa = _nfa_of([d], max_states, "repetition")
    s = nfa.new()
    e = nfa.star_from(s, lambda m: nfa.embed(d, m))
    return _finalize(*_determinize(nfa, s, e, max_states, "repetition"))


def plus(d: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(d)+ = L(d) L(d)*."""
    return repeat(d, 1, None, max_states=max_states)


def optional(d: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(d) | empty string."""
    return repeat(d, 0, 1, max_states=max_states)


def repeat(d: DFA, lo: int, hi: int | None, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(d){lo,hi}; hi=None is unbounded."""
    _check_budget(max_states)
    if lo < 0 or (hi is not None and hi < lo):
        raise ValueError(f"bad repetition bounds {{{lo},{hi}}}")
    if hi == 0 or (d.is_empty and lo == 0):
        return literal(b"")
    if d.is_empty:
        return _empty()
    copies = lo + (1 if hi is None else hi - lo)
    what = f"repetition {{{lo},{'' if hi is None else hi}}}"
    nfa = _nfa_of([d] * copies, max_states, what)
    s = start = nfa.new()
    for _ in range(lo):
        s = nfa.embed(d, s)
    if hi is None:
        e = nfa.star_from(s, lambda m: nfa.embed(d, m))
    else:
        ends = []
        for _ in range(hi - lo):
            ends.append(s)
            s = nfa.embed(d, s)
        e = nfa.new()
        for x in ends + [s]:
            nfa.eps[x].append(e)
    return _finalize(*_determinize(nfa, start, e, max_states, what))


def _product_tables(
    ta: np.ndarray, aa: np.ndarray, tb: np.ndarray, ab: np.ndarray, max_states: int, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """Reachable part of the product automaton (intersection), as a byte table."""
    nb = tb.shape[0]
    ids = {0: 0}
    pairs = [(0, 0)]
    rows = []
    for p, q in pairs:
        ra, rb = ta[p], tb[q]
        codes = np.where((ra >= 0) & (rb >= 0), ra * nb + rb, -1)
        uniq, inv = np.unique(codes, return_inverse=True)
        mapped = []
        for code in uniq.tolist():
            if code < 0:
                mapped.append(-1)
                continue
            j = ids.get(code)
            if j is None:
                if len(pairs) >= max_states:
                    raise _budget_error(what, max_states)
                j = len(pairs)
                ids[code] = j
                pairs.append(divmod(code, nb))
            mapped.append(j)
        rows.append(np.asarray(mapped, dtype=np.int64)[inv.reshape(-1)])
    acc = np.array([bool(aa[p]) and bool(ab[q]) for p, q in pairs], dtype=bool)
    return np.vstack(rows), acc


def _finalize_product(
    ta: np.ndarray, aa: np.ndarray, b: DFA, max_states: int, what: str
) -> DFA:
    trans, acc = _product_tables(
        np.asarray(ta, dtype=np.int64), aa, b.trans.astype(np.int64), b.accept,
        max_states, what,
    )
    return from_table(trans, acc)


def _intersect(a: DFA, b: DFA, max_states: int, what: str) -> DFA:
    if a.is_empty or b.is_empty:
        return _empty()
    return _finalize_product(a.trans, a.accept, b, max_states, what)


def intersect(a: DFA, b: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(a) & L(b)."""
    _check_budget(max_states)
    return _intersect(a, b, max_states, "intersection")


def without_empty(d: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(d) minus the empty string."""
    _check_budget(max_states)
    if not d.accepts_empty:
        return d
    trans = d.trans.astype(np.int64)
    shifted = np.where(trans >= 0, trans + 1, -1)
    table = np.vstack([shifted[:1], shifted])
    accept = np.concatenate([[False], d.accept])
    return from_table(table, accept)
