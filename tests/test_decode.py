"""grammarc.integrations.decode: our own decode loop, opportunistic masking and jump-forward.

Unit tests use hand-made byte vocabularies, a greedy longest-match encoder and a fake
model whose logits are fixed functions of the sequence, so which path is taken (mask or
no mask, how many forward passes, which ids each pass carries) is asserted exactly. End
to end tests use the tiny random Llama over Mistral's Tekken vocabulary (offline): every
document must be complete and in its grammar, greedy opportunistic decoding must equal
greedy mask-first decoding, and mask-first decoding must equal ``model.generate`` with
`GrammarLogitsProcessor` token for token.
"""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import grammarc  # noqa: E402
from grammarc import Engine, Grammar, TokenRejected, Vocabulary  # noqa: E402
from grammarc.integrations import decode as dec  # noqa: E402
from grammarc.integrations.decode import Sampling, backoff, decode, jump_tokens  # noqa: E402

torch = pytest.importorskip("torch", reason="pip install torch (CPU build) for the decode loop")


# ------------------------------------------------------------- small vocabularies


def make_vocab(*pieces: str) -> Vocabulary:
    """Every printable ASCII byte, then `pieces`, then EOS (the last id)."""
    tokens = [bytes([b]) for b in range(32, 127)] + [p.encode() for p in pieces]
    return Vocabulary.from_bytes(tokens + [None], eos_token_ids=[len(tokens)])


def encoder(vocab: Vocabulary):
    """Greedy longest match: the 'canonical' tokenizer of these tests."""
    by_bytes = {t: i for i, t in enumerate(vocab.tokens) if t}
    longest = max(map(len, by_bytes))

    def encode(text: str) -> list[int]:
        data, ids, pos = text.encode(), [], 0
        while pos < len(data):
            for size in range(min(longest, len(data) - pos), 0, -1):
                if data[pos : pos + size] in by_bytes:
                    ids.append(by_bytes[data[pos : pos + size]])
                    pos += size
                    break
        return ids

    return encode


def tid(vocab: Vocabulary, text: str) -> int:
    (i,) = vocab.ids_for(text.encode())
    return i


def spell(vocab: Vocabulary, ids) -> list[str]:
    return [vocab.tokens[i].decode() if vocab.tokens[i] else "<eos>" for i in ids]


class FakeLM:
    """A 'model' whose next-token logits are `scores(sequence)`; its 'KV cache' is the
    sequence so far. Records the ids of every call."""

    def __init__(self, scores):
        self.scores, self.calls = scores, []

    def __call__(self, input_ids, past_key_values=None, use_cache=True, logits_to_keep=0):
        seq = list(past_key_values or []) + input_ids[0].tolist()
        self.calls.append(input_ids[0].tolist())
        logits = torch.as_tensor(self.scores(seq), dtype=torch.float32).reshape(1, 1, -1)
        return SimpleNamespace(logits=logits, past_key_values=seq)


def fixed(vocab: Vocabulary, preferred: dict[str, float]) -> np.ndarray:
    """Logits: 0 everywhere, `preferred` token texts get their value."""
    logits = np.zeros(vocab.size, dtype=np.float32)
    for text, value in preferred.items():
        logits[tid(vocab, text)] = value
    return logits


def test_importing_the_decode_loop_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, grammarc.integrations.decode\nassert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------- sampling


def test_sampling_options_are_validated():
    with pytest.raises(ValueError, match="temperature"):
        Sampling(do_sample=True, temperature=0)
    with pytest.raises(ValueError, match="top_p"):
        Sampling(top_p=0)
    assert not Sampling(do_sample=True).truncates
    assert Sampling(do_sample=True, top_k=5).truncates and Sampling(do_sample=True, top_p=0.9).truncates
    assert not Sampling(top_k=5).truncates  # greedy ignores them


def test_draw_is_the_first_argmax_and_an_inverse_cdf_sample():
    logits = torch.tensor([1.0, 3.0, 3.0, -1.0])
    assert dec.draw(logits, Sampling()) == 1
    sampling = Sampling(do_sample=True, temperature=0.7)
    for seed in range(50):
        got = dec.draw(logits, sampling, torch.Generator().manual_seed(seed))
        u = torch.rand((), generator=torch.Generator().manual_seed(seed))
        cdf = torch.cumsum(torch.softmax(logits / 0.7, 0), 0)
        assert got == int((cdf <= u * cdf[-1]).sum())


def test_warp_matches_transformers_warpers():
    transformers = pytest.importorskip("transformers")
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    logits = torch.randn(200, generator=torch.Generator().manual_seed(0))
    for temperature, k, p in [(0.7, 10, 1.0), (1.3, 0, 0.8), (1.0, 50, 0.5), (0.5, 3, 0.9)]:
        ours = dec.warp(logits, Sampling(do_sample=True, temperature=temperature, top_k=k, top_p=p))
        theirs = TemperatureLogitsWarper(temperature)(None, logits[None].clone())
        if k:
            theirs = TopKLogitsWarper(k)(None, theirs)
        if p < 1:
            theirs = TopPLogitsWarper(p)(None, theirs)
        assert torch.equal(torch.isinf(ours), torch.isinf(theirs[0]))
        assert torch.allclose(ours[torch.isfinite(ours)], theirs[0][torch.isfinite(theirs[0])])
    del transformers


# --------------------------------------------------------------- opportunistic


AB = "start ::= ('a' | 'b')+ ';' ;"


def test_opportunistic_greedy_skips_the_mask_when_the_argmax_is_allowed():
    vocab = make_vocab()
    engine = Engine(Grammar.from_ebnf(AB), vocab)
    model = FakeLM(lambda seq: fixed(vocab, {"a": 5, "x": 1, ";": 4 if len(seq) > 3 else -1}))
    result = decode(model, [0], engine, max_new_tokens=10, jump_forward=False)
    assert spell(vocab, result.ids) == ["a"] * 10 and result.stats.masks == 0
    assert result.stats.checks == result.stats.hits == 10
    # the argmax 'x' is forbidden: one mask per step, and the masked argmax comes out;
    # after a rejected free draw the next step masks first (back-off)
    model = FakeLM(lambda seq: fixed(vocab, {"x": 9, "b": 3, "a": 2}))
    result = decode(model, [0], engine, max_new_tokens=4, jump_forward=False)
    assert spell(vocab, result.ids) == ["b"] * 4
    assert result.stats.masks == 4 and result.stats.checks == 2 and result.stats.hits == 0
    # mask-first never checks
    result = decode(model, [0], engine, max_new_tokens=4, jump_forward=False, opportunistic=False)
    assert spell(vocab, result.ids) == ["b"] * 4 and result.stats.masks == 4 and result.stats.checks == 0


def test_free_draws_back_off_after_rejections_and_resume_after_a_hit():
    vocab = make_vocab()
    engine = Engine(Grammar.from_ebnf(AB), vocab)
    # 'x' (forbidden) wins the first 20 steps, then 'a' (allowed)
    model = FakeLM(lambda seq: fixed(vocab, {"x": 9, "b": 3} if len(seq) <= 20 else {"a": 9}))
    result = decode(model, [0], engine, max_new_tokens=24, jump_forward=False)
    assert spell(vocab, result.ids) == ["b"] * 20 + ["a"] * 4
    stats = result.stats
    # free draws at steps 1, 3, 7, 15 (waits 1, 3, 7, 7); step 23 hits, and so does every
    # step after it: 4 + 2 checks, 20 + 2 masks (steps 21 and 22 still wait)
    assert stats.checks == 6 and stats.hits == 2 and stats.masks == 22


def test_opportunistic_sampling_takes_the_free_draw_or_a_fresh_masked_one():
    """The exact path: draw u1 over every token; keep it if allowed, else draw u2 over the
    allowed ones (never re-using u1)."""
    vocab = make_vocab()
    engine = Engine(Grammar.from_ebnf(AB), vocab)
    logits = fixed(vocab, {"a": 1.0, "b": 0.5, "x": 2.0, "y": 1.5})
    model = FakeLM(lambda seq: logits)
    allowed = np.array([tid(vocab, "a"), tid(vocab, "b")])
    sampling = Sampling(do_sample=True)
    taken = {"free": 0, "masked": 0}
    for seed in range(200):
        result = decode(model, [0], engine, max_new_tokens=1, sampling=sampling,
                        generator=torch.Generator().manual_seed(seed), jump_forward=False)
        g = torch.Generator().manual_seed(seed)
        first = dec.draw(torch.from_numpy(logits), sampling, g)
        if first in allowed:
            expected, path = first, "free"
        else:
            expected, path = int(allowed[dec.draw(torch.from_numpy(logits[allowed]), sampling, g)]), "masked"
        assert result.ids == [expected], seed
        assert result.stats.masks == (path == "masked")
        taken[path] += 1
    assert taken["free"] > 0 and taken["masked"] > 0  # both paths exercised


def _exact_distribution(monkeypatch, logits: np.ndarray, engine: Engine, sampling: Sampling, n: int = 400):
    """The loop's output distribution for one step, computed exactly on an n x n grid of the
    two uniforms (midpoints): `draw` is replaced by an inverse CDF fed from the grid."""
    counts = np.zeros(len(logits))
    model = FakeLM(lambda seq: logits)
    for i in range(n):
        for j in range(n):
            us = iter([(i + 0.5) / n, (j + 0.5) / n])

            def grid_draw(x, s, generator=None):
                p = torch.softmax(dec.warp(x, s), 0).double()
                return int((torch.cumsum(p, 0) <= next(us) * p.sum()).sum())

            monkeypatch.setattr(dec, "draw", grid_draw)
            result = decode(model, [0], engine, max_new_tokens=1, sampling=sampling, jump_forward=False)
            counts[result.ids[0]] += 1
    return counts / n**2


def test_opportunistic_sampling_has_the_masked_distribution(monkeypatch):
    """p(x) + (1 - Z) p(x)/Z = p(x)/Z, checked on the loop itself (grid resolution 1/400)."""
    vocab = make_vocab()
    engine = Engine(Grammar.from_ebnf(AB), vocab)
    logits = np.full(vocab.size, -30.0, dtype=np.float32)
    for text, value in {"a": 1.0, "b": 0.2, "x": 1.5, "y": 0.7}.items():
        logits[tid(vocab, text)] = value
    got = _exact_distribution(monkeypatch, logits, engine, Sampling(do_sample=True))
    masked = np.exp([1.0, 0.2]) / np.exp([1.0, 0.2]).sum()
    assert got[tid(vocab, "a")] == pytest.approx(masked[0], abs=6e-3)
    assert got[tid(vocab, "b")] == pytest.approx(masked[1], abs=6e-3)
    # the unmasked distribution would be far off: the test can tell them apart
    free = np.exp([1.0, 0.2, 1.5, 0.7])
    assert abs(free[0] / free.sum() - masked[0]) > 0.2


def test_top_k_and_top_p_mask_first():
    vocab = make_vocab()
    engine = Engine(Grammar.from_ebnf(AB), vocab)
    model = FakeLM(lambda seq: fixed(vocab, {"x": 9, "a": 3, "b": 2}))
    for sampling in (Sampling(do_sample=True, top_k=1), Sampling(do_sample=True, top_p=0.5)):
        result = decode(model, [0], engine, max_new_tokens=5, sampling=sampling, jump_forward=False,
                        generator=torch.Generator().manual_seed(0))
        # top-1 / top-p among the allowed: always 'a' (on unmasked logits 'x' would win, rejected)
        assert spell(vocab, result.ids) == ["a"] * 5
        assert result.stats.checks == 0 and result.stats.masks == 5


# ----------------------------------------------------------------- jump-forward


def test_backoff_stops_before_a_token_that_could_straddle_the_end():
    vocab = make_vocab("key", ": ", " x", ' "', '"B', "ke")
    text = b"key: "
    assert backoff(text, {ord("x")}, vocab) == 4  # ' x' starts at the space
    assert backoff(text, {ord("y")}, vocab) == 5  # no token ' y': nothing straddles
    assert backoff(text, set(), vocab) == 5  # nothing may follow
    assert backoff(b': "', {ord("B")}, vocab) == 2  # '"B' starts at the quote
    assert backoff(b"ke", {ord("y")}, vocab) == 0  # 'key' extends 'ke' with 'y'


def test_jump_keeps_the_tokens_before_the_boundary():
    vocab = make_vocab("key", ": ", " x", "ke")
    engine = Engine(Grammar.from_ebnf("start ::= 'key: ' ('x' | 'y') ;"), vocab)
    ids, after = jump_tokens(engine, None, encoder(vocab), budget=10)
    # 'key: ' canonically is 'key' ': '; ' x' may follow the space, so ': ' is not forced
    assert spell(vocab, ids) == ["key"]
    assert engine.vocab.decode([]) == b"" and after is not engine
    allowed = set(spell(vocab, after.allowed_token_ids()))
    assert {":", ": "} <= allowed
    after.advance(tid(vocab, ":"))
    assert " x" in spell(vocab, after.allowed_token_ids())  # the straddling token is still possible


def test_jump_retokenizes_the_sampled_token_with_the_forced_text():
    vocab = make_vocab("y,", "z;")
    encode = encoder(vocab)
    engine = Engine(Grammar.from_ebnf("start ::= ('x' | 'y') ',z;' ;"), vocab)
    engine.advance(tid(vocab, "y"))
    ids, after = jump_tokens(engine, tid(vocab, "y"), encode, budget=10)
    assert spell(vocab, ids) == ["y,", "z;"] and after.is_finished()
    assert engine.forced_bytes() == b",z;"  # the given engine is untouched
    ids, after = jump_tokens(engine, tid(vocab, "y"), encode, budget=1)
    assert spell(vocab, ids) == ["y"] and after is engine  # no room for more tokens


def test_jump_never_merges_an_any_token():
    vocab = make_vocab("qx")
    engine = Engine(Grammar.from_ebnf("start ::= any! 'xy' ;"), vocab)
    engine.advance(tid(vocab, "q"))
    ids, after = jump_tokens(engine, tid(vocab, "q"), encoder(vocab), budget=10)
    assert spell(vocab, ids) == ["q", "x", "y"] and after.is_finished()


def test_jump_stops_at_the_first_rejected_token(monkeypatch):
    vocab = make_vocab("ab", "cd")
    engine = Engine(Grammar.from_ebnf("start ::= 'abcdab' ;"), vocab)
    real = Engine.advance

    def advance(self, token):  # a token-level rule that rejects 'cd' (as a spent budget would)
        if token == tid(vocab, "cd"):
            raise TokenRejected("test")
        return real(self, token)

    monkeypatch.setattr(Engine, "advance", advance)
    ids, after = jump_tokens(engine, None, encoder(vocab), budget=10)
    assert spell(vocab, ids) == ["ab"] and after.forced_bytes() == b"cdab"


def test_jump_respects_the_token_budget():
    vocab = make_vocab()
    engine = Engine(Grammar.from_ebnf("start ::= 'x' #/bc/ ';' ;"), vocab)
    ids, after = jump_tokens(engine, None, encoder(vocab), budget=2)
    assert spell(vocab, ids) == ["x", "b"] and after.forced_bytes() == b"c;"


def test_jumped_tokens_go_in_one_forward_pass():
    vocab = make_vocab("key", '":', ' "', '",')
    grammar = Grammar.from_ebnf("""start ::= '{"key": "' ('a' | 'b') '", "next": "' ('c' | 'd') '"}' ;""")
    engine = Engine(grammar, vocab)
    model = FakeLM(lambda seq: fixed(vocab, {"a": 3, "d": 3}))
    result = decode(model, [0], engine, max_new_tokens=40, encode=encoder(vocab))
    assert result.text == b'{"key": "a", "next": "d"}' and result.complete
    # the prompt goes in with the forced start, then the sampled 'a' with its forced tail;
    # after 'd' the rest is forced and complete: no pass, EOS appended
    assert [spell(vocab, call) for call in model.calls] == [
        [" ", "{", '"', "key", '":', ' "'],
        ["a", '",', ' "', "n", "e", "x", "t", '":', ' "'],
    ]
    assert spell(vocab, result.ids) == spell(vocab, model.calls[0][1:] + model.calls[1]) + ["d", '"', "}", "<eos>"]
    stats = result.stats
    assert stats.forward_passes == 2 and stats.tokens == len(result.ids) == 5 + 9 + 3 + 1
    assert stats.jumps == 3 and stats.jumped_tokens == 5 + 8 + 2
    # 'a' came from the free draw; then the free argmax 'a' (first of the ties) was rejected
    assert stats.checks == 2 and stats.hits == 1 and stats.masks == 1
    # without jump-forward: one pass per token but the last (the EOS after it needs none)
    model = FakeLM(lambda seq: fixed(vocab, {"a": 3, "d": 3}))
    plain = decode(model, [0], engine, max_new_tokens=40, encode=encoder(vocab), jump_forward=False)
    assert plain.text == result.text and plain.stats.forward_passes == len(plain.ids) - 1


def test_a_fully_forced_text_needs_no_forward_pass():
    vocab = make_vocab("hello", " world")
    engine = Engine(Grammar.from_ebnf("start ::= 'hello world' ;"), vocab)
    model = FakeLM(lambda seq: np.zeros(vocab.size))
    result = decode(model, [0], engine, max_new_tokens=10, encode=encoder(vocab))
    assert spell(vocab, result.ids) == ["hello", " world", "<eos>"] and model.calls == []


def test_finish_after_steers_to_a_complete_text():
    vocab = make_vocab()
    grammar = grammarc.stdlib("json")
    engine = Engine(grammar, vocab)
    rng = np.random.default_rng(0)
    table = rng.normal(size=(64, vocab.size)).astype(np.float32)
    model = FakeLM(lambda seq: table[len(seq) % 64])
    for opportunistic in (False, True):
        for seed in range(3):
            result = decode(model, [0], engine, max_new_tokens=80, sampling=Sampling(do_sample=True),
                            generator=torch.Generator().manual_seed(seed), finish_after=10,
                            opportunistic=opportunistic, encode=encoder(vocab))
            assert result.complete and result.ids[-1] == vocab.size - 1, result.text
            assert grammar.accepts(result.text)


# ------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def tiny():
    """(model, tokenizer, vocab, encode): a random tiny Llama over Mistral's Tekken vocabulary."""
    pytest.importorskip("transformers", reason="pip install transformers")
    pytest.importorskip("tokenizers", reason="pip install tokenizers for the demo tokenizer")
    pytest.importorskip("mistral_common", reason="pip install mistral-common for the Tekken tokenizer file")
    from grammarc.integrations.demo import tekken_tokenizer, tiny_llama

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    tokenizer, vocab = tekken_tokenizer()
    encode = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    yield tiny_llama(vocab.size, seed=0), tokenizer, vocab, encode
    torch.set_num_threads(threads)


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 20},
        "kind": {"enum": ["warrior", "mage", "rogue"]},
        "level": {"type": "integer", "minimum": 1, "maximum": 20},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["name", "kind", "level", "tags"],
    "additionalProperties": False,
}

GRAMMARS = {
    "json": lambda: grammarc.stdlib("json"),
    "schema": lambda: Grammar.from_json_schema(SCHEMA, indent=2),
    "ebnf": lambda: Grammar.from_ebnf(
        "start ::= 'let ' name ' = ' expr ';' ; name ::= #/[a-z]+/ ; "
        "expr ::= #/[0-9]+/ | name | '(' expr ' + ' expr ')' ;"
    ),
}


@pytest.mark.parametrize("name", sorted(GRAMMARS))
@pytest.mark.parametrize("sampling", [False, True], ids=["greedy", "sampling"])
def test_every_mode_ends_with_a_complete_text_of_the_grammar(tiny, name, sampling):
    from grammarc.integrations.demo import LowerWhitespace

    model, _, vocab, encode = tiny
    grammar = GRAMMARS[name]()
    engine = Engine(grammar, vocab)
    bias = [LowerWhitespace(vocab)]
    for opportunistic in (False, True):
        for jump in (False, True):
            for seed in range(2 if sampling else 1):
                result = decode(
                    model, [1, 1091 + seed], engine, max_new_tokens=60, finish_after=20,
                    sampling=Sampling(do_sample=sampling), generator=torch.Generator().manual_seed(seed),
                    opportunistic=opportunistic, jump_forward=jump, encode=encode, logits_processors=bias,
                )
                text = result.text
                assert result.complete and grammar.accepts(text), (opportunistic, jump, text)
                assert vocab.decode(result.ids) == text and result.ids[-1] in vocab.eos_token_ids
                stats = result.stats
                assert stats.tokens == len(result.ids)
                assert stats.forward_passes <= stats.tokens
                if not jump:
                    assert stats.jumps == stats.jumped_tokens == 0
                if not opportunistic:
                    assert stats.checks == 0
                if name == "json":
                    json.loads(text)
    if name == "schema":  # keys, punctuation and indentation are forced: fewer passes than tokens
        assert stats.jumps > 0 and stats.forward_passes < stats.tokens


@pytest.mark.parametrize("name", sorted(GRAMMARS))
def test_greedy_opportunistic_equals_greedy_mask_first(tiny, name):
    model, _, vocab, encode = tiny
    engine = Engine(GRAMMARS[name](), vocab)
    runs = [decode(model, [1, 1091], engine, max_new_tokens=50, finish_after=25, opportunistic=o,
                   jump_forward=False) for o in (False, True)]
    assert runs[0].ids == runs[1].ids and runs[0].complete
    assert runs[0].stats.checks == 0 and runs[1].stats.checks > 0
    assert runs[1].stats.checks - runs[1].stats.hits <= runs[1].stats.masks <= runs[0].stats.masks


def test_mask_first_equals_model_generate_with_the_processor(tiny):
    """The loop (KV cache, steering, EOS) chooses what model.generate + the processor does."""
    from grammarc.integrations.transformers import GrammarLogitsProcessor

    model, _, vocab, _ = tiny
    for name in sorted(GRAMMARS):
        grammar = GRAMMARS[name]()
        processor = GrammarLogitsProcessor.from_grammars([grammar], vocab=vocab, model=model, finish_after=15)
        prompt = torch.tensor([[1, 1091]])
        with torch.no_grad():
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), logits_processor=[processor],
                                 max_new_tokens=60, do_sample=False, pad_token_id=11)
        ours = decode(model, [1, 1091], Engine(grammar, vocab), max_new_tokens=60, finish_after=15,
                      opportunistic=False, jump_forward=False, eos_token_id=2)
        assert ours.ids == out[0, 2:].tolist(), name


def test_unconstrained_loop_equals_model_generate(tiny):
    model, _, _, _ = tiny
    prompt = torch.tensor([[1, 1091, 2000]])
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=30, do_sample=False,
                             pad_token_id=11, eos_token_id=None)
    ours = decode(model, [1, 1091, 2000], None, max_new_tokens=30)
    assert ours.ids == out[0, 3:].tolist() and ours.stats.forward_passes == 30 and ours.text is None


def test_grammarc_generate_uses_the_loop_or_model_generate(tiny, monkeypatch):
    model, tokenizer, _, _ = tiny
    calls = []
    real = dec.decode
    monkeypatch.setattr(dec, "decode", lambda *a, **k: calls.append(k) or real(*a, **k))
    text = grammarc.generate(model, tokenizer, Grammar.from_json_schema(SCHEMA), "", finish_after=20,
                             max_new_tokens=80, do_sample=True, top_k=0, generator=torch.Generator().manual_seed(0))
    assert Grammar.from_json_schema(SCHEMA).accepts(text) and len(calls) == 1
    assert calls[0]["jump_forward"] and calls[0]["opportunistic"] and not calls[0]["sampling"].truncates
    # an argument the loop does not take: model.generate, as before
    text = grammarc.generate(model, tokenizer, "json", "", finish_after=10, max_new_tokens=40, repetition_penalty=1.1)
    json.loads(text)
    assert len(calls) == 1
    with pytest.raises(grammarc.GrammarcError, match="repetition_penalty"):
        grammarc.generate(model, tokenizer, "json", "", jump_forward=True, repetition_penalty=1.1)
    text = grammarc.generate(model, tokenizer, "json", "", finish_after=10, max_new_tokens=40,
                             jump_forward=False, opportunistic=False)
    json.loads(text)
    assert len(calls) == 2 and not calls[-1]["jump_forward"] and not calls[-1]["opportunistic"]
    # ... or a generation config that sets something the loop does not reproduce
    monkeypatch.setattr(model.generation_config, "repetition_penalty", 1.2)
    json.loads(grammarc.generate(model, tokenizer, "json", "", finish_after=10, max_new_tokens=40))
    assert len(calls) == 2
    with pytest.raises(grammarc.GrammarcError, match="generation_config.repetition_penalty"):
        grammarc.generate(model, tokenizer, "json", "", opportunistic=True)


# ------------------------------------------------- finish_after on a realistic model


def _realistic_model():
    pydantic = pytest.importorskip("pydantic", reason="pip install pydantic for models")
    import datetime
    import enum
    from typing import Literal, Optional

    Field = pydantic.Field

    class Role(str, enum.Enum):
        admin = "admin"
        user = "user"
        guest = "guest"

    class Address(pydantic.BaseModel):
        street: str
        city: str
        zip: str = Field(pattern=r"^[0-9]{5}$")
        country: Literal["US", "CA", "MX"] = "US"

    class Person(pydantic.BaseModel):
        name: str = Field(description="full name", max_length=40)
        age: int = Field(ge=0, le=150)
        email: Optional[str] = None
        role: Role
        born: datetime.date
        address: Address
        tags: list[str] = Field(default_factory=list, max_length=5)
        scores: dict[str, float] = {}
        active: bool = True

    return Person


LAYOUTS = {"compact": dict(whitespace="compact"), "bounded": dict(whitespace="bounded"),
           "unbounded": dict(whitespace="unbounded"), "indent": dict(indent=2)}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_finish_after_completes_a_pydantic_model_under_every_whitespace_policy(tiny, layout):
    """Steering plans once, exactly, and the output is valid within the token budget: at most
    `after` free tokens, one token per planned byte, then EOS (no whitespace bias here)."""
    from grammarc.integrations.steering import shortest_completion
    from grammarc.integrations.transformers import GrammarLogitsProcessor

    model, _, vocab, _ = tiny
    Person = _realistic_model()
    grammar = Grammar.from_model(Person, **LAYOUTS[layout])
    engine = Engine(grammar, vocab)
    after, budget = 24, 200

    def bound(ids):
        head = engine.clone()
        for token in ids[:after]:
            head.advance(token)
        return after + len(shortest_completion(head)) + 1

    for sampling in (False, True):
        for opportunistic in (False, True):
            result = decode(model, [1, 1091], engine, max_new_tokens=budget, finish_after=after,
                            sampling=Sampling(do_sample=sampling), generator=torch.Generator().manual_seed(2),
                            opportunistic=opportunistic, jump_forward=False)
            assert result.complete and result.ids[-1] in vocab.eos_token_ids, result.text
            assert isinstance(Person.model_validate_json(result.text), Person)
            assert len(result.ids) <= bound(result.ids) <= budget
            assert result.stats.plans == 1
    processor = GrammarLogitsProcessor([engine], finish_after=after, eos_token_id=2)
    prompt = torch.tensor([[1, 1091]])
    torch.manual_seed(3)
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), logits_processor=[processor],
                             max_new_tokens=budget, do_sample=True, top_k=0, pad_token_id=11)
    processor.update(out)
    ids = processor.generated_ids(0)
    assert processor.is_complete(0) and Person.model_validate_json(processor.generated_bytes(0))
    assert len(ids) <= bound(ids) and processor.steering(0).plans == 1
