"""transformers integration: a batch-aware logits processor (DESIGN.md §10).

`GrammarLogitsProcessor` goes into ``model.generate(..., logits_processor=[...])``. It keeps
one `Engine` per batch row (or ``None`` for a row left unconstrained), and at every step

1. reads the tokens sampled so far from the growth of ``input_ids`` past the prompt and
   advances each row's engine with the new ones (a shorter or different history, as in
   assisted decoding or beam reordering, is rolled back or replayed);
2. sets every logit the row's grammar forbids to ``-inf``; a row whose engine is finished
   gets only its EOS token.

It works with greedy search and sampling: transformers applies custom processors before
temperature, top-k and top-p, so those only ever see allowed tokens.

The prompt/generation boundary. The engine constrains the *generated* text only, and it
works on the exact bytes each token adds (`Vocabulary`). With a SentencePiece tokenizer
(``vocab.prefix_space``) a token such as ``▁{`` adds ``b" {"``, also as the first token
after the prompt: the grammar sees that space. Tokenizers hide it when they decode a text
that starts with such a token; we do not, because the grammar is checked against what the
tokens really add. A grammar that should allow the model's customary space after a prompt
says so (JSON allows leading whitespace already), or the prompt ends with the space.

Nothing here imports torch or transformers at module level: ``import grammarc`` stays light.
"""

from __future__ import annotations

import os
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from grammarc.lowering.compiler import CompiledGrammar
from grammarc.engine import Engine, TokenRejected
from grammarc.errors import GrammarcError
from grammarc.grammar import Grammar
from grammarc.integrations.steering import Steering
from grammarc.tokens.vocabulary import Vocabulary

__all__ = ["GrammarLogitsProcessor", "resolve_grammar", "vocabulary_for"]

GrammarSpec = Grammar | CompiledGrammar | str | os.PathLike


def resolve_grammar(spec: GrammarSpec) -> Grammar | CompiledGrammar:
    """A Grammar from what users pass: a Grammar, a stdlib name, a path, or EBNF text."""
    if isinstance(spec, (Grammar, CompiledGrammar)):
        return spec
    if isinstance(spec, os.PathLike):
        return Grammar.from_file(spec)
    if not isinstance(spec, str):
        raise GrammarcError(f"expected a Grammar, a stdlib name or EBNF text, got {type(spec).__name__}")
    from grammarc import stdlib_grammars

    if spec in stdlib_grammars.names():
        return stdlib_grammars.load(spec)
    if "\n" not in spec and spec.endswith(".ebnf") and os.path.isfile(spec):
        return Grammar.from_file(spec)
    return Grammar.from_ebnf(spec)


_vocab_cache: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def vocabulary_for(tokenizer: Any, model: Any = None) -> Vocabulary:
    """The `Vocabulary` of a transformers tokenizer, sized to the model's logits (cached).

    EOS ids are the model's generation-config EOS ids plus the tokenizer's, so EOS is
    allowed exactly where the text is complete, whichever of them the model prefers.
    """
    size = _logits_width(model)
    if size is not None and size < len(tokenizer):
        size = None  # a tokenizer larger than the logits: ids past the logits never come up
    eos = sorted(set(_model_eos_ids(model)) | ({tokenizer.eos_token_id} - {None}))
    key = (size, tuple(eos))
    try:
        per_tokenizer = _vocab_cache.setdefault(tokenizer, {})
    except TypeError:  # not weak-referenceable or not hashable: no cache
        per_tokenizer = {}
    vocab = per_tokenizer.get(key)
    if vocab is None:
        vocab = per_tokenizer[key] = Vocabulary.from_tokenizer(tokenizer, eos_token_ids=eos or None, size=size)
    return vocab


def _logits_width(model: Any) -> int | None:
    if model is None:
        return None
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    if weight is not None:
        return int(weight.shape[0])
    width = getattr(getattr(model, "config", None), "vocab_size", None)
    return int(width) if width else None


def _model_eos_ids(model: Any) -> list[int]:
    for source in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        eos = getattr(source, "eos_token_id", None)
        if eos is not None:
            return [int(i) for i in (eos if isinstance(eos, (list, tuple)) else [eos])]
    return []


@dataclass
class _Row:
    """One batch row: its engine, the generated ids seen so far, and how many were fed."""

    template: Engine | None
    engine: Engine | None
    seen: list[int] = field(default_factory=list)
    fed: int = 0  # seen[:fed] went into the engine; the rest came after it finished
    steering: Steering | None = None  # finish_after: the plan to a shortest completion
    times: list[float] = field(default_factory=list)  # seconds of grammar work per step until the end


class GrammarLogitsProcessor:
    """Masks each batch row's logits to its own grammar; finished rows get EOS only.

    `engines` has one entry per batch row: an `Engine` or ``None`` for an unconstrained
    row. Each row works on a clone, so the engines given stay as they are (one may have
    taken text already, e.g. ``advance_bytes`` of a forced prefix). A list whose length
    divides the batch covers ``num_return_sequences``: row i uses entry
    ``i // (batch // len(engines))``.

    `eos_token_id` is the token forced once a row's text is finished (default: the
    smallest EOS id of the row's vocabulary); give the model's, so that generation stops.

    `finish_after`: after that many generated tokens a row is steered to a shortest
    completion of its text (`grammarc.integrations.steering`: planned once, exactly, in
    single-byte steps; multi-byte tokens that spell a prefix of it are allowed too), so a
    weak or random model still ends with a complete document inside ``max_new_tokens``.
    ``None``: never steer.

    One processor serves one ``generate`` call; call `reset` to reuse it.
    """

    def __init__(
        self,
        engines: Sequence[Engine | None],
        *,
        eos_token_id: int | Sequence[int] | None = None,
        finish_after: int | None = None,
    ):
        self.engines = list(engines)
        if not self.engines:
            raise ValueError("GrammarLogitsProcessor needs at least one engine (or None) per row")
        if isinstance(eos_token_id, Iterable):
            eos_token_id = next(iter(eos_token_id), None)
        self._forced_eos: list[int | None] = []
        for i, engine in enumerate(self.engines):
            if engine is None:
                self._forced_eos.append(None)
                continue
            known = engine.vocab.eos_token_ids
            if eos_token_id is not None and not (0 <= eos_token_id < engine.vocab.size):
                raise GrammarcError(f"row {i}: eos_token_id {eos_token_id} is not a token of the vocabulary "
                                    f"(ids 0..{engine.vocab.size - 1})")
            if eos_token_id is not None and known and eos_token_id not in known:
                raise GrammarcError(f"row {i}: eos_token_id {eos_token_id} is not an EOS token of the vocabulary "
                                    f"(its EOS tokens: {sorted(known)}); the engine would refuse it")
            eos = eos_token_id if eos_token_id is not None else min(known, default=None)
            if eos is None:
                raise GrammarcError(
                    f"row {i}: the vocabulary has no EOS token and no eos_token_id was given: "
                    "a finished row could not be stopped"
                )
            self._forced_eos.append(int(eos))
        if finish_after is not None and finish_after < 0:
            raise ValueError(f"finish_after must be >= 0, got {finish_after}")
        self.finish_after = finish_after
        self.reset()

    @classmethod
    def from_grammars(
        cls,
        grammars: Sequence[GrammarSpec | None],
        tokenizer: Any = None,
        *,
        model: Any = None,
        vocab: Vocabulary | None = None,
        eos_token_id: int | Sequence[int] | None = None,
        finish_after: int | None = None,
    ) -> "GrammarLogitsProcessor":
        """One engine per grammar (``None``: unconstrained row); equal grammars share
        their compiled form and index. Give `vocab`, or the `tokenizer` (and the `model`,
        whose logits width and EOS ids the vocabulary then follows)."""
        if vocab is None:
            if tokenizer is None:
                raise ValueError("from_grammars needs a tokenizer or a vocab")
            vocab = vocabulary_for(tokenizer, model)
        if eos_token_id is None and model is not None:
            eos_token_id = next((i for i in _model_eos_ids(model) if i in vocab.eos_token_ids), None)
        from grammarc.integrations.progress import stage

        with stage("grammarc: compiling the grammars and their token indexes"):
            engines = [None if spec is None else Engine(resolve_grammar(spec), vocab) for spec in grammars]
        return cls(engines, eos_token_id=eos_token_id, finish_after=finish_after)

    def reset(self) -> None:
        """Forget the prompt and every row's progress (rows restart from the given engines)."""
        self._prompt_len: int | None = None
        self._rows: list[_Row] | None = None

    # ----------------------------------------------------------------------- queries
    @property
    def rows(self) -> int:
        return len(self._rows) if self._rows is not None else len(self.engines)

    def generated_ids(self, row: int) -> list[int]:
        """The ids the row's engine consumed (EOS included when taken; padding after it not)."""
        state = self._row(row)
        return list(state.seen[: state.fed] if state.engine is not None else state.seen)

    def generated_bytes(self, row: int) -> bytes:
        """The text the row's engine has consumed: exactly what its grammar was checked on."""
        state = self._row(row)
        if state.engine is None:
            raise ValueError(f"row {row} is unconstrained: decode its ids with the tokenizer")
        return state.engine.vocab.decode(state.seen[: state.fed])

    def is_complete(self, row: int) -> bool:
        """Whether the row's text is a complete string of its grammar (EOS taken or allowed)."""
        engine = self._row(row).engine
        if engine is None:
            return True
        return engine.is_finished() or engine.accepts_eos()

    def mask_times(self, row: int) -> list[float]:
        """Seconds of grammar work (advance + mask) for each step of the row until its end."""
        return list(self._row(row).times)

    def steering(self, row: int) -> Steering | None:
        """The row's `Steering` (its plan and how often it was planned); None without finish_after."""
        return self._row(row).steering

    def _row(self, row: int) -> _Row:
        if self._rows is None:
            raise ValueError("the processor has not seen a batch yet")
        return self._rows[row]

    # ---------------------------------------------------------------- the processor
    def __call__(self, input_ids: Any, scores: Any) -> Any:
        """Advance every row with its newly sampled tokens, then mask `scores` in place."""
        import torch

        batch, width = scores.shape
        histories = self._histories(input_ids)
        allowed = np.ones((batch, width), dtype=bool)
        constrained = False
        for i, (row, tokens) in enumerate(zip(self._rows, histories)):
            began = time.perf_counter()
            self._sync(i, row, tokens)
            if row.engine is not None:
                allowed[i] = self._row_mask(i, row, width)
                if row.fed == len(row.seen):  # not yet past the end: a real grammar step
                    row.times.append(time.perf_counter() - began)
                constrained = True
        if not constrained:
            return scores
        keep = torch.from_numpy(allowed).to(scores.device)
        scores.masked_fill_(~keep, float("-inf"))
        # Another processor (min_new_tokens, bad_words_ids, ...) may have forbidden every
        # token the grammar allows; the grammar wins, so the row can still be sampled.
        dead = torch.isneginf(scores).all(dim=-1)
        if bool(dead.any()):
            rows = dead.nonzero().flatten()
            scores[rows] = torch.zeros_like(scores[rows]).masked_fill_(~keep[rows], float("-inf"))
        return scores

    def update(self, input_ids: Any) -> None:
        """Advance the engines to `input_ids` (prompt + generated ids) without masking.

        ``generate`` never shows the processor the last sampled token: call this with the
        returned sequences to account for it (`generated_bytes`, `is_complete`).
        """
        for i, (row, tokens) in enumerate(zip(self._rows or (), self._histories(input_ids))):
            self._sync(i, row, tokens)

    def _histories(self, input_ids: Any) -> list[list[int]]:
        """The generated ids of every row (what follows the prompt)."""
        batch, length = int(input_ids.shape[0]), int(input_ids.shape[1])
        if self._rows is None:
            self._start(batch, length)
        elif batch != len(self._rows):
            raise ValueError(f"the batch has {batch} rows; this processor tracks {len(self._rows)}: call reset()")
        if length < self._prompt_len:
            raise ValueError(f"input_ids are shorter ({length}) than the prompt ({self._prompt_len}): call reset()")
        return input_ids[:, self._prompt_len :].tolist()

    def _start(self, batch: int, length: int) -> None:
        n = len(self.engines)
        if batch % n:
            raise ValueError(f"the batch has {batch} rows but the processor was given {n} engines")
        per = batch // n
        rows = []
        self._forced = [self._forced_eos[i // per] for i in range(batch)]
        for i in range(batch):
            template = self.engines[i // per]
            steering = None
            if template is not None and self.finish_after is not None:
                steering = Steering(self.finish_after, self._forced[i])
            rows.append(_Row(template, None if template is None else template.clone(), steering=steering))
        self._rows, self._prompt_len = rows, length

    def _sync(self, i: int, row: _Row, tokens: list[int]) -> None:
        seen = row.seen
        n = len(seen)
        if not (len(tokens) >= n and tokens[:n] == seen):
            common = 0
            for a, b in zip(seen, tokens):
                if a != b:
                    break
                common += 1
            self._undo(i, row, common)
            n = common
        for token in tokens[n:]:
            self._feed(i, row, token)

    def _undo(self, i: int, row: _Row, keep: int) -> None:
        """Drop generated ids past `keep`: roll the engine back, or replay from the start."""
        if row.steering is not None:
            row.steering.drop()
        if row.engine is None or row.fed <= keep:
            del row.seen[keep:]
            return
        try:
            row.engine.rollback(row.fed - keep)
            del row.seen[keep:]
            row.fed = keep
        except ValueError:  # deeper than max_rollback: replay
            replay = row.seen[:keep]
            row.engine = row.template.clone()
            row.seen, row.fed = [], 0
            for token in replay:
                self._feed(i, row, token)

    def _feed(self, i: int, row: _Row, token: int) -> None:
        row.seen.append(token)
        engine = row.engine
        if engine is None or engine.is_finished():
            return  # after the end: the forced EOS, then padding
        try:
            engine.advance(token)
        except TokenRejected as error:
            raise TokenRejected(f"batch row {i}, generated token {len(row.seen) - 1}: {error}") from None
        row.fed = len(row.seen)
        if row.steering is not None:
            row.steering.consumed(engine.vocab.tokens[token])

    def _row_mask(self, i: int, row: _Row, width: int) -> np.ndarray:
        engine = row.engine
        out = np.zeros(width, dtype=bool)
        if engine.is_finished():
            out[self._forced[i]] = True
            return out
        mask = engine.allowed_mask()
        if row.steering is not None and row.steering.active(len(row.seen)):
            steered = row.steering.candidates(engine, np.flatnonzero(mask))
            if steered is not None:
                mask = np.zeros_like(mask)
                mask[steered] = True
        n = min(width, len(mask))
        out[:n] = mask[:n]
        if not out.any():
            raise GrammarcError(
                f"batch row {i}: no allowed token fits in the {width} logits "
                f"(the vocabulary has {engine.vocab.size} ids)"
            )
        if engine.accepts_eos() and self._forced[i] < width:
            out[self._forced[i]] = True
        return out
