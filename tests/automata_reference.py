"""The pure-Python automaton loops that grammarc.automata._core replaces: the test oracle.

`finalize` is the old `grammarc.automata.dfa._finalize` (coreachability, Hopcroft's
algorithm, canonical numbering), `determinize` the old `nfa._determinize` (subset
construction; only the reading of embedded DFAs' relative targets is new) and
`byte_classes` the old column merging of `dfa.from_table` and the compiled-grammar cache,
kept so that tests/test_automata_core.py can check that the C versions give identical
arrays and identical budget errors; `except_runs` the old trie of an object's other keys
(`json_strings._trie`), which tests/test_json_strings.py compares with the core's.
"""

from __future__ import annotations

import re
from typing import Iterable

import numpy as np

from grammarc.automata.dfa import DFA, _budget_error, _empty, _make, _unminimized_cap
from grammarc.automata.nfa import _NFA


def byte_classes(trans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge bytes with identical columns into classes: (table [n, k], byte -> class),
    classes numbered by their first byte; columns compared as raw bytes."""
    cols = np.ascontiguousarray(np.asarray(trans, dtype=np.int32).T)
    index: dict[bytes, int] = {}
    b2c = np.empty(256, dtype=np.uint8)
    firsts: list[int] = []
    for b in range(256):
        key = cols[b].tobytes()
        c = index.get(key)
        if c is None:
            c = index[key] = len(firsts)
            firsts.append(b)
        b2c[b] = c
    return np.ascontiguousarray(cols[firsts].T), b2c


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


def finalize(trans_k: np.ndarray, accept: np.ndarray, b2c: np.ndarray) -> DFA:
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


def determinize(
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
    shift = [0] * len(nfa.edges)  # embedded DFAs' targets are relative to their first state
    all_edges = list(nfa.edges)
    for first, past, *arrays in nfa.embedded:
        shift[first:past] = [first] * (past - first)
        if arrays:  # the states' edges: their runs in the DFA's run arrays
            ptr, runs = (np.asarray(a).tolist() for a in arrays)
            for q in range(past - first):
                all_edges[first + q] = [tuple(run) for run in runs[ptr[q]:ptr[q + 1]]]
    marks = np.zeros(257, dtype=bool)
    marks[0] = True
    for edges in all_edges:
        for lo, hi, _ in edges:
            marks[lo] = True
            marks[hi + 1] = True
    b2c = np.cumsum(marks[:256]) - 1
    k = int(b2c[-1]) + 1
    b2c_list = b2c.tolist()
    moves: list[list[tuple[int, int]]] = []
    for edges, base in zip(all_edges, shift):
        mv = []
        for lo, hi, t in edges:
            for c in range(b2c_list[lo], b2c_list[hi] + 1):
                mv.append((c, base + t))
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

    cap = _unminimized_cap(max_states)  # the budget itself is checked once minimized
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
                    if len(sets) >= cap:
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


def suffix_code(dfa: DFA, state: int) -> bytes:
    """Oracle of `_core.suffix_code`: the sub-automaton reachable from `state`, numbered
    breadth first with runs in byte order; per state its flag, run count and runs."""
    runs, accept = dfa._runs, dfa.accept
    number, order, out = {state: 0}, [state], bytearray()
    for s in order:  # grows while we walk
        out += (b"A" if accept[s] else b"N") + len(runs[s]).to_bytes(2, "little")
        for lo, hi, target in runs[s]:
            if target not in number:
                number[target] = len(order)
                order.append(target)
            out += bytes((lo, hi)) + number[target].to_bytes(4, "little")
    return bytes(out)


def except_runs(words: tuple[str, ...]) -> tuple[list[list[tuple[int, int, int]]], list[bool]]:
    """The old `json_strings._trie`, the oracle of `_core.except_runs` (tests/test_json_strings.py):
    (runs, accept) of the decoded texts that are none of `words` (sorted): their trie,
    equal subtrees shared (children are numbered after their parents, so one pass from the
    last finds them), and a last state for "left the trie", where every character loops.
    That is the minimal automaton: no trie state can equal the sink once a word is kept.
    Words in order make each state's children in order of their characters: nothing to sort."""
    children: list[dict[int, int]] = [{}]
    end = [False]
    for word in words:
        if _SURROGATE.search(word):
            continue
        q = 0
        for ch in map(ord, word):
            below = children[q]
            q = below.get(ch, -1)
            if q < 0:
                q = below[ch] = len(children)
                children.append({})
                end.append(False)
        end[q] = True
    if not any(end):  # no word: every text, one state (the trie's root would equal the sink)
        return [[(0, _MAX_CODE_POINT, 0)]], [True]
    same = list(range(len(children)))
    register: dict[tuple, int] = {}
    for q in reversed(range(len(children))):
        signature = (end[q], tuple([(ch, same[t]) for ch, t in children[q].items()]))
        same[q] = register.setdefault(signature, q)
    kept = sorted(set(same))  # the root first
    number = {q: i for i, q in enumerate(kept)}
    sink = len(kept)
    runs = []
    for q in kept:
        row, lo = [], 0
        for ch, t in children[q].items():
            if lo < ch:
                row.append((lo, ch - 1, sink))
            row.append((ch, ch, number[same[t]]))
            lo = ch + 1
        if lo <= _MAX_CODE_POINT:
            row.append((lo, _MAX_CODE_POINT, sink))
        runs.append(row)
    runs.append([(0, _MAX_CODE_POINT, sink)])
    return runs, [not end[q] for q in kept] + [True]


_MAX_CODE_POINT = 0x10FFFF
_SURROGATE = re.compile("[\ud800-\udfff]")
