"""The transformers integration: GrammarLogitsProcessor, grammarc.generate, grammarc demo.

Unit tests drive the processor with fake logits over small byte vocabularies and compare
every row's mask with an independent engine's. End-to-end tests run ``model.generate``
with a tiny randomly initialised LlamaForCausalLM whose vocabulary is Mistral's Tekken
(131,072 ids, shipped offline by mistral-common): every constrained row must end, with
EOS, in a text its grammar accepts. Needs torch and transformers (skipped otherwise);
nothing is downloaded (HF_HUB_OFFLINE).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import grammarc  # noqa: E402
from grammarc import Engine, Grammar, TokenRejected, Vocabulary  # noqa: E402
from grammarc.integrations.steering import shortest_completion  # noqa: E402
from grammarc.integrations.transformers import GrammarLogitsProcessor, resolve_grammar  # noqa: E402

NEG = float("-inf")


def _torch():
    return pytest.importorskip("torch", reason="pip install torch (CPU build) for the transformers integration")


def _transformers():
    _torch()
    return pytest.importorskip("transformers", reason="pip install transformers for the transformers integration")


def test_importing_grammarc_does_not_import_torch_or_transformers():
    code = (
        "import sys, grammarc, grammarc.integrations.transformers, grammarc.integrations.generate, grammarc.integrations.demo\n"
        "heavy = [m for m in ('torch', 'transformers', 'tokenizers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert callable(grammarc.generate) and grammarc.GrammarLogitsProcessor\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------ fake logits

# ids: 0 a, 1 b, 2 ab, 3 c, 4 EOS, 5 ba, 6 (, 7 ), 8 " {", 9 {, 10 }
TOKENS = [b"a", b"b", b"ab", b"c", None, b"ba", b"(", b")", b" {", b"{", b"}"]
EOS = 4


def byte_vocab(size: int | None = None) -> Vocabulary:
    return Vocabulary.from_bytes(TOKENS, eos_token_ids=[EOS], size=size)


def allowed(scores, row: int = 0) -> set[int]:
    return {int(i) for i in np.flatnonzero(np.isfinite(scores[row].numpy()))}


def step(processor, rows: list[list[int]], width: int = len(TOKENS), seed: int = 0):
    """Call the processor on prompt [99] + `rows` (equal lengths) with random scores."""
    torch = _torch()
    ids = torch.tensor([[99] + r for r in rows], dtype=torch.long)
    scores = torch.randn(len(rows), width, generator=torch.Generator().manual_seed(seed))
    original = scores.clone()
    out = processor(ids, scores)
    assert out is scores  # in place, as transformers expects
    finite = torch.isfinite(out)
    assert torch.equal(out[finite], original[finite])  # allowed logits are untouched
    return out


def test_masks_follow_the_sampled_tokens():
    vocab = byte_vocab()
    processor = GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= 'a' 'b'* ;"), vocab)])
    assert allowed(step(processor, [[]])) == {0, 2}
    assert allowed(step(processor, [[0]])) == {1, EOS}
    assert allowed(step(processor, [[0, 1]])) == {1, EOS}
    assert processor.generated_bytes(0) == b"ab"
    assert processor.is_complete(0)


def test_finished_row_gets_only_eos_and_ignores_padding():
    vocab = byte_vocab()
    processor = GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= 'ab' ;"), vocab)])
    assert allowed(step(processor, [[]])) == {0, 2}
    assert allowed(step(processor, [[2]])) == {EOS}  # complete and not extendable: forced
    assert allowed(step(processor, [[2, EOS]])) == {EOS}
    assert allowed(step(processor, [[2, EOS, 3, 3]])) == {EOS}  # padding after the end is ignored
    assert processor.generated_ids(0) == [2]  # the EOS came after the engine had finished
    assert processor.generated_bytes(0) == b"ab"


def test_eos_taken_when_allowed_finishes_the_row():
    vocab = byte_vocab()
    processor = GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= 'a' 'b'* ;"), vocab)])
    step(processor, [[]])
    assert allowed(step(processor, [[0, EOS]])) == {EOS}
    assert allowed(step(processor, [[0, EOS, 1]])) == {EOS}
    assert processor.generated_ids(0) == [0, EOS]


def test_unconstrained_rows_are_untouched_and_rows_are_independent():
    torch = _torch()
    vocab = byte_vocab()
    g1 = Grammar.from_ebnf("start ::= 'a' 'b'* ;")
    g2 = Grammar.from_ebnf("start ::= '(' start ')' | 'c' ;")
    processor = GrammarLogitsProcessor([Engine(g1, vocab), None, Engine(g2, vocab)])
    out = step(processor, [[], [], []])
    assert allowed(out, 0) == {0, 2}
    assert torch.isfinite(out[1]).all()
    assert allowed(out, 2) == {3, 6}
    out = step(processor, [[0], [5], [6]])
    assert allowed(out, 0) == {1, EOS} and allowed(out, 2) == {3, 6}
    assert torch.isfinite(out[1]).all()


def test_masks_equal_independent_engines_on_random_walks():
    """Differential: each row's mask is the engine's mask for the row's own history."""
    rng = np.random.default_rng(7)
    vocab = byte_vocab()
    grammar = Grammar.from_ebnf("start ::= '(' start ')' start | 'ab' | 'ba' | '' ;")
    for walk in range(20):
        rows = 3
        processor = GrammarLogitsProcessor([Engine(grammar, vocab)], finish_after=None)  # cloned per row
        oracles = [Engine(grammar, vocab) for _ in range(rows)]
        histories = [[] for _ in range(rows)]
        for t in range(12):
            out = step(processor, histories, seed=walk * 100 + t)
            for r in range(rows):
                want = {EOS} if oracles[r].is_finished() else set(oracles[r].allowed_token_ids().tolist())
                assert allowed(out, r) == want, (walk, t, r, histories[r])
                choice = int(rng.choice(sorted(want)))
                if not oracles[r].is_finished():
                    oracles[r].advance(choice)
                histories[r].append(choice)


def test_rollback_and_replaced_history():
    """Assisted decoding shortens input_ids, beam search swaps rows: both are replayed."""
    vocab = byte_vocab()
    grammar = Grammar.from_ebnf("start ::= '(' start ')' | 'c' ;")
    processor = GrammarLogitsProcessor([Engine(grammar, vocab, max_rollback=2)])
    step(processor, [[]])
    step(processor, [[6, 6, 6]])
    assert processor.generated_bytes(0) == b"((("
    step(processor, [[6]])  # shorter: rolled back
    assert processor.generated_bytes(0) == b"("
    step(processor, [[6, 6, 6, 6, 3]])
    assert allowed(step(processor, [[6, 6, 6, 6, 3]])) == {7}
    assert allowed(step(processor, [[3]])) == {EOS}  # a different history, deeper than max_rollback
    assert processor.generated_bytes(0) == b"c"


def test_num_return_sequences_expands_engines():
    vocab = byte_vocab()
    g1 = Grammar.from_ebnf("start ::= 'a' ;")
    g2 = Grammar.from_ebnf("start ::= 'c' ;")
    processor = GrammarLogitsProcessor([Engine(g1, vocab), Engine(g2, vocab)])
    out = step(processor, [[], [], [], []])
    assert [allowed(out, r) for r in range(4)] == [{0}, {0}, {3}, {3}]
    with pytest.raises(ValueError, match="batch has 3 rows"):
        step(GrammarLogitsProcessor([Engine(g1, vocab), Engine(g2, vocab)]), [[], [], []])


def test_given_engines_are_not_modified_and_may_hold_a_prefix():
    vocab = byte_vocab()
    engine = Engine(Grammar.from_ebnf("start ::= 'ab' 'c'* ;"), vocab)
    engine.advance_bytes(b"a")  # e.g. a forced prefix the prompt ends with
    processor = GrammarLogitsProcessor([engine])
    assert allowed(step(processor, [[]])) == {1}
    step(processor, [[1]])
    assert engine.allowed_token_ids().tolist() == [1]  # the original stayed where it was
    processor.reset()
    assert allowed(step(processor, [[]])) == {1}


def test_padded_logits_and_foreign_ids():
    torch = _torch()
    vocab = byte_vocab()
    processor = GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= 'a' 'b'* ;"), vocab)])
    out = step(processor, [[]], width=len(TOKENS) + 5)  # a model with padded logits
    assert allowed(out) == {0, 2}
    with pytest.raises(TokenRejected, match="batch row 0, generated token 0"):
        step(processor, [[3]])
    processor = GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= '}' ;"), vocab)])
    with pytest.raises(grammarc.GrammarcError, match="no allowed token fits"):
        processor(torch.tensor([[99]]), torch.zeros(1, 9))  # '}' is id 10, outside 9 logits


def test_grammar_wins_over_a_processor_that_forbade_everything():
    torch = _torch()
    processor = GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= 'c' ;"), byte_vocab())])
    scores = torch.full((1, len(TOKENS)), NEG)
    scores[0, 0] = 1.0  # say another processor left only 'a', which the grammar forbids
    processor(torch.tensor([[99]]), scores)
    assert scores[0].tolist() == [NEG, NEG, NEG, 0.0] + [NEG] * (len(TOKENS) - 4)


def test_first_token_bytes_include_a_sentencepiece_space():
    """The engine sees what tokens add: b' {' is a space then '{', also right after the prompt."""
    vocab = Vocabulary.from_bytes(TOKENS, eos_token_ids=[EOS], prefix_space=True)
    strict = GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= '{' '}' ;"), vocab)])
    assert allowed(step(strict, [[]])) == {9}
    spaced = GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= ' '? '{' '}' ;"), vocab)])
    assert allowed(step(spaced, [[]])) == {8, 9}
    step(spaced, [[8, 10]])
    assert spaced.generated_bytes(0) == b" {}"


def test_missing_eos_is_an_error():
    vocab = Vocabulary.from_bytes([b"a", b"b"])
    with pytest.raises(grammarc.GrammarcError, match="no EOS token"):
        GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= 'a' ;"), vocab)])
    GrammarLogitsProcessor([Engine(Grammar.from_ebnf("start ::= 'a' ;"), vocab)], eos_token_id=1)


def test_eos_token_id_is_checked_against_the_vocabulary():
    vocab = Vocabulary.from_bytes([b"a", b"b", b"<eos>"], eos_token_ids=[2])
    engine = Engine(Grammar.from_ebnf("start ::= 'a' ;"), vocab)
    with pytest.raises(grammarc.GrammarcError) as error:
        GrammarLogitsProcessor([engine], eos_token_id=1)
    assert str(error.value) == (
        "row 0: eos_token_id 1 is not an EOS token of the vocabulary (its EOS tokens: [2]); the engine would refuse it")
    with pytest.raises(grammarc.GrammarcError) as error:
        GrammarLogitsProcessor([engine], eos_token_id=7)
    assert str(error.value) == "row 0: eos_token_id 7 is not a token of the vocabulary (ids 0..2)"
    assert GrammarLogitsProcessor([engine], eos_token_id=2)._forced_eos == [2]


def test_resolve_grammar():
    assert resolve_grammar("json") == grammarc.stdlib("json")
    assert resolve_grammar("start ::= 'x' ;").accepts("x")
    with pytest.raises(grammarc.GrammarError):
        resolve_grammar("start ::= ;;")


@pytest.mark.parametrize(
    "name, prefix",
    [
        ("arithmetic", "((((-(((-((1+"),
        ("arithmetic", " 3 *(-"),
        ("json", '{"a": [[{"b": [1, {"c": "x'),
        ("json", "[[[[[[[[1.5e"),
        ("json", '{"a":{"b":"\\u00'),
        ("json", "  "),
    ],
)
def test_shortest_completion_completes(name, prefix):
    vocab = Vocabulary.from_bytes([bytes([b]) for b in range(256)] + [None], eos_token_ids=[256])
    grammar = grammarc.stdlib(name)
    engine = Engine(grammar, vocab)
    engine.advance_bytes(prefix)
    tail = shortest_completion(engine)
    assert tail is not None and grammar.accepts(prefix.encode() + tail)
    for size in range(len(tail)):  # nothing shorter along the way is complete
        assert not grammar.accepts(prefix.encode() + tail[:size])


def test_steering_finishes_rows_on_random_scores():
    vocab = Vocabulary.from_bytes([bytes([b]) for b in range(32, 127)] + [b'{"', b'":', b"[[", None], eos_token_ids=[98])
    grammar = grammarc.stdlib("json")
    for seed in range(10):
        processor = GrammarLogitsProcessor([Engine(grammar, vocab)] * 2, finish_after=6)
        rows: list[list[int]] = [[], []]
        for t in range(200):
            out = step(processor, rows, width=vocab.size, seed=seed * 1000 + t)
            rows = [r + [int(out[i].argmax())] for i, r in enumerate(rows)]
            if all(r[-1] == 98 for r in rows):
                break
        for i in range(2):
            assert rows[i][-1] == 98, (seed, vocab.decode(rows[i]))
            text = processor.generated_bytes(i)
            json.loads(text)
            assert grammar.accepts(text)


# ------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def tiny():
    """(model, tokenizer, vocab): a random tiny Llama over Mistral's Tekken vocabulary."""
    torch = _torch()
    _transformers()
    pytest.importorskip("tokenizers", reason="pip install tokenizers for the demo tokenizer")
    pytest.importorskip("mistral_common", reason="pip install mistral-common for the Tekken tokenizer file")
    from grammarc.integrations.demo import tekken_tokenizer, tiny_llama

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: thread sync costs more than it saves
    tokenizer, vocab = tekken_tokenizer()
    yield tiny_llama(vocab.size, seed=0), tokenizer, vocab
    torch.set_num_threads(threads)


def test_tekken_tokenizer_matches_mistral_common(tiny):
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    from grammarc.integrations.demo import _tekken_path

    _, tokenizer, vocab = tiny
    reference = Tekkenizer.from_file(_tekken_path())
    for text in ['{"name": "Zoë", "n": [1, 2.5e-3]}', "  hello\n\tworld  ", "日本語のテキスト", "(1+2)*-3"]:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert ids == reference.encode(text, bos=False, eos=False)
        assert vocab.decode(ids) == text.encode()
    # The generic path (Vocabulary.from_tokenizer) reads the same vocabulary back.
    generic = Vocabulary.from_tokenizer(tokenizer, size=vocab.size)
    assert generic.tokens == vocab.tokens and 2 in generic.eos_token_ids


EXCEPT = "start ::= 'note: ' except!('\\n', 6) '\\n' ;"
ANY = "start ::= '<' any! any! '>' ;"


def _batch_grammars():
    return [grammarc.stdlib("json"), grammarc.stdlib("arithmetic"), Grammar.from_ebnf(EXCEPT), Grammar.from_ebnf(ANY), None]


@pytest.mark.parametrize("sampling", [False, True], ids=["greedy", "sampling"])
def test_generate_batch_under_four_grammars(tiny, sampling):
    torch = _torch()
    model, tokenizer, vocab = tiny
    grammars = _batch_grammars()
    processor = GrammarLogitsProcessor.from_grammars(grammars, vocab=vocab, model=model, finish_after=12)
    prompt = torch.tensor([[1, 1091]] * len(grammars))  # <s> and a token
    torch.manual_seed(1)
    options = dict(do_sample=True, top_k=0) if sampling else dict(do_sample=False)
    with torch.no_grad():
        out = model.generate(
            prompt, attention_mask=torch.ones_like(prompt), logits_processor=[processor],
            max_new_tokens=40, pad_token_id=11, **options,
        )
    processor.update(out)
    for row, grammar in enumerate(grammars[:4]):
        ids = processor.generated_ids(row)
        text = processor.generated_bytes(row)
        assert out[row, 2 : 2 + len(ids)].tolist() == ids
        if ids[-1] != 2:  # finished without EOS (nothing could extend the text): EOS forced next
            assert out[row, 2 + len(ids)] == 2, (row, text)
        assert grammar.accepts(text), (row, text)
        assert text == vocab.decode(ids)
    json.loads(processor.generated_bytes(0))
    assert processor.generated_bytes(2).startswith(b"note: ") and processor.generated_bytes(2).endswith(b"\n")
    marked = processor.generated_ids(3)
    assert len(marked) == 4 and marked[0] in vocab.ids_for(b"<") and marked[3] in vocab.ids_for(b">")
    if not sampling:  # the unconstrained row is what the model does without the processor
        with torch.no_grad():
            free = model.generate(prompt[:1], attention_mask=torch.ones_like(prompt[:1]), max_new_tokens=40, do_sample=False, pad_token_id=11)
        assert out[4, : free.shape[1]].tolist() == free[0].tolist()


def test_except_budget_counts_tokens(tiny):
    """except!('\\n', 6): at most 6 tokens touch the free text, whatever the model wants."""
    torch = _torch()
    model, _, vocab = tiny
    grammar = Grammar.from_ebnf("start ::= except!('\\n', 3) '\\n' ;")
    processor = GrammarLogitsProcessor.from_grammars([grammar] * 3, vocab=vocab, model=model)
    torch.manual_seed(3)
    prompt = torch.tensor([[1]] * 3)
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), logits_processor=[processor],
                             max_new_tokens=12, do_sample=True, top_k=0, pad_token_id=11)
    processor.update(out)
    for row in range(3):
        ids = [t for t in processor.generated_ids(row) if t != 2]
        assert len(ids) <= 4, vocab.decode(ids)  # <= 3 tokens touch the free text, then '\n'
        assert processor.is_complete(row)
        assert grammar.accepts(processor.generated_bytes(row))


def test_grammarc_generate(tiny):
    model, tokenizer, _ = tiny
    text = grammarc.generate(model, tokenizer, "json", "Some JSON:", finish_after=10, max_new_tokens=40, do_sample=True)
    json.loads(text)
    text = grammarc.generate(model, tokenizer, "start ::= 'x' [0-9]{3} ;".replace("[0-9]{3}", "#/[0-9]{3}/"), "")
    assert len(text) == 4 and text[0] == "x" and text[1:].isdigit()
    with pytest.warns(RuntimeWarning, match="before the text was complete"):
        text = grammarc.generate(model, tokenizer, "start ::= 'x' #/y{40}/ ;", "", max_new_tokens=2)
    assert text.startswith("x")
    with pytest.raises(grammarc.GrammarcError, match="one sequence"):
        grammarc.generate(model, tokenizer, "json", "", num_return_sequences=2)


# ------------------------------------------------------------------ the one-liner


def _person_models():
    from enum import Enum
    from typing import Literal, Optional

    from pydantic import BaseModel, Field

    class Role(str, Enum):
        admin = "admin"
        user = "user"

    class Address(BaseModel):
        city: str = Field(max_length=30)
        zip: str = Field(pattern=r"^[0-9]{5}$")
        country: Literal["US", "CA"] = "US"

    class Person(BaseModel):
        name: str = Field(description="full name", max_length=40)
        age: int = Field(ge=0, le=150)
        email: Optional[str] = None
        role: Role
        address: Address
        tags: list[str] = Field(default_factory=list, max_length=3)

    return Person


def test_one_liner_returns_a_validated_model(tiny):
    pytest.importorskip("pydantic", reason="pip install pydantic for models")
    model, tokenizer, _ = tiny
    Person = _person_models()
    options = dict(finish_after=30, max_new_tokens=160)
    person = grammarc.generate(model, tokenizer, Person, "A person:", **options)
    assert isinstance(person, Person)
    # exactly the text path, parsed: the same greedy tokens under the same grammar
    text = grammarc.generate(model, tokenizer, Grammar.from_model(Person), "A person:", **options)
    assert person == Person.model_validate_json(text)
    # a decorated model takes its registered options
    grammarc.constrain(Person, whitespace="compact")
    compact = grammarc.generate(model, tokenizer, Person, "A person:", **options)
    text = grammarc.generate(model, tokenizer, Grammar.from_model(Person, whitespace="compact"), "A person:", **options)
    assert compact == Person.model_validate_json(text) and " " not in text.partition('"name"')[0]
    # a constraint, and Constraint.generate, are the same path
    constraint = grammarc.constraint_of(Person)
    assert grammarc.generate(model, tokenizer, constraint, "A person:", **options) == compact
    assert constraint.generate(model, tokenizer, "A person:", **options) == compact
    with pytest.raises(grammarc.GrammarcError, match="^generation stopped after 5 tokens, before the text"):
        grammarc.generate(model, tokenizer, Person, "A person:", max_new_tokens=5)


def test_one_liner_with_a_dict_schema_returns_parsed_json(tiny):
    model, tokenizer, _ = tiny
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "ok": {"type": "boolean"}},
              "required": ["n", "ok"], "additionalProperties": False}
    value = grammarc.generate(model, tokenizer, schema, "Some JSON:", finish_after=12, max_new_tokens=60)
    text = grammarc.generate(model, tokenizer, Grammar.from_json_schema(schema), "Some JSON:", finish_after=12,
                             max_new_tokens=60)
    assert value == json.loads(text) and set(value) == {"n", "ok"}
    for wrong in ([1], None, b"json"):
        with pytest.raises(grammarc.GrammarcError, match="^expected a grammar"):
            grammarc.generate(model, tokenizer, wrong, "x")


def test_a_list_of_prompts_is_one_padded_batch(tiny, monkeypatch):
    pytest.importorskip("pydantic", reason="pip install pydantic for models")
    torch = _torch()
    model, tokenizer, _ = tiny
    Person = _person_models()
    prompts = ["A person:", "Here is another person, written as JSON:", "P"]
    options = dict(finish_after=30, max_new_tokens=120)
    people = grammarc.generate(model, tokenizer, Person, prompts, **options)
    assert isinstance(people, list) and len(people) == 3 and all(isinstance(p, Person) for p in people)
    # each row equals the same prompt alone (padding and the attention mask leave it as it is)
    alone = [grammarc.generate(model, tokenizer, Person, [p], **options)[0] for p in prompts]
    assert people == alone
    # sampling parameters reach model.generate, and a seed reproduces the batch
    calls = []
    real = model.generate
    monkeypatch.setattr(model, "generate", lambda *a, **k: calls.append(k) or real(*a, **k))
    runs = []
    for _ in range(2):
        torch.manual_seed(5)
        runs.append(grammarc.generate(model, tokenizer, "json", prompts[:2], do_sample=True, temperature=0.7,
                                      top_p=0.9, top_k=0, finish_after=10, max_new_tokens=40))
    assert runs[0] == runs[1] and all(isinstance(t, str) for t in runs[0])
    for text in runs[0]:
        json.loads(text)
    assert {k: calls[0][k] for k in ("do_sample", "temperature", "top_p", "top_k", "max_new_tokens", "pad_token_id")} == {
        "do_sample": True, "temperature": 0.7, "top_p": 0.9, "top_k": 0, "max_new_tokens": 40, "pad_token_id": 11}
    mask = calls[0]["attention_mask"]
    n_first = len(tokenizer(prompts[0])["input_ids"])
    assert mask[0].tolist() == [0] * (mask.shape[1] - n_first) + [1] * n_first  # left padding
    with pytest.raises(grammarc.GrammarcError, match="generator= works with one prompt"):
        grammarc.generate(model, tokenizer, "json", prompts, generator=torch.Generator())
    with pytest.raises(grammarc.GrammarcError, match="a list of prompts"):
        grammarc.generate(model, tokenizer, "json", prompts, jump_forward=True)


CHAT_TEMPLATE = (
    "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant] {% endif %}"
)


def test_chat_messages_only_through_messages(tiny, monkeypatch):
    model, tokenizer, _ = tiny
    monkeypatch.setattr(tokenizer, "chat_template", CHAT_TEMPLATE, raising=False)
    chat = [{"role": "user", "content": "JSON please"}]
    rendered = "[user] JSON please\n[assistant] "
    options = dict(finish_after=10, max_new_tokens=40)
    assert grammarc.generate(model, tokenizer, "json", messages=chat, **options) == \
        grammarc.generate(model, tokenizer, "json", rendered, **options)
    both = grammarc.generate(model, tokenizer, "json", messages=[chat, chat], **options)
    assert both == [grammarc.generate(model, tokenizer, "json", [rendered], **options)[0]] * 2
    with pytest.raises(grammarc.GrammarcError, match=r"^chat messages go in messages=, not in prompt"):
        grammarc.generate(model, tokenizer, "json", chat)
    with pytest.raises(grammarc.GrammarcError, match="^give prompt or messages=, not both$"):
        grammarc.generate(model, tokenizer, "json", "x", messages=chat)
    with pytest.raises(grammarc.GrammarcError, match="^messages= takes a list of chat messages"):
        grammarc.generate(model, tokenizer, "json", messages=["hi"])


def test_demo_runs_and_every_document_is_valid(tiny):
    from grammarc.integrations.demo import run

    out = io.StringIO()
    documents = run(grammars=("json", "arithmetic"), max_new_tokens=32, finish_after=10, out=out)
    report = out.getvalue()
    assert "random" in report and report.count(", valid") == 2 and "NOT VALID" not in report
    assert grammarc.stdlib("json").accepts(documents[0]) and grammarc.stdlib("arithmetic").accepts(documents[1])
