"""The vocabulary-aligned token index (DESIGN.md §7).

For a lexer item — terminal `t` part way through, in DFA state `q` — a token's bytes can

* stay inside `t` to the token's end: the token is in ``inside(t, q)``, a precomputed
  mask that needs no parser check;
* end `t` somewhere in the middle, then run through zero or more whole terminals, and end
  inside (or exactly at the end of) another terminal: such tokens sit in a prefix tree
  keyed by the terminals after `t` (`Tree`), checked against the parser at run time.

The tree holds splits strictly inside a token (``mid(t, q)``); tokens that start exactly
where `t` ends are covered by the engine's opening items for the next terminals. Only
terminals that can follow each other in the grammar are tried (`ParserCore.follows`), and every
part is built lazily, on the first visit of its state.

Token-level terminals: ``any!`` consumes exactly one whole token (DFA state 0 = not yet,
1 = done, so it is never entered in the middle of a token); ``except!(X, n)`` counts the
tokens that touch it at run time (the engine), the index treats it as its byte language.
"""

from __future__ import annotations

import functools
import threading
import weakref

import numpy as np

from grammarc.automata.comb import CombTable
from grammarc.automata.dfa import DFA
from grammarc.automata.operations import distinct
from grammarc.automata.suffix import made_keys, per_state, suffix_key
from grammarc.lowering.compiler import CompiledGrammar
from grammarc.runtime.gss import parser_core
from grammarc.tokens import _scan, kin, memo
from grammarc.tokens.memo import Memo
from grammarc.tokens.rows import TokenBytes, joined, token_bytes
from grammarc.tokens.scan_cache import (AFTER_FIRST_BYTE, FROM_START, Scan, TerminalScans, terminal_scans, unkeyed,
                                       walked_states)
from grammarc.tokens.suffixes import Suffixes, shared
from grammarc.tokens.token_set import TokenSet
from grammarc.tokens.tree import NO_PART as _NO_PART, Tree
from grammarc.tokens.vocabulary import Vocabulary


class _Level:
    """What a big tree's parts are made from (`BUCKETED_ROWS` suffixes or more): the token
    suffixes that start right after terminal `previous` (`Suffixes`: their next bytes and
    buckets made once), and the index that scans them.

    A big root level reads the process's `Suffixes` of them (`shared`): a few sets that
    every grammar's trees meet (a space-led token after its space), bucketed and partly
    walked once. Another big level has suffixes of its own, made whole on its first read,
    each terminal from the suffixes of its opening bytes, and then dropped (its arrays
    would outweigh the parts never read)."""

    __slots__ = ("_index", "previous", "suffixes", "shared")

    def __init__(self, index: "TokenIndex", previous: int, suffixes: Suffixes, shared: bool):
        self._index = index.ref  # trees are held by their index: no cycle back to it
        self.previous, self.suffixes, self.shared = previous, suffixes, shared

    def candidates(self) -> frozenset[int]:
        return self._index()._parts.starting(self.previous, self.suffixes.byte_set())

    def part(self, tree: Tree, u: int) -> "tuple[TokenSet | None, Tree | None]":
        index = self._index()
        with index._build_lock:
            found = tree._made(u)
            if found is None:
                suffixes = self.suffixes
                if self.shared:
                    found = index._tree_part(self, u, suffixes.taking(index._openers[u]))
                    tree._publish(u, found)
                else:
                    for v in sorted(tree.candidates):
                        if tree._made(v) is None:
                            tree._publish(v, index._tree_part(self, v, suffixes.taking(index._openers[v])))
                    found = tree._made(u)
        return found


# A scan that starts from fewer token rows than this is cheaper to redo than to keep in the
# shared (and on-disk) store.
PERSIST_MIN_ROWS = 4096
# ... and so is one that starts from more but walks at most this share of that many (512),
# stepping over the others (rows that die at a byte which ended the row before: a JSON key's
# state after its common first letter takes ~5,000 Llama-3 rows and walks ~100-300); a wide
# state gives up after those (~5-10 us lost before its scan is looked up).
THIN_WALK_SHARE = 1 / 8
# A wide scan reads the rows whose first byte leads to state p from p's shared scan after a
# first byte when they are at least this share of the vocabulary (`_scan_composed`; 3% of
# Llama-3 is ~3,800 rows, a UTF-8 lead byte's worth): fewer are cheaper to walk than to
# look a shared scan up for.
SHIFTED_MIN_SHARE = 0.03
# ... and makes p's shared scan once the requests for it asked for this many vocabularies'
# worth of rows (`_shifted_scan`): what the scan costs to make; or at once for a request of
# at least SHIFTED_NOW of them, which costs about as much to walk as the scan to make (a
# new string body's own state: the requests after it, from its UTF-8 continuations, then
# find it made; 3% fewer rows walked on 60 MaskBench schemas).
SHIFTED_AFTER = 1.0
SHIFTED_NOW = 0.5
# A state whose language has more states than this keeps its scans under no language key
# (`_language`): on 190 MaskBench schemas, none of the 92 such keys made (an object's other
# keys, a length counter's states) found scans that another state had stored, and they were
# 63% of the bytes of canonical code made (`suffix_key`); the keys of 65-256 states
# (whitespace around separators, string formats) found some in ~40% of their lookups.
KEYED_MAX_STATES = 256
# A wide scan is read off a recent scan of the same terminal (`TokenIndex._scan_near`) when
# the two states agree on tokens short enough that at most this share of the rows is left
# to walk; among the terminal's last NEAR_CANDIDATES wide scans.
NEAR_MAX_SHARE = 0.25
NEAR_CANDIDATES = 4
# ... and stops looking (and comparing) once a candidate agrees on tokens so long that at
# most this share is left (Llama-3: 16 bytes, 1% of the rows).
NEAR_ENOUGH_SHARE = 0.01
# A wide scan that no store holds is read off a kin's (`grammarc.tokens.kin`: a state of any
# grammar that takes the same bytes) when at most this share of the rows is left to walk:
# those longer than the two agree, or holding a byte on which the two part. Rows scattered
# over the vocabulary walk without a whole scan's shared prefixes (~80 ns a row against
# ~14): past ~10%, composing the whole scan costs less.
KIN_MAX_SHARE = 0.05
# `_scan.agree_bytes` gives up past this many pairs of states (a string body and another
# reach a few dozen, a length counter and a string body one per character left) ...
KIN_MAX_PAIRS = 256
# ... and past this many bytes on which the two part: so many part them almost everywhere
# (a string body and another part at the quote; a string body and a key trie's state at
# every byte the trie goes on with; a string body and a number everywhere).
KIN_MAX_PARTING = 16
# A wide scan is read off a kin along the rows on which the two part (`_scan.parting_rows`:
# those that, walked from the start beside the kin's state, reach a byte that parts them).
# An object's other keys (``json_string_except!``, a language new to every schema) part
# from a string body only on the rows that spell the rest of a key and then the quote: on
# Llama-3 mostly none (it has no token ``name"``), where parting bytes (`_scan.agree_bytes`)
# gave every row that holds a quote, and a key trie beside another kin none at all. With no
# row parting them, the kin's scan is the state's, before the store is asked (its key costs
# ~20-300 us for a new automaton); else it is read off after the store missed. Pairs of
# states stay within twice the two automata's states, and a candidate for which that is more
# than `PARTING_MAX_PAIRS` is not tried (a key trie and a string body pair each of the trie's
# states with one of the body's), runs on which a
# pair parts within `PARTING_MAX_EDGES` and a sixteenth of the pairs (one per key; two
# unrelated automata part almost everywhere), rows within `PARTING_MAX_ROWS`. The
# `PARTING_TRIES` smallest candidates are tried, none more than `PARTING_LARGER` states
# larger than the state's automaton (which would pair with many of its states first).
PARTING_MAX_PAIRS = 4096
PARTING_MAX_EDGES = 64
PARTING_MAX_ROWS = 512
PARTING_LARGER = 64
PARTING_TRIES = 2
PARTING_ALIKE = 1 / 8


def _alike(row: np.ndarray, other: np.ndarray) -> bool:
    """Whether two states of one automaton that take the same bytes (a kin's profile) go to
    the same state on all but a few of them (`PARTING_ALIKE`): a key trie's states, which
    most bytes send to the same string body; not a length counter's, each of whose states
    goes on to the next (their pairs would run to the limits before failing)."""
    live = row >= 0
    return int(np.count_nonzero(row[live] != other[live])) <= PARTING_ALIKE * int(np.count_nonzero(live))


def _fewer(rows: np.ndarray, tokens: TokenBytes, parting: bytes, depth: int, most: float) -> np.ndarray:
    """The rows longer than `depth` bytes that hold a byte of `parting` (32 bytes, a bit per
    byte value: `_scan.agree_bytes`) when they are fewer than `rows` and than `most`, else
    `rows`. Their count is bounded by the sum of each byte's rows: when that is not below
    both, they are not counted (a row holds few parting bytes, so the union is rarely much
    smaller)."""
    parting_bytes = np.flatnonzero(np.unpackbits(np.frombuffer(parting, dtype=np.uint8), bitorder="little"))
    holding = [tokens.holding(b) for b in parting_bytes.tolist()]
    if sum(map(len, holding)) >= min(len(rows), most):
        return rows
    if not holding:  # no byte parts the two: every token walks alike
        return np.zeros(0, dtype=np.int32)
    if len(holding) > 1:
        flags = np.zeros(len(tokens.ids), dtype=bool)
        for rows_of_byte in holding:
            flags[rows_of_byte] = True
        found = np.flatnonzero(flags)
    else:
        found = holding[0]
    return found[tokens.lengths[found] > depth]


def _runs(byte: np.ndarray, starts: np.ndarray) -> list[tuple[int, int]]:
    """The row ranges of the first-byte buckets `byte` (ascending), adjacent ones joined."""
    cut = np.flatnonzero(np.diff(byte) != 1) + 1
    firsts, lasts = byte[np.concatenate(([0], cut))], byte[np.concatenate((cut - 1, [len(byte) - 1]))]
    return list(zip(starts[firsts].tolist(), starts[lasts + 1].tolist()))


def _by_row(rows_parts: list[np.ndarray], pos_parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Split points (rows, positions) from parts that each hold whole rows, ordered by row
    as one walk gives them (a stable sort: each row's positions stay ascending)."""
    rows, pos = np.concatenate(rows_parts), np.concatenate(pos_parts)
    order = np.argsort(rows, kind="stable")
    return rows[order], pos[order]


class TokenIndex:
    """The per-(grammar, vocabulary) index; immutable in meaning, built lazily."""

    def __init__(self, compiled: CompiledGrammar, vocab: Vocabulary):
        # Not `compiled` itself: indexes are cached weakly per compiled grammar, and a
        # reference back to the key would keep both alive forever.
        self.vocab = vocab
        self.ref = weakref.ref(self)  # what its trees' levels hold (one for all)
        self.terminals = compiled.terminals
        # each terminal's except! budget (`token_limit`), or None; whether any has one (the
        # engines of this index read both)
        self.token_limits = tuple(terminal.token_limit for terminal in compiled.terminals)
        self.limited = any(limit is not None for limit in self.token_limits)
        # terminal -> the terminals that may follow it, ascending (read off the LR tables:
        # `ParserCore.follows`, one pass over their cells in C)
        self._follow_lists = parser_core(compiled).follows(compiled.bnf.n_terminals)
        self._openers = _openers(compiled.terminals)
        self._tables: list[_scan.Table | None] = [None] * len(compiled.terminals)  # `walk_table`s, read once
        # per terminal, its automaton's walked states over this vocabulary (`walked_states`), looked up once
        self._states_walked: list[dict[int, object] | None] = [None] * len(compiled.terminals)
        # per terminal, its automaton's store names made so far (`_made_languages`), looked up once
        self._languages: list[dict[int, str] | None] = [None] * len(compiled.terminals)
        self._recent: dict[int, list[tuple[int, Scan]]] = {}  # t -> its last wide scans (`_scan_near`)
        self.tokens = token_bytes(vocab)  # the rows that scans walk
        self._first_starts = self.tokens.first_starts  # first byte -> where its rows begin
        # how deep `_scan_near` compares states (read once, as the memo budgets)
        self._near_depth = _near_depth(self.tokens)
        self.token_ids = self.tokens.ids  # row -> token id
        self.size = vocab.size
        self.n_words = -(-vocab.size // 32)
        # what small tree levels read, their parts made in C (`_scan.SmallLevel`): the tables
        # above as they are read, the follow lists and first bytes that pick the candidates
        self._parts = _scan.PartMaker(self._tables, self.tokens.native, self.n_words, self.token_limits,
                                      self._follow_lists, _first_bytes(self._openers), TokenSet, self.ref,
                                      BUCKETED_ROWS)
        self._all: TokenSet | None = None  # every normal token: any!'s first part, made on first use
        # (follow list, split rows, split positions) -> the small tree over them (`_child`)
        self._small_trees: dict[tuple[tuple[int, ...], bytes, bytes], Tree] = {}
        self._inside: dict[tuple[int, int], TokenSet] = {}
        self._inside_within: dict[tuple[int, int, int], TokenSet] = {}  # token-limited terminals only
        self._ends: dict[tuple[int, int], dict[int, TokenSet]] = {}
        self._mid: dict[tuple[int, int], Tree] = {}
        # Lazy parts are built under this lock (re-entrant: a build asks for other parts)
        # and published once, so threads sharing the index share one object per part.
        self._build_lock = threading.RLock()
        # Exact memos filled by every Engine of this index, least recently used evicted
        # past their budgets (grammarc.tokens.memo; budgets read when the index is made).
        self.masks = Memo(memo.MASK_BYTES)  # (engine state, empty text) -> packed mask
        self.walks = Memo(memo.WALK_BYTES)  # (tree serial, Level) -> tuple of TokenSets
        self.summaries = Memo(memo.SUMMARY_BYTES)  # (tree serial, LR states) -> engine.WalkSummary

    def memo_bytes(self) -> dict[str, int]:
        """What the memos hold, counted as they count it (for reports and benchmarks)."""
        return {"masks": self.masks.nbytes, "walks": self.walks.nbytes, "summaries": self.summaries.nbytes}

    # -- the two parts ----------------------------------------------------------------
    def inside(self, t: int, q: int) -> TokenSet:
        """The tokens whose bytes all stay inside `t` from state `q`."""
        found = self._inside.get((t, q))
        if found is None:
            self._build_state(t, q)
            found = self._inside[(t, q)]
        return found

    # -- except!(X, n): token budgets ---------------------------------------------------
    def inside_within(self, t: int, q: int, budget: int) -> TokenSet:
        """The tokens of ``inside(t, q)`` after which the token-limited terminal `t` can
        still end with the ``budget - 1`` tokens left: the last token of a budget must not
        stop part way (e.g. inside a UTF-8 character), nor may an earlier one stop where
        the tokens left cannot finish the terminal (`can_finish`)."""
        budget = min(budget, self.terminals[t].dfa.n_states + 1)
        key = (t, q, budget)
        found = self._inside_within.get(key)
        if found is None:
            with self._build_lock:
                found = self._inside_within.get(key)
                if found is None:
                    ids = [tokens.ids() for end, tokens in self._inside_ends(t, q).items()
                           if self.can_finish(t, end, budget - 1)]
                    found = TokenSet.of(np.concatenate(ids) if ids else np.zeros(0, np.int64), self.n_words)
                    self._inside_within[key] = found
        return found

    def can_finish(self, t: int, q: int, budget: int) -> bool:
        """Whether terminal `t` in DFA state `q` can end at a token boundary within `budget`
        more tokens that stay inside it (0: only if `q` accepts). A shortest way never
        revisits a state, so budgets beyond the DFA's size change nothing."""
        accept = self.terminals[t].dfa.accept
        reached = {q}  # states reachable with the tokens spent so far
        frontier = {q}
        for _ in range(min(budget, self.terminals[t].dfa.n_states)):
            if any(accept[s] for s in reached):
                return True
            frontier = {end for s in frontier for end in self._inside_ends(t, s)} - reached
            if not frontier:
                break
            reached |= frontier
        return bool(any(accept[s] for s in reached))

    def _inside_ends(self, t: int, q: int) -> dict[int, TokenSet]:
        """DFA state -> the tokens of ``inside(t, q)`` that end in it."""
        key = (t, q)
        found = self._ends.get(key)
        if found is None:
            with self._build_lock:
                found = self._ends.get(key)
                if found is None:
                    lo, hi = self._first_byte_ranges(self.terminals[t].dfa.trans[q])
                    end_rows, end_states, _, _ = self._scan_ranges(t, lo, hi, 0, q)
                    found = self._ends[key] = {
                        int(s): TokenSet.of(self.token_ids[end_rows[end_states == s]], self.n_words)
                        for s in distinct(end_states)
                    }
        return found

    def mid(self, t: int, q: int) -> Tree:
        """Tokens that end `t` strictly inside themselves, starting from state `q`."""
        found = self._mid.get((t, q))
        if found is None:
            self._build_state(t, q)
            found = self._mid[(t, q)]
        return found

    # -- construction -----------------------------------------------------------------
    def _build_state(self, t: int, q: int) -> None:
        """Build and publish both parts of (t, q), once: under the lock, `_mid` is set
        last, so a reader that finds it finds `_inside` too."""
        with self._build_lock:
            if (t, q) not in self._mid:
                self._build_state_locked(t, q)

    def _build_state_locked(self, t: int, q: int) -> None:
        terminal = self.terminals[t]
        if terminal.any_token:
            if q == 0 and self._all is None:
                self._all = TokenSet.of(self.token_ids, self.n_words)
            inside = self._all if q == 0 else TokenSet.empty()
            tree = Tree()
        else:
            narrow, scan = self._state_walk(t, q)
            if narrow is not None and len(narrow[1]) // 4 < BUCKETED_ROWS:  # int32 splits: a small tree
                inside, rows, pos = narrow  # most states: no Scan, the walk's buffers go to the tree
                tree = self._child(t, rows, pos, None) or Tree()
            else:
                if scan is None:
                    scan = _narrow_scan(*narrow)
                inside = _inside_set(scan, self.tokens, self.n_words)
                tree = self._tree(t, scan)
        self._inside[(t, q)] = inside
        self._mid[(t, q)] = tree

    def _state_walk(self, t: int, q: int) -> "tuple[tuple[TokenSet, bytes, bytes] | None, Scan | None]":
        """(narrow walk, None) or (None, wide scan) of `q`: what the automaton's walked states
        (`scan_cache.walked_states`) kept from an earlier index, else walked when its first
        bytes' rows are few, else found in the store, else walked (narrow but for rows stepped
        over), else scanned wide. The library's and the JSON primitives' automata are the
        same objects in every grammar that has them, so a new grammar's index meets their
        states walked already: ~10-40 us each (a walk, or the store's lookup and the kin's
        bookkeeping) become one dictionary read."""
        walked = self._walked_of(t)
        known = walked.get(q)
        if known is not None:
            if len(known) == 3:  # (inside set, split rows, split positions)
                return known, None
            scan = known[0]()  # (the scan held weakly, its kin profile): the store bounds wide scans
            if scan is not None:
                self._remember(t, q, known[1], scan)  # as `_stored_scan` does: its kin stay fresh
                return None, scan
        # fewer first-byte rows than any wide state: walked at once, as the store holds wide
        # scans only (else refused from the first bytes, before any walk)
        narrow = self._narrow_walk(t, q, thin=False)
        scan = None if narrow is not None else self._stored_scan(t, q)  # a wide scan, found or made,
        if narrow is None and scan is None:  # is kept by `_remember`
            narrow = self._narrow_walk(t, q)
        if narrow is not None:
            walked[q] = narrow
            return narrow, None
        return None, scan if scan is not None else self._wide_scan(t, q)

    def _walked_of(self, t: int) -> dict[int, object]:
        """The walked states of `t`'s automaton over this vocabulary (`walked_states`, looked up
        once per terminal)."""
        walked = self._states_walked[t]
        if walked is None:
            walked = self._states_walked[t] = walked_states(self.terminals[t].dfa, self.vocab.key)
        return walked

    def _terminal_scan(self, t: int, q: int) -> Scan:
        """The whole vocabulary through terminal `t` from state `q`.

        Only the tokens whose first byte the state takes are walked. A scan that walks
        many of them is read off a recent scan of the same terminal where the two states
        agree far enough (`_scan_near`: a length counter's states), else kept in the shared
        store under the language that `t` accepts from `q` (the scan depends on nothing
        else), so every terminal, grammar and process with that language reuses it: found
        there, or read off a kin's (a state of any grammar that takes the same bytes), or
        composed. A narrow scan is cheaper to redo than to store."""
        narrow = self._narrow_walk(t, q)
        return self._wide_scan(t, q) if narrow is None else _narrow_scan(*narrow)

    def _wide_scan(self, t: int, q: int) -> Scan:
        """`_terminal_scan` of a state that is not narrow: read off a recent state of its
        terminal (`_scan_near`, by depth), or found in the store when its key is made
        already, or a kin's when no row parts the two (`_parting`), or found in the store,
        or read off a kin (along parting rows, else by parting bytes), or composed."""
        dfa = self.terminals[t].dfa
        row = np.asarray(dfa.trans[q])  # read once: a compact table gathers it
        # before the store: its key costs more than this (~1 ms for a counter)
        scan = self._scan_near(t, q, [(dfa, p, scan) for p, scan in self._recent.get(t, ())], by_bytes=False)
        key = kin.profile(row, bool(dfa.accept[q]))
        kindred = kin.KIN.candidates(self.vocab.key, key)
        store = parting = None
        if scan is None and self._known_language(t, q):  # a shared automaton's state: the store is cheap
            store = self._store(t, q)
            scan = store.get(FROM_START)
        if scan is None:  # a kin's scan, when no row parts the two: free (any other is read off below)
            parting = self._parting(t, q, kindred)
            if parting is not None and not len(parting[0]):
                scan = parting[1] if store is None else store.put(FROM_START, parting[1])  # (a miss: keep it)
        if scan is None:
            store = store or self._store(t, q)
            scan = store.get(FROM_START)
            if scan is None:
                scan = (self._read_off(t, q, *parting) if parting is not None else None) \
                    or self._scan_near(t, q, kindred, by_bytes=True) or self._scan_composed(t, q)
                scan = store.put(FROM_START, scan)
        self._remember(t, q, key, scan)
        return scan

    def _stored_scan(self, t: int, q: int) -> Scan | None:
        """The store's scan of `q`'s language when its name is made already (a state of an
        automaton that grammars share: JSON's separators, strings, numbers), else None. The
        store holds wide scans only, so a state found there is not walked first to learn
        that it is wide (`_narrow_walk` gives up after `PERSIST_MIN_ROWS` rows): each new
        grammar's index meets the shared separators' states again."""
        name = self._languages_of(t).get(q)
        if name is None:
            return None
        scan = terminal_scans(name, self.vocab.key, len(self.token_ids)).get(FROM_START)
        if scan is not None:
            dfa = self.terminals[t].dfa
            self._remember(t, q, kin.profile(np.asarray(dfa.trans[q]), bool(dfa.accept[q])), scan)
        return scan

    def _remember(self, t: int, q: int, profile: bytes, scan: Scan) -> None:
        """Keep `q`'s wide scan among its terminal's recent ones (`_scan_near`), its kin, and
        its automaton's walked states (`_state_walk`), with the profile its kin are found by."""
        walked = self._walked_of(t)
        known = walked.get(q)
        if known is None or len(known) != 2 or known[0]() is not scan:  # (a narrow walk: 3 long)
            walked[q] = (weakref.ref(scan), profile)
        recent = self._recent.setdefault(t, [])
        recent.insert(0, (q, scan))
        del recent[NEAR_CANDIDATES:]
        kin.KIN.add(self.vocab.key, profile, self.terminals[t].dfa, q, scan)

    def _known_language(self, t: int, q: int) -> bool:
        """Whether the store's name for `q`'s language is made already (`_language`): kept
        with the automaton, so a state of a terminal that grammars share (JSON's strings and
        separators) finds it, and a new one's costs ~20-300 us to make."""
        return q in self._languages_of(t)

    def _languages_of(self, t: int) -> dict[int, str]:
        """`_made_languages` of terminal `t`'s automaton (live: `_store` fills it)."""
        languages = self._languages[t]
        if languages is None:
            languages = self._languages[t] = _made_languages(self.terminals[t].dfa)
        return languages

    def _narrow_walk(self, t: int, q: int, *, thin: bool = True) -> "tuple[TokenSet, bytes, bytes] | None":
        """The inside set and the splits (int32 buffers) from `q` when it walks fewer than
        `PERSIST_MIN_ROWS` rows (those whose first byte `q` takes), or, with `thin`, more but
        walks at most `THIN_WALK_SHARE` of that many (the rest stepped over: a key's state
        after a common letter); else None (without `thin`, found from the first bytes alone,
        before any walk). One call (`_scan.scan_state`): most states of a new schema's
        terminals are narrow, and their walks cost less than picking the rows and packing the
        ids in NumPy, or than looking a wide scan up; `_build_state` takes the buffers as they
        are, without a `Scan` (a narrow scan is never stored)."""
        found = _scan.scan_state(self._table(t), self.tokens.native, q, PERSIST_MIN_ROWS, self.n_words,
                                 int(PERSIST_MIN_ROWS * THIN_WALK_SHARE) if thin else 0)
        if found is None:
            return None
        packed, _, split_rows, split_pos = found
        return (None if packed is None else TokenSet._of_packed(packed)) or TokenSet.empty(), split_rows, split_pos

    def _scan_near(self, t: int, q: int, candidates: list[tuple[DFA, int, Scan]], *, by_bytes: bool) -> Scan | None:
        """The scan from `q` read off that of a candidate state `p` (its automaton,
        `p`, its scan) that walks every token of some rows as `q` does: the tokens of up to d
        bytes when the two behave alike on every string that long (`_scan.agree_depth`), or, with
        `by_bytes`, the tokens without a byte on which the two part (`_scan.agree_bytes`);
        only the other rows are walked. A length counter's state after k characters (new to
        every grammar, met once, ~2-4 ms to scan whole) agrees so with the counter's state a
        token earlier (the terminal's last wide scans here are its candidates); a string
        body that a terminal goes on from after the closing quote (``ws? ":" ws? string ws?
        "}"``) with any string body but at the quote (`kin`). Compared as deep as pays
        (`NEAR_ENOUGH_SHARE`); None when none leaves under `NEAR_MAX_SHARE` of the rows to
        walk (`KIN_MAX_SHARE` with `by_bytes`)."""
        if not candidates:
            return None
        dfa, tokens = self.terminals[t].dfa, self.tokens
        table = self._table(t)
        enough = self._near_depth
        most = (KIN_MAX_SHARE if by_bytes else NEAR_MAX_SHARE) * len(tokens.ids)
        walked, base, deepest, live = None, None, -2, None
        for other, p, scan in candidates:
            pair = (table, q, walk_table(other), p)
            depth = _scan.agree_depth(*pair, enough)
            if not by_bytes and depth <= deepest:
                continue  # its rows would be no fewer than those of the deeper candidate before it
            if depth >= 1 and live is None:  # the two die alike on every first byte: the
                live = np.asarray(dfa.trans[q]) >= 0  # rows of the others scan to nothing from both
            rows = tokens.longer_than(depth, live if depth >= 1 else None)
            parting = _scan.agree_bytes(*pair, KIN_MAX_PAIRS, KIN_MAX_PARTING) \
                if by_bytes and depth < enough else None
            if parting is not None:
                rows = _fewer(rows, tokens, parting, depth, most)
            if walked is None or len(rows) < len(walked):
                walked, base, deepest = rows, scan, depth
                if depth >= enough:
                    break
        if walked is None or len(walked) > most:
            return None
        return self._read_off(t, q, walked, base)

    def _parting(self, t: int, q: int, candidates: list[tuple[DFA, int, Scan]]) -> "tuple[np.ndarray, Scan] | None":
        """(the rows on which walks from `q` and a kin's state part, the kin's scan) for the
        first of the `PARTING_TRIES` smallest candidates (automaton, state, scan) whose rows
        are bounded (`_scan.parting_rows` within the `PARTING_*` limits); None when none is
        (or with a negative `PARTING_MAX_ROWS`: never). Skipped: another state of the same
        automaton unless the two are alike (`_alike`: a key trie's root beside its other
        states, where the string body of another automaton has left the few candidates kept
        per profile; not a length counter's neighbour, which `_scan_near` reads off by
        depth), an automaton `PARTING_LARGER` states larger (a counter of thousands of
        states beside a string body), which would pair with many of q's states before giving
        up, and a pair of automata whose states, twice over, outnumber `PARTING_MAX_PAIRS` (a
        counter of thousands of states beside a key trie: ~1-3 ms before giving up, where
        every read-off found on 30 MaskBench schemas needed under half of the budget)."""
        if PARTING_MAX_ROWS < 0:
            return None
        dfa, table, tried = self.terminals[t].dfa, self._table(t), 0
        row = np.asarray(dfa.trans[q])
        for other, p, scan in sorted(candidates, key=lambda candidate: candidate[0].n_states):
            if other is dfa:
                if p != q and not _alike(row, np.asarray(dfa.trans[p])):
                    continue
            elif other.n_states > dfa.n_states + PARTING_LARGER:
                continue
            pairs = 2 * (dfa.n_states + other.n_states)
            if pairs > PARTING_MAX_PAIRS:
                continue  # each state of either could not pair twice within the budget
            tried += 1
            rows = _scan.parting_rows(table, q, walk_table(other), p, self.tokens.native, pairs, PARTING_MAX_EDGES,
                                      PARTING_MAX_ROWS)
            if rows is not None:
                return np.frombuffer(rows, np.int32), scan
            if tried == PARTING_TRIES:
                break
        return None

    def _read_off(self, t: int, q: int, walked: np.ndarray, base: Scan) -> Scan:
        """The scan from `q`, given that every row but `walked` scans from q as in `base`
        (`_scan.read_off`: only those are walked); `base` itself when they too scan alike."""
        if not len(walked):
            return base
        tokens = self.tokens
        found = _scan.read_off(self._table(t), tokens.native, q, np.ascontiguousarray(walked, dtype=np.int32),
                               base.inside.view(np.uint8), base.split_rows, base.split_pos,
                               _inside_set(base, tokens, self.n_words), self.n_words)
        if found is None:
            return base  # the walked tokens too scan alike: share the scan and what is made from it
        inside, split_rows, split_pos, packed = found
        scan = Scan(np.frombuffer(inside, dtype=bool), np.frombuffer(split_rows, np.int32),
                    np.frombuffer(split_pos, np.int32))
        edited = TokenSet._of_packed(packed) or TokenSet.empty()
        with _weak_lock:
            _inside_sets[scan] = edited  # `_inside_set` finds it
        return scan

    def _store(self, t: int, q: int) -> TerminalScans:
        """The shared scans of the language `t` accepts from `q` (`_language`)."""
        name = self._languages_of(t).get(q) or _language(self.terminals[t].dfa, q, self._table(t))
        return terminal_scans(name, self.vocab.key, len(self.token_ids))

    def _scan_composed(self, t: int, q: int) -> Scan:
        """The scan from `q`, its wide first-byte groups read from shared scans.

        The tokens whose first byte leads `q` to state `p` scan from `q` as they scan from
        `p` once that byte is read. When many do (`SHIFTED_MIN_SHARE`), `p`'s scan after a
        first byte (`AFTER_FIRST_BYTE`: every token, in the shared store) answers for them:
        a state no grammar had before, such as a key's trie state after the opening quote,
        sends most tokens to states that every grammar has (the body of any string, a
        UTF-8 character's continuation). Those rows are sliced out of the shared scans, the
        others walked. A shared scan is made once earlier requests needed as many rows as
        it walks (`_shifted_scan`): a state met once (a length counter's) is cheaper to walk
        in part than to scan whole."""
        dfa = self.terminals[t].dfa
        targets = np.asarray(dfa.trans[q])
        starts = self._first_starts
        live = np.flatnonzero(targets >= 0)
        sizes = np.bincount(targets[live], weights=starts[live + 1] - starts[live], minlength=dfa.n_states)
        n_rows = len(self.token_ids)
        shifted = {p: scan for p in np.flatnonzero((sizes > 0) & (sizes >= SHIFTED_MIN_SHARE * n_rows)).tolist()
                   for scan in [self._shifted_scan(t, p, int(sizes[p]))] if scan is not None}
        taken = np.zeros(dfa.n_states, dtype=bool)  # the states whose rows a shared scan gives
        taken[list(shifted)] = True
        walked = live[~taken[targets[live]]]
        inside = np.zeros(n_rows, dtype=bool)
        _, _, split_rows, split_pos = self._scan_ranges(t, *joined(starts[walked], starts[walked + 1]), 0, q,
                                                        inside=inside)
        rows_parts, pos_parts = [split_rows], [split_pos]
        for p, scan in shifted.items():
            for lo, hi in _runs(np.flatnonzero(targets == p), starts):
                inside[lo:hi] = scan.inside[lo:hi]
                a, b = np.searchsorted(scan.split_rows, (lo, hi))
                rows_parts.append(scan.split_rows[a:b])
                pos_parts.append(scan.split_pos[a:b])
        if len(rows_parts) == 1:
            return Scan(inside, split_rows, split_pos)
        return Scan(inside, *_by_row(rows_parts, pos_parts))

    def _shifted_scan(self, t: int, p: int, rows: int) -> Scan | None:
        """The shared scan of `p`'s language after a first byte, for `rows` of it; None until
        the requests for it, this one included, asked for as many rows as it walks (the
        whole vocabulary), or this one alone for half of them: made on the first request for
        a string body (most of the vocabulary each time), the twentieth for a UTF-8
        continuation (a lead byte's ~5%), never for a state met once with a few rows."""
        store = self._store(t, p)
        scan = store.get(AFTER_FIRST_BYTE)
        n_rows = len(self.token_ids)
        asked = store.ask(AFTER_FIRST_BYTE, rows) if scan is None else 0
        if scan is None and (asked >= SHIFTED_AFTER * n_rows or rows >= SHIFTED_NOW * n_rows):
            scan = store.put(AFTER_FIRST_BYTE, self._scan_after_first_byte(t, p))
        return scan

    def _scan_after_first_byte(self, t: int, p: int) -> Scan:
        """Every token from its second byte through `t` from state `p` (a split right after
        the first byte when `p` accepts): how a token scans from any state that its first
        byte takes to `p`."""
        inside = np.zeros(len(self.token_ids), dtype=bool)
        everything = np.array([0], dtype=np.int64), np.array([len(inside)], dtype=np.int64)
        _, _, split_rows, split_pos = self._scan_ranges(t, *everything, 1, p, split_at_start=True, inside=inside)
        return Scan(inside, split_rows, split_pos)

    def _first_byte_ranges(self, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The runs of token rows whose first byte a DFA state takes, given its transitions
        `row` (`joined` ranges)."""
        starts = self._first_starts
        live = np.flatnonzero(row >= 0)
        return joined(starts[live], starts[live + 1])

    def _scan_ranges(self, t: int, lo: np.ndarray, hi: np.ndarray, start: int, q: int, *,
                     split_at_start: bool = False, inside: np.ndarray | None = None):
        """`_scan` over every row of the ranges ``[lo[i], hi[i])``, each from byte `start`;
        with `inside` (bool over rows) the rows that stay inside are flagged there instead of
        returned (`grammarc.tokens._scan.scan_ranges`)."""
        out = _scan.scan_ranges(self._table(t), self.tokens.native, lo, hi, start, q, split_at_start,
                                None if inside is None else inside.view(np.uint8))
        return tuple(np.frombuffer(part, np.int32) for part in out)

    def _scan(self, t: int, rows: np.ndarray, pos: np.ndarray, q: int):
        """Walk terminal `t`'s DFA from state `q` over each token row from `pos`.

        Returns the rows that stay alive to their end and the DFA state each ends in, and
        the (row, position) pairs where the DFA accepts strictly after `pos` and strictly
        before the token's end (int32 arrays; `grammarc.tokens._scan` does the walk).
        """
        out = _scan.scan(self._table(t), self.tokens.native, np.ascontiguousarray(rows, dtype=np.int32),
                         np.ascontiguousarray(pos, dtype=np.int32), q)
        return tuple(np.frombuffer(part, np.int32) for part in out)

    def _table(self, t: int) -> _scan.Table:
        table = self._tables[t]
        if table is None:
            table = self._tables[t] = walk_table(self.terminals[t].dfa)
        return table

    def _tree(self, previous: int, scan: Scan) -> Tree:
        """The subtree of `scan`'s splits: the token suffixes that start right after
        `previous`, read through the process's shared `Suffixes` when they are many (its
        parts made when first read)."""
        rows, pos = scan.split_rows, scan.split_pos
        if not len(rows):
            return Tree()
        if len(rows) >= BUCKETED_ROWS:
            return Tree(_Level(self, previous, shared(scan, self.tokens), True))
        return Tree(_scan.SmallLevel(self._parts, previous, rows, pos))

    def _child(self, previous: int, rows: bytes, pos: bytes, after: int | None) -> "Tree | None":
        """The subtree of a part's splits (int32 buffers, as its walk gives them; `after`:
        their next bytes, `Suffixes.byte_set`, or None to find them); None without splits.

        A small one is made once per (splits, terminals that may follow `previous`), all a
        small level depends on: every key of a JSON object ends inside the same tokens (the
        423 of Llama-3 that start with the closing quote), and each key's literal is a
        terminal of its own, followed by the same separator; sharing the subtree makes its
        parts once (and its walks, from equal LR states, meet the memo)."""
        n = len(rows) // 4
        if not n:
            return None
        if n < BUCKETED_ROWS:
            key = (self._follow_lists[previous], rows, pos)
            tree = self._small_trees.get(key)
            if tree is None:
                tree = self._small_trees[key] = Tree(_scan.SmallLevel(self._parts, previous, rows, pos))
            return tree
        suffixes = Suffixes(self.tokens, np.frombuffer(rows, np.int32), np.frombuffer(pos, np.int32), after)
        return Tree(_Level(self, previous, suffixes, False))

    def _tree_part(self, level: _Level, u: int, starts: np.ndarray) -> "tuple[TokenSet | None, Tree | None]":
        """The part of terminal `u` in the big tree over `level`: its suffixes at `starts`
        (those whose next byte opens `u`), scanned from `u`'s start (called under the build
        lock)."""
        suffixes = level.suffixes
        limit = self.terminals[u].token_limit
        if limit is not None:
            return self._limited_part(u, suffixes.rows, suffixes.pos, starts, limit)
        if level.shared:  # its walks are its suffixes' (one per automaton)
            walk = suffixes.part(self.terminals[u].dfa, lambda: self._walked(u, suffixes.rows, suffixes.pos, starts))
        else:
            walk = self._walked(u, suffixes.rows, suffixes.pos, starts)
        tokens, rows, pos, after = walk
        child = self._child(u, rows, pos, after)
        return _NO_PART if tokens is None and child is None else (tokens, child)

    def _small_limited(self, u: int, rows: bytes, pos: bytes) -> "tuple[TokenSet | None, Tree | None]":
        """The part of the token-limited terminal `u` over a small level's suffixes (int32
        buffers), which the compiled level leaves to Python (`_scan.SmallLevel`)."""
        with self._build_lock:
            return self._limited_part(u, np.frombuffer(rows, np.int32), np.frombuffer(pos, np.int32), None,
                                      self.token_limits[u])

    def _small_big_child(self, u: int, rows: bytes, pos: bytes, after: int) -> "Tree | None":
        """The child of a small level's part with `BUCKETED_ROWS` splits or more (rare: its
        suffixes went on through `u` to many splits), which the compiled level leaves to Python."""
        with self._build_lock:
            return self._child(u, rows, pos, after)

    def _limited_part(self, u: int, rows: np.ndarray, pos: np.ndarray, starts: np.ndarray | None,
                      limit: int) -> "tuple[TokenSet | None, Tree | None]":
        """The part of the token-limited terminal `u` (``except!(X, n)``) over the suffixes
        ``(rows, pos)`` at `starts` (None: those whose next byte opens `u`): the token
        spends one of `u`'s budget, so the rest must finish it (`can_finish`)."""
        if starts is None:
            next_byte = np.frombuffer(_scan.next_bytes(self.tokens.native, rows, pos)[0], np.uint8)
            starts = np.flatnonzero(self._openers[u][next_byte])
        end_rows, end_states, split_rows, split_pos = self._scan(u, rows[starts], pos[starts], 0)
        finish = [self.can_finish(u, int(s), limit - 1) for s in end_states.tolist()]
        end_rows = end_rows[np.array(finish, dtype=bool)] if len(end_rows) else end_rows
        tokens = TokenSet.of(self.token_ids[end_rows], self.n_words) if len(end_rows) else None
        child = self._child(u, split_rows.tobytes(), split_pos.tobytes(), None)
        return _NO_PART if tokens is None and child is None else (tokens, child)

    def _walked(self, u: int, rows, pos, starts: np.ndarray | None) -> tuple:
        """(tokens, split rows, split positions, the bytes right after the splits as an int)
        of terminal `u` over the suffixes ``(rows, pos)`` (int32 buffers) at `starts` (None:
        those whose next byte opens `u`): picked, walked and packed in one call
        (`_scan.scan_part`); the splits come back as int32 buffers (bytes)."""
        picks = None if starts is None else np.asarray(starts, dtype=np.int64)
        packed, rows, pos, after = _scan.scan_part(self._table(u), self.tokens.native, rows, pos, picks, self.n_words)
        return None if packed is None else TokenSet._of_packed(packed), rows, pos, after


# A tree's root level over at least this many token suffixes reads them through the
# process's shared `Suffixes`; another level that big is made whole on first read, picking
# each next terminal's suffixes by their next byte (`Suffixes.taking`), and then let go
# (`_Level`).
BUCKETED_ROWS = 1024


# The inside set of a scan, made once per scan: a scan from the shared store (a JSON string
# body, whitespace, a number) is met by every grammar's index, and packing its 100k+ token
# ids costs more than the rest of the state's build. Lives as long as the scan does.
_inside_sets: "weakref.WeakKeyDictionary[Scan, TokenSet]" = weakref.WeakKeyDictionary()
_weak_lock = threading.Lock()  # guards the module's weak tables (inside sets, pair arguments)


def _narrow_scan(inside: TokenSet, rows: bytes, pos: bytes) -> Scan:
    """A narrow walk (`TokenIndex._narrow_walk`) as a `Scan`, its inside set known."""
    scan = Scan(None, np.frombuffer(rows, np.int32), np.frombuffer(pos, np.int32))
    with _weak_lock:
        _inside_sets[scan] = inside
    return scan


def _inside_set(scan: Scan, tokens: TokenBytes, n_words: int) -> TokenSet:
    """`scan.inside` (bool over token rows) as a set of token ids (the scan and the tokens
    belong to one vocabulary). A narrow scan's set is made with it (`_narrow_walk`), and a
    scan read off another's is edited from that one's (`_scan_near`)."""
    with _weak_lock:
        found = _inside_sets.get(scan)
    if found is None:
        words = np.zeros(n_words, dtype=np.uint32)
        _scan.pack_rows(scan.inside.view(np.uint8), tokens.ids, words)
        found = TokenSet.from_words(words) or TokenSet.empty()
        with _weak_lock:
            found = _inside_sets.setdefault(scan, found)
    return found


# automaton -> its `walk_table`, as long as it lives
_walk_tables: "weakref.WeakKeyDictionary[object, _scan.Table]" = weakref.WeakKeyDictionary()


def walk_table(dfa) -> _scan.Table:
    """`dfa`'s transitions as the walks read them (`_scan.Table`: dense or comb, with its
    accepting states; checked once, and each state's loop test kept), one per automaton
    while it lives: kin are other grammars' terminals, and grammars share automata (JSON's
    strings and separators)."""
    with _weak_lock:
        found = _walk_tables.get(dfa)
    if found is None:
        trans = dfa.trans
        accept = np.ascontiguousarray(dfa.accept, dtype=np.bool_)
        if isinstance(trans, CombTable):
            table = _scan.Table(None, np.ascontiguousarray(trans.base, dtype=np.int64),
                                np.ascontiguousarray(trans.check, dtype=np.int32),
                                np.ascontiguousarray(trans.next, dtype=np.int32), accept)
        else:
            table = _scan.Table(np.ascontiguousarray(trans, dtype=np.int32), b"", b"", b"", accept)
        with _weak_lock:
            found = _walk_tables.setdefault(dfa, table)
    return found


# automaton -> state -> the name its scans are stored under, for automata of more than
# KEYED_MAX_STATES states (as long as the automaton lives)
_names: "weakref.WeakKeyDictionary[DFA, dict[int, str]]" = weakref.WeakKeyDictionary()


def _language(dfa: DFA, q: int, table: _scan.Table) -> str:
    """What the store keeps the scans from `q` under: the language's `suffix_key`; or, when it
    has more than `KEYED_MAX_STATES` states, a name of this state's own (`scan_cache.unkeyed`,
    kept per automaton: grammars that share it share its scans). A language that big (an
    object's other keys after the quote, a length counter's state) is new to every grammar,
    and its canonical code costs up to ~1 ms; only an automaton that big is searched
    (`_scan.reaches_more`, one byte per run of each state it visits, the table's cuts, made
    on the way and kept: it stops past `KEYED_MAX_STATES` states, where `DFA.byte_runs`, the
    runs of every state, reads the automaton's whole table first, ~1.1 ms for a
    ``maxLength: 255`` string's 5,103 states). Kept with the automaton (`_made_languages`)."""
    if dfa.n_states <= KEYED_MAX_STATES:
        return suffix_key(dfa, q)
    big = _scan.reaches_more(table, q, KEYED_MAX_STATES, b"")
    return per_state(_names, dfa).setdefault(q, unkeyed() if big else suffix_key(dfa, q))


def _made_languages(dfa: DFA) -> dict[int, str]:
    """`dfa`'s made `_language`s by state (live, read-only: filled as they are made)."""
    return made_keys(dfa) if dfa.n_states <= KEYED_MAX_STATES else per_state(_names, dfa)


def _openers(terminals) -> np.ndarray:
    """bool [terminal, byte]: whether the terminal's first byte can be that byte. any!
    has none here: it starts only at a token boundary, never inside a token. The start
    rows are gathered into one array and compared once (a new schema's index makes this
    before its first mask: a row made per terminal and stacked cost ~3 us a terminal)."""
    rows = [_NO_ROW if terminal.any_token else terminal.dfa.trans[0] for terminal in terminals]
    out = (np.array(rows) if rows else np.zeros((0, 256), dtype=np.int32)) >= 0
    out.flags.writeable = False
    return out


_NO_ROW = np.full(256, -1, dtype=np.int32)  # any!'s start row as `_openers` reads it: no byte


@functools.lru_cache(maxsize=16)
def _near_depth(tokens: TokenBytes) -> int:
    """How deep `_scan_near` compares states over `tokens` (a function of the vocabulary,
    which every new grammar's index asks for: ~20 us each time)."""
    return tokens.depth_leaving(NEAR_ENOUGH_SHARE)


def _first_bytes(flags: np.ndarray) -> bytes:
    """Each row of bool [n, 256] as 32 bytes (bit b % 8 of byte b // 8 = byte b), end to end:
    what `_scan.PartMaker` tests a level's next bytes against."""
    return np.packbits(flags, axis=1, bitorder="little").tobytes()


_indexes: "weakref.WeakKeyDictionary[CompiledGrammar, dict[str, TokenIndex]]" = weakref.WeakKeyDictionary()
_indexes_lock = threading.Lock()


def token_index(compiled: CompiledGrammar, vocab: Vocabulary) -> TokenIndex:
    """The shared index of (compiled grammar, vocabulary), made on first use.

    Weakly keyed by the compiled grammar, which the index does not refer to (only to its
    terminals and follow sets): once the grammar and its engines are dropped, the index
    and its memos are freed with it."""
    with _indexes_lock:
        per_vocab = _indexes.get(compiled)
        if per_vocab is None:
            per_vocab = _indexes[compiled] = {}
        index = per_vocab.get(vocab.key)
        if index is None:
            index = per_vocab[vocab.key] = TokenIndex(compiled, vocab)
    return index
