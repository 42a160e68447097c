"""vLLM integration: per-request grammars as a vLLM logits processor (DESIGN.md §10).

`GrammarcLogitsProcessor` is loaded by vLLM through the ``vllm.logits_processors`` entry
point that grammarc installs (or by name: ``LLM(logits_processors=[...])``,
``--logits-processors grammarc.integrations.vllm:GrammarcLogitsProcessor``). A request
asks for a grammar in ``SamplingParams.extra_args["grammarc"]`` (see `grammar_spec` for the
keys); requests without it pass through untouched.

* `validate_params` parses and compiles the request's grammar when vLLM admits it, so a
  bad grammar is an HTTP 400 with grammarc's message, not a failure inside the batch.
* Compiled grammars are cached per process (`grammar_spec.compiled_for`), and every
  processor keeps a bounded LRU of template engines, one per distinct grammar, built on
  the vocabulary of the served model's tokenizer (loaded on the first constrained
  request; columns past the tokenizer, in a padded vocabulary, are never allowed).
  Each request gets its own clone of the template: one `Engine` per request.
* The engine follows the request's output tokens. A history that shrinks or changes
  (speculative tokens rejected, tokens discarded) is rolled back with `Engine.rollback`,
  or replayed when deeper than the engine keeps.
* Masks: the request's grammar decides its row; EOS is allowed exactly when the text is
  complete, and is the only token once the grammar is finished. A token the engine
  rejects (another processor or a sampler quirk let it through) is logged and the
  request is ended with EOS: the server never crashes on it. If another processor
  blocked every token the grammar allows, the grammar wins.

vLLM has two model runners with two logits-processor interfaces, and an entry-point
plugin is loaded by whichever runs: V1 (``vllm.v1.sample.logits_processor``:
``__init__(vllm_config, device, is_pin_memory)``, ``update_state(batch_update)``,
``apply(logits)``) and V2 (``vllm.v1.worker.gpu.sample.logits_processor``:
``__init__(vllm_config, req_states)``, ``add_request(slot, params)``, ``apply(logits,
ctx)``). The V2 loader refuses plugins that are not V2 subclasses and would stop vLLM
from starting, so the one class implements both: it subclasses both bases that the
installed vLLM has and tells the two apart by its constructor's arguments.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from grammarc.engine import Engine, TokenRejected
from grammarc.errors import GrammarcError
from grammarc.tokens.vocabulary import Vocabulary

from .grammar_spec import GrammarSpec, GrammarSpecError, compiled_for, spec_from_extra_args

try:
    from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality
    from vllm.v1.sample.logits_processor import LogitsProcessor as _V1Base
except ImportError:  # a vLLM without the V1 interface
    _V1Base = None
try:
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as _V2Base
except ImportError:  # a vLLM older than Model Runner V2
    _V2Base = None

if _V1Base is None and _V2Base is None:
    raise ImportError(
        "grammarc.integrations.vllm found neither vLLM logits-processor interface "
        "(vllm.v1.sample.logits_processor, vllm.v1.worker.gpu.sample.logits_processor)"
    )

__all__ = ["GrammarcLogitsProcessor", "vocabulary_for_model"]

logger = logging.getLogger(__name__)

TEMPLATE_CACHE_SIZE = 64  # template engines (one per distinct grammar) kept per processor

# vLLM's V1 runner with async scheduling appends -1 for each sampled id and fills in the
# real ids before the logits processors run only when some processor was *named* at
# startup: a processor loaded by its entry point alone never sees them.
_BLIND = (
    "vLLM does not show its logits processors the ids it samples (V1 model runner with async "
    "scheduling, and no logits processor named at startup), so grammars cannot be followed; "
    "requests with a grammar are ended with EOS. Start vLLM with --logits-processors "
    "grammarc.integrations.vllm:GrammarcLogitsProcessor (LLM(logits_processors=[...])), "
    "or with --no-async-scheduling"
)


# ------------------------------------------------------------------ one request


@dataclass
class _Sequence:
    """One request's engine and the generated ids it has seen.

    ``seen[:fed]`` went into the engine; ids after `fed` came after the grammar finished
    (the forced EOS, repeated when the request ignores EOS) or after a rejected id.
    """

    label: str
    template: Engine | None  # None: no engine could be built; the request gets EOS only
    engine: Engine | None
    seen: list[int] = field(default_factory=list)
    fed: int = 0
    rejected_at: int | None = None  # index in `seen` of an id the engine refused
    blind: bool = False  # V1: vLLM never filled in this request's ids (see `_BLIND`)
    trusted: int = 0  # V2: seen[:trusted] is confirmed by vLLM's committed ids

    def sync(self, history: Sequence[int], start: int, *, drafts: bool = False) -> None:
        """Catch up with the generated ids ``history`` = ids[start:] (ids[:start] as seen).

        Ids already seen that differ from the history, or lie past its end, are undone.
        `drafts`: the new ids are speculative; one the grammar refuses is not logged.
        """
        seen = self.seen
        keep = start
        limit = min(len(seen), start + len(history))
        while keep < limit and seen[keep] == history[keep - start]:
            keep += 1
        if keep < len(seen):
            self._truncate(keep)
        for token in history[keep - start :]:
            self._feed(int(token), quiet=drafts)

    def words(self, eos_words: np.ndarray) -> np.ndarray:
        """The packed mask of the next token (uint32 words, bit i = token i)."""
        engine = self.engine
        if engine is None or self.blind or self.rejected_at is not None or engine.is_finished():
            return eos_words
        return engine.packed_mask()

    def _feed(self, token: int, *, quiet: bool = False) -> None:
        self.seen.append(token)
        engine = self.engine
        if engine is None or self.rejected_at is not None or engine.is_finished():
            return
        try:
            engine.advance(token)
        except TokenRejected as error:
            self.rejected_at = len(self.seen) - 1
            if quiet:
                return
            logger.warning(
                "grammarc: %s: generated token %d was not allowed (%s); ending the request with EOS",
                self.label, self.rejected_at, error,
            )
            return
        self.fed = len(self.seen)

    def _truncate(self, keep: int) -> None:
        if self.rejected_at is not None and self.rejected_at >= keep:
            self.rejected_at = None
        if self.fed > keep:
            try:
                self.engine.rollback(self.fed - keep)
                self.fed = keep
            except ValueError:  # deeper than the engine's history: replay from the start
                replay = self.seen[:keep]
                self.engine = self.template.clone()
                self.seen, self.fed, self.rejected_at = [], 0, None
                for token in replay:
                    self._feed(token)
                return
        del self.seen[keep:]


# --------------------------------------------------------------- vocabulary


def vocabulary_for_model(model_config: Any) -> Vocabulary:
    """The `Vocabulary` of the served model: its tokenizer, sized to its logits.

    EOS ids are the tokenizer's plus the generation config's (vLLM stops on both).
    The logits may be wider than the tokenizer (padded vocabularies): the extra ids
    carry no text and are never allowed.
    """
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(
        model_config.tokenizer,
        revision=getattr(model_config, "tokenizer_revision", None),
        trust_remote_code=bool(getattr(model_config, "trust_remote_code", False)),
    )
    width = int(model_config.get_vocab_size())
    eos = {tokenizer.eos_token_id} - {None}
    try:
        generation = model_config.try_get_generation_config() or {}
    except Exception:  # noqa: BLE001 - a model without a generation config
        generation = {}
    extra = generation.get("eos_token_id")
    eos |= set(extra if isinstance(extra, (list, tuple)) else [extra]) - {None}
    size = width if width >= len(tokenizer) else None
    return Vocabulary.from_tokenizer(tokenizer, eos_token_ids=sorted(eos) or None, size=size)


# ------------------------------------------------------------------ masking


def _mask_rows(logits: torch.Tensor, rows: list[int], words: list[np.ndarray]) -> None:
    """Block, in place, every column of ``logits[rows[i]]`` whose bit in ``words[i]`` is 0.

    The words travel to the device packed (one bit per token) and are unpacked there.
    Columns past the words are blocked. A row left without any finite logit (another
    processor blocked what the grammar allows) gets 0 on its allowed columns instead.
    """
    width = logits.shape[-1]
    device = logits.device
    packed = np.ascontiguousarray(np.stack(words).astype("<u4", copy=False)).view(np.uint8)
    data = torch.from_numpy(packed).to(device)
    shifts = torch.arange(8, dtype=torch.uint8, device=device)
    allowed = ((data.unsqueeze(-1) >> shifts) & 1).reshape(len(rows), -1).bool()
    if allowed.shape[1] >= width:
        allowed = allowed[:, :width]
    else:
        pad = torch.zeros((len(rows), width - allowed.shape[1]), dtype=torch.bool, device=device)
        allowed = torch.cat([allowed, pad], dim=1)
    whole = rows == list(range(logits.shape[0]))
    index = None if whole else torch.tensor(rows, dtype=torch.long, device=device)
    part = logits if whole else logits.index_select(0, index)
    part = part.masked_fill(~allowed, float("-inf"))
    dead = torch.isneginf(part).all(dim=-1, keepdim=True)
    part = torch.where(dead & allowed, torch.zeros((), dtype=part.dtype, device=device), part)
    if whole:
        logits.copy_(part)
    else:
        logits.index_copy_(0, index, part)


# ----------------------------------------------------------------- processor


class GrammarcLogitsProcessor(*(base for base in (_V1Base, _V2Base) if base is not None)):
    """Constrains each request that carries ``extra_args["grammarc"]`` to its grammar."""

    def __init__(self, vllm_config: Any, *args: Any) -> None:
        self._model_config = vllm_config.model_config
        self._load_vocabulary: Callable[[], Vocabulary] = lambda: vocabulary_for_model(self._model_config)
        self._vocab: Vocabulary | None = None
        self._vocab_error: str | None = None
        self._templates: OrderedDict[GrammarSpec, Engine] = OrderedDict()
        self._eos_words: np.ndarray | None = None
        if len(args) == 2:  # V1: (device, is_pin_memory)
            self._requests: dict[int, tuple[_Sequence, list[int]]] = {}
            self._blind_logged = False
            scheduler = getattr(vllm_config, "scheduler_config", None)
            if getattr(scheduler, "async_scheduling", False) and not getattr(self._model_config, "logits_processors", None):
                logger.warning("grammarc: %s.", _BLIND)
        elif len(args) == 1:  # V2: (req_states)
            self._req_states = args[0]
            self._slots: dict[int, _Sequence] = {}
        else:
            raise TypeError(
                "GrammarcLogitsProcessor(vllm_config, device, is_pin_memory) for vLLM's V1 model runner "
                f"or (vllm_config, req_states) for V2; got {1 + len(args)} arguments"
            )

    # -- both runners ---------------------------------------------------------------
    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        """Parse and compile the request's grammar; a mistake is a ValueError (HTTP 400)."""
        spec = spec_from_extra_args(getattr(sampling_params, "extra_args", None))
        if spec is not None:
            compiled_for(spec)

    def is_argmax_invariant(self) -> bool:
        return False  # masking changes which token is the most likely

    def apply_staged_writes(self) -> None:
        """V2: nothing is staged; requests are read from ``req_states`` in `apply`."""

    def apply(self, logits: torch.Tensor, ctx: Any = None) -> torch.Tensor:
        if ctx is None:
            self._apply_v1(logits)
        else:
            self._apply_v2(logits, ctx)
        return logits

    # -- V1 -------------------------------------------------------------------------
    def update_state(self, batch_update: "BatchUpdate | None") -> None:
        """Follow the batch (removed, added, moved: vLLM's order), then the new ids."""
        if batch_update is not None:
            requests = self._requests
            for index in batch_update.removed:
                requests.pop(index, None)
            for index, params, _prompt, output in batch_update.added:
                sequence = self._sequence_for(params)
                if sequence is None:
                    requests.pop(index, None)
                else:
                    requests[index] = (sequence, output)
            for a, b, direction in batch_update.moved:
                first, second = requests.pop(a, None), requests.pop(b, None)
                if first is not None:
                    requests[b] = first
                if second is not None and direction == MoveDirectionality.SWAP:
                    requests[a] = second
        for sequence, output in self._requests.values():
            _sync_output(sequence, output)

    def _apply_v1(self, logits: torch.Tensor) -> None:
        if not self._requests:
            return
        batch = logits.shape[0]
        rows, words = [], []
        for index in sorted(self._requests):
            if index >= batch:
                continue
            sequence, output = self._requests[index]
            _sync_output(sequence, output)  # async scheduling fills placeholders late
            if output and output[-1] < 0 and not sequence.blind:  # and now it never will
                sequence.blind = True
                if not self._blind_logged:
                    self._blind_logged = True
                    logger.error("grammarc: %s.", _BLIND)
            rows.append(index)
            words.append(sequence.words(self._eos_words))
        if rows:
            _mask_rows(logits, rows, words)

    # -- V2 -------------------------------------------------------------------------
    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        """A request takes slot `req_idx`; True when grammarc constrains it."""
        sequence = self._sequence_for(sampling_params)
        if sequence is None:
            self._slots.pop(req_idx, None)
            return False
        self._slots[req_idx] = sequence
        return True

    def _apply_v2(self, logits: torch.Tensor, ctx: Any) -> None:
        slots = [int(s) for s in np.asarray(ctx.idx_mapping_np)]
        batch = [(b, s) for b, s in enumerate(slots) if s in self._slots]
        if not batch:
            return
        prompt_len = np.asarray(self._req_states.prompt_len.np)
        # Per batch position: its logits rows, the draft ids fed before each row after
        # the first, and how many generated ids vLLM has committed.
        rows_of: dict[int, list[int]] = {}
        drafts: dict[int, list[int]] = {}
        committed: dict[int, int] = {}
        if logits.shape[0] == len(slots):  # one row per request: its length is known on the host
            ends = np.asarray(ctx.seq_lens_upper_bound_np)
            for b, s in batch:
                rows_of[b], drafts[b] = [b], []
                committed[b] = int(ends[b]) - int(prompt_len[s])
        else:  # speculative decoding: a request's rows feed its last id, then its drafts
            row_slots = ctx.expanded_idx_mapping.cpu().tolist()
            local = ctx.expanded_local_pos.cpu().tolist()
            pos = ctx.pos.cpu().tolist()
            input_ids = ctx.input_ids.cpu().tolist()
            position_of = {s: b for b, s in batch}
            for row, slot in enumerate(row_slots):
                b = position_of.get(int(slot))
                if b is None:
                    continue
                if local[row] == 0:
                    rows_of[b], drafts[b] = [row], []
                    committed[b] = int(pos[row]) + 1 - int(prompt_len[slot])
                else:
                    rows_of[b].append(row)
                    drafts[b].append(int(input_ids[row]))
        self._read_committed(batch, committed, prompt_len)
        rows, words = [], []
        for b, s in batch:
            sequence = self._slots[s]
            start = max(0, committed[b])
            for j, row in enumerate(rows_of[b]):
                sequence.sync(drafts[b][:j], start, drafts=True)  # undone next step if rejected
                rows.append(row)
                words.append(sequence.words(self._eos_words))
        _mask_rows(logits, rows, words)

    def _read_committed(self, batch: list[tuple[int, int]], committed: dict[int, int], prompt_len: np.ndarray) -> None:
        """Bring every sequence up to its committed ids, read from the device in one copy.

        Ids before ``sequence.trusted`` were confirmed by an earlier step; only the rest
        is read (the drafts fed last step are compared with what vLLM committed).
        """
        slot_index, position, spans = [], [], []
        for b, s in batch:
            sequence = self._slots[s]
            end = max(0, committed[b])
            begin = min(sequence.trusted, end)
            base = int(prompt_len[s])
            slot_index.extend([s] * (end - begin))
            position.extend(range(base + begin, base + end))
            spans.append((sequence, begin, end))
        tokens: list[int] = []
        if slot_index:
            table = self._req_states.all_token_ids.gpu
            index = (torch.tensor(slot_index, device=table.device), torch.tensor(position, device=table.device))
            tokens = table[index].cpu().tolist()
        offset = 0
        for sequence, begin, end in spans:
            sequence.sync(tokens[offset : offset + end - begin], begin)
            sequence.trusted = end
            offset += end - begin

    # -- shared state ---------------------------------------------------------------
    def _sequence_for(self, params: Any) -> _Sequence | None:
        """A fresh sequence for a request with a grammar; None for one without."""
        try:
            spec = spec_from_extra_args(getattr(params, "extra_args", None))
        except GrammarSpecError as error:  # vLLM validates first; this is a second line
            logger.error("grammarc: ending a request with EOS: %s", error)
            return self._failed("request with an invalid grammar")
        if spec is None:
            return None
        template = self._template(spec)
        if template is None:
            return self._failed(spec.describe())
        return _Sequence(spec.describe(), template, template.clone())

    def _failed(self, label: str) -> _Sequence | None:
        """A request whose grammar cannot be served: it ends at once, with EOS."""
        self._vocabulary()
        if self._eos_words is None:
            logger.error("grammarc: %s is NOT constrained: no EOS id is known for this model", label)
            return None
        return _Sequence(label, None, None)

    def _template(self, spec: GrammarSpec) -> Engine | None:
        template = self._templates.get(spec)
        if template is not None:
            self._templates.move_to_end(spec)
            return template
        vocab = self._vocabulary()
        if vocab is None:
            return None
        try:
            template = Engine(compiled_for(spec), vocab)
        except GrammarcError as error:
            logger.error("grammarc: %s cannot be served, ending the request with EOS: %s", spec.describe(), error)
            return None
        self._templates[spec] = template
        if len(self._templates) > TEMPLATE_CACHE_SIZE:
            self._templates.popitem(last=False)
        return template

    def _vocabulary(self) -> Vocabulary | None:
        """The served model's vocabulary, built on first use (None if it cannot be)."""
        if self._vocab is None and self._vocab_error is None:
            try:
                self._vocab = self._load_vocabulary()
            except Exception as error:  # noqa: BLE001 - a tokenizer failure ends grammar requests, not the server
                self._vocab_error = f"{type(error).__name__}: {error}"
                logger.error("grammarc: cannot build the vocabulary of the served model: %s", self._vocab_error)
                self._eos_words = _fallback_eos_words(self._model_config)
            else:
                self._eos_words = _eos_words(self._vocab)
        return self._vocab


def _sync_output(sequence: _Sequence, output: list[int]) -> None:
    """V1: follow vLLM's live list of output ids (trailing -1: async placeholders)."""
    end = len(output)
    while end and output[end - 1] < 0:
        end -= 1
    start = max(0, min(len(sequence.seen), end) - 1)
    sequence.sync(output[start:end], start)


def _eos_words(vocab: Vocabulary) -> np.ndarray:
    return _words_of(vocab.eos_token_ids, vocab.size)


def _fallback_eos_words(model_config: Any) -> np.ndarray | None:
    """EOS ids from the model's configs, for ending requests when the tokenizer failed."""
    ids: set[int] = set()
    try:
        sources = [model_config.try_get_generation_config() or {}, vars(model_config.hf_text_config)]
        width = int(model_config.get_vocab_size())
    except Exception:  # noqa: BLE001
        return None
    for source in sources:
        eos = source.get("eos_token_id")
        ids |= {int(i) for i in (eos if isinstance(eos, (list, tuple)) else [eos]) if i is not None}
    ids = {i for i in ids if 0 <= i < width}
    return _words_of(ids, width) if ids else None


def _words_of(ids: Any, size: int) -> np.ndarray:
    words = np.zeros((size + 31) // 32, dtype=np.uint32)
    for i in ids:
        words[i >> 5] |= np.uint32(1 << (i & 31))
    words.flags.writeable = False
    return words
