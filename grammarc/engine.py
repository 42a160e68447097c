"""The per-sequence engine: token masks, advance, rollback (DESIGN.md §8).

An engine's state is a set of items ``(vertex, terminal, dfa_state, spent)``, the same
items the recognizer steps (grammarc.runtime.stepping, the one stepping core): `spent`
counts, for ``except!(X, n)``, how many tokens have touched the terminal.
A mask is the union, over items, of

* ``index.inside(t, q)``  (tokens that stay inside the terminal; no parser work),
* the tokens of ``index.mid(t, q)`` whose terminal paths the parser can take from the
  item's stack (walked to full depth),

so it holds every token after which the text is still a prefix of the language (k = ∞)
and no other.

Three memos make that cheap, all exact:

* masks per state: GSS vertices are hash-consed (recognizer.py), so a state recurs
  whenever the stacks recur — across positions and documents, not only on replays;
* walk summaries per (tree node, LR states) (`walk_summary`): the part of a tree walk that
  the LR states alone decide — every shift after which no reduction can follow — merged
  into one token set. Long chains such as a token of 16 unary minus signs cost one lookup
  instead of 16 GSS levels. Only the rest (the frontier) is walked on GSS levels, built
  afresh for the walk with just the reductions its next terminals need
  (`ParserCore.shift`);
* walks per (tree, GSS level) of an item group: states that share an item's vertices
  share its walk (`TokenIndex.walks`).

Each memo is bounded by bytes and evicts the entries used least recently
(grammarc.tokens.memo); trees are keyed by their serial number, never by ``id()``.
"""

from __future__ import annotations

import operator
from collections import deque
from typing import Any

import numpy as np

from grammarc.errors import GrammarcError
from grammarc.ir import Grammar
from grammarc.lowering.compiler import CompiledGrammar, compile_grammar
from grammarc.runtime import _gss, stepping
from grammarc.runtime.gss import Level, Node, ParserCore, parser_core
from grammarc.runtime.stepping import Item
from grammarc.tokens.index import token_index
from grammarc.tokens.token_set import TokenSet
from grammarc.tokens.memo import set_bytes
from grammarc.tokens.tree import Tree
from grammarc.tokens.vocabulary import Vocabulary

State = frozenset[Item]  # a configuration: items (vertex, terminal, dfa state, tokens spent)

# The memos' budgets (bytes per token index, least recently used evicted) are in
# grammarc.tokens.memo: MASK_BYTES, WALK_BYTES, SUMMARY_BYTES.
_WALK_PARTS = 4  # a memoized walk keeps up to this many token sets unmerged
_INT32 = np.dtype(np.int32)
_NOTHING = TokenSet.empty()  # the mask of a finished engine


class TokenRejected(GrammarcError, ValueError):
    """`Engine.advance` was given a token that cannot continue the text (state unchanged)."""


class EngineError(GrammarcError, ValueError):
    """An engine was built or called with arguments it cannot use (nothing was changed)."""


class Engine:
    """Constrains one sequence. Compiled grammar and index are shared; only state is owned."""

    def __init__(self, grammar: Grammar | CompiledGrammar, vocab: Vocabulary, *, max_rollback: int = 64):
        if not isinstance(grammar, (Grammar, CompiledGrammar)):
            hint = " (build one with grammarc.Grammar.from_ebnf(text))" if isinstance(grammar, (str, bytes)) else ""
            raise EngineError(f"Engine needs a grammarc.Grammar or CompiledGrammar, got {type(grammar).__name__}{hint}")
        if not isinstance(vocab, Vocabulary):
            raise EngineError(f"Engine needs a grammarc.Vocabulary, got {type(vocab).__name__} "
                              "(build one with Vocabulary.from_tokenizer or Vocabulary.from_bytes)")
        if type(max_rollback) is not int or max_rollback < 0:
            raise EngineError(f"max_rollback must be a non-negative int, got {max_rollback!r}")
        compiled = grammar if isinstance(grammar, CompiledGrammar) else compile_grammar(grammar)
        self.compiled = compiled
        self.vocab = vocab
        self.index = token_index(compiled, vocab)
        self.core = parser_core(compiled)
        self.max_rollback = max_rollback
        self._terminals = compiled.terminals
        self._eos = TokenSet.of(np.array(sorted(vocab.eos_token_ids), dtype=np.int64), self.index.n_words)
        self._initial: State = stepping.initial(self.core)
        self._limits, self._limited = self.index.token_limits, self.index.limited  # except!(X, n)'s n, or None
        self._memo = self.index.masks  # (state, empty text) -> packed mask, shared by the index's engines
        # read once: `advance` runs per token
        self._size, self._token_bytes = vocab.size, vocab.tokens
        self._accepts_empty, self._n_words = compiled.accepts_empty, self.index.n_words
        self._special_ids, self._eos_ids = vocab.special_ids, vocab.eos_token_ids
        self._last_complete: tuple[State | None, bool] = (None, False)  # `_complete`'s last state and answer
        self.reset()

    # -- lifecycle --------------------------------------------------------------------
    def reset(self) -> None:
        """Back to the empty text."""
        self._state: State = self._initial
        self._text_len = 0
        self._finished = False
        # The state before each of the last `max_rollback` tokens (EOS included); text fed
        # with `advance_bytes` belongs to the token before it and is undone with the next.
        self._history: deque[tuple[State, int, bool]] = deque(maxlen=self.max_rollback)

    def clone(self) -> "Engine":
        """An independent engine at the same point; immutable parts are shared."""
        twin = object.__new__(Engine)
        twin.__dict__.update(self.__dict__)
        twin._history = deque(self._history, maxlen=self.max_rollback)
        return twin

    def rollback(self, n: int) -> None:
        """Undo the last `n` tokens given to `advance` (at most `max_rollback`), with any
        text given to `advance_bytes` after the first of them."""
        if type(n) is not int or n < 0 or n > len(self._history):
            raise EngineError(f"cannot roll back {n!r} tokens: {len(self._history)} can be undone")
        for _ in range(n):
            self._state, self._text_len, self._finished = self._history.pop()

    # -- queries ----------------------------------------------------------------------
    def is_finished(self) -> bool:
        """EOS was consumed, or the text is complete and nothing can extend it."""
        return self._finished or (self.accepts_eos() and not self._extendable())

    def accepts_eos(self) -> bool:
        """Whether the text so far is a complete string of the language."""
        if self._finished:
            return False
        return self._complete(self._state, self._text_len)

    def _extendable(self) -> bool:
        for node, t, q, k in self._state:
            terminal = self._terminals[t]
            if terminal.any_token:
                if q == 0:
                    return True
                continue
            if terminal.token_limit is not None and k >= terminal.token_limit:
                continue
            if (terminal.dfa.trans[q] >= 0).any():
                return True
        return False

    def packed_mask(self) -> np.ndarray:
        """The allowed tokens as uint32 words (a new array): bit i % 32 of word i // 32."""
        words = np.zeros(self.index.n_words, dtype=np.uint32)
        self._mask_tokens().or_into(words)
        return words

    def _mask_tokens(self) -> TokenSet:
        """The allowed tokens, as the masks' memo keeps them: a set, sparse where the mask
        touches few words (most masks of a schema: a few dozen of Llama-3's 4,008), so a
        memo entry costs what the mask holds rather than the vocabulary's width."""
        if self._finished:
            return _NOTHING
        # The EOS bit depends on the state and, for a grammar that accepts the empty text,
        # on whether the text is empty: a non-empty text can lead back to the very items
        # of the start (e.g. 'a' under (a*ba)*), where EOS is not allowed.
        key = (self._state, self._text_len == 0 and self._accepts_empty)
        tokens = self._memo.get(key)
        if tokens is None:
            parts = self._mask_parts(self._state)
            if self.accepts_eos():
                parts.append(self._eos)
            tokens = TokenSet.union(parts, self._n_words) or _NOTHING  # sparse parts: only their words touched
            tokens = self._memo.put(key, tokens, tokens.nbytes + 112 + set_bytes(self._state))
        return tokens

    def allowed_mask(self) -> np.ndarray:
        """Bool array over the vocabulary: token i may come next."""
        words = self.packed_mask()
        return np.unpackbits(words.view(np.uint8), count=self.vocab.size, bitorder="little").view(bool)

    def allowed_token_ids(self) -> np.ndarray:
        """Sorted int32 ids of the allowed tokens (EOS included when allowed)."""
        return np.flatnonzero(self.allowed_mask()).astype(np.int32)

    def fill_bitmask(self, buf: Any) -> None:
        """Write the mask into int32[ceil(V/32)]: bit i % 32 of word i // 32 = token i."""
        tokens = self._mask_tokens()
        if type(buf) is not np.ndarray or buf.ndim != 1 or buf.dtype is not _INT32:  # else: the common case
            buf = _bitmask_row(buf)
        tokens.write_into(buf, self._n_words)  # the rest zeroed; strided views too; a short buffer: ValueError

    def mask_logits(self, logits: Any) -> Any:
        """Set disallowed logits to -inf in place (numpy or torch; 1-D or one row)."""
        shape = tuple(logits.shape)
        if not shape or any(n != 1 for n in shape[:-1]):
            raise EngineError(
                f"mask_logits takes the logits of one sequence, shape (V,) or (1, V); got shape {shape} "
                "(for a batch, give each row its own engine: engines[i].mask_logits(logits[i]))"
            )
        mask = self.allowed_mask()
        width = logits.shape[-1]
        if width < self.vocab.size and mask[width:].any():
            raise ValueError(f"logits have {width} columns but the vocabulary has {self.vocab.size} tokens")
        keep = np.zeros(width, dtype=bool)
        n = min(width, len(mask))
        keep[:n] = mask[:n]
        if type(logits).__module__.startswith("torch"):
            import torch

            blocked = torch.from_numpy(~keep).to(logits.device)
            logits.masked_fill_(blocked.reshape((1,) * (logits.dim() - 1) + (-1,)), float("-inf"))
        else:
            logits[..., ~keep] = -np.inf
        return logits

    def next_bytes(self) -> frozenset[int]:
        """The bytes that can come next in the text (every byte while ``any!`` may start):
        what jump-forward needs to know about the text right after forced bytes."""
        return frozenset(self._next_bytes(self._state))

    def configuration(self) -> State:
        """The current items ``(GSS vertex, terminal, DFA state, tokens used)``: hashable and
        read-only, for planners that search from here (``grammarc.integrations.steering``).
        Engines of one grammar with equal configurations accept the same continuations."""
        return self._state

    def forced_bytes(self, limit: int = 256) -> bytes:
        """The text every continuation must start with (for jump-forward decoding)."""
        out = bytearray()
        state = self._state
        while len(out) < limit:
            if self._complete(state, len(out) + self._text_len):
                break
            nxt = self._next_bytes(state)
            if len(nxt) != 1:
                break
            byte = nxt.pop()
            state = self._step_bytes(state, bytes([byte]), token_boundary=False)
            out.append(byte)
        return bytes(out)

    # -- advancing --------------------------------------------------------------------
    def advance(self, token_id: int) -> bool:
        """Consume one token; True when the engine is finished. Raises TokenRejected."""
        try:
            token_id = operator.index(token_id)  # ints and numpy/torch integers; never 1.5 or "1"
        except TypeError:
            raise TokenRejected(f"token id {token_id!r} is not an integer") from None
        if self._finished:
            raise TokenRejected(f"token {token_id} after the end: the engine is finished")
        if not 0 <= token_id < self._size:
            raise TokenRejected(f"token id {token_id} is outside the vocabulary (size {self._size})")
        if token_id in self._special_ids:  # EOS ids among them; and the only tokens without text
            if token_id not in self._eos_ids:
                raise TokenRejected(f"token {token_id} is a special token and carries no text")
            if not self.accepts_eos():
                raise TokenRejected(
                    f"EOS token {token_id} at byte {self._text_len}: the text is not complete; "
                    f"expected {self._expected_names()}"
                )
            self._history.append((self._state, self._text_len, self._finished))
            self._finished = True
            return True
        data = self._token_bytes[token_id]
        state = self._step_bytes(self._state, data, token_boundary=True)
        if not state:
            raise TokenRejected(
                f"token {token_id} ({data!r}) cannot continue the text at byte {self._text_len}; "
                f"expected {self._expected_names()}"
            )
        self._history.append((self._state, self._text_len, self._finished))
        self._state, self._text_len = state, self._text_len + len(data)
        # `is_finished` on a non-empty text, its answer kept for the mask's EOS bit (`_complete`)
        complete = stepping.complete(self.core, self._terminals, state)
        self._last_complete = (state, complete)
        return complete and not self._extendable()

    def advance_bytes(self, data: bytes | str) -> None:
        """Consume text that did not come from one token (a prompt tail, forced text)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        if self._finished:
            raise TokenRejected("text after the end: the engine is finished")
        if not data:
            return
        state = self._step_bytes(self._state, data, token_boundary=False)
        if not state:
            raise TokenRejected(f"bytes {data!r} cannot continue the text at byte {self._text_len}")
        self._state, self._text_len = state, self._text_len + len(data)

    # -- internals --------------------------------------------------------------------
    def _step_bytes(self, state: State, data: bytes, *, token_boundary: bool) -> State:
        """Items after `data` (grammarc.runtime.stepping). With `token_boundary`, `data` is
        one whole token: ``any!`` takes it whole and ``except!(X, n)`` counts it; and a
        token that spends an except! budget must leave the terminal where the tokens left
        can still end it (the last one: where it can end), as the mask demands, or the
        text could neither grow nor end (e.g. after a token that stops inside a UTF-8
        character)."""
        items = stepping.step(self.core, self._terminals, state, data, tokens=token_boundary)
        if not token_boundary or not self._limited:
            return items
        terminals, can_finish = self._terminals, self.index.can_finish
        return frozenset(
            (node, t, q, k) for node, t, q, k in items
            if terminals[t].token_limit is None or can_finish(t, q, terminals[t].token_limit - k)
        )

    def _mask_parts(self, state: State) -> list[TokenSet]:
        """The token sets whose union is the mask of `state` (EOS aside): the index's own
        sets and the walks' memoized ones, shared, not copied."""
        # A state holds an opening item for every terminal that may start where an item's
        # terminal can end, so tokens that start a new terminal are covered by those
        # items' own `inside` and `mid` parts: no separate "after" tree is needed.
        index, core = self.index, self.core
        # the vertices of each (terminal, state, budget left: 0 when unlimited)
        groups: dict[tuple[int, int, int], list[tuple[Node, int]]] = {}
        if self._limited:
            limits = self._limits
            for node, t, q, k in state:
                limit = limits[t]
                if limit is not None and k >= limit:
                    continue  # no token may touch this terminal any more; it can only end
                groups.setdefault((t, q, 0 if limit is None else limit - k), []).append((node, t))
        else:
            for node, t, q, _ in state:
                groups.setdefault((t, q, 0), []).append((node, t))
        parts: list[TokenSet] = []
        for (t, q, budget), completions in groups.items():
            parts.append(index.inside_within(t, q, budget) if budget else index.inside(t, q))
            tree = index.mid(t, q)
            if tree.candidates:
                parts.extend(self._tree_tokens(tree, core.level(frozenset(completions))))
        return parts

    def _tree_tokens(self, tree: Tree, level: Level) -> tuple[TokenSet, ...]:
        """The token sets of `tree` the parser can take from `level` (the index's own
        sets, shared, not copied), memoized per (tree, level): states that share an item's
        vertices share its walk."""
        walks = self.index.walks
        key = (tree.serial, level)
        parts = walks.get(key)
        if parts is None:
            parts, size = _few(self._collect_tree_tokens(tree, level), self.index.n_words)
            parts = walks.put(key, parts, size + 64 + set_bytes(level.vertices))
        return parts

    def _collect_tree_tokens(self, tree: Tree, level: Level) -> list[TokenSet]:
        """The token sets of `tree` that the parser can take from `level`: each node's
        summary (memoized per (tree, LR states): its stack-independent sets), then its
        frontier's, walked on real levels, depth first in the frontier's order. A loop, not
        a recursion: one call per walk, however many frontiers it meets."""
        index, core = self.index, self.core
        summaries, n_words, shift = index.summaries, index.n_words, core.shift
        parts: list[TokenSet] = []
        todo: list[tuple[Tree, Level, tuple[int, ...]]] = [(tree, level, ())]
        while todo:
            tree, level, path = todo.pop()
            for u in path:  # every shift but the last is pure: `upcoming` changes nothing there
                level = shift(level, u, tree.keys)
            states = level.states
            key = (tree.serial, states)
            summary = summaries.get(key)
            if summary is None:
                summary = walk_summary(core, tree, states, n_words)
                size = summary.nbytes + 64 * len(summary.frontier) + 64 + set_bytes(states)
                summary = summaries.put(key, summary, size)
            parts.extend(summary.tokens)
            if summary.frontier:
                todo.extend((child, level, path) for path, child in reversed(summary.frontier))
        return parts

    def _complete(self, state: State, text_len: int) -> bool:
        """Whether the text of `state` (`text_len` bytes) is a complete string. The last
        state's answer is kept: `advance` asks it of the state it makes (`is_finished`),
        then that state's mask asks again (EOS), and each answer builds a GSS level."""
        if text_len == 0 and self.compiled.accepts_empty:
            return True
        last = self._last_complete
        if last[0] is not state:
            last = self._last_complete = (state, stepping.complete(self.core, self._terminals, state))
        return last[1]

    def _next_bytes(self, state: State) -> set[int]:
        return stepping.next_bytes(self._terminals, state, tokens=True)

    def _expected_names(self) -> str:
        return ", ".join(stepping.expected(self._terminals, self._state)) or "end of text"


WalkSummary = _gss.WalkSummary
# A token tree walked from a set of LR states, as far as the states alone decide
# (``WalkSummary(tokens, frontier, nbytes)``, read-only; compiled and untracked by the cyclic
# collector: a new schema's walks keep thousands in the summaries' memo).
#
# `tokens`: the tokens allowed whatever the stacks below those states (`_few`: the tree's
# own sets, or their union where there are many; empty: none).
# `frontier`: ``(path, subtree)`` pairs where the walk needs real stacks: shift the
# terminals of `path` from the real level, then walk `subtree` from there (the last
# shift of each path may reduce, which reads the stacks).
# `nbytes`: what a memo counts for `tokens` (`_few`).


def walk_summary(core: ParserCore, tree: Tree, states: tuple[int, ...], n_words: int) -> WalkSummary:
    """Summarize `tree` from a level whose vertices have LR `states`: follow every shift
    that cannot reduce (`ParserCore.pure_shift`) on states alone, and leave the others to
    the frontier (those whose subtree is not empty). Exact: such a shift's level is
    determined by the states it starts from. The walk is compiled (``ParserCore.walk``,
    grammarc.runtime._tree.c; its Python oracle is tests/tree_walk_reference.py): it visits
    only the terminals the parser can take, and Python runs only to make a part not made yet."""
    parts, frontier = core.walk(tree, states)
    tokens, size = _few(parts, n_words)
    return WalkSummary(tokens, frontier, size)


def _few(sets: list[TokenSet], n_words: int) -> tuple[tuple[TokenSet, ...], int]:
    """`sets` as a memo keeps them, and the bytes it counts for them: a few as they are (sets
    the index or another memo keeps: a pointer each; each OR-ed into a mask on use, as a
    union would cost as many ORs plus an array and a pack, and on a new schema most walks
    are used once or twice), many merged into one new set (one OR per use)."""
    if len(sets) <= _WALK_PARTS:
        return tuple(sets), 8 * len(sets)
    union = TokenSet.union(sets, n_words)
    return (union,), union.nbytes


def _bitmask_row(buf: Any) -> np.ndarray:
    """`fill_bitmask`'s buffer as a 1-D int32 NumPy array (a torch tensor's CPU memory, one
    row of a 2-D buffer), or ValueError."""
    if type(buf).__module__.startswith("torch"):
        if buf.device.type != "cpu":
            raise ValueError("fill_bitmask needs a CPU buffer; copy it to the device afterwards")
        buf = buf.numpy()
    if not isinstance(buf, np.ndarray):
        raise ValueError(f"fill_bitmask writes into a NumPy array or a torch tensor, not {type(buf).__name__}")
    if buf.ndim == 2 and buf.shape[0] == 1:
        buf = buf[0]
    if buf.ndim != 1 or buf.dtype != _INT32:
        raise ValueError(
            f"fill_bitmask takes a 1-D int32 buffer (for a batch, pass one row: buf[i]); "
            f"got shape {tuple(buf.shape)} of {buf.dtype}"
        )
    return buf
