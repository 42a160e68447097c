"""Steering to a shortest completion (``finish_after``), shared by the logits processor and the decode loop.

After ``finish_after`` generated tokens a sequence is *steered*: only tokens that spell a
non-empty prefix of a planned completion stay allowed, and EOS once the plan is used up,
so even a random model ends with a complete text. The plan is a shortest completion in
bytes, each byte one single-byte token of the vocabulary (the *alphabet*); a multi-byte
token that spells a prefix of the plan is allowed too, so the number of tokens left never
exceeds the number of planned bytes.

**Planning is a shortest path over parser configurations, not over texts.** A search over
texts explodes on optional whitespace: every choice of whitespace between two JSON tokens
leaves a different LR stack until the enclosing rule is reduced, so the configurations
within a few dozen bytes of a document's end grow exponentially. `CompletionPlanner`
instead reads the engine's configuration (`Engine.configuration`: items of a GSS vertex,
a terminal and a DFA state) and decomposes the rest of the text exactly:

* finish the item's terminal: the shortest path from its DFA state to an accepting one;
* then reduce the stack to the accepting LR state: the LR state ``s`` on top was entered
  by a symbol that some kernel item ``A -> α . β`` of ``s`` eventually reduces, so the
  cheapest way on is to derive ``β`` as briefly as possible (minimal yields, Knuth's
  algorithm), pop ``|α|`` vertices and take the goto on ``A`` from each vertex found there.

That is Dijkstra's algorithm over pairs (LR state, GSS vertex under it), a set bounded by
the LR states times the vertices below the configuration (a handful for JSON), and the
answer is exact: the shortest completion over the alphabet, spelled from the minimal
yields along the cheapest path. Token-level rules are kept: ``any!`` is one token (one
planned byte, and steered with single-byte tokens only, since a longer token would be
taken whole), ``except!(X, n)`` counts one token per planned byte against its budget.

**Incremental.** `Steering` keeps the plan; each token that follows it shortens it, and
the planner runs again only when the text leaves the plan (a rollback, or a token chosen
before steering began). When no plan exists (the vocabulary lacks a needed byte as a
single-byte token, or the search budget runs out) `Steering` says so once with a
`SteeringWarning` and the sequence goes on under the plain grammar mask.
"""

from __future__ import annotations

import heapq
import itertools
import warnings
import weakref
from typing import Iterable, Sequence

import numpy as np

from grammarc.engine import Engine
from grammarc.errors import GrammarcError
from grammarc.lowering.compiler import CompiledGrammar
from grammarc.runtime.gss import ancestors, parser_core
from grammarc.tokens.vocabulary import Vocabulary

__all__ = ["CompletionPlanner", "Steering", "SteeringError", "SteeringWarning", "shortest_completion"]

_INF = 1 << 60  # "no completion"; sums of finite costs stay far below it
DEFAULT_MAX_PAIRS = 200_000  # Dijkstra pops per plan before giving up (JSON needs tens)
DEFAULT_MAX_LENGTH = 1 << 20  # bytes a plan may have


class SteeringError(GrammarcError):
    """No completion could be planned; the message says why."""


class SteeringWarning(RuntimeWarning):
    """Steering was switched off for a sequence (no completion could be planned)."""


def _byte_rank(b: int) -> tuple[int, int]:
    """Which byte a plan uses when several are as short: letters, digits, punctuation, space, the rest."""
    c = chr(b)
    if c.islower() and b < 128:
        group = 0
    elif c.isupper() and b < 128:
        group = 1
    elif c.isdigit():
        group = 2
    elif 0x21 <= b <= 0x7E:
        group = 3
    elif b == 0x20:
        group = 4
    elif b < 128:
        group = 5
    else:
        group = 6
    return group, b


_PREFERENCE = sorted(range(256), key=_byte_rank)


# ------------------------------------------------------------------ the alphabet

_alphabets: "weakref.WeakKeyDictionary[Vocabulary, dict[int, int]]" = weakref.WeakKeyDictionary()


def single_byte_tokens(vocab: Vocabulary) -> dict[int, int]:
    """byte -> the smallest id of a (non-special) token that is exactly that byte."""
    table = _alphabets.get(vocab)
    if table is None:
        table = {}
        for b in range(256):
            ids = vocab.ids_for(bytes([b]))
            if ids:
                table[b] = min(ids)
        _alphabets[vocab] = table
    return table


# ------------------------------------------------------------------ the planner


class CompletionPlanner:
    """Shortest completions for one compiled grammar over one byte alphabet (see the module doc).

    Built once per (grammar, alphabet) and shared (`planner_for`); everything it derives
    from the grammar is computed on first use and kept: minimal lengths of every symbol,
    the kernel items of the LR states a plan passes through, shortest accepted strings of
    terminal DFA states.
    """

    def __init__(self, compiled: CompiledGrammar, alphabet: Iterable[int]):
        # Only the parts are kept, not `compiled` itself (planners live on their compiled
        # grammar: see `planner_for`).
        self._terminals = compiled.terminals
        self._n_nonterminals = len(compiled.bnf.nonterminals)
        self.core = parser_core(compiled)
        allowed = set(alphabet)
        self._order = np.array([b for b in _PREFERENCE if b in allowed], dtype=np.intp)
        bnf = compiled.bnf
        self._n_terminals = bnf.n_terminals
        self._rhs = [p.rhs for p in bnf.productions]
        self._lhs = [p.lhs for p in bnf.productions]
        self.any_token = any(t.any_token for t in self._terminals)
        self._paths: dict[tuple[int, int], bytes | None] = {}  # (terminal, dfa state) -> shortest rest
        self._strings: dict[int, bytes] = {}  # symbol -> its shortest yield
        self._length = self._symbol_lengths()
        self._kernels: dict[int, frozenset[tuple[int, int]]] = {0: frozenset({(0, 0)})}
        self._predecessor: dict[int, tuple[int, int]] | None = None
        self._exits: dict[int, tuple[tuple[int, int, int, int], ...]] = {}

    # -- queries ----------------------------------------------------------------------
    def plan(self, items: Iterable[tuple], *, max_pairs: int = DEFAULT_MAX_PAIRS,
             max_length: int = DEFAULT_MAX_LENGTH) -> bytes:
        """The shortest text over the alphabet after which a configuration is complete.

        `items` are an engine's ``(vertex, terminal, dfa state, tokens used)``
        (`Engine.configuration`) whose text is not complete yet. Raises `SteeringError`
        when no completion exists over the alphabet, when more than `max_pairs`
        (LR state, vertex) pairs were searched, or when the completion is longer than
        `max_length` bytes.
        """
        core = self.core
        order = itertools.count()
        heap: list = []
        for vertex, t, q, used in items:
            rest = self._terminal_rest(t, q, used)
            if rest is not None:
                heap.append((len(rest), next(order), core.shift_to[vertex.state][t], vertex, rest))
        heapq.heapify(heap)
        done: dict[tuple[int, object], object] = {}
        while heap:
            cost, _, state, vertex, back = heapq.heappop(heap)
            key = (state, vertex)
            if key in done:
                continue
            done[key] = back
            if state == core.accept_state:
                if cost > max_length:
                    raise SteeringError(f"the shortest completion is {cost} bytes, more than {max_length}")
                return self._spell(key, done)
            if len(done) > max_pairs:
                raise SteeringError(f"no completion found within {max_pairs} search steps")
            for dot, lhs, weight, production in self._exits_of(state):
                for base in ancestors(vertex, dot - 1):
                    nxt = core.goto[base.state][lhs]
                    if (nxt, base) not in done:
                        heapq.heappush(heap, (cost + weight, next(order), nxt, base, (key, production, dot)))
        missing = sorted(set(range(256)) - set(self._order.tolist()))
        raise SteeringError(
            "no completion can be spelled with the vocabulary's single-byte tokens"
            + (f" (it has none for {len(missing)} bytes, e.g. {bytes(missing[:8])!r})" if missing else "")
        )

    def length(self, symbol: int) -> int | None:
        """The length of the shortest yield of a BNF symbol over the alphabet (None: none)."""
        n = self._length[symbol]
        return None if n >= _INF else n

    # -- reconstruction ---------------------------------------------------------------
    def _spell(self, key: tuple, done: dict) -> bytes:
        parts: list[bytes] = []
        back = done[key]
        while isinstance(back, tuple):
            key, production, dot = back
            parts.append(self._yield(self._rhs[production][dot:]))
            back = done[key]
        parts.append(back)  # the rest of the item's terminal comes first
        return b"".join(reversed(parts))

    def _yield(self, symbols: Sequence[int]) -> bytes:
        """The shortest yield of a sentential form (iterative: derivations may be deep)."""
        out = bytearray()
        stack = list(reversed(symbols))
        while stack:
            symbol = stack.pop()
            known = self._strings.get(symbol)
            if known is not None:
                out += known
            elif symbol < self._n_terminals:
                out += self._strings.setdefault(symbol, self._terminal_rest(symbol, 0, 0) or b"")
            else:
                stack.extend(reversed(self._rhs[self._choice[symbol - self._n_terminals]]))
        return bytes(out)

    # -- terminals --------------------------------------------------------------------
    def _terminal_rest(self, t: int, q: int, used: int) -> bytes | None:
        """The shortest bytes that end terminal `t` from DFA state `q` (`used` tokens already
        spent on it), one token per byte; None when it cannot end within the alphabet."""
        terminal = self._terminals[t]
        if terminal.any_token:  # one whole token; a started any! has already ended
            return bytes([int(self._order[0])]) if q == 0 and len(self._order) else None
        rest = self._paths.get((t, q), False)
        if rest is False:
            rest = self._paths[(t, q)] = _shortest_accepted(terminal.dfa, q, self._order)
        if rest is not None and terminal.token_limit is not None and len(rest) > terminal.token_limit - used:
            return None
        return rest

    # -- symbols ----------------------------------------------------------------------
    def _symbol_lengths(self) -> list[int]:
        """Minimal yield length of every symbol (Knuth's generalisation of Dijkstra), and
        `_choice`, a production of each nonterminal that achieves it; the choices are
        well founded, so expanding them always terminates."""
        n_t = self._n_terminals
        n_nt = self._n_nonterminals
        length = [_INF] * (n_t + n_nt)
        for t in range(n_t):
            rest = self._terminal_rest(t, 0, 0)
            if rest is not None:
                length[t] = len(rest)
                self._strings[t] = rest
        users: list[list[int]] = [[] for _ in range(n_nt)]
        missing = [0] * len(self._rhs)
        partial = [0] * len(self._rhs)
        heap: list[tuple[int, int]] = []
        for p, rhs in enumerate(self._rhs):
            for x in rhs:
                if x < n_t:
                    partial[p] = min(_INF, partial[p] + length[x])
                else:
                    users[x - n_t].append(p)
                    missing[p] += 1
            if missing[p] == 0 and partial[p] < _INF:
                heap.append((partial[p], p))
        heapq.heapify(heap)
        self._choice = [-1] * n_nt
        while heap:
            cost, p = heapq.heappop(heap)
            a = self._lhs[p]
            if self._choice[a] >= 0:
                continue
            self._choice[a] = p
            length[n_t + a] = cost
            for user in users[a]:  # once per occurrence of `a` in the user's right-hand side
                partial[user] = min(_INF, partial[user] + cost)
                missing[user] -= 1
                if missing[user] == 0 and partial[user] < _INF:
                    heapq.heappush(heap, (partial[user], user))
        return length

    # -- LR states --------------------------------------------------------------------
    def _exits_of(self, state: int) -> tuple[tuple[int, int, int, int], ...]:
        """``(pop, lhs, cost, production)`` for the kernel items ``A -> α . β`` of `state`:
        derive β (`cost` bytes), pop ``|α|`` vertices, goto on A; the cheapest per (pop, A)."""
        exits = self._exits.get(state)
        if exits is None:
            best: dict[tuple[int, int], tuple[int, int]] = {}
            for p, dot in self._kernel(state):
                if p == 0:
                    continue  # S' -> S . : the accepting state itself
                rhs = self._rhs[p]
                cost = min(_INF, sum(self._length[x] for x in rhs[dot:]))
                key = (dot, self._lhs[p])
                if cost < _INF and cost < best.get(key, (_INF, -1))[0]:
                    best[key] = (cost, p)
            exits = self._exits[state] = tuple((d, a, c, p) for (d, a), (c, p) in sorted(best.items()))
        return exits

    def _kernel(self, state: int) -> frozenset[tuple[int, int]]:
        """The LR(0) kernel items ``(production, dot)`` of `state`, rebuilt from the tables
        along a chain of predecessors (a state is its kernel, whichever predecessor)."""
        if state in self._kernels:
            return self._kernels[state]
        predecessor = self._predecessors()
        chain = []
        s = state
        while s not in self._kernels:
            chain.append(s)
            s = predecessor[s][0]
        for s in reversed(chain):
            before, symbol = predecessor[s]
            self._kernels[s] = frozenset(
                (p, d + 1) for p, d in self._closure(self._kernels[before])
                if d < len(self._rhs[p]) and self._rhs[p][d] == symbol
            )
        return self._kernels[state]

    def _predecessors(self) -> dict[int, tuple[int, int]]:
        """state -> (a state with a transition into it, the transition's symbol)."""
        if self._predecessor is None:
            out: dict[int, tuple[int, int]] = {}
            n_t = self._n_terminals
            for s, (row, gotos) in enumerate(zip(self.core.shift_to, self.core.goto)):
                for t, target in row.items():
                    out.setdefault(target, (s, t))
                for a, target in gotos.items():
                    out.setdefault(target, (s, n_t + a))
            self._predecessor = out
        return self._predecessor

    def _closure(self, kernel: frozenset[tuple[int, int]]) -> list[tuple[int, int]]:
        by_lhs = self._by_lhs
        items = list(kernel)
        seen_lhs: set[int] = set()
        for p, d in items:  # grows while iterating
            rhs = self._rhs[p]
            if d < len(rhs) and rhs[d] >= self._n_terminals:
                a = rhs[d] - self._n_terminals
                if a not in seen_lhs:
                    seen_lhs.add(a)
                    items.extend((q, 0) for q in by_lhs[a] if (q, 0) not in kernel)
        return items

    @property
    def _by_lhs(self) -> list[list[int]]:
        table = self.__dict__.get("_by_lhs_table")
        if table is None:
            table = [[] for _ in range(self._n_nonterminals)]
            for p, a in enumerate(self._lhs):
                table[a].append(p)
            self.__dict__["_by_lhs_table"] = table
        return table


def _shortest_accepted(dfa, start: int, order: np.ndarray) -> bytes | None:
    """The shortest bytes of `order` that lead `dfa` from `start` to an accepting state;
    among those, the first in the byte preference order (breadth-first, preferred bytes first)."""
    if dfa.accept[start]:
        return b""
    parent: dict[int, tuple[int, int] | None] = {start: None}
    frontier = [start]
    trans, accept = dfa.trans, dfa.accept
    while frontier:
        nxt = []
        for q in frontier:
            row = trans[q, order]
            for j in np.flatnonzero(row >= 0).tolist():
                r = int(row[j])
                if r in parent:
                    continue
                parent[r] = (q, int(order[j]))
                if accept[r]:
                    out = bytearray()
                    node = r
                    while parent[node] is not None:
                        node, byte = parent[node]
                        out.append(byte)
                    return bytes(reversed(out))
                nxt.append(r)
        frontier = nxt
    return None


_PLANNER_SLOT = "_grammarc_planners"  # on the compiled grammar: alphabet -> CompletionPlanner


_alphabet_keys: "weakref.WeakKeyDictionary[Vocabulary, frozenset[int]]" = weakref.WeakKeyDictionary()


def planner_for(engine: Engine) -> CompletionPlanner:
    """The shared planner of an engine's grammar over its vocabulary's single-byte tokens."""
    alphabet = _alphabet_keys.get(engine.vocab)
    if alphabet is None:
        alphabet = _alphabet_keys[engine.vocab] = frozenset(single_byte_tokens(engine.vocab))
    # Kept on the compiled grammar (a planner refers to its parser core, which refers to
    # the grammar: in a weak mapping keyed by the grammar it would never be freed).
    per_grammar = engine.compiled.__dict__.get(_PLANNER_SLOT)
    if per_grammar is None:
        per_grammar = engine.compiled.__dict__.setdefault(_PLANNER_SLOT, {})
    planner = per_grammar.get(alphabet)
    if planner is None:
        planner = per_grammar.setdefault(alphabet, CompletionPlanner(engine.compiled, alphabet))
    return planner


def shortest_completion(engine: Engine, *, max_pairs: int = DEFAULT_MAX_PAIRS,
                        max_length: int = DEFAULT_MAX_LENGTH) -> bytes:
    """The shortest text, one single-byte token per byte, after which the engine's text is
    complete (``b""`` when it already is, or the engine is finished).

    Exact (see the module doc). Raises `SteeringError` when no such text exists (the
    vocabulary lacks a needed byte) or the budgets run out; never returns a partial plan.
    """
    if engine.is_finished() or engine.accepts_eos():
        return b""
    return planner_for(engine).plan(engine.configuration(), max_pairs=max_pairs, max_length=max_length)


# ------------------------------------------------------------------ one sequence


class Steering:
    """``finish_after`` for one sequence: after `after` generated tokens, only tokens that
    follow the planned shortest completion, then `eos`.

    The plan is kept between steps: `consumed` shortens it by each token that follows it
    and drops it otherwise; the planner runs only when there is no plan (`plans` counts
    its runs). When planning fails the sequence is left to the plain mask, with one
    `SteeringWarning`.
    """

    def __init__(self, after: int, eos: int):
        if after < 0:
            raise ValueError(f"finish_after must be >= 0, got {after}")
        self.after, self.eos = after, eos
        self.plan: bytes | None = None
        self.plans = 0
        self.failure: str | None = None

    def active(self, n_generated: int) -> bool:
        """Whether the sequence is steered after `n_generated` tokens."""
        return self.failure is None and n_generated >= self.after

    def consumed(self, data: bytes) -> None:
        """The text grew by `data`: shorten the plan, or drop it when the text left it."""
        if self.plan is not None:
            self.plan = self.plan[len(data):] if data and self.plan.startswith(data) else None

    def drop(self) -> None:
        """Forget the plan (the text changed some other way, e.g. a rollback)."""
        self.plan = None

    def ensure(self, engine: Engine) -> bytes | None:
        """The plan, made now if there is none; None when steering is off."""
        if self.plan is None and self.failure is None:
            try:
                self.plan = shortest_completion(engine)
            except SteeringError as error:
                self._give_up(str(error))
            self.plans += 1
        return self.plan

    def fits(self, engine: Engine, token: int) -> bool:
        """Whether `token` spells a non-empty prefix of the plan (the grammar is not asked)."""
        vocab = engine.vocab
        data = vocab.tokens[token] if 0 <= token < vocab.size else b""
        if not data or not self.plan or not self.plan.startswith(data):
            return False
        return len(data) == 1 or not planner_for(engine).any_token

    def candidates(self, engine: Engine, allowed: np.ndarray) -> np.ndarray | None:
        """The ids of sorted `allowed` that follow the plan (EOS alone once it is used up);
        None when steering is off. Plans again once if none is allowed."""
        for attempt in range(2):
            plan = self.ensure(engine)
            if plan is None:
                return None
            if plan == b"":
                if engine.accepts_eos():
                    return np.array([self.eos], dtype=np.int64)
            else:
                steered = _members(self._plan_ids(engine, plan), allowed)
                if len(steered):
                    return steered
            self.plan = None
        self._give_up(f"the planned completion {plan[:40]!r} is not allowed by the grammar mask")
        return None

    def _plan_ids(self, engine: Engine, plan: bytes) -> np.ndarray:
        vocab = engine.vocab
        longest = 1 if planner_for(engine).any_token else len(plan)
        ids = {i for k in range(1, min(longest, _max_token_length(vocab)) + 1) for i in vocab.ids_for(plan[:k])}
        return np.array(sorted(ids), dtype=np.int64)

    def _give_up(self, why: str) -> None:
        self.failure, self.plan = why, None
        warnings.warn(f"finish_after: steering is off for this sequence: {why}", SteeringWarning, stacklevel=4)


_longest: "weakref.WeakKeyDictionary[Vocabulary, int]" = weakref.WeakKeyDictionary()


def _max_token_length(vocab: Vocabulary) -> int:
    n = _longest.get(vocab)
    if n is None:
        n = _longest[vocab] = max(map(len, vocab.tokens), default=0)
    return n


def _members(ids: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """The `ids` found in sorted `allowed` (a few ids against ~V: searchsorted, not a set op)."""
    if not len(allowed) or not len(ids):
        return ids[:0]
    at = np.minimum(np.searchsorted(allowed, ids), len(allowed) - 1)
    return ids[allowed[at] == ids]
