"""The regular algebra over DFAs: basic languages, union, concatenation, repetition,
intersection. Each operation embeds its operands in an NFA (`nfa`) or walks their product,
and returns a canonical minimized DFA, within a state budget.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from functools import lru_cache
from typing import Sequence

import numpy as np

from grammarc.automata import _core
from grammarc.errors import StateBudgetExceeded
from grammarc.automata.dfa import (
    COMPACT_FROM, DEFAULT_MAX_STATES, DFA, _budget_error, _check_budget, _empty, _finalize, _make, _make_edges,
    _unminimized_cap, _within_budget, byte_classes, from_table,
)
from grammarc.automata.nfa import _NFA, _determinize, _nfa_limit, from_ast
from grammarc.automata.regex import ANY, Chars, Repeat

__all__ = [
    "any_bytes", "combine", "complement", "concat", "intersect", "length_window", "literal", "literals", "optional", "plus", "repeat",
    "star", "union", "utf8_text", "without_empty", "distinct",
]


# ------------------------------------------------------------------ basic languages


def literal(data: bytes) -> DFA:
    """Exactly the byte string `data` (already minimal: a chain; compact when long)."""
    data = bytes(data)
    return _short_literal(data) if len(data) <= SHORT_LITERAL else _literal(data)


SHORT_LITERAL = 8  # bytes: a literal this short is remembered (at most 9 KiB of table each)


@lru_cache(maxsize=1024)
def _short_literal(data: bytes) -> DFA:
    """`_literal`, remembered for short ones: a new schema's punctuation, keywords and common
    property names are an earlier schema's (DFAs are immutable: one object serves all)."""
    return _literal(data)


def _literal(data: bytes) -> DFA:
    n = len(data)
    if n + 1 < COMPACT_FROM:  # the common short literal: its dense table and its code from the core
        trans, accept, code = _core.literal(data)
        return _make(np.frombuffer(trans, dtype=np.int32).reshape(n + 1, 256), np.frombuffer(accept, dtype=bool), code)
    accept = np.zeros(n + 1, dtype=bool)
    accept[n] = True
    states = np.arange(n, dtype=np.int64)
    return _make_edges(n + 1, states, np.frombuffer(data, dtype=np.uint8), states + 1, accept)


def literals(strings: Sequence[bytes], *, max_states: int | None = None) -> DFA:
    """Exactly the byte strings given (an enum): the minimal DFA, built in linear time.

    Daciuk et al.'s construction for sorted input: words are added to a trie one by one,
    and the part of the previous word that the next one does not share is minimized at
    once against a register of the states seen so far, so only the minimal automaton and
    one path are ever held. Its size is at most the total length plus one, and long ones
    are stored compactly; `max_states` (None: no limit) bounds the states kept.
    """
    words = sorted({bytes(w) for w in strings})
    if not words:
        return _empty()
    children: list[dict[int, int] | None] = [{}]
    final = [False]
    register: dict[tuple, int] = {}
    path = [0]
    prev = b""

    def minimize(depth: int) -> None:
        """Register the states of `path` below `depth`, deepest first."""
        while len(path) - 1 > depth:
            child = path.pop()
            signature = (final[child], tuple(children[child].items()))
            same = register.get(signature)
            if same is None:
                register[signature] = child
            else:
                children[path[-1]][prev[len(path) - 1]] = same
                children[child] = None  # unreachable from now on

    for word in words:
        common = 0
        for a, b in zip(prev, word):
            if a != b:
                break
            common += 1
        minimize(common)
        for b in word[common:]:
            children.append({})
            final.append(False)
            children[path[-1]][b] = len(children) - 1
            path.append(len(children) - 1)
        final[path[-1]] = True
        prev = word
        if max_states is not None and len(register) + len(path) > max_states:
            raise _budget_error("alternation of literals", max_states, len(register) + len(path))
    minimize(0)
    # canonical numbering: breadth first from the start, bytes ascending (as `_finalize`)
    ids = {0: 0}
    order = [0]
    src: list[int] = []
    byte: list[int] = []
    dst: list[int] = []
    for state in order:  # grows while iterating
        for b, t in sorted(children[state].items()):
            if t not in ids:
                ids[t] = len(order)
                order.append(t)
            src.append(ids[state])
            byte.append(b)
            dst.append(ids[t])
    accept = np.array([final[q] for q in order], dtype=bool)
    return _make_edges(len(order), np.array(src, dtype=np.int64), np.array(byte, dtype=np.int64),
                       np.array(dst, dtype=np.int64), accept)


@lru_cache(maxsize=1)
def any_bytes() -> DFA:
    """Every non-empty byte string (``any!`` without a vocabulary)."""
    trans = np.ones((2, 256), dtype=np.int32)
    return _make(trans, np.array([False, True]))


@lru_cache(maxsize=1)
def utf8_text() -> DFA:
    """All valid UTF-8 text, the empty string included."""
    return from_ast(Repeat(Chars(ANY), 0, None), DEFAULT_MAX_STATES, "utf8_text")


@lru_cache(maxsize=1)
def _utf8_nonempty() -> DFA:
    return without_empty(utf8_text())



# ------------------------------------------------------------------ regular algebra


def _nfa_of(ds: Sequence[DFA], max_states: int, what: str) -> _NFA:
    return _nfa_sized(sum(d.n_states + 2 for d in ds) + 4, max_states, what)


def _nfa_sized(total: int, max_states: int, what: str) -> _NFA:
    """An NFA for `total` states, refused before anything is allocated when over budget."""
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
    return _within_budget(_finalize(*_determinize(nfa, s, e, max_states, "union")), "union", max_states)


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
    what = "concatenation"
    return _within_budget(_finalize(*_determinize(nfa, start, s, max_states, what)), what, max_states)


def combine(tree, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """The DFA of a tree of regular operations over DFAs, in one subset construction.

    `tree` is a DFA, ``("seq", parts)``, ``("alt", parts)`` or ``("repeat", part, lo, hi)``
    (hi None: unbounded). Equal to nesting `concat`, `union` and `repeat`, without
    determinizing and minimizing every inner node: a trie of n nodes costs one construction,
    not one per node.

    Results are remembered while anything still holds them (`_combined`): a new schema's
    separators, keys and values are mostly trees that an earlier grammar of the process
    combined already, and its terminals still hold those DFAs. The most recent ones are
    also held here (`_recent`), up to `RECENT_STATES` states in all: a lowering combines
    parts that end inside larger terminals (a regular rule's DFA, a run merged whole
    before its chunks), which no grammar holds, and the next schema asked for a quarter
    of its trees again after the collector had taken them.
    """
    _check_budget(max_states)
    keys: dict[int, tuple | str] = {}
    key = (_tree_key(tree, keys), max_states)
    found = _recent.get(key)
    if found is not None:
        with _recent_lock:
            if key in _recent:
                _recent.move_to_end(key)
        return found
    found = _combined.get(key)
    if found is None:
        found = _combine(tree, max_states, keys)
        _combined[key] = found
    _hold(key, found)
    return found


# tree key -> DFA, for as long as some grammar (a terminal) or cache holds the DFA: memory
# follows what the process keeps anyway
_combined: "weakref.WeakValueDictionary[tuple, DFA]" = weakref.WeakValueDictionary()

# the most recently combined DFAs, least recent first, held whoever else holds them: at
# most RECENT_STATES states in all, none over a quarter of it (a state is ~1 KiB of dense
# table: at most 32 MiB, mostly DFAs that the compiled grammars kept in memory hold anyway)
RECENT_STATES = 1 << 15
_recent: "OrderedDict[tuple, DFA]" = OrderedDict()
_recent_size = [0]  # states held in `_recent`
_recent_lock = threading.Lock()  # lowerings may run in several threads at once


def _hold(key: tuple, dfa: DFA) -> None:
    """Hold `dfa` in `_recent`, dropping the least recent ones past `RECENT_STATES`."""
    if dfa.n_states > RECENT_STATES // 4:
        return
    with _recent_lock:
        if key in _recent:
            _recent.move_to_end(key)
            return
        _recent[key] = dfa
        _recent_size[0] += dfa.n_states
        while _recent_size[0] > RECENT_STATES:
            _recent_size[0] -= _recent.popitem(last=False)[1].n_states


def _tree_key(tree, keys: dict[int, tuple | str]) -> tuple | str:
    """`tree` with each DFA written as its key: equal trees, equal languages. The key of
    every composite node is left in `keys` under its id (the tree is alive meanwhile)."""
    if isinstance(tree, DFA):
        return tree.key
    if tree[0] == "repeat":
        key = ("repeat", _tree_key(tree[1], keys), tree[2], tree[3])
    else:
        key = (tree[0], tuple(_tree_key(part, keys) for part in tree[1]))
    keys[id(tree)] = key
    return key


def _combine(tree, max_states: int, keys: dict[int, tuple | str]) -> DFA:
    nfa = _nfa_sized(_tree_size(tree), max_states, "combination")
    start = nfa.new()
    end = _Embedding(nfa, keys).tree(tree, start, _FINAL)
    return _within_budget(_finalize(*_determinize(nfa, start, end, max_states, "combination")), "combination",
                          max_states)


def _tree_size(tree) -> int:
    """An upper bound on the NFA states `_Embedding` creates (sharing only saves states)."""
    if isinstance(tree, DFA):
        return tree.n_states + 1
    if tree[0] == "repeat":
        _, part, lo, hi = tree
        return (lo + (1 if hi is None else hi - lo)) * (_tree_size(part) + 2) + 4
    return sum(_tree_size(part) for part in tree[1]) + 2


_FINAL = -1  # the context of the whole tree: its end is the accepting state


class _Embedding:
    """Thompson's construction over a tree, sharing equal tails.

    A subtree's *context* says where its end leads: two subtrees with the same context
    reach the same state from their ends by ε moves alone, through nothing else (the last
    part of a sequence inherits the sequence's context; the branches of an alternation
    inherit the alternation's, or get the alternation's own end when it has none; nothing
    under a repetition has one). Within a context, a sequence's suffix, or a DFA, is
    embedded once: another one ending the same way enters that copy instead of making its
    own. A key trie (``"`` then ``"`` | a char other than those the trie continues with,
    then ``char* "`` | a continuing char, then the next level) leaves at every node for the
    same tail ``char* "``; one copy of it, not one per node, spares the subset construction
    thousands of equivalent states that minimization would merge again.
    """

    def __init__(self, nfa: _NFA, keys: dict[int, tuple | str]):
        self.nfa = nfa
        self.keys = keys
        self.tails: dict[tuple, tuple[int, int]] = {}  # (context, suffix key) -> (entry, end)

    def key(self, tree) -> tuple | str:
        return tree.key if isinstance(tree, DFA) else self.keys[id(tree)]

    def tree(self, tree, s: int, context: int | None) -> int:
        """Embed `tree` from state `s`; returns its end state. Without a context the end is
        a new state with no edge out (sequencing after it is safe); with one, it may be a
        shared tail's end, whose only edges out are ε moves toward that same context."""
        nfa = self.nfa
        if isinstance(tree, DFA):
            if context is None:
                return nfa.embed(tree, s)
            found = self.tails.get((context, tree.key))
            if found is not None:  # entered at its start state, the copy runs the same DFA
                nfa.eps[s].append(found[0])
                return found[1]
            entry = len(nfa.edges)
            end = nfa.embed(tree, s)
            self.tails[(context, tree.key)] = (entry, end)
            return end
        kind = tree[0]
        if kind == "seq":
            return self.sequence(tree[1], s, context)
        if kind == "alt":
            e = nfa.new()
            inner = e if context is None else context
            for part in tree[1]:
                nfa.eps[self.tree(part, s, inner)].append(e)
            return e
        _, part, lo, hi = tree
        for _ in range(lo):
            s = self.tree(part, s, None)
        if hi is None:
            return nfa.star_from(s, lambda m: self.tree(part, m, None))
        ends = []
        for _ in range(hi - lo):
            ends.append(s)
            s = self.tree(part, s, None)
        e = nfa.new()
        for x in ends + [s]:
            nfa.eps[x].append(e)
        return e

    def sequence(self, parts, s: int, context: int | None) -> int:
        nfa = self.nfa
        if not parts:
            e = nfa.new()
            nfa.eps[s].append(e)
            return e
        last = len(parts) - 1
        suffixes = self.suffix_keys(parts) if context is not None and last else None
        entries: list[tuple] = []
        for i, part in enumerate(parts):
            if suffixes is not None and i:  # s is the fresh end of parts[i - 1]: the entry of parts[i:]
                found = self.tails.get((context, suffixes[i]))
                if found is not None:
                    nfa.eps[s].append(found[0])
                    s = found[1]
                    break
                entries.append((context, suffixes[i], s))
            s = self.tree(part, s, context if i == last else None)
        for ctx, key, entry in entries:
            self.tails[(ctx, key)] = (entry, s)
        return s

    def suffix_keys(self, parts) -> list:
        """keys[i] identifies parts[i:] (nested pairs: linear in the number of parts)."""
        keys: list = [None] * len(parts)
        tail = None
        for i in range(len(parts) - 1, 0, -1):
            tail = keys[i] = (self.key(parts[i]), tail)
        return keys


def star(d: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(d)* (the empty string included)."""
    _check_budget(max_states)
    nfa = _nfa_of([d], max_states, "repetition")
    s = nfa.new()
    e = nfa.star_from(s, lambda m: nfa.embed(d, m))
    return _within_budget(_finalize(*_determinize(nfa, s, e, max_states, "repetition")), "repetition", max_states)


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
    nfa = _nfa_sized(copies * (d.n_states + 2) + 4, max_states, what)
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
    return _within_budget(_finalize(*_determinize(nfa, start, e, max_states, what)), what, max_states)


def _product_tables(
    ta: np.ndarray, aa: np.ndarray, tb: np.ndarray, ab: np.ndarray, max_states: int, what: str
) -> tuple[np.ndarray, np.ndarray]:
    """Reachable part of the product automaton (intersection), as a byte table.

    A pair (p, q) is the code ``p * nb + q``; breadth first from (0, 0), a block of states
    at a time (numpy over the block), then every row of the table at once. Stops with a
    budget error past what the budget allows before minimization."""
    nb = tb.shape[0]
    limit = _unminimized_cap(max_states)

    def successors(codes: np.ndarray) -> np.ndarray:
        ra, rb = ta[codes // nb], tb[codes % nb]
        return np.where((ra >= 0) & (rb >= 0), ra * nb + rb, -1)

    found = [np.zeros(1, dtype=np.int64)]  # codes in discovery order
    seen = {0}
    level = found[0]
    while len(level):
        fresh = []
        for lo in range(0, len(level), _PRODUCT_BLOCK):
            succ = successors(level[lo:lo + _PRODUCT_BLOCK])
            new = [c for c in distinct(succ[succ >= 0]).tolist() if c not in seen]
            if len(seen) + len(new) > limit:
                raise _budget_error(what, max_states)
            seen.update(new)
            fresh.append(np.array(new, dtype=np.int64))
        level = np.concatenate(fresh)
        found.append(level)
    codes = np.concatenate(found)
    order = np.argsort(codes)  # state numbers by code
    succ = successors(codes)
    table = np.where(succ >= 0, order[np.searchsorted(codes[order], np.maximum(succ, 0))], -1)
    acc = np.asarray(aa, dtype=bool)[codes // nb] & np.asarray(ab, dtype=bool)[codes % nb]
    return table, acc


_PRODUCT_BLOCK = 4096  # product states expanded at once


def _finalize_product(
    ta: np.ndarray, aa: np.ndarray, b: DFA, max_states: int, what: str
) -> DFA:
    trans, acc = _product_tables(
        np.asarray(ta, dtype=np.int64), aa, b.trans.astype(np.int64), b.accept,
        max_states, what,
    )
    return _within_budget(from_table(trans, acc), what, max_states)


def _intersect(a: DFA, b: DFA, max_states: int, what: str) -> DFA:
    if a.is_empty or b.is_empty:
        return _empty()
    return _finalize_product(a.trans, a.accept, b, max_states, what)


def intersect(a: DFA, b: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(a) & L(b)."""
    _check_budget(max_states)
    return _intersect(a, b, max_states, "intersection")


def complement(d: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """The valid UTF-8 texts (the empty one included) that L(d) does not hold."""
    _check_budget(max_states)
    n = d.n_states
    trans = d.trans.astype(np.int64)
    total = np.vstack([np.where(trans >= 0, trans, n), np.full((1, 256), n, dtype=np.int64)])
    flipped = np.concatenate([~np.asarray(d.accept, dtype=bool), [True]])
    return _finalize_product(total, flipped, utf8_text(), max_states, "complement")


def without_empty(d: DFA, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """L(d) minus the empty string (remembered as `combine`'s results are: a new schema's
    optional whitespace and separators are mostly an earlier schema's)."""
    _check_budget(max_states)
    if not d.accepts_empty:
        return d
    found = _nonempty.get(d.key)
    if found is None:
        found = _nonempty[d.key] = _without_empty(d)
    return found


# DFA key -> the DFA without the empty string, while anything holds the result
_nonempty: "weakref.WeakValueDictionary[str, DFA]" = weakref.WeakValueDictionary()


def _without_empty(d: DFA) -> DFA:
    """`without_empty` of a DFA that accepts the empty string: a fresh start state that is
    not accepting and leaves as the old one does, then normalized. Built over `d`'s byte
    classes (a copy of a row adds no class): k columns a state, not 256, and no range checks
    of a table that is well formed by construction (over bytes, 15k instructions a state)."""
    trans = d.dense_table
    table, b2c = byte_classes(d.trans.astype(np.int32) if trans is None else trans)
    shifted = np.where(table >= 0, table + 1, -1)
    accept = np.concatenate([[False], d.accept])
    return _finalize(np.vstack([shifted[:1], shifted]), accept, b2c)


def length_window(d: DFA, lo: int, hi: int | None, *, max_states: int = DEFAULT_MAX_STATES) -> DFA:
    """The strings of L(d) that are lo..hi characters long (hi=None: at least lo).

    `d` reads UTF-8 text; a character is counted at its first byte. The product with the
    counter is built layer by layer, one layer per count, as the set of `d`'s states that
    occur with that count (from hi=None's cap on, the count stays at the cap): numpy over
    whole layers, and only (state, count) pairs that occur are built.
    """
    _check_budget(max_states)
    if lo < 0 or (hi is not None and hi < lo):
        raise ValueError(f"bad length window {lo}..{hi}")
    if lo == 0 and hi is None:
        return d
    cap = lo if hi is None else hi
    what = f"length window {lo}..{'' if hi is None else hi}"
    trans = np.asarray(d.trans, dtype=np.int64)
    layers = _count_layers(trans, cap, hi is None, _unminimized_cap(max_states), what, max_states)
    table, accept = _layered_table(trans, np.asarray(d.accept, dtype=bool), layers, lo, cap, hi is None)
    return _within_budget(from_table(table, accept), what, max_states)


_CONTINUATION = np.zeros(256, dtype=bool)
_CONTINUATION[0x80:0xC0] = True  # continuation bytes do not start a character


def _count_layers(trans: np.ndarray, cap: int, saturate: bool, limit: int, what: str, max_states: int) -> list:
    """Per count 0..cap, the sorted states of `trans` reachable from 0 with that many
    characters read (with `saturate`, the last layer holds every count from cap on). Work
    and memory follow the states built, whatever the DFA's size."""
    stay, step = trans[:, _CONTINUATION], trans[:, ~_CONTINUATION]

    def after(states: np.ndarray, moves: np.ndarray) -> np.ndarray:
        targets = moves[states]
        return distinct(targets[targets >= 0])

    def closure(states: np.ndarray) -> np.ndarray:  # UTF-8: a few continuation bytes deep
        while True:
            grown = distinct(np.concatenate((states, after(states, stay))))
            if len(grown) == len(states):
                return states
            states = grown

    layers, total = [closure(np.zeros(1, dtype=np.int64))], 0
    while True:
        total += len(layers[-1])
        if total > limit:
            raise _budget_error(what, max_states)
        if len(layers) == cap + 1:
            break
        nxt = closure(after(layers[-1], step))
        if not len(nxt):
            return layers
        layers.append(nxt)
    while saturate:  # counts past the cap: a fixpoint of the last layer
        grown = closure(distinct(np.concatenate((layers[-1], after(layers[-1], step)))))
        if len(grown) == len(layers[-1]):
            break
        total += len(grown) - len(layers[-1])
        if total > limit:
            raise _budget_error(what, max_states)
        layers[-1] = grown
    return layers


def _layered_table(trans: np.ndarray, accept: np.ndarray, layers: list, lo: int, cap: int, saturate: bool):
    """The byte table and accept flags of the (state, count) pairs of `layers`, numbered
    layer by layer (state 0, count 0 first)."""
    offsets = np.cumsum([0] + [len(m) for m in layers])

    def ids(n: int | None, targets: np.ndarray) -> np.ndarray:
        """The numbers of (target, count n); -1 for a dead target or no such layer."""
        if n is None:
            return np.full(targets.shape, -1, dtype=np.int64)
        members = layers[n]
        at = np.minimum(np.searchsorted(members, targets), len(members) - 1)
        return np.where((targets >= 0) & (members[at] == targets), offsets[n] + at, -1)

    rows, acc = [], []
    for n, members in enumerate(layers):
        targets = trans[members]
        if n < cap:  # a character moves to the next count (none left when the layers ended early)
            up = n + 1 if n + 1 < len(layers) else None
        else:  # at the cap: it stays there (hi=None), or there is no room
            up = n if saturate else None
        rows.append(np.where(_CONTINUATION[None, :], ids(n, targets), ids(up, targets)))
        acc.append(accept[members] & (n >= lo))
    return np.vstack(rows), np.concatenate(acc)


# ------------------------------------------------------------------ arrays


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D array, ascending: `np.unique`'s answer (and `union1d`'s,
    of two concatenated) without the first call of either importing `numpy.ma`: ~10 ms and
    73 M instructions in whichever request meets it first."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
