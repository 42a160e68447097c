"""The model's vocabulary as the grammar engine sees it: token id -> the bytes it adds.

Why a class of its own: tokenizers store tokens in many encodings (GPT-2's byte-to-unicode
alphabet, SentencePiece's ``▁`` and ``<0xNN>`` pieces, tiktoken's raw bytes, Tekken's
base64), and peer libraries have had most of their bugs exactly here. Every constructor
below turns one of those encodings into one plain fact per id: the exact bytes that the
token adds *in the middle of a text*. The engine works on those bytes only.

Conventions (the contract other modules rely on):

* ``tokens[i]`` is the byte string token ``i`` adds. ``len(tokens) == size``, and `size`
  may exceed the tokenizer's own count: models often have wider logits than the tokenizer
  (padded vocabularies); the padding ids map to ``b""``.
* A token maps to ``b""`` exactly when it carries no text: control and special tokens,
  EOS, the unknown token, unused and padding ids, and tokens whose decoding is empty.
  Those ids, and only those, are `special_ids`; they never match grammar text. `normal_ids`
  are the rest. EOS ids are always special.
* Two ids may have the same bytes (SentencePiece's ``▁`` and ``<0x20>`` both add a space);
  both are kept: they are different tokens for the model.
* SentencePiece's leading-space convention: ``▁Hello`` adds ``b" Hello"``, everywhere. Such
  tokenizers prepend a space to the text when encoding (the "dummy prefix") and their decoder
  drops one leading space from the very first token of a text, so the first token of a
  completion that the user sees as ``Hello`` is, to the engine, ``b" Hello"``. The
  vocabulary does not guess which token comes first: it records `prefix_space = True` for
  such tokenizers, and handling the prompt boundary (accepting an optional leading space,
  or stripping it from the text) is the integration's business.
* Byte-level BPE (GPT-2, Llama-3, Qwen): token strings are decoded through the GPT-2
  byte-to-unicode table; a string with a character outside the table is taken as its own
  UTF-8, as `tokenizers` does. A token may hold part of a UTF-8 character (``b"\\xe6"``).
* Added tokens: special ones are special; the others are text and go through the same
  decoder as the model's tokens, exactly as `tokenizers` decodes them (Qwen's ``<think>``
  adds ``b"<think>"``).
* SentencePiece ``<0xNN>`` byte-fallback pieces add that single byte; the unknown piece
  is special (its `` ⁇ `` rendering is not text the model means).
* Input normalization (Qwen's NFC, SentencePiece's NFKC) happens before encoding and is
  not the vocabulary's concern: tokens are what the model can emit.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from grammarc.errors import GrammarcError

__all__ = ["Vocabulary", "VocabularyError", "gpt2_bytes_to_unicode", "KNOWN_EOS_TOKENS"]


class VocabularyError(GrammarcError, ValueError):
    """A vocabulary or tokenizer description is malformed, or an id is out of range."""


# Names that end generation in the models we know of. Used only when the caller does not
# say which ids are EOS (tokenizer.json and rank files do not record it).
KNOWN_EOS_TOKENS: tuple[str, ...] = (
    "</s>",
    "<eos>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<end_of_turn>",
    "<|endofturn|>",
)

_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_SPIECE = "\u2581"  # ▁


def gpt2_bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table used by byte-level BPE tokenizers.

    Printable Latin-1 bytes map to themselves; the 68 others (controls, space, 0x7F-0xA0,
    0xAD) map, in byte order, to U+0100, U+0101, ... so every byte has a visible stand-in.
    """
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table: dict[int, str] = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


_UNICODE_TO_BYTE: dict[str, int] = {c: b for b, c in gpt2_bytes_to_unicode().items()}


def _byte_level_decode(piece: str) -> bytes:
    """One byte-level token string -> bytes; raw UTF-8 when a char is outside the table."""
    try:
        return bytes(_UNICODE_TO_BYTE[c] for c in piece)
    except KeyError:
        return piece.encode("utf-8")


@dataclass(frozen=True, eq=True)
class Vocabulary:
    """Immutable map token id -> the bytes the token adds, plus the special ids.

    Build it with a constructor (`from_bytes`, `from_tokenizer`, `from_tokenizer_json`,
    `from_tiktoken`, `from_mistral`, `from_sentencepiece`); direct construction validates
    the invariants and raises `VocabularyError` when they do not hold.
    """

    tokens: tuple[bytes, ...] = field(repr=False)
    eos_token_ids: frozenset[int]
    special_ids: frozenset[int] = field(repr=False)
    # Metadata for integrations, not part of `key`: the tokenizer adds a dummy space before
    # the text and its decoder strips one leading space from the first token (SentencePiece).
    prefix_space: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.tokens, tuple):
            object.__setattr__(self, "tokens", tuple(self.tokens))
        object.__setattr__(self, "eos_token_ids", frozenset(self.eos_token_ids))
        object.__setattr__(self, "special_ids", frozenset(self.special_ids))
        size = len(self.tokens)
        for i, t in enumerate(self.tokens):
            if type(t) is not bytes:
                raise VocabularyError(f"token {i} is {type(t).__name__}, expected bytes")
        for name, ids in (("eos_token_ids", self.eos_token_ids), ("special_ids", self.special_ids)):
            bad = sorted(i for i in ids if not (isinstance(i, int) and 0 <= i < size))
            if bad:
                raise VocabularyError(f"{name} has ids outside 0..{size - 1}: {bad[:5]}")
        if not self.eos_token_ids <= self.special_ids:
            raise VocabularyError(
                f"EOS ids {sorted(self.eos_token_ids - self.special_ids)[:5]} are not special"
            )
        empty = frozenset(i for i, t in enumerate(self.tokens) if not t)
        if empty != self.special_ids:
            wrong = sorted(self.special_ids - empty)[:5] or sorted(empty - self.special_ids)[:5]
            raise VocabularyError(
                "special ids must be exactly the ids that map to b'' "
                f"(special tokens carry no text); offending ids: {wrong}"
            )

    # ----------------------------------------------------------------- queries

    @property
    def size(self) -> int:
        """Number of ids, i.e. the width of the logits this vocabulary describes."""
        return len(self.tokens)

    def __len__(self) -> int:
        return len(self.tokens)

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        eos = sorted(self.eos_token_ids)
        return (
            f"Vocabulary(size={self.size}, normal={self.size - len(self.special_ids)}, "
            f"special={len(self.special_ids)}, eos={eos}, key={self.key[:12]})"
        )

    def bytes_of(self, token_id: int) -> bytes:
        """The bytes token `token_id` adds (``b""`` for special ids)."""
        if not isinstance(token_id, (int, np.integer)) or not 0 <= token_id < len(self.tokens):
            raise VocabularyError(f"token id {token_id!r} is outside 0..{len(self.tokens) - 1}")
        return self.tokens[int(token_id)]

    def is_special(self, token_id: int) -> bool:
        """True for ids that carry no text (EOS, control, padding, ...)."""
        return token_id in self.special_ids

    def normal_ids(self) -> np.ndarray:
        """Sorted int32 ids that carry text (read-only array)."""
        return self._normal_ids

    @cached_property
    def _normal_ids(self) -> np.ndarray:
        ids = np.fromiter(
            (i for i, t in enumerate(self.tokens) if t), dtype=np.int32, count=-1
        )
        ids.flags.writeable = False
        return ids

    def ids_for(self, data: bytes) -> tuple[int, ...]:
        """All ids whose bytes are exactly `data` (several when tokens are duplicated)."""
        data = bytes(data)
        first, duplicated = self._by_bytes
        i = first.get(data) if data else None
        return () if i is None else duplicated.get(data, (i,))

    @cached_property
    def _by_bytes(self) -> tuple[dict[bytes, int], dict[bytes, tuple[int, ...]]]:
        """bytes -> smallest id, and bytes -> all ids for the few bytes several ids share.
        Built with C-level loops (~20 ms for 131k tokens, a tenth of a Python loop's): the
        first steered token of a session waits for it."""
        n = len(self.tokens)
        first = dict(zip(reversed(self.tokens), range(n - 1, -1, -1)))
        smallest = np.fromiter(map(first.__getitem__, self.tokens), dtype=np.int64, count=n)
        duplicated: dict[bytes, list[int]] = {}
        for i in np.flatnonzero(smallest != np.arange(n)).tolist():
            t = self.tokens[i]
            if t:
                duplicated.setdefault(t, [first[t]]).append(i)
        return first, {k: tuple(v) for k, v in duplicated.items()}

    def decode(self, ids: Iterable[int]) -> bytes:
        """Concatenated bytes of `ids` (special ids add nothing)."""
        return b"".join(self.bytes_of(i) for i in ids)

    @cached_property
    def key(self) -> str:
        """sha256 hex digest of the tokens and special sets: what a token index depends on."""
        h = hashlib.sha256(b"grammarc-vocabulary-v1\0")
        h.update(len(self.tokens).to_bytes(8, "little"))
        h.update(b"".join(len(t).to_bytes(4, "little") + t for t in self.tokens))
        for ids in (self.special_ids, self.eos_token_ids):
            h.update(len(ids).to_bytes(8, "little"))
            h.update(b"".join(i.to_bytes(8, "little") for i in sorted(ids)))
        return h.hexdigest()

    # ------------------------------------------------------------- constructors

    @classmethod
    def from_bytes(
        cls,
        tokens: Sequence[bytes | str | None],
        eos_token_ids: Iterable[int] = (),
        special_token_ids: Iterable[int] = (),
        size: int | None = None,
        *,
        prefix_space: bool = False,
    ) -> "Vocabulary":
        """A vocabulary from one entry per id: bytes (``str`` is taken as UTF-8).

        ``None`` or ``b""`` marks an id that carries no text; `special_token_ids` and
        `eos_token_ids` are special whatever their listed bytes; ids from ``len(tokens)``
        up to `size` are padding. Without `size`, every EOS or special id must be one of
        the listed tokens (list EOS as ``None``): an id past the list would silently widen
        the vocabulary, and the logits with it.
        """
        eos_token_ids, special_token_ids = list(eos_token_ids), list(special_token_ids)
        if size is None:
            for name, ids in (("eos_token_ids", eos_token_ids), ("special_token_ids", special_token_ids)):
                beyond = sorted(int(i) for i in ids if isinstance(i, (int, np.integer)) and i >= len(tokens))
                if beyond:
                    raise VocabularyError(
                        f"{name} {beyond[:5]} are past the {len(tokens)} tokens listed (ids 0..{len(tokens) - 1}): "
                        "list those ids too (None for a special token) or pass size= for padding ids"
                    )
        raw: list[bytes] = []
        for i, t in enumerate(tokens):
            if t is None:
                raw.append(b"")
            elif isinstance(t, str):
                raw.append(t.encode("utf-8"))
            elif isinstance(t, (bytes, bytearray, memoryview)):
                raw.append(bytes(t))
            else:
                raise VocabularyError(f"token {i} is {type(t).__name__}, expected bytes")
        return _build(dict(enumerate(raw)), eos_token_ids, special_token_ids, size, prefix_space)

    @classmethod
    def from_tiktoken(
        cls,
        ranks: Any,
        special_tokens: Mapping[str, int] | None = None,
        eos: int | str | Iterable[int | str] | None = None,
        size: int | None = None,
    ) -> "Vocabulary":
        """A vocabulary from tiktoken-style mergeable ranks (the rank is the token id).

        `ranks` is a ``dict[bytes, int]``, the text of a rank file (lines of
        ``base64 rank``), a path to one, or a ``tiktoken.Encoding``. `special_tokens` maps
        names to ids; `eos` names EOS by id or special-token name (default: the special
        tokens named in `KNOWN_EOS_TOKENS`).
        """
        if hasattr(ranks, "_mergeable_ranks"):  # a tiktoken.Encoding
            if special_tokens is None:
                special_tokens = dict(getattr(ranks, "_special_tokens", {}))
            ranks = ranks._mergeable_ranks
        table = _parse_ranks(ranks)
        special_tokens = dict(special_tokens or {})
        by_id: dict[int, bytes] = {r: b for b, r in table.items()}
        specials = set(special_tokens.values())
        eos_ids = _resolve_eos(eos, special_tokens)
        return _build(by_id, eos_ids, specials, size, False)

    @classmethod
    def from_tokenizer_json(
        cls,
        source: str | os.PathLike | Mapping[str, Any],
        eos_token_ids: Iterable[int | str] | None = None,
        size: int | None = None,
    ) -> "Vocabulary":
        """A vocabulary from a `tokenizers` tokenizer.json (or a Mistral tekken.json).

        `source` is a path, the JSON text, or the parsed dict; only `json` is used. EOS
        ids default to the special added tokens named in `KNOWN_EOS_TOKENS` (tokenizer.json
        does not record EOS: pass `eos_token_ids`, ids or token names, to be exact).
        """
        data = _load_json(source)
        if isinstance(data.get("vocab"), list) and "config" in data:
            return _from_tekken_dict(data, eos_token_ids, size)
        return _from_hf_dict(data, eos_token_ids, size)

    @classmethod
    def from_tokenizer(
        cls,
        tokenizer: Any,
        eos_token_ids: Iterable[int | str] | None = None,
        size: int | None = None,
    ) -> "Vocabulary":
        """A vocabulary from a transformers tokenizer (fast or slow; duck-typed).

        EOS ids default to ``tokenizer.eos_token_id`` plus the special tokens named in
        `KNOWN_EOS_TOKENS`; pass `eos_token_ids` (e.g. the generation config's) to be exact.
        Pass `size` = the model's ``config.vocab_size`` when the logits are wider.
        """
        hf_specials = set(getattr(tokenizer, "all_special_ids", None) or ())
        for tid, added in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items():
            if getattr(added, "special", False):
                hf_specials.add(int(tid))
        eos_default = getattr(tokenizer, "eos_token_id", None)
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None and hasattr(backend, "to_str"):
            data = json.loads(backend.to_str())
            base = _from_hf_dict(data, (), None)
            by_id = dict(enumerate(base.tokens))
            specials = set(base.special_ids) | hf_specials
            prefix_space = base.prefix_space
            names = _added_names(data)
        elif getattr(tokenizer, "sp_model", None) is not None:
            base = _from_sentencepiece_processor(tokenizer.sp_model, (), None)
            by_id = dict(enumerate(base.tokens))
            specials = set(base.special_ids) | hf_specials
            prefix_space = base.prefix_space
            names = {}
        else:
            by_id, specials, prefix_space = _from_slow_tokenizer(tokenizer)
            specials |= hf_specials
            names = {}
        for tid in hf_specials:
            tok = tokenizer.convert_ids_to_tokens(int(tid))
            if isinstance(tok, str):
                names.setdefault(tok, int(tid))
        n = len(tokenizer) if hasattr(tokenizer, "__len__") else 0
        width = max(n, max(by_id, default=-1) + 1)
        if size is None:
            size = width
        if eos_token_ids is None:
            eos = {i for name, i in names.items() if name in KNOWN_EOS_TOKENS and i in specials}
            if isinstance(eos_default, int):
                eos.add(eos_default)
            eos_ids: Iterable[int] = eos
        else:
            eos_ids = _resolve_eos(eos_token_ids, names)
        return _build(by_id, eos_ids, specials, size, prefix_space)

    @classmethod
    def from_mistral(
        cls,
        tokenizer: Any,
        eos_token_ids: Iterable[int] | None = None,
        size: int | None = None,
    ) -> "Vocabulary":
        """A vocabulary from a mistral-common tokenizer: Tekken or SentencePiece (v1..v7).

        Accepts a ``MistralTokenizer``, an instruct tokenizer, or the raw ``Tekkenizer`` /
        ``SentencePieceTokenizer``. EOS defaults to the tokenizer's ``eos_id``.
        """
        inner = tokenizer
        for attr in ("instruct_tokenizer", "tokenizer"):
            if hasattr(inner, attr) and not hasattr(inner, "id_to_piece"):
                inner = getattr(inner, attr)
        if not hasattr(inner, "id_to_piece") or not hasattr(inner, "n_words"):
            raise VocabularyError(
                f"{type(tokenizer).__name__} is not a mistral-common tokenizer "
                "(expected MistralTokenizer, Tekkenizer or SentencePieceTokenizer)"
            )
        eos = [inner.eos_id] if eos_token_ids is None else eos_token_ids
        if hasattr(inner, "id_to_byte_piece"):  # Tekken
            n_special = inner.num_special_tokens
            by_id = {}
            for i in range(inner.n_words):
                if i >= n_special and not inner.is_special(i):
                    by_id[i] = inner.id_to_byte_piece(i)
            specials = set(range(n_special)) | set(inner.special_ids)
            return _build(by_id, eos, specials, size, False)
        processor = getattr(inner, "_model", None)
        if processor is None or not hasattr(processor, "id_to_piece"):
            raise VocabularyError(f"{type(inner).__name__}: cannot reach its SentencePiece model")
        specials = set(getattr(inner, "special_ids", ()))
        return _from_sentencepiece_processor(processor, eos, size, extra_special=specials)

    @classmethod
    def from_sentencepiece(
        cls,
        model: Any,
        eos_token_ids: Iterable[int] | None = None,
        size: int | None = None,
    ) -> "Vocabulary":
        """A vocabulary from a SentencePiece ``.model`` path or a ``SentencePieceProcessor``."""
        if isinstance(model, (str, os.PathLike)):
            try:
                import sentencepiece
            except ImportError as e:  # pragma: no cover - depends on the environment
                raise VocabularyError("from_sentencepiece(path) needs the sentencepiece package") from e
            model = sentencepiece.SentencePieceProcessor(model_file=os.fspath(model))
        eos = None if eos_token_ids is None else eos_token_ids
        return _from_sentencepiece_processor(model, eos, size)


# --------------------------------------------------------------------------- building


def _build(
    by_id: Mapping[int, bytes],
    eos_ids: Iterable[int],
    special_ids: Iterable[int],
    size: int | None,
    prefix_space: bool,
) -> Vocabulary:
    """Normalize (pad, blank specials, mark empty tokens special) and validate."""
    eos = {int(i) for i in eos_ids}
    specials = {int(i) for i in special_ids} | eos
    ids = [*by_id, *specials]
    if any(i < 0 for i in ids):
        raise VocabularyError(f"negative token id {min(ids)}")
    width = max(ids, default=-1) + 1
    if size is None:
        size = width
    elif size < width:
        raise VocabularyError(f"size={size} is smaller than the largest token id + 1 ({width})")
    tokens = [b""] * size
    for i, t in by_id.items():
        if i not in specials:
            tokens[i] = t
    empty = {i for i, t in enumerate(tokens) if not t}
    return Vocabulary(tuple(tokens), frozenset(eos), frozenset(empty), prefix_space)


def _resolve_eos(eos: Any, names: Mapping[str, int]) -> set[int]:
    """EOS given as ids and/or special-token names; default: the known EOS names present."""
    if eos is None:
        return {i for name, i in names.items() if name in KNOWN_EOS_TOKENS}
    items = [eos] if isinstance(eos, (int, str, np.integer)) else list(eos)
    out = set()
    for item in items:
        if isinstance(item, str):
            if item not in names:
                raise VocabularyError(f"EOS token {item!r} is not a special token of this tokenizer")
            out.add(names[item])
        else:
            out.add(int(item))
    return out


def _parse_ranks(ranks: Any) -> dict[bytes, int]:
    """tiktoken ranks from a dict, rank-file text/bytes, or a path."""
    if isinstance(ranks, Mapping):
        return {bytes(k): int(v) for k, v in ranks.items()}
    if isinstance(ranks, os.PathLike) or (
        isinstance(ranks, str) and "\n" not in ranks and " " not in ranks.strip()
    ):
        path = Path(ranks)
        if not path.is_file():
            raise VocabularyError(f"rank file {str(path)!r} does not exist")
        ranks = path.read_bytes()
    if isinstance(ranks, str):
        ranks = ranks.encode("ascii", "replace")
    if not isinstance(ranks, (bytes, bytearray)):
        raise VocabularyError(f"cannot read tiktoken ranks from {type(ranks).__name__}")
    out: dict[bytes, int] = {}
    for lineno, line in enumerate(bytes(ranks).splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            token, rank = base64.b64decode(parts[0], validate=True), int(parts[1])
        except (IndexError, ValueError) as e:
            raise VocabularyError(f"rank file line {lineno}: expected 'base64 rank', got {line[:60]!r}") from e
        out[token] = rank
    return out


def _load_json(source: Any) -> dict:
    if isinstance(source, Mapping):
        return dict(source)
    if isinstance(source, (bytes, bytearray)):
        source = source.decode("utf-8")
    if isinstance(source, str) and source.lstrip().startswith("{"):
        text = source
    else:
        path = Path(source)
        if not path.is_file():
            raise VocabularyError(f"tokenizer file {str(path)!r} does not exist")
        text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise VocabularyError(f"tokenizer JSON is malformed: {e}") from e
    if not isinstance(data, dict):
        raise VocabularyError("tokenizer JSON must be an object")
    return data


# --------------------------------------------------------------- tokenizer.json (HF)


@dataclass(frozen=True)
class _Decoding:
    """Per-token decoding derived from a tokenizer.json decoder (mid-text semantics)."""

    steps: tuple[Callable[[str | bytes], str | bytes], ...]
    prefix_space: bool

    def __call__(self, piece: str) -> bytes:
        value: str | bytes = piece
        for step in self.steps:
            value = step(value)
        return value if isinstance(value, bytes) else value.encode("utf-8")


def _on_text(fn: Callable[[str], str | bytes]) -> Callable[[str | bytes], str | bytes]:
    """Lift a str -> str|bytes step; pieces already turned into bytes pass unchanged."""

    def step(value: str | bytes) -> str | bytes:
        return fn(value) if isinstance(value, str) else value

    return step


def _replace_step(old: str, new: str) -> Callable[[str | bytes], str | bytes]:
    def step(value: str | bytes) -> str | bytes:
        if isinstance(value, bytes):
            return value.replace(old.encode("utf-8"), new.encode("utf-8"))
        return value.replace(old, new)

    return step


def _byte_fallback(piece: str) -> str | bytes:
    m = _BYTE_PIECE.fullmatch(piece)
    return bytes([int(m.group(1), 16)]) if m else piece


def _decoder_nodes(node: Any) -> list[dict]:
    if not node:
        return []
    if node.get("type") == "Sequence":
        out: list[dict] = []
        for child in node.get("decoders", []):
            out.extend(_decoder_nodes(child))
        return out
    return [node]


def _pattern_string(pattern: Any) -> str:
    if isinstance(pattern, dict) and "String" in pattern:
        return pattern["String"]
    raise VocabularyError(f"unsupported Replace decoder pattern {pattern!r} (only String patterns)")


def _decoding_from_json(data: dict) -> _Decoding:
    """Translate the decoder of a tokenizer.json into per-token steps."""
    nodes = _decoder_nodes(data.get("decoder"))
    if not nodes:
        nodes = _infer_decoder(data)
    steps: list[Callable] = []
    prefix_space = False
    fused = False
    for node in nodes:
        kind = node.get("type")
        if kind == "ByteLevel":
            steps.append(_on_text(_byte_level_decode))
        elif kind == "ByteFallback":
            steps.append(_on_text(_byte_fallback))
        elif kind == "Replace":
            steps.append(_replace_step(_pattern_string(node.get("pattern")), node.get("content", "")))
        elif kind == "Metaspace":
            steps.append(_replace_step(node.get("replacement", _SPIECE), " "))
            scheme = node.get("prepend_scheme")
            if scheme is None:
                scheme = "always" if node.get("add_prefix_space", True) else "never"
            prefix_space = prefix_space or scheme != "never"
        elif kind == "Fuse":
            fused = True
        elif kind == "Strip":
            content, start, stop = node.get("content", " "), node.get("start", 0), node.get("stop", 0)
            if fused:
                # After Fuse the whole text is one piece: only its first/last chars go.
                prefix_space = prefix_space or (start > 0 and content == " ")
            else:
                steps.append(_on_text(_strip_step(content, start, stop)))
        elif kind == "WordPiece":
            prefix = node.get("prefix", "##")
            steps.append(_on_text(lambda p, prefix=prefix: p[len(prefix):] if p.startswith(prefix) else " " + p))
            prefix_space = True
        elif kind == "BPEDecoder":
            suffix = node.get("suffix", "</w>")
            steps.append(_on_text(lambda p, s=suffix: p[: -len(s)] + " " if p.endswith(s) else p))
        else:
            raise VocabularyError(f"unsupported tokenizer.json decoder {kind!r}")
    return _Decoding(tuple(steps), prefix_space)


def _strip_step(content: str, start: int, stop: int) -> Callable[[str], str]:
    def step(p: str) -> str:
        for _ in range(start):
            if p.startswith(content):
                p = p[len(content):]
        for _ in range(stop):
            if p.endswith(content):
                p = p[: -len(content)]
        return p

    return step


def _infer_decoder(data: dict) -> list[dict]:
    """No decoder: infer one from the pre-tokenizer/normalizer, or take pieces literally."""

    def walk(node: Any, key: str) -> list[dict]:
        if not node:
            return []
        if node.get("type") == "Sequence":
            return [n for child in node.get(key, []) for n in walk(child, key)]
        return [node]

    pre = walk(data.get("pre_tokenizer"), "pretokenizers")
    norm = walk(data.get("normalizer"), "normalizers")
    del walk  # a recursive closure is a reference cycle: unbound, refcounting frees it
    if any(n.get("type") == "ByteLevel" for n in pre + norm):
        return [{"type": "ByteLevel"}]
    meta = [n for n in pre if n.get("type") == "Metaspace"]
    if meta:
        return [{**meta[0], "type": "Metaspace"}]
    if any(n.get("type") == "Replace" and n.get("content") == _SPIECE for n in norm):
        out = [{"type": "Replace", "pattern": {"String": _SPIECE}, "content": " "}]
        if (data.get("model") or {}).get("byte_fallback"):
            out.append({"type": "ByteFallback"})
        return out
    return []


def _model_vocab(model: dict) -> tuple[dict[int, str], set[int]]:
    """id -> piece of the model, and the model's unknown-token ids."""
    kind = model.get("type")
    unk: set[int] = set()
    if kind == "Unigram":
        pieces = {i: entry[0] for i, entry in enumerate(model.get("vocab", []))}
        if model.get("unk_id") is not None:
            unk.add(int(model["unk_id"]))
        return pieces, unk
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        raise VocabularyError(f"tokenizer.json model {kind!r} has no vocab mapping")
    pieces = {int(i): s for s, i in vocab.items()}
    unk_token = model.get("unk_token")
    if unk_token is not None and unk_token in vocab:
        unk.add(int(vocab[unk_token]))
    return pieces, unk


def _added_names(data: dict) -> dict[str, int]:
    return {a["content"]: int(a["id"]) for a in data.get("added_tokens") or [] if a.get("special")}


def _from_hf_dict(data: dict, eos_token_ids: Iterable[int | str] | None, size: int | None) -> Vocabulary:
    if not isinstance(data.get("model"), dict):
        raise VocabularyError("tokenizer.json has no 'model' object")
    pieces, specials = _model_vocab(data["model"])
    decoding = _decoding_from_json(data)
    for added in data.get("added_tokens") or []:
        tid = int(added["id"])
        if added.get("special"):
            specials.add(tid)
        pieces[tid] = added["content"]
    by_id = {i: decoding(p) for i, p in pieces.items() if i not in specials}
    eos = _resolve_eos(eos_token_ids, _added_names(data))
    return _build(by_id, eos, specials, size, decoding.prefix_space)


# ------------------------------------------------------------------ Tekken (Mistral)

_TEKKEN_DEFAULT_SPECIALS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]",
    "[IMG_END]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)


def _from_tekken_dict(data: dict, eos_token_ids: Iterable[int | str] | None, size: int | None) -> Vocabulary:
    """tekken.json: special tokens take ids 0..n_special-1, vocab rank r gets id r + n_special."""
    config = data.get("config") or {}
    listed = data.get("special_tokens")
    if listed:
        names = {s["token_str"]: int(s["rank"]) for s in listed}
    else:
        names = {name: i for i, name in enumerate(_TEKKEN_DEFAULT_SPECIALS)}
    n_special = int(config.get("default_num_special_tokens", len(names)))
    vocab_size = int(config.get("default_vocab_size", len(data["vocab"]) + n_special))
    inner = vocab_size - n_special
    by_id: dict[int, bytes] = {}
    for entry in data["vocab"]:
        rank = int(entry["rank"])
        if rank < inner:
            by_id[rank + n_special] = base64.b64decode(entry["token_bytes"])
    eos = _resolve_eos(["</s>"] if eos_token_ids is None and "</s>" in names else eos_token_ids, names)
    return _build(by_id, eos, range(n_special), size if size is not None else vocab_size, False)


# ---------------------------------------------------------------------- SentencePiece


def _from_sentencepiece_processor(
    sp: Any,
    eos_token_ids: Iterable[int] | None,
    size: int | None,
    extra_special: Iterable[int] = (),
) -> Vocabulary:
    """Pieces of a SentencePieceProcessor: ``▁`` -> space, ``<0xNN>`` -> the byte."""
    n = sp.get_piece_size()
    specials = set(extra_special)
    by_id: dict[int, bytes] = {}
    for i in range(n):
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            specials.add(i)
            continue
        piece = sp.id_to_piece(i)
        if sp.is_byte(i):
            m = _BYTE_PIECE.fullmatch(piece)
            if m is None:
                raise VocabularyError(f"SentencePiece byte piece {i} is {piece!r}, expected <0xNN>")
            by_id[i] = bytes([int(m.group(1), 16)])
        else:
            by_id[i] = piece.replace(_SPIECE, " ").encode("utf-8")
    eos = [sp.eos_id()] if eos_token_ids is None else eos_token_ids
    eos = [i for i in eos if i is not None and i >= 0]
    first = sp.encode("a", out_type=str) if n else []
    prefix_space = bool(first) and first[0].startswith(_SPIECE)
    return _build(by_id, eos, specials, size, prefix_space)


# ------------------------------------------------------------- slow transformers ones


def _from_slow_tokenizer(tokenizer: Any) -> tuple[dict[int, bytes], set[int], bool]:
    """A Python-only transformers tokenizer: byte-level tables or decode differences."""
    n = len(tokenizer)
    pieces = tokenizer.convert_ids_to_tokens(list(range(n)))
    byte_decoder = getattr(tokenizer, "byte_decoder", None)
    specials: set[int] = set()
    by_id: dict[int, bytes] = {}
    added = {int(k) for k in (getattr(tokenizer, "added_tokens_decoder", None) or {})}
    if byte_decoder:
        for i, p in enumerate(pieces):
            if p is None:
                specials.add(i)
            elif i in added:
                by_id[i] = p.encode("utf-8")
            else:
                try:
                    by_id[i] = bytes(byte_decoder[c] for c in p)
                except KeyError:
                    by_id[i] = p.encode("utf-8")
        return by_id, specials, False
    # Generic: what the token adds after an anchor token, by the tokenizer's own decoder.
    anchor_ids = tokenizer.encode("a", add_special_tokens=False)
    if len(anchor_ids) != 1:
        raise VocabularyError(f"cannot read the vocabulary of {type(tokenizer).__name__}")
    anchor = tokenizer.decode(anchor_ids, clean_up_tokenization_spaces=False)
    for i, p in enumerate(pieces):
        if p is None:
            specials.add(i)
            continue
        text = tokenizer.decode(anchor_ids + [i], clean_up_tokenization_spaces=False)
        if not text.startswith(anchor):
            raise VocabularyError(f"cannot isolate token {i} ({p!r}) in {type(tokenizer).__name__}")
        by_id[i] = text[len(anchor):].encode("utf-8")
    return by_id, specials, False
