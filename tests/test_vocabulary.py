"""Vocabulary: exact token bytes for every tokenizer family, checked against the libraries.

Oracles: the tokenizers' own encoders/decoders (quicktok, mistral-common's Tekkenizer and
SentencePiece, HF `tokenizers`, transformers). The central property: concatenating our
per-token bytes of the library's encoding of a text gives back the text's UTF-8 (for
SentencePiece, with the dummy-prefix space in front: see `Vocabulary.prefix_space`).
"""

from __future__ import annotations

import re
import json
import random
import unicodedata
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grammarc.errors import GrammarcError
from grammarc.tokens.vocabulary import Vocabulary, VocabularyError, gpt2_bytes_to_unicode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vocabularies  # noqa: E402

# ------------------------------------------------------------------------ test texts

_FRAGMENTS = [
    "Hello", " Hello", "Hello, world!", "  two spaces", "   three", "\n", "\n\n", "\r\n", "\t",
    "\ttab\tseparated", "trailing space ", "trailing spaces   ", "x", " ", "  ",
    "The quick brown fox jumps over the lazy dog.", "don't can't I'll we've 'tis",
    'def f(x):\n    return [i**2 for i in range(100)]  # comment\n',
    '{"name": "Ada", "age": 36, "tags": ["a", "b"], "ok": true, "x": null}',
    "café résumé naïve — Zürich", "e\u0301 (combining acute)", "Ω≈ç√∫ Икс हिन्दी",
    "日本語のトークナイザー", "中文测试", "한국어 문장", "مرحبا بالعالم", "שלום",
    "emoji 🚀🔥👍", "👨‍👩‍👧 family", "🇫🇷🇯🇵 flags", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math", "\U0001F600",
    "1234567890", "3.14159", "0xDEADBEEF", "99.99%", "ALLCAPS", "MixedCase",
    "https://example.com/path?q=1&x=2#frag", "<html><body>x</body></html>",
    "a  b   c    d", "line1\nline2\n\nline4", "    indented", "end.",
    "½ ¼ ¾ ™ © ® ° ± × ÷", "\u00a0nbsp\u00a0", "soft\u00adhyphen", "zero\u200bwidth",
    "ＦＵＬＬ width", "ﬁ ligature", "① circled", "x\u3000y", "<|im_end|> as text",
    "[INST] as text", "<s> and </s> as text", "<0x0A> as text", "▁ lower block",
]


def corpus(n: int = 300, seed: int = 7) -> list[str]:
    """The fragments alone, then random concatenations of them: a few hundred texts."""
    rng = random.Random(seed)
    texts = list(_FRAGMENTS)
    while len(texts) < n:
        k = rng.randint(2, 5)
        texts.append("".join(rng.choice(_FRAGMENTS) for _ in range(k)))
    return texts


TEXTS = corpus()
# HF `tokenizers` turns special-token text ("<s>", "<|im_end|>") in its input into the
# special tokens themselves; tests against it use the texts that contain none.
PLAIN_TEXTS = [t for t in TEXTS if not any(s in t for s in ("<|", "<s>", "</s>"))]


def spm_text(text: str) -> str:
    """What a SentencePiece round trip gives back: a literal ▁ in the input is a space."""
    return text.replace("\u2581", " ")


def _concat(vocab: Vocabulary, ids) -> bytes:
    return b"".join(vocab.bytes_of(int(i)) for i in ids)


# --------------------------------------------------------------------- GPT-2 table


def test_gpt2_table_exact_values():
    table = gpt2_bytes_to_unicode()
    assert table[ord("A")] == "A" and table[ord("~")] == "~" and table[ord("!")] == "!"
    assert table[0x20] == "Ġ" == "\u0120"
    assert table[0x0A] == "Ċ" == "\u010a"
    assert table[0x09] == "ĉ"
    assert table[0x00] == "\u0100"
    assert table[0x7F] == "\u0121"
    assert table[0xA0] == "\u0142"
    assert table[0xAD] == "\u0143"
    assert table[0xA1] == "¡" and table[0xFF] == "ÿ" and table[0xAE] == "®"
    assert len(set(table.values())) == 256 and sorted(table) == list(range(256))


def test_gpt2_table_matches_tokenizers_library():
    pre_tokenizers = pytest.importorskip("tokenizers.pre_tokenizers")
    table = gpt2_bytes_to_unicode()
    assert set(table.values()) == set(pre_tokenizers.ByteLevel.alphabet())
    level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    # Every byte reachable from valid UTF-8 text: the library's mapping equals ours.
    samples = [chr(c) for c in range(0x80)] + ["\u00c0\u0080", "\u07ff", "\uffff", "\U0010ffff", "\u0800"]
    samples += [chr(c) for c in range(0x80, 0x800, 7)] + [chr(c) for c in range(0x800, 0xD800, 301)]
    for text in samples:
        (piece, _), = level.pre_tokenize_str(text)
        assert piece == "".join(table[b] for b in text.encode("utf-8")), text


# ------------------------------------------------------------------------ from_bytes


def test_from_bytes_basics():
    v = Vocabulary.from_bytes([b"a", "é", None, b"", b"<eos>", b"bc"], eos_token_ids=[4], size=8)
    assert v.size == len(v) == 8
    assert v.tokens == (b"a", "é".encode(), b"", b"", b"", b"bc", b"", b"")
    assert v.eos_token_ids == frozenset({4})
    assert v.special_ids == frozenset({2, 3, 4, 6, 7})
    assert v.normal_ids().tolist() == [0, 1, 5]
    assert v.normal_ids().dtype == np.int32
    assert not v.normal_ids().flags.writeable
    assert v.bytes_of(1) == b"\xc3\xa9" and v.bytes_of(np.int64(5)) == b"bc"
    assert v.is_special(4) and not v.is_special(0)
    assert v.decode([0, 4, 5, 1]) == b"abc\xc3\xa9"


def test_from_bytes_special_ids_are_blanked_and_never_normal():
    v = Vocabulary.from_bytes([b"<s>", b"x", b"</s>", b"[INST]"], eos_token_ids=[2], special_token_ids=[0, 3])
    assert v.tokens == (b"", b"x", b"", b"")
    assert v.special_ids == {0, 2, 3} and v.eos_token_ids == {2}
    assert v.normal_ids().tolist() == [1]
    assert v.ids_for(b"<s>") == ()


def test_duplicate_bytes_keep_both_ids():
    v = Vocabulary.from_bytes([b" ", b"a", b" ", b"a b"])
    assert v.ids_for(b" ") == (0, 2)
    assert v.ids_for(b"a") == (1,) and v.ids_for(b"zz") == ()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=3), min_size=1, max_size=30), st.data())
def test_ids_for_is_every_id_with_those_bytes(tokens, data):
    """Oracle: a scan of every id (duplicates, empty tokens, special ids, absent bytes)."""
    special = data.draw(st.sets(st.integers(0, len(tokens) - 1), max_size=3))
    v = Vocabulary.from_bytes(tokens, special_token_ids=special)
    for probe in [*tokens, b"", b"\x00", b"zz", bytearray(b"a")]:
        expected = tuple(i for i, t in enumerate(v.tokens) if t and t == bytes(probe))
        assert v.ids_for(probe) == expected, (tokens, special, probe)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(tokens=[b"a"], size=0), "size=0 is smaller"),
        (dict(tokens=[b"a"], eos_token_ids=[5], size=3), "size=3 is smaller"),
        (dict(tokens=[b"a"], eos_token_ids=[-1]), "negative token id"),
        (dict(tokens=[b"a", b"b"], eos_token_ids=[2]),
         re.escape("eos_token_ids [2] are past the 2 tokens listed (ids 0..1): list those ids too")),
        (dict(tokens=[b"a"], special_token_ids=[3, 1]), re.escape("special_token_ids [1, 3] are past the 1 tokens")),
        (dict(tokens=[b"a", 3]), "token 1 is int"),
    ],
)
def test_from_bytes_errors(kwargs, message):
    tokens = kwargs.pop("tokens")
    with pytest.raises(VocabularyError, match=message):
        Vocabulary.from_bytes(tokens, **kwargs)


def test_bytes_of_rejects_bad_ids():
    v = Vocabulary.from_bytes([b"a", b"b"])
    for bad in (-1, 2, 10**9, "1", 1.0):
        with pytest.raises(VocabularyError, match="outside 0..1"):
            v.bytes_of(bad)
    assert isinstance(VocabularyError("x"), GrammarcError) and isinstance(VocabularyError("x"), ValueError)


def test_direct_construction_validates_invariants():
    Vocabulary((b"a", b""), frozenset({1}), frozenset({1}))
    with pytest.raises(VocabularyError, match="not special"):
        Vocabulary((b"a", b""), frozenset({0}), frozenset({1}))
    with pytest.raises(VocabularyError, match="exactly the ids that map to b''"):
        Vocabulary((b"a", b""), frozenset(), frozenset())
    with pytest.raises(VocabularyError, match="exactly the ids that map to b''"):
        Vocabulary((b"a", b"b"), frozenset(), frozenset({0}))
    with pytest.raises(VocabularyError, match="outside"):
        Vocabulary((b"a",), frozenset(), frozenset({3}))
    with pytest.raises(VocabularyError, match="expected bytes"):
        Vocabulary(("a",), frozenset(), frozenset())


def test_vocabulary_is_immutable_and_hashable():
    v = Vocabulary.from_bytes([b"a", b"b"], eos_token_ids=[], size=3)
    with pytest.raises(AttributeError):
        v.tokens = ()  # type: ignore[misc]
    w = Vocabulary.from_bytes([b"a", b"b", None])
    assert v == w and hash(v) == hash(w) and v.key == w.key
    assert "size=3" in repr(v) and "normal=2" in repr(v)


# ---------------------------------------------------------------------------- key


def test_key_is_stable_and_hex():
    v = Vocabulary.from_bytes([b"a", b"b"], eos_token_ids=[2], size=3)
    assert v.key == Vocabulary.from_bytes([b"a", b"b", b""], eos_token_ids=[2]).key
    assert len(v.key) == 64 and int(v.key, 16) >= 0


@settings(max_examples=200, deadline=None)
@given(
    tokens=st.lists(st.binary(min_size=1, max_size=4), min_size=2, max_size=12),
    data=st.data(),
)
def test_key_changes_when_any_token_changes(tokens, data):
    base = Vocabulary.from_bytes(tokens + [None], eos_token_ids=[len(tokens)])
    i = data.draw(st.integers(0, len(tokens) - 1))
    new = data.draw(st.binary(max_size=4).filter(lambda b: b != tokens[i]))
    changed = list(tokens)
    changed[i] = new
    other = Vocabulary.from_bytes(changed + [None], eos_token_ids=[len(tokens)])
    assert other.key != base.key and other != base


def test_key_covers_boundaries_specials_eos_and_size():
    keys = {
        Vocabulary.from_bytes([b"ab", b"c"]).key,
        Vocabulary.from_bytes([b"a", b"bc"]).key,  # same concatenation, other split
        Vocabulary.from_bytes([b"ab", b"c"], size=3).key,
        Vocabulary.from_bytes([b"ab", b"c", b""], eos_token_ids=[2]).key,
        Vocabulary.from_bytes([b"ab", b"c"], special_token_ids=[1]).key,
        Vocabulary.from_bytes([b"ab", b"c"], eos_token_ids=[1]).key,
    }
    assert len(keys) == 6


# --------------------------------------------------------------------- from_tiktoken

_RANKS = {b"a": 0, b"b": 1, b" ": 2, b"\n": 3, b"ab": 4, b"\xe2\x96": 5, b"\x81": 7}
_RANK_TEXT = "\n".join(
    f"{__import__('base64').b64encode(k).decode()} {v}" for k, v in _RANKS.items()
) + "\n"


def test_from_tiktoken_sources_agree(tmp_path):
    path = tmp_path / "x.tiktoken"
    path.write_text(_RANK_TEXT)
    specials = {"<|endoftext|>": 8, "<|fim|>": 9}
    vocabs = [
        Vocabulary.from_tiktoken(_RANKS, special_tokens=specials),
        Vocabulary.from_tiktoken(_RANK_TEXT, special_tokens=specials),
        Vocabulary.from_tiktoken(str(path), special_tokens=specials),
        Vocabulary.from_tiktoken(path, special_tokens=specials),
        Vocabulary.from_tiktoken(_RANK_TEXT.encode(), special_tokens=specials),
    ]
    v = vocabs[0]
    assert all(w == v for w in vocabs)
    assert v.tokens == (b"a", b"b", b" ", b"\n", b"ab", b"\xe2\x96", b"", b"\x81", b"", b"")
    assert v.special_ids == {6, 8, 9}  # 6 is a gap in the ranks
    assert v.eos_token_ids == {8}  # default: the known EOS names
    assert Vocabulary.from_tiktoken(_RANKS, special_tokens=specials, eos="<|fim|>").eos_token_ids == {9}
    assert Vocabulary.from_tiktoken(_RANKS, special_tokens=specials, eos=[8, 9]).eos_token_ids == {8, 9}
    assert Vocabulary.from_tiktoken(_RANKS, special_tokens=specials, size=16).size == 16


def test_from_tiktoken_errors(tmp_path):
    with pytest.raises(VocabularyError, match="does not exist"):
        Vocabulary.from_tiktoken(str(tmp_path / "missing.tiktoken"))
    with pytest.raises(VocabularyError, match="line 2"):
        Vocabulary.from_tiktoken("YQ== 0\nnot-base64!! 1\n")
    with pytest.raises(VocabularyError, match="not a special token"):
        Vocabulary.from_tiktoken(_RANKS, special_tokens={}, eos="<|endoftext|>")


def test_from_tiktoken_encoding_object():
    tiktoken = pytest.importorskip("tiktoken")
    ranks, specials = vocabularies.quicktok_files("cl100k")
    enc = tiktoken.Encoding(
        name="cl100k_test",
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+""",
        mergeable_ranks=ranks,
        special_tokens=specials,
    )
    v = Vocabulary.from_tiktoken(enc)
    assert v == vocabularies.cl100k()
    for text in TEXTS[:100]:
        assert _concat(v, enc.encode_ordinary(text)) == text.encode()
    assert v.bytes_of(100256) == b"" and 100256 in v.special_ids  # the unused id
    assert v.eos_token_ids == {100257}


# ------------------------------------------------------------------ Llama-3 and Qwen3


def test_llama3_known_tokens_eos_and_size():
    v = vocabularies.llama3()
    assert v.size == 128256
    assert v.bytes_of(22691) == b" Hello" and v.ids_for(b" Hello") == (22691,)
    assert v.bytes_of(9906) == b"Hello"
    assert v.bytes_of(198) == b"\n" and v.bytes_of(220) == b" "
    assert v.eos_token_ids == {128001, 128009}
    assert v.special_ids == set(range(128000, 128256))
    normal = v.normal_ids()
    assert len(normal) == 128000 and normal[-1] == 127999
    assert not set(normal.tolist()) & v.special_ids
    # Byte-level tokens that are not valid UTF-8 on their own keep their raw bytes.
    assert {v.bytes_of(i) for i in range(256)} >= {bytes([b]) for b in range(0x80, 0xC0)}


def test_llama3_every_token_matches_quicktok():
    v = vocabularies.llama3()
    ref = vocabularies.quicktok_reference("llama3")
    assert [v.bytes_of(i) for i in range(128000)] == [ref.decode_single_token_bytes(i) for i in range(128000)]


@pytest.mark.parametrize("name", ["llama3", "qwen3", "cl100k", "o200k"])
def test_byte_level_decoding_sanity(name):
    v = getattr(vocabularies, name)()
    ref = vocabularies.quicktok_reference(name)
    for text in TEXTS:
        ids = ref.encode_ordinary(text)
        # Qwen's tokenizer NFC-normalizes its input: "e\u0301" comes back as "\u00e9".
        expected = unicodedata.normalize("NFC", text) if name == "qwen3" else text
        assert _concat(v, ids) == expected.encode("utf-8"), text
        assert _concat(v, ids) == ref.decode_bytes(ids)
        assert all(not v.is_special(i) for i in ids)


def test_qwen3_padding_added_text_tokens_and_eos():
    v = vocabularies.qwen3()
    ref = vocabularies.quicktok_reference("qwen3")
    assert v.size == 151936  # the model's logits are wider than the tokenizer
    assert v.special_ids >= set(range(151669, 151936))
    assert all(v.bytes_of(i) == b"" for i in range(151669, 151936))
    assert v.eos_token_ids == {151643, 151645}
    assert v.bytes_of(21927) == b" Hello" and v.bytes_of(9707) == b"Hello"
    assert v.bytes_of(151667) == b"<think>" and v.bytes_of(151668) == b"</think>"
    assert ref.encode_with_special("<think>\n") == [151667, 198]
    assert v.special_ids & set(range(151643, 151669)) == set(range(151643, 151657))
    assert len(v.normal_ids()) == 151643 + 12


# ----------------------------------------------------------------------------- Tekken


def test_tekken_decoding_sanity():
    v = vocabularies.tekken()
    ref = vocabularies.tekken_reference()
    for text in TEXTS:
        ids = ref.encode(text, bos=False, eos=False)
        assert _concat(v, ids) == text.encode("utf-8"), text
        assert _concat(v, ids).decode("utf-8") == ref.decode(ids)


def test_tekken_specials_eos_size_and_bytes():
    v = vocabularies.tekken()
    ref = vocabularies.tekken_reference()
    assert v.size == ref.n_words == 131072
    assert v.special_ids == set(range(1000))
    assert v.eos_token_ids == {2} == {ref.eos_id}
    assert all(v.bytes_of(1000 + b) == bytes([b]) for b in range(256))  # byte tokens
    assert v.bytes_of(1010) == b"\n"
    hello = ref.encode(" Hello", bos=False, eos=False)
    assert len(hello) == 1 and v.bytes_of(hello[0]) == b" Hello"
    assert v.normal_ids()[0] == 1000 and len(v.normal_ids()) == 130072


def test_tekken_json_without_mistral_common_agrees():
    path = Path(vocabularies.tekken_reference().file_path)
    assert Vocabulary.from_tokenizer_json(path) == vocabularies.tekken()


def test_from_mistral_unwraps_mistral_tokenizer():
    pytest.importorskip("mistral_common")
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    ref = vocabularies.sentencepiece_reference("v1")
    wrapped = MistralTokenizer.from_file(str(ref.file_path))
    assert Vocabulary.from_mistral(wrapped) == vocabularies.sentencepiece_v1()
    assert Vocabulary.from_mistral(wrapped.instruct_tokenizer) == vocabularies.sentencepiece_v1()
    assert Vocabulary.from_mistral(ref, eos_token_ids=[1, 2]).eos_token_ids == {1, 2}
    with pytest.raises(VocabularyError, match="not a mistral-common tokenizer"):
        Vocabulary.from_mistral(object())


# ---------------------------------------------------------------------- SentencePiece


@pytest.mark.parametrize("version", ["v1", "v3"])
def test_sentencepiece_decoding_sanity(version):
    v = getattr(vocabularies, f"sentencepiece_{version}")()
    ref = vocabularies.sentencepiece_reference(version)
    assert v.prefix_space
    for text in TEXTS:
        ids = ref.encode(text, bos=False, eos=False)
        # The leading-space rule: the encoder prepends the dummy "▁" to the text, so our
        # bytes are one space longer than the text; the library's decoder strips it.
        assert _concat(v, ids) == b" " + spm_text(text).encode("utf-8"), text
        assert ref.decode(ids) == spm_text(text)


@pytest.mark.parametrize("version, newline, hello, n_control", [("v1", 13, 22557, 2), ("v3", 781, 23325, 750)])
def test_sentencepiece_known_tokens(version, newline, hello, n_control):
    v = getattr(vocabularies, f"sentencepiece_{version}")()
    ref = vocabularies.sentencepiece_reference(version)
    assert ref.id_to_piece(newline) == "<0x0A>" and v.bytes_of(newline) == b"\n"
    assert ref.id_to_piece(hello) == "▁Hello" and v.bytes_of(hello) == b" Hello"
    assert v.eos_token_ids == {2}
    assert v.special_ids == set(range(n_control + 1))  # <unk> (0) and the control tokens
    assert not set(v.normal_ids().tolist()) & ref.special_ids
    space = ref._model.piece_to_id("▁")
    assert set(v.ids_for(b" ")) == {space, ref._model.piece_to_id("<0x20>")}  # duplicates
    assert ref.decode([space]) == ""  # alone, first: the dummy prefix vanishes...
    assert v.bytes_of(space) == b" "  # ...but in the middle of a text it adds a space


def test_sentencepiece_v3_user_defined_pieces_are_text():
    v = vocabularies.sentencepiece_v3()
    ref = vocabularies.sentencepiece_reference("v3")
    assert ref.id_to_piece(770) == "[REFERENCE_DOC_0]" and v.bytes_of(770) == b"[REFERENCE_DOC_0]"
    assert v.size == 32768 and len(v.normal_ids()) == 32768 - 751


def test_from_sentencepiece_path_and_processor():
    spm = pytest.importorskip("sentencepiece")
    ref = vocabularies.sentencepiece_reference("v1")
    v = Vocabulary.from_sentencepiece(ref.file_path)
    assert v == vocabularies.sentencepiece_v1()
    w = Vocabulary.from_sentencepiece(spm.SentencePieceProcessor(model_file=str(ref.file_path)), size=32064)
    assert w.size == 32064 and w.tokens[:32000] == v.tokens and w.special_ids >= set(range(32000, 32064))


# ----------------------------------------------- tokenizer.json written by `tokenizers`

def _tk():
    return pytest.importorskip("tokenizers", reason="pip install tokenizers to test tokenizer.json")


def _train_corpus() -> list[str]:
    return corpus(600, seed=11) * 3


def byte_level_tokenizer():
    """A GPT-2/Qwen-style byte-level BPE trained here, with special and text added tokens."""
    tk = _tk()
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1500,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        show_progress=False,
    )
    tok.train_from_iterator(_train_corpus(), trainer=trainer)
    tok.add_tokens([AddedToken("<think>", normalized=False), AddedToken(" x y", normalized=False)])
    assert tk
    return tok


def _sentencepiece_vocab_and_merges(version="v1"):
    """The pieces of a shipped SentencePiece BPE model and merges ordered by piece id."""
    ref = vocabularies.sentencepiece_reference(version)
    sp = ref._model
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    merges = []
    for piece, i in vocab.items():
        if sp.is_control(i) or sp.is_byte(i) or sp.is_unknown(i):
            continue
        for k in range(1, len(piece)):
            left, right = piece[:k], piece[k:]
            if left in vocab and right in vocab:
                merges.append((i, vocab[left], vocab[right], left, right))
    merges.sort()
    return vocab, [(m[3], m[4]) for m in merges]


def sentencepiece_style_tokenizer(style: str):
    """Llama-2/Mistral style tokenizer.json over the Mistral v1 pieces.

    ``legacy``: Prepend+Replace normalizer, decoder Replace/ByteFallback/Fuse/Strip.
    ``metaspace``: Metaspace pre-tokenizer and decoder (prepend_scheme "first").
    """
    _tk()
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    vocab, merges = _sentencepiece_vocab_and_merges()
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if style == "legacy":
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence(
            [decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
        )
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(replacement="▁", prepend_scheme="first", split=False)])
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    return tok


def test_tokenizer_json_byte_level_matches_tokenizers():
    tok = byte_level_tokenizer()
    data = json.loads(tok.to_str())
    v = Vocabulary.from_tokenizer_json(data)
    assert v == Vocabulary.from_tokenizer_json(tok.to_str())
    eot, im_end = tok.token_to_id("<|endoftext|>"), tok.token_to_id("<|im_end|>")
    assert v.eos_token_ids == {eot, im_end}
    assert v.special_ids == {eot, im_end, tok.token_to_id("<|im_start|>")}
    assert not v.prefix_space
    for text in PLAIN_TEXTS:
        ids = tok.encode(text).ids
        assert _concat(v, ids) == text.encode("utf-8"), text
        assert tok.decode(ids) == text
    # Per token, against the library's decoder (tokens that are whole UTF-8 text).
    for i in range(tok.get_vocab_size()):
        ours = v.bytes_of(i)
        if i in v.special_ids:
            assert tok.decode([i], skip_special_tokens=True) == ""
        elif ours.decode("utf-8", "replace") == ours.decode("utf-8", "ignore"):
            assert tok.decode([i]) == ours.decode("utf-8"), i
    assert v.bytes_of(tok.token_to_id("<think>")) == b"<think>"
    assert v.bytes_of(tok.token_to_id(" x y")) == b" x y"
    assert v.ids_for(b" ") == (tok.token_to_id("Ġ"),)


def test_tokenizer_json_added_token_decoded_like_tokenizers():
    """An added token whose characters all sit in the byte-level table goes through it,
    as `tokenizers` decodes it (é is the stand-in for byte 0xE9): we follow the decoder."""
    _tk()
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.BPE(vocab={"a": 0, "Ġ": 1}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_tokens([AddedToken("héllo", normalized=False), AddedToken("日本", normalized=False)])
    v = Vocabulary.from_tokenizer_json(tok.to_str(), eos_token_ids=[])
    assert v.tokens == (b"a", b" ", b"h\xe9llo", "日本".encode())
    assert tok.decode([2]) == b"h\xe9llo".decode("utf-8", "replace")
    assert tok.decode([3]) == "日本"


@pytest.mark.parametrize("style", ["legacy", "metaspace"])
def test_tokenizer_json_sentencepiece_style(style, tmp_path):
    tok = sentencepiece_style_tokenizer(style)
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    v = Vocabulary.from_tokenizer_json(path)
    assert v.prefix_space
    assert v.eos_token_ids == {2} and v.special_ids == {0, 1, 2}
    assert v.tokens == vocabularies.sentencepiece_v1().tokens  # same pieces, same bytes
    anchor = tok.token_to_id("a")
    for text in PLAIN_TEXTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        ours = _concat(v, ids)
        # In the middle of a text (after the anchor token "a") the decoder adds our bytes.
        # (At the start it drops the dummy space; Metaspace even drops every "▁" of the
        # first token, so "▁▁" alone decodes to "": the prompt boundary is not ours.)
        assert tok.decode([anchor, *ids]).encode("utf-8") == b"a" + ours, text
        if style == "legacy":  # always prepends "▁"
            assert ours == b" " + spm_text(text).encode("utf-8"), text
        else:  # Metaspace prepends "▁" only when the text does not start with one
            prefix = b"" if spm_text(text).startswith(" ") else b" "
            assert ours == prefix + spm_text(text).encode("utf-8"), text


def test_tokenizer_json_unigram_metaspace():
    _tk()
    from tokenizers import SentencePieceUnigramTokenizer

    tok = SentencePieceUnigramTokenizer()
    tok.train_from_iterator(_train_corpus(), vocab_size=400, special_tokens=["<unk>", "</s>"], unk_token="<unk>", show_progress=False)
    data = json.loads(tok.to_str())
    assert data["model"]["type"] == "Unigram"
    v = Vocabulary.from_tokenizer_json(data)
    assert v.prefix_space and v.eos_token_ids == {tok.token_to_id("</s>")}
    unk = tok.token_to_id("<unk>")
    assert unk in v.special_ids
    checked = 0
    for text in PLAIN_TEXTS:
        ids = tok.encode(text).ids
        if unk in ids:
            continue  # characters the tiny model never saw
        checked += 1
        assert _concat(v, ids) == b" " + tok.decode(ids).encode("utf-8"), text
    assert checked > 50


def test_tokenizer_json_errors(tmp_path):
    with pytest.raises(VocabularyError, match="does not exist"):
        Vocabulary.from_tokenizer_json(tmp_path / "nope.json")
    with pytest.raises(VocabularyError, match="malformed"):
        Vocabulary.from_tokenizer_json("{not json")
    with pytest.raises(VocabularyError, match="no 'model'"):
        Vocabulary.from_tokenizer_json({"decoder": None})
    bad = {"model": {"type": "BPE", "vocab": {"a": 0}}, "decoder": {"type": "CTC"}}
    with pytest.raises(VocabularyError, match="unsupported tokenizer.json decoder 'CTC'"):
        Vocabulary.from_tokenizer_json(bad)


def test_tokenizer_json_handwritten_cases():
    data = {
        "model": {"type": "BPE", "vocab": {"<unk>": 0, "▁a": 1, "<0x0A>": 2, "b▁": 3, "▁": 4}, "byte_fallback": True, "unk_token": "<unk>"},
        "added_tokens": [
            {"id": 5, "content": "<|eot_id|>", "special": True},
            {"id": 7, "content": "▁tool", "special": False},
        ],
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    }
    v = Vocabulary.from_tokenizer_json(data, size=10)
    assert v.tokens == (b"", b" a", b"\n", b"b ", b" ", b"", b"", b" tool", b"", b"")
    assert v.special_ids == {0, 5, 6, 8, 9} and v.eos_token_ids == {5} and v.prefix_space
    # No decoder: inferred from the byte-level pre-tokenizer.
    data = {"model": {"type": "BPE", "vocab": {"Ġhi": 0, "Ċ": 1}}, "pre_tokenizer": {"type": "ByteLevel"}, "decoder": None}
    assert Vocabulary.from_tokenizer_json(data).tokens == (b" hi", b"\n")


# --------------------------------------------------------------------- transformers


def test_from_tokenizer_transformers_fast(tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers is optional")
    tok = byte_level_tokenizer()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), eos_token="<|im_end|>")
    v = Vocabulary.from_tokenizer(hf)
    assert v.tokens == Vocabulary.from_tokenizer_json(path).tokens
    assert hf.eos_token_id in v.eos_token_ids
    assert Vocabulary.from_tokenizer(hf, eos_token_ids=[hf.eos_token_id]).eos_token_ids == {hf.eos_token_id}
    assert Vocabulary.from_tokenizer(hf, eos_token_ids=["<|endoftext|>"]).eos_token_ids == {tok.token_to_id("<|endoftext|>")}
    padded = Vocabulary.from_tokenizer(hf, size=len(hf) + 64)
    assert padded.size == len(hf) + 64 and padded.tokens[: len(hf)] == v.tokens
    for text in PLAIN_TEXTS[:100]:
        assert _concat(v, hf.encode(text, add_special_tokens=False)) == text.encode()


def test_from_tokenizer_transformers_sentencepiece_style(tmp_path):
    transformers = pytest.importorskip("transformers", reason="transformers is optional")
    tok = sentencepiece_style_tokenizer("legacy")
    hf = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", bos_token="<s>", unk_token="<unk>")
    v = Vocabulary.from_tokenizer(hf)
    assert v.tokens == vocabularies.sentencepiece_v1().tokens and v.prefix_space
    assert v.eos_token_ids == {2}


class _SlowByteLevel:
    """The duck type of a slow GPT-2 tokenizer (transformers' Python implementation)."""

    def __init__(self):
        table = gpt2_bytes_to_unicode()
        self.byte_decoder = {c: b for b, c in table.items()}
        self.pieces = ["Hello", table[32] + "world", table[10], table[0xE6] + table[0x97], "<|endoftext|>"]
        self.added_tokens_decoder = {4: type("Added", (), {"special": True})()}
        self.all_special_ids = [4]
        self.eos_token_id = 4

    def __len__(self):
        return len(self.pieces)

    def convert_ids_to_tokens(self, ids):
        return self.pieces[ids] if isinstance(ids, int) else [self.pieces[i] for i in ids]


def test_from_tokenizer_slow_byte_level():
    v = Vocabulary.from_tokenizer(_SlowByteLevel(), size=8)
    assert v.tokens == (b"Hello", b" world", b"\n", b"\xe6\x97", b"", b"", b"", b"")
    assert v.eos_token_ids == {4} and v.special_ids == {4, 5, 6, 7}


def test_from_tokenizer_slow_sentencepiece():
    ref = vocabularies.sentencepiece_reference("v1")

    class SlowLlama:
        sp_model = ref._model
        all_special_ids = [0, 1, 2]
        eos_token_id = 2

        def __len__(self):
            return 32000

        def convert_ids_to_tokens(self, i):
            return ref._model.id_to_piece(i)

    v = Vocabulary.from_tokenizer(SlowLlama())
    assert v == vocabularies.sentencepiece_v1()


class _SlowOpaque:
    """A Python tokenizer with neither byte tables nor a SentencePiece model: we read each
    token's bytes off its own decoder, after an anchor token."""

    pieces = ["a", "b", "##c", "<eos>"]
    all_special_ids = [3]
    eos_token_id = 3

    def __len__(self):
        return len(self.pieces)

    def convert_ids_to_tokens(self, ids):
        return self.pieces[ids] if isinstance(ids, int) else [self.pieces[i] for i in ids]

    def encode(self, text, add_special_tokens=False):
        return [self.pieces.index(text)]

    def decode(self, ids, clean_up_tokenization_spaces=False):
        out = ""
        for i in ids:
            p = self.pieces[i]
            out += p[2:] if p.startswith("##") else (" " + p if out else p)
        return out


def test_from_tokenizer_slow_generic_decoder_differences():
    v = Vocabulary.from_tokenizer(_SlowOpaque())
    assert v.tokens == (b" a", b" b", b"c", b"")
    assert v.eos_token_ids == {3} and v.special_ids == {3}
