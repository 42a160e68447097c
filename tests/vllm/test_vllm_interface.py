"""GrammarcLogitsProcessor against vLLM's own batch machinery, without a model.

V1: requests come and go through vLLM's `InputBatch` (add, remove, condense, swap) and
`BatchUpdateBuilder`; after every step each row's finite logits must be exactly the
tokens that an `Engine` built independently from the same grammar allows, walked with
the same tokens. V2: vLLM's `LogitsContext` / `LogitsProcRequestState` dataclasses, with
speculative draft rows. Finished documents are checked by independent validators
(jsonschema, `re`).
"""

from __future__ import annotations

import json
import logging
import random
import re
from types import SimpleNamespace

import jsonschema
import numpy as np
import pytest
import torch

import vllm_env

vllm_env.require()

# ruff: noqa: E402 (vLLM is imported once vllm_env.require() has passed)
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import (
    BatchUpdateBuilder,
    LogitsProcessors,
    MoveDirectionality,
    build_logitsprocs,
    validate_logits_processors_parameters,
)
from vllm.v1.worker.gpu_input_batch import CachedRequestState, InputBatch

import grammarc
import tiny_model
from grammarc import Engine, Grammar
from grammarc.integrations.vllm import GrammarcLogitsProcessor, vocabulary_for_model

WIDTH = tiny_model.TOKENIZER_SIZE + tiny_model.PADDING
EOS = tiny_model.EOS
CPU = torch.device("cpu")

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 5},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "ok": {"type": "boolean"},
    },
    "required": ["name", "age", "ok"],
    "additionalProperties": False,
}
EMAIL = r"[a-z]{2,5}@example\.com"
LIST_EBNF = "start ::= '[' [ num { ',' num } ] ']' ; num ::= #'[0-9]{1,3}' ;"

# request args -> (independent reference grammar, validator of a finished text or None)
GRAMMARS = {
    "schema": (
        {"json_schema": SCHEMA, "whitespace": "compact"},
        lambda: Grammar.from_json_schema(SCHEMA, whitespace="compact"),
        lambda text: jsonschema.validate(json.loads(text), SCHEMA) is None,
    ),
    "email": ({"regex": EMAIL}, lambda: Grammar.from_regex(EMAIL), lambda text: re.fullmatch(EMAIL, text) is not None),
    "list": ({"ebnf": LIST_EBNF}, lambda: Grammar.from_ebnf(LIST_EBNF), lambda text: re.fullmatch(r"\[(\d{1,3}(,\d{1,3})*)?\]", text) is not None),
    "json": ({"stdlib": "json"}, lambda: grammarc.stdlib("json"), lambda text: _parses_as_json(text)),
}


def _parses_as_json(text: str) -> bool:
    json.loads(text)  # raises on invalid JSON
    return True


@pytest.fixture(scope="module")
def vocab(vllm_config):
    return vocabulary_for_model(vllm_config.model_config)


def params(grammar_args: dict | None) -> SamplingParams:
    return SamplingParams(extra_args=None if grammar_args is None else {"grammarc": grammar_args})


def finite(row: torch.Tensor) -> set[int]:
    return set(torch.isfinite(row).nonzero().flatten().tolist())


def expected(engine: Engine) -> set[int]:
    if engine.is_finished():
        return {EOS}
    return set(engine.allowed_token_ids().tolist())


def test_the_vocabulary_is_the_tokenizer_padded_to_the_logits(vocab):
    assert vocab.size == WIDTH
    assert vocab.eos_token_ids == {EOS}
    assert all(vocab.tokens[i] == b"" for i in range(tiny_model.TOKENIZER_SIZE, WIDTH))
    assert vocab.tokens[tiny_model.TOKENIZER_SIZE - 1] != b""


# ------------------------------------------------------------------ V1: InputBatch


class Walk:
    """Requests in an `InputBatch`, each with an independent reference engine."""

    def __init__(self, vllm_config, vocab, seed: int = 0):
        self.processor = GrammarcLogitsProcessor(vllm_config, CPU, False)
        self.batch = InputBatch(
            max_num_reqs=8, max_model_len=256, max_num_batched_tokens=1024, device=CPU,
            vocab_size=WIDTH, block_sizes=[16], max_num_blocks_per_req=[16],
            logitsprocs=LogitsProcessors([self.processor]), logitsprocs_need_output_token_ids=True,
        )
        self.vocab = vocab
        self.rng = random.Random(seed)
        self.gen = torch.Generator().manual_seed(seed)
        self.requests: dict[str, CachedRequestState] = {}
        self.references: dict[str, tuple[Engine, object] | None] = {}

    def add(self, req_id: str, kind: str | None) -> None:
        args = None if kind is None else GRAMMARS[kind][0]
        state = CachedRequestState(
            req_id=req_id, prompt_token_ids=[tiny_model.BOS, 5, 6], mm_features=[],
            sampling_params=params(args), generator=None, block_ids=([],),
            num_computed_tokens=0, output_token_ids=[],
        )
        self.requests[req_id] = state
        self.references[req_id] = None if kind is None else (Engine(GRAMMARS[kind][1](), self.vocab), GRAMMARS[kind][2])
        self.batch.add_request(state)

    def step(self) -> None:
        """Refresh (update_state), apply, check every row, sample one token per row."""
        self.batch.refresh_metadata()
        logits = torch.randn(self.batch.num_reqs, WIDTH, generator=self.gen)
        before = logits.clone()
        out = self.processor.apply(logits)
        assert out is logits
        for row, req_id in enumerate(self.batch.req_ids):
            reference = self.references[req_id]
            if reference is None:
                assert torch.equal(logits[row], before[row]), f"unconstrained {req_id} was changed"
                token = self.rng.randrange(WIDTH)
            else:
                engine, _ = reference
                allowed = finite(logits[row])
                assert allowed == expected(engine), f"{req_id} after {self.requests[req_id].output_token_ids}"
                assert max(allowed) < tiny_model.TOKENIZER_SIZE  # padded columns stay blocked
                keep = sorted(allowed)
                assert torch.equal(logits[row, keep], before[row, keep])
                token = self.rng.choice(keep)
                if not engine.is_finished():
                    engine.advance(token)
            self.requests[req_id].output_token_ids.append(token)

    def check_finished_texts(self) -> int:
        done = 0
        for req_id, reference in self.references.items():
            if reference is None or not reference[0].is_finished():
                continue
            ids = self.requests[req_id].output_token_ids
            text = self.vocab.decode(ids[: ids.index(EOS)] if EOS in ids else ids).decode("utf-8")
            assert reference[1](text), (req_id, text)
            done += 1
        return done


def test_input_batch_add_remove_condense_swap(vllm_config, vocab):
    walk = Walk(vllm_config, vocab, seed=1)
    walk.add("a", "schema")
    walk.add("b", None)
    walk.add("c", "email")
    for _ in range(4):
        walk.step()
    # The model runner's order: removals, additions (into freed slots), condense.
    walk.batch.remove_request("a")
    walk.batch.remove_request("b")
    walk.add("d", "list")
    walk.add("e", "json")
    walk.add("f", "schema")
    walk.batch.condense()
    for _ in range(3):
        walk.step()
    walk.batch.swap_states(0, walk.batch.num_reqs - 1)
    walk.batch.remove_request("c")
    walk.batch.condense()
    for _ in range(100):
        walk.step()
    assert walk.batch.req_ids and set(walk.batch.req_ids) == {"d", "e", "f"}
    assert walk.check_finished_texts() >= 1


@pytest.mark.parametrize("seed", range(4))
def test_random_walks_end_in_valid_documents(vllm_config, vocab, seed):
    walk = Walk(vllm_config, vocab, seed=seed)
    walk.add("s", "schema")
    walk.add("e", "email")
    walk.add("u", None)
    for _ in range(120):
        walk.step()
    assert walk.references["s"][0].is_finished() and walk.references["e"][0].is_finished()
    assert walk.check_finished_texts() == 2


# ----------------------------------------------------------- V1: BatchUpdateBuilder


def ids_of(vocab, text: str) -> list[int]:
    return [vocab.ids_for(bytes([b]))[0] for b in text.encode()]


def only_bytes(vocab, allowed: set[int]) -> set[bytes]:
    return {vocab.tokens[i] for i in allowed}


def test_added_removed_moved_and_swapped_rows(vllm_config, vocab):
    processor = GrammarcLogitsProcessor(vllm_config, CPU, False)
    builder = BatchUpdateBuilder()
    a_only, b_only = Engine(Grammar.from_regex("a+"), vocab), Engine(Grammar.from_regex("b+"), vocab)
    expect_a, expect_b = set(a_only.allowed_token_ids().tolist()), set(b_only.allowed_token_ids().tolist())
    assert expect_a and expect_b and not expect_a & expect_b
    builder.added.append((0, params({"regex": "a+"}), [0], []))
    builder.added.append((1, params(None), [0], []))
    builder.added.append((2, params({"regex": "b+"}), [0], []))
    processor.update_state(builder.get_and_reset(3))

    def masks(batch: int) -> list[set[int] | None]:
        logits = torch.zeros(batch, WIDTH)
        processor.apply(logits)
        return [None if len(finite(r)) == WIDTH else finite(r) for r in logits]

    assert masks(3) == [expect_a, None, expect_b]
    builder.moved.append((0, 2, MoveDirectionality.SWAP))
    processor.update_state(builder.get_and_reset(3))
    assert masks(3) == [expect_b, None, expect_a]
    builder.removed_append(1)
    builder.moved.append((2, 1, MoveDirectionality.UNIDIRECTIONAL))
    processor.update_state(builder.get_and_reset(2))
    assert masks(2) == [expect_b, expect_a]
    builder.moved.append((0, 1, MoveDirectionality.UNIDIRECTIONAL))  # replaces the request at 1
    processor.update_state(builder.get_and_reset(2))
    assert masks(2) == [None, expect_b]
    builder.added.append((1, params(None), [0], []))  # an added request replaces one too
    processor.update_state(builder.get_and_reset(2))
    assert masks(2) == [None, None]
    processor.update_state(None)
    logits = torch.randn(2, WIDTH)
    assert torch.equal(processor.apply(logits.clone()), logits)


def one_request(vllm_config, grammar_args: dict):
    processor = GrammarcLogitsProcessor(vllm_config, CPU, False)
    builder = BatchUpdateBuilder()
    output: list[int] = []
    builder.added.append((0, params(grammar_args), [0], output))
    processor.update_state(builder.get_and_reset(1))

    def allowed() -> set[int]:
        processor.update_state(None)
        logits = torch.zeros(1, WIDTH)
        processor.apply(logits)
        return finite(logits[0])

    return output, allowed


def test_eos_exactly_when_complete_and_alone_when_finished(vllm_config, vocab):
    output, allowed = one_request(vllm_config, {"regex": "(ab)+"})
    for step, char in enumerate("ababa"):
        complete = step in (2, 4)  # after "ab", "abab"
        assert (EOS in allowed()) == complete, output
        output.append(ids_of(vocab, char)[0])
    assert EOS not in allowed()
    output, allowed = one_request(vllm_config, {"regex": "ab"})
    output.extend(ids_of(vocab, "ab"))
    assert allowed() == {EOS}  # complete and nothing extends it
    output.append(EOS)
    assert allowed() == {EOS}
    output.append(EOS)  # a request with ignore_eos goes on: still EOS only, no error
    assert allowed() == {EOS}


def test_rejected_token_ends_the_request_and_is_logged(vllm_config, vocab, caplog):
    output, allowed = one_request(vllm_config, {"regex": "a+"})
    output.extend(ids_of(vocab, "aab"))
    with caplog.at_level(logging.WARNING, logger="grammarc.integrations.vllm"):
        assert allowed() == {EOS}
        assert allowed() == {EOS}
    warnings = [r for r in caplog.records if "was not allowed" in r.getMessage()]
    assert len(warnings) == 1 and "generated token 2" in warnings[0].getMessage()
    del output[2:]  # the history loses the bad token: the grammar applies again
    assert only_bytes(vocab, allowed() - {EOS}) <= {b"a" * n for n in range(1, 20)}
    assert EOS in allowed()


def test_shorter_or_changed_history_rolls_back(vllm_config, vocab):
    grammar = "[0-9]{1,3}(,[0-9]{1,3})*"
    output, allowed = one_request(vllm_config, {"regex": grammar})

    def reference(text: str) -> set[int]:
        engine = Engine(Grammar.from_regex(grammar), vocab)
        for token in ids_of(vocab, text):
            engine.advance(token)
        return expected(engine)

    output.extend(ids_of(vocab, "12,3"))
    assert allowed() == reference("12,3")
    del output[2:]  # speculative tokens rejected
    assert allowed() == reference("12")
    output.extend(ids_of(vocab, ",34"))
    assert allowed() == reference("12,34")
    output[-1] = ids_of(vocab, ",")[0]  # same length, different last token
    assert allowed() == reference("12,3,") != reference("12,34")


def test_rollback_deeper_than_the_engine_history_replays(vllm_config, vocab):
    output, allowed = one_request(vllm_config, {"regex": "(aa)+"})
    output.extend(ids_of(vocab, "a" * 100))
    assert EOS in allowed()
    del output[11:]
    assert EOS not in allowed()
    del output[10:]
    assert EOS in allowed()


def test_async_placeholders_are_filled_in_before_apply(vllm_config, vocab):
    processor = GrammarcLogitsProcessor(vllm_config, CPU, False)
    builder = BatchUpdateBuilder()
    output = [ids_of(vocab, "a")[0], -1]  # async scheduling: the last sampled id is not known yet
    builder.added.append((0, params({"regex": "abc"}), [0], output))
    processor.update_state(builder.get_and_reset(1))
    output[-1] = ids_of(vocab, "b")[0]  # vLLM fills it in right before the logits processors run
    logits = torch.zeros(1, WIDTH)
    processor.apply(logits)
    assert only_bytes(vocab, finite(logits[0])) == {b"c"}


def test_placeholders_never_filled_in_end_the_request_with_a_remedy(vllm_config, vocab, caplog):
    processor = GrammarcLogitsProcessor(vllm_config, CPU, False)
    builder = BatchUpdateBuilder()
    output = [ids_of(vocab, "a")[0], -1]
    builder.added.append((0, params({"regex": "abc"}), [0], output))
    processor.update_state(builder.get_and_reset(1))
    with caplog.at_level(logging.ERROR, logger="grammarc.integrations.vllm"):
        for _ in range(2):
            logits = torch.zeros(1, WIDTH)
            processor.apply(logits)
            assert finite(logits[0]) == {EOS}
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "--logits-processors grammarc.integrations.vllm:GrammarcLogitsProcessor" in messages[0]


def test_grammar_wins_over_a_processor_that_blocked_everything(vllm_config, vocab):
    processor = GrammarcLogitsProcessor(vllm_config, CPU, False)
    builder = BatchUpdateBuilder()
    builder.added.append((0, params({"regex": "ab"}), [0], []))
    builder.added.append((1, params(None), [0], []))
    processor.update_state(builder.get_and_reset(2))
    logits = torch.full((2, WIDTH), float("-inf"))
    processor.apply(logits)
    assert only_bytes(vocab, finite(logits[0])) == {b"a"}
    assert set(logits[0][torch.isfinite(logits[0])].tolist()) == {0.0}
    assert finite(logits[1]) == set()  # not ours to fix


# ---------------------------------------------------------- validation and loading


BAD = [
    ({"regex": "(?<=a)b"}, "extra_args['grammarc']['regex']: lookbehind (?<=...) is not supported (at offset 0 in pattern '(?<=a)b')"),
    ({"ebnf": "start ::= x ;"}, "extra_args['grammarc']['ebnf']: <request ebnf>:1:11: rule 'start' refers to undefined rule 'x'"),
    ({"regex": "a", "stdlib": "json"}, "extra_args['grammarc'] names 2 grammars (regex, stdlib); give exactly one"),
    (["json"], "extra_args['grammarc'] must be an object with one of the keys json_schema, regex, ebnf, gbnf, lark, stdlib; got list"),
]


@pytest.mark.parametrize("args, message", BAD)
def test_validate_params_gives_precise_errors(args, message):
    request = SamplingParams(extra_args={"grammarc": args})
    with pytest.raises(ValueError) as caught:
        GrammarcLogitsProcessor.validate_params(request)
    assert str(caught.value).startswith(message)
    # vLLM's own admission path (plugins from the entry point) says the same.
    from vllm.exceptions import VLLMValidationError

    with pytest.raises(VLLMValidationError) as caught:
        validate_logits_processors_parameters(None, request)
    assert str(caught.value).startswith(message)


def test_validate_params_accepts_good_and_absent_grammars():
    for args, _, _ in GRAMMARS.values():
        GrammarcLogitsProcessor.validate_params(params(args))
    GrammarcLogitsProcessor.validate_params(SamplingParams())
    GrammarcLogitsProcessor.validate_params(SamplingParams(extra_args={"other": 1}))


def test_openai_api_requests_carry_the_grammar_as_json_text(vllm_config, vocab):
    """``vllm_xargs`` holds only strings and numbers: the grammar object travels as JSON text."""
    from vllm.entrypoints.openai.completion.protocol import CompletionRequest

    request = CompletionRequest(
        model="tiny", prompt="x", max_tokens=8,
        vllm_xargs={"grammarc": json.dumps({"regex": "ab"})},
    )
    sampling = request.to_sampling_params(max_tokens=8)
    GrammarcLogitsProcessor.validate_params(sampling)
    processor = GrammarcLogitsProcessor(vllm_config, CPU, False)
    builder = BatchUpdateBuilder()
    builder.added.append((0, sampling, [0], []))
    processor.update_state(builder.get_and_reset(1))
    logits = torch.zeros(1, WIDTH)
    processor.apply(logits)
    assert only_bytes(vocab, finite(logits[0])) == {b"a", b"ab"} & set(vocab.tokens)


def test_startup_warns_where_async_scheduling_would_hide_the_ids(vllm_config, caplog):
    hidden = SimpleNamespace(model_config=vllm_config.model_config, scheduler_config=SimpleNamespace(async_scheduling=True))
    named = SimpleNamespace(
        model_config=SimpleNamespace(logits_processors=["grammarc.integrations.vllm:GrammarcLogitsProcessor"]),
        scheduler_config=SimpleNamespace(async_scheduling=True),
    )
    with caplog.at_level(logging.WARNING, logger="grammarc.integrations.vllm"):
        GrammarcLogitsProcessor(named, CPU, False)
        GrammarcLogitsProcessor(vllm_config, CPU, False)  # CPU: no async scheduling
        assert not caplog.records
        GrammarcLogitsProcessor(hidden, CPU, False)
    assert len(caplog.records) == 1 and "--no-async-scheduling" in caplog.records[0].getMessage()


def test_an_unvalidated_bad_grammar_ends_its_request_with_eos(vllm_config, caplog):
    processor = GrammarcLogitsProcessor(vllm_config, CPU, False)
    builder = BatchUpdateBuilder()
    builder.added.append((0, params({"ebnf": "start ::= x ;"}), [0], []))
    with caplog.at_level(logging.ERROR, logger="grammarc.integrations.vllm"):
        processor.update_state(builder.get_and_reset(1))
    assert any("undefined rule 'x'" in r.getMessage() for r in caplog.records)
    logits = torch.zeros(1, WIDTH)
    processor.apply(logits)
    assert finite(logits[0]) == {EOS}


def test_vllm_loads_the_processor_once_through_the_entry_point(vllm_config):
    processors = build_logitsprocs(vllm_config, CPU, False, False, [])
    ours = [p for p in processors.all if isinstance(p, GrammarcLogitsProcessor)]
    assert len(ours) == 1 and ours[0] in processors.non_argmax_invariant
    # Named as well (the remedy for async scheduling): a second instance (masking twice
    # gives the same logits).
    named = build_logitsprocs(vllm_config, CPU, False, False, ["grammarc.integrations.vllm:GrammarcLogitsProcessor"])
    assert sum(isinstance(p, GrammarcLogitsProcessor) for p in named.all) == 2


def test_templates_are_shared_and_engines_are_per_request(vllm_config):
    processor = GrammarcLogitsProcessor(vllm_config, CPU, False)
    builder = BatchUpdateBuilder()
    for i in range(3):
        builder.added.append((i, params({"regex": "ab"}), [0], []))
    builder.added.append((3, params({"regex": "ba"}), [0], []))
    processor.update_state(builder.get_and_reset(4))
    sequences = [processor._requests[i][0] for i in range(4)]
    assert len(processor._templates) == 2
    assert sequences[0].template is sequences[1].template is sequences[2].template
    assert len({id(s.engine) for s in sequences}) == 4
    assert sequences[0].engine.index is sequences[1].engine.index


# ------------------------------------------------------------------------- V2


def v2_processor(vllm_config, slots: int = 4, length: int = 128):
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcRequestState

    tokens = torch.zeros(slots, length, dtype=torch.int32)
    state = LogitsProcRequestState(
        device=CPU, max_num_reqs=slots, vocab_size=WIDTH,
        all_token_ids=SimpleNamespace(gpu=tokens),
        prompt_len=SimpleNamespace(np=np.zeros(slots, dtype=np.int32)),
        prefill_len=SimpleNamespace(np=np.zeros(slots, dtype=np.int32)),
        total_len=SimpleNamespace(gpu=torch.zeros(slots, dtype=torch.int32)),
    )
    return GrammarcLogitsProcessor(vllm_config, state), state


def v2_context(slots: list[int], pos: list[int], *, rows: list[tuple[int, int, int]] | None = None):
    """rows: (slot, local position, input id) per logits row; default one row per request."""
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext

    if rows is None:
        rows = [(s, 0, 0) for s in slots]
    row_pos = []
    for slot, local, _ in rows:
        row_pos.append(pos[slots.index(slot)] + local)
    return LogitsContext(
        expanded_idx_mapping=torch.tensor([r[0] for r in rows]),
        idx_mapping=torch.tensor(slots),
        idx_mapping_np=np.array(slots),
        expanded_local_pos=torch.tensor([r[1] for r in rows]),
        input_ids=torch.tensor([r[2] for r in rows]),
        pos=torch.tensor(row_pos),
        seq_lens_upper_bound_np=np.array([p + 1 for p in pos]),
    )


def test_v2_requests_in_slots_follow_committed_tokens(vllm_config, vocab):
    processor, state = v2_processor(vllm_config)
    assert processor.add_request(2, params(GRAMMARS["schema"][0]))
    assert not processor.add_request(1, params(None))
    assert processor.add_request(0, params(GRAMMARS["email"][0]))
    references = {2: Engine(GRAMMARS["schema"][1](), vocab), 0: Engine(GRAMMARS["email"][1](), vocab)}
    prompt = {0: 4, 1: 2, 2: 3}
    generated = {0: [], 1: [], 2: []}
    for s, n in prompt.items():
        state.prompt_len.np[s] = n
    rng = random.Random(5)
    for step in range(60):
        order = [2, 1, 0] if step % 2 else [0, 2, 1]  # batch positions change every step
        pos = [prompt[s] + len(generated[s]) - 1 for s in order]
        logits = torch.randn(3, WIDTH)
        before = logits.clone()
        processor.apply(logits, v2_context(order, pos))
        for row, s in enumerate(order):
            if s == 1:
                assert torch.equal(logits[row], before[row])
                token = rng.randrange(WIDTH)
            else:
                allowed = finite(logits[row])
                assert allowed == expected(references[s]), (s, generated[s])
                token = rng.choice(sorted(allowed))
                if not references[s].is_finished():
                    references[s].advance(token)
            state.all_token_ids.gpu[s, prompt[s] + len(generated[s])] = token
            generated[s].append(token)
    text = vocab.decode(generated[2][: generated[2].index(EOS)]).decode()
    assert jsonschema.validate(json.loads(text), SCHEMA) is None


def test_v2_speculative_drafts_are_masked_and_rolled_back(vllm_config, vocab):
    grammar = "[0-9]{1,3}(,[0-9]{1,3})*"
    processor, state = v2_processor(vllm_config)
    processor.add_request(3, params({"regex": grammar}))
    state.prompt_len.np[3] = 2

    def reference(text: str) -> set[int]:
        engine = Engine(Grammar.from_regex(grammar), vocab)
        for token in ids_of(vocab, text):
            engine.advance(token)
        return expected(engine)

    processor.add_request(1, params(None))  # an unconstrained request with drafts comes first

    def step(committed: str, drafts: str) -> list[set[int]]:
        ids = ids_of(vocab, committed)
        state.all_token_ids.gpu[3, 2 : 2 + len(ids)] = torch.tensor(ids, dtype=torch.int32)
        pos = 2 + len(ids) - 1
        rows = [(1, 0, 7), (1, 1, 8)]
        rows += [(3, 0, ids[-1] if ids else 0)] + [(3, j + 1, t) for j, t in enumerate(ids_of(vocab, drafts))]
        logits = torch.randn(len(rows), WIDTH)
        before = logits.clone()
        processor.apply(logits, v2_context([1, 3], [20, pos], rows=rows))
        assert torch.equal(logits[:2], before[:2])
        return [finite(row) for row in logits[2:]]

    assert step("1", "2,") == [reference("1"), reference("12"), reference("12,")]
    # "2" accepted, "," rejected: vLLM commits "12" and a bonus "3".
    assert step("123", ",4") == [reference("123"), reference("123,"), reference("123,4")]
    # A draft the grammar forbids: its row and the next get EOS only.
    masks = step("123,4", "x5")
    assert masks[0] == reference("123,4") and masks[1] == {EOS} and masks[2] == {EOS}
    assert step("123,45", "") == [reference("123,45")]
