"""Our own decode loop: fewer forward passes, not only cheaper masks (DESIGN.md §10).

`decode` runs a transformers causal LM token by token with its KV cache, one sequence,
greedy or sampling, under an optional `Engine`. Two things make it cheaper than
``model.generate`` with `GrammarLogitsProcessor`:

**Opportunistic masking.** The token is first drawn from the *unmasked* logits and
checked with ``engine.advance`` (a rejected token leaves the engine as it was); the mask
is computed only when the token is rejected, and the token is then drawn again from the
masked logits with fresh randomness. This is exact — the output has the distribution of
mask-first decoding — for greedy search and for plain temperature sampling:

* greedy: the unmasked argmax, when allowed, is also the argmax over the allowed tokens
  (ties go to the smallest id both ways);
* sampling with probabilities p and Z = p(allowed): an allowed x comes out of the first
  draw with probability p(x), or after a rejection (probability 1 - Z) from the second
  draw with p(x)/Z, in all p(x) + (1 - Z) p(x)/Z = p(x)/Z: the masked distribution.

It is *not* exact with top-k or top-p: their truncation would be computed on the unmasked
distribution, whose top tokens may all be forbidden, while mask-first truncates among
the allowed ones. With ``top_k > 0`` or ``top_p < 1`` the loop therefore masks first.

A rejected free draw costs a draw over the whole vocabulary on top of the mask, so after
rejections the loop masks first for a while (1, 3, 7, then 7 steps between free draws;
a hit resets it). Which way a step draws depends only on earlier steps, so every step
still has the masked distribution.

**Jump-forward.** When the grammar forces text (``engine.forced_bytes()``: every
continuation starts with it) its tokens are appended without a forward pass each: they go
into the model together with the token just sampled, in *one* forward pass, and decoding
continues from the logits of the last. The forced text is tokenized canonically with the
tokenizer (`encode`), and two boundaries are handled:

* the start: the token just sampled is not in the KV cache yet, so it is tokenized
  *together* with the forced text (it may merge with it, e.g. ``"`` + ``,"key":`` is
  ``","`` + ``key`` + ``":``); the model's token is then replaced by the canonical tokens
  of the same text. When that fails (the token ends inside a UTF-8 character, the
  retokenized tokens are rejected, ...) or the grammar has ``any!`` (whose token is one
  whole token by meaning), the forced text is tokenized on its own after the token;
* the end (`backoff`): a token of the model's next choice may start inside the forced
  text and run past it (forced ``: "`` then ``"Bob``). Every vocabulary token that starts
  inside the last bytes of the forced text and continues with a byte the grammar allows
  after it is a possible straddling token; the jump stops at the last token boundary
  before the earliest such start, so the model can still choose any of them. This is a
  vocabulary-level rule (conservative: only the first byte past the forced text is
  checked); it never forces a token that excludes a straddling one, but it does not
  re-run the tokenizer's pre-tokenization over text not yet written.

Every jumped token is checked with ``engine.advance`` (token-level rules such as
``except!(X, n)`` budgets stay exact); the jump stops at the first rejected one.

Nothing here imports torch or transformers at module level.
"""

from __future__ import annotations

import bisect
import inspect
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, Sequence

import numpy as np

from grammarc.engine import Engine, TokenRejected
from grammarc.errors import GrammarcError
from grammarc.integrations.steering import Steering
from grammarc.tokens.vocabulary import Vocabulary

__all__ = ["Sampling", "DecodeStats", "DecodeResult", "decode", "backoff", "jump_tokens"]

Encoder = Callable[[str], list[int]]


# ------------------------------------------------------------------------ sampling


@dataclass(frozen=True)
class Sampling:
    """How a token is chosen from logits: greedy, or sampling with temperature, top-k, top-p
    (applied in that order, as transformers does). ``top_k=0`` and ``top_p=1`` turn those off."""

    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self) -> None:
        if self.do_sample and not self.temperature > 0:
            raise ValueError(f"temperature must be > 0 when sampling, got {self.temperature}")
        if self.top_k is None or self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def truncates(self) -> bool:
        """Top-k or top-p is on: the candidates depend on which tokens are masked, so
        opportunistic masking would not be exact (see the module docstring)."""
        return self.do_sample and (self.top_k > 0 or self.top_p < 1.0)


def warp(logits: Any, sampling: Sampling) -> Any:
    """Temperature, then top-k, then top-p on 1-D logits (a new tensor; -inf = dropped)."""
    import torch

    scores = logits / sampling.temperature if sampling.temperature != 1.0 else logits.clone()
    n = scores.shape[-1]
    if 0 < sampling.top_k < n:
        kth = torch.topk(scores, sampling.top_k).values[-1]
        scores[scores < kth] = float("-inf")  # ties with the k-th stay, as in transformers
    if sampling.top_p < 1.0:
        ordered, order = torch.sort(scores, descending=False)
        cumulative = torch.softmax(ordered, dim=-1).cumsum(dim=-1)
        drop = cumulative <= 1 - sampling.top_p
        drop[-1] = False  # keep at least one token
        scores[order[drop]] = float("-inf")
    return scores


def draw(logits: Any, sampling: Sampling, generator: Any = None) -> int:
    """An index into 1-D `logits`: the argmax (first of ties), or a sample.

    Sampling is by inverse CDF with one uniform from `generator` (the global torch RNG when
    ``None``): as exact as ``torch.multinomial`` and ~10x faster over 100k+ logits on CPU.
    """
    import torch

    if not sampling.do_sample:
        return int(torch.argmax(logits))
    scores = warp(logits, sampling)
    weights = torch.exp(scores - scores.max())
    cdf = torch.cumsum(weights, dim=0)
    u = torch.rand((), generator=generator, dtype=cdf.dtype)
    index = int(torch.searchsorted(cdf, u * cdf[-1], right=True))
    if index >= len(cdf):  # u * total rounded up to total: the last token with weight
        index = int(torch.nonzero(weights).max())
    return index


# --------------------------------------------------------------------- jump-forward


class _Extensions:
    """The vocabulary's tokens sorted by bytes: which tokens strictly extend a byte string."""

    def __init__(self, vocab: Vocabulary):
        self.tokens = sorted({t for i, t in enumerate(vocab.tokens) if t and i not in vocab.special_ids})
        self.max_len = max(map(len, self.tokens), default=0)

    def extends(self, prefix: bytes, follow: Collection[int]) -> bool:
        """Whether some token is `prefix` + a byte in `follow` + anything."""
        tokens, n = self.tokens, len(prefix)
        at = bisect.bisect_left(tokens, prefix)
        if at < len(tokens) and tokens[at] == prefix:
            at += 1
        if at >= len(tokens) or not tokens[at].startswith(prefix):
            return False  # no token strictly extends it: the common case for long suffixes
        if len(follow) <= 16:
            for byte in follow:
                probe = prefix + bytes([byte])
                hit = bisect.bisect_left(tokens, probe, at)
                if hit < len(tokens) and tokens[hit].startswith(probe):
                    return True
            return False
        while at < len(tokens) and tokens[at].startswith(prefix):  # walk the distinct next bytes
            byte = tokens[at][n]
            if byte in follow:
                return True
            if byte == 255:
                break
            at = bisect.bisect_left(tokens, prefix + bytes([byte + 1]), at)
        return False


_extensions: "weakref.WeakKeyDictionary[Vocabulary, _Extensions]" = weakref.WeakKeyDictionary()


def _extensions_of(vocab: Vocabulary) -> _Extensions:
    table = _extensions.get(vocab)
    if table is None:
        table = _extensions[vocab] = _Extensions(vocab)
    return table


def backoff(text: bytes, follow: Collection[int], vocab: Vocabulary) -> int:
    """Where jumped tokens must end at the latest: the start of the longest suffix of
    `text` that some token extends with a byte in `follow` (the bytes the grammar allows
    after `text`), or ``len(text)`` when no token straddles the end of `text`."""
    table = _extensions_of(vocab)
    for start in range(max(0, len(text) - table.max_len + 1), len(text)):
        if table.extends(text[start:], follow):
            return start
    return len(text)


def _utf8_head(data: bytes) -> bytes:
    """`data` without an incomplete UTF-8 character at its end (tokenizers take text)."""
    for back in range(1, min(4, len(data)) + 1):
        lead = data[-back]
        if lead < 0x80:
            return data
        if lead >= 0xC0:  # the lead byte of the last character
            size = 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
            return data if size == back else data[:-back]
    return data


def _canonical(encode: Encoder, vocab: Vocabulary, text: bytes) -> list[int] | None:
    """The tokenizer's ids for `text`, or None when they do not spell exactly `text`."""
    try:
        string = text.decode("utf-8")
    except UnicodeDecodeError:
        return None
    ids = list(encode(string))
    if not ids or any(not 0 <= i < vocab.size for i in ids) or vocab.decode(ids) != text:
        return None
    return ids


def _take(engine: Engine, ids: Iterable[int], budget: int) -> list[int]:
    """Advance `engine` by `ids` while they are accepted (at most `budget`); the taken ones."""
    taken: list[int] = []
    for token in ids:
        if len(taken) >= budget or engine.is_finished():
            break
        try:
            engine.advance(token)
        except TokenRejected:
            break
        taken.append(token)
    return taken


def jump_tokens(
    engine: Engine, last: int | None, encode: Encoder, *, budget: int, limit: int = 256
) -> tuple[list[int], Engine]:
    """The tokens to feed in place of ``[last]`` and the engine after them.

    `engine` has consumed `last` (the token just sampled; ``None`` before the first one).
    The result starts with `last`, or with canonical tokens that replace it (same text);
    it holds at most `budget` tokens (at least ``[last]``). The given engine is not
    modified; the returned one is it or an advanced clone.
    """
    keep = ([last] if last is not None else []), engine
    forced = _utf8_head(engine.forced_bytes(limit))
    if not forced or budget <= len(keep[0]):
        return keep
    vocab = engine.vocab
    after = engine.clone()
    after.advance_bytes(forced)
    follow = after.next_bytes()
    head = vocab.tokens[last] if last is not None else b""
    # First choice: the sampled token retokenized with the forced text (only where the
    # engine can undo it: not with max_rollback=0).
    if head and not _has_any_token(engine) and engine.max_rollback:
        base = engine.clone()
        base.rollback(1)
        got = _jump_from(base, head + forced, len(head), follow, encode, budget)
        if got is not None:
            return got
    got = _jump_from(engine.clone(), forced, 0, follow, encode, budget - len(keep[0]))
    if got is None or not got[0]:
        return keep
    return keep[0] + got[0], got[1]


def _has_any_token(engine: Engine) -> bool:
    """Whether the grammar has ``any!``: there a token's extent is meaning (one token of any
    text), so the model's token is never merged with the forced text after it."""
    return any(t.any_token for t in engine.compiled.terminals)


def _jump_from(
    engine: Engine, text: bytes, covered: int, follow: set[int], encode: Encoder, budget: int
) -> tuple[list[int], Engine] | None:
    """Canonical tokens of `text` up to the backoff point, advanced on `engine` (a clone it
    may modify); None unless they are accepted past the first `covered` bytes."""
    vocab = engine.vocab
    ids = _canonical(encode, vocab, text)
    if ids is None:
        return None
    cut = backoff(text, follow, vocab)
    kept, end = [], 0
    for token in ids:
        end += len(vocab.tokens[token])
        if end > cut:
            break
        kept.append(token)
    taken = _take(engine, kept, budget)
    if len(vocab.decode(taken)) < covered or (covered and not taken):
        return None
    return taken, engine


# ---------------------------------------------------------------------- the loop

_MAX_WAIT = 7  # opportunistic back-off: at most this many mask-first steps between free draws


@dataclass
class DecodeStats:
    """What one `decode` call did; times in seconds."""

    tokens: int = 0  # generated ids, EOS included
    forward_passes: int = 0  # model calls, the prompt's included
    masks: int = 0  # full masks computed (mask-first steps and rejected opportunistic draws)
    checks: int = 0  # opportunistic draws checked with engine.advance
    hits: int = 0  # ... that the grammar accepted (no mask needed)
    jumps: int = 0  # jump-forwards (forced text appended without per-token forward passes)
    jumped_tokens: int = 0  # tokens those added beyond the sampled one (net of retokenization)
    plans: int = 0  # finish_after: runs of the completion planner (1 unless the text left the plan)
    grammar_s: float = 0.0  # engine work: checks, masks, advance, steering, forced text and its tokens
    sample_s: float = 0.0  # drawing tokens from logits (argmax or sampling), also unconstrained
    model_s: float = 0.0  # forward passes
    total_s: float = 0.0


@dataclass
class DecodeResult:
    ids: list[int]  # generated ids; EOS last when taken or forced
    text: bytes | None  # what the engine consumed (None without an engine)
    complete: bool  # the text is a complete string of the grammar (True without an engine)
    stats: DecodeStats = field(default_factory=DecodeStats)


def decode(
    model: Any,
    prompt_ids: Sequence[int],
    engine: Engine | None,
    *,
    max_new_tokens: int = 256,
    sampling: Sampling = Sampling(),
    generator: Any = None,
    opportunistic: bool = True,
    jump_forward: bool = True,
    encode: Encoder | None = None,
    finish_after: int | None = None,
    eos_token_id: int | None = None,
    stop_ids: Collection[int] | None = None,
    logits_processors: Sequence[Callable[[Any, Any], Any]] = (),
) -> DecodeResult:
    """Generate up to `max_new_tokens` after `prompt_ids` under `engine` (None: unconstrained).

    `engine` is cloned, never modified. `opportunistic`: draw from the unmasked logits and
    check the token before computing a mask; used only where exact (greedy, or sampling
    without top-k/top-p; see the module docstring). `jump_forward`: feed forced text
    without per-token forward passes; needs `encode` (text -> ids, no special tokens) and
    is skipped where the tokenizer does not spell the forced text back exactly.
    `finish_after`: after that many tokens, steer to a shortest completion (as
    `GrammarLogitsProcessor` does). `eos_token_id`: appended, without a forward pass, once
    the text is finished (complete and not extendable); default: the vocabulary's smallest.
    `stop_ids`: ids that end decoding (default: the engine vocabulary's EOS ids; without
    an engine, none unless given). `logits_processors`: transformers-style
    ``(input_ids, scores) -> scores`` applied to the raw logits before the grammar; they
    must treat each token independently (a bias, a penalty), which commutes with masking.
    The model is called as ``model(input_ids=..., past_key_values=..., use_cache=True)``
    (``cache=`` instead where its forward takes that; plus ``logits_to_keep=1`` where it
    takes it).
    """
    import torch

    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    began = time.perf_counter()
    stats = DecodeStats()
    vocab = engine.vocab if engine is not None else None
    if engine is not None:
        engine = engine.clone()
        if eos_token_id is None:
            eos_token_id = min(vocab.eos_token_ids, default=None)
        if eos_token_id is None:
            raise GrammarcError("the vocabulary has no EOS token: a finished text could not be ended")
    stops = frozenset(stop_ids if stop_ids is not None else (vocab.eos_token_ids if vocab else ()))
    choice = _Chooser(sampling, generator, opportunistic and not sampling.truncates, stats)
    jump = jump_forward and engine is not None and encode is not None
    steer = Steering(finish_after, eos_token_id) if engine is not None and finish_after is not None else None
    forward = _Forward(model, stats)
    generated: list[int] = []
    feed = list(prompt_ids)
    with torch.inference_mode():
        if jump:  # text forced from the start goes in with the prompt
            start = time.perf_counter()
            extra, engine = jump_tokens(engine, None, encode, budget=max_new_tokens)
            stats.grammar_s += time.perf_counter() - start
            feed += extra
            generated += extra
            stats.jumped_tokens += len(extra)
            stats.jumps += bool(extra)
            if steer is not None:
                steer.consumed(vocab.decode(extra))
        while len(generated) < max_new_tokens:
            if engine is not None and engine.is_finished():
                generated.append(eos_token_id)  # nothing may follow: no forward pass needed
                break
            logits = forward(feed)
            for processor in logits_processors:
                ids = torch.tensor([[*prompt_ids, *generated]], device=logits.device)
                logits = processor(ids, logits[None])[0]
            if engine is None:
                token = choice.draw(logits)
                feed = [token]
            else:
                start, sampled = time.perf_counter(), stats.sample_s
                steering = steer is not None and steer.active(len(generated))
                token = choice.constrained(logits, engine, steer if steering else None, len(generated))
                feed = [token]
                if jump and token not in stops and not engine.is_finished():
                    feed, engine = jump_tokens(engine, token, encode, budget=max_new_tokens - len(generated))
                    if len(feed) > 1 or feed[0] != token:
                        stats.jumps += 1
                        stats.jumped_tokens += len(feed) - 1
                if steer is not None and token not in stops:
                    steer.consumed(vocab.decode(feed))
                stats.grammar_s += time.perf_counter() - start - (stats.sample_s - sampled)
            generated += feed
            if token in stops:
                break
    stats.tokens = len(generated)
    stats.plans = steer.plans if steer is not None else 0
    stats.total_s = time.perf_counter() - began
    if engine is None:
        return DecodeResult(generated, None, True, stats)
    return DecodeResult(generated, vocab.decode(generated), engine.is_finished() or engine.accepts_eos(), stats)


class _Forward:
    """Calls the model on new ids with its KV cache; returns the last position's logits."""

    def __init__(self, model: Any, stats: DecodeStats):
        self.model, self.stats, self.past = model, stats, None
        self.device = getattr(model, "device", "cpu")
        self.extra = {"logits_to_keep": 1} if _takes(model, "logits_to_keep") else {}
        # transformers >= 5.2x names the KV cache `cache` (and warns about `past_key_values`)
        self.cache_name = "cache" if _takes(model, "cache") else "past_key_values"

    def __call__(self, ids: list[int]) -> Any:
        import torch

        start = time.perf_counter()
        x = torch.tensor([ids], dtype=torch.long, device=self.device)
        out = self.model(input_ids=x, use_cache=True, **{self.cache_name: self.past}, **self.extra)
        self.past = getattr(out, self.cache_name)
        logits = out.logits[0, -1].float().cpu()  # one row: masks and sampling run on the CPU
        self.stats.forward_passes += 1
        self.stats.model_s += time.perf_counter() - start
        return logits


def _takes(model: Any, name: str) -> bool:
    forward = getattr(model, "forward", model)
    try:
        return name in inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return False


@dataclass
class _Chooser:
    """Picks tokens: plain draws, and draws under a grammar (opportunistic or mask-first)."""

    sampling: Sampling
    generator: Any
    opportunistic: bool
    stats: DecodeStats
    misses: int = 0  # free draws rejected in a row
    wait: int = 0  # steps to mask first before the next free draw

    def _try_free_draw(self) -> bool:
        """Back off after rejected free draws (1, 3, 7, then every 8th step): each costs a
        draw over the whole vocabulary on top of the mask. Exact all the same: the choice
        depends on earlier steps only, and each step's token has the masked distribution
        whichever way it is drawn."""
        if self.wait:
            self.wait -= 1
            return False
        return True

    def draw(self, logits: Any) -> int:
        start = time.perf_counter()
        index = draw(logits, self.sampling, self.generator)
        self.stats.sample_s += time.perf_counter() - start
        return index

    def constrained(self, logits: Any, engine: Engine, steer: Steering | None, n_generated: int) -> int:
        """The next token under the grammar (and the steering plan, when given); the engine
        is advanced with it."""
        import torch

        stats = self.stats
        if steer is not None:
            plan = steer.ensure(engine)
            if plan == b"" and engine.accepts_eos():
                engine.advance(steer.eos)  # the plan is done: EOS only, as the processor does
                return steer.eos
            if plan is None:
                steer = None  # no plan (Steering warned): the plain mask
        if self.opportunistic and (steer is None or steer.plan) and self._try_free_draw():
            token = self.draw(logits)
            stats.checks += 1
            if steer is None or steer.fits(engine, token):
                try:
                    engine.advance(token)
                    stats.hits += 1
                    self.misses = 0
                    return token
                except TokenRejected:
                    pass
            self.misses += 1
            self.wait = min(2**self.misses - 1, _MAX_WAIT)
        stats.masks += 1
        allowed = np.flatnonzero(engine.allowed_mask())  # sorted int64 ids
        if len(allowed) and allowed[-1] >= logits.shape[-1]:
            allowed = allowed[allowed < logits.shape[-1]]
        if steer is not None:
            steered = steer.candidates(engine, allowed)
            if steered is not None:
                allowed = steered
        if not len(allowed):
            raise GrammarcError(f"no token can continue the text after {n_generated} generated tokens")
        token = int(allowed[self.draw(logits[torch.from_numpy(allowed)])])
        engine.advance(token)
        return token
